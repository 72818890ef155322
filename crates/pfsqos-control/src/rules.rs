//! One rule manager for every controller that gives jobs their own scheduler rules: TBF rules
//! (static, AdapTBF, GIFT and its baselines) and the weight rules of the fair-queuing policies
//! (vPFS's SFQ(D)/DSFQ, `nrs_<policy>_weight`, whose commands have TBF's shape with `weight=`
//! where TBF has `rate=`). The controller says which value (rate, weight) each job should have
//! on a domain; [`JobRules`] answers with the typed commands ([`RuleCommand`]) that bring the
//! domain's rules there (stop the rules of jobs that left, change values that moved, start
//! rules for new jobs, in priority order when the controller ranks them), and renders each as
//! the text the rule file accepts ([`RuleFile`]), in one place.
//!
//! A job id is user input (`SLURM_JOB_ID`, a process name): Lustre's TBF has no escaping, so
//! an id holding TBF syntax (`*` is a wildcard, space separates list items, `{ } , & =` end or
//! join conditions) would match other jobs or add conditions an administrator never wrote.
//! Such jobs get no rule of their own and are listed by [`JobRules::refused_jobs`]; nothing of
//! them ever reaches rule text. They are still controlled: while any is wanted, one catch-all
//! rule (`<prefix>_unsafe jobid={*}`, [`CATCH_ALL_SUFFIX`]) ranked last before `default` holds
//! them at the smallest value the controller wanted for any of them (its policy's share for
//! the least-entitled such job), so TBF syntax in a job id never leaves the job in `default`
//! at 10,000 RPC/s. Rules started while the catch-all is held rank before it.
//!
//! The catch-all stands only while some such job is wanted, never otherwise: `jobid={*}`
//! matches every job, and a job's own rule is written only at the controller's next period
//! after its first RPC, so meanwhile a new, ordinary job's RPCs are caught too and held at a
//! rate computed for other jobs. While an unnamable job is present that is the price of
//! holding it (one period at most per new job); with none present the rule would have no
//! rate to stand for and would only delay every new job, so it is stopped, and such jobs fall
//! to `default` for at most one period before it is started again.
//!
//! A name may be taken on the server by a rule this manager did not start (an
//! administrator's `jvictim2`): [`JobRules::set_server_names`] and
//! [`JobRules::name_taken`] keep such names from being given, so the job is renamed
//! (`jvictim2_2`) instead of being refused with `EEXIST` every period.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{ControlWrite, RuleNamer};
use crate::errno::Errno;
use crate::model::JobId;
use crate::sched::tbf::{TbfCommand, TbfOp};

/// The catch-all rule of jobs whose ids cannot be rules is named `<prefix>_unsafe`.
pub const CATCH_ALL_SUFFIX: &str = "_unsafe";
/// Most foreign rule names (rules on the server this manager did not start) kept reserved.
pub const SERVER_NAMES_MAX: usize = 4096;
/// Jobs whose ids cannot be rules are named in a log line at most this often (ns): a job id is
/// user input, and one line per period per such job would let a user fill the log.
pub const UNNAMABLE_LOG_INTERVAL_NS: u64 = 60_000_000_000;
/// Most jobs one such line names.
pub const UNNAMABLE_LOGGED_MAX: usize = 8;

/// When to name the jobs whose ids cannot be rules in a log line: at most once per
/// [`UNNAMABLE_LOG_INTERVAL_NS`] of the caller's clock (passed in, so the controllers' pure
/// code and tests on virtual time use it alike), and only while there are some.
#[derive(Clone, Debug, Default)]
pub struct UnnamableLog {
    last_ns: Option<u64>,
}

impl UnnamableLog {
    /// The text naming `jobs` (escaped, the first [`UNNAMABLE_LOGGED_MAX`]) if a line is due
    /// at `now_ns`; `None` when there are none or one was given less than the interval ago.
    pub fn due(&mut self, now_ns: u64, jobs: &[JobId]) -> Option<String> {
        if jobs.is_empty() {
            return None;
        }
        if self
            .last_ns
            .is_some_and(|t| now_ns.saturating_sub(t) < UNNAMABLE_LOG_INTERVAL_NS)
        {
            return None;
        }
        self.last_ns = Some(now_ns);
        let named: Vec<String> = jobs
            .iter()
            .take(UNNAMABLE_LOGGED_MAX)
            .map(|j| format!("{:?}", j.as_str()))
            .collect();
        Some(named.join(", "))
    }
}

/// Whether `job` can stand in a `jobid={...}` list as itself: non-empty, and only characters
/// that carry no TBF meaning (letters, digits and `. _ - : @ / + % # ~ ^`; no wildcard `*`, no
/// space, no braces, comma, ampersand or equals sign, nothing outside ASCII).
pub fn job_id_is_rule_safe(job: &JobId) -> bool {
    let s = job.as_str();
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'.' | b'_' | b'-' | b':' | b'@' | b'/' | b'+' | b'%' | b'#' | b'~' | b'^'
                )
        })
}

