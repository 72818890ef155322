//! Start-time fair queuing with depth D (SFQ(D), the vPFS paper's [6]) and distributed SFQ
//! (DSFQ, its [7]) with vPFS's threshold- and layout-driven synchronization (vPFS, MSST '12, §III-B)
//! and its non-work-conserving variant (§IV-C-3). One [`Sfq`] is one instance: one NRS head
//! on one CPU partition, as TBF.
//!
//! # Tags (SFQ(D))
//!
//! A request `p` of flow `f` and cost `c` arriving at virtual time `v` gets
//! `start(p) = max(v, finish(f's previous request) + delay/φ_f)` and
//! `finish(p) = start(p) + c/φ_f`; the queued request with the smallest start tag is
//! dispatched (ties by arrival order) while fewer than D are dispatched and not completed,
//! and `v` becomes the start tag of the dispatched request. This is the authors' proxy
//! (`scheduler_SFQD.c`, published with vPFS, HPDC'12). Two readings chosen:
//! * **Tag width.** The proxy keeps tags in C `int` (they overflow); PFSsim in doubles.
//!   Here a tag is a `u128` fixed-point number of cost units per unit weight with 32
//!   fraction bits: a `u64` with enough fraction bits for weight 999,999 would wrap after
//!   about 2^32 bytes per unit weight (weeks at 10 GB/s), an `f64` loses small costs once
//!   tags pass 2^53. `u128` never wraps (2^96 cost units) and compares in two instructions.
//!   The heap of backlogged flows stores a tag as a `u64` relative to a base that moves
//!   with the tags, in 16-byte entries, and keeps the rare entry beyond 2^64 units of the
//!   base whole in a side heap; the dispatch order is the whole tags' order (`heap.rs`).
//! * **Virtual time with NWC.** With a non-work-conserving cap, a held flow can be released
//!   after requests with later start tags went; `v` then stays at the largest dispatched
//!   start tag (it is `max`), so it remains monotone.
//!
//! # The delay term (DSFQ)
//!
//! `delay` is the service the flow received on other servers, counted in cost units:
//! * threshold-driven (§III-B-1): peers broadcast each flow's service; a receiver adds it to
//!   the flow's pending delay, which the flow's next local arrival consumes (the proxy's
//!   `dsfq_delay_values`, `scheduler_DSFQ.c`). A sender broadcasts once the cost it counted
//!   since its last broadcast *reaches* the threshold (the proxy's test; the paper says
//!   "exceeds"), summed over all flows (the paper's simplified single threshold, default) or
//!   per flow (`flow_threshold`, the theorem's `C_f^prop`). Threshold 0 therefore broadcasts
//!   on every counted request: the original DSFQ. Service is counted at a request's arrival
//!   (default, as the proxy and the paper's "accumulated cost of arrived requests"), dispatch
//!   or completion (PFSsim's DSFQA, DSFQD, DSFQF).
//! * time-driven (`time`, PFSsim's DSFQATB, "time threshold"): the same broadcast of every
//!   flow's service since the last one, once [`SfqConfig::sync_interval_ns`] has passed since
//!   the last broadcast instead of once a cost is reached. PFSsim re-arms a timer; here the
//!   interval is checked whenever service is counted, so an instance needs no timer of its
//!   own and a driver none beyond the NWC one. The price: an instance that stops serving
//!   keeps its last interval's service until it serves again (the flows it served are idle
//!   there then; a peer undercharges them by at most one interval of this instance's
//!   service). PFSsim's other variant, the load threshold (DSFQALB: a flow broadcasts once its
//!   own bytes reach the threshold), is `flow_threshold`.
//! * layout-driven (§III-B-2, the proxy's "vDSFQ"): an instance broadcasts only when a flow
//!   first arrives (and, here, when it leaves after [`SfqConfig::flow_idle_ns`] without
//!   requests); receivers count the other instances serving each flow, and every local
//!   request of cost `c` is charged `delay = c x (remote instances)`, as if mirrored on each
//!   (RAID-0 striping: "local cost x servers involved"). The paper switches a flow whose I/O
//!   does not match its layout to threshold mode "based on its observation of the I/O
//!   patterns" without saying how; here an optional audit
//!   ([`SfqConfig::layout_audit_cost`]) has each instance report a flow's cumulative local
//!   service each time it grows by the audit amount, and a receiver whose own cumulative
//!   count for the flow differs by more than [`LAYOUT_MISMATCH_FACTOR`] switches that flow
//!   to threshold mode; a threshold-mode service report reaching a layout-mode flow switches
//!   it as well, so the switch spreads. With the audit off (the default) layout mode sends
//!   nothing but arrivals and departures.
//!
//! # Non-work-conserving cap (NWC)
//!
//! With a capacity `C` (cost units per second), a flow may be dispatched only while the
//! service dispatched to it stays within `C x φ_f / Σφ(active flows)` per second since it
//! became backlogged; otherwise it is held and [`Dequeue::Throttled`] says until when. The
//! vPFS paper holds a flow "when its completed I/O service exceeds its given bandwidth cap";
//! counting at dispatch instead bounds the completed service too and gives the bound the
//! tests check: over any interval, at most one request beyond the cap. Active flows are the
//! ones served here (not yet departed) or announced by a peer.
//!
//! # Storage
//!
//! Every queued request is one entry of one heap ordered by `(start, arrival)` (`heap.rs`),
//! its payload and cost in a slot of a request table; a flow keeps only its tags, weight and
//! counters, in one line for SFQ(D) and layout DSFQ (two with threshold DSFQ, NWC and
//! departures), with its key in a table of its own, read by lookups only. A dispatch pops
//! the heap, reads the request's slot and counts the dispatch in its flow; it never reads a
//! flow to find the flow's next request, so a step at 100,000 flows touches the flow's hot
//! line and the request's slot, not lines holding queued requests inline.
//!
//! # Bounds
//!
//! Flows: at most [`SfqConfig::flows_max`] (default [`SFQ_FLOWS_MAX`]). A new flow beyond it
//! first evicts the oldest departed flow that holds no state worth keeping; if there is
//! none, its requests are *folded* into one shared overflow flow with the default weight.
//! Refusing is not possible (an RPC that arrived must be served, and `enqueue` has no error
//! path), and folding keeps every request served and the fairness among the known flows
//! intact; the overflow flow is listed as `*`. Peers' reports for new flows beyond the bound
//! are refused ([`SyncRejection::TooManyFlows`]). Pending reports: at most
//! [`SFQ_REPORTS_PENDING_MAX`]; beyond, the oldest is dropped and counted. Queued requests:
//! as many as the driver enqueues and has not taken (every driver bounds its own queue; an
//! RPC that arrived cannot be refused here); the request table keeps as many slots as were
//! ever in use at once until the policy is drained, and a slot number beyond 24 bits sends
//! its entry to the heap's side heap (`heap.rs`).

mod heap;
mod weights;

#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use heap::{Entry, RequestHeap};

use rustc_hash::FxHashMap;

use super::class_index::{key_hash, ClassIndex};

use super::tbf::kstrto::kstrtoull;
use super::tbf::{ClassType, Field, LustreVersion, NrsQueue};
use super::{Dequeue, ReportKind, RequestScheduler, ServiceReport, SyncRejection};
use crate::errno::Errno;
use crate::jobstats::quote_job_id;
use crate::model::RpcTags;
use crate::policy::{tunable_value, NrsConfig, NrsError, NrsPolicy, NrsPolicyDescriptor};
use crate::NS_PER_S;

pub use weights::{
    WeightCommand, WeightOp, WeightRule, DEFAULT_RULE_NAME, SFQ_WEIGHT_DEFAULT, SFQ_WEIGHT_MAX,
    SFQ_WEIGHT_RULES_MAX,
};

