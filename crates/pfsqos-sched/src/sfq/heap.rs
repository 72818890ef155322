//! The heap of queued requests by `(start tag, arrival)`: every queued request of every flow
//! not held (NWC), not only each flow's oldest. A flow's requests have increasing
//! `(start, arrival)` in arrival order (a start tag is at least the flow's previous finish
//! tag), so the least of all queued requests is the least of the flows' oldest: the request
//! SFQ serves next. Holding them all lets a dispatch take the least without reading the
//! dispatched flow to find its next request, which is already here (see `Sfq`'s doc).
//!
//! # Entries: 16 bytes relative to a base
//!
//! With 100,000 queued requests the heap outgrows the L1 and a dispatch's descent costs one
//! miss per level, so the entry size decides how many lines a descent touches and whether the
//! heap fits in a core's L2 (2 MiB here: 1.6 MB at 16 bytes, 3.2 MB at the 32 of a whole
//! `u128` tag, `u64` arrival and `u32` slot). An entry here is one `u128` key:
//!
//! ```text
//!   bits 127..64   start - base_start      (u64: the tag relative to the base)
//!   bits  63..24   seq - base_seq          (40 bits: the arrival relative to the base)
//!   bits  23..0    slot                    (24 bits: the request's slot in `Sfq::requests`)
//! ```
//!
//! **Order (the proof the dispatch order is unchanged).** For two entries `a`, `b` inside
//! the window (`0 <= start - base_start < 2^64`, `0 <= seq - base_seq < 2^40`,
//! `slot < 2^24 - 1`), the map from `(start, seq)` to the key is strictly monotone:
//! * `a.start < b.start` gives `a.start - base_start < b.start - base_start`, both below
//!   2^64, so `a`'s high word is smaller and `key(a) < key(b)` whatever the low words;
//! * `a.start == b.start` gives equal high words, and `a.seq < b.seq` gives
//!   `a.seq - base_seq < b.seq - base_seq`, both below 2^40, so the low word
//!   `(rel_seq << 24) | slot` of `a` is smaller (the slot is below 2^24 and sits under the
//!   lowest arrival bit).
//!
//! Arrival numbers are unique (each request has its own), so no two keys are equal and the
//! key order *is* the `(start, seq)` order: one `u128` comparison (`cmp` + `sbb`, no branch)
//! replaces the three-part comparison of the wide entry, and the heap pops exactly what the
//! wide heap popped. The fields are recovered exactly (`decode` inverts `encode` inside the
//! window).
//!
//! **Range (why an entry can fall outside, and what happens then).** Tags only grow in
//! steady state (arrivals start at the virtual time or later), so entries leave the window
//! at its top. Nothing bounds the spread of the queued tags (a 4 GiB request of a weight-1
//! flow spans 2^64 tag units by itself; one peer report of delay up to 2^73), nor how long an
//! arrival waits (a flow with a far start tag waits while others are served), and a held
//! flow's requests (NWC) come back below the base. So:
//! * an entry outside the window triggers a **rebase**: the base moves to the least start
//!   and the least arrival in the heap (the new entry's too, if the whole set then fits),
//!   and every key is re-encoded. Re-encoding is monotone (same proof), so the heap
//!   property holds without sifting. A rebase costs O(len); it is allowed only after at
//!   least `len` pushes since the last one (or when the narrow heap is empty, where it is
//!   free), so its cost is amortized O(1) per push;
//! * an entry that still does not fit (the spread of the queued tags is 2^64 or more, or
//!   the rebase is not yet allowed, or its slot needs more than 24 bits: over 16 million
//!   requests queued at one instance) goes to a **wide side heap** of whole
//!   `(u128, u64, u32)` entries. A pop takes the lesser of the two heads by `(start, seq)`; the side heap is
//!   empty in any steady state whose tags span less than 2^64 units (4 GiB per unit
//!   weight), so the common pop is the narrow heap's alone.
//!
//! # Layout
//!
//! 4-ary: half the levels of a binary heap. Keys are stored in 64-byte-aligned lines of
//! four with the root in the last slot of line 0, so the four children `4i+1..=4i+4` of
//! node `i` are exactly line `i + 1`: one cache line per level (TBF's heap has the same
//! layout, `tbf/heap.rs`).
//!
//! # A sorted run in front of the heap
//!
//! A dispatch's descent is the heap's cost: 8-9 dependent levels at 100,000 queued requests,
//! some 400 instructions. But keys often arrive in increasing
//! order: when flows share a weight and a request size, each flow's next start tag is its
//! last plus the same step, and the flows are served round robin, so every new key is
//! above every key queued (the common HPC case of equal jobs writing 1 MiB RPCs). So the
//! narrow keys are a **run** (a FIFO of increasing keys) and the heap ([`KeyQueue`]): a key
//! above the run's last key is appended to the run, any other is pushed on the heap, and a
//! pop takes the lesser of the run's first key and the heap's top. That is a priority queue
//! for any order of keys (the run is sorted, the heap is a heap, and the least of both is
//! the least of all), so the dispatch order is unchanged.
//!
//! # A radix heap for the keys out of order
//!
//! Keys that do not extend the run (mixed request sizes: flows' tags advance by varying
//! steps) go to a radix heap ([`RadixHeap`]) whenever they are not below the last key it
//! popped, which holds for every arrival (its start is at least the virtual time, the start
//! of the last dispatch, and its arrival number is the newest), so only a held flow's
//! requests coming back (NWC) reach the 4-ary heap. A radix heap's pushes and pops append to
//! and drain a few vectors instead of descending eight levels of a 1.6 MB heap at random.
//! Keys are unique, so any exact priority queue pops them in the same order: the dispatch
//! order, ties included, is the one the 4-ary heap gave. In the increasing case the heap
//! stays empty and an arrival costs a FIFO push (into the run's own ring, [`Ring`]) and a
//! dispatch a pop, while keys out of order cost what the heap alone costs plus a comparison
//! at each push and pop (the `mixed_sizes` bench, request sizes 4 KiB-1 MiB). More runs,
//! filled best-fit as in patience sorting, would keep several increasing sequences (flows of
//! a few weights) out of the heap, but each run adds a comparison to every push and pop, and
//! four of them cost more than one on both benches.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::Tag;

