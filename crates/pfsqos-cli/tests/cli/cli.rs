//! Runs the built `pfsqos` binary the way a user does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VALID: &str = r#"
name = "tiny"
description = "Two jobs on one OST"
[simulation]
duration_s = 2.0
[[oss]]
name = "oss0"
osts = 1
[[job]]
id = "alpha"
nodes = 1
[[job.processes]]
rw = "write"
bs = "1M"
size = "16M"
[[job]]
id = "beta"
nodes = 3
[[job.processes]]
rw = "write"
bs = "1M"
size = "16M"
"#;

fn pfsqos(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write_scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn assert_bad_input(out: &Output) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
}

#[test]
fn missing_scenario_file_exits_2_naming_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-scenario.toml");
    let missing = missing.to_str().unwrap();
    for cmd in ["sim", "compare"] {
        let out = pfsqos(&[cmd, missing], tmp.path());
        assert_bad_input(&out);
        assert!(stderr(&out).contains(missing), "{cmd}: {}", stderr(&out));
    }
}

#[test]
fn invalid_scenario_exits_2_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let no_duration = VALID.replace("duration_s = 2.0", "");
    let path = write_scenario(tmp.path(), "no-duration.toml", &no_duration);
    let out = pfsqos(&["sim", path.to_str().unwrap()], tmp.path());
    assert_bad_input(&out);
    let err = stderr(&out);
    assert!(err.contains("duration_s"), "{err}");
    assert!(err.contains("no-duration.toml"), "{err}");

    let typo = VALID.replace("[[oss]]", "bogus_field = 3\n[[oss]]");
    let path = write_scenario(tmp.path(), "typo.toml", &typo);
    let out = pfsqos(&["compare", path.to_str().unwrap()], tmp.path());
    assert_bad_input(&out);
    assert!(stderr(&out).contains("bogus_field"), "{}", stderr(&out));
}

#[test]
fn unknown_policy_exits_2_listing_allowed_policies() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_scenario(tmp.path(), "tiny.toml", VALID);
    let path = path.to_str().unwrap();
    let runs = [
        pfsqos(&["sim", path, "--policy", "warpdrive"], tmp.path()),
        pfsqos(
            &["compare", path, "--policies", "nobw,warpdrive"],
            tmp.path(),
        ),
    ];
    for out in &runs {
        assert_bad_input(out);
        let err = stderr(out);
        assert!(err.contains("warpdrive"), "{err}");
        for allowed in pfsqos_sim::POLICY_NAMES {
            assert!(err.contains(allowed), "{err}");
        }
    }
    // Nothing ran, so nothing was written.
    assert!(!tmp.path().join("out").exists());
    // A near miss gets a suggestion; a stranger none.
    let out = pfsqos(&["sim", path, "--policy", "adaptfb"], tmp.path());
    assert_bad_input(&out);
    assert!(
        stderr(&out).contains("did you mean `adaptbf`?"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&runs[0]).contains("did you mean"),
        "{}",
        stderr(&runs[0])
    );
}

#[test]
fn every_subcommand_help_has_an_example_and_cites_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let top = pfsqos(&["--help"], tmp.path());
    let text = String::from_utf8_lossy(&top.stdout).into_owned();
    assert!(!text.contains(".txt"), "{text}");
    let commands: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 15, "{commands:?}");
    for c in &commands {
        let out = pfsqos(&[c, "--help"], tmp.path());
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains("Examples:\n  "),
            "`pfsqos {c} --help` has no example:\n{help}"
        );
        assert!(
            !help.contains(".txt"),
            "`pfsqos {c} --help` cites a file:\n{help}"
        );
    }
}

#[test]
fn bakeoff_outside_a_clone_runs_the_built_in_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pfsqos(
        &[
            "bakeoff",
            "--designs",
            "nobw,adaptbf",
            "--seeds",
            "1",
            "--out",
            "b",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("suite: the built-in copy of scenarios/bakeoff"),
        "{text}"
    );
    assert!(tmp.path().join("b/report.html").is_file());
}

