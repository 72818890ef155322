//! Lustre's NRS Token Bucket Filter, with the semantics of `nrs_tbf.c` (lustre-release's
//! `lustre/ptlrpc/nrs_tbf.c`, versions 2.14 to master). One [`Tbf`] is one TBF instance: one NRS head on one CPU
//! partition.
//!
//! Data layout, chosen for the per-RPC path (O(1) lookup, O(log classes) heap work):
//! * classes live in a slab `Vec` addressed by `u32` (cache-line aligned, hot bucket state in
//!   the first line, the oldest request inline); an open-addressing index of packed
//!   `(32-bit key hash, slab index)` slots finds them with one probe of the index in the common
//!   case (module `index`);
//! * the heap is 4-ary, with 16-byte `(deadline, class)` entries laid out so that a node's four
//!   children are one cache line (module `heap`); sifting reads a class only to break a
//!   deadline tie by `check_time`; a side `Vec<u32>` of heap positions makes reposition and
//!   removal O(log n);
//! * idle classes stay in the slab and the index so their bucket state survives idle periods;
//!   an idle log (oldest first, with stamps so re-activation is O(1)) feeds the LRU eviction
//!   of §2.6;
//! * rules live in a slab too, because a stopped rule stays referenced by its classes until
//!   they re-match on their next arrival.
//!
//! Decisions where the source leaves room (documented in the final report as well):
//! * **No zero-length throttle.** When the root has no token at `now == next_token_time`
//!   (a rate that does not divide 1e9, §2.5), the timer is armed for `now + 1`, the first
//!   nanosecond at which a token exists. Otherwise it is armed for `next_token_time` exactly.
//!   [`Dequeue::Throttled`] therefore always carries `until_ns > now`.
//! * **Late timers.** A dequeue at or after the armed time proceeds as if the timer had fired.
//! * **Stale timers.** `on_timer` before the armed time is ignored: it can only be an event
//!   for a timer that has since been re-armed, which in Lustre no longer exists.
//! * **Early re-arm.** An enqueue whose class deadline is before the armed time re-arms the
//!   timer to `max(deadline, now)` (a kernel timer set in the past fires at once).
//! * **Idle** means the class queue is empty after a dequeue (the simulator cannot see when a
//!   request's service completes, which is when Lustre drops the class reference).
//! * **Same rule on re-match.** When a class whose `seq` is stale re-matches to its own rule
//!   with an unchanged generation, nothing is reset and `seq` stays stale, as §2.3 describes, so
//!   it keeps re-matching on each arrival until a reset.

pub mod cond;
mod heap;
pub mod kstrto;
pub mod listing;
pub mod nid;
pub mod opcode;
pub mod rule;
pub mod version;

use std::collections::VecDeque;

use super::class_index as index;
use super::{Dequeue, RequestScheduler};
use crate::model::RpcTags;
use crate::policy::{NrsConfig, NrsError, NrsPolicy, NrsPolicyDescriptor};
use crate::NS_PER_S;
pub use cond::{ClassType, Condition, Field};
use heap::{HeapEntry, LineHeap, ARITY as HEAP_ARITY};
pub use listing::{
    CptRules, ListedRule, ListedRuleRef, ListingForm, ListingItem, ListingSections, TbfRuleListing,
};
pub use rule::{NrsQueue, TbfCommand, TbfError, TbfOp};
pub use version::LustreVersion;

/// TBF module parameters (`/sys/module/ptlrpc/parameters/tbf_*`) plus the Lustre version whose
/// text interface (rate limit, types, fields, listing form) the head follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TbfConfig {
    /// `tbf_rate`: rate of the default rule and of `start` without `rate=`.
    pub default_rate_rpcs_per_s: u32,
    /// `tbf_depth`: tokens a class can bank.
    pub depth_tokens: u32,
    /// `tbf_jobid_cache_size`: idle classes kept before the LRU shrinks to 3/4 of this.
    pub cache_size_classes: usize,
    /// The emulated Lustre version.
    pub version: LustreVersion,
}

impl Default for TbfConfig {
    fn default() -> Self {
        TbfConfig {
            default_rate_rpcs_per_s: 10_000,
            depth_tokens: 3,
            cache_size_classes: 8192,
            version: LustreVersion::MASTER,
        }
    }
}

impl TbfConfig {
    /// Lustre 2.14: rates must be below 65535, single-field types list `{ids}`.
    pub fn legacy_2_14() -> Self {
        Self::for_version(LustreVersion::V2_14)
    }

    /// Lustre's defaults on `version`.
    pub fn for_version(version: LustreVersion) -> Self {
        TbfConfig {
            version,
            ..TbfConfig::default()
        }
    }

    /// Highest `rate=` accepted: 999,999 from 2.15, 65,534 up to 2.14.
    pub fn rate_rpcs_per_s_max(&self) -> u32 {
        self.version.rate_rpcs_per_s_max()
    }

    /// The listing form of the version: `{list}` for single-field types up to 2.17.50.
    pub fn listing_form(&self) -> ListingForm {
        if self.version.has_legacy_single_field_types() {
            ListingForm::Legacy
        } else {
            ListingForm::Expression
        }
    }
}

const NONE: u32 = u32::MAX;

/// A class epoch no head epoch equals: the class must be checked against its rule.
const EPOCH_STALE: u32 = u32::MAX;

const DEFAULT_RULE: u32 = 0;

