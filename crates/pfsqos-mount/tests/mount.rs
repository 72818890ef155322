//! POSIX behaviour through `pfsqos mount`: an in-process ossd (2 OSTs) and mds on loopback,
//! the FUSE client mounted on a temporary directory, and plain `std::fs` calls from the test.
//! Needs /dev/fuse and root (mounting); without /dev/fuse the tests fail saying so.
//! Readiness is polled in /proc/self/mountinfo with a deadline; nothing sleeps for
//! correctness.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pfsqos_mds::{Mds, MdsConfig, OssSpec};
use pfsqos_mount::lfs::{self, SetStripe};
use pfsqos_mount::{MountConfig, Mounted};
use pfsqos_ossd::{Ossd, OssdConfig};
use pfsqos_wire::client::OssClient;
use pfsqos_wire::protocol::Role;
use sha2::{Digest, Sha256};

const KEY: &[u8] = b"mount-test-cluster-key-0123456789";
/// The servers' own key: the server roles (`Lctl`, `Mds`, `Oss`) prove it.
const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";
const WAIT_MAX: Duration = Duration::from_secs(60);

struct Cluster {
    mount: Option<Mounted>,
    ossd: Option<Ossd>,
    mds: Option<Mds>,
    rt: tokio::runtime::Runtime,
    mnt: PathBuf,
    ost_dirs: Vec<PathBuf>,
    _tmp: tempfile::TempDir,
}

fn require_fuse() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: the mount tests need the FUSE device (modprobe fuse) and root"
    );
}

fn mounted(mnt: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = mnt.to_string_lossy();
    info.lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|p| p == want))
}

impl Cluster {
    fn start(tune: impl FnOnce(&mut MountConfig)) -> Cluster {
        Cluster::start_with(|_| {}, tune)
    }

    fn start_with(
        tune_ossd: impl FnOnce(&mut OssdConfig),
        tune: impl FnOnce(&mut MountConfig),
    ) -> Cluster {
        require_fuse();
        let tmp = tempfile::tempdir().unwrap();
        let ost_dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("ost{i}"))).collect();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (ossd, mds) = rt.block_on(async {
            let mut oc = OssdConfig::new(
                "127.0.0.1:0".parse().unwrap(),
                ost_dirs.clone(),
                KEY.to_vec(),
                SERVER_KEY.to_vec(),
            );
            oc.threads = 4;
            tune_ossd(&mut oc);
            let ossd = Ossd::start(oc).await.unwrap();
            let oss = OssSpec {
                addr: ossd.local_addr().to_string(),
                ost_count: 2,
            };
            let mc = MdsConfig::new(
                "127.0.0.1:0".parse().unwrap(),
                tmp.path().join("mds.db"),
                KEY.to_vec(),
                SERVER_KEY.to_vec(),
                vec![oss],
            );
            (ossd, Mds::start(mc).await.unwrap())
        });
        let mnt = tmp.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        let mut mc = MountConfig::new(mnt.clone(), mds.local_addr().to_string(), KEY.to_vec());
        tune(&mut mc);
        let m = pfsqos_mount::mount(mc).unwrap();
        let deadline = Instant::now() + WAIT_MAX;
        while !mounted(&mnt) {
            assert!(
                Instant::now() < deadline,
                "{} never appeared in mountinfo",
                mnt.display()
            );
            std::thread::yield_now();
        }
        Cluster {
            mount: Some(m),
            ossd: Some(ossd),
            mds: Some(mds),
            rt,
            mnt,
            ost_dirs,
            _tmp: tmp,
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// A directory whose files stripe over both OSTs in 1 MiB stripes.
    fn mkdir_wide(&self, rel: &str) {
        fs::create_dir(self.p(rel)).unwrap();
        xattr_set(
            &self.p(rel),
            "user.pfsqos.layout",
            b"stripe_count=2 stripe_size=1048576 stripe_offset=-1",
        );
    }

    /// Objects (non-empty files) on OST `i`.
    fn objects(&self, i: usize) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = fs::read_dir(self.ost_dirs[i].join("objects"))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            e.metadata().unwrap().len(),
                        )
                    })
                    .filter(|(_, len)| *len > 0)
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// Every OST's job_stats entries.
    fn job_entries(&self) -> Vec<pfsqos_core::jobstats::JobEntry> {
        let addr = self.ossd.as_ref().unwrap().local_addr();
        let params = self.rt.block_on(async {
            let mut c = OssClient::connect(addr, SERVER_KEY, Role::Lctl)
                .await
                .unwrap();
            c.get_param("obdfilter.*.job_stats").await.unwrap()
        });
        params
            .iter()
            .flat_map(|p| pfsqos_core::jobstats::parse_job_stats(&p.value).unwrap())
            .collect()
    }

    /// (RPCs, bytes, smallest, largest) of one of `job`'s job_stats counters, summed over the
    /// OSTs (smallest `u64::MAX` when there were none).
    fn job_counter(
        &self,
        job: &str,
        counter: pfsqos_core::jobstats::OstCounter,
    ) -> (u64, u64, u64, u64) {
        self.job_entries()
            .iter()
            .filter(|e| e.job_id.as_str() == job)
            .map(|e| e.counter(counter))
            .fold((0, 0, u64::MAX, 0), |(n, s, lo, hi), w| {
                (n + w.samples, s + w.sum, lo.min(w.min), hi.max(w.max))
            })
    }

    /// The job ids in every OST's job_stats, and the raw text (for messages).
    fn job_ids(&self) -> (Vec<String>, String) {
        let addr = self.ossd.as_ref().unwrap().local_addr();
        let params = self.rt.block_on(async {
            let mut c = OssClient::connect(addr, SERVER_KEY, Role::Lctl)
                .await
                .unwrap();
            c.get_param("obdfilter.*.job_stats").await.unwrap()
        });
        let mut ids = Vec::new();
        let mut text = String::new();
        for p in params {
            for e in pfsqos_core::jobstats::parse_job_stats(&p.value).unwrap() {
                ids.push(e.job_id.as_str().to_string());
            }
            text.push_str(&p.value);
        }
        (ids, text)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(m) = self.mount.take() {
            m.unmount();
        }
        let (ossd, mds) = (self.ossd.take(), self.mds.take());
        self.rt.block_on(async {
            if let Some(o) = ossd {
                o.shutdown().await;
            }
            if let Some(m) = mds {
                m.shutdown().await;
            }
        });
    }
}

/// Deterministic bytes (xorshift), so a mix-up of any two pieces shows.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn sha(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// POSIX calls with direct I/O (the default) and with the kernel's page cache.
#[test]
fn posix_file_operations() {
    posix_file_operations_on(Cluster::start(|_| {}));
}

#[test]
fn posix_file_operations_with_the_page_cache() {
    posix_file_operations_on(Cluster::start(|m| m.direct_io = false));
}

