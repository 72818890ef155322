//! What `pfsqos stat --agent HOST:PORT` shows of a running agent: the jobs held at an
//! administrator limit (who hit a limit, for how long, at which limit, moving how much) and
//! the jobs moving the most, read from the agent's Prometheus endpoint (`metrics_listen`);
//! and what `pfsqos stat --coordinator HOST:PORT` shows of a coordinator (rounds, reports,
//! views its controller refused, jobs held at a file-system-wide limit) from its endpoint.
//!
//! The endpoint is another process: its answer is read with a deadline and a size bound, and
//! every job id in it is data. Job ids come back from the label escaping
//! (`pfsqos_metrics::label_value`) and the exporters' job id form
//! (`pfsqos_metrics::job_id_of_exporter_label`) and are printed escaped (`escape_debug`), so a job id with
//! control characters cannot write to the terminal.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Longest metrics answer read (an agent lists at most `rules_max` (≤ 16384) jobs per
/// family, a few MiB).
pub const METRICS_LEN_BYTES_MAX: usize = 32 << 20;

/// One job as the agent reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobStatus {
    /// Seconds the job has been moving at least 90 % of its limit (`Some`: held now).
    pub held_s: Option<f64>,
    /// The limit it is held at, bytes/s.
    pub limit_bytes_per_s: Option<f64>,
    /// Bytes/s it moved through the OSS in the last period (jobs with a rule).
    pub observed_bytes_per_s: Option<f64>,
    /// The rate written for it, per CPT, and over how many CPTs.
    pub rate_per_cpt_rpcs_per_s: Option<f64>,
    pub cpts: Option<f64>,
}

/// An agent's state as its metrics tell it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentStatus {
    pub periods: Option<f64>,
    pub rules: Option<f64>,
    pub jobs_in_catch_all: Option<f64>,
    pub safe_state: Option<f64>,
    pub lctl_errors: Option<f64>,
    pub jobs: BTreeMap<String, JobStatus>,
}

/// Reads `GET /metrics` from `addr` within `timeout` (connect, and each read and write).
pub fn scrape(addr: SocketAddr, timeout: Duration) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: pfsqos\r\nAccept: application/openmetrics-text\r\nConnection: close\r\n\r\n")?;
    let mut raw = Vec::new();
    s.take(METRICS_LEN_BYTES_MAX as u64 + 1)
        .read_to_end(&mut raw)?;
    if raw.len() > METRICS_LEN_BYTES_MAX {
        return Err(std::io::Error::other(format!(
            "metrics answer longer than {METRICS_LEN_BYTES_MAX} bytes"
        )));
    }
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("not an HTTP answer"))?;
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(std::io::Error::other(format!(
            "metrics endpoint answered `{}`",
            status.escape_debug()
        )));
    }
    Ok(body.to_string())
}

/// A label value as `label_value` escaped it, unescaped; `None` if malformed.
fn unescape_label(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                'n' => out.push('\n'),
                _ => return None,
            },
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// `name{job="..."} value` -> (name, job, value); `name value` -> (name, None, value).
fn sample_line(line: &str) -> Option<(&str, Option<String>, f64)> {
    if line.starts_with('#') {
        return None;
    }
    let (series, value) = line.rsplit_once(' ')?;
    let value: f64 = value.parse().ok()?;
    match series.split_once('{') {
        None => Some((series, None, value)),
        Some((name, labels)) => {
            let labels = labels.strip_suffix('}')?;
            let job = labels.strip_prefix("job=\"")?.strip_suffix('"')?;
            let label = unescape_label(job)?;
            Some((
                name,
                Some(pfsqos_metrics::job_id_of_exporter_label(&label)),
                value,
            ))
        }
    }
}

