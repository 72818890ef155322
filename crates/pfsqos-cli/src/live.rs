//! The process side of the live subcommands (`pfsqos ossd`, `mds`, `mount`, `up`, `down`,
//! `stat`, `lctl`, `setstripe`, `getstripe`, `keygen`): the tokio runtime, logging, signals,
//! allocator settings, readiness lines, finding the cluster for the client tools
//! (`pfsqos_ops::discover`, from the process's directory and environment) and exit codes. The
//! libraries (pfsqos-ossd, -mds, -mount, -ops) do the work and own none of these.

use std::io::Write;
use std::path::Path;

use tracing::info;

use pfsqos_mds::{Mds, MdsConfig};
use pfsqos_mount::{self as mount, lfs, MountConfig};
use pfsqos_ops::cluster::{Cluster, Role};
use pfsqos_ops::discover::{self, Lookup};
use pfsqos_ops::lctl::{self, LctlArgs, LctlCommand};
use pfsqos_ops::stat::{self, StatArgs};
use pfsqos_ops::updown::{self, UpOptions};
use pfsqos_ossd::{Ossd, OssdConfig};

/// Logs to stderr at INFO (or the level in `PFSQOS_LOG`: error, warn, info, debug, trace).
pub(crate) fn init_logging() {
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

/// Tells systemd the daemon is ready (`Type=notify` units, packaging/systemd/): sends
/// `READY=1` to `$NOTIFY_SOCKET` when it is set (a path, or `@name` in the abstract namespace).
/// Without systemd nothing happens; a failure is logged, never fatal.
pub(crate) fn notify_ready() {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let send = || -> std::io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::net::{SocketAddr, UnixDatagram};
        let bytes = target.as_bytes();
        let addr = match bytes.strip_prefix(b"@") {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(name)?
            }
            None => SocketAddr::from_pathname(Path::new(&target))?,
        };
        UnixDatagram::unbound()?.send_to_addr(b"READY=1", &addr)?;
        Ok(())
    };
    if let Err(e) = send() {
        tracing::warn!("telling systemd we are ready (NOTIFY_SOCKET): {e}");
    }
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM (what `pfsqos down`, systemd and `kill` send); returns
/// the signal's name for the log.
pub(crate) async fn stop_signal() -> anyhow::Result<&'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
}

/// Keeps the 1-8 MiB buffers of bulk transfers in the allocator's heap. glibc serves an
/// allocation of more than 128 KiB (a threshold it raises only slowly) with a fresh `mmap`,
/// and returns it with `munmap` on free, so every RPC's buffer would be faulted in and zeroed
/// by the kernel again: a tenth of the daemon's CPU time at 1 GB/s. With the threshold at its
/// maximum (32 MiB) and trimming above 256 MiB, freed bulk buffers are reused. The cost is
/// memory the daemon keeps after a burst: at most what its in-flight byte limits allowed.
fn keep_bulk_buffers_in_the_heap() {
    // SAFETY: mallopt only adjusts glibc allocator parameters; called before any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Runs an ossd until SIGINT or SIGTERM, then shuts it down cleanly (the controller undoes its
/// rules, queued requests are answered with an error) and returns. Nothing is left behind:
/// rules and job_stats live in memory only.
pub fn run_ossd(config: OssdConfig) -> anyhow::Result<()> {
    keep_bulk_buffers_in_the_heap();
    init_logging();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ossd-net")
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let ossd = Ossd::start(config).await?;
        // Before the listening line: `pfsqos up` stops reading at that line.
        if let Some(m) = ossd.metrics_addr() {
            println!("ossd metrics on http://{m}/metrics");
        }
        println!("ossd listening on {}", ossd.local_addr());
        let _ = std::io::stdout().flush();
        notify_ready();
        let sig = stop_signal().await?;
        info!(signal = sig, "shutting down");
        ossd.shutdown().await;
        Ok(())
    })
}

/// Runs an mds until SIGINT or SIGTERM. Every acknowledged mutation is already durable, so an abrupt
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
        if let Some(m) = mds.metrics_addr() {
            println!("mds metrics on http://{m}/metrics");
        }
        println!("mds listening on {}", mds.local_addr());
        let _ = std::io::stdout().flush();
        notify_ready();
        let sig = stop_signal().await?;
        info!(signal = sig, "shutting down");
        mds.shutdown().await;
        Ok(())
    })
}

/// The cluster file, or the defaults relative to the working directory.
fn load_cluster(path: Option<&Path>) -> Result<Cluster, String> {
    match path {
        Some(p) => Cluster::load(p).map_err(|e| e.to_string()),
        None => std::env::current_dir()
            .map(|d| Cluster::defaults(&d))
            .map_err(|e| format!("working directory: {e}")),
    }
}

/// Runs `pfsqos up`; returns the exit code (2: bad cluster file or role, 1: a role failed).
pub fn run_up(path: Option<&Path>, only: Option<Role>) -> u8 {
    let cluster = match load_cluster(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pfsqos: error: {e}");
            return 2;
        }
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("pfsqos: error: cannot find the pfsqos binary: {e}");
            return 1;
        }
    };
    let opts = UpOptions {
        only,
        exe,
        ready_timeout: updown::READY_TIMEOUT,
    };
    match updown::up(&cluster, &opts, &mut std::io::stdout().lock()) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            1
        }
    }
}

