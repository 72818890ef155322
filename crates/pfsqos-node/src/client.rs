//! The client path: where a file byte lives (RAID-0), how I/O becomes RPCs, the per-OST
//! window of RPCs in flight, and the node's outgoing rate limiter ([`RateLimiter`]). Every driver's client calls these: the RPC-level engine for each
//! simulated I/O call, the fluid engine for its layouts, the FUSE mount for every RPC it sends.
//!
//! # RAID-0 (Lustre's LOV layer)
//!
//! Byte `b` of a file with stripe size `S` and `n` stripes lives in stripe `k = (b / S) mod n`,
//! in that stripe's object at offset `(b / (S n)) S + b mod S`. Consecutive stripe units of one
//! stripe are consecutive in its object, so any file range maps to **one contiguous range of
//! each object it touches**.
//!
//! # RPC formation: one rule
//!
//! Lustre's OSC caches dirty pages per object and builds a bulk RPC from pages contiguous *in
//! the object*, at most `max_pages_per_rpc` (`brw_size`) of them, in extents that never cross
//! a `brw_size`-aligned boundary of the object (`osc_extent_find` caps an extent at the chunk
//! multiple of `max_pages_per_rpc` its first page falls in). Stripe-unit ends are not
//! boundaries: they are file-space notions the OSC never sees. Hence the rule every pfsqos
//! driver follows ([`Raid0::rpcs`]):
//!
//! > the bytes an I/O puts in one object form one contiguous object range; it is cut at every
//! > multiple of `brw_size` in the object, and each piece is one RPC.
//!
//! So a sequential writer of a single-stripe file sends whole `brw_size` RPCs (4 MiB by
//! default) whatever the stripe size, and a multi-stripe file's RPC may carry several stripe
//! units of its object. Unaligned I/O gets a short first (and last) RPC and aligned RPCs in
//! between, as Lustre's do.

use pfsqos_core::model::StripeLayout;

/// The RAID-0 geometry of a file: stripe size and count (which OST and object each stripe is
/// on is the driver's table, indexed by stripe index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid0 {
    pub stripe_size_bytes: u64,
    pub stripe_count: u32,
}

/// One RPC: a contiguous range of one object, within one `brw_size`-aligned chunk of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcPiece {
    /// Index of the stripe (and so of the object) in the layout.
    pub stripe_index: u32,
    pub object_offset_bytes: u64,
    /// File offset of the RPC's first byte. An RPC that spans several stripe units of its
    /// object covers several file ranges; [`Raid0::file_offset`] maps any of its bytes.
    pub file_offset_bytes: u64,
    pub size_bytes: u64,
}

/// The bytes a file range puts in one object: `[object_start, object_end)` of stripe
/// `stripe_index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectRange {
    pub stripe_index: u32,
    pub object_start_bytes: u64,
    pub object_end_bytes: u64,
}

/// The end of the `brw_size`-aligned chunk object offset `object_offset` falls in: where the
/// RPC holding that byte must end at the latest.
pub fn rpc_end_in_object(object_offset_bytes: u64, brw_size_bytes: u64) -> u64 {
    assert!(brw_size_bytes > 0, "brw_size must be positive");
    (object_offset_bytes / brw_size_bytes + 1).saturating_mul(brw_size_bytes)
}

impl Raid0 {
    pub fn new(stripe_size_bytes: u64, stripe_count: u32) -> Raid0 {
        assert!(stripe_size_bytes > 0, "stripe size must be positive");
        assert!(stripe_count > 0, "a layout needs at least one stripe");
        Raid0 {
            stripe_size_bytes,
            stripe_count,
        }
    }

    /// The geometry of a placed layout.
    pub fn of(layout: &StripeLayout) -> Raid0 {
        Raid0::new(layout.stripe_size_bytes, layout.osts.len() as u32)
    }

    /// Where file byte `file_offset` lives: (stripe index, object offset).
    pub fn locate(&self, file_offset_bytes: u64) -> (u32, u64) {
        let ss = self.stripe_size_bytes;
        let n = u64::from(self.stripe_count);
        let unit = file_offset_bytes / ss;
        ((unit % n) as u32, (unit / n) * ss + file_offset_bytes % ss)
    }

