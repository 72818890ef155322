//! Reading one Darshan log file: header, job record, name records and the POSIX, MPI-IO,
//! STDIO, LUSTRE, DXT_POSIX and HEATMAP modules.
//!
//! The layout follows Darshan's `darshan-log-format.h` and the module headers
//! (`darshan-posix-log-format.h`, `darshan-heatmap-log-format.h`, ...) and the reader in
//! `darshan-logutils.c` and the `darshan-*-logutils.c` files (facts only: this is an
//! independent implementation). A log is
//!
//! * an uncompressed header: an 8-byte version string (`"3.41"`), the magic number 6567223
//!   (which also tells the byte order: a log is in the byte order of the machine that wrote
//!   it), the compression type (zlib, bzip2 or none), a partial-module bit mask, and a map of
//!   regions `(offset, length)`: the name records and one region per module slot (16 slots
//!   and a 32-bit mask up to format 3.21, 64 slots and a 64-bit mask from 3.41). Module ids
//!   moved twice: format 3.20 inserted H5D at slot 4, 3.41 PNETCDF_VAR at slot 6; modules are
//!   named here by their 3.41 ids;
//! * the job region, between the header and the first other region: the job record (uid,
//!   start and end time, from 3.41 also their nanoseconds, nprocs, jobid, 1024 bytes of
//!   `key=value` metadata) followed by the executable's command line and the mount table;
//! * the name records: `(u64 record id, NUL-terminated path)` pairs (3.00: `(id, u32
//!   length, path)`);
//! * each module's records, each starting with `(u64 id, i64 rank)`; rank −1 marks a record
//!   Darshan reduced over all ranks of a shared file.
//!
//! Older module record versions are up-converted to the newest layout as Darshan's reader
//! does (the fields a version lacks get Darshan's fill values), so one record type serves
//! every version. Each region is one or more concatenated zlib or bzip2 streams (or stored,
//! compression type 2), decompressed as a stream: records are decoded as the bytes arrive,
//! so a region never needs to be held whole.
//!
//! Bad input is an error naming the part of the log and what is wrong, never a panic or an
//! unbounded allocation: every count, length and offset read from the file is checked
//! before use, overflow included; decompressed bytes are capped per log
//! ([`INFLATED_LEN_MAX`]) so a compressed bomb is refused after a bounded time; and what a
//! log's records keep in memory is capped ([`KEPT_BYTES_MAX`]).

use std::collections::BTreeMap;
use std::fmt;

use flate2::{Decompress, FlushDecompress};

/// Largest log file read.
pub const LOG_FILE_LEN_MAX: u64 = 512 << 20;
/// Decompressed bytes read from one log, over all its regions: past this a log is refused
/// (a compressed region can inflate about 1000-fold; this bounds the time spent on one).
pub const INFLATED_LEN_MAX: u64 = 8 << 30;
/// Bytes the parsed records of one log may occupy in memory (records, names, segments,
/// bins): past this a log is refused.
pub const KEPT_BYTES_MAX: u64 = 2 << 30;
/// Largest decompressed job region: Darshan's job record is 4096 bytes; more is not a log.
pub const JOB_REGION_LEN_MAX: usize = 64 << 10;
/// Largest decompressed name-record region.
pub const NAME_REGION_LEN_MAX: usize = 256 << 20;
/// Name records kept from one log.
pub const NAME_RECORDS_MAX: usize = 4_000_000;
/// Longest record name (Linux `PATH_MAX`).
pub const NAME_LEN_MAX: usize = 4096;
/// Records read from one module of one log.
pub const RECORDS_MAX: usize = 4_000_000;
/// Largest Lustre stripe count of one component (Lustre's `LOV_MAX_STRIPE_COUNT`).
pub const LUSTRE_STRIPES_MAX: i64 = 2000;
/// Largest number of layout components of one Lustre file.
pub const LUSTRE_COMPONENTS_MAX: i64 = 1024;
/// Largest number of bins of one HEATMAP record.
pub const HEATMAP_BINS_MAX: i64 = 1 << 20;
/// Largest `nprocs` accepted.
pub const NPROCS_MAX: i64 = 1 << 24;

/// Darshan's magic number, `DARSHAN_MAGIC_NR`.
const DARSHAN_MAGIC: i64 = 6_567_223;
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

/// Integer and floating-point counters of an MPI-IO record (module version 3).
pub const MPIIO_COUNTERS: usize = 51;
pub const MPIIO_F_COUNTERS: usize = 17;
/// Integer and floating-point counters of a STDIO record (module version 2).
pub const STDIO_COUNTERS: usize = 14;
pub const STDIO_F_COUNTERS: usize = 15;
/// Counters of one Lustre layout component (module version 2): stripe size, stripe
/// count, pattern, flags, extent start, extent end, mirror id.
pub const LUSTRE_COMP_COUNTERS: usize = 7;

/// Log format versions this reader accepts (Darshan 3.0 through 3.5).
pub const SUPPORTED_VERSIONS: &[&str] = &["3.00", "3.10", "3.20", "3.21", "3.41"];

/// Module names by module id as of format 3.41 (`DARSHAN_MODULE_IDS`).
pub const MODULE_NAMES: &[&str] = &[
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "H5D",
    "PNETCDF_FILE",
    "PNETCDF_VAR",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
    "APXC",
    "APMPI",
    "HEATMAP",
    "DFS",
    "DAOS",
];
const MOD_POSIX: usize = 1;
const MOD_MPIIO: usize = 2;
const MOD_LUSTRE: usize = 8;
const MOD_STDIO: usize = 9;
const MOD_DXT_POSIX: usize = 10;
const MOD_HEATMAP: usize = 15;

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
    Bzip2,
    None,
}

