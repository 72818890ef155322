//! Gain design by pole placement (PI paper, Section 3.5, eq. 3-4).
//!
//! Plant (eq. 1): `q(k+1) = a q(k) + b u(k)`. Controller: the velocity-form PI of
//! [`super::law`], `u(k) = u(k-1) + (Kp + Ki) e(k) - Kp e(k-1)`, `e = target - q`, whose
//! transfer function is `C(z) = ((Kp + Ki) z - Kp) / (z - 1)`. The closed loop's
//! characteristic polynomial is
//!
//! ```text
//! (z - 1)(z - a) + b ((Kp + Ki) z - Kp) = z² + (b (Kp + Ki) - 1 - a) z + (a - b Kp)
//! ```
//!
//! and matching it with `(z - r e^{jθ})(z - r e^{-jθ}) = z² - 2 r cos θ z + r²` gives eq. 3:
//! `Kp = (a - r²) / b`, `Ki = (1 - 2 r cos θ + r²) / b`. Eq. 4 maps the specification to the
//! poles: `r = exp(-4 Ts / Ks)` makes the envelope `r^k` fall to `e⁻⁴ ≈ 1.8 %` at
//! `k Ts = Ks` (a 2 % settling time, although Section 2.2 defines settling with a 5 % band),
//! and `θ = π ln r / ln Mp` makes the envelope after half a period of oscillation,
//! `r^{π/θ}`, equal to `Mp` (the overshoot of the poles alone; the PI's zero at
//! `Kp / (Kp + Ki)` adds to it unless the proportional term acts on the measurement, see
//! [`super::law::ProportionalOn`]).
//!
//! Units: `q` in requests, `u` in MiB/s of per-client limit, so `b` is in requests per MiB/s
//! and `Kp`, `Ki` in MiB/s per request. `Ki` is per sample (the velocity form sums errors
//! once per period): eq. 2's `Ki Ts Σ e` with this `Ki` would scale it by `Ts` and move the
//! poles (see the tests of [`super::law`]).

use std::fmt;

/// Closed-loop specification (eq. 4's inputs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DesignSpec {
    /// Sampling time `Ts`, seconds.
    pub ts_s: f64,
    /// Settling time `Ks`, seconds (the paper's Fig. 4: 1.4 s).
    pub ks_s: f64,
    /// Overshoot `Mp`, a fraction of the step (the paper's Fig. 4: 0.02).
    pub mp: f64,
}

/// The placed closed-loop poles `r e^{±jθ}` (eq. 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Poles {
    pub r: f64,
    pub theta_rad: f64,
}

/// PI gains in MiB/s (of per-client limit) per request (of queue error); `ki` per sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gains {
    pub kp: f64,
    pub ki: f64,
}

/// Why a specification or model cannot give gains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GainError {
    /// A parameter is NaN or infinite.
    NonFinite { what: &'static str, value: f64 },
    /// `Ts` must be positive.
    SamplingTime { ts_s: f64 },
    /// `Ks` must be positive.
    SettlingTime { ks_s: f64 },
    /// `Mp` must be in `(0, 1)` (eq. 4 takes its logarithm; 0 has no finite `θ`).
    Overshoot { mp: f64 },
    /// `r` outside `(0, 1)` (underflow for `Ks` tiny against `Ts`).
    Radius { r: f64 },
    /// `θ` outside `(0, π)`: happens when `r <= Mp` (a settling time so short against `Ts`
    /// that the envelope is below the overshoot after one sample).
    Angle { theta_rad: f64 },
    /// `b = 0`: the input does not move the queue, no gain can.
    ZeroInputGain,
}

impl fmt::Display for GainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GainError::NonFinite { what, value } => write!(f, "{what} = {value} is not finite"),
            GainError::SamplingTime { ts_s } => {
                write!(f, "sampling time Ts = {ts_s} s must be positive")
            }
            GainError::SettlingTime { ks_s } => {
                write!(f, "settling time Ks = {ks_s} s must be positive")
            }
            GainError::Overshoot { mp } => write!(f, "overshoot Mp = {mp} must be in (0, 1)"),
            GainError::Radius { r } => write!(
                f,
                "pole radius r = exp(-4 Ts / Ks) = {r} is outside (0, 1): Ks is too short for Ts"
            ),
            GainError::Angle { theta_rad } => write!(
                f,
                "pole angle θ = π ln r / ln Mp = {theta_rad} rad is outside (0, π): r <= Mp, \
                 Ks is too short for Ts and Mp"
            ),
            GainError::ZeroInputGain => {
                write!(
                    f,
                    "model input gain b = 0: the limit does not move the queue"
                )
            }
        }
    }
}

