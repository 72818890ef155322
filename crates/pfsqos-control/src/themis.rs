//! `themis`: ThemisIO (Karrels et al., "Fine-grained Policy-driven I/O Sharing for Burst
//! Buffers", SC'23) as a design. Every OST runs the NRS policy `themis`
//! ([`crate::sched::themis`]): a lottery among the queued jobs, users or groups, in one of
//! ThemisIO's fairness modes. ThemisIO needs no controller beyond its setup, except that its
//! server learns each job's node count from the job record its client library registers; here
//! the controller is that registration: it writes the node counts the driver knows
//! ([`JobMeta::node_count`](crate::JobMeta)) to `nrs_themis_nodes`, at setup and whenever the
//! set of jobs or their sizes change.
//!
//! The lottery's seed is the run's seed, mixed with the domain, so a simulation's seed changes
//! every draw, replays repeat them, and two servers do not draw in step.

use std::collections::BTreeMap;

use crate::errno::Errno;
use crate::limits::JOBS_TRACKED_MAX;
use crate::model::JobId;
use crate::sched::themis::{
    FairnessMode, PARAM_THEMIS_MODE, PARAM_THEMIS_NODES, PARAM_THEMIS_SEED,
    THEMIS_NODES_WRITE_LEN_MAX,
};
use crate::spec::{
    key_value, parse_period_ms, ControllerContext, ControllerDescriptor, Deployment, PolicyOptions,
};
use crate::{ControlWrite, Controller, Decision, DomainId, DomainWrite, Observation};

/// The design's mode when the spec names none: size-fair, the mode of ThemisIO's headline
/// comparison (its code's own default, fifo, is the `nobw` baseline already).
pub const THEMIS_MODE_DEFAULT: FairnessMode = FairnessMode::SizeFair;

/// Starts ThemisIO's policy on every domain, then keeps its node counts current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Themis {
    pub mode: FairnessMode,
    /// How often node counts are brought up to date.
    pub period_ns: u64,
    /// The run's seed.
    pub seed: u64,
    /// The node counts every domain holds, as last written.
    written: BTreeMap<JobId, u32>,
}

impl Themis {
    pub fn new(mode: FairnessMode, period_ns: u64, seed: u64) -> Themis {
        assert!(period_ns > 0, "a controller period is positive");
        Themis {
            mode,
            period_ns,
            seed,
            written: BTreeMap::new(),
        }
    }

    /// The seed of `domain`'s lottery: distinct per domain, fixed by the run's seed.
    pub fn domain_seed(&self, domain: DomainId) -> u64 {
        // SplitMix64's finalizer over seed and domain: nearby seeds give unrelated streams.
        let mut z = self
            .seed
            .wrapping_add((u64::from(domain.0) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The `nrs_themis_nodes` texts (each within the file's length bound) that bring the
    /// policy from what was written to the observation's jobs: new and resized jobs, and 0
    /// for jobs gone.
    fn node_texts(&mut self, observation: &Observation) -> Vec<String> {
        if !self.mode_uses_nodes() {
            return Vec::new();
        }
        let desired: BTreeMap<JobId, u32> = observation
            .jobs
            .iter()
            .take(JOBS_TRACKED_MAX)
            .map(|j| (j.job, j.node_count.clamp(1, crate::limits::JOB_NODES_MAX)))
            .collect();
        let mut lines = Vec::new();
        for (job, &n) in &desired {
            if self.written.get(job) != Some(&n) {
                lines.push(format!("{n} {}\n", job.as_str()));
            }
        }
        for job in self.written.keys() {
            if !desired.contains_key(job) {
                lines.push(format!("0 {}\n", job.as_str()));
            }
        }
        self.written = desired;
        let mut texts: Vec<String> = Vec::new();
        for line in lines {
            match texts.last_mut() {
                Some(t) if t.len() + line.len() <= THEMIS_NODES_WRITE_LEN_MAX => t.push_str(&line),
                _ => texts.push(line),
            }
        }
        texts
    }

    fn mode_uses_nodes(&self) -> bool {
        matches!(
            self.mode,
            FairnessMode::SizeFair | FairnessMode::UserSizeFair | FairnessMode::GroupUserSizeFair
        )
    }

    fn node_writes(&mut self, observation: &Observation) -> Vec<DomainWrite> {
        let texts = self.node_texts(observation);
        let mut writes = Vec::with_capacity(texts.len() * observation.domains.len());
        for d in &observation.domains {
            for text in &texts {
                writes.push(DomainWrite {
                    domain: d.domain,
                    write: ControlWrite::NrsPolicyParam {
                        param: PARAM_THEMIS_NODES.to_string(),
                        text: text.clone(),
                    },
                });
            }
        }
        writes
    }
}

impl Controller for Themis {
    fn name(&self) -> &'static str {
        DESCRIPTOR.name
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        let mut writes = Vec::with_capacity(3 * initial.domains.len());
        for d in &initial.domains {
            // The mode goes through its file: `group-user-size-fair` is longer than the 15
            // characters `nrs_policies` takes as an argument. Its files are ThemisIO's, so
            // they are written once it runs.
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicies("themis".to_string()),
            });
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicyParam {
                    param: PARAM_THEMIS_MODE.to_string(),
                    text: self.mode.name().to_string(),
                },
            });
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicyParam {
                    param: PARAM_THEMIS_SEED.to_string(),
                    text: self.domain_seed(d.domain).to_string(),
                },
            });
        }
        writes.extend(self.node_writes(initial));
        Decision::of_writes(writes)
    }

    fn period_ns(&self) -> Option<u64> {
        self.mode_uses_nodes().then_some(self.period_ns)
    }

    fn decide(&mut self, observation: &Observation) -> Decision {
        Decision::of_writes(self.node_writes(observation))
    }

    fn on_write_refused(&mut self, write: &DomainWrite, _errno: Errno) {
        // A refused node-count write leaves the policy's table unknown: write it all again.
        if write.write.param_and_text().0 == PARAM_THEMIS_NODES {
            self.written.clear();
        }
    }
}

