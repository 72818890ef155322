//! Messages between a Lustre agent (`pfsqos agent` with a coordinator) and `pfsqos
//! coordinator`, over the same authenticated framing as every other role ([`crate::conn`]:
//! the agent connects with [`crate::protocol::Role::Lctl`], an administrator's tool that
//! reads and writes parameters, which is what an agent is).
//!
//! ```text
//!  agent -- handshake (cluster key) -------------------------------> coordinator
//!  agent -- AgentReport{agent name, its OSS's Observation} --------> (stored for the round)
//!  agent <-- CoordReply{rate per job on its OSS} ------------------- (last round's decision)
//! ```
//!
//! Every field is bounded and validated on decode ([`AgentReport::validate`],
//! [`CoordReply::validate`]): an agent's name, its jobs and targets, the rates. The core's
//! [`Observation`] has no wire form of its own (the core stays free of serialization), so
//! these types mirror it field by field and convert both ways.

use pfsqos_core::control::byte_limits::LimitTarget;
use pfsqos_core::control::{
    DomainId, DomainObservation, JobMeta, JobTargetStats, Observation, TargetObservation,
    JOB_WEIGHT_MAX,
};
use pfsqos_core::model::{JobId, OstId};
use serde::{Deserialize, Serialize};

use crate::protocol::ProtocolError;

/// Longest agent name (an OSS host name).
pub const AGENT_NAME_LEN_MAX: usize = 64;
/// Most targets (OSTs) one agent reports.
pub const REPORT_TARGETS_MAX: usize = 256;
/// Most jobs one report names, in its job list and over all its targets' job lists. At 10,000
/// jobs on 16 OSTs a report is about 3 MB of postcard, inside one frame.
pub const REPORT_JOBS_MAX: usize = 200_000;
/// Most rates in one reply (the agent caps its own rules again with `rules_max`).
pub const REPLY_RATES_MAX: usize = 200_000;
/// Highest rate a reply may carry: Lustre's TBF rates are 32-bit.
pub const REPLY_RATE_RPCS_PER_S_MAX: u64 = u32::MAX as u64;
/// Most first-sight shares in one reply: one per user or group limit of the coordinator
/// (its `[[limits]]` hold at most 4096 entries, `pfsqos_agent::config::ENTRIES_MAX`).
pub const REPLY_FIRST_SIGHT_MAX: usize = 4096;
/// Highest first-sight share a reply may carry, bytes/s: an administrator limit's bound
/// (`[[limits]] bytes_per_s` is at most 2^50).
pub const REPLY_FIRST_SIGHT_BYTES_PER_S_MAX: u64 = 1 << 50;

/// One job on one target in the period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireJobStats {
    pub job: String,
    pub rpcs_arrived: u64,
    pub rpcs_served: u64,
    pub bytes_served: u64,
}

/// One target (OST) in the period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireTarget {
    pub ost: u32,
    pub queue_len_rpcs: u64,
    pub device_queue_rpcs: u64,
    pub device_time_in_queue_ns: u64,
    pub capacity_rpcs_per_s: u64,
    pub jobs: Vec<WireJobStats>,
}

/// A job the agent knows: its node count and weight.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireJobMeta {
    pub job: String,
    pub node_count: u32,
    pub weight: u32,
}

/// What an agent sends every period: its OSS's observation (one domain).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentReport {
    pub agent: String,
    pub now_ns: u64,
    pub period_ns: u64,
    pub targets: Vec<WireTarget>,
    pub jobs: Vec<WireJobMeta>,
}

/// One job's OSS-wide rate as the coordinator's controller decided it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRate {
    pub job: String,
    pub rate_rpcs_per_s: u64,
}

/// Who a first-sight share is for: a user's or a group's file-system-wide limit (a job's
/// own limit needs none: the coordinator sends every OSS a rate for a limited job, seen or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum WireLimitTarget {
    User(u32),
    Group(u32),
}

/// A user's or group's file-system-wide limit as it applies on the agent's OSS to a job of
/// theirs the coordinator has not seen yet: the limit's share for one more job
/// (`byte_limits::first_sight_shares_bytes_per_s`) split over the OSSs
/// (`byte_limits::split_over_osss`). The agent turns it into its first-sight rule for that
/// user or group (`jobid={*.<id>}`, built from the id by the agent, never from reply text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFirstSight {
    pub target: WireLimitTarget,
    pub bytes_per_s: u64,
}

