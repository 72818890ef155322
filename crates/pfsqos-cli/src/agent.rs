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

/// `pfsqos stat --agent HOST:PORT ... --coordinator HOST:PORT ...`: every `interval`, each
/// agent's held jobs and top jobs, then each coordinator's rounds, refused views and held jobs,
/// from their metrics endpoints (`pfsqos_agent::status`), `iterations` times or until
/// interrupted. Exits 2 if an address does not resolve, 1 if the last sample of an endpoint
/// could not be read.
pub fn run_stat_agents(
    agents: &[String],
    coordinators: &[String],
    count: usize,
    interval: std::time::Duration,
    iterations: Option<u64>,
) -> ExitCode {
    use std::io::Write;
    use std::net::ToSocketAddrs;
    let mut addrs = Vec::new();
    let endpoints = agents
        .iter()
        .map(|a| ("agent", a))
        .chain(coordinators.iter().map(|c| ("coordinator", c)));
    for (kind, a) in endpoints {
        match a.to_socket_addrs().map(|mut it| it.next()) {
            Ok(Some(addr)) => addrs.push((kind, a.as_str(), addr)),
            _ => {
                eprintln!(
                    "pfsqos: error: {kind} address `{}` does not resolve",
                    a.escape_debug()
                );
                return ExitCode::from(2);
            }
        }
    }
    // A scrape waits at most this long, so one silent agent cannot stall the others' view.
    let timeout = interval.clamp(
        std::time::Duration::from_millis(200),
        std::time::Duration::from_secs(5),
    );
    let mut failed;
    let mut done = 0u64;
    let mut out = std::io::stdout().lock();
    loop {
        failed = false;
        for (kind, name, addr) in &addrs {
            use pfsqos_agent::status;
            match status::scrape(*addr, timeout) {
                Ok(text) if *kind == "agent" => {
                    let st = status::parse(&text);
                    let _ = write!(out, "{}", status::render(name, &st, count));
                }
                Ok(text) => {
                    let st = status::parse_coordinator(&text);
                    let _ = write!(out, "{}", status::render_coordinator(name, &st, count));
                }
                Err(e) => {
                    failed = true;
                    let _ = writeln!(out, "{kind} {}: unreachable: {e}", name.escape_debug());
                }
            }
        }
        let _ = out.flush();
        done += 1;
        if iterations.is_some_and(|n| done >= n) {
            break;
        }
        std::thread::sleep(interval);
        let _ = writeln!(out);
    }
    ExitCode::from(u8::from(failed))
}
