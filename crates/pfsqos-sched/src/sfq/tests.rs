//! SFQ(D)/DSFQ on virtual time: exact dispatch orders on hand-computed cases (the shape of
//! dmclock's `pull_weight`), and properties over random workloads.

use super::*;
use crate::nrs::{policy_param_text, Nrs};
use crate::SERVICE_REPORT_COST_MAX;
use proptest::prelude::*;

fn tags(job: &str) -> RpcTags {
    crate::test_write(job)
}

fn sfq(config: SfqConfig) -> Sfq<(String, u32)> {
    Sfq::new(
        ClassType::single(Field::Jobid),
        config,
        LustreVersion::MASTER,
    )
}

fn with_depth(depth_max: u32) -> SfqConfig {
    SfqConfig {
        depth_max,
        ..SfqConfig::sfqd()
    }
}

fn weight(s: &mut Sfq<(String, u32)>, cmd: &str) {
    let c = WeightCommand::parse(cmd, s.class_type(), LustreVersion::MASTER).unwrap();
    s.apply_weight(&c.op).unwrap();
}

fn take(s: &mut Sfq<(String, u32)>, now: u64) -> Option<(String, u32)> {
    match s.dequeue(now) {
        Dequeue::Request(r) => Some(r),
        Dequeue::Empty => None,
        Dequeue::Throttled { until_ns } => panic!("throttled until {until_ns}"),
    }
}

fn name(r: &(String, u32)) -> String {
    format!("{}{}", r.0, r.1)
}

/// dmclock's `pull_weight`: weights 1 and 2, five requests each, six pulls give 2 and 4.
/// Tags (cost 1): a starts 0,1,2,3,4; b starts 0,0.5,1,1.5,2; ties by arrival (a first).
#[test]
fn weights_1_2_depth_1_exact_order() {
    let mut s = sfq(with_depth(1));
    weight(&mut s, "start b jobid={b} weight=2");
    for k in 1..=5 {
        s.enqueue_with_cost(0, &tags("a"), 1, ("a".into(), k));
    }
    for k in 1..=5 {
        s.enqueue_with_cost(0, &tags("b"), 1, ("b".into(), k));
    }
    let mut order = Vec::new();
    let mut now = 0;
    while let Some(r) = take(&mut s, now) {
        // D = 1: nothing more until it completes.
        assert_eq!(s.dequeue(now), Dequeue::Empty);
        assert_eq!(s.queued() > 0, r != ("a".into(), 5));
        now += 10;
        s.on_complete(now, &tags(&r.0), 1);
        order.push(name(&r));
    }
    assert_eq!(
        order,
        ["a1", "b1", "b2", "a2", "b3", "b4", "a3", "b5", "a4", "a5"]
    );
    let first6 = &order[..6];
    assert_eq!(first6.iter().filter(|n| n.starts_with('a')).count(), 2);
    assert_eq!(first6.iter().filter(|n| n.starts_with('b')).count(), 4);
}

/// D = 4: four dispatches without a completion, then nothing until one completes; the order
/// is SFQ's whatever D is.
#[test]
fn weights_1_2_depth_4_exact_counts() {
    let mut s = sfq(with_depth(4));
    weight(&mut s, "start b jobid={b} weight=2");
    for k in 1..=5 {
        s.enqueue_with_cost(0, &tags("a"), 1, ("a".into(), k));
        s.enqueue_with_cost(0, &tags("b"), 1, ("b".into(), k));
    }
    let burst: Vec<String> = (0..4).map(|_| name(&take(&mut s, 0).unwrap())).collect();
    assert_eq!(burst, ["a1", "b1", "b2", "a2"]);
    assert_eq!(s.outstanding(), 4);
    assert_eq!(s.dequeue(0), Dequeue::Empty);
    assert_eq!(s.queued(), 6);
    s.on_complete(5, &tags("b"), 1);
    assert_eq!(name(&take(&mut s, 5).unwrap()), "b3");
    assert_eq!(s.dequeue(5), Dequeue::Empty);
    for _ in 0..2 {
        s.on_complete(6, &tags("a"), 1);
    }
    let next: Vec<String> = (0..2).map(|_| name(&take(&mut s, 6).unwrap())).collect();
    assert_eq!(next, ["b4", "a3"]);
}

/// Costs in bytes, and the per-request constant: with `rpc_cost` = 3 a 1-byte request of b
/// costs 4 and a 5-byte request of a costs 8; with weights 1:1 the byte-heavy flow no longer
/// gets twice the requests.
#[test]
fn cost_is_bytes_plus_the_per_request_constant() {
    let run = |rpc_cost: u64| {
        let mut s = sfq(SfqConfig {
            rpc_cost,
            ..with_depth(1)
        });
        for k in 1..=4 {
            s.enqueue_with_cost(0, &tags("a"), 2, ("a".into(), k));
            s.enqueue_with_cost(0, &tags("b"), 1, ("b".into(), k));
        }
        let mut order = Vec::new();
        while let Some(r) = take(&mut s, 0) {
            s.on_complete(0, &tags(&r.0), if r.0 == "a" { 2 } else { 1 });
            order.push(name(&r));
        }
        order.join(" ")
    };
    // Bytes: a 0,2,4,6; b 0,1,2,3.
    assert_eq!(run(0), "a1 b1 b2 a2 b3 b4 a3 a4");
    // 2 + 8 and 1 + 8: a 0,10,20,30; b 0,9,18,27.
    assert_eq!(run(8), "a1 b1 b2 a2 b3 a3 b4 a4");
}

#[test]
fn a_flow_arriving_late_starts_at_the_virtual_time() {
    let mut s = sfq(with_depth(1));
    for k in 1..=4 {
        s.enqueue_with_cost(0, &tags("a"), 10, ("a".into(), k));
    }
    for now in [1, 2] {
        let r = take(&mut s, now).unwrap();
        s.on_complete(now, &tags(&r.0), 10);
    }
    // v = 10 (a2's start); b's first request starts at 10, before a3 (20) and a4 (30), and
    // its second (20) after a3 (20, earlier arrival).
    s.enqueue_with_cost(3, &tags("b"), 10, ("b".into(), 1));
    s.enqueue_with_cost(3, &tags("b"), 10, ("b".into(), 2));
    let mut order = Vec::new();
    while let Some(r) = take(&mut s, 4) {
        s.on_complete(4, &tags(&r.0), 10);
        order.push(name(&r));
    }
    assert_eq!(order, ["b1", "a3", "b2", "a4"]);
}

