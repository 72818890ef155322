//! `pfsqos ossd`: an object storage server. Serves OSTs (one local directory each, one file per
//! object) over the pfsqos protocol; every I/O request passes through Lustre's NRS (FIFO or
//! TBF, the exact `pfsqos_core` code) before a bounded pool of I/O threads executes it.
//!
//! # Request path
//! ```text
//! connection task (tokio)            CPT k (std threads)                 OST directory
//!  read frame, validate  --submit-->  CptService::arrive (wall ns, cost = bytes)
//!  read bulk (writes)                 I/O thread: dispatch / throttle wait
//!                                     pacer (ceiling), write, splice/pread, fsync  ----> file
//!  reply (+bulk) <--oneshot---------  job_stats update, CptService::complete, reply
//! ```
//! Like Lustre's ost_io service, the OSS has one NRS head per CPU partition (CPT), a regular
//! and a high-priority one; requests enter the regular head of the CPT their connection is
//! bound to (connection id modulo CPT count). The HP heads exist so that the parameter files
//! look like Lustre's; nothing is queued on them. Each CPT is a `pfsqos_node::oss::CptService`,
//! the very code the simulator's engine drives on virtual time: its I/O threads ask it for work
//! (`dispatch` with the monotonic clock in ns since the daemon started), sleep on a condition
//! variable until the throttle deadline when it answers `Wait`, and are woken by every
//! enqueue, since an arrival can move the deadline earlier; a finished request is reported with
//! its cost (`complete`), which frees the thread.
//!
//! With `OssdConfig::control` set, a control thread runs a `pfsqos_core` controller against
//! the daemon and writes its decisions through the same path as `lctl set_param`
//! (see [`crate::control`]).
//!
//! # Limits
//! * connections: `connections_max` authenticated ones; before authentication, a separate
//!   pre-auth budget ([`admission::HANDSHAKES_MAX`], at most
//!   [`admission::HANDSHAKES_PER_ADDR_MAX`] per source, shared fairly by eviction, with a
//!   share reserved for sources that authenticated before) for at most
//!   [`admission::SERVER_HANDSHAKE_TIMEOUT`], with handshake frames capped at
//!   [`conn::HANDSHAKE_FRAME_LEN_MAX`] bytes; a connection over a budget is closed at once,
//!   counted (`pfsqos_oss_admission_total`) and logged at most
//!   [`admission::LOG_LINES_PER_WINDOW`] times a window;
//! * requests in flight per connection: `rpcs_in_flight_per_conn` (reading stops at the limit);
//! * bulk bytes held in memory over all connections: `in_flight_bytes_max` (same; a read
//!   holds at most [`READ_PIECE_BYTES`] of it); of it, what
//!   one client (peer address) can make the daemon wait on (writes whose bulk is arriving,
//!   replies not yet written): its share, `bulk_share_per_client_bytes`
//!   (see [`crate::bulk_share`]);
//! * a reply the peer does not read: [`OssdConfig::reply_idle_timeout`] without progress, then
//!   the connection is closed;
//! * pipes holding reads on their way out: [`pfsqos_wire::splice::PIPES_MAX`] (then `pread`);
//! * requests queued per CPT: `queue_depth_max`; beyond it a request is answered `EBUSY`;
//! * a write's bulk data: [`BULK_TIMEOUT`], and [`OssdConfig::bulk_idle_timeout`] without
//!   progress;
//!   frames: [`FRAME_LEN_BYTES_MAX`]; I/O sizes:
//!   [`IO_LEN_BYTES_MAX`]; job_stats: `pfsqos_core::jobstats::JOBS_PER_OST_MAX` jobs per OST.
//!
//! A malformed frame, a failed handshake or a protocol violation closes that connection with
//! a `warn!` giving the reason; the daemon and its other connections carry on.
//!
//! # Writes
//! A write whose offset, length and received buffer are page-aligned (every whole RPC a
//! client builds at RPC boundaries: the bulk is received into an aligned buffer, see
//! [`conn::Reader::bulk_bytes`]) goes straight to the device with `O_DIRECT`, from that buffer,
//! and is answered once the device has it, as Lustre's OSS writes bulk data through to disk
//! before it replies. So an OST's bandwidth is its device's, not a page cache's that
//! absorbs bursts at memory speed and then stalls in writeback (which would make every TBF
//! rate meaningless for seconds), and a client's `fsync` finds little left to flush. Other
//! writes (unaligned, small) go through the page cache; the kernel keeps both paths coherent
//! (a direct write first writes back and drops cached pages of its range). `buffered_writes`
//! (`--buffered-writes`) sends every write through the page cache instead. A file system that
//! refuses `O_DIRECT` turns direct writes off for that OST, with a warning.
//!
//! # Reads
//! Reads go through the page cache. A read of at most 1 MiB is spliced into a pipe by the I/O
//! thread (page references, no copy; the disk read, if any, happens there, so the service
//! time job_stats records is the read's) and from the pipe into the client's socket by the
//! connection's writer (see [`pfsqos_wire::splice`]); without a pipe (at most
//! [`pfsqos_wire::splice::PIPES_MAX`] exist) `pread` fills a buffer instead. A longer read
//! is not buffered whole: the I/O thread checks its length and starts the kernel's read-ahead
//! of the range, and the connection's writer reads it piece by piece ([`READ_PIECE_BYTES`])
//! as the socket takes it, so a read holds one piece of the bulk budget until its reply is
//! written, whether or not its peer reads. (Its job_stats service time is the I/O thread's
//! part: the check and the read-ahead's start.)
//!
//! A read of an object that does not exist answers no bytes (a hole), not `ENOENT`.
//!
//! # Durability
//! A write is answered after all its bytes are in the object file (on the device for a
//! direct write, in the page cache otherwise), and, when the request asks for `sync`, after
//! `fdatasync`.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use pfsqos_core::control::{ControlWrite, DomainId, DomainWrite};
use pfsqos_core::jobstats::{JobStatsFormat, OstCounter, OstJobStats};
use pfsqos_core::model::{JobId, Nid};
use pfsqos_core::sched::nrs::{
    nrs_policies_yaml, nrs_policy_rows, policy_param_text, tbf_rule_listing, ActiveRpcs, Nrs,
    NrsError,
};
use pfsqos_core::sched::tbf::version::LustreVersion;
use pfsqos_core::sched::tbf::{NrsQueue, TbfConfig};

use pfsqos_node::oss::{apply_write, CptService, Dispatch};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Notify, Semaphore};
use tracing::{debug, info, warn};

use crate::bulk_share::{BulkCounters, BulkShares, ShareMember, SharePermit};
use crate::control::{ControlConfig, ControlHandle};
use crate::job_nodes::{JobNodes, JobNodesCounters};
use crate::sync::{SyncConfig, SyncState, SyncStats};
use pfsqos_metrics::{
    render_collector, JobSample, MetricsServer, OssCollector, OssSample, OstSample, Render,
};
use pfsqos_wire::admission::{self, Admission, HandshakeSlot};
use pfsqos_wire::conn::{self, ConnError, Reader, SendProgress, Writer};
use pfsqos_wire::protocol::*;
use pfsqos_wire::splice::{PipePool, Piped, PIPES_MAX};

/// How long a write's bulk data may take to arrive once its request has (it holds memory).
pub const BULK_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of [`OssdConfig::bulk_idle_timeout`].
pub const BULK_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Default of [`OssdConfig::reply_idle_timeout`].
pub const REPLY_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// I/O threads each CPT gets from `--threads` over `--cpts`, and a note for the log when
/// that is not what was asked. As Lustre's `ptlrpc_server_nthreads_check`
/// (lustre/ptlrpc/service.c) does with `oss_num_threads`, the total is divided evenly over the
/// partitions (rounded down) and each partition gets at least its minimum (one here, Lustre's
/// `tc_nthrs_init` there), so a count below the CPT count is raised rather than refused: a
/// partition without a thread would never serve its NRS heads. The note says so, since the
/// ossd then runs more threads than `--threads` (or fewer, when it does not divide).
pub fn threads_per_cpt(threads: usize, cpts: usize) -> (usize, Option<String>) {
    assert!(cpts > 0, "validated: at least one CPT");
    let per_cpt = (threads / cpts).max(1);
    let total = per_cpt * cpts;
    let note = (total != threads).then(|| {
        format!(
            "--threads {threads} over --cpts {cpts}: {per_cpt} I/O thread(s) per CPT, {total} \
             in all (each CPT needs at least one; give a multiple of --cpts to run exactly \
             --threads)"
        )
    });
    (per_cpt, note)
}

/// Daemon configuration.
#[derive(Clone, Debug)]
pub struct OssdConfig {
    pub listen: SocketAddr,
    /// One directory per OST; OST index = position.
    pub osts: Vec<PathBuf>,
    /// Shared cluster key (never sent).
    pub key: Vec<u8>,
    /// The servers' own key (`--server-key-file`, never sent, different from the cluster
    /// key): a peer claiming a server role (an ossd's DSFQ synchronization, the MDS, an
    /// administrator's `lctl`; see [`Role::is_server_role`]) must prove it, so a client,
    /// which holds only the cluster key, cannot inject service reports, write TBF rules or
    /// destroy objects; this ossd's own synchronization sender and its iez reports to the
    /// MDS prove it. Required: a server a client node's key could administer is no server.
    pub server_key: Vec<u8>,
    /// File system name, for `obdfilter.<fsname>-OSTxxxx.job_stats`.
    pub fsname: String,
    /// I/O threads in total, split evenly over the CPTs (at least one each).
    pub threads: usize,
    /// CPU partitions, each with its own NRS heads.
    pub cpts: usize,
    /// Per-OST device ceiling, so a fast disk stands in for a slower one.
    pub ceiling_bytes_per_s: Option<u64>,
    pub queue_depth_max: usize,
    pub connections_max: usize,
    pub rpcs_in_flight_per_conn: usize,
    /// Bulk bytes held in memory over all connections. A write reserves its share frame by
    /// frame (at most 8 MiB ahead of what it received), as its bulk arrives.
    pub in_flight_bytes_max: u64,
    /// The longest a write's sender may leave its bulk without progress (waiting for a
    /// frame's length or for any bytes of its body) before the connection is closed.
    pub bulk_idle_timeout: Duration,
    /// Each client's (peer address's) share of `in_flight_bytes_max` for what it can make the
    /// ossd wait on: writes whose bulk is arriving (counted at their announced length) and
    /// requests whose reply is not yet written (see [`crate::bulk_share`]). `None`: a quarter
    /// of `in_flight_bytes_max`, at least [`IO_LEN_BYTES_MAX`].
    pub bulk_share_per_client_bytes: Option<u64>,
    /// The longest a reply may go without any of its bytes being taken by the socket (the
    /// peer is not reading) before the connection is closed and what its replies hold is
    /// given back.
    pub reply_idle_timeout: Duration,
    /// Write into the OSTs' page cache and leave writeback to the kernel
    /// (`--buffered-writes`), instead of writing whole aligned RPCs straight to the device
    /// (see "Writes" in the module docs).
    pub buffered_writes: bool,
    /// The Lustre version whose NRS text interface the daemon emulates (`--lustre-version`):
    /// which TBF rule forms, fields and rate limits it accepts and which listing form it
    /// prints (docs/tbf-conformance.md). Default: master.
    pub lustre_version: LustreVersion,
    /// A controller run in the daemon (`--policy`); see [`crate::control`].
    pub control: Option<ControlConfig>,
    /// Where to serve Prometheus metrics (`--metrics-listen`); see [`pfsqos_metrics`].
    pub metrics_listen: Option<SocketAddr>,
    /// This ossd's DSFQ instance numbers and its peer ossds (`--sync-instance-base`,
    /// `--peer`); see [`crate::sync`].
    pub sync: SyncConfig,
    /// Where the control loop's device queue comes from (`--device-sensor`).
    pub device_sensor: DeviceSensor,
    /// iez's statistics reports to the MDS (`--report-mds`); see [`crate::report`].
    pub report: Option<crate::report::ReportConfig>,
}

/// The source of each OST's device queue and time in queue in the control loop's
/// observations (`TargetObservation::device_queue_rpcs`, `device_time_in_queue_ns`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceSensor {
    /// The ossd's own I/O: RPCs in an I/O thread, and the time they spent there.
    #[default]
    Ossd,
    /// The block device under the OST's directory: `/sys/block/<dev>/stat`'s `in_flight` and
    /// `time_in_queue` (PI control's sensor as the paper reads it). OSTs on one disk share
    /// its numbers; a directory on no block device (tmpfs, overlay) fails the start.
    Block,
}

/// Oldest Lustre version the daemon emulates: the oldest whose TBF interface was checked.
pub const LUSTRE_VERSION_MIN: LustreVersion = LustreVersion::V2_12;

