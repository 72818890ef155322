//! OST job_stats as Lustre keeps and prints them (lustre-release's
//! `lustre/obdclass/lprocfs_jobstats.c`): per-job counters of one OST, the `obdfilter.<fs>-OSTxxxx.job_stats` printer in
//! each version's layout, and a tolerant parser of all those layouts.
//!
//! The live OSS updates an [`OstJobStats`] per RPC; the Lustre adapter parses what a real `lctl`
//! prints with [`parse_job_stats`] / [`parse_lctl_job_stats`]. Pure: times are wall-clock
//! nanoseconds passed in by the driver.
//!
//! Layouts ([`JobStatsFormat`]):
//! * 2.12-2.14: `snapshot_time` in whole seconds; 12 counters; byte counters with min/max/sum
//!   (widths 7/7/15), op counters in `reqs` with samples only; job ids raw, with `?` for the
//!   bytes the kernel's `isprint` refuses.
//! * 2.15.0-2.15.1: the three time lines unindented as `snapshot_time   : s.ns secs.nsecs`;
//!   job ids as in 2.12.
//! * 2.15.2+: time lines indented, 15 counters, all with sumsq (widths 8/8/16/18); job ids
//!   quoted and escaped (`\xHH`) when unusual, by each version's rule
//!   ([`lustre_job_id_bytes`]).
//! * 2.16: as 2.15.2+ plus a log2 `hist: { ... }` on the byte counters; an OST with no jobs
//!   prints `job_stats:`.
//! * 2.17+ (master, the default): as 2.16, but an OST with no jobs prints an empty value.

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use crate::errno::Errno;
use crate::lines::LineCursor;
use crate::model::{JobId, JOB_ID_LEN_MAX};
use crate::NS_PER_S;

/// Counters of an OST in Lustre's print order (`ofd_stats_counter_init`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OstCounter {
    ReadBytes,
    WriteBytes,
    Read,
    Write,
    Getattr,
    Setattr,
    Punch,
    Sync,
    Destroy,
    Create,
    Statfs,
    GetInfo,
    SetInfo,
    Quotactl,
    Prealloc,
}

/// Number of OST counters from 2.15 on.
pub const OST_COUNTER_COUNT: usize = 15;

impl OstCounter {
    pub const ALL: [OstCounter; OST_COUNTER_COUNT] = [
        OstCounter::ReadBytes,
        OstCounter::WriteBytes,
        OstCounter::Read,
        OstCounter::Write,
        OstCounter::Getattr,
        OstCounter::Setattr,
        OstCounter::Punch,
        OstCounter::Sync,
        OstCounter::Destroy,
        OstCounter::Create,
        OstCounter::Statfs,
        OstCounter::GetInfo,
        OstCounter::SetInfo,
        OstCounter::Quotactl,
        OstCounter::Prealloc,
    ];

    /// The 12 counters of 2.12-2.14, in their print order.
    pub const LEGACY: [OstCounter; 12] = [
        OstCounter::ReadBytes,
        OstCounter::WriteBytes,
        OstCounter::Getattr,
        OstCounter::Setattr,
        OstCounter::Punch,
        OstCounter::Sync,
        OstCounter::Destroy,
        OstCounter::Create,
        OstCounter::Statfs,
        OstCounter::GetInfo,
        OstCounter::SetInfo,
        OstCounter::Quotactl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OstCounter::ReadBytes => "read_bytes",
            OstCounter::WriteBytes => "write_bytes",
            OstCounter::Read => "read",
            OstCounter::Write => "write",
            OstCounter::Getattr => "getattr",
            OstCounter::Setattr => "setattr",
            OstCounter::Punch => "punch",
            OstCounter::Sync => "sync",
            OstCounter::Destroy => "destroy",
            OstCounter::Create => "create",
            OstCounter::Statfs => "statfs",
            OstCounter::GetInfo => "get_info",
            OstCounter::SetInfo => "set_info",
            OstCounter::Quotactl => "quotactl",
            OstCounter::Prealloc => "prealloc",
        }
    }

    pub fn from_name(name: &str) -> Option<OstCounter> {
        // A match (not a search of ALL): called for every line the parsers read.
        Some(match name {
            "read_bytes" => OstCounter::ReadBytes,
            "write_bytes" => OstCounter::WriteBytes,
            "read" => OstCounter::Read,
            "write" => OstCounter::Write,
            "getattr" => OstCounter::Getattr,
            "setattr" => OstCounter::Setattr,
            "punch" => OstCounter::Punch,
            "sync" => OstCounter::Sync,
            "destroy" => OstCounter::Destroy,
            "create" => OstCounter::Create,
            "statfs" => OstCounter::Statfs,
            "get_info" => OstCounter::GetInfo,
            "set_info" => OstCounter::SetInfo,
            "quotactl" => OstCounter::Quotactl,
            "prealloc" => OstCounter::Prealloc,
            _ => return None,
        })
    }

    pub fn is_bytes(self) -> bool {
        matches!(self, OstCounter::ReadBytes | OstCounter::WriteBytes)
    }
}

/// Buckets of the log2 histogram: bucket j holds values in (2^(j-1), 2^j].
pub const HIST_BUCKETS: usize = 64;

/// One counter: samples with min/max/sum/sumsq (sums wrap as Lustre's u64 counters do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    pub samples: u64,
    /// Meaningful only when `samples > 0` (printed as 0 otherwise).
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub sumsq: u64,
}

impl Counter {
    pub fn add(&mut self, value: u64) {
        if self.samples == 0 || value < self.min {
            self.min = value;
        }
        if self.samples == 0 || value > self.max {
            self.max = value;
        }
        self.samples += 1;
        self.sum = self.sum.wrapping_add(value);
        self.sumsq = self.sumsq.wrapping_add(value.wrapping_mul(value));
    }
}

/// The bucket a value falls in: `fls(v - 1)`, with 0 and 1 both in bucket 0.
pub fn hist_bucket(value: u64) -> usize {
    if value <= 1 {
        0
    } else {
        (64 - (value - 1).leading_zeros()) as usize
    }
}

/// The label of bucket j as Lustre prints it: `1`, `2`, ... `512`, `1K`, ... `1M`, `4M`, `1G`...
pub fn hist_label(bucket: usize) -> String {
    const SUFFIXES: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let (scale, mantissa) = (bucket / 10, bucket % 10);
    format!("{}{}", 1u64 << mantissa, SUFFIXES[scale.min(6)])
}

fn parse_hist_label(label: &str) -> Option<usize> {
    const SUFFIXES: [(char, usize); 6] = [
        ('K', 10),
        ('M', 20),
        ('G', 30),
        ('T', 40),
        ('P', 50),
        ('E', 60),
    ];
    let (digits, shift) = match label.chars().last()? {
        c if c.is_ascii_digit() => (label, 0),
        c => {
            let shift = SUFFIXES.iter().find(|(s, _)| *s == c)?.1;
            (&label[..label.len() - 1], shift)
        }
    };
    let n: u64 = digits.parse().ok()?;
    if !n.is_power_of_two() || n >= 1024 {
        return None;
    }
    let bucket = n.trailing_zeros() as usize + shift;
    (bucket < HIST_BUCKETS).then_some(bucket)
}