#[test]
fn weight_rules_parse_apply_list_and_refuse_with_lustre_errnos() {
    let mut s = sfq(with_depth(1));
    let ct = s.class_type();
    let parse = |t: &str| WeightCommand::parse(t, ct, LustreVersion::MASTER);
    let errno = |t: &str| parse(t).unwrap_err().errno;
    for bad in [
        "start",
        "start a",
        "start a jobid={x} weight=0",
        "start a jobid={x} weight=1000000",
        "start a jobid={x} weight=two",
        "start a jobid={x} rate=5",
        "start a jobid={x}weight=2",
        "start a nid={10.0.0.1@tcp} weight=2",
        "start a-b jobid={x}",
        "change a",
        "change a rank=b",
        "stop a weight=2",
        "frob a",
    ] {
        assert_eq!(errno(bad), Errno::EINVAL, "{bad:?}");
    }
    assert_eq!(
        errno("start abcdefghijklmnop jobid={x}"),
        Errno::ENAMETOOLONG
    );
    // echo's newline ends a number.
    assert!(parse("change a weight=3\n").is_ok());
    weight(&mut s, "start dd jobid={dd.*} weight=4");
    weight(&mut s, "start vip jobid={vip.1 vip.2} weight=32");
    let apply = |s: &mut Sfq<(String, u32)>, t: &str| s.apply_weight(&parse(t).unwrap().op);
    assert_eq!(
        apply(&mut s, "start dd jobid={x}").unwrap_err().errno,
        Errno::EEXIST
    );
    assert_eq!(
        apply(&mut s, "change nosuch weight=2").unwrap_err().errno,
        Errno::ENOENT
    );
    assert_eq!(
        apply(&mut s, "stop nosuch").unwrap_err().errno,
        Errno::ENOENT
    );
    assert_eq!(
        apply(&mut s, "stop default").unwrap_err().errno,
        Errno::EPERM
    );
    s.rules.rules_max = 3;
    assert_eq!(
        apply(&mut s, "start more jobid={m}").unwrap_err().errno,
        Errno::ENOMEM
    );
    s.rules.rules_max = SFQ_WEIGHT_RULES_MAX;
    for job in ["dd.0", "dd.1", "vip.2", "other"] {
        s.enqueue_with_cost(0, &tags(job), 1, (job.into(), 0));
    }
    assert_eq!(
        s.weight_listing(),
        "vip jobid={vip.1 vip.2} 32, ref 1\ndd jobid={dd.*} 4, ref 2\ndefault * 1, ref 1\n"
    );
    assert_eq!(s.flow_weight(&tags("dd.1")), Some(4));
    // change and stop re-bind the flows.
    apply(&mut s, "change default weight=7").unwrap();
    apply(&mut s, "stop dd").unwrap();
    assert_eq!(s.flow_weight(&tags("dd.1")), Some(7));
    assert_eq!(
        s.weight_listing(),
        "vip jobid={vip.1 vip.2} 32, ref 1\ndefault * 7, ref 3\n"
    );
    assert_eq!(s.rule_names(), ["vip", "default"]);
}

/// A job id is data: whatever its bytes, the flows listing quotes it, so it cannot pass for
/// a field or a second flow.
#[test]
fn flows_listing_quotes_job_ids() {
    let mut s = sfq(with_depth(1));
    s.enqueue_with_cost(0, &tags("a b weight=9"), 1, ("x".into(), 0));
    s.enqueue_with_cost(0, &tags("dd.0"), 1, ("x".into(), 0));
    assert_eq!(
        s.flows_listing(),
        "jobid=\"a\\x20b\\x20weight\\x3d9\" weight=1 mode=local servers=1 queued=1 dispatched=0\n\
         jobid=dd.0 weight=1 mode=local servers=1 queued=1 dispatched=0\n"
    );
}

/// The registry: `nrs_policies="sfqd jobid"` starts SFQ(D) on a head; its files are written
/// and read through the head and the service listing.
#[test]
fn sfqd_and_dsfq_start_from_nrs_policies_and_own_their_files() {
    let mut reg: Nrs<u32> = Nrs::new();
    let mut hp: Nrs<u32> = Nrs::with_config(NrsQueue::HighPriority, NrsConfig::default());
    for h in [&mut reg, &mut hp] {
        h.write_policies(0, "sfqd jobid").unwrap();
        assert_eq!(h.policy_name(), "sfqd jobid");
        h.write_policy_param(0, "nrs_sfqd_weight", "start a jobid={a} weight=3")
            .unwrap();
        h.write_policy_param(0, "nrs_sfqd_depth", "reg_depth:2 hp_depth:5")
            .unwrap();
        // Addressed to the other queue only: accepted, ignored.
        h.write_policy_param(0, "nrs_sfqd_weight", "hp start h jobid={h} weight=2")
            .unwrap();
    }
    assert_eq!(reg.sfq().unwrap().config().depth_max, 2);
    assert_eq!(hp.sfq().unwrap().config().depth_max, 5);
    let errno =
        |h: &mut Nrs<u32>, p: &str, t: &str| h.write_policy_param(0, p, t).unwrap_err().errno;
    assert_eq!(errno(&mut reg, "nrs_sfqd_depth", "0"), Errno::EINVAL);
    assert_eq!(errno(&mut reg, "nrs_sfqd_depth", "1025"), Errno::EINVAL);
    assert_eq!(
        errno(&mut reg, "nrs_sfqd_depth", "x_depth:3"),
        Errno::EINVAL
    );
    assert_eq!(errno(&mut reg, "nrs_sfqd_flows", "1"), Errno::EPERM);
    assert_eq!(errno(&mut reg, "nrs_dsfq_sync", "layout"), Errno::ENODEV);
    reg.enqueue(0, &tags("a"), 1);
    let text = policy_param_text(&[&reg], Some(&[&hp]), "nrs_sfqd_weight").unwrap();
    assert_eq!(
        text,
        "regular_requests:\nCPT 0:\na jobid={a} 3, ref 1\ndefault * 1, ref 0\n\
         high_priority_requests:\nCPT 0:\nh jobid={h} 2, ref 0\na jobid={a} 3, ref 0\ndefault * 1, ref 0\n"
    );
    assert_eq!(
        policy_param_text(&[&reg], Some(&[&hp]), "nrs_sfqd_depth").unwrap(),
        "reg_depth:2\nhp_depth:5\n"
    );
    assert_eq!(
        policy_param_text(&[&reg], None, "nrs_sfqd_rpc_cost").unwrap(),
        "reg_rpc_cost:0\n"
    );
    // dsfq: its own files; the variants are tunables.
    reg.write_policies(0, "dsfq").unwrap();
    assert_eq!(reg.policy_name(), "dsfq");
    assert_eq!(reg.queued(), 1, "the queued request moved to the FIFO");
    for (p, v) in [
        ("nrs_dsfq_sync", "layout"),
        ("nrs_dsfq_threshold", "0"),
        ("nrs_dsfq_count", "finish"),
        ("nrs_dsfq_nwc", "1000000"),
        ("nrs_dsfq_layout_audit", "1048576"),
        ("nrs_dsfq_rpc_cost", "4096"),
        ("nrs_dsfq_flow_idle_ms", "10000"),
    ] {
        reg.write_policy_param(0, p, v).unwrap();
        let suffix = p.strip_prefix("nrs_dsfq_").unwrap();
        assert_eq!(
            policy_param_text(&[&reg], None, p).unwrap(),
            format!("reg_{suffix}:{v}\n")
        );
    }
    assert_eq!(errno(&mut reg, "nrs_dsfq_sync", "sometimes"), Errno::EINVAL);
    assert_eq!(errno(&mut reg, "nrs_dsfq_count", "never"), Errno::EINVAL);
    assert_eq!(errno(&mut reg, "nrs_dsfq_flow_idle_ms", "0"), Errno::EINVAL);
    assert_eq!(
        errno(&mut reg, "nrs_dsfq_flow_idle_ms", "3600001"),
        Errno::EINVAL
    );
    assert_eq!(errno(&mut reg, "nrs_sfqd_depth", "3"), Errno::ENODEV);
    assert_eq!(
        policy_param_text(&[&reg], None, "nrs_sfqd_depth")
            .unwrap_err()
            .errno,
        Errno::ENODEV
    );
    // No argument is jobid; an unknown type is refused as TBF refuses it.
    assert!(reg.write_policies(0, "dsfq frob").is_err());
    assert_eq!(reg.policy_name(), "fifo");
}

