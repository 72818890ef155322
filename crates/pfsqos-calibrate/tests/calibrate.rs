//! A tiny real calibration (skipped, saying so, without fio) and the obdfilter-survey
//! conversion of a fixture.

use pfsqos_calibrate::{calibrate, fio_version, from_obdfilter_survey, Options, Progress};
use pfsqos_profile::plan::Ranges;
use pfsqos_profile::{Op, Pattern, Profile, SourceKind};

#[test]
fn a_tiny_calibration_of_a_temporary_directory() {
    let fio = std::path::PathBuf::from("fio");
    if let Err(e) = fio_version(&fio) {
        pfsqos_testkit::skip(
            "a_tiny_calibration_of_a_temporary_directory",
            &e.to_string(),
        );
        return;
    }
    // Under the target directory, not /tmp: tmpfs has no O_DIRECT.
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).unwrap();
    let opts = Options {
        dir: dir.path().to_path_buf(),
        // Ten points at the plan's minimum fit; the groups beyond them are left out, as a
        // short budget does.
        budget_s: 16,
        ranges: Ranges {
            sizes_kib: vec![4, 256],
            queue_depth_max: 4,
            streams_max: 2,
        },
        file_size_mib: 4,
        fio,
        name: "tmp".into(),
    };
    let mut seen = Vec::new();
    let profile = match calibrate(&opts, &mut |p| seen.push(p)) {
        Ok(p) => p,
        Err(e) if e.contains("O_DIRECT") || e.contains("Invalid argument") => {
            pfsqos_testkit::skip(
                "a_tiny_calibration_of_a_temporary_directory",
                &format!("no O_DIRECT here: {e}"),
            );
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(profile.source.kind, SourceKind::Fio);
    assert!(
        profile.source.citation.starts_with("fio-"),
        "{}",
        profile.source.citation
    );
    let Some(Progress::Planned { points, .. }) = seen
        .iter()
        .find(|p| matches!(p, Progress::Planned { .. }))
        .cloned()
    else {
        panic!("no plan reported");
    };
    assert_eq!(profile.measured.len(), points);
    assert!(points >= 8, "the size rows fit a 16 s budget");
    for m in &profile.measured {
        assert!(m.bandwidth_mib_s > 0.0 && m.latency_mean_us > 0.0, "{m:?}");
    }
    assert!(profile
        .measured
        .iter()
        .any(|m| m.op == Op::Write && m.pattern == Pattern::Sequential));
    assert_eq!(profile.read.len(), 2);
    // What is written parses back, and the files are gone.
    Profile::from_toml_str(&profile.to_toml_string(), "tmp.toml").unwrap();
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_missing_fio_is_reported() {
    let e = fio_version(std::path::Path::new("/nonexistent/fio")).unwrap_err();
    assert!(e.contains("install fio"), "{e}");
}

#[test]
fn an_obdfilter_survey_summary_becomes_a_profile() {
    let text = include_str!("../../pfsqos-profile/tests/fixtures/obdfilter-survey-2ost.summary");
    let p = from_obdfilter_survey(text, "oss01.summary", "oss01-ost").unwrap();
    assert_eq!(p.source.kind, SourceKind::ObdfilterSurvey);
    assert!(
        p.source.citation.contains("case=disk from oss01"),
        "{}",
        p.source.citation
    );
    assert_eq!(p.measured.len(), 50);
    let bad = text.replacen("[ 214.84, 306.54]", "            ERROR", 1);
    let e = from_obdfilter_survey(&bad, "bad.summary", "x").unwrap_err();
    assert!(e.starts_with("bad.summary: line 2"), "{e}");
}
