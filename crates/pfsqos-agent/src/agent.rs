//! The agent: one per Lustre OSS. Every period it reads `job_stats` with `lctl`, builds the
//! [`Observation`] the simulator and the ossd build ([`JobStatsObserver`]), runs a
//! decentralized controller, and writes the resulting rates as `tbf jobid` rules of its own
//! with `lctl set_param`.
//!
//! ```text
//!  start:  nrs_policies -> (tbf jobid started? else enable it once, check it started)
//!          nrs_tbf_rule -> stale rules of our prefix: adopted (change) or stopped
//!          job_stats    -> baseline -> Controller::setup
//!  period: job_stats -> Observation -> Controller::decide -> controller's rates per job
//!          min(controller rate, administrator limit / mean RPC size)    (RPC/s per OSS)
//!          / CPTs the job's class is active on (nrs_tbf_rule `ref`)     (rate per CPT)
//!          top `rules_max` jobs by bytes get a rule; the rest share one catch-all rule
//!          JobRules::reconcile -> start (change on EEXIST) / change / stop
//!  exit:   stop every rule of ours, restore the policy found (SIGTERM, SIGINT)
//! ```
//!
//! The controller's own rule text is never written: its decisions are read as "job J at R
//! RPC/s on this OSS", and the agent's [`JobRules`] (named with the agent's prefix) carries
//! them, so every rule the agent creates is recognisably its own and the controller cannot
//! touch anything else (`default`, an administrator's rules, the policy).
//!
//! Per-CPT rates (lustre-tbf.md §1.1, §7 item 3; LU-17158): a TBF rule's rate applies to each
//! class on each CPU partition, so a job whose RPCs reach `k` partitions gets up to `k` times
//! the rate. The agent reads each of its rules' `ref` counts per CPT and writes `R / k` (at
//! least 1), with `k` the partitions where the job has a class (all of them before it has
//! any), so a limit holds in aggregate.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use pfsqos_core::control::agent::{
    merge_job_bases, unnamable_jobs, JobStatsObservation, JobStatsObserver, Ledger, UnlistedJobs,
};
use pfsqos_core::control::rpc_size::RpcSizeEstimate;
use pfsqos_core::control::rules::{
    job_id_is_rule_safe, JobRate, JobRules, RuleCommand, UnnamableLog,
};
use pfsqos_core::control::{ControlWrite, Controller, Decision, DomainId, Observation};
use pfsqos_core::errno::Errno;
use pfsqos_core::jobstats::poll::BrwTotals;
use pfsqos_core::model::JobId;
use pfsqos_core::sched::tbf::{ListingItem, TbfCommand, TbfOp, TbfRuleListing};
use tracing::{info, warn};

use rustc_hash::FxHashMap;

use crate::config::{AgentConfig, LimitTarget};
use crate::lctl::{Lctl, LctlError};

/// Lustre's parameter names the agent reads and writes.
pub const PARAM_POLICIES: &str = "ost.OSS.ost_io.nrs_policies";
pub const PARAM_TBF_RULE: &str = "ost.OSS.ost_io.nrs_tbf_rule";
pub const PARAM_JOB_STATS: &str = "obdfilter.*.job_stats";

/// The one policy the agent's rules need.
pub const TBF_JOBID: &str = "tbf jobid";

/// The name of the catch-all rule (its prefix plus this), never given to a job.
pub const CATCH_ALL_SUFFIX: &str = "_rest";

/// Name suffix of a first-sight rule (a user's or group's limit for its jobs not seen yet):
/// `<prefix>_f<i>`, `i` the limit's place in `[[limits]]` (below 4096, so at most 14 bytes
/// with an 8-byte prefix, within Lustre's 15).
pub const FIRST_SIGHT_SUFFIX: &str = "_f";

/// The name of the first-sight rule of the `index`-th `[[limits]]` entry.
pub fn first_sight_rule_name(prefix: &str, index: usize) -> String {
    format!("{prefix}{FIRST_SIGHT_SUFFIX}{index}")
}

/// Name suffix of a first-sight rule for a coordinator's user or group limit:
/// `<prefix>_c<slot>`, `slot` below [`pfsqos_wire::coord::REPLY_FIRST_SIGHT_MAX`] (4096, so
/// at most 14 bytes with an 8-byte prefix), kept by the user or group while the coordinator
/// sends its share.
pub const COORD_FIRST_SIGHT_SUFFIX: &str = "_c";

/// The name of the coordinator's first-sight rule in `slot`.
pub fn coord_first_sight_rule_name(prefix: &str, slot: usize) -> String {
    format!("{prefix}{COORD_FIRST_SIGHT_SUFFIX}{slot}")
}

/// A first-sight share (bytes/s) as the per-CPT rate of its rule: RPC/s at the full RPC size
/// (so its bytes stay within the share whatever its RPC size), divided over every partition
/// (a new job may get a class on each), within Lustre's `1..=999_999`.
pub fn first_sight_rate_per_cpt(share_bytes_per_s: u64, brw_size_bytes: u64, cpts: u32) -> u64 {
    let rpcs = share_bytes_per_s / brw_size_bytes.max(1);
    (rpcs / u64::from(cpts.max(1))).clamp(1, pfsqos_core::lustre::TBF_RATE_RPCS_PER_S_MAX as u64)
}

/// What an `nrs_tbf_rule` listing says of the CPU partitions (read every period, before `apply`).
#[derive(Debug, Default)]
struct ListedCpts<'t> {
    /// Partitions the listing shows (0 when it could not be read: the configured count is
    /// used then).
    count: u32,
    /// For each of our rules with classes (`ref > 0` on either queue), the partitions it has
    /// classes on; names borrowed from the listing's text (no copy per rule and period).
    by_rule: FxHashMap<&'t str, CptSet>,
}

impl<'t> ListedCpts<'t> {
    /// Reads a listing's text: a listing holds every rule on every partition, tens of
    /// thousands of lines at the agent's rule cap, and only ours with classes are kept, each
    /// with the set of partitions it is active on (a rule active on one partition in both
    /// queues counts once). Empty when the text could not be read.
    fn read(text: &'t str, prefix: &str) -> ListedCpts<'t> {
        let mut by_rule: FxHashMap<&str, CptSet> = FxHashMap::default();
        let mut headers = [0u32; 2];
        let visited = TbfRuleListing::visit(text, |item| match item {
            ListingItem::Cpt { high_priority, .. } => headers[usize::from(high_priority)] += 1,
            ListingItem::Rule { cpt, rule, .. } => {
                if rule.refs > 0 && rule.name.starts_with(prefix) {
                    by_rule.entry(rule.name).or_default().insert(cpt);
                }
            }
        });
        match visited {
            Err(_) => ListedCpts::default(),
            Ok(_) => ListedCpts {
                count: headers[0].max(headers[1]),
                by_rule,
            },
        }
    }

    /// On how many partitions rule `name` has classes (`None`: on none the listing showed).
    fn of_rule(&self, name: &str) -> Option<u32> {
        self.by_rule.get(name).map(CptSet::len)
    }
}

/// A set of partition numbers: a bit per partition below 128 (every OSS seen), a list
/// beyond (never allocated otherwise), bounded by [`CPT_SET_HIGH_MAX`].
#[derive(Debug, Default)]
struct CptSet {
    low: u128,
    high: Vec<u32>,
}

/// Most partitions numbered 128 or more a rule is counted on: a listing is outside input, and
/// a set searched linearly must not grow with it. A listing beyond it (more than 1,152
/// partitions, far above any OSS's core count) undercounts, so such a rule's per-partition
/// rate is higher than its share.
const CPT_SET_HIGH_MAX: usize = 1024;

impl CptSet {
    fn insert(&mut self, cpt: u32) {
        match cpt {
            0..=127 => self.low |= 1u128 << cpt,
            _ => {
                if self.high.len() < CPT_SET_HIGH_MAX && !self.high.contains(&cpt) {
                    self.high.push(cpt);
                }
            }
        }
    }

    fn len(&self) -> u32 {
        self.low.count_ones() + self.high.len() as u32
    }
}

/// The one scheduling domain an agent is: its OSS's `ost_io` service.
pub const AGENT_DOMAIN: DomainId = DomainId(0);

/// What the agent did so far (metrics and `pfsqos agent --once` output).
#[derive(Clone, Debug, Default)]
pub struct AgentStats {
    pub periods: u64,
    /// Periods whose job_stats could not be read (rules kept as they were).
    pub periods_skipped: u64,
    /// Of those, periods whose job_stats text had no parameter names (`obdfilter.X.job_stats=`):
    /// refused, since which OST an entry is on cannot be told (never put on a target 0).
    pub job_stats_nameless: u64,
    pub rules_started: u64,
    pub rules_changed: u64,
    pub rules_stopped: u64,
    /// Writes Lustre refused (after EEXIST was turned into a change).
    pub writes_refused: u64,
    /// Starts refused because another rule (an administrator's) holds the name: each job is
    /// renamed once.
    pub names_taken: u64,
    pub job_stats_restarts: u64,
    pub job_stats_skipped_entries: u64,
    pub last_decision_ns: u64,
    pub rules_held: usize,
    /// Jobs without a rule of their own under the catch-all rule in the last period: those
    /// beyond `rules_max` and those whose id cannot be a rule (TBF syntax).
    pub jobs_in_catch_all: usize,
    /// Of those, the jobs whose id holds TBF syntax (`*`, space, braces, `,`, `&`, `=`,
    /// non-ASCII: `job_id_is_rule_safe`).
    pub jobs_unnamable: usize,
    /// Per job with a rule: the rate per CPT written and the observed bytes/s.
    pub job_rates: BTreeMap<JobId, JobRateStat>,
    /// Jobs held at an administrator limit: since when (agent time, ns) and the limit.
    pub held: BTreeMap<JobId, Held>,
    /// Rules of the agent's prefix found at start (left by an earlier instance) and taken
    /// over with a `change` instead of being stopped and started again.
    pub rules_adopted: u64,
    /// Rules of the agent's prefix found at start and stopped (not wanted, or their name is
    /// wanted for another job).
    pub stale_rules_removed: u64,
    /// Failed exchanges with the coordinator (coordinated agents only).
    pub coordinator_errors: u64,
    /// Whether the agent is in the safe state: its coordinator silent for longer than
    /// `safe_hold_ms`, its rules removed.
    pub safe_state: bool,
    /// `[slurm]`: squeue answers read, those that failed (the last facts are kept), and the
    /// running jobs the last answer gave.
    pub slurm_queries: u64,
    pub slurm_queries_failed: u64,
    pub slurm_jobs: usize,
}

/// Most running jobs whose Slurm facts the agent keeps (the controller's bound on known jobs).
pub const SLURM_JOBS_MAX: usize = pfsqos_core::control::agent::KNOWN_JOBS_MAX;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JobRateStat {
    pub rate_per_cpt_rpcs_per_s: u64,
    pub cpts: u32,
    pub observed_bytes_per_s: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Held {
    pub since_ns: u64,
    pub limit_bytes_per_s: u64,
    pub held_ns: u64,
}

/// What a rule of the agent's prefix, found at start, matches (read from its listed
/// condition: `jobid={J}` in the expression layout, `{J}` in the legacy one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaleMatch {
    /// One rule-safe job id: the rule can be adopted by that job.
    Job(JobId),
    /// `{*}`: the catch-all's form.
    All,
    /// `{*.<digits>}`: a first-sight rule's form (the pattern, as text).
    Pattern(JobId),
    /// Anything else (several ids, other fields): only ever stopped.
    Other,
}

impl StaleMatch {
    pub fn of_condition(conditions: &str) -> StaleMatch {
        let c = conditions.trim();
        let c = c.strip_prefix("jobid=").unwrap_or(c);
        let Some(inner) = c.strip_prefix('{').and_then(|c| c.strip_suffix('}')) else {
            return StaleMatch::Other;
        };
        if inner == "*" {
            return StaleMatch::All;
        }
        if let Some(id) = inner.strip_prefix("*.") {
            if (1..=10).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_digit()) {
                return JobId::new(inner).map_or(StaleMatch::Other, StaleMatch::Pattern);
            }
        }
        match JobId::new(inner) {
            Ok(j) if pfsqos_core::control::rules::job_id_is_rule_safe(&j) => StaleMatch::Job(j),
            _ => StaleMatch::Other,
        }
    }
}

