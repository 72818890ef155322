//! `pfsqos mount`: the FUSE client. It stripes file data over the OSTs as the MDS's layouts say,
//! splits I/O into RPCs of at most `brw_size`, keeps at most `max_rpcs_in_flight` RPCs in
//! flight per OST, writes behind within a dirty budget, and tags every RPC with the JobID of
//! the process that caused it, derived as Lustre's client does (`jobid_var`, `jobid_name`),
//! and with the job's node count from the same environment (`jobnodes_var`).
//!
//! * `stripe`: pure RAID-0 arithmetic (offset to object, RPC splitting, object sizes);
//! * `jobid`: JobID derivation (pattern expansion, `/proc/PID/environ`);
//! * [`oss_pool`]: per-OST connection pools with the RPC window, the MDS pool, recovery;
//! * [`limit`]: the per-OST RPC window and the node's outgoing limiter (the client path's
//!   `RpcWindow` and `RateLimiter`), and how an ossd's controller sets the limit;
//! * [`ops`]: the file operations, write-behind and size tracking, layouts as xattrs;
//! * `fs`: the `fuser` adapter;
//! * [`lfs`]: `pfsqos setstripe`/`getstripe` over the layout xattrs.
//!
//! The client runs on its own tokio runtime (2 worker threads); FUSE session threads decode
//! kernel requests and hand them to it.
//!
//! pfsqos-mount's one job is this client. API boundary: [`mount`] with a [`MountConfig`] (built
//! from the command line's [`MountArgs`]) gives a [`Mounted`] file system; [`lfs`] works on a
//! mounted one. It talks to the servers only through `pfsqos-wire`; the process around it
//! (signals, logging) is the `pfsqos` binary's.

mod args;
mod fs;
pub mod iez_trace;
mod jobid;
pub mod lfs;
mod limit;
mod ops;
mod oss_pool;
#[cfg(test)]
mod read_ahead_tests;
mod stripe;

pub use args::MountArgs;
pub use jobid::{validate_nodes_var, validate_var, JOBNODES_VAR_DEFAULT};
pub use limit::LIMIT_LEASE;
pub use ops::{local_nid, SentRpc, GATHER_FLUSH_AFTER, RPC_TRACE_MAX};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use tracing::info;

use oss_pool::{MdsPool, OstPool, RECOVERY_DEFAULT};
use pfsqos_wire::protocol::IO_LEN_BYTES_MAX;

/// Default RPC size (Lustre's default `brw_size` of 4 MiB).
pub const BRW_SIZE_DEFAULT_BYTES: u64 = pfsqos_core::lustre::BRW_SIZE_BYTES_DEFAULT;
/// Default RPCs in flight per OST (Lustre's `max_rpcs_in_flight`).
pub const MAX_RPCS_IN_FLIGHT_DEFAULT: usize =
    pfsqos_core::lustre::MAX_RPCS_IN_FLIGHT_DEFAULT as usize;
/// Default dirty budget (Lustre's `max_dirty_mb` default per OSC is of this order).
pub const MAX_DIRTY_MB_DEFAULT: u64 = 64;
/// Default read-ahead: the client's window and mount-wide budget (Lustre's
/// `max_read_ahead_mb`), or the kernel's window with the page cache. 32 MiB keeps both OSTs'
/// RPC windows (8 RPCs of 1 MiB each) full for one sequential reader: with 8 MiB, cold reads
/// ran at 63 % of the backing directory, with 32 MiB at 82 % (docs/benchmarks.md). Lustre's
/// own defaults are larger still: min(RAM / 32, 1 GiB) per mount, a quarter of that per file.
pub const MAX_READ_AHEAD_MB_DEFAULT: u64 = 32;
/// Default FUSE session threads.
pub const THREADS_DEFAULT: usize = 4;
/// Largest FUSE write the kernel sends: 1 MiB (256 pages, the kernel's default
/// `max_pages` limit); bigger writes arrive split.
pub const FUSE_WRITE_BYTES_MAX: u32 = 1 << 20;

