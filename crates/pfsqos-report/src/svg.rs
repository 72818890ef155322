//! Inline SVG charts, written by hand.
//!
//! Why not a plotting crate: the charts here are two kinds (lines over time, grouped bars), the
//! output must be byte-identical for the same input, and the report must not depend on fonts
//! installed at build time. A few hundred lines of string formatting give exact control over
//! all three without adding a dependency tree to build on every machine.

use std::fmt::Write as _;

use crate::escape;

pub(crate) const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

/// Colour-blind-safe first (Okabe-Ito without its yellow, which vanishes on white), then
/// Tableau 10 for more lines.
pub(crate) const JOB_COLORS: &[&str] = &[
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#8C564B",
    "#59A14F", "#EDC948", "#B07AA1", "#FF9DA7", "#9C755F", "#76B7B2", "#E15759", "#4E79A7",
];

/// Designs (policies) get a palette of their own so that a design colour is never mistaken for
/// a job: 16 colour-blind-safe colours, Okabe-Ito's seven (without its yellow, which vanishes
/// on white) then Paul Tol's "muted" nine. Beyond 16 designs in one report, dashes tell apart
/// designs that share a colour ([`design_styles`]).
pub(crate) const POLICY_COLORS: &[&str] = &[
    "#000000", "#E69F00", "#0072B2", "#CC79A7", "#009E73", "#D55E00", "#56B4E9", "#332288",
    "#882255", "#88CCEE", "#AA4499", "#117733", "#CC6677", "#44AA99", "#DDCC77", "#999933",
];

/// Design names with a colour of their own in every report, by [`POLICY_COLORS`] index: the
/// built-in bakeoff's designs (the demo's seven first, on Okabe-Ito) and the other policies.
const NAMED_COLORS: &[(&str, usize)] = &[
    ("nobw", 0),
    ("static", 1),
    ("adaptbf", 2),
    ("gift", 3),
    ("vpfs", 4),
    ("pi", 5),
    ("iez", 6),
    ("adaptbf+cost", 7),
    ("aimd", 8),
    ("iez+adaptbf", 9),
    ("iez+gift", 10),
    ("iez+vpfs", 11),
    ("iez+pi", 12),
    ("fifo", 13),
    ("tbf", 14),
    ("sfqd", 15),
    ("dsfq", 13),
];

pub(crate) fn job_color(i: usize) -> &'static str {
    JOB_COLORS[i % JOB_COLORS.len()]
}

/// How many colours [`design_styles`] has before it dashes.
pub const POLICY_COLORS_LEN: usize = POLICY_COLORS.len();

/// Dash patterns (SVG `stroke-dasharray`), the first solid.
pub(crate) const DASHES: &[&str] = &["", "6 3", "2 2", "8 3 2 3"];

/// A design's look: its colour and its line's dash pattern (empty: solid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DesignStyle {
    pub color: &'static str,
    pub dash: &'static str,
}

/// The colour slot of a name: its own if it has one, by the spec's name before the first
/// `:` (`pi:target=8` is `pi`'s), else a hash of the name (FNV-1a, stable everywhere).
fn color_slot(name: &str) -> usize {
    let lookup = |n: &str| NAMED_COLORS.iter().find(|(k, _)| *k == n).map(|(_, i)| *i);
    if let Some(i) = lookup(name).or_else(|| lookup(name.split(':').next().unwrap_or(name))) {
        return i;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % POLICY_COLORS.len() as u64) as usize
}

/// The look of each design of one report: a design's colour depends on its name only, the
/// same in every report; when two designs of this report get the same colour (hashed names,
/// or a spec's options), the later one gets the next dash pattern.
pub fn design_styles(names: &[&str]) -> Vec<DesignStyle> {
    let mut used: Vec<(usize, usize)> = Vec::new();
    names
        .iter()
        .map(|name| {
            let slot = color_slot(name);
            let n = used.iter().filter(|(s, _)| *s == slot).count();
            used.push((slot, n));
            DesignStyle {
                color: POLICY_COLORS[slot],
                dash: DASHES[n % DASHES.len()],
            }
        })
        .collect()
}

/// The colour of one design name (as [`design_styles`] gives it, without dashes).
pub fn design_color_of(name: &str) -> &'static str {
    POLICY_COLORS[color_slot(name)]
}

