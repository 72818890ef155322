//! Scenario files: the TOML description of a simulated cluster, its jobs and the policy to run.
//!
//! Every field is documented in `docs/scenarios.md`. These types are what the TOML deserializes
//! into (`deny_unknown_fields` everywhere); [`Scenario::validate`] then checks ranges and
//! references so that nothing runs on invalid input.

use std::fmt;

use serde::{Deserialize, Deserializer};

pub mod appset;
mod validate;

pub use appset::AppSetSpec;
pub use validate::*;

/// Largest scenario file read; real scenarios are a few KiB.
pub const FILE_LEN_MAX: u64 = 4 << 20;

/// A whole scenario file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name used in reports.
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub simulation: SimulationSpec,
    #[serde(default)]
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub network: NetworkSpec,
    /// Every client's page cache: write-back and read-ahead (Lustre's llite and OSC).
    #[serde(default)]
    pub client: ClientSpec,
    /// Custom device models, referenced by name from `oss.device` (presets need no entry).
    #[serde(default, rename = "device")]
    pub devices: Vec<DeviceSpec>,
    #[serde(rename = "oss")]
    pub osses: Vec<OssSpec>,
    /// Explicit jobs; may be empty when `[appset]` generates the jobs.
    #[serde(default, rename = "job")]
    pub jobs: Vec<JobSpec>,
    /// A generated application set placed by an FCFS + EASY-backfilling batch scheduler
    /// (fluid engine only), see [`appset`].
    #[serde(default)]
    pub appset: Option<AppSetSpec>,
    #[serde(default)]
    pub policy: PolicySpec,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimulationSpec {
    /// Simulated time after which the run stops even if jobs still have I/O to do.
    pub duration_s: f64,
    /// Width of a time-series bin.
    #[serde(default = "default_bin_ms")]
    pub bin_ms: u64,
    /// Seed of the random generator (random offsets); `--seed` overrides it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Which engine runs the scenario: `rpc` (every RPC an event) or `fluid` (rates piecewise
    /// constant between events, for days of simulated time).
    #[serde(default)]
    pub engine: EngineKind,
    /// Whether the controller's per-decision trace is recorded (`control_trace.csv`); long
    /// fluid runs turn it off to save memory and disk.
    #[serde(default = "default_true")]
    pub control_trace: bool,
    /// Each job's start is delayed by a time drawn uniformly from `[0, start_jitter_s]` with
    /// the run's seed (every shape of the job by the same delay; see
    /// [`crate::workload::job_start_delay_ns`]). Jobs on a real system never start in the
    /// same microsecond, and without any randomness sequential workloads give the same run
    /// for every seed, so a comparison over seeds would show no spread. Default 0: no delay.
    #[serde(default)]
    pub start_jitter_s: f64,
}

fn default_true() -> bool {
    true
}

/// The simulation engine.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The RPC-level discrete-event engine (`engine.rs`).
    #[default]
    Rpc,
    /// The fluid engine (`fluid.rs`).
    Fluid,
}

fn default_bin_ms() -> u64 {
    100
}
fn default_seed() -> u64 {
    1
}

/// Where a TBF (or FIFO) scheduler instance sits.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SchedulerScope {
    /// One `ost_io` service per OSS, as Lustre has: rules cover all OSTs of the OSS together.
    #[default]
    Oss,
    /// One scheduler per OST (what per-OST designs such as AdapTBF assume).
    Ost,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Number of client nodes; client `i` has NID `192.168.1.(i+1)@tcp`.
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// Largest bulk RPC.
    #[serde(default = "default_brw_size")]
    pub brw_size: ByteSize,
    /// RPCs a client keeps outstanding per OST (Lustre `max_rpcs_in_flight`).
    #[serde(default = "default_max_rpcs_in_flight")]
    pub max_rpcs_in_flight: u32,
    #[serde(default)]
    pub scheduler_scope: SchedulerScope,
    /// Default stripe count of new files (`-1` is not accepted: name the count).
    #[serde(default = "default_stripe_count")]
    pub stripe_count: u32,
    #[serde(default = "default_stripe_size")]
    pub stripe_size: ByteSize,
    /// The MDS's placement policy for new files: a row of `pfsqos_core::place::PLACER_ROWS`.
    #[serde(default = "default_placement")]
    pub placement: String,
    /// When files are created (`placement::FilesCreated`): all at the run's start (default),
    /// or each when its first process begins its first burst.
    #[serde(default)]
    pub files_created: FilesCreated,
    /// Period of the OSSs' statistics reports the placer decides from (iez collects every
    /// 60 s, Section III-B1): space, and the OSS load model of `placement::oss_load_report`.
    #[serde(default = "default_oss_stats_period_s")]
    pub oss_stats_period_s: f64,
}

