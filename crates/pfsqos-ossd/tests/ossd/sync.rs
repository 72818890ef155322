//! DSFQ synchronization between real ossds over loopback: two
//! in-process daemons exchange their schedulers' reports over the pfsqos protocol. Conditions
//! are polled with a deadline, never waited for with a fixed sleep; rates are compared as
//! ratios of what the daemons served, never against the wall clock.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{KEY, SERVER_KEY};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid, RpcTags};
use pfsqos_ossd::{Ossd, OssdConfig, SyncConfig, SyncStats};
use pfsqos_wire::client::{ClientError, Identity, OssClient};
use pfsqos_wire::protocol::{
    encode, Errno, Role, WireFlow, WireReportKind, WireRequest, WireSyncBatch, WireSyncMessage,
    SYNC_BATCH_LEN_MAX,
};

/// How long any polled condition may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// Free loopback addresses, so that each ossd can be told the other's before either starts.
fn free_addrs(n: usize) -> Vec<SocketAddr> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners.iter().map(|l| l.local_addr().unwrap()).collect()
}

fn config(
    addr: SocketAddr,
    ost: PathBuf,
    index: u32,
    peers: &[SocketAddr],
    tweak: &dyn Fn(&mut OssdConfig),
) -> OssdConfig {
    let mut cfg = OssdConfig::new(addr, vec![ost], KEY.to_vec(), SERVER_KEY.to_vec());
    cfg.threads = 8;
    cfg.sync = SyncConfig {
        instance_base: index,
        peers: peers
            .iter()
            .filter(|p| **p != addr)
            .map(|p| p.to_string())
            .collect(),
    };
    tweak(&mut cfg);
    cfg
}

async fn set_params(addr: SocketAddr, params: &[&str]) {
    set_params_with(addr, SERVER_KEY, params).await
}

/// `lctl set_param` proving `key`.
async fn set_params_with(addr: SocketAddr, key: &[u8], params: &[&str]) {
    let mut c = OssClient::connect(addr, key, Role::Lctl).await.unwrap();
    for p in params {
        let (name, value) = p.split_once('=').unwrap();
        c.set_param(name, value)
            .await
            .unwrap_or_else(|e| panic!("{p}: {e}"));
    }
}

/// DSFQ by job id, a report on every request (threshold 0), weights big:small = 4:1.
async fn start_dsfq(addr: SocketAddr, depth: u32) {
    start_dsfq_with(addr, SERVER_KEY, depth).await
}

/// [`start_dsfq`] by an `lctl` proving `key`.
async fn start_dsfq_with(addr: SocketAddr, key: &[u8], depth: u32) {
    let depth = format!("ost.OSS.ost_io.nrs_dsfq_depth={depth}");
    set_params_with(
        addr,
        key,
        &[
            "ost.OSS.ost_io.nrs_policies=dsfq jobid",
            "ost.OSS.ost_io.nrs_dsfq_threshold=0",
            &depth,
            "ost.OSS.ost_io.nrs_dsfq_weight=start big jobid={big} weight=4",
            "ost.OSS.ost_io.nrs_dsfq_weight=start small jobid={small} weight=1",
        ],
    )
    .await;
}

async fn poll(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < DEADLINE,
            "not within {DEADLINE:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn ident(job: &str) -> Identity {
    Identity {
        job: JobId::new(job).unwrap(),
        uid: 1000,
        gid: 1000,
        nid: Nid::ipv4(
            192,
            168,
            1,
            2,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        ),
        job_nodes: None,
    }
}

/// A job's I/O on one ossd: `conns` connections, each reading its own object again and again
/// (one request at a time) until `stop`; counts the bytes read and fails on any error.
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    bytes: Arc<AtomicU64>,
}

const RPC_BYTES: u64 = 64 << 10;