impl std::error::Error for GainError {}

fn finite(what: &'static str, value: f64) -> Result<f64, GainError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(GainError::NonFinite { what, value })
    }
}

/// Eq. 4: the poles for a settling time and overshoot at sampling time `Ts`.
pub fn design_poles(spec: DesignSpec) -> Result<Poles, GainError> {
    let ts_s = finite("Ts", spec.ts_s)?;
    let ks_s = finite("Ks", spec.ks_s)?;
    let mp = finite("Mp", spec.mp)?;
    if ts_s <= 0.0 {
        return Err(GainError::SamplingTime { ts_s });
    }
    if ks_s <= 0.0 {
        return Err(GainError::SettlingTime { ks_s });
    }
    if !(mp > 0.0 && mp < 1.0) {
        return Err(GainError::Overshoot { mp });
    }
    let r = (-4.0 * ts_s / ks_s).exp();
    if !(r > 0.0 && r < 1.0) {
        return Err(GainError::Radius { r });
    }
    let theta_rad = std::f64::consts::PI * r.ln() / mp.ln();
    if !(theta_rad > 0.0 && theta_rad < std::f64::consts::PI) {
        return Err(GainError::Angle { theta_rad });
    }
    Ok(Poles { r, theta_rad })
}

/// Eq. 3: the gains that place the closed-loop poles of `q(k+1) = a q(k) + b u(k)` under
/// the velocity-form PI at `poles`.
pub fn gains_for_poles(a: f64, b: f64, poles: Poles) -> Result<Gains, GainError> {
    let a = finite("a", a)?;
    let b = finite("b", b)?;
    if b == 0.0 {
        return Err(GainError::ZeroInputGain);
    }
    let Poles { r, theta_rad } = poles;
    assert!(r > 0.0 && r < 1.0, "poles inside the unit circle");
    let kp = (a - r * r) / b;
    let ki = (1.0 - 2.0 * r * theta_rad.cos() + r * r) / b;
    let kp = finite("Kp", kp)?;
    let ki = finite("Ki", ki)?;
    Ok(Gains { kp, ki })
}

/// Eq. 3 and 4 together.
pub fn design_gains(a: f64, b: f64, spec: DesignSpec) -> Result<(Gains, Poles), GainError> {
    let poles = design_poles(spec)?;
    Ok((gains_for_poles(a, b, poles)?, poles))
}

/// A complex number, for the roots of a characteristic polynomial.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Complex {
    pub re: f64,
    pub im: f64,
}

impl Complex {
    pub fn norm(self) -> f64 {
        self.re.hypot(self.im)
    }

    pub fn arg(self) -> f64 {
        self.im.atan2(self.re)
    }
}

/// The two roots of `z² + c1 z + c0`, the one with the larger imaginary part first.
pub fn quadratic_roots(c1: f64, c0: f64) -> [Complex; 2] {
    let disc = c1 * c1 - 4.0 * c0;
    if disc >= 0.0 {
        let s = disc.sqrt();
        [
            Complex {
                re: (-c1 + s) / 2.0,
                im: 0.0,
            },
            Complex {
                re: (-c1 - s) / 2.0,
                im: 0.0,
            },
        ]
    } else {
        let s = (-disc).sqrt();
        [
            Complex {
                re: -c1 / 2.0,
                im: s / 2.0,
            },
            Complex {
                re: -c1 / 2.0,
                im: -s / 2.0,
            },
        ]
    }
}

