//! `pfsqos up` and `pfsqos down`: start and stop a cluster described by a [`Cluster`] file as
//! background processes of the `pfsqos` binary itself (`ossd`, `mds`, `mount`).
//!
//! `up` starts the roles in dependency order (OSSs, MDS, mount), each detached in its own
//! process group (so a Ctrl-C in the shell that ran `up` does not reach it) with stdout and
//! stderr appended to `STATE_DIR/<role>.log`. It writes `STATE_DIR/<role>.pid` as soon as the
//! process exists, then waits (at most [`READY_TIMEOUT`]) for the role's ready line in its log
//! (`ossd listening on ADDR`, `mds listening on ADDR`, `mount ready on PATH`). If a role fails,
//! `up` stops what it started, removes their pid files and shows the failed role's log tail.
//!
//! `down` unmounts first (SIGTERM to the mount process; if the mount point is still mounted,
//! `fusermount3 -u`, then `umount -l`), then sends SIGTERM to the MDS and the OSSs, waits at
//! most [`STOP_TIMEOUT`] each and SIGKILLs a daemon that is still alive, with a warning. Data,
//! database, key and logs stay. A pid file is trusted only if `/proc/PID/cmdline` shows the
//! role's subcommand, so a recycled pid is never signalled.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use pfsqos_mds::{MdsArgs, OssSpec};
use pfsqos_mount::MountArgs;
use pfsqos_ossd::OssdArgs;

use crate::cluster::{reach_addr, Cluster, Role};

/// How long `up` waits for a role's ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `down` waits for a role to exit after SIGTERM before it sends SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of a failed role's log that `up` prints.
pub const LOG_TAIL_LINES: usize = 20;
/// Bytes of random key `up` generates (written as hex).
pub const KEY_BYTES: usize = 32;
const POLL: Duration = Duration::from_millis(25);

/// What `up` needs besides the cluster.
#[derive(Clone, Debug)]
pub struct UpOptions {
    /// Start only this role (multi-host: one role per host from the same file).
    pub only: Option<Role>,
    /// The `pfsqos` binary to run the roles with (normally `std::env::current_exe()`).
    pub exe: PathBuf,
    pub ready_timeout: Duration,
}

/// A role `up` started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    pub role: Role,
    pub pid: u32,
    /// What follows `listening on ` / `ready on ` in its ready line.
    pub ready: String,
    /// The metrics URL the daemon printed before its ready line, if it serves metrics.
    pub metrics: Option<String>,
    pub log: PathBuf,
}

fn pid_file(c: &Cluster, role: Role) -> PathBuf {
    c.state_dir.join(format!("{}.pid", role.file_stem()))
}

fn log_file(c: &Cluster, role: Role) -> PathBuf {
    c.state_dir.join(format!("{}.log", role.file_stem()))
}

/// Whether `pid` is a live (not zombie) process running `pfsqos <subcommand>`.
pub fn is_role_process(pid: u32, role: Role) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesised command name, which may itself hold `)`.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim().chars().next());
    if matches!(state, None | Some('Z') | Some('X')) {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    args.get(1) == Some(&role.subcommand().as_bytes())
}

/// The pid in a role's pid file, if the file exists and names a live process of that role.
fn live_pid(c: &Cluster, role: Role) -> Option<u32> {
    let text = std::fs::read_to_string(pid_file(c, role)).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    is_role_process(pid, role).then_some(pid)
}

fn send_signal(pid: u32, signal: libc::c_int) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| std::io::Error::other("pid out of range"))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; the pid was checked
    // to be a live process of the role just before.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Creates the key file with [`KEY_BYTES`] random bytes as hex, mode 0600, unless it exists.
/// Returns whether it was created.
pub fn ensure_key(path: &Path) -> anyhow::Result<bool> {
    if path.exists() {
        pfsqos_wire::key::read_key_file(path)?;
        return Ok(false);
    }
    write_new_key(path, path)?;
    Ok(true)
}

/// Writes a fresh key to `tmp` (created, never overwritten, mode 0600 from creation) and moves
/// it to `path`.
fn write_new_key(tmp: &Path, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("no randomness for the key: {e}"))?;
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    // create_new: never overwrite a key another `up` wrote meanwhile; mode applies at creation.
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)
        .with_context(|| format!("creating key file {}", tmp.display()))?;
    f.write_all(format!("{hex}\n").as_bytes())?;
    f.sync_all()?;
    if tmp != path {
        std::fs::rename(tmp, path)
            .with_context(|| format!("moving the new key to {}", path.display()))?;
    }
    Ok(())
}

