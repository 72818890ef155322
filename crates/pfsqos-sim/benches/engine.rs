//! Engine throughput: events per second and simulated seconds per wall second on a 64-OST
//! (8 OSS x 8 OST, SATA SSD preset, 2 CPTs each), 64-job continuous scenario (32 clients; 4
//! processes per job on a client pair of its own; half writers, half readers; stripe count 4)
//! under `nobw` and `static`. `static` exercises TBF once it is merged; before that its writes
//! are rejected and it runs FIFO.
//!
//! `cargo bench -p pfsqos-sim --bench engine -- --warm-up-time 1 --measurement-time 3`

// A driver of the pure crate, not part of it: it measures wall time (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pfsqos_sim::{run, Scenario};

const SIM_DURATION_S: f64 = 30.0;

fn scenario() -> Scenario {
    let mut text = format!(
        r#"
name = "bench-64x64"
[simulation]
duration_s = {SIM_DURATION_S}
[cluster]
clients = 32
stripe_count = 4
stripe_size = "4M"
"#
    );
    for i in 0..8 {
        text.push_str(&format!(
            "[[oss]]\nname = \"oss{i}\"\nosts = 8\ndevice = \"ssd-sata\"\ncpts = 2\n"
        ));
    }
    for j in 0..64 {
        text.push_str(&format!(
            r#"
[[job]]
id = "job{j}"
nodes = {nodes}
clients = [{c0}, {c1}]
[[job.processes]]
rw = "{rw}"
bs = "4M"
size = "100G"
numjobs = 4
iodepth = 2
"#,
            nodes = 1 + j % 4,
            c0 = (2 * j) % 32,
            c1 = (2 * j + 1) % 32,
            rw = if j % 2 == 0 { "write" } else { "read" },
        ));
    }
    Scenario::from_toml_str(&text, "<bench>").expect("bench scenario")
}

fn bench(c: &mut Criterion) {
    let s = scenario();
    for policy in ["nobw", "static"] {
        // Best of a few direct runs: the machines are shared, the best run is the least
        // disturbed.
        let mut best_wall_s = f64::INFINITY;
        let mut out = None;
        for _ in 0..5 {
            let started = Instant::now();
            let o = run(&s, policy, 1, &mut |_, _| {}).expect("run");
            best_wall_s = best_wall_s.min(started.elapsed().as_secs_f64());
            out = Some(o);
        }
        let out = out.expect("ran");
        let rejected = out.control_log.iter().filter(|e| e.result.is_err()).count();
        eprintln!(
            "{policy}: best of 5 runs: {} events, {} RPCs, {:.3} s wall, {:.2} M events/s, \
             {:.1} simulated s per wall s ({rejected} control writes rejected)",
            out.engine.events,
            out.engine.rpcs,
            best_wall_s,
            out.engine.events as f64 / best_wall_s / 1e6,
            out.end_ns as f64 / 1e9 / best_wall_s,
        );
        let mut group = c.benchmark_group("engine");
        group.sample_size(10);
        group.throughput(Throughput::Elements(out.engine.events));
        group.bench_function(format!("64ost_64job_{policy}_30s"), |b| {
            b.iter(|| run(&s, policy, 1, &mut |_, _| {}).expect("run"))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