/// When the MDS creates a run's files.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FilesCreated {
    /// Every file at the run's start, in job order, before any I/O.
    #[default]
    Start,
    /// Each file when its first process begins its first burst (a shared file: the first of
    /// its processes to do so); the placer decides from the last statistics report. RPC-level
    /// engine only.
    FirstIo,
}

/// iez's collector period (Section III-B1).
pub const OSS_STATS_PERIOD_S_DEFAULT: f64 = 60.0;
/// Longest statistics period a scenario may set (one day).
pub const OSS_STATS_PERIOD_S_MAX: f64 = 86_400.0;
/// Shortest (1 ms: a report per millisecond is as fresh as the simulator's statistics get).
pub const OSS_STATS_PERIOD_S_MIN: f64 = 0.001;

fn default_oss_stats_period_s() -> f64 {
    OSS_STATS_PERIOD_S_DEFAULT
}

fn default_placement() -> String {
    "roundrobin".to_string()
}

fn default_clients() -> u32 {
    1
}
fn default_brw_size() -> ByteSize {
    ByteSize(4 << 20)
}
fn default_max_rpcs_in_flight() -> u32 {
    8
}
fn default_stripe_count() -> u32 {
    1
}
fn default_stripe_size() -> ByteSize {
    ByteSize(1 << 20)
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            clients: default_clients(),
            brw_size: default_brw_size(),
            max_rpcs_in_flight: default_max_rpcs_in_flight(),
            scheduler_scope: SchedulerScope::default(),
            stripe_count: default_stripe_count(),
            stripe_size: default_stripe_size(),
            placement: default_placement(),
            files_created: FilesCreated::default(),
            oss_stats_period_s: default_oss_stats_period_s(),
        }
    }
}

/// A client's page cache, as Lustre's client has it. A write call returns once its bytes fit
/// the dirty budgets (each OSC's `max_dirty_mb` and the client-wide `max_dirty_client_mb`);
/// its RPCs go out in the background, `max_rpcs_in_flight` at a time, and give their budget
/// back when they complete. A sequential reader's client prefetches up to
/// `max_read_ahead_per_file_mb` past each read, within a client-wide budget of
/// `max_read_ahead_mb` in flight. A value of 0 turns that part off: with all four at 0 every
/// call waits for its own RPCs (the model without a client cache).
///
/// Defaults are Lustre's (lustre-release, lustre/include/obd.h `client_adjust_max_dirty` with
/// `OSC_MAX_DIRTY_DEFAULT`; lustre/obdclass/class_obd.c `obd_max_dirty_pages`;
/// lustre/llite/llite_lib.c `ll_init_sbi` with `SBI_DEFAULT_READ_AHEAD_MAX` and
/// `SBI_DEFAULT_READ_AHEAD_PER_FILE_MAX` of lustre/llite/llite_internal.h) for a client of
/// [`CLIENT_MEMORY_GIB_DEFAULT`] of memory, where Lustre's memory-dependent caps no longer
/// bind except the client-wide dirty limit (half the memory).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Dirty bytes one OSC (client, OST) may hold: buffered and not yet acknowledged.
    #[serde(default = "default_max_dirty_mb")]
    pub max_dirty_mb: u64,
    /// Dirty bytes the whole client may hold over all its OSCs.
    #[serde(default = "default_max_dirty_client_mb")]
    pub max_dirty_client_mb: u64,
    /// Read-ahead bytes the client may have in flight over all its files.
    #[serde(default = "default_max_read_ahead_mb")]
    pub max_read_ahead_mb: u64,
    /// How far past a sequential read the client prefetches in one file.
    #[serde(default = "default_max_read_ahead_per_file_mb")]
    pub max_read_ahead_per_file_mb: u64,
}

