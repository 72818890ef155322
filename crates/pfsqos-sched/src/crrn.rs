//! Client Round-Robin over NIDs (`crrn`), Lustre's `nrs_crr.c`: the clients (by NID) take turns,
//! each serving a batch of at most `quantum` requests per scheduling round.
//!
//! Lustre's algorithm, as the policy keeps it:
//! * A request is tagged `(round, sequence)` at arrival and the least tag is dispatched first.
//!   All requests of one client's batch share its round and sequence number; the sequence
//!   orders the batches within a round by when each client first arrived in it.
//! * A client starts a new batch when its quantum is used up, when the head's round has moved
//!   past it, or when it has nothing queued and quantum left (it idled, so its next request joins
//!   a new round instead of fragmenting the old one). A new batch takes the head's round if that
//!   is later, a fresh sequence number if another client has arrived since, and a full quantum.
//! * Using the last of the quantum moves the client to the next round.
//! * After a dispatch the head's round advances to the next request's round, or by one when
//!   nothing is left queued.
//!
//! Two readings chosen. Lustre's binary heap does not order requests with equal tags (one
//! client's batch); here they leave in arrival order, which keeps a client's own requests in
//! order and makes the dispatch order deterministic. Lustre frees a client's state only when the
//! policy stops; here at most [`CRRN_CLIENTS_MAX`] clients keep their own state, and every
//! further NID shares one overflow client (still served, as one more client).
//!
//! `nrs_crrn_quantum` reads `reg_quantum:N` / `hp_quantum:N` and takes `N`, `reg_quantum:N` or
//! `hp_quantum:N`, `1..=65535` (`LPROCFS_NRS_QUANTUM_MAX`); the default is 8, Lustre's default
//! `max_rpcs_in_flight` (`OBD_MAX_RIF_DEFAULT`).

use std::any::Any;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::errno::Errno;
use crate::model::{Nid, RpcTags};
use crate::policy::{
    einval, tunable_value, NrsConfig, NrsError, NrsPolicy, NrsPolicyDescriptor, ParamValue,
};
use crate::tbf::kstrto::kstrtoull;
use crate::tbf::NrsQueue;
use crate::{Dequeue, RequestScheduler};

/// CRR-N's one parameter file.
pub const PARAM_CRRN_QUANTUM: &str = "nrs_crrn_quantum";
/// Default batch size: Lustre's default `max_rpcs_in_flight`.
pub const CRRN_QUANTUM_DEFAULT: u16 = 8;
/// Largest batch size (`LPROCFS_NRS_QUANTUM_MAX`).
pub const CRRN_QUANTUM_MAX: u16 = u16::MAX;
/// Most clients with state of their own; beyond, NIDs share one overflow client.
pub const CRRN_CLIENTS_MAX: usize = 65_536;

/// CRR-N as a head's primary policy (Lustre's `nrs_conf_crrn`).
pub fn descriptor<P: Send + 'static>() -> NrsPolicyDescriptor<P> {
    NrsPolicyDescriptor {
        name: "crrn",
        description: "CRR-N: clients (by NID) take turns, a batch of at most `quantum` RPCs each",
        params: &[PARAM_CRRN_QUANTUM],
        start: start::<P>,
        stopped_write: None,
    }
}

fn start<P: Send + 'static>(
    arg: Option<&str>,
    _config: &NrsConfig,
) -> Result<Box<dyn NrsPolicy<P>>, NrsError> {
    // Lustre's CRR-N takes no argument; like fifo's, any short one is ignored.
    let _ = arg;
    Ok(Box::new(Crrn::new(CRRN_QUANTUM_DEFAULT)))
}

/// One client's scheduling state (Lustre's `nrs_crrn_client`).
#[derive(Clone, Copy, Debug, Default)]
struct Client {
    round: u64,
    sequence: u64,
    /// Requests it may still add to its current batch.
    quantum: u16,
    /// Its requests queued here.
    active: u32,
}

/// Which client state a NID uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ClientKey {
    Nid(Nid),
    Overflow,
}

