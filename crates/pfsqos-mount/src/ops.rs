//! The client's file operations, independent of FUSE: metadata through the MDS, data striped
//! over the OSTs with write-behind, sizes tracked while writes are in flight. `fs.rs` adapts
//! these to the kernel's requests.
//!
//! # Write-behind (Lustre's dirty cache, simplified)
//! A file's bytes travel in RPCs formed by the one rule every pfsqos client follows
//! (`pfsqos_node::client`): the bytes a write puts in one object are one contiguous object
//! range, cut at every multiple of `brw_size` in the object, as Lustre's OSC builds RPCs from
//! its per-object dirty pages. Gathering is per object, as Lustre's dirty cache is: a write
//! takes its bytes' share of the dirty budget (`max_dirty_mb`); the bytes it puts in an object
//! that continue that object's gathered bytes (same JobID, next object offset) join them, so a
//! sequential writer of a file striped over several OSTs still sends whole `brw_size` RPCs,
//! each carrying several stripe units of its object. Everything up to the last RPC boundary
//! reached is sent: each
//! RPC takes a slot of its OST's RPC window (`max_rpcs_in_flight`) and runs in the background,
//! and the write returns as soon as all its RPCs are admitted, so a sequential writer keeps the
//! window full. What stops short of a boundary stays gathered (at most one RPC's worth per
//! object), and is sent when a write elsewhere in the object arrives, on a read of those bytes, on
//! truncate, `flush`, `fsync` and `release`, and at the latest `gather_flush_after` (default
//! [`GATHER_FLUSH_AFTER`]) after the
//! gathering started. An application writing 1 MiB from an unaligned buffer hands the kernel's
//! direct I/O path two pieces per MiB; gathered, they still make one 1 MiB RPC, so a TBF rule in
//! RPCs/s keeps meaning MiB/s. Each byte written is copied once, from the kernel's request
//! into the buffer of the RPC it belongs to (`Gather::fill`); RPCs are slices of those
//! buffers, sent as they are.
//!
//! `flush`, `fsync` and `release` wait until every RPC of the file has finished and report the
//! first error, as Lustre reports asynchronous write errors at `fsync`/`close`. `fsync` then
//! sends `sync` for every object of the file (the ossd fdatasyncs it), so fsync-acknowledged
//! data survives a crash of the ossd.
//!
//! Ordering: every object extent of a write is registered, in arrival order, when its bytes
//! are sent; RPCs of one that overlaps an earlier unfinished one wait for it (overlap is
//! checked in object offsets, where an extent is one range; a later write to the same bytes must
//! not overtake an earlier one on the way to the OSS), and a read first sends the gathered
//! bytes it covers, then waits for unfinished writes to the bytes it reads. Sequential I/O
//! never overlaps, so never waits.
//!
//! # Read-ahead (with direct I/O only)
//! With direct I/O the kernel neither caches nor reads ahead, so the client does, as Lustre's
//! llite does: each open file handle has a window (as each Lustre file descriptor has its
//! read-ahead state, so readers of one file do not disturb each other); a read that starts
//! within `read_ahead_bytes` of where the handle's reads have reached (the kernel splits an
//! application's read into requests that may be served in any order) extends its window of
//! prefetched read RPCs (split as any read) up to `read_ahead_bytes` past that point; the
//! read takes the bytes the window holds and reads the rest (what the window had no budget
//! for) with RPCs of its own, so no byte is fetched twice; a read farther away resets the
//! window. A prefetched piece leaves the window once reads took all its bytes, or when the
//! reads are a whole window past it: the bytes fetched beyond those the application reads
//! are at most the window's, at each reset and at the end. Every write or truncate of the file empties all its windows,
//! and nothing is prefetched over an unfinished write, so a read never
//! sees bytes older than a write this mount has acknowledged. Prefetched bytes count against a
//! mount-wide budget of `read_ahead_bytes` (Lustre's `max_read_ahead_mb`); without budget left,
//! nothing more is prefetched.
//!
//! Size: while a file is open here the client's size is authoritative (every write extends
//! it at once, so `stat` from any process on this mount sees it); it is written to the MDS at
//! `flush`, `fsync` and `release`, unless a write failed since the last of them: the MDS
//! size then stays where it was, so it never covers bytes no OST acknowledged.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use pfsqos_core::model::{LNet, NetKind, Nid};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tracing::warn;

use super::jobid::JobIds;
use super::oss_pool::{Failure, MdsPool, ObjOp, OstPool};
use super::stripe::check_layout;
use pfsqos_node::client::{cut_object_range, rpc_end_in_object, ObjectRange, Raid0};
use pfsqos_wire::client::Identity;
use pfsqos_wire::mds::{
    Attr, DirPage, FileLayout, Kind, MdsOp, MdsReplyBody, Owner, SetAttr, StatFs, StripeSpec,
    FILE_SIZE_BYTES_MAX,
};
use pfsqos_wire::protocol::Errno;

/// A libc errno.
pub type Res<T> = Result<T, i32>;

/// How long gathered bytes wait for the rest of their RPC before they are sent anyway (the
/// default of [`Tuning::gather_flush_after`]).
pub const GATHER_FLUSH_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Most open handles of one file with a read-ahead window of their own; reads through any
/// further handle go straight to the OSTs (a bound on state the kernel's requests create).
pub const READ_AHEAD_HANDLES_MAX: usize = 1024;

/// The xattr holding a file's layout or a directory's default layout (text, see
/// [`format_layout`]).
pub const XATTR_LAYOUT: &str = "user.pfsqos.layout";
/// Set on a directory to create a file in it with an explicit layout (`lfs setstripe` of a
/// path that does not exist): value `stripe_count=C stripe_size=S stripe_offset=I name=NAME`.
pub const XATTR_CREATE: &str = "user.pfsqos.create";
/// The read-only xattr saying which placement chose a file's layout: `iez`, the MDS's
/// placer (`roundrobin`, `lustre`), or `ALLOCATOR: REASON` when iez had a prediction for the
/// file and fell back.
pub const XATTR_PLACEMENT: &str = "user.pfsqos.placement";
/// Read-only on every path of a mount: the file system's OST count (decimal text), so that
/// `setstripe` can name the limit of a stripe count or index.
pub const XATTR_OST_COUNT: &str = "user.pfsqos.ost_count";

/// The libc errno of a protocol errno: Linux's number, except that the kernel-internal
/// `ENOTSUPP` reaches an application as `EOPNOTSUPP`.
pub fn errno(e: Errno) -> i32 {
    match e {
        Errno::ENOTSUPP => libc::EOPNOTSUPP,
        e => e.linux_number(),
    }
}

fn fail(f: Failure) -> i32 {
    errno(f.0)
}

/// File bytes `[file_offset, file_offset + len)` of a prefetched RPC, at `in_rpc` in its answer.
struct Part {
    file_offset: u64,
    len: u64,
    in_rpc: u64,
    fetch: Prefetch,
}

/// The bytes `[offset, offset + len)` from prefetched parts covering that range; bytes past a
/// short answer (a hole or the object's end) are zeros.
async fn assemble(parts: Vec<Part>, offset: u64, len: u64) -> Res<Bytes> {
    if let [p] = &parts[..] {
        // One part answers the whole read: hand out a slice of its RPC's buffer, no copy.
        let d = p.fetch.clone().await?;
        let at = (p.in_rpc + offset - p.file_offset) as usize;
        if d.len() >= at + len as usize {
            return Ok(d.slice(at..at + len as usize));
        }
    }
    let mut buf = vec![0u8; len as usize];
    for p in parts {
        let d = p.fetch.await?;
        // The overlap of the part's file range with [offset, offset + len).
        let from = p.file_offset.max(offset);
        let to = (p.file_offset + p.len).min(offset + len);
        if to > from {
            let src_from = ((p.in_rpc + from - p.file_offset) as usize).min(d.len());
            let src_to = ((p.in_rpc + to - p.file_offset) as usize).min(d.len());
            let at = (from - offset) as usize;
            buf[at..at + (src_to - src_from)].copy_from_slice(&d[src_from..src_to]);
        }
    }
    Ok(Bytes::from(buf))
}

