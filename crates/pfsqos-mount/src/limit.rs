//! The client node's two flow controls, both the client path's code in `pfsqos_node::client`
//! (the simulator's clients run the very same):
//!
//! * [`Window`]: the per-OST window of RPCs in flight, a [`RpcWindow`] under a mutex with a
//!   [`Notify`] to wake senders waiting for a slot (no second counter);
//! * [`NodeLimiter`]: the node's outgoing limit, a [`RateLimiter`] every write RPC passes
//!   before it is sent (a shaper in front of the uplink, as Linux `tc` on a Lustre client).
//!
//! # Where the limit comes from
//!
//! A controller running in an ossd (`pfsqos ossd --policy ...`) sets a limit on a client node
//! with a `ClientWrite`; the ossd states its current limit for this client on every reply to
//! it (`pfsqos_wire::protocol::ClientLimit`), and the pool that received the reply hands it
//! to [`NodeLimiter::note`] under the ossd's address. With several ossds the node's limit is
//! the **minimum** of the limits the ossds state: the limiter shapes the node's whole uplink,
//! and each ossd's controller asks for at most its rate, so the node must honour the strictest
//! (the latest would let ossds undo each other's limits at every reply). A statement lapses
//! after [`LIMIT_LEASE`] without a reply from its ossd, so an ossd the node no longer talks to
//! (one it does not load) cannot hold it back for good; the lease is longer than any single
//! shaper hold (the largest RPC at the smallest limit), so a limited node that keeps writing
//! to the ossd never sees its limit lapse between two RPCs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pfsqos_node::client::{RateLimiter, RpcWindow};
use pfsqos_wire::protocol::{
    ClientLimit, CLIENT_LIMIT_BYTES_PER_S_MIN, IO_LEN_BYTES_MAX, OST_COUNT_MAX,
};
use tokio::sync::Notify;

/// How long an ossd's statement of a limit holds without a newer reply from that ossd.
pub const LIMIT_LEASE: Duration = Duration::from_secs(120);

const _: () = assert!(
    IO_LEN_BYTES_MAX / CLIENT_LIMIT_BYTES_PER_S_MIN < LIMIT_LEASE.as_secs(),
    "the lease outlasts the longest shaper hold"
);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One OST's window of RPCs in flight.
pub struct Window {
    window: Mutex<RpcWindow>,
    freed: Notify,
}

/// A slot of a [`Window`], given back when dropped.
pub struct WindowSlot {
    window: Arc<Window>,
}

impl Window {
    pub fn new(max_rpcs_in_flight: u32) -> Arc<Window> {
        Arc::new(Window {
            window: Mutex::new(RpcWindow::new(max_rpcs_in_flight)),
            freed: Notify::new(),
        })
    }

    /// Waits for a slot.
    pub async fn admit(self: &Arc<Window>) -> WindowSlot {
        loop {
            // Registered before the check, so a slot freed between the check and the wait
            // wakes this waiter.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if lock(&self.window).try_send() {
                return WindowSlot {
                    window: self.clone(),
                };
            }
            freed.await;
        }
    }

    #[cfg(test)]
    fn in_flight(&self) -> u32 {
        lock(&self.window).in_flight()
    }
}

impl Drop for WindowSlot {
    fn drop(&mut self) {
        lock(&self.window.window).complete();
        self.window.freed.notify_one();
    }
}

/// The limit one ossd stated and when.
#[derive(Clone, Copy, Debug)]
struct Statement {
    limit_bytes_per_s: Option<u64>,
    at: Instant,
}

struct LimiterState {
    shaper: RateLimiter,
    /// The latest statement of each ossd, by its address (at most one per OST).
    stated: BTreeMap<String, Statement>,
}

/// The node's outgoing limiter (module docs).
pub struct NodeLimiter {
    epoch: Instant,
    state: Mutex<LimiterState>,
    /// Write bytes let through so far (counted when their RPC may start).
    sent_bytes: AtomicU64,
    /// `--ignore-server-limit`: statements are dropped, the node is never limited here.
    ignore_statements: bool,
}

impl Default for NodeLimiter {
    fn default() -> Self {
        NodeLimiter::new()
    }
}

