//! Conversion of Darshan logs into a pfsqos scenario (docs/scenarios.md): one `[[job]]` per
//! log, `[[job.processes]]` groups built from the POSIX records, on a system copied from an
//! existing scenario (`--like`) or a small default one.
//!
//! What each scenario field comes from, and every approximation, is listed in the crate
//! documentation and `docs/traces.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use pfsqos_core::model::JobId;
use pfsqos_sim::scenario::{
    BS_MAX, GROUPS_PER_JOB_MAX, NODES_MAX, STRIPE_SIZE_MAX, STRIPE_SIZE_UNIT,
};
use pfsqos_sim::Scenario;
use toml::{Table, Value};

use crate::log::{posix, DarshanLog, LustreRecord, PosixRecord};

/// Largest `--scale`: scaling a trace up by more than this is not what a bake-off needs and
/// would overflow sizes.
pub const SCALE_MAX: f64 = 1e6;
/// Logs imported into one scenario.
pub const LOGS_MAX: usize = 1024;
/// Longest scenario description written (docs/scenarios.md: 16 KiB).
const DESCRIPTION_LEN_MAX: usize = 16 * 1024;

/// One log to import, with the label that names it in the scenario's description (the file
/// name, not its directory).
pub struct TraceInput {
    pub label: String,
    pub log: DarshanLog,
}

/// Reads every log of a multi-log import: the logs that read, labelled by file name, and the
/// refused ones, each with its path and the reason. One bad log refuses only itself; whether
/// that fails the import (`--strict`) is the caller's choice.
pub fn read_logs(paths: &[std::path::PathBuf]) -> (Vec<TraceInput>, Vec<(String, String)>) {
    let mut inputs = Vec::with_capacity(paths.len());
    let mut refused = Vec::new();
    for path in paths {
        match DarshanLog::read(path) {
            Ok(log) => {
                let label = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.display().to_string());
                inputs.push(TraceInput { label, log });
            }
            Err(e) => refused.push((path.display().to_string(), e.to_string())),
        }
    }
    assert_eq!(
        inputs.len() + refused.len(),
        paths.len(),
        "every log is read or refused"
    );
    (inputs, refused)
}

/// Options of an import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// A scenario whose system (everything but `[[job]]` and `[appset]`) the result uses:
    /// `(label for messages, TOML text)`.
    pub like: Option<(String, String)>,
    /// Multiplies every byte count (for quick runs); 1.0 keeps them.
    pub scale: f64,
    /// MPI ranks per compute node, to derive `nodes` from the log's `nprocs`.
    pub ranks_per_node: u32,
    /// The command line that produced the import, written as a comment at the top of the
    /// output so the file can be regenerated (each argument quoted for a POSIX shell).
    pub command: Vec<String>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            like: None,
            scale: 1.0,
            ranks_per_node: 1,
            command: Vec::new(),
        }
    }
}

/// Why an import failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError(pub String);

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ImportError {}

fn fail<T>(message: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError(message.into()))
}

/// Read or write: a process group of the workload model does one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    Read,
    Write,
}

impl Direction {
    fn rw(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
        }
    }
}

/// What one imported job holds, for reports and tests.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSummary {
    pub label: String,
    pub job_id: String,
    pub nprocs: i64,
    pub nodes: u32,
    /// Bytes read and written in the log's POSIX records.
    pub trace_bytes_read: u64,
    pub trace_bytes_written: u64,
    /// Bytes the job's process groups read and write (`numjobs × size` summed).
    pub scenario_bytes_read: u64,
    pub scenario_bytes_written: u64,
    /// The largest difference between scenario bytes and scaled trace bytes the rounding
    /// can make, per direction (see [`Group`]).
    pub rounding_bound_bytes: u64,
    pub groups: Vec<Group>,
    /// How coarsely records were grouped: 0 (finest) to 3 (one group per direction and
    /// file mode), the first level that fits in 64 groups.
    pub grouping_level: u8,
    /// POSIX records that moved no bytes (opens, stats only).
    pub records_without_bytes: usize,
    /// Wall-clock run time of the job in the log.
    pub run_time_s: f64,
    /// Files the log's POSIX records name.
    pub files: usize,
    /// The files that moved the most bytes (read + written, over all ranks), most first, at
    /// most [`BUSIEST_FILES`].
    pub busiest_files: Vec<FileSummary>,
    /// Where the groups' timeline comes from, when the log recorded one.
    pub timeline: Option<Timeline>,
}