// ---------------------------------------------------------------- DSFQ

fn dsfq(sync: SyncMode, threshold_cost: u64) -> Sfq<(String, u32)> {
    sfq(SfqConfig {
        sync,
        threshold_cost,
        depth_max: 1,
        ..SfqConfig::dsfq()
    })
}

/// Threshold 0: one report per request, carrying exactly its cost, in arrival order (the
/// original DSFQ's per-request synchronization); a threshold below every request's cost
/// (the paper's 512 KB run) sends exactly the same.
#[test]
fn threshold_zero_reports_every_request() {
    let costs = [4096u64, 1 << 20, 512, 7, 65536];
    let run = |threshold: u64| {
        let mut s = dsfq(SyncMode::Threshold, threshold);
        let mut reports = Vec::new();
        for (k, &c) in costs.iter().enumerate() {
            let job = if k % 2 == 0 { "a" } else { "b" };
            s.enqueue_with_cost(k as u64, &tags(job), c, (job.into(), k as u32));
            reports.extend(s.take_service_reports());
        }
        reports
    };
    let zero = run(0);
    assert_eq!(zero.len(), costs.len());
    for (r, &c) in zero.iter().zip(&costs) {
        assert_eq!((r.kind, r.cost), (ReportKind::Service, c));
    }
    assert_eq!(zero, run(1));
    // "Reaches": a request whose cost equals the threshold is broadcast at once.
    let mut s = dsfq(SyncMode::Threshold, 4096);
    s.enqueue_with_cost(0, &tags("a"), 4095, ("a".into(), 0));
    assert!(s.take_service_reports().is_empty());
    s.enqueue_with_cost(0, &tags("a"), 1, ("a".into(), 1));
    assert_eq!(s.take_service_reports()[0].cost, 4096);
    // Per-flow thresholds: each flow against the threshold on its own.
    let mut s = dsfq(SyncMode::FlowThreshold, 100);
    for (job, c) in [("a", 60), ("b", 60), ("a", 40), ("b", 10)] {
        s.enqueue_with_cost(0, &tags(job), c, (job.into(), 0));
    }
    let r = s.take_service_reports();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].flow.job.as_str(), r[0].cost), ("a", 100));
    // 10 MB: nothing until the sum reaches it, then one report per flow.
    let big = run(1 << 20);
    assert_eq!(big.len(), 2);
    assert_eq!(big[0].flow.job.as_str(), "a");
    assert_eq!(big[0].cost, 4096);
    assert_eq!(big[1].cost, 1 << 20);
}

/// A broadcast's reports are built as service is counted: a flow's later service adds to its
/// report, a zero cost makes none, and a broadcast while earlier reports are still pending
/// joins them in order; a new synchronization mode drops the reports not yet broadcast.
#[test]
fn broadcasts_accumulate_per_flow_and_join_pending_reports() {
    let mut s = dsfq(SyncMode::Threshold, 100);
    let served = |s: &mut Sfq<(String, u32)>, job: &str, cost: u64| {
        s.enqueue_with_cost(0, &tags(job), cost, (job.into(), 0));
    };
    served(&mut s, "z", 0);
    served(&mut s, "a", 30);
    served(&mut s, "b", 20);
    served(&mut s, "a", 30);
    served(&mut s, "b", 20); // 100: due
                             // Not taken yet; the next broadcast joins it.
    served(&mut s, "b", 1);
    served(&mut s, "a", 99); // 100: due
    let r = s.take_service_reports();
    let got: Vec<(&str, u64)> = r.iter().map(|r| (r.flow.job.as_str(), r.cost)).collect();
    assert_eq!(got, [("a", 60), ("b", 40), ("b", 1), ("a", 99)]);
    // Counted, not broadcast, then the mode changes: nothing of it is ever sent.
    served(&mut s, "a", 50);
    s.set_tunable("sync", "threshold").unwrap();
    served(&mut s, "b", 60);
    assert!(s.take_service_reports().is_empty());
    served(&mut s, "b", 40);
    let r = s.take_service_reports();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].flow.job.as_str(), r[0].cost), ("b", 100));
}

/// Time-driven synchronization (PFSsim's DSFQATB): nothing is broadcast until the interval
/// has passed since the last broadcast, whatever the cost counted (the threshold plays no
/// part); then one report per flow with its service since, and the interval starts over.
#[test]
fn time_mode_broadcasts_each_interval_not_at_a_cost() {
    let ms = 1_000_000;
    let mut s = sfq(SfqConfig {
        sync: SyncMode::Time,
        threshold_cost: 0,
        sync_interval_ns: 10 * ms,
        depth_max: 1,
        ..SfqConfig::dsfq()
    });
    // 0..9 ms: a, b, a, ... of 100 each; a threshold of 0 would broadcast every one.
    for k in 0..10u64 {
        let job = if k % 2 == 0 { "a" } else { "b" };
        s.enqueue_with_cost(k * ms, &tags(job), 100, (job.into(), k as u32));
        assert!(s.take_service_reports().is_empty(), "{k} ms");
    }
    // 10 ms after the first count: every flow's service since, in one broadcast.
    s.enqueue_with_cost(10 * ms, &tags("a"), 100, ("a".into(), 10));
    let r = s.take_service_reports();
    let got: Vec<(&str, u64)> = r.iter().map(|r| (r.flow.job.as_str(), r.cost)).collect();
    assert_eq!(got, [("a", 600), ("b", 500)]);
    assert!(r.iter().all(|r| r.kind == ReportKind::Service));
    // The interval restarts at that broadcast: 19 ms is too early, 20 ms is due.
    s.enqueue_with_cost(19 * ms, &tags("b"), 7, ("b".into(), 11));
    assert!(s.take_service_reports().is_empty());
    s.enqueue_with_cost(20 * ms, &tags("b"), 3, ("b".into(), 12));
    let r = s.take_service_reports();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].flow.job.as_str(), r[0].cost), ("b", 10));
}

