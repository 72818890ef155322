//! The README's live blocks, run as written: every fenced block that follows a
//! `<!-- tested: crates/pfsqos-cli/tests/cli/readme.rs ... -->` line is extracted from README.md and run by bash
//! (`set -e`) in a fresh temporary directory, with `pfsqos` on PATH being the binary under
//! test. So the README cannot drift from what works.
//!
//! Skipped, with the reason printed, only where the machine cannot run them: no /dev/fuse,
//! no fusermount3 or mountpoint, or the fixed ports the blocks use (7988, 7989) taken by
//! something else. Every block runs in its own process group, killed (and its mount undone)
//! if the test fails midway.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MARKER: &str = "<!-- tested: crates/pfsqos-cli/tests/cli/readme.rs";
/// A block that takes longer than this has hung (the blocks take seconds).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(180);

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).unwrap()
}

/// The fenced blocks after each marker line, in README order.
fn tested_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if !l.starts_with(MARKER) {
            continue;
        }
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```sh"),
            "a marker must precede a ```sh block: {fence:?}"
        );
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        blocks.push(body.join("\n") + "\n");
    }
    blocks
}

fn skip_reason() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing (modprobe fuse)".into());
    }
    for tool in ["fusermount3", "mountpoint", "bash", "dd", "timeout"] {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
        if !found {
            return Some(format!("`{tool}` is not on PATH"));
        }
    }
    let taken: Vec<u16> = [7988u16, 7989]
        .into_iter()
        .filter(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_err())
        .collect();
    if !taken.is_empty() {
        return Some(format!(
            "port(s) {taken:?} on 127.0.0.1 are taken, and the README's blocks use 7988 and 7989"
        ));
    }
    None
}

fn mounted_under(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(PathBuf::from))
        .filter(|m| m.starts_with(dir))
        .collect()
}

/// Kills a block's process group and undoes its mounts when dropped.
struct Group {
    pgid: i32,
    dir: PathBuf,
}

impl Drop for Group {
    fn drop(&mut self) {
        for m in mounted_under(&self.dir) {
            let _ = Command::new("fusermount3").arg("-u").arg(&m).status();
        }
        // SAFETY: kill(2) with a negative pid signals the group the test created.
        unsafe {
            libc::kill(-self.pgid, libc::SIGKILL);
        }
        for m in mounted_under(&self.dir) {
            let _ = Command::new("umount").arg("-l").arg(&m).status();
        }
    }
}

/// Runs one block; returns its stdout and stderr (files, not pipes: the background jobs of a
/// block may hold its output open).
fn run_block(block: &str, dir: &Path) -> (bool, String, String) {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_pfsqos")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (out_path, err_path) = (dir.join(".stdout"), dir.join(".stderr"));
    let mut child = Command::new("bash")
        .args(["-e", "-c", block])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("PFSQOS_CLUSTER")
        .env_remove("PFSQOS_STATE")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let _group = Group {
        pgid: child.id() as i32,
        dir: dir.to_path_buf(),
    };
    let deadline = Instant::now() + BLOCK_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let err = match status {
        None => format!("{err}\n(the block ran longer than {BLOCK_TIMEOUT:?})"),
        Some(_) => err,
    };
    (status.is_some_and(|s| s.success()), out, err)
}

#[test]
fn the_readme_blocks_are_marked() {
    let blocks = tested_blocks(&readme());
    assert_eq!(blocks.len(), 2, "the loopback tour and the manual start-up");
    assert!(blocks[0].contains("pfsqos up") && blocks[0].contains("pfsqos down"));
    assert!(blocks[1].contains("pfsqos keygen") && blocks[1].contains("pfsqos mount"));
}

#[test]
fn the_readme_live_blocks_run_as_written() {
    if let Some(why) = skip_reason() {
        pfsqos_testkit::skip("the_readme_live_blocks_run_as_written", &why);
        return;
    }
    for (i, block) in tested_blocks(&readme()).iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        let (ok, out, err) = run_block(block, tmp.path());
        assert!(
            ok,
            "README block {i} failed:\n{block}\n--- stdout\n{out}\n--- stderr\n{err}"
        );
        assert!(
            mounted_under(tmp.path()).is_empty(),
            "block {i} left a mount behind:\n{out}\n{err}"
        );
        match i {
            0 => {
                // The tour: lctl found the cluster without flags and saw dd's JobID; stat
                // printed the cumulative block and two intervals, and recorded them.
                let uid = unsafe { libc::getuid() };
                assert!(
                    out.contains(&format!("- job_id:          dd.{uid}")),
                    "{out}"
                );
                assert!(out.contains("lmm_stripe_count:  1\n"), "{out}");
                assert_eq!(out.matches("---\ntimestamp: ").count(), 3, "{out}");
                assert!(out.contains("cumulative: true\n"), "{out}");
                assert!(tmp.path().join("out/live/timeseries.csv").is_file());
                assert!(out.contains("stopped mount (pid"), "{out}");
            }
            _ => {
                // By hand: the key is private, the job's bytes reached job_stats.
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(tmp.path().join("pq/key"))
                    .unwrap()
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o777, 0o600);
                assert!(out.contains("- job_id:          42\n"), "{out}");
                assert!(out.contains(" 8388608, sumsq:"), "{out}");
            }
        }
    }
}
