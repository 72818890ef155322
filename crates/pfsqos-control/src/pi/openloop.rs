//! The open-loop identification experiment (PI paper, Section 4.2, Fig. 3): no feedback; every
//! client gets the same fixed limit, stepping up a staircase of levels, each held for a number
//! of sampling periods, while the sensor the controllers use measures the device queue. Its
//! trace (per period, the limit in force and the queue measured at the period's end) is what
//! [`open_loop_record`] turns into the record [`super::identify`] fits eq. 1 to, and what
//! [`static_curve`] turns into Fig. 3a's static curve. A driver runs it like any controller
//! (`pi-openloop` in the registry), so a site identifies its own system the way it will be
//! controlled (Section 5.2: "the only requirement for deploying the controller on another
//! cluster is to run the open loop experiment and system identification").

use super::sensor::{ClientActuator, QueueSensor, SensorConfig, MIB};
use super::OpenLoopSample;
use crate::model::JobId;
use crate::ControlTraceEntry;
use crate::{Controller, Decision, Observation, TraceSample};

/// Most levels a staircase may have.
pub const STAIRCASE_LEVELS_MAX: usize = 1_000;

/// The experiment's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct StaircaseConfig {
    /// Sampling time `Ts`.
    pub ts_ns: u64,
    pub sensor: SensorConfig,
    /// Per-client limits in the order applied, bytes/s, each at least 1.
    pub levels_bytes_per_s: Vec<u64>,
    /// Periods each level is held, at least 1.
    pub hold_periods: u32,
    /// Times the whole staircase runs (the paper repeats the experiment three times); after
    /// the last, the last level stays.
    pub repeats: u32,
}

impl StaircaseConfig {
    /// `levels` evenly spaced limits from `from` to `to` bytes/s, both included.
    pub fn linear_levels(from_bytes_per_s: u64, to_bytes_per_s: u64, levels: usize) -> Vec<u64> {
        assert!(levels >= 1 && from_bytes_per_s >= 1);
        if levels == 1 {
            return vec![from_bytes_per_s];
        }
        let (from, to) = (from_bytes_per_s as f64, to_bytes_per_s as f64);
        (0..levels)
            .map(|i| {
                let f = i as f64 / (levels - 1) as f64;
                (from + f * (to - from)).round().max(1.0) as u64
            })
            .collect()
    }

    pub fn check(&self) -> Result<(), String> {
        if self.ts_ns == 0 {
            return Err("the sampling time must be positive".to_string());
        }
        let n = self.levels_bytes_per_s.len();
        if n == 0 || n > STAIRCASE_LEVELS_MAX {
            return Err(format!("{n} levels; 1..={STAIRCASE_LEVELS_MAX} allowed"));
        }
        if self.levels_bytes_per_s.contains(&0) {
            return Err("every level must be a positive limit".to_string());
        }
        if self.hold_periods == 0 || self.repeats == 0 {
            return Err("hold and repeats must be at least 1".to_string());
        }
        Ok(())
    }

    /// The level in force during period `period` (0-based, from setup).
    pub fn level(&self, period: u64) -> u64 {
        let levels = self.levels_bytes_per_s.len() as u64;
        let step = period / u64::from(self.hold_periods);
        let last = levels * u64::from(self.repeats) - 1;
        self.levels_bytes_per_s[(step.min(last) % levels) as usize]
    }

    /// Periods the whole staircase takes.
    pub fn periods(&self) -> u64 {
        self.levels_bytes_per_s.len() as u64
            * u64::from(self.hold_periods)
            * u64::from(self.repeats)
    }
}

/// The `pi-openloop` controller (module doc).
#[derive(Debug)]
pub struct Staircase {
    config: StaircaseConfig,
    sensor: QueueSensor,
    actuator: ClientActuator,
    /// Periods completed since setup.
    period: u64,
    trace: Vec<TraceSample>,
}