/// The rule a catch-all or first-sight command names (`start NAME ...`, `change NAME ...`).
fn raw_rule_name(text: &str) -> Option<&str> {
    let mut words = text.split(' ');
    match words.next() {
        Some("start" | "change" | "stop") => words.next(),
        _ => None,
    }
}

/// Why the agent could not start.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

/// The policy `nrs_policies` says is running on the regular queue: the started entry that is
/// not the FIFO fallback, else `fifo`. `None` if the text shows no started policy at all.
pub fn running_policy(text: &str) -> Option<String> {
    let regular = text.split("high_priority_requests:").next().unwrap_or("");
    let mut name: Option<String> = None;
    let mut started = Vec::new();
    for line in regular.lines() {
        let t = line.trim();
        if let Some(n) = t.strip_prefix("- name:") {
            name = Some(n.trim().to_string());
        } else if let Some(state) = t.strip_prefix("state:") {
            if state.trim() == "started" {
                if let Some(n) = &name {
                    started.push(n.clone());
                }
            }
        }
    }
    if started.is_empty() {
        return None;
    }
    Some(
        started
            .iter()
            .find(|n| n.as_str() != "fifo")
            .cloned()
            .unwrap_or_else(|| "fifo".to_string()),
    )
}

/// Whether rules of the form `jobid={...}` are accepted under `policy`: `tbf jobid`, plain
/// `tbf` (every field), or a combined type with `jobid`.
pub fn policy_takes_jobid_rules(policy: &str) -> bool {
    match policy.strip_prefix("tbf") {
        Some("") => true,
        Some(rest) => rest.starts_with(' ') && rest.trim().split('+').any(|t| t == "jobid"),
        None => false,
    }
}

/// A controller's decisions read as "job J at R RPC/s on this OSS", by the controller's own
/// rule names (it starts, changes and stops them). The agent keeps one for its local
/// controller; the coordinator keeps one per OSS and sends each agent its [`Self::rates`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControllerRates {
    by_rule: BTreeMap<String, (JobId, u64)>,
}

impl ControllerRates {
    /// The OSS-wide rate of each job with a rule (the lowest when several rules name it).
    pub fn rates(&self) -> BTreeMap<JobId, u64> {
        // Sorted by job, then rate: the first of each job is its lowest; the map is then
        // built from sorted pairs in one pass (a search per job cost more).
        let mut pairs: Vec<(JobId, u64)> = self.by_rule.values().copied().collect();
        pairs.sort_unstable();
        pairs.dedup_by_key(|&mut (job, _)| job);
        pairs.into_iter().collect()
    }

    pub fn clear(&mut self) {
        self.by_rule.clear();
    }

    /// Reads the `nrs_tbf_rule` writes of one domain (the others are ignored by the caller).
    pub fn absorb<'a>(&mut self, writes: impl IntoIterator<Item = &'a ControlWrite>) {
        for w in writes {
            // Policy and client writes are the caller's to judge.
            let Some(text) = w.tbf_rule_text() else {
                continue;
            };
            match TbfCommand::parse(text).map(|c| c.op) {
                Ok(TbfOp::Start {
                    name,
                    condition,
                    rate_rpcs_per_s,
                    ..
                }) => {
                    let job = condition
                        .text
                        .strip_prefix("jobid={")
                        .and_then(|t| t.strip_suffix('}'))
                        .and_then(|t| JobId::new(t).ok());
                    match job {
                        Some(job) => {
                            let rate = u64::from(rate_rpcs_per_s.unwrap_or(10_000));
                            self.by_rule.insert(name, (job, rate));
                        }
                        None => {
                            warn!(rule = %text.escape_debug(), "controller rule not on one job; ignored")
                        }
                    }
                }
                Ok(TbfOp::Change {
                    name,
                    rate_rpcs_per_s: Some(r),
                    ..
                }) => {
                    if let Some(e) = self.by_rule.get_mut(&name) {
                        e.1 = u64::from(r);
                    }
                }
                Ok(TbfOp::Change { .. }) => {}
                Ok(TbfOp::Stop { name }) => {
                    self.by_rule.remove(&name);
                }
                Err(e) => warn!(error = %e, "controller rule unparsable; ignored"),
            }
        }
    }

    /// Rates given as they are (a coordinator's decision for one OSS), one rule per job.
    pub fn from_rates(rates: &BTreeMap<JobId, u64>) -> ControllerRates {
        ControllerRates {
            by_rule: rates
                .iter()
                .map(|(job, &rate)| (job.as_str().to_string(), (*job, rate)))
                .collect(),
        }
    }
}

/// The OSS-wide rate (RPC/s) each job should get, in job id order, from the controller's
/// rates and the administrator's limits (both in job id order): the lower of the two, a limit
/// winning a tie; `limit_rpcs` converts a job's limit (bytes/s) into RPC/s. Each entry is the
/// job, its rate and the limit behind it (`None`: the controller's rate).
fn merge_wanted(
    rates: BTreeMap<JobId, u64>,
    limits: &BTreeMap<JobId, u64>,
    limit_rpcs: impl Fn(&JobId, u64) -> u64,
) -> Vec<(JobId, u64, Option<u64>)> {
    let mut out = Vec::with_capacity(rates.len() + limits.len());
    let mut limits = limits.iter().peekable();
    for (job, rate) in rates {
        while let Some((&l, &limit)) = limits.next_if(|(l, _)| **l < job) {
            out.push((l, limit_rpcs(&l, limit), Some(limit)));
        }
        match limits.next_if(|(l, _)| **l == job) {
            Some((_, &limit)) => {
                let r = limit_rpcs(&job, limit);
                out.push(if r <= rate {
                    (job, r, Some(limit))
                } else {
                    (job, rate, None)
                });
            }
            None => out.push((job, rate, None)),
        }
    }
    out.extend(limits.map(|(&l, &limit)| (l, limit_rpcs(&l, limit), Some(limit))));
    debug_assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
    out
}

/// Each wanted job's bytes in the period (0 if `per_job` has none), by one merge of the two
/// lists in job id order.
fn bytes_in_order(
    want: &[(JobId, u64, Option<u64>)],
    per_job: &BTreeMap<JobId, BrwTotals>,
) -> Vec<u64> {
    let mut seen = per_job.iter().peekable();
    want.iter()
        .map(|(job, _, _)| {
            while seen.next_if(|(j, _)| *j < job).is_some() {}
            match seen.peek() {
                Some((j, t)) if *j == job => t.bytes,
                _ => 0,
            }
        })
        .collect()
}

// The byte-limit policy (shares of user and group limits, "held") is pfsqos-core's; the
// agent applies it per OSS, the coordinator over the whole file system.
use pfsqos_core::control::byte_limits::{first_sight_pattern, first_sight_shares_bytes_per_s};
pub use pfsqos_core::control::byte_limits::{limit_shares_bytes_per_s, HELD_FRACTION};
use pfsqos_core::sched::tbf::cond::wildcard_match;

/// The agent: its configuration, lctl, controller and what it holds.
pub struct Agent<L: Lctl> {
    config: AgentConfig,
    lctl: L,
    controller: Box<dyn Controller>,
    observer: JobStatsObserver,
    rules: JobRules,
    ledger: Ledger,
    /// The controller's rules by its own name: job and rate (RPC/s on this OSS).
    controller_rules: ControllerRates,
    /// Mean bulk RPC size per job over its recent periods (bytes), bounded like the jobs.
    /// Each job's observed bytes per RPC: the conversion of byte limits into rule rates.
    rpc_size: RpcSizeEstimate,
    catch_all: Option<u64>,
    catch_all_name: String,
    /// First-sight rules held, by name: each limited user's or group's pattern (`*.<id>`,
    /// `byte_limits::first_sight_pattern`) and the per-CPT rate written. They rank after
    /// every job's own rule and before the catch-all, so a job of that user or group no
    /// rule names yet (new on this OSS) is limited from its first RPC. A rate of 0 means the
    /// last change was refused (written again next period).
    first_sight: BTreeMap<String, (String, u64)>,
    /// The coordinator's first-sight shares from its last reply, per user or group: the
    /// rule slot it holds ([`coord_first_sight_rule_name`]) and the share on this OSS
    /// (bytes/s). Written as first-sight rules beside the agent's own (one rule per pattern,
    /// the tighter rate where both limit the same user or group).
    coord_first_sight: BTreeMap<LimitTarget, (usize, u64)>,
    /// Rules of our prefix found at start and not yet adopted or stopped, by name. Until the
    /// first period's rules are written they keep limiting their jobs; a rule this agent
    /// wants under the same name for the same job is adopted (`change`), any other is stopped
    /// (before its name is started again); those left after the first period are stopped,
    /// and a stop that fails is tried again every period and at exit.
    stale: BTreeMap<String, StaleMatch>,
    epoch: Instant,
    started: bool,
    /// `[slurm]`: each running job's basis (node count or scaled priority), by job id, from
    /// the last squeue answer that could be read, and when squeue is asked next.
    slurm_bases: BTreeMap<JobId, u32>,
    slurm_next: Option<Instant>,
    /// When jobs with unnamable ids were last logged (one line a minute at most).
    unnamable_log: UnnamableLog,
    /// `CapacitySource::ObservedPeak`: the highest rate each target served in one period
    /// (RPC/s), bounded like the OSTs polled.
    peak_rpcs_per_s: BTreeMap<pfsqos_core::model::OstId, f64>,
    /// Whether the partition count's warning was logged (once a run is enough).
    partition_count_warned: bool,
    pub stats: AgentStats,
}

fn now_ns(epoch: Instant) -> u64 {
    epoch.elapsed().as_nanos() as u64
}