/// Legend rows drawn; beyond this a "+N more" line keeps the chart a sane height.
pub(crate) const LEGEND_ROWS_MAX: usize = 24;
const LEGEND_ROW_PX: f64 = 20.0;
pub(crate) const LEGEND_CHARS_MAX: usize = 19;
pub(crate) const WIDTH_PX: f64 = 960.0;
pub(crate) const LEGEND_WIDTH_PX: f64 = 190.0;
const TOP_PX: f64 = 44.0;
const BOTTOM_PX: f64 = 56.0;
const LEFT_PX: f64 = 78.0;
const BAR_WIDTH_PX_MAX: f64 = 110.0;

pub(crate) const GRID: &str = "#E5E7EB";
pub(crate) const AXIS: &str = "#374151";
pub(crate) const TEXT: &str = "#111827";
pub(crate) const MUTED: &str = "#4B5563";

/// One line of a line chart.
pub(crate) struct Series<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// One group of bars (a job, a policy) with its bars in legend order.
pub(crate) struct BarGroup<'a> {
    pub label: &'a str,
    pub bars: Vec<Bar<'a>>,
}

pub(crate) struct Bar<'a> {
    pub value: f64,
    pub color: &'a str,
    /// Hover text.
    pub title: String,
}

/// A tick step of 1, 2, 2.5 or 5 times a power of ten giving about `target` ticks up to `max`.
pub(crate) fn nice_step(max: f64, target: usize) -> f64 {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let mult = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    mult * magnitude
}

/// The axis end: the first tick at or above `max` (at least one step).
pub(crate) fn axis_top(max: f64, step: f64) -> f64 {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        step
    };
    (max / step - 1e-9).ceil().max(1.0) * step
}

/// Enough decimals to tell ticks of this step apart, and no more; from a step of 10,000 up,
/// in thousands (k), millions (M) or billions (G), so that a long number never runs off the
/// chart's left edge.
pub(crate) fn tick_label(value: f64, step: f64) -> String {
    let (scale, suffix) = if step >= 1e10 {
        (1e9, "G")
    } else if step >= 1e7 {
        (1e6, "M")
    } else if step >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let (value, step) = (value / scale, step / scale);
    let mut decimals = 0usize;
    let mut s = step;
    while decimals < 6 && (s - s.round()).abs() > 1e-9 * step.max(1.0) {
        s *= 10.0;
        decimals += 1;
    }
    format!("{value:.decimals$}{suffix}")
}

