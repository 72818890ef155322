//! The authors' artifact's "effective system bandwidth": an *allocation* statistic, not
//! delivered bytes (`docs/reproductions/gift.md`, "The authors' artifact").
//!
//! The artifact's `printStats` reports `100 × mean over decisions of (sum of the allocations
//! that count toward synchronous progress) / number of OSTs`, in units of OST capacity. Per
//! decision that sum is eq. 1 of §3.4 (`Σ_i x_i D_i`; for POFS the bottleneck share, so POFS
//! and BSIP coincide by construction) divided by the system's capacity. Two means:
//!
//! * [`AllocationStats::effective_bandwidth_allocated`]: every decision counts, an idle one
//!   (nothing allocated) as 0 — the same rule for every policy;
//! * [`AllocationStats::effective_bandwidth_allocated_artifact`]: the artifact's asymmetry:
//!   GIFT and MBW append their LP objective only when it is non-zero (idle decisions are
//!   skipped), every other policy appends at every decision, idle ones as 0. An idle fraction
//!   `f` of the decisions inflates GIFT's and MBW's figure by `1 / (1 - f)`.

use super::{AllocError, Allocation, Allocator, IntervalInput, RegretSummary};

/// Allocation statistics over a run's decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AllocationStats {
    /// Decisions recorded.
    pub decisions: u64,
    /// Decisions whose eq. 1 value was positive.
    pub decisions_allocating: u64,
    /// Sum over decisions of eq. 1 / total OST capacity (a fraction of the system).
    pub allocated_fraction_sum: f64,
    /// The policy is one the artifact averages over non-zero decisions only (GIFT, MBW).
    pub skips_idle_in_artifact: bool,
}

impl AllocationStats {
    /// Statistics for the policy named `policy` (sets the artifact's asymmetry).
    pub fn for_policy(policy: &str) -> AllocationStats {
        AllocationStats {
            skips_idle_in_artifact: matches!(policy, "gift" | "mbw"),
            ..AllocationStats::default()
        }
    }

    /// Adds one decision: eq. 1 of `allocation` over the total capacity of `input`'s OSTs.
    pub fn record(&mut self, input: &IntervalInput, allocation: &Allocation) {
        let capacity: f64 = input.osts.iter().map(|o| o.capacity_bytes_per_s).sum();
        let fraction = if capacity > 0.0 {
            allocation.effective_bytes_per_s / capacity
        } else {
            0.0
        };
        self.decisions += 1;
        if fraction > 0.0 {
            self.decisions_allocating += 1;
            self.allocated_fraction_sum += fraction;
        }
    }

    /// Mean allocated effective bandwidth over every decision, as a fraction of the system's
    /// capacity (idle decisions count as 0 for every policy). `None` without decisions.
    pub fn effective_bandwidth_allocated(&self) -> Option<f64> {
        (self.decisions > 0).then(|| self.allocated_fraction_sum / self.decisions as f64)
    }

    /// The same with the artifact's asymmetry: GIFT and MBW skip idle decisions.
    pub fn effective_bandwidth_allocated_artifact(&self) -> Option<f64> {
        let n = if self.skips_idle_in_artifact {
            self.decisions_allocating
        } else {
            self.decisions
        };
        (n > 0).then(|| self.allocated_fraction_sum / n as f64)
    }

    /// Fraction of the decisions with nothing allocated.
    pub fn idle_fraction(&self) -> Option<f64> {
        (self.decisions > 0)
            .then(|| (self.decisions - self.decisions_allocating) as f64 / self.decisions as f64)
    }
}

/// Wraps an allocator and records [`AllocationStats`] of every successful decision.
pub struct Recorded<A: Allocator> {
    inner: A,
    stats: AllocationStats,
}

impl<A: Allocator> Recorded<A> {
    pub fn new(inner: A) -> Recorded<A> {
        let stats = AllocationStats::for_policy(inner.name());
        Recorded { inner, stats }
    }

    pub fn inner(&self) -> &A {
        &self.inner
    }
}

impl<A: Allocator> Allocator for Recorded<A> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let out = self.inner.allocate(input)?;
        self.stats.record(input, &out);
        Ok(out)
    }

    fn regret(&self) -> Option<RegretSummary> {
        self.inner.regret()
    }

    fn allocation_stats(&self) -> Option<AllocationStats> {
        Some(self.stats)
    }
}
