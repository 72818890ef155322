//! The interaction database and iez's choice at create, on virtual time (`now_ns` is passed
//! in): placement by plan, and each fallback with its counter, the file always created.

use pfsqos_core::place::cost::ost_cost;
use pfsqos_wire::mds::{IezPrediction, OssReport, OstSpace};

use crate::*;

const MIB: u64 = 1 << 20;
const S: u64 = 1_000_000_000;
const O: Owner = Owner {
    mode: 0o644,
    uid: 1,
    gid: 1,
};

/// Three OSSs of two OSTs each, 64 MiB per OST.
fn config(osses: u32) -> NamespaceConfig {
    NamespaceConfig {
        fsname: "iezfs".into(),
        osses: (0..osses)
            .map(|i| OssSpec {
                addr: format!("oss{i}:7988"),
                ost_count: 2,
            })
            .collect(),
        default_stripe: StripeSpec {
            stripe_count: 2,
            stripe_size_bytes: MIB,
            start_ost: None,
        },
        inodes_max: 1000,
        placer: "iez".into(),
    }
}

fn report(i: u32, avail: [u64; 2]) -> OssReport {
    OssReport {
        oss: format!("oss{i}:7988"),
        age_ms: 0,
        osts: avail
            .iter()
            .map(|&a| OstSpace {
                total_bytes: 64 * MIB,
                avail_bytes: a,
            })
            .collect(),
        cpu_util_ppm: Some(100_000),
        mem_util_ppm: None,
    }
}

fn report_all(ns: &mut Namespace, now_ns: u64) {
    for i in 0..3 {
        ns.report_oss(report(i, [64 * MIB; 2]), now_ns).unwrap();
    }
}

fn pred(path: &str, mib: u64) -> IezPrediction {
    IezPrediction {
        path: path.into(),
        predicted_bytes: mib * MIB,
        stripe_count: 2,
    }
}

/// A HACC-like set: one big file and five small ones, stripe count 2 over 6 OSTs.
fn workload() -> Vec<IezPrediction> {
    [6, 2, 2, 2, 2, 2]
        .iter()
        .enumerate()
        .map(|(k, &m)| pred(&format!("/run/f{k}"), m))
        .collect()
}

fn mkrun(ns: &mut Namespace) -> u64 {
    ns.mkdir(ROOT_INO, b"run", O, 1).unwrap().ino
}

/// Bytes each OST holds of `files` (sizes) under their layouts: RAID-0 striping.
fn ost_bytes(layouts: &[(FileLayout, u64)], ost_count: usize) -> Vec<f64> {
    let mut per = vec![0f64; ost_count];
    for (l, size) in layouts {
        let n = l.stripes.len() as u64;
        for off in (0..*size).step_by(l.stripe_size_bytes as usize) {
            let stripe = (off / l.stripe_size_bytes % n) as usize;
            let len = l.stripe_size_bytes.min(size - off);
            per[l.stripes[stripe].ost as usize] += len as f64;
        }
    }
    per
}

