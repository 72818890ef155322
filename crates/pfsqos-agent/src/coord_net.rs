//! The coordinator's network side and the agent's link to it, over pfsqos-wire's
//! authenticated framing (HMAC handshake with the servers' key where the coordinator has one,
//! else the cluster key; frames ≤ 8 MiB + 4 KiB).
//!
//! Bounds: at most `2 × agents` authenticated connections at once (one per agent plus one
//! reconnecting); before that, the same pre-auth admission as the ossd and the MDS
//! ([`pfsqos_wire::admission`]: a small handshake budget shared fairly by source, with a
//! share reserved for sources that authenticated before, and a deadline of
//! [`pfsqos_wire::admission::SERVER_HANDSHAKE_TIMEOUT`]), so peers without the key cannot hold
//! the agents out however many sockets they keep open; refusals and failed handshakes are
//! logged at most [`pfsqos_wire::admission::LOG_LINES_PER_WINDOW`] times a window. A peer that
//! sends nothing for [`IDLE_PERIODS`] periods is dropped; a peer that is not an authenticated
//! `Lctl`-role peer, names an agent off the allow-list or sends an invalid report is dropped
//! (the handshake tells a peer with a wrong key why; the rest is logged). The agent side
//! waits at most [`LinkTimeouts`] per exchange.
//!
//! Safe state ([`SafeHold`]): an agent keeps the last rates it was sent while it hears from the
//! coordinator; once `safe_hold_ms` pass without a reply it drops them (its rules for them
//! are stopped at its next period), and takes new rates as soon as the coordinator answers
//! again.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pfsqos_wire::admission::{Admission, HandshakeSlot};
use pfsqos_wire::conn::{self, ConnError, Reader, Writer};
use pfsqos_wire::coord::{AgentReport, CoordReply, ValidReply};
use pfsqos_wire::protocol::{self, ProtocolError, Role};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tracing::{info, warn};

use crate::coord::{CoordStats, Coordinator};

/// Periods of silence after which the coordinator drops an agent's connection.
pub const IDLE_PERIODS: u32 = 10;
/// What the coordinator calls itself in the handshake's welcome (≤ 8 bytes, like a fsname).
pub const COORD_FSNAME: &str = "pfsqcoor";

/// The safe-state timer, in the caller's time (virtual in tests).
#[derive(Clone, Copy, Debug)]
pub struct SafeHold {
    hold_ns: u64,
    last_reply_ns: u64,
    released: bool,
}

impl SafeHold {
    /// Starts counting at `now_ns` (an agent that never hears from its coordinator holds
    /// nothing anyway).
    pub fn new(hold_ns: u64, now_ns: u64) -> SafeHold {
        assert!(hold_ns > 0);
        SafeHold {
            hold_ns,
            last_reply_ns: now_ns,
            released: false,
        }
    }

    /// A reply arrived: rates are current again.
    pub fn reply(&mut self, now_ns: u64) {
        self.last_reply_ns = now_ns;
        self.released = false;
    }

    /// Whether the rates must be dropped now: true once per silence longer than the hold.
    pub fn must_release(&mut self, now_ns: u64) -> bool {
        if !self.released && now_ns.saturating_sub(self.last_reply_ns) > self.hold_ns {
            self.released = true;
            return true;
        }
        false
    }

    pub fn released(&self) -> bool {
        self.released
    }
}

type Conn = (Reader<OwnedReadHalf>, Writer<OwnedWriteHalf>);

/// The agent's link: connects (and reconnects) on demand, one report and one reply per
/// period, each step within `timeout`.
pub struct CoordLink {
    rt: tokio::runtime::Runtime,
    addr: SocketAddr,
    key: Vec<u8>,
    timeout: Duration,
    conn: Option<Conn>,
}

