//! What one run contributes to the bakeoff: a [`RunRecord`] (kept in the run file) and its
//! metric row ([`run_metrics`], computed with the solo runs' times).
//!
//! Reused, not recomputed: throughput, Jain's index, weighted Jain, share deviation, vPFS
//! unfairness, OSTCost, control writes and synchronization traffic come from
//! `pfsqos_report::summarize`. Computed here: a job's *progress time* and *slowdown*, which need
//! the run alone.
//!
//! **Time of a job** (`time_s`): for a job with synchronous I/O phases (shape `phases`), its run
//! time, from the job's start to the end of its last completed phase (GIFT §4's application run
//! time, `PhasesSummary::run_time_s`); for any other job, its I/O time, from its first RPC
//! issued to its last RPC completed (`JobSummary::io_time_s`). **Progress** is the bytes the job
//! moved in that time (for a phased job: the bytes of its completed phases).
//!
//! **Slowdown** = (progress / time alone) / (progress / time shared). When the job finished
//! the same work in both runs this is exactly time shared / time alone; for a job the run's
//! duration cuts (a streamer that never finishes) it compares rates instead of two equal
//! durations, which would always give 1. A job that made no progress in the shared run but did
//! alone is *starved*: it has no finite slowdown and is counted in `starved_jobs`.

use pfsqos_core::run::RunOutput;
use pfsqos_report::summarize;
use serde::{Deserialize, Serialize};

/// Points kept per job of the throughput-over-time series in a run file (bins are merged).
pub const SERIES_POINTS_MAX: usize = 150;

/// One job of a finished run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub job_id: String,
    pub weight: u32,
    pub bytes: u64,
    /// `JobSummary::throughput_mib_s`: bytes over first-issue-to-last-completion.
    pub throughput_mib_s: f64,
    /// I/O time: the sum of the completed phases' durations for a phased job (GIFT §4),
    /// first RPC to last completion otherwise.
    pub io_time_s: f64,
    /// The job's time (module doc).
    pub time_s: f64,
    /// Bytes moved in `time_s` (module doc).
    pub progress_bytes: u64,
    pub finished: bool,
    /// MiB/s per merged bin (width `RunRecord::series_step_s`), from time 0.
    pub series_mib_s: Vec<f64>,
}

impl JobRecord {
    /// Progress rate, bytes per second; `None` without progress.
    pub fn progress_rate(&self) -> Option<f64> {
        (self.progress_bytes > 0 && self.time_s > 0.0)
            .then(|| self.progress_bytes as f64 / self.time_s)
    }
}

/// Everything the bakeoff keeps of one finished run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub scenario: String,
    pub sim_time_s: f64,
    pub total_bytes: u64,
    pub aggregate_mib_s: f64,
    pub jain: f64,
    /// Weighted Jain's index and share deviation of the bytes moved while every job was active;
    /// `None` when no such window exists (jobs that never all overlap): over the whole run they
    /// would compare the bytes the workload fixes, the same for every design that finishes it.
    pub weighted_jain: Option<f64>,
    pub share_deviation: Option<f64>,
    pub unfairness_5s_mean: Option<f64>,
    pub unfairness_60s_mean: Option<f64>,
    pub ost_cost: Option<f64>,
    pub control_writes: u64,
    pub rejected_control_writes: u64,
    pub sync_messages_in: u64,
    pub sync_bytes_in: u64,
    pub rpcs: u64,
    pub events: u64,
    pub series_step_s: f64,
    pub jobs: Vec<JobRecord>,
}

