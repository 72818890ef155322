//! GIFT's coupon ledger over one run: how much worth GIFT issued, how much of it was redeemed,
//! paid in node-hours or is still outstanding, beside the run's total I/O. It explains the
//! small differences between GIFT and BSIP in `docs/reproductions/gift-measured.md`
//! (`docs/reproductions/gift.md`, "Why GIFT gains little here").
//!
//! ```text
//! cargo run --release -p pfsqos-sim --example gift_coupons -- SCENARIO [--per-run] [--seeds K] SPEC...
//! ```
//!
//! For every GIFT spec (e.g. `gift`, `gift:window_coupons=100000000:b_thres=0.5`) and seed
//! `s .. s + K` (`s`: the scenario's seed) it prints one Markdown row: mean application I/O
//! time, effective system bandwidth, node-hours of the runs (nodes × run time), bytes written;
//! coupon worth issued (GB and as a share of the bytes written), redeemed, paid (GB and
//! node-hours) and outstanding. `--per-run` makes every run its
//! own application (appset `identity = "run"`). Specs without coupons print `–` there.

use std::path::Path;

use pfsqos_sim::{run, Scenario};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let per_run = match args.iter().position(|a| a == "--per-run") {
        Some(k) => {
            args.remove(k);
            true
        }
        None => false,
    };
    let seeds: u64 = match args.iter().position(|a| a == "--seeds") {
        Some(k) => {
            let v = args
                .get(k + 1)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| {
                    eprintln!("--seeds K");
                    std::process::exit(2)
                });
            args.drain(k..k + 2);
            v
        }
        None => 1,
    };
    let Some((path, specs)) = args.split_first() else {
        eprintln!("usage: gift_coupons SCENARIO [--per-run] [--seeds K] SPEC...");
        std::process::exit(2);
    };
    let mut scenario = Scenario::load(Path::new(path)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    if let (true, Some(a)) = (per_run, scenario.appset.as_mut()) {
        a.identity = pfsqos_sim::scenario::appset::Identity::Run;
    }
    println!(
        "| policy | seed | I/O time s | eff. BW MiB/s | node-h | written GB | issued GB | issued % of written | redeemed % of issued | paid GB | paid node-h | outstanding GB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let first = scenario.simulation.seed;
    let gb = 1e9;
    for spec in specs {
        for seed in first..first + seeds {
            let mut sc = scenario.clone();
            sc.simulation.seed = seed;
            let out = run(&sc, spec, seed, &mut |_, _| {}).unwrap_or_else(|e| {
                eprintln!("{spec}: {e}");
                std::process::exit(1)
            });
            let io = out.mean_app_io_time_ns().map_or(f64::NAN, |t| t / 1e9);
            let bw = out
                .effective_system_bytes_per_s()
                .map_or(f64::NAN, |b| b / f64::from(1u32 << 20));
            let written = out.jobs.iter().map(|j| j.bytes_written).sum::<u64>() as f64;
            let node_hours = out.node_hours();
            let coupons = out.regret.map_or_else(
                || ["–"; 6].map(String::from).join(" | "),
                |r| {
                    let t = r.totals;
                    let redeemed = if t.issued_bytes > 0.0 {
                        format!("{:.1} %", 100.0 * t.redeemed_bytes / t.issued_bytes)
                    } else {
                        "–".to_string()
                    };
                    format!(
                        "{:.1} | {:.4} % | {redeemed} | {:.1} | {:.2} | {:.2}",
                        t.issued_bytes / gb,
                        100.0 * t.issued_bytes / written,
                        t.paid_bytes / gb,
                        t.paid_node_hours,
                        r.outstanding_bytes / gb
                    )
                },
            );
            println!(
                "| {spec} | {seed} | {io:.1} | {bw:.1} | {node_hours:.0} | {:.0} | {coupons} |",
                written / gb
            );
        }
    }
}
