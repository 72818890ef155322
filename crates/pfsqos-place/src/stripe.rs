//! Stripe size from a file's predicted size: iez's Method I (eq. 1-4) and Method II (eq. 5-6),
//! under Lustre's 64 KiB alignment.
//!
//! iez calls 64 KiB the Alignment Parameter `AP` and makes every stripe an *even* multiple of it
//! ("Multiplication with 2 ensures that the stripe size is an even multiple of AP"), so the
//! granule is `2·AP` = 128 KiB. Lustre itself only needs a multiple of 64 KiB
//! ([`STRIPE_SIZE_UNIT_BYTES`]); we keep the paper's 128 KiB granule because its Table II
//! shows it: the 803 405 824-byte HACC-I/O file of Table I with 8 stripes gets a stripe size of
//! 100 532 224 bytes = 767 × 128 KiB, which is Method II with `2·AP` (with 64 KiB it would be
//! 1533 × 64 KiB = 100 466 688).
//!
//! What the paper gets wrong or leaves open, and what we do:
//! - Eq. 3 prints `remainingBytes = writeBytes − AP·2·(stripeCount − 1)`, dropping the `N` of
//!   eq. 1; read literally the last OST would get almost the whole file. We use
//!   `writeBytes − AP·2·N·(stripeCount − 1)`, the second term of eq. 1.
//! - Algorithm 2's `calculateStripeSize` returns `ceil(w / (AP·2·sc))`, which is eq. 6's `N` (a
//!   count of 128 KiB granules), not a size in bytes; the text says the stripe size is
//!   `AP·2·N`, and Table II's sizes are in bytes. We return `AP·2·N` bytes.
//! - The paper's example, "for a 766.175 MB file ... 833 KB more with Method II and 63 KB more
//!   with Method I", is Table I's 803 405 824 bytes = 766.1875 MiB (so "MB" means MiB). With 8
//!   stripes we get exactly 832 KiB (851 968 bytes) more for Method II and 64 KiB (65 536
//!   bytes) more for Method I: the paper's 833 and 63 are off by one in the last digit (the
//!   test pins our numbers).
//! - Eq. 2 divides by `stripeCount − 1`: undefined for one stripe. With one stripe both methods
//!   put the whole file on the one OST, so Method I is Method II there.
//! - Eq. 2 gives `N = 0` for files smaller than `AP·2·(stripeCount − 1)`, a stripe size of 0,
//!   which Lustre refuses; and eq. 6 gives `N = 0` for an empty file. We take `N ≥ 1`.
//! - "The number of bytes written on the last OST will always be smaller" (Method I) holds only
//!   when `N ≥ stripeCount − 1`; for smaller files `X` can exceed `N`. And Method I is not a
//!   Lustre layout at all (a layout has one stripe size): it describes bytes per OST, which a
//!   RAID-0 layout of stripe size `AP·2·N` realizes only when the last OST's share fits in one
//!   stripe. iez uses Method II; Method I is here for the comparison the paper makes.

use std::fmt;

pub use crate::limits::{STRIPE_SIZE_BYTES_MAX, STRIPE_SIZE_UNIT_BYTES};

/// iez's Alignment Parameter `AP`: Lustre's stripe-size unit, 64 KiB.
pub const ALIGNMENT_BYTES: u64 = STRIPE_SIZE_UNIT_BYTES;
/// iez's granule, `AP·2`: every stripe is an even multiple of `AP` (eq. 1 and 5).
pub const GRANULE_BYTES: u64 = 2 * ALIGNMENT_BYTES;
/// The largest stripe size that is a whole number of granules and a valid Lustre stripe size.
pub const IEZ_STRIPE_SIZE_BYTES_MAX: u64 = STRIPE_SIZE_BYTES_MAX / GRANULE_BYTES * GRANULE_BYTES;
/// Largest predicted file size the stripe methods take (1 EiB): keeps every product below
/// `u64::MAX` without checks at each step.
pub const PREDICTED_FILE_BYTES_MAX: u64 = 1 << 60;

const _: () = {
    assert!(IEZ_STRIPE_SIZE_BYTES_MAX.is_multiple_of(STRIPE_SIZE_UNIT_BYTES));
    assert!(IEZ_STRIPE_SIZE_BYTES_MAX > 0);
};

/// How a file's bytes are spread over its stripes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripeAllocation {
    pub stripe_count: u32,
    /// Bytes on each of the first `stripe_count − 1` OSTs, and the Lustre stripe size (eq. 1's
    /// `AP·2·N`; eq. 5's for all OSTs).
    pub stripe_size_bytes: u64,
    /// Bytes on the last OST (Method I: eq. 1's `AP·2·X`; Method II: the stripe size).
    pub last_ost_bytes: u64,
}

impl StripeAllocation {
    /// Bytes allocated in all (eq. 1 or eq. 5's right-hand side): at least the file's size.
    pub fn allocated_bytes(&self) -> u64 {
        self.stripe_size_bytes * u64::from(self.stripe_count - 1) + self.last_ost_bytes
    }

