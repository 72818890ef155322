//! A small cluster of real `pfsqos` processes on loopback for end-to-end tests: one ossd, an
//! mds and any number of mounts (one per simulated client node). Readiness is explicit (each
//! process prints one line once it serves); teardown stops mounts with SIGTERM so that they
//! unmount, and only then the daemons.

#![allow(dead_code)] // helpers some modules use and others not

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use pfsqos_core::jobstats::{parse_lctl_job_stats, OstCounter};

pub const MIB: f64 = 1024.0 * 1024.0;
/// How long a process may take to become ready or to stop.
pub const WAIT_MAX: Duration = Duration::from_secs(30);

pub fn pfsqos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pfsqos"))
}

/// A child process: a daemon or mount is killed (and a mount detached) when dropped; use
/// [`Proc::terminate`] for a clean stop.
pub struct Proc {
    pub child: Child,
    /// A mount point to detach if the process is killed.
    pub mountpoint: Option<PathBuf>,
}

impl Proc {
    /// Sends SIGTERM and waits (bounded) for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal("TERM");
        self.wait_exit()
    }

    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{name} {}", self.child.id());
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT_MAX;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "process {} did not exit",
                self.child.id()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.mountpoint.is_some() && self.child.try_wait().ok().flatten().is_none() {
            // A clean unmount first; a mount that does not stop in time is killed below.
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(self.child.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && self.child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(m) = &self.mountpoint {
            if is_mounted(m) {
                let _ = Command::new("umount").arg("-l").arg(m).status();
            }
        }
    }
}

/// True when `path` is a mount point (field 5 of /proc/self/mountinfo).
pub fn is_mounted(path: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let path = path.to_string_lossy();
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(path.as_ref()))
}

/// Spawns `cmd` and waits for its stdout line `<prefix><value>` (among its first four);
/// returns the value.
pub fn spawn_ready(
    mut cmd: Command,
    prefix: &str,
    log: &Path,
    mountpoint: Option<&Path>,
) -> (Proc, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let proc_ = Proc {
        child,
        mountpoint: mountpoint.map(Path::to_path_buf),
    };
    // Daemons may print other lines first (the ossd's metrics address); a few at most.
    let mut reader = BufReader::new(stdout);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(value) = line.trim().strip_prefix(prefix) {
            return (proc_, value.to_string());
        }
        seen.push(line);
    }
    panic!(
        "expected '{prefix}...', got {seen:?}; log:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    )
}

/// One ossd (one OST; or several, [`Cluster::start_osses`]), an mds and mounts, all on
/// loopback; torn down in reverse order.
///
/// Tests that model jobs on separate compute nodes give each job a mount of its own: one mount
/// is one Lustre client, whose `max_rpcs_in_flight` window and dirty budget per OST are shared
/// by every process on it, so a throttled job's queued RPCs also hold back a second job on the
/// same mount (as on one Lustre client node).
pub struct Cluster {
    /// The cluster key: what the mounts (client nodes) hold.
    pub key: PathBuf,
    /// The servers' own key: what the ossds, the MDS and an administrator's `lctl` hold.
    pub server_key: PathBuf,
    pub oss_addr: String,
    pub mds_addr: String,
    pub mnts: Vec<PathBuf>,
    // Field order is drop order: the mounts go first, then the daemons.
    pub mounts: Vec<Proc>,
    pub mds: Proc,
    pub ossd: Proc,
    /// The other ossds of a cluster started with [`Cluster::start_osses`] (OST 1, 2, ...),
    /// after `ossd` in drop order.
    pub more_ossds: Vec<Proc>,
    /// Every ossd's address, in OST order (`oss_addr` first).
    pub oss_addrs: Vec<String>,
    /// Last, so that it is removed after the mounts and daemons have stopped: removed while
    /// a mount was still mounted, the removal stopped at the mount point and left the OSTs'
    /// objects behind (about 1.5 GB of /tmp per suite run).
    pub tmp: tempfile::TempDir,
}

