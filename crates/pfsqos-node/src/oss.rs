//! The OSS's mechanics around its NRS heads, written once for the simulator and the `ossd`.
//!
//! * [`CptService`]: one CPU partition of an OSS's `ost_io` service, its NRS heads and its
//!   service threads. Requests arrive at a head; an idle thread polls the heads round robin
//!   and takes the first request a scheduler hands out; the thread is busy until the driver
//!   reports the request complete (with its cost, for cost-counting schedulers). The
//!   simulator drives it from events on virtual time; the `ossd`'s I/O threads drive the very
//!   same code under the partition's lock with the monotonic clock.
//! * [`apply_write`]: a domain (one OSS's `ost_io` service, or one OST with per-OST
//!   scheduling) holds one NRS head per CPU partition, and the live daemon a regular and a
//!   high-priority head in each, as Lustre does. An administrator's `lctl set_param` and a
//!   controller's [`ControlWrite`] reach every one of those heads through it, so the two
//!   drivers cannot disagree on how a write lands or which error it answers.

use pfsqos_core::control::{ControlWrite, DomainId};
use pfsqos_core::model::RpcTags;
use pfsqos_core::sched::nrs::{Nrs, NrsError, ServiceTicket};
use pfsqos_core::sched::sfq::SYNC_INSTANCES_MAX;
use pfsqos_core::sched::{Dequeue, RequestScheduler, ServiceReport};

/// Most synchronization messages one [`CptService::take_sync_out`] returns. The heads'
/// policies bound what they hold themselves; beyond this, the *oldest* messages of the batch
/// are dropped (counted in [`SyncCounters::dropped_out`]): the newest carry the latest
/// presence changes, and a dropped service report only loosens fairness by its cost (its
/// receivers charge the flow less), never blocks I/O.
pub const SYNC_OUTBOX_LEN_MAX: usize = 65_536;

/// Bytes a message adds to its report in a plain encoding: the sender's number.
const SYNC_MESSAGE_HEADER_BYTES: u64 = 4;

/// One synchronization message between instances of a distributed policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncMessage {
    pub from_instance: u32,
    pub report: ServiceReport,
}

impl SyncMessage {
    /// Size in a plain encoding (the sender's number and the report), what the channel
    /// counts as bytes.
    pub fn encoded_len_bytes(&self) -> u64 {
        SYNC_MESSAGE_HEADER_BYTES + self.report.encoded_len_bytes()
    }
}

/// What crossed a [`CptService`]'s synchronization channel since it was made (one type from
/// the channel to `RunOutput` and `summary.json`).
pub use pfsqos_core::sched::SyncCounters;

/// What an idle thread found when it asked the partition for work.
#[derive(Debug, PartialEq, Eq)]
pub enum Dispatch<P> {
    /// Serve this request, dequeued from head `head`; one thread is now busy with it. The
    /// driver keeps `ticket` with the request and hands it back to [`CptService::complete`].
    Start {
        head: usize,
        payload: P,
        ticket: ServiceTicket,
    },
    /// Nothing may start now. `until_ns`: the earliest throttle end among the heads that
    /// hold requests back (`None`: no head has a timer: every head is empty, or a
    /// depth-limited policy waits for one of its requests to complete). The driver waits for
    /// that time, an arrival, or a completion.
    Wait { until_ns: Option<u64> },
    /// Every thread is busy.
    AllBusy,
}

/// One CPU partition of an OSS's `ost_io` service: its NRS heads (one per scheduling domain
/// it serves, and in the live daemon an HP head beside each regular one) and `threads`
/// service threads.
///
/// Invariants, asserted: threads busy <= threads; requests started = requests completed +
/// threads busy; the heads' queued counts sum to arrivals - starts (nothing is lost or
/// served twice, whatever the policies do).
#[derive(Debug)]
pub struct CptService<P> {
    heads: Vec<(DomainId, Nrs<P>)>,
    threads: u32,
    busy: u32,
    /// Head the next poll starts at (round robin, so no domain starves another's threads).
    next: usize,
    arrived: u64,
    started: u64,
    completed: u64,
    /// This partition's number among the cluster's synchronizing instances.
    sync_instance: u32,
    sync: SyncCounters,
}

