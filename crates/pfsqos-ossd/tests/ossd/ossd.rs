//! End-to-end tests of a real ossd on loopback (ephemeral ports, in-process). Synchronization
//! is explicit: `Ossd::start` returns once listening, every client call returns once served.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::common::{KEY, SERVER_KEY};
use pfsqos_core::jobstats::{parse_lctl_job_stats, OstCounter};
use pfsqos_core::model::{JobId, LNet, NetKind, Nid};
use pfsqos_core::sched::tbf::TbfRuleListing;
use pfsqos_ops::lctl::{self, LctlArgs, LctlCommand};
use pfsqos_ossd::{Ossd, OssdConfig};
use pfsqos_wire::client::{ClientError, Identity, OssClient};
use pfsqos_wire::conn::ConnError;
use pfsqos_wire::protocol::{Errno, ProtocolError, Role, BULK_CHUNK_BYTES};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Fixture {
    ossd: Ossd,
    dirs: Vec<PathBuf>,
    key_file: PathBuf,
    _tmp: tempfile::TempDir,
}

async fn start(osts: usize, tweak: impl FnOnce(&mut OssdConfig)) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..osts)
        .map(|i| tmp.path().join(format!("ost{i}")))
        .collect();
    let key_file = tmp.path().join("key");
    // `lctl` is an administrator's: it proves the servers' own key.
    std::fs::write(&key_file, [SERVER_KEY, b"\n"].concat()).unwrap();
    let mut cfg = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dirs.clone(),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    cfg.fsname = "testfs".into();
    cfg.threads = 4;
    tweak(&mut cfg);
    Fixture {
        ossd: Ossd::start(cfg).await.unwrap(),
        dirs,
        key_file,
        _tmp: tmp,
    }
}

