//! [`Controller`] adapter: runs any [`Allocator`] (GIFT or a baseline) on the control plane's
//! observations and turns its per-OST caps into Lustre `tbf jobid` rules.
//!
//! * Applications are jobs; the OSTs an application uses are the targets where the job had any
//!   activity (RPCs arrived or served) in the period; node counts come from the job metadata.
//! * Demand per OST: by default every active job is taken to saturate the OSTs it uses (the
//!   paper's assumption for applications in an I/O phase, and the only choice that lets a
//!   throttled job expand again: what a job was served is capped by its last rule). The
//!   observed arrival rate is the other option.
//! * Units: the allocators work in bytes/s; the observations and TBF rules in RPC/s. An OST's
//!   capacity is `capacity_rpcs_per_s` RPCs of `rpc_size_bytes` (Lustre's `brw_size`, 1 MiB by
//!   default: the device's bandwidth). A job's cap becomes a rule rate at **that job's**
//!   observed bytes per RPC ([`RpcSizeEstimate`]; `rpc_size_bytes` until it has served), since
//!   TBF counts RPCs whatever their size: at `brw_size` for every job, a job of 4 KiB RPCs got
//!   1/256 of its cap (docs/bakeoff.md, "GIFT and small RPCs").
//! * A TBF rule covers a whole domain (one OSS's `ost_io` service, all of its OSTs). A job's
//!   rule rate on a domain is the **sum** of its caps over the domain's OSTs. When the job's
//!   RPCs spread over those OSTs in proportion to its demand (striping does this), every OST
//!   sees its own cap; the rule cannot stop the job from concentrating its RPCs on one OST of
//!   the domain, which is the price of per-OSS rules. With one OST per OSS (the paper's
//!   testbed: 64 OSSes, 64 OSTs) the mapping is exact.

use std::collections::BTreeMap;

use crate::rules::{JobRate, JobRules};

use super::{
    Allocation, AllocationStats, Allocator, AppDemand, IntervalInput, OstCapacity, OstDemand,
    ShareOptions, ShareUnit, SystemGate, ThrottleLimit, WindowKind,
};
use crate::model::{JobId, OstId};
use crate::rpc_size::RpcSizeEstimate;
use crate::{ControlWrite, Controller, Decision, DomainId, DomainWrite, Observation, TraceSample};

/// How a job's demand on an OST is estimated from an observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DemandModel {
    /// Every active job wants the whole OST (paper's model).
    #[default]
    Saturating,
    /// RPCs that arrived in the period, at least one RPC per period.
    Arrived,
}

/// Parameters of the adapter.
#[derive(Clone, Debug, PartialEq)]
pub struct GiftControllerConfig {
    /// Decision interval (GIFT: 10 s).
    pub period_ns: u64,
    /// Bytes of one RPC of an OST's capacity (`brw_size`), and of a job's RPCs until it has
    /// been served (then its observed size counts).
    pub rpc_size_bytes: u64,
    pub demand: DemandModel,
}

impl Default for GiftControllerConfig {
    fn default() -> Self {
        GiftControllerConfig {
            period_ns: super::gift::DECISION_INTERVAL_NS,
            rpc_size_bytes: 1 << 20,
            demand: DemandModel::Saturating,
        }
    }
}

/// A domain's rules as last written (the shared rule manager, `control::rules`).
#[derive(Debug, Default)]
struct DomainRules {
    rules: JobRules,
}

