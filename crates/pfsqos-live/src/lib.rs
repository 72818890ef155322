//! pfsqos-live: the live runtime. Moves real bytes through the same `pfsqos_core` schedulers the
//! simulator runs.
//!
//! This crate holds the foundation: the wire [`protocol`], framed connections ([`conn`]), the
//! object storage server [`ossd`] with its optional [`control`] loop and zero-copy reads
//! ([`splice`]), the metadata server
//! [`mds`] (namespace and layouts in SQLite), simple OSS and MDS [`client`]s, and [`lctl`];
//! and what operates a cluster: the [`cluster`] file, [`updown`] (`pfsqos up/down`), the
//! Prometheus [`metrics`] endpoint and [`stat`] (`pfsqos stat`, lljobstat-like, recording live
//! runs for `pfsqos-report`).
//!
//! # Message flow
//! ```text
//!  lctl / client                         ossd
//!  -- Hello(magic, version, role, nonce_c) -->
//!  <-- Challenge(nonce_s) ----------------
//!  -- Auth(HMAC(key, client|..|nonces)) -->
//!  <-- Welcome(HMAC(key, server|..), fsname, OST count)
//!  -- Request{tag, Io|GetParam|SetParam} [+ bulk frames for writes] -->
//!                 NRS head (FIFO/TBF) -> I/O thread -> OST directory -> job_stats
//!  <-- Reply{tag, Ok(Done|Read{len}|Params) | Err(errno, message)} [+ bulk frames for reads]
//! ```
//!
//! # Limits (all enforced on decode or admission)
//! Frames ≤ 8 MiB + 4 KiB; one I/O ≤ 64 MiB (Lustre's largest `brw_size`), sent as ≤ 8 MiB
//! bulk frames; object offsets + lengths ≤ 16 TiB; OST index < the server's OST count; job ids
//! ≤ 31 bytes without control characters; parameter names ≤ 256 bytes of `[A-Za-z0-9._*-]`;
//! parameter values ≤ 4096 bytes; ≤ 1024 parameters per reply; error messages ≤ 1024 bytes.
//! Server-side queue, connection and memory bounds are listed in [`ossd`].
//!
//! Architecture invariant: scheduling decisions are made only by `pfsqos_core`; this crate
//! feeds it wall-clock nanoseconds and carries out what it dequeues.

pub mod cli;
pub mod client;
pub mod cluster;
pub mod conn;
pub mod control;
pub mod lctl;
pub mod mds;
pub mod metrics;
pub mod mount;
pub mod ossd;
pub mod protocol;
pub mod splice;
pub mod stat;
pub mod updown;
