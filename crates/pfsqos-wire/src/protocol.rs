//! The pfsqos wire protocol: length-prefixed frames carrying postcard messages, bulk data as
//! raw frames, and a versioned handshake authenticated by a shared cluster key.
//!
//! # Frames
//! Every frame is a 4-byte big-endian length followed by that many bytes (tokio-util's
//! `LengthDelimitedCodec`); a frame longer than [`FRAME_LEN_BYTES_MAX`] closes the connection
//! before its body is read. A message frame holds one postcard-encoded message and nothing
//! else (trailing bytes are an error). Bulk data follows its message as raw frames of exactly
//! `min(BULK_CHUNK_BYTES, remaining)` bytes each, so a 64 MiB write is 8 frames of 8 MiB.
//!
//! # Handshake
//! ```text
//! client                                   server
//! Hello { magic, version, role, nonce_c } ->
//!                                       <- HelloReply::Challenge { magic, version, nonce_s }
//!                                          (or Reject { reason } and close)
//! Auth { mac_c }                          ->
//!                                       <- AuthReply::Welcome { mac_s, fsname, ost_count }
//!                                          (or Reject { reason } and close)
//! ```
//! `mac_c = HMAC-SHA256(key, "pfsqos-client" | version | role | nonce_c | nonce_s)` and
//! `mac_s` the same with `"pfsqos-server"`; both sides verify in constant time, so each proves
//! it holds the key without sending it, and a fresh nonce from each side defeats replay.
//! The magic and version are decoded before the rest of `Hello`, so a peer speaking another
//! version gets a clear rejection rather than a decode error.
//!
//! # Requests
//! After the handshake the client sends [`Request`]s, each with a `tag` it chooses; the server
//! answers each with one [`Reply`] carrying the same tag, possibly out of order (requests are
//! scheduled). Every field is validated on decode ([`decode_request`]): sizes, offsets, names,
//! the job id (through [`JobId::new`]), the NID, the OST index. Every reply also states the
//! server's current outgoing limit for the client ([`ClientLimit`], bounds checked by
//! [`decode_reply`]): how a controller in an ossd reaches the client nodes. A node that is not a
//! mount asks for its limit with [`WireRequest::LimitQuery`], which the server answers without
//! scheduling it.

use hmac::{Hmac, Mac};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid, Opcode, RpcTags};
use pfsqos_core::sched::sfq::SYNC_INSTANCES_MAX;
use pfsqos_core::sched::{ReportKind, ServiceReport, SERVICE_REPORT_COST_MAX};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use sha2::Sha256;
use std::fmt;

/// First bytes of every `Hello` and `HelloReply::Challenge`.
pub const MAGIC: [u8; 4] = *b"PFSQ";
/// Protocol version this build speaks; peers must match exactly.
/// Version 2: parameter values travel as bulk data after their reply (`ReplyBody::Params`), and
/// `ListParams` names the parameters a pattern matches.
/// Version 3: every reply carries the server's outgoing limit for the client
/// ([`Reply::client_limit`]).
/// Version 4: ossds exchange DSFQ synchronization batches ([`Role::Oss`],
/// [`WireRequest::Sync`]).
/// Version 5: an I/O request carries its job's node count as the client read it
/// ([`WireTags::job_nodes`]).
/// Version 6: a client asks for its node's limit outside the NRS queue
/// ([`WireRequest::LimitQuery`]), and the MDS takes iez's operations (`MdsOp::ReportOss`,
/// `IezLoad`, `GetPlacement`, `GetPath`), which an MDS of version 5 closes the connection on.
/// Version 7: a coordinator's reply to an agent carries each user's or group's first-sight
/// share on the agent's OSS (`coord::CoordReply::first_sight`), a field a version-6 agent
/// would misread as trailing bytes.
/// Version 8: the MDS destroys the objects of removed files and lists an OST's objects to
/// find orphans ([`WireRequest::Destroy`], [`WireRequest::ListObjects`]).
pub const PROTOCOL_VERSION: u16 = 8;
/// Most objects one [`WireRequest::Destroy`] names.
pub const DESTROY_OBJECTS_MAX: usize = 1024;
/// Most objects one [`ReplyBody::Objects`] lists.
pub const LIST_OBJECTS_MAX: u32 = 4096;
/// Largest node count a request may state for its job (the AdapTBF and Static BW priority
/// basis): the bound the ossd's `--job-nodes` takes too.
pub const JOB_NODES_MAX: u32 = pfsqos_core::lustre::JOB_NODES_MAX;
/// Largest bulk frame: bulk data is split into chunks of this size.
pub const BULK_CHUNK_BYTES: usize = 8 << 20;
/// Largest frame of any kind: one bulk chunk plus room for a header.
pub const FRAME_LEN_BYTES_MAX: usize = BULK_CHUNK_BYTES + 4096;
/// Largest I/O of one request: Lustre's maximum `brw_size` (64 MiB).
pub const IO_LEN_BYTES_MAX: u64 = 64 << 20;
/// Largest object offset + length (16 TiB, ext4's file size limit).
pub const OBJECT_END_BYTES_MAX: u64 = 16 << 40;
/// Largest OST count an OSS may serve (Lustre indexes OSTs with 16 bits).
pub const OST_COUNT_MAX: u32 = 1 << 16;
/// Longest parameter name or pattern.
pub const PARAM_NAME_LEN_MAX: usize = 256;
/// Longest value a `set_param` may carry (Lustre's rule commands are < 4096 bytes).
pub const PARAM_VALUE_LEN_MAX: usize = 4096;
/// Most parameters one `get_param` reply may carry.
pub const PARAMS_PER_REPLY_MAX: usize = 1024;
/// Most value bytes one `get_param` reply may carry, as bulk frames after the reply. One OST's
/// `job_stats` at `JOBS_PER_OST_MAX` (16,384) jobs of about 2.3 KB each is about 38 MB, so any
/// single parameter fits; a pattern matching many large parameters is answered `EOVERFLOW`,
/// and the client fetches name by name instead ([`crate::client::OssClient::get_param`]).
pub const PARAM_REPLY_BYTES_MAX: u64 = 64 << 20;
/// Longest text of a rejection reason or error message.
pub const MESSAGE_LEN_MAX: usize = 1024;
/// Longest file system name (Lustre: 8 characters).
pub const FSNAME_LEN_MAX: usize = 8;
/// Nonce length of the challenge-response.
pub const NONCE_BYTES: usize = 32;
/// HMAC-SHA256 output length.
pub const MAC_BYTES: usize = 32;

/// What kind of peer is connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// A file system client: object I/O only.
    Client,
    /// An administrator's `lctl`: parameters only.
    Lctl,
    /// The metadata server: object I/O and parameters.
    Mds,
    /// Another ossd of the cluster: synchronization batches only.
    Oss,
}

impl Role {
    fn byte(self) -> u8 {
        match self {
            Role::Client => 1,
            Role::Lctl => 2,
            Role::Mds => 3,
            Role::Oss => 4,
        }
    }

    /// Roles a client node must never assume, so a peer claiming one proves the servers' own
    /// key ([`crate::conn::ServerKeys`]): an ossd's peer (`Oss`: DSFQ
    /// service reports, iez's statistics), the MDS (`Mds`: any object, parameters, destroys)
    /// and an administrator's `Lctl` (`set_param` of TBF rules and policies, `job_stats`
    /// of every job, the coordinator's agents), which on Lustre needs root on a server
    /// (lustre/utils/lctl.c writes the server's `/proc/fs/lustre` and `/sys/fs/lustre`).
    /// Only `Client` is what every node holding the cluster key may be.
    pub fn is_server_role(self) -> bool {
        !matches!(self, Role::Client)
    }

