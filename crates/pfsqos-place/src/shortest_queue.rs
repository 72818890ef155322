//! `shortestqueue`: each new file's stripes go on the OSTs whose queues were shortest at the
//! last observation, so a create steers away from the OSTs a burst is hammering. It is the
//! simplest load-aware placer (one pass over the observation, no forecast), and the worked
//! example of the recipe for adding a placer (docs/architecture.md, "How to add a policy"):
//! a [`Placement`], its options, and a [`DESCRIPTOR`], plus the descriptor's one entry in
//! [`crate::PLACER_ROWS`].
//!
//! Before any observation every queue is zero, and ties go to the OSTs that follow the
//! previous file's last stripe, so an idle file system is placed exactly as round robin places
//! it.

use crate::control::Observation;
use crate::model::{OstId, StripeLayout};
use crate::{Placement, PlacementContext, PlacementError, PlacementRequest, PLACER_OSTS_MAX};

/// Which queue the placer compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// RPCs waiting in the OSS's request scheduler (NRS) at the observation.
    Scheduler,
    /// Requests at the OST's device, the mean over the last period (from the device's
    /// `time_in_queue`, as `/sys/block/<dev>/stat` gives it: Little's law); at the first
    /// observation, the requests there at that instant. A mean, because a device's queue at
    /// one instant swings between empty and full with every burst of read-ahead or write-back.
    Device,
    /// Both, summed: all the work an RPC sent now would wait behind.
    Both,
}

/// Queue lengths are kept in thousandths of a request, so a mean of 0.4 ranks below 0.6.
const MILLI: u64 = 1000;

/// Places stripes on the least-queued OSTs.
#[derive(Clone, Debug)]
pub struct ShortestQueue {
    kind: QueueKind,
    /// Queue of each OST at the last observation in thousandths of a request, indexed by
    /// OST; OSTs never observed are 0.
    queue_milli_rpcs: Vec<u64>,
    /// Each OST's device `time_in_queue` at the last observation, and when that was.
    time_in_queue_ns: Vec<u64>,
    observed_at_ns: Option<u64>,
    /// Where the next tie-break starts: the OST after the previous file's last stripe.
    cursor: u32,
}

impl ShortestQueue {
    pub fn new(ost_count: u32, kind: QueueKind) -> Result<ShortestQueue, PlacementError> {
        if ost_count > PLACER_OSTS_MAX {
            return Err(PlacementError::TooManyOsts(ost_count));
        }
        Ok(ShortestQueue {
            kind,
            queue_milli_rpcs: vec![0; ost_count as usize],
            time_in_queue_ns: vec![0; ost_count as usize],
            observed_at_ns: None,
            cursor: 0,
        })
    }

    /// The queue length the placer holds for `ost`, in thousandths of a request (0 if never
    /// observed).
    pub fn queue_milli_rpcs(&self, ost: u32) -> u64 {
        self.queue_milli_rpcs
            .get(ost as usize)
            .copied()
            .unwrap_or(0)
    }
}

impl Placement for ShortestQueue {
    fn place(
        &mut self,
        request: &PlacementRequest,
        _context: &PlacementContext,
    ) -> Result<StripeLayout, PlacementError> {
        let count = request.resolved_stripe_count()?;
        let n = request.ost_count;
        if n > PLACER_OSTS_MAX {
            return Err(PlacementError::TooManyOsts(n));
        }
        // The file system may have grown since the placer was built: new OSTs start empty.
        if self.queue_milli_rpcs.len() < n as usize {
            self.queue_milli_rpcs.resize(n as usize, 0);
            self.time_in_queue_ns.resize(n as usize, 0);
        }
        let start = request.start_ost.unwrap_or(self.cursor % n);
        let osts: Vec<OstId> = if request.start_ost.is_some() {
            // An explicit start (lfs setstripe -i) is the user's choice: consecutive OSTs.
            (0..count)
                .map(|i| OstId(((start as u64 + i as u64) % n as u64) as u32))
                .collect()
        } else {
            // Rank every OST by (queue, distance from the cursor): the distance makes the
            // ranking total, so equal queues rotate as round robin does.
            let mut order: Vec<u32> = (0..n).collect();
            let distance = |o: u32| (o + n - start) % n;
            order.sort_unstable_by_key(|&o| (self.queue_milli_rpcs[o as usize], distance(o)));
            order.truncate(count as usize);
            // Stripe order follows the rotation too, so a layout reads as Lustre's would.
            order.sort_unstable_by_key(|&o| distance(o));
            self.cursor = (order[order.len() - 1] + 1) % n;
            order.into_iter().map(OstId).collect()
        };
        assert_eq!(
            osts.len(),
            count as usize,
            "a layout has the stripes asked for"
        );
        debug_assert!(
            {
                let mut seen = osts.clone();
                seen.sort_unstable();
                seen.windows(2).all(|w| w[0] != w[1])
            },
            "no OST holds two stripes of one file"
        );
        Ok(StripeLayout {
            stripe_size_bytes: request.stripe_size_bytes,
            osts,
        })
    }

