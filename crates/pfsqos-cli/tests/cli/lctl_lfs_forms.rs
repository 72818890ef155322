//! Each `lctl` and `lfs` form against Lustre's documented behaviour (lctl's usage text in
//! lustre/utils/lctl.c, lfs getstripe's formats in lustre/utils/liblustreapi.c; see
//! docs/live.md), with the real binary on a loopback cluster started by `pfsqos up` (ports
//! picked by the daemons). The client tools are run without `--server` or `--key-file`: they
//! find the cluster from the working directory, as after the README's `pfsqos up`. The layout
//! test needs /dev/fuse and skips, saying so, without it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pfsqos_env(args: &[&str], cwd: &Path, env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pfsqos"));
    c.args(args)
        .current_dir(cwd)
        .env_remove("PFSQOS_CLUSTER")
        .env_remove("PFSQOS_STATE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn pfsqos(args: &[&str], cwd: &Path) -> Output {
    pfsqos_env(args, cwd, &[])
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `pfsqos down` on drop, so a failed assertion leaves no daemon behind.
struct Up(PathBuf);

impl Drop for Up {
    fn drop(&mut self) {
        let _ = pfsqos(&["down", "c.toml"], &self.0);
    }
}

/// A cluster file without `state_dir`: its state is `./pfsqos-state`, where the client
/// tools look first.
fn up(dir: &Path, mount: bool) -> Up {
    let cluster = format!(
        "[mds]\nlisten = \"127.0.0.1:0\"\n[[oss]]\nlisten = \"127.0.0.1:0\"\n\
         osts = [\"data/ost0\", \"data/ost1\"]\n[mount]\nenabled = {mount}\npath = \"mnt\"\n"
    );
    std::fs::write(dir.join("c.toml"), cluster).unwrap();
    let out = pfsqos(&["up", "c.toml"], dir);
    let guard = Up(dir.to_path_buf());
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    guard
}

fn lctl(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut a = vec!["lctl"];
    a.extend_from_slice(args);
    let o = pfsqos(&a, dir);
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

const OST0: &str = "obdfilter.pfsqos-OST0000";
const OST1: &str = "obdfilter.pfsqos-OST0001";

#[test]
fn lctl_forms_as_lustre_documents_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let _up = up(dir, false);

    // get_param: `.` and `/` separate components; glob(3) patterns within one.
    let both = format!("{OST0}.job_stats=\n{OST1}.job_stats=\n");
    for pattern in [
        "obdfilter.*.job_stats",
        "obdfilter/*/job_stats",
        "obdfilter.pfsqos-OST000[01].job_stats",
        "obdfilter.pfsqos-OST000?.job_stats",
        "obdfilter.pfsqos-OST000{0,1}.job_stats",
        "obdfilter.*.job_st*",
    ] {
        assert_eq!(
            lctl(dir, &["get_param", pattern]),
            (Some(0), both.clone(), String::new()),
            "{pattern}"
        );
    }
    let (code, out, _) = lctl(
        dir,
        &[
            "get_param",
            "obdfilter.pfsqos-OST000[!0].job_cleanup_interval",
        ],
    );
    assert_eq!(
        (code, out.as_str()),
        (
            Some(0),
            format!("{OST1}.job_cleanup_interval=600\n").as_str()
        )
    );

    // -n values only; -N names only (directories too), -F marks them.
    let (code, out, _) = lctl(
        dir,
        &["get_param", "-n", "obdfilter.*.job_cleanup_interval"],
    );
    assert_eq!((code, out.as_str()), (Some(0), "600\n600\n"));
    let (_, out, _) = lctl(dir, &["get_param", "-N", "obdfilter.*"]);
    assert_eq!(out, format!("{OST0}\n{OST1}\n"));
    let (_, out, _) = lctl(dir, &["get_param", "-N", "-F", "obdfilter.*"]);
    assert_eq!(out, format!("{OST0}/\n{OST1}/\n"));
    let (_, out, _) = lctl(
        dir,
        &["get_param", "-N", "-F", "obdfilter/pfsqos-OST0000/*"],
    );
    assert_eq!(
        out,
        format!("{OST0}.job_cleanup_interval=\n{OST0}.job_stats=\n")
    );
    // -R: the parameters under a directory.
    let (code, out, _) = lctl(dir, &["get_param", "-R", OST0]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!("{OST0}.job_cleanup_interval=600\n{OST0}.job_stats=\n")
    );
    // A directory without -R is named as one.
    let (code, _, err) = lctl(dir, &["get_param", "obdfilter.*"]);
    assert_eq!(code, Some(21), "EISDIR");
    assert!(
        err.contains("param_path 'obdfilter.*': Is a directory"),
        "{err}"
    );

    // list_param, -F, -D, -R.
    let (code, out, _) = lctl(dir, &["list_param", "obdfilter.*"]);
    assert_eq!((code, out), (Some(0), format!("{OST0}\n{OST1}\n")));
    let (_, out, _) = lctl(dir, &["list_param", "-D", "obdfilter.*.*"]);
    assert_eq!(out, "", "no directories below the OSTs");
    let (_, out, _) = lctl(dir, &["list_param", "-R", "-F", "obdfilter"]);
    assert_eq!(
        out,
        format!(
            "obdfilter/\n{OST0}/\n{OST0}.job_cleanup_interval=\n{OST0}.job_stats=\n\
             {OST1}/\n{OST1}.job_cleanup_interval=\n{OST1}.job_stats=\n"
        )
    );
    let (_, out, _) = lctl(dir, &["list_param", "-F", "ost.OSS.ost_io.nrs_policies"]);
    assert_eq!(out, "ost.OSS.ost_io.nrs_policies=\n");
    let (code, _, err) = lctl(dir, &["list_param", "no.such"]);
    assert_eq!(code, Some(2), "lctl exits with ENOENT");
    assert!(
        err.starts_with(
            "error: list_param: param_path 'no.such': No such file or directory\n\
             error: list_param: listing 'no.such': No such file or directory\n"
        ),
        "{err}"
    );

    // One unreadable parameter does not hide the others; it is reported, exit ENODEV.
    let (code, out, err) = lctl(
        dir,
        &[
            "get_param",
            "ost.OSS.ost_io.nrs_tbf_rule",
            "ost.OSS.ost_io.nrs_policies",
        ],
    );
    assert_eq!(code, Some(19), "{err}");
    assert!(out.starts_with("ost.OSS.ost_io.nrs_policies=\n"), "{out}");
    assert!(
        err.starts_with("error: read_param: 'ost.OSS.ost_io.nrs_tbf_rule': No such device\n"),
        "{err}"
    );
    // A bad name is answered (EINVAL), and the same connection serves the next name.
    let (code, out, err) = lctl(
        dir,
        &["get_param", "a b", "obdfilter.*.job_cleanup_interval"],
    );
    assert_eq!(code, Some(22), "EINVAL");
    assert!(err.contains(": Invalid argument\n"), "{err}");
    assert!(!err.contains("connection closed"), "{err}");
    assert_eq!(
        out,
        format!("{OST0}.job_cleanup_interval=600\n{OST1}.job_cleanup_interval=600\n")
    );

    // set_param through a `/` path; -P is refused with what to do instead.
    let (code, out, err) = lctl(dir, &["set_param", "obdfilter/*/job_cleanup_interval=300"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        format!("{OST0}.job_cleanup_interval=300\n{OST1}.job_cleanup_interval=300\n")
    );
    let (code, out, err) = lctl(
        dir,
        &["set_param", "-P", "obdfilter.*.job_cleanup_interval=5"],
    );
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert!(
        err.contains("pfsqos has no MGS") && err.contains("ExecStartPost="),
        "{err}"
    );
    assert_eq!(
        lctl(
            dir,
            &["get_param", "-n", "obdfilter.*.job_cleanup_interval"]
        )
        .1,
        "300\n300\n"
    );

    // Host names in --server; explicit flags override what is found.
    let endpoints = std::fs::read_to_string(dir.join("pfsqos-state/endpoints.toml")).unwrap();
    let port = endpoints
        .lines()
        .find_map(|l| l.strip_prefix("oss = [\"127.0.0.1:"))
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("{endpoints}"))
        .to_string();
    let server = format!("localhost:{port}");
    let (code, out, err) = lctl(
        dir,
        &[
            "--server",
            &server,
            "get_param",
            "-n",
            "obdfilter.*.job_cleanup_interval",
        ],
    );
    assert_eq!((code, out.as_str()), (Some(0), "300\n300\n"), "{err}");

    // Elsewhere: nothing found, every place named; PFSQOS_STATE finds it.
    let elsewhere = tempfile::tempdir().unwrap();
    let o = pfsqos(
        &["lctl", "get_param", "obdfilter.*.job_stats"],
        elsewhere.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("no pfsqos cluster found; looked at:"), "{err}");
    assert!(
        err.contains("PFSQOS_CLUSTER: not set") && err.contains("pfsqos up"),
        "{err}"
    );
    let o = pfsqos_env(
        &["lctl", "get_param", "-N", "obdfilter.*"],
        elsewhere.path(),
        &[("PFSQOS_STATE", &dir.join("pfsqos-state"))],
    );
    assert_eq!(
        text(&o.stdout),
        format!("{OST0}\n{OST1}\n"),
        "{}",
        text(&o.stderr)
    );
    let o = pfsqos_env(
        &["stat", "-n", "1"],
        elsewhere.path(),
        &[("PFSQOS_CLUSTER", &dir.join("c.toml"))],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));

    // stat: the cumulative block at once, then the intervals; a file-system view in each.
    let o = pfsqos(&["stat", "-i", "0.2", "-n", "2"], dir);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(out.matches("---\ntimestamp: ").count(), 2, "{out}");
    assert!(
        out.contains("cumulative: true\n") && out.contains("interval_s: 0.2\n"),
        "{out}"
    );
    assert_eq!(out.matches("\nfilesystem: []\n").count(), 2, "{out}");
}

