//! Policy specs: the names and options that select a controller, shared by every driver (the
//! simulator's `--policy`, the live `ossd --policy`). Parsing a spec and building its controller
//! live here once, next to the controllers.
//!
//! A policy spec is a name, optionally followed by `:key=value` options, e.g. `adaptbf`,
//! `adaptbf:period_ms=200` or `adaptbf:demand=arrived:period_ms=50`. Options let one comparison
//! sweep a parameter (the AdapTBF paper's §IV-H allocation frequency) without one scenario file
//! per value.

use super::gift::{self, GiftControllerConfig};
use super::{AdapTbf, AdapTbfConfig, Controller, DemandSource, NoBw, StaticBw};

/// Policy names accepted in a spec, in the order reports list them: the AdapTBF paper's three,
/// then GIFT's seven baselines and GIFT itself.
pub const POLICY_NAMES: &[&str] = &[
    "nobw", "static", "adaptbf", "pofs", "bsip", "mbw", "tsa", "esa", "tmf", "rnd", "gift",
];

/// Longest accepted policy spec; specs also name output folders.
pub const POLICY_SPEC_LEN_MAX: usize = 64;

/// Longest control period an option may set (one minute).
pub const PERIOD_MS_MAX: u64 = 60_000;

/// A parsed policy spec.
#[derive(Clone, Debug, PartialEq, Eq)]
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
                    for option in options {
                        match option.split_once('=') {
                            Some(("period_ms", value)) => {
                                period_ms = Some(parse_period_ms(name, value)?);
                            }
                            _ => {
                                return Err(format!(
                                    "unknown {name} option `{option}` (allowed: period_ms=N)"
                                ))
                            }
                        }
                    }
                    Ok(PolicyChoice::Gift { name, period_ms })
                }
                None => Err(format!(
                    "unknown policy `{other}` (allowed: {}; options as in `adaptbf:period_ms=200`)",
                    POLICY_NAMES.join(", ")
                )),
            },
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
            PolicyChoice::Gift { name, period_ms } => {
                let defaults = GiftControllerConfig::default();
                let config = GiftControllerConfig {
                    period_ns: period_ms.map_or(defaults.period_ns, |ms| ms * 1_000_000),
                    // One TBF token is one RPC of the cluster's largest size.
                    rpc_size_bytes,
                    ..defaults
                };
                gift::controller_by_name(name, seed, config)
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
                period_ms: Some(5000)
            })
        );
        let e = PolicyChoice::parse("rnd:demand=served").unwrap_err();
        assert!(e.contains("allowed: period_ms=N"), "{e}");
        let e = PolicyChoice::parse("static:period_ms=5").unwrap_err();
        assert!(e.contains("takes no options"), "{e}");
        let e = PolicyChoice::parse("adaptbf:period_ms=0").unwrap_err();
        assert!(e.contains("1..=60000"), "{e}");
        let e = PolicyChoice::parse("adaptbf:demand=guess").unwrap_err();
        assert!(e.contains("served, arrived"), "{e}");
        let e = PolicyChoice::parse("adaptbf:speed=3").unwrap_err();
        assert!(e.contains("period_ms, demand"), "{e}");
        let e = PolicyChoice::parse("adaptbf:period_ms").unwrap_err();
        assert!(e.contains("key=value"), "{e}");
        assert!(PolicyChoice::parse(&"a".repeat(65)).is_err());
    }
}
