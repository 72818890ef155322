//! `report.html`: self-contained (inline CSS and SVG, nothing loaded from anywhere), every
//! string from input escaped. Everything but the last section is a function of the
//! [`Report`] and the run files' series; the last section is this machine's wall clock.

use std::fmt::Write as _;

use pfsqos_report::{
    cdf_chart, design_color, escape_html as esc, small_multiples, Panel, PanelLine, REPORT_STYLE,
};

use crate::output::{human_seconds, Report};
use crate::rank::fmt_num;
use crate::runner::{BakeoffResult, Outcome};
use crate::table;
use crate::REPRODUCTIONS;

/// Jobs drawn one by one in a throughput chart; the rest are summed into "others".
pub const JOBS_SHOWN_MAX: usize = 8;

const EXTRA_STYLE: &str = "td.best{font-weight:700;background:#ECFDF5}\
ul.verdicts li{margin:3px 0}code{font-size:13px}";

fn swatch(i: usize) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        design_color(i)
    )
}

/// A [`table::Table`] in HTML: each row with its design's colour, column bests highlighted.
fn html_table(out: &mut String, t: &table::Table) {
    out.push_str("<div class=\"scroll\"><table><thead><tr><th>design</th>");
    for c in &t.columns {
        match c.better {
            Some(b) => {
                let better = match b {
                    crate::metrics::Better::Higher => "higher is better",
                    crate::metrics::Better::Lower => "lower is better",
                };
                let _ = write!(out, "<th title=\"{better}\">{}</th>", esc(&c.label));
            }
            None => {
                let _ = write!(out, "<th>{}</th>", esc(&c.label));
            }
        }
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &t.rows {
        let _ = write!(
            out,
            "<tr><td class=\"name\">{}{}</td>",
            swatch(row.design),
            esc(&row.name)
        );
        for c in &row.cells {
            let class = if c.best { "num best" } else { "num" };
            let _ = write!(out, "<td class=\"{class}\">{}</td>", esc(&c.text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn family_tables(out: &mut String, report: &Report, w: usize) {
    for (f, t) in table::workload_tables(report, w) {
        let _ = write!(out, "<h3>{}</h3>", f.title());
        html_table(out, &t);
    }
}

fn overall_tables(out: &mut String, report: &Report) {
    out.push_str(
        "<h2 id=\"overall\">Overall ranking</h2>\n<p class=\"note\">Mean rank over the workloads \
         (1 = best on every workload); per family, the mean of its metrics' mean ranks.</p>",
    );
    html_table(out, &table::overall_family_table(report));
    for (f, t) in table::overall_metric_tables(report) {
        let _ = write!(out, "<h3>{}: mean rank per metric</h3>", f.title());
        html_table(out, &t);
    }
}

/// Throughput over time, one panel per design that ran (first seed), shared axes; the
/// [`JOBS_SHOWN_MAX`] jobs with the most bytes over all panels drawn alone, the rest summed.
fn throughput_chart(out: &mut String, report: &Report, result: &BakeoffResult, w: usize) {
    let s = 0;
    let ran: Vec<(usize, &crate::metrics::RunRecord)> = (0..report.designs.len())
        .filter_map(|d| match &result.outcomes[w][d][s] {
            Outcome::Ran(r) => Some((d, r)),
            Outcome::Skipped(_) => None,
        })
        .collect();
    let Some((_, first)) = ran.first() else {
        return;
    };
    let n_jobs = first.jobs.len();
    let mut bytes = vec![0u128; n_jobs];
    for (_, r) in &ran {
        for (i, j) in r.jobs.iter().enumerate().take(n_jobs) {
            bytes[i] += u128::from(j.bytes);
        }
    }
    let mut order: Vec<usize> = (0..n_jobs).collect();
    // Most bytes first; ties in job order (sort is stable).
    order.sort_by(|a, b| bytes[*b].cmp(&bytes[*a]));
    let shown: Vec<usize> = order.iter().copied().take(JOBS_SHOWN_MAX).collect();
    let others: Vec<usize> = order.iter().copied().skip(JOBS_SHOWN_MAX).collect();
    let mut names: Vec<String> = shown
        .iter()
        .map(|&i| first.jobs[i].job_id.clone())
        .collect();
    if !others.is_empty() {
        names.push(format!("others ({} jobs, summed)", others.len()));
    }
    let x_max = ran.iter().map(|(_, r)| r.sim_time_s).fold(0.0, f64::max);
    let panels: Vec<Panel> = ran
        .iter()
        .map(|(d, r)| {
            let points = |series: &[f64]| -> Vec<(f64, f64)> {
                series
                    .iter()
                    .enumerate()
                    .map(|(k, v)| ((k as f64 + 0.5) * r.series_step_s, *v))
                    .collect()
            };
            let mut lines: Vec<PanelLine> = shown
                .iter()
                .map(|&i| PanelLine {
                    points: r
                        .jobs
                        .get(i)
                        .map_or_else(Vec::new, |j| points(&j.series_mib_s)),
                })
                .collect();
            if !others.is_empty() {
                let len = r
                    .jobs
                    .iter()
                    .map(|j| j.series_mib_s.len())
                    .max()
                    .unwrap_or(0);
                let mut sum = vec![0.0; len];
                for &i in &others {
                    if let Some(j) = r.jobs.get(i) {
                        for (k, v) in j.series_mib_s.iter().enumerate() {
                            sum[k] += v;
                        }
                    }
                }
                lines.push(PanelLine {
                    points: points(&sum),
                });
            }
            Panel {
                title: report.designs[*d].name.clone(),
                lines,
            }
        })
        .collect();
    let columns = if panels.len() <= 4 { 2 } else { 3 };
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Throughput per job over simulated time, seed {}, one panel per \
         design, all panels on the same axes.</figcaption></figure>",
        small_multiples(
            "Throughput over time per job",
            "simulated time (s)",
            "MiB/s",
            x_max,
            columns,
            &panels,
            &names
        ),
        report.seeds[s]
    );
}

fn slowdown_cdf(out: &mut String, report: &Report, w: usize) {
    let lines: Vec<(String, Vec<f64>)> = report
        .designs
        .iter()
        .enumerate()
        .map(|(d, design)| {
            let v: Vec<f64> = (0..report.seeds.len())
                .flat_map(|s| report.runs[report.run_index(w, d, s)].jobs.iter())
                .filter_map(|j| j.slowdown)
                .collect();
            (design.name.clone(), v)
        })
        .collect();
    if lines.iter().all(|l| l.1.is_empty()) {
        out.push_str(
            "<p class=\"note\">No slowdowns: no job has a solo run to compare with.</p>\n",
        );
        return;
    }
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Per-job slowdown against running alone, all seeds pooled, one \
         line per design (left and steep is better).</figcaption></figure>",
        cdf_chart("CDF of per-job slowdowns", "slowdown (x)", &lines)
    );
}

fn skipped_list(out: &mut String, report: &Report, workload: Option<&str>) {
    let list: Vec<_> = report
        .skipped
        .iter()
        .filter(|k| workload.is_none_or_eq(&k.workload))
        .collect();
    if list.is_empty() {
        if workload.is_none() {
            out.push_str("<p>None: every design ran on every workload and seed.</p>\n");
        }
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>workload</th><th>design</th><th>seeds</th>\
         <th>reason</th></tr></thead><tbody>\n",
    );
    for k in list {
        let _ = writeln!(
            out,
            "<tr><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&k.workload),
            esc(&k.design),
            k.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            esc(&k.reason)
        );
    }
    out.push_str("</tbody></table></div>\n");
}

trait NoneOrEq {
    fn is_none_or_eq(&self, other: &str) -> bool;
}

impl NoneOrEq for Option<&str> {
    fn is_none_or_eq(&self, other: &str) -> bool {
        match self {
            None => true,
            Some(s) => *s == other,
        }
    }
}

fn timing_section(out: &mut String, result: &BakeoffResult) {
    out.push_str(
        "<h2 id=\"timing\">Wall-clock cost (this machine's wall clock)</h2>\n<p class=\"note\">\
         Measured on the machine that ran this bakeoff; not part of bakeoff.json, and not \
         comparable across machines. Reused runs show the time they took when they ran. A \
         decision is one call of the controller's decide, timed by the driver around the pure \
         controller; its median and p99 are histogram bucket upper bounds (at most 9 % above \
         the true value).</p>\
         <table><thead><tr><th>design</th><th>runs</th><th>wall time</th><th>simulated RPCs</th>\
         <th>ns per simulated RPC</th><th>controller decisions</th><th>decision median</th>\
         <th>decision p99</th></tr></thead><tbody>\n",
    );
    let mut names: Vec<String> = Vec::new();
    for t in &result.timing {
        let n = if t.design.starts_with("solo:") {
            "solo runs".to_string()
        } else {
            t.design.clone()
        };
        if !names.contains(&n) {
            names.push(n);
        }
    }
    for n in names {
        let entries: Vec<_> = result
            .timing
            .iter()
            .filter(|t| {
                if n == "solo runs" {
                    t.design.starts_with("solo:")
                } else {
                    t.design == n
                }
            })
            .collect();
        let wall_s: f64 = entries.iter().map(|t| t.wall_ns as f64 / 1e9).sum();
        let rpcs: u64 = entries.iter().map(|t| t.rpcs).sum();
        let mut decide = crate::decide_timing::DecideHistogram::default();
        for t in &entries {
            decide.merge(&t.decide_histogram);
        }
        let decide = decide.stats();
        let decide_us = |ns: u64| {
            if decide.count > 0 {
                format!("{} µs", fmt_num(ns as f64 / 1e3))
            } else {
                "–".to_string()
            }
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"name\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{rpcs}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&n),
            entries.len(),
            human_seconds(wall_s),
            if rpcs > 0 {
                fmt_num(wall_s * 1e9 / rpcs as f64)
            } else {
                "–".to_string()
            },
            decide.count,
            decide_us(decide.median_ns),
            decide_us(decide.p99_ns)
        );
    }
    let _ = writeln!(
        out,
        "</tbody></table><p class=\"note\">Whole bakeoff: {} on this machine; {} runs executed, \
         {} reused from the output directory.</p>",
        human_seconds(result.wall_ns as f64 / 1e9),
        result.executed_runs,
        result.reused_runs
    );
}

/// `report.html` text.
pub fn report_html(report: &Report, result: &BakeoffResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{REPORT_STYLE}{EXTRA_STYLE}</style></head><body><main>\n\
         <h1>{}</h1>\n<p class=\"desc\">{}</p>",
        esc(&format!("pfsqos bakeoff: {}", report.suite)),
        esc(&format!("Bakeoff: {}", report.suite)),
        esc(report.description.trim())
    );
    let _ = writeln!(
        out,
        "<dl class=\"meta\"><dt>seeds</dt><dd>{}</dd><dt>designs</dt><dd>{}</dd>\
         <dt>workloads</dt><dd>{}</dd></dl>",
        report
            .seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        report.designs.len(),
        report.workloads.len()
    );
    out.push_str(
        "<table><thead><tr><th>design</th><th>policy spec</th><th>placement</th></tr></thead><tbody>\n",
    );
    for (d, design) in report.designs.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr><td class=\"name\">{}{}</td><td class=\"name\"><code>{}</code></td><td class=\"name\">{}</td></tr>",
            swatch(d),
            esc(&design.name),
            esc(&design.policy),
            esc(design.placement.as_deref().unwrap_or("the scenario's own"))
        );
    }
    out.push_str("</tbody></table>\n<p>Contents: <a href=\"#overall\">overall ranking</a>");
    for (w, info) in report.workloads.iter().enumerate() {
        let _ = write!(out, " · <a href=\"#w{w}\">{}</a>", esc(&info.stem));
    }
    out.push_str(
        " · <a href=\"#skipped\">skipped combinations</a> · <a href=\"#definitions\">definitions</a> \
         · <a href=\"#timing\">wall-clock cost</a></p>\n",
    );
    out.push_str("<p>Per-paper reproductions (in the pfsqos repository): ");
    for (i, r) in REPRODUCTIONS.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(
            out,
            "{} <code>{}</code> (regenerated by <code>{}</code>)",
            esc(r.design),
            esc(r.doc),
            esc(r.script)
        );
    }
    out.push_str(".</p>\n");

    overall_tables(&mut out, report);

    for (w, info) in report.workloads.iter().enumerate() {
        let _ = writeln!(
            out,
            "<h2 id=\"w{w}\">{} <span class=\"note\">({})</span></h2>\n<p class=\"desc\">{}</p>",
            esc(&info.name),
            esc(&info.file),
            esc(info.description.trim())
        );
        out.push_str("<h3>Verdict</h3><ul class=\"verdicts\">\n");
        for s in &report.verdicts[w].sentences {
            let _ = writeln!(out, "<li>{}</li>", esc(s));
        }
        out.push_str("</ul>\n");
        family_tables(&mut out, report, w);
        throughput_chart(&mut out, report, result, w);
        slowdown_cdf(&mut out, report, w);
        skipped_list(&mut out, report, Some(&info.stem));
    }

    out.push_str("<h2 id=\"skipped\">Skipped combinations</h2>\n");
    skipped_list(&mut out, report, None);

    out.push_str(
        "<h2 id=\"definitions\">Definitions</h2>\n<ul class=\"note\">\
         <li>Throughput, Jain's index, weighted Jain, weighted share deviation, vPFS unfairness \
         (5 s windows), OSTCost and control writes are pfsqos-report's summary of each run \
         (summary.json of <code>pfsqos sim</code>).</li>\
         <li>A job's time: for a job with synchronous I/O phases, its run time (job start to \
         the end of its last completed phase); otherwise its I/O time (first RPC issued to last \
         RPC completed).</li>\
         <li>Slowdown: the job's progress rate alone (the workload with only that job, under \
         nobw and the scenario's placement, same seed) over its progress rate in the shared run; \
         for a job that did the same work in both, its time shared over its time alone. A job \
         with no progress shared but some alone is counted as starved.</li>\
         <li>Tail slowdown: the 95th percentile (nearest rank) over the run's jobs.</li>\
         <li>Cost: control writes and synchronization traffic per simulated second.</li>\
         <li>A tie: the seed spreads (min..max) of the best design and another overlap (with one seed: their values are equal).</li>\
         </ul>\n",
    );
    timing_section(&mut out, result);
    let _ = writeln!(
        out,
        "<footer>Generated by pfsqos {}. This file is self-contained: it loads nothing from \
         the network.</footer></main></body></html>",
        report.crate_version
    );
    out
}
