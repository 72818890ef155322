//! `pfsqos up`, `stat` and `down` with the real binary: a loopback cluster from a temporary
//! cluster file (ports picked by the daemons), with and without the FUSE mount, and the
//! default layout of `pfsqos up` without a file. The mount tests need /dev/fuse and root, as
//! `mount_durability.rs`. Every wait polls with a deadline; nothing sleeps for correctness.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pfsqos_core::model::{JobId, LNet, NetKind, Nid};
use pfsqos_wire::client::{Identity, MdsClient, OssClient};
use pfsqos_wire::protocol::Role;

fn pfsqos(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `pfsqos down` on drop, so a failed assertion leaves no daemon behind.
struct Up {
    dir: PathBuf,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = pfsqos(&["down", "c.toml"], &self.dir);
    }
}

/// `Up` for `pfsqos up` without a cluster file: `pfsqos down` without one, in the same cwd.
struct UpDefault {
    dir: PathBuf,
}

impl Drop for UpDefault {
    fn drop(&mut self) {
        let _ = pfsqos(&["down"], &self.dir);
    }
}

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, r)| r.trim().chars().next())
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The address after `prefix` in `up`'s output.
fn addr_after(out: &str, prefix: &str) -> std::net::SocketAddr {
    out.lines()
        .find_map(|l| l.split_once(prefix))
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no `{prefix}` in\n{out}"))
        .parse()
        .unwrap()
}

const CLUSTER: &str = r#"
[cluster]
state_dir = "st"
[mds]
listen = "127.0.0.1:0"
metrics_listen = "127.0.0.1:0"
[[oss]]
listen = "127.0.0.1:0"
osts = ["data/ost0", "data/ost1"]
metrics_listen = "127.0.0.1:0"
[mount]
enabled = false
"#;

/// `GET /metrics` over a plain socket; returns the body.
fn scrape(url: &str) -> String {
    use std::io::{Read, Write};
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("not a metrics URL: {url}"));
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\n\r\n",
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
    resp.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// Writes as job `j1` until told to stop; counts the bytes written.
fn traffic(
    addr: std::net::SocketAddr,
    key: Vec<u8>,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut c = OssClient::connect(addr, &key, Role::Client).await.unwrap();
            let id = Identity {
                job: JobId::new("j1").unwrap(),
                uid: 0,
                gid: 0,
                nid: Nid::ipv4(
                    127,
                    0,
                    0,
                    1,
                    LNet {
                        kind: NetKind::Tcp,
                        num: 0,
                    },
                ),
                job_nodes: None,
            };
            let data = vec![1u8; 64 << 10];
            let mut off = 0u64;
            while !stop.load(Ordering::Relaxed) {
                c.write(&id, 0, 1, off % (16 << 20), &data, false)
                    .await
                    .unwrap();
                off += data.len() as u64;
                written.fetch_add(data.len() as u64, Ordering::Relaxed);
            }
        })
    })
}

/// `pfsqos up c.toml | head -1`: a stdout whose reader is gone (every write fails
/// with EPIPE) does not stop `up` between two roles: every role starts, `up` succeeds and says
/// the output was lost, and `down` stops them all.
#[test]
fn up_with_a_broken_stdout_starts_every_role() {
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    std::fs::write(dir.join("c.toml"), CLUSTER).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["up", "c.toml"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Closing the pipe's only reader: the first write to stdout fails.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let _guard = Up { dir: dir.clone() };
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("output lost"),
        "{}",
        text(&out.stderr)
    );
    for role in ["oss0", "mds"] {
        let pid = read_pid(&dir.join(format!("st/{role}.pid")));
        assert!(pid_alive(pid), "{role} is not running");
    }
}