/// Who asks (from the FUSE request).
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}

/// Client tuning.
#[derive(Clone, Debug)]
pub struct Tuning {
    pub brw_size_bytes: u64,
    pub dirty_bytes_max: u64,
    /// Client read-ahead window and mount-wide budget (0: none; the kernel's read-ahead
    /// serves mounts without direct I/O).
    pub read_ahead_bytes: u64,
    /// How long gathered bytes wait for the rest of their RPC.
    pub gather_flush_after: std::time::Duration,
    /// Keep the last [`RPC_TRACE_MAX`] bulk RPCs sent ([`Ops::rpc_trace`]).
    pub rpc_trace: bool,
    /// iez's first-run trace of files created here ([`crate::iez_trace`]).
    pub iez_trace: Option<Arc<crate::iez_trace::IezTrace>>,
}

/// Most RPCs the client's trace keeps (the newest; older ones are dropped).
pub const RPC_TRACE_MAX: usize = 65_536;

/// One bulk RPC the client sent, as Lustre's `osc.*.rpc_stats` would count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentRpc {
    pub write: bool,
    pub ost: u32,
    pub object: u64,
    pub object_offset_bytes: u64,
    pub len_bytes: u64,
}

/// The bounded record of sent RPCs.
pub type RpcTrace = Arc<Mutex<std::collections::VecDeque<SentRpc>>>;

/// A prefetched read RPC: shared, so the read that needs it waits for the one in flight.
type Prefetch =
    futures_util::future::Shared<futures_util::future::BoxFuture<'static, Result<Bytes, i32>>>;

/// The file's read-ahead window (see the module docs).
#[derive(Default)]
struct ReadAhead {
    /// Where the handle's reads have reached: the end of the farthest read of its stream.
    next: u64,
    /// Per object (stripe index): the object offset up to which reads have been issued
    /// (empty: nothing yet; an object missing reads as issued up to where the window starts).
    issued: Vec<u64>,
    /// Prefetched bytes by file offset: one entry per stripe unit an RPC covers (an RPC may
    /// carry several units of its object).
    pieces: BTreeMap<u64, Segment>,
}

/// File bytes `[start, end)` of a prefetched RPC, at `in_rpc` in its answer.
struct Segment {
    end: u64,
    in_rpc: u64,
    fetch: Prefetch,
    /// Bytes of it reads have taken: it leaves the window (and gives its budget back) once
    /// every byte was taken, whatever the order of the reads.
    consumed: u64,
    _budget: OwnedSemaphorePermit,
}

/// An unfinished write to one object: object bytes `[start, end)` of stripe `stripe`.
struct WriteRec {
    stripe: u32,
    start: u64,
    end: u64,
    pieces_left: usize,
    /// The write's share of the dirty budget, given back when its last RPC ends.
    _dirty: OwnedSemaphorePermit,
}

/// Written bytes contiguous in one object (object offsets), in buffers none of which crosses
/// an RPC boundary (so each RPC sent is a slice of one of them).
struct Extent {
    stripe: u32,
    start: u64,
    len: u64,
    chunks: Vec<Bytes>,
    id: Identity,
    dirty: OwnedSemaphorePermit,
}

impl Extent {
    fn end(&self) -> u64 {
        self.start + self.len
    }

    /// The bytes `[from, from + len)` of the extent: a slice of one buffer, or a copy where
    /// they span several.
    fn bytes(&self, from: u64, len: u64) -> Bytes {
        let mut at = self.start;
        let mut out: Option<Vec<u8>> = None;
        let end = from + len;
        for c in &self.chunks {
            let c_end = at + c.len() as u64;
            if c_end > from && at < end {
                let a = (from.max(at) - at) as usize;
                let b = (end.min(c_end) - at) as usize;
                if out.is_none() && at <= from && end <= c_end {
                    return c.slice(a..b);
                }
                out.get_or_insert_with(|| Vec::with_capacity(len as usize))
                    .extend_from_slice(&c[a..b]);
            }
            at = c_end;
        }
        Bytes::from(out.unwrap_or_default())
    }
}

/// Written bytes of one object short of their RPC boundary (module docs), in object offsets.
/// They lie within one RPC, in the buffer that becomes that RPC's bulk once the rest of it
/// arrives.
struct Gather {
    stripe: u32,
    /// Distinct per gather of the file, so a flush timer knows its gather is still there.
    generation: u64,
    start: u64,
    buf: BytesMut,
    id: Identity,
    dirty: OwnedSemaphorePermit,
}

impl Gather {
    fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    fn into_extent(self) -> Extent {
        Extent {
            stripe: self.stripe,
            start: self.start,
            len: self.buf.len() as u64,
            chunks: vec![self.buf.freeze()],
            id: self.id,
            dirty: self.dirty,
        }
    }

    /// Appends `parts` (in order), which continue the gathered bytes and whose dirty budget has been
    /// merged into `self.dirty`, copying each byte once into a buffer per RPC (`rpc_end`
    /// gives the boundary after an offset). Returns the bytes that reached their boundary, as
    /// whole-RPC buffers, with the budget the bytes kept back do not need; `self` keeps the
    /// rest, with exactly the budget its bytes need (a run of small writes, each rounded up
    /// to 1 KiB, would otherwise hold many times its size).
    fn fill(&mut self, parts: &[&[u8]], rpc_end: impl Fn(u64) -> u64) -> Option<Extent> {
        let front = self.start;
        let mut chunks = Vec::new();
        for &data in parts {
            let mut rest = data;
            while !rest.is_empty() {
                let boundary = rpc_end(self.start);
                let room = (boundary - self.end()) as usize;
                let n = rest.len().min(room);
                if self.buf.is_empty() {
                    // A write that fills at least half of its RPC gets a buffer for all of it, so
                    // the rest joins without a copy (an unaligned 1 MiB writer's 16-byte tail);
                    // smaller writes grow theirs as they come.
                    self.buf.reserve(if 2 * n >= room { room } else { n });
                }
                self.buf.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if self.end() == boundary {
                    chunks.push(self.buf.split().freeze());
                    self.start = boundary;
                }
            }
        }
        let have = self.dirty.num_permits();
        let keep = (dirty_kib(self.buf.len() as u64) as usize).min(have);
        let surplus = self
            .dirty
            .split(have - keep)
            .expect("a permit splits within its count");
        if chunks.is_empty() {
            return None;
        }
        Some(Extent {
            stripe: self.stripe,
            start: front,
            len: self.start - front,
            chunks,
            id: self.id,
            dirty: surplus,
        })
    }
}

/// An extent registered as a write, ready to be sent as RPCs `(object offset, length)`.
struct Registered {
    seq: u64,
    extent: Extent,
    rpcs: Vec<(u64, u64)>,
}

/// True if object range `r` and object bytes `[start, end)` of `stripe` share a byte.
fn meets(r: &ObjectRange, stripe: u32, start: u64, end: u64) -> bool {
    r.stripe_index == stripe && start < r.object_end_bytes && r.object_start_bytes < end
}

/// Dirty budget units of `len` bytes.
fn dirty_kib(len: u64) -> u32 {
    len.div_ceil(1024).min(u32::MAX as u64) as u32
}

struct FileInner {
    size: u64,
    size_dirty: bool,
    writes: BTreeMap<u64, WriteRec>,
    next_seq: u64,
    /// Per object (stripe index), the tail of a sequential write that stops short of an RPC
    /// boundary (module docs).
    gathers: BTreeMap<u32, Gather>,
    /// Counts gathers, so a flush timer knows whether the one it was set for is still there.
    gather_generation: u64,
    error: Option<i32>,
    opens: u32,
    /// Read-ahead windows by open file handle (as Lustre keeps one per file descriptor, so
    /// two sequential readers of one file do not reset each other's).
    read_ahead: HashMap<u64, ReadAhead>,
}

