//! docs/architecture.md checked against the code, for the claims a machine can check:
//!
//! * the code map's dependency table is exactly the pfsqos dependencies (and dev-dependencies)
//!   each crate's Cargo.toml declares, and names every crate of the workspace;
//! * every file or directory the page names exists: repository paths (`crates/...`,
//!   `scripts/...`, `docs/...`) from the root, and bare file names (`nrs.rs`, `forecast/`) in
//!   the crate whose section names them;
//! * every Rust item the page names (`NrsPolicyDescriptor`, `Nrs::running`, `PLACER_ROWS`) is
//!   defined somewhere in the workspace's sources.
//!
//! The prose claims a machine cannot check (what a component decides, what it never does) are
//! kept true by review; these keep the names under them from drifting.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn page() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).unwrap()
}

/// Every backticked span of `text`, in order.
fn code_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push(span.to_string());
        }
    }
    spans
}

/// Crate name (without `pfsqos-`) to its (dependencies, dev-dependencies) among pfsqos crates.
type Graph = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn manifests() -> Graph {
    let mut graph = Graph::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let doc: toml::Table = std::fs::read_to_string(&manifest).unwrap().parse().unwrap();
        let name = doc["package"]["name"].as_str().unwrap();
        let short = name.strip_prefix("pfsqos-").unwrap_or(name).to_string();
        let deps = |table: &str| -> BTreeSet<String> {
            doc.get(table)
                .and_then(|t| t.as_table())
                .map(|t| {
                    t.keys()
                        .filter_map(|k| k.strip_prefix("pfsqos-"))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        graph.insert(short, (deps("dependencies"), deps("dev-dependencies")));
    }
    graph
}

/// The code map's table: `pfsqos-x   a, b   [c, d]`, a line starting with spaces continuing
/// the row above it.
fn documented_graph(text: &str) -> Graph {
    let start = text.find("## Code map").expect("a Code map section");
    let block = &text[start..];
    let open = block.find("```\n").unwrap() + 4;
    let close = open + block[open..].find("```").unwrap();
    let mut rows: Vec<String> = Vec::new();
    for line in block[open..close].lines().skip(1) {
        if line.starts_with(' ') {
            rows.last_mut().unwrap().push_str(line);
        } else if !line.trim().is_empty() {
            rows.push(line.to_string());
        }
    }
    let list = |s: &str| -> BTreeSet<String> {
        s.split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty() && *d != "(none)")
            .map(str::to_string)
            .collect()
    };
    rows.iter()
        .map(|row| {
            let (name, rest) = row.split_once(' ').unwrap();
            let name = name.strip_prefix("pfsqos-").unwrap().to_string();
            let (deps, dev) = match rest.split_once('[') {
                Some((deps, dev)) => (deps, dev.trim_end().trim_end_matches(']')),
                None => (rest, ""),
            };
            (name, (list(deps), list(dev)))
        })
        .collect()
}

#[test]
fn the_code_map_is_the_crate_graph() {
    let documented = documented_graph(&page());
    let actual = manifests();
    let names = |g: &Graph| g.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&documented),
        names(&actual),
        "the code map must list exactly the workspace's crates"
    );
    let mut wrong = Vec::new();
    for (name, (deps, dev)) in &actual {
        let (doc_deps, doc_dev) = &documented[name];
        // A dev-dependency that is also a dependency is not listed twice.
        let dev_only: BTreeSet<String> = dev.difference(deps).cloned().collect();
        if doc_deps != deps || doc_dev != &dev_only {
            wrong.push(format!(
                "pfsqos-{name}: the page says {doc_deps:?} [{doc_dev:?}], Cargo.toml {deps:?} [{dev_only:?}]"
            ));
        }
    }
    assert!(wrong.is_empty(), "the code map's dependencies: {wrong:#?}");
}

/// Every file under `dir`, as paths relative to it (directories end in `/`).
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if rel.starts_with("target") {
                continue;
            }
            if p.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

/// A span that names a file or directory: a repository path, or a bare `*.rs` name or `name/`.
fn names_a_file(span: &str) -> bool {
    let bare = !span.contains(' ')
        && !span.contains('<')
        && !span.contains('*')
        && !span.contains("::")
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    bare && (span.ends_with(".rs") || span.ends_with('/') || span.contains('/'))
}

