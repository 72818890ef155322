//! Defaults of the servers' and the network's per-message costs (`[[oss]]` `rpc_cpu_us`,
//! `rpc_cpu_us_per_mib`, `sync_cpu_us`; `[network]` `message_us`), measured on a machine by
//! `scripts/physics-server-costs.py` and written, with where and when, into
//! `server_costs_measured.rs` by that script (never typed by hand; docs/physics.md has the
//! method and the run).
//!
//! * **RPC CPU.** A live `pfsqos ossd` serves fio's 4 KiB random writes, then 1 MiB writes,
//!   through a `pfsqos mount`; the ossd's CPU time (`/proc/PID/stat` user + system) over the
//!   RPCs it served gives the CPU per RPC at both sizes: the 4 KiB figure is the fixed part,
//!   the growth to 1 MiB the part per MiB.
//! * **Synchronization message CPU.** A synchronization message is a request without bulk
//!   data or device work: the fixed part of an RPC's CPU.
//! * **Message cost.** Half the median round trip of 64-byte messages over the loopback,
//!   where there is no wire: all of it is the stack's cost per message.

include!("server_costs_measured.rs");
