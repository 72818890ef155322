//! Server-side admission of connections, shared by the ossd, the MDS and the coordinator.
//!
//! A connection passes two budgets. While it is still in the handshake (unauthenticated) it
//! holds a slot of a small pre-auth budget for at most [`SERVER_HANDSHAKE_TIMEOUT`]; only once
//! authenticated does it take one of the `connections_max` slots. So peers without the key,
//! however many sockets they open and hold, can fill only the pre-auth budget, never the
//! slots authenticated clients need. Handshake frames are capped at their real size before
//! their body is read (see [`crate::conn::server_handshake`]), so an unauthenticated socket
//! holds a few KiB at most.
//!
//! Flooding the handshake is never the only way in; three rules see to that:
//!
//! * **Per source.** A source is an IPv4 address or an IPv6 /64 (one host usually holds a whole
//!   /64, so keying by full IPv6 address would give it 2^64 shares); IPv4-mapped IPv6
//!   addresses count as their IPv4 address. One source holds at most `per_addr_max` slots.
//! * **Fair eviction.** When the pre-auth budget is full, a newcomer from a source holding
//!   fewer slots than the source holding the most takes that source's oldest slot (whose
//!   connection is closed at once) instead of being refused. A flood from N sources thus
//!   holds at most its fair share against a client with one connection: a client in the
//!   handshake is evicted only by a source holding no more than it does, and then only after
//!   every older slot of the largest holders. Random early drop as sshd's `MaxStartups` does
//!   refuses legitimate newcomers with the same probability as the flood's; eviction by
//!   share does not.
//! * **A reserved share for known sources.** Sources that authenticated before (the last
//!   [`KNOWN_SOURCES_MAX`], in memory) have [`HANDSHAKES_KNOWN_MAX`] slots of their own, which
//!   unknown sources can neither take nor evict. An attacker without the key never becomes
//!   known.
//!
//! Refusals and evictions are counted ([`AdmissionCounters`], exported by the daemons'
//! metrics) and their log lines are rate-limited ([`LogLimiter`]): a peer opening thousands of
//! sockets a second must not fill the log.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::conn::ConnError;

/// How long a server lets a peer take over the handshake (two round trips on a LAN take well
/// under a millisecond; this bounds how long an idle unauthenticated socket holds a slot).
pub const SERVER_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// Connections in the handshake at once from unknown sources (the shared pre-auth budget).
pub const HANDSHAKES_MAX: usize = 64;

/// Connections in the handshake at once from one source. A client node opens a few
/// connections per OST at mount time (the pools), so this is well above one node's need.
pub const HANDSHAKES_PER_ADDR_MAX: usize = 16;

/// Pre-auth slots reserved for sources that authenticated before; unknown sources cannot use
/// or evict them.
pub const HANDSHAKES_KNOWN_MAX: usize = 32;

/// Sources remembered as having authenticated (least recently authenticated forgotten first).
pub const KNOWN_SOURCES_MAX: usize = 4096;

/// Refusal warnings logged per [`LOG_WINDOW`]; the rest are counted and summarised.
pub const LOG_LINES_PER_WINDOW: u64 = 5;

/// The window of [`LOG_LINES_PER_WINDOW`].
pub const LOG_WINDOW: Duration = Duration::from_secs(10);

/// What admission counts as one source: an IPv4 address or an IPv6 /64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    V4(Ipv4Addr),
    /// The upper 64 bits of an IPv6 address.
    V6Prefix64(u64),
}

impl Source {
    pub fn of(ip: IpAddr) -> Source {
        match ip {
            IpAddr::V4(a) => Source::V4(a),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Source::V4(v4),
                None => Source::V6Prefix64((u128::from(a) >> 64) as u64),
            },
        }
    }
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The pre-auth budget was full and no source held more slots than this one.
    HandshakeBudget,
    /// [`HANDSHAKES_PER_ADDR_MAX`] connections from this source were in the handshake.
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
    /// Handshakes closed to make room for a source holding fewer slots.
    pub handshakes_evicted: u64,
    /// Refusal log lines suppressed by the rate limit.
    pub log_lines_suppressed: u64,
}