impl RunRecord {
    /// The record of a run, its numbers from `pfsqos_report::summarize`.
    pub fn from_run(run: &RunOutput) -> RunRecord {
        let summary = summarize(run);
        assert_eq!(summary.jobs.len(), run.jobs.len(), "one summary per job");
        let all_active = summary.fairness_window.basis == pfsqos_report::WindowBasis::AllJobsActive;
        let bins = run
            .jobs
            .iter()
            .map(|j| j.bytes_per_ost_bin.bins())
            .max()
            .unwrap_or(0)
            .max(if run.bin_ns == 0 {
                0
            } else {
                usize::try_from(run.end_ns.div_ceil(run.bin_ns)).unwrap_or(0)
            })
            .min(pfsqos_report::BINS_MAX);
        let merge = bins.div_ceil(SERIES_POINTS_MAX).max(1);
        let step_s = run.bin_ns as f64 * merge as f64 / 1e9;
        let jobs = run
            .jobs
            .iter()
            .zip(&summary.jobs)
            .map(|(job, js)| {
                let per_bin = job.bytes_per_bin();
                let series_mib_s = (0..bins.div_ceil(merge))
                    .map(|k| {
                        let bytes: u64 = per_bin.iter().skip(k * merge).take(merge).sum();
                        if step_s > 0.0 {
                            bytes as f64 / (1u64 << 20) as f64 / step_s
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let (io_time_s, time_s, progress_bytes) = match (&job.phases, &js.phases) {
                    (Some(p), Some(ps)) => (
                        ps.io_time_s,
                        ps.run_time_s,
                        p.done.iter().map(|r| r.bytes).sum(),
                    ),
                    _ => (js.io_time_s, js.io_time_s, js.bytes),
                };
                JobRecord {
                    job_id: js.job_id.clone(),
                    weight: js.weight,
                    bytes: js.bytes,
                    throughput_mib_s: js.throughput_mib_s,
                    io_time_s,
                    time_s,
                    progress_bytes,
                    finished: js.finished,
                    series_mib_s,
                }
            })
            .collect();
        RunRecord {
            scenario: summary.scenario.clone(),
            sim_time_s: summary.sim_time_s,
            total_bytes: summary.total_bytes,
            aggregate_mib_s: summary.aggregate_throughput_mib_s,
            jain: summary.jain_index,
            weighted_jain: all_active.then_some(summary.weighted_jain_index),
            share_deviation: all_active.then_some(summary.share_deviation),
            unfairness_5s_mean: summary.unfairness_5s.mean,
            unfairness_60s_mean: summary.unfairness_60s.mean,
            ost_cost: summary.ost_cost,
            control_writes: summary.control_writes,
            rejected_control_writes: summary.rejected_control_writes,
            sync_messages_in: summary.sync.iter().map(|s| s.counters.messages_in).sum(),
            sync_bytes_in: summary.sync.iter().map(|s| s.counters.bytes_in).sum(),
            rpcs: summary.engine.rpcs,
            events: summary.engine.events,
            series_step_s: step_s,
            jobs,
        }
    }
}

/// Metric families, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Throughput,
    Fairness,
    AppTime,
    Balance,
    Cost,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Throughput,
        Family::Fairness,
        Family::AppTime,
        Family::Balance,
        Family::Cost,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Family::Throughput => "Throughput",
            Family::Fairness => "Fairness",
            Family::AppTime => "Application time",
            Family::Balance => "Balance",
            Family::Cost => "Cost",
        }
    }
}

/// Which way is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// One metric of the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MetricDef {
    pub key: &'static str,
    pub family: Family,
    pub label: &'static str,
    pub unit: &'static str,
    pub better: Better,
    /// The metric compares designs only where every run of the workload has it: a value that
    /// exists for some runs only because the design made the jobs overlap (the weighted
    /// fairness metrics' all-jobs-active window) is not comparable with the others.
    pub needs_every_run: bool,
}

const fn m(
    key: &'static str,
    family: Family,
    label: &'static str,
    unit: &'static str,
    better: Better,
) -> MetricDef {
    MetricDef {
        key,
        family,
        label,
        unit,
        better,
        needs_every_run: false,
    }
}

/// [`m`] for a metric that needs every run of the workload ([`MetricDef::needs_every_run`]).
const fn m_every_run(
    key: &'static str,
    family: Family,
    label: &'static str,
    unit: &'static str,
    better: Better,
) -> MetricDef {
    MetricDef {
        needs_every_run: true,
        ..m(key, family, label, unit, better)
    }
}

