//! The bandwidth allocation LP of §3.4, shared by GIFT, MBW, TSA, TMF and RND.
//!
//! Variables: for an application that may not go below its floor-by-fairness, one progress
//! fraction `x_i ∈ [floor_i, 1]` (synchronous progress makes `b_ij = x_i d_ij`). For a
//! throttleable application with BSIP fraction `r_i`, `x_i = r_i - t_i + e_i` with a throttle
//! `t_i ∈ [0, r_i - floor_i]` and an expansion `e_i ∈ [0, 1 - r_i]`; both are plain bounds, so
//! the LP has one row per OST plus two, whatever the number of applications (the penalty on
//! `t_i` keeps `t_i` and `e_i` from both being positive at an optimum). Constraints:
//!
//! * bounds `floor_i ≤ x_i ≤ 1` (constraints (a) and (b): the caller sets the floors);
//! * per OST `Σ_i d_ij x_i ≤ C_j`;
//! * optionally, effective bandwidth at least a given value (constraint "total effective
//!   bandwidth ≥ BSIP's");
//! * optionally, waste reduction at least the worth of the coupons issued:
//!   `Σ_i D_i x_i - E_0 ≥ Σ_i D_i t_i` (the paper's strict `>` becomes `≥`: the paper's own
//!   Fig. 6 example sits exactly on equality).
//!
//! Objective: eq. 1, `max Σ_i D_i x_i`, minus `THROTTLE_PENALTY · Σ_i D_i t_i`. The penalty is a
//! tie-break: eq. 1 alone is indifferent between throttling A to expand B on the same OSTs and
//! doing nothing, and such a zero-gain throttle would hand out coupons for nothing.

use std::collections::BTreeMap;

use good_lp::{microlp, variable, Expression, ProblemVariables, Solution, SolverModel, Variable};

use super::Prepared;

/// Weight of throttling in the objective relative to effective bandwidth.
pub const THROTTLE_PENALTY: f64 = 1e-6;

/// What the LP is asked for.
pub(crate) struct LpSpec<'a> {
    pub floors: &'a [f64],
    /// For applications that may go below BSIP: their BSIP fraction (to measure the throttle).
    pub throttle_reference: &'a [Option<f64>],
    /// Effective bandwidth (bytes/s) the result must reach, if any.
    pub effective_min_bytes_per_s: Option<f64>,
    /// `E_0`: if set, waste reduction over `E_0` must cover the throttled worth.
    pub coupon_baseline_bytes_per_s: Option<f64>,
}

/// An application's progress fraction in terms of LP variables.
enum Progress {
    Plain(Variable),
    Split {
        reference: f64,
        throttle: Variable,
        expansion: Variable,
    },
}

impl Progress {
    /// Adds `coefficient · x` to `expr`; returns the constant part, which the caller moves to
    /// the right-hand side (cheaper than cloning expressions per use).
    fn add_to(&self, expr: &mut Expression, coefficient: f64) -> f64 {
        match *self {
            Progress::Plain(v) => {
                expr.add_mul(coefficient, v);
                0.0
            }
            Progress::Split {
                reference,
                throttle,
                expansion,
            } => {
                expr.add_mul(-coefficient, throttle);
                expr.add_mul(coefficient, expansion);
                coefficient * reference
            }
        }
    }
}

/// Solves the LP. `None` when the solver fails (the caller falls back to the floors).
pub(crate) fn solve(p: &Prepared, spec: &LpSpec<'_>) -> Option<Vec<f64>> {
    let n = p.apps.len();
    if n == 0 {
        return Some(Vec::new());
    }
    // Scale bytes/s so coefficients are near 1: the simplex tolerances are absolute.
    let scale = p
        .capacity_bytes_per_s
        .iter()
        .copied()
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    // Identical applications (same OSTs, demands and bounds) share one set of variables. The LP
    // is symmetric in them, so averaging any optimum over them is again optimal: nothing is
    // lost, identical applications get identical allocations, and the LP shrinks (many
    // applications share a stripe pattern).
    let mut group_of = vec![0usize; n];
    let mut representatives: Vec<usize> = Vec::new();
    let mut counts: Vec<f64> = Vec::new();
    let mut index: BTreeMap<Vec<u64>, usize> = BTreeMap::new();
    for (i, a) in p.apps.iter().enumerate() {
        let mut uses: Vec<(usize, u64)> = a.uses.iter().map(|&(j, d)| (j, d.to_bits())).collect();
        uses.sort_unstable();
        let mut key = Vec::with_capacity(2 * uses.len() + 2);
        key.push(spec.floors[i].to_bits());
        key.push(spec.throttle_reference[i].map_or(u64::MAX, f64::to_bits));
        for (j, d) in uses {
            key.push(j as u64);
            key.push(d);
        }
        let g = *index.entry(key).or_insert_with(|| {
            representatives.push(i);
            counts.push(0.0);
            representatives.len() - 1
        });
        counts[g] += 1.0;
        group_of[i] = g;
    }
    let mut vars = ProblemVariables::new();
    let groups = representatives.len();
    let mut effective = Expression::with_capacity(2 * groups);
    let mut effective_constant = 0.0;
    let mut throttled = Expression::with_capacity(groups);
    let progress: Vec<Progress> = representatives
        .iter()
        .map(|&i| {
            let floor = spec.floors[i].clamp(0.0, 1.0);
            match spec.throttle_reference[i] {
                Some(reference) => {
                    let reference = reference.clamp(floor, 1.0);
                    Progress::Split {
                        reference,
                        throttle: vars.add(variable().min(0.0).max(reference - floor)),
                        expansion: vars.add(variable().min(0.0).max(1.0 - reference)),
                    }
                }
                None => Progress::Plain(vars.add(variable().min(floor).max(1.0))),
            }
        })
        .collect();
    for (g, x) in progress.iter().enumerate() {
        let a = &p.apps[representatives[g]];
        let weight = counts[g] * a.demand_total_bytes_per_s / scale;
        effective_constant += x.add_to(&mut effective, weight);
        if let Progress::Split { throttle, .. } = x {
            throttled.add_mul(weight, *throttle);
        }
    }
    let objective = effective.clone() - THROTTLE_PENALTY * throttled.clone();
    let mut model = vars.maximise(objective).using(microlp);
    for (j, users) in p.users.iter().enumerate() {
        if users.is_empty() {
            continue;
        }
        let mut load = Expression::with_capacity(2 * users.len());
        let mut constant = 0.0;
        for &(i, d) in users {
            constant += progress[group_of[i]].add_to(&mut load, d / scale);
        }
        model.add_constraint(load.leq(p.capacity_bytes_per_s[j] / scale - constant));
    }
    if let Some(e_min) = spec.effective_min_bytes_per_s {
        // A hair of slack: E_min is itself a sum of floats the solver cannot always meet exactly.
        let rhs = e_min / scale * (1.0 - 1e-9) - effective_constant;
        model.add_constraint(effective.clone().geq(rhs));
    }
    if let Some(e0) = spec.coupon_baseline_bytes_per_s {
        let rhs = e0 / scale * (1.0 - 1e-9) - effective_constant;
        model.add_constraint((effective - throttled).geq(rhs));
    }
    let solution = model.solve().ok()?;
    let values: Vec<f64> = progress
        .iter()
        .map(|x| match *x {
            Progress::Plain(v) => solution.value(v),
            Progress::Split {
                reference,
                throttle,
                expansion,
            } => reference - solution.value(throttle) + solution.value(expansion),
        })
        .collect();
    Some(group_of.iter().map(|&g| values[g]).collect())
}
