//! `Static BW`: one TBF rule per job with a fixed rate proportional to the job's share of all
//! compute nodes in the system (AdapTBF paper §IV-C: "static TBF rules ... based on the
//! calculated priority, determined by the proportion of allocated resources relative to the total
//! resources available in the system").
//!
//! Choice: the rule rate on a domain is the domain's RPC capacity (sum of its targets' maximum
//! token rates) times the job's node share, rounded to the nearest integer and clamped to
//! Lustre's valid range `1..=999_999`. The share is over *all* jobs, active or not, which is
//! what makes the baseline static: idle jobs keep their share and it is wasted.
//!
//! Rates are decided once, at setup; the rules are still held per domain ([`JobRules`]), so a
//! start the server refuses is not lost: a name that clashes with a rule this controller does
//! not hold (`EEXIST`, an administrator's `jvictim2`) is kept from jobs and the job started
//! under another name at the next [`Controller::decide`], once, as every rule-writing
//! controller does ([`JobRules::write_refused`]); any other refusal starts the same rule
//! again. A driver that calls `decide` of a controller without a period (the ossd looks once
//! a control period) therefore repairs the job's rule without waiting for its node counts to
//! change.

use std::collections::BTreeMap;

use super::rules::{JobRate, JobRules};
use super::{ControlWrite, Controller, Decision, DomainId, DomainWrite, Observation};
use crate::model::JobId;

/// Lustre 2.15+ accepts `rate=N` for `1 <= N < 1_000_000`.
const TBF_RATE_RPCS_PER_S_MAX: u64 = crate::limits::TBF_RATE_RPCS_PER_S_MAX as u64;

/// Fixed per-job TBF rules, decided once.
#[derive(Debug, Default)]
pub struct StaticBw {
    /// Per domain: the rules held and the rate each job wants (fixed at setup).
    domains: BTreeMap<DomainId, (JobRules, BTreeMap<JobId, JobRate>)>,
}

impl StaticBw {
    /// The rate each job gets on a domain of `capacity_rpcs_per_s`, in `jobs` order.
    pub fn rates_rpcs_per_s(capacity_rpcs_per_s: u64, node_counts: &[u32]) -> Vec<u64> {
        let nodes_total: u64 = node_counts.iter().map(|&n| u64::from(n)).sum();
        node_counts
            .iter()
            .map(|&n| {
                if nodes_total == 0 {
                    return 1;
                }
                let exact = capacity_rpcs_per_s as u128 * u128::from(n);
                let rounded = (exact + nodes_total as u128 / 2) / nodes_total as u128;
                (rounded as u64).clamp(1, TBF_RATE_RPCS_PER_S_MAX)
            })
            .collect()
    }
}

impl Controller for StaticBw {
    fn name(&self) -> &'static str {
        "static"
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        let node_counts: Vec<u32> = initial.jobs.iter().map(|j| j.node_count).collect();
        let mut writes = Vec::new();
        self.domains.clear();
        for domain in &initial.domains {
            writes.push(DomainWrite {
                domain: domain.domain,
                write: ControlWrite::NrsPolicies("tbf jobid".to_string()),
            });
            let rates = Self::rates_rpcs_per_s(domain.capacity_rpcs_per_s(), &node_counts);
            let desired: BTreeMap<JobId, JobRate> = initial
                .jobs
                .iter()
                .zip(rates)
                .map(|(job, rate)| {
                    let want = JobRate {
                        value: rate,
                        priority: None,
                    };
                    (job.job, want)
                })
                .collect();
            // Rule names are given in job order, the same on every domain.
            let mut rules = JobRules::new();
            for cmd in rules.reconcile(&desired) {
                writes.push(DomainWrite {
                    domain: domain.domain,
                    write: ControlWrite::tbf_rule(cmd.to_string()),
                });
            }
            self.domains.insert(domain.domain, (rules, desired));
        }
        Decision::of_writes(writes)
    }

    fn period_ns(&self) -> Option<u64> {
        None
    }

    /// The rates stay those of setup; only rules the server refused are started again (under
    /// a new name after a name clash). Nothing is written once every rule is held.
    fn decide(&mut self, _observation: &Observation) -> Decision {
        let mut writes = Vec::new();
        for (&domain, (rules, desired)) in &mut self.domains {
            for cmd in rules.reconcile(desired) {
                writes.push(DomainWrite {
                    domain,
                    write: ControlWrite::tbf_rule(cmd.to_string()),
                });
            }
        }
        Decision::of_writes(writes)
    }

    fn on_write_refused(&mut self, write: &DomainWrite, errno: crate::errno::Errno) {
        if let (Some(text), Some((rules, _))) = (
            write.write.tbf_rule_text(),
            self.domains.get_mut(&write.domain),
        ) {
            rules.write_refused(text, errno);
        }
    }
}

// The spec of `static`: no options.

use crate::spec::{no_options, ControllerContext, ControllerDescriptor, Deployment, PolicyOptions};

