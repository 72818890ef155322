//! PI control of the storage device's queue by client bandwidth limits (Collignon, Cerf, Robu
//! et al., "Mitigating Shared Storage Congestion Using Control Theory", UCC 2025),
//! and an AIMD baseline on the same sensor and actuator.
//!
//! The pieces, in the paper's order:
//! * [`savgol`]: Savitzky-Golay smoothing of the open-loop record (Section 4.2);
//! * [`mod@identify`]: least-squares fit of the first-order model `q(k+1) = a q(k) + b bw(k)`
//!   (eq. 1) on the unsaturated, non-empty part of the record;
//! * [`gains`]: pole placement, `r = exp(-4 Ts/Ks)`, `θ = π ln r / ln Mp` (eq. 4),
//!   `Kp = (a - r²)/b`, `Ki = (1 - 2 r cos θ + r²)/b` (eq. 3);
//! * [`law`]: the velocity-form PI whose poles are eq. 3's (not eq. 2 as printed, see there),
//!   with actuator limits, anti-windup and the moving-average filter of Section 5.1;
//! * [`quality`]: steady-state error, settling time and overshoot of a target step (Section
//!   2.2);
//! * [`sensor`]: the queue from `time_in_queue` (Section 4.1, 5.1) and the one-limit-for-all
//!   actuator (Section 3.3);
//! * [`Pi`] (`pi`) and [`aimd::Aimd`] (`aimd`): the controllers;
//! * [`record`]: the CSV record of a live loop's periods (limit, queue), which `pfsqos pi
//!   identify --record` fits.
//!
//! Units: queues in requests; the control law's input `bw`/`u` in MiB/s of *per-client*
//! limit (every client gets the same one), so the model's `b` is in requests per MiB/s and
//! the gains in MiB/s per request. Limits on the wire ([`ClientWrite`]) are bytes/s.
//!
//! A controller whose observation lists no clients (a driver that cannot limit clients, a
//! server-side agent) measures and traces the queue but runs no control step and writes
//! nothing: stepping the law without an actuator would move its state away from what the
//! clients have, and there is nothing to write to.

pub mod aimd;
pub mod gains;
pub mod identify;
pub mod law;
pub mod openloop;
pub mod options;
pub mod quality;
pub mod record;
pub mod savgol;
pub mod sensor;

pub use aimd::{Aimd, AimdConfig, AimdLaw, Increase};
pub use gains::{design_gains, DesignSpec, GainError, Gains, Poles};
pub use identify::{identify, IdentifyConfig, IdentifyError, Model, OpenLoopSample};
pub use law::{MovingAverage, PiLaw, ProportionalOn};
pub use openloop::{
    open_loop_periods, open_loop_record, static_curve, OpenLoopPeriod, Staircase, StaircaseConfig,
};
pub use sensor::{QueueReading, QueueSensor, QueueSource, SensorConfig, TargetChoice};

use sensor::{limit_bytes_per_s, ClientActuator, MIB};

use super::{ClientWrite, Controller, Decision, Observation, TraceSample};
use crate::model::JobId;

/// The paper's sampling time (Section 3.5: "Setting the sampling time to Ts = 300ms has
/// experimentally shown a good trade-off").
pub const PI_TS_MS_DEFAULT: u64 = 300;

/// The paper's best target (Section 4.5: 20 % shorter runs with a target of 80 requests).
pub const PI_TARGET_RPCS_DEFAULT: f64 = 80.0;

/// The paper's specification for Fig. 4 (Section 4.4: `Mp = 0.02`, `Ks = 1.4 s`).
pub const PI_KS_MS_DEFAULT: u64 = 1400;
pub const PI_MP_DEFAULT: f64 = 0.02;

/// Default model `a`. **Not the paper's**: it publishes no identified values (Section 4.2
/// shows Fig. 3 only). `a = 0.8` is a queue that forgets 20 % of itself per 300 ms period
/// (time constant about 1.3 s); identify the real one with [`identify::identify`] and pass
/// `a=`/`b=`.
pub const PI_MODEL_A_DEFAULT: f64 = 0.8;

/// Default model `b`, requests per MiB/s of per-client limit. **Not the paper's** (see
/// [`PI_MODEL_A_DEFAULT`]): with `a = 0.8` the steady queue is `b bw / (1 - a) = 2.5 bw`, so
/// the paper's target of 80 holds at 32 MiB/s per client, 512 MiB/s for its 16 clients: the
/// order of the write bandwidth of its testbed's SATA SSD (Table 1).
pub const PI_MODEL_B_DEFAULT: f64 = 0.5;