/// A queued request as the scheduler pushes and pops it: its tags and its slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) start: Tag,
    pub(super) seq: u64,
    pub(super) slot: u32,
}

impl Entry {
    #[inline]
    fn order(&self) -> (Tag, u64) {
        (self.start, self.seq)
    }
}

/// Low bits of a key holding the request's slot (`Sfq`'s request table).
const SLOT_BITS: u32 = 24;
/// Keys hold slots below this (below [`SLOT_MASK`], so no key is [`DEAD`]); an entry with a
/// larger slot (more than 16 million requests queued at one instance) goes to the wide side
/// heap, which holds any `u32`.
const SLOT_LIMIT: u32 = 1 << SLOT_BITS;
/// Bits of the relative arrival number.
const SEQ_BITS: u32 = 64 - SLOT_BITS;
/// The arrival window: `seq - base_seq` is below this.
const SEQ_SPAN: u64 = 1 << SEQ_BITS;
const SLOT_MASK: u64 = SLOT_LIMIT as u64 - 1;

type Key = u128;

const ARITY: usize = 4;
/// Slots before the root, so that node 1 starts a line.
const OFFSET: usize = ARITY - 1;

#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Line([Key; ARITY]);

const _: () = assert!(std::mem::size_of::<Key>() == 16);
const _: () = assert!(std::mem::size_of::<Line>() == 64);

/// The position (0..4) of the least key of a full line: a tournament of three comparisons.
#[inline(always)]
fn least_of_four(g: &[Key; ARITY]) -> usize {
    let a = if g[1] < g[0] { 1 } else { 0 };
    let b = if g[3] < g[2] { 3 } else { 2 };
    if g[b] < g[a] {
        b
    } else {
        a
    }
}

/// A slot without a key. No key equals it: a key's low 24 bits are a request slot below
/// [`SLOT_MASK`] (`encode` sends any other to the side heap).
const DEAD: Key = Key::MAX;

/// A 4-ary min-heap of keys, one cache line per level.
///
/// **Storage invariant** (what lets the descent stop without comparing indices to the
/// length): for `len > 0`, `lines` holds exactly the lines that contain a key, i.e.
/// `lines.len() == lines_for(len)`, and every slot that holds no key is [`DEAD`]. Then the
/// children of node `i` (line `i + 1`) exist iff the first of them, node `4i + 1`, holds a
/// key (line `i + 1` exists iff `i + 1 < (len + 2) / 4 + 1` iff `4i + 1 < len`), so the
/// descent's only test is whether the children's line exists (the slice lookup it needs
/// anyway), and a line with fewer than four keys needs no branch of its own: its dead
/// slots are larger than any key and never the least.
#[derive(Debug, Default)]
struct KeyHeap {
    lines: Vec<Line>,
    len: usize,
}

/// Lines holding `len > 0` keys: node `i` is slot `i + OFFSET`, line `(i + OFFSET) / 4`.
#[inline(always)]
fn lines_for(len: usize) -> usize {
    (len - 1 + OFFSET) / ARITY + 1
}

impl KeyHeap {
    #[inline]
    fn slot(&self, i: usize) -> Key {
        let p = i + OFFSET;
        self.lines[p / ARITY].0[p % ARITY]
    }

    #[inline]
    fn get(&self, i: usize) -> Key {
        debug_assert!(i < self.len);
        self.slot(i)
    }

    #[inline]
    fn set_slot(&mut self, i: usize, k: Key) {
        let p = i + OFFSET;
        self.lines[p / ARITY].0[p % ARITY] = k;
    }

    #[inline]
    fn set(&mut self, i: usize, k: Key) {
        debug_assert!(i < self.len);
        self.set_slot(i, k);
    }

    #[inline]
    fn peek(&self) -> Option<Key> {
        (self.len > 0).then(|| self.get(0))
    }

    #[inline]
    fn push(&mut self, k: Key) {
        debug_assert!(k != DEAD);
        let i = self.len;
        if (i + OFFSET) / ARITY == self.lines.len() {
            self.lines.push(Line([DEAD; ARITY]));
        }
        self.len += 1;
        assert_eq!(
            self.lines.len(),
            lines_for(self.len),
            "heap storage invariant"
        );
        self.sift_up(i, k);
    }

    /// Puts `k` at node `i` (a hole) or above it: parents greater than `k` move down into the
    /// hole until one is not (the rise of `push`, and of `pop`'s key from the leaf).
    #[inline]
    fn sift_up(&mut self, mut i: usize, k: Key) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.get(parent);
            if k >= p {
                break;
            }
            self.set(i, p);
            i = parent;
        }
        self.set(i, k);
    }

    /// Removes the least key. Bottom-up (Floyd): the hole left by the root moves down along
    /// the least children to a leaf, three comparisons per level, and the former last key
    /// then rises from there; it is among the largest (the newest start tags), so it rarely
    /// rises, and the comparison against it on every level of the top-down form is saved.
    #[inline]
    fn pop(&mut self) -> Option<Key> {
        if self.len == 0 {
            return None;
        }
        let top = self.get(0);
        self.len -= 1;
        let n = self.len;
        if n > 0 {
            // The former last slot, now out of range: dead before the descent, so the hole
            // never moves into it; its line goes if it held no other key.
            let last = self.slot(n);
            self.set_slot(n, DEAD);
            if (n + OFFSET).is_multiple_of(ARITY) {
                self.lines.pop();
            }
            assert_eq!(self.lines.len(), lines_for(n), "heap storage invariant");
            self.fill_root(last);
        } else {
            // The root's line stays (it holds the offset slots): `push` finds it.
            self.set_slot(0, DEAD);
        }
        Some(top)
    }

    /// Fills the root's slot, whose key is gone, with `k`: the hole descends along the least
    /// children to a leaf (the storage invariant ends the descent: see the type's doc), and
    /// `k` rises from there.
    #[inline(always)]
    fn fill_root(&mut self, k: Key) {
        let lines = &mut self.lines[..];
        // The hole: node `i`, in line `hole_line` at `hole_slot`.
        let mut i = 0;
        let (mut hole_line, mut hole_slot) = (0, OFFSET);
        while let Some(Line(children)) = lines.get(i + 1) {
            // At least the first child holds a key, and dead slots are never the least.
            let best = least_of_four(children);
            let child = children[best];
            lines[hole_line].0[hole_slot % ARITY] = child;
            hole_line = i + 1;
            hole_slot = best;
            i = i * ARITY + 1 + best;
        }
        debug_assert!(i < self.len);
        self.sift_up(i, k);
    }

    /// Replaces every key by `f(key)`; `f` must be strictly monotone on the keys present,
    /// so the heap property holds unchanged.
    fn remap(&mut self, mut f: impl FnMut(Key) -> Key) {
        for i in 0..self.len {
            let k = self.get(i);
            self.set(i, f(k));
        }
    }

    fn clear(&mut self) {
        self.lines.clear();
        self.len = 0;
    }
}

