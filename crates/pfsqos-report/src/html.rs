//! `report.html`: one self-contained page (inline CSS and SVG, no scripts, nothing fetched).

use std::fmt::Write as _;

use pfsqos_core::run::RunOutput;

use crate::multiples::{cdf_chart, small_multiples, Panel, PanelLine};
use crate::scale::{
    drawn_jobs, heatmaps, human_duration, relative_slowdowns, time_unit, top_jobs, verdicts,
    JOBS_DRAWN_MAX, JOB_ROWS_MAX,
};
use crate::summary::{summarize, RunSummary, WindowBasis};
use crate::svg::{bar_chart, design_color_of, job_color, line_chart, Bar, BarGroup, Series};
use crate::trace::{metric_labels, trace_charts};
use crate::{bin_count, escape, ns_to_s, ScenarioText, BYTES_PER_MIB};

/// Where the runs of a page come from: a live run has no seed and no simulator events, so its
/// page does not show them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    Simulated,
    Live,
}

/// Points drawn per line; longer runs merge neighbouring bins (mean throughput) so the page
/// stays light and a browser draws it at once.
pub const POINTS_PER_LINE_MAX: usize = 1500;
/// Rejected control writes listed per policy in the page; the count is always exact.
pub const REJECTED_SHOWN_MAX: usize = 100;

/// The report pages' stylesheet, for other pages in the same look (the bakeoff report).
pub const STYLE: &str = "\
:root{color-scheme:light}\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;\
color:#111827;background:#F9FAFB;margin:0;line-height:1.45}\
main{max-width:1000px;margin:0 auto;padding:24px 20px 48px}\
h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 10px;border-bottom:1px solid #E5E7EB;padding-bottom:4px}\
h3{font-size:15px;margin:18px 0 6px}\
p.desc{color:#374151;margin:4px 0 12px;white-space:pre-wrap}\
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0;font-size:14px}\
dl.meta dt{color:#6B7280}dl.meta dd{margin:0}\
table{border-collapse:collapse;font-size:13px;background:#FFFFFF;margin:6px 0 4px}\
th,td{border:1px solid #E5E7EB;padding:5px 9px}th{background:#F3F4F6;font-weight:600;text-align:center}\
td.num{text-align:right;font-variant-numeric:tabular-nums}td.name{text-align:left;white-space:nowrap}\
tbody tr:nth-child(even) td{background:#FAFAFB}\
.scroll{overflow-x:auto}\
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;vertical-align:baseline}\
figure{margin:12px 0 20px;background:#FFFFFF;border:1px solid #E5E7EB;border-radius:6px;padding:8px}\
figcaption{font-size:13px;color:#4B5563;margin:4px 6px}\
svg.chart{max-width:100%;height:auto;display:block}\
.note{font-size:13px;color:#4B5563}\
ul.rejected{font-size:13px;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}\
footer{margin-top:40px;font-size:12px;color:#6B7280}";

/// A design's swatch: its colour depends on its name only, the same in every report.
fn policy_swatch(policy: &str) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        design_color_of(policy)
    )
}

fn mib(v: f64) -> String {
    format!("{v:.1}")
}

/// Per-bin throughput of every job, merged into at most [`POINTS_PER_LINE_MAX`] points.
fn throughput_series(run: &RunOutput) -> (f64, Vec<Vec<(f64, f64)>>, usize) {
    let bins = bin_count(run);
    let bin_s = ns_to_s(run.bin_ns);
    let merge = bins.div_ceil(POINTS_PER_LINE_MAX).max(1);
    let x_max = bins as f64 * bin_s;
    let lines = run
        .jobs
        .iter()
        .map(|job| {
            let per_bin = job.bytes_per_bin();
            // A line starts where the job starts, as in the papers' figures; zeros before it
            // would only pile up on the x axis.
            let first_bin = job.first_io_ns.map_or(bins, |t| {
                usize::try_from(t / run.bin_ns.max(1)).unwrap_or(usize::MAX)
            });
            (first_bin.min(bins) / merge..bins.div_ceil(merge))
                .map(|p| {
                    let first = p * merge;
                    let last = (first + merge).min(bins);
                    let bytes: u64 = (first..last)
                        .map(|b| per_bin.get(b).copied().unwrap_or(0))
                        .sum();
                    let width_s = (last - first) as f64 * bin_s;
                    let x = (first as f64 + (last - first) as f64 / 2.0) * bin_s;
                    let y = if width_s > 0.0 {
                        bytes as f64 / BYTES_PER_MIB / width_s
                    } else {
                        0.0
                    };
                    (x, y)
                })
                .collect()
        })
        .collect();
    (x_max, lines, merge)
}

