//! Request schedulers: the data plane. A scheduler decides which queued RPC a free I/O thread
//! takes next. Called per RPC, so every operation is O(1) or O(log classes).
//!
//! Shape borrowed from Lustre's NRS: one mechanism ([`RequestScheduler`]) with interchangeable
//! policies behind it. Schedulers are generic over the payload `P` the driver attaches to a
//! request (the simulator stores an RPC index, the live runtime a pending I/O), and only look at
//! the [`RpcTags`] to classify it.

pub mod fifo;
pub mod nrs;
pub mod tbf;

use crate::model::{JobId, RpcTags};

/// Cost of a request a driver enqueues without saying one: one unit, so cost-based policies
/// count requests (what Lustre's RPC-counting policies do).
pub const COST_ONE_REQUEST: u64 = 1;

/// Service a scheduler instance gave one flow, reported to the instances of the same policy
/// on other servers. Distributed fair queuing (DSFQ, vPFS) delays a flow's requests on one
/// server by what it received elsewhere; the driver carries these between servers, counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceReport {
    pub job: JobId,
    /// Cost served since the previous report, in the policy's cost unit (bytes by default).
    pub cost: u64,
}

/// Result of asking a scheduler for the next request.
#[derive(Debug, PartialEq, Eq)]
pub enum Dequeue<P> {
    /// Start serving this request now.
    Request(P),
    /// Requests are queued but none may start before `until_ns` (a token-bucket throttle). The
    /// driver must call [`RequestScheduler::on_timer`] at or after that time.
    Throttled { until_ns: u64 },
    /// Nothing is queued.
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

    /// A report from an instance of the same policy on another server.
    fn on_peer_service(&mut self, _now_ns: u64, _report: &ServiceReport) {}

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