/// Most flows one instance tracks (a flow costs about 260 bytes with its key, its cold part
/// and its index slot: 64 MiB at the bound; each queued request adds its slot and its
/// 16-byte heap key).
/// Above the 100,000 flows the benchmarks use; see the module doc for what happens beyond.
pub const SFQ_FLOWS_MAX: usize = 262_144;
/// Largest depth D: more outstanding requests than any device queue holds.
pub const SFQ_DEPTH_MAX: u32 = 1024;
/// Depth of a newly started policy: the vPFS evaluation's D = 8 (§IV-A; the proxy's default
/// is 1).
pub const SFQ_DEPTH_DEFAULT: u32 = 8;
/// Largest per-request constant cost.
pub const RPC_COST_MAX: u64 = 1 << 30;
/// Largest synchronization threshold: 1 TiB.
pub const SYNC_THRESHOLD_COST_MAX: u64 = 1 << 40;
/// Threshold of a newly started DSFQ: the vPFS evaluation's 10 MB (§IV-C-1).
pub const SYNC_THRESHOLD_COST_DEFAULT: u64 = 10 << 20;
/// Instance numbers run from 0 to this bound (exclusive); also the most instances one flow
/// can be announced by.
pub const SYNC_INSTANCES_MAX: u32 = 65_536;
/// Reports an instance holds until the driver takes them.
pub const SFQ_REPORTS_PENDING_MAX: usize = 65_536;
/// Largest NWC capacity: 1 PiB/s.
pub const NWC_CAPACITY_COST_PER_S_MAX: u64 = 1 << 50;
/// Interval of a newly started time-driven DSFQ (`nrs_dsfq_sync_interval_ms`). PFSsim's
/// `time_threshold` has no published default; 100 ms is Lustre's and AdapTBF's control period
/// scale, short against the seconds a flow's share is measured over.
pub const SYNC_INTERVAL_MS_DEFAULT: u64 = 100;
/// Longest time-driven interval: one hour.
pub const SYNC_INTERVAL_MS_MAX: u64 = 3_600_000;
/// A flow without requests here for this long has left (layout mode broadcasts it).
pub const FLOW_IDLE_NS_DEFAULT: u64 = NS_PER_S;
/// Longest idle time before a flow leaves (`nrs_dsfq_flow_idle_ms`): one hour. Layout mode
/// needs it above the longest gap between a flow's requests at one server, or the flow keeps
/// leaving and being announced again (vPFS Table 2 reproduction, docs/reproductions/vpfs.md).
pub const FLOW_IDLE_MS_MAX: u64 = 3_600_000;
/// Layout audit: a flow whose cumulative service on two instances differs by more than this
/// factor is not striped as its layout says.
pub const LAYOUT_MISMATCH_FACTOR: u64 = 2;

/// Fraction bits of a tag.
const TAG_FRAC_BITS: u32 = 32;
/// A start or finish tag: cost units per unit weight, 96.32 fixed point.
pub type Tag = u128;

/// How an instance synchronizes with its peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncMode {
    /// Plain SFQ(D): no delay term, no reports.
    None,
    /// Broadcast once the cost counted over all flows reaches the threshold (§III-B-1,
    /// simplified single threshold).
    Threshold,
    /// Broadcast a flow's service once its own count reaches the threshold (`C_f^prop`).
    FlowThreshold,
    /// Broadcast only flow arrivals and departures (§III-B-2).
    Layout,
    /// Broadcast every flow's service once the interval has passed since the last broadcast
    /// (PFSsim's DSFQATB).
    Time,
}

impl SyncMode {
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::None => "none",
            SyncMode::Threshold => "threshold",
            SyncMode::FlowThreshold => "flow_threshold",
            SyncMode::Layout => "layout",
            SyncMode::Time => "time",
        }
    }

    pub fn from_name(text: &str) -> Option<SyncMode> {
        [
            SyncMode::None,
            SyncMode::Threshold,
            SyncMode::FlowThreshold,
            SyncMode::Layout,
            SyncMode::Time,
        ]
        .into_iter()
        .find(|m| m.name() == text)
    }
}

/// When a request's cost counts as service for the threshold broadcast (PFSsim's DSFQA,
/// DSFQD, DSFQF).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CountPoint {
    Arrival,
    Dispatch,
    Finish,
}

impl CountPoint {
    pub fn name(self) -> &'static str {
        match self {
            CountPoint::Arrival => "arrival",
            CountPoint::Dispatch => "dispatch",
            CountPoint::Finish => "finish",
        }
    }

    pub fn from_name(text: &str) -> Option<CountPoint> {
        [
            CountPoint::Arrival,
            CountPoint::Dispatch,
            CountPoint::Finish,
        ]
        .into_iter()
        .find(|m| m.name() == text)
    }
}

/// How one flow's delay term is computed, as the flows listing shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowMode {
    /// No synchronization (SFQ(D)).
    Local,
    /// Delay from peers' service reports.
    Threshold,
    /// Delay from the number of instances serving the flow.
    Layout,
}

impl FlowMode {
    pub fn name(self) -> &'static str {
        match self {
            FlowMode::Local => "local",
            FlowMode::Threshold => "threshold",
            FlowMode::Layout => "layout",
        }
    }
}

/// The tunables of an instance, each one a parameter file (see [`param_names`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SfqConfig {
    /// D: requests dispatched and not completed, at most.
    pub depth_max: u32,
    /// Added to each request's cost (bytes): cost = `rpc_cost` + bytes. 0: bytes only.
    pub rpc_cost: u64,
    pub sync: SyncMode,
    pub threshold_cost: u64,
    pub count_at: CountPoint,
    /// NWC capacity in cost units per second; 0: work-conserving.
    pub nwc_capacity_cost_per_s: u64,
    /// Layout audit amount; 0: no audit.
    pub layout_audit_cost: u64,
    pub flow_idle_ns: u64,
    /// `time` mode: the least time between two broadcasts.
    pub sync_interval_ns: u64,
    pub flows_max: usize,
}

impl SfqConfig {
    /// `sfqd`: local SFQ(D).
    pub fn sfqd() -> SfqConfig {
        SfqConfig {
            depth_max: SFQ_DEPTH_DEFAULT,
            rpc_cost: 0,
            sync: SyncMode::None,
            threshold_cost: SYNC_THRESHOLD_COST_DEFAULT,
            count_at: CountPoint::Arrival,
            nwc_capacity_cost_per_s: 0,
            layout_audit_cost: 0,
            flow_idle_ns: FLOW_IDLE_NS_DEFAULT,
            sync_interval_ns: SYNC_INTERVAL_MS_DEFAULT * 1_000_000,
            flows_max: SFQ_FLOWS_MAX,
        }
    }

    /// `dsfq`: threshold-driven DSFQ with the evaluation's 10 MB threshold.
    pub fn dsfq() -> SfqConfig {
        SfqConfig {
            sync: SyncMode::Threshold,
            ..SfqConfig::sfqd()
        }
    }

    fn initial_mode(&self) -> FlowMode {
        match self.sync {
            SyncMode::None => FlowMode::Local,
            SyncMode::Threshold | SyncMode::FlowThreshold | SyncMode::Time => FlowMode::Threshold,
            SyncMode::Layout => FlowMode::Layout,
        }
    }
}

/// A queued request's part that its heap entry does not hold: the entry is its
/// `(start, arrival, slot)`, and its slot in [`Sfq::requests`] holds this. Dispatch reads the
/// heap's least entry and then this, and touches the flow only to count the dispatch: no
/// dispatch waits on a flow's lines to find the flow's next request (its entry is in the heap
/// already).
#[derive(Debug)]
struct Pending<P> {
    /// `None` while the slot is free.
    payload: Option<P>,
    cost: u64,
    flow: u32,
    /// The request's `(start, seq)`, in test builds only: the tests' oracle of the dispatch
    /// order, recorded apart from the heap's keys.
    #[cfg(test)]
    order: (Tag, u64),
}

// A 4-byte payload's slot: 24 bytes, so a dispatch's read of it is at most one line.
#[cfg(not(test))]
const _: () = assert!(std::mem::size_of::<Pending<u32>>() == 24);