/// The run's keys, oldest first: a ring whose capacity is a power of two. (`VecDeque`'s
/// `push_back` is a call, some twenty instructions a dispatch here; this one is inline.)
#[derive(Debug, Default)]
struct Ring {
    /// Empty, or a power of two long.
    buf: Vec<Key>,
    /// The oldest key's slot.
    first: usize,
    len: usize,
}

impl Ring {
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        debug_assert!(self.buf.len().is_power_of_two());
        (self.first + i) & (self.buf.len() - 1)
    }

    #[inline(always)]
    fn push_back(&mut self, k: Key) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = self.slot(self.len);
        self.buf[i] = k;
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let capacity = (self.buf.len() * 2).max(16);
        let mut buf = Vec::with_capacity(capacity);
        buf.extend(self.iter());
        buf.resize(capacity, 0);
        (self.buf, self.first) = (buf, 0);
    }

    #[inline(always)]
    fn pop_front(&mut self) {
        assert!(self.len > 0, "pop from an empty run");
        self.first = self.slot(1);
        self.len -= 1;
    }

    #[inline(always)]
    fn front(&self) -> Option<Key> {
        (self.len > 0).then(|| self.buf[self.first])
    }

    fn back(&self) -> Option<Key> {
        (self.len > 0).then(|| self.buf[self.slot(self.len - 1)])
    }

    fn iter(&self) -> impl Iterator<Item = Key> + '_ {
        (0..self.len).map(|i| self.buf[self.slot(i)])
    }

    fn remap(&mut self, mut f: impl FnMut(Key) -> Key) {
        for i in 0..self.len {
            let j = self.slot(i);
            self.buf[j] = f(self.buf[j]);
        }
    }

    /// Keeps the buffer.
    fn clear(&mut self) {
        (self.first, self.len) = (0, 0);
    }
}

/// Bits of one digit of the radix heap: 16-way buckets per digit position.
const DIGIT_BITS: u32 = 4;
const DIGITS: usize = 1 << DIGIT_BITS;
/// Digit positions of a key.
const LEVELS: usize = Key::BITS as usize / DIGIT_BITS as usize;
const BUCKETS: usize = LEVELS * DIGITS;
const MASK_WORDS: usize = BUCKETS / 64;
/// A drained bucket keeps at most this many times the keys it held (and at least
/// [`BUCKET_KEEP_MIN`]): a bucket that once held many keys does not hold their memory for
/// ever.
const BUCKET_KEEP_FACTOR: usize = 4;
const BUCKET_KEEP_MIN: usize = 256;

/// A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path
/// problem", J. ACM 37(2), 1990, with 16-way digits as their two-level form): a priority queue
/// for keys that are never below the last key it popped, which SFQ's start tags are (an
/// arrival's start is at least the virtual time, the start of the last request dispatched).
///
/// A key lives in the bucket named by the most significant digit where it differs from
/// `last` (its *level*) and its own digit there; a key equal to `last` is `head`. Every key of
/// bucket `(l, d)` is below every key of `(l, d + 1)` and of every bucket of a higher level,
/// so the least key is in the first nonempty bucket. [`RadixHeap::settle`] moves it to
/// `head`: it finds the bucket's least key, makes it `last`, and spreads the bucket's keys
/// over the buckets below (each key moves to a strictly lower bucket, so a key moves at most
/// [`LEVELS`] times, and in practice about once per digit the queued keys spread over).
/// Pushes and pops touch the ends of a few vectors, not random lines of a 1.6 MB heap.
///
/// **Invariants:** every key in a bucket is above `last` and in the bucket its difference
/// from `last` names; `head` is `last` or [`DEAD`]; `nonempty` has the bits of exactly the
/// nonempty buckets; `len` counts the keys of the buckets and `head`.
#[derive(Debug)]
struct RadixHeap {
    buckets: Vec<Vec<Key>>,
    nonempty: [u64; MASK_WORDS],
    last: Key,
    head: Key,
    len: usize,
}

impl Default for RadixHeap {
    fn default() -> RadixHeap {
        RadixHeap {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            nonempty: [0; MASK_WORDS],
            last: 0,
            head: DEAD,
            len: 0,
        }
    }
}

impl RadixHeap {
    /// Whether `k` may be pushed: it is not below `last`, or the heap is empty (which then
    /// starts from `k`).
    #[inline(always)]
    fn accepts(&self, k: Key) -> bool {
        k >= self.last || self.len == 0
    }

    /// The bucket of `k > last`.
    #[inline(always)]
    fn bucket_of(last: Key, k: Key) -> usize {
        let x = k ^ last;
        debug_assert!(x != 0 && k > last);
        let level = (Key::BITS - 1 - x.leading_zeros()) / DIGIT_BITS;
        let digit = (k >> (level * DIGIT_BITS)) as usize & (DIGITS - 1);
        level as usize * DIGITS + digit
    }

