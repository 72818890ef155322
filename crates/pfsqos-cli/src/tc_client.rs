//! `pfsqos tc-client`: the PI controller's actuator on a client node that is not a pfsqos
//! mount (the PI paper's NFS clients, §3.3): it receives the outgoing bandwidth limit the
//! ossds' controllers set for this node and applies it with `tc` (a TBF root qdisc, through
//! `pfsqos_linux::TcActuator`) on one network interface.
//!
//! How the limit arrives: the daemon connects to every ossd given with the cluster key, role
//! `Client`, as a mount does, and every `--poll-ms` sends each a limit query
//! (`pfsqos_wire::protocol::WireRequest::LimitQuery`) naming the node's NID (the address it
//! reaches that ossd from, as a mount derives its own). The query binds the connection to the
//! node, as a mount's first I/O request binds its own, so the ossd's controller sees the node;
//! the ossd answers it on the connection's own task from the limit its controller last set,
//! never through its NRS queue, so a new limit arrives within a poll interval however deep
//! the queue of I/O behind it.
//!
//! As a mount does, the node's limit is the minimum of the limits the ossds state, and a
//! statement lapses after `pfsqos_mount::LIMIT_LEASE` without a reply from its ossd.
//!
//! The interface keeps the qdisc it had when the daemon started whenever no ossd limits the
//! node, and gets it back when the daemon exits on SIGINT or SIGTERM: the daemon starts only
//! on an interface whose root qdisc is the kernel's default (handle `0:`), which deleting the
//! root qdisc restores exactly; `--force` takes over any other root qdisc and, at exit,
//! leaves the kernel's default in its place (logged). A daemon killed with SIGKILL leaves its
//! TBF: start it again with `--force`, or `tc qdisc del dev IF root`.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use pfsqos_linux::{TcActuator, SYSFS_ROOT};
use pfsqos_wire::client::OssClient;
use pfsqos_wire::protocol::{Role, OST_COUNT_MAX};
use tokio::sync::mpsc;
use tracing::{info, warn};

/// Bounds of `--poll-ms` and `--period-ms`.
pub const POLL_MS_MIN: u64 = 10;
pub const POLL_MS_MAX: u64 = 60_000;

/// Longest wait for one connection or one poll's reply; then the connection is dropped and
/// made again.
const RPC_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest wait between two connection attempts to an ossd that is down.
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// Arguments of `pfsqos tc-client`.
#[derive(clap::Args, Debug)]
pub struct TcClientArgs {
    /// An ossd whose controller limits this node (HOST:PORT); repeat for every ossd.
    #[arg(long = "oss", required = true)]
    pub osses: Vec<String>,
    /// The cluster key file.
    #[arg(long, default_value = pfsqos_wire::key::DEFAULT_KEY_FILE)]
    pub key_file: PathBuf,
    /// The network interface the node's storage traffic leaves by (TBF shapes egress only).
    #[arg(long)]
    pub dev: String,
    /// The controller's sampling time T_s: the TBF burst is rate x T_s (a rate change refills
    /// the bucket, so each change lets at most one period's budget through on top).
    #[arg(long, default_value_t = 300)]
    pub period_ms: u64,
    /// How often each ossd is asked for the node's limit.
    #[arg(long, default_value_t = 100)]
    pub poll_ms: u64,
    /// TBF latency: the longest a packet waits in the qdisc before it is dropped.
    #[arg(long, default_value_t = 50)]
    pub latency_ms: u32,
    /// Take over an interface whose root qdisc is not the kernel's default; at exit the
    /// kernel's default is left in its place, not the qdisc found.
    #[arg(long)]
    pub force: bool,
}

/// One ossd's latest statement: `None` unlimited, and when it came.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Statement {
    pub limit_bytes_per_s: Option<u64>,
    pub at: Instant,
}

/// The node's limit: the minimum of the statements younger than `lease` (`None`: no ossd
/// limits the node).
pub fn effective_limit(
    stated: &BTreeMap<usize, Statement>,
    now: Instant,
    lease: Duration,
) -> Option<u64> {
    stated
        .values()
        .filter(|s| now.saturating_duration_since(s.at) < lease)
        .filter_map(|s| s.limit_bytes_per_s)
        .min()
}

