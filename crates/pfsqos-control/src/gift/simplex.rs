//! A dense bounded-variable primal simplex for the small blocks the §3.4 LP's presolve leaves
//! (`lp.rs`, step 4): `max c·z` subject to `A z ≤ b` and `0 ≤ z ≤ u`, with `b ≥ A z₀` for a
//! starting point `z₀` whose every coordinate is at one of its bounds.
//!
//! Why a second solver beside `microlp`: after the presolve the blocks have tens of variables
//! and rows, and for LPs that small `microlp`'s sparse LU factorization and its allocations
//! cost more than the pivots (profiled at 1,000 applications on 200 OSTs, `microlp` and its
//! allocator were most of a GIFT decision). A dense basis inverse updates in place, allocates once,
//! and starts from a feasible basis the presolve hands it (every application at its lower
//! bound, which step 1 of the presolve proved feasible), so it needs no phase 1.
//!
//! The method is the textbook one (Dantzig's bounded-variable simplex, revised form): the
//! basis inverse, nonbasic variables at their lower or upper bound, the entering variable by the largest
//! reduced cost (Dantzig's rule), the ratio test over the basic variables' bounds and the
//! entering variable's own (a bound flip needs no pivot). After a run of degenerate pivots the
//! rules switch to Bland's (smallest index entering, smallest basic index leaving among ties),
//! which cannot cycle. The caller checks the result against the rows and falls back to
//! `microlp` when this solver gives up ([`solve`] returns `None`: iteration cap, a tiny pivot,
//! an unbounded ray, a start that is not feasible).

/// Reduced costs below this (relative to the largest objective coefficient) count as zero.
const OPTIMALITY_TOLERANCE: f64 = 1e-11;
/// Entries of the entering column below this (absolute: rows are scaled to the largest OST)
/// do not pivot.
const PIVOT_TOLERANCE: f64 = 1e-10;
/// How far below 0 a starting slack may be (float noise of the caller's right-hand sides).
const START_TOLERANCE: f64 = 1e-9;
/// How far below its bound a basic variable may drift before the solver gives up.
const DRIFT_TOLERANCE: f64 = 1e-7;
/// Consecutive degenerate pivots after which Bland's rule takes over.
const DEGENERATE_RUN_MAX: u32 = 32;

/// Where a nonbasic variable sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Lower,
    Upper,
}

/// Candidates kept by a pricing pass for the bound flips that may follow it.
const PRICED_MAX: usize = 8;

/// The choice of the entering variable among the nonbasic ones, offered in any order: by
/// Dantzig's rule the largest gain, ties to the smallest index; by Bland's the smallest index
/// with a gain. Both are defined by the set offered, not by the order, so a scan in index
/// order and the pass that updates the reduced costs choose the same variable.
///
/// It also keeps the best [`PRICED_MAX`] candidates in Dantzig's order: a bound flip changes
/// no reduced cost and makes the flipped variable lose its gain, so the next choice is the
/// next candidate, without another pass, as long as one is left.
struct Pricing {
    best: [(usize, f64); PRICED_MAX],
    len: usize,
    /// More candidates were offered than kept: an empty list does not mean none is left.
    truncated: bool,
    bland: Option<usize>,
    /// Nothing was taken yet (Bland's choice is only valid then).
    fresh: bool,
}

impl Pricing {
    fn new() -> Pricing {
        Pricing {
            best: [(0, 0.0); PRICED_MAX],
            len: 0,
            truncated: false,
            bland: None,
            fresh: true,
        }
    }

    /// Offers nonbasic variable `k` at bound `at` with reduced cost `d` and upper bound `upper`.
    ///
    /// Inlined into the pricing passes: most variables offered have no gain, or less than
    /// every candidate kept, and are refused here at the cost of a comparison or two; the
    /// others go to [`Pricing::insert`].
    #[inline(always)]
    fn offer(&mut self, k: usize, at: Bound, d: f64, upper: f64, tol: f64) {
        let gain = match at {
            Bound::Lower => d,
            Bound::Upper => -d,
        };
        if gain <= tol || (at == Bound::Lower && upper == 0.0) {
            return;
        }
        if self.bland.is_none_or(|j| k < j) {
            self.bland = Some(k);
        }
        if self.len == PRICED_MAX {
            self.truncated = true;
            let (j, g) = self.best[PRICED_MAX - 1];
            if !(gain > g || (gain == g && k < j)) {
                return;
            }
        }
        self.insert(k, gain);
    }

