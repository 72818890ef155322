//! The simulator's integration tests, one binary: each module is one area of behaviour.

mod adaptbf_reproduction;
mod engine_client_cache;
mod engine_client_limit;
mod engine_common;
mod engine_congestion;
mod engine_determinism;
mod engine_device_space;
mod engine_oss_stats;
mod engine_phases;
mod engine_properties;
mod engine_rpcs;
mod engine_sequence;
mod engine_server_costs;
mod engine_sharing;
mod engine_vpfs;
mod fluid_agreement;
mod fluid_appset;
mod gift_artifact;
mod gift_repro_tables;
mod scenario_validation;
