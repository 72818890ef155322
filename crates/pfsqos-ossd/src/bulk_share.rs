//! Per-client shares of the ossd's bulk budget (one stalled client could stop all
//! writes to an OSS).
//!
//! The OSS-wide budget (`OssdConfig::in_flight_bytes_max`) bounds the bulk bytes the ossd
//! holds. Two kinds of holding differ in who decides when they end:
//! * **client-paced**: a write whose bulk is still arriving (it ends when the sender has sent
//!   it), and a read or other request until its reply has been written to the socket (it ends
//!   when the peer reads). A client that stops sending or reading keeps these for as long as
//!   the timeouts allow, on as many connections as it opens;
//! * **server-paced**: a write whose bulk has all arrived, queued in an NRS head or being
//!   written. The ossd ends it at the device's pace, whatever the client does.
//!
//! Every client (here: a peer IP address, see below) has a **share** of client-paced holding
//! (`OssdConfig::bulk_share_per_client_bytes`, default a quarter of the budget): a request
//! reserves its announced length from its client's share before it reserves anything from
//! the OSS-wide budget, and gives it back when its client-paced part ends (a write once its
//! bulk has arrived, anything else once its reply is written). A request that does not fit
//! waits, holding nothing of the OSS-wide budget, until the client's earlier requests give
//! back. So the clients that stall can hold at most one share each, and the rest of the
//! budget stays for the others; server-paced holding is not limited per client, so one
//! client alone can still fill the whole budget with writes waiting for the device.
//!
//! The share is counted in announced bytes, not in bytes received: a write that has started
//! can always finish within its client's share (its later frames compete only for the
//! OSS-wide budget), so a client's own writes never wait for each other's next frame.
//!
//! Identity: the peer's IP address as the socket reports it (an IPv6 address by its /64, which
//! a host usually owns whole). The `nid` in an I/O request is declared by the client and the
//! connection is the attacker's to multiply; an address is what a host cannot multiply beyond
//! the addresses it owns. Several nodes behind one NAT share one share (a documented
//! limitation).
//!
//! Bounded: an address is tracked while it has an authenticated connection or a reservation
//! outstanding, at most [`CLIENTS_TRACKED_MAX`] addresses; beyond that, new addresses share one
//! overflow share (they are served, only less fairly).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Most peer addresses with a share of their own (a bound on outside input).
pub const CLIENTS_TRACKED_MAX: usize = 4096;

/// What the bulk budget's guards did so far (monotonic counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkCounters {
    /// Requests that waited because their client's share was in use.
    pub share_waits: u64,
    /// Connections put in the overflow share ([`CLIENTS_TRACKED_MAX`] addresses tracked).
    pub untracked_connections: u64,
    /// Connections closed because a reply made no progress into the socket for
    /// `OssdConfig::reply_idle_timeout` (the peer stopped reading).
    pub reply_timeouts: u64,
}

impl BulkCounters {
    /// The counters by name, for metrics (`pfsqos_oss_bulk_total{counter}`).
    pub fn fields(&self) -> [(&'static str, u64); 3] {
        [
            ("share_waits", self.share_waits),
            ("untracked_connections", self.untracked_connections),
            ("reply_timeouts", self.reply_timeouts),
        ]
    }
}

/// The client an address belongs to: an IPv4 address (also written as IPv4-mapped IPv6) is one
/// client; an IPv6 address is its /64, which one host usually holds whole (privacy addresses
/// would otherwise give it a share per address).
fn client_of(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(std::net::Ipv6Addr::from(
            u128::from(v6) & !((1u128 << 64) - 1),
        )),
        v4 => v4,
    }
}

/// Whose share a connection draws on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Owner {
    Addr(IpAddr),
    Overflow,
}

struct Entry {
    /// Authenticated connections of this owner open now.
    connections: u32,
    /// The owner's share, in KiB.
    share: Arc<Semaphore>,
}

/// The shares of every client connected now.
pub(crate) struct BulkShares {
    share_kib: u32,
    owners: Mutex<HashMap<Owner, Entry>>,
    share_waits: AtomicU64,
    untracked_connections: AtomicU64,
    reply_timeouts: AtomicU64,
}