#[derive(Debug)]
struct Rule {
    name: String,
    condition: Condition,
    rate_rpcs_per_s: u32,
    nsecs_per_rpc: u64,
    depth_tokens: u32,
    realtime: bool,
    /// Stopped: out of the list, kept alive while classes still point at it.
    stopping: bool,
    generation: u64,
    /// Classes bound to the rule (`ref N` in the listing).
    refs: u64,
}

fn nsecs_per_rpc(rate_rpcs_per_s: u32) -> u64 {
    NS_PER_S / rate_rpcs_per_s as u64
}

#[derive(Debug)]
/// Field order is chosen for the cache (with `P = u32`, three lines): line 0 holds everything
/// a dequeue of a class with one or two requests reads (bucket state, the two oldest
/// requests inline, and the epoch that spares an arrival the rule check), line 1 the key a
/// lookup compares, line 2 what only the rule check after a rule command, a realtime class, a
/// third request or an eviction needs.
#[repr(C, align(64))]
struct Class<P> {
    check_time_ns: u64,
    deadline_ns: u64,
    nsecs_per_rpc: u64,
    ntoken: u64,
    rate_rpcs_per_s: u32,
    depth_tokens: u32,
    /// The two oldest requests, kept inline: most classes hold one or two requests at a time,
    /// and this saves a cache miss on a separate buffer per RPC.
    first: Option<P>,
    /// Set only when `first` is.
    second: Option<P>,
    realtime: bool,
    in_lru: bool,
    /// False while the slot is on the free list.
    live: bool,
    /// `rest` holds a request: kept here so that a pop of a class with two requests does
    /// not read line 2 to find out.
    has_rest: bool,
    /// The head's [`Tbf::epoch`] when the class was last found up to date with its rule
    /// (`seq` current, `gen` its rule's, the rule listed), or [`EPOCH_STALE`]: while it
    /// equals the head's, no rule command ran since, so an arrival need not read line 2 to
    /// check.
    epoch: u32,
    key: RpcTags,
    rule: u32,
    seq: u64,
    gen: u64,
    resid_ns: u64,
    /// Requests after `second`, in arrival order; empty unless `second` is set. Boxed (one
    /// word instead of four) so that the key, grown by projid and nodemap to a full line, and
    /// the rest still fit in three lines; allocated on a class's first third request and kept.
    // A box on purpose: the class layout needs the one-word pointer, not the four-word deque.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<P>>>,
    /// Stamp of the class's latest entry in the idle log; older entries are stale.
    idle_stamp: u64,
    /// The key's hash, for the index removal at eviction.
    hash: u32,
}

impl<P> Class<P> {
    #[inline]
    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    #[inline]
    fn len(&self) -> usize {
        self.first.is_some() as usize
            + self.second.is_some() as usize
            + self.rest.as_ref().map_or(0, |r| r.len())
    }

