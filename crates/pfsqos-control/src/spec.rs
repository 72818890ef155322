//! Policy specs: the names and options that select a controller, shared by every driver (the
//! simulator's `--policy`, the live `ossd --policy`). Parsing a spec and building its controller
//! live here once, next to the controllers.
//!
//! A policy spec is a name, optionally followed by `:key=value` options, e.g. `adaptbf`,
//! `adaptbf:period_ms=200` or `adaptbf:demand=arrived:period_ms=50`. Options let one comparison
//! sweep a parameter (the AdapTBF paper's §IV-H allocation frequency) without one scenario file
//! per value.

use super::gift::Allocator;
use super::Controller;
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

/// Where a controller's decisions take effect, which says how it can be deployed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deployment {
    /// It decides nothing (`nobw`).
    Nothing,
    /// TBF rules one OSS's own agent writes from that OSS's `job_stats` alone.
    ServerRules,
    /// Caps on every OST from a global view: a coordinator over the OSSs' agents.
    Coordinated,
    /// Weights of a fair-queuing scheduler in every server (SFQ(D), DSFQ), which Lustre lacks.
    Scheduler,
    /// Bandwidth limits on the clients (`tc`).
    ClientLimits,
}

/// One controller, as every driver sees it: its spec name, a line saying what it does, how
/// its options parse (and so what it builds) and where its decisions take effect. Each
/// controller's file exports its descriptor; adding a controller is that file and one entry
/// in [`CONTROLLERS`].
#[derive(Clone, Copy)]
pub struct ControllerDescriptor {
    pub name: &'static str,
    /// One line, for listings and `--help`.
    pub description: &'static str,
    /// Parses the spec's `key=value` options (in order) for policy `name`.
    pub parse: ParseOptions,
    pub deployment: Deployment,
}

/// Every controller, in the order reports list policies: the AdapTBF paper's three, then
/// GIFT's seven baselines and GIFT itself, then vPFS, then PI control and its AIMD baseline,
/// then Lustre's CRR-N, then ThemisIO.
pub const CONTROLLERS: &[ControllerDescriptor] = &[
    crate::nobw::DESCRIPTOR,
    crate::static_bw::DESCRIPTOR,
    crate::adaptbf::DESCRIPTOR,
    crate::gift::options::DESCRIPTORS[0],
    crate::gift::options::DESCRIPTORS[1],
    crate::gift::options::DESCRIPTORS[2],
    crate::gift::options::DESCRIPTORS[3],
    crate::gift::options::DESCRIPTORS[4],
    crate::gift::options::DESCRIPTORS[5],
    crate::gift::options::DESCRIPTORS[6],
    crate::gift::options::DESCRIPTORS[7],
    crate::vpfs::DESCRIPTOR,
    crate::pi::options::PI,
    crate::pi::options::AIMD,
    crate::pi::options::OPEN_LOOP,
    crate::crrn::DESCRIPTOR,
    crate::themis::DESCRIPTOR,
];

const CONTROLLER_COUNT: usize = CONTROLLERS.len();

const fn descriptor_names<const N: usize>(list: &[ControllerDescriptor]) -> [&'static str; N] {
    assert!(list.len() == N);
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = list[i].name;
        i += 1;
    }
    names
}

/// Policy names accepted in a spec, in [`CONTROLLERS`] order.
pub const POLICY_NAMES: &[&str] = &descriptor_names::<CONTROLLER_COUNT>(CONTROLLERS);

/// The descriptor named `name`.
pub fn controller_descriptor(name: &str) -> Option<&'static ControllerDescriptor> {
    CONTROLLERS.iter().find(|d| d.name == name)
}

// Names are unique, so a spec names one controller.
const _: () = {
    let mut i = 0;
    while i < CONTROLLER_COUNT {
        let mut j = i + 1;
        while j < CONTROLLER_COUNT {
            assert!(!const_str_eq(POLICY_NAMES[i], POLICY_NAMES[j]));
            j += 1;
        }
        i += 1;
    }
};

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

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
        let row = controller_descriptor(name).ok_or_else(|| {
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
            let allocators: Vec<&str> = CONTROLLERS
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
pub(crate) fn key_value<'a>(
    name: &str,
    option: &'a str,
    allowed: &str,
) -> Result<(&'a str, &'a str), String> {
    option.split_once('=').ok_or_else(|| {
        format!("option `{option}` of `{name}` is not key=value (allowed: {allowed})")
    })
}

pub(crate) fn no_options(name: &str, options: &[&str]) -> Result<(), String> {
    match options.first() {
        Some(o) => Err(format!("policy `{name}` takes no options, got `{o}`")),
        None => Ok(()),
    }
}

/// Largest byte count a vPFS option takes (the scheduler's own bounds are checked again when
/// the write lands, with Lustre's errnos).
const VPFS_BYTES_MAX: u64 = 1 << 50;

/// A byte count: digits with an optional binary suffix (`k`, `M`, `G`, `T`, as scenario sizes).
pub(crate) fn parse_bytes(policy: &str, key: &str, value: &str) -> Result<u64, String> {
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

/// A finite number that `ok` accepts, `what` saying which.
pub(crate) fn parse_number(
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
pub(crate) fn parse_ms(policy: &str, key: &str, value: &str) -> Result<u64, String> {
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

pub(crate) fn parse_period_ms(policy: &str, value: &str) -> Result<u64, String> {
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
pub(crate) fn parse_unit(policy: &str, key: &str, value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| format!("{policy} option {key}=`{value}` is not a number in 0..=1"))
}

/// One of a fixed set of words (the GIFT family's artifact-faithful options).
pub(crate) fn parse_choice<T: Copy>(
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
    use crate::adaptbf::AdapTbfOptions;
    use crate::gift::options::GiftFamilyOptions;
    use crate::gift::{self, GiftOptions, ShareUnit, SystemGate, ThrottleLimit, WindowKind};
    use crate::pi::options::{AimdOptions, PiOptions, StaircaseOptions};
    use crate::pi::{
        self as pi_control, DesignSpec, Gains, Increase, PiConfig, ProportionalOn, QueueSource,
        SensorConfig, TargetChoice, TargetSchedule,
    };
    use crate::vpfs::{FairQueuing, VpfsOptions};
    use crate::DemandSource;

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
            CONTROLLERS.iter().map(|r| r.name).collect::<Vec<_>>()
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
