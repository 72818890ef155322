//! The seven policies GIFT is compared with (§2 and §4).
//!
//! * POFS, BSIP, MBW follow §2 / Fig. 5.
//! * TSA, TMF and RND are "throttle X" policies: the §3.4 LP (maximize effective bandwidth,
//!   never below BSIP's effective bandwidth) where only the picked applications may go down to
//!   `(1 - B_thres)` of their BSIP share, everyone else keeps at least BSIP, and no coupons are
//!   issued. They differ only in whom they pick: the smaller half by node count (TSA), the
//!   most frequently appearing half (TMF), a fair coin per application (RND).
//! * ESA gives BSIP's bandwidth gaps to the smallest applications first (no throttling).
//!
//! Every policy carries [`ShareOptions`]: the share unit (per application, the paper; per open
//! stream, the authors' artifact) and whether leftover bandwidth is redistributed.

use std::collections::BTreeMap;

use rand::{Rng, RngCore};

use super::lp::{self, LpSpec};
use super::share::{bsip_fractions, pofs_bytes_per_s, redistribute, repair, ShareOptions};
use super::{AllocError, Allocation, Allocator, IntervalInput, OstCap, Prepared};
use crate::model::JobId;

/// Per-OST Fair Share: every OST split max-min fairly among its applications; no
/// synchronization, so bandwidth above an application's slowest OST is wasted.
#[derive(Clone, Debug, Default)]
pub struct Pofs {
    pub share: ShareOptions,
}

impl Allocator for Pofs {
    fn name(&self) -> &'static str {
        "pofs"
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.share.unit)?;
        let pofs = pofs_bytes_per_s(&p);
        let bsip = bsip_fractions(&p, &pofs);
        // Effective progress of a POFS allocation is its slowest OST's, i.e. BSIP's.
        let mut out = p.synchronous_allocation(&bsip, &bsip);
        for (i, a) in out.apps.iter_mut().enumerate() {
            a.caps = p
                .uses(i)
                .iter()
                .zip(&pofs[p.use_range(i)])
                .map(|(&(j, _), &s)| OstCap {
                    ost: p.osts[j],
                    cap_bytes_per_s: s,
                })
                .collect();
        }
        if self.share.redistribute {
            redistribute(&p, &mut out);
        }
        Ok(out)
    }
}

/// Basic Synchronous I/O Progress: every application gets, on all its OSTs, the fair share of
/// its most contended OST. Gaps stay unused.
#[derive(Clone, Debug, Default)]
pub struct Bsip {
    pub share: ShareOptions,
}

impl Allocator for Bsip {
    fn name(&self) -> &'static str {
        "bsip"
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.share.unit)?;
        let bsip = bsip_fractions(&p, &pofs_bytes_per_s(&p));
        let mut out = p.synchronous_allocation(&bsip, &bsip);
        if self.share.redistribute {
            redistribute(&p, &mut out);
        }
        Ok(out)
    }
}

/// Minimum Bandwidth Wastage: the LP maximizing effective bandwidth with synchronous progress
/// and no fairness floor, so an application can be starved (Fig. 5, application E).
#[derive(Clone, Debug, Default)]
pub struct Mbw {
    pub share: ShareOptions,
}

impl Allocator for Mbw {
    fn name(&self) -> &'static str {
        "mbw"
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.share.unit)?;
        let n = p.apps.len();
        let bsip = bsip_fractions(&p, &pofs_bytes_per_s(&p));
        let floors = vec![0.0; n];
        let spec = LpSpec {
            floors: &floors,
            throttle_reference: &vec![None; n],
            effective_min_bytes_per_s: None,
            coupon_baseline_bytes_per_s: None,
        };
        let (mut x, fallback) = match lp::solve(&p, &spec) {
            Some(x) => (x, false),
            None => (bsip.clone(), true),
        };
        repair(&p, &mut x, &floors);
        let mut out = p.synchronous_allocation(&x, &bsip);
        out.lp_fallback = fallback;
        for a in &mut out.apps {
            a.throttleable = true;
        }
        if self.share.redistribute {
            redistribute(&p, &mut out);
        }
        Ok(out)
    }
}

/// LP bounds for TSA, TMF and RND: a picked application may go down to `(1 - B_thres)` of its
/// BSIP share (its throttle measured from BSIP), the others not below BSIP.
pub(crate) fn picked_bounds(
    bsip: &[f64],
    picked: &[bool],
    b_thres: f64,
) -> (Vec<f64>, Vec<Option<f64>>) {
    let floors = bsip
        .iter()
        .zip(picked)
        .map(|(&b, &t)| if t { b * (1.0 - b_thres) } else { b })
        .collect();
    let reference = bsip
        .iter()
        .zip(picked)
        .map(|(&b, &t)| t.then_some(b))
        .collect();
    (floors, reference)
}

