//! A comparison over seeds (`pfsqos compare --seeds N`): the policies of one scenario, each
//! run with the seeds `1..=N` as the bakeoff runs them ([`runner::seeded`](crate::runner::seeded)),
//! ranked per metric by the bakeoff's statistics and verdicts ([`rank::rank_workload`]: each
//! value the mean over the seeds with its 95 % interval, Student's t; [`rank::verdicts`]: a
//! winner only outside the intervals, a tie otherwise; module doc of [`rank`]). There is one
//! statistics routine, [`rank::CellStats`]; this module only feeds it.
//!
//! A comparison runs no job alone, so the metrics that need the solo runs ([`SOLO_METRICS`]:
//! slowdowns, starved jobs) are left out rather than reported as zero.

use std::fmt::Write as _;

use pfsqos_core::run::RunOutput;
use pfsqos_report::{escape_html as esc, REPORT_STYLE};
use serde::Serialize;

use crate::metrics::{metric_index, run_metrics, MetricDef, RunRecord, METRICS};
use crate::rank::{self, MetricRanking};
use crate::table;

/// Metrics of [`METRICS`] that need each job's run alone; a comparison has none.
pub const SOLO_METRICS: &[&str] = &[
    "slowdown_mean",
    "slowdown_p95",
    "slowdown_max",
    "starved_jobs",
];

/// The directory of seed `seed`'s comparison inside the output directory.
pub fn seed_directory(seed: u64) -> String {
    format!("seed-{seed}")
}

/// One run's metric row, aligned with [`METRICS`]: the bakeoff's row
/// ([`run_metrics`] of [`RunRecord::from_run`]) without the [`SOLO_METRICS`].
pub fn metric_row(run: &RunOutput) -> Vec<Option<f64>> {
    let mut row = run_metrics(&RunRecord::from_run(run), &[]);
    for key in SOLO_METRICS {
        row[metric_index(key)] = None;
    }
    row
}

/// What `summary.json` of a comparison over seeds holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeededComparison {
    pub scenario: String,
    pub description: String,
    pub seeds: Vec<u64>,
    pub policies: Vec<String>,
    /// Each seed's comparison (`pfsqos_report::write_comparison`), relative to this file.
    pub seed_directories: Vec<String>,
    pub metrics: &'static [MetricDef],
    /// One ranking per metric of `metrics`, rows in `policies` order.
    pub rankings: Vec<MetricRanking>,
    /// The verdicts: a winner only where its interval clears the runner-up's.
    pub verdicts: Vec<String>,
}

impl SeededComparison {
    /// `rows[p][s]`: policy `p`'s metric row ([`metric_row`]) for seed `seeds[s]`.
    pub fn new(
        scenario: &str,
        description: &str,
        policies: &[String],
        seeds: &[u64],
        rows: &[Vec<Vec<Option<f64>>>],
    ) -> SeededComparison {
        assert!(!seeds.is_empty(), "a comparison over seeds needs a seed");
        assert_eq!(policies.len(), rows.len(), "one set of rows per policy");
        for per_seed in rows {
            assert_eq!(per_seed.len(), seeds.len(), "one row per policy and seed");
            assert!(
                per_seed.iter().all(|r| r.len() == METRICS.len()),
                "a metric row has every metric"
            );
        }
        let values: Vec<Vec<Option<Vec<Option<f64>>>>> = rows
            .iter()
            .map(|per_seed| per_seed.iter().cloned().map(Some).collect())
            .collect();
        let rankings = rank::rank_workload(policies, &values);
        let verdicts = rank::verdicts(scenario, &rankings, &[]);
        SeededComparison {
            scenario: scenario.to_string(),
            description: description.to_string(),
            seeds: seeds.to_vec(),
            policies: policies.to_vec(),
            seed_directories: seeds.iter().map(|&s| seed_directory(s)).collect(),
            metrics: METRICS,
            rankings,
            verdicts,
        }
    }

    /// Per metric family with a value, the table of each policy's mean ± interval and rank.
    pub fn tables(&self) -> Vec<(crate::metrics::Family, table::Table)> {
        table::ranking_tables(&self.rankings, &self.policies)
    }
}

/// `summary.json` text.
pub fn summary_json(c: &SeededComparison) -> String {
    let mut text = serde_json::to_string_pretty(c).expect("the comparison serializes");
    text.push('\n');
    text
}

/// What one cell means, said once under every rendering of the tables.
fn legend(c: &SeededComparison) -> String {
    if c.seeds.len() == 1 {
        "One seed: no interval; two policies tie when their values are within 0.5 %.".to_string()
    } else {
        format!(
            "Each cell: the mean over the {} seeds ± the half-width of its 95 % confidence \
             interval (Student's t, {} degrees of freedom), then the rank (#1 best). Two \
             policies tie when their intervals overlap or their means are within 0.5 %.",
            c.seeds.len(),
            c.seeds.len() - 1
        )
    }
}

/// The tables and verdicts as markdown (what `pfsqos compare --seeds` prints).
pub fn results_md(c: &SeededComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} policies x seeds {}\n\n{}\n",
        crate::output::md_escape(&c.scenario),
        c.policies.len(),
        seed_range(&c.seeds),
        legend(c)
    );
    for (f, t) in c.tables() {
        let _ = writeln!(out, "{}:\n", f.title());
        crate::output::md_table(&mut out, &t);
        out.push('\n');
    }
    out.push_str("Verdicts:\n\n");
    for v in &c.verdicts {
        let _ = writeln!(out, "* {}", crate::output::md_escape(v));
    }
    out
}

/// "1..5", or the one seed.
fn seed_range(seeds: &[u64]) -> String {
    match seeds {
        [one] => one.to_string(),
        [first, .., last] => format!("{first}..{last}"),
        [] => String::new(),
    }
}