fn posix_file_operations_on(c: Cluster) {
    let f = c.p("a.txt");

    // create, write, read back
    fs::write(&f, b"hello, pfsqos").unwrap();
    assert_eq!(fs::read(&f).unwrap(), b"hello, pfsqos");
    assert_eq!(fs::metadata(&f).unwrap().len(), 13);

    // overwrite in the middle
    let mut h = OpenOptions::new().write(true).open(&f).unwrap();
    h.seek(SeekFrom::Start(7)).unwrap();
    h.write_all(b"PFSQOS").unwrap();
    drop(h);
    assert_eq!(fs::read(&f).unwrap(), b"hello, PFSQOS");

    // append
    let mut h = OpenOptions::new().append(true).open(&f).unwrap();
    h.write_all(b"!!").unwrap();
    drop(h);
    assert_eq!(fs::read(&f).unwrap(), b"hello, PFSQOS!!");

    // truncate: shrink, then grow (the hole reads as zeros)
    let h = OpenOptions::new().write(true).open(&f).unwrap();
    h.set_len(5).unwrap();
    assert_eq!(fs::read(&f).unwrap(), b"hello");
    h.set_len(9).unwrap();
    drop(h);
    assert_eq!(fs::read(&f).unwrap(), b"hello\0\0\0\0");

    // a write beyond the end leaves a hole of zeros
    let mut h = OpenOptions::new().write(true).open(&f).unwrap();
    h.seek(SeekFrom::Start(3 << 20)).unwrap();
    h.write_all(b"tail").unwrap();
    // the size is visible to another process of this mount before close
    assert_eq!(fs::metadata(&f).unwrap().len(), (3 << 20) + 4);
    drop(h);
    let all = fs::read(&f).unwrap();
    assert_eq!(all.len(), (3 << 20) + 4);
    assert_eq!(&all[..5], b"hello");
    assert!(all[9..3 << 20].iter().all(|b| *b == 0));
    assert_eq!(&all[3 << 20..], b"tail");

    // rename, including over an existing file
    fs::write(c.p("b.txt"), b"bbb").unwrap();
    fs::rename(&f, c.p("c.txt")).unwrap();
    assert!(!f.exists());
    fs::rename(c.p("b.txt"), c.p("c.txt")).unwrap();
    assert_eq!(fs::read(c.p("c.txt")).unwrap(), b"bbb");
    assert_eq!(names(&c.mnt), vec!["c.txt"]);

    // mkdir, readdir, rmdir (ENOTEMPTY first)
    fs::create_dir(c.p("d")).unwrap();
    for i in 0..5 {
        fs::write(c.p(&format!("d/f{i}")), format!("{i}")).unwrap();
    }
    fs::create_dir(c.p("d/sub")).unwrap();
    assert_eq!(names(&c.p("d")), vec!["f0", "f1", "f2", "f3", "f4", "sub"]);
    let e = fs::remove_dir(c.p("d")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOTEMPTY), "{e}");
    assert_eq!(
        fs::create_dir(c.p("d/sub")).unwrap_err().raw_os_error(),
        Some(libc::EEXIST)
    );
    fs::rename(c.p("d/f0"), c.p("d/sub/moved")).unwrap();
    assert_eq!(fs::read(c.p("d/sub/moved")).unwrap(), b"0");

    // unlink
    fs::remove_file(c.p("c.txt")).unwrap();
    assert_eq!(
        fs::read(c.p("c.txt")).unwrap_err().raw_os_error(),
        Some(libc::ENOENT)
    );
    fs::remove_file(c.p("d/sub/moved")).unwrap();
    fs::remove_dir(c.p("d/sub")).unwrap();
    for i in 1..5 {
        fs::remove_file(c.p(&format!("d/f{i}"))).unwrap();
    }
    fs::remove_dir(c.p("d")).unwrap();
    assert!(names(&c.mnt).is_empty());

    // a directory with more entries than fit one kernel readdir buffer
    fs::create_dir(c.p("many")).unwrap();
    for i in 0..300 {
        File::create(c.p(&format!("many/file-with-a-longish-name-{i:04}"))).unwrap();
    }
    let listed = names(&c.p("many"));
    assert_eq!(listed.len(), 300);
    assert_eq!(listed[299], "file-with-a-longish-name-0299");
}

/// Files created, written and removed through the mount leave no object file on the OSTs
/// (the MDS destroys a removed file's objects; the mount recreates none), and the objects of
/// the file that stays are kept.
#[test]
fn removed_files_leave_no_object_files() {
    const FILES: usize = 100;
    let c = Cluster::start(|_| {});
    c.mkdir_wide("d");
    fs::write(c.p("d/kept"), pattern(3 << 20, 1)).unwrap();
    for k in 0..FILES {
        let path = c.p(&format!("d/f{k}"));
        fs::write(&path, pattern(4096 + k, k as u64)).unwrap();
        if k % 10 == 0 {
            // A rename that replaces a file removes it too.
            fs::write(c.p("d/tmp"), b"replaced").unwrap();
            fs::rename(c.p("d/tmp"), &path).unwrap();
        }
        fs::remove_file(&path).unwrap();
    }
    let stored = || -> usize {
        c.ost_dirs
            .iter()
            .map(|d| fs::read_dir(d.join("objects")).map_or(0, |r| r.count()))
            .sum()
    };
    let deadline = Instant::now() + WAIT_MAX;
    while stored() != 2 {
        assert!(
            Instant::now() < deadline,
            "{} object files left for one file of two stripes",
            stored()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fs::read(c.p("d/kept")).unwrap(), pattern(3 << 20, 1));
}

#[test]
fn large_striped_file_spans_both_osts() {
    let c = Cluster::start(|_| {});
    c.mkdir_wide("wide");
    let data = pattern(40 << 20, 7);
    {
        let mut h = File::create(c.p("wide/big")).unwrap();
        // uneven chunks, so writes straddle stripe boundaries
        for chunk in data.chunks(3 << 18) {
            h.write_all(chunk).unwrap();
        }
        h.sync_all().unwrap();
    }
    let layout = String::from_utf8(xattr_get(&c.p("wide/big"), "user.pfsqos.layout")).unwrap();
    assert!(
        layout.starts_with("stripe_count=2 stripe_size=1048576"),
        "{layout}"
    );
    let mut back = Vec::new();
    File::open(c.p("wide/big"))
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back.len(), data.len());
    assert_eq!(sha(&back), sha(&data));
    // each OST holds one 20 MiB object of it
    for i in 0..2 {
        let objs = c.objects(i);
        assert!(
            objs.iter().any(|(_, len)| *len == 20 << 20),
            "OST{i}: {objs:?}"
        );
    }
    // a read in the middle crossing a stripe boundary
    let mut h = File::open(c.p("wide/big")).unwrap();
    h.seek(SeekFrom::Start((5 << 20) - 100)).unwrap();
    let mut buf = vec![0; 300];
    h.read_exact(&mut buf).unwrap();
    assert_eq!(buf, &data[(5 << 20) - 100..(5 << 20) + 200]);
}

