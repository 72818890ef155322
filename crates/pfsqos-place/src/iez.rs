//! iez's OST allocation (Wadhwa, Paul et al., IPDPS'19, Section III-B3, Algorithm 2) and the
//! `iez` placer built on it.
//!
//! **Algorithm 2** takes the servers' statistics and a batch of predicted write requests (bytes
//! and stripe count per file) and solves a minimum-cost maximum flow: source → request
//! (capacity = stripe count) → OST (capacity 1: one stripe of a file per OST; cost = the OSS's
//! load, "the cost to reach an OST") → sink (capacity = the OST's room in stripes; cost = the
//! OST's fill). Each file's stripe size is Method II's ([`super::stripe`]).
//!
//! **Where the printed algorithm cannot give the paper's balance, and our fix.** As printed,
//! the OST → sink edge has one constant cost (`ostCost = used/total`) for all the stripes it
//! carries, and its capacity (`kbytesAvail / stripeSize`) is in the hundreds. Costs linear in
//! flow make the optimum put every stripe on the currently cheapest OSTs up to their capacity:
//! with equally empty OSTs, 8 files of 8 stripes land on the same 8 of 15 OSTs (ties broken by
//! the solver), nothing like Fig. 7's flat lines ([`CostModel::AsPrinted`] reproduces it; the
//! test `the_printed_costs_do_not_balance` measures it). The fix, [`CostModel::Convex`] (the
//! default): the OST → sink edge is split into unit edges whose costs are the OST's
//! utilization *after* its 1st, 2nd, … new stripe, `(used + k·share)/total`. Increasing
//! marginal costs are the standard network-flow encoding of a convex cost, so the min-cost
//! flow levels the OSTs' utilization, which is what `OSTCost` (eq. 7) measures.
//!
//! Other readings we had to choose:
//! - `buildGraph` puts an undefined `ostLoad` on both edges; the prose says the request → OST
//!   edge costs the OSS's load and the OST's own cost is its fill. We follow the prose.
//! - No OSS layer: a request → OSS → OST path would lose "capacity 1 per request and OST", the
//!   only thing keeping two stripes of one file off one OST. OSS balance follows from OST
//!   balance and the OSS-load cost on request → OST edges.
//! - The paper gives no `cpuweight`/`memweight`: we use 0.5 / 0.5 ([`super::cost`]). Costs are
//!   integers in parts per million of utilization ([`COST_SCALE`]).
//! - Stripes of different files differ in size, a flow unit is a stripe: capacities use the
//!   batch's largest per-OST share (so no OST is ever overfilled) and marginal costs its mean
//!   share; a file is only offered OSTs with room for its own share.
//! - The MDS gate (run only while the MDS's CPU < 70 % and memory < 50 %) applies when the
//!   statistics carry the MDS's load.
//!
//! **Solving it at scale.** The flow network has an edge per file and OST, about a million
//! for 1,000 files over 1,000 OSTs, where successive shortest paths take seconds and the
//! solver's edge bound ([`super::mcmf::MCMF_EDGES_MAX`]) is reached. The structure helps: a
//! unit of flow through OST `j` costs the OSS load of `j` on the request → OST edge plus the
//! OST's own marginal cost on the OST → sink edge, whichever file it comes from, so a flow's
//! cost is `Σ_j F_j(n_j)` over the stripe count `n_j` each OST receives, with `F_j` convex
//! (or linear, as printed). [`solve_separable`] takes the cheapest next stripe over all OSTs
//! `Σ k_i` times (optimal for a separable convex cost under a total), then realizes the counts
//! as files (each file's stripes on the OSTs with the most stripes left to give, Ryser's
//! construction, which succeeds whenever any assignment exists). When it does, its cost is
//! the min-cost flow's; when it does not (or the OSTs cannot hold every stripe) the flow
//! network decides. It runs only for batches whose network would exceed
//! [`SEPARABLE_EDGES_MIN`] edges: below, the flow network's answer stands, and where several
//! assignments cost the same the two pick different ones (the tests check equal costs).
//!
//! **The placer.** [`Iez`] holds the latest [`ServerStats`] ([`Placement::observe_servers`])
//! and, per job, the predicted files in creation order ([`Placement::set_predictions`]: AIPA's
//! forecast of the job's next write requests, like the interaction database's rows of
//! Table I). It runs Algorithm 2 over all pending predictions whenever either changes (lazily,
//! at the next create) and gives the job's `k`-th create the `k`-th planned file's OSTs and
//! Method II stripe size. Bytes of files it placed count as used until the next statistics
//! snapshot (which then supersedes them). It falls back to Lustre's allocator
//! ([`super::lustre::LustreAllocator`]), with the reason kept in [`Placement::last_fallback`],
//! when there are no statistics, no prediction for the job, a start OST was asked for, the
//! MDS is busy, the plan could not place the file, the request's stripe count differs from the
//! prediction's, or a planned OST is missing or has no room for the stripe.

use std::collections::VecDeque;
use std::fmt;

use super::cost::{oss_load, OSS_CPU_WEIGHT, OSS_MEM_WEIGHT};
use super::lustre::{LustreAllocator, LustreQosConfig};
use super::mcmf::{EdgeId, FlowError, FlowNetwork, MCMF_CAPACITY_MAX};
use super::stats::{ServerLoad, ServerStats, StatsError};
use super::stripe::{iez_stripe_size_bytes, StripeSizeError};
use super::{Placement, PlacementContext, PlacementError, PlacementRequest, PLACER_OSTS_MAX};
use crate::model::{JobId, OstId, StripeLayout};

/// Costs are utilizations in parts per million.
pub const COST_SCALE: f64 = 1e6;
/// iez runs its allocation only while the MDS's CPU utilization is below this (Section III-B2).
pub const MDS_CPU_UTIL_MAX: f64 = 0.70;
/// … and its memory utilization below this.
pub const MDS_MEM_UTIL_MAX: f64 = 0.50;

/// Whether an MDS at `load` is too busy for Algorithm 2 (§III-B2: CPU at
/// [`MDS_CPU_UTIL_MAX`] or more, or memory at [`MDS_MEM_UTIL_MAX`] or more). The one test of
/// the gate: the simulator's placer and the live MDS both ask it.
pub fn mds_busy(load: &ServerLoad) -> bool {
    load.cpu_util >= MDS_CPU_UTIL_MAX || load.mem_util >= MDS_MEM_UTIL_MAX
}
/// Most predicted files the placer holds, over all jobs.
pub const PREDICTIONS_HELD_MAX: usize = 4096;
/// Most jobs with predictions at a time.
pub const PREDICTED_JOBS_MAX: usize = 256;
/// Most stripes one Algorithm 2 run places.
pub const PLAN_STRIPES_MAX: u64 = 1 << 16;
/// Batches whose flow network would have more edges than this are solved by
/// [`solve_separable`] first (module doc).
pub const SEPARABLE_EDGES_MIN: usize = 1 << 16;

