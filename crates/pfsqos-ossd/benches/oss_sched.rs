//! Scheduling cost in the OSS: the same load through an in-process ossd under FIFO and under
//! each NRS policy with rules that never bind, in one run: Lustre-exact TBF (one rule per job at
//! the maximum rate), SFQ(D) and DSFQ (one weight rule per job, all weights equal; with one ossd
//! DSFQ has no peer, so this is its local cost: tags, counted service, the synchronization
//! batch it would send). vPFS (Fig. 3-4) reports under 3 % overhead for writes and under 1 % for
//! reads; the TBF issue's target is 1 %.
//!
//! Four client connections, one job each, each keeping one RPC in flight; an iteration is
//! `RPCS_PER_CLIENT` RPCs per client. Small writes show the per-RPC scheduling cost at its most
//! visible; 1 MiB writes and reads are the realistic case (objects live in the page cache, so
//! the disk does not hide the scheduler).

use std::net::SocketAddr;

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid};
use pfsqos_ossd::{Ossd, OssdConfig};
use pfsqos_wire::client::{Identity, OssClient};
use pfsqos_wire::protocol::Role;
use tokio::runtime::Runtime;

const KEY: &[u8] = b"bench-cluster-key-0123456789abcdef";
/// The servers' own key: the server roles (`Lctl`, `Mds`, `Oss`) prove it.
const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";
const CLIENTS: usize = 4;
const RPCS_PER_CLIENT: u64 = 32;
/// Offsets wrap inside this window so objects stay small and in the page cache.
const OBJECT_WINDOW_BYTES: u64 = 64 << 20;

fn ident(i: usize) -> Identity {
    Identity {
        job: JobId::new(&format!("bench.{i}")).unwrap(),
        uid: 1000,
        gid: 1000,
        nid: Nid::ipv4(
            10,
            0,
            0,
            i as u8 + 1,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        ),
        job_nodes: None,
    }
}

struct Server {
    ossd: Ossd,
    _tmp: tempfile::TempDir,
}

/// The policies measured; FIFO is the baseline every other one is compared with.
const POLICIES: [&str; 4] = ["fifo", "tbf", "sfqd", "dsfq"];

