//! System identification (PI paper, Section 3.4 eq. 1 and Section 4.2): from an open-loop
//! record of the bandwidth limit `bw(k)` and the device queue `q(k)`, fit
//! `q(k+1) = a q(k) + b bw(k)` by least squares.
//!
//! As in Section 4.2, the queue is smoothed with a Savitzky-Golay filter first ("after
//! filtering the noise with a Savitzky-Golay filter over the collected measures"; the input
//! is the applied limit, exact, and is not smoothed: smoothing would blur its steps), and
//! samples where the queue is saturated or empty are excluded ("so that the obtained model
//! better captures the behavior of the queue"). Choices the paper leaves open:
//! * a pair `(k, k+1)` is used only if the raw `q(k)` and `q(k+1)` lie strictly between the
//!   empty floor and the saturation level (a clamped `q(k+1)` does not follow eq. 1);
//! * the smoothing runs over each stretch of constant input separately (`smoothed_pairs`):
//!   across an input step it would bias `a` by about 10 %;
//! * eq. 1 has no constant term, so neither has the fit by default. With
//!   [`IdentifyConfig::offset`] the fit is `q(k+1) = a q(k) + b bw(k) + c`: eq. 1 in deviation
//!   variables around an operating point, which is what a linear design assumes anyway. A
//!   queue that stays nearly empty below the device's capacity and grows past it (an
//!   integrator above a knee: the simulated server, `docs/reproductions/pi-control.md`) has
//!   no model through the origin: forced through it, the fit returns `a > 1` and `b ≈ 0`,
//!   an unstable plant with no input gain. The gain design uses only `a` and `b`.
//!
//! Units: `q` in requests, `bw` in MiB/s of per-client limit, so `b` is in requests per
//! MiB/s and `a` has none.

use std::fmt;

use super::savgol::SavGol;

/// One sample of an open-loop record, one sampling period apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenLoopSample {
    /// The limit applied to every client during the period, MiB/s.
    pub limit_mib_per_s: f64,
    /// The device queue measured at the end of the period, requests.
    pub queue_rpcs: f64,
}

/// How to identify.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdentifyConfig {
    pub smoothing: SavGol,
    /// Queue at or below this is empty: excluded.
    pub queue_empty_rpcs: f64,
    /// Queue at or above this is saturated: excluded (the device's or block layer's queue
    /// limit, `nr_requests`).
    pub queue_saturated_rpcs: f64,
    /// Fewest usable pairs for a fit (at least 2, eq. 1 has two parameters; 3 with an
    /// offset).
    pub pairs_min: usize,
    /// Also fit a constant `c` (module doc).
    pub offset: bool,
}

/// The identified model and how well it fits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    pub a: f64,
    /// Requests per MiB/s of per-client limit.
    pub b: f64,
    /// The constant of the affine fit, requests; 0 without [`IdentifyConfig::offset`].
    pub c: f64,
    /// Coefficient of determination of `q(k+1)` over the used pairs (`1 - SS_res / SS_tot`).
    pub r_squared: f64,
    /// Pairs used in the fit.
    pub pairs_used: usize,
    /// Operating range of the used pairs: the model holds around it only.
    pub limit_min_mib_per_s: f64,
    pub limit_max_mib_per_s: f64,
    pub queue_min_rpcs: f64,
    pub queue_max_rpcs: f64,
}

impl fmt::Display for Model {
    /// One line for tools and reports: the parameters, the fit and where it holds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a = {:.4}, b = {:.4} requests per MiB/s of per-client limit, c = {:.2} requests, \
             R² = {:.3}, {} pairs (limits {:.1}..{:.1} MiB/s, queues {:.1}..{:.1})",
            self.a,
            self.b,
            self.c,
            self.r_squared,
            self.pairs_used,
            self.limit_min_mib_per_s,
            self.limit_max_mib_per_s,
            self.queue_min_rpcs,
            self.queue_max_rpcs
        )
    }
}

