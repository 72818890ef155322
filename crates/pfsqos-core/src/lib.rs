//! pfsqos-core: the pure heart of pfsqos, as one name.
//!
//! A facade over the pure crates, each with one job, so drivers read `pfsqos_core::sched::tbf`
//! and need one dependency:
//!
//! - [`model`], [`errno`], [`jobstats`] and the one table of limits, [`lustre`]: Lustre's
//!   vocabulary (`pfsqos-lustre`);
//! - [`sched`]: the request schedulers, the data plane (`pfsqos-sched`);
//! - [`control`]: the controllers, the control plane (`pfsqos-control`);
//! - [`place`] and [`forecast`]: placement at file creation and its forecasts
//!   (`pfsqos-place`);
//!
//! and, kept here, what a run of any driver produces: [`run::RunOutput`] and the [`metrics`]
//! every design is judged by.
//!
//! Architecture invariant: none of these crates performs I/O, reads a clock, spawns a thread or
//! keeps global state. Time is always an argument in integer nanoseconds. The schedulers cannot
//! depend on the controllers: `pfsqos-control` depends on `pfsqos-sched`, and Cargo refuses a
//! cycle.

pub mod metrics;
pub mod run;

pub use pfsqos_control as control;
pub use pfsqos_lustre::limits as lustre;
pub use pfsqos_lustre::{errno, jobstats, model, NS_PER_S};
pub use pfsqos_place as place;
pub use pfsqos_place::forecast;
pub use pfsqos_sched as sched;
