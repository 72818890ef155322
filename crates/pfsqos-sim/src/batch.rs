//! A batch scheduler: first come, first served with EASY backfilling, over a pool of identical
//! nodes (GIFT §4: "scheduled on the system using an FCFS strategy with easy-backfilling").
//!
//! Pure: no clock, time is an argument. The driver calls [`Batch::submit`] when a job arrives,
//! [`Batch::finish`] when one ends, and [`Batch::schedule`] after either; `schedule` returns
//! the jobs to start now.
//!
//! EASY (Lifka's Argonne scheduler, as in Mu'alem and Feitelson's description):
//!
//! 1. Start jobs from the head of the queue, in arrival order, while the head fits.
//! 2. If the head does not fit, give it a **reservation**: the earliest time enough nodes are
//!    free, assuming every running job ends at its estimated end (`start + walltime`, or now if
//!    that is already past); `extra` = nodes free at that time beyond what the head needs.
//! 3. Any later job may start now (backfill) if it fits in the free nodes and either ends by
//!    the reservation (`now + walltime ≤ shadow`) or uses only `extra` nodes (which it then
//!    takes from `extra`).
//!
//! So a backfilled job never delays the head's reservation as long as jobs end by their
//! walltime. Jobs that overrun are not killed here (the simulated applications always finish);
//! reservations are recomputed at every pass, with overrunning jobs expected to end now.

use std::collections::VecDeque;

/// One job as the scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchJob {
    pub id: u32,
    pub nodes: u32,
    pub submit_ns: u64,
    /// Requested walltime (the user's estimate of the run time).
    pub walltime_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct Running {
    id: u32,
    nodes: u32,
    est_end_ns: u64,
}

/// The head job's reservation from the last pass that could not start it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub id: u32,
    pub shadow_ns: u64,
    pub extra_nodes: u32,
}

/// FCFS + EASY backfilling over `pool_nodes` nodes.
#[derive(Clone, Debug)]
pub struct Batch {
    pool_nodes: u32,
    free_nodes: u32,
    queue: VecDeque<BatchJob>,
    running: Vec<Running>,
    reservation: Option<Reservation>,
}

impl Batch {
    pub fn new(pool_nodes: u32) -> Batch {
        Batch {
            pool_nodes,
            free_nodes: pool_nodes,
            queue: VecDeque::new(),
            running: Vec::new(),
            reservation: None,
        }
    }