/// Default lowest limit: 1 MiB/s per client (a limit of 0 would stop a client for good; `tc`
/// needs a positive rate).
pub const BW_MIN_BYTES_PER_S_DEFAULT: u64 = 1 << 20;

/// Default highest limit and initial limit: 10 Gbit/s, the paper's client links (Table 1),
/// so the controller starts unthrottled as the baseline runs.
pub const BW_MAX_BYTES_PER_S_DEFAULT: u64 = 1_250_000_000;

/// Target queue over time: `(from_ns, target_rpcs)` steps, from the controller's start (the
/// setup observation's `now_ns`), for Fig. 4's step changes. The first step starts at 0.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetSchedule {
    steps: Vec<(u64, f64)>,
}

impl TargetSchedule {
    pub fn constant(target_rpcs: f64) -> TargetSchedule {
        TargetSchedule::new(vec![(0, target_rpcs)]).expect("a valid constant target")
    }

    /// Steps sorted by strictly increasing time, the first at 0, targets finite and >= 0.
    pub fn new(steps: Vec<(u64, f64)>) -> Result<TargetSchedule, String> {
        if steps.first().map(|s| s.0) != Some(0) {
            return Err("the first target must start at 0 s".to_string());
        }
        if steps.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err("target steps must be in increasing time order".to_string());
        }
        if let Some(&(_, t)) = steps.iter().find(|s| !(s.1.is_finite() && s.1 >= 0.0)) {
            return Err(format!("target {t} is not a queue length >= 0"));
        }
        Ok(TargetSchedule { steps })
    }

    /// The target `since_start_ns` after the start.
    pub fn at(&self, since_start_ns: u64) -> f64 {
        let i = self.steps.partition_point(|s| s.0 <= since_start_ns);
        assert!(i >= 1, "the first step starts at 0");
        self.steps[i - 1].1
    }

    pub fn steps(&self) -> &[(u64, f64)] {
        &self.steps
    }
}

/// The `pi` controller's settings (gains already designed; see [`design_gains`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PiConfig {
    /// Sampling time `Ts`: the control period.
    pub ts_ns: u64,
    pub sensor: SensorConfig,
    pub target: TargetSchedule,
    pub gains: Gains,
    pub p_on: ProportionalOn,
    pub bw_min_bytes_per_s: u64,
    /// Also the initial limit (the controller starts unthrottled).
    pub bw_max_bytes_per_s: u64,
}

/// A limit law the queue loop steps once per period: PI ([`PiLimit`]) or AIMD
/// ([`AimdLaw`]).
pub trait LimitLaw: std::fmt::Debug + Send {
    /// The controller's registry name.
    fn name(&self) -> &'static str;
    /// The limit the law holds now, bytes/s per client.
    fn limit_bytes_per_s(&self) -> u64;
    /// One period: the new limit for queue `q` against `target` (both in requests).
    fn step(&mut self, target: f64, q: f64) -> u64;
}

/// The loop both queue controllers run (module doc): every `Ts`, measure the device queue,
/// step the law against the target of the moment, limit every client to the law's output.
/// Written once so that `pi` and `aimd` differ only in their law, which is what the
/// comparison between them measures.
#[derive(Debug)]
pub struct QueueLoop<L> {
    ts_ns: u64,
    target: TargetSchedule,
    sensor: QueueSensor,
    law: L,
    actuator: ClientActuator,
    /// The setup observation's time: the target schedule's origin.
    start_ns: Option<u64>,
    trace: Vec<TraceSample>,
}

impl<L: LimitLaw> QueueLoop<L> {
    fn with_law(ts_ns: u64, sensor: SensorConfig, target: TargetSchedule, law: L) -> Self {
        assert!(ts_ns > 0, "a positive sampling time");
        QueueLoop {
            ts_ns,
            target,
            sensor: QueueSensor::new(sensor),
            law,
            actuator: ClientActuator::default(),
            start_ns: None,
            trace: Vec::new(),
        }
    }

    pub fn law(&self) -> &L {
        &self.law
    }

    /// The current limit, bytes/s per client.
    pub fn limit_bytes_per_s(&self) -> u64 {
        self.law.limit_bytes_per_s()
    }
}