impl BulkShares {
    /// Shares of `share_kib` KiB each.
    pub(crate) fn new(share_kib: u32) -> Arc<BulkShares> {
        assert!(share_kib > 0, "an empty share would never serve anything");
        Arc::new(BulkShares {
            share_kib,
            owners: Mutex::new(HashMap::new()),
            share_waits: AtomicU64::new(0),
            untracked_connections: AtomicU64::new(0),
            reply_timeouts: AtomicU64::new(0),
        })
    }

    fn owners(&self) -> MutexGuard<'_, HashMap<Owner, Entry>> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An authenticated connection from `addr` joins its client's share (made if new).
    pub(crate) fn join(self: &Arc<Self>, addr: IpAddr) -> ShareMember {
        let mut owners = self.owners();
        let mut owner = Owner::Addr(client_of(addr));
        if !owners.contains_key(&owner) {
            // The overflow entry does not count against the addresses tracked.
            let addrs = owners.len() - usize::from(owners.contains_key(&Owner::Overflow));
            if addrs >= CLIENTS_TRACKED_MAX {
                owner = Owner::Overflow;
                self.untracked_connections.fetch_add(1, Ordering::Relaxed);
            }
        }
        let entry = owners.entry(owner).or_insert_with(|| Entry {
            connections: 0,
            share: Arc::new(Semaphore::new(self.share_kib as usize)),
        });
        entry.connections += 1;
        debug_assert!(owners.len() <= CLIENTS_TRACKED_MAX + 1);
        ShareMember {
            shares: self.clone(),
            owner,
            share: owners[&owner].share.clone(),
        }
    }

    /// Forgets `owner` once it has neither a connection nor a reservation left.
    fn forget_if_idle(&self, owners: &mut HashMap<Owner, Entry>, owner: Owner) {
        let idle = owners.get(&owner).is_some_and(|e| {
            e.connections == 0 && e.share.available_permits() == self.share_kib as usize
        });
        if idle {
            owners.remove(&owner);
        }
    }

    /// Counts a connection closed because its peer stopped reading its replies.
    pub(crate) fn reply_timed_out(&self) {
        self.reply_timeouts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn counters(&self) -> BulkCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BulkCounters {
            share_waits: get(&self.share_waits),
            untracked_connections: get(&self.untracked_connections),
            reply_timeouts: get(&self.reply_timeouts),
        }
    }

    /// Addresses (and the overflow share) tracked now.
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.owners().len()
    }
}

/// A connection's membership in its client's share; it leaves with the connection.
pub(crate) struct ShareMember {
    shares: Arc<BulkShares>,
    owner: Owner,
    share: Arc<Semaphore>,
}

impl ShareMember {
    /// Reserves `kib` KiB of the client's share, waiting (counted) while the client's other
    /// requests hold it. Never call while holding any of the OSS-wide budget: a request waiting
    /// here must hold nothing the other clients need.
    pub(crate) async fn reserve(&self, kib: u32) -> SharePermit {
        assert!(
            kib <= self.shares.share_kib,
            "a request of {kib} KiB exceeds a whole share (validated at start)"
        );
        let permit = match self.share.clone().try_acquire_many_owned(kib) {
            Ok(p) => p,
            Err(_) => {
                self.shares.share_waits.fetch_add(1, Ordering::Relaxed);
                self.share
                    .clone()
                    .acquire_many_owned(kib)
                    .await
                    .expect("a share's semaphore is never closed")
            }
        };
        SharePermit {
            shares: self.shares.clone(),
            owner: self.owner,
            permit: Some(permit),
        }
    }
}

impl Drop for ShareMember {
    fn drop(&mut self) {
        let mut owners = self.shares.owners();
        let e = owners
            .get_mut(&self.owner)
            .expect("a member's owner is tracked while it is connected");
        assert!(
            e.connections > 0,
            "a share's connection count went below zero"
        );
        e.connections -= 1;
        self.shares.forget_if_idle(&mut owners, self.owner);
    }
}

