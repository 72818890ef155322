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

use crate::model::RpcTags;

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
    /// A request arrives at `now_ns`.
    fn enqueue(&mut self, now_ns: u64, tags: &RpcTags, payload: P);

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