/// `pfsqos keygen FILE`: a new cluster key, mode 0600. An existing file is kept unless
/// `force` (then replaced in one rename, so no reader sees half a key).
pub fn keygen(path: &Path, force: bool) -> anyhow::Result<()> {
    match (path.symlink_metadata(), force) {
        (Ok(_), false) => bail!(
            "{} exists; the daemons and clients holding it would no longer match a new key. \
             Give --force to replace it (then copy it to every host again)",
            path.display()
        ),
        (Ok(m), true) if m.is_dir() => bail!("{} is a directory", path.display()),
        (Ok(_), true) => {
            let name = path
                .file_name()
                .map_or("key".into(), |n| n.to_string_lossy());
            let tmp = path.with_file_name(format!(".{name}.new-{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            write_new_key(&tmp, path)
        }
        (Err(_), _) => write_new_key(path, path),
    }
}

/// The last `n` lines of a file (lossy UTF-8), for error messages.
pub fn log_tail(path: &Path, n: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    // The tail of a log is in its last 64 KiB unless lines are enormous.
    let start = len.saturating_sub(64 << 10);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The ready line a role prints, up to the value that follows it.
fn ready_prefix(role: Role) -> &'static str {
    match role {
        Role::Mds => "mds listening on ",
        Role::Oss(_) => "ossd listening on ",
        Role::Mount => "mount ready on ",
    }
}

/// Waits for the role's ready line in its log from byte `from`, or for the child to exit.
/// Returns the ready value and the metrics URL printed before it, if any.
fn wait_ready(
    child: &mut Child,
    role: Role,
    log: &Path,
    from: u64,
    timeout: Duration,
) -> anyhow::Result<(String, Option<String>)> {
    let deadline = Instant::now() + timeout;
    let prefix = ready_prefix(role);
    loop {
        if let Ok(mut f) = File::open(log) {
            let mut buf = Vec::new();
            if f.seek(SeekFrom::Start(from)).is_ok() && f.read_to_end(&mut buf).is_ok() {
                let text = String::from_utf8_lossy(&buf);
                let mut metrics = None;
                for line in text.lines() {
                    if let Some((_, url)) = line.split_once(" metrics on ") {
                        metrics = Some(url.trim().to_string());
                    }
                    if let Some(v) = line.strip_prefix(prefix) {
                        return Ok((v.trim().to_string(), metrics));
                    }
                }
            }
        }
        if let Some(status) = child.try_wait()? {
            bail!("{role} exited ({status}) before it was ready");
        }
        if Instant::now() >= deadline {
            bail!("{role} was not ready within {timeout:?}");
        }
        std::thread::sleep(POLL);
    }
}

/// The command line of a role. `oss_addrs` are the addresses the MDS gives clients for each
/// OSS; `mds_addr` the one the mount connects to.
fn role_args(c: &Cluster, role: Role, oss_addrs: &[String], mds_addr: &str) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![role.subcommand().into()];
    a.extend(match role {
        Role::Oss(i) => ossd_args(c, i, oss_addrs).to_args(),
        Role::Mds => mds_args(c, oss_addrs).to_args(),
        Role::Mount => mount_args(c, mds_addr).to_args(),
    });
    a
}

/// `pfsqos ossd`'s options for OSS `i` of the cluster; `oss_addrs` are where every OSS is
/// reached, its DSFQ synchronization peers. An OSS still listening on port 0 (its port is
/// known only once it runs) is no one's peer.
fn ossd_args(c: &Cluster, i: usize, oss_addrs: &[String]) -> OssdArgs {
    let o = &c.osses[i];
    let mut a = OssdArgs::new(
        o.listen,
        o.osts.clone(),
        c.key_file.clone(),
        c.server_key_file.clone(),
    );
    a.fsname = c.fsname.clone();
    a.threads = o.threads;
    a.cpts = o.cpts;
    a.ceiling_bytes_per_s = o.ceiling_bytes_per_s;
    a.metrics_listen = o.metrics_listen;
    a.policy = o.policy.clone();
    a.period_ms = o.period_ms;
    a.capacity_rpcs_per_s = o.capacity_rpcs_per_s;
    a.brw_size_bytes = o.brw_size_bytes;
    a.job_nodes = o.job_nodes.clone();
    a.buffered_writes = o.buffered_writes;
    a.lustre_version = o.lustre_version.clone();
    a.bulk_budget_bytes = o.bulk_budget_bytes;
    a.bulk_share_per_client_bytes = o.bulk_share_per_client_bytes;
    a.bulk_idle_timeout_ms = o.bulk_idle_timeout_ms;
    a.reply_idle_timeout_ms = o.reply_idle_timeout_ms;
    a.control_record = o.control_record.clone();
    a.peers = oss_addrs
        .iter()
        .enumerate()
        .filter(|&(j, addr)| j != i && !addr.ends_with(":0"))
        .map(|(_, addr)| addr.clone())
        .collect();
    // Every CPT of every OSS is one DSFQ instance, numbered in cluster-file order.
    a.sync_instance_base = c.osses[..i].iter().map(|o| o.cpts as u32).sum();
    // iez's statistics go to the MDS, named as the MDS knows this OSS; an MDS or OSS on port
    // 0 is not known before it runs, so it gets none (iez then falls back to round robin).
    if let Some(p) = c.mds.iez_report_period_ms {
        if c.mds.listen.port() != 0 && !oss_addrs[i].ends_with(":0") {
            a.report.report_mds = Some(reach_addr(c.mds.host.as_deref(), c.mds.listen));
            a.report.report_as = Some(oss_addrs[i].clone());
            a.report.report_period_ms = Some(p);
        }
    }
    a
}

/// `pfsqos mds`'s options; the MDS tells clients the OSSs at `oss_addrs`.
fn mds_args(c: &Cluster, oss_addrs: &[String]) -> MdsArgs {
    let m = &c.mds;
    MdsArgs {
        listen: m.listen,
        db: m.db.clone(),
        key_file: c.key_file.clone(),
        server_key_file: c.server_key_file.clone(),
        osses: c
            .osses
            .iter()
            .zip(oss_addrs)
            .map(|(o, addr)| OssSpec {
                addr: addr.clone(),
                ost_count: o.osts.len() as u32,
            })
            .collect(),
        stripe_count: m.default_stripe_count,
        stripe_size: m.default_stripe_size_bytes,
        fsname: c.fsname.clone(),
        metrics_listen: m.metrics_listen,
        iez_stats_max_age_ms: m.iez_stats_max_age_ms,
        placer: m.placer.clone(),
    }
}

/// `pfsqos mount`'s options; it connects to the MDS at `mds_addr`.
fn mount_args(c: &Cluster, mds_addr: &str) -> MountArgs {
    let m = &c.mount;
    let mut a = MountArgs::new(m.path.clone(), mds_addr.to_string());
    a.key_file = c.key_file.clone();
    a.jobid_var = m.jobid_var.clone();
    a.jobid_name = m.jobid_name.clone();
    a.jobnodes_var = m.jobnodes_var.clone();
    a.max_rpcs_in_flight = m.max_rpcs_in_flight as usize;
    a.brw_size_bytes = m.brw_size_bytes;
    a.max_dirty_mb = m.max_dirty_mb;
    a.page_cache = m.page_cache;
    a.allow_other = m.allow_other;
    a.iez_trace = m.iez_trace.clone();
    a
}

/// What `up` says of new files' layout: the MDS's default stripe count (`-1`: every OST),
/// out of the cluster's OSTs, and how to change it.
pub fn stripe_banner(default_stripe_count: i32, ost_count: usize) -> String {
    let stripes = match usize::try_from(default_stripe_count) {
        Ok(n) if n > 0 => n.min(ost_count),
        _ => ost_count,
    };
    format!(
        "are striped over {stripes} of the {ost_count} OST(s) (mds.default_stripe_count = \
         {default_stripe_count}; `pfsqos setstripe -c N` for a directory)"
    )
}

/// A hint for a role that failed because its address was taken: the cluster file's field,
/// port 0 (any free port, which the client tools then find in the state directory), or a
/// port free now.
pub fn addr_in_use_hint(role: Role, log_tail: &str) -> Option<String> {
    if !log_tail.contains("Address already in use") && !log_tail.contains("os error 98") {
        return None;
    }
    let field = match role {
        Role::Mds => "[mds] listen",
        Role::Oss(_) => "[[oss]] listen",
        Role::Mount => return None,
    };
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| format!(" or a free port such as 127.0.0.1:{}", a.port()))
        .unwrap_or_default();
    Some(format!(
        "hint: {role}'s port is taken (another `pfsqos up`, or another program): stop it with \
         `pfsqos down`, or set `{field} = \"127.0.0.1:0\"` in a cluster file (port 0: any free \
         port; lctl, stat and mount find it){free}, then `pfsqos up CLUSTER.toml`"
    ))
}

