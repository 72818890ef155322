//! `pfsqos tc-client` against the real kernel (the tc actuator on client nodes that
//! are not pfsqos mounts): a live ossd runs the open-loop experiment (`pi-openloop`, a
//! staircase of client limits), the daemon polls it and sets the limit with tc on one end of
//! a veth pair this test creates (the other end in a network namespace of its own); `tc
//! qdisc show` must show the staircase's last level, with burst = rate x T_s, and SIGTERM
//! must bring back the qdisc the daemon found (`noqueue`, the kernel's default on a veth).
//!
//! The second test closes the loop through such a node: a mount inside the namespace (its own
//! limiter off, `--ignore-server-limit`) is the node's storage client, tc-client on the
//! namespace's end of the pair applies the ossd's PI limit to its traffic, and fio writes
//! through the mount: the ossd's queue must be held near its target and the qdisc's rate must
//! be the controller's decisions (its control record).
//!
//! Needs root and iproute2 (`ip`, `tc`); without them it prints why and passes. The namespace
//! and veth (`pfsqos_linux::netns`) are removed when dropped, on failure too. Waits are
//! bounded polls.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    fio_writers, free_local_addr, pfsqos, spawn_ready, wait_record_rows, Proc, WAIT_MAX,
};
use pfsqos_linux::netns::{run, unavailable_reason, VethNamespace};

fn qdisc_show(dev: &str) -> String {
    run("tc", &["qdisc", "show", "dev", dev]).unwrap()
}