fn ident(job: &str) -> Identity {
    Identity {
        job: JobId::new(job).unwrap(),
        uid: 1000,
        gid: 1000,
        nid: Nid::ipv4(
            192,
            168,
            1,
            2,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        ),
        job_nodes: None,
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn sha(d: &[u8]) -> [u8; 32] {
    Sha256::digest(d).into()
}

async fn client(f: &Fixture, role: Role) -> OssClient {
    crate::common::connect(f.ossd.local_addr(), role).await
}

async fn lctl_out(f: &Fixture, command: LctlCommand) -> (u8, String, String) {
    let args = LctlArgs {
        server: f.ossd.local_addr(),
        key_file: f.key_file.clone(),
        command,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = lctl::run(&args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn get(names: &[&str]) -> LctlCommand {
    LctlCommand::GetParam {
        names: names.iter().map(|s| s.to_string()).collect(),
        flags: Default::default(),
    }
}

fn set(a: &str) -> LctlCommand {
    LctlCommand::SetParam {
        assignments: vec![a.to_string()],
        values_only: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_written_are_read_back_intact() {
    let f = start(2, |_| {}).await;
    let mut c = client(&f, Role::Client).await;
    assert_eq!(c.server().ost_count, 2);
    let id = ident("dd.500");
    let cases: [(u32, u64, u64, usize); 4] = [
        (0, 1, 0, 1),
        (0, 2, 4096, 1 << 20),
        (1, 3, 0, BULK_CHUNK_BYTES + 5), // two bulk frames
        (1, 4, 123, 64 << 20),           // the largest RPC: 8 bulk frames
    ];
    for (k, &(ost, obj, off, len)) in cases.iter().enumerate() {
        let data = pattern(len, k as u8);
        c.write(&id, ost, obj, off, &data, k % 2 == 0)
            .await
            .unwrap();
        let back = c.read(&id, ost, obj, off, len as u64).await.unwrap();
        assert_eq!(sha(&back), sha(&data), "object {obj}");
        // And it is really in the OST directory's object file.
        let on_disk = std::fs::read(
            f.dirs[ost as usize]
                .join("objects")
                .join(format!("{obj:016x}")),
        )
        .unwrap();
        assert_eq!(sha(&on_disk[off as usize..]), sha(&data));
    }
    // Reads stop at the end of the object; punch truncates; sync succeeds.
    assert_eq!(c.read(&id, 0, 1, 0, 100).await.unwrap().len(), 1);
    c.punch(&id, 0, 2, 10).await.unwrap();
    assert_eq!(c.read(&id, 0, 2, 0, 100).await.unwrap(), vec![0; 10]);
    c.sync(&id, 0, 2).await.unwrap();
    // An object never written reads as a hole (no bytes), not ENOENT, and the
    // read does not create it.
    assert_eq!(c.read(&id, 0, 99, 0, 4096).await.unwrap(), Vec::<u8>::new());
    assert!(!f.dirs[0]
        .join("objects")
        .join(format!("{:016x}", 99))
        .exists());
    // An OST index out of range is a protocol violation: the connection is closed...
    match c.read(&id, 2, 1, 0, 1).await {
        Err(ClientError::Conn(_)) => {}
        other => panic!("{other:?}"),
    }
    // ...and the job_stats of OST0001 counted two writes and two reads of that job.
    let mut admin = client(&f, Role::Lctl).await;
    let p = admin
        .get_param("obdfilter.testfs-OST0001.job_stats")
        .await
        .unwrap();
    let text = format!("{}={}", p[0].name, p[0].value);
    let parsed = parse_lctl_job_stats(&text).unwrap();
    let e = &parsed[0].1[0];
    assert_eq!(e.job_id.as_str(), "dd.500");
    assert_eq!(e.counter(OstCounter::WriteBytes).samples, 2);
    assert_eq!(
        e.counter(OstCounter::WriteBytes).sum,
        (BULK_CHUNK_BYTES + 5 + (64 << 20)) as u64
    );
    assert_eq!(e.counter(OstCounter::Read).samples, 2);
    assert_eq!(e.write_hist.0[26], 1, "the 64 MiB write is in bucket 64M");
    f.ossd.shutdown().await;
}

/// The job_stats of thousands of jobs is larger than one frame: values travel as bulk data
/// and `get_param` fetches them name by name, so `lctl` still prints all of it, and it parses
/// back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_stats_larger_than_a_frame_reach_lctl() {
    use pfsqos_wire::protocol::FRAME_LEN_BYTES_MAX;
    const JOBS: usize = 4_000;
    let f = start(2, |_| {}).await;
    let mut c = client(&f, Role::Client).await;
    for j in 0..JOBS {
        c.write(&ident(&format!("job{j:05}.1000")), 0, 1, 0, b"x", false)
            .await
            .unwrap();
    }
    c.write(&ident("other.1000"), 1, 2, 0, b"y", false)
        .await
        .unwrap();
    let mut admin = client(&f, Role::Lctl).await;
    let p = admin.get_param("obdfilter.*.job_stats").await.unwrap();
    assert_eq!(p.len(), 2);
    assert!(
        p[0].value.len() > FRAME_LEN_BYTES_MAX,
        "{} bytes: too few jobs to need more than one frame",
        p[0].value.len()
    );
    let (code, out, err) = lctl_out(&f, get(&["obdfilter.*.job_stats"])).await;
    assert_eq!(code, 0, "{err}");
    let parsed = parse_lctl_job_stats(&out).unwrap();
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed[0].1.len(), JOBS);
    assert_eq!(parsed[1].1.len(), 1);
    assert_eq!(parsed[0].1[JOBS - 1].job_id.as_str(), "job03999.1000");
    assert_eq!(parsed[0].1[JOBS - 1].counter(OstCounter::WriteBytes).sum, 1);
    f.ossd.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dsfq_runs_live_with_weights_and_tunables_through_lctl() {
    let f = start(1, |_| {}).await;
    // Before the policy runs, its files answer ENODEV (the owner is not running).
    let (code, _, err) = lctl_out(&f, get(&["ost.OSS.ost_io.nrs_dsfq_weight"])).await;
    assert_eq!(code, 19, "lctl exits with ENODEV: {err}");
    let (code, _, err) = lctl_out(&f, set("ost.OSS.ost_io.nrs_policies=dsfq jobid")).await;
    assert_eq!(code, 0, "{err}");
    for a in [
        "ost.OSS.ost_io.nrs_dsfq_weight=start big jobid={app1} weight=4",
        "ost.OSS.ost_io.nrs_dsfq_threshold=0",
        "ost.OSS.ost_io.nrs_dsfq_sync=layout",
    ] {
        let (code, _, err) = lctl_out(&f, set(a)).await;
        assert_eq!(code, 0, "{a}: {err}");
    }
    // A job id cannot close the condition: the weight parser refuses it.
    let (code, _, err) = lctl_out(
        &f,
        set("ost.OSS.ost_io.nrs_dsfq_weight=start bad jobid={x}&uid={0} weight=0"),
    )
    .await;
    assert_eq!(code, 22, "lctl exits with EINVAL: {err}");
    assert!(
        err.starts_with("error: set_param: setting ost.OSS.ost_io.nrs_dsfq_weight=start bad ")
            && err.contains(": Invalid argument\n  ossd: "),
        "{err}"
    );
    // Requests are served under it.
    let mut c = client(&f, Role::Client).await;
    let id = ident("app1");
    for n in 0..8u64 {
        c.write(&id, 0, 1, n * 4096, &[1; 4096], false)
            .await
            .unwrap();
    }
    let (code, out, err) = lctl_out(
        &f,
        get(&[
            "ost.OSS.ost_io.nrs_dsfq_weight",
            "ost.OSS.ost_io.nrs_dsfq_sync",
            "ost.OSS.ost_io.nrs_dsfq_threshold",
        ]),
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("ost.OSS.ost_io.nrs_dsfq_weight=\nregular_requests:\nCPT 0:\n"),
        "{out}"
    );
    // The rule has weight 4 and app1's flow is bound to it (ref 1) on the regular head.
    assert!(out.contains("CPT 0:\nbig jobid={app1} 4, ref 1\n"), "{out}");
    assert!(out.contains("reg_sync:layout"), "{out}");
    assert!(out.contains("reg_threshold:0"), "{out}");
    assert!(!out.contains("bad"), "{out}");
    // A wildcard lists the running policy's files, not those of policies that are not started.
    let (code, out, err) = lctl_out(&f, get(&["ost.OSS.ost_io.*"])).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ost.OSS.ost_io.nrs_dsfq_flows="), "{out}");
    assert!(
        !out.contains("nrs_tbf_rule") && !out.contains("nrs_sfqd_"),
        "{out}"
    );
    f.ossd.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_tbf_rule_limits_its_job_only() {
    let f = start(1, |_| {}).await;
    let (code, _, err) = lctl_out(&f, set("ost.OSS.ost_io.nrs_policies=tbf jobid")).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = lctl_out(
        &f,
        set("ost.OSS.ost_io.nrs_tbf_rule=start slow jobid={slow} rate=5"),
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "ost.OSS.ost_io.nrs_tbf_rule=start slow jobid={slow} rate=5\n"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let mut slow = client(&f, Role::Client).await;
    let slow_stop = stop.clone();
    let started = Instant::now();
    let slow_task = tokio::spawn(async move {
        let id = ident("slow");
        let mut n = 0u64;
        while !slow_stop.load(Ordering::Relaxed) {
            slow.write(&id, 0, 1, n * 4096, &[1; 4096], false)
                .await
                .unwrap();
            n += 1;
        }
        n
    });
    let mut fast = client(&f, Role::Client).await;
    let id = ident("fast");
    const FAST_RPCS: u64 = 200;
    for n in 0..FAST_RPCS {
        fast.write(&id, 0, 2, n * 4096, &[2; 4096], false)
            .await
            .unwrap();
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let counts = f.ossd.dequeue_counts();
    let fast_n = counts[&JobId::new("fast").unwrap()];
    let slow_n = counts
        .get(&JobId::new("slow").unwrap())
        .copied()
        .unwrap_or(0);
    assert_eq!(fast_n, FAST_RPCS);
    // TBF lets through at most depth (3) + rate x elapsed; a margin of 2 covers the request
    // that was in flight when the clock was read.
    let bound = 3.0 + 5.0 * elapsed_s + 2.0;
    assert!(
        (slow_n as f64) <= bound,
        "slow job got {slow_n} RPCs in {elapsed_s:.3} s (bound {bound:.1})"
    );
    stop.store(true, Ordering::Relaxed);

    // The listing shows the rule and parses back with the core's listing parser.
    let (code, out, _) = lctl_out(&f, get(&["ost.OSS.ost_io.nrs_tbf_rule"])).await;
    assert_eq!(code, 0);
    assert!(out.starts_with("ost.OSS.ost_io.nrs_tbf_rule=\nregular_requests:\nCPT 0:\n"));
    let listing = TbfRuleListing::parse(&out).unwrap();
    let rules = &listing.regular[0].rules;
    assert_eq!(rules[0].name, "slow");
    assert_eq!(rules[0].conditions, "jobid={slow}");
    assert_eq!(rules[0].rate_rpcs_per_s, 5);
    assert_eq!(rules[0].refs, 1);
    assert_eq!(rules.last().unwrap().name, "default");
    assert!(listing.high_priority.is_some());

    // job_stats through lctl parse back with the core's parser.
    let (code, out, _) = lctl_out(&f, get(&["obdfilter.*.job_stats"])).await;
    assert_eq!(code, 0);
    let all = parse_lctl_job_stats(&out).unwrap();
    assert_eq!(all[0].0, "obdfilter.testfs-OST0000.job_stats");
    let fast_entry = all[0]
        .1
        .iter()
        .find(|e| e.job_id.as_str() == "fast")
        .unwrap();
    assert_eq!(
        fast_entry.counter(OstCounter::WriteBytes).samples,
        FAST_RPCS
    );
    assert_eq!(fast_entry.write_hist.0[12], FAST_RPCS, "4K bucket");

    // nrs_policies shows tbf jobid started.
    let (_, out, _) = lctl_out(&f, get(&["ost.OSS.ost_io.nrs_policies"])).await;
    assert!(out.starts_with("ost.OSS.ost_io.nrs_policies=\n\nregular_requests:\n"));
    assert!(out.contains("  - name: tbf jobid\n    state: started\n"));
    assert!(out.contains("high_priority_requests:\n"));

    // Clearing one job, an unknown job (EINVAL), then everything.
    let (code, _, _) = lctl_out(&f, set("obdfilter.testfs-OST0000.job_stats=fast")).await;
    assert_eq!(code, 0);
    let (code, _, err) = lctl_out(&f, set("obdfilter.testfs-OST0000.job_stats=nope")).await;
    assert_eq!(code, 22, "lctl exits with EINVAL");
    assert!(err.contains(": Invalid argument\n"), "{err}");
    let served_slow = slow_task.await.unwrap();
    assert!(served_slow >= 1);
    let (_, _, _) = lctl_out(&f, set("obdfilter.*.job_stats=clear")).await;
    let (_, out, _) = lctl_out(&f, get(&["obdfilter.*.job_stats"])).await;
    assert_eq!(out, "obdfilter.testfs-OST0000.job_stats=\n");
    f.ossd.shutdown().await;
}

async fn assert_still_serving(f: &Fixture) {
    let mut c = client(f, Role::Client).await;
    let id = ident("ok.1");
    c.write(&id, 0, 77, 0, b"still here", true).await.unwrap();
    assert_eq!(c.read(&id, 0, 77, 0, 64).await.unwrap(), b"still here");
}

/// Reads until the server closes; true if it did (EOF or reset) rather than timing out.
async fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = vec![0; 1 << 16];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_closes_only_that_connection() {
    let f = start(1, |_| {}).await;
    let addr = f.ossd.local_addr();

    // Arbitrary bytes instead of a hello.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[0, 0, 0, 5, 1, 2, 3, 4, 5, 9, 9])
        .await
        .unwrap();
    assert!(closed_by_server(&mut s).await);
    assert_still_serving(&f).await;

    // A frame header announcing 4 GiB.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0xff, 0]).await.unwrap();
    assert!(closed_by_server(&mut s).await);
    assert_still_serving(&f).await;

    // Wrong protocol version: a clear rejection.
    match OssClient::connect_with_version(addr, KEY, Role::Client, 99).await {
        Err(ConnError::Protocol(ProtocolError::Rejected(r))) => {
            assert!(r.contains("protocol version 99 not supported"), "{r}")
        }
        other => panic!("{:?}", other.err()),
    }
    // Bad key: refused, and the key never crossed the wire (only MACs do).
    match OssClient::connect(addr, b"wrong-key-wrong-key-wrong", Role::Lctl).await {
        Err(ConnError::Protocol(ProtocolError::Rejected(r))) => {
            assert!(r.contains("authentication failed"), "{r}")
        }
        other => panic!("{:?}", other.err()),
    }
    assert_still_serving(&f).await;

    // Invalid rule text: Lustre's errno, and the connection stays usable.
    let mut admin = client(&f, Role::Lctl).await;
    admin
        .set_param("ost.OSS.ost_io.nrs_policies", "tbf jobid")
        .await
        .unwrap();
    for (cmd, errno) in [
        ("start bad!name jobid={x}", Errno::EINVAL),
        ("start waytoolongrulename1 jobid={x}", Errno::ENAMETOOLONG),
        ("stop default", Errno::EPERM),
        ("change ghost rate=5", Errno::ENOENT),
    ] {
        match admin.set_param("ost.OSS.ost_io.nrs_tbf_rule", cmd).await {
            Err(ClientError::Remote(e)) => assert_eq!(e.errno, errno, "{cmd}: {e}"),
            other => panic!("{cmd}: {other:?}"),
        }
    }
    let (code, _, err) = lctl_out(&f, set("ost.OSS.ost_io.nrs_tbf_rule=start a b c")).await;
    assert_eq!(code, 22, "lctl exits with EINVAL");
    assert!(
        err.starts_with(
            "error: set_param: setting ost.OSS.ost_io.nrs_tbf_rule=start a b c: Invalid argument\n"
        ),
        "{err}"
    );
    let (code, _, err) = lctl_out(&f, get(&["no.such.param"])).await;
    assert_eq!(code, 2, "lctl exits with ENOENT");
    assert_eq!(
        err,
        "error: get_param: param_path 'no.such.param': No such file or directory\n"
    );
    // An empty or missing value is refused before anything is sent (EINVAL), ending the
    // command; `NAME VALUE` is one assignment, as in lctl.
    let two = |a: &[&str]| LctlCommand::SetParam {
        assignments: a.iter().map(|s| s.to_string()).collect(),
        values_only: false,
    };
    let (code, out, err) = lctl_out(&f, two(&["obdfilter.*.job_stats=", "x=1"])).await;
    assert_eq!((code, out.as_str()), (22, ""));
    assert_eq!(
        err,
        "error: set_param: setting obdfilter.*.job_stats: Invalid argument\n"
    );
    let (code, out, err) = lctl_out(&f, two(&["obdfilter.*.job_stats", "clear"])).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "obdfilter.testfs-OST0000.job_stats=clear\n");
    // A name that matches nothing: both of lctl's lines, ENOENT.
    let (code, _, err) = lctl_out(&f, two(&["no.such", "1"])).await;
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: set_param: param_path 'no.such': No such file or directory\n\
         error: set_param: setting 'no.such'='1': No such file or directory\n"
    );
    let (code, _, err) = lctl_out(
        &f,
        LctlCommand::ListParam {
            patterns: vec!["no.such".into()],
            flags: Default::default(),
        },
    )
    .await;
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: list_param: param_path 'no.such': No such file or directory\n\
         error: list_param: listing 'no.such': No such file or directory\n"
    );
    // nrs_policies, nrs_tbf_rule and job_nodes.
    assert_eq!(admin.get_param("ost.OSS.ost_io.*").await.unwrap().len(), 3);
    let interval = "obdfilter.testfs-OST0000.job_cleanup_interval";
    assert_eq!(admin.get_param(interval).await.unwrap()[0].value, "600\n");
    match admin.set_param(interval, "soon").await {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EINVAL),
        other => panic!("{other:?}"),
    }
    admin.set_param(interval, "0").await.unwrap();
    assert_eq!(admin.get_param(interval).await.unwrap()[0].value, "0\n");

    // A client may not set parameters; an lctl may not do I/O.
    let mut c = client(&f, Role::Client).await;
    match c.set_param("obdfilter.*.job_stats", "clear").await {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EPERM),
        other => panic!("{other:?}"),
    }
    match admin.read(&ident("x"), 0, 1, 0, 1).await {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EPERM),
        other => panic!("{other:?}"),
    }

    // Garbage after a good handshake: the server closes that connection.
    for garbage in [vec![], vec![0xff; 3], vec![2, 0, 200, 200, 200]] {
        let mut c = client(&f, Role::Mds).await;
        c.send_raw_frame(garbage).await.unwrap();
        assert!(c.next_frame().await.is_err());
    }
    // Seeded pseudo-random garbage, before and after a handshake.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..16 {
        let len = (next() % 300) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if round % 2 == 0 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let mut framed = (len as u32).to_be_bytes().to_vec();
            framed.extend(&bytes);
            s.write_all(&framed).await.unwrap();
            assert!(closed_by_server(&mut s).await);
        } else {
            let mut c = client(&f, Role::Mds).await;
            c.send_raw_frame(bytes).await.unwrap();
            // Either a clean reply to a frame that happened to decode, or a close.
            let _ = c.next_frame().await;
        }
    }
    assert_still_serving(&f).await;

    // A write whose bulk frame has the wrong size.
    let mut c = client(&f, Role::Client).await;
    let req = pfsqos_wire::protocol::encode(&pfsqos_wire::protocol::WireRequest::Io {
        tag: 1,
        io: pfsqos_wire::protocol::WireIo {
            op: pfsqos_wire::protocol::IoOp::Write,
            ost: 0,
            object: 5,
            offset: 0,
            length: 10,
            sync: false,
            tags: pfsqos_wire::protocol::WireTags {
                job: "j".into(),
                uid: 0,
                gid: 0,
                nid: pfsqos_wire::protocol::WireNid {
                    addr: 0,
                    net_kind: 0,
                    net_num: 0,
                },
                job_nodes: None,
            },
        },
    });
    c.send_raw_frame(req).await.unwrap();
    c.send_raw_frame(vec![0; 11]).await.unwrap();
    assert!(c.next_frame().await.is_err());
    assert_still_serving(&f).await;
    f.ossd.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_queue_answers_ebusy() {
    // One I/O thread held by a 1-RPC/s rule and a queue of one: the third request must bounce.
    let f = start(1, |c| {
        c.threads = 1;
        c.queue_depth_max = 1;
    })
    .await;
    let mut admin = client(&f, Role::Lctl).await;
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
    // Use up the bucket's depth (3 tokens) so the next request waits about a second.
    let mut c = client(&f, Role::Client).await;
    for _ in 0..3 {
        c.write(&ident("hold"), 0, 1, 0, b"x", false).await.unwrap();
    }
    let waiter = {
        let mut c = client(&f, Role::Client).await;
        tokio::spawn(async move { c.write(&ident("hold"), 0, 1, 0, b"y", false).await })
    };
    // Poll (bounded) until the waiting request is queued, via the policies file.
    let mut queued = false;
    for _ in 0..1000 {
        let p = admin
            .get_param("ost.OSS.ost_io.nrs_policies")
            .await
            .unwrap();
        if p[0]
            .value
            .contains("name: tbf jobid\n    state: started\n    fallback: no\n    queued: 1 ")
        {
            queued = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(queued, "the throttled request never showed as queued");
    match c.write(&ident("other"), 0, 2, 0, b"z", false).await {
        Err(ClientError::Remote(e)) => assert_eq!(e.errno, Errno::EBUSY),
        other => panic!("{other:?}"),
    }
    waiter.await.unwrap().unwrap();
    f.ossd.shutdown().await;
}

/// The server answers pipelined requests by tag; a throttled request does not hold back the
/// replies of requests the scheduler lets through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_by_tag() {
    use pfsqos_wire::conn::{client_handshake, Reader, Writer};
    use pfsqos_wire::protocol::{
        decode_reply, IoOp, ReplyBody, WireIo, WireNid, WireRequest, WireTags, PROTOCOL_VERSION,
    };
    let f = start(1, |c| c.threads = 2).await;
    let mut admin = client(&f, Role::Lctl).await;
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
    let stream = TcpStream::connect(f.ossd.local_addr()).await.unwrap();
    let (r, w) = stream.into_split();
    let (mut r, mut w) = (Reader::new(r), Writer::new(w));
    client_handshake(&mut r, &mut w, KEY, Role::Client, PROTOCOL_VERSION)
        .await
        .unwrap();
    let req = |tag: u64, job: &str| WireRequest::Io {
        tag,
        io: WireIo {
            op: IoOp::Write,
            ost: 0,
            object: tag,
            offset: 0,
            length: 3,
            sync: false,
            tags: WireTags {
                job: job.into(),
                uid: 0,
                gid: 0,
                nid: WireNid {
                    addr: 0,
                    net_kind: 0,
                    net_num: 0,
                },
                job_nodes: None,
            },
        },
    };
    // Four `hold` writes (depth 3: the fourth waits about a second), then one `free` write.
    for tag in 1..=4 {
        w.msg_with_bulk(&req(tag, "hold"), b"abc").await.unwrap();
    }
    w.msg_with_bulk(&req(5, "free"), b"abc").await.unwrap();
    let mut order = Vec::new();
    for _ in 0..5 {
        let reply = decode_reply(&r.frame().await.unwrap()).unwrap();
        assert_eq!(reply.result, Ok(ReplyBody::Done));
        order.push(reply.tag);
    }
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [1, 2, 3, 4, 5]);
    assert_eq!(
        *order.last().unwrap(),
        4,
        "the throttled request is answered last: {order:?}"
    );
    f.ossd.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_are_closed() {
    let f = start(1, |c| c.connections_max = 1).await;
    let mut first = client(&f, Role::Client).await;
    // Refused once authenticated, with the reason (not while in the pre-auth budget).
    match OssClient::connect(f.ossd.local_addr(), KEY, Role::Client).await {
        Err(ConnError::Protocol(ProtocolError::Rejected(reason))) => {
            assert!(reason.contains("too many"), "{reason}")
        }
        other => panic!("second connection: {:?}", other.err()),
    }
    // The first one is unaffected, and its slot is reused once it is gone.
    let id = ident("a");
    first.write(&id, 0, 1, 0, b"x", false).await.unwrap();
    drop(first);
    let mut ok = false;
    for _ in 0..1000 {
        if OssClient::connect(f.ossd.local_addr(), KEY, Role::Client)
            .await
            .is_ok()
        {
            ok = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(ok, "the freed connection slot was never reused");
    f.ossd.shutdown().await;
}

/// Peers without the key cannot lock authenticated clients out. 256 idle sockets
/// (the connection limit) from one address take only that address's share of the pre-auth
/// budget (the rest are closed at once and counted), an authenticated client connecting after
/// them is served, and the idle ones are closed at the handshake deadline. Counts are
/// asserted as sums, not as which socket was admitted, so a slow machine cannot fail it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_unauthenticated_sockets_do_not_lock_out_clients() {
    use pfsqos_wire::admission::HANDSHAKES_PER_ADDR_MAX;
    let f = start(1, |c| c.connections_max = 256).await;
    let addr = f.ossd.local_addr();
    let mut idle = Vec::new();
    for _ in 0..256 {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        idle.push(s.connect(addr).await.unwrap());
    }
    // Accepted in order, so all 256 are through admission before this client's connection.
    tokio::time::timeout(std::time::Duration::from_secs(60), assert_still_serving(&f))
        .await
        .expect("an authenticated client was served");
    // The first 16 were admitted; later ones are refused while those hold their slots (on a
    // slow machine a few more may be admitted once the first ones time out).
    assert!(f.ossd.admission_counters().refused_handshakes_per_address > 0);
    // The sockets admitted to the handshake are closed by the server at its deadline.
    let mut closed = 0;
    for s in &mut idle {
        if tokio::time::timeout(std::time::Duration::from_secs(60), closed_by_server(s))
            .await
            .unwrap_or(false)
        {
            closed += 1;
        }
    }
    assert_eq!(closed, 256);
    // Each idle socket was either refused at once or admitted and timed out.
    let c = f.ossd.admission_counters();
    assert_eq!(
        c.refused_handshakes_per_address + c.handshakes_timed_out,
        256
    );
    assert!(c.handshakes_timed_out >= HANDSHAKES_PER_ADDR_MAX as u64);
    // Refusals are logged at most a few times, the rest counted.
    assert!(f.ossd.admission_counters().log_lines_suppressed > 0);
    f.ossd.shutdown().await;
}

/// An unauthenticated first frame announcing 8 MiB is refused as its length
/// arrives, not after its body (which would be buffered) nor at the handshake deadline: the
/// peer sends the length and a little of the body, then waits; the server closes, counting a
/// failed handshake and no timeout, and serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_8_mib_frame_is_refused_before_it_is_read() {
    let f = start(1, |_| {}).await;
    let mut s = TcpStream::connect(f.ossd.local_addr()).await.unwrap();
    s.write_all(&(8u32 << 20).to_be_bytes()).await.unwrap();
    s.write_all(&[0u8; 1000]).await.unwrap();
    assert!(closed_by_server(&mut s).await);
    assert_eq!(f.ossd.admission_counters().handshakes_timed_out, 0);
    assert_eq!(f.ossd.sync_stats().handshakes_failed, 1);
    assert_still_serving(&f).await;
    f.ossd.shutdown().await;
}

/// Another client's address on loopback (the ossd gives each peer address its own share of
/// the bulk budget; the bundled client connects from 127.0.0.1).
const OTHER_CLIENT: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

/// An authenticated raw client connection from `from` (a loopback address), having sent the
/// I/O request `op` of `length` bytes at offset 0 of `object` on OST 0.
async fn raw_request(
    addr: std::net::SocketAddr,
    from: std::net::IpAddr,
    op: pfsqos_wire::protocol::IoOp,
    object: u64,
    length: u64,
) -> (
    pfsqos_wire::conn::Reader<tokio::net::tcp::OwnedReadHalf>,
    tokio::net::tcp::OwnedWriteHalf,
) {
    use pfsqos_wire::conn::{client_handshake, Reader, Writer};
    use pfsqos_wire::protocol::*;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::new(from, 0)).unwrap();
    let (r, mut w) = socket.connect(addr).await.unwrap().into_split();
    let mut reader = Reader::new(r);
    {
        let mut writer = Writer::new(&mut w);
        client_handshake(
            &mut reader,
            &mut writer,
            KEY,
            Role::Client,
            PROTOCOL_VERSION,
        )
        .await
        .unwrap();
        send_io(&mut writer, 1, op, object, length).await;
    }
    (reader, w)
}

/// Sends one I/O request (no bulk) on OST 0, tagged `tag`.
async fn send_io(
    writer: &mut pfsqos_wire::conn::Writer<&mut tokio::net::tcp::OwnedWriteHalf>,
    tag: u64,
    op: pfsqos_wire::protocol::IoOp,
    object: u64,
    length: u64,
) {
    use pfsqos_wire::protocol::*;
    writer
        .msg(&WireRequest::Io {
            tag,
            io: WireIo {
                op,
                ost: 0,
                object,
                offset: 0,
                length,
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
        .await
        .unwrap();
}

/// A stalled sender's connection, as [`stalled_writer`] leaves it.
type Stalled = (
    pfsqos_wire::conn::Reader<tokio::net::tcp::OwnedReadHalf>,
    tokio::net::tcp::OwnedWriteHalf,
);

/// Checks that no stalled connection was answered or closed, then closes them all: every
/// byte of the budget they held comes back, and the daemon stops.
async fn release_stalled(f: Fixture, mut stalled: Vec<Stalled>) {
    for (reader, _) in &mut stalled {
        let pending = tokio::time::timeout(std::time::Duration::ZERO, reader.frame()).await;
        assert!(
            pending.is_err(),
            "a stalled connection was answered or closed"
        );
    }
    drop(stalled);
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() == 0
    })
    .await;
    f.ossd.shutdown().await;
}

/// An authenticated client connection from `from` that announced a write of `announced`
/// bytes and sent the first bulk frame's length and `sent` bytes of it, then stalls.
async fn stalled_writer(
    addr: std::net::SocketAddr,
    from: std::net::IpAddr,
    object: u64,
    announced: u64,
    sent: usize,
) -> (
    pfsqos_wire::conn::Reader<tokio::net::tcp::OwnedReadHalf>,
    tokio::net::tcp::OwnedWriteHalf,
) {
    use pfsqos_wire::protocol::IoOp;
    let (reader, mut w) = raw_request(addr, from, IoOp::Write, object, announced).await;
    let first = announced.min(BULK_CHUNK_BYTES as u64) as u32;
    w.write_all(&first.to_be_bytes()).await.unwrap();
    w.write_all(&vec![0x5a; sent]).await.unwrap();
    (reader, w)
}

/// Polls `cond` every 10 ms until it holds; panics after `deadline`.
async fn poll_until(deadline: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + deadline;
    while !cond() {
        assert!(
            Instant::now() < end,
            "condition not reached within {deadline:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// One stalled client cannot hold the OSS-wide bulk budget. 16 connections that
/// announce a 64 MiB write (16 x 64 MiB = the whole 1 GiB budget) and send 1 MiB of it hold
/// one bulk frame each, not what they announced; another client's small write is served while
/// all 16 are still stalled (none has been answered or closed). The bulk idle timeout is set
/// far out so that it plays no part, and the client's share is the whole budget, so that only
/// the frame-by-frame reservation is tested here (the share:
/// `stalled_connections_of_one_client_hold_at_most_its_share`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bulk_senders_do_not_stop_other_writes() {
    let f = start(1, |c| {
        c.in_flight_bytes_max = 1 << 30;
        c.bulk_share_per_client_bytes = Some(1 << 30);
        c.bulk_idle_timeout = std::time::Duration::from_secs(600);
    })
    .await;
    let addr = f.ossd.local_addr();
    let mut stalled = Vec::new();
    for i in 0..16 {
        stalled.push(stalled_writer(addr, OTHER_CLIENT, 1000 + i, 64 << 20, 1 << 20).await);
    }
    // Every stalled write has reserved what it is receiving.
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() >= 16 << 20
    })
    .await;
    assert!(
        f.ossd.bulk_bytes_reserved() <= 16 * BULK_CHUNK_BYTES as u64,
        "{} bytes reserved for 16 MiB received",
        f.ossd.bulk_bytes_reserved()
    );
    assert_still_serving(&f).await;
    // All 16 are still stalled: no reply and no close.
    release_stalled(f, stalled).await;
}

/// A write's sender that stops mid-bulk is closed after the bulk idle timeout and
/// its reservation returned; the daemon serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_idle_mid_bulk_is_closed_and_its_budget_returned() {
    let f = start(1, |c| {
        c.bulk_idle_timeout = std::time::Duration::from_millis(200)
    })
    .await;
    let (mut reader, _w) =
        stalled_writer(f.ossd.local_addr(), OTHER_CLIENT, 7, 16 << 20, 4096).await;
    assert!(reader.frame().await.is_err(), "closed without a reply");
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() == 0
    })
    .await;
    assert_still_serving(&f).await;
    f.ossd.shutdown().await;
}