/// Spawns one role detached, writes its pid file and waits for it to be ready.
fn start_role(
    c: &Cluster,
    role: Role,
    args: &[OsString],
    opts: &UpOptions,
) -> anyhow::Result<Started> {
    let log = log_file(c, role);
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .with_context(|| format!("opening log {}", log.display()))?;
    let from = out.metadata()?.len();
    let err = out.try_clone()?;
    let mut child = Command::new(&opts.exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        // Own process group: a Ctrl-C meant for the shell running `up` must not stop it.
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {}", opts.exe.display()))?;
    let pid = child.id();
    let pidf = pid_file(c, role);
    std::fs::write(&pidf, format!("{pid}\n"))
        .with_context(|| format!("writing {}", pidf.display()))?;
    match wait_ready(&mut child, role, &log, from, opts.ready_timeout) {
        Ok((ready, metrics)) => Ok(Started {
            role,
            pid,
            ready,
            metrics,
            log,
        }),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(&pidf);
            // The tail goes last, after the reason, so it reads like a log excerpt; a hint
            // for a taken port after it.
            let tail = log_tail(&log, LOG_TAIL_LINES);
            let hint = addr_in_use_hint(role, &tail)
                .map(|h| format!("\n{h}"))
                .unwrap_or_default();
            Err(anyhow::anyhow!(
                "{e:#}\nlast lines of {}:\n{tail}{hint}",
                log.display()
            ))
        }
    }
}