/// Where a region lies in the file (compressed bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub offset: u64,
    pub len: u64,
}

/// One module of the log that holds data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleRegion {
    /// Module id as of format 3.41 (an index into [`MODULE_NAMES`]; ids moved between
    /// format versions, so this is not always the header slot).
    pub id: usize,
    /// Darshan's module name, or `module N` for an id it does not name.
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
    /// Nanoseconds of the start (format 3.41 on; 0 before).
    pub start_time_ns: i64,
    pub end_time_s: i64,
    pub end_time_ns: i64,
    /// MPI ranks (processes) of the job.
    pub nprocs: i64,
    /// The batch system's job id as Darshan recorded it (0 when there was none).
    pub jobid: i64,
    /// `key=value` lines of the job metadata, in file order.
    pub metadata: Vec<(String, String)>,
    /// The executable's command line (first line of the job region's trailing text).
    pub exe: String,
}

impl Job {
    /// Wall-clock run time in seconds, as Darshan computes it (`end - start`, with
    /// nanoseconds from 3.41; before that whole seconds, plus one as darshan-util adds).
    pub fn run_time_s(&self, nanoseconds_recorded: bool) -> f64 {
        let whole = self.end_time_s.saturating_sub(self.start_time_s) as f64;
        if nanoseconds_recorded {
            whole + (self.end_time_ns - self.start_time_ns) as f64 / 1e9
        } else {
            whole + 1.0
        }
    }
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

/// One record of a module with integer and floating-point counters (MPI-IO, STDIO), in
/// the module's newest layout.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterRecord {
    pub id: u64,
    pub rank: i64,
    pub counters: Vec<i64>,
    pub fcounters: Vec<f64>,
}

/// One layout component of a Lustre file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LustreComponent {
    /// Stripe size, stripe count, pattern, flags, extent start, extent end, mirror id
    /// (version 1 records: the stripe size and count, the others Darshan's fill values).
    pub counters: [i64; LUSTRE_COMP_COUNTERS],
    pub pool_name: String,
    /// The component's OSTs, one per stripe.
    pub ost_ids: Vec<i64>,
}

impl LustreComponent {
    pub fn stripe_size(&self) -> i64 {
        self.counters[0]
    }
    pub fn stripe_count(&self) -> i64 {
        self.counters[1]
    }
}

/// One LUSTRE module record: a file's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LustreRecord {
    pub id: u64,
    pub rank: i64,
    pub components: Vec<LustreComponent>,
}

/// One traced operation of DXT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DxtSegment {
    pub offset: i64,
    pub length: i64,
    /// Seconds from the job's start.
    pub start_s: f64,
    pub end_s: f64,
}

/// One DXT_POSIX record: every read and write of one file on one rank, with its time.
#[derive(Clone, Debug, PartialEq)]
pub struct DxtRecord {
    pub id: u64,
    pub rank: i64,
    pub hostname: String,
    pub writes: Vec<DxtSegment>,
    pub reads: Vec<DxtSegment>,
}

/// One HEATMAP record: the bytes one rank read and wrote through one module (the record's
/// name says which: `heatmap:POSIX`, `heatmap:MPIIO`, `heatmap:STDIO`) in consecutive bins
/// of equal width from the job's start.
#[derive(Clone, Debug, PartialEq)]
pub struct HeatmapRecord {
    pub id: u64,
    pub rank: i64,
    pub bin_width_s: f64,
    pub write_bins: Vec<i64>,
    pub read_bins: Vec<i64>,
}

/// A parsed log.
#[derive(Clone, Debug, PartialEq)]
pub struct DarshanLog {
    /// Format version string (`"3.10"`, `"3.41"`, ...).
    pub version: String,
    /// The log was written on a big-endian machine.
    pub big_endian: bool,
    pub compression: Compression,
    /// Modules holding data, by id.
    pub modules: Vec<ModuleRegion>,
    pub job: Job,
    /// Record id -> name (file path).
    pub names: BTreeMap<u64, String>,
    pub posix: Vec<PosixRecord>,
    pub mpiio: Vec<CounterRecord>,
    pub stdio: Vec<CounterRecord>,
    pub lustre: Vec<LustreRecord>,
    pub dxt_posix: Vec<DxtRecord>,
    pub heatmap: Vec<HeatmapRecord>,
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
        DarshanLog::parse_with(bytes, &Limits::default())
    }

    /// Parses the bytes of a whole log within `limits`.
    pub fn parse_with(bytes: &[u8], limits: &Limits) -> Result<DarshanLog, DarshanError> {
        let header = parse_header(bytes)?;
        let mut ctx = Ctx {
            bytes,
            header: &header,
            limits: *limits,
            inflated: 0,
            kept: 0,
        };
        let job_bytes = ctx.whole_region(header.job_region, "job record", JOB_REGION_LEN_MAX)?;
        let job = parse_job(&job_bytes, header.big_endian, header.minor >= 41)?;
        let names = match header.name_region {
            Some(r) => {
                let b = ctx.whole_region(r, "name records", NAME_REGION_LEN_MAX)?;
                parse_names(&b, header.big_endian, header.minor == 0, &mut ctx.kept)?
            }
            None => BTreeMap::new(),
        };
        let mut log = DarshanLog {
            version: header.version.clone(),
            big_endian: header.big_endian,
            compression: header.compression,
            modules: header.modules.clone(),
            job,
            names,
            posix: Vec::new(),
            mpiio: Vec::new(),
            stdio: Vec::new(),
            lustre: Vec::new(),
            dxt_posix: Vec::new(),
            heatmap: Vec::new(),
        };
        let nprocs = log.job.nprocs;
        for m in &header.modules {
            let max_version = match m.id {
                MOD_POSIX => 4,
                MOD_MPIIO => 3,
                MOD_STDIO => 2,
                MOD_LUSTRE => 2,
                MOD_DXT_POSIX => 2,
                MOD_HEATMAP => 1,
                _ => continue,
            };
            let part = format!("{} module", m.name);
            if m.version == 0 || m.version > max_version {
                return err(
                    &part,
                    format!(
                        "record format version {} is not one Darshan wrote (1..={max_version})",
                        m.version
                    ),
                );
            }
            let mut s = ctx.stream(m.region, &part);
            match m.id {
                MOD_POSIX => log.posix = parse_posix(&mut s, m.version, nprocs)?,
                MOD_MPIIO => log.mpiio = parse_mpiio(&mut s, m.version, nprocs)?,
                MOD_STDIO => log.stdio = parse_stdio(&mut s, m.version, nprocs)?,
                MOD_LUSTRE => log.lustre = parse_lustre(&mut s, m.version, nprocs)?,
                MOD_DXT_POSIX => log.dxt_posix = parse_dxt(&mut s, m.version, nprocs)?,
                MOD_HEATMAP => log.heatmap = parse_heatmap(&mut s, nprocs)?,
                _ => unreachable!("filtered above"),
            }
            ctx.inflated += s.inflated;
            ctx.kept += s.kept;
        }
        Ok(log)
    }

    /// The name of record `id`, if the log has it.
    pub fn name(&self, id: u64) -> Option<&str> {
        self.names.get(&id).map(String::as_str)
    }

    /// The HEATMAP records of the POSIX module (named `heatmap:POSIX`).
    pub fn posix_heatmap(&self) -> impl Iterator<Item = &HeatmapRecord> {
        self.heatmap
            .iter()
            .filter(|h| self.name(h.id) == Some("heatmap:POSIX"))
    }

    /// Wall-clock run time of the job in seconds (as `darshan-parser` prints it).
    pub fn run_time_s(&self) -> f64 {
        self.job.run_time_s(self.version.as_str() >= "3.41")
    }
}

