//! What a run produces: per-job totals and per-job, per-OST time series in fixed bins.
//! Drivers other than the simulator (a recorded live run) fill the same types, so reports work
//! for both.

use crate::control::gift::{AllocationStats, RegretSummary};
pub use crate::control::{ControlTraceEntry, CONTROL_TRACE_LEN_MAX};
use crate::control::{ControlWrite, DomainId};
use crate::metrics::{windowed_share_deviation, JobBins, WindowDeviation};

/// Everything one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutput {
    pub scenario_name: String,
    pub policy: String,
    pub seed: u64,
    /// Width of a time-series bin.
    pub bin_ns: u64,
    /// Simulated time when the run ended (all I/O done, or the configured duration).
    pub end_ns: u64,
    /// OST names in index order (`OST0000`, ...).
    pub osts: Vec<String>,
    /// Jobs in scenario order.
    pub jobs: Vec<JobOutput>,
    /// Every control write applied, in order, with the time it was applied.
    pub control_log: Vec<ControlLogEntry>,
    /// The controller's internal state after each step (see `Controller::trace`), at most
    /// [`CONTROL_TRACE_LEN_MAX`] entries; `control_trace_truncated` says if more were dropped.
    pub control_trace: Vec<ControlTraceEntry>,
    pub control_trace_truncated: bool,
    pub engine: EngineStats,
    /// GIFT's coupon and regret accounting at the end of the run (`None` for other policies).
    pub regret: Option<RegretSummary>,
    /// Allocation statistics of a GIFT-family policy over the run's decisions (the authors'
    /// artifact's "effective system bandwidth"); `None` for other policies.
    pub allocation: Option<AllocationStats>,
    /// Synchronization traffic of distributed schedulers (DSFQ), one entry per OSS in index
    /// order; empty when the driver has none to report.
    pub sync: Vec<SyncOutput>,
    /// Space of each OST at the end of the run, in OST index order (iez's OST utilization,
    /// eq. 7); empty when the driver does not track space.
    pub ost_space: Vec<OstSpace>,
}

/// One OST's space at the end of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OstSpace {
    /// Size of the OST (Lustre's `kbytestotal`); `None` when nobody gave one, so utilization
    /// is undefined.
    pub capacity_bytes: Option<u64>,
    /// Bytes in use before the run (other tenants' data).
    pub used_initial_bytes: u64,
    /// Bytes the run's objects occupy: each object's highest written offset, summed (holes
    /// counted, as an extent-based estimate; the objects are written sequentially in every
    /// shipped scenario, so it is their data).
    pub written_bytes: u64,
}

impl OstSpace {
    /// Fraction of the OST in use at the end, `(used_initial + written) / capacity`;
    /// `None` without a capacity.
    pub fn utilization(&self) -> Option<f64> {
        let capacity = self.capacity_bytes?;
        assert!(capacity > 0, "an OST with a capacity holds bytes");
        Some((self.used_initial_bytes + self.written_bytes) as f64 / capacity as f64)
    }
}

/// The synchronization messages one OSS's scheduler instances sent and received (DSFQ's
/// service reports), summed over its CPU partitions. A broadcast is one report handed to the
/// network; each copy delivered to another instance is one message in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncOutput {
    /// The OSS's name in the scenario.
    pub oss: String,
    pub counters: crate::sched::SyncCounters,
}

/// One job's bytes completed per OST and per bin, kept for the OSTs the job moved bytes on
/// only: its memory is the job's traffic (OSTs touched x bins), not the system's OST count.
/// Bin `i` covers `[i * bin_ns, (i + 1) * bin_ns)` of the run.
///
/// Invariants: OSTs are listed once each, in increasing index; every OST's series is exactly
/// [`JobSeries::bins`] long; an OST is listed only once bytes were added to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobSeries {
    bins: usize,
    osts: Vec<(u32, Vec<u64>)>,
}

impl JobSeries {
    /// An empty series of `bins` bins.
    pub fn new(bins: usize) -> JobSeries {
        JobSeries {
            bins,
            osts: Vec::new(),
        }
    }

