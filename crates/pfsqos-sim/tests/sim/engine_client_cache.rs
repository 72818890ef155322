//! The client's page cache in the RPC engine (`[client]`): write-back returns a write once
//! its bytes fit the dirty budgets and keeps the OSC's RPC window full behind one call at a
//! time; read-ahead does the same for a sequential reader; with the budgets at 0 (or
//! `direct = true`) every call waits for its own RPCs.

use crate::engine_common::*;
use pfsqos_sim::engine::{run_traced_calls, CallTrace};
use pfsqos_sim::{RpcTrace, RunOutput};

const M: u64 = 1 << 20;

/// One client, one OST on a device that serves 8 requests at once, each 10 ms of fixed time
/// plus its transfer at 1000 MiB/s: one request at a time it moves about 92 MiB/s, eight
/// about 8 times that. 1 MiB RPCs, 8 in flight. `client` is a `[client]` table (or empty:
/// the defaults), `group` the process group's extra keys.
fn one_process(rw: &str, client: &str, group: &str) -> String {
    format!(
        r#"
name = "client-cache"
[simulation]
duration_s = 2.0
[cluster]
clients = 1
brw_size = "1M"
max_rpcs_in_flight = 8
{FAST_NET}
[[device]]
name = "deep"
concurrency = 8
read = [{{ size = "4k", bandwidth_mib_s = 1000.0, overhead_us = 10000.0 }}]
write = [{{ size = "4k", bandwidth_mib_s = 1000.0, overhead_us = 10000.0 }}]
[[oss]]
name = "oss0"
osts = 1
device = "deep"
[[job]]
id = "p"
nodes = 1
[[job.processes]]
rw = "{rw}"
bs = "1M"
size = "64G"
{group}
{client}
"#
    )
}

fn budgets(dirty_mb: u64, client_dirty_mb: u64, ra_mb: u64, ra_file_mb: u64) -> String {
    format!(
        "[client]\nmax_dirty_mb = {dirty_mb}\nmax_dirty_client_mb = {client_dirty_mb}\n\
         max_read_ahead_mb = {ra_mb}\nmax_read_ahead_per_file_mb = {ra_file_mb}\n"
    )
}

fn traced(text: &str) -> (RunOutput, Vec<RpcTrace>, Vec<CallTrace>) {
    run_traced_calls(&scenario(text), "nobw", 1).expect("run succeeds")
}

fn moved(out: &RunOutput) -> u64 {
    out.jobs
        .iter()
        .map(|j| j.bytes_read + j.bytes_written)
        .sum()
}

#[test]
fn budgets_at_zero_are_the_same_run_as_direct_calls() {
    for rw in ["write", "read", "randwrite"] {
        let off = run_quiet(&scenario(&one_process(rw, NO_CLIENT_CACHE, "")), "nobw", 1);
        let direct = run_quiet(&scenario(&one_process(rw, "", "direct = true")), "nobw", 1);
        assert_eq!(off, direct, "{rw}");
        let default = run_quiet(&scenario(&one_process(rw, "", "")), "nobw", 1);
        if rw != "randwrite" {
            assert!(
                moved(&default) > 3 * moved(&off),
                "{rw}: the cache is on by default"
            );
        }
    }
}

#[test]
fn a_buffered_writer_keeps_the_rpc_window_full() {
    // One call at a time, but write-back: the window of 8 RPCs stays full, as a direct
    // writer with 8 calls in flight keeps it.
    let cached = run_quiet(&scenario(&one_process("write", "", "")), "nobw", 1);
    let deep = run_quiet(
        &scenario(&one_process("write", "", "direct = true\niodepth = 8")),
        "nobw",
        1,
    );
    let shallow = run_quiet(
        &scenario(&one_process("write", "", "direct = true")),
        "nobw",
        1,
    );
    let (c, d, s) = (moved(&cached), moved(&deep), moved(&shallow));
    assert!(c as f64 > 0.98 * d as f64 && c <= d + 16 * M, "{c} vs {d}");
    assert!(c > 6 * s, "{c} vs {s}");
}

#[test]
fn dirty_bytes_never_exceed_the_osc_budget() {
    let (out, rpcs, calls) = traced(&one_process("write", &budgets(4, 1024, 0, 0), ""));
    assert!(moved(&out) > 100 * M);
    let mut acked: Vec<(u64, u64)> = rpcs
        .iter()
        .map(|r| (r.completed_ns, r.size_bytes))
        .collect();
    acked.sort_unstable();
    let mut returned = 0u64;
    let mut i = 0;
    let mut acked_bytes = 0u64;
    let mut waited = 0;
    for c in &calls {
        returned += c.size_bytes;
        while i < acked.len() && acked[i].0 <= c.returned_ns {
            acked_bytes += acked[i].1;
            i += 1;
        }
        assert!(
            returned - acked_bytes <= 4 * M,
            "{} dirty at {}",
            returned - acked_bytes,
            c.returned_ns
        );
        waited += usize::from(c.returned_ns > c.issued_ns);
    }
    // The first four calls are buffered at once; later ones wait for room.
    assert!(calls[..4].iter().all(|c| c.returned_ns == c.issued_ns));
    assert!(waited > calls.len() / 2, "{waited} of {}", calls.len());
}

