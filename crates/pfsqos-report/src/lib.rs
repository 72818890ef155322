//! Output writers: `timeseries.csv`, `control_trace.csv`, `summary.json` and a self-contained
//! `report.html`.
//!
//! Everything here is a pure function of a [`RunOutput`] (and the scenario, for its
//! description) to bytes; the `write_*` functions only put those bytes in files. Same input,
//! same bytes: no timestamps, no hash-map order, fixed float formatting.
//!
//! API boundary: this crate reads the record types of `pfsqos_core::run` (filled by the
//! simulator or by a recorded live run) and a scenario's name and description
//! ([`ScenarioText`]); it never runs anything and does not depend on the simulator.
//! Numbers derived from a run (throughput, fairness) are computed here, with the metric
//! functions of `pfsqos-core`.

mod html;
mod multiples;
mod scale;
mod summary;
mod svg;
mod timeseries;
mod trace;

use std::fmt;
use std::path::{Path, PathBuf};

use pfsqos_core::control::ControlWrite;
use pfsqos_core::run::RunOutput;
use serde::Serialize;

/// What a report shows of a scenario: its name and description (a simulator `Scenario`'s
/// fields of those names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScenarioText<'a> {
    pub name: &'a str,
    pub description: &'a str,
}

pub use html::{
    index_html, report_html, report_html_described, IndexEntry, POINTS_PER_LINE_MAX,
    REJECTED_SHOWN_MAX, STYLE as REPORT_STYLE,
};
pub use multiples::{
    cdf_chart, design_color, escape_html, line_color, panel_x_ends, shared_x_squashes,
    small_multiples, small_multiples_axes, Panel, PanelLine,
};
pub use scale::{
    human_duration, legend_labels, relative_slowdowns, time_unit, top_jobs, verdicts, TimeUnit,
    HEATMAP_COLUMNS_MAX, HEATMAP_ROWS_MAX, JOBS_DRAWN_MAX, JOB_ROWS_MAX,
};
pub use summary::{
    summarize, EngineSummary, FairnessWindow, JobSummary, RejectedWrite, RunSummary, WindowBasis,
    REJECTED_LISTED_MAX,
};
pub use svg::grouped_bar_chart_svg;
pub use svg::{design_styles, DesignStyle, POLICY_COLORS_LEN};
pub use timeseries::{timeseries_csv, CSV_HEADER};
pub use trace::{control_trace_csv, KNOWN_METRICS, TRACE_CSV_HEADER, TRACE_METRICS_MAX};

pub(crate) const BYTES_PER_MIB: f64 = (1u64 << 20) as f64;

/// Runs compared in one report.
pub const POLICIES_MAX: usize = 64;
/// Bins beyond the recorded ones that the run's end time may add (zero totals). A bogus end
/// time must not make the CSV unbounded.
pub const BINS_MAX: usize = 1 << 24;

/// A report that could not be written.
#[derive(Debug)]
pub enum ReportError {
    /// Writing a file or creating a directory failed.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The runs cannot go into one report (none, too many, duplicate or unusable policy names).
    Invalid(String),
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ReportError::Invalid(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for ReportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReportError::Io { source, .. } => Some(source),
            ReportError::Invalid(_) => None,
        }
    }
}

/// `summary.json` of a comparison: the scenario, then one run summary per policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparisonSummary {
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    pub policies: Vec<String>,
    /// The directory of each policy's files ([`unique_dir_names`] of `policies`).
    pub directories: Vec<String>,
    pub runs: Vec<RunSummary>,
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Serializing plain structs of numbers and strings cannot fail.
    let mut text = serde_json::to_string_pretty(value).expect("summary serializes");
    text.push('\n');
    text
}

/// `summary.json` text of one run.
pub fn summary_json(run: &RunOutput) -> String {
    to_json(&summarize(run))
}

