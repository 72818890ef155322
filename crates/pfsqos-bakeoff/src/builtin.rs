//! The built-in suite `pfsqos demo` runs, compiled into the binary so that the demo works from
//! any directory. The file list is here and nowhere else: pointing the demo at another suite is
//! an edit of [`BUILTIN_FILES`] (and [`BUILTIN_ORIGIN`]) only.

use crate::suite::{Suite, SuiteError, SUITE_FILE};

/// Where the built-in files come from, for messages (relative to the repository root).
pub const BUILTIN_ORIGIN: &str = "scenarios/bakeoff";

/// `suite.toml` and every workload file it names, as (file name, text).
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    (
        SUITE_FILE,
        include_str!("../../../scenarios/bakeoff/suite.toml"),
    ),
    (
        "priorities-finishing.toml",
        include_str!("../../../scenarios/bakeoff/priorities-finishing.toml"),
    ),
    (
        "bursty-vs-streamer.toml",
        include_str!("../../../scenarios/bakeoff/bursty-vs-streamer.toml"),
    ),
    (
        "dynamic-arrivals.toml",
        include_str!("../../../scenarios/bakeoff/dynamic-arrivals.toml"),
    ),
    (
        "sync-phases.toml",
        include_str!("../../../scenarios/bakeoff/sync-phases.toml"),
    ),
    (
        "checkpoint-storm.toml",
        include_str!("../../../scenarios/bakeoff/checkpoint-storm.toml"),
    ),
    (
        "unbalanced-fpp.toml",
        include_str!("../../../scenarios/bakeoff/unbalanced-fpp.toml"),
    ),
    (
        "small-rpc-flood.toml",
        include_str!("../../../scenarios/bakeoff/small-rpc-flood.toml"),
    ),
    (
        "shared-day.toml",
        include_str!("../../../scenarios/bakeoff/shared-day.toml"),
    ),
    (
        "darshan-traces.toml",
        include_str!("../../../scenarios/bakeoff/darshan-traces.toml"),
    ),
];

/// The built-in suite (all of it; [`Suite::demo_suite`] gives the `[demo]` subset).
pub fn builtin_suite() -> Result<Suite, SuiteError> {
    let find = |name: &str| {
        BUILTIN_FILES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| text.to_string())
    };
    let suite_text = find(SUITE_FILE).expect("the built-in suite has a suite.toml");
    let origin = format!("{BUILTIN_ORIGIN} (built in)");
    Suite::parse(
        &suite_text,
        &format!("{origin}/{SUITE_FILE}"),
        &origin,
        &mut |file| {
            find(file).ok_or_else(|| SuiteError {
                message: format!("{origin}: no built-in file `{file}`"),
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_suite_loads_and_has_a_demo_subset() {
        let suite = builtin_suite().unwrap();
        let demo = suite.demo_suite().expect("a [demo] section");
        assert!(!demo.workloads.is_empty() && !demo.designs.is_empty());
        // Every built-in file is used: a stale entry would be dead weight in the binary.
        for (name, _) in BUILTIN_FILES.iter().skip(1) {
            assert!(suite.workloads.iter().any(|w| w.file == *name), "{name}");
        }
    }
}