/// The client memory the defaults of [`ClientSpec`] are computed for (an assumption: Lustre
/// sizes its caches from the client's memory; HPC compute nodes have at least this much).
pub const CLIENT_MEMORY_GIB_DEFAULT: u64 = 32;
/// Lustre's `OSC_MAX_DIRTY_DEFAULT` (MiB), below its cap of a client's memory / 8.
pub const MAX_DIRTY_MB_DEFAULT: u64 = 2000;
/// Lustre's `obd_max_dirty_pages`: half the client's memory.
pub const MAX_DIRTY_CLIENT_MB_DEFAULT: u64 = CLIENT_MEMORY_GIB_DEFAULT * 1024 / 2;
/// Lustre's `ra_max_pages`: min(memory / 32, `SBI_DEFAULT_READ_AHEAD_MAX` = 1024 MiB).
pub const MAX_READ_AHEAD_MB_DEFAULT: u64 = 1024;
/// Lustre's `ra_max_pages_per_file`: min(`ra_max_pages` / 4,
/// `SBI_DEFAULT_READ_AHEAD_PER_FILE_MAX` = 256 MiB).
pub const MAX_READ_AHEAD_PER_FILE_MB_DEFAULT: u64 = 256;
/// Largest value of any `[client]` budget (64 GiB).
pub const CLIENT_CACHE_MB_MAX: u64 = 1 << 16;

fn default_max_dirty_mb() -> u64 {
    MAX_DIRTY_MB_DEFAULT
}
fn default_max_dirty_client_mb() -> u64 {
    MAX_DIRTY_CLIENT_MB_DEFAULT
}
fn default_max_read_ahead_mb() -> u64 {
    MAX_READ_AHEAD_MB_DEFAULT
}
fn default_max_read_ahead_per_file_mb() -> u64 {
    MAX_READ_AHEAD_PER_FILE_MB_DEFAULT
}

impl Default for ClientSpec {
    fn default() -> Self {
        ClientSpec {
            max_dirty_mb: default_max_dirty_mb(),
            max_dirty_client_mb: default_max_dirty_client_mb(),
            max_read_ahead_mb: default_max_read_ahead_mb(),
            max_read_ahead_per_file_mb: default_max_read_ahead_per_file_mb(),
        }
    }
}

impl ClientSpec {
    /// No client cache: every call waits for its own RPCs.
    pub const OFF: ClientSpec = ClientSpec {
        max_dirty_mb: 0,
        max_dirty_client_mb: 0,
        max_read_ahead_mb: 0,
        max_read_ahead_per_file_mb: 0,
    };

    /// Whether write calls return once buffered.
    pub fn write_back(&self) -> bool {
        self.max_dirty_mb > 0 && self.max_dirty_client_mb > 0
    }

    /// Whether sequential readers prefetch.
    pub fn read_ahead(&self) -> bool {
        self.max_read_ahead_mb > 0 && self.max_read_ahead_per_file_mb > 0
    }
}

/// Links between clients and servers. Every client and every OSS has one full-duplex link.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    #[serde(default = "default_link_mib_s")]
    pub client_link_mib_s: f64,
    #[serde(default = "default_link_mib_s")]
    pub server_link_mib_s: f64,
    /// One-way latency of a message.
    #[serde(default = "default_latency_us")]
    pub latency_us: f64,
    /// The sender's cost of one message (its software path through the stack): every
    /// message's one-way time grows by it, and a bulk transfer holds its link that much
    /// longer, so a link sends at most one message per `message_us`.
    #[serde(default = "default_message_us")]
    pub message_us: f64,
}

fn default_message_us() -> f64 {
    crate::server_costs::MESSAGE_US_DEFAULT
}

/// 25 Gb/s Ethernet, as on the AdapTBF testbed.
fn default_link_mib_s() -> f64 {
    2980.0
}
fn default_latency_us() -> f64 {
    10.0
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            client_link_mib_s: default_link_mib_s(),
            server_link_mib_s: default_link_mib_s(),
            latency_us: default_latency_us(),
            message_us: default_message_us(),
        }
    }
}

