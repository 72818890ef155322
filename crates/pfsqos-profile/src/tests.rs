use proptest::prelude::*;

use super::*;

const MINIMAL: &str = r#"
format = "pfsqos-device-profile/1"
name = "t"
concurrency = 4

[source]
kind = "fio"
citation = "fio 3.33"
date = "2026-01-02"
method = "test"

[[read]]
size_kib = 4
bandwidth_mib_s = 100.0
overhead_us = 50.0

[[read]]
size_kib = 1024
bandwidth_mib_s = 400.0
overhead_us = 20.0

[[write]]
size_kib = 4
bandwidth_mib_s = 50.0
overhead_us = 10.0

[[variability]]
quantile = 0.0
factor = 0.5

[[variability]]
quantile = 0.5
factor = 1.0

[[variability]]
quantile = 1.0
factor = 2.0
"#;

#[test]
fn a_minimal_profile_parses_and_round_trips_through_toml() {
    let p = Profile::from_toml_str(MINIMAL, "t.toml").unwrap();
    assert_eq!(p.read.len(), 2);
    assert_eq!(p.concurrency, 4);
    let again = Profile::from_toml_str(&p.to_toml_string(), "again.toml").unwrap();
    assert_eq!(again, p);
}

#[test]
fn shipped_profiles_parse_and_cite_their_sources() {
    for name in SHIPPED_NAMES {
        let p = shipped(name).unwrap();
        assert_eq!(&p.name, name);
        assert!(!p.source.citation.is_empty() && !p.source.method.is_empty());
        assert!(matches!(
            p.source.kind,
            SourceKind::Datasheet | SourceKind::Derived
        ));
    }
    assert!(shipped("floppy").is_none());
    // The HDD's positioning comes from its datasheet: average seek plus half a revolution
    // at 7200 rpm, and a switch between streams never costs more than a random request.
    let hdd = shipped("hdd-7200rpm").unwrap();
    let half_revolution_us = 60e6 / 7200.0 / 2.0;
    assert!((hdd.random_penalty_us - (8200.0 + half_revolution_us)).abs() < 0.01);
    assert!(hdd
        .streams
        .iter()
        .all(|r| r.switch_penalty_us <= hdd.random_penalty_us + 1e-9));
    assert!(hdd
        .streams
        .windows(2)
        .skip(1)
        .all(|w| w[1].switch_penalty_us <= w[0].switch_penalty_us));
}

fn with(edit: impl Fn(&mut Profile)) -> Result<Profile, ProfileError> {
    let mut p = Profile::from_toml_str(MINIMAL, "t.toml").unwrap();
    edit(&mut p);
    p.validate("bad.toml").map(|()| p)
}

fn refused(edit: impl Fn(&mut Profile), field: &str, says: &str) {
    let e = with(edit).unwrap_err();
    assert_eq!(e.file, "bad.toml");
    assert_eq!(e.field, field, "{e}");
    assert!(e.message.contains(says), "{e}");
    let shown = e.to_string();
    assert!(
        shown.starts_with("bad.toml: field `") && shown.contains(field),
        "{shown}"
    );
}

