//! The MDS destroys the objects of removed files on a real ossd (loopback, in process): N
//! creates and unlinks leave no object file, a crash between an unlink and its destroy is
//! made good by the restarted MDS, orphans a client recreated are swept, and the objects of
//! live files are never touched. Every wait polls with a deadline.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pfsqos_mds::*;
use pfsqos_ossd::{Ossd, OssdConfig};
use pfsqos_wire::client::{Identity, MdsClient, OssClient};
use pfsqos_wire::mds::*;
use pfsqos_wire::protocol::{Errno, Role};

use crate::common::{KEY, SERVER_KEY};
const O: Owner = Owner {
    mode: 0o644,
    uid: 1,
    gid: 2,
};
const DEADLINE: Duration = Duration::from_secs(60);

async fn ossd(listen: SocketAddr, dirs: &[PathBuf]) -> Ossd {
    let mut cfg = OssdConfig::new(listen, dirs.to_vec(), KEY.to_vec(), SERVER_KEY.to_vec());
    cfg.threads = 2;
    Ossd::start(cfg).await.unwrap()
}

fn mds_config(db: &Path, oss: SocketAddr, osts: u32) -> MdsConfig {
    let mut c = MdsConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        db.to_path_buf(),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
        vec![format!("{oss}:{osts}").parse().unwrap()],
    );
    c.namespace.default_stripe.stripe_count = osts as i32;
    c.mds_load_period = None;
    c
}

fn object_path(dirs: &[PathBuf], s: &Stripe) -> PathBuf {
    dirs[s.ost as usize]
        .join("objects")
        .join(format!("{:016x}", s.object))
}

/// Object files stored on the OSTs.
fn stored(dirs: &[PathBuf]) -> usize {
    dirs.iter()
        .map(|d| std::fs::read_dir(d.join("objects")).map_or(0, |r| r.count()))
        .sum()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < DEADLINE,
            "not within {DEADLINE:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Writes a block into every object of `l` (the client's part of a create).
async fn fill(c: &mut OssClient, l: &FileLayout) {
    for s in &l.stripes {
        c.write(
            &Identity::test("t"),
            s.ost,
            s.object,
            0,
            &[7u8; 4096],
            false,
        )
        .await
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_and_unlinks_leave_no_object_files() {
    const N: usize = 200;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("ost{i}"))).collect();
    let oss = ossd("127.0.0.1:0".parse().unwrap(), &dirs).await;
    let mds = Mds::start(mds_config(&tmp.path().join("mds.db"), oss.local_addr(), 2))
        .await
        .unwrap();
    let mut m = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    let mut c = OssClient::connect(oss.local_addr(), KEY, Role::Client)
        .await
        .unwrap();
    // A client may not destroy or list objects: only the MDS knows what is referenced.
    for r in [
        c.destroy(0, &[1]).await.map(|_| ()),
        c.list_objects(0, 0, 10).await.map(|_| ()),
    ] {
        match r {
            Err(pfsqos_wire::client::ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EPERM),
            other => panic!("a client's destroy or listing was not refused: {other:?}"),
        }
    }
    let (_, live) = m.create(ROOT_INO, b"live", O, None).await.unwrap();
    fill(&mut c, &live).await;
    for k in 0..N {
        let name = format!("f{k}");
        let (_, l) = m.create(ROOT_INO, name.as_bytes(), O, None).await.unwrap();
        fill(&mut c, &l).await;
        if k % 10 == 0 {
            // A rename that replaces a file removes it as an unlink does.
            let (_, r) = m.create(ROOT_INO, b"tmp", O, None).await.unwrap();
            fill(&mut c, &r).await;
            m.rename(ROOT_INO, b"tmp", ROOT_INO, name.as_bytes())
                .await
                .unwrap();
        }
        m.unlink(ROOT_INO, name.as_bytes()).await.unwrap();
    }
    wait_until("every removed file's objects destroyed", || {
        stored(&dirs) == live.stripes.len()
    })
    .await;
    wait_until("the queue emptied", || {
        mds.with_namespace(|ns| ns.pending_destroy_count().unwrap()) == 0
    })
    .await;
    for s in &live.stripes {
        assert!(
            object_path(&dirs, s).exists(),
            "a live file's object was destroyed"
        );
    }
    drop((m, c));
    mds.shutdown().await;
    oss.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_the_destroy_and_orphans_are_swept_up_on_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("ost{i}"))).collect();
    let db = tmp.path().join("mds.db");
    let oss = ossd("127.0.0.1:0".parse().unwrap(), &dirs).await;
    let oss_addr = oss.local_addr();
    let config = mds_config(&db, oss_addr, 2);
    let mds = Mds::start(config.clone()).await.unwrap();
    let mut m = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    let mut c = OssClient::connect(oss_addr, KEY, Role::Client)
        .await
        .unwrap();
    let mut layouts = Vec::new();
    for name in ["live", "crashed", "orphaned"] {
        let (_, l) = m.create(ROOT_INO, name.as_bytes(), O, None).await.unwrap();
        fill(&mut c, &l).await;
        layouts.push(l);
    }
    let [live, crashed, orphaned] = &layouts[..] else {
        unreachable!()
    };
    // A client still writing to a removed file recreates its object after the destroy.
    m.unlink(ROOT_INO, b"orphaned").await.unwrap();
    wait_until("the removed file's objects destroyed", || {
        orphaned
            .stripes
            .iter()
            .all(|s| !object_path(&dirs, s).exists())
    })
    .await;
    fill(&mut c, orphaned).await;
    drop(m);
    mds.shutdown().await;

    // The MDS crashes after an unlink committed and before its destroy was sent: the unlink
    // runs on the namespace alone, and nothing sends the destroy.
    {
        let mut ns = Namespace::open(&db, config.namespace.clone()).unwrap();
        ns.unlink(ROOT_INO, b"crashed", 1).unwrap();
        assert_eq!(ns.pending_destroy_count().unwrap(), 2);
    }
    // And the ossd is down when the MDS comes back: the destroys wait for it.
    drop(c);
    oss.shutdown().await;
    let mds = Mds::start(config).await.unwrap();
    assert_eq!(
        mds.with_namespace(|ns| ns.pending_destroy_count().unwrap()),
        2
    );
    let oss = ossd(oss_addr, &dirs).await;
    wait_until(
        "the crashed unlink's objects and the orphans destroyed",
        || {
            crashed
                .stripes
                .iter()
                .chain(&orphaned.stripes)
                .all(|s| !object_path(&dirs, s).exists())
        },
    )
    .await;
    wait_until("the queue emptied", || {
        mds.with_namespace(|ns| ns.pending_destroy_count().unwrap()) == 0
    })
    .await;
    for s in &live.stripes {
        assert!(
            object_path(&dirs, s).exists(),
            "a live file's object was destroyed"
        );
    }
    assert_eq!(stored(&dirs), live.stripes.len());
    mds.shutdown().await;
    oss.shutdown().await;
}