impl<P: Send + 'static> CptService<P> {
    /// A partition with `threads` service threads (at least one) polling `heads`.
    pub fn new(heads: Vec<(DomainId, Nrs<P>)>, threads: u32) -> CptService<P> {
        assert!(threads > 0, "a partition has at least one service thread");
        CptService {
            heads,
            threads,
            busy: 0,
            next: 0,
            arrived: 0,
            started: 0,
            completed: 0,
            sync_instance: 0,
            sync: SyncCounters::default(),
        }
    }

    /// The driver numbers every CptService of a cluster (0..n); messages carry it.
    pub fn set_sync_instance(&mut self, instance: u32) {
        assert!(
            instance < SYNC_INSTANCES_MAX,
            "instance numbers are below {SYNC_INSTANCES_MAX}"
        );
        self.sync_instance = instance;
    }

    pub fn sync_instance(&self) -> u32 {
        self.sync_instance
    }

    /// What this partition's policies announced and still hold true, stamped with this
    /// instance, for a peer that restarted and lost it ([`RequestScheduler::presence_reports`]).
    /// Not counted here: the driver sends them as it sends [`CptService::take_sync_out`]'s.
    pub fn presence_messages(&self) -> Vec<SyncMessage> {
        self.heads
            .iter()
            .flat_map(|(_, h)| h.presence_reports())
            .map(|report| SyncMessage {
                from_instance: self.sync_instance,
                report,
            })
            .collect()
    }

    /// Reports the heads' policies produced since the last call, stamped with this
    /// instance, counted (one broadcast each); at most [`SYNC_OUTBOX_LEN_MAX`], the oldest
    /// beyond it dropped and counted in `dropped_out`. Allocates nothing when nothing is
    /// pending (the simulator calls it after every event).
    pub fn take_sync_out(&mut self) -> Vec<SyncMessage> {
        let mut out: Vec<SyncMessage> = Vec::new();
        for (_, h) in &mut self.heads {
            // An empty Vec from a policy is `Vec::new()`: no allocation.
            let reports = h.take_service_reports();
            if reports.is_empty() {
                continue;
            }
            out.reserve(reports.len());
            out.extend(reports.into_iter().map(|report| SyncMessage {
                from_instance: self.sync_instance,
                report,
            }));
        }
        if out.len() > SYNC_OUTBOX_LEN_MAX {
            let excess = out.len() - SYNC_OUTBOX_LEN_MAX;
            out.drain(..excess);
            self.sync.dropped_out += excess as u64;
        }
        assert!(out.len() <= SYNC_OUTBOX_LEN_MAX);
        self.sync.broadcasts_out += out.len() as u64;
        self.sync.bytes_out += out.iter().map(SyncMessage::encoded_len_bytes).sum::<u64>();
        out
    }

    /// A message from another instance at `now_ns`: counted, validated (a message claiming
    /// this instance's own number, an instance number out of range, an absurd cost or a
    /// presence report with a cost is refused before any head sees it), then given to every
    /// head's policy; a policy may refuse it too (a flow key its type cannot have, a
    /// departure never announced, a full flow table), which counts as one refusal.
    pub fn deliver_sync(&mut self, now_ns: u64, message: &SyncMessage) {
        self.sync.messages_in += 1;
        self.sync.bytes_in += message.encoded_len_bytes();
        let valid = message.from_instance != self.sync_instance
            && message.from_instance < SYNC_INSTANCES_MAX
            && message.report.validate().is_ok();
        if !valid {
            self.sync.rejected_in += 1;
            return;
        }
        let mut refused = false;
        for (_, h) in &mut self.heads {
            refused |= h
                .on_peer_service(now_ns, message.from_instance, &message.report)
                .is_err();
        }
        if refused {
            self.sync.rejected_in += 1;
        }
    }

    pub fn sync_counters(&self) -> SyncCounters {
        self.sync
    }

    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Threads serving a request now.
    pub fn busy(&self) -> u32 {
        self.busy
    }

    pub fn head_count(&self) -> usize {
        self.heads.len()
    }

    pub fn head(&self, head: usize) -> &Nrs<P> {
        &self.heads[head].1
    }

    pub fn head_domain(&self, head: usize) -> DomainId {
        self.heads[head].0
    }

    /// Every head of `domain` on this partition, in order (for [`apply_write`]).
    pub fn domain_heads_mut(&mut self, domain: DomainId) -> impl Iterator<Item = &mut Nrs<P>> {
        self.heads
            .iter_mut()
            .filter(move |(d, _)| *d == domain)
            .map(|(_, h)| h)
    }

    /// Every head, in order.
    pub fn heads(&self) -> impl Iterator<Item = &Nrs<P>> {
        self.heads.iter().map(|(_, h)| h)
    }

    /// Requests waiting in the heads.
    pub fn queued(&self) -> u64 {
        self.arrived - self.started
    }

    /// Requests that arrived, started and completed since the partition was made.
    pub fn totals(&self) -> (u64, u64, u64) {
        (self.arrived, self.started, self.completed)
    }

    /// A request of `cost` arrives at head `head` at `now_ns`. The driver re-checks the
    /// head's timer afterwards ([`RequestScheduler::timer_deadline_ns`]): an arrival can move
    /// it earlier.
    pub fn arrive(&mut self, now_ns: u64, head: usize, tags: &RpcTags, cost: u64, payload: P) {
        self.heads[head]
            .1
            .enqueue_with_cost(now_ns, tags, cost, payload);
        self.arrived += 1;
        self.check_counts();
    }

    /// An idle thread asks for work at `now_ns`: the heads are polled round robin from the
    /// one after the last that gave work; each head that holds requests back is reported to
    /// `throttled(head, until_ns)` (the simulator arms one timer per head from it).
    pub fn dispatch(&mut self, now_ns: u64, mut throttled: impl FnMut(usize, u64)) -> Dispatch<P> {
        if self.busy >= self.threads {
            return Dispatch::AllBusy;
        }
        let len = self.heads.len();
        let mut until_min: Option<u64> = None;
        for i in 0..len {
            let slot = (self.next + i) % len;
            match self.heads[slot].1.dequeue_for_service(now_ns) {
                Dequeue::Request((payload, ticket)) => {
                    self.busy += 1;
                    self.started += 1;
                    self.next = (slot + 1) % len;
                    assert!(
                        self.busy <= self.threads,
                        "more requests in service than threads"
                    );
                    self.check_counts();
                    return Dispatch::Start {
                        head: slot,
                        payload,
                        ticket,
                    };
                }
                Dequeue::Throttled { until_ns } => {
                    throttled(slot, until_ns);
                    until_min = Some(until_min.map_or(until_ns, |u| u.min(until_ns)));
                }
                Dequeue::Empty => {}
            }
        }
        Dispatch::Wait {
            until_ns: until_min,
        }
    }

    /// The request a thread took from `head` with `ticket` finished at `now_ns`; the thread
    /// is free, and the policy that dispatched it (if it still runs) learns its cost.
    pub fn complete(
        &mut self,
        now_ns: u64,
        head: usize,
        ticket: ServiceTicket,
        tags: &RpcTags,
        cost: u64,
    ) {
        assert!(self.busy > 0, "a completion without a request in service");
        self.busy -= 1;
        self.completed += 1;
        self.heads[head].1.complete(now_ns, ticket, tags, cost);
        self.check_counts();
    }

    /// The throttle timer of `head` fires at `now_ns`.
    pub fn on_timer(&mut self, now_ns: u64, head: usize) {
        self.heads[head].1.on_timer(now_ns);
    }

    /// Fires every head timer that is due at `now_ns` (a driver that wakes on its own, like
    /// the `ossd`'s threads, rather than per head).
    pub fn fire_due_timers(&mut self, now_ns: u64) {
        for (_, h) in &mut self.heads {
            if h.timer_deadline_ns().is_some_and(|d| d <= now_ns) {
                h.on_timer(now_ns);
            }
        }
    }

    /// The armed timer deadline of `head`, if it throttles.
    pub fn timer_deadline_ns(&self, head: usize) -> Option<u64> {
        self.heads[head].1.timer_deadline_ns()
    }

    /// Applies `write` to this partition's heads of `domain` (see [`apply_write`]).
    pub fn apply_write(
        &mut self,
        now_ns: u64,
        domain: DomainId,
        write: &ControlWrite,
    ) -> Result<usize, NrsError> {
        apply_write(self.domain_heads_mut(domain), now_ns, write)
    }

    /// Removes every queued request, for a daemon that shuts down and answers them with an
    /// error: every head goes back to FIFO first (which moves the requests a policy holds
    /// into the FIFO in its drain order), so no throttle holds anything back.
    pub fn drain(&mut self, now_ns: u64) -> Vec<P> {
        let mut out = Vec::new();
        for (_, h) in &mut self.heads {
            h.write_policies(now_ns, "fifo")
                .expect("fifo is always accepted");
            while let Dequeue::Request(p) = h.dequeue(now_ns) {
                out.push(p);
            }
            assert_eq!(h.queued(), 0, "a FIFO head drains completely");
        }
        self.started += out.len() as u64;
        self.completed += out.len() as u64;
        self.check_counts();
        out
    }

    fn check_counts(&self) {
        debug_assert_eq!(
            self.heads
                .iter()
                .map(|(_, h)| h.queued() as u64)
                .sum::<u64>(),
            self.arrived - self.started,
            "the heads hold what arrived and has not started"
        );
        debug_assert_eq!(self.started, self.completed + u64::from(self.busy));
    }
}

