//! Invariants of the engine on random small scenarios: every byte asked for is done exactly
//! once, the OSC limit holds, RPCs respect brw_size and the layout, and runs repeat exactly.

use crate::engine_common::*;

use pfsqos_sim::run_traced;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Group {
    rw: &'static str,
    bs_k: u64,
    size_blocks: u64,
    numjobs: u32,
    iodepth: u32,
    shared: bool,
    stripe_count: u32,
    stripe_size_k: u64,
}

fn group() -> impl Strategy<Value = Group> {
    (
        prop::sample::select(vec!["read", "write", "randread", "randwrite"]),
        prop::sample::select(vec![4u64, 64, 256, 1024, 3072]),
        1u64..6,
        1u32..4,
        1u32..4,
        any::<bool>(),
        1u32..4,
        prop::sample::select(vec![64u64, 128, 1024]),
    )
        .prop_map(
            |(rw, bs_k, size_blocks, numjobs, iodepth, shared, stripe_count, stripe_size_k)| {
                Group {
                    rw,
                    bs_k,
                    size_blocks,
                    numjobs,
                    iodepth,
                    shared,
                    stripe_count,
                    stripe_size_k,
                }
            },
        )
}

#[allow(clippy::too_many_arguments)]
fn text(
    clients: u32,
    osts: u32,
    cpts: u32,
    io_threads: u32,
    rif: u32,
    brw_k: u64,
    scope: &str,
    groups: &[Group],
) -> String {
    let mut t = format!(
        r#"
name = "prop"
[simulation]
duration_s = 1000.0
[cluster]
clients = {clients}
max_rpcs_in_flight = {rif}
brw_size = "{brw_k}k"
scheduler_scope = "{scope}"
[network]
client_link_mib_s = 500.0
server_link_mib_s = 800.0
latency_us = 5.0
{EXACT_DEVICE}
[[oss]]
name = "a"
osts = {osts}
device = "exact"
cpts = {cpts}
io_threads = {io_threads}
[[oss]]
name = "b"
osts = 1
device = "hdd"
"#
    );
    for (i, g) in groups.iter().enumerate() {
        t.push_str(&format!(
            r#"
[[job]]
id = "j{i}"
nodes = {nodes}
[[job.processes]]
rw = "{rw}"
bs = "{bs}k"
size = "{size}k"
numjobs = {numjobs}
iodepth = {iodepth}
file = "{file}"
stripe_count = {sc}
stripe_size = "{ss}k"
"#,
            nodes = i + 1,
            rw = g.rw,
            bs = g.bs_k,
            size = g.bs_k * g.size_blocks,
            numjobs = g.numjobs,
            iodepth = g.iodepth,
            file = if g.shared { "shared" } else { "per-process" },
            sc = g.stripe_count.min(osts + 1),
            ss = g.stripe_size_k,
        ));
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_byte_once_limits_hold_runs_repeat(
        clients in 1u32..4, osts in 1u32..4, cpts in 1u32..3, io_threads in 2u32..6,
        rif in 1u32..4, brw_k in prop::sample::select(vec![64u64, 256, 1024]),
        scope in prop::sample::select(vec!["oss", "ost"]),
        groups in prop::collection::vec(group(), 1..4),
    ) {
        let s = scenario(&text(clients, osts, cpts, io_threads, rif, brw_k, scope, &groups));
        let (out, trace) = run_traced(&s, "nobw", 3).unwrap();
        let (again, _) = run_traced(&s, "nobw", 3).unwrap();
        prop_assert_eq!(&out, &again);
        for (j, g) in groups.iter().enumerate() {
            let job = &out.jobs[j];
            prop_assert!(job.finished, "job {} unfinished: {:?}", j, job);
            let want = u64::from(g.numjobs) * g.bs_k * 1024 * g.size_blocks;
            prop_assert_eq!(job.bytes(), want);
            let traced: u64 = trace.iter().filter(|t| t.job == j as u32).map(|t| t.size_bytes).sum();
            prop_assert_eq!(traced, want);
            let series: u64 = job.bytes_per_ost_bin.iter().flat_map(|(_, r)| r).sum();
            prop_assert_eq!(series, want);
            prop_assert_eq!(job.rpcs, trace.iter().filter(|t| t.job == j as u32).count() as u64);
        }
        prop_assert!(trace.iter().all(|t| t.size_bytes > 0 && t.size_bytes <= brw_k * 1024));
        prop_assert!(trace.iter().all(|t| t.sent_ns >= t.created_ns && t.completed_ns > t.sent_ns));
        // The OSC limit, per (client, OST).
        let mut points: Vec<(u32, u32, u64, i32)> = Vec::new();
        for t in &trace {
            points.push((t.client, t.ost, t.sent_ns, 1));
            points.push((t.client, t.ost, t.completed_ns, -1));
        }
        points.sort_by_key(|&(c, o, time, d)| (c, o, time, d));
        let mut current = 0i32;
        let mut key = None;
        for (c, o, _, d) in points {
            if key != Some((c, o)) {
                key = Some((c, o));
                current = 0;
            }
            current += d;
            prop_assert!(current <= rif as i32);
        }
        // The run ends when the last RPC completes.
        prop_assert_eq!(Some(out.end_ns), trace.iter().map(|t| t.completed_ns).max());
    }
}