/// After an ossd restart, the first I/O of an idle mount used to try each stale
/// pooled connection in turn with backoff (50 ms doubling), and failed with EIO under a
/// short recovery time although the ossd was back. Now stale connections cost no wait.
#[test]
fn the_first_read_after_an_ossd_restart_does_not_wait_on_stale_connections() {
    let mut c = Cluster::start(|m| m.recovery = Duration::from_millis(300));
    c.mkdir_wide("wide");
    let data = pattern(16 << 20, 11);
    {
        let mut h = File::create(c.p("wide/f")).unwrap();
        h.write_all(&data).unwrap();
        h.sync_all().unwrap();
    }
    // Readers in parallel leave several pooled connections per OST.
    std::thread::scope(|s| {
        for part in data.chunks(2 << 20).enumerate() {
            let path = c.p("wide/f");
            s.spawn(move || {
                let (i, want) = part;
                let mut h = File::open(path).unwrap();
                h.seek(SeekFrom::Start((i as u64) << 21)).unwrap();
                let mut got = vec![0; want.len()];
                h.read_exact(&mut got).unwrap();
                assert!(got == want, "part {i} read back wrong");
            });
        }
    });
    let addr = c.ossd.as_ref().unwrap().local_addr();
    let old = c.ossd.take().unwrap();
    c.rt.block_on(old.shutdown());
    let mut oc = OssdConfig::new(addr, c.ost_dirs.clone(), KEY.to_vec(), SERVER_KEY.to_vec());
    oc.threads = 4;
    c.ossd = Some(c.rt.block_on(Ossd::start(oc)).unwrap());
    let mut back = Vec::new();
    File::open(c.p("wide/f"))
        .unwrap()
        .read_to_end(&mut back)
        .expect("the first read after the ossd restarted");
    assert_eq!(sha(&back), sha(&data));
}

/// A clean stop of the ossd (what `pfsqos down --only oss:0` does: SIGTERM, then
/// `Ossd::shutdown`) while jobs write through the mount, with requests queued at the OSS (one
/// I/O thread, a device ceiling), then a restart on the same address: no writer sees an error
/// (before the fix queued requests were answered ENODEV or EIO, which reached the
/// applications), and every file reads back whole.
#[test]
fn writes_continue_across_a_clean_ossd_stop_and_restart() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let tune_ossd = |o: &mut OssdConfig| {
        o.threads = 1;
        o.ceiling_bytes_per_s = Some(16 << 20);
    };
    let mut c = Cluster::start_with(tune_ossd, |_| {});
    let written = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..4u64)
        .map(|i| {
            let (path, written) = (c.p(&format!("f{i}")), written.clone());
            std::thread::spawn(move || -> std::io::Result<()> {
                let data = pattern(8 << 20, 100 + i);
                let mut h = File::create(path)?;
                for chunk in data.chunks(1 << 20) {
                    h.write_all(chunk)?;
                    written.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
                h.sync_all()
            })
        })
        .collect();
    // Stop while requests wait in the OSS's queue.
    let deadline = Instant::now() + WAIT_MAX;
    while c.ossd.as_ref().unwrap().queued_rpcs() == 0 {
        assert!(Instant::now() < deadline, "no request was ever queued");
        std::thread::yield_now();
    }
    let addr = c.ossd.as_ref().unwrap().local_addr();
    let old = c.ossd.take().unwrap();
    c.rt.block_on(old.shutdown());
    let mut oc = OssdConfig::new(addr, c.ost_dirs.clone(), KEY.to_vec(), SERVER_KEY.to_vec());
    tune_ossd(&mut oc);
    c.ossd = Some(c.rt.block_on(Ossd::start(oc)).unwrap());
    for (i, w) in writers.into_iter().enumerate() {
        w.join()
            .unwrap()
            .unwrap_or_else(|e| panic!("writer {i} saw an error across the clean stop: {e}"));
    }
    assert_eq!(written.load(Ordering::Relaxed), 4 * (8 << 20));
    for i in 0..4u64 {
        let back = fs::read(c.p(&format!("f{i}"))).unwrap();
        assert!(
            sha(&back) == sha(&pattern(8 << 20, 100 + i)),
            "f{i} read back wrong"
        );
    }
}

/// A file whose write failed during an ossd outage (a short recovery time) does not
/// keep the failed write's size at the MDS, and after the ossd is back it reads (as zeros, up
/// to whatever size the kernel still holds), not ENOENT, from a second handle.
#[test]
fn a_write_failed_in_an_ossd_outage_leaves_no_size_and_reads_as_a_hole() {
    let mut c = Cluster::start(|m| m.recovery = Duration::from_millis(300));
    let addr = c.ossd.as_ref().unwrap().local_addr();
    let old = c.ossd.take().unwrap();
    c.rt.block_on(old.shutdown());
    let failed = (|| {
        let mut h = File::create(c.p("f"))?;
        h.write_all(&pattern(1 << 20, 3))?;
        h.sync_all()
    })();
    assert!(failed.is_err(), "the write succeeded with the ossd down");
    let mut oc = OssdConfig::new(addr, c.ost_dirs.clone(), KEY.to_vec(), SERVER_KEY.to_vec());
    oc.threads = 4;
    c.ossd = Some(c.rt.block_on(Ossd::start(oc)).unwrap());
    let mds = c.mds.as_ref().unwrap().local_addr();
    let size = c.rt.block_on(async {
        let mut m = pfsqos_wire::client::MdsClient::connect(mds, KEY)
            .await
            .unwrap();
        m.lookup(pfsqos_wire::mds::ROOT_INO, b"f")
            .await
            .unwrap()
            .size_bytes
    });
    assert_eq!(size, 0, "the MDS recorded the size of a failed write");
    let back = fs::read(c.p("f")).expect("the file reads after the ossd is back");
    assert!(back.iter().all(|&b| b == 0), "bytes no OST acknowledged");
}

/// Sets the size the MDS records for `rel` (under the root) to `size`, behind the mount's back:
/// the state a client leaves when it dies after sending bytes but before recording its size.
fn crash_size_at_mds(c: &Cluster, rel: &[&[u8]], size: u64) {
    use pfsqos_wire::mds::{MdsOp, SetAttr, ROOT_INO};
    let mds = c.mds.as_ref().unwrap().local_addr();
    c.rt.block_on(async {
        let mut m = pfsqos_wire::client::MdsClient::connect(mds, KEY)
            .await
            .unwrap();
        let mut ino = ROOT_INO;
        for name in rel {
            ino = m.lookup(ino, name).await.unwrap().ino;
        }
        let set = SetAttr {
            size_bytes: Some(size),
            ..SetAttr::default()
        };
        m.call(MdsOp::SetAttr { ino, set }).await.unwrap();
    });
}

