//! The RPC-level discrete-event engine: every RPC is a handful of events on an integer-ns clock.
//!
//! # Model
//!
//! * **Clients.** A process keeps `iodepth` I/O calls of at most `bs` outstanding. A call
//!   becomes RPCs by the one rule every pfsqos client follows (`pfsqos_node::client`: one
//!   contiguous range per object, cut at every multiple of `brw_size` in the object, as
//!   Lustre's OSC builds them). Files are placed by `pfsqos_node::mds::Placer`. RPCs of
//!   different calls are never merged (no page-cache aggregation). Each (client, OST) pair is an OSC: at most
//!   `max_rpcs_in_flight` RPCs outstanding, the rest wait in one FIFO shared by every process
//!   on that client. A call completes when all its RPCs have.
//! * **Sequenced groups.** A group with `after = k` is started when the last process of group
//!   `k` of its job is done (its last call completed), its shape moved to begin then
//!   (`Shape::delayed`); a group with `files_of = k` gets process `i`'s file (or region) of
//!   group `k` at set-up and places nothing. A `phases` barrier spans one stage (the groups
//!   with the same `after`), not the whole job.
//! * **Network.** Every client and every OSS has a full-duplex link; each direction is a FIFO
//!   serializer (`bytes / bandwidth`, reserved in event order). Small messages (requests,
//!   write replies) cost only `latency_us`. Bulk data crosses two links cut-through: the
//!   second link is reserved when the data starts leaving the first, and the transfer ends no
//!   earlier than on the first link; then `latency_us`.
//! * **OSS.** `io_threads` service threads are split evenly over the OSS's `cpts` CPU
//!   partitions (at least one each; Lustre's thread counts are per partition too). A client
//!   maps to a partition by a fixed hash of its index. Each partition holds one `Nrs`
//!   scheduler instance per domain of that OSS (scope `oss`: one domain for all its OSTs;
//!   scope `ost`: one per OST), and a free thread polls them round robin. Thread allowance is
//!   simplified: a regular request may start whenever a thread of its partition is idle (no
//!   HP requests exist here, so Lustre's "keep one thread for HP work" rule is left out).
//! * **Service.** A thread holds the request for its whole service, as an `ost_io` thread
//!   does: a write first pulls its bulk data (client uplink, then server downlink), then the
//!   device writes it, then the thread is released and the reply travels back. A read goes
//!   to the device at once, then the data is pushed (server uplink, then client downlink); the
//!   thread is released when the data has reached the client, and the reply is folded into
//!   that bulk message.
//! * **Devices.** See [`crate::device`]: table-driven service time, random penalty when a
//!   request does not start where the previous one on the same object ended (in device start
//!   order), `concurrency` requests in service sharing one transfer serializer.
//! * **Schedulers.** Each partition's `CptService` drives its heads (arrival with the RPC's
//!   bytes as cost, dispatch, completion, timers). `Throttled { until_ns }` arms a timer
//!   event; the deadline is re-checked after every enqueue and after control writes; a timer
//!   event whose time is not the armed deadline is stale and ignored. A deadline not in the future is armed at
//!   `now + 1` so a scheduler that keeps answering "throttled until now" cannot stall time.
//! * **Synchronization.** Distributed schedulers (DSFQ) report service through their
//!   partition's counted channel (`CptService::take_sync_out`, read after every dispatch
//!   round); each message reaches every other partition: at once within one OSS, after the
//!   latency plus its own time on the sender's link at another OSS (not queued behind bulk
//!   data). Counts per OSS are in `RunOutput::sync`.
//!
//! # Determinism
//!
//! Events are ordered by `(time_ns, push sequence)`; all state lives in `Vec`s indexed by ids;
//! each process has its own `ChaCha8Rng` seeded with the run seed and the process index as the
//! stream, so adding processes does not change the offsets of the others.

use std::collections::VecDeque;

use pfsqos_core::control::{
    ClientId, ClientWrite, Controller, Decision, DomainId, DomainObservation, JobMeta,
    JobTargetStats, Observation, TargetObservation,
};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid, Opcode, OstId, RpcTags};
use pfsqos_core::place::{OstStats, PlacementContext, ServerStats};
use pfsqos_core::run::{JobSeries, TimeSpent};
use pfsqos_core::sched::nrs::{Nrs, ServiceTicket};
use pfsqos_node::client::{Raid0, RateLimiter, RpcWindow, LIMIT_BYTES_PER_S_MAX};
use pfsqos_node::oss::{apply_write, CptService, Dispatch, SyncMessage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::device::{Device, DeviceModel, DeviceRequest, DeviceTable, ServiceTime};
use crate::error::RunError;
use crate::events::{Event, EventQueue};
use crate::policy::{controller_for_choice, PolicyArg};
use crate::record::{
    ControlLogEntry, ControlTraceEntry, EngineStats, JobOutput, JobPhases, OstSpace, PhaseRecord,
    RunOutput, SyncOutput, CONTROL_TRACE_LEN_MAX,
};
use crate::scenario::{
    EngineKind, FileMode, FilesCreated, JobSpec, Rw, Scenario, SchedulerScope, ShapeKind,
};
use crate::workload::{secs_to_ns, Shape};

/// Event lane of messages that cost only the constant latency (their times never decrease).
const LANE_LATENCY: u32 = 0;
/// The call of an RPC whose call keeps no record: a buffered write's (the process has moved
/// on, and the RPCs themselves carry what their completion needs).
const NO_CALL: u32 = u32::MAX;

/// First event lane of each kind of FIFO resource; see `EventQueue`. Each resource pushes
/// non-decreasing times: a link or a device serializer only ever moves its free time forward.
#[derive(Clone, Copy)]
struct Lanes {
    /// `WriteBulkHop` at the start of a transfer on a client's uplink (one a limit change
    /// moved earlier is a lone event: `Sim::push_uplink_start`).
    client_up: u32,
    /// `ReadDone` at the end of a transfer on a client's downlink.
    client_down: u32,
    /// `ReadBulkHop` at the start of a transfer on an OSS's uplink.
    oss_up: u32,
    /// `DeviceSubmit` at the end of a transfer on an OSS's downlink.
    oss_down: u32,
    /// `DeviceDone` of an OST device (transfers are serialized in start order).
    device: u32,
    /// `ServiceCpuDone` of a CPU partition's threads, while their CPU times keep the lane's
    /// order (RPCs of one size); one that would end earlier is a lone event.
    pool_cpu: u32,
    total: u32,
}

impl Lanes {
    fn new(clients: u32, osses: u32, osts: u32, pools: u32) -> Lanes {
        let client_up = LANE_LATENCY + 1;
        let client_down = client_up + clients;
        let oss_up = client_down + clients;
        let oss_down = oss_up + osses;
        let device = oss_down + osses;
        let pool_cpu = device + osts;
        Lanes {
            client_up,
            client_down,
            oss_up,
            oss_down,
            device,
            pool_cpu,
            total: pool_cpu + pools,
        }
    }
}

/// Progress is reported every this many events.
const PROGRESS_EVERY_EVENTS: u64 = 1 << 20;
/// Upper bounds on what a scenario may make the engine allocate up front.
const CLIENTS_MAX: usize = 1 << 16;
const OSTS_MAX: usize = 1 << 16;
const PROCESSES_MAX: usize = 1 << 20;
const OSCS_MAX: usize = 1 << 24;
/// Buffered RPCs one client may have alive. Writes beyond it wait as if the dirty budget
/// were full: a bound on the engine's memory (4 KiB writes into Lustre's default 2000 MiB per
/// OSC would be half a million RPCs per OSC), not a model of the client.
const CLIENT_BUFFERED_RPCS_MAX: u64 = 1 << 18;
/// Synchronization messages queued for their receivers at once (each copy to each partition
/// counts): a bound on the engine's memory (an event each), not a model of the network.
const SYNC_DELIVERIES_MAX: u64 = 1 << 23;
/// Time-series cells the run may hold (`bins` per OST a job moved bytes on, summed over the
/// jobs): the scenario validation refuses a run whose jobs' totals alone exceed it, and the
/// run stops with an error when its jobs' OSTs would.
use crate::scenario::SERIES_CELLS_MAX;

/// Runs `scenario` under the controller named `policy` with `seed`. `progress` is called from
/// time to time with (simulated now, simulated end) so a driver can draw a progress bar.
pub fn run(
    scenario: &Scenario,
    policy: &(impl PolicyArg + ?Sized),
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunOutput, RunError> {
    run_wrapped(
        scenario,
        policy,
        seed,
        &mut |c: Box<dyn Controller>| c,
        progress,
    )
}

/// [`run`], with the controller `policy` names passed through `wrap` before the run (a driver
/// wraps it to observe its calls, e.g. to time `decide` on its own clock; the engine itself
/// keeps no clock). The run is the same as [`run`]'s as long as the wrapper delegates every
/// call unchanged. The fluid engine has no controller to wrap (its GIFT family are
/// allocators): `wrap` is not called there.
pub fn run_wrapped(
    scenario: &Scenario,
    policy: &(impl PolicyArg + ?Sized),
    seed: u64,
    wrap: &mut dyn FnMut(Box<dyn Controller>) -> Box<dyn Controller>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunOutput, RunError> {
    let choice = policy.choice().map_err(RunError::Policy)?;
    if scenario.simulation.engine == EngineKind::Fluid {
        return crate::fluid::run(scenario, &*choice, seed, progress);
    }
    scenario.rpc_jobs().map_err(RunError::Engine)?;
    let controller = wrap(controller_for_choice(&choice, scenario, seed));
    let mut sim =
        Sim::new(scenario, controller, choice.spec(), seed).map_err(RunError::Scenario)?;
    sim.run(progress);
    sim.finish_checked()
}

/// The RPC-level engine on `scenario` whatever its `simulation.engine` says (for comparing
/// the engines on one scenario).
pub fn run_rpc(
    scenario: &Scenario,
    policy: &(impl PolicyArg + ?Sized),
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunOutput, RunError> {
    let choice = policy.choice().map_err(RunError::Policy)?;
    // An `[appset]` the RPC engine cannot run as the fluid engine would (it would queue, or
    // is too large) is refused here with the reason.
    scenario.rpc_jobs().map_err(RunError::Engine)?;
    let controller = controller_for_choice(&choice, scenario, seed);
    let mut sim =
        Sim::new(scenario, controller, choice.spec(), seed).map_err(RunError::Scenario)?;
    sim.run(progress);
    sim.finish_checked()
}

const NEEDS_FLUID: &str = "the scenario has engine = \"fluid\"; only the fluid engine runs it";

/// [`run`] with a controller built by the caller (tests, or controllers that need arguments
/// `policy::controller_for` does not know). `RunOutput::policy` is the controller's name.
pub fn run_with_controller(
    scenario: &Scenario,
    controller: Box<dyn Controller>,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunOutput, RunError> {
    if scenario.simulation.engine == EngineKind::Fluid {
        return Err(RunError::Engine(NEEDS_FLUID.to_string()));
    }
    let name = controller.name();
    let mut sim = Sim::new(scenario, controller, name, seed).map_err(RunError::Scenario)?;
    sim.run(progress);
    sim.finish_checked()
}

/// [`run`], also returning one [`RpcTrace`] per completed RPC in completion order (for tests
/// and debugging; costs memory proportional to the RPC count).
pub fn run_traced(
    scenario: &Scenario,
    policy: &(impl PolicyArg + ?Sized),
    seed: u64,
) -> Result<(RunOutput, Vec<RpcTrace>), RunError> {
    traced(scenario, policy, seed, false).map(|(out, rpcs, _)| (out, rpcs))
}

/// [`run_traced`], also returning one [`CallTrace`] per I/O call returned, in return order.
pub fn run_traced_calls(
    scenario: &Scenario,
    policy: &(impl PolicyArg + ?Sized),
    seed: u64,
) -> Result<(RunOutput, Vec<RpcTrace>, Vec<CallTrace>), RunError> {
    traced(scenario, policy, seed, true)
}

/// The RPC-level engine with its RPC trace, and its call trace if `calls`.
fn traced(
    scenario: &Scenario,
    policy: &(impl PolicyArg + ?Sized),
    seed: u64,
    calls: bool,
) -> Result<(RunOutput, Vec<RpcTrace>, Vec<CallTrace>), RunError> {
    if scenario.simulation.engine == EngineKind::Fluid {
        return Err(RunError::Engine(NEEDS_FLUID.to_string()));
    }
    let choice = policy.choice().map_err(RunError::Policy)?;
    let controller = controller_for_choice(&choice, scenario, seed);
    let mut sim =
        Sim::new(scenario, controller, choice.spec(), seed).map_err(RunError::Scenario)?;
    sim.trace = Some(Vec::new());
    if calls {
        sim.call_trace = Some(Vec::new());
    }
    sim.run(&mut |_, _| {});
    let trace = sim.trace.take().unwrap_or_default();
    let call_trace = sim.call_trace.take().unwrap_or_default();
    Ok((sim.finish_checked()?, trace, call_trace))
}

/// The life of one completed RPC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcTrace {
    /// Job index in scenario order.
    pub job: u32,
    /// Global process index (jobs, then groups, then `numjobs`, in scenario order).
    pub process: u32,
    pub client: u32,
    pub ost: u32,
    pub read: bool,
    pub file_offset_bytes: u64,
    pub object_offset_bytes: u64,
    pub size_bytes: u64,
    /// When the I/O call that produced it was issued.
    pub created_ns: u64,
    /// When it left the OSC queue (counted against `max_rpcs_in_flight` from then on).
    pub sent_ns: u64,
    /// When its reply reached the client.
    pub completed_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the start of a burst.
    Waiting,
    /// Inside a burst.
    Active,
    Done,
}

struct Process {
    job: u32,
    client: u32,
    file: u32,
    group: u32,
    region_base_bytes: u64,
    size_bytes: u64,
    bs_bytes: u64,
    iodepth: u32,
    rw: Rw,
    rng: ChaCha8Rng,
    /// Sequential position inside the region (wraps for reads).
    cursor_bytes: u64,
    issued_bytes: u64,
    outstanding_calls: u32,
    burst_index: u32,
    burst_start_ns: u64,
    burst_left_bytes: u64,
    phase: Phase,
    /// The barrier of the process's stage (`Sim::barriers`) when its shape is `phases`.
    barrier: Option<u32>,
    /// Its write calls return once buffered (`[client]` write-back, not `direct`).
    write_back: bool,
    /// Its client prefetches for it (`[client]` read-ahead, a sequential reader, not
    /// `direct`).
    read_ahead: bool,
    /// Prefetched calls not yet wholly consumed, in stream order (read-ahead only).
    ra_queue: VecDeque<u32>,
    /// Where the next prefetch starts in the region (wraps as `cursor_bytes` does).
    ra_cursor_bytes: u64,
    /// Bytes prefetched so far (never more than `size_bytes`).
    ra_issued_bytes: u64,
    /// Prefetched calls consumed by the process whose data has not arrived yet.
    ra_waits: u32,
    /// Issue times of the process's read calls waiting for prefetched data.
    ra_blocked: Vec<u64>,
    /// RPCs of buffered calls not yet acknowledged: the process's end (its close) and the end
    /// of its part of a phase (the checkpoint's fsync) wait for them, as the mount's `release`
    /// and `fsync` do. Counted per RPC, not per call, so that a buffered call needs no call
    /// record: its RPCs are all the state it has once the process moved on.
    buffered_rpcs_live: u64,
    /// What to do once `buffered_rpcs_live` reaches 0.
    on_flushed: Option<FlushAction>,
}

/// A step of a process that waits for its buffered writes to be acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlushAction {
    Finish,
    PhasePartDone,
}

struct FileLayout {
    stripe_size_bytes: u64,
    /// Range into `Sim::layout_osts`.
    osts_start: u32,
    osts_len: u32,
    /// Object id of stripe 0; stripe `i` is object `object_base + i`.
    object_base: u32,
}

/// How an I/O call relates to the process that made it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum CallKind {
    /// The process waits for its RPCs (no client cache, `direct`).
    #[default]
    Sync,
    /// A write the client buffered: the process has moved on; the RPCs give the dirty
    /// budget back.
    Buffered,
    /// Read-ahead: the client fetches the process's next bytes before it asks for them.
    Prefetch,
}

#[derive(Clone, Copy, Default)]
struct Call {
    process: u32,
    rpcs_left: u32,
    kind: CallKind,
    /// When the process issued it (a prefetch: when the client did).
    issued_ns: u64,
    bytes: u64,
    /// Prefetch: bytes the process has not consumed yet.
    unconsumed_bytes: u64,
    /// Prefetch: the process consumed some of it and waits for its data.
    awaited: bool,
    /// Prefetch: still in its process's `ra_queue`.
    in_queue: bool,
}

/// A buffered write waiting for room in the dirty budgets (Lustre's `osc_enter_cache`).
#[derive(Clone, Copy, Debug)]
struct BlockedWrite {
    process: u32,
    file_offset_bytes: u64,
    len_bytes: u64,
    issued_ns: u64,
}

/// Which dirty budget a buffered write does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DirtyFull {
    /// The client's (`max_dirty_client_mb`, or the engine's bound on buffered RPCs): every
    /// acknowledgement of the client makes room in it.
    Client,
    /// That of the client's OSC to this OST (`max_dirty_mb`): only that OSC's
    /// acknowledgements make room in it.
    Osc(u32),
}

/// One I/O call of a process, as the application sees it: from its issue to its return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallTrace {
    pub job: u32,
    pub process: u32,
    pub read: bool,
    pub size_bytes: u64,
    pub issued_ns: u64,
    /// When the call returned: its RPCs done (no cache), its bytes buffered (write-back) or
    /// its bytes arrived (read-ahead).
    pub returned_ns: u64,
}