impl Cluster {
    /// `mounts` mounts with 1 MiB RPCs (one 1 MiB application block = one RPC = one TBF
    /// token) and JobIDs from `SLURM_JOB_ID`.
    pub fn start(mounts: usize, ossd_args: &[&str]) -> Cluster {
        Cluster::start_osses(1, mounts, ossd_args)
    }

    /// As [`Cluster::start`] with `osses` ossds of one OST each, each the DSFQ
    /// synchronization peer of the others (as `pfsqos up` starts them), and new files striped
    /// over all of them.
    pub fn start_osses(osses: usize, mounts: usize, ossd_args: &[&str]) -> Cluster {
        assert!(osses >= 1);
        assert!(
            Path::new("/dev/fuse").exists(),
            "these tests need /dev/fuse (FUSE kernel module); scripts/setup.sh installs fuse3 and fio"
        );
        let tmp = tempfile::tempdir().unwrap();
        let key = tmp.path().join("cluster.key");
        std::fs::write(&key, "e2e-test-key-0123456789abcdef0123\n").unwrap();
        // The servers' own key, as `pfsqos up` gives every ossd and the MDS: a synchronization
        // peer is a server role, which only a server holding it may take.
        let server_key = tmp.path().join("server.key");
        std::fs::write(&server_key, "e2e-test-server-key-0123456789abcdef\n").unwrap();
        // One ossd alone listens on a port the kernel picks; peers must know each other's
        // address before they start, so a cluster of several reserves free ports first.
        let listen: Vec<String> = if osses == 1 {
            vec!["127.0.0.1:0".to_string()]
        } else {
            let held: Vec<std::net::TcpListener> = (0..osses)
                .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
                .collect();
            held.iter()
                .map(|l| l.local_addr().unwrap().to_string())
                .collect()
        };
        let mut ossds = Vec::new();
        let mut oss_addrs = Vec::new();
        for (i, addr) in listen.iter().enumerate() {
            let mut cmd = pfsqos();
            cmd.args(["ossd", "--listen", addr, "--ost"])
                .arg(tmp.path().join(format!("ost{i}")))
                .arg("--key-file")
                .arg(&key)
                .arg("--server-key-file")
                .arg(&server_key)
                .args(ossd_args);
            if osses > 1 {
                for (k, peer) in listen.iter().enumerate() {
                    if k != i {
                        cmd.args(["--peer", peer]);
                    }
                }
                cmd.args(["--sync-instance-base", &i.to_string()]);
            }
            let log_name = if i == 0 {
                "ossd.log".to_string()
            } else {
                format!("ossd{i}.log")
            };
            let log = tmp.path().join(log_name);
            let (ossd, oss_addr) = spawn_ready(cmd, "ossd listening on ", &log, None);
            ossds.push(ossd);
            oss_addrs.push(oss_addr);
        }
        let mut cmd = pfsqos();
        cmd.args(["mds", "--listen", "127.0.0.1:0", "--db"])
            .arg(tmp.path().join("mds.db"))
            .arg("--key-file")
            .arg(&key)
            .arg("--server-key-file")
            .arg(&server_key);
        for addr in &oss_addrs {
            cmd.arg("--oss").arg(format!("{addr}:1"));
        }
        if osses > 1 {
            cmd.args(["--stripe-count", "-1"]);
        }
        let log = tmp.path().join("mds.log");
        let (mds, mds_addr) = spawn_ready(cmd, "mds listening on ", &log, None);
        let ossd = ossds.remove(0);
        let mut cluster = Cluster {
            tmp,
            key,
            server_key,
            oss_addr: oss_addrs[0].clone(),
            mds_addr,
            mnts: Vec::new(),
            mounts: Vec::new(),
            mds,
            ossd,
            more_ossds: ossds,
            oss_addrs,
        };
        for i in 0..mounts {
            let mnt = cluster.tmp.path().join(format!("mnt{i}"));
            std::fs::create_dir(&mnt).unwrap();
            let proc_ = cluster.mount(&mnt, &format!("mount{i}.log"));
            cluster.mnts.push(mnt);
            cluster.mounts.push(proc_);
        }
        cluster
    }