    /// From a dense table (outer index OST, inner index bin) of `bins` bins: OSTs without a
    /// byte are left out, shorter rows are padded with zeros.
    pub fn from_dense(bins: usize, per_ost: Vec<Vec<u64>>) -> JobSeries {
        let mut s = JobSeries::new(bins);
        for (ost, mut row) in per_ost.into_iter().enumerate() {
            assert!(
                row.len() <= bins,
                "a row of {} bins in a series of {bins}",
                row.len()
            );
            if row.iter().any(|&b| b > 0) {
                row.resize(bins, 0);
                s.osts
                    .push((u32::try_from(ost).expect("OST index fits u32"), row));
            }
        }
        s.check();
        s
    }

    fn check(&self) {
        debug_assert!(
            self.osts.windows(2).all(|w| w[0].0 < w[1].0),
            "OSTs once, in order"
        );
        debug_assert!(
            self.osts.iter().all(|(_, r)| r.len() == self.bins),
            "rows of `bins`"
        );
    }

    /// Bins in every OST's series.
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// OSTs listed (those that moved bytes).
    pub fn ost_count(&self) -> usize {
        self.osts.len()
    }

    /// One past the highest OST index listed (0 when none is).
    pub fn ost_span(&self) -> usize {
        self.osts.last().map_or(0, |&(o, _)| o as usize + 1)
    }

    /// Each listed OST's index and series, in increasing index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &[u64])> + '_ {
        self.osts.iter().map(|(o, r)| (*o as usize, r.as_slice()))
    }

    /// The series of OST `ost`: empty if the job moved no bytes there.
    pub fn ost(&self, ost: usize) -> &[u64] {
        match self.osts.binary_search_by_key(&ost, |&(o, _)| o as usize) {
            Ok(i) => &self.osts[i].1,
            Err(_) => &[],
        }
    }

    /// Lists OST `ost` (its bins all zero) if it is not listed yet. Returns the cells newly
    /// allocated: [`JobSeries::bins`] when it was not, else 0 (the caller bounds the run's
    /// total).
    pub fn ensure(&mut self, ost: u32) -> usize {
        match self.osts.binary_search_by_key(&ost, |&(o, _)| o) {
            Ok(_) => 0,
            Err(i) => {
                self.osts.insert(i, (ost, vec![0; self.bins]));
                self.check();
                self.bins
            }
        }
    }

    /// The bins of listed OST `ost`, to add to. Panics if it is not listed
    /// ([`JobSeries::ensure`] first).
    pub fn row_mut(&mut self, ost: u32) -> &mut [u64] {
        let i = self
            .osts
            .binary_search_by_key(&ost, |&(o, _)| o)
            .unwrap_or_else(|_| panic!("OST {ost} is not listed in the series"));
        &mut self.osts[i].1
    }

    /// Adds `bytes` to OST `ost`'s bin `bin` (`bin < bins`), listing the OST if need be.
    /// Returns the cells newly allocated, as [`JobSeries::ensure`].
    pub fn add(&mut self, ost: u32, bin: usize, bytes: u64) -> usize {
        assert!(bin < self.bins, "bin {bin} of {}", self.bins);
        let cells = self.ensure(ost);
        self.row_mut(ost)[bin] += bytes;
        cells
    }

    /// Keeps the first `bins` bins (no-op if there are fewer).
    pub fn truncate(&mut self, bins: usize) {
        if bins < self.bins {
            self.bins = bins;
            for (_, r) in &mut self.osts {
                r.truncate(bins);
            }
        }
        self.check();
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobOutput {
    pub job_id: String,
    pub node_count: u32,
    /// Proportional-share weight (the scenario's `weight`, by default the node count): what
    /// the weighted fairness metrics compare shares against.
    pub weight: u32,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// RPCs completed.
    pub rpcs: u64,
    /// Time the job issued its first RPC.
    pub first_io_ns: Option<u64>,
    /// Time the job's last RPC completed.
    pub last_io_ns: Option<u64>,
    /// Whether every process did all the I/O its shape asked for before the run ended.
    pub finished: bool,
    /// Bytes completed per OST and bin, over the OSTs the job moved bytes on only.
    pub bytes_per_ost_bin: JobSeries,
    /// Compute/I-O phases of a job whose processes synchronise at the end of each I/O phase
    /// (scenario shape `phases`); `None` for other jobs.
    pub phases: Option<JobPhases>,
}

/// The synchronous I/O phases of one job (GIFT §2: an I/O phase ends when all the job's
/// processes have finished their part).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobPhases {
    /// When the job started (its first compute phase).
    pub start_ns: u64,
    /// Phases the job completed (barrier reached), in order; a phase cut by the end of the run
    /// is not listed.
    pub done: Vec<PhaseRecord>,
}