impl AdmissionCounters {
    /// The counters by name, for parameter files and metrics.
    pub fn fields(&self) -> [(&'static str, u64); 6] {
        [
            ("refused_handshake_budget", self.refused_handshake_budget),
            (
                "refused_handshakes_per_address",
                self.refused_handshakes_per_address,
            ),
            ("refused_connections", self.refused_connections),
            ("handshakes_timed_out", self.handshakes_timed_out),
            ("handshakes_evicted", self.handshakes_evicted),
            ("log_lines_suppressed", self.log_lines_suppressed),
        ]
    }
}

/// Which budget a pre-auth slot was taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pool {
    Shared,
    Known,
}

struct Held {
    pool: Pool,
    evict: oneshot::Sender<()>,
}

/// The pre-auth slots held, by source; `seq` orders them by age.
#[derive(Default)]
struct Table {
    seq: u64,
    shared_used: usize,
    known_used: usize,
    by_source: HashMap<Source, BTreeMap<u64, Held>>,
    /// Sources that authenticated, with the `seq` of their last authentication.
    known: HashMap<Source, u64>,
}

impl Table {
    fn shared_held(&self, source: &Source) -> usize {
        self.by_source
            .get(source)
            .map_or(0, |m| m.values().filter(|h| h.pool == Pool::Shared).count())
    }

    /// The oldest shared slot of the source holding the most shared slots (ties: the source
    /// whose such slot is oldest), with that source's count.
    fn eviction_candidate(&self) -> Option<(Source, u64, usize)> {
        let mut best: Option<(Source, u64, usize)> = None;
        for (source, slots) in &self.by_source {
            let mut shared = slots.iter().filter(|(_, h)| h.pool == Pool::Shared);
            let Some((&oldest, _)) = shared.next() else {
                continue;
            };
            let n = 1 + shared.count();
            let better = match best {
                None => true,
                Some((_, best_oldest, best_n)) => {
                    n > best_n || (n == best_n && oldest < best_oldest)
                }
            };
            if better {
                best = Some((*source, oldest, n));
            }
        }
        best
    }

    fn remove(&mut self, source: &Source, seq: u64) -> Option<Held> {
        let slots = self.by_source.get_mut(source)?;
        let held = slots.remove(&seq)?;
        if slots.is_empty() {
            self.by_source.remove(source);
        }
        match held.pool {
            Pool::Shared => {
                assert!(
                    self.shared_used > 0,
                    "shared pre-auth count went below zero"
                );
                self.shared_used -= 1;
            }
            Pool::Known => {
                assert!(self.known_used > 0, "known pre-auth count went below zero");
                self.known_used -= 1;
            }
        }
        Some(held)
    }
}

/// The two budgets of a server.
pub struct Admission {
    table: Mutex<Table>,
    shared_max: usize,
    known_max: usize,
    per_addr_max: usize,
    connections: Arc<Semaphore>,
    refused_handshake_budget: AtomicU64,
    refused_handshakes_per_address: AtomicU64,
    refused_connections: AtomicU64,
    handshakes_timed_out: AtomicU64,
    handshakes_evicted: AtomicU64,
    log: LogLimiter,
}

/// A slot of the pre-auth budget; released when dropped (or turned into a
/// [`ConnectionSlot`]). Its connection must end when [`HandshakeSlot::eviction`] resolves.
pub struct HandshakeSlot {
    admission: Arc<Admission>,
    source: Source,
    seq: u64,
    evicted: Option<oneshot::Receiver<()>>,
}

impl HandshakeSlot {
    /// The source the slot is held for.
    pub fn source(&self) -> Source {
        self.source
    }

    /// Resolves once admission has given this slot to another source; the caller then closes
    /// the connection. Taken once (the slot itself moves into the handshake's admit step).
    pub fn eviction(&mut self) -> Eviction {
        Eviction(self.evicted.take())
    }

    /// Whether the slot was evicted (false once [`HandshakeSlot::eviction`] was taken).
    pub fn is_evicted(&mut self) -> bool {
        self.evicted
            .as_mut()
            .is_some_and(|rx| rx.try_recv().is_ok())
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        let mut t = self
            .admission
            .table
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Absent only if it was evicted (the evicting newcomer removed it).
        t.remove(&self.source, self.seq);
    }
}

