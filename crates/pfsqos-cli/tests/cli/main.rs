//! The command line's end-to-end tests, one binary: each module is one area (the pure
//! commands, the live runtime, the Lustre agent, the package), so the slow live modules
//! overlap instead of running one binary after another.

mod agent_fio;
mod agent_slurm;
mod agent_stat;
mod architecture;
mod build_features;
mod claims;
mod cli;
mod common;
mod fio;
mod iez_live;
mod job_meta;
mod lctl_lfs_forms;
mod live;
mod mds;
mod mount_durability;
mod mount_nonroot;
mod mount_stop;
mod ops;
mod package;
mod pi_live;
mod readme;
mod tc_client;
