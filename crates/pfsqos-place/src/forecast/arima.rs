//! ARIMA(p, d, q) fitted by conditional sum of squares (CSS) and exact maximum likelihood, the
//! predictor of iez's AIPA
//! (paper Section III-A2: "AutoRegressive Integrated Moving Average ... 'p' is the number of lag
//! observations, 'd' ... the number of times raw observations are differenced, and 'q' ... the
//! size of moving average window").
//!
//! The model, for the d-times differenced series `w_t = (1 - B)^d y_t`, is (Box and Jenkins, the paper's reference 32)
//!
//! ```text
//! w_t - μ = Σ_{i=1..p} φ_i (w_{t-i} - μ) + e_t + Σ_{j=1..q} θ_j e_{t-j},   e_t ~ N(0, σ²)
//! ```
//!
//! **Mean policy** (matches statsmodels' `tsa.arima.model.ARIMA` default `trend`): μ is estimated
//! when d = 0 (trend "c") and fixed at 0 when d ≥ 1 (trend "n": no drift in the levels).
//!
//! **Estimator**: CSS, as in R's `arima(method = "CSS")` and the starting step of the old
//! `statsmodels.tsa.arima_model.ARIMA(method = "css-mle")` the paper used: the recursion above is
//! run from t = p with the pre-sample residuals set to 0, and `Σ_{t ≥ p} e_t²` is minimized with our
//! own Nelder-Mead ([`super::optim`]). Starting values are Hannan-Rissanen (a long AR by least
//! squares, then least squares on lagged values and lagged long-AR residuals); for q = 0 this is
//! ordinary least squares, which is already the CSS optimum.
//!
//! **Exact maximum likelihood** ([`Estimator::CssMle`], the default): the CSS solution starts a
//! second Nelder-Mead search on the exact Gaussian likelihood of the differenced series computed
//! by the Kalman filter (the `kalman` module), σ² concentrated out; forecasts then come from the
//! filtered state. This is the paper's final step ("fit the ARIMA(p, q, d) model by exact maximum
//! likelihood via Kalman filters") and what statsmodels' `tsa.arima.model.ARIMA.fit()` computes.
//!
//! **Stationarity and invertibility** are enforced by construction, as statsmodels does
//! (`enforce_stationarity`, `enforce_invertibility`, Jones 1980 / Monahan 1984): the optimizer
//! works on unconstrained `u_k`, mapped to partial autocorrelations `r_k = u_k / sqrt(1 + u_k²)`
//! in (-1, 1) and then by the Durbin-Levinson recursion to φ (and, negated, to θ). A fit whose
//! solution runs to the boundary (some `|r_k| > 1 - `[`BOUNDARY_MARGIN`], a unit root in the AR
//! or MA polynomial) or that exhausts the evaluation budget is reported as **not converged**; iez
//! skips such orders ("skipping the ones that fail to converge", Section III-A2).
//!
//! The series is scaled by its standard deviation (and, for d = 0, centered) before the
//! optimization so that tolerances mean the same for bytes (1e9) and stripe counts (1..16);
//! parameters and forecasts are reported in the series' own units.

use super::kalman::KalmanWork;
use super::optim::{nelder_mead, NelderMeadOptions, NelderMeadResult};
use super::ForecastError;

/// Largest p, d or q of the iez grid (Section III-A2: "We vary the values of p, d, and q from 0
/// to 5 ... because going beyond 5 would be computationally expensive").
pub const ORDER_MAX: usize = 5;

/// Longest series a fit accepts. The CSS recursion is O(n (p + q)) per evaluation and a fit
/// spends up to thousands of evaluations, so this bounds one fit to well under a second.
pub const SERIES_LEN_MAX: usize = 10_000;

/// A fit whose partial autocorrelation (AR or MA side) exceeds `1 - BOUNDARY_MARGIN` in absolute
/// value is taken as a (near) unit root: not converged.
pub const BOUNDARY_MARGIN: f64 = 1e-3;

/// The (p, d, q) of an ARIMA model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArimaOrder {
    /// Autoregressive lags.
    pub p: usize,
    /// Times the series is differenced.
    pub d: usize,
    /// Moving-average lags.
    pub q: usize,
}

