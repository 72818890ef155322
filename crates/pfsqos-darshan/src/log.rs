//! Reading one Darshan log file: header, job record, name records, POSIX and LUSTRE modules.
//!
//! The layout follows Darshan's `darshan-log-format.h`, `darshan-posix-log-format.h` and
//! `darshan-lustre-log-format.h` and the reader in `darshan-logutils.c` (facts only: this is an
//! independent implementation). A log is
//!
//! * an uncompressed header: an 8-byte version string (`"3.21"`), the magic number 6567223
//!   (which also tells the byte order), the compression type, a partial-module bit mask, and a
//!   map of regions `(offset, length)` in the file: the name records and one region per module
//!   (16 module slots up to format 3.21, 64 from 3.41);
//! * the job region, between the header and the first other region: the job record (uid,
//!   start and end time, nprocs, jobid, 1024 bytes of `key=value` metadata) followed by the
//!   executable's command line and the mount table;
//! * the name records: `(u64 record id, NUL-terminated path)` pairs;
//! * each module's records. A POSIX record is `(id, rank)` then 64 (module version 3) or 69
//!   (version 4) 64-bit counters and 17 doubles; rank −1 marks a file shared by all ranks,
//!   whose counters Darshan reduced over them. A LUSTRE record (module version 1) is
//!   `(id, rank)`, five counters (OSTs and MDTs of the file system, stripe offset, size and
//!   count) and then the file's OST indexes, one per stripe.
//!
//! Each region after the header is compressed as one or more concatenated zlib streams (or
//! stored, for compression type 2). Every count, length and offset read from the file is
//! checked against the file and against the bounds below before it is used, so a malformed
//! or truncated log is an error naming what is wrong, never a panic or an unbounded
//! allocation.

use std::collections::BTreeMap;
use std::fmt;

use flate2::{Decompress, FlushDecompress, Status};

/// Largest log file read (the biggest logs of large jobs are tens of MiB).
pub const LOG_FILE_LEN_MAX: u64 = 256 << 20;
/// Largest decompressed region (name records or one module's records).
pub const REGION_LEN_MAX: usize = 512 << 20;
/// Largest decompressed job region: Darshan's job record is 4096 bytes; more is not a log.
pub const JOB_REGION_LEN_MAX: usize = 64 << 10;
/// Name records kept from one log.
pub const NAME_RECORDS_MAX: usize = 1_000_000;
/// Longest record name (Linux `PATH_MAX`).
pub const NAME_LEN_MAX: usize = 4096;
/// Records read from one module of one log.
pub const RECORDS_MAX: usize = 1_000_000;
/// Largest Lustre stripe count (Lustre's `LOV_MAX_STRIPE_COUNT`).
pub const LUSTRE_STRIPES_MAX: i64 = 2000;
/// Largest `nprocs` accepted.
pub const NPROCS_MAX: i64 = 1 << 24;

/// Darshan's magic number, `DARSHAN_MAGIC_NR`.
const DARSHAN_MAGIC: i64 = 6_567_223;
/// Size of the job record Darshan reads at most (`DARSHAN_JOB_RECORD_SIZE`).
const JOB_RECORD_LEN: usize = 4096;
/// Bytes of job metadata text (`DARSHAN_JOB_METADATA_LEN`, NUL included).
const JOB_METADATA_LEN: usize = 1024;