impl CoordLink {
    pub fn new(addr: SocketAddr, key: Vec<u8>, timeout: Duration) -> std::io::Result<CoordLink> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(CoordLink {
            rt,
            addr,
            key,
            timeout,
            conn: None,
        })
    }

    /// Sends `report` and returns the coordinator's rates and first-sight shares for this OSS
    /// (`None`: it has not decided yet). On any error the connection is dropped; the next
    /// call reconnects.
    pub fn exchange(&mut self, report: &AgentReport) -> Result<Option<ValidReply>, String> {
        let conn = self.conn.take();
        let (addr, key, timeout) = (self.addr, self.key.clone(), self.timeout);
        let result = self.rt.block_on(async move {
            tokio::time::timeout(timeout, async move {
                let mut c = match conn {
                    Some(c) => c,
                    None => connect(addr, &key).await?,
                };
                c.1.msg(report).await?;
                let reply: CoordReply = protocol::decode(&c.0.frame().await?)?;
                Ok::<_, ConnError>((c, reply))
            })
            .await
        });
        let (c, reply) = match result {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err("coordinator did not answer in time".into()),
        };
        let valid = reply.validate().map_err(|e| e.to_string())?;
        self.conn = Some(c);
        Ok((reply.round > 0).then_some(valid))
    }
}

async fn connect(addr: SocketAddr, key: &[u8]) -> Result<Conn, ConnError> {
    let (r, w) = TcpStream::connect(addr).await?.into_split();
    let (mut r, mut w) = (Reader::new(r), Writer::new(w));
    conn::client_handshake(&mut r, &mut w, key, Role::Lctl, protocol::PROTOCOL_VERSION).await?;
    Ok((r, w))
}

/// Serves agents on `listener` and runs a round every period until `stop` resolves. The
/// controllers are not `Send`, so the connections are tasks of one thread (a `LocalSet`);
/// a round and a report each hold the coordinator only for their synchronous step.
pub async fn serve(
    listener: TcpListener,
    key: Vec<u8>,
    coord: Coordinator,
    epoch: Instant,
    stop: impl std::future::Future<Output = ()>,
) {
    let published = Arc::new(Mutex::new(CoordStats::default()));
    serve_published(listener, key, coord, epoch, stop, published).await
}

/// [`serve`], copying the coordinator's [`CoordStats`] into `published` after every round and
/// report (its metrics endpoint reads them there).
pub async fn serve_published(
    listener: TcpListener,
    key: Vec<u8>,
    coord: Coordinator,
    epoch: Instant,
    stop: impl std::future::Future<Output = ()>,
    published: Arc<Mutex<CoordStats>>,
) {
    let admission = Admission::with_connections_max(2 * coord.agents().len());
    serve_admitted(listener, key, coord, epoch, stop, published, admission).await
}

/// [`serve_published`] through `admission` (whose counters the caller may read), which should
/// allow `2 × agents` authenticated connections.
pub async fn serve_admitted(
    listener: TcpListener,
    key: Vec<u8>,
    coord: Coordinator,
    epoch: Instant,
    stop: impl std::future::Future<Output = ()>,
    published: Arc<Mutex<CoordStats>>,
    admission: Arc<Admission>,
) {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(serve_local(
            listener, key, coord, epoch, stop, published, admission,
        ))
        .await;
}

/// Logs a refused or failed unauthenticated connection, rate-limited by `admission`.
fn log_refusal(admission: &Admission, peer: SocketAddr, reason: &dyn std::fmt::Display) {
    if let Some(suppressed) = admission.log_allowed() {
        warn!(%peer, %reason, suppressed, "connection refused before authentication");
    }
}

fn publish(coord: &Coordinator, published: &Mutex<CoordStats>) {
    *published.lock().unwrap_or_else(|e| e.into_inner()) = coord.stats.clone();
}

/// Logs what a round changed: a controller that refused the view (with its reason), jobs
/// starting or ceasing to be held at a file-system-wide limit.
fn log_round(before: &CoordStats, after: &CoordStats) {
    if after.rejected_observations > before.rejected_observations {
        warn!(
            refused_total = after.rejected_observations,
            reason = %after.last_rejection.as_deref().unwrap_or("").escape_debug(),
            "the controller refused this round's view of the file system; nothing decided"
        );
    }
    for (job, h) in &after.held {
        if !before.held.contains_key(job) {
            info!(job = %job.as_str().escape_debug(), limit_bytes_per_s = h.limit_bytes_per_s, "job held at its file-system-wide limit");
        }
    }
    for (job, h) in &before.held {
        if !after.held.contains_key(job) {
            info!(job = %job.as_str().escape_debug(), held_s = h.held_ns as f64 / 1e9, "job no longer held at its file-system-wide limit");
        }
    }
}

