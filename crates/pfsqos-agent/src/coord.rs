//! `pfsqos coordinator`'s decision core: the agents' reports merged into one observation of
//! the whole file system (each OSS one domain), the centralized controller (GIFT and its
//! baselines, PI, ...) run on it once per round through the same [`Controller`] the
//! simulator runs, and its writes split back per OSS as rates per job
//! ([`ControllerRates`], the same reading of rule texts the agent uses for its local
//! controller). Pure: the caller gives the time; the network is in [`crate::coord_net`].
//!
//! ```text
//!  agent i --report--> accept(): validate, store as domain i (allow-list order)
//!  round(now): fresh reports (age <= hold) -> Observation -> setup once, then decide
//!              -> writes of domain i -> ControllerRates[i]
//!              administrator byte limits over the file system -> share per OSS -> RPC/s
//!  reply(i):   min(ControllerRates[i], limit rates of OSS i) -> agent i
//! ```
//!
//! OST identity: an agent numbers its OSTs by their index (a second file system's OST with an
//! index already taken gets an identity of its own, `JobStatsObserver`), below
//! [`OST_ID_LOCAL_LIMIT`]. Two agents may both serve an `OST0000` (two file systems, or
//! emulated OSSs), so the coordinator's view identifies a target by agent and local identity:
//! [`global_ost`]` = agent << 20 | local` (at most 4096 agents: 12 + 20 bits). The controller
//! never sees two targets with one identity; a report with a local identity beyond the limit
//! is refused.
//!
//! Administrator limits (`[[limits]]` in the coordinator's file) hold over the whole file
//! system: a job's limit in bytes/s (its own, or its share of its user's or group's, shared by
//! the jobs that moved data anywhere in the round) is split over every OSS with a fresh report
//! (`byte_limits::split_over_osss`, pfsqos-core), in proportion to what the job moved through
//! each in its last report plus a floor (a tenth of the mean), so the shares add up to the
//! limit, an OSS where the job starts moving data has room to show it, and an OSS whose agent
//! has never seen the job limits it from its first period there. Each share becomes RPC/s at the job's observed RPC size
//! ([`RpcSizeEstimate`], the one bytes-to-RPCs conversion), and the reply carries the smaller
//! of it and the controller's rate. The agent then divides it over its CPU partitions as for
//! any rate, and applies its own per-OSS limits on top (the tightest wins).

use std::collections::BTreeMap;

use pfsqos_core::control::agent::OST_ID_LOCAL_LIMIT;
use pfsqos_core::control::rpc_size::RpcSizeEstimate;
use pfsqos_core::control::{Controller, DomainId, JobMeta, Observation};
use pfsqos_core::model::{JobId, OstId};
use pfsqos_wire::coord::{
    AgentReport, CoordReply, DomainReport, WireFirstSight, WireLimitTarget, WireRate,
};

use pfsqos_core::control::byte_limits::{
    first_sight_shares_bytes_per_s, is_held, limit_shares_bytes_per_s, split_over_osss,
};

use crate::agent::{ControllerRates, Held};
use crate::config::{JobIdLayout, LimitTarget};

/// Bits of a global OST identity that carry the agent's own identity of the OST.
pub const OST_ID_LOCAL_BITS: u32 = 20;
const _: () = assert!(1u32 << OST_ID_LOCAL_BITS == OST_ID_LOCAL_LIMIT);
const _: () = assert!((AGENTS_MAX as u64) << OST_ID_LOCAL_BITS <= 1u64 << 32);

/// The coordinator's identity of the OST an agent (domain `domain`) identifies as `local`:
/// unique across agents, whatever indexes they share. `None` beyond the bounds.
pub fn global_ost(domain: DomainId, local: OstId) -> Option<OstId> {
    if local.0 >= OST_ID_LOCAL_LIMIT || domain.0 as usize >= AGENTS_MAX {
        return None;
    }
    Some(OstId(domain.0 << OST_ID_LOCAL_BITS | local.0))
}

