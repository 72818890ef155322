//! The agent's Prometheus metrics (served by `pfsqos_metrics::MetricsServer` at
//! `metrics_listen`): what it wrote, what lctl did, how long deciding took, per-job rates and
//! who is held at an administrator limit. Job labels are the ids as the Lustre exporters label
//! them (`pfsqos_metrics::job_label_value`: `job 1` is `job\x201`), escaped, and bounded by `rules_max` (rates) and the limits' jobs.
//!
//! Families: `pfsqos_agent_periods_total`, `pfsqos_agent_periods_skipped_total`,
//! `pfsqos_agent_job_stats_nameless_total`,
//! `pfsqos_agent_rule_writes_total{op=start|change|stop}`, `pfsqos_agent_writes_refused_total`,
//! `pfsqos_agent_names_taken_total`,
//! `pfsqos_agent_lctl_commands_total`, `pfsqos_agent_lctl_errors_total` (failed attempts),
//! `pfsqos_agent_lctl_timeouts_total`, `pfsqos_agent_lctl_failed_commands_total`,
//! `pfsqos_agent_job_stats_restarts_total`, `pfsqos_agent_rules_adopted_total`,
//! `pfsqos_agent_stale_rules_removed_total`, `pfsqos_agent_coordinator_errors_total`,
//! `pfsqos_agent_safe_state`, `pfsqos_agent_decision_seconds`,
//! `pfsqos_agent_rules` (held now, catch-all included), `pfsqos_agent_jobs_in_catch_all`,
//! `pfsqos_agent_jobs_unnamable` (of those, jobs whose id cannot be a TBF rule),
//! `pfsqos_agent_slurm_jobs`, `pfsqos_agent_slurm_queries_failed_total`,
//! `pfsqos_agent_job_rate_rpcs_per_second{job}` (per CPT), `pfsqos_agent_job_cpts{job}`,
//! `pfsqos_agent_job_observed_bytes_per_second{job}`, `pfsqos_agent_job_held_seconds{job}`,
//! `pfsqos_agent_job_held_limit_bytes_per_second{job}`.

use std::fmt;

use pfsqos_metrics::job_label_value;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::agent::AgentStats;
use crate::lctl::LctlCounts;

/// The agent's values at scrape time.
#[derive(Clone, Debug, Default)]
pub struct AgentSample {
    pub stats: AgentStats,
    pub lctl: LctlCounts,
}

pub struct AgentCollector(pub AgentSample);

impl fmt::Debug for AgentCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AgentCollector")
    }
}

fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> fmt::Result {
    let m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    ConstCounter::new(v).encode(m)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> fmt::Result {
    let m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(v).encode(m)
}

impl Collector for AgentCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), fmt::Error> {
        let s = &self.0.stats;
        let l = &self.0.lctl;
        counter(
            &mut e,
            "pfsqos_agent_periods",
            "Periods observed and decided.",
            s.periods,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_periods_skipped",
            "Periods whose job_stats could not be read (rules kept).",
            s.periods_skipped,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_job_stats_nameless",
            "Periods whose job_stats came without parameter names (refused: which OST is unknown).",
            s.job_stats_nameless,
        )?;
        {
            let mut f = e.encode_descriptor(
                "pfsqos_agent_rule_writes",
                "nrs_tbf_rule writes applied, by operation.",
                None,
                MetricType::Counter,
            )?;
            for (op, v) in [
                ("start", s.rules_started),
                ("change", s.rules_changed),
                ("stop", s.rules_stopped),
            ] {
                ConstCounter::new(v).encode(f.encode_family(&[("op", op)])?)?;
            }
        }
        counter(
            &mut e,
            "pfsqos_agent_writes_refused",
            "Rule writes Lustre refused or lctl failed.",
            s.writes_refused,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_names_taken",
            "Rule starts refused because another rule (an administrator's) holds the name; \
             each such job is renamed once.",
            s.names_taken,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_lctl_commands",
            "lctl commands run.",
            l.commands,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_lctl_errors",
            "lctl attempts that failed (retries included).",
            l.errors,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_lctl_timeouts",
            "lctl attempts killed at the timeout.",
            l.timeouts,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_lctl_failed_commands",
            "lctl commands that failed after every retry.",
            l.failed_commands,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_job_stats_restarts",
            "job_stats entries seen restarted (start_time changed or counters down).",
            s.job_stats_restarts,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_rules_adopted",
            "Rules left by an earlier instance taken over with a change.",
            s.rules_adopted,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_stale_rules_removed",
            "Rules left by an earlier instance stopped.",
            s.stale_rules_removed,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_coordinator_errors",
            "Failed exchanges with the coordinator (coordinated agents).",
            s.coordinator_errors,
        )?;
        gauge(
            &mut e,
            "pfsqos_agent_safe_state",
            "1 while the coordinator has been silent past safe_hold_ms and its rules are removed.",
            f64::from(u8::from(s.safe_state)),
        )?;
        gauge(
            &mut e,
            "pfsqos_agent_decision_seconds",
            "Time the last period took from job_stats text to rule diff.",
            s.last_decision_ns as f64 / 1e9,
        )?;
        gauge(
            &mut e,
            "pfsqos_agent_rules",
            "Rules the agent holds now (catch-all included).",
            s.rules_held as f64,
        )?;
        gauge(
            &mut e,
            "pfsqos_agent_jobs_in_catch_all",
            "Jobs beyond rules_max, under the catch-all rule.",
            s.jobs_in_catch_all as f64,
        )?;
        gauge(
            &mut e,
            "pfsqos_agent_jobs_unnamable",
            "Jobs whose id holds TBF syntax (no rule of their own), under the catch-all rule.",
            s.jobs_unnamable as f64,
        )?;
        gauge(
            &mut e,
            "pfsqos_agent_slurm_jobs",
            "Running jobs in the last squeue answer ([slurm]).",
            s.slurm_jobs as f64,
        )?;
        counter(
            &mut e,
            "pfsqos_agent_slurm_queries_failed",
            "squeue runs that failed ([slurm]); the last job facts were kept.",
            s.slurm_queries_failed,
        )?;
        for (name, help, pick) in [
            (
                "pfsqos_agent_job_rate_rpcs_per_second",
                "Rate written for a job's rule, per CPU partition (RPC/s).",
                0,
            ),
            (
                "pfsqos_agent_job_cpts",
                "CPU partitions a job's rate is divided over.",
                1,
            ),
            (
                "pfsqos_agent_job_observed_bytes_per_second",
                "Bytes/s a job moved through this OSS in the last period.",
                2,
            ),
        ] {
            let mut f = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (job, r) in &s.job_rates {
                let v = match pick {
                    0 => r.rate_per_cpt_rpcs_per_s as f64,
                    1 => f64::from(r.cpts),
                    _ => r.observed_bytes_per_s,
                };
                let job = job_label_value(job.as_str());
                ConstGauge::new(v).encode(f.encode_family(&[("job", job.as_str())])?)?;
            }
        }
        {
            let mut f = e.encode_descriptor(
                "pfsqos_agent_job_held_seconds",
                "How long a job has been moving at least 90% of its administrator limit.",
                None,
                MetricType::Gauge,
            )?;
            for (job, h) in &s.held {
                let job = job_label_value(job.as_str());
                ConstGauge::new(h.held_ns as f64 / 1e9)
                    .encode(f.encode_family(&[("job", job.as_str())])?)?;
            }
        }
        {
            let mut f = e.encode_descriptor(
                "pfsqos_agent_job_held_limit_bytes_per_second",
                "The administrator limit a held job is held at (bytes/s through this OSS).",
                None,
                MetricType::Gauge,
            )?;
            for (job, h) in &s.held {
                let job = job_label_value(job.as_str());
                ConstGauge::new(h.limit_bytes_per_s as f64)
                    .encode(f.encode_family(&[("job", job.as_str())])?)?;
            }
        }
        Ok(())
    }
}

/// The metrics text of a sample.
pub fn render(sample: AgentSample) -> String {
    pfsqos_metrics::render_collector(AgentCollector(sample))
}

/// The coordinator's metrics (`metrics_listen` in its file): `pfsqos_coordinator_rounds_total`,
/// `_reports_accepted_total`, `_reports_refused_total`, `_rejected_observations_total` (rounds
/// whose view the controller refused: nothing was decided, e.g. GIFT's allocator finding an
/// OST twice), `_domains` and `_jobs` (the last round's view),
/// `_job_held_seconds{job}`, `_job_held_limit_bytes_per_second{job}` (jobs moving at least 90 % of a
/// file-system-wide limit) and `_job_limited_observed_bytes_per_second{job}` (what each limited
/// job moved over the file system in the last round). Job labels are escaped.
pub struct CoordCollector(pub crate::coord::CoordStats);