/// Bytes a crashed client sent beyond the size the MDS recorded never come back.
/// Two files striped over both OSTs hold 4 MiB in their objects while the MDS says 0 bytes;
/// an extending truncate of one and an extending write into the other read as zeros over
/// everything they extend across.
#[test]
fn stale_bytes_past_the_recorded_size_read_as_zeros_after_an_extension() {
    let c = Cluster::start(|_| {});
    c.mkdir_wide("wide");
    for name in ["t", "w"] {
        let mut h = File::create(c.p(&format!("wide/{name}"))).unwrap();
        h.write_all(&pattern(4 << 20, 9)).unwrap();
        h.sync_all().unwrap();
        drop(h);
        crash_size_at_mds(&c, &[b"wide", name.as_bytes()], 0);
    }
    // An extending truncate.
    OpenOptions::new()
        .write(true)
        .open(c.p("wide/t"))
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let back = fs::read(c.p("wide/t")).unwrap();
    assert_eq!(back.len(), 4 << 20);
    let stale = back.iter().filter(|&&b| b != 0).count();
    assert_eq!(stale, 0, "{stale} stale bytes after an extending truncate");
    // An extending write at 2 MiB: the first 2 MiB (both objects' old content) are zeros.
    {
        let mut h = OpenOptions::new().write(true).open(c.p("wide/w")).unwrap();
        h.seek(SeekFrom::Start(2 << 20)).unwrap();
        h.write_all(&[7; 4096]).unwrap();
        h.sync_all().unwrap();
    }
    let back = fs::read(c.p("wide/w")).unwrap();
    assert_eq!(back.len(), (2 << 20) + 4096);
    let stale = back[..2 << 20].iter().filter(|&&b| b != 0).count();
    assert_eq!(stale, 0, "{stale} stale bytes after an extending write");
    assert!(back[2 << 20..].iter().all(|&b| b == 7));
}

fn cpath(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap()
}

