//! Files created during the run (`files_created = "first_io"`) are placed from the OSSs' last
//! periodic statistics report (`oss_stats_period_s`, iez's 60 s collector), not from the
//! current state: on a run where the load moves from one OSS to the other, a stale report sends
//! iez to the OSS that was idle when the report was taken and is busy now.

use crate::engine_common::*;

/// Two OSSs of two OSTs. `early` keeps oss0's OSTs busy from 0 to 25 s, `late` keeps oss1's
/// busy from 22 s on (both pinned by `stripe_offset`, so placed by Lustre's allocator at the
/// OST asked for; they read, so they leave the OSTs' fill alone and iez, which traces writes,
/// holds no prediction for them), and `new` creates one file of stripe count 2 at 30 s: iez
/// places it.
fn moving_load(period_s: f64, files_created: &str) -> String {
    moving_load_placed("iez", period_s, files_created)
}

/// [`moving_load`] with another placer.
fn moving_load_placed(placement: &str, period_s: f64, files_created: &str) -> String {
    format!(
        r#"
name = "moving-load"
[simulation]
duration_s = 200.0
[cluster]
clients = 3
brw_size = "4M"
stripe_size = "4M"
placement = "{placement}"
files_created = "{files_created}"
oss_stats_period_s = {period_s}
{FAST_NET}
{EXACT_DEVICE}
[[oss]]
name = "oss0"
osts = 2
device = "exact"
ost_capacity = "100G"
[[oss]]
name = "oss1"
osts = 2
device = "exact"
ost_capacity = "100G"

[[job]]
id = "early"
nodes = 1
clients = [0]
[[job.processes]]
rw = "read"
bs = "4M"
size = "64G"
numjobs = 4
stripe_count = 1
stripe_offset = 0
[job.processes.shape]
stop_s = 25.0
[[job.processes]]
rw = "read"
bs = "4M"
size = "64G"
numjobs = 4
stripe_count = 1
stripe_offset = 1
[job.processes.shape]
stop_s = 25.0

[[job]]
id = "late"
nodes = 1
clients = [1]
[[job.processes]]
rw = "read"
bs = "4M"
size = "64G"
numjobs = 4
stripe_count = 1
stripe_offset = 2
[job.processes.shape]
start_s = 22.0
stop_s = 60.0
[[job.processes]]
rw = "read"
bs = "4M"
size = "64G"
numjobs = 4
stripe_count = 1
stripe_offset = 3
[job.processes.shape]
start_s = 22.0
stop_s = 60.0

[[job]]
id = "new"
nodes = 1
clients = [2]
[[job.processes]]
rw = "write"
bs = "4M"
size = "1G"
numjobs = 1
stripe_count = 2
[job.processes.shape]
start_s = 30.0
"#
    )
}

/// Bytes job `job` wrote on each OSS (OSTs 0-1 are oss0, 2-3 oss1).
fn bytes_per_oss(out: &pfsqos_sim::RunOutput, job: usize) -> [u64; 2] {
    let mut per_oss = [0u64; 2];
    for (ost, bins) in out.jobs[job].bytes_per_ost_bin.iter() {
        per_oss[ost / 2] += bins.iter().sum::<u64>();
    }
    per_oss
}

fn write_time_ns(out: &pfsqos_sim::RunOutput, job: usize) -> u64 {
    let j = &out.jobs[job];
    assert!(j.finished, "job {} finished", j.job_id);
    j.last_io_ns.unwrap() - j.first_io_ns.unwrap()
}