#[test]
fn up_stat_record_and_down_with_the_real_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    std::fs::write(dir.join("c.toml"), CLUSTER).unwrap();

    let out = pfsqos(&["up", "c.toml"], &dir);
    let _guard = Up { dir: dir.clone() };
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let oss = addr_after(&stdout, "ossd listening on ");
    let mds = addr_after(&stdout, "mds listening on ");
    let urls: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_once("metrics on ").map(|(_, u)| u.trim()))
        .collect();
    assert_eq!(urls.len(), 2, "ossd and mds metrics: {stdout}");
    assert!(stdout.contains("pfsqos down"), "{stdout}");

    // The key is private; pid files name live processes.
    let key_file = dir.join("st/cluster.key");
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let key = pfsqos_wire::key::read_key_file(&key_file).unwrap();
    let pids = [
        read_pid(&dir.join("st/oss0.pid")),
        read_pid(&dir.join("st/mds.pid")),
    ];
    assert!(pids.iter().all(|&p| pid_alive(p)));
    assert!(!dir.join("st/mount.pid").exists());

    // Both daemons answer: lctl (which proves the servers' key) on the ossd, statfs on the
    // MDS, which knows the real port.
    let server_key_file = dir.join("st/server.key");
    let key_arg = server_key_file.to_str().unwrap();
    let l = pfsqos(
        &[
            "lctl",
            "--server",
            &oss.to_string(),
            "--key-file",
            key_arg,
            "get_param",
            "ost.OSS.ost_io.nrs_policies",
        ],
        &dir,
    );
    assert!(l.status.success(), "{}", text(&l.stderr));
    assert!(text(&l.stdout).contains("regular_requests:"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let statfs = rt.block_on(async {
        let mut c = MdsClient::connect(mds, &key).await.unwrap();
        c.statfs().await.unwrap()
    });
    assert_eq!(statfs.osts.len(), 2);
    assert!(statfs.osts.iter().all(|o| o.oss_addr == oss.to_string()));

    // A second `up` refuses.
    let again = pfsqos(&["up", "c.toml"], &dir);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already up: oss:0 (pid"),
        "{}",
        text(&again.stderr)
    );

    // stat sees the job while it writes, and records the run for the report.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = traffic(oss, key.clone(), stop.clone(), written.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    while written.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "no write went through");
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = pfsqos(
        &[
            "stat",
            "--server",
            &oss.to_string(),
            "--key-file",
            key_arg,
            "-i",
            "0.2",
            "-n",
            "3",
            "--record",
            "rec",
        ],
        &dir,
    );
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let stat_out = text(&s.stdout);
    assert!(s.status.success(), "{stat_out}\n{}", text(&s.stderr));
    assert_eq!(
        stat_out.matches("---\ntimestamp: ").count(),
        3,
        "{stat_out}"
    );
    assert!(
        stat_out.contains("  pfsqos-OST0000:\n  - j1: {ops: "),
        "{stat_out}"
    );
    assert!(stat_out.contains("  pfsqos-OST0001: []\n"), "{stat_out}");
    let csv = std::fs::read_to_string(dir.join("rec/timeseries.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(pfsqos_report::CSV_HEADER));
    let j1_bytes: u64 = lines
        .filter(|l| l.contains(",j1,pfsqos-OST0000,"))
        .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(j1_bytes > 0, "{csv}");
    assert_eq!(j1_bytes % (64 << 10), 0, "whole writes only: {csv}");

    // With no I/O during the record, stat says that nothing ran and writes no record.
    let idle = pfsqos(
        &[
            "stat",
            "--server",
            &oss.to_string(),
            "--key-file",
            key_arg,
            "-i",
            "0.1",
            "-n",
            "2",
            "--record",
            "idle",
        ],
        &dir,
    );
    assert!(!idle.status.success(), "{}", text(&idle.stdout));
    assert!(
        text(&idle.stderr).contains("nothing ran"),
        "{}",
        text(&idle.stderr)
    );
    assert!(!dir.join("idle/summary.json").exists());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rec/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["jobs"][0]["job_id"], "j1", "{summary}");
    let html = std::fs::read_to_string(dir.join("rec/report.html")).unwrap();
    assert!(html.contains("Live run recorded by pfsqos stat"));

    // The daemons' metrics endpoints, started from the cluster file, show the same traffic.
    let oss_metrics = scrape(urls[0]);
    let served: u64 = oss_metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"pfsqos_ost_job_write_bytes_total{ost="pfsqos-OST0000",job="j1"} "#)
        })
        .unwrap_or_else(|| panic!("{oss_metrics}"))
        .parse()
        .unwrap();
    assert_eq!(served, written.load(Ordering::Relaxed));
    let mds_metrics = scrape(urls[1]);
    assert!(
        mds_metrics.contains("pfsqos_mds_ops_total{op=\"statfs\"} 1\n"),
        "{mds_metrics}"
    );

    // down stops everything and keeps the data.
    let d = pfsqos(&["down", "c.toml"], &dir);
    assert!(d.status.success(), "{}", text(&d.stderr));
    let down_out = text(&d.stdout);
    assert!(down_out.contains("stopped mds (pid"), "{down_out}");
    assert!(down_out.contains("stopped oss:0 (pid"), "{down_out}");
    assert!(!down_out.contains("SIGKILL"), "{down_out}");
    assert!(pids.iter().all(|&p| !pid_alive(p)));
    assert!(!dir.join("st/oss0.pid").exists() && !dir.join("st/mds.pid").exists());
    assert!(dir.join("data/ost0/objects/0000000000000001").exists());
    assert!(dir.join("st/mds.db").exists() && key_file.exists());
    let log = std::fs::read_to_string(dir.join("st/oss0.log")).unwrap();
    assert!(log.contains("signal=\"SIGTERM\""), "{log}");
    assert!(log.contains("ossd stopped"), "{log}");

    let again = pfsqos(&["down", "c.toml"], &dir);
    assert!(again.status.success());
    assert!(text(&again.stdout).starts_with("nothing running"));
}