#[derive(Clone, Copy, Default)]
struct RpcState {
    /// Its call, `NO_CALL` for a buffered write.
    call: u32,
    process: u32,
    job: u32,
    client: u32,
    ost: u32,
    object: u32,
    sched: u32,
    pool: u32,
    /// Whose dispatch this is, for the completion (`pfsqos_core::sched::nrs::ServiceTicket`).
    ticket: ServiceTicket,
    read: bool,
    object_offset_bytes: u64,
    file_offset_bytes: u64,
    size_bytes: u64,
    created_ns: u64,
    sent_ns: u64,
    /// When the RPC reached its OST's device queue (for the device's time in queue).
    device_submit_ns: u64,
    /// When the request reached its OSS, a thread took it, the device started and finished
    /// it, and the thread's CPU time for it (where the time went, `TimeSpent`).
    arrive_ns: u64,
    service_start_ns: u64,
    device_start_ns: u64,
    device_done_ns: u64,
    cpu_ns: u64,
    /// End of the bulk transfer on its first link (carried to the second hop).
    bulk_first_end_ns: u64,
}

/// An RPC a client has formed but not sent: its window to the OST is full. Only its bytes
/// are accounted (the dirty budget counts bytes, as Lustre's `cl_dirty_pages` does); its
/// [`RpcState`] is made when a window slot frees (`Sim::send_rpc`), so a writer holding
/// thousands of buffered RPCs behind `max_dirty_mb` keeps a few dozen bytes for each in its
/// OSC's queue, not a live RPC.
#[derive(Clone, Copy, Debug)]
struct QueuedRpc {
    /// Its call, `NO_CALL` for a buffered write (which keeps no call record).
    call: u32,
    process: u32,
    object: u32,
    /// Its call's process's job and direction, kept here so that sending it when a window
    /// slot frees reads no call or process record (one cache miss each at scale).
    job: u32,
    read: bool,
    object_offset_bytes: u64,
    file_offset_bytes: u64,
    size_bytes: u64,
    created_ns: u64,
}

/// A (client, OST) pair: the client's window to that OST and the RPCs waiting for a slot.
struct Osc {
    window: RpcWindow,
    waiting: VecDeque<QueuedRpc>,
    /// Buffered write bytes not yet acknowledged (Lustre's `cl_dirty_pages`).
    dirty_bytes: u64,
}

#[derive(Clone, Copy, Default)]
struct Link {
    ns_per_byte: f64,
    /// A client's outgoing limit (a controller's `ClientWrite`, Linux `tc` on the node): the
    /// client path's shaper in front of the uplink (`pfsqos_node::client::RateLimiter`, the
    /// mount's too): a transfer may start only once the shaper has let the previous ones
    /// through at the limit, then leaves at the link's speed. Slowing the serializer instead
    /// would hold the server's receiving link for the whole slow transfer (cut-through),
    /// which TCP does not.
    ///
    /// A limit change re-books the hold still running ([`Link::relimit_up`]): the bytes the
    /// shaper has not yet let through go at the new rate, as tc's TBF (`pfsqos tc-client`)
    /// shapes packet by packet (`RateLimiter::relimit_at`, which the mount's `NodeLimiter`
    /// calls too). The bucket stays as the shaper has it
    /// (no burst beyond the transfer that starts; tc's refill of the bucket at each change,
    /// `pfsqos_linux::tc`, is not modelled).
    up_shaper: RateLimiter,
    up_free_ns: u64,
    down_free_ns: u64,
    /// The sender's cost of one message, added to every transfer's time on the link.
    message_ns: u64,
    /// Last transfer size and time: RPC sizes repeat, and the float rounding is a libm call.
    memo_bytes: u64,
    memo_ns: u64,
}

impl Link {
    /// When a transfer of `bytes` may start up this link at or after `now_ns` (the link
    /// free, the shaper open), and books it with the shaper.
    fn up_start_ns(&mut self, now_ns: u64, bytes: u64) -> u64 {
        self.up_shaper.start_ns(now_ns.max(self.up_free_ns), bytes)
    }

    /// Sets or lifts (`None`) the outgoing limit at `now_ns` (0 is taken as 1 byte/s, as the
    /// engine always did; a limit above the limiter's maximum as that maximum), and re-books
    /// what the shaper holds at the new rate. `booked` is the transfer booked to start after
    /// `now_ns`, if any (`UplinkBooking`): it is booked again behind the re-booked hold, and
    /// its new booking returned (`None` when nothing is booked ahead). A limit equal to the
    /// one in force changes nothing (tc's TBF keeps its rate). O(1).
    fn relimit_up(
        &mut self,
        now_ns: u64,
        limit_bytes_per_s: Option<u64>,
        booked: Option<&UplinkBooking>,
    ) -> Option<UplinkBooking> {
        let new_limit = limit_bytes_per_s.map(|b| b.clamp(1, LIMIT_BYTES_PER_S_MAX));
        if new_limit == self.up_shaper.limit_bytes_per_s() {
            return booked.copied();
        }
        // The hold running at `now_ns`: that of the last transfer started, or, with a
        // transfer booked ahead, that of the one before it (the booked one's is undone).
        if let Some(b) = booked {
            debug_assert_eq!(
                b.shaper_before.limit_bytes_per_s(),
                self.up_shaper.limit_bytes_per_s(),
                "every change re-books, so a booking was made under the limit in force"
            );
            self.up_shaper = b.shaper_before;
            self.up_free_ns = b.link_free_before_ns;
        }
        // The shaper's own re-booking, the mount's too (`RateLimiter::relimit_at`).
        self.up_shaper.relimit_at(now_ns, new_limit);
        let b = booked?;
        let shaper_before = self.up_shaper;
        let start_ns = self.up_start_ns(now_ns, b.size_bytes);
        self.up_free_ns = start_ns + self.transfer_ns(b.size_bytes);
        Some(UplinkBooking {
            start_ns,
            shaper_before,
            ..*b
        })
    }

    fn transfer_ns(&mut self, bytes: u64) -> u64 {
        if bytes != self.memo_bytes {
            self.memo_bytes = bytes;
            self.memo_ns = self.message_ns + (bytes as f64 * self.ns_per_byte).ceil() as u64;
        }
        self.memo_ns
    }
}

/// A write transfer booked to start up a client's uplink later than now (at most one per
/// client), and the uplink's state before it was booked, so that a limit change can book it
/// again behind the re-booked hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct UplinkBooking {
    rpc: u32,
    size_bytes: u64,
    start_ns: u64,
    /// The shaper as it was before this transfer was booked.
    shaper_before: RateLimiter,
    link_free_before_ns: u64,
}

struct Oss {
    /// The scenario's name for it.
    name: String,
    cpts: u32,
    /// Service threads (`io_threads`), for the statistics' memory model.
    io_threads: u32,
    pool_base: u32,
    link: Link,
    /// A service thread's CPU time per RPC: fixed, and per byte of its data.
    rpc_cpu_fixed_ns: u64,
    rpc_cpu_ns_per_byte: f64,
    /// A partition's CPU time per synchronization message received from another server.
    sync_cpu_ns: u64,
}

struct Ost {
    oss: u32,
    domain: u32,
    device_model: u32,
    capacity_rpcs_per_s: u64,
    /// Size and initial fill (the scenario's `ost_capacity`, `ost_used`).
    capacity_bytes: Option<u64>,
    used_initial_bytes: u64,
    /// Bytes the run's objects occupy on this OST (each object's highest written offset).
    written_bytes: u64,
    /// RPCs completed since the last statistics report (`Event::StatsReport`).
    served_rpcs_since_report: u64,
}

/// A file whose creation waits for its first I/O (`files_created = "first_io"`): what the
/// create asks the placer.
#[derive(Clone, Copy)]
struct PendingCreate {
    job: JobId,
    stripe_count: u32,
    stripe_size_bytes: u64,
    stripe_offset: Option<u32>,
}

struct Domain {
    osts: Vec<u32>,
    sched_base: u32,
    sched_len: u32,
}

struct JobState {
    id: JobId,
    spec_id: String,
    node_count: u32,
    weight: u32,
    uid: u32,
    gid: u32,
    processes_left: u32,
    bytes_read: u64,
    bytes_written: u64,
    rpcs: u64,
    first_io_ns: Option<u64>,
    last_io_ns: Option<u64>,
    /// The phases of the job's barriers (every stage's, in the order they complete) when a
    /// group of the job has a `phases` shape.
    phases: Option<JobPhases>,
}

/// Synchronous I/O progress of one stage of a job (the groups that start together: the
/// job's start, or the same `after`): none of `processes` starts the next compute phase
/// before all have finished the current I/O phase.
struct PhaseBarrier {
    job: u32,
    /// The stage's processes, in scenario order.
    processes: Vec<u32>,
    /// Processes still doing I/O in the current phase.
    running: u32,
    /// When the first process of the current phase started its I/O.
    phase_start_ns: Option<u64>,
    phase_bytes: u64,
}

/// One process group as the run follows it: whose processes it has, how many are still
/// doing I/O, and the groups released when none is (`after`).
struct GroupRun {
    /// Its processes, in scenario order.
    processes: Vec<u32>,
    /// Processes not yet done.
    left: u32,
    /// Groups whose shape starts when this group is done (`after` = this group), in order.
    dependents: Vec<u32>,
    /// Whether the group waits for another (`after`): its processes are started at its release,
    /// not at the run's start.
    waits: bool,
}

#[derive(Clone, Copy, Default)]
struct PeriodStats {
    arrived: u64,
    served: u64,
    bytes: u64,
}

/// A run in progress.
struct Sim {
    scenario_name: String,
    policy: String,
    seed: u64,
    now_ns: u64,
    end_ns: u64,
    duration_ns: u64,
    bin_ns: u64,
    bins: usize,
    latency_ns: u64,
    /// One-way time of a message without bulk data: the latency plus the sender's cost of a
    /// message (`[network] message_us`).
    small_message_ns: u64,
    /// Where the completed RPCs' time went.
    time: TimeSpent,
    /// Per partition: when it has handled the synchronization messages it was sent.
    pool_sync_free_ns: Vec<u64>,
    /// Per partition: the latest time pushed on its CPU lane.
    pool_cpu_lane_back_ns: Vec<u64>,
    brw_size_bytes: u64,
    queue: EventQueue,
    lanes: Lanes,
    events: u64,

    clients: Vec<(Nid, Link)>,
    /// Per client, writes whose bulk waits for the uplink, in order, and whether one
    /// transfer is booked to start later. At most one transfer is booked ahead, as Linux's
    /// `tc` holds packets rather than scheduling them: a limit a controller changes applies
    /// to every transfer not yet booked (booking all of them at the old rate would freeze it
    /// for as long as the client's window takes to drain, seconds at a low limit, and a PI
    /// loop on that delay oscillates).
    ///
    /// A limit change re-books the booked transfer (`Link::relimit_up`); its old
    /// `WriteBulkHop` is then stale (the event's time is not the booking's) and ignored. One
    /// change adds at most one event per client, and a stale one leaves the queue at its time.
    uplink_waiting: Vec<VecDeque<u32>>,
    uplink_booked: Vec<Option<UplinkBooking>>,
    /// Per client, the latest time pushed on its uplink's event lane: a re-booked transfer
    /// that starts earlier is pushed as a lone event (a lane's times never decrease).
    uplink_lane_back_ns: Vec<u64>,
    osses: Vec<Oss>,
    osts: Vec<Ost>,
    device_models: Vec<DeviceModel>,
    /// Per model, per direction (write, read): last request size and its sequential service
    /// time. RPC sizes repeat, and the interpolation ends in libm rounding calls.
    service_memo: Vec<[(u64, ServiceTime); 2]>,
    devices: Vec<Device>,
    domains: Vec<Domain>,
    /// Armed timer deadline of each scheduler (NRS head), by global head index.
    sched_timer_ns: Vec<Option<u64>>,
    /// The partition that holds each head, and the head's index in it.
    sched_slot: Vec<(u32, u32)>,
    /// One `pfsqos_node::oss::CptService` per OSS partition: its heads and service threads.
    pools: Vec<CptService<u32>>,
    /// Global head index of each partition's first head (its heads are consecutive).
    pool_sched_base: Vec<u32>,
    /// The OSS of each partition.
    pool_oss: Vec<u32>,
    /// Synchronization messages in flight, by slot, each with the deliveries
    /// (`Event::SyncDeliver`) still to come: one copy however many partitions it goes to.
    /// Freed slots are reused, so the table never holds more than the messages in flight.
    sync_slots: Vec<Option<(SyncMessage, u32)>>,
    sync_free: Vec<u32>,
    /// Deliveries in flight (`Event::SyncDeliver` events queued), at most
    /// `sync_deliveries_max` ([`SYNC_DELIVERIES_MAX`]).
    sync_deliveries: u64,
    sync_deliveries_max: u64,
    /// Global head index of each partition's heads, partition after partition.
    pool_scheds: Vec<u32>,
    oscs: Vec<Osc>,
    files: Vec<FileLayout>,
    layout_osts: Vec<u32>,
    /// The MDS's placer, for files created during the run.
    placer: pfsqos_node::mds::Placer,
    /// Per file: the create still to do at its first I/O (`files_created = "first_io"`).
    pending_creates: Vec<Option<PendingCreate>>,
    /// Period of the statistics reports the placer decides from; `None` when every file is
    /// created at the start (reports would come after the last create).
    stats_period_ns: Option<u64>,
    /// A create that failed during the run: the run stops and returns it as its error.
    failure: Option<String>,
    /// Where the last request on each object ended (`u64::MAX`: none yet).
    object_next_offset: Vec<u64>,
    /// Per object, its requests at its OST's device (waiting or in service); kept only for
    /// devices with profile dynamics, whose switch cost depends on the objects at the device.
    object_at_device: Vec<u32>,
    /// Highest offset written in each object (its extent: what it occupies on its OST).
    object_extent_bytes: Vec<u64>,
    shapes: Vec<Shape>,
    /// By global group index (the index into `shapes`).
    groups: Vec<GroupRun>,
    barriers: Vec<PhaseBarrier>,
    processes: Vec<Process>,
    processes_left: usize,
    jobs: Vec<JobState>,
    /// Job indices sorted by job id (observation order).
    jobs_by_id: Vec<u32>,
    /// Per OST: RPCs queued in a scheduler and not yet dequeued.
    queued_per_ost: Vec<u64>,
    /// `[ost * jobs + job]`, reset every control period.
    period_stats: Vec<PeriodStats>,
    /// Per job: bytes completed per OST it touched and bin.
    series: Vec<JobSeries>,
    /// Cells the series hold, at most `series_cells_max` ([`SERIES_CELLS_MAX`]).
    series_cells: u64,
    series_cells_max: u64,