/// What the coordinator answers: the rate of each job its controller holds a rule for on the
/// agent's OSS after its last round (the whole set, not a change, so a lost reply loses
/// nothing); `round` is 0 until it has decided once, and then the agent keeps what it has.
/// `first_sight`: the share of each user or group limit for a job not seen yet, on this OSS
/// (sorted by target, unique).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoordReply {
    pub round: u64,
    pub rates: Vec<WireRate>,
    pub first_sight: Vec<WireFirstSight>,
}

/// A validated [`CoordReply`]: rates per job (RPC/s on the OSS) and first-sight shares per
/// user or group (bytes/s on the OSS).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidReply {
    pub rates: std::collections::BTreeMap<JobId, u64>,
    pub first_sight: std::collections::BTreeMap<LimitTarget, u64>,
}

fn invalid(what: impl Into<String>) -> ProtocolError {
    ProtocolError::Invalid(what.into())
}

fn job_id(text: &str) -> Result<JobId, ProtocolError> {
    JobId::new(text).map_err(|e| invalid(format!("job id: {e}")))
}

/// Whether `name` may name an agent: 1..=64 bytes of `[A-Za-z0-9._-]` (it reaches logs and
/// the coordinator's allow-list, never rule text).
pub fn valid_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= AGENT_NAME_LEN_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl AgentReport {
    /// The report of `agent` for its one-domain observation (the agent's domain is its own).
    pub fn from_observation(agent: &str, obs: &Observation) -> AgentReport {
        assert!(obs.domains.len() <= 1, "an agent observes one OSS");
        let targets = obs
            .domains
            .iter()
            .flat_map(|d| d.targets.iter())
            .map(|t| WireTarget {
                ost: t.ost.0,
                queue_len_rpcs: t.queue_len_rpcs,
                device_queue_rpcs: t.device_queue_rpcs,
                device_time_in_queue_ns: t.device_time_in_queue_ns,
                capacity_rpcs_per_s: t.capacity_rpcs_per_s,
                jobs: t
                    .jobs
                    .iter()
                    .map(|j| WireJobStats {
                        job: j.job.as_str().to_string(),
                        rpcs_arrived: j.rpcs_arrived,
                        rpcs_served: j.rpcs_served,
                        bytes_served: j.bytes_served,
                    })
                    .collect(),
            })
            .collect();
        AgentReport {
            agent: agent.to_string(),
            now_ns: obs.now_ns,
            period_ns: obs.period_ns,
            targets,
            jobs: obs
                .jobs
                .iter()
                .map(|m| WireJobMeta {
                    job: m.job.as_str().to_string(),
                    node_count: m.node_count,
                    weight: m.weight,
                })
                .collect(),
        }
    }

    /// Checks every field and rebuilds the observation as domain `domain`: targets and jobs
    /// sorted and unique, job ids valid, weights in range, counts bounded.
    pub fn validate(&self, domain: DomainId) -> Result<DomainReport, ProtocolError> {
        if !valid_agent_name(&self.agent) {
            return Err(invalid("agent name"));
        }
        if self.targets.len() > REPORT_TARGETS_MAX {
            return Err(invalid("too many targets"));
        }
        let listed: usize = self.targets.iter().map(|t| t.jobs.len()).sum();
        if self.jobs.len() > REPORT_JOBS_MAX || listed > REPORT_JOBS_MAX {
            return Err(invalid("too many jobs"));
        }
        if self.period_ns == 0 {
            return Err(invalid("period of 0 ns"));
        }
        let mut targets = Vec::with_capacity(self.targets.len());
        for t in &self.targets {
            if targets
                .last()
                .is_some_and(|p: &TargetObservation| p.ost.0 >= t.ost)
            {
                return Err(invalid("targets not sorted and unique"));
            }
            let mut jobs: Vec<JobTargetStats> = Vec::with_capacity(t.jobs.len());
            for j in &t.jobs {
                let job = job_id(&j.job)?;
                if jobs.last().is_some_and(|p| p.job >= job) {
                    return Err(invalid("target jobs not sorted and unique"));
                }
                jobs.push(JobTargetStats {
                    job,
                    rpcs_arrived: j.rpcs_arrived,
                    rpcs_served: j.rpcs_served,
                    bytes_served: j.bytes_served,
                });
            }
            targets.push(TargetObservation {
                ost: OstId(t.ost),
                queue_len_rpcs: t.queue_len_rpcs,
                device_queue_rpcs: t.device_queue_rpcs,
                device_time_in_queue_ns: t.device_time_in_queue_ns,
                capacity_rpcs_per_s: t.capacity_rpcs_per_s,
                jobs,
            });
        }
        let mut jobs: Vec<JobMeta> = Vec::with_capacity(self.jobs.len());
        for m in &self.jobs {
            let job = job_id(&m.job)?;
            if jobs.last().is_some_and(|p| p.job >= job) {
                return Err(invalid("jobs not sorted and unique"));
            }
            if m.node_count == 0 || !(1..=JOB_WEIGHT_MAX).contains(&m.weight) {
                return Err(invalid("job node count or weight out of range"));
            }
            jobs.push(JobMeta {
                job,
                node_count: m.node_count,
                weight: m.weight,
            });
        }
        Ok(DomainReport {
            now_ns: self.now_ns,
            period_ns: self.period_ns,
            domain: DomainObservation { domain, targets },
            jobs,
        })
    }
}

