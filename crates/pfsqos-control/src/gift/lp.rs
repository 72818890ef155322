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
//! * optionally, waste reduction at least the worth of the coupons issued (constraint (3)):
//!   `Σ_i D_i x_i - E_0 ≥ Σ_i D_i t_i` (the paper's strict `>` becomes `≥`: the paper's own
//!   Fig. 6 example sits exactly on equality).
//!
//! Objective: eq. 1, `max Σ_i D_i x_i`, minus `THROTTLE_PENALTY · Σ_i D_i t_i`. The penalty is a
//! tie-break: eq. 1 alone is indifferent between throttling A to expand B on the same OSTs and
//! doing nothing, and such a zero-gain throttle would hand out coupons for nothing.
//!
//! Two ways to solve it ([`LpSolver`]): the whole LP in one call of the pure-Rust `microlp`
//! simplex ([`LpSolver::Whole`], the reference), or an exact presolve first
//! ([`LpSolver::Presolved`], the default), which solves only what is left, block by block,
//! with a dense bounded simplex ([`super::simplex`]) started at the floors, or with `microlp`
//! for a block too large for a dense tableau, a block with a coupling row, or one the dense
//! simplex gives up on:
//!
//! 1. *Fixed variables.* An OST whose capacity is used up with every application on it at its
//!    lower bound (`Σ_i d_ij floor_i = C_j`) fixes every one of them at that bound. Under GIFT
//!    and the throttling baselines this is the usual case: an application that may not be
//!    throttled has BSIP as its floor, and BSIP fills the application's most contended OST.
//! 2. *Redundant rows.* An OST that can hold every remaining application at `x_i = 1` never
//!    binds; an application left without a binding OST gets `x_i = 1` (the objective and both
//!    optional constraints increase with every `x_i`).
//! 3. *Redundant coupling rows.* Both optional constraints increase with every `x_i`, so each
//!    holds everywhere once it holds with the remaining applications at their lower bounds,
//!    and is then dropped. The "effective bandwidth ≥ E_min" row is also dropped when the
//!    point without throttling (throttleable applications at their reference, the others at
//!    their lower bound) meets every other row and E_min: an optimum's objective is at least
//!    that point's, and its effective bandwidth at least its objective. That is always the case
//!    for GIFT, TSA, TMF and RND, whose E_min is BSIP's effective bandwidth.
//! 4. *Independent blocks.* Without a coupling row the remaining LP splits into the connected
//!    components of the application-OST graph (binding OSTs only); a block of one application
//!    has a closed form (`x_i = min(1, min_j rhs_j / d_ij)`), the others go to the block
//!    solver one by one. A coupling row that is left (constraint (3) with throttleable applications) is
//!    first ignored: if the blocks' optimum meets it, that optimum is the LP's (an optimum of a
//!    relaxation that is feasible is optimal); otherwise the remaining LP is solved as one
//!    block with the row.
//!
//! Each step keeps the optimum: steps 1, 2 and the first half of 3 keep the feasible set,
//! the E_min case of step 3 and the relaxation of step 4 return an optimum of the LP, and the
//! blocks of step 4 add up to the objective. Eq. 1 has many optima (it is the total load of the
//! OSTs, so moving bandwidth between applications on the same OSTs leaves it unchanged), and
//! the two solvers may return different ones: the differential test in this module checks that
//! both reach the same objective (within 1e-9), that every allocation is the same wherever the
//! optimum is unique, and that elsewhere the presolved one lies inside the range of optimal
//! allocations the whole LP has.

use good_lp::solvers::microlp::MicroLpProblem;
use good_lp::{microlp, variable, Expression, ProblemVariables, Solution, SolverModel, Variable};

use super::Prepared;

/// Weight of throttling in the objective relative to effective bandwidth.
pub const THROTTLE_PENALTY: f64 = 1e-6;

/// Capacity left on an OST (relative to the largest OST) below which the OST counts as full.
const FULL_TOLERANCE: f64 = 1e-12;
/// Overload (relative to the largest OST) of the floors alone beyond which the LP is
/// infeasible; below it, float noise.
const INFEASIBLE_TOLERANCE: f64 = 1e-9;

/// How the LP is solved; both give an optimum of the same LP (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LpSolver {
    /// Exact presolve (fixed variables, redundant rows, independent blocks), then the dense
    /// simplex (or `microlp`, module documentation) on each block that is left.
    #[default]
    Presolved,
    /// The whole LP in one `microlp` call: the reference, kept for the differential
    /// test and the benchmark.
    Whole,
}

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

    fn value(&self, solution: &impl Solution) -> f64 {
        match *self {
            Progress::Plain(v) => solution.value(v),
            Progress::Split {
                reference,
                throttle,
                expansion,
            } => reference - solution.value(throttle) + solution.value(expansion),
        }
    }
}

/// Identical applications (same OSTs, demands and bounds) share one set of variables. The LP
/// is symmetric in them, so averaging any optimum over them is again optimal: nothing is lost,
/// identical applications get identical allocations, and the LP shrinks (many applications
/// share a stripe pattern).
struct Groups {
    group_of: Vec<usize>,
    representatives: Vec<usize>,
    counts: Vec<f64>,
}