async fn start(policy: &str) -> Server {
    assert!(
        POLICIES.contains(&policy),
        "unknown policy {policy:?}: one of {POLICIES:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![tmp.path().join("ost0")],
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    cfg.fsname = "bench".into();
    cfg.threads = 4;
    let ossd = Ossd::start(cfg).await.unwrap();
    if policy != "fifo" {
        let mut admin = OssClient::connect(ossd.local_addr(), SERVER_KEY, Role::Lctl)
            .await
            .unwrap();
        admin
            .set_param("ost.OSS.ost_io.nrs_policies", &format!("{policy} jobid"))
            .await
            .unwrap();
        // TBF: a rate no client reaches; SFQ(D)/DSFQ: equal weights, which never hold anyone
        // back while every job is backlogged alike.
        let (param, limit) = match policy {
            "tbf" => ("nrs_tbf_rule", "rate=999999"),
            _ => (
                if policy == "sfqd" {
                    "nrs_sfqd_weight"
                } else {
                    "nrs_dsfq_weight"
                },
                "weight=1",
            ),
        };
        for i in 0..CLIENTS {
            admin
                .set_param(
                    &format!("ost.OSS.ost_io.{param}"),
                    &format!("start b{i} jobid={{bench.{i}}} {limit}"),
                )
                .await
                .unwrap();
        }
    }
    Server { ossd, _tmp: tmp }
}

async fn clients(addr: SocketAddr) -> Vec<OssClient> {
    let mut out = Vec::new();
    for _ in 0..CLIENTS {
        out.push(OssClient::connect(addr, KEY, Role::Client).await.unwrap());
    }
    out
}

/// One iteration: every client does its RPCs, all clients concurrently.
async fn round(clients: &mut [OssClient], write: bool, size: usize, data: &[u8], base: u64) {
    let mut tasks = Vec::new();
    for (i, c) in clients.iter_mut().enumerate() {
        let id = ident(i);
        tasks.push(async move {
            for k in 0..RPCS_PER_CLIENT {
                let offset = ((base + k) * size as u64) % OBJECT_WINDOW_BYTES;
                if write {
                    c.write(&id, 0, i as u64 + 1, offset, &data[..size], false)
                        .await
                        .unwrap();
                } else {
                    c.read(&id, 0, i as u64 + 1, offset, size as u64)
                        .await
                        .unwrap();
                }
            }
        });
    }
    futures_util::future::join_all(tasks).await;
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let data = vec![0x5au8; 1 << 20];
    let mut group = c.benchmark_group("oss_sched");
    for (name, write, size) in [
        ("write_4k", true, 4096usize),
        ("write_1m", true, 1 << 20),
        ("read_1m", false, 1 << 20),
    ] {
        group.throughput(Throughput::Bytes(
            CLIENTS as u64 * RPCS_PER_CLIENT * size as u64,
        ));
        for policy in POLICIES {
            let server = rt.block_on(start(policy));
            let mut cl = rt.block_on(clients(server.ossd.local_addr()));
            // Reads need the objects to exist over the whole window.
            rt.block_on(async {
                if write {
                    return;
                }
                for base in (0..OBJECT_WINDOW_BYTES / size as u64).step_by(RPCS_PER_CLIENT as usize)
                {
                    round(&mut cl, true, size, &data, base).await;
                }
            });
            let mut base = 0u64;
            group.bench_function(BenchmarkId::new(name, policy), |b| {
                b.iter(|| {
                    rt.block_on(round(&mut cl, write, size, &data, base));
                    base += RPCS_PER_CLIENT;
                })
            });
            drop(cl);
            drop(server);
        }
    }
    group.finish();
}

/// Criterion measures one policy after the other, so drift on a noisy 2-core machine lands in
/// the comparison. This pass alternates a FIFO server and the policy's server round by round and
/// reports the median of the per-pair time ratios, which cancels slow drift.
fn paired(rounds: usize) {
    let rt = Runtime::new().unwrap();
    let data = vec![0x5au8; 1 << 20];
    println!("paired rounds (policy time / fifo time, median of {rounds} pairs):");
    for policy in &POLICIES[1..] {
        for (name, write, size) in [
            ("write_4k", true, 4096usize),
            ("write_1m", true, 1 << 20),
            ("read_1m", false, 1 << 20),
        ] {
            let fifo = rt.block_on(start("fifo"));
            let other = rt.block_on(start(policy));
            let mut cf = rt.block_on(clients(fifo.ossd.local_addr()));
            let mut co = rt.block_on(clients(other.ossd.local_addr()));
            let mut ratios = Vec::with_capacity(rounds);
            let mut base = 0u64;
            rt.block_on(async {
                if !write {
                    for b in
                        (0..OBJECT_WINDOW_BYTES / size as u64).step_by(RPCS_PER_CLIENT as usize)
                    {
                        round(&mut cf, true, size, &data, b).await;
                        round(&mut co, true, size, &data, b).await;
                    }
                }
                for i in 0..rounds {
                    // Alternate which goes first so neither always meets a warm cache.
                    let mut t = [0f64; 2];
                    for k in 0..2 {
                        let which = (i + k) % 2;
                        let cl = if which == 0 { &mut cf } else { &mut co };
                        let start = std::time::Instant::now();
                        round(cl, write, size, &data, base).await;
                        t[which] = start.elapsed().as_secs_f64();
                    }
                    base += RPCS_PER_CLIENT;
                    ratios.push(t[1] / t[0]);
                }
            });
            ratios.sort_by(f64::total_cmp);
            println!(
                "  {policy} {name}: median {:.4}  (quartiles {:.4} .. {:.4})",
                ratios[rounds / 2],
                ratios[rounds / 4],
                ratios[3 * rounds / 4]
            );
        }
    }
}

criterion_group!(benches, bench);

/// `--fixed-work POLICY WORKLOAD ROUNDS`: runs exactly ROUNDS rounds of one workload against one
/// server and exits, untimed, so `valgrind --tool=callgrind` can count the instructions
/// (`scripts/bench-oss-sched.sh` subtracts two such runs to get instructions per round, which,
/// unlike wall-clock time, the other work on a noisy machine does not change).
fn fixed_work(policy: &str, workload: &str, rounds: u64) {
    let (write, size) = match workload {
        "write_4k" => (true, 4096usize),
        "write_1m" => (true, 1 << 20),
        "read_1m" => (false, 1 << 20),
        other => panic!("unknown workload {other:?}: write_4k, write_1m or read_1m"),
    };
    let rt = Runtime::new().unwrap();
    let data = vec![0x5au8; 1 << 20];
    let server = rt.block_on(start(policy));
    let mut cl = rt.block_on(clients(server.ossd.local_addr()));
    rt.block_on(async {
        if !write {
            for b in (0..OBJECT_WINDOW_BYTES / size as u64).step_by(RPCS_PER_CLIENT as usize) {
                round(&mut cl, true, size, &data, b).await;
            }
        }
        for i in 0..rounds {
            round(&mut cl, write, size, &data, i * RPCS_PER_CLIENT).await;
        }
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--fixed-work") {
        let rounds = args[i + 3].parse().expect("ROUNDS is a number");
        fixed_work(&args[i + 1], &args[i + 2], rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo test --benches` runs this binary in test mode; skip the long paired pass there.
    if !std::env::args().any(|a| a == "--test" || a == "--list") {
        paired(201);
    }
}
