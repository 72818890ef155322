//! The MDS over the protocol on loopback: every operation through `MdsClient`, and hostile
//! input answered with errors while the server keeps serving.

use pfsqos_mds::*;
use pfsqos_wire::client::{ClientError, MdsClient};
use pfsqos_wire::mds::*;
use pfsqos_wire::protocol::{self, Errno};

use crate::common::{KEY, SERVER_KEY};

const O: Owner = Owner {
    mode: 0o644,
    uid: 1,
    gid: 2,
};

async fn start(dir: &std::path::Path) -> Mds {
    let config = MdsConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dir.join("mds.db"),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
        vec![
            "127.0.0.1:7001:2".parse().unwrap(),
            "127.0.0.1:7002:2".parse().unwrap(),
        ],
    );
    Mds::start(config).await.unwrap()
}

fn errno<T: std::fmt::Debug>(r: Result<T, ClientError>) -> Errno {
    match r {
        Err(ClientError::Remote(e)) => e.errno,
        other => panic!("expected a remote error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_operations_over_the_wire() {
    let tmp = tempfile::tempdir().unwrap();
    let mds = start(tmp.path()).await;
    let mut c = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    assert_eq!(c.server().ost_count, 4);

    let d = c.mkdir(ROOT_INO, b"dir", O).await.unwrap();
    let spec = StripeSpec {
        stripe_count: 2,
        stripe_size_bytes: 1 << 20,
        start_ost: None,
    };
    c.set_dir_stripe(d.ino, Some(spec)).await.unwrap();
    assert_eq!(c.dir_stripe(d.ino).await.unwrap(), Some(spec));
    let (a, l) = c.create(d.ino, b"f", O, None).await.unwrap();
    assert_eq!(l.stripes.iter().map(|s| s.ost).collect::<Vec<_>>(), [0, 1]);
    let (_, l2) = c.create(d.ino, b"g", O, None).await.unwrap();
    assert_eq!(l2.stripes.iter().map(|s| s.ost).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(c.lookup(d.ino, b"f").await.unwrap(), a);
    assert_eq!(c.layout(a.ino).await.unwrap(), l);
    let t = c
        .setattr(
            a.ino,
            SetAttr {
                size_bytes: Some(4096),
                ..SetAttr::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(c.getattr(a.ino).await.unwrap(), t);
    assert_eq!(t.size_bytes, 4096);
    let page = c.readdir(d.ino, 0, 1).await.unwrap();
    assert_eq!(page.entries.len(), 1);
    let rest = c.readdir(d.ino, page.next.unwrap(), 10).await.unwrap();
    assert_eq!(rest.entries[0].name, b"g");
    assert_eq!(rest.next, None);
    assert_eq!(c.rename(d.ino, b"f", d.ino, b"g").await.unwrap(), Some(l2));
    assert_eq!(c.unlink(d.ino, b"g").await.unwrap(), l);
    c.rmdir(ROOT_INO, b"dir").await.unwrap();
    let s = c.statfs().await.unwrap();
    assert_eq!(s.inodes, 1);
    assert_eq!(s.osts[3].oss_addr, "127.0.0.1:7002");
    assert_eq!(s.osts[3].oss_ost_index, 1);
    mds.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_errors_and_the_server_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let mds = start(tmp.path()).await;
    let mut c = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    assert_eq!(errno(c.lookup(ROOT_INO, b"..").await), Errno::EINVAL);
    assert_eq!(errno(c.lookup(ROOT_INO, b"a/b").await), Errno::EINVAL);
    assert_eq!(
        errno(c.create(ROOT_INO, &[b'x'; 256], O, None).await),
        Errno::ENAMETOOLONG
    );
    assert_eq!(errno(c.readdir(ROOT_INO, 0, 1 << 30).await), Errno::EINVAL);
    assert_eq!(errno(c.readdir(ROOT_INO, 0, 0).await), Errno::EINVAL);
    for ino in [0, 7, u64::MAX] {
        assert_eq!(errno(c.getattr(ino).await), Errno::ENOENT);
        assert_eq!(errno(c.mkdir(ino, b"d", O).await), Errno::ENOENT);
    }
    let wide = StripeSpec {
        stripe_count: 5,
        stripe_size_bytes: 1 << 20,
        start_ost: None,
    };
    assert_eq!(
        errno(c.create(ROOT_INO, b"w", O, Some(wide)).await),
        Errno::EINVAL
    );
    // Still serving on the same connection.
    c.create(ROOT_INO, b"ok", O, None).await.unwrap();

    // Garbage and oversize names close that connection only.
    let mut bad = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    bad.send_raw_frame(vec![0xff; 64]).await.unwrap();
    assert!(bad.next_frame().await.is_err());
    let mut bad = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    let huge = protocol::encode(&MdsRequest {
        tag: 1,
        op: MdsOp::Lookup {
            parent: ROOT_INO,
            name: vec![b'a'; 100_000],
        },
    });
    bad.send_raw_frame(huge).await.unwrap();
    assert!(bad.next_frame().await.is_err());
    // A wrong key is refused.
    assert!(
        MdsClient::connect(mds.local_addr(), b"another key of 16+ bytes")
            .await
            .is_err()
    );
    assert_eq!(c.lookup(ROOT_INO, b"ok").await.unwrap().kind, Kind::File);
    mds.shutdown().await;
}