impl ArimaOrder {
    pub const fn new(p: usize, d: usize, q: usize) -> Self {
        ArimaOrder { p, d, q }
    }

    /// Whether a mean μ is estimated: only for d = 0 (statsmodels' default trend, see the module
    /// doc).
    pub const fn has_mean(&self) -> bool {
        self.d == 0
    }

    /// Parameters the optimizer searches: p + q, plus the mean when d = 0 (σ² is concentrated
    /// out of the CSS).
    pub const fn n_params(&self) -> usize {
        self.p + self.q + self.has_mean() as usize
    }

    /// Shortest series this order is fitted on: the d observations lost to differencing, the p
    /// conditioned on, and then at least `2 × (n_params + 1) + 1` residuals (two residuals per
    /// estimated quantity including σ², plus one) so that a fit is not a mere interpolation.
    pub const fn min_series_len(&self) -> usize {
        self.d + self.p + 2 * (self.n_params() + 1) + 1
    }

    /// All orders of the iez grid, p, d, q in `0..=max`, in lexicographic (p, d, q) order.
    pub fn grid(max: usize) -> impl Iterator<Item = ArimaOrder> {
        (0..=max).flat_map(move |p| {
            (0..=max).flat_map(move |d| (0..=max).map(move |q| ArimaOrder::new(p, d, q)))
        })
    }
}

impl std::fmt::Display for ArimaOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ARIMA({},{},{})", self.p, self.d, self.q)
    }
}

/// How [`fit_arima`] estimates the parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimator {
    /// Conditional sum of squares only: about 5 times cheaper, used to screen the order grid.
    Css,
    /// CSS, then exact Gaussian maximum likelihood by the Kalman filter from the CSS solution
    /// (the old statsmodels `method="css-mle"` the paper used).
    CssMle,
}

/// Settings of [`fit_arima`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArimaFitOptions {
    pub estimator: Estimator,
    /// Nelder-Mead settings; `max_evals` is per run, and a fit makes two runs (the second
    /// restarts from the first's best point, the usual remedy for a collapsed simplex).
    pub optimizer: NelderMeadOptions,
}

impl Default for ArimaFitOptions {
    fn default() -> Self {
        ArimaFitOptions {
            estimator: Estimator::CssMle,
            optimizer: NelderMeadOptions {
                f_tol_rel: 1e-9,
                x_tol: 1e-5,
                f_tol_floor: 1e-12,
                max_evals: 3000,
                initial_step: 0.1,
            },
        }
    }
}

/// A fitted ARIMA model: its parameters and what forecasting needs of the series.
#[derive(Clone, Debug, PartialEq)]
pub struct ArimaModel {
    pub order: ArimaOrder,
    /// How the parameters were estimated; [`Estimator::CssMle`] models forecast from the Kalman
    /// filter's state, [`Estimator::Css`] ones from the CSS recursion.
    pub estimator: Estimator,
    /// μ of the differenced series in the series' units; 0 when d ≥ 1.
    pub mean: f64,
    /// φ_1..φ_p.
    pub ar: Vec<f64>,
    /// θ_1..θ_q (sign convention `+ θ_j e_{t-j}`, as statsmodels).
    pub ma: Vec<f64>,
    /// Innovation variance in the series' units squared: CSS / (residual count) for
    /// [`Estimator::Css`], the maximum likelihood estimate `Σ v_t² / F_t / n` for
    /// [`Estimator::CssMle`].
    pub sigma2: f64,
    /// Conditional sum of squares at the solution, in the series' units squared.
    pub css: f64,
    /// Exact Gaussian log-likelihood of the differenced series at the solution
    /// ([`Estimator::CssMle`] only).
    pub log_likelihood: Option<f64>,
    /// Whether the optimizer met its tolerances within budget and the solution is strictly
    /// stationary and invertible (see the module doc).
    pub converged: bool,
    /// Objective evaluations spent.
    pub evals: usize,
    /// The series fitted (kept to forecast from its end).
    series: Vec<f64>,
    /// One-step residuals e_t of the differenced series, index t of w (0 for t < p).
    residuals: Vec<f64>,
}