/// One CRR-N instance: one head's queue.
pub struct Crrn<P> {
    quantum: u16,
    round: u64,
    sequence: u64,
    clients: FxHashMap<ClientKey, Client>,
    /// Queued requests by `(round, sequence, arrival)`, least first.
    heap: BinaryHeap<Reverse<(u64, u64, u64)>>,
    /// Each queued request's client and payload, by arrival number.
    payloads: FxHashMap<u64, (ClientKey, P)>,
    arrivals: u64,
}

impl<P> Crrn<P> {
    /// An empty instance with batches of `quantum` requests.
    pub fn new(quantum: u16) -> Crrn<P> {
        assert!(quantum > 0, "a batch holds at least one request");
        Crrn {
            quantum,
            round: 0,
            sequence: 1,
            clients: FxHashMap::default(),
            heap: BinaryHeap::new(),
            payloads: FxHashMap::default(),
            arrivals: 0,
        }
    }

    /// The batch size.
    pub fn quantum(&self) -> u16 {
        self.quantum
    }

    /// Clients with state of their own (the overflow client included, once used).
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    fn key_of(&self, nid: Nid) -> ClientKey {
        let key = ClientKey::Nid(nid);
        if self.clients.contains_key(&key) || self.clients.len() < CRRN_CLIENTS_MAX {
            key
        } else {
            ClientKey::Overflow
        }
    }
}

