//! Derivative-free minimization: Nelder-Mead simplex search.
//!
//! The ARIMA fits ([`super::arima`]) minimize a conditional sum of squares over at most 11
//! unconstrained parameters (p + q ≤ 10 plus a mean). The objective is cheap, smooth almost
//! everywhere and has no analytic gradient we want to maintain, which is the textbook case for
//! Nelder-Mead (Nelder & Mead 1965). The variant here is deterministic (no random restarts) and
//! uses the dimension-adaptive coefficients of Gao & Han (2012), which keep the method from
//! stalling in the 8-11 dimensional fits of the iez order grid (Section III-A2 of the paper: p and
//! q up to 5).

/// Settings of [`nelder_mead`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NelderMeadOptions {
    /// Stop when the simplex's objective spread `max |f_i - f_best|` is at most
    /// `f_tol_rel * max(|f_best|, f_tol_floor)`...
    pub f_tol_rel: f64,
    /// ...and its spread in x, `max |x_i - x_best|` (infinity norm), is at most `x_tol`.
    pub x_tol: f64,
    /// Floor of the scale of the relative objective tolerance, for objectives that converge to 0.
    pub f_tol_floor: f64,
    /// Give up (not converged) after this many objective evaluations.
    pub max_evals: usize,
    /// Edge of the initial simplex along each axis, in x's units.
    pub initial_step: f64,
}

impl Default for NelderMeadOptions {
    fn default() -> Self {
        NelderMeadOptions {
            f_tol_rel: 1e-10,
            x_tol: 1e-6,
            f_tol_floor: 1e-12,
            max_evals: 4000,
            initial_step: 0.1,
        }
    }
}

/// Outcome of [`nelder_mead`].
#[derive(Clone, Debug, PartialEq)]
pub struct NelderMeadResult {
    /// Best point found.
    pub x: Vec<f64>,
    /// Objective at `x`.
    pub f: f64,
    /// Objective evaluations spent.
    pub evals: usize,
    /// Whether both tolerances were met before `max_evals` (and the objective is finite).
    pub converged: bool,
}

