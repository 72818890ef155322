//! The `pi` controller end to end: synthetic observations in, client limits out, and the
//! closed loop on the identified linear model against the design specification.

use super::identify::tests::{config as identify_config, open_loop};
use super::quality::{overshoot, settling_time_s, steady_state_error};
use super::sensor::tests::observation;
use super::*;
use crate::model::OstId;
use crate::ClientId;

const TS_NS: u64 = 300_000_000;

fn spec() -> DesignSpec {
    DesignSpec {
        ts_s: TS_NS as f64 / 1e9,
        ks_s: 1.4,
        mp: 0.02,
    }
}

fn pi_config(a: f64, b: f64, p_on: ProportionalOn, target: TargetSchedule) -> PiConfig {
    let (gains, _) = design_gains(a, b, spec()).unwrap();
    PiConfig {
        ts_ns: TS_NS,
        sensor: SensorConfig::default(),
        target,
        gains,
        p_on,
        bw_min_bytes_per_s: BW_MIN_BYTES_PER_S_DEFAULT,
        bw_max_bytes_per_s: 1 << 30,
    }
}

/// Runs `controller` against the linear plant `q(k+1) = a q(k) + b u(k)` (u in MiB/s) for
/// `periods` periods, the device's `time_in_queue` advancing by `q(k) Ts` each period so the
/// sensor reads `q(k)`. Returns `(time_s, q)` at each control step.
fn closed_loop(controller: &mut dyn Controller, a: f64, b: f64, periods: u64) -> Vec<(f64, f64)> {
    let mut q = 0.0;
    let mut tiq_ns = 0.0;
    let setup = controller.setup(&observation(0, &[(0, 0, 0, 0)], 4));
    let mut limit = decided_limit_bytes_per_s(&setup).expect("an initial limit");
    let mut out = Vec::new();
    for k in 1..=periods {
        // The period that ends now had the queue at q throughout.
        tiq_ns += q * TS_NS as f64;
        let now_ns = k * TS_NS;
        out.push((now_ns as f64 / 1e9, q));
        let d = controller.decide(&observation(now_ns, &[(0, tiq_ns as u64, 0, 0)], 4));
        if let Some(l) = decided_limit_bytes_per_s(&d) {
            limit = l;
        }
        q = a * q + b * limit as f64 / MIB;
    }
    out
}

/// The samples from the step at `from_s` up to `to_s`.
fn segment(samples: &[(f64, f64)], from_s: f64, to_s: f64) -> Vec<(f64, f64)> {
    samples
        .iter()
        .copied()
        .filter(|&(t, _)| t >= from_s - 1e-9 && t < to_s - 1e-9)
        .collect()
}

#[test]
fn closed_loop_on_the_identified_model_meets_the_specification() {
    // Identify from a noisy open loop of a known plant, design, then run the loop with a
    // target step 40 -> 80 at 30 s (Fig. 4's kind of step), on the identified model and on
    // the true plant (the model is off by about 1 %).
    let (a_true, b_true) = (0.8, 0.5);
    let levels = [
        5.0, 20.0, 10.0, 40.0, 0.0, 30.0, 60.0, 15.0, 45.0, 25.0, 0.0, 35.0,
    ];
    let record = open_loop(a_true, b_true, &levels, 30, 1.0, 3);
    let model = identify(&record, &identify_config()).unwrap();
    let schedule = TargetSchedule::new(vec![(0, 40.0), (30_000_000_000, 80.0)]).unwrap();
    // Overshoot tolerance: 25 % of Mp on the identified model (measured 2.3 %); the true
    // plant, which the gains were not designed for, overshoots more (measured 2.6 %): the
    // 2 % overshoot is sensitive to a 1 % model error, so 50 % there.
    for (plant_a, plant_b, over_tolerance) in [(model.a, model.b, 0.25), (a_true, b_true, 0.5)] {
        let mut results = Vec::new();
        for p_on in [ProportionalOn::Measurement, ProportionalOn::Error] {
            let mut pi = Pi::new(pi_config(model.a, model.b, p_on, schedule.clone()));
            let samples = closed_loop(&mut pi, plant_a, plant_b, 200);
            let step = segment(&samples, 30.0, 60.0);
            let before = segment(&samples, 20.0, 30.0);
            let initial = before.last().unwrap().1;
            assert!(
                (initial - 40.0).abs() < 0.01,
                "at 40 before the step: {initial}"
            );
            // Eq. 4's r = exp(-4 Ts/Ks) settles within e⁻⁴ ≈ 2 % of the step: check Ks
            // against that band, 2 % of the 40-request step, which is 1 % of the target 80.
            let band = 0.02 * (80.0 - initial) / 80.0;
            let settling = settling_time_s(&step, 30.0, 80.0, band).unwrap().unwrap();
            // The paper's 5 % band (of the target) is reached sooner.
            let settling_5 = settling_time_s(&step, 30.0, 80.0, 0.05).unwrap().unwrap();
            assert!(settling_5 < settling);
            let over = overshoot(&step, initial, 80.0).unwrap();
            let sse = steady_state_error(&step, 80.0, 0.5).unwrap();
            assert!(sse.abs() < 1e-6, "{p_on:?}: steady-state error {sse}");
            results.push((settling, over));
        }
        // Proportional on the measurement: the closed loop is eq. 3's poles alone (measured:
        // 1.5 s, 2.3 %).
        let (settling, over) = results[0];
        assert!(
            (settling - 1.4).abs() <= 0.25 * 1.4,
            "settling {settling} s vs 1.4 s"
        );
        assert!(
            (over - 0.02).abs() <= over_tolerance * 0.02,
            "overshoot {over} vs Mp 0.02"
        );
        // Proportional on the error (eq. 2's form): same poles, but the PI's zero at
        // Kp / (Kp + Ki) makes the step overshoot an order of magnitude beyond Mp
        // (measured: 27 %).
        let (settling, over) = results[1];
        assert!(
            (settling - 1.4).abs() <= 0.25 * 1.4,
            "settling {settling} s vs 1.4 s"
        );
        assert!(over > 5.0 * 0.02, "overshoot {over}");
    }
}

