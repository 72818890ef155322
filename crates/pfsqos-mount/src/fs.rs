//! The FUSE adapter: every kernel request but a write becomes a task on the client's tokio
//! runtime, which answers the kernel when the operation ends, so slow metadata or a recovering
//! OSS never blocks unrelated requests. A write is admitted on the session thread itself (see
//! `write`).

use std::ffi::OsStr;
use std::future::Future;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, TimeOrNow, WriteFlags,
};
use tracing::debug;

use super::ops::{Caller, Ops, XATTR_CREATE, XATTR_LAYOUT, XATTR_OST_COUNT};
use pfsqos_wire::mds::{Attr, Kind, SetAttr};

/// How long the kernel may cache attributes and entries. Every change made through this
/// mount goes through the kernel, which updates its caches; 1 s bounds how stale a change
/// made elsewhere (another client, a restarted MDS) can look.
const TTL: Duration = Duration::from_secs(1);
/// Entries asked of the MDS per readdir call.
const READDIR_PAGE: u32 = 256;

pub struct PfsFs {
    ops: Arc<Ops>,
    rt: tokio::runtime::Handle,
    write_bytes_max: u32,
    blksize: u32,
    /// What every open and create answers (direct I/O or not).
    open_flags: FopenFlags,
    /// The next file handle: each open gets its own (its read-ahead window is keyed by it).
    next_fh: std::sync::atomic::AtomicU64,
}

impl PfsFs {
    pub fn new(
        ops: Arc<Ops>,
        rt: tokio::runtime::Handle,
        write_bytes_max: u32,
        direct_io: bool,
    ) -> PfsFs {
        PfsFs {
            ops,
            rt,
            write_bytes_max,
            blksize: write_bytes_max,
            open_flags: if direct_io {
                FopenFlags::FOPEN_DIRECT_IO
            } else {
                FopenFlags::empty()
            },
            next_fh: std::sync::atomic::AtomicU64::new(1),
        }
    }

    fn new_fh(&self) -> u64 {
        self.next_fh
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    fn spawn(&self, f: impl Future<Output = ()> + Send + 'static) {
        self.rt.spawn(f);
    }
}

fn caller(req: &Request) -> Caller {
    Caller {
        pid: req.pid(),
        uid: req.uid(),
        gid: req.gid(),
    }
}

fn errno(e: i32) -> Errno {
    Errno::from_i32(e)
}

fn time(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

fn file_attr(a: &Attr, blksize: u32) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size_bytes,
        blocks: a.size_bytes.div_ceil(512),
        atime: time(a.mtime_ns),
        mtime: time(a.mtime_ns),
        ctime: time(a.ctime_ns),
        crtime: time(a.ctime_ns),
        kind: match a.kind {
            Kind::File => FileType::RegularFile,
            Kind::Dir => FileType::Directory,
        },
        perm: (a.mode & 0o7777) as u16,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize,
        flags: 0,
    }
}

fn ns_of(t: TimeOrNow) -> u64 {
    let t = match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    };
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos().min(i64::MAX as u128) as u64)
        .unwrap_or(0)
}

/// Answers a getxattr/listxattr with `value`, following the size-probe protocol.
fn reply_xattr(reply: ReplyXattr, size: u32, value: &[u8]) {
    if size == 0 {
        reply.size(value.len() as u32);
    } else if value.len() > size as usize {
        reply.error(Errno::ERANGE);
    } else {
        reply.data(value);
    }
}