/// The rule file a [`JobRules`] writes, which fixes the value's key and where the text goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleFile {
    /// `nrs_tbf_rule`: the value is a rate in RPCs per second (`rate=`).
    TbfRule,
    /// A fair-queuing policy's weight rules (`nrs_dsfq_weight`, `nrs_sfqd_weight`): the value
    /// is a weight (`weight=`); no ranks.
    Weight { param: &'static str },
}

impl RuleFile {
    fn key(self) -> &'static str {
        match self {
            RuleFile::TbfRule => "rate",
            RuleFile::Weight { .. } => "weight",
        }
    }
}

/// A rule command on one job's rule, rendered by [`fmt::Display`] as `nrs_tbf_rule` text and
/// by [`RuleCommand::render`] for any [`RuleFile`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleCommand {
    /// `start NAME jobid={JOB} rate=V [rank=BEFORE]` (`weight=V` in a weight file).
    Start {
        name: String,
        job: JobId,
        /// The rate in RPCs per second, or the weight.
        value: u64,
        /// The rule this one goes before (`None`: no `rank=`, Lustre puts it first).
        rank: Option<String>,
    },
    /// `change NAME rate=V` (`weight=V`).
    Change { name: String, value: u64 },
    /// `stop NAME`.
    Stop { name: String },
}

impl RuleCommand {
    /// The command as `file` takes it.
    pub fn render(&self, file: RuleFile) -> String {
        let key = file.key();
        match self {
            RuleCommand::Start {
                name,
                job,
                value,
                rank,
            } => {
                // Never reached with an unsafe id: JobRules refuses those before. The one
                // wildcard written is the catch-all's, `*` alone.
                let catch_all = job.as_str() == "*" && name.ends_with(CATCH_ALL_SUFFIX);
                assert!(
                    job_id_is_rule_safe(job) || catch_all,
                    "job id with TBF syntax in a rule"
                );
                assert!(
                    rank.is_none() || file == RuleFile::TbfRule || catch_all,
                    "only TBF rules are ranked"
                );
                let mut text = format!("start {name} jobid={{{job}}} {key}={value}");
                if let (Some(before), RuleFile::TbfRule) = (rank, file) {
                    text.push_str(" rank=");
                    text.push_str(before);
                }
                text
            }
            RuleCommand::Change { name, value } => format!("change {name} {key}={value}"),
            RuleCommand::Stop { name } => format!("stop {name}"),
        }
    }

    /// The control write that carries the command to `file`.
    pub fn to_write(&self, file: RuleFile) -> ControlWrite {
        let text = self.render(file);
        match file {
            RuleFile::TbfRule => ControlWrite::tbf_rule(text),
            RuleFile::Weight { param } => ControlWrite::NrsPolicyParam {
                param: param.to_string(),
                text,
            },
        }
    }
}

impl fmt::Display for RuleCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(RuleFile::TbfRule))
    }
}

/// The rule name a command text (`[reg|hp] start|change|stop NAME ...`) writes.
fn command_name(text: &str) -> Option<String> {
    let mut words = text
        .split_ascii_whitespace()
        .skip_while(|w| *w == "reg" || *w == "hp");
    match (words.next(), words.next()) {
        (Some("start" | "change" | "stop"), Some(name)) => Some(name.to_string()),
        _ => None,
    }
}

/// What a controller wants for one job on one domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobRate {
    /// The rate in RPCs per second, or the weight (in the rule file's unit).
    pub value: u64,
    /// With `Some(p)`, rules are kept in priority order: a job's new rule goes before the
    /// rule of the highest-priority job below it (higher `p` first, then the smaller job id),
    /// else before `default` (AdapTBF: `p` is the node count). `None`: no rank (GIFT, static).
    pub priority: Option<u32>,
}

#[derive(Clone, Debug, Default)]
struct ActiveRule {
    name: String,
    value: u64,
    priority: Option<u32>,
}

/// The rules a controller holds on one domain, and the names it gave them.
#[derive(Debug, Clone)]
pub struct JobRules {
    namer: RuleNamer,
    /// The rules held, sorted by job id (unique): a reconcile is two merges of this list with
    /// the desired one, where a map cost a search (a dozen job id comparisons) per job; the
    /// Lustre agent reconciles 10,000 jobs every period.
    active: Vec<(JobId, ActiveRule)>,
    /// The active rules that have a priority, in rank order (`(priority, Reverse(job))`), so a
    /// new rule finds the one it ranks behind in O(log n) instead of a scan of every rule (the
    /// scan made a period with thousands of new jobs quadratic; the Lustre agent measured it).
    by_priority: BTreeSet<RankKey>,
    refused: BTreeSet<JobId>,
    /// The catch-all of jobs whose ids cannot be rules: its name (`None`: no catch-all, for
    /// weight files, where a job without a rule keeps the policy's default weight and so
    /// its fair share), and its value while held.
    catch_all_name: Option<String>,
    catch_all: Option<u64>,
}

