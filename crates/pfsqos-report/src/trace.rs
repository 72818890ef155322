//! The controller's internal state over time: `control_trace.csv` and the per-job sums the
//! report charts (AdapTBF's Fig. 7: record and demand per job over time).
//!
//! Nothing here knows a controller: every distinct `metric` name gets a chart, in the order the
//! names first appear, titled from [`KNOWN_METRICS`] or by the raw name. A new controller that
//! reports samples gets charts without touching this crate.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pfsqos_core::run::RunOutput;

use crate::fmt_seconds;
use crate::timeseries::{csv_field, ost_name};

pub const TRACE_CSV_HEADER: &str = "time_s,ost,job_id,metric,value";
/// Distinct metric names charted per run; the CSV keeps all of them.
pub const TRACE_METRICS_MAX: usize = 16;

/// Chart title and y label of the metrics controllers are known to report.
pub const KNOWN_METRICS: &[(&str, &str, &str)] = &[
    (
        "record_tokens",
        "Record (tokens lent +, borrowed −)",
        "Tokens",
    ),
    ("demand_rpcs", "Demand (RPCs per period)", "RPCs per period"),
    ("tokens", "Tokens allocated per period", "Tokens per period"),
];

/// `(title, y label)` of a metric: from [`KNOWN_METRICS`], else the raw name for both.
pub(crate) fn metric_labels(metric: &str) -> (&str, &str) {
    KNOWN_METRICS
        .iter()
        .find(|(name, _, _)| *name == metric)
        .map_or((metric, metric), |&(_, title, y_label)| (title, y_label))
}

/// Shortest text that reads back to the same `f64` (Rust's `Display`), so the CSV loses nothing
/// and is the same on every machine. Integral values print without a decimal point.
fn fmt_value(value: f64) -> String {
    format!("{value}")
}

/// `control_trace.csv`: one row per trace sample, in the order the run recorded them (control
/// steps in time order; within a step, the controller's own order). Empty text (not even a
/// header) for a run without a trace, so callers can skip the file.
pub fn control_trace_csv(run: &RunOutput) -> String {
    if run.control_trace.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(48 * (run.control_trace.len() + 1));
    out.push_str(TRACE_CSV_HEADER);
    out.push('\n');
    for entry in &run.control_trace {
        let s = &entry.sample;
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            fmt_seconds(entry.time_ns),
            csv_field(&ost_name(run, s.ost.0 as usize)),
            csv_field(s.job.as_str()),
            csv_field(s.metric),
            fmt_value(s.value)
        );
    }
    out
}

/// One charted metric: per job, points `(time_s, value summed over OSTs)`; `NaN` where the
/// controller reported nothing for the job (a gap in the line).
pub(crate) struct MetricLines<'a> {
    pub metric: &'a str,
    pub lines: Vec<Vec<(f64, f64)>>,
}

/// The trace of a run arranged for charts.
pub(crate) struct TraceCharts<'a> {
    /// Job names in colour order: the run's jobs (same colours as the throughput charts), then
    /// jobs that only the trace names, in order of first appearance.
    pub jobs: Vec<&'a str>,
    /// Per entry of `jobs`: a series of one OST (samples without a job: a controller's own
    /// per-OST state, PI's queue and limit), drawn per OST instead of summed.
    pub is_ost: Vec<bool>,
    pub metrics: Vec<MetricLines<'a>>,
    /// Metric names beyond [`TRACE_METRICS_MAX`], not charted.
    pub metrics_dropped: usize,
    /// Control steps merged into one point (mean), as long runs' throughput bins are.
    pub merge: usize,
    pub steps: usize,
}

