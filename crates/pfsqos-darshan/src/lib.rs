//! Darshan logs as pfsqos workloads: a reader of Darshan's binary log format ([`log`]) and
//! the conversion of one or more logs into a scenario ([`convert`]), so a site can bake off
//! the bandwidth-control designs on its own applications (`pfsqos trace import`).
//!
//! # Why a Rust reader
//!
//! The log format is small and documented by Darshan's own headers: an uncompressed header
//! with a region map, then zlib-compressed regions of fixed-layout records. Reading it in
//! Rust (zlib through `flate2`'s pure-Rust backend) keeps `pfsqos` one self-contained binary:
//! no Python, PyDarshan or `libdarshan-util` at run time, and every length and count checked
//! against bounds before use, so a hostile log is an error, never a crash. PyDarshan is used
//! only offline, by `scripts/darshan-reference.py`, to produce the reference numbers the
//! tests compare against (`tests/data/*.json`).
//!
//! # What is read
//!
//! Log formats **3.00, 3.10, 3.20, 3.21 and 3.41** (Darshan 3.0 to 3.5), in either byte
//! order, zlib- or bzip2-compressed or stored. From a log: the header (version, compression,
//! regions, module versions and partial flags), the job record (uid, start and end time,
//! nprocs, jobid, metadata, executable), the name records (record id → path), and the POSIX
//! (record versions 1 to 4), MPI-IO (1 to 3), STDIO (1, 2), LUSTRE (1, 2), DXT_POSIX (1, 2)
//! and HEATMAP (1) modules, each up-converted to its newest layout as Darshan's reader does.
//! Other modules are located but not decoded. Bounds and refusals: [`log`].
//!
//! # How a log becomes a job
//!
//! With HEATMAP (or DXT_POSIX) records the job replays the log's timeline: one burst per
//! rank, direction and interval with I/O ([`convert`], docs/traces.md). Otherwise:
//!
//! One `[[job]]` per log, on the system of `--like SCENARIO` (everything but its `[[job]]`
//! tables and `[appset]`) or, without it, a default system of 8 clients and two SSD servers
//! of four OSTs each with a capacity of 2 TiB.
//!
//! * **Job id**: the log's jobid in decimal when it is positive, a valid Lustre JobID that is
//!   safe in TBF rules, and not taken by an earlier log; else `darshan<N>` (N: the log's
//!   position on the command line). **Nodes**: `nprocs / --ranks-per-node` rounded up
//!   (default 1 rank per node: a log records ranks, not nodes). **uid** from the log.
//! * **Processes**: every POSIX record that moved bytes gives one item per direction (a
//!   process group reads or writes, so a file both read and written gives two). A rank's
//!   record is one process on its own file (`file = "per-process"`); a shared record
//!   (rank −1, reduced by Darshan over all ranks) is one file shared by `nprocs` processes
//!   (`file = "shared"`), its bytes divided evenly over them.
//! * **bytes** (`numjobs × size`): `POSIX_BYTES_READ` / `POSIX_BYTES_WRITTEN`, times
//!   `--scale`, rounded to the byte (at least 1).
//! * **bs**: the most frequent of the four access sizes Darshan keeps
//!   (`POSIX_ACCESS1..4_ACCESS` by `_COUNT`), or the mean operation size when it kept none;
//!   at most the per-process size and 1 GiB.
//! * **start_s**: `POSIX_F_READ_START_TIMESTAMP` / `POSIX_F_WRITE_START_TIMESTAMP`, seconds
//!   from the job's start (to the millisecond); the group's earliest member. All jobs start
//!   at time 0 of the run, whatever their dates (logs from different days would otherwise
//!   never meet).
//! * **Striping**: from the LUSTRE record of the file when there is one: `stripe_count`
//!   (capped by the system's OSTs), `stripe_size` (if a multiple of 64 KiB the simulator
//!   takes), `stripe_offset` = the first OST modulo the system's OST count (so files that
//!   shared an OST in the trace share one in the run) when all files of the group agree.
//! * **Grouping**: items with equal direction, sharing, access size, bytes per process,
//!   layout, first OST and start (to 0.1 s) form one group (`numjobs` = their processes).
//!   A job takes at most 64 groups: if there are more, the first OST is dropped from the
//!   key, then sizes are averaged within a group and starts bucketed by 10 s, and finally
//!   one group per direction and sharing remains ([`convert::JobSummary::grouping_level`]).
//!
//! Kept exactly: bytes per direction up to the rounding of `--scale` and of dividing a
//! group's bytes over its processes (less than one byte per process and record; the bound
//! is [`convert::JobSummary::rounding_bound_bytes`]), the number of files per rank
//! and their sharing, the dominant access size, the first time each file was read or
//! written, and the Lustre layout (modulo the system's OSTs).
//!
//! Approximated, because a Darshan log does not record it: when each operation happened
//! (only the first and last timestamps per file: each process then streams its bytes back
//! to back from its start as fast as the simulated system allows, `kind = "continuous"`);
//! the order of a rank's files (each file is its own process, so a rank's files run in
//! parallel); the access pattern (all groups are sequential `read`/`write`: Darshan's
//! consecutive/sequential counters are not mapped to random access); which ranks of a shared
//! file moved its bytes (evenly spread); computation between I/O (none, beyond the start
//! offsets); MPI-IO, HDF5, STDIO and other modules (only POSIX traffic is replayed: it is
//! what reaches the file system); the nodes ranks ran on (see `--ranks-per-node`). Records
//! that moved no bytes (opens, stats) are counted but not replayed: metadata load is not
//! modelled.

pub mod convert;
pub mod log;

pub use convert::{
    import, read_logs, replay_match, ImportError, ImportOptions, Imported, JobSummary, Timeline,
    TraceInput,
};
pub use log::{DarshanError, DarshanLog, Limits};