/// `pfsqos up`: starts the cluster's roles (or `opts.only`), returns what it started.
pub fn up(c: &Cluster, opts: &UpOptions, out: &mut dyn Write) -> anyhow::Result<Vec<Started>> {
    // A broken output (`pfsqos up | head -1`) must not stop `up` between two roles and leave
    // a half-started cluster: output errors are remembered, not returned, and
    // reported once everything is up.
    let mut out = Lenient {
        inner: out,
        failed: None,
    };
    let started = up_to(c, opts, &mut out)?;
    if let Some(e) = out.failed {
        eprintln!("pfsqos: warning: output lost ({e}); the cluster is up");
    }
    Ok(started)
}

/// A writer that swallows the errors of the one it wraps, keeping the first.
struct Lenient<'a> {
    inner: &'a mut dyn Write,
    failed: Option<std::io::Error>,
}

impl Write for Lenient<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.failed.is_none() {
            if let Err(e) = self.inner.write_all(buf) {
                self.failed = Some(e);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.failed.is_none() {
            if let Err(e) = self.inner.flush() {
                self.failed = Some(e);
            }
        }
        Ok(())
    }
}

/// What opening a mounted directory says about the file system behind it.
#[derive(Debug)]
pub enum MountProbe {
    /// The file system answered: a live mount.
    Answering,
    /// The FUSE connection is gone: the mount's process died (see [`probe_mount`]).
    Dead,
    /// Any other error: neither clearly live nor clearly dead.
    Failed(std::io::Error),
}

/// Opens the mounted directory `path` and classifies the answer. Opening a directory always
/// asks the file system (a `stat` may be answered from the kernel's attribute cache even
/// after the connection died).
///
/// A dead FUSE connection answers in one of two ways, and both mean the same: `ENOTCONN` for
/// a request made after the kernel aborted the connection, and `ECONNABORTED` for one queued
/// before, which the abort ends. The second is what a probe right after a `SIGKILL` meets:
/// the killed process's leader is a zombie (what a pid check sees) while its other threads
/// may still be exiting and holding `/dev/fuse` open, so the connection lives a moment more.
/// Blocks while a live mount's process is stopped.
pub fn probe_mount(path: &Path) -> MountProbe {
    match std::fs::read_dir(path) {
        Ok(_) => MountProbe::Answering,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)) => {
            MountProbe::Dead
        }
        Err(e) => MountProbe::Failed(e),
    }
}

/// Unmounts `path` if it is a FUSE mount whose process is gone ([`MountProbe::Dead`], what a
/// killed mount leaves); fails if it is a live mount. Returns whether it cleaned one.
fn clean_dead_mount(path: &Path, out: &mut dyn Write) -> anyhow::Result<bool> {
    if !is_mounted(path) {
        return Ok(false);
    }
    match probe_mount(path) {
        MountProbe::Dead => {}
        MountProbe::Answering => bail!(
            "{} is already mounted (and answering); unmount it or run pfsqos down first",
            path.display()
        ),
        MountProbe::Failed(e) => bail!(
            "{} is mounted and opening it fails ({e}), not as a dead FUSE mount does; \
             unmount it by hand or run pfsqos down first",
            path.display()
        ),
    }
    let unmounted = Command::new("fusermount3")
        .arg("-u")
        .arg(path)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        || Command::new("umount")
            .arg("-l")
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !unmounted || is_mounted(path) {
        bail!(
            "{} is a dead FUSE mount (its process is gone) that could not be unmounted; \
             run `fusermount3 -u {}` by hand",
            path.display(),
            path.display()
        );
    }
    writeln!(out, "cleaned the dead mount at {}", path.display())?;
    Ok(true)
}

