//! Savitzky-Golay smoothing: the filter the PI paper applies to the open-loop queue record
//! before fitting eq. 1 (Section 4.2: "after filtering the noise with a Savitzky-Golay filter
//! over the collected measures").
//!
//! Each output sample is the value, at that sample's position, of the polynomial of degree
//! `order` fitted by least squares to `window` consecutive input samples. The weights are
//! computed from the normal equations of that fit (not tabled), so any odd window and any
//! order below it work.
//!
//! Edges: the first and last `window / 2` samples have no centred window. They take the
//! polynomial fitted to the first (last) `window` samples, evaluated at their own position
//! (SciPy's `savgol_filter(mode="interp")`). So a polynomial of degree `<= order` passes
//! through unchanged everywhere, edges included, and no sample is invented by padding.

use std::fmt;

/// Largest window accepted (the weights cost `window * order^2`; the paper's records are a
/// few thousand samples).
pub const SAVGOL_WINDOW_MAX: usize = 1001;

/// Largest polynomial order accepted: the normal equations of higher orders are badly
/// conditioned in `f64`, and smoothing needs low orders (2 to 4).
pub const SAVGOL_ORDER_MAX: usize = 8;

/// Why a Savitzky-Golay filter cannot be built or applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SavGolError {
    /// The window must be odd (a centred window) and at least 1.
    WindowNotOdd {
        window: usize,
    },
    WindowTooLarge {
        window: usize,
    },
    /// The order must be below the window (otherwise the fit interpolates: no smoothing).
    OrderTooHigh {
        order: usize,
        window: usize,
    },
    /// The record is shorter than one window.
    TooFewSamples {
        len: usize,
        window: usize,
    },
    /// A sample is NaN or infinite.
    NonFinite {
        index: usize,
    },
}

impl fmt::Display for SavGolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SavGolError::WindowNotOdd { window } => {
                write!(
                    f,
                    "Savitzky-Golay window {window} is not an odd number >= 1"
                )
            }
            SavGolError::WindowTooLarge { window } => write!(
                f,
                "Savitzky-Golay window {window} is larger than {SAVGOL_WINDOW_MAX}"
            ),
            SavGolError::OrderTooHigh { order, window } => write!(
                f,
                "Savitzky-Golay order {order} must be below the window {window} and at most \
                 {SAVGOL_ORDER_MAX}"
            ),
            SavGolError::TooFewSamples { len, window } => write!(
                f,
                "{len} samples are fewer than one Savitzky-Golay window of {window}"
            ),
            SavGolError::NonFinite { index } => {
                write!(f, "sample {index} is not a finite number")
            }
        }
    }
}

impl std::error::Error for SavGolError {}

/// A Savitzky-Golay filter: window length (odd) and polynomial order (below the window).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavGol {
    window: usize,
    order: usize,
}

impl SavGol {
    pub fn new(window: usize, order: usize) -> Result<SavGol, SavGolError> {
        if window.is_multiple_of(2) {
            return Err(SavGolError::WindowNotOdd { window });
        }
        if window > SAVGOL_WINDOW_MAX {
            return Err(SavGolError::WindowTooLarge { window });
        }
        if order >= window || order > SAVGOL_ORDER_MAX {
            return Err(SavGolError::OrderTooHigh { order, window });
        }
        Ok(SavGol { window, order })
    }

    pub fn window(&self) -> usize {
        self.window
    }

    pub fn order(&self) -> usize {
        self.order
    }

    /// The weights that give the fitted polynomial's value at `position` (0-based within the
    /// window) as a weighted sum of the window's samples. `weights(window / 2)` are the
    /// classic centred coefficients (window 5, order 2: `[-3, 12, 17, 12, -3] / 35`).
    ///
    /// The fit is `c = (AᵀA)⁻¹ Aᵀ y` with `A[i][j] = x_iʲ`; its value at `x_p` is
    /// `v(x_p)ᵀ c = ((AᵀA)⁻¹ v(x_p))ᵀ Aᵀ y`, so the weights are `A z` where `(AᵀA) z = v(x_p)`.
    /// Positions are centred and scaled to `[-1, 1]` to keep the normal equations well
    /// conditioned.
    pub fn weights(&self, position: usize) -> Vec<f64> {
        assert!(position < self.window, "position within the window");
        let half = self.window / 2;
        let scale = half.max(1) as f64;
        let x = |i: usize| (i as f64 - half as f64) / scale;
        let n = self.order + 1;
        // Normal matrix AᵀA: sums of powers of x.
        let mut normal = vec![0.0; n * n];
        for i in 0..self.window {
            for r in 0..n {
                for c in 0..n {
                    normal[r * n + c] += x(i).powi((r + c) as i32);
                }
            }
        }
        let rhs: Vec<f64> = (0..n).map(|j| x(position).powi(j as i32)).collect();
        let z = solve_dense(normal, rhs);
        let weights: Vec<f64> = (0..self.window)
            .map(|i| (0..n).map(|j| x(i).powi(j as i32) * z[j]).sum())
            .collect();
        // A least-squares fit that includes the constant reproduces constants exactly.
        debug_assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-6);
        weights
    }

    /// The smoothed record, as long as `samples`. Edges as in the module doc.
    pub fn smooth(&self, samples: &[f64]) -> Result<Vec<f64>, SavGolError> {
        if let Some(index) = samples.iter().position(|v| !v.is_finite()) {
            return Err(SavGolError::NonFinite { index });
        }
        let len = samples.len();
        if len < self.window {
            return Err(SavGolError::TooFewSamples {
                len,
                window: self.window,
            });
        }
        let half = self.window / 2;
        let centre = self.weights(half);
        let dot = |w: &[f64], start: usize| -> f64 {
            w.iter()
                .zip(&samples[start..start + self.window])
                .map(|(w, s)| w * s)
                .sum()
        };
        let mut out = Vec::with_capacity(len);
        for i in 0..len {
            let value = if i < half {
                dot(&self.weights(i), 0)
            } else if i + half >= len {
                let start = len - self.window;
                dot(&self.weights(i - start), start)
            } else {
                dot(&centre, i - half)
            };
            out.push(value);
        }
        assert_eq!(out.len(), len);
        Ok(out)
    }
}