/// The time-driven interval is a tunable with Lustre-style bounds; `time` is a mode name.
#[test]
fn the_time_interval_is_a_bounded_tunable() {
    let mut s = dsfq(SyncMode::Threshold, 0);
    assert_eq!(s.tunable_text("sync_interval_ms").unwrap(), "100");
    s.set_tunable("sync", "time").unwrap();
    assert_eq!(s.tunable_text("sync").unwrap(), "time");
    s.set_tunable("sync_interval_ms", "250").unwrap();
    assert_eq!(s.tunable_text("sync_interval_ms").unwrap(), "250");
    for bad in ["0", "3600001", "x"] {
        assert_eq!(
            s.set_tunable("sync_interval_ms", bad).unwrap_err().errno,
            Errno::EINVAL,
            "{bad}"
        );
    }
}

/// Layout mode: what an instance announced and still holds is listed again for a peer that
/// restarted; applying the list twice changes nothing the first time did not.
#[test]
fn presence_reports_repeat_the_announcements_and_apply_idempotently() {
    let mut a = dsfq(SyncMode::Layout, 0);
    for (k, job) in ["x", "y"].into_iter().enumerate() {
        a.enqueue_with_cost(0, &tags(job), 10, (job.into(), k as u32));
    }
    let announced = a.take_service_reports();
    assert_eq!(announced.len(), 2);
    let mut presence = a.presence_reports();
    presence.sort_by(|p, q| p.flow.job.as_str().cmp(q.flow.job.as_str()));
    assert_eq!(
        presence, announced,
        "the same FlowArrived reports, nothing consumed"
    );
    assert!(a.take_service_reports().is_empty());
    let mut b = dsfq(SyncMode::Layout, 0);
    for _ in 0..2 {
        for r in &presence {
            b.peer_report(0, 7, r).unwrap();
        }
    }
    for job in ["x", "y"] {
        let key = b.class_type().key(&tags(job));
        assert_eq!(b.flow_remote_instances(&key), Some(&[7u32][..]), "{job}");
    }
    // Threshold mode announces nothing, so it has nothing to repeat.
    let mut t = dsfq(SyncMode::Threshold, 1 << 30);
    t.enqueue_with_cost(0, &tags("x"), 10, ("x".into(), 0));
    assert!(t.presence_reports().is_empty());
}

/// A peer's reported service delays the flow's next local request by cost/weight.
#[test]
fn peer_service_delays_the_next_arrival() {
    let mut s = dsfq(SyncMode::Threshold, 1 << 30);
    s.enqueue_with_cost(0, &tags("a"), 10, ("a".into(), 1));
    s.enqueue_with_cost(0, &tags("b"), 10, ("b".into(), 1));
    // a got 30 elsewhere: its second request starts at 10 + 30 = 40, after b's 10, 20, 30.
    let report = ServiceReport::new(ReportKind::Service, tags("a"), 30);
    let key = s.class_type().key(&tags("a"));
    assert_eq!(
        s.peer_report(0, 1, &report),
        Err(SyncRejection::UnknownFlow),
        "a full tag set is not a jobid key"
    );
    s.peer_report(0, 1, &ServiceReport::new(ReportKind::Service, key, 30))
        .unwrap();
    s.enqueue_with_cost(0, &tags("a"), 10, ("a".into(), 2));
    for k in 2..=4 {
        s.enqueue_with_cost(0, &tags("b"), 10, ("b".into(), k));
    }
    let mut order = Vec::new();
    while let Some(r) = take(&mut s, 0) {
        s.on_complete(0, &tags(&r.0), 10);
        order.push(name(&r));
    }
    assert_eq!(order, ["a1", "b1", "b2", "b3", "b4", "a2"]);
}

fn key(job: &str) -> RpcTags {
    ClassType::single(Field::Jobid).key(&tags(job))
}

/// Hostile reports are refused and change nothing: the same workload afterwards dispatches
/// exactly as on a twin that received nothing.
#[test]
fn hostile_reports_are_refused_without_effect() {
    for sync in [SyncMode::Threshold, SyncMode::Layout] {
        let mut hit = dsfq(sync, 100);
        let mut twin = dsfq(sync, 100);
        for s in [&mut hit, &mut twin] {
            s.enqueue_with_cost(0, &tags("a"), 10, ("a".into(), 0));
            s.take_service_reports();
        }
        let hostile = [
            (
                ServiceReport::new(ReportKind::Service, key("a"), SERVICE_REPORT_COST_MAX + 1),
                SyncRejection::AbsurdCost {
                    cost: SERVICE_REPORT_COST_MAX + 1,
                },
                1,
            ),
            (
                ServiceReport::new(ReportKind::FlowArrived, key("a"), 5),
                SyncRejection::CostOnPresence,
                1,
            ),
            (
                ServiceReport::new(ReportKind::Service, tags("a"), 5),
                SyncRejection::UnknownFlow,
                1,
            ),
            (
                ServiceReport::new(ReportKind::FlowArrived, key("a"), 0),
                SyncRejection::BadInstance,
                SYNC_INSTANCES_MAX,
            ),
        ];
        for (r, why, from) in hostile {
            assert_eq!(hit.peer_report(0, from, &r), Err(why), "{r:?}");
        }
        if sync == SyncMode::Layout {
            // A departure nobody announced.
            let left = ServiceReport::new(ReportKind::FlowLeft, key("a"), 0);
            assert_eq!(
                hit.peer_report(0, 3, &left),
                Err(SyncRejection::UnknownFlow)
            );
        }
        for s in [&mut hit, &mut twin] {
            for k in 1..6 {
                s.enqueue_with_cost(1, &tags("a"), 10, ("a".into(), k));
                s.enqueue_with_cost(1, &tags("b"), 10, ("b".into(), k));
            }
        }
        let drain = |s: &mut Sfq<(String, u32)>| {
            let mut v = Vec::new();
            while let Some(r) = take(s, 2) {
                s.on_complete(2, &tags(&r.0), 10);
                v.push(name(&r));
            }
            (v, s.take_service_reports(), s.flows_listing())
        };
        assert_eq!(drain(&mut hit), drain(&mut twin));
    }
}

/// The flow table is bounded: beyond it, departed flows are evicted, and when none can be, new
/// flows fold into the overflow flow (listed as `*`); peers' new flows are refused.
#[test]
fn flows_beyond_the_bound_fold_and_departed_ones_are_evicted() {
    let mut s = sfq(SfqConfig {
        flows_max: 2,
        flow_idle_ns: 100,
        ..with_depth(8)
    });
    for job in ["a", "b", "c"] {
        s.enqueue_with_cost(0, &tags(job), 1, (job.into(), 0));
    }
    assert_eq!(s.folded_requests(), 1);
    assert_eq!(s.flow_count(), 3);
    assert!(s.flows_listing().starts_with("* weight=1"));
    while let Some(r) = take(&mut s, 1) {
        s.on_complete(1, &tags(&r.0), 1);
    }
    // Idle past the idle time: a and b leave, and d takes a's place.
    s.on_timer(200);
    s.enqueue_with_cost(200, &tags("d"), 1, ("d".into(), 0));
    assert_eq!(s.folded_requests(), 1);
    assert!(s.flow_weight(&tags("d")).is_some());
    let mut l = dsfq(SyncMode::Layout, 0);
    l.config.flows_max = 1;
    l.peer_report(
        0,
        1,
        &ServiceReport::new(ReportKind::FlowArrived, key("a"), 0),
    )
    .unwrap();
    assert_eq!(
        l.peer_report(
            0,
            1,
            &ServiceReport::new(ReportKind::FlowArrived, key("b"), 0)
        ),
        Err(SyncRejection::TooManyFlows)
    );
}

