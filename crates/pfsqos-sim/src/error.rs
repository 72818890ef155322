//! Why a run did not happen: every cause is in the input (the policy spec, or a scenario the
//! engine cannot build), so a driver can tell the user what to change; a run that starts
//! completes, except when a file created during the run (`files_created = "first_io"`) finds
//! no OST with room: a `Scenario` error naming the create.

use std::fmt;

/// The error of `pfsqos_sim::run` and its variants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// The policy spec names no policy, takes no such option, or names a policy this engine
    /// cannot run (the fluid engine runs bandwidth allocators only).
    Policy(String),
    /// The scenario passed validation but the engine cannot build it (too many clients,
    /// processes or objects for its index types).
    Scenario(String),
    /// The scenario needs the other engine (an `[appset]` needs the fluid engine).
    Engine(String),
}

impl RunError {
    /// The message without its kind.
    pub fn message(&self) -> &str {
        match self {
            RunError::Policy(m) | RunError::Scenario(m) | RunError::Engine(m) => m,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Policy(m) => write!(f, "policy: {m}"),
            RunError::Scenario(m) => write!(f, "scenario: {m}"),
            RunError::Engine(m) => write!(f, "engine: {m}"),
        }
    }
}

impl std::error::Error for RunError {}
