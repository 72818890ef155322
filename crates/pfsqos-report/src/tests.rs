use pfsqos_core::control::{ControlWrite, DomainId, TraceSample};
use pfsqos_core::model::{JobId, OstId};
use pfsqos_core::run::{
    ControlLogEntry, ControlTraceEntry, EngineStats, JobOutput, JobSeries, RunOutput,
};

use super::*;

const MIB: u64 = 1 << 20;
const S: u64 = 1_000_000_000;

fn job(
    id: &str,
    nodes: u32,
    first: Option<u64>,
    last: Option<u64>,
    bins: Vec<Vec<u64>>,
) -> JobOutput {
    let total: u64 = bins.iter().flatten().sum();
    JobOutput {
        job_id: id.to_string(),
        node_count: nodes,
        weight: nodes,
        bytes_read: 0,
        bytes_written: total,
        rpcs: total / MIB,
        first_io_ns: first,
        last_io_ns: last,
        finished: true,
        bytes_per_ost_bin: JobSeries::from_dense(
            bins.iter().map(Vec::len).max().unwrap_or(0),
            bins,
        ),
        phases: None,
    }
}

fn run(policy: &str, bin_ns: u64, end_ns: u64, jobs: Vec<JobOutput>) -> RunOutput {
    RunOutput {
        scenario_name: "tiny".to_string(),
        policy: policy.to_string(),
        seed: 7,
        bin_ns,
        end_ns,
        osts: vec!["OST0000".to_string(), "OST0001".to_string()],
        jobs,
        control_log: Vec::new(),
        control_trace: Vec::new(),
        control_trace_truncated: false,
        engine: EngineStats {
            events: 1234,
            rpcs: 56,
            client_writes: 0,
            ..EngineStats::default()
        },
        regret: None,
        allocation: None,
        sync: Vec::new(),
        ost_space: Vec::new(),
    }
}

/// Job A (1 node) writes 100 MiB/s over 0-4 s; job B (3 nodes) 150 MiB/s over 1-3 s.
fn two_jobs(policy: &str) -> RunOutput {
    run(
        policy,
        S,
        4 * S,
        vec![
            job("A", 1, Some(0), Some(4 * S), vec![vec![100 * MIB; 4]]),
            job(
                "B",
                3,
                Some(S),
                Some(3 * S),
                vec![vec![0, 150 * MIB, 150 * MIB, 0]],
            ),
        ],
    )
}

/// Charts of a page without a controller trace: two bar charts, the throughput CDF (and the
/// slowdown CDF for a comparison), the throughput small multiples, a heat map per run.
fn charts(runs: usize) -> usize {
    if runs == 1 {
        5
    } else {
        5 + runs
    }
}

fn scenario() -> ScenarioText<'static> {
    ScenarioText {
        name: "tiny",
        description: "Two jobs <sharing> one OST & more",
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12 * b.abs().max(1.0)
}

#[test]
fn csv_exact_content() {
    let r = run(
        "nobw",
        S / 10,
        3 * S / 10,
        vec![
            job(
                "a",
                1,
                Some(0),
                Some(2 * S / 10),
                vec![vec![MIB, 0, 0], vec![0, 2 * MIB, 0]],
            ),
            // Shorter vectors and an id that needs CSV quoting.
            job(
                "b,x",
                3,
                Some(0),
                Some(3 * S / 10),
                vec![vec![0, 0, MIB / 2]],
            ),
        ],
    );
    let expected = "\
time_s,job_id,ost,bytes,throughput_mib_s
0,a,OST0000,1048576,10.000
0,a,all,1048576,10.000
0,\"b,x\",all,0,0.000
0.1,a,OST0001,2097152,20.000
0.1,a,all,2097152,20.000
0.1,\"b,x\",all,0,0.000
0.2,a,all,0,0.000
0.2,\"b,x\",OST0000,524288,5.000
0.2,\"b,x\",all,524288,5.000
";
    assert_eq!(timeseries_csv(&r), expected);
}

#[test]
fn csv_totals_extend_to_the_end_of_the_run() {
    let mut r = run(
        "nobw",
        S,
        3 * S + 1,
        vec![job("a", 1, Some(0), Some(S), vec![vec![MIB]])],
    );
    let csv = timeseries_csv(&r);
    let totals: Vec<&str> = csv.lines().filter(|l| l.contains(",all,")).collect();
    assert_eq!(
        totals,
        [
            "0,a,all,1048576,1.000",
            "1,a,all,0,0.000",
            "2,a,all,0,0.000",
            "3,a,all,0,0.000"
        ]
    );
    // A nonsense end time cannot blow the file up.
    r.end_ns = u64::MAX;
    r.bin_ns = 1;
    assert_eq!(bin_count(&r), BINS_MAX);
}

#[test]
fn seconds_are_exact() {
    assert_eq!(fmt_seconds(0), "0");
    assert_eq!(fmt_seconds(100_000_000), "0.1");
    assert_eq!(fmt_seconds(12_000_000_001), "12.000000001");
    assert_eq!(fmt_seconds(3 * S), "3");
}

