//! Text-level determinism of the GIFT reproduction tables: the Markdown that
//! `examples/gift_repro.rs` prints, and `scripts/reproduce-gift.sh` writes into
//! `docs/reproductions/gift-measured.md`, is the same bytes for the same scenario and seed in
//! two runs. The example's own table function is compiled in here; its `wall s` column, the
//! one that measures the machine, is `–` with `measure_wall = false`.

#[allow(dead_code)]
#[path = "../../examples/gift_repro.rs"]
mod gift_repro;

use gift_repro::{parse, tables};

/// Scenario paths are relative to the workspace root, as the script runs them.
fn request(args: &[&str]) -> gift_repro::Request {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args[0] = format!("{root}/{}", args[0]);
    parse(args).expect("arguments parse")
}

fn twice_the_same(args: &[&str]) -> String {
    let r = request(args);
    let first = tables(&r, false).expect("first run");
    let second = tables(&r, false).expect("second run");
    assert_eq!(first, second, "{args:?}: two runs printed different tables");
    first
}

/// The script's first section (Fig. 5 in small) in both engines, with the paper's and the
/// artifact's definitions side by side.
#[test]
fn fig5_tables_are_byte_identical_across_runs() {
    for engine in [&[][..], &["--fluid"][..]] {
        let mut args = vec!["scenarios/gift/phases-example.toml"];
        args.extend_from_slice(engine);
        args.extend_from_slice(&[
            "--baseline",
            "pofs:period_ms=200",
            "bsip:period_ms=200",
            "gift:period_ms=200",
            "gift:period_ms=200:share=stream:constraint3=false:window=cap:system_gate=cumulative",
        ]);
        let text = twice_the_same(&args);
        // Header, separator and one row per policy; no NaN or inf reaches the text, and the
        // wall column is the placeholder.
        assert_eq!(text.lines().count(), 2 + 4, "{text}");
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        for row in text.lines().skip(2) {
            assert!(row.ends_with("| – |"), "{row}");
        }
    }
}

/// An appset scenario as the Section 4 sections run it (fluid engine, several seeds, a
/// label, the sweep's options), made small: the real-system set with 16 applications on
/// 1-2 OSTs each.
#[test]
fn appset_tables_are_byte_identical_across_runs() {
    let text = twice_the_same(&[
        "scenarios/gift/real-250.toml",
        "--apps",
        "16",
        "--osts-per-app",
        "1,2",
        "--seeds",
        "2",
        "--label",
        "small",
        "pofs",
        "bsip",
        "gift",
        "gift:share=stream:constraint3=false:window=cap:system_gate=cumulative",
    ]);
    assert_eq!(text.lines().count(), 2 + 4, "{text}");
    assert!(
        text.lines()
            .skip(2)
            .all(|row| row.starts_with("| small | ")),
        "{text}"
    );
}
