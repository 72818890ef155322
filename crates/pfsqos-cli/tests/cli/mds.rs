//! Durability of `pfsqos mds`: every acknowledged mutation survives `kill -9`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use pfsqos_wire::client::MdsClient;
use pfsqos_wire::mds::{Owner, ROOT_INO};

const KEY: &str = "0123456789abcdef0123456789abcdef";

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the real binary and waits for its "listening" line; the servers' own key is
/// `server.key` beside `key`.
fn spawn_mds(db: &Path, key: &Path) -> (Daemon, std::net::SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args([
            "mds",
            "--listen",
            "127.0.0.1:0",
            "--oss",
            "127.0.0.1:7000:3",
        ])
        .args(["--stripe-count", "1"])
        .arg("--db")
        .arg(db)
        .arg("--key-file")
        .arg(key)
        .arg("--server-key-file")
        .arg(key.with_file_name("server.key"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let daemon = Daemon(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("mds listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    (daemon, addr)
}

const O: Owner = Owner {
    mode: 0o644,
    uid: 0,
    gid: 0,
};

#[test]
fn acknowledged_entries_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("key");
    std::fs::write(&key, format!("{KEY}\n")).unwrap();
    std::fs::write(
        key.with_file_name("server.key"),
        "fedcba9876543210fedcba9876543210\n",
    )
    .unwrap();
    let db = tmp.path().join("mds.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let (mut daemon, addr) = spawn_mds(&db, &key);
    let created = rt.block_on(async {
        let mut c = MdsClient::connect(addr, KEY.as_bytes()).await.unwrap();
        let d = c.mkdir(ROOT_INO, b"d", O).await.unwrap();
        let mut created = vec![(ROOT_INO, b"d".to_vec(), d.ino, None)];
        for i in 0..20 {
            let name = format!("f{i}").into_bytes();
            let (a, l) = c.create(d.ino, &name, O, None).await.unwrap();
            created.push((d.ino, name, a.ino, Some(l)));
        }
        created
    });
    // SIGKILL: no chance to flush anything that was not already durable.
    daemon.0.kill().unwrap();
    daemon.0.wait().unwrap();
    drop(daemon);

    let (_daemon, addr) = spawn_mds(&db, &key);
    rt.block_on(async {
        let mut c = MdsClient::connect(addr, KEY.as_bytes()).await.unwrap();
        for (parent, name, ino, layout) in &created {
            let a = c.lookup(*parent, name).await.unwrap();
            assert_eq!(a.ino, *ino);
            if let Some(l) = layout {
                assert_eq!(&c.layout(a.ino).await.unwrap(), l);
            }
        }
        // The rotation and object ids continue where they stopped.
        let (_, l) = c.create(ROOT_INO, b"after", O, None).await.unwrap();
        assert_eq!(l.stripes[0].ost, 20 % 3);
        assert_eq!(l.stripes[0].object, 21);
        assert_eq!(c.statfs().await.unwrap().inodes, 23);
    });
}
