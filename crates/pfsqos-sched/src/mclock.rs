//! Reservation, weight and limit per class (`mclock`), after mClock (Gulati, Merchant and
//! Varman, "mClock: Handling Throughput Variability for Hypervisor IO Scheduling", OSDI 2010),
//! the scheduler Ceph's OSDs run: every class has a **reservation** (a floor, in cost units per
//! second: bytes per second for bulk RPCs), a **weight** for what is left, and a **limit** (a
//! cap). Classes are jobs by default; `nrs_policies="mclock uid"` (or `gid`, `projid`) keys them
//! by user, group or project instead.
//!
//! Each class keeps its requests in arrival order and tags its head request with three tags:
//!
//! * `R = max(r_next, arrival)`, then `r_next = R + cost / reservation` (mClock's eq. for the
//!   reservation tag, with a request's cost in place of one I/O);
//! * `L = max(l_next, arrival)`, then `l_next = L + cost / limit` (the limit tag);
//! * `P = max(p_next, v)`, then `p_next = P + cost / weight`, where `v` is the weight phase's
//!   virtual time, the `P` of the request it dispatched last.
//!
//! A free thread takes, first, the least `R` that is due (`R <= now`: the **reservation
//! phase**); else, among the classes whose `L` is due, the least `P` (the **weight phase**);
//! else the head waits for the earliest due tag (`Dequeue::Throttled`).
//!
//! Two readings chosen, each documented here and in the tests:
//! * **Weight tags in virtual time.** mClock's `P` tags advance in real time (`max(P + 1/w,
//!   t)`), which keeps proportions only when `1/w` is scaled to the server's throughput, which a
//!   scheduler does not know. Here `P` is a start tag in SFQ's virtual time (Goyal et al.,
//!   SIGCOMM '96), so backlogged classes share what the reservations leave in the ratio of their
//!   weights at any throughput, and an idle class earns no credit (`max` with `v`).
//! * **The two phases account separately**, which is what mClock's adjustment of `R` tags after
//!   a weight-phase dispatch achieves: a reservation-phase dispatch advances only `r_next`, a
//!   weight-phase dispatch only `p_next`. A class receives its floor plus its weighted share of
//!   what the floors leave, and its floor is not used up by service its weight won.
//!
//! Every dispatch advances `l_next`, and both phases serve only a class whose `L` is due, so a
//! class never gets more than its limit plus one request over any interval. mClock's
//! reservation phase ignores limits, which lets a class's floor and weighted share together
//! pass its cap; here the cap holds, and since a limit below the reservation is refused, a
//! class held by its cap is served at least at its floor. A reservation is a promise only when the reservations together fit within what the
//! server can serve; the scheduler cannot know that, the controller that sets the floors does
//! (and refuses floors that do not fit).
//!
//! `nrs_mclock_class` sets a class: `set KEY [reservation=N] [weight=N] [limit=N]` (defaults
//! 0, 1 and 0; 0 means none) or `clear KEY`, where `KEY` is a job id (one token: an id with a
//! space or `=` cannot be named and stays in the default class) or, under `uid`/`gid`/`projid`,
//! a number. It reads as one `KEY reservation=N weight=N limit=N` line per class set.

use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use crate::errno::Errno;
use crate::model::{JobId, RpcTags};
use crate::policy::{einval, NrsConfig, NrsError, NrsPolicy, NrsPolicyDescriptor, ParamValue};
use crate::tbf::kstrto::kstrtoull;
use crate::tbf::NrsQueue;
use crate::{Dequeue, RequestScheduler, NS_PER_S};

/// mClock's one parameter file: the classes' reservation, weight and limit.
pub const PARAM_MCLOCK_CLASS: &str = "nrs_mclock_class";
/// Most classes with state of their own; beyond, requests share one overflow class (still
/// served, with the default reservation, weight and limit).
pub const MCLOCK_CLASSES_MAX: usize = 65_536;
/// Most classes set through `nrs_mclock_class`: as many as a controller tracks jobs.
pub const MCLOCK_CLASSES_SET_MAX: usize = crate::limits::JOBS_TRACKED_MAX;
/// Largest weight: as Lustre bounds SFQ-style weights, far beyond any useful ratio.
pub const MCLOCK_WEIGHT_MAX: u64 = 1 << 20;
/// Largest reservation or limit: 1 PiB/s, above any server.
pub const MCLOCK_RATE_MAX: u64 = 1 << 50;
/// Scale of the weight phase's virtual time: a weight-1 class's tag advances by its cost times
/// this, so that integer tags keep the ratio of weights up to [`MCLOCK_WEIGHT_MAX`] exactly.
const VIRTUAL_PER_COST: u128 = 1 << 20;