/// One completed I/O phase of a job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseRecord {
    /// When the job's processes started the phase's I/O (end of the compute before it).
    pub start_ns: u64,
    /// When the last process finished its part (the barrier).
    pub end_ns: u64,
    /// Bytes of the phase over all the job's processes.
    pub bytes: u64,
}

impl PhaseRecord {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// The job's synchronous progress rate in the phase: bytes / duration. Bandwidth a fast
    /// process got beyond this made it finish early and wait at the barrier, so it does not
    /// count (GIFT §2's "wasted" bandwidth). `None` for a zero-length phase.
    pub fn effective_bytes_per_s(&self) -> Option<f64> {
        let d = self.duration_ns();
        (d > 0).then(|| self.bytes as f64 * 1e9 / d as f64)
    }
}

impl JobPhases {
    /// Application I/O time (GIFT §4): sum of the phase durations.
    pub fn io_time_ns(&self) -> u64 {
        self.done.iter().map(PhaseRecord::duration_ns).sum()
    }

    /// Application run time: from the job's start to the end of its last completed phase.
    pub fn run_time_ns(&self) -> u64 {
        self.done
            .last()
            .map_or(0, |p| p.end_ns.saturating_sub(self.start_ns))
    }

    pub fn phases_done(&self) -> u32 {
        self.done.len() as u32
    }
}

impl RunOutput {
    /// iez's OSTCost (eq. 7) at the end of the run, over the OSTs with a size; `None` when no
    /// OST has one or nothing is used.
    pub fn ost_cost(&self) -> Option<f64> {
        let utilizations: Vec<f64> = self
            .ost_space
            .iter()
            .filter_map(|s| s.utilization())
            .collect();
        crate::place::cost::ost_cost(&utilizations)
    }

    /// vPFS's unfairness over consecutive windows of `window_ns` rounded down to whole bins (at
    /// least one), with that width in bins: each job's bytes per bin over all OSTs, its weight,
    /// and its life from the bin of its first issue to the bin of its last completion
    /// ([`windowed_share_deviation`] says which windows count).
    pub fn windowed_share_deviation(&self, window_ns: u64) -> (usize, Vec<WindowDeviation>) {
        let window_bins = window_ns.checked_div(self.bin_ns).unwrap_or(1).max(1) as usize;
        let per_job: Vec<Vec<u64>> = self.jobs.iter().map(JobOutput::bytes_per_bin).collect();
        let jobs: Vec<JobBins<'_>> = self
            .jobs
            .iter()
            .zip(&per_job)
            .map(|(job, bins)| JobBins {
                bytes_per_bin: bins,
                weight: f64::from(job.weight.max(1)),
                exists_bins: match (job.first_io_ns, job.last_io_ns, self.bin_ns) {
                    (Some(a), Some(b), bin_ns) if bin_ns > 0 => {
                        let first = (a / bin_ns) as usize;
                        Some((first, (b.div_ceil(bin_ns) as usize).max(first + 1)))
                    }
                    _ => None,
                },
            })
            .collect();
        (window_bins, windowed_share_deviation(&jobs, window_bins))
    }

