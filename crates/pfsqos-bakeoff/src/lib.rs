//! pfsqos-bakeoff: the head-to-head. Every design of a suite (a policy spec, optionally with a
//! placement override) runs on every workload (a scenario file) for every seed; each job also
//! runs alone once per workload and seed, for its slowdown. The results are ranked per metric
//! family and written as `bakeoff.json`, `bakeoff.csv`, `results.md` and a self-contained
//! `report.html`, with plain-language verdicts generated from the numbers.
//!
//! * [`suite`]: loading and validating a suite directory (`suite.toml` + scenario files), or
//!   the built-in copy ([`builtin`]).
//! * [`runner`]: the design × workload × seed plan, solo runs, the parallel work queue and the
//!   resumable run files.
//! * [`metrics`]: per-run metric rows from `pfsqos_report::summarize` and the solo runs.
//! * [`rank`]: rankings and verdicts; [`table`]: the ranking tables as data, rendered by
//!   [`output`] (markdown) and [`html`].
//! * [`decide_timing`]: the wall-clock time of each controller decision (timing only).
//! * [`output`]: `bakeoff.json`, `bakeoff.csv`, `results.md`, `timing.json`; [`html`]:
//!   `report.html`.
//! * [`seeded`]: `pfsqos compare --seeds N`, one scenario's policies over seeds, ranked and
//!   judged by the same statistics and verdicts as a workload of the bakeoff.
//!
//! Architecture invariant: `bakeoff.json`, `bakeoff.csv`, `results.md` are pure functions of
//! the suite, the selected designs and the seeds: results are assembled in plan order, never
//! in completion order, and run files read back give the exact floats they were written with
//! (serde_json's `float_roundtrip`). Wall-clock numbers live in `timing.json` (and a section
//! of `report.html` marked as this machine's wall clock) only.

pub mod answer;
pub mod builtin;
pub mod decide_timing;
pub mod glossary;
pub mod html;
pub mod metrics;
pub mod output;
pub mod policy_input;
pub mod rank;
pub mod runner;
pub mod seeded;
pub mod suggest;
pub mod suite;
pub mod table;

pub use runner::{run_bakeoff, BakeoffOptions, BakeoffResult, ProgressUpdate};
pub use suite::{Design, Suite, SuiteError, Workload};

/// Version written into every run key: a run file from another version is redone.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A per-paper reproduction: the design's name, its page and the script that regenerates it
/// (paths relative to the repository root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reproduction {
    pub design: &'static str,
    pub doc: &'static str,
    pub script: &'static str,
}

/// The per-paper reproductions the report and `pfsqos demo` point to.
pub const REPRODUCTIONS: &[Reproduction] = &[
    Reproduction {
        design: "AdapTBF",
        doc: "docs/reproductions/adaptbf.md",
        script: "scripts/reproduce-adaptbf.sh",
    },
    Reproduction {
        design: "GIFT",
        doc: "docs/reproductions/gift.md",
        script: "scripts/reproduce-gift.sh",
    },
    Reproduction {
        design: "vPFS",
        doc: "docs/reproductions/vpfs.md",
        script: "scripts/reproduce-vpfs.sh",
    },
    Reproduction {
        design: "PI control",
        doc: "docs/reproductions/pi-control.md",
        script: "scripts/reproduce-pi.sh",
    },
    Reproduction {
        design: "iez",
        doc: "docs/reproductions/iez.md",
        script: "scripts/reproduce-iez.sh",
    },
];