/// Everything `pfsqos mount` takes.
#[derive(Clone, Debug)]
pub struct MountConfig {
    pub mountpoint: PathBuf,
    /// The MDS, `HOST:PORT`.
    pub mds: String,
    pub key: Vec<u8>,
    pub jobid_var: String,
    pub jobid_name: String,
    /// Environment variable holding the job's node count, sent with every RPC (`disable`:
    /// none is sent).
    pub jobnodes_var: String,
    pub max_rpcs_in_flight: usize,
    pub brw_size_bytes: u64,
    pub max_dirty_mb: u64,
    /// With `direct_io`, the client's own read-ahead window and mount-wide budget (MiB; 0:
    /// none); without, the kernel's read-ahead window for this mount (0 leaves its 128 KiB).
    pub max_read_ahead_mb: u64,
    /// Open files with FUSE direct I/O (the default; `--page-cache` turns it off): no copy
    /// into the kernel's page cache on this client (one memory copy less per byte written or
    /// read, and no stale cached pages when other clients write: pfsqos has no locks to keep
    /// client caches coherent, as Lustre's LDLM does); the client gathers writes into whole
    /// RPCs and reads ahead itself. Shared mappings (`MAP_SHARED`) are refused: programs that
    /// need them want the page cache.
    pub direct_io: bool,
    pub threads: usize,
    /// How long a request waits for a restarting daemon before failing with `EIO`.
    pub recovery: Duration,
    /// How long gathered bytes wait for the rest of their RPC (default
    /// [`GATHER_FLUSH_AFTER`]); not a command-line option.
    pub gather_flush_after: Duration,
    /// Keep a bounded trace of the bulk RPCs sent ([`Mounted::rpc_trace`]); not a
    /// command-line option (tests compare it with the simulator's RPCs).
    pub rpc_trace: bool,
    /// Let users other than the one who mounted use the mount (FUSE's `allow_other`). For a
    /// user other than root, fusermount3 grants it only when /etc/fuse.conf has
    /// `user_allow_other`, so it is asked for only when configured.
    pub allow_other: bool,
    /// Write iez's first-run trace of the files created through the mount here
    /// (`--iez-trace`); see [`iez_trace`].
    pub iez_trace: Option<PathBuf>,
    /// Most files the trace holds (`--iez-trace-files-max`).
    pub iez_trace_files_max: usize,
    /// Leave the limits the ossds state unapplied (`--ignore-server-limit`): the node's
    /// limit is applied by something else (`pfsqos tc-client`).
    pub ignore_server_limit: bool,
}

impl MountConfig {
    /// Defaults for everything but the mount point, MDS and key.
    pub fn new(mountpoint: PathBuf, mds: String, key: Vec<u8>) -> MountConfig {
        MountConfig {
            mountpoint,
            mds,
            key,
            jobid_var: jobid::JOBID_VAR_DEFAULT.to_string(),
            jobid_name: jobid::JOBID_NAME_DEFAULT.to_string(),
            jobnodes_var: jobid::JOBNODES_VAR_DEFAULT.to_string(),
            max_rpcs_in_flight: MAX_RPCS_IN_FLIGHT_DEFAULT,
            brw_size_bytes: BRW_SIZE_DEFAULT_BYTES,
            max_dirty_mb: MAX_DIRTY_MB_DEFAULT,
            max_read_ahead_mb: MAX_READ_AHEAD_MB_DEFAULT,
            direct_io: true,
            threads: THREADS_DEFAULT,
            recovery: RECOVERY_DEFAULT,
            gather_flush_after: ops::GATHER_FLUSH_AFTER,
            rpc_trace: false,
            allow_other: false,
            iez_trace: None,
            iez_trace_files_max: iez_trace::TRACE_FILES_MAX_DEFAULT,
            ignore_server_limit: false,
        }
    }