    #[inline]
    fn push(&mut self, p: P) {
        if self.first.is_none() {
            self.first = Some(p);
        } else if self.second.is_none() {
            self.second = Some(p);
        } else {
            self.rest.get_or_insert_with(Default::default).push_back(p);
            self.has_rest = true;
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<P> {
        let p = self.first.take();
        // Only a class with a second request can have more: one or two requests stay in
        // line 0, and `has_rest` says whether line 2 holds more.
        if let Some(second) = self.second.take() {
            self.first = Some(second);
            if self.has_rest {
                let rest = self.rest.as_mut().expect("has_rest implies a rest queue");
                self.second = rest.pop_front();
                assert!(self.second.is_some(), "has_rest with an empty rest queue");
                self.has_rest = !rest.is_empty();
            }
        }
        p
    }
}

/// Heap order: `(deadline, check_time)`. The deadline is in the entry; `check_time` is read from
/// the class, which is only needed on equal deadlines. Every change of a heap class's
/// `check_time` is followed by `heap_update` before any other comparison, so the class value is
/// the one the entry was ordered by.
#[inline]
fn before<P>(classes: &[Class<P>], a: &HeapEntry, b: &HeapEntry) -> bool {
    a.deadline_ns < b.deadline_ns
        || (a.deadline_ns == b.deadline_ns
            && classes[a.class as usize].check_time_ns < classes[b.class as usize].check_time_ns)
}

/// The position of the least of four children by [`before`], the first of equals: what a
/// scan from the first child with `before` picks, as a tournament whose two first rounds are
/// independent. The rounds compare deadlines alone, without branches (a descent's comparisons
/// are coin flips a predictor cannot learn); only if one of them met equal deadlines does the
/// tournament run again with the `check_time` tie-break.
#[inline(always)]
fn least_of_four<P>(classes: &[Class<P>], g: &[HeapEntry; HEAP_ARITY]) -> usize {
    let d = [
        g[0].deadline_ns,
        g[1].deadline_ns,
        g[2].deadline_ns,
        g[3].deadline_ns,
    ];
    let a = usize::from(d[1] < d[0]);
    let b = 2 + usize::from(d[3] < d[2]);
    let tie = (d[1] == d[0]) | (d[3] == d[2]) | (d[b] == d[a]);
    if !tie {
        return if d[b] < d[a] { b } else { a };
    }
    let a = usize::from(before(classes, &g[1], &g[0]));
    let b = 2 + usize::from(before(classes, &g[3], &g[2]));
    if before(classes, &g[b], &g[a]) {
        b
    } else {
        a
    }
}

/// A snapshot of one class, for tests and reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassState {
    pub rule: String,
    pub rate_rpcs_per_s: u64,
    pub ntoken: u64,
    pub check_time_ns: u64,
    pub deadline_ns: u64,
    pub resid_ns: u64,
    pub queued: usize,
}

/// One TBF instance (one NRS head on one CPU partition).
#[derive(Debug)]
pub struct Tbf<P> {
    config: TbfConfig,
    class_type: ClassType,
    rules: Vec<Option<Rule>>,
    free_rules: Vec<u32>,
    /// Rule ids from highest to lowest priority; includes the default rule.
    order: Vec<u32>,
    rule_sequence: u64,
    /// Bumped by every rule command (see [`Class::epoch`]); never [`EPOCH_STALE`].
    epoch: u32,
    classes: Vec<Class<P>>,
    free_classes: Vec<u32>,
    /// 32-bit key hash -> class. Keeping the 56-byte key out of the table makes it 8x smaller,
    /// which matters once it no longer fits in cache (100k classes).
    index: index::ClassIndex,
    class_count: usize,
    /// All ones; tests clear bits to force hash collisions and exercise the chains.
    hash_mask: u32,
    /// 4-ary: half the levels of a binary heap, so fewer cache misses when the root sinks.
    heap: LineHeap,
    heap_pos: Vec<u32>,
    /// Idle classes, oldest first, as `(class, stamp)`; an entry whose stamp differs from the
    /// class's `idle_stamp` (or whose class is active again) is stale and skipped. This keeps
    /// re-activation O(1) without touching list neighbours.
    idle_log: VecDeque<(u32, u64)>,
    idle_stamp: u64,
    lru_len: usize,
    throttling: bool,
    timer_deadline_ns: u64,
    queued: usize,
}

impl<P> Tbf<P> {
    pub fn new(class_type: ClassType, config: TbfConfig) -> Tbf<P> {
        assert!(
            (1..=config.rate_rpcs_per_s_max()).contains(&config.default_rate_rpcs_per_s),
            "default TBF rate out of range"
        );
        let default = Rule {
            name: rule::DEFAULT_RULE_NAME.to_string(),
            condition: Condition::default(),
            rate_rpcs_per_s: config.default_rate_rpcs_per_s,
            nsecs_per_rpc: nsecs_per_rpc(config.default_rate_rpcs_per_s),
            depth_tokens: config.depth_tokens,
            realtime: false,
            stopping: false,
            generation: 0,
            refs: 0,
        };
        Tbf {
            config,
            class_type,
            rules: vec![Some(default)],
            free_rules: Vec::new(),
            order: vec![DEFAULT_RULE],
            rule_sequence: 0,
            epoch: 0,
            classes: Vec::new(),
            free_classes: Vec::new(),
            index: index::ClassIndex::default(),
            class_count: 0,
            hash_mask: u32::MAX,
            heap: LineHeap::default(),
            heap_pos: Vec::new(),
            idle_log: VecDeque::new(),
            idle_stamp: 0,
            lru_len: 0,
            throttling: false,
            timer_deadline_ns: 0,
            queued: 0,
        }
    }

    pub fn class_type(&self) -> ClassType {
        self.class_type
    }

    pub fn config(&self) -> &TbfConfig {
        &self.config
    }

    /// Classes held (active and idle cached).
    pub fn class_count(&self) -> usize {
        self.class_count
    }

    /// Idle classes held in the LRU cache.
    pub fn idle_class_count(&self) -> usize {
        self.lru_len
    }

    /// Names of the listed rules, highest priority first (default included).
    pub fn rule_names(&self) -> Vec<&str> {
        self.order
            .iter()
            .map(|&r| self.rule(r).name.as_str())
            .collect()
    }

    /// The state of the class a request with `tags` belongs to, if it exists.
    pub fn class_state(&self, tags: &RpcTags) -> Option<ClassState> {
        let key = self.class_type.key(tags);
        let i = self.lookup(&key, index::key_hash(&key) & self.hash_mask)?;
        let c = &self.classes[i as usize];
        Some(ClassState {
            rule: self.rule(c.rule).name.clone(),
            rate_rpcs_per_s: c.rate_rpcs_per_s as u64,
            ntoken: c.ntoken,
            check_time_ns: c.check_time_ns,
            deadline_ns: c.deadline_ns,
            resid_ns: c.resid_ns,
            queued: c.len(),
        })
    }

    #[inline]
    fn rule(&self, id: u32) -> &Rule {
        self.rules[id as usize].as_ref().expect("live rule id")
    }

    fn rule_mut(&mut self, id: u32) -> &mut Rule {
        self.rules[id as usize].as_mut().expect("live rule id")
    }

    fn find_rule(&self, name: &str) -> Option<usize> {
        self.order.iter().position(|&r| self.rule(r).name == name)
    }

    /// First listed rule whose condition matches; the default rule is only the fallback.
    fn match_rule(&self, key: &RpcTags) -> u32 {
        self.order
            .iter()
            .copied()
            .find(|&r| r != DEFAULT_RULE && self.rule(r).condition.matches(key))
            .unwrap_or(DEFAULT_RULE)
    }

    fn rule_get(&mut self, id: u32) {
        self.rule_mut(id).refs += 1;
    }

    fn rule_put(&mut self, id: u32) {
        let r = self.rule_mut(id);
        r.refs -= 1;
        if r.refs == 0 && r.stopping {
            self.rules[id as usize] = None;
            self.free_rules.push(id);
        }
    }

    // ---------------------------------------------------------------- rule commands

