//! Controllers: the control plane. Every period a controller receives an [`Observation`] and
//! returns a [`Decision`]. Decisions are the same text an administrator writes with `lctl
//! set_param` (`nrs_policies` and `nrs_tbf_rule`), so one decision drives the simulator, the
//! live runtime and a real Lustre OSS alike.

pub mod adaptbf;
pub mod agent;
pub mod byte_limits;
pub mod crrn;
pub mod gift;
pub mod nobw;
pub mod pi;
pub mod rpc_size;
pub mod rules;
pub mod spec;
pub mod static_bw;
pub mod themis;
pub mod vpfs;

// Lustre's vocabulary and the schedulers, under the names the controllers use
// (`crate::model::JobId`, `crate::sched::tbf`).
use pfsqos_lustre::{errno, jobstats, limits, model, NS_PER_S};
use pfsqos_sched as sched;

use crate::model::{JobId, OstId};

pub use adaptbf::{AdapTbf, AdapTbfConfig, DemandSource};
pub use nobw::NoBw;
pub use static_bw::StaticBw;

/// A set of storage targets served by one request-scheduling instance set (Lustre: one OSS's
/// `ost_io` service; every rule written to it applies to all of its OSTs and CPU partitions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DomainId(pub u32);

/// What one job did on one target during the period (Lustre: a `job_stats` delta).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobTargetStats {
    pub job: JobId,
    /// RPCs that arrived at the target in the period (what the AdapTBF paper calls demand).
    pub rpcs_arrived: u64,
    /// RPCs whose service completed in the period (what Lustre's `job_stats` count).
    pub rpcs_served: u64,
    pub bytes_served: u64,
}

/// One storage target's view of the period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetObservation {
    pub ost: OstId,
    /// RPCs of this target waiting in the scheduler at the end of the period.
    pub queue_len_rpcs: u64,
    /// Requests at the target's device at the end of the period: in service or waiting for
    /// it (the block layer's dispatch queue, what `/sys/block/<dev>/stat` shows; PI control's
    /// sensor). Drivers without a device model report the requests in service.
    pub device_queue_rpcs: u64,
    /// Time requests spent at the device (submission to completion), summed over the requests
    /// completed since the target started, in ns: Linux's `time_in_queue` (field 11 of
    /// `/sys/block/<dev>/stat`, there in ms). It advances when a request completes, so two
    /// readings give the mean device queue between them, lagging by one service time (PI
    /// control derives its sensor this way).
    pub device_time_in_queue_ns: u64,
    /// RPC capacity of the target (its maximum token rate, `T_i` in AdapTBF).
    pub capacity_rpcs_per_s: u64,
    /// Jobs with any activity in the period, sorted by job id.
    pub jobs: Vec<JobTargetStats>,
}

/// One scheduling domain's view of the period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainObservation {
    pub domain: DomainId,
    pub targets: Vec<TargetObservation>,
}

impl DomainObservation {
    /// Sum of the targets' RPC capacities.
    pub fn capacity_rpcs_per_s(&self) -> u64 {
        self.targets.iter().map(|t| t.capacity_rpcs_per_s).sum()
    }
}

/// Largest proportional-share weight a job can be given.
pub const JOB_WEIGHT_MAX: u32 = 1_000_000;

/// The weight of a job nobody gave one: its node count (the priority basis every other design
/// uses), within `1..=JOB_WEIGHT_MAX`. The one rule for every driver.
pub fn default_job_weight(node_count: u32) -> u32 {
    node_count.clamp(1, JOB_WEIGHT_MAX)
}

/// What the scheduler knows about a job: the AdapTBF priority basis is its node count; the
/// proportional-share designs (vPFS) share by its weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobMeta {
    pub job: JobId,
    pub node_count: u32,
    /// Proportional-share weight, 1..=[`JOB_WEIGHT_MAX`]; drivers that have no weight for a
    /// job give its node count (the priority basis every other design uses).
    pub weight: u32,
}

/// A client node, by its index in the driver's list of clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u32);

/// Input of one controller step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// End of the observed period.
    pub now_ns: u64,
    pub period_ns: u64,
    pub domains: Vec<DomainObservation>,
    /// Every job known to the system (running or not), sorted by job id.
    pub jobs: Vec<JobMeta>,
    /// The client nodes a [`ClientWrite`] can address; empty when the driver cannot limit
    /// clients (a server-side agent sees no clients).
    pub clients: Vec<ClientId>,
}

