//! GIFT §4 reproduction driver: runs one scenario under several policies (fluid engine for
//! `[appset]` scenarios), compares every run with POFS and prints one Markdown table row per
//! policy. `scripts/reproduce-gift.sh` calls it; every number in
//! `docs/reproductions/gift.md` comes from its output.
//!
//! ```text
//! cargo run --release -p pfsqos-sim --example gift_repro -- SCENARIO [--apps N] [--label L]
//!     [--baseline SPEC] [--barrier] [--fluid] [--per-run] [--osts-per-app LO,HI] [--seeds K]
//!     SPEC...
//! ```
//!
//! `--apps N` changes the appset's application count and scales the inter-arrival times so the
//! set arrives over the same span (GIFT Fig. 14's contention levels); `--barrier` turns the
//! appset's `lockstep` off (processes meet only at the end of each phase); `--fluid` runs a
//! scenario written for the RPC engine in the fluid engine; `--per-run` makes every run its own
//! application (appset `identity = "run"`); `--osts-per-app LO,HI` sets the appset's range of
//! OSTs per application (powers of two; the sweep toward narrow applications); `--seeds K` runs
//! seeds `s .. s + K` (`s`: the scenario's seed; each seed draws another application set) and
//! prints means over the seeds. Columns: policy; mean application I/O time, its change against
//! the baseline and that change's range over the seeds; run time, effective system bandwidth,
//! throughput (each with its change); the authors' artifact's "effective system bandwidth"
//! (`RunOutput::effective_bandwidth_allocated`: mean over decisions of the allocation counted
//! toward synchronous progress, % of the system's capacity, idle decisions as 0 for every
//! policy) and the same with the artifact's asymmetry (GIFT and MBW skip idle decisions), each
//! with its change; fraction of applications with a longer I/O time than
//! under the baseline (by more than 0.1 %) and their mean degradation; fraction more than 20 %
//! faster; regret paid and outstanding in node-hours and as a share of the run's node-hours;
//! unfinished jobs; wall time of one run (mean over the seeds). A cell without a value (regret
//! of a policy other than GIFT, which alone issues coupons; a mean over no applications) is `–`.

//!
//! The table is built by [`tables`], which `tests/sim/gift_repro_tables.rs` also calls (through
//! `#[path]`) to check that two runs print the same bytes; `wall s` is the one column that
//! measures the machine, and a caller that passes `measure_wall = false` gets `–` there.

// A driver of the pure crate, not part of it: it measures wall time (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use pfsqos_sim::{compare_io_times, run, RunOutput, Scenario};

struct Metrics {
    io_s: f64,
    run_s: f64,
    eff_mib_s: f64,
    alloc_pct: f64,
    alloc_artifact_pct: f64,
    jobs_per_h: f64,
    node_hours: f64,
    unfinished: usize,
    wall_s: f64,
}

fn metrics(out: &RunOutput, wall_s: f64) -> Metrics {
    let node_hours = out.node_hours();
    Metrics {
        io_s: out.mean_app_io_time_ns().unwrap_or(f64::NAN) / 1e9,
        run_s: out.mean_app_run_time_ns().unwrap_or(f64::NAN) / 1e9,
        eff_mib_s: out.effective_system_bytes_per_s().unwrap_or(f64::NAN) / (1u64 << 20) as f64,
        alloc_pct: out.effective_bandwidth_allocated().unwrap_or(f64::NAN) * 100.0,
        alloc_artifact_pct: out
            .effective_bandwidth_allocated_artifact()
            .unwrap_or(f64::NAN)
            * 100.0,
        jobs_per_h: out.system_throughput_jobs_per_hour().unwrap_or(f64::NAN),
        node_hours,
        unfinished: out.jobs.iter().filter(|j| !j.finished).count(),
        wall_s,
    }
}

fn pct(x: f64, base: f64) -> f64 {
    (x / base - 1.0) * 100.0
}

/// One table cell: `x` with `prec` decimals (a sign if `signed`) and `unit`, or `–` where the
/// value does not exist (regret of a policy without coupons, a mean over no applications, a
/// change against a zero baseline), so the tables never show `NaN` or `inf`.
fn cell(x: f64, prec: usize, signed: bool, unit: &str) -> String {
    match (x.is_finite(), signed) {
        (false, _) => "–".to_string(),
        (true, true) => format!("{x:+.prec$}{unit}"),
        (true, false) => format!("{x:.prec$}{unit}"),
    }
}