    /// Applies a rule command to this instance (the queue prefix is the caller's business).
    pub fn apply(&mut self, cmd: &TbfCommand) -> Result<(), TbfError> {
        // Any command may change what a class must re-check (a start the rule sequence, a
        // change a generation, a stop a rule's listing): every class checks again.
        self.bump_epoch();
        // The parser checks rates against its version; a command parsed for a newer version
        // must not smuggle a rate past this head's limit.
        if let TbfOp::Start {
            rate_rpcs_per_s: Some(rate),
            ..
        }
        | TbfOp::Change {
            rate_rpcs_per_s: Some(rate),
            ..
        } = &cmd.op
        {
            let max = self.config.rate_rpcs_per_s_max();
            if *rate == 0 || *rate > max {
                return Err(TbfError::RateOutOfRange {
                    rate: *rate as u64,
                    max,
                });
            }
        }
        let result = match &cmd.op {
            TbfOp::Start {
                name,
                condition,
                rate_rpcs_per_s,
                rank,
                realtime,
            } => self.start_rule(
                name,
                condition,
                *rate_rpcs_per_s,
                rank.as_deref(),
                *realtime,
            ),
            TbfOp::Change {
                name,
                rate_rpcs_per_s,
                rank,
            } => self.change_rule(name, *rate_rpcs_per_s, rank.as_deref()),
            TbfOp::Stop { name } => self.stop_rule(name),
        };
        self.debug_check();
        result
    }

    /// `nrs_tbf_command` then `nrs_tbf_rule_start`: a condition parsed for another type is
    /// refused first (EINVAL), then an existing name (EEXIST), then a missing rank target
    /// (ENOENT).
    fn start_rule(
        &mut self,
        name: &str,
        condition: &Condition,
        rate: Option<u32>,
        rank: Option<&str>,
        realtime: bool,
    ) -> Result<(), TbfError> {
        if let Some(f) = condition.fields().find(|f| !self.class_type.contains(*f)) {
            return Err(TbfError::FieldNotEnabled(f));
        }
        if self.find_rule(name).is_some() {
            return Err(TbfError::RuleExists(name.to_string()));
        }
        // A bound Lustre leaves to memory: every rule is walked when a new class binds.
        let max = crate::limits::TBF_RULES_MAX;
        if self.order.len() >= max {
            return Err(TbfError::TooManyRules { max });
        }
        // nrs_tbf_parse_value_pairs puts tbf_rate in when `rate=` is absent.
        let rate = rate.unwrap_or(self.config.default_rate_rpcs_per_s);
        let pos = match rank {
            Some(target) => self
                .find_rule(target)
                .ok_or_else(|| TbfError::RankTargetMissing(target.to_string()))?,
            // Newest rule first: "newest wins" unless ranked.
            None => 0,
        };
        let rule = Rule {
            name: name.to_string(),
            condition: condition.clone(),
            rate_rpcs_per_s: rate,
            nsecs_per_rpc: nsecs_per_rpc(rate),
            depth_tokens: self.config.depth_tokens,
            realtime,
            stopping: false,
            generation: 0,
            refs: 0,
        };
        let id = match self.free_rules.pop() {
            Some(id) => {
                self.rules[id as usize] = Some(rule);
                id
            }
            None => {
                self.rules.push(Some(rule));
                (self.rules.len() - 1) as u32
            }
        };
        self.order.insert(pos, id);
        assert!(self.order.len() <= crate::limits::TBF_RULES_MAX);
        // Only a start makes existing classes re-match (lazily, on their next arrival).
        self.rule_sequence += 1;
        Ok(())
    }

    /// `nrs_tbf_rule_change`: the rate is set first, then the rank. A missing rank target
    /// fails with ENOENT after the new rate has taken effect, as in Lustre; ranking a rule
    /// before itself does nothing.
    fn change_rule(
        &mut self,
        name: &str,
        rate: Option<u32>,
        rank: Option<&str>,
    ) -> Result<(), TbfError> {
        let pos = self
            .find_rule(name)
            .ok_or_else(|| TbfError::NoSuchRule(name.to_string()))?;
        let id = self.order[pos];
        if let Some(rate) = rate {
            let r = self.rule_mut(id);
            r.rate_rpcs_per_s = rate;
            r.nsecs_per_rpc = nsecs_per_rpc(rate);
            r.generation += 1;
        }
        if let Some(t) = rank {
            if t == name {
                return Ok(());
            }
            let target = self
                .find_rule(t)
                .ok_or_else(|| TbfError::RankTargetMissing(t.to_string()))?;
            // Move immediately before the target; no re-match of existing classes.
            self.order.remove(pos);
            let target = if target > pos { target - 1 } else { target };
            self.order.insert(target, id);
        }
        Ok(())
    }

    fn stop_rule(&mut self, name: &str) -> Result<(), TbfError> {
        if name == rule::DEFAULT_RULE_NAME {
            return Err(TbfError::StopDefault);
        }
        let Some(pos) = self.find_rule(name) else {
            // nrs_tbf_command: stopping a rule that does not exist succeeds.
            return Ok(());
        };
        let id = self.order.remove(pos);
        let r = self.rule_mut(id);
        r.stopping = true;
        if r.refs == 0 {
            self.rules[id as usize] = None;
            self.free_rules.push(id);
        }
        Ok(())
    }

