//! `pfsqos-agentd --config FILE [--once] [--dry-run]`: the agent alone, without the rest of the
//! `pfsqos` command line (what `pfsqos agent` runs; for OSS nodes that install only this).

fn main() {
    let mut config = None;
    let mut opts = pfsqos_agent::RunOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--config" => config = args.next(),
            "--once" => opts.once = true,
            "--dry-run" => opts.dry_run = true,
            other => {
                eprintln!("pfsqos-agentd: unknown argument {:?}", other);
                std::process::exit(2);
            }
        }
    }
    let Some(config) = config else {
        eprintln!("usage: pfsqos-agentd --config FILE [--once] [--dry-run]");
        std::process::exit(2);
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let config = match pfsqos_agent::AgentConfig::load(std::path::Path::new(&config)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pfsqos-agentd: error: {e:#}");
            std::process::exit(2);
        }
    };
    match pfsqos_agent::run(config, opts) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("pfsqos-agentd: error: {e:#}");
            std::process::exit(1);
        }
    }
}
