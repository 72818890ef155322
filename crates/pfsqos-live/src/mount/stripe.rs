//! Pure RAID-0 arithmetic of the client: where a file byte lives, how a file range splits into
//! RPCs, and how long each object is for a given file size. No I/O here.
//!
//! Byte `b` of a file with stripe size `S` and `n` stripes lives in stripe
//! `k = (b / S) mod n`, in that stripe's object at offset `(b / (S n)) S + b mod S`, as in
//! Lustre's LOV layer. An RPC never crosses a stripe boundary (it goes to one object) nor a
//! multiple of `brw_size` in its object, so RPCs are at most `brw_size` long and, for sequential
//! I/O, aligned as Lustre's OSC aligns them: the client gathers a sequential writer's pieces up
//! to these boundaries ([`rpc_end`]).

use crate::mds::{FileLayout, Stripe};

/// One RPC's worth of a file range: a contiguous piece of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Index of the stripe in the layout.
    pub stripe_index: usize,
    /// The stripe's OST and object.
    pub stripe: Stripe,
    pub object_offset_bytes: u64,
    pub file_offset_bytes: u64,
    pub len_bytes: u64,
}

/// Where file byte `offset` lives: (stripe index, object offset).
pub fn locate(stripe_size_bytes: u64, stripe_count: usize, offset: u64) -> (usize, u64) {
    let stripe_no = offset / stripe_size_bytes;
    let within = offset % stripe_size_bytes;
    let n = stripe_count as u64;
    (
        (stripe_no % n) as usize,
        (stripe_no / n) * stripe_size_bytes + within,
    )
}

/// The end of the RPC that file byte `offset` falls in: the nearer of the end of its stripe
/// unit and the next multiple of `brw_size_bytes` in its object.
pub fn rpc_end(layout: &FileLayout, offset: u64, brw_size_bytes: u64) -> u64 {
    let ss = layout.stripe_size_bytes;
    let (_, obj_off) = locate(ss, layout.stripes.len(), offset);
    let to_boundary = (ss - offset % ss).min(brw_size_bytes - obj_off % brw_size_bytes);
    offset.saturating_add(to_boundary)
}

/// Splits the file range `[offset, offset + len)` into pieces in file order, each ending at the
/// range's end or at an RPC boundary ([`rpc_end`]).
///
/// Panics if the layout is empty or `brw_size_bytes` is 0 (layouts are checked by
/// [`check_layout`] before use).
pub fn split(layout: &FileLayout, offset: u64, len: u64, brw_size_bytes: u64) -> Vec<Piece> {
    assert!(brw_size_bytes > 0 && layout.stripe_size_bytes > 0 && !layout.stripes.is_empty());
    let ss = layout.stripe_size_bytes;
    let mut out = Vec::new();
    let mut pos = offset;
    let end = offset.saturating_add(len);
    while pos < end {
        let (idx, obj_off) = locate(ss, layout.stripes.len(), pos);
        let take = (rpc_end(layout, pos, brw_size_bytes) - pos).min(end - pos);
        out.push(Piece {
            stripe_index: idx,
            stripe: layout.stripes[idx],
            object_offset_bytes: obj_off,
            file_offset_bytes: pos,
            len_bytes: take,
        });
        pos += take;
    }
    out
}

/// Length of stripe `index`'s object when the file is `file_size` bytes long: whole rounds of
/// `S n` bytes give `S` each, and the last partial round gives stripe `k` the part of its unit
/// that lies below the end.
pub fn object_size(
    stripe_size_bytes: u64,
    stripe_count: usize,
    index: usize,
    file_size: u64,
) -> u64 {
    let ss = stripe_size_bytes;
    let round = ss * stripe_count as u64;
    let full = file_size / round;
    let rest = file_size % round;
    let unit_start = index as u64 * ss;
    full * ss + rest.saturating_sub(unit_start).min(ss)
}

