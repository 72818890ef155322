//! Bytes per RPC, per job, as observed: the one conversion between a cap in bytes per second
//! and a TBF rule rate in RPCs per second.
//!
//! Lustre's TBF counts RPCs, not bytes (lustre-tbf.md, section 1): a rule `rate=100` lets 100
//! RPCs per second through whatever their size. A controller that decides in bytes per second
//! (GIFT's LP, an administrator's byte limit) must therefore divide by the size of *that job's*
//! RPCs. Dividing by `brw_size` for every job (the obvious constant) gives a job that writes
//! 4 KiB RPCs 1/256 of the bandwidth it was allocated: the bake-off found GIFT starving small-RPC
//! jobs by two orders of magnitude that way (docs/bakeoff.md, "GIFT and small RPCs").
//!
//! The estimate is the served bytes over the served RPCs (what `job_stats` counts as
//! `write_bytes`/`read_bytes` `sum` over `samples`), smoothed over periods by an exponential
//! mean of weight [`RPC_SIZE_WEIGHT_NEW`] so one period of a different pattern moves it only
//! halfway. A job not yet seen serving has `default_rpc_bytes` (Lustre's `brw_size`): the
//! largest RPC, so a first rule never lets more bytes through than the cap.

use std::collections::{BTreeMap, BTreeSet};

use super::{tbf_rate_rpcs_per_s, Observation};
use crate::model::JobId;

/// Weight of a period's observed mean RPC size against the remembered one.
pub const RPC_SIZE_WEIGHT_NEW: f64 = 0.5;

/// Most jobs whose RPC size is remembered (the control plane's bound on jobs tracked); beyond
/// it the jobs the observation no longer lists are forgotten.
pub const RPC_SIZE_JOBS_MAX: usize = super::agent::KNOWN_JOBS_MAX;

/// Each job's observed mean bytes per RPC.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcSizeEstimate {
    default_rpc_bytes: u64,
    mean_rpc_bytes: BTreeMap<JobId, f64>,
}

impl RpcSizeEstimate {
    /// An estimate that gives `default_rpc_bytes` (`brw_size`) to jobs not yet seen.
    pub fn new(default_rpc_bytes: u64) -> Self {
        assert!(default_rpc_bytes > 0, "an RPC carries bytes");
        RpcSizeEstimate {
            default_rpc_bytes,
            mean_rpc_bytes: BTreeMap::new(),
        }
    }

    /// Records that `job` was served `bytes` in `rpcs` RPCs in one period. Periods without RPCs
    /// say nothing about the size and change nothing.
    pub fn record(&mut self, job: JobId, bytes: u64, rpcs: u64) {
        if rpcs == 0 {
            return;
        }
        // An RPC carries at least one byte for this purpose (Lustre counts zero-byte reads as
        // samples of 0 bytes; a size of 0 would make every rate infinite).
        let observed = (bytes as f64 / rpcs as f64).max(1.0);
        let mean = self.mean_rpc_bytes.entry(job).or_insert(observed);
        *mean = (1.0 - RPC_SIZE_WEIGHT_NEW) * *mean + RPC_SIZE_WEIGHT_NEW * observed;
        debug_assert!(mean.is_finite() && *mean >= 1.0);
    }

    /// Records one observation: per job, the bytes and RPCs served over all its targets. Then
    /// keeps the memory within [`RPC_SIZE_JOBS_MAX`] by forgetting jobs the observation does
    /// not list.
    pub fn observe(&mut self, obs: &Observation) {
        let mut served: BTreeMap<JobId, (u64, u64)> = BTreeMap::new();
        for target in obs.domains.iter().flat_map(|d| &d.targets) {
            for s in &target.jobs {
                let e = served.entry(s.job).or_default();
                e.0 = e.0.saturating_add(s.bytes_served);
                e.1 = e.1.saturating_add(s.rpcs_served);
            }
        }
        for (job, (bytes, rpcs)) in served {
            self.record(job, bytes, rpcs);
        }
        self.bound(obs.jobs.iter().map(|m| m.job));
    }

    /// Forgets the jobs not in `known` once more than [`RPC_SIZE_JOBS_MAX`] are remembered.
    pub fn bound(&mut self, known: impl IntoIterator<Item = JobId>) {
        if self.mean_rpc_bytes.len() <= RPC_SIZE_JOBS_MAX {
            return;
        }
        let known: BTreeSet<JobId> = known.into_iter().collect();
        self.mean_rpc_bytes.retain(|j, _| known.contains(j));
    }

    /// The job's mean bytes per RPC, whole bytes, at least 1.
    pub fn bytes_per_rpc(&self, job: &JobId) -> u64 {
        self.mean_rpc_bytes
            .get(job)
            .map_or(self.default_rpc_bytes, |&m| (m.round() as u64).max(1))
    }

