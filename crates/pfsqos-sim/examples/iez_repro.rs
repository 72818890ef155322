//! iez §IV reproduction driver (iez.txt): derives every case from
//! `scenarios/iez/testbed.toml` (3 OSSs x 5 OSTs of 10 GB, 2 clients), runs each under Lustre's
//! default round robin (`roundrobin`: consecutive OSTs from a cursor), Lustre's allocator as
//! lod_qos.c runs it (`lustre`: round robin over the OSS-interleaved array, weighted QOS when
//! free space is imbalanced) and `iez`, and prints Markdown tables: OSTCost (eq. 7), the
//! largest and mean OST utilization, OSS utilization, and the write rate (bytes over the
//! simulated time to write them all). Then Fig. 10's read rates: the IOR and HACC-I/O cases
//! again, each process reading its file back once all have written (a second process group
//! with `after` and `files_of`: the layouts the placer gave at creation); the read rate is the
//! bytes read over the time from the first read call to the last read's completion.
//! `scripts/reproduce-iez.sh` calls it; every measured number in `docs/reproductions/iez.md`
//! comes from its output.
//!
//! ```text
//! cargo run --release -p pfsqos-sim --example iez_repro -- scenarios/iez/testbed.toml
//! ```

// A driver of the pure crate, not part of it: it reads files (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use pfsqos_sim::scenario::{ByteSize, FileMode, JobSpec, ProcessGroupSpec};
use pfsqos_sim::{run, run_traced, RunOutput, Scenario};

const PLACERS: [&str; 3] = ["roundrobin", "lustre", "iez"];
const GB: u64 = 1_000_000_000;

fn run_quiet(s: &Scenario) -> RunOutput {
    run(s, "nobw", s.simulation.seed, &mut |_, _| {}).unwrap_or_else(|e| panic!("{}: {e}", s.name))
}

/// One job of `procs` processes writing `bytes_each` each (one file each, or one shared file),
/// on `clients`.
fn job(
    id: &str,
    procs: u32,
    bytes_each: u64,
    stripe_count: u32,
    shared: bool,
    clients: Vec<u32>,
) -> JobSpec {
    let mut j = JobSpec {
        id: id.to_string(),
        nodes: clients.len() as u32,
        weight: None,
        clients: Some(clients),
        uid: 0,
        gid: 0,
        groups: Vec::new(),
    };
    j.groups.push(ProcessGroupSpec {
        numjobs: procs,
        size: ByteSize(bytes_each),
        stripe_count: Some(stripe_count),
        file: if shared {
            FileMode::Shared
        } else {
            FileMode::PerProcess
        },
        ..template_group()
    });
    j
}

fn template_group() -> ProcessGroupSpec {
    let base = Scenario::from_toml_str(
        r#"
name = "t"
[simulation]
duration_s = 1.0
[[oss]]
name = "o"
osts = 1
[[job]]
id = "j"
nodes = 1
processes = [{ rw = "write", bs = "1M", size = "1M" }]
"#,
        "<template>",
    )
    .expect("the template parses");
    base.jobs[0].groups[0].clone()
}

struct Row {
    cost: f64,
    max_util: f64,
    mean_util: f64,
    oss_util: Vec<f64>,
    rate_mb_s: f64,
}

fn measure(base: &Scenario, jobs: Vec<JobSpec>, placer: &str, used_first_oss: Option<u64>) -> Row {
    let mut s = base.clone();
    s.jobs = jobs;
    s.cluster.placement = placer.to_string();
    if let Some(used) = used_first_oss {
        s.osses[0].ost_used = Some(ByteSize(used));
    }
    let out = run_quiet(&s);
    assert!(
        out.jobs.iter().all(|j| j.finished),
        "{}: unfinished",
        s.name
    );
    let util: Vec<f64> = out
        .ost_space
        .iter()
        .map(|o| o.utilization().expect("the testbed's OSTs have sizes"))
        .collect();
    let per_oss = util.len() / s.osses.len();
    let oss_util = util
        .chunks(per_oss)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    let written: u64 = out.jobs.iter().map(|j| j.bytes_written).sum();
    Row {
        cost: out.ost_cost().expect("something was written"),
        max_util: util.iter().copied().fold(0.0, f64::max),
        mean_util: util.iter().sum::<f64>() / util.len() as f64,
        oss_util,
        rate_mb_s: written as f64 / 1e6 / (out.end_ns as f64 / 1e9),
    }
}

fn table(
    title: &str,
    base: &Scenario,
    cases: &[(String, Vec<JobSpec>)],
    used_first_oss: Option<u64>,
) {
    println!("### {title}\n");
    println!("| case | placer | OSTCost | max OST util | mean OST util | OSS util (1/2/3) | write rate (MB/s) |");
    println!("|---|---|---:|---:|---:|---|---:|");
    for (label, jobs) in cases {
        for placer in PLACERS {
            let r = measure(base, jobs.clone(), placer, used_first_oss);
            println!(
                "| {label} | {placer} | {:.3} | {:.1} % | {:.1} % | {} | {:.0} |",
                r.cost,
                r.max_util * 100.0,
                r.mean_util * 100.0,
                r.oss_util
                    .iter()
                    .map(|u| format!("{:.1}", u * 100.0))
                    .collect::<Vec<_>>()
                    .join(" / "),
                r.rate_mb_s
            );
        }
    }
    println!();
}

/// `jobs` with each job's processes reading their files back after all have written: a read
/// group `after` the write group on its files (`files_of`), same processes and sizes.
fn with_read_back(mut jobs: Vec<JobSpec>) -> Vec<JobSpec> {
    for j in &mut jobs {
        let write = j.groups[0].clone();
        j.groups.push(ProcessGroupSpec {
            rw: pfsqos_sim::scenario::Rw::Read,
            stripe_count: None,
            stripe_size: None,
            stripe_offset: None,
            after: Some(0),
            files_of: Some(0),
            ..write
        });
    }
    jobs
}