/// A log2 histogram of RPC sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Log2Hist(pub [u64; HIST_BUCKETS]);

impl Default for Log2Hist {
    fn default() -> Self {
        Log2Hist([0; HIST_BUCKETS])
    }
}

impl Log2Hist {
    pub fn add(&mut self, value: u64) {
        let b = hist_bucket(value);
        self.0[b] = self.0[b].wrapping_add(1);
    }
}

/// One job's entry on one OST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEntry {
    pub job_id: JobId,
    /// Wall-clock time of the most recent update, ns since the epoch.
    pub snapshot_time_ns: u64,
    /// When the entry was created; `None` when parsed from a layout without it (≤2.14).
    pub start_time_ns: Option<u64>,
    /// Indexed by `OstCounter as usize`.
    pub counters: [Counter; OST_COUNTER_COUNT],
    pub read_hist: Log2Hist,
    pub write_hist: Log2Hist,
}

impl JobEntry {
    pub fn new(job_id: JobId, now_ns: u64) -> JobEntry {
        JobEntry {
            job_id,
            snapshot_time_ns: now_ns,
            start_time_ns: Some(now_ns),
            counters: [Counter::default(); OST_COUNTER_COUNT],
            read_hist: Log2Hist::default(),
            write_hist: Log2Hist::default(),
        }
    }

    pub fn counter(&self, c: OstCounter) -> &Counter {
        &self.counters[c as usize]
    }

    fn hist(&self, c: OstCounter) -> Option<&Log2Hist> {
        match c {
            OstCounter::ReadBytes => Some(&self.read_hist),
            OstCounter::WriteBytes => Some(&self.write_hist),
            _ => None,
        }
    }
}

/// Which Lustre version's `job_stats` layout to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JobStatsFormat {
    /// 2.12-2.14 (job ids printed raw).
    Legacy2_12,
    /// 2.15.0-2.15.1: unindented time lines (job ids printed raw).
    Lustre2_15_0,
    /// 2.15.2 and later 2.15.x: no histogram.
    Lustre2_15,
    /// 2.16.x: histograms; an empty OST prints `job_stats:`.
    Lustre2_16,
    /// 2.17.0 and master: histograms; an empty OST prints nothing.
    #[default]
    Master,
}

/// Why a write to `job_stats` failed; Lustre answers `EINVAL` to all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobStatsError {
    UnknownJob(String),
    BadJobId(String),
}

impl JobStatsError {
    pub fn errno(&self) -> Errno {
        Errno::EINVAL
    }
}

impl fmt::Display for JobStatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobStatsError::UnknownJob(j) => write!(f, "no job `{j}` in job_stats"),
            JobStatsError::BadJobId(m) => write!(f, "bad job id: {m}"),
        }
    }
}

impl std::error::Error for JobStatsError {}

/// Default bound on jobs kept per OST; beyond it the least recently updated job is dropped.
/// The jobs a controller tracks, so every job a controller can act on has its statistics.
pub const JOBS_PER_OST_MAX: usize = crate::limits::JOBS_TRACKED_MAX;

/// Longest text accepted by [`OstJobStats::write`] (a quoted, escaped 31-byte job id fits).
pub const JOB_STATS_WRITE_LEN_MAX: usize = 4 * JOB_ID_LEN_MAX + 8;

/// The job_stats of one OST.
#[derive(Clone, Debug)]
pub struct OstJobStats {
    jobs: BTreeMap<JobId, JobEntry>,
    jobs_max: usize,
}

impl Default for OstJobStats {
    fn default() -> Self {
        OstJobStats::new(JOBS_PER_OST_MAX)
    }
}

impl OstJobStats {
    pub fn new(jobs_max: usize) -> OstJobStats {
        assert!(jobs_max > 0, "job_stats needs room for at least one job");
        OstJobStats {
            jobs: BTreeMap::new(),
            jobs_max,
        }
    }

    /// Jobs in job id order (the 2.17 rb-tree order).
    pub fn entries(&self) -> impl Iterator<Item = &JobEntry> {
        self.jobs.values()
    }

    pub fn get(&self, job: &JobId) -> Option<&JobEntry> {
        self.jobs.get(job)
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    fn entry(&mut self, now_ns: u64, job: JobId) -> &mut JobEntry {
        if !self.jobs.contains_key(&job) && self.jobs.len() >= self.jobs_max {
            let oldest = self
                .jobs
                .values()
                .min_by_key(|e| (e.snapshot_time_ns, e.job_id))
                .map(|e| e.job_id)
                .expect("jobs_max > 0, so the map is not empty");
            self.jobs.remove(&oldest);
        }
        let e = self
            .jobs
            .entry(job)
            .or_insert_with(|| JobEntry::new(job, now_ns));
        e.snapshot_time_ns = e.snapshot_time_ns.max(now_ns);
        e
    }

    /// Adds one sample. RPCs without a job id are not recorded, as in Lustre.
    pub fn record(&mut self, now_ns: u64, job: JobId, counter: OstCounter, value: u64) {
        if job.is_empty() {
            return;
        }
        let e = self.entry(now_ns, job);
        e.counters[counter as usize].add(value);
        match counter {
            OstCounter::ReadBytes => e.read_hist.add(value),
            OstCounter::WriteBytes => e.write_hist.add(value),
            _ => {}
        }
    }

    /// One bulk RPC: a sample of its bytes and one of its service time (µs).
    pub fn record_brw(&mut self, now_ns: u64, job: JobId, write: bool, bytes: u64, usecs: u64) {
        let (b, t) = if write {
            (OstCounter::WriteBytes, OstCounter::Write)
        } else {
            (OstCounter::ReadBytes, OstCounter::Read)
        };
        self.record(now_ns, job, b, bytes);
        self.record(now_ns, job, t, usecs);
    }

    pub fn clear(&mut self) {
        self.jobs.clear();
    }

    /// Removes one job, named raw or quoted/escaped as job_stats prints it.
    pub fn clear_job(&mut self, text: &str) -> Result<(), JobStatsError> {
        let raw = unquote_job_id(text.trim()).map_err(JobStatsError::BadJobId)?;
        let job = JobId::new(&raw).map_err(|e| JobStatsError::BadJobId(e.to_string()))?;
        self.jobs
            .remove(&job)
            .map(|_| ())
            .ok_or(JobStatsError::UnknownJob(raw))
    }

    /// `lctl set_param obdfilter.X.job_stats=<text>`: `clear` or a job id.
    pub fn write(&mut self, text: &str) -> Result<(), JobStatsError> {
        if text.len() > JOB_STATS_WRITE_LEN_MAX {
            return Err(JobStatsError::BadJobId(format!(
                "longer than {JOB_STATS_WRITE_LEN_MAX} bytes"
            )));
        }
        if text.trim() == "clear" {
            self.clear();
            Ok(())
        } else {
            self.clear_job(text)
        }
    }

    /// Drops jobs not updated for `interval_ns` (`job_cleanup_interval`); 0 disables.
    pub fn expire(&mut self, now_ns: u64, interval_ns: u64) {
        if interval_ns == 0 {
            return;
        }
        self.jobs
            .retain(|_, e| now_ns.saturating_sub(e.snapshot_time_ns) <= interval_ns);
    }

    /// The value of `obdfilter.<fs>-OSTxxxx.job_stats` (what `lctl get_param -n` prints).
    pub fn render(&self, format: JobStatsFormat) -> String {
        render_job_stats(self.jobs.values(), format)
    }
}

/// Whether a job id needs quotes: any character outside `[A-Za-z0-9.@-_:/]`, a `:`, or a
/// leading `@`.
fn needs_quotes(job: &str) -> bool {
    job.starts_with('@') || job.bytes().any(|b| b == b':' || !plain_byte(b))
}

fn plain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'@' | b'-' | b'_' | b':' | b'/')
}

