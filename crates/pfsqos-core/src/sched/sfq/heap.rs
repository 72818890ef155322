//! A 4-ary min-heap of backlogged flows by their head request's `(start tag, arrival)`.
//!
//! Half the levels of a binary heap: with 100,000 flows the heap no longer fits in the
//! caches, and a dispatch's descent costs one miss per level. Entries are 32 bytes, so a
//! node's four children are two cache lines.

use super::Tag;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) start: Tag,
    pub(super) seq: u64,
    pub(super) flow: u32,
}

impl Entry {
    #[inline]
    fn before(&self, other: &Entry) -> bool {
        (self.start, self.seq) < (other.start, other.seq)
    }
}

const ARITY: usize = 4;

#[derive(Debug, Default)]
pub(super) struct QuadHeap {
    items: Vec<Entry>,
}

impl QuadHeap {
    pub(super) fn push(&mut self, e: Entry) {
        let mut i = self.items.len();
        self.items.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !e.before(&self.items[parent]) {
                break;
            }
            self.items[i] = self.items[parent];
            i = parent;
        }
        self.items[i] = e;
    }

    pub(super) fn pop(&mut self) -> Option<Entry> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = self.items[0];
        let n = self.items.len();
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut best = first;
            for c in first + 1..end {
                if self.items[c].before(&self.items[best]) {
                    best = c;
                }
            }
            if !self.items[best].before(&last) {
                break;
            }
            self.items[i] = self.items[best];
            i = best;
        }
        self.items[i] = last;
        Some(top)
    }

    pub(super) fn clear(&mut self) {
        self.items.clear();
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Pops come out in `(start, seq)` order, against a sorted model.
        #[test]
        fn pops_in_order(ops in prop::collection::vec((any::<bool>(), 0u128..50), 1..300)) {
            let mut heap = QuadHeap::default();
            let mut model: Vec<(Tag, u64)> = Vec::new();
            for (seq, (push, start)) in ops.into_iter().enumerate() {
                if push {
                    heap.push(Entry { start, seq: seq as u64, flow: seq as u32 });
                    model.push((start, seq as u64));
                } else {
                    model.sort_unstable();
                    let expected = (!model.is_empty()).then(|| model.remove(0));
                    prop_assert_eq!(heap.pop().map(|e| (e.start, e.seq)), expected);
                }
                prop_assert_eq!(heap.len(), model.len());
            }
        }
    }
}