fn truncate(text: &str, chars_max: usize) -> String {
    if text.chars().count() <= chars_max {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(chars_max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn open_svg(out: &mut String, height: f64, title: &str) {
    let _ = write!(
        out,
        "<svg viewBox=\"0 0 {WIDTH_PX:.0} {height:.0}\" \
         width=\"{WIDTH_PX:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"{t}\" \
         font-family=\"{FONT}\" class=\"chart\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n\
         <text x=\"{LEFT_PX:.0}\" y=\"24\" font-size=\"15\" font-weight=\"600\" fill=\"{TEXT}\">{t}</text>\n",
        t = escape(title),
    );
}

/// Horizontal grid, y ticks and the rotated y label. Returns the y axis top value.
fn y_axis(out: &mut String, y_max: f64, y_label: &str, x0: f64, x1: f64, y0: f64, y1: f64) -> f64 {
    y_axis_range(out, 0.0, y_max, y_label, x0, x1, y0, y1).1
}

/// The axis ends for data in `[y_min, y_max]`: `(0, top)` for data that is never negative,
/// otherwise whole ticks on both sides of zero, with zero always on a tick.
fn y_range(y_min: f64, y_max: f64) -> (f64, f64, f64) {
    let y_min = if y_min.is_finite() {
        y_min.min(0.0)
    } else {
        0.0
    };
    let y_max = if y_max.is_finite() {
        y_max.max(0.0)
    } else {
        0.0
    };
    if y_min >= 0.0 {
        let step = nice_step(y_max, 6);
        return (0.0, axis_top(y_max, step), step);
    }
    let step = nice_step(y_max - y_min, 6);
    let top = if y_max > 0.0 {
        axis_top(y_max, step)
    } else {
        0.0
    };
    (-axis_top(-y_min, step), top, step)
}

/// [`y_axis`] for a range that may go below zero. Returns the axis `(bottom, top)`.
#[allow(clippy::too_many_arguments)]
fn y_axis_range(
    out: &mut String,
    y_min: f64,
    y_max: f64,
    y_label: &str,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
) -> (f64, f64) {
    let (bottom, top, step) = y_range(y_min, y_max);
    let ticks = ((top - bottom) / step).round() as usize;
    let first = (bottom / step).round() as i64;
    for i in 0..=ticks {
        // Ticks as integer multiples of the step: no accumulated float error in the labels.
        let v = (first + i as i64) as f64 * step;
        let y = y1 - (y1 - y0) * (v - bottom) / (top - bottom);
        let _ = writeln!(
            out,
            "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"{GRID}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{MUTED}\" text-anchor=\"end\">{}</text>",
            x0 - 8.0,
            y + 4.0,
            tick_label(v, step)
        );
    }
    let _ = writeln!(
        out,
        "<text transform=\"translate(18 {:.1}) rotate(-90)\" font-size=\"13\" fill=\"{TEXT}\" \
         text-anchor=\"middle\">{}</text>",
        (y0 + y1) / 2.0,
        escape(y_label)
    );
    (bottom, top)
}

fn frame(out: &mut String, x0: f64, x1: f64, y0: f64, y1: f64) {
    let _ = writeln!(
        out,
        "<line x1=\"{x0:.1}\" y1=\"{y1:.1}\" x2=\"{x1:.1}\" y2=\"{y1:.1}\" stroke=\"{AXIS}\"/>\
         <line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x0:.1}\" y2=\"{y1:.1}\" stroke=\"{AXIS}\"/>"
    );
}

/// Legend in a column right of the plot. `entries` are (name, colour); `line` draws line
/// swatches instead of squares.
fn legend(out: &mut String, entries: &[(&str, &str)], x: f64, y0: f64, line: bool) {
    let names: Vec<String> = entries.iter().map(|e| e.0.to_string()).collect();
    let labels = crate::scale::legend_labels(&names, LEGEND_CHARS_MAX);
    for (i, ((name, color), label)) in entries
        .iter()
        .zip(&labels)
        .take(LEGEND_ROWS_MAX)
        .enumerate()
    {
        let y = y0 + LEGEND_ROW_PX * i as f64;
        if line {
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"3\"/>",
                x + 20.0
            );
        } else {
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/>",
                x + 4.0,
                y - 6.0
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{TEXT}\"><title>{}</title>{}</text>",
            x + 28.0,
            y + 4.0,
            escape(name),
            escape(label)
        );
    }
    if entries.len() > LEGEND_ROWS_MAX {
        let y = y0 + LEGEND_ROW_PX * LEGEND_ROWS_MAX as f64;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{MUTED}\">+{} more</text>",
            x + 28.0,
            y + 4.0,
            entries.len() - LEGEND_ROWS_MAX
        );
    }
}

fn height_for_legend(entries: usize) -> f64 {
    let rows = entries.min(LEGEND_ROWS_MAX + 1) as f64;
    (TOP_PX + BOTTOM_PX + 16.0 + LEGEND_ROW_PX * rows).max(380.0)
}

/// Lines over a shared x axis starting at 0 (time in seconds in this report). The y axis
/// starts at 0 unless a value is negative; then it spans both signs and a zero line is drawn.
/// A non-finite y is a gap: the line stops and starts again at the next finite point, and a
/// point alone between gaps is drawn as a dot.
pub(crate) fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_max: f64,
    series: &[Series<'_>],
) -> String {
    let height = height_for_legend(series.len());
    let (x0, x1) = (LEFT_PX, WIDTH_PX - LEGEND_WIDTH_PX);
    let (y0, y1) = (TOP_PX, height - BOTTOM_PX);
    let finite = || {
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
    };
    let y_max = finite().fold(0.0, f64::max);
    let y_min = finite().fold(0.0, f64::min);

    let mut out = String::new();
    open_svg(&mut out, height, title);
    let (y_bottom, y_top) = y_axis_range(&mut out, y_min, y_max, y_label, x0, x1, y0, y1);

    let x_step = nice_step(x_max, 10);
    let x_top = axis_top(x_max, x_step);
    let x_ticks = (x_top / x_step).round() as usize;
    for i in 0..=x_ticks {
        let v = i as f64 * x_step;
        let x = x0 + (x1 - x0) * v / x_top;
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{y1:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{AXIS}\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{MUTED}\" text-anchor=\"middle\">{}</text>",
            y1 + 5.0,
            y1 + 20.0,
            tick_label(v, x_step)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" fill=\"{TEXT}\" text-anchor=\"middle\">{}</text>",
        (x0 + x1) / 2.0,
        height - 14.0,
        escape(x_label)
    );
    frame(&mut out, x0, x1, y0, y1);
    let to_py = |y: f64| y1 - (y1 - y0) * ((y - y_bottom) / (y_top - y_bottom)).clamp(0.0, 1.0);
    if y_bottom < 0.0 {
        let y = to_py(0.0);
        let _ = writeln!(
            out,
            "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"{AXIS}\" \
             stroke-width=\"1.2\" class=\"zero\"/>"
        );
    }

    for s in series {
        for run in s.points.split(|p| !p.1.is_finite()) {
            let pixels = run.iter().map(|&(x, y)| {
                let px = x0 + (x1 - x0) * (x / x_top).clamp(0.0, 1.0);
                (px, to_py(y))
            });
            if let [_] = run {
                for (px, py) in pixels {
                    let _ = writeln!(
                        out,
                        "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"2\" fill=\"{}\"><title>{}</title></circle>",
                        s.color,
                        escape(s.name)
                    );
                }
                continue;
            }
            if run.is_empty() {
                continue;
            }
            let _ = write!(
                out,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" stroke-linejoin=\"round\" points=\"",
                s.color
            );
            for (i, (px, py)) in pixels.enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "{px:.1},{py:.1}");
            }
            let _ = writeln!(out, "\"><title>{}</title></polyline>", escape(s.name));
        }
    }

    let entries: Vec<(&str, &str)> = series.iter().map(|s| (s.name, s.color)).collect();
    legend(&mut out, &entries, x1 + 20.0, y0 + 8.0, true);
    out.push_str("</svg>\n");
    out
}