async fn load(addr: SocketAddr, job: &str, conns: usize, object_base: u64) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..conns {
        let mut c = OssClient::connect(addr, KEY, Role::Client).await.unwrap();
        let id = ident(job);
        let object = object_base + i as u64;
        c.write(&id, 0, object, 0, &vec![7; RPC_BYTES as usize], false)
            .await
            .unwrap();
        let (stop, bytes) = (stop.clone(), bytes.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let got = c.read(&id, 0, object, 0, RPC_BYTES).await.unwrap();
                assert_eq!(got.len() as u64, RPC_BYTES);
                bytes.fetch_add(RPC_BYTES, Ordering::Relaxed);
            }
        }));
    }
    Load { stop, tasks, bytes }
}

impl Load {
    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        self.bytes.load(Ordering::Relaxed)
    }
}

fn served(ossd: &Ossd, job: &str) -> u64 {
    ossd.dequeue_counts()
        .get(&JobId::new(job).unwrap())
        .copied()
        .unwrap_or(0)
}

/// Two ossds, each with its own OST paced to the same rate; job `big` (weight 4) reads on
/// both, job `small` (weight 1) on the second only (the vPFS paper's Fig. 5 shape). Over the
/// total bandwidth `2C`, 4:1 means big 1.6C (C on the first ossd, 0.6C on the second) and
/// small 0.4C: only the second ossd's scheduler can give it, and only if it learns big's
/// service on the first. Without synchronization the second ossd splits 4:1 on its own and
/// the total is 9:1. The ratio of RPCs served (all the same size) is checked within 5 %.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_ossds_keep_a_4_to_1_share_of_the_total_bandwidth() {
    let (ratio, stats, stat_out) = measure_share(true, true).await;
    assert!(
        (ratio / 4.0 - 1.0).abs() <= 0.05,
        "big:small = {ratio:.3}, not 4 within 5 % (sync {stats:?})"
    );
    assert!(stats.messages_out > 0 && stats.cpts.messages_in > 0);
    // `pfsqos stat` shows each job's share of both servers' bytes against its weight.
    eprintln!("{stat_out}");
    let line = |job: &str| {
        stat_out
            .lines()
            .find(|l| l.starts_with(&format!("- {job}: {{bytes: ")))
            .unwrap_or_else(|| panic!("no {job} share in {stat_out}"))
            .to_string()
    };
    assert!(stat_out.contains("\nshares:\n"), "{stat_out}");
    assert!(
        line("big").ends_with("weight: 4, weight_share: 0.800}"),
        "{stat_out}"
    );
    assert!(
        line("small").ends_with("weight: 1, weight_share: 0.200}"),
        "{stat_out}"
    );
}

/// The control: the same run without peers is far from 4:1 (9:1 in theory), so it is the
/// exchange that holds the share above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_exchange_the_total_share_is_not_kept() {
    let (ratio, stats, _) = measure_share(true, false).await;
    assert!(
        ratio > 6.0,
        "big:small = {ratio:.3} without synchronization"
    );
    assert_eq!(stats.messages_out + stats.cpts.messages_in, 0, "{stats:?}");
}

/// The same two jobs, both striped over both ossds: each ossd alone already shares 4:1, and
/// the exchange must not disturb that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jobs_striped_over_both_ossds_share_4_to_1() {
    let (ratio, stats, _) = measure_share(false, true).await;
    assert!(
        (ratio / 4.0 - 1.0).abs() <= 0.05,
        "big:small = {ratio:.3}, not 4 within 5 % (sync {stats:?})"
    );
}

