//! The Debian package (`scripts/package-deb.sh`), built from the binary this test
//! build made (`--binary`, so no release build here) and checked with dpkg-deb itself: its
//! fields, its file list and modes, the units' commands, and the binary run from the unpacked
//! tree. Skipped, with a message, where dpkg-deb is missing (not a Debian-family machine).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have_dpkg() -> bool {
    Command::new("dpkg-deb").arg("--version").output().is_ok()
}

fn package(out: &Path, maintainer: Option<&str>) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join("scripts/package-deb.sh"))
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_pfsqos"))
        .arg("--out")
        .arg(out)
        // xz takes minutes on a debug binary; the package's contents do not depend on it.
        .args(["--compress", "gzip"])
        .env_remove("PFSQOS_DEB_MAINTAINER");
    if let Some(m) = maintainer {
        cmd.env("PFSQOS_DEB_MAINTAINER", m);
    }
    cmd.output().expect("bash runs")
}

/// Runs dpkg-deb with `args`; its stdout.
fn dpkg_deb(args: &[&OsStr]) -> String {
    let out = Command::new("dpkg-deb")
        .args(args)
        .output()
        .expect("dpkg-deb runs");
    assert!(
        out.status.success(),
        "dpkg-deb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("dpkg-deb prints text")
}

/// The systemd units the repository ships, by file name.
fn repo_units() -> Vec<String> {
    let mut units: Vec<String> = std::fs::read_dir(repo_root().join("packaging/systemd"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".service"))
        .collect();
    units.sort();
    assert!(units.len() >= 5, "ossd, mds, mount, agent, coordinator");
    units
}

#[test]
fn the_package_installs_the_binary_units_and_docs() {
    if !have_dpkg() {
        pfsqos_testkit::skip(
            "the_package_installs_the_binary_units_and_docs",
            "no dpkg-deb here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = package(tmp.path(), None);
    assert!(
        out.status.success(),
        "package-deb.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deb = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert_eq!(deb.parent(), Some(tmp.path()), "written where --out said");

    // The control fields.
    let field = |name: &str| {
        dpkg_deb(&["-f".as_ref(), deb.as_os_str(), name.as_ref()])
            .trim()
            .to_string()
    };
    assert_eq!(field("Package"), "pfsqos");
    assert_eq!(field("Version"), env!("CARGO_PKG_VERSION"));
    let depends = field("Depends");
    assert!(depends.starts_with("libc6"), "{depends}");
    assert!(
        depends.contains("fuse3"),
        "the mount needs fusermount3: {depends}"
    );
    assert!(field("Installed-Size").parse::<u64>().unwrap() > 0);

    // The file list: the binary executable and owned by root, every unit, the docs.
    let list = dpkg_deb(&["-c".as_ref(), deb.as_os_str()]);
    let line_of = |path: &str| {
        list.lines()
            .find(|l| l.ends_with(&format!(" ./{path}")))
            .unwrap_or_else(|| panic!("{path} is not in the package:\n{list}"))
            .to_string()
    };
    let bin = line_of("usr/bin/pfsqos");
    assert!(bin.starts_with("-rwxr-xr-x root/root"), "{bin}");
    for unit in repo_units() {
        let l = line_of(&format!("usr/lib/systemd/system/{unit}"));
        assert!(l.starts_with("-rw-r--r-- root/root"), "{l}");
    }
    line_of("usr/share/doc/pfsqos/copyright");
    line_of("usr/share/doc/pfsqos/live.md");
    line_of("usr/share/pfsqos/grafana/pfsqos-dashboard.json");
    let suite = line_of("usr/share/pfsqos/scenarios/bakeoff/suite.toml");
    assert!(suite.starts_with("-rw-r--r-- root/root"), "{suite}");

    // Unpacked: the binary runs, and every unit's commands run it from /usr/bin.
    let root = tmp.path().join("root");
    dpkg_deb(&["-x".as_ref(), deb.as_os_str(), root.as_os_str()]);
    let version = Command::new(root.join("usr/bin/pfsqos"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8(version.stdout).unwrap().trim(),
        format!("pfsqos {}", env!("CARGO_PKG_VERSION"))
    );
    for unit in repo_units() {
        let text =
            std::fs::read_to_string(root.join("usr/lib/systemd/system").join(&unit)).unwrap();
        assert!(
            !text.contains("/usr/local/bin"),
            "{unit} still names /usr/local/bin"
        );
        let exec_start = text
            .lines()
            .find(|l| l.starts_with("ExecStart="))
            .unwrap_or_else(|| panic!("{unit} has no ExecStart"));
        assert!(
            exec_start.starts_with("ExecStart=/usr/bin/pfsqos "),
            "{unit}: {exec_start}"
        );
    }
    let copyright = std::fs::read_to_string(root.join("usr/share/doc/pfsqos/copyright")).unwrap();
    assert!(copyright.contains("License: Apache-2.0"));
    assert!(
        copyright.contains("Apache License"),
        "the license text follows"
    );
}

#[test]
fn a_maintainer_that_would_add_fields_is_refused() {
    if !have_dpkg() {
        pfsqos_testkit::skip(
            "a_maintainer_that_would_add_fields_is_refused",
            "no dpkg-deb here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for hostile in [
        "x <a@b>\nDepends: evil",
        "x <a@b>\rPre-Depends: evil",
        "no address",
        "two <a@b> <c@d>",
    ] {
        let out = package(tmp.path(), Some(hostile));
        assert!(!out.status.success(), "{hostile:?} was accepted");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("PFSQOS_DEB_MAINTAINER"),
            "{hostile:?}: the error names the variable"
        );
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing written for a refused maintainer"
    );
    let ok = package(tmp.path(), Some("Site Storage Team <storage@example.org>"));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let deb = PathBuf::from(String::from_utf8(ok.stdout).unwrap().trim());
    assert_eq!(
        dpkg_deb(&["-f".as_ref(), deb.as_os_str(), "Maintainer".as_ref()]).trim(),
        "Site Storage Team <storage@example.org>"
    );
}
