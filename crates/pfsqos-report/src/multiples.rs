//! Chart kinds for comparisons across many runs (the bakeoff report): small multiples of line
//! charts sharing one y axis, and a CDF chart. Same rules as `svg.rs`: written by hand,
//! byte-identical output for the same input, every text escaped.

use std::fmt::Write as _;

use crate::escape;
// The page's width, legend and colours are the other charts' (one look across a report).
use crate::svg::{
    axis_top, design_styles, job_color, nice_step, tick_label, DesignStyle, AXIS, FONT, GRID,
    LEGEND_CHARS_MAX, LEGEND_ROWS_MAX, LEGEND_WIDTH_PX, MUTED, TEXT, WIDTH_PX,
};

const PANEL_HEIGHT_PX: f64 = 170.0;
const PANEL_GAP_PX: f64 = 34.0;
const LEFT_PX: f64 = 56.0;
const TOP_PX: f64 = 40.0;

/// One line of a panel; line `i` of every panel has the colour of legend entry `i`.
pub struct PanelLine {
    pub points: Vec<(f64, f64)>,
}

/// One panel of a small-multiples chart.
pub struct Panel {
    pub title: String,
    /// Lines in legend order (a panel may have fewer).
    pub lines: Vec<PanelLine>,
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

fn legend(
    out: &mut String,
    names: &[String],
    style: &dyn Fn(usize) -> DesignStyle,
    x: f64,
    y0: f64,
) {
    let labels = crate::scale::legend_labels(names, LEGEND_CHARS_MAX);
    for (i, (name, label)) in names.iter().zip(&labels).take(LEGEND_ROWS_MAX).enumerate() {
        let y = y0 + 20.0 * i as f64;
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{}\" stroke-width=\"3\"{}/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{TEXT}\"><title>{}</title>{}</text>",
            x + 20.0,
            style(i).color,
            dash_attr(style(i).dash),
            x + 28.0,
            y + 4.0,
            escape(name),
            escape(label)
        );
    }
    if names.len() > LEGEND_ROWS_MAX {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{MUTED}\">+{} more</text>",
            x + 28.0,
            y0 + 20.0 * LEGEND_ROWS_MAX as f64 + 4.0,
            names.len() - LEGEND_ROWS_MAX
        );
    }
}

/// ` stroke-dasharray="…"` for a dashed line, nothing for a solid one.
fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{dash}\"")
    }
}

fn job_style(i: usize) -> DesignStyle {
    DesignStyle {
        color: job_color(i),
        dash: "",
    }
}

fn polyline(
    out: &mut String,
    points: &[(f64, f64)],
    style: DesignStyle,
    to_px: impl Fn(f64, f64) -> (f64, f64),
) {
    let finite: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    if finite.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" stroke-linejoin=\"round\"{} points=\"",
        style.color,
        dash_attr(style.dash)
    );
    for (i, &(x, y)) in finite.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let (px, py) = to_px(x, y);
        let _ = write!(out, "{px:.1},{py:.1}");
    }
    out.push_str("\"/>\n");
}

/// Panels in a grid (`columns` per row), all with the x axis `0..x_max` and one y axis from 0
/// to the largest value of any panel, so that panels compare by eye. `legend` names the lines
/// (job colours, `job_color` order).
pub fn small_multiples(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_max: f64,
    columns: usize,
    panels: &[Panel],
    legend_names: &[String],
) -> String {
    small_multiples_axes(
        title,
        x_label,
        y_label,
        x_max,
        columns,
        panels,
        legend_names,
        false,
    )
}

/// Where each panel's data ends on the x axis (0 for an empty panel).
pub fn panel_x_ends(panels: &[Panel]) -> Vec<f64> {
    panels
        .iter()
        .map(|p| {
            p.lines
                .iter()
                .flat_map(|l| l.points.iter().map(|q| q.0))
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max)
        })
        .collect()
}

/// Whether one shared x axis would squash most panels: the longest ends more than three times
/// later than the median panel (a 600 s run beside 60 s ones leaves them a tenth of the width).
pub fn shared_x_squashes(ends: &[f64]) -> bool {
    let mut v: Vec<f64> = ends.iter().copied().filter(|e| *e > 0.0).collect();
    if v.len() < 2 {
        return false;
    }
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    v[v.len() - 1] > 3.0 * median
}

