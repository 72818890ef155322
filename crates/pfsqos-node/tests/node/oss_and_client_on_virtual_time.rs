//! The OSS service and the client path, driven together on virtual time: the same
//! `CptService`, `Raid0` and `RpcWindow` the simulator's engine and the live daemons run, with a
//! small event loop standing in for the network and the devices. It checks what the roles
//! promise whatever the policy does: bytes conserved, RPCs in flight within the window, threads
//! busy within the pool, TBF rates held, and the same bytes for the same inputs.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use pfsqos_core::control::{ControlWrite, DomainId};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid, Opcode, RpcTags};
use pfsqos_core::sched::nrs::{Nrs, ServiceTicket};
use pfsqos_node::client::{Raid0, RpcPiece, RpcWindow};
use pfsqos_node::oss::{CptService, Dispatch};

const MIB: u64 = 1 << 20;
const BRW_BYTES: u64 = 4 * MIB;
const WINDOW_RPCS: u32 = 8;
const OSTS: u32 = 2;
const CPTS: usize = 2;
const THREADS_PER_CPT: u32 = 2;
/// Virtual device: 1 ms per MiB per thread.
const NS_PER_MIB: u64 = 1_000_000;
/// Job `a`'s TBF rate, RPCs/s.
const RATE_A_RPCS_PER_S: u64 = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// An RPC reaches the OSS.
    Arrive(usize),
    /// A head's throttle timer.
    Timer(usize, usize),
    /// The service of an RPC ends (thread free, reply to the client).
    Done(usize),
}

struct Rpc {
    client: usize,
    piece: RpcPiece,
    tags: RpcTags,
    head: usize,
    ticket: Option<ServiceTicket>,
}

/// Events in time order, ties in push order.
#[derive(Default)]
struct Events {
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
}

impl Events {
    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn pop(&mut self) -> Option<(u64, Ev)> {
        self.heap.pop().map(|Reverse((t, _, ev))| (t, ev))
    }
}

type Waiting = Vec<Vec<VecDeque<usize>>>;

/// A client sends what its window to `ost` allows; requests reach the OSS 50 us later.
fn send(
    events: &mut Events,
    windows: &mut [Vec<RpcWindow>],
    waiting: &mut Waiting,
    client: usize,
    ost: usize,
    now: u64,
) {
    while !waiting[client][ost].is_empty() && windows[client][ost].try_send() {
        let rpc = waiting[client][ost].pop_front().unwrap();
        events.push(now + 50_000, Ev::Arrive(rpc));
    }
}