/// Many stalled connections of one client hold at most that client's share of the
/// bulk budget. 128 connections from one address each announce a 64 MiB write and stall after
/// 4 KiB: with frame-by-frame reservation alone they would hold 128 x 8 MiB, the whole 1 GiB
/// budget, and every other client's writes would wait for the idle timeout (set far out
/// here). With the default share (a quarter of the budget, 256 MiB counted at the announced
/// length), four of them start and hold one frame each; the other 124 wait for their own
/// client's share, holding nothing. A client at another address is served meanwhile, and none
/// of the stalled connections has been answered or closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_connections_of_one_client_hold_at_most_its_share() {
    const STALLED: u64 = 128;
    let f = start(1, |c| {
        c.bulk_idle_timeout = std::time::Duration::from_secs(600);
    })
    .await;
    let share = 1u64 << 28;
    let started = share / (64 << 20);
    let addr = f.ossd.local_addr();
    let mut stalled = Vec::new();
    for i in 0..STALLED {
        stalled.push(stalled_writer(addr, OTHER_CLIENT, 2000 + i, 64 << 20, 4096).await);
    }
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_counters().share_waits >= STALLED - started
            && f.ossd.bulk_bytes_reserved() >= started * BULK_CHUNK_BYTES as u64
    })
    .await;
    assert_eq!(f.ossd.bulk_counters().share_waits, STALLED - started);
    assert_eq!(
        f.ossd.bulk_bytes_reserved(),
        started * BULK_CHUNK_BYTES as u64,
        "one frame for each write that started"
    );
    assert!(f.ossd.bulk_bytes_reserved() <= share);
    tokio::time::timeout(std::time::Duration::from_secs(60), assert_still_serving(&f))
        .await
        .expect("a client at another address was served");
    release_stalled(f, stalled).await;
}

