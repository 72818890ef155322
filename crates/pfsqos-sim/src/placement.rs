//! The MDS's placer for a simulated run, set up the way a site runs it: the scenario's
//! `placement` policy, given the servers' space when the run starts (the statistics snapshot
//! iez's OSSs publish every 60 s, Lustre's allocator's `statfs`), and, for a placer that plans
//! from forecasts (iez), each job's files predicted from the job's first run.
//!
//! **The first run.** iez's miniRecorder traces an application's first run (per file: bytes
//! written, stripe count, rank; iez.txt §III-A1) and AIPA forecasts the next run from it. A
//! scenario's jobs write exactly what their process groups say, so the first run's trace is
//! derived from the scenario (files in creation order: a shared file holds `numjobs × size`,
//! a per-process file `size`) instead of simulated twice; the forecast
//! ([`pfsqos_core::place::profile::predict_files`]) then runs on it as on a recorded trace.
//!
//! Files are created at set-up, before any I/O, so the snapshot is the start's: OST sizes and
//! fills from `ost_capacity` / `ost_used`, OSS CPU and memory idle (the simulator has no CPU
//! model). iez's 60 s staleness does not arise: no statistics period passes before the creates.

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