impl fmt::Debug for CoordCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CoordCollector")
    }
}

impl Collector for CoordCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), fmt::Error> {
        let s = &self.0;
        for (name, help, v) in [
            (
                "pfsqos_coordinator_rounds",
                "Rounds decided (a view of at least one fresh report).",
                s.rounds,
            ),
            (
                "pfsqos_coordinator_reports_accepted",
                "Agent reports taken.",
                s.reports_accepted,
            ),
            (
                "pfsqos_coordinator_reports_refused",
                "Agent reports refused (agent off the allow-list, invalid report).",
                s.reports_refused,
            ),
            (
                "pfsqos_coordinator_rejected_observations",
                "Rounds whose view the controller refused (nothing decided; see the log).",
                s.rejected_observations,
            ),
        ] {
            counter(&mut e, name, help, v)?;
        }
        gauge(
            &mut e,
            "pfsqos_coordinator_domains",
            "OSSs in the last round's view.",
            s.domains as f64,
        )?;
        gauge(
            &mut e,
            "pfsqos_coordinator_jobs",
            "Jobs in the last round's view.",
            s.jobs as f64,
        )?;
        let per_job: [(&str, &str, JobValues); 3] = [
            (
                "pfsqos_coordinator_job_held_seconds",
                "How long a job has been moving at least 90% of its file-system-wide limit.",
                s.held
                    .iter()
                    .map(|(j, h)| (j, h.held_ns as f64 / 1e9))
                    .collect(),
            ),
            (
                "pfsqos_coordinator_job_held_limit_bytes_per_second",
                "The file-system-wide limit a held job is held at (bytes/s).",
                s.held
                    .iter()
                    .map(|(j, h)| (j, h.limit_bytes_per_s as f64))
                    .collect(),
            ),
            (
                "pfsqos_coordinator_job_limited_observed_bytes_per_second",
                "Bytes/s a limited job moved over the file system in the last round.",
                s.limited_observed_bytes_per_s
                    .iter()
                    .map(|(j, &v)| (j, v))
                    .collect(),
            ),
        ];
        for (name, help, values) in per_job {
            let mut f = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (job, v) in values {
                let job = job_label_value(job.as_str());
                ConstGauge::new(v).encode(f.encode_family(&[("job", job.as_str())])?)?;
            }
        }
        Ok(())
    }
}

/// One value per job of a per-job gauge family.
type JobValues<'a> = Vec<(&'a pfsqos_core::model::JobId, f64)>;

/// The metrics text of the coordinator's stats.
pub fn render_coordinator(stats: crate::coord::CoordStats) -> String {
    pfsqos_metrics::render_collector(CoordCollector(stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Held, JobRateStat};
    use pfsqos_core::model::JobId;

    /// Prometheus' linter finds nothing in the agent's and the coordinator's families (HELP
    /// everywhere, base units, counters named `_total`), with every per-job family filled.
    /// Skipped, saying why, where promtool is missing.
    #[test]
    fn promtool_finds_nothing_in_the_agent_and_coordinator_families() {
        let job = JobId::new("job 1").unwrap();
        let held = Held {
            since_ns: 0,
            limit_bytes_per_s: 4096,
            held_ns: 2_000_000_000,
        };
        let mut stats = AgentStats {
            periods: 3,
            ..AgentStats::default()
        };
        stats.held.insert(job, held);
        stats.job_rates.insert(
            job,
            JobRateStat {
                rate_per_cpt_rpcs_per_s: 5,
                cpts: 2,
                observed_bytes_per_s: 1.5,
            },
        );
        let agent = render(AgentSample {
            stats,
            lctl: LctlCounts::default(),
        });
        let mut coord = crate::coord::CoordStats {
            rounds: 2,
            ..Default::default()
        };
        coord.held.insert(job, held);
        coord.limited_observed_bytes_per_s.insert(job, 7.0);
        let coord = render_coordinator(coord);
        let mut problems = Vec::new();
        for text in [agent, coord] {
            match pfsqos_metrics::promtool_check(&text) {
                None => {
                    pfsqos_testkit::skip(
                        "promtool_finds_nothing_in_the_agent_and_coordinator_families",
                        "promtool is not installed (Debian: apt-get install prometheus)",
                    );
                    return;
                }
                Some(verdict) => problems.extend(verdict.err()),
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