#[test]
fn summary_numbers_hand_computed() {
    let s = summarize(&two_jobs("static"));
    assert_eq!(s.policy, "static");
    assert_eq!(s.seed, 7);
    assert_eq!(s.sim_time_s, 4.0);
    let a = &s.jobs[0];
    let b = &s.jobs[1];
    assert_eq!((a.bytes, b.bytes), (400 * MIB, 300 * MIB));
    assert_eq!((a.io_time_s, b.io_time_s), (4.0, 2.0));
    assert_eq!((a.throughput_mib_s, b.throughput_mib_s), (100.0, 150.0));
    assert_eq!((a.nodes, b.nodes), (1, 3));
    // 700 MiB over 0-4 s.
    assert_eq!(s.aggregate_throughput_mib_s, 175.0);
    // (100+150)^2 / (2 * (100^2 + 150^2)) = 62500 / 65000
    assert!(close(s.jain_index, 62_500.0 / 65_000.0), "{}", s.jain_index);
    // Both active in bins 1 and 2: A 200 MiB, B 300 MiB.
    assert_eq!(s.fairness_window.basis, WindowBasis::AllJobsActive);
    assert_eq!(
        (s.fairness_window.start_s, s.fairness_window.end_s),
        (1.0, 3.0)
    );
    assert_eq!((a.window_bytes, b.window_bytes), (200 * MIB, 300 * MIB));
    // Per node: A 200, B 100 -> 300^2 / (2 * (200^2 + 100^2)) = 0.9
    assert!(
        close(s.weighted_jain_index, 0.9),
        "{}",
        s.weighted_jain_index
    );
    // Shares 0.4 / 0.6 against node shares 0.25 / 0.75.
    assert!(close(s.share_deviation, 0.3), "{}", s.share_deviation);
    assert_eq!(
        s.engine,
        EngineSummary {
            events: 1234,
            rpcs: 56,
            time_spent: None,
        }
    );
}

#[test]
fn weights_and_unfairness_windows_hand_computed() {
    // 1 s bins; two jobs over 10 s, 1 MiB per bin each on one OST (equal throughput), weights
    // 1:3 (not the node counts, 2:2). Each 5 s window holds both: |1/2 - 1/4| + |1/2 - 3/4| =
    // 0.5, twice. No 60 s window fits in 10 s.
    let flat = vec![vec![MIB; 10], vec![0; 10]];
    let mut a = job("a", 2, Some(0), Some(10 * S), flat.clone());
    let mut b = job("b", 2, Some(0), Some(10 * S), flat);
    a.weight = 1;
    b.weight = 3;
    let s = summarize(&run("x", S, 10 * S, vec![a, b]));
    assert_eq!((s.jobs[0].weight, s.jobs[1].weight), (1, 3));
    assert!(close(s.share_deviation, 0.5), "{}", s.share_deviation);
    assert_eq!(s.unfairness_5s.windows, 2);
    assert!(close(s.unfairness_5s.window_s, 5.0));
    assert!(close(s.unfairness_5s.mean.unwrap(), 0.5));
    assert!(close(s.unfairness_5s.max.unwrap(), 0.5));
    assert_eq!(s.unfairness_60s.windows, 0);
    assert_eq!(s.unfairness_60s.mean, None);
    let json = summary_json(&run("x", S, 10 * S, vec![]));
    assert!(json.contains("\"unfairness_5s\""), "{json}");
}

#[test]
fn sync_traffic_is_listed_per_oss_with_rates_only_when_there_is_some() {
    let mut r = two_jobs("dsfq");
    r.sync = vec![
        pfsqos_core::run::SyncOutput {
            oss: "oss0".to_string(),
            counters: pfsqos_core::sched::SyncCounters {
                broadcasts_out: 10,
                bytes_out: 400,
                messages_in: 20,
                bytes_in: 800,
                ..Default::default()
            },
        },
        pfsqos_core::run::SyncOutput {
            oss: "oss1".to_string(),
            ..Default::default()
        },
    ];
    let s = summarize(&r);
    assert_eq!(s.sync.len(), 2);
    assert_eq!(
        (s.sync[0].oss.as_str(), s.sync[0].counters.messages_in),
        ("oss0", 20)
    );
    // The run lasts 4 s.
    assert!(close(s.sync[0].messages_in_per_s, 5.0));
    assert!(close(s.sync[0].bytes_in_per_s, 200.0));
    assert!(summary_json(&r).contains("\"messages_in_per_s\""));
    r.sync[0] = pfsqos_core::run::SyncOutput {
        oss: "oss0".to_string(),
        ..Default::default()
    };
    assert!(summarize(&r).sync.is_empty());
    assert!(!summary_json(&r).contains("\"sync\""));
}

#[test]
fn fairness_window_rounds_inwards_to_whole_bins() {
    let mut r = two_jobs("nobw");
    r.jobs[1].first_io_ns = Some(S / 2);
    r.jobs[1].last_io_ns = Some(3 * S + S / 5);
    let s = summarize(&r);
    assert_eq!(
        (s.fairness_window.start_s, s.fairness_window.end_s),
        (1.0, 3.0)
    );
}