/// One flow's scheduling state: two lines (`repr(C)`, aligned to the pair, which the L2's
/// adjacent-line prefetcher fetches together). Line 0 holds everything an enqueue and a
/// dispatch of SFQ(D) and layout DSFQ read or update; line 1 what threshold-driven DSFQ, NWC
/// and departures add. The key a lookup compares is in [`Sfq::keys`], read-only after the
/// flow is made, and the queued requests are in the heap and [`Sfq::requests`]; what only
/// the control plane and layout synchronization read is in [`FlowCold`]. A lookup touches
/// the flow's line 0 while it compares the key ([`Sfq::find`]), so the two misses overlap.
#[derive(Debug)]
#[repr(C, align(128))]
struct Flow {
    last_finish: Tag,
    weight: u32,
    /// Requests queued here, held ones included.
    queued: u32,
    /// Peers' reported service not yet charged (threshold mode).
    delay_cost: u64,
    /// Service counted here since the flow arrived (layout audit).
    local_cost_total: u64,
    /// Cost dispatched here, for the listing.
    dispatched_cost: u64,
    /// `FlowCold::remote.len()`, read by every layout-mode arrival.
    remote_count: u32,
    mode: FlowMode,
    /// False while the slot is free.
    live: bool,
    /// Served here and not departed.
    present: bool,
    held: bool,
    in_idle_log: bool,
    in_departed_log: bool,
    /// Counted in the NWC share (present, or announced by a peer).
    active: bool,
    /// This instance broadcast the flow's arrival and not yet its departure.
    announced: bool,
    /// When the flow last became idle (its last queued request dispatched).
    idle_since_ns: u64,
    /// Service counted here and not reported: per-flow threshold mode (`flow_threshold`).
    /// Modes that broadcast every flow's service at once count it in the flow's report of the
    /// next broadcast instead ([`Flow::report_slot`]).
    unreported_cost: u64,
    /// NWC: the flow may be dispatched again at this time.
    cap_clock_ns: u64,
    /// The flow's report in the next broadcast is `Sfq::broadcast[report_slot]` while this is
    /// `Sfq::broadcast_epoch`; an older epoch means it has none (a broadcast moves the epoch,
    /// so no flow needs resetting).
    report_epoch: u64,
    report_slot: u32,
    rule_id: u32,
}

/// The part of a flow no enqueue or dispatch of SFQ(D) or DSFQ reads without NWC (whose
/// holds park a held flow's requests here).
#[derive(Debug, Default)]
struct FlowCold {
    /// Other instances that announced the flow (layout mode), sorted.
    remote: Vec<u32>,
    audited_cost: u64,
    /// NWC: the flow's requests taken out of the heap while it is held, in no particular
    /// order (they all go back when the hold ends).
    parked: Vec<Entry>,
}

impl Flow {
    fn new(rule_id: u32, weight: u32, mode: FlowMode) -> Flow {
        Flow {
            live: true,
            rule_id,
            weight,
            last_finish: 0,
            queued: 0,
            present: false,
            idle_since_ns: 0,
            in_idle_log: false,
            in_departed_log: false,
            active: false,
            mode,
            delay_cost: 0,
            unreported_cost: 0,
            remote_count: 0,
            announced: false,
            report_epoch: 0,
            report_slot: 0,
            local_cost_total: 0,
            cap_clock_ns: 0,
            held: false,
            dispatched_cost: 0,
        }
    }

    /// Starts loading the flow's lines: a plain read whose value is not waited for, so the
    /// out-of-order core issues the misses together with the key comparison that follows.
    /// (The core crate has no `unsafe`, which `_mm_prefetch` would need.)
    #[inline(always)]
    fn touch_hot_lines(&self) {
        std::hint::black_box(self.weight);
    }

    /// No request queued. A flow whose last request is still in service counts as idle: it
    /// departs [`SfqConfig::flow_idle_ns`] after its last dispatch, which saves a flow
    /// lookup on every completion (a request in service longer than the idle time is an
    /// anomaly, and the flow returns with its next arrival anyway).
    fn is_idle(&self) -> bool {
        self.queued == 0
    }

    /// Nothing would be lost by forgetting the flow.
    fn evictable(&self) -> bool {
        self.live
            && !self.present
            && self.is_idle()
            && self.remote_count == 0
            && self.delay_cost == 0
            && self.unreported_cost == 0
            && !self.announced
    }
}

#[inline]
fn tag(cost: u64, weight: u32) -> Tag {
    debug_assert!(weight > 0);
    if cost >> (64 - TAG_FRAC_BITS) == 0 {
        // The same quotient in 64 bits while the shifted cost fits (costs below 4 GiB, every
        // RPC): a 128-bit division is a library call of some forty instructions.
        ((cost << TAG_FRAC_BITS) / weight as u64) as Tag
    } else {
        ((cost as Tag) << TAG_FRAC_BITS) / weight as Tag
    }
}

/// One SFQ(D)/DSFQ instance.
#[derive(Debug)]
pub struct Sfq<P> {
    /// The descriptor it was started from (`sfqd` or `dsfq`): its files are
    /// `nrs_<policy_name>_*`.
    policy_name: &'static str,
    config: SfqConfig,
    class_type: ClassType,
    version: LustreVersion,
    rules: weights::WeightRules,
    flows: Vec<Flow>,
    /// `keys[f]` is flow `f`'s class key (what the index's hash is of).
    keys: Vec<RpcTags>,
    /// `cold[f]` is the rarely read part of `flows[f]`.
    cold: Vec<FlowCold>,
    free: Vec<u32>,
    /// Queued requests by slot; a free slot's payload is `None`.
    requests: Vec<Pending<P>>,
    /// Free slots of `requests`, the last freed on top: an arrival reuses the slot the last
    /// dispatch left, whose line is still in the cache.
    free_requests: Vec<u32>,
    /// 32-bit key hash -> flow (TBF's index: one 8-byte slot per flow, so a lookup touches
    /// one line of the index and then the flow).
    index: ClassIndex,
    /// Flows in the index.
    indexed: usize,
    /// The overflow flow, once a flow had to be folded.
    fold: Option<u32>,
    /// Queued requests of flows not held, by `(start, seq)`. A flow's requests have
    /// increasing `(start, seq)` in arrival order, so the least of all is the least of the
    /// flows' oldest: the order SFQ serves.
    heap: RequestHeap,
    /// NWC: held flows by release time.
    held: BinaryHeap<Reverse<(u64, u32)>>,
    /// Flows that became idle, roughly oldest first, as `(flow, idle since)`.
    idle_log: VecDeque<(u32, u64)>,
    /// `idle_log`'s front entry's time, `u64::MAX` while it is empty: every enqueue, dispatch
    /// and completion checks for departures, and this makes the check one comparison.
    idle_front_since_ns: u64,
    /// Departed flows, candidates for eviction.
    departed_log: VecDeque<u32>,
    /// The next arrival's number (from 1).
    seq: u64,
    vtime: Tag,
    outstanding: u32,
    queued: usize,
    active_weight_sum: u64,
    /// Pending reports, oldest first.
    reports: VecDeque<ServiceReport>,
    reports_dropped: u64,
    /// The next broadcast's reports, one per flow with service since the last broadcast, in
    /// the order the flows were first served; at most one per flow, so at most `flows_max + 1`.
    broadcast: Vec<ServiceReport>,
    /// Moves at every broadcast: see [`Flow::report_epoch`]. From 1, above a new flow's 0.
    broadcast_epoch: u64,
    unreported_total: u64,
    /// `time` mode: when the last broadcast went out (or the first service was counted).
    last_broadcast_ns: Option<u64>,
    folded_requests: u64,
}

