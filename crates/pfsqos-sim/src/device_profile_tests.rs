//! The profile-driven device model: table models restated as profiles are the same model,
//! switching between objects is judged per device, seeds are replications, and a profile
//! calibrated from a simulated device reproduces that device.

use pfsqos_profile::plan::{plan, Ranges};
use pfsqos_profile::{
    fit, shipped, Measured, Op, Pattern, Profile, QuantileRow, Source, SourceKind,
};
use proptest::prelude::*;

use super::*;
use crate::measure::{closed_loop, Point};
use crate::scenario::ByteSize;

fn table_spec(
    name: &str,
    read: &[(u64, f64, f64)],
    write: &[(u64, f64, f64)],
    penalty_us: f64,
    c: u32,
) -> DeviceSpec {
    let rows = |r: &[(u64, f64, f64)]| {
        r.iter()
            .map(|&(size, bandwidth_mib_s, overhead_us)| DeviceRow {
                size: ByteSize(size),
                bandwidth_mib_s,
                overhead_us,
            })
            .collect()
    };
    DeviceSpec {
        name: name.into(),
        profile: None,
        resolved_profile: None,
        read: rows(read),
        write: rows(write),
        random_penalty_us: penalty_us,
        concurrency: c,
        congestion: Vec::new(),
    }
}

fn preset_spec(name: &str) -> DeviceSpec {
    let m = DeviceModel::preset(name).unwrap();
    let rows = |rows: &[Row]| -> Vec<(u64, f64, f64)> {
        rows.iter()
            .map(|r| (r.size_bytes, r.bandwidth_mib_s, r.overhead_ns / 1e3))
            .collect()
    };
    table_spec(
        name,
        &rows(&m.read),
        &rows(&m.write),
        m.random_penalty_ns as f64 / 1e3,
        m.concurrency,
    )
}

fn same_model(spec: &DeviceSpec) {
    let direct = DeviceModel::from_spec(spec).unwrap();
    let profile = DeviceModel::table_profile(spec).unwrap();
    let mut via = DeviceModel::from_profile(&profile);
    via.name = spec.name.clone();
    assert_eq!(via, direct, "device `{}`", spec.name);
    assert!(via.dynamics().is_none());
}

#[test]
fn table_models_are_expressible_as_profiles() {
    for name in PRESET_NAMES {
        let spec = preset_spec(name);
        same_model(&spec);
        let mut m = DeviceModel::from_spec(&spec).unwrap();
        m.name = name.to_string();
        assert_eq!(m, DeviceModel::preset(name).unwrap());
    }
    same_model(&super::tests_support::spec());
    same_model(&super::tests_support::congested_spec());
    // Every table of every shipped scenario.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut checked = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let Ok(s) = crate::Scenario::load(&f) else {
                continue; // suites, not scenarios
            };
            for d in s.devices.iter().filter(|d| d.profile.is_none()) {
                same_model(d);
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "the shipped scenarios declare device tables");
}

fn seq(op: Op, size_kib: u64, queue_depth: u32, streams: u32) -> Point {
    Point {
        op,
        pattern: Pattern::Sequential,
        read_percent: 0,
        size_kib,
        queue_depth,
        streams,
    }
}

#[test]
fn switching_between_objects_is_judged_per_device() {
    let profile = shipped("hdd-7200rpm").unwrap();
    let m = DeviceModel::from_profile(&profile);
    let one = closed_loop(&m, seq(Op::Write, 1024, 1, 1), 20, 200, 1);
    let four = closed_loop(&m, seq(Op::Write, 1024, 1, 4), 20, 200, 1);
    let t = m.service_time(false, 1 << 20, false);
    let cycle_ns = (t.fixed_ns + t.transfer_ns) as f64;
    let penalty_ns = profile
        .streams
        .iter()
        .find(|r| r.streams == 4)
        .unwrap()
        .switch_penalty_us
        * 1e3;
    let expect = |ns: f64| 1e9 / ns; // MiB/s of 1 MiB requests
    assert!(
        (one.bandwidth_mib_s / expect(cycle_ns) - 1.0).abs() < 1e-3,
        "{one:?}"
    );
    assert!(
        (four.bandwidth_mib_s / expect(cycle_ns + penalty_ns) - 1.0).abs() < 1e-3,
        "{four:?}"
    );
    // The table model of the same disk charges nothing: sequential on every object.
    let table = DeviceModel::preset("hdd").unwrap();
    let a = closed_loop(&table, seq(Op::Write, 1024, 1, 1), 20, 200, 1);
    let b = closed_loop(&table, seq(Op::Write, 1024, 1, 4), 20, 200, 1);
    assert!((a.bandwidth_mib_s / b.bandwidth_mib_s - 1.0).abs() < 1e-3);
}