/// `d`-th difference of `y`: length `y.len() - d` (empty if `d ≥ len`).
pub fn difference(y: &[f64], d: usize) -> Vec<f64> {
    let mut w = y.to_vec();
    for _ in 0..d {
        if w.len() <= 1 {
            return Vec::new();
        }
        for t in 0..w.len() - 1 {
            w[t] = w[t + 1] - w[t];
        }
        w.pop();
    }
    w
}

/// Inverse of [`difference`] for values following the end of `history`: given forecasts of the
/// d-th difference after `history`, returns the forecasts of the series itself.
///
/// `history` must hold at least d values (the last value of each differencing level is needed).
pub fn integrate(history: &[f64], d: usize, diff_forecasts: &[f64]) -> Vec<f64> {
    assert!(
        history.len() >= d,
        "integrating d = {d} needs d history values"
    );
    // Last value of each level 0..d (level k = k-th difference of history).
    let mut last_of_level = Vec::with_capacity(d);
    let mut level = history[history.len() - d..].to_vec();
    for _ in 0..d {
        last_of_level.push(*level.last().expect("level non-empty"));
        level = difference(&level, 1);
    }
    let mut out = diff_forecasts.to_vec();
    for k in (0..d).rev() {
        let mut acc = last_of_level[k];
        for v in out.iter_mut() {
            acc += *v;
            *v = acc;
        }
    }
    out
}

/// Durbin-Levinson: partial autocorrelations `r` (each in (-1, 1)) to the coefficients `phi` of
/// a stationary AR polynomial `1 - φ_1 z - ... - φ_k z^k`. `scratch` has `r.len()` entries.
fn pacf_to_ar(r: &[f64], phi: &mut [f64], scratch: &mut [f64]) {
    debug_assert_eq!(r.len(), phi.len());
    for k in 0..r.len() {
        scratch[..k].copy_from_slice(&phi[..k]);
        for j in 0..k {
            phi[j] = scratch[j] - r[k] * scratch[k - 1 - j];
        }
        phi[k] = r[k];
    }
}

/// Step-down (inverse Durbin-Levinson): AR coefficients to partial autocorrelations, or `None`
/// when the polynomial is not strictly stationary (some `|r_k| ≥ 1`).
fn ar_to_pacf(phi: &[f64]) -> Option<Vec<f64>> {
    let k = phi.len();
    let mut a = phi.to_vec();
    let mut r = vec![0.0; k];
    for m in (0..k).rev() {
        let rk = a[m];
        if !rk.is_finite() || rk.abs() >= 1.0 {
            return None;
        }
        r[m] = rk;
        let den = 1.0 - rk * rk;
        let prev: Vec<f64> = (0..m).map(|j| (a[j] + rk * a[m - 1 - j]) / den).collect();
        a[..m].copy_from_slice(&prev);
    }
    Some(r)
}

/// Whether `1 - φ_1 z - ... - φ_p z^p` has all roots outside the unit circle.
pub fn is_stationary(phi: &[f64]) -> bool {
    ar_to_pacf(phi).is_some()
}

/// Whether `1 + θ_1 z + ... + θ_q z^q` has all roots outside the unit circle.
pub fn is_invertible(theta: &[f64]) -> bool {
    let neg: Vec<f64> = theta.iter().map(|t| -t).collect();
    ar_to_pacf(&neg).is_some()
}

fn unconstrain(r: f64) -> f64 {
    r / (1.0 - r * r).sqrt()
}

fn constrain(u: f64) -> f64 {
    u / (1.0 + u * u).sqrt()
}

/// Checks a series for fitting: non-empty, finite, not longer than [`SERIES_LEN_MAX`].
pub fn validate_series(series: &[f64]) -> Result<(), ForecastError> {
    if series.is_empty() {
        return Err(ForecastError::Empty);
    }
    if series.len() > SERIES_LEN_MAX {
        return Err(ForecastError::TooLong {
            len: series.len(),
            max: SERIES_LEN_MAX,
        });
    }
    if let Some(index) = series.iter().position(|v| !v.is_finite()) {
        return Err(ForecastError::NonFinite { index });
    }
    Ok(())
}

