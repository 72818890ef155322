//! Checks of policy names given by a user (the command line, the Python package), with the
//! messages both show: the simulator's refusal, then the closest known name.

use pfsqos_report::POLICIES_MAX;
use pfsqos_sim::{PolicyChoice, ScenarioError, POLICY_NAMES};

/// "; did you mean `adaptbf`?" when a message refuses an unknown policy name close to a known
/// one (the simulator's message names it as ``unknown policy `NAME` ``); empty otherwise.
pub fn policy_suggestion(message: &str) -> String {
    const MARK: &str = "unknown policy `";
    let Some(start) = message.find(MARK).map(|i| i + MARK.len()) else {
        return String::new();
    };
    let Some(len) = message[start..].find('`') else {
        return String::new();
    };
    let name = &message[start..start + len];
    crate::suggest::did_you_mean(name, POLICY_NAMES.iter().copied())
}

/// A scenario file's policy spec (`field` of `file`), parsed once: refused like any other
/// scenario error.
pub fn check_scenario_policy(
    file: &str,
    field: &str,
    name: &str,
) -> Result<PolicyChoice, ScenarioError> {
    PolicyChoice::parse(name).map_err(|message| ScenarioError {
        file: file.to_string(),
        field: field.to_string(),
        value: Some(name.to_string()),
        message,
    })
}

/// The policies of one comparison, parsed once: 1 to [`POLICIES_MAX`], each known, none twice.
pub fn check_policy_list(policies: &[String]) -> Result<Vec<PolicyChoice>, String> {
    if policies.is_empty() || policies.len() > POLICIES_MAX {
        return Err(format!(
            "compare needs 1 to {POLICIES_MAX} policies, got {} (allowed: {})",
            policies.len(),
            POLICY_NAMES.join(", ")
        ));
    }
    let mut choices = Vec::with_capacity(policies.len());
    for (i, p) in policies.iter().enumerate() {
        choices.push(PolicyChoice::parse(p)?);
        if policies[..i].contains(p) {
            return Err(format!("policy `{p}` is listed twice"));
        }
    }
    Ok(choices)
}

/// Where a controller's decisions take effect, in words (`pfsqos policies`).
pub fn deployment_text(d: pfsqos_core::control::spec::Deployment) -> &'static str {
    use pfsqos_core::control::spec::Deployment;
    match d {
        Deployment::Nothing => "nothing (the baseline)",
        Deployment::ServerRules => "TBF rules on each OSS (the Lustre agent runs it alone)",
        Deployment::Coordinated => {
            "caps on every OST from a global view (agents and a coordinator)"
        }
        Deployment::Scheduler => {
            "fair-queuing weights in every server (pfsqos's ossd; not in Lustre)"
        }
        Deployment::ClientLimits => "bandwidth limits on the client nodes (tc)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_checked() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_policy_list(&list(&["nobw", "static"])).is_ok());
        let e = check_policy_list(&list(&["nobw", "bogus"])).unwrap_err();
        assert!(e.contains("bogus") && e.contains("nobw"), "{e}");
        assert!(check_policy_list(&list(&["nobw", "nobw"])).is_err());
        assert!(check_policy_list(&[]).is_err());
    }

    #[test]
    fn a_close_name_is_suggested() {
        let e = pfsqos_sim::check_policy_spec("adaptfb").unwrap_err();
        assert!(policy_suggestion(&e).contains("`adaptbf`"), "{e}");
        assert_eq!(policy_suggestion("nothing about policies"), "");
    }

    #[test]
    fn scenario_policies_name_the_field() {
        let e = check_scenario_policy("f.toml", "policy.default", "bogus").unwrap_err();
        assert_eq!(e.field, "policy.default");
        assert_eq!(e.value.as_deref(), Some("bogus"));
    }
}
