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

    /// The same shape `delay_ns` later: its start, stop and absolute burst times move; the
    /// relative ones (intervals, compute times) do not.
    pub fn delayed(mut self, delay_ns: u64) -> Shape {
        self.start_ns = self.start_ns.saturating_add(delay_ns);
        if self.stop_ns != u64::MAX {
            self.stop_ns = self.stop_ns.saturating_add(delay_ns);
        }
        if let ShapePlan::Bursts(list) = &mut self.plan {
            for (at, _) in list.iter_mut() {
                *at = at.saturating_add(delay_ns);
            }
        }
        self
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

/// The start delay of job `job_index` (in the order the engine adds jobs) under `seed`:
/// uniform in `[0, jitter_ns]`, from a generator of its own per job (so adding a job does not
/// move the others), on streams apart from the processes' (which use the process index).
pub fn job_start_delay_ns(seed: u64, job_index: u32, jitter_ns: u64) -> u64 {
    use rand::{Rng, SeedableRng};
    if jitter_ns == 0 {
        return 0;
    }
    // A seed of its own, so these draws never coincide with a process's random offsets.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6a09_e667_f3bc_c909);
    rng.set_stream(u64::from(job_index));
    rng.random_range(0..=jitter_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_delays_are_per_job_bounded_and_move_every_absolute_time() {
        assert_eq!(job_start_delay_ns(1, 0, 0), 0);
        let d: Vec<u64> = (0..50)
            .map(|j| job_start_delay_ns(7, j, 1_000_000))
            .collect();
        assert!(d.iter().all(|&x| x <= 1_000_000));
        // Not all alike, and another seed draws others.
        assert!(d.iter().any(|&x| x != d[0]));
        assert_ne!(
            d,
            (0..50)
                .map(|j| job_start_delay_ns(8, j, 1_000_000))
                .collect::<Vec<_>>()
        );
        // The same job and seed: the same delay.
        assert_eq!(job_start_delay_ns(7, 3, 1_000_000), d[3]);
        let shape = Shape {
            plan: ShapePlan::Bursts(vec![(10, 1), (30, 2)]),
            start_ns: 5,
            stop_ns: 100,
        }
        .delayed(1000);
        assert_eq!(shape.start_ns, 1005);
        assert_eq!(shape.stop_ns, 1100);
        assert_eq!(shape.burst(0, 0, 0), Some((1010, 1)));
        let open = Shape {
            plan: ShapePlan::Continuous,
            start_ns: 0,
            stop_ns: u64::MAX,
        }
        .delayed(7);
        assert_eq!((open.start_ns, open.stop_ns), (7, u64::MAX));
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
