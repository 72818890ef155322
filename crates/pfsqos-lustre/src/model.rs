//! Model types shared by every scheduler, controller and driver.
//!
//! Units are in the names (`_bytes`, `_ns`, `_rpcs`) or in the types; nothing is implied.

use std::fmt;

/// Longest JobID Lustre carries: `LUSTRE_JOBID_SIZE` is 32 bytes including the NUL.
pub const JOB_ID_LEN_MAX: usize = 31;

/// A Lustre JobID: at most 31 bytes of text, stored inline so it is `Copy` and hashes fast on
/// the per-RPC path. The empty JobID is valid (Lustre sends it when `jobid_var=disable`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobId {
    len: u8,
    bytes: [u8; JOB_ID_LEN_MAX],
}

/// Why a string cannot be a [`JobId`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobIdError {
    TooLong { len_bytes: usize },
    ControlCharacter,
}

impl fmt::Display for JobIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobIdError::TooLong { len_bytes } => write!(
                f,
                "job id is {len_bytes} bytes long; Lustre allows at most {JOB_ID_LEN_MAX}"
            ),
            JobIdError::ControlCharacter => write!(f, "job id contains a control character"),
        }
    }
}

impl std::error::Error for JobIdError {}

impl JobId {
    pub const EMPTY: JobId = JobId {
        len: 0,
        bytes: [0; JOB_ID_LEN_MAX],
    };

    pub fn new(text: &str) -> Result<JobId, JobIdError> {
        let raw = text.as_bytes();
        if raw.len() > JOB_ID_LEN_MAX {
            return Err(JobIdError::TooLong {
                len_bytes: raw.len(),
            });
        }
        if raw.iter().any(|b| b.is_ascii_control()) {
            return Err(JobIdError::ControlCharacter);
        }
        let mut bytes = [0; JOB_ID_LEN_MAX];
        bytes[..raw.len()].copy_from_slice(raw);
        Ok(JobId {
            len: raw.len() as u8,
            bytes,
        })
    }

    pub fn as_str(&self) -> &str {
        // Only ever built from a &str, so the bytes are valid UTF-8 up to `len`.
        std::str::from_utf8(&self.bytes[..self.len as usize]).expect("JobId holds UTF-8")
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The id as four words: the length and bytes 0-6, then bytes 7-14, 15-22 and 23-30.
    /// Two ids are equal exactly when their words are (what the class index hashes).
    #[inline]
    pub fn words(&self) -> [u64; 4] {
        let b = &self.bytes;
        let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        [u64::from(self.len) | w(0) << 8, w(7), w(15), w(23)]
    }
}

/// Job ids sort as their text does (not by length first), so "sorted by job id" means what a
/// person expects in every report.
///
/// Compared as two big-endian words of the zero-padded bytes, not by a call to `memcmp` (the
/// agent's merges and AdapTBF's searches compare ids millions of times a period). This is
/// the text order because the bytes past `len` are zero (`new` and `EMPTY` are the only
/// constructors) and an id holds no NUL (`new` refuses control characters): where one id is
/// a proper prefix of the other, the shorter has 0 where the longer has a byte of at least
/// 0x20; and equal padded arrays mean equal ids.
impl Ord for JobId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        fn words(j: &JobId) -> (u128, u128) {
            let mut low = [0u8; 16];
            low[..JOB_ID_LEN_MAX - 16].copy_from_slice(&j.bytes[16..]);
            let high: [u8; 16] = j.bytes[..16].try_into().expect("16 bytes");
            (u128::from_be_bytes(high), u128::from_be_bytes(low))
        }
        debug_assert!(self.bytes[self.len as usize..].iter().all(|&b| b == 0));
        debug_assert!(other.bytes[other.len as usize..].iter().all(|&b| b == 0));
        words(self).cmp(&words(other))
    }
}

impl PartialOrd for JobId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JobId({:?})", self.as_str())
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// LNet network type of a NID (`tcp`, `o2ib`, `lo`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NetKind {
    Lo,
    Tcp,
    O2ib,
    Gni,
    Kfi,
}

impl NetKind {
    pub const ALL: [NetKind; 5] = [
        NetKind::Lo,
        NetKind::Tcp,
        NetKind::O2ib,
        NetKind::Gni,
        NetKind::Kfi,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NetKind::Lo => "lo",
            NetKind::Tcp => "tcp",
            NetKind::O2ib => "o2ib",
            NetKind::Gni => "gni",
            NetKind::Kfi => "kfi",
        }
    }

    pub fn from_name(name: &str) -> Option<NetKind> {
        NetKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// An LNet network: its kind and number (`tcp1` is `Tcp` number 1; `tcp` is number 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LNet {
    pub kind: NetKind,
    pub num: u32,
}

impl fmt::Display for LNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.num == 0 {
            f.write_str(self.kind.name())
        } else {
            write!(f, "{}{}", self.kind.name(), self.num)
        }
    }
}

/// A client network identifier, IPv4-style as in `192.168.1.2@tcp` or `0@lo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Nid {
    /// The address as a big-endian IPv4 number (`0` for `0@lo`).
    pub addr: u32,
    pub net: LNet,
}

impl Nid {
    pub fn ipv4(a: u8, b: u8, c: u8, d: u8, net: LNet) -> Nid {
        Nid {
            addr: u32::from_be_bytes([a, b, c, d]),
            net,
        }
    }

    pub fn octets(&self) -> [u8; 4] {
        self.addr.to_be_bytes()
    }
}

impl fmt::Display for Nid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.net.kind == NetKind::Lo {
            return write!(f, "{}@{}", self.addr, self.net);
        }
        let [a, b, c, d] = self.octets();
        write!(f, "{a}.{b}.{c}.{d}@{}", self.net)
    }
}