/// Applies `write` to every head of a domain at `now_ns`; returns how many heads it reached.
///
/// The first error is the answer; a head that refuses does not stop the others. Lustre's
/// `ptlrpc_nrs_policy_control` instead stops at the first partition that refuses a write; the
/// two differ only after a write with a partial effect (a `change` that sets the rate, then
/// fails on a missing rank target), where pfsqos leaves every head alike rather than only the
/// first one changed (docs/tbf-conformance.md, "Departures";
/// `pfsqos_core::sched::nrs::write_service` is Lustre's walk, used by the conformance tests).
pub fn apply_write<'a, P: Send + 'static>(
    heads: impl IntoIterator<Item = &'a mut Nrs<P>>,
    now_ns: u64,
    write: &ControlWrite,
) -> Result<usize, NrsError> {
    let mut result = Ok(());
    let (mut applied, mut failed) = (0usize, 0usize);
    for head in heads {
        let r = match write {
            ControlWrite::NrsPolicies(text) => head.write_policies(now_ns, text),
            ControlWrite::NrsPolicyParam { param, text } => {
                head.write_policy_param(now_ns, param, text)
            }
        };
        match r {
            Ok(()) => applied += 1,
            Err(e) => {
                failed += 1;
                if result.is_ok() {
                    result = Err(e);
                }
            }
        }
    }
    // Not asserted: that every head answers alike. The regular and high-priority heads may
    // hold different policies (`nrs_policies=hp fifo`), so one write can suit some and not
    // others, as in Lustre.
    assert!(applied + failed > 0, "a domain has at least one head");
    result.map(|()| applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::errno::Errno;
    use pfsqos_core::sched::tbf::ListingForm;

    #[test]
    fn a_write_reaches_every_head_and_the_first_error_answers() {
        let mut heads: Vec<Nrs<u32>> = (0..3).map(|_| Nrs::new()).collect();
        let start = ControlWrite::NrsPolicies("tbf jobid".into());
        assert_eq!(apply_write(heads.iter_mut(), 0, &start), Ok(3));
        let rule = ControlWrite::tbf_rule("start a jobid={a} rate=10");
        assert_eq!(apply_write(heads.iter_mut(), 1, &rule), Ok(3));
        let twice = apply_write(heads.iter_mut(), 2, &rule).unwrap_err();
        assert_eq!(twice.errno, Errno::EEXIST);
        // Every head, on its own, holds the rule.
        for h in &mut heads {
            assert_eq!(
                h.write_policy_param(
                    3,
                    pfsqos_core::sched::nrs::PARAM_TBF_RULE,
                    "change a rate=5"
                ),
                Ok(())
            );
        }
        let bad = ControlWrite::tbf_rule("change nosuch rate=5");
        assert_eq!(
            apply_write(heads.iter_mut(), 4, &bad).unwrap_err().errno,
            Errno::ENOENT
        );
    }

    /// A `change` with a partial effect (the rate is set, then the rank target is missing)
    /// leaves every head alike: all changed, all answering ENOENT.
    #[test]
    fn a_partial_effect_lands_on_every_head_alike() {
        let mut heads: Vec<Nrs<u32>> = (0..3).map(|_| Nrs::new()).collect();
        let start = ControlWrite::NrsPolicies("tbf jobid".into());
        assert_eq!(apply_write(heads.iter_mut(), 0, &start), Ok(3));
        let b = ControlWrite::tbf_rule("start b jobid={b} rate=3");
        assert_eq!(apply_write(heads.iter_mut(), 1, &b), Ok(3));
        let partial = ControlWrite::tbf_rule("change b rate=7 rank=nosuch");
        assert_eq!(
            apply_write(heads.iter_mut(), 2, &partial)
                .unwrap_err()
                .errno,
            Errno::ENOENT
        );
        let listings: Vec<String> = heads
            .iter()
            .map(|h| format!("{:?}", h.tbf().unwrap().listing(ListingForm::Expression)))
            .collect();
        assert!(listings.iter().all(|l| l == &listings[0]), "{listings:?}");
        assert!(
            listings[0].contains('7'),
            "the rate was set: {}",
            listings[0]
        );
    }
}
