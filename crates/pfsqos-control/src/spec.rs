//! Policy specs: the names and options that select a controller, shared by every driver (the
//! simulator's `--policy`, the live `ossd --policy`). Parsing a spec and building its controller
//! live here once, next to the controllers.
//!
//! A policy spec is a name, optionally followed by `:key=value` options, e.g. `adaptbf`,
//! `adaptbf:period_ms=200` or `adaptbf:demand=arrived:period_ms=50`. Options let one comparison
//! sweep a parameter (the AdapTBF paper's §IV-H allocation frequency) without one scenario file
//! per value.

use super::gift::{
    self, Allocator, GiftControllerConfig, GiftOptions, ShareUnit, SystemGate, ThrottleLimit,
    WindowKind,
};
use super::pi::{
    self as pi_control, Aimd, AimdConfig, DesignSpec, Gains, Increase, Pi, PiConfig,
    ProportionalOn, QueueSource, SensorConfig, Staircase, StaircaseConfig, TargetChoice,
    TargetSchedule,
};
use super::vpfs::{FairQueuing, Vpfs, VpfsConfig};
use super::{AdapTbf, AdapTbfConfig, Controller, DemandSource, NoBw, StaticBw};
use std::fmt;

/// Longest accepted policy spec; specs also name output folders (GIFT with all its options
/// fits).
pub const POLICY_SPEC_LEN_MAX: usize = 128;

/// Largest receding window `N` an option may set, in coupon units (the authors' code: 1e6).
pub const WINDOW_COUPONS_MAX: u64 = 1_000_000_000_000;

/// Largest finite regret budget an option may set, node-hours (about 10^4 nodes for 10^5 h).
pub const REGRET_BUDGET_NODE_HOURS_MAX: f64 = 1e9;

/// Longest control period an option may set.
pub const PERIOD_MS_MAX: u64 = crate::limits::CONTROL_PERIOD_MS_MAX;

/// What building a controller needs from its driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerContext {
    /// The period of policies whose spec sets no `period_ms` and that have no period of their
    /// own (AdapTBF): the scenario's `policy.period_ms`, the daemon's `--period-ms`.
    pub period_ms_default: u64,
    /// The size of one TBF token: the OSS's `brw_size`.
    pub rpc_size_bytes: u64,
    /// Feeds randomized policies (RND).
    pub seed: u64,
}

/// A spec's options, parsed by its registry row: builds the controller (and, for the GIFT
/// family, the bandwidth allocator the fluid engine applies directly).
pub trait PolicyOptions: OptionsValue + fmt::Debug + Send + Sync {
    fn controller(&self, ctx: &ControllerContext) -> Box<dyn Controller>;

    /// The bandwidth allocator: `Ok(None)` for `nobw` (no caps: every OST shares its
    /// bandwidth first come, first served), an error for TBF controllers, which are not
    /// allocators.
    fn allocator(&self, _seed: u64) -> Result<Option<Box<dyn Allocator>>, String> {
        Err(String::new())
    }

    /// The decision interval of an allocator; `None` for the others.
    fn allocator_period_ns(&self) -> Option<u64> {
        None
    }
}

/// What every options type has by comparing by value: implemented once, for all of them.
pub trait OptionsValue {
    /// For tests and tools that inspect a row's parsed options.
    fn as_any(&self) -> &dyn std::any::Any;

    /// Whether `other` holds the same parsed options.
    fn same_options(&self, other: &dyn PolicyOptions) -> bool;
}

impl<T: PartialEq + 'static> OptionsValue for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn same_options(&self, other: &dyn PolicyOptions) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// How a registry row parses a spec's options (`name`, then the `key=value` texts in order).
pub type ParseOptions =
    fn(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String>;

/// One row of the controller registry: a policy name and how to parse its options. Adding a
/// controller is one file implementing [`Controller`] and one row in [`CONTROLLER_ROWS`].
pub struct ControllerRow {
    pub name: &'static str,
    /// Parses the spec's `key=value` options (in order) for policy `name`.
    pub parse: ParseOptions,
}

/// The controller registry, in the order reports list policies: the AdapTBF paper's three,
/// then GIFT's seven baselines and GIFT itself, then vPFS, then PI control and its AIMD
/// baseline.
pub const CONTROLLER_ROWS: [ControllerRow; 15] = [
    ControllerRow {
        name: "nobw",
        parse: parse_nobw,
    },
    ControllerRow {
        name: "static",
        parse: parse_static,
    },
    ControllerRow {
        name: "adaptbf",
        parse: parse_adaptbf,
    },
    ControllerRow {
        name: "pofs",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "bsip",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "mbw",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "tsa",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "esa",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "tmf",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "rnd",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "gift",
        parse: parse_gift_family,
    },
    ControllerRow {
        name: "vpfs",
        parse: parse_vpfs,
    },
    ControllerRow {
        name: "pi",
        parse: parse_pi,
    },
    ControllerRow {
        name: "aimd",
        parse: parse_aimd,
    },
    ControllerRow {
        name: "pi-openloop",
        parse: parse_pi_openloop,
    },
];

const fn row_names<const N: usize>(rows: &[ControllerRow; N]) -> [&'static str; N] {
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = rows[i].name;
        i += 1;
    }
    names
}

/// Policy names accepted in a spec, in registry order.
pub const POLICY_NAMES: &[&str] = &row_names(&CONTROLLER_ROWS);

/// A parsed policy spec: its registry row and its options.
#[derive(Debug)]
pub struct PolicyChoice {
    name: &'static str,
    /// The spec as given, which identifies the choice.
    spec: String,
    options: std::sync::Arc<dyn PolicyOptions>,
}

impl Clone for PolicyChoice {
    fn clone(&self) -> Self {
        PolicyChoice {
            name: self.name,
            spec: self.spec.clone(),
            options: std::sync::Arc::clone(&self.options),
        }
    }
}

/// Two choices are equal when their options are: the same row with the same parsed values
/// (so `adaptbf` equals `adaptbf:demand=served`).
impl PartialEq for PolicyChoice {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.options.same_options(other.options.as_ref())
    }
}

impl PolicyChoice {
    /// Parses `name[:key=value]...`, with an error that lists what is allowed.
    pub fn parse(spec: &str) -> Result<PolicyChoice, String> {
        if spec.len() > POLICY_SPEC_LEN_MAX {
            return Err(format!(
                "policy spec is {} bytes long (at most {POLICY_SPEC_LEN_MAX})",
                spec.len()
            ));
        }
        let mut parts = spec.split(':');
        let name = parts.next().unwrap_or_default();
        let options: Vec<&str> = parts.collect();
        let row = CONTROLLER_ROWS
            .iter()
            .find(|r| r.name == name)
            .ok_or_else(|| {
                format!(
                    "unknown policy `{name}` (allowed: {}; options as in `adaptbf:period_ms=200`)",
                    POLICY_NAMES.join(", ")
                )
            })?;
        Ok(PolicyChoice {
            name: row.name,
            spec: spec.to_string(),
            options: std::sync::Arc::from((row.parse)(row.name, &options)?),
        })
    }

