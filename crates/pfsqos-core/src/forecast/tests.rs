//! Tests of the forecasting module: statsmodels fixtures, order selection on simulated series,
//! input validation, the iez helper.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Standard normal draws by Box-Muller (rand 0.9 without rand_distr).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Simulates `n` values of ARIMA(p, d, q) with mean `mean` (of the d-th difference), after a
/// burn-in of 200 values, starting the integration at `start`.
fn simulate(
    seed: u64,
    n: usize,
    d: usize,
    mean: f64,
    ar: &[f64],
    ma: &[f64],
    sigma: f64,
    start: f64,
) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let burn = 200;
    let total = n + burn;
    let mut w = vec![0.0; total];
    let mut e = vec![0.0; total];
    for t in 0..total {
        e[t] = sigma * normal(&mut rng);
        let mut v = e[t];
        for (i, a) in ar.iter().enumerate() {
            if t > i {
                v += a * (w[t - 1 - i] - mean);
            }
        }
        for (j, b) in ma.iter().enumerate() {
            if t > j {
                v += b * e[t - 1 - j];
            }
        }
        w[t] = mean + v;
    }
    let mut y = w[burn..].to_vec();
    for _ in 0..d {
        let mut acc = start;
        for v in y.iter_mut() {
            acc += *v;
            *v = acc;
        }
    }
    y
}

#[test]
fn fits_ar1_with_mean() {
    let y = simulate(1, 500, 0, 5.0, &[0.6], &[], 1.0, 0.0);
    let m = fit_arima(&y, ArimaOrder::new(1, 0, 0), &ArimaFitOptions::default()).unwrap();
    assert!(m.converged, "{m:?}");
    assert!((m.ar[0] - 0.6).abs() < 0.1, "{:?}", m.ar);
    assert!((m.mean - 5.0).abs() < 0.3, "{}", m.mean);
    assert!((m.sigma2 - 1.0).abs() < 0.15, "{}", m.sigma2);
}

#[test]
fn fits_arima_211() {
    let y = simulate(2, 600, 1, 0.0, &[0.5, -0.3], &[0.4], 2.0, 100.0);
    let m = fit_arima(&y, ArimaOrder::new(2, 1, 1), &ArimaFitOptions::default()).unwrap();
    assert!(m.converged, "{m:?}");
    assert!((m.ar[0] - 0.5).abs() < 0.15, "{:?}", m.ar);
    assert!((m.ar[1] + 0.3).abs() < 0.15, "{:?}", m.ar);
    assert!((m.ma[0] - 0.4).abs() < 0.15, "{:?}", m.ma);
    assert!((m.sigma2 - 4.0).abs() < 0.6, "{}", m.sigma2);
}

#[test]
fn grid_timing_300() {
    let y = simulate(3, 300, 1, 0.0, &[0.5, -0.3], &[0.4], 2.0, 100.0);
    let sel = select_order(&y, &SelectionOptions::default()).unwrap();
    eprintln!(
        "{} rmse {} fitted {} converged {}",
        sel.model.order, sel.rmse, sel.fitted, sel.converged
    );
    let sel = select_order(
        &y,
        &SelectionOptions {
            criterion: RmseCriterion::InSample,
            ..SelectionOptions::default()
        },
    )
    .unwrap();
    eprintln!(
        "{} rmse {} fitted {} converged {}",
        sel.model.order, sel.rmse, sel.fitted, sel.converged
    );
}