impl<L: Lctl> Agent<L> {
    pub fn new(config: AgentConfig, lctl: L) -> Agent<L> {
        let controller = config
            .policy
            .controller_with(config.period_ms, config.brw_size_bytes, 0);
        let epoch = Instant::now();
        let observer = JobStatsObserver::new(
            AGENT_DOMAIN,
            config.ost_capacity_rpcs_per_s,
            &config.job_nodes,
            0,
        );
        let mut rules = JobRules::with_prefix(&config.rule_prefix);
        let catch_all_name = format!("{}{CATCH_ALL_SUFFIX}", config.rule_prefix);
        rules.reserve_name(&catch_all_name);
        for (i, &(target, _)) in config.limits.iter().enumerate() {
            if first_sight_pattern(target, config.job_id_layout).is_some() {
                rules.reserve_name(&first_sight_rule_name(&config.rule_prefix, i));
            }
        }
        if config.coordinator.is_some() {
            for slot in 0..pfsqos_wire::coord::REPLY_FIRST_SIGHT_MAX {
                rules.reserve_name(&coord_first_sight_rule_name(&config.rule_prefix, slot));
            }
        }
        let rpc_size = RpcSizeEstimate::new(config.brw_size_bytes);
        Agent {
            config,
            lctl,
            controller,
            observer,
            rules,
            ledger: Ledger::default(),
            controller_rules: ControllerRates::default(),
            rpc_size,
            catch_all: None,
            catch_all_name,
            first_sight: BTreeMap::new(),
            coord_first_sight: BTreeMap::new(),
            stale: BTreeMap::new(),
            epoch,
            started: false,
            slurm_bases: BTreeMap::new(),
            slurm_next: None,
            unnamable_log: UnnamableLog::default(),
            peak_rpcs_per_s: BTreeMap::new(),
            partition_count_warned: false,
            stats: AgentStats::default(),
        }
    }

    pub fn lctl(&self) -> &L {
        &self.lctl
    }

