//! GIFT decision time at 32, 64 and 200 OSTs with 100 and 1,000 applications doing I/O. The
//! paper (§4) reports 1 to 5 ms from 32 to 200 OSTs with 1,000 applications (COIN-OR CLP).
//! `gift_decision` uses the default LP solver (exact presolve, then per block the dense simplex
//! of `simplex.rs`, or `microlp` for a block too large or with a coupling row),
//! `gift_decision_whole_lp` the whole LP in one `microlp` call (the reference solver), on the same
//! inputs in the same run.
//!
//! Every application stripes over 1 to 8 OSTs chosen by a fixed generator; every decision runs
//! the full Algorithm 1 (BSIP, redemption, throttle-friendly set, LP, coupons) on a GIFT whose
//! ledger has been warmed with a few decisions, so coupons exist and are redeemed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pfsqos_core::control::gift::{
    Allocator, AppDemand, Bsip, Gift, GiftConfig, IntervalInput, LpSolver, OstCapacity, OstDemand,
};
use pfsqos_core::model::{JobId, OstId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CAP_BYTES_PER_S: f64 = 102e6;
const INTERVAL_NS: u64 = 10_000_000_000;

fn inputs(osts: u32, apps: usize, rounds: usize) -> Vec<IntervalInput> {
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(osts) * 7919 + apps as u64);
    let stripes: Vec<Vec<u32>> = (0..apps)
        .map(|_| {
            let width = rng.random_range(1..=8u32).min(osts);
            let start = rng.random_range(0..osts);
            (0..width).map(|k| (start + k * 7) % osts).collect()
        })
        .collect();
    (0..rounds)
        .map(|round| IntervalInput {
            now_ns: round as u64 * INTERVAL_NS,
            interval_ns: INTERVAL_NS,
            osts: (0..osts)
                .map(|o| OstCapacity {
                    ost: OstId(o),
                    capacity_bytes_per_s: CAP_BYTES_PER_S,
                })
                .collect(),
            // About 70 % of applications are in an I/O phase each interval.
            apps: (0..apps)
                .filter(|i| (i * 31 + round * 17) % 10 < 7)
                .map(|i| {
                    let mut used: Vec<u32> = stripes[i].clone();
                    used.sort_unstable();
                    used.dedup();
                    AppDemand {
                        app: JobId::new(&format!("app{i}")).unwrap(),
                        nodes: 1 + (i % 64) as u32,
                        osts: used
                            .into_iter()
                            .map(|o| OstDemand {
                                ost: OstId(o),
                                demand_bytes_per_s: CAP_BYTES_PER_S,
                                streams: 1,
                            })
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    for (group_name, lp) in [
        ("gift_decision", LpSolver::Presolved),
        ("gift_decision_whole_lp", LpSolver::Whole),
    ] {
        let mut group = c.benchmark_group(group_name);
        group.sample_size(10);
        for &apps in &[100usize, 1_000] {
            for &osts in &[32u32, 64, 200] {
                let mut rounds = inputs(osts, apps, 8);
                let mut gift = Gift::new(GiftConfig {
                    lp,
                    ..GiftConfig::default()
                });
                for r in &rounds {
                    gift.allocate(r).unwrap();
                }
                let mut k = 0usize;
                group.bench_with_input(
                    BenchmarkId::new(format!("apps{apps}"), format!("osts{osts}")),
                    &osts,
                    |b, _| {
                        b.iter(|| {
                            k += 1;
                            // The clock moves on in place: a clone of the input (a thousand
                            // applications' OST lists) would be timed with the decision.
                            let rounds_len = rounds.len();
                            let input = &mut rounds[k % rounds_len];
                            input.now_ns = (8 + k as u64) * INTERVAL_NS;
                            gift.allocate(input).unwrap()
                        })
                    },
                );
            }
        }
        group.finish();
    }
    // For scale: the same decision without the LP (BSIP only), largest case.
    let mut group = c.benchmark_group("bsip_decision");
    group.sample_size(10);
    let rounds = inputs(200, 1_000, 8);
    let mut k = 0usize;
    group.bench_function("apps1000/osts200", |b| {
        b.iter(|| {
            k += 1;
            Bsip::default().allocate(&rounds[k % rounds.len()]).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
