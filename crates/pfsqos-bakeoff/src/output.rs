//! `bakeoff.json`, `bakeoff.csv`, `results.md` and `timing.json`.
//!
//! [`Report`] is built once from a [`BakeoffResult`] and is everything the byte-identical
//! outputs hold; all three are pure functions of it (fixed order, fixed float formatting).

use std::fmt::Write as _;
use std::path::Path;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::metrics::{run_metrics, slowdowns, Family, JobRecord, MetricDef, METRICS};
use crate::rank::{self, fmt_num, MetricRanking, OverallRow};
use crate::runner::{BakeoffResult, Outcome};
use crate::table;
use crate::{answer, CRATE_VERSION};

/// A metric row, serialized as an object in [`METRICS`] order.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricRow(pub Vec<Option<f64>>);

impl Serialize for MetricRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (def, v) in METRICS.iter().zip(&self.0) {
            map.serialize_entry(def.key, v)?;
        }
        map.end()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DesignOut {
    pub name: String,
    pub policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadOut {
    pub file: String,
    pub stem: String,
    pub name: String,
    pub description: String,
}

/// One job of one shared run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobRow {
    pub job_id: String,
    pub bytes: u64,
    pub throughput_mib_s: f64,
    pub io_time_s: f64,
    pub time_s: f64,
    pub finished: bool,
    /// The job's time alone (its solo run); absent when the solo run is missing.
    pub alone_time_s: Option<f64>,
    pub slowdown: Option<f64>,
}

/// One design × workload × seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRow {
    pub workload: String,
    pub design: String,
    pub seed: u64,
    /// `ran` or `skipped`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub jobs_total: usize,
    pub jobs_finished: usize,
    pub total_bytes: u64,
    pub sim_time_s: f64,
    pub metrics: MetricRow,
    pub jobs: Vec<JobRow>,
}

/// One job alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SoloRow {
    pub workload: String,
    pub seed: u64,
    pub job_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_bytes: Option<u64>,
    /// Why there is no solo run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A combination that did not run, with the simulator's reason.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub workload: String,
    pub design: String,
    pub seeds: Vec<u64>,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadRanking {
    pub workload: String,
    pub metrics: Vec<MetricRanking>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadVerdicts {
    pub workload: String,
    pub sentences: Vec<String>,
}

/// Everything `bakeoff.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub suite: String,
    pub description: String,
    pub crate_version: &'static str,
    pub seeds: Vec<u64>,
    pub designs: Vec<DesignOut>,
    pub workloads: Vec<WorkloadOut>,
    pub metrics: &'static [MetricDef],
    pub families: Vec<Family>,
    pub runs: Vec<RunRow>,
    pub solo: Vec<SoloRow>,
    pub skipped: Vec<Skipped>,
    pub rankings: Vec<WorkloadRanking>,
    pub overall: Vec<OverallRow>,
    pub verdicts: Vec<WorkloadVerdicts>,
    /// The answer first: per family, the workload × design matrix of gaps to the best.
    pub matrices: Vec<answer::FamilyMatrix>,
    /// Per workload: one sentence and its expectations judged.
    pub answers: Vec<WorkloadAnswer>,
}

/// One workload's answer: who won what, and whether the stated expectations held.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadAnswer {
    pub workload: String,
    pub sentence: String,
    pub expectations: Vec<answer::Judged>,
}

impl Report {
    /// Index of run `(w, d, s)` in [`Report::runs`] (workload-major, then design, then seed).
    pub fn run_index(&self, w: usize, d: usize, s: usize) -> usize {
        (w * self.designs.len() + d) * self.seeds.len() + s
    }
}

/// The solo job records of workload `w`, seed index `s`, aligned with the shared run's jobs
/// (`None` where missing or where the job ids disagree).
pub fn alone_for(
    result: &BakeoffResult,
    w: usize,
    s: usize,
    run_jobs: &[JobRecord],
) -> Vec<Option<JobRecord>> {
    match &result.solo[w][s] {
        Err(_) => vec![None; run_jobs.len()],
        Ok(set) => run_jobs
            .iter()
            .enumerate()
            .map(|(i, job)| {
                let id = set.job_ids.get(i)?;
                // The solo plan expands jobs as the engine does; a mismatch means it did not.
                (*id == job.job_id).then_some(())?;
                set.records.get(i)?.as_ref().ok().cloned()
            })
            .collect(),
    }
}

