//! The MDS's placement call, once: every create in every driver (the simulator's file set-up,
//! the fluid engine's, the live `mds`) asks a [`Placer`] for the new file's layout, and the
//! placer asks its [`Placement`] policy. The policy's state (round robin's cursor) is saved and
//! restored through [`Placer::state`] / [`Placer::restore`], so a restarted MDS continues the
//! rotation where it stopped.

use pfsqos_core::control::Observation;
use pfsqos_core::model::{JobId, StripeLayout};
use pfsqos_core::place::{
    placement_by_name, Placement, PlacementContext, PlacementError, PlacementRequest,
    PredictedFile, ServerStats, StatsError,
};

/// The MDS's placer: the file system's OST count and the placement policy. Cloning it gives a
/// placer to try a create with, kept only if the create commits (the live MDS's transaction).
#[derive(Debug)]
pub struct Placer {
    ost_count: u32,
    policy: Box<dyn Placement>,
    /// Files placed since this placer was made (for assertions and statistics).
    creates: u64,
}

impl Clone for Placer {
    fn clone(&self) -> Self {
        Placer {
            ost_count: self.ost_count,
            policy: self.policy.clone_box(),
            creates: self.creates,
        }
    }
}

impl Placer {
    /// Lustre's default allocator (round robin) over `ost_count` OSTs.
    pub fn round_robin(ost_count: u32) -> Placer {
        Placer::by_name("roundrobin", ost_count).expect("round robin is a registry row")
    }

    /// The placement policy `name` of the registry (`pfsqos_core::place::PLACER_ROWS`).
    pub fn by_name(name: &str, ost_count: u32) -> Result<Placer, String> {
        Ok(Placer {
            ost_count,
            policy: placement_by_name(name, ost_count)?,
            creates: 0,
        })
    }

    /// The servers' load over the last period, for load-aware policies.
    pub fn observe(&mut self, observation: &Observation) {
        self.policy.observe(observation);
    }

    /// A statistics snapshot of the servers' space and load (iez's 60 s statistics); a
    /// policy that uses it refuses one it cannot use and keeps the previous.
    pub fn observe_servers(&mut self, stats: &ServerStats) -> Result<(), StatsError> {
        self.policy.observe_servers(stats)
    }

    /// `job`'s next files in creation order, predicted from its earlier run (iez's
    /// interaction database); returns how many the policy holds.
    pub fn set_predictions(&mut self, job: JobId, files: &[PredictedFile]) -> usize {
        self.policy.set_predictions(job, files)
    }

    /// Why the last create did not follow the policy's plan (`None`: it did, or it has none).
    pub fn last_fallback(&self) -> Option<String> {
        self.policy.last_fallback()
    }

    pub fn ost_count(&self) -> u32 {
        self.ost_count
    }

    /// The layout of a new file created with nothing known of its creator (see
    /// [`Placer::create_for`]).
    pub fn create(
        &mut self,
        stripe_count: i32,
        stripe_size_bytes: u64,
        start_ost: Option<u32>,
    ) -> Result<StripeLayout, PlacementError> {
        self.create_for(
            &PlacementContext::UNKNOWN,
            stripe_count,
            stripe_size_bytes,
            start_ost,
        )
    }

    /// The layout of a new file created by `context`: `stripe_count` stripes (or all OSTs for
    /// [`pfsqos_core::place::STRIPE_COUNT_ALL`]) of `stripe_size_bytes`, starting at
    /// `start_ost` if given.
    pub fn create_for(
        &mut self,
        context: &PlacementContext,
        stripe_count: i32,
        stripe_size_bytes: u64,
        start_ost: Option<u32>,
    ) -> Result<StripeLayout, PlacementError> {
        let request = PlacementRequest {
            stripe_count,
            stripe_size_bytes,
            ost_count: self.ost_count,
            start_ost,
        };
        let layout = self.policy.place(&request, context)?;
        // What every placement must give: the stripes asked for, each on an existing OST,
        // no OST twice.
        assert_eq!(
            layout.osts.len() as u32,
            request.resolved_stripe_count()?,
            "a placement returned another stripe count than asked"
        );
        assert!(layout.osts.iter().all(|o| o.0 < self.ost_count));
        debug_assert!({
            let mut seen = layout.osts.clone();
            seen.sort();
            seen.windows(2).all(|w| w[0] != w[1])
        });
        self.creates += 1;
        Ok(layout)
    }

    /// The policy's state to persist, the whole [`Placement::state`] word (round robin: its
    /// cursor). The live MDS stores it in a 64-bit column.
    pub fn state(&self) -> u64 {
        self.policy.state()
    }

    /// Continues from a persisted state.
    pub fn restore(&mut self, state: u64) {
        self.policy.restore(state);
    }

    pub fn creates(&self) -> u64 {
        self.creates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::model::OstId;

    #[test]
    fn creates_rotate_and_restore_continues_the_rotation() {
        let mut p = Placer::round_robin(4);
        let osts = |l: StripeLayout| l.osts.iter().map(|o| o.0).collect::<Vec<_>>();
        assert_eq!(osts(p.create(2, 1 << 20, None).unwrap()), vec![0, 1]);
        assert_eq!(osts(p.create(3, 1 << 20, None).unwrap()), vec![2, 3, 0]);
        // An explicit start leaves the rotation alone.
        assert_eq!(osts(p.create(1, 1 << 20, Some(3)).unwrap()), vec![3]);
        let saved = p.state();
        let mut q = Placer::round_robin(4);
        q.restore(saved);
        assert_eq!(q.create(1, 1 << 20, None).unwrap().osts, vec![OstId(1)]);
        assert_eq!(p.create(1, 1 << 20, None).unwrap().osts, vec![OstId(1)]);
        assert!(p.create(5, 1 << 20, None).is_err());
        assert_eq!(p.creates(), 4);
    }
}
