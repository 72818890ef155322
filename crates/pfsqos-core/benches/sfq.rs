//! Per-RPC cost of SFQ(D) and DSFQ beside TBF, in one run: one enqueue, one dequeue and (for
//! the depth-limited SFQ policies, which need it to dispatch again) one completion, in a
//! steady state where every flow has a request queued and the next arrival goes to the
//! next flow round robin. TBF runs the same loop without the completion (it does not count
//! them), with rate 999,999 so it never throttles. DSFQ counts service at arrival against
//! the evaluation's 10 MiB threshold with 1 MiB requests (a broadcast every ten RPCs, whose
//! reports the loop takes, as a driver does after every event).
//!
//! The uniform steady state above makes every flow's next start tag its last plus one
//! step, so the tags arrive in increasing order and the SFQ heap's sorted runs take them
//! all (`sched/sfq/heap.rs`). The `mixed_sizes` cases draw each request's size from 4 KiB to
//! 1 MiB (a fixed xorshift sequence), so a flow's tags advance by varying steps, arrivals
//! and dispatches are different flows, and the keys reach the heap.

use std::hint::black_box;

use criterion::{criterion_group, BenchmarkId, Criterion};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid, Opcode, RpcTags};
use pfsqos_core::sched::sfq::{Sfq, SfqConfig, SyncMode};
use pfsqos_core::sched::tbf::{ClassType, Field, LustreVersion, Tbf, TbfCommand, TbfConfig};
use pfsqos_core::sched::{Dequeue, RequestScheduler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const COST_BYTES: u64 = 1 << 20;

fn tags(k: usize) -> RpcTags {
    RpcTags {
        job: JobId::new(&format!("job.{k}")).unwrap(),
        nid: Nid::ipv4(
            10,
            (k >> 16) as u8,
            (k >> 8) as u8,
            k as u8,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        ),
        opcode: Opcode::OstWrite,
        uid: 1000,
        gid: 1000,
        ..RpcTags::default()
    }
}

struct Steady<S> {
    sched: S,
    tags: Vec<RpcTags>,
    next: usize,
    now_ns: u64,
    step_ns: u64,
    complete: bool,
    /// Mixed sizes: the xorshift state; 0 for every request `COST_BYTES`.
    sizes: u64,
}

/// Request sizes of the `mixed_sizes` cases: 4 KiB to 1 MiB in pages.
fn next_size(state: &mut u64) -> u64 {
    if *state == 0 {
        return COST_BYTES;
    }
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    4096 * (1 + *state % 256)
}

impl<S: RequestScheduler<u32>> Steady<S> {
    fn new(sched: S, flows: usize, complete: bool) -> Self {
        Steady::with_sizes(sched, flows, complete, false)
    }

    fn with_sizes(mut sched: S, flows: usize, complete: bool, mixed_sizes: bool) -> Self {
        let tags: Vec<RpcTags> = (0..flows).map(tags).collect();
        let mut sizes = u64::from(mixed_sizes) * 0x9E37_79B9_7F4A_7C15;
        for (k, t) in tags.iter().enumerate() {
            sched.enqueue_with_cost(0, t, next_size(&mut sizes), k as u32);
        }
        let step_ns = 2_000 / flows as u64 + 1;
        let mut s = Steady {
            sched,
            tags,
            next: 0,
            now_ns: 0,
            step_ns,
            complete,
            sizes,
        };
        for _ in 0..4 * flows.max(1000) {
            assert!(s.step(), "steady state must dispatch every step");
        }
        s
    }

    #[inline]
    fn step(&mut self) -> bool {
        self.now_ns += self.step_ns;
        let k = self.next;
        self.next = if k + 1 == self.tags.len() { 0 } else { k + 1 };
        let size = next_size(&mut self.sizes);
        self.sched
            .enqueue_with_cost(self.now_ns, &self.tags[k], size, k as u32);
        match self.sched.dequeue(self.now_ns) {
            Dequeue::Request(r) => {
                if self.complete {
                    // The completion's size only counts at `CountPoint::Finish`, which no
                    // case uses.
                    self.sched
                        .on_complete(self.now_ns, &self.tags[r as usize], COST_BYTES);
                    black_box(self.sched.take_service_reports());
                }
                true
            }
            _ => false,
        }
    }
}

fn sfq(flows: usize, sync: SyncMode) -> Sfq<u32> {
    assert!(flows <= pfsqos_core::sched::sfq::SFQ_FLOWS_MAX);
    Sfq::new(
        ClassType::single(Field::Jobid),
        SfqConfig {
            sync,
            ..SfqConfig::sfqd()
        },
        LustreVersion::MASTER,
    )
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sfq_enqueue_dequeue_per_rpc");
    for flows in [10usize, 1_000, 100_000] {
        g.bench_with_input(BenchmarkId::new("tbf_jobid", flows), &flows, |b, &n| {
            let mut tbf: Tbf<u32> = Tbf::new(
                ClassType::single(Field::Jobid),
                TbfConfig {
                    cache_size_classes: 1 << 20,
                    ..TbfConfig::default()
                },
            );
            tbf.apply(&TbfCommand::parse("change default rate=999999").unwrap())
                .unwrap();
            let mut s = Steady::new(tbf, n, false);
            b.iter(|| black_box(s.step()));
        });
        g.bench_with_input(BenchmarkId::new("sfqd_jobid", flows), &flows, |b, &n| {
            let mut s = Steady::new(sfq(n, SyncMode::None), n, true);
            b.iter(|| black_box(s.step()));
        });
        g.bench_with_input(
            BenchmarkId::new("sfqd_jobid_mixed_sizes", flows),
            &flows,
            |b, &n| {
                let mut s = Steady::with_sizes(sfq(n, SyncMode::None), n, true, true);
                b.iter(|| black_box(s.step()));
            },
        );
        g.bench_with_input(
            BenchmarkId::new("dsfq_threshold_jobid", flows),
            &flows,
            |b, &n| {
                let mut s = Steady::new(sfq(n, SyncMode::Threshold), n, true);
                b.iter(|| black_box(s.step()));
            },
        );
        g.bench_with_input(
            BenchmarkId::new("dsfq_layout_jobid", flows),
            &flows,
            |b, &n| {
                let mut s = Steady::new(sfq(n, SyncMode::Layout), n, true);
                b.iter(|| black_box(s.step()));
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);

/// `--counted-steps <policy>:<flows>:<steps>` (the binary's first argument) runs exactly
/// `steps` steps of one case after the warm-up and exits, instead of criterion: a fixed
/// amount of work to count under a cache simulator (`valgrind --tool=cachegrind`), where two
/// step counts' difference gives the misses of one step without the setup's. Policies:
/// `tbf`, `sfqd`, `sfqd_mixed_sizes`, `threshold`, `layout`.
fn counted_steps(spec: &str) {
    let parts: Vec<&str> = spec.split(':').collect();
    let [policy, flows, steps] = parts[..] else {
        panic!("--counted-steps: expected <policy>:<flows>:<steps>, got {spec:?}");
    };
    let flows: usize = flows.parse().expect("flows: a number");
    let steps: u64 = steps.parse().expect("steps: a number");
    assert!((1..=pfsqos_core::sched::sfq::SFQ_FLOWS_MAX).contains(&flows));
    fn run<S: RequestScheduler<u32>>(mut s: Steady<S>, steps: u64) {
        for _ in 0..steps {
            assert!(s.step(), "steady state must dispatch every step");
        }
    }
    match policy {
        "tbf" => {
            let mut tbf: Tbf<u32> = Tbf::new(
                ClassType::single(Field::Jobid),
                TbfConfig {
                    cache_size_classes: 1 << 20,
                    ..TbfConfig::default()
                },
            );
            tbf.apply(&TbfCommand::parse("change default rate=999999").unwrap())
                .unwrap();
            run(Steady::new(tbf, flows, false), steps)
        }
        "sfqd" => run(Steady::new(sfq(flows, SyncMode::None), flows, true), steps),
        "sfqd_mixed_sizes" => run(
            Steady::with_sizes(sfq(flows, SyncMode::None), flows, true, true),
            steps,
        ),
        "threshold" => run(
            Steady::new(sfq(flows, SyncMode::Threshold), flows, true),
            steps,
        ),
        "layout" => run(
            Steady::new(sfq(flows, SyncMode::Layout), flows, true),
            steps,
        ),
        other => panic!("--counted-steps: unknown policy {other:?}"),
    }
}

/// `--instances <k>:<flows>` runs `k` independent `sfqd` steady states of `flows` flows,
/// one step of each in turn, and prints the median wall time a step of seven runs of 3
/// million steps. The instruction count a step is the same at every flow count (see
/// docs/benchmarks.md), so the time against the flow count and the number of instances shows
/// what the memory footprint costs: `1:<flows>` sweeps the flow count, and `2:50000` has the
/// footprint of `1:100000` in two tables.
#[expect(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "a bench binary's diagnostic timing itself: the lint keeps clocks out of the pure library, which this is not part of"
)]
fn instances(spec: &str) {
    let parts: Vec<usize> = spec
        .split(':')
        .map(|x| x.parse().expect("--instances: <k>:<flows>, two numbers"))
        .collect();
    let [k, flows] = parts[..] else {
        panic!("--instances: expected <k>:<flows>, got {spec:?}");
    };
    assert!(k >= 1 && (1..=pfsqos_core::sched::sfq::SFQ_FLOWS_MAX).contains(&flows));
    let mut all: Vec<_> = (0..k)
        .map(|_| Steady::new(sfq(flows, SyncMode::None), flows, true))
        .collect();
    let rounds = 3_000_000 / k;
    assert!(rounds > 0, "--instances: at most 3,000,000 instances");
    let mut ns_per_step: Vec<f64> = (0..7)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..rounds {
                for s in all.iter_mut() {
                    assert!(s.step(), "steady state must dispatch every step");
                }
            }
            start.elapsed().as_nanos() as f64 / (rounds * k) as f64
        })
        .collect();
    ns_per_step.sort_by(f64::total_cmp);
    println!(
        "{k} instance(s) of {flows} flows: median {:.1} ns a step (min {:.1}, max {:.1})",
        ns_per_step[3], ns_per_step[0], ns_per_step[6]
    );
}

