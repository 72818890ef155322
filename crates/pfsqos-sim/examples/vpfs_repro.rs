//! vPFS §IV-C reproduction driver: runs the paper's Fig. 5 and Fig. 6 set-ups
//! (`scenarios/vpfs/`) under the policies the paper compares and prints Markdown tables.
//! `scripts/reproduce-vpfs.sh` calls it; every measured number in `docs/reproductions/vpfs.md`
//! comes from its output.
//!
//! ```text
//! cargo run --release -p pfsqos-sim --example vpfs_repro -- fig5 scenarios/vpfs/fig5-asymmetric.toml
//! cargo run --release -p pfsqos-sim --example vpfs_repro -- fig6 scenarios/vpfs/fig6-arrivals.toml
//! cargo run --release -p pfsqos-sim --example vpfs_repro -- table2 scenarios/vpfs/table2-96-servers.toml
//! cargo run --release -p pfsqos-sim --example vpfs_repro -- fig7 scenarios/vpfs/fig7-btio-c-full.toml
//! ```
//!
//! **fig5**: for each of app2's access patterns (sequential write, sequential read, random
//! reads and writes: half its processes `randread`, half `randwrite`) and each target ratio
//! (app1's weight 2, 8, 32 against app2's 1), runs DSFQ with the paper's 10 MB threshold and
//! with a threshold below the request size (512 KiB: a broadcast on every request), plus FIFO
//! and SFQ(D) without synchronization once per pattern, and last one row beyond the paper
//! (32:1 with every process keeping 8 calls in flight). Columns: the achieved app1:app2 ratio of
//! bytes completed after the first `WARMUP_S` seconds, its error against the target, and the
//! synchronization traffic (broadcasts, messages received, bytes received, all servers).
//!
//! **fig6**: runs FIFO and layout-driven DSFQ and prints the unfairness (vPFS's formula) of
//! every 60 s window, then the mean of the 60 s and 5 s windows before and after the last
//! arrival (420 s), and their maxima.
//!
//! **fig7** (also Fig. 1): BTIO (job 0: a `phases` write stage, then, `after` it, a `phases`
//! read stage on the same files) against IOR (job 1). Runs BTIO alone, IOR alone for 60 s (one
//! server's rate under IOR: the non-work-conserving cap), then both without control, under
//! layout-driven DSFQ at the scenario's weights, the same with a 10 s flow idle time, and that
//! plus the cap. Columns: BTIO's run time (start to the end of its last phase, the last read
//! when it has a read stage), its I/O time (sum of all its phases' durations, writes and
//! reads), the I/O throughput kept (bytes over I/O time, against BTIO alone) over all phases
//! and for the write and the read phases apart, the paper's figures beside them, and IOR's
//! rate while BTIO runs.
//!
//! **table2**: runs FIFO, threshold DSFQ with a broadcast on every request and layout DSFQ (with
//! the default 1 s flow idle time, and with 10 s) on the 96-server set-up; prints the total throughput's mean and standard deviation over 1 s
//! windows after `WARMUP_S`, one application's, the 60 s unfairness, the synchronization
//! traffic per server and second (mean over servers), and the simulator's speed (events per
//! wall-clock second of this run).

// A driver of the pure crate, not part of it: it reads files and measures wall time
// (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;
use std::time::Instant;

use pfsqos_core::metrics::WindowDeviation;
use pfsqos_sim::scenario::{ProcessGroupSpec, Rw};
use pfsqos_sim::{run, RunOutput, Scenario};

/// Start-up excluded from the Fig. 5 ratios.
const WARMUP_S: f64 = 5.0;
/// Fig. 6's last arrival: all eight applications run from here on.
const ALL_ARRIVED_S: f64 = 420.0;