#[test]
fn fairness_falls_back_to_whole_run_when_jobs_never_overlap() {
    let r = run(
        "nobw",
        S,
        3 * S,
        vec![
            job("A", 1, Some(0), Some(S), vec![vec![100 * MIB, 0, 0]]),
            job(
                "B",
                1,
                Some(2 * S),
                Some(3 * S),
                vec![vec![0, 0, 300 * MIB]],
            ),
        ],
    );
    let s = summarize(&r);
    assert_eq!(s.fairness_window.basis, WindowBasis::WholeRun);
    assert_eq!(
        (s.jobs[0].window_bytes, s.jobs[1].window_bytes),
        (100 * MIB, 300 * MIB)
    );
    // Equal weights, shares 0.25 / 0.75.
    assert!(close(s.share_deviation, 0.5));
    // Aggregate over first issue (0) to last completion (3 s).
    assert!(close(s.aggregate_throughput_mib_s, 400.0 / 3.0));
}

#[test]
fn job_without_io_gives_zeros_not_nan() {
    let r = run(
        "nobw",
        S,
        S,
        vec![
            job("idle", 2, None, None, vec![]),
            job("A", 1, Some(0), Some(S), vec![vec![MIB]]),
        ],
    );
    let s = summarize(&r);
    assert_eq!(s.jobs[0].throughput_mib_s, 0.0);
    assert_eq!(s.jobs[0].io_time_s, 0.0);
    assert_eq!(s.fairness_window.basis, WindowBasis::WholeRun);
    let json = summary_json(&r);
    assert!(!json.contains("NaN") && !json.contains("null,\n  \"jain"));
    let s = summarize(&run("nobw", S, 0, vec![]));
    assert_eq!(
        (
            s.jain_index,
            s.share_deviation,
            s.aggregate_throughput_mib_s
        ),
        (1.0, 0.0, 0.0)
    );
}

#[test]
fn control_writes_are_counted_and_rejections_listed() {
    let mut r = two_jobs("static");
    r.control_log = vec![
        ControlLogEntry {
            time_ns: 0,
            domain: DomainId(0),
            write: ControlWrite::NrsPolicies("tbf jobid".to_string()),
            result: Ok(()),
        },
        ControlLogEntry {
            time_ns: S / 2,
            domain: DomainId(1),
            write: ControlWrite::tbf_rule("start r rate=0"),
            result: Err("rate must be positive".to_string()),
        },
    ];
    let s = summarize(&r);
    assert_eq!((s.control_writes, s.rejected_control_writes), (2, 1));
    assert_eq!(
        s.rejected,
        [RejectedWrite {
            time_s: 0.5,
            domain: 1,
            write: "nrs_tbf_rule=start r rate=0".to_string(),
            error: "rate must be positive".to_string(),
        }]
    );
    let html = report_html(&[r], &scenario());
    assert!(html.contains("nrs_tbf_rule=start r rate=0"));
    assert!(html.contains("rate must be positive"));
}

#[test]
fn summary_json_has_stable_key_order() {
    let json = summary_json(&two_jobs("nobw"));
    let keys = [
        "\"scenario\"",
        "\"policy\"",
        "\"seed\"",
        "\"sim_time_s\"",
        "\"jobs\"",
        "\"job_id\"",
        "\"nodes\"",
        "\"throughput_mib_s\"",
        "\"io_time_s\"",
        "\"finished\"",
        "\"aggregate_throughput_mib_s\"",
        "\"jain_index\"",
        "\"weighted_jain_index\"",
        "\"share_deviation\"",
        "\"fairness_window\"",
        "\"unfairness_5s\"",
        "\"unfairness_60s\"",
        "\"engine\"",
        "\"control_writes\"",
        "\"rejected_control_writes\"",
    ];
    let mut at = 0;
    for key in keys {
        let pos = json[at..]
            .find(key)
            .unwrap_or_else(|| panic!("{key} after {at}"));
        at += pos;
    }
    assert!(json.contains("\"basis\": \"all-jobs-active\""));
}

fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for banned in [
        "http://", "https://", "<script", "<link", "@import", "url(", "src=",
    ] {
        assert!(!lower.contains(banned), "report contains {banned}");
    }
}

#[test]
fn html_is_self_contained_with_one_chart_per_policy_plus_two() {
    let runs = [two_jobs("nobw"), two_jobs("static"), two_jobs("adaptbf")];
    let html = report_html(&runs, &scenario());
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), charts(runs.len()));
    assert_eq!(html.matches("</svg>").count(), charts(runs.len()));
    for id in ["A", "B"] {
        assert!(html.contains(&format!(">{id}<")), "job {id} missing");
    }
    for p in ["nobw", "static", "adaptbf"] {
        assert!(html.contains(&format!("Throughput per OST over time: {p}")));
    }
    assert!(html.contains("Two jobs &lt;sharing&gt; one OST &amp; more"));
    assert!(html.contains("<dt>Seed</dt><dd>7</dd>"));
    assert!(html.contains("No control write was rejected."));
}

