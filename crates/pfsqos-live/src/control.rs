//! The control loop of `pfsqos ossd --policy SPEC`: runs one of `pfsqos_core`'s controllers
//! against the live daemon.
//!
//! ```text
//!  control thread, every period:
//!   per OST: arrivals (counted at enqueue), job_stats totals (-> deltas), queue length
//!     -> Observation (one domain: this OSS and its OSTs) -> Controller::decide
//!     -> each ControlWrite through Shared::set_params, the path of `lctl set_param`
//! ```
//!
//! The policy logic is entirely in `pfsqos_core::control`; controllers are built from a spec by
//! `pfsqos_core::control::spec::PolicyChoice`, the same names and options the simulator takes. This module
//! only measures and applies.
//!
//! Observation semantics follow the simulator's: per target and period, `rpcs_arrived` counts
//! RPCs that entered an NRS head, `rpcs_served`/`bytes_served` are job_stats deltas (one bytes
//! sample per read or write RPC, one sample per punch or sync), jobs sorted by id and listed
//! only when they did something; `queue_len_rpcs` is the target's queue when the period ends.
//! `period_ns` is the wall time actually elapsed since the previous observation (the thread
//! may wake late), so counts divided by it are true rates.
//!
//! Clean exit: when stopped, the loop stops every TBF rule its controller started and still
//! holds, then writes `nrs_policies=fifo` if the controller ever changed the policy.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use pfsqos_core::control::spec::{PolicyChoice, PERIOD_MS_MAX};
use pfsqos_core::control::{
    ControlWrite, Decision, DomainId, DomainObservation, DomainWrite, JobMeta, JobTargetStats,
    Observation, TargetObservation,
};
use pfsqos_core::model::{JobId, OstId};
use pfsqos_core::sched::tbf::{TbfCommand, TbfOp};
use tracing::{info, warn};

use crate::ossd::{Shared, PARAM_POLICIES, PARAM_TBF_RULE};
use crate::protocol::{Errno, RemoteError, IO_LEN_MAX_BYTES};

/// The one scheduling domain an ossd is: its `ost_io` service over all of its OSTs.
pub const OSS_DOMAIN: DomainId = DomainId(0);

/// Default control period for policies whose spec sets none (the simulator's default).
pub const PERIOD_MS_DEFAULT: u64 = 100;

/// Lustre's default `brw_size` (4 MiB): the size of one TBF token when capacity comes from a
/// byte ceiling.
pub const BRW_SIZE_BYTES_DEFAULT: u64 = 4 << 20;

/// Most jobs the controller is told about; beyond it the longest-idle jobs not given on the
/// command line are forgotten.
pub const KNOWN_JOBS_MAX: usize = 16384;

/// Most `--job-nodes` entries.
pub const JOB_NODES_MAX: usize = 4096;

/// Largest node count of one job.
pub const NODE_COUNT_MAX: u32 = 1_000_000;

/// Largest capacity accepted, RPCs per second per OST.
pub const CAPACITY_RPCS_PER_S_MAX: u64 = 1 << 32;

/// What the ossd's control loop runs.
#[derive(Clone, Debug)]
pub struct ControlConfig {
    pub policy: PolicyChoice,
    /// Period for policies whose spec sets no `period_ms` (AdapTBF); GIFT and its baselines
    /// keep their own 10 s unless the spec says otherwise.
    pub period_ms: u64,
    /// RPC capacity of each OST. `None`: the ossd's `ceiling_bytes_per_s / brw_size_bytes`.
    pub capacity_rpcs_per_s: Option<u64>,
    /// Size of one RPC at full size (one TBF token), for capacities from a byte ceiling and
    /// for GIFT's byte-to-token conversion.
    pub brw_size_bytes: u64,
    /// Node counts of jobs known before they send anything; other jobs count as one node.
    pub job_nodes: Vec<(JobId, u32)>,
    /// Seed of randomized policies (RND).
    pub seed: u64,
}