/// Read rate (MB/s) of the read-back of `jobs` under `placer`: bytes read over the time from
/// the first read call to the last read's completion; and the write rate of the same run
/// (bytes written over the time to the last write's completion) as a check against the
/// write tables.
fn read_back(base: &Scenario, jobs: Vec<JobSpec>, placer: &str) -> (f64, f64) {
    let mut s = base.clone();
    s.jobs = with_read_back(jobs);
    s.cluster.placement = placer.to_string();
    let (out, trace) =
        run_traced(&s, "nobw", s.simulation.seed).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    assert!(
        out.jobs.iter().all(|j| j.finished),
        "{}: unfinished",
        s.name
    );
    let reads = trace.iter().filter(|r| r.read);
    let first_ns = reads.clone().map(|r| r.created_ns).min().expect("reads");
    let last_ns = reads.clone().map(|r| r.completed_ns).max().expect("reads");
    let read_bytes: u64 = reads.map(|r| r.size_bytes).sum();
    assert_eq!(
        read_bytes,
        out.jobs.iter().map(|j| j.bytes_read).sum::<u64>()
    );
    let writes_end_ns = trace
        .iter()
        .filter(|r| !r.read)
        .map(|r| r.completed_ns)
        .max()
        .expect("writes");
    assert!(first_ns >= writes_end_ns, "reads start after the writes");
    let written: u64 = out.jobs.iter().map(|j| j.bytes_written).sum();
    (
        read_bytes as f64 / 1e6 / ((last_ns - first_ns) as f64 / 1e9),
        written as f64 / 1e6 / (writes_end_ns as f64 / 1e9),
    )
}

fn read_table(title: &str, base: &Scenario, cases: &[(String, Vec<JobSpec>)]) {
    println!("### {title}\n");
    println!("| case | placer | read rate (MB/s) | vs roundrobin | vs lustre | write rate of the same run (MB/s) |");
    println!("|---|---|---:|---:|---:|---:|");
    for (label, jobs) in cases {
        let rates: Vec<(f64, f64)> = PLACERS
            .iter()
            .map(|placer| read_back(base, jobs.clone(), placer))
            .collect();
        for (placer, (read, write)) in PLACERS.iter().zip(&rates) {
            println!(
                "| {label} | {placer} | {read:.0} | {:+.1} % | {:+.1} % | {write:.0} |",
                (read / rates[0].0 - 1.0) * 100.0,
                (read / rates[1].0 - 1.0) * 100.0,
            );
        }
    }
    println!();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: iez_repro SCENARIO");
        std::process::exit(2);
    };
    let base = Scenario::load(Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    let both = || vec![0, 1];
    let ior = |procs: u32, sc: u32| {
        (
            format!("IOR FPP, {procs} processes, 1.2 GB each, stripe count {sc}"),
            vec![job("ior.1", procs, 1_200_000_000, sc, false, both())],
        )
    };
    table(
        "Fig. 7: IOR file per process, stripe count 8",
        &base,
        &[ior(8, 8), ior(16, 8), ior(32, 8), ior(64, 8)],
        None,
    );
    table(
        "Fig. 8: IOR file per process, stripe count 4",
        &base,
        &[ior(8, 4), ior(16, 4), ior(32, 4), ior(64, 4)],
        None,
    );
    // HACC-I/O, 10 M particles: about 4, 7.7 and 13.5 GB in all for 8, 16 and 32 processes.
    let hacc = |procs: u32, total_gb: f64| {
        let each = (total_gb * GB as f64 / f64::from(procs)) as u64;
        (
            format!("HACC-I/O FPP, {procs} processes, {total_gb} GB, stripe count 8"),
            vec![job("hacc.1", procs, each, 8, false, both())],
        )
    };
    table(
        "Fig. 9: HACC-I/O file per process, stripe count 8",
        &base,
        &[hacc(8, 4.0), hacc(16, 7.7), hacc(32, 13.5)],
        None,
    );
    let ssf = |procs: u32| {
        (
            format!("IOR SSF, {procs} processes x 300 MB, stripe count 8"),
            vec![job("ssf.1", procs, 300_000_000, 8, true, both())],
        )
    };
    table(
        "Single shared file, stripe count 8",
        &base,
        &[ssf(16), ssf(32)],
        None,
    );
    table(
        "IOR and HACC-I/O at once from two clients (§IV-F)",
        &base,
        &[(
            "IOR FPP 32 x 1.2 GB sc 4 (client 0) + HACC 16 procs 7.7 GB sc 8 (client 1)"
                .to_string(),
            vec![
                job("ior.1", 32, 1_200_000_000, 4, false, vec![0]),
                job(
                    "hacc.1",
                    16,
                    (7.7 * GB as f64 / 16.0) as u64,
                    8,
                    false,
                    vec![1],
                ),
            ],
        )],
        None,
    );
    table(
        "Beyond the paper: oss1's OSTs already 40 % full (Lustre switches to its weighted allocator)",
        &base,
        &[ior(32, 4), ior(64, 8)],
        Some(4 * GB),
    );
    read_table(
        "Fig. 10: read rates, each process reading its file back after all have written",
        &base,
        &[
            ior(8, 4),
            ior(16, 4),
            ior(32, 4),
            ior(64, 4),
            ior(8, 8),
            ior(16, 8),
            ior(32, 8),
            ior(64, 8),
            hacc(8, 4.0),
            hacc(16, 7.7),
            hacc(32, 13.5),
        ],
    );
}