fn up_to(c: &Cluster, opts: &UpOptions, out: &mut dyn Write) -> anyhow::Result<Vec<Started>> {
    let roles = c.roles(opts.only).map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&c.state_dir)
        .with_context(|| format!("creating state directory {}", c.state_dir.display()))?;
    let running: Vec<String> = roles
        .iter()
        .filter_map(|&r| live_pid(c, r).map(|pid| format!("{r} (pid {pid})")))
        .collect();
    if !running.is_empty() {
        bail!(
            "already up: {} running with state in {}; run pfsqos down first",
            running.join(", "),
            c.state_dir.display()
        );
    }
    // Keys are generated only where the whole cluster or its MDS starts: on other hosts a new
    // key would not match, so the files must be copied there. A mount (a client node) needs
    // only the cluster key; the servers also need the servers' own.
    let keys: &[(&Path, &str)] = if roles == [Role::Mount] {
        &[(&c.key_file, "cluster")]
    } else {
        &[(&c.key_file, "cluster"), (&c.server_key_file, "server")]
    };
    for &(file, name) in keys {
        if matches!(opts.only, None | Some(Role::Mds)) {
            if ensure_key(file)? {
                writeln!(out, "generated {name} key {} (mode 0600)", file.display())?;
            }
        } else if !file.exists() {
            let to = if name == "server" {
                "every server host (OSS and MDS), never to a client node"
            } else {
                "this host"
            };
            bail!(
                "{name} key {} is missing: copy it from the MDS host to {to} (it is created there by `pfsqos up` or `pfsqos up --only mds`)",
                file.display()
            );
        }
        let mode = std::fs::metadata(file)?.permissions().mode();
        if mode & 0o077 != 0 {
            writeln!(
                out,
                "warning: {name} key {} is readable by others (mode {:o}); chmod 600 it",
                file.display(),
                mode & 0o777
            )?;
        }
    }
    if roles.contains(&Role::Mount) {
        // `pfsqos up --only mount` over a mount whose process was killed: clean it first
        // (creating the mount point would fail with "File exists").
        clean_dead_mount(&c.mount.path, out)?;
        std::fs::create_dir_all(&c.mount.path)
            .with_context(|| format!("creating mount point {}", c.mount.path.display()))?;
    }
    if roles.contains(&Role::Mds) {
        if let Some(dir) = c.mds.db.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
    }

    let mut oss_addrs: Vec<String> = c
        .osses
        .iter()
        .map(|o| reach_addr(o.host.as_deref(), o.listen))
        .collect();
    let mut mds_addr = reach_addr(c.mds.host.as_deref(), c.mds.listen);
    let mut started: Vec<Started> = Vec::new();
    for &role in &roles {
        let args = role_args(c, role, &oss_addrs, &mds_addr);
        match start_role(c, role, &args, opts) {
            Ok(s) => {
                // With port 0 the real port is only known now; later roles need it.
                match role {
                    Role::Oss(i) if c.osses[i].listen.port() == 0 => {
                        if let Ok(a) = s.ready.parse() {
                            oss_addrs[i] = reach_addr(c.osses[i].host.as_deref(), a);
                        }
                    }
                    Role::Mds if c.mds.listen.port() == 0 => {
                        if let Ok(a) = s.ready.parse() {
                            mds_addr = reach_addr(c.mds.host.as_deref(), a);
                        }
                    }
                    _ => {}
                }
                writeln!(
                    out,
                    "{:<7} pid {:<7} {}{}  (log {})",
                    role.to_string(),
                    s.pid,
                    ready_prefix(role),
                    s.ready,
                    s.log.display()
                )?;
                if let Some(m) = &s.metrics {
                    writeln!(out, "{:<19} metrics on {m}", "")?;
                }
                started.push(s);
            }
            Err(e) => {
                for s in started.iter().rev() {
                    let _ = stop_role(c, s.role, STOP_TIMEOUT, &mut std::io::sink());
                }
                let undone = if started.is_empty() {
                    String::new()
                } else {
                    let names: Vec<String> = started.iter().map(|s| s.role.to_string()).collect();
                    format!(" (stopped {} again)", names.join(", "))
                };
                bail!("{role} failed to start{undone}: {e:#}");
            }
        }
    }
    // For the client tools (`lctl`, `stat`, `getstripe`): where the roles really listen.
    crate::discover::write_endpoints(
        &c.state_dir,
        &crate::discover::Endpoints {
            osses: oss_addrs.clone(),
            mds: mds_addr.clone(),
            key_file: c.key_file.clone(),
            server_key_file: Some(c.server_key_file.clone()),
            mount: c.mount.enabled.then(|| c.mount.path.clone()),
            source: String::new(),
        },
    )
    .with_context(|| {
        format!(
            "writing {}",
            c.state_dir.join(crate::discover::ENDPOINTS_FILE).display()
        )
    })?;
    print_usage(c, opts.only, &mds_addr, out)?;
    Ok(started)
}