impl ControlConfig {
    /// A configuration running `spec` (as `pfsqos sim --policy` takes it) with defaults.
    pub fn new(spec: &str) -> Result<ControlConfig, String> {
        Ok(ControlConfig {
            policy: PolicyChoice::parse(spec)?,
            period_ms: PERIOD_MS_DEFAULT,
            capacity_rpcs_per_s: None,
            brw_size_bytes: BRW_SIZE_BYTES_DEFAULT,
            job_nodes: Vec::new(),
            seed: 0,
        })
    }

    /// Checks the limits and returns the per-OST capacity to report.
    pub(crate) fn capacity(&self, ceiling_bytes_per_s: Option<u64>) -> anyhow::Result<u64> {
        if !(1..=PERIOD_MS_MAX).contains(&self.period_ms) {
            bail!("the control period must be 1..={} ms", PERIOD_MS_MAX);
        }
        if !(4096..=IO_LEN_MAX_BYTES).contains(&self.brw_size_bytes) {
            bail!("brw_size must be 4096..={IO_LEN_MAX_BYTES} bytes");
        }
        if self.job_nodes.len() > JOB_NODES_MAX {
            bail!("at most {JOB_NODES_MAX} --job-nodes entries");
        }
        let mut seen = BTreeSet::new();
        for (job, nodes) in &self.job_nodes {
            if job.is_empty() || !seen.insert(*job) {
                bail!("job `{job}` is empty or given twice in --job-nodes");
            }
            if !(1..=NODE_COUNT_MAX).contains(nodes) {
                bail!("job `{job}`: node count must be 1..={NODE_COUNT_MAX}");
            }
        }
        let capacity = match (self.capacity_rpcs_per_s, ceiling_bytes_per_s) {
            (Some(c), _) => c,
            (None, Some(ceiling)) => ceiling / self.brw_size_bytes,
            (None, None) => bail!(
                "a controller needs the OSTs' capacity: give --capacity-rpcs-per-s or \
                 --ceiling-bytes-per-s"
            ),
        };
        if !(1..=CAPACITY_RPCS_PER_S_MAX).contains(&capacity) {
            bail!(
                "OST capacity of {capacity} RPCs/s is outside 1..={CAPACITY_RPCS_PER_S_MAX} \
                 (a ceiling below one brw_size per second gives 0)"
            );
        }
        Ok(capacity)
    }
}

/// Parses `JOB=N` as `--job-nodes` takes it.
pub fn parse_job_nodes(text: &str) -> Result<(JobId, u32), String> {
    let (job, nodes) = text
        .rsplit_once('=')
        .ok_or_else(|| format!("`{text}` is not JOB=NODES"))?;
    let job = JobId::new(job).map_err(|e| format!("job `{job}`: {e}"))?;
    let nodes = nodes
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=NODE_COUNT_MAX).contains(n))
        .ok_or_else(|| format!("`{nodes}` is not a node count in 1..={NODE_COUNT_MAX}"))?;
    Ok((job, nodes))
}

/// What the control loop changed, so a clean exit can undo it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Ledger {
    /// Rules the controller started and has not stopped.
    pub rules: BTreeSet<String>,
    /// The controller wrote `nrs_policies` at least once.
    pub policies_changed: bool,
}

impl Ledger {
    fn note(&mut self, write: &ControlWrite) {
        match write {
            ControlWrite::NrsPolicies(_) => self.policies_changed = true,
            ControlWrite::NrsTbfRule(text) => match TbfCommand::parse(text).map(|c| c.op) {
                Ok(TbfOp::Start { name, .. }) => {
                    self.rules.insert(name);
                }
                Ok(TbfOp::Stop { name }) => {
                    self.rules.remove(&name);
                }
                _ => {}
            },
        }
    }
}

/// Applies one controller write through the path of `lctl set_param`, so it gets the same
/// checks and errors, and records what it changed.
pub(crate) fn apply_write(
    shared: &Shared,
    write: &DomainWrite,
    ledger: &mut Ledger,
) -> Result<(), RemoteError> {
    if write.domain != OSS_DOMAIN {
        return Err(RemoteError::new(
            Errno::ENODEV,
            format!(
                "no domain {}: an ossd is domain {}",
                write.domain.0, OSS_DOMAIN.0
            ),
        ));
    }
    let (param, text) = match &write.write {
        ControlWrite::NrsPolicies(t) => (PARAM_POLICIES, t),
        ControlWrite::NrsTbfRule(t) => (PARAM_TBF_RULE, t),
    };
    shared.set_params(param, text)?;
    ledger.note(&write.write);
    Ok(())
}

