//! The controller agent's pure part: what every driver that runs a controller against a real
//! server does between the server's counters and `Controller::decide`, and after it.
//!
//! * [`Observer`] turns raw per-OST counter samples (arrivals counted at enqueue, `job_stats`
//!   totals, queue length) into an [`Observation`]: served counts are `job_stats` deltas by the
//!   one rule ([`counters_delta`]), jobs are listed only when they did something, and the jobs
//!   seen so far are remembered, at most [`KNOWN_JOBS_MAX`] of them.
//! * [`Ledger`] records what the controller changed (rules it started and still holds, whether
//!   it changed the policy) so that a clean exit leaves nothing behind ([`Ledger::undo_writes`]).
//!
//! The live `ossd --policy` drives it today; the Lustre agent (reading `job_stats` and writing
//! rules with `lctl`) is the next driver.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    ControlWrite, DomainId, DomainObservation, JobMeta, JobTargetStats, Observation,
    TargetObservation,
};
use crate::jobstats::counters_delta;
use crate::model::{JobId, OstId};
use crate::sched::tbf::{TbfCommand, TbfOp};

/// Most jobs the controller is told about; beyond it the longest-idle jobs not given on the
/// command line are forgotten.
pub const KNOWN_JOBS_MAX: usize = 16384;

/// What the control loop changed, so a clean exit can undo it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ledger {
    /// Rules the controller started and has not stopped.
    pub rules: BTreeSet<String>,
    /// The controller wrote `nrs_policies` at least once.
    pub policies_changed: bool,
}

impl Ledger {
    /// Records a write that was applied.
    pub fn note(&mut self, write: &ControlWrite) {
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
            // A policy's own parameters go with the policy, which the undo stops.
            ControlWrite::NrsPolicyParam { .. } => {}
        }
    }

    /// The writes that undo what the ledger holds: every rule still held is stopped first
    /// (stopping needs TBF running), then the policy goes back to `fifo` if it was changed.
    pub fn undo_writes(&self) -> Vec<ControlWrite> {
        let mut writes: Vec<ControlWrite> = self
            .rules
            .iter()
            .map(|name| ControlWrite::NrsTbfRule(format!("stop {name}")))
            .collect();
        if self.policies_changed {
            writes.push(ControlWrite::NrsPolicies("fifo".to_string()));
        }
        writes
    }
}

/// One OST's raw counters at the end of a period.
#[derive(Debug, Default, Clone)]
pub struct OstSample {
    /// RPCs that arrived during the period, per job.
    pub arrived: BTreeMap<JobId, u64>,
    /// job_stats totals (RPCs, bytes) per job.
    pub served_totals: BTreeMap<JobId, (u64, u64)>,
    pub queued_rpcs: u64,
    /// Requests at the device (in service or waiting for it) when sampled.
    pub device_queue_rpcs: u64,
    /// The device's cumulative time in queue (`TargetObservation::device_time_in_queue_ns`).
    pub device_time_in_queue_ns: u64,
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
pub struct Observer {
    domain: DomainId,
    capacity_rpcs_per_s: u64,
    served_prev: Vec<BTreeMap<JobId, (u64, u64)>>,
    known: BTreeMap<JobId, KnownJob>,
    period: u64,
    last_ns: u64,
}

impl Observer {
    /// An observer of `ost_count` OSTs forming scheduling domain `domain`; `job_nodes` are
    /// known from the start and never forgotten.
    pub fn new(
        domain: DomainId,
        ost_count: usize,
        capacity_rpcs_per_s: u64,
        job_nodes: &[(JobId, u32)],
        now_ns: u64,
    ) -> Observer {
        Observer {
            domain,
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
                // Totals that went down were cleared (`job_stats=clear`, expiry) and counted
                // again from zero: the one delta rule.
                let [d_rpcs, d_bytes] = counters_delta(
                    prev.get(&job).map(|&(r, b)| [r, b]).as_ref(),
                    &[rpcs, bytes],
                );
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
                device_queue_rpcs: sample.device_queue_rpcs,
                device_time_in_queue_ns: sample.device_time_in_queue_ns,
                capacity_rpcs_per_s: self.capacity_rpcs_per_s,
                jobs: per_job.into_values().collect(),
            });
        }
        self.forget_idle_jobs();
        let period_ns = now_ns.saturating_sub(self.last_ns);
        self.last_ns = now_ns;
        Observation {
            clients: Vec::new(),
            now_ns,
            period_ns,
            domains: vec![DomainObservation {
                domain: self.domain,
                targets,
            }],
            jobs: self
                .known
                .iter()
                .map(|(&job, k)| JobMeta {
                    job,
                    node_count: k.node_count,
                    // The live runtime has no per-job weight yet.
                    weight: super::default_job_weight(k.node_count),
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
                    device_queue_rpcs: s.device_queue_rpcs,
                    device_time_in_queue_ns: s.device_time_in_queue_ns,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    fn sample_of(arrived: &[(&str, u64)], served: &[(&str, u64, u64)], queued: u64) -> OstSample {
        OstSample {
            device_queue_rpcs: 0,
            device_time_in_queue_ns: 0,
            arrived: arrived.iter().map(|&(j, n)| (job(j), n)).collect(),
            served_totals: served.iter().map(|&(j, r, b)| (job(j), (r, b))).collect(),
            queued_rpcs: queued,
        }
    }

    #[test]
    fn observations_carry_deltas_and_known_jobs() {
        let mut o = Observer::new(DomainId(0), 2, 500, &[(job("b"), 3)], 1_000);
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
            let mut o = Observer::new(DomainId(0), 1, 100, &[], 0);
            o.initial(0, vec![OstSample::default()]);
            let mut totals = [(0u64, 0u64); 3];
            let mut summed = [(0u64, 0u64); 3];
            for (k, step) in steps.iter().enumerate() {
                for (t, &(r, b)) in totals.iter_mut().zip(step) {
                    *t = (t.0 + r, t.1 + b);
                }
                let sample = OstSample {
                    device_queue_rpcs: 0,
                    device_time_in_queue_ns: 0,
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
        let mut o = Observer::new(DomainId(0), 1, 100, &[(job("pinned"), 2)], 0);
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
}
