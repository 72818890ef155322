//! The bandwidth allocation LP of §3.4, shared by GIFT, MBW, TSA, TMF and RND.
//!
//! Variables: one progress fraction `x_i` per application (synchronous progress makes
//! `b_ij = x_i d_ij`), and for every throttleable application an auxiliary `t_i ≥ bsip_i - x_i`,
//! `t_i ≥ 0`, its throttle below BSIP. Constraints:
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

use good_lp::{microlp, variable, Expression, ProblemVariables, Solution, SolverModel};

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
    let mut vars = ProblemVariables::new();
    let xs: Vec<_> = (0..n)
        .map(|i| {
            let lo = spec.floors[i].clamp(0.0, 1.0);
            vars.add(variable().min(lo).max(1.0))
        })
        .collect();
    let ts: Vec<Option<_>> = spec
        .throttle_reference
        .iter()
        .map(|r| r.map(|_| vars.add(variable().min(0.0))))
        .collect();
    let mut effective = Expression::with_capacity(n);
    let mut throttled = Expression::with_capacity(n);
    for (i, a) in p.apps.iter().enumerate() {
        let weight = a.demand_total_bytes_per_s / scale;
        effective.add_mul(weight, xs[i]);
        if let Some(t) = ts[i] {
            throttled.add_mul(weight, t);
        }
    }
    let objective = effective.clone() - THROTTLE_PENALTY * throttled.clone();
    let mut model = vars.maximise(objective).using(microlp);
    for (j, users) in p.users.iter().enumerate() {
        if users.is_empty() {
            continue;
        }
        let mut load = Expression::with_capacity(users.len());
        for &(i, d) in users {
            load.add_mul(d / scale, xs[i]);
        }
        model.add_constraint(load.leq(p.capacity_bytes_per_s[j] / scale));
    }
    for (i, t) in ts.iter().enumerate() {
        if let (Some(t), Some(reference)) = (t, spec.throttle_reference[i]) {
            model.add_constraint((*t + xs[i]).geq(reference));
        }
    }
    if let Some(e_min) = spec.effective_min_bytes_per_s {
        // A hair of slack: E_min is itself a sum of floats the solver cannot always meet exactly.
        model.add_constraint(effective.clone().geq(e_min / scale * (1.0 - 1e-9)));
    }
    if let Some(e0) = spec.coupon_baseline_bytes_per_s {
        model.add_constraint((effective - throttled).geq(e0 / scale * (1.0 - 1e-9)));
    }
    let solution = model.solve().ok()?;
    Some(xs.iter().map(|&x| solution.value(x)).collect())
}