fn apply_decision(shared: &Shared, decision: Decision, ledger: &mut Ledger) {
    for w in decision.writes {
        if let Err(e) = apply_write(shared, &w, ledger) {
            warn!(domain = w.domain.0, write = ?w.write, error = %e, "controller write refused");
        }
    }
}

/// Undoes what the ledger holds: rules first (they need TBF running), then the policy.
fn clean_up(shared: &Shared, ledger: &mut Ledger) {
    let rules: Vec<String> = ledger.rules.iter().cloned().collect();
    let mut writes: Vec<ControlWrite> = rules
        .into_iter()
        .map(|name| ControlWrite::NrsTbfRule(format!("stop {name}")))
        .collect();
    if ledger.policies_changed {
        writes.push(ControlWrite::NrsPolicies("fifo".to_string()));
    }
    for write in writes {
        let w = DomainWrite {
            domain: OSS_DOMAIN,
            write,
        };
        if let Err(e) = apply_write(shared, &w, ledger) {
            warn!(write = ?w.write, error = %e, "could not undo a controller write");
        }
    }
}

/// One OST's raw counters at the end of a period.
#[derive(Debug, Default, Clone)]
pub(crate) struct OstSample {
    /// RPCs that arrived during the period, per job.
    pub arrived: BTreeMap<JobId, u64>,
    /// job_stats totals (RPCs, bytes) per job.
    pub served_totals: BTreeMap<JobId, (u64, u64)>,
    pub queued_rpcs: u64,
}

#[derive(Debug, Clone, Copy)]
struct KnownJob {
    node_count: u32,
    /// From `--job-nodes`: never forgotten.
    pinned: bool,
    last_seen_period: u64,
}

/// Turns counter samples into Observations: keeps the previous job_stats totals to take
/// deltas and the jobs seen so far.
#[derive(Debug)]
pub(crate) struct Observer {
    capacity_rpcs_per_s: u64,
    served_prev: Vec<BTreeMap<JobId, (u64, u64)>>,
    known: BTreeMap<JobId, KnownJob>,
    period: u64,
    last_ns: u64,
}

impl Observer {
    pub fn new(
        ost_count: usize,
        capacity_rpcs_per_s: u64,
        job_nodes: &[(JobId, u32)],
        now_ns: u64,
    ) -> Observer {
        Observer {
            capacity_rpcs_per_s,
            served_prev: vec![BTreeMap::new(); ost_count],
            known: job_nodes
                .iter()
                .map(|&(job, node_count)| {
                    let k = KnownJob {
                        node_count,
                        pinned: true,
                        last_seen_period: 0,
                    };
                    (job, k)
                })
                .collect(),
            period: 0,
            last_ns: now_ns,
        }
    }