impl<P> Sfq<P> {
    pub fn new(class_type: ClassType, config: SfqConfig, version: LustreVersion) -> Sfq<P> {
        assert!((1..=SFQ_DEPTH_MAX).contains(&config.depth_max));
        assert!(config.flows_max >= 1 && config.flows_max <= SFQ_FLOWS_MAX);
        Sfq {
            policy_name: if config.sync == SyncMode::None {
                "sfqd"
            } else {
                "dsfq"
            },
            config,
            class_type,
            version,
            rules: weights::WeightRules::new(),
            flows: Vec::new(),
            keys: Vec::new(),
            cold: Vec::new(),
            free: Vec::new(),
            requests: Vec::new(),
            free_requests: Vec::new(),
            index: ClassIndex::default(),
            indexed: 0,
            fold: None,
            heap: RequestHeap::default(),
            held: BinaryHeap::new(),
            idle_log: VecDeque::new(),
            idle_front_since_ns: u64::MAX,
            departed_log: VecDeque::new(),
            seq: 1,
            vtime: 0,
            outstanding: 0,
            queued: 0,
            active_weight_sum: 0,
            reports: VecDeque::new(),
            reports_dropped: 0,
            broadcast: Vec::new(),
            broadcast_epoch: 1,
            unreported_total: 0,
            last_broadcast_ns: None,
            folded_requests: 0,
        }
    }

    pub fn config(&self) -> &SfqConfig {
        &self.config
    }

    pub fn class_type(&self) -> ClassType {
        self.class_type
    }

    /// The virtual time `v`, in tag units.
    pub fn vtime(&self) -> Tag {
        self.vtime
    }

    /// Requests dispatched and not completed.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// Flows tracked (the overflow flow included).
    pub fn flow_count(&self) -> usize {
        self.indexed + usize::from(self.fold.is_some())
    }

    /// Requests that went to the overflow flow because the table was full.
    pub fn folded_requests(&self) -> u64 {
        self.folded_requests
    }

    /// Reports dropped because [`SFQ_REPORTS_PENDING_MAX`] were pending.
    pub fn reports_dropped(&self) -> u64 {
        self.reports_dropped
    }

    /// The mode of the flow `tags` belongs to, if tracked.
    pub fn flow_mode(&self, tags: &RpcTags) -> Option<FlowMode> {
        self.lookup(tags).map(|f| self.flows[f as usize].mode)
    }

    /// The weight of the flow `tags` belongs to, if tracked.
    pub fn flow_weight(&self, tags: &RpcTags) -> Option<u32> {
        self.lookup(tags).map(|f| self.flows[f as usize].weight)
    }

    /// Other instances serving the flow, as announced to this one.
    pub fn flow_remote_instances(&self, tags: &RpcTags) -> Option<&[u32]> {
        self.lookup(tags)
            .map(|f| self.cold[f as usize].remote.as_slice())
    }

    fn lookup(&self, tags: &RpcTags) -> Option<u32> {
        self.find(&self.class_type.key(tags))
    }

    /// The flow whose class key is `key`.
    #[inline]
    fn find(&self, key: &RpcTags) -> Option<u32> {
        self.index.find(key_hash(key), |f| {
            self.flows[f as usize].touch_hot_lines();
            self.keys[f as usize] == *key
        })
    }

    // ------------------------------------------------------------ flows