/// Returns big:small served over both ossds in a window after a warm-up, and the first
/// ossd's sync statistics and one interval of `pfsqos stat` over both; `synchronize`: the
/// ossds are each other's peers.
async fn measure_share(small_on_second_only: bool, synchronize: bool) -> (f64, SyncStats, String) {
    const CEILING_BYTES_PER_S: u64 = 12 << 20;
    let tmp = tempfile::tempdir().unwrap();
    let addrs = free_addrs(2);
    let mut ossds = Vec::new();
    for (i, addr) in addrs.iter().enumerate() {
        let cfg = config(
            *addr,
            tmp.path().join(format!("ost{i}")),
            i as u32,
            if synchronize { &addrs } else { &[] },
            &|c| c.ceiling_bytes_per_s = Some(CEILING_BYTES_PER_S),
        );
        ossds.push(Ossd::start(cfg).await.unwrap());
    }
    for a in &addrs {
        // Depth 2: requests wait in the scheduler instead of all being at the device.
        start_dsfq(*a, 2).await;
    }
    let mut loads = Vec::new();
    for (i, a) in addrs.iter().enumerate() {
        loads.push(load(*a, "big", 6, 100).await);
        if i == 1 || !small_on_second_only {
            loads.push(load(*a, "small", 6, 200).await);
        }
    }
    let totals = |ossds: &[Ossd]| -> (u64, u64) {
        (
            ossds.iter().map(|o| served(o, "big")).sum(),
            ossds.iter().map(|o| served(o, "small")).sum(),
        )
    };
    // Warm-up: both ossds busy and exchanging reports.
    poll("both ossds serve and synchronize", || {
        let (big, small) = totals(&ossds);
        big > 100
            && small > 20
            && (!synchronize || ossds.iter().all(|o| o.sync_stats().cpts.messages_in > 50))
    })
    .await;
    let (big0, small0) = totals(&ossds);
    // The window: enough RPCs for a 5 % check (about 1,000 at 2 x 12 MiB/s of 64 KiB).
    poll("the measuring window fills", || {
        let (big, small) = totals(&ossds);
        big + small >= big0 + small0 + 1200
    })
    .await;
    let (big1, small1) = totals(&ossds);
    let stats = ossds[0].sync_stats();
    // `pfsqos stat` reads job_stats as `lctl` does: with the servers' key.
    let key_file = tmp.path().join("key");
    std::fs::write(&key_file, SERVER_KEY).unwrap();
    let stat_args = pfsqos_ops::stat::StatArgs {
        servers: addrs.clone(),
        key_file,
        count: 5,
        interval: Duration::from_millis(300),
        iterations: Some(1),
        record: None,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    pfsqos_ops::stat::run(&stat_args, std::future::pending(), &mut out, &mut err)
        .await
        .unwrap();
    let stat_out = String::from_utf8(out).unwrap();
    for l in loads {
        l.finish().await;
    }
    for o in ossds {
        o.shutdown().await;
    }
    let ratio = (big1 - big0) as f64 / (small1 - small0).max(1) as f64;
    eprintln!(
        "big:small over both ossds = {ratio:.3} (small on the second only: \
         {small_on_second_only}, synchronized: {synchronize})"
    );
    (ratio, stats, stat_out)
}

/// Ossd `i` of `addrs` (each the others' peer, its OST under `dir`) with DSFQ at depth 8 and
/// `params` written after.
async fn start_peer(
    dir: &std::path::Path,
    addrs: &[SocketAddr],
    i: usize,
    params: &[&str],
) -> Ossd {
    let cfg = config(
        addrs[i],
        dir.join(format!("ost{i}")),
        i as u32,
        addrs,
        &|_| {},
    );
    let o = Ossd::start(cfg).await.unwrap();
    start_dsfq(addrs[i], 8).await;
    set_params(addrs[i], params).await;
    o
}

/// Both ossds report to each other over real sockets; the second is stopped and a new one
/// started on its address: the first reconnects and the exchange resumes, and the first's
/// I/O never fails or stops meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exchange_resumes_after_a_peer_restarts_and_io_never_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let addrs = free_addrs(2);
    let start = |i: usize| start_peer(tmp.path(), &addrs, i, &[]);
    let a = start(0).await;
    let b = start(1).await;
    let load_a = load(addrs[0], "big", 2, 100).await;
    let load_b = load(addrs[1], "big", 2, 100).await;
    poll("both sides send and receive", || {
        let (sa, sb) = (a.sync_stats(), b.sync_stats());
        sa.messages_out > 0 && sb.messages_out > 0 && sa.batches_in > 0 && sb.batches_in > 0
    })
    .await;
    let (sa, sb) = (a.sync_stats(), b.sync_stats());
    assert_eq!(
        sa.cpts.rejected_in + sb.cpts.rejected_in,
        0,
        "{sa:?} {sb:?}"
    );
    // lctl shows the counters while dsfq runs.
    let mut admin = OssClient::connect(addrs[0], SERVER_KEY, Role::Lctl)
        .await
        .unwrap();
    let text = admin
        .get_param("ost.OSS.ost_io.nrs_dsfq_sync_stats")
        .await
        .unwrap()
        .remove(0)
        .value;
    assert!(text.starts_with("instances: 0-0\npeers: 1\n"), "{text}");
    assert!(!text.contains("batches_out: 0\n"), "{text}");
    assert!(text.contains("batches_refused_in: 0\n"), "{text}");
    match admin
        .set_param("ost.OSS.ost_io.nrs_dsfq_sync_stats", "0")
        .await
    {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EPERM),
        other => panic!("{other:?}"),
    }
    assert_eq!(sa.messages_refused_in + sb.messages_refused_in, 0);
    assert!(sa.cpts.broadcasts_out > 0 && sb.cpts.messages_in > 0);

    // Stop the second; its clients go with it.
    assert!(load_b.finish().await > 0);
    b.shutdown().await;
    let served_at_stop = load_a.bytes.load(Ordering::Relaxed);
    poll("the first sees its peer gone", || {
        let s = a.sync_stats();
        s.connect_failures > 0 || s.dropped_out > 0
    })
    .await;
    // I/O on the first goes on while its peer is away.
    poll("the first serves while its peer is down", || {
        load_a.bytes.load(Ordering::Relaxed) > served_at_stop + 20 * RPC_BYTES
    })
    .await;

    let b2 = start(1).await;
    let load_b2 = load(addrs[1], "big", 2, 100).await;
    let connects_before = sa.connects;
    poll("the first reconnects and the new peer receives", || {
        a.sync_stats().connects > connects_before && b2.sync_stats().batches_in > 0
    })
    .await;
    // And the other way round: the restarted peer reports to the first.
    let in_before = a.sync_stats().batches_in;
    poll("the restarted peer reports to the first", || {
        a.sync_stats().batches_in > in_before
    })
    .await;
    // A restarted sender numbers from 0 in a new epoch: nothing is taken for a repeat.
    assert_eq!(a.sync_stats().messages_refused_in, 0);
    assert!(load_b2.finish().await > 0);
    assert!(load_a.finish().await > served_at_stop);
    a.shutdown().await;
    b2.shutdown().await;
}

