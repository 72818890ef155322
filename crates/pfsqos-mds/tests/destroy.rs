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

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const O: Owner = Owner {
    mode: 0o644,
    uid: 1,
    gid: 2,
};
const DEADLINE: Duration = Duration::from_secs(60);

async fn ossd(listen: SocketAddr, dirs: &[PathBuf]) -> Ossd {
    let mut cfg = OssdConfig::new(listen, dirs.to_vec(), KEY.to_vec());
    cfg.threads = 2;
    Ossd::start(cfg).await.unwrap()
}

fn mds_config(db: &Path, oss: SocketAddr, osts: u32) -> MdsConfig {
    let mut c = MdsConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        db.to_path_buf(),
        KEY.to_vec(),
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
    let mut m = OssClient::connect(oss.local_addr(), KEY, Role::Mds)
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
    let mut m = OssClient::connect(oss.local_addr(), KEY, Role::Mds)
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
