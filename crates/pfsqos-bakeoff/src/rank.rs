//! Rankings and verdicts, computed from the metric rows only.
//!
//! Per workload and metric, each design's value is the mean over the seeds it ran, with the
//! seeds' min..max as its spread; designs are ranked by the mean (1 = best, equal means share
//! a rank). Overall, a design's rank in a metric is its mean rank over the workloads where it
//! was ranked, and its rank in a family the mean of its metric ranks.
//!
//! A verdict sentence names the best design on a headline metric, by how much it beats the
//! runner-up and `nobw`, and the seed spreads; when the best and the runner-up's spreads
//! overlap it says "tie" instead of naming a winner (with one seed there is no spread: the
//! tie is equal values, and the sentence says so).

use serde::Serialize;

use crate::metrics::{Better, Family, METRICS};

/// Mean and spread of one design's metric over the seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CellStats {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Seeds with a value.
    pub seeds: usize,
}

impl CellStats {
    pub fn of(values: &[f64]) -> Option<CellStats> {
        if values.is_empty() {
            return None;
        }
        Some(CellStats {
            mean: values.iter().sum::<f64>() / values.len() as f64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            seeds: values.len(),
        })
    }

    fn overlaps(&self, other: &CellStats) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// One design in one metric's ranking.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankRow {
    pub design: String,
    /// `None`: the design has no value (skipped, or the metric does not apply).
    pub stats: Option<CellStats>,
    pub rank: Option<u32>,
}

/// One metric's ranking on one workload; rows in design order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRanking {
    pub metric: &'static str,
    pub rows: Vec<RankRow>,
}

/// `values[d][s]`: design `d`'s metric rows per seed (`None`: skipped). Returns one ranking per
/// metric of [`METRICS`].
pub fn rank_workload(
    designs: &[String],
    values: &[Vec<Option<Vec<Option<f64>>>>],
) -> Vec<MetricRanking> {
    assert_eq!(designs.len(), values.len());
    METRICS
        .iter()
        .enumerate()
        .map(|(m, def)| {
            // A metric some run lacks is not ranked at all where it needs every run.
            let missing_somewhere = values
                .iter()
                .flatten()
                .flatten()
                .any(|row| row[m].is_none());
            let comparable = !(def.needs_every_run && missing_somewhere);
            let stats: Vec<Option<CellStats>> = values
                .iter()
                .map(|per_seed| {
                    if !comparable {
                        return None;
                    }
                    let v: Vec<f64> = per_seed
                        .iter()
                        .filter_map(|row| row.as_ref().and_then(|r| r[m]))
                        .collect();
                    CellStats::of(&v)
                })
                .collect();
            let better_than = |a: f64, b: f64| match def.better {
                Better::Higher => a > b,
                Better::Lower => a < b,
            };
            let rows = designs
                .iter()
                .zip(&stats)
                .map(|(design, s)| RankRow {
                    design: design.clone(),
                    stats: *s,
                    rank: s.map(|s| {
                        1 + stats
                            .iter()
                            .flatten()
                            .filter(|o| better_than(o.mean, s.mean))
                            .count() as u32
                    }),
                })
                .collect();
            MetricRanking {
                metric: def.key,
                rows,
            }
        })
        .collect()
}

/// A design's overall standing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverallRow {
    pub design: String,
    /// Per metric of [`METRICS`]: mean rank over the workloads where it was ranked.
    pub metric_mean_rank: Vec<Option<f64>>,
    /// Per family of [`Family::ALL`]: mean of the metric mean ranks.
    pub family_mean_rank: Vec<Option<f64>>,
}

