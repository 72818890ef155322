//! Writes a report of made-up runs, to look at the page without running the simulator:
//! `cargo run -p pfsqos-report --example sample_report -- /tmp/sample`.

use pfsqos_core::control::TraceSample;
use pfsqos_core::model::{JobId, OstId};
use pfsqos_core::run::{
    ControlLogEntry, ControlTraceEntry, EngineStats, JobOutput, JobSeries, RunOutput,
};

const MIB: u64 = 1 << 20;
const BIN_NS: u64 = 100_000_000;
const BINS: usize = 600;
const NODES: [u32; 3] = [4, 8, 16];
/// Tokens per 100 ms period of one OST in the made-up trace.
const CAPACITY_TOKENS: f64 = 60.0;

/// 0..=1..0 over `period` steps: a demand that rises and falls, without float trig.
fn triangle(step: usize, period: usize) -> f64 {
    let phase = step % period;
    let half = period / 2;
    if phase <= half {
        phase as f64 / half as f64
    } else {
        (period - phase) as f64 / half as f64
    }
}

/// An AdapTBF-like trace: each OST splits its tokens by node share; a job wanting less than its
/// share lends the rest to jobs wanting more, and the record keeps the balance (lent +,
/// borrowed −), paid back slowly.
fn make_trace(job_ids: &[String]) -> Vec<ControlTraceEntry> {
    let mut out = Vec::new();
    let mut record = [[0.0f64; 3]; 2];
    for step in 1..=BINS {
        let active: Vec<usize> = (0..3).filter(|&j| step > j * 100).collect();
        let weight_total: u32 = active.iter().map(|&j| NODES[j]).sum();
        for (ost, record) in record.iter_mut().enumerate() {
            let share: Vec<f64> = active
                .iter()
                .map(|&j| CAPACITY_TOKENS * f64::from(NODES[j]) / f64::from(weight_total))
                .collect();
            // The small job bursts; the others want about their share, the largest a bit more.
            let demand: Vec<f64> = active
                .iter()
                .zip(&share)
                .map(|(&j, &s)| match j {
                    0 => (s * (0.2 + 1.6 * triangle(step + 40 * ost, 120))).round(),
                    1 => (s * (0.9 + 0.3 * triangle(step, 70))).round(),
                    _ => (s * 1.3).round(),
                })
                .collect();
            let spare: f64 = share
                .iter()
                .zip(&demand)
                .map(|(s, d)| (s - d).max(0.0))
                .sum();
            let wanting: f64 = share
                .iter()
                .zip(&demand)
                .map(|(s, d)| (d - s).max(0.0))
                .sum();
            let tokens: Vec<f64> = share
                .iter()
                .zip(&demand)
                .map(|(&s, &d)| {
                    if d > s && wanting > 0.0 {
                        (s + spare.min(wanting) * (d - s) / wanting).round()
                    } else {
                        s.min(d)
                    }
                })
                .collect();
            // Lenders are credited only for what borrowers took: records sum to zero.
            let borrowed: f64 = share
                .iter()
                .zip(&tokens)
                .map(|(s, t)| (t - s).max(0.0))
                .sum();
            let lent_fraction = if spare > 0.0 {
                (borrowed / spare).min(1.0)
            } else {
                0.0
            };
            for (k, &j) in active.iter().enumerate() {
                let (s, d, tokens) = (share[k], demand[k], tokens[k]);
                let change = if tokens > s {
                    s - tokens
                } else {
                    (s - tokens) * lent_fraction
                };
                record[j] = 0.97 * record[j] + change;
                for (metric, value) in [
                    ("demand_rpcs", d),
                    ("tokens", tokens),
                    ("record_tokens", record[j].round()),
                ] {
                    out.push(ControlTraceEntry {
                        time_ns: step as u64 * BIN_NS,
                        sample: TraceSample {
                            ost: OstId(ost as u32),
                            job: JobId::new(&job_ids[j]).expect("sample job id"),
                            metric,
                            value,
                        },
                    });
                }
            }
        }
    }
    out
}

/// Job `j` of three (4, 8, 16 nodes) starts at `j * 10 s`; under `fair` each active job gets its
/// node share of 1200 MiB/s, otherwise an equal share. A small ripple makes lines tell apart.
// `bin` indexes three jobs' series at once.
#[allow(clippy::needless_range_loop)]
fn make_run(policy: &str, fair: bool, traced: bool) -> RunOutput {
    let nodes = NODES;
    let mut per_bin = vec![vec![0u64; BINS]; 3];
    for bin in 0..BINS {
        let active: Vec<usize> = (0..3).filter(|&j| bin >= j * 100).collect();
        let weight_total: u32 = active.iter().map(|&j| nodes[j]).sum();
        for &j in &active {
            let share = if fair {
                f64::from(nodes[j]) / f64::from(weight_total)
            } else {
                1.0 / active.len() as f64
            };
            let ripple = 1.0 + 0.04 * (((bin * 7 + j * 13) % 11) as f64 / 11.0 - 0.5);
            per_bin[j][bin] = (120.0 * share * ripple * MIB as f64) as u64;
        }
    }
    let jobs: Vec<JobOutput> = (0..3)
        .map(|j| {
            let osts = vec![
                per_bin[j].iter().map(|b| b / 2).collect(),
                per_bin[j].iter().map(|b| b - b / 2).collect(),
            ];
            let total: u64 = per_bin[j].iter().sum();
            JobOutput {
                job_id: format!("job{}.{}nodes", j + 1, nodes[j]),
                node_count: nodes[j],
                weight: nodes[j],
                bytes_read: 0,
                bytes_written: total,
                rpcs: total / (4 * MIB),
                first_io_ns: Some(j as u64 * 10_000_000_000),
                last_io_ns: Some(BINS as u64 * BIN_NS),
                finished: j != 2,
                bytes_per_ost_bin: JobSeries::from_dense(BINS, osts),
                phases: None,
            }
        })
        .collect();
    let control_trace = if traced {
        make_trace(&jobs.iter().map(|j| j.job_id.clone()).collect::<Vec<_>>())
    } else {
        Vec::new()
    };
    let control_log = if fair {
        vec![ControlLogEntry {
            time_ns: 5_000_000_000,
            domain: pfsqos_core::control::DomainId(0),
            write: pfsqos_core::control::ControlWrite::tbf_rule(
                "start bad jobid={job9} rate=0".to_string(),
            ),
            result: Err("rate must be at least 1".to_string()),
        }]
    } else {
        Vec::new()
    };
    RunOutput {
        scenario_name: "sample".to_string(),
        policy: policy.to_string(),
        seed: 1,
        bin_ns: BIN_NS,
        end_ns: BINS as u64 * BIN_NS,
        osts: vec!["OST0000".to_string(), "OST0001".to_string()],
        jobs,
        control_log,
        control_trace,
        control_trace_truncated: false,
        engine: EngineStats {
            events: 1_234_567,
            rpcs: 54_321,
            client_writes: 0,
            ..EngineStats::default()
        },
        regret: None,
        allocation: None,
        sync: Vec::new(),
        ost_space: Vec::new(),
    }
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sample-report".to_string());
    let scenario = pfsqos_report::ScenarioText {
        name: "sample",
        description: "Three jobs of 4, 8 and 16 nodes start 10 s apart on two OSTs.",
    };
    let runs = [
        make_run("nobw", false, false),
        make_run("static", true, false),
        make_run("adaptbf", true, true),
    ];
    if let Err(e) = pfsqos_report::write_comparison(std::path::Path::new(&dir), &runs, &scenario) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    println!("{dir}/report.html");
}
