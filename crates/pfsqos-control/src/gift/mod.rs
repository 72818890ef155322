//! GIFT (Patel, Garg, Tiwari, FAST '20) and its seven baselines as pure, centralized bandwidth
//! allocators.
//!
//! Every decision interval an [`Allocator`] receives the applications doing I/O, for each the
//! OSTs it uses and its demanded bandwidth per OST, plus the OST capacities ([`IntervalInput`]),
//! and returns per-application bandwidth caps per OST ([`Allocation`]). GIFT also carries state
//! across intervals (coupons, receding windows, regret budget) in its [`CouponLedger`].
//!
//! Model (the paper normalizes every OST to bandwidth 1 and assumes every application saturates
//! it; this is the general form, which reduces to the paper's when demand = capacity):
//!
//! * Application `i` demands `d_ij` bytes/s on OST `j` (what it would push unthrottled). Its
//!   *progress fraction* `x_i ∈ [0, 1]` is the same on every OST it uses, and its cap on OST
//!   `j` is `x_i d_ij`. Equal progress on every OST is synchronous I/O progress (§3.4,
//!   `b_ij = b_i`): with equal demands it is the paper's equal bandwidth per OST; with unequal
//!   demands (more processes on one OST) every process still advances at the same rate.
//! * Effective bandwidth (eq. 1) is `Σ_i x_i D_i` with `D_i = Σ_j d_ij`: the bytes/s that count
//!   toward synchronous progress. For allocations that are not synchronous (POFS) an
//!   application's effective progress is its slowest OST's `cap_ij / d_ij`.
//! * Coupon worth is bytes: throttled bandwidth summed over the application's OSTs times the
//!   decision interval (so coupons issued and redeemed on different OSTs, or in intervals of
//!   different lengths, compare, §3.3).
//!
//! The policies:
//!
//! | name | module | rule |
//! |---|---|---|
//! | `pofs` | [`baselines::Pofs`] | max-min fair share per OST, no synchronization (§2, Fig. 5) |
//! | `bsip` | [`baselines::Bsip`] | every application gets its most contended OST's fair share everywhere (§2) |
//! | `mbw` | [`baselines::Mbw`] | LP maximizing effective bandwidth, no fairness floor (§2) |
//! | `tsa` | [`baselines::Tsa`] | LP that may throttle the smaller half of applications (by nodes) by `B_thres` (§4) |
//! | `esa` | [`baselines::Esa`] | BSIP, then gaps go to the smallest applications first (§4) |
//! | `tmf` | [`baselines::Tmf`] | LP that may throttle the most frequently appearing half (§4) |
//! | `rnd` | [`baselines::Rnd`] | LP that may throttle a random half (seeded generator) (§4) |
//! | `gift` | [`Gift`] | Algorithm 1: BSIP, redemption, throttle-friendly set, LP, coupons, regret |
//!
//! Every choice where the paper is ambiguous is listed in `docs/reproductions/gift.md`.

pub mod baselines;
pub mod controller;
pub mod coupons;
#[allow(clippy::module_inception)]
pub mod gift;
pub mod lp;
pub mod options;
pub mod share;
pub mod simplex;
pub mod stats;

use std::fmt;

use crate::model::{JobId, OstId};

pub use baselines::{Bsip, Esa, Mbw, Pofs, Rnd, Tmf, Tsa};
pub use controller::{
    allocation_trace, allocator_by_name, controller_by_name, controller_with_options, option_names,
    AllocatorController, DemandModel, GiftControllerConfig, GiftOptions, POLICY_NAMES,
};
pub use coupons::{AppSummary, Coupon, CouponLedger, LedgerTotals};
pub use gift::{Gift, GiftConfig, GiftConfigError, SystemGate, ThrottleLimit, WindowKind};
pub use lp::LpSolver;
pub use share::{ShareOptions, ShareUnit};
pub use stats::{AllocationStats, Recorded};

/// Most applications in one decision.
pub const APPS_MAX: usize = 100_000;
/// Most OSTs in one decision.
pub const OSTS_MAX: usize = 10_000;
/// Most OSTs one application may use (Lustre's widest stripe is 2,000 OSTs).
pub const OSTS_PER_APP_MAX: usize = 2_000;
/// Most application-OST pairs in one decision (bounds the LP's size).
pub const USES_MAX: usize = 1_000_000;