struct Header {
    version: String,
    minor: u32,
    big_endian: bool,
    compression: Compression,
    job_region: Region,
    name_region: Option<Region>,
    modules: Vec<ModuleRegion>,
}

/// Reads integers in the log's byte order.
#[derive(Clone, Copy)]
struct Order {
    big: bool,
}

impl Order {
    fn u64(self, b: &[u8], at: usize) -> u64 {
        let a: [u8; 8] = b[at..at + 8].try_into().expect("8 bytes");
        if self.big {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        }
    }
    fn i64(self, b: &[u8], at: usize) -> i64 {
        self.u64(b, at) as i64
    }
    fn f64(self, b: &[u8], at: usize) -> f64 {
        f64::from_bits(self.u64(b, at))
    }
    fn u32(self, b: &[u8], at: usize) -> u32 {
        let a: [u8; 4] = b[at..at + 4].try_into().expect("4 bytes");
        if self.big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }
}

/// Header layouts: up to 3.21, 16 module slots and a 32-bit partial mask (360 bytes); from
/// 3.41, 64 slots and a 64-bit mask (1328 bytes).
const HEADER_LEN_3_21: usize = 360;
const HEADER_LEN_3_41: usize = 1328;

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
    let minor: u32 = match version.as_str() {
        "3.00" => 0,
        "3.10" => 10,
        "3.20" => 20,
        "3.21" => 21,
        "3.41" => 41,
        _ => {
            let hint = if version.starts_with('2') || version.starts_with("1.") {
                "; Darshan 2 logs (format 2.x) need Darshan 2's darshan-logutils or darshan-convert from Darshan 3.0 to 3.1, which rewrites them in format 3.10"
            } else if version.as_str() > "3.41" {
                "; it is newer than Darshan 3.5, the newest this reader knows"
            } else {
                ""
            };
            return err(
                "header",
                format!(
                    "log format version {version} is not supported (supported: {}){hint}",
                    SUPPORTED_VERSIONS.join(", ")
                ),
            );
        }
    };
    let (header_len, slots) = if minor >= 41 {
        (HEADER_LEN_3_41, 64)
    } else {
        (HEADER_LEN_3_21, 16)
    };
    if bytes.len() < header_len {
        return err(
            "header",
            format!(
                "the file is {} bytes long; a version {version} header alone is {header_len} \
                 bytes (truncated)",
                bytes.len()
            ),
        );
    }
    let le = Order { big: false };
    let big_endian = match le.i64(bytes, 8) {
        DARSHAN_MAGIC => false,
        m if m.swap_bytes() == DARSHAN_MAGIC => true,
        m => {
            return err(
                "header",
                format!("bad magic number {m} (expected {DARSHAN_MAGIC})"),
            )
        }
    };
    let o = Order { big: big_endian };
    let compression = match bytes[16] {
        0 => Compression::Zlib,
        1 => Compression::Bzip2,
        2 => Compression::None,
        c => return err("header", format!("unknown compression type {c}")),
    };
    let (partial, name_at, map_at, ver_at) = if minor >= 41 {
        (o.u64(bytes, 24), 32, 48, 48 + 16 * 64)
    } else {
        (o.u32(bytes, 20) as u64, 24, 40, 40 + 16 * 16)
    };
    let file_len = bytes.len() as u64;
    let region_at = |at: usize, what: &str| -> Result<Region, DarshanError> {
        let r = Region {
            offset: o.u64(bytes, at),
            len: o.u64(bytes, at + 8),
        };
        if r.len > 0 {
            let end = r.offset.checked_add(r.len);
            if r.offset < header_len as u64 || end.is_none_or(|e| e > file_len) {
                return err(
                    "header",
                    format!(
                        "the {what} region ({} bytes at offset {}) lies outside the file's \
                         {file_len} bytes after the header (truncated log?)",
                        r.len, r.offset
                    ),
                );
            }
        }
        Ok(r)
    };
    let name_region = region_at(name_at, "name record")?;
    let mut modules = Vec::new();
    for slot in 0..slots {
        // Module ids as of 3.41: 3.20 inserted H5D at 4, 3.41 PNETCDF_VAR at 6.
        let mut id = slot;
        if minor < 20 && id >= 4 {
            id += 1;
        }
        if minor < 41 && id >= 6 {
            id += 1;
        }
        let name = MODULE_NAMES
            .get(id)
            .map(|n| n.to_string())
            .unwrap_or_else(|| format!("module {id}"));
        let region = region_at(map_at + 16 * slot, &format!("{name} module"))?;
        if region.len > 0 {
            modules.push(ModuleRegion {
                id,
                name,
                version: o.u32(bytes, ver_at + 4 * slot),
                region,
                partial: partial & (1u64 << slot) != 0,
            });
        }
    }
    // The job region runs from the header to the first region after it (Darshan writes the
    // job data, then the names, then the modules in id order).
    let next = std::iter::once(name_region)
        .chain(modules.iter().map(|m| m.region))
        .filter(|r| r.len > 0)
        .map(|r| r.offset)
        .min()
        .unwrap_or(file_len);
    let job_region = Region {
        offset: header_len as u64,
        len: next - header_len as u64,
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
        minor,
        big_endian,
        compression,
        job_region,
        name_region: (name_region.len > 0).then_some(name_region),
        modules,
    })
}