/// A predicted write request: one file's bytes and stripe count (a row of Table I).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredictedFile {
    pub predicted_bytes: u64,
    pub stripe_count: u32,
}

/// How the OST → sink edges cost (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CostModel {
    /// The OST's utilization after each new stripe: balances.
    #[default]
    Convex,
    /// Algorithm 2 as printed: one edge of the OST's current utilization.
    AsPrinted,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IezConfig {
    pub cpu_weight: f64,
    pub mem_weight: f64,
    pub cost_model: CostModel,
    /// The fallback allocator's tunables.
    pub lustre: LustreQosConfig,
    /// Seed of the fallback allocator's randomness.
    pub seed: u64,
}

impl Default for IezConfig {
    fn default() -> Self {
        IezConfig {
            cpu_weight: OSS_CPU_WEIGHT,
            mem_weight: OSS_MEM_WEIGHT,
            cost_model: CostModel::Convex,
            lustre: LustreQosConfig::default(),
            seed: 0,
        }
    }
}

/// Algorithm 2's answer for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileAllocation {
    /// Method II's stripe size (eq. 5-6).
    pub stripe_size_bytes: u64,
    /// Bytes the file puts on each of its OSTs (the stripe size, or more when the stripe size
    /// was capped at Lustre's largest and the file wraps).
    pub ost_share_bytes: u64,
    /// Its OSTs in stripe order (each file's set rotated across the batch, [`StripePositions`]).
    pub osts: Vec<OstId>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AllocationError {
    Stats(StatsError),
    /// `reserved_bytes` does not list one entry per OST.
    ReservedLength {
        osts: usize,
        reserved: usize,
    },
    BadStripeCount {
        file: usize,
        stripe_count: u32,
    },
    Stripe {
        file: usize,
        error: StripeSizeError,
    },
    TooManyStripes(u64),
    Flow(FlowError),
}

impl fmt::Display for AllocationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocationError::Stats(e) => write!(f, "server statistics: {e}"),
            AllocationError::ReservedLength { osts, reserved } => {
                write!(f, "{reserved} reserved-byte entries for {osts} OSTs")
            }
            AllocationError::BadStripeCount { file, stripe_count } => write!(
                f,
                "predicted file {file}: stripe count {stripe_count} not in 1..=OSTs"
            ),
            AllocationError::Stripe { file, error } => {
                write!(f, "predicted file {file}: {error}")
            }
            AllocationError::TooManyStripes(n) => write!(
                f,
                "{n} stripes exceed the {PLAN_STRIPES_MAX} one allocation places"
            ),
            AllocationError::Flow(e) => write!(f, "flow network: {e}"),
        }
    }
}

impl std::error::Error for AllocationError {}

fn ppm(fraction: f64) -> i64 {
    (fraction * COST_SCALE).round().clamp(0.0, COST_SCALE * 4.0) as i64
}

/// Algorithm 2: the OSTs of each predicted file, `None` for a file the servers have no room
/// for. `reserved_bytes[j]` counts bytes already promised on OST `j` beyond the snapshot.
pub fn allocate_osts(
    stats: &ServerStats,
    reserved_bytes: &[u64],
    files: &[PredictedFile],
    config: &IezConfig,
) -> Result<Vec<Option<FileAllocation>>, AllocationError> {
    allocate_osts_with(stats, reserved_bytes, files, config, SEPARABLE_EDGES_MIN)
        .map(|(plans, _)| plans)
}