/// The share limits only what a client can make the ossd wait on: a client alone may fill the
/// budget beyond its share with writes whose bulk has arrived and that wait for the device
/// (an OST paced to 16 MiB/s, one I/O thread). Eight 16 MiB writes (twice the 64 MiB share)
/// on eight connections are all received and held at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_alone_may_hold_more_than_its_share_with_received_writes() {
    let share = 64u64 << 20;
    let f = start(1, |c| {
        c.in_flight_bytes_max = 256 << 20;
        c.bulk_share_per_client_bytes = Some(share);
        c.ceiling_bytes_per_s = Some(16 << 20);
        c.threads = 1;
    })
    .await;
    let mut writers = Vec::new();
    for i in 0..8u64 {
        let mut c = client(&f, Role::Client).await;
        writers.push(tokio::spawn(async move {
            let data = pattern(16 << 20, i as u8);
            let _ = c.write(&ident("big.1"), 0, 100 + i, 0, &data, false).await;
        }));
    }
    // Reserved bytes beyond the share: received writes the share no longer counts.
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() > share
    })
    .await;
    for w in &writers {
        w.abort();
    }
    f.ossd.shutdown().await;
}

/// A client that sends reads and never reads its socket cannot hold its connection forever.
/// Its 64 MiB read's reply fills the socket buffers and stops. After `reply_idle_timeout` without
/// progress the connection is closed (counted), the budget comes back, and a write of another
/// client, waiting meanwhile, is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_replies_is_closed_and_its_budget_returned() {
    use pfsqos_wire::protocol::IoOp;
    let budget = 64u64 << 20;
    let f = start(1, |c| {
        c.in_flight_bytes_max = budget;
        c.reply_idle_timeout = std::time::Duration::from_secs(1);
    })
    .await;
    let id = ident("data.1");
    let mut c = client(&f, Role::Client).await;
    c.write(&id, 0, 5, 0, &pattern(budget as usize, 9), false)
        .await
        .unwrap();
    let (_reader, mut w) =
        raw_request(f.ossd.local_addr(), OTHER_CLIENT, IoOp::Read, 5, budget).await;
    // A second read waits for the budget behind the first.
    send_io(
        &mut pfsqos_wire::conn::Writer::new(&mut w),
        2,
        IoOp::Read,
        5,
        budget,
    )
    .await;
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() == budget || f.ossd.bulk_counters().reply_timeouts > 0
    })
    .await;
    // The other client's write needs budget that the unread reply holds.
    tokio::time::timeout(std::time::Duration::from_secs(60), assert_still_serving(&f))
        .await
        .expect("another client was served once the unread reply's budget came back");
    assert_eq!(f.ossd.bulk_counters().reply_timeouts, 1);
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() == 0
    })
    .await;
    f.ossd.shutdown().await;
}

