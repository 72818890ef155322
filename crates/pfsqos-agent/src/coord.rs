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
//!              -> writes of domain i -> ControllerRates[i] -> reply to agent i
//! ```

use std::collections::BTreeMap;

use pfsqos_core::control::{Controller, DomainId, JobMeta, Observation};
use pfsqos_core::model::JobId;
use pfsqos_wire::coord::{AgentReport, CoordReply, DomainReport, WireRate};

use crate::agent::ControllerRates;

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
}

impl Coordinator {
    /// `agents`: the allow-list, in a fixed order that numbers the domains.
    pub fn new(
        controller: Box<dyn Controller>,
        agents: Vec<String>,
        period_ns: u64,
        report_fresh_ns: u64,
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
        let domain = self
            .domain_of(&report.agent)
            .ok_or_else(|| format!("agent `{}` not allowed", report.agent.escape_debug()))?;
        let valid = report.validate(domain).map_err(|e| e.to_string())?;
        self.reports[domain.0 as usize] = Some((now_ns, valid));
        Ok(self.reply(domain))
    }

    /// The reply for `domain`: its rates after the last round.
    pub fn reply(&self, domain: DomainId) -> CoordReply {
        CoordReply {
            round: self.round,
            rates: self.decided[domain.0 as usize]
                .rates()
                .into_iter()
                .map(|(job, rate)| WireRate {
                    job: job.as_str().to_string(),
                    rate_rpcs_per_s: rate.clamp(1, pfsqos_wire::coord::REPLY_RATE_RPCS_PER_S_MAX),
                })
                .collect(),
        }
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
        self.round += 1;
        Some(obs)
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
}