/// A validated report: one domain of the coordinator's observation and the jobs it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainReport {
    pub now_ns: u64,
    pub period_ns: u64,
    pub domain: DomainObservation,
    pub jobs: Vec<JobMeta>,
}

impl CoordReply {
    /// Checks the reply: bounded, job ids valid and unique, rates in 1..=2^32-1; first-sight
    /// shares sorted by target and unique, in 1..=2^50 bytes/s.
    pub fn validate(&self) -> Result<ValidReply, ProtocolError> {
        if self.rates.len() > REPLY_RATES_MAX {
            return Err(invalid("too many rates"));
        }
        if self.first_sight.len() > REPLY_FIRST_SIGHT_MAX {
            return Err(invalid("too many first-sight shares"));
        }
        let mut out = ValidReply::default();
        for r in &self.rates {
            let job = job_id(&r.job)?;
            if !(1..=REPLY_RATE_RPCS_PER_S_MAX).contains(&r.rate_rpcs_per_s) {
                return Err(invalid("rate out of range"));
            }
            if out.rates.insert(job, r.rate_rpcs_per_s).is_some() {
                return Err(invalid("job named twice"));
            }
        }
        let mut last: Option<WireLimitTarget> = None;
        for f in &self.first_sight {
            if last.is_some_and(|l| l >= f.target) {
                return Err(invalid("first-sight shares not sorted and unique"));
            }
            last = Some(f.target);
            if !(1..=REPLY_FIRST_SIGHT_BYTES_PER_S_MAX).contains(&f.bytes_per_s) {
                return Err(invalid("first-sight share out of range"));
            }
            let target = match f.target {
                WireLimitTarget::User(u) => LimitTarget::User(u),
                WireLimitTarget::Group(g) => LimitTarget::Group(g),
            };
            out.first_sight.insert(target, f.bytes_per_s);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{decode, encode};

    fn observation() -> Observation {
        let job = |s: &str| JobId::new(s).unwrap();
        Observation {
            now_ns: 2_000_000_000,
            period_ns: 1_000_000_000,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: vec![TargetObservation {
                    ost: OstId(3),
                    queue_len_rpcs: 1,
                    device_queue_rpcs: 2,
                    device_time_in_queue_ns: 3,
                    capacity_rpcs_per_s: 1000,
                    jobs: vec![JobTargetStats {
                        job: job("a.1"),
                        rpcs_arrived: 10,
                        rpcs_served: 9,
                        bytes_served: 9 << 20,
                    }],
                }],
            }],
            jobs: vec![
                JobMeta {
                    job: job("a.1"),
                    node_count: 4,
                    weight: 4,
                },
                JobMeta {
                    job: job("b.2"),
                    node_count: 1,
                    weight: 1,
                },
            ],
            clients: vec![],
        }
    }