/// Stalled readers do not stop other clients. 64 connections from 16 addresses (4 each, so
/// that every client's share admits all its reads) each ask for a 64 MiB read (64 x 64 MiB =
/// four times the 1 GiB budget) and never read their socket. Each holds one piece of the
/// budget ([`READ_PIECE_BYTES`]), not its announced length, so another client's 64 MiB
/// write and read are served at once while all 64 are still connected. Holding the announced
/// length, 16 of them took the whole budget and everyone else waited for the reply idle
/// timeout (set far out here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_readers_do_not_stop_other_clients() {
    use pfsqos_ossd::READ_PIECE_BYTES;
    use pfsqos_wire::protocol::IoOp;
    const STALLED: u64 = 64;
    const LEN: u64 = 64 << 20;
    let f = start(1, |c| {
        c.reply_idle_timeout = std::time::Duration::from_secs(600);
    })
    .await;
    let id = ident("data.1");
    let mut c = client(&f, Role::Client).await;
    let data = pattern(LEN as usize, 3);
    c.write(&id, 0, 5, 0, &data, false).await.unwrap();
    let addr = f.ossd.local_addr();
    let mut stalled = Vec::new();
    for i in 0..STALLED {
        let from = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 1, 10 + (i % 16) as u8));
        stalled.push(raw_request(addr, from, IoOp::Read, 5, LEN).await);
    }
    // Every read has reserved its budget (or, holding its announced length, the budget ran out).
    let held_max = STALLED * READ_PIECE_BYTES as u64;
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() >= held_max
    })
    .await;
    assert!(
        f.ossd.bulk_bytes_reserved() <= held_max,
        "{} bytes of the budget held by {STALLED} stalled reads",
        f.ossd.bulk_bytes_reserved()
    );
    let other = async {
        let mut c = client(&f, Role::Client).await;
        let id = ident("other.1");
        c.write(&id, 0, 6, 0, &data, false).await.unwrap();
        let back = c.read(&id, 0, 6, 0, LEN).await.unwrap();
        assert!(back == data, "the other client read back what it wrote");
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), other)
        .await
        .expect("another client was served while the stalled reads held their replies");
    assert_eq!(
        f.ossd.bulk_counters().reply_timeouts,
        0,
        "no stalled read was closed"
    );
    drop(stalled);
    poll_until(std::time::Duration::from_secs(60), || {
        f.ossd.bulk_bytes_reserved() == 0
    })
    .await;
    f.ossd.shutdown().await;
}

