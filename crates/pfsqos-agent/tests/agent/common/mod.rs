//! What the agent's process-level tests share: bounded waits on child processes, signals,
//! free ports and metric scrapes. Every wait polls against [`DEADLINE`]; none asserts a time.

#![allow(dead_code)] // each test file uses its own subset

use std::process::Child;
use std::time::{Duration, Instant};

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