/// The bounds on what reading one log may cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Decompressed bytes over all regions ([`INFLATED_LEN_MAX`]).
    pub inflated_len_max: u64,
    /// Memory the parsed records may take ([`KEPT_BYTES_MAX`]).
    pub kept_bytes_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            inflated_len_max: INFLATED_LEN_MAX,
            kept_bytes_max: KEPT_BYTES_MAX,
        }
    }
}

/// What one log has used of the bounds so far.
struct Ctx<'a> {
    bytes: &'a [u8],
    header: &'a Header,
    limits: Limits,
    inflated: u64,
    kept: u64,
}

impl<'a> Ctx<'a> {
    fn stream(&self, region: Region, part: &str) -> Stream<'a> {
        // parse_header checked the region lies within the file.
        let data = &self.bytes[region.offset as usize..(region.offset + region.len) as usize];
        Stream {
            part: part.to_string(),
            order: Order {
                big: self.header.big_endian,
            },
            dec: Decoder::new(self.header.compression, data),
            buf: Vec::new(),
            start: 0,
            done: false,
            inflated: 0,
            inflated_max: self.limits.inflated_len_max.saturating_sub(self.inflated),
            inflated_len_max: self.limits.inflated_len_max,
            kept: 0,
            kept_max: self.limits.kept_bytes_max.saturating_sub(self.kept),
            kept_bytes_max: self.limits.kept_bytes_max,
        }
    }

    /// The whole decompressed region, at most `limit` bytes.
    fn whole_region(
        &mut self,
        region: Region,
        part: &str,
        limit: usize,
    ) -> Result<Vec<u8>, DarshanError> {
        let mut s = self.stream(region, part);
        while !s.done {
            if s.buf.len() > limit {
                return err(
                    part,
                    format!("decompresses to more than {limit} bytes, the largest accepted"),
                );
            }
            s.fill()?;
        }
        if s.buf.len() > limit {
            return err(
                part,
                format!("decompresses to more than {limit} bytes, the largest accepted"),
            );
        }
        self.inflated += s.inflated;
        self.kept += s.buf.len() as u64;
        Ok(s.buf)
    }
}

enum Decoder<'a> {
    Stored(&'a [u8]),
    Zlib {
        data: &'a [u8],
        /// Start of the current stream in `data` (Darshan restarts the stream when it
        /// flushes a region in pieces).
        at: usize,
        z: Box<Decompress>,
    },
    Bzip2 {
        data: &'a [u8],
        at: usize,
        z: Box<bzip2::Decompress>,
    },
}

impl<'a> Decoder<'a> {
    fn new(c: Compression, data: &'a [u8]) -> Decoder<'a> {
        match c {
            Compression::None => Decoder::Stored(data),
            Compression::Zlib => Decoder::Zlib {
                data,
                at: 0,
                z: Box::new(Decompress::new(true)),
            },
            Compression::Bzip2 => Decoder::Bzip2 {
                data,
                at: 0,
                z: Box::new(bzip2::Decompress::new(false)),
            },
        }
    }
}

/// A region's decompressed bytes, decoded on demand.
struct Stream<'a> {
    part: String,
    order: Order,
    dec: Decoder<'a>,
    buf: Vec<u8>,
    start: usize,
    done: bool,
    inflated: u64,
    inflated_max: u64,
    inflated_len_max: u64,
    /// Bytes the records parsed from this stream keep.
    kept: u64,
    kept_max: u64,
    kept_bytes_max: u64,
}

const CHUNK: usize = 256 << 10;