/// Solves the least-squares problem `min |X b - y|` through the normal equations with a tiny
/// ridge (Cholesky). `x` is row-major with `k` columns. `None` if degenerate.
fn least_squares(x: &[f64], y: &[f64], k: usize) -> Option<Vec<f64>> {
    let rows = y.len();
    debug_assert_eq!(x.len(), rows * k);
    if rows < k || k == 0 {
        return None;
    }
    let mut a = vec![0.0; k * k];
    let mut b = vec![0.0; k];
    for t in 0..rows {
        let row = &x[t * k..(t + 1) * k];
        for i in 0..k {
            b[i] += row[i] * y[t];
            for j in 0..=i {
                a[i * k + j] += row[i] * row[j];
            }
        }
    }
    let trace: f64 = (0..k).map(|i| a[i * k + i]).sum();
    let ridge = 1e-10 * trace.max(1e-300) / k as f64;
    // Cholesky of the lower triangle, in place.
    for i in 0..k {
        a[i * k + i] += ridge;
    }
    for j in 0..k {
        let mut s = a[j * k + j];
        for m in 0..j {
            s -= a[j * k + m] * a[j * k + m];
        }
        if s <= 0.0 || !s.is_finite() {
            return None;
        }
        let l = s.sqrt();
        a[j * k + j] = l;
        for i in j + 1..k {
            let mut s = a[i * k + j];
            for m in 0..j {
                s -= a[i * k + m] * a[j * k + m];
            }
            a[i * k + j] = s / l;
        }
    }
    // Forward then backward substitution.
    let mut z = b;
    for i in 0..k {
        for m in 0..i {
            z[i] -= a[i * k + m] * z[m];
        }
        z[i] /= a[i * k + i];
    }
    for i in (0..k).rev() {
        for m in i + 1..k {
            z[i] -= a[m * k + i] * z[m];
        }
        z[i] /= a[i * k + i];
    }
    z.iter().all(|v| v.is_finite()).then_some(z)
}

/// Hannan-Rissanen estimates of (φ, θ) for the zero-mean series `z`. Falls back to zeros for a
/// side whose estimate is not stationary (AR) or invertible (MA), or when a regression is
/// degenerate.
fn hannan_rissanen(z: &[f64], p: usize, q: usize) -> (Vec<f64>, Vec<f64>) {
    let n = z.len();
    let zeros = (vec![0.0; p], vec![0.0; q]);
    if p + q == 0 {
        return zeros;
    }
    // Residuals used as regressors: for q = 0 none are needed (plain conditional least squares).
    let (resid, start) = if q == 0 {
        (Vec::new(), p)
    } else {
        let m = (p + q + 1)
            .max((10.0 * (n as f64).log10()) as usize)
            .min(n / 4);
        if m < 1 || m <= p.max(q) {
            return zeros;
        }
        let rows = n - m;
        let mut x = Vec::with_capacity(rows * m);
        for t in m..n {
            x.extend((1..=m).map(|i| z[t - i]));
        }
        let Some(a) = least_squares(&x, &z[m..], m) else {
            return zeros;
        };
        let mut e = vec![0.0; n];
        for t in m..n {
            e[t] = z[t] - (1..=m).map(|i| a[i - 1] * z[t - i]).sum::<f64>();
        }
        (e, m + q)
    };
    if start >= n {
        return zeros;
    }
    let k = p + q;
    let mut x = Vec::with_capacity((n - start) * k);
    for t in start..n {
        x.extend((1..=p).map(|i| z[t - i]));
        x.extend((1..=q).map(|j| resid[t - j]));
    }
    let Some(b) = least_squares(&x, &z[start..], k) else {
        return zeros;
    };
    let mut phi = b[..p].to_vec();
    let mut theta = b[p..].to_vec();
    if !is_stationary(&phi) {
        phi = vec![0.0; p];
    }
    if !is_invertible(&theta) {
        theta = vec![0.0; q];
    }
    (phi, theta)
}