/// The ossd lists an OST's objects in pages, ascending, to the MDS's role only, and a destroy
/// of objects already gone succeeds (a destroy resent after a lost reply).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ossd_lists_objects_in_pages_and_destroys_idempotently() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("ost{i}"))).collect();
    let oss = ossd("127.0.0.1:0".parse().unwrap(), &dirs).await;
    let mut c = OssClient::connect(oss.local_addr(), KEY, Role::Client)
        .await
        .unwrap();
    let ids = [3u64, 9, 10, 11, 40, 0x1_0000_0000];
    for &o in &ids {
        c.write(&Identity::test("t"), 1, o, 0, b"x", false)
            .await
            .unwrap();
    }
    // Not an object's name: not listed, never destroyed.
    std::fs::write(dirs[1].join("objects").join("notes.txt"), b"keep").unwrap();
    let mut m = OssClient::connect(oss.local_addr(), SERVER_KEY, Role::Mds)
        .await
        .unwrap();
    let mut listed = Vec::new();
    let mut after = 0;
    loop {
        let (page, more) = m.list_objects(1, after, 4).await.unwrap();
        assert!(page.len() <= 4);
        listed.extend_from_slice(&page);
        match page.last() {
            Some(&last) if more => after = last,
            _ => break,
        }
    }
    assert_eq!(listed, ids);
    assert_eq!(m.list_objects(0, 0, 10).await.unwrap(), (vec![], false));
    m.destroy(1, &[9, 10, 12]).await.unwrap();
    m.destroy(1, &[9, 10, 12]).await.unwrap();
    let (left, _) = m.list_objects(1, 0, 100).await.unwrap();
    assert_eq!(left, [3, 11, 40, 0x1_0000_0000]);
    assert!(dirs[1].join("objects").join("notes.txt").exists());
    // A destroyed object reads as a hole and can be written again.
    assert!(c
        .read(&Identity::test("t"), 1, 9, 0, 1)
        .await
        .unwrap()
        .is_empty());
    drop((c, m));
    oss.shutdown().await;
}