/// Why a record gives no model.
#[derive(Clone, Debug, PartialEq)]
pub enum IdentifyError {
    /// The thresholds leave no usable range or `pairs_min < 2`.
    BadConfig { reason: &'static str },
    /// A sample is NaN or infinite.
    NonFinite { index: usize },
    /// Too few pairs with the queue neither saturated nor empty.
    TooFewUsable { usable: usize, required: usize },
    /// The used pairs cannot separate `a` from `b` (e.g. the queue proportional to the
    /// limit throughout): the normal equations are singular.
    Degenerate,
}

impl fmt::Display for IdentifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdentifyError::BadConfig { reason } => write!(f, "identification settings: {reason}"),
            IdentifyError::NonFinite { index } => {
                write!(f, "open-loop sample {index} is not finite")
            }
            IdentifyError::TooFewUsable { usable, required } => write!(
                f,
                "only {usable} sample pairs have the queue neither saturated nor empty; \
                 {required} are needed: run the open loop over lower limits"
            ),
            IdentifyError::Degenerate => write!(
                f,
                "the record cannot separate a from b: vary the limit more during the open loop"
            ),
        }
    }
}

impl std::error::Error for IdentifyError {}

/// Fits eq. 1 to `record` (module doc).
pub fn identify(
    record: &[OpenLoopSample],
    config: &IdentifyConfig,
) -> Result<Model, IdentifyError> {
    if config.pairs_min < 2 {
        return Err(IdentifyError::BadConfig {
            reason: "pairs_min must be at least 2",
        });
    }
    if !(config.queue_empty_rpcs.is_finite()
        && config.queue_saturated_rpcs.is_finite()
        && config.queue_empty_rpcs < config.queue_saturated_rpcs)
    {
        return Err(IdentifyError::BadConfig {
            reason: "the empty floor must be below the saturation level",
        });
    }
    if let Some(index) = record
        .iter()
        .position(|s| !s.limit_mib_per_s.is_finite() || !s.queue_rpcs.is_finite())
    {
        return Err(IdentifyError::NonFinite { index });
    }
    let pairs = smoothed_pairs(record, config);
    if pairs.len() < config.pairs_min {
        return Err(IdentifyError::TooFewUsable {
            usable: pairs.len(),
            required: config.pairs_min,
        });
    }
    if config.offset && pairs.len() < 3 {
        return Err(IdentifyError::TooFewUsable {
            usable: pairs.len(),
            required: 3,
        });
    }
    // Normal equations of y = a x1 + b x2 (+ c), x1 = q(k), x2 = bw(k), y = q(k+1). With
    // the offset, least squares on the centred variables gives the same a and b, and
    // c = mean(y) - a mean(x1) - b mean(x2).
    let n = pairs.len() as f64;
    let (m1, m2, my) = if config.offset {
        (
            pairs.iter().map(|p| p.queue_rpcs).sum::<f64>() / n,
            pairs.iter().map(|p| p.limit_mib_per_s).sum::<f64>() / n,
            pairs.iter().map(|p| p.next_queue_rpcs).sum::<f64>() / n,
        )
    } else {
        (0.0, 0.0, 0.0)
    };
    let (mut s11, mut s12, mut s22, mut t1, mut t2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in &pairs {
        let (x1, x2, y) = (
            p.queue_rpcs - m1,
            p.limit_mib_per_s - m2,
            p.next_queue_rpcs - my,
        );
        s11 += x1 * x1;
        s12 += x1 * x2;
        s22 += x2 * x2;
        t1 += x1 * y;
        t2 += x2 * y;
    }
    let det = s11 * s22 - s12 * s12;
    // Relative test: the Gram determinant vanishes (to rounding) when x1 ∝ x2.
    // (Also true for NaN, from sums that overflowed.)
    if det.abs().partial_cmp(&(1e-10 * s11 * s22)) != Some(std::cmp::Ordering::Greater) {
        return Err(IdentifyError::Degenerate);
    }
    let a = (t1 * s22 - t2 * s12) / det;
    let b = (s11 * t2 - s12 * t1) / det;
    let c = my - a * m1 - b * m2;
    if !(a.is_finite() && b.is_finite() && c.is_finite()) {
        return Err(IdentifyError::Degenerate);
    }
    let y_mean = pairs.iter().map(|p| p.next_queue_rpcs).sum::<f64>() / n;
    let (mut ss_res, mut ss_tot) = (0.0, 0.0);
    for p in &pairs {
        let y = p.next_queue_rpcs;
        let fit = a * p.queue_rpcs + b * p.limit_mib_per_s + c;
        ss_res += (y - fit) * (y - fit);
        ss_tot += (y - y_mean) * (y - y_mean);
    }
    let r_squared = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        0.0
    };
    let min = |f: fn(&Pair) -> f64| pairs.iter().map(f).fold(f64::INFINITY, f64::min);
    let max = |f: fn(&Pair) -> f64| pairs.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
    let model = Model {
        a,
        b,
        c,
        r_squared,
        pairs_used: pairs.len(),
        limit_min_mib_per_s: min(|p| p.limit_mib_per_s),
        limit_max_mib_per_s: max(|p| p.limit_mib_per_s),
        queue_min_rpcs: min(|p| p.queue_rpcs.min(p.next_queue_rpcs)),
        queue_max_rpcs: max(|p| p.queue_rpcs.max(p.next_queue_rpcs)),
    };
    // Smoothed values of in-range samples can leave the range by a hair; the raw ones cannot.
    assert!(model.pairs_used >= 2);
    Ok(model)
}