/// A departed flow whose service is not yet broadcast is not evicted (its report waits in the
/// next broadcast): a new flow folds instead; once the broadcast went out, it can be.
#[test]
fn a_flow_with_service_not_yet_broadcast_is_not_evicted() {
    let mut s = dsfq(SyncMode::Threshold, 100);
    s.config.flows_max = 1;
    s.config.flow_idle_ns = 10;
    s.enqueue_with_cost(0, &tags("a"), 10, ("a".into(), 0));
    let r = take(&mut s, 0).unwrap();
    s.on_complete(0, &tags(&r.0), 10);
    // a departs at 20 (idle since 0), but its 10 are in the next broadcast: b folds.
    s.enqueue_with_cost(20, &tags("b"), 95, ("b".into(), 1));
    assert_eq!(s.folded_requests(), 1);
    assert!(s.flow_weight(&tags("b")).is_none());
    // The overflow flow's service is not broadcast; a's next 90 reach the threshold, and the
    // broadcast holds a's report with both.
    assert!(s.take_service_reports().is_empty());
    s.enqueue_with_cost(20, &tags("a"), 90, ("a".into(), 2));
    let r = s.take_service_reports();
    let got: Vec<(&str, u64)> = r.iter().map(|r| (r.flow.job.as_str(), r.cost)).collect();
    assert_eq!(got, [("a", 100)]);
    while let Some(r) = take(&mut s, 20) {
        s.on_complete(20, &tags(&r.0), 1);
    }
    // a departs again with nothing pending, so it goes, and c gets a flow of its own.
    s.enqueue_with_cost(40, &tags("c"), 1, ("c".into(), 3));
    assert_eq!(s.folded_requests(), 1);
    assert!(s.flow_weight(&tags("c")).is_some());
    assert!(s.flow_weight(&tags("a")).is_none());
}

/// Layout mode: local requests are charged as mirrored on every instance that announced the
/// flow; the instance itself announces arrivals and departures only.
#[test]
fn layout_mode_charges_mirrored_cost_and_announces_presence() {
    let mut s = dsfq(SyncMode::Layout, 0);
    s.config.flow_idle_ns = 1_000;
    // a is striped over this and three other instances, b only here.
    for from in [1, 2, 3, 2] {
        s.peer_report(
            0,
            from,
            &ServiceReport::new(ReportKind::FlowArrived, key("a"), 0),
        )
        .unwrap();
    }
    assert_eq!(s.flow_remote_instances(&tags("a")), Some(&[1u32, 2, 3][..]));
    for k in 1..=3 {
        s.enqueue_with_cost(0, &tags("a"), 10, ("a".into(), k));
        s.enqueue_with_cost(0, &tags("b"), 10, ("b".into(), k));
    }
    let reports = s.take_service_reports();
    assert_eq!(
        reports
            .iter()
            .map(|r| (r.kind, r.flow.job.as_str().to_string()))
            .collect::<Vec<_>>(),
        [
            (ReportKind::FlowArrived, "a".to_string()),
            (ReportKind::FlowArrived, "b".to_string())
        ]
    );
    // a: starts 30 (delay 30), 70, 110; b: 0, 10, 20.
    let mut order = Vec::new();
    while let Some(r) = take(&mut s, 10) {
        s.on_complete(10, &tags(&r.0), 10);
        order.push(name(&r));
    }
    assert_eq!(order, ["b1", "b2", "b3", "a1", "a2", "a3"]);
    assert!(s.take_service_reports().is_empty());
    assert!(s.flows_listing().contains("mode=layout servers=4"));
    s.on_timer(2_000);
    let left: Vec<ReportKind> = s.take_service_reports().iter().map(|r| r.kind).collect();
    assert_eq!(left, [ReportKind::FlowLeft, ReportKind::FlowLeft]);
    s.peer_report(
        2_000,
        2,
        &ServiceReport::new(ReportKind::FlowLeft, key("a"), 0),
    )
    .unwrap();
    assert_eq!(s.flow_remote_instances(&tags("a")), Some(&[1u32, 3][..]));
}

/// The dynamic switch: with the audit on, a flow whose service here and on a peer differ by
/// more than the mismatch factor goes to threshold mode, and the listing says so; a service
/// report for a layout-mode flow switches it too.
#[test]
fn layout_audit_mismatch_switches_the_flow_to_threshold() {
    let mut s = dsfq(SyncMode::Layout, 0);
    s.config.layout_audit_cost = 100;
    s.peer_report(
        0,
        1,
        &ServiceReport::new(ReportKind::FlowArrived, key("a"), 0),
    )
    .unwrap();
    s.peer_report(
        0,
        1,
        &ServiceReport::new(ReportKind::FlowArrived, key("b"), 0),
    )
    .unwrap();
    for k in 0..10 {
        s.enqueue_with_cost(0, &tags("a"), 10, ("a".into(), k));
        s.enqueue_with_cost(0, &tags("b"), 10, ("b".into(), k));
    }
    let audits: Vec<ServiceReport> = s
        .take_service_reports()
        .into_iter()
        .filter(|r| r.kind == ReportKind::LayoutAudit)
        .collect();
    assert_eq!(audits.len(), 2);
    assert_eq!(audits[0].cost, 100);
    // The peer served a as much (even striping), b five times as much.
    s.peer_report(
        0,
        1,
        &ServiceReport::new(ReportKind::LayoutAudit, key("a"), 100),
    )
    .unwrap();
    s.peer_report(
        0,
        1,
        &ServiceReport::new(ReportKind::LayoutAudit, key("b"), 500),
    )
    .unwrap();
    assert_eq!(s.flow_mode(&tags("a")), Some(FlowMode::Layout));
    assert_eq!(s.flow_mode(&tags("b")), Some(FlowMode::Threshold));
    let listing = s.flows_listing();
    assert!(
        listing.contains("jobid=a weight=1 mode=layout"),
        "{listing}"
    );
    assert!(
        listing.contains("jobid=b weight=1 mode=threshold"),
        "{listing}"
    );
    // b now reports its service as threshold mode does (threshold 0: every request).
    s.enqueue_with_cost(0, &tags("b"), 10, ("b".into(), 99));
    let r = s.take_service_reports();
    assert_eq!(
        (r.len(), r[0].kind, r[0].cost),
        (1, ReportKind::Service, 10)
    );
    s.peer_report(0, 1, &ServiceReport::new(ReportKind::Service, key("a"), 10))
        .unwrap();
    assert_eq!(s.flow_mode(&tags("a")), Some(FlowMode::Threshold));
}

// ---------------------------------------------------------------- properties

