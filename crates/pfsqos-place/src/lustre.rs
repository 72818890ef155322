//! Lustre's own OST allocator (lustre-release `lod_qos.c`, `lu_tgt_descs.c`), the baseline iez
//! compares against and falls back to.
//!
//! - **Round robin** (`lod_alloc_rr`) walks an array built by `lod_qos_calc_rr`, which
//!   "interleaves OSTs from the different OSSs so that RR allocation can balance OSSs evenly":
//!   OSSs in the order `qos_add_tgt` keeps (most OSTs first; among equals, the order they
//!   appeared), and the `j`-th OST of an OSS with `c` OSTs goes to slot `j·n/c`, or the next
//!   free one. The start index is reseeded at random every `(2000/n + 30)·n` creates
//!   (`LOV_CREATE_RESEED_MIN`, `LOV_CREATE_RESEED_MULT`); once it has gone round, an offset
//!   precesses when the stripe count does not already shift the start.
//! - **Weighted QOS** (`lod_alloc_qos`) runs unless free space is even:
//!   `ba_max·(256 − threshold_rr) >> 8 < ba_min` means "same space", round robin
//!   (`qos_threshold_rr` 17 %, stored as `17·256/100`). Each OST weighs
//!   `(bavail >> 8) − (tgt_penalty + oss_penalty)`, floored at 0; a stripe goes to the first
//!   OST whose cumulative weight reaches a random number below the total. Penalties
//!   (`ltd_qos_penalties_calc`, `ltd_qos_update`): `prio_wide = 256 − prio_free` (`prio_free`
//!   90 % stored as `90·256/100`); per object, an OST's is `(ba/2)/(active OSTs − 1)·prio_wide
//!   >> 8` and an OSS's `(oss ba/2)/(its OSTs·(active OSSs − 1))·prio_wide >> 8` (with one
//!   active OSS, OST penalties double instead); a pick halves the chosen OST's and OSS's
//!   penalties and adds per-object × (OSTs) and × (active OSSs), then takes one per-object off
//!   every OSS and OST. Idle penalties decay by halving per `qos_maxage` (5 s) of
//!   `age = idle/8` and reset after `32·maxage`.
//! - An OST is full when `bavail < min(used/1024, 1 GiB)` (`lod_qos_dev_is_full`); both
//!   allocators skip full OSTs. A start OST (`lfs setstripe -i`) walks OSTs in index order
//!   from it (`lod_alloc_specific`).
//!
//! Units: `ba = bavail >> 8` throughout (newer Lustre shifts to keep products in 64 bits), so
//! weights and penalties are in 256-byte units. Randomness comes from a seeded ChaCha8 stream
//! (the kernel's PRNG in Lustre), so runs are reproducible. Where Lustre would give a file
//! fewer stripes than asked (too few OSTs with space), we refuse with
//! [`PlacementError::NotEnoughSpace`]: a layout always has the stripes asked for.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::stats::{ServerStats, StatsError};
use super::{Placement, PlacementContext, PlacementError, PlacementRequest, PLACER_OSTS_MAX};
use crate::model::{OstId, StripeLayout};
use crate::NS_PER_S;

/// `LOV_QOS_DEF_THRESHOLD_RR_PCT`.
pub const QOS_THRESHOLD_RR_PCT: u32 = 17;
/// `LOV_QOS_DEF_PRIO_FREE` (some manuals say 91; the source says 90).
pub const QOS_PRIO_FREE_PCT: u32 = 90;
/// `LOV_DESC_QOS_MAXAGE_DEFAULT`, in seconds.
pub const QOS_MAXAGE_S: u64 = 5;
/// `LOV_CREATE_RESEED_MIN`.
pub const RR_RESEED_MIN: u64 = 2000;
/// `LOV_CREATE_RESEED_MULT`.
pub const RR_RESEED_MULT: u64 = 30;

/// Lustre's tunables, as `lctl set_param lod.*.qos_*` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LustreQosConfig {
    pub threshold_rr_pct: u32,
    pub prio_free_pct: u32,
    pub maxage_s: u64,
}

