//! The specs of PI control (`pi`), its open-loop identification (`pi-openloop`) and its AIMD
//! baseline (`aimd`).

use super::{
    self as pi_control, Aimd, AimdConfig, DesignSpec, Gains, Increase, Pi, PiConfig,
    ProportionalOn, QueueSource, SensorConfig, Staircase, StaircaseConfig, TargetChoice,
    TargetSchedule,
};
use crate::spec::{
    key_value, parse_bytes, parse_choice, parse_ms, parse_number, ControllerContext,
    ControllerDescriptor, Deployment, PolicyOptions,
};
use crate::Controller;

/// `pi`: PI control of the server's queue through client limits.
pub const PI: ControllerDescriptor = ControllerDescriptor {
    name: "pi",
    description:
        "PI control: client bandwidth limits steer each server's dispatch queue to a target",
    parse: parse_pi,
    deployment: Deployment::ClientLimits,
};

/// `aimd`: the PI paper's AIMD baseline.
pub const AIMD: ControllerDescriptor = ControllerDescriptor {
    name: "aimd",
    description:
        "AIMD: client limits cut by a factor above the queue target and raised by a step below it",
    parse: parse_aimd,
    deployment: Deployment::ClientLimits,
};

/// `pi-openloop`: the staircase of client limits the plant is identified from.
pub const OPEN_LOOP: ControllerDescriptor = ControllerDescriptor {
    name: "pi-openloop",
    description:
        "PI's open-loop identification: a staircase of client limits, recorded to fit the plant",
    parse: parse_pi_openloop,
    deployment: Deployment::ClientLimits,
};

/// PI control (`pi`): the controller's settings with the gains designed.
#[derive(Debug, PartialEq)]
pub(crate) struct PiOptions(pub(crate) PiConfig);

impl PolicyOptions for PiOptions {
    /// Ts is the spec's `ts_ms` (default the paper's 300 ms), not the driver's period: the
    /// gains were designed for it.
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Pi::new(self.0.clone()))
    }
}

/// The open-loop identification experiment (`pi-openloop`).
#[derive(Debug, PartialEq)]
pub(crate) struct StaircaseOptions(pub(crate) StaircaseConfig);

impl PolicyOptions for StaircaseOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Staircase::new(self.0.clone()).expect("options were checked when parsed"))
    }
}

/// `pi-openloop[:from=2M][:to=40M][:levels=20][:hold=20][:repeats=1][:ts_ms=300][:sensor=..]
/// [:ost=N][:filter=1]`: per-client limits from `from` to `to` bytes/s in `levels` even steps,
/// each held `hold` periods of `ts_ms`, the whole staircase `repeats` times (PI paper §4.2).
pub(crate) fn parse_pi_openloop(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str = "from, to, levels, hold, repeats, ts_ms, sensor, ost, filter";
    let (mut from, mut to, mut levels, mut hold, mut repeats) =
        (2u64 << 20, 40u64 << 20, 20, 20, 1);
    let mut ts_ms = pi_control::PI_TS_MS_DEFAULT;
    let mut sensor = SensorConfig::default();
    let count = |key: &str, value: &str, max: u64| -> Result<u64, String> {
        value
            .parse::<u64>()
            .ok()
            .filter(|v| (1..=max).contains(v))
            .ok_or_else(|| format!("{name} option {key}=`{value}` is not a count in 1..={max}"))
    };
    for option in options {
        let (key, value) = key_value(name, option, ALLOWED)?;
        if parse_sensor_option(name, key, value, &mut sensor)? {
            continue;
        }
        match key {
            "from" => from = parse_bytes(name, key, value)?,
            "to" => to = parse_bytes(name, key, value)?,
            "levels" => {
                levels = count(
                    key,
                    value,
                    pi_control::openloop::STAIRCASE_LEVELS_MAX as u64,
                )?
            }
            "hold" => hold = count(key, value, 100_000)?,
            "repeats" => repeats = count(key, value, 1_000)?,
            "ts_ms" => ts_ms = parse_ms(name, key, value)?,
            other => {
                return Err(format!(
                    "unknown {name} option `{other}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    if from == 0 || to == 0 {
        return Err(format!(
            "{name} options from and to must be at least 1 byte/s"
        ));
    }
    let config = StaircaseConfig {
        ts_ns: ts_ms * 1_000_000,
        sensor,
        levels_bytes_per_s: StaircaseConfig::linear_levels(from, to, levels as usize),
        hold_periods: hold as u32,
        repeats: repeats as u32,
    };
    config.check().map_err(|e| format!("{name}: {e}"))?;
    Ok(Box::new(StaircaseOptions(config)))
}

/// The AIMD baseline (`aimd`).
#[derive(Debug, PartialEq)]
pub(crate) struct AimdOptions(pub(crate) AimdConfig);

impl PolicyOptions for AimdOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Aimd::new(self.0.clone()))
    }
}

/// Longest moving-average window (`filter=`), in periods.
pub const PI_FILTER_SAMPLES_MAX: usize = 1000;

/// Largest queue target, requests (Linux's `nr_requests` tops out at a few thousand).
pub const PI_TARGET_RPCS_MAX: f64 = 1e6;

/// Latest target step, seconds after the start (about 115 days).
pub const PI_TARGET_AT_S_MAX: f64 = 1e7;

/// `target=80` (a constant queue target, requests) or `target=40@0/80@30/60@60` (targets
/// from the given second after the start, the first at 0: the paper's Fig. 4 steps).
pub(crate) fn parse_target(policy: &str, value: &str) -> Result<TargetSchedule, String> {
    let bad = |why: String| {
        format!(
            "{policy} option target=`{value}` is not a queue target: {why} (a number of \
             requests, or steps like 40@0/80@30 in requests@seconds)"
        )
    };
    let queue = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..=PI_TARGET_RPCS_MAX).contains(v))
            .ok_or_else(|| bad(format!("`{text}` is not in 0..={PI_TARGET_RPCS_MAX}")))
    };
    if !value.contains('@') {
        return Ok(TargetSchedule::constant(queue(value)?));
    }
    let mut steps = Vec::new();
    for step in value.split('/') {
        let (target, at) = step
            .split_once('@')
            .ok_or_else(|| bad(format!("`{step}` is not target@seconds")))?;
        let at_s = at
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..=PI_TARGET_AT_S_MAX).contains(v))
            .ok_or_else(|| bad(format!("`{at}` is not a time in seconds")))?;
        steps.push(((at_s * 1e9).round() as u64, queue(target)?));
    }
    TargetSchedule::new(steps).map_err(bad)
}