    /// The bandwidth allocator of a GIFT-family choice (for drivers that apply per-OST caps
    /// themselves, such as the fluid simulator); `Ok(None)` for `nobw` (no caps: every OST
    /// shares its bandwidth first come, first served); an error for `static` and `adaptbf`,
    /// which are TBF controllers, not allocators.
    pub fn allocator(&self, seed: u64) -> Result<Option<Box<dyn Allocator>>, String> {
        self.options.allocator(seed).map_err(|_| {
            let allocators: Vec<&str> = CONTROLLER_ROWS
                .iter()
                .filter(|r| {
                    (r.parse)(r.name, &[])
                        .is_ok_and(|o| o.allocator(0).is_ok_and(|a| a.is_some()))
                })
                .map(|r| r.name)
                .collect();
            format!(
                "policy `{}` is a TBF controller, not a bandwidth allocator (allowed here: nobw, {})",
                self.name,
                allocators.join(", ")
            )
        })
    }

    /// The policy's name (without options).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The spec as given.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The decision interval a GIFT-family choice runs at (its `period_ms` or GIFT's 10 s);
    /// `None` for the others.
    pub fn allocator_period_ns(&self) -> Option<u64> {
        self.options.allocator_period_ns()
    }

    /// The controller for this choice: `period_ms_default` applies to policies whose spec sets no
    /// `period_ms` and that have no period of their own (AdapTBF); `rpc_size_bytes` is the size
    /// of one TBF token (the OSS's `brw_size`); `seed` feeds randomized policies (RND).
    pub fn controller_with(
        &self,
        period_ms_default: u64,
        rpc_size_bytes: u64,
        seed: u64,
    ) -> Box<dyn Controller> {
        self.options.controller(&ControllerContext {
            period_ms_default,
            rpc_size_bytes,
            seed,
        })
    }
}

/// Splits `key=value`, with an error that names the policy and what it allows.
fn key_value<'a>(name: &str, option: &'a str, allowed: &str) -> Result<(&'a str, &'a str), String> {
    option.split_once('=').ok_or_else(|| {
        format!("option `{option}` of `{name}` is not key=value (allowed: {allowed})")
    })
}

#[derive(Debug, PartialEq)]
struct NoBwOptions;

impl PolicyOptions for NoBwOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(NoBw)
    }
    fn allocator(&self, _seed: u64) -> Result<Option<Box<dyn Allocator>>, String> {
        Ok(None)
    }
}

fn parse_nobw(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
    no_options(name, options)?;
    Ok(Box::new(NoBwOptions))
}

fn no_options(name: &str, options: &[&str]) -> Result<(), String> {
    match options.first() {
        Some(o) => Err(format!("policy `{name}` takes no options, got `{o}`")),
        None => Ok(()),
    }
}

#[derive(Debug, PartialEq)]
struct StaticOptions;

impl PolicyOptions for StaticOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(StaticBw)
    }
}

fn parse_static(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
    no_options(name, options)?;
    Ok(Box::new(StaticOptions))
}

#[derive(Debug, PartialEq)]
struct AdapTbfOptions {
    /// `None`: the driver's default period.
    period_ms: Option<u64>,
    demand: DemandSource,
    /// `rpc_cost=BYTES`: cost-weighted tokens (`adaptbf::TokenCost`); `None`: one RPC, one
    /// token (the paper).
    rpc_cost_bytes: Option<u64>,
}

impl PolicyOptions for AdapTbfOptions {
    fn controller(&self, ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(AdapTbf::new(AdapTbfConfig {
            period_ns: self.period_ms.unwrap_or(ctx.period_ms_default) * 1_000_000,
            demand: self.demand,
            token_cost: self
                .rpc_cost_bytes
                .map(|rpc_cost_bytes| crate::adaptbf::TokenCost {
                    rpc_cost_bytes,
                    full_rpc_bytes: ctx.rpc_size_bytes,
                }),
            ..AdapTbfConfig::default()
        }))
    }
}

fn parse_adaptbf(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
    let mut parsed = AdapTbfOptions {
        period_ms: None,
        demand: DemandSource::default(),
        rpc_cost_bytes: None,
    };
    for option in options {
        let (key, value) = key_value(name, option, "period_ms, demand, rpc_cost")?;
        match key {
            "period_ms" => parsed.period_ms = Some(parse_period_ms(name, value)?),
            "rpc_cost" => {
                let bytes = parse_bytes(name, key, value)?;
                if bytes > crate::sched::sfq::RPC_COST_MAX {
                    return Err(format!(
                        "{name} option rpc_cost=`{value}` is above {} bytes",
                        crate::sched::sfq::RPC_COST_MAX
                    ));
                }
                parsed.rpc_cost_bytes = Some(bytes);
            }
            "demand" => {
                parsed.demand = parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("served", DemandSource::Served),
                        ("arrived", DemandSource::Arrived),
                    ],
                )?
            }
            other => {
                return Err(format!(
                    "unknown adaptbf option `{other}` (allowed: period_ms, demand, rpc_cost)"
                ))
            }
        }
    }
    Ok(Box::new(parsed))
}