    /// The observation of the period ending at `now_ns`.
    pub fn observe(&mut self, now_ns: u64, samples: Vec<OstSample>) -> Observation {
        self.period += 1;
        let mut targets = Vec::with_capacity(samples.len());
        for (ost, sample) in samples.into_iter().enumerate() {
            let prev = &self.served_prev[ost];
            let mut per_job: BTreeMap<JobId, JobTargetStats> = BTreeMap::new();
            let entry = |job: JobId| JobTargetStats {
                job,
                rpcs_arrived: 0,
                rpcs_served: 0,
                bytes_served: 0,
            };
            for (&job, &(rpcs, bytes)) in &sample.served_totals {
                let (rpcs0, bytes0) = prev.get(&job).copied().unwrap_or((0, 0));
                // Totals that went down were cleared (`job_stats=clear`, expiry) and counted
                // again from zero.
                let (d_rpcs, d_bytes) = if rpcs < rpcs0 || bytes < bytes0 {
                    (rpcs, bytes)
                } else {
                    (rpcs - rpcs0, bytes - bytes0)
                };
                if d_rpcs > 0 || d_bytes > 0 {
                    let s = per_job.entry(job).or_insert_with(|| entry(job));
                    s.rpcs_served = d_rpcs;
                    s.bytes_served = d_bytes;
                }
            }
            for (&job, &n) in &sample.arrived {
                if n > 0 {
                    per_job
                        .entry(job)
                        .or_insert_with(|| entry(job))
                        .rpcs_arrived = n;
                }
            }
            self.served_prev[ost] = sample.served_totals;
            for &job in per_job.keys() {
                self.known
                    .entry(job)
                    .or_insert(KnownJob {
                        node_count: 1,
                        pinned: false,
                        last_seen_period: 0,
                    })
                    .last_seen_period = self.period;
            }
            targets.push(TargetObservation {
                ost: OstId(ost as u32),
                queue_len_rpcs: sample.queued_rpcs,
                capacity_rpcs_per_s: self.capacity_rpcs_per_s,
                jobs: per_job.into_values().collect(),
            });
        }
        self.forget_idle_jobs();
        let period_ns = now_ns.saturating_sub(self.last_ns);
        self.last_ns = now_ns;
        Observation {
            now_ns,
            period_ns,
            domains: vec![DomainObservation {
                domain: OSS_DOMAIN,
                targets,
            }],
            jobs: self
                .known
                .iter()
                .map(|(&job, k)| JobMeta {
                    job,
                    node_count: k.node_count,
                })
                .collect(),
        }
    }

    /// The setup observation: takes the counters as the baseline of the first period and
    /// reports no activity.
    pub fn initial(&mut self, now_ns: u64, samples: Vec<OstSample>) -> Observation {
        let baseline = samples
            .into_iter()
            .enumerate()
            .map(|(ost, s)| {
                self.served_prev[ost] = s.served_totals.clone();
                OstSample {
                    arrived: BTreeMap::new(),
                    served_totals: s.served_totals,
                    queued_rpcs: s.queued_rpcs,
                }
            })
            .collect();
        self.observe(now_ns, baseline)
    }

    fn forget_idle_jobs(&mut self) {
        let excess = self.known.len().saturating_sub(KNOWN_JOBS_MAX);
        if excess == 0 {
            return;
        }
        let mut idle: Vec<(u64, JobId)> = self
            .known
            .iter()
            .filter(|(_, k)| !k.pinned)
            .map(|(&job, k)| (k.last_seen_period, job))
            .collect();
        idle.sort_unstable();
        for (_, job) in idle.into_iter().take(excess) {
            self.known.remove(&job);
        }
    }
}

fn sample(shared: &Shared) -> Vec<OstSample> {
    shared
        .osts
        .iter()
        .map(|ost| OstSample {
            arrived: ost.take_arrivals(),
            served_totals: ost.served_totals(),
            queued_rpcs: ost.queued_rpcs(),
        })
        .collect()
}

/// A running control loop.
pub(crate) struct ControlHandle {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl ControlHandle {
    /// Starts the loop: `setup` at once, then `decide` every period.
    pub fn spawn(
        shared: Arc<Shared>,
        config: &ControlConfig,
        capacity_rpcs_per_s: u64,
    ) -> anyhow::Result<ControlHandle> {
        let config = config.clone();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ossd-control".to_string())
            .spawn(move || {
                // Built here: controllers need not be `Send`.
                let mut controller = config.policy.controller_with(
                    config.period_ms,
                    config.brw_size_bytes,
                    config.seed,
                );
                // Marks the set_param log lines of the controller's writes.
                let _span = tracing::info_span!("control", policy = controller.name()).entered();
                let mut ledger = Ledger::default();
                let mut observer = Observer::new(
                    shared.osts.len(),
                    capacity_rpcs_per_s,
                    &config.job_nodes,
                    shared.now_ns(),
                );
                let initial = observer.initial(shared.now_ns(), sample(&shared));
                info!(
                    policy = controller.name(),
                    capacity_rpcs_per_s, "controller started"
                );
                apply_decision(&shared, controller.setup(&initial), &mut ledger);
                match controller.period_ns() {
                    None => {
                        let _ = stopped.recv();
                    }
                    Some(period_ns) => {
                        let period = Duration::from_nanos(period_ns.max(1));
                        let mut next = Instant::now() + period;
                        loop {
                            let wait = next.saturating_duration_since(Instant::now());
                            match stopped.recv_timeout(wait) {
                                Err(RecvTimeoutError::Timeout) => {}
                                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                            }
                            let obs = observer.observe(shared.now_ns(), sample(&shared));
                            apply_decision(&shared, controller.decide(&obs), &mut ledger);
                            // Keep to the period's grid; after an overrun, start afresh.
                            next += period;
                            let now = Instant::now();
                            if next < now {
                                next = now + period;
                            }
                        }
                    }
                }
                clean_up(&shared, &mut ledger);
                info!(policy = controller.name(), "controller stopped");
            })
            .context("spawning the control thread")?;
        Ok(ControlHandle { stop, thread })
    }