/// Reads an agent's metrics text (malformed lines are skipped; at most 65,536 jobs kept).
pub fn parse(text: &str) -> AgentStatus {
    const JOBS_MAX: usize = 1 << 16;
    let mut st = AgentStatus::default();
    for line in text.lines() {
        let Some((name, job, v)) = sample_line(line) else {
            continue;
        };
        match (name, job) {
            ("pfsqos_agent_periods_total", None) => st.periods = Some(v),
            ("pfsqos_agent_rules", None) => st.rules = Some(v),
            ("pfsqos_agent_jobs_in_catch_all", None) => st.jobs_in_catch_all = Some(v),
            ("pfsqos_agent_safe_state", None) => st.safe_state = Some(v),
            ("pfsqos_agent_lctl_errors_total", None) => st.lctl_errors = Some(v),
            (name, Some(job)) => {
                if !st.jobs.contains_key(&job) && st.jobs.len() >= JOBS_MAX {
                    continue;
                }
                let field: fn(&mut JobStatus) -> &mut Option<f64> = match name {
                    "pfsqos_agent_job_held_seconds" => |j: &mut JobStatus| &mut j.held_s,
                    "pfsqos_agent_job_held_limit_bytes_per_second" => {
                        |j: &mut JobStatus| &mut j.limit_bytes_per_s
                    }
                    "pfsqos_agent_job_observed_bytes_per_second" => {
                        |j: &mut JobStatus| &mut j.observed_bytes_per_s
                    }
                    "pfsqos_agent_job_rate_rpcs_per_second" => {
                        |j: &mut JobStatus| &mut j.rate_per_cpt_rpcs_per_s
                    }
                    "pfsqos_agent_job_cpts" => |j: &mut JobStatus| &mut j.cpts,
                    _ => continue,
                };
                *field(st.jobs.entry(job).or_default()) = Some(v);
            }
            _ => {}
        }
    }
    st
}

fn rate(bytes_per_s: Option<f64>) -> String {
    match bytes_per_s {
        Some(b) => format!("{:.1} MiB/s", b / (1u64 << 20) as f64),
        None => "-".to_string(),
    }
}

/// The text `pfsqos stat --agent` prints for one agent: a header line, the held jobs (longest
/// held first), then the `top` jobs moving the most.
pub fn render(agent: &str, st: &AgentStatus, top: usize) -> String {
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v}"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "agent {}: periods {}, rules {}, jobs under the catch-all {}, lctl errors {}{}",
        agent.escape_debug(),
        num(st.periods),
        num(st.rules),
        num(st.jobs_in_catch_all),
        num(st.lctl_errors),
        if st.safe_state == Some(1.0) {
            ", SAFE STATE (coordinator silent: its rules removed)"
        } else {
            ""
        }
    );
    render_held(&mut out, &st.jobs);
    let moving = moving_jobs(&st.jobs);
    if !moving.is_empty() && top > 0 {
        let _ = writeln!(
            out,
            "top jobs:\n  {:<32} {:>14} {:>18}",
            "job", "moving", "rate per CPT"
        );
        for (job, j) in moving.into_iter().take(top) {
            let rate_text = match (j.rate_per_cpt_rpcs_per_s, j.cpts) {
                (Some(r), Some(k)) => format!("{r} RPC/s x {k}"),
                (Some(r), None) => format!("{r} RPC/s"),
                _ => "-".to_string(),
            };
            let _ = writeln!(
                out,
                "  {:<32} {:>14} {:>18}",
                job.escape_debug().to_string(),
                rate(j.observed_bytes_per_s),
                rate_text
            );
        }
    }
    out
}

/// A coordinator's state as its metrics tell it (`pfsqos stat --coordinator HOST:PORT`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoordinatorStatus {
    pub rounds: Option<f64>,
    pub reports_accepted: Option<f64>,
    pub reports_refused: Option<f64>,
    /// Rounds whose view the controller refused (nothing decided).
    pub rejected_observations: Option<f64>,
    pub domains: Option<f64>,
    pub jobs_in_view: Option<f64>,
    /// Jobs under a file-system-wide limit: held for how long, at which limit (held jobs) and
    /// what they moved over the file system.
    pub jobs: BTreeMap<String, JobStatus>,
}

/// Reads a coordinator's metrics text (malformed lines skipped; at most 65,536 jobs kept).
pub fn parse_coordinator(text: &str) -> CoordinatorStatus {
    const JOBS_MAX: usize = 1 << 16;
    let mut st = CoordinatorStatus::default();
    for line in text.lines() {
        let Some((name, job, v)) = sample_line(line) else {
            continue;
        };
        match (name, job) {
            ("pfsqos_coordinator_rounds_total", None) => st.rounds = Some(v),
            ("pfsqos_coordinator_reports_accepted_total", None) => st.reports_accepted = Some(v),
            ("pfsqos_coordinator_reports_refused_total", None) => st.reports_refused = Some(v),
            ("pfsqos_coordinator_rejected_observations_total", None) => {
                st.rejected_observations = Some(v)
            }
            ("pfsqos_coordinator_domains", None) => st.domains = Some(v),
            ("pfsqos_coordinator_jobs", None) => st.jobs_in_view = Some(v),
            (name, Some(job)) => {
                if !st.jobs.contains_key(&job) && st.jobs.len() >= JOBS_MAX {
                    continue;
                }
                let field: fn(&mut JobStatus) -> &mut Option<f64> = match name {
                    "pfsqos_coordinator_job_held_seconds" => |j: &mut JobStatus| &mut j.held_s,
                    "pfsqos_coordinator_job_held_limit_bytes_per_second" => {
                        |j: &mut JobStatus| &mut j.limit_bytes_per_s
                    }
                    "pfsqos_coordinator_job_limited_observed_bytes_per_second" => {
                        |j: &mut JobStatus| &mut j.observed_bytes_per_s
                    }
                    _ => continue,
                };
                *field(st.jobs.entry(job).or_default()) = Some(v);
            }
            _ => {}
        }
    }
    st
}