/// A listing pass reads the OST's directory once, at its first page (`after` 0): the later
/// pages come from that reading, so an object stored meanwhile below the cursor waits for the
/// next pass, and one the pass listed and a destroy removed since is destroyed again (which
/// succeeds). The next pass sees the directory as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_pass_reads_the_directory_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = vec![tmp.path().join("ost0")];
    let oss = ossd("127.0.0.1:0".parse().unwrap(), &dirs).await;
    let mut c = OssClient::connect(oss.local_addr(), KEY, Role::Client)
        .await
        .unwrap();
    let write = |o: u64| {
        let path = dirs[0].join("objects").join(format!("{o:016x}"));
        std::fs::write(path, b"x").unwrap();
    };
    c.write(&Identity::test("t"), 0, 3, 0, b"x", false)
        .await
        .unwrap();
    for o in [9, 10, 11] {
        write(o);
    }
    let mut m = OssClient::connect(oss.local_addr(), SERVER_KEY, Role::Mds)
        .await
        .unwrap();
    assert_eq!(m.list_objects(0, 0, 2).await.unwrap(), (vec![3, 9], true));
    write(5);
    m.destroy(0, &[10]).await.unwrap();
    assert_eq!(
        m.list_objects(0, 9, 2).await.unwrap(),
        (vec![10, 11], false)
    );
    m.destroy(0, &[10]).await.unwrap();
    assert_eq!(
        m.list_objects(0, 0, 10).await.unwrap(),
        (vec![3, 5, 9, 11], false)
    );
    drop((c, m));
    oss.shutdown().await;
}

/// A TCP relay between the MDS and an ossd that reads the MDS's frames (4-byte big-endian
/// length, then the body: see `pfsqos_wire::protocol`), records every object listing asked
/// for, and on its first connection drops the connection instead of relaying the `cut_at`-th
/// listing, as a network failure mid-pass would. Connections wait for `open` before they are
/// relayed, so the MDS's first pass starts only once the test has stored its objects.
struct Relay {
    addr: SocketAddr,
    /// `(connection, OST, after)` of each listing the MDS asked for, the cut one included.
    listed: std::sync::Arc<std::sync::Mutex<Vec<(usize, u32, u64)>>>,
    open: tokio::sync::watch::Sender<bool>,
}

impl Relay {
    async fn start(upstream: SocketAddr, ost_count: u32, cut_at: usize) -> Relay {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let listed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (open, gate) = tokio::sync::watch::channel(false);
        let log = listed.clone();
        tokio::spawn(async move {
            for conn in 0.. {
                let Ok((down, _)) = listener.accept().await else {
                    return;
                };
                let (log, mut gate) = (log.clone(), gate.clone());
                tokio::spawn(async move {
                    if gate.wait_for(|&o| o).await.is_err() {
                        return;
                    }
                    let Ok(up) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (mut down_r, mut down_w) = down.into_split();
                    let (mut up_r, mut up_w) = up.into_split();
                    let replies =
                        tokio::spawn(async move { tokio::io::copy(&mut up_r, &mut down_w).await });
                    // Hello and Auth, then requests.
                    for frame in 0usize.. {
                        let mut len = [0u8; 4];
                        if down_r.read_exact(&mut len).await.is_err() {
                            break;
                        }
                        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                        if down_r.read_exact(&mut body).await.is_err() {
                            break;
                        }
                        if frame >= 2 {
                            if let Ok(pfsqos_wire::protocol::Request::ListObjects {
                                ost,
                                after,
                                ..
                            }) = pfsqos_wire::protocol::decode_request(&body, ost_count)
                            {
                                let mut l = log.lock().unwrap();
                                l.push((conn, ost, after));
                                if conn == 0 && l.len() == cut_at {
                                    break;
                                }
                            }
                        }
                        if up_w.write_all(&len).await.is_err()
                            || up_w.write_all(&body).await.is_err()
                        {
                            break;
                        }
                    }
                    // Both directions end: the MDS sees its connection fail.
                    replies.abort();
                });
            }
        });
        Relay { addr, listed, open }
    }

    fn listed(&self) -> Vec<(usize, u32, u64)> {
        self.listed.lock().unwrap().clone()
    }
}