    /// The file offset of byte `object_offset` of stripe `stripe_index`'s object (inverse of
    /// [`Raid0::locate`]).
    pub fn file_offset(&self, stripe_index: u32, object_offset_bytes: u64) -> u64 {
        debug_assert!(stripe_index < self.stripe_count);
        let ss = self.stripe_size_bytes;
        let n = u64::from(self.stripe_count);
        (object_offset_bytes / ss) * n * ss
            + u64::from(stripe_index) * ss
            + object_offset_bytes % ss
    }

    /// Length of stripe `index`'s object when the file is `file_size` bytes long: whole rounds
    /// of `S n` bytes give `S` each, and the last partial round gives stripe `k` the part of
    /// its unit that lies below the end.
    pub fn object_size(&self, index: u32, file_size_bytes: u64) -> u64 {
        let ss = self.stripe_size_bytes;
        let round = ss * u64::from(self.stripe_count);
        let full = file_size_bytes / round;
        let rest = file_size_bytes % round;
        full * ss + rest.saturating_sub(u64::from(index) * ss).min(ss)
    }

    /// Calls `f` with the object range of every object `[offset, offset + len)` touches, in
    /// the order the range first reaches them. Allocates nothing.
    pub fn object_ranges(&self, offset_bytes: u64, len_bytes: u64, mut f: impl FnMut(ObjectRange)) {
        if len_bytes == 0 {
            return;
        }
        let ss = self.stripe_size_bytes;
        let count = u64::from(self.stripe_count);
        let end = offset_bytes
            .checked_add(len_bytes)
            .expect("a file range ends below 2^64");
        let first_unit = offset_bytes / ss;
        let last_unit = (end - 1) / ss;
        let touched = count.min(last_unit - first_unit + 1);
        for j in 0..touched {
            let unit = first_unit + j;
            let stripe_index = unit % count;
            let start_pos = if j == 0 { offset_bytes } else { unit * ss };
            // The last unit of this stripe inside the range.
            let last = last_unit - (last_unit - unit) % count;
            let last_end_pos = if last == last_unit {
                end
            } else {
                (last + 1) * ss
            };
            let range = ObjectRange {
                stripe_index: stripe_index as u32,
                object_start_bytes: (unit / count) * ss + start_pos % ss,
                object_end_bytes: (last / count) * ss + (last_end_pos - last * ss),
            };
            debug_assert!(range.object_start_bytes < range.object_end_bytes);
            f(range);
        }
    }

    /// The RPCs of the file range `[offset, offset + len)` (module docs: one contiguous range
    /// per object, cut at every multiple of `brw_size` in the object), object by object in the
    /// order the range first reaches them. Allocates nothing.
    pub fn rpcs(
        &self,
        offset_bytes: u64,
        len_bytes: u64,
        brw_size_bytes: u64,
        mut f: impl FnMut(RpcPiece),
    ) {
        assert!(brw_size_bytes > 0, "brw_size must be positive");
        self.object_ranges(offset_bytes, len_bytes, |r| {
            cut_object_range(
                r.object_start_bytes,
                r.object_end_bytes,
                brw_size_bytes,
                |o, len| {
                    f(RpcPiece {
                        stripe_index: r.stripe_index,
                        object_offset_bytes: o,
                        file_offset_bytes: self.file_offset(r.stripe_index, o),
                        size_bytes: len,
                    })
                },
            )
        });
    }

    /// The file ranges of the object range `[object_offset, object_offset + len)` of stripe
    /// `stripe_index`: calls `f(file_offset, offset_in_range, len)` for each piece of it that
    /// lies in one stripe unit, in object order. An RPC spanning several stripe units of its
    /// object carries bytes of several file ranges; this is how they are placed back.
    pub fn file_segments(
        &self,
        stripe_index: u32,
        object_offset_bytes: u64,
        len_bytes: u64,
        mut f: impl FnMut(u64, u64, u64),
    ) {
        let ss = self.stripe_size_bytes;
        let end = object_offset_bytes + len_bytes;
        let mut o = object_offset_bytes;
        while o < end {
            let next = ((o / ss + 1) * ss).min(end);
            f(
                self.file_offset(stripe_index, o),
                o - object_offset_bytes,
                next - o,
            );
            o = next;
        }
    }

    /// [`Raid0::rpcs`] collected into a vector.
    pub fn rpc_vec(&self, offset_bytes: u64, len_bytes: u64, brw_size_bytes: u64) -> Vec<RpcPiece> {
        let mut v = Vec::new();
        self.rpcs(offset_bytes, len_bytes, brw_size_bytes, |p| v.push(p));
        v
    }
}

