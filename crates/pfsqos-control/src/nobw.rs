//! `No BW`: the Lustre default. FIFO service, no TBF rules (AdapTBF paper §IV-C).

use super::{ControlWrite, Controller, Decision, DomainWrite, Observation};

/// Switches every domain to FIFO and never acts again.
#[derive(Debug, Default)]
pub struct NoBw;

impl Controller for NoBw {
    fn name(&self) -> &'static str {
        "nobw"
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        Decision::of_writes(
            initial
                .domains
                .iter()
                .map(|d| DomainWrite {
                    domain: d.domain,
                    write: ControlWrite::NrsPolicies("fifo".to_string()),
                })
                .collect(),
        )
    }

    fn period_ns(&self) -> Option<u64> {
        None
    }

    fn decide(&mut self, _observation: &Observation) -> Decision {
        Decision::default()
    }
}
