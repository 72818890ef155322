//! Prometheus metrics of the daemons (`ossd --metrics-listen ADDR`, `mds --metrics-listen
//! ADDR`): a tiny HTTP/1.1 server answering `GET /metrics` in OpenMetrics (encoded by
//! `prometheus-client`) or the Prometheus text format 0.0.4, as the scraper asks.
//!
//! Values are collected at scrape time from the daemon's own state (job_stats, NRS heads,
//! counters it keeps anyway), so nothing is counted twice. Label cardinality is bounded by
//! what the daemon already bounds: at most `JOBS_PER_OST_MAX` jobs per OST in job_stats, the
//! OSTs of one OSS, the TBF rules started, the MDS operation kinds.
//!
//! ossd families (the `_total` suffix is OpenMetrics' for counters):
//! * `pfsqos_ost_job_read_bytes_total{ost,job}`, `pfsqos_ost_job_write_bytes_total{ost,job}`:
//!   job_stats `read_bytes`/`write_bytes` sums (they restart from 0 when job_stats is cleared
//!   or the job expires, which Prometheus treats as a counter reset);
//! * `pfsqos_ost_job_rpcs_total{ost,job,op}`: job_stats samples of `read`, `write`, `punch`,
//!   `sync`;
//! * `pfsqos_ost_served_bytes_total{ost}`, `pfsqos_ost_served_rpcs_total{ost}`: everything
//!   the OST served since the daemon started, RPCs without a job id included;
//! * `pfsqos_ost_queue_rpcs{ost}`: RPCs of the OST waiting in the NRS heads now;
//! * `pfsqos_oss_tbf_rule_rate_rpcs_per_second{rule}`: the rate of each TBF rule. Rules belong to
//!   the OSS's `ost_io` service, not to one OST (as in Lustre), so they carry no `ost` label.
//!
//! Lustre-exporter-compatible families, so that dashboards built on the common Lustre
//! exporters (HPE's `lustre_exporter`, Whamcloud's `lustrefs-exporter`) show pfsqos jobs as
//! they show Lustre's: the same names, labels and values as their OST job_stats families,
//! `component="ost"`, `target` the OST's `fsname-OSTxxxx`, `jobid` the job id as the
//! exporters parse it from job_stats ([`exporter_job_id`]: GSI's parse; HPE's where its
//! parse keeps the whole id):
//! * `lustre_job_read_bytes_total`, `lustre_job_write_bytes_total` (job_stats `read_bytes` /
//!   `write_bytes` sums, the values of `pfsqos_ost_job_{read,write}_bytes_total`);
//! * `lustre_job_read_samples_total`, `lustre_job_write_samples_total` (job_stats samples of
//!   `read_bytes` / `write_bytes`: RPCs).
//!
//! mds families: `pfsqos_mds_ops_total{op}` (operations answered, by kind, errors included),
//! `pfsqos_mds_inodes` (files and directories, root included), and iez's ([`IezSample`]):
//! `pfsqos_mds_iez_placed_total` (creates placed by iez's plan),
//! `pfsqos_mds_iez_fallbacks_total{cause}` (creates with a prediction placed by round robin,
//! by cause), `pfsqos_mds_iez_loads_total` and `pfsqos_mds_iez_rows_loaded_total`
//! (predictions loaded: loads accepted, rows in them), `pfsqos_mds_iez_rows` (rows in the
//! interaction database now: a row stays after its file is created, until the application's
//! next load replaces its rows), `pfsqos_mds_iez_reports_total{result}` (ossd statistics
//! reports `accepted` or `refused`), and `pfsqos_mds_load_util{resource}` (the MDS's own
//! `cpu` and `memory` utilization iez's busy gate reads, when measured).
//!
//! ossd: `pfsqos_oss_job_nodes_total{counter}`, the job node-count table (`learned`,
//! `overridden`, `evicted`, `dropped`, `admin_writes`, `admin_refused`).
//!
//! ossd: `pfsqos_oss_bulk_total{counter}`, the bulk budget's guards (`share_waits`,
//! `untracked_connections`, `reply_timeouts`; `pfsqos_ossd::BulkCounters`).
//!
//! ossd: `pfsqos_oss_control_periods_total`, `pfsqos_oss_control_cpu_seconds_total` and
//! `pfsqos_oss_control_wall_seconds_total` (the control loop's periods, its thread's CPU time
//! and its wall time), `pfsqos_oss_control_period_cpu_seconds` (median CPU of its last 1024
//! periods), when it has run; `pfsqos_oss_jobs_unnamable` (jobs of its last period whose ids
//! cannot be rules).
//!
//! Both daemons: `pfsqos_oss_admission_total{counter}` / `pfsqos_mds_admission_total{counter}`,
//! connection admission (refusals by budget, handshake timeouts, suppressed log lines).
//!
//! Format: negotiated from the request's `Accept` header as Prometheus clients expect
//! ([`negotiate`]): OpenMetrics text when `application/openmetrics-text` is accepted (what
//! Prometheus asks for first), otherwise the Prometheus text format 0.0.4 (`text/plain;
//! version=0.0.4`, what promtool, older scrapers and `curl` get), converted by
//! [`openmetrics_to_text_004`].
//!
//! HTTP limits: request head at most [`REQUEST_HEAD_BYTES_MAX`], read within
//! [`REQUEST_TIMEOUT`], the response written within [`RESPONSE_TIMEOUT`]; one request per
//! connection. Admission is the daemons' own (`pfsqos_wire::admission`): at most
//! [`REQUESTS_PENDING_MAX`] connections still sending their request (at most
//! [`REQUESTS_PENDING_PER_SOURCE_MAX`] per IPv4 address or IPv6 /64; when full, a newcomer
//! takes the oldest slot of the source holding the most, if that is more than its own;
//! [`REQUESTS_PENDING_KNOWN_MAX`] more kept for sources that completed a request before), then
//! at most [`CONNECTIONS_MAX`] served at once, [`CONNECTIONS_PER_SOURCE_MAX`] per source;
//! refusals are logged at most 5 lines per 10 s. `GET`/`HEAD /metrics` is answered 200; other paths 404,
//! other methods 405, malformed requests 400, oversized heads 431.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pfsqos_wire::admission::{
    Admission, HandshakeSlot, LogLimiter, Source, LOG_LINES_PER_WINDOW, LOG_WINDOW,
};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

/// Largest request head (request line and headers) read.
pub const REQUEST_HEAD_BYTES_MAX: usize = 8 << 10;
/// Time a client has to send its request head (a scraper sends it at once; this bounds how
/// long a trickling socket holds a slot).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Time a response has to be written (a client that does not read it gives up its slot).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// Scrape connections served at once (their request read, the response being written).
pub const CONNECTIONS_MAX: usize = 16;
/// Of those, from one source (an IPv4 address or an IPv6 /64).
pub const CONNECTIONS_PER_SOURCE_MAX: usize = 4;
/// Connections still sending their request head at once, shared by every source not known
/// (`pfsqos_wire::admission`: when full, a newcomer takes the oldest slot of the source
/// holding the most, if that is more than its own).
pub const REQUESTS_PENDING_MAX: usize = 32;
/// Of those, from one source.
pub const REQUESTS_PENDING_PER_SOURCE_MAX: usize = 4;
/// Pending-request slots reserved for sources that sent a whole request before (a scraper
/// after its first scrape), which other sources can neither take nor evict.
pub const REQUESTS_PENDING_KNOWN_MAX: usize = 8;
/// The content type of an OpenMetrics body.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of a body in the Prometheus text format 0.0.4.
pub const CONTENT_TYPE_TEXT_004: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition formats served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Text004,
}

/// The format for an `Accept` header: OpenMetrics if some media range with a non-zero
/// quality names `application/openmetrics-text`, else the text format 0.0.4 (also without the
/// header), as Prometheus' own client libraries negotiate.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text004;
    };
    for range in accept.split(',') {
        let mut params = range.split(';').map(str::trim);
        let media = params.next().unwrap_or("");
        if !media.eq_ignore_ascii_case("application/openmetrics-text") {
            continue;
        }
        let q = params
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map(|(_, v)| v.trim().parse::<f64>().unwrap_or(0.0))
            .unwrap_or(1.0);
        if q > 0.0 {
            return Format::OpenMetrics;
        }
    }
    Format::Text004
}

