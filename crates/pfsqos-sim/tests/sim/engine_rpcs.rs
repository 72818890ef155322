//! Exact small-scale behaviour: RPC splitting, the OSC in-flight limit, burst timing,
//! start/stop, and what controllers observe.

use crate::engine_common::*;

use pfsqos_core::control::{Controller, Decision, Observation};
use pfsqos_sim::{run_traced, run_with_controller, RpcTrace};

const K: u64 = 1 << 10;
const M: u64 = 1 << 20;

fn cluster(extra_cluster: &str, osts: u32, jobs: &str) -> String {
    format!(
        r#"
name = "unit"
[simulation]
duration_s = 5.0
[cluster]
clients = 2
{extra_cluster}
{FAST_NET}
{EXACT_DEVICE}
[[oss]]
name = "oss0"
osts = {osts}
device = "exact"
{NO_SERVER_CPU}
{jobs}
"#
    )
}

/// The tests here pin how calls become RPCs and when they are issued, counting each call
/// waiting for its RPCs: the client's cache is off (its own tests are in
/// engine_client_cache.rs).
fn traced(text: &str) -> (pfsqos_sim::RunOutput, Vec<RpcTrace>) {
    run_traced(&scenario(&format!("{text}{NO_CLIENT_CACHE}")), "nobw", 1).unwrap()
}

#[test]
fn calls_split_at_stripe_boundaries_into_brw_sized_rpcs() {
    let text = cluster(
        "brw_size = \"512k\"",
        2,
        r#"
[[job]]
id = "split"
nodes = 1
[[job.processes]]
rw = "write"
bs = "3M"
size = "6M"
stripe_count = 2
stripe_size = "1M"
stripe_offset = 0
"#,
    );
    let (out, mut trace) = traced(&text);
    assert!(out.jobs[0].finished);
    assert_eq!(out.jobs[0].bytes_written, 6 * M);
    trace.sort_by_key(|t| t.file_offset_bytes);
    let got: Vec<(u32, u64, u64)> = trace
        .iter()
        .map(|t| (t.ost, t.object_offset_bytes, t.size_bytes))
        .collect();
    let mut want = Vec::new();
    for stripe in 0..6u64 {
        for half in 0..2u64 {
            want.push((
                (stripe % 2) as u32,
                (stripe / 2) * M + half * 512 * K,
                512 * K,
            ));
        }
    }
    assert_eq!(got, want);
    // Each 3 MiB call produced 6 RPCs created together; the second call waited for the first.
    assert!(trace[..6].iter().all(|t| t.created_ns == 0));
    let second = trace[6].created_ns;
    assert!(second > 0 && trace[6..].iter().all(|t| t.created_ns == second));
    assert!(trace[..6].iter().all(|t| t.completed_ns <= second));
    // Per-OST time series: 3 MiB each.
    for ost in 0..2 {
        let total: u64 = out.jobs[0].bytes_per_ost_bin.ost(ost).iter().sum();
        assert_eq!(total, 3 * M);
    }
}

#[test]
fn an_rpc_covers_one_object_range_even_across_stripes() {
    // Lustre's OSC builds RPCs from contiguous pages of one object, so a 4 MiB call over
    // 3 stripes of 1 MiB sends 2 MiB to the object it reaches twice.
    let text = cluster(
        "brw_size = \"4M\"",
        3,
        r#"
[[job]]
id = "wide"
nodes = 1
[[job.processes]]
rw = "read"
bs = "4M"
size = "8M"
stripe_count = 3
stripe_size = "1M"
stripe_offset = 0
"#,
    );
    let (out, trace) = traced(&text);
    assert_eq!(out.jobs[0].bytes_read, 8 * M);
    let mut got: Vec<(u64, u32, u64, u64)> = trace
        .iter()
        .map(|t| (t.created_ns, t.ost, t.object_offset_bytes, t.size_bytes))
        .collect();
    got.sort();
    let second = got[3].0;
    assert!(second > 0);
    assert_eq!(
        got,
        vec![
            (0, 0, 0, 2 * M),
            (0, 1, 0, M),
            (0, 2, 0, M),
            (second, 0, 2 * M, M),
            (second, 1, M, 2 * M),
            (second, 2, M, M),
        ]
    );
    assert!(trace.iter().all(|t| t.read));
}

