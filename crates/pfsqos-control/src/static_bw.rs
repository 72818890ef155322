//! `Static BW`: one TBF rule per job with a fixed rate proportional to the job's share of all
//! compute nodes in the system (AdapTBF paper §IV-C: "static TBF rules ... based on the
//! calculated priority, determined by the proportion of allocated resources relative to the total
//! resources available in the system").
//!
//! Choice: the rule rate on a domain is the domain's RPC capacity (sum of its targets' maximum
//! token rates) times the job's node share, rounded to the nearest integer and clamped to
//! Lustre's valid range `1..=999_999`. The share is over *all* jobs, active or not, which is
//! what makes the baseline static: idle jobs keep their share and it is wasted.

use std::collections::BTreeMap;

use super::rules::{JobRate, JobRules};
use super::{ControlWrite, Controller, Decision, DomainWrite, Observation};
use crate::model::JobId;

/// Lustre 2.15+ accepts `rate=N` for `1 <= N < 1_000_000`.
const TBF_RATE_RPCS_PER_S_MAX: u64 = crate::limits::TBF_RATE_RPCS_PER_S_MAX as u64;

/// Fixed per-job TBF rules, written once.
#[derive(Debug, Default)]
pub struct StaticBw;

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
            for cmd in JobRules::new().reconcile(&desired) {
                writes.push(DomainWrite {
                    domain: domain.domain,
                    write: ControlWrite::tbf_rule(cmd.to_string()),
                });
            }
        }
        Decision::of_writes(writes)
    }

    fn period_ns(&self) -> Option<u64> {
        None
    }

    fn decide(&mut self, _observation: &Observation) -> Decision {
        Decision::default()
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
        Box::new(StaticBw)
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

    #[test]
    fn setup_writes_policy_then_one_rule_per_job() {
        let obs = Observation {
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
        };
        let d = StaticBw.setup(&obs);
        let texts: Vec<String> = d
            .writes
            .iter()
            .map(|w| match (&w.write, w.write.tbf_rule_text()) {
                (ControlWrite::NrsPolicies(t), _) => format!("policies:{t}"),
                (_, Some(t)) => format!("rule:{t}"),
                (other, None) => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            vec![
                "policies:tbf jobid",
                "rule:start jjob1 jobid={job1} rate=250",
                "rule:start jjob2 jobid={job2} rate=750",
            ]
        );
    }
}