    /// Checks every option, naming it and the allowed values.
    pub fn validate(&self) -> anyhow::Result<()> {
        let rif_max = pfsqos_core::lustre::MAX_RPCS_IN_FLIGHT_MAX as usize;
        if !(1..=rif_max).contains(&self.max_rpcs_in_flight) {
            bail!(
                "--max-rpcs-in-flight {}: allowed 1..={rif_max}",
                self.max_rpcs_in_flight
            );
        }
        if self.brw_size_bytes < 4096
            || self.brw_size_bytes > IO_LEN_BYTES_MAX
            || !self.brw_size_bytes.is_multiple_of(4096)
        {
            bail!(
                "--brw-size-bytes {}: allowed a multiple of 4096 in 4096..={IO_LEN_BYTES_MAX}",
                self.brw_size_bytes
            );
        }
        if !(1..=65536).contains(&self.max_dirty_mb)
            || self.max_dirty_mb << 20 < self.brw_size_bytes
        {
            bail!(
                "--max-dirty-mb {}: allowed 1..=65536 and at least one RPC ({} bytes)",
                self.max_dirty_mb,
                self.brw_size_bytes
            );
        }
        if self.max_read_ahead_mb > 1024 {
            bail!(
                "--max-read-ahead-mb {}: allowed 0..=1024",
                self.max_read_ahead_mb
            );
        }
        if !(1..=64).contains(&self.threads) {
            bail!("--threads {}: allowed 1..=64", self.threads);
        }
        jobid::validate_var(&self.jobid_var).map_err(|e| anyhow::anyhow!("--jobid-var: {e}"))?;
        jobid::validate_pattern(&self.jobid_name)
            .map_err(|e| anyhow::anyhow!("--jobid-name: {e}"))?;
        jobid::validate_nodes_var(&self.jobnodes_var)
            .map_err(|e| anyhow::anyhow!("--jobnodes-var: {e}"))?;
        if !(1..=iez_trace::TRACE_FILES_MAX_DEFAULT).contains(&self.iez_trace_files_max) {
            bail!(
                "--iez-trace-files-max {}: allowed 1..={}",
                self.iez_trace_files_max,
                iez_trace::TRACE_FILES_MAX_DEFAULT
            );
        }
        if self.recovery.is_zero() || self.recovery > Duration::from_secs(3600) {
            bail!(
                "recovery time (--recovery-s) {:?}: allowed more than 0 and at most 1 h",
                self.recovery
            );
        }
        Ok(())
    }
}

/// A mounted file system; unmounts when dropped.
pub struct Mounted {
    trace: Option<ops::RpcTrace>,
    iez_trace: Option<Arc<iez_trace::IezTrace>>,
    limiter: Arc<limit::NodeLimiter>,
    session: Option<fuser::BackgroundSession>,
    rt: Option<tokio::runtime::Runtime>,
    mountpoint: PathBuf,
}

impl Mounted {
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The bulk RPCs this client sent, oldest first (the newest [`RPC_TRACE_MAX`]), if
    /// the mount was made with [`MountConfig::rpc_trace`].
    pub fn rpc_trace(&self) -> Option<Vec<ops::SentRpc>> {
        self.trace.as_ref().map(|t| {
            t.lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .copied()
                .collect()
        })
    }

    /// The node's outgoing limit in force (`None`: unlimited): the strictest an ossd stated
    /// within [`LIMIT_LEASE`].
    pub fn limit_bytes_per_s(&self) -> Option<u64> {
        self.limiter.limit_bytes_per_s()
    }

    /// Write bytes the outgoing limiter has let through so far (each counted once its RPC
    /// may start; a resent RPC counts again).
    pub fn sent_write_bytes(&self) -> u64 {
        self.limiter.sent_bytes()
    }

    /// True once the kernel has ended the session (e.g. `umount` from outside).
    pub fn is_finished(&self) -> bool {
        self.session.as_ref().is_none_or(|s| s.guard.is_finished())
    }

