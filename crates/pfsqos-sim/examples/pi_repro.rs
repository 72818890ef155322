//! PI control §4 reproduction driver (PI control, UCC 2025): runs the paper's experiments on
//! `scenarios/pi/listing1.toml` (16 clients, fio Listing 1, one SSD server) and prints
//! Markdown tables. `scripts/reproduce-pi.sh` calls it; every measured number in
//! `docs/reproductions/pi-control.md` comes from its output.
//!
//! ```text
//! cargo run --release -p pfsqos-sim --example pi_repro -- all scenarios/pi/listing1.toml
//! ```
//!
//! * **fig3**: the open-loop staircase (`pi-openloop`): per-client limits from 2 to 40 MiB/s in
//!   20 levels, each held 20 periods of 300 ms, three times; the static curve (mean queue per
//!   limit, the first 5 periods of each hold skipped) and the identified model (Savitzky-Golay
//!   window 11, order 2; empty below 1 request, saturated from 115 of the 128 the server's
//!   threads allow), with the gains eq. 3-4 give for the paper's `Ks = 1.4 s`, `Mp = 0.02`.
//! * **fig4**: `pi` with those gains and a stepped target (40, 80, 60, 100, 50 requests, 30 s
//!   each): per step, the mean queue over the step's second half, the steady-state error
//!   (last 30 %), settling time (5 % band) and overshoot.
//! * **fig5**: the same with gains 4 times larger (noisy) and 10 times smaller (sluggish): the
//!   standard deviation of the queue in the second half of each step, and the mean settling
//!   time.
//! * **fig6/7**: job run times (first I/O to last completion, per client) for fixed targets 50
//!   to 100 against no control (`nobw`) and the AIMD baseline at 80, over 5 seeds (5
//!   replications: the scenario's `start_jitter_s` starts the jobs at other times under each
//!   seed): mean, 10th and 90th percentile, and the tail (longest run time of each seed,
//!   averaged), each mean with its 95 % interval over the seeds (Student's t on the 5
//!   per-seed values); the changes against the baseline are paired by seed (the same seed's
//!   baseline run), with the 95 % interval of the per-seed change; the share of control
//!   periods whose limit is at `bw_min`; for runs whose jobs do not all finish, the
//!   throughput delivered.
//! * A third argument, a scenario, takes the model and gains from that scenario's
//!   identification instead (the same controller on another plant: the congestion curves of
//!   `scenarios/pi/listing1-congestion-*.toml` against the gains of `listing1.toml`).
//! * **fig8**: sampling times 100 ms, 300 ms and 1 s at target 80: the queue's standard
//!   deviation in steady state and the settling time after a step from 40 to 80.

// A driver of the pure crate, not part of it: it reads files and measures wall time
// (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::path::Path;

use pfsqos_core::control::pi::quality::step_quality;
use pfsqos_core::control::pi::savgol::SavGol;
use pfsqos_core::control::pi::{
    design_gains, identify, open_loop_periods, open_loop_record, static_curve, DesignSpec,
    IdentifyConfig, SensorConfig, Staircase, StaircaseConfig,
};
use pfsqos_core::control::spec::PolicyChoice;
use pfsqos_core::control::Controller;
use pfsqos_sim::policy::controller_for_choice;
use pfsqos_sim::{run_with_controller, RunOutput, Scenario};

const MIB: u64 = 1 << 20;
const TS_MS: u64 = 300;
/// The queue the server's 128 I/O threads allow (the scenario's `io_threads`).
const QUEUE_MAX_RPCS: f64 = 128.0;
/// Fig. 4's target steps: (start s, requests).
const STEPS: [(f64, f64); 5] = [
    (0.0, 40.0),
    (30.0, 80.0),
    (60.0, 60.0),
    (90.0, 100.0),
    (120.0, 50.0),
];
const STEP_S: f64 = 30.0;
const SEEDS: u64 = 5;

fn run(s: &Scenario, controller: Box<dyn Controller>, seed: u64) -> RunOutput {
    run_with_controller(s, controller, seed, &mut |_, _| {}).expect("the run succeeds")
}

fn policy(s: &Scenario, spec: &str, seed: u64) -> Box<dyn Controller> {
    let choice = PolicyChoice::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    controller_for_choice(&choice, s, seed)
}