/// Two loopback ports free a moment ago (the OSSs must know each other's port before they
/// start to be DSFQ peers, so port 0 will not do).
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// `batches_in` of an ossd's DSFQ synchronization counters (batches its peers sent over
/// the network), read with `lctl` as the tools find it (no `--key-file`: the servers' key
/// `up` recorded).
fn batches_in(dir: &Path, oss: &str) -> u64 {
    let out = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["lctl", "--server", oss, "get_param", "-n"])
        .arg("ost.OSS.ost_io.nrs_dsfq_sync_stats")
        .current_dir(dir)
        .env("PFSQOS_CLUSTER", dir.join("c.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("batches_in: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no batches_in in {}", text(&out.stdout)))
}

/// `up` generates the servers' own key next to the cluster key (mode 0600) and gives it to
/// every ossd and the MDS: a client node, which holds only the cluster key, can act as none
/// of the server roles (an ossd's DSFQ peer, the MDS, an `lctl`, an OSS reporting to the
/// MDS), while the cluster's own ossds exchange their service reports and `lctl` run as the
/// tools find the cluster proves the servers' key.
#[test]
fn up_gives_its_servers_a_key_no_client_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let ports = free_ports(2);
    std::fs::write(
        dir.join("c.toml"),
        format!(
            "[cluster]\nstate_dir = \"st\"\n[mds]\nlisten = \"127.0.0.1:0\"\n\
             [[oss]]\nlisten = \"127.0.0.1:{}\"\nosts = [\"data/ost0\"]\n\
             [[oss]]\nlisten = \"127.0.0.1:{}\"\nosts = [\"data/ost1\"]\n\
             [mount]\nenabled = false\n",
            ports[0], ports[1]
        ),
    )
    .unwrap();
    let out = pfsqos(&["up", "c.toml"], &dir);
    let _guard = Up { dir: dir.clone() };
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("generated server key "), "{stdout}");
    let server_key_file = dir.join("st/server.key");
    let mode = std::fs::metadata(&server_key_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let cluster_key = pfsqos_wire::key::read_key_file(&dir.join("st/cluster.key")).unwrap();
    let server_key = pfsqos_wire::key::read_key_file(&server_key_file).unwrap();
    assert_ne!(cluster_key, server_key);
    let oss: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let mds = addr_after(&stdout, "mds listening on ");

    // lctl with the cluster key is refused; as the tools find the cluster, it proves the
    // servers' key: DSFQ by job id on both OSSs, a report on every request.
    let with_cluster_key = pfsqos(
        &[
            "lctl",
            "--server",
            &oss[0],
            "--key-file",
            dir.join("st/cluster.key").to_str().unwrap(),
            "get_param",
            "ost.OSS.ost_io.nrs_policies",
        ],
        &dir,
    );
    assert!(!with_cluster_key.status.success());
    for o in &oss {
        for p in [
            "ost.OSS.ost_io.nrs_policies=dsfq jobid",
            "ost.OSS.ost_io.nrs_dsfq_threshold=0",
        ] {
            let l = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
                .args(["lctl", "--server", o, "set_param", p])
                .current_dir(&dir)
                .env("PFSQOS_CLUSTER", dir.join("c.toml"))
                .output()
                .unwrap();
            assert!(l.status.success(), "{p}: {}", text(&l.stderr));
        }
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let oss0: std::net::SocketAddr = oss[0].parse().unwrap();
    rt.block_on(async {
        for role in [Role::Oss, Role::Mds, Role::Lctl] {
            assert!(
                OssClient::connect(oss0, &cluster_key, role).await.is_err(),
                "the cluster key was taken as {role:?} by the ossd"
            );
        }
        assert!(MdsClient::connect_as(mds, &cluster_key, Role::Oss)
            .await
            .is_err());
        assert!(OssClient::connect(oss0, &cluster_key, Role::Client)
            .await
            .is_ok());
    });
    assert_eq!(
        batches_in(&dir, &oss[0]),
        0,
        "a report with no I/O anywhere"
    );

    // I/O on the second OSS: its ossd, holding the servers' key, reports to the first.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = traffic(
        oss[1].parse().unwrap(),
        cluster_key.clone(),
        stop.clone(),
        written.clone(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while batches_in(&dir, &oss[0]) == 0 {
        assert!(
            Instant::now() < deadline,
            "the first ossd never heard the second's reports ({} bytes written)",
            written.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

#[test]
fn a_failed_role_stops_what_up_started() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    // The MDS port is taken, so the MDS fails after the OSS started.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    std::fs::write(
        dir.join("c.toml"),
        CLUSTER.replace(
            "[mds]\nlisten = \"127.0.0.1:0\"",
            &format!("[mds]\nlisten = \"127.0.0.1:{port}\""),
        ),
    )
    .unwrap();
    let out = pfsqos(&["up", "c.toml"], &dir);
    let _guard = Up { dir: dir.clone() };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("pfsqos: error: mds failed to start (stopped oss:0 again): mds exited"),
        "{err}"
    );
    assert!(err.contains("last lines of"), "{err}");
    assert!(
        err.contains(&format!(
            "listening on 127.0.0.1:{port}: Address already in use"
        )),
        "{err}"
    );
    assert!(!dir.join("st/oss0.pid").exists());
    assert!(!dir.join("st/mds.pid").exists());
    let log = std::fs::read_to_string(dir.join("st/oss0.log")).unwrap();
    assert!(log.contains("ossd stopped"), "{log}");
}

#[test]
fn a_bad_cluster_field_gives_the_exact_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(&file, "[[oss]]\nthreads = 0\n").unwrap();
    let out = pfsqos(&["up", file.to_str().unwrap()], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "pfsqos: error: {}: field `oss[0].threads`: value `0`: must be 1..=1024\n",
            file.display()
        )
    );
    assert!(
        !tmp.path().join("pfsqos-state").exists(),
        "nothing was started"
    );
    let bad_role = pfsqos(&["up", "--only", "oss"], tmp.path());
    assert_eq!(bad_role.status.code(), Some(2));
    assert!(text(&bad_role.stderr).contains("expected mds, oss:N (N from 0) or mount"));
}

