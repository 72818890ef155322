//! `crrn`: Lustre's own client round robin, as a design. Every OST runs the NRS policy CRR-N
//! (`lctl set_param ost.OSS.ost_io.nrs_policies=crrn`), which serves the clients that have
//! RPCs queued in turn, a batch of at most `nrs_crrn_quantum` RPCs each. It is fair per
//! client node, not per job, and needs no controller after its one setup write: the baseline
//! a site already has without installing anything.
//!
//! This file is also the worked example of the recipe for adding a controller
//! (docs/architecture.md, "How to add a policy"): a [`Controller`], its options type, a
//! parser and a [`DESCRIPTOR`], plus the descriptor's one entry in
//! [`crate::spec::CONTROLLERS`].

use crate::sched::crrn::{CRRN_QUANTUM_DEFAULT, PARAM_CRRN_QUANTUM};
use crate::spec::{key_value, ControllerContext, ControllerDescriptor, Deployment, PolicyOptions};
use crate::{ControlWrite, Controller, Decision, DomainWrite, Observation};

/// Switches every domain to CRR-N with a quantum, then never acts again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crrn {
    /// RPCs a client sends per turn (Lustre's `nrs_crrn_quantum`, `1..=65535`).
    pub quantum_rpcs: u16,
}

impl Controller for Crrn {
    fn name(&self) -> &'static str {
        DESCRIPTOR.name
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        assert!(self.quantum_rpcs >= 1, "Lustre refuses a quantum of 0");
        let mut writes = Vec::with_capacity(2 * initial.domains.len());
        for d in &initial.domains {
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicies("crrn".to_string()),
            });
            // The quantum file belongs to CRR-N, so it is written once CRR-N runs.
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicyParam {
                    param: PARAM_CRRN_QUANTUM.to_string(),
                    text: self.quantum_rpcs.to_string(),
                },
            });
        }
        Decision::of_writes(writes)
    }

    fn period_ns(&self) -> Option<u64> {
        None
    }

    fn decide(&mut self, _observation: &Observation) -> Decision {
        Decision::default()
    }
}

/// `crrn[:quantum=N]`.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: "crrn",
    description: "Lustre's CRR-N on every OST: client nodes take turns, `quantum` RPCs each",
    parse: parse_crrn,
    deployment: Deployment::Scheduler,
};

#[derive(Debug, PartialEq)]
struct CrrnOptions {
    quantum_rpcs: u16,
}

impl PolicyOptions for CrrnOptions {
    fn controller(&self, _ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(Crrn {
            quantum_rpcs: self.quantum_rpcs,
        })
    }
}

fn parse_crrn(name: &'static str, options: &[&str]) -> Result<Box<dyn PolicyOptions>, String> {
    let mut quantum_rpcs = CRRN_QUANTUM_DEFAULT;
    for option in options {
        match key_value(name, option, "quantum")? {
            ("quantum", v) => {
                quantum_rpcs = v.parse().ok().filter(|&q| q >= 1).ok_or_else(|| {
                    format!(
                        "{name} option quantum=`{v}` is not a whole number of RPCs in 1..={}",
                        u16::MAX
                    )
                })?;
            }
            (key, _) => {
                return Err(format!(
                    "unknown option `{key}` of `{name}` (allowed: quantum)"
                ))
            }
        }
    }
    Ok(Box::new(CrrnOptions { quantum_rpcs }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OstId;
    use crate::spec::PolicyChoice;
    use crate::{DomainId, DomainObservation, TargetObservation};

    fn two_domains() -> Observation {
        let target = |ost| TargetObservation {
            ost: OstId(ost),
            queue_len_rpcs: 0,
            device_queue_rpcs: 0,
            device_time_in_queue_ns: 0,
            capacity_rpcs_per_s: 100,
            jobs: Vec::new(),
        };
        Observation {
            now_ns: 0,
            period_ns: 0,
            domains: (0..2)
                .map(|d| DomainObservation {
                    domain: DomainId(d),
                    targets: vec![target(d)],
                })
                .collect(),
            jobs: Vec::new(),
            clients: Vec::new(),
        }
    }

    /// The spec reaches the registry through the descriptor alone, and its setup starts CRR-N
    /// with the quantum on every domain, in that order (the quantum file is CRR-N's, ENODEV
    /// before it runs).
    #[test]
    fn the_spec_starts_crrn_with_its_quantum_on_every_domain() {
        let choice = PolicyChoice::parse("crrn:quantum=3").unwrap();
        let mut c = choice.controller_with(1000, 1 << 20, 0);
        assert_eq!(c.name(), "crrn");
        assert_eq!(c.period_ns(), None);
        let writes = c.setup(&two_domains()).writes;
        let want: Vec<_> = [DomainId(0), DomainId(1)]
            .into_iter()
            .flat_map(|domain| {
                [
                    DomainWrite {
                        domain,
                        write: ControlWrite::NrsPolicies("crrn".into()),
                    },
                    DomainWrite {
                        domain,
                        write: ControlWrite::NrsPolicyParam {
                            param: "nrs_crrn_quantum".into(),
                            text: "3".into(),
                        },
                    },
                ]
            })
            .collect();
        assert_eq!(writes, want);
        assert!(c.decide(&two_domains()).writes.is_empty());
        // Without options, Lustre's default quantum.
        let default = PolicyChoice::parse("crrn").unwrap();
        assert_eq!(
            default
                .controller_with(1000, 1 << 20, 0)
                .setup(&two_domains())
                .writes[1]
                .write,
            ControlWrite::NrsPolicyParam {
                param: "nrs_crrn_quantum".into(),
                text: CRRN_QUANTUM_DEFAULT.to_string(),
            }
        );
    }

    #[test]
    fn bad_options_name_the_option_and_what_is_allowed() {
        for (spec, needle) in [
            ("crrn:quantum=0", "1..=65535"),
            ("crrn:quantum=65536", "1..=65535"),
            ("crrn:quantum=x", "quantum=`x`"),
            ("crrn:rate=5", "allowed: quantum"),
            ("crrn:quantum", "not key=value"),
        ] {
            let err = PolicyChoice::parse(spec).unwrap_err();
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }
}
