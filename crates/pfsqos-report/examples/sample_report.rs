//! Writes a report of made-up runs, to look at the page without running the simulator:
//! `cargo run -p pfsqos-report --example sample_report -- /tmp/sample`.

use pfsqos_sim::{ControlLogEntry, EngineStats, JobOutput, RunOutput, Scenario};

const MIB: u64 = 1 << 20;
const BIN_NS: u64 = 100_000_000;
const BINS: usize = 600;

/// Job `j` of three (4, 8, 16 nodes) starts at `j * 10 s`; under `fair` each active job gets its
/// node share of 1200 MiB/s, otherwise an equal share. A small ripple makes lines tell apart.
// `bin` indexes three jobs' series at once.
#[allow(clippy::needless_range_loop)]
fn make_run(policy: &str, fair: bool) -> RunOutput {
    let nodes = [4u32, 8, 16];
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
    let jobs = (0..3)
        .map(|j| {
            let osts = vec![
                per_bin[j].iter().map(|b| b / 2).collect(),
                per_bin[j].iter().map(|b| b - b / 2).collect(),
            ];
            let total: u64 = per_bin[j].iter().sum();
            JobOutput {
                job_id: format!("job{}.{}nodes", j + 1, nodes[j]),
                node_count: nodes[j],
                bytes_read: 0,
                bytes_written: total,
                rpcs: total / (4 * MIB),
                first_io_ns: Some(j as u64 * 10_000_000_000),
                last_io_ns: Some(BINS as u64 * BIN_NS),
                finished: j != 2,
                bytes_per_ost_bin: osts,
            }
        })
        .collect();
    let control_log = if fair {
        vec![ControlLogEntry {
            time_ns: 5_000_000_000,
            domain: pfsqos_core::control::DomainId(0),
            write: pfsqos_core::control::ControlWrite::NrsTbfRule(
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
        control_trace: Vec::new(),
        control_trace_truncated: false,
        engine: EngineStats {
            events: 1_234_567,
            rpcs: 54_321,
        },
    }
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sample-report".to_string());
    let scenario = Scenario::from_toml_str(
        "name = \"sample\"\ndescription = \"Three jobs of 4, 8 and 16 nodes start 10 s apart on two OSTs.\"\n\
         [simulation]\nduration_s = 60.0\n[[oss]]\nname = \"oss0\"\nosts = 2\n\
         [[job]]\nid = \"x\"\nnodes = 1\n[[job.processes]]\nrw = \"write\"\nbs = \"1M\"\nsize = \"1G\"\n",
        "<sample>",
    )
    .expect("sample scenario");
    let runs = [make_run("nobw", false), make_run("static", true)];
    if let Err(e) = pfsqos_report::write_comparison(std::path::Path::new(&dir), &runs, &scenario) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    println!("{dir}/report.html");
}
