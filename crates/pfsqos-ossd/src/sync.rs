//! DSFQ synchronization between the ossds of a cluster (vPFS).
//!
//! Every CPU partition of every ossd is one DSFQ instance with a cluster-wide number: CPT `k`
//! of an ossd is instance `instance_base + k`, and `pfsqos up` gives each ossd the sum of the
//! CPT counts of the ossds before it in cluster.toml, so no two instances share a number.
//!
//! ```text
//!  CPT k (I/O threads)   pump task (every SYNC_TICK)          peer task (one per peer)
//!  policy reports  --->  take_sync_out, number (seq)   --->  outbox (bounded) --> Sync batch
//!                        deliver to the other local CPTs      connect/backoff      over Role::Oss
//!  peer ossd: read_requests -> validate (wire) -> seq check -> deliver_sync on every CPT
//! ```
//!
//! * **Never blocking I/O.** I/O threads never touch a socket: the pump takes each
//!   partition's reports under its lock (as short as an arrival) and hands them to the peer
//!   tasks' outboxes. An outbox holds at most [`PEER_OUTBOX_LEN_MAX`] messages; beyond it the
//!   oldest are dropped and counted, as `CptService::take_sync_out` does (a lost service
//!   report only makes the receivers charge a flow less).
//! * **Reconnecting.** A peer task connects when it has something to send (an ossd that runs
//!   no DSFQ opens no connection), retries with a backoff from [`RECONNECT_BACKOFF_MIN`]
//!   doubling to [`RECONNECT_BACKOFF_MAX`], and drops (counts) the batch that was in flight
//!   when a connection failed (resending it could count the same service twice) and, at each
//!   failed attempt, what waited in the outbox (a report delivered late would charge a
//!   restarted peer's flows for service long past).
//! * **Receiving.** Only an authenticated [`Role::Oss`] connection may send batches (others
//!   get `EPERM`), at most `max(2 x peers, PEER_CONNECTIONS_MIN)` of them at once (a
//!   restarted peer's old connection may linger until TCP notices). The wire crate checks
//!   every field (`validate_sync_batch`); a malformed batch closes the connection and is
//!   counted. Here: a message naming one of this ossd's own instances, or repeating a
//!   sequence number of its sender's epoch, is refused and counted; a gap in the numbers is
//!   counted as lost. The rest reaches every CPT's schedulers (`CptService::deliver_sync`,
//!   which refuses and counts unknown flows).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pfsqos_core::sched::sfq::SYNC_INSTANCES_MAX;
use pfsqos_core::sched::SyncCounters;
use pfsqos_node::oss::SyncMessage;
use pfsqos_wire::client::OssClient;
use pfsqos_wire::conn::HANDSHAKE_TIMEOUT;
use pfsqos_wire::protocol::{Role, SyncBatch, SyncItem, WireSyncBatch, SYNC_BATCH_LEN_MAX};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::ossd::{lock, Shared};

/// Most peers an ossd synchronizes with.
pub const PEERS_MAX: usize = 1024;
/// Longest peer address text (`host:port`).
pub const PEER_ADDR_LEN_MAX: usize = 256;
/// How often the pump takes the partitions' reports. DSFQ's delay term is only as fresh as
/// this; 2 ms is a few RPCs of one device, and an idle pump costs one lock per CPT per tick.
pub const SYNC_TICK: Duration = Duration::from_millis(2);
/// Most messages waiting for one peer (about 100 bytes each: 6.5 MB per peer at the bound).
pub const PEER_OUTBOX_LEN_MAX: usize = 65_536;
/// First wait after a failed connection attempt; doubled up to [`RECONNECT_BACKOFF_MAX`].
pub const RECONNECT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// Longest wait between connection attempts: a restarted peer is reached within it.
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_millis(200);
/// How long one batch may take to be sent and answered before the connection is given up.
pub const SYNC_SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// Fewest inbound peer connections allowed at once, whatever the peer count.
pub const PEER_CONNECTIONS_MIN: usize = 8;
/// Most distinct sender instances whose sequence numbers are tracked (every valid number).
const SENDERS_TRACKED_MAX: usize = SYNC_INSTANCES_MAX as usize;

/// Where this ossd stands among the synchronizing ossds of its cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncConfig {
    /// Cluster-wide number of this ossd's CPT 0; CPT `k` is `instance_base + k`.
    pub instance_base: u32,
    /// The other ossds (`host:port`), this one excluded.
    pub peers: Vec<String>,
}

