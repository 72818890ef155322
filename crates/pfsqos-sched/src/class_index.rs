//! The class index: an open-addressing (linear probing) table from a 32-bit key hash to a class
//! slot. Shared by TBF (its classes) and SFQ(D)/DSFQ (their flows).
//!
//! It replaces a `FxHashMap<u32, u32>` plus collision chains through the classes. With 100,000
//! classes the index no longer fits in the caches, and a lookup cost two dependent misses there
//! (the control bytes, then the bucket). Here one 8-byte slot holds both the hash and the class,
//! so a lookup usually touches one cache line of the index and then the class itself. Keys with
//! equal hashes simply occupy neighbouring slots; the caller's key comparison tells them apart.

use crate::model::RpcTags;

/// The 32-bit hash of a class key (TBF's classes, SFQ's flows), a function of exactly the
/// fields the derived `Eq` compares.
///
/// Its multiplies are independent: a lookup cannot load its index slot before the hash is
/// done, and at 100,000 classes that slot is a miss to L3 on every request, so the hash's
/// latency adds to each request's. `FxHasher` over the derived `Hash` chains about ten
/// multiplies; here every one reads the key directly and two adds join them, so the hash is
/// one multiply deep (the SFQ benchmark in docs/benchmarks.md shows what it costs).
///
/// A folded 64x64->128-bit product (as in foldhash and wyhash) is 0 when either operand is,
/// whatever the other holds, so a key must never be able to zero one operand of a product
/// whose other operand is also the key's:
/// * the job id's words are paired, each XORed with a constant it can never equal
///   ([`JOB_WORD_KEYS`]: the first word's low byte is the length, at most 31; each other
///   constant holds a control byte, which a job id refuses and its zero padding is not);
/// * every other field's word is multiplied by a constant, alone: the one value that zeroes
///   its operand makes only that field's term 0 and cannot cancel another field.
///
/// Not built to resist keys chosen to collide (neither was `FxHasher`): a flood of
/// colliding job ids lengthens probe runs, within the bound on classes.
#[inline]
pub(super) fn key_hash(key: &RpcTags) -> u32 {
    #[inline(always)]
    fn fold_mul(x: u64, y: u64) -> u64 {
        let p = u128::from(x) * u128::from(y);
        (p as u64) ^ ((p >> 64) as u64)
    }
    let [j0, j1, j2, j3] = key.job.words();
    let [k0, k1, k2, k3] = JOB_WORD_KEYS;
    let nid = u64::from(key.nid.addr) | u64::from(key.nid.net.num) << 32;
    let ids = u64::from(key.uid) | u64::from(key.gid) << 32;
    let more = u64::from(key.projid) | u64::from(key.nodemap) << 32;
    let kinds = key.nid.net.kind as u64 | (key.opcode as u64) << 8;
    let job = fold_mul(j0 ^ k0, j1 ^ k1).wrapping_add(fold_mul(j2 ^ k2, j3 ^ k3));
    let others = fold_mul(nid ^ FIELD_KEYS[0], FIELD_KEYS[1])
        .wrapping_add(fold_mul(ids ^ FIELD_KEYS[2], FIELD_KEYS[3]))
        .wrapping_add(fold_mul(more ^ FIELD_KEYS[4], FIELD_KEYS[5]))
        .wrapping_add(fold_mul(kinds ^ FIELD_KEYS[6], FIELD_KEYS[7]));
    ((job ^ others) >> 32) as u32
}

/// XORed into the job id's words before they are multiplied in pairs: hexadecimal digits of
/// pi (as in Blowfish's P-array), checked by a test to be values no job id's word can be.
const JOB_WORD_KEYS: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// The next digits of pi: the XOR and the multiplier of each other field's word (a 128-bit
/// product by a nonzero constant loses nothing of the word before the fold).
const FIELD_KEYS: [u64; 8] = [
    0x4528_21e6_38d0_1377,
    0xbe54_66cf_34e9_0c6c,
    0xc0ac_29b7_c97c_50dd,
    0x3f84_d5b5_b547_0917,
    0x9216_d5d9_8979_fb1b,
    0xd131_0ba6_98df_b5ac,
    0x2ffd_72db_d01a_dfb7,
    0xb8e1_afed_6a26_7e96,
];

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

    /// No job id's word can equal the constant XORed into it, so no folded product of two
    /// job words is 0 whatever the other word holds (see [`key_hash`]).
    #[test]
    fn job_word_keys_are_words_no_job_id_has() {
        use crate::model::JOB_ID_LEN_MAX;
        // The first word's low byte is the length.
        assert!(JOB_WORD_KEYS[0] & 0xff > JOB_ID_LEN_MAX as u64);
        // The others hold a byte that text refuses and padding (0) is not.
        for k in &JOB_WORD_KEYS[1..] {
            assert!(
                k.to_le_bytes()
                    .iter()
                    .any(|&b| b != 0 && b.is_ascii_control()),
                "{k:#x}"
            );
        }
    }

    /// Every byte position of a job id, and its length, moves the id's words and the hash:
    /// no byte falls between two words.
    #[test]
    fn every_job_id_byte_moves_the_hash() {
        use crate::model::{JobId, JOB_ID_LEN_MAX};
        let text = "abcdefghijklmnopqrstuvwxyz01234";
        assert_eq!(text.len(), JOB_ID_LEN_MAX);
        let key = |t: &str| RpcTags {
            job: JobId::new(t).unwrap(),
            ..RpcTags::default()
        };
        let base = key(text);
        for i in 0..JOB_ID_LEN_MAX {
            let mut changed = text.as_bytes().to_vec();
            changed[i] = b'_';
            let changed = key(std::str::from_utf8(&changed).unwrap());
            assert_ne!(changed.job.words(), base.job.words(), "byte {i}");
            assert_ne!(key_hash(&changed), key_hash(&base), "byte {i}");
        }
        for len in 0..JOB_ID_LEN_MAX {
            let shorter = key(&text[..len]);
            assert_ne!(shorter.job.words(), base.job.words(), "length {len}");
            assert_ne!(key_hash(&shorter), key_hash(&base), "length {len}");
        }
    }

    /// Every field of the key moves the hash, and 100,000 job ids of the benchmarks' form
    /// collide in 32 bits about as often as random values would (expected 1.2 pairs).
    #[test]
    fn key_hash_reads_every_field_and_spreads_job_ids() {
        use crate::model::{JobId, NetKind, Opcode};
        let base = crate::test_write("job.1");
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
        /// Two job ids have equal words exactly when they are equal (the hash may then
        /// read the words in place of the bytes). `b` is `a` with at most one character
        /// changed and possibly cut short, so most pairs differ in one byte or the length
        /// (two independent strings would nearly always differ in their first word).
        #[test]
        fn job_id_words_are_equal_exactly_when_the_ids_are(
            a in "[ab_]{0,31}",
            at in 0usize..31,
            with in prop::sample::select(vec!['a', 'b', '_']),
            keep in 0usize..=31,
        ) {
            use crate::model::JobId;
            let mut b: Vec<char> = a.chars().collect();
            if let Some(c) = b.get_mut(at) {
                *c = with;
            }
            b.truncate(keep);
            let b: String = b.into_iter().collect();
            let (a, b) = (JobId::new(&a).unwrap(), JobId::new(&b).unwrap());
            prop_assert_eq!(a.words() == b.words(), a == b);
        }

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
