//! A client limit changed while the shaper holds an RPC: the rest of that RPC goes at the new
//! rate (as tc's TBF shapes by packet), and the transfer booked behind it moves with it.
//! Times hand-computed below; the network and device are fast enough that everything but the
//! shaper's holds fits in a 100 µs slack.

use crate::engine_common::*;

use pfsqos_core::control::{ClientId, ClientWrite, Controller, Decision, Observation};

const M: u64 = 1 << 20;
/// The device's time for a 1 MiB write (`EXACT_DEVICE`: 100 MiB/s, no overhead).
const DEVICE_1M_NS: u64 = 10_000_000;
/// Request latency, link times (1 µs each at `FAST_NET`), rounding: well under this.
const SLACK_NS: u64 = 100_000;

/// One client writes three 1 MiB RPCs at once (iodepth 3) to one OST.
fn three_rpcs() -> String {
    format!(
        r#"
name = "relimit"
[simulation]
duration_s = 10.0
[cluster]
clients = 1
{FAST_NET}
{EXACT_DEVICE}
[[oss]]
name = "oss0"
osts = 1
device = "exact"
{NO_SERVER_CPU}
[[job]]
id = "a"
nodes = 1
clients = [0]
[[job.processes]]
rw = "write"
bs = "1M"
size = "3M"
iodepth = 3
"#
    )
}

/// Sets client 0's limit to `first` before the run, then to `second` at the first step
/// (`at_ns`), and leaves it.
struct StepLimit {
    first_bytes_per_s: u64,
    second_bytes_per_s: u64,
    at_ns: u64,
    stepped: bool,
}

fn limit(bytes_per_s: u64) -> Decision {
    Decision {
        writes: Vec::new(),
        client_writes: vec![ClientWrite {
            client: ClientId(0),
            limit_bytes_per_s: Some(bytes_per_s),
        }],
    }
}

impl Controller for StepLimit {
    fn name(&self) -> &'static str {
        "step-limit"
    }
    fn setup(&mut self, _initial: &Observation) -> Decision {
        limit(self.first_bytes_per_s)
    }
    fn period_ns(&self) -> Option<u64> {
        Some(self.at_ns)
    }
    fn decide(&mut self, observation: &Observation) -> Decision {
        if self.stepped {
            return Decision::default();
        }
        assert_eq!(observation.now_ns, self.at_ns);
        self.stepped = true;
        limit(self.second_bytes_per_s)
    }
}

/// The run's end (the last reply) with client 0's limit stepped from `first` to `second` at
/// `at_ns`.
fn end_ns(first_bytes_per_s: u64, second_bytes_per_s: u64, at_ns: u64) -> u64 {
    let out = pfsqos_sim::run_with_controller(
        &scenario(&three_rpcs()),
        Box::new(StepLimit {
            first_bytes_per_s,
            second_bytes_per_s,
            at_ns,
            stepped: false,
        }),
        1,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(out.jobs[0].finished);
    assert_eq!(out.jobs[0].bytes_written, 3 * M);
    out.end_ns
}

fn assert_within_slack(got_ns: u64, want_ns: u64) {
    assert!(
        (want_ns..want_ns + SLACK_NS).contains(&got_ns),
        "ended at {got_ns} ns, the shaper's holds give {want_ns} ns + at most {SLACK_NS} ns"
    );
}

#[test]
fn a_limit_raised_mid_rpc_sends_the_rest_at_the_new_rate() {
    // 1 MiB/s from the start: RPC 0 starts at ~0 and holds the uplink's shaper until ~1 s.
    // At 0.5 s the limit rises to 4 MiB/s: its last ~512 KiB take ~125 ms, so RPC 1 starts at
    // ~0.625 s, holds 250 ms, RPC 2 starts at ~0.875 s and is done 10 ms later on the device.
    // (Holding RPC 0's whole second, and RPC 1 booked behind it, at the old rate, the run
    // would end at ~2.01 s: the engine did before.)
    let got = end_ns(M, 4 * M, 500_000_000);
    assert_within_slack(got, 875_000_000 + DEVICE_1M_NS);
}

#[test]
fn a_limit_lowered_mid_rpc_holds_the_rest_at_the_new_rate() {
    // 4 MiB/s from the start: RPC 0 holds the shaper until ~250 ms. At 125 ms the limit falls
    // to 1 MiB/s: its last ~512 KiB take ~0.5 s, so RPC 1 starts at ~0.625 s, holds 1 s, RPC 2
    // starts at ~1.625 s and is done 10 ms later. (With RPC 0's hold, and RPC 1 booked behind
    // it, at the old rate, ~0.51 s: the engine did before.)
    let got = end_ns(4 * M, M, 125_000_000);
    assert_within_slack(got, 1_625_000_000 + DEVICE_1M_NS);
}

#[test]
fn a_limit_that_does_not_change_holds_each_rpc_for_its_size() {
    // 2 MiB/s throughout (set again at 0.1 s): RPCs start at ~0, 0.5 and 1 s.
    let got = end_ns(2 * M, 2 * M, 100_000_000);
    assert_within_slack(got, 1_000_000_000 + DEVICE_1M_NS);
}

/// Every client limit a controller writes is a control write: the setup's and the step's
/// are both counted (as `EngineStats::client_writes`), and the summary's `control_writes`
/// includes them, though `control_log` (rules only) is empty.
#[test]
fn client_limits_are_counted_as_control_writes() {
    let out = pfsqos_sim::run_with_controller(
        &scenario(&three_rpcs()),
        Box::new(StepLimit {
            first_bytes_per_s: 10 * M,
            second_bytes_per_s: 20 * M,
            at_ns: 50_000_000,
            stepped: false,
        }),
        1,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(out.control_log.is_empty());
    assert_eq!(out.engine.client_writes, 2);
    let summary = pfsqos_report::summarize(&out);
    assert_eq!(summary.control_writes, 2);
}