    pub fn free_nodes(&self) -> u32 {
        self.free_nodes
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// The reservation the last [`Batch::schedule`] gave the blocked head, if any.
    pub fn reservation(&self) -> Option<Reservation> {
        self.reservation
    }

    /// Queues a job. Jobs must be submitted in arrival order.
    ///
    /// # Panics
    /// If the job needs more nodes than the pool has (it could never start).
    pub fn submit(&mut self, job: BatchJob) {
        assert!(
            job.nodes >= 1 && job.nodes <= self.pool_nodes,
            "job {} needs {} nodes; the pool has {}",
            job.id,
            job.nodes,
            self.pool_nodes
        );
        self.queue.push_back(job);
    }

    /// A running job ended: its nodes are free again. Unknown ids are ignored.
    pub fn finish(&mut self, id: u32) {
        if let Some(k) = self.running.iter().position(|r| r.id == id) {
            let r = self.running.swap_remove(k);
            self.free_nodes += r.nodes;
        }
    }

    /// The jobs to start at `now_ns`, in start order.
    pub fn schedule(&mut self, now_ns: u64) -> Vec<BatchJob> {
        let mut started = Vec::new();
        // 1. FCFS from the head.
        while let Some(head) = self.queue.front() {
            if head.nodes > self.free_nodes {
                break;
            }
            let job = self.queue.pop_front().expect("non-empty");
            self.start(job, now_ns);
            started.push(job);
        }
        self.reservation = None;
        let Some(&head) = self.queue.front() else {
            return started;
        };
        // 2. The head's reservation: walk running jobs by estimated end.
        let mut ends: Vec<(u64, u32, u32)> = self
            .running
            .iter()
            .map(|r| (r.est_end_ns.max(now_ns), r.id, r.nodes))
            .collect();
        ends.sort_unstable();
        let mut avail = self.free_nodes;
        let mut shadow_ns = now_ns;
        for &(end, _, nodes) in &ends {
            if avail >= head.nodes {
                break;
            }
            avail += nodes;
            shadow_ns = end;
        }
        debug_assert!(avail >= head.nodes, "the pool can hold the head");
        let mut extra = avail - head.nodes;
        self.reservation = Some(Reservation {
            id: head.id,
            shadow_ns,
            extra_nodes: extra,
        });
        // 3. Backfill later jobs, in queue order.
        let mut k = 1;
        while k < self.queue.len() {
            let job = self.queue[k];
            let fits = job.nodes <= self.free_nodes;
            let ends_in_time = now_ns.saturating_add(job.walltime_ns) <= shadow_ns;
            if fits && (ends_in_time || job.nodes <= extra) {
                if !ends_in_time {
                    extra -= job.nodes;
                }
                self.queue.remove(k);
                self.start(job, now_ns);
                started.push(job);
            } else {
                k += 1;
            }
        }
        if let Some(r) = &mut self.reservation {
            r.extra_nodes = extra;
        }
        started
    }

    fn start(&mut self, job: BatchJob, now_ns: u64) {
        self.free_nodes -= job.nodes;
        self.running.push(Running {
            id: job.id,
            nodes: job.nodes,
            est_end_ns: now_ns.saturating_add(job.walltime_ns),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn job(id: u32, nodes: u32, submit_ns: u64, walltime_ns: u64) -> BatchJob {
        BatchJob {
            id,
            nodes,
            submit_ns,
            walltime_ns,
        }
    }

    /// Runs `jobs` (arrival order) to completion, each running exactly `run_ns[id]`; returns
    /// start times and, per job, the earliest reservation it was given as the blocked head.
    fn simulate(pool: u32, jobs: &[BatchJob], run_ns: &[u64]) -> (Vec<u64>, Vec<Option<u64>>) {
        let mut b = Batch::new(pool);
        let mut start = vec![u64::MAX; jobs.len()];
        let mut promised: Vec<Option<u64>> = vec![None; jobs.len()];
        let mut ends: Vec<(u64, u32)> = Vec::new();
        let mut next = 0;
        loop {
            // Next event: an arrival or an end.
            let t_arr = jobs.get(next).map(|j| j.submit_ns);
            let t_end = ends.iter().map(|&(t, _)| t).min();
            let now = match (t_arr, t_end) {
                (None, None) => break,
                (Some(a), None) => a,
                (None, Some(e)) => e,
                (Some(a), Some(e)) => a.min(e),
            };
            ends.retain(|&(t, id)| {
                if t == now {
                    b.finish(id);
                    false
                } else {
                    true
                }
            });
            while next < jobs.len() && jobs[next].submit_ns == now {
                b.submit(jobs[next]);
                next += 1;
            }
            for j in b.schedule(now) {
                start[j.id as usize] = now;
                ends.push((now + run_ns[j.id as usize], j.id));
            }
            if let Some(r) = b.reservation() {
                let p = &mut promised[r.id as usize];
                *p = Some(p.map_or(r.shadow_ns, |old| old.min(r.shadow_ns)));
            }
        }
        (start, promised)
    }

    #[test]
    fn fcfs_then_backfill_a_short_job_into_the_hole() {
        // Pool 4. j0: 3 nodes for 100. j1 needs 4 (waits for j0: reservation at 100).
        // j2: 1 node, walltime 50: ends before 100, so it backfills at once.
        // j3: 1 node, walltime 500: would end after 100 and extra = 0, so it waits.
        let jobs = [
            job(0, 3, 0, 100),
            job(1, 4, 0, 100),
            job(2, 1, 0, 50),
            job(3, 1, 0, 500),
        ];
        let mut b = Batch::new(4);
        for j in jobs {
            b.submit(j);
        }
        let ids: Vec<u32> = b.schedule(0).iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![0, 2]);
        assert_eq!(
            b.reservation(),
            Some(Reservation {
                id: 1,
                shadow_ns: 100,
                extra_nodes: 0
            })
        );
        b.finish(2);
        // j2 ended early: j3 would still run past the shadow time, and extra is 0.
        assert!(b.schedule(50).is_empty());
        b.finish(0);
        let ids: Vec<u32> = b.schedule(100).iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![1]);
        b.finish(1);
        let ids: Vec<u32> = b.schedule(200).iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![3]);
        assert_eq!(b.free_nodes(), 3);
    }

    #[test]
    fn extra_nodes_allow_long_backfill() {
        // Pool 8. j0: 4 nodes until 100. Head j1 needs 6: reservation at 100 with 8 - 6 = 2
        // extra. j2 (2 nodes, long) fits in the extra nodes and starts; j3 (2 nodes, long)
        // finds no extra left.
        let mut b = Batch::new(8);
        for j in [
            job(0, 4, 0, 100),
            job(1, 6, 0, 100),
            job(2, 2, 0, 1000),
            job(3, 2, 0, 1000),
        ] {
            b.submit(j);
        }
        let ids: Vec<u32> = b.schedule(0).iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![0, 2]);
        assert_eq!(b.reservation().unwrap().extra_nodes, 0);
        assert_eq!(b.queued(), 2);
        assert_eq!(b.running(), 2);
    }

    proptest! {
        /// With run times at most the walltimes, a job never starts later than the first
        /// reservation it was given as the head, and the schedule never oversubscribes.
        #[test]
        fn backfilling_never_delays_the_head(
            spec in prop::collection::vec((1u32..=8, 0u64..50, 1u64..200, 0u64..100), 1..40),
        ) {
            let pool = 8;
            let mut t = 0;
            let mut jobs = Vec::new();
            let mut run = Vec::new();
            for (i, &(nodes, gap, wall, frac)) in spec.iter().enumerate() {
                t += gap;
                jobs.push(job(i as u32, nodes, t, wall));
                // Actual run time between 1 and the walltime.
                run.push((wall * frac / 100).max(1));
            }
            let (start, promised) = simulate(pool, &jobs, &run);
            for i in 0..jobs.len() {
                prop_assert!(start[i] != u64::MAX, "job {} never started", i);
                prop_assert!(start[i] >= jobs[i].submit_ns);
                if let Some(p) = promised[i] {
                    prop_assert!(start[i] <= p, "job {} started at {} after its reservation {}", i, start[i], p);
                }
            }
            // Never more nodes in use than the pool.
            let mut edges: Vec<(u64, i64)> = Vec::new();
            for i in 0..jobs.len() {
                edges.push((start[i], jobs[i].nodes as i64));
                edges.push((start[i] + run[i], -(jobs[i].nodes as i64)));
            }
            edges.sort_by_key(|&(t, d)| (t, d));
            let mut used = 0i64;
            for (_, d) in edges {
                used += d;
                prop_assert!(used <= pool as i64);
            }
        }
    }
}
