//! Sequenced process groups: `after` (a group's shape runs from the end of an earlier group)
//! and `files_of` (a group accesses an earlier group's files with their layouts), on small
//! hand-computed cases.

use std::collections::BTreeSet;

use crate::engine_common::*;
use pfsqos_sim::{run_traced, RpcTrace};

const MIB: u64 = 1 << 20;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Two OSSs of two OSTs each on the exact 100 MiB/s device, links that never matter,
/// 1 MiB RPCs and stripes, Lustre's plain round-robin cursor. `jobs` is appended.
/// The hand computations count each call waiting for its RPCs: the client's cache is off.
fn cluster(jobs: &str) -> String {
    format!(
        r#"
name = "sequence"
[simulation]
duration_s = 20.0
[cluster]
clients = 2
brw_size = "1M"
stripe_size = "1M"
placement = "roundrobin"
{FAST_NET}
{EXACT_DEVICE}
[[oss]]
name = "oss0"
osts = 2
device = "exact"
[[oss]]
name = "oss1"
osts = 2
device = "exact"
{jobs}
{NO_CLIENT_CACHE}
"#
    )
}

/// Two processes each write a 4 MiB file of two stripes (1 MiB calls, one outstanding), then,
/// 0.5 s after the last write completes, the same two processes' files are read back.
const WRITE_THEN_READ: &str = r#"
[[job]]
id = "wr"
nodes = 2
clients = [0, 1]
[[job.processes]]
rw = "write"
bs = "1M"
size = "4M"
numjobs = 2
stripe_count = 2
[[job.processes]]
rw = "read"
bs = "1M"
size = "4M"
numjobs = 2
after = 0
files_of = 0
[job.processes.shape]
start_s = 0.5
"#;

/// Where each RPC of `process` went: (OST, object offset, file offset, size).
fn footprint(trace: &[RpcTrace], process: u32) -> BTreeSet<(u32, u64, u64, u64)> {
    trace
        .iter()
        .filter(|r| r.process == process)
        .map(|r| {
            (
                r.ost,
                r.object_offset_bytes,
                r.file_offset_bytes,
                r.size_bytes,
            )
        })
        .collect()
}

#[test]
fn reads_follow_the_writes_layout_and_start_after_the_last_write() {
    let s = scenario(&cluster(WRITE_THEN_READ));
    let (out, trace) = run_traced(&s, "nobw", 1).unwrap();
    let job = &out.jobs[0];
    assert!(job.finished);
    assert_eq!(job.bytes_written, 8 * MIB);
    assert_eq!(job.bytes_read, 8 * MIB);

    // The round-robin cursor gives file 0 OSTs 0, 1 and file 1 OSTs 2, 3; the reads of
    // processes 2 and 3 are exactly the writes of processes 0 and 1: same OSTs, same objects'
    // offsets, same file offsets (no new file, no new placement).
    assert_eq!(
        footprint(&trace, 0)
            .iter()
            .map(|f| f.0)
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([0, 1])
    );
    assert_eq!(
        footprint(&trace, 1)
            .iter()
            .map(|f| f.0)
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([2, 3])
    );
    for (reader, writer) in [(2, 0), (3, 1)] {
        assert_eq!(footprint(&trace, reader), footprint(&trace, writer));
        assert_eq!(footprint(&trace, reader).len(), 4);
    }
    assert!(trace.iter().all(|r| r.read == (r.process >= 2)));

    // Hand-computed: each process's four 1 MiB writes take 10 ms each on its own OSTs (plus
    // microseconds of latency), so the writes end after 40 ms; the reads start exactly 0.5 s
    // after the last write completed and take another 40 ms.
    let last_write_ns = trace
        .iter()
        .filter(|r| !r.read)
        .map(|r| r.completed_ns)
        .max()
        .unwrap();
    assert!(
        (40 * MS..41 * MS).contains(&last_write_ns),
        "{last_write_ns}"
    );
    let first_read_ns = trace
        .iter()
        .filter(|r| r.read)
        .map(|r| r.created_ns)
        .min()
        .unwrap();
    assert_eq!(first_read_ns, last_write_ns + S / 2);
    // Both readers start together, at the release.
    for reader in [2, 3] {
        let first = trace
            .iter()
            .filter(|r| r.process == reader)
            .map(|r| r.created_ns)
            .min();
        assert_eq!(first, Some(first_read_ns));
    }
    assert!(
        (first_read_ns + 40 * MS..first_read_ns + 41 * MS).contains(&out.end_ns),
        "{}",
        out.end_ns
    );
    // Deterministic.
    let (again, trace_again) = run_traced(&s, "nobw", 1).unwrap();
    assert_eq!(trace, trace_again);
    assert_eq!(out.end_ns, again.end_ns);
}

#[test]
fn a_shared_file_is_read_back_region_by_region() {
    let text = WRITE_THEN_READ
        .replace("stripe_count = 2", "stripe_count = 4\nfile = \"shared\"")
        .replace(
            "numjobs = 2\nafter",
            "numjobs = 2\nfile = \"shared\"\nafter",
        );
    let s = scenario(&cluster(&text));
    let (out, trace) = run_traced(&s, "nobw", 1).unwrap();
    assert!(out.jobs[0].finished);
    for (reader, writer) in [(2, 0), (3, 1)] {
        assert_eq!(footprint(&trace, reader), footprint(&trace, writer));
    }
    // Process 1's region is the second 4 MiB of the one file.
    assert!(footprint(&trace, 3).iter().all(|f| f.2 >= 4 * MIB));
}

