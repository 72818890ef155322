//! Rankings and verdicts, computed from the metric rows only.
//!
//! Per workload and metric, each design's value is the mean over the seeds it ran, with a 95 %
//! confidence interval of that mean (Student's t over the seeds; none with one seed) and the
//! seeds' min..max; designs are ranked by the mean (1 = best, equal means share a rank).
//! Overall, a design's rank in a metric is its mean rank over the workloads where it was
//! ranked, and its rank in a family the mean of its metric ranks.
//!
//! **A tie** ([`CellStats::ties_with`]): two designs' means differ by less than
//! [`TIE_RELATIVE`] of the larger magnitude, or their 95 % intervals overlap. A verdict names a
//! winner only outside that; otherwise it says which designs tie, counting them when there are
//! more than [`TIE_NAMED_MAX`].

use serde::Serialize;

use crate::metrics::{Better, Family, METRICS};

/// Means closer than this fraction of the larger one are a tie whatever the seeds say: a
/// simulator's 0.001 % is no difference a site could measure.
pub const TIE_RELATIVE: f64 = 0.005;
/// Tied designs named one by one in a sentence; beyond this they are counted.
pub const TIE_NAMED_MAX: usize = 3;

/// Two-sided 97.5 % quantiles of Student's t for 1..=30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Student's t quantile t(0.975, df); beyond the table, the normal's 1.96 plus the first
/// correction term (within 0.1 % of the exact value for df > 30).
pub fn t_975(df: usize) -> f64 {
    assert!(df >= 1, "a t quantile needs at least one degree of freedom");
    T_975
        .get(df - 1)
        .copied()
        .unwrap_or(1.959964 + 2.372 / df as f64)
}

/// Mean, 95 % interval and spread of one design's metric over the seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CellStats {
    pub mean: f64,
    /// Half-width of the 95 % confidence interval of the mean (t over the seeds); `None`
    /// with one seed.
    pub ci95_half: Option<f64>,
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
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let ci95_half = (n > 1).then(|| {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t_975(n - 1) * (var / n as f64).sqrt()
        });
        Some(CellStats {
            mean,
            ci95_half,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            seeds: n,
        })
    }

    /// The 95 % interval (the mean itself with one seed).
    pub fn interval(&self) -> (f64, f64) {
        let h = self.ci95_half.unwrap_or(0.0);
        (self.mean - h, self.mean + h)
    }

    /// Whether the two cannot be told apart (module doc): means within [`TIE_RELATIVE`], or
    /// overlapping 95 % intervals.
    pub fn ties_with(&self, other: &CellStats) -> bool {
        let scale = self.mean.abs().max(other.mean.abs());
        if (self.mean - other.mean).abs() <= TIE_RELATIVE * scale {
            return true;
        }
        let (a0, a1) = self.interval();
        let (b0, b1) = other.interval();
        a0 <= b1 && b0 <= a1
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

/// A value with its 95 % interval when there is one: `210 MiB/s ± 4.1`.
pub fn with_interval(s: &CellStats, unit: &str) -> String {
    match s.ci95_half {
        Some(h) => format!("{} ± {}", with_unit(s.mean, unit), fmt_num(h)),
        None => with_unit(s.mean, unit),
    }
}

/// "12.5 % higher": how `a` compares with `b`.
pub fn relative(a: f64, b: f64) -> String {
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

/// Designs named in a sentence: up to [`TIE_NAMED_MAX`] by name, more counted.
pub fn name_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [a] => a.to_string(),
        [a, b] => format!("{a} and {b}"),
        _ if names.len() <= TIE_NAMED_MAX => format!(
            "{} and {}",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        ),
        _ => format!("{} designs", names.len()),
    }
}

/// The ranked designs of one metric, best first (equal ranks keep design order), with the
/// designs that tie with the best.
pub struct Standing<'a> {
    pub ranked: Vec<(&'a RankRow, CellStats)>,
    /// How many of `ranked`, from the first, tie with the best (at least 1).
    pub tied: usize,
}

/// The standing of one ranking; `None` when no design has a value.
pub fn standing(r: &MetricRanking) -> Option<Standing<'_>> {
    let mut ranked: Vec<(&RankRow, CellStats, u32)> = r
        .rows
        .iter()
        .filter_map(|row| Some((row, row.stats?, row.rank?)))
        .collect();
    ranked.sort_by_key(|(_, _, rank)| *rank);
    let best = ranked.first()?.1;
    let mut ranked: Vec<(&RankRow, CellStats)> =
        ranked.into_iter().map(|(row, s, _)| (row, s)).collect();
    // The tied designs first, in rank order; the rest after, in rank order.
    let (tied, rest): (Vec<_>, Vec<_>) = ranked.drain(..).partition(|(_, s)| s.ties_with(&best));
    let n = tied.len();
    assert!(n >= 1, "the best design ties with itself");
    Some(Standing {
        ranked: tied.into_iter().chain(rest).collect(),
        tied: n,
    })
}