impl Stream<'_> {
    /// Appends the next decompressed bytes to `buf`; sets `done` at the region's end.
    fn fill(&mut self) -> Result<(), DarshanError> {
        let before = self.buf.len();
        match &mut self.dec {
            Decoder::Stored(data) => {
                let n = data.len().min(CHUNK);
                self.buf.extend_from_slice(&data[..n]);
                *data = &data[n..];
                if data.is_empty() {
                    self.done = true;
                }
            }
            Decoder::Zlib { data, at, z } => {
                if *at >= data.len() {
                    self.done = true;
                    return Ok(());
                }
                self.buf.reserve(CHUNK);
                let in_before = z.total_in();
                let out_before = z.total_out();
                let input = &data[*at + z.total_in() as usize..];
                let status = z
                    .decompress_vec(input, &mut self.buf, FlushDecompress::None)
                    .or_else(|e| {
                        err(
                            &self.part,
                            format!(
                                "corrupt zlib data at byte {} of the region: {e}",
                                *at as u64 + z.total_in()
                            ),
                        )
                    })?;
                if status == flate2::Status::StreamEnd {
                    *at += z.total_in() as usize;
                    z.reset(true);
                    if *at >= data.len() {
                        self.done = true;
                    }
                } else if z.total_in() == in_before && z.total_out() == out_before {
                    return err(
                        &self.part,
                        format!(
                            "zlib stream ends early after {} of {} compressed bytes (truncated log?)",
                            *at as u64 + z.total_in(),
                            data.len()
                        ),
                    );
                }
            }
            Decoder::Bzip2 { data, at, z } => {
                if *at >= data.len() {
                    self.done = true;
                    return Ok(());
                }
                self.buf.reserve(CHUNK);
                let in_before = z.total_in();
                let out_before = z.total_out();
                let input = &data[*at + z.total_in() as usize..];
                let status = z.decompress_vec(input, &mut self.buf).or_else(|e| {
                    err(
                        &self.part,
                        format!(
                            "corrupt bzip2 data at byte {} of the region: {e}",
                            *at as u64 + z.total_in()
                        ),
                    )
                })?;
                if status == bzip2::Status::StreamEnd {
                    *at += z.total_in() as usize;
                    **z = bzip2::Decompress::new(false);
                    if *at >= data.len() {
                        self.done = true;
                    }
                } else if z.total_in() == in_before && z.total_out() == out_before {
                    return err(
                        &self.part,
                        format!(
                            "bzip2 stream ends early after {} of {} compressed bytes (truncated log?)",
                            *at as u64 + z.total_in(),
                            data.len()
                        ),
                    );
                }
            }
        }
        self.inflated += (self.buf.len() - before) as u64;
        if self.inflated > self.inflated_max {
            return err(
                &self.part,
                format!(
                    "the log decompresses to more than {} MiB, the most read from one log",
                    self.inflated_len_max >> 20
                ),
            );
        }
        Ok(())
    }

    /// The next `n` bytes, or `None` at the region's end; a region ending inside them is
    /// an error.
    fn take(&mut self, n: usize, what: &str) -> Result<Option<&[u8]>, DarshanError> {
        while self.buf.len() - self.start < n && !self.done {
            if self.start > 0 && self.start >= self.buf.len() / 2 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            self.fill()?;
        }
        let avail = self.buf.len() - self.start;
        if avail == 0 && n > 0 {
            return Ok(None);
        }
        if avail < n {
            return err(
                &self.part,
                format!(
                    "the region ends {avail} bytes into {what}, which needs {n} (truncated or \
                     corrupt log)"
                ),
            );
        }
        let at = self.start;
        self.start += n;
        Ok(Some(&self.buf[at..at + n]))
    }

    /// The next `n` bytes, which must be there.
    fn need(&mut self, n: usize, what: &str) -> Result<&[u8], DarshanError> {
        let part = self.part.clone();
        match self.take(n, what)? {
            Some(b) => Ok(b),
            None => err(
                &part,
                format!("the region ends where {what} ({n} bytes) should be (truncated log?)"),
            ),
        }
    }

    /// Accounts `bytes` more kept in memory.
    fn keep(&mut self, bytes: u64, records: usize) -> Result<(), DarshanError> {
        self.kept = self.kept.saturating_add(bytes);
        if self.kept > self.kept_max {
            return err(
                &self.part,
                format!(
                    "the log's records take more than {} MiB of memory, the most kept from one log",
                    self.kept_bytes_max >> 20
                ),
            );
        }
        if records > RECORDS_MAX {
            return err(&self.part, format!("more than {RECORDS_MAX} records"));
        }
        Ok(())
    }
}

fn parse_job(b: &[u8], big: bool, has_ns: bool) -> Result<Job, DarshanError> {
    let o = Order { big };
    let fixed = if has_ns { 7 * 8 } else { 5 * 8 };
    let job_len = fixed + JOB_METADATA_LEN;
    if b.len() <= job_len {
        return err(
            "job record",
            format!(
                "{} bytes; the job record is {job_len} bytes and an executable name follows it",
                b.len()
            ),
        );
    }
    let f = |k: usize| o.i64(b, 8 * k);
    let (uid, start_time_s, start_time_ns, end_time_s, end_time_ns, nprocs, jobid) = if has_ns {
        (f(0), f(1), f(2), f(3), f(4), f(5), f(6))
    } else {
        (f(0), f(1), 0, f(2), 0, f(3), f(4))
    };
    if !(1..=NPROCS_MAX).contains(&nprocs) {
        return err(
            "job record",
            format!("nprocs is {nprocs}; expected 1..={NPROCS_MAX}"),
        );
    }
    let meta = &b[fixed..fixed + JOB_METADATA_LEN];
    let meta = &meta[..meta.iter().position(|&c| c == 0).unwrap_or(meta.len())];
    let metadata = String::from_utf8_lossy(meta)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let trailing = &b[job_len..];
    let exe_end = trailing
        .iter()
        .position(|&c| c == 0 || c == b'\n')
        .unwrap_or(trailing.len());
    Ok(Job {
        uid,
        start_time_s,
        start_time_ns,
        end_time_s,
        end_time_ns,
        nprocs,
        jobid,
        metadata,
        exe: String::from_utf8_lossy(&trailing[..exe_end]).into_owned(),
    })
}

