//! Framed connections: the codec with its size limit, message and bulk helpers, and both
//! sides of the handshake.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use crate::protocol::{self, *};

/// How long a client waits for a server to complete the handshake. Servers give peers less:
/// [`crate::admission::SERVER_HANDSHAKE_TIMEOUT`].
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest frame a server reads from a peer still in the handshake: a `Hello` is 42 bytes
/// as the issue measured (magic, a varint version, role, nonce) and an `Auth` 32; this leaves room
/// for nothing else, so an unauthenticated peer cannot make the server buffer more.
pub const HANDSHAKE_FRAME_LEN_MAX: usize = 64;

/// Why a connection ended or failed.
#[derive(Debug)]
pub enum ConnError {
    Io(std::io::Error),
    Protocol(ProtocolError),
    Closed,
    Timeout,
    /// Admission gave this unauthenticated connection's slot to a source holding fewer
    /// (see [`crate::admission`]).
    Evicted,
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "I/O error: {e}"),
            ConnError::Protocol(e) => write!(f, "{e}"),
            ConnError::Closed => write!(f, "connection closed by peer"),
            ConnError::Timeout => write!(f, "handshake timed out"),
            ConnError::Evicted => write!(f, "handshake slot given to another source"),
        }
    }
}

impl std::error::Error for ConnError {}

impl From<std::io::Error> for ConnError {
    fn from(e: std::io::Error) -> Self {
        ConnError::Io(e)
    }
}

impl From<ProtocolError> for ConnError {
    fn from(e: ProtocolError) -> Self {
        ConnError::Protocol(e)
    }
}

/// Where received bulk data starts in memory: a page, what `O_DIRECT` asks of a buffer on
/// common devices (logical blocks of 512 or 4096 bytes).
pub const BULK_ALIGN_BYTES: usize = 4096;

/// The frame codec every pfsqos connection uses.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(FRAME_LEN_BYTES_MAX)
        .new_codec()
}

/// Reading half of a connection.
pub struct Reader<R> {
    inner: FramedRead<R, LengthDelimitedCodec>,
}

/// Writing half of a connection.
pub struct Writer<W> {
    inner: FramedWrite<Counted<W>, LengthDelimitedCodec>,
}

/// Bytes a [`Writer`] has handed to its connection so far, readable while a send is under way:
/// a server watches it to close a connection whose peer stopped reading (its replies would
/// otherwise hold their memory for as long as the peer likes).
#[derive(Clone, Debug, Default)]
pub struct SendProgress(Arc<AtomicU64>);