    fn observe(&mut self, observation: &Observation) {
        let now = observation.now_ns;
        // The period since the last observation; none (the first, or time standing still).
        let dt_ns = self
            .observed_at_ns
            .filter(|&at| now > at)
            .map(|at| now - at);
        for target in observation.domains.iter().flat_map(|d| &d.targets) {
            let o = target.ost.0 as usize;
            if o >= self.queue_milli_rpcs.len() {
                // An OST beyond the ones this placer was built for: it cannot be placed on yet.
                continue;
            }
            let device_milli = match dt_ns {
                Some(dt) => {
                    // A counter that went back (the device was reset) gives no mean this time.
                    let busy_ns = target
                        .device_time_in_queue_ns
                        .saturating_sub(self.time_in_queue_ns[o]);
                    (u128::from(busy_ns) * u128::from(MILLI) / u128::from(dt)) as u64
                }
                None => target.device_queue_rpcs.saturating_mul(MILLI),
            };
            self.time_in_queue_ns[o] = target.device_time_in_queue_ns;
            let scheduler_milli = target.queue_len_rpcs.saturating_mul(MILLI);
            self.queue_milli_rpcs[o] = match self.kind {
                QueueKind::Scheduler => scheduler_milli,
                QueueKind::Device => device_milli,
                QueueKind::Both => scheduler_milli.saturating_add(device_milli),
            };
        }
        self.observed_at_ns = Some(now);
    }

    fn state(&self) -> u64 {
        u64::from(self.cursor)
    }

    fn restore(&mut self, state: u64) {
        // Any word is a valid cursor (taken modulo the OST count at the next create); the
        // queues come back with the next observation.
        self.cursor = state as u32;
    }

    fn clone_box(&self) -> Box<dyn Placement> {
        Box::new(self.clone())
    }
}