impl SyncConfig {
    pub(crate) fn validate(&self, cpts: usize) -> anyhow::Result<()> {
        if self.peers.len() > PEERS_MAX {
            anyhow::bail!("at most {PEERS_MAX} peers");
        }
        for p in &self.peers {
            validate_peer_addr(p).map_err(|e| anyhow::anyhow!("peer {p:?}: {e}"))?;
        }
        if u64::from(self.instance_base) + cpts as u64 > u64::from(SYNC_INSTANCES_MAX) {
            anyhow::bail!(
                "sync instances {}..{} beyond {SYNC_INSTANCES_MAX}",
                self.instance_base,
                u64::from(self.instance_base) + cpts as u64
            );
        }
        Ok(())
    }
}

/// A peer address: `host:port` (a bracketed IPv6 host allowed), port 1..=65535.
pub fn validate_peer_addr(text: &str) -> Result<(), String> {
    if text.is_empty() || text.len() > PEER_ADDR_LEN_MAX {
        return Err(format!("1..={PEER_ADDR_LEN_MAX} bytes"));
    }
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| "not HOST:PORT".to_string())?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(format!("port {port:?} is not 1..=65535")),
    }
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("host {host:?}"));
    }
    Ok(())
}

/// What the synchronization channel of an ossd did since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// The partitions' own counts (`CptService::sync_counters`), summed: messages their
    /// policies produced, messages delivered to them and refused by them (unknown flow, bad
    /// sender) and dropped from their outboxes.
    pub cpts: SyncCounters,
    /// Batches and messages a peer acknowledged.
    pub batches_out: u64,
    pub messages_out: u64,
    /// Messages dropped on the way out: a full peer outbox, or a batch whose connection
    /// failed.
    pub dropped_out: u64,
    /// Connections made to peers, and attempts that failed.
    pub connects: u64,
    pub connect_failures: u64,
    /// Batches received and handed to the partitions.
    pub batches_in: u64,
    /// Received batches refused as a whole: malformed (closing the connection) or from a
    /// connection that may not sync.
    pub batches_refused_in: u64,
    /// Received messages refused here: naming one of this ossd's instances, or repeating a
    /// sequence number.
    pub messages_refused_in: u64,
    /// Messages a sender numbered but that never arrived (gaps in its sequence numbers).
    pub messages_lost_in: u64,
    /// Peer connections refused because `max(2 x peers, PEER_CONNECTIONS_MIN)` were open.
    pub peer_connections_refused: u64,
    /// Failed handshakes of any role (a wrong key among them).
    pub handshakes_failed: u64,
}

/// `ost.OSS.ost_io.nrs_dsfq_sync_stats`: the instance range and peer count, then one
/// `name: value` line per counter (YAML, like Lustre's `stats` files).
pub(crate) fn render_stats(config: &SyncConfig, cpts: usize, s: &SyncStats) -> String {
    let base = u64::from(config.instance_base);
    let mut out = format!(
        "instances: {base}-{}\npeers: {}\n",
        base + cpts as u64 - 1,
        config.peers.len()
    );
    for (name, value) in stats_fields(s) {
        out.push_str(&format!("{name}: {value}\n"));
    }
    out
}

