//! What keeps a report readable at hundreds of jobs and long runs: human time units, a bound
//! on the jobs drawn one by one (the rest aggregated), legend labels that keep the part in
//! which parameter-sweep names differ, per-job slowdowns across the compared policies, a
//! per-OST heat map and a generated statement of which policy did what.
//!
//! Pure functions of the run records; same input, same bytes.

use std::fmt::Write as _;

use pfsqos_core::run::RunOutput;

use crate::summary::RunSummary;
use crate::svg::{FONT, MUTED, TEXT, WIDTH_PX};
use crate::{bin_count, escape, ns_to_s, BYTES_PER_MIB};

/// Jobs drawn one by one in a chart (bars, lines); the others are aggregated into one
/// "other jobs" entry, so that a 500-application run draws at most this many plus one.
pub const JOBS_DRAWN_MAX: usize = 12;
/// Job rows in the per-job table; all jobs are in `summary.json`.
pub const JOB_ROWS_MAX: usize = 50;
/// Time columns of the heat map; neighbouring bins are merged beyond it.
pub const HEATMAP_COLUMNS_MAX: usize = 120;
/// OST rows of the heat map; neighbouring OSTs are merged into one row beyond it.
pub const HEATMAP_ROWS_MAX: usize = 48;

/// A time axis unit: seconds are divided by `seconds` and labelled `name`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    pub name: &'static str,
    pub seconds: f64,
}

/// The unit in which `span_s` reads as a number a person can take in at once: seconds up to
/// two minutes, minutes up to two hours, hours up to two days, days beyond (a 26-day run is
/// `26 d`, not `2,250,000 s`).
pub fn time_unit(span_s: f64) -> TimeUnit {
    const UNITS: [(&str, f64); 4] = [("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86400.0)];
    let (name, seconds) = UNITS
        .iter()
        .take_while(|(_, s)| !span_s.is_finite() || span_s >= 2.0 * s)
        .last()
        .copied()
        .unwrap_or(UNITS[0]);
    TimeUnit { name, seconds }
}

/// A duration in the unit [`time_unit`] picks for it (`4.00 s`, `37.5 min`, `26.0 d`).
pub fn human_duration(s: f64) -> String {
    let unit = time_unit(s);
    let v = s / unit.seconds;
    if unit.seconds == 1.0 {
        format!("{v:.2} s")
    } else {
        format!("{v:.1} {}", unit.name)
    }
}

/// Indices of the jobs drawn one by one: [`top_jobs`] with [`JOBS_DRAWN_MAX`].
pub fn drawn_jobs(summaries: &[RunSummary]) -> Vec<usize> {
    top_jobs(summaries, JOBS_DRAWN_MAX)
}

/// Indices of the `max` jobs that moved the most bytes summed over every run (the same jobs,
/// so the same colours, in every policy's chart), in scenario order. All jobs when there are
/// no more than `max`.
pub fn top_jobs(summaries: &[RunSummary], max: usize) -> Vec<usize> {
    let jobs = summaries.first().map_or(0, |s| s.jobs.len());
    if jobs <= max {
        return (0..jobs).collect();
    }
    let bytes = |i: usize| -> u64 {
        summaries
            .iter()
            .filter_map(|s| s.jobs.get(i))
            .map(|j| j.bytes)
            .sum()
    };
    let mut order: Vec<usize> = (0..jobs).collect();
    // Ties keep scenario order: the result does not depend on the sort's stability.
    order.sort_by(|&a, &b| bytes(b).cmp(&bytes(a)).then(a.cmp(&b)));
    order.truncate(max);
    order.sort_unstable();
    order
}

/// Legend labels of at most `chars_max` characters that keep where names differ. Names that
/// fit are kept. A longer name that shares a long prefix with the others (a parameter sweep:
/// `adaptbf:period_ms=100`, `adaptbf:period_ms=1000`) keeps its first characters, then `…`,
/// then the text from shortly before the first character that differs, so that
/// `period_ms=10…` never stands for both.
pub fn legend_labels(names: &[String], chars_max: usize) -> Vec<String> {
    assert!(
        chars_max >= 8,
        "a legend label needs room for head, ellipsis and tail"
    );
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let c = &chars[i];
            if c.len() <= chars_max {
                return name.clone();
            }
            // The first position at which this name differs from some other name.
            let differs_at = chars
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| c.iter().zip(o).take_while(|(a, b)| a == b).count())
                .max()
                .unwrap_or(0);
            let head = 4;
            let from = differs_at.saturating_sub(6);
            if differs_at < chars_max - 1 || from <= head + 1 {
                // The difference shows in a plain truncation.
                let mut t: String = c.iter().take(chars_max - 1).collect();
                t.push('…');
                return t;
            }
            let mut label: String = c.iter().take(head).collect();
            label.push('…');
            let room = chars_max - head - 1;
            let tail = &c[from..];
            if tail.len() <= room {
                label.extend(tail);
            } else {
                label.extend(&tail[..room - 1]);
                label.push('…');
            }
            label
        })
        .collect()
}