/// One usable step of the record: `q(k)`, `bw(k)` and `q(k+1)`, the queues smoothed.
#[derive(Clone, Copy, Debug)]
struct Pair {
    queue_rpcs: f64,
    limit_mib_per_s: f64,
    next_queue_rpcs: f64,
}

/// The usable pairs (module doc): the record is cut into runs of consecutive samples with
/// the queue strictly between the empty floor and the saturation level and one input
/// (`bw(j0..j1)` constant drives `q(j0+1..=j1)`, so `q(j0..=j1)` is one trajectory of eq. 1);
/// each run of at least a window is smoothed on its own, shorter runs are left out. Smoothing
/// across a step of the input would blend two trajectories at the kink the step makes in the
/// queue and bias the fit (by about 10 % on `a` in the tests); smoothing across the clamp at
/// saturation would do the same. Runs that meet at an input step share that sample.
fn smoothed_pairs(record: &[OpenLoopSample], config: &IdentifyConfig) -> Vec<Pair> {
    let n = record.len();
    let usable = |j: usize| {
        record[j].queue_rpcs > config.queue_empty_rpcs
            && record[j].queue_rpcs < config.queue_saturated_rpcs
    };
    let mut pairs = Vec::new();
    let mut j0 = 0;
    while j0 < n {
        if !usable(j0) {
            j0 += 1;
            continue;
        }
        let mut j1 = j0;
        while j1 + 1 < n
            && usable(j1 + 1)
            && record[j1].limit_mib_per_s == record[j0].limit_mib_per_s
        {
            j1 += 1;
        }
        let run: Vec<f64> = record[j0..=j1].iter().map(|s| s.queue_rpcs).collect();
        // Runs shorter than a window cannot be smoothed: left out.
        if let Ok(q) = config.smoothing.smooth(&run) {
            for i in 0..q.len() - 1 {
                pairs.push(Pair {
                    queue_rpcs: q[i],
                    limit_mib_per_s: record[j0 + i].limit_mib_per_s,
                    next_queue_rpcs: q[i + 1],
                });
            }
        }
        // A run that ended at an input step shares its last sample with the next run.
        let next = if j1 + 1 < n && usable(j1 + 1) {
            j1
        } else {
            j1 + 1
        };
        assert!(next > j0, "runs advance");
        j0 = next;
    }
    pairs
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const SATURATED_RPCS: f64 = 128.0;

    /// An open loop of the known model `q(k+1) = a q(k) + b bw(k) + w(k)`, the queue clamped
    /// to `[0, 128]`, the limit a staircase over `levels` held `hold` periods each; `w` is
    /// uniform in `±noise` requests (process noise: the device's own randomness).
    pub(crate) fn open_loop(
        a: f64,
        b: f64,
        levels: &[f64],
        hold: usize,
        noise: f64,
        seed: u64,
    ) -> Vec<OpenLoopSample> {
        open_loop_measured(a, b, levels, hold, noise, 0.0, seed)
    }

    /// [`open_loop`] whose queue readings also carry uniform `±measurement_noise` (the
    /// sensor's noise, which does not enter the dynamics).
    fn open_loop_measured(
        a: f64,
        b: f64,
        levels: &[f64],
        hold: usize,
        noise: f64,
        measurement_noise: f64,
        seed: u64,
    ) -> Vec<OpenLoopSample> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut q: f64 = 0.0;
        let mut out = Vec::new();
        for &bw in levels {
            for _ in 0..hold {
                let v = if measurement_noise > 0.0 {
                    measurement_noise * (2.0 * rng.random::<f64>() - 1.0)
                } else {
                    0.0
                };
                out.push(OpenLoopSample {
                    limit_mib_per_s: bw,
                    queue_rpcs: (q + v).clamp(0.0, SATURATED_RPCS),
                });
                let w = noise * (2.0 * rng.random::<f64>() - 1.0);
                q = (a * q + b * bw + w).clamp(0.0, SATURATED_RPCS);
            }
        }
        out
    }

    pub(crate) fn config() -> IdentifyConfig {
        IdentifyConfig {
            smoothing: SavGol::new(7, 3).unwrap(),
            queue_empty_rpcs: 1.0,
            queue_saturated_rpcs: SATURATED_RPCS,
            pairs_min: 20,
            offset: false,
        }
    }

    /// An integrator above a knee (the simulated server: empty below capacity, filling at
    /// the excess above it) has no model through the origin; the affine fit recovers its
    /// slope, `a = 1` and `b` = clients × Ts per MiB, and the operating point in `c`.
    #[test]
    fn the_offset_fit_recovers_an_integrating_queue() {
        // 16 clients, Ts = 0.3 s, 1 MiB requests, device capacity 429 MiB/s:
        // q(k+1) = q(k) + 16 × 0.3 × (bw(k) - 429 / 16), clamped to 0..=128.
        let (gain, knee) = (16.0 * 0.3, 429.0 / 16.0);
        let mut record = Vec::new();
        let mut q: f64 = 0.0;
        for &bw in &[26.0, 27.5, 26.5, 28.0, 25.5, 27.0, 29.0, 25.0, 27.8, 26.2] {
            for _ in 0..15 {
                record.push(OpenLoopSample {
                    limit_mib_per_s: bw,
                    queue_rpcs: q,
                });
                q = (q + gain * (bw - knee)).clamp(0.0, 128.0);
            }
        }
        let through_origin = identify(&record, &config()).unwrap();
        assert!(through_origin.a > 1.0 || through_origin.b.abs() < 0.1 * gain);
        let m = identify(
            &record,
            &IdentifyConfig {
                offset: true,
                ..config()
            },
        )
        .unwrap();
        assert!((m.a - 1.0).abs() < 0.02, "a = {}", m.a);
        assert!(((m.b - gain) / gain).abs() < 0.02, "b = {}", m.b);
        assert!(
            ((m.c + gain * knee) / (gain * knee)).abs() < 0.02,
            "c = {}",
            m.c
        );
        assert!(m.r_squared > 0.99);
    }

    #[test]
    fn recovers_a_known_model_within_two_percent() {
        let (a, b) = (0.8, 0.5);
        // Limits from 5 to 60 MiB/s per client: steady queue 12.5 .. 150 (saturated above
        // 51 MiB/s), and a drop to 0 (empty).
        let levels = [
            5.0, 20.0, 10.0, 40.0, 0.0, 30.0, 60.0, 15.0, 45.0, 25.0, 0.0, 35.0,
        ];
        for seed in 0..5 {
            let record = open_loop(a, b, &levels, 30, 1.0, seed);
            let m = identify(&record, &config()).unwrap();
            assert!(((m.a - a) / a).abs() < 0.02, "seed {seed}: a = {}", m.a);
            assert!(((m.b - b) / b).abs() < 0.02, "seed {seed}: b = {}", m.b);
            assert!(m.r_squared > 0.95, "{}", m.r_squared);
            // The saturated and empty stretches were left out.
            assert!(m.pairs_used < record.len() - 30, "{}", m.pairs_used);
            // (Smoothed values: near the thresholds they may pass them by the noise.)
            assert!(
                m.queue_max_rpcs < SATURATED_RPCS + 2.0,
                "{}",
                m.queue_max_rpcs
            );
            assert!(m.queue_min_rpcs > 0.0, "{}", m.queue_min_rpcs);
            assert!(m.limit_min_mib_per_s >= 0.0 && m.limit_max_mib_per_s <= 60.0);
        }
    }

    #[test]
    fn saturated_records_are_refused() {
        // Every level saturates the queue after a few periods: a handful of usable pairs.
        let record = open_loop(0.8, 0.5, &[100.0, 200.0, 150.0], 30, 1.0, 1);
        match identify(&record, &config()) {
            Err(IdentifyError::TooFewUsable { usable, required }) => {
                assert!(usable < required, "{usable}");
                assert_eq!(required, 20);
            }
            other => panic!("{other:?}"),
        }
        let e = identify(&record, &config()).unwrap_err().to_string();
        assert!(e.contains("neither saturated nor empty"), "{e}");
    }

    #[test]
    fn degenerate_and_bad_records_are_refused() {
        // A constant limit from the steady state: q(k) ∝ bw(k) throughout.
        let steady: Vec<OpenLoopSample> = (0..50)
            .map(|_| OpenLoopSample {
                limit_mib_per_s: 20.0,
                queue_rpcs: 50.0,
            })
            .collect();
        assert_eq!(identify(&steady, &config()), Err(IdentifyError::Degenerate));
        let mut bad = steady.clone();
        bad[3].queue_rpcs = f64::NAN;
        assert_eq!(
            identify(&bad, &config()),
            Err(IdentifyError::NonFinite { index: 3 })
        );
        // Shorter than a smoothing window: nothing usable.
        assert_eq!(
            identify(&steady[..3], &config()),
            Err(IdentifyError::TooFewUsable {
                usable: 0,
                required: 20
            })
        );
        let upside_down = IdentifyConfig {
            queue_empty_rpcs: 200.0,
            ..config()
        };
        assert!(matches!(
            identify(&steady, &upside_down),
            Err(IdentifyError::BadConfig { .. })
        ));
    }

    #[test]
    fn smoothing_removes_most_of_the_measurement_noise_bias() {
        // Sensor noise on q(k) biases least squares (errors in variables); the
        // Savitzky-Golay filter of Section 4.2 takes most of it out.
        let levels = [
            5.0, 20.0, 10.0, 40.0, 0.0, 30.0, 60.0, 15.0, 45.0, 25.0, 0.0, 35.0,
        ];
        let worst = |smoothing: SavGol| {
            (0..5)
                .map(|seed| {
                    let record = open_loop_measured(0.8, 0.5, &levels, 30, 0.5, 2.0, seed);
                    let m = identify(
                        &record,
                        &IdentifyConfig {
                            smoothing,
                            ..config()
                        },
                    )
                    .unwrap();
                    ((m.a - 0.8) / 0.8).abs().max(((m.b - 0.5) / 0.5).abs())
                })
                .fold(0.0, f64::max)
        };
        let raw = worst(SavGol::new(1, 0).unwrap());
        let smoothed = worst(SavGol::new(7, 3).unwrap());
        assert!(smoothed < 0.02, "{smoothed}");
        assert!(raw > 2.0 * smoothed, "raw {raw} vs smoothed {smoothed}");
    }
}