    /// Bytes allocated beyond `write_bytes`.
    pub fn extra_bytes(&self, write_bytes: u64) -> u64 {
        self.allocated_bytes() - write_bytes
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StripeSizeError {
    ZeroStripeCount,
    /// The file is larger than [`PREDICTED_FILE_BYTES_MAX`].
    FileTooLarge(u64),
    /// The stripe size the method gives exceeds [`STRIPE_SIZE_BYTES_MAX`] (a large file on
    /// few stripes).
    StripeTooLarge {
        stripe_size_bytes: u64,
    },
}

impl fmt::Display for StripeSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StripeSizeError::ZeroStripeCount => write!(f, "stripe count 0"),
            StripeSizeError::FileTooLarge(b) => write!(
                f,
                "file of {b} bytes exceeds the {PREDICTED_FILE_BYTES_MAX} bytes the stripe methods take"
            ),
            StripeSizeError::StripeTooLarge { stripe_size_bytes } => write!(
                f,
                "stripe size {stripe_size_bytes} exceeds Lustre's largest ({STRIPE_SIZE_BYTES_MAX})"
            ),
        }
    }
}

impl std::error::Error for StripeSizeError {}

fn check(write_bytes: u64, stripe_count: u32) -> Result<(), StripeSizeError> {
    if stripe_count == 0 {
        return Err(StripeSizeError::ZeroStripeCount);
    }
    if write_bytes > PREDICTED_FILE_BYTES_MAX {
        return Err(StripeSizeError::FileTooLarge(write_bytes));
    }
    Ok(())
}

fn finish(a: StripeAllocation, write_bytes: u64) -> Result<StripeAllocation, StripeSizeError> {
    if a.stripe_size_bytes > STRIPE_SIZE_BYTES_MAX {
        return Err(StripeSizeError::StripeTooLarge {
            stripe_size_bytes: a.stripe_size_bytes,
        });
    }
    assert!(a.stripe_size_bytes > 0 && a.stripe_size_bytes.is_multiple_of(GRANULE_BYTES));
    assert!(a.last_ost_bytes.is_multiple_of(GRANULE_BYTES));
    assert!(a.allocated_bytes() >= write_bytes, "{a:?} < {write_bytes}");
    Ok(a)
}

/// Method II (eq. 5-6), iez's choice: every OST gets `AP·2·N` bytes with
/// `N = ceil(writeBytes / (AP·2·stripeCount))` (at least 1), so all stripes are equal and the
/// OSTs of the file equally loaded.
pub fn method_ii(write_bytes: u64, stripe_count: u32) -> Result<StripeAllocation, StripeSizeError> {
    check(write_bytes, stripe_count)?;
    let n = write_bytes
        .div_ceil(GRANULE_BYTES * u64::from(stripe_count))
        .max(1);
    let stripe_size_bytes = GRANULE_BYTES * n;
    finish(
        StripeAllocation {
            stripe_count,
            stripe_size_bytes,
            last_ost_bytes: stripe_size_bytes,
        },
        write_bytes,
    )
}

/// Method I (eq. 1-4): the first `stripeCount − 1` OSTs get `AP·2·N` bytes with
/// `N = floor(writeBytes / (AP·2·(stripeCount − 1)))` (at least 1), the last the rest rounded
/// up to a granule (eq. 3 as corrected in the module doc, and eq. 4). Allocates less beyond the
/// file than Method II, but unevenly. One stripe: Method II.
pub fn method_i(write_bytes: u64, stripe_count: u32) -> Result<StripeAllocation, StripeSizeError> {
    check(write_bytes, stripe_count)?;
    if stripe_count == 1 {
        return method_ii(write_bytes, 1);
    }
    let others = u64::from(stripe_count - 1);
    let n = (write_bytes / (GRANULE_BYTES * others)).max(1);
    let stripe_size_bytes = GRANULE_BYTES * n;
    let remaining_bytes = write_bytes.saturating_sub(stripe_size_bytes * others);
    let x = remaining_bytes.div_ceil(GRANULE_BYTES);
    finish(
        StripeAllocation {
            stripe_count,
            stripe_size_bytes,
            last_ost_bytes: GRANULE_BYTES * x,
        },
        write_bytes,
    )
}