/// What a job's counters gained between two reads of `job_stats`, the one delta rule of every
/// reader (`pfsqos stat`, the controllers' observer, the Lustre agent).
///
/// Lustre never lowers a counter of a live entry; an entry is only ever cleared as a whole
/// (`job_stats=clear`, or `job_cleanup_interval` expiry, after which the job may come back).
/// So if any counter is below its previous value the entry was restarted, and everything it
/// holds now is new: the delta is the current values. A job not seen before also counts from
/// zero.
pub fn counters_delta<const N: usize>(prev: Option<&[u64; N]>, cur: &[u64; N]) -> [u64; N] {
    match prev {
        Some(p) if p.iter().zip(cur).all(|(p, c)| c >= p) => std::array::from_fn(|i| cur[i] - p[i]),
        _ => *cur,
    }
}

/// The job id as job_stats prints it: raw, or double-quoted with unusual bytes as `\xHH`.
pub fn quote_job_id(job: &str) -> String {
    if !needs_quotes(job) {
        return job.to_string();
    }
    let mut out = String::with_capacity(job.len() + 2);
    out.push('"');
    for b in job.bytes() {
        if plain_byte(b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

/// Inverse of [`quote_job_id`]; text without quotes is returned as is.
pub fn unquote_job_id(text: &str) -> Result<String, String> {
    let Some(inner) = text.strip_prefix('"') else {
        return Ok(text.to_string());
    };
    let inner = inner
        .strip_suffix('"')
        .ok_or_else(|| format!("unterminated quote in `{text}`"))?;
    let mut bytes = Vec::with_capacity(inner.len());
    let raw = inner.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' {
            let hex = raw
                .get(i + 1..i + 4)
                .filter(|h| h[0] == b'x')
                .and_then(|h| std::str::from_utf8(&h[1..]).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad escape in `{text}`"))?;
            bytes.push(hex);
            i += 4;
        } else {
            bytes.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8(bytes).map_err(|_| format!("escaped job id `{text}` is not UTF-8"))
}

fn fmt_time(ns: u64) -> String {
    format!("{}.{:09}", ns / NS_PER_S, ns % NS_PER_S)
}

/// Prints entries in the given layout (the value, without the `param=` prefix).
pub fn render_job_stats<'a>(
    entries: impl IntoIterator<Item = &'a JobEntry>,
    format: JobStatsFormat,
) -> String {
    let mut out = String::new();
    let mut any = false;
    for e in entries {
        if !any {
            out.push_str("job_stats:\n");
            any = true;
        }
        render_entry(&mut out, e, format);
    }
    if !any && format != JobStatsFormat::Master {
        out.push_str("job_stats:\n");
    }
    out
}

/// The kernel's `isprint` (lib/ctype.c, with the `(unsigned char)` cast of `__ismask`):
/// printable ASCII and the Latin-1 range 0xA0-0xFF.
fn kernel_isprint(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b >= 0xa0
}

/// The kernel's `isalnum`: ASCII letters and digits, and the Latin-1 letters 0xC0-0xFF but
/// 0xD7 and 0xF7.
fn kernel_isalnum(b: u8) -> bool {
    b.is_ascii_alphanumeric() || (b >= 0xc0 && b != 0xd7 && b != 0xf7)
}

/// The bytes of the job id as `lprocfs_jobstats_seq_show` (lustre/obdclass/lprocfs_jobstats.c)
/// prints it in `format`:
/// * up to 2.15.1 (v2_12_9, v2_14_0, v2_15_1): unquoted, each byte the kernel's `isprint`
///   refuses (controls, DEL, 0x80-0x9F) as `?`;
/// * 2.15.2-2.15.x (v2_15_2 .. v2_15_8): quoted if any byte is not `isalnum` nor one of
///   `.@-_`, each such byte as `\xHH` (upper-case hex);
/// * 2.16 and later (v2_16_0, v2_17_0): `:` and `/` are kept too, but a `:` or a leading `@`
///   makes the id quoted.
///
/// The kernel's ctype counts Latin-1 bytes as printable and (most of 0xC0-0xFF) as letters,
/// so a UTF-8 id may come out as bytes that are not UTF-8 (a lead byte kept, a continuation
/// byte replaced or escaped).
pub fn lustre_job_id_bytes(job: &str, format: JobStatsFormat) -> Vec<u8> {
    let (kept, colon_quotes): (&[u8], bool) = match format {
        JobStatsFormat::Legacy2_12 | JobStatsFormat::Lustre2_15_0 => {
            return job
                .bytes()
                .map(|b| if kernel_isprint(b) { b } else { b'?' })
                .collect();
        }
        JobStatsFormat::Lustre2_15 => (b".@-_", false),
        JobStatsFormat::Lustre2_16 | JobStatsFormat::Master => (b".@-_:/", true),
    };
    let plain = |b: u8| kernel_isalnum(b) || kept.contains(&b);
    let quoted = job.bytes().any(|b| !plain(b))
        || (colon_quotes && (job.contains(':') || job.starts_with('@')));
    let mut out = Vec::with_capacity(job.len() + 2);
    if quoted {
        out.push(b'"');
    }
    for b in job.bytes() {
        if plain(b) {
            out.push(b);
        } else {
            out.extend_from_slice(format!("\\x{b:02X}").as_bytes());
        }
    }
    if quoted {
        out.push(b'"');
    }
    out
}

fn render_entry(out: &mut String, e: &JobEntry, format: JobStatsFormat) {
    // Text: bytes that are not UTF-8 (see `lustre_job_id_bytes`) become U+FFFD, as a reader
    // decoding lctl's output lossily (the Lustre agent) sees them.
    let job_bytes = lustre_job_id_bytes(e.job_id.as_str(), format);
    let job = String::from_utf8_lossy(&job_bytes);
    let _ = writeln!(out, "- {:<16} {job}", "job_id:");
    let snapshot = e.snapshot_time_ns;
    let start = e.start_time_ns.unwrap_or(snapshot);
    let times = [
        ("snapshot_time", snapshot),
        ("start_time", start),
        ("elapsed_time", snapshot.saturating_sub(start)),
    ];
    match format {
        JobStatsFormat::Legacy2_12 => {
            let _ = writeln!(out, "  {:<16} {}", "snapshot_time:", snapshot / NS_PER_S);
        }
        JobStatsFormat::Lustre2_15_0 => {
            for (name, t) in times {
                let _ = writeln!(out, "{name:<16}: {} secs.nsecs", fmt_time(t));
            }
        }
        _ => {
            for (name, t) in times {
                let label = format!("{name}:");
                let _ = writeln!(out, "  {label:<16} {} secs.nsecs", fmt_time(t));
            }
        }
    }
    let counters: &[OstCounter] = if format == JobStatsFormat::Legacy2_12 {
        &OstCounter::LEGACY
    } else {
        &OstCounter::ALL
    };
    for &c in counters {
        let k = e.counter(c);
        let label = format!("{}:", c.name());
        let _ = write!(out, "  {label:<16} {{ samples: {:>11}", k.samples);
        let (min, max) = if k.samples == 0 {
            (0, 0)
        } else {
            (k.min, k.max)
        };
        let (sum, sumsq) = if k.samples == 0 {
            (0, 0)
        } else {
            (k.sum, k.sumsq)
        };
        if format == JobStatsFormat::Legacy2_12 {
            if c.is_bytes() {
                let _ = write!(
                    out,
                    ", unit: bytes, min: {min:>7}, max: {max:>7}, sum: {sum:>15}"
                );
            } else {
                out.push_str(", unit:  reqs");
            }
        } else {
            let unit = if c.is_bytes() { "bytes" } else { "usecs" };
            let _ = write!(
                out,
                ", unit: {unit}, min: {min:>8}, max: {max:>8}, sum: {sum:>16}, sumsq: {sumsq:>18}"
            );
            let with_hist = matches!(format, JobStatsFormat::Lustre2_16 | JobStatsFormat::Master);
            if let (true, Some(h)) = (with_hist, e.hist(c)) {
                out.push_str(", hist: { ");
                let items: Vec<String> =
                    h.0.iter()
                        .enumerate()
                        .filter(|(_, &n)| n > 0)
                        .map(|(b, n)| format!("{}: {n}", hist_label(b)))
                        .collect();
                out.push_str(&items.join(", "));
                out.push_str(" }");
            }
        }
        out.push_str(" }\n");
    }
}

/// Why job_stats text could not be parsed: the 1-based line and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStatsParseError {
    pub line: usize,
    pub message: String,
}

impl JobStatsParseError {
    /// Whether the text was refused for having no parameter names
    /// ([`parse_lctl_brw_lossy`] with names required).
    pub fn nameless(&self) -> bool {
        self.message == NAMELESS_MESSAGE
    }
}

impl fmt::Display for JobStatsParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job_stats line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for JobStatsParseError {}

/// Longest text the parsers accept (a bound on outside input).
pub const JOB_STATS_TEXT_LEN_BYTES_MAX: usize = 256 << 20;

fn parse_time_ns(text: &str) -> Option<u64> {
    // Every entry has three time lines: the form Lustre prints is read in one pass, anything
    // else by the general reader below (which gives the same value for that form).
    if let Some(t) = parse_time_ns_printed(text.as_bytes()) {
        return Some(t);
    }
    parse_time_ns_general(text)
}

/// The common case of [`parse_time_ns`]: spaces, `S.N` with S of 1 to 19 digits and N of 1
/// to 9, then nothing or ` secs.nsecs`, then spaces. `None` for anything else (including a
/// value beyond u64), which is left to [`parse_time_ns_general`]; for every text accepted
/// here the general reader gives the same value (tested).
fn parse_time_ns_printed(bytes: &[u8]) -> Option<u64> {
    fn digits(bytes: &[u8], at: &mut usize, len_max: usize) -> Option<(u64, usize)> {
        let (n, len) = leading_digits(&bytes[*at..]);
        *at += len;
        (len > 0 && len <= len_max).then_some((n, len))
    }
    let mut at = bytes.iter().position(|&b| b != b' ')?;
    let (secs, _) = digits(bytes, &mut at, 19)?;
    if bytes.get(at) != Some(&b'.') {
        return None;
    }
    at += 1;
    let (frac, frac_len) = digits(bytes, &mut at, 9)?;
    let mut rest = &bytes[at..];
    const UNIT: &[u8; 11] = b" secs.nsecs";
    if let Some(Ok(unit)) = rest.get(..UNIT.len()).map(<&[u8; 11]>::try_from) {
        if unit == UNIT {
            rest = &rest[UNIT.len()..];
        }
    }
    if !rest.iter().all(|&b| b == b' ') {
        return None;
    }
    // 10^(9 - frac_len) for frac_len 1..=9.
    const SCALE: [u64; 10] = [
        1_000_000_000,
        100_000_000,
        10_000_000,
        1_000_000,
        100_000,
        10_000,
        1_000,
        100,
        10,
        1,
    ];
    secs.checked_mul(NS_PER_S)?
        .checked_add(frac * SCALE[frac_len])
}

/// [`parse_time_ns`] for any text: trimmed, `S.N` or `S`, with or without `secs.nsecs`.
fn parse_time_ns_general(text: &str) -> Option<u64> {
    let t = trim(text);
    let t = trim(t.strip_suffix("secs.nsecs").unwrap_or(t));
    let (s, ns) = match t.split_once('.') {
        Some((s, ns)) => {
            if ns.is_empty() || ns.len() > 9 || !ns.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let scale = 10u64.pow(9 - ns.len() as u32);
            (s, ns.parse::<u64>().ok()? * scale)
        }
        None => (t, 0),
    };
    s.parse::<u64>()
        .ok()?
        .checked_mul(NS_PER_S)?
        .checked_add(ns)
}

/// Most digits [`leading_digits`] reads: 19 digits never overflow a u64.
const DIGITS_READ_MAX: usize = 19;

/// The value and the count of the ASCII digits `bytes` starts with, at most
/// [`DIGITS_READ_MAX`] of them (the caller tells whether more follow). Eight at a time where
/// eight are there (SWAR, in one 64-bit word), then one at a time: every entry holds three
/// times of 19 digits.
fn leading_digits(bytes: &[u8]) -> (u64, usize) {
    let mut n = 0u64;
    let mut len = 0usize;
    while len + 8 <= DIGITS_READ_MAX {
        let Some(Ok(chunk)) = bytes.get(len..len + 8).map(<[u8; 8]>::try_from) else {
            break;
        };
        let Some(eight) = eight_digits(chunk) else {
            break;
        };
        // At most 16 digits so far: no overflow.
        n = n * 100_000_000 + eight;
        len += 8;
    }
    while len < DIGITS_READ_MAX {
        match bytes.get(len) {
            Some(&b) if b.is_ascii_digit() => {
                n = n * 10 + u64::from(b - b'0');
                len += 1;
            }
            _ => break,
        }
    }
    (n, len)
}

/// The value of eight ASCII digits, `None` if any byte is not one. A byte is a digit exactly
/// when its high nibble is 3 and adding 6 keeps it so (0x30..=0x39; no add carries into the
/// next byte once every high nibble is 3). The value: adjacent digits combined into pairs,
/// pairs into fours, fours into the eight, by multiplies (the "SWAR" digit parse).
fn eight_digits(chunk: [u8; 8]) -> Option<u64> {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let v = u64::from_le_bytes(chunk);
    if v & HIGH != ZEROS || v.wrapping_add(0x0606_0606_0606_0606) & HIGH != ZEROS {
        return None;
    }
    // Little-endian: the first digit is the lowest byte.
    let v = v - ZEROS;
    // Each byte pair (lo, hi) becomes lo * 10 + hi in the low byte of the pair.
    let v = (v * 10 + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    // Each 32-bit half: pair0 * 100 + pair1 in its low 16 bits.
    let v = (v * 100 + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    // The two halves: half0 * 10,000 + half1.
    Some((v & 0xFFFF) * 10_000 + (v >> 32))
}

/// A byte cursor over one counter body, for [`parse_counter_body_fast`].
struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn spaces(&mut self) {
        // Eight bytes at a time: Lustre pads its numbers to 7..18 columns, so runs of spaces
        // are most of a counter line. In a little-endian word the first byte that is not a
        // space is the lowest non-zero byte of `word ^ "        "`.
        const SPACES: u64 = u64::from_le_bytes([b' '; 8]);
        let bytes = self.bytes;
        let mut at = self.at;
        while let Some(chunk) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            let other = word ^ SPACES;
            if other != 0 {
                self.at = at + (other.trailing_zeros() / 8) as usize;
                return;
            }
            at += 8;
        }
        while bytes.get(at) == Some(&b' ') {
            at += 1;
        }
        self.at = at;
    }

    /// Takes `token` if the text continues with it.
    fn eat<const N: usize>(&mut self, token: &[u8; N]) -> bool {
        let end = self.at + N;
        // Compared as arrays of a length known at compile time: a load and a compare or two,
        // not a call to memcmp.
        match self.bytes.get(self.at..end).map(<&[u8; N]>::try_from) {
            Some(Ok(here)) if here == token => {
                self.at = end;
                true
            }
            _ => false,
        }
    }

    /// A run of ASCII digits as a u64; `None` if empty or beyond u64.
    fn number(&mut self) -> Option<u64> {
        let rest = &self.bytes[self.at..];
        // One pass: 19 digits never overflow a u64, so the first 19 need no check; a longer
        // run is rare (sums of squares) and re-read with checks.
        let mut n = 0u64;
        let mut len = 0;
        while let Some(&b) = rest.get(len) {
            if !b.is_ascii_digit() {
                break;
            }
            if len == 19 {
                let digits = &rest[..rest
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .unwrap_or(rest.len())];
                let n = digits.iter().try_fold(0u64, |n, &b| {
                    n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
                })?;
                self.at += digits.len();
                return Some(n);
            }
            n = n * 10 + u64::from(b - b'0');
            len += 1;
        }
        if len == 0 {
            return None;
        }
        self.at += len;
        Some(n)
    }

    /// A run of bytes matching `pred`, as text (never empty).
    fn word(&mut self, pred: impl Fn(u8) -> bool) -> Option<&'a str> {
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(|&b| pred(b)) {
            self.at += 1;
        }
        // Only ASCII bytes pass the predicates used, so the slice is on char boundaries.
        (self.at > start).then(|| &self.text[start..self.at])
    }
}

/// [`parse_counter_body_fast_with`] keeping histograms (what the tests compare with the
/// general parser).
#[cfg(test)]
fn parse_counter_body_fast(body: &str) -> Option<(Counter, &str, Option<Log2Hist>)> {
    parse_counter_body_fast_with::<true>(body)
}

/// The common case of [`parse_counter_body`] in one pass without allocation: exactly the form
/// Lustre prints, `{ samples: N, unit: U[, min|max|sum|sumsq: N]...[, hist: { L: N, ... }] }`
/// with spaces only. Anything else gives `None` and is left to the general parser; for every
/// text accepted here the result is the one the general parser gives (same fields, last value
/// wins, same histogram labels), so the fast path changes speed only. With `KEEP_HIST` false
/// the histogram is checked exactly as well (labels, counts, braces) but not kept (`None` is
/// returned for it): a reader of bulk totals need not fill 512 bytes per counter.
fn parse_counter_body_fast_with<const KEEP_HIST: bool>(
    body: &str,
) -> Option<(Counter, &str, Option<Log2Hist>)> {
    let mut c = Cursor {
        text: body,
        bytes: body.as_bytes(),
        at: 0,
    };
    let mut k = Counter::default();
    c.spaces();
    if !c.eat(b"{") {
        return None;
    }
    c.spaces();
    if !c.eat(b"samples:") {
        return None;
    }
    c.spaces();
    k.samples = c.number()?;
    c.spaces();
    if !c.eat(b",") {
        return None;
    }
    c.spaces();
    if !c.eat(b"unit:") {
        return None;
    }
    c.spaces();
    let unit = c.word(|b| b.is_ascii_lowercase())?;
    c.spaces();
    let mut hist = None;
    loop {
        if c.eat(b"}") {
            break;
        }
        if !c.eat(b",") {
            return None;
        }
        c.spaces();
        if c.eat(b"hist:") {
            c.spaces();
            if !c.eat(b"{") {
                return None;
            }
            let mut h = KEEP_HIST.then(Log2Hist::default);
            c.spaces();
            let mut first = true;
            while !c.eat(b"}") {
                if !first && !c.eat(b",") {
                    return None;
                }
                first = false;
                c.spaces();
                let label = c.word(|b| b.is_ascii_digit() || b"KMGTPE".contains(&b))?;
                let b = parse_hist_label(label)?;
                if !c.eat(b":") {
                    return None;
                }
                c.spaces();
                let n = c.number()?;
                if let Some(h) = h.as_mut() {
                    h.0[b] = n;
                }
                c.spaces();
            }
            hist = h;
            c.spaces();
            // The histogram is the last field.
            if !c.eat(b"}") {
                return None;
            }
            break;
        }
        let name = c.word(|b| b.is_ascii_lowercase())?;
        if !c.eat(b":") {
            return None;
        }
        c.spaces();
        let value = c.number()?;
        match name {
            "min" => k.min = value,
            "max" => k.max = value,
            "sum" => k.sum = value,
            "sumsq" => k.sumsq = value,
            // `samples` again, a future field, or text that might hold `hist:`: the general
            // parser decides.
            _ => return None,
        }
        c.spaces();
    }
    c.spaces();
    (c.at == c.bytes.len()).then_some((k, unit, hist))
}

/// Parses `{ samples: N, unit: U, min: .., hist: { 1M: 3 } }` into the counter, its unit and
/// its histogram.
fn parse_counter_body<const KEEP_HIST: bool>(
    body: &str,
) -> Result<(Counter, &str, Option<Log2Hist>), String> {
    match parse_counter_body_fast_with::<KEEP_HIST>(body) {
        Some(parsed) => Ok(parsed),
        None => parse_counter_body_general(body),
    }
}

/// [`parse_counter_body`] for any text: fields in any order, unknown fields tolerated.
fn parse_counter_body_general(body: &str) -> Result<(Counter, &str, Option<Log2Hist>), String> {
    let inner = body
        .trim()
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| format!("counter `{body}` is not in braces"))?;
    let (fields, hist_text) = match inner.split_once("hist:") {
        Some((f, h)) => (f, Some(h)),
        None => (inner, None),
    };
    let mut k = Counter::default();
    let mut unit = "";
    for field in fields.split(',') {
        let field = field.trim();
        if field.is_empty() {
            continue;
        }
        let (name, value) = field
            .split_once(':')
            .ok_or_else(|| format!("field `{field}` has no `:`"))?;
        let value = value.trim();
        let num = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("bad number `{value}` for `{}`", name.trim()))
        };
        match name.trim() {
            "samples" => k.samples = num()?,
            "unit" => unit = value,
            "min" => k.min = num()?,
            "max" => k.max = num()?,
            "sum" => k.sum = num()?,
            "sumsq" => k.sumsq = num()?,
            _ => {} // tolerate fields of future versions
        }
    }
    let hist = match hist_text {
        None => None,
        Some(h) => {
            let h = h
                .trim()
                .strip_prefix('{')
                .and_then(|h| h.trim_end().strip_suffix('}'))
                .ok_or_else(|| format!("histogram `{h}` is not in braces"))?;
            let mut hist = Log2Hist::default();
            for item in h.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let (label, n) = item
                    .split_once(':')
                    .ok_or_else(|| format!("histogram item `{item}` has no `:`"))?;
                let b = parse_hist_label(label.trim())
                    .ok_or_else(|| format!("bad histogram label `{label}`"))?;
                hist.0[b] = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad histogram count `{n}`"))?;
            }
            Some(hist)
        }
    };
    Ok((k, unit, hist))
}

