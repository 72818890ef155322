//! What the ossd's control loop records about itself:
//!
//! * [`ControlRecord`], `--control-record FILE`: per sampling period, the per-client limit
//!   in force during the period and the device queue measured at its end, in the CSV format
//!   of `pfsqos_core::control::pi::record`, which `pfsqos pi identify --record FILE` fits
//!   (the live open-loop experiment: `--policy pi-openloop:...`; a `pi` or `aimd` run records
//!   the same pairs);
//! * [`ControlCost`]: the CPU and wall time of each control period (observe, decide, apply),
//!   served as metrics (`pfsqos_oss_control_periods_total`,
//!   `pfsqos_oss_control_cpu_seconds_total`, `pfsqos_oss_control_wall_seconds_total`,
//!   `pfsqos_oss_control_period_cpu_seconds`).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::Context;
use pfsqos_core::control::pi::record::{format_row, RECORD_HEADER, RECORD_ROWS_MAX};
use pfsqos_core::control::pi::OpenLoopPeriod;
use pfsqos_core::control::{ClientWrite, TraceSample};
use tracing::warn;

/// The record file of one control loop.
pub(crate) struct ControlRecord {
    out: BufWriter<File>,
    path: PathBuf,
    start_ns: u64,
    rows: usize,
    /// The limit every client got at the end of the previous period (`None`: none yet, or
    /// the clients got different ones): the limit in force during the period now ending.
    in_force: Option<u64>,
    /// Set once writing failed or the row bound was reached: nothing more is written.
    stopped: bool,
}

impl ControlRecord {
    /// Creates (or truncates) `path` and writes a comment line and the header.
    pub fn create(path: &Path, policy: &str, start_ns: u64) -> anyhow::Result<ControlRecord> {
        let file = File::create(path)
            .with_context(|| format!("creating the control record {}", path.display()))?;
        let mut out = BufWriter::new(file);
        // The policy name is the registry's (a static name), not user text.
        writeln!(out, "# pfsqos ossd control record, policy {policy}")?;
        writeln!(out, "{RECORD_HEADER}")?;
        out.flush()?;
        Ok(ControlRecord {
            out,
            path: path.to_path_buf(),
            start_ns,
            rows: 0,
            in_force: None,
            stopped: false,
        })
    }

    /// One period ended at `now_ns`: writes (limit in force during it, queue measured at its
    /// end) when both are known, then notes the limit the period's decision set. The queue is
    /// the largest `queue_measured` of the controller's trace (the governing target, as the
    /// PI controllers choose by default).
    pub fn period(&mut self, now_ns: u64, trace: &[TraceSample], client_writes: &[ClientWrite]) {
        let queue = trace
            .iter()
            .filter(|s| s.metric == "queue_measured" && s.value.is_finite() && s.value >= 0.0)
            .map(|s| s.value)
            .reduce(f64::max);
        if let (Some(limit_bytes_per_s), Some(queue_rpcs), false) =
            (self.in_force, queue, self.stopped)
        {
            let time_s = now_ns.saturating_sub(self.start_ns) as f64 / 1e9;
            let row = format_row(
                time_s,
                &OpenLoopPeriod {
                    limit_bytes_per_s,
                    queue_rpcs,
                },
            );
            // Flushed per row (a few per second): a reader sees the record as it grows, and
            // a killed daemon loses at most the row being written.
            if let Err(e) = self
                .out
                .write_all(row.as_bytes())
                .and_then(|()| self.out.flush())
            {
                warn!(path = %self.path.display(), error = %e, "control record: write failed; recording stops");
                self.stopped = true;
            }
            self.rows += 1;
            if self.rows >= RECORD_ROWS_MAX {
                warn!(path = %self.path.display(), RECORD_ROWS_MAX, "control record full; recording stops");
                self.stopped = true;
            }
        }
        if let Some(first) = client_writes.first() {
            self.in_force = if client_writes
                .iter()
                .all(|w| w.limit_bytes_per_s == first.limit_bytes_per_s)
            {
                first.limit_bytes_per_s
            } else {
                None
            };
        }
    }
}

/// How many recent periods the median is taken over.
pub const COST_RECENT_PERIODS: usize = 1024;

/// CPU and wall time of the control loop's periods.
#[derive(Default)]
pub struct ControlCost {
    periods: AtomicU64,
    cpu_ns: AtomicU64,
    wall_ns: AtomicU64,
    /// CPU ns of the last [`COST_RECENT_PERIODS`] periods.
    recent_cpu_ns: Mutex<VecDeque<u64>>,
    /// Jobs of the last observation whose ids cannot be rules, plus one (0: no observation
    /// yet).
    unnamable_jobs_plus_one: AtomicU64,
}

