//! The Prometheus endpoints of a real ossd and mds on loopback: values match what clients did,
//! TBF rule rates appear once started, and bad HTTP requests get errors without hurting the
//! daemon.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::common::{KEY, SERVER_KEY};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid};
use pfsqos_mds::{Mds, MdsConfig};
use pfsqos_metrics::REQUEST_HEAD_BYTES_MAX;
use pfsqos_ossd::{Ossd, OssdConfig};
use pfsqos_wire::client::{Identity, MdsClient, OssClient};
use pfsqos_wire::mds::{Owner, ROOT_INO};
use pfsqos_wire::protocol::Role;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn ident(job: &str) -> Identity {
    Identity {
        job: JobId::new(job).unwrap(),
        uid: 1000,
        gid: 1000,
        nid: Nid::ipv4(
            10,
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

/// Sends raw bytes, returns the status code and the body.
async fn http(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).await.unwrap();
    let text = String::from_utf8(resp).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head:?}"));
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("a Content-Length")
        .parse()
        .unwrap();
    if !request.starts_with(b"HEAD") {
        assert_eq!(body.len(), len, "Content-Length matches the body");
    }
    (status, body.to_string())
}

/// Scrapes `/metrics` and returns `series -> value` (series = name and labels as printed).
async fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let (status, body) = http(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("series value");
            (series.to_string(), value.parse().unwrap())
        })
        .collect()
}