impl SendProgress {
    /// Bytes accepted by the connection since the writer was made (monotonic).
    pub fn bytes(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, n: usize) {
        self.0.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// A writer that counts the bytes its inner writer accepted into a [`SendProgress`].
struct Counted<W> {
    inner: W,
    progress: SendProgress,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.progress.add(n);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            self.progress.add(n);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<R: AsyncRead + Unpin> Reader<R> {
    pub fn new(r: R) -> Self {
        Reader {
            inner: FramedRead::new(r, codec()),
        }
    }

    /// Sets the largest frame accepted from now on; a longer one is refused as its length
    /// arrives, before its body is read or buffered.
    pub fn set_frame_len_max(&mut self, len: usize) {
        assert!(
            len <= FRAME_LEN_BYTES_MAX,
            "frame limit above the protocol's"
        );
        self.inner.decoder_mut().set_max_frame_length(len);
    }

    /// The next frame; `Closed` at a clean end of stream.
    pub async fn frame(&mut self) -> Result<BytesMut, ConnError> {
        match self.inner.next().await {
            Some(Ok(f)) => Ok(f),
            Some(Err(e)) => Err(e.into()),
            None => Err(ConnError::Closed),
        }
    }

    /// Reads `length` bytes of bulk data as `Bytes` that start on a [`BULK_ALIGN_BYTES`]
    /// boundary, so the ossd can hand a received write to `O_DIRECT` as it is. The frames'
    /// bodies are read from the socket straight into that buffer: only what the codec had
    /// already read past the last message (at most its small read buffer) is copied. Each
    /// frame's length is checked against the chunking of `length`; the caller bounds `length`.
    pub async fn bulk_bytes(&mut self, length: u64) -> Result<Bytes, ConnError> {
        let (data, _) = self
            .bulk_bytes_reserving(length, None, |_| std::future::ready(()))
            .await?;
        Ok(data)
    }

    /// [`Reader::bulk_bytes`] for a server that must not let a slow or stalled sender hold
    /// memory it has not filled: `reserve(n)` is awaited as each frame's length (`n` bytes)
    /// arrives, before its body is read, and its results are returned with the data (a
    /// stalled sender holds the frames it sent and one more, not the whole announced
    /// length); with `idle`, every wait for the sender (a frame's length, each read of its
    /// body) that lasts longer fails the read. Waiting for `reserve` is not idling.
    pub async fn bulk_bytes_reserving<F, Fut, P>(
        &mut self,
        length: u64,
        idle: Option<Duration>,
        mut reserve: F,
    ) -> Result<(Bytes, Vec<P>), ConnError>
    where
        F: FnMut(usize) -> Fut,
        Fut: std::future::Future<Output = P>,
    {
        if length == 0 {
            return Ok((Bytes::new(), Vec::new()));
        }
        let len = usize::try_from(length).map_err(|_| {
            ProtocolError::Invalid(format!("bulk of {length} bytes does not fit in memory"))
        })?;
        let idle_error = |idle: Duration| {
            ConnError::from(ProtocolError::Invalid(format!(
                "no bulk data received for {idle:?}"
            )))
        };
        let mut held = Vec::new();
        // Capacity only (address space): pages are touched as the frames arrive.
        let mut buf = BytesMut::with_capacity(len + BULK_ALIGN_BYTES - 1);
        let pad = buf.as_ptr().align_offset(BULK_ALIGN_BYTES);
        buf.put_bytes(0, pad);
        for expected in protocol::bulk_chunks(length) {
            let mut head = [0u8; 4];
            match idle {
                Some(d) => tokio::time::timeout(d, self.read_exact_raw(&mut head))
                    .await
                    .map_err(|_| idle_error(d))??,
                None => self.read_exact_raw(&mut head).await?,
            }
            let got = u32::from_be_bytes(head) as usize;
            if got != expected {
                return Err(ProtocolError::UnexpectedBulk { expected, got }.into());
            }
            held.push(reserve(got).await);
            let end = buf.len() + got;
            let buffered = self.inner.read_buffer_mut();
            let take = buffered.len().min(got);
            buf.extend_from_slice(&buffered[..take]);
            buffered.advance(take);
            while buf.len() < end {
                let room = end - buf.len();
                let mut limited = (&mut buf).limit(room);
                let read = self.inner.get_mut().read_buf(&mut limited);
                let n = match idle {
                    Some(d) => tokio::time::timeout(d, read)
                        .await
                        .map_err(|_| idle_error(d))??,
                    None => read.await?,
                };
                if n == 0 {
                    return Err(ConnError::Closed);
                }
            }
        }
        // Never reallocated (the capacity was reserved up front), so still aligned.
        debug_assert_eq!(buf[pad..].as_ptr().align_offset(BULK_ALIGN_BYTES), 0);
        Ok((buf.freeze().slice(pad..), held))
    }

    /// Fills `dst` from the bytes the codec has buffered, then from the socket. Only between
    /// frames: the codec then holds no partial frame of its own.
    async fn read_exact_raw(&mut self, dst: &mut [u8]) -> Result<(), ConnError> {
        let buffered = self.inner.read_buffer_mut();
        let take = buffered.len().min(dst.len());
        dst[..take].copy_from_slice(&buffered[..take]);
        buffered.advance(take);
        if take < dst.len() {
            self.inner
                .get_mut()
                .read_exact(&mut dst[take..])
                .await
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => ConnError::Closed,
                    _ => ConnError::Io(e),
                })?;
        }
        Ok(())
    }

    /// Reads `length` bytes of bulk data, checking each frame's size.
    pub async fn bulk(&mut self, length: u64) -> Result<Vec<u8>, ConnError> {
        let mut data = Vec::with_capacity(length as usize);
        for expected in protocol::bulk_chunks(length) {
            let f = self.frame().await?;
            if f.len() != expected {
                return Err(ProtocolError::UnexpectedBulk {
                    expected,
                    got: f.len(),
                }
                .into());
            }
            data.extend_from_slice(&f);
        }
        Ok(data)
    }
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    pub fn new(w: W) -> Self {
        Writer {
            inner: FramedWrite::new(
                Counted {
                    inner: w,
                    progress: SendProgress::default(),
                },
                codec(),
            ),
        }
    }

    /// A handle on how many bytes this writer has handed to its connection (every send
    /// counts, spliced bulk included), to tell a slow peer from one that stopped reading.
    pub fn progress(&self) -> SendProgress {
        self.inner.get_ref().progress.clone()
    }

    /// Sends one raw frame (flushed).
    pub async fn frame(&mut self, body: Vec<u8>) -> Result<(), ConnError> {
        self.inner.send(Bytes::from(body)).await?;
        Ok(())
    }

    pub async fn msg<T: serde::Serialize>(&mut self, msg: &T) -> Result<(), ConnError> {
        self.frame(protocol::encode(msg)).await
    }

    /// Sends a message and its bulk data, flushing once at the end.
    pub async fn msg_with_bulk<T: serde::Serialize>(
        &mut self,
        msg: &T,
        data: &[u8],
    ) -> Result<(), ConnError> {
        self.inner.feed(Bytes::from(protocol::encode(msg))).await?;
        let mut pos = 0;
        for n in protocol::bulk_chunks(data.len() as u64) {
            self.inner
                .feed(Bytes::copy_from_slice(&data[pos..pos + n]))
                .await?;
            pos += n;
        }
        SinkExt::<Bytes>::flush(&mut self.inner).await?;
        Ok(())
    }
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Sends a message and its bulk data without copying the data: the codec would copy every
    /// frame into its buffer, so the frames (the same bytes the codec writes: a 4-byte
    /// big-endian length, then the body) go to the socket straight from `data`, with vectored
    /// writes. Dropped midway, it leaves part of a frame on the wire (so does the codec's
    /// flush): the connection must then be dropped too, as the client pools do (a connection
    /// goes back to its pool only after its request completed).
    pub async fn msg_with_bulk_bytes<T: serde::Serialize>(
        &mut self,
        msg: &T,
        data: Bytes,
    ) -> Result<(), ConnError> {
        let mut head = self.message_frame(msg).await?;
        let w = self.inner.get_mut();
        let mut pos = 0;
        for n in protocol::bulk_chunks(data.len() as u64) {
            head.put_u32(n as u32);
            let mut frames = head.split().freeze().chain(data.slice(pos..pos + n));
            w.write_all_buf(&mut frames).await?;
            pos += n;
        }
        if !head.is_empty() {
            w.write_all_buf(&mut head).await?;
        }
        w.flush().await?;
        Ok(())
    }

    /// The message's frame, ready for bulk frames to follow it, once whatever the codec holds
    /// has gone first (it is empty: every send flushes). Refuses a message over the frame limit.
    async fn message_frame<T: serde::Serialize>(&mut self, msg: &T) -> Result<BytesMut, ConnError> {
        let body = protocol::encode(msg);
        if body.len() > FRAME_LEN_BYTES_MAX {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("message of {} bytes exceeds the frame limit", body.len()),
            )
            .into());
        }
        SinkExt::<Bytes>::flush(&mut self.inner).await?;
        let mut head = BytesMut::with_capacity(body.len() + 8);
        head.put_u32(body.len() as u32);
        head.extend_from_slice(&body);
        Ok(head)
    }

    /// Sends a message and `length` bytes of bulk data produced piece by piece: `next(pos,
    /// len)` gives the `len` bytes at `pos` of the bulk (at most `piece_bytes`) and a guard
    /// that is dropped once they are in the socket, so that a sender whose peer stops reading
    /// holds one piece, not the whole bulk. The frames on the wire are those of
    /// [`Writer::msg_with_bulk_bytes`] (a frame is written in several pieces); dropped
    /// midway, it leaves part of a frame on the wire, so the connection must then be dropped.
    pub async fn msg_with_bulk_pieces<T, F, Fut, G>(
        &mut self,
        msg: &T,
        length: u64,
        piece_bytes: usize,
        mut next: F,
    ) -> Result<(), ConnError>
    where
        T: serde::Serialize,
        F: FnMut(u64, usize) -> Fut,
        Fut: std::future::Future<Output = Result<(Bytes, G), ConnError>>,
    {
        assert!(piece_bytes > 0, "a piece of no bytes would never end");
        let mut head = self.message_frame(msg).await?;
        let w = self.inner.get_mut();
        let mut pos = 0u64;
        for n in protocol::bulk_chunks(length) {
            head.put_u32(n as u32);
            let mut left = n;
            while left > 0 {
                let len = left.min(piece_bytes);
                let (data, guard) = next(pos, len).await?;
                if data.len() != len {
                    return Err(std::io::Error::other(format!(
                        "a bulk piece of {} bytes where {len} were due",
                        data.len()
                    ))
                    .into());
                }
                let mut frames = head.split().freeze().chain(data);
                w.write_all_buf(&mut frames).await?;
                drop(guard);
                pos += len as u64;
                left -= len;
            }
        }
        if !head.is_empty() {
            w.write_all_buf(&mut head).await?;
        }
        w.flush().await?;
        Ok(())
    }
}

