//! `pfsqos stat`: the top jobs per OST and over the whole file system, like Lustre's
//! `lljobstat`, and with `--record DIR` the same `timeseries.csv`, `summary.json` and
//! `report.html` a simulated run produces.
//!
//! It reads `obdfilter.*.job_stats` from each ossd (through `lctl`'s client), parses it with
//! `pfsqos_core::jobstats::parse_lctl_job_stats` (the parser the Lustre adapter uses) and prints
//! at once the cumulative view (the counters since each job's entry was created or cleared, as
//! lljobstat prints them), then every interval the jobs with the most operations *in that
//! interval* (deltas of the job_stats counters; a counter that went backwards, after a `clear`
//! or an expiry, restarts from zero) with their rates. `-n N` prints N blocks, the cumulative
//! one first (lljobstat's `-n`, whose first block is also printed at once). Output, YAML like
//! `lljobstat`'s, with its abbreviations:
//!
//! ```text
//! ---
//! timestamp: 1700000000
//! cumulative: true
//! top_jobs:
//!   pfsqos-OST0000:
//!   - dd.0: {ops: 120, wr: 120, wb: 503316480}
//!   pfsqos-OST0001: []
//! filesystem:
//! - dd.0: {ops: 120, wr: 120, wb: 503316480, osts: 1}
//! ---
//! timestamp: 1700000010
//! interval_s: 10
//! top_jobs:
//!   pfsqos-OST0000:
//!   - dd.0: {ops: 12, wr: 12, wb: 50331648, wb_mib_s: 4.80}
//!   pfsqos-OST0001: []
//! filesystem:
//! - dd.0: {ops: 12, wr: 12, wb: 50331648, osts: 1, wb_mib_s: 4.80}
//! ```
//!
//! `ops` counts every operation sample (not the byte counters); the other keys are printed
//! only when not zero: `rd` read, `wr` write, `ga` getattr, `sa` setattr, `pu` punch, `sy`
//! sync, `dt` destroy, `cr` create, `st` statfs, `gi` get_info, `si` set_info, `qc` quotactl,
//! `pa` prealloc, `rb` read_bytes, `wb` write_bytes; in an interval block `rb_mib_s` and
//! `wb_mib_s` are those bytes over the interval in MiB/s (2 decimals). `filesystem:` sums each
//! job over every OST of every server (`osts`: on how many it did I/O), the top `-c` jobs in
//! the same order. Job ids are quoted as job_stats quotes them. With several servers, OST
//! names are prefixed by the server address (`127.0.0.1:7988/pfsqos-OST0000`), since each ossd
//! numbers its OSTs from 0.
//!
//! When a fair-queuing policy runs (`dsfq` or `sfqd` by job id), each block also shows
//! every job's share of the bytes moved over all servers against its share of the weights
//! (weights from `ost.OSS.ost_io.nrs_dsfq_flows` / `nrs_sfqd_flows`, the weight each flow is
//! bound to; the largest when servers disagree), over the jobs that moved bytes:
//!
//! ```text
//! shares:
//! - big: {bytes: 83886080, share: 0.800, weight: 4, weight_share: 0.800}
//! ```
//!
//! Recording: bin `k` of the time series holds the bytes (read + written) each job moved on
//! each OST during interval `k` (the cumulative block is not a bin); bins are the nominal
//! intervals (the loop keeps a fixed schedule, so sampling jitter does not accumulate). The run
//! is written when the last block is printed or on SIGINT/SIGTERM.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use pfsqos_core::jobstats::{
    counters_delta, parse_lctl_job_stats, quote_job_id, OstCounter, OST_COUNTER_COUNT,
};
use pfsqos_core::run::{EngineStats, JobOutput, JobSeries, RunOutput};

use crate::lctl::format_param;
use pfsqos_wire::client::OssClient;
use pfsqos_wire::key::read_key_file;
use pfsqos_wire::protocol::Role;