/// [`allocate_osts`] with the network size above which [`solve_separable`] is tried first;
/// also returns the plan's cost (the min-cost flow's objective, in [`COST_SCALE`] units).
fn allocate_osts_with(
    stats: &ServerStats,
    reserved_bytes: &[u64],
    files: &[PredictedFile],
    config: &IezConfig,
    separable_edges_min: usize,
) -> Result<(Vec<Option<FileAllocation>>, i64), AllocationError> {
    stats.validate().map_err(AllocationError::Stats)?;
    let ost_count = stats.osts.len();
    if reserved_bytes.len() != ost_count {
        return Err(AllocationError::ReservedLength {
            osts: ost_count,
            reserved: reserved_bytes.len(),
        });
    }
    // calculateStripeSize (Method II) and each file's per-OST share.
    let mut stripes_total: u64 = 0;
    let mut shapes = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        if f.stripe_count == 0 || f.stripe_count as usize > ost_count {
            return Err(AllocationError::BadStripeCount {
                file: i,
                stripe_count: f.stripe_count,
            });
        }
        let stripe_size_bytes = iez_stripe_size_bytes(f.predicted_bytes, f.stripe_count)
            .map_err(|error| AllocationError::Stripe { file: i, error })?;
        let round_bytes = stripe_size_bytes * u64::from(f.stripe_count);
        let ost_share_bytes = f.predicted_bytes.div_ceil(round_bytes).max(1) * stripe_size_bytes;
        shapes.push((stripe_size_bytes, ost_share_bytes));
        stripes_total += u64::from(f.stripe_count);
    }
    if stripes_total > PLAN_STRIPES_MAX {
        return Err(AllocationError::TooManyStripes(stripes_total));
    }
    if files.is_empty() {
        return Ok((Vec::new(), 0));
    }
    // Per OSS: ossLoad; per OST: room (bytes available beyond what is promised), used bytes.
    let oss_cost: Vec<i64> = stats
        .osses
        .iter()
        .map(|l| ppm(oss_load(l, config.cpu_weight, config.mem_weight)))
        .collect();
    let room: Vec<u64> = stats
        .osts
        .iter()
        .zip(reserved_bytes)
        .map(|(o, &r)| o.avail_bytes.saturating_sub(r))
        .collect();
    let used: Vec<u64> = stats
        .osts
        .iter()
        .zip(reserved_bytes)
        .map(|(o, &r)| o.used_bytes().saturating_add(r).min(o.total_bytes))
        .collect();
    // The cost of each OST's 1st, 2nd, ... new stripe, OSS load included (the request → OST
    // edge's cost plus the OST → sink edge's), and how many it can take.
    let unit_costs = |active: &[usize]| -> Vec<Vec<i64>> {
        let share_max = active.iter().map(|&i| shapes[i].1).max().expect("files");
        let share_mean = (active
            .iter()
            .map(|&i| u128::from(shapes[i].1))
            .sum::<u128>()
            / active.len() as u128) as u64;
        stats
            .osts
            .iter()
            .enumerate()
            .map(|(j, o)| {
                // ostCapacity = kbytesAvail / stripeSize, with the largest share: never
                // overfills.
                let capacity = (room[j] / share_max)
                    .min(active.len() as u64)
                    .min(MCMF_CAPACITY_MAX as u64);
                let total = o.total_bytes as f64;
                let reach = oss_cost[o.oss.0 as usize];
                (1..=capacity)
                    .map(|m| {
                        reach
                            + match config.cost_model {
                                CostModel::AsPrinted => ppm(used[j] as f64 / total),
                                CostModel::Convex => {
                                    ppm((used[j] as f64 + (m * share_mean) as f64) / total)
                                }
                            }
                    })
                    .collect()
            })
            .collect()
    };
    let solve = |active: &[usize]| -> Result<Vec<Vec<OstId>>, AllocationError> {
        let costs = unit_costs(active);
        let edges: usize =
            active.len() * (ost_count + 1) + costs.iter().map(|c| c.len().max(1)).sum::<usize>();
        if edges > separable_edges_min {
            let k: Vec<u32> = active.iter().map(|&i| files[i].stripe_count).collect();
            if let Some(placed) = solve_separable(&k, &costs) {
                return Ok(placed
                    .into_iter()
                    .map(|osts| osts.into_iter().map(|j| OstId(j as u32)).collect())
                    .collect());
            }
        }
        // buildGraph: 0 source, 1 sink, then files, then OSTs.
        let (source, sink) = (0usize, 1usize);
        let file_node = |k: usize| 2 + k;
        let ost_node = |j: usize| 2 + active.len() + j;
        let mut net =
            FlowNetwork::new(2 + active.len() + ost_count).map_err(AllocationError::Flow)?;
        let mut file_edges: Vec<Vec<(usize, EdgeId)>> = Vec::with_capacity(active.len());
        for (k, &i) in active.iter().enumerate() {
            net.add_edge(source, file_node(k), i64::from(files[i].stripe_count), 0)
                .map_err(AllocationError::Flow)?;
            let mut edges = Vec::new();
            for (j, o) in stats.osts.iter().enumerate() {
                if room[j] < shapes[i].1 {
                    continue;
                }
                // ostCostToReach = ossLoad.
                let e = net
                    .add_edge(file_node(k), ost_node(j), 1, oss_cost[o.oss.0 as usize])
                    .map_err(AllocationError::Flow)?;
                edges.push((j, e));
            }
            file_edges.push(edges);
        }
        for (j, o) in stats.osts.iter().enumerate() {
            let reach = oss_cost[o.oss.0 as usize];
            match config.cost_model {
                // One edge of the OST's utilization for all it can take.
                CostModel::AsPrinted => {
                    if let Some(&c) = costs[j].first() {
                        net.add_edge(ost_node(j), sink, costs[j].len() as i64, c - reach)
                            .map_err(AllocationError::Flow)?;
                    }
                }
                // Unit edges of increasing cost: the OST's utilization after each stripe.
                CostModel::Convex => {
                    for &c in &costs[j] {
                        net.add_edge(ost_node(j), sink, 1, c - reach)
                            .map_err(AllocationError::Flow)?;
                    }
                }
            }
        }
        net.min_cost_max_flow(source, sink)
            .map_err(AllocationError::Flow)?;
        Ok(file_edges
            .iter()
            .map(|edges| {
                edges
                    .iter()
                    .filter(|(_, e)| net.flow(*e) == 1)
                    .map(|&(j, _)| OstId(j as u32))
                    .collect()
            })
            .collect())
    };
    // A maximum flow may leave several files partly placed. A partly placed file is no file:
    // drop the last of them (earlier predictions come first) and solve again, until every
    // file left is whole. One solve when the servers have room for all.
    let mut active: Vec<usize> = (0..files.len()).collect();
    let mut placed: Vec<Vec<OstId>> = Vec::new();
    while !active.is_empty() {
        placed = solve(&active)?;
        let partial = active
            .iter()
            .zip(&placed)
            .rposition(|(&i, osts)| osts.len() != files[i].stripe_count as usize);
        match partial {
            None => break,
            Some(k) => {
                active.remove(k);
            }
        }
    }
    // The objective: each OST's first n_j unit costs.
    let mut cost = 0i64;
    if !active.is_empty() {
        let costs = unit_costs(&active);
        let mut per_ost = vec![0usize; ost_count];
        for o in placed.iter().flatten() {
            per_ost[o.0 as usize] += 1;
        }
        for (j, &n) in per_ost.iter().enumerate() {
            cost += costs[j][..n].iter().sum::<i64>();
        }
    }
    let mut out: Vec<Option<FileAllocation>> = vec![None; files.len()];
    let mut at_position = StripePositions::new(ost_count);
    for (&i, mut osts) in active.iter().zip(placed) {
        assert_eq!(osts.len(), files[i].stripe_count as usize);
        at_position.order(&mut osts);
        out[i] = Some(FileAllocation {
            stripe_size_bytes: shapes[i].0,
            ost_share_bytes: shapes[i].1,
            osts,
        });
    }
    Ok((out, cost))
}