impl Writer<tokio::net::tcp::OwnedWriteHalf> {
    /// Sends a message and the bulk data held in `piped` (one frame: a pipe holds at most
    /// 1 MiB), spliced from the pipe into the socket without passing through user space. The
    /// frames on the wire are the codec's, as with [`Writer::msg_with_bulk_bytes`]; dropped
    /// midway, it leaves part of a frame on the wire, so the connection must then be dropped.
    pub async fn msg_with_piped<T: serde::Serialize>(
        &mut self,
        msg: &T,
        mut piped: crate::splice::Piped,
    ) -> Result<(), ConnError> {
        use std::os::fd::AsRawFd;
        let body = protocol::encode(msg);
        if body.len() > FRAME_LEN_BYTES_MAX || piped.len() > BULK_CHUNK_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "message or piped bulk exceeds the frame limit",
            )
            .into());
        }
        SinkExt::<Bytes>::flush(&mut self.inner).await?;
        let mut head = BytesMut::with_capacity(body.len() + 8);
        head.put_u32(body.len() as u32);
        head.extend_from_slice(&body);
        if !piped.is_empty() {
            head.put_u32(piped.len() as u32);
        }
        let w = self.inner.get_mut();
        w.write_all_buf(&mut head).await?;
        // Spliced bytes bypass `Counted`: they are counted here.
        let progress = w.progress.clone();
        let socket: &tokio::net::TcpStream = w.inner.as_ref();
        let mut left = piped.len();
        while left > 0 {
            socket.writable().await?;
            let sent = socket.try_io(tokio::io::Interest::WRITABLE, || {
                // SAFETY: plain descriptors; no memory is lent to the kernel.
                let n = unsafe {
                    libc::splice(
                        piped.read_fd(),
                        std::ptr::null_mut(),
                        socket.as_raw_fd(),
                        std::ptr::null_mut(),
                        left,
                        libc::SPLICE_F_NONBLOCK,
                    )
                };
                if n < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            match sent {
                // The pipe holds `left` bytes, so 0 cannot be its end; the socket is closed.
                Ok(0) => return Err(ConnError::Closed),
                Ok(n) => {
                    left -= n;
                    progress.add(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        piped.set_drained();
        Ok(())
    }
}

/// What the server learnt from a successful handshake.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    pub role: Role,
}

/// Server side of the handshake. On failure the peer has been told why where possible.
/// Frames are limited to [`HANDSHAKE_FRAME_LEN_MAX`] until the peer has authenticated.
pub async fn server_handshake<R, W>(
    r: &mut Reader<R>,
    w: &mut Writer<W>,
    key: &[u8],
    fsname: &str,
    ost_count: u32,
) -> Result<Peer, ConnError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (peer, ()) = server_handshake_admit(r, w, key, fsname, ost_count, |_| Ok(())).await?;
    Ok(peer)
}

/// The keys a server checks its peers against: the cluster key, which every client node
/// holds, and the servers' own key, which only servers and their administrators hold. A peer
/// claiming a server role ([`Role::is_server_role`]: `Oss`, `Mds`, `Lctl`) must prove the
/// server key, so a client's key cannot assume one; `Client` proves the cluster key. Every
/// server that admits clients has both: there is no mode in which a client node's key
/// administers a server.
#[derive(Clone, Copy, Debug)]
pub struct ServerKeys<'a> {
    pub cluster: &'a [u8],
    pub server: &'a [u8],
}

impl<'a> ServerKeys<'a> {
    /// One key every role proves: a server whose every peer holds the same key, such as
    /// the coordinator, whose key only its agents (servers themselves) hold.
    pub fn single(key: &'a [u8]) -> ServerKeys<'a> {
        ServerKeys {
            cluster: key,
            server: key,
        }
    }

    /// The key a peer claiming `role` must prove.
    pub fn for_role(&self, role: Role) -> &'a [u8] {
        if role.is_server_role() {
            self.server
        } else {
            self.cluster
        }
    }
}

/// [`server_handshake`], asking `admit` once the peer has proved it holds the key and before
/// welcoming it: an `Err(reason)` rejects the peer with that reason (so a client refused for
/// a server-side limit learns why at connect time).
pub async fn server_handshake_admit<R, W, T>(
    r: &mut Reader<R>,
    w: &mut Writer<W>,
    key: &[u8],
    fsname: &str,
    ost_count: u32,
    admit: impl FnOnce(&Peer) -> Result<T, String>,
) -> Result<(Peer, T), ConnError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    server_handshake_admit_keys(r, w, ServerKeys::single(key), fsname, ost_count, admit).await
}