    fn alloc_flow(&mut self, key: RpcTags, flow: Flow) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                self.keys[i as usize] = key;
                let cold = &mut self.cold[i as usize];
                debug_assert!(cold.remote.is_empty() && cold.parked.is_empty());
                cold.audited_cost = 0;
                i
            }
            None => {
                self.flows.push(flow);
                self.keys.push(key);
                self.cold.push(FlowCold::default());
                debug_assert!(
                    self.flows.len() == self.cold.len() && self.flows.len() == self.keys.len()
                );
                (self.flows.len() - 1) as u32
            }
        }
    }

    /// A slot in [`Sfq::requests`] for `request`.
    #[inline]
    fn alloc_request(&mut self, request: Pending<P>) -> u32 {
        debug_assert!(request.payload.is_some());
        match self.free_requests.pop() {
            Some(i) => {
                let slot = &mut self.requests[i as usize];
                debug_assert!(
                    slot.payload.is_none(),
                    "a free request slot holds a request"
                );
                *slot = request;
                i
            }
            None => {
                assert!(
                    self.requests.len() < u32::MAX as usize,
                    "request slots exhausted"
                );
                self.requests.push(request);
                (self.requests.len() - 1) as u32
            }
        }
    }

    /// A new flow for `key`, evicting a departed one at the bound; `None` if the table is
    /// full of flows worth keeping.
    fn new_flow(&mut self, key: RpcTags) -> Option<u32> {
        if self.indexed >= self.config.flows_max {
            self.evict_one();
            if self.indexed >= self.config.flows_max {
                return None;
            }
        }
        let (rule_id, weight) = self.rules.matching(&key);
        let f = self.alloc_flow(key, Flow::new(rule_id, weight, self.config.initial_mode()));
        self.index.insert(key_hash(&key), f);
        self.indexed += 1;
        assert!(self.indexed <= self.config.flows_max);
        Some(f)
    }

    fn evict_one(&mut self) {
        for _ in 0..self.departed_log.len() {
            let Some(f) = self.departed_log.pop_front() else {
                return;
            };
            let flow = &mut self.flows[f as usize];
            flow.in_departed_log = false;
            let in_broadcast = flow.report_epoch == self.broadcast_epoch;
            if flow.evictable() && !in_broadcast && self.fold != Some(f) {
                let key = self.keys[f as usize];
                flow.live = false;
                debug_assert!(flow.queued == 0);
                self.cold[f as usize].remote = Vec::new();
                self.index.remove(key_hash(&key), f);
                self.indexed -= 1;
                self.free.push(f);
                return;
            }
        }
    }

    fn fold_flow(&mut self) -> u32 {
        if let Some(f) = self.fold {
            return f;
        }
        let key = RpcTags::UNKNOWN;
        let (rule_id, weight) = self.rules.matching(&key);
        let mode = self.config.initial_mode();
        let f = self.alloc_flow(key, Flow::new(rule_id, weight, mode));
        self.fold = Some(f);
        f
    }

    fn flow_for_arrival(&mut self, tags: &RpcTags) -> u32 {
        let key = self.class_type.key(tags);
        if let Some(f) = self.find(&key) {
            return f;
        }
        match self.new_flow(key) {
            Some(f) => f,
            None => {
                self.folded_requests += 1;
                self.fold_flow()
            }
        }
    }

    fn update_active(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        let active = flow.live && (flow.present || flow.remote_count > 0);
        if active != flow.active {
            flow.active = active;
            if active {
                self.active_weight_sum += flow.weight as u64;
            } else {
                self.active_weight_sum -= flow.weight as u64;
            }
        }
    }

    /// The flow is served here from now on (again).
    fn make_present(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        if flow.present {
            return;
        }
        flow.present = true;
        flow.local_cost_total = 0;
        self.cold[f as usize].audited_cost = 0;
        if self.config.sync == SyncMode::Layout && !flow.announced && self.fold != Some(f) {
            flow.announced = true;
            let key = self.keys[f as usize];
            self.push_report(ServiceReport::new(ReportKind::FlowArrived, key, 0));
        }
        self.update_active(f);
    }

    fn became_idle(&mut self, f: u32, now_ns: u64) {
        let flow = &mut self.flows[f as usize];
        if !flow.is_idle() {
            return;
        }
        flow.idle_since_ns = now_ns;
        if !flow.in_idle_log {
            flow.in_idle_log = true;
            self.idle_log.push_back((f, now_ns));
            if self.idle_log.len() == 1 {
                self.idle_front_since_ns = now_ns;
            }
        }
    }

    /// Flows idle for [`SfqConfig::flow_idle_ns`] at `now_ns` depart. Amortized O(1): each
    /// idle period puts a flow in the log at most twice.
    #[inline]
    fn expire_idle(&mut self, now_ns: u64) {
        debug_assert_eq!(
            self.idle_front_since_ns,
            self.idle_log.front().map_or(u64::MAX, |&(_, since)| since)
        );
        if self
            .idle_front_since_ns
            .saturating_add(self.config.flow_idle_ns)
            > now_ns
        {
            return;
        }
        self.expire_idle_due(now_ns);
    }

    fn expire_idle_due(&mut self, now_ns: u64) {
        let idle_ns = self.config.flow_idle_ns;
        while let Some(&(f, since)) = self.idle_log.front() {
            if since.saturating_add(idle_ns) > now_ns {
                break;
            }
            self.idle_log.pop_front();
            let flow = &mut self.flows[f as usize];
            flow.in_idle_log = false;
            if !flow.live || !flow.present || !flow.is_idle() {
                continue;
            }
            if flow.idle_since_ns.saturating_add(idle_ns) > now_ns {
                // Busy and idle again since the entry was made: wait for the new period.
                flow.in_idle_log = true;
                let since = flow.idle_since_ns;
                self.idle_log.push_back((f, since));
                continue;
            }
            self.depart(f);
        }
        self.idle_front_since_ns = self.idle_log.front().map_or(u64::MAX, |&(_, since)| since);
    }

    fn depart(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        flow.present = false;
        if flow.announced {
            flow.announced = false;
            let key = self.keys[f as usize];
            self.push_report(ServiceReport::new(ReportKind::FlowLeft, key, 0));
        }
        self.update_active(f);
        self.note_departed(f);
    }

    fn note_departed(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        if !flow.in_departed_log {
            flow.in_departed_log = true;
            self.departed_log.push_back(f);
        }
    }

    // ------------------------------------------------------------ synchronization

    fn push_report(&mut self, report: ServiceReport) {
        if self.reports.len() >= SFQ_REPORTS_PENDING_MAX {
            self.reports.pop_front();
            self.reports_dropped += 1;
        }
        self.reports.push_back(report);
        assert!(self.reports.len() <= SFQ_REPORTS_PENDING_MAX);
    }

    /// `cost` of flow `f` counts as service here at `now_ns` (at the configured
    /// [`CountPoint`]). Inline up to the per-request work of the synchronization mode: plain
    /// SFQ(D) only adds to the flow's total, and a flow whose service goes into the
    /// instance's next broadcast adds to it; the call of the rest cost some thirty
    /// instructions a request in both.
    #[inline(always)]
    fn count_service(&mut self, now_ns: u64, f: u32, cost: u64) {
        let flow = &mut self.flows[f as usize];
        flow.local_cost_total = flow.local_cost_total.saturating_add(cost);
        match (self.config.sync, flow.mode) {
            (SyncMode::None, _) => {}
            (SyncMode::FlowThreshold, _) | (SyncMode::Layout, FlowMode::Layout) => {
                self.count_reported_alone(f, cost)
            }
            // Single threshold, time, and layout-mode instances' flows switched to threshold.
            _ => self.count_for_broadcast(now_ns, f, cost),
        }
    }

    /// Service that goes into the instance's next broadcast, due when the unreported total
    /// reaches the threshold or the interval has passed.
    #[inline(always)]
    fn count_for_broadcast(&mut self, now_ns: u64, f: u32, cost: u64) {
        if self.fold == Some(f) {
            // The overflow flow mixes flows: its service means nothing to a peer.
            return;
        }
        // The flow's report is built here, at its first service since the last broadcast,
        // and then only added to: a broadcast is the list as it stands, with no pass over the
        // flows (§III-B-1: "the broadcast contains the costs of all of these flows").
        let flow = &mut self.flows[f as usize];
        if flow.report_epoch == self.broadcast_epoch {
            let report = &mut self.broadcast[flow.report_slot as usize];
            debug_assert!(report.flow == self.keys[f as usize]);
            report.cost = report.cost.saturating_add(cost);
        } else if cost > 0 {
            flow.report_epoch = self.broadcast_epoch;
            flow.report_slot = self.broadcast.len() as u32;
            self.broadcast.push(ServiceReport::new(
                ReportKind::Service,
                self.keys[f as usize],
                cost,
            ));
            assert!(
                self.broadcast.len() <= self.flows.len(),
                "one report per flow and broadcast"
            );
        }
        self.unreported_total = self.unreported_total.saturating_add(cost);
        let due = match self.config.sync {
            SyncMode::Time => {
                let last = *self.last_broadcast_ns.get_or_insert(now_ns);
                now_ns.saturating_sub(last) >= self.config.sync_interval_ns
            }
            _ => self.unreported_total >= self.config.threshold_cost,
        };
        if due {
            self.flush_service();
            self.last_broadcast_ns = Some(now_ns);
        }
    }

    /// Service reported flow by flow: per-flow thresholds, and a layout-mode flow's audit.
    fn count_reported_alone(&mut self, f: u32, cost: u64) {
        if self.fold == Some(f) {
            return;
        }
        let flow = &mut self.flows[f as usize];
        if self.config.sync == SyncMode::FlowThreshold {
            flow.unreported_cost = flow.unreported_cost.saturating_add(cost);
            if flow.unreported_cost >= self.config.threshold_cost {
                let (key, c) = (self.keys[f as usize], flow.unreported_cost);
                flow.unreported_cost = 0;
                if c > 0 {
                    self.push_report(ServiceReport::new(ReportKind::Service, key, c));
                }
            }
            return;
        }
        debug_assert!(self.config.sync == SyncMode::Layout && flow.mode == FlowMode::Layout);
        let audit = self.config.layout_audit_cost;
        let cold = &mut self.cold[f as usize];
        if audit > 0 && flow.local_cost_total - cold.audited_cost >= audit {
            cold.audited_cost = flow.local_cost_total;
            let key = self.keys[f as usize];
            let c = flow.local_cost_total.min(super::SERVICE_REPORT_COST_MAX);
            self.push_report(ServiceReport::new(ReportKind::LayoutAudit, key, c));
        }
    }

    /// One broadcast: every flow's service since the last one (§III-B-1: "the broadcast
    /// contains the costs of all of these flows"), whose reports are built as the service is
    /// counted. They join the pending reports, whose buffer they become when none is pending
    /// (the common case: drivers take the reports after every event).
    #[inline(never)]
    fn flush_service(&mut self) {
        let n = self.broadcast.len();
        let built = std::mem::replace(&mut self.broadcast, Vec::with_capacity(n));
        self.broadcast_epoch += 1;
        self.unreported_total = 0;
        if self.reports.is_empty() && n <= SFQ_REPORTS_PENDING_MAX {
            self.reports = VecDeque::from(built);
        } else {
            for report in built {
                self.push_report(report);
            }
        }
    }

    fn switch_to_threshold(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        if flow.mode == FlowMode::Layout {
            flow.mode = FlowMode::Threshold;
        }
    }

    /// A report from instance `from`. Refused reports change nothing.
    pub fn peer_report(
        &mut self,
        now_ns: u64,
        from: u32,
        report: &ServiceReport,
    ) -> Result<(), SyncRejection> {
        report.validate()?;
        if from >= SYNC_INSTANCES_MAX {
            return Err(SyncRejection::BadInstance);
        }
        if self.class_type.key(&report.flow) != report.flow {
            return Err(SyncRejection::UnknownFlow);
        }
        self.expire_idle(now_ns);
        let known = self.find(&report.flow);
        match (report.kind, self.config.sync) {
            (_, SyncMode::None) => Ok(()),
            (ReportKind::Service, _) => {
                // A flow never served here is none of this instance's business: its service
                // elsewhere before it arrives here is forgiven as SFQ forgives idle time.
                if let Some(f) = known {
                    self.switch_to_threshold(f);
                    let flow = &mut self.flows[f as usize];
                    flow.delay_cost = flow.delay_cost.saturating_add(report.cost);
                }
                Ok(())
            }
            (ReportKind::LayoutAudit, SyncMode::Layout) => {
                if let Some(f) = known {
                    let flow = &self.flows[f as usize];
                    let (mine, theirs) = (flow.local_cost_total, report.cost);
                    let floor = self.config.layout_audit_cost;
                    if flow.present
                        && flow.mode == FlowMode::Layout
                        && mine.max(theirs) >= floor
                        && mine.max(theirs)
                            > mine.min(theirs).saturating_mul(LAYOUT_MISMATCH_FACTOR)
                    {
                        self.switch_to_threshold(f);
                    }
                }
                Ok(())
            }
            (ReportKind::FlowArrived, SyncMode::Layout) => {
                let f = match known {
                    Some(f) => f,
                    None => self
                        .new_flow(report.flow)
                        .ok_or(SyncRejection::TooManyFlows)?,
                };
                let remote = &mut self.cold[f as usize].remote;
                if let Err(at) = remote.binary_search(&from) {
                    if remote.len() >= SYNC_INSTANCES_MAX as usize {
                        return Err(SyncRejection::BadInstance);
                    }
                    remote.insert(at, from);
                    self.flows[f as usize].remote_count = remote.len() as u32;
                }
                self.update_active(f);
                Ok(())
            }
            (ReportKind::FlowLeft, SyncMode::Layout) => {
                let f = known.ok_or(SyncRejection::UnknownFlow)?;
                let remote = &mut self.cold[f as usize].remote;
                let at = remote
                    .binary_search(&from)
                    .map_err(|_| SyncRejection::UnknownFlow)?;
                remote.remove(at);
                let flow = &mut self.flows[f as usize];
                flow.remote_count = remote.len() as u32;
                let gone = !flow.present && flow.remote_count == 0;
                self.update_active(f);
                if gone {
                    self.note_departed(f);
                }
                Ok(())
            }
            // Presence and audit reports mean nothing to a threshold-mode instance.
            _ => Ok(()),
        }
    }

    // ------------------------------------------------------------ weights

    /// Re-binds every flow to its first matching rule after a rule change (control plane:
    /// O(flows x rules)). Queued requests keep their tags; later arrivals use the new weight.
    fn rebind_flows(&mut self) {
        for i in 0..self.flows.len() {
            let flow = &self.flows[i];
            if !flow.live {
                continue;
            }
            let (rule_id, weight) = self.rules.matching(&self.keys[i]);
            let flow = &mut self.flows[i];
            if flow.active {
                self.active_weight_sum =
                    self.active_weight_sum - flow.weight as u64 + weight as u64;
            }
            flow.rule_id = rule_id;
            flow.weight = weight;
        }
    }

    /// Applies a parsed weight command (its queue prefix is the caller's business).
    pub fn apply_weight(&mut self, op: &WeightOp) -> Result<(), NrsError> {
        if let WeightOp::Start { condition, .. } = op {
            if let Some(f) = condition.fields().find(|f| !self.class_type.contains(*f)) {
                return Err(NrsError {
                    errno: Errno::EINVAL,
                    message: format!("field `{f}` is not enabled by the policy type"),
                });
            }
        }
        self.rules.apply(op)?;
        self.rebind_flows();
        Ok(())
    }

    /// The weight rules, highest priority first, as `nrs_<policy>_weight` lists them.
    pub fn weight_listing(&self) -> String {
        let mut refs: FxHashMap<u32, u64> = FxHashMap::default();
        for f in self.flows.iter().filter(|f| f.live) {
            *refs.entry(f.rule_id).or_default() += 1;
        }
        self.rules.listing(|id| refs.get(&id).copied().unwrap_or(0))
    }

    /// Names of the rules, highest priority first.
    pub fn rule_names(&self) -> Vec<&str> {
        self.rules.rules.iter().map(|r| r.name.as_str()).collect()
    }

    /// The flows, one line each, sorted: the class key (job ids quoted as job_stats quotes
    /// them, so a job id's characters are never read as syntax), weight, mode, instances
    /// serving it (this one included), queued requests, cost dispatched.
    pub fn flows_listing(&self) -> String {
        let mut lines: Vec<String> = self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.live)
            .map(|(i, f)| {
                let key = if self.fold == Some(i as u32) {
                    "*".to_string()
                } else {
                    self.key_text(&self.keys[i])
                };
                format!(
                    "{key} weight={} mode={} servers={} queued={} dispatched={}",
                    f.weight,
                    f.mode.name(),
                    f.remote_count as u64 + u64::from(f.present),
                    f.queued,
                    f.dispatched_cost
                )
            })
            .collect();
        lines.sort_unstable();
        let mut out = String::new();
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
        out
    }

    fn key_text(&self, key: &RpcTags) -> String {
        let mut parts = Vec::new();
        for field in Field::ALL {
            if !self.class_type.contains(field) {
                continue;
            }
            let v = match field {
                Field::Jobid => quote_job_id(key.job.as_str()),
                Field::Nid => key.nid.to_string(),
                Field::Opcode => format!("{:?}", key.opcode),
                Field::Uid => key.uid.to_string(),
                Field::Gid => key.gid.to_string(),
                Field::Projid => key.projid.to_string(),
                Field::Nodemap => key.nodemap.to_string(),
            };
            parts.push(format!("{}={v}", field.name()));
        }
        parts.join("&")
    }

    // ------------------------------------------------------------ tunables

    /// Sets a tunable by its parameter suffix (`depth`, `rpc_cost`, ...; see
    /// [`param_names`]) from an already extracted value.
    fn set_tunable(&mut self, suffix: &str, value: &str) -> Result<(), NrsError> {
        let number = |max: u64, min: u64| -> Result<u64, NrsError> {
            let v =
                kstrtoull(value, 10).map_err(|_| einval(format!("`{value}` is not a number")))?;
            if v < min || v > max {
                return Err(einval(format!("{v} is out of range {min}..={max}")));
            }
            Ok(v)
        };
        let word = value.strip_suffix('\n').unwrap_or(value);
        match suffix {
            "depth" => self.config.depth_max = number(SFQ_DEPTH_MAX as u64, 1)? as u32,
            "rpc_cost" => self.config.rpc_cost = number(RPC_COST_MAX, 0)?,
            "nwc" => {
                self.config.nwc_capacity_cost_per_s = number(NWC_CAPACITY_COST_PER_S_MAX, 0)?;
                if self.config.nwc_capacity_cost_per_s == 0 {
                    self.release_all_held();
                }
            }
            "threshold" => self.config.threshold_cost = number(SYNC_THRESHOLD_COST_MAX, 0)?,
            "layout_audit" => self.config.layout_audit_cost = number(SYNC_THRESHOLD_COST_MAX, 0)?,
            "flow_idle_ms" => self.config.flow_idle_ns = number(FLOW_IDLE_MS_MAX, 1)? * 1_000_000,
            "sync_interval_ms" => {
                self.config.sync_interval_ns = number(SYNC_INTERVAL_MS_MAX, 1)? * 1_000_000
            }
            "count" => {
                self.config.count_at = CountPoint::from_name(word).ok_or_else(|| {
                    einval(format!("`{word}`: expected arrival, dispatch or finish"))
                })?
            }
            "sync" => {
                let mode = SyncMode::from_name(word).ok_or_else(|| {
                    einval(format!(
                        "`{word}`: expected none, threshold, flow_threshold, layout or time"
                    ))
                })?;
                self.set_sync(mode);
            }
            "flows" => {
                return Err(NrsError {
                    errno: Errno::EPERM,
                    message: "the flows listing is read-only".into(),
                })
            }
            _ => {
                return Err(NrsError {
                    errno: Errno::ENOENT,
                    message: format!("no tunable `{suffix}`"),
                })
            }
        }
        Ok(())
    }

    fn tunable_text(&self, suffix: &str) -> Option<String> {
        let c = &self.config;
        Some(match suffix {
            "depth" => c.depth_max.to_string(),
            "rpc_cost" => c.rpc_cost.to_string(),
            "nwc" => c.nwc_capacity_cost_per_s.to_string(),
            "threshold" => c.threshold_cost.to_string(),
            "layout_audit" => c.layout_audit_cost.to_string(),
            "flow_idle_ms" => (c.flow_idle_ns / 1_000_000).to_string(),
            "sync_interval_ms" => (c.sync_interval_ns / 1_000_000).to_string(),
            "count" => c.count_at.name().to_string(),
            "sync" => c.sync.name().to_string(),
            _ => return None,
        })
    }

    /// A new synchronization mode: every flow's synchronization state starts over (pending
    /// delays and counts are dropped; in layout mode present flows are announced again).
    fn set_sync(&mut self, mode: SyncMode) {
        self.config.sync = mode;
        let initial = self.config.initial_mode();
        for i in 0..self.flows.len() {
            let flow = &mut self.flows[i];
            if !flow.live {
                continue;
            }
            flow.mode = initial;
            flow.delay_cost = 0;
            flow.unreported_cost = 0;
            flow.remote_count = 0;
            flow.announced = false;
            let cold = &mut self.cold[i];
            cold.remote.clear();
            cold.audited_cost = flow.local_cost_total;
            let present = flow.present;
            let key = self.keys[i];
            self.update_active(i as u32);
            if present && mode == SyncMode::Layout && self.fold != Some(i as u32) {
                self.flows[i].announced = true;
                self.push_report(ServiceReport::new(ReportKind::FlowArrived, key, 0));
            }
        }
        // Reports not broadcast are dropped with the rest of the synchronization state.
        self.broadcast.clear();
        self.broadcast_epoch += 1;
        self.unreported_total = 0;
        self.last_broadcast_ns = None;
    }

    // ------------------------------------------------------------ NWC

    fn nwc(&self) -> bool {
        self.config.nwc_capacity_cost_per_s > 0
    }

    fn release_held(&mut self, now_ns: u64) {
        while let Some(&Reverse((until, f))) = self.held.peek() {
            if until > now_ns {
                break;
            }
            self.held.pop();
            self.unhold(f);
        }
    }

    fn release_all_held(&mut self) {
        while let Some(Reverse((_, f))) = self.held.pop() {
            self.unhold(f);
        }
    }

    fn unhold(&mut self, f: u32) {
        self.flows[f as usize].held = false;
        for e in self.cold[f as usize].parked.drain(..) {
            self.heap.push(e);
        }
    }

    /// Time the flow's share of the capacity takes to serve `cost`, rounded up.
    fn nwc_time_ns(&self, f: u32, cost: u64) -> u64 {
        let w = self.flows[f as usize].weight as u128;
        let total = (self.active_weight_sum as u128).max(w);
        let num = cost as u128 * NS_PER_S as u128 * total;
        let den = self.config.nwc_capacity_cost_per_s as u128 * w;
        num.div_ceil(den).min(u64::MAX as u128) as u64
    }

    // ------------------------------------------------------------ invariants

    /// The invariants that are cheap enough for every operation are asserted where they can
    /// break (depth at dispatch, virtual time at dispatch); the sums are checked here in debug
    /// builds (O(flows)).
    fn check(&self) {
        debug_assert_eq!(
            self.flows
                .iter()
                .filter(|f| f.live)
                .map(|f| f.queued as usize)
                .sum::<usize>(),
            self.queued,
            "queued count is the sum of the flows' counts"
        );
        debug_assert_eq!(
            self.requests.len() - self.free_requests.len(),
            self.queued,
            "a request slot for every queued request"
        );
        debug_assert_eq!(
            self.flows
                .iter()
                .filter(|f| f.live && f.active)
                .map(|f| f.weight as u64)
                .sum::<u64>(),
            self.active_weight_sum
        );
    }
}

