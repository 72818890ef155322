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
            printed.push_str(&format_value(name, &value, false));
        }
        assert_eq!(printed, golden, "version {v}");
    }
}
