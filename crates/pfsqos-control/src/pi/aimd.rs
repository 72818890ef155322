//! AIMD baseline (`aimd`): the non-PI feedback of Linux's `io.latency` (block/blk-iolatency.c,
//! anchors B) on the PI controller's sensor and actuator. Each period: if the measured queue is
//! above the target, the limit is multiplied by `decrease` (default 1/2, io.latency halves its
//! queue depth); otherwise it grows by `increase`, clamped to `[bw_min, bw_max]`.
//!
//! The default increase is 1/16 of the current limit, io.latency's `qd >> 4` scale-up (so by
//! default the law is strictly multiplicative both ways, 17/16 up and 1/2 down, as io.latency
//! is); a fixed step in bytes/s (`increase=4M`) makes it additive-increase proper.

use super::sensor::SensorConfig;

/// How the limit grows when the queue is at or below the target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Increase {
    /// By this fraction of the current limit (io.latency: 1/16).
    Fraction(f64),
    /// By this many bytes/s.
    StepBytesPerS(u64),
}

impl Default for Increase {
    fn default() -> Self {
        Increase::Fraction(1.0 / 16.0)
    }
}

/// The AIMD rule on a limit in bytes/s.
#[derive(Clone, Debug, PartialEq)]
pub struct AimdLaw {
    decrease: f64,
    increase: Increase,
    min_bytes_per_s: f64,
    max_bytes_per_s: f64,
    limit_bytes_per_s: f64,
}

impl AimdLaw {
    /// Starts at `init_bytes_per_s` (clamped).
    pub fn new(
        decrease: f64,
        increase: Increase,
        min_bytes_per_s: u64,
        max_bytes_per_s: u64,
        init_bytes_per_s: u64,
    ) -> AimdLaw {
        assert!(
            decrease > 0.0 && decrease < 1.0,
            "decrease {decrease} in (0, 1)"
        );
        match increase {
            Increase::Fraction(f) => assert!(f > 0.0 && f.is_finite(), "increase {f} > 0"),
            Increase::StepBytesPerS(s) => assert!(s > 0, "a positive increase step"),
        }
        assert!(min_bytes_per_s >= 1, "a limit of at least 1 byte/s");
        assert!(min_bytes_per_s <= max_bytes_per_s);
        AimdLaw {
            decrease,
            increase,
            min_bytes_per_s: min_bytes_per_s as f64,
            max_bytes_per_s: max_bytes_per_s as f64,
            limit_bytes_per_s: (init_bytes_per_s as f64)
                .clamp(min_bytes_per_s as f64, max_bytes_per_s as f64),
        }
    }

    pub fn limit_bytes_per_s(&self) -> u64 {
        self.limit_bytes_per_s.round() as u64
    }