/// Counters of a POSIX record in module version 4 (Darshan 3.2 and later), in file order.
/// Records of version 3 are up-converted to this layout as Darshan's reader does (counters
/// that version 3 lacks are −1, `POSIX_RENAMED_FROM` 0).
pub const POSIX_COUNTER_NAMES: [&str; POSIX_COUNTERS] = [
    "POSIX_OPENS",
    "POSIX_FILENOS",
    "POSIX_DUPS",
    "POSIX_READS",
    "POSIX_WRITES",
    "POSIX_SEEKS",
    "POSIX_STATS",
    "POSIX_MMAPS",
    "POSIX_FSYNCS",
    "POSIX_FDSYNCS",
    "POSIX_RENAME_SOURCES",
    "POSIX_RENAME_TARGETS",
    "POSIX_RENAMED_FROM",
    "POSIX_MODE",
    "POSIX_BYTES_READ",
    "POSIX_BYTES_WRITTEN",
    "POSIX_MAX_BYTE_READ",
    "POSIX_MAX_BYTE_WRITTEN",
    "POSIX_CONSEC_READS",
    "POSIX_CONSEC_WRITES",
    "POSIX_SEQ_READS",
    "POSIX_SEQ_WRITES",
    "POSIX_RW_SWITCHES",
    "POSIX_MEM_NOT_ALIGNED",
    "POSIX_MEM_ALIGNMENT",
    "POSIX_FILE_NOT_ALIGNED",
    "POSIX_FILE_ALIGNMENT",
    "POSIX_MAX_READ_TIME_SIZE",
    "POSIX_MAX_WRITE_TIME_SIZE",
    "POSIX_SIZE_READ_0_100",
    "POSIX_SIZE_READ_100_1K",
    "POSIX_SIZE_READ_1K_10K",
    "POSIX_SIZE_READ_10K_100K",
    "POSIX_SIZE_READ_100K_1M",
    "POSIX_SIZE_READ_1M_4M",
    "POSIX_SIZE_READ_4M_10M",
    "POSIX_SIZE_READ_10M_100M",
    "POSIX_SIZE_READ_100M_1G",
    "POSIX_SIZE_READ_1G_PLUS",
    "POSIX_SIZE_WRITE_0_100",
    "POSIX_SIZE_WRITE_100_1K",
    "POSIX_SIZE_WRITE_1K_10K",
    "POSIX_SIZE_WRITE_10K_100K",
    "POSIX_SIZE_WRITE_100K_1M",
    "POSIX_SIZE_WRITE_1M_4M",
    "POSIX_SIZE_WRITE_4M_10M",
    "POSIX_SIZE_WRITE_10M_100M",
    "POSIX_SIZE_WRITE_100M_1G",
    "POSIX_SIZE_WRITE_1G_PLUS",
    "POSIX_STRIDE1_STRIDE",
    "POSIX_STRIDE2_STRIDE",
    "POSIX_STRIDE3_STRIDE",
    "POSIX_STRIDE4_STRIDE",
    "POSIX_STRIDE1_COUNT",
    "POSIX_STRIDE2_COUNT",
    "POSIX_STRIDE3_COUNT",
    "POSIX_STRIDE4_COUNT",
    "POSIX_ACCESS1_ACCESS",
    "POSIX_ACCESS2_ACCESS",
    "POSIX_ACCESS3_ACCESS",
    "POSIX_ACCESS4_ACCESS",
    "POSIX_ACCESS1_COUNT",
    "POSIX_ACCESS2_COUNT",
    "POSIX_ACCESS3_COUNT",
    "POSIX_ACCESS4_COUNT",
    "POSIX_FASTEST_RANK",
    "POSIX_FASTEST_RANK_BYTES",
    "POSIX_SLOWEST_RANK",
    "POSIX_SLOWEST_RANK_BYTES",
];

/// Floating-point counters of a POSIX record (timestamps in seconds from the job's start).
pub const POSIX_F_COUNTER_NAMES: [&str; POSIX_F_COUNTERS] = [
    "POSIX_F_OPEN_START_TIMESTAMP",
    "POSIX_F_READ_START_TIMESTAMP",
    "POSIX_F_WRITE_START_TIMESTAMP",
    "POSIX_F_CLOSE_START_TIMESTAMP",
    "POSIX_F_OPEN_END_TIMESTAMP",
    "POSIX_F_READ_END_TIMESTAMP",
    "POSIX_F_WRITE_END_TIMESTAMP",
    "POSIX_F_CLOSE_END_TIMESTAMP",
    "POSIX_F_READ_TIME",
    "POSIX_F_WRITE_TIME",
    "POSIX_F_META_TIME",
    "POSIX_F_MAX_READ_TIME",
    "POSIX_F_MAX_WRITE_TIME",
    "POSIX_F_FASTEST_RANK_TIME",
    "POSIX_F_SLOWEST_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_BYTES",
];