    /// Stops the loop and waits until it has undone its writes.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    fn sample_of(arrived: &[(&str, u64)], served: &[(&str, u64, u64)], queued: u64) -> OstSample {
        OstSample {
            arrived: arrived.iter().map(|&(j, n)| (job(j), n)).collect(),
            served_totals: served.iter().map(|&(j, r, b)| (job(j), (r, b))).collect(),
            queued_rpcs: queued,
        }
    }

    #[test]
    fn observations_carry_deltas_and_known_jobs() {
        let mut o = Observer::new(2, 500, &[(job("b"), 3)], 1_000);
        let init = o.initial(
            2_000,
            vec![
                sample_of(&[("a", 9)], &[("a", 10, 100)], 0),
                sample_of(&[], &[], 0),
            ],
        );
        assert!(init.domains[0].targets.iter().all(|t| t.jobs.is_empty()));
        assert_eq!(
            init.jobs.len(),
            1,
            "only --job-nodes jobs are known at setup"
        );
        assert_eq!(init.domains[0].capacity_rpcs_per_s(), 1000);

        let obs = o.observe(
            5_000,
            vec![
                sample_of(&[("a", 4), ("c", 2)], &[("a", 13, 160)], 7),
                sample_of(&[], &[("b", 2, 20)], 0),
            ],
        );
        assert_eq!(obs.period_ns, 3_000);
        let t0 = &obs.domains[0].targets[0];
        assert_eq!(t0.queue_len_rpcs, 7);
        let jobs: Vec<_> = t0
            .jobs
            .iter()
            .map(|s| {
                (
                    s.job.as_str(),
                    s.rpcs_arrived,
                    s.rpcs_served,
                    s.bytes_served,
                )
            })
            .collect();
        assert_eq!(jobs, vec![("a", 4, 3, 60), ("c", 2, 0, 0)]);
        assert_eq!(obs.domains[0].targets[1].jobs[0].rpcs_served, 2);
        let known: Vec<_> = obs
            .jobs
            .iter()
            .map(|j| (j.job.as_str(), j.node_count))
            .collect();
        assert_eq!(known, vec![("a", 1), ("b", 3), ("c", 1)]);

        // `a` was cleared and served 2 since: its new total is the delta.
        let obs = o.observe(
            6_000,
            vec![
                sample_of(&[], &[("a", 2, 8)], 0),
                sample_of(&[], &[("b", 2, 20)], 0),
            ],
        );
        let t0 = &obs.domains[0].targets[0];
        assert_eq!((t0.jobs[0].rpcs_served, t0.jobs[0].bytes_served), (2, 8));
        assert!(
            obs.domains[0].targets[1].jobs.is_empty(),
            "no change, no entry"
        );
    }