/// One OST's bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OstCapacity {
    pub ost: OstId,
    pub capacity_bytes_per_s: f64,
}

/// What an application wants from one OST.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OstDemand {
    pub ost: OstId,
    /// Bandwidth the application would use on this OST if nobody limited it (> 0).
    pub demand_bytes_per_s: f64,
    /// Open streams (files, or objects of striped files) the application has on this OST
    /// (>= 1). Only the `stream` share unit reads it: the authors' artifact gives every open
    /// stream its own share, so an application with `k` streams on an OST counts `k` times
    /// (`docs/reproductions/gift.md`, "The authors' artifact").
    pub streams: u32,
}

/// One application doing I/O in the interval.
#[derive(Clone, Debug, PartialEq)]
pub struct AppDemand {
    pub app: JobId,
    /// Compute nodes: converts unredeemed coupons into regret node-hours, and "small" for TSA/ESA.
    pub nodes: u32,
    pub osts: Vec<OstDemand>,
}

/// Input of one decision instance.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalInput {
    /// Start of the interval the decision applies to.
    pub now_ns: u64,
    /// Length of the interval (GIFT's decision interval, 10 s in the paper); coupon worth is
    /// bandwidth times this.
    pub interval_ns: u64,
    pub osts: Vec<OstCapacity>,
    pub apps: Vec<AppDemand>,
}

/// One cap on one OST.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OstCap {
    pub ost: OstId,
    pub cap_bytes_per_s: f64,
}

/// One application's result.
#[derive(Clone, Debug, PartialEq)]
pub struct AppAllocation {
    pub app: JobId,
    /// BSIP's progress fraction (the fair share set by the most contended OST).
    pub bsip_fraction: f64,
    /// Synchronous progress fraction the caps give: `min_j cap_ij / d_ij`.
    pub progress_fraction: f64,
    /// Caps in the order of the input's OSTs for this application.
    pub caps: Vec<OstCap>,
    /// Coupon worth redeemed this interval (GIFT only).
    pub redeemed_bytes: f64,
    /// Coupon worth issued this interval (GIFT only).
    pub issued_bytes: f64,
    /// Whether the policy allowed throttling the application below its BSIP share.
    pub throttleable: bool,
    /// The application's receding-window redemption rate `c_i(k)` at the start of the
    /// decision (GIFT only; `None` for the baselines).
    pub redemption_rate: Option<f64>,
}

/// Result of one decision instance.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    pub now_ns: u64,
    /// Sorted by application id.
    pub apps: Vec<AppAllocation>,
    /// Eq. 1 for this allocation.
    pub effective_bytes_per_s: f64,
    /// Eq. 1 for the BSIP allocation of the same input.
    pub bsip_effective_bytes_per_s: f64,
    /// Regret node-hours paid at a regret assessment that ran at the start of this decision.
    pub regret_paid_node_hours: f64,
    /// System redemption rate at the start of the decision (GIFT only).
    pub system_redemption_rate: Option<f64>,
    /// The LP solver failed and the allocation fell back to the LP's lower bounds.
    pub lp_fallback: bool,
}

impl Allocation {
    pub fn app(&self, app: &JobId) -> Option<&AppAllocation> {
        self.apps
            .binary_search_by(|a| a.app.cmp(app))
            .ok()
            .map(|i| &self.apps[i])
    }

    /// Sum of caps on every OST, sorted by OST id.
    pub fn ost_loads_bytes_per_s(&self) -> Vec<(OstId, f64)> {
        let mut loads: std::collections::BTreeMap<OstId, f64> = Default::default();
        for a in &self.apps {
            for c in &a.caps {
                *loads.entry(c.ost).or_default() += c.cap_bytes_per_s;
            }
        }
        loads.into_iter().collect()
    }
}

