//! The class index: an open-addressing (linear probing) table from a 32-bit key hash to a class
//! slot. Shared by TBF (its classes) and SFQ(D)/DSFQ (their flows).
//!
//! It replaces a `FxHashMap<u32, u32>` plus collision chains through the classes. With 100,000
//! classes the index no longer fits in the caches, and a lookup cost two dependent misses there
//! (the control bytes, then the bucket). Here one 8-byte slot holds both the hash and the class,
//! so a lookup usually touches one cache line of the index and then the class itself. Keys with
//! equal hashes simply occupy neighbouring slots; the caller's key comparison tells them apart.

use crate::model::RpcTags;

/// The 32-bit hash of a class key (TBF's classes, SFQ's flows): `FxHasher` over the
/// derived `Hash`, whose fields are exactly those the derived `Eq` compares. (A hash of the
/// key read as eight words with four independent folded multiplies was tried, to shorten
/// the multiply chain before the index slot's load: it cost 16 more instructions a step in
/// the SFQ benchmark, rustc-hash hashing the job id's bytes in wide chunks already, and was
/// not faster in the one loaded timed run it had; docs/benchmarks.md, SFQ section.)
#[inline]
pub(super) fn key_hash(key: &RpcTags) -> u32 {
    use std::hash::BuildHasher;
    (rustc_hash::FxBuildHasher.hash_one(key) >> 32) as u32
}

/// Fibonacci hashing spreads hashes whose entropy sits in few bits (tests mask hashes down to
/// one bit) over the table.
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;
const SLOTS_MIN: usize = 16;

#[derive(Debug)]
pub(super) struct ClassIndex {
    /// `(hash << 32) | (class + 1)`; 0 is an empty slot. Length is a power of two.
    slots: Vec<u64>,
    /// `64 - log2(slots.len())`: the home slot is the top bits of the spread hash.
    shift: u32,
    len: usize,
}

impl Default for ClassIndex {
    fn default() -> Self {
        ClassIndex {
            slots: vec![0; SLOTS_MIN],
            shift: 64 - SLOTS_MIN.trailing_zeros(),
            len: 0,
        }
    }
}