/// Layout sanity before use: the protocol decoder bounds the sizes; this checks the layout
/// makes sense for this cluster.
pub fn check_layout(layout: &FileLayout, ost_count: u32) -> Result<(), String> {
    let ss = layout.stripe_size_bytes;
    let unit = pfsqos_core::place::STRIPE_SIZE_UNIT_BYTES;
    if ss == 0 || !ss.is_multiple_of(unit) || ss > pfsqos_core::place::STRIPE_SIZE_MAX_BYTES {
        return Err(format!(
            "stripe size {ss} is not a multiple of {unit} up to {}",
            pfsqos_core::place::STRIPE_SIZE_MAX_BYTES
        ));
    }
    if layout.stripes.is_empty() || layout.stripes.len() > ost_count as usize {
        return Err(format!(
            "{} stripes on a file system of {ost_count} OSTs",
            layout.stripes.len()
        ));
    }
    if let Some(s) = layout.stripes.iter().find(|s| s.ost >= ost_count) {
        return Err(format!("stripe on OST {} of {ost_count}", s.ost));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn layout(ss: u64, n: u32) -> FileLayout {
        FileLayout {
            stripe_size_bytes: ss,
            stripes: (0..n)
                .map(|i| Stripe {
                    ost: i,
                    object: 100 + i as u64,
                })
                .collect(),
        }
    }

    #[test]
    fn split_respects_stripes_and_brw_size() {
        let l = layout(1 << 20, 2);
        // 3 MiB from 0.5 MiB with brw 4 MiB: 0.5 (s0), 1 (s1), 1 (s0), 0.5 (s1).
        let p = split(&l, 1 << 19, 3 << 20, 4 << 20);
        let got: Vec<(usize, u64, u64)> = p
            .iter()
            .map(|p| (p.stripe_index, p.object_offset_bytes, p.len_bytes))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 1 << 19, 1 << 19),
                (1, 0, 1 << 20),
                (0, 1 << 20, 1 << 20),
                (1, 1 << 20, 1 << 19)
            ]
        );
        // brw smaller than a stripe: 4 MiB stripes, 1 MiB RPCs.
        let p = split(&layout(4 << 20, 1), 0, 3 << 20, 1 << 20);
        assert_eq!(p.len(), 3);
        assert!(p.iter().all(|p| p.len_bytes == 1 << 20));
        assert_eq!(p[2].object_offset_bytes, 2 << 20);
        assert!(split(&l, 5, 0, 1).is_empty());
        // RPCs are aligned to brw_size in the object, as Lustre's: 2.5 MiB from 0.5 MiB of a
        // 4 MiB stripe with 1 MiB RPCs is 0.5 + 1 + 1, not 1 + 1 + 0.5.
        let p = split(&layout(4 << 20, 1), 1 << 19, 5 << 19, 1 << 20);
        let lens: Vec<u64> = p.iter().map(|p| p.len_bytes).collect();
        assert_eq!(lens, vec![1 << 19, 1 << 20, 1 << 20]);
        assert_eq!(rpc_end(&layout(4 << 20, 1), 1 << 19, 1 << 20), 1 << 20);
        assert_eq!(rpc_end(&layout(4 << 20, 1), 1 << 20, 1 << 20), 2 << 20);
        // A stripe boundary comes first: 1 MiB stripes, 4 MiB RPCs.
        assert_eq!(rpc_end(&l, 3 << 19, 4 << 20), 2 << 20);
    }

    #[test]
    fn object_sizes() {
        // 2 stripes of 1 MiB, file of 2.5 MiB: s0 holds [0,1) and [2,2.5) -> 1.5 MiB; s1 1 MiB.
        let m = 1u64 << 20;
        assert_eq!(object_size(m, 2, 0, 5 * m / 2), 3 * m / 2);
        assert_eq!(object_size(m, 2, 1, 5 * m / 2), m);
        assert_eq!(object_size(m, 2, 1, m / 2), 0);
        assert_eq!(object_size(m, 3, 2, 0), 0);
    }

    #[test]
    fn layout_checks() {
        assert!(check_layout(&layout(1 << 20, 2), 2).is_ok());
        assert!(check_layout(&layout(1 << 20, 3), 2).is_err());
        assert!(check_layout(&layout(1000, 1), 2).is_err());
        assert!(check_layout(&layout(0, 1), 2).is_err());
        assert!(check_layout(
            &FileLayout {
                stripe_size_bytes: 1 << 16,
                stripes: vec![]
            },
            2
        )
        .is_err());
    }

    proptest! {
        /// The pieces tile the range exactly, stay inside one stripe unit, respect brw_size,
        /// and agree with `locate` byte by byte at their ends.
        #[test]
        fn pieces_tile_the_range(
            units in 1u64..8, n in 1u32..5, brw_units in 1u64..10,
            offset in 0u64..(1 << 24), len in 0u64..(1 << 23),
        ) {
            let ss = units << 16;
            let brw = brw_units << 15;
            let l = layout(ss, n);
            let pieces = split(&l, offset, len, brw);
            let mut pos = offset;
            for p in &pieces {
                prop_assert_eq!(p.file_offset_bytes, pos);
                prop_assert!(p.len_bytes > 0 && p.len_bytes <= brw);
                let (i, o) = locate(ss, n as usize, pos);
                prop_assert_eq!((p.stripe_index, p.object_offset_bytes), (i, o));
                let last = pos + p.len_bytes - 1;
                prop_assert_eq!(locate(ss, n as usize, last), (i, o + p.len_bytes - 1));
                prop_assert_eq!(p.stripe, l.stripes[i]);
                // Every piece but the last ends at an RPC boundary (and none crosses one).
                let boundary = rpc_end(&l, pos, brw);
                prop_assert!(pos + p.len_bytes <= boundary);
                if pos + p.len_bytes < offset + len {
                    prop_assert_eq!(pos + p.len_bytes, boundary);
                }
                pos += p.len_bytes;
            }
            prop_assert_eq!(pos, offset + len);
        }

        /// Object sizes sum to the file size, and the highest byte of each object is a file
        /// byte below the size.
        #[test]
        fn object_sizes_partition_the_file(units in 1u64..8, n in 1usize..6, size in 0u64..(1 << 26)) {
            let ss = units << 16;
            let total: u64 = (0..n).map(|i| object_size(ss, n, i, size)).sum();
            prop_assert_eq!(total, size);
            if size > 0 {
                let (i, o) = locate(ss, n, size - 1);
                prop_assert_eq!(object_size(ss, n, i, size), o + 1);
            }
        }
    }
}
