//! A simple OSS client: one request at a time on one connection. Used by `lctl` and the tests;
//! the protocol allows pipelining (tags), which a later FUSE client can use.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use pfsqos_core::model::{JobId, Nid};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::conn::{self, ConnError, Reader, ServerInfo, Writer, HANDSHAKE_TIMEOUT};
use crate::mds::{
    decode_mds_reply, Attr, DirPage, FileLayout, IezPrediction, MdsOp, MdsReplyBody, MdsRequest,
    OssReport, Owner, PlacementInfo, SetAttr, StatFs, StripeSpec,
};
use crate::protocol::*;

/// A failed request: the connection failed, or the server answered an error.
#[derive(Debug)]
pub enum ClientError {
    Conn(ConnError),
    Remote(RemoteError),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Conn(e) => write!(f, "{e}"),
            ClientError::Remote(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<ConnError> for ClientError {
    fn from(e: ConnError) -> Self {
        ClientError::Conn(e)
    }
}

impl From<ProtocolError> for ClientError {
    fn from(e: ProtocolError) -> Self {
        ClientError::Conn(e.into())
    }
}

/// Who issues the I/O: the TBF classification fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub job: JobId,
    pub uid: u32,
    pub gid: u32,
    pub nid: Nid,
    /// The job's node count as read from the issuing process's environment, sent with every
    /// RPC ([`WireTags::job_nodes`]); `None`: not known.
    pub job_nodes: Option<u32>,
}

impl Identity {
    /// Job `job`, uid and gid 0, from 127.0.0.1@tcp: the identity the unit tests of this crate
    /// and of the daemons use. Panics on an invalid job id.
    pub fn test(job: &str) -> Identity {
        use pfsqos_core::model::{LNet, NetKind};
        let tcp = LNet {
            kind: NetKind::Tcp,
            num: 0,
        };
        Identity {
            job: JobId::new(job).expect("a valid test job id"),
            uid: 0,
            gid: 0,
            nid: Nid::ipv4(127, 0, 0, 1, tcp),
            job_nodes: None,
        }
    }