    /// Unmounts (if still mounted) and stops the client.
    pub fn unmount(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(s) = self.session.take() {
            // Unmounted from outside: the kernel side is gone, only the thread is left.
            if !s.guard.is_finished() {
                detach(&self.mountpoint);
            }
            // The session thread ends once the kernel has destroyed the connection: at once after
            // a plain unmount, after the last open file is closed after a lazy one.
            if let Err(e) = s.join() {
                tracing::warn!(mountpoint = %self.mountpoint.display(), "unmount: {e}");
            }
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
        // After the session: every create and write through the mount is in the trace.
        if let Some(t) = self.iez_trace.take() {
            if let Err(e) = t.write(true) {
                tracing::warn!(file = %t.file().display(), "iez trace: {e}");
            }
        }
    }
}

/// Unmounts `mountpoint`. While files are open a plain unmount fails with `EBUSY`, and exiting
/// then would leave a dead mount ("Transport endpoint is not connected") and lose the
/// write-behind data of those files; so it detaches lazily instead: the mount leaves the
/// namespace at once, open files keep working, and the kernel ends the session when the last
/// one is closed, after which their data has reached the OSTs.
fn detach(mountpoint: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(mountpoint.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: `path` is a valid NUL-terminated string that outlives both calls.
    if unsafe { libc::umount2(path.as_ptr(), 0) } == 0 {
        return;
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EBUSY) {
        tracing::warn!(
            mountpoint = %mountpoint.display(),
            "files are still open: detaching lazily; the client exits when the last one is closed"
        );
        // SAFETY: as above.
        if unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) } != 0 {
            let err = std::io::Error::last_os_error();
            tracing::warn!(mountpoint = %mountpoint.display(), "lazy unmount: {err}");
        }
    } else {
        tracing::warn!(mountpoint = %mountpoint.display(), "unmount: {err}");
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Connects to the MDS (failing at once on a wrong address or key), learns the OSTs, and
/// mounts. Returns once the kernel has the mount; requests are served in the background.
pub fn mount(config: MountConfig) -> anyhow::Result<Mounted> {
    config.validate()?;
    if !Path::new("/dev/fuse").exists() {
        bail!("/dev/fuse does not exist: load the fuse module (modprobe fuse) to mount");
    }
    match std::fs::metadata(&config.mountpoint) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!(
            "mount point {} is not a directory: give a directory to mount on",
            config.mountpoint.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "mount point {} does not exist: create it first (mkdir -p {}), as for mount(8)",
            config.mountpoint.display(),
            config.mountpoint.display()
        ),
        Err(e) => bail!("mount point {}: {e}", config.mountpoint.display()),
    }
    if !is_root() && !dev_fuse_usable() {
        bail!(
            "/dev/fuse is not readable and writable by uid {} (its mode is {:o}): a user other \
             than root mounts through it, so it must be mode 666 (the usual; some containers \
             make it 600), or mount as root",
            current_uid(),
            std::fs::metadata("/dev/fuse")
                .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
                .unwrap_or(0)
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("pfsqos-client")
        .enable_all()
        .build()?;
    let limiter = Arc::new(if config.ignore_server_limit {
        limit::NodeLimiter::ignoring_statements()
    } else {
        limit::NodeLimiter::new()
    });
    let ops = rt.block_on(connect(&config, &limiter))?;
    let trace = ops.rpc_trace();
    let iez_trace = ops.iez_trace();
    if let Some(t) = &iez_trace {
        // Rewrites the trace while it changes, so an operator can fetch it during a run.
        let t = t.clone();
        rt.spawn(async move {
            let mut failing = false;
            loop {
                tokio::time::sleep(iez_trace::TRACE_WRITE_INTERVAL).await;
                let t = t.clone();
                let r = tokio::task::spawn_blocking(move || {
                    t.write(false)
                        .map_err(|e| format!("{}: {e}", t.file().display()))
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
                match r {
                    Err(e) if !failing => {
                        tracing::warn!("iez trace not written (retried): {e}");
                        failing = true;
                    }
                    Err(_) => {}
                    Ok(()) => failing = false,
                }
            }
        });
    }
    let fs = fs::PfsFs::new(
        Arc::new(ops),
        rt.handle().clone(),
        FUSE_WRITE_BYTES_MAX,
        config.direct_io,
    );
    let mut options = fuser::Config::default();
    options.mount_options = vec![
        fuser::MountOption::FSName(format!("pfsqos@{}", config.mds)),
        fuser::MountOption::Subtype("pfsqos".into()),
        fuser::MountOption::DefaultPermissions,
        fuser::MountOption::NoAtime,
    ];
    options.acl = if config.allow_other {
        fuser::SessionACL::All
    } else {
        fuser::SessionACL::Owner
    };
    options.n_threads = Some(config.threads);
    let session = fuser::spawn_mount(fs, &config.mountpoint, &options).map_err(|e| {
        let mut msg = format!("mounting on {}: {e}", config.mountpoint.display());
        if config.allow_other && !is_root() {
            msg.push_str(&format!(
                "\nallow_other was asked for (--allow-other, or allow_other = true in the \
                 cluster file's [mount]); fusermount3 grants it to a user other than root only \
                 when /etc/fuse.conf has the line `user_allow_other`{}. Add that line (as root), \
                 or mount without allow_other (then only uid {} can use the mount)",
                if fuse_conf_allows_other() {
                    " (it does: see the error above)"
                } else {
                    " (it does not)"
                },
                current_uid()
            ));
        }
        anyhow::anyhow!(msg)
    })?;
    let mounted = Mounted {
        trace,
        iez_trace,
        limiter,
        session: Some(session),
        rt: Some(rt),
        mountpoint: config.mountpoint.clone(),
    };
    // A stat of the root is answered only after the kernel's INIT handshake: from here on the
    // mount serves requests, and the read-ahead set below is not undone by INIT.
    let root = std::fs::metadata(&config.mountpoint)
        .with_context(|| format!("stat of the new mount {}", config.mountpoint.display()))?;
    if config.max_read_ahead_mb > 0 && !config.direct_io {
        set_read_ahead(&root, config.max_read_ahead_mb);
    }
    info!(mountpoint = %config.mountpoint.display(), mds = %config.mds, "mounted");
    Ok(mounted)
}

fn current_uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

fn is_root() -> bool {
    current_uid() == 0
}

/// Whether this process may open /dev/fuse for reading and writing.
fn dev_fuse_usable() -> bool {
    // SAFETY: a NUL-terminated literal; access(2) reads nothing else of ours.
    unsafe { libc::access(c"/dev/fuse".as_ptr(), libc::R_OK | libc::W_OK) == 0 }
}

/// Whether /etc/fuse.conf has an uncommented `user_allow_other` line.
fn fuse_conf_allows_other() -> bool {
    std::fs::read_to_string("/etc/fuse.conf").is_ok_and(|t| {
        t.lines()
            .any(|l| l.split('#').next().unwrap_or("").trim() == "user_allow_other")
    })
}

/// Sets the kernel's read-ahead window of the mount's backing device info: FUSE starts at
/// 128 KiB, which leaves a sequential reader with about one request in flight; a larger window
/// lets the kernel issue several 1 MiB reads ahead (the client serves them concurrently).
fn set_read_ahead(root: &std::fs::Metadata, mb: u64) {
    use std::os::unix::fs::MetadataExt;
    let dev = root.dev();
    let path = format!(
        "/sys/class/bdi/{}:{}/read_ahead_kb",
        libc::major(dev),
        libc::minor(dev)
    );
    if let Err(e) = std::fs::write(&path, format!("{}", mb * 1024)) {
        tracing::warn!(%path, "read-ahead not set ({e}); the kernel's default stays");
    }
}

async fn connect(
    config: &MountConfig,
    limiter: &Arc<limit::NodeLimiter>,
) -> anyhow::Result<ops::Ops> {
    let addr = tokio::net::lookup_host(&config.mds)
        .await
        .with_context(|| format!("--mds {}", config.mds))?
        .next()
        .with_context(|| format!("--mds {} resolves to no address", config.mds))?;
    let key: Arc<[u8]> = config.key.clone().into();
    let mds = MdsPool::new(addr, key.clone(), config.recovery);
    // An MDS that refuses or drops connections may be starting or busy (daemons started
    // together, by hand or by systemd; a full pre-auth budget): wait for it up to the
    // recovery time. A wrong key or any other failure fails the mount at once.
    let deadline = tokio::time::Instant::now() + config.recovery;
    let mut waited = false;
    let mut c = loop {
        match mds.prime().await {
            Err(e) if mds_may_come_back(&e) && tokio::time::Instant::now() < deadline => {
                if !waited {
                    info!(mds = %addr, error = %e, "the MDS refuses or drops connections; waiting for it (at most {:?})", config.recovery);
                    waited = true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => break r.with_context(|| format!("connecting to the MDS at {addr}"))?,
        }
    };
    let statfs = c
        .statfs()
        .await
        .with_context(|| format!("statfs of the MDS at {addr}"))?;
    mds.give(c);
    if statfs.osts.is_empty() || statfs.osts.len() > pfsqos_wire::protocol::OST_COUNT_MAX as usize {
        bail!("the MDS lists {} OSTs", statfs.osts.len());
    }
    let osts = statfs
        .osts
        .iter()
        .enumerate()
        .map(|(i, o)| {
            if o.index as usize != i {
                bail!("the MDS lists OST {} at position {i}", o.index);
            }
            Ok(Arc::new(OstPool::new(
                o.index,
                o.oss_addr.clone(),
                o.oss_ost_index,
                key.clone(),
                config.max_rpcs_in_flight as u32,
                limiter.clone(),
                config.recovery,
            )))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let jobids = jobid::JobIds::new(&config.jobid_var, &config.jobid_name, &config.jobnodes_var)
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(ops::Ops::new(
        mds,
        osts,
        jobids,
        ops::local_nid(addr),
        ops::Tuning {
            brw_size_bytes: config.brw_size_bytes,
            dirty_bytes_max: config.max_dirty_mb << 20,
            read_ahead_bytes: if config.direct_io {
                config.max_read_ahead_mb << 20
            } else {
                0
            },
            gather_flush_after: config.gather_flush_after,
            rpc_trace: config.rpc_trace,
            iez_trace: config
                .iez_trace
                .clone()
                .map(|f| Arc::new(iez_trace::IezTrace::new(f, config.iez_trace_files_max))),
        },
    ))
}

/// Whether a failure to reach the MDS may pass by waiting: the connection refused, reset,
/// aborted or closed by the server before a word of the handshake was answered (an MDS
/// starting or restarting, or one whose pre-auth budget is full). A wrong key is told at the
/// handshake (a protocol error) and is not one of these.
pub fn mds_may_come_back(e: &pfsqos_wire::client::ClientError) -> bool {
    use pfsqos_wire::client::ClientError;
    use pfsqos_wire::conn::ConnError;
    use std::io::ErrorKind;
    match e {
        ClientError::Conn(ConnError::Io(e)) => matches!(
            e.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::BrokenPipe
                | ErrorKind::UnexpectedEof
        ),
        ClientError::Conn(ConnError::Closed | ConnError::Evicted) => true,
        _ => false,
    }
}

#[cfg(test)]
mod recovery_tests {
    use super::mds_may_come_back;
    use pfsqos_wire::client::ClientError;
    use pfsqos_wire::conn::ConnError;
    use pfsqos_wire::protocol::{Errno, ProtocolError, RemoteError};
    use std::io::{Error, ErrorKind};
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use pfsqos_mds::{Mds, MdsConfig, OssSpec};

    use super::{connect, MountConfig};

    const KEY: &[u8] = b"recovery-test-cluster-key-0123456";
    /// The servers' own key: the server roles (`Lctl`, `Mds`, `Oss`) prove it.
    const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";

    /// A refused, reset or closed connection is waited out (`--recovery-s`); a wrong key or
    /// a remote error is not.
    #[test]
    fn the_mount_waits_out_a_reset_or_closed_mds_connection() {
        let io = |kind| ClientError::Conn(ConnError::Io(Error::from(kind)));
        for kind in [
            ErrorKind::ConnectionRefused,
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionAborted,
            ErrorKind::BrokenPipe,
        ] {
            assert!(mds_may_come_back(&io(kind)), "{kind:?}");
        }
        assert!(mds_may_come_back(&ClientError::Conn(ConnError::Closed)));
        assert!(!mds_may_come_back(&io(ErrorKind::PermissionDenied)));
        let wrong_key = ProtocolError::Invalid("wrong key".into());
        assert!(!mds_may_come_back(&ClientError::Conn(ConnError::Protocol(
            wrong_key
        ))));
        let remote = RemoteError::new(Errno::EIO, "x");
        assert!(!mds_may_come_back(&ClientError::Remote(remote)));
    }

    /// Connections the front has dropped, and those it has passed on to the MDS.
    #[derive(Default)]
    struct FrontCounts {
        dropped: AtomicUsize,
        forwarded: AtomicUsize,
    }

    /// A listener in front of the MDS that accepts and drops its first `drops` connections
    /// (with a reset when `reset`, else with a plain close), as a restarting MDS or one whose
    /// pre-auth budget is full does, then passes every later connection on to `mds`.
    async fn flaky_front(
        mds: SocketAddr,
        drops: usize,
        reset: bool,
    ) -> (SocketAddr, Arc<FrontCounts>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(FrontCounts::default());
        let c = counts.clone();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                if c.dropped.load(Ordering::SeqCst) < drops {
                    c.dropped.fetch_add(1, Ordering::SeqCst);
                    if reset {
                        abort_on_close(&s);
                        drop(s);
                    } else {
                        // An end of stream before any answer. What the client sends is read
                        // and thrown away: closing with its hello unread would make the kernel
                        // reset the connection instead.
                        tokio::spawn(async move {
                            use tokio::io::AsyncWriteExt;
                            let _ = s.shutdown().await;
                            let _ = tokio::io::copy(&mut s, &mut tokio::io::sink()).await;
                        });
                    }
                    continue;
                }
                c.forwarded.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut to = tokio::net::TcpStream::connect(mds).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut s, &mut to).await;
                });
            }
        });
        (addr, counts)
    }

    /// SO_LINGER with a zero timeout: closing the socket sends a reset, not an end of stream.
    fn abort_on_close(s: &tokio::net::TcpStream) {
        use std::os::fd::AsRawFd;
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket descriptor and a `linger` that outlives the call, with its size.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
    }

    /// The mount's connection to the MDS at start (`connect`) waits out an MDS that resets or
    /// closes its connections within the recovery time, and mounts once it serves: it is not
    /// given up on at the first reset or close by the peer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_mount_connects_once_an_mds_that_reset_or_closed_connections_serves() {
        let tmp = tempfile::tempdir().unwrap();
        let oss = OssSpec {
            // Never connected to: the mount reaches the OSSs only for I/O.
            addr: "127.0.0.1:1".into(),
            ost_count: 2,
        };
        let mut mc = MdsConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            tmp.path().join("mds.db"),
            KEY.to_vec(),
            SERVER_KEY.to_vec(),
            vec![oss],
        );
        mc.mds_load_period = None;
        let mds = Mds::start(mc).await.unwrap();
        // Several drops in a row: each would have ended the mount at once.
        const DROPS: usize = 3;
        for reset in [true, false] {
            let (front, counts) = flaky_front(mds.local_addr(), DROPS + 1, reset).await;
            // The front's first drop, seen by a plain client: the failure the mount meets.
            match pfsqos_wire::client::MdsClient::connect(front, KEY).await {
                Err(ConnError::Io(e)) if reset && e.kind() == ErrorKind::ConnectionReset => {}
                Err(ConnError::Closed) if !reset => {}
                Err(ConnError::Io(e)) if !reset && e.kind() == ErrorKind::UnexpectedEof => {}
                other => panic!(
                    "the front (reset: {reset}) answered {:?}",
                    other.map(|_| ()).map_err(|e| e.to_string())
                ),
            }
            let mut config =
                MountConfig::new(tmp.path().join("mnt"), front.to_string(), KEY.to_vec());
            // Far more than the drops take: the test ends when the mount connects, not at
            // a deadline.
            config.recovery = Duration::from_secs(600);
            let ops = connect(&config, &Arc::new(crate::limit::NodeLimiter::new())).await;
            let how = if reset { "reset" } else { "closed" };
            let ops = ops.unwrap_or_else(|e| {
                panic!("the mount gave up on an MDS whose connections were {how}: {e:#}")
            });
            assert_eq!(
                counts.dropped.load(Ordering::SeqCst),
                DROPS + 1,
                "every dropped ({how}) connection was tried"
            );
            assert!(
                counts.forwarded.load(Ordering::SeqCst) >= 1,
                "connected without reaching the MDS"
            );
            drop(ops);
        }
        mds.shutdown().await;
    }
}