/// Parses one `job_stats` value (any layout of §6.2, with or without the `param=` prefix on
/// the first line) into its entries, in file order.
pub fn parse_job_stats(text: &str) -> Result<Vec<JobEntry>, JobStatsParseError> {
    let mut all = parse_lctl_job_stats(text)?;
    match all.len() {
        0 => Ok(Vec::new()),
        1 => Ok(all.pop().expect("one").1),
        n => Err(JobStatsParseError {
            line: 0,
            message: format!("{n} job_stats parameters where one was expected"),
        }),
    }
}

/// Parses the output of `lctl get_param obdfilter.*.job_stats`: one `(param, entries)` pair per
/// OST. A value without any `param=` line gives one pair with an empty name.
pub fn parse_lctl_job_stats(
    text: &str,
) -> Result<Vec<(String, Vec<JobEntry>)>, JobStatsParseError> {
    parse_lctl_job_stats_impl::<JobEntry>(text, false).map(|(out, _)| out)
}

/// What [`parse_lctl_job_stats_lossy`] returns: the OSTs' entries and how many entries it
/// left out.
pub type LossyJobStats<E = JobEntry> = (Vec<(String, Vec<E>)>, usize);

/// As [`parse_lctl_job_stats`], but an entry that cannot be read (a job id that is not a
/// [`JobId`]: control characters or non-UTF-8 bytes once unescaped, longer than Lustre allows;
/// a malformed counter line) is left out, with the lines up to the next `- job_id:`, instead
/// of failing the whole text: one odd job on a real OSS must not blind a reader to the
/// others. Returns the entries and how many were left out. Fails only on oversized text.
pub fn parse_lctl_job_stats_lossy(text: &str) -> Result<LossyJobStats, JobStatsParseError> {
    parse_lctl_job_stats_impl::<JobEntry>(text, true)
}