impl Filesystem for PfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Without this the kernel sends writes in 128 KiB pieces (or 4 KiB without big
        // writes): one FUSE write should carry a whole RPC's worth where possible.
        if let Err(nearest) = config.set_max_write(self.write_bytes_max) {
            let _ = config.set_max_write(nearest);
        }
        if let Err(nearest) = config.set_max_readahead(self.write_bytes_max) {
            let _ = config.set_max_readahead(nearest);
        }
        let _ = config.set_max_background(64);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let (ops, name, bs) = (self.ops.clone(), name.as_bytes().to_vec(), self.blksize);
        self.spawn(async move {
            match ops.lookup(parent.0, &name).await {
                Ok(a) => reply.entry(&TTL, &file_attr(&a, bs), Generation(0)),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let (ops, bs) = (self.ops.clone(), self.blksize);
        self.spawn(async move {
            match ops.getattr(ino.0).await {
                Ok(a) => reply.attr(&TTL, &file_attr(&a, bs)),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let set = SetAttr {
            mode: mode.map(|m| m & 0o7777),
            uid,
            gid,
            size_bytes: size,
            mtime_ns: mtime.map(ns_of),
        };
        let (ops, c, bs) = (self.ops.clone(), caller(req), self.blksize);
        self.spawn(async move {
            // atime only (or nothing we keep): answer with the current attributes.
            let r = if set == SetAttr::default() {
                ops.getattr(ino.0).await
            } else {
                ops.setattr(c, ino.0, set).await
            };
            match r {
                Ok(a) => reply.attr(&TTL, &file_attr(&a, bs)),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            // Devices, fifos and sockets have no place on the OSTs.
            reply.error(Errno::EPERM);
            return;
        }
        let (ops, c, name, bs) = (
            self.ops.clone(),
            caller(req),
            name.as_bytes().to_vec(),
            self.blksize,
        );
        self.spawn(async move {
            match ops
                .create(c, parent.0, &name, mode & !umask, None, false)
                .await
            {
                Ok(a) => reply.entry(&TTL, &file_attr(&a, bs), Generation(0)),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let (ops, c, name, bs) = (
            self.ops.clone(),
            caller(req),
            name.as_bytes().to_vec(),
            self.blksize,
        );
        self.spawn(async move {
            match ops.mkdir(c, parent.0, &name, mode & !umask).await {
                Ok(a) => reply.entry(&TTL, &file_attr(&a, bs), Generation(0)),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let (ops, name) = (self.ops.clone(), name.as_bytes().to_vec());
        self.spawn(async move {
            match ops.unlink(parent.0, &name).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let (ops, name) = (self.ops.clone(), name.as_bytes().to_vec());
        self.spawn(async move {
            match ops.rmdir(parent.0, &name).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if !flags.is_empty() {
            // RENAME_NOREPLACE / RENAME_EXCHANGE are not offered by the MDS.
            reply.error(Errno::EINVAL);
            return;
        }
        let ops = self.ops.clone();
        let (name, newname) = (name.as_bytes().to_vec(), newname.as_bytes().to_vec());
        self.spawn(async move {
            match ops.rename(parent.0, &name, newparent.0, &newname).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let (ops, flags, fh) = (self.ops.clone(), self.open_flags, self.new_fh());
        self.spawn(async move {
            match ops.open(ino.0).await {
                Ok(()) => reply.opened(FileHandle(fh), flags),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let (ops, c, name, bs, flags, fh) = (
            self.ops.clone(),
            caller(req),
            name.as_bytes().to_vec(),
            self.blksize,
            self.open_flags,
            self.new_fh(),
        );
        self.spawn(async move {
            match ops
                .create(c, parent.0, &name, mode & !umask, None, true)
                .await
            {
                Ok(a) => reply.created(
                    &TTL,
                    &file_attr(&a, bs),
                    Generation(0),
                    FileHandle(fh),
                    flags,
                ),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let (ops, c) = (self.ops.clone(), caller(req));
        let answer = |reply: ReplyData, r: Result<bytes::Bytes, i32>| match r {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(errno(e)),
        };
        // A sequential read is mostly answered from bytes already read ahead: one poll here,
        // on the session thread, answers it without a hop to a runtime thread (that wake-up
        // per request cost a fifth of sequential read throughput). A read that must wait for
        // an RPC goes on to the runtime, which polls it again at once (no wake-up is lost).
        let _runtime = self.rt.enter();
        let mut read = Box::pin(async move { ops.read(c, ino.0, fh.0, offset, size).await });
        match read
            .as_mut()
            .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
        {
            std::task::Poll::Ready(r) => answer(reply, r),
            std::task::Poll::Pending => self.spawn(async move { answer(reply, read.await) }),
        }
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        // Admitted on this session thread: the reply goes out as soon as the RPCs hold their
        // window slots, without a hop to a runtime thread (the writer waits for this reply).
        // Other requests are served by the other session threads meanwhile.
        let c = caller(req);
        match self.rt.block_on(self.ops.write(c, ino.0, offset, data)) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        let ops = self.ops.clone();
        self.spawn(async move {
            match ops.flush(ino.0).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let ops = self.ops.clone();
        self.spawn(async move {
            match ops.release(ino.0, fh.0).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn fsync(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let (ops, c) = (self.ops.clone(), caller(req));
        self.spawn(async move {
            match ops.fsync(c, ino.0).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    /// Offsets are cookies: `.` is 1, `..` is 2, an entry is its inode number + 2 (the MDS
    /// lists in inode order, and its cursor is the last inode listed).
    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let ops = self.ops.clone();
        self.spawn(async move {
            let mut off = offset;
            if off == 0 {
                if reply.add(ino, 1, FileType::Directory, ".") {
                    return reply.ok();
                }
                off = 1;
            }
            if off == 1 {
                if reply.add(ino, 2, FileType::Directory, "..") {
                    return reply.ok();
                }
                off = 2;
            }
            let mut after = off - 2;
            loop {
                let page = match ops.readdir(ino.0, after, READDIR_PAGE).await {
                    Ok(p) => p,
                    Err(e) => return reply.error(errno(e)),
                };
                for e in &page.entries {
                    let kind = match e.kind {
                        Kind::File => FileType::RegularFile,
                        Kind::Dir => FileType::Directory,
                    };
                    if reply.add(INodeNo(e.ino), e.ino + 2, kind, OsStr::from_bytes(&e.name)) {
                        return reply.ok();
                    }
                    after = e.ino;
                }
                if page.next.is_none() {
                    return reply.ok();
                }
            }
        });
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // Every metadata change is committed durably by the MDS before it answers.
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let (ops, bs) = (self.ops.clone(), self.blksize);
        self.spawn(async move {
            match ops.statfs().await {
                // The protocol carries no OST capacities: block counts are reported as 0
                // (unknown); inode counts are the MDS's.
                Ok(s) => reply.statfs(
                    0,
                    0,
                    0,
                    s.inodes_max,
                    s.inodes_max.saturating_sub(s.inodes),
                    bs,
                    pfsqos_wire::mds::NAME_LEN_MAX as u32,
                    bs,
                ),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let name: &'static str = match name.to_str() {
            Some(XATTR_LAYOUT) => XATTR_LAYOUT,
            Some(XATTR_CREATE) => XATTR_CREATE,
            _ => return reply.error(Errno::ENOTSUP),
        };
        let (ops, c, value) = (self.ops.clone(), caller(req), value.to_vec());
        self.spawn(async move {
            match ops.set_xattr(c, ino.0, name, &value).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if name.as_bytes() == XATTR_OST_COUNT.as_bytes() {
            return reply_xattr(reply, size, self.ops.ost_count().to_string().as_bytes());
        }
        if name.as_bytes() == crate::ops::XATTR_PLACEMENT.as_bytes() {
            let ops = self.ops.clone();
            return self.spawn(async move {
                match ops.get_placement_xattr(ino.0).await {
                    Ok(v) => reply_xattr(reply, size, &v),
                    Err(e) => reply.error(errno(e)),
                }
            });
        }
        if name.as_bytes() != XATTR_LAYOUT.as_bytes() {
            // Answered at once: the kernel asks for security.capability on every write.
            return reply.error(Errno::ENODATA);
        }
        let ops = self.ops.clone();
        self.spawn(async move {
            match ops.get_layout_xattr(ino.0).await {
                Ok(v) => reply_xattr(reply, size, &v),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        let mut names = XATTR_LAYOUT.as_bytes().to_vec();
        names.push(0);
        reply_xattr(reply, size, &names);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        debug!(?name, "removexattr refused");
        reply.error(if name.as_bytes() == XATTR_LAYOUT.as_bytes() {
            Errno::EPERM
        } else {
            Errno::ENODATA
        });
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        // Mounted with default_permissions: the kernel checks modes itself.
        reply.ok();
    }
}