fn varied_profile() -> Profile {
    let mut p = shipped("ssd-sata").unwrap();
    p.name = "varied".into();
    p.concurrency = 8;
    p.direction_switch_penalty_us = 40.0;
    p.variability = [(0.0, 0.6), (0.5, 0.9), (0.9, 1.4), (0.99, 3.0), (1.0, 6.0)]
        .iter()
        .map(|&(quantile, factor)| QuantileRow { quantile, factor })
        .collect();
    p.validate("varied").unwrap();
    p
}

#[test]
fn one_seed_gives_the_same_bytes_and_seeds_are_replications() {
    let m = DeviceModel::from_profile(&varied_profile());
    let point = seq(Op::Read, 64, 4, 1);
    let a = closed_loop(&m, point, 50, 2000, 7);
    assert_eq!(
        format!("{a:?}"),
        format!("{:?}", closed_loop(&m, point, 50, 2000, 7))
    );
    let b = closed_loop(&m, point, 50, 2000, 8);
    assert_ne!(a.latency_mean_us, b.latency_mean_us, "seeds must differ");
    // ... but measure the same device: the means agree within their sampling error.
    assert!((a.bandwidth_mib_s / b.bandwidth_mib_s - 1.0).abs() < 0.05);
    // Without a variability table every seed gives the same run.
    let plain = DeviceModel::from_profile(&shipped("ssd-sata").unwrap());
    assert_eq!(
        format!("{:?}", closed_loop(&plain, point, 50, 500, 7)),
        format!("{:?}", closed_loop(&plain, point, 50, 500, 8))
    );
}

#[test]
fn variability_follows_the_measured_distribution() {
    let p = varied_profile();
    let m = DeviceModel::from_profile(&p);
    // One request at a time: latency is the service time.
    let r = closed_loop(&m, seq(Op::Read, 64, 1, 1), 10, 20_000, 3);
    let t = m.service_time(true, 64 << 10, false);
    let mean_us = (t.fixed_ns + t.transfer_ns) as f64 / 1e3;
    assert!((r.latency_mean_us / mean_us - 1.0).abs() < 0.03, "{r:?}");
    let v = p.variability_normalized();
    for [q, us] in &r.latency_quantiles_us {
        if *q < 0.05 || *q > 0.95 {
            continue; // the tails need more samples than a unit test draws
        }
        let want = pfsqos_profile::interpolate(&v, *q) * mean_us;
        assert!(
            (us / want - 1.0).abs() < 0.05,
            "quantile {q}: {us} us, want {want}"
        );
    }
}