/// [`server_handshake_admit`] checking each role against its key ([`ServerKeys::for_role`]).
pub async fn server_handshake_admit_keys<R, W, T>(
    r: &mut Reader<R>,
    w: &mut Writer<W>,
    keys: ServerKeys<'_>,
    fsname: &str,
    ost_count: u32,
    admit: impl FnOnce(&Peer) -> Result<T, String>,
) -> Result<(Peer, T), ConnError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    r.set_frame_len_max(HANDSHAKE_FRAME_LEN_MAX);
    let hello = match protocol::decode_hello(&r.frame().await?) {
        Ok(h) => h,
        Err(e) => {
            let _ = w
                .msg(&HelloReply::Reject {
                    reason: e.to_string(),
                })
                .await;
            return Err(e.into());
        }
    };
    let key = keys.for_role(hello.role);
    let nonce_s = protocol::nonce()?;
    w.msg(&HelloReply::Challenge {
        magic: MAGIC,
        version: PROTOCOL_VERSION,
        nonce: nonce_s,
    })
    .await?;
    let auth: Auth = protocol::decode(&r.frame().await?)?;
    let peer = Peer { role: hello.role };
    // A wrong MAC, then the server's own limits: either is told to the peer, then fails.
    let checked = protocol::verify_mac(key, false, hello.role, &hello.nonce, &nonce_s, &auth.mac)
        .map_err(|e| (e.to_string(), ConnError::from(e)))
        .and_then(|()| {
            admit(&peer).map_err(|reason| (reason.clone(), ProtocolError::Rejected(reason).into()))
        });
    let admitted = match checked {
        Ok(t) => t,
        Err((reason, e)) => {
            let _ = w.msg(&AuthReply::Reject { reason }).await;
            return Err(e);
        }
    };
    w.msg(&AuthReply::Welcome {
        mac: protocol::server_mac(key, hello.role, &hello.nonce, &nonce_s),
        fsname: fsname.to_string(),
        ost_count,
    })
    .await?;
    r.set_frame_len_max(FRAME_LEN_BYTES_MAX);
    Ok((peer, admitted))
}