    #[inline(always)]
    fn push(&mut self, k: Key) {
        assert!(
            self.accepts(k) && k != DEAD,
            "a radix heap key below its last popped key"
        );
        if self.len == 0 {
            self.last = k;
        }
        self.len += 1;
        if k == self.last {
            assert!(self.head == DEAD, "radix heap keys are unique");
            self.head = k;
            return;
        }
        let b = Self::bucket_of(self.last, k);
        self.buckets[b].push(k);
        self.nonempty[b / 64] |= 1 << (b % 64);
    }

    /// Moves the least key to `head`, if `head` is empty and a bucket is not.
    #[inline(always)]
    fn settle(&mut self) {
        if self.head == DEAD && self.len > 0 {
            self.spread_first_bucket();
        }
    }

    #[inline(never)]
    fn spread_first_bucket(&mut self) {
        let word = self
            .nonempty
            .iter()
            .position(|&w| w != 0)
            .expect("a nonempty radix heap without a head has a nonempty bucket");
        let b = word * 64 + self.nonempty[word].trailing_zeros() as usize;
        let mut keys = std::mem::take(&mut self.buckets[b]);
        self.nonempty[word] &= !(1 << (b % 64));
        let least = keys.iter().copied().min().expect("a nonempty bucket");
        assert!(least > self.last, "radix heap keys stay above the last key");
        self.last = least;
        self.head = least;
        for &k in &keys {
            if k != least {
                let to = Self::bucket_of(least, k);
                debug_assert!(to < b, "a spread key moves to a lower bucket");
                self.buckets[to].push(k);
                self.nonempty[to / 64] |= 1 << (to % 64);
            }
        }
        let keep = (BUCKET_KEEP_FACTOR * keys.len()).max(BUCKET_KEEP_MIN);
        keys.clear();
        if keys.capacity() > keep {
            keys.shrink_to(keep);
        }
        self.buckets[b] = keys;
    }

    /// The least key; [`RadixHeap::settle`] must have run since the last push or pop.
    #[inline(always)]
    fn head(&self) -> Option<Key> {
        debug_assert!(self.len == 0 || self.head != DEAD, "settled");
        (self.head != DEAD).then_some(self.head)
    }

    /// Removes the least key, which [`RadixHeap::head`] gave.
    #[inline(always)]
    fn pop_head(&mut self) {
        assert!(
            self.head != DEAD,
            "pop from an unsettled or empty radix heap"
        );
        self.head = DEAD;
        self.len -= 1;
    }

    fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        let head = (self.head != DEAD).then_some(self.head);
        head.into_iter()
            .chain(self.buckets.iter().flat_map(|b| b.iter().copied()))
    }

    /// Replaces every key by `f(key)` (strictly monotone on the keys present) and files them
    /// again from the least.
    fn remap(&mut self, mut f: impl FnMut(Key) -> Key) {
        let keys: Vec<Key> = self.keys().map(&mut f).collect();
        self.clear();
        let Some(&least) = keys.iter().min() else {
            return;
        };
        // The first key pushed on the empty heap becomes `last`: the least, so every other
        // is above it.
        self.push(least);
        for k in keys.into_iter().filter(|&k| k != least) {
            self.push(k);
        }
    }

    /// Keeps the buckets' memory (within the drain bound).
    fn clear(&mut self) {
        for b in &mut self.buckets {
            b.clear();
        }
        self.nonempty = [0; MASK_WORDS];
        (self.last, self.head, self.len) = (0, DEAD, 0);
    }
}

/// The narrow keys: a sorted run (a FIFO of keys in increasing order) in front of the 4-ary
/// heap. A key above the run's last ends the run, any other goes to the heap, and the least
/// key is the lesser of the run's first and the heap's top (see the module doc).
///
/// **Invariants:** the run is strictly increasing front to back; `head` is its first key and
/// `tail` its last, or [`DEAD`] and 0 while it is empty (an empty run takes any key but 0);
/// `len` counts the keys of the run and the heap.
#[derive(Debug)]
struct KeyQueue {
    head: Key,
    tail: Key,
    run: Ring,
    /// Keys not above the run's last and not below the radix heap's last popped key: almost
    /// every other key SFQ makes.
    radix: RadixHeap,
    /// The rest: keys below the radix heap's last (a held flow's requests coming back).
    heap: KeyHeap,
    len: usize,
}

impl Default for KeyQueue {
    fn default() -> KeyQueue {
        KeyQueue {
            head: DEAD,
            tail: 0,
            run: Ring::default(),
            radix: RadixHeap::default(),
            heap: KeyHeap::default(),
            len: 0,
        }
    }
}

impl KeyQueue {
    /// The least key and where it is; `None` when empty. Settles the radix heap.
    #[inline(always)]
    fn least(&mut self) -> Option<(Key, Source)> {
        self.radix.settle();
        // DEAD (no key) is above every key.
        let mut best = (self.head, Source::Run);
        if let Some(k) = self.radix.head() {
            if k < best.0 {
                best = (k, Source::Radix);
            }
        }
        if let Some(k) = self.heap.peek() {
            if k < best.0 {
                best = (k, Source::Heap);
            }
        }
        (best.0 != DEAD).then_some(best)
    }

    #[inline]
    fn peek(&mut self) -> Option<Key> {
        self.least().map(|(k, _)| k)
    }

    /// Appends `k` to the run if it is above the run's last key, else files it in the radix
    /// heap if that takes it, else pushes it on the heap.
    #[inline(always)]
    fn insert(&mut self, k: Key) {
        debug_assert!(k != DEAD);
        if self.tail < k {
            if self.head == DEAD {
                self.head = k;
            }
            self.tail = k;
            self.run.push_back(k);
        } else if self.radix.accepts(k) {
            self.radix.push(k);
        } else {
            self.heap.push(k);
        }
    }

    /// Removes the run's first key.
    #[inline(always)]
    fn pop_run(&mut self) {
        self.run.pop_front();
        match self.run.front() {
            Some(next) => self.head = next,
            None => (self.head, self.tail) = (DEAD, 0),
        }
    }