#[test]
fn chains_and_unreleased_groups() {
    // Group 2 runs after group 1, which runs after group 0: three 40 ms stages back to back,
    // each starting exactly when the previous one's last RPC completed.
    let text = format!(
        "{WRITE_THEN_READ}{}",
        r#"
[[job.processes]]
rw = "write"
bs = "1M"
size = "4M"
numjobs = 2
after = 1
files_of = 0
"#
    );
    let s = scenario(&cluster(&text));
    let (out, trace) = run_traced(&s, "nobw", 1).unwrap();
    assert!(out.jobs[0].finished);
    assert_eq!(out.jobs[0].bytes_written, 16 * MIB);
    let last_read_ns = trace
        .iter()
        .filter(|r| r.read)
        .map(|r| r.completed_ns)
        .max()
        .unwrap();
    let rewrites: Vec<&RpcTrace> = trace.iter().filter(|r| r.process >= 4).collect();
    assert_eq!(rewrites.len(), 8);
    assert_eq!(
        rewrites.iter().map(|r| r.created_ns).min(),
        Some(last_read_ns)
    );
    assert_eq!(footprint(&trace, 4), footprint(&trace, 0));

    // A run too short for the first group: the groups after it never start, and the job is
    // not finished.
    let mut short = s.clone();
    short.simulation.duration_s = 0.03;
    let (out, trace) = run_traced(&short, "nobw", 1).unwrap();
    assert!(!out.jobs[0].finished);
    assert!(trace.iter().all(|r| r.process < 2));
}

#[test]
fn phased_stages_have_a_barrier_each_and_record_in_order() {
    // BTIO's pattern in small: 3 phases of compute 1 s then a 2 MiB write per process, then
    // 2 phases of compute 0.5 s then a 2 MiB read of what was written.
    let text = r#"
[[job]]
id = "btio"
nodes = 2
clients = [0, 1]
[[job.processes]]
rw = "write"
bs = "1M"
size = "6M"
numjobs = 2
stripe_count = 2
[job.processes.shape]
kind = "phases"
phases = 3
compute_s = 1.0
phase_size = "2M"
[[job.processes]]
rw = "read"
bs = "1M"
size = "4M"
numjobs = 2
after = 0
files_of = 0
[job.processes.shape]
kind = "phases"
phases = 2
compute_s = 0.5
phase_size = "2M"
"#;
    let s = scenario(&cluster(text));
    let (out, _) = run_traced(&s, "nobw", 1).unwrap();
    let job = &out.jobs[0];
    assert!(job.finished);
    let phases = job.phases.as_ref().unwrap();
    assert_eq!(phases.start_ns, 0);
    assert_eq!(phases.done.len(), 5);
    for p in &phases.done {
        // 2 MiB per process on its own two OSTs: 20 ms.
        assert_eq!(p.bytes, 4 * MIB);
        assert!((20 * MS..21 * MS).contains(&p.duration_ns()), "{p:?}");
    }
    // Each phase starts its compute time after the previous barrier; the first read phase
    // 0.5 s after the last write phase (the release), not 1 s.
    let d = &phases.done;
    assert_eq!(d[0].start_ns, S);
    for k in 1..3 {
        assert_eq!(d[k].start_ns, d[k - 1].end_ns + S);
    }
    assert_eq!(d[3].start_ns, d[2].end_ns + S / 2);
    assert_eq!(d[4].start_ns, d[3].end_ns + S / 2);
    assert_eq!(phases.run_time_ns(), d[4].end_ns);
}

#[test]
fn without_the_keys_reads_start_at_once_on_files_of_their_own() {
    // The same job without `after` and `files_of`: the readers start with the job, beside the
    // writers, on files of their own, so the run ends well before the sequenced one's 0.5 s.
    let own_files = WRITE_THEN_READ
        .replace("after = 0\nfiles_of = 0\n", "")
        .replace("[job.processes.shape]\nstart_s = 0.5\n", "");
    let s = scenario(&cluster(&own_files));
    let (out, trace) = run_traced(&s, "nobw", 1).unwrap();
    assert!(out.jobs[0].finished);
    assert_eq!(
        trace.iter().filter(|r| r.read).map(|r| r.created_ns).min(),
        Some(0)
    );
    assert!(out.end_ns < S / 2, "{}", out.end_ns);
}

#[test]
fn the_fluid_engine_refuses_sequenced_groups_built_in_code() {
    // Validation refuses `engine = "fluid"` with these keys; a scenario changed in code after
    // validation is refused by the fluid engine itself, naming the RPC engine.
    let mut s = scenario(&cluster(WRITE_THEN_READ));
    s.simulation.engine = pfsqos_sim::scenario::EngineKind::Fluid;
    let e = pfsqos_sim::run(&s, "nobw", 1, &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("RPC-level engine only"), "{e}");
    assert!(e.to_string().contains("processes[1]"), "{e}");
}