/// `--chase <MiB>,...` prints the machine's latency of one dependent load from a buffer of
/// each size (a pointer chase over its cache lines in a random cyclic order, 20 million
/// loads): where the last-level cache a core really gets ends, which `lscpu` does not say on
/// a virtual machine.
#[expect(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "a bench binary's diagnostic timing itself: the lint keeps clocks out of the pure library, which this is not part of"
)]
fn chase(spec: &str) {
    const LINE_WORDS: usize = 8;
    for mib in spec.split(',') {
        let mib: usize = mib.parse().expect("--chase: sizes in MiB, comma-separated");
        let lines = mib * (1 << 20) / 64;
        assert!(lines >= 2);
        // A random cyclic order of the lines (Sattolo's shuffle: one cycle through all).
        let mut rng = ChaCha8Rng::seed_from_u64(mib as u64);
        let mut order: Vec<usize> = (0..lines).collect();
        for i in (1..lines).rev() {
            order.swap(i, rng.random_range(0..i));
        }
        let mut next = vec![0usize; lines * LINE_WORDS];
        for (i, &line) in order.iter().enumerate() {
            next[line * LINE_WORDS] = order[(i + 1) % lines] * LINE_WORDS;
        }
        let mut at = 0;
        for _ in 0..lines {
            at = next[at];
        }
        let loads = 20_000_000;
        let start = std::time::Instant::now();
        for _ in 0..loads {
            at = next[at];
        }
        let ns = start.elapsed().as_nanos() as f64 / loads as f64;
        println!("{mib} MiB: {ns:.1} ns a load");
        black_box(at);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).take(2).collect();
    if let [flag, spec] = &args[..] {
        if flag == "--instances" {
            instances(spec);
            return;
        }
        if flag == "--chase" {
            chase(spec);
            return;
        }
        if flag == "--counted-steps" {
            counted_steps(spec);
            return;
        }
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