/// Pages of `path` in the page cache (mincore over a read-only mapping, which faults nothing in).
fn resident_pages(path: &std::path::Path) -> usize {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let page = 4096;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: a fresh read-only shared mapping of `len` bytes of an open file, unmapped
    // before return; `vec` has one byte per page of it, as mincore asks.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(addr, libc::MAP_FAILED);
        assert_eq!(libc::mincore(addr, len, vec.as_mut_ptr()), 0);
        libc::munmap(addr, len);
    }
    vec.iter().filter(|&&v| v & 1 == 1).count()
}

/// Whole aligned writes go straight to the device: none of their pages is left in the OST's
/// page cache. Unaligned writes, and every write of an ossd with `buffered_writes`, go through
/// the page cache. The bytes read back are those written either way, also where an aligned
/// write lands on bytes an unaligned one left dirty in the page cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aligned_writes_bypass_the_page_cache_unless_buffered() {
    for buffered in [false, true] {
        let f = start(1, |c| c.buffered_writes = buffered).await;
        let mut c = client(&f, Role::Client).await;
        let id = ident("dd.0");
        let object = |o: u64| f.dirs[0].join("objects").join(format!("{o:016x}"));
        let aligned = pattern(1 << 20, 1);
        c.write(&id, 0, 1, 4096, &aligned, false).await.unwrap();
        let unaligned = pattern(10_000, 2);
        c.write(&id, 0, 2, 100, &unaligned, false).await.unwrap();
        // Object 3: dirty unaligned bytes, then an aligned write over part of them.
        c.write(&id, 0, 3, 0, &pattern(3 * 4096 + 7, 3), false)
            .await
            .unwrap();
        let over = pattern(2 * 4096, 4);
        c.write(&id, 0, 3, 4096, &over, false).await.unwrap();

        let pages = |o| resident_pages(&object(o));
        if buffered {
            assert_eq!(
                pages(1),
                256,
                "buffered: the aligned write is cached (page 0 is a hole)"
            );
        } else {
            assert_eq!(
                pages(1),
                0,
                "direct: nothing of the aligned write is cached"
            );
        }
        assert_eq!(pages(2), 3, "the unaligned write is cached either way");

        let back = c.read(&id, 0, 1, 0, 4096 + (1 << 20)).await.unwrap();
        assert_eq!(back[..4096], [0; 4096]);
        assert_eq!(sha(&back[4096..]), sha(&aligned));
        let back = c.read(&id, 0, 2, 100, 10_000).await.unwrap();
        assert_eq!(sha(&back), sha(&unaligned));
        let mut expect = pattern(3 * 4096 + 7, 3);
        expect[4096..3 * 4096].copy_from_slice(&over);
        let back = c.read(&id, 0, 3, 0, 1 << 20).await.unwrap();
        assert_eq!(sha(&back), sha(&expect));
        f.ossd.shutdown().await;
    }
}

