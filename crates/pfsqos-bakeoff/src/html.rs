//! `report.html`: self-contained (inline CSS and SVG, nothing loaded from anywhere), every
//! string from input escaped. Everything but the last section is a function of the
//! [`Report`] and the run files' series; the last section is this machine's wall clock.

use std::fmt::Write as _;

use pfsqos_report::{
    cdf_chart, escape_html as esc, panel_x_ends, shared_x_squashes, small_multiples_axes, Panel,
    PanelLine, REPORT_STYLE,
};

use crate::output::{human_seconds, Report};
use crate::rank::fmt_num;
use crate::runner::{BakeoffResult, Outcome};
use crate::table;
use crate::REPRODUCTIONS;

/// Jobs drawn one by one in a throughput chart; the rest are summed into "others".
pub const JOBS_SHOWN_MAX: usize = 8;

const EXTRA_STYLE: &str = "td.best{font-weight:700;background:#ECFDF5}\
ul.verdicts li{margin:3px 0}code{font-size:13px}\
table.matrix td.cell{text-align:center;font-variant-numeric:tabular-nums;min-width:44px;white-space:nowrap}\
table.matrix th.design{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;\
white-space:nowrap;padding:6px 3px;font-size:12px}\
table.matrix tbody tr td.g0{background:#08306B;color:#FFFFFF;font-weight:700}\
table.matrix tbody tr td.g1{background:#2171B5;color:#FFFFFF}\
table.matrix tbody tr td.g2{background:#6BAED6;color:#08306B}\
table.matrix tbody tr td.g3{background:#C6DBEF;color:#08306B}\
table.matrix tbody tr td.g4{background:#FFFFFF;color:#374151}\
details{margin:10px 0}summary{cursor:pointer;font-weight:600}\
ul.answers li{margin:4px 0}span.held{color:#065F46;font-weight:600}\
span.failed{color:#9F1239;font-weight:600}span.undecided{color:#4B5563;font-weight:600}";

/// The gap buckets of the matrices (fraction behind the best): one blue ramp, dark for the
/// best, so that the order reads without telling hues apart.
const GAP_BUCKETS: &[(f64, &str)] = &[
    (0.05, "within 5 %"),
    (0.2, "within 20 %"),
    (0.5, "within 50 %"),
];

fn gap_class(cell: &crate::answer::MatrixCell) -> &'static str {
    if cell.tie_best {
        return "g0";
    }
    match GAP_BUCKETS.iter().position(|(limit, _)| cell.gap <= *limit) {
        Some(0) => "g1",
        Some(1) => "g2",
        Some(_) => "g3",
        None => "g4",
    }
}

/// A design's swatch: its colour depends on its name only, the same in every report.
fn swatch(name: &str) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        pfsqos_report::design_color(name)
    )
}