/// Per control step: (time s, metric → value) from the run's controller trace.
fn steps_of(out: &RunOutput) -> Vec<(f64, BTreeMap<&'static str, f64>)> {
    let mut steps: Vec<(f64, BTreeMap<&'static str, f64>)> = Vec::new();
    for e in &out.control_trace {
        let t = e.time_ns as f64 / 1e9;
        if steps.last().map(|s| s.0) != Some(t) {
            steps.push((t, BTreeMap::new()));
        }
        steps
            .last_mut()
            .unwrap()
            .1
            .insert(e.sample.metric, e.sample.value);
    }
    steps
}

/// (time s, measured queue) of every step.
fn queue_series(out: &RunOutput) -> Vec<(f64, f64)> {
    steps_of(out)
        .into_iter()
        .filter_map(|(t, m)| m.get("queue_measured").map(|&q| (t, q)))
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn std_dev(v: &[f64]) -> f64 {
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

/// Half-width of the 95 % confidence interval of the mean of `v` (Student's t with
/// `v.len() - 1` degrees of freedom); 0 for fewer than two values.
fn ci95_half(v: &[f64]) -> f64 {
    // t(0.975, df) for df = 1..=10; beyond that, the normal quantile's neighbourhood.
    const T975: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    let n = v.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(v);
    let sample_sd = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64).sqrt();
    let t = T975.get(n - 2).copied().unwrap_or(1.96);
    t * sample_sd / (n as f64).sqrt()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn with_duration(base: &Scenario, duration_s: f64) -> Scenario {
    let mut s = base.clone();
    s.simulation.duration_s = duration_s;
    s
}

struct Identified {
    a: f64,
    b: f64,
}

/// Fig. 3: the static curve, the dynamic experiment and the model identified on it, or
/// `None` when the record cannot be identified (then no figure that needs the model runs:
/// there is no stand-in model whose gains would be reported as this plant's).
fn fig3(base: &Scenario) -> Option<Identified> {
    let levels = StaircaseConfig::linear_levels(2 * MIB, 40 * MIB, 20);
    let config = StaircaseConfig {
        ts_ns: TS_MS * 1_000_000,
        sensor: SensorConfig::default(),
        levels_bytes_per_s: levels,
        hold_periods: 20,
        repeats: 3,
    };
    let duration_s = config.periods() as f64 * TS_MS as f64 / 1e3;
    let s = with_duration(base, duration_s);
    let out = run(
        &s,
        Box::new(Staircase::new(config).unwrap()),
        s.simulation.seed,
    );
    let periods = open_loop_periods(&out.control_trace);
    println!("### Fig. 3a: static curve (mean queue per fixed limit, three staircases)\n");
    println!("| limit per client (MiB/s) | all 16 clients (MiB/s) | mean queue (requests) |");
    println!("|---:|---:|---:|");
    for (limit, q) in static_curve(&periods, 5) {
        println!("| {limit:.1} | {:.0} | {q:.1} |", limit * 16.0);
    }
    // Fig. 3b: the dynamic experiment around the knee of the static curve (the largest limit
    // whose mean queue stays below half the saturation level): limits alternately above and
    // below it, 10 periods each, so the queue ramps up and down at several slopes without
    // clamping for long.
    let curve = static_curve(&periods, 5);
    let knee = curve
        .iter()
        .filter(|&&(_, q)| q < QUEUE_MAX_RPCS / 2.0)
        .map(|&(l, _)| l)
        .fold(0.0, f64::max);
    let factors = [
        1.10, 0.90, 1.06, 0.94, 1.03, 0.97, 1.08, 0.92, 1.04, 0.96, 1.12, 0.88, 1.02, 0.98,
    ];
    let config = StaircaseConfig {
        ts_ns: TS_MS * 1_000_000,
        sensor: SensorConfig::default(),
        levels_bytes_per_s: factors
            .iter()
            .map(|f| (knee * f * MIB as f64).round() as u64)
            .collect(),
        hold_periods: 10,
        repeats: 3,
    };
    let s = with_duration(base, config.periods() as f64 * TS_MS as f64 / 1e3);
    let out = run(
        &s,
        Box::new(Staircase::new(config).unwrap()),
        s.simulation.seed,
    );
    let periods = open_loop_periods(&out.control_trace);
    let record = open_loop_record(&periods);
    let config = IdentifyConfig {
        smoothing: SavGol::new(11, 2).unwrap(),
        queue_empty_rpcs: 1.0,
        queue_saturated_rpcs: 0.9 * QUEUE_MAX_RPCS,
        pairs_min: 10,
        offset: true,
    };
    println!(
        "\nDynamic experiment: limits alternating around the knee at {knee:.1} MiB/s per client (x 0.88 .. 1.12), 10 periods each, three times."
    );
    println!("\n### Fig. 3b: identified model (eq. 1)\n");
    let model = match identify(&record, &config) {
        Ok(m) => m,
        Err(e) => {
            println!("identification failed: {e}\n");
            return None;
        }
    };
    println!(
        "{model} (affine fit; {} pairs in the record)\n",
        record.len().saturating_sub(1)
    );
    let spec = DesignSpec {
        ts_s: TS_MS as f64 / 1e3,
        ks_s: 1.4,
        mp: 0.02,
    };
    match design_gains(model.a, model.b, spec) {
        Ok((g, p)) => println!(
            "Gains for Ks = 1.4 s, Mp = 0.02, Ts = 0.3 s (eq. 3-4): Kp = {:.4}, Ki = {:.4} MiB/s per request (poles r = {:.4}, θ = {:.4} rad)\n",
            g.kp, g.ki, p.r, p.theta_rad
        ),
        Err(e) => println!("gain design failed: {e}\n"),
    }
    Some(Identified {
        a: model.a,
        b: model.b,
    })
}

fn steps_text() -> String {
    STEPS
        .iter()
        .map(|(at, q)| format!("{q}@{at}"))
        .collect::<Vec<_>>()
        .join("/")
}

/// Per step of `out`'s queue: (mean of the second half, std of the second half, quality).
fn step_rows(
    out: &RunOutput,
) -> Vec<(
    f64,
    f64,
    f64,
    pfsqos_core::control::pi::quality::StepQuality,
)> {
    let series = queue_series(out);
    let mut rows = Vec::new();
    for (i, &(at, target)) in STEPS.iter().enumerate() {
        let initial = if i == 0 { 0.0 } else { STEPS[i - 1].1 };
        let seg: Vec<(f64, f64)> = series
            .iter()
            .copied()
            .filter(|&(t, _)| t > at && t <= at + STEP_S)
            .collect();
        let half: Vec<f64> = seg
            .iter()
            .filter(|&&(t, _)| t > at + STEP_S / 2.0)
            .map(|&(_, q)| q)
            .collect();
        let quality = step_quality(&seg, at, initial, target, 0.05, 0.3).expect("a step segment");
        rows.push((target, mean(&half), std_dev(&half), quality));
    }
    rows
}

/// Highest per-client limit the controllers may set: 64 MiB/s, about 2.4 times a client's
/// share of the device (the paper does not say; starting at its 10 Gb/s links, every run
/// would begin with a 40 s descent through a saturated queue).
const BW_MAX: &str = "bw_max=64M";
/// The controllers' default `bw_min`, which the reproduction leaves as is.
const BW_MIN_BYTES_PER_S: f64 = pfsqos_core::control::pi::BW_MIN_BYTES_PER_S_DEFAULT as f64;

fn pi_spec(m: &Identified, extra: &str) -> String {
    format!("pi:a={:.6}:b={:.6}:ts_ms={TS_MS}:{BW_MAX}{extra}", m.a, m.b)
}

fn fig4(base: &Scenario, m: &Identified) {
    let s = with_duration(base, STEPS.len() as f64 * STEP_S);
    for sensor in ["time_in_queue", "instant"] {
        let spec = pi_spec(
            m,
            &format!(
                ":ks_ms=1400:mp=0.02:sensor={sensor}:target={}",
                steps_text()
            ),
        );
        let out = run(&s, policy(&s, &spec, 1), 1);
        println!("### Fig. 4: stepped target, sensor `{sensor}`: `{spec}`\n");
        println!("| target | mean queue (2nd half) | queue std (2nd half) | steady-state error | settling time (s, 5 %) | overshoot |");
        println!("|---:|---:|---:|---:|---:|---:|");
        for (target, mean_q, std_q, q) in step_rows(&out) {
            println!(
                "| {target:.0} | {mean_q:.1} | {std_q:.1} | {:+.1} % | {} | {:.1} % |",
                q.steady_state_error * 100.0,
                q.settling_time_s
                    .map_or("not settled".to_string(), |t| format!("{t:.1}")),
                q.overshoot * 100.0
            );
        }
        println!();
    }
}

fn fig5(base: &Scenario, m: &Identified) {
    let s = with_duration(base, STEPS.len() as f64 * STEP_S);
    let spec = DesignSpec {
        ts_s: TS_MS as f64 / 1e3,
        ks_s: 1.4,
        mp: 0.02,
    };
    let Ok((g, _)) = design_gains(m.a, m.b, spec) else {
        println!("no designed gains: Fig. 5 skipped\n");
        return;
    };
    println!("### Fig. 5: gain sets (stepped target as Fig. 4, sensor `instant`)\n");
    println!("| gains | Kp | Ki | queue std in steady state (mean over steps) | mean abs. steady-state error | steps settled | mean settling time (s) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (label, factor) in [
        ("designed", 1.0),
        ("noisy (x4)", 4.0),
        ("sluggish (x0.1)", 0.1),
    ] {
        let kp = g.kp * factor;
        let ki = g.ki * factor;
        let spec = format!(
            "pi:kp={kp:.6}:ki={ki:.6}:ts_ms={TS_MS}:{BW_MAX}:sensor=instant:target={}",
            steps_text()
        );
        let out = run(&s, policy(&s, &spec, 1), 1);
        let rows = step_rows(&out);
        let stds: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let errs: Vec<f64> = rows.iter().map(|r| r.3.steady_state_error.abs()).collect();
        let settled: Vec<f64> = rows.iter().filter_map(|r| r.3.settling_time_s).collect();
        println!(
            "| {label} | {kp:.4} | {ki:.4} | {:.1} | {:.1} % | {} of {} | {} |",
            mean(&stds),
            mean(&errs) * 100.0,
            settled.len(),
            rows.len(),
            if settled.is_empty() {
                "-".to_string()
            } else {
                format!("{:.1}", mean(&settled))
            }
        );
    }
    println!();
}

fn run_times_s(out: &RunOutput) -> Vec<f64> {
    out.jobs
        .iter()
        .map(|j| match (j.first_io_ns, j.last_io_ns, j.finished) {
            (Some(a), Some(b), true) => (b - a) as f64 / 1e9,
            _ => f64::INFINITY,
        })
        .collect()
}

fn fig6(base: &Scenario, m: &Identified) {
    println!("### Fig. 6 and 7: job run time per client over {SEEDS} seeds\n");
    println!("Each mean with ± the half-width of its 95 % interval over the {SEEDS} seeds; the changes are paired by seed.\n");
    println!("| control | mean (s) | p10 (s) | p90 (s) | tail: longest per seed, mean (s) | mean vs baseline | tail vs baseline | periods at `bw_min` |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut configs: Vec<(String, String)> = vec![("baseline (nobw)".into(), "nobw".into())];
    for sensor in ["time_in_queue", "instant"] {
        for target in [50, 60, 70, 80, 90, 100] {
            configs.push((
                format!("Ctrl-{target} ({sensor})"),
                pi_spec(
                    m,
                    &format!(":ks_ms=1400:mp=0.02:sensor={sensor}:target={target}"),
                ),
            ));
        }
    }
    configs.push((
        "AIMD-80 (instant)".into(),
        format!("aimd:target=80:ts_ms={TS_MS}:{BW_MAX}:sensor=instant"),
    ));
    // The baseline's per-seed mean and tail, for the changes paired by seed.
    let mut baseline: Vec<(f64, f64)> = Vec::new();
    for (label, spec) in configs {
        let mut all = Vec::new();
        let mut tails = Vec::new();
        let mut seed_means = Vec::new();
        // Control periods, and those whose limit is at the floor (`bw_min`, 1 MiB/s): the
        // periods a client sends least in. (Until the engine re-booked a running hold at a new
        // limit, `Link::relimit_up`, an RPC started at the floor held the uplink for 1 s
        // whatever the next limit; the column showed where that weighed.)
        let (mut periods, mut at_floor) = (0usize, 0usize);
        let mut bytes = 0u64;
        for seed in 1..=SEEDS {
            let out = run(base, policy(base, &spec, seed), seed);
            for (_, m) in steps_of(&out) {
                if let Some(&limit) = m.get("limit_bytes_per_s") {
                    periods += 1;
                    at_floor += usize::from(limit <= BW_MIN_BYTES_PER_S);
                }
            }
            bytes += out
                .jobs
                .iter()
                .map(|j| j.bytes_per_bin().iter().sum::<u64>())
                .sum::<u64>();
            let t = run_times_s(&out);
            tails.push(t.iter().copied().fold(0.0, f64::max));
            seed_means.push(mean(&t));
            all.extend(t);
        }
        let floor = if periods == 0 {
            "-".to_string()
        } else {
            format!("{:.1} %", at_floor as f64 * 100.0 / periods as f64)
        };
        let unfinished = all.iter().filter(|t| t.is_infinite()).count();
        if unfinished > 0 {
            println!(
                "| {label} | {unfinished} of {} jobs unfinished at {:.0} s; {:.0} MiB/s delivered | | | | | | {floor} |",
                all.len(),
                base.simulation.duration_s,
                bytes as f64 / MIB as f64 / (base.simulation.duration_s * SEEDS as f64)
            );
            continue;
        }
        all.sort_by(f64::total_cmp);
        let (m_all, tail) = (mean(&seed_means), mean(&tails));
        if label.starts_with("baseline") {
            baseline = seed_means
                .iter()
                .copied()
                .zip(tails.iter().copied())
                .collect();
        }
        assert_eq!(baseline.len(), seed_means.len(), "a baseline run per seed");
        let change = |ours: &[f64], base: &dyn Fn(&(f64, f64)) -> f64| -> Vec<f64> {
            ours.iter()
                .zip(&baseline)
                .map(|(x, b)| (x / base(b) - 1.0) * 100.0)
                .collect()
        };
        let mean_change = change(&seed_means, &|b| b.0);
        let tail_change = change(&tails, &|b| b.1);
        println!(
            "| {label} | {m_all:.1} ± {:.1} | {:.1} | {:.1} | {tail:.1} ± {:.1} | {:+.1} % ± {:.1} | {:+.1} % ± {:.1} | {floor} |",
            ci95_half(&seed_means),
            percentile(&all, 0.1),
            percentile(&all, 0.9),
            ci95_half(&tails),
            mean(&mean_change),
            ci95_half(&mean_change),
            mean(&tail_change),
            ci95_half(&tail_change)
        );
    }
    println!();
}

fn fig8(base: &Scenario, m: &Identified) {
    println!("### Fig. 8: sampling time (target 40 then 80 at 30 s, gains designed for each Ts)\n");
    println!("| Ts | queue std, 2nd half at 80 | mean queue | settling time after the step (s) |");
    println!("|---:|---:|---:|---:|");
    let s = with_duration(base, 60.0);
    for ts_ms in [100u64, 300, 1000] {
        let spec = format!(
            "pi:a={:.6}:b={:.6}:ts_ms={ts_ms}:{BW_MAX}:ks_ms=1400:mp=0.02:target=40@0/80@30",
            m.a, m.b
        );
        let spec = if ts_ms * 4 >= 1400 {
            // Ks must exceed 4 Ts for r = exp(-4 Ts/Ks) to leave room; scale it.
            spec.replace("ks_ms=1400", &format!("ks_ms={}", ts_ms * 14 / 3))
        } else {
            spec
        };
        match PolicyChoice::parse(&spec) {
            Ok(_) => {}
            Err(e) => {
                println!("| {ts_ms} ms | {e} | | |");
                continue;
            }
        }
        let out = run(&s, policy(&s, &spec, 1), 1);
        let series = queue_series(&out);
        let seg: Vec<(f64, f64)> = series.iter().copied().filter(|&(t, _)| t > 30.0).collect();
        let half: Vec<f64> = seg
            .iter()
            .filter(|&&(t, _)| t > 45.0)
            .map(|&(_, q)| q)
            .collect();
        let q = step_quality(&seg, 30.0, 40.0, 80.0, 0.05, 0.3).expect("a step");
        println!(
            "| {ts_ms} ms | {:.1} | {:.1} | {} |",
            std_dev(&half),
            mean(&half),
            q.settling_time_s
                .map_or("not settled".to_string(), |t| format!("{t:.1}"))
        );
    }
    println!();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (what, path, gains_path) = match args.as_slice() {
        [_, what, path] => (what.as_str(), path.as_str(), None),
        [_, what, path, gains] => (what.as_str(), path.as_str(), Some(gains.as_str())),
        _ => {
            eprintln!("usage: pi_repro all|fig3|fig4|fig5|fig6|fig8 SCENARIO [GAINS_SCENARIO]");
            std::process::exit(2);
        }
    };
    let base = Scenario::load(Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    // The model (and so the gains) comes from SCENARIO's own identification, or from
    // GAINS_SCENARIO's: the same controller run on a different plant.
    let m = match gains_path {
        None => fig3(&base),
        Some(g) => {
            let gains_base = Scenario::load(Path::new(g)).unwrap_or_else(|e| panic!("{e}"));
            println!("Model and gains identified on `{g}`:\n");
            fig3(&gains_base)
        }
    };
    let Some(m) = m else {
        if what != "fig3" {
            println!(
                "Not run: the figures after Fig. 3 need an identified model, and identification failed (above).\n"
            );
        }
        return;
    };
    match what {
        "fig3" => {}
        "fig4" => fig4(&base, &m),
        "fig5" => fig5(&base, &m),
        "fig6" => fig6(&base, &m),
        "fig8" => fig8(&base, &m),
        "all" => {
            fig4(&base, &m);
            fig5(&base, &m);
            fig6(&base, &m);
            fig8(&base, &m);
        }
        other => panic!("unknown part {other}"),
    }
}