/// mClock as a head's primary policy.
pub fn descriptor<P: Send + 'static>() -> NrsPolicyDescriptor<P> {
    NrsPolicyDescriptor {
        name: "mclock",
        description: "mClock: per-class reservation (floor), weight and limit (cap), by job, uid, gid or projid",
        params: &[PARAM_MCLOCK_CLASS],
        start: start::<P>,
        stopped_write: None,
    }
}

fn start<P: Send + 'static>(
    arg: Option<&str>,
    _config: &NrsConfig,
) -> Result<Box<dyn NrsPolicy<P>>, NrsError> {
    let key = match arg.map(str::trim).filter(|a| !a.is_empty()) {
        None | Some("jobid") => KeyKind::Job,
        Some("uid") => KeyKind::Uid,
        Some("gid") => KeyKind::Gid,
        Some("projid") => KeyKind::Projid,
        Some(other) => {
            return Err(einval(format!(
                "mclock classifies by jobid, uid, gid or projid, not `{other}`"
            )))
        }
    };
    Ok(Box::new(Mclock::new(key)))
}

/// What a class is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KeyKind {
    #[default]
    Job,
    Uid,
    Gid,
    Projid,
}

/// A class's identity under its [`KeyKind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClassKey {
    Job(JobId),
    Id(u32),
    /// Every request beyond [`MCLOCK_CLASSES_MAX`] classes.
    Overflow,
}

impl ClassKey {
    fn text(&self) -> String {
        match self {
            ClassKey::Job(j) => j.as_str().to_string(),
            ClassKey::Id(n) => n.to_string(),
            ClassKey::Overflow => "overflow".to_string(),
        }
    }
}

/// A class's reservation, weight and limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassSpec {
    /// Floor in cost units per second (bytes per second for bulk RPCs); 0: none.
    pub reservation_per_s: u64,
    /// Share of what the reservations leave, against the other classes' weights; at least 1.
    pub weight: u64,
    /// Cap in cost units per second; 0: none.
    pub limit_per_s: u64,
}

impl Default for ClassSpec {
    fn default() -> Self {
        ClassSpec {
            reservation_per_s: 0,
            weight: 1,
            limit_per_s: 0,
        }
    }
}

impl ClassSpec {
    /// Checks the bounds and that the cap is not below the floor.
    pub fn validate(&self) -> Result<(), NrsError> {
        if !(1..=MCLOCK_WEIGHT_MAX).contains(&self.weight) {
            return Err(einval(format!(
                "weight {} is not in 1..={MCLOCK_WEIGHT_MAX}",
                self.weight
            )));
        }
        for (name, v) in [
            ("reservation", self.reservation_per_s),
            ("limit", self.limit_per_s),
        ] {
            if v > MCLOCK_RATE_MAX {
                return Err(einval(format!("{name} {v} is above {MCLOCK_RATE_MAX}")));
            }
        }
        if self.limit_per_s != 0 && self.limit_per_s < self.reservation_per_s {
            return Err(einval(format!(
                "limit {} is below reservation {}: a cap cannot be under its floor",
                self.limit_per_s, self.reservation_per_s
            )));
        }
        Ok(())
    }
}