/// Scrapes `/metrics` as promtool's users do (`Accept: text/plain;version=0.0.4`) and runs
/// `promtool check metrics` on the answer; prints SKIP where promtool is not installed.
async fn lint(addr: SocketAddr) {
    let (status, body) = http(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain;version=0.0.4\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    match pfsqos_metrics::promtool_check(&body) {
        None => pfsqos_testkit::skip(
            "the metrics lint (promtool check metrics)",
            "promtool is not installed (Debian: apt-get install prometheus)",
        ),
        Some(verdict) => verdict.unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ossd_metrics_follow_the_io_and_the_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = vec![tmp.path().join("ost0"), tmp.path().join("ost1")];
    let mut cfg = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dirs,
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    cfg.fsname = "testfs".into();
    cfg.threads = 2;
    cfg.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    let ossd = Ossd::start(cfg).await.unwrap();
    let m = ossd.metrics_addr().expect("metrics run");

    let mut c = OssClient::connect(ossd.local_addr(), KEY, Role::Client)
        .await
        .unwrap();
    let j1 = ident("j1");
    let data = vec![7u8; 100_000];
    for i in 0..3u64 {
        c.write(&j1, 1, 42, i * 100_000, &data, false)
            .await
            .unwrap();
    }
    assert_eq!(c.read(&j1, 1, 42, 0, 50_000).await.unwrap().len(), 50_000);
    // A job id with a quote must come out escaped, not break the format.
    c.write(&ident("a\"b"), 0, 1, 0, &data[..10], false)
        .await
        .unwrap();

    let v = scrape(m).await;
    let get = |k: &str| *v.get(k).unwrap_or_else(|| panic!("no {k} in {v:#?}"));
    assert_eq!(
        get(r#"pfsqos_ost_job_write_bytes_total{ost="testfs-OST0001",job="j1"}"#),
        300_000.0
    );
    assert_eq!(
        get(r#"pfsqos_ost_job_read_bytes_total{ost="testfs-OST0001",job="j1"}"#),
        50_000.0
    );
    assert_eq!(
        get(r#"pfsqos_ost_job_rpcs_total{ost="testfs-OST0001",job="j1",op="write"}"#),
        3.0
    );
    assert_eq!(
        get(r#"pfsqos_ost_job_rpcs_total{ost="testfs-OST0001",job="j1",op="read"}"#),
        1.0
    );
    assert_eq!(
        // Labelled as job_stats prints it without the quotes (`"a\x22b"`), as the Lustre
        // exporters label it; the backslash escaped for the text format.
        get(r#"pfsqos_ost_job_write_bytes_total{ost="testfs-OST0000",job="a\\x22b"}"#),
        10.0
    );
    assert_eq!(
        get(r#"pfsqos_ost_served_bytes_total{ost="testfs-OST0001"}"#),
        350_000.0
    );
    assert_eq!(
        get(r#"pfsqos_ost_served_rpcs_total{ost="testfs-OST0001"}"#),
        4.0
    );
    assert_eq!(get(r#"pfsqos_ost_queue_rpcs{ost="testfs-OST0000"}"#), 0.0);
    // No peer, one CPT, FIFO: nothing synchronized, every counter there at 0.
    assert_eq!(get(r#"pfsqos_oss_sync_total{counter="reports_out"}"#), 0.0);
    assert_eq!(
        get(r#"pfsqos_oss_sync_total{counter="handshakes_failed"}"#),
        0.0
    );
    assert!(
        !v.keys().any(|k| k.starts_with("pfsqos_oss_tbf_rule_rate")),
        "no rule while FIFO runs"
    );

    let mut lctl = OssClient::connect(ossd.local_addr(), SERVER_KEY, Role::Lctl)
        .await
        .unwrap();
    lctl.set_param("ost.OSS.ost_io.nrs_policies", "tbf jobid")
        .await
        .unwrap();
    lctl.set_param(
        "ost.OSS.ost_io.nrs_tbf_rule",
        "start j1_rule jobid={j1} rate=250",
    )
    .await
    .unwrap();
    let v = scrape(m).await;
    assert_eq!(
        v[r#"pfsqos_oss_tbf_rule_rate_rpcs_per_second{rule="j1_rule"}"#],
        250.0
    );
    assert!(v.contains_key(r#"pfsqos_oss_tbf_rule_rate_rpcs_per_second{rule="default"}"#));
    // The bulk budget's guards are exported (nothing has stalled here).
    for counter in ["share_waits", "untracked_connections", "reply_timeouts"] {
        assert_eq!(
            v[&format!("pfsqos_oss_bulk_total{{counter=\"{counter}\"}}")],
            0.0,
            "{counter}"
        );
    }
    lctl.set_param("ost.OSS.ost_io.nrs_tbf_rule", "change j1_rule rate=40")
        .await
        .unwrap();
    let v = scrape(m).await;
    assert_eq!(
        v[r#"pfsqos_oss_tbf_rule_rate_rpcs_per_second{rule="j1_rule"}"#],
        40.0
    );
    // The live endpoint's answer, every family filled by the I/O above, passes Prometheus' lint.
    lint(m).await;

    // Bad requests get an error status; the endpoint and the daemon carry on.
    assert_eq!(http(m, b"GET /nothing HTTP/1.1\r\n\r\n").await.0, 404);
    assert_eq!(http(m, b"POST /metrics HTTP/1.1\r\n\r\n").await.0, 405);
    assert_eq!(http(m, b"garbage\r\n\r\n").await.0, 400);
    assert_eq!(http(m, b"GET /metrics HTTP/9\r\n\r\n").await.0, 400);
    let huge = vec![b'a'; REQUEST_HEAD_BYTES_MAX + 10];
    assert_eq!(http(m, &huge).await.0, 431);
    // A client that connects and sends nothing does not block others.
    let _idle = TcpStream::connect(m).await.unwrap();
    let (status, body) = http(m, b"HEAD /metrics HTTP/1.0\r\n\r\n").await;
    assert_eq!((status, body.as_str()), (200, ""));
    assert!(scrape(m)
        .await
        .contains_key(r#"pfsqos_ost_served_rpcs_total{ost="testfs-OST0001"}"#));
    c.write(&j1, 0, 5, 0, &data, false).await.unwrap();
    ossd.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mds_metrics_count_operations_and_inodes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = MdsConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        tmp.path().join("mds.db"),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
        vec!["127.0.0.1:7001:2".parse().unwrap()],
    );
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    let mds = Mds::start(config).await.unwrap();
    let m = mds.metrics_addr().unwrap();
    let mut c = MdsClient::connect(mds.local_addr(), KEY).await.unwrap();
    let o = Owner {
        mode: 0o644,
        uid: 1,
        gid: 1,
    };
    let d = c.mkdir(ROOT_INO, b"d", o).await.unwrap();
    c.create(d.ino, b"f1", o, None).await.unwrap();
    c.create(d.ino, b"f2", o, None).await.unwrap();
    assert!(c.create(d.ino, b"f2", o, None).await.is_err());
    c.lookup(d.ino, b"f1").await.unwrap();
    let v = scrape(m).await;
    assert_eq!(v[r#"pfsqos_mds_ops_total{op="create"}"#], 3.0);
    assert_eq!(v[r#"pfsqos_mds_ops_total{op="mkdir"}"#], 1.0);
    assert_eq!(v[r#"pfsqos_mds_ops_total{op="lookup"}"#], 1.0);
    assert_eq!(v[r#"pfsqos_mds_ops_total{op="unlink"}"#], 0.0);
    // Root, d, f1, f2.
    assert_eq!(v["pfsqos_mds_inodes"], 4.0);
    lint(m).await;
    mds.shutdown().await;
}
