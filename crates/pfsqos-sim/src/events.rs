//! The event queue: a binary min-heap ordered by `(time_ns, seq)`. `seq` is the push order, so
//! events at the same time run in the order they were scheduled and a run is deterministic.
//! Events are small `Copy` values holding indices into the engine's tables, so steady-state
//! operation allocates nothing.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

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

/// `key` is `time_ns << 64 | seq`: one integer comparison orders by time, then push order.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
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
        other.key.cmp(&self.key)
    }
}

/// Deterministic future-event list: a heap for events at arbitrary times, plus a FIFO lane for
/// events pushed in non-decreasing time order (messages that only cost the constant network
/// latency, about half of all events). Popping takes the smaller `(time, seq)` of the two
/// heads, so the order is exactly that of a single heap; the lane just skips the heap work.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    lane: VecDeque<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, time_ns: u64, event: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            key: (u128::from(time_ns) << 64) | u128::from(self.seq),
            event,
        });
    }

    /// Like [`EventQueue::push`], for a caller whose `push_ordered` times never decrease
    /// (e.g. always `now + constant`).
    pub fn push_ordered(&mut self, time_ns: u64, event: Event) {
        self.seq += 1;
        let key = (u128::from(time_ns) << 64) | u128::from(self.seq);
        debug_assert!(self.lane.back().is_none_or(|b| b.key < key));
        self.lane.push_back(Entry { key, event });
    }

    /// The earliest event, ties broken by scheduling order.
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let from_lane = match (self.lane.front(), self.heap.peek()) {
            (Some(l), Some(h)) => l.key < h.key,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let e = if from_lane {
            self.lane.pop_front()
        } else {
            self.heap.pop()
        }?;
        Some(((e.key >> 64) as u64, e.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.lane.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lane.is_empty()
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

    proptest::proptest! {
        #[test]
        fn lane_and_heap_pop_like_one_heap(
            steps in proptest::collection::vec((0u64..20, 0u64..50, proptest::bool::ANY), 0..300),
        ) {
            // `now` advances; ordered pushes are `now + 7`, the others anywhere in the future.
            let (mut q, mut all) = (EventQueue::new(), Vec::new());
            let mut now = 0;
            for (i, &(advance, delay, ordered)) in steps.iter().enumerate() {
                now += advance;
                let ev = Event::SchedTimer { sched: i as u32 };
                if ordered {
                    q.push_ordered(now + 7, ev);
                    all.push((now + 7, i as u32));
                } else {
                    q.push(now + delay, ev);
                    all.push((now + delay, i as u32));
                }
            }
            all.sort();
            let mut got = Vec::new();
            while let Some((t, Event::SchedTimer { sched })) = q.pop() {
                got.push((t, sched));
            }
            proptest::prop_assert_eq!(got, all);
        }
    }
}