fn header(
    out: &mut String,
    runs: &[RunOutput],
    description: &str,
    summaries: &[RunSummary],
    source: Source,
) {
    let first = &runs[0];
    let _ = writeln!(
        out,
        "<header><h1>{}</h1>",
        escape(&format!("pfsqos report: {}", first.scenario_name))
    );
    if !description.trim().is_empty() {
        let _ = writeln!(out, "<p class=\"desc\">{}</p>", escape(description.trim()));
    }
    let policies: Vec<String> = runs.iter().map(|r| escape(&r.policy)).collect();
    // Hundreds of jobs would make the header a wall of names: list the first ones and count.
    let mut jobs: Vec<String> = first
        .jobs
        .iter()
        .take(JOBS_DRAWN_MAX)
        .map(|j| format!("{} ({} nodes)", escape(&j.job_id), j.node_count))
        .collect();
    if first.jobs.len() > JOBS_DRAWN_MAX {
        jobs.push(format!(
            "… {} jobs in all (see summary.json)",
            first.jobs.len()
        ));
    }
    let (seed, time_name) = match source {
        Source::Simulated => (
            format!("<dt>Seed</dt><dd>{}</dd>", first.seed),
            "Simulated time",
        ),
        Source::Live => (String::new(), "Recorded time"),
    };
    let _ = writeln!(
        out,
        "<dl class=\"meta\"><dt>Scenario</dt><dd>{}</dd>{seed}\
         <dt>Policies</dt><dd>{}</dd><dt>{time_name}</dt><dd>{}</dd>\
         <dt>Bin width</dt><dd>{} ms</dd><dt>OSTs</dt><dd>{}</dd><dt>Jobs</dt><dd>{}</dd></dl></header>",
        escape(&first.scenario_name),
        policies.join(", "),
        summaries
            .iter()
            .map(|s| format!("{}: {}", escape(&s.policy), human_duration(s.sim_time_s)))
            .collect::<Vec<_>>()
            .join(", "),
        first.bin_ns as f64 / 1e6,
        first.osts.len(),
        jobs.join(", ")
    );
}

fn system_table(out: &mut String, summaries: &[RunSummary], source: Source) {
    out.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>Policy</th><th>Aggregate MiB/s</th>\
         <th>Jain</th><th>Weighted Jain</th><th>Share deviation</th><th>Fairness window</th>\
         <th>Control writes</th><th>Rejected</th>",
    );
    if source == Source::Simulated {
        out.push_str("<th>Events</th><th>RPCs</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for s in summaries {
        let window = match s.fairness_window.basis {
            WindowBasis::AllJobsActive => format!(
                "{:.1}–{:.1} s",
                s.fairness_window.start_s, s.fairness_window.end_s
            ),
            WindowBasis::WholeRun => "whole run".to_string(),
        };
        let engine = match source {
            Source::Simulated => format!(
                "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
                s.engine.events, s.engine.rpcs
            ),
            Source::Live => String::new(),
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"name\">{}{}</td><td class=\"num\">{}</td><td class=\"num\">{:.3}</td>\
             <td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td>{engine}</tr>",
            policy_swatch(&s.policy),
            escape(&s.policy),
            mib(s.aggregate_throughput_mib_s),
            s.jain_index,
            s.weighted_jain_index,
            s.share_deviation,
            window,
            s.control_writes,
            s.rejected_control_writes,
        );
    }
    out.push_str("</tbody></table></div>\n");
}