/// The orphan sweep is incremental and survives its connection: a pass of several rounds
/// (pages of two objects, so 16 pages a round cover 32 objects) whose connection to the ossd
/// drops in its second round continues, on the next connection, from the cursor where it
/// stood (the listing that failed is asked for again, not the OST's first page), so each
/// OST's directory is read once in the pass (one listing with `after` 0 per OST). The pass
/// still destroys every orphan (every id below the MDS's next id that no stripe on that OST
/// names) and nothing else: not a live file's object, not one above the bound (a create in
/// flight), not a file that is no object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_pass_continues_from_its_cursor_after_its_connection_drops() {
    const FILES: usize = 20;
    const OSTS: u32 = 2;
    // Round one is 16 listings: the cut falls in round two.
    const CUT_AT: usize = 20;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..OSTS)
        .map(|i| tmp.path().join(format!("ost{i}")))
        .collect();
    let oss = ossd("127.0.0.1:0".parse().unwrap(), &dirs).await;
    let relay = Relay::start(oss.local_addr(), OSTS, CUT_AT).await;
    let mut config = mds_config(&tmp.path().join("mds.db"), relay.addr, OSTS);
    config.sweep_page_objects = 2;
    let mds = Mds::start(config).await.unwrap();
    let mut m = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    let mut c = OssClient::connect(oss.local_addr(), KEY, Role::Client)
        .await
        .unwrap();
    let mut live = Vec::new();
    for k in 0..FILES {
        let (_, l) = m
            .create(ROOT_INO, format!("f{k}").as_bytes(), O, None)
            .await
            .unwrap();
        fill(&mut c, &l).await;
        live.extend(l.stripes);
    }
    let below = mds.with_namespace(|ns| ns.next_object().unwrap());
    let ids = |ost: u32| -> std::collections::BTreeSet<u64> {
        live.iter()
            .filter(|s| s.ost == ost)
            .map(|s| s.object)
            .collect()
    };
    // Every id handed out is on one OST; on the others it is an orphan.
    let mut orphans = 0;
    for ost in 0..OSTS {
        let mine = ids(ost);
        for id in (1..below).filter(|id| !mine.contains(id)) {
            let s = Stripe { ost, object: id };
            std::fs::write(object_path(&dirs, &s), b"orphan").unwrap();
            orphans += 1;
        }
        for id in [below, below + 3] {
            let s = Stripe { ost, object: id };
            std::fs::write(object_path(&dirs, &s), b"being created").unwrap();
        }
        std::fs::write(
            dirs[ost as usize].join("objects").join("notes.txt"),
            b"keep",
        )
        .unwrap();
    }
    let per_ost = (below - 1) as usize + 2;
    assert!(
        per_ost > 2 * 16 + 2,
        "the pass must span more than one round on an OST"
    );
    assert!(orphans > 0);
    relay.open.send(true).unwrap();
    let expected = |ost: u32| -> std::collections::BTreeSet<String> {
        ids(ost)
            .into_iter()
            .chain([below, below + 3])
            .map(|id| format!("{id:016x}"))
            .chain(["notes.txt".to_string()])
            .collect()
    };
    let stored_names = |ost: u32| -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dirs[ost as usize].join("objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    wait_until("every orphan destroyed", || {
        (0..OSTS).all(|ost| stored_names(ost) == expected(ost))
    })
    .await;
    wait_until("the queue emptied", || {
        mds.with_namespace(|ns| ns.pending_destroy_count().unwrap()) == 0
    })
    .await;
    // Every OST's orphans are gone, so the pass listed every OST (a pass is under way until
    // its last page; what was asked so far is what is checked).
    let listed = relay.listed();
    assert!(listed.len() > CUT_AT, "{listed:?}");
    let (cut, resumed) = (listed[CUT_AT - 1], listed[CUT_AT]);
    assert_eq!(cut.0, 0, "{listed:?}");
    assert!(resumed.0 > 0, "no reconnection: {listed:?}");
    assert_ne!(cut.2, 0, "the cut fell on an OST's first page: {listed:?}");
    assert_eq!(
        (resumed.1, resumed.2),
        (cut.1, cut.2),
        "the reconnection did not continue from the cursor: {listed:?}"
    );
    // One reading of each OST's directory in the pass: its first page, asked for once.
    for ost in 0..OSTS {
        let firsts = listed
            .iter()
            .filter(|&&(_, o, after)| o == ost && after == 0)
            .count();
        assert_eq!(
            firsts, 1,
            "OST {ost} listed from its start {firsts} times: {listed:?}"
        );
    }
    // The cursor only moves forward: the cut listing is the only one asked twice.
    let positions: Vec<(u32, u64)> = listed.iter().map(|&(_, o, a)| (o, a)).collect();
    let mut retried = 0;
    for w in positions.windows(2) {
        assert!(w[0] <= w[1], "the cursor went back: {listed:?}");
        retried += usize::from(w[0] == w[1]);
    }
    assert_eq!(retried, 1, "{listed:?}");
    drop((m, c));
    mds.shutdown().await;
    oss.shutdown().await;
}