/// Integer counters of a POSIX record (module version 4 layout).
pub const POSIX_COUNTERS: usize = 69;
/// Floating-point counters of a POSIX record.
pub const POSIX_F_COUNTERS: usize = 17;
/// Integer counters of a version 3 POSIX record (Darshan 3.1).
const POSIX_COUNTERS_V3: usize = 64;

/// Indexes into [`PosixRecord::counters`] of the counters the conversion uses.
pub mod posix {
    pub const OPENS: usize = 0;
    pub const READS: usize = 3;
    pub const WRITES: usize = 4;
    pub const BYTES_READ: usize = 14;
    pub const BYTES_WRITTEN: usize = 15;
    pub const MAX_BYTE_READ: usize = 16;
    pub const MAX_BYTE_WRITTEN: usize = 17;
    pub const SEQ_READS: usize = 20;
    pub const SEQ_WRITES: usize = 21;
    pub const ACCESS1_ACCESS: usize = 57;
    pub const ACCESS1_COUNT: usize = 61;
    /// Indexes into [`super::PosixRecord::fcounters`].
    pub const F_OPEN_START_TIMESTAMP: usize = 0;
    pub const F_READ_START_TIMESTAMP: usize = 1;
    pub const F_WRITE_START_TIMESTAMP: usize = 2;
    pub const F_READ_END_TIMESTAMP: usize = 5;
    pub const F_WRITE_END_TIMESTAMP: usize = 6;
    pub const F_CLOSE_END_TIMESTAMP: usize = 7;
}

/// Log format versions this reader accepts: those of the committed test logs, each checked
/// against PyDarshan (`tests/data/README.md`).
pub const SUPPORTED_VERSIONS: &[&str] = &["3.10", "3.21"];

/// What is wrong with a log: the part of the file and a description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DarshanError {
    /// The part of the log: `header`, `job record`, `name records`, `POSIX module`, ...
    pub part: String,
    pub message: String,
}

impl fmt::Display for DarshanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.part, self.message)
    }
}

impl std::error::Error for DarshanError {}

fn err<T>(part: &str, message: impl Into<String>) -> Result<T, DarshanError> {
    Err(DarshanError {
        part: part.to_string(),
        message: message.into(),
    })
}

/// Compression of the regions after the header (`enum darshan_comp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Zlib,
    None,
}

/// Where a region lies in the file (compressed bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub offset: u64,
    pub len: u64,
}

/// One module slot of the header that holds data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleRegion {
    /// Slot in the header (module ids moved between format versions: LUSTRE is 6 in 3.10
    /// and 7 in 3.21).
    pub slot: usize,
    /// Darshan's module name for the slot in this format version, or `module N`.
    pub name: String,
    /// The module's record format version.
    pub version: u32,
    pub region: Region,
    /// Darshan set the module's partial flag: it ran out of memory for records, so some
    /// are missing.
    pub partial: bool,
}

/// The job record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub uid: i64,
    pub start_time_s: i64,
    pub end_time_s: i64,
    /// MPI ranks (processes) of the job.
    pub nprocs: i64,
    /// The batch system's job id as Darshan recorded it (0 when there was none).
    pub jobid: i64,
    /// `key=value` lines of the job metadata, in file order.
    pub metadata: Vec<(String, String)>,
    /// The executable's command line (first line of the job region's trailing text).
    pub exe: String,
}

