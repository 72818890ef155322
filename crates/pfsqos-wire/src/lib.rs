//! pfsqos-wire: how pfsqos roles talk to each other. Its one job is the wire: the messages
//! ([`protocol`] for the OSS, [`mds`] for the metadata server), framed and authenticated
//! connections ([`conn`], with zero-copy bulk reads through [`splice`]), the shared cluster
//! [`key`] they authenticate with, and the OSS and MDS [`client`]s.
//!
//! API boundary: servers (`pfsqos-ossd`, `pfsqos-mds`) and clients (`pfsqos-mount`,
//! `pfsqos-ops`) depend on this crate, never the other way round; it knows no server's state.
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
//! Server-side queue, connection and memory bounds are listed in `pfsqos-ossd`.

pub mod admission;
pub mod client;
pub mod conn;
pub mod coord;
pub mod key;
pub mod mds;
pub mod protocol;
pub mod splice;