fn job_table(out: &mut String, summaries: &[RunSummary]) {
    out.push_str("<div class=\"scroll\"><table><thead><tr><th rowspan=\"2\">Job</th><th rowspan=\"2\">Nodes</th>");
    for s in summaries {
        let _ = write!(
            out,
            "<th colspan=\"3\">{}{}</th>",
            policy_swatch(&s.policy),
            escape(&s.policy)
        );
    }
    out.push_str("</tr><tr>");
    for _ in summaries {
        out.push_str("<th>MiB/s</th><th>I/O time</th><th>MiB/s active</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    let mut unfinished = false;
    let rows = top_jobs(summaries, JOB_ROWS_MAX);
    for job in rows.iter().map(|&i| &summaries[0].jobs[i]) {
        let _ = write!(
            out,
            "<tr><td class=\"name\">{}</td><td class=\"num\">{}</td>",
            escape(&job.job_id),
            job.nodes
        );
        for s in summaries {
            match s.jobs.iter().find(|j| j.job_id == job.job_id) {
                Some(j) => {
                    let mark = if j.finished { "" } else { "*" };
                    unfinished |= !j.finished;
                    let _ = write!(
                        out,
                        "<td class=\"num\">{}{mark}</td><td class=\"num\">{}</td>\
                         <td class=\"num\">{}</td>",
                        mib(j.throughput_mib_s),
                        human_duration(j.io_time_s),
                        mib(j.active_throughput_mib_s)
                    );
                }
                None => out.push_str(
                    "<td class=\"num\">–</td><td class=\"num\">–</td><td class=\"num\">–</td>",
                ),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if rows.len() < summaries[0].jobs.len() {
        let _ = writeln!(
            out,
            "<p class=\"note\">The {} jobs that moved the most bytes, in scenario order; all {} \
             are in summary.json.</p>",
            rows.len(),
            summaries[0].jobs.len()
        );
    }
    out.push_str(
        "<p class=\"note\">MiB/s is over the job's I/O time (first RPC issued to last \
         completed); MiB/s active is over the bins in which it completed bytes, which is what a \
         bursty job gets while it bursts.</p>\n",
    );
    if unfinished {
        out.push_str("<p class=\"note\">* the job had I/O left when the run ended.</p>\n");
    }
}

/// Jobs listed one by one in the phases table; a generated application set has hundreds, and
/// the means above already summarise them.
pub const PHASE_ROWS_MAX: usize = 200;

/// GIFT's application metrics (§4): one summary row per policy, then per-job I/O and run times,
/// only for runs whose jobs have synchronous I/O phases.
fn phases_section(out: &mut String, summaries: &[RunSummary]) {
    if summaries.iter().all(|s| s.mean_app_io_time_s.is_none()) {
        return;
    }
    out.push_str("<h2>Synchronous I/O phases</h2>\n");
    out.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>Policy</th>\
         <th>Mean application I/O time</th><th>Effective system MiB/s</th>\
         <th>Allocated effective BW (% of system)</th>\
         <th>The artifact's allocated effective BW (%)</th>\
         <th>Phases completed</th></tr></thead><tbody>\n",
    );
    for s in summaries {
        let phases: u32 = s
            .jobs
            .iter()
            .filter_map(|j| j.phases.as_ref().map(|p| p.phases_done))
            .sum();
        let _ = writeln!(
            out,
            "<tr><td class=\"name\">{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            policy_swatch(&s.policy),
            escape(&s.policy),
            s.mean_app_io_time_s.map_or("–".to_string(), human_duration),
            s.effective_system_mib_s.map_or("–".to_string(), mib),
            s.effective_bandwidth_allocated
                .map_or("–".to_string(), |f| format!("{:.2}", f * 100.0)),
            s.effective_bandwidth_allocated_artifact
                .map_or("–".to_string(), |f| format!("{:.2}", f * 100.0)),
            phases
        );
    }
    out.push_str("</tbody></table></div>\n");

    let phased: Vec<&str> = summaries[0]
        .jobs
        .iter()
        .filter(|j| j.phases.is_some())
        .map(|j| j.job_id.as_str())
        .collect();
    out.push_str("<div class=\"scroll\"><table><thead><tr><th rowspan=\"2\">Application</th>");
    for s in summaries {
        let _ = write!(
            out,
            "<th colspan=\"3\">{}{}</th>",
            policy_swatch(&s.policy),
            escape(&s.policy)
        );
    }
    out.push_str("</tr><tr>");
    for _ in summaries {
        out.push_str("<th>Phases</th><th>I/O time</th><th>Run time</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for job_id in phased.iter().take(PHASE_ROWS_MAX) {
        let _ = write!(out, "<tr><td class=\"name\">{}</td>", escape(job_id));
        for s in summaries {
            match s
                .jobs
                .iter()
                .find(|j| j.job_id == *job_id)
                .and_then(|j| j.phases.as_ref())
            {
                Some(p) => {
                    let _ = write!(
                        out,
                        "<td class=\"num\">{}</td><td class=\"num\">{}</td>\
                         <td class=\"num\">{}</td>",
                        p.phases_done,
                        human_duration(p.io_time_s),
                        human_duration(p.run_time_s)
                    );
                }
                None => out.push_str(
                    "<td class=\"num\">–</td><td class=\"num\">–</td><td class=\"num\">–</td>",
                ),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if phased.len() > PHASE_ROWS_MAX {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more applications are in summary.json.</p>",
            phased.len() - PHASE_ROWS_MAX
        );
    }
    out.push_str(
        "<p class=\"note\">An I/O phase lasts from the start of its I/O to the moment the \
         application's last process finishes its part (GIFT's synchronous progress). Effective \
         system bandwidth counts only the bytes that advanced a phase at the pace of its slowest \
         process.</p>\n",
    );
}

fn bar_charts(out: &mut String, summaries: &[RunSummary]) {
    let legend: Vec<(&str, &str)> = summaries
        .iter()
        .map(|s| (s.policy.as_str(), design_color_of(&s.policy)))
        .collect();
    let drawn = drawn_jobs(summaries);
    let jobs = &summaries[0].jobs;
    let others = jobs.len() - drawn.len();
    let others_label = format!("{others} other jobs (mean)");
    let mut groups: Vec<BarGroup<'_>> = drawn
        .iter()
        .map(|&j| BarGroup {
            label: &jobs[j].job_id,
            bars: summaries
                .iter()
                .map(|s| {
                    let v = s.jobs.get(j).map_or(0.0, |x| x.throughput_mib_s);
                    Bar {
                        value: v,
                        color: design_color_of(&s.policy),
                        title: format!("{} under {}: {:.1} MiB/s", jobs[j].job_id, s.policy, v),
                    }
                })
                .collect(),
        })
        .collect();
    if others > 0 {
        // The jobs not drawn one by one, as one group: their mean throughput per policy.
        groups.push(BarGroup {
            label: &others_label,
            bars: summaries
                .iter()
                .map(|s| {
                    let rest: Vec<f64> = (0..s.jobs.len())
                        .filter(|j| !drawn.contains(j))
                        .map(|j| s.jobs[j].throughput_mib_s)
                        .filter(|v| v.is_finite())
                        .collect();
                    let v = rest.iter().sum::<f64>() / rest.len().max(1) as f64;
                    Bar {
                        value: v,
                        color: design_color_of(&s.policy),
                        title: format!("{others_label} under {}: {v:.1} MiB/s", s.policy),
                    }
                })
                .collect(),
        });
    }
    let shown = if others > 0 {
        format!(
            " The {} jobs that moved the most bytes are drawn one by one; the other {others} as \
             their mean.",
            drawn.len()
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Throughput of each job over its I/O time (bytes / (last \
         completion − first issue)), one bar per policy.{shown}</figcaption></figure>",
        bar_chart(
            "Per-job throughput by policy",
            "Throughput (MiB/s)",
            &groups,
            &legend
        )
    );
    let groups: Vec<BarGroup<'_>> = summaries
        .iter()
        .map(|s| BarGroup {
            label: &s.policy,
            bars: vec![Bar {
                value: s.aggregate_throughput_mib_s,
                color: design_color_of(&s.policy),
                title: format!("{}: {:.1} MiB/s", s.policy, s.aggregate_throughput_mib_s),
            }],
        })
        .collect();
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>All bytes moved over the time from the first issue of any job \
         to the last completion of any job.</figcaption></figure>",
        bar_chart(
            "Aggregate throughput by policy",
            "Throughput (MiB/s)",
            &groups,
            &[]
        )
    );
}

/// CDFs over jobs, one line per policy: per-job throughput, and (for a comparison) per-job
/// slowdown against the best compared policy.
fn cdf_charts(out: &mut String, summaries: &[RunSummary]) {
    let lines: Vec<(String, Vec<f64>)> = summaries
        .iter()
        .map(|s| {
            (
                s.policy.clone(),
                s.jobs.iter().map(|j| j.throughput_mib_s).collect(),
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Fraction of jobs whose throughput over their I/O time is at or \
         below x, one line per policy: further right is better.</figcaption></figure>",
        cdf_chart("Per-job throughput (CDF)", "Throughput (MiB/s)", &lines)
    );
    if summaries.len() < 2 {
        return;
    }
    let lines: Vec<(String, Vec<f64>)> = summaries
        .iter()
        .zip(relative_slowdowns(summaries))
        .map(|(s, slow)| (s.policy.clone(), slow.into_iter().flatten().collect()))
        .collect();
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Fraction of jobs whose slowdown is at or below x: a job's I/O \
         time under the policy over its shortest I/O time under any compared policy (1 is the \
         best of this comparison, not a job alone on the system). Further left is \
         better.</figcaption></figure>",
        cdf_chart(
            "Per-job slowdown against the best compared policy (CDF)",
            "Slowdown (x)",
            &lines
        )
    );
}

/// Throughput over time as small multiples, one panel per policy sharing one y axis: the
/// drawn jobs one by one, the others summed into one line.
fn time_charts(out: &mut String, runs: &[RunOutput], summaries: &[RunSummary]) {
    let drawn = drawn_jobs(summaries);
    let others = runs[0].jobs.len() - drawn.len();
    let x_max_s = runs
        .iter()
        .map(|r| bin_count(r) as f64 * ns_to_s(r.bin_ns))
        .fold(0.0, f64::max);
    let unit = time_unit(x_max_s);
    let mut resolutions = Vec::new();
    let panels: Vec<Panel> = runs
        .iter()
        .map(|run| {
            let (_, lines, merge) = throughput_series(run);
            let bin_ms = run.bin_ns as f64 / 1e6;
            resolutions.push(if merge > 1 {
                format!(
                    "{}: {merge} bins of {bin_ms} ms merged per point (mean)",
                    run.policy
                )
            } else {
                format!("{}: one point per {bin_ms} ms bin", run.policy)
            });
            let scaled = |points: &[(f64, f64)]| -> Vec<(f64, f64)> {
                points.iter().map(|&(x, y)| (x / unit.seconds, y)).collect()
            };
            let mut panel_lines: Vec<PanelLine> = drawn
                .iter()
                .map(|&j| PanelLine {
                    points: lines.get(j).map_or_else(Vec::new, |p| scaled(p)),
                })
                .collect();
            if others > 0 {
                // Lines of the other jobs start at different points: sum them by x.
                let mut sum: std::collections::BTreeMap<u64, f64> = Default::default();
                for (j, points) in lines.iter().enumerate() {
                    if drawn.contains(&j) {
                        continue;
                    }
                    for &(x, y) in points {
                        *sum.entry(x.to_bits()).or_default() += y;
                    }
                }
                let mut points: Vec<(f64, f64)> = sum
                    .into_iter()
                    .map(|(x, y)| (f64::from_bits(x), y))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                panel_lines.push(PanelLine {
                    points: scaled(&points),
                });
            }
            Panel {
                title: run.policy.clone(),
                lines: panel_lines,
            }
        })
        .collect();
    let mut names: Vec<String> = drawn
        .iter()
        .map(|&j| runs[0].jobs[j].job_id.clone())
        .collect();
    if others > 0 {
        names.push(format!("{others} other jobs (sum)"));
    }
    let title = if runs.len() == 1 {
        format!("Throughput over time: {}", runs[0].policy)
    } else {
        "Throughput over time by policy".to_string()
    };
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Throughput of each job over time, one panel per policy on one \
         shared y axis; {}.</figcaption></figure>",
        small_multiples(
            &title,
            &format!("Time ({})", unit.name),
            "Throughput (MiB/s)",
            x_max_s / unit.seconds,
            if runs.len() == 1 { 1 } else { 2 },
            &panels,
            &names
        ),
        escape(&resolutions.join("; "))
    );
}

/// Per policy with a controller trace: one chart per metric, a line per job of the metric
/// summed over OSTs after every control step (AdapTBF's Fig. 7). Job colours are those of the
/// throughput charts; the time axis ends where the throughput chart's does, so they line up.
fn trace_section(out: &mut String, runs: &[RunOutput], summaries: &[RunSummary]) {
    let drawn: Vec<&str> = drawn_jobs(summaries)
        .into_iter()
        .map(|j| summaries[0].jobs[j].job_id.as_str())
        .collect();
    for run in runs {
        let Some(charts) = trace_charts(run, POINTS_PER_LINE_MAX) else {
            continue;
        };
        let x_max = (bin_count(run) as f64 * ns_to_s(run.bin_ns)).max(
            run.control_trace
                .iter()
                .map(|e| ns_to_s(e.time_ns))
                .fold(0.0, f64::max),
        );
        let unit = time_unit(x_max);
        // Beyond the bound, only the drawn jobs' lines (the throughput charts' jobs).
        let bounded = charts.jobs.len() > JOBS_DRAWN_MAX;
        let resolution = if charts.merge > 1 {
            format!(
                "{} control steps merged per point (mean over the steps that reported the job)",
                charts.merge
            )
        } else {
            "one point per control step".to_string()
        };
        let _ = writeln!(out, "<h3>{}</h3>", escape(&run.policy));
        if run.control_trace_truncated {
            let _ = writeln!(
                out,
                "<p class=\"note\">The run kept only the first {} trace samples: the charts \
                 stop at {:.1} s.</p>",
                run.control_trace.len(),
                run.control_trace.last().map_or(0.0, |e| ns_to_s(e.time_ns))
            );
        }
        for m in &charts.metrics {
            let (title, y_label) = metric_labels(m.metric);
            let series: Vec<Series<'_>> = charts
                .jobs
                .iter()
                .zip(&m.lines)
                .enumerate()
                .filter(|(i, (job, points))| {
                    !points.is_empty() && (!bounded || charts.is_ost[*i] || drawn.contains(job))
                })
                .map(|(i, (job, points))| Series {
                    // Lustre sends an empty JobID when `jobid_var=disable`.
                    name: if job.is_empty() {
                        "(empty job id)"
                    } else {
                        job
                    },
                    color: job_color(i),
                    points: points.iter().map(|&(x, y)| (x / unit.seconds, y)).collect(),
                })
                .collect();
            let _ = writeln!(
                out,
                "<figure>{}<figcaption><code>{}</code> after every control step, a line per job \
                 (summed over OSTs) or, for the controller's own per-OST state, a line per OST, under <b>{}</b>, {resolution} ({} steps); a gap is a step in which \
                 the controller reported nothing for the job.</figcaption></figure>",
                line_chart(
                    &format!("{title}: {}", run.policy),
                    &format!("Time ({})", unit.name),
                    y_label,
                    x_max / unit.seconds,
                    &series
                ),
                escape(m.metric),
                escape(&run.policy),
                charts.steps
            );
        }
        if bounded {
            let _ = writeln!(
                out,
                "<p class=\"note\">Lines of the {} jobs drawn in the throughput charts only; \
                 every job is in control_trace.csv.</p>",
                drawn.len()
            );
        }
        if charts.metrics_dropped > 0 {
            let _ = writeln!(
                out,
                "<p class=\"note\">{} more metric(s) not charted; see control_trace.csv.</p>",
                charts.metrics_dropped
            );
        }
    }
}

fn rejected_writes(out: &mut String, summaries: &[RunSummary]) {
    if summaries.iter().all(|s| s.rejected_control_writes == 0) {
        out.push_str("<p>No control write was rejected.</p>\n");
        return;
    }
    for s in summaries {
        let _ = writeln!(
            out,
            "<h3>{}: {} of {} rejected</h3>",
            escape(&s.policy),
            s.rejected_control_writes,
            s.control_writes
        );
        if s.rejected.is_empty() {
            continue;
        }
        out.push_str("<ul class=\"rejected\">\n");
        for r in s.rejected.iter().take(REJECTED_SHOWN_MAX) {
            let _ = writeln!(
                out,
                "<li>{:.3} s, domain {}: <code>{}</code> → {}</li>",
                r.time_s,
                r.domain,
                escape(&r.write),
                escape(&r.error)
            );
        }
        out.push_str("</ul>\n");
        let listed = s.rejected.len().min(REJECTED_SHOWN_MAX) as u64;
        if s.rejected_control_writes > listed {
            let _ = writeln!(
                out,
                "<p class=\"note\">… and {} more (see summary.json).</p>",
                s.rejected_control_writes - listed
            );
        }
    }
}

/// The page for one run or a comparison of runs of the same scenario (one per policy).
/// `runs` must not be empty.
pub fn report_html(runs: &[RunOutput], scenario: &ScenarioText) -> String {
    page(runs, scenario.description, Source::Simulated)
}

/// [`report_html`] for runs without a scenario file (a recorded live run): `description`
/// stands where the scenario's description goes.
pub fn report_html_described(runs: &[RunOutput], description: &str) -> String {
    page(runs, description, Source::Live)
}

pub(crate) fn page(runs: &[RunOutput], description: &str, source: Source) -> String {
    assert!(!runs.is_empty(), "a report needs at least one run");
    let summaries: Vec<RunSummary> = runs.iter().map(summarize).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body><main>",
        escape(&format!("pfsqos: {}", runs[0].scenario_name))
    );
    header(&mut out, runs, description, &summaries, source);

    out.push_str("<section id=\"summary\"><h2>What happened</h2>\n<ul class=\"verdicts\">\n");
    for line in verdicts(&summaries) {
        let _ = writeln!(out, "<li>{}</li>", escape(&line));
    }
    out.push_str("</ul>\n");

    out.push_str(if runs.len() > 1 {
        "<h2>Comparison</h2>\n"
    } else {
        "<h2>Summary</h2>\n"
    });
    system_table(&mut out, &summaries, source);
    out.push_str("</section>\n");
    out.push_str(
        "<p class=\"note\">Jain is over per-job throughputs. Weighted Jain and share deviation \
         compare the bytes each job moved with its node count (the AdapTBF priority basis), over \
         the whole bins in which every job was doing I/O, or over the whole run when there is \
         no such bin.</p>\n",
    );
    job_table(&mut out, &summaries);
    phases_section(&mut out, &summaries);

    out.push_str("<h2>Throughput per job and policy</h2>\n");
    bar_charts(&mut out, &summaries);

    out.push_str("<h2>Distribution over jobs</h2>\n");
    cdf_charts(&mut out, &summaries);

    out.push_str("<h2>Throughput over time</h2>\n");
    time_charts(&mut out, runs, &summaries);

    out.push_str("<h2>Throughput per OST</h2>\n");
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Mean throughput of each OST per time span, one map per policy \
         on one colour scale.</figcaption></figure>",
        heatmaps(runs)
    );

    if runs.iter().any(|r| !r.control_trace.is_empty()) {
        out.push_str("<h2>Controller state over time</h2>\n");
        trace_section(&mut out, runs, &summaries);
    }

    out.push_str("<h2>Rejected control writes</h2>\n");
    rejected_writes(&mut out, &summaries);

    let _ = writeln!(
        out,
        "<footer>Generated by pfsqos {}. This file is self-contained: it loads nothing from \
         the network.</footer></main></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// One comparison listed on an index page (`pfsqos demo` runs several).
pub struct IndexEntry<'a> {
    /// Relative link to the comparison's own `report.html`.
    pub link: String,
    pub scenario: ScenarioText<'a>,
    /// The comparison's runs, one per policy; not empty.
    pub runs: &'a [RunOutput],
}

/// A page listing several comparisons: each with its scenario's description, its summary
/// table, and a link to its full report.
pub fn index_html(title: &str, intro: &str, entries: &[IndexEntry]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body><main>\n<h1>{}</h1>\n<p class=\"desc\">{}</p>",
        escape(title),
        escape(title),
        escape(intro)
    );
    for entry in entries {
        assert!(
            !entry.runs.is_empty(),
            "an index entry needs at least one run"
        );
        let summaries: Vec<RunSummary> = entry.runs.iter().map(summarize).collect();
        let _ = writeln!(
            out,
            "<h2>{}</h2>\n<p class=\"desc\">{}</p>\n<p><a href=\"{}\">Full report: per-job \
             tables, throughput over time, controller state</a></p>",
            escape(entry.scenario.name),
            escape(entry.scenario.description.trim()),
            escape(&entry.link)
        );
        system_table(&mut out, &summaries, Source::Simulated);
        job_table(&mut out, &summaries);
    }
    let _ = writeln!(
        out,
        "<footer>Generated by pfsqos {}. This file is self-contained: it loads nothing from \
         the network.</footer></main></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}
