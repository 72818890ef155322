//! `pfsqos mount` as a user other than root: without `--allow-other` it mounts through the
//! setuid fusermount3 with no change to /etc/fuse.conf and the user reads and writes through
//! it, in a directory of their own (the root directory belongs to root, as on Lustre); with
//! `--allow-other` and no `user_allow_other` in /etc/fuse.conf, fusermount3 refuses and
//! the error says why and what to do. The test runs as root and starts the mount as `nobody`
//! (uid 65534); it skips, saying why, where that is impossible (not root, no /dev/fuse, no
//! setuid fusermount3, /etc/fuse.conf already allowing other users). Where /dev/fuse is not
//! open to other users (mode 600, as in some containers), it checks that the mount says so,
//! then skips the rest.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn skip_reason() -> Option<String> {
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 {
        return Some("the test must run as root to start a mount as another user".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing (modprobe fuse)".into());
    }
    let setuid = std::fs::metadata("/usr/bin/fusermount3")
        .is_ok_and(|m| m.permissions().mode() & 0o4000 != 0);
    if !setuid {
        return Some("/usr/bin/fusermount3 is missing or not setuid (package fuse3)".into());
    }
    let allows = std::fs::read_to_string("/etc/fuse.conf").is_ok_and(|t| {
        t.lines()
            .any(|l| l.split('#').next().unwrap_or("").trim() == "user_allow_other")
    });
    if allows {
        return Some("/etc/fuse.conf has user_allow_other, so the refusal cannot be shown".into());
    }
    None
}

fn mounted(path: &Path) -> bool {
    let want = path.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// `pfsqos down` on drop.
struct Up(std::path::PathBuf);

impl Drop for Up {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
            .args(["down", "c.toml"])
            .current_dir(&self.0)
            .output();
    }
}

/// Kills the mount process (SIGTERM unmounts) and undoes a mount left behind.
struct MountProc(std::process::Child, std::path::PathBuf);

impl Drop for MountProc {
    fn drop(&mut self) {
        // SAFETY: signals the child this test started.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        if mounted(&self.1) {
            let _ = Command::new("umount").arg("-l").arg(&self.1).status();
        }
    }
}

fn as_nobody(cmd: &mut Command) -> &mut Command {
    cmd.uid(NOBODY)
        .gid(NOBODY)
        .env("HOME", "/")
        .env_remove("PFSQOS_STATE")
}

#[test]
fn a_user_other_than_root_mounts_without_allow_other_and_is_told_why_with_it() {
    if let Some(why) = skip_reason() {
        pfsqos_testkit::skip("a_user_other_than_root_mounts", &why);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("c.toml"),
        "[mds]\nlisten = \"127.0.0.1:0\"\n[[oss]]\nlisten = \"127.0.0.1:0\"\nosts = [\"data/ost0\"]\n[mount]\nenabled = false\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["up", "c.toml"])
        .current_dir(dir)
        .output()
        .unwrap();
    let _up = Up(dir.to_path_buf());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let mds = stdout
        .lines()
        .find_map(|l| l.split_once("mds listening on "))
        .and_then(|(_, r)| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{stdout}"))
        .to_string();

    // The user's own copy of the key and mount point.
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    let key = home.join("key");
    std::fs::copy(dir.join("pfsqos-state/cluster.key"), &key).unwrap();
    let mnt = home.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    for p in [&home, &key, &mnt] {
        chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }

    let fuse_mode = std::fs::metadata("/dev/fuse").unwrap().permissions().mode();
    if fuse_mode & 0o006 != 0o006 {
        let o = as_nobody(Command::new(env!("CARGO_BIN_EXE_pfsqos")).args([
            "mount",
            mnt.to_str().unwrap(),
            "--mds",
            &mds,
            "--key-file",
            key.to_str().unwrap(),
        ]))
        .output()
        .unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("/dev/fuse is not readable and writable by uid 65534")
                && err.contains("mode 666"),
            "{err}"
        );
        pfsqos_testkit::skip(
            "a_user_other_than_root_mounts (the rest)",
            &format!(
                "/dev/fuse has mode {:o}, so no user but root can mount here (the error saying \
                 so was checked)",
                fuse_mode & 0o777
            ),
        );
        return;
    }

    // With --allow-other: fusermount3 refuses; the error says why and what to do.
    let o = as_nobody(Command::new(env!("CARGO_BIN_EXE_pfsqos")).args([
        "mount",
        mnt.to_str().unwrap(),
        "--mds",
        &mds,
        "--key-file",
        key.to_str().unwrap(),
        "--allow-other",
    ]))
    .output()
    .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("user_allow_other")
            && err.contains("(it does not)")
            && err.contains("mount without allow_other"),
        "{err}"
    );
    assert!(!mounted(&mnt));

    // The file system's root belongs to root (mode 755), as a Lustre file system's does: a
    // user writes where its permissions allow, so the administrator gives the user a directory
    // of their own, here through root's own mount.
    let admin_mnt = dir.join("admin-mnt");
    std::fs::create_dir(&admin_mnt).unwrap();
    let mut admin = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args([
            "mount",
            admin_mnt.to_str().unwrap(),
            "--mds",
            &mds,
            "--key-file",
            dir.join("pfsqos-state/cluster.key").to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let admin_out = admin.stdout.take().unwrap();
    let admin_guard = MountProc(admin, admin_mnt.clone());
    let mut line = String::new();
    BufReader::new(admin_out).read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        format!("mount ready on {}", admin_mnt.display())
    );
    let users = admin_mnt.join("nobody");
    std::fs::create_dir(&users).unwrap();
    chown(&users, Some(NOBODY), Some(NOBODY)).unwrap();
    drop(admin_guard);
    assert!(!mounted(&admin_mnt));

    // Without it: mounted; the user writes and reads in their directory, and cannot write in
    // the root's.
    let mut child = as_nobody(Command::new(env!("CARGO_BIN_EXE_pfsqos")).args([
        "mount",
        mnt.to_str().unwrap(),
        "--mds",
        &mds,
        "--key-file",
        key.to_str().unwrap(),
    ]))
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let proc_guard = MountProc(child, mnt.clone());
    // The first line is the ready line, or EOF when the mount failed (the process exits).
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), format!("mount ready on {}", mnt.display()));
    assert!(mounted(&mnt));
    let f = mnt.join("nobody/mine");
    let o = as_nobody(Command::new("sh").args([
        "-c",
        &format!("echo hello > '{}' && cat '{}'", f.display(), f.display()),
    ]))
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "hello\n");
    let at_root = mnt.join("not-mine");
    let o = as_nobody(
        Command::new("sh").args(["-c", &format!("echo hello > '{}'", at_root.display())]),
    )
    .output()
    .unwrap();
    assert!(!o.status.success(), "a user wrote in root's directory");
    assert!(
        text(&o.stderr).contains("Permission denied"),
        "{}",
        text(&o.stderr)
    );
    drop(proc_guard);
    assert!(!mounted(&mnt));
}