#[test]
fn html_escapes_job_ids() {
    let mut r = two_jobs("nobw");
    r.jobs[0].job_id = "<b>evil</b>".to_string();
    let html = report_html(&[r], &scenario());
    assert!(!html.contains("<b>evil"));
    assert!(html.contains("&lt;b&gt;evil&lt;/b&gt;"));
}

#[test]
fn long_runs_are_drawn_with_bounded_points() {
    let bins = 10 * POINTS_PER_LINE_MAX + 3;
    let r = run(
        "nobw",
        S / 10,
        bins as u64 * S / 10,
        vec![job(
            "A",
            1,
            Some(0),
            Some(bins as u64 * S / 10),
            vec![vec![MIB; bins]],
        )],
    );
    let html = report_html(&[r], &scenario());
    let line = chart(&html, "Throughput over time")
        .split("<polyline")
        .nth(1)
        .expect("one line");
    let points = line
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert!(points.split(' ').count() <= POINTS_PER_LINE_MAX);
    assert!(html.contains("11 bins of 100 ms merged per point"));
}

#[test]
fn outputs_are_deterministic() {
    let runs = [two_jobs("nobw"), two_jobs("static")];
    let sc = scenario();
    assert_eq!(report_html(&runs, &sc), report_html(&runs.clone(), &sc));
    assert_eq!(
        comparison_json(&runs, &sc),
        comparison_json(&runs.clone(), &sc)
    );
    assert_eq!(timeseries_csv(&runs[0]), timeseries_csv(&runs[0].clone()));
}

#[test]
fn write_comparison_layout_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario();
    let runs = [two_jobs("nobw"), two_jobs("static")];
    write_comparison(dir.path(), &runs, &sc).unwrap();
    for p in ["nobw", "static"] {
        for f in ["timeseries.csv", "summary.json"] {
            assert!(dir.path().join(p).join(f).is_file(), "{p}/{f}");
        }
    }
    let all = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    assert_eq!(all, comparison_json(&runs, &sc));
    assert!(dir.path().join("report.html").is_file());

    let dup = [two_jobs("nobw"), two_jobs("nobw")];
    assert!(matches!(
        write_comparison(dir.path(), &dup, &sc),
        Err(ReportError::Invalid(_))
    ));
    // Names that are not safe directory names are mapped, never refused or used raw.
    let other = tempfile::tempdir().unwrap();
    let odd = [
        two_jobs("../x"),
        two_jobs("adaptbf:period_ms=100"),
        two_jobs("adaptbf+period_ms-100"),
        two_jobs("ADAPTBF:period_ms=100"),
    ];
    let dirs = write_comparison(other.path(), &odd, &sc).unwrap();
    assert_eq!(
        dirs,
        [
            "_x",
            "adaptbf+period_ms-100",
            "adaptbf+period_ms-100-2",
            "ADAPTBF+period_ms-100-3"
        ]
    );
    for d in &dirs {
        assert!(other.path().join(d).join("summary.json").is_file(), "{d}");
    }
    let json = std::fs::read_to_string(other.path().join("summary.json")).unwrap();
    assert!(json.contains("\"adaptbf+period_ms-100-2\""), "{json}");
    let mut names: Vec<String> = std::fs::read_dir(other.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert!(names.iter().all(|n| !n.contains(':')), "{names:?}");
    assert!(matches!(
        write_comparison(dir.path(), &[], &sc),
        Err(ReportError::Invalid(_))
    ));
}

#[test]
fn write_run_layout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested/run");
    let r = two_jobs("nobw");
    write_run(&out, &r, &scenario()).unwrap();
    assert_eq!(
        std::fs::read_to_string(out.join("timeseries.csv")).unwrap(),
        timeseries_csv(&r)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        summary_json(&r)
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), charts(1));
}

fn sample(
    time_ns: u64,
    ost: u32,
    job: &str,
    metric: &'static str,
    value: f64,
) -> ControlTraceEntry {
    ControlTraceEntry {
        time_ns,
        sample: TraceSample {
            ost: OstId(ost),
            job: JobId::new(job).expect("test job id"),
            metric,
            value,
        },
    }
}

/// [`two_jobs`] with an AdapTBF-like trace: steps at 1 s and 2 s; B is reported only at 2 s.
fn traced(policy: &str) -> RunOutput {
    let mut r = two_jobs(policy);
    r.control_trace = vec![
        sample(S, 0, "A", "demand_rpcs", 10.0),
        sample(S, 0, "A", "tokens", 12.0),
        sample(S, 0, "A", "record_tokens", 0.0),
        sample(S, 1, "A", "demand_rpcs", 5.0),
        sample(S, 1, "A", "tokens", 6.0),
        sample(S, 1, "A", "record_tokens", 3.0),
        sample(2 * S, 0, "A", "demand_rpcs", 2.0),
        sample(2 * S, 0, "A", "tokens", 4.0),
        sample(2 * S, 0, "A", "record_tokens", 8.0),
        sample(2 * S, 0, "B", "demand_rpcs", 30.0),
        sample(2 * S, 0, "B", "tokens", 20.0),
        sample(2 * S, 0, "B", "record_tokens", -8.0),
    ];
    r
}