fn require_fuse() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: the mount tests need the FUSE device (modprobe fuse) and root"
    );
}

/// Whether `path` is a mount point, from this process's /proc/self/mountinfo (field 5).
fn mounted(path: &Path) -> bool {
    let want = path.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// Deterministic bytes (xorshift), so a wrong offset or a lost block changes the digest.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn sha(b: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(b).into()
}

/// Copies `src` to `dst` with `dd ... conv=fsync` as a child process whose environment
/// holds `SLURM_JOB_ID=job`, so the mount tags its RPCs with that JobID.
fn dd_as_job(src: &Path, dst: &Path, job: &str) {
    let out = Command::new("dd")
        .arg(format!("if={}", src.display()))
        .arg(format!("of={}", dst.display()))
        .args(["bs=256k", "conv=fsync"])
        .env("SLURM_JOB_ID", job)
        .output()
        .unwrap();
    assert!(out.status.success(), "dd: {}", text(&out.stderr));
}

/// `job`'s write bytes summed over every OST, from `lctl get_param obdfilter.*.job_stats`
/// parsed with the parser `stat` and the Lustre adapter use.
fn job_write_bytes(dir: &Path, oss: &str, key_file: &Path, job: &str) -> Option<u64> {
    let l = pfsqos(
        &[
            "lctl",
            "--server",
            oss,
            "--key-file",
            key_file.to_str().unwrap(),
            "get_param",
            "obdfilter.*.job_stats",
        ],
        dir,
    );
    assert!(l.status.success(), "{}", text(&l.stderr));
    let mut found = None;
    for (_, entries) in pfsqos_core::jobstats::parse_lctl_job_stats(&text(&l.stdout)).unwrap() {
        for e in entries.iter().filter(|e| e.job_id.as_str() == job) {
            let c = e.counter(pfsqos_core::jobstats::OstCounter::WriteBytes);
            *found.get_or_insert(0) += c.sum;
        }
    }
    found
}