fn groups(p: &Prepared, spec: &LpSpec<'_>) -> Groups {
    let n = p.apps.len();
    // Every application's key (floor, reference, then its (OST, demand) pairs by OST), as
    // bit patterns, side by side in one buffer: one allocation instead of one per application.
    let mut keys: Vec<u64> = Vec::with_capacity(2 * n + 2 * p.uses_flat().len());
    let mut key_start: Vec<usize> = Vec::with_capacity(n + 1);
    let mut uses: Vec<(usize, u64)> = Vec::new();
    for i in 0..n {
        key_start.push(keys.len());
        uses.clear();
        uses.extend(p.uses(i).iter().map(|&(j, d)| (j, d.to_bits())));
        if !uses.is_sorted() {
            uses.sort_unstable();
        }
        keys.push(spec.floors[i].to_bits());
        keys.push(spec.throttle_reference[i].map_or(u64::MAX, f64::to_bits));
        for &(j, d) in &uses {
            keys.push(j as u64);
            keys.push(d);
        }
    }
    key_start.push(keys.len());
    let key = |i: usize| &keys[key_start[i]..key_start[i + 1]];
    // Groups numbered by their first application, in application order: each application
    // looks its key up in an open-addressing table of the groups so far (by a hash of the key;
    // keys compared only between equal hashes, so a collision costs a comparison, never a
    // wrong group), one pass instead of a sort.
    let slots = (2 * n).next_power_of_two();
    let mut table: Vec<usize> = vec![usize::MAX; slots];
    let mut group_of = vec![0usize; n];
    let mut representatives: Vec<usize> = Vec::new();
    let mut group_hashes: Vec<u64> = Vec::new();
    let mut counts: Vec<f64> = Vec::new();
    for (i, group) in group_of.iter_mut().enumerate() {
        let h = key_hash(key(i));
        // The table is at most half full, so the probe ends at an empty slot.
        let mut slot = (h as usize) & (slots - 1);
        let g = loop {
            match table[slot] {
                usize::MAX => {
                    let g = representatives.len();
                    table[slot] = g;
                    representatives.push(i);
                    group_hashes.push(h);
                    counts.push(0.0);
                    break g;
                }
                g if group_hashes[g] == h && key(representatives[g]) == key(i) => break g,
                _ => slot = (slot + 1) & (slots - 1),
            }
        };
        counts[g] += 1.0;
        *group = g;
    }
    Groups {
        group_of,
        representatives,
        counts,
    }
}

/// A 64-bit mix of a grouping key (multiply-xorshift per word): only places a key in
/// [`groups`]' table, which compares the keys themselves between equal hashes.
fn key_hash(key: &[u64]) -> u64 {
    key.iter().fold(key.len() as u64, |h, &w| {
        let x = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^ (x >> 29)
    })
}

/// Scale of bytes/s so coefficients are near 1 (the simplex tolerances are absolute).
fn scale_of(p: &Prepared) -> f64 {
    p.capacity_bytes_per_s
        .iter()
        .copied()
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE)
}

/// Solves the LP with the default solver. `None` when the solver fails (the caller falls back
/// to the floors).
pub(crate) fn solve(p: &Prepared, spec: &LpSpec<'_>) -> Option<Vec<f64>> {
    solve_with(p, spec, LpSolver::default())
}

pub(crate) fn solve_with(p: &Prepared, spec: &LpSpec<'_>, solver: LpSolver) -> Option<Vec<f64>> {
    if p.apps.is_empty() {
        return Some(Vec::new());
    }
    match solver {
        LpSolver::Whole => solve_whole(p, spec),
        LpSolver::Presolved => solve_presolved(p, spec),
    }
}

/// The whole LP in one `microlp` call, built directly from the groups.
fn solve_whole(p: &Prepared, spec: &LpSpec<'_>) -> Option<Vec<f64>> {
    let g = groups(p, spec);
    let (model, progress) = whole_model(p, spec, &g, None);
    let solution = model.solve().ok()?;
    let values: Vec<f64> = progress.iter().map(|x| x.value(&solution)).collect();
    Some(g.group_of.iter().map(|&k| values[k]).collect())
}

/// What [`whole_model`] optimizes: the LP's own objective, or (for the differential test) one
/// group's progress fraction, minimized or maximized, over the solutions whose LP objective is
/// at least a given value.
#[derive(Clone, Copy)]
struct Probe {
    group: usize,
    maximize: bool,
    objective_min: f64,
}