impl Default for LustreQosConfig {
    fn default() -> Self {
        LustreQosConfig {
            threshold_rr_pct: QOS_THRESHOLD_RR_PCT,
            prio_free_pct: QOS_PRIO_FREE_PCT,
            maxage_s: QOS_MAXAGE_S,
        }
    }
}

/// `lod_qos_calc_rr`: the round-robin array of OST indices for OSTs on the OSSs `ost_oss`
/// (indexed by OST). OSSs are ordered as `qos_add_tgt` keeps them when OSTs are added in index
/// order: an OSS moves before the first OSS with strictly fewer OSTs than it now has.
pub fn rr_array(ost_oss: &[u32]) -> Vec<u32> {
    // (oss, its OST count), in lq_oss_list order.
    let mut list: Vec<(u32, u32)> = Vec::new();
    for &oss in ost_oss {
        let count = match list.iter().position(|&(o, _)| o == oss) {
            Some(p) => list.remove(p).1 + 1,
            None => 1,
        };
        let at = list
            .iter()
            .position(|&(_, c)| count > c)
            .unwrap_or(list.len());
        list.insert(at, (oss, count));
    }
    let n = ost_oss.len();
    // Each OSS's OSTs in index order.
    let oss_slots = ost_oss.iter().map(|&o| o as usize + 1).max().unwrap_or(0);
    let mut by_oss: Vec<Vec<u32>> = vec![Vec::new(); oss_slots];
    for (i, &o) in ost_oss.iter().enumerate() {
        by_oss[o as usize].push(i as u32);
    }
    let mut array: Vec<Option<u32>> = vec![None; n];
    let mut placed = 0;
    for &(oss, count) in &list {
        let osts = &by_oss[oss as usize];
        assert_eq!(osts.len(), count as usize);
        for (j, &i) in osts.iter().enumerate() {
            // "Evenly space these OSTs across arrayspace".
            let mut next = j * n / count as usize;
            while array[next].is_some() {
                next = (next + 1) % n;
            }
            array[next] = Some(i);
            placed += 1;
        }
    }
    assert_eq!(placed, n, "every OST placed in the round-robin array");
    array.into_iter().map(|s| s.expect("placed")).collect()
}

/// `lod_qos_dev_is_full`: fewer bytes available than the smaller of 0.1 % of the used bytes
/// and 1 GiB.
pub fn ost_is_full(avail_bytes: u64, used_bytes: u64) -> bool {
    avail_bytes < (used_bytes >> 10).min(1 << 30)
}

#[derive(Clone, Debug, Default)]
struct QosOst {
    oss: usize,
    avail_bytes: u64,
    used_bytes: u64,
    penalty: u64,
    penalty_per_obj: u64,
    weight: u64,
    used_at_s: u64,
    usable: bool,
}

#[derive(Clone, Debug, Default)]
struct QosOss {
    ost_count: u64,
    ba: u64,
    penalty: u64,
    penalty_per_obj: u64,
    used_at_s: u64,
}

/// Which of Lustre's allocators placed a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LustreAlloc {
    RoundRobin,
    Qos,
    /// `lfs setstripe -i`: from the given start OST.
    Specific,
}

/// Lustre's allocator over a fixed set of OSTs. Without statistics every OST is its own OSS
/// with unknown (so even) free space: plain round robin over `0..n`.
#[derive(Clone, Debug)]
pub struct LustreAllocator {
    config: LustreQosConfig,
    ost_oss: Vec<u32>,
    rr_array: Vec<u32>,
    osts: Vec<QosOst>,
    osses: Vec<QosOss>,
    active_oss_count: u64,
    /// Statistics changed since penalties were computed (`lq_dirty`).
    dirty: bool,
    /// Penalties restart from 0 at the next computation (`lq_reset`).
    reset: bool,
    same_space: bool,
    has_space: bool,
    start_idx: u32,
    offset_idx: u32,
    start_count: i64,
    rng: ChaCha8Rng,
    last: Option<LustreAlloc>,
}

