//! `pfsqos agent`: one per Lustre OSS, runs a decentralized pfsqos controller (static,
//! AdapTBF) against the OSS through `lctl` (docs/lustre.md). Also the emulated `lctl`
//! ([`emu`], bin `pfsqos-lctl-emu`) that tests put first on `PATH`: a Lustre OSS's `lctl`
//! backed by a live pfsqos ossd.

pub mod agent;
pub mod config;
pub mod coord;
pub mod coord_net;
pub mod emu;
pub mod lctl;
pub mod metrics;
pub mod run;
pub mod signal;
pub mod status;

pub use agent::Agent;
pub use config::AgentConfig;
pub use run::{run, RunOptions};