#[test]
fn single_stripe_files_send_full_brw_size_rpcs() {
    let text = cluster(
        "",
        1,
        r#"
[[job]]
id = "one"
nodes = 1
[[job.processes]]
rw = "write"
bs = "16M"
size = "32M"
"#,
    );
    let (_, trace) = traced(&text);
    assert_eq!(trace.len(), 8);
    assert!(trace.iter().all(|t| t.size_bytes == 4 * M));
}

/// Largest number of RPCs of one (client, OST) between send and completion at once.
fn max_in_flight(trace: &[RpcTrace], client: u32, ost: u32) -> usize {
    let mut points: Vec<(u64, i32)> = Vec::new();
    for t in trace.iter().filter(|t| t.client == client && t.ost == ost) {
        points.push((t.sent_ns, 1));
        points.push((t.completed_ns, -1));
    }
    // At equal times a completion frees its slot before the next RPC is sent.
    points.sort();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in points {
        now += d;
        max = max.max(now);
    }
    max as usize
}

#[test]
fn max_rpcs_in_flight_per_client_and_ost_is_never_exceeded() {
    let text = cluster(
        "max_rpcs_in_flight = 3\nbrw_size = \"1M\"",
        2,
        r#"
[[job]]
id = "many"
nodes = 1
clients = [0]
[[job.processes]]
rw = "write"
bs = "2M"
size = "20M"
numjobs = 4
iodepth = 4
stripe_count = 2
"#,
    );
    let (out, trace) = traced(&text);
    assert!(out.jobs[0].finished);
    assert_eq!(out.jobs[0].bytes_written, 4 * 20 * M);
    for ost in 0..2 {
        // The limit binds (32 RPCs wanted at once) and is never exceeded.
        assert_eq!(max_in_flight(&trace, 0, ost), 3, "ost {ost}");
    }
    // The OSC queue is FIFO across processes: RPCs leave in creation order.
    for ost in 0..2 {
        let mut mine: Vec<&RpcTrace> = trace.iter().filter(|t| t.ost == ost).collect();
        mine.sort_by_key(|t| (t.sent_ns, t.created_ns));
        assert!(mine.windows(2).all(|w| w[0].created_ns <= w[1].created_ns));
    }
}

fn burst_starts(trace: &[RpcTrace], calls_per_burst: usize) -> Vec<(u64, u64)> {
    // (first created, last completed) of each burst; one RPC per call, one call at a time.
    let mut by_created: Vec<&RpcTrace> = trace.iter().collect();
    by_created.sort_by_key(|t| t.created_ns);
    by_created
        .chunks(calls_per_burst)
        .map(|c| {
            (
                c[0].created_ns,
                c.iter().map(|t| t.completed_ns).max().unwrap(),
            )
        })
        .collect()
}

fn periodic(interval_s: f64) -> String {
    cluster(
        "brw_size = \"1M\"",
        1,
        &format!(
            r#"
[[job]]
id = "ckpt"
nodes = 1
[[job.processes]]
rw = "write"
bs = "1M"
size = "30M"
[job.processes.shape]
kind = "periodic"
burst_size = "10M"
interval_s = {interval_s}
"#
        ),
    )
}

#[test]
fn periodic_bursts_start_on_their_interval() {
    let (out, trace) = traced(&periodic(0.5));
    assert!(out.jobs[0].finished);
    assert_eq!(out.jobs[0].bytes_written, 30 * M);
    let bursts = burst_starts(&trace, 10);
    assert_eq!(bursts.len(), 3);
    let starts: Vec<u64> = bursts.iter().map(|b| b.0).collect();
    assert_eq!(starts, vec![0, 500_000_000, 1_000_000_000]);
    // 10 MiB at 100 MiB/s is 0.1 s plus small latencies: each burst ends before the next.
    for b in &bursts {
        assert!(b.1 - b.0 >= 100_000_000 && b.1 - b.0 < 110_000_000, "{b:?}");
    }
    assert_eq!(out.end_ns, bursts[2].1);
    assert_eq!(out.jobs[0].last_io_ns, Some(bursts[2].1));
}