#[test]
fn a_disks_random_penalty_follows_its_rotation_and_seek_and_seeds_are_replications() {
    let p = shipped("hdd-7200rpm").unwrap();
    assert!(!p.random_penalty_variability.is_empty());
    let m = DeviceModel::from_profile(&p);
    let random = Point {
        pattern: Pattern::Random,
        ..seq(Op::Read, 4, 1, 1)
    };
    // One request at a time: latency is the service time, the table's plus a positioning
    // drawn from the table (mean: the profile's random penalty).
    let r = closed_loop(&m, random, 10, 20_000, 3);
    let t = m.service_time(true, 4 << 10, false);
    let base_us = (t.fixed_ns + t.transfer_ns) as f64 / 1e3;
    let want_mean_us = base_us + p.random_penalty_us;
    assert!(
        (r.latency_mean_us / want_mean_us - 1.0).abs() < 0.02,
        "{r:?}"
    );
    let v = p.random_penalty_variability_normalized();
    for [q, us] in &r.latency_quantiles_us {
        if *q < 0.05 || *q > 0.95 {
            continue; // the tails need more samples than a unit test draws
        }
        let want = base_us + pfsqos_profile::interpolate(&v, *q) * p.random_penalty_us;
        assert!(
            (us / want - 1.0).abs() < 0.05,
            "quantile {q}: {us} us, want {want}"
        );
    }
    // Rotation alone spreads one revolution: the middle half spans a good part of it.
    let at = |q: f64| {
        r.latency_quantiles_us
            .iter()
            .find(|[k, _]| (*k - q).abs() < 1e-9)
            .map(|[_, us]| *us)
            .expect("fio's quantiles")
    };
    assert!(at(0.75) - at(0.25) > 0.25 * 60e6 / 7200.0, "{r:?}");
    // One seed gives the same bytes; another is a replication of the same device.
    let again = closed_loop(&m, random, 10, 20_000, 3);
    assert_eq!(format!("{r:?}"), format!("{again:?}"));
    let other = closed_loop(&m, random, 10, 20_000, 4);
    assert_ne!(
        r.latency_mean_us, other.latency_mean_us,
        "seeds must differ"
    );
    assert!((r.bandwidth_mib_s / other.bandwidth_mib_s - 1.0).abs() < 0.03);
    // Sequential streams pay no random penalty (four pay switch penalties): they draw
    // nothing, every seed alike.
    let stream = seq(Op::Read, 1024, 1, 4);
    assert_eq!(
        format!("{:?}", closed_loop(&m, stream, 5, 200, 3)),
        format!("{:?}", closed_loop(&m, stream, 5, 200, 4))
    );
}

fn measure_plan(m: &DeviceModel, seed: u64) -> Vec<Measured> {
    let ranges = Ranges {
        sizes_kib: vec![4, 64, 1024],
        queue_depth_max: 64,
        streams_max: 16,
    };
    let plan = plan(&ranges, u64::MAX / 4).unwrap();
    plan.points
        .iter()
        .map(|p| {
            let point = Point {
                op: p.op,
                pattern: p.pattern,
                read_percent: p.read_percent,
                size_kib: p.size_kib,
                queue_depth: p.queue_depth,
                streams: p.streams,
            };
            closed_loop(m, point, 100, 3000, seed)
        })
        .collect()
}

#[test]
fn a_profile_calibrated_from_a_simulated_device_reproduces_it() {
    for original in [
        shipped("hdd-7200rpm").unwrap(),
        shipped("ssd-nvme").unwrap(),
        shipped("raid6-hdd-ost").unwrap(),
        varied_profile(),
    ] {
        let device = DeviceModel::from_profile(&original);
        let measured = measure_plan(&device, 11);
        let source = Source {
            kind: SourceKind::Fio,
            citation: "simulated".into(),
            date: "2026".into(),
            method: "closed loop".into(),
            host: String::new(),
            target: String::new(),
        };
        let calibrated = fit::fit("rt", "", source, measured.clone()).unwrap();
        let again = measure_plan(&DeviceModel::from_profile(&calibrated), 11);
        for (a, b) in measured.iter().zip(&again) {
            let tol = if original.variability.is_empty() {
                0.03
            } else {
                0.08
            };
            let d = b.bandwidth_mib_s / a.bandwidth_mib_s - 1.0;
            assert!(
                d.abs() < tol,
                "{}: {:?} {:?} {} KiB qd {} x{}: {:.1} MiB/s measured, {:.1} calibrated",
                original.name,
                a.op,
                a.pattern,
                a.size_kib,
                a.queue_depth,
                a.streams,
                a.bandwidth_mib_s,
                b.bandwidth_mib_s
            );
        }
    }
}