/// What one invocation asks for (the command line, parsed).
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub path: String,
    pub apps: Option<u32>,
    pub osts_per_app: Option<[u32; 2]>,
    pub label: Option<String>,
    /// Defaults to `pofs`.
    pub baseline: Option<String>,
    /// Defaults to 1.
    pub seeds: Option<u64>,
    pub barrier: bool,
    pub fluid: bool,
    pub per_run: bool,
    pub specs: Vec<String>,
}

/// Parses the command line (without the program name).
pub fn parse(mut args: Vec<String>) -> Result<Request, String> {
    let mut take = |flag: &str| -> Option<String> {
        let k = args.iter().position(|a| a == flag)?;
        let v = args.get(k + 1).cloned();
        args.drain(k..(k + 2).min(args.len()));
        v
    };
    let apps = match take("--apps") {
        Some(v) => Some(v.parse().map_err(|_| "--apps N".to_string())?),
        None => None,
    };
    let osts_per_app = match take("--osts-per-app") {
        Some(v) => {
            let bad = || "--osts-per-app LO,HI".to_string();
            let (lo, hi) = v.split_once(',').ok_or_else(bad)?;
            Some([
                lo.parse().map_err(|_| bad())?,
                hi.parse().map_err(|_| bad())?,
            ])
        }
        None => None,
    };
    let label = take("--label");
    let baseline = take("--baseline");
    let seeds = match take("--seeds") {
        Some(v) => Some(v.parse().map_err(|_| "--seeds N".to_string())?),
        None => None,
    };
    let mut flag = |name: &str| match args.iter().position(|a| a == name) {
        Some(k) => {
            args.remove(k);
            true
        }
        None => false,
    };
    let barrier = flag("--barrier");
    let fluid = flag("--fluid");
    let per_run = flag("--per-run");
    let Some((path, specs)) = args.split_first() else {
        return Err(
            "usage: gift_repro SCENARIO [--apps N] [--label L] [--baseline SPEC] \
                    [--barrier] [--fluid] [--per-run] [--osts-per-app LO,HI] [--seeds K] SPEC..."
                .to_string(),
        );
    };
    Ok(Request {
        path: path.clone(),
        apps,
        osts_per_app,
        label,
        baseline,
        seeds,
        barrier,
        fluid,
        per_run,
        specs: specs.to_vec(),
    })
}

