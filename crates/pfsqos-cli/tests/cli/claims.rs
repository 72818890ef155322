//! `scripts/claims.py`, which writes every reproduction's claims table and views from its
//! measured document:
//!
//! * the generated blocks of every `docs/reproductions/<paper>.md` are what the script makes
//!   of today's measured document (a block edited by hand, or left behind by a measured
//!   document regenerated without it, fails here);
//! * a view renders the rows and columns it names with its typed data, and a view that names
//!   a field, table or column that does not exist stops the script, naming the file, the view
//!   and the field.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each claims file with the measured document and the page its reproduce script gives
/// claims.py (`scripts/reproduce-<paper>.sh`).
const PAPERS: [(&str, &str, &str); 6] = [
    ("adaptbf", "adaptbf-measured.md", "adaptbf.md"),
    ("gift", "gift-measured.md", "gift.md"),
    ("iez", "iez-measured.md", "iez.md"),
    ("pi", "pi-control-measured.md", "pi-control.md"),
    ("themisio", "themisio-measured.md", "themisio.md"),
    ("vpfs", "vpfs-measured.md", "vpfs.md"),
];

/// Whether `python3` can run claims.py (it reads TOML with `tomllib`, Python 3.11 and later).
fn python_reads_toml(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import tomllib"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        pfsqos_testkit::skip(test, "python3 with tomllib (3.11 or later) not found");
    }
    ok
}

/// claims.py run from the repository's root, as the reproduce scripts run it: the blocks
/// name the claims and measured files by the paths it is given.
fn claims_py(claims: &Path, measured: &Path, doc: &Path) -> std::process::Output {
    Command::new("python3")
        .current_dir(root())
        .arg("scripts/claims.py")
        .args([claims, measured, doc])
        .output()
        .unwrap()
}

#[test]
fn every_reproductions_generated_blocks_are_current() {
    if !python_reads_toml("every_reproductions_generated_blocks_are_current") {
        return;
    }
    let listed: Vec<&str> = PAPERS.iter().map(|p| p.0).collect();
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("claims.toml").exists() {
            let name = dir.file_name().unwrap().to_str().unwrap().to_string();
            assert!(
                listed.contains(&name.as_str()),
                "scenarios/{name}/claims.toml is not in PAPERS"
            );
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    for (paper, measured, doc) in PAPERS {
        let page = root().join("docs/reproductions").join(doc);
        let copy = tmp.path().join(doc);
        std::fs::copy(&page, &copy).unwrap();
        let out = claims_py(
            &Path::new("scenarios").join(paper).join("claims.toml"),
            &Path::new("docs/reproductions").join(measured),
            &copy,
        );
        assert!(
            out.status.success(),
            "claims.py on {paper}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::read_to_string(&copy).unwrap() == std::fs::read_to_string(&page).unwrap(),
            "docs/reproductions/{doc}'s generated blocks differ from what scripts/claims.py makes \
             of {measured}: run `python3 scripts/claims.py scenarios/{paper}/claims.toml \
             docs/reproductions/{measured} docs/reproductions/{doc}` and read the diff"
        );
    }
}

const MEASURED: &str = "# measured

## Fig. 1: two runs

| run | policy | time s | Δ |
|---|---|---|---|
| alone | `nobw` | 10.0 | +0.0 % |
| shared | `nobw` | 15.0 | +50.0 % |
| shared | `dsfq` | 11.0 | +10.0 % |
";

const CLAIMS: &str = r#"
[[claim]]
id = "fig1-shared"
section = "Fig. 1"
what = "shared run under dsfq against alone"
paper = 5.0
unit = "%"
tolerance = { absolute = 10.0 }
ours = "a"
a = { table = 'Fig\. 1', col = "Δ", where = { run = "shared", policy = "`dsfq`" } }

[[view]]
id = "shared"
table = 'Fig\. 1'
where = { run = "shared" }
columns = [
  "policy",
  { col = "Δ", header = "against alone" },
  { header = "paper", default = "–", values = [ { where = { policy = "`dsfq`" }, value = "+5 %" } ] },
]
"#;

const DOC: &str = "# doc

<!-- generated:claims -->
<!-- /generated:claims -->

<!-- generated:view:shared -->
<!-- /generated:view:shared -->
";

#[test]
fn a_view_shows_its_rows_and_data_and_a_wrong_field_is_named() {
    if !python_reads_toml("a_view_shows_its_rows_and_data_and_a_wrong_field_is_named") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (claims, measured, doc) = (
        tmp.path().join("claims.toml"),
        tmp.path().join("measured.md"),
        tmp.path().join("doc.md"),
    );
    std::fs::write(&claims, CLAIMS).unwrap();
    std::fs::write(&measured, MEASURED).unwrap();
    std::fs::write(&doc, DOC).unwrap();
    let out = claims_py(&claims, &measured, &doc);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&doc).unwrap();
    let view = &text[text.find("<!-- generated:view:shared -->").unwrap()..];
    assert!(
        view.contains("| policy | against alone | paper |"),
        "{view}"
    );
    assert!(view.contains("| `nobw` | +50.0 % | – |"), "{view}");
    assert!(view.contains("| `dsfq` | +10.0 % | +5 % |"), "{view}");
    assert!(
        !view.contains("+0.0 %"),
        "the alone row is filtered out: {view}"
    );
    // The claim's verdict: +10 against +5 within 10 points.
    assert!(text.contains("**agrees**"), "{text}");

    // A column the table does not have: the file, the view and the field are named.
    std::fs::write(
        &claims,
        CLAIMS.replace("col = \"Δ\", header", "col = \"speed\", header"),
    )
    .unwrap();
    std::fs::write(&doc, DOC).unwrap();
    let out = claims_py(&claims, &measured, &doc);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("claims.toml")
            && err.contains("view shared")
            && err.contains("columns[1].col")
            && err.contains("speed"),
        "{err}"
    );
    // An unknown field of a view.
    std::fs::write(
        &claims,
        CLAIMS.replace(
            "where = { run = \"shared\" }",
            "wher = { run = \"shared\" }",
        ),
    )
    .unwrap();
    let out = claims_py(&claims, &measured, &doc);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("wher") && err.contains("unknown field"),
        "{err}"
    );
}
