//! The answer first: per metric family a workload × design matrix of how far each design is
//! from the best (ties shown as ties, [`crate::rank::CellStats::ties_with`]), one sentence per
//! workload saying who won what and by how much, and whether the workload's stated
//! expectations ([`crate::suite::Expectation`]) held.
//!
//! Each family is judged on one headline metric ([`HEADLINES`]: the first of its list that has
//! values on the workload), so that a cell is one number a reader can check in the tables.

use serde::Serialize;

use crate::metrics::{Better, Family, MetricDef, METRICS};
use crate::rank::{fmt_num, name_list, relative, standing, with_interval, MetricRanking};
use crate::suite::Expectation;

/// The headline metric of each family, in preference order.
pub const HEADLINES: &[(Family, &[&str])] = &[
    (Family::AppTime, &["run_time_mean_s", "slowdown_mean"]),
    (Family::Fairness, &["weighted_jain", "jain"]),
    (Family::Throughput, &["aggregate_mib_s"]),
    (Family::Balance, &["ost_cost"]),
    (Family::Cost, &["control_writes_per_s"]),
];

/// Families spoken of in a workload's sentence (the matrix shows all).
const SENTENCE_FAMILIES: usize = 3;

/// How far a value is behind the best, as a fraction of the best's magnitude (0: as good);
/// `f64::INFINITY` when the best is 0 and the value is not.
pub fn gap(def: &MetricDef, value: f64, best: f64) -> f64 {
    let behind = match def.better {
        Better::Higher => best - value,
        Better::Lower => value - best,
    };
    if behind <= 0.0 {
        0.0
    } else if best == 0.0 {
        f64::INFINITY
    } else {
        behind / best.abs()
    }
}

/// One cell of a matrix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatrixCell {
    /// `best`, `tie`, or the gap (`−12 %`, `3.1x`).
    pub text: String,
    /// Ties with the best (the best itself included).
    pub tie_best: bool,
    /// Behind the best, as a fraction (0 for a tie).
    pub gap: f64,
    /// The value with its 95 % interval, for a tooltip.
    pub value: String,
}

/// One family's matrix: `cells[w][d]`, `None` where the design has no value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FamilyMatrix {
    pub family: Family,
    /// The metric judged per workload (`None`: none of the family's headlines has values).
    pub metric: Vec<Option<&'static str>>,
    pub cells: Vec<Vec<Option<MatrixCell>>>,
}

fn headline(
    family: Family,
    rankings: &[MetricRanking],
) -> Option<(&MetricRanking, &'static MetricDef)> {
    let keys = HEADLINES
        .iter()
        .find(|(f, _)| *f == family)
        .map(|(_, k)| *k)
        .expect("every family has headlines");
    keys.iter().find_map(|key| {
        let r = rankings.iter().find(|r| r.metric == *key)?;
        let def = METRICS.iter().find(|d| d.key == *key)?;
        r.rows
            .iter()
            .any(|row| row.stats.is_some())
            .then_some((r, def))
    })
}

/// A gap in words for a cell: `−12 %` up to 100 %, `3.1x` (times the best's value) beyond.
fn gap_text(def: &MetricDef, value: f64, best: f64, g: f64) -> String {
    if !g.is_finite() {
        return "worse".to_string();
    }
    match def.better {
        Better::Lower if g >= 1.0 => format!("{}x", fmt_num(value / best)),
        _ => format!("−{} %", fmt_num(g * 100.0)),
    }
}