impl DomainRules {
    fn update(&mut self, rates: &BTreeMap<JobId, u64>) -> Vec<String> {
        let desired: BTreeMap<JobId, JobRate> = rates
            .iter()
            .map(|(job, &rate)| {
                let want = JobRate {
                    value: rate,
                    priority: None,
                };
                (*job, want)
            })
            .collect();
        self.rules
            .reconcile(&desired)
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}

/// Names accepted by [`controller_by_name`], in the paper's order: the family's descriptors'
/// names ([`super::options::DESCRIPTORS`]), the one list of them.
pub const POLICY_NAMES: [&str; 8] = {
    let d = &super::options::DESCRIPTORS;
    [
        d[0].name, d[1].name, d[2].name, d[3].name, d[4].name, d[5].name, d[6].name, d[7].name,
    ]
};

/// Parameters of GIFT and its baselines that a policy spec may set (`None`: the default).
/// Ranges are checked by [`GiftOptions::check`] (and by the spec parser, which names them).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GiftOptions {
    /// GIFT's `τ` (application and system redemption-rate threshold), in `[0, 1]`.
    pub tau: Option<f64>,
    /// `B_thres` of GIFT, TSA, TMF and RND, in `[0, 1]`.
    pub b_thres: Option<f64>,
    /// GIFT's receding window `N` in coupon units (application and system windows).
    pub window_coupons: Option<u64>,
    /// GIFT's system regret budget in node-hours (`None`: unbounded).
    pub regret_budget_node_hours: Option<f64>,
    /// Share unit of every GIFT-family policy (`share=app|stream`).
    pub share: Option<ShareUnit>,
    /// Leftover redistribution of every GIFT-family policy (`redistribute=false|true`).
    pub redistribute: Option<bool>,
    /// GIFT's constraint (3) (`constraint3=true|false`).
    pub constraint3: Option<bool>,
    /// GIFT's application window (`window=receding|cap`).
    pub window: Option<WindowKind>,
    /// GIFT's system gate (`system_gate=reset|cumulative`).
    pub system_gate: Option<SystemGate>,
    /// GIFT's throttle limit (`throttle=headroom|b_thres`).
    pub throttle: Option<ThrottleLimit>,
    /// How GIFT solves its §3.4 LP (`lp=presolved|whole`): both give an optimum of the same
    /// LP; they may pick different optima where the LP is indifferent.
    pub lp: Option<super::lp::LpSolver>,
}

impl GiftOptions {
    fn share_options(&self) -> ShareOptions {
        ShareOptions {
            unit: self.share.unwrap_or_default(),
            redistribute: self.redistribute.unwrap_or(false),
        }
    }
}

/// Options every GIFT-family policy takes.
const SHARE_OPTIONS: [&str; 2] = ["share", "redistribute"];

/// Names of the options each allocator accepts besides `period_ms` (in [`GiftOptions`]).
pub fn option_names(name: &str) -> &'static [&'static str] {
    match name {
        "gift" => &[
            "tau",
            "b_thres",
            "window_coupons",
            "regret_budget_node_hours",
            SHARE_OPTIONS[0],
            SHARE_OPTIONS[1],
            "constraint3",
            "window",
            "system_gate",
            "throttle",
            "lp",
        ],
        "tsa" | "tmf" | "rnd" => &["b_thres", SHARE_OPTIONS[0], SHARE_OPTIONS[1]],
        "pofs" | "bsip" | "mbw" | "esa" => &SHARE_OPTIONS,
        _ => &[],
    }
}

/// The allocator (GIFT or a baseline) named `name` with `options` applied over the defaults;
/// `seed` feeds RND's generator. `None` for an unknown name. Options a policy does not take
/// are ignored here (the spec parser rejects them). The allocator is wrapped in
/// [`super::Recorded`], so [`Allocator::allocation_stats`] gives the artifact's metric.
///
/// # Panics
/// If an option is outside its range (the spec parser never produces one).
pub fn allocator_by_name(
    name: &str,
    seed: u64,
    options: GiftOptions,
) -> Option<Box<dyn Allocator>> {
    use super::{Bsip, Esa, Gift, GiftConfig, Mbw, Pofs, Recorded, Rnd, Tmf, Tsa};
    use rand::SeedableRng;
    let b_thres = |default: f64| options.b_thres.unwrap_or(default);
    let share = options.share_options();
    Some(match name {
        "pofs" => Box::new(Recorded::new(Pofs { share })),
        "bsip" => Box::new(Recorded::new(Bsip { share })),
        "mbw" => Box::new(Recorded::new(Mbw { share })),
        "tsa" => {
            let d = Tsa::default();
            Box::new(Recorded::new(Tsa {
                b_thres: b_thres(d.b_thres),
                share,
            }))
        }
        "esa" => Box::new(Recorded::new(Esa { share })),
        "tmf" => {
            let mut t = Tmf::default();
            t.b_thres = b_thres(t.b_thres);
            t.share = share;
            Box::new(Recorded::new(t))
        }
        "rnd" => {
            let mut r = Rnd::new(rand_chacha::ChaCha8Rng::seed_from_u64(seed));
            r.b_thres = b_thres(r.b_thres);
            r.share = share;
            Box::new(Recorded::new(r))
        }
        "gift" => {
            let mut config = GiftConfig::default();
            config.tau = options.tau.unwrap_or(config.tau);
            config.b_thres = b_thres(config.b_thres);
            if let Some(n) = options.window_coupons {
                config.window_coupons = n;
                config.system_window_coupons = n;
            }
            if let Some(budget) = options.regret_budget_node_hours {
                config.regret_budget_node_hours = budget;
            }
            config.share = share;
            config.constraint3 = options.constraint3.unwrap_or(config.constraint3);
            config.window = options.window.unwrap_or(config.window);
            config.system_gate = options.system_gate.unwrap_or(config.system_gate);
            config.throttle_limit = options.throttle.unwrap_or(config.throttle_limit);
            config.lp = options.lp.unwrap_or(config.lp);
            Box::new(Recorded::new(Gift::new(config)))
        }
        _ => return None,
    })
}