/// Parameter read every interval.
pub const JOB_STATS_PATTERN: &str = "obdfilter.*.job_stats";
/// Flow listings of the fair-queuing policies (each flow's weight), read every interval;
/// a policy that is not running answers `ENODEV` and is skipped.
pub const FLOWS_PARAMS: [&str; 2] = [
    "ost.OSS.ost_io.nrs_dsfq_flows",
    "ost.OSS.ost_io.nrs_sfqd_flows",
];
/// Most jobs whose weights one interval keeps (a bound on what servers send).
pub const WEIGHTED_JOBS_MAX: usize = 65_536;
/// Shortest interval accepted.
pub const INTERVAL_MIN: Duration = Duration::from_millis(10);
/// Longest interval accepted.
pub const INTERVAL_MAX: Duration = Duration::from_secs(86_400);
/// Most servers one `stat` reads.
pub const SERVERS_MAX: usize = 256;
/// Most cells (jobs × OSTs × intervals) a record holds: the report's series are dense, so
/// this bounds its memory (8 bytes a cell, 256 MiB). A job that would pass it is left out,
/// with a warning; the run stops when the next interval would pass it.
pub const RECORD_CELLS_MAX: usize = 1 << 25;

/// Arguments of `pfsqos stat`.
#[derive(Clone, Debug)]
pub struct StatArgs {
    pub servers: Vec<SocketAddr>,
    pub key_file: PathBuf,
    /// Jobs shown per OST (`-c`).
    pub count: usize,
    /// `-i`.
    pub interval: Duration,
    /// `-n`; `None`: until interrupted.
    pub iterations: Option<u64>,
    /// `--record DIR`.
    pub record: Option<PathBuf>,
}

/// lljobstat's abbreviation of a counter.
pub fn abbreviation(c: OstCounter) -> &'static str {
    match c {
        OstCounter::ReadBytes => "rb",
        OstCounter::WriteBytes => "wb",
        OstCounter::Read => "rd",
        OstCounter::Write => "wr",
        OstCounter::Getattr => "ga",
        OstCounter::Setattr => "sa",
        OstCounter::Punch => "pu",
        OstCounter::Sync => "sy",
        OstCounter::Destroy => "dt",
        OstCounter::Create => "cr",
        OstCounter::Statfs => "st",
        OstCounter::GetInfo => "gi",
        OstCounter::SetInfo => "si",
        OstCounter::Quotactl => "qc",
        OstCounter::Prealloc => "pa",
    }
}

/// Counter values of one job on one OST: the sum for byte counters, samples for the others.
pub type Values = [u64; OST_COUNTER_COUNT];

/// Per OST (in server, then OST order), per job: cumulative values.
pub type Snapshot = Vec<(String, BTreeMap<String, Values>)>;

fn ops(v: &Values) -> u64 {
    OstCounter::ALL
        .iter()
        .filter(|c| !c.is_bytes())
        .map(|&c| v[c as usize])
        .sum()
}

fn bytes(v: &Values) -> u64 {
    v[OstCounter::ReadBytes as usize] + v[OstCounter::WriteBytes as usize]
}

/// Parses what `lctl get_param obdfilter.*.job_stats` printed into a snapshot; OST names
/// get `prefix` in front.
pub fn parse_snapshot(text: &str, prefix: &str) -> anyhow::Result<Snapshot> {
    let mut out = Vec::new();
    for (param, entries) in parse_lctl_job_stats(text)? {
        let ost = param
            .strip_prefix("obdfilter.")
            .and_then(|p| p.strip_suffix(".job_stats"))
            .unwrap_or(&param);
        let jobs = entries
            .iter()
            .map(|e| {
                let v: Values = OstCounter::ALL.map(|c| {
                    let k = e.counter(c);
                    if c.is_bytes() {
                        k.sum
                    } else {
                        k.samples
                    }
                });
                (e.job_id.as_str().to_string(), v)
            })
            .collect();
        out.push((format!("{prefix}{ost}"), jobs));
    }
    Ok(out)
}

/// Per OST, per job: what changed from `prev` to `cur` (only jobs with a change), by the one
/// delta rule ([`counters_delta`]: an entry with any counter below its previous value was
/// cleared and counts from zero).
pub fn delta(prev: &Snapshot, cur: &Snapshot) -> Snapshot {
    cur.iter()
        .map(|(ost, jobs)| {
            let before = prev.iter().find(|(o, _)| o == ost).map(|(_, j)| j);
            let changed = jobs
                .iter()
                .filter_map(|(job, v)| {
                    let old = before.and_then(|b| b.get(job));
                    let d: Values = counters_delta(old, v);
                    (d.iter().any(|&x| x > 0)).then(|| (job.clone(), d))
                })
                .collect();
            (ost.clone(), changed)
        })
        .collect()
}

const MIB: f64 = (1u64 << 20) as f64;