/// Algorithm 2's min-cost flow through its separable structure (module doc, "Solving it at
/// scale"). `stripes[i]`: file `i`'s stripe count; `unit_costs[j]`: the cost of OST `j`'s 1st,
/// 2nd, ... new stripe (non-decreasing; its length is what the OST can take, at most one
/// stripe per file). Returns each file's OSTs, or `None` when the OSTs cannot take every
/// stripe or the cheapest counts cannot be realized with distinct OSTs per file (the flow
/// network then decides). Deterministic: ties go to the lower OST index.
pub fn solve_separable(stripes: &[u32], unit_costs: &[Vec<i64>]) -> Option<Vec<Vec<usize>>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let total: u64 = stripes.iter().map(|&k| u64::from(k)).sum();
    let room: u64 = unit_costs.iter().map(|c| c.len() as u64).sum();
    if total > room {
        return None;
    }
    // The cheapest `total` units over all OSTs: each OST's costs are non-decreasing, so
    // taking the cheapest next unit each time is optimal for the sum.
    let mut counts = vec![0usize; unit_costs.len()];
    let mut next: BinaryHeap<Reverse<(i64, usize)>> = unit_costs
        .iter()
        .enumerate()
        .filter_map(|(j, c)| c.first().map(|&c0| Reverse((c0, j))))
        .collect();
    for _ in 0..total {
        let Reverse((_, j)) = next.pop().expect("room for every stripe");
        counts[j] += 1;
        debug_assert!(
            counts[j] < 2 || unit_costs[j][counts[j] - 1] >= unit_costs[j][counts[j] - 2],
            "marginal costs must not decrease"
        );
        if let Some(&c) = unit_costs[j].get(counts[j]) {
            next.push(Reverse((c, j)));
        }
    }
    // Ryser's construction: each file, largest stripe count first, takes the OSTs with the
    // most stripes left to place (ties to the lower index). If any assignment of these counts
    // exists, this finds one.
    let mut order: Vec<usize> = (0..stripes.len()).collect();
    order.sort_by_key(|&i| (Reverse(stripes[i]), i));
    let mut left = counts;
    let mut by_left: Vec<usize> = (0..left.len()).collect();
    let mut out = vec![Vec::new(); stripes.len()];
    for i in order {
        let k = stripes[i] as usize;
        by_left.sort_by_key(|&j| (Reverse(left[j]), j));
        let chosen = &by_left[..k.min(by_left.len())];
        if chosen.len() < k || chosen.iter().any(|&j| left[j] == 0) {
            return None;
        }
        for &j in chosen {
            left[j] -= 1;
        }
        let mut osts = chosen.to_vec();
        osts.sort_unstable();
        out[i] = osts;
    }
    assert!(left.iter().all(|&l| l == 0), "every counted stripe placed");
    Some(out)
}

/// Orders each file's OSTs across a batch. Algorithm 2 gives a *set* of OSTs per file; the
/// order in which the file's stripes use them is not in the paper (Table II lists them in no
/// visible order). It matters: with iez's stripe size (the file divided by its stripe count,
/// Method II) a sequential writer fills one stripe at a time, so files whose lists start on
/// the same OST all write there together while other OSTs idle (measured: a 64-process IOR
/// batch in ascending order took 3.6 times as long as round robin's). Each file's list is
/// rotated (keeping its cyclic order) to the rotation whose OSTs were used least at the same
/// stripe positions by the files before it, ties to the smallest rotation.
struct StripePositions {
    ost_count: usize,
    /// `used[position * ost_count + ost]`: files of the batch with `ost` at that position.
    used: Vec<u32>,
}

impl StripePositions {
    fn new(ost_count: usize) -> StripePositions {
        StripePositions {
            ost_count,
            used: Vec::new(),
        }
    }

    fn order(&mut self, osts: &mut [OstId]) {
        let n = osts.len();
        if self.used.len() < n * self.ost_count {
            self.used.resize(n * self.ost_count, 0);
        }
        let cost = |r: usize| -> u64 {
            (0..n)
                .map(|pos| {
                    let ost = osts[(pos + r) % n].0 as usize;
                    u64::from(self.used[pos * self.ost_count + ost])
                })
                .sum()
        };
        let best = (0..n).min_by_key(|&r| (cost(r), r)).unwrap_or(0);
        osts.rotate_left(best);
        for (pos, ost) in osts.iter().enumerate() {
            self.used[pos * self.ost_count + ost.0 as usize] += 1;
        }
    }
}

/// Why the `iez` placer handed a create to Lustre's allocator.
#[derive(Clone, Debug, PartialEq)]
pub enum IezFallback {
    NoStatistics,
    OstCountMismatch {
        statistics: usize,
        request: u32,
    },
    StartOstGiven,
    NoPrediction,
    MdsBusy {
        cpu_util: f64,
        mem_util: f64,
    },
    /// Algorithm 2 failed or found no room for the file.
    Unplaced(String),
    StripeCountDiffers {
        predicted: u32,
        requested: u32,
    },
    MissingOst {
        ost: u32,
        ost_count: u32,
    },
    NoFreeSpace {
        ost: u32,
        share_bytes: u64,
        room_bytes: u64,
    },
}

impl fmt::Display for IezFallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IezFallback::NoStatistics => write!(f, "no server statistics yet"),
            IezFallback::OstCountMismatch {
                statistics,
                request,
            } => write!(
                f,
                "statistics list {statistics} OSTs, the file system has {request}"
            ),
            IezFallback::StartOstGiven => write!(f, "a start OST was asked for"),
            IezFallback::NoPrediction => write!(f, "no prediction for this job's create"),
            IezFallback::MdsBusy { cpu_util, mem_util } => write!(
                f,
                "MDS busy (CPU {:.0} %, memory {:.0} %; iez runs below 70 % and 50 %)",
                cpu_util * 100.0,
                mem_util * 100.0
            ),
            IezFallback::Unplaced(why) => write!(f, "the allocation did not place the file: {why}"),
            IezFallback::StripeCountDiffers {
                predicted,
                requested,
            } => write!(
                f,
                "predicted {predicted} stripes, the create asks for {requested}"
            ),
            IezFallback::MissingOst { ost, ost_count } => {
                write!(
                    f,
                    "the plan names OST {ost}, the file system has {ost_count}"
                )
            }
            IezFallback::NoFreeSpace {
                ost,
                share_bytes,
                room_bytes,
            } => write!(
                f,
                "OST {ost} has {room_bytes} bytes of room, the stripe needs {share_bytes}"
            ),
        }
    }
}

#[derive(Clone, Debug)]
struct Pending {
    file: PredictedFile,
    plan: Result<FileAllocation, String>,
}

/// The `iez` placer (module doc).
#[derive(Clone, Debug)]
pub struct Iez {
    config: IezConfig,
    lustre: LustreAllocator,
    stats: Option<ServerStats>,
    /// Per job (in the order jobs first got predictions), its files not yet created.
    pending: Vec<(JobId, VecDeque<Pending>)>,
    /// Bytes placed per OST since the last statistics.
    reserved_bytes: Vec<u64>,
    /// Predictions or statistics changed since the last plan.
    dirty: bool,
    last_fallback: Option<IezFallback>,
    planned_creates: u64,
    fallback_creates: u64,
}