    pub fn may_do_io(self) -> bool {
        matches!(self, Role::Client | Role::Mds)
    }

    pub fn may_use_params(self) -> bool {
        matches!(self, Role::Lctl | Role::Mds)
    }

    /// Only a peer ossd reports the service its schedulers gave: a client that could inject
    /// reports would charge other jobs for service they never received.
    pub fn may_sync(self) -> bool {
        matches!(self, Role::Oss)
    }

    /// Only the MDS, which knows which objects live files reference, removes objects or
    /// lists them (Lustre's MDT destroys the objects of an unlinked file, never its clients).
    pub fn may_destroy(self) -> bool {
        matches!(self, Role::Mds)
    }
}

/// The rest of a `Hello` after its magic and version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloBody {
    pub role: Role,
    pub nonce: [u8; NONCE_BYTES],
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HelloReply {
    Challenge {
        magic: [u8; 4],
        version: u16,
        nonce: [u8; NONCE_BYTES],
    },
    Reject {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auth {
    pub mac: [u8; MAC_BYTES],
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthReply {
    Welcome {
        mac: [u8; MAC_BYTES],
        fsname: String,
        ost_count: u32,
    },
    Reject {
        reason: String,
    },
}

/// Object operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IoOp {
    /// Read `length` bytes at `offset`; the reply says how many were read (short at EOF) and
    /// the data follows as bulk frames.
    Read,
    /// Write `length` bytes at `offset`; the data follows the request as bulk frames.
    Write,
    /// Truncate the object to `offset` bytes (`length` must be 0).
    Punch,
    /// Flush the object to stable storage (`offset` and `length` must be 0).
    Sync,
}

impl IoOp {
    pub fn opcode(self) -> Opcode {
        match self {
            IoOp::Read => Opcode::OstRead,
            IoOp::Write => Opcode::OstWrite,
            // Lustre sends OST_SYNC on ost_io too; pfsqos's model has no ost_sync, and a
            // sync is a write-side cost, so it is classified with the punches.
            IoOp::Punch | IoOp::Sync => Opcode::OstPunch,
        }
    }
}

/// A client NID as carried on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireNid {
    pub addr: u32,
    /// Index into [`NetKind::ALL`].
    pub net_kind: u8,
    pub net_num: u32,
}

impl From<Nid> for WireNid {
    fn from(n: Nid) -> Self {
        WireNid {
            addr: n.addr,
            net_kind: NetKind::ALL
                .iter()
                .position(|k| *k == n.net.kind)
                .expect("every NetKind is in ALL") as u8,
            net_num: n.net.num,
        }
    }
}

/// Request identity as on the wire (validated into [`RpcTags`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireTags {
    pub job: String,
    pub uid: u32,
    pub gid: u32,
    pub nid: WireNid,
    /// The job's node count as the client read it from the issuing process's environment
    /// (`SLURM_JOB_NUM_NODES`), 1..=[`JOB_NODES_MAX`]; `None` when it had none.
    ///
    /// Sent with every RPC rather than with a job's first RPC on a connection: it costs one
    /// byte (`None`) to five (a varint) on RPCs of kilobytes to megabytes, keeps no
    /// per-connection state on either side, and an ossd that restarted or forgot the job
    /// (its table is bounded) learns it again from the next RPC, not from the next
    /// connection.
    pub job_nodes: Option<u32>,
}

/// An object I/O request as on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireIo {
    pub op: IoOp,
    pub ost: u32,
    pub object: u64,
    pub offset: u64,
    pub length: u64,
    /// Writes: acknowledge only after the data is on stable storage.
    pub sync: bool,
    pub tags: WireTags,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireRequest {
    Io {
        tag: u64,
        io: WireIo,
    },
    GetParam {
        tag: u64,
        pattern: String,
    },
    SetParam {
        tag: u64,
        pattern: String,
        value: String,
    },
    /// The names a pattern matches, without values.
    ListParams {
        tag: u64,
        pattern: String,
    },
    /// Synchronization messages of the sender's distributed schedulers (DSFQ), answered
    /// `Done` once every message was handed to the receiver's schedulers.
    Sync {
        tag: u64,
        batch: WireSyncBatch,
    },
    /// The sender's node asks for its current outgoing limit (role `Client` only): the reply
    /// is `Done` and states the limit for node `nid` in its [`Reply::client_limit`]. It binds
    /// the connection to `nid` as a first I/O request would (so a controller sees the node),
    /// and the server answers it on the connection's own task from the limit its controller
    /// last set, never through the NRS queue: a node that limits its traffic by other means
    /// (`pfsqos tc-client`) learns a new limit as soon as it asks, however deep the queue of
    /// I/O. Added in protocol version 6.
    LimitQuery {
        tag: u64,
        nid: WireNid,
    },
    /// Removes objects of OST `ost` (role `Mds` only; at most [`DESTROY_OBJECTS_MAX`]),
    /// answered `Done` once every one is gone from the OST's storage; an object that does not
    /// exist is already destroyed. Added in protocol version 8.
    Destroy {
        tag: u64,
        ost: u32,
        objects: Vec<u64>,
    },
    /// The objects OST `ost` stores with ids above `after`, in id order, at most `max`
    /// (1..=[`LIST_OBJECTS_MAX`]), answered [`ReplyBody::Objects`] (role `Mds` only: the
    /// MDS's sweep for orphans). Added in protocol version 8.
    ListObjects {
        tag: u64,
        ost: u32,
        after: u64,
        max: u32,
    },
}

/// A validated object I/O request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoRequest {
    pub op: IoOp,
    pub ost: u32,
    pub object: u64,
    pub offset: u64,
    pub length: u64,
    pub sync: bool,
    pub tags: RpcTags,
    /// The job's node count as the client stated it ([`WireTags::job_nodes`]), checked
    /// to be within 1..=[`JOB_NODES_MAX`].
    pub job_nodes: Option<u32>,
}

/// A validated request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Io {
        tag: u64,
        io: IoRequest,
    },
    GetParam {
        tag: u64,
        pattern: String,
    },
    SetParam {
        tag: u64,
        pattern: String,
        value: String,
    },
    ListParams {
        tag: u64,
        pattern: String,
    },
    Sync {
        tag: u64,
        batch: SyncBatch,
    },
    LimitQuery {
        tag: u64,
        nid: Nid,
    },
    Destroy {
        tag: u64,
        ost: u32,
        objects: Vec<u64>,
    },
    ListObjects {
        tag: u64,
        ost: u32,
        after: u64,
        max: u32,
    },
}

impl Request {
    pub fn tag(&self) -> u64 {
        match self {
            Request::Io { tag, .. }
            | Request::GetParam { tag, .. }
            | Request::SetParam { tag, .. }
            | Request::ListParams { tag, .. }
            | Request::Sync { tag, .. }
            | Request::LimitQuery { tag, .. }
            | Request::Destroy { tag, .. }
            | Request::ListObjects { tag, .. } => *tag,
        }
    }
}