/// One POSIX module record: one file, on one rank or (rank −1) shared by all ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct PosixRecord {
    pub id: u64,
    /// Rank, or −1 for a record reduced over all ranks of a shared file.
    pub rank: i64,
    /// Counters in version 4 layout ([`POSIX_COUNTER_NAMES`]).
    pub counters: [i64; POSIX_COUNTERS],
    /// Floating-point counters ([`POSIX_F_COUNTER_NAMES`]).
    pub fcounters: [f64; POSIX_F_COUNTERS],
}

impl PosixRecord {
    /// The counter named `name` (as in [`POSIX_COUNTER_NAMES`]).
    pub fn counter(&self, name: &str) -> Option<i64> {
        POSIX_COUNTER_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| self.counters[i])
    }
    /// The floating-point counter named `name` (as in [`POSIX_F_COUNTER_NAMES`]).
    pub fn fcounter(&self, name: &str) -> Option<f64> {
        POSIX_F_COUNTER_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| self.fcounters[i])
    }
}

/// One LUSTRE module record (module version 1: one layout component).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LustreRecord {
    pub id: u64,
    pub rank: i64,
    /// OSTs of the file system.
    pub fs_osts: i64,
    /// MDTs of the file system.
    pub fs_mdts: i64,
    /// Index of the file's first OST.
    pub stripe_offset: i64,
    pub stripe_size: i64,
    pub stripe_count: i64,
    /// The file's OSTs, one per stripe.
    pub ost_ids: Vec<i64>,
}

/// A parsed log.
#[derive(Clone, Debug, PartialEq)]
pub struct DarshanLog {
    /// Format version string (`"3.10"`, `"3.21"`).
    pub version: String,
    pub compression: Compression,
    /// Module slots holding data.
    pub modules: Vec<ModuleRegion>,
    pub job: Job,
    /// Record id -> name (file path).
    pub names: BTreeMap<u64, String>,
    pub posix: Vec<PosixRecord>,
    pub lustre: Vec<LustreRecord>,
}

impl DarshanLog {
    /// Reads and parses a log file (at most [`LOG_FILE_LEN_MAX`] bytes).
    pub fn read(path: &std::path::Path) -> Result<DarshanLog, DarshanError> {
        use std::io::Read;
        let file = std::fs::File::open(path)
            .or_else(|e| err("file", format!("cannot open {}: {e}", path.display())))?;
        let mut bytes = Vec::new();
        file.take(LOG_FILE_LEN_MAX + 1)
            .read_to_end(&mut bytes)
            .or_else(|e| err("file", format!("cannot read {}: {e}", path.display())))?;
        if bytes.len() as u64 > LOG_FILE_LEN_MAX {
            return err(
                "file",
                format!(
                    "{} is larger than {} MiB, the largest log read",
                    path.display(),
                    LOG_FILE_LEN_MAX >> 20
                ),
            );
        }
        DarshanLog::parse(&bytes)
    }

    /// Parses the bytes of a whole log.
    pub fn parse(bytes: &[u8]) -> Result<DarshanLog, DarshanError> {
        let header = parse_header(bytes)?;
        let job_bytes = region_bytes(
            bytes,
            header.job_region,
            header.compression,
            "job record",
            JOB_REGION_LEN_MAX,
        )?;
        let job = parse_job(&job_bytes)?;
        let names = match header.name_region {
            Some(r) => parse_names(&region_bytes(
                bytes,
                r,
                header.compression,
                "name records",
                REGION_LEN_MAX,
            )?)?,
            None => BTreeMap::new(),
        };
        let mut posix = Vec::new();
        let mut lustre = Vec::new();
        for m in &header.modules {
            match m.name.as_str() {
                "POSIX" => {
                    let data = region_bytes(
                        bytes,
                        m.region,
                        header.compression,
                        "POSIX module",
                        REGION_LEN_MAX,
                    )?;
                    posix = parse_posix(&data, m.version, job.nprocs)?;
                }
                "LUSTRE" => {
                    let data = region_bytes(
                        bytes,
                        m.region,
                        header.compression,
                        "LUSTRE module",
                        REGION_LEN_MAX,
                    )?;
                    lustre = parse_lustre(&data, m.version, job.nprocs)?;
                }
                _ => {}
            }
        }
        Ok(DarshanLog {
            version: header.version,
            compression: header.compression,
            modules: header.modules,
            job,
            names,
            posix,
            lustre,
        })
    }