/// Plain-language verdict sentences for one workload, from its rankings: per headline metric,
/// the winner and its margin over the runner-up and over `nobw`, or the designs that tie.
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
        let Some(st) = standing(r) else {
            continue;
        };
        let unit = def.unit;
        let (w, ws) = st.ranked[0];
        if st.ranked.len() == 1 {
            out.push(format!(
                "{workload}, {}: only {} has a value ({}).",
                def.label,
                w.design,
                with_interval(&ws, unit)
            ));
            continue;
        }
        if st.tied == st.ranked.len() {
            out.push(format!(
                "{workload}, {}: all {} designs tie ({} to {}).",
                def.label,
                st.ranked.len(),
                with_unit(
                    st.ranked
                        .iter()
                        .map(|(_, s)| s.mean)
                        .fold(f64::INFINITY, f64::min),
                    unit
                ),
                with_unit(
                    st.ranked
                        .iter()
                        .map(|(_, s)| s.mean)
                        .fold(f64::NEG_INFINITY, f64::max),
                    unit
                )
            ));
            continue;
        }
        let (r_row, rs) = st.ranked[st.tied];
        if st.tied > 1 {
            let names: Vec<&str> = st.ranked[..st.tied]
                .iter()
                .map(|(row, _)| row.design.as_str())
                .collect();
            out.push(format!(
                "{workload}, {}: tie between {} (around {}), {} than the next, {} ({}).",
                def.label,
                name_list(&names),
                with_unit(ws.mean, unit),
                relative(ws.mean, rs.mean),
                r_row.design,
                with_unit(rs.mean, unit)
            ));
            continue;
        }
        let mut sentence = format!(
            "{workload}, {}: {} is best ({}), {} than the runner-up {} ({})",
            def.label,
            w.design,
            with_interval(&ws, unit),
            relative(ws.mean, rs.mean),
            r_row.design,
            with_interval(&rs, unit)
        );
        if w.design != "nobw" && r_row.design != "nobw" {
            if let Some((_, ns)) = st.ranked.iter().find(|(row, _)| row.design == "nobw") {
                sentence.push_str(&format!(
                    " and {} than nobw ({})",
                    relative(ws.mean, ns.mean),
                    with_unit(ns.mean, unit)
                ));
            }
        }
        sentence.push('.');
        out.push(sentence);
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
        // Throughput: adaptbf 210 ± 127 (t(1) = 12.7 over two seeds) overlaps every other
        // interval: two seeds this far apart tell nothing, and the verdict says tie.
        assert_eq!(
            v[0],
            "w, aggregate throughput: all 3 designs tie (105 MiB/s to 210 MiB/s)."
        );
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
    fn ties_are_within_half_a_percent_or_the_intervals() {
        let designs = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let cell = |agg: f64| Some(row(agg, 0.5).unwrap());
        // One seed: 0.001 % apart is a tie; the sentence says so without "1 seed".
        let one = rank_workload(
            &designs,
            &[vec![cell(100.0)], vec![cell(100.001)], vec![cell(50.0)]],
        );
        let v = verdicts("w", &one, &[]);
        assert_eq!(
            v[0],
            "w, aggregate throughput: tie between b and a (around 100 MiB/s), 100 % higher than the next, c (50.0 MiB/s)."
        );
        assert!(!v.iter().any(|s| s.contains("seed")), "{v:?}");
        // 1 % apart on one seed: a winner.
        let apart = rank_workload(
            &designs,
            &[vec![cell(101.0)], vec![cell(100.0)], vec![cell(50.0)]],
        );
        let v = verdicts("w", &apart, &[]);
        assert!(
            v[0].contains("a is best (101 MiB/s), 1.00 % higher than the runner-up b"),
            "{}",
            v[0]
        );
        // Three equal: all tie, one short sentence.
        let three = rank_workload(
            &designs,
            &[vec![cell(7.0)], vec![cell(7.0)], vec![cell(7.0)]],
        );
        let v = verdicts("w", &three, &[]);
        assert_eq!(
            v[0],
            "w, aggregate throughput: all 3 designs tie (7.00 MiB/s to 7.00 MiB/s)."
        );
        // Several seeds: 10 % apart but noisy seeds: the intervals overlap, a tie.
        let noisy = rank_workload(
            &designs,
            &[
                vec![cell(90.0), cell(130.0), cell(110.0)],
                vec![cell(95.0), cell(105.0), cell(100.0)],
                vec![cell(10.0), cell(11.0), cell(12.0)],
            ],
        );
        let v = verdicts("w", &noisy, &[]);
        assert!(v[0].contains("tie between a and b"), "{}", v[0]);
        // The same means with tight seeds: a winner, with its interval shown.
        let tight = rank_workload(
            &designs,
            &[
                vec![cell(109.0), cell(111.0), cell(110.0)],
                vec![cell(99.0), cell(101.0), cell(100.0)],
                vec![cell(10.0), cell(11.0), cell(12.0)],
            ],
        );
        let v = verdicts("w", &tight, &[]);
        assert!(v[0].contains("a is best (110 MiB/s ± 2.48)"), "{}", v[0]);
    }

    #[test]
    fn the_interval_is_students_t_over_the_seeds() {
        let s = CellStats::of(&[1.0, 2.0, 3.0]).unwrap();
        // sd 1, n 3: t(2) 4.303 / sqrt(3).
        assert!((s.ci95_half.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(CellStats::of(&[5.0]).unwrap().ci95_half, None);
        assert!((t_975(100) - 1.984).abs() < 0.002);
        let names = ["a", "b", "c", "d"];
        assert_eq!(name_list(&names[..3]), "a, b and c");
        assert_eq!(name_list(&names), "4 designs");
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
            v[0].contains("b is best (1.50x), 50.0 % lower than the runner-up a (3.00x)"),
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
