//! A 4-ary min-heap of backlogged flows by their head request's `(start tag, arrival)`.
//!
//! Half the levels of a binary heap: with 100,000 flows the heap no longer fits in the
//! caches, and a dispatch's descent costs one miss per level. Entries are 32 bytes (the
//! `u128` start tag is kept whole, so the order is exactly the tags' order), stored in
//! 128-byte-aligned groups of four with the root in the last slot of group 0, so the four
//! children `4i+1..=4i+4` of node `i` are exactly group `i + 1`: one aligned pair of cache
//! lines per level (which the L2's adjacent-line prefetcher fetches together) instead of
//! three lines for a group that straddles them. TBF's heap has the same layout with 16-byte
//! entries (`tbf/heap.rs`).

use super::Tag;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) start: Tag,
    pub(super) seq: u64,
    pub(super) flow: u32,
}

impl Entry {
    /// `(start, seq)` order, spelled out without branches (`|` and `&`, not `||` and `&&`):
    /// ties are common (equal weights and costs give equal tags) and fall either way, so a
    /// branch on them would be mispredicted about half the time in the descent, which
    /// dominates a dispatch.
    #[inline(always)]
    fn before(&self, other: &Entry) -> bool {
        (self.start < other.start) | ((self.start == other.start) & (self.seq < other.seq))
    }
}

/// The position (0..4) of the least of a full group: a tournament of three comparisons.
#[inline(always)]
fn least_of_four(g: &[Entry; ARITY]) -> usize {
    let a = if g[1].before(&g[0]) { 1 } else { 0 };
    let b = if g[3].before(&g[2]) { 3 } else { 2 };
    if g[b].before(&g[a]) {
        b
    } else {
        a
    }
}

const ARITY: usize = 4;
/// Slots before the root, so that node 1 starts a group.
const OFFSET: usize = ARITY - 1;

#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(128))]
struct Group([Entry; ARITY]);

const _: () = assert!(std::mem::size_of::<Entry>() == 32);
const _: () = assert!(std::mem::size_of::<Group>() == 128);

#[derive(Debug, Default)]
pub(super) struct QuadHeap {
    groups: Vec<Group>,
    len: usize,
}

impl QuadHeap {
    #[inline]
    fn get(&self, i: usize) -> Entry {
        debug_assert!(i < self.len);
        let p = i + OFFSET;
        self.groups[p / ARITY].0[p % ARITY]
    }

    #[inline]
    fn set(&mut self, i: usize, e: Entry) {
        debug_assert!(i < self.len);
        let p = i + OFFSET;
        self.groups[p / ARITY].0[p % ARITY] = e;
    }

    /// The smallest entry.
    #[inline]
    pub(super) fn peek(&self) -> Option<Entry> {
        (self.len > 0).then(|| self.get(0))
    }

    pub(super) fn push(&mut self, e: Entry) {
        let mut i = self.len;
        if (i + OFFSET) / ARITY == self.groups.len() {
            self.groups.push(Group::default());
        }
        self.len += 1;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.get(parent);
            if !e.before(&p) {
                break;
            }
            self.set(i, p);
            i = parent;
        }
        self.set(i, e);
    }

    /// Removes the least entry. Bottom-up (Floyd): the hole left by the root moves down
    /// along the least children to a leaf, three comparisons per level, and the former last
    /// entry then rises from there; it is among the largest (the newest start tags), so it
    /// rarely rises, and the comparison against it on every level of the top-down form is
    /// saved. Any correct heap pops the unique least `(start, seq)`, so the dispatch order
    /// does not depend on the form.
    pub(super) fn pop(&mut self) -> Option<Entry> {
        if self.len == 0 {
            return None;
        }
        let top = self.get(0);
        self.len -= 1;
        let n = self.len;
        if n > 0 {
            let last = self.get_unchecked_len(n);
            let mut i = 0;
            loop {
                let first = i * ARITY + 1;
                if first >= n {
                    break;
                }
                // Children of `i` are group `i + 1`, of which the first `n - first` are live.
                let group = &self.groups[i + 1].0;
                let best = if first + ARITY <= n {
                    least_of_four(group)
                } else {
                    let mut best = 0;
                    for k in 1..n - first {
                        if group[k].before(&group[best]) {
                            best = k;
                        }
                    }
                    best
                };
                let child = group[best];
                self.set(i, child);
                i = first + best;
            }
            while i > 0 {
                let parent = (i - 1) / ARITY;
                let p = self.get(parent);
                if !last.before(&p) {
                    break;
                }
                self.set(i, p);
                i = parent;
            }
            self.set(i, last);
        }
        // Drop a trailing group once it holds nothing, so `push` appends exactly when the
        // next slot starts a new group.
        if (n + OFFSET) / ARITY + 1 < self.groups.len() {
            self.groups.pop();
        }
        Some(top)
    }

    /// The entry at `i`, which is the (now out of range) former last slot.
    #[inline]
    fn get_unchecked_len(&self, i: usize) -> Entry {
        let p = i + OFFSET;
        self.groups[p / ARITY].0[p % ARITY]
    }

    pub(super) fn clear(&mut self) {
        self.groups.clear();
        self.len = 0;
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Pops come out in `(start, seq)` order, against a sorted model; peeks agree.
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
                let least = model.iter().min().copied();
                prop_assert_eq!(heap.peek().map(|e| (e.start, e.seq)), least);
                // Storage follows the length: the slot after the last is in the last group
                // or starts the next one.
                prop_assert!(heap.len() == 0 || heap.groups.len() * ARITY >= heap.len() + OFFSET);
                prop_assert!(heap.groups.len() <= (heap.len() + OFFSET) / ARITY + 1);
            }
        }
    }
}
