//! The ranking tables as data, built once from a [`Report`] and rendered twice: to markdown
//! (`results.md`, module `output`) and to HTML (`report.html`, module `html`). A table's
//! cells are plain text; each renderer escapes for its format.

use crate::metrics::{Better, Family, MetricDef, METRICS};
use crate::output::{cell_text, Report};
use crate::rank::MetricRanking;

/// A value column.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub label: String,
    /// Which way is better, shown as a tooltip in HTML (per-workload tables only).
    pub better: Option<Better>,
}

/// One cell: its text and whether it is the column's best (highlighted in HTML).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub text: String,
    pub best: bool,
}

/// One design's row: its index (for its colour), name and cells, one per column.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub design: usize,
    pub name: String,
    pub cells: Vec<Cell>,
}

/// A table with a `design` column first, then `columns`.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

/// A mean rank with two decimals, `–` where there is none.
pub fn rank_text(r: Option<f64>) -> String {
    r.map_or_else(|| "–".to_string(), |r| format!("{r:.2}"))
}

/// The overall table: each design's mean rank per metric family; the lowest of a column is
/// its best.
pub fn overall_family_table(report: &Report) -> Table {
    let best: Vec<Option<f64>> = (0..Family::ALL.len())
        .map(|k| {
            report
                .overall
                .iter()
                .filter_map(|r| r.family_mean_rank[k])
                .reduce(f64::min)
        })
        .collect();
    let labels = Family::ALL.iter().map(|f| f.title().to_string()).collect();
    overall_table(report, labels, |row| {
        row.family_mean_rank
            .iter()
            .enumerate()
            .map(|(k, r)| Cell {
                text: rank_text(*r),
                best: r.is_some() && *r == best[k],
            })
            .collect()
    })
}

/// A table with one row per design of the overall ranking, `labels` as its columns (no
/// tooltip) and `cells` giving a row's cells.
fn overall_table(
    report: &Report,
    labels: Vec<String>,
    cells: impl Fn(&crate::rank::OverallRow) -> Vec<Cell>,
) -> Table {
    Table {
        columns: labels
            .into_iter()
            .map(|label| Column {
                label,
                better: None,
            })
            .collect(),
        rows: report
            .overall
            .iter()
            .enumerate()
            .map(|(d, row)| Row {
                design: d,
                name: row.design.clone(),
                cells: cells(row),
            })
            .collect(),
    }
}

/// Per family, each design's mean rank per metric of the family (no highlight).
pub fn overall_metric_tables(report: &Report) -> Vec<(Family, Table)> {
    Family::ALL
        .iter()
        .map(|&f| {
            let defs: Vec<(usize, &MetricDef)> = METRICS
                .iter()
                .enumerate()
                .filter(|(_, d)| d.family == f)
                .collect();
            let labels = defs.iter().map(|(_, d)| d.label.to_string()).collect();
            let table = overall_table(report, labels, |row| {
                defs.iter()
                    .map(|(m, _)| Cell {
                        text: rank_text(row.metric_mean_rank[*m]),
                        best: false,
                    })
                    .collect()
            });
            (f, table)
        })
        .collect()
}

/// Per family with at least one value on workload `w`: each design's mean, spread and rank
/// per metric of the family; rank 1 is the best.
pub fn workload_tables(report: &Report, w: usize) -> Vec<(Family, Table)> {
    let names: Vec<String> = report.designs.iter().map(|d| d.name.clone()).collect();
    ranking_tables(&report.rankings[w].metrics, &names)
}

/// Per family with at least one value in `metrics` (one ranking per metric of [`METRICS`],
/// rows in `names` order): each design's mean, 95 % interval and rank per metric of the
/// family; rank 1 is the best.
pub fn ranking_tables(metrics: &[MetricRanking], names: &[String]) -> Vec<(Family, Table)> {
    assert_eq!(metrics.len(), METRICS.len(), "one ranking per metric");
    Family::ALL
        .iter()
        .filter_map(|&f| {
            let defs: Vec<(usize, &MetricDef)> = METRICS
                .iter()
                .enumerate()
                .filter(|(m, d)| {
                    d.family == f && metrics[*m].rows.iter().any(|r| r.stats.is_some())
                })
                .collect();
            if defs.is_empty() {
                return None;
            }
            let table = Table {
                columns: defs
                    .iter()
                    .map(|(_, d)| Column {
                        label: d.label.to_string(),
                        better: Some(d.better),
                    })
                    .collect(),
                rows: names
                    .iter()
                    .enumerate()
                    .map(|(d, name)| Row {
                        design: d,
                        name: name.clone(),
                        cells: defs
                            .iter()
                            .map(|(m, def)| {
                                let row = &metrics[*m].rows[d];
                                Cell {
                                    text: cell_text(def, row),
                                    best: row.rank == Some(1),
                                }
                            })
                            .collect(),
                    })
                    .collect(),
            };
            Some((f, table))
        })
        .collect()
}