fn parse_lctl_job_stats_impl<E: ParsedEntry>(
    text: &str,
    lossy: bool,
) -> Result<LossyJobStats<E>, JobStatsParseError> {
    if text.len() > JOB_STATS_TEXT_LEN_BYTES_MAX {
        return Err(JobStatsParseError {
            line: 0,
            message: format!("longer than {JOB_STATS_TEXT_LEN_BYTES_MAX} bytes"),
        });
    }
    let mut out: Vec<(String, Vec<E>)> = Vec::new();
    let mut skipped = 0usize;
    // Lossy mode: the entry being read was left out; its lines are ignored.
    let mut skipping = false;
    // Lossy mode: the field names the entry being read has shown. A raw (2.12-2.14) job id
    // holding a newline breaks its entry into a blank or repeated line; such an entry is left
    // out rather than read as the id before the newline.
    // Known names as bits, others borrowed from `text`: no allocation or string compare per
    // line. At most 64 names are remembered per entry, known or not.
    let mut fields: Vec<&str> = Vec::new();
    let mut field_bits = 0u32;
    let mut fields_remembered = 0usize;
    let mut in_entry = false;
    // Skimming (the agent's reader only): once an entry's bulk counters are read, the lines
    // after them are passed over unread (see [`parse_lctl_brw_lossy`]).
    let skims = lossy && E::SKIMS_AFTER_BULK;
    // Which bulk counters the entry being read has shown: bit 0 read, bit 1 write.
    let mut bulk_seen = 0u8;
    // Counted over the lines read; a skim passes lines uncounted, so it runs only in lossy
    // mode, whose errors carry no line number.
    let mut lineno = 0usize;
    let mut lines = LineCursor::new(text);
    while let Some(raw_line) = lines.next() {
        lineno += 1;
        let err = |message: String| JobStatsParseError {
            line: lineno,
            message,
        };
        // Trimmed once: what follows a parameter's `=` is trimmed again on its own.
        let line = raw_line;
        let line_trim = trim(line);
        if line_trim.is_empty() {
            if lossy && in_entry && !skipping {
                if let Some((_, entries)) = out.last_mut() {
                    if entries.pop().is_some() {
                        skipped += 1;
                    }
                }
                skipping = true;
            }
            continue;
        }
        // `obdfilter.X.job_stats=` possibly followed by `job_stats:` on the same line.
        let mut rest_trim = line_trim;
        if !line.starts_with([' ', '-', '{']) {
            if let Some((param, value)) = line.split_once('=') {
                if !param.is_empty() && !param.contains([' ', ':']) {
                    // OSTs of one OSS hold similar job counts: room for as many entries as
                    // the previous one saves regrowing a vector of large entries.
                    let room = out.last().map_or(0, |(_, e)| e.len());
                    out.push((param.to_string(), Vec::with_capacity(room)));
                    rest_trim = trim(value);
                }
            }
        }
        if rest_trim.is_empty() || rest_trim == "job_stats:" {
            in_entry = false;
            if out.is_empty() {
                out.push((String::new(), Vec::new()));
            }
            continue;
        }
        if out.is_empty() {
            out.push((String::new(), Vec::new()));
        }
        let entries = &mut out.last_mut().expect("pushed above").1;
        if let Some(job) = rest_trim.strip_prefix("- job_id:") {
            skipping = false;
            // Layouts before 2.15.2 print ids raw, so text that is not a valid quoted form is
            // taken as it stands. Lustre prints the id at a fixed column (`- %-16s %s`): in
            // lossy mode it is taken from there untrimmed, so a raw id with blanks or control
            // characters at its ends is left out rather than read as another job's id.
            let job = match raw_line.strip_prefix("- job_id:          ") {
                Some(exact) if lossy && !exact.starts_with(' ') => exact,
                _ => trim(job),
            };
            // Only a quoted id needs unescaping (and an allocation); a raw one is read as is.
            let unquoted: Result<std::borrow::Cow<str>, String> = if job.starts_with('"') {
                unquote_job_id(job).map(std::borrow::Cow::Owned)
            } else {
                Ok(std::borrow::Cow::Borrowed(job))
            };
            // A quoted id whose bytes are not UTF-8 cannot be held; lossy mode leaves it out
            // rather than take its quoted text for the id.
            let unreadable = lossy && unquoted.is_err() && job.starts_with('"');
            let raw = unquoted.unwrap_or(std::borrow::Cow::Borrowed(job));
            let job_id = match JobId::new(&raw) {
                _ if unreadable => {
                    skipped += 1;
                    skipping = true;
                    continue;
                }
                Ok(j) => j,
                Err(_) if lossy => {
                    skipped += 1;
                    skipping = true;
                    continue;
                }
                Err(e) => return Err(err(e.to_string())),
            };
            entries.push(E::new_parsed(job_id));
            in_entry = true;
            bulk_seen = 0;
            fields.clear();
            field_bits = 0;
            fields_remembered = 0;
            continue;
        }
        if skipping {
            continue;
        }
        if lossy {
            // A line that does not parse, or a field shown twice, drops its entry (already
            // pushed: take it back).
            let (field, value) = split_field(rest_trim);
            let kind = EntryField::of(field);
            let bit = kind.bit();
            let repeated = match bit {
                Some(b) => field_bits & b != 0,
                None => fields.contains(&field),
            };
            if fields_remembered < 64 {
                fields_remembered += 1;
                match bit {
                    Some(b) => field_bits |= b,
                    None => fields.push(field),
                }
            }
            match parse_entry_line(entries, rest_trim, kind, value) {
                Ok(set) if !repeated => {
                    bulk_seen |= match set {
                        Some(OstCounter::ReadBytes) => 1,
                        Some(OstCounter::WriteBytes) => 2,
                        _ => 0,
                    };
                    if skims && bulk_seen == 3 {
                        lines.seek(next_entry_or_param(text, lines.position()));
                    }
                }
                _ => {
                    if entries.pop().is_some() {
                        skipped += 1;
                    }
                    skipping = true;
                }
            }
            continue;
        }
        let (field, value) = split_field(rest_trim);
        parse_entry_line(entries, rest_trim, EntryField::of(field), value).map_err(err)?;
    }
    Ok((out, skipped))
}