#[test]
fn trace_csv_exact_content() {
    let mut r = two_jobs("adaptbf");
    r.control_trace = vec![
        sample(S / 10, 0, "A", "demand_rpcs", 12.0),
        sample(S / 10, 1, "b,x", "record_tokens", -3.5),
        // An OST the run does not name, and a fraction that must survive the round trip.
        sample(12 * S + 1, 17, "A", "tokens", 0.1),
        sample(12 * S + 1, 0, "A", "gift \"coupons\"", 1e-7),
    ];
    let expected = "\
time_s,ost,job_id,metric,value
0.1,OST0000,A,demand_rpcs,12
0.1,OST0001,\"b,x\",record_tokens,-3.5
12.000000001,OST0011,A,tokens,0.1
12.000000001,OST0000,A,\"gift \"\"coupons\"\"\",0.0000001
";
    assert_eq!(control_trace_csv(&r), expected);
    assert_eq!(control_trace_csv(&two_jobs("nobw")), "");
}

#[test]
fn summary_counts_trace_and_notes_truncation() {
    let mut r = traced("adaptbf");
    let s = summarize(&r);
    assert_eq!(
        (s.control_trace_entries, s.control_trace_truncated),
        (12, false)
    );
    r.control_trace_truncated = true;
    let json = summary_json(&r);
    assert!(json.contains("\"control_trace_entries\": 12,"));
    assert!(json.contains("\"control_trace_truncated\": true,"));
    let html = report_html(&[r], &scenario());
    assert!(html.contains("kept only the first 12 trace samples"));
}

/// The `<svg>…</svg>` of the chart whose title contains `title`.
fn chart<'a>(html: &'a str, title: &str) -> &'a str {
    let at = html
        .find(&format!("aria-label=\"{title}"))
        .unwrap_or_else(|| panic!("no chart {title}"));
    let start = html[..at].rfind("<svg").unwrap();
    let end = at + html[at..].find("</svg>").unwrap();
    &html[start..end]
}

#[test]
fn trace_charts_only_for_runs_with_a_trace() {
    let sc = scenario();
    let plain = report_html(&[two_jobs("nobw"), two_jobs("static")], &sc);
    assert!(!plain.contains("Controller state over time"));
    assert_eq!(plain.matches("<svg").count(), charts(2));

    let html = report_html(&[two_jobs("nobw"), traced("adaptbf")], &sc);
    assert_self_contained(&html);
    assert_eq!(html.matches("Controller state over time").count(), 1);
    // The charts of any comparison, one chart per metric of the traced run.
    assert_eq!(html.matches("<svg").count(), charts(2) + 3);
    assert!(!html.contains("Demand (RPCs per period): nobw"));
    // Ordered by first appearance in the trace, titled from the known names.
    let titles = [
        "Demand (RPCs per period): adaptbf",
        "Tokens allocated per period: adaptbf",
        "Record (tokens lent +, borrowed −): adaptbf",
    ];
    let positions: Vec<usize> = titles
        .iter()
        .map(|t| html.find(&format!("aria-label=\"{t}\"")).expect(t))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert!(html.find("Throughput per OST over time: adaptbf").unwrap() < positions[0]);

    // Only the record goes negative: it alone has a zero line.
    assert_eq!(html.matches("class=\"zero\"").count(), 1);
    assert!(chart(&html, titles[2]).contains("class=\"zero\""));
    // Job colours are the throughput charts' (A first, B second).
    let demand = chart(&html, titles[0]);
    let a = demand.find(job_color_for_test(0)).expect("A's colour");
    let b = demand.find(job_color_for_test(1)).expect("B's colour");
    assert!(a < b);
    // B is reported in one step only: a dot, not a line. A has a two-point line.
    assert_eq!(demand.matches("<polyline").count(), 1);
    assert_eq!(demand.matches("<circle").count(), 1);
    assert!(!html.contains("NaN"));
}

fn job_color_for_test(i: usize) -> &'static str {
    crate::svg::job_color(i)
}

#[test]
fn unknown_metrics_get_charts_titled_by_their_name() {
    let mut r = two_jobs("gift");
    r.control_trace = vec![
        sample(S, 0, "A", "coupons", 1.0),
        sample(2 * S, 0, "A", "coupons", 2.0),
        sample(2 * S, 0, "B", "pi_error", -0.5),
    ];
    let html = report_html(&[r], &scenario());
    assert!(html.contains("aria-label=\"coupons: gift\""));
    assert!(html.contains("aria-label=\"pi_error: gift\""));
    assert!(html.find("coupons: gift").unwrap() < html.find("pi_error: gift").unwrap());
    assert_eq!(html.matches("<svg").count(), charts(1) + 2);
}

