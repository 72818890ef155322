//! iez on the live runtime, end to end: three in-process ossds (two OSTs of 64 MiB each,
//! reporting statistics to the MDS every 100 ms), the MDS and a FUSE mount recording iez's
//! trace; `pfsqos iez train` and `pfsqos getstripe` run as the binary. Another application's
//! data fills OSTs 0 and 1; the workload's first run is placed by the MDS's `iez` placer
//! without a prediction (Lustre's allocator, in its round-robin mode), its second (the same files, after the first
//! run's are removed) by iez's plans, which place around the full OSTs:
//! getstripe shows the planned OSTs and OSTCost (eq. 7) over the OSTs' bytes is lower. The
//! first run is written by a child process of its own job (`PFSQOS_IEZ_TEST_JOB=ior.1`, the
//! mount's `--jobid-var`), so `iez train --job ior.1` keeps its files out of the mount's
//! trace, which also holds the other application's.
//! Needs /dev/fuse and root, like the mount tests. Every wait polls with a deadline.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pfsqos_core::place::cost::ost_cost;
use pfsqos_mds::{Mds, MdsConfig, OssSpec};
use pfsqos_mount::MountConfig;
use pfsqos_ossd::report::ReportConfig;
use pfsqos_ossd::{Ossd, OssdConfig};

const KEY: &[u8] = b"iez-live-test-cluster-key-0123456789";
/// The servers' own key: the statistics reports iez needs are a server role, which only a
/// server holding it may take.
const SERVER_KEY: &[u8] = b"iez-live-test-server-key-0123456789";
const MIB: u64 = 1 << 20;
const WAIT_MAX: Duration = Duration::from_secs(60);
const FILES: usize = 6;
/// The environment variable the mount reads job ids from, and the first run's job.
const JOB_VAR: &str = "PFSQOS_IEZ_TEST_JOB";
const JOB: &str = "ior.1";

fn pfsqos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pfsqos"))
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT_MAX;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mounted(mnt: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = mnt.to_string_lossy();
    info.lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|p| p == want))
}

/// Bytes of objects on each OST (the OSTs' used bytes, as the ossds report them).
fn ost_bytes(ost_dirs: &[PathBuf]) -> Vec<f64> {
    ost_dirs
        .iter()
        .map(|d| {
            fs::read_dir(d.join("objects"))
                .map(|r| {
                    r.filter_map(|e| e.ok()?.metadata().ok())
                        .map(|m| m.len())
                        .sum::<u64>()
                })
                .unwrap_or(0) as f64
        })
        .collect()
}

fn write_file(path: &Path, bytes: u64) {
    let mut f = fs::File::create(path).unwrap();
    let block = vec![0x5au8; MIB as usize];
    for _ in 0..bytes / MIB {
        f.write_all(&block).unwrap();
    }
    f.sync_all().unwrap();
}