pub use pfsqos_core::control::byte_limits::LIMIT_FLOOR_FRACTION;

/// What the coordinator did so far (its metrics and log).
#[derive(Clone, Debug, Default)]
pub struct CoordStats {
    pub rounds: u64,
    /// Reports taken / refused (off the allow-list, invalid).
    pub reports_accepted: u64,
    pub reports_refused: u64,
    /// Observations the controller refused to decide on (it wrote nothing for them):
    /// [`Controller::rejected_observations`].
    pub rejected_observations: u64,
    pub last_rejection: Option<String>,
    /// OSSs and jobs in the last round's view.
    pub domains: usize,
    pub jobs: usize,
    /// Jobs held at a file-system-wide administrator limit: since when (coordinator time, ns),
    /// the limit, for how long.
    pub held: BTreeMap<JobId, Held>,
    /// Per limited job: bytes/s it moved over the file system in the last round.
    pub limited_observed_bytes_per_s: BTreeMap<JobId, f64>,
}

/// Most agents one coordinator serves (OSSs of one file system).
pub const AGENTS_MAX: usize = 4096;

/// The coordinator's state: allow-listed agents, their latest reports, the controller.
pub struct Coordinator {
    controller: Box<dyn Controller>,
    agents: Vec<String>,
    /// Per agent (domain = index): when its latest report arrived and what it said.
    reports: Vec<Option<(u64, DomainReport)>>,
    /// Per agent: the controller's rates on its OSS after the last round.
    decided: Vec<ControllerRates>,
    /// A report older than this is left out of a round (its OSS is out of the view).
    report_fresh_ns: u64,
    period_ns: u64,
    set_up: bool,
    round: u64,
    /// File-system-wide administrator limits and where uids and gids stand in job ids.
    limits: Vec<(LimitTarget, u64)>,
    layout: JobIdLayout,
    /// Per agent: each limited job's rate (RPC/s) on its OSS after the last round.
    limited: Vec<BTreeMap<JobId, u64>>,
    /// Per agent: each user's or group's first-sight share on its OSS after the last round
    /// (bytes/s; for a job of theirs no agent has reported yet).
    first_sight: Vec<BTreeMap<LimitTarget, u64>>,
    rpc_size: RpcSizeEstimate,
    pub stats: CoordStats,
}

impl Coordinator {
    /// `agents`: the allow-list, in a fixed order that numbers the domains.
    /// `rpc_size_bytes`: the OSSs' `brw_size`, a job's RPC size until it has moved data.
    pub fn new(
        controller: Box<dyn Controller>,
        agents: Vec<String>,
        period_ns: u64,
        report_fresh_ns: u64,
    ) -> Result<Coordinator, String> {
        Coordinator::with_limits(
            controller,
            agents,
            period_ns,
            report_fresh_ns,
            Vec::new(),
            JobIdLayout::parse("%e.%u").expect("the default layout"),
            pfsqos_core::lustre::BRW_SIZE_BYTES_DEFAULT,
        )
    }