fn parse_names(
    b: &[u8],
    big: bool,
    format_3_00: bool,
    kept: &mut u64,
) -> Result<BTreeMap<u64, String>, DarshanError> {
    let o = Order { big };
    let part = "name records";
    let mut names = BTreeMap::new();
    let mut at = 0;
    let mut count = 0usize;
    while at < b.len() {
        let left = b.len() - at;
        let head = if format_3_00 { 12 } else { 9 };
        if left < head {
            return err(
                part,
                format!("{left} bytes left at byte {at}: too short for a name record"),
            );
        }
        let id = o.u64(b, at);
        let (name, next) = if format_3_00 {
            // Format 3.00: (id, u32 length, path without terminator).
            let len = o.u32(b, at + 8) as usize;
            if len > NAME_LEN_MAX || len > left - 12 {
                return err(
                    part,
                    format!(
                        "the name of record {id} (byte {at}) is {len} bytes long; {} bytes are \
                         left and at most {NAME_LEN_MAX} are accepted",
                        left - 12
                    ),
                );
            }
            (&b[at + 12..at + 12 + len], at + 12 + len)
        } else {
            let text = &b[at + 8..];
            let Some(len) = text.iter().take(NAME_LEN_MAX + 1).position(|&c| c == 0) else {
                return err(
                    part,
                    format!(
                        "the name of record {id} (byte {at}) is not NUL-terminated within \
                         {NAME_LEN_MAX} bytes"
                    ),
                );
            };
            (&text[..len], at + 8 + len + 1)
        };
        count += 1;
        if count > NAME_RECORDS_MAX {
            return err(part, format!("more than {NAME_RECORDS_MAX} name records"));
        }
        let name = String::from_utf8_lossy(name).into_owned();
        // As Darshan's reader: the first name of an id wins, except that from 3.10 a
        // non-empty name replaces an empty one.
        match names.get(&id) {
            None => {
                *kept += 48 + name.len() as u64;
                names.insert(id, name);
            }
            Some(old) if !format_3_00 && String::is_empty(old) && !name.is_empty() => {
                names.insert(id, name);
            }
            Some(_) => {}
        }
        at = next;
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

/// Reads `n` values from `r` at `at` in `o`'s order.
fn i64s(o: Order, r: &[u8], at: usize, n: usize) -> impl Iterator<Item = i64> + '_ {
    (0..n).map(move |k| o.i64(r, at + 8 * k))
}
fn f64s(o: Order, r: &[u8], at: usize, n: usize) -> impl Iterator<Item = f64> + '_ {
    (0..n).map(move |k| o.f64(r, at + 8 * k))
}

/// Inserts Darshan's fill values for two floating-point counters a version 1 or 2 record
/// of POSIX or MPI-IO lacks (`F_CLOSE_START_TIMESTAMP`, `F_OPEN_END_TIMESTAMP`, both −1,
/// after the third).
fn upconvert_f_v2(old: &[f64]) -> Vec<f64> {
    let mut f = Vec::with_capacity(old.len() + 2);
    f.extend_from_slice(&old[..3]);
    f.extend_from_slice(&[-1.0, -1.0]);
    f.extend_from_slice(&old[3..]);
    f
}

fn parse_posix(
    s: &mut Stream,
    version: u32,
    nprocs: i64,
) -> Result<Vec<PosixRecord>, DarshanError> {
    // Record versions (darshan-posix-logutils.c): 1 has 68 counters (four STDIO counters
    // after POSIX_STATS... at index 6) and 15 floating-point counters; 2 has 64 and 15; 3
    // has 64 and 17; 4 has 69 and 17.
    let (counters_in_file, f_in_file) = match version {
        1 => (68, 15),
        2 => (64, 15),
        3 => (64, 17),
        _ => (POSIX_COUNTERS, POSIX_F_COUNTERS),
    };
    let record_len = 16 + 8 * (counters_in_file + f_in_file);
    let o = s.order;
    let mut records = Vec::new();
    loop {
        let index = records.len();
        let part = s.part.clone();
        let Some(r) = s.take(record_len, &format!("POSIX record {index}"))? else {
            break;
        };
        let rank = o.i64(r, 8);
        let id = o.u64(r, 0);
        let mut c: Vec<i64> = i64s(o, r, 16, counters_in_file).collect();
        let mut f: Vec<f64> = f64s(o, r, 16 + 8 * counters_in_file, f_in_file).collect();
        if version == 1 {
            // Version 1 mixed four STDIO counters in (from index 6); Darshan's reader drops
            // a record whose fopen count is positive (no clean up-conversion exists) and
            // removes the four from the others.
            if c[6] > 0 {
                continue;
            }
            c.drain(6..10);
        }
        if version <= 2 {
            f = upconvert_f_v2(&f);
        }
        if version <= 3 {
            // Version 3 lacks FILENOS and DUPS (after OPENS) and the three rename counters
            // (after FDSYNCS): −1, −1, and RENAMED_FROM 0, as Darshan's reader sets them.
            c.splice(1..1, [-1, -1]);
            c.splice(10..10, [-1, -1, 0]);
        }
        check_rank(&part, index, rank, nprocs)?;
        debug_assert_eq!(c.len(), POSIX_COUNTERS);
        debug_assert_eq!(f.len(), POSIX_F_COUNTERS);
        records.push(PosixRecord {
            id,
            rank,
            counters: c.try_into().expect("up-converted to version 4"),
            fcounters: f.try_into().expect("up-converted to version 4"),
        });
        s.keep(std::mem::size_of::<PosixRecord>() as u64, records.len())?;
    }
    Ok(records)
}