#[test]
fn keygen_writes_a_private_key_and_keeps_an_existing_one() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let o = pfsqos(&["keygen", "k/cluster.key"], tmp.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let key = tmp.path().join("k/cluster.key");
    let first = std::fs::read_to_string(&key).unwrap();
    assert_eq!(first.trim().len(), 64);
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let o = pfsqos(&["keygen", "k/cluster.key"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&key).unwrap(), first);
    let o = pfsqos(&["keygen", "--force", "k/cluster.key"], tmp.path());
    assert!(o.status.success());
    assert_ne!(std::fs::read_to_string(&key).unwrap(), first);
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn lfs_forms_as_lustre_documents_them() {
    if !Path::new("/dev/fuse").exists() {
        pfsqos_testkit::skip(
            "lfs_forms_as_lustre_documents_them",
            "/dev/fuse is missing (modprobe fuse)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let _up = up(dir, true);
    let mnt = dir.join("mnt");
    let run = |args: &[&str]| {
        let mut a = args.to_vec();
        let o = pfsqos(
            &{
                a.insert(0, "getstripe");
                a
            },
            dir,
        );
        (o.status.code(), text(&o.stdout), text(&o.stderr))
    };

    // setstripe errors name the limit and what is allowed.
    let o = pfsqos(&["setstripe", "-c", "5", "mnt/f5"], dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("stripe count 5: this file system has 2 OST(s); allowed -1 (every OST), 0 (the directory's or file system's default) or 1..=2"),
        "{}",
        text(&o.stderr)
    );
    let o = pfsqos(&["setstripe", "-S", "100k", "mnt/f6"], dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr)
            .contains("stripe size 102400 bytes: must be a multiple of 64 KiB (65536 bytes)"),
        "{}",
        text(&o.stderr)
    );
    assert!(!mnt.join("f5").exists() && !mnt.join("f6").exists());

    // A directory with a default and two files in it, one in a subdirectory.
    std::fs::create_dir_all(mnt.join("d/sub")).unwrap();
    for d in ["mnt/d", "mnt/d/sub"] {
        let o = pfsqos(&["setstripe", "-c", "2", "-S", "128k", d], dir);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    std::fs::write(mnt.join("d/a"), vec![7u8; 300_000]).unwrap();
    std::fs::write(mnt.join("d/sub/b"), b"x").unwrap();

    // -c, -S, -i: the bare value, no path line (lfs's depth 0).
    assert_eq!(
        run(&["-c", "mnt/d/a"]),
        (Some(0), "2\n".into(), String::new())
    );
    assert_eq!(run(&["-S", "mnt/d/a"]).1, "131072\n");
    let (_, idx, _) = run(&["-i", "mnt/d/a"]);
    assert!(idx == "0\n" || idx == "1\n", "{idx}");
    assert_eq!(
        run(&["-c", "-S", "mnt/d/a"]).1,
        "lmm_stripe_count:  2\nlmm_stripe_size:   131072\n"
    );
    // On a directory, its own default only, fields on one line.
    assert_eq!(run(&["-c", "mnt/d"]).1, "2\n");
    assert_eq!(
        run(&["-c", "-S", "mnt/d"]).1,
        "stripe_count:  2 stripe_size:   131072\n"
    );
    // -d: the directory alone (depth 0: no path line, as lfs).
    assert_eq!(
        run(&["-d", "mnt/d"]).1,
        "stripe_count:  2 stripe_size:   131072 pattern:       raid0 stripe_offset: -1\n"
    );
    // No flag: the directory, a blank line, its entries (one level: sub's default, not b).
    let (code, out, err) = run(&["mnt/d"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("mnt/d\nstripe_count:  2 stripe_size:   131072 pattern:       raid0 stripe_offset: -1\n\nmnt/d/a\nlmm_stripe_count:  2\n"), "{out}");
    assert!(
        out.contains("\tobdidx\t\t objid\t\t objid\t\t group\n"),
        "{out}"
    );
    assert!(out.contains("\nmnt/d/sub\nstripe_count:  2 "), "{out}");
    assert!(!out.contains("mnt/d/sub/b"), "{out}");
    // -r: every level.
    let (_, out, _) = run(&["-r", "mnt/d"]);
    assert!(out.contains("mnt/d/sub/b\nlmm_stripe_count:  2\n"), "{out}");
    // -r -c: paths, with bare values.
    let (_, out, _) = run(&["-r", "-c", "mnt/d"]);
    assert_eq!(out, "mnt/d\n2\nmnt/d/a\n2\nmnt/d/sub\n2\nmnt/d/sub/b\n2\n");
    // -y: YAML, objects as FIDs, no path line.
    let (_, out, _) = run(&["-y", "mnt/d/sub/b"]);
    assert!(
        out.starts_with("lmm_stripe_count:  2\nlmm_stripe_size:   131072\n"),
        "{out}"
    );
    assert!(out.contains("lmm_objects:\n      - l_ost_idx: "), "{out}");
    assert!(out.contains("        l_fid:     0x1000"), "{out}");
    // Off the mount: said, with where the cluster found here is mounted.
    let (code, _, err) = run(&["c.toml"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("not on a pfsqos mount")
            && err.contains(&format!("mounted at {}", mnt.display())),
        "{err}"
    );
}

/// Usage errors exit 4, as lctl's: a command's parser returns CMD_HELP (4,
/// include/libcfs/util/parser.h) and lctl_main returns it (lustre/utils/lctl.c); an unknown
/// command exits 1 (cfs_parser_execarg returns -1, lib/libcfs/parser.c). Help asked
/// for is no error (0), and another subcommand's usage error keeps the CLI's 2. No cluster is
/// needed: the arguments are refused before any connection.
#[test]
fn lctl_usage_errors_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["lctl", "get_param"][..],
        &["lctl", "list_param"],
        &["lctl", "set_param"],
        &["lctl", "get_param", "-Z", "x"],
        &["lctl", "get_param", "-n", "-N", "x"],
    ] {
        let o = pfsqos(args, dir.path());
        assert_eq!(o.status.code(), Some(4), "{args:?}: {}", text(&o.stderr));
        assert!(!o.stderr.is_empty(), "{args:?}: the usage error is said");
    }
    let o = pfsqos(&["lctl", "no_such_command"], dir.path());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let o = pfsqos(&["lctl", "get_param", "--help"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = pfsqos(&["sim", "--no-such-flag"], dir.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

/// Lustre's own `lljobstat` (lustre/utils/lljobstat, Python with PyYAML; GPL, so never in this
/// repository: taken at run time from `PFSQOS_LLJOBSTAT`, a file, or from a lustre-release git
/// directory in `PFSQOS_LUSTRE_RELEASE_GIT`) runs every option against a live cluster through
/// `pfsqos lctl` (an `lctl` on PATH that runs it): it finds the jobs written through the mount
/// and, with `-m`, the missing MDT is `list_param`'s ENOENT, which lljobstat takes as "no MDT".
#[test]
fn lljobstat_reads_the_live_cluster_with_every_option() {
    let skip =
        |why: &str| pfsqos_testkit::skip("lljobstat_reads_the_live_cluster_with_every_option", why);
    if !Path::new("/dev/fuse").exists() {
        return skip("/dev/fuse is missing (modprobe fuse)");
    }
    let yaml = Command::new("python3").args(["-c", "import yaml"]).output();
    if !yaml.is_ok_and(|o| o.status.success()) {
        return skip("python3 with PyYAML is missing (apt-get install python3-yaml)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = dir.join("lljobstat");
    if let Some(file) = std::env::var_os("PFSQOS_LLJOBSTAT") {
        std::fs::copy(&file, &script).unwrap();
    } else if let Some(git) = std::env::var_os("PFSQOS_LUSTRE_RELEASE_GIT") {
        let o = Command::new("git")
            .arg("--git-dir")
            .arg(&git)
            .args(["show", "HEAD:lustre/utils/lljobstat"])
            .output()
            .unwrap();
        if !o.status.success() {
            return skip(&format!("no lustre/utils/lljobstat in {git:?}"));
        }
        std::fs::write(&script, o.stdout).unwrap();
    } else {
        return skip(
            "lljobstat not found: set PFSQOS_LLJOBSTAT to the script or \
             PFSQOS_LUSTRE_RELEASE_GIT to a lustre-release git directory",
        );
    }
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let lctl = bin.join("lctl");
    pfsqos_testkit::write_script(
        &lctl,
        &format!(
            "#!/bin/sh\nexec '{}' lctl \"$@\"\n",
            env!("CARGO_BIN_EXE_pfsqos")
        ),
    );
    let _up = up(dir, true);
    // Two jobs write through the mount; the cluster's job ids are `%e.%u` (`dd.0`, `cp.0`).
    let o = Command::new("dd")
        .args([
            "if=/dev/zero",
            "of=mnt/f1",
            "bs=64k",
            "count=8",
            "conv=fsync",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "dd: {}", text(&o.stderr));
    let o = Command::new("cp")
        .args(["mnt/f1", "mnt/f2"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "cp: {}", text(&o.stderr));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let stats = dir.join("job_stats.txt");
    let o = pfsqos(&["lctl", "get_param", "obdfilter.*.job_stats"], dir);
    assert!(o.status.success(), "{}", text(&o.stderr));
    std::fs::write(&stats, &o.stdout).unwrap();
    let stats_arg = format!("--statsfile={}", stats.display());
    for args in [
        &["-n", "1"][..],
        &["-n", "2", "-i", "1", "-c", "1"],
        &["--count", "2", "--repeats", "1", "--interval", "1"],
        &["-o", "-n", "1"],
        &["--ost", "-n", "1"],
        &["-m", "-n", "1"],
        &["--mdt", "-n", "1"],
        &["--param", "obdfilter.*.job_stats", "-n", "1"],
        &["--fullname", "-n", "1"],
        &["--no-fullname", "-n", "1"],
        &[&stats_arg, "-n", "1"],
    ] {
        let o = Command::new("python3")
            .arg(&script)
            .args(args)
            .current_dir(dir)
            .env("PATH", &path)
            .env_remove("PFSQOS_CLUSTER")
            .env_remove("PFSQOS_STATE")
            .output()
            .unwrap();
        let out = text(&o.stdout);
        assert!(
            o.status.success(),
            "lljobstat {args:?}: {out}\n{}",
            text(&o.stderr)
        );
        assert!(
            out.contains("timestamp: ") && out.contains("top_jobs:"),
            "{args:?}: {out}"
        );
        let mdt_only = args.contains(&"-m") || args.contains(&"--mdt");
        let listed = ["- dd.0:", "- cp.0:"]
            .iter()
            .filter(|j| out.contains(*j))
            .count();
        let expected = match () {
            // No MDT job_stats: no job listed.
            _ if mdt_only => 0,
            _ if args.contains(&"-c") => 1,
            _ => 2,
        };
        assert_eq!(listed, expected, "{args:?}: {out}");
        if args.contains(&"--fullname") {
            assert!(out.contains("write: "), "{args:?}: {out}");
        } else if !mdt_only {
            assert!(out.contains("wr: "), "{args:?}: {out}");
        }
    }
}