/// OpenMetrics text (as `prometheus-client` encodes it) in the Prometheus text format 0.0.4: a
/// counter family's `# HELP` and `# TYPE` name its samples' `_total` name (OpenMetrics names the
/// family without it), `unknown` becomes `untyped`, `# UNIT` and `# EOF` lines go, and
/// `_created` samples of counters go (0.0.4 has no such series).
pub fn openmetrics_to_text_004(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let counters: std::collections::HashSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    for line in text.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let name = if counters.contains(name) {
                format!("{name}_total")
            } else {
                name.to_string()
            };
            // 0.0.4 escapes only backslash and newline in HELP; OpenMetrics also `"`.
            out.push_str(&format!("# HELP {name} {}\n", help.replace("\\\"", "\"")));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "unknown" => (name.to_string(), "untyped"),
                other => (name.to_string(), other),
            };
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        let sample = line.split(['{', ' ']).next().unwrap_or("");
        if let Some(family) = sample.strip_suffix("_created") {
            if counters.contains(family) {
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `promtool check metrics` (Prometheus' own linter, Debian package `prometheus`) on `text`
/// in the text format 0.0.4: `None` when promtool cannot be run here (the caller's test says
/// it skipped), else its verdict, with every problem it printed. OpenMetrics text is
/// converted first ([`openmetrics_to_text_004`]), as a scrape asking for 0.0.4 gets it.
pub fn promtool_check(text: &str) -> Option<Result<(), String>> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let body = if text.contains("# EOF") {
        openmetrics_to_text_004(text)
    } else {
        text.to_string()
    };
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // promtool reads all of its input before it answers, so writing first cannot deadlock.
    let written = child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(body.as_bytes());
    let out = child.wait_with_output().ok()?;
    written.ok()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && said.trim().is_empty() {
        Some(Ok(()))
    } else {
        Some(Err(format!("promtool check metrics: {said}\nin:\n{body}")))
    }
}

/// The value of header `name` in a request head, if present (first occurrence).
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Renders the metrics text of a daemon (called on a blocking thread per scrape).
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Encodes one collector as OpenMetrics text.
pub fn render_collector<C: Collector>(collector: C) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(collector));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// A running metrics endpoint.
pub struct MetricsServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl MetricsServer {
    /// Binds `listen` and serves `render`'s text at `/metrics` until stopped.
    pub async fn start(listen: SocketAddr, render: Render) -> anyhow::Result<MetricsServer> {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| anyhow::anyhow!("metrics listening on {listen}: {e}"))?;
        let addr = listener.local_addr()?;
        info!(%addr, "metrics endpoint listening");
        let task = tokio::spawn(accept_loop(listener, render));
        Ok(MetricsServer { addr, task })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting; scrapes in progress finish on their own.
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// Served connections by source, for [`CONNECTIONS_PER_SOURCE_MAX`].
type PerSource = Arc<std::sync::Mutex<std::collections::HashMap<Source, usize>>>;

/// One served connection of a source; released when dropped.
struct SourceSlot {
    table: PerSource,
    source: Source,
}

impl SourceSlot {
    fn take(table: &PerSource, source: Source) -> Option<SourceSlot> {
        let mut t = table.lock().unwrap_or_else(|p| p.into_inner());
        let n = t.entry(source).or_insert(0);
        if *n >= CONNECTIONS_PER_SOURCE_MAX {
            return None;
        }
        *n += 1;
        Some(SourceSlot {
            table: table.clone(),
            source,
        })
    }
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = t.get_mut(&self.source) {
            assert!(*n > 0, "served connections of a source went below zero");
            *n -= 1;
            if *n == 0 {
                t.remove(&self.source);
            }
        }
    }
}

/// Accepts scrapes with the daemons' admission (`pfsqos_wire::admission`): a connection
/// first holds a pending-request slot (shared budget with fair eviction, a cap per source, a
/// share reserved for sources that completed a request before) for at most
/// [`REQUEST_TIMEOUT`], then a served slot ([`CONNECTIONS_MAX`], at most
/// [`CONNECTIONS_PER_SOURCE_MAX`] per source) for at most [`RESPONSE_TIMEOUT`]. Sockets that
/// trickle their request, however many, from however many sources, thus never hold the slots
/// a scraper needs: they are evicted for a source holding fewer, and time out.
async fn accept_loop(listener: TcpListener, render: Render) {
    let admission = Admission::with_known(
        CONNECTIONS_MAX,
        REQUESTS_PENDING_MAX,
        REQUESTS_PENDING_PER_SOURCE_MAX,
        REQUESTS_PENDING_KNOWN_MAX,
    );
    let per_source: PerSource = Arc::default();
    let log = LogLimiter::new(LOG_LINES_PER_WINDOW, LOG_WINDOW);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                warn!(error = %e, "metrics accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let slot = match admission.handshake(peer.ip()) {
            Ok(slot) => slot,
            Err(refusal) => {
                if let Some(suppressed) = log.allow(std::time::Instant::now()) {
                    warn!(%peer, %refusal, suppressed, "metrics connection refused");
                }
                continue;
            }
        };
        let (render, admission, per_source) =
            (render.clone(), admission.clone(), per_source.clone());
        tokio::spawn(async move {
            if let Err(e) = serve(stream, slot, &admission, &per_source, render).await {
                debug!(%peer, error = %e, "metrics connection");
            }
        });
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Metrics { head_only: bool, format: Format },
    Status(u16, &'static str),
}

fn route(head: &[u8]) -> Answer {
    let Ok(text) = std::str::from_utf8(head) else {
        return Answer::Status(400, "Bad Request");
    };
    let line = text.split("\r\n").next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Answer::Status(400, "Bad Request");
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Answer::Status(400, "Bad Request");
    }
    let path = target.split('?').next().unwrap_or(target);
    let format = negotiate(header(text, "accept"));
    match (method, path) {
        ("GET", "/metrics") => Answer::Metrics {
            head_only: false,
            format,
        },
        ("HEAD", "/metrics") => Answer::Metrics {
            head_only: true,
            format,
        },
        (_, "/metrics") => Answer::Status(405, "Method Not Allowed"),
        _ => Answer::Status(404, "Not Found"),
    }
}

/// Reads a request head: up to the blank line, at most [`REQUEST_HEAD_BYTES_MAX`].
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end + 4);
            return Ok(Some(buf));
        }
        if buf.len() >= REQUEST_HEAD_BYTES_MAX {
            return Ok(None);
        }
        let want = (REQUEST_HEAD_BYTES_MAX - buf.len()).min(chunk.len());
        let n = stream.read(&mut chunk[..want]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn serve(
    mut stream: TcpStream,
    mut slot: HandshakeSlot,
    admission: &Arc<Admission>,
    per_source: &PerSource,
    render: Render,
) -> std::io::Result<()> {
    let source = slot.source();
    let eviction = slot.eviction();
    let head = tokio::select! {
        // Given to a source holding fewer pending requests: close.
        () = eviction.wait() => return Ok(()),
        r = tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream)) => match r {
            Err(_) => return Ok(()), // too slow: just close
            Ok(r) => r?,
        },
    };
    // The request is in: a served slot now (the pending one is released).
    let Ok(_served) = admission.authenticated(slot) else {
        return Ok(());
    };
    let Some(_source_slot) = SourceSlot::take(per_source, source) else {
        return Ok(());
    };
    match tokio::time::timeout(RESPONSE_TIMEOUT, respond(stream, head, render)).await {
        Ok(r) => r,
        Err(_) => Ok(()), // not read: give the slot up
    }
}