fn einval(message: impl Into<String>) -> NrsError {
    NrsError {
        errno: Errno::EINVAL,
        message: message.into(),
    }
}

impl<P> RequestScheduler<P> for Sfq<P> {
    fn enqueue_with_cost(&mut self, now_ns: u64, tags: &RpcTags, cost: u64, payload: P) {
        self.expire_idle(now_ns);
        let cost = cost.saturating_add(self.config.rpc_cost);
        let f = self.flow_for_arrival(tags);
        self.make_present(f);
        let vtime = self.vtime;
        let seq = self.seq;
        self.seq += 1;
        let flow = &mut self.flows[f as usize];
        let delay_cost = match flow.mode {
            FlowMode::Local => 0,
            FlowMode::Threshold => std::mem::take(&mut flow.delay_cost),
            // Mirrored on every other instance of the flow's stripe set.
            FlowMode::Layout => cost.saturating_mul(flow.remote_count as u64),
        };
        // No delay (plain SFQ(D), and DSFQ between reports) needs no division.
        let delay = if delay_cost == 0 {
            0
        } else {
            tag(delay_cost, flow.weight)
        };
        let start = vtime.max(flow.last_finish + delay);
        flow.last_finish = start + tag(cost, flow.weight);
        flow.queued += 1;
        let held = flow.held;
        let slot = self.alloc_request(Pending {
            payload: Some(payload),
            cost,
            flow: f,
            #[cfg(test)]
            order: (start, seq),
        });
        let entry = Entry { start, seq, slot };
        if held {
            self.cold[f as usize].parked.push(entry);
        } else {
            self.heap.push(entry);
        }
        self.queued += 1;
        if self.config.count_at == CountPoint::Arrival {
            self.count_service(now_ns, f, cost);
        }
        self.check();
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue<P> {
        self.expire_idle(now_ns);
        self.release_held(now_ns);
        if self.queued == 0 || self.outstanding >= self.config.depth_max {
            return Dequeue::Empty;
        }
        let nwc = self.nwc();
        while let Some(top) = self.heap.pop() {
            let Entry { start, slot, .. } = top;
            let request = &mut self.requests[slot as usize];
            let f = request.flow;
            if nwc {
                // Due holds were released above, so a held flow's release is still ahead.
                let flow = &mut self.flows[f as usize];
                if flow.held || flow.cap_clock_ns > now_ns {
                    if !flow.held {
                        flow.held = true;
                        self.held.push(Reverse((flow.cap_clock_ns, f)));
                    }
                    self.cold[f as usize].parked.push(top);
                    continue;
                }
            }
            let payload = request
                .payload
                .take()
                .expect("a request in the heap has a payload");
            let cost = request.cost;
            self.free_requests.push(slot);
            let flow = &mut self.flows[f as usize];
            assert!(flow.queued > 0, "a dispatched flow has a request queued");
            flow.queued -= 1;
            let now_idle = flow.queued == 0;
            flow.dispatched_cost = flow.dispatched_cost.saturating_add(cost);
            // Without holds, every queued start tag is at least v (arrivals start at v or
            // later, and v is the smallest start tag when it moves): v only grows.
            assert!(
                nwc || start >= self.vtime,
                "virtual time would move backwards"
            );
            self.vtime = self.vtime.max(start);
            self.outstanding += 1;
            self.queued -= 1;
            assert!(
                self.outstanding <= self.config.depth_max,
                "more requests outstanding than the depth"
            );
            if nwc {
                let t = self.nwc_time_ns(f, cost);
                let flow = &mut self.flows[f as usize];
                flow.cap_clock_ns = flow.cap_clock_ns.max(now_ns).saturating_add(t);
            }
            if self.config.count_at == CountPoint::Dispatch {
                self.count_service(now_ns, f, cost);
            }
            if now_idle {
                self.became_idle(f, now_ns);
            }
            self.check();
            return Dequeue::Request(payload);
        }
        // Out of the heap with requests queued: only held flows' requests may be left.
        assert!(
            nwc || self.queued == 0,
            "queued requests that are neither in the heap nor held"
        );
        match self.held.peek() {
            Some(&Reverse((until_ns, _))) => {
                assert!(until_ns > now_ns, "a due hold was released");
                Dequeue::Throttled { until_ns }
            }
            None => Dequeue::Empty,
        }
    }

    fn on_complete(&mut self, now_ns: u64, tags: &RpcTags, cost: u64) {
        assert!(self.outstanding > 0, "a completion without a dispatch");
        self.outstanding -= 1;
        // Only service counted at completion needs the flow (a folded request's service
        // goes to its own flow if that exists by now, else to the overflow flow).
        if self.config.count_at == CountPoint::Finish {
            if let Some(f) = self.lookup(tags).or(self.fold) {
                self.count_service(now_ns, f, cost.saturating_add(self.config.rpc_cost));
            }
        }
        self.expire_idle(now_ns);
    }

    fn take_service_reports(&mut self) -> Vec<ServiceReport> {
        // Drivers call this after every event and it is usually empty: the conversion below
        // costs some twenty instructions even then.
        if self.reports.is_empty() {
            return Vec::new();
        }
        self.take_pending_reports()
    }

    /// The arrivals announced and not yet withdrawn (layout mode): a restarted peer learns
    /// again which flows this instance serves, so it charges their requests as mirrored here.
    fn presence_reports(&self) -> Vec<ServiceReport> {
        self.flows
            .iter()
            .zip(&self.keys)
            .filter(|(f, _)| f.live && f.announced)
            .map(|(_, &key)| ServiceReport::new(ReportKind::FlowArrived, key, 0))
            .collect()
    }

    fn on_peer_service(
        &mut self,
        now_ns: u64,
        from_instance: u32,
        report: &ServiceReport,
    ) -> Result<(), SyncRejection> {
        self.peer_report(now_ns, from_instance, report)
    }

    fn on_timer(&mut self, now_ns: u64) {
        self.release_held(now_ns);
        self.expire_idle(now_ns);
    }

    fn timer_deadline_ns(&self) -> Option<u64> {
        self.held.peek().map(|&Reverse((until_ns, _))| until_ns)
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

impl<P> Sfq<P> {
    /// The pending reports, in place (the deque's buffer becomes the Vec's; a broadcast's
    /// buffer is its list of reports, built at the size of the one before, so the next one
    /// needs no growing either). Out of line, so the empty case of `take_service_reports`,
    /// every event's, stays a few instructions.
    #[inline(never)]
    fn take_pending_reports(&mut self) -> Vec<ServiceReport> {
        Vec::from(std::mem::take(&mut self.reports))
    }

    /// Removes every queued request in start-tag order (ties by arrival), the order the
    /// policy would have served them without depth or caps.
    pub fn drain(&mut self, _now_ns: u64) -> Vec<P> {
        let mut all: Vec<Entry> = Vec::with_capacity(self.queued);
        self.heap.drain_into(&mut all);
        for cold in &mut self.cold {
            all.append(&mut cold.parked);
        }
        for flow in self.flows.iter_mut().filter(|f| f.live) {
            flow.queued = 0;
            flow.held = false;
        }
        self.held.clear();
        assert_eq!(
            all.len(),
            self.queued,
            "every queued request is in the heap or parked"
        );
        all.sort_unstable_by_key(|e| (e.start, e.seq));
        let requests = &mut self.requests;
        let payloads = all
            .into_iter()
            .map(|e| {
                requests[e.slot as usize]
                    .payload
                    .take()
                    .expect("a queued request has a payload")
            })
            .collect();
        self.requests.clear();
        self.free_requests.clear();
        self.queued = 0;
        payloads
    }
}

/// The parameter files of the registry row `policy` (`sfqd` or `dsfq`), e.g.
/// `nrs_dsfq_weight`. The suffix after `nrs_<policy>_` names the tunable.
pub fn param_names(policy: &str) -> &'static [&'static str] {
    match policy {
        "sfqd" => &PARAMS_SFQD,
        "dsfq" => &PARAMS_DSFQ,
        _ => &[],
    }
}

/// `sfqd`'s files: weights, depth D, per-request cost, NWC capacity, the flows listing.
pub const PARAMS_SFQD: [&str; 5] = [
    "nrs_sfqd_weight",
    "nrs_sfqd_depth",
    "nrs_sfqd_rpc_cost",
    "nrs_sfqd_nwc",
    "nrs_sfqd_flows",
];

/// `dsfq`'s files: as `sfqd`'s, plus the synchronization mode, threshold, counting point,
/// layout audit, the idle time after which a flow leaves (layout mode announces it) and the
/// time-driven interval.
pub const PARAMS_DSFQ: [&str; 11] = [
    "nrs_dsfq_weight",
    "nrs_dsfq_depth",
    "nrs_dsfq_rpc_cost",
    "nrs_dsfq_nwc",
    "nrs_dsfq_flows",
    "nrs_dsfq_sync",
    "nrs_dsfq_threshold",
    "nrs_dsfq_count",
    "nrs_dsfq_layout_audit",
    "nrs_dsfq_flow_idle_ms",
    "nrs_dsfq_sync_interval_ms",
];

pub use crate::policy::ParamValue;

/// SFQ(D) as a head's primary policy: local start-time fair queuing with depth D.
pub fn sfqd_descriptor<P: Send + 'static>() -> NrsPolicyDescriptor<P> {
    NrsPolicyDescriptor {
        name: "sfqd",
        description: "SFQ(D): start-time fair queuing by weight, at most D requests at the device",
        params: &PARAMS_SFQD,
        start: start_sfqd::<P>,
        stopped_write: None,
    }
}

/// DSFQ as a head's primary policy: SFQ(D) with the delay term of service received on other
/// servers, and vPFS's synchronization of it (threshold, layout or time driven).
pub fn dsfq_descriptor<P: Send + 'static>() -> NrsPolicyDescriptor<P> {
    NrsPolicyDescriptor {
        name: "dsfq",
        description:
            "DSFQ: fair queuing across servers, synchronized by threshold or layout (vPFS)",
        params: &PARAMS_DSFQ,
        start: start_dsfq::<P>,
        stopped_write: None,
    }
}