/// A table-driven device model. Service time of a request of `s` bytes is
/// `overhead_us(s) + s / bandwidth(s)`, both interpolated linearly in request size between rows
/// (and held flat outside them), plus `random_penalty_us` when the request does not start where
/// the previous one on the same object ended.
///
/// Or a measured device: `profile` names a device profile (a shipped one by name, or a
/// profile file by path relative to the scenario file), and no table is given.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    pub name: String,
    /// A device profile: a shipped name (`pfsqos_profile::SHIPPED_NAMES`) or a path.
    #[serde(default)]
    pub profile: Option<String>,
    /// The profile `profile` names, read when the scenario is loaded.
    #[serde(skip)]
    pub resolved_profile: Option<pfsqos_profile::Profile>,
    #[serde(default)]
    pub read: Vec<DeviceRow>,
    #[serde(default)]
    pub write: Vec<DeviceRow>,
    #[serde(default)]
    pub random_penalty_us: f64,
    /// Requests the device serves at once (its internal parallelism); bandwidth is shared.
    #[serde(default = "default_device_concurrency")]
    pub concurrency: u32,
    /// Congestion cost (optional; none by default, so the device is work-conserving): the
    /// fraction of the table bandwidth the device transfers at with a given dispatch queue,
    /// interpolated linearly in the queue length between rows and held flat outside them.
    /// `crate::device` documents the model and where a curve may come from.
    #[serde(default)]
    pub congestion: Vec<CongestionRow>,
}

/// One point of a device's congestion curve.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CongestionRow {
    /// Requests in the dispatch queue: at the device plus waiting for it.
    pub queue_requests: u32,
    /// Bandwidth at that queue as a fraction of the table bandwidth, in (0, 1].
    pub throughput_fraction: f64,
}

