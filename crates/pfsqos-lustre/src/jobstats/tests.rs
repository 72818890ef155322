use super::*;
use proptest::prelude::*;

const ZERO_OPS_2_16: &str = "  getattr:         { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
  setattr:         { samples:           1, unit: usecs, min:       57, max:       57, sum:               57, sumsq:               3249 }
  punch:           { samples:           1, unit: usecs, min:      133, max:      133, sum:              133, sumsq:              17689 }
  sync:            { samples:           2, unit: usecs, min:      880, max:     1210, sum:             2090, sumsq:            2238500 }
  destroy:         { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
  create:          { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
  statfs:          { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
  get_info:        { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
  set_info:        { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
  quotactl:        { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
  prealloc:        { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }
";

/// §6.2 (a), with the second job's elided counters written out (all zero but write_bytes).
fn example_2_16() -> String {
    let zeros: String = ZERO_OPS_2_16
        .lines()
        .map(|l| {
            let name = l.split(':').next().unwrap();
            format!(
                "{name}:{}{{ samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }}\n",
                " ".repeat(16 - name.trim().len())
            )
        })
        .collect();
    format!(
        "job_stats:
- job_id:          4151234
  snapshot_time:   1727871234.123456789 secs.nsecs
  start_time:      1727871101.987654321 secs.nsecs
  elapsed_time:    132.135802468 secs.nsecs
  read_bytes:      {{ samples:          64, unit: bytes, min:  1048576, max:  4194304, sum:        201326592, sumsq:    862017116176384, hist: {{ 1M: 16, 4M: 48 }} }}
  write_bytes:     {{ samples:         256, unit: bytes, min:  4194304, max:  4194304, sum:       1073741824, sumsq:   4503599627370496, hist: {{ 4M: 256 }} }}
  read:            {{ samples:          64, unit: usecs, min:      412, max:     9120, sum:            98304, sumsq:          221184000 }}
  write:           {{ samples:         256, unit: usecs, min:     1830, max:    45210, sum:          1923456, sumsq:        21034567890 }}
{ZERO_OPS_2_16}- job_id:          \"ior.1001:n01\"
  snapshot_time:   1727871230.500000000 secs.nsecs
  start_time:      1727871200.250000000 secs.nsecs
  elapsed_time:    30.250000000 secs.nsecs
  read_bytes:      {{ samples:           0, unit: bytes, min:        0, max:        0, sum:                0, sumsq:                  0, hist: {{  }} }}
  write_bytes:     {{ samples:          10, unit: bytes, min:  1048576, max:  1048576, sum:         10485760, sumsq:     10995116277760, hist: {{ 1M: 10 }} }}
  read:            {{ samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }}
  write:           {{ samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }}
{zeros}"
    )
}

const EXAMPLE_2_12: &str = "job_stats:
- job_id:          dd.500
  snapshot_time:   1429714922
  read_bytes:      { samples:           0, unit: bytes, min:       0, max:       0, sum:               0 }
  write_bytes:     { samples:         100, unit: bytes, min: 1048576, max: 1048576, sum:       104857600 }
  getattr:         { samples:           0, unit:  reqs }
  setattr:         { samples:           0, unit:  reqs }
  punch:           { samples:           1, unit:  reqs }
  sync:            { samples:           0, unit:  reqs }
  destroy:         { samples:           0, unit:  reqs }
  create:          { samples:           0, unit:  reqs }
  statfs:          { samples:           0, unit:  reqs }
  get_info:        { samples:           0, unit:  reqs }
  set_info:        { samples:           0, unit:  reqs }
  quotactl:        { samples:           0, unit:  reqs }
";

fn strip_hist(text: &str) -> String {
    text.lines()
        .map(|l| match l.find(", hist: {") {
            Some(i) => format!("{} }}\n", &l[..i]),
            None => format!("{l}\n"),
        })
        .collect()
}

#[test]
fn example_2_16_round_trips_byte_for_byte() {
    let text = example_2_16();
    let entries = parse_job_stats(&text).unwrap();
    assert_eq!(entries.len(), 2);
    let a = &entries[0];
    assert_eq!(a.job_id.as_str(), "4151234");
    assert_eq!(a.snapshot_time_ns, 1_727_871_234_123_456_789);
    assert_eq!(a.start_time_ns, Some(1_727_871_101_987_654_321));
    let rb = a.counter(OstCounter::ReadBytes);
    assert_eq!((rb.samples, rb.min, rb.max), (64, 1 << 20, 4 << 20));
    assert_eq!(a.read_hist.0[20], 16);
    assert_eq!(a.read_hist.0[22], 48);
    assert_eq!(a.counter(OstCounter::Sync).sumsq, 2_238_500);
    assert_eq!(entries[1].job_id.as_str(), "ior.1001:n01");
    assert_eq!(render_job_stats(&entries, JobStatsFormat::Lustre2_16), text);
    assert_eq!(render_job_stats(&entries, JobStatsFormat::Master), text);
    // 2.15.2-2.15.x: the same without histograms, and `:` escaped (v2_15_2 .. v2_15_8 keep
    // only alphanumerics and `.@-_`; 2.16 added `:` and `/`).
    let text_2_15 = strip_hist(&text).replace("ior.1001:n01", "ior.1001\\x3An01");
    assert_eq!(
        render_job_stats(&entries, JobStatsFormat::Lustre2_15),
        text_2_15
    );
    let from_2_15 = parse_job_stats(&text_2_15).unwrap();
    assert_eq!(from_2_15[0].counters, entries[0].counters);
    assert_eq!(from_2_15[0].read_hist, Log2Hist::default());
}

#[test]
fn recorded_counters_print_like_the_example() {
    let mut s = OstJobStats::default();
    let job = JobId::new("4151234").unwrap();
    let start = 1_727_871_101_987_654_321;
    for k in 0..64u64 {
        let bytes = if k < 16 { 1 << 20 } else { 4 << 20 };
        s.record(start + k, job, OstCounter::ReadBytes, bytes);
    }
    for _ in 0..256 {
        s.record(start, job, OstCounter::WriteBytes, 4 << 20);
    }
    s.record(1_727_871_234_123_456_789, job, OstCounter::Setattr, 57);
    let out = s.render(JobStatsFormat::Master);
    // The §6.2 values are invented: 16 x 1 MiB + 48 x 4 MiB sums to 218103808, not 201326592.
    let example = example_2_16().replace("       201326592", "       218103808");
    let first_job: Vec<&str> = example.lines().take(7).collect();
    let got: Vec<&str> = out.lines().take(7).collect();
    assert_eq!(got, first_job);
    assert!(out.contains(
        "  setattr:         { samples:           1, unit: usecs, min:       57, max:       57, sum:               57, sumsq:               3249 }\n"
    ));
}

#[test]
fn legacy_2_12_round_trips() {
    let entries = parse_job_stats(EXAMPLE_2_12).unwrap();
    let e = &entries[0];
    assert_eq!(e.job_id.as_str(), "dd.500");
    assert_eq!(e.snapshot_time_ns, 1_429_714_922 * NS_PER_S);
    assert_eq!(e.start_time_ns, None);
    assert_eq!(e.counter(OstCounter::WriteBytes).sum, 104_857_600);
    assert_eq!(e.counter(OstCounter::Punch).samples, 1);
    assert_eq!(
        render_job_stats(&entries, JobStatsFormat::Legacy2_12),
        EXAMPLE_2_12
    );
}

#[test]
fn unindented_2_15_0_time_lines_parse() {
    let text = "obdfilter.testfs-OST0000.job_stats=
job_stats:
- job_id:          dd.0
snapshot_time   : 1727871234.123456789 secs.nsecs
start_time      : 1727871101.987654321 secs.nsecs
elapsed_time    : 132.135802468 secs.nsecs
  read_bytes:      { samples:           2, unit: bytes, min:     4096, max:     4096, sum:             8192, sumsq:           33554432 }
";
    let e = &parse_job_stats(text).unwrap()[0];
    assert_eq!(e.snapshot_time_ns, 1_727_871_234_123_456_789);
    assert_eq!(e.start_time_ns, Some(1_727_871_101_987_654_321));
    assert_eq!(e.counter(OstCounter::ReadBytes).samples, 2);
    // And the printer reproduces the unindented form.
    let out = render_job_stats([e], JobStatsFormat::Lustre2_15_0);
    assert!(out.contains("\nstart_time      : 1727871101.987654321 secs.nsecs\n"));
    let mut colon = e.clone();
    colon.job_id = JobId::new("ior.1001:n01").unwrap();
    let raw = render_job_stats([&colon], JobStatsFormat::Lustre2_15_0);
    assert!(
        raw.contains("- job_id:          ior.1001:n01\n"),
        "2.15.0 prints ids raw"
    );
    assert_eq!(parse_job_stats(&raw).unwrap()[0].job_id, colon.job_id);
    assert_eq!(parse_job_stats(&out).unwrap()[0], *e);
}

#[test]
fn empty_ost_forms_and_multi_ost_output() {
    let s = OstJobStats::default();
    assert_eq!(s.render(JobStatsFormat::Lustre2_16), "job_stats:\n");
    assert_eq!(s.render(JobStatsFormat::Master), "");
    let text = format!(
        "obdfilter.testfs-OST0000.job_stats=\n{}obdfilter.testfs-OST0001.job_stats=job_stats:\nobdfilter.testfs-OST0002.job_stats=\n",
        example_2_16()
    );
    let all = parse_lctl_job_stats(&text).unwrap();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "obdfilter.testfs-OST0000.job_stats",
            "obdfilter.testfs-OST0001.job_stats",
            "obdfilter.testfs-OST0002.job_stats"
        ]
    );
    assert_eq!(
        all.iter().map(|(_, e)| e.len()).collect::<Vec<_>>(),
        [2, 0, 0]
    );
    assert!(parse_job_stats("").unwrap().is_empty());
    assert!(parse_job_stats(&text).is_err());
}

#[test]
fn quoting_rules() {
    assert_eq!(quote_job_id("dd.500"), "dd.500");
    assert_eq!(quote_job_id("a-b_c/d@e"), "a-b_c/d@e");
    assert_eq!(quote_job_id("ior.1001:n01"), "\"ior.1001:n01\"");
    assert_eq!(quote_job_id("@x"), "\"@x\"");
    assert_eq!(quote_job_id("has sp.touch.0"), "\"has\\x20sp.touch.0\"");
    assert_eq!(quote_job_id("a\"b"), "\"a\\x22b\"");
    assert_eq!(unquote_job_id("\"has\\x20sp\"").unwrap(), "has sp");
    assert!(unquote_job_id("\"open").is_err());
    assert!(unquote_job_id("\"bad\\q1\"").is_err());
}

#[test]
fn clear_all_and_clear_one() {
    let mut s = OstJobStats::default();
    for j in ["dd.500", "has sp.touch.0", "x"] {
        s.record(5, JobId::new(j).unwrap(), OstCounter::Punch, 1);
    }
    s.record(5, JobId::EMPTY, OstCounter::Punch, 1);
    assert_eq!(s.len(), 3, "an empty job id is not recorded");
    s.write("dd.500").unwrap();
    s.write("\"has\\x20sp.touch.0\"").unwrap();
    assert_eq!(
        s.entries().map(|e| e.job_id.as_str()).collect::<Vec<_>>(),
        ["x"]
    );
    let err = s.write("nope").unwrap_err();
    assert_eq!(err.errno(), Errno::EINVAL);
    assert_eq!(err, JobStatsError::UnknownJob("nope".into()));
    assert!(s.write(&"y".repeat(500)).is_err());
    s.write("clear").unwrap();
    assert!(s.is_empty());
}

#[test]
fn job_bound_evicts_the_least_recently_updated() {
    let mut s = OstJobStats::new(2);
    let j = |n: &str| JobId::new(n).unwrap();
    s.record(1, j("a"), OstCounter::Punch, 1);
    s.record(2, j("b"), OstCounter::Punch, 1);
    s.record(3, j("a"), OstCounter::Punch, 1);
    s.record(4, j("c"), OstCounter::Punch, 1);
    let names: Vec<_> = s.entries().map(|e| e.job_id.to_string()).collect();
    assert_eq!(names, ["a", "c"]);
    s.expire(10, 6);
    assert_eq!(s.len(), 1);
    s.expire(100, 0);
    assert_eq!(s.len(), 1, "interval 0 disables expiry");
}

#[test]
fn histogram_buckets_and_labels() {
    assert_eq!(hist_bucket(1), 0);
    assert_eq!(hist_bucket(2), 1);
    assert_eq!(hist_bucket(3), 2);
    assert_eq!(hist_bucket(4 << 20), 22);
    assert_eq!(hist_bucket((4 << 20) + 1), 23);
    assert_eq!(hist_label(0), "1");
    assert_eq!(hist_label(9), "512");
    assert_eq!(hist_label(10), "1K");
    assert_eq!(hist_label(22), "4M");
    assert_eq!(hist_label(30), "1G");
    for b in 0..HIST_BUCKETS {
        assert_eq!(parse_hist_label(&hist_label(b)), Some(b));
    }
    assert_eq!(parse_hist_label("3K"), None);
}

fn arb_job() -> impl Strategy<Value = JobId> {
    "[ -~]{0,31}".prop_map(|s| JobId::new(&s).unwrap())
}

fn arb_entry() -> impl Strategy<Value = JobEntry> {
    (
        arb_job(),
        0u64..4_000_000_000_000_000_000,
        0u64..1_000_000_000_000,
        proptest::collection::vec((0usize..OST_COUNTER_COUNT, 0u64..(1 << 30)), 0..40),
    )
        .prop_map(|(job, start, dur, samples)| {
            let mut s = OstJobStats::default();
            let job = if job.is_empty() {
                JobId::new("j").unwrap()
            } else {
                job
            };
            s.record(start, job, OstCounter::Punch, 0);
            for (c, v) in samples {
                s.record(start + dur, job, OstCounter::ALL[c], v);
            }
            s.get(&job).unwrap().clone()
        })
}

proptest! {
    #[test]
    fn every_format_parses_back(entries in proptest::collection::vec(arb_entry(), 0..5)) {
        let mut by_id = BTreeMap::new();
        for e in entries { by_id.insert(e.job_id, e); }
        let entries: Vec<JobEntry> = by_id.into_values().collect();
        for format in [JobStatsFormat::Lustre2_16, JobStatsFormat::Master] {
            let text = render_job_stats(&entries, format);
            prop_assert_eq!(&parse_job_stats(&text).unwrap(), &entries);
        }
        // Layouts that print job ids raw cannot carry ids with edge spaces or a leading quote.
        let raw_safe = |j: &JobId| {
            let s = j.as_str();
            s.trim() == s && !s.starts_with('"')
        };
        for format in [JobStatsFormat::Lustre2_15, JobStatsFormat::Lustre2_15_0] {
            let text = render_job_stats(&entries, format);
            let back = parse_job_stats(&text).unwrap();
            prop_assert_eq!(back.len(), entries.len());
            for (b, e) in back.iter().zip(&entries) {
                if format == JobStatsFormat::Lustre2_15 || raw_safe(&e.job_id) {
                    prop_assert_eq!(b.job_id, e.job_id);
                }
                prop_assert_eq!(b.start_time_ns, e.start_time_ns);
                prop_assert_eq!(b.counters, e.counters);
            }
        }
        let text = render_job_stats(&entries, JobStatsFormat::Legacy2_12);
        let back = parse_job_stats(&text).unwrap();
        for (b, e) in back.iter().zip(&entries) {
            if raw_safe(&e.job_id) {
                prop_assert_eq!(b.job_id, e.job_id);
            }
            prop_assert_eq!(b.snapshot_time_ns, e.snapshot_time_ns / NS_PER_S * NS_PER_S);
            for c in OstCounter::LEGACY {
                prop_assert_eq!(b.counter(c).samples, e.counter(c).samples);
            }
        }
    }

    #[test]
    fn quoting_round_trips(job in arb_job()) {
        let q = quote_job_id(job.as_str());
        prop_assert_eq!(unquote_job_id(&q).unwrap(), job.as_str());
    }

    #[test]
    fn parser_never_panics(text in "(?s).{0,400}") {
        let _ = parse_lctl_job_stats(&text);
    }
}

#[test]
fn counters_delta_restarts_the_whole_entry() {
    assert_eq!(counters_delta(None, &[3, 4]), [3, 4]);
    assert_eq!(counters_delta(Some(&[1, 1]), &[3, 4]), [2, 3]);
    assert_eq!(counters_delta(Some(&[3, 4]), &[3, 4]), [0, 0]);
    // One counter went down: the entry was cleared and counted again, every field is new
    // (a per-field rule would report 5 - 3 = 2 for the first).
    assert_eq!(counters_delta(Some(&[3, 9]), &[5, 2]), [5, 2]);
}

proptest! {
    /// Without restarts the deltas of consecutive reads add up to the last totals.
    #[test]
    fn counters_deltas_add_up(steps in proptest::collection::vec((0u64..1000, 0u64..1000), 1..20)) {
        let mut total = [0u64; 2];
        let mut prev: Option<[u64; 2]> = None;
        let mut sum = [0u64; 2];
        for (a, b) in steps {
            total = [total[0] + a, total[1] + b];
            let d = counters_delta(prev.as_ref(), &total);
            sum = [sum[0] + d[0], sum[1] + d[1]];
            prev = Some(total);
        }
        prop_assert_eq!(sum, total);
    }
}

#[test]
fn counter_names_are_read_back() {
    for c in OstCounter::ALL {
        assert_eq!(OstCounter::from_name(c.name()), Some(c));
    }
    assert_eq!(OstCounter::from_name("read_byte"), None);
    assert_eq!(OstCounter::from_name(""), None);
}

/// Counter bodies as Lustre prints them, and variants around that form: other spacing, tabs,
/// fields in another order or repeated, unknown fields, signs, overflow, trailing commas, text
/// after the braces, bad histogram labels.
fn arb_counter_body() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        (0u64..u64::MAX).prop_map(|n| format!("min: {n}")),
        (0u64..1 << 40).prop_map(|n| format!("max:{n:>9}")),
        (0u64..u64::MAX).prop_map(|n| format!("sum: {n:>16}")),
        (0u64..u64::MAX).prop_map(|n| format!("sumsq: {n:>18}")),
        Just("samples: 4".to_string()),
        Just("future: 3".to_string()),
        Just("xhist: 1".to_string()),
        Just("unit: bytes".to_string()),
        Just("sum: +5".to_string()),
        Just("sum: 99999999999999999999".to_string()),
        Just("sum:\t5".to_string()),
        Just("min 5".to_string()),
        Just(String::new()),
    ];
    let hist = prop_oneof![
        Just(None),
        Just(Some("hist: { }".to_string())),
        Just(Some("hist: { 1M: 3, 4K: 1 }".to_string())),
        Just(Some("hist: { 1M: 3, }".to_string())),
        Just(Some("hist: { 3M: 1 }".to_string())),
        Just(Some("hist: { 1K: 1 } extra".to_string())),
        Just(Some("hist: {1:1,2:2}".to_string())),
        Just(Some("hist: { 512: 18446744073709551615 }".to_string())),
    ];
    (
        0u64..u64::MAX,
        prop_oneof![Just("bytes"), Just("usecs"), Just("reqs"), Just("by tes")],
        proptest::collection::vec(field, 0..6),
        hist,
        0usize..3,
        prop_oneof![Just(""), Just(" "), Just("  "), Just("\t")],
    )
        .prop_map(|(samples, unit, fields, hist, pad, trail)| {
            let sp = " ".repeat(pad);
            let mut body = format!("{{{sp}samples: {samples:>11},{sp}unit: {unit}");
            for f in fields {
                body.push_str(&format!(",{sp}{f}"));
            }
            if let Some(h) = hist {
                body.push_str(&format!(", {h}"));
            }
            body.push_str(&format!("{sp} }}{trail}"));
            body
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(17),
        cases: 2048,
        ..ProptestConfig::default()
    })]
    /// The one-pass counter parser only ever answers as the general one does: where it takes
    /// a body at all, it reads the same counter, unit and histogram.
    #[test]
    fn the_fast_counter_parser_agrees_with_the_general_one(body in arb_counter_body()) {
        if let Some(fast) = parse_counter_body_fast(&body) {
            prop_assert_eq!(Ok(fast), parse_counter_body_general(&body), "{}", body);
        }
    }
}

/// Time values as printed and near misses: digits, dots, signs, suffixes and padding.
fn arb_time_text() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        (0u64..u64::MAX).prop_map(|n| n.to_string()),
        (0u64..10_000_000_000).prop_map(|n| n.to_string()),
        "[0-9]{0,21}",
        Just("+5".to_string()),
        Just(String::new()),
    ];
    let suffix = prop_oneof![
        Just(""),
        Just(" secs.nsecs"),
        Just("secs.nsecs"),
        Just("  secs.nsecs"),
        Just(" secs"),
        Just(" x"),
    ];
    (
        part.clone(),
        prop_oneof![Just("."), Just(""), Just(".."), Just(",")],
        "[0-9]{0,11}",
        suffix,
        "[ \t]{0,3}",
        "[ \t]{0,3}",
    )
        .prop_map(|(s, dot, frac, suffix, lead, trail)| {
            format!("{lead}{s}{dot}{frac}{suffix}{trail}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(17),
        cases: 4096,
        ..ProptestConfig::default()
    })]
    /// The word-at-a-time digit reader is the byte loop: the same value and count of leading
    /// digits (up to 19), whatever follows, bytes next to the digits '0' and '9' included.
    #[test]
    fn leading_digits_are_read_as_a_byte_loop(
        text in proptest::collection::vec(
            prop_oneof![8 => 0x30u8..=0x39, 1 => Just(0x2fu8), 1 => Just(0x3au8), 1 => any::<u8>()],
            0..26,
        ),
    ) {
        let len = text.iter().take(19).take_while(|b| b.is_ascii_digit()).count();
        let n = text[..len].iter().fold(0u64, |n, &b| n * 10 + u64::from(b - b'0'));
        prop_assert_eq!(leading_digits(&text), (n, len), "{:?}", text);
        if let Ok(chunk) = <[u8; 8]>::try_from(&text[..text.len().min(8)]) {
            let all = chunk.iter().all(u8::is_ascii_digit);
            let value = || chunk.iter().fold(0u64, |n, &b| n * 10 + u64::from(b - b'0'));
            prop_assert_eq!(eight_digits(chunk), all.then(value));
        }
    }

    /// The one-pass time reader only ever answers as the general one does.
    #[test]
    fn the_printed_time_reader_agrees_with_the_general_one(text in arb_time_text()) {
        if let Some(t) = parse_time_ns_printed(text.as_bytes()) {
            prop_assert_eq!(Some(t), parse_time_ns_general(&text), "{:?}", text);
        }
        prop_assert_eq!(parse_time_ns(&text), parse_time_ns_general(&text), "{:?}", text);
    }
}