fn start_with<P: Send + 'static>(
    name: &'static str,
    arg: Option<&str>,
    head: &NrsConfig,
    config: SfqConfig,
) -> Result<Box<dyn NrsPolicy<P>>, NrsError> {
    // The TBF type parser, so `jobid`, `nid`, `uid`, `gid` (and combinations) mean the same
    // as for TBF; no argument means jobid (vPFS identifies applications).
    let class_type = match arg {
        None => ClassType::single(Field::Jobid),
        Some(a) => ClassType::parse_arg(Some(a), head.version).map_err(|e| NrsError {
            errno: e.errno,
            message: e.message,
        })?,
    };
    let mut sfq = Sfq::new(class_type, config, head.version);
    sfq.policy_name = name;
    Ok(Box::new(sfq))
}

/// Start function of `sfqd`.
fn start_sfqd<P: Send + 'static>(
    arg: Option<&str>,
    head: &NrsConfig,
) -> Result<Box<dyn NrsPolicy<P>>, NrsError> {
    start_with("sfqd", arg, head, SfqConfig::sfqd())
}

/// Start function of `dsfq`.
fn start_dsfq<P: Send + 'static>(
    arg: Option<&str>,
    head: &NrsConfig,
) -> Result<Box<dyn NrsPolicy<P>>, NrsError> {
    start_with("dsfq", arg, head, SfqConfig::dsfq())
}

