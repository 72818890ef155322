//! Exact Gaussian likelihood of a stationary ARMA(p, q) by the Kalman filter (Harvey, reference 33 of the
//! iez paper, Section III-A2: "fit the ARIMA(p, q, d) model by exact maximum likelihood via
//! Kalman filters").
//!
//! State-space form (Harvey 1989, §3.3; the form of the old `statsmodels.tsa.arima_model`):
//! with `r = max(p, q + 1)`,
//!
//! ```text
//! z_t     = [1 0 ... 0] α_t                     (no measurement noise)
//! α_{t+1} = T α_t + R e_{t+1},   T = [φ | I_{r-1} over 0],   R = [1, θ_1, ..., θ_{r-1}]ᵀ
//! ```
//!
//! φ and θ padded with zeros to r. The filter starts from the stationary distribution
//! (`a_1 = 0`, `P_1` solving `P = T P Tᵀ + R Rᵀ`), and σ² is concentrated out: with innovations
//! `v_t` and their variances `σ² F_t`, `σ̂² = (1/n) Σ v_t² / F_t` and
//! `-2 log L = n log σ̂² + Σ log F_t + n (1 + log 2π)`.
//!
//! For d ≥ 1 the likelihood of the d-times differenced series is the exact (diffuse) likelihood
//! of the ARIMA model (Harvey 1989, §3.4), which is what statsmodels' `tsa.arima.model.ARIMA`
//! maximizes with its exact diffuse initialization.

/// Work buffers of the filter for one (p, q): allocated once per fit so that evaluating the
/// likelihood (thousands of times per fit) does not allocate.
pub(crate) struct KalmanWork {
    r: usize,
    phi: Vec<f64>,
    rv: Vec<f64>,
    a: Vec<f64>,
    p: Vec<f64>,
    tp: Vec<f64>,
    gain: Vec<f64>,
    p0: Vec<f64>,
    lyap: Vec<f64>,
    rhs: Vec<f64>,
}

/// Result of one filter pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct FilterOutput {
    /// `Σ v_t² / F_t` (σ̂² = this / n).
    pub ssq: f64,
    /// `Σ log F_t`.
    pub sum_log_f: f64,
    pub n: usize,
}

impl FilterOutput {
    /// `n log σ̂² + Σ log F_t`: minus twice the concentrated log-likelihood, up to a constant.
    pub fn deviance(&self) -> f64 {
        let n = self.n as f64;
        n * (self.ssq / n).ln() + self.sum_log_f
    }
}

impl KalmanWork {
    pub fn new(p: usize, q: usize) -> Self {
        let r = p.max(q + 1);
        KalmanWork {
            r,
            phi: vec![0.0; r],
            rv: vec![0.0; r],
            a: vec![0.0; r],
            p: vec![0.0; r * r],
            tp: vec![0.0; r * r],
            gain: vec![0.0; r],
            p0: vec![0.0; r * r],
            lyap: vec![0.0; r * r * r * r],
            rhs: vec![0.0; r * r],
        }
    }

    /// Sets φ, θ and the stationary initial covariance. `false` if the Lyapunov system is
    /// singular (a unit root; cannot happen strictly inside the stationary region).
    fn set(&mut self, ar: &[f64], ma: &[f64]) -> bool {
        let r = self.r;
        debug_assert!(ar.len() <= r && ma.len() < r);
        self.phi.iter_mut().for_each(|v| *v = 0.0);
        self.phi[..ar.len()].copy_from_slice(ar);
        self.rv.iter_mut().for_each(|v| *v = 0.0);
        self.rv[0] = 1.0;
        self.rv[1..=ma.len()].copy_from_slice(ma);
        self.solve_stationary_cov()
    }