fn default_device_concurrency() -> u32 {
    1
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceRow {
    pub size: ByteSize,
    pub bandwidth_mib_s: f64,
    #[serde(default)]
    pub overhead_us: f64,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OssSpec {
    pub name: String,
    /// Number of OSTs on this server; OSTs are numbered across the cluster in file order.
    pub osts: u32,
    /// Device model of every OST here: a preset (`hdd`, `ssd-sata`) or a `[[device]]` name.
    #[serde(default = "default_device")]
    pub device: String,
    /// `ost_io` service threads.
    #[serde(default = "default_io_threads")]
    pub io_threads: u32,
    /// CPU partitions; each runs its own scheduler instance, clients map to one by NID.
    #[serde(default = "default_cpts")]
    pub cpts: u32,
    /// CPU time a service thread spends on each RPC before its bulk and device work (request
    /// handling), whatever its size.
    #[serde(default = "default_rpc_cpu_us")]
    pub rpc_cpu_us: f64,
    /// CPU time a service thread spends per MiB of an RPC's data (checksums, copies).
    #[serde(default = "default_rpc_cpu_us_per_mib")]
    pub rpc_cpu_us_per_mib: f64,
    /// CPU time a CPU partition spends on each synchronization message it receives from
    /// another server (DSFQ, vPFS), one message after the other.
    #[serde(default = "default_sync_cpu_us")]
    pub sync_cpu_us: f64,
    /// Maximum token rate of each OST (AdapTBF `T_i`). Default: derived from the device model
    /// as the rate of `brw_size` writes the device sustains.
    #[serde(default)]
    pub capacity_rpcs_per_s: Option<u64>,
    /// Size of each OST here (Lustre's `kbytestotal`): what OST utilization (iez's eq. 7)
    /// and space-aware placement divide by. Default: none (utilization not reported; the
    /// placers see every OST as equally empty).
    #[serde(default)]
    pub ost_capacity: Option<ByteSize>,
    /// Bytes already in use on each OST here when the run starts (other tenants' data).
    #[serde(default)]
    pub ost_used: Option<ByteSize>,
}

fn default_rpc_cpu_us() -> f64 {
    crate::server_costs::RPC_CPU_US_DEFAULT
}
fn default_rpc_cpu_us_per_mib() -> f64 {
    crate::server_costs::RPC_CPU_US_PER_MIB_DEFAULT
}
fn default_sync_cpu_us() -> f64 {
    crate::server_costs::SYNC_CPU_US_DEFAULT
}

fn default_device() -> String {
    "ssd-sata".to_string()
}
fn default_io_threads() -> u32 {
    64
}
fn default_cpts() -> u32 {
    1
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// The JobID (at most 31 bytes), as `jobid_var` would make it.
    pub id: String,
    /// Compute nodes of the job: the AdapTBF and Static BW priority basis.
    pub nodes: u32,
    /// Proportional-share weight (vPFS): what the weighted fairness metrics compare the job's
    /// share against and what proportional-share policies give it. Default: `nodes`.
    #[serde(default)]
    pub weight: Option<u32>,
    /// Client nodes the job's processes run on, round robin. Default: all clients.
    #[serde(default)]
    pub clients: Option<Vec<u32>>,
    #[serde(default)]
    pub uid: u32,
    #[serde(default)]
    pub gid: u32,
    #[serde(rename = "processes")]
    pub groups: Vec<ProcessGroupSpec>,
}

impl JobSpec {
    /// The job's proportional-share weight: `weight`, or its node count.
    pub fn weight(&self) -> u32 {
        self.weight
            .unwrap_or_else(|| pfsqos_core::control::default_job_weight(self.nodes))
    }
}

/// Access pattern, named as in fio.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    Randread,
    Randwrite,
}

impl Rw {
    pub fn is_read(self) -> bool {
        matches!(self, Rw::Read | Rw::Randread)
    }
    pub fn is_random(self) -> bool {
        matches!(self, Rw::Randread | Rw::Randwrite)
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FileMode {
    /// Each process has its own file (IOR `-F`, fio's default).
    #[default]
    PerProcess,
    /// All processes of the group share one file, each working in its own `size` region.
    Shared,
}

/// `numjobs` processes with the same workload and temporal shape.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProcessGroupSpec {
    pub rw: Rw,
    /// Size of one I/O call.
    pub bs: ByteSize,
    /// Bytes each process accesses in total; the process stops when done. Reads of a file
    /// wrap around within this size when the shape asks for more.
    pub size: ByteSize,
    #[serde(default = "default_numjobs")]
    pub numjobs: u32,
    /// I/O calls each process keeps outstanding.
    #[serde(default = "default_iodepth")]
    pub iodepth: u32,
    #[serde(default)]
    pub file: FileMode,
    /// Stripe layout of the group's files; defaults from `[cluster]`.
    #[serde(default)]
    pub stripe_count: Option<u32>,
    #[serde(default)]
    pub stripe_size: Option<ByteSize>,
    /// First OST of the layout; default: round robin over the cluster, as the MDS does.
    #[serde(default)]
    pub stripe_offset: Option<u32>,
    /// Index of an earlier group of the same job: this group's shape (its `start_s`, `stop_s`,
    /// burst times, phases) runs from the moment every process of that group has finished its
    /// I/O instead of from the job's start (BTIO's verification after its output phase).
    #[serde(default)]
    pub after: Option<u32>,
    /// Index of an earlier group of the same job whose files this group accesses, with the
    /// layouts they got at creation (process `k` uses process `k`'s file or region); the
    /// group creates no files of its own (a read-back of what another group wrote).
    #[serde(default)]
    pub files_of: Option<u32>,
    /// fio's `direct = 1`: the calls bypass the client's page cache (no write-back, no
    /// read-ahead), each waiting for its RPCs as with `[client]` caching off.
    #[serde(default)]
    pub direct: bool,
    #[serde(default)]
    pub shape: ShapeSpec,
}

fn default_numjobs() -> u32 {
    1
}
fn default_iodepth() -> u32 {
    1
}

/// When a process issues I/O.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ShapeSpec {
    #[serde(default)]
    pub kind: ShapeKind,
    /// Delay before the first I/O.
    #[serde(default)]
    pub start_s: f64,
    /// Stop issuing new I/O at this time (I/O in flight completes).
    #[serde(default)]
    pub stop_s: Option<f64>,
    /// `periodic`: bytes per process per burst.
    #[serde(default)]
    pub burst_size: Option<ByteSize>,
    /// `periodic`: time from the start of one burst to the start of the next. A burst that is
    /// still running when the next is due delays it (bursts never overlap).
    #[serde(default)]
    pub interval_s: Option<f64>,
    /// `bursts`: explicit bursts, each at an absolute time, with bytes per process.
    #[serde(default)]
    pub bursts: Vec<BurstSpec>,
    /// `phases`: number of compute + I/O phases each process runs.
    #[serde(default)]
    pub phases: Option<u32>,
    /// `phases`: compute time before each I/O phase.
    #[serde(default)]
    pub compute_s: Option<f64>,
    /// `phases`: bytes per process per I/O phase.
    #[serde(default)]
    pub phase_size: Option<ByteSize>,
}

impl Default for ShapeSpec {
    fn default() -> Self {
        ShapeSpec {
            kind: ShapeKind::Continuous,
            start_s: 0.0,
            stop_s: None,
            burst_size: None,
            interval_s: None,
            bursts: Vec::new(),
            phases: None,
            compute_s: None,
            phase_size: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ShapeKind {
    /// I/O back to back from `start_s` until `size` is done or `stop_s`.
    #[default]
    Continuous,
    /// Bursts of `burst_size` every `interval_s`.
    Periodic,
    /// The bursts listed in `bursts`.
    Bursts,
    /// `phases` rounds of `compute_s` of compute, then an I/O phase of `phase_size` per
    /// process that ends for the whole job when its last process finishes (synchronous I/O
    /// progress, GIFT §2): all processes of the job then compute again together.
    Phases,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BurstSpec {
    pub at_s: f64,
    pub size: ByteSize,
}

/// Which controller runs and its parameters.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Policy used by `pfsqos sim` without `--policy`.
    #[serde(default = "default_policy")]
    pub default: String,
    /// Policies compared by `pfsqos compare` without `--policies`.
    #[serde(default = "default_compare")]
    pub compare: Vec<String>,
    /// Control period of adaptive controllers.
    #[serde(default = "default_period_ms")]
    pub period_ms: u64,
}

fn default_policy() -> String {
    "nobw".to_string()
}
fn default_compare() -> Vec<String> {
    vec!["nobw".to_string(), "static".to_string()]
}
fn default_period_ms() -> u64 {
    100
}

impl Default for PolicySpec {
    fn default() -> Self {
        PolicySpec {
            default: default_policy(),
            compare: default_compare(),
            period_ms: default_period_ms(),
        }
    }
}

/// A byte count written as an integer or as fio writes it: `4k`, `1M`, `1GiB` (binary), or
/// `1MB`, `1GB` (decimal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub fn bytes(self) -> u64 {
        self.0
    }

    /// Parses `4k`, `4K`, `4KiB`, `4KB`, `1.5M`, `123` ...
    pub fn parse(text: &str) -> Result<ByteSize, String> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let value: f64 = num
            .parse()
            .map_err(|_| format!("`{text}` is not a size (expected e.g. 4096, 4k, 1M, 1GiB)"))?;
        let mult: u64 = match unit.trim() {
            "" | "b" | "B" => 1,
            "k" | "K" | "KiB" | "kiB" => 1 << 10,
            "m" | "M" | "MiB" => 1 << 20,
            "g" | "G" | "GiB" => 1 << 30,
            "t" | "T" | "TiB" => 1 << 40,
            "kB" | "KB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            other => {
                return Err(format!(
                "`{text}` has unknown unit `{other}` (allowed: B, k/K/KiB, M/MiB, G/GiB, T/TiB, kB, MB, GB, TB)"
            ))
            }
        };
        let bytes = value * mult as f64;
        if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 / 2.0 {
            return Err(format!("`{text}` is out of range"));
        }
        if bytes.fract() != 0.0 {
            return Err(format!("`{text}` is not a whole number of bytes"));
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "k")] {
            if b >= 1 << shift && b.is_multiple_of(1 << shift) {
                return write!(f, "{}{unit}", b >> shift);
            }
        }
        write!(f, "{b}")
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        // A visitor rather than an untagged enum, so a wrong type reads "invalid type: floating
        // point `1.5`, expected a size ..." instead of "did not match any variant".
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a size: a whole number of bytes or a string such as \"4k\", \"1M\", \"1GiB\"",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v).map(ByteSize).map_err(|_| {
                    E::custom(format!(
                        "size {v} is negative (expected e.g. 4096, \"4k\", \"1M\", \"1GiB\")"
                    ))
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ByteSize, E> {
                ByteSize::parse(v).map_err(E::custom)
            }
        }
        de.deserialize_any(V)
    }
}