impl<P> RequestScheduler<P> for Crrn<P> {
    fn enqueue_with_cost(&mut self, _now_ns: u64, tags: &RpcTags, _cost: u64, payload: P) {
        let key = self.key_of(tags.nid);
        let (round_now, mut sequence_now, quantum_full) = (self.round, self.sequence, self.quantum);
        let cli = self.clients.entry(key).or_default();
        if cli.quantum == 0 || cli.round < round_now || (cli.active == 0 && cli.quantum > 0) {
            // Idle with quantum left: its next request starts a new round rather than
            // joining the batch it did not fill.
            if cli.active == 0 && cli.quantum > 0 {
                cli.round += 1;
            }
            cli.round = cli.round.max(round_now);
            if cli.sequence < sequence_now {
                sequence_now += 1;
                cli.sequence = sequence_now;
            }
            cli.quantum = quantum_full;
        }
        let tag = (cli.round, cli.sequence);
        cli.active += 1;
        cli.quantum -= 1;
        if cli.quantum == 0 {
            cli.round += 1;
        }
        self.sequence = sequence_now;
        let arrival = self.arrivals;
        self.arrivals += 1;
        self.heap.push(Reverse((tag.0, tag.1, arrival)));
        let displaced = self.payloads.insert(arrival, (key, payload));
        assert!(displaced.is_none(), "arrival numbers are unique");
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeue<P> {
        let Some(Reverse((round, _sequence, arrival))) = self.heap.pop() else {
            return Dequeue::Empty;
        };
        let (key, payload) = self
            .payloads
            .remove(&arrival)
            .expect("every queued request has its payload");
        let cli = self
            .clients
            .get_mut(&key)
            .expect("a queued request's client has state");
        assert!(
            round <= cli.round,
            "a request is never tagged beyond its client's round"
        );
        assert!(cli.active > 0, "a client with a queued request counts it");
        cli.active -= 1;
        match self.heap.peek() {
            None => self.round += 1,
            Some(Reverse((next_round, ..))) => self.round = self.round.max(*next_round),
        }
        Dequeue::Request(payload)
    }

    fn on_timer(&mut self, _now_ns: u64) {}

    fn timer_deadline_ns(&self) -> Option<u64> {
        None
    }

    fn queued(&self) -> usize {
        debug_assert_eq!(self.heap.len(), self.payloads.len());
        self.heap.len()
    }
}

impl<P: Send + 'static> NrsPolicy<P> for Crrn<P> {
    /// In dispatch order, as Lustre drains a stopping policy.
    fn drain(&mut self, now_ns: u64) -> Vec<P> {
        let mut out = Vec::with_capacity(self.queued());
        while let Dequeue::Request(p) = self.dequeue(now_ns) {
            out.push(p);
        }
        assert!(self.payloads.is_empty(), "a drained instance holds nothing");
        out
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn write_param(
        &mut self,
        param: &str,
        queue: NrsQueue,
        _now_ns: u64,
        text: &str,
    ) -> Result<(), NrsError> {
        assert_eq!(
            param, PARAM_CRRN_QUANTUM,
            "the head routes only CRR-N's own file here"
        );
        let Some(value) = tunable_value(text, "quantum", queue)? else {
            return Ok(());
        };
        let value = value.strip_suffix('\n').unwrap_or(value);
        let quantum = kstrtoull(value, 10)
            .ok()
            .filter(|q| (1..=u64::from(CRRN_QUANTUM_MAX)).contains(q))
            .ok_or_else(|| {
                einval(format!(
                    "quantum `{value}` is not a number in 1..={CRRN_QUANTUM_MAX}"
                ))
            })?;
        self.quantum = u16::try_from(quantum).expect("checked against CRRN_QUANTUM_MAX");
        Ok(())
    }

    fn read_param(&self, param: &str) -> Result<ParamValue, NrsError> {
        if param != PARAM_CRRN_QUANTUM {
            return Err(NrsError {
                errno: Errno::ENOENT,
                message: format!("policy `crrn` has no parameter `{param}`"),
            });
        }
        Ok(ParamValue::Scalar(self.quantum.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobId, LNet, NetKind};
    use crate::nrs::{policy_param_text, Nrs};

    fn from(client: u8) -> RpcTags {
        RpcTags {
            job: JobId::new("j").unwrap(),
            nid: Nid::ipv4(
                10,
                0,
                0,
                client,
                LNet {
                    kind: NetKind::Tcp,
                    num: 0,
                },
            ),
            ..RpcTags::default()
        }
    }

    fn drain_all(c: &mut Crrn<(u8, u32)>) -> Vec<(u8, u32)> {
        let mut out = Vec::new();
        while let Dequeue::Request(p) = c.dequeue(0) {
            out.push(p);
        }
        out
    }

    /// Two backlogged clients alternate in batches of `quantum`, each client's requests in
    /// their own order, whatever the arrival pattern.
    #[test]
    fn backlogged_clients_alternate_in_batches_of_quantum() {
        let mut c = Crrn::new(2);
        for i in 0..6 {
            c.enqueue(0, &from(1), (1, i));
        }
        for i in 0..6 {
            c.enqueue(0, &from(2), (2, i));
        }
        let order = drain_all(&mut c);
        assert_eq!(
            order,
            [
                (1, 0),
                (1, 1),
                (2, 0),
                (2, 1),
                (1, 2),
                (1, 3),
                (2, 2),
                (2, 3),
                (1, 4),
                (1, 5),
                (2, 4),
                (2, 5),
            ]
        );
        assert_eq!(c.queued(), 0);
    }

    /// A client arriving in a later round does not jump ahead of the round being served,
    /// and a client that went idle with quantum left starts a new round.
    #[test]
    fn a_newcomer_joins_the_current_round_and_an_idle_client_a_new_one() {
        let mut c = Crrn::new(4);
        for i in 0..8 {
            c.enqueue(0, &from(1), (1, i));
        }
        // Round 0: client 1's first four. Serve two, then client 2 arrives.
        assert_eq!(c.dequeue(0), Dequeue::Request((1, 0)));
        assert_eq!(c.dequeue(0), Dequeue::Request((1, 1)));
        c.enqueue(0, &from(2), (2, 0));
        let rest = drain_all(&mut c);
        // Client 2 joins round 0 after client 1's batch: (1,2),(1,3),(2,0), then round 1.
        assert_eq!(
            rest,
            [(1, 2), (1, 3), (2, 0), (1, 4), (1, 5), (1, 6), (1, 7)]
        );
        // Client 2 is idle with quantum 3 left: its next request opens a new round behind
        // client 1's new batch in the current one.
        c.enqueue(0, &from(1), (1, 8));
        c.enqueue(0, &from(2), (2, 1));
        c.enqueue(0, &from(1), (1, 9));
        assert_eq!(drain_all(&mut c), [(1, 8), (1, 9), (2, 1)]);
    }

    /// A client served to idleness while its round still has others' batches queued sends
    /// again: it waits for the next round instead of re-entering this one.
    #[test]
    fn a_client_that_idled_mid_round_waits_for_the_next() {
        let mut c = Crrn::new(4);
        for i in 0..8 {
            c.enqueue(0, &from(1), (1, i));
        }
        c.enqueue(0, &from(2), (2, 0));
        for i in 0..4 {
            c.enqueue(0, &from(3), (3, i));
        }
        for want in [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0)] {
            assert_eq!(c.dequeue(0), Dequeue::Request(want));
        }
        c.enqueue(0, &from(2), (2, 1));
        assert_eq!(
            drain_all(&mut c),
            [
                (3, 0),
                (3, 1),
                (3, 2),
                (3, 3),
                (1, 4),
                (1, 5),
                (1, 6),
                (1, 7),
                (2, 1)
            ]
        );
    }

    /// Equal shares by RPC count between backlogged clients, whatever their demand: over any
    /// prefix of the dispatch order, counts differ by at most one quantum.
    #[test]
    fn backlogged_clients_share_within_one_quantum() {
        for quantum in [1u16, 3, 8] {
            let mut c = Crrn::new(quantum);
            for i in 0..40 {
                c.enqueue(0, &from(1), (1, i));
                if i % 4 == 0 {
                    c.enqueue(0, &from(3), (3, i));
                }
                c.enqueue(0, &from(2), (2, i));
            }
            let order = drain_all(&mut c);
            let (mut a, mut b) = (0i64, 0i64);
            for (k, &(client, _)) in order.iter().enumerate() {
                match client {
                    1 => a += 1,
                    2 => b += 1,
                    _ => {}
                }
                if k < 70 {
                    assert!(
                        (a - b).abs() <= i64::from(quantum),
                        "quantum {quantum}, step {k}"
                    );
                }
            }
        }
    }

    /// Through the head: `nrs_policies=crrn` starts it, the quantum file reads and writes as
    /// Lustre's, out-of-range values are EINVAL, and stopping it keeps every request.
    #[test]
    fn through_the_head() {
        let mut n: Nrs<u32> = Nrs::new();
        assert_eq!(
            n.write_policy_param(0, PARAM_CRRN_QUANTUM, "4")
                .unwrap_err()
                .errno,
            Errno::ENODEV
        );
        n.write_policies(0, "crrn").unwrap();
        assert_eq!(n.policy_name(), "crrn");
        n.write_policy_param(0, PARAM_CRRN_QUANTUM, "reg_quantum:3")
            .unwrap();
        n.write_policy_param(0, PARAM_CRRN_QUANTUM, "hp_quantum:9")
            .unwrap();
        assert_eq!(n.running::<Crrn<u32>>().unwrap().quantum(), 3);
        assert_eq!(
            policy_param_text(&[&n], None, PARAM_CRRN_QUANTUM).unwrap(),
            "reg_quantum:3\n"
        );
        for bad in ["0", "65536", "x", "reg_quantum:-1"] {
            let e = n
                .write_policy_param(0, PARAM_CRRN_QUANTUM, bad)
                .unwrap_err();
            assert_eq!(e.errno, Errno::EINVAL, "{bad}");
        }
        for i in 0..5 {
            n.enqueue(0, &from(1), i);
        }
        n.write_policies(0, "fifo").unwrap();
        let mut out = Vec::new();
        while let Dequeue::Request(p) = n.dequeue(0) {
            out.push(p);
        }
        assert_eq!(out, [0, 1, 2, 3, 4]);
    }

    /// Beyond `CRRN_CLIENTS_MAX` NIDs, the rest share one client and are still served.
    #[test]
    fn clients_beyond_the_bound_share_one_and_are_served() {
        let mut c: Crrn<u32> = Crrn::new(1);
        let n = CRRN_CLIENTS_MAX as u32 + 10;
        for i in 0..n {
            let tags = RpcTags {
                nid: Nid::ipv4(
                    10,
                    (i >> 16) as u8,
                    (i >> 8) as u8,
                    i as u8,
                    LNet {
                        kind: NetKind::Tcp,
                        num: 1,
                    },
                ),
                ..RpcTags::default()
            };
            c.enqueue(0, &tags, i);
        }
        assert_eq!(c.clients(), CRRN_CLIENTS_MAX + 1);
        let mut served = 0;
        while let Dequeue::Request(_) = c.dequeue(0) {
            served += 1;
        }
        assert_eq!(served, n);
    }
}
