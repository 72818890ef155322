//! Builds the controller named on the command line. The controllers themselves live in
//! pfsqos-core; this only maps names to constructors with the scenario's parameters.

use pfsqos_core::control::{AdapTbf, AdapTbfConfig, Controller, NoBw, StaticBw};

use crate::scenario::Scenario;

/// Policy names accepted by `--policy` and `--policies`, in the order reports list them.
pub const POLICY_NAMES: &[&str] = &["nobw", "static", "adaptbf"];

/// The controller for `name`, or an error listing the allowed names.
pub fn controller_for(name: &str, scenario: &Scenario) -> Result<Box<dyn Controller>, String> {
    match name {
        "nobw" => Ok(Box::new(NoBw)),
        "static" => Ok(Box::new(StaticBw)),
        "adaptbf" => Ok(Box::new(AdapTbf::new(AdapTbfConfig {
            period_ns: scenario.policy.period_ms * 1_000_000,
            ..AdapTbfConfig::default()
        }))),
        other => Err(format!(
            "unknown policy `{other}` (allowed: {})",
            POLICY_NAMES.join(", ")
        )),
    }
}