fn parse_mpiio(
    s: &mut Stream,
    version: u32,
    nprocs: i64,
) -> Result<Vec<CounterRecord>, DarshanError> {
    // Versions 1 and 2 share one layout (15 floating-point counters); 3 added two.
    let f_in_file = if version < 3 { 15 } else { MPIIO_F_COUNTERS };
    let record_len = 16 + 8 * (MPIIO_COUNTERS + f_in_file);
    let o = s.order;
    let mut records = Vec::new();
    loop {
        let index = records.len();
        let part = s.part.clone();
        let Some(r) = s.take(record_len, &format!("MPI-IO record {index}"))? else {
            break;
        };
        let (id, rank) = (o.u64(r, 0), o.i64(r, 8));
        let counters: Vec<i64> = i64s(o, r, 16, MPIIO_COUNTERS).collect();
        let mut fcounters: Vec<f64> = f64s(o, r, 16 + 8 * MPIIO_COUNTERS, f_in_file).collect();
        if version < 3 {
            fcounters = upconvert_f_v2(&fcounters);
        }
        check_rank(&part, index, rank, nprocs)?;
        records.push(CounterRecord {
            id,
            rank,
            counters,
            fcounters,
        });
        s.keep(
            (64 + 8 * (MPIIO_COUNTERS + MPIIO_F_COUNTERS)) as u64,
            records.len(),
        )?;
    }
    Ok(records)
}

fn parse_stdio(
    s: &mut Stream,
    version: u32,
    nprocs: i64,
) -> Result<Vec<CounterRecord>, DarshanError> {
    // Version 1 lacks STDIO_FDOPENS (after OPENS), which Darshan's reader sets to −1.
    let c_in_file = if version < 2 { 13 } else { STDIO_COUNTERS };
    let record_len = 16 + 8 * (c_in_file + STDIO_F_COUNTERS);
    let o = s.order;
    let mut records = Vec::new();
    loop {
        let index = records.len();
        let part = s.part.clone();
        let Some(r) = s.take(record_len, &format!("STDIO record {index}"))? else {
            break;
        };
        let (id, rank) = (o.u64(r, 0), o.i64(r, 8));
        let mut counters: Vec<i64> = i64s(o, r, 16, c_in_file).collect();
        let fcounters: Vec<f64> = f64s(o, r, 16 + 8 * c_in_file, STDIO_F_COUNTERS).collect();
        if version < 2 {
            counters.insert(1, -1);
        }
        check_rank(&part, index, rank, nprocs)?;
        records.push(CounterRecord {
            id,
            rank,
            counters,
            fcounters,
        });
        s.keep(
            (64 + 8 * (STDIO_COUNTERS + STDIO_F_COUNTERS)) as u64,
            records.len(),
        )?;
    }
    Ok(records)
}

fn parse_lustre(
    s: &mut Stream,
    version: u32,
    nprocs: i64,
) -> Result<Vec<LustreRecord>, DarshanError> {
    let o = s.order;
    let mut records = Vec::new();
    loop {
        let i = records.len();
        let part = s.part.clone();
        if version == 1 {
            // (id, rank, OSTs and MDTs of the file system, stripe offset, size, count),
            // then one OST per stripe; one component, the rest Darshan's fill values.
            let Some(r) = s.take(56, &format!("LUSTRE record {i}"))? else {
                break;
            };
            let (id, rank) = (o.u64(r, 0), o.i64(r, 8));
            let (stripe_size, stripe_count) = (o.i64(r, 40), o.i64(r, 48));
            check_rank(&part, i, rank, nprocs)?;
            if !(0..=LUSTRE_STRIPES_MAX).contains(&stripe_count) {
                return err(
                    &part,
                    format!(
                        "record {i} has stripe count {stripe_count}; expected 0..={LUSTRE_STRIPES_MAX}"
                    ),
                );
            }
            let n = stripe_count as usize;
            let b = s.need(8 * n, &format!("the OST list of LUSTRE record {i}"))?;
            let ost_ids = i64s(o, b, 0, n).collect();
            records.push(LustreRecord {
                id,
                rank,
                components: vec![LustreComponent {
                    counters: [stripe_size, stripe_count, -1, -1, 0, -1, -1],
                    pool_name: String::new(),
                    ost_ids,
                }],
            });
            s.keep(128 + 8 * n as u64, records.len())?;
            continue;
        }
        // Version 2: (id, rank, components, stripes), the components (seven counters and
        // a 16-byte pool name each), then the OSTs of all components in order.
        let Some(r) = s.take(32, &format!("LUSTRE record {i}"))? else {
            break;
        };
        let (id, rank) = (o.u64(r, 0), o.i64(r, 8));
        let (num_comps, num_stripes) = (o.i64(r, 16), o.i64(r, 24));
        check_rank(&part, i, rank, nprocs)?;
        if !(0..=LUSTRE_COMPONENTS_MAX).contains(&num_comps)
            || !(0..=LUSTRE_STRIPES_MAX * LUSTRE_COMPONENTS_MAX).contains(&num_stripes)
        {
            return err(
                &part,
                format!(
                    "record {i} has {num_comps} components and {num_stripes} stripes; expected \
                     0..={LUSTRE_COMPONENTS_MAX} components of at most {LUSTRE_STRIPES_MAX} stripes"
                ),
            );
        }
        let mut components = Vec::new();
        if num_comps > 0 {
            // Darshan's reader reads the OSTs only when there is a component.
            let (nc, ns) = (num_comps as usize, num_stripes as usize);
            s.keep(72 * nc as u64 + 8 * ns as u64, records.len())?;
            let b = s.need(
                72 * nc + 8 * ns,
                &format!("the layout of LUSTRE record {i}"),
            )?;
            let mut used = 0usize;
            for k in 0..nc {
                let at = 72 * k;
                let counters: [i64; LUSTRE_COMP_COUNTERS] =
                    std::array::from_fn(|j| o.i64(b, at + 8 * j));
                // Unused components are marked by a stripe size of −1: the record ends there.
                if counters[0] == -1 {
                    break;
                }
                let count = counters[1];
                if count < 0 || used as i64 + count > num_stripes {
                    return err(
                        &part,
                        format!(
                            "record {i}: component {k} has {count} stripes, more than the \
                             {num_stripes} the record lists"
                        ),
                    );
                }
                let pool = &b[at + 56..at + 72];
                let pool = &pool[..pool.iter().position(|&c| c == 0).unwrap_or(16)];
                let osts_at = 72 * nc + 8 * used;
                components.push(LustreComponent {
                    counters,
                    pool_name: String::from_utf8_lossy(pool).into_owned(),
                    ost_ids: i64s(o, b, osts_at, count as usize).collect(),
                });
                used += count as usize;
            }
        }
        records.push(LustreRecord {
            id,
            rank,
            components,
        });
        s.keep(64, records.len())?;
    }
    Ok(records)
}