/// What opens an entry (after white space at the start of its line).
const ENTRY_MARK: &[u8] = b"- job_id:";

/// The start of the first line at or after `from` (a line start) that the parsers would read
/// as opening an entry (white space, then `- job_id:`) or a parameter (`name=...`, as
/// [`starts_with_param_name`]); the text's length if none. What lies between is passed over
/// unread: one SIMD search (memchr2) over it for the bytes that can open either, `-` (the
/// entry mark's first byte, which counter lines do not hold) and `=` (every parameter line
/// holds one), each hit checked against its line, instead of a line-by-line parse.
fn next_entry_or_param(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut search = from;
    while let Some(i) = memchr::memchr2(b'-', b'=', &bytes[search..]) {
        let at = search + i;
        let start = memchr::memrchr(b'\n', &bytes[from..at]).map_or(from, |i| from + i + 1);
        // `at` is at an ASCII byte and `start` after a newline (or at `from`, a line start):
        // both char boundaries.
        let opens = if bytes[at] == b'-' {
            bytes[at..].starts_with(ENTRY_MARK) && trim(&text[start..at]).is_empty()
        } else {
            let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
            starts_with_param_name(&text[start..end])
        };
        if opens {
            debug_assert!(text.is_char_boundary(start));
            return start;
        }
        search = at + 1;
    }
    bytes.len()
}

