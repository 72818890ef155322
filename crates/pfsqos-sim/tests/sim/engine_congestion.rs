//! The device's optional congestion curve (`[[device]] congestion`, `crate::device`) as the
//! RPC-level engine applies it: the queue it reads is the dispatch queue at the start of
//! service, a curve changes nothing where the queue stays below its first loss, and the
//! fluid engine, which has no queue, refuses it.

use crate::engine_common::*;

/// One client writing 4 MiB requests for 5 s to a serial 100 MiB/s device (40 ms a request),
/// `iodepth` in flight, the device given the congestion rows `curve` (TOML, may be empty).
fn writer(iodepth: u32, curve: &str, engine: &str) -> String {
    format!(
        r#"
name = "congestion"
[simulation]
duration_s = 5.0
engine = "{engine}"
[cluster]
clients = 1
stripe_size = "4M"
{FAST_NET}
[[device]]
name = "exact"
read = [{{ size = "4k", bandwidth_mib_s = 100.0 }}]
write = [{{ size = "4k", bandwidth_mib_s = 100.0 }}]
congestion = [{curve}]
[[oss]]
name = "oss0"
osts = 1
device = "exact"
[[job]]
id = "w"
nodes = 1
[[job.processes]]
rw = "write"
bs = "4M"
size = "100G"
iodepth = {iodepth}
# `iodepth` requests in flight, as fio's libaio with direct = 1 keeps them.
direct = true
"#
    )
}

fn bytes_written(text: &str) -> u64 {
    let out = run_quiet(&scenario(text), "nobw", 1);
    out.jobs[0].bytes_per_bin().iter().sum()
}

const HALF_FROM_TWO: &str = "{ queue_requests = 1, throughput_fraction = 1.0 }, \
                             { queue_requests = 2, throughput_fraction = 0.5 }";

#[test]
fn a_curve_costs_only_where_the_queue_reaches_it() {
    // Without a curve the device serves 25 requests a second whatever the depth.
    let plain_1 = bytes_written(&writer(1, "", "rpc"));
    let plain_8 = bytes_written(&writer(8, "", "rpc"));
    let four_mib = 4u64 << 20;
    assert!(plain_8 >= 120 * four_mib, "{plain_8}");
    // One request in flight: the dispatch queue is 1, where the curve is at full speed, so
    // the run is the same to the byte.
    assert_eq!(bytes_written(&writer(1, HALF_FROM_TWO, "rpc")), plain_1);
    // Eight in flight: the queue is 8, the device transfers at half speed, half the bytes.
    let congested_8 = bytes_written(&writer(8, HALF_FROM_TWO, "rpc"));
    let ratio = congested_8 as f64 / plain_8 as f64;
    assert!(
        (0.47..=0.53).contains(&ratio),
        "{congested_8} / {plain_8} = {ratio}"
    );
}

#[test]
fn the_fluid_engine_refuses_a_congestion_curve() {
    let s = scenario(&writer(8, HALF_FROM_TWO, "fluid"));
    let e = pfsqos_sim::run(&s, "nobw", 1, &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("congestion curve"), "{e}");
}

#[test]
fn congestion_rows_are_validated_in_the_scenario() {
    for (curve, needle) in [
        (
            "{ queue_requests = 4, throughput_fraction = 1.0 }, \
             { queue_requests = 2, throughput_fraction = 0.5 }",
            "strictly increasing queue_requests",
        ),
        (
            "{ queue_requests = 4, throughput_fraction = 1.5 }",
            "throughput fraction",
        ),
        (
            "{ queue_requests = 0, throughput_fraction = 0.5 }",
            "congestion queue length",
        ),
    ] {
        let e =
            pfsqos_sim::Scenario::from_toml_str(&writer(8, curve, "rpc"), "<test>").unwrap_err();
        assert!(e.to_string().contains(needle), "{curve}: {e}");
    }
}