/// `summary.json` text of a comparison.
pub fn comparison_json(runs: &[RunOutput], scenario: &ScenarioText) -> String {
    to_json(&ComparisonSummary {
        scenario: runs
            .first()
            .map_or_else(|| scenario.name.to_string(), |r| r.scenario_name.clone()),
        description: scenario.description.to_string(),
        seed: runs.first().map_or(0, |r| r.seed),
        policies: runs.iter().map(|r| r.policy.clone()).collect(),
        directories: unique_dir_names(
            &runs.iter().map(|r| r.policy.clone()).collect::<Vec<_>>(),
            "policy",
        ),
        runs: runs.iter().map(summarize).collect(),
    })
}

fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn create_dir(path: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// `control_trace.csv` in `dir` for a run with a trace. For a run without one, a
/// `control_trace.csv` left in `dir` by an earlier run is removed: it would describe another run.
fn write_trace(dir: &Path, run: &RunOutput) -> Result<(), ReportError> {
    let path = dir.join("control_trace.csv");
    if run.control_trace.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(ReportError::Io { path, source: e })
            }
            _ => Ok(()),
        };
    }
    write_file(&path, &control_trace_csv(run))
}

/// Writes `dir/{timeseries.csv,summary.json,report.html}` for one run, and
/// `dir/control_trace.csv` if the run has a controller trace; creates `dir`.
pub fn write_run(dir: &Path, run: &RunOutput, scenario: &ScenarioText) -> Result<(), ReportError> {
    write_run_page(dir, run, scenario.description, html::Source::Simulated)
}

/// [`write_run`] for a run without a scenario file (a live run recorded by `pfsqos stat
/// --record`): the report shows `description` where a scenario's description goes, and no
/// simulator fields (seed, events).
pub fn write_run_described(
    dir: &Path,
    run: &RunOutput,
    description: &str,
) -> Result<(), ReportError> {
    write_run_page(dir, run, description, html::Source::Live)
}

fn write_run_page(
    dir: &Path,
    run: &RunOutput,
    description: &str,
    source: html::Source,
) -> Result<(), ReportError> {
    create_dir(dir)?;
    write_file(&dir.join("timeseries.csv"), &timeseries_csv(run))?;
    write_trace(dir, run)?;
    write_file(&dir.join("summary.json"), &summary_json(run))?;
    write_file(
        &dir.join("report.html"),
        &html::page(std::slice::from_ref(run), description, source),
    )
}

/// Characters kept in a directory name at most.
pub const DIR_NAME_CHARS_MAX: usize = 64;

/// `text` as one directory name that is safe for scp, make, shells and Windows: no `:` (scp
/// reads `host:path`, make a rule, Windows a drive), no `/`, no leading `.`. The mapping, the
/// only one used for output directories:
/// * ASCII letters, digits, `-`, `_`, `.` and `+` are kept;
/// * `:` and `,` (which separate a policy from its parameters and the parameters) become `+`;
/// * `=` becomes `-`;
/// * anything else becomes `_`;
/// * leading dots are dropped, the result is cut to [`DIR_NAME_CHARS_MAX`] characters, and an
///   empty result is `fallback`.
///
/// `adaptbf:period_ms=100,window=5` becomes `adaptbf+period_ms-100+window-5`. Different
/// names may map to one directory name: [`unique_dir_names`] resolves that.
pub fn dir_name(text: &str, fallback: &str) -> String {
    let mapped: String = text
        .chars()
        .take(DIR_NAME_CHARS_MAX)
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+') => c,
            ':' | ',' => '+',
            '=' => '-',
            _ => '_',
        })
        .collect();
    let trimmed = mapped.trim_start_matches('.');
    if trimmed.is_empty() {
        fallback.to_string()
    } else {
        trimmed.to_string()
    }
}