/// [`small_multiples`], with `per_panel_x`: each panel's x axis ends where its own data ends
/// (the y axis stays shared), for panels [`shared_x_squashes`] would squash.
#[allow(clippy::too_many_arguments)]
pub fn small_multiples_axes(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_max: f64,
    columns: usize,
    panels: &[Panel],
    legend_names: &[String],
    per_panel_x: bool,
) -> String {
    let ends = panel_x_ends(panels);
    let columns = columns.clamp(1, 6);
    let rows = panels.len().div_ceil(columns).max(1);
    let legend_rows = legend_names.len().min(LEGEND_ROWS_MAX + 1) as f64;
    let height = (TOP_PX + rows as f64 * (PANEL_HEIGHT_PX + PANEL_GAP_PX) + 30.0)
        .max(TOP_PX + 20.0 * legend_rows + 20.0);
    let plot_w = WIDTH_PX - LEGEND_WIDTH_PX - LEFT_PX;
    let panel_w = plot_w / columns as f64 - 14.0;
    let y_max = panels
        .iter()
        .flat_map(|p| p.lines.iter().flat_map(|l| l.points.iter().map(|q| q.1)))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_step = nice_step(y_max, 4);
    let y_top = axis_top(y_max, y_step);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg viewBox=\"0 0 {WIDTH_PX:.0} {height:.0}\" width=\"{WIDTH_PX:.0}\" height=\"{height:.0}\" \
         role=\"img\" aria-label=\"{t}\" font-family=\"{FONT}\" class=\"chart\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n\
         <text x=\"{LEFT_PX:.0}\" y=\"22\" font-size=\"15\" font-weight=\"600\" fill=\"{TEXT}\">{t}</text>\n\
         <text transform=\"translate(14 {:.1}) rotate(-90)\" font-size=\"12\" fill=\"{TEXT}\" \
         text-anchor=\"middle\">{}</text>",
        TOP_PX + rows as f64 * (PANEL_HEIGHT_PX + PANEL_GAP_PX) / 2.0,
        escape(y_label),
        t = escape(title),
    );
    for (i, panel) in panels.iter().enumerate() {
        let panel_x_max = if per_panel_x && ends[i] > 0.0 {
            ends[i]
        } else {
            x_max
        };
        let x_step = nice_step(panel_x_max, 4);
        let x_top = axis_top(panel_x_max, x_step);
        let (r, c) = (i / columns, i % columns);
        let x0 = LEFT_PX + c as f64 * (panel_w + 14.0);
        let x1 = x0 + panel_w;
        let y0 = TOP_PX + r as f64 * (PANEL_HEIGHT_PX + PANEL_GAP_PX) + 16.0;
        let y1 = y0 + PANEL_HEIGHT_PX - 16.0;
        let _ = writeln!(
            out,
            "<text x=\"{x0:.1}\" y=\"{:.1}\" font-size=\"12\" font-weight=\"600\" fill=\"{TEXT}\">{}</text>",
            y0 - 5.0,
            escape(&truncate(&panel.title, 40))
        );
        let y_ticks = (y_top / y_step).round() as usize;
        for k in 0..=y_ticks {
            let v = k as f64 * y_step;
            let y = y1 - (y1 - y0) * v / y_top;
            let _ = write!(
                out,
                "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"{GRID}\"/>"
            );
            if c == 0 {
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{MUTED}\" text-anchor=\"end\">{}</text>",
                    x0 - 4.0,
                    y + 3.0,
                    tick_label(v, y_step)
                );
            }
        }
        let x_ticks = (x_top / x_step).round() as usize;
        for k in 0..=x_ticks {
            let v = k as f64 * x_step;
            let x = x0 + (x1 - x0) * v / x_top;
            let _ = write!(
                out,
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{MUTED}\" text-anchor=\"middle\">{}</text>",
                y1 + 13.0,
                tick_label(v, x_step)
            );
        }
        let _ = writeln!(
            out,
            "<line x1=\"{x0:.1}\" y1=\"{y1:.1}\" x2=\"{x1:.1}\" y2=\"{y1:.1}\" stroke=\"{AXIS}\"/>\
             <line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x0:.1}\" y2=\"{y1:.1}\" stroke=\"{AXIS}\"/>"
        );
        for (j, line) in panel.lines.iter().enumerate() {
            polyline(&mut out, &line.points, job_style(j), |x, y| {
                (
                    x0 + (x1 - x0) * (x / x_top).clamp(0.0, 1.0),
                    y1 - (y1 - y0) * (y / y_top).clamp(0.0, 1.0),
                )
            });
        }
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{TEXT}\" text-anchor=\"middle\">{}</text>",
        LEFT_PX + plot_w / 2.0,
        height - 8.0,
        escape(x_label)
    );
    legend(
        &mut out,
        legend_names,
        &job_style,
        WIDTH_PX - LEGEND_WIDTH_PX + 16.0,
        TOP_PX + 8.0,
    );
    out.push_str("</svg>\n");
    out
}