    /// [`Coordinator::new`] with file-system-wide administrator limits (validated by
    /// [`crate::config::validate_limits`]) and the OSSs' `brw_size`.
    pub fn with_limits(
        controller: Box<dyn Controller>,
        agents: Vec<String>,
        period_ns: u64,
        report_fresh_ns: u64,
        limits: Vec<(LimitTarget, u64)>,
        layout: JobIdLayout,
        rpc_size_bytes: u64,
    ) -> Result<Coordinator, String> {
        if agents.is_empty() || agents.len() > AGENTS_MAX {
            return Err(format!("1..={AGENTS_MAX} agents, not {}", agents.len()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for a in &agents {
            if !pfsqos_wire::coord::valid_agent_name(a) || !seen.insert(a) {
                return Err(format!(
                    "agent name `{}` invalid or repeated",
                    a.escape_debug()
                ));
            }
        }
        assert!(period_ns > 0 && report_fresh_ns > 0);
        let n = agents.len();
        Ok(Coordinator {
            controller,
            agents,
            reports: vec![None; n],
            decided: vec![ControllerRates::default(); n],
            report_fresh_ns,
            period_ns,
            set_up: false,
            round: 0,
            limits,
            layout,
            limited: vec![BTreeMap::new(); n],
            first_sight: vec![BTreeMap::new(); n],
            rpc_size: RpcSizeEstimate::new(rpc_size_bytes.max(1)),
            stats: CoordStats::default(),
        })
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    pub fn agents(&self) -> &[String] {
        &self.agents
    }

    pub fn round(&self) -> u64 {
        self.round
    }

    /// The domain of an allow-listed agent.
    pub fn domain_of(&self, agent: &str) -> Option<DomainId> {
        self.agents
            .iter()
            .position(|a| a == agent)
            .map(|i| DomainId(i as u32))
    }

    /// Takes an agent's report (received at `now_ns`) and answers with the rates the last
    /// round decided for its OSS. Refuses agents not on the allow-list and invalid reports.
    pub fn accept(&mut self, now_ns: u64, report: &AgentReport) -> Result<CoordReply, String> {
        let result = self.take_report(now_ns, report);
        match &result {
            Ok(_) => self.stats.reports_accepted += 1,
            Err(_) => self.stats.reports_refused += 1,
        }
        result
    }

    fn take_report(&mut self, now_ns: u64, report: &AgentReport) -> Result<CoordReply, String> {
        let domain = self
            .domain_of(&report.agent)
            .ok_or_else(|| format!("agent `{}` not allowed", report.agent.escape_debug()))?;
        let mut valid = report.validate(domain).map_err(|e| e.to_string())?;
        for t in &mut valid.domain.targets {
            // Sorted local identities stay sorted: the agent's part of the identity is fixed.
            t.ost = global_ost(domain, t.ost)
                .ok_or_else(|| format!("OST identity {} beyond {OST_ID_LOCAL_LIMIT}", t.ost.0))?;
        }
        self.reports[domain.0 as usize] = Some((now_ns, valid));
        Ok(self.reply(domain))
    }

    /// The reply for `domain`: its rates and first-sight shares after the last round.
    pub fn reply(&self, domain: DomainId) -> CoordReply {
        CoordReply {
            round: self.round,
            rates: self
                .rates(domain)
                .into_iter()
                .map(|(job, rate)| WireRate {
                    job: job.as_str().to_string(),
                    rate_rpcs_per_s: rate.clamp(1, pfsqos_wire::coord::REPLY_RATE_RPCS_PER_S_MAX),
                })
                .collect(),
            first_sight: self.first_sight_shares(domain).into_iter().collect(),
        }
    }

    /// What `domain` is sent for jobs no agent has reported yet: each user's or group's
    /// first-sight share on its OSS (bytes/s), sorted by target (the map's order; users
    /// before groups, as [`WireLimitTarget`] orders them).
    pub fn first_sight_shares(&self, domain: DomainId) -> Vec<WireFirstSight> {
        self.first_sight[domain.0 as usize]
            .iter()
            .filter_map(|(&target, &bytes_per_s)| {
                let target = match target {
                    LimitTarget::User(u) => WireLimitTarget::User(u),
                    LimitTarget::Group(g) => WireLimitTarget::Group(g),
                    LimitTarget::Job(_) => return None,
                };
                Some(WireFirstSight {
                    target,
                    bytes_per_s: bytes_per_s
                        .clamp(1, pfsqos_wire::coord::REPLY_FIRST_SIGHT_BYTES_PER_S_MAX),
                })
            })
            .take(pfsqos_wire::coord::REPLY_FIRST_SIGHT_MAX)
            .collect()
    }

    /// The rates (RPC/s on its OSS) `domain` is sent: the controller's, lowered by the
    /// file-system-wide limits where they bind (and a rate for a limited job the controller
    /// holds no rule for).
    pub fn rates(&self, domain: DomainId) -> BTreeMap<JobId, u64> {
        let i = domain.0 as usize;
        let mut rates = self.decided[i].rates();
        for (&job, &limit) in &self.limited[i] {
            let e = rates.entry(job).or_insert(limit);
            *e = (*e).min(limit);
        }
        rates
    }

    /// The whole file system as the fresh reports show it at `now_ns`: one domain per agent
    /// that reported within `report_fresh_ns`, the union of their jobs (a job's node count
    /// and weight: the largest any agent gave). `None` when no report is fresh.
    pub fn merged(&self, now_ns: u64) -> Option<Observation> {
        let mut domains = Vec::new();
        let mut jobs: BTreeMap<JobId, JobMeta> = BTreeMap::new();
        for (at, r) in self.reports.iter().flatten() {
            if now_ns.saturating_sub(*at) > self.report_fresh_ns {
                continue;
            }
            domains.push(r.domain.clone());
            for m in &r.jobs {
                let e = jobs.entry(m.job).or_insert_with(|| m.clone());
                e.node_count = e.node_count.max(m.node_count);
                e.weight = e.weight.max(m.weight);
            }
        }
        if domains.is_empty() {
            return None;
        }
        Some(Observation {
            now_ns,
            period_ns: self.period_ns,
            domains,
            jobs: jobs.into_values().collect(),
            clients: Vec::new(),
        })
    }

    /// One round at `now_ns`: the controller's setup on the first view, its decision on
    /// every later one, split per OSS. Returns the observation it decided on (`None`: no
    /// fresh report, nothing decided, every OSS keeps the last rates).
    pub fn run_round(&mut self, now_ns: u64) -> Option<Observation> {
        let obs = self.merged(now_ns)?;
        let decision = if self.set_up {
            self.controller.decide(&obs)
        } else {
            self.set_up = true;
            self.controller.setup(&obs)
        };
        for w in &decision.writes {
            // Writes for an OSS whose agent is known; GIFT addresses domains it observed.
            if let Some(d) = self.decided.get_mut(w.domain.0 as usize) {
                d.absorb([&w.write]);
            }
        }
        self.stats.rejected_observations = self.controller.rejected_observations();
        self.stats.last_rejection = self.controller.last_rejection().map(str::to_string);
        self.rpc_size.observe(&obs);
        self.apply_limits(now_ns, &obs);
        self.round += 1;
        self.stats.rounds = self.round;
        self.stats.domains = obs.domains.len();
        self.stats.jobs = obs.jobs.len();
        Some(obs)
    }

    /// Splits the file-system-wide limits over the OSSs of the fresh reports (see the module
    /// documentation) and notes who is held at a limit.
    fn apply_limits(&mut self, now_ns: u64, obs: &Observation) {
        for l in &mut self.limited {
            l.clear();
        }
        for f in &mut self.first_sight {
            f.clear();
        }
        if self.limits.is_empty() {
            return;
        }
        // Per fresh OSS: each job's bytes/s in its last report.
        let mut per_oss: Vec<(usize, BTreeMap<JobId, f64>)> = Vec::new();
        for (i, r) in self.reports.iter().enumerate() {
            let Some((at, r)) = r else { continue };
            if now_ns.saturating_sub(*at) > self.report_fresh_ns {
                continue;
            }
            let period_s = (r.period_ns as f64 / 1e9).max(1e-3);
            let mut moved: BTreeMap<JobId, f64> = BTreeMap::new();
            for t in &r.domain.targets {
                for s in &t.jobs {
                    *moved.entry(s.job).or_default() += s.bytes_served as f64 / period_s;
                }
            }
            per_oss.push((i, moved));
        }
        let moved_total = |job: &JobId| -> f64 {
            per_oss
                .iter()
                .map(|(_, m)| m.get(job).copied().unwrap_or(0.0))
                .sum()
        };
        let shares = limit_shares_bytes_per_s(
            &self.limits,
            self.layout,
            obs.jobs.iter().map(|m| m.job),
            |j| moved_total(j) > 0.0,
        );
        let mut held_now = BTreeMap::new();
        let mut observed = BTreeMap::new();
        for (&job, &limit) in &shares {
            // Every fresh OSS gets a share, those whose agent has not seen the job too: its
            // first period there is limited (the floor's share) rather than free.
            let moved: Vec<f64> = per_oss
                .iter()
                .map(|(_, m)| m.get(&job).copied().unwrap_or(0.0))
                .collect();
            let total: f64 = moved.iter().sum();
            for ((i, _), share_bytes_per_s) in per_oss.iter().zip(split_over_osss(limit, &moved)) {
                let rate = self.rpc_size.rate_rpcs_per_s(&job, share_bytes_per_s);
                self.limited[*i].insert(job, rate);
            }
            observed.insert(job, total);
            if is_held(total, limit) {
                let since = self.stats.held.get(&job).map_or(now_ns, |h| h.since_ns);
                held_now.insert(
                    job,
                    Held {
                        since_ns: since,
                        limit_bytes_per_s: limit,
                        held_ns: now_ns - since,
                    },
                );
            }
        }
        self.stats.held = held_now;
        self.stats.limited_observed_bytes_per_s = observed;
        // First sight: a job of a limited user or group that no agent has reported yet may
        // start on any OSS, or on several at once (striped), in the same period. Its share
        // of the limit as one more member (the agent's own rule, `limit / (n + 1)`, with the
        // members counted over the whole file system) is split over the fresh OSSs as a job
        // that moved nothing anywhere is split (equal parts), so that all its first-period
        // traffic together stays within that share; from the next round the job is seen and
        // gets its rate like every other.
        let first_sight = first_sight_shares_bytes_per_s(
            &self.limits,
            self.layout,
            obs.jobs.iter().map(|m| m.job),
            |j| moved_total(j) > 0.0,
        );
        let nothing_moved = vec![0.0; per_oss.len()];
        for (target, _pattern, share) in first_sight {
            for ((i, _), part) in per_oss.iter().zip(split_over_osss(share, &nothing_moved)) {
                self.first_sight[*i].insert(target, (part as u64).max(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::control::spec::PolicyChoice;

    #[test]
    fn unknown_agents_and_bad_lists_are_refused() {
        let c = || {
            PolicyChoice::parse("static")
                .unwrap()
                .controller_with(1000, 1 << 20, 0)
        };
        assert!(Coordinator::new(c(), vec![], 1, 1).is_err());
        assert!(Coordinator::new(c(), vec!["a".into(), "a".into()], 1, 1).is_err());
        assert!(Coordinator::new(c(), vec!["a b".into()], 1, 1).is_err());
        let mut k = Coordinator::new(c(), vec!["oss1".into()], 1, 1).unwrap();
        let report = AgentReport {
            agent: "oss2".into(),
            now_ns: 1,
            period_ns: 1,
            targets: vec![],
            jobs: vec![],
        };
        assert!(k.accept(0, &report).is_err());
        assert!(k.merged(0).is_none());
    }

    use pfsqos_core::control::Decision;
    use pfsqos_wire::coord::{WireJobMeta, WireJobStats, WireTarget};

    /// A report of `agent` with one OST (`ost`) on which each job moved `(job, rpcs, bytes)`
    /// in one second.
    fn report(agent: &str, ost: u32, jobs: &[(&str, u64, u64)]) -> AgentReport {
        let mut metas: Vec<WireJobMeta> = jobs
            .iter()
            .map(|&(j, _, _)| WireJobMeta {
                job: j.into(),
                node_count: 1,
                weight: 1,
            })
            .collect();
        metas.sort_by(|a, b| a.job.cmp(&b.job));
        let mut stats: Vec<WireJobStats> = jobs
            .iter()
            .filter(|&&(_, rpcs, _)| rpcs > 0)
            .map(|&(j, rpcs, bytes)| WireJobStats {
                job: j.into(),
                rpcs_arrived: rpcs,
                rpcs_served: rpcs,
                bytes_served: bytes,
            })
            .collect();
        stats.sort_by(|a, b| a.job.cmp(&b.job));
        AgentReport {
            agent: agent.into(),
            now_ns: 0,
            period_ns: 1_000_000_000,
            targets: vec![WireTarget {
                ost,
                queue_len_rpcs: 0,
                device_queue_rpcs: 0,
                device_time_in_queue_ns: 0,
                capacity_rpcs_per_s: 100,
                jobs: stats,
            }],
            jobs: metas,
        }
    }

    fn gift() -> Box<dyn Controller> {
        PolicyChoice::parse("gift:period_ms=1000")
            .unwrap()
            .controller_with(1000, 1 << 20, 0)
    }

    /// Two agents that both serve `OST0000` (two file systems): the coordinator's view holds
    /// two OSTs, and GIFT decides on it rather than refusing an OST listed twice.
    #[test]
    fn two_agents_with_the_same_ost_index_are_two_osts() {
        let mut k = Coordinator::new(
            gift(),
            vec!["a".into(), "b".into()],
            1_000_000_000,
            3_000_000_000,
        )
        .unwrap();
        let mut rates_seen = false;
        for round in 1..=4u64 {
            let now = round * 1_000_000_000;
            let mb = 1u64 << 20;
            k.accept(
                now,
                &report(
                    "a",
                    0,
                    &[("big.1", 300, 300 * mb), ("small.2", 50, 50 * mb)],
                ),
            )
            .unwrap();
            k.accept(
                now,
                &report(
                    "b",
                    0,
                    &[("big.1", 300, 300 * mb), ("other.3", 90, 90 * mb)],
                ),
            )
            .unwrap();
            let view = k.run_round(now).unwrap();
            let osts: Vec<OstId> = view
                .domains
                .iter()
                .flat_map(|d| d.targets.iter().map(|t| t.ost))
                .collect();
            assert_eq!(osts, vec![OstId(0), OstId(1 << 20)]);
            rates_seen |= !k.rates(DomainId(0)).is_empty() && !k.rates(DomainId(1)).is_empty();
        }
        assert_eq!(
            k.stats.rejected_observations, 0,
            "{:?}",
            k.stats.last_rejection
        );
        assert!(rates_seen, "GIFT throttled on neither OSS");
        // A local identity beyond the agent's range is refused, not folded into another.
        let bad = report("a", OST_ID_LOCAL_LIMIT, &[("big.1", 1, 1)]);
        assert!(k.accept(5_000_000_000, &bad).is_err());
        assert_eq!(k.stats.reports_refused, 1);
        assert_eq!(
            global_ost(DomainId(4095), OstId(OST_ID_LOCAL_LIMIT - 1)),
            Some(OstId(u32::MAX))
        );
        assert_eq!(global_ost(DomainId(4096), OstId(0)), None);
    }

    /// A controller that refuses every observation, as GIFT's allocator refuses a bad view.
    struct Refusing(u64);

    impl Controller for Refusing {
        fn name(&self) -> &'static str {
            "refusing"
        }
        fn setup(&mut self, _: &Observation) -> Decision {
            Decision::default()
        }
        fn period_ns(&self) -> Option<u64> {
            Some(1)
        }
        fn decide(&mut self, _: &Observation) -> Decision {
            self.0 += 1;
            Decision::default()
        }
        fn rejected_observations(&self) -> u64 {
            self.0
        }
        fn last_rejection(&self) -> Option<&str> {
            Some("OST0 listed twice")
        }
    }

    /// Refused views are counted and their reason kept (the coordinator's metrics and log).
    #[test]
    fn refused_views_are_counted_with_their_reason() {
        let mut k = Coordinator::new(Box::new(Refusing(0)), vec!["a".into()], 1, 1_000).unwrap();
        for now in 1..=3 {
            k.accept(now, &report("a", 0, &[("j", 1, 4096)])).unwrap();
            k.run_round(now).unwrap();
        }
        // The first view goes to setup, the next two to decide.
        assert_eq!(k.stats.rejected_observations, 2);
        assert_eq!(k.stats.last_rejection.as_deref(), Some("OST0 listed twice"));
        let text = crate::metrics::render_coordinator(k.stats.clone());
        assert!(
            text.contains("pfsqos_coordinator_rejected_observations_total 2"),
            "{text}"
        );
    }

    /// A user's limit over the file system: split over the three OSSs in proportion to what its
    /// job moves through each (plus a floor, the one it never went through included), the
    /// shares add up to the limit in RPC/s at the
    /// job's RPC size, the controller's rate (none under `nobw`) does not lift it, and the
    /// job is held once it moves 90 % of the limit.
    #[test]
    fn a_file_system_wide_limit_is_split_over_the_osss_and_held() {
        let layout = JobIdLayout::parse("%e.%u").unwrap();
        let limit = 100u64 << 20;
        let mut k = Coordinator::with_limits(
            PolicyChoice::parse("nobw")
                .unwrap()
                .controller_with(1000, 1 << 20, 0),
            vec!["a".into(), "b".into(), "c".into()],
            1_000_000_000,
            3_000_000_000,
            vec![(LimitTarget::User(500), limit)],
            layout,
            1 << 20,
        )
        .unwrap();
        let mb = 1u64 << 20;
        // 1 MiB RPCs: 75 MiB/s through a, 25 through b; c never saw the job.
        for round in 1..=2u64 {
            let now = round * 1_000_000_000;
            k.accept(now, &report("a", 0, &[("dd.500", 75, 75 * mb)]))
                .unwrap();
            k.accept(
                now,
                &report("b", 1, &[("dd.500", 25, 25 * mb), ("ior.7", 10, 10 * mb)]),
            )
            .unwrap();
            k.accept(now, &report("c", 2, &[("ior.7", 10, 10 * mb)]))
                .unwrap();
            k.run_round(now).unwrap();
        }
        let job = JobId::new("dd.500").unwrap();
        let a = k.rates(DomainId(0))[&job];
        let b = k.rates(DomainId(1))[&job];
        // c never saw the job: it gets the floor's share all the same, so the job's first
        // period there is limited (the first-period gap closed).
        let c = k.rates(DomainId(2))[&job];
        assert!(!k
            .rates(DomainId(1))
            .contains_key(&JobId::new("ior.7").unwrap()));
        // Floor: a tenth of the mean (10/3 MiB/s) on each of the three: a gets 78.3/110, b
        // 28.3/110, c 3.3/110 of 100 MiB/s.
        let floor = 100.0 / 30.0;
        assert_eq!(a, (100.0 * (75.0 + floor) / 110.0) as u64);
        assert_eq!(b, (100.0 * (25.0 + floor) / 110.0) as u64);
        assert_eq!(c, (100.0 * floor / 110.0) as u64);
        assert!(c >= 1);
        assert!(a + b + c <= 100, "the shares hold the limit in aggregate");
        let held = &k.stats.held[&job];
        assert_eq!(held.limit_bytes_per_s, limit);
        assert_eq!(held.held_ns, 1_000_000_000, "held since the first round");
        assert_eq!(
            k.stats.limited_observed_bytes_per_s[&job],
            100.0 * mb as f64
        );
        // Idle: no longer held, shares back to equal floors over the three fresh OSSs.
        k.accept(3_000_000_000, &report("a", 0, &[("dd.500", 0, 0)]))
            .unwrap();
        k.accept(3_000_000_000, &report("b", 1, &[("dd.500", 0, 0)]))
            .unwrap();
        k.run_round(3_000_000_000).unwrap();
        assert!(k.stats.held.is_empty());
        for d in 0..3 {
            assert_eq!(k.rates(DomainId(d))[&job], 33);
        }
    }

    /// First sight over the file system: a user's limit shared by its 2 moving jobs gives a
    /// job not seen yet `limit / 3`, split equally over the 3 fresh OSSs; a group's limit
    /// likewise; a job's own limit needs none (its rate goes to every OSS); a layout whose uid
    /// is not the last field cannot be written as a pattern, so nothing is sent; no fresh
    /// OSS, nothing either. The reply carries the shares sorted, users before groups, and
    /// passes the wire's validation.
    #[test]
    fn first_sight_shares_split_the_share_of_one_more_job_over_the_osss() {
        let mb = 1u64 << 20;
        let coordinator = |layout: &str| {
            Coordinator::with_limits(
                PolicyChoice::parse("nobw")
                    .unwrap()
                    .controller_with(1000, 1 << 20, 0),
                vec!["a".into(), "b".into(), "c".into()],
                1_000_000_000,
                3_000_000_000,
                vec![
                    (LimitTarget::Group(20), 60 * mb),
                    (LimitTarget::User(500), 90 * mb),
                    (LimitTarget::Job(JobId::new("x.7").unwrap()), 10 * mb),
                ],
                JobIdLayout::parse(layout).unwrap(),
                1 << 20,
            )
            .unwrap()
        };
        let mut k = coordinator("%e.%u");
        let now = 1_000_000_000;
        k.accept(now, &report("a", 0, &[("dd.500", 75, 75 * mb)]))
            .unwrap();
        k.accept(
            now,
            &report("b", 1, &[("ior.500", 5, 5 * mb), ("x.7", 1, mb)]),
        )
        .unwrap();
        k.accept(now, &report("c", 2, &[("y.600", 1, mb)])).unwrap();
        k.run_round(now).unwrap();
        for d in 0..3 {
            let reply = k.reply(DomainId(d));
            let valid = reply.validate().unwrap();
            // User 500: 2 jobs moving, one more gets 90 / 3 = 30 MiB/s over the file system,
            // 10 on each OSS. Group 20: the default layout `%e.%u` has no gid field, so no
            // pattern and no share; the job limit of x.7 has none either.
            assert_eq!(
                reply.first_sight,
                vec![WireFirstSight {
                    target: WireLimitTarget::User(500),
                    bytes_per_s: 10 * mb,
                }],
                "OSS {d}"
            );
            assert_eq!(valid.first_sight[&LimitTarget::User(500)], 10 * mb);
        }
        // With gid last, the group's limit has a pattern and the user's has none.
        let mut k = coordinator("%e.%u.%g");
        k.accept(now, &report("a", 0, &[("dd.500.20", 75, 75 * mb)]))
            .unwrap();
        k.accept(now, &report("b", 1, &[])).unwrap();
        k.run_round(now).unwrap();
        // Two fresh OSSs: the group's one member moves, one more gets 60 / 2 = 30, 15 each.
        for d in 0..2 {
            assert_eq!(
                k.reply(DomainId(d)).first_sight,
                vec![WireFirstSight {
                    target: WireLimitTarget::Group(20),
                    bytes_per_s: 15 * mb,
                }]
            );
        }
        // c sent nothing fresh: it gets no share this round.
        assert!(k.reply(DomainId(2)).first_sight.is_empty());
        // No fresh report: nothing is decided and the shares stay as they were; a later round
        // with every report stale decides nothing (run_round is None).
        assert!(k.run_round(100_000_000_000).is_none());
    }
}