/// Builds the report from the runs.
pub fn build_report(result: &BakeoffResult) -> Report {
    let design_names: Vec<String> = result.designs.iter().map(|d| d.name.clone()).collect();
    let mut runs = Vec::new();
    let mut skipped: Vec<Skipped> = Vec::new();
    let mut rankings = Vec::new();
    let mut verdicts = Vec::new();
    for (w, info) in result.workloads.iter().enumerate() {
        let mut values: Vec<Vec<Option<Vec<Option<f64>>>>> = Vec::new();
        let mut skipped_designs = Vec::new();
        for (d, design) in result.designs.iter().enumerate() {
            let mut per_seed = Vec::new();
            for (s, &seed) in result.seeds.iter().enumerate() {
                match &result.outcomes[w][d][s] {
                    Outcome::Ran(record) => {
                        let alone = alone_for(result, w, s, &record.jobs);
                        let row = run_metrics(record, &alone);
                        let slow = slowdowns(record, &alone);
                        let jobs = record
                            .jobs
                            .iter()
                            .zip(&alone)
                            .zip(&slow)
                            .map(|((j, a), sd)| JobRow {
                                job_id: j.job_id.clone(),
                                bytes: j.bytes,
                                throughput_mib_s: j.throughput_mib_s,
                                io_time_s: j.io_time_s,
                                time_s: j.time_s,
                                finished: j.finished,
                                alone_time_s: a.as_ref().map(|a| a.time_s),
                                slowdown: *sd,
                            })
                            .collect();
                        runs.push(RunRow {
                            workload: info.stem.clone(),
                            design: design.name.clone(),
                            seed,
                            status: "ran",
                            reason: None,
                            jobs_total: record.jobs.len(),
                            jobs_finished: record.jobs.iter().filter(|j| j.finished).count(),
                            total_bytes: record.total_bytes,
                            sim_time_s: record.sim_time_s,
                            metrics: MetricRow(row.clone()),
                            jobs,
                        });
                        per_seed.push(Some(row));
                    }
                    Outcome::Skipped(reason) => {
                        runs.push(RunRow {
                            workload: info.stem.clone(),
                            design: design.name.clone(),
                            seed,
                            status: "skipped",
                            reason: Some(reason.clone()),
                            jobs_total: 0,
                            jobs_finished: 0,
                            total_bytes: 0,
                            sim_time_s: 0.0,
                            metrics: MetricRow(vec![None; METRICS.len()]),
                            jobs: Vec::new(),
                        });
                        match skipped.iter_mut().find(|k| {
                            k.workload == info.stem
                                && k.design == design.name
                                && k.reason == *reason
                        }) {
                            Some(k) => k.seeds.push(seed),
                            None => skipped.push(Skipped {
                                workload: info.stem.clone(),
                                design: design.name.clone(),
                                seeds: vec![seed],
                                reason: reason.clone(),
                            }),
                        }
                        per_seed.push(None);
                    }
                }
            }
            if per_seed.iter().all(Option::is_none) {
                skipped_designs.push(design.name.clone());
            }
            values.push(per_seed);
        }
        let metrics = rank::rank_workload(&design_names, &values);
        verdicts.push(WorkloadVerdicts {
            workload: info.stem.clone(),
            sentences: rank::verdicts(&info.stem, &metrics, &skipped_designs),
        });
        rankings.push(WorkloadRanking {
            workload: info.stem.clone(),
            metrics,
        });
    }
    let per_workload: Vec<Vec<MetricRanking>> =
        rankings.iter().map(|r| r.metrics.clone()).collect();
    let overall = rank::overall(&design_names, &per_workload);
    let slices: Vec<&[MetricRanking]> = per_workload.iter().map(Vec::as_slice).collect();
    let matrices = answer::matrices(design_names.len(), &slices);
    let answers = result
        .workloads
        .iter()
        .zip(&per_workload)
        .map(|(info, r)| WorkloadAnswer {
            workload: info.stem.clone(),
            sentence: answer::sentence(&info.stem, r),
            expectations: info
                .expectations
                .iter()
                .filter_map(|e| answer::judge(e, r))
                .collect(),
        })
        .collect();

    let mut solo = Vec::new();
    for (w, info) in result.workloads.iter().enumerate() {
        for (s, &seed) in result.seeds.iter().enumerate() {
            match &result.solo[w][s] {
                Err(reason) => solo.push(SoloRow {
                    workload: info.stem.clone(),
                    seed,
                    job_id: String::new(),
                    time_s: None,
                    progress_bytes: None,
                    reason: Some(reason.clone()),
                }),
                Ok(set) => {
                    for (id, r) in set.job_ids.iter().zip(&set.records) {
                        solo.push(SoloRow {
                            workload: info.stem.clone(),
                            seed,
                            job_id: id.clone(),
                            time_s: r.as_ref().ok().map(|j| j.time_s),
                            progress_bytes: r.as_ref().ok().map(|j| j.progress_bytes),
                            reason: r.as_ref().err().cloned(),
                        });
                    }
                }
            }
        }
    }

    Report {
        suite: result.suite_name.clone(),
        description: result.suite_description.clone(),
        crate_version: CRATE_VERSION,
        seeds: result.seeds.clone(),
        designs: result
            .designs
            .iter()
            .map(|d| DesignOut {
                name: d.name.clone(),
                policy: d.policy.clone(),
                placement: d.placement.clone(),
            })
            .collect(),
        workloads: result
            .workloads
            .iter()
            .map(|w| WorkloadOut {
                file: w.file.clone(),
                stem: w.stem.clone(),
                name: w.name.clone(),
                description: w.description.clone(),
            })
            .collect(),
        metrics: METRICS,
        families: Family::ALL.to_vec(),
        runs,
        solo,
        skipped,
        rankings,
        overall,
        verdicts,
        matrices,
        answers,
    }
}