const CLUSTER_MOUNT: &str = r#"
[cluster]
state_dir = "st"
[mds]
listen = "127.0.0.1:0"
default_stripe_count = 2
default_stripe_size_bytes = 65536
[[oss]]
listen = "127.0.0.1:0"
osts = ["data/ost0", "data/ost1"]
[mount]
enabled = true
path = "mnt"
jobid_var = "SLURM_JOB_ID"
"#;

/// `pfsqos up` of [`CLUSTER_MOUNT`] in a new directory: (its holder, the directory, the
/// guard that runs `down`, `up`'s output).
fn up_with_mount() -> (tempfile::TempDir, PathBuf, Up, Output) {
    up_with(CLUSTER_MOUNT)
}

/// [`up_with_mount`] of the cluster file `cluster`.
fn up_with(cluster: &str) -> (tempfile::TempDir, PathBuf, Up, Output) {
    require_fuse();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    std::fs::write(dir.join("c.toml"), cluster).unwrap();
    let out = pfsqos(&["up", "c.toml"], &dir);
    let guard = Up { dir: dir.clone() };
    (tmp, dir, guard, out)
}

/// `pfsqos up --only mount` over a mount whose process was killed (a dead FUSE
/// mount: opening it answers ENOTCONN or ECONNABORTED, see `probe_mount`) recognises and
/// cleans it, then mounts again.
#[test]
fn up_only_mount_cleans_a_dead_fuse_mount() {
    // `up --only mount` needs the MDS's real port in the file (not 0): a port free now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cluster = CLUSTER_MOUNT.replace(
        "listen = \"127.0.0.1:0\"\ndefault_stripe_count",
        &format!("listen = \"127.0.0.1:{port}\"\ndefault_stripe_count"),
    );
    assert_ne!(cluster, CLUSTER_MOUNT);
    let (_tmp, dir, _guard, out) = up_with(&cluster);
    let mnt = dir.join("mnt");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pid = read_pid(&dir.join("st/mount.pid"));
    // SAFETY: a plain signal to the mount process this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "the mount process did not die");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(mounted(&mnt), "a killed FUSE mount stays in mountinfo");
    let again = pfsqos(&["up", "c.toml", "--only", "mount"], &dir);
    let stdout = text(&again.stdout);
    assert!(again.status.success(), "{stdout}\n{}", text(&again.stderr));
    assert!(stdout.contains("cleaned the dead mount"), "{stdout}");
    assert!(mounted(&mnt));
    std::fs::write(mnt.join("f"), b"back").unwrap();
    assert_eq!(std::fs::read(mnt.join("f")).unwrap(), b"back");
}