fn whole_model(
    p: &Prepared,
    spec: &LpSpec<'_>,
    g: &Groups,
    probe: Option<Probe>,
) -> (MicroLpProblem, Vec<Progress>) {
    let scale = scale_of(p);
    let mut vars = ProblemVariables::new();
    let groups = g.representatives.len();
    let mut effective = Expression::with_capacity(2 * groups);
    let mut effective_constant = 0.0;
    let mut throttled = Expression::with_capacity(groups);
    let progress: Vec<Progress> = g
        .representatives
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
    for (k, x) in progress.iter().enumerate() {
        let a = &p.apps[g.representatives[k]];
        let weight = g.counts[k] * a.demand_total_bytes_per_s / scale;
        effective_constant += x.add_to(&mut effective, weight);
        if let Progress::Split { throttle, .. } = x {
            throttled.add_mul(weight, *throttle);
        }
    }
    let objective = effective.clone() - THROTTLE_PENALTY * throttled.clone();
    let mut model = match probe {
        None => vars.maximise(objective.clone()),
        Some(probe) => {
            let mut target = Expression::with_capacity(2);
            let constant = progress[probe.group].add_to(&mut target, 1.0);
            let target = target + constant;
            if probe.maximize {
                vars.maximise(target)
            } else {
                vars.minimise(target)
            }
        }
    }
    .using(microlp);
    if let Some(probe) = probe {
        model.add_constraint(objective.geq(probe.objective_min - effective_constant));
    }
    for j in 0..p.osts_len() {
        let users = p.users(j);
        if users.is_empty() {
            continue;
        }
        let mut load = Expression::with_capacity(2 * users.len());
        let mut constant = 0.0;
        for &(i, d) in users {
            constant += progress[g.group_of[i]].add_to(&mut load, d / scale);
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
    (model, progress)
}

/// The LP's objective at `x` (one fraction per application), in units of the largest OST.
#[cfg(test)]
pub(crate) fn objective(p: &Prepared, spec: &LpSpec<'_>, x: &[f64]) -> f64 {
    let scale = scale_of(p);
    p.apps
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let w = a.demand_total_bytes_per_s / scale;
            let throttle = match spec.throttle_reference[i] {
                Some(r) => (r.clamp(spec.floors[i].clamp(0.0, 1.0), 1.0) - x[i]).max(0.0),
                None => 0.0,
            };
            w * x[i] - THROTTLE_PENALTY * w * throttle
        })
        .sum()
}

/// One group's data for the presolve, in units of the largest OST.
struct Column<'a> {
    lower: f64,
    reference: Option<f64>,
    weight: f64,
    /// `(OST, Σ over the group's applications of d_ij)`, OSTs ascending (a slice of one
    /// buffer shared by every group).
    entries: &'a [(usize, f64)],
}