/// Scratch buffers of the CSS objective, allocated once per fit so that the objective itself
/// does not allocate (it runs thousands of times per fit, 216 fits per order selection).
struct CssWork {
    r: Vec<f64>,
    scratch: Vec<f64>,
    phi: Vec<f64>,
    theta: Vec<f64>,
    resid: Vec<f64>,
}

impl CssWork {
    fn new(order: ArimaOrder, n: usize) -> Self {
        let k = order.p.max(order.q);
        CssWork {
            r: vec![0.0; k],
            scratch: vec![0.0; k],
            phi: vec![0.0; order.p],
            theta: vec![0.0; order.q],
            resid: vec![0.0; n],
        }
    }

    /// Maps the unconstrained vector `x = [μ?, u_ar.., u_ma..]` to (μ, φ, θ) in `self`.
    fn set_params(&mut self, order: ArimaOrder, x: &[f64]) -> f64 {
        let off = order.has_mean() as usize;
        let mu = if order.has_mean() { x[0] } else { 0.0 };
        let (p, q) = (order.p, order.q);
        for k in 0..p {
            self.r[k] = constrain(x[off + k]);
        }
        pacf_to_ar(&self.r[..p], &mut self.phi, &mut self.scratch[..p]);
        for k in 0..q {
            self.r[k] = constrain(x[off + p + k]);
        }
        pacf_to_ar(&self.r[..q], &mut self.theta, &mut self.scratch[..q]);
        for t in self.theta.iter_mut() {
            *t = -*t;
        }
        mu
    }

    /// Conditional sum of squares of `z` under (μ, φ, θ) set by [`Self::set_params`]; fills
    /// `self.resid`.
    fn css(&mut self, z: &[f64], mu: f64) -> f64 {
        css_residuals(z, mu, &self.phi, &self.theta, &mut self.resid);
        self.resid[self.phi.len()..].iter().map(|e| e * e).sum()
    }
}

/// The CSS recursion: `resid[t]` for t ≥ p, zeros before.
fn css_residuals(z: &[f64], mu: f64, phi: &[f64], theta: &[f64], resid: &mut [f64]) {
    let (p, q) = (phi.len(), theta.len());
    debug_assert_eq!(z.len(), resid.len());
    resid[..p.min(z.len())].iter_mut().for_each(|e| *e = 0.0);
    for t in p..z.len() {
        let mut e = z[t] - mu;
        for (i, ph) in phi.iter().enumerate() {
            e -= ph * (z[t - 1 - i] - mu);
        }
        for (j, th) in theta.iter().enumerate().take(q.min(t)) {
            e -= th * resid[t - 1 - j];
        }
        resid[t] = e;
    }
}