/// `report.html`: self-contained, every input string escaped; the verdicts, the tables, and a
/// link to each seed's own report.
pub fn report_html(c: &SeededComparison) -> String {
    let mut out = String::new();
    let title = format!("{}: {} seeds", c.scenario, c.seeds.len());
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{REPORT_STYLE}td.best{{font-weight:700;background:#ECFDF5}}\
         </style></head><body><main>\n<h1>{}</h1>\n<p class=\"desc\">{}</p>",
        esc(&title),
        esc(&title),
        esc(c.description.trim())
    );
    let _ = writeln!(
        out,
        "<p>Policies: {}. Seeds {}. {}</p>\n<h2>Verdicts</h2>\n<ul>",
        esc(&c.policies.join(", ")),
        esc(&seed_range(&c.seeds)),
        esc(&legend(c))
    );
    for v in &c.verdicts {
        let _ = writeln!(out, "<li>{}</li>", esc(v));
    }
    out.push_str("</ul>\n");
    for (f, t) in c.tables() {
        let _ = writeln!(out, "<h2>{}</h2>", f.title());
        crate::html::html_table(&mut out, &t);
    }
    out.push_str("<h2>Each seed</h2>\n<p>Every seed's runs, with their time series and per-job tables:</p>\n<ul>");
    for (s, dir) in c.seeds.iter().zip(&c.seed_directories) {
        let _ = writeln!(
            out,
            "<li><a href=\"{}/report.html\">seed {s}</a></li>",
            esc(dir)
        );
    }
    let _ = writeln!(
        out,
        "</ul>\n<footer>Generated by pfsqos {}. This file is self-contained: it loads nothing \
         from the network.</footer></main></body></html>",
        crate::CRATE_VERSION
    );
    out
}

/// Writes `dir/summary.json` and `dir/report.html` (each seed's comparison is written into
/// `dir/seed-<s>/` by the caller, `pfsqos_report::write_comparison`).
pub fn write_outputs(dir: &std::path::Path, c: &SeededComparison) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, text) in [
        ("summary.json", summary_json(c)),
        ("report.html", report_html(c)),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(agg: f64) -> Vec<Option<f64>> {
        let mut r = vec![None; METRICS.len()];
        r[metric_index("aggregate_mib_s")] = Some(agg);
        r
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_interval_is_the_hand_computed_students_t() {
        // a: 10, 12, 14: mean 12, sample sd 2, t(0.975, 2) = 4.303, half = 4.303 * 2 / sqrt(3).
        let c = SeededComparison::new(
            "w",
            "",
            &names(&["a", "b"]),
            &[1, 2, 3],
            &[
                vec![row(10.0), row(12.0), row(14.0)],
                vec![row(1.0), row(1.0), row(1.0)],
            ],
        );
        let agg = &c.rankings[metric_index("aggregate_mib_s")];
        let s = agg.rows[0].stats.unwrap();
        assert_eq!(s.mean, 12.0);
        let half = 4.303 * 2.0 / 3f64.sqrt();
        assert!((s.ci95_half.unwrap() - half).abs() < 1e-12, "{s:?}");
        assert_eq!(agg.rows[1].stats.unwrap().ci95_half, Some(0.0));
        // 12 ± 4.97 clears 1 ± 0: a winner, with its interval.
        assert!(
            c.verdicts[0].contains("a is best (12.0 MiB/s ± 4.97)"),
            "{}",
            c.verdicts[0]
        );
        let md = results_md(&c);
        assert!(md.contains("12.0 MiB/s ± 4.97 MiB/s #1"), "{md}");
        assert!(md.contains("t, 2 degrees of freedom"), "{md}");
    }

    #[test]
    fn a_gap_inside_the_intervals_is_a_tie() {
        let policies = names(&["a", "b"]);
        // Means 12 and 11 (9 % apart), but a's interval (12 ± 4.97) holds b's mean.
        let noisy = SeededComparison::new(
            "w",
            "",
            &policies,
            &[1, 2, 3],
            &[
                vec![row(10.0), row(12.0), row(14.0)],
                vec![row(10.9), row(11.0), row(11.1)],
            ],
        );
        assert_eq!(
            noisy.verdicts[0],
            "w, aggregate throughput: all 2 designs tie (11.0 MiB/s to 12.0 MiB/s)."
        );
        // The same means, tight seeds: a winner.
        let tight = SeededComparison::new(
            "w",
            "",
            &policies,
            &[1, 2, 3],
            &[
                vec![row(11.9), row(12.0), row(12.1)],
                vec![row(10.9), row(11.0), row(11.1)],
            ],
        );
        assert!(
            tight.verdicts[0].contains("a is best"),
            "{}",
            tight.verdicts[0]
        );
    }

    #[test]
    fn solo_metrics_are_left_out_and_the_outputs_are_deterministic() {
        let mut r = row(5.0);
        r[metric_index("starved_jobs")] = None;
        let c = SeededComparison::new("w <x>", "d", &names(&["a"]), &[1, 2], &[vec![r.clone(), r]]);
        for key in SOLO_METRICS {
            assert!(c.rankings[metric_index(key)]
                .rows
                .iter()
                .all(|r| r.stats.is_none()));
        }
        let html = report_html(&c);
        assert!(html.contains("w &lt;x&gt;") && !html.contains("w <x>"));
        assert!(html.contains("<a href=\"seed-2/report.html\">seed 2</a>"));
        let again = SeededComparison::new(
            "w <x>",
            "d",
            &names(&["a"]),
            &[1, 2],
            &[vec![row(5.0), row(5.0)]],
        );
        assert_eq!(summary_json(&c), summary_json(&again));
        assert_eq!(html, report_html(&again));
    }
}