/// The sensor options both controllers take: `sensor=`, `ost=`, `filter=`. `Ok(false)` if
/// `key` is not one of them.
pub(crate) fn parse_sensor_option(
    policy: &str,
    key: &str,
    value: &str,
    sensor: &mut SensorConfig,
) -> Result<bool, String> {
    match key {
        "sensor" => {
            sensor.source = parse_choice(
                policy,
                key,
                value,
                &[
                    ("time_in_queue", QueueSource::TimeInQueue),
                    ("instant", QueueSource::Instant),
                    ("nrs", QueueSource::Nrs),
                ],
            )?
        }
        "ost" => {
            sensor.targets =
                TargetChoice::Ost(crate::model::OstId(value.parse().map_err(|_| {
                    format!("{policy} option ost=`{value}` is not a target index")
                })?))
        }
        "filter" => {
            sensor.filter_samples = value
                .parse()
                .ok()
                .filter(|v| (1..=PI_FILTER_SAMPLES_MAX).contains(v))
                .ok_or_else(|| {
                    format!(
                        "{policy} option filter=`{value}` is not a number of periods in \
                         1..={PI_FILTER_SAMPLES_MAX}"
                    )
                })?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `bw_min` and `bw_max` (bytes/s with binary suffixes): `bw_min >= 1`, `bw_min <= bw_max`.
fn check_limits(policy: &str, bw_min: u64, bw_max: u64) -> Result<(), String> {
    if bw_min == 0 {
        return Err(format!("{policy} option bw_min must be at least 1 byte/s"));
    }
    if bw_min > bw_max {
        return Err(format!(
            "{policy} option bw_min ({bw_min} bytes/s) is above bw_max ({bw_max} bytes/s)"
        ));
    }
    Ok(())
}

/// `pi[:ts_ms=300][:target=80|40@0/80@30][:ks_ms=1400][:mp=0.02][:a=0.8][:b=0.5]
/// [:kp=..:ki=..][:p_on=error|measurement][:bw_min=1M][:bw_max=..][:sensor=..][:ost=N]
/// [:filter=1]`. Gains come from eq. 3-4 for (a, b, Ts, Ks, Mp) unless `kp` and `ki` are
/// both given (then the model and specification options are refused: they would be unused).
/// `b` is in requests per MiB/s of per-client limit, `kp` and `ki` in MiB/s per request.
pub(crate) fn parse_pi(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str = "ts_ms, target, ks_ms, mp, a, b, kp, ki, p_on, bw_min, bw_max, \
                           sensor, ost, filter";
    let mut ts_ms = pi_control::PI_TS_MS_DEFAULT;
    let mut target = TargetSchedule::constant(pi_control::PI_TARGET_RPCS_DEFAULT);
    let mut ks_ms = None;
    let mut mp = None;
    let mut a = None;
    let mut b = None;
    let mut kp = None;
    let mut ki = None;
    let mut p_on = ProportionalOn::default();
    let mut bw_min = pi_control::BW_MIN_BYTES_PER_S_DEFAULT;
    let mut bw_max = pi_control::BW_MAX_BYTES_PER_S_DEFAULT;
    let mut sensor = SensorConfig::default();
    for option in options {
        let (key, value) = key_value(name, option, ALLOWED)?;
        if parse_sensor_option(name, key, value, &mut sensor)? {
            continue;
        }
        let any = |_: f64| true;
        match key {
            "ts_ms" => ts_ms = parse_ms(name, key, value)?,
            "target" => target = parse_target(name, value)?,
            "ks_ms" => ks_ms = Some(parse_ms(name, key, value)?),
            "mp" => {
                mp = Some(parse_number(
                    name,
                    key,
                    value,
                    |v| v > 0.0 && v < 1.0,
                    "an overshoot fraction in (0, 1)",
                )?)
            }
            "a" => a = Some(parse_number(name, key, value, any, "a finite number")?),
            "b" => {
                b = Some(parse_number(
                    name,
                    key,
                    value,
                    |v| v != 0.0,
                    "a non-zero number (requests per MiB/s)",
                )?)
            }
            "kp" => kp = Some(parse_number(name, key, value, any, "a finite number")?),
            "ki" => ki = Some(parse_number(name, key, value, any, "a finite number")?),
            "p_on" => {
                p_on = parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("error", ProportionalOn::Error),
                        ("measurement", ProportionalOn::Measurement),
                    ],
                )?
            }
            "bw_min" => bw_min = parse_bytes(name, key, value)?,
            "bw_max" => bw_max = parse_bytes(name, key, value)?,
            other => {
                return Err(format!(
                    "unknown {name} option `{other}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    check_limits(name, bw_min, bw_max)?;
    let gains = match (kp, ki) {
        (Some(kp), Some(ki)) => {
            if ks_ms.is_some() || mp.is_some() || a.is_some() || b.is_some() {
                return Err(format!(
                    "{name}: kp and ki set the gains directly; ks_ms, mp, a and b would be \
                     unused"
                ));
            }
            Gains { kp, ki }
        }
        (None, None) => {
            let spec = DesignSpec {
                ts_s: ts_ms as f64 / 1e3,
                ks_s: ks_ms.unwrap_or(pi_control::PI_KS_MS_DEFAULT) as f64 / 1e3,
                mp: mp.unwrap_or(pi_control::PI_MP_DEFAULT),
            };
            let (gains, _) = pi_control::design_gains(
                a.unwrap_or(pi_control::PI_MODEL_A_DEFAULT),
                b.unwrap_or(pi_control::PI_MODEL_B_DEFAULT),
                spec,
            )
            .map_err(|e| format!("{name}: no gains for this design: {e}"))?;
            gains
        }
        _ => return Err(format!("{name}: kp and ki go together")),
    };
    Ok(Box::new(PiOptions(PiConfig {
        ts_ns: ts_ms * 1_000_000,
        sensor,
        target,
        gains,
        p_on,
        bw_min_bytes_per_s: bw_min,
        bw_max_bytes_per_s: bw_max,
    })))
}

/// `aimd[:ts_ms=300][:target=80|40@0/80@30][:decrease=0.5][:increase=6.25%|4M][:bw_min=1M]
/// [:bw_max=..][:sensor=..][:ost=N][:filter=1]`. `increase` is a percentage of the current
/// limit (default 6.25 %, io.latency's 1/16) or a fixed step in bytes/s.
pub(crate) fn parse_aimd(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str = "ts_ms, target, decrease, increase, bw_min, bw_max, sensor, ost, filter";
    let mut config = AimdConfig {
        ts_ns: pi_control::PI_TS_MS_DEFAULT * 1_000_000,
        sensor: SensorConfig::default(),
        target: TargetSchedule::constant(pi_control::PI_TARGET_RPCS_DEFAULT),
        decrease: 0.5,
        increase: Increase::default(),
        bw_min_bytes_per_s: pi_control::BW_MIN_BYTES_PER_S_DEFAULT,
        bw_max_bytes_per_s: pi_control::BW_MAX_BYTES_PER_S_DEFAULT,
    };
    for option in options {
        let (key, value) = key_value(name, option, ALLOWED)?;
        if parse_sensor_option(name, key, value, &mut config.sensor)? {
            continue;
        }
        match key {
            "ts_ms" => config.ts_ns = parse_ms(name, key, value)? * 1_000_000,
            "target" => config.target = parse_target(name, value)?,
            "decrease" => {
                config.decrease = parse_number(
                    name,
                    key,
                    value,
                    |v| v > 0.0 && v < 1.0,
                    "a factor in (0, 1)",
                )?
            }
            "increase" => {
                config.increase = match value.strip_suffix('%') {
                    Some(percent) => Increase::Fraction(
                        parse_number(
                            name,
                            key,
                            percent,
                            |v| v > 0.0 && v <= 1000.0,
                            "a percentage in (0, 1000]",
                        )? / 100.0,
                    ),
                    None => match parse_bytes(name, key, value)? {
                        0 => {
                            return Err(format!(
                                "{name} option increase=`{value}` must be positive"
                            ))
                        }
                        step => Increase::StepBytesPerS(step),
                    },
                }
            }
            "bw_min" => config.bw_min_bytes_per_s = parse_bytes(name, key, value)?,
            "bw_max" => config.bw_max_bytes_per_s = parse_bytes(name, key, value)?,
            other => {
                return Err(format!(
                    "unknown {name} option `{other}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    check_limits(name, config.bw_min_bytes_per_s, config.bw_max_bytes_per_s)?;
    Ok(Box::new(AimdOptions(config)))
}
