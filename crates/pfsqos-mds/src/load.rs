//! The MDS's own CPU and memory utilization, for iez's "MDS busy" gate (IPDPS'19, §III-B2:
//! the allocation runs only while the MDS's CPU is below 70 % and its memory below 50 %;
//! [`pfsqos_core::place::iez::MDS_CPU_UTIL_MAX`], [`pfsqos_core::place::iez::MDS_MEM_UTIL_MAX`]).
//!
//! What is measured (our choice; the paper reads the host's `/proc/loadavg` and
//! `/proc/meminfo`):
//! - **CPU**: the MDS process's CPU time (`utime + stime` of `/proc/self/stat`, all its
//!   threads) over the wall time between two samples, divided by the CPUs the process may run
//!   on, capped at 1. The process, not the host: the gate protects the MDS's own headroom, and
//!   on a host shared with other work (a test machine, a small site's MDS node) the host's load
//!   says nothing about it.
//! - **Memory**: the process's resident set (`VmRSS` of `/proc/self/status`) over the host's
//!   `MemTotal`. Host memory (`1 - MemAvailable / MemTotal`, as the ossds report) would count
//!   every other program: a workstation running a live cluster is often above 50 % on its own,
//!   and iez would never run there.
//!
//! The server samples every [`MDS_LOAD_PERIOD`] (`MdsConfig::mds_load_period`; `None` turns
//! the sampling and so the gate off) and hands the reading to the namespace
//! ([`crate::Namespace::set_mds_load`]); tests set readings directly. Where `/proc` does not
//! give a value the reading is `None` and the gate does not apply (as in core's placer, whose
//! statistics carry the MDS's load only when it is known).

use std::time::{Duration, Instant};

use pfsqos_core::place::ServerLoad;
use pfsqos_linux::procfs::{kb_field_bytes, read_capped};

/// How often the server samples its load: the CPU fraction is over this window.
pub const MDS_LOAD_PERIOD: Duration = Duration::from_secs(10);
/// Clock ticks per second of `/proc/[pid]/stat` times (Linux's `USER_HZ`: 100 on every
/// architecture it supports but alpha).
const USER_HZ: f64 = 100.0;

/// Process CPU time in seconds from the text of `/proc/self/stat` (fields 14 and 15, counted
/// after the parenthesized command name, which may hold spaces and parentheses).
pub fn cpu_time_s(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime.checked_add(stime)? as f64 / USER_HZ)
}

/// Resident set over `MemTotal`, capped at 1.
pub fn mem_util(status: &str, meminfo: &str) -> Option<f64> {
    let rss = kb_field_bytes(status, "VmRSS:")?;
    let total = kb_field_bytes(meminfo, "MemTotal:")?;
    (total > 0).then(|| (rss as f64 / total as f64).min(1.0))
}

/// CPU fraction between two samples: `cpu_s` seconds of CPU over `wall_s` seconds on `cpus`
/// CPUs, capped at 1; `None` for an empty window or a clock that went backwards.
pub fn cpu_util(cpu_s: f64, wall_s: f64, cpus: usize) -> Option<f64> {
    let ok = cpu_s.is_finite() && cpu_s >= 0.0 && wall_s.is_finite() && wall_s > 0.0;
    (ok && cpus > 0).then(|| (cpu_s / (wall_s * cpus as f64)).min(1.0))
}

/// Samples the MDS process's load from `/proc` (module doc).
#[derive(Debug)]
pub struct LoadSampler {
    last: Option<(Instant, f64)>,
}

impl Default for LoadSampler {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadSampler {
    pub fn new() -> LoadSampler {
        let mut s = LoadSampler { last: None };
        s.last = s.cpu_now();
        s
    }

    fn cpu_now(&self) -> Option<(Instant, f64)> {
        let stat = read_capped("/proc/self/stat")?;
        Some((Instant::now(), cpu_time_s(&stat)?))
    }

    /// The load since the previous sample (blocking: reads /proc); `None` when /proc does
    /// not give both values.
    pub fn sample(&mut self) -> Option<ServerLoad> {
        let now = self.cpu_now();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cpu = match (self.last, now) {
            (Some((t0, c0)), Some((t1, c1))) => {
                cpu_util(c1 - c0, t1.duration_since(t0).as_secs_f64(), cpus)
            }
            _ => None,
        };
        self.last = now;
        let status = read_capped("/proc/self/status")?;
        let meminfo = read_capped("/proc/meminfo")?;
        let mem = mem_util(&status, &meminfo)?;
        let load = ServerLoad {
            cpu_util: cpu?,
            mem_util: mem,
        };
        debug_assert!((0.0..=1.0).contains(&load.cpu_util) && (0.0..=1.0).contains(&load.mem_util));
        Some(load)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_texts_parse() {
        // A command name with a space and a parenthesis.
        let stat = "4242 (pfs qos) mds) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0 100 1000000 500";
        assert_eq!(cpu_time_s(stat), Some(3.0));
        assert_eq!(cpu_time_s("4242 (mds) S 1"), None);
        assert_eq!(cpu_time_s("no parenthesis"), None);
        let status = "Name:\tmds\nVmRSS:\t  102400 kB\n";
        let meminfo = "MemTotal:       1024000 kB\nMemAvailable:  10 kB\n";
        assert_eq!(mem_util(status, meminfo), Some(0.1));
        assert_eq!(mem_util("VmRSS: x kB\n", meminfo), None);
        assert_eq!(mem_util(status, "MemTotal: 0 kB\n"), None);
        // Capped: a resident set above MemTotal (a container's view) reads as full.
        assert_eq!(mem_util(status, "MemTotal: 1 kB\n"), Some(1.0));
    }

    #[test]
    fn cpu_fraction_is_over_the_window_and_the_cpus() {
        assert_eq!(cpu_util(1.0, 10.0, 2), Some(0.05));
        assert_eq!(cpu_util(30.0, 10.0, 2), Some(1.0));
        assert_eq!(cpu_util(1.0, 0.0, 2), None);
        assert_eq!(cpu_util(-1.0, 1.0, 2), None);
        assert_eq!(cpu_util(1.0, 1.0, 0), None);
    }

    /// On Linux the sampler reads this test process: fractions, and a second sample after
    /// some work has a CPU reading.
    #[test]
    fn the_sampler_reads_this_process() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let mut s = LoadSampler::new();
        // Burn a little CPU so the window is not empty of it (not timed: only the range is
        // asserted).
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let load = s.sample().expect("a reading on Linux");
        assert!((0.0..=1.0).contains(&load.cpu_util), "{load:?}");
        assert!(load.mem_util > 0.0 && load.mem_util <= 1.0, "{load:?}");
    }
}
