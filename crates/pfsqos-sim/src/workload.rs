//! Workload pieces that need no engine state: the temporal shape of a process resolved to
//! nanoseconds, and the split of one I/O call into RPCs along a stripe layout.

use crate::scenario::{ShapeKind, ShapeSpec};

/// `s` seconds in integer nanoseconds (rounded; negative or non-finite is 0).
pub fn secs_to_ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e9).round() as u64
    } else {
        0
    }
}

/// A process's shape with times in ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapePlan {
    /// One endless burst from `start_ns`.
    Continuous,
    /// Bursts of `burst_bytes`, one due every `interval_ns` after the previous one started,
    /// never overlapping.
    Periodic { burst_bytes: u64, interval_ns: u64 },
    /// Explicit bursts `(at_ns, bytes)`, sorted by time; each starts at its time or when the
    /// previous one completes, whichever is later.
    Bursts(Vec<(u64, u64)>),
    /// `phases` I/O phases of `phase_bytes`, each after `compute_ns` of compute. The previous
    /// phase's end passed to [`Shape::burst`] must be the job's barrier, not the process's own
    /// end: the engine holds every process of the job until the last one finishes.
    Phases {
        phases: u32,
        compute_ns: u64,
        phase_bytes: u64,
    },
}

/// The resolved shape plus its window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub plan: ShapePlan,
    pub start_ns: u64,
    /// `u64::MAX` when there is no `stop_s`.
    pub stop_ns: u64,
}

impl Shape {
    pub fn from_spec(spec: &ShapeSpec) -> Shape {
        let plan = match spec.kind {
            ShapeKind::Continuous => ShapePlan::Continuous,
            ShapeKind::Periodic => ShapePlan::Periodic {
                burst_bytes: spec.burst_size.map_or(0, |b| b.bytes()),
                interval_ns: spec.interval_s.map_or(0, secs_to_ns),
            },
            ShapeKind::Bursts => {
                let mut list: Vec<(u64, u64)> = spec
                    .bursts
                    .iter()
                    .map(|b| (secs_to_ns(b.at_s), b.size.bytes()))
                    .collect();
                list.sort_by_key(|&(at, _)| at);
                ShapePlan::Bursts(list)
            }
            ShapeKind::Phases => ShapePlan::Phases {
                phases: spec.phases.unwrap_or(0),
                compute_ns: spec.compute_s.map_or(0, secs_to_ns),
                phase_bytes: spec.phase_size.map_or(0, |b| b.bytes()),
            },
        };
        Shape {
            plan,
            start_ns: secs_to_ns(spec.start_s),
            stop_ns: spec.stop_s.map_or(u64::MAX, secs_to_ns),
        }
    }

    /// Whether the job's processes synchronise at the end of each burst (a `phases` shape).
    pub fn is_phased(&self) -> bool {
        matches!(self.plan, ShapePlan::Phases { .. })
    }

    /// Start time and size of burst `index`, given when the previous burst started and
    /// completed; `None` when the shape has no such burst.
    pub fn burst(&self, index: u32, prev_start_ns: u64, prev_end_ns: u64) -> Option<(u64, u64)> {
        match &self.plan {
            ShapePlan::Continuous => (index == 0).then_some((self.start_ns, u64::MAX)),
            ShapePlan::Periodic {
                burst_bytes,
                interval_ns,
            } => {
                if index == 0 {
                    Some((self.start_ns, *burst_bytes))
                } else {
                    let due = prev_start_ns.saturating_add(*interval_ns);
                    Some((due.max(prev_end_ns), *burst_bytes))
                }
            }
            ShapePlan::Bursts(list) => list.get(index as usize).map(|&(at, bytes)| {
                let earliest = if index == 0 {
                    self.start_ns
                } else {
                    prev_end_ns
                };
                (at.max(earliest), bytes)
            }),
            ShapePlan::Phases {
                phases,
                compute_ns,
                phase_bytes,
            } => (index < *phases).then(|| {
                let compute_from = if index == 0 {
                    self.start_ns
                } else {
                    prev_end_ns
                };
                (compute_from.saturating_add(*compute_ns), *phase_bytes)
            }),
        }
    }
}