/// A job's fields as lljobstat prints them (operations, then bytes), then `extra`, then with an
/// interval its rates.
fn job_fields(v: &Values, extra: Option<String>, interval: Option<Duration>) -> String {
    let mut fields = vec![format!("ops: {}", ops(v))];
    for c in OstCounter::ALL
        .iter()
        .filter(|c| !c.is_bytes())
        .chain(&[OstCounter::ReadBytes, OstCounter::WriteBytes])
    {
        if v[*c as usize] > 0 {
            fields.push(format!("{}: {}", abbreviation(*c), v[*c as usize]));
        }
    }
    fields.extend(extra);
    if let Some(i) = interval.filter(|i| !i.is_zero()) {
        for (c, key) in [
            (OstCounter::ReadBytes, "rb_mib_s"),
            (OstCounter::WriteBytes, "wb_mib_s"),
        ] {
            if v[c as usize] > 0 {
                let rate = v[c as usize] as f64 / MIB / i.as_secs_f64();
                fields.push(format!("{key}: {rate:.2}"));
            }
        }
    }
    fields.join(", ")
}

/// Most operations first; ties by bytes, then by job id, so the order is stable.
fn top_order(a: (&String, &Values), b: (&String, &Values)) -> std::cmp::Ordering {
    ops(b.1)
        .cmp(&ops(a.1))
        .then(bytes(b.1).cmp(&bytes(a.1)))
        .then(a.0.cmp(b.0))
}

/// One block of output: the cumulative view (`interval` `None`: the counters themselves) or
/// one interval's deltas, per OST and over the whole file system.
pub fn render_top(
    d: &Snapshot,
    timestamp_s: u64,
    interval: Option<Duration>,
    count: usize,
) -> String {
    let mut out = format!("---\ntimestamp: {timestamp_s}\n");
    match interval {
        Some(i) => out.push_str(&format!("interval_s: {}\n", i.as_secs_f64())),
        None => out.push_str("cumulative: true\n"),
    }
    out.push_str("top_jobs:\n");
    for (ost, jobs) in d {
        let mut top: Vec<(&String, &Values)> = jobs.iter().collect();
        top.sort_by(|a, b| top_order(*a, *b));
        top.truncate(count);
        if top.is_empty() {
            out.push_str(&format!("  {ost}: []\n"));
            continue;
        }
        out.push_str(&format!("  {ost}:\n"));
        for (job, v) in top {
            out.push_str(&format!(
                "  - {}: {{{}}}\n",
                quote_job_id(job),
                job_fields(v, None, interval)
            ));
        }
    }
    // The whole file system: each job summed over every OST.
    let mut fs: BTreeMap<&String, (Values, usize)> = BTreeMap::new();
    for (_, jobs) in d {
        for (job, v) in jobs {
            let e = fs.entry(job).or_insert(([0; OST_COUNTER_COUNT], 0));
            for (sum, x) in e.0.iter_mut().zip(v) {
                *sum += x;
            }
            e.1 += usize::from(bytes(v) > 0 || ops(v) > 0);
        }
    }
    let mut top: Vec<(&String, &(Values, usize))> = fs.iter().map(|(j, v)| (*j, v)).collect();
    top.sort_by(|a, b| top_order((a.0, &a.1 .0), (b.0, &b.1 .0)));
    top.truncate(count);
    if top.is_empty() {
        out.push_str("filesystem: []\n");
    } else {
        out.push_str("filesystem:\n");
        for (job, (v, osts)) in top {
            out.push_str(&format!(
                "- {}: {{{}}}\n",
                quote_job_id(job),
                job_fields(v, Some(format!("osts: {osts}")), interval)
            ));
        }
    }
    out
}

/// Adds the weights of the flows keyed by job id alone in a flows listing (lines
/// `jobid=JOB weight=N mode=M servers=S queued=Q dispatched=D`, the job quoted as job_stats
/// quotes it) to `weights`, keeping the largest weight per job. Other lines (section
/// headers, flows of other classifications) are skipped.
pub fn parse_flow_weights(text: &str, weights: &mut BTreeMap<String, u32>) {
    for line in text.lines() {
        // The five fields after the key have no spaces; the key may (a quoted job id).
        let mut parts = line.trim().rsplitn(6, ' ');
        let fields: Vec<&str> = parts.by_ref().take(5).collect();
        let (Some(key), [_, _, _, _, weight]) = (parts.next(), fields.as_slice()) else {
            continue;
        };
        let (Some(job), Some(Ok(w))) = (
            key.strip_prefix("jobid="),
            weight.strip_prefix("weight=").map(str::parse::<u32>),
        ) else {
            continue;
        };
        let Ok(job) = pfsqos_core::jobstats::unquote_job_id(job) else {
            continue;
        };
        if weights.len() >= WEIGHTED_JOBS_MAX && !weights.contains_key(&job) {
            continue;
        }
        let e = weights.entry(job).or_insert(w);
        *e = (*e).max(w);
    }
}