    fn wire(&self) -> WireTags {
        WireTags {
            job: self.job.as_str().to_string(),
            uid: self.uid,
            gid: self.gid,
            nid: self.nid.into(),
            job_nodes: self.job_nodes,
        }
    }
}

/// Whether the connection on socket `fd`, with no request outstanding, is dead: the peer
/// closed it (end of stream), reset it (an error is pending), or sent bytes nobody asked for.
/// The protocol is strictly request/reply (a server writes only the reply to a request, and
/// the client reads every reply in full), so an idle connection has nothing to read while it
/// is alive. A non-blocking peek: nothing is consumed and nothing waits. A server that died
/// without its kernel closing the socket (a crashed host) is not seen here.
fn peer_closed(fd: RawFd) -> bool {
    let mut byte = 0u8;
    loop {
        // SAFETY: `fd` is the socket the client's read and write halves own, open for as long
        // as the client (the caller borrows it); `byte` is a valid 1-byte buffer.
        let n = unsafe {
            libc::recv(
                fd,
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            // 0: end of stream; 1: an unsolicited byte.
            return true;
        }
        match std::io::Error::last_os_error().kind() {
            std::io::ErrorKind::WouldBlock => return false,
            std::io::ErrorKind::Interrupted => continue,
            _ => return true,
        }
    }
}

pub struct OssClient {
    reader: Reader<OwnedReadHalf>,
    writer: Writer<OwnedWriteHalf>,
    /// The socket, for [`OssClient::closed_by_peer`]; owned by `reader` and `writer`.
    fd: RawFd,
    info: ServerInfo,
    next_tag: u64,
    /// The outgoing limit the server stated in its last reply that stated one.
    client_limit: ClientLimit,
}

impl OssClient {
    pub async fn connect(addr: SocketAddr, key: &[u8], role: Role) -> Result<Self, ConnError> {
        Self::connect_with_version(addr, key, role, PROTOCOL_VERSION).await
    }

    /// Connects speaking protocol `version` (tests use a wrong one).
    pub async fn connect_with_version(
        addr: SocketAddr,
        key: &[u8],
        role: Role,
        version: u16,
    ) -> Result<Self, ConnError> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let fd = stream.as_raw_fd();
        let (r, w) = stream.into_split();
        let (mut reader, mut writer) = (Reader::new(r), Writer::new(w));
        let info = timeout(
            HANDSHAKE_TIMEOUT,
            conn::client_handshake(&mut reader, &mut writer, key, role, version),
        )
        .await
        .map_err(|_| ConnError::Timeout)??;
        Ok(OssClient {
            reader,
            writer,
            fd,
            info,
            next_tag: 1,
            client_limit: ClientLimit::Unstated,
        })
    }

    pub fn server(&self) -> &ServerInfo {
        &self.info
    }

    /// Whether the server closed or reset this connection while it was idle (see
    /// `peer_closed`). Only meaningful between requests.
    pub fn closed_by_peer(&self) -> bool {
        peer_closed(self.fd)
    }

    /// The outgoing limit the server stated for this client in its latest reply that stated
    /// one ([`ClientLimit::Unstated`] until then); validated on decode.
    pub fn client_limit(&self) -> ClientLimit {
        self.client_limit
    }

    fn tag(&mut self) -> u64 {
        self.next_tag += 1;
        self.next_tag
    }

    async fn reply(&mut self, tag: u64) -> Result<ReplyBody, ClientError> {
        let reply = decode_reply(&self.reader.frame().await?)?;
        if reply.client_limit != ClientLimit::Unstated {
            self.client_limit = reply.client_limit;
        }
        if reply.tag != tag {
            return Err(ProtocolError::Invalid(format!(
                "reply tag {} for request {tag}",
                reply.tag
            ))
            .into());
        }
        reply.result.map_err(ClientError::Remote)
    }

    /// Writes `data` at `offset` without copying it (see [`OssClient::write`]).
    pub async fn write_bytes(
        &mut self,
        id: &Identity,
        ost: u32,
        object: u64,
        offset: u64,
        data: bytes::Bytes,
        sync: bool,
    ) -> Result<(), ClientError> {
        let tag = self.tag();
        let io = WireIo {
            op: IoOp::Write,
            ost,
            object,
            offset,
            length: data.len() as u64,
            sync,
            tags: id.wire(),
        };
        self.writer
            .msg_with_bulk_bytes(&WireRequest::Io { tag, io }, data)
            .await?;
        self.reply(tag).await.map(|_| ())
    }

    /// Reads up to `length` bytes at `offset` as `Bytes` (no copy for reads up to 8 MiB).
    pub async fn read_bytes(
        &mut self,
        id: &Identity,
        ost: u32,
        object: u64,
        offset: u64,
        length: u64,
    ) -> Result<bytes::Bytes, ClientError> {
        let io = WireIo {
            op: IoOp::Read,
            ost,
            object,
            offset,
            length,
            sync: false,
            tags: id.wire(),
        };
        match self.io(io, None).await? {
            ReplyBody::Read { length: got } if got <= length => {
                Ok(self.reader.bulk_bytes(got).await?)
            }
            other => Err(ProtocolError::Invalid(format!("read answered with {other:?}")).into()),
        }
    }

    async fn io(&mut self, io: WireIo, data: Option<&[u8]>) -> Result<ReplyBody, ClientError> {
        let tag = self.tag();
        let req = WireRequest::Io { tag, io };
        match data {
            Some(d) => self.writer.msg_with_bulk(&req, d).await?,
            None => self.writer.msg(&req).await?,
        }
        self.reply(tag).await
    }

    /// Writes `data` at `offset`; returns once the server has it in the file (and on stable
    /// storage when `sync`).
    pub async fn write(
        &mut self,
        id: &Identity,
        ost: u32,
        object: u64,
        offset: u64,
        data: &[u8],
        sync: bool,
    ) -> Result<(), ClientError> {
        let io = WireIo {
            op: IoOp::Write,
            ost,
            object,
            offset,
            length: data.len() as u64,
            sync,
            tags: id.wire(),
        };
        self.io(io, Some(data)).await.map(|_| ())
    }

    /// Reads up to `length` bytes at `offset` (fewer at the end of the object).
    pub async fn read(
        &mut self,
        id: &Identity,
        ost: u32,
        object: u64,
        offset: u64,
        length: u64,
    ) -> Result<Vec<u8>, ClientError> {
        let io = WireIo {
            op: IoOp::Read,
            ost,
            object,
            offset,
            length,
            sync: false,
            tags: id.wire(),
        };
        match self.io(io, None).await? {
            ReplyBody::Read { length: got } if got <= length => Ok(self.reader.bulk(got).await?),
            other => Err(ProtocolError::Invalid(format!("read answered with {other:?}")).into()),
        }
    }

    /// Truncates the object to `size` bytes.
    pub async fn punch(
        &mut self,
        id: &Identity,
        ost: u32,
        object: u64,
        size: u64,
    ) -> Result<(), ClientError> {
        let io = WireIo {
            op: IoOp::Punch,
            ost,
            object,
            offset: size,
            length: 0,
            sync: false,
            tags: id.wire(),
        };
        self.io(io, None).await.map(|_| ())
    }

    pub async fn sync(&mut self, id: &Identity, ost: u32, object: u64) -> Result<(), ClientError> {
        let io = WireIo {
            op: IoOp::Sync,
            ost,
            object,
            offset: 0,
            length: 0,
            sync: true,
            tags: id.wire(),
        };
        self.io(io, None).await.map(|_| ())
    }

    /// Node `nid`'s current outgoing limit as this server's controller set it
    /// ([`WireRequest::LimitQuery`]): answered without entering the server's NRS queue.
    /// Binds the connection to `nid` if no request bound it yet; [`ClientLimit::Unstated`]
    /// when the server could not (its client table is full).
    pub async fn query_limit(&mut self, nid: Nid) -> Result<ClientLimit, ClientError> {
        let tag = self.tag();
        self.writer
            .msg(&WireRequest::LimitQuery {
                tag,
                nid: nid.into(),
            })
            .await?;
        let reply = decode_reply(&self.reader.frame().await?)?;
        if reply.tag != tag {
            return Err(ProtocolError::Invalid(format!(
                "reply tag {} for request {tag}",
                reply.tag
            ))
            .into());
        }
        reply.result.map_err(ClientError::Remote)?;
        if reply.client_limit != ClientLimit::Unstated {
            self.client_limit = reply.client_limit;
        }
        Ok(reply.client_limit)
    }

    /// One request outside the I/O path, answered by one reply of the same tag.
    async fn call(
        &mut self,
        make: impl FnOnce(u64) -> WireRequest,
    ) -> Result<ReplyBody, ClientError> {
        let tag = self.tag();
        self.writer.msg(&make(tag)).await?;
        self.reply(tag).await
    }

    /// Removes `objects` (at most [`DESTROY_OBJECTS_MAX`]) of OST `ost` (role `Mds`).
    pub async fn destroy(&mut self, ost: u32, objects: &[u64]) -> Result<(), ClientError> {
        let objects = objects.to_vec();
        match self
            .call(|tag| WireRequest::Destroy { tag, ost, objects })
            .await?
        {
            ReplyBody::Done => Ok(()),
            other => Err(ProtocolError::Invalid(format!("destroy answered with {other:?}")).into()),
        }
    }

    /// Up to `max` object ids of OST `ost` above `after`, ascending, and whether it has more
    /// (role `Mds`).
    pub async fn list_objects(
        &mut self,
        ost: u32,
        after: u64,
        max: u32,
    ) -> Result<(Vec<u64>, bool), ClientError> {
        match self
            .call(|tag| WireRequest::ListObjects {
                tag,
                ost,
                after,
                max,
            })
            .await?
        {
            ReplyBody::Objects { objects, more } => Ok((objects, more)),
            other => Err(ProtocolError::Invalid(format!("listing answered with {other:?}")).into()),
        }
    }

    /// `lctl get_param PATTERN`: matching parameters in name order. The names come first,
    /// then each value in a request of its own, so that a pattern matching many large values
    /// (`obdfilter.*.job_stats` with thousands of jobs) never needs one oversized reply.
    pub async fn get_param(&mut self, pattern: &str) -> Result<Vec<Param>, ClientError> {
        let names = self.list_params(pattern).await?;
        let mut params = Vec::with_capacity(names.len());
        for name in names {
            let mut got = self.get_params_at_once(&name).await?;
            match (got.pop(), got.is_empty()) {
                (Some(p), true) if p.name == name => params.push(p),
                _ => {
                    return Err(ProtocolError::Invalid(format!(
                        "get_param {name} answered with other parameters"
                    ))
                    .into())
                }
            }
        }
        Ok(params)
    }

    /// Sends the parameter request `make(tag)` and returns its reply.
    async fn param_request(
        &mut self,
        make: impl FnOnce(u64) -> WireRequest,
    ) -> Result<ReplyBody, ClientError> {
        let tag = self.tag();
        self.writer.msg(&make(tag)).await?;
        self.reply(tag).await
    }

    /// The names of the parameters `pattern` matches, in name order.
    pub async fn list_params(&mut self, pattern: &str) -> Result<Vec<String>, ClientError> {
        let pattern = pattern.to_string();
        match self
            .param_request(|tag| WireRequest::ListParams { tag, pattern })
            .await?
        {
            ReplyBody::Names(n) => Ok(n),
            other => Err(ProtocolError::Invalid(format!("list_params answered {other:?}")).into()),
        }
    }

    /// Every parameter `pattern` matches, in one reply (`EOVERFLOW` when their values exceed
    /// [`PARAM_REPLY_BYTES_MAX`]).
    pub async fn get_params_at_once(&mut self, pattern: &str) -> Result<Vec<Param>, ClientError> {
        let pattern = pattern.to_string();
        let body = self
            .param_request(|tag| WireRequest::GetParam { tag, pattern })
            .await?;
        self.params(body, "get_param").await
    }

    /// Reads the values that follow a `Params` reply.
    async fn params(&mut self, body: ReplyBody, what: &str) -> Result<Vec<Param>, ClientError> {
        match body {
            ReplyBody::Params(headers) => {
                let values = self.reader.bulk(params_bulk_len(&headers)).await?;
                Ok(params_from_wire(headers, &values)?)
            }
            other => Err(ProtocolError::Invalid(format!("{what} answered {other:?}")).into()),
        }
    }

    /// `lctl set_param PATTERN=VALUE`: the parameters that were set.
    pub async fn set_param(
        &mut self,
        pattern: &str,
        value: &str,
    ) -> Result<Vec<Param>, ClientError> {
        let (pattern, value) = (pattern.to_string(), value.to_string());
        let body = self
            .param_request(|tag| WireRequest::SetParam {
                tag,
                pattern,
                value,
            })
            .await?;
        self.params(body, "set_param").await
    }

    /// Sends one batch of synchronization messages (a peer ossd, [`Role::Oss`]) and waits
    /// until the receiver has handed them to its schedulers.
    pub async fn send_sync_batch(&mut self, batch: WireSyncBatch) -> Result<(), ClientError> {
        let tag = self.tag();
        self.writer.msg(&WireRequest::Sync { tag, batch }).await?;
        match self.reply(tag).await? {
            ReplyBody::Done => Ok(()),
            other => Err(ProtocolError::Invalid(format!("sync answered {other:?}")).into()),
        }
    }

    /// Sends raw bytes as one frame (tests of hostile input).
    pub async fn send_raw_frame(&mut self, body: Vec<u8>) -> Result<(), ConnError> {
        self.writer.frame(body).await
    }

    /// Waits for the next frame (tests: to see the server close the connection).
    pub async fn next_frame(&mut self) -> Result<Vec<u8>, ConnError> {
        Ok(self.reader.frame().await?.to_vec())
    }
}

/// A metadata client: one request at a time on one connection. Every call is one MDS
/// operation; errors the server answers come back as [`ClientError::Remote`] with the errno.
pub struct MdsClient {
    reader: Reader<OwnedReadHalf>,
    writer: Writer<OwnedWriteHalf>,
    /// The socket, for [`MdsClient::closed_by_peer`]; owned by `reader` and `writer`.
    fd: RawFd,
    info: ServerInfo,
    next_tag: u64,
}

impl MdsClient {
    /// A file system client (role `Client`, the cluster key).
    pub async fn connect(addr: SocketAddr, key: &[u8]) -> Result<Self, ConnError> {
        Self::connect_as(addr, key, Role::Client).await
    }

