//! pfsqos-node: the mechanics of each role of a Lustre-like file system, written once.
//!
//! Policies (which request next, which rule rate, which OSTs) live in `pfsqos-core`. The
//! mechanics around them (how a client cuts I/O into RPCs, how many it keeps in flight, how an
//! MDS calls its placer) live here, so the simulator's engines and the live daemons run the very
//! same code instead of a copy each.
//!
//! Architecture invariant: like pfsqos-core, this crate performs no I/O, reads no clock, spawns
//! no thread and keeps no global state. Time, where needed, is an argument in nanoseconds.

#![forbid(unsafe_code)]

pub mod client;
pub mod mds;
pub mod oss;
