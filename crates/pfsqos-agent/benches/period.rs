//! One agent period at 10,000 jobs on 16 OSTs: job_stats text -> observation -> AdapTBF
//! decision -> rule diff (lctl answered from memory, so only the agent's own CPU is timed).
//!
//! `agent period ... (agent work only)` renders each period's job_stats text and rule listing
//! (every rule the agent holds, on each of the [`CPTS`] partitions, both queues) before the
//! clock starts (`iter_custom`), so it times the agent alone; the two benchmarks before it
//! are kept so that runs of older code, which had only those, can be compared.
//!
//! `--fixed-work PERIODS` runs the agent's start, its first (baseline) period and then exactly
//! PERIODS periods, each period's texts rendered before it, and prints each period's wall time
//! and lctl commands: the load-independent measure is the instruction count of
//! `Agent::period` under callgrind (`valgrind --tool=callgrind
//! --toggle-collect='pfsqos_agent::agent::Agent<*>::period' BENCH --fixed-work 4`, divided by
//! PERIODS), which leaves the rendering out.

use criterion::{criterion_group, Criterion};
use pfsqos_agent::lctl::{Lctl, LctlCounts, LctlError};
use pfsqos_agent::{Agent, AgentConfig};
use pfsqos_core::jobstats::{render_job_stats, JobEntry, JobStatsFormat, OstCounter};
use pfsqos_core::model::JobId;
use pfsqos_core::sched::tbf::{CptRules, ListedRule, TbfRuleListing};
use std::collections::BTreeMap;

const JOBS: usize = 10_000;
const OSTS: usize = 16;

/// CPU partitions of the OSS in memory (the agent's config says the same).
const CPTS: u32 = 2;

/// An OSS in memory: job_stats grows by a few RPCs per job each poll; rule commands are kept,
/// so `nrs_tbf_rule` lists every rule the agent holds on each partition, as a real OSS does
/// (the agent reads and parses that listing every period); writes succeed.
struct MemLctl {
    round: u64,
    counts: LctlCounts,
    /// The next job_stats answer, rendered ahead (untimed); rendered on demand if `None`.
    ready: Option<String>,
    /// Rules started and not stopped: name -> (condition as listed, rate per partition).
    rules: BTreeMap<String, (String, u32)>,
    /// The next `nrs_tbf_rule` answer, rendered ahead (untimed); rendered on demand if `None`.
    ready_listing: Option<String>,
}

impl MemLctl {
    fn job_stats(&self) -> String {
        let mut out = String::new();
        for ost in 0..OSTS {
            let entries: Vec<JobEntry> = (0..JOBS)
                .filter(|j| j % OSTS == ost || j % 7 == ost % 7)
                .map(|j| {
                    let mut e =
                        JobEntry::new(JobId::new(&format!("job.{j}")).unwrap(), 1_000_000_000);
                    let c = &mut e.counters[OstCounter::WriteBytes as usize];
                    c.samples = self.round * (1 + j as u64 % 5);
                    c.sum = c.samples << 20;
                    c.min = 1 << 20;
                    c.max = 1 << 20;
                    e
                })
                .collect();
            out.push_str(&format!("obdfilter.fs-OST{ost:04x}.job_stats=\n"));
            out.push_str(&render_job_stats(&entries, JobStatsFormat::Master));
        }
        out
    }
}

impl MemLctl {
    fn new() -> MemLctl {
        MemLctl {
            round: 0,
            counts: LctlCounts::default(),
            ready: None,
            rules: BTreeMap::new(),
            ready_listing: None,
        }
    }

    /// Keeps `start NAME COND rate=R`, `change NAME rate=R` and `stop NAME` (what the agent
    /// writes; validated by the ossd and the emulation elsewhere, not here).
    fn rule_command(&mut self, cmd: &str) {
        let mut words = cmd.split(' ');
        let (Some(op), Some(name)) = (words.next(), words.next()) else {
            return;
        };
        let rest: Vec<&str> = words.collect();
        let rate = rest
            .iter()
            .find_map(|w| w.strip_prefix("rate="))
            .and_then(|r| r.parse::<u32>().ok());
        match op {
            "start" => {
                let cond = rest
                    .iter()
                    .filter(|w| !w.starts_with("rate="))
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" ");
                self.rules
                    .insert(name.to_string(), (cond, rate.unwrap_or(10_000)));
            }
            "change" => {
                if let (Some(r), Some(rule)) = (rate, self.rules.get_mut(name)) {
                    rule.1 = r;
                }
            }
            "stop" => {
                self.rules.remove(name);
            }
            _ => {}
        }
    }

    /// The listing of a real OSS under load: every rule on every partition with classes
    /// referring to it (so the agent's per-partition accounting has its full work), then
    /// `default`.
    fn listing(&self) -> String {
        let cpt_rules = |cpt: u32| CptRules {
            cpt,
            rules: self
                .rules
                .iter()
                .map(|(name, (cond, rate))| ListedRule {
                    name: name.clone(),
                    conditions: cond.clone(),
                    rate_rpcs_per_s: *rate,
                    refs: 1,
                })
                .chain(std::iter::once(ListedRule {
                    name: "default".into(),
                    conditions: "*".into(),
                    rate_rpcs_per_s: 10_000,
                    refs: 0,
                }))
                .collect(),
        };
        TbfRuleListing {
            regular: (0..CPTS).map(cpt_rules).collect(),
            high_priority: Some((0..CPTS).map(cpt_rules).collect()),
        }
        .to_string()
    }
}