/// GIFT or one of its baselines as a [`Controller`] with default parameters (`seed` feeds RND's
/// generator). `None` for an unknown name.
pub fn controller_by_name(
    name: &str,
    seed: u64,
    config: GiftControllerConfig,
) -> Option<Box<dyn Controller>> {
    controller_with_options(name, seed, config, GiftOptions::default())
}

/// [`controller_by_name`] with allocator options.
pub fn controller_with_options(
    name: &str,
    seed: u64,
    config: GiftControllerConfig,
    options: GiftOptions,
) -> Option<Box<dyn Controller>> {
    let allocator = allocator_by_name(name, seed, options)?;
    Some(Box::new(AllocatorController::new(allocator, config)))
}

/// Runs an [`Allocator`] as a centralized [`Controller`].
pub struct AllocatorController<A: Allocator> {
    config: GiftControllerConfig,
    allocator: A,
    rules: BTreeMap<DomainId, DomainRules>,
    rpc_size: RpcSizeEstimate,
    last: Option<Allocation>,
    errors: u64,
    /// The allocator's reason for the last refused input.
    last_error: Option<String>,
}

impl<A: Allocator> AllocatorController<A> {
    pub fn new(allocator: A, config: GiftControllerConfig) -> Self {
        assert!(config.period_ns > 0 && config.rpc_size_bytes > 0);
        AllocatorController {
            rpc_size: RpcSizeEstimate::new(config.rpc_size_bytes),
            config,
            allocator,
            rules: BTreeMap::new(),
            last: None,
            errors: 0,
            last_error: None,
        }
    }

    pub fn allocator(&self) -> &A {
        &self.allocator
    }

    /// The last decision's allocation.
    pub fn last_allocation(&self) -> Option<&Allocation> {
        self.last.as_ref()
    }

    /// Observations the allocator rejected (the rules then stay as they were).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Each job's observed bytes per RPC, as of the last decision.
    pub fn rpc_size(&self) -> &RpcSizeEstimate {
        &self.rpc_size
    }

    /// The allocator's input for one observation (arrived RPCs count at each job's observed
    /// RPC size as of the last [`RpcSizeEstimate::observe`]).
    pub fn interval_input(&self, obs: &Observation) -> IntervalInput {
        let rpc = self.config.rpc_size_bytes as f64;
        let period_s = obs.period_ns.max(1) as f64 / crate::NS_PER_S as f64;
        let mut osts = Vec::new();
        let mut per_app: BTreeMap<JobId, Vec<OstDemand>> = BTreeMap::new();
        for d in &obs.domains {
            for t in &d.targets {
                let capacity = t.capacity_rpcs_per_s.max(1) as f64 * rpc;
                osts.push(OstCapacity {
                    ost: t.ost,
                    capacity_bytes_per_s: capacity,
                });
                for s in &t.jobs {
                    if s.rpcs_arrived == 0 && s.rpcs_served == 0 {
                        continue;
                    }
                    let demand = match self.config.demand {
                        DemandModel::Saturating => capacity,
                        DemandModel::Arrived => {
                            let job_rpc = self.rpc_size.bytes_per_rpc(&s.job) as f64;
                            s.rpcs_arrived.max(1) as f64 * job_rpc / period_s
                        }
                    };
                    per_app.entry(s.job).or_default().push(OstDemand {
                        ost: t.ost,
                        demand_bytes_per_s: demand,
                        // Observations carry no per-file state: one stream per job and OST.
                        streams: 1,
                    });
                }
            }
        }
        let apps = per_app
            .into_iter()
            .map(|(job, osts)| AppDemand {
                app: job,
                nodes: obs
                    .jobs
                    .binary_search_by(|m| m.job.cmp(&job))
                    .map_or(1, |k| obs.jobs[k].node_count),
                osts,
            })
            .collect();
        IntervalInput {
            now_ns: obs.now_ns,
            interval_ns: self.config.period_ns,
            osts,
            apps,
        }
    }
}