/// Another application's data fills OSTs 0 and 1 to 12 MiB; round robin ignores it, iez
/// reads it from the statistics and places around it.
#[test]
fn predicted_files_are_placed_by_iez_and_balance_better_than_round_robin() {
    let prefill = [12 * MIB, 12 * MIB, 0, 0, 0, 0];
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    ns.report_oss(report(0, [52 * MIB; 2]), 10 * S).unwrap();
    for i in 1..3 {
        ns.report_oss(report(i, [64 * MIB; 2]), 10 * S).unwrap();
    }
    let w: Vec<IezPrediction> = (0..6).map(|k| pred(&format!("/run/f{k}"), 4)).collect();
    assert_eq!(ns.iez_load("ior", &w, 10 * S).unwrap(), (6, 6));
    let rows = ns.iez_predictions().unwrap();
    assert_eq!(rows.len(), 6);
    let mut iez_layouts = Vec::new();
    for (k, p) in w.iter().enumerate() {
        let (a, l) = ns
            .create(run, format!("f{k}").as_bytes(), O, None, 11 * S)
            .unwrap();
        let row = rows.iter().find(|r| r.path == p.path).unwrap();
        let planned = row.planned.clone().unwrap();
        assert_eq!(
            l.stripes.iter().map(|s| s.ost).collect::<Vec<_>>(),
            planned.osts
        );
        assert_eq!(l.stripe_size_bytes, planned.stripe_size_bytes);
        let info = ns.placement(a.ino).unwrap();
        assert_eq!((info.policy.as_str(), info.reason), ("iez", None));
        iez_layouts.push((l, p.predicted_bytes));
    }
    assert_eq!(ns.iez_counters().placed, 6);
    assert_eq!(ns.iez_counters().fallbacks(), 0);

    // The same files under round robin, on a file system of the same shape and fill.
    let d2 = tempfile::tempdir().unwrap();
    let rr_config = NamespaceConfig {
        placer: "roundrobin".into(),
        ..config(3)
    };
    let mut rr = Namespace::open(&d2.path().join("b.db"), rr_config).unwrap();
    let run2 = mkrun(&mut rr);
    let rr_layouts: Vec<(FileLayout, u64)> = w
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let (_, l) = rr
                .create(run2, format!("f{k}").as_bytes(), O, None, 11 * S)
                .unwrap();
            (l, p.predicted_bytes)
        })
        .collect();
    let used = |layouts: &[(FileLayout, u64)]| -> Vec<f64> {
        let b = ost_bytes(layouts, 6);
        b.iter().zip(prefill).map(|(x, p)| x + p as f64).collect()
    };
    let iez_cost = ost_cost(&used(&iez_layouts)).unwrap();
    let rr_cost = ost_cost(&used(&rr_layouts)).unwrap();
    assert!(iez_cost < rr_cost, "iez {iez_cost} round robin {rr_cost}");
}

#[test]
fn missing_or_stale_statistics_fall_back_and_statistics_arriving_later_plan() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    // Loaded before any statistics: stored, not planned.
    assert_eq!(ns.iez_load("hacc", &workload(), S).unwrap(), (6, 0));
    let (a, l) = ns.create(run, b"f0", O, None, 2 * S).unwrap();
    assert_eq!(l.stripes.len(), 2);
    let info = ns.placement(a.ino).unwrap();
    assert_eq!(info.policy, "lustre");
    assert!(info.reason.unwrap().contains("no statistics from OSS"));
    assert_eq!(ns.iez_counters().fallback_stats_missing, 1);
    // Two of three OSSs report: still missing.
    for i in 0..2 {
        ns.report_oss(report(i, [64 * MIB; 2]), 3 * S).unwrap();
    }
    ns.create(run, b"f1", O, None, 3 * S).unwrap();
    assert_eq!(ns.iez_counters().fallback_stats_missing, 2);
    // All report (one measured 1 s before it was sent): the next create plans and places.
    let mut late = report(2, [64 * MIB; 2]);
    late.age_ms = 1000;
    ns.report_oss(late, 4 * S).unwrap();
    let (a, _) = ns.create(run, b"f2", O, None, 4 * S).unwrap();
    assert_eq!(ns.placement(a.ino).unwrap().policy, "iez");
    assert!(ns
        .iez_predictions()
        .unwrap()
        .iter()
        .all(|r| r.planned.is_some()));
    // Past the allowed age (default 180 s) the statistics are stale.
    let later = 4 * S + (iez::STATS_MAX_AGE_DEFAULT_MS + 1) * 1_000_000;
    let (a, _) = ns.create(run, b"f3", O, None, later).unwrap();
    let info = ns.placement(a.ino).unwrap();
    assert!(info.reason.unwrap().contains("ms old"), "stale");
    assert_eq!(ns.iez_counters().fallback_stats_stale, 1);
    // A shorter allowed age is a setting.
    ns.set_iez_stats_max_age_ms(10);
    ns.create(run, b"f4", O, None, 4 * S + 20_000_000).unwrap();
    assert_eq!(ns.iez_counters().fallback_stats_stale, 2);
    // Files without a row are Lustre's allocator's with no reason, and not counted as fallbacks.
    let (a, _) = ns.create(run, b"other", O, None, 4 * S).unwrap();
    assert_eq!(ns.placement(a.ino).unwrap().reason, None);
    assert_eq!(ns.iez_counters().fallbacks(), 4);
}

