//! Entry points for the `pfsqos ossd`, `pfsqos mds` and `pfsqos lctl` subcommands: they own the tokio runtime
//! and logging so the binary stays thin.

use std::io::Write;

use tracing::info;

use crate::lctl::{self, LctlArgs};
use crate::mds::{Mds, MdsConfig};
use crate::ossd::{Ossd, OssdConfig};

/// Logs to stderr at INFO (or the level in `PFSQOS_LOG`: error, warn, info, debug, trace).
pub fn init_logging() {
    let level = std::env::var("PFSQOS_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Runs an ossd until SIGINT/SIGTERM-like Ctrl-C.
pub fn run_ossd(config: OssdConfig) -> anyhow::Result<()> {
    init_logging();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ossd-net")
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let ossd = Ossd::start(config).await?;
        println!("ossd listening on {}", ossd.local_addr());
        let _ = std::io::stdout().flush();
        tokio::signal::ctrl_c().await?;
        info!("interrupted; shutting down");
        ossd.shutdown().await;
        Ok(())
    })
}

/// Runs an mds until Ctrl-C. Every acknowledged mutation is already durable, so an abrupt
/// stop loses nothing acknowledged.
pub fn run_mds(config: MdsConfig) -> anyhow::Result<()> {
    init_logging();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mds-net")
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mds = Mds::start(config).await?;
        println!("mds listening on {}", mds.local_addr());
        let _ = std::io::stdout().flush();
        tokio::signal::ctrl_c().await?;
        info!("interrupted; shutting down");
        mds.shutdown().await;
        Ok(())
    })
}

/// Runs one lctl command against an ossd; returns the exit code.
pub fn run_lctl(args: &LctlArgs) -> u8 {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    rt.block_on(lctl::run(args, &mut out, &mut err))
}
