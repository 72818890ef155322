//! `pfsqos tc-client` against the real kernel (issue #15, the tc actuator on client nodes that
//! are not pfsqos mounts): a live ossd runs the open-loop experiment (`pi-openloop`, a
//! staircase of client limits), the daemon polls it and sets the limit with tc on one end of
//! a veth pair this test creates (the other end in a network namespace of its own); `tc
//! qdisc show` must show the staircase's last level, with burst = rate x T_s, and SIGTERM
//! must bring back the qdisc the daemon found (`noqueue`, the kernel's default on a veth).
//!
//! Needs root and iproute2 (`ip`, `tc`); without them it prints why and passes. The namespace
//! and veth are removed by a Drop guard, on failure too. Waits are bounded polls.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{pfsqos, spawn_ready, Proc, WAIT_MAX};

/// Runs `program args`, returning its stdout, or its stderr on failure.
fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Some(format!(
            "not root (euid {euid}): veth pairs and tc need root"
        ));
    }
    for program in ["ip", "tc"] {
        if Command::new(program).arg("-V").output().is_err() {
            return Some(format!("'{program}' is missing: install iproute2"));
        }
    }
    None
}

/// The namespace and veth pair of one run; removed when dropped.
struct Veth {
    ns: String,
    host_if: String,
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = run("ip", &["link", "del", &self.host_if]);
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

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
    if let Some(reason) = skip_reason() {
        println!("skipped: {reason}");
        return;
    }
    let pid = std::process::id();
    let veth = Veth {
        ns: format!("pfsqos-tcc-{pid}"),
        host_if: format!("pftc{pid}h"),
    };
    let peer_if = format!("pftc{pid}n");
    if let Err(e) = run("ip", &["netns", "add", &veth.ns]).and_then(|_| {
        run(
            "ip",
            &[
                "link",
                "add",
                &veth.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &peer_if,
                "netns",
                &veth.ns,
            ],
        )
    }) {
        println!("skipped: cannot create a network namespace and veth pair: {e}");
        return;
    }
    run("ip", &["link", "set", &veth.host_if, "up"]).unwrap();
    let found = qdisc_show(&veth.host_if);
    let found_root = pfsqos_linux::parse_root_qdisc(&found).unwrap();
    assert!(found_root.is_kernel_default(), "{found}");

    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("cluster.key");
    std::fs::write(&key, "e2e-test-key-0123456789abcdef0123\n").unwrap();
    // The staircase: 3 MiB/s for 30 periods of 100 ms, then 5 MiB/s for good.
    let mut cmd = pfsqos();
    cmd.args(["ossd", "--listen", "127.0.0.1:0", "--ost"])
        .arg(tmp.path().join("ost0"))
        .arg("--key-file")
        .arg(&key)
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