    /// Rule lines of this instance for `lctl get_param nrs_tbf_rule`: the condition exactly
    /// as written (`tr_conds_str`), or for single-field types in the legacy form the text
    /// between its braces (`{dd.*}`, 2.17.0's per-type dump functions).
    pub fn listing(&self, form: ListingForm) -> Vec<ListedRule> {
        let legacy_single =
            form == ListingForm::Legacy && self.class_type.legacy_single_field().is_some();
        self.order
            .iter()
            .map(|&id| {
                let r = self.rule(id);
                let conditions = if legacy_single {
                    format!("{{{}}}", r.condition.legacy_list_text())
                } else {
                    r.condition.to_string()
                };
                ListedRule {
                    name: r.name.clone(),
                    conditions,
                    rate_rpcs_per_s: r.rate_rpcs_per_s,
                    refs: r.refs,
                }
            })
            .collect()
    }

    /// The invariants that take a pass over the classes, in debug builds: the queue count is
    /// the sum of the classes' queues, the heap holds exactly the classes with requests and
    /// the positions find them, the idle count is the classes in the LRU, and a current epoch
    /// means a class that is current.
    fn debug_check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let live = || self.classes.iter().enumerate().filter(|(_, c)| c.live);
        debug_assert_eq!(live().map(|(_, c)| c.len()).sum::<usize>(), self.queued);
        debug_assert_eq!(
            live().filter(|(_, c)| !c.is_empty()).count(),
            self.heap.len()
        );
        for pos in 0..self.heap.len() {
            let class = self.heap.get(pos).class as usize;
            debug_assert_eq!(self.heap_pos[class] as usize, pos);
            debug_assert!(!self.classes[class].is_empty());
        }
        debug_assert_eq!(live().filter(|(_, c)| c.in_lru).count(), self.lru_len);
        debug_assert_eq!(live().count(), self.class_count);
        for (i, c) in live() {
            debug_assert!(c.epoch != self.epoch || self.class_is_current(i as u32));
            debug_assert_eq!(c.has_rest, c.rest.as_ref().is_some_and(|r| !r.is_empty()));
        }
    }

    /// A new epoch. After 2^32 - 1 commands the counter would come back to values classes
    /// may still hold, so on the wrap every class is marked stale first (O(classes), once in
    /// four billion commands).
    fn bump_epoch(&mut self) {
        self.epoch += 1;
        if self.epoch == EPOCH_STALE {
            for c in &mut self.classes {
                c.epoch = EPOCH_STALE;
            }
            self.epoch = 0;
        }
    }

    /// Whether class `i` is up to date with its rule: its epoch may then be the head's.
    #[inline]
    fn class_is_current(&self, i: u32) -> bool {
        let c = &self.classes[i as usize];
        let rule = self.rule(c.rule);
        c.seq == self.rule_sequence && !rule.stopping && c.gen == rule.generation
    }

    // ---------------------------------------------------------------- classes

    /// Resets the bucket from `rule` (`nrs_tbf_cli_reset_value`). A class in the heap keeps its
    /// deadline but moves, because its check_time (the tie break) changed.
    fn reset_class(&mut self, i: u32, rule_id: u32, now_ns: u64) {
        let seq = self.rule_sequence;
        let r = self.rules[rule_id as usize].as_ref().expect("live rule id");
        let (rate, nsecs, depth, realtime, gen) = (
            r.rate_rpcs_per_s,
            r.nsecs_per_rpc,
            r.depth_tokens,
            r.realtime,
            r.generation,
        );
        let c = &mut self.classes[i as usize];
        c.rule = rule_id;
        c.rate_rpcs_per_s = rate;
        c.nsecs_per_rpc = nsecs;
        c.depth_tokens = depth;
        c.realtime = realtime;
        c.ntoken = depth as u64;
        c.check_time_ns = now_ns;
        c.resid_ns = 0;
        c.seq = seq;
        c.gen = gen;
        // A reset class has the current sequence and its rule's generation; its rule is
        // listed (a re-match finds only listed rules), so it is current.
        c.epoch = self.epoch;
        debug_assert!(self.class_is_current(i));
        if self.heap_pos[i as usize] != NONE {
            self.heap_update(i);
        }
    }

    /// The lazy re-match of `nrs_tbf_res_get` for an existing class.
    #[inline]
    fn refresh_class(&mut self, i: u32, now_ns: u64) {
        let c = &self.classes[i as usize];
        if c.epoch == self.epoch {
            // No command since the class was found current: nothing to re-check.
            return;
        }
        self.refresh_class_slow(i, now_ns);
        if self.class_is_current(i) {
            self.classes[i as usize].epoch = self.epoch;
        }
    }

    #[cold]
    fn refresh_class_slow(&mut self, i: u32, now_ns: u64) {
        let c = &self.classes[i as usize];
        let rule = self.rule(c.rule);
        if c.seq != self.rule_sequence || rule.stopping {
            let new = self.match_rule(&c.key);
            let old = c.rule;
            if new != old {
                self.rule_get(new);
                self.rule_put(old);
                self.reset_class(i, new, now_ns);
            } else if c.gen != rule.generation {
                self.reset_class(i, old, now_ns);
            }
        } else if c.gen != rule.generation {
            self.reset_class(i, c.rule, now_ns);
        }
    }

    #[inline]
    fn lookup(&self, key: &RpcTags, hash: u32) -> Option<u32> {
        let classes = &self.classes;
        self.index.find(hash, |i| {
            let c = &classes[i as usize];
            // Start loading line 0 (the bucket state the enqueue reads next) while line 1
            // (the key) is compared: a plain read whose value nothing waits for, so the two
            // misses overlap (the core crate has no `unsafe` for `_mm_prefetch`).
            std::hint::black_box(c.check_time_ns);
            c.key == *key
        })
    }