impl<L: LimitLaw> Controller for QueueLoop<L> {
    fn name(&self) -> &'static str {
        self.law.name()
    }

    /// Primes the sensor and starts every client at the law's initial limit (`bw_max`), so
    /// the law's state and the clients agree from the first step.
    fn setup(&mut self, initial: &Observation) -> Decision {
        self.sensor.prime(initial);
        self.start_ns = Some(initial.now_ns);
        Decision {
            writes: Vec::new(),
            client_writes: self
                .actuator
                .writes(&initial.clients, self.law.limit_bytes_per_s()),
        }
    }

    fn period_ns(&self) -> Option<u64> {
        Some(self.ts_ns)
    }

    fn decide(&mut self, observation: &Observation) -> Decision {
        let start_ns = *self.start_ns.get_or_insert(observation.now_ns);
        let reading = self.sensor.read(observation);
        self.trace = measured_trace(&self.sensor);
        // Nothing measured (first step without a previous time_in_queue): hold.
        let Some(reading) = reading else {
            return Decision::default();
        };
        // No clients to limit (module doc): measure, but do not move the law's state.
        if observation.clients.is_empty() {
            return Decision::default();
        }
        let target = self.target.at(observation.now_ns.saturating_sub(start_ns));
        let limit = self.law.step(target, reading.filtered_rpcs);
        self.trace.extend(control_trace(reading, target, limit));
        Decision {
            writes: Vec::new(),
            client_writes: self.actuator.writes(&observation.clients, limit),
        }
    }

    /// Per measured target `queue_measured` (requests); on the governing target
    /// `queue_filtered` (what the law saw), `queue_target` and `limit_bytes_per_s` (Fig. 4's
    /// curves).
    fn trace(&self) -> Vec<TraceSample> {
        self.trace.clone()
    }
}

/// The PI law in bytes/s per client: [`PiLaw`] works in MiB/s; its output is rounded and
/// clamped to `[bw_min, bw_max]` here.
#[derive(Debug)]
pub struct PiLimit {
    config: PiConfig,
    law: PiLaw,
}

impl LimitLaw for PiLimit {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn limit_bytes_per_s(&self) -> u64 {
        limit_bytes_per_s(
            self.law.output(),
            self.config.bw_min_bytes_per_s,
            self.config.bw_max_bytes_per_s,
        )
    }

    fn step(&mut self, target: f64, q: f64) -> u64 {
        self.law.step(target, q);
        self.limit_bytes_per_s()
    }
}

/// The `pi` controller (module doc): every `Ts`, measure the device queue, step the PI law,
/// limit every client to its output.
pub type Pi = QueueLoop<PiLimit>;

impl QueueLoop<PiLimit> {
    pub fn new(config: PiConfig) -> Pi {
        assert!(config.bw_min_bytes_per_s >= 1, "a positive lowest limit");
        assert!(config.bw_min_bytes_per_s <= config.bw_max_bytes_per_s);
        let u_min = config.bw_min_bytes_per_s as f64 / MIB;
        let u_max = config.bw_max_bytes_per_s as f64 / MIB;
        let law = PiLaw::new(config.gains, config.p_on, u_min, u_max, u_max);
        QueueLoop::with_law(
            config.ts_ns,
            config.sensor,
            config.target.clone(),
            PiLimit { config, law },
        )
    }

    pub fn config(&self) -> &PiConfig {
        &self.law.config
    }
}

/// `queue_measured` per target of the sensor's last step (trace samples carry no job:
/// [`JobId::EMPTY`]).
fn measured_trace(sensor: &QueueSensor) -> Vec<TraceSample> {
    sensor
        .last_targets()
        .iter()
        .map(|&(ost, q)| TraceSample {
            ost,
            job: JobId::EMPTY,
            metric: "queue_measured",
            value: q,
        })
        .collect()
}

/// The control step's samples, on the governing target.
fn control_trace(reading: QueueReading, target: f64, limit_bytes_per_s: u64) -> [TraceSample; 3] {
    let sample = |metric, value| TraceSample {
        ost: reading.ost,
        job: JobId::EMPTY,
        metric,
        value,
    };
    [
        sample("queue_filtered", reading.filtered_rpcs),
        sample("queue_target", target),
        sample("limit_bytes_per_s", limit_bytes_per_s as f64),
    ]
}

/// The limit written to clients in `decision`, if any (all get the same).
pub fn decided_limit_bytes_per_s(decision: &Decision) -> Option<u64> {
    let first = decision.client_writes.first()?.limit_bytes_per_s;
    assert!(
        decision
            .client_writes
            .iter()
            .all(|w: &ClientWrite| w.limit_bytes_per_s == first),
        "one limit for every client"
    );
    first
}

#[cfg(test)]
mod tests;