/// Overall ranks from the per-workload rankings.
pub fn overall(designs: &[String], per_workload: &[Vec<MetricRanking>]) -> Vec<OverallRow> {
    designs
        .iter()
        .enumerate()
        .map(|(d, design)| {
            let metric_mean_rank: Vec<Option<f64>> = (0..METRICS.len())
                .map(|m| {
                    let ranks: Vec<f64> = per_workload
                        .iter()
                        .filter_map(|w| w[m].rows[d].rank.map(f64::from))
                        .collect();
                    CellStats::of(&ranks).map(|s| s.mean)
                })
                .collect();
            let family_mean_rank = Family::ALL
                .iter()
                .map(|f| {
                    let ranks: Vec<f64> = METRICS
                        .iter()
                        .zip(&metric_mean_rank)
                        .filter(|(def, _)| def.family == *f)
                        .filter_map(|(_, r)| *r)
                        .collect();
                    CellStats::of(&ranks).map(|s| s.mean)
                })
                .collect();
            OverallRow {
                design: design.clone(),
                metric_mean_rank,
                family_mean_rank,
            }
        })
        .collect()
}

/// The metrics a verdict speaks about, in sentence order.
pub const VERDICT_METRICS: &[&str] = &[
    "aggregate_mib_s",
    "min_job_mib_s",
    "weighted_jain",
    "slowdown_p95",
    "run_time_mean_s",
    "ost_cost",
];

/// A number with about three significant digits, fixed format (deterministic text).
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn with_unit(v: f64, unit: &str) -> String {
    match unit {
        "" => fmt_num(v),
        "x" => format!("{}x", fmt_num(v)),
        u => format!("{} {u}", fmt_num(v)),
    }
}

fn spread(s: &CellStats, unit: &str) -> String {
    if s.seeds <= 1 {
        "1 seed".to_string()
    } else {
        format!(
            "{} seeds {}..{}",
            s.seeds,
            with_unit(s.min, unit),
            with_unit(s.max, unit)
        )
    }
}

/// "12.5 % higher": how `a` compares with `b`.
fn relative(a: f64, b: f64) -> String {
    if b == 0.0 || !b.is_finite() {
        return if a > b { "higher" } else { "lower" }.to_string();
    }
    let pct = (a - b).abs() / b.abs() * 100.0;
    format!(
        "{} % {}",
        fmt_num(pct),
        if a > b { "higher" } else { "lower" }
    )
}

/// Why designs tie: with one seed each there is no spread, only equal values; with several
/// seeds (for any of them) their min..max spreads overlap with the best one's. `others` is
/// how many designs tie with the best.
fn tie_reason(single_seed: bool, others: usize) -> &'static str {
    match (single_seed, others) {
        (true, 1) => "both have the same value on the one seed run",
        (true, _) => "all have the same value on the one seed run",
        (false, _) => "their seed spreads overlap",
    }
}