/// A ramfs mounted for the length of a test (ramfs refuses `O_DIRECT`); needs root.
struct RamFs(std::ffi::CString);

impl RamFs {
    fn mount(dir: &std::path::Path) -> RamFs {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: NUL-terminated strings that outlive the call; no data argument.
        let rc = unsafe {
            libc::mount(
                c"none".as_ptr(),
                path.as_ptr(),
                c"ramfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        assert_eq!(
            rc,
            0,
            "mounting a ramfs on {} failed ({}): this test needs root",
            dir.display(),
            std::io::Error::last_os_error()
        );
        RamFs(path)
    }
}

impl Drop for RamFs {
    fn drop(&mut self) {
        // SAFETY: a NUL-terminated path; a lazy unmount cannot leave the test's files behind
        // in use.
        unsafe { libc::umount2(self.0.as_ptr(), libc::MNT_DETACH) };
    }
}

/// An OST on a file system that refuses `O_DIRECT` still takes whole aligned writes: the
/// ossd falls back to the page cache for that OST, and every byte reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ost_that_refuses_direct_io_falls_back_to_the_page_cache() {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let ram = tmp.path().join("ram");
    std::fs::create_dir(&ram).unwrap();
    let _ramfs = RamFs::mount(&ram);
    let refused = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(ram.join("probe"));
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.raw_os_error()),
        Err(Some(libc::EINVAL)),
        "ramfs refuses O_DIRECT"
    );
    let mut cfg = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![ram.join("ost0")],
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    cfg.threads = 2;
    let ossd = Ossd::start(cfg).await.unwrap();
    let mut c = OssClient::connect(ossd.local_addr(), KEY, Role::Client)
        .await
        .unwrap();
    let id = ident("dd.0");
    let a = pattern(1 << 20, 5);
    let b = pattern(2 << 20, 6);
    c.write(&id, 0, 1, 0, &a, false).await.unwrap();
    c.write(&id, 0, 1, 1 << 20, &b, true).await.unwrap();
    let back = c.read(&id, 0, 1, 0, 3 << 20).await.unwrap();
    assert_eq!(sha(&back), sha(&[a, b].concat()));
    ossd.shutdown().await;
}

