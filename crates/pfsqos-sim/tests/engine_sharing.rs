//! Bandwidth delivered by the engine: one job alone, two jobs under FIFO, two under static TBF.

mod engine_common;
use engine_common::*;

fn one_ost(jobs: &str) -> String {
    one_ost_on(jobs, EXACT_DEVICE)
}

fn one_ost_on(jobs: &str, device: &str) -> String {
    format!(
        r#"
name = "share"
[simulation]
duration_s = 10.0
[cluster]
clients = 4
stripe_size = "4M"
{FAST_NET}
{device}
[[oss]]
name = "oss0"
osts = 1
device = "exact"
{jobs}
"#
    )
}

fn job(id: &str, nodes: u32, clients: &str) -> String {
    format!(
        r#"
[[job]]
id = "{id}"
nodes = {nodes}
clients = {clients}
[[job.processes]]
rw = "write"
bs = "4M"
size = "100G"
iodepth = 4
"#
    )
}

#[test]
fn one_job_alone_reaches_the_device_bandwidth() {
    let s = scenario(&one_ost(&job("a", 1, "[0]")));
    let out = run_quiet(&s, "nobw", 1);
    // Skip the first bin (pipeline fill), measure the rest.
    let got = mib_s(&out, 0, 1, 100);
    assert!((got - 100.0).abs() / 100.0 < 0.02, "got {got} MiB/s");
    assert!(!out.jobs[0].finished);
    assert_eq!(out.end_ns, 10_000_000_000);
}

#[test]
fn two_identical_jobs_share_fairly_under_fifo() {
    let s = scenario(&one_ost(&format!(
        "{}{}",
        job("a", 1, "[0]"),
        job("b", 1, "[1]")
    )));
    let out = run_quiet(&s, "nobw", 1);
    let a = mib_s(&out, 0, 1, 100);
    let b = mib_s(&out, 1, 1, 100);
    assert!((a + b - 100.0).abs() < 2.0, "total {}", a + b);
    assert!((a - b).abs() / (a + b) * 2.0 < 0.05, "a {a} b {b}");
}

#[test]
#[ignore = "needs TBF"]
fn static_rules_split_one_to_three() {
    // 400 MiB/s of 4 MiB RPCs is a capacity of exactly 100 RPC/s: rates 25 and 75.
    let device = EXACT_DEVICE.replace("100.0", "400.0");
    let s = scenario(&one_ost_on(
        &format!("{}{}", job("a", 1, "[0]"), job("b", 3, "[1]")),
        &device,
    ));
    let out = run_quiet(&s, "static", 1);
    assert!(
        out.control_log.iter().all(|e| e.result.is_ok()),
        "{:?}",
        out.control_log
    );
    let a = mib_s(&out, 0, 1, 100);
    let b = mib_s(&out, 1, 1, 100);
    let share_a = a / (a + b);
    assert!((share_a - 0.25).abs() / 0.25 < 0.05, "a {a} b {b}");
    let ratio = b / a;
    assert!((ratio - 3.0).abs() / 3.0 < 0.05, "a {a} b {b}");
}