/// The matrices, in [`HEADLINES`] order; `rankings[w]` per workload, `designs` their names.
pub fn matrices(designs: usize, rankings: &[&[MetricRanking]]) -> Vec<FamilyMatrix> {
    HEADLINES
        .iter()
        .map(|(family, _)| {
            let mut metric = Vec::new();
            let mut cells = Vec::new();
            for r in rankings {
                let Some((mr, def)) = headline(*family, r) else {
                    metric.push(None);
                    cells.push(vec![None; designs]);
                    continue;
                };
                metric.push(Some(def.key));
                let st = standing(mr).expect("a headline has values");
                let best = st.ranked[0].1;
                let row = mr
                    .rows
                    .iter()
                    .map(|row| {
                        let s = row.stats?;
                        let tie_best = s.ties_with(&best);
                        let g = if tie_best {
                            0.0
                        } else {
                            gap(def, s.mean, best.mean)
                        };
                        let text = if row.design == st.ranked[0].0.design && st.tied == 1 {
                            "best".to_string()
                        } else if tie_best {
                            "tie".to_string()
                        } else {
                            gap_text(def, s.mean, best.mean, g)
                        };
                        Some(MatrixCell {
                            text,
                            tie_best,
                            gap: g,
                            value: format!("{}: {}", def.label, with_interval(&s, def.unit)),
                        })
                    })
                    .collect();
                cells.push(row);
            }
            FamilyMatrix {
                family: *family,
                metric,
                cells,
            }
        })
        .collect()
}

/// Whether an expectation held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Held,
    DidNotHold,
    /// A tie with a design it should beat: the run cannot tell.
    Undecided,
}

/// An expectation and what the run says of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judged {
    pub claim: String,
    pub outcome: Outcome,
    /// The numbers behind the outcome, in words.
    pub detail: String,
}

/// Judges `e` on one workload's rankings; `None` when the run lacks its design, a design it
/// should beat, or the metric's values.
pub fn judge(e: &Expectation, rankings: &[MetricRanking]) -> Option<Judged> {
    let r = rankings.iter().find(|r| r.metric == e.metric)?;
    let def = METRICS.iter().find(|d| d.key == e.metric)?;
    let stats_of = |name: &str| r.rows.iter().find(|row| row.design == name)?.stats;
    let mine = stats_of(&e.design)?;
    let better = |a: f64, b: f64| match def.better {
        Better::Higher => a > b,
        Better::Lower => a < b,
    };
    let (outcome, detail) = if e.beats.is_empty() {
        let st = standing(r)?;
        let (w, ws) = st.ranked[0];
        let tied: Vec<&str> = st.ranked[..st.tied]
            .iter()
            .map(|(row, _)| row.design.as_str())
            .collect();
        if tied.contains(&e.design.as_str()) {
            let how = if st.tied == 1 {
                "best".to_string()
            } else {
                format!("tied for best with {}", st.tied - 1)
            };
            (
                Outcome::Held,
                format!(
                    "{} {how} on {} ({})",
                    e.design,
                    def.label,
                    with_interval(&mine, def.unit)
                ),
            )
        } else {
            (
                Outcome::DidNotHold,
                format!(
                    "{} is best on {} ({}); {} has {}, {}",
                    w.design,
                    def.label,
                    with_interval(&ws, def.unit),
                    e.design,
                    with_interval(&mine, def.unit),
                    relative(mine.mean, ws.mean)
                ),
            )
        }
    } else {
        let mut parts = Vec::new();
        let mut outcome = Outcome::Held;
        for b in &e.beats {
            let other = stats_of(b)?;
            let word = if mine.ties_with(&other) {
                if outcome == Outcome::Held {
                    outcome = Outcome::Undecided;
                }
                "ties with"
            } else if better(mine.mean, other.mean) {
                "beats"
            } else {
                outcome = Outcome::DidNotHold;
                "loses to"
            };
            parts.push(format!(
                "{} {word} {b} ({} against {}, {})",
                e.design,
                with_interval(&mine, def.unit),
                with_interval(&other, def.unit),
                relative(mine.mean, other.mean)
            ));
        }
        (outcome, format!("on {}: {}", def.label, parts.join("; ")))
    };
    Some(Judged {
        claim: e.claim.clone(),
        outcome,
        detail,
    })
}