/// vPFS (`vpfs`): which fair-queuing policy and its tunables.
#[derive(Debug, PartialEq)]
struct VpfsOptions {
    policy: FairQueuing,
    period_ms: Option<u64>,
    sync: Option<&'static str>,
    threshold_bytes: Option<u64>,
    depth: Option<u32>,
    count: Option<&'static str>,
    nwc_bytes_per_s: Option<u64>,
    rpc_cost_bytes: Option<u64>,
    flow_idle_ms: Option<u64>,
    sync_interval_ms: Option<u64>,
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

/// Largest byte count a vPFS option takes (the scheduler's own bounds are checked again when
/// the write lands, with Lustre's errnos).
const VPFS_BYTES_MAX: u64 = 1 << 50;

/// A byte count: digits with an optional binary suffix (`k`, `M`, `G`, `T`, as scenario sizes).
fn parse_bytes(policy: &str, key: &str, value: &str) -> Result<u64, String> {
    let (digits, shift) = match value.char_indices().last() {
        Some((i, 'k' | 'K')) => (&value[..i], 10),
        Some((i, 'm' | 'M')) => (&value[..i], 20),
        Some((i, 'g' | 'G')) => (&value[..i], 30),
        Some((i, 't' | 'T')) => (&value[..i], 40),
        _ => (value, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n <= VPFS_BYTES_MAX)
        .ok_or_else(|| {
            format!(
                "{policy} option {key}=`{value}` is not a byte count in 0..={VPFS_BYTES_MAX} \
                 (digits with an optional k, M, G or T)"
            )
        })
}

fn parse_vpfs(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
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
const VPFS_DEPTH_MAX: u32 = crate::sched::sfq::SFQ_DEPTH_MAX;
/// Longest flow idle time a spec may ask for.
const FLOW_IDLE_MS_MAX: u64 = crate::sched::sfq::FLOW_IDLE_MS_MAX;
/// Longest time-driven synchronization interval a spec may ask for.
const SYNC_INTERVAL_MS_MAX: u64 = crate::sched::sfq::SYNC_INTERVAL_MS_MAX;

/// GIFT (`gift`) or one of its baselines.
#[derive(Debug, PartialEq)]
struct GiftFamilyOptions {
    name: &'static str,
    /// `None`: GIFT's 10 s decision interval.
    period_ms: Option<u64>,
    /// `tau`, `b_thres`, `window_coupons`, `regret_budget_node_hours`, and the
    /// artifact-faithful options `share`, `redistribute`, `constraint3`, `window`,
    /// `system_gate`, `throttle` (only those the policy takes, see `gift::option_names`;
    /// `docs/scenarios.md`).
    options: GiftOptions,
}

impl PolicyOptions for GiftFamilyOptions {
    fn controller(&self, ctx: &ControllerContext) -> Box<dyn Controller> {
        let defaults = GiftControllerConfig::default();
        let config = GiftControllerConfig {
            period_ns: self
                .period_ms
                .map_or(defaults.period_ns, |ms| ms * 1_000_000),
            // One TBF token is one RPC of the cluster's largest size.
            rpc_size_bytes: ctx.rpc_size_bytes,
            ..defaults
        };
        gift::controller_with_options(self.name, ctx.seed, config, self.options)
            .expect("names come from the registry")
    }

    fn allocator(&self, seed: u64) -> Result<Option<Box<dyn Allocator>>, String> {
        Ok(Some(
            gift::allocator_by_name(self.name, seed, self.options)
                .expect("names come from the registry"),
        ))
    }

    fn allocator_period_ns(&self) -> Option<u64> {
        Some(
            self.period_ms
                .map_or(GiftControllerConfig::default().period_ns, |ms| {
                    ms * 1_000_000
                }),
        )
    }
}

fn parse_gift_family(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    let mut period_ms = None;
    let mut opts = GiftOptions::default();
    let takes = gift::option_names(name);
    let allowed = || {
        let mut all = vec!["period_ms"];
        all.extend_from_slice(takes);
        all.join(", ")
    };
    for option in options {
        let (key, value) = key_value(name, option, &allowed())?;
        if key != "period_ms" && !takes.contains(&key) {
            return Err(format!(
                "unknown {name} option `{option}` (allowed: {})",
                allowed()
            ));
        }
        match key {
            "period_ms" => period_ms = Some(parse_period_ms(name, value)?),
            "tau" => opts.tau = Some(parse_unit(name, key, value)?),
            "b_thres" => opts.b_thres = Some(parse_unit(name, key, value)?),
            "window_coupons" => {
                opts.window_coupons = Some(
                    value
                        .parse()
                        .ok()
                        .filter(|v| (1..=WINDOW_COUPONS_MAX).contains(v))
                        .ok_or_else(|| {
                            format!(
                                "{name} option window_coupons=`{value}` is not a whole number \
                                 in 1..={WINDOW_COUPONS_MAX}"
                            )
                        })?,
                )
            }
            "regret_budget_node_hours" => {
                opts.regret_budget_node_hours = Some(
                    value
                        .parse::<f64>()
                        .ok()
                        .filter(|v| (0.0..=REGRET_BUDGET_NODE_HOURS_MAX).contains(v))
                        .ok_or_else(|| {
                            format!(
                                "{name} option regret_budget_node_hours=`{value}` is not a \
                                 number in 0..={REGRET_BUDGET_NODE_HOURS_MAX} (omit it for an \
                                 unbounded budget)"
                            )
                        })?,
                )
            }
            "share" => {
                opts.share = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[("app", ShareUnit::App), ("stream", ShareUnit::Stream)],
                )?)
            }
            "redistribute" => {
                opts.redistribute = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[("false", false), ("true", true)],
                )?)
            }
            "constraint3" => {
                opts.constraint3 = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[("true", true), ("false", false)],
                )?)
            }
            "window" => {
                opts.window = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[("receding", WindowKind::Receding), ("cap", WindowKind::Cap)],
                )?)
            }
            "system_gate" => {
                opts.system_gate = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("reset", SystemGate::Reset),
                        ("cumulative", SystemGate::Cumulative),
                    ],
                )?)
            }
            "lp" => {
                opts.lp = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("presolved", gift::LpSolver::Presolved),
                        ("whole", gift::LpSolver::Whole),
                    ],
                )?)
            }
            "throttle" => {
                opts.throttle = Some(parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("headroom", ThrottleLimit::Headroom),
                        ("b_thres", ThrottleLimit::BThres),
                    ],
                )?)
            }
            _ => unreachable!("checked against option_names"),
        }
    }
    Ok(Box::new(GiftFamilyOptions {
        name,
        period_ms,
        options: opts,
    }))
}

/// PI control (`pi`, issue #15): the controller's settings with the gains designed.
#[derive(Debug, PartialEq)]
struct PiOptions(PiConfig);

impl PolicyOptions for PiOptions {
    /// Ts is the spec's `ts_ms` (default the paper's 300 ms), not the driver's period: the
    /// gains were designed for it.
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Pi::new(self.0.clone()))
    }
}

/// The open-loop identification experiment (`pi-openloop`).
#[derive(Debug, PartialEq)]
struct StaircaseOptions(StaircaseConfig);

impl PolicyOptions for StaircaseOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Staircase::new(self.0.clone()).expect("options were checked when parsed"))
    }
}