/// One RPC of an I/O call: a contiguous piece of one stripe object, at most `brw_size` long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcPiece {
    /// Index of the stripe in the layout (object = file's first object + this).
    pub stripe_index: u32,
    /// OST holding the object.
    pub ost: u32,
    pub object_offset_bytes: u64,
    /// File offset of the piece's first byte (a piece spanning several stripe rounds of its
    /// object covers several file ranges).
    pub file_offset_bytes: u64,
    pub size_bytes: u64,
}

/// Splits the file range `[offset, offset + size)` of a RAID-0 layout into RPCs the way
/// Lustre's client does: the range maps to one contiguous range of each object it touches
/// (the union of that object's `StripeLayout::extents`), and each object range is cut into
/// consecutive RPCs of at most `brw_size_bytes`. So an RPC never spans two objects, but with
/// one stripe (or a call covering several stripe rounds) it may span stripe boundaries of its
/// object, as Lustre's OSC RPCs do. Objects come in the order the range first reaches them.
/// Calls `f` for each RPC and allocates nothing.
pub fn split_rpcs(
    stripe_size_bytes: u64,
    osts: &[u32],
    offset_bytes: u64,
    size_bytes: u64,
    brw_size_bytes: u64,
    mut f: impl FnMut(RpcPiece),
) {
    debug_assert!(stripe_size_bytes > 0 && brw_size_bytes > 0 && !osts.is_empty());
    if size_bytes == 0 {
        return;
    }
    let ss = stripe_size_bytes;
    let count = osts.len() as u64;
    let end = offset_bytes + size_bytes;
    let first_stripe = offset_bytes / ss;
    let last_stripe = (end - 1) / ss;
    let touched = count.min(last_stripe - first_stripe + 1);
    for j in 0..touched {
        let stripe_no = first_stripe + j;
        let stripe_index = stripe_no % count;
        let start_pos = if j == 0 { offset_bytes } else { stripe_no * ss };
        let object_start = (stripe_no / count) * ss + start_pos % ss;
        // The last stripe of this object inside the range.
        let last_no = last_stripe - (last_stripe - stripe_no) % count;
        let last_end_pos = if last_no == last_stripe {
            end
        } else {
            (last_no + 1) * ss
        };
        let object_end = (last_no / count) * ss + (last_end_pos - last_no * ss);
        let mut o = object_start;
        while o < object_end {
            let take = (object_end - o).min(brw_size_bytes);
            f(RpcPiece {
                stripe_index: stripe_index as u32,
                ost: osts[stripe_index as usize],
                object_offset_bytes: o,
                file_offset_bytes: (o / ss) * count * ss + stripe_index * ss + o % ss,
                size_bytes: take,
            });
            o += take;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::model::{OstId, StripeLayout};
    use proptest::prelude::*;

    fn pieces(ss: u64, osts: &[u32], off: u64, len: u64, brw: u64) -> Vec<RpcPiece> {
        let mut v = Vec::new();
        split_rpcs(ss, osts, off, len, brw, |p| v.push(p));
        v
    }

    #[test]
    fn one_contiguous_range_per_object_cut_at_brw_size() {
        // Stripe 1 MiB over OSTs 5,6; brw 768 KiB; 3 MiB starting at 0.75 MiB touches
        // object 0 at [0.75, 2) MiB (stripes 0 and 2) and object 1 at [0, 1) MiB (stripe 1)
        // plus [1, 1.75) MiB (stripe 3): each object's part is contiguous.
        let k = 1u64 << 10;
        let v = pieces(1 << 20, &[5, 6], 768 * k, 3072 * k, 768 * k);
        let got: Vec<(u32, u64, u64, u64)> = v
            .iter()
            .map(|p| {
                (
                    p.ost,
                    p.object_offset_bytes,
                    p.size_bytes,
                    p.file_offset_bytes,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (5, 768 * k, 768 * k, 768 * k),
                (5, 1536 * k, 512 * k, 2560 * k),
                (6, 0, 768 * k, 1024 * k),
                (6, 768 * k, 768 * k, 1792 * k),
                (6, 1536 * k, 256 * k, 3584 * k),
            ]
        );
        // One stripe: the object is the file, RPCs are full brw_size regardless of stripes.
        let v = pieces(1 << 20, &[3], 0, 8 << 20, 4 << 20);
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|p| p.size_bytes == 4 << 20 && p.ost == 3));
    }

    proptest! {
        #[test]
        fn covers_exactly_the_core_extents(
            ss_k in 1u64..64, n in 1usize..5, off in 0u64..1_000_000, len in 1u64..1_000_000,
            brw_k in 1u64..128,
        ) {
            let osts: Vec<u32> = (0..n as u32).map(|i| (i * 7) % 11).collect();
            let ss = ss_k * 4096;
            let brw = brw_k * 4096;
            let layout = StripeLayout {
                stripe_size_bytes: ss,
                osts: osts.iter().map(|&o| OstId(o)).collect(),
            };
            let v = pieces(ss, &osts, off, len, brw);
            prop_assert!(v.iter().all(|p| p.size_bytes <= brw && p.size_bytes > 0));
            // Per stripe index: the pieces tile one range, which is the union of core's
            // extents of that object; only the last piece of a range may be short.
            let ext = layout.extents(off, len);
            for idx in 0..n as u32 {
                let mine: Vec<&RpcPiece> = v.iter().filter(|p| p.stripe_index == idx).collect();
                let core: Vec<_> = ext.iter().filter(|e| e.stripe_index == idx).collect();
                prop_assert_eq!(mine.is_empty(), core.is_empty());
                if core.is_empty() { continue; }
                prop_assert!(mine.windows(2).all(|w|
                    w[0].object_offset_bytes + w[0].size_bytes == w[1].object_offset_bytes
                    && w[0].size_bytes == brw));
                prop_assert_eq!(mine[0].object_offset_bytes, core[0].object_offset_bytes);
                prop_assert_eq!(mine[0].file_offset_bytes, core[0].file_offset_bytes);
                prop_assert_eq!(
                    mine.iter().map(|p| p.size_bytes).sum::<u64>(),
                    core.iter().map(|e| e.size_bytes).sum::<u64>()
                );
                prop_assert!(mine.iter().all(|p| p.ost == osts[idx as usize]));
            }
        }
    }

    #[test]
    fn periodic_bursts_never_overlap() {
        let shape = Shape {
            plan: ShapePlan::Periodic {
                burst_bytes: 10,
                interval_ns: 100,
            },
            start_ns: 50,
            stop_ns: u64::MAX,
        };
        assert_eq!(shape.burst(0, 0, 0), Some((50, 10)));
        // On time: next due at start + interval.
        assert_eq!(shape.burst(1, 50, 80), Some((150, 10)));
        // Late: the next starts when the previous completes.
        assert_eq!(shape.burst(2, 150, 270), Some((270, 10)));
    }

    #[test]
    fn phases_compute_after_the_barrier() {
        let shape = Shape {
            plan: ShapePlan::Phases {
                phases: 2,
                compute_ns: 100,
                phase_bytes: 7,
            },
            start_ns: 10,
            stop_ns: u64::MAX,
        };
        assert_eq!(shape.burst(0, 0, 0), Some((110, 7)));
        // The next phase computes from the barrier, whatever the previous start.
        assert_eq!(shape.burst(1, 110, 500), Some((600, 7)));
        assert_eq!(shape.burst(2, 600, 900), None);
    }

    #[test]
    fn explicit_bursts_wait_for_the_previous() {
        let shape = Shape {
            plan: ShapePlan::Bursts(vec![(10, 1), (20, 2)]),
            start_ns: 0,
            stop_ns: u64::MAX,
        };
        assert_eq!(shape.burst(0, 0, 0), Some((10, 1)));
        assert_eq!(shape.burst(1, 10, 15), Some((20, 2)));
        assert_eq!(shape.burst(1, 10, 25), Some((25, 2)));
        assert_eq!(shape.burst(2, 25, 30), None);
    }
}
