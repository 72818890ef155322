//! Per-RPC cost of ThemisIO's lottery (`themis`) beside TBF, in one run: one enqueue and one
//! dequeue in a steady state where every class (job) has requests queued and the next arrival
//! goes to the next class round robin. Each class starts with four requests, so almost every
//! class stays in the draw while the lottery picks among them. TBF runs the same loop with
//! rate 999,999 so it never throttles.
//!
//! `size_fair`: one draw among the jobs, each with a node count of 1 to 16 as its tickets.
//! `group_user_size_fair`: three draws, among 10 groups, then among a group's users (1,000 in
//! all), then among a user's jobs.
//!
//! mClock (`mclock`) in the same loop: `mclock_weights`, every job a weight of 1 to 16 and no
//! floor or cap (the weight phase alone); `mclock_floors_caps`, every job also a floor of 100
//! and a cap of 10^9 requests per second, so every dispatch passes both phases' heaps.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid, Opcode, RpcTags};
use pfsqos_core::sched::mclock::{ClassKey, ClassSpec, KeyKind, Mclock, MCLOCK_CLASSES_SET_MAX};
use pfsqos_core::sched::tbf::{ClassType, Field, Tbf, TbfCommand, TbfConfig};
use pfsqos_core::sched::themis::{FairnessMode, Themis};
use pfsqos_core::sched::{Dequeue, RequestScheduler};

/// Requests each class starts with.
const BACKLOG_PER_CLASS: usize = 4;

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
        uid: (k % 1000) as u32,
        gid: (k % 10) as u32,
        ..RpcTags::default()
    }
}

struct Steady<S> {
    sched: S,
    tags: Vec<RpcTags>,
    next: usize,
    now_ns: u64,
}

impl<S: RequestScheduler<u32>> Steady<S> {
    fn new(mut sched: S, classes: usize) -> Self {
        let tags: Vec<RpcTags> = (0..classes).map(tags).collect();
        for _ in 0..BACKLOG_PER_CLASS {
            for (k, t) in tags.iter().enumerate() {
                sched.enqueue(0, t, k as u32);
            }
        }
        let mut s = Steady {
            sched,
            tags,
            next: 0,
            now_ns: 0,
        };
        for _ in 0..4 * classes.max(1000) {
            assert!(s.step(), "steady state must dispatch every step");
        }
        s
    }

    #[inline]
    fn step(&mut self) -> bool {
        self.now_ns += 1_000;
        let k = self.next;
        self.next = if k + 1 == self.tags.len() { 0 } else { k + 1 };
        self.sched.enqueue(self.now_ns, &self.tags[k], k as u32);
        matches!(self.sched.dequeue(self.now_ns), Dequeue::Request(_))
    }
}

fn themis(mode: FairnessMode, classes: usize) -> Themis<u32> {
    let mut t = Themis::new(mode, 1);
    for k in 0..classes {
        t.set_job_nodes(
            JobId::new(&format!("job.{k}")).unwrap(),
            1 + (k % 16) as u32,
        )
        .unwrap();
    }
    t
}

fn mclock(classes: usize, floors_caps: bool) -> Mclock<u32> {
    let mut m = Mclock::new(KeyKind::Job);
    for k in 0..classes {
        let spec = ClassSpec {
            reservation_per_s: if floors_caps { 100 } else { 0 },
            weight: 1 + (k % 16) as u64,
            limit_per_s: if floors_caps { 1_000_000_000 } else { 0 },
        };
        m.set_class(
            ClassKey::Job(JobId::new(&format!("job.{k}")).unwrap()),
            Some(spec),
        )
        .unwrap();
    }
    m
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("themis_enqueue_dequeue_per_rpc");
    for classes in [10usize, 1_000, 100_000] {
        g.bench_with_input(BenchmarkId::new("tbf_jobid", classes), &classes, |b, &n| {
            let mut tbf: Tbf<u32> = Tbf::new(
                ClassType::single(Field::Jobid),
                TbfConfig {
                    cache_size_classes: 1 << 20,
                    ..TbfConfig::default()
                },
            );
            tbf.apply(&TbfCommand::parse("change default rate=999999").unwrap())
                .unwrap();
            let mut s = Steady::new(tbf, n);
            b.iter(|| black_box(s.step()));
        });
        g.bench_with_input(
            BenchmarkId::new("themis_size_fair", classes),
            &classes,
            |b, &n| {
                let mut s = Steady::new(themis(FairnessMode::SizeFair, n), n);
                b.iter(|| black_box(s.step()));
            },
        );
        g.bench_with_input(
            BenchmarkId::new("themis_group_user_size_fair", classes),
            &classes,
            |b, &n| {
                let mut s = Steady::new(themis(FairnessMode::GroupUserSizeFair, n), n);
                b.iter(|| black_box(s.step()));
            },
        );
    }
    // mClock holds at most MCLOCK_CLASSES_SET_MAX classes with their own reservation, weight
    // and limit (a class more is refused, as Lustre refuses a rule more): its largest case.
    for classes in [10usize, 1_000, MCLOCK_CLASSES_SET_MAX] {
        g.bench_with_input(
            BenchmarkId::new("mclock_weights", classes),
            &classes,
            |b, &n| {
                let mut s = Steady::new(mclock(n, false), n);
                b.iter(|| black_box(s.step()));
            },
        );
        g.bench_with_input(
            BenchmarkId::new("mclock_floors_caps", classes),
            &classes,
            |b, &n| {
                let mut s = Steady::new(mclock(n, true), n);
                b.iter(|| black_box(s.step()));
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
