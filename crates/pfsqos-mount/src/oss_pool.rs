//! Connections of the client to the OSSs and the MDS, with Lustre-like flow control and
//! recovery.
//!
//! * [`OstPool`]: one per OST. At most `max_rpcs_in_flight` RPCs are in flight to the OST
//!   (the client path's `RpcWindow`, Lustre's `osc.*.max_rpcs_in_flight`, see
//!   [`crate::limit`]); each RPC in flight holds one connection of the pool, so the ossd sees
//!   up to that many concurrent requests from this client for the OST. Every write RPC passes
//!   the node's outgoing limiter ([`crate::limit::NodeLimiter`]) before it is sent, and every
//!   reply's statement of the ossd's limit for this client is handed to it.
//! * [`MdsPool`]: a few connections to the MDS, one request at a time each.
//!
//! Recovery: when a daemon restarts, its old connections are dead. Before a pool reuses an
//! idle connection it checks, without blocking, whether the server closed it (the protocol is
//! strictly request/reply, so an idle connection with bytes or an end of stream to read is
//! dead; `closed_by_peer` in pfsqos-wire); such connections are dropped without costing an
//! attempt. A request that still fails with a connection error drops the connection and every
//! idle connection of the pool made before the failure (a restarted server closed them all),
//! and is resent at once on a fresh connection. Only a fresh connect that fails, or a fresh
//! connection that fails, waits with exponential backoff: then the server is really away. An
//! away server is tried again at least every [`RECONNECT_WAIT_MAX`] (50 ms doubling to it: a
//! refused connect costs the server nothing but a reset), and the first request of a pool that
//! gets through wakes every other request of the pool waiting for the server, so I/O resumes
//! within that interval of the server's return. A busy server (`EBUSY`, `EAGAIN`) is given
//! more room, 50 ms doubling to [`BUSY_WAIT_MAX`]. Resends go on for up to `recovery` (default
//! 60 s, like the time a Lustre client waits for a target to come back), then the request fails
//! with `EIO`.
//!
//! Every object operation is idempotent (a write or a read at an offset, a punch to a size, a
//! sync), so resending is safe. Metadata operations that are not (create, mkdir, unlink,
//! rmdir, rename) are resent as Lustre replays them: if an earlier attempt may have been
//! applied, the resend finding `EEXIST`/`ENOENT` is read as success (a create answers with the
//! entry that exists). An attempt may have been applied only if it failed with a connection
//! error after it was written to a connection that was alive when taken (fresh, or idle and
//! not closed by the server); an attempt on a connection found closed was never sent, and one
//! the server answered with an error was not applied. Otherwise `EEXIST` would be taken for
//! success when another client created the name meanwhile, and two `O_EXCL` creates racing
//! right after an MDS restart could both succeed. (A server whose host died without closing
//! its sockets is not seen by that check: the attempt then counts as possibly applied.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore};
use tracing::{debug, warn};

use crate::limit::{NodeLimiter, Window, WindowSlot};

use pfsqos_wire::client::{ClientError, Identity, MdsClient, OssClient};
use pfsqos_wire::mds::{MdsOp, MdsReplyBody};
use pfsqos_wire::protocol::{Errno, Role};

/// How long a request waits for a restarting daemon by default.
pub const RECOVERY_DEFAULT: Duration = Duration::from_secs(60);
const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// Longest wait between attempts to reach a server that is away (refuses or drops
/// connections): I/O resumes at most this long after the server is back.
pub const RECONNECT_WAIT_MAX: Duration = Duration::from_millis(200);
/// Longest wait between attempts at a server that answers it is too busy.
pub const BUSY_WAIT_MAX: Duration = Duration::from_secs(2);
/// Connections to the MDS (metadata calls in parallel).
pub const MDS_CONNECTIONS: usize = 4;

/// An object operation.
#[derive(Clone, Debug)]
pub enum ObjOp {
    Write {
        object: u64,
        offset: u64,
        data: bytes::Bytes,
    },
    Read {
        object: u64,
        offset: u64,
        len: u64,
    },
    Punch {
        object: u64,
        size: u64,
    },
    Sync {
        object: u64,
    },
}

/// What failed, as the errno the application sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure(pub Errno);

/// Errors worth a resend: the connection broke, or the server was too busy to queue.
fn retryable(e: &ClientError) -> bool {
    match e {
        ClientError::Conn(_) => true,
        ClientError::Remote(r) => matches!(r.errno, Errno::EBUSY | Errno::EAGAIN),
    }
}

/// The errno of an error that is not retried.
fn failure(e: ClientError) -> Failure {
    match e {
        ClientError::Remote(r) => Failure(r.errno),
        ClientError::Conn(_) => unreachable!("connection errors are retryable"),
    }
}

async fn resolve(addr: &str) -> std::io::Result<SocketAddr> {
    tokio::net::lookup_host(addr)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{addr} resolves to no address")))
}

