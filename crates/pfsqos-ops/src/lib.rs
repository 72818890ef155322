//! pfsqos-ops: operations tooling for a live cluster. Its one job is operating a cluster from
//! outside the daemons: the [`cluster`] file, starting and stopping its roles ([`updown`],
//! `pfsqos up/down`), finding it from the client tools ([`discover`]), watching it ([`stat`], `pfsqos stat`, lljobstat-like, recording live runs
//! for `pfsqos-report`) and driving an ossd's parameters ([`lctl`]).
//!
//! API boundary: functions that take parsed arguments and write to the given output streams
//! (`updown::up`, `stat::run`, `lctl::run`); the process around them (runtime, logging,
//! signals, exit codes) is the `pfsqos` binary's. It starts the daemons as child processes of
//! that binary, from their option types (`OssdArgs`, `MdsArgs`, `MountArgs`), never by hand
//! written flags, and talks to running daemons only through `pfsqos-wire`.

pub mod cluster;
pub mod discover;
pub mod lctl;
pub mod stat;
pub mod updown;
