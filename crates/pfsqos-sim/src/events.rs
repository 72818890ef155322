//! The event queue: a binary min-heap ordered by `(time_ns, seq)`. `seq` is the push order, so
//! events at the same time run in the order they were scheduled and a run is deterministic.
//! Events are small `Copy` values holding indices into the engine's tables, so steady-state
//! operation allocates nothing.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Something that happens at an instant. Indices refer to the engine's `Vec`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A process begins (or resumes with) a burst of I/O.
    BurstStart { process: u32 },
    /// A process reaches its `stop_s`.
    ProcessStop { process: u32 },
    /// An RPC request message reaches its OSS.
    RequestArrive { rpc: u32 },
    /// A write's bulk data starts leaving the client: reserve the server's downlink.
    WriteBulkHop { rpc: u32 },
    /// A request (write data received, or read request taken by a thread) reaches the device.
    DeviceSubmit { rpc: u32 },
    /// The device finished an RPC.
    DeviceDone { rpc: u32 },
    /// A read's bulk data starts leaving the server: reserve the client's downlink.
    ReadBulkHop { rpc: u32 },
    /// A read's data (and reply) reached the client; the service thread is released.
    ReadDone { rpc: u32 },
    /// A write's reply reached the client.
    WriteReply { rpc: u32 },
    /// A scheduler's throttle timer fires.
    SchedTimer { sched: u32 },
    /// The controller's period elapsed.
    ControlTick,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time_ns: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time_ns == other.time_ns && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: `BinaryHeap` is a max-heap and the earliest event must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time_ns
            .cmp(&self.time_ns)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Deterministic future-event list.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, time_ns: u64, event: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            time_ns,
            seq: self.seq,
            event,
        });
    }

    /// The earliest event, ties broken by scheduling order.
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|e| (e.time_ns, e.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_push_order() {
        let mut q = EventQueue::new();
        q.push(20, Event::ControlTick);
        q.push(10, Event::SchedTimer { sched: 1 });
        q.push(10, Event::SchedTimer { sched: 2 });
        q.push(5, Event::SchedTimer { sched: 3 });
        assert_eq!(q.pop(), Some((5, Event::SchedTimer { sched: 3 })));
        assert_eq!(q.pop(), Some((10, Event::SchedTimer { sched: 1 })));
        assert_eq!(q.pop(), Some((10, Event::SchedTimer { sched: 2 })));
        assert_eq!(q.pop(), Some((20, Event::ControlTick)));
        assert_eq!(q.pop(), None);
    }
}