impl LustreAllocator {
    /// An allocator for `ost_count` OSTs (at most [`PLACER_OSTS_MAX`]: more are cut there, and
    /// placers refuse such requests) with nothing known of them; randomness from `seed`.
    pub fn new(ost_count: u32, config: LustreQosConfig, seed: u64) -> LustreAllocator {
        let ost_count = ost_count.min(PLACER_OSTS_MAX);
        let ost_oss: Vec<u32> = (0..ost_count).collect();
        LustreAllocator {
            config,
            // What rr_array gives for one OST per OSS (tested), without its quadratic walk.
            rr_array: ost_oss.clone(),
            osts: (0..ost_count as usize)
                .map(|i| QosOst {
                    oss: i,
                    ..QosOst::default()
                })
                .collect(),
            osses: vec![
                QosOss {
                    ost_count: 1,
                    ..QosOss::default()
                };
                ost_count as usize
            ],
            ost_oss,
            active_oss_count: 0,
            dirty: false,
            reset: true,
            same_space: true,
            has_space: false,
            start_idx: 0,
            offset_idx: 0,
            start_count: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            last: None,
        }
    }

    pub fn ost_count(&self) -> u32 {
        self.osts.len() as u32
    }

    /// The round-robin array (`lqr_pool`).
    pub fn rr_array(&self) -> &[u32] {
        &self.rr_array
    }

    /// The allocator that placed the last file.
    pub fn last_alloc(&self) -> Option<LustreAlloc> {
        self.last
    }

    /// Takes a statistics snapshot (Lustre's statfs refresh): the OST→OSS map (rebuilding the
    /// round-robin array if it changed) and each OST's space. Penalties are recomputed at the
    /// next weighted allocation, as Lustre does. A snapshot of another OST count is refused.
    pub fn observe_servers(&mut self, stats: &ServerStats) -> Result<(), StatsError> {
        stats.validate()?;
        if stats.osts.len() != self.osts.len() {
            return Err(StatsError::OstCountMismatch {
                expected: self.osts.len(),
                got: stats.osts.len(),
            });
        }
        let ost_oss: Vec<u32> = stats.osts.iter().map(|o| o.oss.0).collect();
        if ost_oss != self.ost_oss {
            self.rr_array = rr_array(&ost_oss);
            self.osses = vec![QosOss::default(); stats.osses.len()];
            for &o in &ost_oss {
                self.osses[o as usize].ost_count += 1;
            }
            self.ost_oss = ost_oss;
            self.reset = true;
        }
        for (q, s) in self.osts.iter_mut().zip(&stats.osts) {
            q.oss = s.oss.0 as usize;
            q.avail_bytes = s.avail_bytes;
            q.used_bytes = s.used_bytes();
        }
        self.has_space = true;
        self.dirty = true;
        Ok(())
    }

    /// Whether the next allocation without a start OST is round robin (free space even, or
    /// unknown, or fewer than two OSTs with space), after recomputing penalties at `now_ns`.
    pub fn uses_round_robin(&mut self, now_ns: u64) -> bool {
        self.calc_penalties(now_ns);
        !self.qos_usable()
    }

    fn full(&self, i: usize) -> bool {
        self.has_space && ost_is_full(self.osts[i].avail_bytes, self.osts[i].used_bytes)
    }

    fn qos_usable(&self) -> bool {
        self.has_space && !self.same_space && self.osts.len() >= 2
    }

