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
use super::{AdapTbf, AdapTbfConfig, Controller, DemandSource, NoBw, StaticBw};

/// Policy names accepted in a spec, in the order reports list them: the AdapTBF paper's three,
/// then GIFT's seven baselines and GIFT itself.
pub const POLICY_NAMES: &[&str] = &[
    "nobw", "static", "adaptbf", "pofs", "bsip", "mbw", "tsa", "esa", "tmf", "rnd", "gift",
];

/// Longest accepted policy spec; specs also name output folders (GIFT with all its options
/// fits).
pub const POLICY_SPEC_LEN_MAX: usize = 128;

/// Largest receding window `N` an option may set, in coupon units (the authors' code: 1e6).
pub const WINDOW_COUPONS_MAX: u64 = 1_000_000_000_000;

/// Largest finite regret budget an option may set, node-hours (about 10^4 nodes for 10^5 h).
pub const REGRET_BUDGET_NODE_HOURS_MAX: f64 = 1e9;

/// Longest control period an option may set.
pub const PERIOD_MS_MAX: u64 = crate::lustre::CONTROL_PERIOD_MS_MAX;

/// A parsed policy spec.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyChoice {
    NoBw,
    Static,
    AdapTbf {
        /// `None`: the scenario's `policy.period_ms`.
        period_ms: Option<u64>,
        demand: DemandSource,
    },
    /// GIFT (`gift`) or one of its baselines, by name (one of `gift::POLICY_NAMES`).
    Gift {
        name: &'static str,
        /// `None`: GIFT's 10 s decision interval.
        period_ms: Option<u64>,
        /// `tau`, `b_thres`, `window_coupons`, `regret_budget_node_hours`, and the
        /// artifact-faithful options `share`, `redistribute`, `constraint3`, `window`,
        /// `system_gate`, `throttle` (only those the policy takes, see `gift::option_names`;
        /// `docs/scenarios.md`).
        options: GiftOptions,
    },
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
        let no_options = |choice: PolicyChoice| {
            if let Some(o) = options.first() {
                Err(format!("policy `{name}` takes no options, got `{o}`"))
            } else {
                Ok(choice)
            }
        };
        match name {
            "nobw" => no_options(PolicyChoice::NoBw),
            "static" => no_options(PolicyChoice::Static),
            "adaptbf" => {
                let mut period_ms = None;
                let mut demand = DemandSource::default();
                for option in options {
                    let (key, value) = option
                        .split_once('=')
                        .ok_or_else(|| format!("option `{option}` of `{name}` is not key=value"))?;
                    match key {
                        "period_ms" => period_ms = Some(parse_period_ms(name, value)?),
                        "demand" => {
                            demand = match value {
                                "served" => DemandSource::Served,
                                "arrived" => DemandSource::Arrived,
                                other => {
                                    return Err(format!(
                                        "adaptbf option demand=`{other}` is not allowed \
                                         (allowed: served, arrived)"
                                    ))
                                }
                            }
                        }
                        other => {
                            return Err(format!(
                                "unknown adaptbf option `{other}` (allowed: period_ms, demand)"
                            ))
                        }
                    }
                }
                Ok(PolicyChoice::AdapTbf { period_ms, demand })
            }
            other => match gift::POLICY_NAMES.iter().find(|n| **n == other) {
                Some(name) => {
                    let mut period_ms = None;
                    let mut opts = GiftOptions::default();
                    let takes = gift::option_names(name);
                    let allowed = || {
                        let mut all = vec!["period_ms"];
                        all.extend_from_slice(takes);
                        all.join(", ")
                    };
                    for option in options {
                        let (key, value) = option.split_once('=').ok_or_else(|| {
                            format!(
                                "option `{option}` of `{name}` is not key=value (allowed: {})",
                                allowed()
                            )
                        })?;
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
                                                "{name} option window_coupons=`{value}` is not a \
                                                 whole number in 1..={WINDOW_COUPONS_MAX}"
                                            )
                                        })?,
                                )
                            }
                            "regret_budget_node_hours" => {
                                opts.regret_budget_node_hours = Some(
                                    value
                                        .parse::<f64>()
                                        .ok()
                                        .filter(|v| {
                                            (0.0..=REGRET_BUDGET_NODE_HOURS_MAX).contains(v)
                                        })
                                        .ok_or_else(|| {
                                            format!(
                                                "{name} option regret_budget_node_hours=`{value}` \
                                                 is not a number in \
                                                 0..={REGRET_BUDGET_NODE_HOURS_MAX} (omit it for \
                                                 an unbounded budget)"
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
                    Ok(PolicyChoice::Gift {
                        name,
                        period_ms,
                        options: opts,
                    })
                }
                None => Err(format!(
                    "unknown policy `{other}` (allowed: {}; options as in `adaptbf:period_ms=200`)",
                    POLICY_NAMES.join(", ")
                )),
            },
        }
    }

    /// The bandwidth allocator of a GIFT-family choice (for drivers that apply per-OST caps
    /// themselves, such as the fluid simulator); `Ok(None)` for `nobw` (no caps: every OST
    /// shares its bandwidth first come, first served); an error for `static` and `adaptbf`,
    /// which are TBF controllers, not allocators.
    pub fn allocator(&self, seed: u64) -> Result<Option<Box<dyn Allocator>>, String> {
        match self {
            PolicyChoice::NoBw => Ok(None),
            PolicyChoice::Gift { name, options, .. } => Ok(Some(
                gift::allocator_by_name(name, seed, *options)
                    .expect("names come from gift::POLICY_NAMES"),
            )),
            PolicyChoice::Static | PolicyChoice::AdapTbf { .. } => Err(format!(
                "policy `{}` is a TBF controller, not a bandwidth allocator (allowed here: nobw, {})",
                self.name(),
                gift::POLICY_NAMES.join(", ")
            )),
        }
    }

    /// The policy's name (without options).
    pub fn name(&self) -> &'static str {
        match self {
            PolicyChoice::NoBw => "nobw",
            PolicyChoice::Static => "static",
            PolicyChoice::AdapTbf { .. } => "adaptbf",
            PolicyChoice::Gift { name, .. } => name,
        }
    }

    /// The decision interval a GIFT-family choice runs at (its `period_ms` or GIFT's 10 s);
    /// `None` for the others.
    pub fn allocator_period_ns(&self) -> Option<u64> {
        match self {
            PolicyChoice::Gift { period_ms, .. } => Some(
                period_ms.map_or(GiftControllerConfig::default().period_ns, |ms| {
                    ms * 1_000_000
                }),
            ),
            _ => None,
        }
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
        match self {
            PolicyChoice::NoBw => Box::new(NoBw),
            PolicyChoice::Static => Box::new(StaticBw),
            PolicyChoice::AdapTbf { period_ms, demand } => Box::new(AdapTbf::new(AdapTbfConfig {
                period_ns: period_ms.unwrap_or(period_ms_default) * 1_000_000,
                demand: *demand,
                ..AdapTbfConfig::default()
            })),
            PolicyChoice::Gift {
                name,
                period_ms,
                options,
            } => {
                let defaults = GiftControllerConfig::default();
                let config = GiftControllerConfig {
                    period_ns: period_ms.map_or(defaults.period_ns, |ms| ms * 1_000_000),
                    // One TBF token is one RPC of the cluster's largest size.
                    rpc_size_bytes,
                    ..defaults
                };
                gift::controller_with_options(name, seed, config, *options)
                    .expect("names come from gift::POLICY_NAMES")
            }
        }
    }
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

    #[test]
    fn specs_parse() {
        assert_eq!(PolicyChoice::parse("nobw"), Ok(PolicyChoice::NoBw));
        assert_eq!(
            PolicyChoice::parse("adaptbf:period_ms=200:demand=arrived"),
            Ok(PolicyChoice::AdapTbf {
                period_ms: Some(200),
                demand: DemandSource::Arrived
            })
        );
        assert_eq!(
            PolicyChoice::parse("adaptbf"),
            Ok(PolicyChoice::AdapTbf {
                period_ms: None,
                demand: DemandSource::Served
            })
        );
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
            PolicyChoice::Static
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
            PolicyChoice::parse("gift:period_ms=5000"),
            Ok(PolicyChoice::Gift {
                name: "gift",
                period_ms: Some(5000),
                options: GiftOptions::default(),
            })
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
        let PolicyChoice::Gift { options, .. } = &choice else {
            panic!("{choice:?}")
        };
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
        let PolicyChoice::Gift { options, .. } = &choice else {
            panic!("{choice:?}")
        };
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
}