/// Files listed in [`JobSummary::busiest_files`].
pub const BUSIEST_FILES: usize = 3;

/// Bytes one file moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSummary {
    pub name: String,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// The source of a job's timeline and its resolution.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// `"HEATMAP"` or `"DXT_POSIX"`.
    pub module: &'static str,
    /// Width of one interval: a burst per rank, direction and interval with I/O.
    pub interval_s: f64,
    /// Bytes the job moved (read + written) per interval, as the log recorded them (scaled
    /// by `--scale`): what a replay is compared with.
    pub bytes_per_interval: Vec<u64>,
}

/// One `[[job.processes]]` group.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub direction: Direction,
    pub shared: bool,
    pub numjobs: u32,
    pub bs_bytes: u64,
    pub size_bytes: u64,
    pub start_s: f64,
    pub stripe_count: Option<u32>,
    pub stripe_size_bytes: Option<u64>,
    pub stripe_offset: Option<u32>,
    /// Records (file x rank x direction) merged into the group.
    pub members: usize,
    /// `(at_s, bytes per process)` of each burst, for a group replaying the log's timeline
    /// (`kind = "bursts"`); empty otherwise.
    pub bursts: Vec<(f64, u64)>,
}

/// The result of an import.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The scenario file text (loads with [`Scenario::from_toml_str`]).
    pub toml: String,
    pub jobs: Vec<JobSummary>,
    /// Logs that could not be converted (no POSIX I/O, ...): `(label, reason)`.
    pub refused: Vec<(String, String)>,
}

