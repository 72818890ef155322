//! The summary of Lustre's `obdfilter-survey` (lustre-iokit), the survey sites run on their
//! OSTs when they commission them.
//!
//! The script drives `lctl test_brw` against each OST with sequential I/O, iterating over
//! record sizes, objects and threads (doubling each, threads a multiple of objects), and
//! prints one line per combination:
//!
//! ```text
//! ost <n> sz <total KiB>K rsz <record KiB> obj <objects> thr <threads> <test> <MiB/s> [<min>,<max>] ...
//! ```
//!
//! `n` is the number of OSTs surveyed; `obj` and `thr` are totals over all of them (so each
//! OST has `obj / n` objects and `thr / n` threads, `thr / obj` per object); the throughput
//! after each test name (`write`, `rewrite`, `read`, ...) is the aggregate over all OSTs in
//! MiB/s (the script divides KiB by 1024 per second), and the bracket holds the least and
//! greatest instantaneous rate seen on any one OST. A test that failed prints `ERROR` or
//! `SHORT` instead of a bracket; a combination skipped for its buffer size prints
//! `Too much buffer space`.

use crate::{Measured, Op, Pattern};

/// Largest summary read: a full survey is a few hundred lines.
pub const TEXT_LEN_MAX: usize = 4 << 20;
pub const ROWS_MAX: usize = 100_000;

/// One test of one line.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    pub name: String,
    /// Aggregate over all OSTs (MiB/s).
    pub total_mib_s: f64,
    /// Least and greatest instantaneous rate on one OST, or `None` when the test failed
    /// (`ERROR`, `SHORT`).
    pub per_ost_min_max_mib_s: Option<(f64, f64)>,
}

/// One line of the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// 1-based line number in the summary.
    pub line: usize,
    pub osts: u32,
    pub record_kib: u64,
    pub objects: u32,
    pub threads: u32,
    pub tests: Vec<Test>,
}

/// Parses a summary. Lines that are not survey lines (the date header, blank lines) are
/// skipped; a survey line that cannot be read is an error naming its line.
pub fn parse(text: &str) -> Result<Vec<Row>, String> {
    if text.len() > TEXT_LEN_MAX {
        return Err(format!(
            "summary is {} bytes; at most {TEXT_LEN_MAX} read",
            text.len()
        ));
    }
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if !trimmed.starts_with("ost ") {
            continue;
        }
        if rows.len() == ROWS_MAX {
            return Err(format!("more than {ROWS_MAX} survey lines"));
        }
        let at = |m: String| format!("line {line_no}: {m}");
        let mut cur = Cursor { s: trimmed };
        let mut field = |name: &str| -> Result<String, String> {
            let w = cur.word();
            if w != name {
                return Err(at(format!("expected `{name}`, found `{w}`")));
            }
            Ok(cur.word().to_string())
        };
        let int = |v: String, what: &str| -> Result<u64, String> {
            v.trim_end_matches(['K', 'k'])
                .parse::<u64>()
                .map_err(|_| at(format!("`{what}` is `{v}`, not a whole number")))
        };
        let osts = int(field("ost")?, "ost")?;
        let _total_kib = int(field("sz")?, "sz")?;
        let record_kib = int(field("rsz")?, "rsz")?;
        let objects = int(field("obj")?, "obj")?;
        let threads = int(field("thr")?, "thr")?;
        let small = |x: u64, what: &str| -> Result<u32, String> {
            u32::try_from(x)
                .ok()
                .filter(|&x| (1..=1 << 20).contains(&x))
                .ok_or_else(|| at(format!("`{what}` is {x} (allowed: 1..=1048576)")))
        };
        let (osts, objects, threads) = (
            small(osts, "ost")?,
            small(objects, "obj")?,
            small(threads, "thr")?,
        );
        if record_kib == 0 || record_kib > crate::SIZE_KIB_MAX {
            return Err(at(format!("`rsz` is {record_kib} KiB")));
        }
        if objects % osts != 0 || threads % objects != 0 {
            return Err(at(format!(
                "{objects} objects and {threads} threads over {osts} OSTs: the survey gives \
                 every OST the same objects and every object the same threads"
            )));
        }
        let mut tests = Vec::new();
        if cur.s.trim_start().starts_with("Too much buffer space") {
            rows.push(Row {
                line: line_no,
                osts,
                record_kib,
                objects,
                threads,
                tests,
            });
            continue;
        }
        loop {
            let name = cur.word();
            if name.is_empty() {
                break;
            }
            if !name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') || name.len() > 32 {
                return Err(at(format!("`{name}` is not a test name")));
            }
            let v = cur.word();
            let total_mib_s: f64 = v
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| at(format!("test `{name}`: throughput `{v}` is not a number")))?;
            let per_ost_min_max_mib_s = if cur.s.trim_start().starts_with('[') {
                let rest = cur.s.trim_start();
                let end = rest
                    .find(']')
                    .ok_or_else(|| at(format!("test `{name}`: `[` without `]`")))?;
                let inner = &rest[1..end];
                cur.s = &rest[end + 1..];
                let mut it = inner.split(',').map(|x| x.trim().parse::<f64>());
                match (it.next(), it.next(), it.next()) {
                    (Some(Ok(lo)), Some(Ok(hi)), None) => Some((lo, hi)),
                    _ => return Err(at(format!("test `{name}`: `[{inner}]` is not `[min,max]`"))),
                }
            } else {
                match cur.word() {
                    "ERROR" | "SHORT" => None,
                    w => return Err(at(format!("test `{name}`: `{w}` after the throughput"))),
                }
            };
            tests.push(Test {
                name: name.to_string(),
                total_mib_s,
                per_ost_min_max_mib_s,
            });
        }
        rows.push(Row {
            line: line_no,
            osts,
            record_kib,
            objects,
            threads,
            tests,
        });
    }
    if rows.is_empty() {
        return Err("no survey lines (`ost <n> sz ... rsz ... obj ... thr ...`) found".into());
    }
    Ok(rows)
}