fn xattr_set(p: &Path, name: &str, value: &[u8]) {
    let n = std::ffi::CString::new(name).unwrap();
    let r = unsafe {
        libc::setxattr(
            cpath(p).as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    assert_eq!(
        r,
        0,
        "setxattr {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
}

fn xattr_get(p: &Path, name: &str) -> Vec<u8> {
    let n = std::ffi::CString::new(name).unwrap();
    let mut buf = vec![0u8; 65536];
    let r = unsafe {
        libc::getxattr(
            cpath(p).as_ptr(),
            n.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert!(
        r >= 0,
        "getxattr {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
    buf.truncate(r as usize);
    buf
}

#[test]
fn rpcs_carry_the_callers_jobid() {
    let c = Cluster::start(|m| m.jobid_var = "SLURM_JOB_ID".into());
    let dd = |path: PathBuf, job: Option<&str>| {
        let mut cmd = std::process::Command::new("dd");
        cmd.arg("if=/dev/zero")
            .arg(format!("of={}", path.display()))
            .args(["bs=64k", "count=4", "conv=fsync", "status=none"]);
        match job {
            Some(j) => cmd.env("SLURM_JOB_ID", j),
            None => cmd.env_remove("SLURM_JOB_ID"),
        };
        let status = cmd.status().expect("dd runs");
        assert!(status.success(), "dd failed: {status}");
    };
    dd(c.p("with-var"), Some("4242"));
    dd(c.p("without-var"), None);
    let uid = unsafe { libc::getuid() };
    let (jobs, stats) = c.job_ids();
    // Without the variable the pattern %e.%u names the process: dd run by this uid.
    assert!(jobs.iter().any(|j| j == "4242"), "no job 4242 in {stats}");
    assert!(
        jobs.iter().any(|j| *j == format!("dd.{uid}")),
        "no job dd.{uid} in {stats}"
    );
}

fn getstripe(p: &Path) -> String {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let opts = lfs::GetStripe::default();
    assert!(
        lfs::getstripe(&[p.to_path_buf()], &opts, &mut out, &mut err),
        "{}",
        String::from_utf8_lossy(&err)
    );
    String::from_utf8(out).unwrap()
}

#[test]
fn setstripe_and_getstripe_round_trip() {
    let c = Cluster::start(|_| {});
    fs::create_dir(c.p("d")).unwrap();
    // a directory default, taken by files created in it
    lfs::setstripe(&SetStripe {
        stripe_count: Some(2),
        stripe_size_bytes: Some(128 << 10),
        stripe_index: None,
        path: c.p("d"),
    })
    .unwrap();
    let d = getstripe(&c.p("d"));
    assert!(d.contains("stripe_count:  2 stripe_size:   131072"), "{d}");
    fs::write(c.p("d/f"), pattern(300 << 10, 3)).unwrap();
    let f = getstripe(&c.p("d/f"));
    assert!(
        f.contains("lmm_stripe_count:  2\nlmm_stripe_size:   131072\n"),
        "{f}"
    );
    assert_eq!(
        f.lines()
            .filter(|l| l.starts_with('\t') && !l.contains("obdidx"))
            .count(),
        2,
        "{f}"
    );
    assert_eq!(fs::read(c.p("d/f")).unwrap(), pattern(300 << 10, 3));

    // a file that does not exist yet is created empty with the layout; size from the
    // file system default (1 MiB), start on OST 1
    lfs::setstripe(&SetStripe {
        stripe_count: Some(1),
        stripe_size_bytes: None,
        stripe_index: Some(1),
        path: c.p("one"),
    })
    .unwrap();
    assert_eq!(fs::metadata(c.p("one")).unwrap().len(), 0);
    let one = getstripe(&c.p("one"));
    assert!(
        one.contains("lmm_stripe_count:  1\nlmm_stripe_size:   1048576\n"),
        "{one}"
    );
    assert!(one.contains("lmm_stripe_offset: 1\n"), "{one}");
    let before = c.objects(0);
    fs::write(c.p("one"), pattern(3 << 20, 5)).unwrap();
    assert_eq!(
        c.objects(0),
        before,
        "a file striped on OST 1 only wrote to OST 0"
    );
    assert!(c.objects(1).iter().any(|(_, len)| *len == 3 << 20));

    // a file's layout is fixed once it exists
    let e = lfs::setstripe(&SetStripe {
        stripe_count: Some(2),
        path: c.p("one"),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        e.contains("a layout is fixed when a file is created"),
        "{e}"
    );
    // bad layouts are refused before anything is sent, naming the limit
    let e = lfs::setstripe(&SetStripe {
        stripe_count: Some(3),
        path: c.p("three"),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        e.contains("stripe count 3: this file system has 2 OST(s); allowed -1 (every OST), 0"),
        "{e}"
    );
    assert!(!c.p("three").exists());
}

#[test]
fn rpcs_are_split_at_brw_size_and_reads_see_every_piece() {
    use pfsqos_core::jobstats::OstCounter;
    let c = Cluster::start(|m| {
        m.brw_size_bytes = 256 << 10;
        m.jobid_name = "brw-test".into();
        // The RPC counts below must not depend on machine speed (a gather flushed by its
        // timer between two FUSE writes would add a short RPC).
        m.gather_flush_after = Duration::from_secs(3600);
    });
    // The file system default: one stripe of 1 MiB. 4 MiB arrive as 1 MiB FUSE writes, each
    // split into four 256 KiB RPCs on the file's one OST.
    let data = pattern(4 << 20, 11);
    {
        let mut h = File::create(c.p("f")).unwrap();
        h.write_all(&data).unwrap();
        h.sync_all().unwrap();
    }
    assert_eq!(sha(&fs::read(c.p("f")).unwrap()), sha(&data));
    let entries: Vec<_> = c
        .job_entries()
        .into_iter()
        .filter(|e| e.job_id.as_str() == "brw-test")
        .collect();
    assert_eq!(entries.len(), 1, "one OST saw the job");
    let w = entries[0].counter(OstCounter::WriteBytes);
    // Every RPC at most brw_size, all bytes once; 16 whole RPCs when the kernel's pieces of
    // the write arrive in order (the kernel may issue them concurrently, and a piece that
    // arrives early sends what was gathered before it, so more RPCs are allowed, never larger).
    assert_eq!((w.max, w.sum), (256 << 10, 4 << 20));
    assert!(w.samples >= 16, "{} RPCs", w.samples);
    let r = entries[0].counter(OstCounter::ReadBytes);
    assert_eq!(r.max, 256 << 10, "reads are split too");
    assert_eq!(r.sum, 4 << 20);
    assert!(
        entries[0].counter(OstCounter::Sync).samples >= 1,
        "fsync synced the object"
    );
}

/// RPCs queued or in service at the OSS (all its NRS heads), from `nrs_policies`.
fn oss_rpcs(rt: &tokio::runtime::Runtime, addr: std::net::SocketAddr) -> u64 {
    let text = rt.block_on(async {
        let mut c = OssClient::connect(addr, SERVER_KEY, Role::Lctl)
            .await
            .unwrap();
        c.get_param("ost.OSS.ost_io.nrs_policies").await.unwrap()[0]
            .value
            .clone()
    });
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("queued:")
                .or_else(|| l.strip_prefix("active:"))
                .map(|v| v.trim().parse::<u64>().unwrap())
        })
        .sum()
}

#[test]
fn at_most_max_rpcs_in_flight_per_ost() {
    // A slow OST (4 MiB/s) makes RPCs pile up at the OSS if the client does not hold back.
    let c = Cluster::start_with(
        |o| o.ceiling_bytes_per_s = Some(4 << 20),
        |m| {
            m.max_rpcs_in_flight = 2;
            m.brw_size_bytes = 64 << 10;
        },
    );
    let addr = c.ossd.as_ref().unwrap().local_addr();
    let path = c.p("slow");
    let writer = std::thread::spawn(move || {
        let mut h = File::create(path).unwrap();
        h.write_all(&pattern(1 << 20, 9)).unwrap(); // 16 RPCs, about 250 ms at 4 MiB/s
        h.sync_all().unwrap();
    });
    let mut peak = 0;
    while !writer.is_finished() {
        peak = peak.max(oss_rpcs(&c.rt, addr));
    }
    writer.join().unwrap();
    assert!(peak >= 1, "never saw an RPC at the OSS");
    assert!(
        peak <= 2,
        "{peak} RPCs at the OSS with max_rpcs_in_flight = 2"
    );
    assert_eq!(fs::read(c.p("slow")).unwrap(), pattern(1 << 20, 9));
}

/// With direct I/O the client reads ahead itself: a sequential reader in small pieces causes
/// one read RPC per `brw_size` of each object, not one per read; writes and truncates through the mount
/// are never hidden by bytes read ahead before them; random reads still see every byte.
#[test]
fn direct_io_reads_ahead_and_never_serves_stale_bytes() {
    use pfsqos_core::jobstats::OstCounter;
    let c = Cluster::start(|m| {
        m.direct_io = true;
        // Room for a whole 4 MiB RPC of each of the two objects, twice over.
        m.max_read_ahead_mb = 16;
        m.jobid_name = "ra-test".into();
    });
    c.mkdir_wide("wide");
    let mut data = pattern(12 << 20, 5);
    {
        let mut h = File::create(c.p("wide/f")).unwrap();
        h.write_all(&data).unwrap();
        h.sync_all().unwrap();
    }
    let read_rpcs = || {
        let (n, bytes, _, _) = c.job_counter("ra-test", OstCounter::ReadBytes);
        (n, bytes)
    };
    assert_eq!(read_rpcs(), (0, 0));
    // Sequential reads of 300 KiB (41 reads) straddling the 1 MiB stripes.
    let mut back = Vec::new();
    {
        let mut h = File::open(c.p("wide/f")).unwrap();
        let mut buf = vec![0u8; 300 << 10];
        loop {
            let n = h.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            back.extend_from_slice(&buf[..n]);
        }
    }
    assert_eq!(sha(&back), sha(&data));
    let (rpcs, bytes) = read_rpcs();
    assert_eq!(
        bytes,
        12 << 20,
        "every byte read once, nothing beyond the end"
    );
    assert_eq!(
        rpcs, 4,
        "one RPC per 4 MiB of each object, not one per read"
    );

    // Bytes read ahead are dropped when the file is written: read 1 MiB (the window now
    // reaches 5 MiB), overwrite [2 MiB, 3 MiB) through another handle, read on.
    let mut h = File::open(c.p("wide/f")).unwrap();
    let mut first = vec![0u8; 1 << 20];
    h.read_exact(&mut first).unwrap();
    assert_eq!(first, &data[..1 << 20]);
    let fresh = pattern(1 << 20, 99);
    {
        let mut w = OpenOptions::new().write(true).open(c.p("wide/f")).unwrap();
        w.seek(SeekFrom::Start(2 << 20)).unwrap();
        w.write_all(&fresh).unwrap();
        w.flush().unwrap();
    }
    data[2 << 20..3 << 20].copy_from_slice(&fresh);
    let mut rest = vec![0u8; 3 << 20];
    h.read_exact(&mut rest).unwrap();
    assert_eq!(sha(&rest), sha(&data[1 << 20..4 << 20]), "stale read-ahead");

    // A truncate empties the window too: cut the file inside the window, then extend it
    // again, so the bytes past the cut read as zeros where the window held the old bytes.
    {
        let t = OpenOptions::new().write(true).open(c.p("wide/f")).unwrap();
        t.set_len(4 << 20 | 1234).unwrap();
        t.set_len(5 << 20).unwrap();
    }
    let mut tail = Vec::new();
    h.read_to_end(&mut tail).unwrap();
    assert_eq!(tail.len(), 1 << 20);
    assert_eq!(&tail[..1234], &data[4 << 20..(4 << 20) + 1234]);
    assert!(
        tail[1234..].iter().all(|&b| b == 0),
        "stale bytes after truncate"
    );
    data.truncate(4 << 20 | 1234);
    data.resize(5 << 20, 0);

    // Random reads bypass the window and still see every byte.
    let mut r = File::open(c.p("wide/f")).unwrap();
    for &at in &[3_000_000u64, 17, 1 << 20, 2_500_000] {
        r.seek(SeekFrom::Start(at)).unwrap();
        let mut b = vec![0u8; 5000];
        r.read_exact(&mut b).unwrap();
        assert_eq!(b, &data[at as usize..at as usize + 5000], "at {at}");
    }
}

/// Why this machine cannot mount for a test, if it cannot.
fn fuse_unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing (modprobe fuse)".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (the test cluster mounts as root)".into());
    }
    None
}

/// Concurrent sequential readers through the kernel cost the job no more than they read:
/// several applications reading their files in 1 MiB reads at once (each read split by the
/// kernel into requests the FUSE session threads serve in any order, the readers sharing
/// the mount's read-ahead budget) are served by the OSS every byte they read once, plus at
/// most the read-ahead budget (`max_read_ahead_mb`), in job_stats, which the job's TBF rate
/// and accounting see. (Requests of one read served out of order used to reset the handle's
/// window and read its bytes again.)
#[test]
fn concurrent_sequential_readers_are_served_each_byte_once_plus_the_read_ahead() {
    use pfsqos_core::jobstats::OstCounter;
    use std::sync::{Arc, Barrier};
    const TEST: &str =
        "concurrent_sequential_readers_are_served_each_byte_once_plus_the_read_ahead";
    if let Some(why) = fuse_unavailable() {
        pfsqos_testkit::skip(TEST, &why);
        return;
    }
    const READERS: usize = 4;
    const FILE_BYTES: usize = 24 << 20;
    const READ_BYTES: usize = 1 << 20;
    // Smaller than the default, so that reading a window twice over would show.
    const READ_AHEAD_MB: u64 = 4;
    let c = Cluster::start(|m| {
        m.max_read_ahead_mb = READ_AHEAD_MB;
        m.jobid_name = "ra-concurrent".into();
    });
    c.mkdir_wide("wide");
    let files: Vec<Vec<u8>> = (0..READERS)
        .map(|i| pattern(FILE_BYTES, 70 + i as u64))
        .collect();
    for (i, data) in files.iter().enumerate() {
        fs::write(c.p(&format!("wide/f{i}")), data).unwrap();
    }
    let served = || c.job_counter("ra-concurrent", OstCounter::ReadBytes).1;
    assert_eq!(served(), 0, "writing read nothing");

    // The readers start together, so their reads overlap.
    let start = Arc::new(Barrier::new(READERS));
    let read: Vec<Vec<u8>> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|i| {
                let (path, start) = (c.p(&format!("wide/f{i}")), start.clone());
                s.spawn(move || {
                    let mut h = File::open(path).unwrap();
                    let mut buf = vec![0u8; READ_BYTES];
                    let mut back = Vec::with_capacity(FILE_BYTES);
                    start.wait();
                    loop {
                        let n = h.read(&mut buf).unwrap();
                        if n == 0 {
                            break back;
                        }
                        back.extend_from_slice(&buf[..n]);
                    }
                })
            })
            .collect();
        readers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (i, (back, data)) in read.iter().zip(&files).enumerate() {
        assert!(sha(back) == sha(data), "reader {i} saw other bytes");
    }
    let read_bytes = (READERS * FILE_BYTES) as u64;
    let served = served();
    eprintln!(
        "{READERS} concurrent readers: read {read_bytes} bytes, the OSS served {served} ({:.4} of the bytes read)",
        served as f64 / read_bytes as f64
    );
    assert!(
        served >= read_bytes,
        "served {served} for {read_bytes} read"
    );
    assert!(
        served <= read_bytes + (READ_AHEAD_MB << 20),
        "the OSS served {served} bytes for {read_bytes} read ({:.1} % more; at most the \
         read-ahead budget of {READ_AHEAD_MB} MiB more is allowed)",
        (served as f64 / read_bytes as f64 - 1.0) * 100.0
    );
}

/// Each open file handle has its own read-ahead window, as each Lustre file descriptor does:
/// two readers of one file, taking turns, are each sequential and each read every byte once
/// (per-file state had them reset each other's window at every read, so every read went
/// straight to the OSTs).
#[test]
fn read_ahead_windows_are_per_open_file() {
    use pfsqos_core::jobstats::OstCounter;
    let c = Cluster::start(|m| {
        m.jobid_name = "ra-fh-test".into();
    });
    c.mkdir_wide("wide");
    let data = pattern(12 << 20, 31);
    fs::write(c.p("wide/f"), &data).unwrap();
    let reads = || {
        let (n, bytes, _, _) = c.job_counter("ra-fh-test", OstCounter::ReadBytes);
        (n, bytes)
    };
    let mut handles = [
        File::open(c.p("wide/f")).unwrap(),
        File::open(c.p("wide/f")).unwrap(),
    ];
    let mut back = [Vec::new(), Vec::new()];
    let mut buf = vec![0u8; 300 << 10];
    'turns: loop {
        for (h, b) in handles.iter_mut().zip(back.iter_mut()) {
            let n = h.read(&mut buf).unwrap();
            if n == 0 {
                break 'turns;
            }
            b.extend_from_slice(&buf[..n]);
        }
    }
    for b in &back {
        assert!(sha(b) == sha(&data), "a reader saw other bytes");
    }
    // Each reader's window (32 MiB) covers the file at its first read: per object one 4 MiB
    // and one 2 MiB RPC.
    assert_eq!(
        reads(),
        (8, 24 << 20),
        "each reader: one RPC per 4 MiB of each object"
    );
}

/// With direct I/O the kernel hands the client each application write as it comes; the
/// client gathers a sequential writer's pieces per object into whole, aligned RPCs (one per
/// `brw_size` of each object, not one per write or per stripe unit, whatever the buffer's
/// alignment), as the simulator forms them (`pfsqos_node::client`). Gathered bytes are seen by a
/// read before they are sent, are ordered before a later overlapping write, and reach the OST
/// without a flush or close.
#[test]
fn direct_io_gathers_writes_into_whole_rpcs() {
    use pfsqos_core::jobstats::OstCounter;
    // The flush timer is out of the way here (the RPC counts must not depend on how fast this
    // machine runs); the end of the test checks it on a mount of its own.
    let c = Cluster::start(|m| {
        m.direct_io = true;
        m.jobid_name = "wg-test".into();
        m.gather_flush_after = Duration::from_secs(3600);
    });
    c.mkdir_wide("wide");
    // (RPCs, bytes, smallest, largest) of the job's writes on both OSTs.
    let writes = || c.job_counter("wg-test", OstCounter::WriteBytes);
    let mut data = pattern(12 << 20, 21);
    {
        // 41 writes of 300 KiB.
        let mut h = File::create(c.p("wide/f")).unwrap();
        for piece in data.chunks(300 << 10) {
            h.write_all(piece).unwrap();
        }
        h.sync_all().unwrap();
    }
    // Gathered per object and cut at every 4 MiB (brw_size) of the object: each object holds
    // 6 MiB (six 1 MiB stripe units), sent as one 4 MiB and one 2 MiB RPC.
    assert_eq!(
        writes(),
        (4, 12 << 20, 2 << 20, 4 << 20),
        "one RPC per 4 MiB of each object"
    );

    // One 4 MiB write from a buffer that is not page-aligned.
    let fresh = pattern(4 << 20, 22);
    let mut odd = vec![0u8; (4 << 20) + 1];
    odd[1..].copy_from_slice(&fresh);
    let mut h = OpenOptions::new()
        .read(true)
        .write(true)
        .open(c.p("wide/f"))
        .unwrap();
    h.write_all(&odd[1..]).unwrap();
    h.sync_all().unwrap();
    data[..4 << 20].copy_from_slice(&fresh);
    // Whatever pieces the kernel cut it into: [0, 2) MiB of each object, one RPC each.
    assert_eq!(writes(), (6, 16 << 20, 2 << 20, 4 << 20));

    // 100,000 bytes past the end stay gathered (no RPC boundary reached); another handle
    // reads them, and the file's size, at once.
    let tail = pattern(150_000, 23);
    h.seek(SeekFrom::Start(12 << 20)).unwrap();
    h.write_all(&tail[..100_000]).unwrap();
    data.extend_from_slice(&tail[..100_000]);
    let mut r = File::open(c.p("wide/f")).unwrap();
    assert_eq!(r.metadata().unwrap().len(), (12 << 20) + 100_000);
    r.seek(SeekFrom::Start(12 << 20)).unwrap();
    let mut back = vec![0u8; 100_000];
    r.read_exact(&mut back).unwrap();
    assert!(back == tail[..100_000], "gathered bytes not seen by a read");
    assert_eq!(writes().0, 7, "the read sent the gathered bytes");

    // An overwrite inside them lands after them, not before.
    h.seek(SeekFrom::Start((12 << 20) + 50_000)).unwrap();
    h.write_all(&[0xbb; 10_000]).unwrap();
    h.sync_all().unwrap();
    data[(12 << 20) + 50_000..(12 << 20) + 60_000].fill(0xbb);
    assert_eq!(sha(&fs::read(c.p("wide/f")).unwrap()), sha(&data));
    assert_eq!(writes().0, 8);

    drop((h, r));
    assert_eq!(sha(&fs::read(c.p("wide/f")).unwrap()), sha(&data));
    assert_eq!(writes(), (8, (16 << 20) + 110_000, 10_000, 4 << 20));
    // (A mount stops once its files are closed: both handles are.)
    drop(c);

    // Gathered bytes nobody flushes reach the OST on their own, after the timer.
    let c = Cluster::start(|m| {
        m.direct_io = true;
        m.jobid_name = "wg-test".into();
        m.gather_flush_after = Duration::from_millis(200);
    });
    let mut h = File::create(c.p("t")).unwrap();
    h.write_all(&tail[100_000..]).unwrap();
    let deadline = Instant::now() + WAIT_MAX;
    while c.job_counter("wg-test", OstCounter::WriteBytes).1 < 50_000 {
        assert!(Instant::now() < deadline, "gathered bytes never sent");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        c.job_counter("wg-test", OstCounter::WriteBytes),
        (1, 50_000, 50_000, 50_000)
    );
    drop(h);
    assert!(fs::read(c.p("t")).unwrap() == tail[100_000..]);
}

/// Maps `len` bytes of `path` read-only, shared or private; the first bytes, or the errno.
fn mmap_head(path: &Path, len: usize, shared: bool) -> Result<Vec<u8>, i32> {
    use std::os::fd::AsRawFd;
    let f = File::open(path).unwrap();
    let flags = if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    // SAFETY: a fresh read-only mapping of an open file, read within its length, then unmapped.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            flags,
            f.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap());
        }
        let v = std::slice::from_raw_parts(p as *const u8, len).to_vec();
        libc::munmap(p, len);
        Ok(v)
    }
}