#[test]
fn bad_profiles_are_refused_naming_file_field_and_what_is_allowed() {
    refused(
        |p| p.format = "v0".into(),
        "format",
        "allowed: `pfsqos-device-profile/1`",
    );
    refused(|p| p.name = "a b".into(), "name", "letters");
    refused(|p| p.source.citation.clear(), "source.citation", "required");
    refused(
        |p| p.source.date = "yesterday".into(),
        "source.date",
        "YYYY",
    );
    refused(|p| p.source.date = "2026-13".into(), "source.date", "YYYY");
    refused(|p| p.concurrency = 0, "concurrency", "1..=1024");
    refused(|p| p.read.clear(), "read", "1..=64");
    refused(
        |p| p.read[1].size_kib = 4,
        "read[1].size_kib",
        "strictly increasing",
    );
    refused(
        |p| p.read.swap(0, 1),
        "read[1].size_kib",
        "strictly increasing",
    );
    refused(
        |p| p.read[0].bandwidth_mib_s = -1.0,
        "read[0].bandwidth_mib_s",
        "(0, ",
    );
    refused(
        |p| p.read[0].bandwidth_mib_s = f64::NAN,
        "read[0].bandwidth_mib_s",
        "finite",
    );
    refused(
        |p| p.write[0].overhead_us = -3.0,
        "write[0].overhead_us",
        "[0, ",
    );
    refused(
        |p| p.random_penalty_us = f64::INFINITY,
        "random_penalty_us",
        "finite",
    );
    refused(
        |p| {
            p.streams = vec![
                StreamRow {
                    streams: 2,
                    switch_penalty_us: 1.0,
                },
                StreamRow {
                    streams: 2,
                    switch_penalty_us: 1.0,
                },
            ]
        },
        "streams[1].streams",
        "strictly increasing",
    );
    refused(
        |p| {
            p.congestion = vec![CongestionRow {
                queue_requests: 8,
                throughput_fraction: 1.5,
            }]
        },
        "congestion[0].throughput_fraction",
        "(0, 1]",
    );
    refused(
        |p| p.variability[1].factor = 0.1,
        "variability[1].factor",
        "never decreases",
    );
    refused(
        |p| p.variability[1].quantile = 0.0,
        "variability[1].quantile",
        "strictly increasing",
    );
    refused(
        |p| p.variability[2].quantile = 0.9,
        "variability",
        "first quantile 0, last 1",
    );
    refused(|p| p.variability.truncate(1), "variability", "2..=64");
    // The random penalty's table obeys the same rules, and says which table is wrong.
    let table = |rows: &[(f64, f64)]| -> Vec<QuantileRow> {
        rows.iter()
            .map(|&(quantile, factor)| QuantileRow { quantile, factor })
            .collect()
    };
    let good = table(&[(0.0, 0.2), (0.5, 1.0), (1.0, 1.8)]);
    let g = good.clone();
    assert!(with(move |p| p.random_penalty_variability = g.clone()).is_ok());
    refused(
        |p| p.random_penalty_variability = table(&[(0.0, 0.2), (0.5, 1.0), (1.0, 0.9)]),
        "random_penalty_variability[2].factor",
        "never decreases",
    );
    refused(
        |p| p.random_penalty_variability = table(&[(0.0, 0.2), (0.0, 1.0), (1.0, 1.8)]),
        "random_penalty_variability[1].quantile",
        "strictly increasing",
    );
    refused(
        |p| p.random_penalty_variability = table(&[(0.0, 0.2), (0.5, f64::NAN), (1.0, 1.8)]),
        "random_penalty_variability[1].factor",
        "a finite number in (0, 1000]",
    );
    refused(
        |p| p.random_penalty_variability = table(&[(0.0, -0.2), (0.5, 1.0), (1.0, 1.8)]),
        "random_penalty_variability[0].factor",
        "a finite number in (0, 1000]",
    );
    refused(
        |p| p.random_penalty_variability = table(&[(0.1, 0.2), (1.0, 1.8)]),
        "random_penalty_variability",
        "first quantile 0, last 1",
    );
    refused(
        |p| p.random_penalty_variability = table(&[(0.0, 1.0)]),
        "random_penalty_variability",
        "2..=64",
    );
    let point = Measured {
        op: Op::Read,
        pattern: Pattern::Sequential,
        read_percent: None,
        size_kib: 4,
        queue_depth: 1,
        streams: 1,
        bandwidth_mib_s: 10.0,
        latency_mean_us: 100.0,
        latency_quantiles_us: vec![[0.5, 90.0], [0.99, 300.0]],
    };
    let p2 = point.clone();
    assert!(with(move |p| p.measured = vec![p2.clone()]).is_ok());
    let p2 = point.clone();
    refused(
        move |p| {
            let mut m = p2.clone();
            m.bandwidth_mib_s = 0.0;
            p.measured = vec![m];
        },
        "measured[0].bandwidth_mib_s",
        "the sweep did not complete",
    );
    let p2 = point.clone();
    refused(
        move |p| {
            let mut m = p2.clone();
            m.op = Op::Mixed;
            p.measured = vec![m];
        },
        "measured[0].read_percent",
        "0..=100",
    );
    let p2 = point.clone();
    refused(
        move |p| {
            let mut m = p2.clone();
            m.latency_quantiles_us = vec![[0.5, 90.0], [0.9, 80.0]];
            p.measured = vec![m];
        },
        "measured[0].latency_quantiles_us[1]",
        "never decrease",
    );
}