fn check_args(args: &TcClientArgs) -> anyhow::Result<Vec<(String, SocketAddr)>> {
    for (name, v) in [("--poll-ms", args.poll_ms), ("--period-ms", args.period_ms)] {
        if !(POLL_MS_MIN..=POLL_MS_MAX).contains(&v) {
            bail!("{name} must be {POLL_MS_MIN}..={POLL_MS_MAX}");
        }
    }
    if args.latency_ms == 0 || u64::from(args.latency_ms) > POLL_MS_MAX {
        bail!("--latency-ms must be 1..={POLL_MS_MAX}");
    }
    if args.osses.len() > OST_COUNT_MAX as usize {
        bail!("at most {OST_COUNT_MAX} --oss");
    }
    let mut addrs = Vec::new();
    for text in &args.osses {
        let addr = text
            .to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next())
            .with_context(|| format!("ossd address `{}` does not resolve", text.escape_debug()))?;
        if addrs.iter().any(|(_, a)| *a == addr) {
            bail!("ossd `{}` given twice", text.escape_debug());
        }
        addrs.push((text.clone(), addr));
    }
    Ok(addrs)
}

/// Runs the daemon: exit code 2 for bad arguments, 1 for a failure, 0 after a clean stop.
pub fn run(args: TcClientArgs) -> ExitCode {
    crate::live::init_logging();
    let prepared = check_args(&args).and_then(|addrs| {
        let key = pfsqos_wire::key::read_key_file(&args.key_file)?;
        // Validates the name (data, never syntax: it reaches tc as one argv entry) and reads
        // its MTU, so an interface that does not exist fails here.
        let actuator = TcActuator::new(
            &args.dev,
            args.period_ms * 1_000_000,
            args.latency_ms,
            Path::new(SYSFS_ROOT),
        )?;
        Ok((addrs, key, actuator))
    });
    let (addrs, key, actuator) = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    match serve(&args, addrs, key, actuator) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// One ossd's poll loop: (re)connects, polls every `poll`, sends each stated limit.
async fn poll_ossd(
    index: usize,
    name: String,
    addr: SocketAddr,
    key: Vec<u8>,
    poll: Duration,
    tx: mpsc::Sender<(usize, Statement)>,
) {
    // The mount's own NID (the address it reaches the ossd from), so a node running both is
    // one client to the ossd.
    let nid = pfsqos_mount::local_nid(addr);
    let mut backoff = poll;
    let mut conn: Option<OssClient> = None;
    let mut ticker = tokio::time::interval(poll);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if conn.is_none() {
            match tokio::time::timeout(RPC_TIMEOUT, OssClient::connect(addr, &key, Role::Client))
                .await
            {
                Ok(Ok(c)) => {
                    info!(oss = %name.escape_debug(), %nid, "connected");
                    backoff = poll;
                    conn = Some(c);
                }
                Ok(Err(e)) => {
                    warn!(oss = %name.escape_debug(), error = %e, "cannot connect");
                }
                Err(_) => warn!(oss = %name.escape_debug(), "connecting timed out"),
            }
            if conn.is_none() {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RECONNECT_MAX);
                continue;
            }
        }
        let c = conn.as_mut().expect("connected above");
        match tokio::time::timeout(RPC_TIMEOUT, c.query_limit(nid)).await {
            Ok(Ok(limit)) => {
                // Unstated: the ossd's client table is full and it cannot limit this node.
                if let Some(limit_bytes_per_s) = limit.stated() {
                    let statement = Statement {
                        limit_bytes_per_s,
                        at: Instant::now(),
                    };
                    if tx.send((index, statement)).await.is_err() {
                        return;
                    }
                }
            }
            Ok(Err(e)) => {
                warn!(oss = %name.escape_debug(), error = %e, "poll failed; reconnecting");
                conn = None;
            }
            Err(_) => {
                warn!(oss = %name.escape_debug(), "poll timed out; reconnecting");
                conn = None;
            }
        }
    }
}