/// Polls `tc qdisc show dev` until `done` holds on its output (bounded).
fn wait_qdisc(dev: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let text = qdisc_show(dev);
        if done(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{what} never showed on {dev}; last: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tc_client(key: &std::path::Path, oss: &str, dev: &str, log: &std::path::Path) -> Command {
    let mut cmd = pfsqos();
    cmd.args(["tc-client", "--oss", oss, "--dev", dev, "--key-file"])
        .arg(key)
        .args(["--period-ms", "100", "--poll-ms", "50"])
        .stderr(std::fs::File::create(log).unwrap());
    cmd
}

#[test]
fn tc_client_applies_the_ossds_limit_and_restores_the_qdisc() {
    if let Some(reason) = unavailable_reason() {
        pfsqos_testkit::skip(
            "tc_client_applies_the_ossds_limit_and_restores_the_qdisc",
            &reason,
        );
        return;
    }
    let veth = match VethNamespace::create("tcc") {
        Ok(v) => v,
        Err(e) => {
            pfsqos_testkit::skip(
                "tc_client_applies_the_ossds_limit_and_restores_the_qdisc",
                &format!("cannot create a network namespace and veth pair: {e}"),
            );
            return;
        }
    };
    let found = qdisc_show(&veth.host_if);
    let found_root = pfsqos_linux::parse_root_qdisc(&found).unwrap();
    assert!(found_root.is_kernel_default(), "{found}");

    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("cluster.key");
    std::fs::write(&key, "e2e-test-key-0123456789abcdef0123\n").unwrap();
    let server_key = tmp.path().join("server.key");
    std::fs::write(&server_key, "e2e-server-key-fedcba9876543210\n").unwrap();
    // The staircase: 3 MiB/s for 30 periods of 100 ms, then 5 MiB/s for good.
    let mut cmd = pfsqos();
    cmd.args(["ossd", "--listen", "127.0.0.1:0", "--ost"])
        .arg(tmp.path().join("ost0"))
        .arg("--key-file")
        .arg(&key)
        .arg("--server-key-file")
        .arg(&server_key)
        .args([
            "--policy",
            "pi-openloop:from=3M:to=5M:levels=2:hold=30:ts_ms=100",
            "--capacity-rpcs-per-s",
            "100",
        ]);
    let (mut ossd, oss_addr) = spawn_ready(
        cmd,
        "ossd listening on ",
        &tmp.path().join("ossd.log"),
        None,
    );

    // An administrator's qdisc is not taken over without --force.
    run(
        "tc",
        &[
            "qdisc",
            "add",
            "dev",
            &veth.host_if,
            "root",
            "tbf",
            "rate",
            "1mbit",
            "burst",
            "10kb",
            "latency",
            "50ms",
        ],
    )
    .unwrap();
    let log = tmp.path().join("tc-client-refused.log");
    let status = tc_client(&key, &oss_addr, &veth.host_if, &log)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("not the kernel's default"), "{err}");
    assert!(
        qdisc_show(&veth.host_if).contains("rate 1Mbit"),
        "the administrator's qdisc is left alone"
    );
    run("tc", &["qdisc", "del", "dev", &veth.host_if, "root"]).unwrap();

    let log = tmp.path().join("tc-client.log");
    let (mut client, dev) = spawn_ready(
        tc_client(&key, &oss_addr, &veth.host_if, &log),
        "tc-client on ",
        &log,
        None,
    );
    assert!(dev.starts_with(&veth.host_if), "{dev}");
    let rate_bytes_per_s: u64 = 5 << 20;
    let text = wait_qdisc(&veth.host_if, "the staircase's last level", |text| {
        pfsqos_linux::parse_tbf_show(text)
            .ok()
            .flatten()
            .is_some_and(|s| {
                s.rate_bytes_per_s.abs_diff(rate_bytes_per_s) <= rate_bytes_per_s / 100
            })
    });
    let shown = pfsqos_linux::parse_tbf_show(&text).unwrap().unwrap();
    // burst = rate x T_s (100 ms), quantised by the kernel.
    let burst_bytes = rate_bytes_per_s / 10;
    assert!(
        shown.burst_bytes.abs_diff(burst_bytes) <= burst_bytes / 20,
        "{shown:?} against a burst of {burst_bytes} B"
    );
    println!("limited: {}", text.trim());

    let status = client.terminate();
    assert!(
        status.success(),
        "tc-client exit {status}: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let restored = qdisc_show(&veth.host_if);
    assert_eq!(
        pfsqos_linux::parse_root_qdisc(&restored).unwrap(),
        found_root,
        "restored: {restored}"
    );
    ossd.terminate();
    drop::<Proc>(ossd);
}

/// The interface name is data: one that the kernel could not have is refused before anything
/// runs (no root needed).
#[test]
fn tc_client_refuses_an_invalid_interface_name() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("cluster.key");
    std::fs::write(&key, "e2e-test-key-0123456789abcdef0123\n").unwrap();
    for dev in ["a/b", "eth0 ; reboot", "", "x234567890123456"] {
        let out = pfsqos()
            .args([
                "tc-client",
                "--oss",
                "127.0.0.1:1",
                "--dev",
                dev,
                "--key-file",
            ])
            .arg(&key)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{dev:?}: {err}");
        assert!(err.contains("invalid interface name"), "{dev:?}: {err}");
    }
}

/// Target of the loop below, in RPCs at the ossd's I/O threads (the mount's window is 8).
const LOOP_TARGET_RPCS: f64 = 2.0;
/// Control periods the loop runs before its record is read; the first `LOOP_WARMUP` are
/// left out (the limit descends from `bw_max` and the queue settles).
const LOOP_PERIODS: usize = 75;
const LOOP_WARMUP: usize = 15;

/// `cmd` run by `nsenter --net=NS`: in the namespace's network, in this mount namespace (a
/// FUSE mount made there is seen here).
fn in_netns(veth: &VethNamespace, cmd: &Command) -> Command {
    let mut wrapped = Command::new("nsenter");
    wrapped
        .arg(format!("--net={}", veth.ns_path().display()))
        .arg("--")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    wrapped
}

/// The PI loop closed through a node limited by tc, the paper's actuator (§3.3): see the
/// module doc. Properties, not rates: the queue per period after warm-up is near the target
/// and well below the mount's window; every rate tc showed on the node's interface during the
/// run is one the controller decided (in its record, within tc's rounding), and it changed.
#[test]
fn a_pi_loop_through_a_tc_client_node_holds_the_queue() {
    if let Some(reason) = unavailable_reason() {
        pfsqos_testkit::skip(
            "a_pi_loop_through_a_tc_client_node_holds_the_queue",
            &reason,
        );
        return;
    }
    for (program, arg) in [("nsenter", "--version"), ("fio", "--version")] {
        if Command::new(program).arg(arg).output().is_err() {
            pfsqos_testkit::skip(
                "a_pi_loop_through_a_tc_client_node_holds_the_queue",
                &format!("'{program}' is missing"),
            );
            return;
        }
    }
    if !Path::new("/dev/fuse").exists() {
        pfsqos_testkit::skip(
            "a_pi_loop_through_a_tc_client_node_holds_the_queue",
            "no /dev/fuse",
        );
        return;
    }
    let veth = match VethNamespace::create("loop") {
        Ok(v) => v,
        Err(e) => {
            pfsqos_testkit::skip(
                "a_pi_loop_through_a_tc_client_node_holds_the_queue",
                &format!("cannot create a network namespace and veth pair: {e}"),
            );
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("cluster.key");
    std::fs::write(&key, "e2e-test-key-0123456789abcdef0123\n").unwrap();
    let server_key = tmp.path().join("server.key");
    std::fs::write(&server_key, "e2e-server-key-fedcba9876543210\n").unwrap();
    let record = tmp.path().join("pi.csv");
    let metrics = free_local_addr();
    // The ossd and the MDS on the root namespace's end of the pair: the node reaches them
    // only through the veth, so all its storage traffic leaves by the shaped interface.
    let host = veth.host_ip.to_string();
    let mut cmd = pfsqos();
    cmd.args(["ossd", "--listen", &format!("{host}:0"), "--ost"])
        .arg(tmp.path().join("ost0"))
        .arg("--key-file")
        .arg(&key)
        .arg("--server-key-file")
        .arg(&server_key)
        .args([
            "--ceiling-bytes-per-s",
            "16777216",
            "--threads",
            "16",
            "--metrics-listen",
            &metrics,
            "--policy",
            // The gains of fio.rs's pi test: one client on a 16 MiB/s OST.
            "pi:a=1:b=0.3:ks_ms=3000:mp=0.02:target=2:bw_min=1M:bw_max=64M",
            "--brw-size-bytes",
            "1048576",
            "--control-record",
        ])
        .arg(&record);
    let (ossd, oss_addr) = spawn_ready(
        cmd,
        "ossd listening on ",
        &tmp.path().join("ossd.log"),
        None,
    );
    let mut cmd = pfsqos();
    cmd.args(["mds", "--listen", &format!("{host}:0"), "--db"])
        .arg(tmp.path().join("mds.db"))
        .arg("--key-file")
        .arg(&key)
        .arg("--server-key-file")
        .arg(&server_key)
        .args(["--oss", &format!("{oss_addr}:1")]);
    let (mds, mds_addr) = spawn_ready(cmd, "mds listening on ", &tmp.path().join("mds.log"), None);

    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mut cmd = pfsqos();
    cmd.arg("mount")
        .arg(&mnt)
        .args(["--mds", &mds_addr, "--jobid-var", "SLURM_JOB_ID"])
        .args([
            "--brw-size-bytes",
            "1048576",
            "--ignore-server-limit",
            "--key-file",
        ])
        .arg(&key);
    let mount_log = tmp.path().join("mount.log");
    let (mount, _) = spawn_ready(
        in_netns(&veth, &cmd),
        "mount ready on ",
        &mount_log,
        Some(&mnt),
    );

    let client_log = tmp.path().join("tc-client.log");
    let mut cmd = pfsqos();
    cmd.args([
        "tc-client",
        "--oss",
        &oss_addr,
        "--dev",
        &veth.ns_if,
        "--key-file",
    ])
    .arg(&key)
    .args(["--period-ms", "300", "--poll-ms", "50"]);
    // tc-client reads the interface's MTU from /sys/class/net, which shows the namespace's
    // interfaces only where sysfs was mounted inside it: `ip netns exec` does that (in a
    // mount namespace of its own, which tc-client, unlike the mount, can live in).
    let mut wrapped = Command::new("ip");
    wrapped
        .args(["netns", "exec", &veth.ns])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    let (mut client, _) = spawn_ready(wrapped, "tc-client on ", &client_log, None);

    let fio = fio_writers(&mnt, "701", 8, 120);
    // Sample the node's qdisc while the loop runs, until the record holds the periods wanted.
    let mut shown_rates = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = veth.ns_qdisc_show().unwrap();
        if let Some(tbf) = pfsqos_linux::parse_tbf_show(&text).unwrap() {
            shown_rates.push(tbf.rate_bytes_per_s);
        }
        let rows = std::fs::read_to_string(&record)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("time_s"))
            .count();
        if rows >= LOOP_PERIODS {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the record has {rows} rows, not {LOOP_PERIODS}; ossd log:\n{}",
            std::fs::read_to_string(tmp.path().join("ossd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Two periods more: the last limits sampled are recorded as the limit in force.
    let text = wait_record_rows(&record, LOOP_PERIODS + 2, Duration::from_secs(30));
    drop(fio);
    let rows = pfsqos_core::control::pi::record::parse_record(&text).unwrap();

    let queue: Vec<f64> = rows
        .iter()
        .skip(LOOP_WARMUP)
        .map(|r| r.period.queue_rpcs)
        .collect();
    let n = queue.len() as f64;
    let mean = queue.iter().sum::<f64>() / n;
    let sd = (queue.iter().map(|q| (q - mean) * (q - mean)).sum::<f64>() / n).sqrt();
    let limits: Vec<u64> = rows.iter().map(|r| r.period.limit_bytes_per_s).collect();
    let limit_mean_mib =
        limits.iter().skip(LOOP_WARMUP).sum::<u64>() as f64 / n / (1024.0 * 1024.0);
    let mut distinct = shown_rates.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let unmatched: Vec<u64> = shown_rates
        .iter()
        .copied()
        .filter(|&r| !limits.iter().any(|&l| r.abs_diff(l) <= l / 50))
        .collect();
    println!(
        "queue per period after {LOOP_WARMUP}: mean {mean:.2} (target {LOOP_TARGET_RPCS}), sd \
         {sd:.2} over {} periods; limit mean {limit_mean_mib:.2} MiB/s; tc showed {} samples, \
         {} distinct rates, {} not in the record",
        queue.len(),
        shown_rates.len(),
        distinct.len(),
        unmatched.len()
    );
    assert!(
        (0.5..=5.0).contains(&mean),
        "the loop should hold the queue near {LOOP_TARGET_RPCS}, well below the mount's window \
         of 8: mean {mean:.2}\n{text}"
    );
    assert!(
        distinct.len() >= 3,
        "tc's rate should follow the controller's changing decisions: {distinct:?}"
    );
    // Samples are taken between a decision and its statement reaching the node, so a rate
    // may lag by a period; every one must still be a limit the controller decided.
    assert!(
        unmatched.len() * 10 <= shown_rates.len(),
        "rates tc showed that the controller never decided: {unmatched:?}\nrecord:\n{text}"
    );
    // The mount's own limiter never limited: tc alone shaped the node.
    let mount_text = std::fs::read_to_string(&mount_log).unwrap_or_default();
    assert!(
        !mount_text.contains("outgoing limit changed"),
        "{mount_text}"
    );

    let status = client.terminate();
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(&client_log).unwrap_or_default()
    );
    let restored = veth.ns_qdisc_show().unwrap();
    assert!(
        pfsqos_linux::parse_root_qdisc(&restored)
            .unwrap()
            .is_kernel_default(),
        "{restored}"
    );
    // Mounts first, then the daemons.
    drop::<Proc>(mount);
    drop::<Proc>(mds);
    drop::<Proc>(ossd);
    drop(tmp);
}
