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
//! Recovery: when a daemon restarts, requests on its old connections fail with a connection
//! error; the pool drops those connections, reconnects with exponential backoff (50 ms doubling
//! to 2 s) and resends, for up to `recovery` (default 60 s, like the time a Lustre client waits
//! for a target to come back). Every object operation is idempotent (a write or a read at an
//! offset, a punch to a size, a sync), so resending is safe. Metadata operations that are not
//! (create, mkdir, unlink, rmdir, rename) are resent as Lustre replays them: if the first
//! attempt had already been applied, the resend finds `EEXIST`/`ENOENT`, which is then read as
//! success (a create answers with the entry that exists).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tracing::{debug, warn};

use crate::limit::{NodeLimiter, Window, WindowSlot};

use pfsqos_wire::client::{ClientError, Identity, MdsClient, OssClient};
use pfsqos_wire::mds::{MdsOp, MdsReplyBody};
use pfsqos_wire::protocol::{Errno, Role};

/// How long a request waits for a restarting daemon by default.
pub const RECOVERY_DEFAULT: Duration = Duration::from_secs(60);
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
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

async fn resolve(addr: &str) -> std::io::Result<SocketAddr> {
    tokio::net::lookup_host(addr)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{addr} resolves to no address")))
}

struct Backoff {
    deadline: Instant,
    next: Duration,
}

impl Backoff {
    fn new(recovery: Duration) -> Backoff {
        Backoff {
            deadline: Instant::now() + recovery,
            next: BACKOFF_MIN,
        }
    }

    /// Sleeps before the next attempt; false once the recovery time is used up.
    async fn wait(&mut self) -> bool {
        let now = Instant::now();
        if now >= self.deadline {
            return false;
        }
        let d = self.next.min(self.deadline - now);
        tokio::time::sleep(d).await;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        true
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
    idle: Mutex<Vec<OssClient>>,
    recovery: Duration,
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
            idle: Mutex::new(Vec::new()),
            recovery,
        }
    }

    /// Waits for a slot in the RPC window.
    pub async fn admit(&self) -> WindowSlot {
        self.window.admit().await
    }

    async fn connection(&self) -> Result<OssClient, ClientError> {
        if let Some(c) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(c);
        }
        let addr = resolve(&self.addr)
            .await
            .map_err(|e| ClientError::Conn(e.into()))?;
        Ok(OssClient::connect(addr, &self.key, Role::Client).await?)
    }

    /// Runs one operation under a window slot the caller holds; resends across daemon
    /// restarts for up to the recovery time. Reads return their bytes (short at the end of
    /// the object).
    pub async fn run(
        &self,
        _slot: &WindowSlot,
        id: &Identity,
        op: &ObjOp,
    ) -> Result<bytes::Bytes, Failure> {
        let mut backoff = Backoff::new(self.recovery);
        loop {
            let result = match self.connection().await {
                Ok(mut c) => {
                    let r = match op {
                        ObjOp::Write {
                            object,
                            offset,
                            data,
                        } => {
                            // Sent (again, after a resend) only once the shaper lets it go.
                            self.limiter.admit(data.len() as u64).await;
                            c.write_bytes(
                                id,
                                self.local_index,
                                *object,
                                *offset,
                                data.clone(),
                                false,
                            )
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
                    };
                    self.limiter.note(&self.addr, c.client_limit());
                    // A connection that answered (even with an error) is still good.
                    if !matches!(r, Err(ClientError::Conn(_))) {
                        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(c);
                    }
                    r
                }
                Err(e) => Err(e),
            };
            match result {
                Ok(data) => return Ok(data),
                Err(e) if retryable(&e) => {
                    debug!(ost = self.ost, error = %e, "OST request failed; will resend");
                    if !backoff.wait().await {
                        warn!(ost = self.ost, error = %e, "OST did not recover in time");
                        return Err(Failure(Errno::EIO));
                    }
                }
                Err(ClientError::Remote(r)) => return Err(Failure(r.errno)),
                Err(ClientError::Conn(_)) => unreachable!("connection errors are retryable"),
            }
        }
    }
}

/// Connections to the MDS.
pub struct MdsPool {
    addr: SocketAddr,
    key: Arc<[u8]>,
    slots: Semaphore,
    idle: Mutex<Vec<MdsClient>>,
    recovery: Duration,
}

impl MdsPool {
    pub fn new(addr: SocketAddr, key: Arc<[u8]>, recovery: Duration) -> MdsPool {
        MdsPool {
            addr,
            key,
            slots: Semaphore::new(MDS_CONNECTIONS),
            idle: Mutex::new(Vec::new()),
            recovery,
        }
    }

    /// Connects once (at mount time: a wrong address or key fails the mount at once).
    pub async fn prime(&self) -> Result<MdsClient, ClientError> {
        Ok(MdsClient::connect(self.addr, &self.key).await?)
    }

    /// Puts a connection into the pool.
    pub fn give(&self, c: MdsClient) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(c);
    }

    async fn once(&self, op: MdsOp) -> Result<MdsReplyBody, ClientError> {
        let popped = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut c = match popped {
            Some(c) => c,
            None => MdsClient::connect(self.addr, &self.key).await?,
        };
        let r = c.call(op).await;
        if !matches!(r, Err(ClientError::Conn(_))) {
            self.give(c);
        }
        r
    }

    /// Runs one metadata operation, resending across an MDS restart (see the module docs for
    /// how non-idempotent operations are replayed).
    pub async fn call(&self, op: MdsOp) -> Result<MdsReplyBody, Failure> {
        let _slot = self
            .slots
            .acquire()
            .await
            .expect("the slot semaphore is never closed");
        let mut backoff = Backoff::new(self.recovery);
        let mut resent = false;
        loop {
            match self.once(op.clone()).await {
                Ok(b) => return Ok(b),
                Err(e) if retryable(&e) => {
                    debug!(error = %e, "MDS request failed; will resend");
                    if !backoff.wait().await {
                        warn!(error = %e, "MDS did not recover in time");
                        return Err(Failure(Errno::EIO));
                    }
                    resent = true;
                }
                Err(ClientError::Remote(r)) if resent => {
                    return self.replayed(&op, r.errno).await;
                }
                Err(ClientError::Remote(r)) => return Err(Failure(r.errno)),
                Err(ClientError::Conn(_)) => unreachable!("connection errors are retryable"),
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
                // The objects of a removed file are not known any more; they stay behind.
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