impl Lctl for MemLctl {
    fn run(&mut self, args: &[String]) -> Result<String, LctlError> {
        self.counts.commands += 1;
        Ok(match (args[0].as_str(), args.last().map(String::as_str)) {
            ("get_param", Some("ost.OSS.ost_io.nrs_policies")) => {
                "\nregular_requests:\n  - name: tbf jobid\n    state: started\n".to_string()
            }
            ("get_param", Some("obdfilter.*.job_stats")) => match self.ready.take() {
                Some(text) => text,
                None => {
                    self.round += 1;
                    self.job_stats()
                }
            },
            ("get_param", Some("ost.OSS.ost_io.nrs_tbf_rule")) => {
                self.ready_listing.take().unwrap_or_else(|| self.listing())
            }
            ("set_param", Some(arg)) => {
                if let Some(cmd) = arg.strip_prefix("ost.OSS.ost_io.nrs_tbf_rule=") {
                    self.rule_command(cmd);
                }
                String::new()
            }
            _ => String::new(),
        })
    }
    fn counts(&self) -> LctlCounts {
        self.counts
    }
}

/// The bench's agent: AdapTBF, started, its first (baseline) period done.
fn started_agent() -> Agent<MemLctl> {
    let config = AgentConfig::parse(
        "controller = \"adaptbf\"\nost_capacity_rpcs_per_s = 2000\ncpts = 2\nrules_max = 16384\n",
    )
    .unwrap();
    let mut agent = Agent::new(config, MemLctl::new());
    agent.start().unwrap();
    agent.period();
    agent
}

/// `--fixed-work PERIODS`: see the module comment.
fn fixed_work(periods: u64) {
    let mut agent = started_agent();
    let mut times_ns = Vec::new();
    for _ in 0..periods {
        let lctl = agent.lctl_mut();
        lctl.round += 1;
        lctl.ready = Some(lctl.job_stats());
        lctl.ready_listing = Some(lctl.listing());
        let commands_before = agent.lctl().counts.commands;
        let t0 = std::time::Instant::now();
        agent.period();
        let ns = t0.elapsed().as_nanos() as u64;
        times_ns.push(ns);
        println!(
            "period {}: {:.1} ms, {} lctl commands, {} rules held",
            agent.stats.periods,
            ns as f64 / 1e6,
            agent.lctl().counts.commands - commands_before,
            agent.stats.rules_held
        );
    }
    times_ns.sort_unstable();
    if let Some(&median) = times_ns.get(times_ns.len() / 2) {
        println!(
            "median {:.1} ms, min {:.1} ms over {} periods",
            median as f64 / 1e6,
            times_ns[0] as f64 / 1e6,
            times_ns.len()
        );
    }
}

fn bench(c: &mut Criterion) {
    let mut agent = started_agent();
    // The job_stats text is rendered inside `run`; time it apart to subtract.
    let probe = MemLctl {
        round: 3,
        ..MemLctl::new()
    };
    c.bench_function(
        "render job_stats 10k jobs x 16 OSTs (not agent work)",
        |b| b.iter(|| probe.job_stats().len()),
    );
    let text = probe.job_stats();
    c.bench_function("parse job_stats only (part of the period)", |b| {
        b.iter(|| {
            pfsqos_core::jobstats::parse_lctl_job_stats_lossy(&text)
                .unwrap()
                .0
                .len()
        })
    });
    c.bench_function(
        "parse job_stats as the agent does (bulk totals, skim)",
        |b| {
            b.iter(|| {
                pfsqos_core::jobstats::parse_lctl_brw_lossy(&text, true)
                    .unwrap()
                    .0
                    .len()
            })
        },
    );
    c.bench_function("agent period 10k jobs x 16 OSTs (incl. rendering)", |b| {
        b.iter(|| agent.period())
    });
    c.bench_function("agent period 10k jobs x 16 OSTs (agent work only)", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let lctl = agent.lctl_mut();
                lctl.round += 1;
                lctl.ready = Some(lctl.job_stats());
                lctl.ready_listing = Some(lctl.listing());
                let t0 = std::time::Instant::now();
                agent.period();
                total += t0.elapsed();
            }
            total
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--fixed-work") {
        let periods = args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .expect("--fixed-work PERIODS");
        fixed_work(periods);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
