//! The limit query (`WireRequest::LimitQuery`): a node that is not a pfsqos mount
//! (`pfsqos tc-client`) asks an ossd for the limit its controller set, and the ossd answers on
//! the connection's own task, never through the NRS queue. Checked here against a queue that
//! is full: one I/O thread, a queue of one request held by a 1 RPC/s TBF rule, so that an I/O
//! request is answered `EBUSY` (the NRS takes nothing more) while the query is answered with
//! the limit. Waits are bounded polls on explicit conditions, never on time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::{KEY, SERVER_KEY};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid};
use pfsqos_ossd::control::ControlConfig;
use pfsqos_ossd::{Ossd, OssdConfig};
use pfsqos_wire::client::{ClientError, Identity, OssClient};
use pfsqos_wire::protocol::{ClientLimit, Errno, Role};

/// Upper bound of every wait on a condition; generous for a loaded 2-core machine.
const WAIT_MAX: Duration = Duration::from_secs(60);
/// The open-loop experiment's first level: the limit the controller sets on every node.
const LIMIT_BYTES_PER_S: u64 = 3 << 20;

fn nid(last: u8) -> Nid {
    Nid::ipv4(
        10,
        9,
        8,
        last,
        LNet {
            kind: NetKind::Tcp,
            num: 0,
        },
    )
}

fn ident(job: &str, node: u8) -> Identity {
    Identity {
        job: JobId::new(job).unwrap(),
        uid: 1000,
        gid: 1000,
        nid: nid(node),
        job_nodes: None,
    }
}

async fn start() -> (Ossd, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = vec![tmp.path().join("ost0")];
    let mut cfg = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dirs,
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    cfg.threads = 1;
    cfg.queue_depth_max = 1;
    // 3 MiB/s on every node for 1,000 periods of 50 ms: the limit stays put for the test.
    let mut control =
        ControlConfig::new("pi-openloop:from=3M:to=5M:levels=2:hold=1000:ts_ms=50").unwrap();
    // Every controller is asked for the OSTs' capacity; the open loop does not use it.
    control.capacity_rpcs_per_s = Some(1000);
    cfg.control = Some(control);
    (Ossd::start(cfg).await.unwrap(), tmp)
}

async fn client(ossd: &Ossd, role: Role) -> OssClient {
    crate::common::connect(ossd.local_addr(), role).await
}

/// Spawns writes of job `hold` until one is held in the queue by the 1 RPC/s rule (one let
/// through at once had a token saved up), polling (bounded) until the NRS lists it.
async fn queue_a_held_write(
    ossd: &Ossd,
    admin: &mut OssClient,
) -> tokio::task::JoinHandle<Result<(), ClientError>> {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let waiter = {
            let mut c = client(ossd, Role::Client).await;
            tokio::spawn(async move { c.write(&ident("hold", 1), 0, 1, 0, b"y", false).await })
        };
        loop {
            let p = admin
                .get_param("ost.OSS.ost_io.nrs_policies")
                .await
                .unwrap();
            if p[0]
                .value
                .contains("name: tbf jobid\n    state: started\n    fallback: no\n    queued: 1 ")
            {
                return waiter;
            }
            if waiter.is_finished() {
                waiter.await.unwrap().unwrap();
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no write of `hold` ever showed as queued: {}",
                p[0].value
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// True when an I/O request bounces off the full queue.
async fn queue_is_full(c: &mut OssClient) -> bool {
    match c.write(&ident("probe", 3), 0, 2, 0, b"z", false).await {
        Err(ClientError::Remote(e)) => {
            assert_eq!(e.errno, Errno::EBUSY, "{e:?}");
            true
        }
        Ok(()) => false,
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_query_is_answered_while_the_nrs_queue_is_full() {
    let (mut ossd, _tmp) = start().await;
    let mut admin = client(&ossd, Role::Lctl).await;
    admin
        .set_param("ost.OSS.ost_io.nrs_policies", "tbf jobid")
        .await
        .unwrap();
    admin
        .set_param(
            "ost.OSS.ost_io.nrs_tbf_rule",
            "start hold jobid={hold} rate=1",
        )
        .await
        .unwrap();

    // The node's first query binds its connection; the controller limits it at its next
    // period.
    let mut node = client(&ossd, Role::Client).await;
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let limit = node.query_limit(nid(2)).await.unwrap();
        if limit == ClientLimit::BytesPerS(LIMIT_BYTES_PER_S) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the controller never limited the node: {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Use up the rule's bucket (3 tokens) so that the next write of `hold` waits.
    let mut hold = client(&ossd, Role::Client).await;
    for _ in 0..3 {
        hold.write(&ident("hold", 1), 0, 1, 0, b"x", false)
            .await
            .unwrap();
    }
    // The queue must be full before and after the query: a held write is let through after
    // about a second, so on a stalled machine the window may close; then queue another one.
    let mut probe = client(&ossd, Role::Client).await;
    let deadline = Instant::now() + WAIT_MAX;
    let mut waiters = Vec::new();
    loop {
        waiters.push(queue_a_held_write(&ossd, &mut admin).await);
        if !queue_is_full(&mut probe).await {
            continue;
        }
        let limit = node.query_limit(nid(2)).await.unwrap();
        assert_eq!(limit, ClientLimit::BytesPerS(LIMIT_BYTES_PER_S));
        if queue_is_full(&mut probe).await {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the queue never stayed full across one query"
        );
    }
    for w in waiters {
        w.await.unwrap().unwrap();
    }

    // A connection is bound to one node; only a client node may ask.
    match node.query_limit(nid(4)).await {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EINVAL, "{e:?}"),
        other => panic!("{other:?}"),
    }
    match admin.query_limit(nid(2)).await {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EPERM, "{e:?}"),
        other => panic!("{other:?}"),
    }
    // The limit is lifted when the controller stops.
    ossd.stop_control().await;
    assert_eq!(
        node.query_limit(nid(2)).await.unwrap(),
        ClientLimit::Unlimited
    );
    ossd.shutdown().await;
}