/// Fits ARIMA(`order`) to `series` (oldest first) by CSS, then, for [`Estimator::CssMle`], by
/// exact maximum likelihood from the CSS solution (see the module doc).
///
/// Errors: empty, non-finite or too long series; an order beyond [`ORDER_MAX`]; a series shorter
/// than [`ArimaOrder::min_series_len`]. A fit that runs but does not converge is returned with
/// `converged == false`.
pub fn fit_arima(
    series: &[f64],
    order: ArimaOrder,
    opts: &ArimaFitOptions,
) -> Result<ArimaModel, ForecastError> {
    validate_series(series)?;
    if order.p > ORDER_MAX || order.d > ORDER_MAX || order.q > ORDER_MAX {
        return Err(ForecastError::OrderTooLarge(order));
    }
    if series.len() < order.min_series_len() {
        return Err(ForecastError::TooShort {
            len: series.len(),
            needed: order.min_series_len(),
            order,
        });
    }
    let w = difference(series, order.d);
    let m = w.len();
    let (p, q) = (order.p, order.q);

    // Center (d = 0 only) and scale so the optimizer works in unit-free numbers.
    let mean_w = w.iter().sum::<f64>() / m as f64;
    let center = if order.has_mean() { mean_w } else { 0.0 };
    let var = w.iter().map(|v| (v - center).powi(2)).sum::<f64>() / m as f64;
    let scale = if var > 0.0 && var.is_finite() {
        var.sqrt()
    } else {
        1.0
    };
    let z: Vec<f64> = w.iter().map(|v| (v - center) / scale).collect();

    // Starting point: μ = 0 (the centered mean), Hannan-Rissanen (φ, θ) in unconstrained form.
    let (phi0, theta0) = hannan_rissanen(&z, p, q);
    let mut x0 = Vec::with_capacity(order.n_params());
    if order.has_mean() {
        x0.push(0.0);
    }
    let pacf_ar = ar_to_pacf(&phi0).unwrap_or_else(|| vec![0.0; p]);
    let neg_theta: Vec<f64> = theta0.iter().map(|t| -t).collect();
    let pacf_ma = ar_to_pacf(&neg_theta).unwrap_or_else(|| vec![0.0; q]);
    // Keep the start strictly inside the region so the unconstrained value is finite.
    x0.extend(pacf_ar.iter().map(|r| unconstrain(r.clamp(-0.99, 0.99))));
    x0.extend(pacf_ma.iter().map(|r| unconstrain(r.clamp(-0.99, 0.99))));

    let mut work = CssWork::new(order, m);
    let mut objective = |x: &[f64]| {
        let mu = work.set_params(order, x);
        work.css(&z, mu)
    };
    let (mut best, mut evals, mut converged) = minimize_twice(&mut objective, &x0, opts);

    let mut log_likelihood = None;
    let mut sigma2_mle_z = None;
    if opts.estimator == Estimator::CssMle {
        let mut work = CssWork::new(order, m);
        let mut kalman = KalmanWork::new(p, q);
        let mut deviance = |x: &[f64]| {
            let mu = work.set_params(order, x);
            match kalman.filter(&z, mu, &work.phi, &work.theta) {
                Some(out) => out.deviance(),
                None => f64::INFINITY,
            }
        };
        let (mle, mle_evals, mle_converged) = minimize_twice(&mut deviance, &best.x, opts);
        evals += mle_evals;
        converged = mle_converged;
        best = mle;
        let mu = work.set_params(order, &best.x);
        if let Some(out) = kalman.filter(&z, mu, &work.phi, &work.theta) {
            let n = out.n as f64;
            let s2 = out.ssq / n;
            sigma2_mle_z = Some(s2);
            // In the series' units: the density of w = scale · z gains -n log(scale).
            log_likelihood = Some(
                -0.5 * (n * (2.0 * std::f64::consts::PI * s2).ln() + n + out.sum_log_f)
                    - n * scale.ln(),
            );
        } else {
            converged = false;
        }
    }

    let mut work = CssWork::new(order, m);
    let mu_z = work.set_params(order, &best.x);
    let css_z = work.css(&z, mu_z);
    let off = order.has_mean() as usize;
    let on_boundary = best.x[off..]
        .iter()
        .any(|u| constrain(*u).abs() > 1.0 - BOUNDARY_MARGIN);
    if on_boundary {
        converged = false;
    }
    let residuals: Vec<f64> = work.resid.iter().map(|e| e * scale).collect();
    let css = css_z * scale * scale;
    let n_resid = (m - p) as f64;
    Ok(ArimaModel {
        order,
        estimator: opts.estimator,
        mean: if order.has_mean() {
            center + mu_z * scale
        } else {
            0.0
        },
        ar: work.phi.clone(),
        ma: work.theta.clone(),
        sigma2: match sigma2_mle_z {
            Some(s2) => s2 * scale * scale,
            None => css / n_resid,
        },
        css,
        log_likelihood,
        converged,
        evals,
        series: series.to_vec(),
        residuals,
    })
}