#[test]
fn aimd_oscillates_where_pi_settles() {
    // The same plant and target 80: PI holds the queue at the target, AIMD saws around
    // it (halving drops the queue far below, the 1/16 increases climb back; measured: 63 to
    // 84 requests).
    let (a, b) = (0.8, 0.5);
    let mut pi = Pi::new(pi_config(
        a,
        b,
        ProportionalOn::Error,
        TargetSchedule::constant(80.0),
    ));
    let mut aimd = Aimd::new(AimdConfig {
        ts_ns: TS_NS,
        sensor: SensorConfig::default(),
        target: TargetSchedule::constant(80.0),
        decrease: 0.5,
        increase: Increase::default(),
        bw_min_bytes_per_s: BW_MIN_BYTES_PER_S_DEFAULT,
        bw_max_bytes_per_s: 1 << 30,
    });
    let tail = |samples: Vec<(f64, f64)>| -> (f64, f64, f64) {
        let last: Vec<f64> = samples[100..].iter().map(|&(_, q)| q).collect();
        let min = last.iter().copied().fold(f64::INFINITY, f64::min);
        let max = last.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (min, max, last.iter().sum::<f64>() / last.len() as f64)
    };
    let (min, max, mean) = tail(closed_loop(&mut pi, a, b, 400));
    assert!(
        max - min < 1e-6 && (mean - 80.0).abs() < 1e-6,
        "{min} {max} {mean}"
    );
    let (min, max, mean) = tail(closed_loop(&mut aimd, a, b, 400));
    assert!(max - min > 0.2 * 80.0, "AIMD swings: {min} .. {max}");
    assert!(max < 1.25 * 80.0 && mean < 80.0, "{min} {max} {mean}");
}