    pub fn lctl_mut(&mut self) -> &mut L {
        &mut self.lctl
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The controller's period (`None`: it decides once, at setup).
    pub fn period_ns(&self) -> u64 {
        self.controller
            .period_ns()
            .unwrap_or(self.config.period_ms * 1_000_000)
    }

    fn get(&mut self, param: &str) -> Result<String, LctlError> {
        self.lctl
            .run(&["get_param".to_string(), "-n".to_string(), param.to_string()])
    }

    /// `lctl get_param obdfilter.*.job_stats` **with** the parameter names: `-n` would print
    /// the values alone, and with several OSTs (or one OST under a file-system-wide index) the
    /// agent could no longer tell which OST an entry belongs to. Every OST's jobs then fell
    /// into one unnamed target numbered 0, beside the listed OSTs as idle targets: two agents
    /// both reported OSTs 0 and 1, and the coordinator's GIFT refused the merged view
    /// (duplicate OSTs) every round.
    fn get_job_stats(&mut self) -> Result<String, LctlError> {
        self.lctl
            .run(&["get_param".to_string(), PARAM_JOB_STATS.to_string()])
    }

    fn set(&mut self, param: &str, value: &str) -> Result<(), LctlError> {
        // One argv element `PARAM=VALUE`: the value is never split or interpreted.
        self.lctl
            .run(&["set_param".to_string(), format!("{param}={value}")])
            .map(|_| ())
    }

    fn owns(&self, rule: &str) -> bool {
        rule.starts_with(&self.config.rule_prefix)
    }

    /// Starts: takes the policy in hand, finds what an earlier instance left, gives the
    /// controller its setup observation.
    pub fn start(&mut self) -> Result<(), StartError> {
        let policies = self
            .get(PARAM_POLICIES)
            .map_err(|e| StartError(format!("reading {PARAM_POLICIES}: {e}")))?;
        let found = if self.lctl.writes() {
            running_policy(&policies)
                .ok_or_else(|| StartError(format!("{PARAM_POLICIES} shows no started policy")))?
        } else {
            running_policy(&policies).unwrap_or_else(|| "fifo".to_string())
        };
        if !policy_takes_jobid_rules(&found) {
            if found.starts_with("tbf") {
                // Changing a running TBF's type wipes every rule (lustre-tbf.md §1.1):
                // the administrator's are not ours to drop.
                return Err(StartError(format!(
                    "TBF is running as `{found}`, whose rules cannot name jobs; switching it \
                     would drop the administrator's rules. Start `tbf jobid` (or `tbf`) first."
                )));
            }
            info!(policy_found = %found, "enabling {TBF_JOBID}");
            self.set(PARAM_POLICIES, TBF_JOBID)
                .map_err(|e| StartError(format!("enabling {TBF_JOBID}: {e}")))?;
            self.ledger.policies_changed = true;
            self.ledger.policy_found = Some(found.clone());
            if self.lctl.writes() {
                let text = self
                    .get(PARAM_POLICIES)
                    .map_err(|e| StartError(format!("reading {PARAM_POLICIES}: {e}")))?;
                let now = running_policy(&text);
                if now.as_deref() != Some(TBF_JOBID) {
                    return Err(StartError(format!(
                        "{TBF_JOBID} did not start (running: {now:?})"
                    )));
                }
            }
        } else {
            info!(policy = %found, "TBF already takes jobid rules; left as found");
        }
        self.find_stale_rules()?;
        let listed = self.list_osts();
        let text = self.get_job_stats().unwrap_or_default();
        let now = now_ns(self.epoch);
        let mut initial = self
            .observer
            .observe(now, &text, &listed)
            .map_err(|e| StartError(format!("job_stats: {e}")))?;
        self.refresh_job_facts();
        self.apply_job_facts(&mut initial.observation);
        let decision = self.controller.setup(&initial.observation);
        // A coordinated agent's rates come from its coordinator only.
        if self.config.coordinator.is_none() {
            self.absorb(&decision);
        }
        // The listing tells the CPT count (the configured one is the fallback).
        let listing = self.rule_listing();
        let cpts = listing.as_deref().map_or_else(ListedCpts::default, |t| {
            ListedCpts::read(t, &self.config.rule_prefix)
        });
        self.apply(&initial.observation, &initial.per_job, &cpts);
        self.started = true;
        Ok(())
    }

    /// Finds every rule of our prefix (an earlier instance killed without its clean-up): they
    /// are adopted or stopped as the first rules are written (see the `stale` field).
    fn find_stale_rules(&mut self) -> Result<(), StartError> {
        let text = match self.get(PARAM_TBF_RULE) {
            Ok(t) => t,
            Err(e) if !self.lctl.writes() => {
                warn!(error = %e, "dry run: no rule listing");
                return Ok(());
            }
            Err(e) => return Err(StartError(format!("reading {PARAM_TBF_RULE}: {e}"))),
        };
        let Ok(listing) = TbfRuleListing::parse(&text) else {
            warn!("rule listing unreadable; no stale rules found");
            return Ok(());
        };
        let sections = std::iter::once(&listing.regular).chain(listing.high_priority.as_ref());
        for rule in sections.flatten().flat_map(|c| c.rules.iter()) {
            if self.owns(&rule.name) && rule.name != "default" {
                self.stale
                    .entry(rule.name.clone())
                    .or_insert_with(|| StaleMatch::of_condition(&rule.conditions));
            }
        }
        for (name, m) in &self.stale {
            info!(rule = %name, matches = ?m, "rule left by an earlier instance: adopted if still wanted, else removed");
        }
        Ok(())
    }

    /// Stops the stale rules no write adopted; those that cannot be stopped now are tried
    /// again next time, and their names are never given to a job meanwhile.
    fn sweep_stale_rules(&mut self) {
        let names: Vec<String> = self.stale.keys().cloned().collect();
        for name in names {
            match self.set(PARAM_TBF_RULE, &format!("stop {name}")) {
                Ok(()) => {
                    self.stale.remove(&name);
                    self.stats.stale_rules_removed += 1;
                    info!(rule = %name, "removed a rule left by an earlier instance");
                }
                Err(e) if e.errno() == Some(Errno::ENOENT) => {
                    // Already gone (an administrator stopped it).
                    self.stale.remove(&name);
                }
                Err(e) => {
                    self.rules.reserve_name(&name);
                    warn!(rule = %name, error = %e, "could not remove a stale rule; tried again next period");
                }
            }
        }
    }

    /// Writes one rule command over what an earlier instance left: a start whose name a
    /// stale rule holds adopts it (`change`) when it matches the same job (or is the
    /// catch-all), else stops it first. A stale rule that cannot be stopped keeps its name:
    /// the start is not written (it would change a rule on another job), the job is named
    /// afresh at the next period.
    fn write_over_stale(&mut self, text: &str, cmd: Option<&RuleCommand>) {
        let start = match cmd {
            Some(RuleCommand::Start {
                name,
                job,
                value,
                rank,
            }) => Some((name.clone(), StaleMatch::Job(*job), *value, rank.clone())),
            None if text.starts_with("start ") => match raw_rule_name(text) {
                Some(n) if n == self.catch_all_name => self.catch_all.map(|r| {
                    (
                        self.catch_all_name.clone(),
                        StaleMatch::All,
                        r,
                        Some("default".to_string()),
                    )
                }),
                Some(n) => self.first_sight.get(n).map(|(pattern, r)| {
                    (
                        n.to_string(),
                        StaleMatch::of_condition(&format!("jobid={{{pattern}}}")),
                        *r,
                        None,
                    )
                }),
                None => None,
            },
            _ => None,
        };
        let Some((name, wanted, value, rank)) = start else {
            return self.write_rule(text, cmd);
        };
        let Some(found) = self.stale.remove(&name) else {
            return self.write_rule(text, cmd);
        };
        if found == wanted {
            let mut change = format!("change {name} rate={value}");
            if let Some(before) = &rank {
                change.push_str(" rank=");
                change.push_str(before);
            }
            match self.set(PARAM_TBF_RULE, &change) {
                Ok(()) => {
                    // Held as if started: a clean exit stops it.
                    self.ledger.note(&ControlWrite::tbf_rule(text.to_string()));
                    self.stats.rules_adopted += 1;
                    info!(rule = %name, "adopted a rule left by an earlier instance");
                    return;
                }
                Err(e) => {
                    // Gone meanwhile, or refused: start it as new.
                    warn!(rule = %name, error = %e, "could not adopt a stale rule; starting it");
                    return self.write_rule(text, cmd);
                }
            }
        }
        match self.set(PARAM_TBF_RULE, &format!("stop {name}")) {
            Ok(()) => {
                self.stats.stale_rules_removed += 1;
                info!(rule = %name, "removed a rule left by an earlier instance (its name is wanted for another job)");
                self.write_rule(text, cmd);
            }
            Err(e) if e.errno() == Some(Errno::ENOENT) => self.write_rule(text, cmd),
            Err(e) => {
                warn!(rule = %name, error = %e, "could not remove a stale rule; its name is not reused");
                self.stale.insert(name.clone(), found);
                self.stats.writes_refused += 1;
                if cmd.is_some() {
                    // Releases the job's name first, so the reservation below sticks.
                    self.rules.refused(text);
                } else {
                    self.forget_raw_write(text);
                }
                self.rules.reserve_name(&name);
            }
        }
    }

    /// `CapacitySource::ObservedPeak`: each target's capacity is its highest served rate in
    /// one period times the headroom, or the initial value until it has served (the
    /// estimator is documented at [`crate::config::CapacitySource`]).
    fn estimate_capacity(&mut self, obs: &mut Observation) {
        if self.config.capacity_source != crate::config::CapacitySource::ObservedPeak {
            return;
        }
        let period_s = obs.period_ns as f64 / 1e9;
        let cap_max = pfsqos_core::lustre::OST_CAPACITY_RPCS_PER_S_MAX;
        for t in obs.domains.iter_mut().flat_map(|d| d.targets.iter_mut()) {
            let served: u64 = t.jobs.iter().map(|j| j.rpcs_served).sum();
            if period_s > 0.0
                && served > 0
                && self.peak_rpcs_per_s.len() < pfsqos_core::jobstats::poll::POLL_OSTS_MAX
            {
                let rate = served as f64 / period_s;
                let peak = self.peak_rpcs_per_s.entry(t.ost).or_insert(0.0);
                *peak = peak.max(rate);
            }
            if let Some(&peak) = self.peak_rpcs_per_s.get(&t.ost) {
                t.capacity_rpcs_per_s =
                    ((peak * crate::config::PEAK_HEADROOM).ceil() as u64).clamp(1, cap_max);
            }
        }
    }

    /// Each target's capacity as given to the controller at the last period (RPC/s).
    pub fn peak_capacities(&self) -> BTreeMap<pfsqos_core::model::OstId, u64> {
        self.peak_rpcs_per_s
            .iter()
            .map(|(&ost, &p)| (ost, (p * crate::config::PEAK_HEADROOM).ceil() as u64))
            .collect()
    }

    /// `[slurm]`: asks squeue for the running jobs when due (every `refresh_ms`); an answer
    /// that cannot be had keeps the last facts (counted, logged).
    fn refresh_job_facts(&mut self) {
        let Some(slurm) = self.config.slurm.clone() else {
            return;
        };
        let now = Instant::now();
        if self.slurm_next.is_some_and(|next| now < next) {
            return;
        }
        self.slurm_next = Some(now + Duration::from_millis(slurm.refresh_ms));
        self.stats.slurm_queries += 1;
        match pfsqos_jobfacts::query_squeue(&slurm.squeue, Duration::from_millis(slurm.timeout_ms))
        {
            Ok(answer) => {
                if answer.lines_skipped > 0 {
                    warn!(
                        lines = answer.lines_skipped,
                        "squeue lines unreadable; skipped"
                    );
                }
                self.slurm_bases = pfsqos_jobfacts::bases(&answer.jobs, slurm.basis)
                    .into_iter()
                    .filter_map(|(job, b)| JobId::new(&job).ok().map(|j| (j, b)))
                    .take(SLURM_JOBS_MAX)
                    .collect();
                self.stats.slurm_jobs = self.slurm_bases.len();
            }
            Err(e) => {
                self.stats.slurm_queries_failed += 1;
                warn!(error = %e.escape_debug(), "squeue failed; the last job facts are kept");
            }
        }
    }

    /// Gives the controller Slurm's facts: each running job's node count (or scaled
    /// priority, `[slurm] basis`) replaces what job_stats and `[[jobs]]` gave, and running
    /// jobs not seen in job_stats yet are added ([`merge_job_bases`]).
    fn apply_job_facts(&self, obs: &mut Observation) {
        merge_job_bases(obs, &self.slurm_bases, UnlistedJobs::Keep);
    }

    fn list_osts(&mut self) -> Vec<String> {
        match self
            .lctl
            .run(&["list_param".to_string(), PARAM_JOB_STATS.to_string()])
        {
            Ok(t) => t
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("obdfilter.") && l.ends_with(".job_stats"))
                .take(pfsqos_core::jobstats::poll::POLL_OSTS_MAX)
                .map(str::to_string)
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// One period: observe, decide, write. A period whose job_stats cannot be read keeps
    /// the rules as they are.
    pub fn period(&mut self) {
        let Some(obs) = self.observe() else {
            return;
        };
        let t0 = Instant::now();
        let decision = self.controller.decide(&obs.observation);
        self.absorb(&decision);
        self.carry_out(&obs);
        self.stats.last_decision_ns += t0.elapsed().as_nanos() as u64;
    }

    /// Reads job_stats into this period's observation; `None` (counted, logged) when it
    /// cannot be read or parsed, and the rules stay as they are.
    pub fn observe(&mut self) -> Option<JobStatsObservation> {
        assert!(self.started, "period before start");
        let listed = self.list_osts();
        let text = match self.get_job_stats() {
            Ok(t) => t,
            Err(e) => {
                self.stats.periods_skipped += 1;
                warn!(error = %e, "job_stats unreadable; rules kept for this period");
                return None;
            }
        };
        let t0 = Instant::now();
        let now = now_ns(self.epoch);
        let mut obs = match self.observer.observe(now, &text, &listed) {
            Ok(o) => o,
            Err(e) if e.nameless() => {
                self.stats.periods_skipped += 1;
                self.stats.job_stats_nameless += 1;
                tracing::error!(error = %e, lctl = %self.config.lctl.display().to_string().escape_debug(),
                    "job_stats came without parameter names (is `lctl` a wrapper adding -n?); refused, rules kept for this period");
                return None;
            }
            Err(e) => {
                self.stats.periods_skipped += 1;
                warn!(error = %e, "job_stats unparsable; rules kept for this period");
                return None;
            }
        };
        self.refresh_job_facts();
        self.apply_job_facts(&mut obs.observation);
        self.estimate_capacity(&mut obs.observation);
        self.stats.periods += 1;
        self.stats.job_stats_restarts += obs.counts.restarts;
        self.stats.job_stats_skipped_entries += obs.skipped_entries as u64;
        self.stats.last_decision_ns = t0.elapsed().as_nanos() as u64;
        Some(obs)
    }

    /// Writes the rules the controller's current rates and the administrator's limits ask
    /// for, given this period's observation.
    pub fn carry_out(&mut self, obs: &JobStatsObservation) {
        let t0 = Instant::now();
        let listing = self.rule_listing();
        let cpts = listing.as_deref().map_or_else(ListedCpts::default, |t| {
            ListedCpts::read(t, &self.config.rule_prefix)
        });
        self.apply(&obs.observation, &obs.per_job, &cpts);
        self.stats.last_decision_ns += t0.elapsed().as_nanos() as u64;
        // After the first period's rules, what was left by an earlier instance and not
        // adopted goes.
        if !self.stale.is_empty() {
            self.sweep_stale_rules();
        }
    }

    /// Replaces the controller's rates with a coordinator's (job, OSS-wide RPC/s): its
    /// decision for this OSS. An empty set is the safe state: no controller rule is left
    /// (the administrator's byte limits, local configuration, still hold).
    pub fn set_coordinated(&mut self, rates: &BTreeMap<JobId, u64>) {
        self.set_coordinator_reply(rates, &BTreeMap::new());
    }

    /// [`Self::set_coordinated`] with the coordinator's first-sight shares (bytes/s on this
    /// OSS per user or group limit, [`pfsqos_wire::coord::ValidReply`]): each becomes a
    /// first-sight rule at the next write, in a slot the user or group keeps while the
    /// coordinator sends its share (so its rule is changed, not renamed); a share gone frees
    /// its slot and its rule is stopped. At most `REPLY_FIRST_SIGHT_MAX` (the reply's bound).
    pub fn set_coordinator_reply(
        &mut self,
        rates: &BTreeMap<JobId, u64>,
        first_sight: &BTreeMap<LimitTarget, u64>,
    ) {
        self.controller_rules = ControllerRates::from_rates(rates);
        self.coord_first_sight
            .retain(|target, _| first_sight.contains_key(target));
        let taken: BTreeSet<usize> = self.coord_first_sight.values().map(|v| v.0).collect();
        // A slot whose rule is still written (its share went in this reply; the rule is
        // stopped at the next write) is not given again before then: the next write would
        // change that rule's rate and keep its pattern, another user's.
        let prefix = &self.config.rule_prefix;
        let written = &self.first_sight;
        let mut free = (0..pfsqos_wire::coord::REPLY_FIRST_SIGHT_MAX).filter(|&s| {
            !taken.contains(&s) && !written.contains_key(&coord_first_sight_rule_name(prefix, s))
        });
        let mut new_slots = Vec::new();
        for (&target, &bytes_per_s) in first_sight {
            match self.coord_first_sight.get_mut(&target) {
                Some(held) => held.1 = bytes_per_s,
                None => match free.next() {
                    Some(slot) => new_slots.push((target, slot, bytes_per_s)),
                    None => {
                        warn!(%target, "no first-sight slot left for a coordinator share; ignored")
                    }
                },
            }
        }
        for (target, slot, bytes_per_s) in new_slots {
            self.coord_first_sight.insert(target, (slot, bytes_per_s));
        }
    }

    /// Adds the coordinator's first-sight shares to the first-sight rules wanted now (name ->
    /// pattern, per-CPT rate): where the agent's own limits already hold a rule for the same
    /// pattern, the tighter rate; else a rule in the share's slot. A target this agent's
    /// `job_id_layout` cannot express as a pattern gets none (as for its own limits).
    fn add_coord_first_sight(&self, cpt_count: u32, want: &mut BTreeMap<String, (String, u64)>) {
        for (&target, &(slot, bytes_per_s)) in &self.coord_first_sight {
            let Some(pattern) = first_sight_pattern(target, self.config.job_id_layout) else {
                continue;
            };
            let rate = first_sight_rate_per_cpt(bytes_per_s, self.config.brw_size_bytes, cpt_count);
            match want.values_mut().find(|(p, _)| *p == pattern) {
                Some((_, r)) => *r = (*r).min(rate),
                None => {
                    want.insert(
                        coord_first_sight_rule_name(&self.config.rule_prefix, slot),
                        (pattern, rate),
                    );
                }
            }
        }
    }

    /// The controller's current rates per job (OSS-wide RPC/s).
    pub fn controller_rates(&self) -> BTreeMap<JobId, u64> {
        self.controller_rules.rates()
    }

    /// Takes the controller's writes for this OSS (the agent's one domain).
    fn absorb(&mut self, decision: &Decision) {
        for w in &decision.writes {
            match &w.write {
                // The agent runs the policy itself (tbf jobid, enabled once at start).
                ControlWrite::NrsPolicies(p) if p == TBF_JOBID => {}
                w if w.tbf_rule_text().is_some() => self.controller_rules.absorb([w]),
                other => warn!(write = ?other, "controller write the agent cannot carry; ignored"),
            }
        }
    }

    /// The rule listing's text (for [`ListedCpts::read`]); `None` when it could not be had.
    /// Rates are per CPU partition, and only TBF's rule listing shows how many partitions
    /// `ost_io` has. A dry run from another policy cannot read it (TBF is not started), so it
    /// plans with the configured `cpts` and says so; a real run that finds another count than
    /// the configured one says so too, since a dry run would then have planned other rates.
    fn warn_of_partition_count(&mut self, listed: u32) {
        if self.partition_count_warned {
            return;
        }
        if listed == 0 && !self.lctl.writes() {
            self.partition_count_warned = true;
            warn!(
                cpts = self.config.cpts,
                "dry run: TBF is not running, so no rule listing shows ost_io's CPU partition \
                 count; the rates printed are per partition for the configured cpts (the real \
                 run divides by the count the listing shows once TBF runs)"
            );
        } else if listed != 0 && listed != self.config.cpts {
            self.partition_count_warned = true;
            warn!(
                listed,
                cpts = self.config.cpts,
                "the rule listing shows another CPU partition count than the configured cpts; \
                 the listing's is used (set cpts to it so that --dry-run plans the same rates)"
            );
        }
    }

    fn rule_listing(&mut self) -> Option<String> {
        self.get(PARAM_TBF_RULE).ok()
    }

    /// Computes the rules wanted now and writes the difference.
    fn apply(
        &mut self,
        obs: &Observation,
        per_job: &BTreeMap<JobId, BrwTotals>,
        cpts: &ListedCpts,
    ) {
        let period_s = (obs.period_ns as f64 / 1e9).max(1e-3);
        // Mean RPC size: this period's where the job moved data, else what was known.
        for (job, t) in per_job {
            self.rpc_size.record(*job, t.bytes, t.rpcs);
        }
        self.rpc_size.bound(obs.jobs.iter().map(|m| m.job));
        let limits = if self.config.limits.is_empty() {
            BTreeMap::new()
        } else {
            limit_shares_bytes_per_s(
                &self.config.limits,
                self.config.job_id_layout,
                obs.jobs.iter().map(|m| m.job),
                |j| per_job.get(j).is_some_and(|t| t.rpcs > 0),
            )
        };
        // The OSS-wide rate each job should get (RPC/s), and the limit that set it, in job id
        // order: one merge of the controller's rates with the limits, no map per job.
        let want = merge_wanted(self.controller_rules.rates(), &limits, |job, limit| {
            self.rpc_size.rate_rpcs_per_s(job, limit as f64)
        });
        let cpt_count = match cpts.count {
            0 => self.config.cpts,
            n => n,
        };
        self.warn_of_partition_count(cpts.count);
        // Rules for the jobs that moved the most; the rest share the catch-all. Each wanted
        // job's bytes are found by one merge with `per_job` (both in job id order), and the
        // order is by bytes, then by index into `want`, which is job id order.
        let bytes_of = bytes_in_order(&want, per_job);
        let mut order: Vec<(u64, u32)> = (0..want.len() as u32)
            .map(|i| (bytes_of[i as usize], i))
            .collect();
        order.sort_unstable_by_key(|&(b, i)| (std::cmp::Reverse(b), i));
        // Per index into `want`: the rule rate wanted, and the job's report.
        let mut desired_at: Vec<Option<(u64, JobRateStat)>> = vec![None; want.len()];
        let mut overflow_min: Option<u64> = None;
        let mut held_now = BTreeMap::new();
        let now = obs.now_ns;
        // First-sight rules: each limited user's or group's share for a job not seen yet, in
        // RPC/s at the full RPC size (so its bytes stay within the share whatever its RPC
        // size), divided over every partition (a new job may get a class on each).
        let mut first_sight_want: BTreeMap<String, (String, u64)> = BTreeMap::new();
        if !self.config.limits.is_empty() {
            let shares = first_sight_shares_bytes_per_s(
                &self.config.limits,
                self.config.job_id_layout,
                obs.jobs.iter().map(|m| m.job),
                |j| per_job.get(j).is_some_and(|t| t.rpcs > 0),
            );
            for (target, pattern, share) in shares {
                let index = self
                    .config
                    .limits
                    .iter()
                    .position(|&(t, _)| t == target)
                    .expect("a share per configured limit");
                let per_cpt =
                    first_sight_rate_per_cpt(share, self.config.brw_size_bytes, cpt_count);
                first_sight_want.insert(
                    first_sight_rule_name(&self.config.rule_prefix, index),
                    (pattern, per_cpt),
                );
            }
        }
        self.add_coord_first_sight(cpt_count, &mut first_sight_want);
        // Jobs this OSS's job_stats have shown (built only when some job is beyond the cap).
        let mut seen_here: Option<BTreeSet<JobId>> = None;
        // The partitions of each rule are looked up only when the listing gave some.
        let cpts_by_rule = !cpts.by_rule.is_empty();
        // Rules given so far (of `rules_max`), and the jobs whose ids cannot be rules: they
        // share the catch-all like the jobs beyond the cap, so TBF syntax in a job id never
        // leaves the job in `default` at its 10,000 RPC/s.
        // The controller's own rule manager gives them one rate (its catch-all, `jobid={*}`,
        // read back as job `*`), which lands here like theirs. They are counted from the jobs
        // this OSS reports.
        let mut named = 0usize;
        let mut beyond_cap = 0usize;
        let unnamable = unnamable_jobs(obs);
        for (bytes, at) in order.into_iter() {
            let (job, rate, limit) = want[at as usize];
            let safe = job_id_is_rule_safe(&job);
            let k = cpts_by_rule
                .then(|| self.rules.rule_name(&job).and_then(|n| cpts.of_rule(n)))
                .flatten()
                .filter(|&k| k > 0)
                .unwrap_or(cpt_count)
                .max(1);
            let per_cpt =
                (rate / u64::from(k)).clamp(1, pfsqos_core::lustre::TBF_RATE_RPCS_PER_S_MAX as u64);
            let observed = bytes as f64 / period_s;
            if let Some(limit) = limit {
                if pfsqos_core::control::byte_limits::is_held(observed, limit) {
                    let since = self.stats.held.get(&job).map_or(now, |h| h.since_ns);
                    if !self.stats.held.contains_key(&job) {
                        info!(job = %job.as_str().escape_debug(), limit_bytes_per_s = limit, "job held at its limit");
                    }
                    held_now.insert(
                        job,
                        crate::agent::Held {
                            since_ns: since,
                            limit_bytes_per_s: limit,
                            held_ns: now - since,
                        },
                    );
                }
            }
            if safe && named < self.config.rules_max {
                named += 1;
                desired_at[at as usize] = Some((
                    per_cpt,
                    JobRateStat {
                        rate_per_cpt_rpcs_per_s: per_cpt,
                        cpts: k,
                        observed_bytes_per_s: observed,
                    },
                ));
            } else if !safe
                || seen_here
                    .get_or_insert_with(|| obs.jobs.iter().map(|m| m.job).collect())
                    .contains(&job)
            {
                beyond_cap += usize::from(safe);
                let r = (rate / u64::from(cpt_count.max(1))).max(1);
                // A first-sight rule ranks before the catch-all: a job it matches is held by
                // it, so that rule's rate, not the catch-all's, is lowered to the job's.
                match first_sight_want
                    .values_mut()
                    .find(|(p, _)| wildcard_match(p.as_bytes(), job.as_str().as_bytes()))
                {
                    Some((_, fs)) => *fs = (*fs).min(r),
                    None => overflow_min = Some(overflow_min.map_or(r, |m: u64| m.min(r))),
                }
            } else {
                // A rate for a job this OSS has never seen (a coordinator's share of a limit,
                // sent to every OSS so a job's first period here is limited): beyond the cap
                // it gets no rule, and must not lower the catch-all every other job shares.
            }
        }
        for (job, h) in &self.stats.held {
            if !held_now.contains_key(job) {
                info!(job = %job.as_str().escape_debug(), held_s = h.held_ns as f64 / 1e9, "job no longer held at its limit");
            }
        }
        self.stats.held = held_now;
        self.stats.jobs_in_catch_all = beyond_cap + unnamable.len();
        self.stats.jobs_unnamable = unnamable.len();
        self.log_unnamable(&unnamable);
        // In job id order, so the map is built in one pass and the rule diff is one merge.
        let mut desired: Vec<(JobId, JobRate)> = Vec::with_capacity(want.len());
        let mut job_rates: Vec<(JobId, JobRateStat)> = Vec::with_capacity(want.len());
        for (&(job, _, _), at) in want.iter().zip(desired_at) {
            if let Some((value, stat)) = at {
                desired.push((
                    job,
                    JobRate {
                        value,
                        priority: None,
                    },
                ));
                job_rates.push((job, stat));
            }
        }
        self.stats.job_rates = job_rates.into_iter().collect();
        // Stop the catch-all first if it goes, start or change it after the job rules.
        let mut texts: Vec<(String, Option<RuleCommand>)> = Vec::new();
        if overflow_min.is_none() && self.catch_all.is_some() {
            texts.push((format!("stop {}", self.catch_all_name), None));
        }
        for cmd in self.rules.reconcile_sorted(&desired) {
            texts.push((cmd.to_string(), Some(cmd)));
        }
        // First-sight rules after the jobs' own (which start at the head of the list) and
        // before the catch-all: ranked before it when it is held, else before `default`
        // (where a catch-all started later goes after them).
        let held_names: Vec<String> = self.first_sight.keys().cloned().collect();
        for name in held_names {
            if !first_sight_want.contains_key(&name) {
                texts.push((format!("stop {name}"), None));
                self.first_sight.remove(&name);
            }
        }
        for (name, (pattern, rate)) in &first_sight_want {
            match self.first_sight.get(name) {
                None => {
                    // Before the catch-all only if it is held and stays (a going catch-all
                    // is stopped before these writes).
                    let rank = match (self.catch_all, overflow_min) {
                        (Some(_), Some(_)) => self.catch_all_name.as_str(),
                        _ => "default",
                    };
                    texts.push((
                        format!("start {name} jobid={{{pattern}}} rate={rate} rank={rank}"),
                        None,
                    ));
                }
                Some((_, old)) if old != rate => {
                    texts.push((format!("change {name} rate={rate}"), None))
                }
                _ => {}
            }
        }
        self.first_sight = first_sight_want;
        match (overflow_min, self.catch_all) {
            (Some(r), None) => texts.push((
                format!(
                    "start {} jobid={{*}} rate={r} rank=default",
                    self.catch_all_name
                ),
                None,
            )),
            (Some(r), Some(old)) if r != old => {
                texts.push((format!("change {} rate={r}", self.catch_all_name), None))
            }
            _ => {}
        }
        self.catch_all = overflow_min;
        for (text, cmd) in texts {
            self.write_over_stale(&text, cmd.as_ref());
        }
        self.stats.rules_held =
            self.rules.len() + usize::from(self.catch_all.is_some()) + self.first_sight.len();
    }

    /// Names (escaped, a few) the jobs whose ids cannot be rules, at most once a minute.
    fn log_unnamable(&mut self, jobs: &[JobId]) {
        let Some(named) = self.unnamable_log.due(now_ns(self.epoch), jobs) else {
            return;
        };
        warn!(
            jobs = jobs.len(),
            first = %named,
            catch_all = %self.catch_all_name,
            "job ids with TBF syntax cannot have a rule of their own; limited by the catch-all"
        );
    }

    /// Writes one rule command: a start that finds the rule exists becomes a change; a refused
    /// write is not held, so the next period tries again.
    fn write_rule(&mut self, text: &str, cmd: Option<&RuleCommand>) {
        // A job's start refused because a rule that is not ours holds the name.
        let mut name_taken = false;
        let result = match self.set(PARAM_TBF_RULE, text) {
            Err(e) if e.errno() == Some(Errno::EEXIST) => {
                // A rule of this name exists. Ours (from a racing write, or one we believed
                // stopped: it matches the same job) has its rate changed instead; another's
                // (an administrator's `jvictim2`) is left alone and the job renamed once.
                let change = match cmd {
                    Some(RuleCommand::Start {
                        name, job, value, ..
                    }) => {
                        if self.listed_rule_matches(name, job) {
                            Some(format!("change {name} rate={value}"))
                        } else {
                            name_taken = true;
                            None
                        }
                    }
                    None => TbfCommand::parse(text).ok().and_then(|c| match c.op {
                        TbfOp::Start {
                            name,
                            rate_rpcs_per_s: Some(r),
                            ..
                        } => Some(format!("change {name} rate={r}")),
                        _ => None,
                    }),
                    _ => None,
                };
                match change {
                    Some(c) => self.set(PARAM_TBF_RULE, &c),
                    None => Err(e),
                }
            }
            r => r,
        };
        match result {
            Ok(()) => {
                self.ledger.note(&ControlWrite::tbf_rule(text.to_string()));
                match cmd {
                    Some(RuleCommand::Start { .. }) => self.stats.rules_started += 1,
                    Some(RuleCommand::Change { .. }) => self.stats.rules_changed += 1,
                    Some(RuleCommand::Stop { .. }) => self.stats.rules_stopped += 1,
                    None => {}
                }
            }
            Err(e) if name_taken => {
                self.stats.names_taken += 1;
                warn!(command = %text.escape_debug(), error = %e, "rule name held by another rule; the job is renamed");
                self.rules.name_taken(text);
            }
            Err(e) => {
                self.stats.writes_refused += 1;
                warn!(command = %text.escape_debug(), error = %e, "rule write failed");
                if cmd.is_some() {
                    self.rules.refused(text);
                } else {
                    self.forget_raw_write(text);
                }
            }
        }
    }

    /// Whether the server's rule `name` matches `job` alone (`jobid={job}`): a rule of ours
    /// whose start raced, not another's holding the name. Read only after an `EEXIST`.
    fn listed_rule_matches(&mut self, name: &str, job: &JobId) -> bool {
        let Ok(text) = self.get(PARAM_TBF_RULE) else {
            return false;
        };
        let Ok(listing) = TbfRuleListing::parse(&text) else {
            return false;
        };
        let sections = std::iter::once(&listing.regular).chain(listing.high_priority.as_ref());
        let mut found = sections
            .flatten()
            .flat_map(|c| c.rules.iter())
            .filter(|r| r.name == name)
            .peekable();
        found.peek().is_some()
            && found.all(|r| StaleMatch::of_condition(&r.conditions) == StaleMatch::Job(*job))
    }

    /// A refused write of the catch-all or a first-sight rule: a refused `start` leaves the
    /// rule not held, a refused `change` leaves its rate unknown; either is written again at
    /// the next period.
    fn forget_raw_write(&mut self, text: &str) {
        let Some(name) = raw_rule_name(text) else {
            return;
        };
        let start = text.starts_with("start ");
        if name == self.catch_all_name {
            if start {
                self.catch_all = None;
            }
        } else if start {
            self.first_sight.remove(name);
        } else if let Some(held) = self.first_sight.get_mut(name) {
            held.1 = 0;
        }
    }

    /// The first-sight rules held: name, pattern and per-CPT rate.
    pub fn first_sight_rules(&self) -> &BTreeMap<String, (String, u64)> {
        &self.first_sight
    }

    /// Clean exit: stops every rule of ours and restores the policy found.
    pub fn shutdown(&mut self) {
        self.sweep_stale_rules();
        for write in self.ledger.undo_writes() {
            let (param, text) = write.param_and_text();
            let param = format!("ost.OSS.ost_io.{param}");
            match self.set(&param, text) {
                Ok(()) => self.ledger.note(&write),
                Err(e) => {
                    warn!(param = %param, value = %text.escape_debug(), error = %e, "clean-up write failed")
                }
            }
        }
        self.catch_all = None;
        info!(rules_left = self.ledger.rules.len(), "agent stopped");
    }

    /// The ledger (what a clean exit undoes).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Partitions are counted once each, both below and above 128, and the list above is
    /// bounded.
    #[test]
    fn cpt_sets_count_each_partition_once_and_stay_bounded() {
        let mut set = CptSet::default();
        for cpt in [0, 5, 5, 127, 128, 128, 4000] {
            set.insert(cpt);
        }
        assert_eq!(set.len(), 5);
        for cpt in 200..(200 + 3 * CPT_SET_HIGH_MAX as u32) {
            set.insert(cpt);
        }
        assert_eq!(set.high.len(), CPT_SET_HIGH_MAX);
        assert_eq!(set.len(), 3 + CPT_SET_HIGH_MAX as u32);
    }

    proptest::proptest! {
        /// The merged wanted rates and the rates read from the controller's rules equal what
        /// the maps they replaced gave (a limit wins a tie; the lowest of a job's rules).
        #[test]
        fn wanted_rates_equal_the_map_construction(
            rates in proptest::collection::btree_map(0u8..24, 1u64..500, 0..16),
            limits in proptest::collection::btree_map(0u8..24, 1u64..5000, 0..16),
            rules in proptest::collection::vec((0u8..24, 0u8..24, 1u64..500), 0..20),
        ) {
            let job = |i: u8| JobId::new(&format!("job{i}")).unwrap();
            let rates: BTreeMap<JobId, u64> = rates.into_iter().map(|(i, r)| (job(i), r)).collect();
            let limits: BTreeMap<JobId, u64> =
                limits.into_iter().map(|(i, l)| (job(i), l)).collect();
            let limit_rpcs = |_: &JobId, limit: u64| limit / 7;
            let mut want: BTreeMap<JobId, (u64, Option<u64>)> = BTreeMap::new();
            for (&j, &rate) in &rates {
                want.insert(j, (rate, None));
            }
            for (j, &limit) in &limits {
                let r = limit_rpcs(j, limit);
                let e = want.entry(*j).or_insert((r, Some(limit)));
                if r <= e.0 {
                    *e = (r, Some(limit));
                }
            }
            let reference: Vec<(JobId, u64, Option<u64>)> =
                want.into_iter().map(|(j, (r, l))| (j, r, l)).collect();
            proptest::prop_assert_eq!(merge_wanted(rates, &limits, limit_rpcs), reference);

            let controller = ControllerRates {
                by_rule: rules
                    .iter()
                    .map(|&(name, j, rate)| (format!("r{name}"), (job(j), rate)))
                    .collect(),
            };
            let mut lowest: BTreeMap<JobId, u64> = BTreeMap::new();
            for &(j, rate) in controller.by_rule.values() {
                let e = lowest.entry(j).or_insert(rate);
                *e = (*e).min(rate);
            }
            proptest::prop_assert_eq!(controller.rates(), lowest);
        }
    }

    #[test]
    fn the_running_policy_is_read_from_nrs_policies() {
        let text = "\nregular_requests:\n  - name: fifo\n    state: started\n    fallback: yes\n  - name: tbf jobid\n    state: started\n    fallback: no\nhigh_priority_requests:\n  - name: fifo\n    state: started\n";
        assert_eq!(running_policy(text).as_deref(), Some("tbf jobid"));
        let fifo = "\nregular_requests:\n  - name: fifo\n    state: started\n  - name: tbf\n    state: stopped\n";
        assert_eq!(running_policy(fifo).as_deref(), Some("fifo"));
        assert_eq!(running_policy("garbage"), None);
    }

    use crate::lctl::{LctlCounts, LctlError};
    use pfsqos_core::jobstats::{render_job_stats, JobEntry, JobStatsFormat, OstCounter};

    /// An OSS in memory: job_stats from `rpcs` (job, RPCs so far, RPC size), a rule listing
    /// with 2 CPTs where the agent's rules have classes on the CPTs in `active`; records
    /// writes.
    struct Oss {
        jobs: Vec<(&'static str, u64, u64)>,
        active: BTreeMap<String, Vec<u32>>,
        rules: Vec<(String, u64)>,
        writes: Vec<String>,
        counts: LctlCounts,
        /// `stop` of these rules fails (lctl timing out).
        stuck: Vec<String>,
        /// job_stats printed without parameter names (as `lctl get_param -n` would).
        nameless: bool,
        /// An administrator's rules (name, conditions, rate): listed, and a start of one of
        /// their names is refused with `EEXIST` as Lustre refuses it.
        admin: Vec<(String, String, u64)>,
        /// Starts refused with `EEXIST`.
        eexist: u64,
    }

    impl Lctl for Oss {
        fn run(&mut self, args: &[String]) -> Result<String, LctlError> {
            self.counts.commands += 1;
            match (args[0].as_str(), args.last().map(String::as_str)) {
                ("get_param", Some(PARAM_POLICIES)) => {
                    Ok("\nregular_requests:\n  - name: tbf jobid\n    state: started\n".into())
                }
                ("get_param", Some(PARAM_JOB_STATS)) => {
                    let entries: Vec<JobEntry> = self
                        .jobs
                        .iter()
                        .map(|&(j, n, size)| {
                            let mut e = JobEntry::new(JobId::new(j).unwrap(), 1);
                            for _ in 0..n {
                                e.counters[OstCounter::WriteBytes as usize].add(size);
                            }
                            e
                        })
                        .collect();
                    let value = render_job_stats(&entries, JobStatsFormat::Master);
                    Ok(if self.nameless {
                        value
                    } else {
                        format!("obdfilter.fs-OST0000.job_stats=\n{value}")
                    })
                }
                ("get_param", Some(PARAM_TBF_RULE)) => {
                    let mut out = String::from("regular_requests:\n");
                    for cpt in 0..2u32 {
                        out.push_str(&format!("CPT {cpt}:\n"));
                        for (name, rate) in &self.rules {
                            let refs =
                                u32::from(self.active.get(name).is_some_and(|c| c.contains(&cpt)));
                            out.push_str(&format!("{name} jobid={{x}} {rate}, ref {refs}\n"));
                        }
                        for (name, conditions, rate) in &self.admin {
                            out.push_str(&format!("{name} {conditions} {rate}, ref 0\n"));
                        }
                        out.push_str("default * 10000, ref 0\n");
                    }
                    Ok(out)
                }
                ("set_param", Some(w)) => {
                    let text = w.split_once('=').unwrap().1.to_string();
                    if let Some(n) = text.strip_prefix("stop ") {
                        if self.stuck.iter().any(|s| s == n) {
                            return Err(LctlError::Timeout);
                        }
                    }
                    let mut words = text.split(' ');
                    match (words.next(), words.next()) {
                        (Some("start"), Some(n)) if self.admin.iter().any(|r| r.0 == n) => {
                            self.eexist += 1;
                            return Err(LctlError::Refused {
                                code: Some(17),
                                errno: Some(Errno::EEXIST),
                                stderr: format!("error: set_param: setting {w}: File exists"),
                            });
                        }
                        (Some("change"), Some(n)) if self.admin.iter().any(|r| r.0 == n) => {
                            let rate: u64 = text.split("rate=").nth(1).unwrap().parse().unwrap();
                            self.admin.iter_mut().find(|r| r.0 == n).unwrap().2 = rate;
                        }
                        (Some("start"), Some(n)) => {
                            let rate = text
                                .split("rate=")
                                .nth(1)
                                .unwrap()
                                .split(' ')
                                .next()
                                .unwrap();
                            self.rules.push((n.to_string(), rate.parse().unwrap()));
                        }
                        (Some("change"), Some(n)) => {
                            let rate: u64 = text.split("rate=").nth(1).unwrap().parse().unwrap();
                            self.rules.iter_mut().find(|r| r.0 == n).unwrap().1 = rate;
                        }
                        (Some("stop"), Some(n)) => self.rules.retain(|r| r.0 != n),
                        _ => {}
                    }
                    self.writes.push(text);
                    Ok(String::new())
                }
                _ => Ok(String::new()),
            }
        }
        fn counts(&self) -> LctlCounts {
            self.counts
        }
    }

    fn oss(jobs: Vec<(&'static str, u64, u64)>) -> Oss {
        Oss {
            jobs,
            active: BTreeMap::new(),
            rules: Vec::new(),
            writes: Vec::new(),
            counts: LctlCounts::default(),
            stuck: Vec::new(),
            nameless: false,
            admin: Vec::new(),
            eexist: 0,
        }
    }

    /// An administrator's rule holding the name the agent would give a job (`pfqvictim`, for
    /// another job) is never changed: the start refused with `EEXIST` renames the job once,
    /// and no period after writes that name again.
    #[test]
    fn a_name_held_by_an_administrators_rule_renames_the_job_once() {
        let config = AgentConfig::parse(
            "controller = \"adaptbf\"\nost_capacity_rpcs_per_s = 1000\ncpts = 1\n",
        )
        .unwrap();
        let mut a = Agent::new(config, oss(vec![("victim", 0, 4096), ("other", 0, 4096)]));
        a.start().unwrap();
        // Started after the agent's start: not one of ours left by an earlier instance.
        a.lctl.admin = vec![("pfqvictim".into(), "jobid={admin.1}".into(), 7)];
        for i in 1..=5u64 {
            a.lctl.jobs = vec![("victim", 100 * i, 4096), ("other", 100 * i, 4096)];
            a.period();
        }
        let writes = &a.lctl().writes;
        assert_eq!(
            a.lctl().admin[0].2,
            7,
            "the administrator's rule changed: {writes:?}"
        );
        assert!(rate_of(&a, "pfqvictim_2").is_some(), "{writes:?}");
        assert!(
            writes.iter().all(|w| !w.contains("pfqvictim ")),
            "{writes:?}"
        );
        assert_eq!(a.stats.names_taken, 1, "{:?}", a.stats);
        assert_eq!(
            a.lctl().eexist,
            1,
            "the taken name was tried again: {writes:?}"
        );
        assert_eq!(a.stats.writes_refused, 0, "{:?}", a.stats);
        a.shutdown();
    }

    /// A coordinator's rate for a job this OSS has never seen (its share of a limit, sent to
    /// every OSS so the job's first period here is limited) gets a rule within `rules_max`;
    /// beyond it, no rule, and the catch-all the other jobs share is not lowered by it.
    #[test]
    fn coordinator_rates_for_unseen_jobs_never_lower_the_catch_all() {
        for (rules_max, ghost_rule) in [(3usize, true), (2, false)] {
            let config = AgentConfig::parse(&format!(
                "controller = \"static\"\nost_capacity_rpcs_per_s = 1000\ncpts = 1\n\
                 rules_max = {rules_max}\n"
            ))
            .unwrap();
            let mut a = Agent::new(config, oss(vec![("a", 0, 4096), ("b", 0, 4096)]));
            a.start().unwrap();
            a.lctl.jobs = vec![("a", 50, 4096), ("b", 10, 4096)];
            let obs = a.observe().unwrap();
            let rates: BTreeMap<JobId, u64> = [("a", 100), ("b", 60), ("ghost", 6)]
                .into_iter()
                .map(|(j, r)| (JobId::new(j).unwrap(), r))
                .collect();
            a.set_coordinated(&rates);
            a.carry_out(&obs);
            // The listing shows 2 CPTs: every rate halved.
            assert_eq!(rate_of(&a, "pfqa"), Some(50));
            assert_eq!(rate_of(&a, "pfqb"), Some(30));
            assert_eq!(
                rate_of(&a, "pfqghost"),
                ghost_rule.then_some(3),
                "{rules_max}"
            );
            assert_eq!(
                rate_of(&a, "pfq_rest"),
                None,
                "no catch-all: {:?}",
                a.lctl().rules
            );
            assert_eq!(a.stats.jobs_in_catch_all, 0);
            a.shutdown();
            assert!(a.lctl().rules.is_empty());
        }
    }

    /// job_stats without parameter names (a wrapper adding `-n`) are refused and counted, the
    /// rules kept; never read as one target 0.
    #[test]
    fn nameless_job_stats_are_refused_and_counted() {
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 1000\ncpts = 1\n\
             [[jobs]]\nid = \"a\"\nnodes = 1\n",
        )
        .unwrap();
        let mut a = Agent::new(config, oss(vec![("a", 0, 4096)]));
        a.start().unwrap();
        a.period();
        let rules = a.lctl().rules.clone();
        let writes = a.lctl().writes.len();
        assert_eq!((a.stats.periods, a.stats.job_stats_nameless), (1, 0));
        a.lctl.nameless = true;
        a.lctl.jobs[0].1 = 50;
        assert!(a.observe().is_none());
        a.period();
        assert_eq!(a.stats.job_stats_nameless, 2);
        assert_eq!(a.stats.periods_skipped, 2);
        assert_eq!(a.stats.periods, 1, "no period decided on nameless text");
        assert_eq!(a.lctl().rules, rules, "rules kept");
        assert_eq!(a.lctl().writes.len(), writes);
        a.lctl.nameless = false;
        a.period();
        assert_eq!((a.stats.periods, a.stats.job_stats_nameless), (2, 2));
        a.shutdown();
        assert!(a.lctl().rules.is_empty());
    }

    /// A user's limit gets a first-sight rule (`*.<uid>`, before `default`) from the start:
    /// a job of that user is limited from its first RPC on this OSS, at the limit's share
    /// for one more job (full-size RPCs, over both partitions); the share follows the moving
    /// jobs, a group whose gid is not the last field gets none, and a clean exit stops it. A
    /// stale rule under a first-sight name but with another condition is replaced.
    #[test]
    fn user_limits_cover_jobs_not_seen_yet() {
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 100000\ncpts = 2\n\
             job_id_layout = \"%e.%g.%u\"\n\
             [[limits]]\ngroup = 20\nbytes_per_s = 104857600\n\
             [[limits]]\nuser = 500\nbytes_per_s = 104857600\n",
        )
        .unwrap();
        let mut a = Agent::new(config, oss(vec![("a.20.500", 0, 1 << 20)]));
        a.start().unwrap();
        // No job of the user yet: the whole limit, 25 full RPC/s, 12 per CPT. The group's
        // field is not the last: no pattern can pin it, no rule.
        assert_eq!(rate_of(&a, "pfq_f1"), Some(12), "{:?}", a.lctl().writes);
        assert_eq!(rate_of(&a, "pfq_f0"), None);
        assert!(a
            .lctl()
            .writes
            .contains(&"start pfq_f1 jobid={*.500} rate=12 rank=default".to_string()));
        // a.20.500 moves data: the next job of the user would be the second, half the limit.
        a.lctl.jobs[0].1 = 100;
        a.period();
        assert_eq!(rate_of(&a, "pfq_f1"), Some(6));
        assert_eq!(
            a.first_sight_rules()["pfq_f1"],
            ("*.500".to_string(), 6),
            "{:?}",
            a.lctl().writes
        );
        // Both jobs of the user move data: a third would share the limit three ways.
        a.lctl.jobs[0].1 = 200;
        a.lctl.jobs.push(("b.20.500", 100, 1 << 20));
        a.period();
        assert_eq!(rate_of(&a, "pfq_f1"), Some(4));
        a.shutdown();
        assert!(a.lctl().rules.is_empty(), "{:?}", a.lctl().rules);

        // An earlier instance's first-sight rule of the same pattern is adopted, not started.
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 100000\ncpts = 2\n\
             [[limits]]\nuser = 500\nbytes_per_s = 104857600\n",
        )
        .unwrap();
        assert_eq!(
            StaleMatch::of_condition("jobid={*.500}"),
            StaleMatch::Pattern(JobId::new("*.500").unwrap())
        );
        assert_eq!(StaleMatch::of_condition("jobid={*.5x}"), StaleMatch::Other);
        let mut lctl = oss(vec![]);
        lctl.rules.push(("pfq_f0".to_string(), 3));
        let mut a = Agent::new(config, lctl);
        // The test OSS lists every rule with `jobid={x}`: not the pattern, so it is stopped
        // and started afresh under its name.
        a.start().unwrap();
        assert_eq!(rate_of(&a, "pfq_f0"), Some(12));
        assert!(a.lctl().writes.contains(&"stop pfq_f0".to_string()));
        a.shutdown();
        assert!(a.lctl().rules.is_empty());
    }

    fn rate_of(a: &Agent<Oss>, name: &str) -> Option<u64> {
        a.lctl().rules.iter().find(|r| r.0 == name).map(|r| r.1)
    }

    /// A job limit in bytes/s becomes RPC/s at the job's observed RPC size (1 MiB), divided
    /// over the CPTs where its class is active: the sum over CPTs is the limit.
    #[test]
    fn byte_limits_become_rpc_rates_summed_over_cpts() {
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 100000\ncpts = 2\n\
             [[limits]]\njob = \"big.1\"\nbytes_per_s = 104857600\n",
        )
        .unwrap();
        let mut a = Agent::new(config, oss(vec![("big.1", 0, 1 << 20)]));
        a.start().unwrap();
        // Before any data: brw_size (4 MiB) RPCs, 25 RPC/s, over both CPTs.
        assert_eq!(rate_of(&a, "pfqbig_1"), Some(12));
        a.lctl.jobs[0].1 = 100;
        a.period();
        // 1 MiB RPCs seen (smoothed: 0.5 x 1 MiB the first time it is seen is the value itself).
        assert_eq!(rate_of(&a, "pfqbig_1"), Some(50), "{:?}", a.lctl().writes);
        // Its class is active on one CPT only: that CPT may carry the whole limit.
        a.lctl.active.insert("pfqbig_1".into(), vec![1]);
        a.lctl.jobs[0].1 = 200;
        a.period();
        assert_eq!(rate_of(&a, "pfqbig_1"), Some(100));
        assert_eq!(a.stats.job_rates[&JobId::new("big.1").unwrap()].cpts, 1);
        a.shutdown();
        assert!(a.lctl().rules.is_empty());
    }