/// The race the test above met in CI: `up --only mount` right after the mount's `SIGKILL`
/// opened the mount while its FUSE connection still lived (the killed process's leader a
/// zombie, its other threads still exiting with `/dev/fuse` open), and the kernel's abort
/// ended that open with `ECONNABORTED`, which was taken for a live mount. Forced here: the
/// mount process is stopped, the probe's open waits in the kernel, then the process is
/// killed. The probe must find the mount dead.
#[test]
fn a_probe_waiting_when_the_mount_is_killed_finds_it_dead() {
    let (_tmp, dir, _guard, out) = up_with_mount();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mnt = dir.join("mnt");
    let pid = read_pid(&dir.join("st/mount.pid")) as i32;
    // SAFETY: plain signals to the mount process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let probe = std::thread::spawn({
        let mnt = mnt.clone();
        move || {
            // SAFETY: gettid(2) has no arguments and cannot fail.
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            pfsqos_ops::updown::probe_mount(&mnt)
        }
    });
    let tid = tid_rx.recv().unwrap();
    // Blocked in openat(2), in the fstat(2) glibc's opendir makes once the root's cached
    // attributes have expired (later on a loaded machine), or in getdents64(2) once the
    // kernel has learnt that the mount needs no FUSE opendir (the first field of
    // /proc/<tid>/syscall while the thread sleeps): its request is queued to the stopped
    // mount, so the kill's abort is what ends it.
    let waiting = [
        libc::SYS_openat,
        libc::SYS_fstat,
        libc::SYS_newfstatat,
        libc::SYS_statx,
        libc::SYS_getdents64,
    ]
    .map(|n| n.to_string());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !waiting.iter().any(|n| {
        std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
            .unwrap_or_default()
            .split(' ')
            .next()
            == Some(n.as_str())
    }) {
        assert!(
            Instant::now() < deadline,
            "the probe never waited in openat, fstat or getdents64"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let seen = probe.join().unwrap();
    assert!(
        matches!(seen, pfsqos_ops::updown::MountProbe::Dead),
        "a probe queued before the abort: {seen:?}"
    );
    // After the abort, a new request is refused outright (ENOTCONN): dead too.
    let again = pfsqos_ops::updown::probe_mount(&mnt);
    assert!(
        matches!(again, pfsqos_ops::updown::MountProbe::Dead),
        "{again:?}"
    );
}

#[test]
fn up_with_the_mount_writes_as_a_job_and_survives_down_and_up() {
    let (_tmp, dir, _guard, out) = up_with_mount();
    let mnt = dir.join("mnt");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("mount ready on {}", mnt.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "files written under {} are striped over 2 of the 2 OST(s) (mds.default_stripe_count = 2;",
            mnt.display()
        )),
        "{stdout}"
    );
    let oss = addr_after(&stdout, "ossd listening on ").to_string();
    assert!(
        mounted(&mnt),
        "{} not in /proc/self/mountinfo",
        mnt.display()
    );
    let pid_files = ["st/oss0.pid", "st/mds.pid", "st/mount.pid"];
    let pids: Vec<u32> = pid_files.iter().map(|f| read_pid(&dir.join(f))).collect();
    assert!(pids.iter().all(|&p| pid_alive(p)));

    // A child process with a JobID writes through the mount and fsyncs; 3 MiB + 5 bytes over
    // two 64 KiB stripes, so both OSTs and a partial last stripe are involved.
    let data = pattern((3 << 20) + 5, 7);
    let src = dir.join("src");
    std::fs::write(&src, &data).unwrap();
    dd_as_job(&src, &mnt.join("f"), "4242");
    assert_eq!(sha(&std::fs::read(mnt.join("f")).unwrap()), sha(&data));

    // job_stats holds the job with exactly the bytes written (the write-behind is flushed by
    // the fsync, so every byte was acknowledged before dd exited).
    let key_file = dir.join("st/server.key");
    assert_eq!(
        job_write_bytes(&dir, &oss, &key_file, "4242"),
        Some(data.len() as u64)
    );

    // down: the mount point leaves mountinfo, the processes are gone, data and key stay.
    let d = pfsqos(&["down", "c.toml"], &dir);
    let down_out = text(&d.stdout);
    assert!(d.status.success(), "{down_out}\n{}", text(&d.stderr));
    assert!(down_out.contains("stopped mount (pid"), "{down_out}");
    assert!(!down_out.contains("SIGKILL"), "{down_out}");
    assert!(!mounted(&mnt));
    assert!(pids.iter().all(|&p| !pid_alive(p)));
    assert!(pid_files.iter().all(|f| !dir.join(f).exists()));
    assert!(key_file.exists() && dir.join("st/mds.db").exists());
    let objects = |ost: &str| {
        std::fs::read_dir(dir.join(ost).join("objects"))
            .unwrap()
            .count()
    };
    assert!(objects("data/ost0") >= 1 && objects("data/ost1") >= 1);
    assert_eq!(
        std::fs::read_dir(&mnt).unwrap().count(),
        0,
        "nothing left under the mount point"
    );

    // up again on the same state: the same file, the same bytes.
    let out = pfsqos(&["up", "c.toml"], &dir);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(!stdout.contains("generated cluster key"), "{stdout}");
    assert!(mounted(&mnt));
    assert_eq!(
        std::fs::metadata(mnt.join("f")).unwrap().len(),
        data.len() as u64
    );
    assert_eq!(sha(&std::fs::read(mnt.join("f")).unwrap()), sha(&data));
    let d = pfsqos(&["down", "c.toml"], &dir);
    assert!(d.status.success(), "{}", text(&d.stderr));
    assert!(!mounted(&mnt));
}