/// Groups of bars side by side; `legend` names the bar colours (may be empty when the group
/// labels say it all).
pub(crate) fn bar_chart(
    title: &str,
    y_label: &str,
    groups: &[BarGroup<'_>],
    legend_entries: &[(&str, &str)],
) -> String {
    let height = height_for_legend(legend_entries.len());
    let right = if legend_entries.is_empty() {
        24.0
    } else {
        LEGEND_WIDTH_PX
    };
    let (x0, x1) = (LEFT_PX, WIDTH_PX - right);
    let (y0, y1) = (TOP_PX, height - BOTTOM_PX);
    let y_max = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.value))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);

    let mut out = String::new();
    open_svg(&mut out, height, title);
    // Headroom so that a value label above the tallest bar stays inside the plot.
    let y_top = y_axis(&mut out, y_max * 1.08, y_label, x0, x1, y0, y1);

    let group_w = (x1 - x0) / groups.len().max(1) as f64;
    let label_chars = ((group_w / 7.0) as usize).max(3);
    for (g, group) in groups.iter().enumerate() {
        let gx = x0 + group_w * g as f64;
        let bars = group.bars.len().max(1) as f64;
        // Wide plots with few bars would otherwise draw slabs.
        let bar_w = (group_w * 0.8 / bars).min(BAR_WIDTH_PX_MAX);
        let pad = (group_w - bar_w * bars) / 2.0;
        for (b, bar) in group.bars.iter().enumerate() {
            let v = if bar.value.is_finite() {
                bar.value.max(0.0)
            } else {
                0.0
            };
            let h = (y1 - y0) * (v / y_top).clamp(0.0, 1.0);
            let bx = gx + pad + bar_w * b as f64;
            let _ = writeln!(
                out,
                "<rect x=\"{bx:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{}</title></rect>",
                y1 - h,
                (bar_w - 2.0).max(1.0),
                bar.color,
                escape(&bar.title)
            );
            if bar_w >= 30.0 {
                let label = if v >= 100.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.1}")
                };
                let _ = writeln!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{MUTED}\" text-anchor=\"middle\">{label}</text>",
                    bx + (bar_w - 2.0) / 2.0,
                    y1 - h - 4.0
                );
            }
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{TEXT}\" text-anchor=\"middle\"><title>{}</title>{}</text>",
            gx + group_w / 2.0,
            y1 + 20.0,
            escape(group.label),
            escape(&truncate(group.label, label_chars))
        );
    }
    frame(&mut out, x0, x1, y0, y1);
    legend(&mut out, legend_entries, x1 + 20.0, y0 + 8.0, false);
    out.push_str("</svg>\n");
    out
}