impl<A: Allocator> Controller for AllocatorController<A> {
    fn name(&self) -> &'static str {
        self.allocator.name()
    }

    fn on_write_refused(&mut self, write: &DomainWrite, errno: crate::errno::Errno) {
        if let (Some(text), Some(rules)) = (
            write.write.tbf_rule_text(),
            self.rules.get_mut(&write.domain),
        ) {
            rules.rules.write_refused(text, errno);
        }
    }

    fn rejected_observations(&self) -> u64 {
        self.errors
    }

    fn last_rejection(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        let mut writes = Vec::new();
        for d in &initial.domains {
            self.rules.insert(d.domain, DomainRules::default());
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicies("tbf jobid".to_string()),
            });
        }
        Decision::of_writes(writes)
    }

    fn period_ns(&self) -> Option<u64> {
        Some(self.config.period_ns)
    }

    fn regret(&self) -> Option<super::RegretSummary> {
        self.allocator.regret()
    }

    fn allocation_stats(&self) -> Option<AllocationStats> {
        self.allocator.allocation_stats()
    }

    fn decide(&mut self, observation: &Observation) -> Decision {
        self.rpc_size.observe(observation);
        let input = self.interval_input(observation);
        let allocation = match self.allocator.allocate(&input) {
            Ok(a) => a,
            Err(e) => {
                self.errors += 1;
                self.last_error = Some(e.to_string());
                return Decision::default();
            }
        };
        let mut caps: BTreeMap<OstId, Vec<(JobId, f64)>> = BTreeMap::new();
        for a in &allocation.apps {
            for c in &a.caps {
                caps.entry(c.ost)
                    .or_default()
                    .push((a.app, c.cap_bytes_per_s));
            }
        }
        let mut writes = Vec::new();
        for d in &observation.domains {
            let mut sums: BTreeMap<JobId, f64> = BTreeMap::new();
            for t in &d.targets {
                for &(job, cap) in caps.get(&t.ost).map_or(&[][..], |v| &v[..]) {
                    *sums.entry(job).or_default() += cap;
                }
            }
            let rates: BTreeMap<JobId, u64> = sums
                .into_iter()
                .map(|(job, bytes_per_s)| (job, self.rpc_size.rate_rpcs_per_s(&job, bytes_per_s)))
                .collect();
            let rules = self.rules.entry(d.domain).or_default();
            writes.extend(rules.update(&rates).into_iter().map(|text| DomainWrite {
                domain: d.domain,
                write: ControlWrite::tbf_rule(text),
            }));
        }
        self.last = Some(allocation);
        Decision::of_writes(writes)
    }

    /// Per OST and job: the cap and the BSIP cap (bytes/s); per job on its first OST: the
    /// redemption rate and coupon worth issued and redeemed.
    fn trace(&self) -> Vec<TraceSample> {
        self.last.as_ref().map(allocation_trace).unwrap_or_default()
    }
}