/// `shortestqueue[:queue=scheduler|device|both]`.
pub const DESCRIPTOR: crate::PlacerDescriptor = crate::PlacerDescriptor {
    name: "shortestqueue",
    description: "each file's stripes on the OSTs with the shortest queues (the scheduler's, and the device's mean) at the last observation",
    options: &["queue=scheduler|device|both (default both)"],
    build: |ost_count, options| {
        let mut kind = QueueKind::Both;
        for option in options {
            let (_, value) = crate::placer_option("shortestqueue", option, &["queue"])?;
            kind = match value {
                "scheduler" => QueueKind::Scheduler,
                "device" => QueueKind::Device,
                "both" => QueueKind::Both,
                other => {
                    return Err(format!(
                        "placer `shortestqueue`: `queue={other}` must be scheduler, device or both"
                    ))
                }
            };
        }
        Ok(Box::new(
            ShortestQueue::new(ost_count, kind).map_err(|e| e.to_string())?,
        ))
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{DomainId, DomainObservation, TargetObservation};
    use crate::{placement_by_name, RoundRobin};

    fn req(stripe_count: i32, ost_count: u32) -> PlacementRequest {
        PlacementRequest {
            stripe_count,
            stripe_size_bytes: 1 << 20,
            ost_count,
            start_ost: None,
        }
    }

    fn observation(queues: &[(u64, u64)]) -> Observation {
        Observation {
            now_ns: 1,
            period_ns: 1,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: queues
                    .iter()
                    .enumerate()
                    .map(|(i, &(sched, device))| TargetObservation {
                        ost: OstId(i as u32),
                        queue_len_rpcs: sched,
                        device_queue_rpcs: device,
                        device_time_in_queue_ns: 0,
                        capacity_rpcs_per_s: 1000,
                        jobs: Vec::new(),
                    })
                    .collect(),
            }],
            jobs: Vec::new(),
            clients: Vec::new(),
        }
    }

    fn ids(l: StripeLayout) -> Vec<u32> {
        l.osts.into_iter().map(|o| o.0).collect()
    }

    #[test]
    fn without_load_it_places_as_round_robin() {
        let mut sq = placement_by_name("shortestqueue", 5).unwrap();
        let mut rr = RoundRobin::default();
        for count in [1, 2, 3, 1, 5, 2, 4] {
            let r = req(count, 5);
            assert_eq!(
                ids(sq.place(&r, &PlacementContext::UNKNOWN).unwrap()),
                ids(rr.place(&r, &PlacementContext::UNKNOWN).unwrap()),
                "stripe count {count}"
            );
        }
    }

    #[test]
    fn stripes_go_to_the_least_queued_osts() {
        let mut sq = ShortestQueue::new(4, QueueKind::Both).unwrap();
        sq.observe(&observation(&[(9, 1), (0, 2), (5, 5), (1, 0)]));
        let layout = sq.place(&req(2, 4), &PlacementContext::UNKNOWN).unwrap();
        assert_eq!(ids(layout), vec![1, 3]);
        let mut sched = ShortestQueue::new(4, QueueKind::Scheduler).unwrap();
        sched.observe(&observation(&[(9, 0), (3, 0), (5, 0), (1, 0)]));
        assert_eq!(
            ids(sched.place(&req(1, 4), &PlacementContext::UNKNOWN).unwrap()),
            vec![3]
        );
        let mut device = ShortestQueue::new(4, QueueKind::Device).unwrap();
        device.observe(&observation(&[(0, 7), (0, 2), (0, 5), (0, 9)]));
        assert_eq!(
            ids(device
                .place(&req(1, 4), &PlacementContext::UNKNOWN)
                .unwrap()),
            vec![1]
        );
    }

    #[test]
    fn an_explicit_start_is_kept() {
        let mut sq = ShortestQueue::new(4, QueueKind::Both).unwrap();
        sq.observe(&observation(&[(0, 0), (0, 0), (100, 0), (100, 0)]));
        let r = PlacementRequest {
            start_ost: Some(2),
            ..req(2, 4)
        };
        assert_eq!(
            ids(sq.place(&r, &PlacementContext::UNKNOWN).unwrap()),
            vec![2, 3]
        );
    }

    #[test]
    fn bad_options_name_the_option_and_what_is_allowed() {
        let e = placement_by_name("shortestqueue:queue=disk", 4).unwrap_err();
        assert!(
            e.contains("queue=disk") && e.contains("scheduler, device or both"),
            "{e}"
        );
        let e = placement_by_name("shortestqueue:depth=3", 4).unwrap_err();
        assert!(e.contains("depth=3") && e.contains("queue=VALUE"), "{e}");
        assert!(placement_by_name("shortestqueue:queue=device", 4).is_ok());
    }

    #[test]
    fn a_restart_keeps_the_rotation() {
        let mut a = ShortestQueue::new(5, QueueKind::Both).unwrap();
        a.place(&req(2, 5), &PlacementContext::UNKNOWN).unwrap();
        let mut b = ShortestQueue::new(5, QueueKind::Both).unwrap();
        b.restore(a.state());
        assert_eq!(
            ids(a.place(&req(1, 5), &PlacementContext::UNKNOWN).unwrap()),
            ids(b.place(&req(1, 5), &PlacementContext::UNKNOWN).unwrap())
        );
    }
}
