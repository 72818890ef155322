//! The build's shape, where it decides how long the suite takes: the Python wheel's build
//! (maturin, which builds `pfsqos-py` alone) must resolve every crate it shares with the
//! workspace to the features `cargo test --workspace` built it with, or it compiles those
//! crates, and everything above them, a second time.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Each package of `cargo tree` (with `args`) and its features, host and target merged, as
/// `cargo tree` prints them.
fn features(args: &[&str]) -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["tree", "--frozen", "--prefix", "none", "--no-dedupe"])
        .args(["-f", "{p} [{f}]"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut all: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let (Some(open), true) = (line.rfind(" ["), line.ends_with(']')) else {
            continue;
        };
        let mut words = line.split(' ');
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            continue;
        };
        let set = all.entry(format!("{name} {version}")).or_default();
        for f in line[open + 2..line.len() - 1]
            .split(',')
            .filter(|f| !f.is_empty())
        {
            if !set.iter().any(|g| g == f) {
                set.push(f.to_string());
            }
        }
    }
    for set in all.values_mut() {
        set.sort();
    }
    all
}

#[test]
fn python_build_shares_the_workspace_features() {
    let workspace = features(&["--workspace", "-e", "normal,build,dev"]);
    let python = features(&["-p", "pfsqos-py", "-e", "normal,build"]);
    assert!(python.len() > 20, "{python:?}");
    let differ: Vec<String> = python
        .iter()
        .filter_map(|(package, have)| {
            let want = workspace.get(package)?;
            (have != want).then(|| format!("{package}: {have:?}, the workspace {want:?}"))
        })
        .collect();
    assert!(
        differ.is_empty(),
        "name the missing features in crates/pfsqos-py/Cargo.toml's unification list:\n{}",
        differ.join("\n")
    );
}
