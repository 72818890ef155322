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

// The spec of `nobw`: no options.

use crate::gift::Allocator;
use crate::spec::{no_options, ControllerContext, ControllerDescriptor, Deployment, PolicyOptions};

/// `nobw`: no bandwidth control.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: "nobw",
    description: "no control: every OST serves its requests first come, first served",
    parse: parse_nobw,
    deployment: Deployment::Nothing,
};

#[derive(Debug, PartialEq)]
pub(crate) struct NoBwOptions;

impl PolicyOptions for NoBwOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(NoBw)
    }
    fn allocator(&self, _seed: u64) -> Result<Option<Box<dyn Allocator>>, String> {
        Ok(None)
    }
}

pub(crate) fn parse_nobw(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    no_options(name, options)?;
    Ok(Box::new(NoBwOptions))
}