    /// The name of record `id`, if the log has it.
    pub fn name(&self, id: u64) -> Option<&str> {
        self.names.get(&id).map(String::as_str)
    }
}

struct Header {
    version: String,
    compression: Compression,
    job_region: Region,
    name_region: Option<Region>,
    modules: Vec<ModuleRegion>,
}

/// Module names per header slot (named as current Darshan names them), for format 3.10
/// (Darshan 3.1) and 3.21 (Darshan 3.2 and 3.3, which inserted H5D after H5F).
const MODULES_3_10: &[&str] = &[
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "PNETCDF_FILE",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
];
const MODULES_3_21: &[&str] = &[
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "H5D",
    "PNETCDF_FILE",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
    "APXC",
    "APMPI",
    "HEATMAP",
];

fn read_i64(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn read_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn read_f64(b: &[u8], at: usize) -> f64 {
    f64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Header layout of formats 3.10 to 3.21: 16 module slots, a 32-bit partial flag.
const HEADER_LEN_3_21: usize = 360;
const MODULE_SLOTS_3_21: usize = 16;

fn parse_header(bytes: &[u8]) -> Result<Header, DarshanError> {
    if bytes.len() < 8 {
        return err(
            "header",
            format!(
                "the file is {} bytes long: too short for a Darshan log",
                bytes.len()
            ),
        );
    }
    let raw = &bytes[..8];
    let end = raw.iter().position(|&b| b == 0).unwrap_or(8);
    let version = match std::str::from_utf8(&raw[..end]) {
        Ok(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic()) => v.to_string(),
        _ => {
            return err(
                "header",
                format!("no version string at the start ({raw:02x?}): not a Darshan log"),
            )
        }
    };
    if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
        return err(
            "header",
            format!(
                "log format version {version} is not supported (supported: {}); \
                 darshan-convert from a Darshan release that reads it can rewrite the log",
                SUPPORTED_VERSIONS.join(", ")
            ),
        );
    }
    if bytes.len() < HEADER_LEN_3_21 {
        return err(
            "header",
            format!(
                "the file is {} bytes long; a version {version} header alone is {HEADER_LEN_3_21} \
                 bytes (truncated)",
                bytes.len()
            ),
        );
    }
    let magic = read_i64(bytes, 8);
    if magic != DARSHAN_MAGIC {
        if magic.swap_bytes() == DARSHAN_MAGIC {
            return err(
                "header",
                "the log was written on a big-endian machine; only little-endian logs are supported",
            );
        }
        return err(
            "header",
            format!("bad magic number {magic} (expected {DARSHAN_MAGIC})"),
        );
    }
    let compression = match bytes[16] {
        0 => Compression::Zlib,
        1 => return err("header", "the log is bzip2-compressed; only zlib-compressed and uncompressed logs are supported (darshan-convert rewrites a log with zlib)"),
        2 => Compression::None,
        c => return err("header", format!("unknown compression type {c}")),
    };
    let partial = read_u32(bytes, 20);
    let file_len = bytes.len() as u64;
    let region_at = |at: usize, what: &str| -> Result<Region, DarshanError> {
        let r = Region {
            offset: read_u64(bytes, at),
            len: read_u64(bytes, at + 8),
        };
        if r.len > 0 {
            let end = r.offset.checked_add(r.len);
            if r.offset < HEADER_LEN_3_21 as u64 || end.is_none_or(|e| e > file_len) {
                return err(
                    "header",
                    format!(
                        "the {what} region ({} bytes at offset {}) lies outside the file's \
                         {file_len} bytes (truncated log?)",
                        r.len, r.offset
                    ),
                );
            }
        }
        Ok(r)
    };
    let name_region = region_at(24, "name record")?;
    let names: &[&str] = if version == "3.10" {
        MODULES_3_10
    } else {
        MODULES_3_21
    };
    let mut modules = Vec::new();
    for slot in 0..MODULE_SLOTS_3_21 {
        let name = names
            .get(slot)
            .map(|n| n.to_string())
            .unwrap_or_else(|| format!("module {slot}"));
        let region = region_at(40 + 16 * slot, &format!("{name} module"))?;
        let version = read_u32(bytes, 296 + 4 * slot);
        if region.len > 0 {
            modules.push(ModuleRegion {
                slot,
                name,
                version,
                region,
                partial: partial & (1 << slot) != 0,
            });
        }
    }
    // The job region runs from the header to the first region after it (Darshan writes the
    // job data, then the names, then the modules in slot order).
    let next = std::iter::once(name_region)
        .chain(modules.iter().map(|m| m.region))
        .filter(|r| r.len > 0)
        .map(|r| r.offset)
        .min()
        .unwrap_or(file_len);
    let job_region = Region {
        offset: HEADER_LEN_3_21 as u64,
        len: next - HEADER_LEN_3_21 as u64,
    };
    if job_region.len == 0 {
        return err("header", "the log has no job region");
    }
    // Regions must not overlap: each byte of the file belongs to one region.
    let mut all: Vec<(Region, String)> = modules
        .iter()
        .map(|m| (m.region, format!("{} module", m.name)))
        .collect();
    if name_region.len > 0 {
        all.push((name_region, "name record".to_string()));
    }
    all.sort_by_key(|(r, _)| r.offset);
    for w in all.windows(2) {
        if w[0].0.offset + w[0].0.len > w[1].0.offset {
            return err(
                "header",
                format!("the {} and {} regions overlap", w[0].1, w[1].1),
            );
        }
    }
    Ok(Header {
        version,
        compression,
        job_region,
        name_region: (name_region.len > 0).then_some(name_region),
        modules,
    })
}

/// The decompressed bytes of a region (at most `limit`).
fn region_bytes(
    bytes: &[u8],
    region: Region,
    compression: Compression,
    part: &str,
    limit: usize,
) -> Result<Vec<u8>, DarshanError> {
    // parse_header checked the region lies within the file.
    let data = &bytes[region.offset as usize..(region.offset + region.len) as usize];
    match compression {
        Compression::None => {
            if data.len() > limit {
                return err(
                    part,
                    format!("region of {} bytes exceeds {limit} bytes", data.len()),
                );
            }
            Ok(data.to_vec())
        }
        Compression::Zlib => inflate(data, part, limit),
    }
}

/// Inflates one or more concatenated zlib streams (Darshan restarts the stream when it
/// flushes a region in pieces), refusing output beyond `limit` bytes.
fn inflate(data: &[u8], part: &str, limit: usize) -> Result<Vec<u8>, DarshanError> {
    const CHUNK: usize = 64 << 10;
    let mut out: Vec<u8> = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let mut z = Decompress::new(true);
        loop {
            if out.len() > limit {
                return err(
                    part,
                    format!("decompresses to more than {limit} bytes, the largest accepted"),
                );
            }
            if out.capacity() - out.len() < CHUNK {
                out.reserve(CHUNK);
            }
            let (in_before, out_before) = (z.total_in(), z.total_out());
            let input = &data[pos + z.total_in() as usize..];
            let status = z
                .decompress_vec(input, &mut out, FlushDecompress::None)
                .or_else(|e| {
                    err(
                        part,
                        format!(
                            "corrupt zlib data at byte {} of the region: {e}",
                            pos as u64 + z.total_in()
                        ),
                    )
                })?;
            if status == Status::StreamEnd {
                break;
            }
            if z.total_in() == in_before && z.total_out() == out_before {
                return err(
                    part,
                    format!(
                        "zlib stream ends early after {} of {} compressed bytes (truncated log?)",
                        pos as u64 + z.total_in(),
                        data.len()
                    ),
                );
            }
        }
        pos += z.total_in() as usize;
    }
    if out.len() > limit {
        return err(
            part,
            format!("decompresses to more than {limit} bytes, the largest accepted"),
        );
    }
    Ok(out)
}