/// The counters by name, for the parameter and the metrics endpoint alike.
pub(crate) fn stats_fields(s: &SyncStats) -> [(&'static str, u64); 16] {
    let c = &s.cpts;
    [
        ("reports_out", c.broadcasts_out),
        ("report_bytes_out", c.bytes_out),
        ("reports_dropped_out", c.dropped_out + s.dropped_out),
        ("batches_out", s.batches_out),
        ("messages_out", s.messages_out),
        ("connects", s.connects),
        ("connect_failures", s.connect_failures),
        ("batches_in", s.batches_in),
        ("batches_refused_in", s.batches_refused_in),
        ("messages_refused_in", s.messages_refused_in),
        ("messages_lost_in", s.messages_lost_in),
        ("reports_in", c.messages_in),
        ("report_bytes_in", c.bytes_in),
        ("reports_rejected_in", c.rejected_in),
        ("peer_connections_refused", s.peer_connections_refused),
        ("handshakes_failed", s.handshakes_failed),
    ]
}

#[derive(Default)]
pub(crate) struct SyncCountersAtomic {
    batches_out: AtomicU64,
    messages_out: AtomicU64,
    dropped_out: AtomicU64,
    connects: AtomicU64,
    connect_failures: AtomicU64,
    batches_in: AtomicU64,
    pub(crate) batches_refused_in: AtomicU64,
    messages_refused_in: AtomicU64,
    messages_lost_in: AtomicU64,
    pub(crate) peer_connections_refused: AtomicU64,
    pub(crate) handshakes_failed: AtomicU64,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// One peer: its outbox and the task that drains it.
struct Peer {
    addr: String,
    outbox: Mutex<VecDeque<SyncItem>>,
    ready: Notify,
}

/// The synchronization state an ossd shares between its pump, peer tasks and connections.
pub(crate) struct SyncState {
    pub(crate) config: SyncConfig,
    /// Chosen at start: a restarted ossd numbers its messages from 0 in a new epoch.
    epoch: u64,
    pub(crate) counters: SyncCountersAtomic,
    peers: Vec<Arc<Peer>>,
    /// Per sender instance: its epoch and the sequence number expected next.
    seen: Mutex<HashMap<u32, (u64, u64)>>,
    /// A sender restarted (or was heard from for the first time): it lost what this ossd's
    /// partitions announced, so the pump sends their presence again at its next tick.
    reannounce: AtomicBool,
    /// Inbound peer connections allowed at once.
    pub(crate) peer_connections: Arc<tokio::sync::Semaphore>,
}

impl SyncState {
    pub(crate) fn new(config: SyncConfig) -> std::io::Result<SyncState> {
        let nonce = pfsqos_wire::protocol::nonce()?;
        let epoch = u64::from_le_bytes(nonce[..8].try_into().expect("8 bytes of 32"));
        let peers = config
            .peers
            .iter()
            .map(|addr| {
                Arc::new(Peer {
                    addr: addr.clone(),
                    outbox: Mutex::new(VecDeque::new()),
                    ready: Notify::new(),
                })
            })
            .collect();
        let inbound = (2 * config.peers.len()).max(PEER_CONNECTIONS_MIN);
        Ok(SyncState {
            config,
            epoch,
            counters: SyncCountersAtomic::default(),
            peers,
            seen: Mutex::new(HashMap::new()),
            reannounce: AtomicBool::new(false),
            peer_connections: Arc::new(tokio::sync::Semaphore::new(inbound)),
        })
    }

    fn own_instance(&self, instance: u32, cpts: usize) -> bool {
        let base = u64::from(self.config.instance_base);
        (base..base + cpts as u64).contains(&u64::from(instance))
    }

    pub(crate) fn stats(&self, cpts: SyncCounters) -> SyncStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SyncStats {
            cpts,
            batches_out: get(&c.batches_out),
            messages_out: get(&c.messages_out),
            dropped_out: get(&c.dropped_out),
            connects: get(&c.connects),
            connect_failures: get(&c.connect_failures),
            batches_in: get(&c.batches_in),
            batches_refused_in: get(&c.batches_refused_in),
            messages_refused_in: get(&c.messages_refused_in),
            messages_lost_in: get(&c.messages_lost_in),
            peer_connections_refused: get(&c.peer_connections_refused),
            handshakes_failed: get(&c.handshakes_failed),
        }
    }
}

/// Starts the pump and one task per peer; none when there is nothing to exchange (one CPT
/// and no peer). The caller aborts them at shutdown.
pub(crate) fn spawn(shared: &Arc<Shared>) -> Vec<tokio::task::JoinHandle<()>> {
    let sync = &shared.sync;
    if sync.peers.is_empty() && shared.cpt_count() == 1 {
        return Vec::new();
    }
    info!(
        instance_base = sync.config.instance_base,
        peers = sync.peers.len(),
        "DSFQ synchronization running"
    );
    let mut tasks = vec![tokio::spawn(pump(shared.clone()))];
    for peer in &sync.peers {
        tasks.push(tokio::spawn(peer_task(shared.clone(), peer.clone())));
    }
    tasks
}

/// Takes every partition's reports each tick, numbers them, delivers them to the other
/// local partitions and queues them for every peer.
async fn pump(shared: Arc<Shared>) {
    let cpts = shared.cpt_count();
    let mut seq_next = vec![0u64; cpts];
    let mut tick = tokio::time::interval(SYNC_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut items: Vec<SyncItem> = Vec::new();
    loop {
        tick.tick().await;
        items.clear();
        let reannounce = shared.sync.reannounce.swap(false, Ordering::Relaxed);
        for (k, seq) in seq_next.iter_mut().enumerate() {
            let out = {
                let mut st = lock(shared.cpt_state(k));
                // Presence first: a flow that leaves in the same tick is withdrawn after it.
                let mut out = if reannounce {
                    st.svc.presence_messages()
                } else {
                    Vec::new()
                };
                out.extend(st.svc.take_sync_out());
                out
            };
            for m in out {
                items.push(SyncItem {
                    from_instance: m.from_instance,
                    seq: *seq,
                    report: m.report,
                });
                *seq += 1;
            }
        }
        if items.is_empty() {
            continue;
        }
        if cpts > 1 {
            // The partitions of one ossd share memory: no wire, no sequence checks.
            let now = shared.now_ns();
            for k in 0..cpts {
                {
                    let mut st = lock(shared.cpt_state(k));
                    let own = st.svc.sync_instance();
                    for item in items.iter().filter(|i| i.from_instance != own) {
                        st.svc.deliver_sync(
                            now,
                            &SyncMessage {
                                from_instance: item.from_instance,
                                report: item.report,
                            },
                        );
                    }
                }
                shared.wake_cpt(k);
            }
        }
        for peer in &shared.sync.peers {
            {
                let mut outbox = lock(&peer.outbox);
                outbox.extend(items.iter().copied());
                if outbox.len() > PEER_OUTBOX_LEN_MAX {
                    let excess = outbox.len() - PEER_OUTBOX_LEN_MAX;
                    outbox.drain(..excess);
                    add(&shared.sync.counters.dropped_out, excess as u64);
                }
                assert!(outbox.len() <= PEER_OUTBOX_LEN_MAX);
            }
            peer.ready.notify_one();
        }
    }
}

async fn connect(shared: &Shared, addr: &str) -> anyhow::Result<OssClient> {
    let resolved = tokio::time::timeout(HANDSHAKE_TIMEOUT, tokio::net::lookup_host(addr))
        .await??
        .next()
        .ok_or_else(|| anyhow::anyhow!("{addr} resolves to no address"))?;
    let client = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        OssClient::connect(resolved, shared.peer_key(), Role::Oss),
    )
    .await??;
    Ok(client)
}

/// Drains one peer's outbox in batches over one connection, reconnecting with backoff.
async fn peer_task(shared: Arc<Shared>, peer: Arc<Peer>) {
    let counters = &shared.sync.counters;
    let mut client: Option<OssClient> = None;
    let mut backoff = RECONNECT_BACKOFF_MIN;
    // Logged once per outage, not per attempt.
    let mut down_logged = false;
    let mut batch: Vec<SyncItem> = Vec::with_capacity(SYNC_BATCH_LEN_MAX);
    loop {
        if lock(&peer.outbox).is_empty() {
            peer.ready.notified().await;
            continue;
        }
        let c = match client.as_mut() {
            Some(c) => c,
            None => match connect(&shared, &peer.addr).await {
                Ok(c) => {
                    add(&counters.connects, 1);
                    backoff = RECONNECT_BACKOFF_MIN;
                    if down_logged {
                        info!(peer = %peer.addr, "sync peer reachable again");
                    }
                    down_logged = false;
                    client.insert(c)
                }
                Err(e) => {
                    add(&counters.connect_failures, 1);
                    // What waited for an unreachable peer is dropped rather than delivered
                    // late: a restarted peer would charge its flows for service long past.
                    // So a report is at most one backoff (200 ms) old when it arrives.
                    let stale = lock(&peer.outbox).drain(..).count();
                    add(&counters.dropped_out, stale as u64);
                    if !down_logged {
                        warn!(peer = %peer.addr, error = %e, "sync peer unreachable; retrying");
                        down_logged = true;
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(RECONNECT_BACKOFF_MAX);
                    continue;
                }
            },
        };
        batch.clear();
        {
            let mut outbox = lock(&peer.outbox);
            let n = outbox.len().min(SYNC_BATCH_LEN_MAX);
            batch.extend(outbox.drain(..n));
        }
        let n = batch.len() as u64;
        let wire = WireSyncBatch::from_messages(shared.sync.epoch, &batch);
        match tokio::time::timeout(SYNC_SEND_TIMEOUT, c.send_sync_batch(wire)).await {
            Ok(Ok(())) => {
                add(&counters.batches_out, 1);
                add(&counters.messages_out, n);
            }
            Ok(Err(e)) => {
                debug!(peer = %peer.addr, error = %e, "sync batch lost; reconnecting");
                add(&counters.dropped_out, n);
                client = None;
                // The connection broke: the peer may have restarted and lost what this ossd
                // announced (a presence in this very batch, say). Announce again on a fresh
                // connection; if the peer is down, its connect fails, the outbox is dropped
                // and this does not repeat until the peer speaks again.
                shared.sync.reannounce.store(true, Ordering::Relaxed);
            }
            Err(_) => {
                debug!(peer = %peer.addr, "sync batch timed out; reconnecting");
                add(&counters.dropped_out, n);
                client = None;
                shared.sync.reannounce.store(true, Ordering::Relaxed);
            }
        }
    }
}

impl Shared {
    /// A peer's validated batch: sequence checks, then every CPT's schedulers.
    pub(crate) fn deliver_sync_batch(&self, batch: &SyncBatch) {
        let sync = &self.sync;
        let cpts = self.cpt_count();
        let mut accepted: Vec<SyncMessage> = Vec::with_capacity(batch.messages.len());
        let (mut refused, mut lost) = (0u64, 0u64);
        {
            let mut seen = lock(&sync.seen);
            for item in &batch.messages {
                if sync.own_instance(item.from_instance, cpts) {
                    refused += 1;
                    continue;
                }
                if !seen.contains_key(&item.from_instance) && seen.len() >= SENDERS_TRACKED_MAX {
                    // Unreachable while instance numbers are checked on decode; refused
                    // rather than tracked without bound.
                    refused += 1;
                    continue;
                }
                let entry = seen.entry(item.from_instance).or_insert_with(|| {
                    // First word from this sender: it may have run before and lost what
                    // this ossd announced (this ossd restarted too, or missed its restart).
                    sync.reannounce.store(true, Ordering::Relaxed);
                    (batch.sender_epoch, 0)
                });
                if entry.0 != batch.sender_epoch {
                    // The sender restarted: it numbers from 0 again, and lost every
                    // presence this ossd announced.
                    *entry = (batch.sender_epoch, 0);
                    sync.reannounce.store(true, Ordering::Relaxed);
                }
                if item.seq < entry.1 {
                    refused += 1;
                    continue;
                }
                lost += item.seq - entry.1;
                entry.1 = item.seq.saturating_add(1);
                accepted.push(SyncMessage {
                    from_instance: item.from_instance,
                    report: item.report,
                });
            }
        }
        add(&sync.counters.batches_in, 1);
        add(&sync.counters.messages_refused_in, refused);
        add(&sync.counters.messages_lost_in, lost);
        if accepted.is_empty() {
            return;
        }
        let now = self.now_ns();
        for k in 0..cpts {
            {
                let mut st = lock(self.cpt_state(k));
                for m in &accepted {
                    st.svc.deliver_sync(now, m);
                }
            }
            // A peer's report can change what a policy holds back.
            self.wake_cpt(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_addresses_are_checked() {
        for ok in ["oss1:7988", "127.0.0.1:1", "[::1]:7988", "a.b-c:65535"] {
            assert_eq!(validate_peer_addr(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "oss1",
            "oss1:0",
            "oss1:65536",
            ":7988",
            "a b:1",
            "oss1:x",
        ] {
            assert!(validate_peer_addr(bad).is_err(), "{bad}");
        }
        assert!(validate_peer_addr(&format!("{}:1", "h".repeat(PEER_ADDR_LEN_MAX))).is_err());
    }

    #[test]
    fn instance_ranges_stay_below_the_bound() {
        let mut c = SyncConfig {
            instance_base: SYNC_INSTANCES_MAX - 2,
            peers: vec!["oss2:7988".into()],
        };
        assert!(c.validate(2).is_ok());
        assert!(c.validate(3).is_err());
        c.instance_base = 0;
        c.peers = vec!["x:1".into(); PEERS_MAX + 1];
        assert!(c.validate(1).is_err());
    }
}