impl NodeLimiter {
    pub fn new() -> NodeLimiter {
        NodeLimiter {
            epoch: Instant::now(),
            state: Mutex::new(LimiterState {
                shaper: RateLimiter::new(),
                stated: BTreeMap::new(),
            }),
            sent_bytes: AtomicU64::new(0),
            ignore_statements: false,
        }
    }

    /// A limiter that never limits: the node's limit is applied elsewhere (`pfsqos
    /// tc-client`).
    pub fn ignoring_statements() -> NodeLimiter {
        NodeLimiter {
            ignore_statements: true,
            ..NodeLimiter::new()
        }
    }

    fn now_ns(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The limit in force: the minimum of the statements younger than the lease.
    fn effective(stated: &BTreeMap<String, Statement>, now: Instant) -> Option<u64> {
        stated
            .values()
            .filter(|s| now.saturating_duration_since(s.at) < LIMIT_LEASE)
            .filter_map(|s| s.limit_bytes_per_s)
            .min()
    }

    /// Applies the limit in force at `now` (node time `now_ns`): a change re-books the hold
    /// running, so the bytes of the last write not yet let through go at the new rate, as
    /// Linux `tc` shapes packet by packet and as the simulator's clients do.
    fn refresh(state: &mut LimiterState, now: Instant, now_ns: u64) {
        let limit = Self::effective(&state.stated, now);
        if state.shaper.limit_bytes_per_s() != limit {
            tracing::info!(limit_bytes_per_s = ?limit, "outgoing limit changed");
            state.shaper.relimit_at(now_ns, limit);
        }
    }

    /// What the ossd at `oss` said in a reply (validated on decode); unstated replies change
    /// nothing.
    pub fn note(&self, oss: &str, limit: ClientLimit) {
        self.note_at(oss, limit, Instant::now());
    }

    fn note_at(&self, oss: &str, limit: ClientLimit, now: Instant) {
        let Some(limit_bytes_per_s) = limit.stated() else {
            return;
        };
        if self.ignore_statements {
            return;
        }
        let mut st = lock(&self.state);
        let statement = Statement {
            limit_bytes_per_s,
            at: now,
        };
        match st.stated.get_mut(oss) {
            Some(s) => *s = statement,
            None => {
                // One entry per ossd address the MDS listed: bounded by the OST count.
                assert!(st.stated.len() < OST_COUNT_MAX as usize);
                st.stated.insert(oss.to_string(), statement);
            }
        }
        Self::refresh(&mut st, now, self.now_ns(now));
    }

    /// Waits until a write of `bytes` may be sent (the shaper has let the previous ones
    /// through at the limit) and books it. A waiting write books nothing until it is due
    /// ([`RateLimiter::next_start_ns`]): booking every waiting write at once would hold each
    /// to the rate in force when it arrived, so a limit a controller lowers or raises would
    /// reach the node only after the writes already queued (the sensor would see the old
    /// rate for several periods).
    pub async fn admit(&self, bytes: u64) {
        loop {
            let now = Instant::now();
            match self.try_book(bytes, now) {
                Ok(()) => break,
                Err(start_ns) => {
                    let start = self.epoch + Duration::from_nanos(start_ns);
                    tokio::time::sleep_until(start.into()).await;
                }
            }
        }
        self.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Books a write of `bytes` if the shaper lets it start at `now`, else says when it may
    /// (node time, ns since `epoch`) and books nothing.
    fn try_book(&self, bytes: u64, now: Instant) -> Result<(), u64> {
        let mut st = lock(&self.state);
        let now_ns = self.now_ns(now);
        Self::refresh(&mut st, now, now_ns);
        let start_ns = st.shaper.next_start_ns(now_ns);
        if start_ns > now_ns {
            return Err(start_ns);
        }
        let booked_ns = st.shaper.start_ns(now_ns, bytes);
        assert_eq!(booked_ns, now_ns, "a write due now starts now");
        Ok(())
    }

    /// The limit in force now (`None`: unlimited).
    pub fn limit_bytes_per_s(&self) -> Option<u64> {
        let mut st = lock(&self.state);
        let now = Instant::now();
        Self::refresh(&mut st, now, self.now_ns(now));
        st.shaper.limit_bytes_per_s()
    }

    /// Write bytes let through so far.
    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strictest_fresh_statement_wins() {
        let l = NodeLimiter::new();
        let t0 = Instant::now();
        assert_eq!(l.limit_bytes_per_s(), None);
        l.note_at("a:1", ClientLimit::BytesPerS(8 << 20), t0);
        l.note_at("b:1", ClientLimit::BytesPerS(4 << 20), t0);
        l.note_at("c:1", ClientLimit::Unlimited, t0);
        l.note_at("d:1", ClientLimit::Unstated, t0);
        let st = |at| NodeLimiter::effective(&lock(&l.state).stated, at);
        assert_eq!(st(t0), Some(4 << 20));
        // b lifts its limit: a's holds.
        l.note_at("b:1", ClientLimit::Unlimited, t0);
        assert_eq!(st(t0), Some(8 << 20));
        // a's statement lapses after the lease without a reply from a.
        assert_eq!(
            st(t0 + LIMIT_LEASE - Duration::from_nanos(1)),
            Some(8 << 20)
        );
        assert_eq!(st(t0 + LIMIT_LEASE), None);
    }

    /// `--ignore-server-limit`: every statement is dropped, every write goes at once.
    #[test]
    fn a_limiter_ignoring_statements_never_limits() {
        let l = NodeLimiter::ignoring_statements();
        let t0 = l.epoch + Duration::from_secs(1);
        l.note_at("a:1", ClientLimit::BytesPerS(1 << 20), t0);
        assert_eq!(l.limit_bytes_per_s(), None);
        for _ in 0..4 {
            assert_eq!(l.try_book(1 << 20, t0), Ok(()));
        }
    }

    /// Waiting writes book nothing ahead: a limit raised while they wait applies to each of
    /// them at once, not after holds booked at the old rate.
    #[test]
    fn waiting_writes_take_a_new_limit_at_once() {
        let l = NodeLimiter::new();
        let t0 = l.epoch + Duration::from_secs(1);
        let t0_ns = l.now_ns(t0);
        l.note_at("a:1", ClientLimit::BytesPerS(1 << 20), t0);
        assert_eq!(l.try_book(1 << 20, t0), Ok(()));
        // Three more writes arrive: each is told to wait for the first one's hold (1 s), and
        // none books a later slot.
        for _ in 0..3 {
            assert_eq!(l.try_book(1 << 20, t0), Err(t0_ns + 1_000_000_000));
        }
        // The limit rises 1024-fold at t0 + 0.5 s: the half of the first write not yet let
        // through goes at the new rate (0.5 ms, `RateLimiter::relimit_at`), and the three
        // waiting writes then go about 1 ms apart, not 1 s.
        let t1 = t0 + Duration::from_millis(500);
        l.note_at("a:1", ClientLimit::BytesPerS(1 << 30), t1);
        let t1_ns = l.now_ns(t1);
        let half_hold_ns = 1_000_000_000 / 2048 + 1;
        assert!(
            matches!(l.try_book(1 << 20, t1), Err(n) if n > t1_ns && n - t1_ns <= half_hold_ns)
        );
        let due = t1 + Duration::from_nanos(half_hold_ns);
        let due_ns = l.now_ns(due);
        assert_eq!(l.try_book(1 << 20, due), Ok(()));
        let hold_ns = 1_000_000_000 / 1024 + 1;
        assert!(matches!(l.try_book(1 << 20, due), Err(n) if n - due_ns <= hold_ns));
    }

    #[tokio::test]
    async fn window_slots_are_given_back_and_wake_a_waiter() {
        let w = Window::new(1);
        let a = w.admit().await;
        assert_eq!(w.in_flight(), 1);
        let waiter = {
            let w = w.clone();
            tokio::spawn(async move { w.admit().await })
        };
        drop(a);
        let b = waiter.await.unwrap();
        assert_eq!(w.in_flight(), 1);
        drop(b);
        assert_eq!(w.in_flight(), 0);
    }
}
