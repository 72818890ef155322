//! Wall-clock time of each controller decision, measured by the driver (the Cost
//! family's "decision time").
//!
//! [`TimedController`] wraps the controller a run uses and times every
//! [`Controller::decide`] call on this machine's clock; every call (and every other method)
//! is delegated unchanged, so the simulated run, and everything written to `bakeoff.json`,
//! is the same with or without it (a test checks the bytes). The times go to `timing.json`
//! and the report's wall-clock section only. The simulator keeps no clock: the wrapper is
//! handed to it through `pfsqos_sim::run_wrapped`.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use pfsqos_core::control::{gift, Controller, Decision, DomainWrite, Observation, TraceSample};
use serde::{Deserialize, Serialize};

/// Histogram buckets per doubling of the time: a percentile read from the histogram is at
/// most 2^(1/8) - 1 = 9 % above the true one.
pub const BUCKETS_PER_OCTAVE: f64 = 8.0;
/// Buckets: up to 2^64 ns.
const BUCKETS: usize = 64 * 8 + 1;

/// Decision times on a log scale: `counts[b]` calls took a time in bucket `b` (see
/// [`bucket_of`]). Bounded memory whatever the run's length, and histograms of several runs
/// merge exactly, so a design's percentiles cover all its decisions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DecideHistogram {
    /// `(bucket, calls)`, buckets ascending, no zero counts.
    pub buckets: Vec<(u16, u64)>,
}

/// The bucket of a `ns`-nanosecond call: `floor(8 log2(ns + 1))`.
pub fn bucket_of(ns: u64) -> u16 {
    let b = ((ns as f64 + 1.0).log2() * BUCKETS_PER_OCTAVE).floor() as usize;
    b.min(BUCKETS - 1) as u16
}

/// The largest time in bucket `b` (what a percentile in it reports: never below the truth).
pub fn bucket_upper_ns(b: u16) -> u64 {
    ((f64::from(b + 1) / BUCKETS_PER_OCTAVE).exp2() - 1.0).ceil() as u64
}

impl DecideHistogram {
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|(_, c)| c).sum()
    }

    /// Adds `other`'s calls.
    pub fn merge(&mut self, other: &DecideHistogram) {
        let mut dense = self.dense();
        for &(b, c) in &other.buckets {
            dense[usize::from(b)] += c;
        }
        *self = DecideHistogram::from_dense(&dense);
    }

    fn dense(&self) -> Vec<u64> {
        let mut dense = vec![0u64; BUCKETS];
        for &(b, c) in &self.buckets {
            dense[usize::from(b).min(BUCKETS - 1)] += c;
        }
        dense
    }

    fn from_dense(dense: &[u64]) -> DecideHistogram {
        DecideHistogram {
            buckets: dense
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(b, &c)| (b as u16, c))
                .collect(),
        }
    }

    /// Nearest-rank percentile `q` (0 < q <= 1) as its bucket's upper bound; 0 without calls.
    pub fn percentile_ns(&self, q: f64) -> u64 {
        assert!(q > 0.0 && q <= 1.0, "a percentile is in (0, 1]");
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for &(b, c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return bucket_upper_ns(b);
            }
        }
        unreachable!("the ranks add up to the count")
    }

    pub fn stats(&self) -> DecideStats {
        DecideStats {
            count: self.count(),
            median_ns: self.percentile_ns(0.5),
            p99_ns: self.percentile_ns(0.99),
        }
    }
}

/// Collected by the wrapper (inside the simulator) and read by the driver after the run; both
/// live on one worker thread.
pub type DecideLog = Rc<RefCell<Vec<u64>>>;

/// A controller whose `decide` calls are timed; everything else is passed through.
pub struct TimedController {
    inner: Box<dyn Controller>,
    log: DecideLog,
}

impl TimedController {
    pub fn wrap(inner: Box<dyn Controller>, log: DecideLog) -> Box<dyn Controller> {
        Box::new(TimedController { inner, log })
    }
}

/// The histogram of a log the wrapper filled (empty: no decisions).
pub fn histogram_of(log: &DecideLog) -> DecideHistogram {
    DecideHistogram::from_dense(&log.borrow())
}