async fn serve_local(
    listener: TcpListener,
    key: Vec<u8>,
    coord: Coordinator,
    epoch: Instant,
    stop: impl std::future::Future<Output = ()>,
    published: Arc<Mutex<CoordStats>>,
    admission: Arc<Admission>,
) {
    let period = Duration::from_nanos(coord.period_ns());
    let coord = Rc::new(RefCell::new(coord));
    let key = Arc::new(key);
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = tick.tick() => {
                let now = epoch.elapsed().as_nanos() as u64;
                let mut c = coord.borrow_mut();
                let before = c.stats.clone();
                if let Some(obs) = c.run_round(now) {
                    info!(round = c.round(), domains = obs.domains.len(), jobs = obs.jobs.len(), "round");
                    log_round(&before, &c.stats);
                }
                publish(&c, &published);
            }
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of descriptors and the like: back off instead of spinning.
                        warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let slot = match admission.handshake(peer.ip()) {
                    Ok(s) => s,
                    Err(refusal) => {
                        log_refusal(&admission, peer, &refusal);
                        continue;
                    }
                };
                let (coord, key, published) = (coord.clone(), key.clone(), published.clone());
                let admission = admission.clone();
                tokio::task::spawn_local(async move {
                    match serve_agent(stream, &key, &coord, epoch, period, &admission, slot).await {
                        Ok(()) => {}
                        // Before authentication anyone can cause these: rate-limited.
                        Err((e, true)) => log_refusal(&admission, peer, &e),
                        Err((e, false)) => warn!(%peer, error = %e, "agent connection ended"),
                    }
                    publish(&coord.borrow(), &published);
                });
            }
        }
    }
}

/// Serves one connection; on error, whether it ended before the peer authenticated.
async fn serve_agent(
    stream: TcpStream,
    key: &[u8],
    coord: &RefCell<Coordinator>,
    epoch: Instant,
    period: Duration,
    admission: &Arc<Admission>,
    mut slot: HandshakeSlot,
) -> Result<(), (ConnError, bool)> {
    let (r, w) = stream.into_split();
    let (mut r, mut w) = (Reader::new(r), Writer::new(w));
    // The pre-auth slot becomes a connection slot once the peer has authenticated; the
    // handshake ends early if admission gives the slot to a source holding fewer.
    let eviction = slot.eviction();
    let adm = admission.clone();
    let (peer, _conn_slot) = admission
        .run_handshake(
            eviction,
            conn::server_handshake_admit(&mut r, &mut w, key, COORD_FSNAME, 0, move |_| {
                adm.authenticated(slot).map_err(|r| r.to_string())
            }),
        )
        .await
        .map_err(|e| (e, true))?;
    if !matches!(peer.role, Role::Lctl) {
        let e = ProtocolError::Invalid("only agents speak to the coordinator".into());
        return Err((e.into(), false));
    }
    serve_reports(&mut r, &mut w, coord, epoch, period)
        .await
        .map_err(|e| (e, false))
}

async fn serve_reports(
    r: &mut Reader<OwnedReadHalf>,
    w: &mut Writer<OwnedWriteHalf>,
    coord: &RefCell<Coordinator>,
    epoch: Instant,
    period: Duration,
) -> Result<(), ConnError> {
    let idle = period * IDLE_PERIODS;
    loop {
        let frame = tokio::time::timeout(idle, r.frame())
            .await
            .map_err(|_| ConnError::Timeout)??;
        let report: AgentReport = protocol::decode(&frame)?;
        let now = epoch.elapsed().as_nanos() as u64;
        let reply = coord.borrow_mut().accept(now, &report);
        match reply {
            Ok(reply) => w.msg(&reply).await?,
            Err(e) => return Err(ProtocolError::Invalid(e).into()),
        }
    }
}