impl Staircase {
    pub fn new(config: StaircaseConfig) -> Result<Staircase, String> {
        config.check()?;
        Ok(Staircase {
            sensor: QueueSensor::new(config.sensor),
            actuator: ClientActuator::default(),
            period: 0,
            trace: Vec::new(),
            config,
        })
    }
}

impl Controller for Staircase {
    fn name(&self) -> &'static str {
        "pi-openloop"
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        self.sensor.prime(initial);
        Decision {
            writes: Vec::new(),
            client_writes: self.actuator.writes(&initial.clients, self.config.level(0)),
        }
    }

    fn period_ns(&self) -> Option<u64> {
        Some(self.config.ts_ns)
    }

    /// Measures the period that ended, traces `queue_measured` and the `limit_bytes_per_s`
    /// that was in force during it, and sets the next period's level.
    fn decide(&mut self, observation: &Observation) -> Decision {
        let in_force = self.config.level(self.period);
        self.period += 1;
        self.trace.clear();
        if let Some(r) = self.sensor.read(observation) {
            let sample = |metric, value| TraceSample {
                ost: r.ost,
                job: JobId::EMPTY,
                metric,
                value,
            };
            self.trace.push(sample("queue_measured", r.raw_rpcs));
            self.trace
                .push(sample("limit_bytes_per_s", in_force as f64));
        }
        Decision {
            writes: Vec::new(),
            client_writes: self
                .actuator
                .writes(&observation.clients, self.config.level(self.period)),
        }
    }

    fn trace(&self) -> Vec<TraceSample> {
        self.trace.clone()
    }
}

/// One measured period of an open-loop run: the per-client limit in force during it and the
/// queue measured at its end (the `limit_bytes_per_s` and `queue_measured` the experiment
/// traces).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenLoopPeriod {
    pub limit_bytes_per_s: u64,
    pub queue_rpcs: f64,
}

/// The periods of an open-loop run from its controller trace (the driver's
/// `RunOutput::control_trace`): per step, the `limit_bytes_per_s` in force and the
/// `queue_measured`; steps without both (the first, before a previous reading) are skipped.
pub fn open_loop_periods(trace: &[ControlTraceEntry]) -> Vec<OpenLoopPeriod> {
    let mut periods = Vec::new();
    let mut i = 0;
    while i < trace.len() {
        let time_ns = trace[i].time_ns;
        let (mut limit, mut queue) = (None, None);
        while i < trace.len() && trace[i].time_ns == time_ns {
            match trace[i].sample.metric {
                "limit_bytes_per_s" => limit = Some(trace[i].sample.value as u64),
                "queue_measured" => queue = Some(trace[i].sample.value),
                _ => {}
            }
            i += 1;
        }
        if let (Some(limit_bytes_per_s), Some(queue_rpcs)) = (limit, queue) {
            periods.push(OpenLoopPeriod {
                limit_bytes_per_s,
                queue_rpcs,
            });
        }
    }
    periods
}

/// The record eq. 1 is fitted to: sample `k` pairs the queue measured at the end of period
/// `k` with the limit in force during period `k + 1`, the input that drives `q(k)` to
/// `q(k + 1)` (`q(k+1) = a q(k) + b bw(k)`). The last period has no successor and is
/// dropped.
pub fn open_loop_record(periods: &[OpenLoopPeriod]) -> Vec<OpenLoopSample> {
    periods
        .windows(2)
        .map(|w| OpenLoopSample {
            limit_mib_per_s: w[1].limit_bytes_per_s as f64 / MIB,
            queue_rpcs: w[0].queue_rpcs,
        })
        .collect()
}

