//! GIFT's artifact-faithful options and the artifact's allocation metric in the fluid engine:
//! determinism (same seed, same bytes, same statistics), POFS and BSIP equal in
//! the artifact's metric by construction, the stream share unit reaching the allocator, and
//! the metric's idle-decision asymmetry.

use pfsqos_sim::{run, RunOutput, Scenario};

/// A small generated set on 8 OSTs with 4 processes per node, so applications have several
/// open streams per OST (the `stream` unit differs from the `app` unit).
fn scenario() -> Scenario {
    let mut text = r#"
name = "gift-artifact"
[simulation]
engine = "fluid"
duration_s = 2592000.0
bin_ms = 3600000
[cluster]
clients = 32
brw_size = "1M"
[[device]]
name = "hdd100"
read = [{ size = "4k", bandwidth_mib_s = 100.0 }]
write = [{ size = "4k", bandwidth_mib_s = 100.0 }]
[appset]
apps = 24
templates = 6
arrival_shape = 2.0
arrival_scale_s = 200.0
nodes = [1, 16]
osts_per_app = [1, 4]
phases = [2, 4]
compute_s = [60.0, 600.0]
phase_size = ["64M", "512M"]
lockstep = true
"#
    .to_string();
    for k in 0..8 {
        text.push_str(&format!(
            "[[oss]]\nname = \"oss{k}\"\nosts = 1\ndevice = \"hdd100\"\n"
        ));
    }
    Scenario::from_toml_str(&text, "<gift-artifact>").expect("scenario parses")
}

fn quiet(s: &Scenario, policy: &str) -> RunOutput {
    run(s, policy, 1, &mut |_, _| {}).expect("fluid run")
}

const ARTIFACT: &str = "gift:share=stream:constraint3=false:window=cap:system_gate=cumulative";

#[test]
fn artifact_runs_are_deterministic() {
    let s = scenario();
    for policy in [ARTIFACT, "gift", "bsip:share=stream:redistribute=true"] {
        let a = quiet(&s, policy);
        let b = quiet(&s, policy);
        assert_eq!(a, b, "{policy}");
        let stats = a
            .allocation
            .expect("GIFT-family runs record allocation stats");
        assert!(stats.decisions > 0 && stats.decisions_allocating > 0);
    }
}

#[test]
fn pofs_equals_bsip_in_the_artifact_metric_and_gift_skips_idle_decisions() {
    // With lockstep and one identity per run, POFS and BSIP runs coincide (gift.md, choice
    // 17), so both see the same input at every decision; the artifact's metric counts POFS's
    // bottleneck shares, which are BSIP's: equal to the last bit.
    let mut per_run = scenario();
    per_run.appset.as_mut().unwrap().identity = pfsqos_sim::scenario::appset::Identity::Run;
    for unit in ["app", "stream"] {
        let p = quiet(&per_run, &format!("pofs:share={unit}"))
            .allocation
            .unwrap();
        let b = quiet(&per_run, &format!("bsip:share={unit}"))
            .allocation
            .unwrap();
        assert_eq!(p, b, "{unit}");
        assert!(p.effective_bandwidth_allocated().unwrap() > 0.0);
        // The artifact's asymmetry applies to neither.
        assert_eq!(
            p.effective_bandwidth_allocated(),
            p.effective_bandwidth_allocated_artifact()
        );
    }
    let s = scenario();
    let gift = quiet(&s, "gift").allocation.unwrap();
    let idle = gift.idle_fraction().unwrap();
    assert!(idle > 0.0, "the set has idle decisions");
    let sym = gift.effective_bandwidth_allocated().unwrap();
    let art = gift.effective_bandwidth_allocated_artifact().unwrap();
    assert!((art - sym / (1.0 - idle)).abs() <= 1e-12 * art);
}

#[test]
fn the_stream_unit_changes_the_allocation_only_where_stream_counts_differ() {
    let s = scenario();
    let app = quiet(&s, "bsip");
    let stream = quiet(&s, "bsip:share=stream");
    // Applications here have 4 processes per node on 1-4 OSTs: several streams per OST, in
    // unequal numbers, so the per-stream shares move bytes between applications.
    assert_ne!(app.jobs, stream.jobs);
    // Every byte is still written.
    let total = |r: &RunOutput| r.jobs.iter().map(|j| j.bytes_written).sum::<u64>();
    assert_eq!(total(&app), total(&stream));
}