/// Why an attempt is followed by a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pause {
    /// Resend at once (a connection found stale).
    None,
    /// The server is away: a connect or a fresh connection failed.
    Away,
    /// The server answered it is too busy.
    Busy,
}

/// What a pool counts of its waits, and how a request that got through wakes the others.
#[derive(Default)]
struct Waits {
    /// Backoff waits so far (a stale connection must cost none).
    count: AtomicU64,
    /// The longest single wait so far, in ns.
    longest_ns: AtomicU64,
    /// Notified when a fresh connection got an answer: the server is back.
    back: Notify,
}

impl Waits {
    /// The server answered on a fresh connection: every request waiting for it tries now.
    fn server_back(&self) {
        self.back.notify_waiters();
    }
}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Woken {
    Slept,
    /// Another request of the pool got through: the server is back.
    ServerBack,
}

/// Waits between attempts while a server is away or busy.
struct Backoff<'a> {
    deadline: tokio::time::Instant,
    next: Duration,
    waits: &'a Waits,
}

impl<'a> Backoff<'a> {
    fn new(recovery: Duration, waits: &'a Waits) -> Backoff<'a> {
        Backoff {
            deadline: tokio::time::Instant::now() + recovery,
            next: BACKOFF_MIN,
            waits,
        }
    }

    /// How long to wait before the next attempt: nothing for [`Pause::None`], else the
    /// backoff, capped by the pause's maximum and the recovery time; `None` once the recovery
    /// time is used up.
    fn next_wait(&mut self, pause: Pause) -> Option<Duration> {
        let now = tokio::time::Instant::now();
        if now >= self.deadline {
            return None;
        }
        let cap = match pause {
            Pause::None => return Some(Duration::ZERO),
            Pause::Away => RECONNECT_WAIT_MAX,
            Pause::Busy => BUSY_WAIT_MAX,
        };
        let d = self.next.min(cap).min(self.deadline - now);
        self.next = (self.next * 2).min(cap);
        debug_assert!(d <= cap);
        Some(d)
    }

    /// Waits before the next attempt ([`Backoff::next_wait`]), less if a request gets through
    /// meanwhile; false once the recovery time is used up.
    async fn wait(&mut self, pause: Pause) -> bool {
        match self.next_wait(pause) {
            None => false,
            Some(d) if d.is_zero() => true,
            Some(d) => {
                self.sleep(d).await;
                true
            }
        }
    }

    /// Sleeps `d`, or until a request of the pool gets through on a fresh connection.
    async fn sleep(&self, d: Duration) -> Woken {
        self.waits.count.fetch_add(1, Ordering::Relaxed);
        self.waits
            .longest_ns
            .fetch_max(d.as_nanos() as u64, Ordering::Relaxed);
        let back = self.waits.back.notified();
        tokio::select! {
            _ = tokio::time::sleep(d) => Woken::Slept,
            _ = back => Woken::ServerBack,
        }
    }
}

/// A client connection as the pools see it.
trait Connection {
    fn closed_by_peer(&self) -> bool;
}

impl Connection for OssClient {
    fn closed_by_peer(&self) -> bool {
        OssClient::closed_by_peer(self)
    }
}

impl Connection for MdsClient {
    fn closed_by_peer(&self) -> bool {
        MdsClient::closed_by_peer(self)
    }
}

/// A connection taken for one attempt.
struct Taken<C> {
    conn: C,
    /// When it was connected: a connection error drops the idle connections made before it
    /// happened.
    connected_at: Instant,
    /// Connected for this attempt (not reused): if it fails, the server is away.
    fresh: bool,
}

/// A pool's idle connections, each with the time it was connected.
struct Idle<C> {
    conns: Mutex<Vec<(C, Instant)>>,
}

impl<C: Connection> Idle<C> {
    fn new() -> Idle<C> {
        Idle {
            conns: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(C, Instant)>> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most recently used idle connection the server has not closed; those it closed are
    /// dropped on the way (they cost no attempt: nothing was sent on them).
    fn take_live(&self) -> Option<Taken<C>> {
        loop {
            let (conn, connected_at) = self.lock().pop()?;
            // Checked outside the lock: a system call per connection.
            if !conn.closed_by_peer() {
                return Some(Taken {
                    conn,
                    connected_at,
                    fresh: false,
                });
            }
        }
    }

    fn put(&self, conn: C, connected_at: Instant) {
        self.lock().push((conn, connected_at));
    }

    /// Drops the idle connections connected before `failed_at`: a server that broke one
    /// connection (it restarted) broke all those it had, and trying them one by one would cost
    /// an attempt each.
    fn drop_made_before(&self, failed_at: Instant) {
        let stale: Vec<(C, Instant)> = {
            let mut conns = self.lock();
            let (stale, kept) = std::mem::take(&mut *conns)
                .into_iter()
                .partition(|(_, at)| *at < failed_at);
            *conns = kept;
            stale
        };
        // Closed outside the lock.
        drop(stale);
    }
}

/// Connections to one OST with the RPC window.
pub struct OstPool {
    /// The OST's global index (for messages).
    pub ost: u32,
    addr: String,
    /// The OST's index on its ossd.
    local_index: u32,
    key: Arc<[u8]>,
    window: Arc<Window>,
    /// The node's outgoing limiter, shared by every pool of the mount.
    limiter: Arc<NodeLimiter>,
    idle: Idle<OssClient>,
    recovery: Duration,
    waits: Waits,
}

impl OstPool {
    pub fn new(
        ost: u32,
        addr: String,
        local_index: u32,
        key: Arc<[u8]>,
        max_rpcs_in_flight: u32,
        limiter: Arc<NodeLimiter>,
        recovery: Duration,
    ) -> OstPool {
        OstPool {
            ost,
            addr,
            local_index,
            key,
            window: Window::new(max_rpcs_in_flight),
            limiter,
            idle: Idle::new(),
            recovery,
            waits: Waits::default(),
        }
    }

    /// How many times requests to this OST waited for it to come back.
    #[allow(dead_code)] // Read by the tests; the mount exports no metrics yet.
    pub fn backoff_waits(&self) -> u64 {
        self.waits.count.load(Ordering::Relaxed)
    }

    /// The longest single wait for this OST so far.
    #[allow(dead_code)] // Read by the tests; the mount exports no metrics yet.
    pub fn longest_backoff_wait(&self) -> Duration {
        Duration::from_nanos(self.waits.longest_ns.load(Ordering::Relaxed))
    }

    /// Waits for a slot in the RPC window.
    pub async fn admit(&self) -> WindowSlot {
        self.window.admit().await
    }

    /// A live idle connection, or a fresh one.
    async fn connection(&self) -> Result<Taken<OssClient>, ClientError> {
        if let Some(t) = self.idle.take_live() {
            return Ok(t);
        }
        let addr = resolve(&self.addr)
            .await
            .map_err(|e| ClientError::Conn(e.into()))?;
        let conn = OssClient::connect(addr, &self.key, Role::Client).await?;
        Ok(Taken {
            conn,
            connected_at: Instant::now(),
            fresh: true,
        })
    }

    /// Sends `op` on `c` and waits for its reply.
    async fn send(
        &self,
        c: &mut OssClient,
        id: &Identity,
        op: &ObjOp,
    ) -> Result<bytes::Bytes, ClientError> {
        match op {
            ObjOp::Write {
                object,
                offset,
                data,
            } => {
                // Sent (again, after a resend) only once the shaper lets it go.
                self.limiter.admit(data.len() as u64).await;
                c.write_bytes(id, self.local_index, *object, *offset, data.clone(), false)
                    .await
                    .map(|_| bytes::Bytes::new())
            }
            ObjOp::Read {
                object,
                offset,
                len,
            } => {
                c.read_bytes(id, self.local_index, *object, *offset, *len)
                    .await
            }
            ObjOp::Punch { object, size } => c
                .punch(id, self.local_index, *object, *size)
                .await
                .map(|_| bytes::Bytes::new()),
            ObjOp::Sync { object } => c
                .sync(id, self.local_index, *object)
                .await
                .map(|_| bytes::Bytes::new()),
        }
    }

    /// Runs one operation under a window slot the caller holds; resends across daemon
    /// restarts for up to the recovery time (see the module docs). Reads return their bytes
    /// (short at the end of the object).
    pub async fn run(
        &self,
        _slot: &WindowSlot,
        id: &Identity,
        op: &ObjOp,
    ) -> Result<bytes::Bytes, Failure> {
        let pool = self;
        resend(&self.waits, self.recovery, self.ost, move || {
            pool.attempt(id, op)
        })
        .await
    }

    /// One attempt at `op`: on a live idle connection or a fresh one.
    async fn attempt(&self, id: &Identity, op: &ObjOp) -> Tried<bytes::Bytes> {
        // The error, and whether it is worth a wait: the ossd is away (a fresh connect or
        // connection failed) or busy. A stale connection is followed by a fresh one at once.
        match self.connection().await {
            Err(e) => Tried::again(e, Pause::Away),
            Ok(mut t) => {
                let r = self.send(&mut t.conn, id, op).await;
                self.limiter.note(&self.addr, t.conn.client_limit());
                if let Err(ClientError::Conn(e)) = r {
                    drop(t.conn);
                    self.idle.drop_made_before(Instant::now());
                    let pause = if t.fresh { Pause::Away } else { Pause::None };
                    return Tried::again(ClientError::Conn(e), pause);
                }
                // A connection that answered (even with an error) is still good.
                self.idle.put(t.conn, t.connected_at);
                let outcome = match r {
                    Ok(data) => Outcome::Done(data),
                    Err(e) if retryable(&e) => Outcome::Again(e, Pause::Busy),
                    Err(e) => Outcome::Failed(failure(e)),
                };
                Tried {
                    outcome,
                    answered_fresh: t.fresh,
                }
            }
        }
    }
}

/// What one attempt at an object operation came to.
enum Outcome<T> {
    Done(T),
    /// The server answered with an error that is not retried.
    Failed(Failure),
    /// Worth a resend, after the pause.
    Again(ClientError, Pause),
}

/// An attempt's outcome, and whether a connection made for it was answered: then the
/// server is back, and every request of the pool waiting for it tries again now.
struct Tried<T> {
    outcome: Outcome<T>,
    answered_fresh: bool,
}

impl<T> Tried<T> {
    fn again(e: ClientError, pause: Pause) -> Tried<T> {
        Tried {
            outcome: Outcome::Again(e, pause),
            answered_fresh: false,
        }
    }
}

/// Makes attempts until one is done or fails for good, waiting between them as the
/// attempts' pauses say ([`Backoff`]) for up to `recovery`; an attempt answered on a fresh
/// connection wakes the other requests of the pool (`waits`) waiting for the server.
async fn resend<T, F, Fut>(
    waits: &Waits,
    recovery: Duration,
    ost: u32,
    mut attempt: F,
) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Tried<T>>,
{
    let mut backoff = Backoff::new(recovery, waits);
    loop {
        let tried = attempt().await;
        if tried.answered_fresh {
            waits.server_back();
        }
        let (e, pause) = match tried.outcome {
            Outcome::Done(v) => return Ok(v),
            Outcome::Failed(f) => return Err(f),
            Outcome::Again(e, pause) => (e, pause),
        };
        debug!(ost, error = %e, "OST request failed; will resend");
        if !backoff.wait(pause).await {
            warn!(ost, error = %e, "OST did not recover in time");
            return Err(Failure(Errno::EIO));
        }
    }
}

/// Connections to the MDS.
pub struct MdsPool {
    addr: SocketAddr,
    key: Arc<[u8]>,
    slots: Semaphore,
    idle: Idle<MdsClient>,
    recovery: Duration,
    waits: Waits,
}

/// One attempt at a metadata operation.
enum Attempt {
    Done(Result<MdsReplyBody, ClientError>),
    /// The connection failed after the request was written to it, alive when taken: the
    /// request may have reached the MDS. `fresh`: the connection was made for this attempt.
    Broken {
        error: ClientError,
        fresh: bool,
    },
    /// A fresh connect failed; nothing was sent.
    Unreachable(ClientError),
}

impl MdsPool {
    pub fn new(addr: SocketAddr, key: Arc<[u8]>, recovery: Duration) -> MdsPool {
        MdsPool {
            addr,
            key,
            slots: Semaphore::new(MDS_CONNECTIONS),
            idle: Idle::new(),
            recovery,
            waits: Waits::default(),
        }
    }

    /// How many times metadata requests waited for the MDS to come back.
    #[allow(dead_code)] // Read by the tests; the mount exports no metrics yet.
    pub fn backoff_waits(&self) -> u64 {
        self.waits.count.load(Ordering::Relaxed)
    }

    /// Connects once (at mount time: a wrong address or key fails the mount at once).
    pub async fn prime(&self) -> Result<MdsClient, ClientError> {
        Ok(MdsClient::connect(self.addr, &self.key).await?)
    }

    /// Puts a connection into the pool (one just made by [`MdsPool::prime`]).
    pub fn give(&self, c: MdsClient) {
        self.idle.put(c, Instant::now());
    }

    /// Sends `op` on a live idle connection or a fresh one.
    async fn attempt(&self, op: MdsOp) -> Attempt {
        let mut t = match self.idle.take_live() {
            Some(t) => t,
            None => match MdsClient::connect(self.addr, &self.key).await {
                Ok(conn) => Taken {
                    conn,
                    connected_at: Instant::now(),
                    fresh: true,
                },
                Err(e) => return Attempt::Unreachable(e.into()),
            },
        };
        match t.conn.call(op).await {
            Err(ClientError::Conn(e)) => {
                drop(t.conn);
                self.idle.drop_made_before(Instant::now());
                Attempt::Broken {
                    error: ClientError::Conn(e),
                    fresh: t.fresh,
                }
            }
            r => {
                if t.fresh {
                    self.waits.server_back();
                }
                self.idle.put(t.conn, t.connected_at);
                Attempt::Done(r)
            }
        }
    }

    /// One attempt with no resend (the follow-up lookups of a replay).
    async fn once(&self, op: MdsOp) -> Result<MdsReplyBody, ClientError> {
        match self.attempt(op).await {
            Attempt::Done(r) => r,
            Attempt::Broken { error, .. } | Attempt::Unreachable(error) => Err(error),
        }
    }

    /// Runs one metadata operation, resending across an MDS restart (see the module docs for
    /// how non-idempotent operations are replayed).
    pub async fn call(&self, op: MdsOp) -> Result<MdsReplyBody, Failure> {
        let _slot = self
            .slots
            .acquire()
            .await
            .expect("the slot semaphore is never closed");
        let mut backoff = Backoff::new(self.recovery, &self.waits);
        // Whether an earlier attempt may have been applied.
        let mut resent = false;
        loop {
            // The error, and whether it is worth a wait (as in `OstPool::run`).
            let (e, pause) = match self.attempt(op.clone()).await {
                Attempt::Done(Ok(b)) => return Ok(b),
                Attempt::Done(Err(e)) if retryable(&e) => (e, Pause::Busy),
                Attempt::Done(Err(e)) if resent => {
                    return self.replayed(&op, failure(e).0).await;
                }
                Attempt::Done(Err(e)) => return Err(failure(e)),
                Attempt::Broken { error, fresh } => {
                    resent = true;
                    (error, if fresh { Pause::Away } else { Pause::None })
                }
                Attempt::Unreachable(e) => (e, Pause::Away),
            };
            debug!(error = %e, "MDS request failed; will resend");
            if !backoff.wait(pause).await {
                warn!(error = %e, "MDS did not recover in time");
                return Err(Failure(Errno::EIO));
            }
        }
    }

    /// A resent operation failed: if the failure is what the first, applied attempt would
    /// cause, the operation succeeded.
    async fn replayed(&self, op: &MdsOp, errno: Errno) -> Result<MdsReplyBody, Failure> {
        match (op, errno) {
            (MdsOp::Create { parent, name, .. }, Errno::EEXIST) => {
                let attr = match self.once(lookup(*parent, name)).await {
                    Ok(MdsReplyBody::Attr(a)) => a,
                    _ => return Err(Failure(Errno::EEXIST)),
                };
                match self.once(MdsOp::GetLayout { ino: attr.ino }).await {
                    Ok(MdsReplyBody::Layout(l)) => Ok(MdsReplyBody::Created(attr, l)),
                    _ => Err(Failure(Errno::EEXIST)),
                }
            }
            (MdsOp::Mkdir { parent, name, .. }, Errno::EEXIST) => self
                .once(lookup(*parent, name))
                .await
                .map_err(|_| Failure(Errno::EEXIST)),
            (MdsOp::Unlink { .. } | MdsOp::Rename { .. }, Errno::ENOENT) => {
                // A resent removal whose first send removed the file: the MDS queued its
                // objects for destruction then.
                Ok(MdsReplyBody::Removed(None))
            }
            (MdsOp::Rmdir { .. }, Errno::ENOENT) => Ok(MdsReplyBody::Done),
            _ => Err(Failure(errno)),
        }
    }
}

fn lookup(parent: u64, name: &[u8]) -> MdsOp {
    MdsOp::Lookup {
        parent,
        name: name.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::{Path, PathBuf};

    use pfsqos_mds::{Mds, MdsConfig, OssSpec};
    use pfsqos_ossd::{Ossd, OssdConfig};
    use pfsqos_wire::mds::{Owner, ROOT_INO};

    const KEY: &[u8] = b"oss-pool-test-cluster-key-0123456";
    /// The servers' own key: the server roles (`Lctl`, `Mds`, `Oss`) prove it.
    const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";
    /// A short recovery time: the tests count the waits, and a request that wrongly waited
    /// for every stale connection fails sooner.
    const RECOVERY_SHORT: Duration = Duration::from_secs(2);
    /// Idle connections in a pool before the restart.
    const STALE_CONNECTIONS: usize = 8;

    /// A runtime of its own for a daemon: dropping it ends every task of the daemon and so
    /// closes every connection it holds, as the kernel does for a killed process.
    fn daemon_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    fn client_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    struct OssDaemon {
        rt: tokio::runtime::Runtime,
        ossd: Ossd,
    }

    impl OssDaemon {
        fn start(listen: SocketAddr, dirs: &[PathBuf]) -> OssDaemon {
            let rt = daemon_runtime();
            let mut config =
                OssdConfig::new(listen, dirs.to_vec(), KEY.to_vec(), SERVER_KEY.to_vec());
            config.threads = 1;
            let ossd = rt.block_on(Ossd::start(config)).unwrap();
            OssDaemon { rt, ossd }
        }

        fn stop(self) {
            self.rt.block_on(self.ossd.shutdown());
        }
    }

    struct MdsDaemon {
        rt: tokio::runtime::Runtime,
        mds: Mds,
    }

    impl MdsDaemon {
        fn start(listen: SocketAddr, db: &Path) -> MdsDaemon {
            let rt = daemon_runtime();
            let oss = OssSpec {
                addr: "127.0.0.1:1".into(),
                ost_count: 1,
            };
            let config = MdsConfig::new(
                listen,
                db.to_path_buf(),
                KEY.to_vec(),
                SERVER_KEY.to_vec(),
                vec![oss],
            );
            let mds = rt.block_on(Mds::start(config)).unwrap();
            MdsDaemon { rt, mds }
        }

        /// Stops accepting, then drops the runtime: the connection tasks end with it.
        fn stop(self) {
            self.rt.block_on(self.mds.shutdown());
        }
    }

    fn create(name: &[u8]) -> MdsOp {
        MdsOp::Create {
            parent: ROOT_INO,
            name: name.to_vec(),
            owner: Owner {
                mode: 0o644,
                uid: 0,
                gid: 0,
            },
            stripe: None,
        }
    }

    /// A pool with `count` idle connections, each of which has served a request.
    fn mds_pool_with_idle_connections(
        client: &tokio::runtime::Runtime,
        addr: SocketAddr,
        count: usize,
    ) -> MdsPool {
        let pool = MdsPool::new(addr, KEY.into(), RECOVERY_SHORT);
        client.block_on(async {
            for _ in 0..count {
                let mut c = pool.prime().await.unwrap();
                c.getattr(ROOT_INO).await.unwrap();
                pool.give(c);
            }
        });
        pool
    }

    #[test]
    fn stale_ost_connections_after_an_ossd_restart_cost_no_backoff() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = vec![tmp.path().join("ost0")];
        let ossd = OssDaemon::start("127.0.0.1:0".parse().unwrap(), &dirs);
        let addr = ossd.ossd.local_addr();
        let client = client_runtime();
        let pool = OstPool::new(
            0,
            addr.to_string(),
            0,
            KEY.into(),
            STALE_CONNECTIONS as u32,
            Arc::new(NodeLimiter::new()),
            RECOVERY_SHORT,
        );
        let id = Identity::test("recovery.0");
        let data = bytes::Bytes::from_static(b"written before the restart");
        client.block_on(async {
            let mut taken = Vec::new();
            for _ in 0..STALE_CONNECTIONS {
                taken.push(pool.connection().await.unwrap());
            }
            for t in taken {
                assert!(t.fresh, "the pool starts empty");
                pool.idle.put(t.conn, t.connected_at);
            }
            let slot = pool.admit().await;
            let write = ObjOp::Write {
                object: 1,
                offset: 0,
                data: data.clone(),
            };
            pool.run(&slot, &id, &write).await.unwrap();
        });
        assert_eq!(pool.idle.lock().len(), STALE_CONNECTIONS);

        ossd.stop();
        let ossd = OssDaemon::start(addr, &dirs);
        let got = client.block_on(async {
            let slot = pool.admit().await;
            let read = ObjOp::Read {
                object: 1,
                offset: 0,
                len: data.len() as u64,
            };
            pool.run(&slot, &id, &read).await
        });
        assert_eq!(got, Ok(data));
        assert_eq!(
            pool.backoff_waits(),
            0,
            "a stale connection cost a backoff wait"
        );
        assert_eq!(
            pool.idle.lock().len(),
            1,
            "the stale connections are gone; the fresh one is kept"
        );
        ossd.stop();
    }

    #[test]
    fn stale_mds_connections_after_an_mds_restart_cost_no_backoff() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("mds.db");
        let mds = MdsDaemon::start("127.0.0.1:0".parse().unwrap(), &db);
        let addr = mds.mds.local_addr();
        let client = client_runtime();
        let pool = mds_pool_with_idle_connections(&client, addr, STALE_CONNECTIONS);
        let created = client.block_on(pool.call(create(b"before"))).unwrap();

        mds.stop();
        let mds = MdsDaemon::start(addr, &db);
        let found = client.block_on(pool.call(lookup(ROOT_INO, b"before")));
        match (created, found) {
            (MdsReplyBody::Created(a, _), Ok(MdsReplyBody::Attr(b))) => assert_eq!(a.ino, b.ino),
            other => panic!("create then lookup answered {other:?}"),
        }
        assert_eq!(
            pool.backoff_waits(),
            0,
            "a stale connection cost a backoff wait"
        );
        mds.stop();
    }

    #[test]
    fn a_create_never_sent_on_a_stale_connection_is_not_replayed() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("mds.db");
        let mds = MdsDaemon::start("127.0.0.1:0".parse().unwrap(), &db);
        let addr = mds.mds.local_addr();
        let client = client_runtime();
        // One stale connection: a pool that sent the create on it and counted the attempt
        // would still reach the MDS in time, and take its EEXIST for a replay.
        let pool = mds_pool_with_idle_connections(&client, addr, 1);

        mds.stop();
        let mds = MdsDaemon::start(addr, &db);
        let mine = client.block_on(async {
            // Another client wins the race for the name after the restart.
            let mut other = MdsClient::connect(addr, KEY).await.unwrap();
            let owner = Owner {
                mode: 0o644,
                uid: 0,
                gid: 0,
            };
            other.create(ROOT_INO, b"raced", owner, None).await.unwrap();
            pool.call(create(b"raced")).await
        });
        assert_eq!(
            mine.map(|_| ()),
            Err(Failure(Errno::EEXIST)),
            "an exclusive create that never reached the MDS was taken for a replay"
        );
        mds.stop();
    }