    calls: Vec<Call>,
    free_calls: Vec<u32>,
    rpcs: Vec<RpcState>,
    free_rpcs: Vec<u32>,
    rpcs_completed: u64,

    controller: Box<dyn Controller>,
    period_ns: Option<u64>,
    control_log: Vec<ControlLogEntry>,
    /// Client limits written (`Decision::client_writes`), counted with the control writes.
    client_writes: u64,
    control_trace: Vec<ControlTraceEntry>,
    control_trace_truncated: bool,
    trace: Option<Vec<RpcTrace>>,
    call_trace: Option<Vec<CallTrace>>,

    /// `[client]` budgets in bytes (0: off).
    dirty_osc_max_bytes: u64,
    dirty_client_max_bytes: u64,
    ra_client_max_bytes: u64,
    ra_file_max_bytes: u64,
    /// Per client: buffered bytes not yet acknowledged over all its OSCs.
    client_dirty_bytes: Vec<u64>,
    /// Per client: buffered RPCs not yet acknowledged.
    client_buffered_rpcs: Vec<u64>,
    /// Per client: read-ahead bytes in flight.
    client_ra_bytes: Vec<u64>,
    /// Per client: buffered writes waiting for dirty budget, in order.
    dirty_waiters: Vec<VecDeque<BlockedWrite>>,
    /// Per client: the budget its first waiting write did not fit when last tried (`None`:
    /// no write waits). While a write waits, nothing else is buffered at the client, so the
    /// room in every budget only grows: an acknowledgement that makes no room in that budget
    /// cannot admit it, and need not try.
    dirty_front_full: Vec<Option<DirtyFull>>,
    /// Scratch for a call's bytes per OST.
    piece_scratch: Vec<(u32, u64)>,
    /// Scratch for a call's RPCs as it forms them, with their OSTs.
    rpc_scratch: Vec<(u32, QueuedRpc)>,
    /// RPCs formed (queued at their OSC or sent) and not yet completed at their client (the
    /// run goes on until none are left, since buffered and prefetched data outlives the
    /// calls).
    rpcs_live: u64,
    /// Bytes of every RPC created: at the end, those the jobs completed plus those of the
    /// RPCs still alive (bytes conserved).
    bytes_issued: u64,
    /// The OSC window's size, which no window exceeds.
    max_rpcs_in_flight: u32,
}

fn client_nid(index: u32) -> Nid {
    // Client i is 192.168.1.(i+1)@tcp; beyond .255 the address carries into the next octets.
    Nid {
        addr: u32::from_be_bytes([192, 168, 1, 0]).wrapping_add(index + 1),
        net: LNet {
            kind: NetKind::Tcp,
            num: 0,
        },
    }
}

/// Fixed hash of a client index onto one of `cpts` partitions (Lustre hashes the NID).
fn client_cpt(client: u32, cpts: u32) -> u32 {
    let h = u64::from(client).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 32) % u64::from(cpts.max(1))) as u32
}

/// Arms a timer event for head `sched` if its deadline differs from the armed one. A deadline
/// not in the future is armed at `now + 1`, so a scheduler that keeps answering "throttled
/// until now" cannot stall time.
fn arm_timer(
    timers: &mut [Option<u64>],
    queue: &mut EventQueue,
    now_ns: u64,
    sched: u32,
    deadline_ns: u64,
) {
    let at_ns = deadline_ns.max(now_ns + 1);
    if timers[sched as usize] != Some(at_ns) {
        timers[sched as usize] = Some(at_ns);
        queue.push(at_ns, Event::SchedTimer { sched });
    }
}

fn link_ns_per_byte(mib_s: f64) -> f64 {
    if mib_s.is_finite() && mib_s > 0.0 {
        1e9 / (mib_s * (1u64 << 20) as f64)
    } else {
        0.0
    }
}

