//! vPFS (Xu, Zhao et al., MSST '12) as a controller: it starts the proportional-sharing
//! scheduler on every domain and gives each job its weight, the way an administrator would
//! with `lctl set_param` (vPFS, MSST '12, §III: the scheduler sits in front of each data server; the
//! weights are the per-application shares of the total bandwidth). The scheduling itself is
//! the data plane's: SFQ(D) or DSFQ in `sched::sfq`, one instance per NRS head, synchronized
//! by the driver's counted channel. This controller only configures it:
//!
//! * setup: `nrs_policies=<dsfq|sfqd> jobid`, then the tunables the spec sets
//!   (`nrs_dsfq_depth`, `_sync`, `_threshold`, `_count`, `_nwc`, `_rpc_cost`), then one
//!   weight rule per job (`nrs_dsfq_weight=start NAME jobid={JOB} weight=W`), the job's weight
//!   from [`JobMeta::weight`](super::JobMeta) (the scenario's `weight`, by default its node
//!   count: vPFS's evaluation gives App_i weight i);
//! * every period: weight rules for jobs that appeared since (the live runtime learns jobs as
//!   they do I/O), changes for weights that moved, stops for jobs that are gone; the one rule
//!   manager ([`JobRules`]) writes them, so a job id holding rule syntax never reaches the text.
//!
//! Jobs without a rule of their own (refused ids) fall to the policy's `default` weight rule.

use std::collections::BTreeMap;

use super::rules::{JobRate, JobRules, RuleFile};
use super::{ControlWrite, Controller, Decision, DomainId, DomainWrite, Observation};
use crate::errno::Errno;
use crate::model::JobId;

/// Which fair-queuing policy the controller starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairQueuing {
    /// SFQ(D) on each head, no synchronization: shares hold per server only.
    Sfqd,
    /// DSFQ: SFQ(D) with the delay term from other servers' service (total-service shares).
    Dsfq,
}

impl FairQueuing {
    pub fn name(self) -> &'static str {
        match self {
            FairQueuing::Sfqd => "sfqd",
            FairQueuing::Dsfq => "dsfq",
        }
    }

    /// `nrs_<policy>_<suffix>`, the policy's parameter file.
    fn param(self, suffix: &str) -> String {
        format!("nrs_{}_{suffix}", self.name())
    }

    fn weight_file(self) -> RuleFile {
        RuleFile::Weight {
            param: match self {
                FairQueuing::Sfqd => "nrs_sfqd_weight",
                FairQueuing::Dsfq => "nrs_dsfq_weight",
            },
        }
    }
}

/// What the policy spec sets (`vpfs:sched=dsfq:sync=layout:threshold=10M:...`). `None`:
/// the scheduler's own default (depth 8, threshold 10 MiB, counting at arrival, no NWC cap).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VpfsConfig {
    pub policy: FairQueuing,
    pub period_ns: u64,
    /// `none`, `threshold`, `flow_threshold`, `layout` or `time` (DSFQ only).
    pub sync: Option<&'static str>,
    pub threshold_bytes: Option<u64>,
    pub depth: Option<u32>,
    /// `arrival`, `dispatch` or `finish` (DSFQ only).
    pub count: Option<&'static str>,
    /// Non-work-conserving cap of each head, bytes per second (0: work-conserving).
    pub nwc_bytes_per_s: Option<u64>,
    /// Per-request constant added to a request's bytes as its cost.
    pub rpc_cost_bytes: Option<u64>,
    /// How long a flow may be idle on a server before it leaves (DSFQ only; layout mode
    /// announces departures, so this must exceed a flow's gap between requests at a server).
    pub flow_idle_ms: Option<u64>,
    /// `time` mode's least time between broadcasts (DSFQ only).
    pub sync_interval_ms: Option<u64>,
}

/// The vPFS controller.
#[derive(Debug)]
pub struct Vpfs {
    config: VpfsConfig,
    rules: BTreeMap<DomainId, JobRules>,
}

impl Vpfs {
    pub fn new(config: VpfsConfig) -> Vpfs {
        assert!(config.period_ns > 0, "a controller period is positive");
        Vpfs {
            config,
            rules: BTreeMap::new(),
        }
    }