/// A [`table::Table`] in HTML: each row with its design's colour, column bests highlighted.
pub(crate) fn html_table(out: &mut String, t: &table::Table) {
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
            swatch(&row.name),
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
    let per_panel_x = shared_x_squashes(&panel_x_ends(&panels));
    let axes = if per_panel_x {
        "one y axis for all panels; each panel's time axis ends where its run ends (a shared \
         one would squash the short runs)"
    } else {
        "all panels on the same axes"
    };
    let _ = writeln!(
        out,
        "<figure>{}<figcaption>Throughput per job over simulated time, seed {}, one panel per \
         design, {axes}.</figcaption></figure>",
        small_multiples_axes(
            "Throughput over time per job",
            "simulated time (s)",
            "MiB/s",
            x_max,
            columns,
            &panels,
            &names,
            per_panel_x
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

/// The intro, generated from the run (never the suite's own prose, which describes the whole
/// suite where the run may be a subset).
fn intro(report: &Report) -> String {
    let seeds = report.seeds.len();
    let seed_text = if seeds == 1 {
        format!("one seed ({})", report.seeds[0])
    } else {
        format!(
            "{seeds} seeds ({})",
            report
                .seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let confidence = if seeds == 1 {
        "With one seed there is no interval: two designs tie when their values are within 0.5 %."
            .to_string()
    } else {
        format!(
            "Values are means over the {seeds} seeds with a 95 % confidence interval; two designs \
             tie when their intervals overlap or their means are within 0.5 %."
        )
    };
    format!(
        "{} designs on {} workloads, {seed_text} each, every run on the same simulated system. \
         Each matrix below answers one question per workload: which design is best, which tie \
         with it, and how far behind the others are. {confidence}",
        report.designs.len(),
        report.workloads.len()
    )
}

/// The workload × design matrix of one family.
fn matrix_table(out: &mut String, report: &Report, m: &crate::answer::FamilyMatrix) {
    if m.metric.iter().all(Option::is_none) {
        return;
    }
    let metrics: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for key in m.metric.iter().flatten() {
            let label = crate::metrics::METRICS
                .iter()
                .find(|d| d.key == *key)
                .map_or(*key, |d| d.label);
            if !v.contains(&label) {
                v.push(label);
            }
        }
        v
    };
    let _ = write!(
        out,
        "<h3>{} <span class=\"note\">({})</span></h3>\n<div class=\"scroll\"><table class=\"matrix\"><thead><tr><th>workload</th>",
        m.family.title(),
        esc(&metrics.join(" / "))
    );
    for d in &report.designs {
        let _ = write!(
            out,
            "<th class=\"design\">{}{}</th>",
            swatch(&d.name),
            esc(&d.name)
        );
    }
    out.push_str("</tr></thead><tbody>\n");
    for (w, info) in report.workloads.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td class=\"name\"><a href=\"#w{w}\">{}</a></td>",
            esc(&info.stem)
        );
        for c in &m.cells[w] {
            match c {
                Some(c) => {
                    let _ = write!(
                        out,
                        "<td class=\"cell {}\" title=\"{}\">{}</td>",
                        gap_class(c),
                        esc(&c.value),
                        esc(&c.text)
                    );
                }
                None => out.push_str("<td class=\"cell\">–</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn matrix_legend(out: &mut String) {
    out.push_str(
        "<p class=\"note\"><span class=\"swatch\" style=\"background:#08306B\"></span>best or \
         tie · ",
    );
    let colors = ["#2171B5", "#6BAED6", "#C6DBEF"];
    for ((_, label), c) in GAP_BUCKETS.iter().zip(colors) {
        let _ = write!(
            out,
            "<span class=\"swatch\" style=\"background:{c}\"></span>{label} · "
        );
    }
    out.push_str(
        "<span class=\"swatch\" style=\"background:#FFFFFF;border:1px solid #9CA3AF\"></span>\
         further. A cell gives the gap to the best (−12 %: 12 % behind; 3.0x: three times the \
         best's time or cost); hover for the value.</p>\n",
    );
}

fn answers(out: &mut String, report: &Report) {
    out.push_str("<h2 id=\"answers\">Who won each workload</h2>\n<ul class=\"answers\">\n");
    for a in &report.answers {
        let _ = write!(out, "<li>{}", esc(&a.sentence));
        for j in &a.expectations {
            let (class, word) = match j.outcome {
                crate::answer::Outcome::Held => ("held", "held"),
                crate::answer::Outcome::DidNotHold => ("failed", "did not hold"),
                crate::answer::Outcome::Undecided => ("undecided", "undecided (a tie)"),
            };
            let _ = write!(
                out,
                "<br>Expected: {} — <span class=\"{class}\">{word}</span>: {}.",
                esc(&j.claim),
                esc(&j.detail)
            );
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
}

fn designs_explained(out: &mut String, report: &Report) {
    out.push_str(
        "<h2 id=\"designs\">The designs in this run</h2>\n<div class=\"scroll\"><table><thead><tr>\
         <th>design</th><th>what it does</th><th>from</th></tr></thead><tbody>\n",
    );
    for design in &report.designs {
        let line = crate::glossary::describe(&design.policy, design.placement.as_deref());
        let paper = crate::glossary::paper(&design.policy, design.placement.as_deref())
            .map_or_else(|| "baseline".to_string(), |p| p.citation());
        let _ = writeln!(
            out,
            "<tr><td class=\"name\">{}{}</td><td>{}</td><td>{}</td></tr>",
            swatch(&design.name),
            esc(&design.name),
            esc(&line),
            esc(&paper)
        );
    }
    out.push_str("</tbody></table></div>\n");
}

/// `report.html` text.
pub fn report_html(report: &Report, result: &BakeoffResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{REPORT_STYLE}{EXTRA_STYLE}</style></head><body><main>\n\
         <h1>{}</h1>\n<p class=\"desc\" id=\"intro\">{}</p>",
        esc(&format!("pfsqos bakeoff: {}", report.suite)),
        esc(&format!("Bakeoff: {}", report.suite)),
        esc(&intro(report))
    );
    out.push_str("<section id=\"summary\">\n");
    for m in &report.matrices {
        matrix_table(&mut out, report, m);
        if m.family == crate::metrics::Family::AppTime {
            matrix_legend(&mut out);
        }
    }
    out.push_str("</section>\n");
    answers(&mut out, report);
    designs_explained(&mut out, report);

    out.push_str("<p>Contents: <a href=\"#overall\">overall ranking</a>");
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
    if !report.description.trim().is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>About the suite</summary><p class=\"desc\">{}</p></details>",
            esc(report.description.trim())
        );
    }

    out.push_str("<details id=\"overall\"><summary>Overall ranking: mean rank per family and metric</summary>\n");
    overall_tables(&mut out, report);
    out.push_str("</details>\n");

    for (w, info) in report.workloads.iter().enumerate() {
        let _ = writeln!(
            out,
            "<h2 id=\"w{w}\">{} <span class=\"note\">({})</span></h2>\n<p>{}</p>\n\
             <details><summary>The workload</summary><p class=\"desc\">{}</p></details>",
            esc(&info.name),
            esc(&info.file),
            esc(&report.answers[w].sentence),
            esc(info.description.trim())
        );
        out.push_str("<details><summary>Every metric: verdicts and tables</summary><ul class=\"verdicts\">\n");
        for s in &report.verdicts[w].sentences {
            let _ = writeln!(out, "<li>{}</li>", esc(s));
        }
        out.push_str("</ul>\n");
        family_tables(&mut out, report, w);
        out.push_str("</details>\n");
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
         <li>Mean ± 95 % interval: the mean over the seeds and the half-width of its 95 % \
         confidence interval (Student's t with seeds − 1 degrees of freedom).</li>\
         <li>A tie: the 95 % intervals of the best design and another overlap, or their means are \
         within 0.5 % (with one seed only the latter applies). A verdict names a winner only \
         outside a tie.</li>\
         <li>The matrices judge each family on one headline metric: mean job time (else mean \
         slowdown), weighted Jain (else Jain), aggregate throughput, OSTCost, control writes per \
         second.</li>\
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