#[test]
fn a_prediction_naming_a_missing_ost_falls_back() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("a.db");
    {
        let mut ns = Namespace::open(&db, config(3)).unwrap();
        mkrun(&mut ns);
        report_all(&mut ns, S);
        ns.iez_load("hacc", &workload(), S).unwrap();
    }
    // The file system shrank to two OSSs: rows planned on OSTs 4 and 5 name missing OSTs.
    let mut ns = Namespace::open(&db, config(2)).unwrap();
    for i in 0..2 {
        ns.report_oss(report(i, [64 * MIB; 2]), S).unwrap();
    }
    let run = ns.lookup(ROOT_INO, b"run").unwrap().ino;
    let rows = ns.iez_predictions().unwrap();
    let mut missing = 0;
    for (k, r) in rows.iter().enumerate() {
        let (a, l) = ns
            .create(run, format!("f{k}").as_bytes(), O, None, S)
            .unwrap();
        assert!(
            l.stripes.iter().all(|s| s.ost < 4),
            "nothing lands on a missing OST"
        );
        let names_missing = r.planned.as_ref().unwrap().osts.iter().any(|&o| o >= 4);
        let info = ns.placement(a.ino).unwrap();
        if names_missing {
            missing += 1;
            assert_eq!(info.policy, "lustre");
            assert!(info.reason.unwrap().contains("the file system has 4 OSTs"));
        } else {
            assert_eq!(info.policy, "iez");
        }
    }
    assert!(missing > 0, "the plan used OSTs 4 or 5");
    assert_eq!(ns.iez_counters().fallback_missing_ost, missing);
}

#[test]
fn an_ost_without_free_space_falls_back_and_placed_bytes_count_until_the_next_report() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    report_all(&mut ns, S);
    ns.iez_load("hacc", &workload(), S).unwrap();
    let rows = ns.iez_predictions().unwrap();
    let first = rows[0].planned.clone().unwrap();
    // The OSS of the first file's first OST reports that OST full.
    let oss = first.osts[0] / 2;
    let mut avail = [64 * MIB; 2];
    avail[(first.osts[0] % 2) as usize] = 0;
    ns.report_oss(report(oss, avail), 2 * S).unwrap();
    let (a, l) = ns.create(run, b"f0", O, None, 2 * S).unwrap();
    assert!(!l.stripes.is_empty());
    let info = ns.placement(a.ino).unwrap();
    assert!(info.reason.unwrap().contains("bytes of room"));
    assert_eq!(ns.iez_counters().fallback_no_free_space, 1);

    // An OST with room for exactly one stripe: the second file planned on it falls back.
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("b.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    report_all(&mut ns, S);
    let same: Vec<IezPrediction> = (0..3).map(|k| pred(&format!("/run/g{k}"), 4)).collect();
    ns.iez_load("ior", &same, S).unwrap();
    let (_, l) = ns.create(run, b"g0", O, None, S).unwrap();
    let o = l.stripes[0].ost;
    let mut avail = [64 * MIB; 2];
    avail[(o % 2) as usize] = l.stripe_size_bytes;
    ns.report_oss(report(o / 2, avail), S).unwrap();
    // The report superseded what was placed; room is one stripe now, so of the two files
    // left at most one more lands there, and every create succeeds either way.
    for k in 1..3 {
        ns.create(run, format!("g{k}").as_bytes(), O, None, S)
            .unwrap();
    }
    let c = ns.iez_counters();
    assert_eq!(c.placed + c.fallbacks(), 3);
}

#[test]
fn bad_reports_are_refused_and_counted() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let mut unknown = report(0, [MIB; 2]);
    unknown.oss = "intruder:1".into();
    let mut short = report(0, [MIB; 2]);
    short.osts.pop();
    let mut overfull = report(0, [MIB; 2]);
    overfull.osts[1].avail_bytes = 65 * MIB;
    let mut zero = report(0, [0; 2]);
    zero.osts[0].total_bytes = 0;
    let mut hot = report(0, [MIB; 2]);
    hot.mem_util_ppm = Some(1_000_001);
    for (bad, what) in [
        (unknown, "does not serve"),
        (short, "reports 1 OSTs"),
        (overfull, "more available"),
        (zero, "total 0"),
        (hot, "above 1000000"),
    ] {
        let e = ns.report_oss(bad, S).unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL);
        assert!(e.message.contains(what), "{e}");
    }
    assert_eq!(ns.iez_counters().reports_refused, 5);
    assert_eq!(ns.iez_counters().reports_accepted, 0);
}