    /// Puts a candidate that ranks among the best kept in its place (the last kept drops out
    /// when the list is full).
    #[inline(never)]
    fn insert(&mut self, k: usize, gain: f64) {
        let better = |(j, g): (usize, f64)| gain > g || (gain == g && k < j);
        if self.len == PRICED_MAX {
            debug_assert!(better(self.best[PRICED_MAX - 1]));
            self.len -= 1;
        }
        let mut at_pos = self.len;
        while at_pos > 0 && better(self.best[at_pos - 1]) {
            self.best[at_pos] = self.best[at_pos - 1];
            at_pos -= 1;
        }
        self.best[at_pos] = (k, gain);
        self.len += 1;
    }

    /// Whether the entering variable can be taken from what is kept.
    fn usable(&self, bland: bool) -> bool {
        if bland {
            self.fresh
        } else {
            self.len > 0 || !self.truncated
        }
    }

    /// The entering variable (`None`: optimal), taken out of the candidates.
    fn take(&mut self, bland: bool) -> Option<usize> {
        debug_assert!(self.usable(bland));
        self.fresh = false;
        if bland {
            // Not reused after a Bland step (the caller prices afresh).
            self.len = 0;
            self.truncated = true;
            return self.bland;
        }
        if self.len == 0 {
            return None;
        }
        let (k, _) = self.best[0];
        self.best.copy_within(1..self.len, 0);
        self.len -= 1;
        Some(k)
    }
}

