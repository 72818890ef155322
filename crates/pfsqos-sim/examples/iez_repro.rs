//! iez §IV reproduction driver (iez, IPDPS '19): derives every case from
//! `scenarios/iez/testbed.toml` (3 OSSs x 5 OSTs of 10 GB, 2 clients), runs each under Lustre's
//! default round robin (`roundrobin`: consecutive OSTs from a cursor), Lustre's allocator as
//! lod_qos.c runs it (`lustre`: round robin over the OSS-interleaved array, weighted QOS when
//! free space is imbalanced) and `iez`, and prints Markdown tables: OSTCost (eq. 7), the
//! largest and mean OST utilization, OSS utilization, and the write rate (bytes over the
//! simulated time to write them all). Then Fig. 10's read rates: the IOR and HACC-I/O cases
//! again, each process reading its file back once all have written (a second process group
//! with `after` and `files_of`: the layouts the placer gave at creation); the read rate is the
//! bytes read over the time from the first read call to the last read's completion.
//! Every case runs twice: files created at set-up (placed from the start's snapshot), and
//! created at their first I/O and placed from the OSSs' last 60 s statistics report (iez's
//! collector, §III-B1). Last, one case beyond the paper where staleness matters: IOR starting
//! while another job fills oss1, under 60 s and 1 s reports (`stale_table`).
//! `scripts/reproduce-iez.sh` calls it; every measured number in `docs/reproductions/iez.md`
//! comes from its output.
//!
//! With a second argument, a directory, it also writes each table's largest case's OST and
//! OSS utilization per placer as SVG charts there (the paper's Fig. 7-9 and 11-14 kind) and
//! prints the Markdown that shows them.
//!
//! ```text
//! cargo run --release -p pfsqos-sim --example iez_repro -- scenarios/iez/testbed.toml [CHART_DIR]
//! ```

// A driver of the pure crate, not part of it: it reads files (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use pfsqos_sim::scenario::{ByteSize, FileMode, FilesCreated, JobSpec, ProcessGroupSpec};
use pfsqos_sim::{run, run_traced, RunOutput, Scenario};

const PLACERS: [&str; 3] = ["roundrobin", "lustre", "iez"];

/// When the run's files are created, and so which statistics the placer decides from.
#[derive(Clone, Copy)]
enum Created {
    /// Every file at set-up, placed from the start's snapshot (`files_created = "start"`).
    AtSetUp,
    /// Each file at its first I/O, placed from the OSSs' last report, taken every this many
    /// seconds (`files_created = "first_io"`, `oss_stats_period_s`).
    FirstIo { report_period_s: f64 },
}

impl Created {
    fn label(self) -> String {
        match self {
            Created::AtSetUp => "at set-up".to_string(),
            Created::FirstIo { report_period_s } => {
                format!("first I/O, {report_period_s} s reports")
            }
        }
    }

    fn apply(self, s: &mut Scenario) {
        match self {
            Created::AtSetUp => s.cluster.files_created = FilesCreated::Start,
            Created::FirstIo { report_period_s } => {
                s.cluster.files_created = FilesCreated::FirstIo;
                s.cluster.oss_stats_period_s = report_period_s;
            }
        }
    }
}

/// The paper's tables run both ways: files created at set-up (every earlier number), and at
/// their first I/O with iez's 60 s statistics (§III-B1).
const CREATED: [Created; 2] = [
    Created::AtSetUp,
    Created::FirstIo {
        report_period_s: 60.0,
    },
];
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

/// Every OST's utilization at the end of the run, and every OSS's (its OSTs' mean).
fn utilization(out: &RunOutput, s: &Scenario) -> (Vec<f64>, Vec<f64>) {
    let util: Vec<f64> = out
        .ost_space
        .iter()
        .map(|o| o.utilization().expect("the testbed's OSTs have sizes"))
        .collect();
    let per_oss = util.len() / s.osses.len();
    assert_eq!(
        per_oss * s.osses.len(),
        util.len(),
        "every OSS has as many OSTs"
    );
    let oss_util = util
        .chunks(per_oss)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    (util, oss_util)
}

struct Row {
    ost_util: Vec<f64>,
    cost: f64,
    max_util: f64,
    mean_util: f64,
    oss_util: Vec<f64>,
    rate_mb_s: f64,
}

