//! Behaviour tests of the TBF scheduler on virtual time (`lustre-tbf.md` §1.3, §2.3-§2.6).

use super::*;
use crate::errno::Errno;
use crate::model::Opcode;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn tags_op(job: &str, opcode: Opcode) -> RpcTags {
    RpcTags {
        opcode,
        uid: 500,
        gid: 500,
        ..crate::test_write(job)
    }
}

fn tags(job: &str) -> RpcTags {
    tags_op(job, Opcode::OstWrite)
}

fn jobid_tbf() -> Tbf<u32> {
    Tbf::new(ClassType::single(Field::Jobid), TbfConfig::default())
}

fn run(t: &mut Tbf<u32>, text: &str) {
    t.apply(&TbfCommand::parse(text).unwrap())
        .unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// Dequeues at `now` until the scheduler stops handing out requests.
fn take_all(t: &mut Tbf<u32>, now: u64) -> (Vec<u32>, Dequeue<u32>) {
    let mut got = Vec::new();
    loop {
        match t.dequeue(now) {
            Dequeue::Request(r) => got.push(r),
            other => return (got, other),
        }
    }
}

fn state(t: &Tbf<u32>, job: &str) -> ClassState {
    t.class_state(&tags(job)).expect("class exists")
}

#[test]
fn started_rule_rematches_lazily_on_next_arrival() {
    let mut t = jobid_tbf();
    t.enqueue(0, &tags("dd.1"), 1);
    assert_eq!(state(&t, "dd.1").rule, "default");
    run(&mut t, "start dd jobid={dd.*} rate=10");
    // No arrival yet: still bound to the default rule at the default rate.
    assert_eq!(state(&t, "dd.1").rule, "default");
    assert_eq!(state(&t, "dd.1").rate_rpcs_per_s, 10_000);
    t.enqueue(5 * MS, &tags("dd.1"), 2);
    let s = state(&t, "dd.1");
    assert_eq!((s.rule.as_str(), s.rate_rpcs_per_s), ("dd", 10));
    assert_eq!((s.ntoken, s.check_time_ns), (3, 5 * MS));
}

#[test]
fn stopped_rule_keeps_its_classes_until_their_next_arrival() {
    let mut t = jobid_tbf();
    run(&mut t, "start slow jobid={dd.1} rate=10");
    for i in 0..6 {
        t.enqueue(0, &tags("dd.1"), i);
    }
    let (got, next) = take_all(&mut t, 0);
    assert_eq!(got, vec![0, 1, 2]);
    assert_eq!(next, Dequeue::Throttled { until_ns: 100 * MS });
    run(&mut t, "stop slow");
    assert_eq!(t.rule_names(), vec!["default"]);
    assert_eq!(state(&t, "dd.1").rule, "slow");
    // Queued requests still go at the stopped rule's rate.
    t.on_timer(100 * MS);
    let (got, next) = take_all(&mut t, 100 * MS);
    assert_eq!(got, vec![3]);
    assert_eq!(next, Dequeue::Throttled { until_ns: 200 * MS });
    // The next arrival re-matches (to default) and refills the bucket, but the head stays
    // throttled until its timer and the class keeps its deadline.
    t.enqueue(150 * MS, &tags("dd.1"), 6);
    let s = state(&t, "dd.1");
    assert_eq!((s.rule.as_str(), s.ntoken), ("default", 3));
    assert_eq!(s.deadline_ns, 200 * MS);
    assert_eq!(
        t.dequeue(150 * MS),
        Dequeue::Throttled { until_ns: 200 * MS }
    );
    t.on_timer(200 * MS);
    assert_eq!(take_all(&mut t, 200 * MS).0, vec![4, 5, 6]);
}

#[test]
fn rate_change_applies_at_next_arrival_and_refills_the_bucket() {
    let mut t = jobid_tbf();
    run(&mut t, "start r jobid={a} rate=10");
    for i in 0..4 {
        t.enqueue(0, &tags("a"), i);
    }
    assert_eq!(take_all(&mut t, 0).0, vec![0, 1, 2]);
    run(&mut t, "change r rate=1000");
    assert_eq!(state(&t, "a").rate_rpcs_per_s, 10);
    // The queued request still waits for the old rate's token time.
    assert_eq!(
        t.dequeue(50 * MS),
        Dequeue::Throttled { until_ns: 100 * MS }
    );
    assert_eq!(take_all(&mut t, 100 * MS).0, vec![3]);
    assert_eq!(state(&t, "a").ntoken, 0);
    t.enqueue(100 * MS, &tags("a"), 4);
    let s = state(&t, "a");
    assert_eq!((s.rate_rpcs_per_s, s.ntoken), (1000, 3));
    for i in 5..8 {
        t.enqueue(100 * MS, &tags("a"), i);
    }
    // Refilled: three back-to-back, then one per millisecond.
    let (got, next) = take_all(&mut t, 100 * MS);
    assert_eq!(got, vec![4, 5, 6]);
    assert_eq!(next, Dequeue::Throttled { until_ns: 101 * MS });
}

#[test]
fn rank_change_does_not_rematch_existing_classes() {
    let mut t = jobid_tbf();
    run(&mut t, "start a jobid={dd.*} rate=10");
    run(&mut t, "start b jobid={dd.1 dd.2} rate=20");
    assert_eq!(t.rule_names(), vec!["b", "a", "default"]);
    t.enqueue(0, &tags("dd.1"), 0);
    assert_eq!(state(&t, "dd.1").rule, "b");
    run(&mut t, "change a rank=b");
    assert_eq!(t.rule_names(), vec!["a", "b", "default"]);
    t.enqueue(MS, &tags("dd.1"), 1);
    assert_eq!(state(&t, "dd.1").rule, "b", "rank change must not re-match");
    // A new class sees the new order.
    t.enqueue(MS, &tags("dd.2"), 2);
    assert_eq!(state(&t, "dd.2").rule, "a");
    // A later start bumps the sequence and the old class re-matches.
    run(&mut t, "start c jobid={x} rate=5");
    t.enqueue(2 * MS, &tags("dd.1"), 3);
    assert_eq!(state(&t, "dd.1").rule, "a");
}

#[test]
fn heap_orders_by_deadline_then_check_time() {
    let mut t = jobid_tbf();
    run(&mut t, "start slow jobid={a} rate=10");
    run(&mut t, "start fast jobid={b} rate=20");
    // `a` gets check_time 0 (deadline 0 + 100 ms once it has work again).
    t.enqueue(0, &tags("a"), 100);
    assert_eq!(t.dequeue(0), Dequeue::Request(100));
    // `b` enters the heap first with deadline 50 + 50 = 100 ms and check_time 50 ms, then `a`
    // ties on the deadline with the earlier check_time and must come out first.
    t.enqueue(50 * MS, &tags("b"), 200);
    t.enqueue(50 * MS, &tags("a"), 101);
    assert_eq!(state(&t, "a").deadline_ns, state(&t, "b").deadline_ns);
    assert_eq!(t.dequeue(50 * MS), Dequeue::Request(101));
    assert_eq!(t.dequeue(50 * MS), Dequeue::Request(200));
    // Earlier deadline wins regardless of arrival order.
    t.enqueue(60 * MS, &tags("a"), 102); // deadline 50 + 100 = 150 ms
    t.enqueue(60 * MS, &tags("b"), 201); // deadline 50 + 50 = 100 ms
    assert_eq!(t.dequeue(60 * MS), Dequeue::Request(201));
    assert_eq!(t.dequeue(60 * MS), Dequeue::Request(102));
}

#[test]
fn head_throttle_blocks_a_class_with_banked_tokens() {
    let mut t = jobid_tbf();
    run(&mut t, "start x jobid={x} rate=10");
    run(&mut t, "start y jobid={y} rate=1");
    for i in 0..4 {
        t.enqueue(0, &tags("x"), i);
    }
    t.enqueue(0, &tags("y"), 99); // deadline 1 s, three tokens banked
    assert_eq!(take_all(&mut t, 0).0, vec![0, 1, 2]);
    assert_eq!(state(&t, "y").ntoken, 3);
    // The root `x` has no token, so `y` waits too, until x's token time.
    assert_eq!(t.dequeue(0), Dequeue::Throttled { until_ns: 100 * MS });
    assert_eq!(t.timer_deadline_ns(), Some(100 * MS));
    assert_eq!(
        t.dequeue(99 * MS),
        Dequeue::Throttled { until_ns: 100 * MS }
    );
    t.on_timer(100 * MS);
    assert_eq!(take_all(&mut t, 100 * MS).0, vec![3, 99]);
}

#[test]
fn enqueue_moves_the_timer_earlier() {
    let mut t = jobid_tbf();
    run(&mut t, "start x jobid={x} rate=1");
    for i in 0..4 {
        t.enqueue(0, &tags("x"), i);
    }
    assert_eq!(
        take_all(&mut t, 0).1,
        Dequeue::Throttled {
            until_ns: 1000 * MS
        }
    );
    // A new default-rate class: deadline 10 ms + 100 us.
    t.enqueue(10 * MS, &tags("z"), 9);
    assert_eq!(t.timer_deadline_ns(), Some(10 * MS + 100_000));
    t.on_timer(10 * MS + 100_000);
    assert_eq!(t.dequeue(10 * MS + 100_000), Dequeue::Request(9));
    // Throttled again until x's token at 1 s; a stale event for an older timer is ignored.
    assert_eq!(
        t.dequeue(10 * MS + 100_000),
        Dequeue::Throttled {
            until_ns: 1000 * MS
        }
    );
    t.on_timer(500 * MS);
    assert_eq!(t.timer_deadline_ns(), Some(1000 * MS));
}

#[test]
fn idle_class_bursts_depth_then_runs_at_rate() {
    let mut t = jobid_tbf();
    run(&mut t, "start r jobid={a} rate=10");
    for i in 0..5 {
        t.enqueue(0, &tags("a"), i);
    }
    assert_eq!(take_all(&mut t, 0).0, vec![0, 1, 2]);
    assert_eq!(take_all(&mut t, 100 * MS).0, vec![3]);
    assert_eq!(take_all(&mut t, 200 * MS).0, vec![4]);
    // Idle for 150 ms: one token only.
    for i in 10..14 {
        t.enqueue(350 * MS, &tags("a"), i);
    }
    assert_eq!(take_all(&mut t, 350 * MS).0, vec![10]);
    assert_eq!(take_all(&mut t, 450 * MS).0, vec![11]);
    assert_eq!(take_all(&mut t, 550 * MS).0, vec![12]);
    assert_eq!(take_all(&mut t, 650 * MS).0, vec![13]);
    // Idle for 3 token times or more: a full burst of depth, no more.
    for i in 20..25 {
        t.enqueue(2000 * MS, &tags("a"), i);
    }
    let (got, next) = take_all(&mut t, 2000 * MS);
    assert_eq!(got, vec![20, 21, 22]);
    assert_eq!(
        next,
        Dequeue::Throttled {
            until_ns: 2100 * MS
        }
    );
}

/// Serves one backlogged class, polling only every 150 ms (late for a 100 ms token time).
fn served_with_late_polls(realtime: bool) -> usize {
    let mut t = jobid_tbf();
    let rt = if realtime { " realtime=1" } else { "" };
    run(&mut t, &format!("start r jobid={{a}} rate=10{rt}"));
    for i in 0..1000 {
        t.enqueue(0, &tags("a"), i);
    }
    let mut served = 0;
    for k in 0..100u64 {
        let now = k * 150 * MS;
        let (got, next) = take_all(&mut t, now);
        assert!(matches!(next, Dequeue::Throttled { until_ns } if until_ns > now));
        served += got.len();
    }
    served
}

#[test]
fn realtime_carries_the_remainder_and_reaches_the_rate() {
    // 14.85 s at 10 RPC/s plus the initial bucket of 3 is 151.5 RPCs.
    assert_eq!(served_with_late_polls(false), 3 + 99);
    assert_eq!(served_with_late_polls(true), 151);
}

#[test]
fn realtime_has_no_depth_cap_after_idle() {
    let mut t = jobid_tbf();
    run(&mut t, "start r jobid={a} rate=10 realtime=1");
    t.enqueue(0, &tags("a"), 0);
    assert_eq!(t.dequeue(0), Dequeue::Request(0));
    for i in 1..=20 {
        t.enqueue(MS * 1000, &tags("a"), i);
    }
    // ntoken 2 + 10 earned in the idle second.
    assert_eq!(take_all(&mut t, 1000 * MS).0.len(), 12);
}

#[test]
fn realtime_root_without_token_passes_to_the_next_class() {
    let mut t = jobid_tbf();
    run(&mut t, "start r jobid={a} rate=1 realtime=1");
    run(&mut t, "start s jobid={b} rate=2");
    for i in 0..5 {
        t.enqueue(0, &tags("a"), i);
    }
    // Spend a's bucket at 500 ms; a realtime class keeps its old deadline (1 s).
    for i in 0..3 {
        assert_eq!(t.dequeue(500 * MS), Dequeue::Request(i));
    }
    assert_eq!(state(&t, "a").deadline_ns, 1000 * MS);
    // b: deadline 600 + 500 = 1100 ms, below a's token time (1500 ms).
    t.enqueue(600 * MS, &tags("b"), 50);
    // Root a has no token: it moves to its token time and the new root b is served.
    assert_eq!(t.dequeue(600 * MS), Dequeue::Request(50));
    assert_eq!(state(&t, "a").deadline_ns, 1500 * MS);
    assert_eq!(
        t.dequeue(600 * MS),
        Dequeue::Throttled {
            until_ns: 1500 * MS
        }
    );
}

#[test]
fn realtime_classes_hop_to_their_token_times_and_settle() {
    // Two realtime classes with the same kept deadline, no tokens, and check times 3000 and
    // 3500: the root (a) hops to its token time, b becomes root and hops to its own, then a is
    // root again with nothing left to move. That is N + 1 = 3 hops for 2 classes, which a debug
    // assertion once counted as failing to settle.
    let mut t = jobid_tbf();
    run(&mut t, "start r jobid={a b} rate=49 realtime=1");
    for p in 0..4 {
        t.enqueue(0, &tags("a"), p);
        t.enqueue(0, &tags("b"), 10 + p);
    }
    // Alternate single dequeues so the check times differ: a at 1000, 2000, 3000; b at 1500,
    // 2500, 3500 (each takes one of its three banked tokens).
    let mut order = Vec::new();
    for k in 0..6u64 {
        match t.dequeue(1000 + 500 * k) {
            Dequeue::Request(r) => order.push(r),
            other => panic!("expected a request at step {k}, got {other:?}"),
        }
    }
    assert_eq!(order, vec![0, 10, 1, 11, 2, 12]);
    let nsecs = 1_000_000_000 / 49;
    assert_eq!(
        t.dequeue(4000),
        Dequeue::Throttled {
            until_ns: 3000 + nsecs
        }
    );
    assert_eq!(state(&t, "a").deadline_ns, 3000 + nsecs);
    assert_eq!(state(&t, "b").deadline_ns, 3500 + nsecs);
}

#[test]
fn rate_not_dividing_a_second_never_throttles_until_now() {
    let mut t = jobid_tbf();
    run(&mut t, "start r jobid={a} rate=3");
    for i in 0..5 {
        t.enqueue(0, &tags("a"), i);
    }
    assert_eq!(take_all(&mut t, 0).0, vec![0, 1, 2]);
    let nsecs = 333_333_333;
    assert_eq!(t.dequeue(0), Dequeue::Throttled { until_ns: nsecs });
    t.on_timer(nsecs);
    // 333,333,333 ns x 3 < 1 s: no token yet, so the timer goes one nanosecond on.
    assert_eq!(
        t.dequeue(nsecs),
        Dequeue::Throttled {
            until_ns: nsecs + 1
        }
    );
    t.on_timer(nsecs + 1);
    assert_eq!(t.dequeue(nsecs + 1), Dequeue::Request(3));
}

#[test]
fn lru_evicts_oldest_idle_classes_to_three_quarters() {
    let config = TbfConfig {
        cache_size_classes: 4,
        ..TbfConfig::default()
    };
    let mut t: Tbf<u32> = Tbf::new(ClassType::single(Field::Jobid), config);
    run(&mut t, "start r jobid={*} rate=10");
    for (k, job) in ["a", "b", "c", "d"].iter().enumerate() {
        for i in 0..3 {
            t.enqueue(0, &tags(job), (k * 10 + i) as u32);
        }
        assert_eq!(take_all(&mut t, 0).0.len(), 3);
    }
    assert_eq!((t.class_count(), t.idle_class_count()), (4, 4));
    t.enqueue(0, &tags("e"), 40);
    assert_eq!(t.dequeue(0), Dequeue::Request(40));
    // Five idle > 4: shrink to 3, oldest first.
    assert_eq!((t.class_count(), t.idle_class_count()), (3, 3));
    assert!(t.class_state(&tags("a")).is_none());
    assert!(t.class_state(&tags("b")).is_none());
    assert_eq!(
        state(&t, "c").ntoken,
        0,
        "cached class keeps its empty bucket"
    );
    assert_eq!(t.listing(ListingForm::Expression)[0].refs, 3);
    // The cached class has no token at 10 ms; the evicted one comes back with a full bucket.
    t.enqueue(10 * MS, &tags("c"), 50);
    assert_eq!(
        t.dequeue(10 * MS),
        Dequeue::Throttled { until_ns: 100 * MS }
    );
    t.enqueue(10 * MS, &tags("a"), 60);
    let s = state(&t, "a");
    assert_eq!((s.ntoken, s.check_time_ns), (3, 10 * MS));
}

#[test]
fn rank_table_of_sanityn_77i() {
    let mut t = jobid_tbf();
    run(&mut t, "start after jobid={a} rate=10");
    run(&mut t, "start before jobid={b} rate=10");
    assert_eq!(t.rule_names(), vec!["before", "after", "default"]);
    run(&mut t, "start target jobid={t} rate=10 rank=after");
    assert_eq!(t.rule_names(), vec!["before", "target", "after", "default"]);
    run(&mut t, "change target rank=before");
    assert_eq!(t.rule_names(), vec!["target", "before", "after", "default"]);
    run(&mut t, "change target rank=after");
    assert_eq!(t.rule_names(), vec!["before", "target", "after", "default"]);
    run(&mut t, "change target rank=default");
    assert_eq!(t.rule_names(), vec!["before", "after", "target", "default"]);
    run(&mut t, "change target rank=target");
    assert_eq!(t.rule_names(), vec!["before", "after", "target", "default"]);
    let err = t
        .apply(&TbfCommand::parse("change target rank=nosuch").unwrap())
        .unwrap_err();
    assert_eq!(err.errno(), Errno::ENOENT);
    let err = t
        .apply(&TbfCommand::parse("start x jobid={x} rank=nosuch").unwrap())
        .unwrap_err();
    assert_eq!(err.errno(), Errno::ENOENT);
    assert_eq!(t.rule_names(), vec!["before", "after", "target", "default"]);
}

#[test]
fn rule_command_errors_use_lustre_errnos() {
    let mut t = jobid_tbf();
    run(&mut t, "start a jobid={a} rate=10");
    let errno = |t: &mut Tbf<u32>, text: &str| {
        t.apply(&TbfCommand::parse(text).unwrap())
            .unwrap_err()
            .errno()
    };
    assert_eq!(errno(&mut t, "start a jobid={b}"), Errno::EEXIST);
    assert_eq!(errno(&mut t, "start default jobid={b}"), Errno::EEXIST);
    assert_eq!(errno(&mut t, "start b opcode={ost_read}"), Errno::EINVAL);
    assert_eq!(errno(&mut t, "change nosuch rate=5"), Errno::ENOENT);
    assert_eq!(errno(&mut t, "stop default"), Errno::EPERM);
    run(&mut t, "stop nosuch");
    run(&mut t, "change default rate=500");
    assert_eq!(t.listing(ListingForm::Expression)[1].rate_rpcs_per_s, 500);
    // Start without rate= takes tbf_rate.
    run(&mut t, "start c jobid={c}");
    assert_eq!(
        t.listing(ListingForm::Expression)[0].rate_rpcs_per_s,
        10_000
    );
    let mut old: Tbf<u32> = Tbf::new(ClassType::single(Field::Jobid), TbfConfig::legacy_2_14());
    assert_eq!(
        errno(&mut old, "start b jobid={b} rate=65535"),
        Errno::EINVAL
    );
    run(&mut old, "start b jobid={b} rate=65534");
}

#[test]
fn newest_matching_rule_wins_sanityn_77k() {
    let mut t: Tbf<u32> = Tbf::new(ClassType::GENERIC, TbfConfig::default());
    run(
        &mut t,
        "start ext_a jobid={dd.X},opcode={ost_write} rate=20",
    );
    run(&mut t, "start ext_b jobid={dd.X},opcode={ost_read} rate=10");
    let w = tags_op("dd.X", Opcode::OstWrite);
    t.enqueue(0, &w, 0);
    let s = t.class_state(&w).unwrap();
    assert_eq!((s.rule.as_str(), s.rate_rpcs_per_s), ("ext_b", 10));
    let other_write = tags_op("cp.1", Opcode::OstWrite);
    t.enqueue(0, &other_write, 1);
    assert_eq!(t.class_state(&other_write).unwrap().rule, "ext_a");
    // Generic type: reads and writes of one job are separate classes.
    let r = tags_op("dd.X", Opcode::OstRead);
    t.enqueue(0, &r, 2);
    assert_eq!(t.class_count(), 3);
}

#[test]
fn jobid_wildcards_sanityn_77n() {
    let mut t = jobid_tbf();
    run(&mut t, "start u500 jobid={*.500} rate=10");
    run(&mut t, "start dd jobid={dd.*} rate=20");
    run(&mut t, "start all jobid={*} rate=30 rank=default");
    assert_eq!(t.rule_names(), vec!["dd", "u500", "all", "default"]);
    for (job, rule) in [
        ("dd.500", "dd"),
        ("cp.500", "u500"),
        ("dd", "all"),
        ("dd.", "dd"),
        ("", "all"),
    ] {
        t.enqueue(0, &tags(job), 0);
        assert_eq!(state(&t, job).rule, rule, "job {job:?}");
    }
}

#[test]
fn field_outside_the_type_is_rejected() {
    let mut t: Tbf<u32> = Tbf::new(
        ClassType::parse("jobid+opcode").unwrap(),
        TbfConfig::default(),
    );
    run(&mut t, "start a jobid={a}&opcode={ost_read} rate=10");
    let err = t
        .apply(&TbfCommand::parse("start b uid={1} rate=10").unwrap())
        .unwrap_err();
    assert_eq!(err, TbfError::FieldNotEnabled(Field::Uid));
}

#[test]
fn forced_drain_returns_everything_in_dequeue_order() {
    let mut t = jobid_tbf();
    run(&mut t, "start r jobid={a} rate=1");
    for i in 0..5 {
        t.enqueue(0, &tags("a"), i);
    }
    t.enqueue(0, &tags("b"), 9);
    assert_eq!(take_all(&mut t, 0).0, vec![9, 0, 1, 2]);
    assert_eq!(t.drain(0), vec![3, 4]);
    assert_eq!((t.queued(), t.timer_deadline_ns()), (0, None));
}

// ------------------------------------------------------------------- properties

#[derive(Clone, Debug)]
enum Op {
    Enqueue { class: usize },
    Dequeue,
}

fn ops() -> impl Strategy<Value = Vec<(u64, Op)>> {
    prop::collection::vec(
        (
            0u64..30 * MS,
            prop_oneof![
                (0usize..4).prop_map(|class| Op::Enqueue { class }),
                Just(Op::Dequeue)
            ],
        ),
        1..300,
    )
}

/// The definition of libcfs `cfs_match_wildcard` for job ids without `*`, written as a plain
/// recursion so that it shares nothing with the production matcher: `*` matches any run, except
/// that a `*` with more pattern after it matches nothing at the end of the text (so `a**` does
/// not match `a`, while `a*` does).
fn reference_wildcard(p: &[u8], t: &[u8]) -> bool {
    match (p.split_first(), t.split_first()) {
        (None, _) => t.is_empty(),
        (Some((b'*', rest)), None) => rest.is_empty(),
        (Some((b'*', rest)), Some((_, t_rest))) => {
            reference_wildcard(rest, t) || reference_wildcard(p, t_rest)
        }
        (Some((c, rest)), Some((d, t_rest))) => c == d && reference_wildcard(rest, t_rest),
        (Some(_), None) => false,
    }
}

#[test]
fn the_reference_wildcard_agrees_with_lustres_cases() {
    for (p, t, want) in [
        ("a*", "a", true),
        ("a**", "a", false),
        ("a**", "ab", true),
        ("*", "", true),
        ("**", "", false),
        ("a*b", "ab", true),
        ("a*b", "ba", false),
    ] {
        assert_eq!(
            reference_wildcard(p.as_bytes(), t.as_bytes()),
            want,
            "{p} vs {t}"
        );
        assert_eq!(
            cond::wildcard_match(p.as_bytes(), t.as_bytes()),
            want,
            "{p} vs {t}"
        );
    }
}

proptest! {
    #[test]
    fn a_class_never_beats_rate_times_elapsed_plus_depth(
        rates in prop::collection::vec(1u32..200, 4),
        steps in ops(),
    ) {
        let mut t = jobid_tbf();
        for (k, r) in rates.iter().enumerate() {
            run(&mut t, &format!("start c{k} jobid={{j{k}}} rate={r}"));
        }
        let mut now = 0;
        let mut served: Vec<Vec<u64>> = vec![Vec::new(); 4];
        for (gap, op) in steps {
            now += gap;
            match op {
                Op::Enqueue { class } => t.enqueue(now, &tags(&format!("j{class}")), class as u32),
                Op::Dequeue => match t.dequeue(now) {
                    Dequeue::Request(k) => served[k as usize].push(now),
                    Dequeue::Throttled { until_ns } => prop_assert!(until_ns > now),
                    Dequeue::Empty => prop_assert_eq!(t.queued(), 0),
                },
            }
        }
        for (k, times) in served.iter().enumerate() {
            let rate = rates[k] as u64;
            for i in 0..times.len() {
                for j in i..times.len() {
                    let count = (j - i + 1) as u64;
                    let allowed = 3 + rate * (times[j] - times[i]) / NS_PER_S;
                    prop_assert!(count <= allowed,
                        "class {k}: {count} RPCs in [{}, {}] at rate {rate}", times[i], times[j]);
                }
            }
        }
    }

    #[test]
    fn first_matching_rule_wins(
        patterns in prop::collection::vec(prop::collection::vec("[ab*]{1,3}", 1..3), 1..6),
        jobs in prop::collection::vec("[ab]{0,3}", 1..10),
    ) {
        let mut t = jobid_tbf();
        for (k, p) in patterns.iter().enumerate() {
            run(&mut t, &format!("start r{k} jobid={{{}}} rate=10", p.join(" ")));
        }
        for job in &jobs {
            t.enqueue(0, &tags(job), 0);
            // Independent reference: walk the listing top-down, matching with the definition
            // of libcfs's wildcard over star-free job ids (not the production matcher).
            let expect = t
                .rule_names()
                .iter()
                .find(|name| {
                    name.strip_prefix('r').and_then(|k| k.parse::<usize>().ok()).is_some_and(|k| {
                        patterns[k]
                            .iter()
                            .any(|p| reference_wildcard(p.as_bytes(), job.as_bytes()))
                    })
                })
                .map_or("default".to_string(), |s| s.to_string());
            prop_assert_eq!(state(&t, job).rule, expect);
        }
    }

    #[test]
    fn a_changed_rule_applies_from_the_next_rpc(
        r1 in 1u32..1000,
        r2 in 1u32..1000,
        gap in 0u64..1000 * MS,
    ) {
        let mut t = jobid_tbf();
        run(&mut t, &format!("start r jobid={{a}} rate={r1}"));
        t.enqueue(0, &tags("a"), 0);
        run(&mut t, &format!("change r rate={r2}"));
        prop_assert_eq!(state(&t, "a").rate_rpcs_per_s, r1 as u64);
        t.enqueue(gap, &tags("a"), 1);
        let s = state(&t, "a");
        prop_assert_eq!(s.rate_rpcs_per_s, r2 as u64);
        prop_assert_eq!((s.ntoken, s.check_time_ns), (3, gap));
    }
}

#[test]
fn colliding_key_hashes_keep_classes_apart() {
    let config = TbfConfig {
        cache_size_classes: 4,
        ..TbfConfig::default()
    };
    let mut t: Tbf<u32> = Tbf::new(ClassType::single(Field::Jobid), config);
    t.hash_mask = 0b1; // at most two distinct hashes: long chains
    run(&mut t, "start r jobid={*} rate=10");
    for round in 0..3u64 {
        let now = round * 1000 * MS;
        for k in 0..10u32 {
            t.enqueue(now, &tags(&format!("j{k}")), k);
        }
        let (mut got, _) = take_all(&mut t, now);
        got.sort_unstable();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        // Shrunk to 3 at the 5th, 7th and 9th idle class (through chain unlinking), then the
        // 10th makes 4; every survivor is found again through the chains.
        assert_eq!((t.class_count(), t.idle_class_count()), (4, 4));
        let alive: Vec<ClassState> = (0..10)
            .filter_map(|k| t.class_state(&tags(&format!("j{k}"))))
            .collect();
        assert_eq!(alive.len(), 4);
        assert!(alive.iter().all(|s| s.ntoken == 2 && s.queued == 0));
    }
}

#[test]
fn lru_order_follows_the_latest_idle_time() {
    let config = TbfConfig {
        cache_size_classes: 4,
        ..TbfConfig::default()
    };
    let mut t: Tbf<u32> = Tbf::new(ClassType::single(Field::Jobid), config);
    for job in ["a", "b", "c", "d"] {
        t.enqueue(0, &tags(job), 0);
        assert_eq!(t.dequeue(0), Dequeue::Request(0));
    }
    // `a` becomes active and idle again: now the newest idle class.
    t.enqueue(0, &tags("a"), 1);
    assert_eq!(t.dequeue(0), Dequeue::Request(1));
    t.enqueue(0, &tags("e"), 2);
    assert_eq!(t.dequeue(0), Dequeue::Request(2));
    let alive: Vec<&str> = ["a", "b", "c", "d", "e"]
        .into_iter()
        .filter(|j| t.class_state(&tags(j)).is_some())
        .collect();
    assert_eq!(alive, vec!["a", "d", "e"]);
}

/// A head holds at most `TBF_RULES_MAX` rules (the default included): one more start is
/// refused with ENOMEM, as Lustre answers a rule it cannot allocate; a stop makes room again.
#[test]
fn the_rule_list_is_bounded() {
    let max = crate::limits::TBF_RULES_MAX;
    let mut t = jobid_tbf();
    for k in 1..max {
        run(&mut t, &format!("start r{k} jobid={{j{k}}} rate=10"));
    }
    assert_eq!(t.rule_names().len(), max);
    let over = t
        .apply(&TbfCommand::parse("start over jobid={x} rate=10").unwrap())
        .unwrap_err();
    assert_eq!(over.errno(), Errno::ENOMEM, "{over}");
    run(&mut t, "stop r1");
    run(&mut t, "start over jobid={x} rate=10");
    assert_eq!(t.rule_names().len(), max);
}

/// A class skips the rule check while no command ran since it was found current (its epoch
/// is the head's), and checks again after any command, also when the epoch counter wraps:
/// the wrap marks every class stale, so an old epoch equal to a new one cannot hide a
/// change.
#[test]
fn a_class_rechecks_its_rule_after_every_command_across_the_epoch_wrap() {
    let mut t = jobid_tbf();
    run(&mut t, "start dd jobid={dd.*} rate=100");
    t.enqueue(0, &tags("dd.1"), 1);
    assert_eq!(state(&t, "dd.1").rate_rpcs_per_s, 100);
    let i = t.lookup(&t.class_type.key(&tags("dd.1")), {
        let key = t.class_type.key(&tags("dd.1"));
        index::key_hash(&key) & t.hash_mask
    });
    let i = i.expect("the class exists") as usize;
    assert_eq!(t.classes[i].epoch, t.epoch, "a new class is current");
    // The next command is the one that wraps the counter.
    t.epoch = EPOCH_STALE - 1;
    t.classes[i].epoch = 0;
    run(&mut t, "change dd rate=200");
    assert_eq!(t.epoch, 0, "wrapped");
    assert_eq!(
        t.classes[i].epoch, EPOCH_STALE,
        "every class is stale after the wrap"
    );
    t.enqueue(MS, &tags("dd.1"), 2);
    let s = state(&t, "dd.1");
    assert_eq!(
        (s.rate_rpcs_per_s, s.check_time_ns),
        (200, MS),
        "the change took effect"
    );
    assert_eq!(t.classes[i].epoch, t.epoch, "current again after the check");
    // A start that does not match the class: it re-matches to its own rule, nothing is
    // reset, and its sequence stays stale (module doc), so it keeps checking.
    run(&mut t, "start other jobid={x.*} rate=5");
    t.enqueue(2 * MS, &tags("dd.1"), 3);
    let s = state(&t, "dd.1");
    assert_eq!((s.rate_rpcs_per_s, s.check_time_ns), (200, MS));
    assert_ne!(t.classes[i].epoch, t.epoch);
}