/// `max c·z, A z ≤ b, 0 ≤ z ≤ u` (`A` by sparse columns: `columns[k]` lists `(row, value)`
/// of column `k`), starting with each `z_k` at `start[k]`. Returns `z` at an optimum, or
/// `None` when the solver gives up (module doc); never a point outside the bounds.
///
/// Revised form: the basis inverse `B⁻¹` is kept dense (`rows × rows`: a block has few rows,
/// its binding OSTs) and the columns of `A` sparse (an application uses a handful of OSTs), so
/// an iteration costs about `rows² + nonzeros of A` instead of a pass over a `rows × (cols +
/// rows)` tableau; with a thousand applications on 32 OSTs that is several times less.
pub fn solve<C: AsRef<[(usize, f64)]>>(
    c: &[f64],
    columns: &[C],
    b: &[f64],
    u: &[f64],
    start: &[Bound],
) -> Option<Vec<f64>> {
    let (n, m) = (c.len(), b.len());
    assert_eq!(columns.len(), n);
    assert!(
        columns
            .iter()
            .all(|col| col.as_ref().iter().all(|&(i, _)| i < m)),
        "rows of A exist"
    );
    assert_eq!(u.len(), n);
    assert_eq!(start.len(), n);
    assert!(
        u.iter().all(|&v| v >= 0.0 && v.is_finite()),
        "finite upper bounds ≥ 0"
    );
    let width = n + m;
    // Column k is column k - 1 negated (a throttle and its expansion in the GIFT LP): its
    // entry of a row of B⁻¹A is then the other's negated, exactly (round-to-nearest is
    // symmetric; at most the sign of a zero differs, which no comparison or later value sees).
    let mirrors_previous: Vec<bool> = (0..n)
        .map(|k| {
            k > 0 && {
                let (prev, col) = (columns[k - 1].as_ref(), columns[k].as_ref());
                prev.len() == col.len()
                    && prev
                        .iter()
                        .zip(col)
                        .all(|(&(ip, vp), &(i, v))| ip == i && v == -vp)
            }
        })
        .collect();
    // Each column's rows as a bit set, when a block has at most 64 rows: a column with no
    // entry where the pivot row of B⁻¹ is nonzero has a zero entry in the pivot row of B⁻¹A,
    // so its reduced cost does not change and its sum need not be formed. The pivot rows of
    // these blocks are sparse (at 1,000 applications on 200 OSTs about 2 nonzeros of 14,
    // and about half the columns untouched per pivot).
    let row_masks: Option<Vec<u64>> = (m <= 64).then(|| {
        columns
            .iter()
            .map(|col| col.as_ref().iter().fold(0u64, |acc, &(i, _)| acc | 1 << i))
            .collect()
    });
    // B⁻¹, row-major; the basis starts as the slacks (identity).
    let mut binv = vec![0.0f64; m * m];
    for i in 0..m {
        binv[i * m + i] = 1.0;
    }
    let mut basis: Vec<usize> = (n..width).collect();
    let mut is_basic = vec![false; width];
    for &k in &basis {
        is_basic[k] = true;
    }
    let mut at: Vec<Bound> = start
        .iter()
        .copied()
        .chain((0..m).map(|_| Bound::Lower))
        .collect();
    let upper = |k: usize| if k < n { u[k] } else { f64::INFINITY };
    // Basic values: the slacks of the start.
    let mut beta: Vec<f64> = b.to_vec();
    for (k, col) in columns.iter().enumerate() {
        if start[k] == Bound::Upper {
            for &(i, v) in col.as_ref() {
                beta[i] -= v * u[k];
            }
        }
    }
    if beta.iter().any(|&s| s < -START_TOLERANCE) {
        return None;
    }
    for s in &mut beta {
        *s = s.max(0.0);
    }
    // Reduced costs: c for the structurals, 0 for the slacks (all basic).
    let mut d: Vec<f64> = c.iter().copied().chain((0..m).map(|_| 0.0)).collect();
    let c_max = c.iter().fold(0.0f64, |acc, v| acc.max(v.abs()));
    let tol = OPTIMALITY_TOLERANCE * c_max.max(f64::MIN_POSITIVE);

    let mut alpha = vec![0.0f64; m];
    let mut pivot_row = vec![0.0f64; m];
    // Where the pivot row of B⁻¹ is nonzero: its indices, and as a bit set (blocks of at most
    // 64 rows).
    let mut pivot_nonzero: Vec<usize> = Vec::with_capacity(m);
    let iterations_max = 50 * (width + 1);
    let mut degenerate_run = 0u32;
    // Pricing of the current state when the last pivot's pass over the reduced costs made
    // one, or the last bound flip left one usable (`None`: price in a pass of its own).
    let mut priced: Option<Pricing> = None;
    for _ in 0..iterations_max {
        let bland = degenerate_run >= DEGENERATE_RUN_MAX;
        // Entering variable: improving direction from its bound.
        let mut pricing = match priced.take() {
            Some(pricing) if pricing.usable(bland) => pricing,
            _ => {
                let mut pricing = Pricing::new();
                for k in 0..width {
                    if !is_basic[k] {
                        pricing.offer(k, at[k], d[k], upper(k), tol);
                    }
                }
                pricing
            }
        };
        let Some(q) = pricing.take(bland) else {
            // Optimal: read z.
            let mut z: Vec<f64> = (0..n)
                .map(|k| match at[k] {
                    Bound::Lower => 0.0,
                    Bound::Upper => u[k],
                })
                .collect();
            for (i, &k) in basis.iter().enumerate() {
                if k < n {
                    z[k] = beta[i].clamp(0.0, u[k]);
                }
            }
            return Some(z);
        };
        // The entering column in the current basis: alpha = B⁻¹ A_q.
        if q < n {
            // Row by row (each row of B⁻¹ read where it lies); every alpha_i still sums the
            // column's entries in their order from 0, as a column-by-column pass would.
            let column = columns[q].as_ref();
            for (x, row) in alpha.iter_mut().zip(binv.chunks_exact(m)) {
                let mut sum = 0.0;
                for &(r, v) in column {
                    sum += row[r] * v;
                }
                *x = sum;
            }
        } else {
            for (i, x) in alpha.iter_mut().enumerate() {
                *x = binv[i * m + (q - n)];
            }
        }
        let dir = if at[q] == Bound::Lower { 1.0 } else { -1.0 };
        // Ratio test: the entering variable's own range, then each basic variable's bounds.
        let mut theta = upper(q);
        let mut leaving: Option<(usize, Bound)> = None;
        for i in 0..m {
            let alpha_i = alpha[i];
            if alpha_i.abs() <= PIVOT_TOLERANCE {
                continue;
            }
            // x_B[i] moves by -alpha * dir per unit of the step.
            let rate = -alpha_i * dir;
            let (limit, bound) = if rate < 0.0 {
                (beta[i] / -rate, Bound::Lower)
            } else {
                let ub = upper(basis[i]);
                if ub.is_infinite() {
                    continue;
                }
                ((ub - beta[i]).max(0.0) / rate, Bound::Upper)
            };
            let better = match leaving {
                None => limit < theta,
                Some((r, _)) => {
                    limit < theta
                        || (limit == theta
                            && if bland {
                                basis[i] < basis[r]
                            } else {
                                alpha_i.abs() > alpha[r].abs()
                            })
                }
            };
            if better {
                theta = limit;
                leaving = Some((i, bound));
            }
        }
        if theta.is_infinite() {
            return None;
        }
        degenerate_run = if theta <= 0.0 { degenerate_run + 1 } else { 0 };
        for i in 0..m {
            beta[i] -= alpha[i] * dir * theta;
        }
        let Some((r, leaves_at)) = leaving else {
            // Bound flip: the entering variable crosses its whole range.
            at[q] = match at[q] {
                Bound::Lower => Bound::Upper,
                Bound::Upper => Bound::Lower,
            };
            priced = Some(pricing);
            continue;
        };
        let pivot = alpha[r];
        if pivot.abs() <= PIVOT_TOLERANCE {
            return None;
        }
        // Reduced costs: d_k -= d_q / pivot · (row r of B⁻¹ A)_k, row r taken before the update.
        pivot_row.copy_from_slice(&binv[r * m..(r + 1) * m]);
        pivot_nonzero.clear();
        pivot_nonzero.extend((0..m).filter(|&i| pivot_row[i] != 0.0));
        let pivot_mask = pivot_nonzero
            .iter()
            .fold(0u64, |acc, &i| acc | 1 << (i % 64));
        let ratio = d[q] / pivot;
        // The same pass prices the next iteration: every column but the entering one (basic
        // after this pivot) and the leaving one (nonbasic after it, offered below) keeps its
        // status, and its reduced cost is final once updated here.
        let mut pricing = Pricing::new();
        let out = basis[r];
        // (Row r of B⁻¹A at column k - 1, when this pass computed it.)
        let mut previous: Option<f64> = None;
        for (k, col) in columns.iter().enumerate() {
            if is_basic[k] {
                previous = None;
            } else {
                let t_rk: f64 = match previous {
                    Some(t) if mirrors_previous[k] => -t,
                    // Every product would be a zero: the sum is a zero, and `d[k]` minus a
                    // multiple of it is `d[k]` (at most the sign of a zero differs, which no
                    // comparison or later value sees).
                    _ if row_masks
                        .as_ref()
                        .is_some_and(|masks| masks[k] & pivot_mask == 0) =>
                    {
                        0.0
                    }
                    _ => col.as_ref().iter().map(|&(i, v)| pivot_row[i] * v).sum(),
                };
                previous = Some(t_rk);
                d[k] -= ratio * t_rk;
                if k != q {
                    pricing.offer(k, at[k], d[k], u[k], tol);
                }
            }
        }
        for i in 0..m {
            if !is_basic[n + i] {
                d[n + i] -= ratio * pivot_row[i];
                if n + i != q {
                    pricing.offer(n + i, at[n + i], d[n + i], f64::INFINITY, tol);
                }
            }
        }
        // The entering variable's value, and the leaving one goes to its bound.
        let entering_value = match at[q] {
            Bound::Lower => theta,
            Bound::Upper => upper(q) - theta,
        };
        at[out] = leaves_at;
        is_basic[out] = false;
        is_basic[q] = true;
        basis[r] = q;
        beta[r] = entering_value;
        d[q] = 0.0;
        // The leaving variable's reduced cost: -d_q / pivot (its tableau row-r entry is 1).
        d[out] = -ratio;
        pricing.offer(out, at[out], d[out], upper(out), tol);
        priced = Some(pricing);
        // B⁻¹: row r by the pivot, then eliminate alpha from the other rows.
        // Only where row r is nonzero: elsewhere every update is a zero (scaled, or
        // subtracted), which leaves each value as it is up to the sign of a zero.
        let inv = 1.0 / pivot;
        for &p in &pivot_nonzero {
            binv[r * m + p] *= inv;
        }
        let (before, rest) = binv.split_at_mut(r * m);
        let (row_r, after) = rest.split_at_mut(m);
        for (i, row) in before.chunks_exact_mut(m).enumerate().chain(
            after
                .chunks_exact_mut(m)
                .enumerate()
                .map(|(j, x)| (r + 1 + j, x)),
        ) {
            let f = alpha[i];
            if f != 0.0 {
                for &p in &pivot_nonzero {
                    row[p] -= f * row_r[p];
                }
            }
        }
        // Basic values stay within their bounds up to float noise; beyond it the basis has
        // lost accuracy, and the caller's other solver is the safer answer.
        for v in &mut beta {
            if *v < 0.0 {
                if *v < -DRIFT_TOLERANCE {
                    return None;
                }
                *v = 0.0;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use good_lp::{microlp, variable, Expression, ProblemVariables, Solution, SolverModel};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn reference(c: &[f64], a: &[f64], b: &[f64], u: &[f64]) -> Option<f64> {
        let n = c.len();
        let mut vars = ProblemVariables::new();
        let z: Vec<_> = u
            .iter()
            .map(|&ub| vars.add(variable().min(0.0).max(ub)))
            .collect();
        let objective: Expression = z.iter().zip(c).map(|(v, ci)| *ci * *v).sum();
        let mut model = vars.maximise(objective.clone()).using(microlp);
        for (i, bi) in b.iter().enumerate() {
            let row: Expression = (0..n).map(|k| a[i * n + k] * z[k]).sum();
            model.add_constraint(row.leq(*bi));
        }
        let s = model.solve().ok()?;
        Some(z.iter().zip(c).map(|(v, ci)| ci * s.value(*v)).sum())
    }

    fn sparse(a: &[f64], m: usize) -> Vec<Vec<(usize, f64)>> {
        let n = a.len() / m.max(1);
        (0..n)
            .map(|k| {
                (0..m)
                    .filter(|&i| a[i * n + k] != 0.0)
                    .map(|i| (i, a[i * n + k]))
                    .collect()
            })
            .collect()
    }

    fn value(c: &[f64], z: &[f64]) -> f64 {
        c.iter().zip(z).map(|(ci, zi)| ci * zi).sum()
    }

    /// A hand-solved LP: max 3x + 2y, x + y ≤ 4, x + 3y ≤ 6, x ≤ 3, y ≤ 5: x = 3, y = 1.
    #[test]
    fn a_small_lp_by_hand() {
        let z = solve(
            &[3.0, 2.0],
            &sparse(&[1.0, 1.0, 1.0, 3.0], 2),
            &[4.0, 6.0],
            &[3.0, 5.0],
            &[Bound::Lower; 2],
        )
        .unwrap();
        assert!(
            (z[0] - 3.0).abs() < 1e-12 && (z[1] - 1.0).abs() < 1e-12,
            "{z:?}"
        );
    }

    /// Starting at an upper bound and leaving it: max -x (a throttle) with x free to drop.
    #[test]
    fn a_start_at_the_upper_bound_moves_down_when_that_pays() {
        let z = solve(
            &[-1.0, 1.0],
            &sparse(&[1.0, 1.0], 1),
            &[1.0],
            &[0.5, 1.0],
            &[Bound::Upper, Bound::Lower],
        )
        .unwrap();
        assert_eq!(z, vec![0.0, 1.0]);
    }

    /// An infeasible start is refused, not repaired.
    #[test]
    fn an_infeasible_start_gives_up() {
        assert_eq!(
            solve(&[1.0], &sparse(&[1.0], 1), &[0.5], &[1.0], &[Bound::Upper]),
            None
        );
    }

    /// Against `microlp` on random packing LPs shaped like the presolve's blocks (nonnegative
    /// rows, and mixed-sign columns as the throttle/expansion pairs make): the same optimum
    /// within 1e-9, and the result meets every row and bound.
    #[test]
    fn matches_microlp_on_random_blocks() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        for case in 0..400 {
            let n = rng.random_range(1..=24usize);
            let m = rng.random_range(1..=16usize);
            let mut a = vec![0.0; n * m];
            for v in a.iter_mut() {
                if rng.random_bool(0.35) {
                    // Few distinct values make ties and degenerate vertices common.
                    *v = f64::from(rng.random_range(1..=4u32)) / 4.0;
                    if rng.random_bool(0.2) {
                        *v = -*v;
                    }
                }
            }
            let u: Vec<f64> = (0..n)
                .map(|_| f64::from(rng.random_range(0..=4u32)) / 4.0)
                .collect();
            let c: Vec<f64> = (0..n)
                .map(|_| f64::from(rng.random_range(-2..=8i32)) / 2.0)
                .collect();
            let start: Vec<Bound> = (0..n)
                .map(|_| {
                    if rng.random_bool(0.3) {
                        Bound::Upper
                    } else {
                        Bound::Lower
                    }
                })
                .collect();
            // Right-hand sides that the start meets, some with no slack at all.
            let b: Vec<f64> = (0..m)
                .map(|i| {
                    let used: f64 = (0..n)
                        .filter(|&k| start[k] == Bound::Upper)
                        .map(|k| a[i * n + k] * u[k])
                        .sum();
                    used + if rng.random_bool(0.25) {
                        0.0
                    } else {
                        rng.random_range(0.0..3.0)
                    }
                })
                .collect();
            let Some(z) = solve(&c, &sparse(&a, m), &b, &u, &start) else {
                panic!("case {case}: gave up");
            };
            for (k, zk) in z.iter().enumerate() {
                assert!((0.0..=u[k]).contains(zk), "case {case}: bound {k}");
            }
            for i in 0..m {
                let row: f64 = (0..n).map(|k| a[i * n + k] * z[k]).sum();
                assert!(row <= b[i] + 1e-9, "case {case}: row {i} {row} > {}", b[i]);
            }
            let expected = reference(&c, &a, &b, &u).expect("feasible");
            let got = value(&c, &z);
            assert!(
                (got - expected).abs() <= 1e-9 * expected.abs().max(1.0),
                "case {case}: {got} against microlp's {expected}"
            );
        }
    }
}
