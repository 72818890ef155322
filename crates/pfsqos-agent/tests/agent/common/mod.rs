//! What the agent's process-level tests share: the live ossd the emulated `lctl` drives,
//! bounded waits on child processes, signals, free ports and metric scrapes. Every wait polls
//! against [`DEADLINE`]; none asserts a time.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use pfsqos_ossd::{Ossd, OssdConfig};

/// The cluster key: what a client node holds (object I/O).
pub const KEY: &[u8] = b"agent-test-cluster-key-0123456789";
/// The servers' own key: what the emulated `lctl` proves (role `Lctl`, an administrator's).
pub const SERVER_KEY: &[u8] = b"agent-test-server-key-fedcba98765";

/// A live ossd of `osts` OSTs and `cpts` partitions (`threads` I/O threads) under `dir`, on a
/// runtime of its own with `workers` threads (the agents are other processes), for the
/// emulated `lctl` to drive: `dir/key` holds the key it proves (`PFSQOS_LCTL_KEY_FILE`).
pub fn emulated_oss(
    dir: &Path,
    osts: usize,
    cpts: usize,
    threads: usize,
    workers: usize,
) -> (tokio::runtime::Runtime, Ossd) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    let dirs = (0..osts).map(|i| dir.join(format!("ost{i}"))).collect();
    let mut cfg = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dirs,
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    cfg.cpts = cpts;
    cfg.threads = threads;
    let ossd = rt.block_on(Ossd::start(cfg)).unwrap();
    std::fs::write(dir.join("key"), SERVER_KEY).unwrap();
    (rt, ossd)
}

/// `dir/bin/lctl`, a link to the emulation, for a `PATH` that finds it first.
pub fn link_lctl(dir: &Path) {
    std::fs::create_dir(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_pfsqos-lctl-emu"),
        dir.join("bin").join("lctl"),
    )
    .unwrap();
}

/// The longest any wait of these tests may take before it fails (a hang, never a rate).
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Polls `f` until it holds; fails naming `what` after [`DEADLINE`].
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `sig` to a child of this test.
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child by its pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Waits (at most [`DEADLINE`]) for a child to exit.
pub fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < end, "the agent did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback address no one listens on now.
pub fn free_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// The metrics text at `addr` (empty while nothing answers), through the agent's own bounded
/// scraper (`pfsqos stat --agent` uses it).
pub fn scrape(addr: &str) -> String {
    let Ok(a) = addr.parse() else {
        return String::new();
    };
    pfsqos_agent::status::scrape(a, Duration::from_secs(5)).unwrap_or_default()
}

/// The value of the unlabelled sample `name` in a metrics text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}