/// Why an input cannot be allocated.
#[derive(Clone, Debug, PartialEq)]
pub enum AllocError {
    TooManyApps { count: usize },
    TooManyOsts { count: usize },
    TooManyUses { count: usize },
    TooManyOstsForApp { app: JobId, count: usize },
    AppWithoutOsts { app: JobId },
    DuplicateApp { app: JobId },
    DuplicateOst { ost: OstId },
    DuplicateOstForApp { app: JobId, ost: OstId },
    UnknownOst { app: JobId, ost: OstId },
    BadCapacity { ost: OstId },
    BadDemand { app: JobId, ost: OstId },
    BadStreams { app: JobId, ost: OstId },
    ZeroInterval,
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::TooManyApps { count } => {
                write!(f, "{count} applications; at most {APPS_MAX}")
            }
            AllocError::TooManyOsts { count } => write!(f, "{count} OSTs; at most {OSTS_MAX}"),
            AllocError::TooManyUses { count } => {
                write!(f, "{count} application-OST pairs; at most {USES_MAX}")
            }
            AllocError::TooManyOstsForApp { app, count } => write!(
                f,
                "application {app} uses {count} OSTs; at most {OSTS_PER_APP_MAX}"
            ),
            AllocError::AppWithoutOsts { app } => write!(f, "application {app} uses no OST"),
            AllocError::DuplicateApp { app } => write!(f, "application {app} listed twice"),
            AllocError::DuplicateOst { ost } => write!(f, "{ost} listed twice"),
            AllocError::DuplicateOstForApp { app, ost } => {
                write!(f, "application {app} lists {ost} twice")
            }
            AllocError::UnknownOst { app, ost } => {
                write!(f, "application {app} uses {ost}, which has no capacity")
            }
            AllocError::BadCapacity { ost } => {
                write!(f, "{ost} capacity must be finite and positive")
            }
            AllocError::BadDemand { app, ost } => write!(
                f,
                "application {app} demand on {ost} must be finite and positive"
            ),
            AllocError::BadStreams { app, ost } => write!(
                f,
                "application {app} must have at least one stream on {ost}"
            ),
            AllocError::ZeroInterval => write!(f, "decision interval must be positive"),
        }
    }
}

impl std::error::Error for AllocError {}

/// A bandwidth allocation policy: one call per decision instance.
pub trait Allocator {
    /// Short name (`gift`, `pofs`, ...).
    fn name(&self) -> &'static str;

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError>;

    /// Coupon and regret accounting of a policy that keeps it (GIFT); `None` otherwise.
    fn regret(&self) -> Option<RegretSummary> {
        None
    }

    /// The artifact's allocation statistics over every decision so far, for allocators
    /// wrapped in [`Recorded`]; `None` otherwise.
    fn allocation_stats(&self) -> Option<AllocationStats> {
        None
    }
}

impl<A: Allocator + ?Sized> Allocator for Box<A> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        (**self).allocate(input)
    }

    fn regret(&self) -> Option<RegretSummary> {
        (**self).regret()
    }

    fn allocation_stats(&self) -> Option<AllocationStats> {
        (**self).allocation_stats()
    }
}

/// GIFT's coupon ledger at one moment: lifetime totals plus what is still owed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RegretSummary {
    pub totals: LedgerTotals,
    /// Worth issued and neither redeemed nor paid yet.
    pub outstanding_bytes: f64,
    /// Node-hours the outstanding coupons would cost if assessed now (§3.3).
    pub outstanding_node_hours: f64,
}

/// One application after validation; its OSTs are [`Prepared::uses`].
#[derive(Clone, Debug)]
pub(crate) struct PreparedApp {
    pub app: JobId,
    pub nodes: u32,
    /// `D_i`: total demand over the application's OSTs.
    pub demand_total_bytes_per_s: f64,
}

