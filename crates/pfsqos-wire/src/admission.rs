//! Server-side admission of connections, shared by the ossd and the MDS.
//!
//! A connection passes two budgets. While it is still in the handshake (unauthenticated) it
//! holds a slot of a small pre-auth budget, at most [`HANDSHAKES_PER_ADDR_MAX`] of them per
//! peer address, for at most [`SERVER_HANDSHAKE_TIMEOUT`]; only once authenticated does it take
//! one of the `connections_max` slots. So peers without the key, however many sockets they
//! open and hold, can fill only the pre-auth budget (and from one address only its share of
//! it), never the slots authenticated clients need, and each such socket ends within the
//! handshake deadline. Handshake frames are capped at their real size before their body is
//! read (see [`crate::conn::server_handshake`]), so an unauthenticated socket holds a few KiB
//! at most.
//!
//! Refusals are counted ([`AdmissionCounters`], exported by the daemons' metrics) and their
//! log lines are rate-limited ([`LogLimiter`]): a peer opening thousands of sockets a second
//! must not fill the log.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a server lets a peer take over the handshake (two round trips on a LAN take well
/// under a millisecond; this bounds how long an idle unauthenticated socket holds a slot).
pub const SERVER_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// Connections in the handshake at once, over all peers.
pub const HANDSHAKES_MAX: usize = 64;

/// Connections in the handshake at once from one peer address. A client node opens a few
/// connections per OST at mount time (the pools), so this is well above one node's need.
pub const HANDSHAKES_PER_ADDR_MAX: usize = 16;

/// Refusal warnings logged per [`LOG_WINDOW`]; the rest are counted and summarised.
pub const LOG_LINES_PER_WINDOW: u64 = 5;

/// The window of [`LOG_LINES_PER_WINDOW`].
pub const LOG_WINDOW: Duration = Duration::from_secs(10);

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// [`HANDSHAKES_MAX`] connections were in the handshake.
    HandshakeBudget,
    /// [`HANDSHAKES_PER_ADDR_MAX`] connections from this address were in the handshake.
    HandshakesPerAddress,
    /// `connections_max` authenticated connections were open.
    Connections,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::HandshakeBudget => "too many connections in the handshake",
            Refusal::HandshakesPerAddress => {
                "too many connections in the handshake from this address"
            }
            Refusal::Connections => "too many authenticated connections",
        })
    }
}

/// What admission did so far (monotonic counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmissionCounters {
    pub refused_handshake_budget: u64,
    pub refused_handshakes_per_address: u64,
    pub refused_connections: u64,
    /// Handshakes that did not end authenticated within [`SERVER_HANDSHAKE_TIMEOUT`].
    pub handshakes_timed_out: u64,
    /// Refusal log lines suppressed by the rate limit.
    pub log_lines_suppressed: u64,
}

impl AdmissionCounters {
    /// The counters by name, for parameter files and metrics.
    pub fn fields(&self) -> [(&'static str, u64); 5] {
        [
            ("refused_handshake_budget", self.refused_handshake_budget),
            (
                "refused_handshakes_per_address",
                self.refused_handshakes_per_address,
            ),
            ("refused_connections", self.refused_connections),
            ("handshakes_timed_out", self.handshakes_timed_out),
            ("log_lines_suppressed", self.log_lines_suppressed),
        ]
    }
}

/// The two budgets of a server.
pub struct Admission {
    handshakes: Arc<Semaphore>,
    per_addr: Mutex<HashMap<IpAddr, usize>>,
    per_addr_max: usize,
    connections: Arc<Semaphore>,
    refused_handshake_budget: AtomicU64,
    refused_handshakes_per_address: AtomicU64,
    refused_connections: AtomicU64,
    handshakes_timed_out: AtomicU64,
    log: LogLimiter,
}

/// A slot of the pre-auth budget; released when dropped (or turned into a
/// [`ConnectionSlot`]).
pub struct HandshakeSlot {
    admission: Arc<Admission>,
    addr: IpAddr,
    _permit: OwnedSemaphorePermit,
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        let mut m = self
            .admission
            .per_addr
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let n = m.get_mut(&self.addr).expect("a slot's address is counted");
        assert!(*n > 0, "per-address handshake count went below zero");
        *n -= 1;
        if *n == 0 {
            m.remove(&self.addr);
        }
    }
}