/// The family's winner in words: `vpfs (mean job time 21.5 s, 2.72 % lower than adaptbf)`
/// or `a tie between gift and vpfs`.
fn family_phrase(family: Family, rankings: &[MetricRanking]) -> Option<String> {
    let (r, def) = headline(family, rankings)?;
    let st = standing(r)?;
    let (w, ws) = st.ranked[0];
    let what = match family {
        Family::AppTime => "fastest jobs",
        Family::Fairness => "fairest",
        Family::Throughput => "most throughput",
        Family::Balance => "best balance",
        Family::Cost => "cheapest",
    };
    if st.ranked.len() == 1 {
        return Some(format!("{what}: only {} ran", w.design));
    }
    if st.tied == st.ranked.len() {
        if let [(a, _), (b, _)] = st.ranked.as_slice() {
            return Some(format!(
                "{what}: {} and {} tie on {}",
                a.design, b.design, def.label
            ));
        }
        return Some(format!(
            "{what}: all {} designs tie on {}",
            st.ranked.len(),
            def.label
        ));
    }
    let (next, ns) = st.ranked[st.tied];
    if st.tied > 1 {
        let names: Vec<&str> = st.ranked[..st.tied]
            .iter()
            .map(|(row, _)| row.design.as_str())
            .collect();
        return Some(format!(
            "{what}: a tie between {} on {} ({} than the next, {})",
            name_list(&names),
            def.label,
            relative(ws.mean, ns.mean),
            next.design
        ));
    }
    Some(format!(
        "{what}: {} ({} {}, {} than {})",
        w.design,
        def.label,
        with_interval(&ws, def.unit),
        relative(ws.mean, ns.mean),
        next.design
    ))
}

