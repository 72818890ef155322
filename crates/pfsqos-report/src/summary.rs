//! `summary.json`: per-job totals and the papers' metrics for one run.
//!
//! Fairness is judged where it means something: over the bytes each job moved while *all* jobs
//! were doing I/O. Outside that window a job alone on the system takes everything, which says
//! nothing about the policy. The window is rounded inwards to whole bins (the bins are all the
//! run records of time); when no whole bin has every job active the whole-run bytes are used and
//! `fairness_window.basis` says so.

use pfsqos_core::metrics::{jain_index, share_deviation, weighted_jain_index};
use pfsqos_core::run::RunOutput;
use serde::Serialize;

use crate::{control_write_text, ns_to_s, BYTES_PER_MIB};

/// Rejected control writes listed one by one; the count is always exact. A controller that is
/// wrong every period would otherwise make the summary as large as the run.
pub const REJECTED_LISTED_MAX: usize = 1000;

/// Everything `summary.json` holds for one run. Field order is the JSON key order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub sim_time_s: f64,
    pub bin_s: f64,
    pub jobs: Vec<JobSummary>,
    pub total_bytes: u64,
    /// Total bytes over the time from the first RPC issued by any job to the last completion.
    pub aggregate_throughput_mib_s: f64,
    /// Jain's index over the per-job throughputs (`jobs[].throughput_mib_s`).
    pub jain_index: f64,
    /// Jain's index of the fairness-window bytes normalised by the jobs' weights (by default
    /// their node counts).
    pub weighted_jain_index: f64,
    /// Sum of |share - weight share| over the fairness-window bytes.
    pub share_deviation: f64,
    pub fairness_window: FairnessWindow,
    /// vPFS's unfairness over time (§IV-B, Fig. 6) in windows of 5 s.
    pub unfairness_5s: UnfairnessSummary,
    /// The same in windows of 60 s.
    pub unfairness_60s: UnfairnessSummary,
    /// GIFT's mean application I/O time over the jobs with synchronous I/O phases; absent when
    /// no job has phases (`pfsqos_core::run::RunOutput::mean_app_io_time_ns`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_app_io_time_s: Option<f64>,
    /// GIFT's effective system bandwidth over completed phases; absent without phases
    /// (`pfsqos_core::run::RunOutput::effective_system_bytes_per_s`, formula in
    /// docs/reproductions/gift.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_system_mib_s: Option<f64>,
    /// The authors' artifact's "effective system bandwidth": mean over the policy's decisions
    /// of the allocation counted toward synchronous progress, as a fraction of the system's
    /// capacity (idle decisions count 0 for every policy); an allocation snapshot, not
    /// delivered bytes. Absent without a GIFT-family policy
    /// (`pfsqos_core::run::RunOutput::effective_bandwidth_allocated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_bandwidth_allocated: Option<f64>,
    /// The same with the artifact's asymmetry: GIFT and MBW average only their non-idle
    /// decisions (`pfsqos_core::run::RunOutput::effective_bandwidth_allocated_artifact`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_bandwidth_allocated_artifact: Option<f64>,
    pub engine: EngineSummary,
    /// Synchronization traffic of distributed schedulers (DSFQ) per OSS; absent when no
    /// scheduler synchronized.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync: Vec<SyncSummary>,
    /// Space of each OST with a size at the end of the run; absent when no OST has one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ost_space: Vec<OstSpaceSummary>,
    /// iez's OSTCost (eq. 7): the fullest OST's utilization over the mean; absent when no
    /// OST has a size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ost_cost: Option<f64>,
    pub control_writes: u64,
    pub rejected_control_writes: u64,
    /// Samples in the controller trace (`control_trace.csv` rows); 0 for controllers without
    /// internal state worth charting.
    pub control_trace_entries: u64,
    /// The run dropped trace samples beyond its bound: the CSV and charts stop early.
    pub control_trace_truncated: bool,
    /// At most [`REJECTED_LISTED_MAX`] entries, in the order they happened.
    pub rejected: Vec<RejectedWrite>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobSummary {
    pub job_id: String,
    pub nodes: u32,
    /// Proportional-share weight (the scenario's `weight`, by default `nodes`).
    pub weight: u32,
    pub bytes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub rpcs: u64,
    /// `bytes` over `io_time_s`; 0 for a job that did no I/O.
    pub throughput_mib_s: f64,
    /// First RPC issued to last RPC completed.
    pub io_time_s: f64,
    /// Time in bins in which the job completed bytes (its time actually doing I/O).
    pub active_time_s: f64,
    /// `bytes` over `active_time_s`: what a bursty job gets while it bursts.
    pub active_throughput_mib_s: f64,
    pub first_io_s: Option<f64>,
    pub last_io_s: Option<f64>,
    pub finished: bool,
    /// Bytes inside the fairness window (what the weighted metrics are computed over).
    pub window_bytes: u64,
    /// Synchronous I/O phases (scenario shape `phases`); absent for other jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<PhasesSummary>,
}