#[test]
fn a_late_burst_delays_the_next_one() {
    let (out, trace) = traced(&periodic(0.05));
    assert!(out.jobs[0].finished);
    let bursts = burst_starts(&trace, 10);
    assert_eq!(bursts.len(), 3);
    assert_eq!(bursts[0].0, 0);
    // Bursts take 0.1 s but are due every 0.05 s: each starts when the previous completes.
    assert_eq!(bursts[1].0, bursts[0].1);
    assert_eq!(bursts[2].0, bursts[1].1);
}

#[test]
fn explicit_bursts_run_at_their_times() {
    let text = cluster(
        "brw_size = \"1M\"",
        1,
        r#"
[[job]]
id = "b"
nodes = 1
[[job.processes]]
rw = "write"
bs = "1M"
size = "100M"
[job.processes.shape]
kind = "bursts"
bursts = [{ at_s = 0.2, size = "2M" }, { at_s = 1.0, size = "3M" }]
"#,
    );
    let (out, trace) = traced(&text);
    assert!(out.jobs[0].finished);
    assert_eq!(out.jobs[0].bytes_written, 5 * M);
    let mut created: Vec<u64> = trace.iter().map(|t| t.created_ns).collect();
    created.sort();
    assert_eq!(created[0], 200_000_000);
    assert_eq!(created[2], 1_000_000_000);
    assert_eq!(out.jobs[0].first_io_ns, Some(200_000_000));
}

#[test]
fn start_and_stop_bound_the_issued_io() {
    let text = cluster(
        "",
        1,
        r#"
[[job]]
id = "window"
nodes = 1
[[job.processes]]
rw = "write"
bs = "4M"
size = "10G"
[job.processes.shape]
start_s = 0.25
stop_s = 0.75
[[job]]
id = "late"
nodes = 1
[[job.processes]]
rw = "write"
bs = "4M"
size = "100G"
[job.processes.shape]
start_s = 4.0
"#,
    );
    let (out, mut trace) = traced(&text);
    trace.retain(|t| t.job == 0);
    let w = &out.jobs[0];
    assert_eq!(w.first_io_ns, Some(250_000_000));
    assert!(trace
        .iter()
        .all(|t| t.created_ns >= 250_000_000 && t.created_ns < 750_000_000));
    // 4 MiB at 100 MiB/s is 40 ms per call, one at a time: 12 or 13 calls in 0.5 s.
    let mut created: Vec<u64> = trace.iter().map(|t| t.created_ns).collect();
    created.dedup();
    let calls = created.len();
    assert!((12..=13).contains(&calls), "{calls}");
    assert!(w.finished, "stopping at stop_s completes the shape");
    // The second job starts late and still has I/O to do when the run ends.
    assert!(!out.jobs[1].finished);
    assert_eq!(out.jobs[1].first_io_ns, Some(4_000_000_000));
    assert_eq!(out.end_ns, 5_000_000_000);
}

#[test]
fn run_ends_when_every_process_is_done() {
    let text = cluster(
        "",
        1,
        r#"
[[job]]
id = "short"
nodes = 1
[[job.processes]]
rw = "write"
bs = "4M"
size = "40M"
"#,
    );
    let (out, trace) = traced(&text);
    assert!(out.jobs[0].finished);
    let last = trace.iter().map(|t| t.completed_ns).max().unwrap();
    assert_eq!(out.end_ns, last);
    // 10 calls of 40 ms each plus latencies.
    assert!(
        out.end_ns >= 400_000_000 && out.end_ns < 401_000_000,
        "{}",
        out.end_ns
    );
    assert_eq!(out.jobs[0].bytes_per_ost_bin.bins(), 5);
}

/// Records every observation it gets.
struct Recorder {
    seen: std::rc::Rc<std::cell::RefCell<Vec<Observation>>>,
}

impl Controller for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn setup(&mut self, initial: &Observation) -> Decision {
        self.seen.borrow_mut().push(initial.clone());
        Decision::default()
    }
    fn period_ns(&self) -> Option<u64> {
        Some(1_000_000_000)
    }
    fn decide(&mut self, observation: &Observation) -> Decision {
        self.seen.borrow_mut().push(observation.clone());
        Decision::default()
    }
}