/// Direct I/O refuses shared mappings and serves private ones (so programs on the mount run);
/// the page cache (the default) maps both.
#[test]
fn mappings_with_direct_io_and_with_the_page_cache() {
    let data = pattern(3 << 20, 8);
    for direct_io in [true, false] {
        let c = Cluster::start(|m| m.direct_io = direct_io);
        fs::write(c.p("m"), &data).unwrap();
        assert_eq!(sha(&fs::read(c.p("m")).unwrap()), sha(&data));
        assert_eq!(mmap_head(&c.p("m"), 8192, false).unwrap(), &data[..8192]);
        match mmap_head(&c.p("m"), 8192, true) {
            Err(e) if direct_io => assert_eq!(e, libc::ENODEV),
            Ok(v) if !direct_io => assert_eq!(v, &data[..8192]),
            other => panic!("direct_io {direct_io}: shared mapping gave {other:?}"),
        }
    }
}

/// The mount forms the very RPCs the simulator forms for the same writes and layout (one rule,
/// `pfsqos_node::client`): sizes, objects and object offsets, for single- and multi-stripe
/// files, aligned and not, at the default `brw_size` (4 MiB, larger than the stripes) and a
/// smaller one. Each case writes two consecutive calls of `len` bytes (the simulator: one
/// call from each of two processes of a shared file); the mount syncs after each, so its
/// gathering cannot merge them and each call's RPCs stand alone, as in the simulator.
#[test]
fn the_mount_and_the_simulator_form_the_same_rpcs() {
    use std::os::unix::fs::FileExt;
    const M: u64 = 1 << 20;
    // (stripe_count, stripe_size, call length)
    type Case = (u32, u64, u64);
    let cases_by_brw: [(u64, &[Case]); 2] = [
        (
            4 * M,
            &[
                (1, M, 6 * M + 12_345),
                (2, M, 5 * M + 777),
                (2, M, 16 * M),
                (2, 64 << 10, 3_000_000),
            ],
        ),
        (M, &[(2, 64 << 10, 3_000_000), (1, 4 * M, 9 * M + 5)]),
    ];
    for (brw, cases) in cases_by_brw {
        let c = Cluster::start(|m| {
            m.brw_size_bytes = brw;
            m.rpc_trace = true;
            m.gather_flush_after = Duration::from_secs(3600);
        });
        for (i, &(count, stripe_size, len)) in cases.iter().enumerate() {
            let dir = format!("d{i}");
            fs::create_dir(c.p(&dir)).unwrap();
            xattr_set(
                &c.p(&dir),
                "user.pfsqos.layout",
                format!("stripe_count={count} stripe_size={stripe_size} stripe_offset=0")
                    .as_bytes(),
            );
            let before = c.mount.as_ref().unwrap().rpc_trace().unwrap().len();
            let data = pattern(2 * len as usize, i as u64);
            let h = File::create(c.p(&format!("{dir}/f"))).unwrap();
            for call in 0..2u64 {
                let at = (call * len) as usize;
                h.write_all_at(&data[at..at + len as usize], call * len)
                    .unwrap();
                h.sync_all().unwrap();
            }
            drop(h);
            assert_eq!(
                sha(&fs::read(c.p(&format!("{dir}/f"))).unwrap()),
                sha(&data)
            );
            let mut mount: Vec<(u32, u64, u64)> = c.mount.as_ref().unwrap().rpc_trace().unwrap()
                [before..]
                .iter()
                .filter(|r| r.write)
                .map(|r| (r.ost, r.object_offset_bytes, r.len_bytes))
                .collect();
            mount.sort_unstable();

            let scenario = format!(
                r#"
name = "same-rpcs"
[simulation]
duration_s = 60.0
[cluster]
clients = 1
brw_size = "{brw}"
[[oss]]
name = "oss0"
osts = 2
device = "ssd-sata"
[[job]]
id = "w"
nodes = 1
[[job.processes]]
rw = "write"
bs = "{len}"
size = "{len}"
numjobs = 2
file = "shared"
stripe_count = {count}
stripe_size = "{stripe_size}"
stripe_offset = 0
"#
            );
            let s = pfsqos_sim::Scenario::from_toml_str(&scenario, "<test>").unwrap();
            let (out, trace) = pfsqos_sim::run_traced(&s, "nobw", 1).unwrap();
            assert!(
                out.jobs[0].finished,
                "case {i}: the simulated job did not finish"
            );
            let mut sim: Vec<(u32, u64, u64)> = trace
                .iter()
                .filter(|t| !t.read)
                .map(|t| (t.ost, t.object_offset_bytes, t.size_bytes))
                .collect();
            sim.sort_unstable();
            assert_eq!(
                mount, sim,
                "brw {brw}, {count} x {stripe_size} stripes, calls of {len}: mount vs simulator"
            );
            // Not trivially equal: the calls were cut into several RPCs.
            assert!(sim.len() > 2, "case {i}: {sim:?}");
        }
    }
}

