//! Fair shares: per-OST max-min fair share (POFS) and the synchronous share set by each
//! application's most contended OST (BSIP), plus the repair that keeps LP results inside the
//! capacities despite floating-point slack, and the optional redistribution of leftover
//! bandwidth.
//!
//! Two definitions of "a share" (`docs/reproductions/gift.md`, "The authors' artifact"):
//!
//! * [`ShareUnit::App`] (the paper's §2 and Fig. 5: `1/n_j` per *application* on OST `j`);
//! * [`ShareUnit::Stream`] (the authors' artifact: one share per open stream, so an
//!   application with `k` streams on an OST gets `k/n_j` where `n_j` counts streams; BSIP gives
//!   each stream its application's bottleneck per-stream share `min_j 1/n_j`). Implemented as
//!   demand `k · d_ij` and fair-share weight `k`: the progress fraction `x_i` is then the
//!   artifact's per-stream rate, and eq. 1 `Σ_i x_i D_i` the artifact's LP objective.

use super::{Allocation, Prepared};

/// What one fair share belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShareUnit {
    /// One share per application and OST (the paper, §2; pfsqos's default).
    #[default]
    App,
    /// One share per open stream (file) per OST (the authors' artifact).
    Stream,
}

/// How a GIFT-family policy turns its decision into caps: the share unit and whether leftover
/// bandwidth is handed out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShareOptions {
    pub unit: ShareUnit,
    /// After the policy's allocation, split every OST's leftover capacity among the
    /// applications on it (weighted max-min, each up to its demand). The extra is not
    /// synchronous (eq. 1 is unchanged) but makes the policy work-conserving. `false` (default,
    /// and the artifact, where the switch is compiled off) leaves gaps unused.
    pub redistribute: bool,
}

/// Per application and OST, aligned with [`Prepared::uses_flat`] (application `i`'s at
/// [`Prepared::use_range`]): the max-min fair share of the OST among the applications on it,
/// each capped at its demand (water-filling). With every demand at least the capacity this is
/// the paper's `capacity / n_j`.
pub(crate) fn pofs_bytes_per_s(p: &Prepared) -> Vec<f64> {
    let mut out: Vec<f64> = vec![0.0; p.uses_flat().len()];
    let mut scratch = WaterFill::default();
    let mut demands: Vec<f64> = Vec::new();
    for j in 0..p.osts_len() {
        let users = p.users(j);
        demands.clear();
        demands.extend(users.iter().map(|&(_, d)| d));
        let shares = scratch.fill(p.capacity_bytes_per_s[j], &demands, p.user_weights(j));
        for (&share, &k) in shares.iter().zip(p.user_use_positions(j)) {
            out[k] = share;
        }
    }
    out
}

/// Weighted max-min fair split of `capacity` among claimants wanting `wants[u]` with weights
/// `weights[u] > 0`: the smallest `want / weight` are satisfied first, the rest share what is
/// left in proportion to their weights. With unit weights the arithmetic is exactly the
/// unweighted water-filling (`x * 1.0` and sums of `1.0` are exact), so the `app` unit's
/// results are bit-identical to what they were before weights existed.
/// Buffers of [`WaterFill::fill`], reused across the OSTs of a decision.
#[derive(Default)]
struct WaterFill {
    order: Vec<usize>,
    /// `want / weight` per claimant, computed once instead of in every comparison.
    level: Vec<f64>,
    out: Vec<f64>,
}

impl WaterFill {
    fn fill(&mut self, capacity: f64, wants: &[f64], weights: &[f64]) -> &[f64] {
        debug_assert_eq!(wants.len(), weights.len());
        self.level.clear();
        self.level
            .extend(wants.iter().zip(weights).map(|(&w, &k)| w / k));
        self.order.clear();
        self.order.extend(0..wants.len());
        // Ties keep input order (deterministic); the index breaks them, so the order is total
        // and an unstable sort gives the one order a stable sort would.
        let level = &self.level;
        // Often already in order (equal demands: the paper's model), then the sort is skipped.
        if !level.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
            self.order
                .sort_unstable_by(|&a, &b| level[a].total_cmp(&level[b]).then(a.cmp(&b)));
        }
        self.out.clear();
        self.out.resize(wants.len(), 0.0);
        let mut left = capacity;
        let mut remaining: f64 = weights.iter().sum();
        for &u in &self.order {
            let level = left / remaining;
            let share = wants[u].min(level * weights[u]);
            self.out[u] = share;
            left = (left - share).max(0.0);
            remaining -= weights[u];
        }
        &self.out
    }
}

/// Hands every OST's leftover capacity (capacity minus the sum of the caps on it) to the
/// applications on it, weighted max-min by the share unit's weights, each up to its demand.
/// Progress fractions and eq. 1 stay as the policy computed them: the extra is bandwidth
/// beyond the synchronous share, usable only by processes that may run ahead of their
/// application's slowest OST.
pub(crate) fn redistribute(p: &Prepared, out: &mut Allocation) {
    let mut scratch = WaterFill::default();
    for j in 0..p.osts_len() {
        let users = p.users(j);
        if users.is_empty() {
            continue;
        }
        // Each user's cap on this OST: its position among the application's uses.
        let slot = |u: usize| p.user_use_positions(j)[u] - p.use_range(users[u].0).start;
        let load: f64 = users
            .iter()
            .enumerate()
            .map(|(u, &(i, _))| out.apps[i].caps[slot(u)].cap_bytes_per_s)
            .sum();
        let left = p.capacity_bytes_per_s[j] - load;
        if left <= 0.0 {
            continue;
        }
        let wants: Vec<f64> = users
            .iter()
            .enumerate()
            .map(|(u, &(i, d))| (d - out.apps[i].caps[slot(u)].cap_bytes_per_s).max(0.0))
            .collect();
        let extra = scratch.fill(left, &wants, p.user_weights(j));
        for (u, &(i, _)) in users.iter().enumerate() {
            out.apps[i].caps[slot(u)].cap_bytes_per_s += extra[u];
        }
    }
}

/// BSIP progress fraction per application: `min_j pofs_ij / d_ij` (§2, Fig. 5): the share on
/// its most contended OST, applied to all of its OSTs.
pub(crate) fn bsip_fractions(p: &Prepared, pofs: &[f64]) -> Vec<f64> {
    (0..p.apps.len())
        .map(|i| {
            p.uses(i)
                .iter()
                .zip(&pofs[p.use_range(i)])
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
        for j in 0..p.osts_len() {
            let users = p.users(j);
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
    use crate::gift::{AppDemand, IntervalInput, OstCapacity, OstDemand};
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
                        streams: 1,
                    }],
                })
                .collect(),
        };
        let p = Prepared::new(&input).unwrap();
        let pofs = pofs_bytes_per_s(&p);
        assert_eq!(pofs, vec![10.0, 40.0, 40.0]);
        let bsip = bsip_fractions(&p, &pofs);
        assert_eq!(bsip, vec![1.0, 0.4, 0.4]);
    }
}