/// What the client learnt from a successful handshake.
#[derive(Clone, Debug)]
pub struct ServerInfo {
    pub fsname: String,
    pub ost_count: u32,
}

/// Client side of the handshake; `version` is a parameter so tests can speak a wrong one.
pub async fn client_handshake<R, W>(
    r: &mut Reader<R>,
    w: &mut Writer<W>,
    key: &[u8],
    role: Role,
    version: u16,
) -> Result<ServerInfo, ConnError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let nonce_c = protocol::nonce()?;
    w.frame(protocol::encode_hello(
        version,
        &HelloBody {
            role,
            nonce: nonce_c,
        },
    ))
    .await?;
    let nonce_s = match protocol::decode::<HelloReply>(&r.frame().await?)? {
        HelloReply::Challenge {
            magic,
            version,
            nonce,
        } => {
            if magic != MAGIC {
                return Err(ProtocolError::BadMagic(magic).into());
            }
            if version != PROTOCOL_VERSION {
                return Err(ProtocolError::Version { got: version }.into());
            }
            nonce
        }
        HelloReply::Reject { reason } => return Err(ProtocolError::Rejected(reason).into()),
    };
    w.msg(&Auth {
        mac: protocol::client_mac(key, role, &nonce_c, &nonce_s),
    })
    .await?;
    match protocol::decode::<AuthReply>(&r.frame().await?)? {
        AuthReply::Welcome {
            mac,
            fsname,
            ost_count,
        } => {
            protocol::verify_mac(key, true, role, &nonce_c, &nonce_s, &mac)?;
            if fsname.len() > FSNAME_LEN_MAX || ost_count > OST_COUNT_MAX {
                return Err(ProtocolError::Invalid("bad welcome".into()).into());
            }
            Ok(ServerInfo { fsname, ost_count })
        }
        AuthReply::Reject { reason } => Err(ProtocolError::Rejected(reason).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tokio_util::codec::Decoder;

    proptest! {
        /// Whatever bytes arrive, the frame decoder either yields frames within the limit,
        /// waits for more, or fails; it never panics and never yields an oversized frame.
        #[test]
        fn frame_decoder_is_total(chunks in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..64), 0..16)) {
            let mut codec = codec();
            let mut buf = BytesMut::new();
            'outer: for c in chunks {
                buf.extend_from_slice(&c);
                loop {
                    match codec.decode(&mut buf) {
                        Ok(Some(frame)) => prop_assert!(frame.len() <= FRAME_LEN_BYTES_MAX),
                        Ok(None) => break,
                        Err(_) => break 'outer,
                    }
                }
            }
        }
    }

    #[test]
    fn oversized_length_is_refused_before_the_body() {
        let mut codec = codec();
        let mut buf = BytesMut::from(&((FRAME_LEN_BYTES_MAX + 1) as u32).to_be_bytes()[..]);
        assert!(codec.decode(&mut buf).is_err());
        let mut ok = BytesMut::from(&(FRAME_LEN_BYTES_MAX as u32).to_be_bytes()[..]);
        assert!(matches!(codec.decode(&mut ok), Ok(None)));
    }

    /// Frames written straight from the bulk buffer are exactly the codec's: a reader gets
    /// the message, then the bulk in its chunks, then the next message, for bulks of none,
    /// one and several frames.
    #[tokio::test]
    async fn bulk_frames_written_without_the_codec_read_back() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut w = Writer::new(a);
        let mut r = Reader::new(b);
        let lens = [0, 1, 4096, BULK_CHUNK_BYTES, 2 * BULK_CHUNK_BYTES + 3];
        let send = tokio::spawn(async move {
            for (i, len) in lens.into_iter().enumerate() {
                let data: Vec<u8> = (0..len).map(|j| (i + j * 7) as u8).collect();
                w.msg_with_bulk_bytes(&(i as u64, len as u64), Bytes::from(data))
                    .await
                    .unwrap();
            }
            w.msg(&u64::MAX).await.unwrap();
        });
        for (i, len) in lens.into_iter().enumerate() {
            let head: (u64, u64) = protocol::decode(&r.frame().await.unwrap()).unwrap();
            assert_eq!(head, (i as u64, len as u64));
            let data = r.bulk_bytes(len as u64).await.unwrap();
            assert_eq!(data.len(), len);
            assert!(len == 0 || data.as_ptr().align_offset(BULK_ALIGN_BYTES) == 0);
            assert!(data
                .iter()
                .enumerate()
                .all(|(j, &v)| v == (i + j * 7) as u8));
        }
        let last: u64 = protocol::decode(&r.frame().await.unwrap()).unwrap();
        assert_eq!(last, u64::MAX);
        send.await.unwrap();
    }

    /// A writer's progress counts every byte it hands to the connection, through the codec
    /// and around it, and stops while the peer does not read.
    #[tokio::test]
    async fn send_progress_counts_every_byte_and_stops_with_the_reader() {
        let (a, b) = tokio::io::duplex(4096);
        let mut w = Writer::new(a);
        let progress = w.progress();
        assert_eq!(progress.bytes(), 0);
        w.msg(&7u64).await.unwrap();
        let msg_bytes = 4 + protocol::encode(&7u64).len() as u64;
        assert_eq!(progress.bytes(), msg_bytes);
        // 3,000 bytes of bulk fit the duplex buffer with the message.
        w.msg_with_bulk_bytes(&1u64, Bytes::from(vec![1u8; 3000]))
            .await
            .unwrap();
        let second = 4 + protocol::encode(&1u64).len() as u64 + 4 + 3000;
        assert_eq!(progress.bytes(), msg_bytes + second);
        // The peer reads nothing: a larger send cannot complete (whatever the timing, the
        // buffer holds 4 KiB), and the count stays at what the buffer took.
        let blocked = tokio::time::timeout(
            Duration::from_millis(50),
            w.msg_with_bulk_bytes(&2u64, Bytes::from(vec![2u8; 1 << 20])),
        )
        .await;
        assert!(blocked.is_err(), "the send completed with no reader");
        let stuck = progress.bytes();
        assert!(
            stuck <= 4096,
            "{stuck} bytes accepted by a 4 KiB buffer nobody reads"
        );
        drop(b);
    }

    /// Counts the bytes a reader took from its source.
    struct Counting<R> {
        inner: R,
        read: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<R: AsyncRead + Unpin> AsyncRead for Counting<R> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let before = buf.filled().len();
            let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
            let n = buf.filled().len() - before;
            self.read.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            r
        }
    }

    /// A peer without the key that announces an 8 MiB first frame (and sends it) is refused
    /// as the length arrives: the server reads at most its codec's first read of the socket
    /// (8 KiB), not the frame, and never reserves room for it.
    #[tokio::test]
    async fn an_oversized_handshake_frame_is_refused_before_its_body_is_read() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server);
        let read = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut r = Reader::new(Counting {
            inner: sr,
            read: read.clone(),
        });
        let mut w = Writer::new(sw);
        let body_len = 8 << 20;
        let attacker = tokio::spawn(async move {
            let (_cr, mut cw) = tokio::io::split(client);
            let mut head = (body_len as u32).to_be_bytes().to_vec();
            head.extend(encode_hello(
                PROTOCOL_VERSION,
                &HelloBody {
                    role: Role::Client,
                    nonce: [0; NONCE_BYTES],
                },
            ));
            let _ = cw.write_all(&head).await;
            let chunk = vec![0u8; 1 << 16];
            for _ in 0..body_len / chunk.len() {
                if cw.write_all(&chunk).await.is_err() {
                    return;
                }
            }
        });
        let got = server_handshake(&mut r, &mut w, b"key", "fs", 1).await;
        assert!(got.is_err(), "{got:?}");
        let n = read.load(std::sync::atomic::Ordering::Relaxed);
        assert!(n <= 16 << 10, "{n} bytes read before the refusal");
        assert!(r.inner.read_buffer().capacity() <= 64 << 10);
        // Both halves gone: the attacker's writes fail and it ends.
        drop((r, w));
        let _ = attacker.await;
    }

    /// One handshake over an in-memory pipe: the server checks `keys`, the client proves
    /// `key` for `role`; whether it was welcome.
    async fn welcome(keys: ServerKeys<'static>, key: &'static [u8], role: Role) -> bool {
        let (client, server) = tokio::io::duplex(1 << 12);
        let server = tokio::spawn(async move {
            let (sr, sw) = tokio::io::split(server);
            let (mut r, mut w) = (Reader::new(sr), Writer::new(sw));
            server_handshake_admit_keys(&mut r, &mut w, keys, "fs", 1, |_| Ok(()))
                .await
                .is_ok()
        });
        let (cr, cw) = tokio::io::split(client);
        let (mut r, mut w) = (Reader::new(cr), Writer::new(cw));
        let client_ok = client_handshake(&mut r, &mut w, key, role, PROTOCOL_VERSION)
            .await
            .is_ok();
        let server_ok = server.await.unwrap();
        assert_eq!(client_ok, server_ok, "{role:?}: the two sides disagree");
        client_ok
    }

    /// Every role but `Client` must prove the server key: the cluster key a client node
    /// holds cannot claim `Lctl`, `Mds` or `Oss`, and the server key is no client's. A
    /// single-key server (the coordinator) takes its one key for every role.
    #[tokio::test]
    async fn server_roles_prove_the_server_key() {
        const CLUSTER: &[u8] = b"cluster-key-0123456789abcdef";
        const SERVER: &[u8] = b"server-key-fedcba9876543210";
        let both = ServerKeys {
            cluster: CLUSTER,
            server: SERVER,
        };
        assert!(welcome(both, CLUSTER, Role::Client).await);
        assert!(!welcome(both, SERVER, Role::Client).await);
        for role in [Role::Lctl, Role::Mds, Role::Oss] {
            assert!(role.is_server_role());
            assert!(!welcome(both, CLUSTER, role).await, "{role:?}");
            assert!(welcome(both, SERVER, role).await, "{role:?}");
        }
        let single = ServerKeys::single(SERVER);
        for role in [Role::Client, Role::Lctl, Role::Mds, Role::Oss] {
            assert!(welcome(single, SERVER, role).await, "{role:?}");
            assert!(!welcome(single, CLUSTER, role).await, "{role:?}");
        }
    }

    /// The handshake frames a client really sends fit within the cap.
    #[test]
    fn real_handshake_frames_fit_the_cap() {
        let hello = encode_hello(
            u16::MAX,
            &HelloBody {
                role: Role::Client,
                nonce: [0xff; NONCE_BYTES],
            },
        );
        let auth = encode(&Auth {
            mac: [0xff; MAC_BYTES],
        });
        assert!(hello.len() <= HANDSHAKE_FRAME_LEN_MAX && auth.len() <= HANDSHAKE_FRAME_LEN_MAX);
    }

    /// Bulk data spliced from a file through a pipe into a TCP socket reads back as the same
    /// frames: the message, then the file's bytes (none past its end), then the next message;
    /// the pipe goes back to its pool once drained.
    #[tokio::test]
    async fn piped_bulk_reads_back_as_frames() {
        use crate::splice::PipePool;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("obj");
        let data: Vec<u8> = (0..(1 << 20) + 777).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let (r, _w) = tokio::net::TcpStream::connect(addr)
                .await
                .unwrap()
                .into_split();
            let mut r = Reader::new(r);
            let mut got = Vec::new();
            for _ in 0..3 {
                let len: u64 = protocol::decode(&r.frame().await.unwrap()).unwrap();
                got.push(r.bulk_bytes(len).await.unwrap());
            }
            let last: u64 = protocol::decode(&r.frame().await.unwrap()).unwrap();
            (got, last)
        });
        let (stream, _) = listener.accept().await.unwrap();
        let (_r, w) = stream.into_split();
        let mut w = Writer::new(w);
        let pool = PipePool::new(2);
        // 1 MiB from the start, 1,000 bytes from 100, and a read past the end (empty).
        for (offset, len) in [
            (0u64, 1usize << 20),
            (100, 1000),
            (data.len() as u64 + 1, 10),
        ] {
            let p = pool.fill(&file, offset, len).unwrap().expect("a pipe");
            w.msg_with_piped(&(p.len() as u64), p).await.unwrap();
        }
        w.msg(&u64::MAX).await.unwrap();
        let (got, last) = client.await.unwrap();
        assert_eq!(got[0], data[..1 << 20]);
        assert_eq!(got[1], data[100..1100]);
        assert!(got[2].is_empty());
        assert_eq!(last, u64::MAX);
        assert_eq!(pool.live(), 1, "one pipe, drained and reused each time");
    }

    /// A bulk frame of another length than announced, or a stream that ends inside the bulk,
    /// is an error, not a short buffer.
    #[tokio::test]
    async fn bulk_of_the_wrong_length_or_cut_short_is_refused() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut w = Writer::new(a);
        let mut r = Reader::new(b);
        w.frame(vec![7; 100]).await.unwrap();
        match r.bulk_bytes(99).await {
            Err(ConnError::Protocol(ProtocolError::UnexpectedBulk { expected, got })) => {
                assert_eq!((expected, got), (99, 100))
            }
            other => panic!("{other:?}"),
        }
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut r = Reader::new(b);
        let mut a = a;
        let mut cut = 5000u32.to_be_bytes().to_vec();
        cut.extend_from_slice(&[1; 1000]);
        a.write_all(&cut).await.unwrap();
        drop(a);
        assert!(matches!(r.bulk_bytes(5000).await, Err(ConnError::Closed)));
    }
}
