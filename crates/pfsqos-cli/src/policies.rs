//! `pfsqos policies`: every scheduler, controller and placer, from their descriptors.

use pfsqos_core::control::spec::{Deployment, CONTROLLERS};
use pfsqos_core::place::PLACER_ROWS;
use pfsqos_core::sched::nrs::nrs_policy_rows;

/// The listing: one section per kind of policy, one line per policy (name, then what it does),
/// and the options or parameter files it takes.
pub fn listing() -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Schedulers (data plane: which queued RPC a server serves next; \
         `lctl set_param ost.OSS.ost_io.nrs_policies=NAME`):"
    );
    let _ = writeln!(
        out,
        "  {:<12} FIFO: first come, first served (always present)",
        "fifo"
    );
    for d in nrs_policy_rows::<()>() {
        let _ = writeln!(out, "  {:<12} {}", d.name, d.description);
        let _ = writeln!(out, "  {:<12}   files: {}", "", d.params.join(", "));
    }
    let _ = writeln!(
        out,
        "\nControllers (control plane: every period, observations in, rules or limits out; \
         `--policy NAME[:key=value]...`):"
    );
    for d in CONTROLLERS {
        let _ = writeln!(out, "  {:<12} {}", d.name, d.description);
        let _ = writeln!(out, "  {:<12}   acts on: {}", "", deployment(d.deployment));
    }
    let _ = writeln!(
        out,
        "\nPlacers (which OSTs a new file is striped over; a scenario's `placement = \"NAME[:key=value]...\"`):"
    );
    for d in PLACER_ROWS {
        let _ = writeln!(out, "  {:<12} {}", d.name, d.description);
        if !d.options.is_empty() {
            let _ = writeln!(out, "  {:<12}   options: {}", "", d.options.join(", "));
        }
    }
    out
}

fn deployment(d: Deployment) -> &'static str {
    pfsqos_bakeoff::policy_input::deployment_text(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every descriptor of every kind is listed, with its description.
    #[test]
    fn every_policy_is_listed() {
        let text = listing();
        for d in nrs_policy_rows::<()>() {
            assert!(
                text.contains(&format!("  {:<12} {}", d.name, d.description)),
                "{}",
                d.name
            );
        }
        for d in CONTROLLERS {
            assert!(
                text.contains(&format!("  {:<12} {}", d.name, d.description)),
                "{}",
                d.name
            );
        }
        for d in PLACER_ROWS {
            assert!(
                text.contains(&format!("  {:<12} {}", d.name, d.description)),
                "{}",
                d.name
            );
        }
    }
}