/// Sums each (metric, job, step) over OSTs, then merges steps so that no line has more than
/// `points_max` points. `None` for a run without a trace.
pub(crate) fn trace_charts(run: &RunOutput, points_max: usize) -> Option<TraceCharts<'_>> {
    if run.control_trace.is_empty() {
        return None;
    }
    let mut times: Vec<u64> = run.control_trace.iter().map(|e| e.time_ns).collect();
    times.sort_unstable();
    times.dedup();

    let mut jobs: Vec<&str> = run.jobs.iter().map(|j| j.job_id.as_str()).collect();
    let mut is_ost: Vec<bool> = vec![false; jobs.len()];
    let mut metrics: Vec<&str> = Vec::new();
    let mut metrics_dropped: Vec<&str> = Vec::new();
    // Sparse on purpose: a job is in few steps of a long run; a dense metric x job x step table
    // could be far larger than the trace itself.
    let mut sums: BTreeMap<(usize, usize, usize), f64> = BTreeMap::new();
    for entry in &run.control_trace {
        let s = &entry.sample;
        let m = match metrics.iter().position(|&m| m == s.metric) {
            Some(m) => m,
            None if metrics.len() < TRACE_METRICS_MAX => {
                metrics.push(s.metric);
                metrics.len() - 1
            }
            None => {
                if !metrics_dropped.contains(&s.metric) {
                    metrics_dropped.push(s.metric);
                }
                continue;
            }
        };
        // A sample without a job is the OST's own: its series is the OST's.
        let ost_series = s.job.as_str().is_empty();
        let job = if ost_series {
            run.osts
                .get(s.ost.0 as usize)
                .map_or("(unknown OST)", String::as_str)
        } else {
            s.job.as_str()
        };
        let j = (0..jobs.len())
            .find(|&i| jobs[i] == job && is_ost[i] == ost_series)
            .unwrap_or_else(|| {
                jobs.push(job);
                is_ost.push(ost_series);
                jobs.len() - 1
            });
        // `times` holds every entry's time.
        let step = times.binary_search(&entry.time_ns).unwrap_or(0);
        *sums.entry((m, j, step)).or_insert(0.0) += s.value;
    }

    let merge = times.len().div_ceil(points_max.max(1)).max(1);
    let groups = times.len().div_ceil(merge);
    let group_x: Vec<f64> = (0..groups)
        .map(|g| {
            let first = times[g * merge];
            let last = times[((g + 1) * merge).min(times.len()) - 1];
            (first as f64 + (last - first) as f64 / 2.0) / 1e9
        })
        .collect();

    let mut charted: Vec<MetricLines<'_>> = metrics
        .iter()
        .map(|&metric| MetricLines {
            metric,
            lines: vec![Vec::new(); jobs.len()],
        })
        .collect();
    // Per (metric, job): the mean over the steps of each group in which the job was reported.
    let mut acc: BTreeMap<(usize, usize, usize), (f64, u32)> = BTreeMap::new();
    for (&(m, j, step), &value) in &sums {
        let cell = acc.entry((m, j, step / merge)).or_insert((0.0, 0));
        cell.0 += value;
        cell.1 += 1;
    }
    for (m, chart) in charted.iter_mut().enumerate() {
        for (j, line) in chart.lines.iter_mut().enumerate() {
            let reported: Vec<(usize, f64)> = acc
                .range((m, j, 0)..=(m, j, usize::MAX))
                .map(|(&(_, _, g), &(sum, n))| (g, sum / f64::from(n)))
                .collect();
            let (Some(&(first, _)), Some(&(last, _))) = (reported.first(), reported.last()) else {
                continue;
            };
            // From the job's first report to its last, with gaps where it was not reported.
            *line = (first..=last).map(|g| (group_x[g], f64::NAN)).collect();
            for (g, value) in reported {
                line[g - first].1 = value;
            }
        }
    }
    Some(TraceCharts {
        jobs,
        is_ost,
        metrics: charted,
        metrics_dropped: metrics_dropped.len(),
        merge,
        steps: times.len(),
    })
}

#[cfg(test)]
mod tests {
    use pfsqos_core::control::TraceSample;
    use pfsqos_core::model::{JobId, OstId};
    use pfsqos_core::run::{ControlTraceEntry, EngineStats, JobOutput, RunOutput};
    use proptest::prelude::*;

    use super::*;

    const S: u64 = 1_000_000_000;

    fn run(jobs: &[&str], trace: Vec<(u64, u32, &str, &'static str, f64)>) -> RunOutput {
        RunOutput {
            scenario_name: "t".to_string(),
            policy: "adaptbf".to_string(),
            seed: 0,
            bin_ns: S / 10,
            end_ns: 10 * S,
            osts: vec!["OST0000".to_string(), "OST0001".to_string()],
            jobs: jobs
                .iter()
                .map(|id| JobOutput {
                    job_id: id.to_string(),
                    node_count: 1,
                    weight: 1,
                    bytes_read: 0,
                    bytes_written: 0,
                    rpcs: 0,
                    first_io_ns: None,
                    last_io_ns: None,
                    finished: true,
                    bytes_per_ost_bin: Default::default(),
                    phases: None,
                })
                .collect(),
            control_log: Vec::new(),
            control_trace: trace
                .into_iter()
                .map(|(time_ns, ost, job, metric, value)| ControlTraceEntry {
                    time_ns,
                    sample: TraceSample {
                        ost: OstId(ost),
                        job: JobId::new(job).unwrap(),
                        metric,
                        value,
                    },
                })
                .collect(),
            control_trace_truncated: false,
            engine: EngineStats::default(),
            regret: None,
            allocation: None,
            sync: Vec::new(),
            ost_space: Vec::new(),
        }
    }

    fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
        points.iter().copied().filter(|p| p.1.is_finite()).collect()
    }

