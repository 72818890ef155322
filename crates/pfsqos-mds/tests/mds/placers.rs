//! The live MDS places new files with the placer its configuration names, from the registry
//! the simulator uses (`pfsqos_core::place::PLACER_ROWS`): `lustre` (Lustre's allocator) and
//! `iez` over the protocol on loopback, and an unknown name refused with the names there are.

use pfsqos_core::place::{placement_by_name, PlacementContext, PlacementRequest};
use pfsqos_mds::*;
use pfsqos_wire::client::{ClientError, MdsClient};
use pfsqos_wire::mds::*;
use pfsqos_wire::protocol::{Errno, Role};

use crate::common::{KEY, SERVER_KEY};
const MIB: u64 = 1 << 20;
const O: Owner = Owner {
    mode: 0o644,
    uid: 1,
    gid: 2,
};
/// Three OSSs of two OSTs each: OST `i` is on OSS `i / 2`.
const OSSES: u32 = 3;

fn config(dir: &std::path::Path, placer: &str) -> MdsConfig {
    let mut c = MdsConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dir.join("mds.db"),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
        (0..OSSES)
            .map(|i| format!("127.0.0.1:{}:2", 7001 + i).parse().unwrap())
            .collect(),
    );
    c.namespace.placer = placer.into();
    c.namespace.default_stripe.stripe_count = 2;
    // The MDS's own load would be this test process's: no busy gate.
    c.mds_load_period = None;
    c
}

/// OSS `i`'s report: its two OSTs of 1 GiB with `avail` bytes free each.
fn report(i: u32, avail: u64) -> OssReport {
    OssReport {
        oss: format!("127.0.0.1:{}", 7001 + i),
        age_ms: 0,
        osts: vec![
            OstSpace {
                total_bytes: 1024 * MIB,
                avail_bytes: avail,
            };
            2
        ],
        cpu_util_ppm: Some(0),
        mem_util_ppm: Some(0),
    }
}

/// An ossd's connection (role `Oss`), the only one that reports statistics.
async fn reporter(mds: &Mds) -> MdsClient {
    MdsClient::connect_as(mds.local_addr(), SERVER_KEY, Role::Oss)
        .await
        .unwrap()
}

fn osts(l: &FileLayout) -> Vec<u32> {
    l.stripes.iter().map(|s| s.ost).collect()
}

fn errno<T: std::fmt::Debug>(r: Result<T, ClientError>) -> Errno {
    match r {
        Err(ClientError::Remote(e)) => e.errno,
        other => panic!("expected a remote error, got {other:?}"),
    }
}

/// `lustre` live: with balanced OSTs the layouts are exactly those the registry's `lustre`
/// placer gives for the same statistics and creates (round robin over an array interleaving
/// the OSSs, so a file's two stripes are on two OSSs, where plain round robin puts them on
/// one); with OSS 0 nearly full, its weighted QOS keeps new stripes off it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lustre_runs_live_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mds = Mds::start(config(tmp.path(), "lustre")).await.unwrap();
    let mut c = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    let mut oss = reporter(&mds).await;
    for i in 0..OSSES {
        oss.report_oss(report(i, 1024 * MIB)).await.unwrap();
    }
    let stats = mds
        .with_namespace(|ns| {
            assert_eq!(ns.placer_name(), "lustre");
            ns.server_stats(wall_ns())
        })
        .expect("every OSS reported");
    let mut want = placement_by_name("lustre", 2 * OSSES).unwrap();
    want.observe_servers(&stats).unwrap();
    for k in 0..9 {
        let (a, l) = c
            .create(ROOT_INO, format!("f{k}").as_bytes(), O, None)
            .await
            .unwrap();
        let expected = want
            .place(
                &PlacementRequest {
                    stripe_count: 2,
                    stripe_size_bytes: MIB,
                    ost_count: 2 * OSSES,
                    start_ost: None,
                },
                &PlacementContext {
                    now_ns: wall_ns(),
                    job: pfsqos_core::model::JobId::EMPTY,
                },
            )
            .unwrap();
        let got = osts(&l);
        assert_eq!(
            got,
            expected.osts.iter().map(|o| o.0).collect::<Vec<_>>(),
            "file {k}"
        );
        assert_ne!(got[0] / 2, got[1] / 2, "file {k}: two stripes on one OSS");
        let info = c.placement(a.ino).await.unwrap();
        assert_eq!((info.policy.as_str(), info.reason), ("lustre", None));
    }

    // OSS 0's OSTs almost full: the free-space weights keep stripes off them.
    oss.report_oss(report(0, 4 * MIB)).await.unwrap();
    for i in 1..OSSES {
        oss.report_oss(report(i, 1024 * MIB)).await.unwrap();
    }
    let mut on_full = 0;
    for k in 0..40 {
        let (_, l) = c
            .create(ROOT_INO, format!("q{k}").as_bytes(), O, None)
            .await
            .unwrap();
        on_full += osts(&l).iter().filter(|&&o| o < 2).count();
    }
    // Round robin would put 80 / 3 stripes there; weighted by free space (4 MiB against
    // 1 GiB), a handful at most.
    assert!(on_full <= 8, "{on_full} of 80 stripes on the full OSS");
    drop((c, oss));
    mds.shutdown().await;

    // A restarted MDS keeps the placer's rotation (its own state word).
    let mds = Mds::start(config(tmp.path(), "lustre")).await.unwrap();
    let mut c = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    let (_, l) = c.create(ROOT_INO, b"after", O, None).await.unwrap();
    assert_eq!(l.stripes.len(), 2);
    drop(c);
    mds.shutdown().await;
}

fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// `iez` live: a file with a row in the interaction database gets the OSTs planned for it
/// (over the OSSs' reports), others Lustre's allocator's; an MDS with another placer refuses
/// iez's predictions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iez_runs_live_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mds = Mds::start(config(tmp.path(), "iez")).await.unwrap();
    let mut c = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    // OSS 0 has less room: iez plans around it.
    let mut oss = reporter(&mds).await;
    oss.report_oss(report(0, 200 * MIB)).await.unwrap();
    for i in 1..OSSES {
        oss.report_oss(report(i, 1024 * MIB)).await.unwrap();
    }
    let files: Vec<IezPrediction> = (0..3)
        .map(|k| IezPrediction {
            path: format!("/p{k}"),
            predicted_bytes: 256 * MIB,
            stripe_count: 2,
        })
        .collect();
    assert_eq!(c.iez_load("app", files.clone()).await.unwrap(), (3, 3));
    let rows = mds.with_namespace(|ns| ns.iez_predictions().unwrap());
    for k in 0..3 {
        let (a, l) = c
            .create(ROOT_INO, format!("p{k}").as_bytes(), O, None)
            .await
            .unwrap();
        let row = rows.iter().find(|r| r.path == format!("/p{k}")).unwrap();
        let planned = row.planned.clone().expect("planned at load");
        assert_eq!(osts(&l), planned.osts, "file {k}");
        assert_eq!(l.stripe_size_bytes, planned.stripe_size_bytes);
        assert!(osts(&l).iter().all(|&o| o >= 2), "iez avoids OSS 0: {l:?}");
        let info = c.placement(a.ino).await.unwrap();
        assert_eq!((info.policy.as_str(), info.reason), ("iez", None));
    }
    let (a, _) = c.create(ROOT_INO, b"unpredicted", O, None).await.unwrap();
    let info = c.placement(a.ino).await.unwrap();
    assert_eq!((info.policy.as_str(), info.reason), ("lustre", None));
    drop((c, oss));
    mds.shutdown().await;

    let tmp = tempfile::tempdir().unwrap();
    let mds = Mds::start(config(tmp.path(), "roundrobin")).await.unwrap();
    let mut c = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    assert_eq!(errno(c.iez_load("app", files.clone()).await), Errno::EINVAL);
    let (_, l) = c.create(ROOT_INO, b"p0", O, None).await.unwrap();
    assert_eq!(osts(&l), [0, 1], "round robin from the start");
    drop(c);
    mds.shutdown().await;
}

/// A name the registry does not have stops the MDS at start, with the names it has; so do
/// options a placer does not take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_placer_is_refused_with_the_names() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Mds::start(config(tmp.path(), "qos")).await.err().unwrap();
    let e = e.to_string();
    assert!(e.contains("allowed: roundrobin, lustre, iez"), "{e}");
    let e = Mds::start(config(tmp.path(), "lustre:qos_maxage=0"))
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("qos_maxage"), "{e}");
    let mds = Mds::start(config(tmp.path(), "lustre:qos_prio_free=50"))
        .await
        .unwrap();
    assert_eq!(
        mds.with_namespace(|ns| ns.placer_name().to_string()),
        "lustre"
    );
    mds.shutdown().await;
}

/// Each role on the MDS. Only an ossd proving the server key (role `Oss`) reports an
/// OSS's statistics, which steer every new file's placement: a client's cluster key claiming
/// `Oss` is refused at the handshake, and a client connection's report gets `EPERM`, so no
/// forged report reaches the placer. `Lctl` and `Mds` have nothing to do at the MDS, with
/// either key; an ossd's connection runs no namespace operation. An MDS without a server key
/// of its own refuses to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_ossd_holding_the_server_key_reports_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let mds = Mds::start(config(tmp.path(), "lustre")).await.unwrap();
    let addr = mds.local_addr();
    let reported = |mds: &Mds| mds.with_namespace(|ns| ns.server_stats(wall_ns()).is_some());

    let mut client = MdsClient::connect(addr, KEY).await.unwrap();
    client.create(ROOT_INO, b"f", O, None).await.unwrap();
    for i in 0..OSSES {
        assert_eq!(errno(client.report_oss(report(i, MIB)).await), Errno::EPERM);
    }
    assert!(MdsClient::connect_as(addr, KEY, Role::Oss).await.is_err());
    for role in [Role::Lctl, Role::Mds] {
        for key in [KEY, SERVER_KEY] {
            assert!(
                MdsClient::connect_as(addr, key, role).await.is_err(),
                "{role:?}"
            );
        }
    }
    assert!(MdsClient::connect(addr, SERVER_KEY).await.is_err());
    assert!(!reported(&mds), "a forged report reached the placer");

    let mut oss = MdsClient::connect_as(addr, SERVER_KEY, Role::Oss)
        .await
        .unwrap();
    assert_eq!(
        errno(oss.create(ROOT_INO, b"g", O, None).await),
        Errno::EPERM
    );
    for i in 0..OSSES {
        oss.report_oss(report(i, 1024 * MIB)).await.unwrap();
    }
    assert!(reported(&mds));
    drop((client, oss));
    mds.shutdown().await;

    // The MDS needs a server key of its own: the cluster key proves nothing a client
    // lacks.
    for server_key in [Vec::new(), KEY.to_vec()] {
        let tmp = tempfile::tempdir().unwrap();
        let mut cfg = config(tmp.path(), "lustre");
        cfg.server_key = server_key;
        let e = Mds::start(cfg)
            .await
            .err()
            .expect("an MDS without a server key started");
        assert!(format!("{e:#}").contains("server key"), "{e:#}");
    }
}
