//! Cost of iez's prediction step (paper Section III-A2) for one traced series of 300 values:
//! the full order selection (216 ARIMA orders screened by CSS, hold-out RMSE, the chosen order
//! refitted by exact maximum likelihood) plus a 10-step forecast, and, for scale, one CSS and one
//! exact-MLE fit of ARIMA(2,1,1) (the order the paper found for IOR).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use pfsqos_core::forecast::{
    fit_arima, select_order, ArimaFitOptions, ArimaOrder, Estimator, SelectionOptions,
};

/// A deterministic ARIMA(2,1,1)-like series (φ = 0.5, -0.3, θ = 0.4) driven by a xorshift
/// pseudo-random sequence, so the bench needs no RNG crate.
fn series(n: usize) -> Vec<f64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let (mut w1, mut w2, mut e1, mut y) = (0.0, 0.0, 0.0, 1e6);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n + 100 {
        let e = 3.46 * uniform(); // variance 1
        let w = 0.5 * w1 - 0.3 * w2 + e + 0.4 * e1;
        (w2, w1, e1) = (w1, w, e);
        y += w;
        out.push(y);
    }
    out.split_off(100)
}

fn bench(c: &mut Criterion) {
    let y = series(300);
    let mut g = c.benchmark_group("forecast_300");
    g.sample_size(10);
    g.bench_function("select_216_orders_and_forecast", |b| {
        b.iter(|| {
            let sel = select_order(black_box(&y), &SelectionOptions::default()).unwrap();
            black_box(sel.model.forecast(10))
        })
    });
    let order = ArimaOrder::new(2, 1, 1);
    let css = ArimaFitOptions {
        estimator: Estimator::Css,
        ..ArimaFitOptions::default()
    };
    g.bench_function("fit_css_arima_211", |b| {
        b.iter(|| black_box(fit_arima(black_box(&y), order, &css).unwrap()))
    });
    g.bench_function("fit_mle_arima_211", |b| {
        b.iter(|| black_box(fit_arima(black_box(&y), order, &ArimaFitOptions::default()).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