/// A scenario that cannot be used, with the file, the field, the value and what is allowed:
/// the error of every TOML input file.
pub type ScenarioError = pfsqos_tomlfile::FileError;

impl Scenario {
    /// The jobs the RPC-level engine runs: the explicit `[[job]]`s, then the `[appset]`'s
    /// generated runs expanded by [`appset::AppSetSpec::expand_for_rpc`] (the same set, in the
    /// same order, as the fluid engine generates with the simulation seed). An error says why
    /// the RPC engine cannot run this set.
    pub fn rpc_jobs(&self) -> Result<std::borrow::Cow<'_, [JobSpec]>, String> {
        let Some(appset) = &self.appset else {
            return Ok(std::borrow::Cow::Borrowed(&self.jobs));
        };
        let osts: u32 = self.osses.iter().map(|o| o.osts).sum();
        let mut jobs = self.jobs.clone();
        jobs.extend(
            appset
                .expand_for_rpc(osts, self.simulation.seed, self.cluster.clients)
                .map_err(|e| format!("[appset] in the RPC-level engine: {e}"))?,
        );
        Ok(std::borrow::Cow::Owned(jobs))
    }

    /// Reads, parses and validates a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let cannot_read = |message: String| ScenarioError {
            file: file.clone(),
            field: String::new(),
            value: None,
            message,
        };
        let len_bytes = std::fs::metadata(path)
            .map_err(|e| cannot_read(format!("cannot read: {e}")))?
            .len();
        if len_bytes > FILE_LEN_MAX {
            return Err(cannot_read(format!(
                "file is {len_bytes} bytes long; a scenario may be at most {FILE_LEN_MAX} bytes"
            )));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| cannot_read(format!("cannot read: {e}")))?;
        Scenario::from_toml_str_in(&text, &file, path.parent())
    }

    /// Parses and validates scenario text; `file` names it in errors. Errors carry the dotted
    /// field path, the value as written and its line and column.
    ///
    /// A device profile named by path cannot be read from text alone (there is no scenario
    /// file to resolve it against): [`Scenario::load`] reads those; shipped profiles work
    /// either way.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_str_in(text, file, None)
    }

    /// [`Scenario::from_toml_str`], with device profiles named by path read relative to
    /// `base_dir` (what [`Scenario::load`] passes: the scenario file's directory), for text
    /// that stands for a file, e.g. a scenario read from a file and then edited.
    pub fn from_toml_str_in(
        text: &str,
        file: &str,
        base_dir: Option<&std::path::Path>,
    ) -> Result<Scenario, ScenarioError> {
        if text.len() as u64 > FILE_LEN_MAX {
            return Err(ScenarioError {
                file: file.to_string(),
                field: String::new(),
                value: None,
                message: format!(
                    "text is {} bytes long; a scenario may be at most {FILE_LEN_MAX} bytes",
                    text.len()
                ),
            });
        }
        let mut scenario = pfsqos_tomlfile::parse::<Scenario>(text, file)?;
        scenario
            .resolve_profiles(file, base_dir)
            .map_err(|e| pfsqos_tomlfile::locate(text, e))?;
        scenario
            .validate(file)
            .map_err(|e| pfsqos_tomlfile::locate(text, e))?;
        Ok(scenario)
    }
}

