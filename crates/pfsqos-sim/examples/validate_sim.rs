//! The simulator's side of `scripts/validate-physics.sh`: runs each scenario under its default
//! policy and seed and prints one JSON line per scenario with, per job, the bytes it moved, its
//! throughput over the measuring window and the 99th percentile of its I/O calls' latency
//! (issue to return, what fio's completion latency measures: the completion of the call's
//! last RPC without the client's cache, its buffering with write-back, the arrival of its
//! bytes with read-ahead).
//!
//! `cargo run --release -p pfsqos-sim --example validate_sim -- WINDOW_START_S WINDOW_END_S FILE...`
//!
//! Only calls issued inside the window count (fio's `ramp_time` leaves the first seconds out in
//! the same way), and a job's throughput is the bytes of its RPCs completed inside the window
//! over the window's length.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: validate_sim WINDOW_START_S WINDOW_END_S SCENARIO...");
        std::process::exit(2);
    }
    let parse_s = |s: &str| -> u64 {
        let v: f64 = s.parse().unwrap_or(-1.0);
        if !(v.is_finite() && (0.0..=86_400.0).contains(&v)) {
            eprintln!("validate_sim: `{s}` is not a time in seconds (0..=86400)");
            std::process::exit(2);
        }
        (v * 1e9) as u64
    };
    let (from_ns, to_ns) = (parse_s(&args[0]), parse_s(&args[1]));
    if to_ns <= from_ns {
        eprintln!("validate_sim: the window must end after it starts");
        std::process::exit(2);
    }
    for arg in &args[2..] {
        let scenario = match pfsqos_sim::Scenario::load(std::path::Path::new(arg)) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("validate_sim: {arg}: {e}");
                std::process::exit(1);
            }
        };
        let policy = scenario.policy.default.clone();
        let (out, trace, call_trace) = match pfsqos_sim::engine::run_traced_calls(
            &scenario,
            &policy,
            scenario.simulation.seed,
        ) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("validate_sim: {arg}: {e}");
                std::process::exit(1);
            }
        };
        let mut bytes = vec![0u64; out.jobs.len()];
        for t in &trace {
            if (from_ns..to_ns).contains(&t.completed_ns) {
                bytes[t.job as usize] += t.size_bytes;
            }
        }
        let mut lat: Vec<Vec<u64>> = vec![Vec::new(); out.jobs.len()];
        for c in &call_trace {
            if (from_ns..to_ns).contains(&c.issued_ns) {
                lat[c.job as usize].push(c.returned_ns - c.issued_ns);
            }
        }
        let window_s = (to_ns - from_ns) as f64 / 1e9;
        let jobs: Vec<String> = out
            .jobs
            .iter()
            .enumerate()
            .map(|(j, job)| {
                let l = &mut lat[j];
                l.sort_unstable();
                let p99_us = if l.is_empty() {
                    "null".to_string()
                } else {
                    // The nearest-rank percentile, as fio reports its completion percentiles.
                    let rank = ((l.len() as f64) * 0.99).ceil() as usize;
                    format!("{:.1}", l[rank.clamp(1, l.len()) - 1] as f64 / 1e3)
                };
                format!(
                    "{{\"job\":{:?},\"bytes\":{},\"mib_s\":{:.3},\"calls\":{},\"p99_us\":{}}}",
                    job.job_id,
                    bytes[j],
                    bytes[j] as f64 / f64::from(1u32 << 20) / window_s,
                    l.len(),
                    p99_us
                )
            })
            .collect();
        println!(
            "{{\"scenario\":{:?},\"policy\":{:?},\"events\":{},\"jobs\":[{}]}}",
            arg,
            policy,
            out.engine.events,
            jobs.join(",")
        );
    }
}