    /// Starts one more mount of the file system at `mnt`.
    pub fn mount(&self, mnt: &Path, log: &str) -> Proc {
        let mut cmd = pfsqos();
        cmd.arg("mount")
            .arg(mnt)
            .args(["--mds", &self.mds_addr, "--jobid-var", "SLURM_JOB_ID"])
            .args(["--brw-size-bytes", "1048576", "--key-file"])
            .arg(&self.key);
        spawn_ready(
            cmd,
            "mount ready on ",
            &self.tmp.path().join(log),
            Some(mnt),
        )
        .0
    }

    /// `lctl set_param` on every ossd.
    pub fn lctl_set(&self, param: &str) {
        for addr in &self.oss_addrs {
            let out = pfsqos()
                .args(["lctl", "--server", addr, "--key-file"])
                .arg(&self.server_key)
                .args(["set_param", param])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "set_param {param} on {addr}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Bytes written so far per job, summed over the OSTs of every ossd, read with `pfsqos lctl` and parsed
    /// by the parser the Lustre adapter uses.
    pub fn written_bytes(&self) -> BTreeMap<String, u64> {
        let mut per_job = BTreeMap::new();
        for oss in self.written_bytes_per_oss() {
            for (job, bytes) in oss {
                *per_job.entry(job).or_insert(0) += bytes;
            }
        }
        per_job
    }

    /// Bytes written per job on each ossd (in `oss_addrs` order), from its job_stats.
    pub fn written_bytes_per_oss(&self) -> Vec<BTreeMap<String, u64>> {
        self.oss_addrs
            .iter()
            .map(|addr| {
                let out = pfsqos()
                    .args(["lctl", "--server", addr, "--key-file"])
                    .arg(&self.server_key)
                    .args(["get_param", "obdfilter.*.job_stats"])
                    .output()
                    .unwrap();
                assert!(out.status.success());
                let text = String::from_utf8(out.stdout).unwrap();
                let mut per_job = BTreeMap::new();
                for (_param, jobs) in parse_lctl_job_stats(&text).unwrap() {
                    for job in jobs {
                        *per_job.entry(job.job_id.as_str().to_string()).or_insert(0) +=
                            job.counters[OstCounter::WriteBytes as usize].sum;
                    }
                }
                per_job
            })
            .collect()
    }
}

/// A free TCP port on loopback, as `127.0.0.1:PORT` (for a `--metrics-listen`).
pub fn free_local_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

/// `GET /metrics` of the Prometheus endpoint at `addr`: the whole response.
pub fn scrape_metrics(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\n\r\n",
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp
}

/// The value of the first metric line of `text` that starts with `prefix`.
pub fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// `numjobs` fio sequential 1 MiB writers under `SLURM_JOB_ID=job`, each on its own file
/// `data.JOB.N` in `dir` (one file would serialize them on its inode lock), for `runtime_s`.
pub fn fio_writers(dir: &Path, job: &str, numjobs: u32, runtime_s: u32) -> Proc {
    let child = Command::new("fio")
        .current_dir(dir)
        .env("SLURM_JOB_ID", job)
        .args([
            format!("--name=job{job}"),
            format!("--filename_format=data.{job}.$jobnum"),
            format!("--numjobs={numjobs}"),
            "--rw=write".to_string(),
            "--bs=1M".to_string(),
            "--size=4G".to_string(),
            "--ioengine=psync".to_string(),
            "--time_based".to_string(),
            format!("--runtime={runtime_s}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fio is installed by scripts/setup.sh");
    Proc {
        child,
        mountpoint: None,
    }
}

/// Polls (bounded by `wait`) until the control record at `path` has `rows` data rows; returns
/// its text.
pub fn wait_record_rows(path: &Path, rows: usize, wait: Duration) -> String {
    let deadline = Instant::now() + wait;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let have = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("time_s"))
            .count();
        if have >= rows {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "the record {} has {have} rows, not {rows}:\n{text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