/// One write an administrator would make with `lctl set_param` on a domain's OSS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlWrite {
    /// `ost.OSS.ost_io.nrs_policies=<text>`, e.g. `fifo` or `tbf jobid`: the head's own file.
    NrsPolicies(String),
    /// `ost.OSS.ost_io.<param>=<text>` for a parameter file a policy of the scheduler registry
    /// owns (`sched::policy::NrsPolicyDescriptor::params`: TBF's `nrs_tbf_rule`, built with
    /// [`ControlWrite::tbf_rule`], or a fair-queuing policy's weights). Written to the running
    /// policy; ENODEV if the owner is not running.
    NrsPolicyParam { param: String, text: String },
}

impl ControlWrite {
    /// The `ost.OSS.ost_io` parameter the write goes to and its text, as `lctl set_param`
    /// takes them.
    pub fn param_and_text(&self) -> (&str, &str) {
        match self {
            ControlWrite::NrsPolicies(t) => ("nrs_policies", t),
            ControlWrite::NrsPolicyParam { param, text } => (param, text),
        }
    }

    /// `ost.OSS.ost_io.nrs_tbf_rule=<text>` (e.g. `start j1 jobid={job1} rate=250`): a write to
    /// TBF's rule file, which the head routes to TBF as it routes any policy's file.
    pub fn tbf_rule(text: impl Into<String>) -> ControlWrite {
        ControlWrite::NrsPolicyParam {
            param: crate::sched::nrs::PARAM_TBF_RULE.to_string(),
            text: text.into(),
        }
    }

    /// The TBF command of a write to TBF's rule file, `None` for any other write.
    pub fn tbf_rule_text(&self) -> Option<&str> {
        match self {
            ControlWrite::NrsPolicyParam { param, text }
                if param == crate::sched::nrs::PARAM_TBF_RULE =>
            {
                Some(text)
            }
            _ => None,
        }
    }
}

/// A write addressed to one domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainWrite {
    pub domain: DomainId,
    pub write: ControlWrite,
}

/// A limit on what one client node sends, in bytes per second (`None`: unlimited): the
/// outgoing-bandwidth actuator of client-side control (the PI controller sets one with Linux
/// `tc` on every client).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientWrite {
    pub client: ClientId,
    pub limit_bytes_per_s: Option<u64>,
}

/// Output of one controller step, applied in order: server writes, then client limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub writes: Vec<DomainWrite>,
    pub client_writes: Vec<ClientWrite>,
}

impl Decision {
    /// A decision of server writes only.
    pub fn of_writes(writes: Vec<DomainWrite>) -> Decision {
        Decision {
            writes,
            client_writes: Vec::new(),
        }
    }
}

/// One value of a controller's internal state after a step, per target and job, so reports can
/// chart what the controller believed (AdapTBF's Fig. 7: demand and record over time).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSample {
    pub ost: OstId,
    pub job: JobId,
    /// What the value is, e.g. `demand_rpcs`, `tokens`, `record_tokens`.
    pub metric: &'static str,
    pub value: f64,
}

/// Most trace entries a run keeps (about 100 MB), so a long run with many jobs stays bounded.
pub const CONTROL_TRACE_LEN_MAX: usize = 2_000_000;

/// One [`TraceSample`] of a control step, at the step's time.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlTraceEntry {
    /// Time of the control step.
    pub time_ns: u64,
    pub sample: TraceSample,
}

/// A control-plane policy.
pub trait Controller {
    /// Short name used on the command line and in reports (`nobw`, `static`, ...).
    fn name(&self) -> &'static str;

    /// Writes to apply once before the run starts. `initial` lists every domain with its
    /// targets and capacities and every job; its per-job statistics are empty.
    fn setup(&mut self, initial: &Observation) -> Decision;

    /// Interval between [`Controller::decide`] calls; `None` for controllers that never adapt.
    fn period_ns(&self) -> Option<u64>;

    /// One control step.
    fn decide(&mut self, observation: &Observation) -> Decision;

    /// Internal state after the last [`Controller::decide`], for reports. Controllers without
    /// state worth charting return nothing.
    fn trace(&self) -> Vec<TraceSample> {
        Vec::new()
    }

    /// Coupon and regret accounting (GIFT); `None` for controllers without it.
    fn regret(&self) -> Option<gift::RegretSummary> {
        None
    }

    /// Allocation statistics of a GIFT-family allocator (the artifact's metric); `None` for
    /// controllers without them.
    fn allocation_stats(&self) -> Option<gift::AllocationStats> {
        None
    }