/// Two Nelder-Mead runs, the second restarted from the first's best point (the usual remedy for
/// a simplex collapsed away from the minimum). Converged: both met their tolerances and the
/// restart did not move the objective materially (1e-6 relative) -- a genuine minimum passes
/// this quickly.
fn minimize_twice<F>(
    objective: &mut F,
    x0: &[f64],
    opts: &ArimaFitOptions,
) -> (NelderMeadResult, usize, bool)
where
    F: FnMut(&[f64]) -> f64,
{
    let first = nelder_mead(&mut *objective, x0, &opts.optimizer);
    if !first.converged {
        // Budget exhausted (a ridge or a run to the boundary): a restart would most likely
        // exhaust it too, and the fit is skipped anyway. Saves half the cost of the orders of
        // the grid that do not converge.
        let evals = first.evals;
        return (first, evals, false);
    }
    let second = nelder_mead(&mut *objective, &first.x, &opts.optimizer);
    let evals = first.evals + second.evals;
    let restart_agrees =
        (first.f - second.f).abs() <= 1e-6 * first.f.abs().max(opts.optimizer.f_tol_floor);
    let converged = second.converged && restart_agrees;
    let best = if second.f <= first.f { second } else { first };
    let converged = converged && best.f.is_finite();
    (best, evals, converged)
}

impl ArimaModel {
    /// Builds a model from given parameters and conditions it on `series` (the CSS residuals are
    /// computed, nothing is estimated): to forecast with known coefficients, or to evaluate one
    /// model on a longer series (the hold-out check of order selection).
    pub fn with_params(
        series: &[f64],
        order: ArimaOrder,
        mean: f64,
        ar: &[f64],
        ma: &[f64],
    ) -> Result<ArimaModel, ForecastError> {
        validate_series(series)?;
        assert_eq!(ar.len(), order.p, "φ has p entries");
        assert_eq!(ma.len(), order.q, "θ has q entries");
        if series.len() <= order.d + order.p {
            return Err(ForecastError::TooShort {
                len: series.len(),
                needed: order.d + order.p + 1,
                order,
            });
        }
        let w = difference(series, order.d);
        let mean = if order.has_mean() { mean } else { 0.0 };
        let mut residuals = vec![0.0; w.len()];
        css_residuals(&w, mean, ar, ma, &mut residuals);
        let css: f64 = residuals[order.p..].iter().map(|e| e * e).sum();
        Ok(ArimaModel {
            order,
            estimator: Estimator::Css,
            mean,
            ar: ar.to_vec(),
            ma: ma.to_vec(),
            sigma2: css / (w.len() - order.p) as f64,
            css,
            log_likelihood: None,
            converged: true,
            evals: 0,
            series: series.to_vec(),
            residuals,
        })
    }

    /// The series the model is conditioned on.
    pub fn series(&self) -> &[f64] {
        &self.series
    }

    /// One-step-ahead prediction errors `y_t - ŷ_{t|t-1}` for t = d + p .. len (in the series'
    /// units) of the conditional model: the CSS residuals at the model's parameters (also for
    /// [`Estimator::CssMle`] fits, so RMSEs of both estimators compare on one footing). For
    /// d ≥ 1 the one-step error of y equals that of its difference.
    pub fn one_step_errors(&self) -> &[f64] {
        &self.residuals[self.order.p..]
    }

    /// Root mean square of [`Self::one_step_errors`]: the in-sample RMSE.
    pub fn in_sample_rmse(&self) -> f64 {
        let e = self.one_step_errors();
        (e.iter().map(|v| v * v).sum::<f64>() / e.len() as f64).sqrt()
    }