/// The one-pass time reader takes every time line every layout prints (so it is the path
/// taken), with the values written.
#[test]
fn the_printed_time_reader_takes_every_printed_layout() {
    let mut e = JobEntry::new(JobId::new("dd.1").unwrap(), 1_700_000_123_456_789_012);
    e.start_time_ns = Some(1_700_000_000_000_000_001);
    let lines = printed_lines(&e, "secs.nsecs");
    // Three time lines in each layout but 2.12's (whole seconds, no `secs.nsecs`).
    assert_eq!(lines.len(), 3 * (PRINTED_FORMATS.len() - 1));
    for (f, line) in lines {
        let (name, value) = line.split_once(':').unwrap();
        let want = match name.trim() {
            "snapshot_time" => e.snapshot_time_ns,
            "start_time" => 1_700_000_000_000_000_001,
            "elapsed_time" => 123_456_789_011,
            other => panic!("{f:?}: unexpected time line {other:?}"),
        };
        assert_eq!(
            parse_time_ns_printed(value.as_bytes()),
            Some(want),
            "{f:?}: {line}"
        );
    }
    assert_eq!(parse_time_ns_printed(b"12.5"), Some(12_500_000_000));
    assert_eq!(parse_time_ns_printed(b" 0.000000001 secs.nsecs "), Some(1));
    // Past u64: left to the general reader, which refuses it too.
    assert_eq!(parse_time_ns_printed(b"18446744074.0"), None);
    assert_eq!(parse_time_ns("18446744074.0"), None);
}