/// The workload's one sentence: its first families' winners.
pub fn sentence(workload: &str, rankings: &[MetricRanking]) -> String {
    let parts: Vec<String> = HEADLINES
        .iter()
        .take(SENTENCE_FAMILIES)
        .filter_map(|(f, _)| family_phrase(*f, rankings))
        .collect();
    if parts.is_empty() {
        return format!("{workload}: no design has a value.");
    }
    format!("{workload}: {}.", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::metric_index;
    use crate::rank::rank_workload;

    fn row(time: f64, wj: f64, agg: f64) -> Option<Vec<Option<f64>>> {
        let mut r = vec![None; METRICS.len()];
        r[metric_index("run_time_mean_s")] = Some(time);
        r[metric_index("weighted_jain")] = Some(wj);
        r[metric_index("aggregate_mib_s")] = Some(agg);
        Some(r)
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_matrix_marks_the_best_ties_and_gaps() {
        let d = names(&["nobw", "static", "adaptbf"]);
        let r = rank_workload(
            &d,
            &[
                vec![row(30.0, 0.7, 1000.0)],
                vec![row(60.0, 0.992, 1000.2)],
                vec![row(20.0, 0.995, 900.0)],
            ],
        );
        let m = matrices(3, &[&r]);
        let time = &m[0];
        assert_eq!(time.family, Family::AppTime);
        let t: Vec<&str> = time.cells[0]
            .iter()
            .map(|c| c.as_ref().unwrap().text.as_str())
            .collect();
        // 30 s is 50 % behind 20 s; 60 s is three times it.
        assert_eq!(t, vec!["−50.0 %", "3.00x", "best"]);
        let f: Vec<&str> = m[1].cells[0]
            .iter()
            .map(|c| c.as_ref().unwrap().text.as_str())
            .collect();
        // 0.992 is within 0.5 % of 0.995: a tie, not a loss.
        assert_eq!(f, vec!["−29.6 %", "tie", "tie"]);
        assert!(m[1].cells[0][1].as_ref().unwrap().tie_best);
        assert_eq!(
            m[3].metric,
            vec![None],
            "no OSTCost values: no balance cell"
        );
        let s = sentence("w", &r);
        assert_eq!(
            s,
            "w: fastest jobs: adaptbf (mean job time 20.0 s, 33.3 % lower than nobw); fairest: a \
             tie between adaptbf and static on weighted Jain's index (42.1 % higher than the \
             next, nobw); most throughput: a tie between static and nobw on aggregate \
             throughput (11.1 % higher than the next, adaptbf)."
        );
    }

    #[test]
    fn expectations_hold_fail_or_stay_undecided() {
        let d = names(&["nobw", "static", "adaptbf"]);
        let r = rank_workload(
            &d,
            &[
                vec![row(30.0, 0.7, 1000.0)],
                vec![row(60.0, 0.992, 1000.2)],
                vec![row(20.0, 0.995, 900.0)],
            ],
        );
        let e = |design: &str, metric: &str, beats: &[&str]| Expectation {
            workload: "w.toml".into(),
            claim: "c".into(),
            design: design.into(),
            metric: metric.into(),
            beats: names(beats),
        };
        let j = judge(&e("adaptbf", "run_time_mean_s", &["static"]), &r).unwrap();
        assert_eq!(j.outcome, Outcome::Held, "{}", j.detail);
        assert!(
            j.detail
                .contains("adaptbf beats static (20.0 s against 60.0 s, 66.7 % lower)"),
            "{}",
            j.detail
        );
        let j = judge(&e("adaptbf", "aggregate_mib_s", &["nobw"]), &r).unwrap();
        assert_eq!(j.outcome, Outcome::DidNotHold, "{}", j.detail);
        let j = judge(&e("adaptbf", "weighted_jain", &["static"]), &r).unwrap();
        assert_eq!(j.outcome, Outcome::Undecided, "{}", j.detail);
        let j = judge(&e("static", "weighted_jain", &[]), &r).unwrap();
        assert_eq!(j.outcome, Outcome::Held, "{}", j.detail);
        let j = judge(&e("nobw", "run_time_mean_s", &[]), &r).unwrap();
        assert_eq!(j.outcome, Outcome::DidNotHold);
        assert!(
            j.detail.starts_with("adaptbf is best on mean job time"),
            "{}",
            j.detail
        );
        assert!(judge(&e("gift", "run_time_mean_s", &[]), &r).is_none());
    }

    /// Over several seeds the matrix and the sentence follow the 95 % intervals: a gap of
    /// 13 % between noisy seeds is a tie, the same gap between tight seeds a winner.
    #[test]
    fn over_seeds_a_gap_inside_the_interval_is_a_tie() {
        let d = names(&["a", "b"]);
        let seeds = |times: [f64; 3]| -> Vec<Option<Vec<Option<f64>>>> {
            times.iter().map(|&t| row(t, 0.9, 1000.0)).collect()
        };
        // Means 30 s and 34 s; a's seeds spread 20-40 s, so its interval holds 34.
        let noisy = rank_workload(&d, &[seeds([20.0, 30.0, 40.0]), seeds([33.0, 34.0, 35.0])]);
        let m = matrices(2, &[&noisy]);
        let cells: Vec<_> = m[0].cells[0].iter().map(|c| c.clone().unwrap()).collect();
        assert!(cells.iter().all(|c| c.tie_best), "{cells:?}");
        assert!(
            sentence("w", &noisy).contains("fastest jobs: a and b tie on mean job time"),
            "{}",
            sentence("w", &noisy)
        );
        // The same means with tight seeds: a wins, and b's cell is its gap.
        let tight = rank_workload(&d, &[seeds([29.9, 30.0, 30.1]), seeds([33.9, 34.0, 34.1])]);
        let m = matrices(2, &[&tight]);
        let t: Vec<String> = m[0].cells[0]
            .iter()
            .map(|c| c.as_ref().unwrap().text.clone())
            .collect();
        assert_eq!(t, vec!["best", "−13.3 %"]);
        assert!(!m[0].cells[0][1].as_ref().unwrap().tie_best);
        let s = sentence("w", &tight);
        assert!(s.contains("fastest jobs: a (mean job time 30.0 s"), "{s}");
    }
}