/// A slot of the authenticated budget, held while the connection lives.
pub struct ConnectionSlot {
    _permit: OwnedSemaphorePermit,
}

impl Admission {
    pub fn new(connections_max: usize, handshakes_max: usize, per_addr_max: usize) -> Arc<Self> {
        assert!(connections_max > 0 && handshakes_max > 0 && per_addr_max > 0);
        Arc::new(Admission {
            handshakes: Arc::new(Semaphore::new(handshakes_max)),
            per_addr: Mutex::new(HashMap::new()),
            per_addr_max,
            connections: Arc::new(Semaphore::new(connections_max)),
            refused_handshake_budget: AtomicU64::new(0),
            refused_handshakes_per_address: AtomicU64::new(0),
            refused_connections: AtomicU64::new(0),
            handshakes_timed_out: AtomicU64::new(0),
            log: LogLimiter::new(LOG_LINES_PER_WINDOW, LOG_WINDOW),
        })
    }

    /// The defaults: [`HANDSHAKES_MAX`] and [`HANDSHAKES_PER_ADDR_MAX`].
    pub fn with_connections_max(connections_max: usize) -> Arc<Self> {
        Admission::new(connections_max, HANDSHAKES_MAX, HANDSHAKES_PER_ADDR_MAX)
    }

    /// A slot for a newly accepted connection from `addr` to do its handshake in.
    pub fn handshake(self: &Arc<Self>, addr: IpAddr) -> Result<HandshakeSlot, Refusal> {
        let mut m = self.per_addr.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.get(&addr).copied().unwrap_or(0);
        if n >= self.per_addr_max {
            self.refused_handshakes_per_address
                .fetch_add(1, Ordering::Relaxed);
            return Err(Refusal::HandshakesPerAddress);
        }
        let Ok(permit) = self.handshakes.clone().try_acquire_owned() else {
            self.refused_handshake_budget
                .fetch_add(1, Ordering::Relaxed);
            return Err(Refusal::HandshakeBudget);
        };
        m.insert(addr, n + 1);
        Ok(HandshakeSlot {
            admission: self.clone(),
            addr,
            _permit: permit,
        })
    }

    /// Trades a handshake slot for a connection slot once the peer has authenticated.
    pub fn authenticated(&self, slot: HandshakeSlot) -> Result<ConnectionSlot, Refusal> {
        drop(slot);
        match self.connections.clone().try_acquire_owned() {
            Ok(p) => Ok(ConnectionSlot { _permit: p }),
            Err(_) => {
                self.refused_connections.fetch_add(1, Ordering::Relaxed);
                Err(Refusal::Connections)
            }
        }
    }

    /// Counts a handshake that ran out of time.
    pub fn handshake_timed_out(&self) {
        self.handshakes_timed_out.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a refusal may be logged now; see [`LogLimiter::allow`].
    pub fn log_allowed(&self) -> Option<u64> {
        self.log.allow(Instant::now())
    }

    pub fn counters(&self) -> AdmissionCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        AdmissionCounters {
            refused_handshake_budget: get(&self.refused_handshake_budget),
            refused_handshakes_per_address: get(&self.refused_handshakes_per_address),
            refused_connections: get(&self.refused_connections),
            handshakes_timed_out: get(&self.handshakes_timed_out),
            log_lines_suppressed: self.log.suppressed_total(),
        }
    }
}

/// At most `lines` log lines per `window`; the others are counted.
pub struct LogLimiter {
    lines: u64,
    window: Duration,
    state: Mutex<LogWindow>,
    suppressed_total: AtomicU64,
}

