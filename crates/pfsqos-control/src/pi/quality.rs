//! Control-quality metrics of a response to a step of the target (PI paper, Section 2.2 and
//! Fig. 2): steady-state error, settling time, overshoot. Pure functions over
//! `(time_s, value)` samples of one step segment: from the step to the next target change.
//!
//! Definitions (choices where the paper is informal):
//! * steady-state error: mean of the segment's last `tail_fraction` of samples minus the
//!   target, relative to the target (signed; the paper's Fig. 4 shows the segment means);
//! * settling time: from the step to the first sample after which every sample stays within
//!   `band` (a fraction, the paper's 5 %) of the target ("the time required for the output to
//!   remain within 5% of its final value", with the target as final value); `None` if the last
//!   sample is outside the band;
//! * overshoot: how far the response goes past the target, in the step's direction, as a
//!   fraction of the step `|target - initial|` (0 if it never passes it).

use std::fmt;

/// Why metrics cannot be computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QualityError {
    NoSamples,
    /// Times must be finite and non-decreasing, values finite.
    BadSamples {
        index: usize,
    },
    /// Relative metrics need a non-zero target (steady-state error, band) or step (overshoot).
    ZeroScale,
    /// A fraction outside `(0, 1]`.
    BadFraction {
        value: f64,
    },
}

impl fmt::Display for QualityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QualityError::NoSamples => write!(f, "no samples after the step"),
            QualityError::BadSamples { index } => {
                write!(f, "sample {index} is not finite or goes back in time")
            }
            QualityError::ZeroScale => write!(f, "target or step is 0: no relative metric"),
            QualityError::BadFraction { value } => {
                write!(f, "fraction {value} is outside (0, 1]")
            }
        }
    }
}

impl std::error::Error for QualityError {}

fn check(samples: &[(f64, f64)]) -> Result<(), QualityError> {
    if samples.is_empty() {
        return Err(QualityError::NoSamples);
    }
    let mut previous = f64::NEG_INFINITY;
    for (index, &(t, v)) in samples.iter().enumerate() {
        if !t.is_finite() || !v.is_finite() || t < previous {
            return Err(QualityError::BadSamples { index });
        }
        previous = t;
    }
    Ok(())
}

fn fraction(value: f64) -> Result<f64, QualityError> {
    if value > 0.0 && value <= 1.0 {
        Ok(value)
    } else {
        Err(QualityError::BadFraction { value })
    }
}

/// Mean of the last `tail_fraction` of the samples (at least one) minus `target`, over
/// `|target|`.
pub fn steady_state_error(
    samples: &[(f64, f64)],
    target: f64,
    tail_fraction: f64,
) -> Result<f64, QualityError> {
    check(samples)?;
    let tail_fraction = fraction(tail_fraction)?;
    if target == 0.0 || !target.is_finite() {
        return Err(QualityError::ZeroScale);
    }
    // Less a hair, so 10 samples × 0.3 (3.0000000000000004 in f64) is 3 samples, not 4.
    let tail =
        ((samples.len() as f64 * tail_fraction - 1e-9).ceil() as usize).clamp(1, samples.len());
    let tail_samples = &samples[samples.len() - tail..];
    let mean = tail_samples.iter().map(|&(_, v)| v).sum::<f64>() / tail as f64;
    Ok((mean - target) / target.abs())
}

/// Time from `step_time_s` to the first sample after which all samples stay within
/// `band · |target|` of `target`; `None` if the last sample is outside.
pub fn settling_time_s(
    samples: &[(f64, f64)],
    step_time_s: f64,
    target: f64,
    band: f64,
) -> Result<Option<f64>, QualityError> {
    check(samples)?;
    let band = fraction(band)?;
    if target == 0.0 || !target.is_finite() {
        return Err(QualityError::ZeroScale);
    }
    let inside = |v: f64| (v - target).abs() <= band * target.abs();
    // The first sample of the final run of in-band samples.
    let settled_from = samples
        .iter()
        .rposition(|&(_, v)| !inside(v))
        .map_or(0, |i| i + 1);
    Ok(samples
        .get(settled_from)
        .map(|&(t, _)| (t - step_time_s).max(0.0)))
}

/// Largest excursion past `target` in the direction of the step from `initial`, over
/// `|target - initial|`; 0 if the response never passes the target.
pub fn overshoot(samples: &[(f64, f64)], initial: f64, target: f64) -> Result<f64, QualityError> {
    check(samples)?;
    let step = target - initial;
    if step == 0.0 || !step.is_finite() {
        return Err(QualityError::ZeroScale);
    }
    let direction = step.signum();
    let peak = samples
        .iter()
        .map(|&(_, v)| (v - target) * direction)
        .fold(0.0, f64::max);
    Ok(peak / step.abs())
}