/// A `--lustre-version` value (`2.15`, `2.17.57`, `v2_15_3`), within
/// [`LUSTRE_VERSION_MIN`]..=master.
pub fn parse_lustre_version(text: &str) -> Result<LustreVersion, String> {
    let v = LustreVersion::parse(text)
        .ok_or_else(|| "not a version (MAJOR.MINOR[.PATCH], e.g. 2.15 or 2.17.57)".to_string())?;
    if v < LUSTRE_VERSION_MIN || v > LustreVersion::MASTER {
        return Err(format!(
            "emulated versions are {LUSTRE_VERSION_MIN} to {} (master)",
            LustreVersion::MASTER
        ));
    }
    Ok(v)
}

impl OssdConfig {
    /// Each client's share of the bulk budget, in bytes
    /// ([`OssdConfig::bulk_share_per_client_bytes`] or its default).
    pub fn bulk_share_bytes(&self) -> u64 {
        self.bulk_share_per_client_bytes
            .unwrap_or_else(|| bulk_share_default_bytes(self.in_flight_bytes_max))
    }

    /// Defaults for everything but the address, the OSTs and the two keys.
    pub fn new(
        listen: SocketAddr,
        osts: Vec<PathBuf>,
        key: Vec<u8>,
        server_key: Vec<u8>,
    ) -> OssdConfig {
        OssdConfig {
            listen,
            osts,
            key,
            server_key,
            fsname: "pfsqos".to_string(),
            threads: 8,
            cpts: 1,
            ceiling_bytes_per_s: None,
            queue_depth_max: 4096,
            connections_max: 256,
            rpcs_in_flight_per_conn: 8,
            in_flight_bytes_max: BULK_BUDGET_BYTES_DEFAULT,
            bulk_idle_timeout: BULK_IDLE_TIMEOUT,
            bulk_share_per_client_bytes: None,
            reply_idle_timeout: REPLY_IDLE_TIMEOUT,
            buffered_writes: false,
            lustre_version: LustreVersion::MASTER,
            control: None,
            metrics_listen: None,
            sync: SyncConfig::default(),
            device_sensor: DeviceSensor::Ossd,
            report: None,
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.osts.is_empty() || self.osts.len() > OST_COUNT_MAX as usize {
            bail!("an OSS serves 1..={OST_COUNT_MAX} OSTs");
        }
        if self.key.len() < 16 {
            bail!("the cluster key must be at least 16 bytes");
        }
        if self.server_key.len() < 16 || self.server_key == self.key {
            bail!("the server key must be at least 16 bytes and differ from the cluster key");
        }
        if self.fsname.is_empty()
            || self.fsname.len() > FSNAME_LEN_MAX
            || !self.fsname.chars().all(|c| c.is_ascii_alphanumeric())
        {
            bail!("fsname must be 1..={FSNAME_LEN_MAX} letters or digits");
        }
        let cpts_max = pfsqos_core::lustre::CPTS_MAX as usize;
        if self.cpts == 0 || self.cpts > cpts_max || self.threads == 0 || self.threads > 1024 {
            bail!("need 1..={cpts_max} CPTs and 1..=1024 threads");
        }
        if self.ceiling_bytes_per_s == Some(0) {
            bail!("a ceiling of 0 bytes/s would never serve anything");
        }
        if self.queue_depth_max == 0
            || self.connections_max == 0
            || self.rpcs_in_flight_per_conn == 0
        {
            bail!("queue depth, connections and RPCs in flight must be positive");
        }
        validate_bulk_limits(
            self.in_flight_bytes_max,
            self.bulk_share_bytes(),
            self.bulk_idle_timeout,
            self.reply_idle_timeout,
        )
        .map_err(anyhow::Error::msg)?;
        if let Some(c) = &self.control {
            c.capacity(self.ceiling_bytes_per_s)?;
        }
        self.sync.validate(self.cpts)?;
        Ok(())
    }
}

/// Default [`OssdConfig::in_flight_bytes_max`] (the bulk budget).
pub const BULK_BUDGET_BYTES_DEFAULT: u64 = 1 << 30;

/// A client's share of the bulk budget when none is given: a quarter of it, so that one
/// client (or one stalled node) can never hold more than that, but at least one largest
/// request.
pub fn bulk_share_default_bytes(budget_bytes: u64) -> u64 {
    (budget_bytes / 4).max(IO_LEN_BYTES_MAX)
}

/// Largest [`OssdConfig::in_flight_bytes_max`] (the bulk budget).
pub const BULK_BUDGET_BYTES_MAX: u64 = 1 << 40;

/// Longest bulk or reply idle timeout: past the whole bulk's [`BULK_TIMEOUT`] a longer idle
/// timeout changes nothing for bulk, and a reply nobody reads for ten minutes is a dead peer.
pub const IDLE_TIMEOUT_MAX: Duration = Duration::from_secs(600);

/// The checks on the bulk budget, a client's share of it and the two idle timeouts, made
/// once here for the daemon's configuration and for a cluster file's `[[oss]]` keys (so
/// `pfsqos up` refuses a bad value before it starts anything). `share_bytes` is the share
/// in effect (given or defaulted).
pub fn validate_bulk_limits(
    budget_bytes: u64,
    share_bytes: u64,
    bulk_idle_timeout: Duration,
    reply_idle_timeout: Duration,
) -> Result<(), String> {
    if !(IO_LEN_BYTES_MAX..=BULK_BUDGET_BYTES_MAX).contains(&budget_bytes) {
        return Err(format!(
            "the bulk budget (in-flight bytes) must be between {IO_LEN_BYTES_MAX} and \
             {BULK_BUDGET_BYTES_MAX} bytes"
        ));
    }
    // A share smaller than one request would never let that request in.
    if share_bytes < IO_LEN_BYTES_MAX || share_bytes > budget_bytes {
        return Err(format!(
            "the bulk share per client must be between {IO_LEN_BYTES_MAX} bytes and the bulk \
             budget ({budget_bytes} bytes)"
        ));
    }
    for (name, t) in [("bulk", bulk_idle_timeout), ("reply", reply_idle_timeout)] {
        if t < Duration::from_millis(1) || t > IDLE_TIMEOUT_MAX {
            return Err(format!(
                "the {name} idle timeout must be between 1 ms and {} s",
                IDLE_TIMEOUT_MAX.as_secs()
            ));
        }
    }
    Ok(())
}

enum IoOutcome {
    Done,
    Read(Bulk),
}

/// Bulk data of a reply: in a pipe (a read spliced from the page cache, see
/// [`pfsqos_wire::splice`]), in a buffer, or still in the object file (a read longer than
/// [`READ_PIECE_BYTES`], read piece by piece as the socket takes it).
enum Bulk {
    Piped(Piped),
    Buf(Vec<u8>),
    Streamed(StreamedRead),
}

impl Bulk {
    fn len(&self) -> usize {
        match self {
            Bulk::Piped(p) => p.len(),
            Bulk::Buf(b) => b.len(),
            Bulk::Streamed(s) => s.len as usize,
        }
    }
}

/// The most of a read's data in memory at once, and what a read holds of the bulk budget
/// until its reply is written: one pipe's worth. A reply waits on its peer, which may stop
/// reading; holding the whole announced length (up to 64 MiB) would let a few stalled readers
/// hold the OSS-wide budget and stop every other client. Read piece by piece, a stalled read
/// holds one piece, and the budget a write waits for is what is really buffered.
pub const READ_PIECE_BYTES: usize = 1 << 20;

/// A read answered from the object file as the reply is written: `len` bytes at `offset`.
/// The I/O thread checked the length against the file's size and asked the kernel to read
/// the range ahead (`POSIX_FADV_WILLNEED`), so the disk read starts within the read's service;
/// the writer reads each piece from the page cache. Bytes that vanish meanwhile (the object
/// truncated by a later punch) are sent as zeros, as a hole reads.
struct StreamedRead {
    file: Arc<ObjectFile>,
    offset: u64,
    len: u64,
}

/// `len` bytes at `offset` of `file`, zeros past its end.
fn read_piece(file: &File, offset: u64, len: usize) -> Result<Vec<u8>, RemoteError> {
    let mut buf = read_up_to(file, offset, len)?;
    buf.resize(len, 0);
    Ok(buf)
}

type IoResult = Result<IoOutcome, RemoteError>;

/// What a request costs the schedulers: a bulk RPC its bytes; punch and sync move none.
fn cost_bytes(io: &IoRequest) -> u64 {
    match io.op {
        IoOp::Write | IoOp::Read => io.length,
        _ => 0,
    }
}

/// A request waiting in an NRS head.
pub(crate) struct Pending {
    io: IoRequest,
    data: Option<bytes::Bytes>,
    done: oneshot::Sender<IoResult>,
}

/// Most distinct jobs whose dequeues are counted per CPT (a bound on outside input).
const DEQUEUE_COUNT_JOBS_MAX: usize = 4096;

/// Head indices in a CPT's service: requests enter the regular head; the HP head exists so
/// the parameter files look like Lustre's.
const REG_HEAD: usize = 0;
const HP_HEAD: usize = 1;
/// The ossd's one scheduling domain: every OST of the OSS, as Lustre's `ost_io` service.
const DOMAIN: DomainId = DomainId(0);

pub(crate) struct CptState {
    /// The partition's heads and threads: the same `pfsqos_node::oss::CptService` the
    /// simulator's engine drives, here under the partition's lock with the monotonic clock.
    pub(crate) svc: CptService<Pending>,
    dequeued: BTreeMap<JobId, u64>,
    shutdown: bool,
}

struct Cpt {
    state: Mutex<CptState>,
    work: Condvar,
}

/// Paces an OST to a byte rate: each I/O reserves `bytes / rate` of device time, starting no
/// earlier than the previous reservation ends.
struct Pacer {
    rate_bytes_per_s: u64,
    next_free: Mutex<Instant>,
}

impl Pacer {
    fn pace(&self, bytes: u64) {
        let cost_ns = (bytes as u128 * 1_000_000_000 / self.rate_bytes_per_s as u128)
            .min(u64::MAX as u128) as u64;
        let wait = {
            let mut next = lock(&self.next_free);
            let now = Instant::now();
            let start = (*next).max(now);
            *next = start + Duration::from_nanos(cost_ns);
            start - now
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

/// Lustre's default `job_cleanup_interval`, seconds.
const JOB_CLEANUP_INTERVAL_DEFAULT_S: u64 = 600;
/// Largest `job_cleanup_interval` accepted (about 31 years; keeps ns arithmetic in range).
const JOB_CLEANUP_INTERVAL_S_MAX: u64 = 1 << 30;

/// job_stats of one OST with Lustre's expiry: jobs idle for `cleanup_interval_s` are dropped
/// by a scan that runs at most once per half interval (when a new job appears, when the file
/// is read) and whenever the interval is written. 0 disables expiry.
struct JobStatsState {
    stats: OstJobStats,
    cleanup_interval_s: u64,
    last_cleanup_ns: u64,
}

impl JobStatsState {
    fn cleanup(&mut self, now_ns: u64, force: bool) {
        let interval_ns = self.cleanup_interval_s * 1_000_000_000;
        if interval_ns == 0 {
            return;
        }
        if force || now_ns.saturating_sub(self.last_cleanup_ns) >= interval_ns / 2 {
            self.stats.expire(now_ns, interval_ns);
            self.last_cleanup_ns = now_ns;
        }
    }
}

pub(crate) struct Ost {
    objects: PathBuf,
    /// Open object files, so that consecutive RPCs of a stream share one open file: the
    /// kernel's read-ahead state lives in the open file, and a file opened afresh for every
    /// 1 MiB RPC is read as if at random (no read-ahead from the disk).
    handles: Mutex<ObjectHandles>,
    /// Aligned writes go to the device with `O_DIRECT` (see "Writes" in the module docs);
    /// cleared for good when the OST's file system refuses it.
    direct_writes: std::sync::atomic::AtomicBool,
    job_stats: Mutex<JobStatsState>,
    pacer: Option<Pacer>,
    /// RPCs that entered an NRS head since the controller last took them, per job (what the
    /// AdapTBF paper calls demand; Lustre has no counter for it).
    arrived: Mutex<BTreeMap<JobId, u64>>,
    /// RPCs of this OST waiting in the NRS heads.
    queued: AtomicU64,
    /// RPCs of this OST an I/O thread has taken from its head and not yet completed: the
    /// device queue the control loop reports (`TargetObservation::device_queue_rpcs`).
    in_service: AtomicU64,
    /// Time RPCs of this OST spent in an I/O thread's service, summed at completion, in ns
    /// (`TargetObservation::device_time_in_queue_ns`: Linux's `time_in_queue`).
    time_in_queue_ns: AtomicU64,
    /// Bytes and RPCs served since start, RPCs without a job id included (for metrics:
    /// job_stats forgets cleared and expired jobs, these never go back).
    served_bytes: AtomicU64,
    served_rpcs: AtomicU64,
    /// The MDS's orphan sweep under way: the OST's object ids, ascending, as one reading of
    /// the directory at the pass's first page (`after == 0`); later pages are served from it,
    /// so a pass reads the directory once, not once a page (see [`Ost::list_objects`]).
    listing: Mutex<Option<Vec<u64>>>,
}

/// What a direct write asks of its offset, length and buffer: a page (logical blocks of 512
/// or 4096 bytes; the bulk receive buffers are aligned to it, see
/// [`conn::BULK_ALIGN_BYTES`]).
const DIRECT_ALIGN_BYTES: usize = conn::BULK_ALIGN_BYTES;

/// Most object files an OST keeps open (least recently used closed first).
pub const OBJECT_HANDLES_PER_OST_MAX: usize = 64;

/// A small LRU of open object files. A destroy closes an object's entry before it removes
/// the path ([`Ost::destroy`]), so a later RPC opens the path afresh.
#[derive(Default)]
struct ObjectHandles {
    open: Vec<(u64, Arc<ObjectFile>)>,
}

/// An object's open file, and the same file opened for direct writes once one is due.
struct ObjectFile {
    file: File,
    /// `None` inside: the file system refused `O_DIRECT`.
    direct: std::sync::OnceLock<Option<File>>,
}

impl ObjectHandles {
    /// The open file of `object` (moved to the most recent end), if any.
    fn get(&mut self, object: u64) -> Option<Arc<ObjectFile>> {
        let at = self.open.iter().rposition(|(o, _)| *o == object)?;
        let entry = self.open.remove(at);
        let f = entry.1.clone();
        self.open.push(entry);
        Some(f)
    }

    fn forget(&mut self, object: u64) {
        self.open.retain(|(o, _)| *o != object);
    }

    fn insert(&mut self, object: u64, f: Arc<ObjectFile>) -> Arc<ObjectFile> {
        if let Some(existing) = self.get(object) {
            // Another thread opened it meanwhile: keep one open file per object.
            return existing;
        }
        if self.open.len() >= OBJECT_HANDLES_PER_OST_MAX {
            self.open.remove(0);
        }
        self.open.push((object, f.clone()));
        f
    }
}

/// Most distinct jobs whose arrivals are counted per OST between two controller periods: the
/// jobs a controller tracks.
const ARRIVAL_COUNT_JOBS_MAX: usize = pfsqos_core::lustre::JOBS_TRACKED_MAX;

impl Ost {
    /// Takes the arrivals counted since the last call.
    pub(crate) fn take_arrivals(&self) -> BTreeMap<JobId, u64> {
        std::mem::take(&mut *lock(&self.arrived))
    }

    pub(crate) fn queued_rpcs(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// RPCs dispatched to this OST's I/O (started by an I/O thread) and not yet completed.
    pub(crate) fn in_service_rpcs(&self) -> u64 {
        self.in_service.load(Ordering::Relaxed)
    }

    /// Time RPCs spent in service, summed over completed RPCs since start, in ns.
    pub(crate) fn time_in_queue_ns(&self) -> u64 {
        self.time_in_queue_ns.load(Ordering::Relaxed)
    }

    /// Served RPCs and bytes per job since the job's first RPC (or the last `clear`): one
    /// bytes sample per read or write, one sample per punch or sync.
    pub(crate) fn served_totals(&self) -> BTreeMap<JobId, (u64, u64)> {
        let state = lock(&self.job_stats);
        state
            .stats
            .entries()
            .map(|e| {
                let (r, w) = (
                    e.counter(OstCounter::ReadBytes),
                    e.counter(OstCounter::WriteBytes),
                );
                let rpcs = r.samples
                    + w.samples
                    + e.counter(OstCounter::Punch).samples
                    + e.counter(OstCounter::Sync).samples;
                (e.job_id, (rpcs, r.sum + w.sum))
            })
            .collect()
    }
}

/// Most client nodes an ossd keeps limits for (a bound on outside input); connections of
/// further nodes are served, but no controller can limit them.
pub const CLIENTS_MAX: usize = 4096;

/// A connected client node: its connections (bound to it by their first I/O request) and the
/// outgoing limit a controller set on it.
struct ClientEntry {
    connections: u32,
    limit_bytes_per_s: Option<u64>,
}

/// The client nodes connected now, by NID.
#[derive(Default)]
pub(crate) struct Clients {
    by_nid: BTreeMap<Nid, ClientEntry>,
}

impl Clients {
    /// A connection bound to `nid`; false if the table is full and `nid` is not in it.
    fn connect(&mut self, nid: Nid) -> bool {
        if let Some(e) = self.by_nid.get_mut(&nid) {
            e.connections += 1;
            return true;
        }
        if self.by_nid.len() >= CLIENTS_MAX {
            return false;
        }
        self.by_nid.insert(
            nid,
            ClientEntry {
                connections: 1,
                limit_bytes_per_s: None,
            },
        );
        true
    }

    /// A connection bound to `nid` closed; the node (and its limit) is forgotten with its
    /// last connection.
    fn disconnect(&mut self, nid: Nid) {
        let e = self
            .by_nid
            .get_mut(&nid)
            .expect("a bound connection's client is in the table");
        assert!(
            e.connections > 0,
            "a client's connection count went below zero"
        );
        e.connections -= 1;
        if e.connections == 0 {
            self.by_nid.remove(&nid);
        }
    }

    pub(crate) fn nids(&self) -> Vec<Nid> {
        debug_assert!(self.by_nid.len() <= CLIENTS_MAX);
        // A BTreeMap's keys come sorted.
        self.by_nid.keys().copied().collect()
    }

    pub(crate) fn set_limit(&mut self, nid: Nid, limit_bytes_per_s: Option<u64>) -> bool {
        match self.by_nid.get_mut(&nid) {
            Some(e) => {
                e.limit_bytes_per_s = limit_bytes_per_s;
                true
            }
            None => false,
        }
    }

    pub(crate) fn clear_limits(&mut self) {
        for e in self.by_nid.values_mut() {
            e.limit_bytes_per_s = None;
        }
    }

    #[cfg(test)]
    pub(crate) fn connect_for_test(&mut self, nid: Nid) -> bool {
        self.connect(nid)
    }

    #[cfg(test)]
    pub(crate) fn limit_for_test(&self, nid: Nid) -> ClientLimit {
        self.limit(nid)
    }

    fn limit(&self, nid: Nid) -> ClientLimit {
        match self.by_nid.get(&nid).map(|e| e.limit_bytes_per_s) {
            Some(Some(rate)) => ClientLimit::BytesPerS(rate),
            Some(None) => ClientLimit::Unlimited,
            None => ClientLimit::Unstated,
        }
    }
}

/// A client connection's binding to its node, undone when the connection ends.
struct ClientBinding {
    shared: Arc<Shared>,
    nid: Nid,
}

impl Drop for ClientBinding {
    fn drop(&mut self) {
        lock(&self.shared.clients).disconnect(self.nid);
    }
}

pub(crate) struct Shared {
    fsname: String,
    key: Vec<u8>,
    /// See [`OssdConfig::server_key`].
    server_key: Vec<u8>,
    cpts: Vec<Cpt>,
    pub(crate) osts: Vec<Ost>,
    epoch: Instant,
    queue_depth_max: usize,
    rpcs_in_flight_per_conn: usize,
    bytes_in_flight: Arc<Semaphore>,
    /// The pre-auth and authenticated connection budgets.
    pub(crate) admission: Arc<Admission>,
    bulk_idle_timeout: Duration,
    /// The size of `bytes_in_flight`, in KiB.
    bulk_budget_kib: u64,
    /// Each client's share of `bytes_in_flight` for what it can make the ossd wait on.
    bulk_shares: Arc<BulkShares>,
    reply_idle_timeout: Duration,
    /// Pipes for reads spliced from the page cache to the socket.
    pipes: Arc<PipePool>,
    /// Reads of a streamed reply's pieces under way (as many as there are I/O threads, so
    /// that replies never read the device more concurrently than the I/O threads do).
    read_piece_slots: Arc<Semaphore>,
    /// The TBF configuration of every head (the emulated Lustre version).
    tbf: TbfConfig,
    /// Connected client nodes and their limits (control loop: `Controlled::clients`).
    pub(crate) clients: Mutex<Clients>,
    /// DSFQ synchronization with the peer ossds (see [`crate::sync`]).
    pub(crate) sync: SyncState,
    /// Per OST, the block device's stat file when `--device-sensor block`, with the last
    /// good reading (kept when a read fails, so the sensor sees no change rather than a jump
    /// to another source's scale).
    pub(crate) block_stats: Vec<Option<BlockStatFile>>,
    /// Node counts by job (`ost.OSS.ost_io.job_nodes`), fed by the administrator and the
    /// mounts' RPCs; read by the control loop every period.
    pub(crate) job_nodes: Mutex<JobNodes>,
    /// The control loop's CPU and wall time per period, for the metrics.
    pub(crate) control_cost: crate::control_record::ControlCost,
}

impl Shared {
    /// OST `ost`'s device queue and cumulative time in queue, from the sensor the daemon was
    /// started with (`--device-sensor`): the one source for the control loop and metrics.
    pub(crate) fn device_counters(&self, ost: usize) -> (u64, u64) {
        let o = &self.osts[ost];
        self.block_stats[ost]
            .as_ref()
            .and_then(|b| b.read())
            .unwrap_or((o.in_service_rpcs(), o.time_in_queue_ns()))
    }
}

/// One OST's `/sys/block/<dev>/stat` and its last good reading.
pub(crate) struct BlockStatFile {
    pub(crate) device: pfsqos_linux::BlockDevice,
    pub(crate) last: Mutex<Option<pfsqos_linux::BlockStat>>,
    /// A failed read is logged once, not every period.
    pub(crate) warned: std::sync::atomic::AtomicBool,
}

impl BlockStatFile {
    /// `(in_flight, time_in_queue_ns)` now, or from the last good reading.
    pub(crate) fn read(&self) -> Option<(u64, u64)> {
        let fresh = std::fs::read_to_string(&self.device.stat_path)
            .map_err(|e| e.to_string())
            .and_then(|text| pfsqos_linux::BlockStat::parse(&text).map_err(|e| e.to_string()));
        let mut last = lock(&self.last);
        match fresh {
            Ok(stat) => *last = Some(stat),
            Err(e) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    warn!(
                        device = %self.device.name,
                        error = %e,
                        "reading the block device's stat failed; holding the last reading"
                    );
                }
            }
        }
        last.as_ref().map(|s| {
            (
                s.in_flight_requests,
                s.time_in_queue_ms.saturating_mul(1_000_000),
            )
        })
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking I/O thread must not take the daemon down with poisoned locks.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn io_error(e: std::io::Error) -> RemoteError {
    let errno = match (e.kind(), e.raw_os_error()) {
        (std::io::ErrorKind::NotFound, _) => Errno::ENOENT,
        (_, Some(28)) => Errno::ENOSPC,
        (_, Some(27)) => Errno::EFBIG,
        _ => Errno::EIO,
    };
    RemoteError::new(errno, e.to_string())
}

fn nrs_error(e: NrsError) -> RemoteError {
    RemoteError::new(e.errno, e.message)
}

#[derive(Clone, Copy)]
enum OstParam {
    JobStats,
    CleanupInterval,
}

/// The `ost_io` service's parameter directory.
pub(crate) const SERVICE_PREFIX: &str = "ost.OSS.ost_io.";
pub(crate) const PARAM_POLICIES: &str = "ost.OSS.ost_io.nrs_policies";
pub(crate) const PARAM_TBF_RULE: &str = "ost.OSS.ost_io.nrs_tbf_rule";
/// What DSFQ synchronization with the peer ossds did (read-only; `ENODEV` while no CPT
/// runs `dsfq`, so a wildcard shows it only then).
pub(crate) const PARAM_SYNC_STATS: &str = "ost.OSS.ost_io.nrs_dsfq_sync_stats";
/// Node counts by job: the run-time table ([`crate::job_nodes`]); `JOB=N` or `JOB=clear`.
pub(crate) const PARAM_JOB_NODES: &str = "ost.OSS.ost_io.job_nodes";

/// The service's NRS parameter files below [`SERVICE_PREFIX`]: `nrs_policies` and every file a
/// policy of the scheduler registry owns (TBF's `nrs_tbf_rule`, ...).
fn service_params() -> Vec<&'static str> {
    let mut params = vec!["nrs_policies"];
    for row in nrs_policy_rows::<Pending>() {
        params.extend_from_slice(row.params);
    }
    params
}
/// Which Lustre version's job_stats layout the daemon prints (master; the TBF listing form
/// follows `OssdConfig::lustre_version`).
const JOB_STATS_FORMAT: JobStatsFormat = JobStatsFormat::Master;

impl Shared {
    pub(crate) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub(crate) fn cpt_count(&self) -> usize {
        self.cpts.len()
    }

    pub(crate) fn cpt_state(&self, cpt: usize) -> &Mutex<CptState> {
        &self.cpts[cpt].state
    }

    /// Wakes every I/O thread of a CPT to ask its heads again (something changed there
    /// other than an arrival).
    pub(crate) fn wake_cpt(&self, cpt: usize) {
        self.cpts[cpt].work.notify_all();
    }

    /// The key this ossd proves as a server (to its synchronization peers, to the MDS).
    pub(crate) fn peer_key(&self) -> &[u8] {
        &self.server_key
    }

    /// What the synchronization channel did so far (partitions' counters summed).
    pub(crate) fn sync_stats(&self) -> SyncStats {
        let mut cpts = pfsqos_core::sched::SyncCounters::default();
        for c in &self.cpts {
            cpts += lock(&c.state).svc.sync_counters();
        }
        self.sync.stats(cpts)
    }

    fn job_stats_param(&self, ost: usize) -> String {
        format!("obdfilter.{}-OST{:04x}.job_stats", self.fsname, ost)
    }

    fn cleanup_interval_param(&self, ost: usize) -> String {
        format!(
            "obdfilter.{}-OST{:04x}.job_cleanup_interval",
            self.fsname, ost
        )
    }

    fn submit(
        &self,
        cpt: usize,
        io: IoRequest,
        data: Option<bytes::Bytes>,
        done: oneshot::Sender<IoResult>,
    ) -> Result<(), RemoteError> {
        if !io.tags.job.is_empty() {
            // Before the CPT's lock: the two locks are never held together.
            lock(&self.job_nodes).saw(io.tags.job, io.job_nodes, self.now_ns());
        }
        let c = &self.cpts[cpt];
        {
            let mut st = lock(&c.state);
            if st.shutdown {
                return Err(RemoteError::new(Errno::ENODEV, "OSS is shutting down"));
            }
            if st.svc.queued() >= self.queue_depth_max as u64 {
                return Err(RemoteError::new(
                    Errno::EBUSY,
                    format!("{} requests already queued", self.queue_depth_max),
                ));
            }
            let tags = io.tags;
            let ost = &self.osts[io.ost as usize];
            let cost_bytes = cost_bytes(&io);
            st.svc.arrive(
                self.now_ns(),
                REG_HEAD,
                &tags,
                cost_bytes,
                Pending { io, data, done },
            );
            ost.queued.fetch_add(1, Ordering::Relaxed);
            if !tags.job.is_empty() {
                let mut arrived = lock(&ost.arrived);
                if arrived.len() < ARRIVAL_COUNT_JOBS_MAX || arrived.contains_key(&tags.job) {
                    *arrived.entry(tags.job).or_insert(0) += 1;
                }
            }
        }
        c.work.notify_one();
        Ok(())
    }

    /// The loop of one I/O thread of one CPT.
    fn serve(&self, cpt: usize) {
        let c = &self.cpts[cpt];
        loop {
            let p = {
                let mut st = lock(&c.state);
                loop {
                    if st.shutdown {
                        return;
                    }
                    let now = self.now_ns();
                    st.svc.fire_due_timers(now);
                    match st.svc.dispatch(now, |_, _| {}) {
                        Dispatch::Start {
                            head,
                            payload: p,
                            ticket,
                        } => {
                            let prev = self.osts[p.io.ost as usize]
                                .queued
                                .fetch_sub(1, Ordering::Relaxed);
                            assert!(prev > 0, "an OST's queued count went below zero");
                            self.osts[p.io.ost as usize]
                                .in_service
                                .fetch_add(1, Ordering::Relaxed);
                            let job = p.io.tags.job;
                            if st.dequeued.len() < DEQUEUE_COUNT_JOBS_MAX
                                || st.dequeued.contains_key(&job)
                            {
                                *st.dequeued.entry(job).or_insert(0) += 1;
                            }
                            if st.svc.queued() > 0 {
                                c.work.notify_one();
                            }
                            break (head, ticket, p);
                        }
                        Dispatch::Wait {
                            until_ns: Some(until_ns),
                        } => {
                            let wait = Duration::from_nanos(until_ns.saturating_sub(now));
                            st = c
                                .work
                                .wait_timeout(st, wait)
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                        }
                        Dispatch::Wait { until_ns: None } => {
                            st = c.work.wait(st).unwrap_or_else(|e| e.into_inner());
                        }
                        // A thread asks only while it serves nothing, and the service has
                        // exactly as many threads as the CPT runs.
                        Dispatch::AllBusy => unreachable!("an idle thread found every thread busy"),
                    }
                }
            };
            let (head, ticket, Pending { io, data, done }) = p;
            let tags = io.tags;
            // The cost given at arrival, given back at completion.
            let cost_bytes = cost_bytes(&io);
            let ost = &self.osts[io.ost as usize];
            let started = Instant::now();
            let result = ost.execute(&io, data, &self.pipes);
            let usecs = started.elapsed().as_micros() as u64;
            if result.is_ok() {
                let bytes = match (&io.op, &result) {
                    (IoOp::Write, _) => io.length,
                    (_, Ok(IoOutcome::Read(d))) => d.len() as u64,
                    _ => 0,
                };
                ost.served_bytes.fetch_add(bytes, Ordering::Relaxed);
                ost.served_rpcs.fetch_add(1, Ordering::Relaxed);
                let mut state = lock(&ost.job_stats);
                let now = wall_ns();
                if state.stats.get(&io.tags.job).is_none() {
                    state.cleanup(now, false);
                }
                let js = &mut state.stats;
                match (&io.op, &result) {
                    (IoOp::Write, _) => js.record_brw(now, io.tags.job, true, io.length, usecs),
                    (IoOp::Read, Ok(IoOutcome::Read(d))) => {
                        js.record_brw(now, io.tags.job, false, d.len() as u64, usecs)
                    }
                    (IoOp::Punch, _) => js.record(now, io.tags.job, OstCounter::Punch, usecs),
                    (IoOp::Sync, _) => js.record(now, io.tags.job, OstCounter::Sync, usecs),
                    _ => {}
                }
            }
            ost.time_in_queue_ns.fetch_add(
                u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
            let prev = ost.in_service.fetch_sub(1, Ordering::Relaxed);
            assert!(prev > 0, "an OST's in-service count went below zero");
            // Out of service before the reply leaves: the client frees its RPC window slot
            // when the reply arrives and may send the next RPC at once, which must not be
            // counted next to this one (`nrs_policies` would show more RPCs at the OSS than
            // `max_rpcs_in_flight` allows).
            lock(&c.state)
                .svc
                .complete(self.now_ns(), head, ticket, &tags, cost_bytes);
            // The requester may have gone; its reply is then dropped.
            let _ = done.send(result);
        }
    }

    fn lock_cpts(&self) -> Vec<MutexGuard<'_, CptState>> {
        // Always in index order, so two callers cannot deadlock.
        self.cpts.iter().map(|c| lock(&c.state)).collect()
    }

    fn param_names(&self) -> Vec<String> {
        let mut names: Vec<String> = (0..self.osts.len())
            .flat_map(|i| [self.job_stats_param(i), self.cleanup_interval_param(i)])
            .collect();
        names.extend(
            service_params()
                .iter()
                .map(|p| format!("{SERVICE_PREFIX}{p}")),
        );
        names.push(PARAM_SYNC_STATS.to_string());
        names.push(PARAM_JOB_NODES.to_string());
        names.sort();
        names
    }

    /// The parameter names `pattern` matches. A wildcard leaves out the files of NRS policies
    /// that are not started (reading one answers ENODEV), so `ost.OSS.ost_io.*` shows what is
    /// in use; Lustre's lctl would print an error line for each. Named alone, such a file still
    /// answers ENODEV.
    fn matching(&self, pattern: &str) -> Result<Vec<String>, RemoteError> {
        // A bad pattern is answered, never a reason to drop the connection.
        validate_param_name(pattern)
            .map_err(|e| RemoteError::new(Errno::EINVAL, format!("param_path '{pattern}': {e}")))?;
        let compiled = crate::param_glob::ParamPattern::parse(pattern)
            .map_err(|e| RemoteError::new(Errno::EINVAL, format!("param_path '{pattern}': {e}")))?;
        let wildcard = compiled.has_wildcard();
        let names: Vec<String> = self
            .param_names()
            .into_iter()
            .filter(|n| compiled.matches(n))
            .filter(|n| {
                let policy_file = n
                    .strip_prefix(SERVICE_PREFIX)
                    .is_some_and(|p| p != "nrs_policies" && p != "job_nodes");
                !(wildcard
                    && policy_file
                    && self.get_param(n).is_err_and(|e| e.errno == Errno::ENODEV))
            })
            .collect();
        if names.is_empty() {
            return Err(RemoteError::new(
                Errno::ENOENT,
                format!("param_path '{pattern}': No such file or directory"),
            ));
        }
        Ok(names)
    }

    pub(crate) fn get_param(&self, name: &str) -> Result<String, RemoteError> {
        match name {
            PARAM_JOB_NODES => Ok(lock(&self.job_nodes).render()),
            PARAM_POLICIES => {
                let guards = self.lock_cpts();
                let reg: Vec<&Nrs<Pending>> = guards.iter().map(|g| g.svc.head(REG_HEAD)).collect();
                let hp: Vec<&Nrs<Pending>> = guards.iter().map(|g| g.svc.head(HP_HEAD)).collect();
                let active = guards.iter().map(|g| u64::from(g.svc.busy())).sum();
                Ok(nrs_policies_yaml(
                    &reg,
                    ActiveRpcs { active },
                    Some((&hp, ActiveRpcs::default())),
                ))
            }
            PARAM_SYNC_STATS => {
                let dsfq = self.lock_cpts().iter().any(|g| {
                    g.svc
                        .heads()
                        .any(|h| h.policy_name().split(' ').next() == Some("dsfq"))
                });
                if !dsfq {
                    return Err(RemoteError::new(
                        Errno::ENODEV,
                        "dsfq is not the running policy",
                    ));
                }
                Ok(crate::sync::render_stats(
                    &self.sync.config,
                    self.cpt_count(),
                    &self.sync_stats(),
                ))
            }
            PARAM_TBF_RULE => {
                let guards = self.lock_cpts();
                let reg: Vec<&Nrs<Pending>> = guards.iter().map(|g| g.svc.head(REG_HEAD)).collect();
                let hp: Vec<&Nrs<Pending>> = guards.iter().map(|g| g.svc.head(HP_HEAD)).collect();
                tbf_rule_listing(&reg, Some(&hp), self.tbf.listing_form())
                    .map(|l| l.to_string())
                    .map_err(nrs_error)
            }
            // Every other file a registry policy owns (`nrs_dsfq_weight`, `nrs_sfqd_depth`, ...),
            // read from the running policy of every head as Lustre prints per-policy files.
            _ if name
                .strip_prefix(SERVICE_PREFIX)
                .is_some_and(|p| service_params().contains(&p)) =>
            {
                let param = &name[SERVICE_PREFIX.len()..];
                let guards = self.lock_cpts();
                let reg: Vec<&Nrs<Pending>> = guards.iter().map(|g| g.svc.head(REG_HEAD)).collect();
                let hp: Vec<&Nrs<Pending>> = guards.iter().map(|g| g.svc.head(HP_HEAD)).collect();
                policy_param_text(&reg, Some(&hp), param).map_err(nrs_error)
            }
            _ => {
                let (ost, param) = self.ost_of_param(name)?;
                let mut state = lock(&self.osts[ost].job_stats);
                match param {
                    OstParam::JobStats => {
                        state.cleanup(wall_ns(), false);
                        Ok(state.stats.render(JOB_STATS_FORMAT))
                    }
                    OstParam::CleanupInterval => Ok(format!("{}\n", state.cleanup_interval_s)),
                }
            }
        }
    }

    /// The values of `names`, stopping with `EOVERFLOW` as soon as they exceed what one reply
    /// carries (rendering every OST's job_stats first could hold gigabytes).
    fn get_params(&self, names: Vec<String>) -> Result<Vec<Param>, RemoteError> {
        let mut total = 0u64;
        let mut params = Vec::with_capacity(names.len());
        for name in names {
            let value = self.get_param(&name)?;
            total += value.len() as u64;
            if total > PARAM_REPLY_BYTES_MAX {
                return Err(RemoteError::new(
                    Errno::EOVERFLOW,
                    format!(
                        "the values reach {total} bytes at {name}, more than the \
                         {PARAM_REPLY_BYTES_MAX} bytes one reply carries; ask for fewer \
                         parameters at a time"
                    ),
                ));
            }
            params.push(Param { name, value });
        }
        Ok(params)
    }

    fn ost_of_param(&self, name: &str) -> Result<(usize, OstParam), RemoteError> {
        for i in 0..self.osts.len() {
            if self.job_stats_param(i) == name {
                return Ok((i, OstParam::JobStats));
            }
            if self.cleanup_interval_param(i) == name {
                return Ok((i, OstParam::CleanupInterval));
            }
        }
        Err(RemoteError::new(
            Errno::ENOENT,
            format!("no parameter {name}"),
        ))
    }

    /// `lctl set_param PATTERN=VALUE`: what an administrator's write and a controller's write
    /// both go through, so both get the same checks, errors and log lines.
    pub(crate) fn set_params(&self, pattern: &str, value: &str) -> Result<Vec<Param>, RemoteError> {
        let mut set = Vec::new();
        for name in self.matching(pattern)? {
            self.set_param(&name, value)?;
            info!(param = %name, %value, "set_param");
            set.push(Param {
                name,
                value: value.to_string(),
            });
        }
        Ok(set)
    }

    fn set_param(&self, name: &str, value: &str) -> Result<(), RemoteError> {
        if name == PARAM_SYNC_STATS {
            return Err(RemoteError::new(
                Errno::EPERM,
                format!("{name} is read-only"),
            ));
        }
        if name == PARAM_JOB_NODES {
            // Not a scheduler parameter: no CPT needs waking.
            return lock(&self.job_nodes).admin_write(value, self.now_ns());
        }
        let service_param = name
            .strip_prefix(SERVICE_PREFIX)
            .filter(|p| service_params().contains(p));
        let result = match service_param {
            Some(param) => {
                let text = value.to_string();
                let write = match param {
                    "nrs_policies" => ControlWrite::NrsPolicies(text),
                    "nrs_tbf_rule" => ControlWrite::tbf_rule(text),
                    other => ControlWrite::NrsPolicyParam {
                        param: other.to_string(),
                        text,
                    },
                };
                let mut guards = self.lock_cpts();
                // Read under the locks, so the heads never see time go backwards.
                let now = self.now_ns();
                // Partition by partition, the regular head and then the HP head.
                let heads = guards
                    .iter_mut()
                    .flat_map(|g| g.svc.domain_heads_mut(DOMAIN));
                apply_write(heads, now, &write)
                    .map(|_| ())
                    .map_err(nrs_error)
            }
            None => {
                let (ost, param) = self.ost_of_param(name)?;
                let mut state = lock(&self.osts[ost].job_stats);
                match param {
                    OstParam::JobStats => state.stats.write(value).map_err(|e| {
                        RemoteError::new(e.errno(), e.to_string())
                    }),
                    OstParam::CleanupInterval => match value.trim().parse::<u64>() {
                        Ok(s) if s <= JOB_CLEANUP_INTERVAL_S_MAX => {
                            state.cleanup_interval_s = s;
                            state.cleanup(wall_ns(), true);
                            Ok(())
                        }
                        _ => Err(RemoteError::new(
                            Errno::EINVAL,
                            format!(
                                "job_cleanup_interval takes seconds in 0..={JOB_CLEANUP_INTERVAL_S_MAX}"
                            ),
                        )),
                    },
                }
            }
        };
        // New rates or policies can make queued requests eligible now.
        for c in &self.cpts {
            c.work.notify_all();
        }
        result
    }

    /// What the metrics endpoint reports, read from the daemon's own state at scrape time.
    pub(crate) fn metrics_sample(&self) -> OssSample {
        let osts = self
            .osts
            .iter()
            .enumerate()
            .map(|(i, ost)| {
                let jobs = {
                    let state = lock(&ost.job_stats);
                    state
                        .stats
                        .entries()
                        .map(|e| JobSample {
                            job: e.job_id.as_str().to_string(),
                            read_bytes: e.counter(OstCounter::ReadBytes).sum,
                            write_bytes: e.counter(OstCounter::WriteBytes).sum,
                            rpcs: [
                                OstCounter::Read,
                                OstCounter::Write,
                                OstCounter::Punch,
                                OstCounter::Sync,
                            ]
                            .map(|c| e.counter(c).samples),
                        })
                        .collect()
                };
                let (device_queue_rpcs, device_time_in_queue_ns) = self.device_counters(i);
                OstSample {
                    name: format!("{}-OST{:04x}", self.fsname, i),
                    queued_rpcs: ost.queued_rpcs(),
                    device_queue_rpcs,
                    device_time_in_queue_ns,
                    served_bytes: ost.served_bytes.load(Ordering::Relaxed),
                    served_rpcs: ost.served_rpcs.load(Ordering::Relaxed),
                    jobs,
                }
            })
            .collect();
        // Every CPT's regular head holds the same rules (writes go to all), so CPT 0 speaks
        // for the service.
        let rules = lock(&self.cpts[0].state)
            .svc
            .head(REG_HEAD)
            .tbf()
            .map(|t| {
                t.listing(self.tbf.listing_form())
                    .into_iter()
                    .map(|r| (r.name, r.rate_rpcs_per_s))
                    .collect()
            })
            .unwrap_or_default();
        OssSample {
            osts,
            rules,
            sync: crate::sync::stats_fields(&self.sync_stats()).to_vec(),
            admission: self.admission.counters().fields().to_vec(),
            job_nodes: lock(&self.job_nodes).counters().fields().to_vec(),
            bulk: self.bulk_shares.counters().fields().to_vec(),
            control: self.control_cost.counters(),
            control_period_cpu_ns_median: self.control_cost.recent_cpu_ns_median(),
            jobs_unnamable: self.control_cost.unnamable_jobs(),
        }
    }

    fn dequeue_counts(&self) -> BTreeMap<JobId, u64> {
        let mut out = BTreeMap::new();
        for g in self.lock_cpts() {
            for (job, n) in &g.dequeued {
                *out.entry(*job).or_insert(0) += n;
            }
        }
        out
    }
}

impl Ost {
    fn object_path(&self, object: u64) -> PathBuf {
        self.objects.join(format!("{object:016x}"))
    }

    /// Removes objects (the MDS's destroy of a removed file's objects or of orphans); one
    /// already gone counts as destroyed, so a destroy repeated after a lost reply succeeds.
    fn destroy(&self, objects: &[u64]) -> Result<(), RemoteError> {
        for &object in objects {
            lock(&self.handles).forget(object);
            match std::fs::remove_file(self.object_path(object)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error(e)),
            }
        }
        Ok(())
    }

    /// Up to `max` ids of stored objects above `after`, ascending, and whether there are
    /// more. Names that are not an object's (16 hex digits) are not objects and are skipped.
    ///
    /// A pass starts at `after == 0`: the directory is read once and its ids kept until the
    /// last page (`more` false) is served; the pages after the first come from that reading
    /// (a pass of N objects reads N names, not N per page). With no reading kept (the ossd
    /// restarted during a pass), the directory is read again. An id listed that a destroy
    /// removed since is destroyed again, which succeeds; an object written since the reading
    /// below the cursor waits for the next pass.
    fn list_objects(&self, after: u64, max: u32) -> Result<(Vec<u64>, bool), RemoteError> {
        let mut listing = lock(&self.listing);
        if after == 0 || listing.is_none() {
            *listing = Some(self.read_object_ids()?);
        }
        let ids = listing.as_ref().expect("read above");
        let from = ids.partition_point(|&id| id <= after);
        let to = from.saturating_add(max as usize).min(ids.len());
        let page = ids[from..to].to_vec();
        let more = to < ids.len();
        if !more {
            *listing = None;
        }
        Ok((page, more))
    }

    /// Every stored object's id, ascending (one reading of the directory).
    fn read_object_ids(&self) -> Result<Vec<u64>, RemoteError> {
        let mut ids = Vec::new();
        for entry in std::fs::read_dir(&self.objects).map_err(io_error)? {
            let name = entry.map_err(io_error)?.file_name();
            let Some(name) = name.to_str().filter(|n| n.len() == 16) else {
                continue;
            };
            if let Ok(id) = u64::from_str_radix(name, 16) {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// The object's open file (read and write); created when `create`, else `NotFound` for
    /// an object never written.
    fn object_file(&self, object: u64, create: bool) -> std::io::Result<Arc<ObjectFile>> {
        if let Some(f) = lock(&self.handles).get(object) {
            return Ok(f);
        }
        // Opened outside the lock: an open may wait on the disk.
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(self.object_path(object))?;
        let f = ObjectFile {
            file: f,
            direct: std::sync::OnceLock::new(),
        };
        Ok(lock(&self.handles).insert(object, Arc::new(f)))
    }

    /// Writes `data` at `offset` straight to the device if the OST writes directly and the
    /// write is aligned (offset, length and buffer on [`DIRECT_ALIGN_BYTES`]); returns false
    /// when it did not (the caller writes through the page cache). A file system that refuses
    /// `O_DIRECT` (at open, or with `EINVAL` at the write) turns direct writes off for the
    /// OST, with a warning: the write is then repeated through the page cache, which is safe,
    /// since it carries the same bytes to the same place.
    fn write_direct(
        &self,
        f: &ObjectFile,
        object: u64,
        data: &[u8],
        offset: u64,
    ) -> std::io::Result<bool> {
        let aligned = |x: usize| x.is_multiple_of(DIRECT_ALIGN_BYTES);
        if !self.direct_writes.load(Ordering::Relaxed)
            || !offset.is_multiple_of(DIRECT_ALIGN_BYTES as u64)
            || !aligned(data.len())
            || !aligned(data.as_ptr() as usize)
        {
            return Ok(false);
        }
        let direct = f.direct.get_or_init(|| {
            use std::os::unix::fs::OpenOptionsExt;
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(self.object_path(object))
                .map_err(|e| self.refuse_direct(&e))
                .ok()
        });
        let Some(direct) = direct else {
            return Ok(false);
        };
        match direct.write_all_at(data, offset) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                self.refuse_direct(&e);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn refuse_direct(&self, e: &std::io::Error) {
        if self.direct_writes.swap(false, Ordering::Relaxed) {
            warn!(
                ost = %self.objects.display(),
                "direct writes refused ({e}): this OST writes through the page cache from now on"
            );
        }
    }

    fn execute(
        &self,
        io: &IoRequest,
        data: Option<bytes::Bytes>,
        pipes: &Arc<PipePool>,
    ) -> IoResult {
        if let Some(p) = &self.pacer {
            p.pace(io.length.max(1));
        }
        match io.op {
            IoOp::Write => {
                let data = data.ok_or_else(|| RemoteError::new(Errno::EPROTO, "no bulk"))?;
                let f = self.object_file(io.object, true).map_err(io_error)?;
                if !self
                    .write_direct(&f, io.object, &data, io.offset)
                    .map_err(io_error)?
                {
                    f.file.write_all_at(&data, io.offset).map_err(io_error)?;
                }
                if io.sync {
                    f.file.sync_data().map_err(io_error)?;
                }
                Ok(IoOutcome::Done)
            }
            IoOp::Read => {
                // An object never written (its create failed, or a crash came first) reads
                // as a hole, as in Lustre before an object is written: an empty answer, which
                // the client fills with zeros up to the file's size. ENOENT would make the
                // file unreadable for good, from every mount.
                let f = match self.object_file(io.object, false) {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Ok(IoOutcome::Read(Bulk::Buf(Vec::new())));
                    }
                    Err(e) => return Err(io_error(e)),
                };
                let mut len = io.length as usize;
                if len > READ_PIECE_BYTES {
                    let size = f.file.metadata().map_err(io_error)?.len();
                    let answered = io.length.min(size.saturating_sub(io.offset));
                    if answered > READ_PIECE_BYTES as u64 {
                        use std::os::fd::AsRawFd;
                        // Advice only: a failure costs the read-ahead, not the read.
                        // SAFETY: a plain descriptor and a range; no memory is involved.
                        let _ = unsafe {
                            libc::posix_fadvise(
                                f.file.as_raw_fd(),
                                io.offset as libc::off_t,
                                answered as libc::off_t,
                                libc::POSIX_FADV_WILLNEED,
                            )
                        };
                        return Ok(IoOutcome::Read(Bulk::Streamed(StreamedRead {
                            file: f,
                            offset: io.offset,
                            len: answered,
                        })));
                    }
                    len = answered as usize;
                }
                if let Some(p) = pipes.fill(&f.file, io.offset, len).map_err(io_error)? {
                    return Ok(IoOutcome::Read(Bulk::Piped(p)));
                }
                Ok(IoOutcome::Read(Bulk::Buf(read_up_to(
                    &f.file, io.offset, len,
                )?)))
            }
            IoOp::Punch => {
                let f = self.object_file(io.object, true).map_err(io_error)?;
                f.file.set_len(io.offset).map_err(io_error)?;
                Ok(IoOutcome::Done)
            }
            IoOp::Sync => match self.object_file(io.object, false) {
                Ok(f) => f.file.sync_all().map(|_| IoOutcome::Done).map_err(io_error),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(IoOutcome::Done),
                Err(e) => Err(io_error(e)),
            },
        }
    }
}

/// Reads up to `len` bytes at `offset`, fewer only at the end of the file, into a buffer
/// the kernel fills without zeroing it first (a memset of every buffer cost as much CPU as
/// copying the data out of a warm page cache).
fn read_up_to(file: &File, offset: u64, len: usize) -> Result<Vec<u8>, RemoteError> {
    use std::os::fd::AsRawFd;
    let mut buf: Vec<u8> = Vec::with_capacity(len);
    while buf.len() < len {
        let got = buf.len();
        let spare = &mut buf.spare_capacity_mut()[..len - got];
        let at = offset + got as u64;
        // SAFETY: the kernel writes at most `spare.len()` bytes into the vector's unused
        // capacity, and only the `n` bytes it reports written are added to its length.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                spare.len(),
                at as libc::off_t,
            )
        };
        match n {
            0 => break,
            // SAFETY: the kernel initialised these `n` bytes (above).
            n if n > 0 => unsafe { buf.set_len(got + n as usize) },
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(io_error(e));
                }
            }
        }
    }
    Ok(buf)
}

/// A running ossd.
pub struct Ossd {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<Notify>,
    accept: tokio::task::JoinHandle<tokio::task::JoinSet<()>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    control: Option<ControlHandle>,
    metrics: Option<MetricsServer>,
    /// The synchronization pump and peer tasks ([`crate::sync`]).
    sync_tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Ossd {
    /// Binds, starts the I/O threads and the accept loop. Returns once the socket is
    /// listening, so a caller may connect at once.
    pub async fn start(config: OssdConfig) -> anyhow::Result<Ossd> {
        config.validate()?;
        let mut osts = Vec::with_capacity(config.osts.len());
        for dir in &config.osts {
            let objects = dir.join("objects");
            std::fs::create_dir_all(&objects)
                .with_context(|| format!("OST directory {}", objects.display()))?;
            osts.push(Ost {
                objects,
                handles: Mutex::new(ObjectHandles::default()),
                direct_writes: std::sync::atomic::AtomicBool::new(!config.buffered_writes),
                job_stats: Mutex::new(JobStatsState {
                    stats: OstJobStats::default(),
                    cleanup_interval_s: JOB_CLEANUP_INTERVAL_DEFAULT_S,
                    last_cleanup_ns: wall_ns(),
                }),
                pacer: config.ceiling_bytes_per_s.map(|rate| Pacer {
                    rate_bytes_per_s: rate,
                    next_free: Mutex::new(Instant::now()),
                }),
                arrived: Mutex::new(BTreeMap::new()),
                queued: AtomicU64::new(0),
                in_service: AtomicU64::new(0),
                time_in_queue_ns: AtomicU64::new(0),
                served_bytes: AtomicU64::new(0),
                served_rpcs: AtomicU64::new(0),
                listing: Mutex::new(None),
            });
        }
        let block_stats = match config.device_sensor {
            DeviceSensor::Ossd => config.osts.iter().map(|_| None).collect(),
            DeviceSensor::Block => config
                .osts
                .iter()
                .map(|dir| {
                    let device =
                        pfsqos_linux::block_device_of_dir(dir, Path::new(pfsqos_linux::SYSFS_ROOT))
                            .with_context(|| {
                                format!("--device-sensor block: OST directory {}", dir.display())
                            })?;
                    Ok(Some(BlockStatFile {
                        device,
                        last: Mutex::new(None),
                        warned: std::sync::atomic::AtomicBool::new(false),
                    }))
                })
                .collect::<anyhow::Result<Vec<_>>>()?,
        };
        let tbf = TbfConfig::for_version(config.lustre_version);
        let (per_cpt, raised) = threads_per_cpt(config.threads, config.cpts);
        if let Some(note) = raised {
            warn!("{note}");
        }
        let cpts = (0..config.cpts)
            .map(|k| {
                let mut svc = CptService::new(
                    vec![
                        (DOMAIN, Nrs::with_config(NrsQueue::Regular, tbf.into())),
                        (DOMAIN, Nrs::with_config(NrsQueue::HighPriority, tbf.into())),
                    ],
                    per_cpt as u32,
                );
                // Validated: the instance range fits below SYNC_INSTANCES_MAX.
                svc.set_sync_instance(config.sync.instance_base + k as u32);
                Cpt {
                    state: Mutex::new(CptState {
                        svc,
                        dequeued: BTreeMap::new(),
                        shutdown: false,
                    }),
                    work: Condvar::new(),
                }
            })
            .collect();
        let shared = Arc::new(Shared {
            fsname: config.fsname.clone(),
            key: config.key.clone(),
            server_key: config.server_key.clone(),
            cpts,
            osts,
            epoch: Instant::now(),
            queue_depth_max: config.queue_depth_max,
            rpcs_in_flight_per_conn: config.rpcs_in_flight_per_conn,
            bytes_in_flight: Arc::new(Semaphore::new((config.in_flight_bytes_max / 1024) as usize)),
            admission: Admission::with_connections_max(config.connections_max),
            bulk_idle_timeout: config.bulk_idle_timeout,
            bulk_budget_kib: config.in_flight_bytes_max / 1024,
            // Validated: at most the budget (1 TiB), so the KiB fit a u32.
            bulk_shares: BulkShares::new(
                u32::try_from(config.bulk_share_bytes() / 1024).expect("validated share"),
            ),
            reply_idle_timeout: config.reply_idle_timeout,
            pipes: PipePool::new(PIPES_MAX),
            read_piece_slots: Arc::new(Semaphore::new(per_cpt * config.cpts)),
            tbf,
            clients: Mutex::new(Clients::default()),
            sync: SyncState::new(config.sync.clone()).context("choosing a sync epoch")?,
            block_stats,
            control_cost: Default::default(),
            // Validated above (`ControlConfig::capacity`): bounded, in range, no job twice.
            job_nodes: Mutex::new(JobNodes::new(
                config
                    .control
                    .as_ref()
                    .map_or(&[][..], |c| c.job_nodes.as_slice()),
            )),
        });
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        let addr = listener.local_addr()?;
        // Bound before any thread starts, so a busy metrics port fails the start cleanly.
        let metrics = match config.metrics_listen {
            Some(listen) => {
                let s = shared.clone();
                let render: Render =
                    Arc::new(move || render_collector(OssCollector(s.metrics_sample())));
                Some(MetricsServer::start(listen, render).await?)
            }
            None => None,
        };
        let mut workers = Vec::new();
        for cpt in 0..config.cpts {
            for t in 0..per_cpt {
                let s = shared.clone();
                workers.push(
                    std::thread::Builder::new()
                        .name(format!("ossd-io-{cpt}-{t}"))
                        .spawn(move || s.serve(cpt))
                        .context("spawning an I/O thread")?,
                );
            }
        }
        let stop = Arc::new(Notify::new());
        let accept = tokio::spawn(accept_loop(listener, shared.clone(), stop.clone()));
        info!(%addr, osts = config.osts.len(), cpts = config.cpts, threads = per_cpt * config.cpts, "ossd listening");
        let mut sync_tasks = crate::sync::spawn(&shared);
        // The statistics reporter is a background task like the sync pump: stopped with it.
        if let Some(r) = &config.report {
            sync_tasks.push(crate::report::spawn(
                r.clone(),
                config.osts.clone(),
                shared.peer_key().to_vec(),
                addr,
            ));
        }
        let control = match &config.control {
            Some(c) => {
                let capacity = c.capacity(config.ceiling_bytes_per_s)?;
                Some(ControlHandle::spawn(shared.clone(), c, capacity)?)
            }
            None => None,
        };
        Ok(Ossd {
            addr,
            shared,
            stop,
            accept,
            workers,
            control,
            metrics,
            sync_tasks,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the metrics endpoint listens, if it runs.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(MetricsServer::local_addr)
    }

    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Requests dequeued from the NRS heads so far, per job, summed over CPTs: what the
    /// scheduler let through.
    pub fn dequeue_counts(&self) -> BTreeMap<JobId, u64> {
        self.shared.dequeue_counts()
    }

    /// Requests waiting in the NRS heads now, over all OSTs.
    pub fn queued_rpcs(&self) -> u64 {
        self.shared.osts.iter().map(|o| o.queued_rpcs()).sum()
    }

    /// Bulk-budget bytes reserved now (in 1 KiB units of the budget): what connections hold
    /// for writes being received and replies being served.
    pub fn bulk_bytes_reserved(&self) -> u64 {
        let total_kib = self.shared.bulk_budget_kib;
        (total_kib - self.shared.bytes_in_flight.available_permits() as u64) * 1024
    }

    /// What the bulk budget's per-client shares and reply timeout did so far.
    pub fn bulk_counters(&self) -> BulkCounters {
        self.shared.bulk_shares.counters()
    }

    /// What connection admission refused so far.
    pub fn admission_counters(&self) -> admission::AdmissionCounters {
        self.shared.admission.counters()
    }

    /// What DSFQ synchronization with the peer ossds did so far.
    pub fn job_nodes_counters(&self) -> JobNodesCounters {
        lock(&self.shared.job_nodes).counters()
    }

    /// What the daemon's job table says now: node counts by job.
    pub fn job_nodes(&self) -> BTreeMap<JobId, u32> {
        lock(&self.shared.job_nodes).snapshot()
    }

    pub fn sync_stats(&self) -> SyncStats {
        self.shared.sync_stats()
    }

    /// Stops the controller, if one runs, once it has stopped the rules it started and put
    /// `nrs_policies` back to `fifo` if it had changed it. The daemon keeps serving.
    pub async fn stop_control(&mut self) {
        if let Some(c) = self.control.take() {
            c.stop().await;
        }
    }

    /// Applies a controller write as the control loop does (through `lctl set_param`'s path),
    /// without recording it for the clean exit.
    pub fn apply_control_write(&self, write: &DomainWrite) -> Result<(), RemoteError> {
        crate::control::apply_write(&*self.shared, write, &mut Default::default())
    }

    /// Stops the controller (undoing its writes), stops accepting, closes every connection,
    /// then stops the I/O threads (queued requests are dropped unanswered) and waits for them.
    /// Connections are closed before any request is refused, so a client sees what it sees
    /// when the process dies (a closed connection, on which it reconnects and resends within
    /// its recovery time), never an error its application would get (a clean stop
    /// answered queued and new requests ENODEV, which the client does not retry). Requests
    /// being served finish on their I/O thread; their replies have no connection left, and
    /// the client's resend of them is idempotent (writes and punches at offsets).
    pub async fn shutdown(mut self) {
        if let Some(m) = self.metrics.take() {
            m.stop().await;
        }
        self.stop_control().await;
        for t in self.sync_tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
        self.stop.notify_one();
        if let Ok(mut open) = self.accept.await {
            open.abort_all();
            while open.join_next().await.is_some() {}
        }
        for c in &self.shared.cpts {
            let pending: Vec<Pending> = {
                let mut st = lock(&c.state);
                st.shutdown = true;
                let now = self.shared.now_ns();
                // Every head goes back to FIFO first, so nothing is held back by a throttle.
                let drained = st.svc.drain(now);
                for p in &drained {
                    let prev = self.shared.osts[p.io.ost as usize]
                        .queued
                        .fetch_sub(1, Ordering::Relaxed);
                    assert!(prev > 0, "an OST's queued count went below zero");
                }
                drained
            };
            drop(pending);
            c.work.notify_all();
        }
        let workers = self.workers;
        let _ = tokio::task::spawn_blocking(move || {
            for w in workers {
                let _ = w.join();
            }
        })
        .await;
        info!(addr = %self.addr, "ossd stopped");
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    stop: Arc<Notify>,
) -> tokio::task::JoinSet<()> {
    let next_id = AtomicU64::new(0);
    // The open connections, returned at stop: they end with the daemon, as they would with
    // its process (a peer ossd must see a stopped daemon go away and reconnect to its
    // successor).
    let mut open = tokio::task::JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.notified() => return open,
            Some(_) = open.join_next(), if !open.is_empty() => continue,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Only a small pre-auth budget is open to a peer that has not authenticated yet.
        let slot = match shared.admission.handshake(peer.ip()) {
            Ok(s) => s,
            Err(refusal) => {
                log_refusal(&shared.admission, peer, &refusal);
                continue;
            }
        };
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let shared = shared.clone();
        open.spawn(async move {
            match serve_conn(shared.clone(), stream, peer, id, slot).await {
                Ok(())
                | Err(ConnEnd {
                    error: ConnError::Closed,
                    ..
                }) => debug!(%peer, id, "connection closed"),
                // Before authentication anyone can cause these: rate-limited.
                Err(e) if e.before_auth => log_refusal(&shared.admission, peer, &e.error),
                Err(e) => warn!(%peer, id, reason = %e.error, "closing connection"),
            }
        });
    }
}

/// Logs a refused or failed unauthenticated connection, at most
/// [`admission::LOG_LINES_PER_WINDOW`] a window (the rest are counted in the metrics).
fn log_refusal(admission: &Admission, peer: SocketAddr, reason: &dyn std::fmt::Display) {
    if let Some(suppressed) = admission.log_allowed() {
        warn!(%peer, %reason, suppressed, "connection refused before authentication");
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Why a connection ended, and whether the peer had authenticated by then.
struct ConnEnd {
    error: ConnError,
    before_auth: bool,
}

impl From<ConnError> for ConnEnd {
    fn from(error: ConnError) -> Self {
        ConnEnd {
            error,
            before_auth: false,
        }
    }
}

struct Outgoing {
    reply: Reply,
    bulk: Option<Bulk>,
    /// What the request holds until its reply is written (then dropped with it).
    held: Held,
}

/// What a request in flight holds: its slot among the connection's requests in flight, its
/// client's share and its part of the OSS-wide bulk budget. All are given back once the reply
/// has been written to the socket, not when it is queued for the writer: a reply the peer
/// does not read still holds its memory, and must be counted (see
/// [`OssdConfig::reply_idle_timeout`]).
#[derive(Default)]
struct Held {
    _rpc: Option<tokio::sync::OwnedSemaphorePermit>,
    _share: Option<SharePermit>,
    _budget: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// Returns once `progress` has not moved for a whole `idle` period; it is sampled every `idle`,
/// so a send that stops is caught within two periods, and one that moves at all is never.
async fn no_progress(progress: &SendProgress, idle: Duration) {
    loop {
        let before = progress.bytes();
        tokio::time::sleep(idle).await;
        if progress.bytes() == before {
            return;
        }
    }
}

/// The reply to `get_param`/`set_param`: headers in the message, values as its bulk data.
fn params_reply(tag: u64, params: Result<Vec<Param>, RemoteError>) -> Outgoing {
    match params.and_then(params_to_wire) {
        Ok((headers, values)) => Outgoing {
            reply: Reply {
                tag,
                result: Ok(ReplyBody::Params(headers)),
                client_limit: ClientLimit::Unstated,
            },
            bulk: Some(Bulk::Buf(values)),
            held: Held::default(),
        },
        Err(e) => Outgoing {
            reply: Reply {
                tag,
                result: Err(e),
                client_limit: ClientLimit::Unstated,
            },
            bulk: None,
            held: Held::default(),
        },
    }
}

async fn serve_conn(
    shared: Arc<Shared>,
    stream: TcpStream,
    peer_addr: SocketAddr,
    id: u64,
    mut slot: HandshakeSlot,
) -> Result<(), ConnEnd> {
    let before_auth = |error| ConnEnd {
        error,
        before_auth: true,
    };
    stream
        .set_nodelay(true)
        .map_err(|e| before_auth(e.into()))?;
    let (r, w) = stream.into_split();
    let (mut reader, mut writer) = (Reader::new(r), Writer::new(w));
    let ost_count = shared.osts.len() as u32;
    // The slot moves into `admit`, which trades it for a connection slot once the peer has
    // authenticated; on any failure it is dropped, freeing the pre-auth budget.
    // It ends early if admission gives it to a source holding fewer handshake slots.
    let admission = shared.admission.clone();
    let eviction = slot.eviction();
    let (peer, _conn_slot) = shared
        .admission
        .run_handshake(
            eviction,
            conn::server_handshake_admit_keys(
                &mut reader,
                &mut writer,
                conn::ServerKeys {
                    cluster: &shared.key,
                    server: &shared.server_key,
                },
                &shared.fsname,
                ost_count,
                move |_| admission.authenticated(slot).map_err(|r| r.to_string()),
            ),
        )
        .await
        .map_err(|e| {
            shared
                .sync
                .counters
                .handshakes_failed
                .fetch_add(1, Ordering::Relaxed);
            before_auth(e)
        })?;
    debug!(id, role = ?peer.role, "peer authenticated");
    // A peer ossd holds one of a bounded number of slots while connected.
    let _peer_slot = if peer.role == Role::Oss {
        match shared.sync.peer_connections.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => {
                shared
                    .sync
                    .counters
                    .peer_connections_refused
                    .fetch_add(1, Ordering::Relaxed);
                return Err(ConnError::from(ProtocolError::Invalid(
                    "too many peer ossd connections".into(),
                ))
                .into());
            }
        }
    } else {
        None
    };
    let cpt = (id % shared.cpts.len() as u64) as usize;
    // The client's share of the bulk budget, by the address the socket reports (not by
    // anything the peer declares).
    let limits = ConnLimits {
        rpcs: Arc::new(Semaphore::new(shared.rpcs_in_flight_per_conn)),
        share: shared.bulk_shares.join(peer_addr.ip()),
    };
    let (tx, mut rx) = mpsc::channel::<Outgoing>(shared.rpcs_in_flight_per_conn);
    // The node a client connection is bound to (by its first I/O request): every reply states
    // that node's current limit as the reply leaves.
    let bound: Arc<std::sync::OnceLock<ClientBinding>> = Arc::default();
    let (writer_shared, writer_bound) = (shared.clone(), bound.clone());
    let progress = writer.progress();
    let reply_idle = shared.reply_idle_timeout;
    // Aborted with the connection's task (a daemon stopping closes its connections without
    // sending the replies still queued for them). It ends with an error when a reply cannot
    // be written, or makes no progress for `reply_idle_timeout` (the peer stopped reading):
    // the whole connection is then closed, which gives back what its replies hold.
    let mut writer_task = AbortOnDrop(tokio::spawn(async move {
        while let Some(mut o) = rx.recv().await {
            o.reply.client_limit = match writer_bound.get() {
                Some(b) => lock(&writer_shared.clients).limit(b.nid),
                None => ClientLimit::Unstated,
            };
            let send = async {
                match o.bulk.take() {
                    // The read buffer is written to the socket as it is: no copy.
                    Some(Bulk::Buf(b)) => {
                        writer
                            .msg_with_bulk_bytes(&o.reply, bytes::Bytes::from(b))
                            .await
                    }
                    Some(Bulk::Piped(p)) => writer.msg_with_piped(&o.reply, p).await,
                    // Each piece reuses the one piece of budget the read holds (`o.held`).
                    Some(Bulk::Streamed(s)) => {
                        let slots = writer_shared.read_piece_slots.clone();
                        writer
                            .msg_with_bulk_pieces(&o.reply, s.len, READ_PIECE_BYTES, |pos, len| {
                                let (file, slots) = (s.file.clone(), slots.clone());
                                let at = s.offset + pos;
                                async move {
                                    let _slot = slots
                                        .acquire_owned()
                                        .await
                                        .expect("the semaphore is never closed");
                                    let piece = tokio::task::spawn_blocking(move || {
                                        read_piece(&file.file, at, len)
                                    })
                                    .await
                                    .map_err(|e| ConnError::Io(std::io::Error::other(e)))?
                                    .map_err(|e| {
                                        ConnError::Io(std::io::Error::other(e.to_string()))
                                    })?;
                                    Ok((bytes::Bytes::from(piece), ()))
                                }
                            })
                            .await
                    }
                    None => writer.msg(&o.reply).await,
                }
            };
            tokio::select! {
                r = send => if let Err(e) = r {
                    // The peer went away (or broke the connection): nothing to report.
                    debug!(id, error = %e, "reply not delivered");
                    return Err(ConnError::Closed);
                },
                () = no_progress(&progress, reply_idle) => {
                    writer_shared.bulk_shares.reply_timed_out();
                    return Err(ConnError::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "a reply made no progress for {reply_idle:?}: the peer is not \
                             reading its replies"
                        ),
                    )));
                }
            }
            // `o.held` is given back here, once the reply is in the socket.
        }
        Ok::<(), ConnError>(())
    }));
    let mut writer_ended = None;
    let read_end = tokio::select! {
        r = read_requests(&shared, &mut reader, peer, cpt, &tx, &limits, &bound) => r,
        // The writer ends first only when it failed: stop reading too.
        w = &mut writer_task.0 => {
            writer_ended = Some(w.unwrap_or(Err(ConnError::Closed)));
            Err(ConnError::Closed)
        }
    };
    drop(tx);
    let write_end = match writer_ended {
        Some(w) => w,
        None => (&mut writer_task.0).await.unwrap_or(Err(ConnError::Closed)),
    };
    // The binding (if any) goes with the last reference: the node is disconnected once.
    drop(bound);
    drop(limits);
    // Why the connection ended: the writer's failure if the reader had no other reason.
    match (read_end, write_end) {
        (Ok(()) | Err(ConnError::Closed), Err(e)) => Err(e.into()),
        (r, _) => Ok(r?),
    }
}

/// What a connection's requests draw on besides the OSS-wide budget.
struct ConnLimits {
    /// Its requests in flight (`rpcs_in_flight_per_conn`).
    rpcs: Arc<Semaphore>,
    /// Its client's share of the bulk budget.
    share: ShareMember,
}

/// Binds an unbound client connection to node `nid` (its first I/O request's or limit
/// query's), so a controller sees the node and every reply states its limit; a full client
/// table leaves the connection unbound (served, never limited).
fn bind_client(shared: &Arc<Shared>, bound: &std::sync::OnceLock<ClientBinding>, nid: Nid) {
    debug_assert!(bound.get().is_none());
    if lock(&shared.clients).connect(nid) {
        let binding = ClientBinding {
            shared: shared.clone(),
            nid,
        };
        if bound.set(binding).is_err() {
            unreachable!("only this task binds its connection");
        }
    } else {
        warn!(%nid, CLIENTS_MAX, "too many client nodes: this one cannot be limited");
    }
}

async fn read_requests(
    shared: &Arc<Shared>,
    reader: &mut Reader<tokio::net::tcp::OwnedReadHalf>,
    peer: conn::Peer,
    cpt: usize,
    tx: &mpsc::Sender<Outgoing>,
    limits: &ConnLimits,
    bound: &std::sync::OnceLock<ClientBinding>,
) -> Result<(), ConnError> {
    let ost_count = shared.osts.len() as u32;
    loop {
        let frame = reader.frame().await?;
        let req = match decode_request(&frame, ost_count) {
            Ok(r) => r,
            Err(e) => {
                if peer.role == Role::Oss {
                    shared
                        .sync
                        .counters
                        .batches_refused_in
                        .fetch_add(1, Ordering::Relaxed);
                }
                return Err(e.into());
            }
        };
        let permit = limits
            .rpcs
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let reply = |tag, result| Outgoing {
            reply: Reply {
                tag,
                result,
                client_limit: ClientLimit::Unstated,
            },
            bulk: None,
            held: Held::default(),
        };
        match req {
            Request::Io { tag, io } => {
                let kib = |bytes: u64| bytes.div_ceil(1024).max(1) as u32;
                let reserve = |bytes: u64| {
                    let budget = shared.bytes_in_flight.clone();
                    async move {
                        budget
                            .acquire_many_owned(kib(bytes))
                            .await
                            .expect("the semaphore is never closed")
                    }
                };
                // First the client's share, for as long as the request waits on its client
                // (a write's bulk arriving, a reply being read): waiting for it here holds
                // nothing of the OSS-wide budget, so a client whose share is taken by its
                // stalled connections stops only itself.
                let share = limits.share.reserve(kib(io.length)).await;
                // A write reserves the bulk budget frame by frame as its data arrives, so a
                // sender that announces much and sends little holds what it sent and one
                // frame more, and only until it idles for `bulk_idle_timeout`; anything
                // else reserves its reply's size up front (the server fills it itself).
                let (data, bytes, share) = match io.op {
                    IoOp::Write => {
                        let (d, permits) = tokio::time::timeout(
                            BULK_TIMEOUT,
                            reader.bulk_bytes_reserving(
                                io.length,
                                Some(shared.bulk_idle_timeout),
                                |n| reserve(n as u64),
                            ),
                        )
                        .await
                        .map_err(|_| {
                            ProtocolError::Invalid(format!(
                                "bulk data not received within {BULK_TIMEOUT:?}"
                            ))
                        })??;
                        let held = permits.into_iter().reduce(|mut a, b| {
                            a.merge(b);
                            a
                        });
                        // All its bulk has arrived: what is left is the server's to finish,
                        // so it no longer counts against its client's share.
                        drop(share);
                        (Some(d), held, None)
                    }
                    // A reply's data is in memory at most one piece at a time.
                    _ => (
                        None,
                        Some(reserve(io.length.min(READ_PIECE_BYTES as u64)).await),
                        Some(share),
                    ),
                };
                if !peer.role.may_do_io() {
                    let e = RemoteError::new(Errno::EPERM, "this role may not do object I/O");
                    let _ = tx.send(reply(tag, Err(e))).await;
                    continue;
                }
                if peer.role == Role::Client && bound.get().is_none() {
                    bind_client(shared, bound, io.tags.nid);
                }
                let (done_tx, done_rx) = oneshot::channel();
                if let Err(e) = shared.submit(cpt, io, data, done_tx) {
                    let _ = tx.send(reply(tag, Err(e))).await;
                    continue;
                }
                let tx = tx.clone();
                let held = Held {
                    _rpc: Some(permit),
                    _share: share,
                    _budget: bytes,
                };
                tokio::spawn(async move {
                    let mut out = match done_rx.await {
                        Ok(Ok(IoOutcome::Done)) => reply(tag, Ok(ReplyBody::Done)),
                        Ok(Ok(IoOutcome::Read(d))) => Outgoing {
                            reply: Reply {
                                tag,
                                result: Ok(ReplyBody::Read {
                                    length: d.len() as u64,
                                }),
                                client_limit: ClientLimit::Unstated,
                            },
                            bulk: Some(d),
                            held: Held::default(),
                        },
                        Ok(Err(e)) => reply(tag, Err(e)),
                        Err(_) => reply(
                            tag,
                            Err(RemoteError::new(Errno::EIO, "OSS stopped before serving")),
                        ),
                    };
                    // The writer gives them back once the reply is written; if the connection
                    // is gone, they go back with the reply here.
                    out.held = held;
                    let _ = tx.send(out).await;
                });
            }
            Request::GetParam { tag, pattern } => {
                let params = if peer.role.may_use_params() {
                    shared
                        .matching(&pattern)
                        .and_then(|names| shared.get_params(names))
                } else {
                    Err(RemoteError::new(
                        Errno::EPERM,
                        "this role may not read parameters",
                    ))
                };
                let _ = tx.send(params_reply(tag, params)).await;
            }
            Request::SetParam {
                tag,
                pattern,
                value,
            } => {
                let params = if peer.role.may_use_params() {
                    shared.set_params(&pattern, &value)
                } else {
                    Err(RemoteError::new(
                        Errno::EPERM,
                        "this role may not set parameters",
                    ))
                };
                let _ = tx.send(params_reply(tag, params)).await;
            }
            Request::ListParams { tag, pattern } => {
                let result = if peer.role.may_use_params() {
                    shared.matching(&pattern).and_then(|names| {
                        if names.len() > PARAMS_PER_REPLY_MAX {
                            return Err(RemoteError::new(
                                Errno::EOVERFLOW,
                                format!(
                                    "{} parameters match; one reply names at most \
                                     {PARAMS_PER_REPLY_MAX}",
                                    names.len()
                                ),
                            ));
                        }
                        Ok(ReplyBody::Names(names))
                    })
                } else {
                    Err(RemoteError::new(
                        Errno::EPERM,
                        "this role may not read parameters",
                    ))
                };
                let _ = tx.send(reply(tag, result)).await;
            }
            // Answered here, on the connection's task, never through the NRS: the writer
            // states the bound node's limit as the reply leaves, the limit the controller
            // last set (`Clients::limit`).
            Request::LimitQuery { tag, nid } => {
                let result = if peer.role != Role::Client {
                    Err(RemoteError::new(
                        Errno::EPERM,
                        "only a client node may ask for its limit",
                    ))
                } else {
                    match bound.get() {
                        Some(b) if b.nid != nid => Err(RemoteError::new(
                            Errno::EINVAL,
                            format!("this connection is bound to node {}", b.nid),
                        )),
                        Some(_) => Ok(ReplyBody::Done),
                        None => {
                            bind_client(shared, bound, nid);
                            Ok(ReplyBody::Done)
                        }
                    }
                };
                let _ = tx.send(reply(tag, result)).await;
            }
            // The object store's own operations, from the MDS only, off the NRS: they move
            // no data, and a destroy must not wait behind the I/O it frees space for.
            Request::Destroy { tag, ost, objects } => {
                let result = if peer.role.may_destroy() {
                    let shared = shared.clone();
                    tokio::task::spawn_blocking(move || shared.osts[ost as usize].destroy(&objects))
                        .await
                        .unwrap_or_else(|e| Err(RemoteError::new(Errno::EIO, e.to_string())))
                        .map(|()| ReplyBody::Done)
                } else {
                    Err(RemoteError::new(
                        Errno::EPERM,
                        "only the MDS may destroy objects",
                    ))
                };
                let _ = tx.send(reply(tag, result)).await;
            }
            Request::ListObjects {
                tag,
                ost,
                after,
                max,
            } => {
                let result = if peer.role.may_destroy() {
                    let shared = shared.clone();
                    tokio::task::spawn_blocking(move || {
                        shared.osts[ost as usize].list_objects(after, max)
                    })
                    .await
                    .unwrap_or_else(|e| Err(RemoteError::new(Errno::EIO, e.to_string())))
                    .map(|(objects, more)| ReplyBody::Objects { objects, more })
                } else {
                    Err(RemoteError::new(
                        Errno::EPERM,
                        "only the MDS may list objects",
                    ))
                };
                let _ = tx.send(reply(tag, result)).await;
            }
            Request::Sync { tag, batch } => {
                let result = if peer.role.may_sync() {
                    shared.deliver_sync_batch(&batch);
                    Ok(ReplyBody::Done)
                } else {
                    shared
                        .sync
                        .counters
                        .batches_refused_in
                        .fetch_add(1, Ordering::Relaxed);
                    Err(RemoteError::new(
                        Errno::EPERM,
                        "only a peer ossd may send synchronization messages",
                    ))
                };
                let _ = tx.send(reply(tag, result)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fewer threads than CPTs are raised to one a CPT, as Lustre raises each partition to its
    /// minimum, and never silently: the note names both options, the value given and what
    /// runs. A count the CPTs divide runs as given, with no note.
    #[test]
    fn too_few_threads_for_the_cpts_are_raised_and_said() {
        let (per_cpt, note) = threads_per_cpt(2, 4);
        assert_eq!(per_cpt, 1);
        let note = note.expect("a raised thread count is logged");
        assert!(
            note.contains("--threads 2") && note.contains("--cpts 4"),
            "{note}"
        );
        assert!(note.contains("4 in all"), "{note}");
        // Rounded down, as Lustre divides `oss_num_threads` over the partitions.
        let (per_cpt, note) = threads_per_cpt(7, 2);
        assert_eq!(per_cpt, 3);
        assert!(note
            .expect("a lowered count is logged")
            .contains("6 in all"));
        for (threads, cpts) in [(8, 1), (8, 2), (1, 1), (1024, 256)] {
            let (per_cpt, note) = threads_per_cpt(threads, cpts);
            assert_eq!((per_cpt * cpts, note), (threads, None));
        }
    }

    /// Each bound of the bulk settings, on both sides: the edge values pass, one past them
    /// fails with the setting named.
    #[test]
    fn bulk_limits_are_checked_at_their_edges() {
        let s = Duration::from_secs(5);
        let ok = |b, sh, bi, ri| validate_bulk_limits(b, sh, bi, ri);
        let min = IO_LEN_BYTES_MAX;
        assert!(ok(min, min, s, s).is_ok());
        assert!(ok(
            BULK_BUDGET_BYTES_MAX,
            BULK_BUDGET_BYTES_MAX,
            IDLE_TIMEOUT_MAX,
            s
        )
        .is_ok());
        assert!(ok(min - 1, min, s, s).unwrap_err().contains("bulk budget"));
        assert!(ok(BULK_BUDGET_BYTES_MAX + 1, min, s, s)
            .unwrap_err()
            .contains("bulk budget"));
        assert!(ok(4 * min, min - 1, s, s).unwrap_err().contains("share"));
        assert!(ok(4 * min, 4 * min + 1, s, s)
            .unwrap_err()
            .contains("share"));
        let ms = Duration::from_millis(1);
        assert!(ok(min, min, ms, ms).is_ok());
        assert!(ok(min, min, Duration::from_micros(999), s)
            .unwrap_err()
            .contains("bulk idle"));
        assert!(ok(min, min, s, IDLE_TIMEOUT_MAX + ms)
            .unwrap_err()
            .contains("reply idle"));
        assert_eq!(bulk_share_default_bytes(1 << 30), 256 << 20);
        assert_eq!(bulk_share_default_bytes(min), min);
    }

    /// Reads of at most 1 MiB leave through a pipe (reused), larger ones through a
    /// buffer; both deliver the bytes written. Were the ossd to stop splicing, no pipe would
    /// exist.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn small_reads_are_spliced_and_large_ones_are_not() {
        use pfsqos_wire::client::{Identity, OssClient};
        let dir = tempfile::tempdir().unwrap();
        let key = b"test-cluster-key-0123456789abcdef".to_vec();
        let cfg = OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![dir.path().join("ost0")],
            key.clone(),
            b"test-server-key-fedcba9876543210".to_vec(),
        );
        let ossd = Ossd::start(cfg).await.unwrap();
        let mut c = OssClient::connect(ossd.local_addr(), &key, Role::Client)
            .await
            .unwrap();
        let id = Identity::test("dd.0");
        let data: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 241) as u8).collect();
        c.write(&id, 0, 7, 0, &data, false).await.unwrap();
        let small = [(0usize, 1 << 20), (100, 5000), (4096, 1 << 20), (7, 65_536)];
        for (offset, len) in small {
            let back = c.read(&id, 0, 7, offset as u64, len as u64).await.unwrap();
            assert_eq!(back, data[offset..offset + len]);
        }
        // Spliced (a pipe exists), within the pool's bound and at most one per read. How many
        // are reused is an interleaving (the writer frees a pipe just after the last byte
        // leaves it, so the next read may find it still busy), so it is not asserted.
        let pipes = ossd.shared().pipes.live();
        assert!(
            (1..=small.len().min(PIPES_MAX)).contains(&pipes),
            "{pipes} pipes for {} reads",
            small.len()
        );
        let back = c.read(&id, 0, 7, 0, 3 << 20).await.unwrap();
        assert_eq!(back, data);
        assert_eq!(
            ossd.shared().pipes.live(),
            pipes,
            "3 MiB is read into a buffer"
        );
        ossd.shutdown().await;
    }

    #[test]
    fn lustre_versions_parse_within_the_emulated_range() {
        assert_eq!(
            parse_lustre_version("2.15").unwrap(),
            LustreVersion::parse("2.15.0").unwrap()
        );
        assert_eq!(
            parse_lustre_version("v2_17_57").unwrap(),
            LustreVersion::MASTER
        );
        assert!(parse_lustre_version("2.11").is_err());
        assert!(parse_lustre_version("2.18").is_err());
        assert!(parse_lustre_version("two").is_err());
        assert!(parse_lustre_version("2.15.3.1").is_err());
    }

    fn param_matches(pattern: &str, name: &str) -> bool {
        crate::param_glob::ParamPattern::parse(pattern).is_ok_and(|p| p.matches(name))
    }

    #[test]
    fn param_globs_stay_within_components() {
        assert!(param_matches(
            "obdfilter.*.job_stats",
            "obdfilter.pfsqos-OST0000.job_stats"
        ));
        assert!(param_matches("ost.OSS.ost_io.nrs_*", PARAM_TBF_RULE));
        assert!(param_matches("*.*.*.*", PARAM_POLICIES));
        assert!(!param_matches("ost.*", PARAM_POLICIES));
        assert!(!param_matches(
            "obdfilter.*OST0001.job_stats",
            "obdfilter.x-OST0000.job_stats"
        ));
        assert!(param_matches(
            "obdfilter/*/job_stats",
            "obdfilter.x-OST0000.job_stats"
        ));
        assert!(param_matches(
            "obdfilter.x-OST000[01].job_stats",
            "obdfilter.x-OST0000.job_stats"
        ));
    }

    #[test]
    fn object_handles_stay_bounded_and_evict_the_least_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let open = |i: u64| {
            let p = dir.path().join(i.to_string());
            Arc::new(ObjectFile {
                file: File::create(p).unwrap(),
                direct: std::sync::OnceLock::new(),
            })
        };
        let mut h = ObjectHandles::default();
        for o in 0..OBJECT_HANDLES_PER_OST_MAX as u64 {
            h.insert(o, open(o));
        }
        // Object 0 is used again, so object 1 is now the least recently used.
        assert!(h.get(0).is_some());
        let extra = OBJECT_HANDLES_PER_OST_MAX as u64;
        h.insert(extra, open(extra));
        assert_eq!(h.open.len(), OBJECT_HANDLES_PER_OST_MAX);
        assert!(h.get(1).is_none());
        assert!(h.get(0).is_some() && h.get(extra).is_some());
        // A second open of an object already held keeps the first.
        let first = h.get(5).unwrap();
        let kept = h.insert(5, open(999));
        assert!(Arc::ptr_eq(&first, &kept));
        assert_eq!(h.open.len(), OBJECT_HANDLES_PER_OST_MAX);
    }

    #[test]
    fn the_client_table_is_bounded_and_forgets_a_node_with_its_last_connection() {
        use pfsqos_core::model::{LNet, NetKind};
        let nid = |i: u32| Nid {
            addr: i,
            net: LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        };
        let mut t = Clients::default();
        assert!(t.connect(nid(7)) && t.connect(nid(7)));
        assert_eq!(t.limit(nid(7)), ClientLimit::Unlimited);
        assert_eq!(t.limit(nid(8)), ClientLimit::Unstated);
        assert!(t.set_limit(nid(7), Some(5 << 20)));
        assert!(!t.set_limit(nid(8), Some(5 << 20)), "not connected");
        t.disconnect(nid(7));
        assert_eq!(t.limit(nid(7)), ClientLimit::BytesPerS(5 << 20));
        t.clear_limits();
        assert_eq!(t.limit(nid(7)), ClientLimit::Unlimited);
        t.disconnect(nid(7));
        assert_eq!(t.limit(nid(7)), ClientLimit::Unstated, "forgotten");
        for i in (0..CLIENTS_MAX as u32).rev() {
            assert!(t.connect(nid(i)));
        }
        assert!(!t.connect(nid(CLIENTS_MAX as u32)), "the table is full");
        assert!(t.connect(nid(0)), "a known node connects again");
        let nids = t.nids();
        assert_eq!(nids.len(), CLIENTS_MAX);
        assert!(nids.windows(2).all(|w| w[0] < w[1]), "sorted");
    }

    #[test]
    fn pacer_spaces_reservations_by_the_rate() {
        let p = Pacer {
            rate_bytes_per_s: 1_000_000_000,
            next_free: Mutex::new(Instant::now()),
        };
        let before = *lock(&p.next_free);
        p.pace(1_000);
        p.pace(1_000);
        let after = *lock(&p.next_free);
        // Two 1000-byte I/Os at 1 GB/s reserve at least 2 µs of device time.
        assert!(after.duration_since(before) >= Duration::from_micros(2));
    }
}