    /// Forecasts `horizon` values after the end of the series, integrated back d times: for
    /// [`Estimator::CssMle`] the exact minimum mean square error forecasts from the Kalman
    /// filter's state (as statsmodels), for [`Estimator::Css`] those of the conditional model
    /// (the CSS recursion with future innovations at 0).
    pub fn forecast(&self, horizon: usize) -> Vec<f64> {
        let w = difference(&self.series, self.order.d);
        if self.estimator == Estimator::CssMle {
            let mut kalman = KalmanWork::new(self.order.p, self.order.q);
            if kalman.filter(&w, self.mean, &self.ar, &self.ma).is_some() {
                let out: Vec<f64> = kalman
                    .forecast(horizon)
                    .into_iter()
                    .map(|v| v + self.mean)
                    .collect();
                return integrate(&self.series, self.order.d, &out);
            }
        }
        let m = w.len();
        let (p, q) = (self.order.p, self.order.q);
        let mu = self.mean;
        // Centered differenced values, extended with the forecasts as they are made.
        let mut zc: Vec<f64> = w.iter().map(|v| v - mu).collect();
        zc.reserve(horizon);
        let mut out = Vec::with_capacity(horizon);
        for s in 0..horizon {
            let t = m + s;
            let mut v = 0.0;
            for i in 0..p {
                v += self.ar[i] * zc[t - 1 - i];
            }
            for j in 0..q {
                // Future innovations are 0; past ones are the residuals (0 before t = p).
                if let Some(tt) = (t - 1).checked_sub(j) {
                    if tt < m {
                        v += self.ma[j] * self.residuals[tt];
                    }
                }
            }
            zc.push(v);
            out.push(v + mu);
        }
        integrate(&self.series, self.order.d, &out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differencing_round_trips() {
        let y: Vec<f64> = (0..20)
            .map(|t| (t as f64).powi(3) * 0.1 + (t as f64).sin())
            .collect();
        for d in 0..=ORDER_MAX {
            // Split: difference the whole series, then rebuild the tail from the head.
            let w = difference(&y, d);
            assert_eq!(w.len(), y.len() - d);
            let head = &y[..12];
            let tail_diffs = &w[12 - d..];
            let rebuilt = integrate(head, d, tail_diffs);
            for (a, b) in rebuilt.iter().zip(&y[12..]) {
                assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "d={d}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn difference_of_short_series_is_empty() {
        assert!(difference(&[1.0, 2.0], 2).is_empty());
        assert!(difference(&[1.0], 3).is_empty());
        assert_eq!(difference(&[1.0, 4.0, 9.0], 1), vec![3.0, 5.0]);
        assert_eq!(difference(&[1.0, 4.0, 9.0], 2), vec![2.0]);
    }

    #[test]
    fn pacf_transform_round_trips_and_is_stationary() {
        let r = [0.9, -0.5, 0.3, -0.95, 0.1];
        let mut phi = [0.0; 5];
        let mut scratch = [0.0; 5];
        pacf_to_ar(&r, &mut phi, &mut scratch);
        assert!(is_stationary(&phi));
        let back = ar_to_pacf(&phi).expect("stationary");
        for (a, b) in back.iter().zip(&r) {
            assert!((a - b).abs() < 1e-12);
        }
        assert!(!is_stationary(&[1.0]));
        assert!(!is_stationary(&[0.5, 0.6]));
        assert!(is_stationary(&[0.5, 0.3]));
        assert!(is_invertible(&[0.5]));
        assert!(!is_invertible(&[-1.2]));
    }

    #[test]
    fn least_squares_solves_exact_system() {
        // y = 2 x1 - 3 x2
        let x = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0];
        let y = [2.0, -3.0, -1.0, 7.0];
        let b = least_squares(&x, &y, 2).expect("full rank");
        assert!(
            (b[0] - 2.0).abs() < 1e-8 && (b[1] + 3.0).abs() < 1e-8,
            "{b:?}"
        );
    }

    #[test]
    fn forecast_with_known_params_follows_the_recursion() {
        // AR(1) with mean 10, φ = 0.5: forecasts decay towards the mean geometrically.
        let y = [10.0, 12.0, 11.0, 14.0];
        let m = ArimaModel::with_params(&y, ArimaOrder::new(1, 0, 0), 10.0, &[0.5], &[])
            .expect("valid");
        let f = m.forecast(3);
        assert!((f[0] - 12.0).abs() < 1e-12);
        assert!((f[1] - 11.0).abs() < 1e-12);
        assert!((f[2] - 10.5).abs() < 1e-12);
        // ARIMA(0,1,0): random walk, forecast = last value.
        let m = ArimaModel::with_params(&y, ArimaOrder::new(0, 1, 0), 0.0, &[], &[]).unwrap();
        assert_eq!(m.forecast(2), vec![14.0, 14.0]);
        // ARIMA(0,2,0): linear extrapolation.
        let m = ArimaModel::with_params(&y, ArimaOrder::new(0, 2, 0), 0.0, &[], &[]).unwrap();
        assert_eq!(m.forecast(2), vec![17.0, 20.0]);
    }
}
