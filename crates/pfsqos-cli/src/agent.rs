//! `pfsqos agent`: the per-OSS Lustre agent (crate `pfsqos-agent`, docs/lustre.md).

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `pfsqos agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The agent's configuration file (TOML; docs/lustre.md lists every field).
    #[arg(long, default_value = "/etc/pfsqos/agent.toml")]
    pub config: PathBuf,
    /// Print the exact lctl commands that would write, run none of them (reads still run).
    #[arg(long)]
    pub dry_run: bool,
    /// One period, then exit leaving the rules in place (cron-style use, debugging).
    #[arg(long)]
    pub once: bool,
}

pub fn run(args: AgentArgs) -> ExitCode {
    crate::live::init_logging();
    let config = match pfsqos_agent::AgentConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let opts = pfsqos_agent::RunOptions {
        once: args.once,
        dry_run: args.dry_run,
    };
    match pfsqos_agent::run(config, opts) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Arguments of `pfsqos coordinator`.
#[derive(clap::Args, Debug)]
pub struct CoordinatorArgs {
    /// The coordinator's configuration file (TOML; docs/lustre.md lists every field).
    #[arg(long, default_value = "/etc/pfsqos/coordinator.toml")]
    pub config: PathBuf,
}

pub fn run_coordinator(args: CoordinatorArgs) -> ExitCode {
    crate::live::init_logging();
    let config = match pfsqos_agent::coord_net::CoordinatorConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    match pfsqos_agent::coord_net::run_coordinator(config) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