    /// The server refused `write` (with `errno`). A controller that keeps rules must not hold
    /// a refused rule as active: it would keep sending `change` to a rule that does not exist
    /// and rank later rules against it, so one refused write would stop control of other jobs.
    /// Controllers that keep no state about their writes ignore it.
    fn on_write_refused(&mut self, _write: &DomainWrite, _errno: crate::errno::Errno) {}

    /// Observations [`Controller::decide`] refused to decide on (GIFT's allocator refusing its
    /// input: an OST listed twice, too many applications, ...): nothing was written for them
    /// and the rules stayed as they were. Drivers put it in their metrics and logs, since a
    /// controller that refuses every observation otherwise looks like one that never throttles.
    fn rejected_observations(&self) -> u64 {
        0
    }

    /// Why the last refused observation was refused (`None`: none was).
    fn last_rejection(&self) -> Option<&str> {
        None
    }
}

/// The TBF rate (RPCs/s of `rpc_size_bytes`) that carries a bandwidth cap of `bytes_per_s`:
/// rounded down, so a rule never lets more through than the cap, but absorbing float noise (a
/// cap computed as 34.9999999 RPCs/s is 35), and within Lustre's `1..=999_999`. Every driver
/// and controller that turns bytes into rule rates uses this one rule (the GIFT adapter and the
/// Lustre agent's byte limits at each job's observed RPC size, [`rpc_size::RpcSizeEstimate`];
/// the fluid engine's caps, whose flows move `brw_size` pieces).
pub fn tbf_rate_rpcs_per_s(bytes_per_s: f64, rpc_size_bytes: u64) -> u64 {
    assert!(rpc_size_bytes > 0, "an RPC carries bytes");
    let rpcs = (bytes_per_s / rpc_size_bytes as f64 + 1e-6).floor();
    // NaN and negatives become 0, then the minimum rate 1.
    (rpcs.max(0.0) as u64).clamp(1, u64::from(crate::limits::TBF_RATE_RPCS_PER_S_MAX))
}

/// Longest TBF rule name Lustre accepts (`MAX_TBF_NAME` = 16 including the NUL).
pub const RULE_NAME_LEN_MAX: usize = crate::limits::TBF_NAME_LEN_MAX;

/// Maps a job id to a TBF rule name: Lustre allows 1-15 characters of `[A-Za-z0-9_]`, so other
/// characters become `_` and long ids keep their tail (where job numbers differ) behind a `j`
/// prefix. Different jobs can map to the same name; [`RuleNamer`] resolves that.
pub fn rule_name_for_job(job: &JobId) -> String {
    rule_name_with_prefix("j", job)
}

/// Longest rule-name prefix a [`RuleNamer`] takes: leaves room for a job's tail and a
/// collision suffix.
pub const RULE_NAME_PREFIX_LEN_MAX: usize = 8;

/// As [`rule_name_for_job`] with `prefix` instead of `j` (an agent marks its rules with its
/// own prefix, so it can tell them from an administrator's).
pub fn rule_name_with_prefix(prefix: &str, job: &JobId) -> String {
    assert!(
        rule_name_prefix_is_valid(prefix),
        "invalid rule-name prefix {prefix:?}"
    );
    let cleaned: String = job
        .as_str()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let body_max = RULE_NAME_LEN_MAX - prefix.len();
    let tail = if cleaned.len() > body_max {
        &cleaned[cleaned.len() - body_max..]
    } else {
        &cleaned[..]
    };
    format!("{prefix}{tail}")
}

/// Whether `prefix` can start rule names: 1..=[`RULE_NAME_PREFIX_LEN_MAX`] characters of
/// `[A-Za-z0-9_]`, and not a start of `default` (whose rule no one may touch).
pub fn rule_name_prefix_is_valid(prefix: &str) -> bool {
    (1..=RULE_NAME_PREFIX_LEN_MAX).contains(&prefix.len())
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !"default".starts_with(prefix)
}

/// Gives every job a distinct, valid TBF rule name, stable for the namer's lifetime. When two
/// jobs clean up to the same name, the later one gets a numeric suffix (`jdd_1_2`), so names
/// depend only on the order jobs are first seen, which is deterministic for every driver.
#[derive(Debug, Default, Clone)]
pub struct RuleNamer {
    by_job: std::collections::BTreeMap<JobId, String>,
    used: std::collections::BTreeSet<String>,
    /// `None`: `j`.
    prefix: Option<String>,
    /// Names rules on the server hold that this namer did not give (never given meanwhile).
    foreign: std::collections::BTreeSet<String>,
}