impl ControlCost {
    pub fn note(&self, cpu_ns: u64, wall_ns: u64) {
        self.periods.fetch_add(1, Ordering::Relaxed);
        self.cpu_ns.fetch_add(cpu_ns, Ordering::Relaxed);
        self.wall_ns.fetch_add(wall_ns, Ordering::Relaxed);
        let mut recent = self.recent_cpu_ns.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == COST_RECENT_PERIODS {
            recent.pop_front();
        }
        recent.push_back(cpu_ns);
        debug_assert!(recent.len() <= COST_RECENT_PERIODS);
    }

    /// The last observation listed `count` jobs whose ids cannot be rules.
    pub fn note_unnamable_jobs(&self, count: u64) {
        self.unnamable_jobs_plus_one
            .store(count.saturating_add(1), Ordering::Relaxed);
    }

    /// Jobs of the last observation whose ids cannot be rules (`None` before the first).
    pub fn unnamable_jobs(&self) -> Option<u64> {
        self.unnamable_jobs_plus_one
            .load(Ordering::Relaxed)
            .checked_sub(1)
    }

    /// Counters since start: `periods`, `cpu_ns`, `wall_ns`.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("periods", self.periods.load(Ordering::Relaxed)),
            ("cpu_ns", self.cpu_ns.load(Ordering::Relaxed)),
            ("wall_ns", self.wall_ns.load(Ordering::Relaxed)),
        ]
    }

    /// The median CPU ns of the recent periods (`None` before the first).
    pub fn recent_cpu_ns_median(&self) -> Option<u64> {
        let mut v: Vec<u64> = self
            .recent_cpu_ns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        Some(v[v.len() / 2])
    }
}

/// The calling thread's CPU time, ns (`CLOCK_THREAD_CPUTIME_ID`): what the control thread
/// itself spent, not the daemon's I/O threads working at the same time.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::control::pi::record::parse_record;
    use pfsqos_core::control::ClientId;
    use pfsqos_core::model::{JobId, OstId};

    fn queue(value: f64) -> TraceSample {
        TraceSample {
            ost: OstId(0),
            job: JobId::EMPTY,
            metric: "queue_measured",
            value,
        }
    }

    fn limit(rate: u64) -> Vec<ClientWrite> {
        vec![
            ClientWrite {
                client: ClientId(0),
                limit_bytes_per_s: Some(rate),
            },
            ClientWrite {
                client: ClientId(1),
                limit_bytes_per_s: Some(rate),
            },
        ]
    }

    #[test]
    fn rows_pair_the_limit_in_force_with_the_queue_at_the_periods_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.csv");
        let mut r = ControlRecord::create(&path, "pi-openloop", 1_000_000_000).unwrap();
        // Setup's decision: 2 MiB/s; no row (no queue yet, nothing in force before).
        r.period(1_000_000_000, &[], &limit(2 << 20));
        r.period(1_300_000_000, &[queue(0.5)], &limit(4 << 20));
        // A period without client writes keeps the limit in force.
        r.period(1_600_000_000, &[queue(1.0), queue(3.0)], &[]);
        r.period(1_900_000_000, &[], &limit(8 << 20));
        let rows = parse_record(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let got: Vec<(f64, u64, f64)> = rows
            .iter()
            .map(|r| (r.time_s, r.period.limit_bytes_per_s, r.period.queue_rpcs))
            .collect();
        assert_eq!(got, vec![(0.3, 2 << 20, 0.5), (0.6, 4 << 20, 3.0)]);
        assert!(ControlRecord::create(&dir.path().join("no/such/dir"), "pi", 0).is_err());
    }

    #[test]
    fn cost_counts_periods_and_takes_the_median_of_recent_ones() {
        let c = ControlCost::default();
        assert_eq!(c.recent_cpu_ns_median(), None);
        for ns in [5, 1, 100] {
            c.note(ns, 2 * ns);
        }
        assert_eq!(
            c.counters(),
            vec![("periods", 3), ("cpu_ns", 106), ("wall_ns", 212)]
        );
        assert_eq!(c.recent_cpu_ns_median(), Some(5));
        for _ in 0..COST_RECENT_PERIODS {
            c.note(7, 7);
        }
        assert_eq!(c.recent_cpu_ns_median(), Some(7), "old periods dropped");
        let t0 = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() >= t0);
    }
}