    /// One period: the new limit for queue `q` against `target`.
    pub fn step(&mut self, target: f64, q: f64) -> u64 {
        assert!(target.is_finite() && q.is_finite());
        let next = if q > target {
            self.limit_bytes_per_s * self.decrease
        } else {
            self.limit_bytes_per_s
                + match self.increase {
                    Increase::Fraction(f) => self.limit_bytes_per_s * f,
                    Increase::StepBytesPerS(s) => s as f64,
                }
        };
        self.limit_bytes_per_s = next.clamp(self.min_bytes_per_s, self.max_bytes_per_s);
        assert!(
            self.limit_bytes_per_s >= self.min_bytes_per_s
                && self.limit_bytes_per_s <= self.max_bytes_per_s
        );
        self.limit_bytes_per_s()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct AimdConfig {
    pub ts_ns: u64,
    pub sensor: SensorConfig,
    pub target: super::TargetSchedule,
    pub decrease: f64,
    pub increase: Increase,
    pub bw_min_bytes_per_s: u64,
    /// Also the initial limit.
    pub bw_max_bytes_per_s: u64,
}

impl super::LimitLaw for AimdLaw {
    fn name(&self) -> &'static str {
        "aimd"
    }

    fn limit_bytes_per_s(&self) -> u64 {
        AimdLaw::limit_bytes_per_s(self)
    }

    fn step(&mut self, target: f64, q: f64) -> u64 {
        AimdLaw::step(self, target, q)
    }
}

/// The `aimd` controller: the sensor, actuator and loop of [`super::Pi`] with [`AimdLaw`].
/// Without clients to limit it measures but decides nothing (as [`super::Pi`]).
pub type Aimd = super::QueueLoop<AimdLaw>;

impl super::QueueLoop<AimdLaw> {
    pub fn new(config: AimdConfig) -> Aimd {
        let law = AimdLaw::new(
            config.decrease,
            config.increase,
            config.bw_min_bytes_per_s,
            config.bw_max_bytes_per_s,
            config.bw_max_bytes_per_s,
        );
        super::QueueLoop::with_law(config.ts_ns, config.sensor, config.target, law)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sensor::tests::observation;
    use super::super::sensor::QueueSource;
    use super::*;
    use crate::{ClientId, ClientWrite, Controller, Decision};

    #[test]
    fn halves_above_the_target_and_adds_a_sixteenth_below() {
        let mut law = AimdLaw::new(0.5, Increase::default(), 1 << 20, 1 << 30, 64 << 20);
        assert_eq!(law.step(80.0, 100.0), 32 << 20);
        assert_eq!(law.step(80.0, 80.0), 34 << 20);
        assert_eq!(law.step(80.0, 10.0), (34 << 20) + ((34 << 20) >> 4));
        // Down to the floor, never below.
        for _ in 0..40 {
            law.step(80.0, 200.0);
        }
        assert_eq!(law.limit_bytes_per_s(), 1 << 20);
        // A fixed step, up to the ceiling.
        let mut law = AimdLaw::new(0.25, Increase::StepBytesPerS(1000), 100, 2500, 100);
        assert_eq!(law.step(1.0, 0.0), 1100);
        assert_eq!(law.step(1.0, 0.0), 2100);
        assert_eq!(law.step(1.0, 0.0), 2500);
        assert_eq!(law.step(1.0, 2.0), 625);
    }

    fn config() -> AimdConfig {
        AimdConfig {
            ts_ns: 300_000_000,
            sensor: SensorConfig {
                source: QueueSource::Instant,
                ..SensorConfig::default()
            },
            target: super::super::TargetSchedule::constant(80.0),
            decrease: 0.5,
            increase: Increase::default(),
            bw_min_bytes_per_s: 1 << 20,
            bw_max_bytes_per_s: 1 << 30,
        }
    }

    #[test]
    fn the_controller_limits_every_client_alike() {
        let mut c = Aimd::new(config());
        let setup = c.setup(&observation(0, &[(0, 0, 0, 0)], 2));
        assert_eq!(setup.client_writes.len(), 2);
        assert_eq!(setup.client_writes[0].limit_bytes_per_s, Some(1 << 30));
        let d = c.decide(&observation(300_000_000, &[(0, 0, 120, 0)], 2));
        assert_eq!(
            d.client_writes,
            vec![
                ClientWrite {
                    client: ClientId(0),
                    limit_bytes_per_s: Some(1 << 29)
                },
                ClientWrite {
                    client: ClientId(1),
                    limit_bytes_per_s: Some(1 << 29)
                }
            ]
        );
        let metrics: Vec<&str> = c.trace().iter().map(|s| s.metric).collect();
        assert_eq!(
            metrics,
            vec![
                "queue_measured",
                "queue_filtered",
                "queue_target",
                "limit_bytes_per_s"
            ]
        );
        // No clients: nothing to decide.
        let d = c.decide(&observation(600_000_000, &[(0, 0, 120, 0)], 0));
        assert_eq!(d, Decision::default());
    }
}
