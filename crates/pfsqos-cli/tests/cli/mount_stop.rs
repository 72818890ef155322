//! Stopping `pfsqos mount` while a process still has a file open: the mount leaves the
//! namespace at once (lazy detach instead of a failed unmount and a dead mount point), the open
//! file keeps working, the client exits once the file is closed, and everything written through
//! it is on the OSTs (a fresh mount reads it back). Needs /dev/fuse and root.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::common::{is_mounted, Cluster, WAIT_MAX};
use sha2::{Digest, Sha256};

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn sigterm_with_an_open_file_detaches_and_loses_nothing() {
    let mut cluster = Cluster::start(1, &[]);
    let mnt = cluster.mnts[0].clone();
    let first = pattern(8 << 20, 1);
    let second = pattern(8 << 20, 2);
    let mut file = std::fs::File::create(mnt.join("open.dat")).unwrap();
    file.write_all(&first).unwrap();

    cluster.mounts[0].signal("TERM");
    let deadline = Instant::now() + WAIT_MAX;
    while is_mounted(&mnt) {
        assert!(
            Instant::now() < deadline,
            "the mount did not leave the namespace"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Detached but still serving the open file.
    assert!(
        !cluster.mounts[0].has_exited(),
        "the client exited with a file open"
    );
    file.write_all(&second).unwrap();
    drop(file); // close: the last reference; the kernel ends the session
    let status = cluster.mounts[0].wait_exit();
    assert!(status.success(), "mount exited with {status}");

    let remount = cluster.tmp.path().join("again");
    std::fs::create_dir(&remount).unwrap();
    let _again = cluster.mount(&remount, "again.log");
    let mut back = Vec::new();
    std::fs::File::open(remount.join("open.dat"))
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    let mut want = first;
    want.extend_from_slice(&second);
    assert_eq!(back.len(), want.len());
    assert_eq!(Sha256::digest(&back), Sha256::digest(&want));
}