/// Runs `pfsqos down`; returns the exit code.
pub fn run_down(path: Option<&Path>, only: Option<Role>) -> u8 {
    let cluster = match load_cluster(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pfsqos: error: {e}");
            return 2;
        }
    };
    match updown::down(
        &cluster,
        only,
        updown::STOP_TIMEOUT,
        &mut std::io::stdout().lock(),
    ) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            1
        }
    }
}

fn current_thread_runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

/// The ossds (resolved) and key a client tool uses: the flags given, the cluster found for the
/// rest (see `pfsqos_ops::discover`).
fn client_target(
    rt: &tokio::runtime::Runtime,
    servers: &[String],
    key_file: Option<&Path>,
) -> Result<(Vec<std::net::SocketAddr>, std::path::PathBuf), String> {
    let (servers, key) = discover::client_target(servers, key_file, &Lookup::from_process())
        .map_err(|e| e.to_string())?;
    if servers.is_empty() {
        return Err("the cluster found lists no OSS; give --server HOST:PORT".to_string());
    }
    let addrs = rt.block_on(async {
        let mut out = Vec::with_capacity(servers.len());
        for s in &servers {
            out.push(discover::resolve(s).await?);
        }
        Ok::<_, String>(out)
    })?;
    Ok((addrs, key))
}

/// Runs `pfsqos stat`; returns the exit code (0, or 2 when it could not start). `make` builds
/// the arguments from the servers and key found.
pub fn run_stat(
    servers: &[String],
    key_file: Option<&Path>,
    make: impl FnOnce(Vec<std::net::SocketAddr>, std::path::PathBuf) -> StatArgs,
) -> u8 {
    let Some(rt) = current_thread_runtime() else {
        return 2;
    };
    let args = match client_target(&rt, servers, key_file) {
        Ok((addrs, key)) => make(addrs, key),
        Err(e) => {
            eprintln!("pfsqos: error: {e}");
            return 2;
        }
    };
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    match rt.block_on(stat::run(&args, stop_signal(), &mut out, &mut err)) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "pfsqos: error: {e:#}");
            2
        }
    }
}

/// Runs one lctl command against an ossd (the one given, else the first of the cluster
/// found); returns the exit code.
pub fn run_lctl(server: Option<&str>, key_file: Option<&Path>, command: LctlCommand) -> u8 {
    let Some(rt) = current_thread_runtime() else {
        return 2;
    };
    let servers: Vec<String> = server.map(str::to_string).into_iter().collect();
    let (addrs, key_file) = match client_target(&rt, &servers, key_file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let args = LctlArgs {
        server: addrs[0],
        key_file,
        command,
    };
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    rt.block_on(lctl::run(&args, &mut out, &mut err))
}

/// `pfsqos keygen FILE [--force]`; returns the exit code.
pub fn run_keygen(file: &Path, force: bool) -> u8 {
    match pfsqos_ops::updown::keygen(file, force) {
        Ok(()) => {
            println!("wrote cluster key {} (mode 0600)", file.display());
            0
        }
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            2
        }
    }
}

/// Mounts and serves until SIGINT/SIGTERM (then unmounts) or until the file system is
/// unmounted from outside (`umount`, `fusermount3 -u`). Prints `mount ready on MOUNTPOINT`
/// once the kernel has the mount.
pub fn run_mount(config: MountConfig) -> anyhow::Result<()> {
    keep_bulk_buffers_in_the_heap();
    init_logging();
    let mounted = mount::mount(config)?;
    println!("mount ready on {}", mounted.mountpoint().display());
    let _ = std::io::stdout().flush();
    notify_ready();
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

/// A hint after "not on a pfsqos mount": where the cluster found here is mounted.
fn mount_hint(e: &str) -> String {
    if !e.contains("not on a pfsqos mount") {
        return String::new();
    }
    match discover::discover(&Lookup::from_process()) {
        Ok(found) => match found.mount {
            Some(m) => format!(
                " (the cluster found in {} is mounted at {})",
                found.source,
                m.display()
            ),
            None => String::new(),
        },
        Err(_) => String::new(),
    }
}

/// `pfsqos setstripe`; returns the exit code (1 when refused, as lfs).
pub fn run_setstripe(args: &lfs::SetStripe) -> u8 {
    match lfs::setstripe(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}{}", mount_hint(&e));
            1
        }
    }
}

/// `pfsqos getstripe [-c -S -i -y -d -r] PATH...`; returns the exit code (1 when a path
/// failed).
pub fn run_getstripe(paths: &[std::path::PathBuf], opts: &lfs::GetStripe) -> u8 {
    let mut out = std::io::stdout().lock();
    let mut err = Vec::new();
    let ok = lfs::getstripe(paths, opts, &mut out, &mut err);
    let err = String::from_utf8_lossy(&err);
    for line in err.lines() {
        eprintln!("{line}{}", mount_hint(line));
    }
    u8::from(!ok)
}