/// See [`HandshakeSlot::eviction`].
pub struct Eviction(Option<oneshot::Receiver<()>>);

impl Eviction {
    /// Resolves when the slot is evicted; never if it is released any other way.
    pub async fn wait(self) {
        if let Some(rx) = self.0 {
            if rx.await.is_ok() {
                return;
            }
        }
        std::future::pending::<()>().await
    }
}

/// A slot of the authenticated budget, held while the connection lives.
pub struct ConnectionSlot {
    _permit: OwnedSemaphorePermit,
}

impl Admission {
    /// `handshakes_max` shared pre-auth slots, `per_addr_max` of them per source, and
    /// [`HANDSHAKES_KNOWN_MAX`] reserved for known sources.
    pub fn new(connections_max: usize, handshakes_max: usize, per_addr_max: usize) -> Arc<Self> {
        Admission::with_known(
            connections_max,
            handshakes_max,
            per_addr_max,
            HANDSHAKES_KNOWN_MAX,
        )
    }

    pub fn with_known(
        connections_max: usize,
        handshakes_max: usize,
        per_addr_max: usize,
        known_max: usize,
    ) -> Arc<Self> {
        assert!(connections_max > 0 && handshakes_max > 0 && per_addr_max > 0);
        Arc::new(Admission {
            table: Mutex::new(Table::default()),
            shared_max: handshakes_max,
            known_max,
            per_addr_max,
            connections: Arc::new(Semaphore::new(connections_max)),
            refused_handshake_budget: AtomicU64::new(0),
            refused_handshakes_per_address: AtomicU64::new(0),
            refused_connections: AtomicU64::new(0),
            handshakes_timed_out: AtomicU64::new(0),
            handshakes_evicted: AtomicU64::new(0),
            log: LogLimiter::new(LOG_LINES_PER_WINDOW, LOG_WINDOW),
        })
    }

    /// The defaults: [`HANDSHAKES_MAX`], [`HANDSHAKES_PER_ADDR_MAX`], [`HANDSHAKES_KNOWN_MAX`].
    pub fn with_connections_max(connections_max: usize) -> Arc<Self> {
        Admission::new(connections_max, HANDSHAKES_MAX, HANDSHAKES_PER_ADDR_MAX)
    }

    /// A slot for a newly accepted connection from `addr` to do its handshake in: from the
    /// known sources' share if `addr` is known and it has room, else from the shared budget,
    /// else one taken from the source holding the most shared slots if that is more than this
    /// source holds.
    pub fn handshake(self: &Arc<Self>, addr: IpAddr) -> Result<HandshakeSlot, Refusal> {
        let source = Source::of(addr);
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let held = t.by_source.get(&source).map_or(0, BTreeMap::len);
        if held >= self.per_addr_max {
            self.refused_handshakes_per_address
                .fetch_add(1, Ordering::Relaxed);
            return Err(Refusal::HandshakesPerAddress);
        }
        let pool = if t.known.contains_key(&source) && t.known_used < self.known_max {
            Pool::Known
        } else if t.shared_used < self.shared_max {
            Pool::Shared
        } else {
            let mine = t.shared_held(&source);
            match t.eviction_candidate() {
                Some((victim, seq, n)) if n > mine => {
                    assert_ne!(victim, source, "a source never evicts itself");
                    let evicted = t.remove(&victim, seq).expect("the candidate is held");
                    // The receiver may be gone already (its connection ending): nothing to do.
                    let _ = evicted.evict.send(());
                    self.handshakes_evicted.fetch_add(1, Ordering::Relaxed);
                    Pool::Shared
                }
                _ => {
                    self.refused_handshake_budget
                        .fetch_add(1, Ordering::Relaxed);
                    return Err(Refusal::HandshakeBudget);
                }
            }
        };
        match pool {
            Pool::Shared => t.shared_used += 1,
            Pool::Known => t.known_used += 1,
        }
        assert!(t.shared_used <= self.shared_max && t.known_used <= self.known_max);
        t.seq += 1;
        let seq = t.seq;
        let (tx, rx) = oneshot::channel();
        t.by_source
            .entry(source)
            .or_default()
            .insert(seq, Held { pool, evict: tx });
        Ok(HandshakeSlot {
            admission: self.clone(),
            source,
            seq,
            evicted: Some(rx),
        })
    }