    /// Connects claiming `role`: an ossd reports its statistics as [`Role::Oss`], proving the
    /// servers' key where the MDS has one, so a client cannot forge them.
    pub async fn connect_as(addr: SocketAddr, key: &[u8], role: Role) -> Result<Self, ConnError> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let fd = stream.as_raw_fd();
        let (r, w) = stream.into_split();
        let (mut reader, mut writer) = (Reader::new(r), Writer::new(w));
        let info = timeout(
            HANDSHAKE_TIMEOUT,
            conn::client_handshake(&mut reader, &mut writer, key, role, PROTOCOL_VERSION),
        )
        .await
        .map_err(|_| ConnError::Timeout)??;
        Ok(MdsClient {
            reader,
            writer,
            fd,
            info,
            next_tag: 1,
        })
    }

    /// File system name and total OST count from the handshake.
    pub fn server(&self) -> &ServerInfo {
        &self.info
    }

    /// Whether the server closed or reset this connection while it was idle (see
    /// `peer_closed`). Only meaningful between requests.
    pub fn closed_by_peer(&self) -> bool {
        peer_closed(self.fd)
    }

    /// Sends one operation and waits for its reply.
    pub async fn call(&mut self, op: MdsOp) -> Result<MdsReplyBody, ClientError> {
        self.next_tag += 1;
        let tag = self.next_tag;
        self.writer.msg(&MdsRequest { tag, op }).await?;
        let reply = decode_mds_reply(&self.reader.frame().await?)?;
        if reply.tag != tag {
            return Err(ProtocolError::Invalid(format!(
                "reply tag {} for request {tag}",
                reply.tag
            ))
            .into());
        }
        reply.result.map_err(ClientError::Remote)
    }

