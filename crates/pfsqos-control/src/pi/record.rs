//! The record file of a live control loop (PI paper §4.2, §5.2: a site runs the open-loop
//! experiment on its own system and identifies eq. 1 from it): one CSV row per sampling
//! period, the per-client limit in force during the period and the queue measured at its
//! end, the same pair [`super::open_loop_periods`] takes from a simulated run's trace.
//!
//! ```text
//! time_s,limit_bytes_per_s,queue_rpcs
//! 0.300,2097152,0.000
//! 0.600,2097152,0.415
//! ```
//!
//! `time_s` is the period's end, seconds since the loop started (strictly increasing);
//! `limit_bytes_per_s` a positive integer; `queue_rpcs` a finite number at least 0. Lines
//! starting with `#` and empty lines are ignored. The file comes from a daemon or a user:
//! every field is checked and an error names its line.

use std::fmt;

use super::OpenLoopPeriod;

/// The header, the first line that is not a comment.
pub const RECORD_HEADER: &str = "time_s,limit_bytes_per_s,queue_rpcs";

/// Most rows a record may hold (a day at 100 ms periods is 864,000); a writer stops there.
pub const RECORD_ROWS_MAX: usize = 1_000_000;

/// One row of a record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecordRow {
    pub time_s: f64,
    pub period: OpenLoopPeriod,
}

/// A row as the writer prints it (millisecond and milli-request resolution), newline ended.
pub fn format_row(time_s: f64, period: &OpenLoopPeriod) -> String {
    assert!(time_s.is_finite() && time_s >= 0.0, "time {time_s}");
    assert!(
        period.queue_rpcs.is_finite() && period.queue_rpcs >= 0.0,
        "queue {}",
        period.queue_rpcs
    );
    format!(
        "{time_s:.3},{},{:.3}\n",
        period.limit_bytes_per_s, period.queue_rpcs
    )
}

/// Why a record cannot be read.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordError {
    /// 1-based; 0 for the file as a whole.
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "line {}: {}", self.line, self.reason)
        }
    }
}

impl std::error::Error for RecordError {}

/// Parses a record (module doc).
pub fn parse_record(text: &str) -> Result<Vec<RecordRow>, RecordError> {
    let mut rows: Vec<RecordRow> = Vec::new();
    let mut header_seen = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let err = |reason: String| RecordError { line: n, reason };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !header_seen {
            if line != RECORD_HEADER {
                return Err(err(format!(
                    "expected the header `{RECORD_HEADER}`, found {:?}",
                    cut(line)
                )));
            }
            header_seen = true;
            continue;
        }
        if rows.len() >= RECORD_ROWS_MAX {
            return Err(err(format!("more than {RECORD_ROWS_MAX} rows")));
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 3 {
            return Err(err(format!(
                "{} fields, not 3 ({RECORD_HEADER}): {:?}",
                fields.len(),
                cut(line)
            )));
        }
        let time_s: f64 = fields[0]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| err(format!("time_s {:?} is not a time >= 0", cut(fields[0]))))?;
        let limit_bytes_per_s: u64 =
            fields[1].parse().ok().filter(|l| *l > 0).ok_or_else(|| {
                err(format!(
                    "limit_bytes_per_s {:?} is not a positive integer",
                    cut(fields[1])
                ))
            })?;
        let queue_rpcs: f64 = fields[2]
            .parse()
            .ok()
            .filter(|q: &f64| q.is_finite() && *q >= 0.0)
            .ok_or_else(|| {
                err(format!(
                    "queue_rpcs {:?} is not a number >= 0",
                    cut(fields[2])
                ))
            })?;
        if let Some(last) = rows.last() {
            if time_s <= last.time_s {
                return Err(err(format!(
                    "time_s {time_s} does not follow {} (times must increase)",
                    last.time_s
                )));
            }
        }
        rows.push(RecordRow {
            time_s,
            period: OpenLoopPeriod {
                limit_bytes_per_s,
                queue_rpcs,
            },
        });
    }
    if !header_seen {
        return Err(RecordError {
            line: 0,
            reason: format!("empty record: no `{RECORD_HEADER}` header"),
        });
    }
    Ok(rows)
}

/// The median time between consecutive rows, seconds: the sampling time the record was
/// taken at (a late wake-up of the loop moves one interval, not the median). `None` for
/// fewer than two rows.
pub fn median_interval_s(rows: &[RecordRow]) -> Option<f64> {
    let mut gaps: Vec<f64> = rows.windows(2).map(|w| w[1].time_s - w[0].time_s).collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    Some(gaps[gaps.len() / 2])
}

/// A field cut to 40 characters for an error message (the file is untrusted input).
fn cut(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(limit_bytes_per_s: u64, queue_rpcs: f64) -> OpenLoopPeriod {
        OpenLoopPeriod {
            limit_bytes_per_s,
            queue_rpcs,
        }
    }

    #[test]
    fn rows_written_read_back() {
        let mut text = format!("# pfsqos ossd control record\n{RECORD_HEADER}\n");
        text += &format_row(0.3, &period(2 << 20, 0.0));
        text += &format_row(0.6004, &period(2 << 20, 1.25));
        text += "\n";
        text += &format_row(0.9, &period(4 << 20, 3.5));
        let rows = parse_record(&text).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.period).collect::<Vec<_>>(),
            vec![
                period(2 << 20, 0.0),
                period(2 << 20, 1.25),
                period(4 << 20, 3.5)
            ]
        );
        assert_eq!(rows[1].time_s, 0.6);
        let ts = median_interval_s(&rows).unwrap();
        assert!((ts - 0.3).abs() < 1e-9, "{ts}");
        assert_eq!(median_interval_s(&rows[..1]), None);
    }

    #[test]
    fn malformed_records_name_the_line() {
        let h = RECORD_HEADER;
        for (text, line, needle) in [
            ("", 0, "header"),
            ("# only a comment\n", 0, "header"),
            ("time,limit\n0.3,1,1\n", 1, "expected the header"),
            (&format!("{h}\n0.3,1\n") as &str, 2, "2 fields"),
            (&format!("{h}\n0.3,1,1,1\n"), 2, "4 fields"),
            (&format!("{h}\nx,1,1\n"), 2, "time_s"),
            (&format!("{h}\n-1,1,1\n"), 2, "time_s"),
            (&format!("{h}\nNaN,1,1\n"), 2, "time_s"),
            (&format!("{h}\n0.3,0,1\n"), 2, "limit_bytes_per_s"),
            (&format!("{h}\n0.3,1.5,1\n"), 2, "limit_bytes_per_s"),
            (&format!("{h}\n0.3,1,-2\n"), 2, "queue_rpcs"),
            (&format!("{h}\n0.3,1,inf\n"), 2, "queue_rpcs"),
            (&format!("{h}\n0.3,1,1\n0.3,1,1\n"), 3, "increase"),
        ] {
            let e = parse_record(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(needle), "{text:?}: {e}");
        }
        // An untrusted field is cut in the message.
        let e = parse_record(&format!("{h}\n{},1,1\n", "x".repeat(10_000))).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");
    }
}