/// OST indices of a file, from `pfsqos getstripe`'s object table, and its placed_by line.
fn getstripe(path: &Path) -> (Vec<u32>, String) {
    let out = pfsqos().arg("getstripe").arg(path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let osts = text
        .lines()
        .skip_while(|l| !l.contains("obdidx"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let placed = text
        .lines()
        .find(|l| l.starts_with("placed_by:"))
        .unwrap_or("")
        .to_string();
    (osts, placed)
}

#[test]
fn a_second_run_is_placed_by_iez_and_balances_better_than_round_robin() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: this test needs the FUSE device and root"
    );
    let tmp = tempfile::tempdir().unwrap();
    let key_file = tmp.path().join("cluster.key");
    fs::write(&key_file, KEY).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The ossds need the MDS's address and the MDS theirs: the MDS's socket is bound first
    // and handed to it (`Mds::start_on`), so no other process can take the port meanwhile.
    let mds_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mds_addr = mds_listener.local_addr().unwrap();
    let mut ost_dirs = Vec::new();
    let mut ossds = Vec::new();
    for i in 0..3 {
        let dirs: Vec<PathBuf> = (0..2)
            .map(|k| tmp.path().join(format!("oss{i}-ost{k}")))
            .collect();
        ost_dirs.extend(dirs.clone());
        let mut c = OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            dirs,
            KEY.to_vec(),
            SERVER_KEY.to_vec(),
        );
        c.threads = 2;
        c.report = Some(ReportConfig {
            mds: mds_addr.to_string(),
            report_as: None,
            period: Duration::from_millis(100),
            ost_capacity_bytes: Some(64 * MIB),
        });
        ossds.push(rt.block_on(Ossd::start(c)).unwrap());
    }
    let osses: Vec<OssSpec> = ossds
        .iter()
        .map(|o| OssSpec {
            addr: o.local_addr().to_string(),
            ost_count: 2,
        })
        .collect();
    let mut mc = MdsConfig::new(
        mds_addr,
        tmp.path().join("mds.db"),
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
        osses,
    );
    mc.namespace.default_stripe.stripe_count = 2;
    // iez, with Lustre's allocator for files without a plan kept in its round-robin mode
    // (Lustre's `qos_threshold_rr=100`): the first run's layouts then do not depend on when
    // the first statistics arrive.
    mc.namespace.placer = "iez:qos_threshold_rr=100".into();
    // The MDS shares this process with the ossds and the mount: its load would be theirs.
    mc.mds_load_period = None;
    let mds = rt.block_on(Mds::start_on(mds_listener, mc)).unwrap();

    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let trace_file = tmp.path().join("trace.csv");
    let mut mount_config = MountConfig::new(mnt.clone(), mds_addr.to_string(), KEY.to_vec());
    mount_config.iez_trace = Some(trace_file.clone());
    mount_config.jobid_var = JOB_VAR.to_string();
    let mount = pfsqos_mount::mount(mount_config).unwrap();
    wait_until("the mount", || mounted(&mnt));

    // Another application's 24 MiB on OSTs 0 and 1.
    let other = mnt.join("other");
    pfsqos_mount::lfs::setstripe(&pfsqos_mount::lfs::SetStripe {
        stripe_count: Some(2),
        stripe_size_bytes: Some(MIB),
        stripe_index: Some(0),
        path: other.clone(),
    })
    .unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&other)
        .and_then(|mut f| {
            let block = vec![1u8; MIB as usize];
            (0..24).try_for_each(|_| f.write_all(&block))?;
            f.sync_all()
        })
        .unwrap();
    let prefill = ost_bytes(&ost_dirs);
    assert_eq!(prefill[0] + prefill[1], (24 * MIB) as f64);

    // First run: round robin, traced, written by a process of job `ior.1` (paths are
    // arguments of the fixed script, never part of it).
    fs::create_dir(mnt.join("run")).unwrap();
    let status = Command::new("sh")
        .args([
            "-c",
            "for f; do head -c 4194304 /dev/zero > \"$f\" || exit 1; done",
            "sh",
        ])
        .args((0..FILES).map(|k| mnt.join(format!("run/f{k}"))))
        .env(JOB_VAR, JOB)
        .status()
        .unwrap();
    assert!(status.success());
    for k in 0..FILES {
        fs::File::open(mnt.join(format!("run/f{k}")))
            .and_then(|f| f.sync_all())
            .unwrap();
    }
    let rr_bytes = ost_bytes(&ost_dirs);
    let rr_cost = ost_cost(&rr_bytes).unwrap();
    for k in 0..FILES {
        let (_, placed) = getstripe(&mnt.join(format!("run/f{k}")));
        assert_eq!(placed, "", "no prediction yet: Lustre's allocator");
    }
    // The run's outputs are removed before the next run; the MDS destroys their objects.
    for k in 0..FILES {
        fs::remove_file(mnt.join(format!("run/f{k}"))).unwrap();
    }
    wait_until("the first run's objects to be destroyed", || {
        ost_bytes(&ost_dirs) == prefill
    });
    // Statistics measured after the destroys: two more reports from every OSS (each ossd
    // measures its next report only after the previous was answered).
    let seen = mds.with_namespace(|ns| ns.iez_reports_per_oss());
    wait_until("fresh statistics", || {
        let now = mds.with_namespace(|ns| ns.iez_reports_per_oss());
        now.iter().zip(&seen).all(|(n, s)| *n >= s + 2)
    });

    // The trace, as an operator fetches it (rewritten within a second while it changes):
    // every file created through the mount, each with its job.
    let job_rows = |t: &str| {
        t.lines()
            .filter(|l| l.ends_with(&format!(",{JOB}")))
            .count()
    };
    wait_until("the trace's six files of the job", || {
        fs::read_to_string(&trace_file)
            .map(|t| job_rows(&t) == FILES)
            .unwrap_or(false)
    });
    let trace = fs::read_to_string(&trace_file).unwrap();
    assert!(
        trace.lines().count() > FILES + 1,
        "the other file too: {trace}"
    );
    for l in trace.lines().filter(|l| l.ends_with(&format!(",{JOB}"))) {
        assert!(l.starts_with("/run/f"), "{l}");
        assert!(l.ends_with(&format!(",{},2,0,{JOB}", 4 * MIB)), "{l}");
    }
    let out = pfsqos()
        .args(["iez", "train"])
        .arg(&trace_file)
        .args(["--job", JOB, "--mds", &mds_addr.to_string(), "--key-file"])
        .arg(&key_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains(&format!(
            "6 predicted files of \"{JOB}\" loaded; 6 placed by iez now"
        )),
        "{stdout}"
    );
    let rows = mds.with_namespace(|ns| ns.iez_predictions().unwrap());
    assert_eq!(rows.len(), FILES);

    // Second run: the same files, placed by iez.
    for k in 0..FILES {
        write_file(&mnt.join(format!("run/f{k}")), 4 * MIB);
    }
    for k in 0..FILES {
        let (osts, placed) = getstripe(&mnt.join(format!("run/f{k}")));
        let row = rows
            .iter()
            .find(|r| r.path == format!("/run/f{k}"))
            .unwrap();
        assert_eq!(placed, "placed_by: iez");
        assert_eq!(osts, row.planned.as_ref().unwrap().osts, "f{k}");
    }
    let iez_bytes = ost_bytes(&ost_dirs);
    let iez_cost = ost_cost(&iez_bytes).unwrap();
    assert_eq!(
        iez_bytes.iter().sum::<f64>(),
        rr_bytes.iter().sum::<f64>(),
        "the same bytes in both runs"
    );
    eprintln!("OSTCost: round robin {rr_cost:.3} {rr_bytes:?}, iez {iez_cost:.3} {iez_bytes:?}");
    assert!(
        iez_cost < rr_cost,
        "OSTCost iez {iez_cost:.3} ({iez_bytes:?}) round robin {rr_cost:.3} ({rr_bytes:?})"
    );
    let c = mds.with_namespace(|ns| ns.iez_counters());
    assert_eq!((c.placed, c.fallbacks()), (FILES as u64, 0));
    assert_eq!(c.reports_refused, 0);

    mount.unmount();
    rt.block_on(async {
        mds.shutdown().await;
        for o in ossds {
            o.shutdown().await;
        }
    });
}

