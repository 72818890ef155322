//! vPFS in the RPC engine: the `vpfs` controller starts SFQ(D)/DSFQ on every server, the engine
//! carries the DSFQ instances' synchronization messages between servers (counted per OSS), and
//! the total-service shares of the paper's asymmetric set-up (Fig. 5: one application on half
//! the servers, one on all) follow the weights only when the servers synchronize.

use crate::engine_common::{run_quiet, scenario, EXACT_DEVICE, NO_CLIENT_CACHE};
use pfsqos_sim::RunOutput;

const SERVERS: u32 = 4;

/// app1 on servers 0-1, app2 on all four; 16 processes each writing 1 MiB calls to one shared
/// file, continuously; app1's weight `w1`, app2's 1. Exact 100 MiB/s devices, fast links.
fn asymmetric(w1: u32, duration_s: f64) -> String {
    let mut s = format!(
        r#"
name = "vpfs-asymmetric"
[simulation]
duration_s = {duration_s}
[cluster]
clients = 4
brw_size = "1M"
stripe_size = "1M"
[network]
client_link_mib_s = 100000.0
server_link_mib_s = 100000.0
latency_us = 50.0
{EXACT_DEVICE}
"#
    );
    for i in 0..SERVERS {
        s.push_str(&format!(
            "[[oss]]\nname = \"s{i}\"\nosts = 1\ndevice = \"exact\"\n"
        ));
    }
    s.push_str(&format!(
        r#"
[[job]]
id = "app1"
nodes = 2
weight = {w1}
clients = [0, 1]
[[job.processes]]
rw = "write"
bs = "2M"
size = "64G"
numjobs = 16
file = "shared"
stripe_count = 2
stripe_offset = 0

[[job]]
id = "app2"
nodes = 2
weight = 1
clients = [2, 3]
[[job.processes]]
rw = "write"
bs = "4M"
size = "64G"
numjobs = 16
file = "shared"
stripe_count = 4
stripe_offset = 0
"#
    ));
    // PVFS2, which vPFS ran on, has no client cache: each call waits for its RPCs.
    s.push_str(NO_CLIENT_CACHE);
    s
}

/// app1's share of all bytes completed after the first second (start-up excluded).
fn app1_share(out: &RunOutput) -> f64 {
    let bytes = |j: usize| -> u64 { out.jobs[j].bytes_per_bin()[10..].iter().sum() };
    bytes(0) as f64 / (bytes(0) + bytes(1)) as f64
}

fn messages(out: &RunOutput) -> (u64, u64) {
    let broadcasts = out.sync.iter().map(|s| s.counters.broadcasts_out).sum();
    let received = out.sync.iter().map(|s| s.counters.messages_in).sum();
    (broadcasts, received)
}

#[test]
fn only_synchronized_servers_share_the_total_bandwidth_by_weight() {
    let s = scenario(&asymmetric(2, 6.0));
    // Unmanaged, app2 has twice the servers and takes two thirds.
    let fifo = run_quiet(&s, "nobw", 1);
    assert!(
        (app1_share(&fifo) - 1.0 / 3.0).abs() < 0.05,
        "{}",
        app1_share(&fifo)
    );
    assert_eq!(messages(&fifo), (0, 0));
    // SFQ(D) alone shares each server 2:1, but app2 also has the two servers app1 never
    // uses: the total stays far from 2:1 and no server says anything.
    let local = run_quiet(&s, "vpfs:sched=sfqd", 1);
    assert!(app1_share(&local) < 0.6, "{}", app1_share(&local));
    assert_eq!(messages(&local), (0, 0));
    // DSFQ with a broadcast per request (threshold 0, the original DSFQ) and with vPFS's
    // 10 MiB threshold: the total is 2:1 within 3 %.
    let every = run_quiet(&s, "vpfs:sync=threshold:threshold=0", 1);
    let batched = run_quiet(&s, "vpfs:sync=threshold:threshold=10M", 1);
    // And with PFSsim's time threshold: a broadcast of every flow's service each 50 ms.
    let timed = run_quiet(&s, "vpfs:sync=time:sync_interval_ms=50", 1);
    for (name, out) in [
        ("every request", &every),
        ("10 MiB", &batched),
        ("50 ms", &timed),
    ] {
        let share = app1_share(out);
        assert!((share - 2.0 / 3.0).abs() < 0.02, "{name}: {share}");
        let (broadcasts, received) = messages(out);
        // Each broadcast reaches every other server; those still in flight at the end do not.
        assert!(broadcasts > 0, "{name}");
        assert!(
            received <= broadcasts * u64::from(SERVERS - 1)
                && received + 64 * u64::from(SERVERS - 1) >= broadcasts * u64::from(SERVERS - 1),
            "{name}: {broadcasts} broadcasts, {received} received"
        );
        assert!(out
            .sync
            .iter()
            .all(|s| s.counters.rejected_in == 0 && s.counters.dropped_out == 0));
    }
    // The time threshold sends one report per flow a server serves and interval (6 s /
    // 50 ms = 120 intervals; servers 0-1 serve both applications, 2-3 only app2: 6 flows
    // in all), not one per request.
    let reports = messages(&timed).0;
    assert!(
        (100 * 6..=121 * 6).contains(&reports),
        "{reports} reports from the servers"
    );
    // The threshold batches: far fewer messages for the same fairness.
    assert!(
        messages(&batched).0 * 5 < messages(&every).0,
        "{:?} vs {:?}",
        messages(&batched),
        messages(&every)
    );
}