    fn unexpected<T>(what: &str, body: MdsReplyBody) -> Result<T, ClientError> {
        Err(ProtocolError::Invalid(format!("{what} answered {body:?}")).into())
    }

    pub async fn create(
        &mut self,
        parent: u64,
        name: &[u8],
        owner: Owner,
        stripe: Option<StripeSpec>,
    ) -> Result<(Attr, FileLayout), ClientError> {
        let op = MdsOp::Create {
            parent,
            name: name.to_vec(),
            owner,
            stripe,
        };
        match self.call(op).await? {
            MdsReplyBody::Created(a, l) => Ok((a, l)),
            b => Self::unexpected("create", b),
        }
    }

    pub async fn mkdir(
        &mut self,
        parent: u64,
        name: &[u8],
        owner: Owner,
    ) -> Result<Attr, ClientError> {
        let op = MdsOp::Mkdir {
            parent,
            name: name.to_vec(),
            owner,
        };
        self.attr("mkdir", op).await
    }

    async fn attr(&mut self, what: &str, op: MdsOp) -> Result<Attr, ClientError> {
        match self.call(op).await? {
            MdsReplyBody::Attr(a) => Ok(a),
            b => Self::unexpected(what, b),
        }
    }

    pub async fn lookup(&mut self, parent: u64, name: &[u8]) -> Result<Attr, ClientError> {
        let op = MdsOp::Lookup {
            parent,
            name: name.to_vec(),
        };
        self.attr("lookup", op).await
    }