    /// Beyond `rules_max`, the jobs that moved the least share one catch-all rule at the
    /// smallest of their rates, ranked just above `default`; it goes when no longer needed.
    #[test]
    fn jobs_beyond_the_cap_share_a_catch_all_rule() {
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 1000\ncpts = 1\nrules_max = 1\n\
             [[jobs]]\nid = \"a\"\nnodes = 1\n[[jobs]]\nid = \"b\"\nnodes = 3\n\
             [[jobs]]\nid = \"c\"\nnodes = 6\n",
        )
        .unwrap();
        let mut a = Agent::new(
            config,
            oss(vec![("a", 0, 4096), ("b", 0, 4096), ("c", 0, 4096)]),
        );
        a.start().unwrap();
        a.lctl.jobs = vec![("a", 0, 4096), ("b", 50, 4096), ("c", 1, 4096)];
        a.period();
        // b moved the most: its own rule (300 of 1000); a (100) and c (600) share the
        // smallest; the listing shows 2 CPTs, so every rate is halved.
        assert_eq!(rate_of(&a, "pfqb"), Some(150));
        assert_eq!(rate_of(&a, "pfq_rest"), Some(50));
        assert!(a.lctl().writes.iter().any(
            |w| w.starts_with("start pfq_rest jobid={*} rate=") && w.ends_with(" rank=default")
        ));
        assert_eq!(a.stats.jobs_in_catch_all, 2);
        a.shutdown();
        assert!(a.lctl().rules.is_empty(), "{:?}", a.lctl().rules);
    }

    /// Cancels the Slurm jobs it holds when dropped (the test's jobs never outlive it).
    struct SlurmJobs(Vec<String>);
    impl Drop for SlurmJobs {
        fn drop(&mut self) {
            for id in &self.0 {
                let _ = std::process::Command::new("scancel").arg(id).status();
            }
        }
    }

    /// The agent's shares follow a real Slurm's jobs: two jobs submitted with `sbatch
    /// --nodes=1 --priority=P` to a single-node slurmctld (scripts/setup-slurm.sh) are read
    /// back with squeue, and Static BW's rules split the OST by their Slurm priorities
    /// (`basis = "priority"`: 300 against 100, 3 to 1) or by Slurm's node counts (`basis =
    /// "nodes"`: 1 node each, 1 to 1), over the hand-typed `[[jobs]]` node counts (1 and 8)
    /// that the agent follows without `[slurm]`.
    #[test]
    fn slurm_jobs_set_the_shares() {
        if let Some(why) = pfsqos_testkit::slurm_unavailable() {
            pfsqos_testkit::skip("slurm_jobs_set_the_shares", &why);
            return;
        }
        let mut held = SlurmJobs(Vec::new());
        for priority in [300, 100] {
            let out = std::process::Command::new("sbatch")
                .args([
                    "--parsable",
                    "--nodes=1",
                    "--ntasks=1",
                    "--job-name=pfsqos-agent-test",
                    "--output=/dev/null",
                    &format!("--priority={priority}"),
                    "--wrap",
                    "sleep 600",
                ])
                .output()
                .expect("sbatch runs");
            assert!(
                out.status.success(),
                "sbatch: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let id = id.split(';').next().unwrap().to_string();
            assert!(id.bytes().all(|b| b.is_ascii_digit()), "job id {id:?}");
            held.0.push(id);
        }
        // Both running (polled, bounded).
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let answer = pfsqos_jobfacts::query_squeue(
                std::path::Path::new("squeue"),
                Duration::from_secs(10),
            )
            .expect("squeue answers");
            let running = held
                .0
                .iter()
                .filter(|id| answer.jobs.iter().any(|j| &j.job == *id))
                .count();
            if running == held.0.len() {
                let facts: Vec<_> = answer
                    .jobs
                    .iter()
                    .filter(|j| held.0.contains(&j.job))
                    .collect();
                assert!(facts.iter().all(|j| j.nodes == 1), "{facts:?}");
                assert_eq!(
                    facts.iter().map(|j| j.priority).max(),
                    Some(300),
                    "{facts:?}"
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "Slurm did not start both jobs: {answer:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let (hi, lo) = (held.0[0].clone(), held.0[1].clone());
        let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
        let (hi_s, lo_s) = (leak(&hi), leak(&lo));
        let rates = |slurm: &str| {
            let config = AgentConfig::parse(&format!(
                "controller = \"static\"\nost_capacity_rpcs_per_s = 1200\ncpts = 1\n{slurm}\n\
                 [[jobs]]\nid = \"{hi}\"\nnodes = 1\n[[jobs]]\nid = \"{lo}\"\nnodes = 8\n"
            ))
            .unwrap();
            let mut a = Agent::new(config, oss(vec![(hi_s, 5, 4096), (lo_s, 5, 4096)]));
            a.start().unwrap();
            a.period();
            let r = (
                rate_of(&a, &format!("pfq{hi}")).unwrap(),
                rate_of(&a, &format!("pfq{lo}")).unwrap(),
            );
            let jobs = a.stats.slurm_jobs;
            a.shutdown();
            (r, jobs)
        };
        let (by_priority, seen) = rates("[slurm]\nbasis = \"priority\"\nrefresh_ms = 100");
        assert!(seen >= 2, "squeue gave {seen} jobs");
        // 1200 RPC/s split 3 to 1, halved over the listing's 2 CPTs.
        assert_eq!(by_priority, (450, 150));
        let (by_nodes, _) = rates("[slurm]\nbasis = \"nodes\"");
        assert_eq!(by_nodes, (300, 300));
        let (typed, seen) = rates("");
        assert_eq!(seen, 0);
        // 1200 split 1 to 8 (133 and 1067), halved.
        assert_eq!(typed, (66, 533));
    }

    /// A job whose id holds TBF syntax gets no rule of its own but is limited by the
    /// catch-all at the policy's share (never left in `default`), counted, with the jobs
    /// beyond the cap; an ordinary job keeps its own rule.
    #[test]
    fn jobs_with_tbf_syntax_in_their_ids_share_the_catch_all() {
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 1000\ncpts = 1\n\
             [[jobs]]\nid = \"a b\"\nnodes = 1\n[[jobs]]\nid = \"victim\"\nnodes = 1\n\
             [[jobs]]\nid = \"dd.*\"\nnodes = 2\n",
        )
        .unwrap();
        let mut a = Agent::new(
            config,
            oss(vec![
                ("a b", 0, 4096),
                ("victim", 0, 4096),
                ("dd.*", 0, 4096),
            ]),
        );
        a.start().unwrap();
        a.lctl.jobs = vec![("a b", 90, 4096), ("victim", 10, 4096), ("dd.*", 50, 4096)];
        a.period();
        // Shares 250/250/500 halved over 2 CPTs; the two unnamable jobs share the smaller.
        assert_eq!(rate_of(&a, "pfqvictim"), Some(125), "{:?}", a.lctl().writes);
        assert_eq!(
            rate_of(&a, "pfq_rest"),
            Some(125),
            "{:?} {:?}",
            a.lctl().writes,
            a.stats
        );
        assert_eq!((a.stats.jobs_unnamable, a.stats.jobs_in_catch_all), (2, 2));
        assert!(
            a.lctl()
                .writes
                .iter()
                .all(|w| !w.contains("jobid={*}") || w.starts_with("start pfq_rest ")),
            "{:?}",
            a.lctl().writes
        );
        let text = crate::metrics::render(crate::metrics::AgentSample {
            stats: a.stats.clone(),
            ..Default::default()
        });
        assert!(text.contains("pfsqos_agent_jobs_unnamable 2"), "{text}");
        a.shutdown();
    }

    /// Without a typed capacity or a profile, each target's capacity is its observed peak
    /// times the headroom: Lustre's default rate until it serves, then the highest rate of
    /// any period (a quieter period does not lower it, a busier one raises it).
    #[test]
    fn capacity_without_a_profile_is_the_observed_peak() {
        let config = AgentConfig::parse("controller = \"adaptbf\"\ncpts = 1\n").unwrap();
        assert_eq!(
            config.capacity_source,
            crate::config::CapacitySource::ObservedPeak
        );
        let mut a = Agent::new(config, oss(vec![("a", 0, 4096), ("b", 0, 4096)]));
        a.start().unwrap();
        let obs = a.observe().unwrap();
        let target = |o: &Observation| o.domains[0].targets[0].capacity_rpcs_per_s;
        assert_eq!(
            target(&obs.observation),
            crate::config::PEAK_INITIAL_RPCS_PER_S
        );
        a.lctl.jobs = vec![("a", 300, 4096), ("b", 100, 4096)];
        let served = a.observe().unwrap().observation;
        assert_eq!(
            served.domains[0].targets[0]
                .jobs
                .iter()
                .map(|j| j.rpcs_served)
                .sum::<u64>(),
            400
        );
        // The estimator on periods of known length (the test's periods last microseconds).
        a.peak_rpcs_per_s.clear();
        let period = |o: &Observation, ns: u64, scale: u64| {
            let mut o = o.clone();
            o.period_ns = ns;
            for j in &mut o.domains[0].targets[0].jobs {
                j.rpcs_served = j.rpcs_served * scale / 4;
            }
            o
        };
        // 400 RPCs in 1 s: 500 RPC/s with the headroom.
        let mut o = period(&served, 1_000_000_000, 4);
        a.estimate_capacity(&mut o);
        assert_eq!(target(&o), 500);
        // 100 in 1 s: the peak holds.
        let mut o = period(&served, 1_000_000_000, 1);
        a.estimate_capacity(&mut o);
        assert_eq!(target(&o), 500);
        // 800 in 1 s: it grows to 1000.
        let mut o = period(&served, 1_000_000_000, 8);
        a.estimate_capacity(&mut o);
        assert_eq!(target(&o), 1000);
        assert_eq!(
            a.peak_capacities().values().copied().collect::<Vec<_>>(),
            [1000]
        );
        // A typed capacity is never estimated.
        let typed = AgentConfig::parse(
            "controller = \"adaptbf\"\ncpts = 1\nost_capacity_rpcs_per_s = 300\n",
        )
        .unwrap();
        let mut b = Agent::new(typed, oss(vec![]));
        let mut o = period(&served, 1_000_000_000, 8);
        o.domains[0].targets[0].capacity_rpcs_per_s = 300;
        b.estimate_capacity(&mut o);
        assert_eq!(target(&o), 300);
    }

    /// A job moving at least 90 % of its limit is reported held, for as long as it lasts.
    #[test]
    fn jobs_at_their_limit_are_reported_held() {
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 1000\n\
             [[limits]]\njob = \"h\"\nbytes_per_s = 4096\n",
        )
        .unwrap();
        let mut a = Agent::new(config, oss(vec![("h", 0, 4096)]));
        a.start().unwrap();
        // Far more than 4 KiB/s over any period this test can take.
        a.lctl.jobs[0].1 = 1_000_000;
        a.period();
        let h = a.stats.held[&JobId::new("h").unwrap()];
        assert_eq!(h.limit_bytes_per_s, 4096);
        let since = h.since_ns;
        a.lctl.jobs[0].1 = 2_000_000;
        a.period();
        assert_eq!(
            a.stats.held[&JobId::new("h").unwrap()].since_ns,
            since,
            "still held"
        );
        a.period();
        assert!(a.stats.held.is_empty(), "idle: no longer held");
    }

    /// A stale rule holding the name the agent wants for another job (the test OSS lists
    /// every rule on `jobid={x}`) that cannot be stopped: the start is not written over it,
    /// the job gets another name, and the stale rule is stopped once lctl lets it.
    #[test]
    fn a_stale_rule_that_cannot_be_stopped_keeps_its_name() {
        let config = AgentConfig::parse(
            "controller = \"static\"\nost_capacity_rpcs_per_s = 1000\ncpts = 1\n\
             [[jobs]]\nid = \"a\"\nnodes = 1\n",
        )
        .unwrap();
        let mut oss = oss(vec![("a", 0, 4096)]);
        oss.rules.push(("pfqa".into(), 7));
        oss.stuck.push("pfqa".into());
        let mut a = Agent::new(config, oss);
        a.start().unwrap();
        assert_eq!(
            rate_of(&a, "pfqa"),
            Some(7),
            "not changed: it is on another job"
        );
        assert!(
            !a.lctl().writes.iter().any(|w| w.starts_with("start pfqa ")),
            "{:?}",
            a.lctl().writes
        );
        a.period();
        // Named afresh; the stale rule is still tried.
        assert_eq!(rate_of(&a, "pfqa_2"), Some(500));
        assert_eq!(rate_of(&a, "pfqa"), Some(7));
        a.lctl.stuck.clear();
        a.period();
        assert_eq!(rate_of(&a, "pfqa"), None, "stopped once lctl works");
        assert_eq!(a.stats.stale_rules_removed, 1);
        assert_eq!(a.stats.rules_adopted, 0);
        a.shutdown();
        assert!(a.lctl().rules.is_empty(), "{:?}", a.lctl().rules);
    }

    #[test]
    fn jobid_rules_need_a_tbf_type_with_jobid() {
        for (p, ok) in [
            ("tbf", true),
            ("tbf jobid", true),
            ("tbf jobid+opcode", true),
            ("tbf nid", false),
            ("fifo", false),
            ("tbfjobid", false),
        ] {
            assert_eq!(policy_takes_jobid_rules(p), ok, "{p}");
        }
    }
}
