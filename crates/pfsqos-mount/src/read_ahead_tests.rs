//! Read-ahead under concurrent readers, on a real ossd and MDS (loopback, in process) and the
//! mount's operations without FUSE: each application read arrives as the kernel sends a
//! direct read, several requests served in any order, and the readers share the mount's
//! read-ahead budget. The bytes the OSTs are asked for are the bytes the readers read plus at
//! most the documented read-ahead (`read_ahead_bytes`), and every byte read is the file's.

use std::sync::Arc;

use pfsqos_mds::{Mds, MdsConfig};
use pfsqos_ossd::{Ossd, OssdConfig};
use pfsqos_wire::mds::ROOT_INO;

use super::ops::Caller;
use super::{connect, limit, MountConfig};

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
/// The servers' own key: the server roles (`Lctl`, `Mds`, `Oss`) prove it.
const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";
const MIB: u64 = 1 << 20;
const FILE_BYTES: u64 = 24 * MIB;
const READERS: usize = 4;
/// The kernel's pieces of one application read (FUSE's default of 32 pages).
const PIECE_BYTES: u64 = 128 << 10;
const READ_AHEAD_MB: u64 = 4;

fn byte(file: usize, at: u64) -> u8 {
    (at.wrapping_mul(2_654_435_761) >> 13) as u8 ^ file as u8
}

#[test]
fn concurrent_readers_fetch_each_byte_once_plus_the_read_ahead() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..2).map(|i| tmp.path().join(format!("ost{i}"))).collect();
    let mut oc = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dirs,
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    oc.threads = 2;
    let oss = Ossd::start(oc).await.unwrap();
    let mut mc = MdsConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        tmp.path().join("mds.db"),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
        vec![format!("{}:2", oss.local_addr()).parse().unwrap()],
    );
    mc.namespace.default_stripe.stripe_count = 2;
    mc.mds_load_period = None;
    let mds = Mds::start(mc).await.unwrap();
    let mut config = MountConfig::new(
        tmp.path().join("mnt"),
        mds.local_addr().to_string(),
        KEY.to_vec(),
    );
    config.direct_io = true;
    config.max_read_ahead_mb = READ_AHEAD_MB;
    config.rpc_trace = true;
    let ops = Arc::new(
        connect(&config, &Arc::new(limit::NodeLimiter::new()))
            .await
            .unwrap(),
    );
    let c = Caller {
        pid: std::process::id(),
        uid: 0,
        gid: 0,
    };
    let mut inos = Vec::new();
    for file in 0..READERS {
        let name = format!("f{file}");
        let a = ops
            .create(c, ROOT_INO, name.as_bytes(), 0o644, None, true)
            .await
            .unwrap();
        let data: Vec<u8> = (0..FILE_BYTES).map(|i| byte(file, i)).collect();
        for (k, chunk) in data.chunks(MIB as usize).enumerate() {
            ops.write(c, a.ino, k as u64 * MIB, chunk).await.unwrap();
        }
        ops.release(a.ino, 0).await.unwrap();
        inos.push(a.ino);
    }
    let trace = ops.rpc_trace().unwrap();
    trace.lock().unwrap().clear();

    let readers: Vec<_> = inos
        .iter()
        .enumerate()
        .map(|(file, &ino)| {
            let ops = ops.clone();
            tokio::spawn(async move {
                let fh = 100 + file as u64;
                ops.open(ino).await.unwrap();
                let mut read = 0u64;
                for block in 0..FILE_BYTES / MIB {
                    // The pieces of one 1 MiB read, started in an order that differs from
                    // block to block and served concurrently.
                    let mut order: Vec<u64> = (0..MIB / PIECE_BYTES).collect();
                    let n = order.len();
                    order.rotate_left((block as usize * 3 + file) % n);
                    if block % 2 == 1 {
                        order.reverse();
                    }
                    let pieces = order.into_iter().map(|p| {
                        let ops = ops.clone();
                        let at = block * MIB + p * PIECE_BYTES;
                        async move {
                            let d = ops.read(c, ino, fh, at, PIECE_BYTES as u32).await.unwrap();
                            (at, d)
                        }
                    });
                    for (at, d) in futures_util::future::join_all(pieces).await {
                        assert_eq!(d.len() as u64, PIECE_BYTES);
                        let want: Vec<u8> = (at..at + PIECE_BYTES).map(|i| byte(file, i)).collect();
                        assert!(d[..] == want[..], "file {file}: wrong bytes at {at}");
                        read += d.len() as u64;
                    }
                }
                ops.release(ino, fh).await.unwrap();
                read
            })
        })
        .collect();
    let mut read = 0;
    for r in readers {
        read += r.await.unwrap();
    }
    let fetched: u64 = trace
        .lock()
        .unwrap()
        .iter()
        .filter(|r| !r.write)
        .map(|r| r.len_bytes)
        .sum();
    assert_eq!(read, READERS as u64 * FILE_BYTES);
    eprintln!("read {read} bytes, fetched {fetched}");
    assert!(
        fetched <= read + (READ_AHEAD_MB << 20),
        "the OSTs were asked for {fetched} bytes for {read} read ({:.1} % more)",
        (fetched as f64 / read as f64 - 1.0) * 100.0
    );
    mds.shutdown().await;
    oss.shutdown().await;
}