#[test]
fn too_many_metrics_are_listed_not_charted() {
    const NAMES: [&str; TRACE_METRICS_MAX + 2] = [
        "m00", "m01", "m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11", "m12",
        "m13", "m14", "m15", "m16", "m17",
    ];
    let mut r = two_jobs("many");
    r.control_trace = NAMES.iter().map(|&m| sample(S, 0, "A", m, 1.0)).collect();
    let html = report_html(&[r.clone()], &scenario());
    assert_eq!(html.matches("<svg").count(), charts(1) + TRACE_METRICS_MAX);
    assert!(html.contains("2 more metric(s) not charted"));
    assert_eq!(control_trace_csv(&r).lines().count(), 1 + NAMES.len());
}

#[test]
fn long_traces_are_drawn_with_bounded_points() {
    let steps = 3 * POINTS_PER_LINE_MAX + 1;
    let mut r = two_jobs("adaptbf");
    r.control_trace = (0..steps as u64)
        .map(|i| sample(i * S / 10, 0, "A", "tokens", 1.0))
        .collect();
    let html = report_html(&[r], &scenario());
    let svg = chart(&html, "Tokens allocated per period");
    let points = svg
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_eq!(points.split(' ').count(), steps.div_ceil(4));
    assert!(html.contains("4 control steps merged per point"));
}

#[test]
fn trace_outputs_are_deterministic() {
    let runs = [two_jobs("nobw"), traced("adaptbf")];
    let sc = scenario();
    assert_eq!(report_html(&runs, &sc), report_html(&runs.clone(), &sc));
    assert_eq!(
        control_trace_csv(&runs[1]),
        control_trace_csv(&runs[1].clone())
    );
}

#[test]
fn trace_csv_is_written_only_for_traced_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario();
    let runs = [two_jobs("nobw"), traced("adaptbf")];
    write_comparison(dir.path(), &runs, &sc).unwrap();
    assert!(!dir.path().join("nobw/control_trace.csv").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("adaptbf/control_trace.csv")).unwrap(),
        control_trace_csv(&runs[1])
    );

    let one = dir.path().join("one");
    write_run(&one, &runs[1], &sc).unwrap();
    assert!(one.join("control_trace.csv").is_file());
    // Rewriting the directory for a run without a trace must not leave the old trace behind.
    write_run(&one, &runs[0], &sc).unwrap();
    assert!(!one.join("control_trace.csv").exists());
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn arb_job() -> impl Strategy<Value = JobOutput> {
        (
            1u32..64,
            prop::collection::vec(prop::collection::vec(0u64..(64 * MIB), 0..12), 0..3),
            prop::option::of((0u64..20, 0u64..20)),
        )
            .prop_map(|(nodes, bins, span)| {
                let (first, last) = match span {
                    Some((a, b)) => (Some(a.min(b) * S / 10), Some(a.max(b) * S / 10)),
                    None => (None, None),
                };
                job("j", nodes, first, last, bins)
            })
    }

    proptest! {
        #[test]
        fn outputs_are_consistent_for_any_run(
            jobs in prop::collection::vec(arb_job(), 0..5),
            end_bins in 0u64..15,
        ) {
            let mut jobs = jobs;
            for (i, j) in jobs.iter_mut().enumerate() {
                j.job_id = format!("job{i}");
            }
            let r = run("nobw", S / 10, end_bins * S / 10, jobs);

            // The `all` rows of a job add up to everything it moved.
            let csv = timeseries_csv(&r);
            for j in &r.jobs {
                let prefix = format!(",{},all,", j.job_id);
                let total: u64 = csv
                    .lines()
                    .filter(|l| l.contains(&prefix))
                    .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
                    .sum();
                prop_assert_eq!(total, j.bytes());
            }

            let s = summarize(&r);
            for v in [s.aggregate_throughput_mib_s, s.jain_index, s.weighted_jain_index, s.share_deviation] {
                prop_assert!(v.is_finite());
            }
            prop_assert!(s.jain_index > 0.0 && s.jain_index <= 1.0 + 1e-12);
            prop_assert!(s.weighted_jain_index > 0.0 && s.weighted_jain_index <= 1.0 + 1e-12);
            prop_assert!((0.0..=2.0 + 1e-12).contains(&s.share_deviation));
            for j in &s.jobs {
                prop_assert!(j.window_bytes <= j.bytes);
                prop_assert!(j.throughput_mib_s.is_finite());
            }

            let html = report_html(&[r.clone(), r], &scenario());
            prop_assert_eq!(html.matches("<svg").count(), charts(2));
            prop_assert!(!html.contains("NaN") && !html.contains("inf"));
        }
    }
}