impl Controller for TimedController {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn setup(&mut self, initial: &Observation) -> Decision {
        self.inner.setup(initial)
    }
    fn period_ns(&self) -> Option<u64> {
        self.inner.period_ns()
    }
    fn decide(&mut self, observation: &Observation) -> Decision {
        let started = Instant::now();
        let decision = self.inner.decide(observation);
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut dense = self.log.borrow_mut();
        if dense.is_empty() {
            dense.resize(BUCKETS, 0);
        }
        dense[usize::from(bucket_of(ns))] += 1;
        decision
    }
    fn trace(&self) -> Vec<TraceSample> {
        self.inner.trace()
    }
    fn regret(&self) -> Option<gift::RegretSummary> {
        self.inner.regret()
    }
    fn allocation_stats(&self) -> Option<gift::AllocationStats> {
        self.inner.allocation_stats()
    }
    fn on_write_refused(&mut self, write: &DomainWrite, errno: pfsqos_core::errno::Errno) {
        self.inner.on_write_refused(write, errno)
    }
    fn rejected_observations(&self) -> u64 {
        self.inner.rejected_observations()
    }
    fn last_rejection(&self) -> Option<&str> {
        self.inner.last_rejection()
    }
}

/// Median, 99th percentile and count of one run's (or one design's) decision times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DecideStats {
    /// `decide` calls (deterministic: the same on every machine).
    pub count: u64,
    /// Nearest-rank median and 99th percentile, as their histogram bucket's upper bound
    /// (at most 9 % above the true value); 0 without calls.
    pub median_ns: u64,
    pub p99_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_the_time_within_nine_percent() {
        for ns in [0u64, 1, 2, 7, 100, 1_000, 12_345, 1 << 30, u64::MAX / 2] {
            let upper = bucket_upper_ns(bucket_of(ns));
            assert!(upper >= ns, "{ns}: {upper}");
            assert!(
                upper as f64 <= (ns as f64 + 1.0) * 1.0906 + 1.0,
                "{ns}: {upper}"
            );
        }
    }

    /// A controller that refuses every observation, as GIFT's allocator does a bad input.
    struct Refusing(u64);

    impl Controller for Refusing {
        fn name(&self) -> &'static str {
            "refusing"
        }
        fn setup(&mut self, _: &Observation) -> Decision {
            Decision::default()
        }
        fn period_ns(&self) -> Option<u64> {
            Some(1)
        }
        fn decide(&mut self, _: &Observation) -> Decision {
            self.0 += 1;
            Decision::default()
        }
        fn rejected_observations(&self) -> u64 {
            self.0
        }
        fn last_rejection(&self) -> Option<&str> {
            (self.0 > 0).then_some("OST0000 listed twice")
        }
    }

    #[test]
    fn refusals_pass_through_the_wrapper() {
        let log: DecideLog = Rc::new(RefCell::new(vec![0; BUCKETS]));
        let mut c = TimedController::wrap(Box::new(Refusing(0)), log.clone());
        assert_eq!((c.rejected_observations(), c.last_rejection()), (0, None));
        let empty = Observation {
            now_ns: 1,
            period_ns: 1,
            domains: Vec::new(),
            jobs: Vec::new(),
            clients: Vec::new(),
        };
        c.decide(&empty);
        c.decide(&empty);
        assert_eq!(c.rejected_observations(), 2);
        assert_eq!(c.last_rejection(), Some("OST0000 listed twice"));
        assert_eq!(histogram_of(&log).count(), 2, "the calls were still timed");
    }

    #[test]
    fn percentiles_are_nearest_rank_over_merged_runs() {
        let log: DecideLog = Rc::new(RefCell::new(vec![0; BUCKETS]));
        for ns in 1..=50u64 {
            log.borrow_mut()[usize::from(bucket_of(ns * 1000))] += 1;
        }
        let a = histogram_of(&log);
        let mut b = DecideHistogram::default();
        b.merge(&a);
        b.merge(&a);
        let s = b.stats();
        assert_eq!(s.count, 100);
        // Median: the 50th of 100 calls, 1..=50 us twice: 25 us, within its bucket.
        assert_eq!(s.median_ns, bucket_upper_ns(bucket_of(25_000)));
        assert_eq!(s.p99_ns, bucket_upper_ns(bucket_of(50_000)));
        assert_eq!(DecideHistogram::default().stats(), DecideStats::default());
        assert_eq!(histogram_of(&Rc::new(RefCell::new(Vec::new()))).count(), 0);
    }
}