    /// `ltd_qos_penalties_calc` (`lod_qos_calc_ppo`), when the statistics changed.
    fn calc_penalties(&mut self, now_ns: u64) {
        if !self.dirty {
            return;
        }
        let now_s = now_ns / NS_PER_S;
        let prio_free = u64::from(self.config.prio_free_pct.min(100)) * 256 / 100;
        let prio_wide = 256 - prio_free;
        let threshold_rr = u64::from(self.config.threshold_rr_pct.min(100)) * 256 / 100;
        let maxage = self.config.maxage_s.max(1);
        // Lustre counts active (connected) OSTs; ours are all active.
        let active_osts = self.osts.len() as u64;
        for s in &mut self.osses {
            s.ba = 0;
        }
        self.active_oss_count = 0;
        let (mut ba_min, mut ba_max) = (u64::MAX, 0u64);
        let num_active = active_osts.saturating_sub(1).max(1);
        for o in &mut self.osts {
            let ba = o.avail_bytes >> 8;
            if ba == 0 {
                continue;
            }
            ba_min = ba_min.min(ba);
            ba_max = ba_max.max(ba);
            let oss = &mut self.osses[o.oss];
            if oss.ba == 0 {
                self.active_oss_count += 1;
            }
            oss.ba += ba;
            o.penalty_per_obj = ((ba >> 1) / num_active * prio_wide) >> 8;
            let age = now_s.saturating_sub(o.used_at_s) >> 3;
            if self.reset || age > 32 * maxage {
                o.penalty = 0;
            } else if age > maxage {
                o.penalty >>= (age / maxage).min(63);
            }
        }
        let mut num_active_oss = self.active_oss_count.saturating_sub(1);
        if num_active_oss < 1 {
            // One OSS cannot be penalized against others: double the OST penalty instead.
            num_active_oss = 1;
            for o in &mut self.osts {
                o.penalty_per_obj <<= 1;
            }
        }
        for s in &mut self.osses {
            let per_ost = (s.ba >> 1) / (s.ost_count.max(1) * num_active_oss);
            s.penalty_per_obj = (per_ost * prio_wide) >> 8;
            let age = now_s.saturating_sub(s.used_at_s) >> 3;
            if self.reset || age > 32 * maxage {
                s.penalty = 0;
            } else if age > maxage {
                s.penalty >>= (age / maxage).min(63);
            }
        }
        self.dirty = false;
        self.reset = false;
        // "If each ost has almost same free space, do rr allocation".
        self.same_space = active_osts < 2 || (ba_max * (256 - threshold_rr)) >> 8 < ba_min;
        if self.same_space {
            // Weights start afresh the next time QOS is used.
            self.reset = true;
        }
    }

    fn weight(&self, i: usize) -> u64 {
        let o = &self.osts[i];
        (o.avail_bytes >> 8).saturating_sub(o.penalty + self.osses[o.oss].penalty)
    }

    /// `ltd_qos_update` (`lod_qos_used`) after a stripe went to OST `i`.
    fn qos_used(&mut self, i: usize, now_s: u64) {
        let n = self.osts.len() as u64;
        let active_oss = self.active_oss_count;
        let oss = self.osts[i].oss;
        let o = &mut self.osts[i];
        o.usable = false;
        // "Decay old penalty by half (we're adding max penalty, and don't want it to run
        // away.)"
        o.penalty >>= 1;
        o.used_at_s = now_s;
        o.penalty += o.penalty_per_obj * n;
        let s = &mut self.osses[oss];
        s.penalty >>= 1;
        s.used_at_s = now_s;
        s.penalty += s.penalty_per_obj * active_oss;
        for s in &mut self.osses {
            s.penalty = s.penalty.saturating_sub(s.penalty_per_obj);
        }
        for o in &mut self.osts {
            o.penalty = o.penalty.saturating_sub(o.penalty_per_obj);
        }
        for j in 0..self.osts.len() {
            let w = self.weight(j);
            self.osts[j].weight = w;
        }
    }