#[test]
fn syntax_and_unknown_fields_are_refused_with_their_path() {
    let e = Profile::from_toml_str(
        &MINIMAL.replace("overhead_us = 50.0", "overhead_ms = 50.0"),
        "x.toml",
    )
    .unwrap_err();
    assert_eq!(e.file, "x.toml");
    assert!(e.field.starts_with("read"), "{e}");
    assert!(e.message.contains("overhead_ms"), "{e}");
    let e = Profile::from_toml_str(
        &MINIMAL.replace("concurrency = 4", "concurrency = -4"),
        "x.toml",
    )
    .unwrap_err();
    assert_eq!(e.field, "concurrency", "{e}");
    let e = Profile::from_toml_str(&"x".repeat(TEXT_LEN_MAX + 1), "x.toml").unwrap_err();
    assert!(e.message.contains("at most"), "{e}");
}

#[test]
fn variability_is_normalized_to_mean_one() {
    let p = Profile::from_toml_str(MINIMAL, "t.toml").unwrap();
    let v = p.variability_normalized();
    // Trapezoids: 0.5 * (0.5 + 1) / 2 + 0.5 * (1 + 2) / 2 = 1.125.
    assert!((v[1].1 - 1.0 / 1.125).abs() < 1e-12);
    let mean: f64 = v
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum();
    assert!((mean - 1.0).abs() < 1e-12);
}

proptest! {
    /// Interpolation hits every knot, stays within its two neighbours between knots, is
    /// flat outside, and is monotone when the knots are.
    #[test]
    fn interpolation_is_exact_at_knots_bounded_and_monotone(
        mut xs in proptest::collection::btree_set(0u32..10_000, 1..12),
        ys in proptest::collection::vec(0.0f64..1e6, 12),
        probe in 0u32..12_000,
        increasing in any::<bool>(),
    ) {
        let xs: Vec<f64> = std::mem::take(&mut xs).into_iter().map(f64::from).collect();
        let mut ys: Vec<f64> = ys[..xs.len()].to_vec();
        if increasing {
            ys.sort_by(f64::total_cmp);
        }
        let pts: Vec<(f64, f64)> = xs.iter().copied().zip(ys.iter().copied()).collect();
        for &(x, y) in &pts {
            prop_assert_eq!(interpolate(&pts, x), y);
        }
        let x = f64::from(probe);
        let y = interpolate(&pts, x);
        let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        prop_assert!(y >= lo - 1e-9 && y <= hi + 1e-9);
        if x <= xs[0] { prop_assert_eq!(y, ys[0]); }
        if x >= xs[xs.len() - 1] { prop_assert_eq!(y, ys[ys.len() - 1]); }
        if increasing {
            let y2 = interpolate(&pts, x + 1.0);
            prop_assert!(y2 >= y - 1e-9);
        }
    }
}

fn point(
    op: Op,
    pattern: Pattern,
    size_kib: u64,
    qd: u32,
    streams: u32,
    mib_s: f64,
    lat_us: f64,
) -> Measured {
    Measured {
        op,
        pattern,
        read_percent: None,
        size_kib,
        queue_depth: qd,
        streams,
        bandwidth_mib_s: mib_s,
        latency_mean_us: lat_us,
        latency_quantiles_us: Vec::new(),
    }
}

fn source() -> Source {
    Source {
        kind: SourceKind::Fio,
        citation: "test".into(),
        date: "2026".into(),
        method: "test".into(),
        host: String::new(),
        target: String::new(),
    }
}