    pub async fn getattr(&mut self, ino: u64) -> Result<Attr, ClientError> {
        self.attr("getattr", MdsOp::GetAttr { ino }).await
    }

    /// Changes attributes; a size change is a truncate the MDS records. Punching the objects
    /// on the OSSs (with [`OssClient::punch`]) is the caller's job.
    pub async fn setattr(&mut self, ino: u64, set: SetAttr) -> Result<Attr, ClientError> {
        self.attr("setattr", MdsOp::SetAttr { ino, set }).await
    }

    pub async fn layout(&mut self, ino: u64) -> Result<FileLayout, ClientError> {
        match self.call(MdsOp::GetLayout { ino }).await? {
            MdsReplyBody::Layout(l) => Ok(l),
            b => Self::unexpected("layout", b),
        }
    }

    /// One page of at most `max` entries after cursor `after` (0 to start).
    pub async fn readdir(
        &mut self,
        dir: u64,
        after: u64,
        max: u32,
    ) -> Result<DirPage, ClientError> {
        match self.call(MdsOp::ReadDir { dir, after, max }).await? {
            MdsReplyBody::Dir(p) => Ok(p),
            b => Self::unexpected("readdir", b),
        }
    }

    /// Removes a file; returns its layout (the MDS destroys its objects).
    pub async fn unlink(&mut self, parent: u64, name: &[u8]) -> Result<FileLayout, ClientError> {
        let op = MdsOp::Unlink {
            parent,
            name: name.to_vec(),
        };
        match self.call(op).await? {
            MdsReplyBody::Removed(Some(l)) => Ok(l),
            b => Self::unexpected("unlink", b),
        }
    }