#[test]
fn setup_starts_every_client_at_the_highest_limit() {
    let mut pi = Pi::new(pi_config(
        0.8,
        0.5,
        ProportionalOn::Error,
        TargetSchedule::constant(80.0),
    ));
    let d = pi.setup(&observation(0, &[(0, 0, 0, 0)], 3));
    assert!(d.writes.is_empty());
    assert_eq!(
        d.client_writes,
        (0..3)
            .map(|c| ClientWrite {
                client: ClientId(c),
                limit_bytes_per_s: Some(1 << 30)
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(pi.period_ns(), Some(TS_NS));
}

#[test]
fn one_step_follows_the_law_from_time_in_queue() {
    let config = pi_config(
        0.8,
        0.5,
        ProportionalOn::Error,
        TargetSchedule::constant(80.0),
    );
    let gains = config.gains;
    let mut pi = Pi::new(config);
    pi.setup(&observation(0, &[(0, 0, 0, 0), (1, 0, 0, 0)], 2));
    // Target 0 held 120 requests on average (36 s of request time in 300 ms), target 1 held
    // 30: the largest governs.
    let d = pi.decide(&observation(
        TS_NS,
        &[(0, 36_000_000_000, 7, 7), (1, 9_000_000_000, 7, 7)],
        2,
    ));
    // First step: u = u_max + Ki e (no proportional kick), e = 80 - 120.
    let expected_mib = 1024.0 + gains.ki * (80.0 - 120.0);
    let expected = (expected_mib * MIB).round() as u64;
    assert_eq!(decided_limit_bytes_per_s(&d), Some(expected));
    assert_eq!(d.client_writes.len(), 2);
    let trace = pi.trace();
    let find = |metric: &str, ost: u32| {
        trace
            .iter()
            .find(|s| s.metric == metric && s.ost == OstId(ost))
            .map(|s| s.value)
    };
    assert_eq!(find("queue_measured", 0), Some(120.0));
    assert_eq!(find("queue_measured", 1), Some(30.0));
    assert_eq!(find("queue_filtered", 0), Some(120.0));
    assert_eq!(find("queue_target", 0), Some(80.0));
    assert_eq!(find("limit_bytes_per_s", 0), Some(expected as f64));
    // Second step, queue still 120: u += Kp (e - e_prev) + Ki e = Ki e again.
    let d = pi.decide(&observation(
        2 * TS_NS,
        &[(0, 72_000_000_000, 7, 7), (1, 18_000_000_000, 7, 7)],
        2,
    ));
    let expected2 = ((expected_mib + gains.ki * -40.0) * MIB).round() as u64;
    assert_eq!(decided_limit_bytes_per_s(&d), Some(expected2));
}

#[test]
fn without_clients_it_measures_but_writes_nothing() {
    let mut pi = Pi::new(pi_config(
        0.8,
        0.5,
        ProportionalOn::Error,
        TargetSchedule::constant(80.0),
    ));
    let d = pi.setup(&observation(0, &[(0, 0, 0, 0)], 0));
    assert_eq!(d, Decision::default());
    let d = pi.decide(&observation(TS_NS, &[(0, 36_000_000_000, 0, 0)], 0));
    assert_eq!(d, Decision::default());
    let metrics: Vec<&str> = pi.trace().iter().map(|s| s.metric).collect();
    assert_eq!(metrics, vec!["queue_measured"]);
    // The law did not move: when clients appear, they get a step from the initial limit.
    assert_eq!(pi.limit_bytes_per_s(), 1 << 30);
}

#[test]
fn the_first_step_without_a_previous_reading_holds() {
    let mut pi = Pi::new(pi_config(
        0.8,
        0.5,
        ProportionalOn::Error,
        TargetSchedule::constant(80.0),
    ));
    // No setup: time_in_queue has no previous reading.
    let d = pi.decide(&observation(TS_NS, &[(0, 36_000_000_000, 0, 0)], 2));
    assert_eq!(d, Decision::default());
    // The next one measures.
    let d = pi.decide(&observation(2 * TS_NS, &[(0, 72_000_000_000, 0, 0)], 2));
    assert_eq!(d.client_writes.len(), 2);
}

#[test]
fn the_target_follows_its_schedule_and_unchanged_limits_are_not_rewritten() {
    let schedule = TargetSchedule::new(vec![(0, 80.0), (600_000_000, 20.0)]).unwrap();
    let mut config = pi_config(0.8, 0.5, ProportionalOn::Error, schedule);
    config.sensor = SensorConfig {
        source: QueueSource::Instant,
        targets: TargetChoice::Ost(OstId(1)),
        filter_samples: 1,
    };
    let mut pi = Pi::new(config);
    pi.setup(&observation(1_000, &[(0, 0, 0, 0), (1, 0, 0, 0)], 1));
    // Target 1's queue is at the target and the limit at its ceiling: nothing changes.
    let d = pi.decide(&observation(
        1_000 + TS_NS,
        &[(0, 0, 500, 0), (1, 0, 80, 0)],
        1,
    ));
    assert!(d.client_writes.is_empty(), "{d:?}");
    // 600 ms after the start the target drops to 20: the limit drops.
    let d = pi.decide(&observation(
        1_000 + 2 * TS_NS,
        &[(0, 0, 500, 0), (1, 0, 80, 0)],
        1,
    ));
    let limit = decided_limit_bytes_per_s(&d).unwrap();
    assert!(limit < 1 << 30, "{limit}");
    let target = pi
        .trace()
        .iter()
        .find(|s| s.metric == "queue_target")
        .unwrap()
        .value;
    assert_eq!(target, 20.0);
}

#[test]
fn target_schedules_are_checked() {
    assert!(TargetSchedule::new(vec![]).is_err());
    assert!(TargetSchedule::new(vec![(5, 1.0)]).is_err());
    assert!(TargetSchedule::new(vec![(0, 1.0), (0, 2.0)]).is_err());
    assert!(TargetSchedule::new(vec![(0, -1.0)]).is_err());
    let s = TargetSchedule::new(vec![(0, 1.0), (10, 2.0)]).unwrap();
    assert_eq!(
        (s.at(0), s.at(9), s.at(10), s.at(1_000)),
        (1.0, 1.0, 2.0, 2.0)
    );
}