    /// The tunable writes the spec asks for, in a fixed order.
    fn tunable_writes(&self) -> Vec<ControlWrite> {
        let c = &self.config;
        let p = c.policy;
        let mut out = Vec::new();
        let mut push = |suffix: &str, text: Option<String>| {
            if let Some(text) = text {
                out.push(ControlWrite::NrsPolicyParam {
                    param: p.param(suffix),
                    text,
                });
            }
        };
        push("depth", c.depth.map(|d| d.to_string()));
        push("rpc_cost", c.rpc_cost_bytes.map(|v| v.to_string()));
        push("nwc", c.nwc_bytes_per_s.map(|v| v.to_string()));
        if p == FairQueuing::Dsfq {
            push("count", c.count.map(str::to_string));
            push("threshold", c.threshold_bytes.map(|v| v.to_string()));
            push("flow_idle_ms", c.flow_idle_ms.map(|v| v.to_string()));
            push(
                "sync_interval_ms",
                c.sync_interval_ms.map(|v| v.to_string()),
            );
            // Last: a new mode starts every flow's synchronization afresh.
            push("sync", c.sync.map(str::to_string));
        }
        out
    }

    /// Weight-rule writes that bring every domain to the observation's jobs and weights.
    fn weight_writes(&mut self, observation: &Observation) -> Vec<DomainWrite> {
        let file = self.config.policy.weight_file();
        let desired: BTreeMap<JobId, JobRate> = observation
            .jobs
            .iter()
            .map(|j| {
                let want = JobRate {
                    value: u64::from(j.weight.max(1)),
                    priority: None,
                };
                (j.job, want)
            })
            .collect();
        let mut writes = Vec::new();
        for d in &observation.domains {
            let rules = self
                .rules
                .entry(d.domain)
                .or_insert_with(|| JobRules::new().without_catch_all());
            for cmd in rules.reconcile(&desired) {
                writes.push(DomainWrite {
                    domain: d.domain,
                    write: cmd.to_write(file),
                });
            }
        }
        writes
    }
}

impl Controller for Vpfs {
    fn name(&self) -> &'static str {
        "vpfs"
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        let mut writes = Vec::new();
        let tunables = self.tunable_writes();
        for d in &initial.domains {
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicies(format!("{} jobid", self.config.policy.name())),
            });
            for w in &tunables {
                writes.push(DomainWrite {
                    domain: d.domain,
                    write: w.clone(),
                });
            }
        }
        writes.extend(self.weight_writes(initial));
        Decision::of_writes(writes)
    }

    fn period_ns(&self) -> Option<u64> {
        Some(self.config.period_ns)
    }

    fn decide(&mut self, observation: &Observation) -> Decision {
        Decision::of_writes(self.weight_writes(observation))
    }

    fn on_write_refused(&mut self, write: &DomainWrite, errno: Errno) {
        if let (ControlWrite::NrsPolicyParam { text, .. }, Some(rules)) =
            (&write.write, self.rules.get_mut(&write.domain))
        {
            rules.write_refused(text, errno);
        }
    }
}

// The spec of `vpfs`: the fair-queuing policy and its tunables.

use crate::spec::{
    key_value, parse_bytes, parse_choice, parse_period_ms, ControllerContext, ControllerDescriptor,
    Deployment, PolicyOptions,
};

/// `vpfs`: vPFS's proportional sharing (SFQ(D) or DSFQ in every server).
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: "vpfs",
    description: "vPFS: proportional shares by weight through SFQ(D) or DSFQ in every server",
    parse: parse_vpfs,
    deployment: Deployment::Scheduler,
};

/// vPFS (`vpfs`): which fair-queuing policy and its tunables.
#[derive(Debug, PartialEq)]
pub(crate) struct VpfsOptions {
    pub(crate) policy: FairQueuing,
    pub(crate) period_ms: Option<u64>,
    pub(crate) sync: Option<&'static str>,
    pub(crate) threshold_bytes: Option<u64>,
    pub(crate) depth: Option<u32>,
    pub(crate) count: Option<&'static str>,
    pub(crate) nwc_bytes_per_s: Option<u64>,
    pub(crate) rpc_cost_bytes: Option<u64>,
    pub(crate) flow_idle_ms: Option<u64>,
    pub(crate) sync_interval_ms: Option<u64>,
}

impl PolicyOptions for VpfsOptions {
    fn controller(&self, ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Vpfs::new(VpfsConfig {
            policy: self.policy,
            period_ns: self.period_ms.unwrap_or(ctx.period_ms_default) * 1_000_000,
            sync: self.sync,
            threshold_bytes: self.threshold_bytes,
            depth: self.depth,
            count: self.count,
            nwc_bytes_per_s: self.nwc_bytes_per_s,
            rpc_cost_bytes: self.rpc_cost_bytes,
            flow_idle_ms: self.flow_idle_ms,
            sync_interval_ms: self.sync_interval_ms,
        }))
    }
}