    proptest::proptest! {
        /// While job_stats only grow, the served deltas of all periods add up to the totals
        /// reached, and every listed job did something.
        #[test]
        fn served_deltas_add_up_to_the_totals(
            steps in proptest::collection::vec(
                proptest::collection::vec((0u64..5, 0u64..5000), 3), 1..20)
        ) {
            let jobs = [job("a"), job("b"), job("c")];
            let mut o = Observer::new(1, 100, &[], 0);
            o.initial(0, vec![OstSample::default()]);
            let mut totals = [(0u64, 0u64); 3];
            let mut summed = [(0u64, 0u64); 3];
            for (k, step) in steps.iter().enumerate() {
                for (t, &(r, b)) in totals.iter_mut().zip(step) {
                    *t = (t.0 + r, t.1 + b);
                }
                let sample = OstSample {
                    arrived: BTreeMap::new(),
                    served_totals: jobs.iter().copied().zip(totals).collect(),
                    queued_rpcs: 0,
                };
                let obs = o.observe(k as u64 + 1, vec![sample]);
                for s in &obs.domains[0].targets[0].jobs {
                    proptest::prop_assert!(s.rpcs_served > 0 || s.bytes_served > 0);
                    let i = jobs.iter().position(|j| *j == s.job).unwrap();
                    summed[i].0 += s.rpcs_served;
                    summed[i].1 += s.bytes_served;
                }
            }
            proptest::prop_assert_eq!(summed, totals);
        }
    }

    #[test]
    fn known_jobs_are_bounded_and_the_longest_idle_go_first() {
        let mut o = Observer::new(1, 100, &[(job("pinned"), 2)], 0);
        let many = |range: std::ops::Range<usize>| OstSample {
            arrived: range.map(|i| (job(&format!("j{i}")), 1)).collect(),
            ..OstSample::default()
        };
        o.observe(1, vec![many(0..1)]);
        o.observe(2, vec![many(1..KNOWN_JOBS_MAX + 1)]);
        let obs = o.observe(3, vec![OstSample::default()]);
        assert_eq!(obs.jobs.len(), KNOWN_JOBS_MAX);
        let names: BTreeSet<&str> = obs.jobs.iter().map(|j| j.job.as_str()).collect();
        assert!(names.contains("pinned") && !names.contains("j0"));
        assert!(names.contains(format!("j{KNOWN_JOBS_MAX}").as_str()));
    }

    #[test]
    fn the_ledger_tracks_started_rules_and_policy_changes() {
        let mut l = Ledger::default();
        l.note(&ControlWrite::NrsTbfRule(
            "start ja jobid={a} rate=5".into(),
        ));
        l.note(&ControlWrite::NrsTbfRule(
            "start jb jobid={b} rate=5".into(),
        ));
        l.note(&ControlWrite::NrsTbfRule("change ja rate=7".into()));
        l.note(&ControlWrite::NrsTbfRule("stop jb".into()));
        assert_eq!(l.rules.iter().collect::<Vec<_>>(), vec!["ja"]);
        assert!(!l.policies_changed);
        l.note(&ControlWrite::NrsPolicies("tbf jobid".into()));
        assert!(l.policies_changed);
    }

    #[test]
    fn job_nodes_parse_with_limits() {
        assert_eq!(parse_job_nodes("dd.1=3"), Ok((job("dd.1"), 3)));
        assert_eq!(parse_job_nodes("a=b=2"), Ok((job("a=b"), 2)));
        assert!(parse_job_nodes("a").unwrap_err().contains("JOB=NODES"));
        assert!(parse_job_nodes("a=0").unwrap_err().contains("1..="));
        assert!(parse_job_nodes(&format!("{}=1", "x".repeat(40))).is_err());
    }

    #[test]
    fn capacity_comes_from_the_flag_or_the_ceiling() {
        let mut c = ControlConfig::new("adaptbf").unwrap();
        assert!(c
            .capacity(None)
            .unwrap_err()
            .to_string()
            .contains("--capacity-rpcs-per-s"));
        assert_eq!(c.capacity(Some(40 << 20)).unwrap(), 10);
        assert!(
            c.capacity(Some(1 << 20)).is_err(),
            "a quarter RPC per second"
        );
        c.capacity_rpcs_per_s = Some(300);
        assert_eq!(c.capacity(Some(40 << 20)).unwrap(), 300);
        c.job_nodes = vec![(job("a"), 1), (job("a"), 2)];
        assert!(c.capacity(None).unwrap_err().to_string().contains("twice"));
    }

