//! pfsqos-sim: a deterministic, RPC-level discrete-event simulator of a Lustre-like parallel file
//! system. Every RPC is an event on an integer-nanosecond clock; the schedulers and controllers
//! are pfsqos-core's, unchanged.
//!
//! Architecture invariant: same scenario and seed give byte-identical outputs. The event queue is
//! ordered by `(time_ns, sequence)`, and no result depends on hash-map iteration order.

pub mod batch;
pub mod device;
pub mod engine;
pub mod error;
pub mod events;
pub mod fluid;
pub mod measure;
pub mod placement;
pub mod policy;
pub mod record;
pub mod scenario;
pub mod server_costs;
pub mod workload;

pub use engine::{run, run_rpc, run_traced, run_with_controller, run_wrapped, RpcTrace};
pub use error::RunError;
pub use policy::{check_policy_spec, controller_for, PolicyArg, PolicyChoice, POLICY_NAMES};
pub use record::{
    compare_io_times, Comparison, ControlLogEntry, ControlTraceEntry, EngineStats, JobOutput,
    JobPhases, PhaseRecord, RunOutput,
};
pub use scenario::{Scenario, ScenarioError};