/// A controller that limits every client the ossd lists to `limit_bytes_per_s`, every period.
struct LimitEveryClient {
    limit_bytes_per_s: u64,
}

impl pfsqos_core::control::Controller for LimitEveryClient {
    fn name(&self) -> &'static str {
        "limit-every-client"
    }
    fn setup(
        &mut self,
        initial: &pfsqos_core::control::Observation,
    ) -> pfsqos_core::control::Decision {
        self.decide(initial)
    }
    fn period_ns(&self) -> Option<u64> {
        Some(20_000_000)
    }
    fn decide(
        &mut self,
        observation: &pfsqos_core::control::Observation,
    ) -> pfsqos_core::control::Decision {
        pfsqos_core::control::Decision {
            writes: Vec::new(),
            client_writes: observation
                .clients
                .iter()
                .map(|&client| pfsqos_core::control::ClientWrite {
                    client,
                    limit_bytes_per_s: Some(self.limit_bytes_per_s),
                })
                .collect(),
        }
    }
}

/// A controller in the ossd limits the mount: the limit reaches the mount on the ossd's
/// replies, and from the moment the mount has it, the write bytes its limiter lets through
/// never exceed the limit times the time elapsed plus one RPC (sampled while a writer runs);
/// when the controller stops, the limit is lifted.
#[test]
fn a_controller_in_the_ossd_limits_the_mounts_writes() {
    use pfsqos_ossd::control::{ControlConfig, ControllerFactory};
    const LIMIT: u64 = 4 << 20;
    const BRW: u64 = 256 << 10;
    const FILE: usize = 6 << 20;
    let mut c = Cluster::start_with(
        |o| {
            let mut cc = ControlConfig::new("nobw").unwrap();
            cc.capacity_rpcs_per_s = Some(100);
            cc.factory = Some(ControllerFactory(std::sync::Arc::new(|| {
                Box::new(LimitEveryClient {
                    limit_bytes_per_s: LIMIT,
                })
            })));
            o.control = Some(cc);
        },
        |m| {
            m.brw_size_bytes = BRW;
            m.max_rpcs_in_flight = 2;
        },
    );
    let mount = c.mount.as_ref().unwrap();
    // The mount learns the limit from the replies to its writes: write until it has it.
    let deadline = Instant::now() + WAIT_MAX;
    let mut n = 0;
    while mount.limit_bytes_per_s() != Some(LIMIT) {
        assert!(
            Instant::now() < deadline,
            "the limit never reached the mount"
        );
        let mut h = File::create(c.p(&format!("prime{}", n % 4))).unwrap();
        h.write_all(&[1u8; 4096]).unwrap();
        h.sync_all().unwrap();
        n += 1;
    }
    // Every write before this point has completed (synced): what is let through from here
    // on started under the limit.
    let t0 = Instant::now();
    let sent0 = mount.sent_write_bytes();
    let path = c.p("limited");
    let writer = std::thread::spawn(move || {
        let mut h = File::create(path).unwrap();
        h.write_all(&pattern(FILE, 13)).unwrap();
        h.sync_all().unwrap();
    });
    let bound =
        |elapsed: Duration| (u128::from(LIMIT) * elapsed.as_nanos() / 1_000_000_000) as u64 + BRW;
    let mut samples = 0u64;
    loop {
        let finished = writer.is_finished();
        let sent = mount.sent_write_bytes() - sent0;
        // Taken after the counter: the interval can only be overstated.
        let elapsed = t0.elapsed();
        assert!(
            sent <= bound(elapsed),
            "{sent} bytes let through in {elapsed:?} under a limit of {LIMIT} bytes/s"
        );
        samples += 1;
        if finished {
            break;
        }
        assert!(t0.elapsed() < WAIT_MAX, "the limited writer never finished");
        std::thread::yield_now();
    }
    writer.join().unwrap();
    let sent = mount.sent_write_bytes() - sent0;
    assert!(sent >= FILE as u64, "only {sent} bytes let through");
    assert!(samples > 1);
    assert_eq!(fs::read(c.p("limited")).unwrap(), pattern(FILE, 13));
    // The controller stops: it lifts the limit, which the next reply tells the mount.
    let ossd = c.ossd.as_mut().unwrap();
    c.rt.block_on(ossd.stop_control());
    let mount = c.mount.as_ref().unwrap();
    let deadline = Instant::now() + WAIT_MAX;
    while mount.limit_bytes_per_s().is_some() {
        assert!(Instant::now() < deadline, "the limit was never lifted");
        let mut h = File::create(c.p("after")).unwrap();
        h.write_all(&[2u8; 4096]).unwrap();
        h.sync_all().unwrap();
    }
}