/// Per-job slowdown of each run against the best of the compared runs: the job's I/O time
/// under this policy over its shortest I/O time under any compared policy (1 for the best; a
/// comparison, not a solo run, is the reference). `None` where the job did no I/O in a run.
/// Indexed `[run][job]`, jobs matched by position (the runs of one scenario).
pub fn relative_slowdowns(summaries: &[RunSummary]) -> Vec<Vec<Option<f64>>> {
    let jobs = summaries.first().map_or(0, |s| s.jobs.len());
    let best: Vec<Option<f64>> = (0..jobs)
        .map(|i| {
            summaries
                .iter()
                .filter_map(|s| s.jobs.get(i))
                .map(|j| j.io_time_s)
                .filter(|t| t.is_finite() && *t > 0.0)
                .min_by(f64::total_cmp)
        })
        .collect();
    summaries
        .iter()
        .map(|s| {
            (0..jobs)
                .map(|i| {
                    let t = s.jobs.get(i)?.io_time_s;
                    let b = best[i]?;
                    (t.is_finite() && t > 0.0).then(|| t / b)
                })
                .collect()
        })
        .collect()
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// A comparison runs one seed: policies whose values are within this many percent of the
/// best's are a tie, never a winner on a gap no one could measure.
const TIE_PERCENT: f64 = 0.5;

/// The policies within [`TIE_PERCENT`] of `best` (higher is better), in order.
fn ties_with_best(
    summaries: &[RunSummary],
    best: f64,
    key: impl Fn(&RunSummary) -> f64,
) -> Vec<&str> {
    summaries
        .iter()
        .filter(|s| {
            let v = key(s);
            v.is_finite() && (best - v).abs() <= TIE_PERCENT / 100.0 * best.abs()
        })
        .map(|s| s.policy.as_str())
        .collect()
}

fn best_by(summaries: &[RunSummary], key: impl Fn(&RunSummary) -> f64) -> Option<usize> {
    (0..summaries.len())
        .filter(|&i| key(&summaries[i]).is_finite())
        .max_by(|&a, &b| {
            key(&summaries[a])
                .total_cmp(&key(&summaries[b]))
                .then(b.cmp(&a))
        })
}

/// A few sentences, generated from the numbers, saying which policy did what: highest
/// aggregate throughput, fairest (Jain over per-job throughput), closest to the weighted
/// shares, median slowdown against the best compared policy, rejected control writes. Plain
/// text; the caller escapes it.
pub fn verdicts(summaries: &[RunSummary]) -> Vec<String> {
    let mut out = Vec::new();
    let name = |i: usize| summaries[i].policy.as_str();
    if summaries.len() == 1 {
        let s = &summaries[0];
        out.push(format!(
            "{} moved {:.1} MiB/s in aggregate over {} with a Jain index of {:.3} across {} jobs.",
            s.policy,
            s.aggregate_throughput_mib_s,
            human_duration(s.sim_time_s),
            s.jain_index,
            s.jobs.len()
        ));
    } else {
        if let (Some(hi), Some(lo)) = (
            best_by(summaries, |s| s.aggregate_throughput_mib_s),
            best_by(summaries, |s| -s.aggregate_throughput_mib_s),
        ) {
            let (h, l) = (
                summaries[hi].aggregate_throughput_mib_s,
                summaries[lo].aggregate_throughput_mib_s,
            );
            let tied = ties_with_best(summaries, h, |s| s.aggregate_throughput_mib_s);
            let gap = if l > 0.0 {
                format!(
                    ", {:.0} % above the lowest, {}",
                    (h / l - 1.0) * 100.0,
                    name(lo)
                )
            } else {
                String::new()
            };
            let who = if tied.len() > 1 {
                format!("a tie (within {TIE_PERCENT} %) between {}", tied.join(", "))
            } else {
                name(hi).to_string()
            };
            out.push(format!(
                "Highest aggregate throughput: {who} ({h:.1} MiB/s){gap} ({l:.1} MiB/s)."
            ));
        }
        // Where jobs carry weights of their own (not all equal), fairness is judged against
        // them: the weighted index, over the window in which every job ran.
        let weighted = summaries[0]
            .jobs
            .windows(2)
            .any(|w| w[0].weight != w[1].weight);
        let (label, key): (&str, fn(&RunSummary) -> f64) = if weighted {
            (
                "Fairest by weight (weighted Jain index of the bytes each job moved against its weight)",
                |s| s.weighted_jain_index,
            )
        } else {
            (
                "Fairest across jobs (Jain index of per-job throughput)",
                |s| s.jain_index,
            )
        };
        if let (Some(hi), Some(lo)) = (best_by(summaries, key), best_by(summaries, |s| -key(s))) {
            let tied = ties_with_best(summaries, key(&summaries[hi]), key);
            let who = if tied.len() > 1 {
                format!("a tie (within {TIE_PERCENT} %) between {}", tied.join(", "))
            } else {
                name(hi).to_string()
            };
            out.push(format!(
                "{label}: {who} ({:.3}); least fair: {} ({:.3}).",
                key(&summaries[hi]),
                name(lo),
                key(&summaries[lo])
            ));
        }
        if let Some(best) = best_by(summaries, |s| -s.share_deviation) {
            out.push(format!(
                "Closest to the node-count shares (smallest share deviation): {} ({:.3}).",
                name(best),
                summaries[best].share_deviation
            ));
        }
        let slow = relative_slowdowns(summaries);
        let medians: Vec<String> = slow
            .iter()
            .enumerate()
            .filter_map(|(i, per_job)| {
                let mut v: Vec<f64> = per_job.iter().flatten().copied().collect();
                median(&mut v).map(|m| format!("{} {m:.2}x", name(i)))
            })
            .collect();
        if !medians.is_empty() {
            out.push(format!(
                "Median per-job slowdown against the best compared policy for that job: {}.",
                medians.join(", ")
            ));
        }
    }
    let rejected: Vec<String> = summaries
        .iter()
        .filter(|s| s.rejected_control_writes > 0)
        .map(|s| {
            format!(
                "{} ({} of {})",
                s.policy, s.rejected_control_writes, s.control_writes
            )
        })
        .collect();
    if !rejected.is_empty() {
        out.push(format!(
            "Control writes were rejected under {}.",
            rejected.join(", ")
        ));
    }
    out
}

/// Throughput of OST row `r` (OSTs merged `ost_merge` per row) over time column `c` (bins
/// merged `bin_merge` per column), in MiB/s. Rows × columns.
fn heat_cells(run: &RunOutput, ost_merge: usize, bin_merge: usize) -> Vec<Vec<f64>> {
    let bins = bin_count(run);
    let rows = run.osts.len().div_ceil(ost_merge);
    let cols = bins.div_ceil(bin_merge);
    let mut bytes = vec![vec![0u64; cols]; rows];
    for job in &run.jobs {
        for (ost, per_bin) in job.bytes_per_ost_bin.iter() {
            let Some(row) = bytes.get_mut(ost / ost_merge) else {
                continue;
            };
            for (b, v) in per_bin.iter().enumerate() {
                if let Some(cell) = row.get_mut(b / bin_merge) {
                    *cell += v;
                }
            }
        }
    }
    let bin_s = ns_to_s(run.bin_ns);
    bytes
        .iter()
        .enumerate()
        .map(|(r, row)| {
            // The last row may hold fewer OSTs and the last column fewer bins: divide by what
            // they hold, so that a partial cell is not drawn paler than it was.
            let osts = (run.osts.len() - r * ost_merge).min(ost_merge) as f64;
            row.iter()
                .enumerate()
                .map(|(c, &v)| {
                    let width_s = (bins - c * bin_merge).min(bin_merge) as f64 * bin_s;
                    if width_s > 0.0 {
                        v as f64 / BYTES_PER_MIB / width_s / osts
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

/// A colour from white (0) to dark blue (1).
fn heat_color(fraction: f64) -> String {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let lerp = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    format!(
        "#{:02X}{:02X}{:02X}",
        lerp(247.0, 8.0),
        lerp(251.0, 48.0),
        lerp(255.0, 107.0)
    )
}

/// Per-OST heat maps, one per run, sharing one colour scale (the largest cell of any run) so
/// that policies compare by eye: a row per OST (neighbouring OSTs merged beyond
/// [`HEATMAP_ROWS_MAX`], value per OST), a column per time span (bins merged beyond
/// [`HEATMAP_COLUMNS_MAX`]), shade by MiB/s.
pub fn heatmaps(runs: &[RunOutput]) -> String {
    let ost_count = runs.iter().map(|r| r.osts.len()).max().unwrap_or(0);
    if ost_count == 0 {
        return String::new();
    }
    let ost_merge = ost_count.div_ceil(HEATMAP_ROWS_MAX).max(1);
    let cells: Vec<Vec<Vec<f64>>> = runs
        .iter()
        .map(|r| {
            let merge = bin_count(r).div_ceil(HEATMAP_COLUMNS_MAX).max(1);
            heat_cells(r, ost_merge, merge)
        })
        .collect();
    let max = cells
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let mut out = String::new();
    for (run, grid) in runs.iter().zip(&cells) {
        let rows = grid.len();
        let cols = grid.first().map_or(0, Vec::len).max(1);
        let (left, top, right) = (150.0, 34.0, 24.0);
        let row_h = (240.0 / rows.max(1) as f64).clamp(4.0, 18.0);
        let cell_w = (WIDTH_PX - left - right) / cols as f64;
        let height = top + row_h * rows as f64 + 44.0;
        let span_s = bin_count(run) as f64 * ns_to_s(run.bin_ns);
        let unit = time_unit(span_s);
        let _ = writeln!(
            out,
            "<svg viewBox=\"0 0 {WIDTH_PX:.0} {height:.0}\" width=\"{WIDTH_PX:.0}\" height=\"{height:.0}\" \
             role=\"img\" aria-label=\"{t}\" font-family=\"{FONT}\" class=\"chart heatmap\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n\
             <text x=\"{left:.0}\" y=\"22\" font-size=\"15\" font-weight=\"600\" fill=\"{TEXT}\">{t}</text>",
            t = escape(&format!("Throughput per OST over time: {}", run.policy)),
        );
        for (r, row) in grid.iter().enumerate() {
            let y = top + row_h * r as f64;
            let first = r * ost_merge;
            let last = ((r + 1) * ost_merge).min(run.osts.len()) - 1;
            let label = if first == last {
                run.osts[first].clone()
            } else {
                format!("{}–{}", run.osts[first], run.osts[last])
            };
            if rows <= 24 || r % rows.div_ceil(24) == 0 {
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{MUTED}\" text-anchor=\"end\">{}</text>",
                    left - 6.0,
                    y + row_h / 2.0 + 3.0,
                    escape(&label)
                );
            }
            for (c, v) in row.iter().enumerate() {
                let fraction = if max > 0.0 { v / max } else { 0.0 };
                let _ = write!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{row_h:.1}\" fill=\"{}\"/>",
                    left + cell_w * c as f64,
                    cell_w + 0.05,
                    heat_color(fraction)
                );
            }
            out.push('\n');
        }
        let y_axis = top + row_h * rows as f64;
        for k in 0..=4 {
            let x = left + (WIDTH_PX - left - right) * k as f64 / 4.0;
            let _ = write!(
                out,
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{MUTED}\" text-anchor=\"middle\">{:.1}</text>",
                y_axis + 13.0,
                span_s * k as f64 / 4.0 / unit.seconds
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{TEXT}\" text-anchor=\"middle\">Time ({})</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{MUTED}\" text-anchor=\"end\">white 0, darkest {:.1} MiB/s per OST</text>\n</svg>",
            (left + WIDTH_PX - right) / 2.0,
            y_axis + 30.0,
            unit.name,
            WIDTH_PX - right,
            y_axis + 30.0,
            max
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units_are_human() {
        assert_eq!(time_unit(4.0).name, "s");
        assert_eq!(time_unit(119.0).name, "s");
        assert_eq!(time_unit(120.0).name, "min");
        assert_eq!(time_unit(7200.0).name, "h");
        assert_eq!(time_unit(2_250_000.0).name, "d");
        assert_eq!(time_unit(f64::NAN).name, "d");
        assert_eq!(human_duration(2_250_000.0), "26.0 d");
        assert_eq!(human_duration(4.0), "4.00 s");
        assert_eq!(human_duration(5400.0), "90.0 min");
    }

    #[test]
    fn sweep_labels_keep_the_differing_part() {
        let names: Vec<String> = [
            "adaptbf:period_ms=100,step=2",
            "adaptbf:period_ms=1000,step=2",
            "tbf",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let labels = legend_labels(&names, 22);
        assert_eq!(labels[2], "tbf");
        assert_ne!(labels[0], labels[1], "{labels:?}");
        for l in &labels {
            assert!(l.chars().count() <= 22, "{l}");
        }
        assert!(
            labels[0].contains("=100,") && labels[1].contains("=1000"),
            "{labels:?}"
        );
        // Names differing early are truncated plainly.
        let plain = legend_labels(&["a123456789012345678901234".into(), "b".into()], 10);
        assert_eq!(plain[0], "a12345678…");
    }

    #[test]
    fn heat_colors_span_white_to_blue() {
        assert_eq!(heat_color(0.0), "#F7FBFF");
        assert_eq!(heat_color(1.0), "#08306B");
        assert_eq!(heat_color(f64::NAN), "#F7FBFF");
    }
}