async fn respond(
    mut stream: TcpStream,
    head: Option<Vec<u8>>,
    render: Render,
) -> std::io::Result<()> {
    let answer = match head {
        None => Answer::Status(431, "Request Header Fields Too Large"),
        Some(h) => route(&h),
    };
    let (status, reason, ctype, body, head_only) = match answer {
        Answer::Metrics { head_only, format } => {
            let text = tokio::task::spawn_blocking(move || match format {
                Format::OpenMetrics => render(),
                Format::Text004 => openmetrics_to_text_004(&render()),
            })
            .await
            .map_err(std::io::Error::other)?;
            let ctype = match format {
                Format::OpenMetrics => CONTENT_TYPE,
                Format::Text004 => CONTENT_TYPE_TEXT_004,
            };
            (200, "OK", ctype, text, head_only)
        }
        Answer::Status(code, reason) => (
            code,
            reason,
            "text/plain; charset=utf-8",
            format!("{code} {reason}\n"),
            false,
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if status == 405 {
        response.push_str("Allow: GET, HEAD\r\n");
    }
    response.push_str("\r\n");
    if !head_only {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

// ------------------------------------------------------------------ collectors

/// One OST's values at scrape time.
#[derive(Clone, Debug, Default)]
pub struct OstSample {
    /// `fsname-OSTxxxx`.
    pub name: String,
    pub queued_rpcs: u64,
    /// Requests at the OST's device now, and the time requests spent there, summed at
    /// completion (what the control loop's observation carries: the ossd's I/O threads, or
    /// the block device's `in_flight` and `time_in_queue` with `--device-sensor block`).
    pub device_queue_rpcs: u64,
    pub device_time_in_queue_ns: u64,
    pub served_bytes: u64,
    pub served_rpcs: u64,
    /// Per job: read bytes, write bytes, and samples of read, write, punch, sync.
    pub jobs: Vec<JobSample>,
}

#[derive(Clone, Debug, Default)]
pub struct JobSample {
    pub job: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub rpcs: [u64; 4],
}

/// Names of [`JobSample::rpcs`] in order (the `op` label).
pub const JOB_RPC_OPS: [&str; 4] = ["read", "write", "punch", "sync"];

/// An ossd's values at scrape time.
#[derive(Clone, Debug, Default)]
pub struct OssSample {
    pub osts: Vec<OstSample>,
    /// TBF rules of the regular NRS head (name, rate), highest priority first.
    pub rules: Vec<(String, u32)>,
    /// DSFQ synchronization with the peer ossds: (counter name, value), as
    /// `ost.OSS.ost_io.nrs_dsfq_sync_stats` names them.
    pub sync: Vec<(&'static str, u64)>,
    /// Connection admission: refusals by budget, handshake timeouts, suppressed log lines
    /// (`pfsqos_wire::admission::AdmissionCounters::fields`).
    pub admission: Vec<(&'static str, u64)>,
    /// The job node-count table (`ost.OSS.ost_io.job_nodes`): learned, overridden,
    /// evicted, dropped reports, administrator writes and refusals.
    pub job_nodes: Vec<(&'static str, u64)>,
    /// The bulk budget's per-client shares and reply timeout: requests that waited for their
    /// client's share, connections in the overflow share, connections closed for a reply
    /// that made no progress.
    pub bulk: Vec<(&'static str, u64)>,
    /// The control loop (`--policy`): `periods`, `cpu_ns` (the control thread's CPU) and
    /// `wall_ns` since start, over observe, decide and apply.
    pub control: Vec<(&'static str, u64)>,
    /// The median CPU ns of the control loop's recent periods (the last 1024).
    pub control_period_cpu_ns_median: Option<u64>,
    /// Jobs of the control loop's last observation whose ids hold TBF syntax, so cannot have
    /// a rule of their own (`None`: no control loop has observed).
    pub jobs_unnamable: Option<u64>,
}

impl fmt::Debug for OssCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OssCollector")
    }
}

/// A label value as the text format needs it: prometheus-client writes values verbatim, and
/// job ids come from clients (no control characters, but `"` and `\\` are allowed).
pub fn label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A job id as the Lustre exporters label it, so that a dashboard joining their series with
/// ours sees one job: the id as `job_stats` prints it (the printer of current Lustre,
/// `pfsqos_lustre::jobstats::lustre_job_id_bytes` with `JobStatsFormat::Master`, the ossd's:
/// an id with a byte outside `isalnum` and `.@-_:/`, a `:` or a leading `@` is printed in
/// double quotes with those bytes as `\xHH`), without the quotes. That is the GSI
/// lustre_exporter's parse (`sources/proc_common.go`, `jobidRegexPattern =
/// job_id:[ \t]*"?([^"\n\r]*)"?`: the text between the optional quotes, escapes kept): `job 1`
/// is labelled `job\x201`, `dd.0` stays `dd.0`.
///
/// HPE's lustre_exporter (HewlettPackard/lustre_exporter, `sources/procfs.go` `getJobNum` with
/// `sources/proc_common.go` `jobidRegexPattern = job_id:\s*(.*\.[0-9]+|[0-9_]+)`, since 2018;
/// before, the id's first number) reads no YAML and undoes no quoting: its label is the
/// printed text up to the last `.` and digits, else a leading run of digits and `_`, else
/// `""`. It equals ours for every id it keeps whole (plain ids such as `%e.%u`'s `dd.500` or
/// Slurm's `4151234`); for the rest (quoted ids, ids not ending in `.` and digits) its label
/// is `""`, the opening quote with the text, or a cut prefix, shared by other jobs, so no
/// label can join them and ours stays GSI's (`job_labels_match_hpes_exporter_wherever_it_names_the_job`).
/// The result is raw label text: [`job_label_value`] escapes it for the exposition.
pub fn exporter_job_id(job: &str) -> String {
    use pfsqos_lustre::jobstats::{lustre_job_id_bytes, JobStatsFormat};
    let printed = lustre_job_id_bytes(job, JobStatsFormat::Master);
    // Lossy as a reader of lctl's output decodes it (the kernel's ctype may keep a UTF-8 lead
    // byte and escape its continuation).
    let printed = String::from_utf8_lossy(&printed);
    match printed.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(inner) => inner.to_string(),
        None => printed.into_owned(),
    }
}

/// The job id an [`exporter_job_id`] label names (its `\xHH` escapes decoded); the label
/// itself when it does not decode to UTF-8 (an id the kernel's ctype printed lossily).
pub fn job_id_of_exporter_label(label: &str) -> String {
    pfsqos_lustre::jobstats::unquote_job_id(&format!("\"{label}\""))
        .unwrap_or_else(|_| label.to_string())
}

/// [`exporter_job_id`] escaped as a label value ([`label_value`]).
pub fn job_label_value(job: &str) -> String {
    label_value(&exporter_job_id(job))
}

/// Encodes an [`OssSample`].
pub struct OssCollector(pub OssSample);

impl Collector for OssCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let s = &self.0;
        let bytes = Unit::Bytes;
        let rpcs = Unit::Other("rpcs".to_string());
        for (name, help, read) in [
            (
                "pfsqos_ost_job_read",
                "Bytes read by a job from an OST (job_stats read_bytes sum).",
                true,
            ),
            (
                "pfsqos_ost_job_write",
                "Bytes written by a job to an OST (job_stats write_bytes sum).",
                false,
            ),
        ] {
            let mut f = encoder.encode_descriptor(name, help, Some(&bytes), MetricType::Counter)?;
            for o in &s.osts {
                for j in &o.jobs {
                    let v = if read { j.read_bytes } else { j.write_bytes };
                    let job = job_label_value(&j.job);
                    let labels = [("ost", o.name.as_str()), ("job", job.as_str())];
                    ConstCounter::new(v).encode(f.encode_family(&labels)?)?;
                }
            }
        }
        // The common Lustre exporters' names and labels for the same job_stats values.
        let samples = Unit::Other("samples".to_string());
        for (name, help, unit, value) in [
            (
                "lustre_job_read",
                "The total number of bytes that have been read (job_stats read_bytes sum).",
                &bytes,
                (|j: &JobSample| j.read_bytes) as fn(&JobSample) -> u64,
            ),
            (
                "lustre_job_write",
                "The total number of bytes that have been written (job_stats write_bytes sum).",
                &bytes,
                |j: &JobSample| j.write_bytes,
            ),
            (
                "lustre_job_read",
                "Total number of reads that have been recorded (job_stats read_bytes samples).",
                &samples,
                |j: &JobSample| j.rpcs[0],
            ),
            (
                "lustre_job_write",
                "Total number of writes that have been recorded (job_stats write_bytes samples).",
                &samples,
                |j: &JobSample| j.rpcs[1],
            ),
        ] {
            let mut f = encoder.encode_descriptor(name, help, Some(unit), MetricType::Counter)?;
            for o in &s.osts {
                let target = label_value(&o.name);
                for j in &o.jobs {
                    let job = job_label_value(&j.job);
                    let labels = [
                        ("component", "ost"),
                        ("target", target.as_str()),
                        ("jobid", job.as_str()),
                    ];
                    ConstCounter::new(value(j)).encode(f.encode_family(&labels)?)?;
                }
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_ost_job",
                "RPCs of a job served by an OST, by operation (job_stats samples).",
                Some(&rpcs),
                MetricType::Counter,
            )?;
            for o in &s.osts {
                for j in &o.jobs {
                    let job = job_label_value(&j.job);
                    for (op, v) in JOB_RPC_OPS.iter().zip(j.rpcs) {
                        let labels = [("ost", o.name.as_str()), ("job", job.as_str()), ("op", op)];
                        ConstCounter::new(v).encode(f.encode_family(&labels)?)?;
                    }
                }
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_ost_served",
                "Bytes an OST read or wrote since the daemon started, RPCs without a job id included.",
                Some(&bytes),
                MetricType::Counter,
            )?;
            for o in &s.osts {
                ConstCounter::new(o.served_bytes)
                    .encode(f.encode_family(&[("ost", o.name.as_str())])?)?;
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_ost_served",
                "RPCs an OST served since the daemon started.",
                Some(&rpcs),
                MetricType::Counter,
            )?;
            for o in &s.osts {
                ConstCounter::new(o.served_rpcs)
                    .encode(f.encode_family(&[("ost", o.name.as_str())])?)?;
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_ost_queue",
                "RPCs of an OST waiting in the NRS heads now.",
                Some(&rpcs),
                MetricType::Gauge,
            )?;
            for o in &s.osts {
                ConstGauge::new(o.queued_rpcs as i64)
                    .encode(f.encode_family(&[("ost", o.name.as_str())])?)?;
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_ost_device_queue",
                "Requests at an OST's device now (in an I/O thread, or the block device's \
                 in_flight with --device-sensor block).",
                Some(&rpcs),
                MetricType::Gauge,
            )?;
            for o in &s.osts {
                ConstGauge::new(o.device_queue_rpcs as i64)
                    .encode(f.encode_family(&[("ost", o.name.as_str())])?)?;
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_ost_device_time_in_queue",
                "Time requests spent at an OST's device, summed when each completes (Linux's \
                 time_in_queue): its rate is the mean device queue.",
                Some(&Unit::Seconds),
                MetricType::Counter,
            )?;
            for o in &s.osts {
                ConstCounter::new(o.device_time_in_queue_ns as f64 / 1e9)
                    .encode(f.encode_family(&[("ost", o.name.as_str())])?)?;
            }
        }
        {
            // A configured limit, not a count: a gauge in RPCs per second.
            let per_s = Unit::Other("rpcs_per_second".to_string());
            let mut f = encoder.encode_descriptor(
                "pfsqos_oss_tbf_rule_rate",
                "Rate of a TBF rule of the OSS's ost_io service (nrs_tbf_rule).",
                Some(&per_s),
                MetricType::Gauge,
            )?;
            for (rule, rate) in &s.rules {
                let rule = label_value(rule);
                ConstGauge::new(i64::from(*rate))
                    .encode(f.encode_family(&[("rule", rule.as_str())])?)?;
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_oss_sync",
                "DSFQ synchronization with the peer ossds since the daemon started, by counter \
                 (ost.OSS.ost_io.nrs_dsfq_sync_stats).",
                None,
                MetricType::Counter,
            )?;
            for (counter, v) in &s.sync {
                ConstCounter::new(*v).encode(f.encode_family(&[("counter", *counter)])?)?;
            }
        }
        encode_admission(&mut encoder, "pfsqos_oss_admission", &s.admission)?;
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_oss_job_nodes",
                "The job node-count table (ost.OSS.ost_io.job_nodes) since the daemon started, \
                 by counter: mount reports learned, overridden by the administrator, entries \
                 evicted, reports dropped, administrator writes applied and refused.",
                None,
                MetricType::Counter,
            )?;
            for (counter, v) in &s.job_nodes {
                ConstCounter::new(*v).encode(f.encode_family(&[("counter", *counter)])?)?;
            }
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_oss_bulk",
                "The bulk budget's guards since the daemon started, by counter: requests that \
                 waited for their client's share, connections put in the overflow share, \
                 connections closed because a reply made no progress (peer not reading).",
                None,
                MetricType::Counter,
            )?;
            for (counter, v) in &s.bulk {
                ConstCounter::new(*v).encode(f.encode_family(&[("counter", *counter)])?)?;
            }
        }
        // One family per quantity, each in its base unit (periods; seconds, not ns).
        for (counter, v) in &s.control {
            let (name, help, unit, value) = match *counter {
                "periods" => {
                    ConstCounter::new(*v).encode(encoder.encode_descriptor(
                        "pfsqos_oss_control_periods",
                        "Periods the control loop (--policy) ran since the daemon started.",
                        None,
                        MetricType::Counter,
                    )?)?;
                    continue;
                }
                "cpu_ns" => (
                    "pfsqos_oss_control_cpu",
                    "CPU time of the control thread over observe, decide and apply, summed \
                     over its periods since the daemon started.",
                    Some(&Unit::Seconds),
                    *v as f64 / 1e9,
                ),
                "wall_ns" => (
                    "pfsqos_oss_control_wall",
                    "Wall time of the control loop's observe, decide and apply, summed over \
                     its periods since the daemon started.",
                    Some(&Unit::Seconds),
                    *v as f64 / 1e9,
                ),
                other => {
                    debug_assert!(false, "unknown control counter {other}");
                    continue;
                }
            };
            ConstCounter::new(value).encode(encoder.encode_descriptor(
                name,
                help,
                unit,
                MetricType::Counter,
            )?)?;
        }
        if let Some(n) = s.jobs_unnamable {
            ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX)).encode(
                encoder.encode_descriptor(
                    "pfsqos_oss_jobs_unnamable",
                    "Jobs of the control loop's last period whose ids hold TBF syntax (*, \
                     space, braces, comma, &, =, non-ASCII), so cannot have a rule of their \
                     own: the controller's catch-all rule limits them.",
                    None,
                    MetricType::Gauge,
                )?,
            )?;
        }
        if let Some(ns) = s.control_period_cpu_ns_median {
            ConstGauge::new(ns as f64 / 1e9).encode(encoder.encode_descriptor(
                "pfsqos_oss_control_period_cpu",
                "The median CPU time of the control loop's last 1024 periods.",
                Some(&Unit::Seconds),
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}

/// An MDS's values at scrape time.
#[derive(Clone, Debug, Default)]
pub struct MdsSample {
    /// Operations answered, by kind.
    pub ops: Vec<(&'static str, u64)>,
    pub inodes: Option<u64>,
    /// Connection admission, as [`OssSample::admission`].
    pub admission: Vec<(&'static str, u64)>,
    /// iez's counters, when the MDS has them.
    pub iez: Option<IezSample>,
}

/// iez's counters on an MDS (module doc for the families).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IezSample {
    pub placed: u64,
    /// Fallbacks to round robin, by cause (a fixed set of labels).
    pub fallbacks: Vec<(&'static str, u64)>,
    pub loads: u64,
    pub rows_loaded: u64,
    /// Rows in the interaction database now, if it could be read.
    pub rows: Option<u64>,
    pub reports_accepted: u64,
    pub reports_refused: u64,
    /// The MDS's own CPU and memory utilization (fractions), when measured.
    pub mds_cpu_util: Option<f64>,
    pub mds_mem_util: Option<f64>,
}

impl IezSample {
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), fmt::Error> {
        let f = encoder.encode_descriptor(
            "pfsqos_mds_iez_placed",
            "Creates placed by iez's plan since the MDS started.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.placed).encode(f)?;
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_mds_iez_fallbacks",
                "Creates with an iez prediction placed by round robin, by cause.",
                None,
                MetricType::Counter,
            )?;
            for (cause, n) in &self.fallbacks {
                ConstCounter::new(*n).encode(f.encode_family(&[("cause", *cause)])?)?;
            }
        }
        let f = encoder.encode_descriptor(
            "pfsqos_mds_iez_loads",
            "iez prediction loads accepted since the MDS started.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.loads).encode(f)?;
        let f = encoder.encode_descriptor(
            "pfsqos_mds_iez_rows_loaded",
            "Predicted files in the loads accepted since the MDS started.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.rows_loaded).encode(f)?;
        if let Some(n) = self.rows {
            let f = encoder.encode_descriptor(
                "pfsqos_mds_iez_rows",
                "Rows in iez's interaction database now (predicted files, created or not).",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX)).encode(f)?;
        }
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_mds_iez_reports",
                "ossd statistics reports, accepted or refused.",
                None,
                MetricType::Counter,
            )?;
            for (result, n) in [
                ("accepted", self.reports_accepted),
                ("refused", self.reports_refused),
            ] {
                ConstCounter::new(n).encode(f.encode_family(&[("result", result)])?)?;
            }
        }
        if self.mds_cpu_util.is_some() || self.mds_mem_util.is_some() {
            let mut f = encoder.encode_descriptor(
                "pfsqos_mds_load_util",
                "The MDS process's CPU and memory utilization (fractions) iez's busy gate reads.",
                None,
                MetricType::Gauge,
            )?;
            for (resource, v) in [("cpu", self.mds_cpu_util), ("memory", self.mds_mem_util)] {
                if let Some(v) = v.filter(|v| v.is_finite()) {
                    ConstGauge::new(v).encode(f.encode_family(&[("resource", resource)])?)?;
                }
            }
        }
        Ok(())
    }
}

/// The admission counters of a daemon, one family labelled by counter.
fn encode_admission(
    encoder: &mut DescriptorEncoder,
    name: &str,
    counters: &[(&'static str, u64)],
) -> Result<(), fmt::Error> {
    let mut f = encoder.encode_descriptor(
        name,
        "Connections refused by budget (pre-auth, per address, authenticated), handshakes \
         timed out, refusal log lines suppressed by the rate limit, since the daemon started.",
        None,
        MetricType::Counter,
    )?;
    for (counter, v) in counters {
        ConstCounter::new(*v).encode(f.encode_family(&[("counter", *counter)])?)?;
    }
    Ok(())
}

/// Encodes an [`MdsSample`].
#[derive(Debug)]
pub struct MdsCollector(pub MdsSample);

impl Collector for MdsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        {
            let mut f = encoder.encode_descriptor(
                "pfsqos_mds_ops",
                "Metadata operations answered, by kind (errors included).",
                None,
                MetricType::Counter,
            )?;
            for (op, n) in &self.0.ops {
                ConstCounter::new(*n).encode(f.encode_family(&[("op", *op)])?)?;
            }
        }
        if let Some(n) = self.0.inodes {
            let f = encoder.encode_descriptor(
                "pfsqos_mds_inodes",
                "Inodes in the namespace: files and directories, root included.",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(n as i64).encode(f)?;
        }
        encode_admission(&mut encoder, "pfsqos_mds_admission", &self.0.admission)?;
        if let Some(iez) = &self.0.iez {
            iez.encode(&mut encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Prometheus 2.x sends gets OpenMetrics; `text/plain;version=0.0.4`, `*/*`, a refused
    /// OpenMetrics (q=0) and no header get the text format 0.0.4.
    #[test]
    fn the_format_is_negotiated_as_prometheus_clients_do() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(
            negotiate(Some("Application/OpenMetrics-Text; q=0.3")),
            Format::OpenMetrics
        );
        for other in [
            "text/plain;version=0.0.4",
            "*/*",
            "application/openmetrics-text;q=0",
            "",
        ] {
            assert_eq!(negotiate(Some(other)), Format::Text004, "{other}");
        }
        assert_eq!(negotiate(None), Format::Text004);
    }

    /// In the 0.0.4 conversion every sample's family has HELP and TYPE under the sample's own
    /// name (counters' `_total`), with no OpenMetrics-only lines left.
    #[test]
    fn the_text_004_conversion_names_help_and_type_as_its_samples() {
        let om = render_collector(OssCollector(OssSample {
            osts: vec![OstSample {
                name: "fs-OST0000".into(),
                jobs: vec![JobSample {
                    job: "job 1".into(),
                    read_bytes: 5,
                    write_bytes: 7,
                    rpcs: [1, 2, 0, 0],
                }],
                served_bytes: 12,
                served_rpcs: 3,
                ..OstSample::default()
            }],
            rules: vec![("r1".into(), 100)],
            admission: vec![("handshakes_evicted", 4)],
            ..OssSample::default()
        }));
        let text = openmetrics_to_text_004(&om);
        assert!(
            !text.contains("# EOF") && !text.contains("# UNIT"),
            "{text}"
        );
        let mut help = std::collections::HashSet::new();
        let mut types = std::collections::HashMap::new();
        for line in text.lines() {
            if let Some(r) = line.strip_prefix("# HELP ") {
                help.insert(r.split(' ').next().unwrap().to_string());
            } else if let Some(r) = line.strip_prefix("# TYPE ") {
                let (n, k) = r.split_once(' ').unwrap();
                assert!(["counter", "gauge", "untyped"].contains(&k), "{line}");
                types.insert(n.to_string(), k.to_string());
            } else {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(help.contains(name), "no HELP for {name}:\n{text}");
                assert!(types.contains_key(name), "no TYPE for {name}:\n{text}");
                if types[name] == "counter" {
                    assert!(name.ends_with("_total"), "{line}");
                }
            }
        }
        assert!(types.len() >= 5, "{text}");
    }

    /// 40 sockets trickling their request (a byte every 100 ms, never the blank line that
    /// ends it) from 8 addresses of the loopback range, renewed as they are closed, do not
    /// blind the endpoint: 16 scrapes in a row from another address all get their answer.
    /// They hold at most their per-source share of the pending-request budget, are evicted for
    /// a source holding fewer, and time out; a scraper that completed a request has a share of
    /// its own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn trickling_sockets_do_not_blind_the_endpoint() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        const WAIT_MAX: Duration = Duration::from_secs(60);
        let render: Render = Arc::new(|| {
            render_collector(MdsCollector(MdsSample {
                ops: vec![("create", 3)],
                inodes: Some(2),
                ..MdsSample::default()
            }))
        });
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), render)
            .await
            .unwrap();
        let addr = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let trickled = Arc::new(AtomicU64::new(0));
        let tricklers: Vec<_> = (0..40u8)
            .map(|i| {
                let (stop, trickled) = (stop.clone(), trickled.clone());
                tokio::spawn(async move {
                    let ip = std::net::Ipv4Addr::new(127, 0, 0, 2 + i % 8);
                    let head = b"GET /metrics HTTP/1.1\r\nHost: trickle\r\nX-Pad: aaaaaaaaaaaaaaaa";
                    while !stop.load(Ordering::Relaxed) {
                        let socket = tokio::net::TcpSocket::new_v4().unwrap();
                        socket.bind(SocketAddr::new(ip.into(), 0)).unwrap();
                        let Ok(mut s) = socket.connect(addr).await else {
                            continue;
                        };
                        for b in head.iter().cycle() {
                            if stop.load(Ordering::Relaxed) || s.write_all(&[*b]).await.is_err() {
                                break;
                            }
                            trickled.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                })
            })
            .collect();
        // The tricklers are at it: 5 bytes each on average (half a second of trickling).
        let deadline = std::time::Instant::now() + WAIT_MAX;
        while trickled.load(Ordering::Relaxed) < 200 {
            assert!(
                std::time::Instant::now() < deadline,
                "the tricklers never started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for i in 0..16 {
            let answer = tokio::time::timeout(WAIT_MAX, async {
                let mut s = TcpStream::connect(addr).await.unwrap();
                s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await
                    .unwrap();
                let mut response = String::new();
                // A connection closed at once reads as empty (or reset): a failed scrape.
                let _ = s.read_to_string(&mut response).await;
                response
            })
            .await
            .expect("a scrape within the deadline");
            assert!(
                answer.starts_with("HTTP/1.1 200 OK") && answer.contains("pfsqos_mds_ops_total{"),
                "scrape {i} failed: {answer:?}"
            );
        }
        stop.store(true, Ordering::Relaxed);
        for t in tricklers {
            t.await.unwrap();
        }
        server.stop().await;
    }

    /// The endpoint answers each format with its content type.
    #[tokio::test]
    async fn the_endpoint_serves_the_negotiated_format() {
        let render: Render = Arc::new(|| {
            render_collector(MdsCollector(MdsSample {
                ops: vec![("create", 3)],
                inodes: Some(2),
                ..MdsSample::default()
            }))
        });
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), render)
            .await
            .unwrap();
        let addr = server.local_addr();
        for (accept, ctype, eof) in [
            ("", CONTENT_TYPE_TEXT_004, false),
            (
                "Accept: text/plain;version=0.0.4\r\n",
                CONTENT_TYPE_TEXT_004,
                false,
            ),
            (
                "Accept: application/openmetrics-text;version=1.0.0\r\n",
                CONTENT_TYPE,
                true,
            ),
        ] {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{accept}\r\n").as_bytes())
                .await
                .unwrap();
            let mut response = String::new();
            s.read_to_string(&mut response).await.unwrap();
            assert!(
                response.contains(&format!("\r\nContent-Type: {ctype}\r\n")),
                "{accept}: {response}"
            );
            assert_eq!(response.ends_with("# EOF\n"), eof, "{accept}: {response}");
            assert!(response.contains("pfsqos_mds_ops_total{"), "{response}");
        }
        server.stop().await;
    }

    #[test]
    fn routes() {
        assert_eq!(
            route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Answer::Metrics {
                head_only: false,
                format: Format::Text004
            }
        );
        assert_eq!(
            route(b"GET /metrics?x=1 HTTP/1.0\r\naccept: application/openmetrics-text\r\n\r\n"),
            Answer::Metrics {
                head_only: false,
                format: Format::OpenMetrics
            }
        );
        assert_eq!(
            route(b"HEAD /metrics HTTP/1.1\r\n\r\n"),
            Answer::Metrics {
                head_only: true,
                format: Format::Text004
            }
        );
        assert_eq!(
            route(b"GET / HTTP/1.1\r\n\r\n"),
            Answer::Status(404, "Not Found")
        );
        assert_eq!(
            route(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Answer::Status(405, "Method Not Allowed")
        );
        for bad in [
            &b"GET /metrics\r\n\r\n"[..],
            b"GET /metrics SPDY/3\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"\xff\xfe /metrics HTTP/1.1\r\n\r\n",
            b"GET  /metrics HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(route(bad), Answer::Status(400, "Bad Request"), "{bad:?}");
        }
    }

    /// An ossd sample with every family (a job of each kind, a rule, every counter set).
    fn full_oss_sample() -> OssSample {
        OssSample {
            osts: vec![OstSample {
                name: "pfsqos-OST0000".into(),
                queued_rpcs: 3,
                device_queue_rpcs: 5,
                device_time_in_queue_ns: 2_500_000_000,
                served_bytes: 100,
                served_rpcs: 2,
                jobs: vec![
                    JobSample {
                        job: "dd.0".into(),
                        read_bytes: 10,
                        write_bytes: 90,
                        rpcs: [1, 1, 0, 0],
                    },
                    JobSample {
                        job: "job 1".into(),
                        read_bytes: 1,
                        write_bytes: 2,
                        rpcs: [1, 1, 1, 1],
                    },
                ],
            }],
            rules: vec![("r1".into(), 250), ("default".into(), 10000)],
            sync: vec![("reports_out", 12), ("batches_in", 3)],
            admission: vec![("refused_handshakes_per_address", 7)],
            job_nodes: vec![("evicted", 4)],
            bulk: vec![("reply_timeouts", 2)],
            control: vec![("periods", 5)],
            control_period_cpu_ns_median: Some(1234),
            jobs_unnamable: Some(2),
        }
    }

    /// Where promtool cannot be run, the lint skips through `pfsqos_testkit::skip`, so the
    /// run's list of skipped tests names it (a silent return passed as if it had linted): this
    /// test binary runs that one test again with a `PATH` holding no promtool and a skip log
    /// of its own.
    #[test]
    fn the_promtool_lint_lists_its_skip_without_promtool() {
        let dir = std::env::temp_dir().join(format!("pfsqos-metrics-skip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skipped");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::promtool_finds_nothing_in_the_daemons_families",
                "--test-threads=1",
            ])
            .env("PATH", &dir)
            .env(pfsqos_testkit::SKIP_LOG_ENV, &log)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            logged.starts_with(
                "SKIP: promtool_finds_nothing_in_the_daemons_families: promtool is not installed"
            ),
            "{logged:?}"
        );
    }

    /// Prometheus' linter finds nothing in either daemon's families (HELP everywhere, names in
    /// base units, counters named `_total`). Skipped, saying why, where promtool is missing.
    #[test]
    fn promtool_finds_nothing_in_the_daemons_families() {
        let oss = render_collector(OssCollector(full_oss_sample()));
        let mds = render_collector(MdsCollector(MdsSample {
            ops: vec![("create", 1)],
            inodes: Some(1),
            admission: vec![("refused_connections", 0)],
            iez: Some(IezSample {
                placed: 1,
                fallbacks: vec![("no_prediction", 2)],
                loads: 1,
                rows_loaded: 3,
                rows: Some(3),
                reports_accepted: 1,
                reports_refused: 0,
                mds_cpu_util: Some(0.5),
                mds_mem_util: Some(0.25),
            }),
        }));
        let mut problems = Vec::new();
        for text in [oss, mds] {
            match promtool_check(&text) {
                None => {
                    pfsqos_testkit::skip(
                        "promtool_finds_nothing_in_the_daemons_families",
                        "promtool is not installed (Debian: apt-get install prometheus)",
                    );
                    return;
                }
                Some(verdict) => problems.extend(verdict.err()),
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn oss_sample_encodes_every_family() {
        let text = render_collector(OssCollector(OssSample {
            osts: vec![OstSample {
                name: "pfsqos-OST0000".into(),
                queued_rpcs: 3,
                device_queue_rpcs: 5,
                device_time_in_queue_ns: 2_500_000_000,
                served_bytes: 100,
                served_rpcs: 2,
                jobs: vec![JobSample {
                    job: "dd.0".into(),
                    read_bytes: 10,
                    write_bytes: 90,
                    rpcs: [1, 1, 0, 0],
                }],
            }],
            rules: vec![("r1".into(), 250), ("default".into(), 10000)],
            sync: vec![("reports_out", 12), ("batches_in", 3)],
            admission: vec![("refused_handshakes_per_address", 7)],
            job_nodes: vec![("evicted", 4)],
            bulk: vec![("reply_timeouts", 2)],
            control: vec![("periods", 5), ("cpu_ns", 106), ("wall_ns", 212)],
            control_period_cpu_ns_median: Some(1234),
            jobs_unnamable: Some(2),
        }));
        for line in [
            "pfsqos_ost_job_read_bytes_total{ost=\"pfsqos-OST0000\",job=\"dd.0\"} 10",
            "pfsqos_ost_job_write_bytes_total{ost=\"pfsqos-OST0000\",job=\"dd.0\"} 90",
            "pfsqos_ost_job_rpcs_total{ost=\"pfsqos-OST0000\",job=\"dd.0\",op=\"write\"} 1",
            "pfsqos_ost_served_bytes_total{ost=\"pfsqos-OST0000\"} 100",
            "pfsqos_ost_served_rpcs_total{ost=\"pfsqos-OST0000\"} 2",
            "pfsqos_ost_queue_rpcs{ost=\"pfsqos-OST0000\"} 3",
            "pfsqos_oss_tbf_rule_rate_rpcs_per_second{rule=\"r1\"} 250",
            "pfsqos_oss_sync_total{counter=\"reports_out\"} 12",
            "pfsqos_oss_sync_total{counter=\"batches_in\"} 3",
            "pfsqos_oss_admission_total{counter=\"refused_handshakes_per_address\"} 7",
            "pfsqos_oss_job_nodes_total{counter=\"evicted\"} 4",
            "pfsqos_oss_bulk_total{counter=\"reply_timeouts\"} 2",
            "pfsqos_oss_control_periods_total 5",
            "pfsqos_oss_control_cpu_seconds_total 1.06e-7",
            "pfsqos_oss_control_wall_seconds_total 2.12e-7",
            "pfsqos_oss_control_period_cpu_seconds 0.000001234",
            "pfsqos_oss_jobs_unnamable 2",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
    }

    /// One sample of OpenMetrics text: family name, labels (unescaped), value.
    type Sample = (String, Vec<(String, String)>, String);

    fn metric_name(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    /// Parses `text` as the OpenMetrics text format (the subset prometheus-client writes:
    /// HELP, TYPE, UNIT, samples with labels, `# EOF` last) and returns its samples; panics
    /// on anything else, so a test sees malformed output as a failure.
    fn parse_openmetrics(text: &str) -> Vec<Sample> {
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(
            lines[lines.len() - 2..],
            ["# EOF", ""],
            "ends with # EOF and a newline"
        );
        let mut family = String::new();
        let mut kind = String::new();
        let mut seen: Vec<String> = Vec::new();
        let mut samples = Vec::new();
        for line in &lines[..lines.len() - 2] {
            if let Some(rest) = line.strip_prefix("# ") {
                let mut parts = rest.splitn(3, ' ');
                let (what, name) = (parts.next().unwrap(), parts.next().unwrap());
                assert!(metric_name(name), "{line}");
                // A family's metadata comes together, in any order; a new name starts a family.
                if name != family {
                    assert!(!seen.contains(&name.to_string()), "family {name} twice");
                    seen.push(name.to_string());
                    family = name.to_string();
                    kind.clear();
                }
                match what {
                    "TYPE" => {
                        kind = parts.next().unwrap().to_string();
                        assert!(["counter", "gauge"].contains(&kind.as_str()), "{line}");
                    }
                    "HELP" | "UNIT" => {}
                    _ => panic!("unknown descriptor {line}"),
                }
                continue;
            }
            let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("{line}"));
            let name = &line[..name_end];
            assert!(!kind.is_empty(), "sample before its family's TYPE: {line}");
            let expected = if kind == "counter" {
                format!("{family}_total")
            } else {
                family.clone()
            };
            assert_eq!(name, expected, "sample of another family: {line}");
            let mut rest = &line[name_end..];
            let mut labels = Vec::new();
            if let Some(body) = rest.strip_prefix('{') {
                rest = body;
                loop {
                    let eq = rest.find("=\"").unwrap_or_else(|| panic!("{line}"));
                    let key = &rest[..eq];
                    assert!(metric_name(key) && !key.contains(':'), "{line}");
                    let mut value = String::new();
                    let mut chars = rest[eq + 2..].char_indices();
                    let end = loop {
                        let (i, c) = chars.next().unwrap_or_else(|| panic!("{line}"));
                        match c {
                            '"' => break eq + 2 + i + 1,
                            '\\' => match chars.next().map(|x| x.1) {
                                Some('\\') => value.push('\\'),
                                Some('"') => value.push('"'),
                                Some('n') => value.push('\n'),
                                other => panic!("bad escape {other:?} in {line}"),
                            },
                            c => value.push(c),
                        }
                    };
                    labels.push((key.to_string(), value));
                    rest = &rest[end..];
                    if let Some(r) = rest.strip_prefix(',') {
                        rest = r;
                    } else if let Some(r) = rest.strip_prefix('}') {
                        rest = r;
                        break;
                    } else {
                        panic!("{line}");
                    }
                }
            }
            let value = rest.strip_prefix(' ').unwrap_or_else(|| panic!("{line}"));
            assert!(value.parse::<f64>().is_ok(), "{line}");
            samples.push((name.to_string(), labels, value.to_string()));
        }
        samples
    }

    fn hostile_sample() -> OssSample {
        OssSample {
            osts: vec![OstSample {
                name: "pfsqos-OST0001".into(),
                served_bytes: 3,
                jobs: vec![
                    JobSample {
                        job: "evil\"} 1\nlustre_job_read_bytes_total{jobid=\"x\\".into(),
                        read_bytes: 7,
                        write_bytes: 11,
                        rpcs: [2, 3, 0, 1],
                    },
                    JobSample {
                        job: "dd.1000".into(),
                        read_bytes: 0,
                        write_bytes: 5,
                        rpcs: [0, 1, 0, 0],
                    },
                ],
                ..OstSample::default()
            }],
            rules: vec![("r\"1".into(), 5)],
            sync: Vec::new(),
            admission: Vec::new(),
            job_nodes: Vec::new(),
            bulk: Vec::new(),
            control: Vec::new(),
            control_period_cpu_ns_median: None,
            jobs_unnamable: None,
        }
    }

    #[test]
    fn exporter_compatible_names_are_valid_openmetrics_with_hostile_job_ids() {
        let sample = hostile_sample();
        let evil = sample.osts[0].jobs[0].job.clone();
        let samples = parse_openmetrics(&render_collector(OssCollector(sample)));
        let find = |name: &str, job: &str| -> Vec<&Sample> {
            samples
                .iter()
                .filter(|s| s.0 == name && s.1.iter().any(|(k, v)| k == "jobid" && v == job))
                .collect()
        };
        let evil = exporter_job_id(&evil);
        for (name, evil_value, plain_value) in [
            ("lustre_job_read_bytes_total", "7", "0"),
            ("lustre_job_write_bytes_total", "11", "5"),
            ("lustre_job_read_samples_total", "2", "0"),
            ("lustre_job_write_samples_total", "3", "1"),
        ] {
            for (job, value) in [(evil.as_str(), evil_value), ("dd.1000", plain_value)] {
                let found = find(name, job);
                assert_eq!(found.len(), 1, "{name} {job}");
                let labels: Vec<(&str, &str)> = found[0]
                    .1
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                assert_eq!(
                    labels,
                    [
                        ("component", "ost"),
                        ("target", "pfsqos-OST0001"),
                        ("jobid", job)
                    ]
                );
                assert_eq!(found[0].2, value);
            }
        }
        // The hostile id did not inject a sample: two jobs, two read-bytes samples.
        assert_eq!(
            samples
                .iter()
                .filter(|s| s.0 == "lustre_job_read_bytes_total")
                .count(),
            2
        );
        // The pfsqos families are still there, under pfsqos_.
        assert!(samples
            .iter()
            .any(|s| s.0 == "pfsqos_ost_job_write_bytes_total" && s.2 == "11"));
        assert!(samples
            .iter()
            .all(|s| s.0.starts_with("pfsqos_") || s.0.starts_with("lustre_job_")));
    }

    /// The GSI lustre_exporter's job id parse of one `job_stats` block (`sources/proc_common.go`,
    /// `jobidRegexPattern = job_id:[ \t]*"?([^"\n\r]*)"?`), as Go's regexp applies it.
    fn gsi_exporter_job_id(job_stats: &str) -> String {
        let rest = job_stats.split_once("job_id:").expect("a job_id line").1;
        let rest = rest.trim_start_matches([' ', '\t']);
        let rest = rest.strip_prefix('"').unwrap_or(rest);
        rest.chars()
            .take_while(|c| !matches!(c, '"' | '\n' | '\r'))
            .collect()
    }

    /// Job ids are labelled as the exporters reading the same job_stats label them: for ids
    /// plain and quoted (a space, `@` first, `"`, `\\`, non-ASCII, `:`), the `jobid` and `job`
    /// labels equal the GSI parse of the job_stats Lustre's printer writes; `job 1` is
    /// `job\x201`.
    #[test]
    fn job_labels_match_the_exporters_parse_of_job_stats() {
        use pfsqos_lustre::jobstats::{render_job_stats, JobEntry, JobStatsFormat};
        use pfsqos_lustre::model::JobId;
        assert_eq!(exporter_job_id("job 1"), "job\\x201");
        assert_eq!(exporter_job_id("dd.0"), "dd.0");
        for id in ["job 1", "dd.0", "we\"ird\\job x", "x:y", "@h"] {
            assert_eq!(job_id_of_exporter_label(&exporter_job_id(id)), id);
        }
        for id in [
            "job 1",
            "dd.0",
            "@host",
            "a\"b",
            "back\\slash",
            "é.1",
            "x:y",
            "*",
            "k=v",
        ] {
            let entry = JobEntry::new(JobId::new(id).unwrap(), 1);
            let printed = render_job_stats([&entry], JobStatsFormat::Master);
            let expected = gsi_exporter_job_id(&printed);
            let text = render_collector(OssCollector(OssSample {
                osts: vec![OstSample {
                    name: "fs-OST0000".into(),
                    jobs: vec![JobSample {
                        job: id.into(),
                        read_bytes: 1,
                        ..JobSample::default()
                    }],
                    ..OstSample::default()
                }],
                ..OssSample::default()
            }));
            let samples = parse_openmetrics(&text);
            for (family, label) in [
                ("lustre_job_read_bytes_total", "jobid"),
                ("pfsqos_ost_job_read_bytes_total", "job"),
            ] {
                let found: Vec<&str> = samples
                    .iter()
                    .filter(|s| s.0 == family)
                    .flat_map(|s| s.1.iter().filter(|(k, _)| k == label))
                    .map(|(_, v)| v.as_str())
                    .collect();
                assert_eq!(found, [expected.as_str()], "{id:?} in {printed}");
            }
        }
    }

    /// The job ids HPE's lustre_exporter labels one OST's `job_stats` text with, as Go's
    /// leftmost-first regexp applies its rules (HewlettPackard/lustre_exporter at 63e0aba,
    /// unchanged since 5d9684c of 2018). `sources/procfs.go`, `parseJobStatsText`: a block
    /// runs from each `job_id:` to the end of its line, then lazily to the first `-` after it
    /// (or the end of the text); `getJobNum`: the block's first `job_id: ` (one space) to the
    /// end of its line, matched against `sources/proc_common.go`'s `jobidRegexPattern`,
    /// `job_id:\s*(.*\.[0-9]+|[0-9_]+)`, whose first group is the label, `""` without a match.
    /// No quote is removed and no `\xHH` decoded: the label is the printed text.
    fn hpe_exporter_job_ids(job_stats: &str) -> Vec<String> {
        let mut ids = Vec::new();
        let mut from = 0;
        while let Some(at) = job_stats[from..].find("job_id:") {
            let start = from + at;
            let line_end = job_stats[start..]
                .find('\n')
                .map_or(job_stats.len(), |i| start + i);
            let end = job_stats[line_end..]
                .find('-')
                .map_or(job_stats.len(), |i| line_end + i + 1);
            let block = &job_stats[start..end];
            ids.push(match block.find("job_id: ") {
                Some(i) => {
                    let line = &block[i..];
                    hpe_job_num(&line[..line.find('\n').unwrap_or(line.len())])
                }
                None => String::new(),
            });
            from = end;
        }
        ids
    }

    /// `jobidRegexPattern`'s first group in one line: `\s*` takes every blank (taking fewer
    /// cannot help either branch); `.*\.[0-9]+` then backs off to the last `.` before a digit
    /// and takes every digit after it; else `[0-9_]+` must start right there. A failed start
    /// is tried again at the line's next `job_id:`.
    fn hpe_job_num(line: &str) -> String {
        let mut from = 0;
        while let Some(at) = line[from..].find("job_id:") {
            let rest = &line[from + at + "job_id:".len()..];
            let rest = rest.trim_start_matches([' ', '\t', '\n', '\x0c', '\r']);
            let b = rest.as_bytes();
            let last_dot = (0..b.len().saturating_sub(1))
                .rev()
                .find(|&k| b[k] == b'.' && b[k + 1].is_ascii_digit());
            if let Some(dot) = last_dot {
                let digits = b[dot + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                return rest[..dot + 1 + digits].to_string();
            }
            let n = b
                .iter()
                .take_while(|c| c.is_ascii_digit() || **c == b'_')
                .count();
            if n > 0 {
                return rest[..n].to_string();
            }
            from += at + 1;
        }
        String::new()
    }

    /// The emulation of HPE's rule gives what HPE's own unit test of `getJobNum`
    /// (`sources/procfs_test.go`) says it gives, and cuts blocks at the next job's `- `.
    #[test]
    fn hpes_job_id_rule_is_emulated_as_its_tests_state_it() {
        assert_eq!(hpe_exporter_job_ids("job_id: 1234"), ["1234"]);
        assert_eq!(hpe_exporter_job_ids("job_id: ABCD"), [""]);
        assert_eq!(
            hpe_exporter_job_ids("job_id:  abc .0123 .-_+ AB.1000  "),
            ["abc .0123 .-_+ AB.1000"]
        );
        assert_eq!(
            hpe_exporter_job_ids(
                "job_stats:\n- job_id:          dd.500\n  snapshot_time: 1\n\
                 - job_id:          cp.7x\n  snapshot_time: 1\n"
            ),
            ["dd.500", "cp.7"]
        );
    }

    /// The `jobid` label of `lustre_job_*` is HPE's lustre_exporter's label for the same job
    /// whenever HPE's rule keeps the whole id the ossd's job_stats print (plain ids ending in
    /// `.` and digits, or of digits and `_` alone: `%e.%u`, `%j`, ...): a dashboard joining
    /// both sees one job. For the others (a space, `"`, `\\`, non-ASCII, `*`, `:`, a leading
    /// `@`: printed quoted with `\xHH` escapes; ids with no `.` and digits at their end) HPE's
    /// label is not the job's: `""` (every such job shares it), the printed text with its
    /// opening quote, or a cut prefix, which no label of ours can equal without breaking the
    /// GSI exporter's join and colliding jobs; ours stays the GSI one, the id as printed.
    #[test]
    fn job_labels_match_hpes_exporter_wherever_it_names_the_job() {
        use pfsqos_lustre::jobstats::{render_job_stats, JobEntry, JobStatsFormat};
        use pfsqos_lustre::model::JobId;
        let (mut named, mut unnamed) = (Vec::new(), Vec::new());
        for id in [
            "dd.500",
            "4151234",
            "4151234_7",
            "node01.dd.500",
            "a-b.12",
            "my.app.1001.100",
            "job 1",
            "job 1.5",
            "a\"b.5",
            "back\\slash.5",
            "\u{e9}.1",
            "*",
            "x:y.3",
            "@host.4",
            "app.1.x",
            "ABCD",
        ] {
            let entry = JobEntry::new(JobId::new(id).unwrap(), 1);
            let printed = render_job_stats([&entry], JobStatsFormat::Master);
            let hpe = hpe_exporter_job_ids(&printed);
            assert_eq!(hpe.len(), 1, "{printed}");
            let hpe = &hpe[0];
            // What Lustre printed after `job_id:`, quotes and escapes as they are.
            let as_printed = printed
                .split_once("job_id:")
                .unwrap()
                .1
                .lines()
                .next()
                .unwrap()
                .trim_start_matches([' ', '\t']);
            let text = render_collector(OssCollector(OssSample {
                osts: vec![OstSample {
                    name: "fs-OST0000".into(),
                    jobs: vec![JobSample {
                        job: id.into(),
                        write_bytes: 1,
                        ..JobSample::default()
                    }],
                    ..OstSample::default()
                }],
                ..OssSample::default()
            }));
            let ours: Vec<String> = parse_openmetrics(&text)
                .into_iter()
                .filter(|s| s.0.starts_with("lustre_job_"))
                .flat_map(|s| s.1.into_iter().filter(|(k, _)| k == "jobid"))
                .map(|(_, v)| v)
                .collect();
            assert!(ours.len() >= 4 && ours.iter().all(|v| v == &ours[0]));
            if hpe == as_printed {
                assert_eq!(&ours[0], hpe, "{id:?}: HPE names it, so must we");
                named.push(id);
            } else {
                assert!(
                    hpe.is_empty() || hpe.starts_with('"') || as_printed.starts_with(hpe.as_str()),
                    "{id:?}: HPE's label {hpe:?} of {as_printed:?}"
                );
                assert_ne!(&ours[0], hpe, "{id:?}");
                unnamed.push(id);
            }
        }
        assert_eq!(
            named,
            [
                "dd.500",
                "4151234",
                "4151234_7",
                "node01.dd.500",
                "a-b.12",
                "my.app.1001.100"
            ]
        );
        assert_eq!(unnamed.len(), 10, "{unnamed:?}");
    }

    /// The shipped Grafana dashboard is valid JSON and queries only families pfsqos exports
    /// (the Lustre-exporter-compatible ones work with that exporter too).
    #[test]
    fn grafana_dashboard_queries_exported_families() {
        let text = include_str!("../../../packaging/grafana/pfsqos-dashboard.json");
        let json: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
        let oss = render_collector(OssCollector(hostile_sample()));
        let mds = render_collector(MdsCollector(MdsSample {
            ops: vec![("create", 1)],
            inodes: Some(1),
            admission: vec![("refused_connections", 0)],
            iez: None,
        }));
        let exported: Vec<String> = parse_openmetrics(&oss)
            .into_iter()
            .chain(parse_openmetrics(&mds))
            .map(|s| s.0)
            .collect();
        let mut queries = Vec::new();
        for panel in json["panels"].as_array().expect("panels") {
            for target in panel["targets"].as_array().into_iter().flatten() {
                queries.push(target["expr"].as_str().expect("expr").to_string());
            }
        }
        assert!(queries.len() >= 4);
        let mut compatible = 0;
        for q in &queries {
            let names: Vec<&str> = q
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("pfsqos_") || w.starts_with("lustre_"))
                .collect();
            assert!(!names.is_empty(), "{q}");
            for n in names {
                assert!(exported.iter().any(|e| e == n), "{n} is not exported ({q})");
                compatible += usize::from(n.starts_with("lustre_job_"));
            }
        }
        assert!(
            compatible >= 2,
            "the per-job panels use the exporter's names"
        );
    }

    #[test]
    fn mds_sample_encodes() {
        let text = render_collector(MdsCollector(MdsSample {
            ops: vec![("create", 4), ("lookup", 7)],
            inodes: Some(5),
            admission: vec![("refused_connections", 2)],
            iez: None,
        }));
        assert!(
            text.contains("pfsqos_mds_ops_total{op=\"create\"} 4\n"),
            "{text}"
        );
        assert!(text.contains("pfsqos_mds_inodes 5\n"), "{text}");
        assert!(
            text.contains("pfsqos_mds_admission_total{counter=\"refused_connections\"} 2\n"),
            "{text}"
        );
        assert!(!text.contains("iez"), "no iez families without iez: {text}");
    }

    #[test]
    fn mds_iez_sample_encodes() {
        let sample = |load: Option<f64>| MdsSample {
            ops: vec![("create", 4)],
            inodes: Some(5),
            admission: vec![],
            iez: Some(IezSample {
                placed: 6,
                fallbacks: vec![("stats_stale", 2), ("mds_busy", 1)],
                loads: 3,
                rows_loaded: 18,
                rows: Some(12),
                reports_accepted: 9,
                reports_refused: 1,
                mds_cpu_util: load,
                mds_mem_util: load.map(|l| l / 2.0),
            }),
        };
        let text = render_collector(MdsCollector(sample(Some(0.25))));
        for line in [
            "pfsqos_mds_iez_placed_total 6\n",
            "pfsqos_mds_iez_fallbacks_total{cause=\"stats_stale\"} 2\n",
            "pfsqos_mds_iez_fallbacks_total{cause=\"mds_busy\"} 1\n",
            "pfsqos_mds_iez_loads_total 3\n",
            "pfsqos_mds_iez_rows_loaded_total 18\n",
            "pfsqos_mds_iez_rows 12\n",
            "pfsqos_mds_iez_reports_total{result=\"accepted\"} 9\n",
            "pfsqos_mds_iez_reports_total{result=\"refused\"} 1\n",
            "pfsqos_mds_load_util{resource=\"cpu\"} 0.25\n",
            "pfsqos_mds_load_util{resource=\"memory\"} 0.125\n",
            "# TYPE pfsqos_mds_iez_fallbacks counter\n",
            "# TYPE pfsqos_mds_load_util gauge\n",
        ] {
            assert!(text.contains(line), "{line:?} in {text}");
        }
        // Parses as OpenMetrics, every family pfsqos's.
        let samples = parse_openmetrics(&text);
        assert!(samples.iter().all(|s| s.0.starts_with("pfsqos_")));
        // Unmeasured load: no gauge family.
        let text = render_collector(MdsCollector(sample(None)));
        assert!(!text.contains("pfsqos_mds_load_util"), "{text}");
    }
}