fn print_usage(
    c: &Cluster,
    only: Option<Role>,
    mds_addr: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let file = c
        .file
        .as_ref()
        .map(|f| format!(" {}", f.display()))
        .unwrap_or_default();
    writeln!(out)?;
    if c.mount.enabled && matches!(only, None | Some(Role::Mount)) {
        writeln!(
            out,
            "files written under {} {} (mds {mds_addr})",
            c.mount.path.display(),
            stripe_banner(c.mds.default_stripe_count, c.ost_count())
        )?;
    } else {
        writeln!(out, "mds at {mds_addr}; no mount started here")?;
    }
    // The client tools find the cluster by themselves from the directory whose pfsqos-state
    // this is; elsewhere the variable names it.
    let found_here = std::env::current_dir()
        .is_ok_and(|d| d.join(crate::discover::STATE_DIR_NAME) == c.state_dir);
    if !found_here {
        writeln!(
            out,
            "  export {}={}",
            crate::discover::ENV_STATE,
            c.state_dir.display()
        )?;
    }
    writeln!(out, "  pfsqos lctl get_param 'obdfilter.*.job_stats'")?;
    writeln!(
        out,
        "  pfsqos lctl set_param ost.OSS.ost_io.nrs_policies='tbf jobid'"
    )?;
    writeln!(out, "  pfsqos stat -i 5")?;
    writeln!(out, "  pfsqos down{file}")?;
    Ok(())
}

/// Whether `path` is a mount point now (listed in /proc/self/mountinfo).
pub fn is_mounted(path: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    info.lines().any(|l| {
        // Field 5 is the mount point, with spaces and the like escaped as octal.
        l.split(' ')
            .nth(4)
            .is_some_and(|m| Path::new(&unescape_mountinfo(m)) == target)
    })
}

fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Stops one role: SIGTERM, wait, SIGKILL after `timeout`; for the mount, also makes sure
/// the mount point is unmounted. Returns whether anything was running.
fn stop_role(
    c: &Cluster,
    role: Role,
    timeout: Duration,
    out: &mut dyn Write,
) -> anyhow::Result<bool> {
    let pidf = pid_file(c, role);
    let mut was_running = false;
    if let Some(pid) = live_pid(c, role) {
        was_running = true;
        send_signal(pid, libc::SIGTERM)
            .with_context(|| format!("signalling {role} (pid {pid})"))?;
        let deadline = Instant::now() + timeout;
        while is_role_process(pid, role) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        if is_role_process(pid, role) {
            writeln!(
                out,
                "warning: {role} (pid {pid}) still running {timeout:?} after SIGTERM; sending SIGKILL"
            )?;
            let _ = send_signal(pid, libc::SIGKILL);
            let deadline = Instant::now() + Duration::from_secs(5);
            while is_role_process(pid, role) && Instant::now() < deadline {
                std::thread::sleep(POLL);
            }
        }
        writeln!(out, "stopped {role} (pid {pid})")?;
    }
    if role == Role::Mount && is_mounted(&c.mount.path) {
        was_running = true;
        let p = &c.mount.path;
        let fusermount = Command::new("fusermount3")
            .arg("-u")
            .arg(p)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if fusermount
            || Command::new("umount")
                .arg("-l")
                .arg(p)
                .status()
                .is_ok_and(|s| s.success())
        {
            writeln!(out, "unmounted {}", p.display())?;
        } else {
            writeln!(
                out,
                "warning: {} is still mounted; unmount it by hand",
                p.display()
            )?;
        }
    }
    match std::fs::remove_file(&pidf) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", pidf.display()))
        }
        _ => {}
    }
    Ok(was_running)
}

