//! Prints a digest of each scenario's run under its default policy and seed: a model change
//! that must leave runs byte-identical is checked by comparing these lines before and after.
//!
//! `cargo run -p pfsqos-sim --example run_digest -- scenarios/*/*.toml`

use std::hash::{Hash, Hasher};

fn main() {
    for arg in std::env::args().skip(1) {
        let path = std::path::Path::new(&arg);
        let scenario = match pfsqos_sim::Scenario::load(path) {
            Ok(s) => s,
            Err(e) => {
                println!("{arg}: not a runnable scenario: {e}");
                continue;
            }
        };
        let policy = scenario.policy.default.clone();
        let out = pfsqos_sim::run(&scenario, &policy, scenario.simulation.seed, &mut |_, _| {});
        let text = format!("{out:?}");
        // FxHash-free, std's SipHash with fixed keys: stable within one toolchain, which is
        // all a before/after comparison needs.
        #[allow(deprecated)]
        let mut h = std::hash::SipHasher::new();
        text.hash(&mut h);
        println!(
            "{arg}: {policy}: {} bytes, digest {:016x}",
            text.len(),
            h.finish()
        );
    }
}