    /// `lod_alloc_qos`: `None` when QOS does not apply (Lustre's `-EAGAIN`, then round robin).
    fn alloc_qos(&mut self, count: u32, now_ns: u64) -> Option<Vec<OstId>> {
        self.calc_penalties(now_ns);
        if !self.qos_usable() {
            return None;
        }
        let mut good = 0;
        for i in 0..self.osts.len() {
            let usable = !self.full(i);
            self.osts[i].usable = usable;
            if usable {
                let w = self.weight(i);
                self.osts[i].weight = w;
                good += 1;
            }
        }
        if good < count {
            return None;
        }
        let now_s = now_ns / NS_PER_S;
        let mut chosen = Vec::with_capacity(count as usize);
        while chosen.len() < count as usize {
            let total: u64 = self
                .osts
                .iter()
                .filter(|o| o.usable)
                .map(|o| o.weight)
                .sum();
            let rand = if total > 0 {
                self.rng.random_range(0..total)
            } else {
                0
            };
            let mut cur = 0u64;
            let mut pick = None;
            for (i, o) in self.osts.iter().enumerate() {
                if !o.usable {
                    continue;
                }
                cur += o.weight;
                // 0-weight OSTs are taken only when rand is 0.
                if cur < rand {
                    continue;
                }
                pick = Some(i);
                break;
            }
            let Some(i) = pick else {
                // Lustre gives up and retries next time with fresh penalties.
                self.dirty = true;
                self.same_space = false;
                return None;
            };
            chosen.push(OstId(i as u32));
            self.qos_used(i, now_s);
        }
        Some(chosen)
    }

    /// `lod_alloc_rr`.
    fn alloc_rr(&mut self, count: u32) -> Result<Vec<OstId>, PlacementError> {
        let n = self.osts.len() as u32;
        self.start_count -= 1;
        if self.start_count <= 0 {
            self.start_idx = self.rng.random_range(0..n);
            self.start_count =
                ((RR_RESEED_MIN / u64::from(n) + RR_RESEED_MULT) * u64::from(n)) as i64;
        } else if count >= n || self.start_idx > n {
            // "If we have allocated from all of the OSTs, slowly precess the next start if the
            // OST/stripe count isn't already doing this for us."
            self.start_idx %= n;
            if count > 1 && n % count != 1 {
                self.offset_idx = self.offset_idx.wrapping_add(1);
            }
        }
        let mut chosen: Vec<OstId> = Vec::with_capacity(count as usize);
        let mut array_idx =
            ((u64::from(self.start_idx) + u64::from(self.offset_idx)) % u64::from(n)) as usize;
        for _ in 0..n {
            if chosen.len() == count as usize {
                break;
            }
            self.start_idx = self.start_idx.wrapping_add(1);
            let ost = self.rr_array[array_idx];
            array_idx = (array_idx + 1) % n as usize;
            if self.full(ost as usize) || chosen.contains(&OstId(ost)) {
                continue;
            }
            chosen.push(OstId(ost));
        }
        if chosen.len() < count as usize {
            return Err(PlacementError::NotEnoughSpace {
                stripe_count: count,
                found: chosen.len() as u32,
            });
        }
        Ok(chosen)
    }

    /// `lod_alloc_specific`: OSTs in index order from `start`, skipping full ones after the
    /// first.
    fn alloc_specific(&mut self, count: u32, start: u32) -> Result<Vec<OstId>, PlacementError> {
        let n = self.osts.len() as u32;
        let mut chosen = Vec::with_capacity(count as usize);
        for k in 0..n {
            if chosen.len() == count as usize {
                break;
            }
            let ost = (start + k) % n;
            if k > 0 && self.full(ost as usize) {
                continue;
            }
            chosen.push(OstId(ost));
        }
        if chosen.len() < count as usize {
            return Err(PlacementError::NotEnoughSpace {
                stripe_count: count,
                found: chosen.len() as u32,
            });
        }
        Ok(chosen)
    }

    /// The OSTs of a new file of `count` stripes (`lod_qos_prep_create`): from `start` if
    /// given, else weighted QOS if free space is uneven, else round robin.
    pub fn allocate(
        &mut self,
        count: u32,
        start: Option<u32>,
        now_ns: u64,
    ) -> Result<Vec<OstId>, PlacementError> {
        let n = self.osts.len() as u32;
        assert!(
            count >= 1 && count <= n,
            "stripe count checked by the caller"
        );
        let (osts, how) = match start {
            Some(s) => (self.alloc_specific(count, s)?, LustreAlloc::Specific),
            None => match self.alloc_qos(count, now_ns) {
                Some(osts) => (osts, LustreAlloc::Qos),
                None => (self.alloc_rr(count)?, LustreAlloc::RoundRobin),
            },
        };
        assert_eq!(osts.len(), count as usize);
        debug_assert!(osts.iter().all(|o| o.0 < n));
        self.last = Some(how);
        Ok(osts)
    }