    fn index_insert(&mut self, i: u32, hash: u32) {
        self.index.insert(hash, i);
        self.classes[i as usize].hash = hash;
        self.class_count += 1;
    }

    fn index_remove(&mut self, i: u32) {
        self.index.remove(self.classes[i as usize].hash, i);
        self.class_count -= 1;
    }

    fn create_class(&mut self, key: RpcTags, hash: u32, now_ns: u64) -> u32 {
        let rule_id = self.match_rule(&key);
        self.rule_get(rule_id);
        let seq = self.rule_sequence;
        let epoch = self.epoch;
        let r = self.rule(rule_id);
        let (rate, nsecs, depth, realtime, gen) = (
            r.rate_rpcs_per_s,
            r.nsecs_per_rpc,
            r.depth_tokens,
            r.realtime,
            r.generation,
        );
        let fresh = |rest| Class {
            key,
            first: None,
            second: None,
            rest,
            rule: rule_id,
            rate_rpcs_per_s: rate,
            nsecs_per_rpc: nsecs,
            depth_tokens: depth,
            realtime,
            ntoken: depth as u64,
            check_time_ns: now_ns,
            deadline_ns: 0,
            resid_ns: 0,
            seq,
            gen,
            in_lru: false,
            idle_stamp: 0,
            hash: 0,
            live: true,
            has_rest: false,
            // Matched now: the current sequence, its rule's generation, a listed rule.
            epoch,
        };
        let i = match self.free_classes.pop() {
            Some(i) => {
                let slot = &mut self.classes[i as usize];
                // Reuse the slot's queue allocation.
                let rest = std::mem::take(&mut slot.rest);
                *slot = fresh(rest);
                i
            }
            None => {
                let c = fresh(None);
                self.classes.push(c);
                self.heap_pos.push(NONE);
                (self.classes.len() - 1) as u32
            }
        };
        self.index_insert(i, hash);
        i
    }

    fn lru_push(&mut self, i: u32) {
        self.idle_stamp += 1;
        let stamp = self.idle_stamp;
        let c = &mut self.classes[i as usize];
        debug_assert!(!c.in_lru);
        c.in_lru = true;
        c.idle_stamp = stamp;
        self.idle_log.push_back((i, stamp));
        self.lru_len += 1;
        if self.lru_len > self.config.cache_size_classes {
            let keep = self.config.cache_size_classes * 3 / 4;
            while self.lru_len > keep {
                let (oldest, stamp) = self.idle_log.pop_front().expect("idle classes are logged");
                let c = &self.classes[oldest as usize];
                if c.live && c.in_lru && c.idle_stamp == stamp {
                    self.lru_remove(oldest);
                    self.evict(oldest);
                }
            }
        } else if self.idle_log.len() > 2 * self.lru_len + 1024 {
            // Drop stale entries so the log stays O(idle classes); amortised O(1).
            let classes = &self.classes;
            self.idle_log.retain(|&(k, s)| {
                let c = &classes[k as usize];
                c.live && c.in_lru && c.idle_stamp == s
            });
        }
    }

    fn lru_remove(&mut self, i: u32) {
        let c = &mut self.classes[i as usize];
        debug_assert!(c.in_lru);
        c.in_lru = false;
        self.lru_len -= 1;
    }

    fn evict(&mut self, i: u32) {
        let c = &mut self.classes[i as usize];
        debug_assert!(c.is_empty() && c.live);
        c.live = false;
        let rule = c.rule;
        self.index_remove(i);
        self.rule_put(rule);
        self.free_classes.push(i);
    }

    // ---------------------------------------------------------------- heap

    #[inline]
    fn entry(&self, i: u32) -> HeapEntry {
        let c = &self.classes[i as usize];
        HeapEntry {
            deadline_ns: c.deadline_ns,
            class: i,
        }
    }

    #[inline]
    fn heap_set(&mut self, pos: usize, e: HeapEntry) {
        self.heap_pos[e.class as usize] = pos as u32;
        self.heap.set(pos, e);
    }

    fn sift_up(&mut self, mut pos: usize) {
        let e = self.heap.get(pos);
        while pos > 0 {
            let parent = (pos - 1) / HEAP_ARITY;
            let p = self.heap.get(parent);
            if !before(&self.classes, &e, &p) {
                break;
            }
            self.heap_set(pos, p);
            pos = parent;
        }
        self.heap_set(pos, e);
    }

    fn sift_down(&mut self, mut pos: usize) {
        // Borrowed apart, so that the loop reads the classes (ties only) while it writes the
        // heap and the positions.
        let classes = &self.classes[..];
        let heap_pos = &mut self.heap_pos[..];
        let heap = &mut self.heap;
        let e = heap.get(pos);
        let len = heap.len();
        loop {
            let first = HEAP_ARITY * pos + 1;
            if first >= len {
                break;
            }
            let group = *heap.children(pos);
            let best = if len - first >= HEAP_ARITY {
                least_of_four(classes, &group)
            } else {
                let mut best = 0;
                for k in 1..len - first {
                    if before(classes, &group[k], &group[best]) {
                        best = k;
                    }
                }
                best
            };
            let c = group[best];
            if !before(classes, &c, &e) {
                break;
            }
            heap.set(pos, c);
            heap_pos[c.class as usize] = pos as u32;
            pos = first + best;
        }
        heap.set(pos, e);
        heap_pos[e.class as usize] = pos as u32;
    }