#[test]
fn bad_loads_are_refused_and_leave_the_database_as_it_was() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    ns.iez_load("hacc", &workload(), S).unwrap();
    let before = ns.iez_predictions().unwrap();
    let mut absurd = pred("/run/x", 1);
    absurd.predicted_bytes = u64::MAX;
    let mut no_stripes = pred("/run/x", 1);
    no_stripes.stripe_count = 0;
    let mut wide = pred("/run/x", 1);
    wide.stripe_count = 7;
    for (app, files, what) in [
        ("", vec![pred("/a", 1)], "application name"),
        ("a b", vec![pred("/a", 1)], "application name"),
        ("hacc", vec![pred("relative", 1)], "start with '/'"),
        ("hacc", vec![pred("/a/../b", 1)], "'..'"),
        ("hacc", vec![pred("/a//b", 1)], "empty"),
        ("hacc", vec![pred("/a\u{1b}[2J", 1)], "control"),
        ("hacc", vec![pred("/a", 1), pred("/a", 2)], "twice"),
        ("hacc", vec![absurd], "bytes above"),
        ("hacc", vec![no_stripes], "stripe count 0"),
        ("hacc", vec![wide], "stripe count 7"),
    ] {
        let e = ns.iez_load(app, &files, S).unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL, "{e}");
        assert!(e.message.contains(what), "{what}: {e}");
    }
    assert_eq!(ns.iez_predictions().unwrap(), before);
    // A new load replaces the application's rows.
    ns.iez_load("hacc", &[pred("/run/only", 1)], S).unwrap();
    assert_eq!(ns.iez_predictions().unwrap().len(), 1);
}

#[test]
fn an_explicit_layout_wins_and_unlink_forgets_the_placement() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    report_all(&mut ns, S);
    ns.iez_load("hacc", &workload(), S).unwrap();
    let spec = StripeSpec {
        stripe_count: 1,
        stripe_size_bytes: MIB,
        start_ost: Some(5),
    };
    let (a, l) = ns.create(run, b"f0", O, Some(spec), S).unwrap();
    assert_eq!(l.stripes[0].ost, 5);
    assert!(ns
        .placement(a.ino)
        .unwrap()
        .reason
        .unwrap()
        .contains("its own layout"));
    assert_eq!(ns.iez_counters().fallback_explicit_layout, 1);
    assert_eq!(ns.path(a.ino).unwrap(), b"/run/f0");
    assert_eq!(ns.path(ROOT_INO).unwrap(), b"/");
    ns.unlink(run, b"f0", S).unwrap();
    assert_eq!(ns.placement(a.ino).unwrap_err().errno, Errno::ENOENT);
    let n: i64 = ns
        .db
        .query_row("SELECT COUNT(*) FROM placements", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
}