/// What a line of an entry is, by its field name (read once per line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntryField {
    SnapshotTime,
    StartTime,
    ElapsedTime,
    Counter(OstCounter),
    Other,
}

impl EntryField {
    fn of(name: &str) -> EntryField {
        match name {
            "snapshot_time" => EntryField::SnapshotTime,
            "start_time" => EntryField::StartTime,
            "elapsed_time" => EntryField::ElapsedTime,
            _ => OstCounter::from_name(name).map_or(EntryField::Other, EntryField::Counter),
        }
    }

    /// A bit per field name Lustre prints in an entry (times and counters), for the lossy
    /// parser's check that no field shows twice.
    fn bit(self) -> Option<u32> {
        let i = match self {
            EntryField::SnapshotTime => 0,
            EntryField::StartTime => 1,
            EntryField::ElapsedTime => 2,
            EntryField::Counter(c) => 3 + c as u32,
            EntryField::Other => return None,
        };
        Some(1 << i)
    }
}

/// A line's field name (trimmed, up to its first `:`) and the text after that `:` (`None`
/// without one).
fn split_field(rest_trim: &str) -> (&str, Option<&str>) {
    // A byte search: field names are short, shorter than memchr's set-up.
    match rest_trim.bytes().position(|b| b == b':') {
        Some(at) => (trim(&rest_trim[..at]), Some(&rest_trim[at + 1..])),
        None => (trim(rest_trim), None),
    }
}

/// Applies one line of an entry (a time or a counter; `kind` and `value` from
/// [`split_field`] and [`EntryField::of`]) to the last entry of `entries`.
fn parse_entry_line<E: ParsedEntry>(
    entries: &mut [E],
    rest_trim: &str,
    kind: EntryField,
    value: Option<&str>,
) -> Result<Option<OstCounter>, String> {
    let entry = entries
        .last_mut()
        .ok_or_else(|| format!("`{rest_trim}` before any `- job_id:`"))?;
    let value = value.ok_or_else(|| format!("`{rest_trim}` has no `:`"))?;
    match kind {
        EntryField::SnapshotTime | EntryField::StartTime | EntryField::ElapsedTime => {
            let t = parse_time_ns(value).ok_or_else(|| format!("bad time `{value}`"))?;
            entry.set_time(kind, t);
            Ok(None)
        }
        EntryField::Counter(_) | EntryField::Other => {
            // A constant per entry type: the branch not taken is compiled away.
            let (counter, unit, hist) = if E::KEEPS_HIST {
                parse_counter_body::<true>(value)?
            } else {
                parse_counter_body::<false>(value)?
            };
            // The manual's oldest examples name the byte counters `read:`/`write:`.
            let c = match (kind, unit) {
                (EntryField::Counter(OstCounter::Read), "bytes") => OstCounter::ReadBytes,
                (EntryField::Counter(OstCounter::Write), "bytes") => OstCounter::WriteBytes,
                (EntryField::Counter(c), _) => c,
                (_, _) => return Ok(None),
            };
            entry.set_counter(c, counter, hist);
            Ok(Some(c))
        }
    }
}