    fn heap_push(&mut self, i: u32) {
        let e = self.entry(i);
        self.heap.push(e);
        let pos = self.heap.len() - 1;
        self.heap_pos[i as usize] = pos as u32;
        self.sift_up(pos);
    }

    fn heap_remove(&mut self, i: u32) {
        let pos = self.heap_pos[i as usize] as usize;
        self.heap_pos[i as usize] = NONE;
        let last = self.heap.pop().expect("class is in the heap");
        if pos < self.heap.len() {
            self.heap_set(pos, last);
            self.sift_up(pos);
            let pos = self.heap_pos[last.class as usize] as usize;
            self.sift_down(pos);
        }
    }

    /// Re-reads the class's sort key into the heap and restores the order.
    fn heap_update(&mut self, i: u32) {
        let pos = self.heap_pos[i as usize] as usize;
        self.heap.set(pos, self.entry(i));
        self.sift_up(pos);
        let pos = self.heap_pos[i as usize] as usize;
        self.sift_down(pos);
    }

    // ---------------------------------------------------------------- dequeue

    /// `nrs_tbf_req_get`. With `force` (draining a stopping policy) the throttle is ignored and
    /// the root always yields a request.
    fn get_request(&mut self, now_ns: u64, force: bool) -> Dequeue<P> {
        assert_eq!(
            self.heap.is_empty(),
            self.queued == 0,
            "the heap holds exactly the classes with requests"
        );
        if self.heap.is_empty() {
            return Dequeue::Empty;
        }
        if self.throttling && !force {
            if self.timer_deadline_ns > now_ns {
                return Dequeue::Throttled {
                    until_ns: self.timer_deadline_ns,
                };
            }
            // The timer is due; behave as if it had fired.
            self.throttling = false;
        }
        // Each realtime hop moves one class to its token time, so this terminates; the bound
        // guards against a broken invariant turning into a hang.
        let mut hops_left = self.heap.len() + 1;
        loop {
            let i = self.heap.get(0).class;
            let c = &mut self.classes[i as usize];
            let next_token_time_ns = c.check_time_ns + c.nsecs_per_rpc;
            let passed_ns = now_ns.saturating_sub(c.check_time_ns);
            let earned = match passed_ns.checked_mul(c.rate_rpcs_per_s as u64) {
                Some(p) => p / NS_PER_S,
                None => (passed_ns as u128 * c.rate_rpcs_per_s as u128 / NS_PER_S as u128) as u64,
            };
            let mut n = earned.saturating_add(c.ntoken);
            // Read only for a realtime class: `resid_ns` is in line 2.
            let mut saved_resid_ns = 0;
            if c.realtime {
                saved_resid_ns = c.resid_ns;
                c.resid_ns += passed_ns % c.nsecs_per_rpc;
                if c.resid_ns > c.nsecs_per_rpc {
                    n += 1;
                    c.resid_ns -= c.nsecs_per_rpc;
                }
            } else {
                n = n.min(c.depth_tokens as u64);
            }
            if force && n == 0 {
                n = 1;
            }
            if n > 0 {
                let r = c.pop().expect("a class in the heap has requests");
                c.ntoken = n - 1;
                assert!(
                    c.realtime || c.ntoken <= u64::from(c.depth_tokens),
                    "a class banks at most its depth of tokens"
                );
                c.check_time_ns = now_ns;
                self.queued -= 1;
                if c.is_empty() {
                    self.heap_remove(i);
                    self.lru_push(i);
                } else {
                    if !c.realtime {
                        c.deadline_ns = now_ns + c.nsecs_per_rpc;
                    }
                    self.heap_update(i);
                }
                return Dequeue::Request(r);
            }
            if c.realtime {
                c.deadline_ns = next_token_time_ns;
                c.resid_ns = saved_resid_ns;
                self.heap_update(i);
                hops_left -= 1;
                if self.heap.get(0).class != i && hops_left > 0 {
                    continue;
                }
                // Each class moves at most once to its token time, then one more hop finds the
                // root unchanged: N + 1 hops in all, so leaving with no hop left is fine as long
                // as the root settled.
                debug_assert!(self.heap.get(0).class == i, "realtime hops did not settle");
            }
            self.throttling = true;
            // At `now == next_token_time` a rate that does not divide 1e9 still has no token;
            // the first nanosecond with one is `now + 1` (see the module docs).
            self.timer_deadline_ns = if next_token_time_ns > now_ns {
                next_token_time_ns
            } else {
                now_ns + 1
            };
            return Dequeue::Throttled {
                until_ns: self.timer_deadline_ns,
            };
        }
    }

    /// Dequeue ignoring the throttle and granting a token when none is left, as Lustre does
    /// when draining a stopping policy (2.15.53+).
    pub fn dequeue_forced(&mut self, now_ns: u64) -> Option<P> {
        match self.get_request(now_ns, true) {
            Dequeue::Request(r) => Some(r),
            _ => None,
        }
    }

    /// Removes every queued request in forced-dequeue order.
    pub fn drain(&mut self, now_ns: u64) -> Vec<P> {
        let mut out = Vec::with_capacity(self.queued);
        while let Some(r) = self.dequeue_forced(now_ns) {
            out.push(r);
        }
        debug_assert_eq!(self.queued, 0);
        self.throttling = false;
        self.debug_check();
        out
    }