    /// Solves `P = T P Tᵀ + R Rᵀ` as the linear system `(I - T⊗T) vec P = vec(R Rᵀ)` (r ≤ 6, so
    /// at most 36 unknowns) by Gaussian elimination with partial pivoting.
    fn solve_stationary_cov(&mut self) -> bool {
        let r = self.r;
        let nn = r * r;
        // T[i][k] = φ_i if k == 0, 1 if k == i + 1, else 0.
        let t = |i: usize, k: usize, phi: &[f64]| -> f64 {
            let mut v = 0.0;
            if k == 0 {
                v += phi[i];
            }
            if k == i + 1 {
                v += 1.0;
            }
            v
        };
        for i in 0..r {
            for j in 0..r {
                let row = i * r + j;
                for k in 0..r {
                    for l in 0..r {
                        let col = k * r + l;
                        let kron = t(i, k, &self.phi) * t(j, l, &self.phi);
                        self.lyap[row * nn + col] = if row == col { 1.0 } else { 0.0 } - kron;
                    }
                }
                self.rhs[row] = self.rv[i] * self.rv[j];
            }
        }
        let (m, b) = (&mut self.lyap, &mut self.rhs);
        for c in 0..nn {
            let piv = (c..nn)
                .max_by(|&x, &y| m[x * nn + c].abs().total_cmp(&m[y * nn + c].abs()))
                .expect("non-empty range");
            let pv = m[piv * nn + c];
            if pv.abs() < 1e-12 || !pv.is_finite() {
                return false;
            }
            if piv != c {
                for k in 0..nn {
                    m.swap(piv * nn + k, c * nn + k);
                }
                b.swap(piv, c);
            }
            for row in c + 1..nn {
                let f = m[row * nn + c] / pv;
                if f != 0.0 {
                    for k in c..nn {
                        m[row * nn + k] -= f * m[c * nn + k];
                    }
                    b[row] -= f * b[c];
                }
            }
        }
        for c in (0..nn).rev() {
            let mut s = b[c];
            for k in c + 1..nn {
                s -= m[c * nn + k] * self.p0[k];
            }
            self.p0[c] = s / m[c * nn + c];
        }
        // Symmetrize away rounding.
        for i in 0..r {
            for j in 0..i {
                let v = 0.5 * (self.p0[i * r + j] + self.p0[j * r + i]);
                self.p0[i * r + j] = v;
                self.p0[j * r + i] = v;
            }
        }
        self.p0.iter().all(|v| v.is_finite()) && self.p0[0] > 0.0
    }

    /// Runs the filter over `z - mean` for (φ, θ). Leaves the one-step predicted
    /// state `a_{n+1|n}` in the work (see [`Self::forecast`]). `None` if the model has no
    /// stationary covariance or the filter breaks down.
    pub fn filter(&mut self, z: &[f64], mean: f64, ar: &[f64], ma: &[f64]) -> Option<FilterOutput> {
        if !self.set(ar, ma) {
            return None;
        }
        let r = self.r;
        self.a.iter_mut().for_each(|v| *v = 0.0);
        self.p.copy_from_slice(&self.p0);
        let mut ssq = 0.0;
        let mut sum_log_f = 0.0;
        // Once P has converged to its steady state R Rᵀ (F = 1: the state is known up to the
        // current shock, which holds for invertible models), the gain is R and only the state
        // needs updating: O(r) instead of O(r²) per observation.
        let mut steady = false;
        for &zt in z {
            let v = zt - mean - self.a[0];
            let f = if steady { 1.0 } else { self.p[0] };
            if !(f > 0.0 && f.is_finite()) {
                return None;
            }
            ssq += v * v / f;
            sum_log_f += f.ln();
            if steady {
                for i in 0..r {
                    self.a[i] += self.rv[i] * v;
                }
                self.predict_state();
                continue;
            }
            // Update: K = P e_0 / F, a += K v, P -= K (P e_0)ᵀ.
            for i in 0..r {
                self.gain[i] = self.p[i * r] / f;
            }
            for i in 0..r {
                self.a[i] += self.gain[i] * v;
            }
            // P[i][j] -= P[i][0] P[j][0] / F = K_i K_j F (from the gain: P's column 0 changes
            // during the loop).
            for i in 0..r {
                for j in 0..r {
                    self.p[i * r + j] -= self.gain[i] * self.gain[j] * f;
                }
            }
            self.predict_state();
            // P = T P Tᵀ + R Rᵀ, via (T P)[i][j] = φ_i P[0][j] + P[i+1][j].
            for i in 0..r {
                for j in 0..r {
                    let below = if i + 1 < r {
                        self.p[(i + 1) * r + j]
                    } else {
                        0.0
                    };
                    self.tp[i * r + j] = self.phi[i] * self.p[j] + below;
                }
            }
            let mut off_steady = 0.0f64;
            for i in 0..r {
                for j in 0..r {
                    let right = if j + 1 < r {
                        self.tp[i * r + j + 1]
                    } else {
                        0.0
                    };
                    let rr = self.rv[i] * self.rv[j];
                    let v = self.tp[i * r] * self.phi[j] + right + rr;
                    off_steady = off_steady.max((v - rr).abs());
                    self.p[i * r + j] = v;
                }
            }
            steady = off_steady < 1e-12;
        }
        Some(FilterOutput {
            ssq,
            sum_log_f,
            n: z.len(),
        })
    }