#[test]
fn phase_metrics_appear_only_for_phased_runs() {
    let plain = summary_json(&two_jobs("nobw"));
    assert!(!plain.contains("phases"), "{plain}");
    assert!(!plain.contains("effective_system_mib_s"), "{plain}");
    let mut r = two_jobs("bsip");
    // One phase of 200 MiB from 1 s to 3 s; the job started at 0.5 s.
    r.jobs[0].phases = Some(pfsqos_core::run::JobPhases {
        start_ns: S / 2,
        done: vec![pfsqos_core::run::PhaseRecord {
            start_ns: S,
            end_ns: 3 * S,
            bytes: 200 * MIB,
        }],
    });
    let s = summary::summarize(&r);
    assert_eq!(s.mean_app_io_time_s, Some(2.0));
    assert_eq!(s.effective_system_mib_s, Some(100.0));
    let p = s.jobs[0].phases.as_ref().unwrap();
    assert_eq!((p.phases_done, p.io_time_s, p.run_time_s), (1, 2.0, 2.5));
    assert!(s.jobs[1].phases.is_none());
    let json = summary_json(&r);
    assert!(json.contains("\"mean_app_io_time_s\": 2.0"), "{json}");
    assert!(json.contains("\"phases_done\": 1"), "{json}");
    assert!(!json.contains("effective_bandwidth_allocated"), "{json}");
    // A GIFT-family run carries the artifact's allocation metric: 3 decisions, one idle, the
    // other two allocating 0.75 of the system each: 0.5 over all, 0.75 for GIFT's asymmetry.
    let mut g = r.clone();
    g.allocation = Some(pfsqos_core::control::gift::AllocationStats {
        decisions: 3,
        decisions_allocating: 2,
        allocated_fraction_sum: 1.5,
        skips_idle_in_artifact: true,
    });
    let s = summary::summarize(&g);
    assert!((s.effective_bandwidth_allocated.unwrap() - 0.5).abs() < 1e-12);
    assert!((s.effective_bandwidth_allocated_artifact.unwrap() - 0.75).abs() < 1e-12);
    let json = summary_json(&g);
    assert!(
        json.contains("\"effective_bandwidth_allocated\": 0.5"),
        "{json}"
    );
    let html = report_html(&[g], &scenario());
    assert!(html.contains("<td class=\"num\">75.00</td>"), "{html}");

    let plain_html = report_html(&[two_jobs("nobw")], &scenario());
    assert!(!plain_html.contains("Synchronous I/O phases"));
    let html = report_html(&[r, two_jobs("nobw")], &scenario());
    assert!(html.contains("Synchronous I/O phases"), "{html}");
    // bsip's row carries the mean I/O time; the plain run shows a dash.
    assert!(
        html.contains("<td class=\"num\">2.00 s</td><td class=\"num\">100.0</td>"),
        "{html}"
    );
    assert!(
        html.contains(
            "<td class=\"num\">1</td><td class=\"num\">2.00 s</td><td class=\"num\">2.50 s</td>"
        ),
        "{html}"
    );
}

/// 500 applications over 26 days on 16 OSTs (a generated application set's size): every chart
/// stays bounded, times are in days, policies share axes, and the page says what happened.
fn at_scale(policy: &str, slow: u64) -> RunOutput {
    let bin_ns = 3600 * S;
    let bins = 625; // 26 days of hourly bins
    let jobs = (0..500u64)
        .map(|i| {
            let first = (i % 200) as usize;
            let len = 5 + (i % 17) as usize * slow as usize;
            let mut per_ost = vec![vec![0u64; bins]; 16];
            let active = first..(first + len).min(bins);
            per_ost[(i % 16) as usize][active].fill((1 + i % 7) * MIB * 100);
            let last = (first + len).min(bins) as u64;
            job(
                &format!("app{i:03}"),
                1 + (i % 8) as u32,
                Some(first as u64 * bin_ns),
                Some(last * bin_ns),
                per_ost,
            )
        })
        .collect();
    let mut r = run(policy, bin_ns, bins as u64 * bin_ns, jobs);
    r.osts = (0..16).map(|i| format!("OST{i:04x}")).collect();
    r
}

#[test]
fn reports_at_500_applications_stay_bounded() {
    let runs = [at_scale("nobw", 1), at_scale("adaptbf", 2)];
    let html = report_html(&runs, &scenario());
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), charts(2));

    // Bars: the drawn jobs plus one aggregate group, one bar per policy each.
    let bars = chart(&html, "Per-job throughput by policy");
    assert_eq!(
        bars.matches("<rect x=").count() - bars.matches("width=\"12\" height=\"12\"").count(),
        (JOBS_DRAWN_MAX + 1) * runs.len()
    );
    assert!(bars.contains("488 other jobs (mean)"));

    // Lines over time: drawn jobs plus the sum of the others, per policy panel.
    let lines = chart(&html, "Throughput over time by policy");
    assert_eq!(
        lines.matches("<polyline").count(),
        (JOBS_DRAWN_MAX + 1) * runs.len()
    );
    assert!(lines.contains("Time (d)") && lines.contains("488 other jobs (sum)"));
    // One y axis: the tick labels of the first panel column appear once per row of panels.
    assert!(!html.contains("2250000") && !html.contains("2,250,000"));
    assert!(html.contains("adaptbf: 26.0 d"), "header times in days");
    assert!(html.contains(" h</td>"), "job I/O times in hours");

    // CDFs: one step line per policy, with every job in them.
    for title in [
        "Per-job throughput (CDF)",
        "Per-job slowdown against the best",
    ] {
        assert_eq!(chart(&html, title).matches("<polyline").count(), runs.len());
    }
    // Heat maps: 16 OST rows of at most HEATMAP_COLUMNS_MAX cells.
    let heat = chart(&html, "Throughput per OST over time: nobw");
    assert!(heat.matches("<rect x=").count() <= 16 * HEATMAP_COLUMNS_MAX);
    assert!(heat.contains(">OST000f<") && heat.contains("Time (d)"));

    // Tables: bounded rows, the rest pointed to.
    assert!(html.matches("<tr><td class=\"name\">app").count() <= JOB_ROWS_MAX);
    assert!(html.contains("all 500 are in summary.json"));
    assert!(html.contains("500 jobs in all"));

    // The generated summary names the policies by what they did.
    assert!(html.contains("<h2>What happened</h2>"));
    assert!(html.contains("Highest aggregate throughput: "));
    assert!(html.contains("Median per-job slowdown against the best compared policy"));
    assert!(html.contains("nobw 1.00x"));
    let summaries: Vec<RunSummary> = runs.iter().map(summarize).collect();
    let slow = relative_slowdowns(&summaries);
    assert!(slow[0].iter().flatten().all(|&x| x == 1.0));
    assert!(
        slow[1].iter().flatten().any(|&x| x > 1.0),
        "adaptbf's jobs take longer"
    );
    assert!(!html.contains("NaN"));
    assert_eq!(html, report_html(&runs.clone(), &scenario()));
}