/// Job record of formats 3.10 to 3.21: five 64-bit integers then the metadata text.
const JOB_LEN_3_21: usize = 5 * 8 + JOB_METADATA_LEN;

fn parse_job(b: &[u8]) -> Result<Job, DarshanError> {
    if b.len() <= JOB_LEN_3_21 {
        return err(
            "job record",
            format!(
                "{} bytes; the job record is {JOB_LEN_3_21} bytes and an executable name \
                 follows it",
                b.len()
            ),
        );
    }
    let job_len = b.len().min(JOB_RECORD_LEN);
    let b = &b[..job_len];
    let nprocs = read_i64(b, 24);
    if !(1..=NPROCS_MAX).contains(&nprocs) {
        return err(
            "job record",
            format!("nprocs is {nprocs}; expected 1..={NPROCS_MAX}"),
        );
    }
    let (start_time_s, end_time_s) = (read_i64(b, 8), read_i64(b, 16));
    let meta = &b[40..40 + JOB_METADATA_LEN];
    let meta = &meta[..meta.iter().position(|&c| c == 0).unwrap_or(meta.len())];
    let metadata = String::from_utf8_lossy(meta)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let trailing = &b[JOB_LEN_3_21..];
    let exe_end = trailing
        .iter()
        .position(|&c| c == 0 || c == b'\n')
        .unwrap_or(trailing.len());
    Ok(Job {
        uid: read_i64(b, 0),
        start_time_s,
        end_time_s,
        nprocs,
        jobid: read_i64(b, 32),
        metadata,
        exe: String::from_utf8_lossy(&trailing[..exe_end]).into_owned(),
    })
}