/// `pfsqos coordinator`'s configuration file (TOML, every field validated, unknown refused):
///
/// ```toml
/// listen = "0.0.0.0:9190"
/// key_file = "/etc/pfsqos/cluster.key"
/// server_key_file = "/etc/pfsqos/server.key"   # optional: agents must prove it
/// controller = "gift"               # any controller of pfsqos_core::control::spec
/// period_ms = 1000
/// brw_size_bytes = 4194304
/// agents = ["oss1", "oss2"]         # allow-list; the order numbers the OSSs' domains
/// report_fresh_ms = 3000            # older reports leave their OSS out of a round
/// metrics_listen = "0.0.0.0:9191"   # optional Prometheus endpoint
/// job_id_layout = "%e.%u"           # where user and group limits find uid and gid
/// [[limits]]                        # file-system-wide limits, bytes/s (job, user or group)
/// user = 500
/// bytes_per_s = 1073741824
/// ```
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatorFile {
    pub listen: SocketAddr,
    #[serde(default = "crate::config::default_key_file")]
    pub key_file: std::path::PathBuf,
    pub server_key_file: Option<std::path::PathBuf>,
    pub controller: String,
    // Integers read signed, so `-1` or `"eight"` gets the field's range, not serde's type.
    #[serde(default = "default_period_ms")]
    pub period_ms: i64,
    #[serde(default = "default_brw")]
    pub brw_size_bytes: i64,
    pub agents: Vec<String>,
    pub report_fresh_ms: Option<i64>,
    pub metrics_listen: Option<SocketAddr>,
    #[serde(default = "crate::config::default_layout")]
    pub job_id_layout: String,
    #[serde(default)]
    pub limits: Vec<crate::config::LimitEntry>,
}

fn default_period_ms() -> i64 {
    crate::config::default_period_ms() as i64
}
fn default_brw() -> i64 {
    crate::config::default_brw() as i64
}

/// A validated coordinator configuration.
#[derive(Clone, Debug)]
pub struct CoordinatorConfig {
    pub listen: SocketAddr,
    pub key_file: std::path::PathBuf,
    /// The servers' own key: with it, agents (role `Lctl`, a server role:
    /// [`Role::is_server_role`]) must prove it, so a client node, which holds only the
    /// cluster key, cannot report an OSS's observation and steer every OSS's rates.
    pub server_key_file: Option<std::path::PathBuf>,
    pub policy: pfsqos_core::control::spec::PolicyChoice,
    pub period_ms: u64,
    pub brw_size_bytes: u64,
    pub agents: Vec<String>,
    pub report_fresh_ms: u64,
    pub metrics_listen: Option<SocketAddr>,
    pub job_id_layout: crate::config::JobIdLayout,
    /// File-system-wide administrator limits (bytes/s).
    pub limits: Vec<(crate::config::LimitTarget, u64)>,
}

impl CoordinatorConfig {
    pub fn parse(text: &str) -> anyhow::Result<CoordinatorConfig> {
        use anyhow::bail;
        if text.len() as u64 > crate::config::CONFIG_LEN_BYTES_MAX {
            bail!(
                "configuration larger than {} bytes",
                crate::config::CONFIG_LEN_BYTES_MAX
            );
        }
        crate::config::parse_file(text, CoordinatorConfig::validate)
    }