/// iez's "MDS busy" gate (§III-B2) on an injected reading: at 70 % CPU or 50 % memory a
/// create with a row falls back to round robin with its counted cause, a load stores its rows
/// unplanned, and the first create that finds the MDS idle again plans and places.
#[test]
fn a_busy_mds_falls_back_and_plans_once_idle() {
    use pfsqos_core::place::ServerLoad;
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    report_all(&mut ns, S);
    let busy_cpu = ServerLoad {
        cpu_util: 0.70,
        mem_util: 0.10,
    };
    ns.set_mds_load(Some(busy_cpu)).unwrap();
    // Loaded while busy: stored, not planned.
    assert_eq!(ns.iez_load("hacc", &workload(), S).unwrap(), (6, 0));
    let (a, l) = ns.create(run, b"f0", O, None, 2 * S).unwrap();
    assert_eq!(l.stripes.len(), 2, "created all the same");
    let info = ns.placement(a.ino).unwrap();
    assert_eq!(info.policy, "lustre");
    let reason = info.reason.unwrap();
    assert!(reason.contains("MDS busy (CPU 70.0 %"), "{reason}");
    // Memory at its limit is busy too.
    ns.set_mds_load(Some(ServerLoad {
        cpu_util: 0.0,
        mem_util: 0.5,
    }))
    .unwrap();
    ns.create(run, b"f1", O, None, 2 * S).unwrap();
    assert_eq!(ns.iez_counters().fallback_mds_busy, 2);
    assert_eq!(ns.iez_counters().fallbacks(), 2);
    assert!(ns
        .iez_predictions()
        .unwrap()
        .iter()
        .all(|r| r.planned.is_none()));
    // Below both limits: the next create plans the rows and is placed by iez.
    ns.set_mds_load(Some(ServerLoad {
        cpu_util: 0.69,
        mem_util: 0.49,
    }))
    .unwrap();
    let (a, _) = ns.create(run, b"f2", O, None, 2 * S).unwrap();
    assert_eq!(ns.placement(a.ino).unwrap().policy, "iez");
    // An unknown reading lifts the gate.
    ns.set_mds_load(None).unwrap();
    let (a, _) = ns.create(run, b"f3", O, None, 2 * S).unwrap();
    assert_eq!(ns.placement(a.ino).unwrap().policy, "iez");
    assert_eq!(ns.iez_counters().placed, 2);
    // Readings that are not fractions are refused and change nothing.
    for bad in [f64::NAN, -0.1, 1.5] {
        let e = ns.set_mds_load(Some(ServerLoad {
            cpu_util: bad,
            mem_util: 0.0,
        }));
        assert!(e.is_err(), "{bad}");
    }
    let (a, _) = ns.create(run, b"f4", O, None, 2 * S).unwrap();
    assert_eq!(ns.placement(a.ino).unwrap().policy, "iez");
}