impl Iez {
    /// A placer for `ost_count` OSTs (at most [`PLACER_OSTS_MAX`]; requests for more are
    /// refused).
    pub fn new(ost_count: u32, config: IezConfig) -> Iez {
        let ost_count = ost_count.min(PLACER_OSTS_MAX);
        Iez {
            lustre: LustreAllocator::new(ost_count, config.lustre, config.seed),
            config,
            stats: None,
            pending: Vec::new(),
            reserved_bytes: vec![0; ost_count as usize],
            dirty: false,
            last_fallback: None,
            planned_creates: 0,
            fallback_creates: 0,
        }
    }

    /// The fallback allocator (to read which of its allocators ran).
    pub fn lustre(&self) -> &LustreAllocator {
        &self.lustre
    }

    /// Creates placed by the plan, and by the fallback.
    pub fn creates(&self) -> (u64, u64) {
        (self.planned_creates, self.fallback_creates)
    }

    /// Why the last create fell back (`None`: it followed the plan).
    pub fn fallback(&self) -> Option<&IezFallback> {
        self.last_fallback.as_ref()
    }

    fn held(&self) -> usize {
        self.pending.iter().map(|(_, q)| q.len()).sum()
    }

    fn replan(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let Some(stats) = &self.stats else { return };
        let files: Vec<PredictedFile> = self
            .pending
            .iter()
            .flat_map(|(_, q)| q.iter().map(|p| p.file))
            .collect();
        let plans = allocate_osts(stats, &self.reserved_bytes, &files, &self.config);
        let mut k = 0;
        for (_, q) in &mut self.pending {
            for p in q.iter_mut() {
                p.plan = match &plans {
                    Ok(v) => v[k]
                        .clone()
                        .ok_or_else(|| "no OSTs with room for its stripes".to_string()),
                    Err(e) => Err(e.to_string()),
                };
                k += 1;
            }
        }
    }

    /// The planned layout for this create, or why not.
    fn planned(
        &mut self,
        count: u32,
        request: &PlacementRequest,
        context: &PlacementContext,
    ) -> Result<(FileAllocation, u64), IezFallback> {
        // Whether Algorithm 2 may run: statistics of this file system, and an MDS not busy.
        let usable = match &self.stats {
            None => Err(IezFallback::NoStatistics),
            Some(s) if s.osts.len() != request.ost_count as usize => {
                Err(IezFallback::OstCountMismatch {
                    statistics: s.osts.len(),
                    request: request.ost_count,
                })
            }
            Some(ServerStats { mds: Some(mds), .. }) if mds_busy(mds) => {
                Err(IezFallback::MdsBusy {
                    cpu_util: mds.cpu_util,
                    mem_util: mds.mem_util,
                })
            }
            Some(_) => Ok(()),
        };
        if usable.is_ok() {
            self.replan();
        }
        // Every create of the job consumes its next prediction, placed by the plan or not, so
        // the job's k-th create always meets its k-th predicted file.
        let next = self.pop(context.job);
        if request.start_ost.is_some() {
            return Err(IezFallback::StartOstGiven);
        }
        usable?;
        let Some(p) = next else {
            return Err(IezFallback::NoPrediction);
        };
        if p.file.stripe_count != count {
            return Err(IezFallback::StripeCountDiffers {
                predicted: p.file.stripe_count,
                requested: count,
            });
        }
        let plan = p.plan.map_err(IezFallback::Unplaced)?;
        assert_eq!(
            plan.osts.len() as u32,
            count,
            "a plan has the predicted stripes"
        );
        let stats = self.stats.as_ref().expect("checked above");
        for o in &plan.osts {
            if o.0 >= request.ost_count {
                return Err(IezFallback::MissingOst {
                    ost: o.0,
                    ost_count: request.ost_count,
                });
            }
            let room = stats.osts[o.0 as usize]
                .avail_bytes
                .saturating_sub(self.reserved_bytes[o.0 as usize]);
            if room < plan.ost_share_bytes {
                return Err(IezFallback::NoFreeSpace {
                    ost: o.0,
                    share_bytes: plan.ost_share_bytes,
                    room_bytes: room,
                });
            }
        }
        let share = plan.ost_share_bytes;
        Ok((plan, share))
    }

    fn pop(&mut self, job: JobId) -> Option<Pending> {
        let k = self.pending.iter().position(|(j, _)| *j == job)?;
        let p = self.pending[k].1.pop_front();
        if self.pending[k].1.is_empty() {
            self.pending.remove(k);
        }
        p
    }
}

impl Placement for Iez {
    fn place(
        &mut self,
        request: &PlacementRequest,
        context: &PlacementContext,
    ) -> Result<StripeLayout, PlacementError> {
        let count = request.resolved_stripe_count()?;
        if request.ost_count > PLACER_OSTS_MAX {
            return Err(PlacementError::TooManyOsts(request.ost_count));
        }
        if self.lustre.ost_count() != request.ost_count {
            // Another file system size than we were built for: start over for this one.
            *self = Iez::new(request.ost_count, self.config);
        }
        match self.planned(count, request, context) {
            Ok((plan, share)) => {
                for o in &plan.osts {
                    self.reserved_bytes[o.0 as usize] += share;
                }
                self.last_fallback = None;
                self.planned_creates += 1;
                Ok(StripeLayout {
                    stripe_size_bytes: plan.stripe_size_bytes,
                    osts: plan.osts,
                })
            }
            Err(reason) => {
                let osts = self
                    .lustre
                    .allocate(count, request.start_ost, context.now_ns)?;
                self.last_fallback = Some(reason);
                self.fallback_creates += 1;
                Ok(StripeLayout {
                    stripe_size_bytes: request.stripe_size_bytes,
                    osts,
                })
            }
        }
    }

    fn observe_servers(&mut self, stats: &ServerStats) -> Result<(), StatsError> {
        stats.validate()?;
        if stats.osts.len() != self.reserved_bytes.len() {
            return Err(StatsError::OstCountMismatch {
                expected: self.reserved_bytes.len(),
                got: stats.osts.len(),
            });
        }
        self.lustre.observe_servers(stats)?;
        self.stats = Some(stats.clone());
        self.reserved_bytes.fill(0);
        self.dirty = true;
        Ok(())
    }

    fn set_predictions(&mut self, job: JobId, files: &[PredictedFile]) -> usize {
        if let Some(k) = self.pending.iter().position(|(j, _)| *j == job) {
            self.pending.remove(k);
        }
        if self.pending.len() >= PREDICTED_JOBS_MAX {
            return 0;
        }
        let room = PREDICTIONS_HELD_MAX - self.held();
        let take = files.len().min(room);
        if take > 0 {
            self.pending.push((
                job,
                files[..take]
                    .iter()
                    .map(|&file| Pending {
                        file,
                        plan: Err("not planned yet".to_string()),
                    })
                    .collect(),
            ));
        }
        self.dirty = true;
        assert!(self.held() <= PREDICTIONS_HELD_MAX);
        take
    }