fn parse_names(b: &[u8]) -> Result<BTreeMap<u64, String>, DarshanError> {
    let mut names = BTreeMap::new();
    let mut at = 0;
    let mut count = 0usize;
    while at < b.len() {
        if b.len() - at < 9 {
            return err(
                "name records",
                format!(
                    "{} bytes left at byte {at}: a record is an 8-byte id and a NUL-terminated name",
                    b.len() - at
                ),
            );
        }
        let id = read_u64(b, at);
        let text = &b[at + 8..];
        let Some(len) = text.iter().take(NAME_LEN_MAX + 1).position(|&c| c == 0) else {
            return err(
                "name records",
                format!(
                    "the name of record {id} (byte {at}) is not NUL-terminated within \
                     {NAME_LEN_MAX} bytes"
                ),
            );
        };
        count += 1;
        if count > NAME_RECORDS_MAX {
            return err(
                "name records",
                format!("more than {NAME_RECORDS_MAX} name records"),
            );
        }
        let name = String::from_utf8_lossy(&text[..len]).into_owned();
        // As Darshan's reader: the first non-empty name of an id wins.
        match names.get(&id) {
            Some(old) if !String::is_empty(old) => {}
            _ => {
                names.insert(id, name);
            }
        }
        at += 8 + len + 1;
    }
    Ok(names)
}

fn check_rank(part: &str, index: usize, rank: i64, nprocs: i64) -> Result<(), DarshanError> {
    if rank < -1 || rank >= nprocs {
        return err(
            part,
            format!(
                "record {index} has rank {rank}; the job has ranks 0..{nprocs} (or -1: shared)"
            ),
        );
    }
    Ok(())
}