/// Nanoseconds `cost` takes at `rate_per_s`, rounded up (so a cap is never exceeded by
/// rounding), saturating.
fn spacing_ns(cost: u64, rate_per_s: u64) -> u64 {
    debug_assert!(rate_per_s > 0);
    let ns = (u128::from(cost) * u128::from(NS_PER_S)).div_ceil(u128::from(rate_per_s));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

struct Queued<P> {
    arrival_ns: u64,
    seq: u64,
    cost: u64,
    payload: P,
}

struct Class<P> {
    spec: ClassSpec,
    queue: VecDeque<Queued<P>>,
    r_next_ns: u64,
    l_next_ns: u64,
    p_next: u128,
    /// The head's tags, valid while `queue` is not empty.
    head_r_ns: u64,
    head_l_ns: u64,
    head_p: u128,
    /// Bumped whenever the head's tags change: heap entries of an older generation are stale.
    generation: u64,
}

/// Heap entries: (tag, arrival sequence of the head, class, generation). The sequence breaks
/// ties in arrival order, so the dispatch order is deterministic.
type Entry<T> = Reverse<(T, u64, u32, u64)>;

/// One mClock instance: one head's queue.
pub struct Mclock<P> {
    key_kind: KeyKind,
    classes: Vec<Class<P>>,
    index: FxHashMap<ClassKey, u32>,
    /// Specs set through `nrs_mclock_class`, applied to classes as they appear.
    set: BTreeMap<ClassKey, ClassSpec>,
    /// Classes with a reservation whose head's `L` is due, by `R`.
    by_r: BinaryHeap<Entry<u64>>,
    /// Classes whose head's `L` is not yet due, by `L`.
    by_l: BinaryHeap<Entry<u64>>,
    /// Classes whose head's `L` is due, by `P`.
    by_p: BinaryHeap<Entry<u128>>,
    /// The weight phase's virtual time.
    virtual_now: u128,
    queued: usize,
    seq: u64,
    timer_ns: Option<u64>,
    /// Dispatches by phase, for tests and listings.
    pub reservation_dispatches: u64,
    pub weight_dispatches: u64,
}

impl<P> Mclock<P> {
    /// An empty instance classifying by `key_kind`.
    pub fn new(key_kind: KeyKind) -> Mclock<P> {
        Mclock {
            key_kind,
            classes: Vec::new(),
            index: FxHashMap::default(),
            set: BTreeMap::new(),
            by_r: BinaryHeap::new(),
            by_l: BinaryHeap::new(),
            by_p: BinaryHeap::new(),
            virtual_now: 0,
            queued: 0,
            seq: 0,
            timer_ns: None,
            reservation_dispatches: 0,
            weight_dispatches: 0,
        }
    }

    fn key_of(&self, tags: &RpcTags) -> ClassKey {
        match self.key_kind {
            KeyKind::Job => ClassKey::Job(tags.job),
            KeyKind::Uid => ClassKey::Id(tags.uid),
            KeyKind::Gid => ClassKey::Id(tags.gid),
            KeyKind::Projid => ClassKey::Id(tags.projid),
        }
    }

    /// The class set for `key`, or the default.
    pub fn spec_of(&self, key: &ClassKey) -> ClassSpec {
        self.set.get(key).copied().unwrap_or_default()
    }

    /// Sets (or with `None` clears) a class's reservation, weight and limit.
    pub fn set_class(&mut self, key: ClassKey, spec: Option<ClassSpec>) -> Result<(), NrsError> {
        match spec {
            Some(spec) => {
                spec.validate()?;
                if !self.set.contains_key(&key) && self.set.len() >= MCLOCK_CLASSES_SET_MAX {
                    return Err(NrsError {
                        errno: Errno::ENOSPC,
                        message: format!("at most {MCLOCK_CLASSES_SET_MAX} classes can be set"),
                    });
                }
                self.set.insert(key, spec);
            }
            None => {
                self.set.remove(&key);
            }
        }
        if let Some(&c) = self.index.get(&key) {
            let spec = self.spec_of(&key);
            self.classes[c as usize].spec = spec;
            if !self.classes[c as usize].queue.is_empty() {
                // The head keeps its tags; its heap entries follow the new spec from the
                // next head on, except for the reservation heap, which it may now join or leave.
                self.push_head(c);
            }
        }
        Ok(())
    }

    fn class_of(&mut self, key: ClassKey) -> u32 {
        if let Some(&c) = self.index.get(&key) {
            return c;
        }
        let key = if self.classes.len() + 1 >= MCLOCK_CLASSES_MAX {
            ClassKey::Overflow
        } else {
            key
        };
        if let Some(&c) = self.index.get(&key) {
            return c;
        }
        let c = u32::try_from(self.classes.len()).expect("classes are bounded");
        let spec = self.spec_of(&key);
        self.classes.push(Class {
            spec,
            queue: VecDeque::new(),
            r_next_ns: 0,
            l_next_ns: 0,
            p_next: 0,
            head_r_ns: 0,
            head_l_ns: 0,
            head_p: 0,
            generation: 0,
        });
        self.index.insert(key, c);
        assert!(self.classes.len() <= MCLOCK_CLASSES_MAX);
        c
    }

    /// Tags the head of class `c` (its queue is not empty) and files it in the heaps.
    fn tag_head(&mut self, c: u32, now_ns: u64) {
        let v = self.virtual_now;
        let class = &mut self.classes[c as usize];
        let head = class.queue.front().expect("a tagged head exists");
        class.head_r_ns = class.r_next_ns.max(head.arrival_ns);
        class.head_l_ns = class.l_next_ns.max(head.arrival_ns);
        class.head_p = class.p_next.max(v);
        let _ = now_ns;
        self.push_head(c);
    }

    fn push_head(&mut self, c: u32) {
        let class = &mut self.classes[c as usize];
        class.generation += 1;
        let g = class.generation;
        let seq = class.queue.front().expect("a filed head exists").seq;
        self.by_l.push(Reverse((class.head_l_ns, seq, c, g)));
    }

    fn live(&self, c: u32, g: u64) -> bool {
        let class = &self.classes[c as usize];
        class.generation == g && !class.queue.is_empty()
    }

    /// Moves every class whose limit tag is due at `now_ns` to the weight phase's heap, and
    /// drops stale entries from the tops of the heaps.
    fn settle(&mut self, now_ns: u64) {
        while let Some(&Reverse((l, seq, c, g))) = self.by_l.peek() {
            if !self.live(c, g) {
                self.by_l.pop();
                continue;
            }
            if l > now_ns {
                break;
            }
            self.by_l.pop();
            // A class held by its cap earns no weight credit meanwhile: it rejoins the weight
            // phase no earlier than the virtual time it finds (SFQ's start tag of an arrival).
            let v = self.virtual_now;
            let class = &mut self.classes[c as usize];
            class.head_p = class.head_p.max(v);
            self.by_p.push(Reverse((class.head_p, seq, c, g)));
            if class.spec.reservation_per_s > 0 {
                self.by_r.push(Reverse((class.head_r_ns, seq, c, g)));
            }
        }
        while let Some(&Reverse((_, _, c, g))) = self.by_r.peek() {
            if self.live(c, g) {
                break;
            }
            self.by_r.pop();
        }
        while let Some(&Reverse((_, _, c, g))) = self.by_p.peek() {
            if self.live(c, g) {
                break;
            }
            self.by_p.pop();
        }
    }

    /// Serves the head of class `c` in `phase`.
    fn serve(&mut self, c: u32, now_ns: u64, reservation_phase: bool) -> P {
        let class = &mut self.classes[c as usize];
        let q = class.queue.pop_front().expect("a served class has a head");
        assert!(
            class.head_l_ns <= now_ns,
            "no phase serves a class over its limit"
        );
        if reservation_phase {
            assert!(
                class.head_r_ns <= now_ns,
                "a reservation is served when due"
            );
            class.r_next_ns = class
                .head_r_ns
                .saturating_add(spacing_ns(q.cost, class.spec.reservation_per_s));
            self.reservation_dispatches += 1;
        } else {
            assert!(
                class.head_p >= self.virtual_now,
                "virtual time never goes back"
            );
            self.virtual_now = class.head_p;
            class.p_next = class.head_p
                + u128::from(q.cost.max(1)) * VIRTUAL_PER_COST / u128::from(class.spec.weight);
            self.weight_dispatches += 1;
        }
        if class.spec.limit_per_s > 0 {
            class.l_next_ns = class
                .head_l_ns
                .max(now_ns.min(class.head_l_ns.max(q.arrival_ns)))
                .saturating_add(spacing_ns(q.cost, class.spec.limit_per_s));
        }
        class.generation += 1;
        self.queued -= 1;
        if !self.classes[c as usize].queue.is_empty() {
            self.tag_head(c, now_ns);
        }
        q.payload
    }
}

impl<P> RequestScheduler<P> for Mclock<P> {
    fn enqueue_with_cost(&mut self, now_ns: u64, tags: &RpcTags, cost: u64, payload: P) {
        let key = self.key_of(tags);
        let c = self.class_of(key);
        let seq = self.seq;
        self.seq += 1;
        let was_idle = self.classes[c as usize].queue.is_empty();
        self.classes[c as usize].queue.push_back(Queued {
            arrival_ns: now_ns,
            seq,
            cost,
            payload,
        });
        self.queued += 1;
        if was_idle {
            self.tag_head(c, now_ns);
            // An arrival can make a request due before the armed timer.
            let class = &self.classes[c as usize];
            if let Some(t) = self.timer_ns {
                self.timer_ns = Some(t.min(class.head_l_ns.max(now_ns)));
            }
        }
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue<P> {
        self.timer_ns = None;
        if self.queued == 0 {
            return Dequeue::Empty;
        }
        self.settle(now_ns);
        if let Some(&Reverse((r, _, c, _))) = self.by_r.peek() {
            if r <= now_ns {
                self.by_r.pop();
                return Dequeue::Request(self.serve(c, now_ns, true));
            }
        }
        if let Some(&Reverse((_, _, c, _))) = self.by_p.pop().as_ref() {
            return Dequeue::Request(self.serve(c, now_ns, false));
        }
        // Every class whose limit is due is in the weight phase's heap, so everything queued
        // waits for its limit.
        let until = self
            .by_l
            .peek()
            .map(|Reverse((l, ..))| *l)
            .expect("a queued class is in a heap");
        assert!(until > now_ns, "nothing due is left waiting");
        self.timer_ns = Some(until);
        Dequeue::Throttled { until_ns: until }
    }

    fn on_timer(&mut self, _now_ns: u64) {
        self.timer_ns = None;
    }

    fn timer_deadline_ns(&self) -> Option<u64> {
        self.timer_ns
    }

    fn queued(&self) -> usize {
        debug_assert_eq!(
            self.queued,
            self.classes.iter().map(|c| c.queue.len()).sum::<usize>()
        );
        self.queued
    }
}

/// `set KEY [reservation=N] [weight=N] [limit=N]` or `clear KEY`.
fn parse_command(key_kind: KeyKind, text: &str) -> Result<(ClassKey, Option<ClassSpec>), NrsError> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let mut words = text.split(' ').filter(|w| !w.is_empty());
    let verb = words.next().unwrap_or("");
    let key_text = words
        .next()
        .ok_or_else(|| einval(format!("`{text}`: expected `set KEY ...` or `clear KEY`")))?;
    let key = match key_kind {
        KeyKind::Job => {
            if key_text.contains('=') {
                return Err(einval(format!("`{key_text}` is not a job id")));
            }
            ClassKey::Job(
                JobId::new(key_text).map_err(|e| einval(format!("job id `{key_text}`: {e}")))?,
            )
        }
        _ => ClassKey::Id(
            kstrtoull(key_text, 10)
                .ok()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| einval(format!("`{key_text}` is not an id in 0..=4294967295")))?,
        ),
    };
    match verb {
        "clear" => {
            if let Some(extra) = words.next() {
                return Err(einval(format!("`clear` takes only a key, not `{extra}`")));
            }
            Ok((key, None))
        }
        "set" => {
            let mut spec = ClassSpec::default();
            for w in words {
                let (name, value) = w
                    .split_once('=')
                    .ok_or_else(|| einval(format!("`{w}` is not name=value")))?;
                let n = kstrtoull(value, 10)
                    .map_err(|_| einval(format!("`{value}` in `{w}` is not a number")))?;
                match name {
                    "reservation" => spec.reservation_per_s = n,
                    "weight" => spec.weight = n,
                    "limit" => spec.limit_per_s = n,
                    _ => {
                        return Err(einval(format!(
                            "`{name}`: expected reservation, weight or limit"
                        )))
                    }
                }
            }
            spec.validate()?;
            Ok((key, Some(spec)))
        }
        _ => Err(einval(format!("`{verb}`: expected `set` or `clear`"))),
    }
}