/// A standalone grouped bar chart for reproduction documents (for example one group per OST,
/// one bar per placement policy): `values[g][k]` is series `k`'s value in group `g`, series
/// colored and listed in the legend in order. Labels are escaped as data.
///
/// # Panics
/// If a group's values do not match the series in number (a caller's bug).
pub fn grouped_bar_chart_svg(
    title: &str,
    y_label: &str,
    series: &[&str],
    groups: &[(&str, Vec<f64>)],
) -> String {
    let bar_groups: Vec<BarGroup<'_>> = groups
        .iter()
        .map(|(label, values)| {
            assert_eq!(
                values.len(),
                series.len(),
                "group {label:?}: one value per series"
            );
            BarGroup {
                label,
                bars: values
                    .iter()
                    .zip(series)
                    .map(|(v, name)| Bar {
                        value: *v,
                        color: design_color_of(name),
                        title: format!("{label}, {name}: {v:.2}"),
                    })
                    .collect(),
            }
        })
        .collect();
    let legend: Vec<(&str, &str)> = series
        .iter()
        .map(|name| (*name, design_color_of(name)))
        .collect();
    bar_chart(title, y_label, &bar_groups, &legend)
}

#[cfg(test)]
mod tests {
    #[test]
    fn grouped_bar_chart_draws_one_bar_per_value_and_escapes_labels() {
        let svg = grouped_bar_chart_svg(
            "OST <utilization>",
            "Utilization (%)",
            &["roundrobin", "iez"],
            &[("OST0", vec![10.0, 20.0]), ("OST1&2", vec![30.0, 0.0])],
        );
        // One bar (a rect with its hover title) per group and series.
        assert_eq!(svg.matches(", roundrobin: ").count(), 2, "{svg}");
        assert_eq!(svg.matches(", iez: ").count(), 2, "{svg}");
        assert!(svg.contains("OST &lt;utilization&gt;"), "{svg}");
        assert!(svg.contains("OST1&amp;2"), "{svg}");
        assert!(!svg.contains("OST1&2"), "{svg}");
        assert!(svg.contains("OST0, iez: 20.00"), "{svg}");
    }

    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 10), 1.0);
        assert_eq!(nice_step(60.0, 10), 10.0);
        assert_eq!(nice_step(1300.0, 6), 250.0);
        assert_eq!(nice_step(0.0, 6), 0.2);
        assert_eq!(axis_top(1300.0, 250.0), 1500.0);
        assert_eq!(axis_top(1000.0, 250.0), 1000.0);
    }

    #[test]
    fn y_range_spans_zero_on_a_tick() {
        assert_eq!(y_range(0.0, 1300.0), (0.0, 1500.0, 250.0));
        // Negative data: ticks on both sides, zero on a tick, step from the whole span.
        assert_eq!(y_range(-30.0, 70.0), (-40.0, 80.0, 20.0));
        assert_eq!(y_range(-30.0, 0.0), (-30.0, 0.0, 5.0));
        assert_eq!(y_range(f64::NAN, f64::INFINITY), (0.0, 0.2, 0.2));
    }

    fn series(points: Vec<(f64, f64)>) -> Vec<Series<'static>> {
        vec![Series {
            name: "s",
            color: "#000000",
            points,
        }]
    }

    #[test]
    fn non_negative_lines_have_no_zero_line_and_negative_ones_do() {
        let up = line_chart("t", "x", "y", 2.0, &series(vec![(0.0, 1.0), (1.0, 2.0)]));
        assert!(!up.contains("class=\"zero\""));
        let down = line_chart("t", "x", "y", 2.0, &series(vec![(0.0, 1.0), (1.0, -2.0)]));
        assert_eq!(down.matches("class=\"zero\"").count(), 1);
        assert!(down.contains(">-2.0<"), "negative tick labels");
    }

    #[test]
    fn nan_points_split_lines_and_lone_points_are_dots() {
        let nan = f64::NAN;
        let svg = line_chart(
            "t",
            "x",
            "y",
            10.0,
            &series(vec![
                (0.0, 1.0),
                (1.0, 2.0),
                (2.0, nan),
                (3.0, 1.0),
                (4.0, nan),
                (5.0, 3.0),
                (6.0, 1.0),
            ]),
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn tick_labels_use_just_enough_decimals() {
        assert_eq!(tick_label(2.0, 1.0), "2");
        assert_eq!(tick_label(0.5, 0.5), "0.5");
        assert_eq!(tick_label(0.75, 0.25), "0.75");
        assert_eq!(tick_label(1500.0, 250.0), "1500");
    }

    #[test]
    fn long_names_are_truncated() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abcdefgh", 5), "abcd…");
    }
}
