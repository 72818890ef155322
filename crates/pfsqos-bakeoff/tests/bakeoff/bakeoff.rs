//! The bakeoff end to end on the tiny test suite (`tests/suite/`): every design on every
//! workload, byte-identical outputs for the same seeds whatever the thread count, resuming,
//! skipped combinations with their reasons, and escaping of hostile names.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use pfsqos_bakeoff::output::{bakeoff_csv, bakeoff_json, write_outputs};
use pfsqos_bakeoff::runner::Outcome;
use pfsqos_bakeoff::{run_bakeoff, BakeoffOptions, BakeoffResult, Suite};

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite")
}

fn run(suite: &Suite, out: &Path, seeds: u32, threads: usize) -> BakeoffResult {
    let options = BakeoffOptions {
        out: out.to_path_buf(),
        designs: suite.designs.clone(),
        seeds,
        threads,
    };
    let calls = AtomicUsize::new(0);
    let result = run_bakeoff(suite, &options, &|u| {
        assert!(u.done <= u.total && u.executed <= u.done);
        calls.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(
        calls.load(Ordering::Relaxed),
        result.executed_runs + result.reused_runs,
        "one progress call per run"
    );
    write_outputs(out, &result, threads).unwrap();
    result
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn every_design_runs_on_every_workload_and_outputs_are_byte_identical() {
    let suite = Suite::load(&suite_dir()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");

    let ra = run(&suite, &a, 2, 1);
    // Every design ran on every workload and seed: nothing skipped, nothing silently dropped.
    assert_eq!(ra.outcomes.len(), suite.workloads.len());
    for (w, per_design) in ra.outcomes.iter().enumerate() {
        assert_eq!(per_design.len(), suite.designs.len());
        for (d, per_seed) in per_design.iter().enumerate() {
            assert_eq!(per_seed.len(), 2);
            for o in per_seed {
                assert!(
                    matches!(o, Outcome::Ran(_)),
                    "{} under {}: {o:?}",
                    suite.workloads[w].file,
                    suite.designs[d].name
                );
            }
        }
    }
    let json: serde_json::Value = serde_json::from_str(&read(&a.join("bakeoff.json"))).unwrap();
    assert_eq!(json["skipped"].as_array().unwrap().len(), 0);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), suite.workloads.len() * suite.designs.len() * 2);
    for r in runs {
        assert_eq!(r["status"], "ran");
        // Every job has a solo run and a slowdown.
        for j in r["jobs"].as_array().unwrap() {
            assert!(j["slowdown"].as_f64().unwrap() > 0.0, "{j}");
        }
        assert!(r["metrics"]["aggregate_mib_s"].as_f64().unwrap() > 0.0);
        assert!(r["metrics"]["ost_cost"].as_f64().is_some());
    }
    // The iez design placed with iez: its runs differ from the adaptbf ones somewhere, or at
    // least ran with the override (the run files record the design).
    assert!(a.join("runs/two-jobs/iez+adaptbf/seed-1.json").is_file());
    assert!(a.join("solo/two-jobs/job-1/seed-2.json").is_file());
    // One verdict list per workload, generated (non-empty).
    for v in json["verdicts"].as_array().unwrap() {
        assert!(!v["sentences"].as_array().unwrap().is_empty());
    }

    // The same suite and seeds on two threads into a fresh directory: the same bytes.
    run(&suite, &b, 2, 2);
    for f in ["bakeoff.json", "bakeoff.csv", "results.md"] {
        assert_eq!(read(&a.join(f)), read(&b.join(f)), "{f} differs");
    }
    let csv = read(&a.join("bakeoff.csv"));
    assert_eq!(csv.lines().count(), 1 + runs.len());
    assert!(csv.starts_with("workload,scenario,design,policy,placement,seed,status,"));
    let html = read(&a.join("report.html"));
    assert!(html.contains("<svg") && !html.contains("http://") && !html.contains("https://"));
    assert!(html.contains("docs/reproductions/pi-control.md"));
}

#[test]
fn a_resumed_bakeoff_redoes_only_missing_and_stale_runs() {
    let suite = Suite::load(&suite_dir()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let first = run(&suite, &out, 1, 2);
    assert_eq!(first.reused_runs, 0);
    let json = read(&out.join("bakeoff.json"));

    // Nothing changed: everything is reused.
    let again = run(&suite, &out, 1, 2);
    assert_eq!(again.executed_runs, 0);
    assert_eq!(read(&out.join("bakeoff.json")), json);

    // Two run files deleted, one solo file deleted, one run file with a stale key.
    std::fs::remove_file(out.join("runs/two-jobs/nobw/seed-1.json")).unwrap();
    std::fs::remove_file(out.join("runs/phases/gift/seed-1.json")).unwrap();
    std::fs::remove_file(out.join("solo/bursty/job-0/seed-1.json")).unwrap();
    let stale = out.join("runs/bursty/adaptbf/seed-1.json");
    let text = read(&stale);
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["key"] = serde_json::Value::String("0".repeat(64));
    std::fs::write(&stale, value.to_string()).unwrap();
    // A truncated file is redone too.
    let truncated = out.join("runs/phases/nobw/seed-1.json");
    let t = read(&truncated);
    std::fs::write(&truncated, &t[..t.len() / 2]).unwrap();

    let resumed = run(&suite, &out, 1, 2);
    assert_eq!(
        resumed.executed_runs, 5,
        "only the missing and stale runs ran"
    );
    assert_eq!(resumed.reused_runs, first.executed_runs - 5);
    assert_eq!(read(&out.join("bakeoff.json")), json);
}

const NO_CAPACITY: &str = r#"
name = "no-capacity"
description = "OSTs without a size: iez placement cannot run here."
[simulation]
duration_s = 1.0
[cluster]
clients = 1
[[oss]]
name = "oss0"
osts = 2
[[job]]
id = "<b>\"x,y\"</b>&"
nodes = 1
processes = [{ rw = "write", bs = "1M", size = "8M" }]
"#;

const APPSET: &str = r#"
name = "=cmd,\"day\""
description = "<script>alert(1)</script>"
[simulation]
duration_s = 600.0
bin_ms = 1000
engine = "fluid"
[cluster]
clients = 8
brw_size = "1M"
[[oss]]
name = "oss0"
osts = 4
ost_capacity = "1T"
[appset]
apps = 3
templates = 2
nodes = [1, 2]
processes_per_node = 1
osts_per_app = [1, 2]
phases = [1, 2]
compute_s = [1.0, 2.0]
phase_size = ["8M", "16M"]
arrival_scale_s = 5.0
"#;

const SUITE: &str = r#"
name = "inapplicable"
seeds = 1
workloads = ["no-capacity.toml", "day.toml"]
[[design]]
name = "nobw"
policy = "nobw"
[[design]]
name = "adaptbf"
policy = "adaptbf"
[[design]]
name = "iez"
policy = "nobw"
placement = "iez"
"#;

#[test]
fn inapplicable_combinations_are_listed_with_reasons_and_names_are_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("suite");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("suite.toml"), SUITE).unwrap();
    std::fs::write(dir.join("no-capacity.toml"), NO_CAPACITY).unwrap();
    std::fs::write(dir.join("day.toml"), APPSET).unwrap();
    let suite = Suite::load(&dir).unwrap();
    let out = tmp.path().join("out");
    let result = run(&suite, &out, 1, 2);

    let json: serde_json::Value = serde_json::from_str(&read(&out.join("bakeoff.json"))).unwrap();
    let skipped = json["skipped"].as_array().unwrap();
    let find = |w: &str, d: &str| {
        skipped
            .iter()
            .find(|k| k["workload"] == w && k["design"] == d)
            .unwrap_or_else(|| panic!("{w}/{d} not in the skipped list: {skipped:?}"))
    };
    // iez needs OST sizes: refused by scenario validation, with the reason.
    let k = find("no-capacity", "iez");
    assert!(
        k["reason"].as_str().unwrap().contains("ost_capacity"),
        "{k}"
    );
    // The fluid engine runs bandwidth allocators only: AdapTBF is refused on the appset day.
    let k = find("day", "adaptbf");
    assert!(!k["reason"].as_str().unwrap().is_empty());
    assert_eq!(k["seeds"], serde_json::json!([1]));
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    // The same in the rows: skipped, with the reason.
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    assert_eq!(runs.iter().filter(|r| r["status"] == "skipped").count(), 2);

    // The appset's generated jobs each ran alone: one solo run per generated application.
    let solo: Vec<&serde_json::Value> = json["solo"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["workload"] == "day")
        .collect();
    assert_eq!(solo.len(), 3);
    match &result.outcomes[1][0][0] {
        Outcome::Ran(r) => {
            let ids: Vec<&str> = r.jobs.iter().map(|j| j.job_id.as_str()).collect();
            let solo_ids: Vec<&str> = solo.iter().map(|s| s["job_id"].as_str().unwrap()).collect();
            assert_eq!(ids, solo_ids);
        }
        o => panic!("nobw on the day: {o:?}"),
    }
    let nobw_day = runs
        .iter()
        .find(|r| r["workload"] == "day" && r["design"] == "nobw")
        .unwrap();
    assert!(nobw_day["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|j| j["slowdown"].as_f64().is_some()));

    // Hostile names: escaped in HTML, quoted in CSV, escaped in markdown.
    let html = read(&out.join("report.html"));
    assert!(!html.contains("<script>") && html.contains("&lt;script&gt;"));
    assert!(!html.contains("<b>\"x") && html.contains("&lt;b&gt;&quot;x,y&quot;&lt;/b&gt;&amp;"));
    let csv = read(&out.join("bakeoff.csv"));
    assert!(csv.contains(",\"'=cmd,\"\"day\"\"\",nobw,"), "{csv}");
    for line in csv.lines() {
        // Every row has the header's number of fields once quotes are respected.
        let mut fields = 1;
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => fields += 1,
                _ => {}
            }
        }
        assert_eq!(
            fields,
            csv.lines().next().unwrap().split(',').count(),
            "{line}"
        );
    }
    let md = read(&out.join("results.md"));
    assert!(!md.contains("<script>"));
    // Outputs are pure functions of the results.
    let report = pfsqos_bakeoff::output::build_report(&result);
    assert_eq!(bakeoff_json(&report), read(&out.join("bakeoff.json")));
    assert_eq!(bakeoff_csv(&report), csv);
}

/// The decision-timing hook (module `decide_timing`) changes no result: every run of the test
/// suite gives the same `RunRecord` bytes (what `bakeoff.json` and `bakeoff.csv` are assembled
/// from, in plan order) with the timed wrapper as without it, and the wrapper counts the
/// controller's decisions.
#[test]
fn the_decision_timing_hook_leaves_the_results_unchanged() {
    use pfsqos_bakeoff::decide_timing::{histogram_of, DecideLog, TimedController};
    use pfsqos_bakeoff::metrics::RunRecord;
    use pfsqos_bakeoff::runner::{scenario_for_design, seeded};

    let suite = Suite::load(&suite_dir()).unwrap();
    let mut adaptive_decisions = 0;
    for w in &suite.workloads {
        for d in &suite.designs {
            let s = scenario_for_design(&seeded(&w.scenario, 2), d).unwrap();
            let plain = pfsqos_sim::run(&s, &d.policy, 2, &mut |_, _| {}).unwrap();
            let log = DecideLog::default();
            let mut wrap = |c: Box<dyn pfsqos_core::control::Controller>| {
                TimedController::wrap(c, log.clone())
            };
            let timed =
                pfsqos_sim::run_wrapped(&s, &d.policy, 2, &mut wrap, &mut |_, _| {}).unwrap();
            let bytes = |r| serde_json::to_string(&RunRecord::from_run(r)).unwrap();
            assert_eq!(bytes(&plain), bytes(&timed), "{} under {}", w.file, d.name);
            let count = histogram_of(&log).count();
            // nobw never decides; AdapTBF decides every 100 ms; GIFT every 10 s, which these
            // short workloads may not reach.
            if d.policy == "nobw" {
                assert_eq!(count, 0, "nobw never decides");
            } else if d.policy == "adaptbf" {
                assert!(count > 0, "{} under {}: no decision timed", w.file, d.name);
            }
            adaptive_decisions += count;
        }
    }
    assert!(adaptive_decisions > 0);
}

/// Weighted Jain's index and share deviation compare what jobs moved while all of them were
/// active. Jobs that never overlap have no such window; over the whole run the two would
/// compare the bytes the workload fixes (the same under every design that finishes it), so the
/// record leaves them out instead of ranking designs on them.
#[test]
fn weighted_fairness_is_left_out_when_jobs_never_run_together() {
    use pfsqos_bakeoff::metrics::RunRecord;
    let two = std::fs::read_to_string(suite_dir().join("two-jobs.toml")).unwrap();
    let record = |text: &str| {
        let s = pfsqos_sim::Scenario::from_toml_str(text, "two-jobs.toml").unwrap();
        RunRecord::from_run(&pfsqos_sim::run(&s, "nobw", 1, &mut |_, _| {}).unwrap())
    };
    let together = record(&two);
    assert!(together.weighted_jain.is_some() && together.share_deviation.is_some());
    // The same jobs one after the other: `small` starts when `big` has long finished.
    let apart = two.replace("duration_s = 2.0", "duration_s = 8.0").replace(
        "numjobs = 2, iodepth = 2 }",
        "numjobs = 2, iodepth = 2, shape = { start_s = 6.0 } }",
    );
    let apart = record(&apart);
    assert!(apart.jobs.iter().all(|j| j.finished), "both jobs finish");
    assert_eq!((apart.weighted_jain, apart.share_deviation), (None, None));
}