    /// Trades a handshake slot for a connection slot once the peer has authenticated, and
    /// remembers its source as known.
    pub fn authenticated(&self, slot: HandshakeSlot) -> Result<ConnectionSlot, Refusal> {
        let source = slot.source;
        drop(slot);
        {
            let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
            t.seq += 1;
            let seq = t.seq;
            if !t.known.contains_key(&source) && t.known.len() >= KNOWN_SOURCES_MAX {
                let oldest = t
                    .known
                    .iter()
                    .min_by_key(|(_, &s)| s)
                    .map(|(k, _)| *k)
                    .expect("a full set is not empty");
                t.known.remove(&oldest);
            }
            t.known.insert(source, seq);
            assert!(t.known.len() <= KNOWN_SOURCES_MAX);
        }
        match self.connections.clone().try_acquire_owned() {
            Ok(p) => Ok(ConnectionSlot { _permit: p }),
            Err(_) => {
                self.refused_connections.fetch_add(1, Ordering::Relaxed);
                Err(Refusal::Connections)
            }
        }
    }

    /// Runs a connection's handshake `fut` (which trades `slot` through
    /// [`Admission::authenticated`]) for at most [`SERVER_HANDSHAKE_TIMEOUT`], ending it with
    /// [`ConnError::Evicted`] if the slot is evicted first.
    pub async fn run_handshake<T>(
        &self,
        eviction: Eviction,
        fut: impl std::future::Future<Output = Result<T, ConnError>>,
    ) -> Result<T, ConnError> {
        tokio::select! {
            r = tokio::time::timeout(SERVER_HANDSHAKE_TIMEOUT, fut) => match r {
                Ok(r) => r,
                Err(_) => {
                    self.handshake_timed_out();
                    Err(ConnError::Timeout)
                }
            },
            () = eviction.wait() => Err(ConnError::Evicted),
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
            handshakes_evicted: get(&self.handshakes_evicted),
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
        assert!(a.table.lock().unwrap().by_source.is_empty());
        let _again: Vec<_> = (0..3).map(|_| a.handshake(ip(2)).unwrap()).collect();
        drop(conn);
    }

    /// The global pre-auth budget and the connection budget are separate: a full pre-auth
    /// budget refuses handshakes, not authenticated connections, and the other way round.
    #[test]
    fn budgets_are_separate() {
        let a = Admission::with_known(2, 3, 3, 1);
        let held: Vec<_> = (0..3).map(|_| a.handshake(ip(1)).unwrap()).collect();
        // The only holder is this source itself: nothing to evict.
        assert_eq!(
            a.handshake(ip(1)).err(),
            Some(Refusal::HandshakesPerAddress)
        );
        let mut held = held.into_iter();
        let c1 = a.authenticated(held.next().unwrap()).unwrap();
        let c2 = a.authenticated(held.next().unwrap()).unwrap();
        assert_eq!(
            a.authenticated(held.next().unwrap()).err(),
            Some(Refusal::Connections)
        );
        // All handshake slots are free again although two connections are open.
        let _h: Vec<_> = (0..3).map(|_| a.handshake(ip(2)).unwrap()).collect();
        assert_eq!(
            a.handshake(ip(2)).err(),
            Some(Refusal::HandshakesPerAddress)
        );
        drop((c1, c2));
        let c = a.counters();
        assert_eq!((c.refused_connections, c.handshakes_evicted), (1, 0));
    }

    /// A flood that renews its sockets as they close, 300 from 20 sources (15 each, under the
    /// per-source cap), cannot keep a newcomer out of the shared budget nor evict it while it
    /// holds one slot: every eviction takes a slot of a larger holder.
    #[test]
    fn a_flood_from_many_sources_cannot_lock_out_a_newcomer() {
        let a = Admission::with_connections_max(64);
        let mut flood: Vec<HandshakeSlot> = Vec::new();
        let open = |flood: &mut Vec<HandshakeSlot>, i: usize| {
            if let Ok(s) = a.handshake(ip(2 + (i % 20) as u8)) {
                flood.push(s);
            }
            // The attacker's evicted sockets are closed by the server.
            flood.retain_mut(|s| !s.is_evicted());
        };
        for i in 0..300 {
            open(&mut flood, i);
        }
        assert_eq!(flood.len(), HANDSHAKES_MAX);
        let mut newcomer = a.handshake(ip(1)).expect("a newcomer gets a slot");
        for i in 0..3000 {
            open(&mut flood, i);
            assert!(!newcomer.is_evicted(), "evicted after {i} arrivals");
        }
        let t = a.table.lock().unwrap();
        assert_eq!(t.shared_used, HANDSHAKES_MAX);
        // The flood's sources hold equal shares to within one slot.
        let shares: Vec<usize> = (2..22).map(|i| t.shared_held(&Source::of(ip(i)))).collect();
        let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
        assert!(hi - lo <= 1, "{shares:?}");
        drop(t);
        assert!(a.counters().handshakes_evicted > 0);
    }

    /// Sources that authenticated before have a share of their own, which unknown sources can
    /// neither take nor evict; known sources beyond it use the shared budget as others do.
    #[test]
    fn known_sources_have_a_reserved_share() {
        let a = Admission::with_known(8, 4, 4, 2);
        let first = a.handshake(ip(1)).unwrap();
        let _conn = a.authenticated(first).unwrap();
        // Four unknown sources, one slot each, fill the shared budget.
        let _flood: Vec<_> = (2..6).map(|i| a.handshake(ip(i)).unwrap()).collect();
        assert_eq!(a.handshake(ip(2)).err(), Some(Refusal::HandshakeBudget));
        let k1 = a.handshake(ip(1)).expect("a known source's reserved slot");
        let _k2 = a.handshake(ip(1)).expect("a known source's reserved slot");
        assert_eq!(a.counters().handshakes_evicted, 0);
        // Unknown sources cannot use a freed reserved slot.
        drop(k1);
        assert_eq!(a.handshake(ip(3)).err(), Some(Refusal::HandshakeBudget));
        let _k3 = a.handshake(ip(1)).expect("the freed reserved slot");
        assert_eq!(a.counters().handshakes_evicted, 0);
        // Beyond its reserved share a known source is a newcomer like any other: it takes a
        // slot of a larger holder.
        let _k4 = a.handshake(ip(1)).expect("a shared slot, by eviction");
        assert_eq!(a.counters().handshakes_evicted, 1);
    }

    /// An IPv6 host's /64 is one source; IPv4-mapped addresses count as their IPv4 address.
    #[test]
    fn an_ipv6_64_is_one_source() {
        let a = Admission::new(8, 64, 4);
        let v6 =
            |host: u64, net: u64| IpAddr::from(((net as u128) << 64 | host as u128).to_be_bytes());
        let _held: Vec<_> = (1..=4)
            .map(|h| a.handshake(v6(h, 0x2001_0db8)).unwrap())
            .collect();
        assert_eq!(
            a.handshake(v6(99, 0x2001_0db8)).err(),
            Some(Refusal::HandshakesPerAddress)
        );
        assert!(a.handshake(v6(1, 0x2001_0db9)).is_ok());
        let mapped: IpAddr = "::ffff:127.0.0.7".parse().unwrap();
        assert_eq!(Source::of(mapped), Source::of(ip(7)));
    }

    /// An evicted slot ends its connection's handshake at once, counted.
    #[tokio::test]
    async fn an_evicted_handshake_ends_at_once() {
        let a = Admission::with_known(4, 2, 2, 1);
        let mut victim = a.handshake(ip(2)).unwrap();
        let _other = a.handshake(ip(2)).unwrap();
        let eviction = victim.eviction();
        let handshake = a.run_handshake(eviction, async {
            std::future::pending::<()>().await;
            Ok::<(), ConnError>(())
        });
        let _newcomer = a
            .handshake(ip(1))
            .expect("evicts the larger holder's oldest");
        assert!(matches!(handshake.await, Err(ConnError::Evicted)));
        assert_eq!(a.counters().handshakes_evicted, 1);
        drop(victim);
        assert_eq!(a.table.lock().unwrap().shared_used, 2);
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