    pub async fn rmdir(&mut self, parent: u64, name: &[u8]) -> Result<(), ClientError> {
        let op = MdsOp::Rmdir {
            parent,
            name: name.to_vec(),
        };
        match self.call(op).await? {
            MdsReplyBody::Done => Ok(()),
            b => Self::unexpected("rmdir", b),
        }
    }

    /// Returns the layout of a file the rename replaced (the MDS destroys its objects).
    pub async fn rename(
        &mut self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
    ) -> Result<Option<FileLayout>, ClientError> {
        let op = MdsOp::Rename {
            parent,
            name: name.to_vec(),
            new_parent,
            new_name: new_name.to_vec(),
        };
        match self.call(op).await? {
            MdsReplyBody::Removed(l) => Ok(l),
            b => Self::unexpected("rename", b),
        }
    }

    /// `lfs setstripe` on a directory (`None` clears it).
    pub async fn set_dir_stripe(
        &mut self,
        dir: u64,
        spec: Option<StripeSpec>,
    ) -> Result<(), ClientError> {
        match self.call(MdsOp::SetDirStripe { dir, spec }).await? {
            MdsReplyBody::Done => Ok(()),
            b => Self::unexpected("setstripe", b),
        }
    }

    pub async fn dir_stripe(&mut self, dir: u64) -> Result<Option<StripeSpec>, ClientError> {
        match self.call(MdsOp::GetDirStripe { dir }).await? {
            MdsReplyBody::DirStripe(s) => Ok(s),
            b => Self::unexpected("getstripe", b),
        }
    }

    /// File system name, OSTs with their ossd addresses, inode counts, default layout.
    /// Sends an ossd's statistics (iez's periodic report).
    pub async fn report_oss(&mut self, report: OssReport) -> Result<(), ClientError> {
        match self.call(MdsOp::ReportOss(report)).await? {
            MdsReplyBody::Done => Ok(()),
            b => Self::unexpected("reportoss", b),
        }
    }

    /// Loads an application's predicted files; returns (rows stored, rows planned now).
    pub async fn iez_load(
        &mut self,
        app: &str,
        files: Vec<IezPrediction>,
    ) -> Result<(u32, u32), ClientError> {
        let op = MdsOp::IezLoad {
            app: app.to_string(),
            files,
        };
        match self.call(op).await? {
            MdsReplyBody::IezLoaded { files, planned } => Ok((files, planned)),
            b => Self::unexpected("iezload", b),
        }
    }

    /// Which placement chose a file's layout.
    pub async fn placement(&mut self, ino: u64) -> Result<PlacementInfo, ClientError> {
        match self.call(MdsOp::GetPlacement { ino }).await? {
            MdsReplyBody::Placement(p) => Ok(p),
            b => Self::unexpected("getplacement", b),
        }
    }

    /// An inode's path from the root.
    pub async fn path(&mut self, ino: u64) -> Result<Vec<u8>, ClientError> {
        match self.call(MdsOp::GetPath { ino }).await? {
            MdsReplyBody::Path(p) => Ok(p),
            b => Self::unexpected("getpath", b),
        }
    }

    pub async fn statfs(&mut self) -> Result<StatFs, ClientError> {
        match self.call(MdsOp::StatFs).await? {
            MdsReplyBody::StatFs(s) => Ok(s),
            b => Self::unexpected("statfs", b),
        }
    }

    /// Sends raw bytes as one frame (tests of hostile input).
    pub async fn send_raw_frame(&mut self, body: Vec<u8>) -> Result<(), ConnError> {
        self.writer.frame(body).await
    }

    /// Waits for the next frame (tests: to see the server close the connection).
    pub async fn next_frame(&mut self) -> Result<Vec<u8>, ConnError> {
        Ok(self.reader.frame().await?.to_vec())
    }
}