/// Largest device profile file read (`pfsqos_profile::TEXT_LEN_MAX`).
const PROFILE_FILE_LEN_MAX: u64 = pfsqos_profile::TEXT_LEN_MAX as u64;
/// Longest profile path a scenario may give.
const PROFILE_PATH_LEN_MAX: usize = 4096;

impl Scenario {
    /// Reads the device profiles the `[[device]]` entries name: shipped names first, then
    /// files relative to `base_dir` (the scenario's directory).
    fn resolve_profiles(
        &mut self,
        file: &str,
        base_dir: Option<&std::path::Path>,
    ) -> Result<(), ScenarioError> {
        for (i, d) in self.devices.iter_mut().enumerate() {
            let Some(name) = &d.profile else {
                continue;
            };
            let err = |message: String| ScenarioError {
                file: file.to_string(),
                field: format!("device[{i}].profile"),
                value: Some(format!("{name:?}")),
                message,
            };
            if name.is_empty() || name.len() > PROFILE_PATH_LEN_MAX || name.contains('\0') {
                return Err(err(format!(
                    "a shipped profile ({}) or a path of 1..={PROFILE_PATH_LEN_MAX} bytes",
                    pfsqos_profile::SHIPPED_NAMES.join(", ")
                )));
            }
            if let Some(p) = pfsqos_profile::shipped(name) {
                d.resolved_profile = Some(p);
                continue;
            }
            let Some(base) = base_dir else {
                return Err(err(format!(
                    "not a shipped profile ({}); a profile file is read relative to the \
                     scenario file, so load the scenario from a file",
                    pfsqos_profile::SHIPPED_NAMES.join(", ")
                )));
            };
            let path = base.join(name);
            let shown = path.display().to_string();
            let len = std::fs::metadata(&path)
                .map_err(|e| {
                    err(format!(
                        "not a shipped profile ({}), and `{shown}` cannot be read: {e}",
                        pfsqos_profile::SHIPPED_NAMES.join(", ")
                    ))
                })?
                .len();
            if len > PROFILE_FILE_LEN_MAX {
                return Err(err(format!(
                    "`{shown}` is {len} bytes; a profile may be at most {PROFILE_FILE_LEN_MAX}"
                )));
            }
            let text = std::fs::read_to_string(&path)
                .map_err(|e| err(format!("`{shown}` cannot be read: {e}")))?;
            let profile = pfsqos_profile::Profile::from_toml_str(&text, &shown)
                .map_err(|e| err(format!("the profile is invalid: {e}")))?;
            d.resolved_profile = Some(profile);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(ByteSize::parse("4096"), Ok(ByteSize(4096)));
        assert_eq!(ByteSize::parse("4k"), Ok(ByteSize(4096)));
        assert_eq!(ByteSize::parse("1M"), Ok(ByteSize(1 << 20)));
        assert_eq!(ByteSize::parse("1MiB"), Ok(ByteSize(1 << 20)));
        assert_eq!(ByteSize::parse("1MB"), Ok(ByteSize(1_000_000)));
        assert_eq!(ByteSize::parse("1.5G"), Ok(ByteSize(3 << 29)));
        assert!(ByteSize::parse("1Q").is_err());
        assert!(ByteSize::parse("abc").is_err());
        assert_eq!(ByteSize(4 << 20).to_string(), "4M");
    }

    #[derive(Deserialize)]
    struct One {
        s: ByteSize,
    }

    #[test]
    fn sizes_deserialize_from_integers_and_strings_only() {
        let one = |t: &str| {
            toml::from_str::<One>(t)
                .map(|o| o.s)
                .map_err(|e| e.to_string())
        };
        assert_eq!(one("s = 4096"), Ok(ByteSize(4096)));
        assert_eq!(one("s = \"64k\""), Ok(ByteSize(64 << 10)));
        assert!(one("s = 1.5").unwrap_err().contains("expected a size"));
        assert!(one("s = -1").unwrap_err().contains("negative"));
        assert!(one("s = true").unwrap_err().contains("expected a size"));
    }

    proptest::proptest! {
        #[test]
        fn displayed_sizes_parse_back(b in 0u64..(1 << 52)) {
            let shown = ByteSize(b).to_string();
            proptest::prop_assert_eq!(ByteSize::parse(&shown), Ok(ByteSize(b)));
        }
    }
}
