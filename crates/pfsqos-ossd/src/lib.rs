//! pfsqos-ossd: the object storage server (`pfsqos ossd`). Its one job is serving OSTs: every
//! I/O request passes through Lustre's NRS (the `pfsqos_core` schedulers) before a bounded pool
//! of I/O threads carries it out; a controller ([`control`]) may run inside the daemon.
//!
//! API boundary: [`Ossd::start`] with an [`OssdConfig`] (built from the command line's
//! [`OssdArgs`]) gives a running daemon; [`Ossd::shutdown`] stops it. The process around it
//! (runtime, logging, signals, readiness lines) belongs to the `pfsqos` binary. The wire
//! (protocol, connections, key file) is `pfsqos-wire`'s, the metrics endpoint
//! `pfsqos-metrics`'.
//!
//! Invariant: scheduling decisions are made only by `pfsqos_core`; this crate feeds it
//! wall-clock nanoseconds and carries out what it dequeues. The control loop sees the daemon
//! only through [`control`]'s `Controlled` trait.

mod args;
mod bulk_share;
pub mod control;
mod control_record;
mod controlled;
pub mod job_nodes;
mod ossd;
pub mod param_glob;
pub mod report;
pub mod sync;

pub use args::OssdArgs;
pub use bulk_share::{BulkCounters, CLIENTS_TRACKED_MAX};
pub use ossd::{
    bulk_share_default_bytes, parse_lustre_version, validate_bulk_limits, DeviceSensor, Ossd,
    OssdConfig, BULK_BUDGET_BYTES_DEFAULT, BULK_BUDGET_BYTES_MAX, BULK_IDLE_TIMEOUT, BULK_TIMEOUT,
    IDLE_TIMEOUT_MAX, LUSTRE_VERSION_MIN, OBJECT_HANDLES_PER_OST_MAX, READ_PIECE_BYTES,
    REPLY_IDLE_TIMEOUT,
};
pub use sync::{SyncConfig, SyncStats};
