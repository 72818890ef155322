//! Builds the controller a policy spec names for a simulated scenario. Specs and their parsing
//! live in `pfsqos_core::control::spec`, shared with the live runtime; this only supplies the
//! scenario's defaults (control period, token size).

pub use pfsqos_core::control::spec::{
    check_policy_spec, PolicyChoice, PERIOD_MS_MAX, POLICY_NAMES, POLICY_SPEC_LEN_MAX,
};
use pfsqos_core::control::Controller;
use std::borrow::Cow;

use crate::scenario::Scenario;

/// A policy as the engines take it: a spec still to parse (`&str`, `String`: tests and quick
/// calls), or a [`PolicyChoice`] a driver parsed once when it checked the user's input (the
/// CLI, the bake-off, the Python package), which the engines use as it is.
pub trait PolicyArg {
    /// The parsed choice, or the parser's error listing what is allowed.
    fn choice(&self) -> Result<Cow<'_, PolicyChoice>, String>;
}

impl PolicyArg for str {
    fn choice(&self) -> Result<Cow<'_, PolicyChoice>, String> {
        PolicyChoice::parse(self).map(Cow::Owned)
    }
}

impl PolicyArg for String {
    fn choice(&self) -> Result<Cow<'_, PolicyChoice>, String> {
        self.as_str().choice()
    }
}

impl PolicyArg for PolicyChoice {
    fn choice(&self) -> Result<Cow<'_, PolicyChoice>, String> {
        Ok(Cow::Borrowed(self))
    }
}

/// The controller `choice` names under `scenario`: the scenario's `policy.period_ms` is the
/// default period, its `brw_size` the size of one token; `seed` feeds randomized policies (RND).
pub fn controller_for_choice(
    choice: &PolicyChoice,
    scenario: &Scenario,
    seed: u64,
) -> Box<dyn Controller> {
    choice.controller_with(
        scenario.policy.period_ms,
        scenario.cluster.brw_size.bytes(),
        seed,
    )
}

/// The controller for `spec`, or an error listing the allowed names and options.
pub fn controller_for(
    spec: &str,
    scenario: &Scenario,
    seed: u64,
) -> Result<Box<dyn Controller>, String> {
    Ok(controller_for_choice(
        &PolicyChoice::parse(spec)?,
        scenario,
        seed,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_supplies_the_default_period() {
        let scenario = Scenario::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/examples/two-jobs.toml"
        )))
        .unwrap();
        let c = controller_for("adaptbf", &scenario, 0).unwrap();
        assert_eq!(c.period_ns(), Some(scenario.policy.period_ms * 1_000_000));
        let c = controller_for("adaptbf:period_ms=40", &scenario, 0).unwrap();
        assert_eq!(c.period_ns(), Some(40_000_000));
        assert!(controller_for("warp", &scenario, 0).is_err());
    }
}