/// iez's counters as the MDS's metrics endpoint renders them: placements, fallbacks by cause,
/// loads and their rows, rows held, reports, and the MDS's load once known.
#[test]
fn iez_counters_render_on_the_metrics_endpoint() {
    use pfsqos_core::place::ServerLoad;
    use pfsqos_metrics::{render_collector, MdsCollector, MdsSample};
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    let render = |ns: &Namespace| {
        render_collector(MdsCollector(MdsSample {
            iez: Some(ns.iez_metrics()),
            ..MdsSample::default()
        }))
    };
    let text = render(&ns);
    assert!(text.contains("pfsqos_mds_iez_placed_total 0\n"), "{text}");
    assert!(text.contains("pfsqos_mds_iez_rows 0\n"), "{text}");
    assert!(!text.contains("pfsqos_mds_load_util"), "unmeasured: {text}");
    // One load of six rows before any statistics: a create falls back for missing statistics.
    ns.iez_load("hacc", &workload(), S).unwrap();
    ns.create(run, b"f0", O, None, S).unwrap();
    // A refused report (an OSS the MDS does not serve), then all report: two placed.
    let mut stranger = report(0, [64 * MIB; 2]);
    stranger.oss = "elsewhere:1".into();
    assert!(ns.report_oss(stranger, S).is_err());
    report_all(&mut ns, S);
    ns.create(run, b"f1", O, None, S).unwrap();
    ns.create(run, b"f2", O, None, S).unwrap();
    // Busy: one fallback for it.
    ns.set_mds_load(Some(ServerLoad {
        cpu_util: 0.9,
        mem_util: 0.25,
    }))
    .unwrap();
    ns.create(run, b"f3", O, None, S).unwrap();
    let text = render(&ns);
    for line in [
        "pfsqos_mds_iez_placed_total 2\n",
        "pfsqos_mds_iez_fallbacks_total{cause=\"stats_missing\"} 1\n",
        "pfsqos_mds_iez_fallbacks_total{cause=\"mds_busy\"} 1\n",
        "pfsqos_mds_iez_fallbacks_total{cause=\"stats_stale\"} 0\n",
        "pfsqos_mds_iez_loads_total 1\n",
        "pfsqos_mds_iez_rows_loaded_total 6\n",
        "pfsqos_mds_iez_rows 6\n",
        "pfsqos_mds_iez_reports_total{result=\"accepted\"} 3\n",
        "pfsqos_mds_iez_reports_total{result=\"refused\"} 1\n",
        "pfsqos_mds_load_util{resource=\"cpu\"} 0.9\n",
        "pfsqos_mds_load_util{resource=\"memory\"} 0.25\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    // A refused load changes no counter.
    assert!(ns.iez_load("bad app!", &workload(), S).is_err());
    assert_eq!(ns.iez_counters().loads, 1);
}

/// The interaction database holds every application's rows: an application planned after
/// another keeps off the OSTs the other's rows not yet created have planned, and a created
/// row reserves nothing more (its bytes count as placed until the next report).
#[test]
fn other_applications_planned_rows_reserve_their_osts() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(&d.path().join("a.db"), config(3)).unwrap();
    let run = mkrun(&mut ns);
    report_all(&mut ns, S);
    let planned_osts = |ns: &Namespace, app: &str| -> Vec<u32> {
        let mut v: Vec<u32> = ns
            .iez_predictions()
            .unwrap()
            .iter()
            .filter(|r| r.app == app)
            .flat_map(|r| r.planned.clone().unwrap().osts)
            .collect();
        v.sort_unstable();
        v
    };
    // Two files of stripe count 2 fill four of the six OSTs; the other application's two
    // files of stripe count 1 go to the two left.
    let a: Vec<IezPrediction> = (0..2).map(|k| pred(&format!("/run/a{k}"), 8)).collect();
    assert_eq!(ns.iez_load("appa", &a, S).unwrap(), (2, 2));
    let a_osts = planned_osts(&ns, "appa");
    assert_eq!(a_osts.len(), 4);
    let b: Vec<IezPrediction> = (0..2)
        .map(|k| IezPrediction {
            stripe_count: 1,
            ..pred(&format!("/run/b{k}"), 4)
        })
        .collect();
    assert_eq!(ns.iez_load("appb", &b, S).unwrap(), (2, 2));
    let b_osts = planned_osts(&ns, "appb");
    assert!(
        b_osts.iter().all(|o| !a_osts.contains(o)),
        "appb {b_osts:?} avoids appa {a_osts:?}"
    );
    // Together they fill every OST with the same 4 MiB (appb alone could pick any two).
    let mut per_ost = [0u64; 6];
    for r in ns.iez_predictions().unwrap() {
        let p = r.planned.unwrap();
        for o in p.osts {
            per_ost[o as usize] += p.stripe_size_bytes;
        }
    }
    assert_eq!(per_ost, [4 * MIB; 6]);

    // appa's files are created (placed by iez): their rows reserve nothing more, and their
    // bytes count as placed until the next report. appb reloaded still avoids them.
    ns.create(run, b"a0", O, None, S).unwrap();
    ns.create(run, b"a1", O, None, S).unwrap();
    assert_eq!(ns.iez_counters().placed, 2);
    assert_eq!(
        iez::other_apps_reserved(&ns.db, "appb", 6).unwrap(),
        vec![0; 6],
        "created rows reserve nothing"
    );
    ns.iez_load("appb", &b, S).unwrap();
    let b_osts = planned_osts(&ns, "appb");
    assert!(b_osts.iter().all(|o| !a_osts.contains(o)), "{b_osts:?}");
    // A reload of appa makes its rows not created again: they reserve once more.
    ns.iez_load("appa", &a, S).unwrap();
    let reserved = iez::other_apps_reserved(&ns.db, "appb", 6).unwrap();
    assert_eq!(reserved.iter().filter(|&&r| r > 0).count(), 4);
    assert_eq!(reserved.iter().sum::<u64>(), 16 * MIB);
}

/// A version 2 database (no `created` column) opens: the column is added, rows not created.
#[test]
fn a_version_2_database_gets_the_created_column() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("a.db");
    {
        let mut ns = Namespace::open(&path, config(3)).unwrap();
        ns.iez_load("hacc", &workload(), S).unwrap();
    }
    {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "ALTER TABLE iez_predictions DROP COLUMN created; PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    let ns = Namespace::open(&path, config(3)).unwrap();
    assert_eq!(ns.iez_predictions().unwrap().len(), 6);
    let created: i64 = ns
        .db
        .query_row("SELECT SUM(created) FROM iez_predictions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(created, 0);
    let v: i64 = ns
        .db
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
}