/// RPC opcodes of the `ost_io` service, named as in Lustre's `ll_rpc_opcode_table`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Opcode {
    OstRead,
    OstWrite,
    OstPunch,
    OstDestroy,
    OstFallocate,
    OstLadvise,
}

impl Opcode {
    pub const ALL: [Opcode; 6] = [
        Opcode::OstRead,
        Opcode::OstWrite,
        Opcode::OstPunch,
        Opcode::OstDestroy,
        Opcode::OstFallocate,
        Opcode::OstLadvise,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Opcode::OstRead => "ost_read",
            Opcode::OstWrite => "ost_write",
            Opcode::OstPunch => "ost_punch",
            Opcode::OstDestroy => "ost_destroy",
            Opcode::OstFallocate => "ost_fallocate",
            Opcode::OstLadvise => "ost_ladvise",
        }
    }

    pub fn from_name(name: &str) -> Option<Opcode> {
        Opcode::ALL.into_iter().find(|o| o.name() == name)
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Index of an object storage target in the cluster (`OST0000` is `OstId(0)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OstId(pub u32);

/// Index of an object storage server in the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OssId(pub u32);

/// Index of a client node in the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u32);

impl fmt::Display for OstId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OST{:04x}", self.0)
    }
}

/// What a request scheduler classifies an RPC by (Lustre's TBF key fields, `struct
/// nrs_tbf_key` in `lustre_nrs_tbf.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RpcTags {
    pub job: JobId,
    pub nid: Nid,
    pub opcode: Opcode,
    pub uid: u32,
    pub gid: u32,
    /// Project id of the file the RPC touches (Lustre reads it from the ptlrpc body or the
    /// obdo). pfsqos has no project quotas: the simulator and the live client send 0.
    pub projid: u32,
    /// Id of the nodemap the client's export belongs to. Lustre's `default` nodemap has id 0,
    /// and pfsqos defines no other, so every simulated and live RPC carries 0.
    pub nodemap: u32,
}

impl RpcTags {
    /// An empty jobid from `0@lo` reading, uid/gid/projid 0, default nodemap: what a request
    /// carries when nothing else is known (and what the FIFO's drained requests carry).
    pub const UNKNOWN: RpcTags = RpcTags {
        job: JobId::EMPTY,
        nid: Nid {
            addr: 0,
            net: LNet {
                kind: NetKind::Lo,
                num: 0,
            },
        },
        opcode: Opcode::OstRead,
        uid: 0,
        gid: 0,
        projid: 0,
        nodemap: 0,
    };
}

/// [`RpcTags::UNKNOWN`]; constructors override the fields they have.
impl Default for RpcTags {
    fn default() -> Self {
        RpcTags::UNKNOWN
    }
}

/// One bulk RPC from a client to a storage target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rpc {
    pub tags: RpcTags,
    pub client: ClientId,
    pub target: OstId,
    /// Offset inside the OST object.
    pub offset_bytes: u64,
    pub size_bytes: u64,
}

/// A file's stripe layout: RAID-0 over `osts` in `stripe_size_bytes` pieces (stripe `i` is on
/// `osts[i]`). What placement returns at create; the arithmetic over it is
/// `pfsqos_node::client::Raid0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripeLayout {
    pub stripe_size_bytes: u64,
    pub osts: Vec<OstId>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Ids order as their texts do, prefixes and non-ASCII included, and compare equal
        /// exactly when their texts are equal.
        #[test]
        fn job_ids_order_as_their_text(
            a in "[ -~\u{e9}\u{2003}]{0,31}",
            b in "[ -~\u{e9}\u{2003}]{0,31}",
            cut in 0usize..32,
        ) {
            let pairs = [(a.clone(), b.clone()), (a.clone(), a.chars().take(cut).collect())];
            for (x, y) in pairs {
                let (Ok(jx), Ok(jy)) = (JobId::new(&x), JobId::new(&y)) else { continue };
                prop_assert_eq!(jx.cmp(&jy), x.as_bytes().cmp(y.as_bytes()), "{:?} {:?}", x, y);
                prop_assert_eq!(jx == jy, x == y);
            }
        }
    }

    #[test]
    fn job_id_limits() {
        assert_eq!(JobId::new("dd.500").unwrap().as_str(), "dd.500");
        assert!(JobId::new("").unwrap().is_empty());
        assert_eq!(
            JobId::new(&"x".repeat(32)),
            Err(JobIdError::TooLong { len_bytes: 32 })
        );
        assert!(JobId::new(&"x".repeat(31)).is_ok());
        assert_eq!(JobId::new("a\nb"), Err(JobIdError::ControlCharacter));
        assert!(JobId::new("high").unwrap() < JobId::new("low").unwrap());
        assert!(JobId::new("job1").unwrap() < JobId::new("job10").unwrap());
    }

    #[test]
    fn nid_display() {
        let tcp = LNet {
            kind: NetKind::Tcp,
            num: 0,
        };
        assert_eq!(
            Nid::ipv4(192, 168, 1, 2, tcp).to_string(),
            "192.168.1.2@tcp"
        );
        let lo = Nid {
            addr: 0,
            net: LNet {
                kind: NetKind::Lo,
                num: 0,
            },
        };
        assert_eq!(lo.to_string(), "0@lo");
        let o2ib1 = LNet {
            kind: NetKind::O2ib,
            num: 1,
        };
        assert_eq!(Nid::ipv4(10, 0, 0, 1, o2ib1).to_string(), "10.0.0.1@o2ib1");
    }
}