/// Drives `s` with `flows` (job, weight, request costs cycling) all kept backlogged, D
/// requests in service, each completing `service_ns` after dispatch in order. Returns the
/// dispatches as `(flow, cost)`.
fn backlogged(
    s: &mut Sfq<(String, u32)>,
    flows: &[(String, Vec<u64>)],
    dispatches: usize,
) -> Vec<(usize, u64)> {
    let mut next = vec![0usize; flows.len()];
    let mut queued = vec![0usize; flows.len()];
    let mut in_service: VecDeque<(usize, u64)> = VecDeque::new();
    let mut out = Vec::new();
    let mut now = 0u64;
    let cost_of = |f: usize, k: usize| flows[f].1[k % flows[f].1.len()];
    while out.len() < dispatches {
        for f in 0..flows.len() {
            while queued[f] < 3 {
                let c = cost_of(f, next[f]);
                s.enqueue_with_cost(now, &tags(&flows[f].0), c, (flows[f].0.clone(), f as u32));
                next[f] += 1;
                queued[f] += 1;
            }
        }
        match s.dequeue(now) {
            Dequeue::Request((_, f)) => {
                let f = f as usize;
                queued[f] -= 1;
                let c = cost_of(f, next[f] - queued[f] - 1);
                out.push((f, c));
                in_service.push_back((f, c));
            }
            Dequeue::Empty => {
                let (f, c) = in_service
                    .pop_front()
                    .expect("at depth, so one is in service");
                now += 1_000;
                s.on_complete(now, &tags(&flows[f].0), c);
            }
            Dequeue::Throttled { .. } => unreachable!("work-conserving"),
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// SFQ's fairness bound (Goyal et al.; vPFS's [5]): with f and g backlogged, over any
    /// run of consecutive dispatches, |W_f/φ_f - W_g/φ_g| <= c_f^max/φ_f + c_g^max/φ_g.
    /// With D > 1 the dispatch order is the same (D only delays), so it holds for dispatches.
    #[test]
    fn backlogged_service_matches_weights_within_the_sfq_bound(
        weights in prop::collection::vec(1u32..=8, 2..4),
        costs in prop::collection::vec(prop::collection::vec(1u64..=64, 1..5), 4),
        depth in 1u32..=4,
    ) {
        let mut s = sfq(with_depth(depth));
        let mut flows = Vec::new();
        for (i, &w) in weights.iter().enumerate() {
            let job = format!("j{i}");
            weight(&mut s, &format!("start r{i} jobid={{{job}}} weight={w}"));
            flows.push((job, costs[i].clone()));
        }
        let out = backlogged(&mut s, &flows, 200);
        let cmax: Vec<f64> = costs.iter().map(|c| *c.iter().max().unwrap() as f64).collect();
        for i in 0..out.len() {
            let mut served = vec![0f64; flows.len()];
            for &(f, c) in &out[i..] {
                served[f] += c as f64;
                for g in 0..flows.len() {
                    for h in 0..flows.len() {
                        let (wg, wh) = (weights[g] as f64, weights[h] as f64);
                        let gap = (served[g] / wg - served[h] / wh).abs();
                        let bound = cmax[g] / wg + cmax[h] / wh;
                        prop_assert!(gap <= bound + 1e-9, "{gap} > {bound}");
                    }
                }
            }
        }
    }

    /// Splitting does not pay: a flow sending its bytes as k times smaller requests gets the
    /// same share (within the bound) as one sending whole requests, at equal weights.
    #[test]
    fn splitting_requests_does_not_gain_share(k in 1u64..=16, whole in 16u64..=256) {
        let mut s = sfq(with_depth(1));
        let small = (whole / k).max(1);
        let flows = vec![("whole".to_string(), vec![whole]), ("split".to_string(), vec![small])];
        let out = backlogged(&mut s, &flows, 300);
        let served = |f: usize| out.iter().filter(|d| d.0 == f).map(|d| d.1).sum::<u64>() as f64;
        prop_assert!(served(1) <= served(0) + (whole + small) as f64);
        prop_assert!(served(0) <= served(1) + (whole + small) as f64);
    }

    /// Work conservation: a dequeue yields nothing only when nothing is queued or D requests
    /// are outstanding; a work-conserving instance never throttles.
    #[test]
    fn sfqd_is_work_conserving(
        ops in prop::collection::vec((0u8..3, 0usize..3, 1u64..100), 1..300),
        depth in 1u32..=4,
    ) {
        let mut s = sfq(with_depth(depth));
        let mut in_service: Vec<(usize, u64)> = Vec::new();
        let mut now = 0;
        for (op, f, c) in ops {
            now += 7;
            let job = format!("j{f}");
            match op {
                0 => s.enqueue_with_cost(now, &tags(&job), c, (job.clone(), c as u32)),
                1 => match s.dequeue(now) {
                    Dequeue::Request((j, c)) => in_service.push((j[1..].parse().unwrap(), c as u64)),
                    Dequeue::Empty => prop_assert!(
                        s.queued() == 0 || s.outstanding() == depth,
                        "idle with {} queued and {} outstanding", s.queued(), s.outstanding()
                    ),
                    Dequeue::Throttled { .. } => prop_assert!(false, "throttled"),
                },
                _ => if !in_service.is_empty() {
                    let (f, c) = in_service.remove(c as usize % in_service.len());
                    s.on_complete(now, &tags(&format!("j{f}")), c);
                },
            }
            prop_assert_eq!(s.outstanding() as usize, in_service.len());
        }
    }

    /// NWC: over any interval, a flow's dispatched cost stays within its share of the
    /// capacity plus one request, whatever else is backlogged.
    #[test]
    fn nwc_never_exceeds_a_cap_by_more_than_one_request(
        weights in prop::collection::vec(1u32..=4, 1..4),
        cost in 1u64..=1000,
        capacity in 1_000u64..=100_000,
    ) {
        let mut s = sfq(SfqConfig {
            nwc_capacity_cost_per_s: capacity,
            ..with_depth(2)
        });
        let mut flows = Vec::new();
        for (i, &w) in weights.iter().enumerate() {
            let job = format!("j{i}");
            weight(&mut s, &format!("start r{i} jobid={{{job}}} weight={w}"));
            flows.push(job);
        }
        let total: u64 = weights.iter().map(|&w| w as u64).sum();
        let mut now = 0u64;
        let mut log: Vec<(u64, usize)> = Vec::new();
        let mut in_service = 0;
        let mut queued = vec![0; flows.len()];
        while log.len() < 60 {
            for (f, job) in flows.iter().enumerate() {
                while queued[f] < 2 {
                    s.enqueue_with_cost(now, &tags(job), cost, (job.clone(), f as u32));
                    queued[f] += 1;
                }
            }
            match s.dequeue(now) {
                Dequeue::Request((_, f)) => {
                    queued[f as usize] -= 1;
                    log.push((now, f as usize));
                    in_service += 1;
                }
                Dequeue::Empty => {
                    prop_assert!(in_service > 0);
                    in_service -= 1;
                    s.on_complete(now, &tags(&flows[0]), cost);
                }
                Dequeue::Throttled { until_ns } => {
                    prop_assert!(until_ns > now);
                    prop_assert_eq!(s.timer_deadline_ns(), Some(until_ns));
                    // Complete what is in service, then wait.
                    while in_service > 0 {
                        in_service -= 1;
                        s.on_complete(now, &tags(&flows[0]), cost);
                    }
                    now = until_ns;
                    s.on_timer(now);
                }
            }
        }
        for (f, &w) in weights.iter().enumerate() {
            let rate = capacity as f64 * w as f64 / total as f64;
            let times: Vec<u64> = log.iter().filter(|d| d.1 == f).map(|d| d.0).collect();
            for i in 0..times.len() {
                for j in i..times.len() {
                    let served = ((j - i + 1) as u64 * cost) as f64;
                    let allowed = rate * (times[j] - times[i]) as f64 / 1e9 + cost as f64;
                    prop_assert!(served <= allowed + 1e-6, "flow {f}: {served} > {allowed}");
                }
            }
        }
    }

    /// Layout mode sends nothing but presence: for random arrivals and idle gaps, every report
    /// is an arrival or a departure, they alternate per flow starting with an arrival, and
    /// their number is the number of presence changes.
    #[test]
    fn layout_mode_reports_only_arrivals_and_departures(
        ops in prop::collection::vec((0usize..3, 0u64..3_000, 1u64..1_000_000), 1..200),
    ) {
        let mut s = dsfq(SyncMode::Layout, 0);
        s.config.depth_max = 4;
        s.config.flow_idle_ns = 1_000;
        let mut now = 0;
        let mut reports = Vec::new();
        let mut in_service = Vec::new();
        for (f, gap, c) in ops {
            now += gap;
            let job = format!("j{f}");
            s.enqueue_with_cost(now, &tags(&job), c, (job.clone(), 0));
            while let Dequeue::Request((j, _)) = s.dequeue(now) {
                in_service.push(j);
            }
            for j in in_service.drain(..) {
                s.on_complete(now + 10, &tags(&j), 0);
            }
            reports.extend(s.take_service_reports());
        }
        s.on_timer(now + 10_000);
        reports.extend(s.take_service_reports());
        for f in 0..3 {
            let kinds: Vec<ReportKind> = reports
                .iter()
                .filter(|r| r.flow.job.as_str() == format!("j{f}"))
                .map(|r| r.kind)
                .collect();
            for (i, k) in kinds.iter().enumerate() {
                let expected = if i % 2 == 0 { ReportKind::FlowArrived } else { ReportKind::FlowLeft };
                prop_assert_eq!(*k, expected);
            }
            prop_assert!(kinds.len().is_multiple_of(2), "every flow left at the end");
        }
    }
}

/// The lookup reads the key (its own table) and the flow's line 0, which holds every field an
/// enqueue or a dispatch of SFQ(D) or layout DSFQ touches; threshold DSFQ, NWC and departures
/// add line 1, and nothing else is per flow but the cold part.
#[test]
fn flow_hot_state_fits_in_two_cache_lines() {
    use std::mem::{offset_of, size_of};
    assert_eq!(size_of::<RpcTags>(), 64);
    assert_eq!(size_of::<Flow>(), 128);
    assert_eq!(std::mem::align_of::<Flow>(), 128);
    for end in [
        offset_of!(Flow, last_finish) + 16,
        offset_of!(Flow, weight) + 4,
        offset_of!(Flow, queued) + 4,
        offset_of!(Flow, delay_cost) + 8,
        offset_of!(Flow, local_cost_total) + 8,
        offset_of!(Flow, dispatched_cost) + 8,
        offset_of!(Flow, remote_count) + 4,
        offset_of!(Flow, mode) + 1,
        offset_of!(Flow, present) + 1,
        offset_of!(Flow, held) + 1,
    ] {
        assert!(
            end <= 64,
            "a field every enqueue or dispatch touches is past line 0"
        );
    }
    // A queued request's slot (payload, cost and flow) is 24 bytes for a 4-byte payload
    // outside test builds: a `const` assertion beside `Pending`.
}

proptest! {
    /// The 64-bit path of `tag` gives the 128-bit quotient exactly, at the boundary too.
    #[test]
    fn tag_equals_the_wide_quotient(
        cost in prop_oneof![0u64..1 << 33, (1u64 << 32) - 2..(1u64 << 32) + 2, any::<u64>()],
        weight in prop_oneof![1u32..4, 1u32..=SFQ_WEIGHT_MAX, Just(SFQ_WEIGHT_MAX)],
    ) {
        prop_assert_eq!(tag(cost, weight), ((cost as Tag) << TAG_FRAC_BITS) / weight as Tag);
    }
}

// ---------------------------------------------------------------- the heap's window

#[derive(Clone, Debug)]
enum WindowOp {
    Enqueue {
        flow: usize,
        cost: u64,
    },
    Dequeue,
    Complete {
        pick: usize,
    },
    /// A peer's service report: the flow's next arrival starts that much later.
    PeerService {
        flow: usize,
        cost: u64,
    },
    /// The arrival counter jumps, as after a long run: to the heap's 2^40 arrivals and beyond.
    SeqJump {
        by: u64,
    },
    Advance {
        ns: u64,
    },
}

fn window_op(flows: usize) -> impl Strategy<Value = WindowOp> {
    // Costs from one byte to 2^56: a weight-1 flow's tags step by up to 2^88 units, far
    // beyond the heap's 2^64-unit window, while small costs stay inside it.
    let cost = prop_oneof![
        4 => 1u64..=4096,
        1 => Just(1u64 << 20),
        1 => Just(1u64 << 32),
        1 => Just(1u64 << 40),
        1 => Just(1u64 << 56),
    ];
    prop_oneof![
        6 => (0..flows, cost.clone()).prop_map(|(flow, cost)| WindowOp::Enqueue { flow, cost }),
        5 => Just(WindowOp::Dequeue),
        3 => any::<usize>().prop_map(|pick| WindowOp::Complete { pick }),
        1 => (0..flows, prop_oneof![1u64..=1 << 20, Just(SERVICE_REPORT_COST_MAX)])
            .prop_map(|(flow, cost)| WindowOp::PeerService { flow, cost }),
        1 => prop_oneof![Just(1u64 << 39), Just(1u64 << 40), Just(1u64 << 41), Just(1u64 << 46)]
            .prop_map(|by| WindowOp::SeqJump { by }),
        1 => prop_oneof![1u64..=1_000_000, Just(NS_PER_S), Just(1_000 * NS_PER_S)]
            .prop_map(|ns| WindowOp::Advance { ns }),
    ]
}

/// Every flow's head request (its oldest queued), by its payload's number: `(start, seq)`
/// whole, as the request slots recorded them at arrival (test builds keep them there,
/// independently of the heap's keys).
fn heads(s: &Sfq<(String, u32)>) -> FxHashMap<u32, (Tag, u64)> {
    let mut head: FxHashMap<u32, (Tag, u64, u32)> = FxHashMap::default();
    for r in &s.requests {
        let Some(payload) = &r.payload else { continue };
        let candidate = (r.order.0, r.order.1, payload.1);
        head.entry(r.flow)
            .and_modify(|h| *h = (*h).min(candidate))
            .or_insert(candidate);
    }
    head.into_values()
        .map(|(start, seq, n)| (n, (start, seq)))
        .collect()
}

/// The least `(start, seq)` among the heads of flows that are not held: what a brute-force
/// scan over whole `u128` tags would dispatch.
fn least_unheld_head(s: &Sfq<(String, u32)>) -> Option<(Tag, u64)> {
    s.requests
        .iter()
        .filter(|r| r.payload.is_some() && !s.flows[r.flow as usize].held)
        .map(|r| r.order)
        .min()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Differential against a brute-force scan: on random workloads whose start tags spread
    /// far beyond the heap's 2^64-unit window (costs up to 2^56 bytes at weight 1, peers'
    /// delays), whose arrival numbers jump to and beyond its 2^40 window, and (with NWC) whose held
    /// flows come back below its base, every dispatch is a head request and no head of a
    /// flow not held afterwards comes before it in whole `(u128 start, u64 seq)` order; a
    /// dequeue yields nothing only at depth or when every queued flow is held.
    #[test]
    fn dispatch_order_is_the_whole_tag_order_beyond_the_heap_window(
        weights in prop::collection::vec(prop_oneof![Just(1u32), Just(SFQ_WEIGHT_MAX), 1u32..=16], 2..6),
        ops in prop::collection::vec(window_op(6), 1..300),
        nwc in any::<bool>(),
        depth in 1u32..=3,
    ) {
        let mut s = sfq(SfqConfig {
            sync: SyncMode::Threshold,
            threshold_cost: SYNC_THRESHOLD_COST_MAX,
            depth_max: depth,
            nwc_capacity_cost_per_s: if nwc { 1 << 40 } else { 0 },
            ..SfqConfig::dsfq()
        });
        for (i, &w) in weights.iter().enumerate() {
            weight(&mut s, &format!("start r{i} jobid={{j{i}}} weight={w}"));
        }
        let flows = weights.len();
        let mut now = 0u64;
        let mut id = 0u32;
        let mut in_service: Vec<(String, u64)> = Vec::new();
        let mut costs: FxHashMap<u32, u64> = FxHashMap::default();
        for op in ops {
            match op {
                WindowOp::Enqueue { flow, cost } => {
                    let job = format!("j{}", flow % flows);
                    id += 1;
                    costs.insert(id, cost);
                    s.enqueue_with_cost(now, &tags(&job), cost, (job, id));
                }
                WindowOp::Dequeue => {
                    let before = heads(&s);
                    match s.dequeue(now) {
                        Dequeue::Request((job, n)) => {
                            let got = before.get(&n).copied();
                            prop_assert!(got.is_some(), "dispatched {job}/{n}, not a head");
                            if let Some(least) = least_unheld_head(&s) {
                                prop_assert!(got.unwrap() < least, "{got:?} before {least:?}");
                            }
                            in_service.push((job, costs[&n]));
                        }
                        Dequeue::Empty | Dequeue::Throttled { .. } => prop_assert!(
                            s.outstanding() >= depth || least_unheld_head(&s).is_none(),
                            "idle with an unheld flow queued and {} outstanding",
                            s.outstanding()
                        ),
                    }
                }
                WindowOp::Complete { pick } => {
                    if !in_service.is_empty() {
                        let (job, cost) = in_service.swap_remove(pick % in_service.len());
                        s.on_complete(now, &tags(&job), cost);
                    }
                }
                WindowOp::PeerService { flow, cost } => {
                    let report = ServiceReport::new(ReportKind::Service, key(&format!("j{}", flow % flows)), cost);
                    s.peer_report(now, 1, &report).unwrap();
                }
                WindowOp::SeqJump { by } => s.seq += by,
                WindowOp::Advance { ns } => {
                    now += ns;
                    s.on_timer(now);
                }
            }
            s.take_service_reports();
        }
    }
}

/// A weight-1 flow of 1 TiB requests beside small ones spreads the start tags over 2^72
/// units: the far head goes to the heap's side heap and the order holds across the two.
#[test]
fn tags_beyond_the_window_use_the_side_heap_in_order() {
    let mut s = sfq(with_depth(1));
    weight(&mut s, "start big jobid={big} weight=1");
    weight(
        &mut s,
        &format!("start fast jobid={{fast}} weight={SFQ_WEIGHT_MAX}"),
    );
    for k in 0..3 {
        s.enqueue_with_cost(0, &tags("big"), 1 << 40, ("big".into(), k));
    }
    for k in 0..3 {
        s.enqueue_with_cost(0, &tags("fast"), 1, ("fast".into(), k));
    }
    // Start tags: big's at 0, 2^72 and 2^73; fast's at 0 (arrived later) and then tiny steps.
    let mut order = Vec::new();
    while let Some(r) = take(&mut s, 0) {
        s.on_complete(0, &tags(&r.0), 1);
        order.push(name(&r));
        if r.0 == "big" && r.1 == 0 {
            assert_eq!(
                s.heap.side_len(),
                2,
                "big's requests at 2^72 and 2^73 are outside the window"
            );
        }
    }
    assert_eq!(order, ["big0", "fast0", "fast1", "fast2", "big1", "big2"]);
}

/// A policy switch drains every queued request in start-tag order: those still in the heap
/// and those NWC took out of it while their flow is held (parked), and the instance then
/// serves new arrivals as an empty one.
#[test]
fn drain_returns_heap_and_parked_requests_in_tag_order() {
    let mut s = sfq(SfqConfig {
        nwc_capacity_cost_per_s: 1_000,
        ..with_depth(4)
    });
    let cost = 1_000;
    for (job, n) in [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)] {
        s.enqueue_with_cost(0, &tags(job), cost, (job.into(), n));
    }
    // a0 and b0 start at 0; each dispatch puts its flow over its share for two seconds.
    assert_eq!(take(&mut s, 0).map(|r| name(&r)), Some("a0".into()));
    assert_eq!(take(&mut s, 0).map(|r| name(&r)), Some("b0".into()));
    // a1, b1 and a2 reach the top and are parked: both flows are held.
    assert!(matches!(s.dequeue(0), Dequeue::Throttled { .. }));
    // c0 starts at the virtual time, 0, and stays in the heap; a3 arrives held and is parked.
    s.enqueue_with_cost(0, &tags("c"), cost, ("c".into(), 0));
    s.enqueue_with_cost(0, &tags("a"), cost, ("a".into(), 3));
    assert_eq!(s.queued(), 5);
    let drained: Vec<String> = s.drain(0).iter().map(name).collect();
    // Start tags: c0 0; a1 and b1 1000 units (a1 arrived first); a2 2000; a3 3000.
    assert_eq!(drained, ["c0", "a1", "b1", "a2", "a3"]);
    assert_eq!(s.queued(), 0);
    assert!(matches!(s.dequeue(0), Dequeue::Empty));
    s.enqueue_with_cost(0, &tags("d"), cost, ("d".into(), 0));
    assert_eq!(take(&mut s, 0).map(|r| name(&r)), Some("d0".into()));
}