/// The trace samples of one allocation, as [`AllocatorController`] reports them (per OST and
/// job: the cap; per job on its first OST: BSIP and progress fractions, coupon worth issued and
/// redeemed, redemption rate). Drivers that run an [`Allocator`] directly report the same.
pub fn allocation_trace(a: &Allocation) -> Vec<TraceSample> {
    let mut out = Vec::new();
    for app in &a.apps {
        for c in &app.caps {
            out.push(TraceSample {
                ost: c.ost,
                job: app.app,
                metric: "cap_bytes_per_s",
                value: c.cap_bytes_per_s,
            });
        }
        if let Some(first) = app.caps.first() {
            let mut values = vec![
                ("bsip_fraction", app.bsip_fraction),
                ("progress_fraction", app.progress_fraction),
                ("coupon_issued_bytes", app.issued_bytes),
                ("coupon_redeemed_bytes", app.redeemed_bytes),
            ];
            if let Some(rate) = app.redemption_rate {
                values.push(("redemption_rate", rate));
            }
            for (metric, value) in values {
                out.push(TraceSample {
                    ost: first.ost,
                    job: app.app,
                    metric,
                    value,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gift::Bsip;
    use crate::{DomainObservation, JobMeta, JobTargetStats, TargetObservation};

    /// One OSS of one OST of 100 RPC/s of 1 MiB; `big` writes 1 MiB RPCs, `tiny` 4 KiB ones.
    fn observation() -> Observation {
        let job = |s: &str| JobId::new(s).unwrap();
        let stats = |j: &str, rpcs: u64, rpc_bytes: u64| JobTargetStats {
            job: job(j),
            rpcs_arrived: rpcs,
            rpcs_served: rpcs,
            bytes_served: rpcs * rpc_bytes,
        };
        Observation {
            now_ns: 1_000_000_000,
            period_ns: 1_000_000_000,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: vec![TargetObservation {
                    ost: OstId(0),
                    queue_len_rpcs: 0,
                    device_queue_rpcs: 0,
                    device_time_in_queue_ns: 0,
                    capacity_rpcs_per_s: 100,
                    jobs: vec![stats("big", 60, 1 << 20), stats("tiny", 400, 4096)],
                }],
            }],
            jobs: ["big", "tiny"]
                .iter()
                .map(|j| JobMeta {
                    job: job(j),
                    node_count: 1,
                    weight: 1,
                })
                .collect(),
            clients: Vec::new(),
        }
    }

    #[test]
    fn a_small_rpc_jobs_rule_carries_the_bytes_it_was_allocated() {
        let obs = observation();
        let mut c = AllocatorController::new(Bsip::default(), GiftControllerConfig::default());
        c.setup(&obs);
        let rules: Vec<String> = c
            .decide(&obs)
            .writes
            .iter()
            .map(|w| w.write.param_and_text().1.to_string())
            .collect();
        // BSIP gives each of the two saturating jobs half of 100 MiB/s: 50 RPCs of 1 MiB for
        // `big`, 50 MiB/s in 4 KiB RPCs (12,800 RPC/s) for `tiny`, not 50 RPCs (200 KiB/s).
        assert_eq!(
            rules,
            vec![
                "start jbig jobid={big} rate=50",
                "start jtiny jobid={tiny} rate=12800",
            ]
        );
        let tiny = JobId::new("tiny").unwrap();
        assert_eq!(c.rpc_size().bytes_per_rpc(&tiny), 4096);
        // Both rules carry the same bytes per second: the allocation, not an artefact of units.
        let cap = |job: &str| {
            let job = JobId::new(job).unwrap();
            let a = c.last_allocation().unwrap();
            a.apps.iter().find(|a| a.app == job).unwrap().caps[0].cap_bytes_per_s
        };
        assert!((cap("big") - cap("tiny")).abs() < 1.0);
    }

    #[test]
    fn arrived_demand_counts_each_jobs_rpcs_at_their_size() {
        let obs = observation();
        let config = GiftControllerConfig {
            demand: DemandModel::Arrived,
            ..GiftControllerConfig::default()
        };
        let mut c = AllocatorController::new(Bsip::default(), config);
        c.setup(&obs);
        c.decide(&obs);
        let input = c.interval_input(&obs);
        let demand = |i: usize| input.apps[i].osts[0].demand_bytes_per_s;
        // 60 RPCs of 1 MiB and 400 RPCs of 4 KiB in one second.
        assert_eq!(demand(0), 60.0 * (1 << 20) as f64);
        assert_eq!(demand(1), 400.0 * 4096.0);
    }
}
