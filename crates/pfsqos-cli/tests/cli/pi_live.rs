//! PI control's identification on a live cluster (PI paper §4.2, §5.2): the ossd
//! runs the open-loop experiment (`--policy pi-openloop:...`, a staircase of client limits)
//! while fio writes through a mount, records (limit in force, device queue) per period with
//! `--control-record`, and `pfsqos pi identify --record` fits eq. 1 to that record and prints
//! the gains. The same run reads the control loop's cost per period from the ossd's metrics.
//!
//! The record is small and bounded (72 periods of 300 ms); the waits are bounded polls on the
//! record's length, never on time. What is asserted is that the live record is well-formed
//! and fitted or refused with the fit's own reason (a live plant may not vary enough), not
//! what a, b or R² come out as on this machine (they are printed).

use std::time::Duration;

use crate::common::{
    fio_writers, free_local_addr, metric, pfsqos, scrape_metrics, wait_record_rows, Cluster,
};

/// Periods the staircase below runs: 3 levels x 12 periods x 2 repeats.
const PERIODS: usize = 72;

/// One live staircase: the record's text, `pfsqos pi identify`'s output on it and the ossd's
/// metrics at the end.
struct Staircase {
    record: String,
    identify: std::process::Output,
    metrics: String,
}

/// Runs the staircase below with fio writing through one mount, `extra` added to the ossd's
/// options (a sensor), and fits its record.
fn run_staircase(extra: &[&str]) -> Staircase {
    let rec_dir = tempfile::tempdir().unwrap();
    let record = rec_dir.path().join("openloop.csv");
    let metrics = free_local_addr();
    // A 16 MiB/s OST; the staircase steps one client's limit across that rate, where the
    // device queue moves between empty and the client's window. Each hold (12 periods) is
    // longer than the smoothing window (7): identification smooths each hold apart.
    let mut args = vec![
        "--ceiling-bytes-per-s",
        "16777216",
        "--threads",
        "16",
        "--metrics-listen",
        &metrics,
        "--policy",
        "pi-openloop:from=14M:to=18M:levels=3:hold=12:repeats=2:ts_ms=300",
        "--brw-size-bytes",
        "1048576",
        "--control-record",
        record.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let cluster = Cluster::start(1, &args);
    let _fio = fio_writers(&cluster.mnts[0], "601", 8, 90);
    // The staircase runs from the ossd's start; rows appear once the mount is a client.
    let text = wait_record_rows(&record, PERIODS, Duration::from_secs(90));
    let parsed = pfsqos_core::control::pi::record::parse_record(&text).unwrap();
    assert!(parsed.len() >= PERIODS);
    let limits: std::collections::BTreeSet<u64> =
        parsed.iter().map(|r| r.period.limit_bytes_per_s).collect();
    assert!(limits.len() >= 3, "the staircase's levels: {limits:?}");
    let identify = pfsqos()
        .args(["pi", "identify", "--record"])
        .arg(&record)
        .args(["--ks-ms", "3000", "--empty", "0.2", "--window", "7"])
        .output()
        .unwrap();
    Staircase {
        record: text,
        identify,
        metrics: scrape_metrics(&metrics),
    }
}

/// Checks what is checkable of a live fit: the sampling time, and a fit or the fit's own
/// refusal (exit 1, the record named).
fn check_fit(run: &Staircase) {
    let (out, text) = (&run.identify, &run.record);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n{stderr}");
    // The record's times are the control thread's wall-clock readings, late by however long a
    // loaded machine made it wait: the median interval is near the 300 ms period, not exact.
    let ts_ms: f64 = stdout
        .split("sampling time ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a sampling time: {stdout}"));
    assert!((270.0..=330.0).contains(&ts_ms), "{stdout}");
    // What the live plant gives is not under the test's control: one run here (quiet machine)
    // kept the queue near empty at 16 MiB/s but not at 14, and the fit rightly refused to
    // separate a from b. So the test accepts the fit or that refusal, exit 1 with the record
    // named; the fit itself is checked on the simulated staircase (tests/cli.rs, the same
    // `fit_and_design`) and on synthetic data in core.
    if out.status.success() {
        assert!(stdout.contains("model (eq. 1"), "{stdout}");
        assert!(stdout.contains("R²"), "{stdout}");
        assert!(stdout.contains("run it: pi:a="), "{stdout}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}\nrecord:\n{text}");
        assert!(
            stderr.contains("openloop.csv: the record cannot separate a from b")
                || stderr.contains("openloop.csv: only "),
            "identify failed otherwise: {stderr}\nrecord:\n{text}"
        );
    }
}