/// Plain-language verdict sentences for one workload, from its rankings.
pub fn verdicts(
    workload: &str,
    rankings: &[MetricRanking],
    skipped_designs: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for key in VERDICT_METRICS {
        let Some(r) = rankings.iter().find(|r| r.metric == *key) else {
            continue;
        };
        let def = METRICS
            .iter()
            .find(|d| d.key == *key)
            .expect("verdict metrics are metrics");
        let mut ranked: Vec<(&RankRow, CellStats, u32)> = r
            .rows
            .iter()
            .filter_map(|row| Some((row, row.stats?, row.rank?)))
            .collect();
        // Stable: equal ranks keep design order.
        ranked.sort_by_key(|(_, _, rank)| *rank);
        let unit = def.unit;
        let show = |row: &RankRow, s: &CellStats| {
            format!(
                "{} ({}, {})",
                row.design,
                with_unit(s.mean, unit),
                spread(s, unit)
            )
        };
        match ranked.as_slice() {
            [] => {}
            [(row, s, _)] => out.push(format!(
                "{workload}, {}: only {} has a value.",
                def.label,
                show(row, s)
            )),
            [(w, ws, _), (r, rs, _), ..] => {
                let tied: Vec<&CellStats> = ranked
                    .iter()
                    .skip(1)
                    .filter(|(_, s, _)| s.overlaps(ws))
                    .map(|(_, s, _)| s)
                    .collect();
                if !tied.is_empty() {
                    let shown: Vec<String> = ranked
                        .iter()
                        .skip(1)
                        .filter(|(_, s, _)| s.overlaps(ws))
                        .map(|(row, s, _)| show(row, s))
                        .collect();
                    let single_seed = ws.seeds == 1 && tied.iter().all(|s| s.seeds == 1);
                    out.push(format!(
                        "{workload}, {}: tie between {} and {}: {}.",
                        def.label,
                        show(w, ws),
                        shown.join(", "),
                        tie_reason(single_seed, shown.len())
                    ));
                    continue;
                }
                let mut sentence = format!(
                    "{workload}, {}: {} is best, {} than the runner-up {}",
                    def.label,
                    show(w, ws),
                    relative(ws.mean, rs.mean),
                    show(r, rs)
                );
                if w.design != "nobw" && r.design != "nobw" {
                    if let Some((nb, ns, _)) =
                        ranked.iter().find(|(row, _, _)| row.design == "nobw")
                    {
                        sentence.push_str(&format!(
                            " and {} than {}",
                            relative(ws.mean, ns.mean),
                            show(nb, ns)
                        ));
                    }
                }
                sentence.push('.');
                out.push(sentence);
            }
        }
    }
    if !skipped_designs.is_empty() {
        out.push(format!(
            "{workload}: not run under {} (the simulator refused; reasons in the skipped list).",
            skipped_designs.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::metric_index;

    fn row(agg: f64, wj: f64) -> Option<Vec<Option<f64>>> {
        let mut r = vec![None; METRICS.len()];
        r[metric_index("aggregate_mib_s")] = Some(agg);
        r[metric_index("weighted_jain")] = Some(wj);
        Some(r)
    }

    #[test]
    fn ranking_and_verdicts_on_a_hand_built_table() {
        let designs: Vec<String> = ["nobw", "adaptbf", "gift", "vpfs"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let values = vec![
            vec![row(100.0, 0.50), row(110.0, 0.52)], // nobw: 105 (100..110)
            vec![row(200.0, 0.90), row(220.0, 0.91)], // adaptbf: 210 (200..220)
            vec![row(150.0, 0.90), row(160.0, 0.95)], // gift: 155 (150..160)
            vec![None, None],                         // vpfs: skipped
        ];
        let r = rank_workload(&designs, &values);
        let agg = &r[metric_index("aggregate_mib_s")];
        let ranks: Vec<Option<u32>> = agg.rows.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, vec![Some(3), Some(1), Some(2), None]);
        assert_eq!(agg.rows[1].stats.unwrap().mean, 210.0);
        assert_eq!(agg.rows[1].stats.unwrap().min, 200.0);

        let v = verdicts("w", &r, &["vpfs".to_string()]);
        // Throughput: a clear winner, compared with the runner-up and nobw.
        assert!(
            v[0].starts_with("w, aggregate throughput: adaptbf (210 MiB/s, 2 seeds 200 MiB/s..220 MiB/s) is best, 35.5 % higher than the runner-up gift (155 MiB/s")
                && v[0].contains("100 % higher than nobw (105 MiB/s"),
            "{}",
            v[0]
        );
        // Weighted Jain: gift 0.925 (0.90..0.95) and adaptbf 0.905 (0.90..0.91) overlap.
        let wj = v.iter().find(|s| s.contains("weighted Jain")).unwrap();
        assert!(
            wj.contains("tie between gift (0.925") && wj.contains("adaptbf (0.905"),
            "{wj}"
        );
        assert!(!wj.contains("nobw"), "{wj}");
        assert!(v.last().unwrap().contains("not run under vpfs"));

        let o = overall(&designs, &[r.clone(), r]);
        assert_eq!(
            o[1].metric_mean_rank[metric_index("aggregate_mib_s")],
            Some(1.0)
        );
        assert_eq!(o[3].metric_mean_rank[metric_index("aggregate_mib_s")], None);
        // adaptbf: rank 1 in aggregate, 2 in weighted Jain (gift's mean is higher).
        let fairness = Family::ALL
            .iter()
            .position(|f| *f == Family::Fairness)
            .unwrap();
        assert_eq!(o[1].family_mean_rank[fairness], Some(2.0));
    }

    #[test]
    fn tie_wording_fits_one_seed_and_several() {
        let designs = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let cell = |agg: f64| Some(row(agg, 0.5).unwrap());
        // One seed: a and b equal, c lower.
        let one = rank_workload(
            &designs,
            &[vec![cell(100.0)], vec![cell(100.0)], vec![cell(50.0)]],
        );
        let v = verdicts("w", &one, &[]);
        assert!(
            v[0].ends_with("tie between a (100 MiB/s, 1 seed) and b (100 MiB/s, 1 seed): both have the same value on the one seed run."),
            "{}",
            v[0]
        );
        assert!(!v[0].contains("spread"), "{}", v[0]);
        // Three designs equal on one seed.
        let three = rank_workload(
            &designs,
            &[vec![cell(7.0)], vec![cell(7.0)], vec![cell(7.0)]],
        );
        let v = verdicts("w", &three, &[]);
        assert!(
            v[0].ends_with("all have the same value on the one seed run."),
            "{}",
            v[0]
        );
        // Two seeds: overlapping spreads, different means.
        let two = rank_workload(
            &designs,
            &[
                vec![cell(90.0), cell(120.0)],
                vec![cell(100.0), cell(105.0)],
                vec![cell(10.0), cell(20.0)],
            ],
        );
        let v = verdicts("w", &two, &[]);
        assert!(v[0].contains("tie between a (105 MiB/s"), "{}", v[0]);
        assert!(v[0].ends_with(": their seed spreads overlap."), "{}", v[0]);
    }

    #[test]
    fn lower_is_better_metrics_rank_upwards() {
        let designs = vec!["a".to_string(), "b".to_string()];
        let mut r1 = vec![None; METRICS.len()];
        r1[metric_index("slowdown_p95")] = Some(3.0);
        let mut r2 = vec![None; METRICS.len()];
        r2[metric_index("slowdown_p95")] = Some(1.5);
        let r = rank_workload(&designs, &[vec![Some(r1)], vec![Some(r2)]]);
        let s = &r[metric_index("slowdown_p95")];
        assert_eq!(s.rows[0].rank, Some(2));
        assert_eq!(s.rows[1].rank, Some(1));
        let v = verdicts("w", &r, &[]);
        assert!(
            v[0].contains("b (1.50x, 1 seed) is best, 50.0 % lower than the runner-up a (3.00x"),
            "{}",
            v[0]
        );
    }

    #[test]
    fn a_metric_that_needs_every_run_is_not_ranked_when_one_run_lacks_it() {
        let designs = vec!["a".to_string(), "b".to_string()];
        // b's first seed had no all-jobs-active window: weighted Jain is absent there.
        let mut b1 = row(50.0, 0.9).unwrap();
        b1[metric_index("weighted_jain")] = None;
        let values = vec![
            vec![row(100.0, 0.5), row(100.0, 0.5)],
            vec![Some(b1), row(50.0, 0.9)],
        ];
        let r = rank_workload(&designs, &values);
        let wj = &r[metric_index("weighted_jain")];
        assert!(wj
            .rows
            .iter()
            .all(|row| row.stats.is_none() && row.rank.is_none()));
        // Other metrics rank as usual, and a metric without the flag keeps its partial ranking.
        assert_eq!(r[metric_index("aggregate_mib_s")].rows[0].rank, Some(1));
        let mut c = row(10.0, 0.5).unwrap();
        c[metric_index("jain")] = Some(0.7);
        let partial = rank_workload(&designs, &[vec![Some(c)], vec![row(20.0, 0.5)]]);
        assert_eq!(partial[metric_index("jain")].rows[0].rank, Some(1));
        assert_eq!(partial[metric_index("weighted_jain")].rows[1].rank, Some(1));
        let v = verdicts("w", &r, &[]);
        assert!(v.iter().all(|s| !s.contains("weighted Jain")), "{v:?}");
    }
}
