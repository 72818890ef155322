//! Storage of the 4-ary class heap, laid out so that the four children of a node share one
//! cache line.
//!
//! Entries are 16 bytes and the array is stored in 64-byte-aligned lines with the root in the
//! last slot of line 0, so the children `4i+1..=4i+4` of node `i` are exactly line `i + 1`.
//! A sift-down then touches one line per level instead of two or three, which is what its
//! time goes to once the heap outgrows the caches (100k classes).

/// One heap entry: the class and its deadline. The tie-break (`check_time`) is read from the
/// class on equal deadlines, which keeps the entry at 16 bytes.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(super) struct HeapEntry {
    pub(super) deadline_ns: u64,
    pub(super) class: u32,
}

pub(super) const ARITY: usize = 4;
/// Slots before the root, so that node 1 starts a line.
const OFFSET: usize = ARITY - 1;

#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Line([HeapEntry; ARITY]);

const _: () = assert!(std::mem::size_of::<Line>() == 64);

#[derive(Debug, Default)]
pub(super) struct LineHeap {
    lines: Vec<Line>,
    len: usize,
}

impl LineHeap {
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(super) fn get(&self, i: usize) -> HeapEntry {
        debug_assert!(i < self.len);
        let p = i + OFFSET;
        self.lines[p / ARITY].0[p % ARITY]
    }

    #[inline]
    pub(super) fn set(&mut self, i: usize, e: HeapEntry) {
        debug_assert!(i < self.len);
        let p = i + OFFSET;
        self.lines[p / ARITY].0[p % ARITY] = e;
    }

    /// The children of `i` (the first `min(4, len - (4i+1))` are valid).
    #[inline]
    pub(super) fn children(&self, i: usize) -> &[HeapEntry; ARITY] {
        &self.lines[i + 1].0
    }

    pub(super) fn push(&mut self, e: HeapEntry) {
        let p = self.len + OFFSET;
        if p / ARITY == self.lines.len() {
            self.lines.push(Line::default());
        }
        self.len += 1;
        self.set(self.len - 1, e);
    }

    pub(super) fn pop(&mut self) -> Option<HeapEntry> {
        if self.len == 0 {
            return None;
        }
        let e = self.get(self.len - 1);
        self.len -= 1;
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_one_aligned_line() {
        let mut h = LineHeap::default();
        for k in 0..40u32 {
            h.push(HeapEntry {
                deadline_ns: k as u64,
                class: k,
            });
        }
        assert_eq!(h.len(), 40);
        for i in 0..9usize {
            let c = h.children(i);
            assert_eq!(c.as_ptr() as usize % 64, 0);
            for (k, e) in c.iter().enumerate() {
                assert_eq!(e.class as usize, ARITY * i + 1 + k);
            }
        }
        assert_eq!(h.pop().map(|e| e.class), Some(39));
        assert_eq!(h.get(38).class, 38);
        assert_eq!(h.len(), 39);
    }
}