/// Part of a client's share, given back when dropped.
pub(crate) struct SharePermit {
    shares: Arc<BulkShares>,
    owner: Owner,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for SharePermit {
    fn drop(&mut self) {
        // Given back under the table's lock, so that `forget_if_idle` sees it returned and a
        // new connection of the same client never gets a second, fresh share meanwhile.
        let mut owners = self.shares.owners();
        drop(self.permit.take());
        self.shares.forget_if_idle(&mut owners, self.owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn addr(i: u32) -> IpAddr {
        IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i))
    }

    /// A client's connections together hold at most one share; another client's request is
    /// granted at once meanwhile; a waiting request gets in when the holder gives back.
    #[tokio::test]
    async fn one_client_holds_one_share_over_all_its_connections() {
        let shares = BulkShares::new(100);
        let a: Vec<ShareMember> = (0..3).map(|_| shares.join(addr(1))).collect();
        let b = shares.join(addr(2));
        let held = [a[0].reserve(60).await, a[1].reserve(40).await];
        let mut waiting = Box::pin(a[2].reserve(1));
        assert!(
            (&mut waiting).now_or_never().is_none(),
            "a's share is used up"
        );
        assert_eq!(shares.counters().share_waits, 1);
        let other = tokio::time::timeout(std::time::Duration::from_secs(60), b.reserve(100))
            .await
            .expect("another client's share is its own");
        drop(held);
        let late = waiting.await;
        assert_eq!(shares.counters().share_waits, 1);
        drop((late, other));
        assert_eq!(shares.tracked(), 2);
        drop(a);
        assert_eq!(
            shares.tracked(),
            1,
            "a is forgotten with its last connection"
        );
        drop(b);
        assert_eq!(shares.tracked(), 0);
    }

    /// A client whose connections are gone keeps its share while a reservation is out, so a
    /// new connection from it draws on the same share, not a fresh one.
    #[tokio::test]
    async fn a_share_outlives_its_connections_while_reserved() {
        let shares = BulkShares::new(10);
        let m = shares.join(addr(1));
        let p = m.reserve(10).await;
        drop(m);
        assert_eq!(shares.tracked(), 1);
        let again = shares.join(addr(1));
        let mut waiting = Box::pin(again.reserve(1));
        assert!((&mut waiting).now_or_never().is_none());
        drop(p);
        drop(waiting.await);
        drop(again);
        assert_eq!(shares.tracked(), 0);
    }

    /// IPv4 in either form is one client; IPv6 addresses of one /64 are one client.
    #[tokio::test]
    async fn addresses_of_one_host_draw_on_one_share() {
        let shares = BulkShares::new(1);
        let v4 = shares.join("10.1.2.3".parse().unwrap());
        let mapped = shares.join("::ffff:10.1.2.3".parse().unwrap());
        let a = shares.join("2001:db8:1:2::1".parse().unwrap());
        let b = shares.join("2001:db8:1:2:ffff::9".parse().unwrap());
        let other = shares.join("2001:db8:1:3::1".parse().unwrap());
        assert_eq!(shares.tracked(), 3);
        let held = (v4.reserve(1).await, a.reserve(1).await);
        assert!(Box::pin(mapped.reserve(1)).now_or_never().is_none());
        assert!(Box::pin(b.reserve(1)).now_or_never().is_none());
        assert!(Box::pin(other.reserve(1)).now_or_never().is_some());
        drop((held, v4, mapped, a, b, other));
        assert_eq!(shares.tracked(), 0);
    }

    /// The table never tracks more than `CLIENTS_TRACKED_MAX` addresses; the others share the
    /// overflow share, and are counted.
    #[tokio::test]
    async fn the_table_is_bounded_and_overflows_into_one_share() {
        let shares = BulkShares::new(4);
        let members: Vec<ShareMember> = (0..CLIENTS_TRACKED_MAX as u32 + 3)
            .map(|i| shares.join(addr(i)))
            .collect();
        assert_eq!(shares.tracked(), CLIENTS_TRACKED_MAX + 1);
        assert_eq!(shares.counters().untracked_connections, 3);
        let over = &members[CLIENTS_TRACKED_MAX..];
        let held = over[0].reserve(4).await;
        let mut waiting = Box::pin(over[1].reserve(1));
        assert!(
            (&mut waiting).now_or_never().is_none(),
            "the overflow addresses share one share"
        );
        drop(held);
        drop(waiting.await);
        drop(members);
        assert_eq!(shares.tracked(), 0);
    }
}