struct Cursor<'a> {
    s: &'a str,
}

impl<'a> Cursor<'a> {
    fn word(&mut self) -> &'a str {
        let s = self.s.trim_start();
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        self.s = &s[end..];
        &s[..end]
    }
}

/// The survey's points, per OST: `write` and `read` become sequential points with
/// `objects / osts` streams and `threads / objects` requests outstanding on each (`rewrite`
/// and other tests are left out: the model has one write direction). Each point's mean
/// latency follows from Little's law (`threads × record / throughput`): the survey measures
/// no latency. A failed test, or a line skipped for buffer space, is refused, naming the
/// line: a profile comes only from a complete sweep.
pub fn measured(rows: &[Row]) -> Result<Vec<Measured>, String> {
    let mut out = Vec::new();
    for row in rows {
        if row.tests.is_empty() {
            return Err(format!(
                "line {}: the survey skipped {} threads of {} KiB (too much buffer space): the \
                 sweep is incomplete; rerun it with a smaller thrhi or rszhi",
                row.line, row.threads, row.record_kib
            ));
        }
        let streams = row.objects / row.osts;
        let queue_depth = row.threads / row.objects;
        for t in &row.tests {
            let op = match t.name.as_str() {
                "write" => Op::Write,
                "read" => Op::Read,
                _ => continue,
            };
            if t.per_ost_min_max_mib_s.is_none() || t.total_mib_s <= 0.0 {
                return Err(format!(
                    "line {}: test `{}` did not complete (ERROR or SHORT): the sweep is \
                     incomplete",
                    row.line, t.name
                ));
            }
            let per_ost_mib_s = t.total_mib_s / f64::from(row.osts);
            let outstanding = f64::from(row.threads / row.osts);
            let record_mib = row.record_kib as f64 / 1024.0;
            out.push(Measured {
                op,
                pattern: Pattern::Sequential,
                read_percent: None,
                size_kib: row.record_kib,
                queue_depth,
                streams,
                bandwidth_mib_s: per_ost_mib_s,
                latency_mean_us: outstanding * record_mib / per_ost_mib_s * 1e6,
                latency_quantiles_us: Vec::new(),
            });
        }
    }
    if out.is_empty() {
        return Err("the survey has no `write` or `read` test".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An obdfilter-survey summary in the layout the lustre-iokit script prints (2 OSTs,
    /// 1 MiB records, 1 to 16 objects and 1 to 64 threads per OST); its throughputs are an
    /// example, not a measurement.
    pub(crate) const SUMMARY: &str =
        include_str!("../tests/fixtures/obdfilter-survey-2ost.summary");

    #[test]
    fn parses_the_summary() {
        let rows = parse(SUMMARY).unwrap();
        assert_eq!(rows.len(), 25);
        let r = &rows[0];
        assert_eq!(
            (r.line, r.osts, r.record_kib, r.objects, r.threads),
            (2, 2, 1024, 2, 2)
        );
        assert_eq!(r.tests.len(), 3);
        assert_eq!(r.tests[0].name, "write");
        assert_eq!(r.tests[0].total_mib_s, 524.0);
        assert_eq!(r.tests[0].per_ost_min_max_mib_s, Some((214.84, 306.54)));
        // A bracket without a space after the comma (`[ 740.05,1055.92]`).
        let r = &rows[3];
        assert_eq!(r.tests[2].per_ost_min_max_mib_s, Some((740.05, 1055.92)));
        let last = rows.last().unwrap();
        assert_eq!((last.objects, last.threads), (32, 128));
    }

    #[test]
    fn points_are_per_ost() {
        let points = measured(&parse(SUMMARY).unwrap()).unwrap();
        // write and read of every line; rewrite left out.
        assert_eq!(points.len(), 50);
        let p = &points[0];
        assert_eq!((p.op, p.streams, p.queue_depth), (Op::Write, 1, 1));
        assert_eq!(p.bandwidth_mib_s, 262.0);
        // One request of 1 MiB outstanding at 262 MiB/s.
        assert!((p.latency_mean_us - 1e6 / 262.0).abs() < 1e-9);
        let p = points.iter().rev().find(|p| p.op == Op::Read).unwrap();
        assert_eq!((p.streams, p.queue_depth), (16, 4));
    }

    #[test]
    fn failed_or_skipped_tests_are_refused() {
        let short = SUMMARY.replacen(
            "read  602.80 [ 247.15, 352.64]",
            "read  602.80             SHORT",
            1,
        );
        assert_ne!(short, SUMMARY);
        let rows = parse(&short).unwrap();
        assert!(rows[0].tests[2].per_ost_min_max_mib_s.is_none());
        let e = measured(&rows).unwrap_err();
        assert!(e.contains("line 2") && e.contains("`read`"), "{e}");
        let skipped = format!(
            "{SUMMARY}ost  2 sz 33554432K rsz 1024 obj    2 thr 2048 Too much buffer space\n"
        );
        let e = measured(&parse(&skipped).unwrap()).unwrap_err();
        assert!(e.contains("line 27") && e.contains("buffer"), "{e}");
    }

    #[test]
    fn malformed_lines_name_their_line() {
        for (bad, want) in [
            (
                "ost  2 sz 1K rsz x obj 2 thr 2 write 1.0 [1.0,1.0]",
                "`rsz`",
            ),
            (
                "ost  2 sz 1K rsz 1024 obj 3 thr 3 write 1.0 [1.0,1.0]",
                "same objects",
            ),
            (
                "ost  2 sz 1K rsz 1024 obj 2 thr 2 write fast [1.0,1.0]",
                "not a number",
            ),
            (
                "ost  2 sz 1K rsz 1024 obj 2 thr 2 write 1.0 [1.0 1.0]",
                "[min,max]",
            ),
            ("ost  2 sz 1K rsz 1024 obj 2 thr 2 write 1.0 OK", "`OK`"),
            (
                "ost  0 sz 1K rsz 1024 obj 2 thr 2 write 1.0 [1,1]",
                "`ost` is 0",
            ),
        ] {
            let e = parse(&format!("header\n{bad}\n")).unwrap_err();
            assert!(e.starts_with("line 2:") && e.contains(want), "{bad}: {e}");
        }
        assert!(parse("nothing\n").unwrap_err().contains("no survey lines"));
    }
}
