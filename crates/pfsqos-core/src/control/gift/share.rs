//! Fair shares: per-OST max-min fair share (POFS) and the synchronous share set by each
//! application's most contended OST (BSIP), plus the repair that keeps LP results inside the
//! capacities despite floating-point slack.

use super::Prepared;

/// Per application and OST (in `uses` order): the max-min fair share of the OST among the
/// applications on it, each capped at its demand (water-filling). With every demand at least the
/// capacity this is the paper's `capacity / n_j`.
pub(crate) fn pofs_bytes_per_s(p: &Prepared) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = p.apps.iter().map(|a| vec![0.0; a.uses.len()]).collect();
    // Position of OST j in each application's `uses`, to write results back.
    let mut slot: Vec<Vec<usize>> = vec![Vec::new(); p.osts.len()];
    for a in &p.apps {
        for (k, &(j, _)) in a.uses.iter().enumerate() {
            slot[j].push(k);
        }
    }
    let mut order: Vec<usize> = Vec::new();
    for (j, users) in p.users.iter().enumerate() {
        order.clear();
        order.extend(0..users.len());
        // Smallest demands are satisfied first; ties keep app order (deterministic).
        order.sort_by(|&a, &b| users[a].1.total_cmp(&users[b].1).then(a.cmp(&b)));
        let mut left = p.capacity_bytes_per_s[j];
        let mut remaining = users.len();
        for &u in &order {
            let (app, demand) = users[u];
            let level = left / remaining as f64;
            let share = demand.min(level);
            out[app][slot[j][u]] = share;
            left = (left - share).max(0.0);
            remaining -= 1;
        }
    }
    out
}

/// BSIP progress fraction per application: `min_j pofs_ij / d_ij` (§2, Fig. 5): the share on
/// its most contended OST, applied to all of its OSTs.
pub(crate) fn bsip_fractions(p: &Prepared, pofs: &[Vec<f64>]) -> Vec<f64> {
    p.apps
        .iter()
        .zip(pofs)
        .map(|(a, shares)| {
            a.uses
                .iter()
                .zip(shares)
                .map(|(&(_, d), &s)| s / d)
                .fold(1.0f64, f64::min)
                .max(0.0)
        })
        .collect()
}

/// Clamps fractions into `[floor, 1]` and then removes any capacity excess (solver tolerance)
/// by shrinking the part above the floor of the applications on an overfull OST. Floors are
/// feasible by construction, so the result respects every capacity up to rounding.
pub(crate) fn repair(p: &Prepared, fractions: &mut [f64], floors: &[f64]) {
    for (x, &f) in fractions.iter_mut().zip(floors) {
        if !x.is_finite() {
            *x = f;
        }
        *x = x.clamp(f, 1.0f64.max(f));
    }
    for _round in 0..4 {
        let mut changed = false;
        for (j, users) in p.users.iter().enumerate() {
            let load: f64 = users.iter().map(|&(i, d)| fractions[i] * d).sum();
            let over = load - p.capacity_bytes_per_s[j];
            if over <= 0.0 {
                continue;
            }
            let slack: f64 = users
                .iter()
                .map(|&(i, d)| (fractions[i] - floors[i]).max(0.0) * d)
                .sum();
            if slack <= 0.0 {
                continue;
            }
            let cut = (over / slack).min(1.0);
            for &(i, _) in users {
                let above = (fractions[i] - floors[i]).max(0.0);
                // A tiny extra margin so the sum lands at or below capacity after rounding.
                fractions[i] = (fractions[i] - above * cut * (1.0 + 1e-12)).max(floors[i]);
            }
            changed = true;
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::gift::{AppDemand, IntervalInput, OstCapacity, OstDemand};
    use crate::model::{JobId, OstId};

    #[test]
    fn water_filling_gives_small_demands_their_demand() {
        let input = IntervalInput {
            now_ns: 0,
            interval_ns: 1,
            osts: vec![OstCapacity {
                ost: OstId(0),
                capacity_bytes_per_s: 90.0,
            }],
            apps: [("a", 10.0), ("b", 100.0), ("c", 100.0)]
                .iter()
                .map(|&(n, d)| AppDemand {
                    app: JobId::new(n).unwrap(),
                    nodes: 1,
                    osts: vec![OstDemand {
                        ost: OstId(0),
                        demand_bytes_per_s: d,
                    }],
                })
                .collect(),
        };
        let p = Prepared::new(&input).unwrap();
        let pofs = pofs_bytes_per_s(&p);
        assert_eq!(pofs, vec![vec![10.0], vec![40.0], vec![40.0]]);
        let bsip = bsip_fractions(&p, &pofs);
        assert_eq!(bsip, vec![1.0, 0.4, 0.4]);
    }
}