/// Solves the square system `m x = rhs` (row-major `m`, `n = rhs.len()`) by Gaussian
/// elimination with partial pivoting. The Savitzky-Golay normal matrix is symmetric positive
/// definite for `order < window`, so a pivot never vanishes.
fn solve_dense(mut m: Vec<f64>, mut rhs: Vec<f64>) -> Vec<f64> {
    let n = rhs.len();
    assert_eq!(m.len(), n * n, "a square system");
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&p, &q| m[p * n + col].abs().total_cmp(&m[q * n + col].abs()))
            .expect("a non-empty column");
        assert!(
            m[pivot * n + col].abs() > 0.0,
            "a non-singular normal matrix"
        );
        if pivot != col {
            for c in 0..n {
                m.swap(pivot * n + c, col * n + c);
            }
            rhs.swap(pivot, col);
        }
        for row in col + 1..n {
            let f = m[row * n + col] / m[col * n + col];
            for c in col..n {
                m[row * n + c] -= f * m[col * n + c];
            }
            rhs[row] -= f * rhs[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let tail: f64 = (row + 1..n).map(|c| m[row * n + c] * x[c]).sum();
        x[row] = (rhs[row] - tail) / m[row * n + row];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centred_weights_match_the_classic_table() {
        let w = SavGol::new(5, 2).unwrap().weights(2);
        let table = [-3.0, 12.0, 17.0, 12.0, -3.0];
        for (w, t) in w.iter().zip(table) {
            assert!((w - t / 35.0).abs() < 1e-12, "{w} vs {}", t / 35.0);
        }
        let w = SavGol::new(7, 3).unwrap().weights(3);
        let table = [-2.0, 3.0, 6.0, 7.0, 6.0, 3.0, -2.0];
        for (w, t) in w.iter().zip(table) {
            assert!((w - t / 21.0).abs() < 1e-12);
        }
        // Order 0 is the moving average.
        for w in SavGol::new(9, 0).unwrap().weights(4) {
            assert!((w - 1.0 / 9.0).abs() < 1e-12);
        }
    }

    #[test]
    fn polynomials_up_to_the_order_pass_through_edges_included() {
        let f = SavGol::new(11, 3).unwrap();
        let xs: Vec<f64> = (0..40)
            .map(|i| {
                let t = i as f64 * 0.1;
                2.0 - 3.0 * t + 0.5 * t * t - 0.25 * t * t * t
            })
            .collect();
        let smooth = f.smooth(&xs).unwrap();
        for (s, x) in smooth.iter().zip(&xs) {
            assert!((s - x).abs() < 1e-9, "{s} vs {x}");
        }
    }

    #[test]
    fn smoothing_reduces_alternating_noise() {
        let f = SavGol::new(9, 2).unwrap();
        let xs: Vec<f64> = (0..50)
            .map(|i| 10.0 + if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let smooth = f.smooth(&xs).unwrap();
        for s in &smooth[4..46] {
            assert!((s - 10.0).abs() < 0.2, "{s}");
        }
    }

    #[test]
    fn bad_parameters_and_records_are_refused() {
        assert_eq!(
            SavGol::new(4, 2),
            Err(SavGolError::WindowNotOdd { window: 4 })
        );
        assert_eq!(
            SavGol::new(5, 5),
            Err(SavGolError::OrderTooHigh {
                order: 5,
                window: 5
            })
        );
        assert!(SavGol::new(2001, 2).is_err());
        let f = SavGol::new(5, 2).unwrap();
        assert_eq!(
            f.smooth(&[1.0, 2.0]),
            Err(SavGolError::TooFewSamples { len: 2, window: 5 })
        );
        assert_eq!(
            f.smooth(&[1.0, 2.0, f64::NAN, 1.0, 1.0]),
            Err(SavGolError::NonFinite { index: 2 })
        );
        assert!(SavGolError::WindowNotOdd { window: 4 }
            .to_string()
            .contains("odd"));
        // Window 1 is the identity.
        assert_eq!(
            SavGol::new(1, 0).unwrap().smooth(&[3.0, 4.0]).unwrap(),
            vec![3.0, 4.0]
        );
    }
}