/// The three metrics of one step segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepQuality {
    pub steady_state_error: f64,
    pub settling_time_s: Option<f64>,
    pub overshoot: f64,
}

/// All three metrics: `band` for the settling time (the paper's 0.05), `tail_fraction` of
/// the segment for the steady-state error.
pub fn step_quality(
    samples: &[(f64, f64)],
    step_time_s: f64,
    initial: f64,
    target: f64,
    band: f64,
    tail_fraction: f64,
) -> Result<StepQuality, QualityError> {
    Ok(StepQuality {
        steady_state_error: steady_state_error(samples, target, tail_fraction)?,
        settling_time_s: settling_time_s(samples, step_time_s, target, band)?,
        overshoot: overshoot(samples, initial, target)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(values: &[f64]) -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(k, &v)| (10.0 + k as f64 * 0.5, v))
            .collect()
    }

    #[test]
    fn metrics_of_a_known_response() {
        // A step from 20 to 80 at t = 10 s, sampled every 0.5 s.
        let s = timed(&[20.0, 60.0, 90.0, 84.0, 79.0, 81.0, 80.0, 78.0, 82.0, 80.0]);
        // Overshoot: peak 90 is 10 past the target, the step is 60.
        assert!((overshoot(&s, 20.0, 80.0).unwrap() - 10.0 / 60.0).abs() < 1e-12);
        // 5 % band is ±4: 84 (index 3) is out... 84 - 80 = 4 is inside; 90 (index 2) is the
        // last one outside, so it settles at index 3, t = 11.5 s, 1.5 s after the step.
        assert_eq!(settling_time_s(&s, 10.0, 80.0, 0.05).unwrap(), Some(1.5));
        // 2 % band (±1.6): 78 (index 7) and 82 (index 8) are out; settled from index 9.
        assert_eq!(settling_time_s(&s, 10.0, 80.0, 0.02).unwrap(), Some(4.5));
        // Last 30 %: 3 samples, 78, 82, 80: mean 80.
        assert!(steady_state_error(&s, 80.0, 0.3).unwrap().abs() < 1e-12);
        // Last 20 %: 82, 80: mean 81, +1.25 %.
        assert!((steady_state_error(&s, 80.0, 0.2).unwrap() - 0.0125).abs() < 1e-12);
        let q = step_quality(&s, 10.0, 20.0, 80.0, 0.05, 0.3).unwrap();
        assert_eq!(q.settling_time_s, Some(1.5));
    }

    #[test]
    fn downward_steps_and_unsettled_responses() {
        // From 80 down to 40: undershooting to 36 is a 10 % overshoot of the 40 step.
        let s = timed(&[80.0, 50.0, 36.0, 41.0, 40.0]);
        assert!((overshoot(&s, 80.0, 40.0).unwrap() - 0.1).abs() < 1e-12);
        // Never past the target: no overshoot.
        assert_eq!(overshoot(&timed(&[80.0, 60.0, 45.0]), 80.0, 40.0), Ok(0.0));
        // Ends outside the band: not settled.
        assert_eq!(
            settling_time_s(&timed(&[40.0, 40.0, 50.0]), 10.0, 40.0, 0.05),
            Ok(None)
        );
        // Inside from the first sample: settled at once.
        assert_eq!(
            settling_time_s(&timed(&[40.0, 40.5]), 10.0, 40.0, 0.05),
            Ok(Some(0.0))
        );
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert_eq!(overshoot(&[], 0.0, 1.0), Err(QualityError::NoSamples));
        assert_eq!(
            overshoot(&[(1.0, 1.0), (0.5, 1.0)], 0.0, 1.0),
            Err(QualityError::BadSamples { index: 1 })
        );
        assert_eq!(
            overshoot(&[(1.0, f64::NAN)], 0.0, 1.0),
            Err(QualityError::BadSamples { index: 0 })
        );
        assert_eq!(
            overshoot(&[(1.0, 1.0)], 1.0, 1.0),
            Err(QualityError::ZeroScale)
        );
        assert_eq!(
            steady_state_error(&[(1.0, 1.0)], 0.0, 0.5),
            Err(QualityError::ZeroScale)
        );
        assert_eq!(
            settling_time_s(&[(1.0, 1.0)], 0.0, 1.0, 0.0),
            Err(QualityError::BadFraction { value: 0.0 })
        );
        assert!(QualityError::NoSamples.to_string().contains("no samples"));
    }
}