#[test]
fn a_live_open_loop_record_is_fitted() {
    let run = run_staircase(&[]);
    check_fit(&run);
    // The control loop's cost per period, from the metrics.
    let m = &run.metrics;
    let periods = metric(m, "pfsqos_oss_control_periods_total ").unwrap();
    let cpu_ns = metric(m, "pfsqos_oss_control_cpu_seconds_total ").unwrap() * 1e9;
    let wall_ns = metric(m, "pfsqos_oss_control_wall_seconds_total ").unwrap() * 1e9;
    let median = metric(m, "pfsqos_oss_control_period_cpu_seconds ").unwrap() * 1e9;
    println!(
        "control loop: {periods} periods, mean CPU {:.0} ns, mean wall {:.0} ns, median CPU \
         {median} ns per period",
        cpu_ns / periods,
        wall_ns / periods
    );
    assert!(periods >= PERIODS as f64, "{periods}");
    assert!(cpu_ns > 0.0 && wall_ns > 0.0 && median > 0.0, "{m}");
}

/// A measurement for pi-control.md, not a check (run with `--ignored`): the same staircase
/// with the paper's sensor, the block device's `time_in_queue` under the OST's directory
/// (`--device-sensor block`): here this VM's one disk, which every build on the machine shares.
/// Prints the record's queue per level and the fit or its refusal.
#[test]
#[ignore = "a measurement for pi-control.md, not a check"]
fn a_live_open_loop_record_with_the_block_sensor() {
    let run = run_staircase(&["--device-sensor", "block"]);
    let rows = pfsqos_core::control::pi::record::parse_record(&run.record).unwrap();
    let mut per_level: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for r in &rows {
        per_level
            .entry(r.period.limit_bytes_per_s)
            .or_default()
            .push(r.period.queue_rpcs);
    }
    for (limit, q) in &per_level {
        let n = q.len() as f64;
        let mean = q.iter().sum::<f64>() / n;
        let max = q.iter().fold(0.0f64, |m, &x| m.max(x));
        println!(
            "limit {:.1} MiB/s: {} periods, block queue mean {mean:.3}, max {max:.3}",
            *limit as f64 / (1024.0 * 1024.0),
            q.len()
        );
    }
    check_fit(&run);
}

/// A record that is not one is refused with the line and the reason, exit code 2.
#[test]
fn a_malformed_record_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        ("", "no `time_s,limit_bytes_per_s,queue_rpcs` header"),
        ("limit,queue\n1,2\n", "line 1: expected the header"),
        (
            "time_s,limit_bytes_per_s,queue_rpcs\n0.3,1048576,1\n0.6,-5,1\n",
            "line 3: limit_bytes_per_s",
        ),
        (
            "time_s,limit_bytes_per_s,queue_rpcs\n0.3,1048576,1\n",
            "1 rows",
        ),
    ] {
        let path = dir.path().join("bad.csv");
        std::fs::write(&path, text).unwrap();
        let out = pfsqos()
            .args(["pi", "identify", "--record"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {err}");
        assert!(err.contains(needle), "{text:?}: {err}");
    }
    let out = pfsqos()
        .args(["pi", "identify", "--record"])
        .arg(dir.path().join("absent.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