/// The LP shared by TSA, TMF and RND, with `picked[i]` the applications that may be throttled.
fn throttle_picked(
    p: &Prepared,
    picked: &[bool],
    b_thres: f64,
    share: &ShareOptions,
) -> Allocation {
    let bsip = bsip_fractions(p, &pofs_bytes_per_s(p));
    let (floors, reference) = picked_bounds(&bsip, picked, b_thres);
    let spec = LpSpec {
        floors: &floors,
        throttle_reference: &reference,
        effective_min_bytes_per_s: Some(p.effective_bytes_per_s(&bsip)),
        coupon_baseline_bytes_per_s: None,
    };
    let (mut x, fallback) = match lp::solve(p, &spec) {
        Some(x) => (x, false),
        None => (bsip.clone(), true),
    };
    repair(p, &mut x, &floors);
    let mut out = p.synchronous_allocation(&x, &bsip);
    out.lp_fallback = fallback;
    for (a, &t) in out.apps.iter_mut().zip(picked) {
        a.throttleable = t;
    }
    if share.redistribute {
        redistribute(p, &mut out);
    }
    out
}

/// Throttle Small Applications: the applications with at most the (lower) median node count
/// of those doing I/O may be throttled.
#[derive(Clone, Debug)]
pub struct Tsa {
    pub b_thres: f64,
    pub share: ShareOptions,
}

impl Default for Tsa {
    fn default() -> Self {
        Tsa {
            b_thres: 0.1,
            share: ShareOptions::default(),
        }
    }
}

impl Allocator for Tsa {
    fn name(&self) -> &'static str {
        "tsa"
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.share.unit)?;
        let mut nodes: Vec<u32> = p.apps.iter().map(|a| a.nodes).collect();
        nodes.sort_unstable();
        let median = nodes.get(nodes.len().saturating_sub(1) / 2).copied();
        let picked: Vec<bool> = p.apps.iter().map(|a| Some(a.nodes) <= median).collect();
        Ok(throttle_picked(&p, &picked, self.b_thres, &self.share))
    }
}

/// Expand Small Applications: BSIP, then every bandwidth gap goes to the applications with the
/// fewest nodes first (ties by id), each as far as the gaps on all its OSTs allow.
#[derive(Clone, Debug, Default)]
pub struct Esa {
    pub share: ShareOptions,
}

impl Allocator for Esa {
    fn name(&self) -> &'static str {
        "esa"
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.share.unit)?;
        let bsip = bsip_fractions(&p, &pofs_bytes_per_s(&p));
        let mut x = bsip.clone();
        let mut gaps = p.gaps_bytes_per_s(&bsip);
        let mut order: Vec<usize> = (0..p.apps.len()).collect();
        order.sort_by_key(|&i| (p.apps[i].nodes, i));
        for i in order {
            let uses = p.uses(i);
            let delta = uses
                .iter()
                .map(|&(j, d)| gaps[j].max(0.0) / d)
                .fold(1.0 - x[i], f64::min)
                .max(0.0);
            for &(j, d) in uses {
                gaps[j] -= delta * d;
            }
            x[i] += delta;
        }
        let mut out = p.synchronous_allocation(&x, &bsip);
        if self.share.redistribute {
            redistribute(&p, &mut out);
        }
        Ok(out)
    }
}

/// Throttle Most Frequent applications: applications whose count of decision intervals with
/// I/O so far is at least the (upper) median of those doing I/O may be throttled.
#[derive(Clone, Debug)]
pub struct Tmf {
    pub b_thres: f64,
    /// Most applications whose appearances are counted; later ones count as appearing once.
    pub apps_max: usize,
    pub share: ShareOptions,
    appearances: BTreeMap<JobId, u64>,
}

impl Default for Tmf {
    fn default() -> Self {
        Tmf {
            b_thres: 0.1,
            apps_max: 100_000,
            share: ShareOptions::default(),
            appearances: BTreeMap::new(),
        }
    }
}

impl Tmf {
    pub fn appearances(&self, app: &JobId) -> u64 {
        self.appearances.get(app).copied().unwrap_or(0)
    }
}

impl Allocator for Tmf {
    fn name(&self) -> &'static str {
        "tmf"
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.share.unit)?;
        let counts: Vec<u64> = p
            .apps
            .iter()
            .map(|a| {
                if let Some(c) = self.appearances.get_mut(&a.app) {
                    *c += 1;
                    *c
                } else {
                    if self.appearances.len() < self.apps_max {
                        self.appearances.insert(a.app, 1);
                    }
                    1
                }
            })
            .collect();
        let mut sorted = counts.clone();
        sorted.sort_unstable();
        let median = sorted.get(sorted.len() / 2).copied();
        let picked: Vec<bool> = counts.iter().map(|&c| Some(c) >= median).collect();
        Ok(throttle_picked(&p, &picked, self.b_thres, &self.share))
    }
}

/// Throttle Randomly: every application doing I/O may be throttled with probability 1/2,
/// drawn from the seeded generator given at construction (applications in id order).
#[derive(Clone, Debug)]
pub struct Rnd<R: RngCore> {
    pub b_thres: f64,
    pub share: ShareOptions,
    rng: R,
}

impl<R: RngCore> Rnd<R> {
    pub fn new(rng: R) -> Self {
        Rnd {
            b_thres: 0.1,
            share: ShareOptions::default(),
            rng,
        }
    }
}

impl<R: RngCore> Allocator for Rnd<R> {
    fn name(&self) -> &'static str {
        "rnd"
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.share.unit)?;
        let picked: Vec<bool> = p.apps.iter().map(|_| self.rng.random_bool(0.5)).collect();
        Ok(throttle_picked(&p, &picked, self.b_thres, &self.share))
    }
}