/// The held-jobs table of `pfsqos stat` (longest held first).
/// The jobs moving bytes, fastest first (ties by name).
fn moving_jobs(jobs: &BTreeMap<String, JobStatus>) -> Vec<(&String, &JobStatus)> {
    let mut moving: Vec<(&String, &JobStatus)> = jobs
        .iter()
        .filter(|(_, j)| j.observed_bytes_per_s.is_some_and(|b| b > 0.0))
        .collect();
    moving.sort_by(|a, b| {
        b.1.observed_bytes_per_s
            .partial_cmp(&a.1.observed_bytes_per_s)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(b.0))
    });
    moving
}

fn render_held(out: &mut String, jobs: &BTreeMap<String, JobStatus>) {
    let mut held: Vec<(&String, &JobStatus)> =
        jobs.iter().filter(|(_, j)| j.held_s.is_some()).collect();
    held.sort_by(|a, b| {
        b.1.held_s
            .partial_cmp(&a.1.held_s)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(b.0))
    });
    if held.is_empty() {
        out.push_str("held at a limit: none\n");
    } else {
        let _ = writeln!(
            out,
            "held at a limit ({}):\n  {:<32} {:>10} {:>14} {:>14}",
            held.len(),
            "job",
            "held for",
            "limit",
            "moving"
        );
        for (job, j) in held {
            let _ = writeln!(
                out,
                "  {:<32} {:>8.1} s {:>14} {:>14}",
                job.escape_debug().to_string(),
                j.held_s.unwrap_or(0.0),
                rate(j.limit_bytes_per_s),
                rate(j.observed_bytes_per_s)
            );
        }
    }
}

