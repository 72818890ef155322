//! Helpers shared by the engine integration tests.
#![allow(dead_code)]

use pfsqos_sim::{run, RunOutput, Scenario};

pub fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "<test>").expect("test scenario parses")
}

pub fn run_quiet(s: &Scenario, policy: &str, seed: u64) -> RunOutput {
    run(s, policy, seed, &mut |_, _| {}).expect("run succeeds")
}

pub const MIB: f64 = (1u64 << 20) as f64;

/// Bytes a job completed in bins `[from, to)` summed over OSTs, as MiB/s.
pub fn mib_s(out: &RunOutput, job: usize, from_bin: usize, to_bin: usize) -> f64 {
    let per_bin = out.jobs[job].bytes_per_bin();
    let bytes: u64 = per_bin[from_bin..to_bin.min(per_bin.len())].iter().sum();
    bytes as f64 / MIB / ((to_bin - from_bin) as f64 * out.bin_ns as f64 / 1e9)
}

/// A device with zero overhead and no random penalty, so its bandwidth is exact.
pub const EXACT_DEVICE: &str = r#"
[[device]]
name = "exact"
read = [{ size = "4k", bandwidth_mib_s = 100.0 }]
write = [{ size = "4k", bandwidth_mib_s = 100.0 }]
"#;

/// A `[client]` table turning the client's page cache off: every call waits for its own RPCs
/// (as fio's `direct = 1` does), for tests whose hand computations count a process's calls
/// in flight. Append it at the end of a scenario's text.
pub const NO_CLIENT_CACHE: &str = r#"
[client]
max_dirty_mb = 0
max_dirty_client_mb = 0
max_read_ahead_mb = 0
max_read_ahead_per_file_mb = 0
"#;

/// Links fast enough never to matter (and no cost per message).
pub const FAST_NET: &str = r#"
[network]
client_link_mib_s = 1000000.0
server_link_mib_s = 1000000.0
latency_us = 1.0
message_us = 0.0
"#;

/// An `[[oss]]`'s keys for a server without CPU costs, for tests whose hand computations
/// count only the device and the links.
pub const NO_SERVER_CPU: &str = "rpc_cpu_us = 0.0\nrpc_cpu_us_per_mib = 0.0\nsync_cpu_us = 0.0\n";
