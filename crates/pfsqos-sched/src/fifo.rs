//! First come, first served: Lustre's always-running fallback policy and the `No BW` baseline.

use std::collections::VecDeque;

use super::{Dequeue, RequestScheduler};
use crate::model::RpcTags;

/// A plain FIFO queue of requests.
#[derive(Debug)]
pub struct Fifo<P> {
    queue: VecDeque<P>,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Fifo {
            queue: VecDeque::new(),
        }
    }
}

impl<P> Fifo<P> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Removes and returns every queued request, oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = P> + '_ {
        self.queue.drain(..)
    }
}

impl<P> RequestScheduler<P> for Fifo<P> {
    fn enqueue_with_cost(&mut self, _now_ns: u64, _tags: &RpcTags, _cost: u64, payload: P) {
        self.queue.push_back(payload);
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeue<P> {
        match self.queue.pop_front() {
            Some(p) => Dequeue::Request(p),
            None => Dequeue::Empty,
        }
    }

    fn on_timer(&mut self, _now_ns: u64) {}

    fn timer_deadline_ns(&self) -> Option<u64> {
        None
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(job: &str) -> RpcTags {
        crate::test_write(job)
    }

    #[test]
    fn serves_in_arrival_order_regardless_of_class() {
        let mut f = Fifo::new();
        f.enqueue(0, &tags("a"), 1);
        f.enqueue(1, &tags("b"), 2);
        f.enqueue(2, &tags("a"), 3);
        assert_eq!(f.queued(), 3);
        assert_eq!(f.dequeue(5), Dequeue::Request(1));
        assert_eq!(f.dequeue(5), Dequeue::Request(2));
        assert_eq!(f.dequeue(5), Dequeue::Request(3));
        assert_eq!(f.dequeue(5), Dequeue::Empty);
    }
}