    /// The round-robin position, for persisting (`start_idx` low, `offset_idx` high word).
    pub fn state(&self) -> u64 {
        u64::from(self.start_idx) | u64::from(self.offset_idx) << 32
    }

    /// Continues round robin from a persisted [`LustreAllocator::state`] (without reseeding at
    /// the next create, unlike a restarted Lustre MDS, which reseeds at random).
    pub fn restore(&mut self, state: u64) {
        self.start_idx = state as u32;
        self.offset_idx = (state >> 32) as u32;
        let n = self.osts.len().max(1) as u64;
        self.start_count = ((RR_RESEED_MIN / n + RR_RESEED_MULT) * n) as i64;
    }
}

/// The `lustre` placer: Lustre's allocator as a [`Placement`] (round robin over the
/// OSS-interleaved array, weighted QOS when free space is uneven). Without statistics
/// ([`Placement::observe_servers`]) it is round robin over `0..n` from a seeded start.
#[derive(Clone, Debug)]
pub struct Lustre {
    config: LustreQosConfig,
    seed: u64,
    alloc: LustreAllocator,
}

impl Lustre {
    pub fn new(ost_count: u32, config: LustreQosConfig, seed: u64) -> Lustre {
        Lustre {
            config,
            seed,
            alloc: LustreAllocator::new(ost_count, config, seed),
        }
    }

    pub fn allocator(&self) -> &LustreAllocator {
        &self.alloc
    }
}

impl Placement for Lustre {
    fn place(
        &mut self,
        request: &PlacementRequest,
        context: &PlacementContext,
    ) -> Result<StripeLayout, PlacementError> {
        let count = request.resolved_stripe_count()?;
        if request.ost_count > PLACER_OSTS_MAX {
            return Err(PlacementError::TooManyOsts(request.ost_count));
        }
        if self.alloc.ost_count() != request.ost_count {
            // Another file system size than we were built for: start over for this one.
            self.alloc = LustreAllocator::new(request.ost_count, self.config, self.seed);
        }
        let osts = self
            .alloc
            .allocate(count, request.start_ost, context.now_ns)?;
        Ok(StripeLayout {
            stripe_size_bytes: request.stripe_size_bytes,
            osts,
        })
    }

    fn observe_servers(&mut self, stats: &ServerStats) -> Result<(), StatsError> {
        self.alloc.observe_servers(stats)
    }

    fn state(&self) -> u64 {
        self.alloc.state()
    }

    fn restore(&mut self, state: u64) {
        self.alloc.restore(state);
    }

    fn clone_box(&self) -> Box<dyn Placement> {
        Box::new(self.clone())
    }
}

/// The spec options of Lustre's allocator: its `lod.*.qos_*` tunables.
pub const QOS_OPTIONS: [&str; 3] = ["qos_threshold_rr", "qos_prio_free", "qos_maxage"];

/// Longest `qos_maxage` a spec may set, seconds (a day).
pub const QOS_MAXAGE_S_MAX: u64 = 86_400;

/// Lustre's tunables from a spec's options; the rest keep Lustre's defaults.
pub(crate) fn qos_config(placer: &str, options: &[&str]) -> Result<LustreQosConfig, String> {
    let mut config = LustreQosConfig::default();
    for option in options {
        let (key, value) = crate::placer_option(placer, option, &QOS_OPTIONS)?;
        match key {
            "qos_threshold_rr" => {
                config.threshold_rr_pct = crate::placer_int(placer, key, value, 0..=100)?
            }
            "qos_prio_free" => {
                config.prio_free_pct = crate::placer_int(placer, key, value, 0..=100)?
            }
            _ => config.maxage_s = crate::placer_int(placer, key, value, 1..=QOS_MAXAGE_S_MAX)?,
        }
    }
    Ok(config)
}