struct LogWindow {
    start: Option<Instant>,
    logged: u64,
    suppressed: u64,
}

impl LogLimiter {
    pub fn new(lines: u64, window: Duration) -> Self {
        LogLimiter {
            lines,
            window,
            state: Mutex::new(LogWindow {
                start: None,
                logged: 0,
                suppressed: 0,
            }),
            suppressed_total: AtomicU64::new(0),
        }
    }

    /// `Some(n)` if a line may be logged at `now`, `n` being how many were suppressed since
    /// the last line logged (to say so in that line); `None` if this one is suppressed.
    pub fn allow(&self, now: Instant) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let expired = s
            .start
            .is_none_or(|start| now.saturating_duration_since(start) >= self.window);
        if expired {
            s.start = Some(now);
            s.logged = 0;
        }
        if s.logged < self.lines {
            s.logged += 1;
            Some(std::mem::take(&mut s.suppressed))
        } else {
            s.suppressed += 1;
            self.suppressed_total.fetch_add(1, Ordering::Relaxed);
            None
        }
    }

    pub fn suppressed_total(&self) -> u64 {
        self.suppressed_total.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    /// Idle handshakes from one address fill only that address's share; another address and
    /// authenticated connections are unaffected; a released slot is reusable.
    #[test]
    fn one_address_cannot_take_the_pre_auth_budget() {
        let a = Admission::new(4, 8, 3);
        let held: Vec<_> = (0..3).map(|_| a.handshake(ip(2)).unwrap()).collect();
        for _ in 0..100 {
            assert_eq!(
                a.handshake(ip(2)).err(),
                Some(Refusal::HandshakesPerAddress)
            );
        }
        let other = a.handshake(ip(1)).expect("another address gets a slot");
        let conn = a.authenticated(other).expect("a connection slot");
        assert_eq!(a.counters().refused_handshakes_per_address, 100);
        drop(held);
        assert!(a.per_addr.lock().unwrap().is_empty());
        let _again: Vec<_> = (0..3).map(|_| a.handshake(ip(2)).unwrap()).collect();
        drop(conn);
    }

    /// The global pre-auth budget and the connection budget are separate: a full pre-auth
    /// budget refuses handshakes, not authenticated connections, and the other way round.
    #[test]
    fn budgets_are_separate() {
        let a = Admission::new(2, 3, 3);
        let held: Vec<_> = (1..=3).map(|i| a.handshake(ip(i)).unwrap()).collect();
        assert_eq!(a.handshake(ip(9)).err(), Some(Refusal::HandshakeBudget));
        let mut held = held.into_iter();
        let c1 = a.authenticated(held.next().unwrap()).unwrap();
        let c2 = a.authenticated(held.next().unwrap()).unwrap();
        assert_eq!(
            a.authenticated(held.next().unwrap()).err(),
            Some(Refusal::Connections)
        );
        // All handshake slots are free again although two connections are open.
        let _h: Vec<_> = (1..=3).map(|i| a.handshake(ip(i)).unwrap()).collect();
        drop((c1, c2));
        let c = a.counters();
        assert_eq!((c.refused_handshake_budget, c.refused_connections), (1, 1));
    }

    #[test]
    fn log_lines_are_rate_limited_and_the_suppressed_counted() {
        let l = LogLimiter::new(2, Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(l.allow(t0), Some(0));
        assert_eq!(l.allow(t0), Some(0));
        for _ in 0..1000 {
            assert_eq!(l.allow(t0 + Duration::from_secs(1)), None);
        }
        assert_eq!(l.suppressed_total(), 1000);
        assert_eq!(l.allow(t0 + Duration::from_secs(10)), Some(1000));
        assert_eq!(l.allow(t0 + Duration::from_secs(11)), Some(0));
        assert_eq!(l.allow(t0 + Duration::from_secs(12)), None);
    }
}