/// The stripe size iez gives a file of `write_bytes` over `stripe_count` stripes: Method II's,
/// or, when that exceeds Lustre's largest stripe size (a large file on few stripes), the
/// largest granule multiple Lustre takes ([`IEZ_STRIPE_SIZE_BYTES_MAX`]); RAID-0 then wraps the
/// file around its OSTs, which keeps them within one stripe of each other.
pub fn iez_stripe_size_bytes(write_bytes: u64, stripe_count: u32) -> Result<u64, StripeSizeError> {
    match method_ii(write_bytes, stripe_count) {
        Ok(a) => Ok(a.stripe_size_bytes),
        Err(StripeSizeError::StripeTooLarge { .. }) => Ok(IEZ_STRIPE_SIZE_BYTES_MAX),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Table I's HACC-I/O file: 803 405 824 bytes = 766.1875 MiB, 8 stripes.
    const HACC_FILE_BYTES: u64 = 803_405_824;

    #[test]
    fn the_papers_example_in_kib() {
        let two = method_ii(HACC_FILE_BYTES, 8).unwrap();
        // Table II's stripe size.
        assert_eq!(two.stripe_size_bytes, 100_532_224);
        assert_eq!(two.last_ost_bytes, two.stripe_size_bytes);
        // "833 KB" in the paper: 832 KiB.
        assert_eq!(two.extra_bytes(HACC_FILE_BYTES), 832 << 10);

        let one = method_i(HACC_FILE_BYTES, 8).unwrap();
        // N = floor(803405824 / (131072·7)) = 875, remaining 589 824 bytes, X = 5.
        assert_eq!(one.stripe_size_bytes, 875 * GRANULE_BYTES);
        assert_eq!(one.last_ost_bytes, 5 * GRANULE_BYTES);
        // "63 KB" in the paper: 64 KiB.
        assert_eq!(one.extra_bytes(HACC_FILE_BYTES), 64 << 10);
        assert!(one.extra_bytes(HACC_FILE_BYTES) < two.extra_bytes(HACC_FILE_BYTES));
    }

    #[test]
    fn edge_cases() {
        assert_eq!(method_ii(0, 4).unwrap().stripe_size_bytes, GRANULE_BYTES);
        assert_eq!(method_i(1, 1).unwrap(), method_ii(1, 1).unwrap());
        // Smaller than AP·2·(sc − 1): N would be 0.
        let small = method_i(GRANULE_BYTES, 4).unwrap();
        assert_eq!(small.stripe_size_bytes, GRANULE_BYTES);
        assert_eq!(small.last_ost_bytes, 0);
        // Method I's last OST can exceed the others when N < sc − 1.
        let w = GRANULE_BYTES * 7 + GRANULE_BYTES * 4 - 1;
        let a = method_i(w, 8).unwrap();
        assert_eq!(a.stripe_size_bytes, GRANULE_BYTES);
        assert_eq!(a.last_ost_bytes, 4 * GRANULE_BYTES);
        assert_eq!(method_ii(1, 0), Err(StripeSizeError::ZeroStripeCount));
        assert_eq!(
            method_ii(PREDICTED_FILE_BYTES_MAX + 1, 1),
            Err(StripeSizeError::FileTooLarge(PREDICTED_FILE_BYTES_MAX + 1))
        );
        assert!(matches!(
            method_ii(64 << 30, 8),
            Err(StripeSizeError::StripeTooLarge { .. })
        ));
        assert_eq!(
            iez_stripe_size_bytes(64 << 30, 8),
            Ok(IEZ_STRIPE_SIZE_BYTES_MAX)
        );
        assert_eq!(iez_stripe_size_bytes(HACC_FILE_BYTES, 8), Ok(100_532_224));
    }

    proptest! {
        #[test]
        fn both_methods_align_and_cover_the_file(
            write_bytes in 0u64..(1 << 40),
            stripe_count in 1u32..=2000,
        ) {
            for method in [method_i, method_ii] {
                match method(write_bytes, stripe_count) {
                    Ok(a) => {
                        prop_assert!(a.stripe_size_bytes.is_multiple_of(STRIPE_SIZE_UNIT_BYTES));
                        prop_assert!(a.stripe_size_bytes > 0);
                        prop_assert!(a.stripe_size_bytes <= STRIPE_SIZE_BYTES_MAX);
                        prop_assert!(a.last_ost_bytes.is_multiple_of(STRIPE_SIZE_UNIT_BYTES));
                        prop_assert!(a.allocated_bytes() >= write_bytes);
                    }
                    Err(StripeSizeError::StripeTooLarge { stripe_size_bytes }) => {
                        prop_assert!(stripe_size_bytes > STRIPE_SIZE_BYTES_MAX);
                    }
                    Err(e) => prop_assert!(false, "{e}"),
                }
            }
            // Method II never allocates a granule per stripe or more beyond the file (unless
            // the file is empty: one granule each).
            if let Ok(a) = method_ii(write_bytes, stripe_count) {
                if write_bytes > 0 {
                    prop_assert!(a.extra_bytes(write_bytes) < GRANULE_BYTES * u64::from(stripe_count));
                }
            }
            let s = iez_stripe_size_bytes(write_bytes, stripe_count).unwrap();
            prop_assert!(s > 0 && s <= STRIPE_SIZE_BYTES_MAX && s.is_multiple_of(STRIPE_SIZE_UNIT_BYTES));
        }
    }
}