    /// Mean effective system bandwidth (GIFT §2 and §4, "overall system bandwidth minus the
    /// wasted bandwidth"): at time `t` the effective system bandwidth is
    /// `E(t) = Σ_{phases p in progress at t} bytes_p / (end_p − start_p)`, each job
    /// contributing the rate of its synchronous progress. This returns the mean of `E` over the
    /// time at least one phase is in progress: `∫E dt / |∪ [start_p, end_p)|`, which is
    /// `Σ bytes_p / |∪ [start_p, end_p)|`. Only completed phases count. `None` when no phase
    /// of positive length completed.
    pub fn effective_system_bytes_per_s(&self) -> Option<f64> {
        let mut spans: Vec<(u64, u64)> = Vec::new();
        let mut bytes: u64 = 0;
        for p in self.phase_records() {
            if p.end_ns > p.start_ns {
                spans.push((p.start_ns, p.end_ns));
                bytes = bytes.saturating_add(p.bytes);
            }
        }
        spans.sort_unstable();
        let mut busy_ns: u64 = 0;
        let mut cur: Option<(u64, u64)> = None;
        for (a, b) in spans {
            cur = match cur {
                Some((s, e)) if a <= e => Some((s, e.max(b))),
                Some((s, e)) => {
                    busy_ns += e - s;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        if let Some((s, e)) = cur {
            busy_ns += e - s;
        }
        (busy_ns > 0).then(|| bytes as f64 * 1e9 / busy_ns as f64)
    }

    /// The authors' artifact's "effective system bandwidth" (GIFT §4 as their `printStats`
    /// computes it): mean over the policy's decisions of eq. 1 of §3.4 (the allocation that
    /// counts toward synchronous progress; for POFS its bottleneck share, so POFS equals BSIP
    /// by construction) divided by the system's capacity; a fraction of the system, idle
    /// decisions counted as 0 for every policy. An allocation snapshot, not delivered bytes
    /// (compare [`RunOutput::effective_system_bytes_per_s`]). `None` without a GIFT-family
    /// policy or decisions.
    pub fn effective_bandwidth_allocated(&self) -> Option<f64> {
        self.allocation
            .and_then(|a| a.effective_bandwidth_allocated())
    }

    /// [`RunOutput::effective_bandwidth_allocated`] with the artifact's asymmetry: GIFT and MBW
    /// average only their non-idle decisions, the other policies all of them.
    pub fn effective_bandwidth_allocated_artifact(&self) -> Option<f64> {
        self.allocation
            .and_then(|a| a.effective_bandwidth_allocated_artifact())
    }

    /// Mean application I/O time (GIFT §4) over the jobs with phases; `None` without such jobs.
    pub fn mean_app_io_time_ns(&self) -> Option<f64> {
        let times: Vec<u64> = self
            .jobs
            .iter()
            .filter_map(|j| j.phases.as_ref().map(JobPhases::io_time_ns))
            .collect();
        (!times.is_empty()).then(|| times.iter().sum::<u64>() as f64 / times.len() as f64)
    }

    /// Compute node-hours the phased jobs held (nodes × run time), the unit of GIFT's regret
    /// budget (§3.3) and the denominator of its "fraction of node-hours" claims.
    pub fn node_hours(&self) -> f64 {
        self.jobs
            .iter()
            .filter_map(|j| {
                j.phases
                    .as_ref()
                    .map(|p| f64::from(j.node_count) * p.run_time_ns() as f64 / 3600e9)
            })
            .sum()
    }

    /// Mean application run time (GIFT §4) over the phased jobs that completed every phase.
    pub fn mean_app_run_time_ns(&self) -> Option<f64> {
        let times: Vec<u64> = self
            .jobs
            .iter()
            .filter(|j| j.finished)
            .filter_map(|j| j.phases.as_ref().map(JobPhases::run_time_ns))
            .collect();
        (!times.is_empty()).then(|| times.iter().sum::<u64>() as f64 / times.len() as f64)
    }

    /// System throughput (GIFT §4, "jobs completed per unit time"): phased jobs that completed
    /// every phase, per hour of the span from the first job's start to the last completion.
    pub fn system_throughput_jobs_per_hour(&self) -> Option<f64> {
        let done: Vec<&JobPhases> = self
            .jobs
            .iter()
            .filter(|j| j.finished)
            .filter_map(|j| j.phases.as_ref())
            .filter(|p| !p.done.is_empty())
            .collect();
        let first = self
            .jobs
            .iter()
            .filter_map(|j| j.phases.as_ref().map(|p| p.start_ns))
            .min()?;
        let last = done
            .iter()
            .filter_map(|p| p.done.last())
            .map(|r| r.end_ns)
            .max()?;
        (last > first).then(|| done.len() as f64 * 3600e9 / (last - first) as f64)
    }

    fn phase_records(&self) -> impl Iterator<Item = &PhaseRecord> {
        self.jobs
            .iter()
            .filter_map(|j| j.phases.as_ref())
            .flat_map(|p| p.done.iter())
    }
}

impl JobOutput {
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }

    /// Time from first RPC issued to last RPC completed.
    pub fn io_time_ns(&self) -> u64 {
        match (self.first_io_ns, self.last_io_ns) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => 0,
        }
    }

    /// Number of bins in which the job completed any bytes: its time doing I/O, in bins. For a
    /// bursty job this, not `io_time_ns`, is what its throughput should be measured over.
    pub fn active_bins(&self) -> u64 {
        self.bytes_per_bin().iter().filter(|&&b| b > 0).count() as u64
    }

    /// Bytes per bin summed over OSTs.
    pub fn bytes_per_bin(&self) -> Vec<u64> {
        let mut out = vec![0; self.bytes_per_ost_bin.bins()];
        for (_, per_ost) in self.bytes_per_ost_bin.iter() {
            for (i, b) in per_ost.iter().enumerate() {
                out[i] += b;
            }
        }
        out
    }
}

/// Per-application comparison of a run against a baseline run of the same jobs (GIFT Fig. 9:
/// who fares worse than under POFS).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Jobs with phases in both runs, compared by index.
    pub jobs: usize,
    /// Fraction of those whose I/O time is longer than in the baseline (by more than
    /// `tolerance`).
    pub worse_fraction: f64,
    /// Mean relative I/O-time increase of the jobs that are worse (0 when none is).
    pub worse_mean_degradation: f64,
    /// Fraction of jobs whose I/O time is more than 20 % shorter than in the baseline.
    pub better_20pct_fraction: f64,
}