fn parse_posix(b: &[u8], version: u32, nprocs: i64) -> Result<Vec<PosixRecord>, DarshanError> {
    let part = "POSIX module";
    let counters_in_file = match version {
        3 => POSIX_COUNTERS_V3,
        4 => POSIX_COUNTERS,
        v => {
            return err(
                part,
                format!("record format version {v} is not supported (supported: 3, 4)"),
            )
        }
    };
    let record_len = 16 + 8 * counters_in_file + 8 * POSIX_F_COUNTERS;
    if !b.len().is_multiple_of(record_len) {
        return err(
            part,
            format!(
                "{} bytes is not a whole number of {record_len}-byte version {version} records",
                b.len()
            ),
        );
    }
    let count = b.len() / record_len;
    if count > RECORDS_MAX {
        return err(
            part,
            format!("{count} records; at most {RECORDS_MAX} are read"),
        );
    }
    let mut records = Vec::with_capacity(count);
    for (i, r) in b.chunks_exact(record_len).enumerate() {
        let rank = read_i64(r, 8);
        check_rank(part, i, rank, nprocs)?;
        let raw: Vec<i64> = (0..counters_in_file)
            .map(|k| read_i64(r, 16 + 8 * k))
            .collect();
        let mut counters = [0i64; POSIX_COUNTERS];
        if version == 4 {
            counters.copy_from_slice(&raw);
        } else {
            // Version 3 lacks FILENOS and DUPS (after OPENS) and the three rename counters
            // (after FDSYNCS); Darshan's reader sets them to -1, -1 and RENAMED_FROM to 0.
            counters[0] = raw[0];
            counters[1] = -1;
            counters[2] = -1;
            counters[3..10].copy_from_slice(&raw[1..8]);
            counters[10] = -1;
            counters[11] = -1;
            counters[12] = 0;
            counters[13..].copy_from_slice(&raw[8..]);
        }
        let f_at = 16 + 8 * counters_in_file;
        let mut fcounters = [0f64; POSIX_F_COUNTERS];
        for (k, f) in fcounters.iter_mut().enumerate() {
            *f = read_f64(r, f_at + 8 * k);
        }
        records.push(PosixRecord {
            id: read_u64(r, 0),
            rank,
            counters,
            fcounters,
        });
    }
    Ok(records)
}

fn parse_lustre(b: &[u8], version: u32, nprocs: i64) -> Result<Vec<LustreRecord>, DarshanError> {
    let part = "LUSTRE module";
    if version != 1 {
        return err(
            part,
            format!("record format version {version} is not supported (supported: 1)"),
        );
    }
    const FIXED: usize = 7 * 8;
    let mut records = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let i = records.len();
        if records.len() >= RECORDS_MAX {
            return err(part, format!("more than {RECORDS_MAX} records"));
        }
        if b.len() - at < FIXED {
            return err(
                part,
                format!(
                    "record {i} at byte {at}: {} bytes left, a record needs {FIXED}",
                    b.len() - at
                ),
            );
        }
        let rank = read_i64(b, at + 8);
        check_rank(part, i, rank, nprocs)?;
        let stripe_count = read_i64(b, at + 48);
        if !(0..=LUSTRE_STRIPES_MAX).contains(&stripe_count) {
            return err(
                part,
                format!(
                    "record {i} has stripe count {stripe_count}; expected 0..={LUSTRE_STRIPES_MAX}"
                ),
            );
        }
        let osts_len = 8 * stripe_count as usize;
        if b.len() - at - FIXED < osts_len {
            return err(
                part,
                format!(
                    "record {i} lists {stripe_count} OSTs but only {} bytes are left",
                    b.len() - at - FIXED
                ),
            );
        }
        let ost_ids = (0..stripe_count as usize)
            .map(|k| read_i64(b, at + FIXED + 8 * k))
            .collect();
        records.push(LustreRecord {
            id: read_u64(b, at),
            rank,
            fs_osts: read_i64(b, at + 16),
            fs_mdts: read_i64(b, at + 24),
            stripe_offset: read_i64(b, at + 32),
            stripe_size: read_i64(b, at + 40),
            stripe_count,
            ost_ids,
        });
        at += FIXED + osts_len;
    }
    Ok(records)
}
