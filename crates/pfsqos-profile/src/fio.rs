//! fio's JSON output (`--output-format=json`, fio 3.x), reduced to what a profile needs.
//!
//! One run is one job section with `--group_reporting` (the calibration always passes it, so
//! several `numjobs` streams are reported together). A run fio could not complete (its
//! `error` is not 0, or a direction it was asked for moved no data) is refused.

use serde_json::Value;

/// Largest fio output read: a run's JSON with percentiles is a few KiB.
pub const OUTPUT_LEN_MAX: usize = 1 << 20;

/// One direction of a fio run.
#[derive(Clone, Debug, PartialEq)]
pub struct Direction {
    pub io_bytes: u64,
    pub bandwidth_bytes_per_s: f64,
    pub iops: f64,
    /// Mean of submission plus completion latency (`lat_ns.mean`).
    pub latency_mean_us: f64,
    /// Completion-latency percentiles (`clat_ns.percentile`) as `[quantile, us]`, ascending.
    pub latency_quantiles_us: Vec<[f64; 2]>,
}

/// A fio run: the directions that moved data.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub read: Option<Direction>,
    pub write: Option<Direction>,
}

/// Parses fio's JSON output. Lines fio prints before the JSON (warnings) are skipped.
pub fn parse(text: &str) -> Result<Run, String> {
    if text.len() > OUTPUT_LEN_MAX {
        return Err(format!(
            "fio output is {} bytes; at most {OUTPUT_LEN_MAX} read",
            text.len()
        ));
    }
    let start = text
        .find('{')
        .ok_or("fio output holds no JSON object (was --output-format=json given?)")?;
    let v: Value =
        serde_json::from_str(&text[start..]).map_err(|e| format!("fio output is not JSON: {e}"))?;
    let jobs = v
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or("fio output has no `jobs` array")?;
    if jobs.len() != 1 {
        return Err(format!(
            "fio output has {} job sections; run fio with --group_reporting so a run reports once",
            jobs.len()
        ));
    }
    let job = &jobs[0];
    let error = job.get("error").and_then(Value::as_i64).unwrap_or(-1);
    if error != 0 {
        return Err(format!(
            "fio reported error {error} for job `{}`: the run did not complete",
            job.get("jobname").and_then(Value::as_str).unwrap_or("?")
        ));
    }
    Ok(Run {
        read: direction(job, "read")?,
        write: direction(job, "write")?,
    })
}

fn direction(job: &Value, name: &str) -> Result<Option<Direction>, String> {
    let Some(d) = job.get(name) else {
        return Ok(None);
    };
    let num = |v: Option<&Value>, what: &str| -> Result<f64, String> {
        let x = v
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("fio output: `{name}.{what}` is missing or not a number"))?;
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(format!(
                "fio output: `{name}.{what}` is {x} (allowed: finite, >= 0)"
            ))
        }
    };
    let io_bytes = num(d.get("io_bytes"), "io_bytes")? as u64;
    if io_bytes == 0 {
        return Ok(None);
    }
    let short = num(d.get("short_ios"), "short_ios").unwrap_or(0.0);
    if short > 0.0 {
        return Err(format!(
            "fio output: {short} short {name}s: the run did not complete"
        ));
    }
    let bandwidth_bytes_per_s = num(d.get("bw_bytes"), "bw_bytes")?;
    let iops = num(d.get("iops"), "iops")?;
    if bandwidth_bytes_per_s <= 0.0 || iops <= 0.0 {
        return Err(format!(
            "fio output: `{name}` moved {io_bytes} bytes at 0 bytes/s: the run did not complete"
        ));
    }
    let latency_mean_us = num(d.get("lat_ns").and_then(|l| l.get("mean")), "lat_ns.mean")? / 1e3;
    let mut latency_quantiles_us = Vec::new();
    if let Some(p) = d
        .get("clat_ns")
        .and_then(|c| c.get("percentile"))
        .and_then(Value::as_object)
    {
        for (k, v) in p {
            let q: f64 = k
                .parse()
                .map_err(|_| format!("fio output: percentile key `{k}` is not a number"))?;
            let ns = num(Some(v), &format!("clat_ns.percentile.{k}"))?;
            if !(q > 0.0 && q < 100.0) {
                return Err(format!("fio output: percentile {q} outside (0, 100)"));
            }
            latency_quantiles_us.push([q / 100.0, ns / 1e3]);
        }
        latency_quantiles_us.sort_by(|a, b| a[0].total_cmp(&b[0]));
        latency_quantiles_us.dedup_by(|b, a| a[0] == b[0]);
        // fio's percentiles come from a histogram, so they are non-decreasing; keep that
        // property even if a bin edge rounds the other way.
        for i in 1..latency_quantiles_us.len() {
            if latency_quantiles_us[i][1] < latency_quantiles_us[i - 1][1] {
                latency_quantiles_us[i][1] = latency_quantiles_us[i - 1][1];
            }
        }
    }
    if latency_mean_us <= 0.0 {
        return Err(format!("fio output: `{name}` has a mean latency of 0"));
    }
    Ok(Some(Direction {
        io_bytes,
        bandwidth_bytes_per_s,
        iops,
        latency_mean_us,
        latency_quantiles_us,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANDREAD: &str = include_str!("../tests/fixtures/fio-randread-4k-qd4.json");

    #[test]
    fn parses_a_real_fio_run() {
        let run = parse(RANDREAD).unwrap();
        assert!(run.write.is_none());
        let r = run.read.unwrap();
        assert_eq!(r.io_bytes, 136_257_536);
        assert_eq!(r.bandwidth_bytes_per_s, 134_641_833.0);
        assert!((r.iops - 32_871.541502).abs() < 1e-6);
        assert_eq!(r.latency_quantiles_us.len(), 10);
        assert_eq!(r.latency_quantiles_us[4], [0.5, 74.24]);
        assert!(r
            .latency_quantiles_us
            .windows(2)
            .all(|w| w[0][0] < w[1][0] && w[0][1] <= w[1][1]));
    }

    #[test]
    fn warnings_before_the_json_are_skipped() {
        let text = format!("fio: note: both iodepth >= 1 and synchronous I/O engine\n{RANDREAD}");
        assert_eq!(parse(&text).unwrap(), parse(RANDREAD).unwrap());
    }

    #[test]
    fn a_run_that_did_not_complete_is_refused() {
        let failed = RANDREAD.replacen("\"error\" : 0", "\"error\" : 5", 1);
        assert_ne!(failed, RANDREAD, "the fixture has an error field");
        assert!(parse(&failed).unwrap_err().contains("error 5"));
        let short = RANDREAD.replacen("\"short_ios\" : 0", "\"short_ios\" : 3", 1);
        assert_ne!(short, RANDREAD);
        assert!(parse(&short).unwrap_err().contains("did not complete"));
        let stalled = RANDREAD.replacen("\"bw_bytes\" : 134641833", "\"bw_bytes\" : 0", 1);
        assert_ne!(stalled, RANDREAD);
        assert!(parse(&stalled).unwrap_err().contains("did not complete"));
        assert!(parse("no json here").is_err());
        assert!(parse("{\"jobs\": [{}, {}]}")
            .unwrap_err()
            .contains("group_reporting"));
    }
}