    fn last_fallback(&self) -> Option<String> {
        self.last_fallback.as_ref().map(|r| r.to_string())
    }

    fn state(&self) -> u64 {
        self.lustre.state()
    }

    fn restore(&mut self, state: u64) {
        self.lustre.restore(state);
    }

    fn clone_box(&self) -> Box<dyn Placement> {
        Box::new(self.clone())
    }
}

/// `iez`: iez's OST allocation over predicted files; its options are the fallback allocator's.
pub const DESCRIPTOR: crate::PlacerDescriptor = crate::PlacerDescriptor {
    name: "iez",
    description:
        "iez: predicted files placed by a min-cost max-flow over OSS and OST load (IPDPS'19)",
    options: &super::lustre::QOS_OPTIONS,
    build: |ost_count, options| {
        let lustre = super::lustre::qos_config("iez", options)?;
        Ok(Box::new(Iez::new(
            ost_count,
            IezConfig {
                seed: crate::PLACER_SEED,
                lustre,
                ..IezConfig::default()
            },
        )))
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::{ost_cost, ost_utilization};

    const GIB: u64 = 1 << 30;
    const HACC_FILE_BYTES: u64 = 803_405_824;

    fn hacc(files: usize) -> Vec<PredictedFile> {
        vec![
            PredictedFile {
                predicted_bytes: HACC_FILE_BYTES,
                stripe_count: 8,
            };
            files
        ]
    }

    /// Utilization of each OST after the planned files are written.
    fn utilization_after(stats: &ServerStats, plans: &[Option<FileAllocation>]) -> Vec<f64> {
        let mut used: Vec<u64> = stats.osts.iter().map(|o| o.used_bytes()).collect();
        for p in plans.iter().flatten() {
            for o in &p.osts {
                used[o.0 as usize] += p.ost_share_bytes;
            }
        }
        used.iter()
            .zip(&stats.osts)
            .map(|(&u, o)| ost_utilization(u, o.total_bytes))
            .collect()
    }

    fn check_invariants(
        stats: &ServerStats,
        files: &[PredictedFile],
        plans: &[Option<FileAllocation>],
    ) {
        let mut added = vec![0u64; stats.osts.len()];
        for (f, p) in files.iter().zip(plans) {
            let Some(p) = p else { continue };
            assert_eq!(p.osts.len(), f.stripe_count as usize);
            let mut d = p.osts.clone();
            d.dedup();
            assert_eq!(d.len(), p.osts.len(), "two stripes of a file on one OST");
            assert!(p.stripe_size_bytes.is_multiple_of(64 << 10));
            for o in &p.osts {
                added[o.0 as usize] += p.ost_share_bytes;
            }
        }
        for (a, o) in added.iter().zip(&stats.osts) {
            assert!(*a <= o.avail_bytes, "OST capacity exceeded");
        }
    }

    #[test]
    fn balances_the_papers_testbed() {
        // 3 OSSs × 5 OSTs of 10 GiB, empty; 16 HACC-I/O files of 8 stripes (Fig. 9's 16
        // processes): 128 stripes over 15 OSTs.
        let stats = ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB);
        let files = hacc(16);
        let plans = allocate_osts(&stats, &[0; 15], &files, &IezConfig::default()).unwrap();
        assert!(plans.iter().all(Option::is_some));
        check_invariants(&stats, &files, &plans);
        let per_ost: Vec<usize> = (0..15)
            .map(|j| {
                plans
                    .iter()
                    .flatten()
                    .filter(|p| p.osts.contains(&OstId(j)))
                    .count()
            })
            .collect();
        // 128 = 8·15 + 8: every OST gets 8 or 9 stripes.
        assert!(per_ost.iter().all(|&c| c == 8 || c == 9), "{per_ost:?}");
        let cost = ost_cost(&utilization_after(&stats, &plans)).unwrap();
        assert!(cost < 1.07, "OSTCost {cost}");
    }

    #[test]
    fn the_printed_costs_do_not_balance() {
        let stats = ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB);
        let files = hacc(8);
        let printed = IezConfig {
            cost_model: CostModel::AsPrinted,
            ..IezConfig::default()
        };
        let plans = allocate_osts(&stats, &[0; 15], &files, &printed).unwrap();
        check_invariants(&stats, &files, &plans);
        let printed_cost = ost_cost(&utilization_after(&stats, &plans)).unwrap();
        let plans = allocate_osts(&stats, &[0; 15], &files, &IezConfig::default()).unwrap();
        let convex_cost = ost_cost(&utilization_after(&stats, &plans)).unwrap();
        // Constant costs pile the 64 stripes on 8 OSTs: OSTCost 15/8.
        assert!((printed_cost - 15.0 / 8.0).abs() < 1e-9, "{printed_cost}");
        // 64 = 4·15 + 4: 4 or 5 each.
        assert!(convex_cost < 1.2, "{convex_cost}");
    }

    #[test]
    fn fills_emptier_osts_and_avoids_loaded_osss() {
        // OSTs 0-4 half full, the rest empty: the first 40 stripes avoid them.
        let mut stats = ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB);
        for o in &mut stats.osts[..5] {
            o.avail_bytes = 5 * GIB;
        }
        let files = hacc(5);
        let plans = allocate_osts(&stats, &[0; 15], &files, &IezConfig::default()).unwrap();
        check_invariants(&stats, &files, &plans);
        assert!(plans
            .iter()
            .flatten()
            .all(|p| p.osts.iter().all(|o| o.0 >= 5)));
        // Equal space, OSS 2 busy: one 8-stripe file avoids OSS 2 while it can (10 OSTs on
        // the idle OSSs).
        let mut stats = ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB);
        stats.osses[2] = ServerLoad {
            cpu_util: 0.9,
            mem_util: 0.5,
        };
        let plans = allocate_osts(&stats, &[0; 15], &hacc(1), &IezConfig::default()).unwrap();
        let p = plans[0].as_ref().unwrap();
        assert!(p.osts.iter().all(|o| o.0 < 10), "{:?}", p.osts);
    }

    #[test]
    fn never_overfills_and_reports_unplaceable_files() {
        // 4 OSTs with room for 2 shares each of a 4-stripe file: 2 files fit, the 3rd not.
        let share = 100_532_224u64; // Method II for the HACC file over 8 stripes
        let stats = ServerStats::uniform(2, 2, 10 * GIB, 2 * share + 1);
        let files = vec![
            PredictedFile {
                predicted_bytes: share * 4,
                stripe_count: 4,
            };
            3
        ];
        let plans = allocate_osts(&stats, &[0; 4], &files, &IezConfig::default()).unwrap();
        check_invariants(&stats, &files, &plans);
        assert_eq!(plans.iter().filter(|p| p.is_some()).count(), 2);
        // Random batches on random fill levels keep the invariants.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..30 {
            let mut stats = ServerStats::uniform(3, 4, 4 * GIB, 0);
            for o in &mut stats.osts {
                o.avail_bytes = rng.random_range(0..=4 * GIB);
            }
            let files: Vec<PredictedFile> = (0..rng.random_range(1..12))
                .map(|_| PredictedFile {
                    predicted_bytes: rng.random_range(0..3 * GIB),
                    stripe_count: rng.random_range(1..=12),
                })
                .collect();
            let plans = allocate_osts(&stats, &[0; 12], &files, &IezConfig::default()).unwrap();
            check_invariants(&stats, &files, &plans);
        }
    }

    #[test]
    fn a_large_batch_stays_balanced() {
        // 8 OSSs × 12 OSTs of 100 GiB, a third of them 30 % full; 512 files of 8 stripes.
        let mut stats = ServerStats::uniform(8, 12, 100 * GIB, 100 * GIB);
        for o in stats.osts.iter_mut().step_by(3) {
            o.avail_bytes = 70 * GIB;
        }
        let files = vec![
            PredictedFile {
                predicted_bytes: 2 * GIB,
                stripe_count: 8,
            };
            512
        ];
        let plans = allocate_osts(&stats, &[0; 96], &files, &IezConfig::default()).unwrap();
        assert!(plans.iter().all(Option::is_some));
        check_invariants(&stats, &files, &plans);
        // 1 TiB of 256 MiB stripes: 16 GiB (16 %) on each of the 64 empty OSTs keeps them
        // below the 30 % of the others, so the fuller ones get nothing and the empty ones end
        // within one stripe (0.25 %) of each other.
        let after = utilization_after(&stats, &plans);
        for (j, u) in after.iter().enumerate() {
            if j % 3 == 0 {
                assert_eq!(*u, 0.3, "OST {j}");
            } else {
                assert!((u - 0.16).abs() < 0.0026, "OST {j}: {u}");
            }
        }
    }

    /// The separable solver reaches the flow network's optimum cost on random batches (random
    /// fill, OSS loads, stripe counts, both cost models) and keeps every invariant; where it
    /// cannot realize the cheapest counts it declines and the network decides.
    #[test]
    fn the_separable_solver_matches_the_flow_networks_cost() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..300 {
            let osses = rng.random_range(1..=4u32);
            let per_oss = rng.random_range(1..=4u32);
            let mut stats = ServerStats::uniform(osses, per_oss, 10 * GIB, 10 * GIB);
            for o in &mut stats.osts {
                o.avail_bytes = rng.random_range(GIB..=10 * GIB);
            }
            for l in &mut stats.osses {
                l.cpu_util = rng.random_range(0.0..0.9);
                l.mem_util = rng.random_range(0.0..0.9);
            }
            let n = stats.osts.len() as u32;
            let files: Vec<PredictedFile> = (0..rng.random_range(1..=12))
                .map(|_| PredictedFile {
                    predicted_bytes: rng.random_range(1..=(2 * GIB)),
                    stripe_count: rng.random_range(1..=n),
                })
                .collect();
            let config = IezConfig {
                cost_model: if case % 3 == 0 {
                    CostModel::AsPrinted
                } else {
                    CostModel::Convex
                },
                ..IezConfig::default()
            };
            let reserved = vec![0; stats.osts.len()];
            let (flow, flow_cost) =
                allocate_osts_with(&stats, &reserved, &files, &config, usize::MAX).unwrap();
            let (sep, sep_cost) =
                allocate_osts_with(&stats, &reserved, &files, &config, 0).unwrap();
            check_invariants(&stats, &files, &sep);
            let placed = |p: &[Option<FileAllocation>]| p.iter().filter(|f| f.is_some()).count();
            assert_eq!(placed(&flow), placed(&sep), "case {case}: files placed");
            assert_eq!(flow_cost, sep_cost, "case {case}: {files:?}");
        }
    }

    #[test]
    fn the_separable_solver_on_hand_computed_cases() {
        // Cheapest four units: 1 (OST 0), 2 and 3 (OST 1), 4 (OST 2), not OST 0's 5. Counts
        // (1, 2, 1); file 0 takes OST 1 (two left) and OST 0 (tie with OST 2: lower index).
        let costs = vec![vec![1, 5], vec![2, 3], vec![4, 4]];
        assert_eq!(
            solve_separable(&[2, 2], &costs),
            Some(vec![vec![0, 1], vec![1, 2]])
        );
        // Counts (2, 2, 0) cannot give a 3-stripe file three OSTs: declined.
        let costs = vec![vec![0, 0], vec![0, 0], vec![9]];
        assert_eq!(solve_separable(&[3, 1], &costs), None);
        // More stripes than room: declined.
        assert_eq!(solve_separable(&[2, 2], &[vec![0], vec![0, 0]]), None);
    }

    /// 1,000 files of 8 stripes over 1,000 OSTs (the size; the flow network would
    /// have about a million edges): planned whole and balanced by the separable solver.
    #[test]
    fn a_thousand_files_over_a_thousand_osts_are_planned() {
        let stats = ServerStats::uniform(100, 10, 100 * GIB, 100 * GIB);
        let files = hacc(1000);
        let plans = allocate_osts(&stats, &vec![0; 1000], &files, &IezConfig::default()).unwrap();
        assert!(plans.iter().all(Option::is_some));
        check_invariants(&stats, &files, &plans);
        let mut per_ost = vec![0u32; 1000];
        for p in plans.iter().flatten() {
            for o in &p.osts {
                per_ost[o.0 as usize] += 1;
            }
        }
        // 8,000 stripes over 1,000 equal OSTs: 8 each.
        assert!(per_ost.iter().all(|&c| c == 8), "{per_ost:?}");
    }

    #[test]
    fn bad_inputs_are_errors() {
        let stats = ServerStats::uniform(1, 2, GIB, GIB);
        let c = IezConfig::default();
        assert_eq!(
            allocate_osts(&stats, &[0; 2], &hacc(1), &c),
            Err(AllocationError::BadStripeCount {
                file: 0,
                stripe_count: 8
            })
        );
        assert!(matches!(
            allocate_osts(&stats, &[0; 3], &[], &c),
            Err(AllocationError::ReservedLength { .. })
        ));
        assert_eq!(allocate_osts(&stats, &[0; 2], &[], &c), Ok(Vec::new()));
    }

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    fn create(p: &mut dyn Placement, job_id: JobId, count: i32, ost_count: u32) -> StripeLayout {
        p.place(
            &PlacementRequest {
                stripe_count: count,
                stripe_size_bytes: 1 << 20,
                ost_count,
                start_ost: None,
            },
            &PlacementContext {
                now_ns: 0,
                job: job_id,
            },
        )
        .unwrap()
    }

    #[test]
    fn the_placer_follows_the_plan_and_falls_back_with_reasons() {
        let mut p = Iez::new(15, IezConfig::default());
        let a = job("hacc");
        // Nothing known: Lustre's allocator.
        create(&mut p, a, 8, 15);
        assert_eq!(p.fallback(), Some(&IezFallback::NoStatistics));
        p.observe_servers(&ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB))
            .unwrap();
        create(&mut p, a, 8, 15);
        assert_eq!(p.fallback(), Some(&IezFallback::NoPrediction));
        assert_eq!(p.set_predictions(a, &hacc(16)), 16);
        let mut per_ost = [0u32; 15];
        for _ in 0..16 {
            let l = create(&mut p, a, 8, 15);
            assert_eq!(p.fallback(), None);
            assert_eq!(l.stripe_size_bytes, 100_532_224);
            for o in l.osts {
                per_ost[o.0 as usize] += 1;
            }
        }
        assert!(per_ost.iter().all(|&c| c == 8 || c == 9), "{per_ost:?}");
        assert_eq!(p.creates(), (16, 2));
        // Predictions used up.
        create(&mut p, a, 8, 15);
        assert_eq!(p.fallback(), Some(&IezFallback::NoPrediction));
        // Stripe count differing from the prediction.
        p.set_predictions(a, &hacc(1));
        create(&mut p, a, 4, 15);
        assert_eq!(
            p.fallback(),
            Some(&IezFallback::StripeCountDiffers {
                predicted: 8,
                requested: 4
            })
        );
        // A start OST is the user's choice; the create still uses up its prediction.
        p.set_predictions(a, &hacc(2));
        p.place(
            &PlacementRequest {
                stripe_count: 8,
                stripe_size_bytes: 1 << 20,
                ost_count: 15,
                start_ost: Some(3),
            },
            &PlacementContext { now_ns: 0, job: a },
        )
        .unwrap();
        assert_eq!(p.fallback(), Some(&IezFallback::StartOstGiven));
        create(&mut p, a, 8, 15);
        assert_eq!(p.fallback(), None);
        create(&mut p, a, 8, 15);
        assert_eq!(p.fallback(), Some(&IezFallback::NoPrediction));
        // A busy MDS.
        let mut busy = ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB);
        busy.mds = Some(ServerLoad {
            cpu_util: 0.8,
            mem_util: 0.1,
        });
        p.observe_servers(&busy).unwrap();
        p.set_predictions(a, &hacc(1));
        create(&mut p, a, 8, 15);
        assert!(matches!(p.fallback(), Some(IezFallback::MdsBusy { .. })));
        assert!(p.last_fallback().unwrap().contains("MDS busy"));
    }

    /// The gate's edges (§III-B2): busy from 70 % CPU or 50 % memory on, either alone.
    #[test]
    fn mds_busy_at_the_papers_limits() {
        let at = |cpu_util, mem_util| mds_busy(&ServerLoad { cpu_util, mem_util });
        assert!(!at(0.0, 0.0));
        assert!(!at(0.699, 0.499));
        assert!(at(0.70, 0.0));
        assert!(at(0.0, 0.50));
        assert!(at(1.0, 1.0));
    }

    #[test]
    fn a_plan_gone_stale_falls_back() {
        let mut p = Iez::new(4, IezConfig::default());
        let a = job("a");
        let stats = ServerStats::uniform(2, 2, 10 * GIB, 10 * GIB);
        p.observe_servers(&stats).unwrap();
        p.set_predictions(
            a,
            &[PredictedFile {
                predicted_bytes: 4 * GIB,
                stripe_count: 4,
            }; 2],
        );
        // Plan made at the first create; then the OSTs fill up behind the plan's back
        // (another client wrote): the placer finds no room and falls back.
        create(&mut p, a, 4, 4);
        assert_eq!(p.fallback(), None);
        let mut full = stats.clone();
        for o in &mut full.osts {
            o.avail_bytes = GIB / 2;
        }
        // Keep the old plan (not dirty) but the new space, as if statistics lagged.
        p.stats = Some(full);
        create(&mut p, a, 4, 4);
        assert!(
            matches!(p.fallback(), Some(IezFallback::NoFreeSpace { .. })),
            "{:?}",
            p.fallback()
        );
        // A plan naming an OST the request's file system lacks.
        p.observe_servers(&stats).unwrap();
        p.set_predictions(
            a,
            &[PredictedFile {
                predicted_bytes: GIB,
                stripe_count: 1,
            }],
        );
        p.replan();
        p.pending[0].1[0].plan = Ok(FileAllocation {
            stripe_size_bytes: 1 << 20,
            ost_share_bytes: 1 << 20,
            osts: vec![OstId(9)],
        });
        create(&mut p, a, 1, 4);
        assert_eq!(
            p.fallback(),
            Some(&IezFallback::MissingOst {
                ost: 9,
                ost_count: 4
            })
        );
    }

    #[test]
    fn predictions_are_bounded_and_replaced() {
        let mut p = Iez::new(15, IezConfig::default());
        let many = vec![
            PredictedFile {
                predicted_bytes: 1,
                stripe_count: 1
            };
            PREDICTIONS_HELD_MAX + 10
        ];
        assert_eq!(p.set_predictions(job("a"), &many), PREDICTIONS_HELD_MAX);
        assert_eq!(p.set_predictions(job("b"), &many[..5]), 0);
        // Replacing a job's predictions frees its room.
        assert_eq!(p.set_predictions(job("a"), &many[..5]), 5);
        assert_eq!(p.set_predictions(job("b"), &many[..5]), 5);
        let c = p.clone_box();
        assert_eq!(c.state(), p.state());
    }
}