/// Empirical CDFs, one step line per entry (each design's own colour, [`design_styles`]): the
/// fraction of values at or below x. Non-finite values are left out; an entry without values
/// is listed in the legend only.
pub fn cdf_chart(title: &str, x_label: &str, lines: &[(String, Vec<f64>)]) -> String {
    let legend_rows = lines.len().min(LEGEND_ROWS_MAX + 1) as f64;
    let height = (TOP_PX + 260.0 + 50.0).max(TOP_PX + 20.0 * legend_rows + 20.0);
    let (x0, x1) = (LEFT_PX + 16.0, WIDTH_PX - LEGEND_WIDTH_PX);
    let (y0, y1) = (TOP_PX + 8.0, TOP_PX + 268.0);
    let finite = || {
        lines
            .iter()
            .flat_map(|l| l.1.iter().copied())
            .filter(|v| v.is_finite())
    };
    let x_max = finite().fold(0.0, f64::max);
    let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
    let styles = design_styles(&names);
    let x_step = nice_step(x_max, 8);
    let x_top = axis_top(x_max, x_step);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg viewBox=\"0 0 {WIDTH_PX:.0} {height:.0}\" width=\"{WIDTH_PX:.0}\" height=\"{height:.0}\" \
         role=\"img\" aria-label=\"{t}\" font-family=\"{FONT}\" class=\"chart\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n\
         <text x=\"{LEFT_PX:.0}\" y=\"22\" font-size=\"15\" font-weight=\"600\" fill=\"{TEXT}\">{t}</text>\n\
         <text transform=\"translate(16 {:.1}) rotate(-90)\" font-size=\"12\" fill=\"{TEXT}\" \
         text-anchor=\"middle\">fraction of jobs</text>",
        (y0 + y1) / 2.0,
        t = escape(title),
    );
    for k in 0..=4 {
        let v = k as f64 * 0.25;
        let y = y1 - (y1 - y0) * v;
        let _ = writeln!(
            out,
            "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"{GRID}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{MUTED}\" text-anchor=\"end\">{v:.2}</text>",
            x0 - 5.0,
            y + 4.0
        );
    }
    let x_ticks = (x_top / x_step).round() as usize;
    for k in 0..=x_ticks {
        let v = k as f64 * x_step;
        let x = x0 + (x1 - x0) * v / x_top;
        let _ = writeln!(
            out,
            "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{MUTED}\" text-anchor=\"middle\">{}</text>",
            y1 + 16.0,
            tick_label(v, x_step)
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{x0:.1}\" y1=\"{y1:.1}\" x2=\"{x1:.1}\" y2=\"{y1:.1}\" stroke=\"{AXIS}\"/>\
         <line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x0:.1}\" y2=\"{y1:.1}\" stroke=\"{AXIS}\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{TEXT}\" text-anchor=\"middle\">{}</text>",
        (x0 + x1) / 2.0,
        y1 + 36.0,
        escape(x_label)
    );
    for (i, (_, values)) in lines.iter().enumerate() {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        // A step function: flat at the previous fraction up to each value, then a jump.
        let mut points = vec![(v[0], 0.0)];
        for (k, &x) in v.iter().enumerate() {
            points.push((x, k as f64 / n));
            points.push((x, (k + 1) as f64 / n));
        }
        points.push((x_top, 1.0));
        polyline(&mut out, &points, styles[i], |x, y| {
            (
                x0 + (x1 - x0) * (x / x_top).clamp(0.0, 1.0),
                y1 - (y1 - y0) * y.clamp(0.0, 1.0),
            )
        });
    }
    let names: Vec<String> = lines.iter().map(|l| l.0.clone()).collect();
    legend(&mut out, &names, &|i| styles[i], x1 + 16.0, y0 + 8.0);
    out.push_str("</svg>\n");
    out
}

/// `text` escaped for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    escape(text)
}

/// The colour of a design (policy) name in [`cdf_chart`] and the reports' swatches: the same
/// name has the same colour in every report.
pub fn design_color(name: &str) -> &'static str {
    crate::svg::design_color_of(name)
}

/// The colour of line `i` in [`small_multiples`].
pub fn line_color(i: usize) -> &'static str {
    job_color(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_escape_names_and_are_deterministic() {
        let panels = vec![
            Panel {
                title: "<b>a</b>".into(),
                lines: vec![PanelLine {
                    points: vec![(0.0, 1.0), (1.0, 3.0)],
                }],
            },
            Panel {
                title: "b".into(),
                lines: vec![PanelLine {
                    points: vec![(0.0, 2.0), (1.0, f64::NAN)],
                }],
            },
        ];
        let names = vec!["\"job\"&<x>".to_string()];
        let a = small_multiples("t<", "s", "MiB/s", 1.0, 2, &panels, &names);
        assert_eq!(
            a,
            small_multiples("t<", "s", "MiB/s", 1.0, 2, &panels, &names)
        );
        assert!(!a.contains("<b>") && a.contains("&lt;b&gt;"));
        assert!(a.contains("&quot;job&quot;&amp;&lt;x&gt;"));
        let c = cdf_chart(
            "cdf",
            "slowdown",
            &[
                ("d<1>".into(), vec![1.0, 2.0, f64::INFINITY]),
                ("e".into(), vec![]),
            ],
        );
        assert!(c.contains("d&lt;1&gt;") && !c.contains("d<1>"));
        assert_eq!(c.matches("<polyline").count(), 1);
    }
}