    /// The TBF rate that carries `bytes_per_s` of `job`'s RPCs ([`tbf_rate_rpcs_per_s`] at the
    /// job's observed RPC size).
    pub fn rate_rpcs_per_s(&self, job: &JobId, bytes_per_s: f64) -> u64 {
        tbf_rate_rpcs_per_s(bytes_per_s, self.bytes_per_rpc(job))
    }

    /// Jobs remembered.
    pub fn len(&self) -> usize {
        self.mean_rpc_bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mean_rpc_bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OstId;
    use crate::{
        DomainId, DomainObservation, JobMeta, JobTargetStats, Observation, TargetObservation,
    };

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    fn stats(j: &str, rpcs: u64, bytes: u64) -> JobTargetStats {
        JobTargetStats {
            job: job(j),
            rpcs_arrived: rpcs,
            rpcs_served: rpcs,
            bytes_served: bytes,
        }
    }

    fn obs(targets: Vec<Vec<JobTargetStats>>, jobs: &[&str]) -> Observation {
        Observation {
            now_ns: 1,
            period_ns: 1,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: targets
                    .into_iter()
                    .enumerate()
                    .map(|(i, jobs)| TargetObservation {
                        ost: OstId(i as u32),
                        queue_len_rpcs: 0,
                        device_queue_rpcs: 0,
                        device_time_in_queue_ns: 0,
                        capacity_rpcs_per_s: 100,
                        jobs,
                    })
                    .collect(),
            }],
            jobs: jobs
                .iter()
                .map(|j| JobMeta {
                    job: job(j),
                    node_count: 1,
                    weight: 1,
                })
                .collect(),
            clients: Vec::new(),
        }
    }

    #[test]
    fn a_small_rpc_job_gets_the_rate_that_carries_its_bytes() {
        let mut e = RpcSizeEstimate::new(1 << 20);
        // Unseen: brw_size, so 100 MiB/s is 100 RPCs/s.
        assert_eq!(
            e.rate_rpcs_per_s(&job("tiny"), 100.0 * (1 << 20) as f64),
            100
        );
        // 4 KiB RPCs on two targets, 1 MiB RPCs for the other job.
        e.observe(&obs(
            vec![
                vec![stats("big", 10, 10 << 20), stats("tiny", 300, 300 << 12)],
                vec![stats("tiny", 100, 100 << 12)],
            ],
            &["big", "tiny"],
        ));
        assert_eq!(e.bytes_per_rpc(&job("tiny")), 4096);
        assert_eq!(e.bytes_per_rpc(&job("big")), 1 << 20);
        // The same byte cap is 256 times the RPCs for the 4 KiB job.
        let cap = 2.0 * (1 << 20) as f64;
        assert_eq!(e.rate_rpcs_per_s(&job("big"), cap), 2);
        assert_eq!(e.rate_rpcs_per_s(&job("tiny"), cap), 512);
    }

    #[test]
    fn the_mean_moves_halfway_per_period_and_idle_periods_keep_it() {
        let mut e = RpcSizeEstimate::new(1 << 20);
        e.record(job("a"), 8 << 10, 1);
        assert_eq!(e.bytes_per_rpc(&job("a")), 8 << 10);
        e.record(job("a"), 24 << 10, 1);
        assert_eq!(e.bytes_per_rpc(&job("a")), 16 << 10);
        e.record(job("a"), 0, 0);
        assert_eq!(e.bytes_per_rpc(&job("a")), 16 << 10);
        // Zero-byte RPCs count as one byte: the rate stays finite and within Lustre's range.
        let mut z = RpcSizeEstimate::new(1 << 20);
        z.record(job("z"), 0, 50);
        assert_eq!(z.bytes_per_rpc(&job("z")), 1);
        assert_eq!(z.rate_rpcs_per_s(&job("z"), 1e12), 999_999);
    }

    #[test]
    fn memory_is_bounded_by_the_jobs_the_observation_lists() {
        let mut e = RpcSizeEstimate::new(1 << 20);
        for i in 0..=RPC_SIZE_JOBS_MAX {
            e.record(job(&format!("j{i}")), 4096, 1);
        }
        assert_eq!(e.len(), RPC_SIZE_JOBS_MAX + 1);
        e.observe(&obs(vec![vec![stats("j7", 1, 4096)]], &["j7", "j9"]));
        assert_eq!(e.len(), 2);
        assert_eq!(e.bytes_per_rpc(&job("j9")), 4096);
        assert_eq!(e.bytes_per_rpc(&job("j8")), 1 << 20);
    }
}