/// One direction of one POSIX record, scaled.
#[derive(Clone, Debug)]
struct Item {
    direction: Direction,
    shared: bool,
    file_id: u64,
    /// Processes: 1 for a rank's record, nprocs for a shared record.
    numjobs: u64,
    bytes: u64,
    bs: u64,
    start_s: f64,
    stripe: Option<Stripe>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Stripe {
    count: u32,
    size: Option<u64>,
    first_ost: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    direction: Direction,
    shared: bool,
    file: Option<u64>,
    bs: Option<u64>,
    bytes_per_process: Option<u64>,
    stripe_layout: Option<Option<(u32, Option<u64>)>>,
    first_ost: Option<Option<u32>>,
    start_bucket: Option<i64>,
}

/// The grouping key of `item` at `level`: level 0 keeps records apart unless they agree on
/// direction, sharing, access size, bytes per process, layout, first OST and start (to
/// 0.1 s); level 1 forgets the first OST; level 2 also forgets the bytes per process and
/// buckets the start by 10 s; level 3 keeps only direction and sharing.
fn group_key(item: &Item, level: u8) -> GroupKey {
    GroupKey {
        direction: item.direction,
        shared: item.shared,
        file: (item.shared && level < 3).then_some(item.file_id),
        bs: (level < 3).then_some(item.bs),
        bytes_per_process: (level < 2).then(|| item.bytes / item.numjobs),
        stripe_layout: (level < 3).then(|| item.stripe.map(|s| (s.count, s.size))),
        first_ost: (level < 1).then(|| item.stripe.map(|s| s.first_ost)),
        start_bucket: match level {
            0 => Some((item.start_s * 10.0).floor() as i64),
            1 | 2 => Some((item.start_s / 10.0).floor() as i64),
            _ => None,
        },
    }
}

const GROUPING_LEVELS: u8 = 4;

/// Imports `inputs` (one job each) into one scenario.
pub fn import(inputs: &[TraceInput], options: &ImportOptions) -> Result<Imported, ImportError> {
    if inputs.is_empty() {
        return fail("no Darshan log given");
    }
    if inputs.len() > LOGS_MAX {
        return fail(format!(
            "{} logs given; at most {LOGS_MAX} go into one scenario",
            inputs.len()
        ));
    }
    if !(options.scale.is_finite() && options.scale > 0.0 && options.scale <= SCALE_MAX) {
        return fail(format!(
            "--scale {} is not allowed: a number > 0 and <= {SCALE_MAX}",
            options.scale
        ));
    }
    if options.ranks_per_node == 0 {
        return fail("--ranks-per-node must be at least 1");
    }
    let mut base = match &options.like {
        Some((label, text)) => like_system(label, text)?,
        None => default_system(),
    };
    let total_osts = count_osts(&base);
    assert!(total_osts >= 1, "a validated system has OSTs");

    let mut used_ids = BTreeSet::new();
    let mut jobs = Vec::new();
    let mut summaries = Vec::new();
    let mut latest_start_s: f64 = 0.0;
    let mut refused = Vec::new();
    for (k, input) in inputs.iter().enumerate() {
        let (job, summary) = match convert_log(k, input, options, total_osts, &mut used_ids) {
            Ok(j) => j,
            Err(e) => {
                refused.push((input.label.clone(), e.0));
                continue;
            }
        };
        for g in &summary.groups {
            latest_start_s = latest_start_s.max(g.start_s);
            if let Some(last) = g.bursts.last() {
                latest_start_s = latest_start_s.max(last.0);
            }
        }
        jobs.push(Value::Table(job));
        summaries.push(summary);
    }
    if jobs.is_empty() {
        let reasons: Vec<String> = refused.iter().map(|(_, r)| r.clone()).collect();
        return fail(format!("no log could be converted: {}", reasons.join("; ")));
    }

    // Every start must fall inside the run: stretch `duration_s` if the trace needs it.
    if let Some(Value::Table(sim)) = base.get_mut("simulation") {
        let duration = sim
            .get("duration_s")
            .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
            .unwrap_or(0.0);
        if duration <= latest_start_s {
            sim.insert(
                "duration_s".into(),
                Value::Float((latest_start_s + 60.0).ceil()),
            );
        }
    }
    base.insert("name".into(), Value::String("darshan-traces".into()));
    base.insert(
        "description".into(),
        Value::String(description(&summaries, options)),
    );
    base.insert("job".into(), Value::Array(jobs));

    let body = toml::to_string(&base)
        .or_else(|e| fail(format!("cannot write the scenario as TOML: {e}")))?;
    let mut text = String::new();
    text.push_str("# Generated by `pfsqos trace import` from Darshan logs (docs/traces.md).\n");
    if !options.command.is_empty() {
        text.push_str("# Regenerate with:\n#   ");
        let quoted: Vec<String> = options.command.iter().map(|a| shell_quote(a)).collect();
        text.push_str(&quoted.join(" "));
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&body);
    // The result must be a valid scenario; anything else is a converter bug or a system the
    // traces do not fit (e.g. more processes than the simulator takes).
    Scenario::from_toml_str(&text, "imported scenario").or_else(|e| {
        fail(format!(
            "the imported scenario is not valid: {e} (see docs/traces.md for the limits)"
        ))
    })?;
    Ok(Imported {
        toml: text,
        jobs: summaries,
        refused,
    })
}

/// A POSIX shell word for `arg`: as is when it holds only safe characters, else in single
/// quotes, or `$'...'` with escapes when it holds control characters, so the comment it goes
/// in stays one line.
pub fn shell_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        return arg.to_string();
    }
    if !arg.chars().any(char::is_control) {
        return format!("'{}'", arg.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in arg.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            '\r' => out.push_str(r"\r"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// The system of `--like`: the scenario's table without its jobs and application set,
/// checked to load first so errors point at that file.
fn like_system(label: &str, text: &str) -> Result<Table, ImportError> {
    Scenario::from_toml_str(text, label).or_else(|e| fail(format!("--like: {e}")))?;
    let mut table: Table = text
        .parse()
        .or_else(|e| fail(format!("--like {label}: {e}")))?;
    table.remove("job");
    table.remove("appset");
    Ok(table)
}

/// The system used without `--like` (docs/traces.md): 8 clients and two SSD servers of four
/// OSTs with a capacity (so every placement, iez included, runs on it).
fn default_system() -> Table {
    let text = r#"
[simulation]
duration_s = 3600.0
bin_ms = 100
seed = 1

[cluster]
clients = 8

[[oss]]
name = "oss0"
osts = 4
device = "ssd-sata"
ost_capacity = "2T"

[[oss]]
name = "oss1"
osts = 4
device = "ssd-sata"
ost_capacity = "2T"
"#;
    text.parse().expect("the default system is valid TOML")
}

fn count_osts(system: &Table) -> u32 {
    system
        .get("oss")
        .and_then(Value::as_array)
        .map(|osses| {
            osses
                .iter()
                .filter_map(|o| o.get("osts").and_then(Value::as_integer))
                .map(|n| n.clamp(0, u32::MAX as i64) as u32)
                .sum()
        })
        .unwrap_or(0)
}

/// The pfsqos job id for log `index`: the log's jobid when it is a valid, rule-safe JobID
/// not used yet, else `darshan<index+1>` (with a suffix if that is taken too).
fn job_id_for(index: usize, jobid: i64, used: &mut BTreeSet<String>) -> String {
    let candidates = std::iter::once(jobid.to_string())
        .filter(|_| jobid > 0)
        .chain(std::iter::once(format!("darshan{}", index + 1)))
        .chain((2..).map(|n| format!("darshan{}-{n}", index + 1)));
    for id in candidates {
        let valid = JobId::new(&id)
            .map(|j| pfsqos_core::control::rules::job_id_is_rule_safe(&j))
            .unwrap_or(false);
        if valid && !used.contains(&id) {
            used.insert(id.clone());
            return id;
        }
    }
    unreachable!("the candidate ids never run out")
}

/// The most common access size of a record (Darshan keeps the four most common, over reads
/// and writes together), or the mean size of its `ops` operations if it kept none.
fn access_size(rec: &PosixRecord, bytes: u64, ops: i64) -> u64 {
    let mut best: Option<(i64, i64)> = None;
    for k in 0..4 {
        let size = rec.counters[posix::ACCESS1_ACCESS + k];
        let count = rec.counters[posix::ACCESS1_COUNT + k];
        if size > 0 && count > 0 && best.is_none_or_smaller(count) {
            best = Some((count, size));
        }
    }
    let size = match best {
        Some((_, size)) => size as u64,
        None => bytes.div_ceil(ops.max(1) as u64),
    };
    size.clamp(1, BS_MAX)
}

trait BestCount {
    fn is_none_or_smaller(&self, count: i64) -> bool;
}
impl BestCount for Option<(i64, i64)> {
    fn is_none_or_smaller(&self, count: i64) -> bool {
        match self {
            None => true,
            Some((c, _)) => count > *c,
        }
    }
}

/// A file's layout on the target system: its stripe count capped by the system's OSTs, its
/// stripe size if the simulator accepts it, and its first OST modulo the system's OSTs (so
/// files that shared an OST in the trace share one here).
fn stripe_of(lustre: &LustreRecord, total_osts: u32) -> Option<Stripe> {
    let first_component = lustre.components.first()?;
    if first_component.stripe_count() < 1 {
        return None;
    }
    let count = (first_component.stripe_count() as u64).min(total_osts as u64) as u32;
    let size = u64::try_from(first_component.stripe_size())
        .ok()
        .filter(|s| *s > 0 && s.is_multiple_of(STRIPE_SIZE_UNIT) && *s <= STRIPE_SIZE_MAX);
    let first = first_component.ost_ids.first().copied().unwrap_or(0).max(0) as u64;
    Some(Stripe {
        count,
        size,
        first_ost: (first % total_osts as u64) as u32,
    })
}

fn convert_log(
    index: usize,
    input: &TraceInput,
    options: &ImportOptions,
    total_osts: u32,
    used_ids: &mut BTreeSet<String>,
) -> Result<(Table, JobSummary), ImportError> {
    let log = &input.log;
    let label = &input.label;
    if log.posix.is_empty() {
        return fail(format!(
            "{label}: the log has no POSIX module records, so no I/O to replay \
             (only POSIX records are converted)"
        ));
    }
    let nprocs = log.job.nprocs;
    let mut lustre: BTreeMap<u64, &LustreRecord> = BTreeMap::new();
    for l in &log.lustre {
        lustre.entry(l.id).or_insert(l);
    }
    let mut items = Vec::new();
    let mut file_bytes: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let (mut trace_read, mut trace_written) = (0u64, 0u64);
    let mut without_bytes = 0;
    for rec in &log.posix {
        let read = rec.counters[posix::BYTES_READ].max(0) as u64;
        let written = rec.counters[posix::BYTES_WRITTEN].max(0) as u64;
        trace_read += read;
        trace_written += written;
        let f = file_bytes.entry(rec.id).or_default();
        f.0 += read;
        f.1 += written;
        if read == 0 && written == 0 {
            without_bytes += 1;
            continue;
        }
        let stripe = lustre.get(&rec.id).and_then(|l| stripe_of(l, total_osts));
        for (direction, bytes, ops, start) in [
            (
                Direction::Read,
                read,
                rec.counters[posix::READS],
                rec.fcounters[posix::F_READ_START_TIMESTAMP],
            ),
            (
                Direction::Write,
                written,
                rec.counters[posix::WRITES],
                rec.fcounters[posix::F_WRITE_START_TIMESTAMP],
            ),
        ] {
            if bytes == 0 {
                continue;
            }
            let shared = rec.rank < 0;
            let numjobs = if shared { nprocs as u64 } else { 1 };
            let scaled = ((bytes as f64) * options.scale).round().max(1.0) as u64;
            items.push(Item {
                direction,
                shared,
                file_id: rec.id,
                numjobs,
                bytes: scaled,
                bs: access_size(rec, bytes, ops),
                start_s: if start.is_finite() {
                    start.max(0.0)
                } else {
                    0.0
                },
                stripe,
            });
        }
    }
    if items.is_empty() {
        return fail(format!(
            "{label}: no POSIX record of the log read or wrote a byte; nothing to replay"
        ));
    }
    let (level, grouped) = (0..GROUPING_LEVELS)
        .map(|level| {
            let mut groups: BTreeMap<GroupKey, Vec<&Item>> = BTreeMap::new();
            for item in &items {
                groups.entry(group_key(item, level)).or_default().push(item);
            }
            (level, groups)
        })
        .find(|(_, g)| g.len() <= GROUPS_PER_JOB_MAX)
        .expect("level 3 has at most four groups");
    let mut groups: Vec<Group> = grouped.values().map(|m| merge(m)).collect();
    let mut level = level;
    let timeline = match timeline_bins(log, options.scale) {
        Some(bins) => {
            let (tgroups, coarse) = timeline_groups(&bins, &items);
            groups = tgroups;
            level = coarse;
            Some(Timeline {
                module: bins.module,
                interval_s: bins.width_s,
                bytes_per_interval: bins.totals(),
            })
        }
        None => None,
    };

    let mut busiest: Vec<(&u64, &(u64, u64))> =
        file_bytes.iter().filter(|(_, b)| b.0 + b.1 > 0).collect();
    busiest.sort_by_key(|(id, b)| (std::cmp::Reverse(b.0 + b.1), **id));
    let busiest_files = busiest
        .iter()
        .take(BUSIEST_FILES)
        .map(|(id, b)| FileSummary {
            name: log
                .name(**id)
                .map(str::to_string)
                .unwrap_or_else(|| format!("record {id}")),
            bytes_read: b.0,
            bytes_written: b.1,
        })
        .collect();
    let job_id = job_id_for(index, log.job.jobid, used_ids);
    let nodes = (nprocs as u64)
        .div_ceil(options.ranks_per_node as u64)
        .clamp(1, NODES_MAX as u64) as u32;
    let mut job = Table::new();
    job.insert("id".into(), Value::String(job_id.clone()));
    job.insert("nodes".into(), Value::Integer(nodes as i64));
    if let Ok(uid) = u32::try_from(log.job.uid) {
        job.insert("uid".into(), Value::Integer(uid as i64));
    }
    let processes: Vec<Value> = groups
        .iter()
        .map(|g| Value::Table(group_table(g)))
        .collect();
    job.insert("processes".into(), Value::Array(processes));

    let bytes_of = |d: Direction| -> u64 {
        groups
            .iter()
            .filter(|g| g.direction == d)
            .map(|g| g.numjobs as u64 * g.size_bytes)
            .sum()
    };
    let rounding_bound_bytes = groups
        .iter()
        .map(|g| {
            g.numjobs as u64 + g.members as u64 + g.bursts.len() as u64 * (g.numjobs as u64 + 1)
        })
        .sum();
    let summary = JobSummary {
        label: label.clone(),
        job_id,
        nprocs,
        nodes,
        trace_bytes_read: trace_read,
        trace_bytes_written: trace_written,
        scenario_bytes_read: bytes_of(Direction::Read),
        scenario_bytes_written: bytes_of(Direction::Write),
        rounding_bound_bytes,
        groups,
        grouping_level: level,
        records_without_bytes: without_bytes,
        run_time_s: log.run_time_s(),
        files: file_bytes.len(),
        busiest_files,
        timeline,
    };
    Ok((job, summary))
}

/// One group from its members: per-process records add processes, shared records run on
/// all ranks; bytes are divided evenly over the processes (rounded to the nearest byte, at
/// least 1); the access size and layout are those of the member moving the most bytes; the
/// start is the earliest member's; the first OST is kept when all members agree on it.
fn merge(members: &[&Item]) -> Group {
    assert!(!members.is_empty(), "a group has members");
    let first = members[0];
    let numjobs = if first.shared {
        members.iter().map(|m| m.numjobs).max().unwrap_or(1)
    } else {
        members.iter().map(|m| m.numjobs).sum()
    };
    let total: u64 = members.iter().map(|m| m.bytes).sum();
    let size = ((total as f64 / numjobs as f64).round() as u64).max(1);
    let mut heaviest = first;
    for m in members {
        if m.bytes > heaviest.bytes {
            heaviest = m;
        }
    }
    let start_s = members
        .iter()
        .map(|m| m.start_s)
        .fold(f64::INFINITY, f64::min);
    let same_first_ost = members
        .iter()
        .all(|m| m.stripe.map(|s| s.first_ost) == first.stripe.map(|s| s.first_ost));
    Group {
        direction: first.direction,
        shared: first.shared,
        numjobs: u32::try_from(numjobs).unwrap_or(u32::MAX),
        bs_bytes: heaviest.bs.min(size),
        size_bytes: size,
        // Milliseconds are plenty for a start time and keep the file readable.
        start_s: (start_s * 1000.0).floor() / 1000.0,
        stripe_count: heaviest.stripe.map(|s| s.count),
        stripe_size_bytes: heaviest.stripe.and_then(|s| s.size),
        stripe_offset: if same_first_ost {
            first.stripe.map(|s| s.first_ost)
        } else {
            None
        },
        members: members.len(),
        bursts: Vec::new(),
    }
}

/// A size as the scenario format writes it: `"4M"` when it is a whole number of KiB, MiB or
/// GiB, else the number of bytes.
fn size_value(bytes: u64) -> Value {
    for (unit, shift) in [("G", 30), ("M", 20), ("k", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return Value::String(format!("{}{unit}", bytes >> shift));
        }
    }
    Value::Integer(bytes as i64)
}

fn group_table(g: &Group) -> Table {
    let mut t = Table::new();
    t.insert("rw".into(), Value::String(g.direction.rw().into()));
    t.insert("bs".into(), size_value(g.bs_bytes));
    t.insert("size".into(), size_value(g.size_bytes));
    t.insert("numjobs".into(), Value::Integer(g.numjobs as i64));
    t.insert(
        "file".into(),
        Value::String(if g.shared { "shared" } else { "per-process" }.into()),
    );
    if let Some(c) = g.stripe_count {
        t.insert("stripe_count".into(), Value::Integer(c as i64));
    }
    if let Some(s) = g.stripe_size_bytes {
        t.insert("stripe_size".into(), size_value(s));
    }
    if let Some(o) = g.stripe_offset {
        t.insert("stripe_offset".into(), Value::Integer(o as i64));
    }
    if !g.bursts.is_empty() {
        let mut shape = Table::new();
        shape.insert("kind".into(), Value::String("bursts".into()));
        let bursts: Vec<Value> = g
            .bursts
            .iter()
            .map(|&(at_s, size)| {
                let mut b = Table::new();
                b.insert("at_s".into(), Value::Float(at_s));
                b.insert("size".into(), size_value(size));
                Value::Table(b)
            })
            .collect();
        shape.insert("bursts".into(), Value::Array(bursts));
        t.insert("shape".into(), Value::Table(shape));
    } else if g.start_s > 0.0 {
        let mut shape = Table::new();
        shape.insert("kind".into(), Value::String("continuous".into()));
        shape.insert("start_s".into(), Value::Float(g.start_s));
        t.insert("shape".into(), Value::Table(shape));
    }
    t
}

fn description(jobs: &[JobSummary], options: &ImportOptions) -> String {
    let mut d = format!(
        "Darshan traces imported by `pfsqos trace import` (docs/traces.md), one job per log, \
         bytes scaled by {}. ",
        options.scale
    );
    for j in jobs {
        d.push_str(&format!(
            "Job {} from {}: {} ranks, {} bytes read and {} written in the trace, {} process \
             groups. ",
            j.job_id,
            j.label,
            j.nprocs,
            j.trace_bytes_read,
            j.trace_bytes_written,
            j.groups.len()
        ));
    }
    if d.len() > DESCRIPTION_LEN_MAX {
        let mut end = DESCRIPTION_LEN_MAX - 3;
        while !d.is_char_boundary(end) {
            end -= 1;
        }
        d.truncate(end);
        d.push_str("...");
    }
    d.trim_end().to_string()
}

/// A log's I/O per rank and direction in intervals of equal width from the job's start.
struct Bins {
    module: &'static str,
    width_s: f64,
    /// rank -> (bytes written, bytes read) per interval.
    ranks: BTreeMap<i64, (Vec<u64>, Vec<u64>)>,
}

impl Bins {
    fn add(&mut self, rank: i64, write: bool, t_s: f64, bytes: u64) {
        if bytes == 0 || !t_s.is_finite() {
            return;
        }
        let k = ((t_s.max(0.0) / self.width_s).floor() as usize).min(BINS_MAX - 1);
        let (w, r) = self.ranks.entry(rank).or_default();
        let v = if write { w } else { r };
        if v.len() <= k {
            v.resize(k + 1, 0);
        }
        v[k] = v[k].saturating_add(bytes);
    }

    fn totals(&self) -> Vec<u64> {
        let mut t: Vec<u64> = Vec::new();
        for (w, r) in self.ranks.values() {
            for v in [w, r] {
                if t.len() < v.len() {
                    t.resize(v.len(), 0);
                }
                for (k, b) in v.iter().enumerate() {
                    t[k] += b;
                }
            }
        }
        t
    }
}

/// Intervals of a timeline: at most the bursts one group may have.
const BINS_MAX: usize = pfsqos_sim::scenario::BURSTS_MAX;
/// DXT records every operation; they are summed over intervals of this width (or wider, to
/// stay within [`BINS_MAX`]).
const DXT_INTERVAL_S: f64 = 0.1;

/// The log's timeline: its POSIX HEATMAP records if it has any with I/O, else its DXT_POSIX
/// records; bytes scaled by `scale` (rounded, at least 1 byte in an interval with I/O).
fn timeline_bins(log: &DarshanLog, scale: f64) -> Option<Bins> {
    let scaled = |b: i64| -> u64 {
        if b <= 0 {
            0
        } else {
            ((b as f64 * scale).round() as u64).max(1)
        }
    };
    let heat: Vec<_> = log
        .posix_heatmap()
        .filter(|h| h.bin_width_s > 0.0 && h.rank >= 0)
        .filter(|h| h.write_bins.iter().chain(&h.read_bins).any(|&b| b > 0))
        .collect();
    if !heat.is_empty() {
        let nbins = heat.iter().map(|h| h.write_bins.len()).max().unwrap_or(1);
        let width = heat.iter().map(|h| h.bin_width_s).fold(0.0, f64::max);
        // Wider intervals when the heatmap has more bins than a group may have bursts.
        let factor = nbins.div_ceil(BINS_MAX).max(1) as f64;
        let mut bins = Bins {
            module: "HEATMAP",
            width_s: (width * factor).max(0.001),
            ranks: BTreeMap::new(),
        };
        for h in heat {
            for (k, (&w, &r)) in h.write_bins.iter().zip(&h.read_bins).enumerate() {
                let t = k as f64 * h.bin_width_s;
                bins.add(h.rank, true, t, scaled(w));
                bins.add(h.rank, false, t, scaled(r));
            }
        }
        return Some(bins);
    }
    let segs = || {
        log.dxt_posix.iter().flat_map(|d| {
            d.writes
                .iter()
                .map(move |s| (d.rank, true, s))
                .chain(d.reads.iter().map(move |s| (d.rank, false, s)))
        })
    };
    let span = segs()
        .filter(|(_, _, s)| s.length > 0 && s.start_s.is_finite())
        .map(|(_, _, s)| s.start_s)
        .fold(f64::NAN, f64::max);
    if !span.is_finite() {
        return None;
    }
    let mut bins = Bins {
        module: "DXT_POSIX",
        width_s: DXT_INTERVAL_S.max(span / (BINS_MAX - 1) as f64),
        ranks: BTreeMap::new(),
    };
    for (rank, write, s) in segs() {
        if rank >= 0 {
            bins.add(rank, write, s.start_s, scaled(s.length));
        }
    }
    Some(bins)
}

/// Process groups replaying `bins`: one process per rank and direction with I/O, a burst in
/// each interval with bytes (at the interval's start, of its bytes); ranks with the same
/// bursts form one group. With more than 64 distinct groups, ranks (ordered by their bytes)
/// are split into at most 32 groups per direction whose bursts are the members' mean, and
/// the second value is 1 (else 0). File mode, access size and layout come from the log's
/// POSIX records (`items`): shared when most bytes went to shared files, the access size and
/// layout of the record moving the most bytes.
fn timeline_groups(bins: &Bins, items: &[Item]) -> (Vec<Group>, u8) {
    let shared_bytes: u64 = items.iter().filter(|i| i.shared).map(|i| i.bytes).sum();
    let all_bytes: u64 = items.iter().map(|i| i.bytes).sum();
    let shared = 2 * shared_bytes > all_bytes;
    let heaviest = |d: Direction| {
        items
            .iter()
            .filter(|i| i.direction == d)
            .max_by_key(|i| i.bytes)
            .or_else(|| items.iter().max_by_key(|i| i.bytes))
    };
    let at = |k: usize| (k as f64 * bins.width_s * 1e6).round() / 1e6;
    let mut out = Vec::new();
    let mut per_direction: Vec<(Direction, Vec<Vec<u64>>)> = Vec::new();
    for d in [Direction::Write, Direction::Read] {
        let series: Vec<Vec<u64>> = bins
            .ranks
            .values()
            .map(|(w, r)| if d == Direction::Write { w } else { r })
            .filter(|v| v.iter().any(|&b| b > 0))
            .cloned()
            .collect();
        per_direction.push((d, series));
    }
    let distinct: usize = per_direction
        .iter()
        .map(|(_, s)| s.iter().collect::<BTreeSet<_>>().len())
        .sum();
    let coarse = distinct > GROUPS_PER_JOB_MAX;
    for (d, series) in per_direction {
        if series.is_empty() {
            continue;
        }
        // (bursts per process, processes)
        let mut sets: Vec<(Vec<u64>, usize)> = Vec::new();
        if !coarse {
            let mut same: BTreeMap<&Vec<u64>, usize> = BTreeMap::new();
            for s in &series {
                *same.entry(s).or_default() += 1;
            }
            sets.extend(same.into_iter().map(|(s, n)| (s.clone(), n)));
        } else {
            let mut sorted: Vec<&Vec<u64>> = series.iter().collect();
            sorted.sort_by_key(|s| (s.iter().sum::<u64>(), s.iter().position(|&b| b > 0)));
            let chunk = sorted.len().div_ceil(GROUPS_PER_JOB_MAX / 2);
            for members in sorted.chunks(chunk) {
                let len = members.iter().map(|s| s.len()).max().unwrap_or(0);
                let n = members.len() as u64;
                let mean: Vec<u64> = (0..len)
                    .map(|k| {
                        let sum: u64 = members.iter().map(|s| s.get(k).copied().unwrap_or(0)).sum();
                        if sum == 0 {
                            0
                        } else {
                            ((sum as f64 / n as f64).round() as u64).max(1)
                        }
                    })
                    .collect();
                sets.push((mean, members.len()));
            }
        }
        let h = heaviest(d);
        for (s, n) in sets {
            let bursts: Vec<(f64, u64)> = s
                .iter()
                .enumerate()
                .filter(|(_, &b)| b > 0)
                .map(|(k, &b)| (at(k), b))
                .collect();
            let size: u64 = bursts.iter().map(|b| b.1).sum();
            let stripe = h.and_then(|i| i.stripe);
            out.push(Group {
                direction: d,
                shared,
                numjobs: u32::try_from(n).unwrap_or(u32::MAX),
                bs_bytes: h
                    .map(|i| i.bs)
                    .unwrap_or(1 << 20)
                    .clamp(1, BS_MAX)
                    .min(size),
                size_bytes: size,
                start_s: bursts.first().map(|b| b.0).unwrap_or(0.0),
                stripe_count: stripe.map(|s| s.count),
                stripe_size_bytes: stripe.and_then(|s| s.size),
                stripe_offset: stripe.map(|s| s.first_ost),
                members: n,
                bursts,
            });
        }
    }
    (out, coarse as u8)
}

/// How well a run replays a job's timeline: the fraction of the log's bytes that the run
/// moved in the same interval, `Σ_k min(run_k, log_k) / Σ_k log_k` over the timeline's
/// intervals (1 when every interval moved exactly the log's bytes; bytes moved late count
/// only up to the log's bytes of their interval). `job` is the job's output of a run of the
/// imported scenario, whose time-series bins are `bin_ns` wide.
pub fn replay_match(timeline: &Timeline, job: &pfsqos_sim::JobOutput, bin_ns: u64) -> f64 {
    assert!(bin_ns > 0 && timeline.interval_s > 0.0);
    let interval_ns = timeline.interval_s * 1e9;
    let mut run = vec![0u64; timeline.bytes_per_interval.len()];
    for (_, ost) in job.bytes_per_ost_bin.iter() {
        for (k, &b) in ost.iter().enumerate() {
            let i = ((k as f64 * bin_ns as f64) / interval_ns + 1e-9).floor() as usize;
            if let Some(slot) = run.get_mut(i) {
                *slot += b;
            }
        }
    }
    let total: u64 = timeline.bytes_per_interval.iter().sum();
    if total == 0 {
        return 1.0;
    }
    let matched: u64 = run
        .iter()
        .zip(&timeline.bytes_per_interval)
        .map(|(&r, &l)| r.min(l))
        .sum();
    matched as f64 / total as f64
}