    async fn daemon(tmp: &tempfile::TempDir) -> crate::ossd::Ossd {
        let cfg = crate::ossd::OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![tmp.path().join("ost0")],
            b"unit-test-key-0123456789".to_vec(),
        );
        crate::ossd::Ossd::start(cfg).await.unwrap()
    }

    fn rule(text: &str) -> DomainWrite {
        DomainWrite {
            domain: OSS_DOMAIN,
            write: ControlWrite::NrsTbfRule(text.to_string()),
        }
    }

    fn rule_names(shared: &Shared) -> Vec<String> {
        let text = shared.get_param(PARAM_TBF_RULE).unwrap();
        let listing = pfsqos_core::sched::tbf::TbfRuleListing::parse(&text).unwrap();
        listing.regular[0]
            .rules
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refused_writes_get_lctls_errors_and_are_not_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let ossd = daemon(&tmp).await;
        let shared = ossd.shared();
        let mut ledger = Ledger::default();
        let start = rule("start ja jobid={a} rate=5");
        // TBF is not running yet: the same refusal an administrator gets.
        let e = apply_write(shared, &start, &mut ledger).unwrap_err();
        let admin = shared
            .set_params("ost.OSS.ost_io.nrs_tbf_rule", "start ja jobid={a} rate=5")
            .unwrap_err();
        assert_eq!(e, admin);
        // Lustre parses a start with the head's TBF type; with none it is EINVAL (nrs_tbf.c
        // nrs_tbf_id_parse).
        assert_eq!(e.errno, Errno::EINVAL, "{e}");
        assert_eq!(ledger, Ledger::default());

        let tbf = DomainWrite {
            domain: OSS_DOMAIN,
            write: ControlWrite::NrsPolicies("tbf jobid".into()),
        };
        apply_write(shared, &tbf, &mut ledger).unwrap();
        let bad_rate =
            apply_write(shared, &rule("start jb jobid={b} rate=0"), &mut ledger).unwrap_err();
        assert_eq!(bad_rate.errno, Errno::EINVAL, "{bad_rate}");
        apply_write(shared, &start, &mut ledger).unwrap();
        let twice = apply_write(shared, &start, &mut ledger).unwrap_err();
        assert_eq!(twice.errno, Errno::EEXIST, "{twice}");
        let elsewhere = DomainWrite {
            domain: DomainId(1),
            write: ControlWrite::NrsTbfRule("stop ja".into()),
        };
        let e = apply_write(shared, &elsewhere, &mut ledger).unwrap_err();
        assert_eq!(e.errno, Errno::ENODEV, "{e}");
        assert_eq!(ledger.rules.iter().collect::<Vec<_>>(), vec!["ja"]);
        assert!(ledger.policies_changed);
        ossd.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clean_up_stops_only_the_controllers_rules() {
        let tmp = tempfile::tempdir().unwrap();
        let ossd = daemon(&tmp).await;
        let shared = ossd.shared();
        shared.set_params(PARAM_POLICIES, "tbf jobid").unwrap();
        shared
            .set_params(PARAM_TBF_RULE, "start adm jobid={x} rate=9")
            .unwrap();
        let mut ledger = Ledger::default();
        for text in [
            "start ja jobid={a} rate=5",
            "start jb jobid={b} rate=6",
            "stop jb",
            "start jc jobid={c} rate=7",
        ] {
            apply_write(shared, &rule(text), &mut ledger).unwrap();
        }
        assert_eq!(rule_names(shared), vec!["jc", "ja", "adm", "default"]);
        // The controller left the policy alone: TBF stays, with the administrator's rule.
        clean_up(shared, &mut ledger);
        assert_eq!(rule_names(shared), vec!["adm", "default"]);
        assert!(ledger.rules.is_empty());

        // It had changed the policy: back to FIFO, where no rule listing exists.
        apply_write(shared, &rule("start jd jobid={d} rate=5"), &mut ledger).unwrap();
        ledger.policies_changed = true;
        clean_up(shared, &mut ledger);
        let e = shared.get_param(PARAM_TBF_RULE).unwrap_err();
        assert_eq!(e.errno, Errno::ENODEV, "{e}");
        ossd.shutdown().await;
    }
}
