//! Request schedulers: the data plane. A scheduler decides which queued RPC a free I/O thread
//! takes next. Called per RPC, so every operation is O(1) or O(log classes).
//!
//! Shape borrowed from Lustre's NRS: one mechanism ([`RequestScheduler`]) with interchangeable
//! policies behind it. Schedulers are generic over the payload `P` the driver attaches to a
//! request (the simulator stores an RPC index, the live runtime a pending I/O), and only look at
//! the [`RpcTags`] to classify it.

mod class_index;
pub mod crrn;
pub mod fifo;
pub mod mclock;
pub mod nrs;
pub mod policy;
pub mod sfq;
pub mod tbf;
pub mod themis;

// Lustre's vocabulary, under the names the schedulers use (`crate::model::JobId`).
use pfsqos_lustre::{errno, jobstats, limits, lines, model, NS_PER_S};

use crate::model::{JobId, RpcTags};

/// Cost of a request a driver enqueues without saying one: one unit, so cost-based policies
/// count requests (what Lustre's RPC-counting policies do).
pub const COST_ONE_REQUEST: u64 = 1;

/// What a [`ServiceReport`] tells the instances of a distributed policy on other servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportKind {
    /// `cost` was served to the flow here since the previous report (threshold-driven
    /// synchronization, vPFS §III-B-1): receivers delay the flow's next local request by it.
    Service,
    /// The flow started being served here (layout-driven synchronization, §III-B-2):
    /// receivers count this server among those the flow is striped over. `cost` is 0.
    FlowArrived,
    /// The flow stopped being served here (idle for the policy's idle time). `cost` is 0.
    FlowLeft,
    /// Layout mode's check of its own assumption: `cost` is all the service the flow received
    /// here since it arrived; a receiver whose own count differs too much switches the flow to
    /// threshold-driven synchronization (the paper's dynamic switch).
    LayoutAudit,
}

/// Largest cost one report may carry: 2 TiB, above any threshold a policy accepts
/// ([`sfq::SYNC_THRESHOLD_COST_MAX`]) plus a request. Anything above is hostile or broken.
pub const SERVICE_REPORT_COST_MAX: u64 = 1 << 41;

/// Bytes of a report's fixed fields in a plain encoding: kind 1, cost 8, job id length 1, NID
/// 9 (address 4, network kind 1, number 4), opcode 2, uid, gid, projid, nodemap 4 each.
const SERVICE_REPORT_FIXED_BYTES: u64 = 1 + 8 + 1 + 9 + 2 + 4 * 4;

/// One synchronization report of a distributed scheduler instance (DSFQ, vPFS) for the
/// instances of the same policy on other servers; the driver carries them, counted
/// (pfsqos-node's `CptService::take_sync_out` / `deliver_sync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceReport {
    pub kind: ReportKind,
    /// The flow's class key: its tags with every field outside the policy's classification
    /// type blanked (what [`tbf::ClassType::key`] returns). The job id is data: it is never
    /// parsed, and printed only quoted ([`crate::jobstats::quote_job_id`]).
    pub flow: RpcTags,
    /// In the policy's cost unit (bytes by default); see [`ReportKind`].
    pub cost: u64,
}

/// Why a synchronization report was refused. A refused report has no effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncRejection {
    /// Cost above [`SERVICE_REPORT_COST_MAX`].
    AbsurdCost { cost: u64 },
    /// A presence report (arrived, left) with a cost.
    CostOnPresence,
    /// The flow key sets a field the receiver's classification type does not have (it cannot
    /// be one of its flows), or a `FlowLeft` for a flow the sender never announced.
    UnknownFlow,
    /// The receiver's flow table is full ([`sfq::SFQ_FLOWS_MAX`]).
    TooManyFlows,
    /// More serving instances than [`sfq::SYNC_INSTANCES_MAX`], or an instance number
    /// beyond it.
    BadInstance,
}

impl ServiceReport {
    pub fn new(kind: ReportKind, flow: RpcTags, cost: u64) -> ServiceReport {
        ServiceReport { kind, flow, cost }
    }

    /// Size of the report in a plain field-by-field encoding (the wire crate may encode it
    /// differently); what the sync channel counts as bytes.
    pub fn encoded_len_bytes(&self) -> u64 {
        SERVICE_REPORT_FIXED_BYTES + self.flow.job.as_str().len() as u64
    }

    /// The checks that need no receiver state: cost bounds. The job id needs none: a
    /// [`JobId`] longer than 31 bytes or with a control character cannot be built (a decoder
    /// fails in `JobId::new`), so an oversized job id never reaches a scheduler.
    pub fn validate(&self) -> Result<(), SyncRejection> {
        if self.cost > SERVICE_REPORT_COST_MAX {
            return Err(SyncRejection::AbsurdCost { cost: self.cost });
        }
        if matches!(self.kind, ReportKind::FlowArrived | ReportKind::FlowLeft) && self.cost != 0 {
            return Err(SyncRejection::CostOnPresence);
        }
        Ok(())
    }

