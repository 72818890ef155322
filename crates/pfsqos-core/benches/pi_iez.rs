//! PI control and iez placement costs the issues ask for: one PI law step, one `pi`
//! controller period (sensor, law, actuator over 16 clients), one identification over 10,000
//! open-loop samples; one iez Algorithm 2 plan for a batch of files and one create placed
//! from a plan, against Lustre's allocator on the same OSTs.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use pfsqos_core::control::pi::savgol::SavGol;
use pfsqos_core::control::pi::{
    identify, Gains, IdentifyConfig, OpenLoopSample, Pi, PiConfig, PiLaw, ProportionalOn,
    SensorConfig, TargetSchedule,
};
use pfsqos_core::control::{
    ClientId, Controller, DomainId, DomainObservation, Observation, TargetObservation,
};
use pfsqos_core::model::{JobId, OstId};
use pfsqos_core::place::iez::allocate_osts;
use pfsqos_core::place::{
    placement_by_name, IezConfig, PlacementContext, PlacementRequest, PredictedFile, ServerStats,
};

fn observation(now_ns: u64, tiq_ns: u64) -> Observation {
    Observation {
        now_ns,
        period_ns: 300_000_000,
        domains: vec![DomainObservation {
            domain: DomainId(0),
            targets: vec![TargetObservation {
                ost: OstId(0),
                queue_len_rpcs: 3,
                device_queue_rpcs: 80,
                device_time_in_queue_ns: tiq_ns,
                capacity_rpcs_per_s: 430,
                jobs: Vec::new(),
            }],
        }],
        jobs: Vec::new(),
        clients: (0..16).map(ClientId).collect(),
    }
}

fn bench_pi(c: &mut Criterion) {
    let gains = Gains { kp: 0.25, ki: 0.17 };
    let mut g = c.benchmark_group("pi");
    let mut law = PiLaw::new(gains, ProportionalOn::Error, 1.0, 1000.0, 64.0);
    let mut k = 0u64;
    g.bench_function("law_step", |b| {
        b.iter(|| {
            k += 1;
            black_box(law.step(80.0, black_box((k % 160) as f64)))
        })
    });
    let mut pi = Pi::new(PiConfig {
        ts_ns: 300_000_000,
        sensor: SensorConfig::default(),
        target: TargetSchedule::constant(80.0),
        gains,
        p_on: ProportionalOn::Error,
        bw_min_bytes_per_s: 1 << 20,
        bw_max_bytes_per_s: 64 << 20,
    });
    pi.setup(&observation(0, 0));
    let (mut now, mut tiq) = (0u64, 0u64);
    g.bench_function("controller_period_16_clients", |b| {
        b.iter(|| {
            now += 300_000_000;
            // Alternating queues move the limit, so every period writes all 16 clients.
            tiq += if (now / 300_000_000) % 2 == 0 { 30 } else { 9 } * 1_000_000_000;
            black_box(pi.decide(&observation(now, tiq)))
        })
    });
    // 10,000 samples of a known model with a varying input.
    let mut q = 0.0;
    let record: Vec<OpenLoopSample> = (0..10_000)
        .map(|k| {
            let limit = 10.0 + ((k / 50) % 7) as f64 * 5.0;
            let s = OpenLoopSample {
                limit_mib_per_s: limit,
                queue_rpcs: q,
            };
            q = 0.8 * q + 0.5 * limit;
            s
        })
        .collect();
    let config = IdentifyConfig {
        smoothing: SavGol::new(11, 2).unwrap(),
        queue_empty_rpcs: 0.5,
        queue_saturated_rpcs: 1000.0,
        pairs_min: 10,
        offset: false,
    };
    g.sample_size(20);
    g.bench_function("identify_10000_samples", |b| {
        b.iter(|| black_box(identify(black_box(&record), &config).unwrap()))
    });
    g.finish();
}

fn bench_iez(c: &mut Criterion) {
    let mut g = c.benchmark_group("iez");
    g.sample_size(10);
    // The last: the 1,000 requests over 1,000 OSTs (the separable solver's size).
    for (files, stripes, osses, per_oss) in [
        (64u32, 8u32, 3u32, 5u32),
        (100, 4, 10, 10),
        (1000, 8, 100, 10),
    ] {
        let stats = ServerStats::uniform(osses, per_oss, 10_000_000_000, 10_000_000_000);
        let predicted: Vec<PredictedFile> = (0..files)
            .map(|_| PredictedFile {
                predicted_bytes: 1_200_000_000 / u64::from(per_oss),
                stripe_count: stripes,
            })
            .collect();
        let reserved = vec![0u64; (osses * per_oss) as usize];
        g.bench_function(
            format!(
                "plan_{files}_files_x{stripes}_over_{}_osts",
                osses * per_oss
            ),
            |b| {
                b.iter(|| {
                    black_box(
                        allocate_osts(&stats, &reserved, &predicted, &IezConfig::default())
                            .unwrap(),
                    )
                })
            },
        );
    }
    // One create over 1,000 OSTs: from an iez plan of one file, and by Lustre's allocator.
    let stats = ServerStats::uniform(100, 10, 10_000_000_000, 10_000_000_000);
    let job = JobId::new("ior.1").unwrap();
    let request = PlacementRequest {
        stripe_count: 8,
        stripe_size_bytes: 1 << 20,
        ost_count: 1000,
        start_ost: None,
    };
    let context = PlacementContext { now_ns: 0, job };
    for name in ["lustre", "iez"] {
        let mut placer = placement_by_name(name, 1000).unwrap();
        placer.observe_servers(&stats).unwrap();
        g.bench_function(format!("create_one_file_x8_over_1000_osts_{name}"), |b| {
            b.iter(|| {
                placer.set_predictions(
                    job,
                    &[PredictedFile {
                        predicted_bytes: 1 << 30,
                        stripe_count: 8,
                    }],
                );
                black_box(placer.place(&request, &context).unwrap())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_pi, bench_iez);
criterion_main!(benches);