#[test]
fn a_stale_report_places_on_the_oss_that_was_idle_then() {
    // Reports every 20 s: at 30 s the placer holds the 20 s report, oss0 busy and oss1 idle.
    let stale = run_quiet(&scenario(&moving_load(20.0, "first_io")), "nobw", 1);
    // Reports every 0.5 s: the 30 s report has oss0 idle (its writers stopped at 25 s) and
    // oss1 busy.
    let fresh = run_quiet(&scenario(&moving_load(0.5, "first_io")), "nobw", 1);
    let new = 2;
    assert_eq!(stale.jobs[new].job_id, "new");
    let gib = 1u64 << 30;
    assert_eq!(bytes_per_oss(&stale, new), [0, gib], "stale: on oss1");
    assert_eq!(bytes_per_oss(&fresh, new), [gib, 0], "fresh: on oss0");
    // Worse or equal: the stale placement shares oss1 with `late`'s eight writers.
    let (t_stale, t_fresh) = (write_time_ns(&stale, new), write_time_ns(&fresh, new));
    assert!(t_stale > t_fresh, "stale {t_stale} ns, fresh {t_fresh} ns");
    // The other jobs wrote where they were pinned, in both runs.
    for out in [&stale, &fresh] {
        assert_eq!(bytes_per_oss(out, 0)[1], 0);
        assert_eq!(bytes_per_oss(out, 1)[0], 0);
    }
}

/// The `shortestqueue` placer reads the same reports' queues (`Placement::observe`): a stale
/// report shows oss0's queues full and sends `new` to oss1, a fresh one the reverse.
#[test]
fn shortest_queue_places_from_the_reported_queues() {
    let place = |period_s| {
        // Without the client's cache each reader keeps one call outstanding, so its OSTs'
        // queues never drain between reports (read-ahead empties them for stretches).
        let text = moving_load_placed("shortestqueue", period_s, "first_io")
            .replace("[simulation]", &format!("{NO_CLIENT_CACHE}\n[simulation]"));
        bytes_per_oss(&run_quiet(&scenario(&text), "nobw", 1), 2)
    };
    let gib = 1u64 << 30;
    assert_eq!(place(20.0), [0, gib], "stale: on oss1");
    assert_eq!(place(0.5), [gib, 0], "fresh: on oss0");
}

/// With every file created at the start (the default) the reports come after the last
/// create: the period changes nothing, and `new` is placed from the start's idle snapshot.
#[test]
fn files_created_at_the_start_ignore_the_statistics_period() {
    let a = run_quiet(&scenario(&moving_load(20.0, "start")), "nobw", 1);
    let b = run_quiet(&scenario(&moving_load(0.5, "start")), "nobw", 1);
    assert_eq!(a.jobs, b.jobs);
    assert_eq!(a.ost_space, b.ost_space);
}

/// A run of files created at their first I/O is deterministic.
#[test]
fn first_io_creates_are_deterministic() {
    let s = scenario(&moving_load(0.5, "first_io"));
    let a = run_quiet(&s, "nobw", 7);
    let b = run_quiet(&s, "nobw", 7);
    assert_eq!(a.jobs, b.jobs);
    assert_eq!(a.engine, b.engine);
}

#[test]
fn statistics_keys_are_checked() {
    let err = |text: &str| {
        pfsqos_sim::Scenario::from_toml_str(text, "<t>")
            .unwrap_err()
            .to_string()
    };
    let e = err(&moving_load(0.0, "first_io"));
    assert!(e.contains("cluster.oss_stats_period_s"), "{e}");
    let e = err(&moving_load(1e9, "first_io"));
    assert!(e.contains("cluster.oss_stats_period_s"), "{e}");
    let e = err(&moving_load(1.0, "sometime"));
    assert!(e.contains("files_created"), "{e}");
    // The fluid engine creates every file at the start.
    let fluid = moving_load(1.0, "first_io").replace(
        "duration_s = 200.0",
        "duration_s = 200.0\nengine = \"fluid\"",
    );
    let e = err(&fluid);
    assert!(e.contains("cluster.files_created"), "{e}");
    // The default is the paper's 60 s.
    let s = scenario(&moving_load(1.0, "first_io").replace("oss_stats_period_s = 1\n", ""));
    assert_eq!(s.cluster.oss_stats_period_s, 60.0);
}