#[test]
fn controllers_observe_per_target_per_job_activity() {
    let text = format!(
        r#"
name = "obs"
[simulation]
duration_s = 3.0
[cluster]
clients = 2
scheduler_scope = "ost"
stripe_size = "4M"
{FAST_NET}
{EXACT_DEVICE}
[[oss]]
name = "oss0"
osts = 2
device = "exact"
io_threads = 2
[[job]]
id = "zeta"
nodes = 3
clients = [0]
[[job.processes]]
rw = "write"
bs = "4M"
size = "10G"
stripe_offset = 1
iodepth = 8
[[job]]
id = "alpha"
nodes = 1
clients = [1]
[[job.processes]]
rw = "write"
bs = "4M"
size = "10G"
stripe_offset = 1
iodepth = 8
"#
    );
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let out = run_with_controller(
        &scenario(&text),
        Box::new(Recorder { seen: seen.clone() }),
        1,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(out.policy, "recorder");
    let seen = seen.borrow();
    // setup + one per second up to and including 3 s.
    assert_eq!(seen.len(), 4);
    let initial = &seen[0];
    assert_eq!(initial.domains.len(), 2);
    let ids: Vec<&str> = initial.jobs.iter().map(|j| j.job.as_str()).collect();
    assert_eq!(ids, vec!["alpha", "zeta"]);
    assert_eq!(initial.jobs[1].node_count, 3);
    for d in &initial.domains {
        assert_eq!(d.targets.len(), 1);
        assert!(d.targets[0].jobs.is_empty());
        // 4 MiB at 100 MiB/s.
        assert_eq!(d.targets[0].capacity_rpcs_per_s, 25);
    }
    let mid = &seen[2];
    assert_eq!(mid.now_ns, 2_000_000_000);
    assert_eq!(mid.period_ns, 1_000_000_000);
    // OST 0 idle, OST 1 shared by both jobs (sorted by id), backlogged.
    assert!(mid.domains[0].targets[0].jobs.is_empty());
    let t1 = &mid.domains[1].targets[0];
    let names: Vec<&str> = t1.jobs.iter().map(|j| j.job.as_str()).collect();
    assert_eq!(names, vec!["alpha", "zeta"]);
    let served: u64 = t1.jobs.iter().map(|j| j.rpcs_served).sum();
    // 25 RPCs per second.
    assert!((24..=26).contains(&served), "{served}");
    assert!(t1
        .jobs
        .iter()
        .all(|j| j.bytes_served == j.rpcs_served * 4 * M));
    // 16 RPCs in flight, 2 in service (2 threads): the rest wait in the scheduler.
    assert_eq!(t1.queue_len_rpcs, 14);
    // Every served byte is seen exactly once across periods.
    let observed: u64 = seen
        .iter()
        .flat_map(|o| o.domains.iter())
        .flat_map(|d| d.targets.iter())
        .flat_map(|t| t.jobs.iter())
        .map(|j| j.bytes_served)
        .sum();
    let recorded: u64 = out.jobs.iter().map(|j| j.bytes()).sum();
    assert!(observed >= recorded && observed <= recorded + 16 * 4 * M);
}

#[test]
fn shared_file_processes_work_in_their_own_regions() {
    let text = cluster(
        "",
        2,
        r#"
[[job]]
id = "shared"
nodes = 1
[[job.processes]]
rw = "write"
bs = "1M"
size = "3M"
numjobs = 3
file = "shared"
stripe_count = 2
stripe_offset = 0
"#,
    );
    let (out, trace) = traced(&text);
    assert!(out.jobs[0].finished);
    for p in 0..3u32 {
        let mut offsets: Vec<u64> = trace
            .iter()
            .filter(|t| t.process == p)
            .map(|t| t.file_offset_bytes)
            .collect();
        offsets.sort();
        let base = u64::from(p) * 3 * M;
        assert_eq!(offsets, vec![base, base + M, base + 2 * M]);
    }
    // One file: stripe i of the shared file is on OST i % 2 for every process.
    assert!(trace
        .iter()
        .all(|t| t.ost == ((t.file_offset_bytes / M) % 2) as u32));
}
