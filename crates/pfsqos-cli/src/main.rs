//! `pfsqos`: run a scenario under one policy, compare policies, or run the built-in demo.
//! The work happens in the library crates; this binary parses arguments, draws progress and
//! maps failures to exit codes (2: bad input, 1: the run or writing its outputs failed).

mod commands;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "pfsqos",
    version,
    about = "I/O bandwidth control for shared parallel storage: simulate, compare, report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario under one policy; writes timeseries.csv, summary.json and report.html.
    Sim {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Policy to run [default: the scenario's policy.default].
        #[arg(long)]
        policy: Option<String>,
        /// Random seed [default: the scenario's simulation.seed].
        #[arg(long)]
        seed: Option<u64>,
        /// Output directory [default: ./out/<scenario name>-<policy>].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a scenario under several policies and write one comparison report.
    Compare {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Comma-separated policies [default: the scenario's policy.compare].
        #[arg(long, value_delimiter = ',')]
        policies: Option<Vec<String>>,
        /// Random seed [default: the scenario's simulation.seed].
        #[arg(long)]
        seed: Option<u64>,
        /// Output directory [default: ./out/<scenario name>].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Compare the policies on the built-in flagship scenario and write an HTML report.
    Demo {
        /// Output directory.
        #[arg(long, default_value = "pfsqos-demo")]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim {
            scenario,
            policy,
            seed,
            out,
        } => commands::sim(&scenario, policy, seed, out),
        Command::Compare {
            scenario,
            policies,
            seed,
            out,
        } => commands::compare(&scenario, policies, seed, out),
        Command::Demo { out } => commands::demo(&out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pfsqos: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