fn run_quiet(s: &Scenario, policy: &str) -> RunOutput {
    run(s, policy, s.simulation.seed, &mut |_, _| {}).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

fn bins_from(out: &RunOutput, from_s: f64) -> usize {
    (from_s * 1e9 / out.bin_ns as f64).ceil() as usize
}

fn job_bytes_from(out: &RunOutput, job: usize, from_bin: usize) -> u64 {
    out.jobs[job].bytes_per_bin().iter().skip(from_bin).sum()
}

fn sync_totals(out: &RunOutput) -> (u64, u64, u64) {
    out.sync.iter().fold((0, 0, 0), |(b, m, y), s| {
        (
            b + s.counters.broadcasts_out,
            m + s.counters.messages_in,
            y + s.counters.bytes_in,
        )
    })
}

fn with_pattern(base: &Scenario, pattern: &str, w1: u32) -> Scenario {
    let mut s = base.clone();
    s.jobs[0].weight = Some(w1);
    s.jobs[1].weight = Some(1);
    let g = s.jobs[1].groups[0].clone();
    s.jobs[1].groups = match pattern {
        "write" => vec![ProcessGroupSpec { rw: Rw::Write, ..g }],
        "read" => vec![ProcessGroupSpec { rw: Rw::Read, ..g }],
        "random r/w" => {
            let half = g.numjobs / 2;
            vec![
                ProcessGroupSpec {
                    rw: Rw::Randread,
                    numjobs: half,
                    ..g.clone()
                },
                ProcessGroupSpec {
                    rw: Rw::Randwrite,
                    numjobs: g.numjobs - half,
                    ..g
                },
            ]
        }
        other => panic!("unknown pattern {other}"),
    };
    s
}

fn fig5_row(s: &Scenario, label: &str, w1: u32, policy: &str) -> RunOutput {
    let out = run_quiet(s, policy);
    let from = bins_from(&out, WARMUP_S);
    let (a, b) = (job_bytes_from(&out, 0, from), job_bytes_from(&out, 1, from));
    let ratio = a as f64 / b.max(1) as f64;
    let (broadcasts, messages, bytes) = sync_totals(&out);
    println!(
        "| {label} | {w1}:1 | `{policy}` | {ratio:.2}:1 | {:+.1} % | {broadcasts} | {messages} | {bytes} |",
        (ratio / f64::from(w1) - 1.0) * 100.0
    );
    out
}

/// Each server's rate (MB/s) of app1 and app2 after the warm-up: where a total-service ratio
/// comes from when app2 also uses servers app1 does not.
fn per_server_rates(out: &RunOutput) {
    let from = bins_from(out, WARMUP_S);
    let secs = out.end_ns as f64 / 1e9 - from as f64 * out.bin_ns as f64 / 1e9;
    assert!(secs > 0.0, "the run outlasts the warm-up");
    println!("| server | app1 MB/s | app2 MB/s |");
    println!("|---|---:|---:|");
    for (o, name) in out.osts.iter().enumerate() {
        let rate = |job: usize| {
            out.jobs[job]
                .bytes_per_ost_bin
                .ost(o)
                .iter()
                .skip(from)
                .sum::<u64>() as f64
                / 1e6
                / secs
        };
        println!("| {name} | {:.1} | {:.1} |", rate(0), rate(1));
    }
    println!();
}

fn fig5(base: &Scenario) {
    println!("| app2 pattern | target app1:app2 | policy | achieved | error | broadcasts | messages in | bytes in |");
    println!("|---|---|---|---|---|---|---|---|");
    for pattern in ["write", "read", "random r/w"] {
        for w1 in [2u32, 8, 32] {
            let s = with_pattern(base, pattern, w1);
            let mut policies = vec![
                "vpfs:sync=threshold:threshold=10M",
                "vpfs:sync=threshold:threshold=512k",
            ];
            if w1 == 2 {
                policies.insert(0, "vpfs:sched=sfqd");
                policies.insert(0, "nobw");
            }
            for policy in policies {
                fig5_row(&s, pattern, w1, policy);
            }
        }
    }
    // Not in the paper: every process keeps 8 calls in flight, so app2 is backlogged on every
    // server, including the four app1 does not use.
    let mut deep = with_pattern(base, "write", 32);
    for job in &mut deep.jobs {
        for group in &mut job.groups {
            group.iodepth = 8;
        }
    }
    let out = fig5_row(
        &deep,
        "write, iodepth 8",
        32,
        "vpfs:sync=threshold:threshold=10M",
    );
    println!();
    println!("### Fig. 5, write at iodepth 8, 32:1: rates per server\n");
    per_server_rates(&out);
}

fn windows(out: &RunOutput, window_s: f64) -> Vec<WindowDeviation> {
    out.windowed_share_deviation((window_s * 1e9) as u64).1
}

fn mean_max(ws: &[&WindowDeviation]) -> (f64, f64) {
    if ws.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = ws.iter().map(|w| w.deviation).sum::<f64>() / ws.len() as f64;
    let max = ws.iter().map(|w| w.deviation).fold(0.0, f64::max);
    (mean * 100.0, max * 100.0)
}

fn fig6(base: &Scenario) {
    let runs: Vec<(&str, RunOutput)> = ["nobw", "vpfs:sched=sfqd", "vpfs:sync=layout"]
        .into_iter()
        .map(|p| (p, run_quiet(base, p)))
        .collect();
    println!("Unfairness of each 60 s window (%):");
    println!();
    print!("| window |");
    for (p, _) in &runs {
        print!(" `{p}` |");
    }
    println!();
    print!("|---|");
    for _ in &runs {
        print!("---|");
    }
    println!();
    let per_run: Vec<Vec<WindowDeviation>> = runs.iter().map(|(_, o)| windows(o, 60.0)).collect();
    let starts: std::collections::BTreeSet<usize> = per_run
        .iter()
        .flat_map(|ws| ws.iter().map(|w| w.first_bin))
        .collect();
    for start in starts {
        let bin_s = runs[0].1.bin_ns as f64 / 1e9;
        print!(
            "| {:.0}-{:.0} s |",
            start as f64 * bin_s,
            start as f64 * bin_s + 60.0
        );
        for ws in &per_run {
            match ws.iter().find(|w| w.first_bin == start) {
                Some(w) => print!(" {:.1} ({} apps) |", w.deviation * 100.0, w.jobs),
                None => print!(" – |"),
            }
        }
        println!();
    }
    println!();
    println!("| policy | window | mean before 420 s | mean after 420 s | max after 420 s | max overall | sync broadcasts | messages in |");
    println!("|---|---|---|---|---|---|---|---|");
    for (policy, out) in &runs {
        let bin_s = out.bin_ns as f64 / 1e9;
        let (broadcasts, messages, _) = sync_totals(out);
        for window_s in [60.0, 5.0] {
            let ws = windows(out, window_s);
            let split = (ALL_ARRIVED_S / bin_s).round() as usize;
            let before: Vec<&WindowDeviation> = ws.iter().filter(|w| w.first_bin < split).collect();
            let after: Vec<&WindowDeviation> = ws.iter().filter(|w| w.first_bin >= split).collect();
            let all: Vec<&WindowDeviation> = ws.iter().collect();
            let (mb, _) = mean_max(&before);
            let (ma, xa) = mean_max(&after);
            let (_, x) = mean_max(&all);
            println!(
                "| `{policy}` | {window_s:.0} s | {mb:.1} % | {ma:.1} % | {xa:.1} % | {x:.1} % | {broadcasts} | {messages} |"
            );
        }
    }
}

/// BTIO's phases: `stages[i]` rounds in stage `i` (its groups without `after`, then each
/// `after` stage in order of first appearance), as the engine records them: stage after stage,
/// each barrier's phases in order, when the stages run one after the other.
fn btio_stages(job: &pfsqos_sim::scenario::JobSpec) -> Vec<u32> {
    let mut seen: Vec<Option<u32>> = Vec::new();
    let mut stages = Vec::new();
    for g in &job.groups {
        if seen.contains(&g.after) {
            continue;
        }
        seen.push(g.after);
        if let Some(n) = g.shape.phases {
            stages.push(n);
        }
    }
    stages
}

/// I/O time (s) and bytes of some phases.
#[derive(Clone, Copy)]
struct Io {
    s: f64,
    bytes: u64,
}

impl Io {
    fn mb_s(self) -> f64 {
        self.bytes as f64 / 1e6 / self.s
    }
}

/// BTIO's times in a run, from its phase records.
struct Btio {
    /// From the job's start to the end of its last phase (the computation after it is the
    /// same in every run).
    run_s: f64,
    /// Every phase.
    all: Io,
    /// Each stage's phases (the write stage, then the read stage).
    stages: Vec<Io>,
}

/// [`Btio`] of `job` in a run. `None` when the run cut a phase (the duration is too short).
fn btio_times(out: &RunOutput, job: usize, stages: &[u32]) -> Option<Btio> {
    let p = out.jobs[job].phases.as_ref()?;
    let phases: u32 = stages.iter().sum();
    if p.done.len() != phases as usize {
        return None;
    }
    let last = p.done.last()?;
    let io = |records: &[pfsqos_sim::PhaseRecord]| Io {
        s: records.iter().map(|r| r.duration_ns()).sum::<u64>() as f64 / 1e9,
        bytes: records.iter().map(|r| r.bytes).sum(),
    };
    let mut from = 0;
    let stage_io = stages
        .iter()
        .map(|&n| {
            let records = &p.done[from..from + n as usize];
            from += n as usize;
            io(records)
        })
        .collect();
    Some(Btio {
        run_s: (last.end_ns - p.start_ns) as f64 / 1e9,
        all: io(&p.done),
        stages: stage_io,
    })
}

/// The paper's Fig. 1 / Fig. 7 numbers for a BTIO class, relative to standalone: run-time
/// increase and I/O throughput kept, for Native (no control), layout DSFQ and its NWC variant.
/// Class A and C text of §II-A and §IV-C-3; "NWC ... the same level of performance as when it
/// runs alone".
fn fig7_paper(class: &str) -> [(&'static str, &'static str); 3] {
    match class {
        "A" => [
            ("+228.8 %", "7.5 %"),
            ("+153.3 %", "16.8 %"),
            ("≈ 0 %", "≈ 100 %"),
        ],
        _ => [
            ("+76 %", "31.6 %"),
            ("+20.3 %", "72.1 %"),
            ("≈ 0 %", "≈ 100 %"),
        ],
    }
}

/// Fig. 1 and Fig. 7: BTIO (job 0, `phases` shape) against IOR (job 1). Runs BTIO alone, IOR
/// alone (to measure one server's rate under IOR, the non-work-conserving cap), then both
/// without control, under layout-driven DSFQ at the scenario's weights, with a 10 s flow idle
/// time (BTIO's 6 s computations no longer make it leave the servers), and with the cap.
fn fig7(base: &Scenario) {
    let stages = btio_stages(&base.jobs[0]);
    assert!(
        !stages.is_empty(),
        "job 0 must be BTIO, with a phases shape"
    );
    let class = if base.jobs[0].groups[0].bs.bytes() < 1 << 20 {
        "A"
    } else {
        "C"
    };
    let mut alone = base.clone();
    alone.jobs.truncate(1);
    let solo = run_quiet(&alone, "nobw");
    let solo_btio =
        btio_times(&solo, 0, &stages).expect("standalone BTIO finishes within duration_s");
    let (solo_run_s, solo_io_s) = (solo_btio.run_s, solo_btio.all.s);
    let solo_mb_s = solo_btio.all.mb_s();
    let stage_names = ["write", "read"];

    let mut ior = base.clone();
    ior.jobs.remove(0);
    ior.simulation.duration_s = 60.0;
    let ior_out = run_quiet(&ior, "nobw");
    let from = bins_from(&ior_out, WARMUP_S);
    let ior_bytes = job_bytes_from(&ior_out, 0, from);
    let ior_s = ior_out.end_ns as f64 / 1e9 - WARMUP_S;
    let servers = base.osses.len() as f64;
    let cap_per_server = (ior_bytes as f64 / ior_s / servers).round() as u64;

    let per_stage: Vec<String> = solo_btio
        .stages
        .iter()
        .zip(stage_names)
        .map(|(io, name)| {
            format!(
                "{name} phases {:.1} s, {:.0} MB at {:.1} MB/s",
                io.s,
                io.bytes as f64 / 1e6,
                io.mb_s()
            )
        })
        .collect();
    if stages.len() < 2 {
        println!(
            "BTIO class {class} alone: run time {solo_run_s:.1} s, I/O time {solo_io_s:.1} s \
             ({:.0} % of the run), {:.0} MB written at {solo_mb_s:.1} MB/s. IOR alone: {:.1} MB/s per \
             server (the non-work-conserving cap below).",
            solo_io_s / solo_run_s * 100.0,
            solo_btio.all.bytes as f64 / 1e6,
            cap_per_server as f64 / 1e6
        );
    } else {
        println!(
            "BTIO class {class} alone: run time {solo_run_s:.1} s, I/O time {solo_io_s:.1} s \
             ({:.0} % of the run; {}), {:.0} MB in all at {solo_mb_s:.1} MB/s. IOR alone: {:.1} \
             MB/s per server (the non-work-conserving cap below).",
            solo_io_s / solo_run_s * 100.0,
            per_stage.join("; "),
            solo_btio.all.bytes as f64 / 1e6,
            cap_per_server as f64 / 1e6
        );
    }
    println!();
    // Write and read columns when BTIO has both stages.
    let split_cols = if stages.len() >= 2 { 2 } else { 0 };
    let stage_heads: String = stage_names[..split_cols]
        .iter()
        .map(|name| format!(" {name} kept |"))
        .collect();
    let stage_rule = "---|".repeat(split_cols);
    println!("| run | policy | BTIO run time | run time vs alone | paper | BTIO I/O time | I/O throughput kept |{stage_heads} paper | IOR MB/s while BTIO runs |");
    println!("|---|---|---|---|---|---|---|{stage_rule}---|---|");
    let solo_stages = " 100 % |".repeat(split_cols);
    println!(
        "| BTIO alone | `nobw` | {solo_run_s:.1} s | – | – | {solo_io_s:.1} s | 100 % |{solo_stages} – | – |"
    );
    let paper = fig7_paper(class);
    let rows = [
        ("Shared, Native", "nobw".to_string(), Some(paper[0])),
        (
            "Shared, Layout-DSFQ",
            "vpfs:sync=layout".to_string(),
            Some(paper[1]),
        ),
        (
            "Shared, Layout-DSFQ, 10 s idle",
            "vpfs:sync=layout:flow_idle_ms=10000".to_string(),
            None,
        ),
        (
            "Shared, Layout-DSFQ (NWC)",
            format!("vpfs:sync=layout:flow_idle_ms=10000:nwc={cap_per_server}"),
            Some(paper[2]),
        ),
    ];
    for (label, policy, paper) in rows {
        let out = run_quiet(base, &policy);
        let Some(btio) = btio_times(&out, 0, &stages) else {
            println!(
                "| {label} | `{policy}` | not finished in {:.0} s | | | | |{} | |",
                base.simulation.duration_s,
                " |".repeat(split_cols)
            );
            continue;
        };
        let run_s = btio.run_s;
        let btio_end_bin = (run_s * 1e9 / out.bin_ns as f64) as usize;
        let ior_during: u64 = out.jobs[1].bytes_per_bin().iter().take(btio_end_bin).sum();
        let (paper_run, paper_tput) = paper.unwrap_or(("–", "–"));
        let stage_kept: String = if split_cols == 0 {
            String::new()
        } else {
            btio.stages
                .iter()
                .zip(&solo_btio.stages)
                .map(|(io, solo)| format!(" {:.1} % |", io.mb_s() / solo.mb_s() * 100.0))
                .collect()
        };
        println!(
            "| {label} | `{policy}` | {run_s:.1} s | {:+.1} % | {paper_run} | {:.1} s | {:.1} % |{stage_kept} {paper_tput} | {:.1} |",
            (run_s / solo_run_s - 1.0) * 100.0,
            btio.all.s,
            btio.all.mb_s() / solo_mb_s * 100.0,
            ior_during as f64 / 1e6 / run_s
        );
    }
}

/// Mean and standard deviation of `bytes_per_bin` summed into windows of `window_bins`, as MB/s
/// (the paper's unit, 10^6 bytes).
fn mean_std_mb_s(
    bytes_per_bin: &[u64],
    from_bin: usize,
    window_bins: usize,
    bin_s: f64,
) -> (f64, f64) {
    let rates: Vec<f64> = bytes_per_bin[from_bin.min(bytes_per_bin.len())..]
        .chunks_exact(window_bins)
        .map(|w| w.iter().sum::<u64>() as f64 / 1e6 / (window_bins as f64 * bin_s))
        .collect();
    if rates.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / rates.len() as f64;
    (mean, var.sqrt())
}

fn table2(base: &Scenario) {
    println!("| policy | total MB/s (mean ± std over 1 s) | app1 MB/s (mean ± std) | unfairness, 60 s mean | sync messages in per server per s | sync bytes in per server per s | events | events per wall-clock s |");
    println!("|---|---|---|---|---|---|---|---|");
    for policy in [
        "nobw",
        "vpfs:sync=threshold:threshold=0",
        "vpfs:sync=layout",
        "vpfs:sync=layout:flow_idle_ms=10000",
    ] {
        let started = Instant::now();
        let out = run_quiet(base, policy);
        let wall_s = started.elapsed().as_secs_f64();
        let bin_s = out.bin_ns as f64 / 1e9;
        let from = bins_from(&out, WARMUP_S);
        let window = (1.0 / bin_s).round().max(1.0) as usize;
        let per_job: Vec<Vec<u64>> = out.jobs.iter().map(|j| j.bytes_per_bin()).collect();
        let bins = per_job.iter().map(Vec::len).max().unwrap_or(0);
        let total: Vec<u64> = (0..bins)
            .map(|b| per_job.iter().map(|j| j.get(b).copied().unwrap_or(0)).sum())
            .collect();
        let (tm, ts) = mean_std_mb_s(&total, from, window, bin_s);
        let (am, asd) = mean_std_mb_s(&per_job[0], from, window, bin_s);
        let ws = windows(&out, 60.0);
        let (unfair, _) = mean_max(&ws.iter().collect::<Vec<_>>());
        let sim_s = out.end_ns as f64 / 1e9;
        let servers = out.sync.len().max(1) as f64;
        let (_, messages, bytes) = sync_totals(&out);
        println!(
            "| `{policy}` | {tm:.1} ± {ts:.2} | {am:.1} ± {asd:.2} | {unfair:.1} % | {:.0} | {:.0} | {} | {:.2e} |",
            messages as f64 / servers / sim_s,
            bytes as f64 / servers / sim_s,
            out.engine.events,
            out.engine.events as f64 / wall_s
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(which), Some(path)) = (args.first(), args.get(1)) else {
        eprintln!("usage: vpfs_repro fig5|fig6|fig7|table2 SCENARIO");
        std::process::exit(2);
    };
    let scenario = Scenario::load(Path::new(path)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    match which.as_str() {
        "fig5" => fig5(&scenario),
        "fig6" => fig6(&scenario),
        "fig7" => fig7(&scenario),
        "table2" => table2(&scenario),
        other => {
            eprintln!("unknown experiment {other} (fig5, fig6, fig7, table2)");
            std::process::exit(2);
        }
    }
}