#[test]
fn every_file_the_page_names_exists() {
    let text = page();
    let root = root();
    let mut missing = Vec::new();
    // The crate a bare name belongs to: the section's, or a bullet's in "The live crates".
    let mut section_crate: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            section_crate = h
                .split('`')
                .nth(1)
                .and_then(|s| s.strip_prefix("crates/"))
                .map(str::to_string);
        }
        let line_crate = line
            .strip_prefix("* `pfsqos-")
            .and_then(|s| s.split('`').next())
            .map(|s| format!("pfsqos-{s}"))
            .or_else(|| section_crate.clone());
        for span in code_spans(line) {
            let span = span.trim_end_matches(',');
            if !names_a_file(span) {
                continue;
            }
            if span.starts_with('/') {
                continue; // the machine's (`/dev/fuse`, `/proc`), not the repository's
            }
            let top = span.split('/').next().unwrap();
            let repo_path = if top.starts_with("pfsqos-") {
                Some(format!("crates/{span}"))
            } else if [
                "crates",
                "scripts",
                "docs",
                "scenarios",
                "profiles",
                "python",
            ]
            .contains(&top)
            {
                Some(span.to_string())
            } else {
                None
            };
            if let Some(path) = repo_path {
                if !root.join(path.trim_end_matches('/')).exists() {
                    missing.push(span.to_string());
                }
                continue;
            }
            let Some(krate) = &line_crate else { continue };
            let dir = root.join("crates").join(krate);
            if !dir.is_dir() {
                continue;
            }
            let want = span.to_string();
            let found = tree(&dir)
                .iter()
                .any(|f| f == &want || f.ends_with(&format!("/{want}")));
            if !found {
                missing.push(format!("{span} (in crates/{krate})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md names files that do not exist: {missing:?}"
    );
}

/// The identifier a span names as a Rust item, if it does: the last segment of a path, or a
/// CamelCase or SCREAMING_CASE name.
fn rust_item(span: &str) -> Option<String> {
    let span = span.split('(').next().unwrap();
    let span = span.split('<').next().unwrap();
    let last = span.rsplit("::").next().unwrap();
    if last.is_empty() || !last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let path = span.contains("::");
    let camel = last.chars().next().unwrap().is_ascii_uppercase()
        && last.chars().any(|c| c.is_ascii_lowercase());
    let screaming = last.len() > 3
        && last.contains('_')
        && last
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    (path || camel || screaming).then(|| last.to_string())
}

#[test]
fn every_item_the_page_names_is_defined() {
    let text = page();
    let mut sources = String::new();
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = krate.unwrap().path();
        for f in tree(&dir) {
            if f.ends_with(".rs") {
                sources.push_str(&std::fs::read_to_string(dir.join(&f)).unwrap());
                sources.push('\n');
            }
        }
    }
    // Lustre's own names the page cites (defined in lustre-release, quoted in comments here).
    let quoted = |name: &str| sources.contains(name);
    let defined = |name: &str| {
        ["struct", "enum", "trait", "type", "const", "static", "fn", "mod", "macro_rules!"]
            .iter()
            .any(|kw| {
                sources.contains(&format!("{kw} {name}<"))
                    || sources.contains(&format!("{kw} {name}("))
                    || sources.contains(&format!("{kw} {name} "))
                    || sources.contains(&format!("{kw} {name}:"))
                    || sources.contains(&format!("{kw} {name};"))
            })
            // An enum variant or a re-export is a definition a reader can find too.
            || sources.contains(&format!("    {name}("))
            || sources.contains(&format!("    {name} {{"))
            || sources.contains(&format!("    {name},"))
            || sources.contains(&format!("as {name};"))
    };
    // The libraries' types the page names as conventions of the code.
    const LIBRARY_ITEMS: [&str; 2] = ["BTreeMap", "FxHashMap"];
    let mut undefined = BTreeSet::new();
    for span in code_spans(&text) {
        let Some(item) = rust_item(&span) else {
            continue;
        };
        if LIBRARY_ITEMS.contains(&item.as_str()) {
            continue;
        }
        let lustre_name = item.chars().all(|c| !c.is_ascii_lowercase());
        let ok = if lustre_name {
            quoted(&item)
        } else {
            defined(&item)
        };
        if !ok {
            undefined.insert(format!("{item} (from `{span}`)"));
        }
    }
    assert!(
        undefined.is_empty(),
        "docs/architecture.md names items the code does not define: {undefined:?}"
    );
}
