//! The fluid engine against the RPC-level engine on a scenario both can run: five applications
//! with synchronous I/O phases on three OSTs (one per OSS, as on GIFT's testbed), under FIFO
//! (`nobw`), POFS, BSIP and GIFT. Mean application I/O times must agree within 5 %; the
//! measured differences are recorded in `docs/reproductions/gift.md`.

use pfsqos_sim::{run, run_rpc, RunOutput, Scenario};

/// An application: id, nodes, `(OST, processes)` groups, phases, compute s, MiB per process
/// per phase.
type App = (&'static str, u32, &'static [(u32, u32)], u32, f64, u64);

/// One OST per OSS, 100 MiB/s devices with no overhead, a network far above the devices, one
/// client per process (so no client's RPC window is shared).
fn scenario(engine: &str) -> Scenario {
    let mut text = format!(
        r#"
name = "agreement"
[simulation]
duration_s = 400.0
bin_ms = 1000
engine = "{engine}"
[cluster]
clients = 16
brw_size = "1M"
[network]
client_link_mib_s = 100000.0
server_link_mib_s = 100000.0
latency_us = 10.0
[[device]]
name = "hdd100"
read = [{{ size = "4k", bandwidth_mib_s = 100.0 }}]
write = [{{ size = "4k", bandwidth_mib_s = 100.0 }}]
"#
    );
    for k in 0..3 {
        text.push_str(&format!(
            "[[oss]]\nname = \"oss{k}\"\nosts = 1\ndevice = \"hdd100\"\n"
        ));
    }
    // (id, nodes, [(OST, processes)], phases, compute_s, MiB per process per phase)
    let apps: [App; 5] = [
        ("app-a", 4, &[(0, 1), (1, 1)], 5, 2.0, 200),
        ("app-b", 1, &[(0, 1)], 6, 1.0, 150),
        ("app-c", 2, &[(1, 2)], 4, 3.0, 100),
        ("app-d", 1, &[(2, 1)], 5, 2.5, 250),
        ("app-e", 2, &[(1, 1), (2, 1)], 4, 1.5, 120),
    ];
    let mut client = 0;
    for (id, nodes, groups, phases, compute_s, mib) in apps {
        let processes: u32 = groups.iter().map(|g| g.1).sum();
        let clients: Vec<String> = (client..client + processes)
            .map(|c| c.to_string())
            .collect();
        client += processes;
        text.push_str(&format!(
            "\n[[job]]\nid = \"{id}\"\nnodes = {nodes}\nclients = [{}]\n",
            clients.join(", ")
        ));
        for &(ost, numjobs) in groups {
            text.push_str(&format!(
                r#"[[job.processes]]
rw = "write"
bs = "1M"
size = "{size}M"
numjobs = {numjobs}
iodepth = 4
stripe_count = 1
stripe_offset = {ost}
[job.processes.shape]
kind = "phases"
phases = {phases}
compute_s = {compute_s}
phase_size = "{mib}M"
"#,
                size = u64::from(phases) * mib
            ));
        }
    }
    Scenario::from_toml_str(&text, "<agreement>").expect("scenario parses")
}

fn mean_io_s(out: &RunOutput) -> f64 {
    assert!(
        out.jobs.iter().all(|j| j.finished),
        "{}: unfinished",
        out.policy
    );
    out.mean_app_io_time_ns().expect("phased jobs") / 1e9
}

/// Runs `policy` on both engines; returns (rpc, fluid) mean I/O times in seconds.
fn both(policy: &str) -> (RunOutput, RunOutput) {
    let rpc = run_rpc(&scenario("rpc"), policy, 1, &mut |_, _| {}).expect("rpc run");
    let fluid = run(&scenario("fluid"), policy, 1, &mut |_, _| {}).expect("fluid run");
    (rpc, fluid)
}

fn check(policy: &str) {
    let (rpc, fluid) = both(policy);
    let (r, f) = (mean_io_s(&rpc), mean_io_s(&fluid));
    let rel = (f - r) / r;
    println!(
        "{policy}: mean app I/O time rpc {r:.3} s, fluid {f:.3} s, diff {:+.2} %",
        rel * 100.0
    );
    for (a, b) in rpc.jobs.iter().zip(&fluid.jobs) {
        let (pa, pb) = (a.phases.as_ref().unwrap(), b.phases.as_ref().unwrap());
        println!(
            "  {}: io {:.3} / {:.3} s, run {:.3} / {:.3} s",
            a.job_id,
            pa.io_time_ns() as f64 / 1e9,
            pb.io_time_ns() as f64 / 1e9,
            pa.run_time_ns() as f64 / 1e9,
            pb.run_time_ns() as f64 / 1e9
        );
        // Same work in both engines.
        assert_eq!(a.bytes_written, b.bytes_written, "{}", a.job_id);
        assert_eq!(pa.phases_done(), pb.phases_done());
        assert_eq!(
            pa.done.iter().map(|p| p.bytes).collect::<Vec<_>>(),
            pb.done.iter().map(|p| p.bytes).collect::<Vec<_>>()
        );
    }
    let ra = rpc.effective_system_bytes_per_s().unwrap() / (1u64 << 20) as f64;
    let fa = fluid.effective_system_bytes_per_s().unwrap() / (1u64 << 20) as f64;
    println!("  effective system bandwidth rpc {ra:.1} MiB/s, fluid {fa:.1} MiB/s");
    assert!(
        rel.abs() <= 0.05,
        "{policy}: fluid {f:.3} s vs rpc {r:.3} s differ by {:.2} %",
        rel * 100.0
    );
}

#[test]
fn fifo_agrees() {
    check("nobw");
}

#[test]
fn pofs_agrees() {
    check("pofs:period_ms=1000");
}

#[test]
fn bsip_agrees() {
    check("bsip:period_ms=1000");
}

#[test]
fn gift_agrees() {
    check("gift:period_ms=1000");
}

#[test]
fn fluid_is_deterministic() {
    let s = scenario("fluid");
    let a = run(&s, "gift:period_ms=1000", 3, &mut |_, _| {}).unwrap();
    let b = run(&s, "gift:period_ms=1000", 3, &mut |_, _| {}).unwrap();
    assert_eq!(a, b);
}