/// Cuts the object range `[start, end)` at every multiple of `brw_size`: calls `f(offset, len)`
/// for each RPC, in object order.
pub fn cut_object_range(
    start_bytes: u64,
    end_bytes: u64,
    brw_size_bytes: u64,
    mut f: impl FnMut(u64, u64),
) {
    let mut o = start_bytes;
    while o < end_bytes {
        let next = rpc_end_in_object(o, brw_size_bytes).min(end_bytes);
        debug_assert!(next > o && next - o <= brw_size_bytes);
        f(o, next - o);
        o = next;
    }
}

/// One client's window of RPCs in flight to one OST (Lustre's per-OSC `max_rpcs_in_flight`):
/// an RPC is sent only while fewer than `max` are outstanding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcWindow {
    in_flight: u32,
    max: u32,
}

impl RpcWindow {
    pub fn new(max_rpcs_in_flight: u32) -> RpcWindow {
        assert!(max_rpcs_in_flight > 0, "a window holds at least one RPC");
        RpcWindow {
            in_flight: 0,
            max: max_rpcs_in_flight,
        }
    }

    /// Takes a slot if one is free.
    pub fn try_send(&mut self) -> bool {
        if self.in_flight < self.max {
            self.in_flight += 1;
            true
        } else {
            false
        }
    }

    /// Gives back the slot of an RPC that completed.
    pub fn complete(&mut self) {
        assert!(self.in_flight > 0, "an RPC completed that was never sent");
        self.in_flight -= 1;
    }

    pub fn in_flight(&self) -> u32 {
        debug_assert!(self.in_flight <= self.max);
        self.in_flight
    }
}

/// Largest outgoing limit a [`RateLimiter`] takes, bytes per second (1 PiB/s: far above any
/// node's link; larger values are a mistake, not a limit).
pub const LIMIT_BYTES_PER_S_MAX: u64 = 1 << 50;

/// A client node's outgoing limit (a controller's `ClientWrite`, Linux `tc` on the node): a
/// shaper in front of the uplink. A transfer may start only once the shaper has let the
/// previous ones through at the limit; it then leaves at the link's speed (a token bucket one
/// transfer deep). `None`: unlimited, the shaper books nothing.
///
/// Exact in integers: a transfer of `b` bytes started at `s` holds the shaper until
/// `s + ceil(b * 10^9 / limit)` ns. Each hold is rounded up by less than 1 ns on its own (no
/// float, no error carried from one transfer to the next), so the shaper never lets more
/// through than the limit, and over any interval `[t0, t1]` the transfers it starts carry at
/// most `limit * (t1 - t0) / 10^9` bytes plus the last transfer's.
///
/// [`RateLimiter::set_limit`] changes the holds of later transfers only; a hold already booked
/// stands. [`RateLimiter::relimit_at`] is what a driver calls when a controller changes the
/// limit: the bytes of the running hold not yet let through go at the new rate, as Linux `tc`'s
/// TBF shapes packet by packet (the simulator's clients and the mount both use it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimiter {
    limit_bytes_per_s: Option<u64>,
    /// When the shaper lets the next transfer start.
    free_ns: u64,
}

impl RateLimiter {
    /// An unlimited shaper.
    pub fn new() -> RateLimiter {
        RateLimiter::default()
    }

    pub fn limit_bytes_per_s(&self) -> Option<u64> {
        self.limit_bytes_per_s
    }

    /// Sets or lifts (`None`) the limit. Panics on 0 or above [`LIMIT_BYTES_PER_S_MAX`]:
    /// drivers validate what controllers and the network give them first.
    pub fn set_limit(&mut self, limit_bytes_per_s: Option<u64>) {
        if let Some(l) = limit_bytes_per_s {
            assert!(
                (1..=LIMIT_BYTES_PER_S_MAX).contains(&l),
                "an outgoing limit of {l} bytes/s is outside 1..={LIMIT_BYTES_PER_S_MAX}"
            );
        }
        self.limit_bytes_per_s = limit_bytes_per_s;
    }