/// Compares job I/O times of `run` with `baseline` (same scenario, jobs in the same order).
/// A job is worse when its I/O time exceeds the baseline's by more than `tolerance`
/// (relative), so float-level noise does not count as unfairness.
pub fn compare_io_times(baseline: &RunOutput, run: &RunOutput, tolerance: f64) -> Comparison {
    let mut n = 0usize;
    let mut worse = 0usize;
    let mut degradation = 0.0;
    let mut better = 0usize;
    for (b, r) in baseline.jobs.iter().zip(&run.jobs) {
        let (Some(bp), Some(rp)) = (&b.phases, &r.phases) else {
            continue;
        };
        let (bt, rt) = (bp.io_time_ns() as f64, rp.io_time_ns() as f64);
        if bt <= 0.0 {
            continue;
        }
        n += 1;
        let rel = rt / bt - 1.0;
        if rel > tolerance {
            worse += 1;
            degradation += rel;
        }
        if rel < -0.2 {
            better += 1;
        }
    }
    if n == 0 {
        return Comparison::default();
    }
    Comparison {
        jobs: n,
        worse_fraction: worse as f64 / n as f64,
        worse_mean_degradation: if worse > 0 {
            degradation / worse as f64
        } else {
            0.0
        },
        better_20pct_fraction: better as f64 / n as f64,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ControlLogEntry {
    pub time_ns: u64,
    pub domain: DomainId,
    pub write: ControlWrite,
    /// `Err` text if the scheduler rejected the write (a controller bug; recorded, not fatal).
    pub result: Result<(), String>,
}

/// Cost counters of the engine itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub events: u64,
    pub rpcs: u64,
    /// Outgoing limits written to clients (`ClientWrite`), which `control_log` does not list:
    /// actuator writes as much as a rule is, so the count of control writes includes them.
    pub client_writes: u64,
    /// Where the completed RPCs' time went; all zero when the driver does not follow RPCs.
    pub time: TimeSpent,
}

/// The lives of the completed RPCs, summed: each RPC's time from its creation at the client to
/// its completion there falls in exactly one of the first six parts, so they add up to
/// `total_ns`. Synchronization messages' server CPU is counted on its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeSpent {
    /// Creation to completion, every RPC.
    pub total_ns: u64,
    /// Waiting at the client for a slot of the OSC's RPC window.
    pub client_queue_ns: u64,
    /// Requests, bulk data and replies on the links (latency, per-message cost, transfers and
    /// waiting for a busy link or a client's shaper).
    pub network_ns: u64,
    /// Arrived at the OSS, waiting for a service thread (the request scheduler's queue,
    /// throttling included).
    pub server_queue_ns: u64,
    /// The service thread's CPU time for the request.
    pub server_cpu_ns: u64,
    /// At the device, waiting for a slot.
    pub device_queue_ns: u64,
    /// At the device, in service.
    pub device_ns: u64,
    /// CPU time the servers spent on synchronization messages (not part of any RPC's life).
    pub sync_cpu_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_series_keep_only_touched_osts_in_order() {
        let mut s = JobSeries::new(4);
        assert_eq!((s.ost_count(), s.ost_span()), (0, 0));
        assert_eq!(s.add(7, 1, 10), 4, "a first touch allocates the OST's bins");
        assert_eq!(s.add(2, 3, 5), 4);
        assert_eq!(s.add(7, 1, 1), 0, "a later one allocates nothing");
        assert_eq!(s.add(7, 0, 2), 0);
        let listed: Vec<(usize, Vec<u64>)> = s.iter().map(|(o, r)| (o, r.to_vec())).collect();
        assert_eq!(listed, [(2, vec![0, 0, 0, 5]), (7, vec![2, 11, 0, 0])]);
        assert_eq!((s.ost_count(), s.ost_span(), s.bins()), (2, 8, 4));
        assert_eq!(s.ost(3), &[] as &[u64], "an untouched OST has no series");
        s.truncate(2);
        assert_eq!((s.ost(7), s.ost(2)), (&[2, 11][..], &[0, 0][..]));
        s.truncate(3);
        assert_eq!(s.bins(), 2, "truncating never lengthens");
    }

    #[test]
    fn job_series_from_a_dense_table_drop_empty_osts_and_pad_rows() {
        let s = JobSeries::from_dense(3, vec![vec![0, 0], vec![], vec![1], vec![0, 0, 3]]);
        let listed: Vec<(usize, Vec<u64>)> = s.iter().map(|(o, r)| (o, r.to_vec())).collect();
        assert_eq!(listed, [(2, vec![1, 0, 0]), (3, vec![0, 0, 3])]);
        assert_eq!(s.bins(), 3);
    }

    #[test]
    #[should_panic(expected = "bin 4 of 4")]
    fn job_series_refuse_a_bin_past_the_end() {
        JobSeries::new(4).add(0, 4, 1);
    }

    fn job(phases: Option<JobPhases>) -> JobOutput {
        JobOutput {
            job_id: "j".to_string(),
            node_count: 1,
            weight: 1,
            bytes_read: 0,
            bytes_written: 0,
            rpcs: 0,
            first_io_ns: None,
            last_io_ns: None,
            finished: true,
            bytes_per_ost_bin: JobSeries::default(),
            phases,
        }
    }

    fn ph(start_ns: u64, end_ns: u64, bytes: u64) -> PhaseRecord {
        PhaseRecord {
            start_ns,
            end_ns,
            bytes,
        }
    }

    #[test]
    fn effective_bandwidth_is_bytes_over_busy_union() {
        let run = RunOutput {
            scenario_name: String::new(),
            policy: String::new(),
            seed: 0,
            bin_ns: 1,
            end_ns: 10_000_000_000,
            osts: Vec::new(),
            ost_space: Vec::new(),
            jobs: vec![
                // [1, 3) s and [2, 4) s overlap: busy 3 s; [6, 7) s adds 1 s.
                job(Some(JobPhases {
                    start_ns: 0,
                    done: vec![
                        ph(1_000_000_000, 3_000_000_000, 200),
                        ph(6_000_000_000, 7_000_000_000, 100),
                    ],
                })),
                job(Some(JobPhases {
                    start_ns: 500_000_000,
                    done: vec![ph(2_000_000_000, 4_000_000_000, 100)],
                })),
                job(None),
            ],
            control_log: Vec::new(),
            control_trace: Vec::new(),
            control_trace_truncated: false,
            engine: EngineStats::default(),
            regret: None,
            allocation: None,
            sync: Vec::new(),
        };
        assert_eq!(run.effective_system_bytes_per_s(), Some(400.0 / 4.0));
        // I/O times 3 s and 2 s.
        assert_eq!(run.mean_app_io_time_ns(), Some(2.5e9));
        let p = run.jobs[0].phases.as_ref().unwrap();
        assert_eq!(p.run_time_ns(), 7_000_000_000);
        assert_eq!(p.phases_done(), 2);
        assert_eq!(p.done[0].effective_bytes_per_s(), Some(100.0));
        // Run times 7 s on 1 node and 3.5 s on 4 nodes; the job without phases holds no
        // node-hours here.
        let mut run = run;
        run.jobs[1].node_count = 4;
        let expected = (7.0 + 4.0 * 3.5) / 3600.0;
        assert!(
            (run.node_hours() - expected).abs() < 1e-12,
            "{}",
            run.node_hours()
        );
    }
}