/// Minimizes `f` from `x0` with the Nelder-Mead simplex method.
///
/// Non-finite objective values are treated as +infinity, so `f` may return `f64::INFINITY` (or
/// NaN) to reject a region. Zero-dimensional problems evaluate `f` once and count as converged.
/// Deterministic: the same `f`, `x0` and options give the same result.
pub fn nelder_mead<F>(mut f: F, x0: &[f64], opts: &NelderMeadOptions) -> NelderMeadResult
where
    F: FnMut(&[f64]) -> f64,
{
    assert!(
        opts.max_evals > 0,
        "Nelder-Mead needs at least one evaluation"
    );
    assert!(
        opts.initial_step > 0.0,
        "initial simplex step must be positive"
    );
    let n = x0.len();
    let mut evals = 0usize;
    let mut eval = |x: &[f64], evals: &mut usize| {
        *evals += 1;
        let v = f(x);
        if v.is_nan() {
            f64::INFINITY
        } else {
            v
        }
    };
    if n == 0 {
        let v = eval(x0, &mut evals);
        return NelderMeadResult {
            x: Vec::new(),
            f: v,
            evals,
            converged: v.is_finite(),
        };
    }

    // Gao & Han (2012) adaptive coefficients: reflection 1, expansion 1 + 2/n,
    // contraction 3/4 - 1/(2n), shrink 1 - 1/n. For n = 2 these are the classic 1, 2, 1/2, 1/2.
    let nf = n as f64;
    let alpha = 1.0;
    let gamma = 1.0 + 2.0 / nf;
    let rho = 0.75 - 0.5 / nf;
    let sigma = 1.0 - 1.0 / nf;

    let mut simplex: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
    let mut values: Vec<f64> = Vec::with_capacity(n + 1);
    simplex.push(x0.to_vec());
    values.push(eval(x0, &mut evals));
    for i in 0..n {
        let mut v = x0.to_vec();
        v[i] += opts.initial_step;
        values.push(eval(&v, &mut evals));
        simplex.push(v);
    }

    let mut order: Vec<usize> = (0..=n).collect();
    let mut centroid = vec![0.0; n];
    let mut xr = vec![0.0; n];
    let mut xe = vec![0.0; n];
    let mut xc = vec![0.0; n];
    let mut converged = false;

    loop {
        // Sort vertex indices best..worst; ties broken by index so the run is deterministic.
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
        let best = order[0];
        let worst = order[n];
        let second_worst = order[n - 1];

        let f_best = values[best];
        if f_best.is_finite() {
            let f_spread = order[1..]
                .iter()
                .map(|&i| (values[i] - f_best).abs())
                .fold(0.0, f64::max);
            let x_spread = order[1..]
                .iter()
                .flat_map(|&i| {
                    simplex[i]
                        .iter()
                        .zip(&simplex[best])
                        .map(|(a, b)| (a - b).abs())
                })
                .fold(0.0, f64::max);
            let f_scale = f_best.abs().max(opts.f_tol_floor);
            if f_spread <= opts.f_tol_rel * f_scale && x_spread <= opts.x_tol {
                converged = true;
                break;
            }
        }
        if evals >= opts.max_evals {
            break;
        }

        centroid.iter_mut().for_each(|c| *c = 0.0);
        for &i in &order[..n] {
            for (c, x) in centroid.iter_mut().zip(&simplex[i]) {
                *c += x;
            }
        }
        centroid.iter_mut().for_each(|c| *c /= nf);

        for j in 0..n {
            xr[j] = centroid[j] + alpha * (centroid[j] - simplex[worst][j]);
        }
        let fr = eval(&xr, &mut evals);
        if fr < values[best] {
            for j in 0..n {
                xe[j] = centroid[j] + gamma * (xr[j] - centroid[j]);
            }
            let fe = eval(&xe, &mut evals);
            if fe < fr {
                simplex[worst].copy_from_slice(&xe);
                values[worst] = fe;
            } else {
                simplex[worst].copy_from_slice(&xr);
                values[worst] = fr;
            }
            continue;
        }
        if fr < values[second_worst] {
            simplex[worst].copy_from_slice(&xr);
            values[worst] = fr;
            continue;
        }
        // Contraction: outside if the reflection improved on the worst vertex, else inside.
        let outside = fr < values[worst];
        for j in 0..n {
            xc[j] = if outside {
                centroid[j] + rho * (xr[j] - centroid[j])
            } else {
                centroid[j] + rho * (simplex[worst][j] - centroid[j])
            };
        }
        let fc = eval(&xc, &mut evals);
        let accept = if outside {
            fc <= fr
        } else {
            fc < values[worst]
        };
        if accept {
            simplex[worst].copy_from_slice(&xc);
            values[worst] = fc;
            continue;
        }
        // Shrink every vertex towards the best one.
        let xb = simplex[best].clone();
        for &i in &order[1..] {
            for (x, b) in simplex[i].iter_mut().zip(&xb) {
                *x = b + sigma * (*x - b);
            }
            values[i] = eval(&simplex[i], &mut evals);
        }
    }

    let best = (0..=n)
        .min_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)))
        .expect("simplex has n + 1 ≥ 1 vertices");
    NelderMeadResult {
        x: simplex[best].clone(),
        f: values[best],
        evals,
        converged: converged && values[best].is_finite(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimizes_a_quadratic_bowl() {
        let r = nelder_mead(
            |x| (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2) + 3.0,
            &[0.0, 0.0],
            &NelderMeadOptions::default(),
        );
        assert!(r.converged);
        assert!((r.x[0] - 1.0).abs() < 1e-5, "{:?}", r.x);
        assert!((r.x[1] + 2.0).abs() < 1e-5, "{:?}", r.x);
        assert!((r.f - 3.0).abs() < 1e-9);
    }

    #[test]
    fn minimizes_rosenbrock() {
        let r = nelder_mead(
            |x| 100.0 * (x[1] - x[0] * x[0]).powi(2) + (1.0 - x[0]).powi(2),
            &[-1.2, 1.0],
            &NelderMeadOptions::default(),
        );
        assert!(r.converged);
        assert!(
            (r.x[0] - 1.0).abs() < 1e-4 && (r.x[1] - 1.0).abs() < 1e-4,
            "{:?}",
            r.x
        );
    }

    #[test]
    fn minimizes_in_ten_dimensions() {
        let r = nelder_mead(
            |x| {
                x.iter()
                    .enumerate()
                    .map(|(i, v)| (i as f64 + 1.0) * (v - 0.1 * i as f64).powi(2))
                    .sum()
            },
            &[0.0; 10],
            &NelderMeadOptions {
                max_evals: 20_000,
                ..NelderMeadOptions::default()
            },
        );
        assert!(r.converged, "{r:?}");
        for (i, v) in r.x.iter().enumerate() {
            assert!((v - 0.1 * i as f64).abs() < 1e-4, "{:?}", r.x);
        }
    }

    #[test]
    fn budget_exhaustion_is_not_convergence() {
        let r = nelder_mead(
            |x| x.iter().map(|v| v * v).sum(),
            &[5.0; 6],
            &NelderMeadOptions {
                max_evals: 20,
                ..NelderMeadOptions::default()
            },
        );
        assert!(!r.converged);
        assert!(r.evals <= 20 + 6, "{}", r.evals);
    }

    #[test]
    fn non_finite_regions_are_avoided() {
        // Infinite for x < 0: the minimum of (x - 0.5)^2 on x ≥ 0 is found from inside.
        let r = nelder_mead(
            |x| {
                if x[0] < 0.0 {
                    f64::NAN
                } else {
                    (x[0] - 0.5).powi(2)
                }
            },
            &[2.0],
            &NelderMeadOptions::default(),
        );
        assert!(r.converged);
        assert!((r.x[0] - 0.5).abs() < 1e-5);
    }

    #[test]
    fn zero_dimensions_evaluate_once() {
        let r = nelder_mead(|_| 4.0, &[], &NelderMeadOptions::default());
        assert_eq!(r.evals, 1);
        assert!(r.converged);
        assert_eq!(r.f, 4.0);
    }
}
