//! Runs `pfsqos ossd` as a process and drives it with `pfsqos lctl`, as a user does. Readiness
//! is explicit: the daemon prints its address once it listens.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn lctl(addr: &str, key: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["lctl", "--server", addr, "--key-file"])
        .arg(key)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn ossd_and_lctl_on_loopback() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    // `lctl` is an administrator's: it proves the servers' own key, never the cluster key.
    let server_key = tmp.path().join("server.key");
    std::fs::write(&server_key, "fedcba9876543210fedcba9876543210\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["ossd", "--listen", "127.0.0.1:0", "--fsname", "testfs"])
        .arg("--ost")
        .arg(tmp.path().join("ost0"))
        .arg("--key-file")
        .arg(&key)
        .arg("--server-key-file")
        .arg(&server_key)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _daemon = Daemon(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("ossd listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();

    let out = lctl(
        &addr,
        &server_key,
        &["set_param", "ost.OSS.ost_io.nrs_policies=tbf jobid"],
    );
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ost.OSS.ost_io.nrs_policies=tbf jobid\n"
    );
    let out = lctl(
        &addr,
        &server_key,
        &[
            "set_param",
            "ost.OSS.ost_io.nrs_tbf_rule=start a jobid={dd.*} rate=5",
        ],
    );
    assert!(out.status.success());
    let out = lctl(
        &addr,
        &server_key,
        &["get_param", "ost.OSS.ost_io.nrs_tbf_rule"],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ost.OSS.ost_io.nrs_tbf_rule=\nregular_requests:\nCPT 0:\na jobid={dd.*} 5, ref 0\n\
         default * 10000, ref 0\nhigh_priority_requests:\nCPT 0:\na jobid={dd.*} 5, ref 0\n\
         default * 10000, ref 0\n"
    );
    let out = lctl(
        &addr,
        &server_key,
        &["get_param", "-n", "obdfilter.*.job_stats"],
    );
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "\n");
    // A refused parameter: lctl's exit status (the errno, EPERM = 1) and its error line.
    let out = lctl(
        &addr,
        &server_key,
        &["set_param", "ost.OSS.ost_io.nrs_tbf_rule=stop default"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with(
        "error: set_param: setting ost.OSS.ost_io.nrs_tbf_rule=stop default: Operation not permitted\n"
    ));
    // A wrong key: exit code 2.
    let bad = tmp.path().join("bad");
    std::fs::write(&bad, "not-the-right-key-at-all").unwrap();
    let out = lctl(&addr, &bad, &["get_param", "obdfilter.*.job_stats"]);
    assert_eq!(out.status.code(), Some(2));
    // Nor does the cluster key, which every client node holds, make an administrator.
    let out = lctl(&addr, &key, &["get_param", "obdfilter.*.job_stats"]);
    assert_eq!(out.status.code(), Some(2));
}