/// Each job's share of the bytes of one interval over every OST, against its share of the
/// weights of the jobs that moved bytes; empty when no job has a weight.
pub fn render_shares(d: &Snapshot, weights: &BTreeMap<String, u32>) -> String {
    if weights.is_empty() {
        return String::new();
    }
    let mut per_job: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, jobs) in d {
        for (job, v) in jobs {
            *per_job.entry(job).or_insert(0) += bytes(v);
        }
    }
    per_job.retain(|_, b| *b > 0);
    let total_bytes: u64 = per_job.values().sum();
    let total_weight: u64 = per_job
        .keys()
        .filter_map(|j| weights.get(*j))
        .map(|&w| u64::from(w))
        .sum();
    let mut out = String::from(
        "shares:
",
    );
    if per_job.is_empty() {
        out.push_str(
            "  []
",
        );
        return out;
    }
    for (job, b) in &per_job {
        let share = *b as f64 / total_bytes as f64;
        let mut fields = vec![format!("bytes: {b}"), format!("share: {share:.3}")];
        if let Some(&w) = weights.get(*job) {
            fields.push(format!("weight: {w}"));
            fields.push(format!(
                "weight_share: {:.3}",
                f64::from(w) / total_weight as f64
            ));
        }
        out.push_str(&format!(
            "- {}: {{{}}}
",
            quote_job_id(job),
            fields.join(", ")
        ));
    }
    out
}

/// Accumulates interval deltas into a [`RunOutput`].
#[derive(Debug, Default)]
pub struct Recorder {
    osts: Vec<String>,
    /// (job, OST index) -> bytes per bin, allocated when the pair first moves bytes.
    series: BTreeMap<(String, usize), Vec<u64>>,
    totals: BTreeMap<String, (u64, u64, u64)>,
    bins: usize,
    dropped_jobs: usize,
}

impl Recorder {
    /// Cells of the dense series the run will hold: jobs × OSTs × intervals.
    pub fn cells(&self) -> usize {
        self.bins * self.osts.len().max(1) * self.totals.len().max(1)
    }

    /// Whether one more interval, with the same jobs and OSTs, would pass
    /// [`RECORD_CELLS_MAX`].
    pub fn is_full(&self) -> bool {
        (self.bins + 1) * self.osts.len().max(1) * self.totals.len().max(1) > RECORD_CELLS_MAX
    }

    /// Adds one interval.
    pub fn push(&mut self, d: &Snapshot) {
        let bin = self.bins;
        self.bins += 1;
        for (ost, jobs) in d {
            let oi = match self.osts.iter().position(|o| o == ost) {
                Some(i) => i,
                None => {
                    self.osts.push(ost.clone());
                    self.osts.len() - 1
                }
            };
            for (job, v) in jobs {
                let key = (job.clone(), oi);
                let new_job = !self.totals.contains_key(job);
                if new_job
                    && self.bins * self.osts.len() * (self.totals.len() + 1) > RECORD_CELLS_MAX
                {
                    self.dropped_jobs += 1;
                    continue;
                }
                let s = self.series.entry(key).or_default();
                s.resize(bin + 1, 0);
                s[bin] += bytes(v);
                let t = self.totals.entry(job.clone()).or_default();
                t.0 += v[OstCounter::ReadBytes as usize];
                t.1 += v[OstCounter::WriteBytes as usize];
                t.2 += ops(v);
            }
        }
    }

    pub fn bins(&self) -> usize {
        self.bins
    }

    /// Bytes read and written by every job over the recorded intervals.
    pub fn bytes_total(&self) -> u64 {
        self.totals.values().map(|t| t.0 + t.1).sum()
    }

    /// (job, OST) samples left out because of [`RECORD_CELLS_MAX`].
    pub fn dropped(&self) -> usize {
        self.dropped_jobs
    }