    #[inline]
    fn push(&mut self, k: Key) {
        self.insert(k);
        self.len += 1;
    }

    #[inline]
    fn pop(&mut self) -> Option<Key> {
        let (top, source) = self.least()?;
        match source {
            Source::Run => self.pop_run(),
            Source::Radix => self.radix.pop_head(),
            Source::Heap => {
                self.heap.pop();
            }
        }
        assert!(self.len > 0, "a pop from an empty key queue");
        self.len -= 1;
        Some(top)
    }

    /// Every key, in no particular order.
    fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        let heap = (0..self.heap.len).map(|i| self.heap.get(i));
        heap.chain(self.run.iter()).chain(self.radix.keys())
    }

    /// Replaces every key by `f(key)`; `f` must be strictly monotone on the keys present, so
    /// the run stays sorted, the heap a heap, and the radix heap's keys above its last.
    fn remap(&mut self, mut f: impl FnMut(Key) -> Key) {
        self.heap.remap(&mut f);
        self.radix.remap(&mut f);
        self.run.remap(f);
        if let (Some(first), Some(last)) = (self.run.front(), self.run.back()) {
            (self.head, self.tail) = (first, last);
        }
    }

    fn clear(&mut self) {
        // Keeps the run's buffer.
        self.run.clear();
        (self.head, self.tail) = (DEAD, 0);
        self.radix.clear();
        self.heap.clear();
        self.len = 0;
    }
}

/// Which part of a [`KeyQueue`] holds its least key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Run,
    Radix,
    Heap,
}

/// Where a key's fields stand relative to the base (see the module doc).
#[inline]
fn encode(base_start: Tag, base_seq: u64, e: Entry) -> Option<Key> {
    let rel_start = e.start.wrapping_sub(base_start);
    let rel_seq = e.seq.wrapping_sub(base_seq);
    // One branch for the four range conditions (`|`, not `||`): inside the window is the
    // common case by far.
    let outside = (e.start < base_start)
        | (rel_start >> 64 != 0)
        | (e.seq < base_seq)
        | (rel_seq >= SEQ_SPAN)
        | (e.slot as u64 >= SLOT_MASK);
    if outside {
        return None;
    }
    Some((rel_start << 64) | ((rel_seq << SLOT_BITS) | e.slot as u64) as Key)
}

#[inline]
fn decode(base_start: Tag, base_seq: u64, k: Key) -> Entry {
    let low = k as u64;
    Entry {
        start: base_start + (k >> 64),
        seq: base_seq + (low >> SLOT_BITS),
        slot: (low & SLOT_MASK) as u32,
    }
}

/// Queued requests by `(start, seq)`: the narrow heap of 16-byte keys relative to
/// `(base_start, base_seq)`, and the wide side heap for entries outside its window.
#[derive(Debug, Default)]
pub(super) struct RequestHeap {
    narrow: KeyQueue,
    /// No narrow entry starts before this; every one starts less than 2^64 after it.
    base_start: Tag,
    /// No narrow entry arrived before this; every one arrived less than 2^40 after it.
    base_seq: u64,
    wide: BinaryHeap<Reverse<(Tag, u64, u32)>>,
    /// Pushes since the last rebase: a rebase (O(narrow length)) waits for as many.
    pushes_since_rebase: usize,
    #[cfg(test)]
    rebases: u64,
}

impl RequestHeap {
    #[inline]
    fn decode(&self, k: Key) -> Entry {
        decode(self.base_start, self.base_seq, k)
    }

    /// The least entry.
    #[cfg(test)]
    pub(super) fn peek(&mut self) -> Option<Entry> {
        let narrow = self.narrow.peek().map(|k| self.decode(k));
        if self.wide.is_empty() {
            return narrow;
        }
        let wide = self
            .wide
            .peek()
            .map(|&Reverse((start, seq, slot))| Entry { start, seq, slot });
        match (narrow, wide) {
            (Some(n), Some(w)) => Some(if n.order() < w.order() { n } else { w }),
            (n, w) => n.or(w),
        }
    }

    /// Adds `e`, whose arrival number no entry in the heap has.
    #[inline(always)]
    pub(super) fn push(&mut self, e: Entry) {
        self.pushes_since_rebase = self.pushes_since_rebase.saturating_add(1);
        match encode(self.base_start, self.base_seq, e) {
            Some(k) => self.narrow.push(k),
            None => self.push_outside(e),
        }
    }

    #[cold]
    fn push_outside(&mut self, e: Entry) {
        if self.narrow.len == 0 {
            // Nothing to re-encode: the window starts at `e`.
            self.base_start = e.start;
            self.base_seq = e.seq;
            self.pushes_since_rebase = 0;
        } else if self.pushes_since_rebase >= self.narrow.len {
            self.rebase(e);
        }
        match encode(self.base_start, self.base_seq, e) {
            Some(k) => self.narrow.push(k),
            None => self.wide.push(Reverse((e.start, e.seq, e.slot))),
        }
    }

    /// Moves the base to the least start and arrival of the narrow entries and `e`, if they
    /// all fit the window from there, else of the narrow entries alone (which always fit:
    /// they fit from the old base, which is at or below their least values, so their spread
    /// is below the window). Every key is re-encoded from the new base.
    fn rebase(&mut self, e: Entry) {
        #[cfg(test)]
        {
            self.rebases += 1;
        }
        let (mut start_min, mut start_max) = (Key::MAX, 0);
        let (mut seq_min, mut seq_max) = (u64::MAX, 0);
        for k in self.narrow.keys() {
            let rel_start = k >> 64;
            let rel_seq = (k as u64) >> SLOT_BITS;
            start_min = start_min.min(rel_start);
            start_max = start_max.max(rel_start);
            seq_min = seq_min.min(rel_seq);
            seq_max = seq_max.max(rel_seq);
        }
        assert!(self.narrow.len > 0 && start_max >> 64 == 0 && seq_max < SEQ_SPAN);
        let (start_min, start_max) = (self.base_start + start_min, self.base_start + start_max);
        let (seq_min, seq_max) = (self.base_seq + seq_min, self.base_seq + seq_max);
        let with_e_start = (start_min.min(e.start), start_max.max(e.start));
        let with_e_seq = (seq_min.min(e.seq), seq_max.max(e.seq));
        let e_fits =
            (with_e_start.1 - with_e_start.0) >> 64 == 0 && with_e_seq.1 - with_e_seq.0 < SEQ_SPAN;
        let (new_start, new_seq) = if e_fits {
            (with_e_start.0, with_e_seq.0)
        } else {
            (start_min, seq_min)
        };
        let (old_start, old_seq) = (self.base_start, self.base_seq);
        self.narrow.remap(|k| {
            let entry = decode(old_start, old_seq, k);
            encode(new_start, new_seq, entry).expect("the narrow entries fit the new window")
        });
        self.base_start = new_start;
        self.base_seq = new_seq;
        self.pushes_since_rebase = 0;
    }

