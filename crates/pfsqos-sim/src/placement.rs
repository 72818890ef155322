//! The MDS's placer for a simulated run, set up the way a site runs it: the scenario's
//! `placement` policy, given the servers' space when the run starts (the statistics snapshot
//! iez's OSSs publish every 60 s, Lustre's allocator's `statfs`), and, for a placer that plans
//! from forecasts (iez), each job's files predicted from the job's first run.
//!
//! **The first run.** iez's miniRecorder traces an application's first run (per file: bytes
//! written, stripe count, rank; iez, IPDPS '19, §III-A1) and AIPA forecasts the next run from it. A
//! scenario's jobs write exactly what their process groups say, so the first run's trace is
//! derived from the scenario (files in creation order: a shared file holds `numjobs × size`,
//! a per-process file `size`) instead of simulated twice; the forecast
//! ([`pfsqos_core::place::profile::predict_files`]) then runs on it as on a recorded trace.
//!
//! **When files are created, and what the placer sees.** With `files_created = "start"` (the
//! default) every file is created at set-up, before any I/O, so the snapshot is the start's:
//! OST sizes and fills from `ost_capacity` / `ost_used`, OSSs idle. With `files_created =
//! "first_io"` (RPC-level engine) each file is created when its first process begins its first
//! burst, and the placer decides from the last periodic statistics report
//! (`oss_stats_period_s`, 60 s by default as iez's collector, §III-B1), never from the current
//! state: a report taken every period holds each OST's fill then (`ost_used` plus the bytes
//! the run's objects occupy) and each OSS's load over the period just ended
//! ([`oss_load_report`]).
//!
//! **Our OSS load model** (the paper reads `/proc/loadavg` and `/proc/meminfo`; the simulator
//! has no CPU or memory, so this is ours): CPU utilization is the RPCs the OSS's OSTs served
//! during the period over what they could serve (their `capacity_rpcs_per_s` times the
//! period), i.e. the OSS's busy fraction at its rated RPC rate; memory utilization is the RPCs
//! the OSS holds at the report (queued in its schedulers or at its devices, each holding a
//! request buffer) over [`OSS_BUFFERS_PER_THREAD`] buffers per service thread. Both are
//! clamped to `0..=1`.

use pfsqos_core::forecast::ArimaOrder;
use pfsqos_core::model::{JobId, OssId};
use pfsqos_core::place::profile::{predict_files, TracedFile};
use pfsqos_core::place::{OstStats, ServerLoad, ServerStats};
use pfsqos_node::mds::Placer;

use crate::scenario::{FileMode, JobSpec, Scenario};

/// Size of an OST without `ost_capacity`: large enough that no run fills it (1 PiB), so
/// space-aware placers see every such OST equally empty.
pub const OST_CAPACITY_DEFAULT_BYTES: u64 = 1 << 50;

/// What the placer was given, for reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlacementSetup {
    /// The jobs whose predictions the placer holds, in scenario order.
    pub predictions: Vec<JobPrediction>,
}

/// One job's forecast as the placer took it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobPrediction {
    pub job: String,
    /// Predicted files the placer holds.
    pub files: usize,
    /// The ARIMA order of the forecast; `None` when the files were predicted as traced
    /// (too short or constant a trace).
    pub order: Option<ArimaOrder>,
    /// The paper's accuracy of the predictions against the trace.
    pub accuracy: f64,
}

/// Request buffers per OSS service thread in the memory model (module doc): an OSS holding
/// twice as many RPCs as it has threads reports its memory as full (ours; Lustre sizes its
/// request buffer pools by its thread counts).
pub const OSS_BUFFERS_PER_THREAD: u64 = 2;

/// What the simulator counted at one OSS over a statistics period (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OssActivity {
    /// RPCs its OSTs completed during the period.
    pub served_rpcs: u64,
    /// Σ `capacity_rpcs_per_s` of its OSTs.
    pub capacity_rpcs_per_s: u64,
    /// RPCs held at the report (queued in its schedulers or at its devices).
    pub held_rpcs: u64,
    /// Its service threads (`io_threads`).
    pub io_threads: u32,
}