    /// The run as the report crate takes it: jobs in id order, OSTs in the order first seen.
    pub fn run_output(&self, bin_ns: u64, policy: &str) -> RunOutput {
        let jobs = self
            .totals
            .iter()
            .map(|(job, &(read, written, rpcs))| {
                let per_ost: Vec<Vec<u64>> = (0..self.osts.len())
                    .map(|oi| {
                        let mut s = self
                            .series
                            .get(&(job.clone(), oi))
                            .cloned()
                            .unwrap_or_default();
                        s.resize(self.bins, 0);
                        s
                    })
                    .collect();
                let active = |b: usize| per_ost.iter().any(|s| s[b] > 0);
                let first = (0..self.bins).find(|&b| active(b));
                let last = (0..self.bins).rev().find(|&b| active(b));
                JobOutput {
                    job_id: job.clone(),
                    node_count: 1,
                    weight: 1,
                    bytes_read: read,
                    bytes_written: written,
                    rpcs,
                    first_io_ns: first.map(|b| b as u64 * bin_ns),
                    last_io_ns: last.map(|b| (b as u64 + 1) * bin_ns),
                    finished: true,
                    bytes_per_ost_bin: JobSeries::from_dense(self.bins, per_ost),
                    phases: None,
                }
            })
            .collect();
        RunOutput {
            scenario_name: "live".to_string(),
            policy: policy.to_string(),
            seed: 0,
            bin_ns,
            end_ns: self.bins as u64 * bin_ns,
            osts: self.osts.clone(),
            jobs,
            control_log: Vec::new(),
            control_trace: Vec::new(),
            control_trace_truncated: false,
            engine: EngineStats::default(),
            regret: None,
            allocation: None,
            sync: Vec::new(),
            ost_space: Vec::new(),
        }
    }
}

fn check(args: &StatArgs) -> anyhow::Result<()> {
    if args.servers.is_empty() || args.servers.len() > SERVERS_MAX {
        bail!("give 1..={SERVERS_MAX} --server addresses");
    }
    if !(INTERVAL_MIN..=INTERVAL_MAX).contains(&args.interval) {
        bail!(
            "-i must be {}..={} seconds",
            INTERVAL_MIN.as_secs_f64(),
            INTERVAL_MAX.as_secs_f64()
        );
    }
    if args.count == 0 {
        bail!("-c must be at least 1");
    }
    if args.iterations == Some(0) {
        bail!("-n must be at least 1");
    }
    if args.iterations == Some(1) && args.record.is_some() {
        bail!("-n 1 prints only the cumulative block; --record needs -n 2 or more (each block after the first is one interval of the record)");
    }
    Ok(())
}