    /// Removes the least entry.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<Entry> {
        if self.wide.is_empty() {
            let k = self.narrow.pop()?;
            return Some(self.decode(k));
        }
        self.pop_with_wide()
    }

    #[cold]
    fn pop_with_wide(&mut self) -> Option<Entry> {
        let narrow = self.narrow.peek().map(|k| self.decode(k));
        let &Reverse((start, seq, slot)) = self.wide.peek().expect("not empty");
        let wide = Entry { start, seq, slot };
        match narrow {
            Some(n) if n.order() < wide.order() => {
                self.narrow.pop();
                Some(n)
            }
            _ => {
                self.wide.pop();
                Some(wide)
            }
        }
    }

    /// Moves every entry to `out`, in no particular order, and leaves the heap empty.
    pub(super) fn drain_into(&mut self, out: &mut Vec<Entry>) {
        let (base_start, base_seq) = (self.base_start, self.base_seq);
        out.extend(self.narrow.keys().map(|k| decode(base_start, base_seq, k)));
        out.extend(
            self.wide
                .drain()
                .map(|Reverse((start, seq, slot))| Entry { start, seq, slot }),
        );
        self.clear();
    }

    pub(super) fn clear(&mut self) {
        self.narrow.clear();
        self.wide.clear();
        self.base_start = 0;
        self.base_seq = 0;
        self.pushes_since_rebase = 0;
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.narrow.len + self.wide.len()
    }

    /// Entries in the wide side heap.
    #[cfg(test)]
    pub(super) fn side_len(&self) -> usize {
        self.wide.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Checks the heap's storage invariant and heap property.
    fn check_heap(heap: &KeyHeap) {
        // The storage invariant: exactly the lines holding keys, every other slot dead.
        let (lines, len) = (&heap.lines, heap.len);
        if len > 0 {
            assert_eq!(lines.len(), lines_for(len));
        } else {
            assert!(lines.len() <= 1);
        }
        for p in 0..lines.len() * ARITY {
            let live = p >= OFFSET && p - OFFSET < len;
            assert_eq!(
                lines[p / ARITY].0[p % ARITY] != DEAD,
                live,
                "slot {p} of {len}"
            );
        }
        for i in 1..len {
            assert!(heap.get((i - 1) / ARITY) < heap.get(i));
        }
        // Storage follows the length: the slot after the last is in the last line or
        // starts the next one.
        assert!(len == 0 || lines.len() * ARITY >= len + OFFSET);
        assert!(lines.len() <= (len + OFFSET) / ARITY + 1);
    }

    /// Checks the radix heap's invariants (see [`RadixHeap`]).
    fn check_radix(r: &RadixHeap) {
        let mut len = usize::from(r.head != DEAD);
        if r.head != DEAD {
            assert_eq!(r.head, r.last, "the head is the last key");
        }
        for (b, keys) in r.buckets.iter().enumerate() {
            assert_eq!(
                r.nonempty[b / 64] >> (b % 64) & 1 == 1,
                !keys.is_empty(),
                "bucket {b}'s bit"
            );
            for &k in keys {
                assert!(k > r.last);
                assert_eq!(RadixHeap::bucket_of(r.last, k), b);
            }
            len += keys.len();
        }
        assert_eq!(len, r.len);
    }

    /// Checks the queue's invariants (see [`KeyQueue`]).
    fn check_queue(q: &KeyQueue) {
        check_heap(&q.heap);
        check_radix(&q.radix);
        let run = &q.run;
        assert!(
            run.iter().zip(run.iter().skip(1)).all(|(a, b)| a < b),
            "run sorted"
        );
        assert_eq!(q.head, run.front().unwrap_or(DEAD));
        assert_eq!(q.tail, run.back().unwrap_or(0));
        assert_eq!(q.len, q.heap.len + run.len + q.radix.len);
    }

    /// Checks the narrow keys' structure and that each decodes inside the window.
    fn check(h: &RequestHeap) {
        check_queue(&h.narrow);
        for k in h.narrow.keys() {
            let e = h.decode(k);
            assert_eq!(encode(h.base_start, h.base_seq, e), Some(k));
        }
    }

    /// Start tags near the window's edges: clusters at 0, just below and above 2^64, far
    /// beyond (2^96, where a peer's delay puts a tag) and near the top of the tag range.
    fn start() -> impl Strategy<Value = Tag> {
        let cluster = prop_oneof![
            Just(0 as Tag),
            Just((1 as Tag) << 63),
            Just(((1 as Tag) << 64) - 4),
            Just((1 as Tag) << 64),
            Just((1 as Tag) << 65),
            Just((1 as Tag) << 96),
            Just(u128::MAX - 64),
        ];
        (cluster, 0u128..8).prop_map(|(c, d)| c + d)
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// A new arrival: the arrival counter advances by the step first.
        Push {
            start: Tag,
            seq_step: u64,
        },
        /// A popped entry comes back (a held flow released, NWC): an old arrival, maybe
        /// below the base.
        Repush {
            pick: usize,
        },
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (start(), prop_oneof![Just(1u64), Just(SEQ_SPAN - 1), Just(SEQ_SPAN), Just(1u64 << 50)])
                .prop_map(|(start, seq_step)| Op::Push { start, seq_step }),
            1 => any::<usize>().prop_map(|pick| Op::Repush { pick }),
            3 => Just(Op::Pop),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Differential: pops and peeks agree with a sorted set ordered by the whole
        /// `(u128 start, u64 seq)`, the wide entry's order, on workloads whose tags and
        /// arrivals spread beyond the window and come back below the base.
        #[test]
        fn pops_in_whole_tag_order(ops in prop::collection::vec(op(), 1..400)) {
            let mut heap = RequestHeap::default();
            let mut model: BTreeSet<(Tag, u64, u32)> = BTreeSet::new();
            let mut popped: Vec<Entry> = Vec::new();
            let mut seq = 0u64;
            for (n, op) in ops.into_iter().enumerate() {
                let slot = (n as u32 * 7919) % SLOT_LIMIT;
                match op {
                    Op::Push { start, seq_step } => {
                        seq = seq.saturating_add(seq_step);
                        if seq == u64::MAX {
                            continue;
                        }
                        let e = Entry { start, seq, slot };
                        heap.push(e);
                        model.insert((start, seq, slot));
                    }
                    Op::Repush { pick } => {
                        if popped.is_empty() {
                            continue;
                        }
                        let e = popped.swap_remove(pick % popped.len());
                        heap.push(e);
                        model.insert((e.start, e.seq, e.slot));
                    }
                    Op::Pop => {
                        let expected = model.pop_first();
                        let got = heap.pop();
                        prop_assert_eq!(got.map(|e| (e.start, e.seq, e.slot)), expected);
                        popped.extend(got);
                    }
                }
                prop_assert_eq!(heap.len(), model.len());
                let least = model.first().copied();
                prop_assert_eq!(heap.peek().map(|e| (e.start, e.seq, e.slot)), least);
                check(&heap);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Differential: a pop then a push of `e` (larger than the least, as a flow's next
        /// request is, or smaller, or outside the window, with a request slot the key holds
        /// or one beyond its bits) agree with a sorted set, on heaps whose entries spread
        /// beyond the window and may live in the side heap; interleaved with pushes and
        /// pops, every later pop agrees too, and a drain returns exactly what is left.
        #[test]
        fn pop_then_push_with_any_slot(
            ops in prop::collection::vec((start(), 0u8..4, prop_oneof![Just(1u64), Just(SEQ_SPAN), Just(1u64 << 50)]), 1..400),
        ) {
            let mut heap = RequestHeap::default();
            let mut model: BTreeSet<(Tag, u64, u32)> = BTreeSet::new();
            let mut seq = 0u64;
            for (n, (start, what, seq_step)) in ops.into_iter().enumerate() {
                // One in five beyond the key's slot bits (the side heap takes it).
                let slot = if n % 5 == 0 {
                    u32::MAX - n as u32
                } else {
                    (n as u32 * 7919) % SLOT_LIMIT
                };
                seq = seq.saturating_add(seq_step);
                if seq == u64::MAX {
                    break;
                }
                match what {
                    // A replacement relative to the least entry: its next request (a later
                    // tag by up to 8 units, as small costs give) or any tag.
                    0 | 1 => {
                        let Some(&(least_start, _, _)) = model.first() else { continue };
                        let start = if what == 0 { least_start.saturating_add(start % 8) } else { start };
                        let e = Entry { start, seq, slot };
                        let expected = model.pop_first();
                        model.insert((start, seq, slot));
                        let got = heap.pop();
                        heap.push(e);
                        prop_assert_eq!(got.map(|e| (e.start, e.seq, e.slot)), expected);
                    }
                    2 => {
                        heap.push(Entry { start, seq, slot });
                        model.insert((start, seq, slot));
                    }
                    _ => {
                        let got = heap.pop();
                        prop_assert_eq!(got.map(|e| (e.start, e.seq, e.slot)), model.pop_first());
                    }
                }
                prop_assert_eq!(heap.len(), model.len());
                prop_assert_eq!(heap.peek().map(|e| (e.start, e.seq, e.slot)), model.first().copied());
                check(&heap);
            }
            let mut left = Vec::new();
            heap.drain_into(&mut left);
            let mut left: Vec<(Tag, u64, u32)> = left.iter().map(|e| (e.start, e.seq, e.slot)).collect();
            left.sort_unstable();
            prop_assert_eq!(left, model.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(heap.pop(), None);
        }
    }

    proptest! {
        /// Differential: the ring keeps the order a `VecDeque` keeps, across wrap-arounds and
        /// growth while wrapped.
        #[test]
        fn ring_is_a_fifo(ops in prop::collection::vec(any::<bool>(), 1..300)) {
            let (mut ring, mut model) = (Ring::default(), std::collections::VecDeque::new());
            for (n, push) in ops.into_iter().enumerate() {
                if push {
                    ring.push_back(n as Key);
                    model.push_back(n as Key);
                } else if !model.is_empty() {
                    ring.pop_front();
                    model.pop_front();
                }
                prop_assert_eq!(ring.front(), model.front().copied());
                prop_assert_eq!(ring.back(), model.back().copied());
                prop_assert!(ring.iter().eq(model.iter().copied()));
            }
        }
    }

    /// Keys as SFQ makes them: `classes` interleaved increasing sequences (flows of a few
    /// weights or request sizes, each next tag the last plus its class's step), with some
    /// keys anywhere (arrivals at the virtual time, NWC releases). Unique: the low bits
    /// count.
    fn queue_ops() -> impl Strategy<Value = (u64, Vec<(u8, u64, u8)>)> {
        (
            1u64..8,
            prop::collection::vec((0u8..8, 0u64..1 << 20, 0u8..4), 1..600),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Differential: the runs and the heap together pop, peek and push exactly as a
        /// sorted set does, whichever of them holds the least key and wherever the new key
        /// goes; the invariants hold after every operation.
        #[test]
        fn key_queue_is_a_priority_queue((classes, ops) in queue_ops()) {
            let mut q = KeyQueue::default();
            let mut model: BTreeSet<Key> = BTreeSet::new();
            let mut last = [0u64; 8];
            for (n, (class, value, what)) in ops.into_iter().enumerate() {
                let class = usize::from(class) % classes as usize;
                // A class's next tag, or (one in eight) any tag.
                let tag = if value % 8 == 0 {
                    value
                } else {
                    last[class] += 1 + class as u64 * 3;
                    last[class]
                };
                let k = ((tag as Key) << 32) | n as Key;
                match what {
                    0 | 1 => {
                        q.push(k);
                        model.insert(k);
                    }
                    2 => {
                        prop_assert_eq!(q.pop(), model.pop_first());
                    }
                    _ => {
                        if model.is_empty() {
                            continue;
                        }
                        let expected = model.pop_first();
                        model.insert(k);
                        prop_assert_eq!(q.pop(), expected);
                        q.push(k);
                    }
                }
                prop_assert_eq!(q.peek(), model.first().copied());
                check_queue(&q);
            }
            let mut rest: Vec<Key> = q.keys().collect();
            rest.sort_unstable();
            prop_assert_eq!(rest, model.iter().copied().collect::<Vec<_>>());
            while let Some(expected) = model.pop_first() {
                prop_assert_eq!(q.pop(), Some(expected));
            }
            prop_assert_eq!(q.pop(), None);
        }
    }

    /// Keys in increasing order (the steady state of equal steps: every flow's next tag its
    /// last plus one step, after every other flow's) all go to the run, so a dispatch takes
    /// no descent; a key below the run's last goes to the radix heap, and one below the radix
    /// heap's last popped key (a held flow's request coming back) to the 4-ary heap; the next
    /// key above the run's last goes to the run again.
    #[test]
    fn increasing_keys_take_the_run_and_others_the_radix_heap_or_the_heap() {
        let mut q = KeyQueue::default();
        for k in 1..=1_000 {
            q.push(k << 32);
            assert_eq!(q.pop(), Some(k << 32));
            q.push((k + 1_000) << 32);
        }
        assert_eq!((q.heap.len, q.radix.len, q.run.len), (0, 0, 1_000));
        q.push(5 << 32);
        q.push(6 << 32);
        assert_eq!(q.radix.len, 2, "below the run's last key");
        assert_eq!(q.pop(), Some(5 << 32));
        q.push(4 << 32);
        assert_eq!(q.heap.len, 1, "below the radix heap's last key");
        q.push(3_000 << 32);
        assert_eq!((q.heap.len, q.radix.len, q.run.len), (1, 1, 1_001));
        check_queue(&q);
        assert_eq!(q.pop(), Some(4 << 32));
        assert_eq!(q.pop(), Some(6 << 32));
        let mut previous = 0;
        while let Some(k) = q.pop() {
            assert!(k > previous);
            previous = k;
        }
        assert_eq!(q.len, 0);
        check_queue(&q);
    }

    /// Keys spread over many digits: the radix heap pops them in order, whatever the order of
    /// the pushes between pops, while every key pushed is above the last popped.
    #[test]
    fn the_radix_heap_pops_in_order() {
        let mut r = RadixHeap::default();
        let mut model = BTreeSet::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut last = 0;
        for n in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Above the last popped by up to 2^100, low bits unique.
            let k = last + ((x as Key) << (x % 37)) + (((n as Key) << 1) | 1);
            if model.insert(k) {
                r.push(k);
            }
            if x.is_multiple_of(3) {
                r.settle();
                let want = model.pop_first();
                assert_eq!(r.head(), want);
                if let Some(k) = want {
                    r.pop_head();
                    last = k;
                }
            }
            check_radix(&r);
        }
        while let Some(want) = model.pop_first() {
            r.settle();
            assert_eq!(r.head(), Some(want));
            r.pop_head();
        }
        r.settle();
        assert_eq!((r.head(), r.len), (None, 0));
    }

    /// Tags that keep growing (the steady state) rebase rather than fill the side heap,
    /// and rebases are amortized: never more than one per `len` pushes.
    #[test]
    fn growing_tags_rebase_and_stay_narrow() {
        let mut heap = RequestHeap::default();
        let n = 64u64;
        let step: Tag = 1 << 60; // 16 steps cross the window
        let mut seq = 0;
        for f in 0..n {
            seq += 1;
            heap.push(Entry {
                start: f as Tag * step / n as Tag,
                seq,
                slot: f as u32,
            });
        }
        let mut expected_start = 0;
        for _ in 0..100 * n {
            let e = heap.pop().unwrap();
            assert!(e.start >= expected_start);
            expected_start = e.start;
            seq += 1;
            heap.push(Entry {
                start: e.start + step,
                seq,
                slot: e.slot,
            });
            check(&heap);
        }
        assert!(
            heap.wide.is_empty(),
            "a steady spread of 2^60 needs no side heap"
        );
        // The tags grew by 100 steps and the base must end within 16 steps (2^64) of the
        // largest, while one rebase moves it by less than 16 (to a tag inside the old
        // window): at least 6 rebases. Amortized: at most one per `n` pushes.
        assert!(heap.rebases >= 6, "{}", heap.rebases);
        let pushes = n + 100 * n;
        assert!(heap.rebases * n <= pushes, "{}", heap.rebases);
    }

    /// A spread beyond the window puts the far entries in the side heap, and the order
    /// holds across the two.
    #[test]
    fn a_spread_beyond_the_window_uses_the_side_heap_in_order() {
        let mut heap = RequestHeap::default();
        let far: Tag = 1 << 100;
        for i in 0..8u64 {
            heap.push(Entry {
                start: (i as Tag) * far,
                seq: 10 + i,
                slot: i as u32,
            });
        }
        assert!(!heap.wide.is_empty());
        for i in 0..8u64 {
            let e = heap.pop().unwrap();
            assert_eq!(
                (e.start, e.seq, e.slot),
                ((i as Tag) * far, 10 + i, i as u32)
            );
        }
        assert_eq!(heap.pop(), None);
    }
}