impl Default for JobRules {
    /// [`JobRules::new`]: TBF rules, with the catch-all.
    fn default() -> JobRules {
        JobRules::new()
    }
}

/// Where a rule ranks: higher priority first, then the smaller job id.
type RankKey = (u32, std::cmp::Reverse<JobId>);

fn rank_key(job: &JobId, priority: u32) -> RankKey {
    (priority, std::cmp::Reverse(*job))
}

impl JobRules {
    pub fn new() -> JobRules {
        JobRules::with_namer(RuleNamer::new(), "j")
    }

    /// Rules named with `prefix` instead of `j` ([`RuleNamer::with_prefix`]).
    pub fn with_prefix(prefix: &str) -> JobRules {
        JobRules::with_namer(RuleNamer::with_prefix(prefix), prefix)
    }

    fn with_namer(mut namer: RuleNamer, prefix: &str) -> JobRules {
        let catch_all_name = format!("{prefix}{CATCH_ALL_SUFFIX}");
        namer.reserve(&catch_all_name);
        JobRules {
            namer,
            active: Vec::new(),
            by_priority: BTreeSet::new(),
            refused: BTreeSet::new(),
            catch_all_name: Some(catch_all_name),
            catch_all: None,
        }
    }

    /// Rules without the catch-all (a fair-queuing policy's weight file: a job without a
    /// rule keeps the default weight, its fair share, where in TBF it would keep `default`'s
    /// 10,000 RPC/s).
    pub fn without_catch_all(mut self) -> JobRules {
        assert!(self.catch_all.is_none(), "the catch-all is not held");
        self.catch_all_name = None;
        self
    }

    /// The catch-all rule's name (if this manager has one), and its value while held.
    pub fn catch_all(&self) -> (Option<&str>, Option<u64>) {
        (self.catch_all_name.as_deref(), self.catch_all)
    }

