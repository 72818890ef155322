//! Per-create latency of the MDS's namespace with and without iez (docs/benchmarks.md, "iez"):
//! 3 OSSs x 5 OSTs, `FILES` creates of stripe count 4 into one directory, first with an empty
//! interaction database (round robin), then with a row for every file (iez, planned at load
//! over fresh statistics). Each create is one SQLite transaction with `synchronous=FULL`, so the
//! disk's fsync is part of both figures. Run: `cargo run --release -p pfsqos-mds --example
//! iez_create_latency [DIR]` (DIR: where the databases go; default a temporary directory).

use std::time::Instant;

use pfsqos_mds::{Namespace, NamespaceConfig, OssSpec};
use pfsqos_wire::mds::{IezPrediction, OssReport, OstSpace, Owner, StripeSpec, ROOT_INO};

const FILES: usize = 1000;
const GIB: u64 = 1 << 30;

fn config() -> NamespaceConfig {
    NamespaceConfig {
        fsname: "bench".into(),
        osses: (0..3)
            .map(|i| OssSpec {
                addr: format!("oss{i}:7988"),
                ost_count: 5,
            })
            .collect(),
        default_stripe: StripeSpec {
            stripe_count: 4,
            stripe_size_bytes: 1 << 20,
            start_ost: None,
        },
        inodes_max: 1 << 20,
        placer: "iez".into(),
    }
}

fn run(dir: &std::path::Path, name: &str, with_iez: bool) -> Vec<f64> {
    let mut ns = Namespace::open(&dir.join(name), config()).expect("open");
    let owner = Owner {
        mode: 0o644,
        uid: 0,
        gid: 0,
    };
    let run = ns.mkdir(ROOT_INO, b"run", owner, 1).expect("mkdir").ino;
    let now = 10_000_000_000u64;
    for i in 0..3 {
        ns.report_oss(
            OssReport {
                oss: format!("oss{i}:7988"),
                age_ms: 0,
                osts: vec![
                    OstSpace {
                        total_bytes: 10 * GIB,
                        avail_bytes: 10 * GIB,
                    };
                    5
                ],
                cpu_util_ppm: Some(100_000),
                mem_util_ppm: Some(200_000),
            },
            now,
        )
        .expect("report");
    }
    if with_iez {
        let files: Vec<IezPrediction> = (0..FILES)
            .map(|k| IezPrediction {
                path: format!("/run/f{k}"),
                predicted_bytes: 100 << 20,
                stripe_count: 4,
            })
            .collect();
        let t = Instant::now();
        let (_, planned) = ns.iez_load("bench", &files, now).expect("load");
        println!(
            "load + plan of {FILES} files: {:.1} ms ({planned} planned)",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    let mut lat = Vec::with_capacity(FILES);
    for k in 0..FILES {
        let t = Instant::now();
        ns.create(run, format!("f{k}").as_bytes(), owner, None, now)
            .expect("create");
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let c = ns.iez_counters();
    assert_eq!(c.placed, if with_iez { FILES as u64 } else { 0 });
    lat.sort_by(f64::total_cmp);
    lat
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    for (name, with_iez) in [("round robin", false), ("iez", true)] {
        let lat = run(&dir, &format!("{}.db", with_iez), with_iez);
        let q = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize];
        println!(
            "{name:>11}: create latency median {:.0} us, p90 {:.0} us, p99 {:.0} us",
            q(0.5),
            q(0.9),
            q(0.99)
        );
    }
}