/// Validated input: OSTs sorted by id, applications sorted by id.
///
/// The per-application and per-OST lists live in flat buffers indexed by offsets (one
/// allocation each instead of one per application and per OST: at 1,000 applications the
/// allocator was a large part of a decision).
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    pub now_ns: u64,
    pub interval_s: f64,
    pub osts: Vec<OstId>,
    pub capacity_bytes_per_s: Vec<f64>,
    pub apps: Vec<PreparedApp>,
    /// Every application's `(OST index, demand bytes/s)` in input order, application after
    /// application; application `i`'s are `use_start[i]..use_start[i + 1]`. With the `stream`
    /// share unit the demand is the input's demand times the stream count (every stream may
    /// use the whole OST).
    uses_flat: Vec<(usize, f64)>,
    use_start: Vec<usize>,
    /// Every OST's `(app index, demand)` of the applications on it, by app index, OST after
    /// OST; OST `j`'s are `user_start[j]..user_start[j + 1]`.
    users_flat: Vec<(usize, f64)>,
    user_start: Vec<usize>,
    /// Beside `users_flat`: the fair-share weight of each entry (1 with the `app` share unit,
    /// the stream count with the `stream` unit).
    user_weights_flat: Vec<f64>,
    /// Beside `users_flat`: the entry's position in `uses_flat` (to write per-OST results back
    /// per application).
    user_use_flat: Vec<usize>,
}

/// The first 8 bytes of a job id as a big-endian integer, zero-padded: `a < b` implies
/// `id_prefix(a) <= id_prefix(b)` because job ids hold no NUL byte.
fn id_prefix(id: &JobId) -> u64 {
    let mut head = [0u8; 8];
    let bytes = id.as_str().as_bytes();
    let len = bytes.len().min(8);
    head[..len].copy_from_slice(&bytes[..len]);
    u64::from_be_bytes(head)
}

/// Finds an OST's index among the sorted OSTs: a direct table when the ids are dense enough
/// (the usual numbering from 0), a binary search otherwise.
enum OstIndex<'a> {
    Table(Vec<u32>),
    Search(&'a [OstCapacity]),
}

impl<'a> OstIndex<'a> {
    fn new(osts: &'a [OstCapacity]) -> OstIndex<'a> {
        // The table costs one u32 per id up to the largest; bounded by a few per OST.
        let id_max = osts.last().map_or(0, |o| o.ost.0 as usize);
        if id_max < 4 * osts.len() + 64 {
            let mut table = vec![u32::MAX; id_max + 1];
            for (j, o) in osts.iter().enumerate() {
                table[o.ost.0 as usize] = j as u32;
            }
            OstIndex::Table(table)
        } else {
            OstIndex::Search(osts)
        }
    }

    fn get(&self, ost: OstId) -> Option<usize> {
        match self {
            OstIndex::Table(table) => table
                .get(ost.0 as usize)
                .filter(|&&j| j != u32::MAX)
                .map(|&j| j as usize),
            OstIndex::Search(osts) => osts.binary_search_by_key(&ost, |o| o.ost).ok(),
        }
    }
}

impl Prepared {
    /// Validates the input with the paper's share unit (one share per application and OST).
    #[cfg(test)]
    pub fn new(input: &IntervalInput) -> Result<Prepared, AllocError> {
        Prepared::with_unit(input, ShareUnit::App)
    }