/// The closed-loop poles of `q(k+1) = a q(k) + b u(k)` under the velocity-form PI with
/// `gains` (the roots of the characteristic polynomial in the module doc). The proportional
/// term's placement (error or measurement) does not change them.
pub fn closed_loop_poles(a: f64, b: f64, gains: Gains) -> [Complex; 2] {
    quadratic_roots(b * (gains.kp + gains.ki) - 1.0 - a, a - b * gains.kp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gains_match_a_hand_computation() {
        // Ts = 0.3 s, Ks = 1.4 s, Mp = 0.02 (the paper's Fig. 4), a = 0.8, b = 0.5.
        // r = exp(-1.2 / 1.4) = exp(-0.857142857) = 0.424373...
        // θ = π (-0.857142857) / ln 0.02 = π · 0.857142857 / 3.912023005 = 0.688338... rad
        // Kp = (0.8 - 0.180093) / 0.5 = 1.239815...
        // Ki = (1 - 2 · 0.424373 · cos 0.688338 + 0.180093) / 0.5
        //    = (1 - 0.848746 · 0.772303 + 0.180093) / 0.5 = 1.049207...
        let spec = DesignSpec {
            ts_s: 0.3,
            ks_s: 1.4,
            mp: 0.02,
        };
        let (g, p) = design_gains(0.8, 0.5, spec).unwrap();
        assert!((p.r - 0.424_373).abs() < 1e-6, "{}", p.r);
        assert!((p.theta_rad - 0.688_338).abs() < 1e-6, "{}", p.theta_rad);
        assert!((g.kp - 1.239_815).abs() < 1e-5, "{}", g.kp);
        assert!((g.ki - 1.049_207).abs() < 1e-5, "{}", g.ki);
        // And the poles land where they were placed.
        let [p1, p2] = closed_loop_poles(0.8, 0.5, g);
        assert!((p1.norm() - p.r).abs() < 1e-12 && (p2.norm() - p.r).abs() < 1e-12);
        assert!((p1.arg() - p.theta_rad).abs() < 1e-12);
        assert!((p2.arg() + p.theta_rad).abs() < 1e-12);
    }

    #[test]
    fn bad_specifications_are_refused() {
        let ok = DesignSpec {
            ts_s: 0.3,
            ks_s: 1.4,
            mp: 0.02,
        };
        let refused = |spec: DesignSpec| design_gains(0.8, 0.5, spec).unwrap_err();
        assert_eq!(
            refused(DesignSpec { ks_s: 0.0, ..ok }),
            GainError::SettlingTime { ks_s: 0.0 }
        );
        assert_eq!(
            refused(DesignSpec { ks_s: -1.0, ..ok }),
            GainError::SettlingTime { ks_s: -1.0 }
        );
        assert_eq!(
            refused(DesignSpec { ts_s: 0.0, ..ok }),
            GainError::SamplingTime { ts_s: 0.0 }
        );
        for mp in [0.0, 1.0, 1.5, -0.1] {
            assert_eq!(
                refused(DesignSpec { mp, ..ok }),
                GainError::Overshoot { mp }
            );
        }
        assert!(matches!(
            refused(DesignSpec { mp: f64::NAN, ..ok }),
            GainError::NonFinite { what: "Mp", .. }
        ));
        // Ks = Ts: r = e⁻⁴ = 0.018 < Mp = 0.02, so θ > π.
        assert!(matches!(
            refused(DesignSpec { ks_s: 0.3, ..ok }),
            GainError::Angle { .. }
        ));
        // r underflows to 0.
        assert!(matches!(
            refused(DesignSpec { ks_s: 1e-300, ..ok }),
            GainError::Radius { .. }
        ));
        assert_eq!(
            design_gains(0.8, 0.0, ok).unwrap_err(),
            GainError::ZeroInputGain
        );
        assert!(matches!(
            design_gains(f64::INFINITY, 0.5, ok).unwrap_err(),
            GainError::NonFinite { what: "a", .. }
        ));
        assert!(GainError::ZeroInputGain.to_string().contains("b = 0"));
    }

    #[test]
    fn real_roots_are_found_too() {
        // (z - 0.5)(z - 0.25) = z² - 0.75 z + 0.125
        let [r1, r2] = quadratic_roots(-0.75, 0.125);
        assert_eq!((r1.re, r1.im, r2.re, r2.im), (0.5, 0.0, 0.25, 0.0));
    }
}