/// Most synchronization messages one [`WireRequest::Sync`] carries. A sender with more sends
/// several batches; 1,024 messages are about 100 KB, well within [`SYNC_FRAME_LEN_BYTES_MAX`].
pub const SYNC_BATCH_LEN_MAX: usize = 1024;
/// Largest frame a `Sync` request may be: [`SYNC_BATCH_LEN_MAX`] messages of the largest
/// encoding ([`SYNC_MESSAGE_ENCODED_BYTES_MAX`]) plus the request's own fields, rounded up.
/// A larger frame is refused before it is decoded.
pub const SYNC_FRAME_LEN_BYTES_MAX: usize = 128 << 10;
/// Largest postcard encoding of one [`WireSyncMessage`]: varints of at most 5 (u32) and 10
/// (u64) bytes, the kind and opcode 1 byte each, the job id 1 + 31 bytes.
pub const SYNC_MESSAGE_ENCODED_BYTES_MAX: usize =
    5 + 10 + 1 + 10 + (1 + 31) + (5 + 1 + 5) + 1 + 4 * 5;

/// What a synchronization message says (`pfsqos_core::sched::ReportKind` on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireReportKind {
    Service,
    FlowArrived,
    FlowLeft,
    LayoutAudit,
}

impl From<ReportKind> for WireReportKind {
    fn from(k: ReportKind) -> Self {
        match k {
            ReportKind::Service => WireReportKind::Service,
            ReportKind::FlowArrived => WireReportKind::FlowArrived,
            ReportKind::FlowLeft => WireReportKind::FlowLeft,
            ReportKind::LayoutAudit => WireReportKind::LayoutAudit,
        }
    }
}

impl From<WireReportKind> for ReportKind {
    fn from(k: WireReportKind) -> Self {
        match k {
            WireReportKind::Service => ReportKind::Service,
            WireReportKind::FlowArrived => ReportKind::FlowArrived,
            WireReportKind::FlowLeft => ReportKind::FlowLeft,
            WireReportKind::LayoutAudit => ReportKind::LayoutAudit,
        }
    }
}

/// A flow key as on the wire: every field of [`RpcTags`], since a scheduler's classification
/// may keep any of them (the fields it does not classify by are blank).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFlow {
    pub job: String,
    pub nid: WireNid,
    /// Index into [`Opcode::ALL`].
    pub opcode: u8,
    pub uid: u32,
    pub gid: u32,
    pub projid: u32,
    pub nodemap: u32,
}

impl From<&RpcTags> for WireFlow {
    fn from(t: &RpcTags) -> Self {
        WireFlow {
            job: t.job.as_str().to_string(),
            nid: t.nid.into(),
            opcode: Opcode::ALL
                .iter()
                .position(|o| *o == t.opcode)
                .expect("every Opcode is in ALL") as u8,
            uid: t.uid,
            gid: t.gid,
            projid: t.projid,
            nodemap: t.nodemap,
        }
    }
}

/// One synchronization message: a scheduler instance's report on one flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireSyncMessage {
    /// The sending instance's cluster-wide number (below `SYNC_INSTANCES_MAX`).
    pub from_instance: u32,
    /// The sending instance's count of messages before this one, within the sender's
    /// [`WireSyncBatch::sender_epoch`]: a receiver sees lost messages as gaps and refuses
    /// repeats.
    pub seq: u64,
    pub kind: WireReportKind,
    /// In the policy's cost unit; at most `SERVICE_REPORT_COST_MAX`, 0 for presence reports.
    pub cost: u64,
    pub flow: WireFlow,
}

/// A batch of synchronization messages from one ossd.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireSyncBatch {
    /// Chosen at random when the sending ossd starts: a restarted sender numbers its messages
    /// from 0 again, and the receiver must not take them for repeats.
    pub sender_epoch: u64,
    pub messages: Vec<WireSyncMessage>,
}

impl WireSyncBatch {
    /// A batch of validated messages (the sender's side: what it got from its schedulers).
    pub fn from_messages(sender_epoch: u64, messages: &[SyncItem]) -> WireSyncBatch {
        assert!(
            messages.len() <= SYNC_BATCH_LEN_MAX,
            "a batch holds at most {SYNC_BATCH_LEN_MAX} messages"
        );
        WireSyncBatch {
            sender_epoch,
            messages: messages
                .iter()
                .map(|m| WireSyncMessage {
                    from_instance: m.from_instance,
                    seq: m.seq,
                    kind: m.report.kind.into(),
                    cost: m.report.cost,
                    flow: (&m.report.flow).into(),
                })
                .collect(),
        }
    }
}

/// A validated synchronization message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncItem {
    pub from_instance: u32,
    pub seq: u64,
    pub report: ServiceReport,
}

/// A validated synchronization batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncBatch {
    pub sender_epoch: u64,
    pub messages: Vec<SyncItem>,
}

pub use pfsqos_core::errno::Errno;

/// An error answered by the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteError {
    pub errno: Errno,
    pub message: String,
}

impl RemoteError {
    pub fn new(errno: Errno, message: impl Into<String>) -> RemoteError {
        let mut message = message.into();
        truncate_utf8(&mut message, MESSAGE_LEN_MAX);
        RemoteError { errno, message }
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.errno.description(),
            self.errno.name(),
            self.message
        )
    }
}

impl std::error::Error for RemoteError {}

/// One parameter and its value, as `lctl` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub value: String,
}

/// A parameter as announced in a reply: its value follows as bulk data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamHeader {
    pub name: String,
    pub value_bytes: u64,
}

/// Splits parameters into the headers of a `Params` reply and the bulk data carrying their
/// values back to back; `EOVERFLOW` when the values exceed [`PARAM_REPLY_BYTES_MAX`].
pub fn params_to_wire(params: Vec<Param>) -> Result<(Vec<ParamHeader>, Vec<u8>), RemoteError> {
    let total: u64 = params.iter().map(|p| p.value.len() as u64).sum();
    if total > PARAM_REPLY_BYTES_MAX {
        return Err(RemoteError::new(
            Errno::EOVERFLOW,
            format!(
                "{} parameters with {total} bytes of values exceed the {PARAM_REPLY_BYTES_MAX} \
                 bytes one reply carries; ask for fewer parameters at a time",
                params.len()
            ),
        ));
    }
    if params.len() > PARAMS_PER_REPLY_MAX {
        return Err(RemoteError::new(
            Errno::EOVERFLOW,
            format!(
                "{} parameters match; one reply carries at most {PARAMS_PER_REPLY_MAX}",
                params.len()
            ),
        ));
    }
    let mut bulk = Vec::with_capacity(total as usize);
    let headers = params
        .into_iter()
        .map(|p| {
            bulk.extend_from_slice(p.value.as_bytes());
            ParamHeader {
                name: p.name,
                value_bytes: p.value.len() as u64,
            }
        })
        .collect();
    Ok((headers, bulk))
}

/// Total value bytes announced by validated headers (the bulk length to read).
pub fn params_bulk_len(headers: &[ParamHeader]) -> u64 {
    headers
        .iter()
        .fold(0u64, |total, h| total.saturating_add(h.value_bytes))
}