/// Presolve (module documentation), then the block solver on each block left.
fn solve_presolved(p: &Prepared, spec: &LpSpec<'_>) -> Option<Vec<f64>> {
    let scale = scale_of(p);
    let g = groups(p, spec);
    let groups_n = g.representatives.len();
    // Every group's entries in one buffer: a group has one entry per OST of its
    // representative (its members use the same OSTs), filled OST by OST, so each group's
    // entries come out ascending; members on the same OST add up in application order.
    let mut entry_start: Vec<usize> = Vec::with_capacity(groups_n + 1);
    let mut entries_len = 0;
    for &i in &g.representatives {
        entry_start.push(entries_len);
        entries_len += p.uses(i).len();
    }
    entry_start.push(entries_len);
    let mut entries: Vec<(usize, f64)> = vec![(usize::MAX, 0.0); entries_len];
    let mut entry_next: Vec<usize> = entry_start[..groups_n].to_vec();
    let rows_n = p.osts_len();
    for j in 0..rows_n {
        for &(i, d) in p.users(j) {
            let k = g.group_of[i];
            let next = entry_next[k];
            if next > entry_start[k] && entries[next - 1].0 == j {
                entries[next - 1].1 += d / scale;
            } else {
                entries[next] = (j, d / scale);
                entry_next[k] += 1;
            }
        }
    }
    debug_assert!((0..groups_n).all(|k| entry_next[k] == entry_start[k + 1]));
    let columns: Vec<Column<'_>> = g
        .representatives
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let lower = spec.floors[i].clamp(0.0, 1.0);
            Column {
                lower,
                reference: spec.throttle_reference[i].map(|r| r.clamp(lower, 1.0)),
                weight: g.counts[k] * p.apps[i].demand_total_bytes_per_s / scale,
                entries: &entries[entry_start[k]..entry_start[k + 1]],
            }
        })
        .collect();
    let capacity: Vec<f64> = p.capacity_bytes_per_s.iter().map(|c| c / scale).collect();

    // Step 1: OSTs full with everyone at the lower bound fix everyone on them.
    let mut gap = capacity.clone();
    for c in &columns {
        for &(j, a) in c.entries {
            gap[j] -= a * c.lower;
        }
    }
    if gap.iter().any(|&r| r < -INFEASIBLE_TOLERANCE) {
        // The floors alone overload an OST: the LP has no solution (as the whole LP reports).
        return None;
    }
    let full: Vec<bool> = gap.iter().map(|&r| r <= FULL_TOLERANCE).collect();
    // `None`: still free; `Some(x)`: decided.
    let mut value: Vec<Option<f64>> = columns
        .iter()
        .map(|c| (c.lower >= 1.0 || c.entries.iter().any(|&(j, _)| full[j])).then_some(c.lower))
        .collect();

    // Step 2: rows that hold every free application at 1 never bind.
    let mut reach = vec![0.0f64; rows_n];
    for (c, v) in columns.iter().zip(&value) {
        if v.is_none() {
            for &(j, a) in c.entries {
                reach[j] += a * (1.0 - c.lower);
            }
        }
    }
    let binding: Vec<bool> = (0..rows_n).map(|j| !full[j] && reach[j] > gap[j]).collect();
    for (c, v) in columns.iter().zip(value.iter_mut()) {
        if v.is_none() && !c.entries.iter().any(|&(j, _)| binding[j]) {
            *v = Some(1.0);
        }
    }

    // Step 3: coupling rows that hold with every free application at its lower bound.
    let (effective_at_lower, throttled_at_lower) = totals(
        &columns,
        value
            .iter()
            .enumerate()
            .map(|(k, v)| (k, v.unwrap_or(columns[k].lower))),
    );
    let coupon_min = spec
        .coupon_baseline_bytes_per_s
        .map(|e| e / scale * (1.0 - 1e-9))
        .filter(|&e| effective_at_lower - throttled_at_lower < e);
    // The "effective bandwidth ≥ E_min" row is also redundant at the optimum when the point
    // without throttling (throttleable applications at their reference, the others at their
    // lower bound) meets every other row and E_min: the optimum's objective is at least that
    // point's, and its effective bandwidth at least its objective. This is the case for GIFT
    // and TSA, TMF, RND, whose E_min is BSIP's effective bandwidth.
    let unthrottled: Vec<f64> = columns
        .iter()
        .zip(&value)
        .map(|(c, v)| v.unwrap_or(c.reference.unwrap_or(c.lower)))
        .collect();
    let (effective_unthrottled, throttled_unthrottled) =
        totals(&columns, unthrottled.iter().copied().enumerate());
    let effective_min = spec
        .effective_min_bytes_per_s
        .map(|e| e / scale * (1.0 - 1e-9))
        .filter(|&e| effective_at_lower < e)
        .filter(|&e| {
            let mut load = vec![0.0f64; rows_n];
            for (c, x) in columns.iter().zip(&unthrottled) {
                for &(j, a) in c.entries {
                    load[j] += a * x;
                }
            }
            let rows_hold = load
                .iter()
                .zip(&capacity)
                .all(|(l, cap)| *l <= cap + FULL_TOLERANCE);
            let coupon_holds =
                coupon_min.is_none_or(|e0| effective_unthrottled - throttled_unthrottled >= e0);
            !(rows_hold && coupon_holds && effective_unthrottled >= e)
        });

    // Right-hand sides net of the decided applications.
    let mut rhs = capacity;
    for (c, v) in columns.iter().zip(&value) {
        if let Some(x) = v {
            for &(j, a) in c.entries {
                rhs[j] -= a * x;
            }
        }
    }
    let (decided_effective, decided_throttled) = totals(
        &columns,
        value
            .iter()
            .enumerate()
            .filter_map(|(k, v)| v.map(|x| (k, x))),
    );
    let coupling = Coupling {
        effective_min: effective_min.map(|e| e - decided_effective),
        coupon_min: coupon_min.map(|e| e - (decided_effective - decided_throttled)),
    };

    // Step 4: blocks of free applications linked by binding OSTs. With a coupling row left,
    // the blocks are solved without it first: if their optimum meets it, it is an optimum of
    // the LP with it (a relaxation's optimum that is feasible is optimal); otherwise one block
    // with the row.
    let free: Vec<usize> = (0..groups_n).filter(|&k| value[k].is_none()).collect();
    let mut solved = solve_blocks(&columns, &free, &binding, &rhs)?;
    if !coupling.holds(&columns, &solved) {
        let xs = solve_block(&columns, &free, &binding, &rhs, &coupling)?;
        solved = free.iter().copied().zip(xs).collect();
    }
    for (k, x) in solved {
        value[k] = Some(x);
    }
    Some(
        g.group_of
            .iter()
            .map(|&k| value[k].expect("every group decided"))
            .collect(),
    )
}

