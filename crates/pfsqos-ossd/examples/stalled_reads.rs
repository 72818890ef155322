//! A probe for `scripts/under-attack.py`: how long other clients wait while stalled readers
//! hold an ossd's replies. `stalled_reads ADDR KEY_FILE [STALLED]` writes one 64 MiB object,
//! times 16 writes of 1 MiB by another client, then opens STALLED (64) connections from 16
//! loopback addresses (127.0.1.10 on), each asking for a 64 MiB read and never reading its
//! socket, and times 16 writes again while they are held. Prints one line:
//! `stalled=N before_median_s=.. before_max_s=.. during_median_s=.. during_max_s=..`.
//! Nothing here is a test: the figures are what the machine gave on this run.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use pfsqos_core::model::{JobId, LNet, NetKind, Nid};
use pfsqos_wire::client::{Identity, OssClient};
use pfsqos_wire::conn::{client_handshake, Reader, Writer};
use pfsqos_wire::protocol::*;

const LEN: u64 = 64 << 20;
const WRITES: usize = 16;

fn ident(job: &str) -> Identity {
    Identity {
        job: JobId::new(job).expect("a valid job id"),
        uid: 1000,
        gid: 1000,
        nid: Nid::ipv4(
            127,
            0,
            0,
            1,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        ),
        job_nodes: None,
    }
}

/// A connection from `from` that asked for a `LEN` read of `object` and will never read.
async fn stalled_read(
    addr: SocketAddr,
    key: &[u8],
    from: IpAddr,
    object: u64,
) -> anyhow::Result<(
    Reader<tokio::net::tcp::OwnedReadHalf>,
    tokio::net::tcp::OwnedWriteHalf,
)> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    let (r, mut w) = socket.connect(addr).await?.into_split();
    let mut reader = Reader::new(r);
    {
        let mut writer = Writer::new(&mut w);
        client_handshake(
            &mut reader,
            &mut writer,
            key,
            Role::Client,
            PROTOCOL_VERSION,
        )
        .await?;
        writer
            .msg(&WireRequest::Io {
                tag: 1,
                io: WireIo {
                    op: IoOp::Read,
                    ost: 0,
                    object,
                    offset: 0,
                    length: LEN,
                    sync: false,
                    tags: WireTags {
                        job: "stall".into(),
                        uid: 0,
                        gid: 0,
                        nid: WireNid {
                            addr: 0x7f00_0001,
                            net_kind: 0,
                            net_num: 0,
                        },
                        job_nodes: None,
                    },
                },
            })
            .await?;
    }
    Ok((reader, w))
}

/// Seconds each of [`WRITES`] 1 MiB writes of another client took, sorted.
async fn time_writes(addr: SocketAddr, key: &[u8], object: u64) -> anyhow::Result<Vec<f64>> {
    let mut c = OssClient::connect(addr, key, Role::Client).await?;
    let id = ident("other.1");
    let data = vec![7u8; 1 << 20];
    let mut took = Vec::with_capacity(WRITES);
    for i in 0..WRITES {
        let at = Instant::now();
        tokio::time::timeout(
            Duration::from_secs(120),
            c.write(&id, 0, object, (i as u64) << 20, &data, false),
        )
        .await??;
        took.push(at.elapsed().as_secs_f64());
    }
    took.sort_by(f64::total_cmp);
    Ok(took)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(addr), Some(key_file)) = (args.get(1), args.get(2)) else {
        anyhow::bail!("usage: stalled_reads ADDR KEY_FILE [STALLED]");
    };
    let addr: SocketAddr = addr.parse()?;
    let key = pfsqos_wire::key::read_key_file(std::path::Path::new(key_file))?;
    let stalled_n: u32 = args.get(3).map_or(Ok(64), |s| s.parse())?;
    anyhow::ensure!((1..=4096).contains(&stalled_n), "STALLED must be 1..=4096");
    let mut c = OssClient::connect(addr, &key, Role::Client).await?;
    c.write(&ident("data.1"), 0, 5, 0, &vec![3u8; LEN as usize], false)
        .await?;
    let before = time_writes(addr, &key, 6).await?;
    let mut stalled = Vec::new();
    for i in 0..stalled_n {
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 10 + (i % 16) as u8));
        stalled.push(stalled_read(addr, &key, from, 5).await?);
    }
    // Let the reads reach the OST and fill their sockets.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during = time_writes(addr, &key, 7).await?;
    drop(stalled);
    let median = |v: &[f64]| v[v.len() / 2];
    println!(
        "stalled={stalled_n} before_median_s={:.3} before_max_s={:.3} during_median_s={:.3} during_max_s={:.3}",
        median(&before),
        before[before.len() - 1],
        median(&during),
        during[during.len() - 1]
    );
    Ok(())
}
