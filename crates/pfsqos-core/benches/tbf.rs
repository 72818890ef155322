//! Per-RPC cost of the TBF scheduler: one enqueue plus one dequeue, in a steady state where
//! every class has tokens (rate 999,999 RPC/s, virtual time advancing so that each class earns
//! a token between its turns), so this measures classification and heap work, not throttling.
//! The idle-class cache is made larger than the class count so that classes whose queue runs
//! empty for a moment are not evicted and re-created (that churn is measured separately).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid, Opcode, RpcTags};
use pfsqos_core::sched::fifo::Fifo;
use pfsqos_core::sched::tbf::{ClassType, Field, Tbf, TbfCommand, TbfConfig};
use pfsqos_core::sched::{Dequeue, RequestScheduler};

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
}

impl<S: RequestScheduler<u32>> Steady<S> {
    fn new(mut sched: S, classes: usize) -> Self {
        let tags: Vec<RpcTags> = (0..classes).map(tags).collect();
        for (k, t) in tags.iter().enumerate() {
            sched.enqueue(0, t, k as u32);
        }
        // Each class comes round every `classes` steps; 2 us per round is two token times.
        let step_ns = 2_000 / classes as u64 + 1;
        let mut s = Steady {
            sched,
            tags,
            next: 0,
            now_ns: 0,
            step_ns,
        };
        for _ in 0..4 * classes.max(1000) {
            assert!(s.step(), "steady state must not throttle");
        }
        s
    }

    #[inline]
    fn step(&mut self) -> bool {
        self.now_ns += self.step_ns;
        let k = self.next;
        self.next = if k + 1 == self.tags.len() { 0 } else { k + 1 };
        self.sched.enqueue(self.now_ns, &self.tags[k], k as u32);
        matches!(self.sched.dequeue(self.now_ns), Dequeue::Request(_))
    }
}

fn config() -> TbfConfig {
    TbfConfig {
        cache_size_classes: 1 << 20,
        ..TbfConfig::default()
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("enqueue_dequeue_per_rpc");
    for classes in [10usize, 1_000, 100_000] {
        g.bench_with_input(BenchmarkId::new("tbf_jobid", classes), &classes, |b, &n| {
            let mut tbf: Tbf<u32> = Tbf::new(ClassType::single(Field::Jobid), config());
            tbf.apply(&TbfCommand::parse("change default rate=999999").unwrap())
                .unwrap();
            let mut s = Steady::new(tbf, n);
            b.iter(|| black_box(s.step()));
        });
        g.bench_with_input(
            BenchmarkId::new("tbf_generic", classes),
            &classes,
            |b, &n| {
                let mut tbf: Tbf<u32> = Tbf::new(ClassType::GENERIC, config());
                tbf.apply(&TbfCommand::parse("change default rate=999999").unwrap())
                    .unwrap();
                let mut s = Steady::new(tbf, n);
                b.iter(|| black_box(s.step()));
            },
        );
        g.bench_with_input(BenchmarkId::new("fifo", classes), &classes, |b, &n| {
            let mut s = Steady::new(Fifo::<u32>::new(), n);
            b.iter(|| black_box(s.step()));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