fn parse_dxt(s: &mut Stream, version: u32, nprocs: i64) -> Result<Vec<DxtRecord>, DarshanError> {
    // A record: (id, rank, shared flag, 64-byte hostname, write count, read count), then
    // the writes and the reads: (offset, length, start, end) and, from version 2, a thread
    // id.
    let seg_len = if version == 1 { 32 } else { 40 };
    let o = s.order;
    let mut records = Vec::new();
    loop {
        let i = records.len();
        let part = s.part.clone();
        let Some(r) = s.take(104, &format!("DXT_POSIX record {i}"))? else {
            break;
        };
        let (id, rank) = (o.u64(r, 0), o.i64(r, 8));
        let host = &r[24..88];
        let hostname =
            String::from_utf8_lossy(&host[..host.iter().position(|&c| c == 0).unwrap_or(64)])
                .into_owned();
        let (writes, reads) = (o.i64(r, 88), o.i64(r, 96));
        check_rank(&part, i, rank, nprocs)?;
        let total = writes
            .checked_add(reads)
            .filter(|_| writes >= 0 && reads >= 0);
        let Some(total) = total else {
            return err(
                &part,
                format!("record {i} has {writes} writes and {reads} reads"),
            );
        };
        // Checked against the memory bound before anything is allocated for them.
        s.keep(
            (total as u64).saturating_mul(32).saturating_add(128),
            records.len() + 1,
        )?;
        let mut segs = Vec::with_capacity(total as usize);
        for k in 0..total as usize {
            let b = s.need(seg_len, &format!("segment {k} of DXT_POSIX record {i}"))?;
            segs.push(DxtSegment {
                offset: o.i64(b, 0),
                length: o.i64(b, 8),
                start_s: o.f64(b, 16),
                end_s: o.f64(b, 24),
            });
        }
        let reads = segs.split_off(writes as usize);
        records.push(DxtRecord {
            id,
            rank,
            hostname,
            writes: segs,
            reads,
        });
    }
    Ok(records)
}

fn parse_heatmap(s: &mut Stream, nprocs: i64) -> Result<Vec<HeatmapRecord>, DarshanError> {
    // A record: (id, rank, bin width, bin count, two pointer slots), then the write bins
    // and the read bins.
    let o = s.order;
    let mut records = Vec::new();
    let mut first: Option<(i64, f64)> = None;
    loop {
        let i = records.len();
        let part = s.part.clone();
        let Some(r) = s.take(48, &format!("HEATMAP record {i}"))? else {
            break;
        };
        let (id, rank) = (o.u64(r, 0), o.i64(r, 8));
        let (bin_width_s, nbins) = (o.f64(r, 16), o.i64(r, 24));
        check_rank(&part, i, rank, nprocs)?;
        if !(0..=HEATMAP_BINS_MAX).contains(&nbins) {
            return err(
                &part,
                format!("record {i} has {nbins} bins; expected 0..={HEATMAP_BINS_MAX}"),
            );
        }
        if !(bin_width_s.is_finite() && bin_width_s >= 0.0) {
            return err(
                &part,
                format!("record {i} has a bin width of {bin_width_s} s"),
            );
        }
        let n = nbins as usize;
        s.keep(16 * n as u64 + 64, records.len() + 1)?;
        let b = s.need(16 * n, &format!("the bins of HEATMAP record {i}"))?;
        let mut write_bins: Vec<i64> = i64s(o, b, 0, n).collect();
        let mut read_bins: Vec<i64> = i64s(o, b, 8 * n, n).collect();
        // Darshan 3.4.0 to 3.4.3 could write a record one bin longer or shorter than the
        // others (a runtime bug when shared reductions were disabled); Darshan's reader drops the extra bin or appends an
        // empty one when the width agrees with the first record's. (Its reader shifts the
        // read bins by one when it appends; the intended bins are kept here.)
        let (mut first_n, mut first_w) = first.unwrap_or((0, 0.0));
        if first_n == 0 {
            first_n = nbins;
        }
        if first_w == 0.0 {
            first_w = bin_width_s;
        }
        first = Some((first_n, first_w));
        if bin_width_s == first_w && nbins == first_n + 1 {
            write_bins.pop();
            read_bins.pop();
        } else if bin_width_s == first_w && nbins + 1 == first_n {
            write_bins.push(0);
            read_bins.push(0);
        }
        records.push(HeatmapRecord {
            id,
            rank,
            bin_width_s,
            write_bins,
            read_bins,
        });
    }
    Ok(records)
}