/// `lustre`: Lustre's own allocator (`lod_qos.c`).
pub const DESCRIPTOR: crate::PlacerDescriptor = crate::PlacerDescriptor {
    name: "lustre",
    description:
        "Lustre's allocator: round robin over OSSs, weighted by free space when it is uneven",
    options: &QOS_OPTIONS,
    build: |ost_count, options| {
        let config = qos_config("lustre", options)?;
        Ok(Box::new(Lustre::new(ost_count, config, crate::PLACER_SEED)))
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ServerStats;

    const GIB: u64 = 1 << 30;

    #[test]
    fn rr_array_interleaves_osss() {
        // The paper's testbed: 3 OSSs × 5 OSTs, OSTs 0-4 on OSS 0, 5-9 on OSS 1, 10-14 on 2.
        let map: Vec<u32> = (0..15).map(|i| i / 5).collect();
        assert_eq!(
            rr_array(&map),
            [0, 5, 10, 1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14]
        );
        // OSTs already interleaved by index stay in index order.
        let map: Vec<u32> = (0..6).map(|i| i % 3).collect();
        assert_eq!(rr_array(&map), [0, 1, 2, 3, 4, 5]);
        // One OST per OSS (an allocator without statistics): index order.
        let map: Vec<u32> = (0..7).collect();
        assert_eq!(rr_array(&map), map);
        // Uneven OSSs: the OSS with most OSTs is placed first (slots j·4/3 = 0, 1, 2 for
        // OSS 1's OSTs 1, 2, 3), OSS 0's one OST takes the slot left.
        assert_eq!(rr_array(&[0, 1, 1, 1]), [1, 2, 3, 0]);
        // Consecutive stripes of an RR file land on different OSSs.
        let map: Vec<u32> = (0..15).map(|i| i / 5).collect();
        let a = rr_array(&map);
        for w in a.windows(3) {
            let mut o: Vec<u32> = w.iter().map(|&i| map[i as usize]).collect();
            o.sort();
            assert_eq!(o, [0, 1, 2]);
        }
    }

    fn testbed(avail: impl Fn(usize) -> u64) -> ServerStats {
        let mut s = ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB);
        for (i, o) in s.osts.iter_mut().enumerate() {
            o.avail_bytes = avail(i);
        }
        s
    }

    #[test]
    fn round_robin_walks_the_array_from_a_seeded_start() {
        let mut a = LustreAllocator::new(15, LustreQosConfig::default(), 1);
        a.observe_servers(&testbed(|_| 9 * GIB)).unwrap();
        assert!(a.uses_round_robin(0));
        let array = a.rr_array().to_vec();
        let first = a.allocate(4, None, 0).unwrap();
        assert_eq!(a.last_alloc(), Some(LustreAlloc::RoundRobin));
        let p = array.iter().position(|&o| o == first[0].0).unwrap();
        let want: Vec<OstId> = (0..4).map(|k| OstId(array[(p + k) % 15])).collect();
        assert_eq!(first, want);
        // The next file continues where this one stopped.
        let second = a.allocate(2, None, 0).unwrap();
        assert_eq!(second[0].0, array[(p + 4) % 15]);
        // Stripes spread over the three OSSs.
        let osss: Vec<u32> = first.iter().map(|o| o.0 / 5).collect();
        assert!(osss[0] != osss[1] && osss[1] != osss[2] && osss[0] != osss[2]);
    }

    #[test]
    fn round_robin_skips_full_osts_and_refuses_when_too_few_have_space() {
        let mut a = LustreAllocator::new(15, LustreQosConfig::default(), 2);
        // All equally tiny: same space (RR), and 3 OSTs full.
        a.observe_servers(&testbed(|i| if i < 3 { 0 } else { 5 * GIB }))
            .unwrap();
        for _ in 0..20 {
            let got = a.allocate(12, None, 0).unwrap();
            assert!(got.iter().all(|o| o.0 >= 3), "{got:?}");
        }
        assert_eq!(
            a.allocate(13, None, 0),
            Err(PlacementError::NotEnoughSpace {
                stripe_count: 13,
                found: 12
            })
        );
    }

    #[test]
    fn switches_to_qos_beyond_the_threshold() {
        // ba_max·(256 − 43)/256 < ba_min: 10 GiB max → RR while min > 8.32 GiB.
        let mut a = LustreAllocator::new(15, LustreQosConfig::default(), 3);
        a.observe_servers(&testbed(|i| if i == 0 { 10 * GIB } else { 9 * GIB }))
            .unwrap();
        assert!(a.uses_round_robin(0));
        a.observe_servers(&testbed(|i| if i == 0 { 10 * GIB } else { 8 * GIB }))
            .unwrap();
        assert!(!a.uses_round_robin(0));
        a.allocate(2, None, 0).unwrap();
        assert_eq!(a.last_alloc(), Some(LustreAlloc::Qos));
        // A start OST is the user's choice whatever the space.
        assert_eq!(
            a.allocate(3, Some(14), 0).unwrap(),
            [OstId(14), OstId(0), OstId(1)]
        );
        assert_eq!(a.last_alloc(), Some(LustreAlloc::Specific));
    }

    #[test]
    fn qos_prefers_emptier_osts() {
        // OSTs 0-4 (OSS 0) nearly empty, the rest 80 % full.
        let stats = testbed(|i| if i < 5 { 9 * GIB } else { 2 * GIB });
        let mut a = LustreAllocator::new(15, LustreQosConfig::default(), 4);
        let mut hits = [0u32; 15];
        for round in 0..400u64 {
            // A statfs refresh every 10 creates, 1 s apart: penalties build up and decay.
            if round % 10 == 0 {
                a.observe_servers(&ServerStats {
                    at_ns: round * NS_PER_S,
                    ..stats.clone()
                })
                .unwrap();
            }
            for o in a.allocate(1, None, round * NS_PER_S).unwrap() {
                hits[o.0 as usize] += 1;
            }
            assert_eq!(a.last_alloc(), Some(LustreAlloc::Qos));
        }
        let empty: u32 = hits[..5].iter().sum();
        let full: u32 = hits[5..].iter().sum();
        // Free space 45 GiB vs 20 GiB: the emptier OSS gets the larger share (penalties
        // spread some picks to the others, as prio_wide intends).
        assert!(empty > full, "{hits:?}");
        assert!(hits[5..].iter().all(|&h| h > 0), "{hits:?}");
    }

    #[test]
    fn qos_never_repeats_an_ost_in_a_file() {
        let stats = testbed(|i| (i as u64 + 1) * GIB / 2);
        let mut a = LustreAllocator::new(15, LustreQosConfig::default(), 5);
        a.observe_servers(&stats).unwrap();
        for _ in 0..50 {
            let mut got = a.allocate(15, None, 0).unwrap();
            assert_eq!(a.last_alloc(), Some(LustreAlloc::Qos));
            got.sort();
            got.dedup();
            assert_eq!(got.len(), 15);
        }
    }

    #[test]
    fn without_statistics_it_is_round_robin_over_all_osts() {
        let mut a = LustreAllocator::new(4, LustreQosConfig::default(), 6);
        assert_eq!(a.rr_array(), [0, 1, 2, 3]);
        let f = a.allocate(4, None, 0).unwrap();
        let mut s = f.clone();
        s.sort();
        assert_eq!(s, [OstId(0), OstId(1), OstId(2), OstId(3)]);
        let st = a.state();
        let mut b = a.clone();
        b.restore(st);
        assert_eq!(a.allocate(2, None, 0), b.allocate(2, None, 0));
        // A snapshot of another size is refused.
        let other = ServerStats::uniform(1, 3, GIB, GIB);
        assert!(a.observe_servers(&other).is_err());
    }
}