fn message(job: &str, instance: u32, seq: u64, cost: u64) -> WireSyncMessage {
    WireSyncMessage {
        from_instance: instance,
        seq,
        kind: WireReportKind::Service,
        cost,
        flow: (&RpcTags {
            job: JobId::new(job).unwrap(),
            ..RpcTags::UNKNOWN
        })
            .into(),
    }
}

fn batch(messages: Vec<WireSyncMessage>) -> WireSyncBatch {
    WireSyncBatch {
        sender_epoch: 1,
        messages,
    }
}

async fn flows(addr: SocketAddr) -> String {
    flows_with(addr, SERVER_KEY).await
}

async fn flows_with(addr: SocketAddr, key: &[u8]) -> String {
    let mut c = OssClient::connect(addr, key, Role::Lctl).await.unwrap();
    c.get_param("ost.OSS.ost_io.nrs_dsfq_flows")
        .await
        .unwrap()
        .remove(0)
        .value
}

/// Hostile synchronization input is refused and counted, and leaves the schedulers as they
/// were: a wrong key, a role that may not sync, an unknown flow, an absurd cost, an oversized
/// frame, a message claiming the receiver's own instance, a repeated sequence number, and
/// more peer connections than allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_sync_input_is_refused_counted_and_has_no_effect() {
    let tmp = tempfile::tempdir().unwrap();
    let addr = free_addrs(1)[0];
    let a = Ossd::start(config(addr, tmp.path().join("ost0"), 0, &[], &|_| {}))
        .await
        .unwrap();
    start_dsfq(addr, 8).await;
    // One flow served, so that reports about it would change its tags.
    let mut io = OssClient::connect(addr, KEY, Role::Client).await.unwrap();
    io.write(&ident("big"), 0, 1, 0, &[1; 4096], false)
        .await
        .unwrap();
    let before = flows(addr).await;
    assert!(before.contains("big"), "{before}");

    // Peer connections are bounded (8 for an ossd without peers): one more is refused.
    let mut held = Vec::new();
    for n in 0..8u64 {
        let mut p = OssClient::connect(addr, SERVER_KEY, Role::Oss)
            .await
            .unwrap();
        p.send_sync_batch(batch(vec![message("other", 7, n, 0)]))
            .await
            .unwrap_or_else(|e| panic!("peer connection {n}: {e}"));
        held.push(p);
    }
    let mut extra = OssClient::connect(addr, SERVER_KEY, Role::Oss)
        .await
        .unwrap();
    assert!(extra
        .send_sync_batch(batch(vec![message("other", 7, 100, 0)]))
        .await
        .is_err());
    assert_eq!(a.sync_stats().peer_connections_refused, 1);
    drop(held);
    // The slots come back as the daemon notices the connections closed.
    let mut peer = loop {
        let mut p = OssClient::connect(addr, SERVER_KEY, Role::Oss)
            .await
            .unwrap();
        if p.send_sync_batch(batch(vec![message("other", 7, 200, 0)]))
            .await
            .is_ok()
        {
            break p;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let base = a.sync_stats();
    // Numbers 8..=199 of instance 7 never arrived (100 went to the refused connection).
    assert_eq!(base.messages_lost_in, 192, "{base:?}");

    // Wrong key: the handshake fails.
    let wrong = OssClient::connect(addr, b"another-key-0123456789abcdef", Role::Oss).await;
    assert!(wrong.is_err());
    poll("the failed handshake is counted", || {
        a.sync_stats().handshakes_failed >= 1
    })
    .await;

    // A client may not sync.
    let mut client = OssClient::connect(addr, KEY, Role::Client).await.unwrap();
    match client
        .send_sync_batch(batch(vec![message("big", 5, 0, 1)]))
        .await
    {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EPERM),
        other => panic!("{other:?}"),
    }
    assert_eq!(a.sync_stats().batches_refused_in, 1);

    // An unknown flow (a NID on a job-id policy: none of its flows can have one), the
    // receiver's own instance, and a repeat of sequence number 0: accepted on the wire,
    // refused by the receiver, counted.
    let mut unknown = message("big", 5, 0, 1 << 20);
    unknown.flow = WireFlow {
        nid: Nid::ipv4(
            10,
            0,
            0,
            1,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        )
        .into(),
        ..unknown.flow
    };
    peer.send_sync_batch(batch(vec![unknown])).await.unwrap();
    peer.send_sync_batch(batch(vec![message("big", 0, 0, 1 << 20)]))
        .await
        .unwrap();
    peer.send_sync_batch(batch(vec![message("big", 5, 0, 1 << 20)]))
        .await
        .unwrap();
    let s = a.sync_stats();
    assert_eq!(s.cpts.rejected_in - base.cpts.rejected_in, 1, "{s:?}");
    assert_eq!(s.messages_refused_in - base.messages_refused_in, 2, "{s:?}");
    assert_eq!(s.batches_in - base.batches_in, 3);

    // An absurd cost closes the connection before any scheduler sees it.
    let absurd = encode(&WireRequest::Sync {
        tag: 1,
        batch: batch(vec![message("big", 6, 0, u64::MAX)]),
    });
    peer.send_raw_frame(absurd).await.unwrap();
    assert!(peer.next_frame().await.is_err());
    assert_eq!(a.sync_stats().batches_refused_in, 2);

    // An oversized batch (more messages than one batch may hold) and an oversized frame.
    for messages in [
        vec![message("big", 6, 0, 1); SYNC_BATCH_LEN_MAX + 1],
        vec![
            WireSyncMessage {
                flow: WireFlow {
                    job: "j".repeat(200),
                    ..message("big", 6, 0, 1).flow
                },
                ..message("big", 6, 0, 1)
            };
            SYNC_BATCH_LEN_MAX
        ],
    ] {
        let mut peer = OssClient::connect(addr, SERVER_KEY, Role::Oss)
            .await
            .unwrap();
        let frame = encode(&WireRequest::Sync {
            tag: 1,
            batch: batch(messages),
        });
        peer.send_raw_frame(frame).await.unwrap();
        assert!(peer.next_frame().await.is_err());
    }
    assert_eq!(a.sync_stats().batches_refused_in, 4);

    // None of it reached the flows: the listing is as before, and I/O goes on.
    assert_eq!(flows(addr).await, before);
    io.write(&ident("big"), 0, 1, 4096, &[1; 4096], false)
        .await
        .unwrap();
    a.shutdown().await;
}