/// Every layout the printer has.
const PRINTED_FORMATS: [JobStatsFormat; 5] = [
    JobStatsFormat::Legacy2_12,
    JobStatsFormat::Lustre2_15_0,
    JobStatsFormat::Lustre2_15,
    JobStatsFormat::Lustre2_16,
    JobStatsFormat::Master,
];

/// The lines holding `needle` that `e` prints in each of [`PRINTED_FORMATS`], with the
/// layout that printed them.
fn printed_lines(e: &JobEntry, needle: &str) -> Vec<(JobStatsFormat, String)> {
    PRINTED_FORMATS
        .iter()
        .flat_map(|&f| {
            render_job_stats([e], f)
                .lines()
                .filter(|l| l.contains(needle))
                .map(|l| (f, l.to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The fast path takes what every layout prints (so it is the path taken).
#[test]
fn the_fast_counter_parser_takes_every_printed_layout() {
    let mut e = JobEntry::new(JobId::new("dd.1").unwrap(), 5_000_000_000);
    e.counters[OstCounter::WriteBytes as usize].add(1 << 20);
    e.write_hist.add(1 << 20);
    e.counters[OstCounter::Write as usize].add(120);
    let lines = printed_lines(&e, "samples:");
    assert!(!lines.is_empty());
    for (f, line) in lines {
        let body = line.split_once(':').unwrap().1;
        assert!(parse_counter_body_fast(body).is_some(), "{f:?}: {line}");
    }
}

/// The full lossy parser's reading of `text` as the compact parser keeps it.
fn full_as_brw(text: &str) -> Result<LossyJobStats<poll::BrwEntry>, JobStatsParseError> {
    parse_lctl_job_stats_lossy(text).map(|(osts, skipped)| {
        let osts = osts
            .into_iter()
            .map(|(p, es)| (p, es.into_iter().map(poll::BrwEntry::from).collect()))
            .collect();
        (osts, skipped)
    })
}

/// `text` without the lines [`parse_lctl_brw_lossy`] passes over unread: in each entry, the
/// lines after the one that completes its bulk counters (`read_bytes` and `write_bytes`, or
/// `read`/`write` in bytes, each parsed), up to the next line opening an entry or a parameter.
/// A line-by-line statement of the skim, written apart from the parser's memchr searches.
fn without_lines_after_bulk(text: &str) -> String {
    let mut out = String::new();
    let mut bulk_seen = 0u8;
    let mut passing_over = false;
    for chunk in text.split_inclusive('\n') {
        // The line as `str::lines` gives it.
        let line = match chunk.strip_suffix('\n') {
            Some(l) => l.strip_suffix('\r').unwrap_or(l),
            None => chunk,
        };
        if starts_with_param_name(line) || trim(line).starts_with("- job_id:") {
            bulk_seen = 0;
            passing_over = false;
        } else if passing_over {
            continue;
        } else if let (field, Some(value)) = split_field(trim(line)) {
            if let Ok((_, unit, _)) = parse_counter_body::<false>(value) {
                bulk_seen |= match (field, unit) {
                    ("read_bytes", _) | ("read", "bytes") => 1,
                    ("write_bytes", _) | ("write", "bytes") => 2,
                    _ => 0,
                };
                passing_over = bulk_seen == 3;
            }
        }
        out.push_str(chunk);
    }
    out
}

/// lctl output over several OSTs in one layout, then garbled by `edits`: a line replaced,
/// doubled, blanked, cut, or given odd bytes (white space of every kind, quotes, colons).
fn garbled_lctl_text(
    osts: &[Vec<JobEntry>],
    format: JobStatsFormat,
    edits: &[(usize, u8, usize)],
) -> String {
    let mut text = String::new();
    for (i, entries) in osts.iter().enumerate() {
        text.push_str(&format!("obdfilter.fs-OST{i:04x}.job_stats=\n"));
        text.push_str(&render_job_stats(entries, format));
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // `-`, `=` and the entry mark: what the compact parser's skim searches for.
    const ODD: [&str; 12] = [
        "\u{a0}",
        "\t",
        "\u{b}",
        "\"",
        ":",
        " ",
        "\u{2003}",
        "x",
        "-",
        "=",
        "x.y=",
        " - job_id: ",
    ];
    for &(at, kind, arg) in edits {
        if lines.is_empty() {
            break;
        }
        let at = at % lines.len();
        match kind % 6 {
            0 => lines[at] = ODD[arg % ODD.len()].to_string(),
            1 => {
                let l = lines[at].clone();
                lines.insert(at, l);
            }
            2 => lines[at].clear(),
            3 => {
                let l = &mut lines[at];
                let cut = (arg % (l.len() + 1)).min(l.len());
                let cut = (0..=cut)
                    .rev()
                    .find(|&c| l.is_char_boundary(c))
                    .unwrap_or(0);
                l.truncate(cut);
            }
            4 => lines[at].insert_str(0, ODD[arg % ODD.len()]),
            _ => lines[at].push_str(ODD[arg % ODD.len()]),
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn arb_format() -> impl Strategy<Value = JobStatsFormat> {
    prop_oneof![
        Just(JobStatsFormat::Legacy2_12),
        Just(JobStatsFormat::Lustre2_15_0),
        Just(JobStatsFormat::Lustre2_15),
        Just(JobStatsFormat::Lustre2_16),
        Just(JobStatsFormat::Master),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(17),
        cases: 400,
        ..ProptestConfig::default()
    })]
    /// Differential: the compact parser (what the agent reads every period) gives exactly what
    /// the full lossy parser gives on the text without the lines it passes over (each entry's
    /// lines after its bulk counters), kept to bulk totals: same OSTs, entries, values and
    /// left-out count, on every layout, with odd job ids and garbled lines. On the text as
    /// printed (no edits) the two agree on the text itself.
    #[test]
    fn the_compact_parser_reads_what_the_full_one_reads_up_to_the_bulk(
        osts in proptest::collection::vec(proptest::collection::vec(arb_entry(), 0..4), 1..3),
        format in arb_format(),
        edits in proptest::collection::vec((0usize..200, 0u8..6, 0usize..64), 0..4),
    ) {
        let printed = garbled_lctl_text(&osts, format, &[]);
        prop_assert_eq!(parse_lctl_brw_lossy(&printed, false), full_as_brw(&printed));
        let text = garbled_lctl_text(&osts, format, &edits);
        let read = without_lines_after_bulk(&text);
        prop_assert_eq!(parse_lctl_brw_lossy(&text, false), full_as_brw(&read), "{}", text);
        // With names required: refused exactly when the full parser puts entries (or an empty
        // value) under no name; otherwise read the same.
        let full = full_as_brw(&read).unwrap();
        let unnamed = full.0.first().is_some_and(|(name, _)| name.is_empty());
        match parse_lctl_brw_lossy(&text, true) {
            Err(e) => prop_assert!(e.nameless() && unnamed, "{}: {}", e, text),
            Ok(named) => {
                prop_assert!(!unnamed, "{}", text);
                prop_assert_eq!(named, full);
            }
        }
    }

    #[test]
    fn the_compact_parser_never_panics_and_agrees(text in "(?s).{0,400}") {
        prop_assert_eq!(
            parse_lctl_brw_lossy(&text, false),
            full_as_brw(&without_lines_after_bulk(&text))
        );
    }

    /// The ASCII-first trim is `str::trim`.
    #[test]
    fn trim_is_str_trim(text in "[ \t\n\u{b}\u{c}\r\u{85}\u{a0}\u{2003}a-c\u{e9}]{0,12}") {
        prop_assert_eq!(trim(&text), text.trim());
    }
}

/// Text without parameter names (`lctl get_param -n`) is refused when names are required,
/// whatever its layout; blank text and named text are read.
#[test]
fn nameless_job_stats_are_refused_when_names_are_required() {
    let mut e = JobEntry::new(JobId::new("dd.1").unwrap(), 5_000_000_000);
    e.counters[OstCounter::WriteBytes as usize].add(1 << 20);
    for format in [
        JobStatsFormat::Legacy2_12,
        JobStatsFormat::Lustre2_15,
        JobStatsFormat::Lustre2_16,
        JobStatsFormat::Master,
    ] {
        let value = render_job_stats([&e], format);
        let err = parse_lctl_brw_lossy(&value, true).unwrap_err();
        assert!(err.nameless(), "{format:?}: {err}");
        assert_eq!(err.line, 1);
        // Not required: one unnamed target, as before.
        let (osts, _) = parse_lctl_brw_lossy(&value, false).unwrap();
        assert_eq!((osts.len(), osts[0].0.as_str()), (1, ""));
        let named = format!("\n\nobdfilter.fs-OST0000.job_stats=\n{value}");
        let (osts, skipped) = parse_lctl_brw_lossy(&named, true).unwrap();
        assert_eq!((osts.len(), skipped), (1, 0));
        assert_eq!(osts[0].1[0].write, (1, 1 << 20));
    }
    // 2.16's empty form without a name is nameless too; nothing at all is not.
    assert!(parse_lctl_brw_lossy("job_stats:\n", true)
        .unwrap_err()
        .nameless());
    assert_eq!(parse_lctl_brw_lossy("\n \n", true).unwrap().0.len(), 0);
    // Other errors are not taken for it.
    let long = "x".repeat(JOB_STATS_TEXT_LEN_BYTES_MAX + 1);
    assert!(!parse_lctl_brw_lossy(&long, false).unwrap_err().nameless());
}

/// The word-at-a-time space skip stops at the first other byte wherever it is.
#[test]
fn spaces_stop_at_the_first_other_byte() {
    for len in 0..20 {
        for stop in 0..=len {
            let mut text = " ".repeat(len);
            if stop < len {
                text.replace_range(stop..stop + 1, "x");
            }
            for start in 0..=stop {
                let mut c = Cursor {
                    text: &text,
                    bytes: text.as_bytes(),
                    at: start,
                };
                c.spaces();
                assert_eq!(c.at, stop, "{text:?} from {start}");
            }
        }
    }
}

/// The agent's reader takes an entry whose id, times and bulk counters are well formed, and
/// does not read what follows them; the full parser still leaves such an entry out. Garbled
/// before or in the bulk counters, both leave it out.
#[test]
fn the_compact_parser_does_not_read_past_the_bulk_counters() {
    let mut a = JobEntry::new(JobId::new("dd.1").unwrap(), 5_000_000_000);
    a.counters[OstCounter::WriteBytes as usize].add(1 << 20);
    let mut b = JobEntry::new(JobId::new("ior.2").unwrap(), 6_000_000_000);
    b.counters[OstCounter::ReadBytes as usize].add(4096);
    for format in [
        JobStatsFormat::Legacy2_12,
        JobStatsFormat::Lustre2_15_0,
        JobStatsFormat::Lustre2_15,
        JobStatsFormat::Master,
    ] {
        let printed = format!(
            "obdfilter.fs-OST0000.job_stats=\n{}obdfilter.fs-OST0001.job_stats=\n{}",
            render_job_stats([&a], format),
            render_job_stats([&b], format)
        );
        let garble = |after: &str, with: &str| {
            let mut lines: Vec<&str> = printed.lines().collect();
            let at = lines.iter().position(|l| l.contains(after)).unwrap();
            lines[at + 1] = with;
            lines.join("\n") + "\n"
        };
        // The line after dd.1's write_bytes (getattr or read) garbled, blanked, or turned
        // into a second write_bytes: read anyway by the agent, left out by the full parser.
        let write_line = printed.lines().find(|l| l.contains("write_bytes")).unwrap();
        for with in ["  getattr: { samples: x }", "", write_line] {
            let text = garble("write_bytes", with);
            let (osts, skipped) = parse_lctl_brw_lossy(&text, true).unwrap();
            assert_eq!((osts.len(), skipped), (2, 0), "{format:?} {text}");
            assert_eq!(osts[0].1[0].write, (1, 1 << 20));
            assert_eq!(osts[1].1[0].read, (1, 4096));
            let (full, full_skipped) = full_as_brw(&text).unwrap();
            assert_eq!((full[0].1.len(), full_skipped), (0, 1), "{format:?}");
        }
        // Garbled before the bulk counters are complete: both leave dd.1 out.
        let text = garble(
            "read_bytes",
            "  write_bytes: { samples: 1, unit: bytes, min: x }",
        );
        let (osts, skipped) = parse_lctl_brw_lossy(&text, true).unwrap();
        assert_eq!((osts[0].1.len(), osts[1].1.len(), skipped), (0, 1, 1));
        // A skim stops at the next OST's name even when its value is empty (2.17).
        let text = format!(
            "obdfilter.fs-OST0000.job_stats=\n{}obdfilter.fs-OST0002.job_stats=\n{}",
            render_job_stats([&a], format),
            render_job_stats([], format)
        );
        let (osts, _) = parse_lctl_brw_lossy(&text, true).unwrap();
        let names: Vec<&str> = osts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "obdfilter.fs-OST0000.job_stats",
                "obdfilter.fs-OST0002.job_stats"
            ]
        );
    }
}
