//! The RPC-level discrete-event engine. STUB: being written; the signature is final.

use crate::record::RunOutput;
use crate::scenario::Scenario;

/// Runs `scenario` under the controller named `policy` with `seed`. `progress` is called from
/// time to time with (simulated now, simulated end) so a driver can draw a progress bar.
pub fn run(
    scenario: &Scenario,
    policy: &str,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunOutput, String> {
    let _ = (scenario, policy, seed, progress);
    Err("the simulation engine is not implemented yet".to_string())
}