    /// `a = T a` (the state prediction).
    fn predict_state(&mut self) {
        let r = self.r;
        let a0 = self.a[0];
        for i in 0..r {
            let next = if i + 1 < r { self.a[i + 1] } else { 0.0 };
            self.a[i] = self.phi[i] * a0 + next;
        }
    }

    /// Forecasts `horizon` values of `z - mean` after the last [`Self::filter`]:
    /// `ẑ_{n+h} = [T^{h-1} a_{n+1|n}]_0`.
    pub fn forecast(&self, horizon: usize) -> Vec<f64> {
        let r = self.r;
        let mut a = self.a.clone();
        let mut out = Vec::with_capacity(horizon);
        for _ in 0..horizon {
            out.push(a[0]);
            let a0 = a[0];
            for i in 0..r {
                let next = if i + 1 < r { a[i + 1] } else { 0.0 };
                a[i] = self.phi[i] * a0 + next;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ar1_stationary_variance_and_likelihood() {
        // AR(1): P_1 = 1 / (1 - φ²); F_1 = P_1, then F_t = 1 (the filter is exact after one
        // observation).
        let phi = 0.6;
        let mut k = KalmanWork::new(1, 0);
        let z = [0.5, -0.2, 1.0, 0.3];
        let out = k.filter(&z, 0.0, &[phi], &[]).unwrap();
        let p1 = 1.0 / (1.0 - phi * phi);
        let mut ssq = z[0] * z[0] / p1;
        for t in 1..z.len() {
            ssq += (z[t] - phi * z[t - 1]).powi(2);
        }
        assert!((out.ssq - ssq).abs() < 1e-12, "{} vs {ssq}", out.ssq);
        assert!((out.sum_log_f - p1.ln()).abs() < 1e-12);
        // Forecast: φ^h z_n.
        let f = k.forecast(3);
        for (h, v) in f.iter().enumerate() {
            assert!((v - phi.powi(h as i32 + 1) * 0.3).abs() < 1e-12);
        }
    }

    #[test]
    fn ma1_initial_variance() {
        // MA(1): Var z = 1 + θ².
        let theta = 0.4;
        let mut k = KalmanWork::new(0, 1);
        let out = k.filter(&[1.0], 0.0, &[], &[theta]).unwrap();
        assert!((out.sum_log_f - (1.0 + theta * theta).ln()).abs() < 1e-12);
    }

    #[test]
    fn unit_root_has_no_stationary_covariance() {
        let mut k = KalmanWork::new(1, 0);
        assert!(k.filter(&[1.0, 2.0], 0.0, &[1.0], &[]).is_none());
    }
}