    /// Sets or lifts (`None`) the limit at `now_ns` and re-books the hold running then: the
    /// bytes the shaper has not yet let through at the old rate (rounded up, so none leaves
    /// early) are held from `now_ns` at the new rate; lifting the limit ends the hold. A limit
    /// equal to the one in force changes nothing (tc keeps its rate). Panics as
    /// [`RateLimiter::set_limit`] does.
    pub fn relimit_at(&mut self, now_ns: u64, limit_bytes_per_s: Option<u64>) {
        if limit_bytes_per_s == self.limit_bytes_per_s {
            return;
        }
        // Every change re-books, so a hold runs past `now_ns` only under a limit.
        let held_bytes = match self.limit_bytes_per_s {
            Some(limit) if self.free_ns > now_ns => unsent_bytes(self.free_ns - now_ns, limit),
            _ => 0,
        };
        *self = RateLimiter::new();
        self.set_limit(limit_bytes_per_s);
        if held_bytes > 0 {
            self.start_ns(now_ns, held_bytes);
        }
        debug_assert!(self.limit_bytes_per_s.is_some() || self.free_ns == 0);
    }

    /// When a transfer of `bytes` that is ready at `ready_ns` (its link free) may start, and
    /// books it: the later of `ready_ns` and the shaper's free time.
    pub fn start_ns(&mut self, ready_ns: u64, bytes: u64) -> u64 {
        let start_ns = self.next_start_ns(ready_ns);
        if let Some(limit) = self.limit_bytes_per_s {
            self.free_ns = start_ns.saturating_add(hold_ns(bytes, limit));
            debug_assert!(self.free_ns >= start_ns);
        }
        start_ns
    }

    /// When a transfer ready at `ready_ns` could start, without booking it. A driver with
    /// several transfers waiting books one only when it is due (`start_ns` with the time it
    /// starts), so that a limit changed while they wait applies to all of them at once, not
    /// after holds booked at the old rate (the simulator books at most one ahead, the mount
    /// none).
    pub fn next_start_ns(&self, ready_ns: u64) -> u64 {
        ready_ns.max(self.free_ns)
    }

    /// When the shaper lets the next transfer start (`0` until one was booked under a limit).
    pub fn free_ns(&self) -> u64 {
        self.free_ns
    }
}