#[test]
fn many_osts_merge_into_bounded_heat_map_rows() {
    let mut r = two_jobs("nobw");
    r.osts = (0..200).map(|i| format!("OST{i:04x}")).collect();
    let html = report_html(&[r], &scenario());
    let heat = chart(&html, "Throughput per OST over time");
    let rows = 200usize.div_ceil(200usize.div_ceil(HEATMAP_ROWS_MAX));
    assert_eq!(heat.matches("<rect x=").count(), rows * 4);
    assert!(
        heat.contains("OST0000–OST0004"),
        "merged rows are labelled by range"
    );
}

#[test]
fn live_reports_have_no_simulator_fields() {
    let r = two_jobs("live");
    let html = report_html_described(std::slice::from_ref(&r), "recorded by pfsqos stat");
    assert!(!html.contains("<dt>Seed</dt>") && !html.contains("<th>Events</th>"));
    assert!(html.contains("<dt>Recorded time</dt>"));
    let sim = report_html(&[r], &scenario());
    assert!(sim.contains("<dt>Seed</dt><dd>7</dd>") && sim.contains("<th>Events</th>"));
    assert!(sim.contains("<dt>Simulated time</dt>"));
}

#[test]
fn sweep_legends_keep_the_differing_part() {
    let runs = [
        two_jobs("adaptbf:period_ms=100,window=5"),
        two_jobs("adaptbf:period_ms=1000,window=5"),
    ];
    let html = report_html(&runs, &scenario());
    let bars = chart(&html, "Per-job throughput by policy");
    assert!(bars.contains(">adap…ms=100,window…<"), "{bars}");
    assert!(bars.contains(">adap…ms=1000,windo…<"), "{bars}");
}

#[test]
fn dir_names_follow_the_documented_mapping() {
    assert_eq!(
        dir_name("adaptbf:period_ms=100,window=5", "p"),
        "adaptbf+period_ms-100+window-5"
    );
    assert_eq!(dir_name("../etc/passwd", "p"), "_etc_passwd");
    assert_eq!(dir_name("a b\\c\"d", "p"), "a_b_c_d");
    assert_eq!(dir_name("", "scenario"), "scenario");
    assert_eq!(dir_name("...", "scenario"), "scenario");
    assert_eq!(dir_name(&"x".repeat(500), "p").len(), DIR_NAME_CHARS_MAX);
    assert_eq!(
        unique_dir_names(
            &["a:b".into(), "a+b".into(), "A+B".into(), "a+b-2".into()],
            "p"
        ),
        ["a+b", "a+b-2", "A+B-3", "a+b-2-2"]
    );
}

#[test]
fn comparison_verdicts_tie_on_tiny_gaps_and_judge_weighted_jobs_by_weight() {
    // Same bytes under both policies but one byte in a 400 MiB run: a tie, not a winner.
    let a = two_jobs("p");
    let mut b = two_jobs("q");
    b.jobs[0].bytes_per_ost_bin.row_mut(0)[0] += 1;
    b.jobs[0].bytes_written += 1;
    let v = verdicts(&[summarize(&a), summarize(&b)]);
    assert!(
        v[0].starts_with("Highest aggregate throughput: a tie (within 0.5 %) between p, q"),
        "{}",
        v[0]
    );
    // Node counts as weights (1 and 3, unequal): fairness against the weights.
    assert!(v[1].starts_with("Fairest by weight"), "{}", v[1]);
    // Equal weights: plain Jain.
    let mut c = two_jobs("p");
    let mut d = two_jobs("q");
    for r in [&mut c, &mut d] {
        for j in &mut r.jobs {
            j.weight = 1;
        }
    }
    let v = verdicts(&[summarize(&c), summarize(&d)]);
    assert!(v[1].starts_with("Fairest across jobs"), "{}", v[1]);
}