#[test]
fn layout_driven_sync_announces_flows_and_nothing_else() {
    let s = scenario(&asymmetric(2, 4.0));
    let out = run_quiet(&s, "vpfs:sync=layout", 1);
    let (broadcasts, _) = messages(&out);
    // One announcement per flow per server serving it (2 + 4); departures only at the end
    // of the run, if a flow went idle for a second, which continuous writers never do.
    assert_eq!(broadcasts, 6, "{:?}", out.sync);
    let share = app1_share(&out);
    assert!((share - 2.0 / 3.0).abs() < 0.03, "{share}");
}

#[test]
fn dsfq_runs_are_deterministic() {
    let s = scenario(&asymmetric(3, 2.0));
    let a = run_quiet(&s, "vpfs:sync=threshold:threshold=1M", 7);
    let b = run_quiet(&s, "vpfs:sync=threshold:threshold=1M", 7);
    assert_eq!(a, b);
}

#[test]
fn a_job_without_a_weight_weighs_its_node_count() {
    let text = asymmetric(5, 1.0).replace("weight = 1\nclients = [2, 3]", "clients = [2, 3]");
    assert!(
        !text.contains("weight = 1\n"),
        "the second job keeps no weight"
    );
    let out = run_quiet(&scenario(&text), "vpfs", 1);
    assert_eq!((out.jobs[0].weight, out.jobs[1].weight), (5, 2));
    // The controller gave app2 its node count as weight, through the weight rules.
    let texts: Vec<String> = out
        .control_log
        .iter()
        .map(|e| e.write.param_and_text().1.to_string())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t == "start japp2 jobid={app2} weight=2"),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t == "start japp1 jobid={app1} weight=5"),
        "{texts:?}"
    );
}

/// vPFS Fig. 7's set-up, small: a bursty job with synchronous write phases (BTIO) against a
/// continuous writer (IOR) on two servers, weights 32:1. Returns BTIO's total I/O time (the
/// sum of its phases' durations) in seconds.
fn bursty_vs_streamer_io_s(with_streamer: bool, policy: &str) -> f64 {
    let mut s = format!(
        r#"
name = "vpfs-bursty"
[simulation]
duration_s = 120.0
[cluster]
clients = 4
brw_size = "1M"
stripe_size = "1M"
[network]
client_link_mib_s = 100000.0
server_link_mib_s = 100000.0
latency_us = 50.0
{EXACT_DEVICE}
[[oss]]
name = "s0"
osts = 1
device = "exact"
[[oss]]
name = "s1"
osts = 1
device = "exact"

[[job]]
id = "btio"
nodes = 2
weight = 32
clients = [0, 1]
[[job.processes]]
rw = "write"
bs = "4M"
size = "40M"
numjobs = 2
iodepth = 1
file = "shared"
stripe_count = 2
stripe_offset = 0
[job.processes.shape]
kind = "phases"
phases = 5
compute_s = 2.0
phase_size = "8M"
"#
    );
    if with_streamer {
        s.push_str(
            r#"
[[job]]
id = "ior"
nodes = 2
weight = 1
clients = [2, 3]
[[job.processes]]
rw = "write"
bs = "4M"
size = "64G"
numjobs = 16
file = "shared"
stripe_count = 2
stripe_offset = 0
"#,
        );
    }
    let out = run_quiet(&scenario(&s), policy, 1);
    let phases = out.jobs[0].phases.as_ref().expect("btio has phases");
    assert_eq!(phases.done.len(), 5, "{policy}: every BTIO phase completes");
    phases.done.iter().map(|p| p.duration_ns()).sum::<u64>() as f64 / 1e9
}

#[test]
fn a_cap_restores_a_bursty_job_that_work_conserving_dsfq_cannot() {
    // vPFS §IV-C-3, Fig. 7: layout DSFQ at 32:1 restores part of BTIO's I/O rate under IOR's
    // contention, the non-work-conserving variant (a cap per server at the weight's share of
    // its capacity; the flow idle time exceeds BTIO's computation, so the cap does not lift
    // while it computes) nearly all of it.
    let alone = bursty_vs_streamer_io_s(false, "nobw");
    let kept = |policy: &str| alone / bursty_vs_streamer_io_s(true, policy);
    let native = kept("nobw");
    let dsfq = kept("vpfs:sync=layout:flow_idle_ms=5000");
    let nwc = kept("vpfs:sync=layout:flow_idle_ms=5000:nwc=104857600");
    assert!(
        native < 0.5,
        "IOR's contention must hurt BTIO without control: {native}"
    );
    assert!(
        dsfq > native,
        "DSFQ must restore some of BTIO's rate: {dsfq} vs {native}"
    );
    assert!(
        nwc > dsfq,
        "the cap must restore more than DSFQ: {nwc} vs {dsfq}"
    );
    assert!(
        nwc > 0.85,
        "the cap must restore nearly all of BTIO's rate: {nwc}"
    );
}