/// A job's synchronous I/O phases (GIFT §4 application metrics).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhasesSummary {
    /// Phases completed (barrier reached) before the run ended.
    pub phases_done: u32,
    /// Sum of the phase durations (first process starts its I/O to the barrier).
    pub io_time_s: f64,
    /// Job start to the end of its last completed phase.
    pub run_time_s: f64,
}

/// Which bytes the weighted fairness metrics were computed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowBasis {
    /// Whole bins in which every job was between its first issue and its last completion.
    AllJobsActive,
    /// No such bin exists (jobs ran one after the other, or one never did I/O).
    WholeRun,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FairnessWindow {
    pub basis: WindowBasis,
    pub start_s: f64,
    pub end_s: f64,
}

/// vPFS's unfairness (the sum over the existing jobs of |normalised throughput - normalised
/// weight|, 0..=2) over consecutive windows of one width
/// ([`pfsqos_core::metrics::windowed_share_deviation`] says which windows count).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnfairnessSummary {
    /// Window width: the nominal width rounded to whole bins.
    pub window_s: f64,
    /// Windows in which at least two jobs existed and something completed.
    pub windows: u64,
    /// Mean over those windows; absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// Nominal unfairness windows: the vPFS paper's Fig. 6 plots 5 s and 60 s.
const UNFAIRNESS_WINDOWS_NS: [u64; 2] = [5_000_000_000, 60_000_000_000];

fn unfairness(run: &RunOutput, window_ns: u64) -> UnfairnessSummary {
    let (window_bins, windows) = run.windowed_share_deviation(window_ns);
    let n = windows.len();
    UnfairnessSummary {
        window_s: ns_to_s(window_bins as u64 * run.bin_ns),
        windows: n as u64,
        mean: (n > 0).then(|| windows.iter().map(|w| w.deviation).sum::<f64>() / n as f64),
        max: windows.iter().map(|w| w.deviation).reduce(f64::max),
    }
}

/// One OSS's synchronization traffic ([`pfsqos_core::run::SyncOutput`]) and its rate over the
/// run's simulated time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SyncSummary {
    pub oss: String,
    #[serde(flatten)]
    pub counters: pfsqos_core::sched::SyncCounters,
    pub messages_in_per_s: f64,
    pub bytes_in_per_s: f64,
}

/// One OST's space at the end of the run ([`pfsqos_core::run::OstSpace`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OstSpaceSummary {
    pub ost: String,
    pub capacity_bytes: u64,
    pub used_initial_bytes: u64,
    pub written_bytes: u64,
    /// `(used_initial_bytes + written_bytes) / capacity_bytes`.
    pub utilization: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineSummary {
    pub events: u64,
    pub rpcs: u64,
    /// Where the completed RPCs' time went; absent when the run followed no RPC
    /// (`pfsqos_core::run::TimeSpent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_spent: Option<TimeSpentSummary>,
}

/// [`pfsqos_core::run::TimeSpent`] in seconds summed over the RPCs, and each part's share of
/// their total.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeSpentSummary {
    pub total_s: f64,
    pub client_queue_s: f64,
    pub network_s: f64,
    pub server_queue_s: f64,
    pub server_cpu_s: f64,
    pub device_queue_s: f64,
    pub device_s: f64,
    pub sync_cpu_s: f64,
    /// Each of the six parts of `total_s` as a fraction of it, in the order above.
    pub fractions: TimeSpentFractions,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeSpentFractions {
    pub client_queue: f64,
    pub network: f64,
    pub server_queue: f64,
    pub server_cpu: f64,
    pub device_queue: f64,
    pub device: f64,
}