impl ClassIndex {
    #[inline]
    fn home(&self, hash: u32) -> usize {
        ((hash as u64).wrapping_mul(SPREAD) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    #[inline]
    fn pack(hash: u32, class: u32) -> u64 {
        debug_assert!(class < u32::MAX);
        ((hash as u64) << 32) | (class as u64 + 1)
    }

    /// The first class with `hash` for which `is_match` holds.
    #[inline(always)]
    pub(super) fn find(&self, hash: u32, mut is_match: impl FnMut(u32) -> bool) -> Option<u32> {
        let mask = self.mask();
        let mut pos = self.home(hash);
        loop {
            let s = self.slots[pos];
            if s == 0 {
                return None;
            }
            if (s >> 32) as u32 == hash {
                let class = s as u32 - 1;
                if is_match(class) {
                    return Some(class);
                }
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Adds `class` under `hash`; the caller guarantees its key is not indexed yet.
    pub(super) fn insert(&mut self, hash: u32, class: u32) {
        // At most 7/8 full, so probe runs stay short and an empty slot always exists.
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            self.grow();
        }
        self.place(Self::pack(hash, class));
        self.len += 1;
    }

    fn place(&mut self, slot: u64) {
        let mask = self.mask();
        let mut pos = self.home((slot >> 32) as u32);
        while self.slots[pos] != 0 {
            pos = (pos + 1) & mask;
        }
        self.slots[pos] = slot;
    }

    fn grow(&mut self) {
        let new_len = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![0; new_len]);
        self.shift = 64 - new_len.trailing_zeros();
        for s in old.into_iter().filter(|&s| s != 0) {
            self.place(s);
        }
    }

    /// Removes `class`, which must be indexed under `hash`. Backward-shift deletion keeps every
    /// remaining entry reachable from its home slot without tombstones.
    pub(super) fn remove(&mut self, hash: u32, class: u32) {
        let target = Self::pack(hash, class);
        let mask = self.mask();
        let mut hole = self.home(hash);
        while self.slots[hole] != target {
            debug_assert!(
                self.slots[hole] != 0,
                "removing a class that is not indexed"
            );
            hole = (hole + 1) & mask;
        }
        let mut next = (hole + 1) & mask;
        loop {
            let s = self.slots[next];
            if s == 0 {
                break;
            }
            // The entry may fill the hole if the hole lies on its probe path, i.e. between its
            // home slot and its current slot (cyclically).
            let home = self.home((s >> 32) as u32);
            if (next.wrapping_sub(home) & mask) >= (next.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.slots[hole] = 0;
        self.len -= 1;
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
    use std::collections::BTreeMap;

    /// Every field of the key moves the hash, and 100,000 job ids of the benchmarks' form
    /// collide in 32 bits about as often as random values would (expected 1.2 pairs).
    #[test]
    fn key_hash_reads_every_field_and_spreads_job_ids() {
        use crate::model::{JobId, NetKind, Opcode};
        let base = RpcTags::test_write("job.1");
        let variants = [
            RpcTags {
                job: JobId::new("job.2").unwrap(),
                ..base
            },
            RpcTags {
                job: JobId::new("job.10").unwrap(),
                ..base
            },
            RpcTags {
                nid: crate::model::Nid {
                    addr: base.nid.addr ^ 1,
                    ..base.nid
                },
                ..base
            },
            RpcTags {
                nid: crate::model::Nid {
                    net: crate::model::LNet {
                        kind: NetKind::O2ib,
                        num: base.nid.net.num,
                    },
                    ..base.nid
                },
                ..base
            },
            RpcTags {
                nid: crate::model::Nid {
                    net: crate::model::LNet {
                        kind: base.nid.net.kind,
                        num: base.nid.net.num + 1,
                    },
                    ..base.nid
                },
                ..base
            },
            RpcTags {
                opcode: Opcode::OstPunch,
                ..base
            },
            RpcTags {
                uid: base.uid + 1,
                ..base
            },
            RpcTags {
                gid: base.gid + 1,
                ..base
            },
            RpcTags {
                projid: base.projid + 1,
                ..base
            },
            RpcTags {
                nodemap: base.nodemap + 1,
                ..base
            },
        ];
        assert_eq!(key_hash(&base), key_hash(&{ base }));
        for v in &variants {
            assert_ne!(v, &base);
            assert_ne!(key_hash(v), key_hash(&base), "{v:?}");
        }
        let mut hashes: Vec<u32> = (0..100_000)
            .map(|k| {
                key_hash(&RpcTags {
                    job: JobId::new(&format!("job.{k}")).unwrap(),
                    ..RpcTags::default()
                })
            })
            .collect();
        hashes.sort_unstable();
        let collisions = hashes.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(collisions <= 8, "{collisions} colliding pairs");
    }

    proptest! {
        /// Against a map as the model, with hashes from a tiny range so that runs of equal and
        /// neighbouring hashes (and the wrap-around at the table end) are the common case.
        #[test]
        fn index_matches_a_map(ops in prop::collection::vec((any::<bool>(), 0u32..40, 0u32..6), 1..400)) {
            let mut index = ClassIndex::default();
            // class -> hash
            let mut model: BTreeMap<u32, u32> = BTreeMap::new();
            for (insert, class, hash_bits) in ops {
                // Hashes near u32::MAX too, so the spread hash lands everywhere.
                let hash = hash_bits.wrapping_mul(0x4000_0001).rotate_left(hash_bits);
                if insert {
                    if let std::collections::btree_map::Entry::Vacant(e) = model.entry(class) {
                        e.insert(hash);
                        index.insert(hash, class);
                    }
                } else if let Some(h) = model.remove(&class) {
                    index.remove(h, class);
                }
                prop_assert_eq!(index.len(), model.len());
                for c in 0..40u32 {
                    let found = model.get(&c).and_then(|&h| index.find(h, |x| x == c));
                    prop_assert_eq!(found, model.get(&c).map(|_| c));
                }
                // A hash nobody has finds nothing.
                prop_assert_eq!(index.find(0xDEAD_BEEF, |_| true), None);
            }
        }
    }
}