/// `bakeoff.json` text.
pub fn bakeoff_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("the report serializes");
    text.push('\n');
    text
}

/// One CSV field: quoted when it holds a comma, quote, CR or LF (quotes doubled, RFC 4180);
/// a field a spreadsheet would run as a formula (`= + - @` first, or a tab/CR first) gets a
/// leading `'` inside the quotes.
pub fn csv_field(text: &str) -> String {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let needs_quotes = formula || text.contains([',', '"', '\n', '\r']);
    if !needs_quotes {
        return text.to_string();
    }
    let body = text.replace('"', "\"\"");
    if formula {
        format!("\"'{body}\"")
    } else {
        format!("\"{body}\"")
    }
}

fn csv_num(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(String::new, |x| x.to_string())
}

/// `bakeoff.csv` text: a header row, then one row per design × workload × seed.
pub fn bakeoff_csv(report: &Report) -> String {
    let mut out = String::new();
    let mut header = vec![
        "workload",
        "scenario",
        "design",
        "policy",
        "placement",
        "seed",
        "status",
        "reason",
        "jobs",
        "jobs_finished",
        "total_bytes",
        "sim_time_s",
    ];
    header.extend(METRICS.iter().map(|m| m.key));
    out.push_str(&header.join(","));
    out.push('\n');
    for row in &report.runs {
        let w = report
            .workloads
            .iter()
            .find(|w| w.stem == row.workload)
            .expect("rows name workloads of the report");
        let d = report
            .designs
            .iter()
            .find(|d| d.name == row.design)
            .expect("rows name designs of the report");
        let mut fields = vec![
            csv_field(&row.workload),
            csv_field(&w.name),
            csv_field(&row.design),
            csv_field(&d.policy),
            csv_field(d.placement.as_deref().unwrap_or("")),
            row.seed.to_string(),
            row.status.to_string(),
            csv_field(row.reason.as_deref().unwrap_or("")),
            row.jobs_total.to_string(),
            row.jobs_finished.to_string(),
            row.total_bytes.to_string(),
            csv_num(Some(row.sim_time_s)),
        ];
        fields.extend(row.metrics.0.iter().map(|v| csv_num(*v)));
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// Seconds in a human unit: `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 03 min`.
pub fn human_seconds(s: f64) -> String {
    if !s.is_finite() {
        return "n/a".to_string();
    }
    if s < 1.0 {
        format!("{} ms", fmt_num(s * 1e3))
    } else if s < 120.0 {
        format!("{} s", fmt_num(s))
    } else if s < 7200.0 {
        let whole = s.round() as u64;
        format!("{} min {:02} s", whole / 60, whole % 60)
    } else {
        let whole = (s / 60.0).round() as u64;
        format!("{} h {:02} min", whole / 60, whole % 60)
    }
}

/// A metric value for a table: with its unit, seconds in human units.
pub fn show_value(def: &MetricDef, v: f64) -> String {
    match def.unit {
        "s" => human_seconds(v),
        "x" => format!("{}x", fmt_num(v)),
        "" => fmt_num(v),
        u => format!("{} {u}", fmt_num(v)),
    }
}

/// Mean and 95 % interval of a ranking cell: `210 MiB/s ± 4.10 MiB/s #1`.
pub fn cell_text(def: &MetricDef, row: &rank::RankRow) -> String {
    match (row.stats, row.rank) {
        (Some(s), Some(r)) if s.ci95_half.is_some() => format!(
            "{} ± {} #{r}",
            show_value(def, s.mean),
            show_value(def, s.ci95_half.unwrap_or(0.0))
        ),
        (Some(s), Some(r)) => format!("{} #{r}", show_value(def, s.mean)),
        _ => "–".to_string(),
    }
}

pub(crate) fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '*' | '_' | '`' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A [`table::Table`] in markdown; every text escaped (a design name may hold any printable
/// character, `|` included).
pub(crate) fn md_table(out: &mut String, t: &table::Table) {
    out.push_str("| design |");
    for c in &t.columns {
        let _ = write!(out, " {} |", md_escape(&c.label));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(t.columns.len()));
    out.push('\n');
    for row in &t.rows {
        let _ = write!(out, "| {} |", md_escape(&row.name));
        for c in &row.cells {
            let _ = write!(out, " {} |", md_escape(&c.text));
        }
        out.push('\n');
    }
}

/// `results.md` text: the overall ranking, per workload the verdicts and per-family tables,
/// and the skipped combinations. Generated; meant to be pasted into `docs/bakeoff.md`.
pub fn results_md(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Bakeoff results: {}\n", md_escape(&report.suite));
    let _ = writeln!(
        out,
        "Generated by `pfsqos bakeoff` (pfsqos {}) with seeds {}; {} designs × {} workloads. \
         Each cell is the mean over the seeds, with its 95 % confidence interval when there \
         are several seeds, and the design's rank on that workload (#1 best); a tie is \
         overlapping intervals or means within 0.5 %. Overall ranks are mean ranks over the workloads.\n",
        report.crate_version,
        report
            .seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        report.designs.len(),
        report.workloads.len()
    );
    out.push_str("## Who won each workload\n\n");
    for a in &report.answers {
        let _ = writeln!(out, "* {}", md_escape(&a.sentence));
        for j in &a.expectations {
            let word = match j.outcome {
                answer::Outcome::Held => "held",
                answer::Outcome::DidNotHold => "did not hold",
                answer::Outcome::Undecided => "undecided (a tie)",
            };
            let _ = writeln!(
                out,
                "  * Expected: {} (**{word}**: {}).",
                md_escape(&j.claim),
                md_escape(&j.detail)
            );
        }
    }
    for m in &report.matrices {
        if m.metric.iter().all(Option::is_none) {
            continue;
        }
        let _ = write!(
            out,
            "\n### {}: gap to the best\n\n| workload |",
            m.family.title()
        );
        for d in &report.designs {
            let _ = write!(out, " {} |", md_escape(&d.name));
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(report.designs.len()));
        out.push('\n');
        for (w, info) in report.workloads.iter().enumerate() {
            let _ = write!(out, "| {} |", md_escape(&info.stem));
            for c in &m.cells[w] {
                let text = c.as_ref().map_or("–", |c| c.text.as_str());
                let _ = write!(out, " {} |", md_escape(text));
            }
            out.push('\n');
        }
    }
    out.push_str("\n## Overall (mean rank per metric family, lower is better)\n\n");
    md_table(&mut out, &table::overall_family_table(report));
    for (f, t) in table::overall_metric_tables(report) {
        let _ = write!(out, "\n### {}: mean rank per metric\n\n", f.title());
        md_table(&mut out, &t);
    }
    for (w, info) in report.workloads.iter().enumerate() {
        let _ = writeln!(
            out,
            "\n## {} (`{}`)\n\n{}\n",
            md_escape(&info.name),
            md_escape(&info.file),
            md_escape(info.description.trim())
        );
        for s in &report.verdicts[w].sentences {
            let _ = writeln!(out, "* {}", md_escape(s));
        }
        for (f, t) in table::workload_tables(report, w) {
            let _ = write!(out, "\n**{}**\n\n", f.title());
            md_table(&mut out, &t);
        }
    }
    out.push_str("\n## Skipped combinations\n\n");
    if report.skipped.is_empty() {
        out.push_str("None: every design ran on every workload and seed.\n");
    } else {
        out.push_str("| workload | design | seeds | reason |\n|---|---|---|---|\n");
        for k in &report.skipped {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                k.workload,
                k.design,
                k.seeds
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                md_escape(&k.reason)
            );
        }
    }
    out
}

/// `timing.json`: this machine's wall clock per run and per design (not part of the
/// byte-identical outputs).
pub fn timing_json(result: &BakeoffResult, threads: usize) -> String {
    #[derive(Serialize)]
    struct PerDesign {
        design: String,
        runs: usize,
        wall_s: f64,
        rpcs: u64,
        ns_per_rpc: Option<f64>,
        /// Controller decisions over the design's runs, wall-clock median and p99.
        decide: crate::decide_timing::DecideStats,
        #[serde(skip)]
        decide_histogram: crate::decide_timing::DecideHistogram,
    }
    #[derive(Serialize)]
    struct Timing<'a> {
        note: &'static str,
        threads: usize,
        wall_s: f64,
        executed_runs: usize,
        reused_runs: usize,
        per_design: Vec<PerDesign>,
        runs: &'a [crate::runner::TimingEntry],
    }
    let mut per_design: Vec<PerDesign> = Vec::new();
    for t in &result.timing {
        let name = if t.design.starts_with("solo:") {
            "solo".to_string()
        } else {
            t.design.clone()
        };
        let entry = match per_design.iter_mut().position(|p| p.design == name) {
            Some(i) => &mut per_design[i],
            None => {
                per_design.push(PerDesign {
                    design: name,
                    runs: 0,
                    wall_s: 0.0,
                    rpcs: 0,
                    ns_per_rpc: None,
                    decide: Default::default(),
                    decide_histogram: Default::default(),
                });
                per_design.last_mut().expect("pushed")
            }
        };
        entry.runs += 1;
        entry.wall_s += t.wall_ns as f64 / 1e9;
        entry.rpcs += t.rpcs;
        entry.decide_histogram.merge(&t.decide_histogram);
    }
    for p in &mut per_design {
        p.ns_per_rpc = (p.rpcs > 0).then(|| p.wall_s * 1e9 / p.rpcs as f64);
        p.decide = p.decide_histogram.stats();
    }
    let timing = Timing {
        note: "This machine's wall clock (reused runs: as timed when they ran). Not part of \
               bakeoff.json, which is identical for the same suite and seeds.",
        threads,
        wall_s: result.wall_ns as f64 / 1e9,
        executed_runs: result.executed_runs,
        reused_runs: result.reused_runs,
        per_design,
        runs: &result.timing,
    };
    let mut text = serde_json::to_string_pretty(&timing).expect("timing serializes");
    text.push('\n');
    text
}

/// Writes `bakeoff.json`, `bakeoff.csv`, `results.md`, `report.html` and `timing.json` into
/// `out` (each atomically).
pub fn write_outputs(out: &Path, result: &BakeoffResult, threads: usize) -> Result<Report, String> {
    let report = build_report(result);
    let files = [
        ("bakeoff.json", bakeoff_json(&report)),
        ("bakeoff.csv", bakeoff_csv(&report)),
        ("results.md", results_md(&report)),
        ("report.html", crate::html::report_html(&report, result)),
        ("timing.json", timing_json(result, threads)),
    ];
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    for (name, text) in files {
        let path = out.join(name);
        let tmp = out.join(format!(".{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_defused() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("=cmd()"), "\"'=cmd()\"");
        assert_eq!(csv_field("-1"), "\"'-1\"");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_seconds(0.25), "250 ms");
        assert_eq!(human_seconds(12.34), "12.3 s");
        assert_eq!(human_seconds(245.0), "4 min 05 s");
        assert_eq!(human_seconds(7260.0), "2 h 01 min");
    }

    #[test]
    fn markdown_escapes_table_syntax() {
        assert_eq!(md_escape("a|b<c>_d\n"), "a\\|b&lt;c&gt;\\_d ");
    }
}