    /// Validates the input; `unit` says what one fair share belongs to.
    pub fn with_unit(input: &IntervalInput, unit: ShareUnit) -> Result<Prepared, AllocError> {
        if input.interval_ns == 0 {
            return Err(AllocError::ZeroInterval);
        }
        if input.apps.len() > APPS_MAX {
            return Err(AllocError::TooManyApps {
                count: input.apps.len(),
            });
        }
        if input.osts.len() > OSTS_MAX {
            return Err(AllocError::TooManyOsts {
                count: input.osts.len(),
            });
        }
        let mut osts: Vec<OstCapacity> = input.osts.clone();
        osts.sort_by_key(|o| o.ost);
        for w in osts.windows(2) {
            if w[0].ost == w[1].ost {
                return Err(AllocError::DuplicateOst { ost: w[0].ost });
            }
        }
        for o in &osts {
            if !(o.capacity_bytes_per_s.is_finite() && o.capacity_bytes_per_s > 0.0) {
                return Err(AllocError::BadCapacity { ost: o.ost });
            }
        }
        let uses_total: usize = input.apps.iter().map(|a| a.osts.len()).sum();
        if uses_total > USES_MAX {
            return Err(AllocError::TooManyUses { count: uses_total });
        }
        // Sorted by job id; the ids are copied beside their index so the sort compares
        // contiguous keys (equal ids are refused below, so instability does not matter), and
        // led by their first 8 bytes as an integer, which orders them as the ids do (a job id
        // has no NUL byte, so the zero padding of a short id sorts first) and settles most
        // comparisons without comparing the ids.
        let mut keyed: Vec<(u64, JobId, usize)> = input
            .apps
            .iter()
            .enumerate()
            .map(|(i, a)| (id_prefix(&a.app), a.app, i))
            .collect();
        keyed.sort_unstable();
        // Every use's OST index, looked up once (input order; `usize::MAX`: unknown OST), and
        // the users per OST counted so the per-OST lists get their offsets.
        let index = OstIndex::new(&osts);
        let mut found: Vec<usize> = Vec::with_capacity(uses_total);
        let mut found_start: Vec<usize> = Vec::with_capacity(input.apps.len() + 1);
        let mut user_start = vec![0usize; osts.len() + 1];
        for a in &input.apps {
            found_start.push(found.len());
            for d in &a.osts {
                let j = index.get(d.ost);
                if let Some(j) = j {
                    user_start[j + 1] += 1;
                }
                found.push(j.unwrap_or(usize::MAX));
            }
        }
        found_start.push(found.len());
        for j in 0..osts.len() {
            user_start[j + 1] += user_start[j];
        }
        let users_total = user_start[osts.len()];
        let mut next_user = user_start.clone();
        let mut users_flat = vec![(0usize, 0.0f64); users_total];
        let mut user_weights_flat = vec![0.0f64; users_total];
        let mut user_use_flat = vec![0usize; users_total];
        let mut uses_flat: Vec<(usize, f64)> = Vec::with_capacity(uses_total);
        let mut use_start: Vec<usize> = Vec::with_capacity(input.apps.len() + 1);
        let mut apps: Vec<PreparedApp> = Vec::with_capacity(keyed.len());
        for (idx, &(_, _, i)) in keyed.iter().enumerate() {
            let a = &input.apps[i];
            if idx > 0 && apps.last().is_some_and(|p: &PreparedApp| p.app == a.app) {
                return Err(AllocError::DuplicateApp { app: a.app });
            }
            if a.osts.is_empty() {
                return Err(AllocError::AppWithoutOsts { app: a.app });
            }
            if a.osts.len() > OSTS_PER_APP_MAX {
                return Err(AllocError::TooManyOstsForApp {
                    app: a.app,
                    count: a.osts.len(),
                });
            }
            let first = uses_flat.len();
            use_start.push(first);
            for (d, &j) in a
                .osts
                .iter()
                .zip(&found[found_start[i]..found_start[i + 1]])
            {
                if j == usize::MAX {
                    return Err(AllocError::UnknownOst {
                        app: a.app,
                        ost: d.ost,
                    });
                }
                if !(d.demand_bytes_per_s.is_finite() && d.demand_bytes_per_s > 0.0) {
                    return Err(AllocError::BadDemand {
                        app: a.app,
                        ost: d.ost,
                    });
                }
                if d.streams == 0 {
                    return Err(AllocError::BadStreams {
                        app: a.app,
                        ost: d.ost,
                    });
                }
                if uses_flat[first..].iter().any(|&(k, _)| k == j) {
                    return Err(AllocError::DuplicateOstForApp {
                        app: a.app,
                        ost: d.ost,
                    });
                }
                let (demand, weight) = match unit {
                    ShareUnit::App => (d.demand_bytes_per_s, 1.0),
                    ShareUnit::Stream => {
                        let k = f64::from(d.streams);
                        (d.demand_bytes_per_s * k, k)
                    }
                };
                let slot = next_user[j];
                next_user[j] += 1;
                users_flat[slot] = (idx, demand);
                user_weights_flat[slot] = weight;
                user_use_flat[slot] = uses_flat.len();
                uses_flat.push((j, demand));
            }
            apps.push(PreparedApp {
                app: a.app,
                nodes: a.nodes,
                demand_total_bytes_per_s: uses_flat[first..].iter().map(|&(_, d)| d).sum(),
            });
        }
        use_start.push(uses_flat.len());
        // Every counted use was written once (a repeat or an unknown OST returned above).
        debug_assert!((0..osts.len()).all(|j| next_user[j] == user_start[j + 1]));
        Ok(Prepared {
            now_ns: input.now_ns,
            interval_s: input.interval_ns as f64 / crate::NS_PER_S as f64,
            osts: osts.iter().map(|o| o.ost).collect(),
            capacity_bytes_per_s: osts.iter().map(|o| o.capacity_bytes_per_s).collect(),
            apps,
            uses_flat,
            use_start,
            users_flat,
            user_start,
            user_weights_flat,
            user_use_flat,
        })
    }