/// One OSS's CPU and memory utilization over a period of `period_ns` (our model, module doc).
pub fn oss_load_report(activity: &OssActivity, period_ns: u64) -> ServerLoad {
    let servable = activity.capacity_rpcs_per_s as f64 * period_ns as f64 * 1e-9;
    let cpu_util = if servable > 0.0 {
        (activity.served_rpcs as f64 / servable).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let buffers = u64::from(activity.io_threads.max(1)) * OSS_BUFFERS_PER_THREAD;
    let mem_util = (activity.held_rpcs as f64 / buffers as f64).clamp(0.0, 1.0);
    let load = ServerLoad { cpu_util, mem_util };
    debug_assert!(load.cpu_util.is_finite() && load.mem_util.is_finite());
    load
}

/// The statistics snapshot at the start of the run (module doc).
pub fn start_stats(scenario: &Scenario) -> ServerStats {
    let mut osts = Vec::new();
    for (oss, spec) in scenario.osses.iter().enumerate() {
        let total_bytes = spec
            .ost_capacity
            .map_or(OST_CAPACITY_DEFAULT_BYTES, |c| c.0);
        let used_bytes = spec.ost_used.map_or(0, |u| u.0);
        for _ in 0..spec.osts {
            osts.push(OstStats {
                oss: OssId(oss as u32),
                total_bytes,
                avail_bytes: total_bytes - used_bytes,
            });
        }
    }
    ServerStats {
        at_ns: 0,
        osts,
        osses: vec![ServerLoad::IDLE; scenario.osses.len()],
        mds: None,
    }
}

/// Each job's first-run trace: its files in creation order (module doc). `jobs` are the
/// run's jobs: the scenario's, and the fluid engine adds those its `[appset]` generates.
pub fn first_run_traces(scenario: &Scenario, jobs: &[&JobSpec]) -> Vec<(JobId, Vec<TracedFile>)> {
    let cluster = &scenario.cluster;
    let mut out = Vec::new();
    for job in jobs {
        let Ok(id) = JobId::new(&job.id) else {
            continue;
        };
        let mut files = Vec::new();
        let mut rank = 0u32;
        for group in &job.groups {
            if group.rw.is_read() || group.files_of.is_some() {
                // iez traces writes only (§III-A1: reads are absorbed by caches), and a group
                // on another group's files (`files_of`) creates none.
                rank += group.numjobs;
                continue;
            }
            let stripe_count = group.stripe_count.unwrap_or(cluster.stripe_count);
            let size = group.size.bytes();
            match group.file {
                FileMode::Shared => {
                    files.push(TracedFile {
                        bytes_written: size.saturating_mul(u64::from(group.numjobs)),
                        stripe_count,
                        rank,
                    });
                    rank += group.numjobs;
                }
                FileMode::PerProcess => {
                    for _ in 0..group.numjobs {
                        files.push(TracedFile {
                            bytes_written: size,
                            stripe_count,
                            rank,
                        });
                        rank += 1;
                    }
                }
            }
        }
        out.push((id, files));
    }
    out
}

/// The run's placer (module doc), with the predictions of `jobs` (the run's jobs, see
/// [`first_run_traces`]).
pub fn placer_for(
    scenario: &Scenario,
    ost_count: u32,
    jobs: &[&JobSpec],
) -> Result<(Placer, PlacementSetup), String> {
    let mut placer = Placer::by_name(&scenario.cluster.placement, ost_count)?;
    placer
        .observe_servers(&start_stats(scenario))
        .map_err(|e| format!("placement `{}`: {e}", scenario.cluster.placement))?;
    let mut setup = PlacementSetup::default();
    for (job, trace) in first_run_traces(scenario, jobs) {
        if trace.is_empty() {
            continue;
        }
        let prediction = predict_files(&trace);
        let held = placer.set_predictions(job, &prediction.files);
        if held > 0 {
            setup.predictions.push(JobPrediction {
                job: job.as_str().to_string(),
                files: held,
                order: prediction.order,
                accuracy: prediction.accuracy,
            });
        }
    }
    Ok((placer, setup))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oss_load_model_is_a_fraction_of_rated_rpcs_and_buffers() {
        let idle = OssActivity {
            served_rpcs: 0,
            capacity_rpcs_per_s: 1000,
            held_rpcs: 0,
            io_threads: 8,
        };
        assert_eq!(oss_load_report(&idle, 1_000_000_000), ServerLoad::IDLE);
        // Half the rated RPCs over 2 s, 4 of 16 buffers held.
        let half = OssActivity {
            served_rpcs: 1000,
            held_rpcs: 4,
            ..idle
        };
        let l = oss_load_report(&half, 2_000_000_000);
        assert!((l.cpu_util - 0.5).abs() < 1e-12);
        assert!((l.mem_util - 0.25).abs() < 1e-12);
        // More than rated (a burst over a short period) and more held than buffers: clamped.
        let over = OssActivity {
            served_rpcs: 10_000,
            held_rpcs: 1000,
            ..idle
        };
        assert_eq!(
            oss_load_report(&over, 1_000_000_000),
            ServerLoad {
                cpu_util: 1.0,
                mem_util: 1.0
            }
        );
        // A zero period or capacity reports no CPU load rather than dividing by zero.
        assert_eq!(oss_load_report(&half, 0).cpu_util, 0.0);
    }
}