fn measure(
    base: &Scenario,
    jobs: Vec<JobSpec>,
    placer: &str,
    used_first_oss: Option<u64>,
    created: Created,
) -> Row {
    let mut s = base.clone();
    s.jobs = jobs;
    s.cluster.placement = placer.to_string();
    created.apply(&mut s);
    if let Some(used) = used_first_oss {
        s.osses[0].ost_used = Some(ByteSize(used));
    }
    let out = run_quiet(&s);
    assert!(
        out.jobs.iter().all(|j| j.finished),
        "{}: unfinished",
        s.name
    );
    let (util, oss_util) = utilization(&out, &s);
    let written: u64 = out.jobs.iter().map(|j| j.bytes_written).sum();
    Row {
        cost: out.ost_cost().expect("something was written"),
        max_util: util.iter().copied().fold(0.0, f64::max),
        mean_util: util.iter().sum::<f64>() / util.len() as f64,
        ost_util: util,
        oss_util,
        rate_mb_s: written as f64 / 1e6 / (out.end_ns as f64 / 1e9),
    }
}

fn table(
    title: &str,
    base: &Scenario,
    cases: &[(String, Vec<JobSpec>)],
    used_first_oss: Option<u64>,
    charts: Option<&Path>,
) {
    println!("### {title}\n");
    println!("| case | files created | placer | OSTCost | max OST util | mean OST util | OSS util (1/2/3) | write rate (MB/s) |");
    println!("|---|---|---|---:|---:|---:|---|---:|");
    // The last (largest) case's utilization per placer, files created at set-up, for the
    // charts (Fig. 7-9 and 11-14 plot the same: one bar per OST or OSS and placer).
    let mut charted: Vec<Row> = Vec::new();
    for (i, (label, jobs)) in cases.iter().enumerate() {
        for (created, placer) in CREATED
            .iter()
            .flat_map(|c| PLACERS.iter().map(move |p| (*c, *p)))
        {
            let r = measure(base, jobs.clone(), placer, used_first_oss, created);
            println!(
                "| {label} | {} | {placer} | {:.3} | {:.1} % | {:.1} % | {} | {:.0} |",
                created.label(),
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
            if i + 1 == cases.len() && matches!(created, Created::AtSetUp) {
                charted.push(r);
            }
        }
    }
    println!();
    if let (Some(dir), Some((label, _))) = (charts, cases.last()) {
        chart_pair(dir, title, label, &charted);
    }
}

/// Writes the OST and OSS utilization charts of one case (one bar per placer) into `dir` and
/// prints the Markdown that shows them, linked relative to the measured file's directory.
fn chart_pair(dir: &Path, title: &str, case: &str, rows: &[Row]) {
    assert_eq!(rows.len(), PLACERS.len(), "one row per placer");
    let slug: String = title
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|w| !w.is_empty())
        .take(8)
        .collect::<Vec<_>>()
        .join("-");
    let link_dir = dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("the chart directory has a UTF-8 name");
    for (what, per) in [("OST", false), ("OSS", true)] {
        let n = if per {
            rows[0].oss_util.len()
        } else {
            rows[0].ost_util.len()
        };
        let names: Vec<String> = (0..n).map(|k| format!("{what}{k}")).collect();
        let groups: Vec<(&str, Vec<f64>)> = names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let values = rows
                    .iter()
                    .map(|r| 100.0 * if per { r.oss_util[k] } else { r.ost_util[k] })
                    .collect();
                (name.as_str(), values)
            })
            .collect();
        let file = format!("{slug}-{}.svg", what.to_ascii_lowercase());
        let svg = pfsqos_report::grouped_bar_chart_svg(
            &format!("{what} utilization: {case}"),
            "Utilization (%)",
            &PLACERS,
            &groups,
        );
        std::fs::write(dir.join(&file), svg).unwrap_or_else(|e| panic!("{file}: {e}"));
        println!("![{what} utilization, {case}]({link_dir}/{file})\n");
    }
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
fn read_back(base: &Scenario, jobs: Vec<JobSpec>, placer: &str, created: Created) -> (f64, f64) {
    let mut s = base.clone();
    s.jobs = with_read_back(jobs);
    s.cluster.placement = placer.to_string();
    created.apply(&mut s);
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
    println!("| case | files created | placer | read rate (MB/s) | vs roundrobin | vs lustre | write rate of the same run (MB/s) |");
    println!("|---|---|---|---:|---:|---:|---:|");
    for (label, jobs) in cases {
        for created in CREATED {
            let rates: Vec<(f64, f64)> = PLACERS
                .iter()
                .map(|placer| read_back(base, jobs.clone(), placer, created))
                .collect();
            for (placer, (read, write)) in PLACERS.iter().zip(&rates) {
                println!(
                    "| {label} | {} | {placer} | {read:.0} | {:+.1} % | {:+.1} % | {write:.0} |",
                    created.label(),
                    (read / rates[0].0 - 1.0) * 100.0,
                    (read / rates[1].0 - 1.0) * 100.0,
                );
            }
        }
    }
    println!();
}