/// Idle unauthenticated sockets against `addr`: `per_source` from each of `sources` loopback
/// addresses (127.0.0.2 on), each reopened as soon as the server closes it. Returns the count
/// of the server's closes; the flood ends when the set is dropped.
fn hold_idle_sockets(
    addr: std::net::SocketAddr,
    sources: u8,
    per_source: usize,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Arc<std::sync::atomic::AtomicU64> {
    let closed = Arc::new(std::sync::atomic::AtomicU64::new(0));
    for source in 0..sources {
        let ip = std::net::Ipv4Addr::new(127, 0, 0, 2 + source);
        for _ in 0..per_source {
            let closed = closed.clone();
            tasks.spawn(async move {
                loop {
                    let s = tokio::net::TcpSocket::new_v4().unwrap();
                    s.bind((ip, 0).into()).unwrap();
                    if let Ok(mut conn) = s.connect(addr).await {
                        closed_by_server(&mut conn).await;
                    }
                    closed.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            });
        }
    }
    closed
}

/// Waits (bounded) until the server has closed `n` sockets of a flood.
async fn flood_turned_away(closed: &std::sync::atomic::AtomicU64, n: u64) {
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while closed.load(Ordering::Relaxed) < n {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the flood never filled the pre-auth budget");
}

/// 300 idle unauthenticated sockets from 20 addresses (15 each, under the per-address cap),
/// renewed as they close, fill the whole shared pre-auth budget; `lctl` still gets in 20 times
/// in 20, each on a connection of its own, and the flood's slots are what is given up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_flood_from_many_addresses_does_not_lock_out_lctl() {
    let f = start(1, |c| c.connections_max = 256).await;
    let mut flood = tokio::task::JoinSet::new();
    let closed = hold_idle_sockets(f.ossd.local_addr(), 20, 15, &mut flood);
    flood_turned_away(&closed, 600).await;
    for i in 0..20 {
        let (code, out, err) = lctl_out(&f, get(&["obdfilter.*.job_stats"])).await;
        assert_eq!(code, 0, "lctl {i} of 20 failed: {err}");
        assert!(out.contains("job_stats"), "{out}");
    }
    let c = f.ossd.admission_counters();
    assert!(c.handshakes_evicted > 0, "{c:?}");
    flood.abort_all();
    f.ossd.shutdown().await;
}

/// The same flood against the MDS: three new mounts' first steps (connect, authenticate, read
/// the root) all succeed while it is held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_flood_from_many_addresses_does_not_lock_out_new_mounts() {
    let tmp = tempfile::tempdir().unwrap();
    let config = pfsqos_mds::MdsConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        tmp.path().join("mds.db"),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
        vec!["127.0.0.1:7001:1".parse().unwrap()],
    );
    let mds = pfsqos_mds::Mds::start(config).await.unwrap();
    let mut flood = tokio::task::JoinSet::new();
    let closed = hold_idle_sockets(mds.local_addr(), 20, 15, &mut flood);
    flood_turned_away(&closed, 600).await;
    for i in 0..3 {
        let mut c = pfsqos_wire::client::MdsClient::connect(mds.local_addr(), KEY)
            .await
            .unwrap_or_else(|e| panic!("mount {i} of 3 refused: {e}"));
        c.getattr(pfsqos_wire::mds::ROOT_INO).await.unwrap();
    }
    assert!(mds.admission_counters().handshakes_evicted > 0);
    flood.abort_all();
    mds.shutdown().await;
}