impl<P: Send + 'static> NrsPolicy<P> for Sfq<P> {
    fn drain(&mut self, now_ns: u64) -> Vec<P> {
        Sfq::drain(self, now_ns)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn write_param(
        &mut self,
        param: &str,
        queue: NrsQueue,
        _now_ns: u64,
        text: &str,
    ) -> Result<(), NrsError> {
        let prefix = format!("nrs_{}_", self.policy_name);
        let suffix = param
            .strip_prefix(prefix.as_str())
            .filter(|_| param_names(self.policy_name).contains(&param))
            .ok_or_else(|| NrsError {
                errno: Errno::ENOENT,
                message: format!("policy `{}` has no parameter `{param}`", self.policy_name),
            })?;
        if suffix == "weight" {
            let cmd = WeightCommand::parse(text, self.class_type, self.version)?;
            if cmd.queue.is_some_and(|q| q != queue) {
                return Ok(());
            }
            return self.apply_weight(&cmd.op);
        }
        match tunable_value(text, suffix, queue)? {
            Some(v) => self.set_tunable(suffix, v),
            None => Ok(()),
        }
    }

    fn read_param(&self, param: &str) -> Result<ParamValue, NrsError> {
        let prefix = format!("nrs_{}_", self.policy_name);
        let suffix = param
            .strip_prefix(prefix.as_str())
            .filter(|_| param_names(self.policy_name).contains(&param));
        match suffix {
            Some("weight") => Ok(ParamValue::Lines(self.weight_listing())),
            Some("flows") => Ok(ParamValue::Lines(self.flows_listing())),
            Some(s) => self
                .tunable_text(s)
                .map(ParamValue::Scalar)
                .ok_or_else(|| NrsError {
                    errno: Errno::ENOENT,
                    message: format!("no tunable `{s}`"),
                }),
            None => Err(NrsError {
                errno: Errno::ENOENT,
                message: format!("policy `{}` has no parameter `{param}`", self.policy_name),
            }),
        }
    }
}