proptest! {
    /// Sequential service time never falls, and throughput never falls, as requests grow,
    /// for every shipped profile and in both directions.
    #[test]
    fn sequential_cost_grows_with_size(name in 0usize..4, a in 1u64..(32 << 10), b in 1u64..(32 << 10), read in any::<bool>()) {
        let p = shipped(pfsqos_profile::SHIPPED_NAMES[name]).unwrap();
        let m = DeviceModel::from_profile(&p);
        let (lo, hi) = (a.min(b) << 10, a.max(b) << 10);
        let t = |s: u64| { let t = m.service_time(read, s, false); (t.fixed_ns + t.transfer_ns) as f64 };
        prop_assert!(t(lo) <= t(hi));
        prop_assert!(lo as f64 / t(lo) <= hi as f64 / t(hi) * (1.0 + 1e-9));
    }

    /// Without a congestion curve, a deeper queue never serves less (work conservation), and
    /// more streams never serve more on a disk (each switch costs).
    #[test]
    fn deeper_queues_never_lose_and_streams_never_gain(qd in 1u32..32, n in 1u32..32) {
        let ssd = DeviceModel::from_profile(&shipped("ssd-nvme").unwrap());
        let a = closed_loop(&ssd, seq(Op::Read, 64, qd, 1), 50, 400, 1);
        let b = closed_loop(&ssd, seq(Op::Read, 64, qd + 1, 1), 50, 400, 1);
        prop_assert!(b.bandwidth_mib_s >= a.bandwidth_mib_s * (1.0 - 1e-6));
        let hdd = DeviceModel::from_profile(&shipped("hdd-7200rpm").unwrap());
        let one = closed_loop(&hdd, seq(Op::Write, 1024, 1, 1), 5, 50, 1);
        let many = closed_loop(&hdd, seq(Op::Write, 1024, 1, n), 5, 50, 1);
        prop_assert!(many.bandwidth_mib_s <= one.bandwidth_mib_s * (1.0 + 1e-6));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// Whatever the (valid) variability table, the service times one device draws follow it:
    /// every sampled quantile lies where the table puts it, within the empirical
    /// distribution's sampling error (Dvoretzky-Kiefer-Wolfowitz: at 5000 samples the
    /// empirical distribution is within 0.03 of the true one but with probability 2e-9).
    #[test]
    fn sampled_service_times_follow_any_variability_table(
        steps in proptest::collection::vec((0.05f64..1.0, 0.0f64..2.0), 1..6),
        first in 0.1f64..1.0,
        seed in 0u64..1000,
    ) {
        let total: f64 = steps.iter().map(|s| s.0).sum();
        let mut rows = vec![QuantileRow { quantile: 0.0, factor: first }];
        let (mut q, mut f) = (0.0, first);
        for (i, &(width, rise)) in steps.iter().enumerate() {
            q = if i + 1 == steps.len() { 1.0 } else { q + width / total };
            f += rise;
            rows.push(QuantileRow { quantile: q, factor: f });
        }
        let mut p = shipped("ssd-sata").unwrap();
        p.variability = rows;
        p.validate("prop").unwrap();
        let m = DeviceModel::from_profile(&p);
        // One request at a time: latency is the service time.
        let r = closed_loop(&m, seq(Op::Read, 64, 1, 1), 10, 5000, seed);
        let t = m.service_time(true, 64 << 10, false);
        let mean_us = (t.fixed_ns + t.transfer_ns) as f64 / 1e3;
        let v = p.variability_normalized();
        let at = |q: f64| pfsqos_profile::interpolate(&v, q.clamp(0.0, 1.0)) * mean_us;
        for [q, us] in &r.latency_quantiles_us {
            if *q < 0.05 || *q > 0.95 {
                continue;
            }
            // 1 % for the nanosecond rounding of the two parts.
            prop_assert!(
                *us >= at(q - 0.03) * 0.99 && *us <= at(q + 0.03) * 1.01,
                "quantile {}: {} us, the table gives {} .. {}", q, us, at(q - 0.03), at(q + 0.03)
            );
        }
    }
}
