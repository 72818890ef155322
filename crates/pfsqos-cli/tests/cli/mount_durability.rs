//! Durability and recovery of `pfsqos mount` with the real binary: data acknowledged by
//! fsync survives `kill -9` of the ossd and of the mds, and the same mount reconnects to the
//! restarted daemons (same ports, same directories and database). Needs /dev/fuse and root.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

const KEY: &str = "0123456789abcdef0123456789abcdef";
const WAIT_MAX: Duration = Duration::from_secs(60);

struct Proc {
    child: Child,
    /// A mount point to detach if the process dies without unmounting.
    mountpoint: Option<PathBuf>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(m) = &self.mountpoint {
            let _ = Command::new("umount").arg("-l").arg(m).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary and waits for its first stdout line, which must start with `expect`.
fn spawn(args: &[&str], expect: &str, mountpoint: Option<&Path>) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let proc = Proc {
        child,
        mountpoint: mountpoint.map(Path::to_path_buf),
    };
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert!(
        line.starts_with(expect),
        "{args:?}: first line {line:?}, expected {expect:?}"
    );
    proc
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn kill_9(mut p: Proc) {
    p.child.kill().unwrap(); // SIGKILL
    p.child.wait().unwrap();
}

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

fn write_fsynced(path: &Path, data: &[u8]) {
    let mut f = File::create(path).unwrap();
    f.write_all(data).unwrap();
    f.sync_all().unwrap();
}

/// Reads through a fresh open: the mount does not keep the page cache across opens, so the
/// bytes come from the OSSs.
fn read(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    File::open(path).unwrap().read_to_end(&mut out).unwrap();
    out
}

fn mounted(mnt: &Path) -> bool {
    let want = mnt.to_string_lossy().into_owned();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

struct Setup {
    tmp: tempfile::TempDir,
    oss_port: u16,
    mds_port: u16,
}

impl Setup {
    fn path(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }

    fn s(&self, p: &str) -> String {
        self.path(p).to_string_lossy().into_owned()
    }

    fn ossd(&self) -> Proc {
        let listen = format!("127.0.0.1:{}", self.oss_port);
        spawn(
            &[
                "ossd",
                "--listen",
                &listen,
                "--ost",
                &self.s("ost0"),
                "--ost",
                &self.s("ost1"),
                "--key-file",
                &self.s("key"),
                "--server-key-file",
                &self.s("server.key"),
            ],
            "ossd listening on",
            None,
        )
    }

    fn mds(&self) -> Proc {
        let listen = format!("127.0.0.1:{}", self.mds_port);
        let oss = format!("127.0.0.1:{}:2", self.oss_port);
        spawn(
            &[
                "mds",
                "--listen",
                &listen,
                "--db",
                &self.s("mds.db"),
                "--key-file",
                &self.s("key"),
                "--server-key-file",
                &self.s("server.key"),
                "--oss",
                &oss,
                "--stripe-count",
                "2",
            ],
            "mds listening on",
            None,
        )
    }
}

#[test]
fn fsynced_data_survives_kill_9_of_ossd_and_mds() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: the mount tests need the FUSE device (modprobe fuse) and root"
    );
    let setup = Setup {
        tmp: tempfile::tempdir().unwrap(),
        oss_port: free_port(),
        mds_port: free_port(),
    };
    fs::write(setup.path("key"), format!("{KEY}\n")).unwrap();
    fs::write(
        setup.path("server.key"),
        "fedcba9876543210fedcba9876543210\n",
    )
    .unwrap();
    let mnt = setup.path("mnt");
    fs::create_dir(&mnt).unwrap();
    let mut ossd = setup.ossd();
    let mut mds = setup.mds();
    let mds_addr = format!("127.0.0.1:{}", setup.mds_port);
    let mut mount = spawn(
        &[
            "mount",
            &mnt.to_string_lossy(),
            "--mds",
            &mds_addr,
            "--key-file",
            &setup.s("key"),
        ],
        &format!("mount ready on {}", mnt.display()),
        Some(&mnt),
    );
    assert!(mounted(&mnt));

    // ossd: kill -9 after an fsynced write; the same mount reads it back after a restart.
    let a = pattern(9 << 20, 1);
    write_fsynced(&mnt.join("a"), &a);
    kill_9(ossd);
    // A write while the ossd is down waits in recovery and completes once it is back.
    let b = pattern(3 << 20, 2);
    let writer = {
        let (path, b) = (mnt.join("b"), b.clone());
        std::thread::spawn(move || write_fsynced(&path, &b))
    };
    ossd = setup.ossd();
    writer.join().unwrap();
    assert_eq!(sha(&read(&mnt.join("a"))), sha(&a));
    assert_eq!(sha(&read(&mnt.join("b"))), sha(&b));

    // mds: kill -9 after a create + fsync; the entry lists and reads after a restart.
    let c = pattern((5 << 20) + 17, 3);
    write_fsynced(&mnt.join("c"), &c);
    kill_9(mds);
    mds = setup.mds();
    let mut names: Vec<String> = fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(fs::metadata(mnt.join("c")).unwrap().len(), c.len() as u64);
    assert_eq!(sha(&read(&mnt.join("c"))), sha(&c));
    assert_eq!(sha(&read(&mnt.join("a"))), sha(&a));
    // and new metadata operations work on the restarted mds
    write_fsynced(&mnt.join("d"), b"after the restart");
    assert_eq!(read(&mnt.join("d")), b"after the restart");

    // An unmount from outside ends the mount process with status 0.
    let status = Command::new("umount").arg(&mnt).status().unwrap();
    assert!(status.success(), "umount: {status}");
    let deadline = Instant::now() + WAIT_MAX;
    let exit = loop {
        if let Some(s) = mount.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "mount process still running after umount"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "mount exited with {exit}");
    mount.mountpoint = None;
    assert!(!mounted(&mnt));
    drop((ossd, mds));
}
