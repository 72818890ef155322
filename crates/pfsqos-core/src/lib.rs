//! pfsqos-core: the pure heart of pfsqos.
//!
//! Everything that decides anything lives here exactly once: the model types, the request
//! schedulers (data plane), the controllers (control plane) and the metrics. Drivers (the
//! simulator, the live runtime, the Lustre adapter) feed observations in and carry decisions out.
//!
//! Architecture invariant: this crate performs no I/O, reads no clock, spawns no thread and keeps
//! no global state. Time is always an argument in integer nanoseconds.

pub mod control;
pub mod errno;
pub mod forecast;
pub mod jobstats;
mod lines;
pub mod lustre;
pub mod metrics;
pub mod model;
pub mod place;
pub mod run;
pub mod sched;

/// Nanoseconds per second, the unit every time value in pfsqos is expressed in.
pub const NS_PER_S: u64 = 1_000_000_000;