/// `pfsqos iez train` refuses bad traces with the line and reason, exit code 2, and prints
/// the predictions without --mds.
#[test]
fn train_reads_traces_as_data_and_names_bad_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.csv");
    fs::write(
        &good,
        "file,bytes_written,stripe_count,rank\n/run/a,4194304,2,0\n/run/b,4194304,2,1\n",
    )
    .unwrap();
    let out = pfsqos()
        .args(["iez", "train", "--app", "ior"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("/run/a,4194304,2\n/run/b,4194304,2\n"),
        "{text}"
    );
    for (body, what) in [
        ("/a,1,2\n", "line 1: expected"),
        ("/a,-5,2,0\n", "bytes_written"),
        ("/a,99999999999999999999,2,0\n", "bytes_written"),
        ("/a,10,0,0\n", "stripe_count 0"),
        ("/a,10,2,x\n", "rank"),
        ("relative,10,2,0\n", "start with '/'"),
        ("", "no files"),
    ] {
        let f = tmp.path().join("bad.csv");
        fs::write(&f, body).unwrap();
        let out = pfsqos()
            .args(["iez", "train", "--app", "ior"])
            .arg(&f)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{body:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{body:?}: {err}");
    }
}

/// The mount's trace names each file's job: `pfsqos iez train --job ID` keeps that job's
/// files (a job id with a comma or a percent sign included), refuses a job the trace does not
/// hold and a trace without jobs, and names the application after the job.
#[test]
fn train_keeps_one_jobs_files() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace.csv");
    fs::write(
        &trace,
        "file,bytes_written,stripe_count,rank,job\n\
         /run/a,4194304,2,0,ior.1\n\
         /other/x,1048576,1,0,cp.0\n\
         /run/b,4194304,2,1,ior.1\n\
         /odd/c,2097152,1,0,a%2Cb%25\n",
    )
    .unwrap();
    let train = |extra: &[&str]| {
        pfsqos()
            .args(["iez", "train"])
            .arg(&trace)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = train(&["--job", "ior.1"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.ends_with("file,predicted_bytes,stripe_count\n/run/a,4194304,2\n/run/b,4194304,2\n"),
        "{text}"
    );
    let out = train(&["--job", "a,b%"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .ends_with("\n/odd/c,2097152,1\n"));
    // Every file without --job, with a note that the trace holds several jobs.
    let out = train(&["--app", "all"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 6);
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds files of 3 jobs"));
    // A job the trace does not hold: the jobs it does, as data.
    let out = train(&["--job", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no files of job \"nope\""), "{err}");
    assert!(err.contains("\"cp.0\", \"ior.1\""), "{err}");
    // Neither --app nor --job: a usage error.
    let out = train(&[]);
    assert!(!out.status.success());
    // A trace without the job column cannot be filtered.
    let old = tmp.path().join("old.csv");
    fs::write(&old, "/run/a,4194304,2,0\n").unwrap();
    let out = pfsqos()
        .args(["iez", "train", "--job", "ior.1"])
        .arg(&old)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("names no jobs"));
}