/// The CPTs of one ossd are instances too: without any peer, their reports reach each other
/// in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cpts_of_one_ossd_exchange_reports_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let addr = free_addrs(1)[0];
    let a = Ossd::start(config(addr, tmp.path().join("ost0"), 4, &[], &|c| {
        c.cpts = 2
    }))
    .await
    .unwrap();
    start_dsfq(addr, 8).await;
    // Connections are bound to CPTs round robin: four of them load both.
    let l = load(addr, "big", 4, 100).await;
    poll("both CPTs receive the other's reports", || {
        let s = a.sync_stats();
        s.cpts.broadcasts_out > 10 && s.cpts.messages_in > 10
    })
    .await;
    let s = a.sync_stats();
    assert_eq!(s.cpts.rejected_in, 0, "{s:?}");
    assert_eq!(s.messages_out + s.batches_in, 0, "no peer, no wire: {s:?}");
    assert!(l.finish().await > 0);
    a.shutdown().await;
}

/// Layout-driven DSFQ across a restart: an ossd that restarts has lost the presence its peers
/// announced (a flow's arrival is announced once, and in steady state layout mode sends
/// nothing else). The restarted ossd's first batch carries a new epoch; its peer answers with
/// the presence of every flow it serves, so the restarted ossd again charges that flow's
/// requests as mirrored on both servers. Without that, it would count one server until the
/// flow left and came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_ossd_learns_again_which_flows_its_peer_serves() {
    let tmp = tempfile::tempdir().unwrap();
    let addrs = free_addrs(2);
    let start = |i: usize| {
        start_peer(
            tmp.path(),
            &addrs,
            i,
            &[
                "ost.OSS.ost_io.nrs_dsfq_flow_idle_ms=600000",
                "ost.OSS.ost_io.nrs_dsfq_sync=layout",
            ],
        )
    };
    let served_by_both = |listing: &str| {
        listing
            .lines()
            .any(|l| l.trim_start().starts_with("jobid=big ") && l.contains(" servers=2 "))
    };
    let a = start(0).await;
    let b = start(1).await;
    let load_a = load(addrs[0], "big", 2, 100).await;
    let load_b = load(addrs[1], "big", 2, 100).await;
    for addr in &addrs {
        let mut listing = String::new();
        let deadline = Instant::now() + DEADLINE;
        while !served_by_both(&listing) {
            assert!(Instant::now() < deadline, "not served by both: {listing}");
            tokio::time::sleep(Duration::from_millis(5)).await;
            listing = flows(*addr).await;
        }
    }
    assert!(load_b.finish().await > 0);
    b.shutdown().await;

    let b2 = start(1).await;
    let load_b2 = load(addrs[1], "big", 2, 100).await;
    let mut listing = String::new();
    let deadline = Instant::now() + DEADLINE;
    while !served_by_both(&listing) {
        assert!(
            Instant::now() < deadline,
            "the restarted ossd never learnt that its peer serves `big`: {listing}\nA {:?}\nB2 {:?}",
            a.sync_stats(),
            b2.sync_stats()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
        listing = flows(addrs[1]).await;
    }
    assert!(served_by_both(&flows(addrs[0]).await));
    assert!(load_b2.finish().await > 0);
    assert!(load_a.finish().await > 0);
    a.shutdown().await;
    b2.shutdown().await;
}

