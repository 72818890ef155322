//! pfsqos-lustre: Lustre's vocabulary, shared by every other part of pfsqos.
//!
//! The model types a request carries ([`model::JobId`], [`model::RpcTags`], [`model::OstId`]),
//! the one table of Lustre's limits and the bounds pfsqos puts beside them ([`limits`]),
//! Lustre's errno values ([`errno`]), the `job_stats` text format and its reader
//! ([`jobstats`]), and the line cutter the text readers share ([`lines`]).
//!
//! Architecture invariant: this crate performs no I/O, reads no clock, spawns no thread and keeps
//! no global state. It depends on no other pfsqos crate: every other crate may depend on it.

pub mod errno;
pub mod jobstats;
pub mod limits;
pub mod lines;
pub mod model;

/// Nanoseconds per second, the unit every time value in pfsqos is expressed in.
pub const NS_PER_S: u64 = 1_000_000_000;