/// Beyond the paper: what stale statistics change. Another job (`fill`, client 0) writes 4 GB
/// to each of oss1's five OSTs (two processes per OST, pinned by `stripe_offset`, so Lustre's
/// allocator places them at the OST asked for), and IOR (client 1, `procs` × 1.2 GB, stripe
/// count 4) starts `ior_start_s` later, while `fill` still writes. Files created at set-up
/// are placed from the start's snapshot; at their first I/O, from the last report: with 60 s
/// reports that is still the start's, with 1 s reports one taken during `fill`'s writes.
fn stale_table(base: &Scenario, procs: u32, ior_start_s: f64) {
    println!(
        "### Beyond the paper: stale statistics (IOR {procs} x 1.2 GB, stripe count 4, starting \
         {ior_start_s} s after another job began writing 4 GB to each of oss1's OSTs)\n"
    );
    println!("| files created | placer | OSTCost | OSS util (1/2/3) | IOR's bytes on oss1 | IOR's write rate (MB/s) |");
    println!("|---|---|---:|---|---:|---:|");
    let mut fill = job("fill", 2, 2 * GB, 1, false, vec![0]);
    let group = fill.groups.pop().expect("one group");
    for ost in 0..5 {
        fill.groups.push(ProcessGroupSpec {
            stripe_offset: Some(ost),
            ..group.clone()
        });
    }
    let mut ior = job("ior.1", procs, 1_200_000_000, 4, false, vec![1]);
    ior.groups[0].shape.start_s = ior_start_s;
    let modes = [
        Created::AtSetUp,
        Created::FirstIo {
            report_period_s: 60.0,
        },
        Created::FirstIo {
            report_period_s: 1.0,
        },
    ];
    for created in modes {
        for placer in PLACERS {
            let mut s = base.clone();
            s.jobs = vec![fill.clone(), ior.clone()];
            s.cluster.placement = placer.to_string();
            created.apply(&mut s);
            let out = run_quiet(&s);
            assert!(
                out.jobs.iter().all(|j| j.finished),
                "{}: unfinished",
                s.name
            );
            let (util, oss_util) = utilization(&out, &s);
            let per_oss = util.len() / s.osses.len();
            let oss_util: Vec<String> = oss_util
                .iter()
                .map(|u| format!("{:.1}", u * 100.0))
                .collect();
            let ior_out = &out.jobs[1];
            assert_eq!(ior_out.job_id, "ior.1");
            // Per OST, IOR's bytes over the run (its per-bin bytes summed).
            let ior_on_oss1: u64 = ior_out
                .bytes_per_ost_bin
                .iter()
                .filter(|&(ost, _)| ost < per_oss)
                .map(|(_, bins)| bins.iter().sum::<u64>())
                .sum();
            let span_ns =
                ior_out.last_io_ns.expect("IOR wrote") - ior_out.first_io_ns.expect("IOR wrote");
            println!(
                "| {} | {placer} | {:.3} | {} | {:.1} % | {:.0} |",
                created.label(),
                out.ost_cost().expect("something was written"),
                oss_util.join(" / "),
                ior_on_oss1 as f64 / ior_out.bytes_written as f64 * 100.0,
                ior_out.bytes_written as f64 / 1e6 / (span_ns as f64 / 1e9),
            );
        }
    }
    println!();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (path, charts) = match args.as_slice() {
        [_, path] => (path, None),
        [_, path, dir] => (path, Some(Path::new(dir))),
        _ => {
            eprintln!("usage: iez_repro SCENARIO [CHART_DIR]");
            std::process::exit(2);
        }
    };
    if let Some(dir) = charts {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
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
        charts,
    );
    table(
        "Fig. 8: IOR file per process, stripe count 4",
        &base,
        &[ior(8, 4), ior(16, 4), ior(32, 4), ior(64, 4)],
        None,
        charts,
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
        charts,
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
        charts,
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
        charts,
    );
    table(
        "Beyond the paper: oss1's OSTs already 40 % full (Lustre switches to its weighted allocator)",
        &base,
        &[ior(32, 4), ior(64, 8)],
        Some(4 * GB),
        charts,
    );
    stale_table(&base, 32, 3.0);
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
    read_table(
        "Single shared file: read rates, each process reading its part back after all have written (Fig. 10g)",
        &base,
        &[ssf(16), ssf(32)],
    );
}