fn time_spent_summary(t: &pfsqos_core::run::TimeSpent) -> Option<TimeSpentSummary> {
    if t.total_ns == 0 {
        return None;
    }
    let s = |ns: u64| ns as f64 / 1e9;
    let f = |ns: u64| ns as f64 / t.total_ns as f64;
    Some(TimeSpentSummary {
        total_s: s(t.total_ns),
        client_queue_s: s(t.client_queue_ns),
        network_s: s(t.network_ns),
        server_queue_s: s(t.server_queue_ns),
        server_cpu_s: s(t.server_cpu_ns),
        device_queue_s: s(t.device_queue_ns),
        device_s: s(t.device_ns),
        sync_cpu_s: s(t.sync_cpu_ns),
        fractions: TimeSpentFractions {
            client_queue: f(t.client_queue_ns),
            network: f(t.network_ns),
            server_queue: f(t.server_queue_ns),
            server_cpu: f(t.server_cpu_ns),
            device_queue: f(t.device_queue_ns),
            device: f(t.device_ns),
        },
    })
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RejectedWrite {
    pub time_s: f64,
    pub domain: u32,
    pub write: String,
    pub error: String,
}

/// The window (in bins, end exclusive) where every job was active, if it holds a whole bin.
fn all_active_bins(run: &RunOutput) -> Option<(usize, usize)> {
    if run.jobs.is_empty() || run.bin_ns == 0 {
        return None;
    }
    let mut start_ns = 0u64;
    let mut end_ns = u64::MAX;
    for job in &run.jobs {
        start_ns = start_ns.max(job.first_io_ns?);
        end_ns = end_ns.min(job.last_io_ns?);
    }
    let first_bin = start_ns.div_ceil(run.bin_ns);
    let end_bin = end_ns / run.bin_ns;
    (first_bin < end_bin).then_some((first_bin as usize, end_bin as usize))
}

fn mib_per_s(bytes: u64, time_ns: u64) -> f64 {
    if time_ns == 0 {
        return 0.0;
    }
    bytes as f64 / BYTES_PER_MIB / ns_to_s(time_ns)
}

fn sync_summary(run: &RunOutput) -> Vec<SyncSummary> {
    let quiet = run.sync.iter().all(|s| {
        let c = &s.counters;
        c.broadcasts_out == 0 && c.messages_in == 0 && c.rejected_in == 0
    });
    if quiet {
        return Vec::new();
    }
    let per_s = |n: u64| {
        if run.end_ns == 0 {
            0.0
        } else {
            n as f64 / ns_to_s(run.end_ns)
        }
    };
    run.sync
        .iter()
        .map(|s| SyncSummary {
            oss: s.oss.clone(),
            counters: s.counters,
            messages_in_per_s: per_s(s.counters.messages_in),
            bytes_in_per_s: per_s(s.counters.bytes_in),
        })
        .collect()
}

/// Computes the summary of one run.
pub fn summarize(run: &RunOutput) -> RunSummary {
    let window = all_active_bins(run);
    let window_bytes: Vec<u64> = run
        .jobs
        .iter()
        .map(|job| match window {
            Some((a, b)) => job
                .bytes_per_ost_bin
                .iter()
                .map(|(_, bins)| bins.iter().take(b).skip(a).sum::<u64>())
                .sum(),
            None => job.bytes(),
        })
        .collect();
    let fairness_window = match window {
        Some((a, b)) => FairnessWindow {
            basis: WindowBasis::AllJobsActive,
            start_s: ns_to_s(a as u64 * run.bin_ns),
            end_s: ns_to_s(b as u64 * run.bin_ns),
        },
        None => FairnessWindow {
            basis: WindowBasis::WholeRun,
            start_s: 0.0,
            end_s: ns_to_s(run.end_ns),
        },
    };

    let jobs: Vec<JobSummary> = run
        .jobs
        .iter()
        .zip(&window_bytes)
        .map(|(job, &window_bytes)| JobSummary {
            job_id: job.job_id.clone(),
            nodes: job.node_count,
            weight: job.weight,
            bytes: job.bytes(),
            bytes_read: job.bytes_read,
            bytes_written: job.bytes_written,
            rpcs: job.rpcs,
            throughput_mib_s: mib_per_s(job.bytes(), job.io_time_ns()),
            io_time_s: ns_to_s(job.io_time_ns()),
            active_time_s: ns_to_s(job.active_bins() * run.bin_ns),
            active_throughput_mib_s: mib_per_s(job.bytes(), job.active_bins() * run.bin_ns),
            first_io_s: job.first_io_ns.map(ns_to_s),
            last_io_s: job.last_io_ns.map(ns_to_s),
            finished: job.finished,
            window_bytes,
            phases: job.phases.as_ref().map(|p| PhasesSummary {
                phases_done: p.phases_done(),
                io_time_s: ns_to_s(p.io_time_ns()),
                run_time_s: ns_to_s(p.run_time_ns()),
            }),
        })
        .collect();

    let total_bytes: u64 = run.jobs.iter().map(|j| j.bytes()).sum();
    let first_ns = run.jobs.iter().filter_map(|j| j.first_io_ns).min();
    let last_ns = run.jobs.iter().filter_map(|j| j.last_io_ns).max();
    let span_ns = match (first_ns, last_ns) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };

    let throughputs: Vec<f64> = jobs.iter().map(|j| j.throughput_mib_s).collect();
    let weights: Vec<f64> = run.jobs.iter().map(|j| f64::from(j.weight)).collect();
    let window_values: Vec<f64> = window_bytes.iter().map(|&b| b as f64).collect();

    let rejected_all = run.control_log.iter().filter(|e| e.result.is_err());
    let rejected: Vec<RejectedWrite> = rejected_all
        .clone()
        .take(REJECTED_LISTED_MAX)
        .map(|e| RejectedWrite {
            time_s: ns_to_s(e.time_ns),
            domain: e.domain.0,
            write: control_write_text(&e.write),
            error: e.result.clone().err().unwrap_or_default(),
        })
        .collect();

    RunSummary {
        scenario: run.scenario_name.clone(),
        policy: run.policy.clone(),
        seed: run.seed,
        sim_time_s: ns_to_s(run.end_ns),
        bin_s: ns_to_s(run.bin_ns),
        jobs,
        total_bytes,
        aggregate_throughput_mib_s: mib_per_s(total_bytes, span_ns),
        jain_index: jain_index(&throughputs),
        weighted_jain_index: weighted_jain_index(&window_values, &weights),
        share_deviation: share_deviation(&window_values, &weights),
        fairness_window,
        unfairness_5s: unfairness(run, UNFAIRNESS_WINDOWS_NS[0]),
        unfairness_60s: unfairness(run, UNFAIRNESS_WINDOWS_NS[1]),
        mean_app_io_time_s: run.mean_app_io_time_ns().map(|ns| ns / 1e9),
        effective_system_mib_s: run
            .effective_system_bytes_per_s()
            .map(|b| b / BYTES_PER_MIB),
        effective_bandwidth_allocated: run.effective_bandwidth_allocated(),
        effective_bandwidth_allocated_artifact: run.effective_bandwidth_allocated_artifact(),
        engine: EngineSummary {
            events: run.engine.events,
            rpcs: run.engine.rpcs,
            time_spent: time_spent_summary(&run.engine.time),
        },
        sync: sync_summary(run),
        ost_space: run
            .ost_space
            .iter()
            .zip(&run.osts)
            .filter_map(|(s, ost)| {
                Some(OstSpaceSummary {
                    ost: ost.clone(),
                    capacity_bytes: s.capacity_bytes?,
                    used_initial_bytes: s.used_initial_bytes,
                    written_bytes: s.written_bytes,
                    utilization: s.utilization()?,
                })
            })
            .collect(),
        ost_cost: run.ost_cost(),
        control_writes: run.control_log.len() as u64 + run.engine.client_writes,
        rejected_control_writes: rejected_all.count() as u64,
        control_trace_entries: run.control_trace.len() as u64,
        control_trace_truncated: run.control_trace_truncated,
        rejected,
    }
}