/// `pi-openloop[:from=2M][:to=40M][:levels=20][:hold=20][:repeats=1][:ts_ms=300][:sensor=..]
/// [:ost=N][:filter=1]`: per-client limits from `from` to `to` bytes/s in `levels` even steps,
/// each held `hold` periods of `ts_ms`, the whole staircase `repeats` times (PI paper §4.2).
fn parse_pi_openloop(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str = "from, to, levels, hold, repeats, ts_ms, sensor, ost, filter";
    let (mut from, mut to, mut levels, mut hold, mut repeats) =
        (2u64 << 20, 40u64 << 20, 20, 20, 1);
    let mut ts_ms = pi_control::PI_TS_MS_DEFAULT;
    let mut sensor = SensorConfig::default();
    let count = |key: &str, value: &str, max: u64| -> Result<u64, String> {
        value
            .parse::<u64>()
            .ok()
            .filter(|v| (1..=max).contains(v))
            .ok_or_else(|| format!("{name} option {key}=`{value}` is not a count in 1..={max}"))
    };
    for option in options {
        let (key, value) = key_value(name, option, ALLOWED)?;
        if parse_sensor_option(name, key, value, &mut sensor)? {
            continue;
        }
        match key {
            "from" => from = parse_bytes(name, key, value)?,
            "to" => to = parse_bytes(name, key, value)?,
            "levels" => {
                levels = count(
                    key,
                    value,
                    pi_control::openloop::STAIRCASE_LEVELS_MAX as u64,
                )?
            }
            "hold" => hold = count(key, value, 100_000)?,
            "repeats" => repeats = count(key, value, 1_000)?,
            "ts_ms" => ts_ms = parse_ms(name, key, value)?,
            other => {
                return Err(format!(
                    "unknown {name} option `{other}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    if from == 0 || to == 0 {
        return Err(format!(
            "{name} options from and to must be at least 1 byte/s"
        ));
    }
    let config = StaircaseConfig {
        ts_ns: ts_ms * 1_000_000,
        sensor,
        levels_bytes_per_s: StaircaseConfig::linear_levels(from, to, levels as usize),
        hold_periods: hold as u32,
        repeats: repeats as u32,
    };
    config.check().map_err(|e| format!("{name}: {e}"))?;
    Ok(Box::new(StaircaseOptions(config)))
}

/// The AIMD baseline (`aimd`).
#[derive(Debug, PartialEq)]
struct AimdOptions(AimdConfig);

impl PolicyOptions for AimdOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Aimd::new(self.0.clone()))
    }
}

/// Longest moving-average window (`filter=`), in periods.
pub const PI_FILTER_SAMPLES_MAX: usize = 1000;

/// Largest queue target, requests (Linux's `nr_requests` tops out at a few thousand).
pub const PI_TARGET_RPCS_MAX: f64 = 1e6;

/// Latest target step, seconds after the start (about 115 days).
pub const PI_TARGET_AT_S_MAX: f64 = 1e7;

/// A finite number that `ok` accepts, `what` saying which.
fn parse_number(
    policy: &str,
    key: &str,
    value: &str,
    ok: fn(f64) -> bool,
    what: &str,
) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && ok(*v))
        .ok_or_else(|| format!("{policy} option {key}=`{value}` is not {what}"))
}

/// A whole number of milliseconds in `1..=PERIOD_MS_MAX`.
fn parse_ms(policy: &str, key: &str, value: &str) -> Result<u64, String> {
    value
        .parse()
        .ok()
        .filter(|v| (1..=PERIOD_MS_MAX).contains(v))
        .ok_or_else(|| {
            format!(
                "{policy} option {key}=`{value}` is not a whole number of milliseconds in \
                 1..={PERIOD_MS_MAX}"
            )
        })
}

/// `target=80` (a constant queue target, requests) or `target=40@0/80@30/60@60` (targets
/// from the given second after the start, the first at 0: the paper's Fig. 4 steps).
fn parse_target(policy: &str, value: &str) -> Result<TargetSchedule, String> {
    let bad = |why: String| {
        format!(
            "{policy} option target=`{value}` is not a queue target: {why} (a number of \
             requests, or steps like 40@0/80@30 in requests@seconds)"
        )
    };
    let queue = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..=PI_TARGET_RPCS_MAX).contains(v))
            .ok_or_else(|| bad(format!("`{text}` is not in 0..={PI_TARGET_RPCS_MAX}")))
    };
    if !value.contains('@') {
        return Ok(TargetSchedule::constant(queue(value)?));
    }
    let mut steps = Vec::new();
    for step in value.split('/') {
        let (target, at) = step
            .split_once('@')
            .ok_or_else(|| bad(format!("`{step}` is not target@seconds")))?;
        let at_s = at
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..=PI_TARGET_AT_S_MAX).contains(v))
            .ok_or_else(|| bad(format!("`{at}` is not a time in seconds")))?;
        steps.push(((at_s * 1e9).round() as u64, queue(target)?));
    }
    TargetSchedule::new(steps).map_err(bad)
}