#[test]
fn up_without_a_file_starts_the_default_cluster() {
    require_fuse();
    // The default layout listens on fixed ports; the layout itself is checked through the
    // parsed configuration in `cluster.rs` (`defaults_are_the_issue_layout`). Starting it
    // needs both ports free, which a CI host running something else may not offer.
    let taken: Vec<u16> = [7988u16, 7989]
        .into_iter()
        .filter(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_err())
        .collect();
    if !taken.is_empty() {
        pfsqos_testkit::skip(
            "up_without_a_file_starts_the_default_cluster",
            &format!(
                "port(s) {taken:?} on 127.0.0.1 are taken, and `pfsqos up` without a file \
                 listens on 7988 and 7989"
            ),
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let mnt = dir.join("pfsqos-mnt");

    let out = pfsqos(&["up"], &dir);
    let _guard = UpDefault { dir: dir.clone() };
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("ossd listening on 127.0.0.1:7988"),
        "{stdout}"
    );
    assert!(
        stdout.contains("mds listening on 127.0.0.1:7989"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("mount ready on {}", mnt.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("striped over 1 of the 2 OST(s)"),
        "{stdout}"
    );
    assert!(stdout.contains("\n  pfsqos down\n"), "{stdout}");
    assert!(mounted(&mnt));
    let pids: Vec<u32> = ["oss0", "mds", "mount"]
        .iter()
        .map(|r| read_pid(&dir.join(format!("pfsqos-state/{r}.pid"))))
        .collect();

    let data = pattern(100_000, 3);
    std::fs::write(mnt.join("hello"), &data).unwrap();
    assert_eq!(sha(&std::fs::read(mnt.join("hello")).unwrap()), sha(&data));

    let d = pfsqos(&["down"], &dir);
    assert!(d.status.success(), "{}", text(&d.stderr));
    assert!(!mounted(&mnt));
    assert!(pids.iter().all(|&p| !pid_alive(p)));
    assert!(dir.join("pfsqos-state/mds.db").exists());
    assert!(dir.join("pfsqos-state/cluster.key").exists());
    assert!(dir.join("pfsqos-data/ost0/objects").is_dir());
    assert!(dir.join("pfsqos-data/ost1/objects").is_dir());
}

/// A port already taken: `up` fails, and says how to go on (port 0, or a port free now).
#[test]
fn up_on_a_taken_port_suggests_port_0_or_a_free_port() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let cluster = format!(
        "[cluster]\nstate_dir = \"st\"\n[mds]\nlisten = \"127.0.0.1:{port}\"\n\
         [[oss]]\nlisten = \"127.0.0.1:0\"\nosts = [\"d/ost0\"]\n[mount]\nenabled = false\n"
    );
    std::fs::write(dir.join("c.toml"), cluster).unwrap();
    let out = pfsqos(&["up", "c.toml"], &dir);
    let _guard = Up { dir: dir.clone() };
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(err.contains("Address already in use"), "{err}");
    assert!(
        err.contains("hint: mds's port is taken") && err.contains("[mds] listen = \"127.0.0.1:0\""),
        "{err}"
    );
    assert!(err.contains("or a free port such as 127.0.0.1:"), "{err}");
    drop(taken);
}