/// Parses `-i`: seconds, possibly fractional (`0.2`).
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let s: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !s.is_finite() || s < INTERVAL_MIN.as_secs_f64() || s > INTERVAL_MAX.as_secs_f64() {
        return Err(format!(
            "interval `{text}` must be {}..={} seconds",
            INTERVAL_MIN.as_secs_f64(),
            INTERVAL_MAX.as_secs_f64()
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

struct Source {
    addr: SocketAddr,
    client: Option<OssClient>,
    prefix: String,
}

/// The weights of the jobs' flows on every reachable server (see [`parse_flow_weights`]).
async fn fetch_weights(sources: &mut [Source]) -> BTreeMap<String, u32> {
    let mut weights = BTreeMap::new();
    for s in sources.iter_mut() {
        let Some(client) = s.client.as_mut() else {
            continue;
        };
        for name in FLOWS_PARAMS {
            // ENODEV (the policy does not run) and other refusals: no weights from here.
            if let Ok(params) = client.get_param(name).await {
                for p in params {
                    parse_flow_weights(&p.value, &mut weights);
                }
            }
        }
    }
    weights
}

async fn fetch(sources: &mut [Source], key: &[u8], err: &mut dyn Write) -> Snapshot {
    let mut snap = Vec::new();
    for s in sources.iter_mut() {
        if s.client.is_none() {
            match OssClient::connect(s.addr, key, Role::Lctl).await {
                Ok(c) => s.client = Some(c),
                Err(e) => {
                    let _ = writeln!(err, "warning: cannot reach ossd at {}: {e}", s.addr);
                    continue;
                }
            }
        }
        let client = s.client.as_mut().expect("connected above");
        match client.get_param(JOB_STATS_PATTERN).await {
            Ok(params) => {
                let text: String = params.iter().map(|p| format_param(p, false)).collect();
                match parse_snapshot(&text, &s.prefix) {
                    Ok(mut osts) => snap.append(&mut osts),
                    Err(e) => {
                        let _ = writeln!(err, "warning: job_stats of {}: {e}", s.addr);
                    }
                }
            }
            Err(e) => {
                let _ = writeln!(err, "warning: reading {}: {e}; reconnecting", s.addr);
                s.client = None;
            }
        }
    }
    snap
}

/// Runs `pfsqos stat`. Returns once the iterations are done or `stop` completes (the binary
/// passes its signal wait; the value names the signal for the message), after writing the
/// record if one was asked for.
pub async fn run(
    args: &StatArgs,
    stop: impl std::future::Future<Output = anyhow::Result<&'static str>>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    check(args)?;
    let key = read_key_file(&args.key_file)?;
    let several = args.servers.len() > 1;
    let mut sources: Vec<Source> = args
        .servers
        .iter()
        .map(|&addr| Source {
            addr,
            client: None,
            prefix: if several {
                format!("{addr}/")
            } else {
                String::new()
            },
        })
        .collect();
    // Fail early when nothing answers, rather than print empty intervals forever.
    for s in sources.iter_mut() {
        s.client = Some(
            OssClient::connect(s.addr, &key, Role::Lctl)
                .await
                .with_context(|| format!("cannot reach ossd at {}", s.addr))?,
        );
    }
    let mut stop = std::pin::pin!(stop);
    let mut prev = fetch(&mut sources, &key, err).await;
    let now_s = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |t| t.as_secs())
    };
    // The cumulative view at once: the counters are deltas from nothing.
    let cumulative = delta(&Vec::new(), &prev);
    out.write_all(render_top(&cumulative, now_s(), None, args.count).as_bytes())?;
    let weights = fetch_weights(&mut sources).await;
    out.write_all(render_shares(&cumulative, &weights).as_bytes())?;
    out.flush()?;
    let mut recorder = args.record.as_ref().map(|_| Recorder::default());
    let start = tokio::time::Instant::now();
    let mut k: u64 = 0;
    while args.iterations.is_none_or(|n| k + 1 < n) {
        k += 1;
        let tick = start + args.interval.mul_f64(k as f64);
        tokio::select! {
            _ = tokio::time::sleep_until(tick) => {}
            sig = &mut stop => {
                let _ = writeln!(err, "{}; stopping", sig.unwrap_or("signal"));
                break;
            }
        }
        let cur = fetch(&mut sources, &key, err).await;
        let d = delta(&prev, &cur);
        out.write_all(render_top(&d, now_s(), Some(args.interval), args.count).as_bytes())?;
        let weights = fetch_weights(&mut sources).await;
        out.write_all(render_shares(&d, &weights).as_bytes())?;
        out.flush()?;
        if let Some(r) = recorder.as_mut() {
            r.push(&d);
            if r.is_full() {
                let _ = writeln!(
                    err,
                    "the record holds {} cells (jobs × OSTs × intervals), its limit is {RECORD_CELLS_MAX}; stopping",
                    r.cells()
                );
                break;
            }
        }
        prev = cur;
    }
    if let (Some(dir), Some(r)) = (&args.record, &recorder) {
        if r.dropped() > 0 {
            let _ = writeln!(
                err,
                "warning: {} (job, OST) samples of new jobs left out of the record (limit {RECORD_CELLS_MAX} cells)",
                r.dropped()
            );
        }
        if r.bytes_total() == 0 {
            // A record of nothing would report "Jain index 1.000 across 0 jobs".
            bail!(
                "nothing ran: no job read or wrote a byte in the {} interval(s) recorded, so \
                 nothing was written to {} (start the I/O first, or while stat --record runs; \
                 -n sets how many intervals it waits)",
                r.bins(),
                dir.display()
            );
        }
        let run = r.run_output(args.interval.as_nanos() as u64, "live");
        let servers: Vec<String> = args.servers.iter().map(|s| s.to_string()).collect();
        let description = format!(
            "Live run recorded by pfsqos stat from {} every {} s ({} intervals).",
            servers.join(", "),
            args.interval.as_secs_f64(),
            r.bins()
        );
        pfsqos_report::write_run_described(dir, &run, &description)?;
        writeln!(
            err,
            "recorded {} intervals to {}",
            r.bins(),
            dir.join("timeseries.csv").display()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(pairs: &[(OstCounter, u64)]) -> Values {
        let mut v = [0; OST_COUNTER_COUNT];
        for (c, x) in pairs {
            v[*c as usize] = *x;
        }
        v
    }

    fn snap(items: &[(&str, &[(&str, Values)])]) -> Snapshot {
        items
            .iter()
            .map(|(o, jobs)| {
                (
                    o.to_string(),
                    jobs.iter().map(|(j, v)| (j.to_string(), *v)).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn deltas_and_top_jobs() {
        use OstCounter::*;
        let prev = snap(&[(
            "fs-OST0000",
            &[
                ("a", vals(&[(Write, 2), (WriteBytes, 200)])),
                ("b", vals(&[(Read, 5), (ReadBytes, 500)])),
            ],
        )]);
        let cur = snap(&[
            (
                "fs-OST0000",
                &[
                    ("a", vals(&[(Write, 5), (WriteBytes, 500)])),
                    // Cleared meanwhile: counts from zero.
                    ("b", vals(&[(Read, 1), (ReadBytes, 100)])),
                    ("c", vals(&[(Write, 3), (WriteBytes, 30), (Punch, 1)])),
                    ("idle", vals(&[])),
                ],
            ),
            ("fs-OST0001", &[]),
        ]);
        let d = delta(&prev, &cur);
        assert_eq!(d[0].1.len(), 3, "the idle job is left out");
        assert_eq!(d[0].1["a"], vals(&[(Write, 3), (WriteBytes, 300)]));
        assert_eq!(d[0].1["b"], vals(&[(Read, 1), (ReadBytes, 100)]));
        let text = render_top(&d, 1700000000, Some(Duration::from_millis(200)), 2);
        assert_eq!(
            text,
            "---\ntimestamp: 1700000000\ninterval_s: 0.2\ntop_jobs:\n  fs-OST0000:\n  \
             - c: {ops: 4, wr: 3, pu: 1, wb: 30, wb_mib_s: 0.00}\n  \
             - a: {ops: 3, wr: 3, wb: 300, wb_mib_s: 0.00}\n  \
             fs-OST0001: []\n\
             filesystem:\n\
             - c: {ops: 4, wr: 3, pu: 1, wb: 30, osts: 1, wb_mib_s: 0.00}\n\
             - a: {ops: 3, wr: 3, wb: 300, osts: 1, wb_mib_s: 0.00}\n"
        );
    }

    /// The cumulative block has no interval and no rates; the file-system view sums a job
    /// over OSTs and servers; rates are bytes over the interval in MiB/s.
    #[test]
    fn cumulative_and_filesystem_views_with_rates() {
        use OstCounter::*;
        let cur = snap(&[
            (
                "s1/OST0000",
                &[("j", vals(&[(Write, 4), (WriteBytes, 4 << 20)]))],
            ),
            (
                "s2/OST0000",
                &[
                    (
                        "j",
                        vals(&[
                            (Write, 2),
                            (WriteBytes, 2 << 20),
                            (Read, 1),
                            (ReadBytes, 1 << 20),
                        ]),
                    ),
                    ("k", vals(&[(Read, 1), (ReadBytes, 4096)])),
                ],
            ),
        ]);
        let d = delta(&Vec::new(), &cur);
        let c = render_top(&d, 7, None, 5);
        assert!(
            c.starts_with("---\ntimestamp: 7\ncumulative: true\ntop_jobs:\n"),
            "{c}"
        );
        assert!(!c.contains("mib_s"), "{c}");
        assert!(
            c.ends_with(
                "filesystem:\n- j: {ops: 7, rd: 1, wr: 6, rb: 1048576, wb: 6291456, osts: 2}\n\
                 - k: {ops: 1, rd: 1, rb: 4096, osts: 1}\n"
            ),
            "{c}"
        );
        let i = render_top(&d, 7, Some(Duration::from_secs(2)), 1);
        assert!(
            i.contains("- j: {ops: 7, rd: 1, wr: 6, rb: 1048576, wb: 6291456, osts: 2, rb_mib_s: 0.50, wb_mib_s: 3.00}\n"),
            "{i}"
        );
        assert!(!i.contains("- k:"), "-c 1 keeps the top job only: {i}");
        assert!(render_top(&Vec::new(), 7, None, 1).ends_with("top_jobs:\nfilesystem: []\n"));
    }

    #[test]
    fn parses_lctl_output_with_a_prefix() {
        let text = "obdfilter.fs-OST0000.job_stats=\njob_stats:\n\
            - job_id:          \"dd.0\"\n  snapshot_time:   1.000000000 secs.nsecs\n  \
            write_bytes:     { samples: 2, unit: bytes, min: 4096, max: 4096, sum: 8192, sumsq: 0 }\n  \
            write:           { samples: 2, unit: usecs, min: 1, max: 1, sum: 2, sumsq: 2 }\n\
            obdfilter.fs-OST0001.job_stats=\n";
        let s = parse_snapshot(text, "h:1/").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].0, "h:1/fs-OST0000");
        let v = s[0].1["dd.0"];
        assert_eq!(v[OstCounter::WriteBytes as usize], 8192);
        assert_eq!(v[OstCounter::Write as usize], 2);
        assert_eq!(s[1], ("h:1/fs-OST0001".to_string(), BTreeMap::new()));
    }

    #[test]
    fn recorder_builds_the_run() {
        use OstCounter::*;
        let mut r = Recorder::default();
        r.push(&snap(&[
            ("o0", &[("j", vals(&[(WriteBytes, 10), (Write, 1)]))]),
            ("o1", &[]),
        ]));
        r.push(&snap(&[("o0", &[]), ("o1", &[])]));
        r.push(&snap(&[
            ("o0", &[]),
            ("o1", &[("j", vals(&[(ReadBytes, 7), (Read, 1)]))]),
        ]));
        let run = r.run_output(200_000_000, "live");
        assert_eq!(run.osts, ["o0", "o1"]);
        assert_eq!(run.end_ns, 600_000_000);
        let j = &run.jobs[0];
        assert_eq!(
            j.bytes_per_ost_bin,
            JobSeries::from_dense(3, vec![vec![10, 0, 0], vec![0, 0, 7]])
        );
        assert_eq!((j.bytes_read, j.bytes_written, j.rpcs), (7, 10, 2));
        assert_eq!(j.first_io_ns, Some(0));
        assert_eq!(r.cells(), 3 * 2);
        assert!(!r.is_full());
        assert_eq!(j.last_io_ns, Some(600_000_000));
        let csv = pfsqos_report::timeseries_csv(&run);
        assert!(csv.starts_with(pfsqos_report::CSV_HEADER));
        assert!(csv.contains("\n0,j,o0,10,"), "{csv}");
        assert!(csv.contains("\n0.4,j,o1,7,"), "{csv}");
    }

    #[test]
    fn shares_against_weights() {
        let listing = "regular_requests:\nCPT 0:\n\
            jobid=big weight=4 mode=threshold servers=2 queued=3 dispatched=100\n\
            jobid=\"a b\" weight=2 mode=layout servers=1 queued=0 dispatched=5\n\
            nid=1@tcp weight=9 mode=threshold servers=1 queued=0 dispatched=1\n\
            high_priority_requests:\nCPT 0:\n\
            jobid=big weight=3 mode=threshold servers=1 queued=0 dispatched=0\n";
        let mut weights = BTreeMap::new();
        parse_flow_weights(listing, &mut weights);
        assert_eq!(weights.len(), 2, "{weights:?}");
        assert_eq!(weights["big"], 4);
        assert_eq!(weights["a b"], 2);
        let d = snap(&[
            (
                "s1/OST0000",
                &[("big", vals(&[(OstCounter::ReadBytes, 600)]))],
            ),
            (
                "s2/OST0000",
                &[
                    ("big", vals(&[(OstCounter::WriteBytes, 200)])),
                    ("small", vals(&[(OstCounter::WriteBytes, 200)])),
                ],
            ),
        ]);
        weights.insert("small".into(), 1);
        assert_eq!(
            render_shares(&d, &weights),
            "shares:\n\
             - big: {bytes: 800, share: 0.800, weight: 4, weight_share: 0.800}\n\
             - small: {bytes: 200, share: 0.200, weight: 1, weight_share: 0.200}\n"
        );
        assert_eq!(render_shares(&d, &BTreeMap::new()), "");
    }

    #[test]
    fn intervals_parse() {
        assert_eq!(parse_interval("0.2"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_interval("10"), Ok(Duration::from_secs(10)));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("nan").is_err());
        assert!(parse_interval("x").is_err());
    }
}