/// Completion time of every RPC, in issue order: the whole observable outcome of a run.
fn run(file_bytes: u64, trace: &mut Vec<(u64, usize)>) -> Vec<(usize, u64)> {
    let jobs = ["a", "b"];
    let nid = |i: u32| {
        Nid::ipv4(
            10,
            0,
            0,
            i as u8 + 1,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        )
    };
    let mut cpts: Vec<CptService<usize>> = (0..CPTS)
        .map(|_| CptService::new(vec![(DomainId(0), Nrs::new())], THREADS_PER_CPT))
        .collect();
    for w in [
        ControlWrite::NrsPolicies("tbf jobid".into()),
        ControlWrite::tbf_rule(format!("start a jobid={{a}} rate={RATE_A_RPCS_PER_S}")),
    ] {
        for c in &mut cpts {
            c.apply_write(0, DomainId(0), &w).unwrap();
        }
    }
    // Each client writes its own file, striped over both OSTs, in one call.
    let raid0 = Raid0::new(MIB, OSTS);
    let mut rpcs: Vec<Rpc> = Vec::new();
    let mut waiting: Waiting = Vec::new();
    let mut windows: Vec<Vec<RpcWindow>> = Vec::new();
    for (client, job) in jobs.iter().enumerate() {
        let tags = RpcTags {
            job: JobId::new(job).unwrap(),
            nid: nid(client as u32),
            opcode: Opcode::OstWrite,
            ..RpcTags::UNKNOWN
        };
        waiting.push(vec![Default::default(); OSTS as usize]);
        windows.push((0..OSTS).map(|_| RpcWindow::new(WINDOW_RPCS)).collect());
        for piece in raid0.rpc_vec(0, file_bytes, BRW_BYTES) {
            let i = rpcs.len();
            waiting[client][piece.stripe_index as usize].push_back(i);
            rpcs.push(Rpc {
                client,
                piece,
                tags,
                head: 0,
                ticket: None,
            });
        }
    }
    let mut events = Events::default();
    for client in 0..jobs.len() {
        for ost in 0..OSTS as usize {
            send(&mut events, &mut windows, &mut waiting, client, ost, 0);
        }
    }
    let mut armed = [None::<u64>; CPTS];
    let mut done = Vec::new();
    let mut served_bytes = vec![0u64; jobs.len()];
    while let Some((now, ev)) = events.pop() {
        let cpt_of = |rpc: &Rpc| rpc.client % CPTS;
        let touched = match ev {
            Ev::Arrive(i) => {
                let c = cpt_of(&rpcs[i]);
                let r = &rpcs[i];
                cpts[c].arrive(now, r.head, &r.tags, r.piece.size_bytes, i);
                c
            }
            Ev::Timer(c, head) => {
                if armed[c] != Some(now) {
                    continue; // re-armed since
                }
                armed[c] = None;
                cpts[c].on_timer(now, head);
                c
            }
            Ev::Done(i) => {
                let r = &rpcs[i];
                let c = cpt_of(r);
                let ticket = r.ticket.expect("a completed RPC was dispatched");
                cpts[c].complete(now, r.head, ticket, &r.tags, r.piece.size_bytes);
                served_bytes[r.client] += r.piece.size_bytes;
                done.push((i, now));
                trace.push((now, i));
                let ost = r.piece.stripe_index as usize;
                windows[r.client][ost].complete();
                send(&mut events, &mut windows, &mut waiting, r.client, ost, now);
                c
            }
        };
        // Idle threads of the touched partition take work.
        loop {
            let mut throttled = None;
            match cpts[touched].dispatch(now, |head, until| throttled = Some((head, until))) {
                Dispatch::Start {
                    payload, ticket, ..
                } => {
                    rpcs[payload].ticket = Some(ticket);
                    let ns = rpcs[payload].piece.size_bytes * NS_PER_MIB / MIB;
                    events.push(now + ns, Ev::Done(payload));
                }
                Dispatch::Wait { .. } | Dispatch::AllBusy => {
                    if let Some((head, until)) = throttled {
                        let at = until.max(now + 1);
                        if armed[touched] != Some(at) {
                            armed[touched] = Some(at);
                            events.push(at, Ev::Timer(touched, head));
                        }
                    }
                    break;
                }
            }
        }
        // Sampled at every event, not a recorded peak: the window and the pool hold.
        for (client, w) in windows.iter().enumerate() {
            for (ost, w) in w.iter().enumerate() {
                assert!(w.in_flight() <= WINDOW_RPCS, "client {client} OST {ost}");
            }
        }
        for c in &cpts {
            assert!(c.busy() <= c.threads());
        }
    }
    // Every byte written once, every request served, nothing left anywhere.
    assert_eq!(served_bytes, vec![file_bytes; jobs.len()]);
    assert_eq!(done.len(), rpcs.len());
    for c in &cpts {
        assert_eq!((c.queued(), c.busy()), (0, 0));
        let (arrived, started, completed) = c.totals();
        assert_eq!((arrived, started), (completed, completed));
    }
    done
}

#[test]
fn tbf_holds_the_rate_and_nothing_is_lost_on_virtual_time() {
    let file_bytes = 64 * MIB + 3 * 4096; // not a multiple of the stripe: a short last RPC
    let mut trace = Vec::new();
    let done = run(file_bytes, &mut trace);
    let rpcs_per_job = Raid0::new(MIB, OSTS)
        .rpc_vec(0, file_bytes, BRW_BYTES)
        .len();
    let end = |job: usize| {
        done.iter()
            .filter(|(i, _)| (*i >= rpcs_per_job) == (job == 1))
            .map(|&(_, t)| t)
            .max()
            .unwrap()
    };
    // Job a is held to RATE_A RPCs/s (per CPT head: both of a's RPCs enter one CPT, whose
    // head holds the rule): its n RPCs take at least (n - bucket) / rate.
    let bucket = 3; // TBF's default depth
    let a_min_ns = (rpcs_per_job as u64 - bucket) * 1_000_000_000 / RATE_A_RPCS_PER_S;
    assert!(
        end(0) >= a_min_ns,
        "a ended at {} ns, before {a_min_ns}",
        end(0)
    );
    // Job b has no rule of its own (default rate 10,000/s) and the device: it ends far sooner.
    assert!(end(1) * 10 < end(0), "b {} vs a {}", end(1), end(0));
    // The same inputs give the same completions, to the nanosecond.
    let mut again = Vec::new();
    assert_eq!(run(file_bytes, &mut again), done);
    assert_eq!(again, trace);
}