/// `str::trim` (Unicode white space at both ends), with the ASCII case in a byte loop: the
/// parsers trim every line, and lines are ASCII but for job ids.
fn trim(text: &str) -> &str {
    // `char::is_whitespace` on ASCII: tab, LF, VT, FF, CR and space.
    let ws = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ');
    let bytes = text.as_bytes();
    // Nothing to trim when both ends are ASCII and not white space (a field name, mostly):
    // every white-space byte above is at most b' '.
    let plain = |b: u8| b > b' ' && b < 0x80;
    if let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) {
        if plain(first) && plain(last) {
            return text;
        }
    }
    let start = bytes.iter().position(|&b| !ws(b)).unwrap_or(bytes.len());
    let end = bytes[start..]
        .iter()
        .rposition(|&b| !ws(b))
        .map_or(start, |i| start + i + 1);
    // A non-ASCII byte at either end may be (part of) Unicode white space: the full trim.
    if bytes.get(start).is_some_and(|&b| b >= 0x80) || (end > start && bytes[end - 1] >= 0x80) {
        return text.trim();
    }
    &text[start..end]
}

/// What a parse keeps of each entry: everything ([`JobEntry`]) or the bulk totals a poller
/// needs ([`poll::BrwEntry`]). Both go through the one line parser, so they accept and refuse
/// the same texts.
trait ParsedEntry: Sized {
    /// Whether histograms are kept (else checked and dropped).
    const KEEPS_HIST: bool;
    /// Whether a lossy parse passes over an entry's lines after its bulk counters unread.
    const SKIMS_AFTER_BULK: bool;
    /// An entry just named by its `- job_id:` line (no time read yet).
    fn new_parsed(job: JobId) -> Self;
    fn set_time(&mut self, kind: EntryField, t_ns: u64);
    fn set_counter(&mut self, c: OstCounter, counter: Counter, hist: Option<Log2Hist>);
}

impl ParsedEntry for JobEntry {
    const KEEPS_HIST: bool = true;
    const SKIMS_AFTER_BULK: bool = false;

    fn new_parsed(job: JobId) -> JobEntry {
        let mut e = JobEntry::new(job, 0);
        e.start_time_ns = None;
        e
    }

    fn set_time(&mut self, kind: EntryField, t_ns: u64) {
        match kind {
            EntryField::SnapshotTime => self.snapshot_time_ns = t_ns,
            EntryField::StartTime => self.start_time_ns = Some(t_ns),
            _ => {} // derived: snapshot - start
        }
    }

    fn set_counter(&mut self, c: OstCounter, counter: Counter, hist: Option<Log2Hist>) {
        self.counters[c as usize] = counter;
        if let Some(h) = hist {
            match c {
                OstCounter::ReadBytes => self.read_hist = h,
                OstCounter::WriteBytes => self.write_hist = h,
                _ => {}
            }
        }
    }
}

impl ParsedEntry for poll::BrwEntry {
    const KEEPS_HIST: bool = false;
    const SKIMS_AFTER_BULK: bool = true;

    fn new_parsed(job: JobId) -> poll::BrwEntry {
        poll::BrwEntry::new(job)
    }

    fn set_time(&mut self, kind: EntryField, t_ns: u64) {
        match kind {
            EntryField::SnapshotTime => self.snapshot_time_ns = t_ns,
            EntryField::StartTime => self.start_time_ns = Some(t_ns),
            _ => {}
        }
    }

    fn set_counter(&mut self, c: OstCounter, counter: Counter, _hist: Option<Log2Hist>) {
        match c {
            OstCounter::ReadBytes => self.read = (counter.samples, counter.sum),
            OstCounter::WriteBytes => self.write = (counter.samples, counter.sum),
            _ => {}
        }
    }
}

/// As [`parse_lctl_job_stats_lossy`], keeping of each entry only its id, times and bulk
/// totals ([`poll::BrwEntry`], a twentieth of a [`JobEntry`]): what the Lustre agent reads
/// every period, at tens of thousands of entries.
///
/// It reads an entry's lines with the full parser's line parser (same checks: a malformed
/// line, a blank line or a field shown twice leaves the entry out) until the entry has shown
/// both bulk counters (`read_bytes` and `write_bytes`, or the oldest layouts' `read`/`write`
/// in bytes); the lines after them, up to the next line opening an entry (`- job_id:`) or a
/// parameter (`name=`), are passed over unread (one memchr2 search for `-` and `=` instead
/// of a parse: the 13 other counters are two thirds of the text and the agent uses none of
/// them). So an entry
/// is accepted when its id, its time lines and its bulk counters are well formed; what follows
/// them is not checked. Exactly: the result is the full lossy parser's on the text with those
/// passed-over lines removed (`the_compact_parser_reads_what_the_full_one_reads_up_to_the_bulk`
/// in the tests). On text Lustre printed the two agree; on garbled text this one keeps an
/// entry the full parser leaves out when the entry is garbled only after its bulk counters.
///
/// With `names_required`, text holding a line before the first `obdfilter.<target>.job_stats=`
/// name (what `lctl get_param -n` prints) is refused whole ([`JobStatsParseError::nameless`]):
/// without names, a reader cannot tell which OST an entry belongs to.
pub fn parse_lctl_brw_lossy(
    text: &str,
    names_required: bool,
) -> Result<LossyJobStats<poll::BrwEntry>, JobStatsParseError> {
    if names_required {
        if let Some((i, line)) = text.lines().enumerate().find(|(_, l)| !trim(l).is_empty()) {
            if !starts_with_param_name(line) {
                return Err(JobStatsParseError {
                    line: i + 1,
                    message: NAMELESS_MESSAGE.to_string(),
                });
            }
        }
    }
    parse_lctl_job_stats_impl(text, true)
}

/// What [`parse_lctl_brw_lossy`] says of text without parameter names.
pub const NAMELESS_MESSAGE: &str =
    "job_stats without parameter names (`lctl get_param -n`?): cannot tell which OST an entry is on";

/// Whether a line opens a parameter (`name=value`, the name without spaces or `:`), as the
/// parser reads one.
fn starts_with_param_name(line: &str) -> bool {
    let line = line.trim_end();
    if line.starts_with([' ', '-', '{']) {
        return false;
    }
    matches!(line.split_once('='), Some((param, _)) if !param.is_empty() && !param.contains([' ', ':']))
}
pub mod poll;

#[cfg(test)]
mod tests;