impl RuleNamer {
    pub fn new() -> Self {
        Self::default()
    }

    /// A namer whose names all start with `prefix` (checked by
    /// [`rule_name_prefix_is_valid`]; panics otherwise).
    pub fn with_prefix(prefix: &str) -> Self {
        assert!(
            rule_name_prefix_is_valid(prefix),
            "invalid rule-name prefix {prefix:?}"
        );
        RuleNamer {
            prefix: Some(prefix.to_string()),
            ..Self::default()
        }
    }

    /// The rule name of `job`, assigning one on first use.
    pub fn name_for(&mut self, job: &JobId) -> &str {
        if !self.by_job.contains_key(job) {
            let base = rule_name_with_prefix(self.prefix.as_deref().unwrap_or("j"), job);
            let mut name = base.clone();
            let mut k = 2u32;
            // `default` is Lustre's fallback rule and cannot be started.
            while self.used.contains(&name) || self.foreign.contains(&name) || name == "default" {
                let suffix = format!("_{k}");
                let keep = base.len().min(RULE_NAME_LEN_MAX - suffix.len());
                name = format!("{}{suffix}", &base[..keep]);
                k += 1;
            }
            self.used.insert(name.clone());
            self.by_job.insert(*job, name);
        }
        &self.by_job[job]
    }

    /// Keeps `name` from ever being given to a job (an agent's own catch-all rule).
    pub fn reserve(&mut self, name: &str) {
        self.used.insert(name.to_string());
    }

    /// Replaces the names held on the server by others ([`Self::name_for`] avoids them).
    pub fn set_foreign(&mut self, names: std::collections::BTreeSet<String>) {
        self.foreign = names;
    }

    /// Adds one such name, keeping at most `max`.
    pub fn add_foreign(&mut self, name: &str, max: usize) {
        if self.foreign.len() < max {
            self.foreign.insert(name.to_string());
        }
    }

    /// Forgets `job` so its name can be reused (for controllers that retire idle jobs).
    pub fn release(&mut self, job: &JobId) {
        if let Some(name) = self.by_job.remove(job) {
            self.used.remove(&name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tbf_rates_round_down_absorb_noise_and_stay_in_range() {
        let m = 1u64 << 20;
        assert_eq!(tbf_rate_rpcs_per_s(35.0 * m as f64, m), 35);
        assert_eq!(tbf_rate_rpcs_per_s(34.999_999_9 * m as f64, m), 35);
        assert_eq!(tbf_rate_rpcs_per_s(35.9 * m as f64, m), 35);
        assert_eq!(tbf_rate_rpcs_per_s(0.2 * m as f64, m), 1);
        assert_eq!(tbf_rate_rpcs_per_s(f64::NAN, m), 1);
        assert_eq!(tbf_rate_rpcs_per_s(1e18, 1), 999_999);
    }

    #[test]
    fn namer_keeps_names_distinct_and_stable() {
        let mut namer = RuleNamer::new();
        let a = JobId::new("dd.1").unwrap();
        let b = JobId::new("dd_1").unwrap();
        let c = JobId::new("dd:1").unwrap();
        assert_eq!(namer.name_for(&a), "jdd_1");
        assert_eq!(namer.name_for(&b), "jdd_1_2");
        assert_eq!(namer.name_for(&c), "jdd_1_3");
        assert_eq!(namer.name_for(&a), "jdd_1");
        let long1 = JobId::new("x12345678901234567890").unwrap();
        let long2 = JobId::new("y12345678901234567890").unwrap();
        let n1 = namer.name_for(&long1).to_string();
        let n2 = namer.name_for(&long2).to_string();
        assert_ne!(n1, n2);
        assert!(n2.len() <= RULE_NAME_LEN_MAX, "{n2}");
        namer.release(&a);
        assert_eq!(namer.name_for(&JobId::new("dd-1").unwrap()), "jdd_1");
    }

    #[test]
    fn rule_names_are_valid_lustre_names() {
        for id in [
            "job1",
            "dd.500",
            "4151234",
            "ior.1001:n01",
            "",
            "a-very-long-job-name-12345",
        ] {
            let name = rule_name_for_job(&JobId::new(id).unwrap());
            assert!(!name.is_empty() && name.len() <= 15, "{name}");
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}"
            );
        }
        assert_eq!(rule_name_for_job(&JobId::new("dd.500").unwrap()), "jdd_500");
        assert_eq!(
            rule_name_for_job(&JobId::new("a-very-long-job-name-12345").unwrap()),
            "jjob_name_12345"
        );
    }
}