#[test]
fn fit_reads_each_parameter_off_the_points_that_isolate_it() {
    use Op::*;
    use Pattern::*;
    // 1 MiB: 10 ms at qd 1 (100 MiB/s), 200 MiB/s at qd 8 -> transfer 5 ms, overhead 5 ms.
    // Random 1 MiB at qd 1: 18 ms -> penalty 8 ms.
    // Two streams at qd 1 each: 50 MiB/s -> a slot's cycle is min(2, c) x 20 ms.
    let mut pts = vec![
        point(Read, Sequential, 1024, 1, 1, 100.0, 10_000.0),
        point(Read, Sequential, 1024, 8, 1, 200.0, 40_000.0),
        point(Read, Random, 1024, 1, 1, 1024.0 / 1024.0 / 0.018, 18_000.0),
        point(Write, Sequential, 1024, 1, 1, 100.0, 10_000.0),
        point(Write, Sequential, 1024, 1, 2, 50.0, 40_000.0),
        point(Write, Random, 1024, 1, 1, 1.0 / 0.018, 18_000.0),
    ];
    let mut mix = point(Mixed, Random, 1024, 1, 1, 1.0 / 0.020, 20_000.0);
    mix.read_percent = Some(50);
    pts.push(mix);
    let p = fit::fit("f", "", source(), pts).unwrap();
    assert_eq!(p.read[0].bandwidth_mib_s, 200.0);
    assert!((p.read[0].overhead_us - 5000.0).abs() < 1e-6);
    assert!((p.read[0].random_penalty_us.unwrap() - 8000.0).abs() < 1e-6);
    assert!((p.random_penalty_us - 8000.0).abs() < 1e-6);
    // Writes: only qd 1 measured, so the whole time is transfer.
    assert_eq!(p.write[0].bandwidth_mib_s, 100.0);
    assert!(p.write[0].overhead_us.abs() < 1e-6);
    // Concurrency: 1 MiB random reads, best 55.6 MiB/s x 18 ms / 1 MiB = 1.
    assert_eq!(p.concurrency, 1);
    // Streams: 2 streams at 50 MiB/s: one slot cycles in 20 ms, 10 ms more than alone.
    assert_eq!(p.streams.len(), 2);
    assert!((p.streams[1].switch_penalty_us - 10_000.0).abs() < 1e-6);
    // Mixed: 20 ms against 18 ms expected, switching half the time: 4 ms per switch.
    assert!((p.direction_switch_penalty_us - 4000.0).abs() < 1e-6);
    assert!(p.congestion.is_empty());
}

#[test]
fn fit_adds_congestion_only_where_the_measurement_shows_a_loss() {
    use Op::*;
    use Pattern::*;
    let sweep = |t64: f64| {
        vec![
            point(Read, Sequential, 1024, 1, 1, 100.0, 10_000.0),
            point(Write, Sequential, 1024, 1, 1, 100.0, 10_000.0),
            point(Write, Sequential, 1024, 4, 1, 300.0, 13_000.0),
            point(Write, Sequential, 1024, 16, 1, 310.0, 50_000.0),
            point(Write, Sequential, 1024, 64, 1, t64, 200_000.0),
        ]
    };
    // 3 % below the best: noise.
    assert!(fit::fit("f", "", source(), sweep(300.7))
        .unwrap()
        .congestion
        .is_empty());
    // 20 % below: a loss, shown at the queue where it was measured.
    let p = fit::fit("f", "", source(), sweep(248.0)).unwrap();
    assert_eq!(p.congestion.len(), 4);
    assert_eq!(p.congestion[2].throughput_fraction, 1.0);
    assert!((p.congestion[3].throughput_fraction - 0.8).abs() < 1e-12);
}

#[test]
fn fit_refuses_a_sweep_without_the_points_it_needs() {
    let e = fit::fit(
        "f",
        "",
        source(),
        vec![point(Op::Read, Pattern::Sequential, 4, 1, 1, 10.0, 400.0)],
    )
    .unwrap_err();
    assert!(e.contains("write"), "{e}");
}