    /// Observation -> report -> postcard -> report -> validated domain is lossless.
    #[test]
    fn a_report_round_trips_to_the_same_observation() {
        let obs = observation();
        let report = AgentReport::from_observation("oss1", &obs);
        let back: AgentReport = decode(&encode(&report)).unwrap();
        let d = back.validate(DomainId(7)).unwrap();
        assert_eq!(d.domain.domain, DomainId(7));
        assert_eq!(d.domain.targets, obs.domains[0].targets);
        assert_eq!(d.jobs, obs.jobs);
        assert_eq!((d.now_ns, d.period_ns), (obs.now_ns, obs.period_ns));
    }

    #[test]
    fn malformed_reports_are_refused() {
        let good = AgentReport::from_observation("oss1", &observation());
        let mut bad = Vec::new();
        for name in ["", "a b", "x;rm", &"n".repeat(65)] {
            let mut r = good.clone();
            r.agent = name.to_string();
            bad.push(r);
        }
        let mut r = good.clone();
        r.jobs[0].job = "a\u{7}".into();
        bad.push(r);
        let mut r = good.clone();
        r.jobs.swap(0, 1);
        bad.push(r);
        let mut r = good.clone();
        r.jobs[0].weight = 0;
        bad.push(r);
        let mut r = good.clone();
        r.targets.push(r.targets[0].clone());
        bad.push(r);
        let mut r = good.clone();
        r.period_ns = 0;
        bad.push(r);
        for r in bad {
            assert!(r.validate(DomainId(0)).is_err(), "{r:?}");
        }
        for (job, rate) in [
            ("a\nb", 5),
            (&"x".repeat(40)[..], 5),
            ("a", 0),
            ("a", 1 << 32),
        ] {
            let reply = CoordReply {
                round: 1,
                rates: vec![WireRate {
                    job: job.into(),
                    rate_rpcs_per_s: rate,
                }],
                first_sight: vec![],
            };
            assert!(reply.validate().is_err(), "{reply:?}");
        }
    }

    fn share(target: WireLimitTarget, bytes_per_s: u64) -> WireFirstSight {
        WireFirstSight {
            target,
            bytes_per_s,
        }
    }

    /// First-sight shares survive postcard and validation as (user or group, bytes/s).
    #[test]
    fn first_sight_shares_round_trip() {
        let reply = CoordReply {
            round: 3,
            rates: vec![WireRate {
                job: "dd.500".into(),
                rate_rpcs_per_s: 7,
            }],
            first_sight: vec![
                share(WireLimitTarget::User(500), 50 << 20),
                share(WireLimitTarget::User(600), 1),
                share(WireLimitTarget::Group(500), 1 << 50),
            ],
        };
        let back: CoordReply = decode(&encode(&reply)).unwrap();
        let v = back.validate().unwrap();
        assert_eq!(v.rates[&JobId::new("dd.500").unwrap()], 7);
        assert_eq!(
            v.first_sight.into_iter().collect::<Vec<_>>(),
            vec![
                (LimitTarget::User(500), 50 << 20),
                (LimitTarget::User(600), 1),
                (LimitTarget::Group(500), 1 << 50),
            ]
        );
    }

    /// Out of range, repeated, unsorted or too many first-sight shares refuse the reply.
    #[test]
    fn malformed_first_sight_shares_are_refused() {
        let u = WireLimitTarget::User;
        let bad = [
            vec![share(u(1), 0)],
            vec![share(u(1), (1 << 50) + 1)],
            vec![share(u(1), 5), share(u(1), 6)],
            vec![share(u(2), 5), share(u(1), 6)],
            vec![share(WireLimitTarget::Group(1), 5), share(u(1), 6)],
            (0..=REPLY_FIRST_SIGHT_MAX as u32)
                .map(|i| share(u(i), 5))
                .collect(),
        ];
        for first_sight in bad {
            let reply = CoordReply {
                round: 1,
                rates: vec![],
                first_sight,
            };
            assert!(
                reply.validate().is_err(),
                "{:?}",
                &reply.first_sight[..2.min(reply.first_sight.len())]
            );
        }
        let most = CoordReply {
            round: 1,
            rates: vec![],
            first_sight: (0..REPLY_FIRST_SIGHT_MAX as u32)
                .map(|i| share(u(i), 5))
                .collect(),
        };
        assert_eq!(
            most.validate().unwrap().first_sight.len(),
            REPLY_FIRST_SIGHT_MAX
        );
    }
}