/// The metric row of a run, in column order of `bakeoff.csv`.
pub const METRICS: &[MetricDef] = &[
    m(
        "aggregate_mib_s",
        Family::Throughput,
        "aggregate throughput",
        "MiB/s",
        Better::Higher,
    ),
    m(
        "mean_job_mib_s",
        Family::Throughput,
        "mean per-job throughput",
        "MiB/s",
        Better::Higher,
    ),
    m(
        "min_job_mib_s",
        Family::Throughput,
        "slowest job's throughput",
        "MiB/s",
        Better::Higher,
    ),
    m("jain", Family::Fairness, "Jain's index", "", Better::Higher),
    m_every_run(
        "weighted_jain",
        Family::Fairness,
        "weighted Jain's index",
        "",
        Better::Higher,
    ),
    m_every_run(
        "share_deviation",
        Family::Fairness,
        "weighted share deviation",
        "",
        Better::Lower,
    ),
    m(
        "unfairness_5s",
        Family::Fairness,
        "vPFS unfairness (5 s windows, mean)",
        "",
        Better::Lower,
    ),
    m(
        "io_time_mean_s",
        Family::AppTime,
        "mean I/O time",
        "s",
        Better::Lower,
    ),
    m(
        "run_time_mean_s",
        Family::AppTime,
        "mean job time",
        "s",
        Better::Lower,
    ),
    m(
        "slowdown_mean",
        Family::AppTime,
        "mean slowdown",
        "x",
        Better::Lower,
    ),
    m(
        "slowdown_p95",
        Family::AppTime,
        "tail slowdown (p95 over jobs)",
        "x",
        Better::Lower,
    ),
    m(
        "slowdown_max",
        Family::AppTime,
        "worst slowdown",
        "x",
        Better::Lower,
    ),
    m(
        "starved_jobs",
        Family::AppTime,
        "starved jobs",
        "",
        Better::Lower,
    ),
    m(
        "ost_cost",
        Family::Balance,
        "OSTCost (iez eq. 7)",
        "",
        Better::Lower,
    ),
    m(
        "control_writes_per_s",
        Family::Cost,
        "control writes per second",
        "1/s",
        Better::Lower,
    ),
    m(
        "rejected_control_writes",
        Family::Cost,
        "rejected control writes",
        "",
        Better::Lower,
    ),
    m(
        "sync_messages_per_s",
        Family::Cost,
        "sync messages per second",
        "1/s",
        Better::Lower,
    ),
    m(
        "sync_bytes_per_s",
        Family::Cost,
        "sync bytes per second",
        "B/s",
        Better::Lower,
    ),
];

/// Index of a metric in [`METRICS`].
pub fn metric_index(key: &str) -> usize {
    METRICS
        .iter()
        .position(|d| d.key == key)
        .unwrap_or_else(|| panic!("no metric `{key}`"))
}