    /// The flow's job id (blank when the policy does not classify by job id).
    pub fn job(&self) -> JobId {
        self.flow.job
    }
}

/// What crossed a scheduler instance's synchronization channel (`pfsqos_node::oss::CptService`
/// counts it; `RunOutput::sync` and `summary.json` report it per server).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncCounters {
    /// Messages handed to the driver to broadcast (one per report, whatever the fan-out).
    pub broadcasts_out: u64,
    pub bytes_out: u64,
    /// Messages delivered, refused ones included.
    pub messages_in: u64,
    pub bytes_in: u64,
    /// Delivered messages refused (hostile or broken: absurd cost, unknown flow, bad sender).
    pub rejected_in: u64,
    /// Messages dropped because the outbox was full.
    pub dropped_out: u64,
}

impl std::ops::AddAssign for SyncCounters {
    fn add_assign(&mut self, other: SyncCounters) {
        self.broadcasts_out += other.broadcasts_out;
        self.bytes_out += other.bytes_out;
        self.messages_in += other.messages_in;
        self.bytes_in += other.bytes_in;
        self.rejected_in += other.rejected_in;
        self.dropped_out += other.dropped_out;
    }
}

/// Result of asking a scheduler for the next request.
#[derive(Debug, PartialEq, Eq)]
pub enum Dequeue<P> {
    /// Start serving this request now.
    Request(P),
    /// Requests are queued but none may start before `until_ns` (a token-bucket throttle). The
    /// driver must call [`RequestScheduler::on_timer`] at or after that time.
    Throttled { until_ns: u64 },
    /// Nothing may start and no timer is armed: nothing is queued, or a depth-limited
    /// policy (SFQ(D)) has D requests outstanding and waits for a completion
    /// ([`RequestScheduler::on_complete`]), after which the driver asks again.
    Empty,
}

/// A request scheduler instance (Lustre: one NRS head on one CPU partition).
pub trait RequestScheduler<P> {
    /// A request of `cost` (bytes for a bulk RPC, in the unit the policy counts) arrives at
    /// `now_ns`. Cost-blind policies (FIFO, TBF: Lustre counts RPCs) ignore it.
    fn enqueue_with_cost(&mut self, now_ns: u64, tags: &RpcTags, cost: u64, payload: P);

    /// A request whose cost is one unit ([`COST_ONE_REQUEST`]).
    fn enqueue(&mut self, now_ns: u64, tags: &RpcTags, payload: P) {
        self.enqueue_with_cost(now_ns, tags, COST_ONE_REQUEST, payload);
    }

    /// A request this instance handed out finished its service at `now_ns` (the I/O thread
    /// is free again, the device has the data): a depth-limited policy (SFQ(D)) may dispatch
    /// again, and a distributed one counts the service. `cost` is what was given at enqueue.
    fn on_complete(&mut self, _now_ns: u64, _tags: &RpcTags, _cost: u64) {}

    /// Service to report to the instances on other servers since the last call (see
    /// [`ServiceReport`]); empty for policies that do not synchronize.
    fn take_service_reports(&mut self) -> Vec<ServiceReport> {
        Vec::new()
    }

    /// What this instance has told its peers and still holds true, for a peer that lost it
    /// (it restarted): layout-mode DSFQ's presence announcements, one per flow served here.
    /// Receivers apply them idempotently. Does not change the instance; empty for policies
    /// that do not synchronize.
    fn presence_reports(&self) -> Vec<ServiceReport> {
        Vec::new()
    }

    /// A report from the instance of the same policy numbered `from_instance` (on another
    /// server). Policies that do not synchronize ignore it; a refused report has no effect.
    fn on_peer_service(
        &mut self,
        _now_ns: u64,
        _from_instance: u32,
        _report: &ServiceReport,
    ) -> Result<(), SyncRejection> {
        Ok(())
    }

    /// A service thread is free at `now_ns` and asks for work.
    fn dequeue(&mut self, now_ns: u64) -> Dequeue<P>;

    /// The throttle timer armed by an earlier [`Dequeue::Throttled`] (or moved earlier by an
    /// enqueue, see [`RequestScheduler::timer_deadline_ns`]) fires.
    fn on_timer(&mut self, now_ns: u64);

    /// When the scheduler is throttling, the absolute time its timer is armed for. Drivers
    /// re-check this after every enqueue, because an arrival can move the timer earlier.
    fn timer_deadline_ns(&self) -> Option<u64>;

    /// Number of requests queued (not yet dequeued).
    fn queued(&self) -> usize;
}

/// The tags the scheduler tests give a write of `job` from one client (10.0.0.1@tcp,
/// uid and gid 0).
#[cfg(test)]
pub(crate) fn test_write(job: &str) -> RpcTags {
    use crate::model::{LNet, NetKind, Nid, Opcode};
    RpcTags {
        job: JobId::new(job).unwrap(),
        nid: Nid::ipv4(
            10,
            0,
            0,
            1,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        ),
        opcode: Opcode::OstWrite,
        uid: 0,
        gid: 0,
        ..RpcTags::default()
    }
}