/// The text `pfsqos stat --coordinator` prints: a header line (rounds, reports, views the
/// controller refused, the last view's size), the jobs held at a file-system-wide limit, then
/// the `top` limited jobs moving the most over the file system.
pub fn render_coordinator(coordinator: &str, st: &CoordinatorStatus, top: usize) -> String {
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v}"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "coordinator {}: rounds {}, reports {} taken {} refused, rejected observations {}, \
         last view {} OSSs {} jobs",
        coordinator.escape_debug(),
        num(st.rounds),
        num(st.reports_accepted),
        num(st.reports_refused),
        num(st.rejected_observations),
        num(st.domains),
        num(st.jobs_in_view),
    );
    render_held(&mut out, &st.jobs);
    let moving = moving_jobs(&st.jobs);
    if !moving.is_empty() && top > 0 {
        let _ = writeln!(
            out,
            "limited jobs moving the most:\n  {:<32} {:>14}",
            "job", "moving"
        );
        for (job, j) in moving.into_iter().take(top) {
            let _ = writeln!(
                out,
                "  {:<32} {:>14}",
                job.escape_debug().to_string(),
                rate(j.observed_bytes_per_s)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AgentStats, Held, JobRateStat};
    use crate::metrics::{render as render_metrics, AgentSample};
    use pfsqos_core::model::JobId;

    /// The agent's own metrics text read back: held jobs with their limit and time, rates,
    /// and a job id with a quote, a backslash and a space survives the label escaping and is
    /// printed escaped.
    #[test]
    fn held_jobs_are_read_back_from_the_agents_metrics() {
        let odd = JobId::new("we\"ird\\job x").unwrap();
        let plain = JobId::new("dd.500").unwrap();
        let mut stats = AgentStats {
            periods: 7,
            rules_held: 2,
            ..AgentStats::default()
        };
        for (job, held_s, limit) in [(plain, 12.5, 100 << 20), (odd, 3.0, 4096)] {
            stats.held.insert(
                job,
                Held {
                    since_ns: 0,
                    limit_bytes_per_s: limit,
                    held_ns: (held_s * 1e9) as u64,
                },
            );
        }
        stats.job_rates.insert(
            plain,
            JobRateStat {
                rate_per_cpt_rpcs_per_s: 50,
                cpts: 2,
                observed_bytes_per_s: 99.0 * (1u64 << 20) as f64,
            },
        );
        let text = render_metrics(AgentSample {
            stats,
            ..AgentSample::default()
        });
        let st = parse(&text);
        assert_eq!(st.periods, Some(7.0));
        assert_eq!(st.rules, Some(2.0));
        let p = &st.jobs["dd.500"];
        assert_eq!(p.held_s, Some(12.5));
        assert_eq!(p.limit_bytes_per_s, Some((100u64 << 20) as f64));
        assert_eq!(p.cpts, Some(2.0));
        let o = &st.jobs["we\"ird\\job x"];
        assert_eq!((o.held_s, o.limit_bytes_per_s), (Some(3.0), Some(4096.0)));
        let shown = render("oss1:9101", &st, 5);
        assert!(shown.contains("held at a limit (2):"), "{shown}");
        let lines: Vec<&str> = shown.lines().collect();
        // Longest held first; the odd id escaped on one line.
        assert!(lines[3].trim_start().starts_with("dd.500"), "{shown}");
        assert!(lines[3].contains("12.5 s") && lines[3].contains("100.0 MiB/s"));
        assert!(lines[3].contains("99.0 MiB/s"), "{shown}");
        assert!(lines[4].contains(r#"we\"ird\\job x"#), "{shown}");
        assert!(shown.contains("top jobs:"));
        assert!(shown.contains("50 RPC/s x 2"));
        assert_eq!(shown.lines().count(), 8, "{shown}");
    }

    /// The coordinator's own metrics text read back: rounds, refusals, held jobs.
    #[test]
    fn the_coordinators_metrics_are_read_back() {
        let job = JobId::new("dd.500").unwrap();
        let mut stats = crate::coord::CoordStats {
            rounds: 12,
            reports_accepted: 24,
            reports_refused: 1,
            rejected_observations: 3,
            domains: 2,
            jobs: 5,
            ..Default::default()
        };
        stats.held.insert(
            job,
            Held {
                since_ns: 0,
                limit_bytes_per_s: 1 << 30,
                held_ns: 4_000_000_000,
            },
        );
        stats
            .limited_observed_bytes_per_s
            .insert(job, 1000.0 * (1u64 << 20) as f64);
        let st = parse_coordinator(&crate::metrics::render_coordinator(stats));
        assert_eq!(
            (
                st.rounds,
                st.rejected_observations,
                st.domains,
                st.jobs_in_view
            ),
            (Some(12.0), Some(3.0), Some(2.0), Some(5.0))
        );
        assert_eq!(
            (st.reports_accepted, st.reports_refused),
            (Some(24.0), Some(1.0))
        );
        assert_eq!(st.jobs["dd.500"].held_s, Some(4.0));
        let shown = render_coordinator("c:9191", &st, 3);
        assert!(
            shown.starts_with(
                "coordinator c:9191: rounds 12, reports 24 taken 1 refused, rejected observations 3, last view 2 OSSs 5 jobs\n"
            ),
            "{shown}"
        );
        assert!(shown.contains("held at a limit (1):"), "{shown}");
        assert!(shown.contains("1024.0 MiB/s") && shown.contains("1000.0 MiB/s"));
        assert!(shown.contains("limited jobs moving the most:"), "{shown}");
        // An agent's text is not a coordinator's.
        assert_eq!(
            parse_coordinator("pfsqos_agent_periods_total 3\n").rounds,
            None
        );
    }

    #[test]
    fn malformed_metrics_lines_are_skipped() {
        let text = "# HELP x\npfsqos_agent_job_held_seconds{job=\"a\\q\"} 1\n\
                    pfsqos_agent_job_held_seconds{job=\"b\"} nan?\n\
                    pfsqos_agent_job_held_seconds{job=\"c\"\"} 1\n\
                    pfsqos_agent_job_held_seconds{job=\"ok\"} 2\ngarbage\n";
        let st = parse(text);
        assert_eq!(st.jobs.len(), 1, "{st:?}");
        assert_eq!(st.jobs["ok"].held_s, Some(2.0));
        assert!(render("a", &AgentStatus::default(), 3).contains("held at a limit: none"));
    }
}