/// The nearest-rank p-quantile (`0 < p <= 1`) of `values`; `None` when empty.
pub fn quantile_nearest_rank(values: &[f64], p: f64) -> Option<f64> {
    assert!(p > 0.0 && p <= 1.0, "quantile {p} outside (0, 1]");
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Per-job slowdowns of `run` against `alone` (the solo record of each job, in job order;
/// `None` where the solo run is missing): `Some(x)` finite, `None` without a comparison.
pub fn slowdowns(run: &RunRecord, alone: &[Option<JobRecord>]) -> Vec<Option<f64>> {
    run.jobs
        .iter()
        .enumerate()
        .map(|(i, job)| {
            let alone_rate = alone.get(i)?.as_ref()?.progress_rate()?;
            let shared_rate = job.progress_rate()?;
            Some(alone_rate / shared_rate)
        })
        .collect()
}

/// The metric row of one run (values aligned with [`METRICS`]).
pub fn run_metrics(run: &RunRecord, alone: &[Option<JobRecord>]) -> Vec<Option<f64>> {
    let per_s = |n: u64| (run.sim_time_s > 0.0).then(|| n as f64 / run.sim_time_s);
    let throughputs: Vec<f64> = run.jobs.iter().map(|j| j.throughput_mib_s).collect();
    let io_times: Vec<f64> = run.jobs.iter().map(|j| j.io_time_s).collect();
    let times: Vec<f64> = run.jobs.iter().map(|j| j.time_s).collect();
    let slow = slowdowns(run, alone);
    let finite: Vec<f64> = slow.iter().flatten().copied().collect();
    let starved = run
        .jobs
        .iter()
        .enumerate()
        .filter(|(i, j)| {
            j.progress_rate().is_none()
                && alone
                    .get(*i)
                    .and_then(|a| a.as_ref())
                    .and_then(JobRecord::progress_rate)
                    .is_some()
        })
        .count();
    let values: Vec<(&str, Option<f64>)> = vec![
        ("aggregate_mib_s", Some(run.aggregate_mib_s)),
        ("mean_job_mib_s", mean(&throughputs)),
        (
            "min_job_mib_s",
            throughputs.iter().copied().reduce(f64::min),
        ),
        ("jain", Some(run.jain)),
        ("weighted_jain", run.weighted_jain),
        ("share_deviation", run.share_deviation),
        ("unfairness_5s", run.unfairness_5s_mean),
        ("io_time_mean_s", mean(&io_times)),
        ("run_time_mean_s", mean(&times)),
        ("slowdown_mean", mean(&finite)),
        ("slowdown_p95", quantile_nearest_rank(&finite, 0.95)),
        ("slowdown_max", finite.iter().copied().reduce(f64::max)),
        ("starved_jobs", Some(starved as f64)),
        ("ost_cost", run.ost_cost),
        ("control_writes_per_s", per_s(run.control_writes)),
        (
            "rejected_control_writes",
            Some(run.rejected_control_writes as f64),
        ),
        ("sync_messages_per_s", per_s(run.sync_messages_in)),
        ("sync_bytes_per_s", per_s(run.sync_bytes_in)),
    ];
    assert_eq!(values.len(), METRICS.len());
    values
        .into_iter()
        .zip(METRICS)
        .map(|((key, v), def)| {
            assert_eq!(key, def.key, "metric row order");
            v.filter(|x| x.is_finite())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, bytes: u64, time_s: f64) -> JobRecord {
        JobRecord {
            job_id: id.into(),
            weight: 1,
            bytes,
            throughput_mib_s: bytes as f64 / time_s / (1u64 << 20) as f64,
            io_time_s: time_s,
            time_s,
            progress_bytes: bytes,
            finished: true,
            series_mib_s: vec![],
        }
    }

    #[test]
    fn nearest_rank_quantile() {
        assert_eq!(quantile_nearest_rank(&[], 0.95), None);
        assert_eq!(quantile_nearest_rank(&[3.0], 0.95), Some(3.0));
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(quantile_nearest_rank(&v, 0.95), Some(19.0));
        assert_eq!(quantile_nearest_rank(&v, 1.0), Some(20.0));
    }

    #[test]
    fn slowdown_is_time_ratio_for_the_same_work_and_rate_ratio_otherwise() {
        let shared = job("a", 100, 4.0);
        let alone = job("a", 100, 2.0);
        let run = RunRecord {
            scenario: "s".into(),
            sim_time_s: 10.0,
            total_bytes: 100,
            aggregate_mib_s: 1.0,
            jain: 1.0,
            weighted_jain: Some(1.0),
            share_deviation: Some(0.0),
            unfairness_5s_mean: None,
            unfairness_60s_mean: None,
            ost_cost: None,
            control_writes: 5,
            rejected_control_writes: 0,
            sync_messages_in: 0,
            sync_bytes_in: 0,
            rpcs: 1,
            events: 1,
            series_step_s: 1.0,
            jobs: vec![shared, job("b", 0, 0.0)],
        };
        let s = slowdowns(&run, &[Some(alone.clone()), Some(job("b", 10, 1.0))]);
        assert_eq!(s, vec![Some(2.0), None]);
        let row = run_metrics(&run, &[Some(alone), Some(job("b", 10, 1.0))]);
        assert_eq!(row[metric_index("slowdown_max")], Some(2.0));
        assert_eq!(row[metric_index("starved_jobs")], Some(1.0));
        assert_eq!(row[metric_index("control_writes_per_s")], Some(0.5));
        assert_eq!(row[metric_index("ost_cost")], None);
        // Cut by the duration: the same 4 s, half the bytes shared, slowdown 2.
        let mut cut = job("a", 50, 4.0);
        cut.finished = false;
        let run2 = RunRecord {
            jobs: vec![cut],
            ..run
        };
        assert_eq!(
            slowdowns(&run2, &[Some(job("a", 100, 4.0))]),
            vec![Some(2.0)]
        );
    }
}