/// `static`: Static BW, the AdapTBF paper's baseline.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: "static",
    description: "Static BW: one fixed TBF rate per job, each OST's capacity split by node counts",
    parse: parse_static,
    deployment: Deployment::ServerRules,
};

#[derive(Debug, PartialEq)]
pub(crate) struct StaticOptions;

impl PolicyOptions for StaticOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(StaticBw::default())
    }
}

pub(crate) fn parse_static(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    no_options(name, options)?;
    Ok(Box::new(StaticOptions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobId, OstId};
    use crate::{DomainId, DomainObservation, JobMeta, TargetObservation};

    #[test]
    fn rates_follow_node_share() {
        assert_eq!(StaticBw::rates_rpcs_per_s(1000, &[1, 3]), vec![250, 750]);
        assert_eq!(
            StaticBw::rates_rpcs_per_s(1000, &[1, 1, 3, 5]),
            vec![100, 100, 300, 500]
        );
        // Never below Lustre's minimum rate of 1, never above its maximum.
        assert_eq!(StaticBw::rates_rpcs_per_s(10, &[1, 1000]), vec![1, 10]);
        assert_eq!(StaticBw::rates_rpcs_per_s(5_000_000, &[1]), vec![999_999]);
    }

    /// One domain of two OSTs (600 + 400 RPC/s), jobs of 1 and 3 nodes.
    fn two_jobs() -> Observation {
        Observation {
            clients: Vec::new(),
            now_ns: 0,
            period_ns: 0,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: vec![
                    TargetObservation {
                        ost: OstId(0),
                        queue_len_rpcs: 0,
                        device_queue_rpcs: 0,
                        device_time_in_queue_ns: 0,
                        capacity_rpcs_per_s: 600,
                        jobs: vec![],
                    },
                    TargetObservation {
                        ost: OstId(1),
                        queue_len_rpcs: 0,
                        device_queue_rpcs: 0,
                        device_time_in_queue_ns: 0,
                        capacity_rpcs_per_s: 400,
                        jobs: vec![],
                    },
                ],
            }],
            jobs: vec![
                JobMeta {
                    job: JobId::new("job1").unwrap(),
                    node_count: 1,
                    weight: 1,
                },
                JobMeta {
                    job: JobId::new("job2").unwrap(),
                    node_count: 3,
                    weight: 3,
                },
            ],
        }
    }

    fn texts(d: &Decision) -> Vec<String> {
        d.writes
            .iter()
            .map(|w| match (&w.write, w.write.tbf_rule_text()) {
                (ControlWrite::NrsPolicies(t), _) => format!("policies:{t}"),
                (_, Some(t)) => format!("rule:{t}"),
                (other, None) => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn setup_writes_policy_then_one_rule_per_job() {
        let d = StaticBw::default().setup(&two_jobs());
        assert_eq!(
            texts(&d),
            vec![
                "policies:tbf jobid",
                "rule:start jjob1 jobid={job1} rate=250",
                "rule:start jjob2 jobid={job2} rate=750",
            ]
        );
    }

    /// A start refused because its name is an administrator's rule (`EEXIST`) is started
    /// again under another name at the next decide, once; any other refusal starts the same
    /// rule again; once every rule is held, decide writes nothing. The rates stay those of
    /// setup throughout (the observation decide gets does not move them).
    #[test]
    fn a_refused_rule_is_started_again_and_a_taken_name_renamed() {
        use crate::errno::Errno;
        let obs = two_jobs();
        let mut c = StaticBw::default();
        let d = c.setup(&obs);
        assert!(c.decide(&obs).writes.is_empty(), "every rule held");
        let start = |name: &str| {
            d.writes
                .iter()
                .find(|w| w.write.tbf_rule_text().is_some_and(|t| t.contains(name)))
                .unwrap()
                .clone()
        };
        c.on_write_refused(&start("jjob1"), Errno::EEXIST);
        let renamed = c.decide(&obs);
        assert_eq!(
            texts(&renamed),
            vec!["rule:start jjob1_2 jobid={job1} rate=250"]
        );
        assert_eq!(renamed.writes[0].domain, DomainId(0));
        assert!(c.decide(&obs).writes.is_empty(), "renamed once");
        c.on_write_refused(&start("jjob2"), Errno::ENOMEM);
        // A refusal on a domain the controller has no rules on, and of the policy write,
        // change nothing.
        let mut elsewhere = start("jjob2");
        elsewhere.domain = DomainId(7);
        c.on_write_refused(&elsewhere, Errno::EEXIST);
        c.on_write_refused(&d.writes[0], Errno::EINVAL);
        let mut later = two_jobs();
        later.jobs[0].node_count = 100;
        assert_eq!(
            texts(&c.decide(&later)),
            vec!["rule:start jjob2 jobid={job2} rate=750"]
        );
        assert!(c.decide(&later).writes.is_empty());
    }
}