    fn validate(f: CoordinatorFile) -> anyhow::Result<CoordinatorConfig> {
        use crate::config::in_range;
        use anyhow::bail;
        let policy = pfsqos_core::control::spec::PolicyChoice::parse(&f.controller)
            .map_err(|e| anyhow::anyhow!(e))?;
        let period_ms = in_range(
            "period_ms",
            f.period_ms,
            1,
            pfsqos_core::control::spec::PERIOD_MS_MAX,
        )?;
        use pfsqos_core::lustre::{BRW_SIZE_BYTES_MAX, BRW_SIZE_BYTES_MIN};
        let brw_size_bytes = in_range(
            "brw_size_bytes",
            f.brw_size_bytes,
            BRW_SIZE_BYTES_MIN,
            BRW_SIZE_BYTES_MAX,
        )?;
        let report_fresh_ms = match f.report_fresh_ms {
            Some(r) => in_range("report_fresh_ms", r, 1, crate::config::SAFE_HOLD_MS_MAX)?,
            None => 3 * period_ms,
        };
        if !(1..=crate::config::SAFE_HOLD_MS_MAX).contains(&report_fresh_ms) {
            bail!(
                "report_fresh_ms (3 periods unless given) must be 1..={}",
                crate::config::SAFE_HOLD_MS_MAX
            );
        }
        let job_id_layout =
            crate::config::JobIdLayout::parse(&f.job_id_layout).map_err(|e| anyhow::anyhow!(e))?;
        let limits = crate::config::validate_limits(&f.limits, &job_id_layout)?;
        // Names and count are checked by the coordinator itself.
        let config = CoordinatorConfig {
            metrics_listen: f.metrics_listen,
            job_id_layout,
            limits,
            listen: f.listen,
            key_file: f.key_file,
            server_key_file: f.server_key_file,
            policy,
            period_ms,
            brw_size_bytes,
            agents: f.agents,
            report_fresh_ms,
        };
        config.coordinator().map_err(|e| anyhow::anyhow!(e))?;
        Ok(config)
    }

    pub fn load(path: &std::path::Path) -> anyhow::Result<CoordinatorConfig> {
        use anyhow::Context;
        let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
        if meta.len() > crate::config::CONFIG_LEN_BYTES_MAX {
            anyhow::bail!("{} is too large", path.display());
        }
        let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
        CoordinatorConfig::parse(&text).with_context(|| format!("{}", path.display()))
    }

    /// The key agents must prove: the servers' own where configured (a client's cluster
    /// key then cannot speak for an OSS), else the cluster key. Reads the files.
    pub fn agent_key(&self) -> anyhow::Result<Vec<u8>> {
        let key = pfsqos_wire::key::read_key_file(&self.key_file)?;
        match &self.server_key_file {
            Some(path) => pfsqos_wire::key::read_server_key_file(path, &key),
            None => Ok(key),
        }
    }

    /// The coordinator this configuration describes (its controller freshly set up).
    pub fn coordinator(&self) -> Result<Coordinator, String> {
        let controller = self
            .policy
            .controller_with(self.period_ms, self.brw_size_bytes, 0);
        Coordinator::with_limits(
            controller,
            self.agents.clone(),
            self.period_ms * 1_000_000,
            self.report_fresh_ms * 1_000_000,
            self.limits.clone(),
            self.job_id_layout,
            self.brw_size_bytes,
        )
    }
}