    /// Application `i`'s `(OST index, demand bytes/s)`, in input order.
    pub fn uses(&self, i: usize) -> &[(usize, f64)] {
        &self.uses_flat[self.use_start[i]..self.use_start[i + 1]]
    }

    /// Every application's uses, application after application (offsets: [`Prepared::use_range`]).
    pub fn uses_flat(&self) -> &[(usize, f64)] {
        &self.uses_flat
    }

    /// Where application `i`'s uses sit in [`Prepared::uses_flat`].
    pub fn use_range(&self, i: usize) -> std::ops::Range<usize> {
        self.use_start[i]..self.use_start[i + 1]
    }

    /// Number of OSTs (rows of the LP).
    pub fn osts_len(&self) -> usize {
        self.osts.len()
    }

    /// OST `j`'s `(app index, demand)` pairs, by app index.
    pub fn users(&self, j: usize) -> &[(usize, f64)] {
        &self.users_flat[self.user_start[j]..self.user_start[j + 1]]
    }

    /// The fair-share weights of OST `j`'s users, beside [`Prepared::users`].
    pub fn user_weights(&self, j: usize) -> &[f64] {
        &self.user_weights_flat[self.user_start[j]..self.user_start[j + 1]]
    }

    /// Where each of OST `j`'s users has this OST in [`Prepared::uses_flat`], beside
    /// [`Prepared::users`].
    pub fn user_use_positions(&self, j: usize) -> &[usize] {
        &self.user_use_flat[self.user_start[j]..self.user_start[j + 1]]
    }

    /// Per-OST capacity left after giving every application `x_i d_ij`.
    pub fn gaps_bytes_per_s(&self, fractions: &[f64]) -> Vec<f64> {
        let mut gaps = self.capacity_bytes_per_s.clone();
        for (i, &x) in fractions.iter().enumerate().take(self.apps.len()) {
            for &(j, d) in self.uses(i) {
                gaps[j] -= x * d;
            }
        }
        gaps
    }

    /// Eq. 1 for synchronous progress fractions.
    pub fn effective_bytes_per_s(&self, fractions: &[f64]) -> f64 {
        self.apps
            .iter()
            .zip(fractions)
            .map(|(a, &x)| x * a.demand_total_bytes_per_s)
            .sum()
    }

    /// Builds the output for synchronous fractions `x_i` (caps `x_i d_ij`).
    pub fn synchronous_allocation(&self, fractions: &[f64], bsip: &[f64]) -> Allocation {
        let apps = self
            .apps
            .iter()
            .enumerate()
            .map(|(i, a)| AppAllocation {
                app: a.app,
                bsip_fraction: bsip[i],
                progress_fraction: fractions[i],
                caps: self
                    .uses(i)
                    .iter()
                    .map(|&(j, d)| OstCap {
                        ost: self.osts[j],
                        cap_bytes_per_s: fractions[i] * d,
                    })
                    .collect(),
                redeemed_bytes: 0.0,
                issued_bytes: 0.0,
                throttleable: false,
                redemption_rate: None,
            })
            .collect();
        Allocation {
            now_ns: self.now_ns,
            apps,
            effective_bytes_per_s: self.effective_bytes_per_s(fractions),
            bsip_effective_bytes_per_s: self.effective_bytes_per_s(bsip),
            regret_paid_node_hours: 0.0,
            system_redemption_rate: None,
            lp_fallback: false,
        }
    }
}

#[cfg(test)]
mod tests;