/// The sensor options both controllers take: `sensor=`, `ost=`, `filter=`. `Ok(false)` if
/// `key` is not one of them.
fn parse_sensor_option(
    policy: &str,
    key: &str,
    value: &str,
    sensor: &mut SensorConfig,
) -> Result<bool, String> {
    match key {
        "sensor" => {
            sensor.source = parse_choice(
                policy,
                key,
                value,
                &[
                    ("time_in_queue", QueueSource::TimeInQueue),
                    ("instant", QueueSource::Instant),
                    ("nrs", QueueSource::Nrs),
                ],
            )?
        }
        "ost" => {
            sensor.targets =
                TargetChoice::Ost(crate::model::OstId(value.parse().map_err(|_| {
                    format!("{policy} option ost=`{value}` is not a target index")
                })?))
        }
        "filter" => {
            sensor.filter_samples = value
                .parse()
                .ok()
                .filter(|v| (1..=PI_FILTER_SAMPLES_MAX).contains(v))
                .ok_or_else(|| {
                    format!(
                        "{policy} option filter=`{value}` is not a number of periods in \
                         1..={PI_FILTER_SAMPLES_MAX}"
                    )
                })?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `bw_min` and `bw_max` (bytes/s with binary suffixes): `bw_min >= 1`, `bw_min <= bw_max`.
fn check_limits(policy: &str, bw_min: u64, bw_max: u64) -> Result<(), String> {
    if bw_min == 0 {
        return Err(format!("{policy} option bw_min must be at least 1 byte/s"));
    }
    if bw_min > bw_max {
        return Err(format!(
            "{policy} option bw_min ({bw_min} bytes/s) is above bw_max ({bw_max} bytes/s)"
        ));
    }
    Ok(())
}

/// `pi[:ts_ms=300][:target=80|40@0/80@30][:ks_ms=1400][:mp=0.02][:a=0.8][:b=0.5]
/// [:kp=..:ki=..][:p_on=error|measurement][:bw_min=1M][:bw_max=..][:sensor=..][:ost=N]
/// [:filter=1]`. Gains come from eq. 3-4 for (a, b, Ts, Ks, Mp) unless `kp` and `ki` are
/// both given (then the model and specification options are refused: they would be unused).
/// `b` is in requests per MiB/s of per-client limit, `kp` and `ki` in MiB/s per request.
fn parse_pi(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str = "ts_ms, target, ks_ms, mp, a, b, kp, ki, p_on, bw_min, bw_max, \
                           sensor, ost, filter";
    let mut ts_ms = pi_control::PI_TS_MS_DEFAULT;
    let mut target = TargetSchedule::constant(pi_control::PI_TARGET_RPCS_DEFAULT);
    let mut ks_ms = None;
    let mut mp = None;
    let mut a = None;
    let mut b = None;
    let mut kp = None;
    let mut ki = None;
    let mut p_on = ProportionalOn::default();
    let mut bw_min = pi_control::BW_MIN_BYTES_PER_S_DEFAULT;
    let mut bw_max = pi_control::BW_MAX_BYTES_PER_S_DEFAULT;
    let mut sensor = SensorConfig::default();
    for option in options {
        let (key, value) = key_value(name, option, ALLOWED)?;
        if parse_sensor_option(name, key, value, &mut sensor)? {
            continue;
        }
        let any = |_: f64| true;
        match key {
            "ts_ms" => ts_ms = parse_ms(name, key, value)?,
            "target" => target = parse_target(name, value)?,
            "ks_ms" => ks_ms = Some(parse_ms(name, key, value)?),
            "mp" => {
                mp = Some(parse_number(
                    name,
                    key,
                    value,
                    |v| v > 0.0 && v < 1.0,
                    "an overshoot fraction in (0, 1)",
                )?)
            }
            "a" => a = Some(parse_number(name, key, value, any, "a finite number")?),
            "b" => {
                b = Some(parse_number(
                    name,
                    key,
                    value,
                    |v| v != 0.0,
                    "a non-zero number (requests per MiB/s)",
                )?)
            }
            "kp" => kp = Some(parse_number(name, key, value, any, "a finite number")?),
            "ki" => ki = Some(parse_number(name, key, value, any, "a finite number")?),
            "p_on" => {
                p_on = parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("error", ProportionalOn::Error),
                        ("measurement", ProportionalOn::Measurement),
                    ],
                )?
            }
            "bw_min" => bw_min = parse_bytes(name, key, value)?,
            "bw_max" => bw_max = parse_bytes(name, key, value)?,
            other => {
                return Err(format!(
                    "unknown {name} option `{other}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    check_limits(name, bw_min, bw_max)?;
    let gains = match (kp, ki) {
        (Some(kp), Some(ki)) => {
            if ks_ms.is_some() || mp.is_some() || a.is_some() || b.is_some() {
                return Err(format!(
                    "{name}: kp and ki set the gains directly; ks_ms, mp, a and b would be \
                     unused"
                ));
            }
            Gains { kp, ki }
        }
        (None, None) => {
            let spec = DesignSpec {
                ts_s: ts_ms as f64 / 1e3,
                ks_s: ks_ms.unwrap_or(pi_control::PI_KS_MS_DEFAULT) as f64 / 1e3,
                mp: mp.unwrap_or(pi_control::PI_MP_DEFAULT),
            };
            let (gains, _) = pi_control::design_gains(
                a.unwrap_or(pi_control::PI_MODEL_A_DEFAULT),
                b.unwrap_or(pi_control::PI_MODEL_B_DEFAULT),
                spec,
            )
            .map_err(|e| format!("{name}: no gains for this design: {e}"))?;
            gains
        }
        _ => return Err(format!("{name}: kp and ki go together")),
    };
    Ok(Box::new(PiOptions(PiConfig {
        ts_ns: ts_ms * 1_000_000,
        sensor,
        target,
        gains,
        p_on,
        bw_min_bytes_per_s: bw_min,
        bw_max_bytes_per_s: bw_max,
    })))
}

/// `aimd[:ts_ms=300][:target=80|40@0/80@30][:decrease=0.5][:increase=6.25%|4M][:bw_min=1M]
/// [:bw_max=..][:sensor=..][:ost=N][:filter=1]`. `increase` is a percentage of the current
/// limit (default 6.25 %, io.latency's 1/16) or a fixed step in bytes/s.
fn parse_aimd(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
    const ALLOWED: &str = "ts_ms, target, decrease, increase, bw_min, bw_max, sensor, ost, filter";
    let mut config = AimdConfig {
        ts_ns: pi_control::PI_TS_MS_DEFAULT * 1_000_000,
        sensor: SensorConfig::default(),
        target: TargetSchedule::constant(pi_control::PI_TARGET_RPCS_DEFAULT),
        decrease: 0.5,
        increase: Increase::default(),
        bw_min_bytes_per_s: pi_control::BW_MIN_BYTES_PER_S_DEFAULT,
        bw_max_bytes_per_s: pi_control::BW_MAX_BYTES_PER_S_DEFAULT,
    };
    for option in options {
        let (key, value) = key_value(name, option, ALLOWED)?;
        if parse_sensor_option(name, key, value, &mut config.sensor)? {
            continue;
        }
        match key {
            "ts_ms" => config.ts_ns = parse_ms(name, key, value)? * 1_000_000,
            "target" => config.target = parse_target(name, value)?,
            "decrease" => {
                config.decrease = parse_number(
                    name,
                    key,
                    value,
                    |v| v > 0.0 && v < 1.0,
                    "a factor in (0, 1)",
                )?
            }
            "increase" => {
                config.increase = match value.strip_suffix('%') {
                    Some(percent) => Increase::Fraction(
                        parse_number(
                            name,
                            key,
                            percent,
                            |v| v > 0.0 && v <= 1000.0,
                            "a percentage in (0, 1000]",
                        )? / 100.0,
                    ),
                    None => match parse_bytes(name, key, value)? {
                        0 => {
                            return Err(format!(
                                "{name} option increase=`{value}` must be positive"
                            ))
                        }
                        step => Increase::StepBytesPerS(step),
                    },
                }
            }
            "bw_min" => config.bw_min_bytes_per_s = parse_bytes(name, key, value)?,
            "bw_max" => config.bw_max_bytes_per_s = parse_bytes(name, key, value)?,
            other => {
                return Err(format!(
                    "unknown {name} option `{other}` (allowed: {ALLOWED})"
                ))
            }
        }
    }
    check_limits(name, config.bw_min_bytes_per_s, config.bw_max_bytes_per_s)?;
    Ok(Box::new(AimdOptions(config)))
}

fn parse_period_ms(policy: &str, value: &str) -> Result<u64, String> {
    value
        .parse()
        .ok()
        .filter(|v| (1..=PERIOD_MS_MAX).contains(v))
        .ok_or_else(|| {
            format!(
                "{policy} option period_ms=`{value}` is not a whole number of milliseconds in \
                 1..={PERIOD_MS_MAX}"
            )
        })
}

/// A fraction in `[0, 1]` (GIFT's `tau` and `b_thres`).
fn parse_unit(policy: &str, key: &str, value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| format!("{policy} option {key}=`{value}` is not a number in 0..=1"))
}

/// One of a fixed set of words (the GIFT family's artifact-faithful options).
fn parse_choice<T: Copy>(
    policy: &str,
    key: &str,
    value: &str,
    allowed: &[(&str, T)],
) -> Result<T, String> {
    allowed
        .iter()
        .find(|(word, _)| *word == value)
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let words: Vec<&str> = allowed.iter().map(|(w, _)| *w).collect();
            format!(
                "{policy} option {key}=`{value}` is not allowed (allowed: {})",
                words.join(", ")
            )
        })
}

/// Checks a policy spec without building anything.
pub fn check_policy_spec(spec: &str) -> Result<(), String> {
    PolicyChoice::parse(spec).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GIFT options a choice parsed to.
    fn gift_options(choice: &PolicyChoice) -> GiftOptions {
        choice
            .options
            .as_any()
            .downcast_ref::<GiftFamilyOptions>()
            .expect("a GIFT-family choice")
            .options
    }

    #[test]
    fn specs_parse() {
        assert_eq!(PolicyChoice::parse("nobw").unwrap().name(), "nobw");
        let a = PolicyChoice::parse("adaptbf:period_ms=200:demand=arrived").unwrap();
        assert_eq!(
            format!("{a:?}"),
            format!(
                "{:?}",
                PolicyChoice {
                    name: "adaptbf",
                    spec: "adaptbf:period_ms=200:demand=arrived".into(),
                    options: std::sync::Arc::new(AdapTbfOptions {
                        period_ms: Some(200),
                        demand: DemandSource::Arrived,
                        rpc_cost_bytes: None,
                    })
                }
            )
        );
        assert_eq!(
            PolicyChoice::parse("adaptbf"),
            PolicyChoice::parse("adaptbf:demand=served")
        );
        assert_ne!(
            PolicyChoice::parse("adaptbf"),
            PolicyChoice::parse("adaptbf:demand=arrived")
        );
        // Cost-weighted tokens: a byte count up to the SFQ request-cost bound.
        assert_ne!(
            PolicyChoice::parse("adaptbf"),
            PolicyChoice::parse("adaptbf:rpc_cost=40K")
        );
        assert!(PolicyChoice::parse("adaptbf:rpc_cost=0").is_ok());
        let too_big = PolicyChoice::parse("adaptbf:rpc_cost=2G").unwrap_err();
        assert!(too_big.contains("rpc_cost"), "{too_big}");
        assert!(PolicyChoice::parse("adaptbf:rpc_cost=lots").is_err());
        // The registry is the list of names.
        assert_eq!(
            POLICY_NAMES,
            CONTROLLER_ROWS.iter().map(|r| r.name).collect::<Vec<_>>()
        );
        for name in POLICY_NAMES {
            assert_eq!(PolicyChoice::parse(name).unwrap().name(), *name);
        }
    }

    #[test]
    fn vpfs_specs_parse_and_refuse_what_does_not_apply() {
        let v = PolicyChoice::parse("vpfs:sync=layout:threshold=10M:depth=8:nwc=64M").unwrap();
        let o = v.options.as_any().downcast_ref::<VpfsOptions>().unwrap();
        assert_eq!(o.policy, FairQueuing::Dsfq);
        assert_eq!(o.sync, Some("layout"));
        assert_eq!(o.threshold_bytes, Some(10 << 20));
        assert_eq!(o.nwc_bytes_per_s, Some(64 << 20));
        assert_eq!(o.depth, Some(8));
        let t = PolicyChoice::parse("vpfs:sync=time:sync_interval_ms=50").unwrap();
        let o = t.options.as_any().downcast_ref::<VpfsOptions>().unwrap();
        assert_eq!((o.sync, o.sync_interval_ms), (Some("time"), Some(50)));
        assert_eq!(
            PolicyChoice::parse("vpfs:threshold=1k").unwrap(),
            PolicyChoice::parse("vpfs:threshold=1024").unwrap()
        );
        for bad in [
            "vpfs:sync=sometimes",
            "vpfs:threshold=-1",
            "vpfs:threshold=2P",
            "vpfs:depth=0",
            "vpfs:sched=sfqd:sync=layout",
            "vpfs:sched=sfqd:flow_idle_ms=100",
            "vpfs:flow_idle_ms=0",
            "vpfs:sync=time:sync_interval_ms=0",
            "vpfs:sync_interval_ms=3600001",
            "vpfs:sched=sfqd:sync_interval_ms=100",
            "vpfs:weight=3",
        ] {
            assert!(PolicyChoice::parse(bad).is_err(), "{bad}");
        }
        // vPFS is a scheduler configuration, not a bandwidth allocator.
        assert!(PolicyChoice::parse("vpfs").unwrap().allocator(1).is_err());
    }

    #[test]
    fn controllers_take_the_default_period_unless_the_spec_sets_one() {
        let default = PolicyChoice::parse("adaptbf").unwrap();
        assert_eq!(
            default.controller_with(250, 4 << 20, 0).period_ns(),
            Some(250_000_000)
        );
        let own = PolicyChoice::parse("adaptbf:period_ms=40").unwrap();
        assert_eq!(
            own.controller_with(250, 4 << 20, 0).period_ns(),
            Some(40_000_000)
        );
        assert_eq!(
            PolicyChoice::parse("static")
                .unwrap()
                .controller_with(250, 4 << 20, 0)
                .period_ns(),
            None
        );
        let gift = PolicyChoice::parse("gift:period_ms=5000").unwrap();
        assert_eq!(
            gift.controller_with(250, 4 << 20, 0).period_ns(),
            Some(5_000_000_000)
        );
    }

    #[test]
    fn bad_specs_say_what_is_allowed() {
        let e = PolicyChoice::parse("warp").unwrap_err();
        assert!(e.contains("nobw, static, adaptbf, pofs"), "{e}");
        assert_eq!(
            PolicyChoice::parse("gift:period_ms=5000")
                .unwrap()
                .allocator_period_ns(),
            Some(5_000_000_000)
        );
        let e = PolicyChoice::parse("rnd:demand=served").unwrap_err();
        assert!(e.contains("allowed: period_ms, b_thres"), "{e}");
        let e = PolicyChoice::parse("static:period_ms=5").unwrap_err();
        assert!(e.contains("takes no options"), "{e}");
        let e = PolicyChoice::parse("adaptbf:period_ms=0").unwrap_err();
        assert!(e.contains("1..=3600000"), "{e}");
        let e = PolicyChoice::parse("adaptbf:demand=guess").unwrap_err();
        assert!(e.contains("served, arrived"), "{e}");
        let e = PolicyChoice::parse("adaptbf:speed=3").unwrap_err();
        assert!(e.contains("period_ms, demand"), "{e}");
        let e = PolicyChoice::parse("adaptbf:period_ms").unwrap_err();
        assert!(e.contains("key=value"), "{e}");
        assert!(PolicyChoice::parse(&"a".repeat(129)).is_err());
    }

    #[test]
    fn gift_options_parse_and_reach_the_allocator() {
        let choice = PolicyChoice::parse(
            "gift:tau=0.5:b_thres=0.3:window_coupons=2000:regret_budget_node_hours=12.5",
        )
        .unwrap();
        let options = &gift_options(&choice);
        assert_eq!(
            *options,
            GiftOptions {
                tau: Some(0.5),
                b_thres: Some(0.3),
                window_coupons: Some(2000),
                regret_budget_node_hours: Some(12.5),
                ..GiftOptions::default()
            }
        );
        let allocator = choice.allocator(0).unwrap().expect("gift allocates");
        assert_eq!(allocator.name(), "gift");
        // The budget reached the ledger: a fresh GIFT has paid nothing and owes nothing.
        let regret = allocator.regret().expect("gift keeps a ledger");
        assert_eq!(regret.totals.paid_node_hours, 0.0);
        assert_eq!(
            PolicyChoice::parse("tsa:b_thres=0.25").unwrap().name(),
            "tsa"
        );
        assert!(PolicyChoice::parse("nobw")
            .unwrap()
            .allocator(0)
            .unwrap()
            .is_none());
        let e = PolicyChoice::parse("adaptbf")
            .unwrap()
            .allocator(0)
            .err()
            .unwrap();
        assert!(e.contains("not a bandwidth allocator"), "{e}");
        assert_eq!(
            PolicyChoice::parse("gift:period_ms=2000")
                .unwrap()
                .allocator_period_ns(),
            Some(2_000_000_000)
        );
        assert_eq!(
            PolicyChoice::parse("bsip").unwrap().allocator_period_ns(),
            Some(10_000_000_000)
        );
    }

    #[test]
    fn artifact_options_parse_for_the_policies_that_take_them() {
        let choice = PolicyChoice::parse(
            "gift:share=stream:redistribute=true:constraint3=false:window=cap:\
             system_gate=cumulative:throttle=b_thres",
        )
        .unwrap();
        let options = &gift_options(&choice);
        assert_eq!(
            *options,
            GiftOptions {
                share: Some(ShareUnit::Stream),
                redistribute: Some(true),
                constraint3: Some(false),
                window: Some(WindowKind::Cap),
                system_gate: Some(SystemGate::Cumulative),
                throttle: Some(ThrottleLimit::BThres),
                ..GiftOptions::default()
            }
        );
        // Every GIFT-family policy takes the share options; only GIFT the coupon ones.
        for name in ["pofs", "bsip", "mbw", "tsa", "esa", "tmf", "rnd"] {
            let spec = format!("{name}:share=stream:redistribute=false");
            let allocator = PolicyChoice::parse(&spec).unwrap().allocator(0).unwrap();
            assert!(allocator.unwrap().allocation_stats().is_some(), "{name}");
            let e = PolicyChoice::parse(&format!("{name}:window=cap")).unwrap_err();
            assert!(e.contains("unknown"), "{e}");
        }
        let e = PolicyChoice::parse("gift:share=process").unwrap_err();
        assert!(e.contains("allowed: app, stream"), "{e}");
        assert_eq!(
            gift_options(&PolicyChoice::parse("gift:lp=whole").unwrap()).lp,
            Some(gift::LpSolver::Whole)
        );
        let e = PolicyChoice::parse("gift:lp=simplex").unwrap_err();
        assert!(e.contains("allowed: presolved, whole"), "{e}");
        let e = PolicyChoice::parse("mbw:lp=whole").unwrap_err();
        assert!(e.contains("unknown"), "{e}");
        let e = PolicyChoice::parse("gift:system_gate=never").unwrap_err();
        assert!(e.contains("allowed: reset, cumulative"), "{e}");
    }

    #[test]
    fn gift_option_errors_name_the_option_and_the_range() {
        let e = PolicyChoice::parse("gift:tau=1.5").unwrap_err();
        assert!(e.contains("tau=`1.5`") && e.contains("0..=1"), "{e}");
        let e = PolicyChoice::parse("gift:b_thres=-0.1").unwrap_err();
        assert!(e.contains("b_thres") && e.contains("0..=1"), "{e}");
        let e = PolicyChoice::parse("gift:b_thres=nan").unwrap_err();
        assert!(e.contains("0..=1"), "{e}");
        let e = PolicyChoice::parse("gift:window_coupons=0").unwrap_err();
        assert!(e.contains("window_coupons") && e.contains("1..="), "{e}");
        let e = PolicyChoice::parse("gift:window_coupons=1.5").unwrap_err();
        assert!(e.contains("whole number"), "{e}");
        let e = PolicyChoice::parse("gift:regret_budget_node_hours=-1").unwrap_err();
        assert!(
            e.contains("regret_budget_node_hours") && e.contains("unbounded"),
            "{e}"
        );
        let e = PolicyChoice::parse("gift:regret_budget_node_hours=inf").unwrap_err();
        assert!(e.contains("0..="), "{e}");
        // Options a policy does not take are named with what it does take.
        let e = PolicyChoice::parse("bsip:b_thres=0.2").unwrap_err();
        assert!(
            e.contains("allowed: period_ms, share, redistribute)"),
            "{e}"
        );
        let e = PolicyChoice::parse("tsa:tau=0.2").unwrap_err();
        assert!(
            e.contains("allowed: period_ms, b_thres, share, redistribute)"),
            "{e}"
        );
        let e = PolicyChoice::parse("gift:tau").unwrap_err();
        assert!(
            e.contains("key=value") && e.contains("window_coupons"),
            "{e}"
        );
    }

    fn pi_config(spec: &str) -> PiConfig {
        PolicyChoice::parse(spec)
            .unwrap()
            .options
            .as_any()
            .downcast_ref::<PiOptions>()
            .expect("a pi choice")
            .0
            .clone()
    }

    #[test]
    fn pi_specs_parse_with_the_papers_defaults() {
        let c = pi_config("pi");
        assert_eq!(c.ts_ns, 300_000_000);
        assert_eq!(c.target, TargetSchedule::constant(80.0));
        assert_eq!(c.p_on, ProportionalOn::Error);
        assert_eq!(c.sensor, SensorConfig::default());
        // The default model and the paper's Ks = 1.4 s, Mp = 0.02.
        let (gains, _) = pi_control::design_gains(
            0.8,
            0.5,
            DesignSpec {
                ts_s: 0.3,
                ks_s: 1.4,
                mp: 0.02,
            },
        )
        .unwrap();
        assert_eq!(c.gains, gains);
        assert_eq!(
            PolicyChoice::parse("pi"),
            PolicyChoice::parse("pi:a=0.8:b=0.5")
        );
        assert_ne!(PolicyChoice::parse("pi"), PolicyChoice::parse("pi:b=0.25"));
        let c = pi_config(
            "pi:ts_ms=500:target=40@0/80@30.5:kp=2:ki=0.5:p_on=measurement:bw_min=2M:\
             bw_max=1G:sensor=instant:ost=3:filter=5",
        );
        assert_eq!(c.ts_ns, 500_000_000);
        assert_eq!(c.target.steps(), &[(0, 40.0), (30_500_000_000, 80.0)]);
        assert_eq!(c.gains, Gains { kp: 2.0, ki: 0.5 });
        assert_eq!(c.p_on, ProportionalOn::Measurement);
        assert_eq!(
            (c.bw_min_bytes_per_s, c.bw_max_bytes_per_s),
            (2 << 20, 1 << 30)
        );
        assert_eq!(
            c.sensor,
            SensorConfig {
                source: QueueSource::Instant,
                targets: TargetChoice::Ost(crate::model::OstId(3)),
                filter_samples: 5
            }
        );
        let pi = PolicyChoice::parse("pi:ts_ms=500")
            .unwrap()
            .controller_with(250, 4 << 20, 0);
        assert_eq!((pi.name(), pi.period_ns()), ("pi", Some(500_000_000)));
        // Not an allocator.
        assert!(PolicyChoice::parse("pi").unwrap().allocator(0).is_err());
    }

    #[test]
    fn bad_pi_specs_say_why() {
        for (spec, expected) in [
            ("pi:mp=1", "(0, 1)"),
            ("pi:mp=0", "(0, 1)"),
            ("pi:ks_ms=0", "1..="),
            ("pi:ks_ms=300", "r <= Mp"),
            ("pi:b=0", "non-zero"),
            ("pi:a=nan", "finite"),
            ("pi:kp=1", "go together"),
            ("pi:kp=1:ki=1:a=0.5", "unused"),
            ("pi:bw_min=0", "at least 1"),
            ("pi:bw_min=2G:bw_max=1G", "above bw_max"),
            ("pi:target=-5", "queue target"),
            ("pi:target=80@5", "start at 0"),
            ("pi:target=40@0/80@x", "seconds"),
            ("pi:target=40@0/80@0", "increasing"),
            ("pi:sensor=guess", "time_in_queue, instant, nrs"),
            ("pi:filter=0", "1..=1000"),
            ("pi:ost=-1", "target index"),
            ("pi:p_on=both", "error, measurement"),
            ("pi:speed=3", "allowed: ts_ms, target"),
        ] {
            let e = PolicyChoice::parse(spec).unwrap_err();
            assert!(e.contains(expected), "{spec}: {e}");
        }
    }

    #[test]
    fn aimd_specs_parse() {
        let choice = PolicyChoice::parse(
            "aimd:target=60:decrease=0.7:increase=4M:bw_min=1M:bw_max=512M:ts_ms=100:filter=2",
        )
        .unwrap();
        let c = &choice
            .options
            .as_any()
            .downcast_ref::<AimdOptions>()
            .unwrap()
            .0;
        assert_eq!(c.target, TargetSchedule::constant(60.0));
        assert_eq!(c.decrease, 0.7);
        assert_eq!(c.increase, Increase::StepBytesPerS(4 << 20));
        assert_eq!(
            (c.bw_min_bytes_per_s, c.bw_max_bytes_per_s),
            (1 << 20, 512 << 20)
        );
        assert_eq!(c.ts_ns, 100_000_000);
        assert_eq!(c.sensor.filter_samples, 2);
        assert_eq!(
            PolicyChoice::parse("aimd"),
            PolicyChoice::parse("aimd:increase=6.25%:decrease=0.5")
        );
        for (spec, expected) in [
            ("aimd:decrease=1", "(0, 1)"),
            ("aimd:increase=0", "positive"),
            ("aimd:increase=0%", "percentage"),
            ("aimd:kp=1", "allowed: ts_ms, target, decrease"),
        ] {
            let e = PolicyChoice::parse(spec).unwrap_err();
            assert!(e.contains(expected), "{spec}: {e}");
        }
        let aimd = choice.controller_with(250, 4 << 20, 0);
        assert_eq!((aimd.name(), aimd.period_ns()), ("aimd", Some(100_000_000)));
    }

    #[test]
    fn pi_openloop_specs_parse() {
        let choice =
            PolicyChoice::parse("pi-openloop:from=4M:to=12M:levels=3:hold=5:repeats=2:ts_ms=100")
                .unwrap();
        let c = &choice
            .options
            .as_any()
            .downcast_ref::<StaircaseOptions>()
            .unwrap()
            .0;
        assert_eq!(c.levels_bytes_per_s, vec![4 << 20, 8 << 20, 12 << 20]);
        assert_eq!((c.hold_periods, c.repeats, c.ts_ns), (5, 2, 100_000_000));
        for (spec, expected) in [
            ("pi-openloop:levels=0", "count in 1..=1000"),
            ("pi-openloop:from=0", "at least 1"),
            ("pi-openloop:kp=1", "allowed: from, to"),
        ] {
            let e = PolicyChoice::parse(spec).unwrap_err();
            assert!(e.contains(expected), "{spec}: {e}");
        }
        let c = choice.controller_with(250, 4 << 20, 0);
        assert_eq!(
            (c.name(), c.period_ns()),
            ("pi-openloop", Some(100_000_000))
        );
    }
}