#[test]
fn an_obdfilter_survey_becomes_a_profile() {
    let rows = obdfilter::parse(include_str!(
        "../tests/fixtures/obdfilter-survey-2ost.summary"
    ))
    .unwrap();
    let pts = obdfilter::measured(&rows).unwrap();
    let mut src = source();
    src.kind = SourceKind::ObdfilterSurvey;
    let p = fit::fit("ost", "", src, pts).unwrap();
    // Per OST: the best one-object write is 889.6 MiB/s (32 threads), 262 MiB/s alone.
    assert_eq!(p.write[0].size_kib, 1024);
    assert!((p.write[0].bandwidth_mib_s - 889.6).abs() < 1e-9);
    // More objects per OST cost throughput: the survey shows a switch cost.
    assert!(!p.streams.is_empty());
    assert!(p.streams.iter().skip(1).all(|r| r.switch_penalty_us > 0.0));
    // 861.3 at 64 threads is 3.2 % below the best: noise, no congestion.
    assert!(p.congestion.is_empty());
    assert_eq!(p.measured.len(), 50);
    Profile::from_toml_str(&p.to_toml_string(), "ost.toml").unwrap();
}

/// A real survey: the example output of the Lustre Operations Manual, chapter "Benchmarking
/// Lustre File System Performance (Lustre I/O Kit)", section on obdfilter-survey (a run on
/// host hds1fnb6123, 2015-09-25: 10 OSTs, one object and one thread per OST, 1 MiB records),
/// reproduced as test data.
const LUSTRE_MANUAL_SURVEY: &str =
    include_str!("../tests/fixtures/obdfilter-survey-lustre-manual.summary");

#[test]
fn the_lustre_manuals_survey_becomes_a_profile() {
    let rows = obdfilter::parse(LUSTRE_MANUAL_SURVEY).unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (r.line, r.osts, r.record_kib, r.objects, r.threads),
        (2, 10, 1024, 10, 10)
    );
    let names: Vec<&str> = r.tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["write", "rewrite", "read"]);
    assert_eq!(r.tests[0].per_ost_min_max_mib_s, Some((601.97, 2912.91)));
    let pts = obdfilter::measured(&rows).unwrap();
    // write and read, per OST: one stream, one request outstanding.
    assert_eq!(pts.len(), 2);
    assert!(pts.iter().all(|p| (p.streams, p.queue_depth) == (1, 1)));
    let mut src = source();
    src.kind = SourceKind::ObdfilterSurvey;
    let p = fit::fit("hds1fnb6123", "", src, pts).unwrap();
    // 10982.73 MiB/s over 10 OSTs is 1098.273 MiB/s per OST; 12358.60 reads 1235.86.
    assert!((p.write[0].bandwidth_mib_s - 1098.273).abs() < 1e-9);
    assert!((p.read[0].bandwidth_mib_s - 1235.86).abs() < 1e-9);
    // One request at a time: Little's law gives exactly the transfer time, so no overhead.
    assert!(p.write[0].overhead_us.abs() < 1e-6 && p.read[0].overhead_us.abs() < 1e-6);
    // One object per OST: the survey says nothing about streams or congestion.
    assert!(p.streams.is_empty() && p.congestion.is_empty());
    Profile::from_toml_str(&p.to_toml_string(), "hds1fnb6123.toml").unwrap();
}

/// The line lustre-iokit's README.obdfilter-survey shows (8 OSTs, write only) parses, but a
/// profile needs reads too: the conversion refuses it and says which rows are missing.
#[test]
fn the_lustre_iokit_readmes_write_only_line_is_refused_for_its_missing_reads() {
    let rows = obdfilter::parse(include_str!(
        "../tests/fixtures/obdfilter-survey-lustre-iokit-readme.summary"
    ))
    .unwrap();
    assert_eq!((rows[0].osts, rows[0].objects, rows[0].threads), (8, 8, 8));
    assert_eq!(rows[0].tests[0].total_mib_s, 613.54);
    let pts = obdfilter::measured(&rows).unwrap();
    assert_eq!(pts.len(), 1);
    assert!((pts[0].bandwidth_mib_s - 613.54 / 8.0).abs() < 1e-9);
    let e = fit::fit("readme", "", source(), pts).unwrap_err();
    assert!(e.contains("read"), "{e}");
}