#[test]
fn the_client_wide_budget_binds_over_several_osts() {
    // Two OSTs, a file striped over both: each OSC may hold 64 MiB, the client only 2 MiB.
    let text = one_process("write", &budgets(64, 2, 0, 0), "stripe_count = 2")
        .replace("osts = 1", "osts = 2");
    let (_, rpcs, calls) = traced(&text);
    let mut acked: Vec<(u64, u64)> = rpcs
        .iter()
        .map(|r| (r.completed_ns, r.size_bytes))
        .collect();
    acked.sort_unstable();
    let (mut returned, mut acked_bytes, mut i) = (0u64, 0u64, 0usize);
    for c in &calls {
        returned += c.size_bytes;
        while i < acked.len() && acked[i].0 <= c.returned_ns {
            acked_bytes += acked[i].1;
            i += 1;
        }
        assert!(returned - acked_bytes <= 2 * M, "at {}", c.returned_ns);
    }
}

#[test]
fn a_writer_ends_when_its_writes_are_acknowledged() {
    let text = one_process("write", "", "").replace("size = \"64G\"", "size = \"40M\"");
    let (out, rpcs, calls) = traced(&text);
    let job = &out.jobs[0];
    assert!(job.finished);
    assert_eq!(job.bytes_written, 40 * M);
    // Every call was buffered at once (40 MiB fit the default budgets) ...
    assert!(calls.iter().all(|c| c.returned_ns == 0), "{calls:?}");
    // ... and the run, the job's I/O time and its end are the acknowledgments'.
    let last = rpcs.iter().map(|r| r.completed_ns).max().unwrap();
    assert_eq!(job.last_io_ns, Some(last));
    assert_eq!(out.end_ns, last);
    assert!(last >= 40 * 10_000_000 / 8, "{last}");
}

#[test]
fn a_phase_ends_when_its_writes_are_acknowledged() {
    let text = one_process("write", "", "").replace("size = \"64G\"", "size = \"64M\"")
        + "[job.processes.shape]\nkind = \"phases\"\nphases = 2\ncompute_s = 0.1\nphase_size = \"32M\"\n";
    let out = run_quiet(&scenario(&text), "nobw", 1);
    let phases = &out.jobs[0].phases.as_ref().unwrap().done;
    assert_eq!(phases.len(), 2);
    for p in phases {
        // 32 MiB in RPCs of 10 ms, 8 at a time: at least 40 ms of acknowledgments.
        assert!(p.duration_ns() >= 32 * 10_000_000 / 8, "{p:?}");
        assert_eq!(p.bytes, 32 * M);
    }
}

#[test]
fn read_ahead_keeps_a_sequential_reader_deep_and_skips_random_reads() {
    let ra = run_quiet(
        &scenario(&one_process("read", &budgets(0, 0, 64, 8), "")),
        "nobw",
        1,
    );
    let deep = run_quiet(
        &scenario(&one_process("read", "", "direct = true\niodepth = 8")),
        "nobw",
        1,
    );
    let (r, d) = (moved(&ra), moved(&deep));
    assert!(r as f64 > 0.95 * d as f64 && r <= d + 16 * M, "{r} vs {d}");
    // A random reader is not prefetched for: read-ahead on or off is the same run.
    let on = run_quiet(
        &scenario(&one_process("randread", &budgets(0, 0, 64, 8), "")),
        "nobw",
        1,
    );
    let off = run_quiet(
        &scenario(&one_process("randread", NO_CLIENT_CACHE, "")),
        "nobw",
        1,
    );
    assert_eq!(on, off);
}

#[test]
fn read_ahead_window_bounds_the_reads_in_flight() {
    // A window of 2 MiB past each 1 MiB read: at most 3 reads in flight, never the 8 the
    // OSC would allow.
    let (_, rpcs, calls) = traced(&one_process("read", &budgets(0, 0, 64, 2), ""));
    let mut edges: Vec<(u64, i64)> = Vec::new();
    for r in &rpcs {
        edges.push((r.sent_ns, 1));
        edges.push((r.completed_ns, -1));
    }
    edges.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    assert_eq!(most, 3, "reads in flight");
    // Every byte a call returned had arrived: no call returns before its first RPC could.
    assert!(calls.iter().all(|c| c.returned_ns >= c.issued_ns));
}