impl Sim {
    fn new(
        scenario: &Scenario,
        controller: Box<dyn Controller>,
        policy: &str,
        seed: u64,
    ) -> Result<Sim, String> {
        let cluster = &scenario.cluster;
        let n_clients = cluster.clients.max(1) as usize;
        if n_clients > CLIENTS_MAX {
            return Err(format!("{n_clients} clients (at most {CLIENTS_MAX})"));
        }
        let brw_size_bytes = cluster.brw_size.bytes().max(1);
        let client_ns_per_byte = link_ns_per_byte(scenario.network.client_link_mib_s);
        let message_ns = secs_to_ns(scenario.network.message_us * 1e-6);
        let server_ns_per_byte = link_ns_per_byte(scenario.network.server_link_mib_s);
        let clients: Vec<(Nid, Link)> = (0..n_clients as u32)
            .map(|i| {
                (
                    client_nid(i),
                    Link {
                        ns_per_byte: client_ns_per_byte,
                        message_ns,
                        ..Link::default()
                    },
                )
            })
            .collect();

        // Servers, targets, devices, domains, schedulers, thread pools.
        let table = DeviceTable::build(scenario)?;
        let device_models = table.models;
        let mut osses = Vec::new();
        let mut osts = Vec::new();
        let mut pool_threads: Vec<u32> = Vec::new();
        for (oss_index, spec) in scenario.osses.iter().enumerate() {
            let model_index = table.oss_model[oss_index] as usize;
            let capacity = table.oss_capacity_rpcs_per_s[oss_index];
            let cpts = spec.cpts.max(1);
            osses.push(Oss {
                name: spec.name.clone(),
                cpts,
                io_threads: spec.io_threads,
                pool_base: pool_threads.len() as u32,
                link: Link {
                    ns_per_byte: server_ns_per_byte,
                    message_ns,
                    ..Link::default()
                },
                rpc_cpu_fixed_ns: secs_to_ns(spec.rpc_cpu_us * 1e-6),
                rpc_cpu_ns_per_byte: spec.rpc_cpu_us_per_mib * 1e3 / (1u64 << 20) as f64,
                sync_cpu_ns: secs_to_ns(spec.sync_cpu_us * 1e-6),
            });
            for cpt in 0..cpts {
                let share = spec.io_threads / cpts + u32::from(cpt < spec.io_threads % cpts);
                pool_threads.push(share.max(1));
            }
            for _ in 0..spec.osts {
                osts.push(Ost {
                    oss: oss_index as u32,
                    domain: 0,
                    device_model: model_index as u32,
                    capacity_rpcs_per_s: capacity,
                    capacity_bytes: spec.ost_capacity.map(|c| c.0),
                    used_initial_bytes: spec.ost_used.map_or(0, |u| u.0),
                    written_bytes: 0,
                    served_rpcs_since_report: 0,
                });
            }
        }
        if osts.is_empty() || osts.len() > OSTS_MAX {
            return Err(format!(
                "the cluster has {} OSTs (need 1 to {OSTS_MAX})",
                osts.len()
            ));
        }
        let n_osts = osts.len();
        let mut domains: Vec<Domain> = Vec::new();
        match cluster.scheduler_scope {
            SchedulerScope::Oss => {
                for oss in 0..osses.len() {
                    domains.push(Domain {
                        osts: (0..n_osts as u32)
                            .filter(|&o| osts[o as usize].oss == oss as u32)
                            .collect(),
                        sched_base: 0,
                        sched_len: 0,
                    });
                }
            }
            SchedulerScope::Ost => {
                for o in 0..n_osts as u32 {
                    domains.push(Domain {
                        osts: vec![o],
                        sched_base: 0,
                        sched_len: 0,
                    });
                }
            }
        }
        let mut n_scheds = 0u32;
        for (d, domain) in domains.iter_mut().enumerate() {
            let oss = match domain.osts.first() {
                Some(&o) => osts[o as usize].oss,
                // An OSS without OSTs: its domain has no schedulers and serves nothing.
                None => {
                    domain.sched_base = n_scheds;
                    continue;
                }
            };
            for &o in &domain.osts {
                osts[o as usize].domain = d as u32;
            }
            domain.sched_base = n_scheds;
            domain.sched_len = osses[oss as usize].cpts;
            n_scheds += domain.sched_len;
        }
        // Each partition polls the head of every domain of its OSS on that CPT, in domain
        // order.
        let mut pools = Vec::with_capacity(pool_threads.len());
        let mut pool_sched_base = Vec::with_capacity(pool_threads.len());
        let mut pool_oss = Vec::with_capacity(pool_threads.len());
        let mut sched_slot = vec![(0u32, 0u32); n_scheds as usize];
        let mut global_of_slot: Vec<u32> = Vec::with_capacity(n_scheds as usize);
        for (oss_index, oss) in osses.iter().enumerate() {
            for cpt in 0..oss.cpts {
                let pool = oss.pool_base + cpt;
                let mut heads = Vec::new();
                pool_sched_base.push(global_of_slot.len() as u32);
                for (d, domain) in domains.iter().enumerate() {
                    if let Some(&o) = domain.osts.first() {
                        if osts[o as usize].oss == oss_index as u32 {
                            let global = domain.sched_base + cpt;
                            sched_slot[global as usize] = (pool, heads.len() as u32);
                            global_of_slot.push(global);
                            heads.push((DomainId(d as u32), Nrs::new()));
                        }
                    }
                }
                let mut service = CptService::new(heads, pool_threads[pool as usize]);
                // Messages name their sender by the partition's global index.
                service.set_sync_instance(pools.len() as u32);
                pools.push(service);
                pool_oss.push(oss_index as u32);
            }
        }
        // Heads are numbered per domain and CPT; timers are kept by that number.
        let pool_scheds = global_of_slot;

        // Jobs, processes, files.
        let mut jobs = Vec::new();
        let mut processes = Vec::new();
        let mut files: Vec<FileLayout> = Vec::new();
        let mut layout_osts: Vec<u32> = Vec::new();
        let mut shapes = Vec::new();
        let mut groups: Vec<GroupRun> = Vec::new();
        let mut barriers: Vec<PhaseBarrier> = Vec::new();
        // Explicit jobs, then an `[appset]`'s runs (the same set the fluid engine generates).
        let scenario_jobs = scenario.rpc_jobs()?;
        let run_jobs: Vec<&JobSpec> = scenario_jobs.iter().collect();
        let (mut placer, _) = crate::placement::placer_for(scenario, n_osts as u32, &run_jobs)?;
        let mut objects: u64 = 0;
        let files_created = cluster.files_created;
        let mut pending_creates: Vec<Option<PendingCreate>> = Vec::new();
        // Files are created at set-up, by their job: the placer learns who creates each. With
        // `files_created = "first_io"` only their objects are numbered here (a layout always
        // has the stripes asked for) and the placer runs at the first I/O (`create_pending`).
        let mut new_file = |job: JobId,
                            stripe_count: u32,
                            stripe_size: u64,
                            stripe_offset: Option<u32>|
         -> Result<u32, String> {
            // The scenario is validated (1..=OSTs stripes, an existing start OST), so the
            // placer refuses nothing here.
            let count = i32::try_from(stripe_count).map_err(|_| "stripe count too large")?;
            if files_created == FilesCreated::FirstIo {
                if objects + u64::from(stripe_count) > u32::MAX as u64 {
                    return Err("too many stripe objects".to_string());
                }
                files.push(FileLayout {
                    stripe_size_bytes: stripe_size,
                    osts_start: 0,
                    osts_len: stripe_count,
                    object_base: objects as u32,
                });
                pending_creates.push(Some(PendingCreate {
                    job,
                    stripe_count,
                    stripe_size_bytes: stripe_size,
                    stripe_offset,
                }));
                objects += u64::from(stripe_count);
                return Ok(files.len() as u32 - 1);
            }
            pending_creates.push(None);
            let context = PlacementContext { now_ns: 0, job };
            let layout = placer
                .create_for(&context, count, stripe_size, stripe_offset)
                .map_err(|e| e.to_string())?;
            let count = layout.osts.len();
            let start = layout_osts.len() as u32;
            layout_osts.extend(layout.osts.iter().map(|o| o.0));
            if objects + count as u64 > u32::MAX as u64 {
                return Err("too many stripe objects".to_string());
            }
            // The placer's stripe size (iez sizes stripes from the forecast, Method II).
            files.push(FileLayout {
                stripe_size_bytes: layout.stripe_size_bytes,
                osts_start: start,
                osts_len: count as u32,
                object_base: objects as u32,
            });
            objects += count as u64;
            Ok(files.len() as u32 - 1)
        };
        for (job_index, job) in scenario_jobs.iter().enumerate() {
            let id = JobId::new(&job.id).map_err(|e| format!("job `{}`: {e}", job.id))?;
            let client_list: Vec<u32> = match &job.clients {
                Some(list) if !list.is_empty() => {
                    list.iter().map(|&c| c % n_clients as u32).collect()
                }
                _ => (0..n_clients as u32).collect(),
            };
            let mut process_in_job = 0usize;
            let start_delay_ns = crate::workload::job_start_delay_ns(
                seed,
                job_index as u32,
                secs_to_ns(scenario.simulation.start_jitter_s),
            );
            let phased = job.groups.iter().any(|g| g.shape.kind == ShapeKind::Phases);
            // Global index of the job's first group; `after` and `files_of` are job-relative.
            let group_base = shapes.len();
            // Each group's (file, region base) per process, for `files_of`.
            let mut group_files: Vec<Vec<(u32, u64)>> = Vec::with_capacity(job.groups.len());
            // The barrier of each stage (keyed by `after`) holding a `phases` group.
            let mut stage_barriers: Vec<(Option<u32>, u32)> = Vec::new();
            for (g_i, group) in job.groups.iter().enumerate() {
                let shape_index = shapes.len() as u32;
                let earlier = |k: u32, key: &str| -> Result<usize, String> {
                    // Validation refuses these; a scenario built in code is checked here.
                    if (k as usize) < g_i {
                        Ok(k as usize)
                    } else {
                        Err(format!(
                            "job `{}` processes[{g_i}]: {key} = {k} is not an earlier group",
                            job.id
                        ))
                    }
                };
                // A group run `after` another starts from that group's end: the job's start
                // delay is already in it, and the rest is added at the release.
                let shape = Shape::from_spec(&group.shape);
                shapes.push(match group.after {
                    None => shape.delayed(start_delay_ns),
                    Some(_) => shape,
                });
                groups.push(GroupRun {
                    processes: Vec::with_capacity(group.numjobs as usize),
                    left: 0,
                    dependents: Vec::new(),
                    waits: group.after.is_some(),
                });
                if let Some(k) = group.after {
                    let k = earlier(k, "after")?;
                    groups[group_base + k].dependents.push(shape_index);
                }
                let barrier = if group.shape.kind == ShapeKind::Phases {
                    match stage_barriers
                        .iter()
                        .find(|(stage, _)| *stage == group.after)
                    {
                        Some(&(_, b)) => Some(b),
                        None => {
                            barriers.push(PhaseBarrier {
                                job: job_index as u32,
                                processes: Vec::new(),
                                running: 0,
                                phase_start_ns: None,
                                phase_bytes: 0,
                            });
                            let b = barriers.len() as u32 - 1;
                            stage_barriers.push((group.after, b));
                            Some(b)
                        }
                    }
                } else {
                    None
                };
                let files_of = match group.files_of {
                    Some(k) => {
                        let k = earlier(k, "files_of")?;
                        if group_files[k].len() != group.numjobs as usize {
                            return Err(format!(
                                "job `{}` processes[{g_i}]: files_of = {k} needs its numjobs",
                                job.id
                            ));
                        }
                        Some(group_files[k].clone())
                    }
                    None => None,
                };
                let stripe_count = group.stripe_count.unwrap_or(cluster.stripe_count);
                let stripe_size = group.stripe_size.unwrap_or(cluster.stripe_size).bytes();
                let shared_file = match group.file {
                    FileMode::Shared if files_of.is_none() => Some(new_file(
                        id,
                        stripe_count,
                        stripe_size,
                        group.stripe_offset,
                    )?),
                    _ => None,
                };
                let mut files_here = Vec::with_capacity(group.numjobs as usize);
                for k in 0..group.numjobs {
                    if processes.len() >= PROCESSES_MAX {
                        return Err(format!("more than {PROCESSES_MAX} processes"));
                    }
                    let size_bytes = group.size.bytes();
                    let (file, region_base_bytes) = match &files_of {
                        // Process k of the earlier group's file and region, as placed then.
                        Some(list) => list[k as usize],
                        None => {
                            let file = match shared_file {
                                Some(f) => f,
                                None => {
                                    new_file(id, stripe_count, stripe_size, group.stripe_offset)?
                                }
                            };
                            let region_base_bytes = if shared_file.is_some() {
                                u64::from(k)
                                    .checked_mul(size_bytes)
                                    .filter(|b| b.checked_add(size_bytes).is_some())
                                    .ok_or_else(|| {
                                        format!(
                                            "job `{}`: shared file larger than 2^64 bytes",
                                            job.id
                                        )
                                    })?
                            } else {
                                0
                            };
                            (file, region_base_bytes)
                        }
                    };
                    files_here.push((file, region_base_bytes));
                    let process_index = processes.len() as u32;
                    groups[shape_index as usize].processes.push(process_index);
                    groups[shape_index as usize].left += 1;
                    if let Some(b) = barrier {
                        barriers[b as usize].processes.push(process_index);
                        barriers[b as usize].running += 1;
                    }
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    rng.set_stream(processes.len() as u64);
                    processes.push(Process {
                        job: job_index as u32,
                        client: client_list[process_in_job % client_list.len()],
                        file,
                        group: shape_index,
                        region_base_bytes,
                        size_bytes,
                        bs_bytes: group.bs.bytes().max(1),
                        iodepth: group.iodepth.max(1),
                        rw: group.rw,
                        rng,
                        cursor_bytes: 0,
                        issued_bytes: 0,
                        outstanding_calls: 0,
                        burst_index: 0,
                        burst_start_ns: 0,
                        burst_left_bytes: 0,
                        phase: Phase::Waiting,
                        barrier,
                        write_back: !group.direct
                            && !group.rw.is_read()
                            && scenario.client.write_back(),
                        read_ahead: !group.direct
                            && group.rw == Rw::Read
                            && scenario.client.read_ahead(),
                        ra_queue: VecDeque::new(),
                        ra_cursor_bytes: 0,
                        ra_issued_bytes: 0,
                        ra_waits: 0,
                        ra_blocked: Vec::new(),
                        buffered_rpcs_live: 0,
                        on_flushed: None,
                    });
                    process_in_job += 1;
                }
                group_files.push(files_here);
            }
            jobs.push(JobState {
                id,
                spec_id: job.id.clone(),
                node_count: job.nodes,
                weight: job.weight(),
                uid: job.uid,
                gid: job.gid,
                processes_left: process_in_job as u32,
                bytes_read: 0,
                bytes_written: 0,
                rpcs: 0,
                first_io_ns: None,
                last_io_ns: None,
                phases: phased.then(|| JobPhases {
                    // The job's start: its groups that wait for no other.
                    start_ns: job
                        .groups
                        .iter()
                        .filter(|g| g.after.is_none())
                        .map(|g| secs_to_ns(g.shape.start_s))
                        .min()
                        .unwrap_or(0),
                    done: Vec::new(),
                }),
            });
        }
        let mut jobs_by_id: Vec<u32> = (0..jobs.len() as u32).collect();
        // By text: `JobId`'s derived `Ord` compares lengths first.
        jobs_by_id.sort_by(|&a, &b| {
            let (x, y) = (&jobs[a as usize].id, &jobs[b as usize].id);
            x.as_str().cmp(y.as_str()).then(a.cmp(&b))
        });

        if n_clients * n_osts > OSCS_MAX {
            return Err(format!(
                "{n_clients} clients x {n_osts} OSTs is more than {OSCS_MAX} OSC connections"
            ));
        }
        let duration_ns = secs_to_ns(scenario.simulation.duration_s);
        let bin_ns = scenario.simulation.bin_ms.max(1) * 1_000_000;
        let bins = (duration_ns / bin_ns + 1) as usize;
        if (bins as u64) * (jobs.len() as u64) > SERIES_CELLS_MAX {
            return Err(format!(
                "{bins} bins x {} jobs is too many time-series cells (at most {SERIES_CELLS_MAX}); use a larger bin_ms",
                jobs.len()
            ));
        }
        let n_jobs = jobs.len();
        let period_ns = controller.period_ns().filter(|&p| p > 0);
        let processes_left = processes.len();
        let lanes = Lanes::new(
            n_clients as u32,
            osses.len() as u32,
            n_osts as u32,
            pools.len() as u32,
        );
        let any_dynamics = device_models.iter().any(|m| m.dynamics().is_some());
        let pool_count = pools.len();
        Ok(Sim {
            scenario_name: scenario.name.clone(),
            policy: policy.to_string(),
            seed,
            now_ns: 0,
            end_ns: 0,
            duration_ns,
            bin_ns,
            bins,
            latency_ns: secs_to_ns(scenario.network.latency_us * 1e-6),
            small_message_ns: secs_to_ns(scenario.network.latency_us * 1e-6)
                + secs_to_ns(scenario.network.message_us * 1e-6),
            time: TimeSpent::default(),
            pool_sync_free_ns: vec![0; pool_count],
            pool_cpu_lane_back_ns: vec![0; pool_count],
            brw_size_bytes,
            queue: EventQueue::with_lanes(lanes.total as usize),
            lanes,
            events: 0,
            uplink_waiting: vec![VecDeque::new(); n_clients],
            uplink_booked: vec![None; n_clients],
            uplink_lane_back_ns: vec![0; n_clients],
            clients,
            devices: osts
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    Device::for_model(&device_models[o.device_model as usize], seed, i as u64)
                })
                .collect(),
            osses,
            osts,
            service_memo: vec![[(u64::MAX, ServiceTime::default()); 2]; device_models.len()],
            device_models,
            domains,
            sched_timer_ns: vec![None; n_scheds as usize],
            sched_slot,
            pools,
            pool_sched_base,
            pool_oss,
            sync_slots: Vec::new(),
            sync_free: Vec::new(),
            sync_deliveries: 0,
            sync_deliveries_max: SYNC_DELIVERIES_MAX,
            pool_scheds,
            oscs: (0..n_clients * n_osts)
                .map(|_| Osc {
                    window: RpcWindow::new(cluster.max_rpcs_in_flight.max(1)),
                    waiting: VecDeque::new(),
                    dirty_bytes: 0,
                })
                .collect(),
            files,
            layout_osts,
            placer,
            pending_creates,
            stats_period_ns: (files_created == FilesCreated::FirstIo)
                .then(|| secs_to_ns(cluster.oss_stats_period_s).max(1)),
            failure: None,
            object_next_offset: vec![u64::MAX; objects as usize],
            object_at_device: if any_dynamics {
                vec![0; objects as usize]
            } else {
                Vec::new()
            },
            object_extent_bytes: vec![0; objects as usize],
            shapes,
            groups,
            barriers,
            processes,
            processes_left,
            jobs,
            jobs_by_id,
            queued_per_ost: vec![0; n_osts],
            period_stats: vec![PeriodStats::default(); n_osts * n_jobs],
            series: (0..n_jobs).map(|_| JobSeries::new(bins)).collect(),
            series_cells: 0,
            series_cells_max: SERIES_CELLS_MAX,
            calls: Vec::new(),
            free_calls: Vec::new(),
            rpcs: Vec::new(),
            free_rpcs: Vec::new(),
            rpcs_completed: 0,
            controller,
            period_ns,
            control_log: Vec::new(),
            client_writes: 0,
            control_trace: Vec::new(),
            control_trace_truncated: false,
            trace: None,
            call_trace: None,
            dirty_osc_max_bytes: scenario.client.max_dirty_mb << 20,
            dirty_client_max_bytes: scenario.client.max_dirty_client_mb << 20,
            ra_client_max_bytes: scenario.client.max_read_ahead_mb << 20,
            ra_file_max_bytes: scenario.client.max_read_ahead_per_file_mb << 20,
            client_dirty_bytes: vec![0; n_clients],
            client_ra_bytes: vec![0; n_clients],
            client_buffered_rpcs: vec![0; n_clients],
            dirty_waiters: vec![VecDeque::new(); n_clients],
            dirty_front_full: vec![None; n_clients],
            piece_scratch: Vec::new(),
            rpc_scratch: Vec::new(),
            rpcs_live: 0,
            bytes_issued: 0,
            max_rpcs_in_flight: cluster.max_rpcs_in_flight.max(1),
        })
    }

    // ---------------------------------------------------------------- observation, control

    fn observation(&mut self, period_ns: u64, reset: bool) -> Observation {
        let n_jobs = self.jobs.len();
        let mut domains = Vec::with_capacity(self.domains.len());
        for (d, domain) in self.domains.iter().enumerate() {
            let mut targets = Vec::with_capacity(domain.osts.len());
            for &o in &domain.osts {
                let mut jobs = Vec::new();
                for &j in &self.jobs_by_id {
                    let s = self.period_stats[o as usize * n_jobs + j as usize];
                    if s.arrived > 0 || s.served > 0 || s.bytes > 0 {
                        jobs.push(JobTargetStats {
                            job: self.jobs[j as usize].id,
                            rpcs_arrived: s.arrived,
                            rpcs_served: s.served,
                            bytes_served: s.bytes,
                        });
                    }
                }
                targets.push(TargetObservation {
                    ost: OstId(o),
                    queue_len_rpcs: self.queued_per_ost[o as usize],
                    device_queue_rpcs: {
                        let d = &self.devices[o as usize];
                        u64::from(d.busy) + d.waiting.len() as u64
                    },
                    device_time_in_queue_ns: self.devices[o as usize].time_in_queue_ns,
                    capacity_rpcs_per_s: self.osts[o as usize].capacity_rpcs_per_s,
                    jobs,
                });
            }
            domains.push(DomainObservation {
                domain: DomainId(d as u32),
                targets,
            });
        }
        if reset {
            self.period_stats.fill(PeriodStats::default());
        }
        Observation {
            now_ns: self.now_ns,
            period_ns,
            domains,
            clients: (0..self.clients.len() as u32).map(ClientId).collect(),
            jobs: self
                .jobs_by_id
                .iter()
                .map(|&j| JobMeta {
                    job: self.jobs[j as usize].id,
                    node_count: self.jobs[j as usize].node_count,
                    weight: self.jobs[j as usize].weight,
                })
                .collect(),
        }
    }

    fn apply(&mut self, decision: Decision) {
        for w in decision.writes {
            let result = match self.domains.get(w.domain.0 as usize) {
                None => Err(format!("no domain {}", w.domain.0)),
                Some(domain) => {
                    // The domain's heads sit in its OSS's partitions, one per CPT.
                    let oss = &self.osses[self.osts[domain.osts[0] as usize].oss as usize];
                    let pools = &mut self.pools
                        [oss.pool_base as usize..(oss.pool_base + oss.cpts) as usize];
                    let heads = pools.iter_mut().flat_map(|p| p.domain_heads_mut(w.domain));
                    apply_write(heads, self.now_ns, &w.write)
                        .map(|_| ())
                        .map_err(|e| {
                            // The controller must not hold what the heads refused.
                            self.controller.on_write_refused(&w, e.errno);
                            e.to_string()
                        })
                }
            };
            self.control_log.push(ControlLogEntry {
                time_ns: self.now_ns,
                domain: w.domain,
                write: w.write,
                result,
            });
        }
        for ClientWrite {
            client,
            limit_bytes_per_s,
        } in decision.client_writes
        {
            // Controllers address only the clients the observation listed.
            assert!(
                (client.0 as usize) < self.clients.len(),
                "a controller addressed client {}, which does not exist",
                client.0
            );
            self.relimit_uplink(client.0 as usize, limit_bytes_per_s);
            self.client_writes += 1;
        }
        // A write can change throttling: re-arm timers and let idle threads look again.
        for s in 0..self.sched_timer_ns.len() as u32 {
            self.check_timer(s);
        }
        for p in 0..self.pools.len() as u32 {
            self.dispatch(p);
        }
    }

    fn record_trace(&mut self) {
        if self.control_trace_truncated {
            return;
        }
        for sample in self.controller.trace() {
            if self.control_trace.len() >= CONTROL_TRACE_LEN_MAX {
                self.control_trace_truncated = true;
                return;
            }
            self.control_trace.push(ControlTraceEntry {
                time_ns: self.now_ns,
                sample,
            });
        }
    }

    // ---------------------------------------------------------------- main loop

    fn run(&mut self, progress: &mut dyn FnMut(u64, u64)) {
        let initial = self.observation(0, true);
        let decision = self.controller.setup(&initial);
        self.apply(decision);
        if let Some(p) = self.period_ns {
            self.queue.push(p, Event::ControlTick);
        }
        if let Some(p) = self.stats_period_ns {
            // The placer holds the start's snapshot (`placement::placer_for`); the first
            // report covers the first period.
            self.queue.push(p, Event::StatsReport);
        }
        for p in 0..self.processes.len() as u32 {
            // A group run `after` another starts at its release (`release_after`).
            if !self.groups[self.processes[p as usize].group as usize].waits {
                self.start_process(p);
            }
        }
        while self.processes_left > 0 || self.rpcs_live > 0 {
            let Some((t, ev)) = self.queue.pop() else {
                break;
            };
            if t > self.duration_ns {
                break;
            }
            assert!(t >= self.now_ns, "events come in time order");
            self.now_ns = t;
            self.events += 1;
            if self.events & (PROGRESS_EVERY_EVENTS - 1) == 0 {
                progress(t, self.duration_ns);
            }
            self.handle(ev);
            if self.failure.is_some() {
                break;
            }
        }
        // Every process done: the run ends with the event that finished the last one (at 0
        // when none had anything to do). Otherwise the configured duration cut it.
        self.end_ns = if self.processes_left == 0 {
            self.now_ns
        } else {
            self.duration_ns
        };
        progress(self.end_ns, self.duration_ns);
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::BurstStart { process } => self.burst_start(process),
            Event::ProcessStop { process } => {
                let p = &self.processes[process as usize];
                if p.phase != Phase::Done && p.outstanding_calls == 0 {
                    self.finish_process(process);
                }
            }
            Event::RequestArrive { rpc } => self.request_arrive(rpc),
            Event::WriteBulkHop { rpc } => {
                let client = self.rpcs[rpc as usize].client as usize;
                // A transfer re-booked by a limit change left its old event behind.
                let due = self.uplink_booked[client]
                    .is_some_and(|b| b.rpc == rpc && b.start_ns == self.now_ns);
                if due {
                    self.uplink_booked[client] = None;
                    self.write_bulk_hop(rpc);
                    self.book_uplink(client);
                }
            }
            Event::DeviceSubmit { rpc } => self.device_submit(rpc),
            Event::ServiceCpuDone { rpc } => self.serve(rpc),
            Event::DeviceDone { rpc } => self.device_done(rpc),
            Event::ReadBulkHop { rpc } => self.read_bulk_hop(rpc),
            Event::ReadDone { rpc } => {
                let pool = self.rpcs[rpc as usize].pool;
                self.service_complete(rpc);
                self.dispatch(pool);
                self.client_complete(rpc);
            }
            Event::WriteReply { rpc } => self.client_complete(rpc),
            Event::SchedTimer { sched } => {
                if self.sched_timer_ns[sched as usize] == Some(self.now_ns) {
                    self.sched_timer_ns[sched as usize] = None;
                    // Exactly one partition's threads poll each scheduler instance.
                    let (pool, head) = self.sched_slot[sched as usize];
                    self.pools[pool as usize].on_timer(self.now_ns, head as usize);
                    self.dispatch(pool);
                }
            }
            Event::SyncDeliver { pool, slot } => self.sync_deliver(pool, slot),
            Event::StatsReport => {
                let period = self.stats_period_ns.unwrap_or(1);
                self.report_stats(period);
                self.queue.push(self.now_ns + period, Event::StatsReport);
            }
            Event::ControlTick => {
                let period = self.period_ns.unwrap_or(0);
                let obs = self.observation(period, true);
                let decision = self.controller.decide(&obs);
                self.apply(decision);
                self.record_trace();
                self.queue.push(self.now_ns + period, Event::ControlTick);
            }
        }
    }

    // ---------------------------------------------------------------- processes

    /// Schedules the first burst of process `p` and its stop.
    fn start_process(&mut self, p: u32) {
        self.schedule_burst(p, 0, 0, 0);
        let stop_ns = self.shapes[self.processes[p as usize].group as usize].stop_ns;
        if stop_ns <= self.duration_ns {
            self.queue.push(stop_ns, Event::ProcessStop { process: p });
        }
    }

    /// Every process of group `g` is done: the groups run `after` it start now, their shapes
    /// moved to begin at this moment.
    fn release_after(&mut self, g: u32) {
        let now = self.now_ns;
        for d in std::mem::take(&mut self.groups[g as usize].dependents) {
            debug_assert!(self.groups[d as usize].waits && d > g);
            self.shapes[d as usize] = self.shapes[d as usize].clone().delayed(now);
            let list = std::mem::take(&mut self.groups[d as usize].processes);
            for &q in &list {
                self.start_process(q);
            }
            self.groups[d as usize].processes = list;
        }
    }

    /// Schedules burst `index` of process `p` (or finishes it when the shape has no more).
    fn schedule_burst(&mut self, p: u32, index: u32, prev_start_ns: u64, prev_end_ns: u64) {
        let proc_ = &self.processes[p as usize];
        let shape = &self.shapes[proc_.group as usize];
        let exhausted = proc_.issued_bytes >= proc_.size_bytes;
        match shape.burst(index, prev_start_ns, prev_end_ns) {
            Some((at_ns, _)) if !exhausted && at_ns < shape.stop_ns => {
                let at_ns = at_ns.max(self.now_ns);
                self.processes[p as usize].burst_index = index;
                self.processes[p as usize].phase = Phase::Waiting;
                self.queue.push(at_ns, Event::BurstStart { process: p });
            }
            _ => self.finish_process(p),
        }
    }

    fn burst_start(&mut self, p: u32) {
        let now = self.now_ns;
        if self.processes[p as usize].phase == Phase::Waiting
            && !self.create_pending(self.processes[p as usize].file)
        {
            return;
        }
        let proc_ = &mut self.processes[p as usize];
        if proc_.phase != Phase::Waiting {
            return;
        }
        let shape = &self.shapes[proc_.group as usize];
        if now >= shape.stop_ns {
            return;
        }
        let (_, bytes) = shape
            .burst(proc_.burst_index, proc_.burst_start_ns, now)
            .unwrap_or((now, 0));
        proc_.phase = Phase::Active;
        proc_.burst_start_ns = now;
        proc_.burst_left_bytes = bytes;
        let planned = bytes.min(proc_.size_bytes.saturating_sub(proc_.issued_bytes));
        if let Some(b) = proc_.barrier {
            let b = &mut self.barriers[b as usize];
            b.phase_start_ns.get_or_insert(now);
            b.phase_bytes += planned;
        }
        self.pump(p);
    }

    /// Creates `file` now if its creation waited for its first I/O (`files_created =
    /// "first_io"`): the placer decides from the last statistics report it was given. Returns
    /// false when the placer refused (the run stops with that error, `failure`).
    fn create_pending(&mut self, file: u32) -> bool {
        let Some(create) = self.pending_creates[file as usize].take() else {
            return true;
        };
        let context = PlacementContext {
            now_ns: self.now_ns,
            job: create.job,
        };
        // Validated: 1..=OSTs stripes (fits an i32), an existing start OST.
        let count = create.stripe_count as i32;
        match self.placer.create_for(
            &context,
            count,
            create.stripe_size_bytes,
            create.stripe_offset,
        ) {
            Ok(layout) => {
                let f = &mut self.files[file as usize];
                // Its objects were numbered at set-up for the stripes asked for.
                assert_eq!(
                    layout.osts.len(),
                    f.osts_len as usize,
                    "a layout has the stripes asked for"
                );
                f.osts_start = self.layout_osts.len() as u32;
                f.stripe_size_bytes = layout.stripe_size_bytes;
                self.layout_osts.extend(layout.osts.iter().map(|o| o.0));
                true
            }
            Err(e) => {
                self.failure.get_or_insert(format!(
                    "creating a file of job `{}` at {} ns: {e}",
                    create.job.as_str(),
                    self.now_ns
                ));
                false
            }
        }
    }

    /// The OSSs' periodic statistics report (`placement` module doc): every OST's space now
    /// and every OSS's load over the period just ended, given to the placer.
    fn report_stats(&mut self, period_ns: u64) {
        let mut activity: Vec<crate::placement::OssActivity> = self
            .osses
            .iter()
            .map(|o| crate::placement::OssActivity {
                served_rpcs: 0,
                capacity_rpcs_per_s: 0,
                held_rpcs: 0,
                io_threads: o.io_threads,
            })
            .collect();
        let mut osts = Vec::with_capacity(self.osts.len());
        for (o, ost) in self.osts.iter_mut().enumerate() {
            let a = &mut activity[ost.oss as usize];
            a.served_rpcs += std::mem::take(&mut ost.served_rpcs_since_report);
            a.capacity_rpcs_per_s = a
                .capacity_rpcs_per_s
                .saturating_add(ost.capacity_rpcs_per_s);
            let device = &self.devices[o];
            a.held_rpcs +=
                self.queued_per_ost[o] + u64::from(device.busy) + device.waiting.len() as u64;
            let total_bytes = ost
                .capacity_bytes
                .unwrap_or(crate::placement::OST_CAPACITY_DEFAULT_BYTES);
            let used_bytes = ost.used_initial_bytes.saturating_add(ost.written_bytes);
            osts.push(OstStats {
                oss: pfsqos_core::model::OssId(ost.oss),
                total_bytes,
                // No ENOSPC model: a full OST reports no room.
                avail_bytes: total_bytes.saturating_sub(used_bytes),
            });
        }
        let stats = ServerStats {
            at_ns: self.now_ns,
            osts,
            osses: activity
                .iter()
                .map(|a| crate::placement::oss_load_report(a, period_ns))
                .collect(),
            mds: None,
        };
        // Built from the validated scenario: fractions, totals above zero, OSSs in range.
        if let Err(e) = self.placer.observe_servers(&stats) {
            self.failure
                .get_or_insert(format!("statistics report at {} ns: {e}", self.now_ns));
        }
        // The same report carries the queues a load-aware placer reads (`Placement::observe`);
        // without `reset`, the controller's period counters are left alone.
        let observation = self.observation(period_ns, false);
        self.placer.observe(&observation);
    }

    /// Issues I/O calls while the process may, then handles the end of its burst.
    fn pump(&mut self, p: u32) {
        loop {
            let now = self.now_ns;
            let proc_ = &mut self.processes[p as usize];
            if proc_.phase != Phase::Active {
                return;
            }
            let stop_ns = self.shapes[proc_.group as usize].stop_ns;
            let can_issue = proc_.outstanding_calls < proc_.iodepth
                && proc_.burst_left_bytes > 0
                && proc_.issued_bytes < proc_.size_bytes
                && now < stop_ns;
            if !can_issue {
                break;
            }
            let want = proc_
                .bs_bytes
                .min(proc_.burst_left_bytes)
                .min(proc_.size_bytes - proc_.issued_bytes);
            let (offset, len) = if proc_.rw.is_random() {
                let blocks = proc_.size_bytes.div_ceil(proc_.bs_bytes);
                let k = proc_.rng.random_range(0..blocks);
                let off = k * proc_.bs_bytes;
                (off, want.min(proc_.size_bytes - off))
            } else {
                let off = proc_.cursor_bytes % proc_.size_bytes;
                let len = want.min(proc_.size_bytes - off);
                proc_.cursor_bytes = off + len;
                (off, len)
            };
            proc_.issued_bytes += len;
            proc_.burst_left_bytes = proc_.burst_left_bytes.saturating_sub(len);
            proc_.outstanding_calls += 1;
            let file_offset = proc_.region_base_bytes + offset;
            if proc_.read_ahead {
                self.read_from_cache(p, len);
            } else if proc_.write_back {
                self.write_to_cache(p, file_offset, len);
            } else {
                self.issue_call(p, file_offset, len, CallKind::Sync, now);
            }
        }
        self.maybe_burst_end(p);
    }

    fn maybe_burst_end(&mut self, p: u32) {
        let now = self.now_ns;
        let proc_ = &self.processes[p as usize];
        if proc_.phase != Phase::Active || proc_.outstanding_calls > 0 {
            return;
        }
        let shape = &self.shapes[proc_.group as usize];
        if shape.is_phased() {
            if proc_.burst_left_bytes == 0 || proc_.issued_bytes >= proc_.size_bytes {
                self.phase_part_done(p);
            }
            return;
        }
        let stop_ns = shape.stop_ns;
        if proc_.issued_bytes >= proc_.size_bytes || now >= stop_ns {
            self.finish_process(p);
        } else if proc_.burst_left_bytes == 0 {
            let (index, start) = (proc_.burst_index, proc_.burst_start_ns);
            self.schedule_burst(p, index + 1, start, now);
        }
    }

    /// Process `p` finished its part of its stage's current I/O phase: it waits at the
    /// barrier; the last one releases every process of the stage into the next compute phase.
    fn phase_part_done(&mut self, p: u32) {
        if self.processes[p as usize].buffered_rpcs_live > 0 {
            self.processes[p as usize].on_flushed = Some(FlushAction::PhasePartDone);
            return;
        }
        let now = self.now_ns;
        self.processes[p as usize].phase = Phase::Waiting;
        let Some(bi) = self.processes[p as usize].barrier else {
            return;
        };
        let b = &mut self.barriers[bi as usize];
        b.running -= 1;
        if b.running > 0 {
            return;
        }
        let record = PhaseRecord {
            start_ns: b.phase_start_ns.take().unwrap_or(now),
            end_ns: now,
            bytes: std::mem::take(&mut b.phase_bytes),
        };
        let job = b.job;
        let list = std::mem::take(&mut b.processes);
        if let Some(phases) = &mut self.jobs[job as usize].phases {
            phases.done.push(record);
        }
        let mut running = 0;
        for &q in &list {
            let index = self.processes[q as usize].burst_index;
            self.schedule_burst(q, index + 1, 0, now);
            running += u32::from(self.processes[q as usize].phase != Phase::Done);
        }
        let b = &mut self.barriers[bi as usize];
        b.processes = list;
        b.running = running;
    }

    fn finish_process(&mut self, p: u32) {
        let proc_ = &mut self.processes[p as usize];
        if proc_.phase == Phase::Done {
            return;
        }
        if proc_.buffered_rpcs_live > 0 {
            proc_.on_flushed = Some(FlushAction::Finish);
            return;
        }
        proc_.phase = Phase::Done;
        self.jobs[proc_.job as usize].processes_left -= 1;
        self.processes_left -= 1;
        let g = proc_.group;
        let group = &mut self.groups[g as usize];
        group.left -= 1;
        if group.left == 0 && !group.dependents.is_empty() {
            self.release_after(g);
        }
    }

    /// Issues the RPCs of one call of process `p` and returns the call (`NO_CALL` for a buffered
    /// write, which keeps no call record).
    fn issue_call(
        &mut self,
        p: u32,
        file_offset: u64,
        len: u64,
        kind: CallKind,
        issued_ns: u64,
    ) -> u32 {
        let now = self.now_ns;
        let buffered = kind == CallKind::Buffered;
        let call = if buffered {
            NO_CALL
        } else {
            match self.free_calls.pop() {
                Some(c) => c,
                None => {
                    self.calls.push(Call::default());
                    self.calls.len() as u32 - 1
                }
            }
        };
        let proc_ = &self.processes[p as usize];
        let (job, client, read) = (proc_.job, proc_.client, proc_.rw.is_read());
        let file = &self.files[proc_.file as usize];
        let osts =
            &self.layout_osts[file.osts_start as usize..(file.osts_start + file.osts_len) as usize];
        let object_base = file.object_base;
        let raid0 = Raid0::new(file.stripe_size_bytes, file.osts_len);
        let mut formed = std::mem::take(&mut self.rpc_scratch);
        formed.clear();
        raid0.rpcs(file_offset, len, self.brw_size_bytes, |piece| {
            formed.push((
                osts[piece.stripe_index as usize],
                QueuedRpc {
                    call,
                    process: p,
                    object: object_base + piece.stripe_index,
                    job,
                    read,
                    object_offset_bytes: piece.object_offset_bytes,
                    file_offset_bytes: piece.file_offset_bytes,
                    size_bytes: piece.size_bytes,
                    created_ns: now,
                },
            ));
        });
        let rpcs_left = formed.len() as u32;
        let n_osts = self.osts.len();
        for &(ost, q) in &formed {
            let osc = &mut self.oscs[client as usize * n_osts + ost as usize];
            if buffered {
                osc.dirty_bytes += q.size_bytes;
            }
            if osc.window.try_send() {
                self.send_rpc(client, ost, q);
            } else {
                osc.waiting.push_back(q);
            }
        }
        self.rpc_scratch = formed;
        assert!(rpcs_left > 0, "a call of {len} bytes makes RPCs");
        self.rpcs_live += u64::from(rpcs_left);
        self.bytes_issued += len;
        if buffered {
            self.client_dirty_bytes[client as usize] += len;
            self.client_buffered_rpcs[client as usize] += u64::from(rpcs_left);
            self.processes[p as usize].buffered_rpcs_live += u64::from(rpcs_left);
        } else {
            self.calls[call as usize] = Call {
                process: p,
                rpcs_left,
                kind,
                issued_ns,
                bytes: len,
                unconsumed_bytes: len,
                awaited: false,
                in_queue: kind == CallKind::Prefetch,
            };
        }
        let job_state = &mut self.jobs[job as usize];
        if job_state.first_io_ns.is_none() {
            job_state.first_io_ns = Some(now);
        }
        call
    }

    /// Sends RPC `q` of `client` to `ost` now (its window has just given it a slot): makes
    /// its state and schedules its arrival at the OSS. Returns its index.
    fn send_rpc(&mut self, client: u32, ost: u32, q: QueuedRpc) -> u32 {
        let (job, read) = (q.job, q.read);
        let now = self.now_ns;
        let ost_state = &self.osts[ost as usize];
        let oss = &self.osses[ost_state.oss as usize];
        let cpt = client_cpt(client, oss.cpts);
        let state = RpcState {
            call: q.call,
            process: q.process,
            job,
            client,
            ost,
            object: q.object,
            sched: self.domains[ost_state.domain as usize].sched_base + cpt,
            pool: oss.pool_base + cpt,
            ticket: ServiceTicket::default(),
            read,
            object_offset_bytes: q.object_offset_bytes,
            file_offset_bytes: q.file_offset_bytes,
            size_bytes: q.size_bytes,
            created_ns: q.created_ns,
            sent_ns: now,
            device_submit_ns: 0,
            arrive_ns: 0,
            service_start_ns: 0,
            device_start_ns: 0,
            device_done_ns: 0,
            cpu_ns: 0,
            bulk_first_end_ns: 0,
        };
        let rpc = match self.free_rpcs.pop() {
            Some(r) => {
                self.rpcs[r as usize] = state;
                r
            }
            None => {
                self.rpcs.push(state);
                self.rpcs.len() as u32 - 1
            }
        };
        self.queue.push_lane(
            LANE_LATENCY,
            now + self.small_message_ns,
            Event::RequestArrive { rpc },
        );
        rpc
    }

    /// Records that a call of process `p` issued at `issued_ns` returned now.
    fn call_returned(&mut self, p: u32, issued_ns: u64, bytes: u64) {
        let proc_ = &mut self.processes[p as usize];
        assert!(proc_.outstanding_calls > 0, "a call returns once");
        proc_.outstanding_calls -= 1;
        if let Some(trace) = &mut self.call_trace {
            trace.push(CallTrace {
                job: proc_.job,
                process: p,
                read: proc_.rw.is_read(),
                size_bytes: bytes,
                issued_ns,
                returned_ns: self.now_ns,
            });
        }
    }

    /// Whether a buffered write of `len` bytes at `file_offset` of process `p`'s file fits
    /// its client's dirty budgets now: every OSC it touches stays within `max_dirty_mb`, the
    /// client within `max_dirty_client_mb` (an empty budget takes any one write, so a write
    /// larger than a budget still goes, alone, as Lustre's cache lets it). Otherwise, the
    /// first budget it does not fit: the client's, then its OSCs' in the order the write
    /// reaches them.
    fn write_fits(&mut self, p: u32, file_offset: u64, len: u64) -> Result<(), DirtyFull> {
        let proc_ = &self.processes[p as usize];
        let client = proc_.client as usize;
        let dirty = self.client_dirty_bytes[client];
        if dirty > 0 && dirty + len > self.dirty_client_max_bytes {
            return Err(DirtyFull::Client);
        }
        let buffered = self.client_buffered_rpcs[client];
        if buffered > 0
            && buffered + len.div_ceil(self.brw_size_bytes) + 1 > CLIENT_BUFFERED_RPCS_MAX
        {
            return Err(DirtyFull::Client);
        }
        let file = &self.files[proc_.file as usize];
        let osts =
            &self.layout_osts[file.osts_start as usize..(file.osts_start + file.osts_len) as usize];
        let raid0 = Raid0::new(file.stripe_size_bytes, file.osts_len);
        let scratch = &mut self.piece_scratch;
        scratch.clear();
        // The bytes per object, not per RPC: the budgets count bytes, and a call has one
        // range per object it touches but brw_size-sized RPCs in each.
        raid0.object_ranges(file_offset, len, |range| {
            let ost = osts[range.stripe_index as usize];
            let bytes = range.object_end_bytes - range.object_start_bytes;
            match scratch.iter_mut().find(|(o, _)| *o == ost) {
                Some(e) => e.1 += bytes,
                None => scratch.push((ost, bytes)),
            }
        });
        let n_osts = self.osts.len();
        match scratch.iter().find(|&&(ost, bytes)| {
            let d = self.oscs[client * n_osts + ost as usize].dirty_bytes;
            d > 0 && d + bytes > self.dirty_osc_max_bytes
        }) {
            Some(&(ost, _)) => Err(DirtyFull::Osc(ost)),
            None => Ok(()),
        }
    }

    /// A write call of a write-back process: buffered at once when it fits the dirty
    /// budgets and nobody waits before it, else it waits for room.
    fn write_to_cache(&mut self, p: u32, file_offset: u64, len: u64) {
        let now = self.now_ns;
        let client = self.processes[p as usize].client as usize;
        let fits = if self.dirty_waiters[client].is_empty() {
            let fits = self.write_fits(p, file_offset, len);
            if let Err(full) = fits {
                self.dirty_front_full[client] = Some(full);
            }
            fits.is_ok()
        } else {
            false
        };
        if fits {
            self.issue_call(p, file_offset, len, CallKind::Buffered, now);
            self.call_returned(p, now, len);
        } else {
            self.dirty_waiters[client].push_back(BlockedWrite {
                process: p,
                file_offset_bytes: file_offset,
                len_bytes: len,
                issued_ns: now,
            });
        }
    }

    /// Buffers the writes waiting at `client` that fit now, in order.
    fn admit_waiters(&mut self, client: usize) {
        while let Some(w) = self.dirty_waiters[client].front().copied() {
            if let Err(full) = self.write_fits(w.process, w.file_offset_bytes, w.len_bytes) {
                self.dirty_front_full[client] = Some(full);
                return;
            }
            self.dirty_waiters[client].pop_front();
            self.dirty_front_full[client] = None;
            self.issue_call(
                w.process,
                w.file_offset_bytes,
                w.len_bytes,
                CallKind::Buffered,
                w.issued_ns,
            );
            self.call_returned(w.process, w.issued_ns, w.len_bytes);
            self.pump(w.process);
        }
    }

    /// A read call of `len` bytes of a read-ahead process (its `issued_bytes` already counts
    /// them): the client prefetches up to `max_read_ahead_per_file_mb` past the call (what the
    /// call itself needs whatever the client-wide budget), then the call consumes its bytes
    /// from the prefetched calls; it returns at once if they have all arrived.
    fn read_from_cache(&mut self, p: u32, len: u64) {
        let now = self.now_ns;
        let proc_ = &self.processes[p as usize];
        let (client, size, bs) = (proc_.client as usize, proc_.size_bytes, proc_.bs_bytes);
        let demand_until = proc_.issued_bytes;
        let window_until = demand_until
            .saturating_add(self.ra_file_max_bytes)
            .min(size);
        loop {
            let proc_ = &self.processes[p as usize];
            let at = proc_.ra_issued_bytes;
            if at >= window_until {
                break;
            }
            let off = proc_.ra_cursor_bytes % size;
            let chunk = bs.min(size - at).min(size - off);
            if at >= demand_until && self.client_ra_bytes[client] + chunk > self.ra_client_max_bytes
            {
                break;
            }
            let file_offset = proc_.region_base_bytes + off;
            let call = self.issue_call(p, file_offset, chunk, CallKind::Prefetch, now);
            self.client_ra_bytes[client] += chunk;
            let proc_ = &mut self.processes[p as usize];
            proc_.ra_cursor_bytes = off + chunk;
            proc_.ra_issued_bytes += chunk;
            proc_.ra_queue.push_back(call);
        }
        assert!(
            self.processes[p as usize].ra_issued_bytes >= demand_until,
            "a read's own bytes are always fetched"
        );
        let mut left = len;
        while left > 0 {
            let proc_ = &mut self.processes[p as usize];
            let call = *proc_
                .ra_queue
                .front()
                .expect("prefetched calls cover every read");
            let c = &mut self.calls[call as usize];
            let take = left.min(c.unconsumed_bytes);
            c.unconsumed_bytes -= take;
            left -= take;
            let arrived = c.rpcs_left == 0;
            if !arrived && !c.awaited {
                c.awaited = true;
                proc_.ra_waits += 1;
            }
            if c.unconsumed_bytes == 0 {
                c.in_queue = false;
                proc_.ra_queue.pop_front();
                if arrived {
                    self.free_calls.push(call);
                }
            }
        }
        if self.processes[p as usize].ra_waits == 0 {
            self.call_returned(p, now, len);
        } else {
            self.processes[p as usize].ra_blocked.push(now);
        }
    }

    /// The data of prefetched call `call` of process `p` has arrived.
    fn prefetch_arrived(&mut self, p: u32, call: u32) {
        let c = self.calls[call as usize];
        let client = self.processes[p as usize].client as usize;
        self.client_ra_bytes[client] -= c.bytes;
        if !c.in_queue {
            self.free_calls.push(call);
        }
        if !c.awaited {
            return;
        }
        self.calls[call as usize].awaited = false;
        let proc_ = &mut self.processes[p as usize];
        proc_.ra_waits -= 1;
        if proc_.ra_waits > 0 {
            return;
        }
        let blocked = std::mem::take(&mut proc_.ra_blocked);
        let bs = proc_.bs_bytes;
        for &issued_ns in &blocked {
            self.call_returned(p, issued_ns, bs);
        }
        let mut blocked = blocked;
        blocked.clear();
        self.processes[p as usize].ra_blocked = blocked;
        self.pump(p);
    }

    // ---------------------------------------------------------------- server side

    fn request_arrive(&mut self, rpc: u32) {
        self.rpcs[rpc as usize].arrive_ns = self.now_ns;
        let r = self.rpcs[rpc as usize];
        let n_jobs = self.jobs.len();
        self.period_stats[r.ost as usize * n_jobs + r.job as usize].arrived += 1;
        self.queued_per_ost[r.ost as usize] += 1;
        let tags = self.rpc_tags(&r);
        let (pool, head) = self.sched_slot[r.sched as usize];
        debug_assert_eq!(pool, r.pool);
        self.pools[pool as usize].arrive(self.now_ns, head as usize, &tags, r.size_bytes, rpc);
        self.check_timer(r.sched);
        self.dispatch(r.pool);
    }

    /// What the OSS's schedulers see of an RPC.
    fn rpc_tags(&self, r: &RpcState) -> RpcTags {
        let job = &self.jobs[r.job as usize];
        RpcTags {
            job: job.id,
            nid: self.clients[r.client as usize].0,
            opcode: if r.read {
                Opcode::OstRead
            } else {
                Opcode::OstWrite
            },
            uid: job.uid,
            gid: job.gid,
            ..RpcTags::default()
        }
    }

    /// The service thread holding `rpc` is free again: the partition learns the completion
    /// (with the RPC's bytes as its cost).
    fn service_complete(&mut self, rpc: u32) {
        let r = self.rpcs[rpc as usize];
        let tags = self.rpc_tags(&r);
        let (pool, head) = self.sched_slot[r.sched as usize];
        self.pools[pool as usize].complete(
            self.now_ns,
            head as usize,
            r.ticket,
            &tags,
            r.size_bytes,
        );
    }

    /// Arms a timer event if the scheduler's deadline differs from the armed one.
    fn check_timer(&mut self, sched: u32) {
        let (pool, head) = self.sched_slot[sched as usize];
        if let Some(deadline) = self.pools[pool as usize].timer_deadline_ns(head as usize) {
            arm_timer(
                &mut self.sched_timer_ns,
                &mut self.queue,
                self.now_ns,
                sched,
                deadline,
            );
        }
    }

    /// Hands queued requests to idle threads of `pool` (the partition polls its heads round
    /// robin), arming a timer for every head that holds requests back.
    fn dispatch(&mut self, pool: u32) {
        loop {
            let base = self.pool_sched_base[pool as usize] as usize;
            let (timers, queue, scheds, now_ns) = (
                &mut self.sched_timer_ns,
                &mut self.queue,
                &self.pool_scheds,
                self.now_ns,
            );
            let next = self.pools[pool as usize].dispatch(now_ns, |head, until_ns| {
                arm_timer(timers, queue, now_ns, scheds[base + head], until_ns)
            });
            match next {
                Dispatch::Start {
                    payload: rpc,
                    ticket,
                    ..
                } => {
                    self.rpcs[rpc as usize].ticket = ticket;
                    self.start_service(rpc)
                }
                Dispatch::Wait { .. } | Dispatch::AllBusy => break,
            }
        }
        // Arrivals, starts and completions all end here: what the partition's distributed
        // schedulers want to tell the others leaves now.
        self.send_sync(pool);
    }

    /// Sends every synchronization message partition `pool` has ready to every other
    /// partition: at once to the partitions of the same OSS (one process, shared memory),
    /// after the network latency plus the message's own time on the sender's link (not
    /// queued behind bulk data: a few dozen bytes) to those of other OSSs.
    fn send_sync(&mut self, pool: u32) {
        let messages = self.pools[pool as usize].take_sync_out();
        if messages.is_empty() {
            return;
        }
        let from_oss = self.pool_oss[pool as usize];
        let receivers = self.pools.len() as u32 - 1;
        for message in messages {
            debug_assert_eq!(message.from_instance, pool);
            if receivers == 0 {
                continue;
            }
            if self.sync_deliveries + u64::from(receivers) > self.sync_deliveries_max {
                // Every partition broadcasts to every other, and each remote message costs its
                // receiver `sync_cpu_us`: where the receivers cannot keep up, the messages
                // waiting for them grow without bound. Stopped with the diagnosis, not run
                // out of memory.
                let behind_ns = self
                    .pool_sync_free_ns
                    .iter()
                    .map(|&f| f.saturating_sub(self.now_ns))
                    .max()
                    .unwrap_or(0);
                self.failure.get_or_insert(format!(
                    "at {} ns, {} synchronization messages wait for their receivers (at most \
                     {}): each of the {} partitions sends each report to \
                     every other, and the most loaded receiver is {:.3} s of CPU behind; the \
                     design's all-to-all synchronization does not keep up at this scale \
                     (a larger `threshold`, or `sync=layout`, sends fewer reports)",
                    self.now_ns,
                    self.sync_deliveries,
                    self.sync_deliveries_max,
                    self.pools.len(),
                    behind_ns as f64 / 1e9
                ));
                return;
            }
            let remote_ns = {
                let bytes = message.report.encoded_len_bytes();
                let link = &mut self.osses[from_oss as usize].link;
                self.latency_ns + link.transfer_ns(bytes)
            };
            let slot = match self.sync_free.pop() {
                Some(slot) => {
                    debug_assert!(self.sync_slots[slot as usize].is_none());
                    self.sync_slots[slot as usize] = Some((message, receivers));
                    slot
                }
                None => {
                    self.sync_slots.push(Some((message, receivers)));
                    self.sync_slots.len() as u32 - 1
                }
            };
            self.sync_deliveries += u64::from(receivers);
            for to in 0..self.pools.len() as u32 {
                if to == pool {
                    continue;
                }
                let at_ns = if self.pool_oss[to as usize] == from_oss {
                    self.now_ns
                } else {
                    // The receiving partition handles its messages one after the other.
                    let cpu_ns = self.osses[self.pool_oss[to as usize] as usize].sync_cpu_ns;
                    let free = &mut self.pool_sync_free_ns[to as usize];
                    let done_ns = (self.now_ns + remote_ns).max(*free) + cpu_ns;
                    *free = done_ns;
                    done_ns
                };
                self.queue
                    .push(at_ns, Event::SyncDeliver { pool: to, slot });
            }
        }
    }

    /// A synchronization message reaches partition `pool`: its schedulers learn the service
    /// given elsewhere, which can change what they hold back (timers) and hand out.
    fn sync_deliver(&mut self, pool: u32, slot: u32) {
        let (message, left) = self.sync_slots[slot as usize]
            .as_mut()
            .expect("a sync slot in flight");
        assert!(*left > 0, "a message is delivered to each receiver once");
        assert!(self.sync_deliveries > 0);
        *left -= 1;
        self.sync_deliveries -= 1;
        let message = if *left == 0 {
            self.sync_free.push(slot);
            self.sync_slots[slot as usize].take().expect("in flight").0
        } else {
            message.clone()
        };
        let to_oss = self.pool_oss[pool as usize];
        if self.pool_oss[message.from_instance as usize] != to_oss {
            // Handled (its CPU spent) by the time it is delivered (`send_sync`).
            self.time.sync_cpu_ns += self.osses[to_oss as usize].sync_cpu_ns;
        }
        self.pools[pool as usize].deliver_sync(self.now_ns, &message);
        let base = self.pool_sched_base[pool as usize];
        for head in 0..self.pools[pool as usize].head_count() as u32 {
            self.check_timer(self.pool_scheds[(base + head) as usize]);
        }
        self.dispatch(pool);
    }

    /// A thread takes `rpc`: it spends its CPU time on the request first (the OSS's
    /// `rpc_cpu_us` and `rpc_cpu_us_per_mib`), holding the thread, then the bulk and device
    /// work follow.
    fn start_service(&mut self, rpc: u32) {
        let now = self.now_ns;
        let r = &mut self.rpcs[rpc as usize];
        assert!(
            self.queued_per_ost[r.ost as usize] > 0,
            "a request leaves a queue it is in"
        );
        self.queued_per_ost[r.ost as usize] -= 1;
        r.service_start_ns = now;
        let oss = &self.osses[self.osts[r.ost as usize].oss as usize];
        let cpu_ns =
            oss.rpc_cpu_fixed_ns + (r.size_bytes as f64 * oss.rpc_cpu_ns_per_byte).ceil() as u64;
        r.cpu_ns = cpu_ns;
        if cpu_ns > 0 {
            let pool = r.pool as usize;
            let at_ns = now + cpu_ns;
            let back_ns = &mut self.pool_cpu_lane_back_ns[pool];
            if at_ns >= *back_ns {
                *back_ns = at_ns;
                let lane = self.lanes.pool_cpu + pool as u32;
                self.queue
                    .push_lane(lane, at_ns, Event::ServiceCpuDone { rpc });
            } else {
                self.queue.push(at_ns, Event::ServiceCpuDone { rpc });
            }
        } else {
            self.serve(rpc);
        }
    }

    /// The thread has handled `rpc`'s request: a read goes to the device, a write pulls its
    /// bulk data.
    fn serve(&mut self, rpc: u32) {
        let r = self.rpcs[rpc as usize];
        if r.read {
            self.device_submit(rpc);
            return;
        }
        // Pull the bulk data: client uplink first, in order behind the client's others.
        let client = r.client as usize;
        self.uplink_waiting[client].push_back(rpc);
        self.book_uplink(client);
    }

    /// Books the client's waiting transfers on its uplink while they can start at once, and
    /// at most one to start later (its `WriteBulkHop` books the next).
    fn book_uplink(&mut self, client: usize) {
        let now = self.now_ns;
        while self.uplink_booked[client].is_none() {
            let Some(rpc) = self.uplink_waiting[client].pop_front() else {
                return;
            };
            let size_bytes = self.rpcs[rpc as usize].size_bytes;
            let link = &mut self.clients[client].1;
            let shaper_before = link.up_shaper;
            let link_free_before_ns = link.up_free_ns;
            let start_ns = link.up_start_ns(now, size_bytes);
            let end_ns = start_ns + link.transfer_ns(size_bytes);
            link.up_free_ns = end_ns;
            self.rpcs[rpc as usize].bulk_first_end_ns = end_ns;
            if start_ns <= now {
                self.write_bulk_hop(rpc);
            } else {
                self.uplink_booked[client] = Some(UplinkBooking {
                    rpc,
                    size_bytes,
                    start_ns,
                    shaper_before,
                    link_free_before_ns,
                });
                self.push_uplink_start(client, rpc, start_ns);
            }
        }
    }

    /// Schedules the start of `rpc`'s transfer up `client`'s uplink: on the uplink's lane, or
    /// as a lone event if a limit change moved it before what the lane already holds.
    fn push_uplink_start(&mut self, client: usize, rpc: u32, start_ns: u64) {
        let back_ns = &mut self.uplink_lane_back_ns[client];
        if start_ns >= *back_ns {
            *back_ns = start_ns;
            let lane = self.lanes.client_up + client as u32;
            self.queue
                .push_lane(lane, start_ns, Event::WriteBulkHop { rpc });
        } else {
            self.queue.push(start_ns, Event::WriteBulkHop { rpc });
        }
    }

    /// A controller set or lifted `client`'s outgoing limit: the shaper's running hold goes on
    /// at the new rate (`Link::relimit_up`), and a transfer booked ahead is booked again
    /// behind it (at once if it may start now).
    fn relimit_uplink(&mut self, client: usize, limit_bytes_per_s: Option<u64>) {
        let now = self.now_ns;
        let booked = self.uplink_booked[client];
        let link = &mut self.clients[client].1;
        let Some(rebooked) = link.relimit_up(now, limit_bytes_per_s, booked.as_ref()) else {
            return;
        };
        if booked == Some(rebooked) {
            // The same limit, or one that moves nothing: its event stands.
            return;
        }
        let end_ns = link.up_free_ns;
        let old_start_ns = booked.map(|b| b.start_ns);
        self.rpcs[rebooked.rpc as usize].bulk_first_end_ns = end_ns;
        if rebooked.start_ns <= now {
            self.uplink_booked[client] = None;
            self.write_bulk_hop(rebooked.rpc);
            self.book_uplink(client);
        } else {
            // Its hold before it may have moved even where its start did not.
            self.uplink_booked[client] = Some(rebooked);
            if old_start_ns != Some(rebooked.start_ns) {
                self.push_uplink_start(client, rebooked.rpc, rebooked.start_ns);
            }
        }
    }

    fn write_bulk_hop(&mut self, rpc: u32) {
        let r = self.rpcs[rpc as usize];
        let oss = self.osts[r.ost as usize].oss;
        let link = &mut self.osses[oss as usize].link;
        let start_ns = self.now_ns.max(link.down_free_ns);
        let end_ns = (start_ns + link.transfer_ns(r.size_bytes)).max(r.bulk_first_end_ns);
        link.down_free_ns = end_ns;
        let lane = self.lanes.oss_down + oss;
        self.queue
            .push_lane(lane, end_ns + self.latency_ns, Event::DeviceSubmit { rpc });
    }

    fn device_submit(&mut self, rpc: u32) {
        self.rpcs[rpc as usize].device_submit_ns = self.now_ns;
        let ost = self.rpcs[rpc as usize].ost as usize;
        let model = &self.device_models[self.osts[ost].device_model as usize];
        if model.dynamics().is_some() {
            let at = &mut self.object_at_device[self.rpcs[rpc as usize].object as usize];
            *at += 1;
            if *at == 1 {
                self.devices[ost].objects_active += 1;
            }
        }
        if self.devices[ost].busy < model.concurrency {
            self.device_start(rpc);
        } else {
            self.devices[ost].waiting.push_back(rpc);
        }
    }

    fn device_start(&mut self, rpc: u32) {
        self.rpcs[rpc as usize].device_start_ns = self.now_ns;
        let r = self.rpcs[rpc as usize];
        let next = &mut self.object_next_offset[r.object as usize];
        let random = *next != u64::MAX && *next != r.object_offset_bytes;
        *next = r.object_offset_bytes + r.size_bytes;
        let m = self.osts[r.ost as usize].device_model as usize;
        let memo = &mut self.service_memo[m][usize::from(r.read)];
        if memo.0 != r.size_bytes {
            *memo = (
                r.size_bytes,
                self.device_models[m].service_time(r.read, r.size_bytes, false),
            );
        }
        let mut t = memo.1;
        let model = &self.device_models[m];
        if model.dynamics().is_some() {
            let device = &self.devices[r.ost as usize];
            let last_left = device
                .last
                .is_some_and(|l| self.object_at_device[l.object as usize] == 0);
            let request = DeviceRequest {
                streams: device.objects_active + u32::from(last_left),
                object: r.object,
                offset_bytes: r.object_offset_bytes,
                size_bytes: r.size_bytes,
                read: r.read,
                random_on_object: random,
            };
            t = model.dynamic_service_time(&mut self.devices[r.ost as usize], request, t);
        } else if random {
            t.fixed_ns += model.random_penalty_ns;
        }
        if model.has_congestion() {
            // The dispatch queue this request starts in: those in service, those waiting, and
            // itself (popped from `waiting` or not yet counted in `busy`).
            let d = &self.devices[r.ost as usize];
            t = model.congested(t, u64::from(d.busy) + d.waiting.len() as u64 + 1);
        }
        let done_ns = self.devices[r.ost as usize].start(self.now_ns, t);
        self.queue.push_lane(
            self.lanes.device + r.ost,
            done_ns,
            Event::DeviceDone { rpc },
        );
    }

    fn device_done(&mut self, rpc: u32) {
        let now = self.now_ns;
        self.rpcs[rpc as usize].device_done_ns = now;
        let r = self.rpcs[rpc as usize];
        let device = &mut self.devices[r.ost as usize];
        device.busy -= 1;
        device.time_in_queue_ns += now - r.device_submit_ns;
        if !self.object_at_device.is_empty()
            && self.device_models[self.osts[r.ost as usize].device_model as usize]
                .dynamics()
                .is_some()
        {
            let at = &mut self.object_at_device[r.object as usize];
            assert!(*at > 0, "a request leaves a device it was submitted to");
            *at -= 1;
            if *at == 0 {
                device.objects_active -= 1;
            }
        }
        if let Some(next) = device.waiting.pop_front() {
            self.device_start(next);
        }
        let n_jobs = self.jobs.len();
        let stats = &mut self.period_stats[r.ost as usize * n_jobs + r.job as usize];
        stats.served += 1;
        stats.bytes += r.size_bytes;
        self.osts[r.ost as usize].served_rpcs_since_report += 1;
        if !r.read {
            let extent = &mut self.object_extent_bytes[r.object as usize];
            let end = r.object_offset_bytes + r.size_bytes;
            if end > *extent {
                self.osts[r.ost as usize].written_bytes += end - *extent;
                *extent = end;
            }
            self.service_complete(rpc);
            self.queue.push_lane(
                LANE_LATENCY,
                now + self.small_message_ns,
                Event::WriteReply { rpc },
            );
            self.dispatch(r.pool);
            return;
        }
        // Push the read data: server uplink first.
        let oss = self.osts[r.ost as usize].oss;
        let link = &mut self.osses[oss as usize].link;
        let start_ns = now.max(link.up_free_ns);
        let end_ns = start_ns + link.transfer_ns(r.size_bytes);
        link.up_free_ns = end_ns;
        self.rpcs[rpc as usize].bulk_first_end_ns = end_ns;
        if start_ns <= now {
            self.read_bulk_hop(rpc);
        } else {
            let lane = self.lanes.oss_up + oss;
            self.queue
                .push_lane(lane, start_ns, Event::ReadBulkHop { rpc });
        }
    }

    fn read_bulk_hop(&mut self, rpc: u32) {
        let r = self.rpcs[rpc as usize];
        let link = &mut self.clients[r.client as usize].1;
        let start_ns = self.now_ns.max(link.down_free_ns);
        let end_ns = (start_ns + link.transfer_ns(r.size_bytes)).max(r.bulk_first_end_ns);
        link.down_free_ns = end_ns;
        let lane = self.lanes.client_down + r.client;
        self.queue
            .push_lane(lane, end_ns + self.latency_ns, Event::ReadDone { rpc });
    }

    // ---------------------------------------------------------------- completion at the client

    fn client_complete(&mut self, rpc: u32) {
        let now = self.now_ns;
        let r = self.rpcs[rpc as usize];
        self.account_time(&r);
        let job = &mut self.jobs[r.job as usize];
        if r.read {
            job.bytes_read += r.size_bytes;
        } else {
            job.bytes_written += r.size_bytes;
        }
        job.rpcs += 1;
        job.last_io_ns = Some(now);
        self.rpcs_completed += 1;
        let bin = ((now / self.bin_ns) as usize).min(self.bins - 1);
        let series = &mut self.series[r.job as usize];
        if series.ost(r.ost as usize).is_empty() {
            // A job's first bytes on this OST: its bins are allocated now, within the bound.
            let cells = self.series_cells + self.bins as u64;
            if cells > self.series_cells_max {
                self.failure.get_or_insert(format!(
                    "at {now} ns the jobs' time series would take {cells} cells ({} bins for \
                     each OST a job moved bytes on; at most {}): use a larger bin_ms",
                    self.bins, self.series_cells_max
                ));
                return;
            }
            self.series_cells = cells;
        }
        series.add(r.ost, bin, r.size_bytes);
        if let Some(trace) = &mut self.trace {
            trace.push(RpcTrace {
                job: r.job,
                process: r.process,
                client: r.client,
                ost: r.ost,
                read: r.read,
                file_offset_bytes: r.file_offset_bytes,
                object_offset_bytes: r.object_offset_bytes,
                size_bytes: r.size_bytes,
                created_ns: r.created_ns,
                sent_ns: r.sent_ns,
                completed_ns: now,
            });
        }
        self.free_rpcs.push(rpc);

        // The OSC slot frees: send the next waiting RPC of this (client, OST).
        let n_osts = self.osts.len();
        let osc = &mut self.oscs[r.client as usize * n_osts + r.ost as usize];
        assert!(osc.window.in_flight() > 0, "a window counts what it sent");
        osc.window.complete();
        if let Some(next) = osc.waiting.pop_front() {
            assert!(osc.window.try_send(), "a slot was just freed");
            assert!(osc.window.in_flight() <= self.max_rpcs_in_flight);
            debug_assert_eq!(
                self.processes[next.process as usize].job, next.job,
                "a queued RPC's job is its process's"
            );
            self.send_rpc(r.client, r.ost, next);
        }

        assert!(self.rpcs_live > 0, "an RPC completes once");
        self.rpcs_live -= 1;
        let buffered = r.call == NO_CALL;
        if buffered {
            let osc = &mut self.oscs[r.client as usize * n_osts + r.ost as usize];
            osc.dirty_bytes -= r.size_bytes;
            self.client_dirty_bytes[r.client as usize] -= r.size_bytes;
            self.client_buffered_rpcs[r.client as usize] -= 1;
            let p = r.process;
            let proc_ = &mut self.processes[p as usize];
            assert!(
                proc_.buffered_rpcs_live > 0,
                "a buffered RPC is acknowledged once"
            );
            proc_.buffered_rpcs_live -= 1;
            if proc_.buffered_rpcs_live == 0 {
                match proc_.on_flushed.take() {
                    Some(FlushAction::Finish) => self.finish_process(p),
                    Some(FlushAction::PhasePartDone) => self.phase_part_done(p),
                    None => {}
                }
            }
        } else {
            let call = &mut self.calls[r.call as usize];
            assert!(call.rpcs_left > 0, "a call's RPCs complete once each");
            assert!(
                call.kind != CallKind::Buffered,
                "a buffered write has no call record"
            );
            call.rpcs_left -= 1;
            let call = *call;
            if call.rpcs_left == 0 {
                let p = call.process;
                match call.kind {
                    CallKind::Sync => {
                        self.free_calls.push(r.call);
                        self.call_returned(p, call.issued_ns, call.bytes);
                        self.pump(p);
                    }
                    CallKind::Buffered => unreachable!("a buffered write has no call record"),
                    CallKind::Prefetch => self.prefetch_arrived(p, r.call),
                }
            }
        }
        if buffered {
            let client = r.client as usize;
            debug_assert_eq!(
                self.dirty_front_full[client].is_some(),
                !self.dirty_waiters[client].is_empty(),
                "a waiting write knows the budget it waits for"
            );
            // Only room in the budget the first waiter did not fit can admit it (and those
            // behind it wait in order).
            let room = match self.dirty_front_full[client] {
                Some(DirtyFull::Client) => true,
                Some(DirtyFull::Osc(ost)) => ost == r.ost,
                None => false,
            };
            if room {
                self.admit_waiters(client);
            }
        }
    }

    /// Adds the life of completed RPC `r` to `TimeSpent`: its stamps are in time order, and
    /// what is not spent waiting at the client, the server or the device, or in the
    /// thread's CPU or the device's service, was spent on the links.
    fn account_time(&mut self, r: &RpcState) {
        let now = self.now_ns;
        assert!(
            r.created_ns <= r.sent_ns
                && r.sent_ns <= r.arrive_ns
                && r.arrive_ns <= r.service_start_ns
                && r.service_start_ns + r.cpu_ns <= r.device_submit_ns
                && r.device_submit_ns <= r.device_start_ns
                && r.device_start_ns <= r.device_done_ns
                && r.device_done_ns <= now,
            "an RPC's life runs forward"
        );
        let total = now - r.created_ns;
        let client_queue = r.sent_ns - r.created_ns;
        let server_queue = r.service_start_ns - r.arrive_ns;
        let device_queue = r.device_start_ns - r.device_submit_ns;
        let device = r.device_done_ns - r.device_start_ns;
        let t = &mut self.time;
        t.total_ns += total;
        t.client_queue_ns += client_queue;
        t.server_queue_ns += server_queue;
        t.server_cpu_ns += r.cpu_ns;
        t.device_queue_ns += device_queue;
        t.device_ns += device;
        t.network_ns += total - client_queue - server_queue - r.cpu_ns - device_queue - device;
    }

    // ---------------------------------------------------------------- output

    /// [`Sim::finish`], or the create that stopped the run (`files_created = "first_io"` on
    /// OSTs the scenario's writes fill: the placer finds no room).
    fn finish_checked(mut self) -> Result<RunOutput, RunError> {
        match self.failure.take() {
            Some(e) => Err(RunError::Scenario(e)),
            None => Ok(self.finish()),
        }
    }

    /// The run's books balance: every RPC created is completed or still alive, and so are
    /// its bytes.
    fn check_conservation(&self) {
        let mut freed = vec![false; self.rpcs.len()];
        for &r in &self.free_rpcs {
            assert!(!freed[r as usize], "an RPC is freed once");
            freed[r as usize] = true;
        }
        let live: Vec<&RpcState> = self
            .rpcs
            .iter()
            .zip(&freed)
            .filter(|(_, &f)| !f)
            .map(|(r, _)| r)
            .collect();
        let queued = self.oscs.iter().flat_map(|o| &o.waiting);
        assert_eq!(
            live.len() as u64 + queued.clone().count() as u64,
            self.rpcs_live,
            "RPCs alive: sent or queued at their OSC"
        );
        let completed: u64 = self
            .jobs
            .iter()
            .map(|j| j.bytes_read + j.bytes_written)
            .sum();
        let in_flight: u64 = live.iter().map(|r| r.size_bytes).sum::<u64>()
            + queued.map(|q| q.size_bytes).sum::<u64>();
        assert_eq!(
            self.bytes_issued,
            completed + in_flight,
            "bytes issued = completed + in flight"
        );
        assert!(
            self.oscs
                .iter()
                .all(|o| o.window.in_flight() <= self.max_rpcs_in_flight),
            "windows bounded"
        );
        assert_eq!(
            self.sync_slots
                .iter()
                .flatten()
                .map(|&(_, left)| u64::from(left))
                .sum::<u64>(),
            self.sync_deliveries,
            "every synchronization message in flight is owed to its receivers"
        );
    }

    fn finish(self) -> RunOutput {
        self.check_conservation();
        let mut sync: Vec<SyncOutput> = self
            .osses
            .iter()
            .map(|o| SyncOutput {
                oss: o.name.clone(),
                ..SyncOutput::default()
            })
            .collect();
        for (pool, service) in self.pools.iter().enumerate() {
            sync[self.pool_oss[pool] as usize].counters += service.sync_counters();
        }
        let bins = (self.end_ns.div_ceil(self.bin_ns) as usize).clamp(1, self.bins);
        let osts = (0..self.osts.len() as u32)
            .map(|o| OstId(o).to_string())
            .collect();
        let ost_space = self
            .osts
            .iter()
            .map(|o| OstSpace {
                capacity_bytes: o.capacity_bytes,
                used_initial_bytes: o.used_initial_bytes,
                written_bytes: o.written_bytes,
            })
            .collect();
        let jobs = self
            .jobs
            .into_iter()
            .zip(self.series)
            .map(|(job, mut series)| {
                series.truncate(bins);
                JobOutput {
                    job_id: job.spec_id,
                    node_count: job.node_count,
                    weight: job.weight,
                    bytes_read: job.bytes_read,
                    bytes_written: job.bytes_written,
                    rpcs: job.rpcs,
                    first_io_ns: job.first_io_ns,
                    last_io_ns: job.last_io_ns,
                    finished: job.processes_left == 0,
                    bytes_per_ost_bin: series,
                    phases: job.phases,
                }
            })
            .collect();
        RunOutput {
            scenario_name: self.scenario_name,
            policy: self.policy,
            seed: self.seed,
            bin_ns: self.bin_ns,
            end_ns: self.end_ns,
            osts,
            ost_space,
            jobs,
            control_log: self.control_log,
            control_trace: self.control_trace,
            control_trace_truncated: self.control_trace_truncated,
            engine: EngineStats {
                events: self.events,
                rpcs: self.rpcs_completed,
                client_writes: self.client_writes,
                time: self.time,
            },
            regret: self.controller.regret(),
            allocation: self.controller.allocation_stats(),
            sync,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;
    /// A 1 MiB transfer takes 1 048 576 ns at this link's speed (1 GB/s).
    const LINK_NS_PER_BYTE: f64 = 1.0;

    fn link() -> Link {
        Link {
            ns_per_byte: LINK_NS_PER_BYTE,
            ..Link::default()
        }
    }

    /// Books a transfer of `bytes` ready at `now_ns` as `Sim::book_uplink` does; returns it
    /// as a booking (what a transfer booked ahead records).
    fn book(link: &mut Link, rpc: u32, now_ns: u64, bytes: u64) -> UplinkBooking {
        let shaper_before = link.up_shaper;
        let link_free_before_ns = link.up_free_ns;
        let start_ns = link.up_start_ns(now_ns, bytes);
        link.up_free_ns = start_ns + link.transfer_ns(bytes);
        UplinkBooking {
            rpc,
            size_bytes: bytes,
            start_ns,
            shaper_before,
            link_free_before_ns,
        }
    }

    /// A partition's synchronization report is kept once for all its receivers, and a run
    /// whose messages waiting for their receivers would pass the bound stops with the
    /// diagnosis instead of growing without bound.
    #[test]
    fn synchronization_messages_in_flight_are_bounded() {
        let text = r#"
name = "sync"
[simulation]
duration_s = 2.0
[cluster]
clients = 2
[[oss]]
name = "oss0"
osts = 2
cpts = 2
[[oss]]
name = "oss1"
osts = 2
cpts = 2
[[job]]
id = "a"
nodes = 1
[[job.processes]]
stripe_count = 4
rw = "write"
bs = "1M"
size = "64M"
numjobs = 2
[[job]]
id = "b"
nodes = 3
[[job.processes]]
stripe_count = 4
rw = "write"
bs = "1M"
size = "64M"
numjobs = 2
"#;
        let scenario = Scenario::from_toml_str(text, "sync.toml").unwrap();
        let choice = "vpfs".choice().unwrap();
        let build = |max: u64| {
            let controller = controller_for_choice(&choice, &scenario, 1);
            let mut sim = Sim::new(&scenario, controller, choice.spec(), 1).unwrap();
            sim.sync_deliveries_max = max;
            sim.run(&mut |_, _| {});
            (
                sim.sync_deliveries,
                sim.sync_slots.len(),
                sim.finish_checked(),
            )
        };
        let (_, slots, out) = build(SYNC_DELIVERIES_MAX);
        let out = out.unwrap();
        let sent: u64 = out.sync.iter().map(|s| s.counters.broadcasts_out).sum();
        assert!(sent > 0, "vPFS's instances synchronize");
        assert!(
            slots as u64 <= sent,
            "one slot per message, not per receiver"
        );
        // Three receivers per message: a bound of two stops the run at its first broadcast.
        let (left, _, out) = build(2);
        assert_eq!(left, 0, "nothing queued at or past the bound");
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("synchronization messages") && e.contains("all-to-all"),
            "{e}"
        );
    }

    /// A run's series hold `bins` cells per (job, OST) pair that moved bytes, and the run
    /// stops with an error, allocating nothing more, where they would exceed the bound.
    #[test]
    fn series_hold_the_touched_osts_only_and_stop_at_their_bound() {
        let text = r#"
name = "series"
[simulation]
duration_s = 10.0
bin_ms = 1000
[cluster]
clients = 1
[[oss]]
name = "oss0"
osts = 8
[[job]]
id = "a"
nodes = 1
[[job.processes]]
stripe_count = 3
rw = "write"
bs = "1M"
size = "12M"
"#;
        let scenario = Scenario::from_toml_str(text, "series.toml").unwrap();
        let choice = "nobw".choice().unwrap();
        let build = |cells_max: u64| {
            let controller = controller_for_choice(&choice, &scenario, 1);
            let mut sim = Sim::new(&scenario, controller, choice.spec(), 1).unwrap();
            sim.series_cells_max = cells_max;
            sim.run(&mut |_, _| {});
            (sim.series_cells, sim.finish_checked())
        };
        let (cells, out) = build(SERIES_CELLS_MAX);
        let out = out.unwrap();
        let series = &out.jobs[0].bytes_per_ost_bin;
        assert_eq!(
            series.ost_count(),
            3,
            "the stripe's three OSTs, not the system's eight"
        );
        assert_eq!(cells, 3 * 11, "three OSTs of 11 bins");
        let total: u64 = series.iter().flat_map(|(_, r)| r).sum();
        assert_eq!(total, 12 << 20, "every byte in the series");
        // Two OSTs' bins fit 22 cells; the third OST's bytes stop the run.
        let (cells, out) = build(2 * 11 + 10);
        assert_eq!(cells, 2 * 11, "nothing allocated beyond the bound");
        let e = out.unwrap_err().to_string();
        assert!(e.contains("time series") && e.contains("bin_ms"), "{e}");
    }

    #[test]
    fn a_limit_raised_mid_hold_lets_the_rest_through_at_the_new_rate() {
        let mut l = link();
        assert_eq!(l.relimit_up(0, Some(M), None), None);
        // 1 MiB at 1 MiB/s from 0: the shaper holds the next transfer until 1 s.
        assert_eq!(book(&mut l, 0, 0, M).start_ns, 0);
        assert_eq!(l.up_shaper.free_ns(), 1_000_000_000);
        // At 0.5 s the limit rises to 4 MiB/s: the 512 KiB not yet through take 125 ms.
        assert_eq!(l.relimit_up(500_000_000, Some(4 * M), None), None);
        assert_eq!(l.up_shaper.free_ns(), 625_000_000);
        assert_eq!(book(&mut l, 1, 500_000_000, M).start_ns, 625_000_000);
        // Then the next at 4 MiB/s: 250 ms.
        assert_eq!(l.up_shaper.free_ns(), 875_000_000);
    }

    #[test]
    fn a_limit_lowered_mid_hold_holds_the_rest_at_the_new_rate() {
        let mut l = link();
        l.relimit_up(0, Some(4 * M), None);
        book(&mut l, 0, 0, M);
        assert_eq!(l.up_shaper.free_ns(), 250_000_000);
        // At 125 ms (512 KiB through) the limit falls to 1 MiB/s: the other 512 KiB take 0.5 s.
        l.relimit_up(125_000_000, Some(M), None);
        assert_eq!(l.up_shaper.free_ns(), 625_000_000);
        assert_eq!(book(&mut l, 1, 125_000_000, M).start_ns, 625_000_000);
        assert_eq!(l.up_shaper.free_ns(), 1_625_000_000);
    }

    #[test]
    fn a_transfer_booked_ahead_is_booked_again_behind_the_rebooked_hold() {
        let mut l = link();
        l.relimit_up(0, Some(M), None);
        book(&mut l, 0, 0, M);
        // The next transfer, ready at once, is booked to start when the first one's hold ends.
        let b = book(&mut l, 1, 0, M);
        assert_eq!(b.start_ns, 1_000_000_000);
        assert_eq!(l.up_shaper.free_ns(), 2_000_000_000);
        // Raised to 4 MiB/s at 0.5 s: the first hold ends at 0.625 s, the booked one starts
        // then and holds 250 ms.
        let b = l.relimit_up(500_000_000, Some(4 * M), Some(&b)).unwrap();
        assert_eq!(b.start_ns, 625_000_000);
        assert_eq!(b.shaper_before.free_ns(), 625_000_000);
        assert_eq!(l.up_shaper.free_ns(), 875_000_000);
        assert_eq!(l.up_free_ns, 625_000_000 + M);
        // Lowered to 2 MiB/s at 0.6 s: 25 ms at 4 MiB/s left of the first hold, 104 857.6
        // bytes (rounded up to 104 858), take 50 000 191 ns at 2 MiB/s (rounded up).
        let b = l.relimit_up(600_000_000, Some(2 * M), Some(&b)).unwrap();
        assert_eq!(b.start_ns, 650_000_191);
        assert_eq!(l.up_shaper.free_ns(), 650_000_191 + 500_000_000);
        // The same limit again changes nothing.
        assert_eq!(l.relimit_up(610_000_000, Some(2 * M), Some(&b)), Some(b));
        assert_eq!(l.up_shaper.free_ns(), 1_150_000_191);
    }

    #[test]
    fn lifting_the_limit_ends_the_hold_but_not_the_link_serialization() {
        let mut l = link();
        l.relimit_up(0, Some(M), None);
        book(&mut l, 0, 0, M);
        let b = book(&mut l, 1, 0, M);
        let b = l.relimit_up(500_000_000, None, Some(&b)).unwrap();
        assert_eq!(b.start_ns, 500_000_000);
        // Unlimited, a transfer ready while the link is busy waits for the link only.
        let c = book(&mut l, 2, 500_000_000, M);
        assert_eq!(c.start_ns, 500_000_000 + M);
        // A limit set on an idle shaper holds nothing until a transfer is booked under it.
        assert_eq!(l.relimit_up(600_000_000, Some(M), None), None);
        assert_eq!(book(&mut l, 3, 600_000_000, M).start_ns, 600_000_000);
    }
}