/// The servers' own key: a peer claiming a server role must prove it. A
/// client's cluster key claiming role `Oss` is refused at the handshake (no service report
/// gets in), as it is claiming `Lctl` or `Mds`; the server key proves those roles, not a
/// client; two ossds holding it exchange their reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_key_cannot_claim_to_be_a_peer_ossd() {
    let tmp = tempfile::tempdir().unwrap();
    let addrs = free_addrs(2);
    let a = Ossd::start(config(
        addrs[0],
        tmp.path().join("ost0"),
        0,
        &addrs,
        &|_| {},
    ))
    .await
    .unwrap();
    start_dsfq_with(addrs[0], SERVER_KEY, 8).await;
    let before = flows_with(addrs[0], SERVER_KEY).await;
    // The cluster key (every client node holds it) cannot claim role Oss.
    let refused = OssClient::connect(addrs[0], KEY, Role::Oss).await;
    assert!(refused.is_err(), "a client key was taken as a peer ossd");
    // Nor can the server key act as a client (it is not the cluster key).
    assert!(OssClient::connect(addrs[0], SERVER_KEY, Role::Client)
        .await
        .is_err());
    // Nor `Lctl` (TBF and DSFQ rules, every job's job_stats) or `Mds` (any object, destroys).
    for role in [Role::Lctl, Role::Mds] {
        assert!(
            OssClient::connect(addrs[0], KEY, role).await.is_err(),
            "a client key was taken as {role:?}"
        );
    }
    let mut mds = OssClient::connect(addrs[0], SERVER_KEY, Role::Mds)
        .await
        .unwrap();
    mds.list_objects(0, 0, 16).await.unwrap();
    drop(mds);
    assert_eq!(flows_with(addrs[0], SERVER_KEY).await, before);
    assert_eq!(a.sync_stats().cpts.messages_in, 0);
    // The server key proves role Oss: a report is taken.
    let mut peer = OssClient::connect(addrs[0], SERVER_KEY, Role::Oss)
        .await
        .unwrap();
    peer.send_sync_batch(batch(vec![message("other", 7, 1, 0)]))
        .await
        .unwrap();
    drop(peer);
    // A second ossd holding the server key exchanges reports with the first.
    let b = Ossd::start(config(
        addrs[1],
        tmp.path().join("ost1"),
        1,
        &addrs,
        &|_| {},
    ))
    .await
    .unwrap();
    start_dsfq_with(addrs[1], SERVER_KEY, 8).await;
    let io = load(addrs[1], "big", 1, 10).await;
    poll("the first ossd hears the second's reports", || {
        a.sync_stats().cpts.messages_in > 1
    })
    .await;
    io.finish().await;
    b.shutdown().await;
    a.shutdown().await;
}

/// An ossd needs the servers' own key, and one that is not the cluster key: without it no
/// key would prove the server roles (a DSFQ peer's reports charge every job, `lctl` writes
/// rules, the MDS destroys objects) but the one every client node holds. Refused at start,
/// naming what is wrong.
#[tokio::test]
async fn an_ossd_needs_a_server_key_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let addrs = free_addrs(1);
    for server_key in [Vec::new(), b"short".to_vec(), KEY.to_vec()] {
        let set = move |cfg: &mut OssdConfig| cfg.server_key = server_key.clone();
        let refused = Ossd::start(config(addrs[0], tmp.path().join("ost0"), 0, &[], &set))
            .await
            .err()
            .expect("an ossd without a server key of its own started");
        let text = format!("{refused:#}");
        assert!(text.contains("server key"), "{text}");
    }
}