/// `pfsqos down`: stops the cluster's roles (or just `only`): the mount first, then the MDS,
/// then the OSSs. Idempotent.
pub fn down(
    c: &Cluster,
    only: Option<Role>,
    timeout: Duration,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut roles = match only {
        Some(r) => vec![r],
        None => {
            let mut r: Vec<Role> = (0..c.osses.len()).map(Role::Oss).collect();
            r.push(Role::Mds);
            // The mount is stopped even when disabled now: the file may have changed since up.
            r.push(Role::Mount);
            r
        }
    };
    roles.reverse();
    let mut any = false;
    for role in roles {
        any |= stop_role(c, role, timeout, out)?;
    }
    if !any {
        writeln!(
            out,
            "nothing running (no live pid files in {})",
            c.state_dir.display()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The banner gives the stripe count new files get, not the OST count.
    #[test]
    fn the_banner_gives_the_default_stripe_count() {
        assert!(stripe_banner(1, 2).starts_with("are striped over 1 of the 2 OST(s)"));
        assert!(stripe_banner(-1, 3).starts_with("are striped over 3 of the 3 OST(s)"));
        assert!(stripe_banner(8, 2).starts_with("are striped over 2 of the 2 OST(s)"));
    }

    #[test]
    fn a_taken_port_gets_a_hint() {
        let tail = "Error: binding 127.0.0.1:7989: Address already in use (os error 98)";
        let h = addr_in_use_hint(Role::Oss(0), tail).unwrap();
        assert!(h.contains("[[oss]] listen = \"127.0.0.1:0\""), "{h}");
        assert!(addr_in_use_hint(Role::Mds, "Permission denied").is_none());
        assert!(addr_in_use_hint(Role::Mount, tail).is_none());
    }

    fn args_text(a: &[OsString]) -> Vec<String> {
        a.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    /// The command lines follow the subcommands' flags; the mount's follows the contract of
    /// `pfsqos mount` (MOUNTPOINT --mds HOST:PORT --key-file F --jobid-var ... ).
    #[test]
    fn role_command_lines() {
        let c = Cluster::from_toml_str(
            r#"
            [cluster]
            state_dir = "/s"
            [mds]
            host = "mds1"
            listen = "0.0.0.0:7989"
            metrics_listen = "0.0.0.0:9989"
            default_stripe_count = -1
            [[oss]]
            host = "oss1"
            listen = "0.0.0.0:7988"
            osts = ["/d/a", "/d/b"]
            ceiling_bytes_per_s = 8388608
            buffered_writes = true
            lustre_version = "2.15"
            policy = "static"
            job_nodes = { "j.1" = 3 }
            control_record = "rec/pi.csv"
            [mount]
            path = "/mnt/p"
            jobid_var = "SLURM_JOB_ID"
            jobid_name = "%j"
            jobnodes_var = "PBS_NUM_NODES"
            max_rpcs_in_flight = 4
            max_dirty_mb = 64
            page_cache = true
            allow_other = true
            "#,
            "c.toml",
            Path::new("/base"),
        )
        .unwrap();
        let oss = vec![reach_addr(c.osses[0].host.as_deref(), c.osses[0].listen)];
        let mds = reach_addr(c.mds.host.as_deref(), c.mds.listen);
        assert_eq!(
            args_text(&role_args(&c, Role::Oss(0), &oss, &mds)).join(" "),
            "ossd --listen 0.0.0.0:7988 --ost /d/a --ost /d/b --key-file /s/cluster.key \
             --server-key-file /s/server.key --fsname pfsqos --threads 8 --cpts 1 --ceiling-bytes-per-s 8388608 --policy static \
             --job-nodes j.1=3 --control-record /base/rec/pi.csv --buffered-writes \
             --lustre-version 2.15.0"
        );
        assert_eq!(
            args_text(&role_args(&c, Role::Mds, &oss, &mds)).join(" "),
            "mds --listen 0.0.0.0:7989 --db /s/mds.db --key-file /s/cluster.key \
             --server-key-file /s/server.key --fsname pfsqos \
             --oss oss1:7988:2 --stripe-count -1 --stripe-size 1048576 --metrics-listen 0.0.0.0:9989"
        );
        assert_eq!(
            args_text(&role_args(&c, Role::Mount, &oss, &mds)).join(" "),
            "mount /mnt/p --mds mds1:7989 --key-file /s/cluster.key --jobid-var SLURM_JOB_ID \
             --jobid-name %j --max-rpcs-in-flight 4 --max-dirty-mb 64 --jobnodes-var PBS_NUM_NODES \
             --page-cache --allow-other"
        );
    }

    /// Every OSS names the others as its DSFQ peers, and its instance numbers start after
    /// the CPTs of the OSSs before it; an OSS on port 0 is no one's peer.
    #[test]
    fn ossds_learn_their_peers_and_instance_numbers() {
        let c = Cluster::from_toml_str(
            r#"
            [cluster]
            state_dir = "/s"
            [[oss]]
            host = "oss1"
            listen = "0.0.0.0:7988"
            osts = ["/d/a"]
            cpts = 2
            [[oss]]
            host = "oss2"
            listen = "0.0.0.0:7988"
            osts = ["/d/b"]
            cpts = 3
            [[oss]]
            host = "oss3"
            listen = "0.0.0.0:0"
            osts = ["/d/c"]
            bulk_share_per_client_bytes = 134217728
            reply_idle_timeout_ms = 1000
            "#,
            "c.toml",
            Path::new("/base"),
        )
        .unwrap();
        let addrs: Vec<String> = c
            .osses
            .iter()
            .map(|o| reach_addr(o.host.as_deref(), o.listen))
            .collect();
        let args: Vec<OssdArgs> = (0..3).map(|i| ossd_args(&c, i, &addrs)).collect();
        assert_eq!(args[0].peers, ["oss2:7988"]);
        assert_eq!(args[1].peers, ["oss1:7988"]);
        assert_eq!(args[2].peers, ["oss1:7988", "oss2:7988"]);
        let bases: Vec<u32> = args.iter().map(|a| a.sync_instance_base).collect();
        assert_eq!(bases, [0, 2, 5]);
        let line = args_text(&role_args(&c, Role::Oss(2), &addrs, "m:1")).join(" ");
        assert!(
            line.ends_with(
                "--peer oss1:7988 --peer oss2:7988 --sync-instance-base 5 \
                 --bulk-share-per-client-bytes 134217728 --reply-idle-timeout-ms 1000"
            ),
            "{line}"
        );
        assert!(!args_text(&role_args(&c, Role::Oss(0), &addrs, "m:1"))
            .join(" ")
            .contains("bulk"));
    }

    /// With `[mds] iez_report_period_ms`, every ossd on a fixed port reports to the MDS under
    /// the name the MDS knows it by; the MDS and mount get their iez settings.
    #[test]
    fn iez_settings_reach_every_role() {
        let c = Cluster::from_toml_str(
            r#"
            [cluster]
            state_dir = "/s"
            [mds]
            host = "mds1"
            listen = "0.0.0.0:7989"
            iez_stats_max_age_ms = 5000
            iez_report_period_ms = 1000
            [mount]
            iez_trace = "trace.csv"
            [[oss]]
            host = "oss1"
            listen = "0.0.0.0:7988"
            osts = ["/d/a"]
            [[oss]]
            listen = "0.0.0.0:0"
            osts = ["/d/b"]
            "#,
            "c.toml",
            Path::new("/base"),
        )
        .unwrap();
        let addrs: Vec<String> = c
            .osses
            .iter()
            .map(|o| reach_addr(o.host.as_deref(), o.listen))
            .collect();
        let line = args_text(&role_args(&c, Role::Oss(0), &addrs, "mds1:7989")).join(" ");
        assert!(
            line.ends_with("--report-mds mds1:7989 --report-as oss1:7988 --report-period-ms 1000"),
            "{line}"
        );
        let line = args_text(&role_args(&c, Role::Oss(1), &addrs, "mds1:7989")).join(" ");
        assert!(!line.contains("--report-mds"), "{line}");
        let line = args_text(&role_args(&c, Role::Mds, &addrs, "mds1:7989")).join(" ");
        assert!(line.ends_with("--iez-stats-max-age-ms 5000"), "{line}");
        let line = args_text(&role_args(&c, Role::Mount, &addrs, "mds1:7989")).join(" ");
        assert!(line.contains("--iez-trace /base/trace.csv"), "{line}");
        for (text, what) in [
            (
                "[mds]\niez_report_period_ms = 1",
                "mds.iez_report_period_ms",
            ),
            (
                "[mds]\niez_stats_max_age_ms = 0",
                "mds.iez_stats_max_age_ms",
            ),
        ] {
            let e = Cluster::from_toml_str(text, "c.toml", Path::new("/b")).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        }
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape_mountinfo("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mountinfo("/plain"), "/plain");
        assert_eq!(unescape_mountinfo("/x\\"), "/x\\");
    }

    #[test]
    fn generated_keys_are_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("s/cluster.key");
        assert!(ensure_key(&k).unwrap());
        let mode = std::fs::metadata(&k).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let first = std::fs::read_to_string(&k).unwrap();
        assert_eq!(first.trim().len(), 2 * KEY_BYTES);
        assert!(!ensure_key(&k).unwrap());
        assert_eq!(std::fs::read_to_string(&k).unwrap(), first);
        assert_eq!(
            pfsqos_wire::key::read_key_file(&k).unwrap().len(),
            2 * KEY_BYTES
        );
    }

    #[test]
    fn our_own_process_is_not_a_role() {
        let me = std::process::id();
        assert!(!is_role_process(me, Role::Mds));
        assert!(!is_role_process(u32::MAX, Role::Mds));
    }

    #[test]
    fn log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        std::fs::write(&p, "a\nb\nc\n").unwrap();
        assert_eq!(log_tail(&p, 2), "b\nc");
        assert_eq!(log_tail(&dir.path().join("none"), 2), "");
    }
}
