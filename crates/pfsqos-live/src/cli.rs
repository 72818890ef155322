//! Entry points for the `pfsqos ossd`, `pfsqos mds`, `pfsqos lctl`, `pfsqos mount`,
//! `pfsqos setstripe` and `pfsqos getstripe` subcommands: they own the tokio runtime and
//! logging so the binary stays thin.

use std::io::Write;

use tracing::info;

use crate::lctl::{self, LctlArgs};
use crate::mds::{Mds, MdsConfig};
use crate::mount::{self, lfs, MountConfig};
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

/// Mounts and serves until SIGINT/SIGTERM (then unmounts) or until the file system is
/// unmounted from outside (`umount`, `fusermount3 -u`). Prints `mount ready on MOUNTPOINT`
/// once the kernel has the mount.
pub fn run_mount(config: MountConfig) -> anyhow::Result<()> {
    init_logging();
    let mounted = mount::mount(config)?;
    println!("mount ready on {}", mounted.mountpoint().display());
    let _ = std::io::stdout().flush();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        // The session thread ends when the kernel drops the mount; checking 10 times a
        // second is enough to exit promptly after an outside umount.
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => { info!("interrupted; unmounting"); break; }
                _ = term.recv() => { info!("terminated; unmounting"); break; }
                _ = tick.tick() => if mounted.is_finished() {
                    info!("unmounted from outside");
                    break;
                },
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    mounted.unmount();
    Ok(())
}

/// `pfsqos setstripe`; returns the exit code (1 when refused, as lfs).
pub fn run_setstripe(args: &lfs::SetStripe) -> u8 {
    match lfs::setstripe(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// `pfsqos getstripe PATH...`; returns the exit code.
pub fn run_getstripe(paths: &[std::path::PathBuf]) -> u8 {
    let mut out = std::io::stdout().lock();
    let mut code = 0;
    for p in paths {
        if let Err(e) = lfs::getstripe(p, &mut out) {
            eprintln!("error: {e}");
            code = 1;
        }
    }
    code
}