impl<P: Send + 'static> NrsPolicy<P> for Mclock<P> {
    /// In arrival order.
    fn drain(&mut self, _now_ns: u64) -> Vec<P> {
        let mut all: Vec<Queued<P>> = self
            .classes
            .iter_mut()
            .flat_map(|c| c.queue.drain(..))
            .collect();
        all.sort_by_key(|q| q.seq);
        self.by_r.clear();
        self.by_l.clear();
        self.by_p.clear();
        self.queued = 0;
        self.timer_ns = None;
        all.into_iter().map(|q| q.payload).collect()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn write_param(
        &mut self,
        param: &str,
        _queue: NrsQueue,
        _now_ns: u64,
        text: &str,
    ) -> Result<(), NrsError> {
        assert_eq!(
            param, PARAM_MCLOCK_CLASS,
            "the head routes only mClock's own file here"
        );
        let (key, spec) = parse_command(self.key_kind, text)?;
        self.set_class(key, spec)
    }

    fn read_param(&self, param: &str) -> Result<ParamValue, NrsError> {
        if param != PARAM_MCLOCK_CLASS {
            return Err(NrsError {
                errno: Errno::ENOENT,
                message: format!("policy `mclock` has no parameter `{param}`"),
            });
        }
        let mut text = String::new();
        for (key, s) in &self.set {
            text.push_str(&format!(
                "{} reservation={} weight={} limit={}\n",
                key.text(),
                s.reservation_per_s,
                s.weight,
                s.limit_per_s
            ));
        }
        Ok(ParamValue::Lines(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIB: u64 = 1 << 20;

    fn job(name: &str) -> RpcTags {
        RpcTags {
            job: JobId::new(name).unwrap(),
            ..RpcTags::default()
        }
    }

    /// A server of `capacity` bytes per second with one thread, on virtual time: every class
    /// in `backlog` keeps requests of `cost` bytes queued; returns the bytes each class got in
    /// `duration_ns`, and checks the limit of every class over every prefix of the run.
    fn serve(
        m: &mut Mclock<usize>,
        capacity_per_s: u64,
        cost: u64,
        backlog: &[(&str, ClassSpec)],
        duration_ns: u64,
    ) -> Vec<u64> {
        for (name, spec) in backlog {
            m.set_class(ClassKey::Job(JobId::new(name).unwrap()), Some(*spec))
                .unwrap();
        }
        let mut got = vec![0u64; backlog.len()];
        let mut now = 0u64;
        // Keep four requests queued per class.
        for (i, (name, _)) in backlog.iter().enumerate() {
            for _ in 0..4 {
                m.enqueue_with_cost(now, &job(name), cost, i);
            }
        }
        while now < duration_ns {
            match m.dequeue(now) {
                Dequeue::Request(i) => {
                    got[i] += cost;
                    // Cap: at most limit x time + one request, from the start.
                    let limit = backlog[i].1.limit_per_s;
                    if limit > 0 {
                        let allowed = u128::from(limit) * u128::from(now) / u128::from(NS_PER_S)
                            + u128::from(cost);
                        assert!(
                            u128::from(got[i]) <= allowed,
                            "class {i} got {} by {now} ns, over its limit {limit}",
                            got[i]
                        );
                    }
                    now += spacing_ns(cost, capacity_per_s);
                    m.enqueue_with_cost(now, &job(backlog[i].0), cost, i);
                }
                Dequeue::Throttled { until_ns } => {
                    assert!(until_ns > now);
                    now = until_ns;
                    m.on_timer(now);
                }
                Dequeue::Empty => panic!("backlogged classes are never empty"),
            }
        }
        got
    }

    fn spec(reservation_mib: u64, weight: u64, limit_mib: u64) -> ClassSpec {
        ClassSpec {
            reservation_per_s: reservation_mib * MIB,
            weight,
            limit_per_s: limit_mib * MIB,
        }
    }

    /// Weights share a saturated server in their ratio: 1:3 gives a quarter and three
    /// quarters, whatever the server's speed (the weight phase runs in virtual time).
    #[test]
    fn weights_share_what_is_left_in_their_ratio() {
        for capacity_mib in [10, 1000] {
            let mut m = Mclock::new(KeyKind::Job);
            let got = serve(
                &mut m,
                capacity_mib * MIB,
                MIB,
                &[("a", spec(0, 1, 0)), ("b", spec(0, 3, 0))],
                10 * NS_PER_S,
            );
            let total = (got[0] + got[1]) as f64;
            assert!((got[0] as f64 / total - 0.25).abs() < 0.01, "{got:?}");
        }
    }

    /// A floor holds under contention: a weight-1 class with a 30 MiB/s reservation beside a
    /// weight-100 class on a 100 MiB/s server gets its 30 plus its share of the other 70.
    #[test]
    fn a_floor_holds_against_a_heavy_weight() {
        let mut m = Mclock::new(KeyKind::Job);
        let got = serve(
            &mut m,
            100 * MIB,
            MIB,
            &[("small", spec(30, 1, 0)), ("big", spec(0, 100, 0))],
            10 * NS_PER_S,
        );
        let small_mib_s = got[0] as f64 / MIB as f64 / 10.0;
        // 30 reserved + 70/101 of the rest.
        assert!(small_mib_s >= 30.0, "{small_mib_s}");
        assert!(
            (small_mib_s - (30.0 + 70.0 / 101.0)).abs() < 0.5,
            "{small_mib_s}"
        );
        assert!(m.reservation_dispatches > 0 && m.weight_dispatches > 0);
    }

    /// Without the floor the same weights give the small class about 1 %: the floor is
    /// what holds it (the test above would pass on a scheduler that ignored weights, not on
    /// one that ignored reservations).
    #[test]
    fn without_the_floor_the_weight_rules() {
        let mut m = Mclock::new(KeyKind::Job);
        let got = serve(
            &mut m,
            100 * MIB,
            MIB,
            &[("small", spec(0, 1, 0)), ("big", spec(0, 100, 0))],
            10 * NS_PER_S,
        );
        assert!(got[0] as f64 / ((got[0] + got[1]) as f64) < 0.02, "{got:?}");
    }

    /// A cap binds even when the server is otherwise idle (the run asserts it over every
    /// prefix), and the server then waits (throttled) rather than exceed it.
    #[test]
    fn a_cap_binds_and_the_server_waits() {
        let mut m = Mclock::new(KeyKind::Job);
        let got = serve(
            &mut m,
            100 * MIB,
            MIB,
            &[("capped", spec(0, 1, 20))],
            10 * NS_PER_S,
        );
        let mib_s = got[0] as f64 / MIB as f64 / 10.0;
        assert!((mib_s - 20.0).abs() < 0.2, "{mib_s}");
    }

    /// Work is conserved: with a capped class and an uncapped one the server never waits,
    /// and the uncapped class takes all the cap leaves.
    #[test]
    fn what_a_cap_leaves_goes_to_the_others() {
        let mut m = Mclock::new(KeyKind::Job);
        let got = serve(
            &mut m,
            100 * MIB,
            MIB,
            &[("capped", spec(0, 10, 20)), ("free", spec(0, 1, 0))],
            10 * NS_PER_S,
        );
        let total_mib_s = (got[0] + got[1]) as f64 / MIB as f64 / 10.0;
        assert!((total_mib_s - 100.0).abs() < 0.2, "{total_mib_s}");
        assert!((got[0] as f64 / MIB as f64 / 10.0 - 20.0).abs() < 0.2);
    }

    /// An idle class earns no credit: after idling it gets its share from then on, not a
    /// burst that starves the others.
    #[test]
    fn an_idle_class_earns_no_credit() {
        let mut m: Mclock<usize> = Mclock::new(KeyKind::Job);
        let mut now = 0;
        // `b` alone for a while.
        for _ in 0..1000 {
            m.enqueue_with_cost(now, &job("b"), MIB, 1);
            assert_eq!(m.dequeue(now), Dequeue::Request(1));
            now += 10_000_000;
        }
        // `a` arrives with a backlog; `b` keeps one request queued: they alternate.
        for _ in 0..10 {
            m.enqueue_with_cost(now, &job("a"), MIB, 0);
        }
        m.enqueue_with_cost(now, &job("b"), MIB, 1);
        let mut order = Vec::new();
        for _ in 0..10 {
            let Dequeue::Request(i) = m.dequeue(now) else {
                panic!()
            };
            order.push(i);
            if i == 1 {
                m.enqueue_with_cost(now, &job("b"), MIB, 1);
            }
        }
        let a = order.iter().filter(|&&i| i == 0).count();
        assert!((4..=6).contains(&a), "{order:?}");
    }

    #[test]
    fn commands_parse_list_and_refuse() {
        let mut m: Mclock<()> = Mclock::new(KeyKind::Job);
        let q = NrsQueue::Regular;
        m.write_param(
            PARAM_MCLOCK_CLASS,
            q,
            0,
            "set j1 reservation=100 weight=2 limit=300\n",
        )
        .unwrap();
        m.write_param(PARAM_MCLOCK_CLASS, q, 0, "set j2 weight=5")
            .unwrap();
        let ParamValue::Lines(text) = m.read_param(PARAM_MCLOCK_CLASS).unwrap() else {
            panic!()
        };
        assert_eq!(
            text,
            "j1 reservation=100 weight=2 limit=300\nj2 reservation=0 weight=5 limit=0\n"
        );
        m.write_param(PARAM_MCLOCK_CLASS, q, 0, "clear j2").unwrap();
        for bad in [
            "set j1 reservation=200 limit=100",
            "set j1 weight=0",
            "set j1 weight=x",
            "set j1 colour=3",
            "set a=b weight=1",
            "frob j1",
            "set",
            "clear j1 weight=3",
        ] {
            let e = m.write_param(PARAM_MCLOCK_CLASS, q, 0, bad).unwrap_err();
            assert_eq!(e.errno, Errno::EINVAL, "{bad}");
        }
        let mut by_uid: Mclock<()> = Mclock::new(KeyKind::Uid);
        by_uid
            .write_param(PARAM_MCLOCK_CLASS, q, 0, "set 1000 weight=3")
            .unwrap();
        assert!(by_uid
            .write_param(PARAM_MCLOCK_CLASS, q, 0, "set alice weight=3")
            .is_err());
    }

    /// The head starts mClock by name with a classification argument, routes
    /// `nrs_mclock_class` to it (and answers ENODEV while it is stopped), and reads the classes
    /// back as the policy lists them.
    #[test]
    fn a_head_runs_mclock_from_its_registry_row() {
        let mut head: crate::nrs::Nrs<u32> = crate::nrs::Nrs::new();
        let e = head
            .write_policy_param(0, PARAM_MCLOCK_CLASS, "set 7 weight=2")
            .unwrap_err();
        assert_eq!(e.errno, Errno::ENODEV);
        assert!(head.write_policies(0, "mclock colour").is_err());
        head.write_policies(0, "mclock uid").unwrap();
        assert_eq!(head.policy_name(), "mclock uid");
        head.write_policy_param(0, PARAM_MCLOCK_CLASS, "set 7 weight=2 limit=4096")
            .unwrap();
        let ParamValue::Lines(text) = head.read_policy_param(PARAM_MCLOCK_CLASS).unwrap() else {
            panic!()
        };
        assert_eq!(text, "7 reservation=0 weight=2 limit=4096\n");
        assert!(head.running::<Mclock<u32>>().is_some());
    }

    #[test]
    fn drain_returns_everything_in_arrival_order() {
        let mut m = Mclock::new(KeyKind::Job);
        for i in 0..6 {
            m.enqueue_with_cost(0, &job(if i % 2 == 0 { "a" } else { "b" }), MIB, i);
        }
        assert_eq!(m.drain(0), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(m.queued(), 0);
        assert_eq!(m.dequeue(0), Dequeue::Empty);
    }

    proptest! {
        /// Any mix of floors (fitting within capacity), weights and caps: every floor is met
        /// (within one request), no cap is exceeded (checked over every prefix by `serve`),
        /// and the server idles only when every backlogged class is capped.
        #[test]
        fn floors_hold_caps_bind_and_work_is_conserved(
            classes in proptest::collection::vec((0u64..30, 1u64..50, 0u64..4), 1..6)
        ) {
            let capacity_mib = 100u64;
            let floors: u64 = classes.iter().map(|c| c.0).sum();
            prop_assume!(floors <= capacity_mib * 9 / 10);
            let names: Vec<String> = (0..classes.len()).map(|i| format!("c{i}")).collect();
            let backlog: Vec<(&str, ClassSpec)> = classes
                .iter()
                .zip(&names)
                .map(|(&(r, w, cap), n)| {
                    // A cap of 0 means none; else at least the floor.
                    let limit = if cap == 0 { 0 } else { r + 5 * cap };
                    (n.as_str(), spec(r, w, limit))
                })
                .collect();
            let mut m = Mclock::new(KeyKind::Job);
            let seconds = 5;
            let got = serve(&mut m, capacity_mib * MIB, MIB, &backlog, seconds * NS_PER_S);
            for (i, (_, s)) in backlog.iter().enumerate() {
                let floor = s.reservation_per_s * seconds;
                prop_assert!(got[i] + MIB >= floor, "class {i}: {} < {floor}", got[i]);
            }
            let caps: u64 = backlog.iter().map(|(_, s)| s.limit_per_s).sum();
            let all_capped = backlog.iter().all(|(_, s)| s.limit_per_s > 0);
            let total = got.iter().sum::<u64>();
            let full = capacity_mib * MIB * seconds;
            if !all_capped || caps >= capacity_mib * MIB {
                prop_assert!(total + 2 * MIB >= full, "work lost: {total} of {full}");
            }
        }
    }
}
