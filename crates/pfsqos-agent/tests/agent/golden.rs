//! Golden job_stats outputs per emulated Lustre version (fixtures/SOURCES.md says where each
//! comes from): what the emulated lctl prints (core parser, then core printer in the
//! version's layout, then lctl's `read_param` framing) equals each file byte for byte.

use pfsqos_agent::emu::{format_value, job_stats_format, relayout_job_stats, VERSIONS};
use pfsqos_core::jobstats::parse_lctl_job_stats;

#[test]
fn every_version_reprints_its_golden_output_byte_for_byte() {
    for v in VERSIONS {
        let path = format!(
            "{}/tests/fixtures/job_stats_{v}.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        let golden = std::fs::read_to_string(&path).unwrap();
        let format = job_stats_format(v).unwrap();
        let osts = parse_lctl_job_stats(&golden).unwrap();
        // Re-rendered per OST from the parsed entries, as the emulation does with the ossd's
        // text.
        let mut printed = String::new();
        for (name, entries) in &osts {
            let value = pfsqos_core::jobstats::render_job_stats(entries, format);
            let value = relayout_job_stats(&value, format);
            printed.push_str(&format_value(v, name, &value, false));
        }
        assert_eq!(printed, golden, "version {v}");
    }
}

/// Job ids as each version prints them (`lprocfs_jobstats_seq_show` of that version's
/// lustre/obdclass/lprocfs_jobstats.c; fixtures/SOURCES.md): raw with `?` for bytes the
/// kernel's `isprint` refuses (2.12-2.15.1), quoted with upper-case `\xHH` escapes (2.15.2+),
/// `:` and `/` kept but quoting from 2.16. The fixtures hold Lustre's bytes (some are not
/// UTF-8: the kernel keeps Latin-1 "letters"); the printer gives them as a lossy reader of
/// lctl's output (the agent) sees them.
#[test]
fn job_ids_print_as_each_version_prints_them() {
    use pfsqos_core::jobstats::{render_job_stats, JobEntry};
    use pfsqos_core::model::JobId;
    let ids = [
        "dd.500",
        "has space.1",
        "x:y",
        "@home.2",
        "a/b",
        "caf\u{e9}.3",
        "\u{2014}x.4",
    ];
    let entries: Vec<JobEntry> = ids
        .iter()
        .map(|j| JobEntry::new(JobId::new(j).unwrap(), 1_000_000_000))
        .collect();
    for v in VERSIONS {
        let path = format!(
            "{}/tests/fixtures/job_ids_{v}.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        let golden = std::fs::read(&path).unwrap();
        let golden = String::from_utf8_lossy(&golden);
        let printed = render_job_stats(&entries, job_stats_format(v).unwrap());
        let id_lines: Vec<&str> = printed
            .lines()
            .filter(|l| l.starts_with("- job_id:"))
            .collect();
        let golden_lines: Vec<&str> = golden.lines().collect();
        assert_eq!(id_lines, golden_lines, "version {v}");
    }
}