/// `themis[:mode=M][:period_ms=N]`.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: "themis",
    description: "ThemisIO: a lottery among the queued jobs on every OST, by node count (size-fair) or another fairness mode",
    parse: parse_themis,
    deployment: Deployment::Scheduler,
};

#[derive(Debug, PartialEq)]
struct ThemisOptions {
    mode: FairnessMode,
    period_ms: Option<u64>,
}

impl PolicyOptions for ThemisOptions {
    fn controller(&self, ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Themis::new(
            self.mode,
            self.period_ms.unwrap_or(ctx.period_ms_default) * 1_000_000,
            ctx.seed,
        ))
    }
}

fn parse_themis(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str = "mode, period_ms";
    let mut parsed = ThemisOptions {
        mode: THEMIS_MODE_DEFAULT,
        period_ms: None,
    };
    for option in options {
        match key_value(name, option, ALLOWED)? {
            ("mode", v) => {
                parsed.mode = FairnessMode::parse(v).ok_or_else(|| {
                    let names: Vec<_> = FairnessMode::ALL.iter().map(|m| m.name()).collect();
                    format!(
                        "{name} option mode=`{v}` is not a fairness mode (allowed: {})",
                        names.join(", ")
                    )
                })?;
            }
            ("period_ms", v) => parsed.period_ms = Some(parse_period_ms(name, v)?),
            (key, _) => {
                return Err(format!(
                    "unknown option `{key}` of `{name}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    Ok(Box::new(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OstId;
    use crate::sched::nrs::Nrs;
    use crate::sched::themis::Themis as ThemisPolicy;
    use crate::spec::PolicyChoice;
    use crate::{DomainObservation, JobMeta, TargetObservation};

    fn observation(jobs: &[(&str, u32)]) -> Observation {
        let target = |ost| TargetObservation {
            ost: OstId(ost),
            queue_len_rpcs: 0,
            device_queue_rpcs: 0,
            device_time_in_queue_ns: 0,
            capacity_rpcs_per_s: 100,
            jobs: Vec::new(),
        };
        let mut jobs: Vec<JobMeta> = jobs
            .iter()
            .map(|&(j, n)| JobMeta {
                job: JobId::new(j).unwrap(),
                node_count: n,
                weight: n,
            })
            .collect();
        jobs.sort_by_key(|j| j.job);
        Observation {
            now_ns: 0,
            period_ns: 0,
            domains: (0..2)
                .map(|d| DomainObservation {
                    domain: DomainId(d),
                    targets: vec![target(d)],
                })
                .collect(),
            jobs,
            clients: Vec::new(),
        }
    }

    /// Applies a domain's writes to a head, as every driver does.
    fn apply(head: &mut Nrs<u32>, writes: &[DomainWrite], domain: DomainId) {
        for w in writes.iter().filter(|w| w.domain == domain) {
            match &w.write {
                ControlWrite::NrsPolicies(t) => head.write_policies(0, t).unwrap(),
                ControlWrite::NrsPolicyParam { param, text } => {
                    head.write_policy_param(0, param, text).unwrap()
                }
            }
        }
    }

    /// The spec reaches the registry through the descriptor alone; its setup starts the
    /// policy in its mode with a per-domain seed from the run's, and the node counts the
    /// driver knows; each period writes only what changed.
    #[test]
    fn setup_starts_themis_in_its_mode_with_the_node_counts() {
        let choice = PolicyChoice::parse("themis:mode=group-user-size-fair").unwrap();
        let mut c = choice.controller_with(1000, 1 << 20, 7);
        assert_eq!(c.name(), "themis");
        assert_eq!(c.period_ns(), Some(1_000_000_000));
        let first = observation(&[("big", 4), ("small", 1)]);
        let writes = c.setup(&first).writes;
        let mut heads = [Nrs::<u32>::new(), Nrs::<u32>::new()];
        for (d, head) in heads.iter_mut().enumerate() {
            apply(head, &writes, DomainId(d as u32));
            let p = head.running::<ThemisPolicy<u32>>().unwrap();
            assert_eq!(p.mode(), FairnessMode::GroupUserSizeFair);
            assert_eq!(p.job_nodes(&JobId::new("big").unwrap()), 4);
            assert_eq!(p.job_nodes(&JobId::new("small").unwrap()), 1);
        }
        let seeds: Vec<u64> = heads
            .iter()
            .map(|h| h.running::<ThemisPolicy<u32>>().unwrap().seed())
            .collect();
        assert_ne!(seeds[0], seeds[1], "domains draw independently");
        // Another run seed, other draws.
        let mut other = PolicyChoice::parse("themis")
            .unwrap()
            .controller_with(1000, 1 << 20, 8);
        let other_writes = other.setup(&first).writes;
        assert_ne!(writes[2], other_writes[2]);
        // Nothing changed: nothing written. A resized job, a new one and a gone one.
        assert!(c.decide(&first).writes.is_empty());
        let next = observation(&[("big", 6), ("new", 2)]);
        let writes = c.decide(&next).writes;
        assert_eq!(writes.len(), 2);
        assert_eq!(
            writes[0].write.param_and_text().1,
            "6 big\n2 new\n0 small\n"
        );
        for (d, head) in heads.iter_mut().enumerate() {
            apply(head, &writes, DomainId(d as u32));
            let p = head.running::<ThemisPolicy<u32>>().unwrap();
            assert_eq!(p.job_nodes(&JobId::new("big").unwrap()), 6);
            assert_eq!(p.job_nodes(&JobId::new("small").unwrap()), 1);
            assert_eq!(p.job_nodes(&JobId::new("new").unwrap()), 2);
        }
    }

    #[test]
    fn modes_without_node_counts_write_none_and_need_no_period() {
        let mut c = PolicyChoice::parse("themis:mode=job-fair")
            .unwrap()
            .controller_with(1000, 1 << 20, 0);
        assert_eq!(c.period_ns(), None);
        let writes = c.setup(&observation(&[("a", 3)])).writes;
        assert_eq!(writes.len(), 6);
        assert!(writes
            .iter()
            .all(|w| w.write.param_and_text().0 != PARAM_THEMIS_NODES));
    }

    #[test]
    fn many_jobs_split_into_writes_within_the_file_bound() {
        let names: Vec<String> = (0..5000).map(|i| format!("job.{i:026}")).collect();
        let jobs: Vec<(&str, u32)> = names.iter().map(|n| (n.as_str(), 3)).collect();
        let mut c = Themis::new(FairnessMode::SizeFair, 1, 0);
        let texts = c.node_texts(&observation(&jobs));
        assert!(texts.len() > 1);
        assert!(texts.iter().all(|t| t.len() <= THEMIS_NODES_WRITE_LEN_MAX));
        assert_eq!(texts.iter().map(|t| t.lines().count()).sum::<usize>(), 5000);
    }

    #[test]
    fn bad_options_name_the_option_and_what_is_allowed() {
        for (spec, needle) in [
            ("themis:mode=sizefair", "size-fair, job-fair"),
            ("themis:period_ms=0", "period_ms"),
            ("themis:rate=5", "allowed: mode, period_ms"),
            ("themis:mode", "not key=value"),
        ] {
            let err = PolicyChoice::parse(spec).unwrap_err();
            assert!(err.contains(needle), "{spec}: {err}");
        }
        for mode in FairnessMode::ALL {
            assert!(PolicyChoice::parse(&format!("themis:mode={}", mode.name())).is_ok());
        }
    }
}