/// Fig. 3a: per limit (MiB/s per client, increasing), the mean queue over the periods it was
/// in force, skipping the first `settle_periods` of each hold (the transient after a step).
pub fn static_curve(periods: &[OpenLoopPeriod], settle_periods: usize) -> Vec<(f64, f64)> {
    let mut sums: std::collections::BTreeMap<u64, (f64, usize)> = Default::default();
    let mut held = 0usize;
    for (k, p) in periods.iter().enumerate() {
        held = if k > 0 && periods[k - 1].limit_bytes_per_s == p.limit_bytes_per_s {
            held + 1
        } else {
            0
        };
        if held < settle_periods {
            continue;
        }
        let e = sums.entry(p.limit_bytes_per_s).or_insert((0.0, 0));
        e.0 += p.queue_rpcs;
        e.1 += 1;
    }
    sums.into_iter()
        .map(|(limit, (sum, n))| (limit as f64 / MIB, sum / n as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pi::sensor::tests::observation;

    fn config(levels: Vec<u64>, hold: u32, repeats: u32) -> StaircaseConfig {
        StaircaseConfig {
            ts_ns: 300_000_000,
            sensor: SensorConfig::default(),
            levels_bytes_per_s: levels,
            hold_periods: hold,
            repeats,
        }
    }

    #[test]
    fn levels_step_up_hold_and_repeat_then_stay() {
        let c = config(vec![10, 20, 30], 2, 2);
        let got: Vec<u64> = (0..14).map(|p| c.level(p)).collect();
        assert_eq!(
            got,
            [10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30, 30, 30]
        );
        assert_eq!(c.periods(), 12);
        assert_eq!(StaircaseConfig::linear_levels(1, 9, 5), vec![1, 3, 5, 7, 9]);
        assert!(config(vec![], 1, 1).check().is_err());
        assert!(config(vec![0], 1, 1).check().is_err());
        assert!(config(vec![1], 0, 1).check().is_err());
    }

    #[test]
    fn the_record_pairs_each_queue_with_the_next_periods_limit() {
        let p = |limit_bytes_per_s, queue_rpcs| OpenLoopPeriod {
            limit_bytes_per_s,
            queue_rpcs,
        };
        let mib = 1u64 << 20;
        let periods = [
            p(mib, 1.0),
            p(2 * mib, 2.0),
            p(2 * mib, 3.0),
            p(4 * mib, 5.0),
        ];
        let record = open_loop_record(&periods);
        let pairs: Vec<(f64, f64)> = record
            .iter()
            .map(|s| (s.limit_mib_per_s, s.queue_rpcs))
            .collect();
        assert_eq!(pairs, [(2.0, 1.0), (2.0, 2.0), (4.0, 3.0)]);
        // Static curve: 2 MiB/s held twice, the first skipped as transient.
        assert_eq!(static_curve(&periods, 1), vec![(2.0, 3.0)]);
        assert_eq!(
            static_curve(&periods, 0),
            vec![(1.0, 1.0), (2.0, 2.5), (4.0, 5.0)]
        );
    }

    #[test]
    fn the_controller_sets_every_client_and_traces_what_was_in_force() {
        let mut s = Staircase::new(config(vec![100, 200], 1, 1)).unwrap();
        let first = s.setup(&observation(0, &[(0, 0, 0, 0)], 2));
        assert_eq!(first.client_writes.len(), 2);
        assert!(first
            .client_writes
            .iter()
            .all(|w| w.limit_bytes_per_s == Some(100)));
        // 300 ms later, 0.6 s of time in queue: a mean queue of 2.
        let d = s.decide(&observation(300_000_000, &[(0, 600_000_000, 0, 0)], 2));
        assert!(d
            .client_writes
            .iter()
            .all(|w| w.limit_bytes_per_s == Some(200)));
        let trace = s.trace();
        let value = |m: &str| trace.iter().find(|t| t.metric == m).unwrap().value;
        assert!((value("queue_measured") - 2.0).abs() < 1e-12);
        assert_eq!(value("limit_bytes_per_s"), 100.0);
        // The last level stays: no further writes.
        let d = s.decide(&observation(600_000_000, &[(0, 900_000_000, 0, 0)], 2));
        assert!(d.client_writes.is_empty());
    }
}
