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
    /// An ossd's periodic space and load statistics (iez §III-B1).
    ReportOss(OssReport),
    /// Loads an application's predicted files into the interaction database (replacing its
    /// earlier rows); the MDS plans their OSTs with iez's Algorithm 2.
    IezLoad {
        app: String,
        files: Vec<IezPrediction>,
    },
    /// Which placement chose a file's layout.
    GetPlacement {
        ino: u64,
    },
    /// An inode's path from the root (`/a/b`), as the interaction database keys files.
    GetPath {
        ino: u64,
    },
}

/// One OST's space as its ossd measured it (`kbytestotal` / `kbytesavail`, in bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OstSpace {
    pub total_bytes: u64,
    pub avail_bytes: u64,
}

/// Most predicted files one interaction-database load carries (core iez's
/// `PREDICTIONS_HELD_MAX`): a bound on network input.
pub const IEZ_FILES_PER_LOAD_MAX: usize = 4096;
/// Longest application name in the interaction database (bytes).
pub const IEZ_APP_LEN_MAX: usize = 64;
/// Longest file path in the interaction database (Linux's `PATH_MAX`).
pub const IEZ_PATH_LEN_MAX: usize = 4096;
/// Utilizations travel as parts per million.
pub const UTIL_PPM_MAX: u32 = 1_000_000;

/// An ossd's statistics: its OSTs' space and its host's load, measured `age_ms` before it was
/// sent (the MDS dates it by its own clock at receipt minus the age, so no clocks are compared
/// across hosts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OssReport {
    /// The name the MDS knows the ossd by: its `--oss HOST:PORT`.
    pub oss: String,
    pub age_ms: u64,
    /// One per OST of the ossd, in its OST order.
    pub osts: Vec<OstSpace>,
    /// CPU utilization (load average over CPUs, capped at 1) in ppm; `None`: not measured.
    pub cpu_util_ppm: Option<u32>,
    /// Memory utilization (`1 - MemAvailable/MemTotal`) in ppm; `None`: not measured.
    pub mem_util_ppm: Option<u32>,
}

/// A predicted file of an application's next run (a row of iez's Table I).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IezPrediction {
    /// Path from the file system root, `/`-separated, starting with `/`.
    pub path: String,
    pub predicted_bytes: u64,
    pub stripe_count: u32,
}

/// Who chose a file's layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementInfo {
    /// `iez`, or the allocator that placed the file without a plan: the MDS's placer
    /// (`roundrobin`, `lustre`; `lustre` under the `iez` placer).
    pub policy: String,
    /// Why iez did not place it (a file with a prediction that fell back), if it did not.
    pub reason: Option<String>,
}

/// Names of the operation kinds in [`MdsOp::kind`] order: the `op` label of the metrics.
pub const MDS_OP_NAMES: [&str; 17] = [
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
    "reportoss",
    "iezload",
    "getplacement",
    "getpath",
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
            MdsOp::ReportOss(_) => 13,
            MdsOp::IezLoad { .. } => 14,
            MdsOp::GetPlacement { .. } => 15,
            MdsOp::GetPath { .. } => 16,
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
    /// Unlink and rename: the layout of a removed file (the MDS destroys its objects).
    Removed(Option<FileLayout>),
    Dir(DirPage),
    DirStripe(Option<StripeSpec>),
    StatFs(StatFs),
    /// `IezLoad`: rows stored, and how many of them iez could plan now.
    IezLoaded {
        files: u32,
        planned: u32,
    },
    Placement(PlacementInfo),
    Path(Vec<u8>),
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
    match &req.op {
        MdsOp::ReportOss(r)
            if r.oss.len() > NAME_LEN_MAX || r.osts.len() > protocol::OST_COUNT_MAX as usize =>
        {
            return Err(ProtocolError::Invalid(
                "OSS report beyond its bounds".into(),
            ))
        }
        MdsOp::IezLoad { app, files }
            if app.len() > IEZ_APP_LEN_MAX
                || files.len() > IEZ_FILES_PER_LOAD_MAX
                || files.iter().any(|f| f.path.len() > IEZ_PATH_LEN_MAX) =>
        {
            return Err(ProtocolError::Invalid(
                "interaction database load beyond its bounds".into(),
            ))
        }
        _ => {}
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
        Ok(MdsReplyBody::Path(p)) if p.len() > IEZ_PATH_LEN_MAX => return bad("path too long"),
        Ok(MdsReplyBody::Placement(p))
            if p.policy.len() > NAME_LEN_MAX
                || p.reason.as_ref().is_some_and(|r| r.len() > MESSAGE_LEN_MAX) =>
        {
            return bad("placement answer too long")
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