#[test]
fn sim_on_a_sized_system_prints_ostcost() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/iez/testbed.toml");
    let out = pfsqos(
        &["sim", scenario.to_str().unwrap(), "--out", "o"],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(", OSTCost 1."), "{text}");
}

#[test]
fn unknown_policy_in_the_scenario_exits_2_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "{VALID}\n[policy]\ndefault = \"warpdrive\"\ncompare = [\"nobw\", \"hyperdrive\"]\n"
    );
    let path = write_scenario(tmp.path(), "p.toml", &text);
    let path = path.to_str().unwrap();
    let out = pfsqos(&["sim", path], tmp.path());
    assert_bad_input(&out);
    assert!(stderr(&out).contains("policy.default"), "{}", stderr(&out));
    // Scenario validation reports the first bad field, so check `compare` on its own.
    let text = format!("{VALID}\n[policy]\ncompare = [\"nobw\", \"hyperdrive\"]\n");
    let path = write_scenario(tmp.path(), "c.toml", &text);
    let out = pfsqos(&["compare", path.to_str().unwrap()], tmp.path());
    assert_bad_input(&out);
    assert!(
        stderr(&out).contains("policy.compare[1]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn duplicate_policies_and_bad_arguments_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_scenario(tmp.path(), "tiny.toml", VALID);
    let path = path.to_str().unwrap();
    assert_bad_input(&pfsqos(
        &["compare", path, "--policies", "nobw,nobw"],
        tmp.path(),
    ));
    assert_bad_input(&pfsqos(&["sim", path, "--seed", "minus-one"], tmp.path()));
    assert_bad_input(&pfsqos(&["frobnicate"], tmp.path()));
    assert_bad_input(&pfsqos(&[], tmp.path()));
}

#[test]
fn sim_writes_the_three_files() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_scenario(tmp.path(), "tiny.toml", VALID);
    let out = pfsqos(
        &["sim", path.to_str().unwrap(), "--policy", "static"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = tmp.path().join("out/tiny-static");
    for f in ["timeseries.csv", "summary.json", "report.html"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    assert!(csv.starts_with("time_s,job_id,ost,bytes,throughput_mib_s\n"));
    assert!(csv.contains(",alpha,all,") && csv.contains(",beta,all,"));
}

#[test]
fn sim_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_scenario(tmp.path(), "tiny.toml", VALID);
    let path = path.to_str().unwrap();
    for d in ["a", "b"] {
        let out = pfsqos(&["sim", path, "--seed", "9", "--out", d], tmp.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    for f in ["timeseries.csv", "summary.json", "report.html"] {
        let a = std::fs::read(tmp.path().join("a").join(f)).unwrap();
        let b = std::fs::read(tmp.path().join("b").join(f)).unwrap();
        assert!(a == b, "{f} differs between identical runs");
    }
}

#[test]
fn compare_writes_one_chart_per_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_scenario(tmp.path(), "tiny.toml", VALID);
    let policies = pfsqos_sim::POLICY_NAMES.join(",");
    let out = pfsqos(
        &["compare", path.to_str().unwrap(), "--policies", &policies],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = tmp.path().join("out/tiny");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for p in pfsqos_sim::POLICY_NAMES {
        assert!(
            html.contains(&format!("Throughput per OST over time: {p}")),
            "{p}"
        );
        assert!(dir.join(p).join("timeseries.csv").is_file());
        assert!(dir.join(p).join("summary.json").is_file());
    }
    // One small-multiples chart of throughput over time (a panel per policy, one y axis) and
    // one heat map per policy (controllers that report a trace add controller-state charts on
    // top), plus the per-job and aggregate bar charts and the two CDFs.
    assert_eq!(
        html.matches("aria-label=\"Throughput over time by policy")
            .count(),
        1
    );
    assert_eq!(
        html.matches("aria-label=\"Throughput per OST over time: ")
            .count(),
        pfsqos_sim::POLICY_NAMES.len()
    );
    assert!(html.matches("<svg").count() >= pfsqos_sim::POLICY_NAMES.len() + 5);
    assert!(dir.join("summary.json").is_file());
}

/// `VALID` with each job starting late by up to 0.5 s (drawn with the seed), so that seeds are
/// replications with a spread.
fn jittered() -> String {
    VALID.replace(
        "duration_s = 2.0\n",
        "duration_s = 2.0\nstart_jitter_s = 0.5\n",
    )
}

/// Every seed's aggregate throughput of `policy`, from the seed's own `summary.json`.
fn per_seed_aggregate(dir: &Path, seeds: u64, policy: &str) -> Vec<f64> {
    (1..=seeds)
        .map(|s| {
            let text = std::fs::read_to_string(dir.join(format!("seed-{s}/{policy}/summary.json")))
                .unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["seed"].as_u64(), Some(s), "the seed's own run");
            v["aggregate_throughput_mib_s"].as_f64().unwrap()
        })
        .collect()
}

#[test]
fn compare_over_seeds_shows_students_t_intervals_and_names_a_winner_only_outside_them() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_scenario(tmp.path(), "tiny.toml", &jittered());
    let path = path.to_str().unwrap();
    let policies = ["nobw", "static"];
    let args = |out: &str| {
        [
            "compare",
            path,
            "--policies",
            "nobw,static",
            "--seeds",
            "3",
            "--out",
            out,
        ]
        .map(str::to_string)
    };
    let run = |out: &str| {
        let a = args(out);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = pfsqos(&a, tmp.path());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let stdout = run("a");
    let dir = tmp.path().join("a");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["seeds"], serde_json::json!([1, 2, 3]));
    let agg = summary["rankings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "aggregate_mib_s")
        .unwrap();
    // The interval by hand from the three seeds' own summaries: Student's t with 2 degrees
    // of freedom (4.303) times the sample standard deviation over sqrt(3).
    let mut intervals = Vec::new();
    for (p, policy) in policies.iter().enumerate() {
        let v = per_seed_aggregate(&dir, 3, policy);
        assert!(
            v.iter().any(|x| *x != v[0]),
            "the start jitter makes the seeds differ: {v:?}"
        );
        let mean = v.iter().sum::<f64>() / 3.0;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        let half = 4.303 * sd / 3f64.sqrt();
        let stats = &agg["rows"][p]["stats"];
        assert_eq!(agg["rows"][p]["design"], *policy);
        assert!((stats["mean"].as_f64().unwrap() - mean).abs() <= 1e-9 * mean);
        assert!(
            (stats["ci95_half"].as_f64().unwrap() - half).abs() <= 1e-9 * mean,
            "{policy}: {stats} against {half}"
        );
        assert_eq!(stats["seeds"].as_u64(), Some(3));
        intervals.push((mean, half));
    }
    // The verdict follows the intervals: a tie when they overlap (or the means are within
    // 0.5 %), a winner otherwise.
    let ((m0, h0), (m1, h1)) = (intervals[0], intervals[1]);
    let tie = (m0 - m1).abs() <= 0.005 * m0.max(m1) || (m0 - h0 <= m1 + h1 && m1 - h1 <= m0 + h0);
    let verdict = summary["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .find(|v| v.starts_with("tiny, aggregate throughput:"))
        .unwrap();
    assert_eq!(verdict.contains("tie"), tie, "{verdict}: {intervals:?}");
    assert_eq!(verdict.contains(" is best "), !tie, "{verdict}");
    assert!(stdout.contains(verdict), "{stdout}");
    assert!(stdout.contains(" ± "), "{stdout}");
    // Each seed's comparison is a full one; the top report links them and shows the intervals.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for s in 1..=3 {
        assert!(dir.join(format!("seed-{s}/report.html")).is_file());
        assert!(html.contains(&format!("href=\"seed-{s}/report.html\"")));
    }
    assert!(html.contains("95 % confidence"), "{html}");
    // Same scenario and seeds: the same bytes.
    // The printed results too, but for the lines naming the output directory.
    let results = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("wrote ") && !l.starts_with("report: "))
            .map(str::to_string)
            .collect()
    };
    let again = run("b");
    assert_eq!(
        results(&stdout),
        results(&again),
        "the printed results differ between identical runs"
    );
    for f in [
        "summary.json",
        "report.html",
        "seed-2/summary.json",
        "seed-2/static/timeseries.csv",
    ] {
        let x = std::fs::read(tmp.path().join("a").join(f)).unwrap();
        let y = std::fs::read(tmp.path().join("b").join(f)).unwrap();
        assert!(x == y, "{f} differs between identical runs");
    }
    // --seed and --seeds together, or a count out of range, is bad input.
    assert_bad_input(&pfsqos(
        &["compare", path, "--seed", "2", "--seeds", "3"],
        tmp.path(),
    ));
    assert_bad_input(&pfsqos(&["compare", path, "--seeds", "0"], tmp.path()));
}

#[test]
fn compare_directories_have_no_colon() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_scenario(tmp.path(), "tiny.toml", VALID);
    let out = pfsqos(
        &[
            "compare",
            path.to_str().unwrap(),
            "--policies",
            "adaptbf:period_ms=200,nobw",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = tmp.path().join("out/tiny");
    for d in ["adaptbf+period_ms-200", "nobw"] {
        assert!(dir.join(d).join("summary.json").is_file(), "{d}");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("{adaptbf+period_ms-200,nobw}"));
    let sim = pfsqos(
        &[
            "sim",
            path.to_str().unwrap(),
            "--policy",
            "adaptbf:period_ms=200",
        ],
        tmp.path(),
    );
    assert_eq!(sim.status.code(), Some(0), "{}", stderr(&sim));
    assert!(tmp
        .path()
        .join("out/tiny-adaptbf+period_ms-200/report.html")
        .is_file());
}

#[test]
fn demo_writes_the_report_where_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("demo-out");
    // From a directory with no scenarios/ in it: the suite is built in.
    let out = pfsqos(&["demo", "--out", out_dir.to_str().unwrap()], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for f in [
        "report.html",
        "bakeoff.json",
        "bakeoff.csv",
        "results.md",
        "timing.json",
    ] {
        assert!(out_dir.join(f).is_file(), "{f}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("report.html"), "{stdout}");
    assert!(stdout.contains("scripts/reproduce-gift.sh"), "{stdout}");
}

fn bakeoff_suite_dir() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pfsqos-bakeoff/tests/suite")
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn bakeoff_runs_selected_designs_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("b");
    let args = [
        "bakeoff",
        &bakeoff_suite_dir(),
        "--designs",
        "nobw,gift",
        "--seeds",
        "1",
        "--jobs",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let out = pfsqos(&args, tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json = std::fs::read_to_string(out_dir.join("bakeoff.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["designs"].as_array().unwrap().len(), 2);
    // Run again: everything reused, the same bytes.
    let again = pfsqos(&args, tmp.path());
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 runs executed"));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("bakeoff.json")).unwrap(),
        json
    );
}

#[test]
fn bakeoff_refuses_unknown_designs_and_bad_suites() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pfsqos(
        &["bakeoff", &bakeoff_suite_dir(), "--designs", "nobw,warp"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("warp") && err.contains("nobw, adaptbf, gift, iez+adaptbf"),
        "{err}"
    );
    let out = pfsqos(&["bakeoff", tmp.path().to_str().unwrap()], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("suite.toml"), "{}", stderr(&out));
    assert!(!tmp.path().join("bakeoff-out").exists());
}

/// `pfsqos pi identify` runs the open-loop staircase on the scenario, fits eq. 1 and prints
/// the model, the gains and a `pi` spec that parses; a spec of another policy is bad input.
#[test]
fn pi_identify_fits_the_model_and_prints_a_runnable_spec() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/pi/listing1.toml"),
    )
    .unwrap()
    .replace("duration_s = 1500.0", "duration_s = 130.0");
    let path = write_scenario(tmp.path(), "pi.toml", &text);
    let path = path.to_str().unwrap();
    let out = pfsqos(
        &[
            "pi",
            "identify",
            path,
            "--experiment",
            "pi-openloop:from=23M:to=30M:levels=8:hold=15",
        ],
        tmp.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", stderr(&out));
    assert!(stdout.contains("model (eq. 1"), "{stdout}");
    let spec = stdout
        .lines()
        .find_map(|l| l.strip_prefix("run it: "))
        .expect("a spec line");
    pfsqos_core::control::spec::PolicyChoice::parse(spec).expect("the printed spec parses");
    assert_bad_input(&pfsqos(
        &["pi", "identify", path, "--experiment", "pi:target=80"],
        tmp.path(),
    ));
}

/// `pfsqos iez plan` turns a first-run trace into one `lfs setstripe` per file: Method II's
/// stripe size (Table II's 100,532,224 bytes for its 803,405,824-byte files), distinct OSTs,
/// and every file name one single-quoted shell word, whatever it holds.
#[test]
fn iez_plan_prints_setstripe_commands_with_quoted_names() {
    let tmp = tempfile::tempdir().unwrap();
    let mut trace = String::from("file,bytes_written,stripe_count,rank\n");
    for r in 0..8 {
        trace.push_str(&format!("/scratch/hacc/part{r},803405824,8,{r}\n"));
    }
    trace.push_str("/scratch/it's $(touch pwned) `x`.dat,1000000,2,8\n-dash,1000000,1,9\n");
    let path = write_scenario(tmp.path(), "trace.csv", &trace);
    let path = path.to_str().unwrap();
    let args = [
        "iez",
        "plan",
        path,
        "--osses",
        "3",
        "--osts-per-oss",
        "5",
        "--ost-capacity",
        "10G",
    ];
    let out = pfsqos(&args, tmp.path());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", stderr(&out));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("lfs ")).collect();
    assert_eq!(lines.len(), 10, "{stdout}");
    for l in &lines[..8] {
        assert!(l.starts_with("lfs setstripe -S 100532224 -c 8 -o "), "{l}");
        let osts: std::collections::BTreeSet<&str> =
            l.split(' ').nth(7).unwrap().split(',').collect();
        assert_eq!(osts.len(), 8, "{l}");
    }
    assert!(
        lines[8].ends_with(r#" '/scratch/it'\''s $(touch pwned) `x`.dat'"#),
        "{}",
        lines[8]
    );
    assert!(lines[9].ends_with(" './-dash'"), "{}", lines[9]);
    // The quoted word is one argument to a shell, and nothing in it runs.
    let sh = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '%s' {}",
            lines[8]
                .split_once(" -o ")
                .unwrap()
                .1
                .split_once(' ')
                .unwrap()
                .1
        ))
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&sh.stdout),
        "/scratch/it's $(touch pwned) `x`.dat"
    );
    assert!(!tmp.path().join("pwned").exists());
    let bad = write_scenario(tmp.path(), "bad.csv", "a,1,0,0\n");
    assert_bad_input(&pfsqos(
        &[
            "iez",
            "plan",
            bad.to_str().unwrap(),
            "--osses",
            "1",
            "--osts-per-oss",
            "1",
            "--ost-capacity",
            "1G",
        ],
        tmp.path(),
    ));
}

/// The reports in a real browser: headless Chromium (Debian's chromium-headless-shell, or
/// chromium) renders the demo's and a comparison's report.html with a checking script added
/// to a copy of the page, and prints the DOM with the script's findings.
mod browser {
    use super::*;

    /// Added before `</body>` of a copy of the page: opens every folded section, then checks
    /// the page and writes its findings, as JSON, into `<pre id="pfsqos-check">`.
    const CHECK_SCRIPT: &str = r#"<script>
var pfsqosErrors = [];
window.addEventListener('error', function (e) { pfsqosErrors.push(String(e.message || e)); }, true);
var origError = console.error;
console.error = function () { pfsqosErrors.push(Array.prototype.join.call(arguments, ' ')); };
window.addEventListener('load', function () {
  var out = {};
  var summary = document.querySelector('#summary');
  var first = summary && (summary.querySelector('table.matrix, ul.verdicts') || summary);
  if (first) {
    var r = first.getBoundingClientRect();
    out.summaryTop = r.top; out.summaryBottom = r.bottom;
  }
  out.screenHeight = window.innerHeight;
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var charts = document.querySelectorAll('svg.chart');
  out.charts = charts.length;
  out.emptyCharts = [];
  charts.forEach(function (svg, i) {
    var marks = 0;
    svg.querySelectorAll('polyline').forEach(function (p) {
      var b = p.getBBox();
      if (p.points.length >= 2 && (b.width > 0 || b.height > 0)) marks++;
    });
    // A bar (it has a tooltip) or a heat-map cell; not the background, not a legend swatch.
    svg.querySelectorAll('rect').forEach(function (r, k) {
      var b = r.getBBox();
      var swatch = b.width === 12 && b.height === 12 && !r.querySelector('title');
      if (k > 0 && b.width > 0 && b.height > 0 && !swatch && r.getAttribute('fill') !== '#FFFFFF') marks++;
    });
    if (marks === 0) out.emptyCharts.push(i + ': ' + (svg.getAttribute('aria-label') || ''));
  });
  out.overflows = [];
  document.querySelectorAll('td, th, h1, h2, h3, p, li, figcaption, dd, summary').forEach(function (el) {
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible'
        && getComputedStyle(el).display !== 'inline') {
      out.overflows.push(el.tagName + ': ' + el.textContent.slice(0, 60));
    }
  });
  charts.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1
          || b.bottom > box.bottom + 1) {
        out.overflows.push('svg text: ' + t.textContent.slice(0, 60));
      }
    });
  });
  out.pageOverflow = document.documentElement.scrollWidth > window.innerWidth + 1;
  out.fetched = performance.getEntriesByType('resource').map(function (e) { return e.name; });
  out.errors = pfsqosErrors;
  var pre = document.createElement('pre');
  pre.id = 'pfsqos-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"#;

    fn chromium() -> Option<&'static str> {
        ["chromium-headless-shell", "chromium"]
            .into_iter()
            .find(|b| {
                Command::new(b)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success())
            })
    }

    /// The checking script's findings on `page`, as the JSON text it wrote.
    fn check(browser: &str, page: &Path, tmp: &Path) -> serde_json::Value {
        let html = std::fs::read_to_string(page).unwrap();
        assert!(html.contains("</body>"), "{}", page.display());
        let copy = tmp.join(format!(
            "checked-{}.html",
            page.parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
        ));
        std::fs::write(
            &copy,
            html.replacen("</body>", &format!("{CHECK_SCRIPT}</body>"), 1),
        )
        .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let out = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1280,900",
                "--virtual-time-budget=10000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("--dump-dom")
            .arg(format!("file://{}", copy.display()))
            .output()
            .expect("chromium runs");
        let dom = String::from_utf8_lossy(&out.stdout);
        let start = dom
            .find("<pre id=\"pfsqos-check\">")
            .unwrap_or_else(|| panic!("no findings in the DOM; stderr: {}", stderr(&out)))
            + "<pre id=\"pfsqos-check\">".len();
        let end = start + dom[start..].find("</pre>").expect("the findings end");
        let json = dom[start..end]
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
    }

    fn assert_page_is_sound(name: &str, v: &serde_json::Value) {
        let num = |k: &str| {
            v[k].as_f64()
                .unwrap_or_else(|| panic!("{name}: no {k}: {v}"))
        };
        assert!(
            num("summaryBottom") <= num("screenHeight") && num("summaryTop") >= 0.0,
            "{name}: the summary is not on the first screen: {v}"
        );
        assert!(num("charts") >= 1.0, "{name}: no chart: {v}");
        assert_eq!(
            v["emptyCharts"],
            serde_json::json!([]),
            "{name}: charts without marks"
        );
        assert_eq!(
            v["overflows"],
            serde_json::json!([]),
            "{name}: text overflows its box"
        );
        assert_eq!(
            v["pageOverflow"],
            serde_json::json!(false),
            "{name}: the page scrolls sideways"
        );
        assert_eq!(v["errors"], serde_json::json!([]), "{name}: console errors");
        assert_eq!(
            v["fetched"],
            serde_json::json!([]),
            "{name}: the page fetched something"
        );
    }

    #[test]
    fn the_demo_and_a_comparison_render_in_headless_chromium() {
        let Some(browser) = chromium() else {
            pfsqos_testkit::skip(
                "the_demo_and_a_comparison_render_in_headless_chromium",
                "neither chromium-headless-shell nor chromium is installed (scripts/setup.sh \
                 installs chromium-headless-shell as root)",
            );
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let out = pfsqos(&["demo", "--out", "demo"], tmp.path());
        assert!(out.status.success(), "{}", stderr(&out));
        let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/bakeoff/priorities-finishing.toml");
        let out = pfsqos(
            &[
                "compare",
                scenario.to_str().unwrap(),
                "--policies",
                "nobw,adaptbf,vpfs,pi",
                "--out",
                "cmp",
            ],
            tmp.path(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        // PI control: its trace is per OST (queue, target, limit), not per job.
        let pi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/pi/listing1.toml");
        let out = pfsqos(
            &[
                "sim",
                pi.to_str().unwrap(),
                "--policy",
                "pi:a=0.94:b=3.0:bw_max=64M:sensor=instant:target=80",
                "--out",
                "pi",
            ],
            tmp.path(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        for (name, page) in [
            ("demo", "demo/report.html"),
            ("compare", "cmp/report.html"),
            ("pi", "pi/report.html"),
        ] {
            let v = check(browser, &tmp.path().join(page), tmp.path());
            assert_page_is_sound(name, &v);
        }
    }
}

/// `pfsqos trace import` on the Darshan reader's committed test logs.
mod trace_import {
    use super::*;

    fn log(name: &str) -> String {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pfsqos-darshan/tests/data")
            .join(name)
            .display()
            .to_string()
    }

    #[test]
    fn converts_what_it_can_lists_the_refused_and_summarizes() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("imported.toml");
        let junk = dir.path().join("junk.darshan");
        std::fs::write(&junk, b"not a darshan log at all").unwrap();
        let res = pfsqos(
            &[
                "trace",
                "import",
                &log("bursts-3.41.darshan"),
                &log("noposix.darshan"),
                junk.to_str().unwrap(),
                &log("sample-goodost.darshan"),
                "--out",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        let err = stderr(&res);
        assert_eq!(res.status.code(), Some(0), "{err}");
        assert!(
            err.contains("refused") && err.contains("noposix.darshan") && err.contains("no POSIX"),
            "{err}"
        );
        assert!(
            err.contains("junk.darshan") && err.contains("version"),
            "{err}"
        );
        assert!(
            err.contains(&format!(
                "wrote {}: 2 jobs from 4 logs (2 refused); 7.5 MiB read, 48.1 GiB written; \
                 longest run 5.0 s\n",
                out.display()
            )),
            "{err}"
        );
        assert!(err.contains("timeline from HEATMAP"), "{err}");
        assert!(
            err.contains("/tmp/run/checkpoint.dat: 0 B read, 48.0 MiB written"),
            "{err}"
        );
        let toml = std::fs::read_to_string(&out).unwrap();
        pfsqos_sim::Scenario::from_toml_str(&toml, "imported").unwrap();
        assert!(toml.contains("kind = \"bursts\""));
    }

    #[test]
    fn strict_fails_on_any_refused_log_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("imported.toml");
        let res = pfsqos(
            &[
                "trace",
                "import",
                "--strict",
                &log("bursts-3.41.darshan"),
                &log("noposixopens.darshan"),
                "--out",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        assert_bad_input(&res);
        let err = stderr(&res);
        assert!(
            err.contains("noposixopens.darshan") && err.contains("--strict"),
            "{err}"
        );
        assert!(!out.exists());
        // Without --strict the good log is converted.
        let res = pfsqos(
            &[
                "trace",
                "import",
                &log("bursts-3.41.darshan"),
                &log("noposixopens.darshan"),
                "--out",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        assert_eq!(res.status.code(), Some(0), "{}", stderr(&res));
        assert!(out.exists());
    }

    #[test]
    fn no_convertible_log_exits_2_with_every_reason() {
        let dir = tempfile::tempdir().unwrap();
        let res = pfsqos(
            &[
                "trace",
                "import",
                &log("noposix.darshan"),
                "missing.darshan",
            ],
            dir.path(),
        );
        assert_bad_input(&res);
        let err = stderr(&res);
        assert!(
            err.contains("missing.darshan") && err.contains("cannot open"),
            "{err}"
        );
        assert!(err.contains("no log could be converted"), "{err}");
        assert!(res.stdout.is_empty());
    }
}