/// [`dir_name`] of each name, made unique: a name whose directory name an earlier one already
/// took (compared without case, as on Windows and macOS) gets `-2`, `-3`, … appended, in the
/// order given, so the same list always gives the same directories.
pub fn unique_dir_names(names: &[String], fallback: &str) -> Vec<String> {
    let mut taken: Vec<String> = Vec::with_capacity(names.len());
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let base = dir_name(name, fallback);
        let mut candidate = base.clone();
        let mut n = 2;
        while taken.contains(&candidate.to_ascii_lowercase()) {
            candidate = format!("{base}-{n}");
            n += 1;
        }
        taken.push(candidate.to_ascii_lowercase());
        out.push(candidate);
    }
    out
}

/// Writes `dir/<policy dir>/{timeseries.csv,summary.json}` per run (and `control_trace.csv`
/// for a run with a controller trace), then `dir/summary.json` (all policies, with each one's
/// directory) and `dir/report.html`. Runs are reported in the order given; a policy's
/// directory is [`unique_dir_names`] of the policy names. Returns those directory names.
pub fn write_comparison(
    dir: &Path,
    runs: &[RunOutput],
    scenario: &ScenarioText,
) -> Result<Vec<String>, ReportError> {
    if runs.is_empty() || runs.len() > POLICIES_MAX {
        return Err(ReportError::Invalid(format!(
            "a comparison needs 1 to {POLICIES_MAX} runs, got {}",
            runs.len()
        )));
    }
    for (i, run) in runs.iter().enumerate() {
        if runs[..i].iter().any(|r| r.policy == run.policy) {
            return Err(ReportError::Invalid(format!(
                "policy `{}` appears twice in the comparison",
                run.policy
            )));
        }
    }
    let policies: Vec<String> = runs.iter().map(|r| r.policy.clone()).collect();
    let dirs = unique_dir_names(&policies, "policy");
    create_dir(dir)?;
    for (run, name) in runs.iter().zip(&dirs) {
        let sub = dir.join(name);
        create_dir(&sub)?;
        write_file(&sub.join("timeseries.csv"), &timeseries_csv(run))?;
        write_trace(&sub, run)?;
        write_file(&sub.join("summary.json"), &summary_json(run))?;
    }
    write_file(&dir.join("summary.json"), &comparison_json(runs, scenario))?;
    write_file(&dir.join("report.html"), &report_html(runs, scenario))?;
    Ok(dirs)
}

/// Writes `dir/report.html`: an index of comparisons written by [`write_comparison`] into
/// sub-directories of `dir`.
pub fn write_index(
    dir: &Path,
    title: &str,
    intro: &str,
    entries: &[IndexEntry],
) -> Result<(), ReportError> {
    create_dir(dir)?;
    write_file(&dir.join("report.html"), &index_html(title, intro, entries))
}

/// Bins in the run's series: what was recorded, extended to the run's end so that totals have
/// no gap at the tail (bounded by [`BINS_MAX`]).
pub(crate) fn bin_count(run: &RunOutput) -> usize {
    let recorded = run
        .jobs
        .iter()
        .map(|j| j.bytes_per_ost_bin.bins())
        .max()
        .unwrap_or(0);
    let to_end = if run.bin_ns == 0 {
        0
    } else {
        usize::try_from(run.end_ns.div_ceil(run.bin_ns)).unwrap_or(usize::MAX)
    };
    recorded.max(to_end.min(BINS_MAX))
}

pub(crate) fn ns_to_s(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Exact decimal seconds of an integer nanosecond count, without trailing zeros
/// (`0`, `0.1`, `12.000000001`): no float rounding can make two runs' CSVs differ.
pub(crate) fn fmt_seconds(ns: u64) -> String {
    let whole = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// The control write as `lctl set_param` would show its value.
pub(crate) fn control_write_text(write: &ControlWrite) -> String {
    // Variants other helpers add later still print, through Debug.
    let (param, text) = write.param_and_text();
    format!("{param}={text}")
}

/// Escapes text for HTML element content and attribute values (SVG included).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