impl FileInner {
    /// True if an unfinished write or gathered bytes overlap the object ranges `ranges`.
    fn overlaps(&self, ranges: &[ObjectRange]) -> bool {
        ranges.iter().any(|r| {
            self.writes
                .values()
                .any(|w| meets(r, w.stripe, w.start, w.end))
                || self
                    .gathers
                    .get(&r.stripe_index)
                    .is_some_and(|g| meets(r, g.stripe, g.start, g.end()))
        })
    }

    /// Registers `extent` as the newest write: later overlapping writes wait for it, reads
    /// of its bytes wait until it is on the OSS.
    fn register(&mut self, extent: Extent, brw_size_bytes: u64) -> Registered {
        let mut rpcs = Vec::new();
        cut_object_range(extent.start, extent.end(), brw_size_bytes, |o, len| {
            rpcs.push((o, len))
        });
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut extent = extent;
        let all = extent.dirty.num_permits();
        let dirty = extent
            .dirty
            .split(all)
            .expect("a permit splits within its count");
        self.writes.insert(
            seq,
            WriteRec {
                stripe: extent.stripe,
                start: extent.start,
                end: extent.end(),
                pieces_left: rpcs.len(),
                _dirty: dirty,
            },
        );
        Registered { seq, extent, rpcs }
    }
}

/// An open file's client state.
struct FileState {
    ino: u64,
    layout: FileLayout,
    raid0: Raid0,
    inner: Mutex<FileInner>,
    changed: Notify,
    /// The size the MDS had when this state was made (`S_old`).
    size_loaded: u64,
    /// Whether the objects were cut to their shares of `size_loaded` before the first write
    /// past it (see [`Ops::clear_stale_tail`]); the result, once done.
    tail_cleared: tokio::sync::OnceCell<Result<(), i32>>,
}

impl FileState {
    fn new(ino: u64, layout: FileLayout, size: u64) -> FileState {
        FileState {
            ino,
            raid0: Raid0::new(layout.stripe_size_bytes, layout.stripes.len() as u32),
            layout,
            inner: Mutex::new(FileInner {
                size,
                size_dirty: false,
                writes: BTreeMap::new(),
                next_seq: 0,
                gathers: BTreeMap::new(),
                gather_generation: 0,
                error: None,
                opens: 0,
                read_ahead: HashMap::new(),
            }),
            changed: Notify::new(),
            size_loaded: size,
            tail_cleared: tokio::sync::OnceCell::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FileInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The object ranges of the file range `[a, b)`.
    fn object_ranges(&self, a: u64, b: u64) -> Vec<ObjectRange> {
        let mut v = Vec::new();
        self.raid0
            .object_ranges(a, b.saturating_sub(a), |r| v.push(r));
        v
    }

    /// Waits until no unfinished write (registered before `before`, if given) overlaps the
    /// object ranges `range` (all writes: `None`).
    async fn wait_writes(&self, range: Option<&[ObjectRange]>, before: Option<u64>) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.lock();
                let mut writes = st.writes.range(..before.unwrap_or(u64::MAX));
                let busy = writes.any(|(_, w)| match range {
                    Some(rs) => rs.iter().any(|r| meets(r, w.stripe, w.start, w.end)),
                    None => true,
                });
                if !busy {
                    return;
                }
            }
            notified.await;
        }
    }

    fn end_piece(&self, seq: u64, result: Result<(), i32>) {
        let mut st = self.lock();
        if let Err(e) = result {
            st.error.get_or_insert(e);
        }
        let done = match st.writes.get_mut(&seq) {
            Some(w) => {
                // Each piece of a write ends once: a second end would release the write's
                // waiters while a piece is still on its way.
                assert!(w.pieces_left > 0, "a write piece ended twice");
                w.pieces_left -= 1;
                w.pieces_left == 0
            }
            None => false,
        };
        if done {
            st.writes.remove(&seq);
            drop(st);
            self.changed.notify_waiters();
        }
    }
}

/// The mounted file system's operations.
pub struct Ops {
    mds: MdsPool,
    osts: Vec<Arc<OstPool>>,
    jobids: JobIds,
    nid: Nid,
    tuning: Tuning,
    dirty_kib: Arc<Semaphore>,
    dirty_kib_total: u32,
    read_ahead_kib: Arc<Semaphore>,
    files: Mutex<HashMap<u64, Arc<FileState>>>,
    trace: Option<RpcTrace>,
}

/// A NID for this client: the IPv4 address it reaches `peer` from, on `tcp`.
pub fn local_nid(peer: std::net::SocketAddr) -> Nid {
    let tcp = LNet {
        kind: NetKind::Tcp,
        num: 0,
    };
    let ip = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect(peer).and_then(|_| s.local_addr()))
        .ok()
        .and_then(|a| match a.ip() {
            std::net::IpAddr::V4(v4) => Some(v4),
            std::net::IpAddr::V6(_) => None,
        })
        .unwrap_or(std::net::Ipv4Addr::LOCALHOST);
    let [a, b, c, d] = ip.octets();
    Nid::ipv4(a, b, c, d, tcp)
}

impl Ops {
    pub fn new(
        mds: MdsPool,
        osts: Vec<Arc<OstPool>>,
        jobids: JobIds,
        nid: Nid,
        tuning: Tuning,
    ) -> Ops {
        let dirty_kib_total = (tuning.dirty_bytes_max / 1024).clamp(1, u32::MAX as u64) as u32;
        let dirty_kib = Arc::new(Semaphore::new(dirty_kib_total as usize));
        Ops {
            mds,
            osts,
            jobids,
            nid,
            read_ahead_kib: Arc::new(Semaphore::new((tuning.read_ahead_bytes / 1024) as usize)),
            trace: tuning.rpc_trace.then(RpcTrace::default),
            tuning,
            dirty_kib,
            dirty_kib_total,
            files: Mutex::new(HashMap::new()),
        }
    }

    pub fn ost_count(&self) -> u32 {
        self.osts.len() as u32
    }

    /// iez's file trace, if the mount keeps one.
    pub fn iez_trace(&self) -> Option<Arc<crate::iez_trace::IezTrace>> {
        self.tuning.iez_trace.clone()
    }

    /// The trace of sent RPCs, if the mount keeps one.
    pub fn rpc_trace(&self) -> Option<RpcTrace> {
        self.trace.clone()
    }

    /// Records an RPC about to be sent (with the trace on).
    fn note(&self, op: &ObjOp, ost: u32) {
        let Some(trace) = &self.trace else { return };
        let rpc = match op {
            ObjOp::Write {
                object,
                offset,
                data,
            } => SentRpc {
                write: true,
                ost,
                object: *object,
                object_offset_bytes: *offset,
                len_bytes: data.len() as u64,
            },
            ObjOp::Read {
                object,
                offset,
                len,
            } => SentRpc {
                write: false,
                ost,
                object: *object,
                object_offset_bytes: *offset,
                len_bytes: *len,
            },
            _ => return,
        };
        let mut t = trace.lock().unwrap_or_else(|p| p.into_inner());
        if t.len() == RPC_TRACE_MAX {
            t.pop_front();
        }
        t.push_back(rpc);
    }

    fn identity(&self, c: Caller) -> Identity {
        let tag = self.jobids.of(c.pid, c.uid, c.gid);
        Identity {
            job: tag.job,
            uid: c.uid,
            gid: c.gid,
            nid: self.nid,
            job_nodes: tag.nodes,
        }
    }