/// Runs the coordinator until SIGTERM/SIGINT. Returns the exit code.
pub fn run_coordinator(config: CoordinatorConfig) -> anyhow::Result<i32> {
    use anyhow::Context;
    crate::signal::install().context("installing signal handlers")?;
    let key = config.agent_key()?;
    let coord = config.coordinator().map_err(|e| anyhow::anyhow!(e))?;
    let published = Arc::new(Mutex::new(CoordStats::default()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let _metrics = match config.metrics_listen {
            Some(addr) => {
                let sample = published.clone();
                let render: pfsqos_metrics::Render = Arc::new(move || {
                    let s = sample.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    crate::metrics::render_coordinator(s)
                });
                let server = pfsqos_metrics::MetricsServer::start(addr, render)
                    .await
                    .with_context(|| format!("metrics on {addr}"))?;
                info!(addr = %server.local_addr(), "coordinator metrics listening");
                Some(server)
            }
            None => None,
        };
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        info!(addr = %listener.local_addr()?, controller = %config.policy.spec(), agents = config.agents.len(), "coordinator listening");
        let stop = async {
            while !crate::signal::stop_requested() {
                tokio::time::sleep(crate::run::STOP_POLL).await;
            }
        };
        serve_published(listener, key, coord, Instant::now(), stop, published).await;
        info!("coordinator stopped; agents keep their rules for safe_hold_ms, then remove them");
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coordinator_file_is_validated() {
        let ok =
            "listen = \"127.0.0.1:9190\"\ncontroller = \"gift\"\nagents = [\"oss1\", \"oss2\"]\n";
        let c = CoordinatorConfig::parse(ok).unwrap();
        assert_eq!((c.period_ms, c.report_fresh_ms), (1000, 3000));
        assert_eq!(
            c.coordinator().unwrap().domain_of("oss2").map(|d| d.0),
            Some(1)
        );
        for bad in [
            format!("{ok}extra = 1\n"),
            ok.replace("gift", "nope"),
            ok.replace("\"oss2\"", "\"oss1\""),
            ok.replace("\"oss2\"", "\"a;b\""),
            ok.replace("[\"oss1\", \"oss2\"]", "[]"),
            format!("{ok}period_ms = 0\n"),
            format!("{ok}report_fresh_ms = 0\n"),
            format!("{ok}job_id_layout = \"%e\"\n[[limits]]\nuser = 5\nbytes_per_s = 4096\n"),
            format!("{ok}[[limits]]\njob = \"a\"\nbytes_per_s = 1\n"),
            format!("{ok}[[limits]]\njob = \"a\"\nuser = 5\nbytes_per_s = 4096\n"),
            format!("{ok}metrics_listen = \"nowhere\"\n"),
        ] {
            assert!(CoordinatorConfig::parse(&bad).is_err(), "{bad}");
        }
        let limited = CoordinatorConfig::parse(&format!(
            "{ok}metrics_listen = \"127.0.0.1:0\"\n[[limits]]\nuser = 500\nbytes_per_s = 1048576\n"
        ))
        .unwrap();
        assert_eq!(
            limited.limits,
            vec![(crate::config::LimitTarget::User(500), 1 << 20)]
        );
        assert!(limited.metrics_listen.is_some());
    }

    /// A wrongly typed or out-of-range integer of the coordinator's file names the field and
    /// its range, never serde's Rust type (`expected u64`) nor u32's 0 to 4294967295.
    #[test]
    fn wrongly_typed_coordinator_integers_name_the_field_and_its_range() {
        let ok =
            "listen = \"127.0.0.1:9190\"\ncontroller = \"gift\"\nagents = [\"oss1\", \"oss2\"]\n";
        for (extra, field, range) in [
            ("period_ms = \"1s\"\n", "field `period_ms`", "1..="),
            ("period_ms = -1\n", "period_ms = -1", "1..="),
            (
                "report_fresh_ms = 1.5\n",
                "field `report_fresh_ms`",
                "1..=3600000",
            ),
            (
                "brw_size_bytes = \"4M\"\n",
                "field `brw_size_bytes`",
                "4096..=67108864",
            ),
            (
                "[[limits]]\nuser = \"alice\"\nbytes_per_s = 4096\n",
                "field `limits[0].user`",
                "0..=4294967295",
            ),
            (
                "[[limits]]\njob = \"a\"\nbytes_per_s = -4096\n",
                "bytes_per_s = -4096",
                "4096..=",
            ),
        ] {
            let e = CoordinatorConfig::parse(&format!("{ok}{extra}")).unwrap_err();
            let m = format!("{e:#}");
            assert!(m.contains(field), "{extra}: {m}");
            assert!(m.contains(&format!("must be {range}")), "{extra}: {m}");
            assert!(
                !m.contains("expected u") && !m.contains("expected i"),
                "{extra}: {m}"
            );
        }
    }

    #[test]
    fn the_hold_releases_once_after_the_silence_and_rearms_on_a_reply() {
        let mut h = SafeHold::new(1000, 0);
        assert!(!h.must_release(1000));
        assert!(h.must_release(1001));
        assert!(!h.must_release(5000), "once per silence");
        assert!(h.released());
        h.reply(6000);
        assert!(!h.released());
        assert!(!h.must_release(7000));
        assert!(h.must_release(7001));
    }
}