    /// The rule names on the server (its listing): those this manager does not hold are
    /// never given to a job while they are there (an administrator's rule, or one of another
    /// manager). Replaces the names given before; at most [`SERVER_NAMES_MAX`] kept.
    pub fn set_server_names<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        let held: BTreeSet<&str> = self.active.iter().map(|(_, r)| r.name.as_str()).collect();
        let foreign: BTreeSet<String> = names
            .into_iter()
            .filter(|n| {
                !held.contains(n) && Some(*n) != self.catch_all_name.as_deref() && *n != "default"
            })
            .take(SERVER_NAMES_MAX)
            .map(str::to_string)
            .collect();
        self.namer.set_foreign(foreign);
    }

    /// The server refused `text` because its rule's name exists there (`EEXIST`) and is not
    /// this manager's: the name is kept from jobs (as by [`JobRules::set_server_names`]) and
    /// the rule is not held, so the next reconcile starts the job under another name.
    /// Returns whether the write named one of these rules.
    pub fn name_taken(&mut self, text: &str) -> bool {
        let Some(name) = command_name(text) else {
            return false;
        };
        let found = self.refused(text);
        if found {
            self.namer.add_foreign(&name, SERVER_NAMES_MAX);
        }
        found
    }

    /// The server refused `text` with `errno`: a `start` refused with `EEXIST` names a rule
    /// this manager does not hold (an administrator's), so the name is kept from jobs
    /// ([`JobRules::name_taken`]) and the job is started under another name at the next
    /// reconcile, once; any other refusal is [`JobRules::refused`]. The one call every
    /// controller makes, so no controller retries a taken name every period.
    pub fn write_refused(&mut self, text: &str, errno: Errno) -> bool {
        let is_start = text
            .split_ascii_whitespace()
            .find(|w| *w != "reg" && *w != "hp")
            == Some("start");
        if errno == Errno::EEXIST
            && is_start
            && command_name(text).as_deref() != self.catch_all_name.as_deref()
        {
            self.name_taken(text)
        } else {
            self.refused(text)
        }
    }

    /// Keeps `name` from ever being given to a job ([`RuleNamer::reserve`]).
    pub fn reserve_name(&mut self, name: &str) {
        self.namer.reserve(name);
    }

    /// The rule name held for `job`, if any.
    pub fn rule_name(&self, job: &JobId) -> Option<&str> {
        self.active_index(job)
            .map(|i| self.active[i].1.name.as_str())
    }

    fn active_index(&self, job: &JobId) -> Option<usize> {
        self.active.binary_search_by(|(j, _)| j.cmp(job)).ok()
    }

    /// The commands that bring the domain's rules to `desired`: stops first (in job order),
    /// then changes and starts in job order.
    pub fn reconcile(&mut self, desired: &BTreeMap<JobId, JobRate>) -> Vec<RuleCommand> {
        let desired: Vec<(JobId, JobRate)> = desired.iter().map(|(j, w)| (*j, *w)).collect();
        self.reconcile_sorted(&desired)
    }

    /// [`JobRules::reconcile`] with `desired` as a list sorted by job id, each job once
    /// (panics otherwise): the same commands, without a map to build.
    pub fn reconcile_sorted(&mut self, desired: &[(JobId, JobRate)]) -> Vec<RuleCommand> {
        assert!(
            desired.windows(2).all(|w| w[0].0 < w[1].0),
            "desired rules sorted by job id, each job once"
        );
        let mut out = Vec::new();
        // Stops first, all of them: the names they release may be given to the jobs started
        // below, and the rank search must not see the stopped rules.
        let held = std::mem::take(&mut self.active);
        let mut kept: Vec<(JobId, ActiveRule)> = Vec::with_capacity(held.len());
        let mut d = 0usize;
        for (job, rule) in held {
            while d < desired.len() && desired[d].0 < job {
                d += 1;
            }
            if d < desired.len() && desired[d].0 == job {
                kept.push((job, rule));
                continue;
            }
            if let Some(p) = rule.priority {
                let removed = self.by_priority.remove(&rank_key(&job, p));
                assert!(removed, "every active rule with a priority is indexed");
            }
            out.push(RuleCommand::Stop { name: rule.name });
            self.namer.release(&job);
        }
        // The catch-all's value: the smallest wanted by a job whose id cannot be a rule.
        let mut unsafe_min: Option<u64> = None;
        // Then one merge of the kept rules (every one of them desired) with the desired list.
        let mut next: Vec<(JobId, ActiveRule)> = Vec::with_capacity(desired.len());
        let mut k = 0usize;
        for (job, want) in desired {
            if k < kept.len() && kept[k].0 == *job {
                // Moved out (left as a default): only `kept[k..]` is read below.
                let mut rule = std::mem::take(&mut kept[k].1);
                k += 1;
                if rule.value != want.value {
                    rule.value = want.value;
                    out.push(RuleCommand::Change {
                        name: rule.name.clone(),
                        value: want.value,
                    });
                }
                next.push((*job, rule));
                continue;
            }
            debug_assert!(
                k == kept.len() || kept[k].0 > *job,
                "every kept rule is desired"
            );
            if !job_id_is_rule_safe(job) {
                if self.refused.len() < super::agent::KNOWN_JOBS_MAX {
                    self.refused.insert(*job);
                }
                unsafe_min = Some(unsafe_min.map_or(want.value, |m: u64| m.min(want.value)));
                continue;
            }
            let name = self.namer.name_for(job).to_string();
            // The rule just ahead of this one in rank order (`rank=` places a new rule before
            // the one named); none: before the default rule. That rule is held: merged
            // already (`next`, before this job in id order) or still to come (`kept`).
            // Last before `default`, or before the catch-all while it is held (it must not
            // take a named job's RPCs).
            let last = match (&self.catch_all_name, self.catch_all) {
                (Some(name), Some(_)) => name.clone(),
                _ => "default".to_string(),
            };
            let rank = want.priority.map(|p| {
                self.by_priority
                    .range(..rank_key(job, p))
                    .next_back()
                    .map_or_else(
                        || last.clone(),
                        |(_, std::cmp::Reverse(other))| {
                            let found = match next.binary_search_by(|(j, _)| j.cmp(other)) {
                                Ok(i) => &next[i].1,
                                Err(_) => {
                                    let rest = &kept[k..];
                                    let i = rest
                                        .binary_search_by(|(j, _)| j.cmp(other))
                                        .expect("every indexed rule is held");
                                    &rest[i].1
                                }
                            };
                            found.name.clone()
                        },
                    )
            });
            out.push(RuleCommand::Start {
                name: name.clone(),
                job: *job,
                value: want.value,
                rank,
            });
            if let Some(p) = want.priority {
                self.by_priority.insert(rank_key(job, p));
            }
            next.push((
                *job,
                ActiveRule {
                    name,
                    value: want.value,
                    priority: want.priority,
                },
            ));
        }
        assert_eq!(k, kept.len(), "every kept rule is desired");
        debug_assert!(next.windows(2).all(|w| w[0].0 < w[1].0));
        self.active = next;
        let Some(name) = self.catch_all_name.clone() else {
            return out;
        };
        match (self.catch_all, unsafe_min) {
            (None, Some(v)) => out.push(RuleCommand::Start {
                name,
                job: JobId::new("*").expect("a valid job id"),
                value: v,
                rank: Some("default".to_string()),
            }),
            (Some(old), Some(v)) if old != v => out.push(RuleCommand::Change { name, value: v }),
            (Some(_), None) => out.push(RuleCommand::Stop { name }),
            _ => {}
        }
        self.catch_all = unsafe_min;
        out
    }

    /// The server refused `text` (an `nrs_tbf_rule` write, or a weight-file write of the same
    /// shape): the rule it names is no longer held, so the next [`JobRules::reconcile`] starts
    /// it afresh if the job still wants one (a refused start, or a change to a rule an
    /// administrator stopped). Returns whether the write named one of these rules.
    pub fn refused(&mut self, text: &str) -> bool {
        let name = match TbfCommand::parse(text).map(|c| c.op) {
            Ok(TbfOp::Start { name, .. } | TbfOp::Change { name, .. } | TbfOp::Stop { name }) => {
                name
            }
            // A weight command (TBF's parser refuses `weight=`): `[reg|hp] OP NAME ...`, and
            // only names this manager gave are looked up.
            _ => {
                let mut words = text
                    .split_ascii_whitespace()
                    .skip_while(|w| *w == "reg" || *w == "hp");
                match (words.next(), words.next()) {
                    (Some("start" | "change" | "stop"), Some(name)) => name.to_string(),
                    _ => return false,
                }
            }
        };
        if Some(name.as_str()) == self.catch_all_name.as_deref() {
            // Not held: started again (or its value written again) at the next reconcile.
            self.catch_all = None;
            return true;
        }
        let Some(at) = self.active.iter().position(|(_, r)| r.name == name) else {
            return false;
        };
        let (job, rule) = self.active.remove(at);
        if let Some(p) = rule.priority {
            self.by_priority.remove(&rank_key(&job, p));
        }
        self.namer.release(&job);
        true
    }

    /// Jobs that wanted a rule but whose id holds TBF syntax (at most
    /// [`super::agent::KNOWN_JOBS_MAX`] listed).
    pub fn refused_jobs(&self) -> &BTreeSet<JobId> {
        &self.refused
    }

    /// Rules held, by job.
    pub fn len(&self) -> usize {
        self.active.len()
    }

    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    fn want(rate: u64, priority: Option<u32>) -> JobRate {
        JobRate {
            value: rate,
            priority,
        }
    }

    #[test]
    fn reconcile_starts_changes_and_stops_in_order() {
        let mut r = JobRules::new();
        let mut d = BTreeMap::new();
        d.insert(j("a"), want(10, Some(1)));
        d.insert(j("b"), want(20, Some(4)));
        let text: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(
            text,
            vec![
                "start ja jobid={a} rate=10 rank=default",
                // b (4 nodes) goes before a (1 node), the highest-priority rule below it.
                "start jb jobid={b} rate=20 rank=ja",
            ]
        );
        d.insert(j("c"), want(5, Some(2)));
        d.insert(j("a"), want(11, Some(1)));
        d.remove(&j("b"));
        let text: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        // c (2 nodes) goes before a (1 node), the highest-priority rule below it.
        assert_eq!(
            text,
            vec![
                "stop jb",
                "change ja rate=11",
                "start jc jobid={c} rate=5 rank=ja"
            ]
        );
        assert!(r.reconcile(&d).is_empty());
        // Every command is valid TBF text.
        let mut r = JobRules::new();
        for c in r.reconcile(&d) {
            assert!(matches!(
                TbfCommand::parse(&c.to_string()).unwrap().op,
                TbfOp::Start { .. }
            ));
        }
    }

    /// A refused start or change is not held: the next reconcile starts the rule again, and
    /// the other jobs' rules are unaffected.
    #[test]
    fn a_refused_write_is_not_held() {
        let mut r = JobRules::new();
        let mut d = BTreeMap::new();
        d.insert(j("a"), want(10, Some(1)));
        d.insert(j("b"), want(20, Some(2)));
        let first: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert!(r.refused(&first[0]), "{first:?}");
        assert!(!r.refused("start other jobid={x} rate=1"));
        assert!(!r.refused("not a command"));
        d.insert(j("b"), want(21, Some(2)));
        let next: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        // a is started again (ranked against b, which is still held), b is changed.
        assert_eq!(
            next,
            vec![
                "start ja jobid={a} rate=10 rank=default",
                "change jb rate=21"
            ]
        );
        assert!(r.refused("change jb rate=21"));
        let again: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(again, vec!["start jb jobid={b} rate=21 rank=ja"]);
    }

    /// A job id with TBF syntax never reaches rule text: a wildcard would take other jobs'
    /// RPCs, a brace or ampersand would add a condition.
    #[test]
    fn job_ids_with_tbf_syntax_get_no_rule() {
        let mut r = JobRules::new();
        let mut d = BTreeMap::new();
        for bad in ["*", "dd.*", "a b", "x}&opcode={ost_read", "a,b", "k=v", "é"] {
            d.insert(j(bad), want(1, None));
        }
        d.insert(j("ok.1"), want(7, None));
        let cmds = r.reconcile(&d);
        // They share the catch-all at the smallest value wanted for any of them, ranked
        // last; a rule started while it is held ranks before it.
        assert_eq!(
            cmds.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
            vec![
                "start jok_1 jobid={ok.1} rate=7",
                "start j_unsafe jobid={*} rate=1 rank=default"
            ]
        );
        assert_eq!(r.refused_jobs().len(), 7);
        d.insert(j("ranked"), want(3, Some(1)));
        d.insert(j("*"), want(1, None));
        d.insert(j("a b"), want(2, None));
        for bad in ["dd.*", "x}&opcode={ost_read", "a,b", "k=v", "é"] {
            d.insert(j(bad), want(5, None));
        }
        assert_eq!(
            r.reconcile(&d)
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>(),
            vec!["start jranked jobid={ranked} rate=3 rank=j_unsafe"]
        );
        d.insert(j("*"), want(4, None));
        assert_eq!(
            r.reconcile(&d)
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>(),
            vec!["change j_unsafe rate=2"]
        );
        d.retain(|job, _| job_id_is_rule_safe(job));
        assert_eq!(
            r.reconcile(&d)
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>(),
            vec!["stop j_unsafe"]
        );
        // In a weight file the catch-all carries no rank.
        let c = RuleCommand::Start {
            name: "j_unsafe".into(),
            job: j("*"),
            value: 2,
            rank: Some("default".into()),
        };
        assert_eq!(
            c.render(RuleFile::Weight {
                param: "nrs_dsfq_weight"
            }),
            "start j_unsafe jobid={*} weight=2"
        );
        assert!(!job_id_is_rule_safe(&JobId::EMPTY));
    }

    /// A name an administrator's rule holds on the server (`jvictim2`) is never given: a job
    /// whose name it would be gets another, from the listing up front or after an `EEXIST`,
    /// so the job is controlled at the next reconcile instead of refused every period.
    #[test]
    fn names_taken_on_the_server_are_not_given() {
        let mut r = JobRules::new();
        r.set_server_names(["jvictim2", "default", "admin_rule"]);
        let mut d = BTreeMap::new();
        d.insert(j("victim2"), want(10, None));
        assert_eq!(
            r.reconcile(&d)
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>(),
            vec!["start jvictim2_2 jobid={victim2} rate=10"]
        );
        // Learnt from the refusal: the administrator started `jvictim3` after the listing.
        d.insert(j("victim3"), want(10, None));
        let cmds = r.reconcile(&d);
        assert_eq!(
            cmds[0].to_string(),
            "start jvictim3 jobid={victim3} rate=10"
        );
        assert!(r.name_taken(&cmds[0].to_string()));
        assert_eq!(
            r.reconcile(&d)
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>(),
            vec!["start jvictim3_2 jobid={victim3} rate=10"]
        );
        // Our own held names in the listing are not foreign.
        r.set_server_names(["jvictim2_2", "jvictim3_2", "jvictim2"]);
        assert!(r.reconcile(&d).is_empty());
        assert_eq!(r.rule_name(&j("victim2")), Some("jvictim2_2"));
        assert!(!r.name_taken("not a command"));
    }

    /// A start refused with `EEXIST` renames the job once (the name is another rule's); any
    /// other refusal, and an `EEXIST` of a change or of the catch-all, starts the same name
    /// again.
    #[test]
    fn write_refused_renames_on_eexist_only() {
        let mut r = JobRules::new();
        let mut d = BTreeMap::new();
        d.insert(j("victim2"), want(10, None));
        d.insert(j("*"), want(3, None));
        let cmds: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(cmds[0], "start jvictim2 jobid={victim2} rate=10");
        assert!(r.write_refused(&cmds[0], Errno::ENOMEM));
        let again: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(again, vec!["start jvictim2 jobid={victim2} rate=10"]);
        assert!(r.write_refused(&again[0], Errno::EEXIST));
        let renamed: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(renamed, vec!["start jvictim2_2 jobid={victim2} rate=10"]);
        // Settled: no write at the next reconcile.
        assert!(r.reconcile(&d).is_empty());
        // The catch-all keeps its name (it is this manager's, reserved).
        assert!(r.write_refused(
            "start j_unsafe jobid={*} rate=3 rank=default",
            Errno::EEXIST
        ));
        let catch_all: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(
            catch_all,
            vec!["start j_unsafe jobid={*} rate=3 rank=default"]
        );
        // A refused change is not a name clash.
        d.insert(j("victim2"), want(11, None));
        let change: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(change, vec!["change jvictim2_2 rate=11"]);
        assert!(r.write_refused(&change[0], Errno::EEXIST));
        let restart: Vec<String> = r.reconcile(&d).iter().map(|c| c.to_string()).collect();
        assert_eq!(restart, vec!["start jvictim2_2 jobid={victim2} rate=11"]);
    }

    /// Unnamable jobs are named at most once an interval, escaped, at most a few per line.
    #[test]
    fn unnamable_jobs_are_logged_at_most_once_an_interval() {
        let mut log = UnnamableLog::default();
        let many: Vec<JobId> = (0..20).map(|i| j(&format!("a b{i}"))).collect();
        assert_eq!(log.due(5, &[]), None);
        let line = log.due(10, &many).expect("the first line is due");
        assert_eq!(line.matches(", ").count(), UNNAMABLE_LOGGED_MAX - 1);
        assert!(line.starts_with("\"a b0\""), "{line}");
        assert_eq!(log.due(10 + UNNAMABLE_LOG_INTERVAL_NS - 1, &many), None);
        assert!(log.due(10 + UNNAMABLE_LOG_INTERVAL_NS, &many).is_some());
        let mut fresh = UnnamableLog::default();
        assert_eq!(fresh.due(0, &[j("x\"y")]).as_deref(), Some("\"x\\\"y\""));
    }

    /// The rank index gives the rule a linear scan of the held rules would (the code before
    /// the index), through starts, stops and refusals in a pseudo-random order, and stays the
    /// set of held rules with a priority.
    #[test]
    fn the_rank_index_agrees_with_a_scan_of_the_held_rules() {
        let scan = |r: &JobRules, job: &JobId, p: u32| {
            let key = |j: &JobId, p: u32| (p, std::cmp::Reverse(*j));
            r.active
                .iter()
                .filter_map(|(other, a)| a.priority.map(|q| (key(other, q), &a.name)))
                .filter(|(k, _)| *k < key(job, p))
                .max_by_key(|(k, _)| *k)
                .map_or_else(|| "default".to_string(), |(_, n)| n.clone())
        };
        let start_rank = |cmds: &[RuleCommand]| -> Option<String> {
            let starts: Vec<&RuleCommand> = cmds
                .iter()
                .filter(|c| matches!(c, RuleCommand::Start { .. }))
                .collect();
            assert_eq!(starts.len(), 1, "{cmds:?}");
            match starts[0] {
                RuleCommand::Start { rank, .. } => rank.clone(),
                _ => unreachable!(),
            }
        };
        let mut r = JobRules::new();
        let mut desired: BTreeMap<JobId, JobRate> = BTreeMap::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % n
        };
        let mut non_default = 0;
        for _ in 0..2_000 {
            let job = j(&format!("job{}", next(40)));
            match next(4) {
                // Add one job: exactly one start, ranked as the scan says.
                0 | 1 if !desired.contains_key(&job) => {
                    let p = next(5) as u32 + 1;
                    let expected = scan(&r, &job, p);
                    non_default += usize::from(expected != "default");
                    desired.insert(job, want(next(100) + 1, Some(p)));
                    let cmds = r.reconcile(&desired);
                    assert_eq!(start_rank(&cmds), Some(expected));
                }
                2 => {
                    desired.remove(&job);
                    r.reconcile(&desired);
                }
                _ => {
                    if let Some(name) = r.rule_name(&job).map(str::to_string) {
                        assert!(r.refused(&format!("change {name} rate=1")));
                        // The next reconcile starts it again, ranked as the scan says.
                        let p = desired[&job].priority.unwrap();
                        let expected = scan(&r, &job, p);
                        let cmds = r.reconcile(&desired);
                        assert_eq!(start_rank(&cmds), Some(expected));
                    }
                }
            }
            let indexed: BTreeSet<RankKey> = r
                .active
                .iter()
                .filter_map(|(job, a)| a.priority.map(|p| rank_key(job, p)))
                .collect();
            assert_eq!(indexed, r.by_priority);
        }
        assert!(non_default > 100, "the walk ranks rules behind others");
    }

    /// The rule manager as it was before a reconcile became a merge of sorted lists (a map of
    /// the held rules, searched per job), kept as the reference the merge must equal.
    #[derive(Default)]
    struct MapRules {
        namer: RuleNamer,
        active: BTreeMap<JobId, ActiveRule>,
        by_priority: BTreeSet<RankKey>,
        refused: BTreeSet<JobId>,
    }

    impl MapRules {
        fn reconcile(&mut self, desired: &BTreeMap<JobId, JobRate>) -> Vec<RuleCommand> {
            let mut out = Vec::new();
            let gone: Vec<JobId> = self
                .active
                .keys()
                .filter(|j| !desired.contains_key(j))
                .copied()
                .collect();
            for job in gone {
                let rule = self.active.remove(&job).expect("listed");
                if let Some(p) = rule.priority {
                    assert!(self.by_priority.remove(&rank_key(&job, p)));
                }
                out.push(RuleCommand::Stop { name: rule.name });
                self.namer.release(&job);
            }
            for (job, want) in desired {
                if let Some(rule) = self.active.get_mut(job) {
                    if rule.value != want.value {
                        rule.value = want.value;
                        out.push(RuleCommand::Change {
                            name: rule.name.clone(),
                            value: want.value,
                        });
                    }
                    continue;
                }
                if !job_id_is_rule_safe(job) {
                    self.refused.insert(*job);
                    continue;
                }
                let name = self.namer.name_for(job).to_string();
                let rank = want.priority.map(|p| {
                    self.by_priority
                        .range(..rank_key(job, p))
                        .next_back()
                        .map_or_else(
                            || "default".to_string(),
                            |(_, std::cmp::Reverse(other))| self.active[other].name.clone(),
                        )
                });
                out.push(RuleCommand::Start {
                    name: name.clone(),
                    job: *job,
                    value: want.value,
                    rank,
                });
                if let Some(p) = want.priority {
                    self.by_priority.insert(rank_key(job, p));
                }
                self.active.insert(
                    *job,
                    ActiveRule {
                        name,
                        value: want.value,
                        priority: want.priority,
                    },
                );
            }
            out
        }

        fn refused(&mut self, name: &str) -> bool {
            let Some(job) = self
                .active
                .iter()
                .find(|(_, r)| r.name == name)
                .map(|(job, _)| *job)
            else {
                return false;
            };
            if let Some(p) = self.active.remove(&job).and_then(|r| r.priority) {
                self.by_priority.remove(&rank_key(&job, p));
            }
            self.namer.release(&job);
            true
        }
    }

    proptest::proptest! {
        /// Through any sequence of desired sets (jobs coming, going, changing value and
        /// priority; ids with TBF syntax; long ids whose names collide when cut to Lustre's
        /// 15 bytes) and refusals, the merge gives exactly the map's commands, names and
        /// rank index.
        #[test]
        fn the_merge_equals_the_map_reconcile(
            steps in proptest::collection::vec(
                (
                    proptest::collection::btree_map(0usize..14, (1u64..6, 0u32..4), 0..14),
                    proptest::option::of(0usize..14),
                ),
                1..30,
            )
        ) {
            let pool: Vec<JobId> = [
                "a", "b", "c.1", "c.2", "d", "a b", "*", "long_job_name_000001",
                "long_job_name_000002", "long_job_name_000003", "x", "y:1", "z", "e",
            ]
            .iter()
            .map(|s| j(s))
            .collect();
            let mut merged = JobRules::with_prefix("ag");
            let mut reference = MapRules {
                namer: RuleNamer::with_prefix("ag"),
                ..MapRules::default()
            };
            for (set, refuse) in steps {
                let desired: BTreeMap<JobId, JobRate> = set
                    .into_iter()
                    .map(|(i, (value, p))| {
                        // Priority 0 stands for none (GIFT's and static's unranked rules).
                        (pool[i], want(value, (p > 0).then_some(p)))
                    })
                    .collect();
                // The reference has no catch-all: its commands are compared apart, and a rank
                // before it stands for the reference's `default`.
                let (catch_all, own): (Vec<RuleCommand>, Vec<RuleCommand>) = merged
                    .reconcile(&desired)
                    .into_iter()
                    .partition(|c| match c {
                        RuleCommand::Start { name, .. }
                        | RuleCommand::Change { name, .. }
                        | RuleCommand::Stop { name } => name == "ag_unsafe",
                    });
                let own: Vec<RuleCommand> = own
                    .into_iter()
                    .map(|c| match c {
                        RuleCommand::Start { name, job, value, rank } => RuleCommand::Start {
                            name,
                            job,
                            value,
                            rank: rank.map(|r| if r == "ag_unsafe" { "default".to_string() } else { r }),
                        },
                        other => other,
                    })
                    .collect();
                proptest::prop_assert_eq!(own, reference.reconcile(&desired));
                let unsafe_min = desired
                    .iter()
                    .filter(|(j, _)| !job_id_is_rule_safe(j))
                    .map(|(_, w)| w.value)
                    .min();
                proptest::prop_assert_eq!(merged.catch_all().1, unsafe_min);
                proptest::prop_assert!(catch_all.len() <= 1, "{:?}", catch_all);
                if let Some(i) = refuse {
                    let name = reference.active.get(&pool[i]).map(|r| r.name.clone());
                    if let Some(name) = name {
                        let change = format!("change {name} rate=1");
                        proptest::prop_assert!(merged.refused(&change));
                        proptest::prop_assert!(reference.refused(&name));
                    }
                }
                for job in &pool {
                    proptest::prop_assert_eq!(
                        merged.rule_name(job),
                        reference.active.get(job).map(|r| r.name.as_str())
                    );
                }
                proptest::prop_assert_eq!(&merged.by_priority, &reference.by_priority);
                proptest::prop_assert_eq!(&merged.refused, &reference.refused);
            }
        }
    }
}