fn serve(
    args: &TcClientArgs,
    addrs: Vec<(String, SocketAddr)>,
    key: Vec<u8>,
    actuator: TcActuator,
) -> anyhow::Result<()> {
    let found = actuator.root_qdisc()?;
    if !found.is_kernel_default() && !args.force {
        bail!(
            "{} has a root qdisc `{} {}` that is not the kernel's default, which this daemon \
             could not restore at exit; remove it (tc qdisc del dev {} root) or pass --force",
            actuator.dev(),
            found.kind,
            found.handle,
            actuator.dev()
        );
    }
    info!(dev = %actuator.dev(), kind = %found.kind, handle = %found.handle, "root qdisc found");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let poll = Duration::from_millis(args.poll_ms);
    let result = rt.block_on(async {
        let (tx, mut rx) = mpsc::channel(64);
        for (index, (name, addr)) in addrs.iter().enumerate() {
            tokio::spawn(poll_ossd(
                index,
                name.clone(),
                *addr,
                key.clone(),
                poll,
                tx.clone(),
            ));
        }
        drop(tx);
        println!("tc-client on {} polling {} ossd(s)", actuator.dev(), addrs.len());
        let _ = std::io::Write::flush(&mut std::io::stdout());
        crate::live::notify_ready();
        let stop = crate::live::stop_signal();
        tokio::pin!(stop);
        let mut stated: BTreeMap<usize, Statement> = BTreeMap::new();
        let mut applied: Option<u64> = None;
        // The limit whose application last failed: logged once, retried every tick.
        let mut failed: Option<Option<u64>> = None;
        // Re-evaluates the lease even when no ossd answers.
        let mut ticker = tokio::time::interval(poll);
        loop {
            tokio::select! {
                sig = &mut stop => {
                    info!(signal = sig?, "shutting down");
                    return Ok(());
                }
                Some((index, statement)) = rx.recv() => {
                    stated.insert(index, statement);
                }
                _ = ticker.tick() => {}
            }
            let limit = effective_limit(&stated, Instant::now(), pfsqos_mount::LIMIT_LEASE);
            if limit != applied {
                // tc returns at once (netlink); a failure keeps the old state and is retried
                // at the next statement or tick.
                match actuator.apply(limit) {
                    Ok(()) => {
                        info!(dev = %actuator.dev(), limit_bytes_per_s = ?limit, "egress limit set");
                        applied = limit;
                        failed = None;
                    }
                    Err(e) => {
                        if failed != Some(limit) {
                            warn!(dev = %actuator.dev(), limit_bytes_per_s = ?limit, error = %e, "cannot set the limit; retrying");
                            failed = Some(limit);
                        }
                    }
                }
            }
        }
    });
    // Restore what was found, also after a failure above.
    let restored = actuator.apply(None);
    match (&restored, found.is_kernel_default()) {
        (Ok(()), true) => info!(dev = %actuator.dev(), kind = %found.kind, "root qdisc restored"),
        (Ok(()), false) => warn!(
            dev = %actuator.dev(),
            found = %found.kind,
            "the kernel's default root qdisc is back, not the one found (--force)"
        ),
        (Err(e), _) => warn!(dev = %actuator.dev(), error = %e, "cannot restore the root qdisc"),
    }
    result.and(restored.map_err(anyhow::Error::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nodes_limit_is_the_least_fresh_statement() {
        let t0 = Instant::now();
        let lease = Duration::from_secs(120);
        let s = |limit, at| Statement {
            limit_bytes_per_s: limit,
            at,
        };
        let mut stated = BTreeMap::new();
        assert_eq!(effective_limit(&stated, t0, lease), None);
        stated.insert(0, s(Some(8 << 20), t0));
        stated.insert(1, s(Some(4 << 20), t0));
        stated.insert(2, s(None, t0));
        assert_eq!(effective_limit(&stated, t0, lease), Some(4 << 20));
        // The strictest lapses: the next one holds.
        stated.insert(1, s(Some(4 << 20), t0));
        stated.insert(0, s(Some(8 << 20), t0 + lease));
        assert_eq!(effective_limit(&stated, t0 + lease, lease), Some(8 << 20));
        // Every statement unlimited or lapsed: no limit.
        assert_eq!(effective_limit(&stated, t0 + 3 * lease, lease), None);
    }

    fn args(osses: &[&str]) -> TcClientArgs {
        TcClientArgs {
            osses: osses.iter().map(|s| s.to_string()).collect(),
            key_file: "/k".into(),
            dev: "eth0".into(),
            period_ms: 300,
            poll_ms: 100,
            latency_ms: 50,
            force: false,
        }
    }

    #[test]
    fn arguments_are_bounded() {
        assert_eq!(check_args(&args(&["127.0.0.1:7988"])).unwrap().len(), 1);
        let e = check_args(&args(&["127.0.0.1:7988", "127.0.0.1:7988"])).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        let e = check_args(&args(&["no port"])).unwrap_err();
        assert!(e.to_string().contains("does not resolve"), "{e}");
        let mut a = args(&["127.0.0.1:7988"]);
        a.poll_ms = 0;
        assert!(check_args(&a)
            .unwrap_err()
            .to_string()
            .contains("--poll-ms"));
        let mut a = args(&["127.0.0.1:7988"]);
        a.latency_ms = 0;
        assert!(check_args(&a).is_err());
    }
}
