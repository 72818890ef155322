//! The event queue: a binary min-heap ordered by `(time_ns, seq)`. `seq` is the push order, so
//! events at the same time run in the order they were scheduled and a run is deterministic.
//! Events are small `Copy` values holding indices into the engine's tables, so steady-state
//! operation allocates nothing.

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
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
    /// A service thread has spent its CPU time on a request (`[[oss]] rpc_cpu_us`).
    ServiceCpuDone { rpc: u32 },
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
    /// The OSSs' statistics period elapsed: a report to the placer
    /// (`files_created = "first_io"`).
    StatsReport,
    /// A distributed scheduler's synchronization message (held in slot `slot`) reaches the
    /// CPU partition `pool`.
    SyncDeliver { pool: u32, slot: u32 },
}

/// `key` is `time_ns << 64 | seq`: one integer comparison orders by time, then push order.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    event: Event,
}

/// A heap item: a lone event, or the head of lane `lane` (then `event` is that head's).
#[derive(Clone, Copy, Debug)]
struct Item {
    key: u128,
    /// `NO_LANE` for a lone event.
    lane: u32,
    event: Event,
}

const NO_LANE: u32 = u32::MAX;

impl PartialEq for Item {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Item {
    // Reversed: `BinaryHeap` is a max-heap and the earliest event must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// Deterministic future-event list.
///
/// Most events are pushed by a resource whose event times never decrease (a FIFO link, a
/// device's transfer serializer, the constant network latency). Each such resource gets a
/// *lane*: a FIFO of its pending events, of which only the head sits in the heap. Popping a
/// lane's head replaces it in the heap by the lane's next event (one sift-down), so the heap
/// holds one item per busy resource instead of one per pending event. The pop order is
/// exactly that of a single heap on `(time, seq)`.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Item>,
    lanes: Vec<VecDeque<Entry>>,
    seq: u64,
    len: usize,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// A queue with `lanes` ordered lanes, numbered from 0.
    pub fn with_lanes(lanes: usize) -> Self {
        EventQueue {
            lanes: (0..lanes).map(|_| VecDeque::new()).collect(),
            ..Self::default()
        }
    }

    fn next_key(&mut self, time_ns: u64) -> u128 {
        self.seq += 1;
        self.len += 1;
        (u128::from(time_ns) << 64) | u128::from(self.seq)
    }

    /// Schedules `event` at `time_ns`.
    pub fn push(&mut self, time_ns: u64, event: Event) {
        let key = self.next_key(time_ns);
        self.heap.push(Item {
            key,
            lane: NO_LANE,
            event,
        });
    }

    /// Schedules `event` at `time_ns` on `lane`. The caller guarantees that the times it
    /// pushes on one lane never decrease.
    pub fn push_lane(&mut self, lane: u32, time_ns: u64, event: Event) {
        let key = self.next_key(time_ns);
        let fifo = &mut self.lanes[lane as usize];
        debug_assert!(
            fifo.back().is_none_or(|b| b.key < key),
            "lane {lane} went back in time"
        );
        if fifo.is_empty() {
            self.heap.push(Item { key, lane, event });
        }
        fifo.push_back(Entry { key, event });
    }

    /// The earliest event, ties broken by scheduling order.
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let mut top = self.heap.peek_mut()?;
        let item = *top;
        if item.lane == NO_LANE {
            PeekMut::pop(top);
        } else {
            let fifo = &mut self.lanes[item.lane as usize];
            fifo.pop_front();
            match fifo.front() {
                Some(next) => {
                    *top = Item {
                        key: next.key,
                        lane: item.lane,
                        event: next.event,
                    };
                }
                None => {
                    PeekMut::pop(top);
                }
            }
        }
        self.len -= 1;
        Some(((item.key >> 64) as u64, item.event))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
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
            let (mut q, mut all) = (EventQueue::with_lanes(1), Vec::new());
            let mut now = 0;
            for (i, &(advance, delay, ordered)) in steps.iter().enumerate() {
                now += advance;
                let ev = Event::SchedTimer { sched: i as u32 };
                if ordered {
                    q.push_lane(0, now + 7, ev);
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