    #[test]
    fn sums_over_osts_with_gaps_where_a_job_is_not_reported() {
        let r = run(
            &["A", "B"],
            vec![
                (S, 0, "A", "demand_rpcs", 10.0),
                (S, 1, "A", "demand_rpcs", 5.0),
                (2 * S, 0, "B", "demand_rpcs", 7.0),
                (3 * S, 1, "A", "demand_rpcs", 1.0),
                (3 * S, 0, "X", "demand_rpcs", 4.0),
            ],
        );
        let c = trace_charts(&r, 100).unwrap();
        // X is not a job of the run: it comes after them, keeping their colours.
        assert_eq!(c.jobs, ["A", "B", "X"]);
        assert_eq!((c.steps, c.merge, c.metrics.len()), (3, 1, 1));
        let lines = &c.metrics[0].lines;
        assert_eq!(lines[0][0], (1.0, 15.0));
        assert!(lines[0][1].1.is_nan(), "A was not reported at 2 s");
        assert_eq!(lines[0][2], (3.0, 1.0));
        // A line spans only the job's own reports.
        assert_eq!(lines[1], [(2.0, 7.0)]);
        assert_eq!(lines[2], [(3.0, 4.0)]);
        assert!(trace_charts(&run(&["A"], vec![]), 100).is_none());
    }

    #[test]
    fn samples_without_a_job_are_drawn_per_ost() {
        let r = run(
            &["A"],
            vec![
                (S, 0, "", "queue_measured", 79.0),
                (S, 1, "", "queue_measured", 81.0),
                (2 * S, 0, "", "queue_measured", 80.0),
            ],
        );
        let c = trace_charts(&r, 100).unwrap();
        assert_eq!(c.jobs, ["A", "OST0000", "OST0001"]);
        assert_eq!(c.is_ost, [false, true, true]);
        assert!(c.metrics[0].lines[0].is_empty(), "job A has no samples");
        assert_eq!(c.metrics[0].lines[1], [(1.0, 79.0), (2.0, 80.0)]);
        assert_eq!(c.metrics[0].lines[2], [(1.0, 81.0)]);
    }

    #[test]
    fn merged_points_are_means_over_reported_steps() {
        let r = run(
            &["A"],
            vec![
                (S, 0, "A", "tokens", 2.0),
                (2 * S, 0, "A", "tokens", 4.0),
                (2 * S, 1, "A", "tokens", 2.0),
                (4 * S, 0, "A", "tokens", 9.0),
                (3 * S, 0, "A", "tokens", 1.0),
            ],
        );
        let c = trace_charts(&r, 2).unwrap();
        assert_eq!((c.steps, c.merge), (4, 2));
        // Steps 1-2 s: (2 + 6) / 2; steps 3-4 s: (1 + 9) / 2, placed mid-group.
        assert_eq!(c.metrics[0].lines[0], [(1.5, 4.0), (3.5, 5.0)]);
    }

    #[test]
    fn known_metric_titles_and_fallback() {
        assert_eq!(
            metric_labels("record_tokens").0,
            "Record (tokens lent +, borrowed −)"
        );
        assert_eq!(metric_labels("weird"), ("weird", "weird"));
    }

    proptest! {
        /// Without merging, the charted values of each (metric, job) add up to the trace's.
        #[test]
        fn charted_sums_match_the_trace(
            samples in prop::collection::vec(
                (0u64..30, 0u32..3, 0usize..3, 0usize..2, -1000i32..1000),
                1..80,
            )
        ) {
            const JOBS: [&str; 3] = ["a", "b", "c"];
            const METRICS: [&str; 2] = ["tokens", "record_tokens"];
            let trace = samples
                .iter()
                .map(|&(t, ost, j, m, v)| (t * S / 10, ost, JOBS[j], METRICS[m], f64::from(v)))
                .collect();
            let r = run(&["a", "b"], trace);
            let c = trace_charts(&r, 1000).unwrap();
            prop_assert_eq!(c.merge, 1);
            for chart in &c.metrics {
                for (j, line) in c.jobs.iter().zip(&chart.lines) {
                    let expected: f64 = samples
                        .iter()
                        .filter(|s| JOBS[s.2] == *j && METRICS[s.3] == chart.metric)
                        .map(|s| f64::from(s.4))
                        .sum();
                    let got: f64 = finite(line).iter().map(|p| p.1).sum();
                    prop_assert_eq!(got, expected);
                    prop_assert!(line.windows(2).all(|w| w[0].0 < w[1].0));
                }
            }
            let csv = control_trace_csv(&r);
            prop_assert_eq!(csv.lines().count(), samples.len() + 1);
        }
    }
}