/// The bytes a shaper at `limit_bytes_per_s` lets through in `ns` (the inverse of
/// [`hold_ns`]): rounded up, so a re-booked hold never lets bytes out early.
fn unsent_bytes(ns: u64, limit_bytes_per_s: u64) -> u64 {
    let bytes = (u128::from(ns) * u128::from(limit_bytes_per_s)).div_ceil(1_000_000_000);
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

/// `ceil(bytes * 10^9 / limit)`, saturating at `u64::MAX`.
fn hold_ns(bytes: u64, limit_bytes_per_s: u64) -> u64 {
    assert!(limit_bytes_per_s > 0);
    let ns = (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(limit_bytes_per_s));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const K: u64 = 1 << 10;
    const M: u64 = 1 << 20;

    fn rpcs(ss: u64, n: u32, off: u64, len: u64, brw: u64) -> Vec<(u32, u64, u64, u64)> {
        Raid0::new(ss, n)
            .rpc_vec(off, len, brw)
            .iter()
            .map(|p| {
                (
                    p.stripe_index,
                    p.object_offset_bytes,
                    p.size_bytes,
                    p.file_offset_bytes,
                )
            })
            .collect()
    }

    #[test]
    fn single_stripe_rpcs_are_whole_brw_chunks_whatever_the_stripe_size() {
        // Lustre's defaults: 1 MiB stripes, 4 MiB brw: a sequential 8 MiB write is 2 RPCs.
        assert_eq!(
            rpcs(M, 1, 0, 8 * M, 4 * M),
            vec![(0, 0, 4 * M, 0), (0, 4 * M, 4 * M, 4 * M)]
        );
        // Unaligned: a short head up to the next 4 MiB multiple, then whole chunks, then a tail.
        assert_eq!(
            rpcs(M, 1, 3 * M, 6 * M, 4 * M),
            vec![
                (0, 3 * M, M, 3 * M),
                (0, 4 * M, 4 * M, 4 * M),
                (0, 8 * M, M, 8 * M)
            ]
        );
    }

    #[test]
    fn multi_stripe_rpcs_are_contiguous_in_the_object_and_aligned() {
        // 2 stripes of 1 MiB, brw 4 MiB, 16 MiB from 0: each object gets [0, 8) MiB, two RPCs
        // of 4 MiB each carrying four of the file's stripe units.
        assert_eq!(
            rpcs(M, 2, 0, 16 * M, 4 * M),
            vec![
                (0, 0, 4 * M, 0),
                (0, 4 * M, 4 * M, 8 * M),
                (1, 0, 4 * M, M),
                (1, 4 * M, 4 * M, 9 * M),
            ]
        );
        // brw 768 KiB, 1 MiB stripes over 2 OSTs, 3 MiB from 0.75 MiB: object 0 holds
        // [0.75, 2) MiB, object 1 [0, 1.75) MiB, both cut at multiples of 768 KiB.
        assert_eq!(
            rpcs(M, 2, 768 * K, 3 * M, 768 * K),
            vec![
                (0, 768 * K, 768 * K, 768 * K),
                (0, 1536 * K, 512 * K, 2560 * K),
                (1, 0, 768 * K, M),
                (1, 768 * K, 768 * K, 1792 * K),
                (1, 1536 * K, 256 * K, 3584 * K),
            ]
        );
        assert!(rpcs(M, 2, 5, 0, M).is_empty());
    }

    #[test]
    fn window_counts_slots() {
        let mut w = RpcWindow::new(2);
        assert!(w.try_send() && w.try_send() && !w.try_send());
        w.complete();
        assert_eq!(w.in_flight(), 1);
        assert!(w.try_send());
    }

    #[test]
    #[should_panic(expected = "never sent")]
    fn window_refuses_a_completion_without_a_send() {
        RpcWindow::new(1).complete();
    }

    #[test]
    fn limiter_spaces_transfers_at_the_limit_and_rounds_up() {
        let mut l = RateLimiter::new();
        // Unlimited: every transfer starts when ready, nothing is booked.
        assert_eq!(l.start_ns(5, M), 5);
        assert_eq!(l.start_ns(3, M), 3);
        assert_eq!(l.free_ns(), 0);
        l.set_limit(Some(3));
        // 1 byte at 3 B/s holds the shaper ceil(10^9 / 3) ns.
        assert_eq!(l.start_ns(10, 1), 10);
        assert_eq!(l.free_ns(), 10 + 333_333_334);
        // The next one waits for it, however early it is ready.
        assert_eq!(l.start_ns(11, 3), 10 + 333_333_334);
        assert_eq!(l.free_ns(), 10 + 333_333_334 + 1_000_000_000);
        // Lifting the limit keeps the booked hold.
        l.set_limit(None);
        assert_eq!(l.start_ns(12, 1), 10 + 333_333_334 + 1_000_000_000);
        // Huge holds saturate instead of wrapping.
        l.set_limit(Some(1));
        l.start_ns(0, u64::MAX);
        assert_eq!(l.free_ns(), u64::MAX);
    }

    /// A limit changed while a hold runs: the bytes not yet let through go at the new rate
    /// (hand-computed), lifting ends the hold, an unchanged limit changes nothing.
    #[test]
    fn relimit_re_books_the_running_hold_at_the_new_rate() {
        const S: u64 = 1_000_000_000;
        // 1 MiB at 1 MiB/s from 0: held until 1 s. At 0.5 s the limit rises to 4 MiB/s: the
        // other half MiB takes 0.125 s, so the shaper frees at 0.625 s.
        let mut l = RateLimiter::new();
        l.set_limit(Some(M));
        assert_eq!(l.start_ns(0, M), 0);
        assert_eq!(l.free_ns(), S);
        l.relimit_at(S / 2, Some(4 * M));
        assert_eq!(l.free_ns(), S / 2 + S / 8);
        // The same limit again: nothing moves.
        l.relimit_at(S / 2 + 1, Some(4 * M));
        assert_eq!(l.free_ns(), S / 2 + S / 8);
        // Lowered back to 1 MiB/s at 0.5625 s: 0.0625 s at 4 MiB/s left is 1/4 MiB, 0.25 s
        // at 1 MiB/s: free at 0.8125 s.
        l.relimit_at(S / 2 + S / 16, Some(M));
        assert_eq!(l.free_ns(), S / 2 + S / 16 + S / 4);
        // Lifted: the hold ends, the next transfer starts when ready.
        l.relimit_at(S / 2 + S / 16 + 1, None);
        assert_eq!(l.next_start_ns(S / 2 + S / 16 + 2), S / 2 + S / 16 + 2);
        // A limit set after the hold ended re-books nothing.
        l.set_limit(Some(M));
        assert_eq!(l.start_ns(2 * S, M), 2 * S);
        l.relimit_at(4 * S, Some(2 * M));
        assert_eq!(l.next_start_ns(4 * S), 4 * S);
        // Rounding never lets a byte out early: 1 byte at 3 B/s, relimited 1 ns in to
        // 3 B/s' double, still holds the whole byte.
        let mut l = RateLimiter::new();
        l.set_limit(Some(3));
        l.start_ns(0, 1);
        l.relimit_at(1, Some(6));
        assert_eq!(l.free_ns(), 1 + 166_666_667);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn limiter_refuses_a_zero_limit() {
        RateLimiter::new().set_limit(Some(0));
    }

    #[test]
    fn object_sizes() {
        let r = Raid0::new(M, 2);
        assert_eq!(r.object_size(0, 5 * M / 2), 3 * M / 2);
        assert_eq!(r.object_size(1, 5 * M / 2), M);
        assert_eq!(r.object_size(1, M / 2), 0);
        assert_eq!(Raid0::new(M, 3).object_size(2, 0), 0);
    }

    proptest! {
        /// Byte by byte (an independent oracle: `locate` of each byte): the RPCs hold exactly
        /// the range's bytes, each RPC's bytes are consecutive in one object and stay in one
        /// brw-aligned chunk, and two RPCs of one object meet only at a chunk boundary.
        #[test]
        fn rpcs_hold_exactly_the_range_bytes(
            units in 1u64..6, n in 1u32..5, brw_units in 1u64..9,
            offset in 0u64..(1 << 20), len in 0u64..(1 << 19),
        ) {
            let ss = units << 14;
            let brw = brw_units << 13;
            let r = Raid0::new(ss, n);
            let pieces = r.rpc_vec(offset, len, brw);
            let mut seen = std::collections::BTreeSet::new();
            for p in &pieces {
                prop_assert!(p.size_bytes > 0 && p.size_bytes <= brw);
                prop_assert_eq!(
                    p.object_offset_bytes / brw,
                    (p.object_offset_bytes + p.size_bytes - 1) / brw
                );
                prop_assert_eq!(r.locate(p.file_offset_bytes), (p.stripe_index, p.object_offset_bytes));
                for o in p.object_offset_bytes..p.object_offset_bytes + p.size_bytes {
                    let b = r.file_offset(p.stripe_index, o);
                    prop_assert_eq!(r.locate(b), (p.stripe_index, o));
                    prop_assert!(b >= offset && b < offset + len, "byte {} outside the range", b);
                    prop_assert!(seen.insert(b), "byte {} twice", b);
                }
            }
            prop_assert_eq!(seen.len() as u64, len);
            // Maximal: two pieces of one object that touch meet at a chunk boundary.
            for a in &pieces {
                for b in &pieces {
                    if a.stripe_index == b.stripe_index
                        && a.object_offset_bytes + a.size_bytes == b.object_offset_bytes
                    {
                        prop_assert_eq!(b.object_offset_bytes % brw, 0);
                    }
                }
            }
        }

        /// Over any window of started transfers, the bytes of all but the last are at most
        /// the limit times the time between the first and the last start, however the ready
        /// times and sizes go: exact integers, no drift over long runs.
        #[test]
        fn limiter_never_exceeds_its_limit(
            limit in 1u64..(1 << 40),
            steps in proptest::collection::vec((0u64..(1 << 30), 1u64..(1 << 24)), 1..200),
        ) {
            let mut l = RateLimiter::new();
            l.set_limit(Some(limit));
            let mut ready = 0u64;
            let mut starts = Vec::new();
            for (gap, bytes) in steps {
                ready += gap;
                let s = l.start_ns(ready, bytes);
                prop_assert!(s >= ready);
                if let Some(&(prev, _)) = starts.last() {
                    prop_assert!(s >= prev);
                }
                starts.push((s, bytes));
            }
            for i in 0..starts.len() {
                let mut bytes = 0u128;
                for j in i..starts.len() {
                    // Bytes of transfers i..j (j excluded) fit in the time up to j's start.
                    prop_assert!(
                        bytes * 1_000_000_000
                            <= u128::from(limit) * u128::from(starts[j].0 - starts[i].0)
                    );
                    bytes += u128::from(starts[j].1);
                }
            }
        }

        /// Object sizes sum to the file size, and the last byte of the file is the last byte
        /// of its object.
        #[test]
        fn object_sizes_partition_the_file(units in 1u64..8, n in 1u32..6, size in 0u64..(1 << 26)) {
            let r = Raid0::new(units << 16, n);
            let total: u64 = (0..n).map(|i| r.object_size(i, size)).sum();
            prop_assert_eq!(total, size);
            if size > 0 {
                let (i, o) = r.locate(size - 1);
                prop_assert_eq!(r.object_size(i, size), o + 1);
            }
        }
    }
}
