//! Engine throughput: events per second and simulated seconds per wall second on a 64-OST
//! (8 OSS x 8 OST, SATA SSD preset, 2 CPTs each), 64-job continuous scenario (32 clients; 4
//! processes per job on a client pair of its own; half writers, half readers; stripe count 4)
//! under `nobw` and `static`, and the same scenario under `nobw` in two physics models side
//! by side: `table` (the preset's device table, no client cache, no server or message costs:
//! the model without measured physics) and `measured` (the shipped `ssd-sata` profile, the
//! client's write-back and read-ahead at Lustre's defaults, the measured server CPU and
//! message costs). `scripts/physics-bench.sh` reads both medians from criterion and records
//! them in docs/benchmarks.md.
//!
//! `cargo bench -p pfsqos-sim --bench engine -- --warm-up-time 1 --measurement-time 3`

// A driver of the pure crate, not part of it: it measures wall time (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pfsqos_sim::{run, Scenario};

const SIM_DURATION_S: f64 = 30.0;

/// Which physics the scenario runs with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Model {
    Table,
    Measured,
}

fn scenario() -> Scenario {
    scenario_in(Model::Measured).0
}

fn scenario_in(model: Model) -> (Scenario, &'static str) {
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
    let name = match model {
        Model::Table => {
            text.push_str(
                "[client]\nmax_dirty_mb = 0\nmax_dirty_client_mb = 0\n\
                 max_read_ahead_mb = 0\nmax_read_ahead_per_file_mb = 0\n\
                 [network]\nmessage_us = 0.0\n",
            );
            "table"
        }
        Model::Measured => {
            text.push_str("[[device]]\nname = \"ssd-sata-profile\"\nprofile = \"ssd-sata\"\n");
            "measured"
        }
    };
    for i in 0..8 {
        let device = match model {
            Model::Table => "ssd-sata",
            Model::Measured => "ssd-sata-profile",
        };
        text.push_str(&format!(
            "[[oss]]\nname = \"oss{i}\"\nosts = 8\ndevice = \"{device}\"\ncpts = 2\n"
        ));
        if model == Model::Table {
            text.push_str("rpc_cpu_us = 0.0\nrpc_cpu_us_per_mib = 0.0\nsync_cpu_us = 0.0\n");
        }
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
    (
        Scenario::from_toml_str(&text, "<bench>").expect("bench scenario"),
        name,
    )
}

/// The two physics models on one scenario, in one run of the bench.
fn bench_models(c: &mut Criterion) {
    for model in [Model::Table, Model::Measured] {
        let (s, name) = scenario_in(model);
        let out = run(&s, "nobw", 1, &mut |_, _| {}).expect("run");
        eprintln!(
            "model {name}: {} events, {} RPCs",
            out.engine.events, out.engine.rpcs
        );
        let mut group = c.benchmark_group("engine_model");
        group.sample_size(10);
        group.throughput(Throughput::Elements(out.engine.events));
        group.bench_function(format!("{name}_64ost_64job_nobw_30s"), |b| {
            b.iter(|| run(&s, "nobw", 1, &mut |_, _| {}).expect("run"))
        });
        group.finish();
    }
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

criterion_group!(benches, bench_models, bench);
criterion_main!(benches);