/// The free groups without coupling rows: one LP per connected block of the application-OST
/// graph (binding OSTs only), a closed form for a block of one group.
fn solve_blocks(
    columns: &[Column<'_>],
    free: &[usize],
    binding: &[bool],
    rhs: &[f64],
) -> Option<Vec<(usize, f64)>> {
    let mut parent: Vec<usize> = (0..columns.len()).collect();
    let mut first_on_row: Vec<Option<usize>> = vec![None; rhs.len()];
    for &k in free {
        for &(j, _) in columns[k].entries {
            if !binding[j] {
                continue;
            }
            match first_on_row[j] {
                None => first_on_row[j] = Some(k),
                Some(other) => {
                    let (a, b) = (find(&mut parent, k), find(&mut parent, other));
                    if a != b {
                        parent[a.max(b)] = a.min(b);
                    }
                }
            }
        }
    }
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    // Blocks numbered by first appearance of their root.
    let mut block_of_root: Vec<usize> = vec![usize::MAX; columns.len()];
    for &k in free {
        let root = find(&mut parent, k);
        if block_of_root[root] == usize::MAX {
            block_of_root[root] = blocks.len();
            blocks.push(Vec::new());
        }
        blocks[block_of_root[root]].push(k);
    }
    let none = Coupling {
        effective_min: None,
        coupon_min: None,
    };
    let mut out = Vec::with_capacity(free.len());
    for block in &blocks {
        if let [k] = block[..] {
            // max x subject to x ≤ 1 and a_j x ≤ rhs_j: the objective increases with x.
            let c = &columns[k];
            let x = c
                .entries
                .iter()
                .filter(|&&(j, _)| binding[j])
                .map(|&(j, a)| rhs[j] / a)
                .fold(1.0f64, f64::min)
                .max(c.lower);
            out.push((k, x));
            continue;
        }
        let xs = solve_block(columns, block, binding, rhs, &none)?;
        out.extend(block.iter().copied().zip(xs));
    }
    Some(out)
}

/// Effective bandwidth and throttled worth of `(group, fraction)` pairs, in units of the
/// largest OST.
fn totals(columns: &[Column<'_>], xs: impl IntoIterator<Item = (usize, f64)>) -> (f64, f64) {
    xs.into_iter()
        .fold((0.0, 0.0), |(effective, throttled), (k, x)| {
            let c = &columns[k];
            let t = c.reference.map_or(0.0, |r| c.weight * (r - x).max(0.0));
            (effective + c.weight * x, throttled + t)
        })
}

fn find(parent: &mut [usize], mut k: usize) -> usize {
    while parent[k] != k {
        parent[k] = parent[parent[k]];
        k = parent[k];
    }
    k
}

/// Coupling rows of a block, net of the applications decided outside it.
struct Coupling {
    effective_min: Option<f64>,
    coupon_min: Option<f64>,
}

impl Coupling {
    /// Whether `solved` (group, fraction) meets both rows.
    fn holds(&self, columns: &[Column<'_>], solved: &[(usize, f64)]) -> bool {
        let (effective, throttled) = totals(columns, solved.iter().copied());
        self.effective_min.is_none_or(|e| effective >= e)
            && self.coupon_min.is_none_or(|e0| effective - throttled >= e0)
    }
}

/// Most rows (binding OSTs) of a block the dense simplex takes: it keeps a dense `rows × rows`
/// basis inverse (2 MiB at this bound); a block has few rows however many applications share
/// them. Blocks with more rows, and blocks with a coupling row, go to `microlp`.
const DENSE_ROWS_MAX: usize = 512;

/// One block of the presolved LP: the dense simplex when it fits and has no coupling row,
/// else (or if the dense simplex gives up) `microlp`.
fn solve_block(
    columns: &[Column<'_>],
    block: &[usize],
    binding: &[bool],
    rhs: &[f64],
    coupling: &Coupling,
) -> Option<Vec<f64>> {
    if coupling.effective_min.is_none() && coupling.coupon_min.is_none() {
        if let Some(xs) = solve_block_dense(columns, block, binding, rhs) {
            return Some(xs);
        }
    }
    solve_block_microlp(columns, block, binding, rhs, coupling)
}

/// A block without coupling rows through [`super::simplex`]: one variable per plain group
/// (`x - lower`), two per throttleable one (the throttle `t`, starting at its upper bound so
/// that `x` starts at its floor, and the expansion `e`), each binding OST of the block a row.
/// The start (every group at its lower bound) is feasible: step 1 of the presolve checked the
/// floors against every OST. `None` when it does not fit or the simplex gives up.
fn solve_block_dense(
    columns: &[Column<'_>],
    block: &[usize],
    binding: &[bool],
    rhs: &[f64],
) -> Option<Vec<f64>> {
    use super::simplex::{self, Bound};
    // Rows numbered by first appearance of their OST in the block.
    let mut row_of: Vec<Option<usize>> = vec![None; binding.len()];
    let mut m = 0;
    for &k in block {
        for &(j, _) in columns[k].entries {
            if binding[j] && row_of[j].is_none() {
                row_of[j] = Some(m);
                m += 1;
            }
        }
    }
    let n: usize = block
        .iter()
        .map(|&k| if columns[k].reference.is_some() { 2 } else { 1 })
        .sum();
    if m > DENSE_ROWS_MAX {
        return None;
    }
    let mut b: Vec<f64> = vec![0.0; m];
    for (j, r) in row_of.iter().enumerate() {
        if let Some(r) = *r {
            b[r] = rhs[j];
        }
    }
    let (mut c, mut u, mut start) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::new());
    // The columns of A side by side in one buffer (column `v` at `a_start[v]..a_start[v + 1]`).
    let mut a_entries: Vec<(usize, f64)> = Vec::new();
    let mut a_start: Vec<usize> = Vec::with_capacity(n + 1);
    for &k in block {
        let cl = &columns[k];
        // x at z = 0 of this group's variables: the floor (plain) or the reference (split).
        let base = cl.reference.unwrap_or(cl.lower);
        let first = a_entries.len();
        a_start.push(first);
        for &(j, coefficient) in cl.entries {
            if let Some(r) = row_of[j] {
                b[r] -= coefficient * base;
                a_entries.push((r, coefficient));
            }
        }
        match cl.reference {
            None => {
                c.push(cl.weight);
                u.push(1.0 - cl.lower);
                start.push(Bound::Lower);
            }
            Some(reference) => {
                // The throttle's column is the negated one, then the expansion's the column
                // itself.
                let last = a_entries.len();
                for entry in &mut a_entries[first..last] {
                    entry.1 = -entry.1;
                }
                a_start.push(last);
                a_entries.extend_from_within(first..last);
                for entry in &mut a_entries[last..] {
                    entry.1 = -entry.1;
                }
                // Objective per unit of throttle: the worth lost plus the penalty on it.
                c.push(-cl.weight * (1.0 + THROTTLE_PENALTY));
                u.push(reference - cl.lower);
                start.push(Bound::Upper);
                c.push(cl.weight);
                u.push(1.0 - reference);
                start.push(Bound::Lower);
            }
        }
    }
    a_start.push(a_entries.len());
    let a: Vec<&[(usize, f64)]> = a_start.windows(2).map(|w| &a_entries[w[0]..w[1]]).collect();
    debug_assert_eq!(a.len(), n);
    let z = simplex::solve(&c, &a, &b, &u, &start)?;
    // What must hold of the answer, checked rather than trusted (a basis inverse accumulates
    // rounding): every row within the tolerance the presolve grants the floors.
    let mut load = vec![0.0f64; m];
    for (column, zk) in a.iter().zip(&z) {
        for &(r, v) in *column {
            load[r] += v * zk;
        }
    }
    if load
        .iter()
        .zip(&b)
        .any(|(l, b_r)| *l > b_r + INFEASIBLE_TOLERANCE)
    {
        return None;
    }
    let mut col = 0;
    let xs: Vec<f64> = block
        .iter()
        .map(|&k| {
            let cl = &columns[k];
            match cl.reference {
                None => {
                    col += 1;
                    cl.lower + z[col - 1]
                }
                Some(reference) => {
                    col += 2;
                    reference - z[col - 2] + z[col - 1]
                }
            }
        })
        .collect();
    Some(xs)
}

/// One block of the presolved LP through `microlp`, built as [`whole_model`] builds the whole.
fn solve_block_microlp(
    columns: &[Column<'_>],
    block: &[usize],
    binding: &[bool],
    rhs: &[f64],
    coupling: &Coupling,
) -> Option<Vec<f64>> {
    let mut vars = ProblemVariables::new();
    let mut effective = Expression::with_capacity(2 * block.len());
    let mut effective_constant = 0.0;
    let mut throttled = Expression::with_capacity(block.len());
    let progress: Vec<Progress> = block
        .iter()
        .map(|&k| {
            let c = &columns[k];
            match c.reference {
                Some(reference) => Progress::Split {
                    reference,
                    throttle: vars.add(variable().min(0.0).max(reference - c.lower)),
                    expansion: vars.add(variable().min(0.0).max(1.0 - reference)),
                },
                None => Progress::Plain(vars.add(variable().min(c.lower).max(1.0))),
            }
        })
        .collect();
    for (x, &k) in progress.iter().zip(block) {
        let weight = columns[k].weight;
        effective_constant += x.add_to(&mut effective, weight);
        if let Progress::Split { throttle, .. } = x {
            throttled.add_mul(weight, *throttle);
        }
    }
    let objective = effective.clone() - THROTTLE_PENALTY * throttled.clone();
    let mut model = vars.maximise(objective).using(microlp);
    // Rows of the block: gather (row, position in block, coefficient), by row.
    let mut entries: Vec<(usize, usize, f64)> = Vec::new();
    for (pos, &k) in block.iter().enumerate() {
        for &(j, a) in columns[k].entries {
            if binding[j] {
                entries.push((j, pos, a));
            }
        }
    }
    entries.sort_unstable_by_key(|&(j, pos, _)| (j, pos));
    for row in entries.chunk_by(|a, b| a.0 == b.0) {
        let j = row[0].0;
        let mut load = Expression::with_capacity(2 * row.len());
        let mut constant = 0.0;
        for &(_, pos, a) in row {
            constant += progress[pos].add_to(&mut load, a);
        }
        model.add_constraint(load.leq(rhs[j] - constant));
    }
    if let Some(e_min) = coupling.effective_min {
        model.add_constraint(effective.clone().geq(e_min - effective_constant));
    }
    if let Some(e0) = coupling.coupon_min {
        model.add_constraint((effective - throttled).geq(e0 - effective_constant));
    }
    let solution = model.solve().ok()?;
    Some(progress.iter().map(|x| x.value(&solution)).collect())
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::gift::baselines::picked_bounds;
    use crate::gift::share::{bsip_fractions, pofs_bytes_per_s};
    use crate::gift::{AppDemand, IntervalInput, OstCapacity, OstDemand};
    use crate::model::{JobId, OstId};

    const CAP: f64 = 102e6;

    /// A whole OST, or a random part of it no smaller than `low`.
    fn bytes_per_s(rng: &mut ChaCha8Rng, whole: bool, low: f64) -> f64 {
        if whole {
            CAP
        } else {
            CAP * rng.random_range(low..1.0)
        }
    }

    /// A random decision on `osts` OSTs of equal or random capacity: `apps` applications on 1
    /// to `width_max` OSTs `stride` apart, demanding the whole OST (the paper's model, full of
    /// ties) or a random part of it.
    fn decision(
        rng: &mut ChaCha8Rng,
        (osts, apps): (u32, usize),
        (width_max, stride): (u32, u32),
        whole: bool,
        equal: bool,
    ) -> IntervalInput {
        IntervalInput {
            now_ns: 0,
            interval_ns: 10_000_000_000,
            osts: (0..osts)
                .map(|o| OstCapacity {
                    ost: OstId(o),
                    capacity_bytes_per_s: bytes_per_s(rng, equal, 0.2),
                })
                .collect(),
            apps: (0..apps)
                .map(|i| {
                    let width = rng.random_range(1..=width_max.min(osts));
                    let start = rng.random_range(0..osts);
                    let mut used: Vec<u32> =
                        (0..width).map(|k| (start + k * stride) % osts).collect();
                    used.sort_unstable();
                    used.dedup();
                    AppDemand {
                        app: JobId::new(&format!("a{i}")).unwrap(),
                        nodes: 1,
                        osts: used
                            .into_iter()
                            .map(|o| OstDemand {
                                ost: OstId(o),
                                demand_bytes_per_s: bytes_per_s(rng, whole, 0.05),
                                streams: 1,
                            })
                            .collect(),
                    }
                })
                .collect(),
        }
    }

    /// A small random decision: 1 to `osts_max` OSTs, 1 to `apps_max` applications on 1-4
    /// adjacent OSTs.
    fn random_input(rng: &mut ChaCha8Rng, osts_max: u32, apps_max: usize) -> IntervalInput {
        let osts = rng.random_range(1..=osts_max);
        let apps = rng.random_range(1..=apps_max);
        let (whole, equal) = (rng.random_bool(0.5), rng.random_bool(0.5));
        decision(rng, (osts, apps), (4, 1), whole, equal)
    }

    /// The LPs the policies pose on a decision: MBW's, TSA/TMF/RND's, GIFT's with and without
    /// constraint (3), each application throttleable with probability one half.
    struct Case {
        floors: Vec<f64>,
        reference: Vec<Option<f64>>,
        effective_min: Option<f64>,
        coupon_baseline: Option<f64>,
    }

    impl Case {
        fn spec(&self) -> LpSpec<'_> {
            LpSpec {
                floors: &self.floors,
                throttle_reference: &self.reference,
                effective_min_bytes_per_s: self.effective_min,
                coupon_baseline_bytes_per_s: self.coupon_baseline,
            }
        }
    }

    fn cases(p: &Prepared, rng: &mut ChaCha8Rng) -> Vec<Case> {
        let n = p.apps.len();
        let bsip = bsip_fractions(p, &pofs_bytes_per_s(p));
        let e_bsip = p.effective_bytes_per_s(&bsip);
        let b_thres = [0.1, 0.5, 1.0][rng.random_range(0..3)];
        let picked: Vec<bool> = (0..n).map(|_| rng.random_bool(0.5)).collect();
        let (floors, reference) = picked_bounds(&bsip, &picked, b_thres);
        let throttling = |e_min, e0| Case {
            floors: floors.clone(),
            reference: reference.clone(),
            effective_min: e_min,
            coupon_baseline: e0,
        };
        vec![
            Case {
                floors: vec![0.0; n],
                reference: vec![None; n],
                effective_min: None,
                coupon_baseline: None,
            },
            throttling(Some(e_bsip), None),
            throttling(Some(e_bsip), Some(e_bsip)),
            throttling(None, Some(e_bsip)),
        ]
    }

    /// Largest violation of the LP's rows by `x`, in units of the largest OST.
    fn violation(p: &Prepared, spec: &LpSpec<'_>, x: &[f64]) -> f64 {
        let scale = scale_of(p);
        let mut worst = 0.0f64;
        for j in 0..p.osts_len() {
            let load: f64 = p.users(j).iter().map(|&(i, d)| x[i] * d).sum();
            worst = worst.max((load - p.capacity_bytes_per_s[j]) / scale);
        }
        for (i, &xi) in x.iter().enumerate() {
            worst = worst.max(spec.floors[i] - xi).max(xi - 1.0);
        }
        let effective = p.effective_bytes_per_s(x) / scale;
        if let Some(e) = spec.effective_min_bytes_per_s {
            worst = worst.max(e / scale * (1.0 - 1e-9) - effective);
        }
        if let Some(e0) = spec.coupon_baseline_bytes_per_s {
            let throttled: f64 = (0..x.len())
                .map(|i| {
                    spec.throttle_reference[i].map_or(0.0, |r| {
                        (r - x[i]).max(0.0) * p.apps[i].demand_total_bytes_per_s / scale
                    })
                })
                .sum();
            worst = worst.max(e0 / scale * (1.0 - 1e-9) - (effective - throttled));
        }
        worst
    }

    /// Range of one group's fraction over the whole LP's optimal solutions (objective within
    /// `slack` of `best`); `None` where `microlp` fails on the probe LP.
    fn optimal_range(
        p: &Prepared,
        spec: &LpSpec<'_>,
        best: f64,
        slack: f64,
    ) -> Vec<Option<(f64, f64)>> {
        let g = groups(p, spec);
        (0..g.representatives.len())
            .map(|group| {
                let bound = |maximize| {
                    let probe = Probe {
                        group,
                        maximize,
                        objective_min: best - slack,
                    };
                    let (model, progress) = whole_model(p, spec, &g, Some(probe));
                    let solution = model.solve().ok()?;
                    Some(progress[group].value(&solution))
                };
                Some((bound(false)?, bound(true)?))
            })
            .collect()
    }

    /// The presolved solver against the whole LP on random decisions: the same objective
    /// within 1e-9, feasible, the same allocation wherever the optimum is unique, and inside
    /// the whole LP's range of optimal allocations elsewhere.
    #[test]
    fn presolved_matches_whole_lp_on_random_decisions() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let (mut pinned, mut loose, mut unprobed, mut lps) = (0usize, 0usize, 0usize, 0usize);
        for _ in 0..250 {
            let input = random_input(&mut rng, 6, 10);
            let p = Prepared::new(&input).unwrap();
            for case in cases(&p, &mut rng) {
                let spec = case.spec();
                let whole = solve_with(&p, &spec, LpSolver::Whole).expect("whole LP solves");
                let fast = solve_with(&p, &spec, LpSolver::Presolved).expect("presolved solves");
                lps += 1;
                let (ow, of) = (objective(&p, &spec, &whole), objective(&p, &spec, &fast));
                let tolerance = 1e-9 * ow.abs().max(1.0);
                assert!((ow - of).abs() <= tolerance, "objective {of} against {ow}");
                // `microlp`'s own solutions miss rows by up to about 1e-9 (its tolerances);
                // the callers' `repair` takes such overloads back.
                assert!(violation(&p, &spec, &fast) <= 1e-8, "presolved infeasible");
                let g = groups(&p, &spec);
                let ranges = optimal_range(&p, &spec, ow, tolerance);
                for (k, range) in ranges.iter().enumerate() {
                    let i = g.representatives[k];
                    let Some((lo, hi)) = *range else {
                        unprobed += 1;
                        continue;
                    };
                    if hi - lo <= 1e-9 {
                        pinned += 1;
                        assert!((fast[i] - whole[i]).abs() <= 1e-8, "unique optimum differs");
                    } else {
                        loose += 1;
                        assert!(
                            fast[i] >= lo - 1e-8 && fast[i] <= hi + 1e-8,
                            "outside range"
                        );
                    }
                }
            }
        }
        // Both kinds of fraction occur, so neither check is vacuous.
        assert!(
            pinned > 0 && loose > 0 && unprobed * 100 <= pinned + loose,
            "{pinned} pinned, {loose} loose, {unprobed} not probed"
        );
        eprintln!("{pinned} fractions pinned, {loose} free among optima, {unprobed} not probed");
        assert_eq!(lps, 1000);
    }

    /// Floors that overload an OST by themselves: neither solver returns an allocation (the
    /// callers fall back to their starting point).
    #[test]
    fn both_solvers_refuse_floors_that_overload_an_ost() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let input = decision(&mut rng, (1, 2), (1, 1), true, true);
        let p = Prepared::new(&input).unwrap();
        let case = Case {
            floors: vec![0.8, 0.8],
            reference: vec![None, None],
            effective_min: None,
            coupon_baseline: None,
        };
        for solver in [LpSolver::Whole, LpSolver::Presolved] {
            assert_eq!(solve_with(&p, &case.spec(), solver), None, "{solver:?}");
        }
    }

    /// At the benchmark's size class (hundreds of applications on 64 OSTs, 1-8 OSTs each),
    /// where the presolve splits the LP: the same objective within 1e-9 and feasible.
    #[test]
    fn presolved_matches_whole_lp_at_scale() {
        let mut rng = ChaCha8Rng::seed_from_u64(2021);
        for round in 0..4 {
            // The benchmark's stripes: 1-8 OSTs, 7 apart.
            let input = decision(&mut rng, (64, 300), (8, 7), round % 2 == 0, true);
            let p = Prepared::new(&input).unwrap();
            for case in cases(&p, &mut rng) {
                let spec = case.spec();
                let whole = solve_with(&p, &spec, LpSolver::Whole).expect("whole LP solves");
                let fast = solve_with(&p, &spec, LpSolver::Presolved).expect("presolved solves");
                let (ow, of) = (objective(&p, &spec, &whole), objective(&p, &spec, &fast));
                assert!(
                    (ow - of).abs() <= 1e-9 * ow.abs().max(1.0),
                    "{of} against {ow}"
                );
                let (vw, vf) = (violation(&p, &spec, &whole), violation(&p, &spec, &fast));
                assert!(vf <= 1e-8, "violation {vf} (whole LP: {vw})");
            }
        }
    }
}