    fn open_state(&self, ino: u64) -> Option<Arc<FileState>> {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&ino)
            .cloned()
    }

    async fn mds(&self, op: MdsOp) -> Res<MdsReplyBody> {
        self.mds.call(op).await.map_err(fail)
    }

    async fn attr_op(&self, op: MdsOp) -> Res<Attr> {
        match self.mds(op).await? {
            MdsReplyBody::Attr(a) => Ok(self.patch(a)),
            _ => Err(libc::EPROTO),
        }
    }

    /// The client's size wins for files open here.
    fn patch(&self, mut a: Attr) -> Attr {
        if let Some(f) = self.open_state(a.ino) {
            a.size_bytes = f.lock().size;
        }
        a
    }

    async fn layout(&self, ino: u64) -> Res<FileLayout> {
        match self.mds(MdsOp::GetLayout { ino }).await? {
            MdsReplyBody::Layout(l) => {
                check_layout(&l, self.ost_count()).map_err(|e| {
                    warn!(ino, "unusable layout: {e}");
                    libc::EIO
                })?;
                Ok(l)
            }
            _ => Err(libc::EPROTO),
        }
    }

    pub async fn lookup(&self, parent: u64, name: &[u8]) -> Res<Attr> {
        self.attr_op(MdsOp::Lookup {
            parent,
            name: name.to_vec(),
        })
        .await
    }

    pub async fn getattr(&self, ino: u64) -> Res<Attr> {
        self.attr_op(MdsOp::GetAttr { ino }).await
    }

    /// The open state of `ino`, loading it from the MDS if this is the first open.
    async fn state(&self, ino: u64) -> Res<Arc<FileState>> {
        if let Some(f) = self.open_state(ino) {
            return Ok(f);
        }
        let a = self.getattr(ino).await?;
        if a.kind == Kind::Dir {
            return Err(libc::EISDIR);
        }
        let layout = self.layout(ino).await?;
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        Ok(files
            .entry(ino)
            .or_insert_with(|| Arc::new(FileState::new(ino, layout, a.size_bytes)))
            .clone())
    }

    pub async fn open(&self, ino: u64) -> Res<()> {
        let f = self.state(ino).await?;
        f.lock().opens += 1;
        Ok(())
    }

    /// Creates and opens a file with the directory's (or the file system's) default layout,
    /// or `stripe` if given.
    pub async fn create(
        &self,
        c: Caller,
        parent: u64,
        name: &[u8],
        mode: u32,
        stripe: Option<StripeSpec>,
        open: bool,
    ) -> Res<Attr> {
        let op = MdsOp::Create {
            parent,
            name: name.to_vec(),
            owner: Owner {
                mode: mode & 0o7777,
                uid: c.uid,
                gid: c.gid,
            },
            stripe,
        };
        let (attr, layout) = match self.mds(op).await? {
            MdsReplyBody::Created(a, l) => (a, l),
            _ => return Err(libc::EPROTO),
        };
        check_layout(&layout, self.ost_count()).map_err(|_| libc::EIO)?;
        if let Some(t) = &self.tuning.iez_trace {
            // The trace keys files by path; the file exists whatever becomes of its row.
            match self.mds(MdsOp::GetPath { ino: attr.ino }).await {
                Ok(MdsReplyBody::Path(p)) => t.created(
                    attr.ino,
                    &p,
                    layout.stripes.len() as u32,
                    crate::iez_trace::rank_of(c.pid),
                    self.jobids.of(c.pid, c.uid, c.gid).job,
                ),
                other => warn!(
                    ino = attr.ino,
                    "iez trace: no path for the new file: {other:?}"
                ),
            }
        }
        if open {
            let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
            let f = files.entry(attr.ino).or_insert_with(|| {
                // Its objects were just allocated: nothing stale lies in them.
                let f = FileState::new(attr.ino, layout, attr.size_bytes);
                f.tail_cleared.set(Ok(())).expect("a new cell is empty");
                Arc::new(f)
            });
            f.lock().opens += 1;
        }
        Ok(attr)
    }

    pub async fn mkdir(&self, c: Caller, parent: u64, name: &[u8], mode: u32) -> Res<Attr> {
        self.attr_op(MdsOp::Mkdir {
            parent,
            name: name.to_vec(),
            owner: Owner {
                mode: mode & 0o7777,
                uid: c.uid,
                gid: c.gid,
            },
        })
        .await
    }

    /// Removes a file; the MDS destroys its objects (it is the one that knows no other name
    /// refers to them), so nothing here touches the OSSs.
    pub async fn unlink(&self, parent: u64, name: &[u8]) -> Res<()> {
        match self
            .mds(MdsOp::Unlink {
                parent,
                name: name.to_vec(),
            })
            .await?
        {
            MdsReplyBody::Removed(_) => Ok(()),
            _ => Err(libc::EPROTO),
        }
    }

    pub async fn rmdir(&self, parent: u64, name: &[u8]) -> Res<()> {
        match self
            .mds(MdsOp::Rmdir {
                parent,
                name: name.to_vec(),
            })
            .await?
        {
            MdsReplyBody::Done => Ok(()),
            _ => Err(libc::EPROTO),
        }
    }

    /// rename(2); the MDS destroys the objects of a file it replaces.
    pub async fn rename(
        &self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
    ) -> Res<()> {
        match self
            .mds(MdsOp::Rename {
                parent,
                name: name.to_vec(),
                new_parent,
                new_name: new_name.to_vec(),
            })
            .await?
        {
            MdsReplyBody::Removed(_) => Ok(()),
            _ => Err(libc::EPROTO),
        }
    }

    pub async fn readdir(&self, dir: u64, after: u64, max: u32) -> Res<DirPage> {
        match self.mds(MdsOp::ReadDir { dir, after, max }).await? {
            MdsReplyBody::Dir(p) => Ok(p),
            _ => Err(libc::EPROTO),
        }
    }

    pub async fn statfs(&self) -> Res<StatFs> {
        match self.mds(MdsOp::StatFs).await? {
            MdsReplyBody::StatFs(s) => Ok(s),
            _ => Err(libc::EPROTO),
        }
    }

    /// Changes attributes; a size change truncates (or extends) every object to its share
    /// of the new size, then records the size at the MDS.
    pub async fn setattr(&self, c: Caller, ino: u64, set: SetAttr) -> Res<Attr> {
        if let Some(size) = set.size_bytes {
            if size > FILE_SIZE_BYTES_MAX {
                return Err(libc::EFBIG);
            }
            let open = self.open_state(ino);
            let f = match &open {
                Some(f) => f.clone(),
                None => self.state_unregistered(ino).await?,
            };
            self.flush_gather(&f, None, None).await;
            f.wait_writes(None, None).await;
            let id = self.identity(c);
            // Growing from S_old: first cut each object to its share of S_old, so bytes a
            // crashed client sent past the size the MDS recorded read as zeros, not as the
            // old content.
            let old = f.lock().size;
            if size > old {
                self.punch_objects(&f, &id, old).await?;
            }
            self.punch_objects(&f, &id, size).await?;
            let a = self.attr_op(MdsOp::SetAttr { ino, set }).await;
            if let Some(f) = open {
                let mut st = f.lock();
                st.size = size;
                st.size_dirty = false;
                st.read_ahead.clear();
            }
            return a.map(|mut a| {
                a.size_bytes = size;
                a
            });
        }
        self.attr_op(MdsOp::SetAttr { ino, set }).await
    }

    /// Truncates (or extends) every object of `f` to its share of the file size `size`.
    async fn punch_objects(&self, f: &FileState, id: &Identity, size: u64) -> Res<()> {
        let mut tasks = Vec::new();
        for (i, s) in f.layout.stripes.iter().enumerate() {
            let pool = self.osts[s.ost as usize].clone();
            let op = ObjOp::Punch {
                object: s.object,
                size: f.raid0.object_size(i as u32, size),
            };
            let id = *id;
            tasks.push(tokio::spawn(async move {
                let slot = pool.admit().await;
                pool.run(&slot, &id, &op).await
            }));
        }
        for t in tasks {
            t.await.map_err(|_| libc::EIO)?.map_err(fail)?;
        }
        Ok(())
    }

    /// Before the first write past the size the MDS had when the file's state was made
    /// (`S_old`), cuts every object to its share of `S_old`, once: a client that crashed
    /// before recording its size at the MDS may have left bytes beyond those shares, and
    /// POSIX requires the range a write or truncate extends over to read as zeros (issue
    /// #19). Lustre derives the size from the objects instead (glimpse); pfsqos keeps the
    /// MDS size authoritative and clears on extend, which costs one punch per object on the
    /// first extension of each open file state.
    async fn clear_stale_tail(&self, f: &FileState, id: &Identity) -> Res<()> {
        *f.tail_cleared
            .get_or_init(|| self.punch_objects(f, id, f.size_loaded))
            .await
    }

    /// File state for a file not open here (truncate by path).
    async fn state_unregistered(&self, ino: u64) -> Res<Arc<FileState>> {
        let a = self.getattr(ino).await?;
        if a.kind == Kind::Dir {
            return Err(libc::EISDIR);
        }
        Ok(Arc::new(FileState::new(
            ino,
            self.layout(ino).await?,
            a.size_bytes,
        )))
    }

    /// Takes a write (see the module docs): its bytes up to the last RPC boundary they reach
    /// are sent (the call returns once every RPC holds a window slot), the rest is gathered.
    pub async fn write(
        self: &Arc<Self>,
        c: Caller,
        ino: u64,
        offset: u64,
        data: &[u8],
    ) -> Res<u32> {
        let len = data.len() as u64;
        let end = offset.checked_add(len).ok_or(libc::EFBIG)?;
        if end > FILE_SIZE_BYTES_MAX {
            return Err(libc::EFBIG);
        }
        if len == 0 {
            return Ok(0);
        }
        let f = self.state(ino).await?;
        let id = self.identity(c);
        if let Some(t) = &self.tuning.iez_trace {
            t.wrote(ino, len);
        }
        if end > f.size_loaded {
            self.clear_stale_tail(&f, &id).await?;
        }
        let ranges = f.object_ranges(offset, end);
        // Each object's bytes take their own share of the budget (each rounded up to 1 KiB).
        let kib = ranges
            .iter()
            .map(|r| dirty_kib(r.object_end_bytes - r.object_start_bytes))
            .fold(0u32, u32::saturating_add)
            .min(self.dirty_kib_total);
        let mut dirty = match self.dirty_kib.clone().try_acquire_many_owned(kib) {
            Ok(d) => d,
            Err(_) => {
                // Our own gathered bytes may hold the budget we wait for.
                self.flush_gather(&f, None, None).await;
                self.dirty_kib
                    .clone()
                    .acquire_many_owned(kib)
                    .await
                    .expect("the dirty budget is never closed")
            }
        };
        let brw = self.tuning.brw_size_bytes;
        let (ready, arm) = {
            let mut st = f.lock();
            st.read_ahead.clear();
            if end > st.size {
                st.size = end;
                st.size_dirty = true;
            }
            let mut ready = Vec::new();
            let mut arm = Vec::new();
            for (i, r) in ranges.iter().enumerate() {
                let have = dirty.num_permits();
                let share = if i + 1 == ranges.len() {
                    have
                } else {
                    (dirty_kib(r.object_end_bytes - r.object_start_bytes) as usize).min(have)
                };
                let part = dirty
                    .split(share)
                    .expect("a permit splits within its count");
                let mut gather = match st.gathers.remove(&r.stripe_index) {
                    Some(mut g) if g.end() == r.object_start_bytes && g.id == id => {
                        g.dirty.merge(part);
                        g
                    }
                    other => {
                        ready.extend(other.map(Gather::into_extent));
                        st.gather_generation += 1;
                        Gather {
                            stripe: r.stripe_index,
                            generation: st.gather_generation,
                            start: r.object_start_bytes,
                            buf: BytesMut::new(),
                            id,
                            dirty: part,
                        }
                    }
                };
                // The write's bytes of this object in object order: one slice per stripe unit.
                let mut parts: Vec<&[u8]> = Vec::new();
                f.raid0.file_segments(
                    r.stripe_index,
                    r.object_start_bytes,
                    r.object_end_bytes - r.object_start_bytes,
                    |file_offset, _, seg_len| {
                        let at = (file_offset - offset) as usize;
                        parts.push(&data[at..at + seg_len as usize]);
                    },
                );
                ready.extend(gather.fill(&parts, |at| rpc_end_in_object(at, brw)));
                if !gather.buf.is_empty() {
                    arm.push(gather.generation);
                    st.gathers.insert(r.stripe_index, gather);
                }
            }
            let ready: Vec<Registered> = ready.into_iter().map(|x| st.register(x, brw)).collect();
            (ready, arm)
        };
        for generation in arm {
            let (ops, f, after) = (self.clone(), f.clone(), self.tuning.gather_flush_after);
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                ops.flush_gather(&f, None, Some(generation)).await;
            });
        }
        for r in ready {
            self.send(&f, r).await;
        }
        Ok(len as u32)
    }

    /// Sends a registered write once no earlier write overlaps it; returns once every RPC
    /// holds a window slot. Errors are the file's, reported at flush/fsync/close.
    async fn send(&self, f: &Arc<FileState>, r: Registered) {
        let x = &r.extent;
        let range = ObjectRange {
            stripe_index: x.stripe,
            object_start_bytes: x.start,
            object_end_bytes: x.end(),
        };
        f.wait_writes(Some(&[range]), Some(r.seq)).await;
        let stripe = f.layout.stripes[x.stripe as usize];
        for &(object_offset, len) in &r.rpcs {
            let pool = self.osts[stripe.ost as usize].clone();
            let slot = pool.admit().await;
            let op = ObjOp::Write {
                object: stripe.object,
                offset: object_offset,
                data: x.bytes(object_offset, len),
            };
            self.note(&op, stripe.ost);
            let (f, seq, id) = (f.clone(), r.seq, x.id);
            tokio::spawn(async move {
                let r = pool.run(&slot, &id, &op).await;
                drop(slot);
                f.end_piece(seq, r.map(|_| ()).map_err(fail));
            });
        }
    }

    /// Sends the file's gathered bytes that overlap the file range `[a, b)` (all: `None`) or,
    /// given a generation, the gather of that generation if it is still there.
    async fn flush_gather(
        &self,
        f: &Arc<FileState>,
        range: Option<(u64, u64)>,
        generation: Option<u64>,
    ) {
        let ranges = range.map(|(a, b)| f.object_ranges(a, b));
        let registered: Vec<Registered> = {
            let mut st = f.lock();
            let hit: Vec<u32> = st
                .gathers
                .values()
                .filter(|g| generation.is_none_or(|x| x == g.generation))
                .filter(|g| match &ranges {
                    Some(rs) => rs.iter().any(|r| meets(r, g.stripe, g.start, g.end())),
                    None => true,
                })
                .map(|g| g.stripe)
                .collect();
            hit.into_iter()
                .map(|k| {
                    let g = st.gathers.remove(&k).expect("listed above");
                    st.register(g.into_extent(), self.tuning.brw_size_bytes)
                })
                .collect()
        };
        for r in registered {
            self.send(f, r).await;
        }
    }

    /// Reads up to `size` bytes at `offset`, short only at the end of the file; holes and
    /// short objects read as zeros.
    /// Reads through open file handle `fh` (its read-ahead window).
    pub async fn read(&self, c: Caller, ino: u64, fh: u64, offset: u64, size: u32) -> Res<Bytes> {
        let f = self.state(ino).await?;
        let file_size = f.lock().size;
        if offset >= file_size || size == 0 {
            return Ok(Bytes::new());
        }
        let len = (size as u64).min(file_size - offset);
        self.flush_gather(&f, Some((offset, offset + len)), None)
            .await;
        let ranges = f.object_ranges(offset, offset + len);
        f.wait_writes(Some(&ranges), None).await;
        let id = self.identity(c);
        if self.tuning.read_ahead_bytes > 0 {
            if let Some(parts) = self.read_ahead(&f, fh, &id, offset, len) {
                return assemble(parts, offset, len).await;
            }
        }
        let mut tasks = Vec::new();
        for p in f.raid0.rpc_vec(offset, len, self.tuning.brw_size_bytes) {
            let stripe = f.layout.stripes[p.stripe_index as usize];
            let pool = self.osts[stripe.ost as usize].clone();
            let op = ObjOp::Read {
                object: stripe.object,
                offset: p.object_offset_bytes,
                len: p.size_bytes,
            };
            self.note(&op, stripe.ost);
            tasks.push((
                p,
                tokio::spawn(async move {
                    let slot = pool.admit().await;
                    pool.run(&slot, &id, &op).await
                }),
            ));
        }
        if tasks.len() == 1 {
            // One RPC holds every byte of the read, in file order: its buffer is the answer,
            // unless the object ended early (a hole or a short object reads as zeros).
            let (_, t) = tasks.pop().expect("one task");
            let d = t.await.map_err(|_| libc::EIO)?.map_err(fail)?;
            if d.len() as u64 == len {
                return Ok(d);
            }
            let mut buf = vec![0u8; len as usize];
            let n = d.len().min(buf.len());
            buf[..n].copy_from_slice(&d[..n]);
            return Ok(Bytes::from(buf));
        }
        let mut buf = vec![0u8; len as usize];
        let mut first_err = None;
        for (p, t) in tasks {
            match t.await {
                Ok(Ok(d)) => {
                    // The RPC's bytes go back to the file ranges of its stripe units; bytes
                    // past a short answer stay zeros.
                    f.raid0.file_segments(
                        p.stripe_index,
                        p.object_offset_bytes,
                        p.size_bytes,
                        |file_offset, in_rpc, seg_len| {
                            let at = (file_offset - offset) as usize;
                            let from = (in_rpc as usize).min(d.len());
                            let to = ((in_rpc + seg_len) as usize).min(d.len());
                            buf[at..at + (to - from)].copy_from_slice(&d[from..to]);
                        },
                    );
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(fail(e));
                }
                Err(_) => {
                    first_err.get_or_insert(libc::EIO);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(Bytes::from(buf)),
        }
    }

    /// Moves the read-ahead window of file handle `fh` along a sequential read of
    /// `[offset, offset + len)` and returns the prefetched RPCs that cover it, or `None` (the
    /// read is not sequential, or the window does not cover it): then the caller reads
    /// directly.
    fn read_ahead(
        &self,
        f: &Arc<FileState>,
        fh: u64,
        id: &Identity,
        offset: u64,
        len: u64,
    ) -> Option<Vec<Part>> {
        let mut st = f.lock();
        if !st.read_ahead.contains_key(&fh) && st.read_ahead.len() >= READ_AHEAD_HANDLES_MAX {
            return None;
        }
        let mut ra = st.read_ahead.remove(&fh).unwrap_or_default();
        let parts = self.move_window(f, &st, &mut ra, id, offset, len);
        st.read_ahead.insert(fh, ra);
        parts
    }

    fn move_window(
        &self,
        f: &Arc<FileState>,
        st: &FileInner,
        ra: &mut ReadAhead,
        id: &Identity,
        offset: u64,
        len: u64,
    ) -> Option<Vec<Part>> {
        let end = offset + len;
        let file_size = st.size;
        let raid0 = f.raid0;
        let brw = self.tuning.brw_size_bytes;
        let window = self.tuning.read_ahead_bytes;
        if ra.issued.is_empty() {
            // A handle's first read: its window starts where that read starts (bytes before
            // it are not the application's to read next).
            ra.next = offset;
            ra.issued = (0..raid0.stripe_count)
                .map(|k| raid0.object_size(k, offset))
                .collect();
        }
        // The kernel splits an application's read into several requests and they may be
        // served in any order (each on a task of its own), so a read within one window of
        // where the stream is belongs to it: resetting there would throw away what was read
        // ahead and read it again.
        if offset.abs_diff(ra.next) > window {
            // A new window starts where this read ends: in each object, at its first byte
            // at or after file offset `end`.
            ra.next = end;
            ra.pieces.clear();
            ra.issued = (0..raid0.stripe_count)
                .map(|k| raid0.object_size(k, end))
                .collect();
            return None;
        }
        ra.next = ra.next.max(end);
        let to = (ra.next + window).min(file_size);
        if to > offset && !st.overlaps(&f.object_ranges(offset, to)) {
            // Each object is read ahead in whole RPCs (its brw_size-aligned chunks, as the
            // writes are formed) up to the chunk that holds the window's end in it, never
            // past the object's end; RPCs go out in file order, each with its budget. An
            // object whose next RPC finds no budget is not read ahead further this time, so
            // what is issued of each object stays contiguous.
            let mut rpcs = Vec::new();
            for (k, issued) in ra.issued.iter().enumerate() {
                let k = k as u32;
                let object_end = raid0.object_size(k, file_size);
                let want = raid0.object_size(k, to).div_ceil(brw).saturating_mul(brw);
                cut_object_range(*issued, want.min(object_end), brw, |o, n| {
                    rpcs.push((raid0.file_offset(k, o), k, o, n))
                });
            }
            rpcs.sort_unstable();
            let mut stalled = vec![false; raid0.stripe_count as usize];
            for (_, k, object_offset, n) in rpcs {
                if stalled[k as usize] {
                    continue;
                }
                // The budget per stripe unit the RPC carries, so each part is given back when
                // the reads have consumed it.
                let mut segments = Vec::new();
                raid0.file_segments(k, object_offset, n, |file_offset, in_rpc, seg_len| {
                    segments.push((file_offset, in_rpc, seg_len))
                });
                let kibs: Vec<u32> = segments.iter().map(|s| s.2.div_ceil(1024) as u32).collect();
                let Ok(mut budget) = self
                    .read_ahead_kib
                    .clone()
                    .try_acquire_many_owned(kibs.iter().sum())
                else {
                    stalled[k as usize] = true;
                    continue;
                };
                let fetch = self.fetch(f, k, object_offset, n, id);
                for ((file_offset, in_rpc, seg_len), kib) in segments.into_iter().zip(kibs) {
                    let part = budget
                        .split(kib as usize)
                        .expect("the RPC's budget is the sum of its parts");
                    ra.pieces.insert(
                        file_offset,
                        Segment {
                            end: file_offset + seg_len,
                            in_rpc,
                            fetch: fetch.clone(),
                            consumed: 0,
                            _budget: part,
                        },
                    );
                }
                ra.issued[k as usize] = object_offset + n;
            }
        }
        // The read is answered from the window where it covers it, and by RPCs of its own for
        // the rest (bytes the window could not take for want of budget): no byte is fetched
        // twice.
        let mut parts = Vec::new();
        let mut gaps = Vec::new();
        let mut covered = offset;
        for (&start, seg) in ra.pieces.range_mut(..end) {
            if seg.end <= offset {
                continue;
            }
            if start > covered {
                gaps.push((covered, start));
            }
            parts.push(Part {
                file_offset: start,
                len: seg.end - start,
                in_rpc: seg.in_rpc,
                fetch: seg.fetch.clone(),
            });
            seg.consumed += seg.end.min(end) - start.max(offset);
            covered = covered.max(seg.end);
        }
        if covered < end {
            gaps.push((covered, end));
        }
        // What the reads took, and what lies a whole window behind the stream (skipped by the
        // application), gives its budget back.
        let behind = ra.next.saturating_sub(window);
        ra.pieces
            .retain(|&start, seg| seg.consumed < seg.end - start && seg.end > behind);
        for (from, to) in gaps {
            for p in raid0.rpc_vec(from, to - from, brw) {
                let fetch = self.fetch(f, p.stripe_index, p.object_offset_bytes, p.size_bytes, id);
                raid0.file_segments(
                    p.stripe_index,
                    p.object_offset_bytes,
                    p.size_bytes,
                    |file_offset, in_rpc, seg_len| {
                        parts.push(Part {
                            file_offset,
                            len: seg_len,
                            in_rpc,
                            fetch: fetch.clone(),
                        })
                    },
                );
            }
        }
        // Bytes below the read's end are read (or were skipped): the window never fetches
        // them again.
        for (k, issued) in ra.issued.iter_mut().enumerate() {
            *issued = (*issued).max(raid0.object_size(k as u32, end));
        }
        parts.sort_unstable_by_key(|p| p.file_offset);
        Some(parts)
    }

    /// Starts the read RPC of `n` bytes at `object_offset` of stripe `k`'s object, shared
    /// by whoever needs its bytes.
    fn fetch(&self, f: &FileState, k: u32, object_offset: u64, n: u64, id: &Identity) -> Prefetch {
        let stripe = f.layout.stripes[k as usize];
        let pool = self.osts[stripe.ost as usize].clone();
        let op = ObjOp::Read {
            object: stripe.object,
            offset: object_offset,
            len: n,
        };
        self.note(&op, stripe.ost);
        let id = *id;
        let task = tokio::spawn(async move {
            let slot = pool.admit().await;
            pool.run(&slot, &id, &op).await.map_err(fail)
        });
        futures_util::FutureExt::shared(Box::pin(
            async move { task.await.unwrap_or(Err(libc::EIO)) },
        ) as futures_util::future::BoxFuture<'static, _>)
    }

    /// Waits for the file's writes, records its size at the MDS, and returns (and clears)
    /// the first write error since the last report.
    async fn settle(&self, f: &Arc<FileState>) -> Res<()> {
        self.flush_gather(f, None, None).await;
        f.wait_writes(None, None).await;
        let (push, err) = {
            let mut st = f.lock();
            let err = st.error.take();
            // After a failed write the size may cover bytes no OST acknowledged, and the MDS
            // must not record them (a write that failed in an OSS outage left its
            // size at the MDS): the size is then not pushed; the caller gets the error.
            let push = (st.size_dirty && err.is_none()).then_some(st.size);
            st.size_dirty = false;
            (push, err)
        };
        if let Some(size) = push {
            let set = SetAttr {
                size_bytes: Some(size),
                ..SetAttr::default()
            };
            if let Err(e) = self.mds(MdsOp::SetAttr { ino: f.ino, set }).await {
                f.lock().size_dirty = true;
                return Err(err.unwrap_or(e));
            }
        }
        err.map_or(Ok(()), Err)
    }

    pub async fn flush(&self, ino: u64) -> Res<()> {
        match self.open_state(ino) {
            Some(f) => self.settle(&f).await,
            None => Ok(()),
        }
    }

    /// flush, then `sync` of every object: what was written before is on stable storage.
    pub async fn fsync(&self, c: Caller, ino: u64) -> Res<()> {
        let Some(f) = self.open_state(ino) else {
            return Ok(());
        };
        let settled = self.settle(&f).await;
        let id = self.identity(c);
        let mut tasks = Vec::new();
        for s in &f.layout.stripes {
            let pool = self.osts[s.ost as usize].clone();
            let op = ObjOp::Sync { object: s.object };
            tasks.push(tokio::spawn(async move {
                let slot = pool.admit().await;
                pool.run(&slot, &id, &op).await
            }));
        }
        let mut synced = Ok(());
        for t in tasks {
            let r = t.await.map_err(|_| libc::EIO).and_then(|r| r.map_err(fail));
            if synced.is_ok() {
                synced = r.map(|_| ());
            }
        }
        settled.and(synced)
    }

    /// A close of file handle `fh`: flush, forget its read-ahead window, and after the last
    /// close here the file's client state.
    pub async fn release(&self, ino: u64, fh: u64) -> Res<()> {
        let Some(f) = self.open_state(ino) else {
            return Ok(());
        };
        let r = self.settle(&f).await;
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let mut st = f.lock();
        st.read_ahead.remove(&fh);
        st.opens = st.opens.saturating_sub(1);
        if st.opens == 0 && st.writes.is_empty() && st.gathers.is_empty() && !st.size_dirty {
            files.remove(&ino);
        }
        r
    }

    // ----- layouts as xattrs -----

    /// `user.pfsqos.layout` of a file (its layout) or directory (its default, else the file
    /// system's).
    pub async fn get_layout_xattr(&self, ino: u64) -> Res<Vec<u8>> {
        let a = self.getattr(ino).await?;
        if a.kind == Kind::Dir {
            let spec = match self.mds(MdsOp::GetDirStripe { dir: ino }).await? {
                MdsReplyBody::DirStripe(Some(s)) => s,
                MdsReplyBody::DirStripe(None) => self.statfs().await?.default_stripe,
                _ => return Err(libc::EPROTO),
            };
            return Ok(format_spec(&spec).into_bytes());
        }
        let l = match self.open_state(ino) {
            Some(f) => f.layout.clone(),
            None => self.layout(ino).await?,
        };
        Ok(format_layout(&l).into_bytes())
    }

    /// `user.pfsqos.placement` of a file ([`XATTR_PLACEMENT`]).
    pub async fn get_placement_xattr(&self, ino: u64) -> Res<Vec<u8>> {
        match self.mds(MdsOp::GetPlacement { ino }).await? {
            MdsReplyBody::Placement(p) => Ok(match p.reason {
                Some(r) => format!("{}: {r}", p.policy),
                None => p.policy,
            }
            .into_bytes()),
            _ => Err(libc::EPROTO),
        }
    }

    /// Setting `user.pfsqos.layout` on a directory sets its default (`default` clears it);
    /// on a file it fails with `EEXIST` (a file's layout is fixed at creation, as in Lustre).
    /// `user.pfsqos.create` on a directory creates a file with the given layout.
    pub async fn set_xattr(&self, c: Caller, ino: u64, name: &str, value: &[u8]) -> Res<()> {
        let text = std::str::from_utf8(value).map_err(|_| libc::EINVAL)?;
        let a = self.getattr(ino).await?;
        match name {
            XATTR_LAYOUT => {
                if a.kind != Kind::Dir {
                    return Err(libc::EEXIST);
                }
                let spec = if text.trim() == "default" {
                    None
                } else {
                    let (s, name) = parse_spec(text).map_err(|_| libc::EINVAL)?;
                    if name.is_some() {
                        return Err(libc::EINVAL);
                    }
                    Some(self.resolve_spec(ino, s).await?)
                };
                match self.mds(MdsOp::SetDirStripe { dir: ino, spec }).await? {
                    MdsReplyBody::Done => Ok(()),
                    _ => Err(libc::EPROTO),
                }
            }
            XATTR_CREATE => {
                if a.kind != Kind::Dir {
                    return Err(libc::ENOTDIR);
                }
                let (s, file) = parse_spec(text).map_err(|_| libc::EINVAL)?;
                let file = file.ok_or(libc::EINVAL)?;
                let s = self.resolve_spec(ino, s).await?;
                self.create(c, ino, file.as_bytes(), 0o644, Some(s), false)
                    .await
                    .map(|_| ())
            }
            _ => Err(libc::ENOTSUP),
        }
    }

    /// Fills unset fields (count or size 0) from the directory's default, else the file
    /// system's.
    async fn resolve_spec(&self, dir: u64, mut s: StripeSpec) -> Res<StripeSpec> {
        if s.stripe_count != 0 && s.stripe_size_bytes != 0 {
            return Ok(s);
        }
        let base = match self.mds(MdsOp::GetDirStripe { dir }).await? {
            MdsReplyBody::DirStripe(Some(d)) => d,
            _ => self.statfs().await?.default_stripe,
        };
        if s.stripe_count == 0 {
            s.stripe_count = base.stripe_count;
        }
        if s.stripe_size_bytes == 0 {
            s.stripe_size_bytes = base.stripe_size_bytes;
        }
        Ok(s)
    }
}

/// A directory default as text: `stripe_count=C stripe_size=S stripe_offset=I` (`-1`: any
/// start OST).
pub fn format_spec(s: &StripeSpec) -> String {
    format!(
        "stripe_count={} stripe_size={} stripe_offset={}",
        s.stripe_count,
        s.stripe_size_bytes,
        s.start_ost.map_or(-1, |o| o as i64)
    )
}

/// A file layout as text: the spec line (the offset is the first stripe's OST), then one
/// `OST OBJECT` line per stripe in stripe order.
pub fn format_layout(l: &FileLayout) -> String {
    let mut out = format!(
        "stripe_count={} stripe_size={} stripe_offset={}\n",
        l.stripes.len(),
        l.stripe_size_bytes,
        l.stripes.first().map_or(0, |s| s.ost)
    );
    for s in &l.stripes {
        out.push_str(&format!("{} {}\n", s.ost, s.object));
    }
    out
}

/// Parses `stripe_count=C stripe_size=S stripe_offset=I [name=NAME]` (any order, each at
/// most once; `name=` last, taking the rest of the text). 0 means "the default" for count
/// and size, -1 for the offset. Returns the spec and the name.
pub fn parse_spec(text: &str) -> Result<(StripeSpec, Option<String>), String> {
    let (fields, name) = match text.find("name=") {
        Some(i) => (&text[..i], Some(text[i + 5..].to_string())),
        None => (text.lines().next().unwrap_or(""), None),
    };
    let mut spec = StripeSpec {
        stripe_count: 0,
        stripe_size_bytes: 0,
        start_ost: None,
    };
    let mut seen = [false; 3];
    for tok in fields.split_whitespace() {
        let (k, v) = tok
            .split_once('=')
            .ok_or_else(|| format!("{tok:?}: expected key=value"))?;
        let slot = match k {
            "stripe_count" => 0,
            "stripe_size" => 1,
            "stripe_offset" => 2,
            _ => {
                return Err(format!(
                    "unknown key {k:?} (stripe_count, stripe_size, stripe_offset, name)"
                ))
            }
        };
        if std::mem::replace(&mut seen[slot], true) {
            return Err(format!("{k} given twice"));
        }
        let n: i64 = v
            .parse()
            .map_err(|_| format!("{k}={v:?} is not a number"))?;
        match slot {
            0 if (-1..=i32::MAX as i64).contains(&n) => spec.stripe_count = n as i32,
            1 if n >= 0 => spec.stripe_size_bytes = n as u64,
            2 if n == -1 => spec.start_ost = None,
            2 if (0..=u32::MAX as i64).contains(&n) => spec.start_ost = Some(n as u32),
            _ => return Err(format!("{k}={n} out of range")),
        }
    }
    if let Some(n) = &name {
        if n.is_empty() || n.contains('/') || n.contains('\0') {
            return Err(format!("name {n:?} is not a directory entry name"));
        }
    }
    Ok((spec, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_wire::mds::Stripe;

    /// Gathered bytes starting at `start`, none yet, holding `dirty` of the budget.
    fn gather_at(start: u64, dirty: OwnedSemaphorePermit) -> Gather {
        Gather {
            stripe: 0,
            generation: 0,
            start,
            buf: BytesMut::new(),
            id: Identity::test("a"),
            dirty,
        }
    }

    /// Written bytes are copied once, into one buffer per RPC: a write that fills at least
    /// half of its RPC gets the whole RPC's buffer, so the bytes completing it join without a
    /// copy; the RPCs completed leave with their budget, the gathered rest keeps exactly what
    /// its bytes need; an RPC's bytes are a slice of its buffer.
    #[test]
    fn gathered_bytes_fill_one_buffer_per_rpc_and_keep_their_budget() {
        let budget = Arc::new(Semaphore::new(100));
        let take = |kib: u32| budget.clone().try_acquire_many_owned(kib).unwrap();
        let all: Vec<u8> = (0..20_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let want = |from: u64, len: u64| all[from as usize..(from + len) as usize].to_vec();
        // RPC boundaries every 4096 bytes.
        let rpc_end = |at: u64| (at / 4096 + 1) * 4096;
        let mut g = gather_at(1000, take(2));
        // 2,000 of the RPC's 3,096 bytes: a buffer for the whole RPC, nothing complete yet.
        assert!(g.fill(&[&all[1000..3000]], rpc_end).is_none());
        assert_eq!((g.buf.len(), g.buf.capacity()), (2000, 3096));
        let first = g.buf.as_ptr();
        // 10,000 more, in two parts (as a write's stripe units of one object come): three
        // RPCs complete ([1000, 4096), [4096, 8192), [8192, 12288)), 712 bytes stay gathered.
        g.dirty.merge(take(10));
        let x = g
            .fill(&[&all[3000..7000], &all[7000..13_000]], rpc_end)
            .unwrap();
        assert_eq!(
            (x.start, x.len, g.start, g.end()),
            (1000, 11_288, 12_288, 13_000)
        );
        let lens: Vec<usize> = x.chunks.iter().map(|c| c.len()).collect();
        assert_eq!(lens, [3096, 4096, 4096]);
        assert_eq!(
            x.chunks[0].as_ptr(),
            first,
            "the first RPC's bytes were not moved"
        );
        for p in [(1000, 3096), (4096, 4096), (8192, 4096), (5000, 100)] {
            let b = x.bytes(p.0, p.1);
            assert_eq!(b.to_vec(), want(p.0, p.1));
            assert!(x
                .chunks
                .iter()
                .any(|c| c.as_ptr_range().contains(&b.as_ptr())));
        }
        // Bytes spanning two buffers (not what RPCs ask for) are still right.
        assert_eq!(x.bytes(4000, 200).to_vec(), want(4000, 200));
        // 712 gathered bytes need 1 KiB of the 12 taken; the RPCs sent carry the other 11.
        assert_eq!((g.dirty.num_permits(), x.dirty.num_permits()), (1, 11));
        assert_eq!(
            g.into_extent().bytes(12_288, 712).to_vec(),
            want(12_288, 712)
        );
        // A small write gets a buffer of its own size, not its RPC's.
        let mut small = gather_at(16_384, take(1));
        assert!(small.fill(&[&all[16_384..16_394]], rpc_end).is_none());
        assert!(small.buf.capacity() < 4096);
        drop((x, small));
        assert_eq!(budget.available_permits(), 100, "every permit given back");
    }

    #[test]
    fn layout_text_round_trips() {
        let s = StripeSpec {
            stripe_count: 2,
            stripe_size_bytes: 1 << 20,
            start_ost: Some(1),
        };
        assert_eq!(parse_spec(&format_spec(&s)).unwrap(), (s, None));
        let l = FileLayout {
            stripe_size_bytes: 1 << 20,
            stripes: vec![Stripe { ost: 1, object: 7 }, Stripe { ost: 0, object: 8 }],
        };
        let text = format_layout(&l);
        assert_eq!(
            text,
            "stripe_count=2 stripe_size=1048576 stripe_offset=1\n1 7\n0 8\n"
        );
        let (spec, _) = parse_spec(&text).unwrap();
        assert_eq!(spec.stripe_count, 2);
    }

    #[test]
    fn spec_parsing_checks_everything() {
        let (s, n) = parse_spec("stripe_count=-1 name=a b=c").unwrap();
        assert_eq!(s.stripe_count, -1);
        assert_eq!(n.as_deref(), Some("a b=c"));
        assert!(parse_spec("stripe_count=1 stripe_count=2").is_err());
        assert!(parse_spec("stripe_width=1").is_err());
        assert!(parse_spec("stripe_size=-5").is_err());
        assert!(parse_spec("stripe_offset=-2").is_err());
        assert!(parse_spec("name=a/b").is_err());
        assert!(parse_spec("name=").is_err());
        assert_eq!(parse_spec("").unwrap().0.stripe_count, 0);
    }
}