    /// A connection whose liveness the test sets.
    struct Fake {
        closed: bool,
        name: &'static str,
    }

    impl Connection for Fake {
        fn closed_by_peer(&self) -> bool {
            self.closed
        }
    }

    #[test]
    fn closed_idle_connections_are_skipped_and_a_failure_drops_older_ones() {
        let idle = Idle::new();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        let t2 = t0 + Duration::from_secs(2);
        for (name, closed, at) in [("old", false, t0), ("young", false, t2), ("dead", true, t1)] {
            idle.put(Fake { closed, name }, at);
        }
        let t = idle.take_live().unwrap();
        assert_eq!((t.conn.name, t.fresh), ("young", false));
        idle.put(t.conn, t.connected_at);
        idle.drop_made_before(t1);
        let left: Vec<&str> = idle.lock().iter().map(|(c, _)| c.name).collect();
        assert_eq!(left, ["young"]);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_reads_as_closed_before_use() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            let (r, w) = s.into_split();
            let (mut reader, mut writer) = (
                pfsqos_wire::conn::Reader::new(r),
                pfsqos_wire::conn::Writer::new(w),
            );
            pfsqos_wire::conn::server_handshake(&mut reader, &mut writer, KEY, "pfsqos", 1)
                .await
                .unwrap();
            (reader, writer)
        });
        let c = MdsClient::connect(addr, KEY).await.unwrap();
        let server_side = server.await.unwrap();
        assert!(
            !c.closed_by_peer(),
            "an open idle connection reads as closed"
        );
        drop(server_side);
        // The end of stream travels through the kernel: poll for it with a deadline.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !c.closed_by_peer() {
            assert!(
                Instant::now() < deadline,
                "a closed connection never read as closed"
            );
            tokio::task::yield_now().await;
        }
    }

    /// Waits for an away server grow from 50 ms to at most [`RECONNECT_WAIT_MAX`] and never
    /// beyond, however long the outage; a busy server's grow to [`BUSY_WAIT_MAX`]; a stale
    /// connection costs no wait; and a request that gets through on a fresh connection ends
    /// every other wait of the pool.
    #[test]
    fn reconnect_waits_are_bounded_and_cut_short_when_the_server_is_back() {
        let waits = Waits::default();
        let mut b = Backoff::new(Duration::from_secs(3600), &waits);
        let away: Vec<Duration> = (0..40).map(|_| b.next_wait(Pause::Away).unwrap()).collect();
        assert_eq!(away[..3], [50, 100, 200].map(Duration::from_millis));
        assert!(away.iter().all(|&d| d <= RECONNECT_WAIT_MAX), "{away:?}");
        assert_eq!(b.next_wait(Pause::None), Some(Duration::ZERO));
        let mut busy = Backoff::new(Duration::from_secs(3600), &waits);
        let longest = (0..10)
            .map(|_| busy.next_wait(Pause::Busy).unwrap())
            .max()
            .unwrap();
        assert_eq!(longest, BUSY_WAIT_MAX);
        // Past the recovery time the request gives up; the last wait ends at it.
        let mut short = Backoff::new(Duration::from_millis(120), &waits);
        assert!(short.next_wait(Pause::Away).unwrap() <= Duration::from_millis(120));
        let mut over = Backoff::new(Duration::ZERO, &waits);
        assert_eq!(over.next_wait(Pause::Away), None);

        // A wait in progress, however long, ends when another request finds the server back.
        let rt = client_runtime();
        let woken = rt.block_on(async {
            let (woken, ()) = tokio::join!(b.sleep(BUSY_WAIT_MAX * 30), async {
                tokio::task::yield_now().await;
                waits.server_back();
            });
            woken
        });
        assert_eq!(woken, Woken::ServerBack);
    }

    /// On virtual time, the resend loop of every OST request: requests issued at different
    /// moments of a long outage (long enough that waits doubling to the busy cap would be
    /// seconds apart) all get through within [`RECONNECT_WAIT_MAX`] of the server's return,
    /// and at one instant: the first answered on a fresh connection wakes the others. A
    /// request issued once the server is back goes through at once.
    #[test]
    fn requests_waiting_in_an_outage_resume_together_soon_after_the_server_is_back() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let waits = Waits::default();
            let t0 = tokio::time::Instant::now();
            let outage = Duration::from_secs(30);
            let back_at = t0 + outage;
            // A connect to the server: refused while it is away, answered once it is back.
            let attempt = move || async move {
                let now = tokio::time::Instant::now();
                if now < back_at {
                    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
                    Tried::again(
                        ClientError::Conn(pfsqos_wire::conn::ConnError::Io(refused)),
                        Pause::Away,
                    )
                } else {
                    Tried {
                        outcome: Outcome::Done(now),
                        answered_fresh: true,
                    }
                }
            };
            let waits = &waits;
            // Each request: when it was issued, when it got through, and when it attempted.
            let request = move |issued_ms: u64| async move {
                tokio::time::sleep(Duration::from_millis(issued_ms)).await;
                let tries = std::cell::RefCell::new(Vec::new());
                let done = resend(waits, Duration::from_secs(3600), 0, || {
                    tries.borrow_mut().push(tokio::time::Instant::now() - t0);
                    attempt()
                })
                .await
                .expect("the recovery time is far longer than the outage");
                (issued_ms, done - t0, tries.into_inner())
            };
            let during = [0, 1_300, 7_000, 21_700];
            let after = 31_000;
            let done = futures_util::future::join_all(
                during.iter().chain([&after]).map(|&ms| request(ms)),
            )
            .await;
            for (issued_ms, _, tries) in &done {
                let gaps: Vec<Duration> = tries.windows(2).map(|w| w[1] - w[0]).collect();
                assert!(
                    gaps.iter().all(|&g| g <= RECONNECT_WAIT_MAX),
                    "the request issued at {issued_ms} ms waited {:?} between attempts",
                    gaps.iter().max()
                );
            }
            let resumed: Vec<(u64, Duration)> = done
                .iter()
                .filter(|(ms, _, _)| *ms != after)
                .map(|(ms, at, _)| (*ms, *at))
                .collect();
            let first = resumed.iter().map(|(_, at)| *at).min().unwrap();
            assert!(
                first >= outage && first - outage <= RECONNECT_WAIT_MAX,
                "the first request resumed {first:?} after the outage began ({outage:?} long)"
            );
            assert!(
                resumed.iter().all(|(_, at)| *at == first),
                "the requests waiting in the outage resumed at {resumed:?}, not together"
            );
            let late = done.iter().find(|(ms, _, _)| *ms == after).unwrap();
            assert_eq!(
                (late.1, late.2.len()),
                (Duration::from_millis(after), 1),
                "a request issued after the return waited"
            );
            assert!(waits.count.load(Ordering::Relaxed) > 0);
            assert!(
                Duration::from_nanos(waits.longest_ns.load(Ordering::Relaxed))
                    <= RECONNECT_WAIT_MAX
            );
        });
    }

    /// A write issued while the ossd is down completes once it is back, and while it waited
    /// no attempt was more than [`RECONNECT_WAIT_MAX`] after the one before: it resumes
    /// within that of the ossd's return, however long the outage (the wall-clock figure is
    /// printed, not asserted).
    #[test]
    fn io_issued_in_an_outage_resumes_shortly_after_the_ossd_is_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = vec![tmp.path().join("ost0")];
        let ossd = OssDaemon::start("127.0.0.1:0".parse().unwrap(), &dirs);
        let addr = ossd.ossd.local_addr();
        ossd.stop();
        let client = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let pool = Arc::new(OstPool::new(
            0,
            addr.to_string(),
            0,
            KEY.into(),
            2,
            Arc::new(NodeLimiter::new()),
            Duration::from_secs(120),
        ));
        let write = {
            let pool = pool.clone();
            client.spawn(async move {
                let slot = pool.admit().await;
                let op = ObjOp::Write {
                    object: 7,
                    offset: 0,
                    data: bytes::Bytes::from_static(b"issued during the outage"),
                };
                pool.run(&slot, &Identity::test("outage.0"), &op).await
            })
        };
        // Long enough an outage that the old doubling would wait 2 s between attempts.
        let deadline = Instant::now() + Duration::from_secs(60);
        while pool.backoff_waits() < 12 {
            assert!(Instant::now() < deadline, "the write never retried");
            std::thread::sleep(Duration::from_millis(20));
        }
        let ossd = OssDaemon::start(addr, &dirs);
        let back = Instant::now();
        client.block_on(write).unwrap().unwrap();
        eprintln!(
            "resumed {:?} after the ossd was back ({} waits)",
            back.elapsed(),
            pool.backoff_waits()
        );
        assert!(
            pool.longest_backoff_wait() <= RECONNECT_WAIT_MAX,
            "a wait of {:?}",
            pool.longest_backoff_wait()
        );
        assert!(back.elapsed() < Duration::from_secs(30));
        ossd.stop();
    }
}
