//! What the engine reports about its devices and their space: the device's cumulative time in
//! queue (Linux's `time_in_queue`, PI control's sensor), OST utilization and iez's OSTCost.

use crate::engine_common::*;

use std::sync::{Arc, Mutex};

use pfsqos_core::control::{Controller, Decision, Observation};

/// Records, every second, the device's time in queue and the RPCs it served in the period.
struct Probe {
    seen: Arc<Mutex<Vec<(u64, u64, u64)>>>,
}

impl Controller for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn setup(&mut self, _initial: &Observation) -> Decision {
        Decision::default()
    }
    fn period_ns(&self) -> Option<u64> {
        Some(1_000_000_000)
    }
    fn decide(&mut self, o: &Observation) -> Decision {
        let t = &o.domains[0].targets[0];
        let served: u64 = t.jobs.iter().map(|j| j.rpcs_served).sum();
        self.seen
            .lock()
            .unwrap()
            .push((o.now_ns, t.device_time_in_queue_ns, served));
        Decision::default()
    }
}

fn one_writer(iodepth: u32) -> String {
    format!(
        r#"
name = "tiq"
[simulation]
duration_s = 5.0
[cluster]
clients = 1
stripe_size = "4M"
{FAST_NET}
{EXACT_DEVICE}
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

fn probe(text: &str) -> Vec<(u64, u64, u64)> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    pfsqos_sim::run_with_controller(
        &scenario(text),
        Box::new(Probe { seen: seen.clone() }),
        1,
        &mut |_, _| {},
    )
    .unwrap();
    let v = seen.lock().unwrap().clone();
    v
}

/// One request at a time: the counter advances by exactly one service time (4 MiB at
/// 100 MiB/s = 40 ms) per completed request, whenever it is read.
#[test]
fn time_in_queue_is_the_device_time_of_completed_requests() {
    let seen = probe(&one_writer(1));
    assert!(seen.len() >= 4, "{seen:?}");
    let service_ns = 40_000_000;
    let mut served_total = 0;
    for &(_, tiq_ns, served) in &seen {
        served_total += served;
        assert_eq!(tiq_ns, served_total * service_ns, "{seen:?}");
    }
    // The device is busy all the time: 25 requests a second.
    assert!(served_total >= 4 * 24, "{served_total}");
}

/// With four calls in flight on a serial device, the mean queue the counter gives over a
/// period (Δtime_in_queue / Δt) is about four: three waiting, one in service (Little's law).
#[test]
fn time_in_queue_over_a_period_is_the_mean_device_queue() {
    let seen = probe(&one_writer(4));
    for pair in seen.windows(2).skip(1) {
        let ((t0, q0, _), (t1, q1, _)) = (pair[0], pair[1]);
        let mean = (q1 - q0) as f64 / (t1 - t0) as f64;
        assert!((3.5..=4.0 + 1e-9).contains(&mean), "mean queue {mean}");
    }
}

fn two_osts(extra: &str, placement: &str) -> String {
    format!(
        r#"
name = "space"
[simulation]
duration_s = 100.0
[cluster]
clients = 1
stripe_size = "1M"
placement = "{placement}"
{FAST_NET}
{EXACT_DEVICE}
[[oss]]
name = "oss0"
osts = 2
device = "exact"
{extra}
[[job]]
id = "w"
nodes = 1
[[job.processes]]
rw = "write"
bs = "1M"
size = "1G"
numjobs = 3
iodepth = 2
"#
    )
}

/// Three 1 GiB files round robin over two 10 GiB OSTs that hold 1 GiB each already: 2 GiB
/// written to one, 1 GiB to the other; utilizations 0.3 and 0.2, OSTCost 0.3 / 0.25.
#[test]
fn ost_space_counts_written_extents_and_ost_cost_follows_eq_7() {
    let s = scenario(&two_osts(
        "ost_capacity = \"10G\"\nost_used = \"1G\"",
        "roundrobin",
    ));
    let out = run_quiet(&s, "nobw", 1);
    assert!(out.jobs[0].finished);
    let gib = 1u64 << 30;
    let mut written: Vec<u64> = out.ost_space.iter().map(|o| o.written_bytes).collect();
    written.sort_unstable();
    assert_eq!(written, vec![gib, 2 * gib]);
    for o in &out.ost_space {
        assert_eq!(o.capacity_bytes, Some(10 * gib));
        assert_eq!(o.used_initial_bytes, gib);
    }
    let cost = out.ost_cost().unwrap();
    assert!((cost - 0.3 / 0.25).abs() < 1e-12, "{cost}");
    // Without sizes there is no utilization.
    let out = run_quiet(&scenario(&two_osts("", "roundrobin")), "nobw", 1);
    assert_eq!(out.ost_cost(), None);
}

#[test]
fn scenarios_name_a_known_placement_policy_and_a_fill_within_the_size() {
    let err = pfsqos_sim::Scenario::from_toml_str(&two_osts("", "nope"), "<t>").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("cluster.placement") && text.contains("roundrobin"),
        "{text}"
    );
    let err = pfsqos_sim::Scenario::from_toml_str(
        &two_osts("ost_capacity = \"1G\"\nost_used = \"2G\"", "roundrobin"),
        "<t>",
    )
    .unwrap_err();
    assert!(err.to_string().contains("ost_used"), "{err}");
    let err =
        pfsqos_sim::Scenario::from_toml_str(&two_osts("ost_used = \"2G\"", "roundrobin"), "<t>")
            .unwrap_err();
    assert!(err.to_string().contains("ost_capacity"), "{err}");
    let err = pfsqos_sim::Scenario::from_toml_str(&two_osts("", "iez"), "<t>").unwrap_err();
    assert!(err.to_string().contains("oss[0].ost_capacity"), "{err}");
}

/// Placement policies run through the scenario: `iez` plans a job's files from its first
/// run and sizes stripes by Method II (the file over its stripe count, in 128 KiB units),
/// `lustre` keeps the scenario's stripe size; both keep a file's stripes on distinct OSTs.
#[test]
fn placement_policies_place_through_the_scenario() {
    for placement in ["lustre", "iez"] {
        let s = scenario(&two_osts("ost_capacity = \"10G\"", placement));
        let out = run_quiet(&s, "nobw", 1);
        assert!(out.jobs[0].finished, "{placement}");
        let written: u64 = out.ost_space.iter().map(|o| o.written_bytes).sum();
        assert_eq!(written, 3 << 30, "{placement}");
    }
    // Stripe count 2 over the two OSTs: iez gives every file half its bytes on each.
    let text = two_osts("ost_capacity = \"10G\"", "iez")
        .replace("numjobs = 3", "numjobs = 3\nstripe_count = 2");
    let out = run_quiet(&scenario(&text), "nobw", 1);
    let written: Vec<u64> = out.ost_space.iter().map(|o| o.written_bytes).collect();
    assert_eq!(written, vec![3 << 29, 3 << 29]);
    let sc = scenario(&text);
    let jobs: Vec<_> = sc.jobs.iter().collect();
    let (placer, setup) = pfsqos_sim::placement::placer_for(&sc, 2, &jobs).unwrap();
    assert_eq!(setup.predictions.len(), 1);
    assert_eq!(setup.predictions[0].files, 3);
    // Constant per-file sizes: predicted as traced, no ARIMA order.
    assert_eq!(setup.predictions[0].order, None);
    drop(placer);
}