/// Reassembles parameters from headers and the bulk data that followed them; the bulk must be
/// exactly as long as the headers announce.
pub fn params_from_wire(
    headers: Vec<ParamHeader>,
    bulk: &[u8],
) -> Result<Vec<Param>, ProtocolError> {
    if params_bulk_len(&headers) != bulk.len() as u64 {
        return Err(ProtocolError::Invalid(format!(
            "{} bytes of parameter values for headers announcing {}",
            bulk.len(),
            params_bulk_len(&headers)
        )));
    }
    let mut pos = 0usize;
    headers
        .into_iter()
        .map(|h| {
            let end = pos + h.value_bytes as usize;
            let value = std::str::from_utf8(&bulk[pos..end])
                .map_err(|_| ProtocolError::Invalid(format!("value of {} is not UTF-8", h.name)))?
                .to_string();
            pos = end;
            Ok(Param {
                name: h.name,
                value,
            })
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplyBody {
    /// Write, punch, sync, set_param done.
    Done,
    /// Read done: `length` bytes follow as bulk frames.
    Read { length: u64 },
    /// Parameters matching a `get_param` pattern, or set by a `set_param`, in name order;
    /// their values follow, back to back, as bulk frames of `params_bulk_len` bytes.
    Params(Vec<ParamHeader>),
    /// Names matching a `ListParams` pattern, in name order.
    Names(Vec<String>),
    /// Object ids of a `ListObjects`, ascending; `more`: the OST has objects above the last.
    Objects { objects: Vec<u64>, more: bool },
}

/// Smallest client limit a server may set: 1 MiB/s. The largest RPC (64 MiB) then holds the
/// client's shaper for 64 s, within the time a client keeps a statement without a newer
/// reply (the mount's `LIMIT_LEASE`); a slower limit is a mistake, not a limit.
pub const CLIENT_LIMIT_BYTES_PER_S_MIN: u64 = 1 << 20;
/// Largest client limit a server may set: 1 TiB/s (above any node's link).
pub const CLIENT_LIMIT_BYTES_PER_S_MAX: u64 = 1 << 40;

/// What a reply says about the receiving client's outgoing limit: how a controller running in
/// an ossd reaches the client nodes (`pfsqos_core::control::ClientWrite`). An ossd states its
/// current limit for the client on every reply to a client connection; the client applies it
/// to its node's limiter (docs/live.md, "Client limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientLimit {
    /// Nothing said (replies to `lctl` and the MDS).
    Unstated,
    /// This server sets no limit on the client.
    Unlimited,
    /// This server limits what the client sends to this many bytes per second, within
    /// [`CLIENT_LIMIT_BYTES_PER_S_MIN`]`..=`[`CLIENT_LIMIT_BYTES_PER_S_MAX`].
    BytesPerS(u64),
}

impl ClientLimit {
    /// The stated limit as the client's limiter takes it: `Some(None)` unlimited,
    /// `Some(Some(rate))` limited, `None` not stated.
    pub fn stated(self) -> Option<Option<u64>> {
        match self {
            ClientLimit::Unstated => None,
            ClientLimit::Unlimited => Some(None),
            ClientLimit::BytesPerS(b) => Some(Some(b)),
        }
    }

    /// Checks a stated rate against the bounds.
    pub fn validate(self) -> Result<ClientLimit, ProtocolError> {
        match self {
            ClientLimit::BytesPerS(b)
                if !(CLIENT_LIMIT_BYTES_PER_S_MIN..=CLIENT_LIMIT_BYTES_PER_S_MAX).contains(&b) =>
            {
                Err(ProtocolError::Invalid(format!(
                    "client limit of {b} bytes/s outside \
                     {CLIENT_LIMIT_BYTES_PER_S_MIN}..={CLIENT_LIMIT_BYTES_PER_S_MAX}"
                )))
            }
            ok => Ok(ok),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    pub tag: u64,
    pub result: Result<ReplyBody, RemoteError>,
    /// The server's current outgoing limit for the client (since version 3).
    pub client_limit: ClientLimit,
}

/// Why a frame was refused. Any of these closes the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    Decode(String),
    TrailingBytes(usize),
    BadMagic([u8; 4]),
    Version { got: u16 },
    Invalid(String),
    AuthFailed,
    Rejected(String),
    UnexpectedBulk { expected: usize, got: usize },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Decode(e) => write!(f, "undecodable message: {e}"),
            ProtocolError::TrailingBytes(n) => write!(f, "{n} trailing bytes after message"),
            ProtocolError::BadMagic(m) => write!(f, "bad magic {m:02x?}, not a pfsqos peer"),
            ProtocolError::Version { got } => write!(
                f,
                "protocol version {got} not supported (this side speaks {PROTOCOL_VERSION})"
            ),
            ProtocolError::Invalid(m) => write!(f, "invalid message: {m}"),
            ProtocolError::AuthFailed => write!(f, "authentication failed (wrong cluster key?)"),
            ProtocolError::Rejected(r) => write!(f, "rejected by peer: {r}"),
            ProtocolError::UnexpectedBulk { expected, got } => {
                write!(
                    f,
                    "bulk frame of {got} bytes where {expected} were expected"
                )
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

fn truncate_utf8(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

/// Encodes a message into a frame body.
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    postcard::to_stdvec(msg).expect("postcard encodes every protocol type")
}

/// Decodes a whole frame body as one message; trailing bytes are an error.
pub fn decode<T: DeserializeOwned>(frame: &[u8]) -> Result<T, ProtocolError> {
    let (msg, rest) =
        postcard::take_from_bytes(frame).map_err(|e| ProtocolError::Decode(e.to_string()))?;
    if !rest.is_empty() {
        return Err(ProtocolError::TrailingBytes(rest.len()));
    }
    Ok(msg)
}

/// Encodes a `Hello`: magic and version first, so any version can read them.
pub fn encode_hello(version: u16, body: &HelloBody) -> Vec<u8> {
    let mut out = encode(&(MAGIC, version));
    out.extend(encode(body));
    out
}

/// Decodes a `Hello`, checking magic and version before the body.
pub fn decode_hello(frame: &[u8]) -> Result<HelloBody, ProtocolError> {
    let ((magic, version), rest): (([u8; 4], u16), _) =
        postcard::take_from_bytes(frame).map_err(|e| ProtocolError::Decode(e.to_string()))?;
    if magic != MAGIC {
        return Err(ProtocolError::BadMagic(magic));
    }
    if version != PROTOCOL_VERSION {
        return Err(ProtocolError::Version { got: version });
    }
    decode(rest)
}

type HmacSha256 = Hmac<Sha256>;

fn mac_of(
    key: &[u8],
    side: &[u8],
    role: Role,
    nonce_c: &[u8; NONCE_BYTES],
    nonce_s: &[u8; NONCE_BYTES],
) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(side);
    m.update(&PROTOCOL_VERSION.to_be_bytes());
    m.update(&[role.byte()]);
    m.update(nonce_c);
    m.update(nonce_s);
    m
}

/// The client's proof of the key.
pub fn client_mac(
    key: &[u8],
    role: Role,
    nonce_c: &[u8; NONCE_BYTES],
    nonce_s: &[u8; NONCE_BYTES],
) -> [u8; MAC_BYTES] {
    mac_of(key, b"pfsqos-client", role, nonce_c, nonce_s)
        .finalize()
        .into_bytes()
        .into()
}

/// The server's proof of the key.
pub fn server_mac(
    key: &[u8],
    role: Role,
    nonce_c: &[u8; NONCE_BYTES],
    nonce_s: &[u8; NONCE_BYTES],
) -> [u8; MAC_BYTES] {
    mac_of(key, b"pfsqos-server", role, nonce_c, nonce_s)
        .finalize()
        .into_bytes()
        .into()
}

/// Constant-time check of a peer's MAC.
pub fn verify_mac(
    key: &[u8],
    server_side: bool,
    role: Role,
    nonce_c: &[u8; NONCE_BYTES],
    nonce_s: &[u8; NONCE_BYTES],
    mac: &[u8; MAC_BYTES],
) -> Result<(), ProtocolError> {
    let side: &[u8] = if server_side {
        b"pfsqos-server"
    } else {
        b"pfsqos-client"
    };
    mac_of(key, side, role, nonce_c, nonce_s)
        .verify_slice(mac)
        .map_err(|_| ProtocolError::AuthFailed)
}

/// A fresh random nonce.
pub fn nonce() -> std::io::Result<[u8; NONCE_BYTES]> {
    let mut n = [0; NONCE_BYTES];
    getrandom::fill(&mut n).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(n)
}

/// Parameter names and patterns: 1..=256 bytes of `[A-Za-z0-9._-]` and the pattern characters
/// lctl takes (`/` as a separator; glob(3)'s `* ? [ ] ! ^ { } , \`). A server checks request
/// patterns itself and answers a bad one with `EINVAL` (a bad name never closes a connection);
/// names in replies are checked here.
pub fn validate_param_name(name: &str) -> Result<(), ProtocolError> {
    if name.is_empty() || name.len() > PARAM_NAME_LEN_MAX {
        return Err(ProtocolError::Invalid(format!(
            "parameter name of {} bytes (1..={PARAM_NAME_LEN_MAX} allowed)",
            name.len()
        )));
    }
    if let Some(c) = name.chars().find(|c| {
        !(c.is_ascii_alphanumeric()
            || matches!(
                c,
                '.' | '_' | '-' | '/' | '*' | '?' | '[' | ']' | '!' | '^' | '{' | '}' | ',' | '\\'
            ))
    }) {
        return Err(ProtocolError::Invalid(format!(
            "character {c:?} in parameter name"
        )));
    }
    Ok(())
}

fn validate_tags(t: &WireTags, op: IoOp) -> Result<RpcTags, ProtocolError> {
    let job = JobId::new(&t.job).map_err(|e| ProtocolError::Invalid(e.to_string()))?;
    Ok(RpcTags {
        job,
        nid: validate_nid(&t.nid)?,
        opcode: op.opcode(),
        uid: t.uid,
        gid: t.gid,
        ..RpcTags::default()
    })
}

/// Validates an I/O request against the server's OST count.
pub fn validate_io(io: &WireIo, ost_count: u32) -> Result<IoRequest, ProtocolError> {
    let bad = |m: String| Err(ProtocolError::Invalid(m));
    if io.ost >= ost_count {
        return bad(format!(
            "OST index {} out of range (this OSS serves {ost_count})",
            io.ost
        ));
    }
    match io.op {
        IoOp::Read | IoOp::Write => {
            if io.length == 0 || io.length > IO_LEN_BYTES_MAX {
                return bad(format!(
                    "I/O length {} outside 1..={IO_LEN_BYTES_MAX}",
                    io.length
                ));
            }
        }
        IoOp::Punch => {
            if io.length != 0 {
                return bad("punch carries its size in offset; length must be 0".into());
            }
        }
        IoOp::Sync => {
            if io.length != 0 || io.offset != 0 {
                return bad("sync takes no offset or length".into());
            }
        }
    }
    match io.offset.checked_add(io.length) {
        Some(end) if end <= OBJECT_END_BYTES_MAX => {}
        _ => {
            return bad(format!(
                "object range {}+{} beyond {OBJECT_END_BYTES_MAX}",
                io.offset, io.length
            ))
        }
    }
    if let Some(nodes) = io.tags.job_nodes {
        if !(1..=JOB_NODES_MAX).contains(&nodes) {
            return bad(format!(
                "job node count {nodes} outside 1..={JOB_NODES_MAX}"
            ));
        }
    }
    Ok(IoRequest {
        op: io.op,
        ost: io.ost,
        object: io.object,
        offset: io.offset,
        length: io.length,
        sync: io.sync,
        tags: validate_tags(&io.tags, io.op)?,
        job_nodes: io.tags.job_nodes,
    })
}

fn validate_nid(n: &WireNid) -> Result<Nid, ProtocolError> {
    let kind = NetKind::ALL
        .get(n.net_kind as usize)
        .copied()
        .ok_or_else(|| ProtocolError::Invalid(format!("LNet kind {}", n.net_kind)))?;
    Ok(Nid {
        addr: n.addr,
        net: LNet {
            kind,
            num: n.net_num,
        },
    })
}

/// Checks every field of a synchronization message: the instance number, the cost bound (a
/// presence report carries none), the job id, the NID's network kind and the opcode. Whether
/// the flow is one the receiver's schedulers can have is theirs to say (`deliver_sync`).
pub fn validate_sync_message(m: &WireSyncMessage) -> Result<SyncItem, ProtocolError> {
    let bad = |m: String| Err(ProtocolError::Invalid(m));
    if m.from_instance >= SYNC_INSTANCES_MAX {
        return bad(format!(
            "sync instance {} (at most {})",
            m.from_instance,
            SYNC_INSTANCES_MAX - 1
        ));
    }
    let job = JobId::new(&m.flow.job).map_err(|e| ProtocolError::Invalid(e.to_string()))?;
    let opcode = Opcode::ALL
        .get(m.flow.opcode as usize)
        .copied()
        .ok_or_else(|| ProtocolError::Invalid(format!("opcode {}", m.flow.opcode)))?;
    let flow = RpcTags {
        job,
        nid: validate_nid(&m.flow.nid)?,
        opcode,
        uid: m.flow.uid,
        gid: m.flow.gid,
        projid: m.flow.projid,
        nodemap: m.flow.nodemap,
    };
    let report = ServiceReport::new(m.kind.into(), flow, m.cost);
    if let Err(e) = report.validate() {
        return bad(format!(
            "sync report refused: {e:?} (costs at most {SERVICE_REPORT_COST_MAX}, none on \
             presence reports)"
        ));
    }
    Ok(SyncItem {
        from_instance: m.from_instance,
        seq: m.seq,
        report,
    })
}

/// Checks a synchronization batch: 1..=[`SYNC_BATCH_LEN_MAX`] messages, each valid.
pub fn validate_sync_batch(b: &WireSyncBatch) -> Result<SyncBatch, ProtocolError> {
    if b.messages.is_empty() || b.messages.len() > SYNC_BATCH_LEN_MAX {
        return Err(ProtocolError::Invalid(format!(
            "sync batch of {} messages (1..={SYNC_BATCH_LEN_MAX} allowed)",
            b.messages.len()
        )));
    }
    Ok(SyncBatch {
        sender_epoch: b.sender_epoch,
        messages: b
            .messages
            .iter()
            .map(validate_sync_message)
            .collect::<Result<_, _>>()?,
    })
}

/// Decodes and validates one request frame.
pub fn decode_request(frame: &[u8], ost_count: u32) -> Result<Request, ProtocolError> {
    let request = decode::<WireRequest>(frame)?;
    if matches!(request, WireRequest::Sync { .. }) && frame.len() > SYNC_FRAME_LEN_BYTES_MAX {
        return Err(ProtocolError::Invalid(format!(
            "sync frame of {} bytes (at most {SYNC_FRAME_LEN_BYTES_MAX})",
            frame.len()
        )));
    }
    match request {
        WireRequest::Io { tag, io } => Ok(Request::Io {
            tag,
            io: validate_io(&io, ost_count)?,
        }),
        // Patterns are checked by the server, which answers a bad one with an error: the frame
        // bound already limits their length.
        WireRequest::GetParam { tag, pattern } => Ok(Request::GetParam { tag, pattern }),
        WireRequest::SetParam {
            tag,
            pattern,
            value,
        } => {
            if value.len() > PARAM_VALUE_LEN_MAX {
                return Err(ProtocolError::Invalid(format!(
                    "parameter value of {} bytes (at most {PARAM_VALUE_LEN_MAX})",
                    value.len()
                )));
            }
            Ok(Request::SetParam {
                tag,
                pattern,
                value,
            })
        }
        WireRequest::ListParams { tag, pattern } => Ok(Request::ListParams { tag, pattern }),
        WireRequest::Sync { tag, batch } => Ok(Request::Sync {
            tag,
            batch: validate_sync_batch(&batch)?,
        }),
        WireRequest::LimitQuery { tag, nid } => Ok(Request::LimitQuery {
            tag,
            nid: validate_nid(&nid)?,
        }),
        WireRequest::Destroy { tag, ost, objects } => {
            check_ost(ost, ost_count)?;
            if objects.is_empty() || objects.len() > DESTROY_OBJECTS_MAX {
                return Err(ProtocolError::Invalid(format!(
                    "destroy of {} objects (1..={DESTROY_OBJECTS_MAX})",
                    objects.len()
                )));
            }
            Ok(Request::Destroy { tag, ost, objects })
        }
        WireRequest::ListObjects {
            tag,
            ost,
            after,
            max,
        } => {
            check_ost(ost, ost_count)?;
            if !(1..=LIST_OBJECTS_MAX).contains(&max) {
                return Err(ProtocolError::Invalid(format!(
                    "object listing of {max} (1..={LIST_OBJECTS_MAX})"
                )));
            }
            Ok(Request::ListObjects {
                tag,
                ost,
                after,
                max,
            })
        }
    }
}

fn check_ost(ost: u32, ost_count: u32) -> Result<(), ProtocolError> {
    if ost >= ost_count {
        return Err(ProtocolError::Invalid(format!("OST {ost} of {ost_count}")));
    }
    Ok(())
}

/// Validates a reply (client side): message lengths, parameter counts and names.
pub fn decode_reply(frame: &[u8]) -> Result<Reply, ProtocolError> {
    let reply: Reply = decode(frame)?;
    reply.client_limit.validate()?;
    match &reply.result {
        Err(e) if e.message.len() > MESSAGE_LEN_MAX => {
            return Err(ProtocolError::Invalid("error message too long".into()))
        }
        Ok(ReplyBody::Read { length }) if *length > IO_LEN_BYTES_MAX => {
            return Err(ProtocolError::Invalid(format!(
                "read reply of {length} bytes"
            )))
        }
        Ok(ReplyBody::Params(ps)) => {
            if ps.len() > PARAMS_PER_REPLY_MAX {
                return Err(ProtocolError::Invalid(format!("{} parameters", ps.len())));
            }
            let mut total = 0u64;
            for p in ps {
                validate_param_name(&p.name)?;
                total = total.saturating_add(p.value_bytes);
            }
            if total > PARAM_REPLY_BYTES_MAX {
                return Err(ProtocolError::Invalid(format!(
                    "{total} bytes of parameter values announced (at most {PARAM_REPLY_BYTES_MAX})"
                )));
            }
        }
        Ok(ReplyBody::Objects { objects, .. })
            if objects.len() > LIST_OBJECTS_MAX as usize
                || objects.windows(2).any(|w| w[0] >= w[1]) =>
        {
            return Err(ProtocolError::Invalid(format!(
                "object listing of {} ids, not ascending or more than {LIST_OBJECTS_MAX}",
                objects.len()
            )))
        }
        Ok(ReplyBody::Names(ns)) => {
            if ns.len() > PARAMS_PER_REPLY_MAX {
                return Err(ProtocolError::Invalid(format!("{} names", ns.len())));
            }
            for n in ns {
                validate_param_name(n)?;
            }
        }
        _ => {}
    }
    Ok(reply)
}

/// Sizes of the bulk frames that carry `length` bytes.
pub fn bulk_chunks(length: u64) -> impl Iterator<Item = usize> {
    let chunk = BULK_CHUNK_BYTES as u64;
    let full = length / chunk;
    let rest = (length % chunk) as usize;
    (0..full)
        .map(|_| BULK_CHUNK_BYTES)
        .chain((rest > 0).then_some(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn io(op: IoOp, offset: u64, length: u64) -> WireIo {
        WireIo {
            op,
            ost: 0,
            object: 7,
            offset,
            length,
            sync: false,
            tags: WireTags {
                job: "dd.0".into(),
                uid: 1,
                gid: 2,
                nid: WireNid {
                    addr: 0,
                    net_kind: 0,
                    net_num: 0,
                },
                job_nodes: Some(3),
            },
        }
    }

    fn req(io: WireIo) -> Vec<u8> {
        encode(&WireRequest::Io { tag: 1, io })
    }

    #[test]
    fn valid_requests_decode() {
        let r = decode_request(&req(io(IoOp::Write, 4096, 1 << 20)), 2).unwrap();
        let Request::Io { tag: 1, io } = r else {
            panic!("{r:?}")
        };
        assert_eq!(io.tags.job.as_str(), "dd.0");
        assert_eq!(io.tags.opcode, Opcode::OstWrite);
        assert_eq!(io.tags.nid.to_string(), "0@lo");
        assert_eq!(io.job_nodes, Some(3));
    }

    #[test]
    fn every_field_is_checked() {
        let cases: Vec<(WireIo, &str)> = vec![
            (io(IoOp::Write, 0, 0), "length"),
            (io(IoOp::Read, 0, IO_LEN_BYTES_MAX + 1), "length"),
            (io(IoOp::Read, u64::MAX, 1), "range"),
            (io(IoOp::Punch, 0, 5), "punch"),
            (io(IoOp::Sync, 1, 0), "sync"),
            (
                WireIo {
                    ost: 2,
                    ..io(IoOp::Read, 0, 1)
                },
                "OST index",
            ),
            (
                WireIo {
                    tags: WireTags {
                        job: "x".repeat(32),
                        ..io(IoOp::Read, 0, 1).tags
                    },
                    ..io(IoOp::Read, 0, 1)
                },
                "job id",
            ),
            (
                WireIo {
                    tags: WireTags {
                        job_nodes: Some(0),
                        ..io(IoOp::Read, 0, 1).tags
                    },
                    ..io(IoOp::Read, 0, 1)
                },
                "node count",
            ),
            (
                WireIo {
                    tags: WireTags {
                        job_nodes: Some(JOB_NODES_MAX + 1),
                        ..io(IoOp::Read, 0, 1).tags
                    },
                    ..io(IoOp::Read, 0, 1)
                },
                "node count",
            ),
            (
                WireIo {
                    tags: WireTags {
                        nid: WireNid {
                            addr: 0,
                            net_kind: 9,
                            net_num: 0,
                        },
                        ..io(IoOp::Read, 0, 1).tags
                    },
                    ..io(IoOp::Read, 0, 1)
                },
                "LNet kind",
            ),
        ];
        for (w, what) in cases {
            let e = decode_request(&req(w), 2).unwrap_err().to_string();
            assert!(e.contains(what), "{e} lacks {what}");
        }
        let long = encode(&WireRequest::SetParam {
            tag: 0,
            pattern: "a".into(),
            value: "v".repeat(PARAM_VALUE_LEN_MAX + 1),
        });
        assert!(decode_request(&long, 1).is_err());
        // Patterns reach the server, which answers a bad one (EINVAL) instead of closing.
        let name = encode(&WireRequest::GetParam {
            tag: 0,
            pattern: "a b\n".into(),
        });
        assert!(decode_request(&name, 1).is_ok());
        assert!(validate_param_name("a b").is_err());
        assert!(validate_param_name("obdfilter/*/job_stats").is_ok());
        assert!(validate_param_name("x.OST000[01].{a,b}?").is_ok());
        let mut trailing = req(io(IoOp::Read, 0, 1));
        trailing.push(0);
        assert_eq!(
            decode_request(&trailing, 1),
            Err(ProtocolError::TrailingBytes(1))
        );
    }

    #[test]
    fn hello_checks_magic_and_version_first() {
        let body = HelloBody {
            role: Role::Lctl,
            nonce: [3; NONCE_BYTES],
        };
        assert_eq!(
            decode_hello(&encode_hello(PROTOCOL_VERSION, &body)).unwrap(),
            body
        );
        assert_eq!(
            decode_hello(&encode_hello(9, &body)),
            Err(ProtocolError::Version { got: 9 })
        );
        // A peer of the previous version (replies without a client limit) is refused at the
        // handshake, with a message naming both versions.
        let older = decode_hello(&encode_hello(PROTOCOL_VERSION - 1, &body)).unwrap_err();
        assert_eq!(
            older,
            ProtocolError::Version {
                got: PROTOCOL_VERSION - 1
            }
        );
        assert!(older
            .to_string()
            .contains(&format!("this side speaks {PROTOCOL_VERSION}")));
        let mut bad = encode_hello(PROTOCOL_VERSION, &body);
        bad[0] = b'X';
        assert!(matches!(
            decode_hello(&bad),
            Err(ProtocolError::BadMagic(_))
        ));
    }

    #[test]
    fn macs_bind_key_side_role_and_nonces() {
        let (c, s) = ([1; NONCE_BYTES], [2; NONCE_BYTES]);
        let m = client_mac(b"key", Role::Client, &c, &s);
        assert!(verify_mac(b"key", false, Role::Client, &c, &s, &m).is_ok());
        assert!(verify_mac(b"other", false, Role::Client, &c, &s, &m).is_err());
        assert!(verify_mac(b"key", true, Role::Client, &c, &s, &m).is_err());
        assert!(verify_mac(b"key", false, Role::Mds, &c, &s, &m).is_err());
        assert!(verify_mac(b"key", false, Role::Client, &s, &c, &m).is_err());
        assert_ne!(server_mac(b"key", Role::Client, &c, &s), m);
    }

    /// The object store's messages are bounded: a destroy names 1..=DESTROY_OBJECTS_MAX
    /// objects of an existing OST, a listing asks for 1..=LIST_OBJECTS_MAX, and a listing
    /// reply is ascending and bounded; only the MDS's role may send them.
    #[test]
    fn destroy_and_listing_are_bounded_and_the_mds_s_alone() {
        let destroy = |ost, n: u64| {
            decode_request(
                &encode(&WireRequest::Destroy {
                    tag: 1,
                    ost,
                    objects: (1..=n).collect(),
                }),
                2,
            )
        };
        assert!(matches!(destroy(1, 3), Ok(Request::Destroy { ost: 1, .. })));
        assert!(destroy(1, DESTROY_OBJECTS_MAX as u64).is_ok());
        for bad in [
            destroy(2, 1),
            destroy(0, 0),
            destroy(0, DESTROY_OBJECTS_MAX as u64 + 1),
        ] {
            assert!(bad.is_err(), "{bad:?}");
        }
        let list = |ost, max| {
            decode_request(
                &encode(&WireRequest::ListObjects {
                    tag: 1,
                    ost,
                    after: 5,
                    max,
                }),
                2,
            )
        };
        assert!(list(0, LIST_OBJECTS_MAX).is_ok());
        assert!(list(0, 0).is_err() && list(0, LIST_OBJECTS_MAX + 1).is_err());
        assert!(list(2, 1).is_err());
        let reply = |objects: Vec<u64>| {
            decode_reply(&encode(&Reply {
                tag: 1,
                result: Ok(ReplyBody::Objects {
                    objects,
                    more: false,
                }),
                client_limit: ClientLimit::Unstated,
            }))
        };
        assert!(reply(vec![1, 2, 9]).is_ok());
        assert!(reply(vec![2, 2]).is_err() && reply(vec![3, 1]).is_err());
        assert!(reply((0..u64::from(LIST_OBJECTS_MAX) + 1).collect()).is_err());
        let may: Vec<Role> = [Role::Client, Role::Lctl, Role::Mds, Role::Oss]
            .into_iter()
            .filter(|r| r.may_destroy())
            .collect();
        assert_eq!(may, [Role::Mds]);
    }

    #[test]
    fn params_travel_as_headers_and_bulk() {
        let params = vec![
            Param {
                name: "a.b".into(),
                value: "one\n".into(),
            },
            Param {
                name: "a.c".into(),
                value: String::new(),
            },
            Param {
                name: "a.d".into(),
                value: "é\n".into(),
            },
        ];
        let (headers, bulk) = params_to_wire(params.clone()).unwrap();
        assert_eq!(params_bulk_len(&headers), bulk.len() as u64);
        assert_eq!(params_from_wire(headers.clone(), &bulk).unwrap(), params);
        // Values that do not add up, or are not UTF-8, are refused.
        assert!(params_from_wire(headers.clone(), &bulk[1..]).is_err());
        let mut broken = bulk.clone();
        let last = broken.len() - 2;
        broken[last] = 0xff;
        assert!(params_from_wire(headers, &broken).is_err());
        // Too much for one reply: EOVERFLOW from the server, refusal at the client.
        let big = vec![Param {
            name: "x".into(),
            value: "y".repeat(PARAM_REPLY_BYTES_MAX as usize + 1),
        }];
        assert_eq!(params_to_wire(big).unwrap_err().errno, Errno::EOVERFLOW);
        let announce = |sizes: &[u64]| {
            encode(&Reply {
                tag: 1,
                client_limit: ClientLimit::Unstated,
                result: Ok(ReplyBody::Params(
                    sizes
                        .iter()
                        .map(|&value_bytes| ParamHeader {
                            name: "x".into(),
                            value_bytes,
                        })
                        .collect(),
                )),
            })
        };
        assert!(decode_reply(&announce(&[PARAM_REPLY_BYTES_MAX])).is_ok());
        assert!(decode_reply(&announce(&[PARAM_REPLY_BYTES_MAX, 1])).is_err());
        assert!(decode_reply(&announce(&[u64::MAX, u64::MAX])).is_err());
    }

    #[test]
    fn client_limits_in_replies_are_bounded() {
        let reply = |client_limit| {
            encode(&Reply {
                tag: 1,
                result: Ok(ReplyBody::Done),
                client_limit,
            })
        };
        for ok in [
            ClientLimit::Unstated,
            ClientLimit::Unlimited,
            ClientLimit::BytesPerS(CLIENT_LIMIT_BYTES_PER_S_MIN),
            ClientLimit::BytesPerS(CLIENT_LIMIT_BYTES_PER_S_MAX),
        ] {
            assert_eq!(decode_reply(&reply(ok)).unwrap().client_limit, ok);
        }
        for bad in [
            0,
            CLIENT_LIMIT_BYTES_PER_S_MIN - 1,
            CLIENT_LIMIT_BYTES_PER_S_MAX + 1,
            u64::MAX,
        ] {
            let e = decode_reply(&reply(ClientLimit::BytesPerS(bad))).unwrap_err();
            assert!(e.to_string().contains("client limit"), "{e}");
        }
        assert_eq!(ClientLimit::Unstated.stated(), None);
        assert_eq!(ClientLimit::Unlimited.stated(), Some(None));
        assert_eq!(ClientLimit::BytesPerS(7).stated(), Some(Some(7)));
    }

    #[test]
    fn limit_queries_decode_with_their_nid_checked() {
        let nid = Nid::ipv4(
            10,
            0,
            0,
            2,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        );
        let frame = encode(&WireRequest::LimitQuery {
            tag: 9,
            nid: nid.into(),
        });
        assert_eq!(
            decode_request(&frame, 1).unwrap(),
            Request::LimitQuery { tag: 9, nid }
        );
        assert_eq!(decode_request(&frame, 1).unwrap().tag(), 9);
        let bad = encode(&WireRequest::LimitQuery {
            tag: 9,
            nid: WireNid {
                addr: 1,
                net_kind: u8::MAX,
                net_num: 0,
            },
        });
        let e = decode_request(&bad, 1).unwrap_err();
        assert!(e.to_string().contains("LNet kind"), "{e}");
    }

    fn sync_message(kind: WireReportKind, cost: u64) -> WireSyncMessage {
        WireSyncMessage {
            from_instance: 3,
            seq: 9,
            kind,
            cost,
            flow: (&RpcTags {
                job: JobId::new("app1").unwrap(),
                ..RpcTags::UNKNOWN
            })
                .into(),
        }
    }

    fn sync_frame(messages: Vec<WireSyncMessage>) -> Vec<u8> {
        encode(&WireRequest::Sync {
            tag: 5,
            batch: WireSyncBatch {
                sender_epoch: 77,
                messages,
            },
        })
    }

    #[test]
    fn sync_batches_round_trip() {
        let m = sync_message(WireReportKind::Service, 1 << 20);
        let Request::Sync { tag: 5, batch } =
            decode_request(&sync_frame(vec![m.clone()]), 1).unwrap()
        else {
            panic!()
        };
        assert_eq!(batch.sender_epoch, 77);
        let item = batch.messages[0];
        assert_eq!((item.from_instance, item.seq), (3, 9));
        assert_eq!(item.report.kind, ReportKind::Service);
        assert_eq!(item.report.cost, 1 << 20);
        assert_eq!(item.report.flow.job.as_str(), "app1");
        // The sender's encoding of the validated item is the message it came from.
        assert_eq!(WireSyncBatch::from_messages(77, &[item]).messages, [m]);
    }

    #[test]
    fn every_sync_field_is_checked() {
        let ok = sync_message(WireReportKind::Service, 1);
        let cases: Vec<(WireSyncMessage, &str)> = vec![
            (
                WireSyncMessage {
                    from_instance: SYNC_INSTANCES_MAX,
                    ..ok.clone()
                },
                "sync instance",
            ),
            (
                sync_message(WireReportKind::Service, SERVICE_REPORT_COST_MAX + 1),
                "AbsurdCost",
            ),
            (
                sync_message(WireReportKind::FlowArrived, 1),
                "CostOnPresence",
            ),
            (
                WireSyncMessage {
                    flow: WireFlow {
                        job: "x".repeat(32),
                        ..ok.flow.clone()
                    },
                    ..ok.clone()
                },
                "job id",
            ),
            (
                WireSyncMessage {
                    flow: WireFlow {
                        opcode: Opcode::ALL.len() as u8,
                        ..ok.flow.clone()
                    },
                    ..ok.clone()
                },
                "opcode",
            ),
            (
                WireSyncMessage {
                    flow: WireFlow {
                        nid: WireNid {
                            addr: 0,
                            net_kind: 200,
                            net_num: 0,
                        },
                        ..ok.flow.clone()
                    },
                    ..ok.clone()
                },
                "LNet kind",
            ),
        ];
        for (m, what) in cases {
            let e = decode_request(&sync_frame(vec![m]), 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains(what), "{e} lacks {what}");
        }
        let e = decode_request(&sync_frame(vec![]), 1).unwrap_err();
        assert!(e.to_string().contains("sync batch of 0"), "{e}");
        let e = decode_request(&sync_frame(vec![ok; SYNC_BATCH_LEN_MAX + 1]), 1).unwrap_err();
        assert!(e.to_string().contains("sync batch of 1025"), "{e}");
    }

    /// The largest batch of the largest messages fits the sync frame limit (a sender never
    /// builds a frame its peer refuses), and a larger frame is refused before its messages
    /// are looked at.
    #[test]
    fn the_largest_sync_batch_fits_its_frame_limit() {
        let widest = WireSyncMessage {
            from_instance: SYNC_INSTANCES_MAX - 1,
            seq: u64::MAX,
            kind: WireReportKind::LayoutAudit,
            cost: SERVICE_REPORT_COST_MAX,
            flow: WireFlow {
                job: "j".repeat(31),
                nid: WireNid {
                    addr: u32::MAX,
                    net_kind: 0,
                    net_num: u32::MAX,
                },
                opcode: 0,
                uid: u32::MAX,
                gid: u32::MAX,
                projid: u32::MAX,
                nodemap: u32::MAX,
            },
        };
        assert!(encode(&widest).len() <= SYNC_MESSAGE_ENCODED_BYTES_MAX);
        let frame = sync_frame(vec![widest.clone(); SYNC_BATCH_LEN_MAX]);
        assert!(frame.len() <= SYNC_FRAME_LEN_BYTES_MAX, "{}", frame.len());
        assert!(decode_request(&frame, 1).is_ok());
        // Padding the job id past its limit makes a frame beyond the bound: refused by size.
        let fat = WireSyncMessage {
            flow: WireFlow {
                job: "j".repeat(200),
                ..widest.flow
            },
            ..widest
        };
        let e = decode_request(&sync_frame(vec![fat; SYNC_BATCH_LEN_MAX]), 1).unwrap_err();
        assert!(e.to_string().contains("sync frame of"), "{e}");
    }

    #[test]
    fn only_a_peer_ossd_may_sync() {
        for role in [Role::Client, Role::Lctl, Role::Mds] {
            assert!(!role.may_sync());
        }
        assert!(Role::Oss.may_sync());
        assert!(!Role::Oss.may_do_io() && !Role::Oss.may_use_params());
    }

    #[test]
    fn bulk_chunking() {
        assert_eq!(bulk_chunks(1).collect::<Vec<_>>(), [1]);
        assert_eq!(
            bulk_chunks(IO_LEN_BYTES_MAX).collect::<Vec<_>>(),
            [BULK_CHUNK_BYTES; 8]
        );
        assert_eq!(
            bulk_chunks(BULK_CHUNK_BYTES as u64 + 5).collect::<Vec<_>>(),
            [BULK_CHUNK_BYTES, 5]
        );
    }

    proptest! {
        #[test]
        fn decoders_never_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_request(&bytes, 4);
            let _ = decode_reply(&bytes);
            let _ = decode_hello(&bytes);
            let _ = decode::<Auth>(&bytes);
            let _ = decode::<AuthReply>(&bytes);
            let _ = decode::<HelloReply>(&bytes);
        }

        #[test]
        fn mutated_valid_frames_never_panic(pos in 0usize..64, byte in any::<u8>()) {
            let mut f = req(io(IoOp::Write, 4096, 1 << 20));
            let i = pos % f.len();
            f[i] = byte;
            let _ = decode_request(&f, 4);
        }
    }
}
