//! The specs of GIFT and its baselines: `NAME[:period_ms=N][:OPTION=VALUE]...`, each member
//! taking the options [`super::option_names`] lists.

use super::{
    self as gift, Allocator, GiftControllerConfig, GiftOptions, ShareUnit, SystemGate,
    ThrottleLimit, WindowKind,
};
use crate::spec::{
    key_value, parse_choice, parse_period_ms, parse_unit, ControllerContext, ControllerDescriptor,
    Deployment, PolicyOptions, REGRET_BUDGET_NODE_HOURS_MAX, WINDOW_COUPONS_MAX,
};
use crate::Controller;

const fn member(name: &'static str, description: &'static str) -> ControllerDescriptor {
    ControllerDescriptor {
        name,
        description,
        parse: parse_gift_family,
        deployment: Deployment::Coordinated,
    }
}

/// GIFT's seven baselines (§V-A), then GIFT itself.
pub const DESCRIPTORS: [ControllerDescriptor; 8] = [
    member(
        "pofs",
        "POFS: max-min fair share per OST, without synchronizing an application's OSTs",
    ),
    member(
        "bsip",
        "BSIP: every application gets its most contended OST's fair share on every OST",
    ),
    member(
        "mbw",
        "MBW: the LP maximizing effective bandwidth, with no fairness floor",
    ),
    member(
        "tsa",
        "TSA: the LP that may throttle the smaller half of applications (by nodes)",
    ),
    member(
        "esa",
        "ESA: BSIP, then bandwidth gaps go to the smallest applications first",
    ),
    member(
        "tmf",
        "TMF: the LP that may throttle the most frequently appearing half",
    ),
    member(
        "rnd",
        "RND: the LP that may throttle a random half (seeded)",
    ),
    member(
        "gift",
        "GIFT: BSIP shares, coupons for throttled applications redeemed by an LP, a regret budget",
    ),
];

/// GIFT (`gift`) or one of its baselines.
#[derive(Debug, PartialEq)]
pub(crate) struct GiftFamilyOptions {
    pub(crate) name: &'static str,
    /// `None`: GIFT's 10 s decision interval.
    pub(crate) period_ms: Option<u64>,
    /// `tau`, `b_thres`, `window_coupons`, `regret_budget_node_hours`, and the
    /// artifact-faithful options `share`, `redistribute`, `constraint3`, `window`,
    /// `system_gate`, `throttle` (only those the policy takes, see `gift::option_names`;
    /// `docs/scenarios.md`).
    pub(crate) options: GiftOptions,
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

pub(crate) fn parse_gift_family(
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
