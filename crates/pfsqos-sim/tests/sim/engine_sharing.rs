//! Bandwidth delivered by the engine: one job alone, two jobs under FIFO, two under static TBF.

use crate::engine_common::*;

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

#[test]
fn a_slow_client_link_caps_writes_and_reads() {
    for rw in ["write", "read"] {
        let text = one_ost(&job("a", 1, "[0]").replace("\"write\"", &format!("\"{rw}\"")))
            .replace("client_link_mib_s = 1000000.0", "client_link_mib_s = 50.0");
        let out = run_quiet(&scenario(&text), "nobw", 1);
        let got = mib_s(&out, 0, 1, 100);
        assert!((got - 50.0).abs() / 50.0 < 0.02, "{rw}: got {got} MiB/s");
    }
}

#[test]
fn random_access_pays_the_hdd_seek_penalty() {
    let hdd = |rw: &str| {
        format!(
            r#"
name = "hdd"
[simulation]
duration_s = 10.0
{FAST_NET}
[[oss]]
name = "oss0"
osts = 1
device = "hdd"
[[job]]
id = "a"
nodes = 1
[[job.processes]]
rw = "{rw}"
bs = "64k"
size = "1G"
iodepth = 4
"#
        )
    };
    let seq = mib_s(&run_quiet(&scenario(&hdd("write")), "nobw", 1), 0, 1, 100);
    let rnd = mib_s(
        &run_quiet(&scenario(&hdd("randwrite")), "nobw", 1),
        0,
        1,
        100,
    );
    // Sequential 64 KiB: 0.1 ms overhead + 0.64 ms transfer. Random: + 8 ms seek.
    let seq_want = 0.0625 / (0.1e-3 + 0.0625 / 97.3);
    let rnd_want = 0.0625 / (8.1e-3 + 0.0625 / 97.3);
    assert!(
        (seq - seq_want).abs() / seq_want < 0.02,
        "seq {seq} want {seq_want}"
    );
    assert!(
        (rnd - rnd_want).abs() / rnd_want < 0.05,
        "rnd {rnd} want {rnd_want}"
    );
}

/// Starts TBF with one rule limiting job `a` to `rate` RPC/s on every domain.
struct LimitA {
    rate: u64,
}

impl pfsqos_core::control::Controller for LimitA {
    fn name(&self) -> &'static str {
        "limit-a"
    }
    fn setup(
        &mut self,
        initial: &pfsqos_core::control::Observation,
    ) -> pfsqos_core::control::Decision {
        use pfsqos_core::control::{ControlWrite, DomainWrite};
        let mut writes = Vec::new();
        for d in &initial.domains {
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicies("tbf jobid".to_string()),
            });
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::tbf_rule(format!("start lim jobid={{a}} rate={}", self.rate)),
            });
        }
        pfsqos_core::control::Decision::of_writes(writes)
    }
    fn period_ns(&self) -> Option<u64> {
        None
    }
    fn decide(
        &mut self,
        _observation: &pfsqos_core::control::Observation,
    ) -> pfsqos_core::control::Decision {
        pfsqos_core::control::Decision::default()
    }
}

#[test]
fn a_tbf_rule_throttles_one_job_and_the_other_takes_the_rest() {
    let s = scenario(&one_ost(&format!(
        "{}{}",
        job("a", 1, "[0]"),
        job("b", 1, "[1]")
    )));
    let out = pfsqos_sim::run_with_controller(&s, Box::new(LimitA { rate: 5 }), 1, &mut |_, _| {})
        .unwrap();
    assert!(
        out.control_log.iter().all(|e| e.result.is_ok()),
        "{:?}",
        out.control_log
    );
    // 5 RPC/s of 4 MiB on one CPT.
    let a = mib_s(&out, 0, 10, 100);
    let b = mib_s(&out, 1, 10, 100);
    assert!((a - 20.0).abs() / 20.0 < 0.05, "a {a}");
    assert!((a + b - 100.0).abs() / 100.0 < 0.02, "a {a} b {b}");
}

#[test]
fn tbf_rates_are_per_cpt_and_the_throttle_timer_alone_drives_service() {
    // Job `a` alone, two processes on clients 0 and 1, which hash to different CPTs.
    let jobs = job("a", 1, "[0, 1]").replace("iodepth = 4", "iodepth = 4\nnumjobs = 2");
    for (cpts, want_mib_s) in [(1, 20.0), (2, 40.0)] {
        let text = one_ost(&jobs).replace(
            "device = \"exact\"",
            &format!("device = \"exact\"\ncpts = {cpts}"),
        );
        let out = pfsqos_sim::run_with_controller(
            &scenario(&text),
            Box::new(LimitA { rate: 5 }),
            1,
            &mut |_, _| {},
        )
        .unwrap();
        let a = mib_s(&out, 0, 10, 100);
        assert!(
            (a - want_mib_s).abs() / want_mib_s < 0.05,
            "cpts {cpts}: a {a}"
        );
    }
}

/// Limits what client 0 sends to `limit_mib_s` (a `ClientWrite`), servers untouched.
struct LimitClient0 {
    limit_mib_s: u64,
}

impl pfsqos_core::control::Controller for LimitClient0 {
    fn name(&self) -> &'static str {
        "limit-client-0"
    }
    fn setup(
        &mut self,
        initial: &pfsqos_core::control::Observation,
    ) -> pfsqos_core::control::Decision {
        use pfsqos_core::control::{ClientId, ClientWrite};
        assert_eq!(
            initial.clients.len(),
            4,
            "the observation lists every client"
        );
        pfsqos_core::control::Decision {
            writes: Vec::new(),
            client_writes: vec![ClientWrite {
                client: ClientId(0),
                limit_bytes_per_s: Some(self.limit_mib_s << 20),
            }],
        }
    }
    fn period_ns(&self) -> Option<u64> {
        None
    }
    fn decide(
        &mut self,
        _observation: &pfsqos_core::control::Observation,
    ) -> pfsqos_core::control::Decision {
        pfsqos_core::control::Decision::default()
    }
}

/// A client limit caps what that client writes, and the device's other user takes the rest.
#[test]
fn a_client_limit_caps_its_writes_and_the_other_client_takes_the_rest() {
    let s = scenario(&one_ost(&format!(
        "{}{}",
        job("a", 1, "[0]"),
        job("b", 1, "[1]")
    )));
    let out = pfsqos_sim::run_with_controller(
        &s,
        Box::new(LimitClient0 { limit_mib_s: 15 }),
        1,
        &mut |_, _| {},
    )
    .unwrap();
    let a = mib_s(&out, 0, 10, 100);
    let b = mib_s(&out, 1, 10, 100);
    assert!((a - 15.0).abs() / 15.0 < 0.05, "a {a}");
    assert!((a + b - 100.0).abs() / 100.0 < 0.02, "a {a} b {b}");
}
