//! What a run produces: per-job totals and per-job, per-OST time series in fixed bins.
//! Drivers other than the simulator (a recorded live run) fill the same types, so reports work
//! for both.

use pfsqos_core::control::{ControlWrite, DomainId, TraceSample};

/// Everything one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutput {
    pub scenario_name: String,
    pub policy: String,
    pub seed: u64,
    /// Width of a time-series bin.
    pub bin_ns: u64,
    /// Simulated time when the run ended (all I/O done, or the configured duration).
    pub end_ns: u64,
    /// OST names in index order (`OST0000`, ...).
    pub osts: Vec<String>,
    /// Jobs in scenario order.
    pub jobs: Vec<JobOutput>,
    /// Every control write applied, in order, with the time it was applied.
    pub control_log: Vec<ControlLogEntry>,
    /// The controller's internal state after each step (see `Controller::trace`), at most
    /// [`CONTROL_TRACE_LEN_MAX`] entries; `control_trace_truncated` says if more were dropped.
    pub control_trace: Vec<ControlTraceEntry>,
    pub control_trace_truncated: bool,
    pub engine: EngineStats,
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobOutput {
    pub job_id: String,
    pub node_count: u32,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// RPCs completed.
    pub rpcs: u64,
    /// Time the job issued its first RPC.
    pub first_io_ns: Option<u64>,
    /// Time the job's last RPC completed.
    pub last_io_ns: Option<u64>,
    /// Whether every process did all the I/O its shape asked for before the run ended.
    pub finished: bool,
    /// Bytes completed per OST (outer index) per bin (inner index).
    pub bytes_per_ost_bin: Vec<Vec<u64>>,
}

impl JobOutput {
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }

    /// Time from first RPC issued to last RPC completed.
    pub fn io_time_ns(&self) -> u64 {
        match (self.first_io_ns, self.last_io_ns) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => 0,
        }
    }

    /// Number of bins in which the job completed any bytes: its time doing I/O, in bins. For a
    /// bursty job this, not `io_time_ns`, is what its throughput should be measured over.
    pub fn active_bins(&self) -> u64 {
        self.bytes_per_bin().iter().filter(|&&b| b > 0).count() as u64
    }

    /// Bytes per bin summed over OSTs.
    pub fn bytes_per_bin(&self) -> Vec<u64> {
        let bins = self
            .bytes_per_ost_bin
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        let mut out = vec![0; bins];
        for per_ost in &self.bytes_per_ost_bin {
            for (i, b) in per_ost.iter().enumerate() {
                out[i] += b;
            }
        }
        out
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ControlLogEntry {
    pub time_ns: u64,
    pub domain: DomainId,
    pub write: ControlWrite,
    /// `Err` text if the scheduler rejected the write (a controller bug; recorded, not fatal).
    pub result: Result<(), String>,
}

/// Most trace entries a run keeps (about 100 MB), so a long run with many jobs stays bounded.
pub const CONTROL_TRACE_LEN_MAX: usize = 2_000_000;

#[derive(Clone, Debug, PartialEq)]
pub struct ControlTraceEntry {
    /// Time of the control step.
    pub time_ns: u64,
    pub sample: TraceSample,
}

/// Cost counters of the engine itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub events: u64,
    pub rpcs: u64,
}