fn main() {
    let request = parse(std::env::args().skip(1).collect()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    match tables(&request, true) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

/// Runs the request and returns its Markdown table (header, separator, one row per policy).
/// With `measure_wall = false` the `wall s` column is `–`, so the text depends only on the
/// request (the engines are deterministic for a scenario and seed).
pub fn tables(request: &Request, measure_wall: bool) -> Result<String, String> {
    let path = request.path.as_str();
    let baseline = request
        .baseline
        .clone()
        .unwrap_or_else(|| "pofs".to_string());
    let seeds: u64 = request.seeds.unwrap_or(1);
    let mut scenario = Scenario::load(Path::new(path)).map_err(|e| e.to_string())?;
    if request.fluid {
        scenario.simulation.engine = pfsqos_sim::scenario::EngineKind::Fluid;
    }
    if let (true, Some(a)) = (request.per_run, scenario.appset.as_mut()) {
        a.identity = pfsqos_sim::scenario::appset::Identity::Run;
    }
    if let (true, Some(a)) = (request.barrier, scenario.appset.as_mut()) {
        a.lockstep = false;
    }
    if let (Some(range), Some(a)) = (request.osts_per_app, scenario.appset.as_mut()) {
        a.osts_per_app = range;
        scenario.validate(path).map_err(|e| e.to_string())?;
    }
    if let (Some(n), Some(a)) = (request.apps, scenario.appset.as_mut()) {
        let old = a.apps.max(1);
        a.arrival_scale_s *= f64::from(old) / f64::from(n);
        if let Some(t) = a.templates {
            a.templates = Some((u64::from(t) * u64::from(n) / u64::from(old)).max(1) as u32);
        }
        a.apps = n;
        scenario.validate(path).map_err(|e| e.to_string())?;
    }
    let first_seed = scenario.simulation.seed;
    let run_one = |spec: &str, seed: u64| -> Result<(RunOutput, Metrics), String> {
        let mut sc = scenario.clone();
        // The seed draws the application set (unless the appset fixes its own) and RND.
        sc.simulation.seed = seed;
        let t = Instant::now();
        let out = run(&sc, spec, seed, &mut |_, _| {}).map_err(|e| format!("{spec}: {e}"))?;
        let wall_s = if measure_wall {
            t.elapsed().as_secs_f64()
        } else {
            f64::NAN
        };
        let m = metrics(&out, wall_s);
        eprintln!(
            "{spec} seed {seed}: {:.1} s wall, {} events",
            t.elapsed().as_secs_f64(),
            out.engine.events
        );
        Ok((out, m))
    };
    let seeds: Vec<u64> = (0..seeds).map(|k| first_seed + k).collect();
    let bases: Vec<(RunOutput, Metrics)> = seeds
        .iter()
        .map(|&s| run_one(&baseline, s))
        .collect::<Result<_, _>>()?;
    let label = request
        .label
        .as_ref()
        .map_or(String::new(), |l| format!("{l} | "));
    let mut text = String::new();
    writeln!(
        text,
        "| {}policy | I/O time s | Δ | Δ range | run time s | Δ | eff. BW MiB/s | Δ | alloc. eff. BW % | Δ | artifact's alloc. % | Δ | jobs/h | Δ | worse than {baseline} | mean degradation | >20 % better | regret paid node-h | outstanding node-h | regret % of node-h | unfinished | wall s |",
        if label.is_empty() { "" } else { "set | " }
    )
    .expect("writing to a String");
    writeln!(
        text,
        "|{}---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        if label.is_empty() { "" } else { "---|" }
    )
    .expect("writing to a String");
    let n = seeds.len() as f64;
    let row = |text: &mut String, spec: &str, runs: &[(RunOutput, Metrics)]| {
        let mut acc = [0.0f64; 20];
        let mut io_lo = f64::INFINITY;
        let mut io_hi = f64::NEG_INFINITY;
        for ((out, m), (base_out, base)) in runs.iter().zip(&bases) {
            let c = compare_io_times(base_out, out, 1e-3);
            // Only GIFT issues coupons: other policies have no regret (NaN here, `–` printed).
            let (paid, owed) = out.regret.map_or((f64::NAN, f64::NAN), |r| {
                (r.totals.paid_node_hours, r.outstanding_node_hours)
            });
            let d_io = pct(m.io_s, base.io_s);
            io_lo = io_lo.min(d_io);
            io_hi = io_hi.max(d_io);
            let v = [
                m.io_s,
                d_io,
                m.run_s,
                pct(m.run_s, base.run_s),
                m.eff_mib_s,
                pct(m.eff_mib_s, base.eff_mib_s),
                m.alloc_pct,
                pct(m.alloc_pct, base.alloc_pct),
                m.alloc_artifact_pct,
                pct(m.alloc_artifact_pct, base.alloc_artifact_pct),
                m.jobs_per_h,
                pct(m.jobs_per_h, base.jobs_per_h),
                c.worse_fraction * 100.0,
                c.worse_mean_degradation * 100.0,
                c.better_20pct_fraction * 100.0,
                paid,
                owed,
                (paid + owed) / m.node_hours * 100.0,
                m.unfinished as f64,
                m.wall_s,
            ];
            for (a, x) in acc.iter_mut().zip(v) {
                *a += x / n;
            }
        }
        let a = acc;
        let range = if io_lo.is_finite() && io_hi.is_finite() {
            format!("{io_lo:+.1} .. {io_hi:+.1} %")
        } else {
            "–".to_string()
        };
        let cells = [
            cell(a[0], 1, false, ""),
            cell(a[1], 1, true, " %"),
            range,
            cell(a[2], 0, false, ""),
            cell(a[3], 2, true, " %"),
            cell(a[4], 1, false, ""),
            cell(a[5], 1, true, " %"),
            cell(a[6], 2, false, ""),
            cell(a[7], 1, true, " %"),
            cell(a[8], 2, false, ""),
            cell(a[9], 1, true, " %"),
            cell(a[10], 3, false, ""),
            cell(a[11], 2, true, " %"),
            cell(a[12], 0, false, " %"),
            cell(a[13], 1, false, " %"),
            cell(a[14], 0, false, " %"),
            cell(a[15], 2, false, ""),
            cell(a[16], 2, false, ""),
            cell(a[17], 3, false, " %"),
            cell(a[18], 0, false, ""),
            cell(a[19], 1, false, ""),
        ];
        writeln!(text, "| {label}{spec} | {} |", cells.join(" | ")).expect("writing to a String");
    };
    row(&mut text, &baseline, &bases);
    for spec in &request.specs {
        if *spec == baseline {
            continue;
        }
        let runs: Vec<(RunOutput, Metrics)> = seeds
            .iter()
            .map(|&s| run_one(spec, s))
            .collect::<Result<_, _>>()?;
        row(&mut text, spec, &runs);
    }
    Ok(text)
}