pub(crate) fn parse_vpfs(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str =
        "sched, period_ms, sync, threshold, depth, count, nwc, rpc_cost, flow_idle_ms, \
         sync_interval_ms";
    let mut parsed = VpfsOptions {
        policy: FairQueuing::Dsfq,
        period_ms: None,
        sync: None,
        threshold_bytes: None,
        depth: None,
        count: None,
        nwc_bytes_per_s: None,
        rpc_cost_bytes: None,
        flow_idle_ms: None,
        sync_interval_ms: None,
    };
    for option in options {
        let (key, value) = key_value(name, option, ALLOWED)?;
        match key {
            "sched" => {
                parsed.policy = parse_choice(
                    name,
                    key,
                    value,
                    &[("dsfq", FairQueuing::Dsfq), ("sfqd", FairQueuing::Sfqd)],
                )?
            }
            "period_ms" => parsed.period_ms = Some(parse_period_ms(name, value)?),
            "sync" => {
                parsed.sync = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("none", "none"),
                        ("threshold", "threshold"),
                        ("flow_threshold", "flow_threshold"),
                        ("layout", "layout"),
                        ("time", "time"),
                    ],
                )?)
            }
            "count" => {
                parsed.count = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("arrival", "arrival"),
                        ("dispatch", "dispatch"),
                        ("finish", "finish"),
                    ],
                )?)
            }
            "threshold" => parsed.threshold_bytes = Some(parse_bytes(name, key, value)?),
            "nwc" => parsed.nwc_bytes_per_s = Some(parse_bytes(name, key, value)?),
            "rpc_cost" => parsed.rpc_cost_bytes = Some(parse_bytes(name, key, value)?),
            "depth" => {
                parsed.depth = Some(
                    value
                        .parse()
                        .ok()
                        .filter(|d| (1..=VPFS_DEPTH_MAX).contains(d))
                        .ok_or_else(|| {
                            format!(
                                "{name} option depth=`{value}` is not a whole number in \
                                 1..={VPFS_DEPTH_MAX}"
                            )
                        })?,
                )
            }
            "flow_idle_ms" => {
                parsed.flow_idle_ms = Some(
                    value
                        .parse()
                        .ok()
                        .filter(|v| (1..=FLOW_IDLE_MS_MAX).contains(v))
                        .ok_or_else(|| {
                            format!(
                                "{name} option flow_idle_ms=`{value}` is not a whole number of \
                                 milliseconds in 1..={FLOW_IDLE_MS_MAX}"
                            )
                        })?,
                )
            }
            "sync_interval_ms" => {
                parsed.sync_interval_ms = Some(
                    value
                        .parse()
                        .ok()
                        .filter(|v| (1..=SYNC_INTERVAL_MS_MAX).contains(v))
                        .ok_or_else(|| {
                            format!(
                                "{name} option sync_interval_ms=`{value}` is not a whole number \
                                 of milliseconds in 1..={SYNC_INTERVAL_MS_MAX}"
                            )
                        })?,
                )
            }
            other => {
                return Err(format!(
                    "unknown vpfs option `{other}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    if parsed.policy == FairQueuing::Sfqd
        && (parsed.sync.is_some()
            || parsed.count.is_some()
            || parsed.threshold_bytes.is_some()
            || parsed.flow_idle_ms.is_some()
            || parsed.sync_interval_ms.is_some())
    {
        return Err(
            "vpfs options sync, count, threshold, flow_idle_ms and sync_interval_ms need \
             sched=dsfq (sfqd does not synchronize)"
                .to_string(),
        );
    }
    Ok(Box::new(parsed))
}

/// Largest depth a spec may ask for.
pub(crate) const VPFS_DEPTH_MAX: u32 = crate::sched::sfq::SFQ_DEPTH_MAX;
/// Longest flow idle time a spec may ask for.
pub(crate) const FLOW_IDLE_MS_MAX: u64 = crate::sched::sfq::FLOW_IDLE_MS_MAX;
/// Longest time-driven synchronization interval a spec may ask for.
pub(crate) const SYNC_INTERVAL_MS_MAX: u64 = crate::sched::sfq::SYNC_INTERVAL_MS_MAX;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OstId;
    use crate::{DomainObservation, JobMeta, TargetObservation};

    fn job(id: &str, weight: u32) -> JobMeta {
        JobMeta {
            job: JobId::new(id).unwrap(),
            node_count: 1,
            weight,
        }
    }

    fn observation(jobs: Vec<JobMeta>) -> Observation {
        Observation {
            now_ns: 0,
            period_ns: 0,
            domains: (0..2)
                .map(|d| DomainObservation {
                    domain: DomainId(d),
                    targets: vec![TargetObservation {
                        ost: OstId(d),
                        queue_len_rpcs: 0,
                        device_queue_rpcs: 0,
                        device_time_in_queue_ns: 0,
                        capacity_rpcs_per_s: 100,
                        jobs: Vec::new(),
                    }],
                })
                .collect(),
            jobs,
            clients: Vec::new(),
        }
    }

    fn config() -> VpfsConfig {
        VpfsConfig {
            policy: FairQueuing::Dsfq,
            period_ns: 1_000_000_000,
            sync: Some("layout"),
            threshold_bytes: Some(10 << 20),
            depth: Some(4),
            count: None,
            nwc_bytes_per_s: None,
            rpc_cost_bytes: None,
            flow_idle_ms: Some(5000),
            sync_interval_ms: None,
        }
    }

    fn texts(d: &Decision, domain: u32) -> Vec<String> {
        d.writes
            .iter()
            .filter(|w| w.domain == DomainId(domain))
            .map(|w| {
                let (param, text) = w.write.param_and_text();
                format!("{param}={text}")
            })
            .collect()
    }

    #[test]
    fn setup_starts_the_policy_then_tunables_then_weights_on_every_domain() {
        let mut v = Vpfs::new(config());
        let d = v.setup(&observation(vec![job("app1", 1), job("app2", 2)]));
        let expected = [
            "nrs_policies=dsfq jobid",
            "nrs_dsfq_depth=4",
            "nrs_dsfq_threshold=10485760",
            "nrs_dsfq_flow_idle_ms=5000",
            "nrs_dsfq_sync=layout",
            "nrs_dsfq_weight=start japp1 jobid={app1} weight=1",
            "nrs_dsfq_weight=start japp2 jobid={app2} weight=2",
        ];
        assert_eq!(texts(&d, 0), expected);
        assert_eq!(texts(&d, 1), expected);
        // Nothing changed: nothing to write.
        let again = v.decide(&observation(vec![job("app1", 1), job("app2", 2)]));
        assert!(again.writes.is_empty());
    }

    #[test]
    fn new_jobs_moved_weights_and_gone_jobs_are_written_each_period() {
        let mut v = Vpfs::new(config());
        v.setup(&observation(vec![job("a", 1), job("b", 2)]));
        let d = v.decide(&observation(vec![job("b", 5), job("c", 3)]));
        assert_eq!(
            texts(&d, 0),
            [
                "nrs_dsfq_weight=stop ja",
                "nrs_dsfq_weight=change jb weight=5",
                "nrs_dsfq_weight=start jc jobid={c} weight=3",
            ]
        );
    }

    #[test]
    fn hostile_job_ids_get_no_rule_and_a_refused_start_is_started_again() {
        let mut v = Vpfs::new(config());
        let d = v.setup(&observation(vec![job("x}&uid={0", 9), job("ok", 1)]));
        assert!(texts(&d, 0).iter().all(|t| !t.contains("x}")), "{d:?}");
        let start = d
            .writes
            .iter()
            .find(|w| w.domain == DomainId(0) && w.write.param_and_text().1.contains("jok"))
            .expect("a rule for ok")
            .clone();
        v.on_write_refused(&start, Errno::ENOMEM);
        let d = v.decide(&observation(vec![job("x}&uid={0", 9), job("ok", 1)]));
        assert_eq!(
            texts(&d, 0),
            ["nrs_dsfq_weight=start jok jobid={ok} weight=1"]
        );
        assert!(texts(&d, 1).is_empty(), "domain 1 accepted its rule");
    }

    #[test]
    fn time_mode_writes_its_interval_before_the_mode() {
        let mut v = Vpfs::new(VpfsConfig {
            sync: Some("time"),
            sync_interval_ms: Some(50),
            threshold_bytes: None,
            flow_idle_ms: None,
            ..config()
        });
        let d = v.setup(&observation(vec![job("a", 1)]));
        assert_eq!(
            texts(&d, 0),
            [
                "nrs_policies=dsfq jobid",
                "nrs_dsfq_depth=4",
                "nrs_dsfq_sync_interval_ms=50",
                "nrs_dsfq_sync=time",
                "nrs_dsfq_weight=start ja jobid={a} weight=1",
            ]
        );
    }

    #[test]
    fn sfqd_writes_no_synchronization_tunables() {
        let mut v = Vpfs::new(VpfsConfig {
            policy: FairQueuing::Sfqd,
            ..config()
        });
        let d = v.setup(&observation(vec![job("a", 1)]));
        assert_eq!(
            texts(&d, 0),
            [
                "nrs_policies=sfqd jobid",
                "nrs_sfqd_depth=4",
                "nrs_sfqd_weight=start ja jobid={a} weight=1",
            ]
        );
    }
}