    /// The throttle end if the head is throttling at `now_ns`; clears a throttle that is due.
    pub fn throttled_until(&mut self, now_ns: u64) -> Option<u64> {
        if self.throttling && self.timer_deadline_ns <= now_ns {
            self.throttling = false;
        }
        self.throttling.then_some(self.timer_deadline_ns)
    }
}

impl<P> RequestScheduler<P> for Tbf<P> {
    fn enqueue_with_cost(&mut self, now_ns: u64, tags: &RpcTags, _cost: u64, payload: P) {
        let key = self.class_type.key(tags);
        let hash = index::key_hash(&key) & self.hash_mask;
        let i = match self.lookup(&key, hash) {
            Some(i) => {
                self.refresh_class(i, now_ns);
                i
            }
            None => self.create_class(key, hash, now_ns),
        };
        self.queued += 1;
        let c = &mut self.classes[i as usize];
        if !c.is_empty() {
            c.push(payload);
            return;
        }
        c.deadline_ns = c.check_time_ns + c.nsecs_per_rpc;
        c.push(payload);
        let deadline_ns = c.deadline_ns;
        if c.in_lru {
            self.lru_remove(i);
        }
        self.heap_push(i);
        assert!(
            self.heap.len() <= self.class_count,
            "a class is in the heap at most once"
        );
        if self.throttling && deadline_ns < self.timer_deadline_ns {
            self.timer_deadline_ns = deadline_ns.max(now_ns);
        }
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue<P> {
        self.get_request(now_ns, false)
    }

    fn on_timer(&mut self, now_ns: u64) {
        // A driver may still hold an event for a timer that was since re-armed (Lustre's
        // one-shot timer would have been replaced); such an early firing must not lift the
        // throttle.
        if now_ns >= self.timer_deadline_ns {
            self.throttling = false;
        }
    }

    fn timer_deadline_ns(&self) -> Option<u64> {
        self.throttling.then_some(self.timer_deadline_ns)
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

/// TBF's rule parameter file.
pub const PARAM_TBF_RULE: &str = "nrs_tbf_rule";

/// TBF as a head's primary policy (Lustre's `nrs_conf_tbf`).
pub fn descriptor<P: Send + 'static>() -> NrsPolicyDescriptor<P> {
    NrsPolicyDescriptor {
        name: "tbf",
        description: "Lustre's Token Bucket Filter: caps each class's RPC rate by rules",
        params: &[PARAM_TBF_RULE],
        start: start::<P>,
        stopped_write: Some(rule_write_while_stopped),
    }
}

/// TBF started with `arg` as its classification type.
fn start<P: Send + 'static>(
    arg: Option<&str>,
    config: &NrsConfig,
) -> Result<Box<dyn NrsPolicy<P>>, NrsError> {
    let class_type = ClassType::parse_arg(arg, config.version).map_err(|e| NrsError {
        errno: e.errno,
        message: e.message,
    })?;
    Ok(Box::new(Tbf::new(class_type, config.tbf())))
}

/// A rule command while TBF does not run: parsed without a type, so a `start` is EINVAL
/// (its condition has no type to be parsed with), as in Lustre; a `change` or `stop`
/// addressed to this head is ENODEV; a command addressed to the other queue is ignored.
fn rule_write_while_stopped(
    _param: &str,
    text: &str,
    queue: NrsQueue,
    version: LustreVersion,
) -> Result<(), NrsError> {
    let cmd = TbfCommand::parse_for(text, None, version)?;
    if cmd.queue.is_some_and(|q| q != queue) {
        return Ok(());
    }
    Err(TbfError::TbfNotStarted.into())
}

impl<P: Send + 'static> NrsPolicy<P> for Tbf<P> {
    fn drain(&mut self, now_ns: u64) -> Vec<P> {
        Tbf::drain(self, now_ns)
    }

    fn head_throttled_until(&mut self, now_ns: u64) -> Option<u64> {
        self.throttled_until(now_ns)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    /// `nrs_tbf_rule=<text>`: parsed with this instance's type, then applied; a command
    /// addressed with `reg`/`hp` to the other queue is ignored.
    fn write_param(
        &mut self,
        param: &str,
        queue: NrsQueue,
        _now_ns: u64,
        text: &str,
    ) -> Result<(), NrsError> {
        assert_eq!(
            param, PARAM_TBF_RULE,
            "the head routes only TBF's own files here"
        );
        let cmd = TbfCommand::parse_for(text, Some(self.class_type()), self.config.version)?;
        if cmd.queue.is_some_and(|q| q != queue) {
            return Ok(());
        }
        Ok(self.apply(&cmd)?)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod layout_tests {
    use super::Class;
    use std::mem::{offset_of, size_of};

    #[test]
    fn dequeue_state_fits_in_the_first_cache_line() {
        assert_eq!(size_of::<Class<u32>>(), 192);
        for end in [
            offset_of!(Class<u32>, live) + 1,
            offset_of!(Class<u32>, has_rest) + 1,
            offset_of!(Class<u32>, epoch) + 4,
            offset_of!(Class<u32>, second) + size_of::<Option<u32>>(),
            offset_of!(Class<u32>, depth_tokens) + 4,
        ] {
            assert!(end <= 64, "line 0 overflows at {end}");
        }
        assert!(offset_of!(Class<u32>, key) >= 64);
        // The arrival's rule check reads line 2 only after a rule command.
        assert!(offset_of!(Class<u32>, rule) >= 128 && offset_of!(Class<u32>, seq) >= 128);
    }
}
