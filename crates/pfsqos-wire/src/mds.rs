//! The MDS's side of the wire: metadata operations ([`MdsRequest`], [`MdsOp`]), their replies
//! ([`MdsReply`]), the inode, layout and directory types they carry, and the bounds checked when
//! a frame is decoded. Both the MDS (`pfsqos-mds`) and its clients (the [`crate::client`] and the
//! mount) use these; the server's storage of them is its own business.

use pfsqos_core::place::STRIPE_COUNT_MAX;
use serde::{Deserialize, Serialize};

use crate::protocol::{self, ProtocolError, RemoteError, MESSAGE_LEN_MAX};

/// Inode number of the root directory.
pub const ROOT_INO: u64 = 1;
/// Longest name of one directory entry (bytes).
pub const NAME_LEN_MAX: usize = 255;
/// Most entries one readdir reply may carry.
pub const READDIR_ENTRIES_MAX: u32 = 1024;
/// Largest file size the MDS records (ext4-backed objects hold 16 TiB each; 1 PiB overall).
pub const FILE_SIZE_BYTES_MAX: u64 = 1 << 50;

/// File or directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    File,
    Dir,
}

/// Attributes of an inode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    /// Permission bits only (`0o7777`); the kind carries the file type.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size_bytes: u64,
    pub mtime_ns: u64,
    pub ctime_ns: u64,
    pub nlink: u32,
}

/// One stripe of a file: its OST and the object id on that OST.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stripe {
    pub ost: u32,
    pub object: u64,
}

/// Where a file's bytes live: byte `b` is in stripe `(b / stripe_size) % stripes.len()`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLayout {
    pub stripe_size_bytes: u64,
    pub stripes: Vec<Stripe>,
}

/// A layout template (`lfs setstripe`): a directory default or an explicit create request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StripeSpec {
    /// 1..=OST count, or -1 for every OST.
    pub stripe_count: i32,
    pub stripe_size_bytes: u64,
    pub start_ost: Option<u32>,
}

/// Attribute changes; `None` leaves a field alone. A size change is a truncate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size_bytes: Option<u64>,
    pub mtime_ns: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    pub name: Vec<u8>,
    pub ino: u64,
    pub kind: Kind,
}

/// One page of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirPage {
    pub entries: Vec<DirEntry>,
    /// Cursor for the next page; `None` at the end.
    pub next: Option<u64>,
}

/// One OST as the MDS's configuration knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OstInfo {
    pub index: u32,
    /// Address of the ossd serving it.
    pub oss_addr: String,
    /// The OST's index on that ossd.
    pub oss_ost_index: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatFs {
    pub fsname: String,
    pub osts: Vec<OstInfo>,
    pub inodes: u64,
    pub inodes_max: u64,
    pub default_stripe: StripeSpec,
}

/// Who creates an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

/// A metadata operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MdsOp {
    Create {
        parent: u64,
        name: Vec<u8>,
        owner: Owner,
        stripe: Option<StripeSpec>,
    },
    Mkdir {
        parent: u64,
        name: Vec<u8>,
        owner: Owner,
    },
    Lookup {
        parent: u64,
        name: Vec<u8>,
    },
    GetAttr {
        ino: u64,
    },
    GetLayout {
        ino: u64,
    },
    SetAttr {
        ino: u64,
        set: SetAttr,
    },
    ReadDir {
        dir: u64,
        after: u64,
        max: u32,
    },
    Unlink {
        parent: u64,
        name: Vec<u8>,
    },
    Rmdir {
        parent: u64,
        name: Vec<u8>,
    },
    Rename {
        parent: u64,
        name: Vec<u8>,
        new_parent: u64,
        new_name: Vec<u8>,
    },
    SetDirStripe {
        dir: u64,
        spec: Option<StripeSpec>,
    },
    GetDirStripe {
        dir: u64,
    },
    StatFs,
}

/// Names of the operation kinds in [`MdsOp::kind`] order: the `op` label of the metrics.
pub const MDS_OP_NAMES: [&str; 13] = [
    "create",
    "mkdir",
    "lookup",
    "getattr",
    "getlayout",
    "setattr",
    "readdir",
    "unlink",
    "rmdir",
    "rename",
    "setdirstripe",
    "getdirstripe",
    "statfs",
];

impl MdsOp {
    /// Index of the operation's name in [`MDS_OP_NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            MdsOp::Create { .. } => 0,
            MdsOp::Mkdir { .. } => 1,
            MdsOp::Lookup { .. } => 2,
            MdsOp::GetAttr { .. } => 3,
            MdsOp::GetLayout { .. } => 4,
            MdsOp::SetAttr { .. } => 5,
            MdsOp::ReadDir { .. } => 6,
            MdsOp::Unlink { .. } => 7,
            MdsOp::Rmdir { .. } => 8,
            MdsOp::Rename { .. } => 9,
            MdsOp::SetDirStripe { .. } => 10,
            MdsOp::GetDirStripe { .. } => 11,
            MdsOp::StatFs => 12,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdsRequest {
    pub tag: u64,
    pub op: MdsOp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MdsReplyBody {
    Done,
    Attr(Attr),
    Created(Attr, FileLayout),
    Layout(FileLayout),
    /// Unlink and rename: the layout of a removed file, whose objects the client destroys.
    Removed(Option<FileLayout>),
    Dir(DirPage),
    DirStripe(Option<StripeSpec>),
    StatFs(StatFs),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdsReply {
    pub tag: u64,
    pub result: Result<MdsReplyBody, RemoteError>,
}

/// Names on the wire are bounded before they reach the namespace (which checks them fully).
fn wire_name_ok(n: &[u8]) -> bool {
    n.len() <= NAME_LEN_MAX + 1
}

/// Decodes a request frame; oversize names close the connection as a protocol error.
pub fn decode_mds_request(frame: &[u8]) -> Result<MdsRequest, ProtocolError> {
    let req: MdsRequest = protocol::decode(frame)?;
    let ok = match &req.op {
        MdsOp::Create { name, .. }
        | MdsOp::Mkdir { name, .. }
        | MdsOp::Lookup { name, .. }
        | MdsOp::Unlink { name, .. }
        | MdsOp::Rmdir { name, .. } => wire_name_ok(name),
        MdsOp::Rename { name, new_name, .. } => wire_name_ok(name) && wire_name_ok(new_name),
        _ => true,
    };
    if !ok {
        return Err(ProtocolError::Invalid("name far beyond 255 bytes".into()));
    }
    Ok(req)
}

/// Client side: bounds what a reply may carry.
pub fn decode_mds_reply(frame: &[u8]) -> Result<MdsReply, ProtocolError> {
    let reply: MdsReply = protocol::decode(frame)?;
    let bad = |m: &str| Err(ProtocolError::Invalid(m.into()));
    match &reply.result {
        Err(e) if e.message.len() > MESSAGE_LEN_MAX => return bad("error message too long"),
        Ok(MdsReplyBody::Dir(p)) if p.entries.len() > READDIR_ENTRIES_MAX as usize => {
            return bad("readdir reply too long")
        }
        Ok(MdsReplyBody::Created(_, l) | MdsReplyBody::Layout(l))
            if l.stripes.len() > STRIPE_COUNT_MAX as usize =>
        {
            return bad("layout too long")
        }
        _ => {}
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn request_and_reply_decoders_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)
        ) {
            let _ = decode_mds_request(&bytes);
            let _ = decode_mds_reply(&bytes);
        }
    }
}
