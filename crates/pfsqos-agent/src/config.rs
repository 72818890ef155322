//! The agent's configuration file (TOML, in the style of `cluster.toml`): every field
//! validated, unknown fields refused.
//!
//! ```toml
//! controller = "adaptbf"            # static | adaptbf[:options] (pfsqos_core::control::spec)
//! period_ms = 1000
//! ost_profile = "ssd-nvme"          # a shipped device profile or a profile file: each OST's
//!                                   # capacity; without it, the observed peak (CapacitySource)
//! # ost_capacity_bytes_per_s = 2_000_000_000   # or ost_capacity_rpcs_per_s: an override
//! brw_size_bytes = 4194304          # the OSS's brw_size: one full RPC
//! cpts = 2                          # CPU partitions of ost_io (cpu_npartitions)
//! rule_prefix = "pfq"               # every rule the agent creates starts with it
//! rules_max = 512                   # jobs with their own rule; beyond, one catch-all rule
//! lctl = "lctl"                     # program run (argv, never a shell)
//! lctl_timeout_ms = 10000
//! lctl_retries = 2
//! lctl_backoff_ms = 200
//! metrics_listen = "127.0.0.1:9189"
//! # [coordinator]                 # optional: rates from `pfsqos coordinator` (GIFT, ...)
//! # addr = "10.0.0.5:9190"
//! # key_file = "/etc/pfsqos/cluster.key"
//! # agent_name = "oss1"           # as in the coordinator's agents list
//! # safe_hold_ms = 30000          # then the coordinator's rules are removed
//! job_id_layout = "%e.%u"           # where user limits find the uid in a job id
//!
//! # [slurm]                         # optional: job facts from Slurm (pfsqos_jobfacts)
//! # squeue = "squeue"               # program run (argv, never a shell)
//! # refresh_ms = 10000              # how often squeue is asked
//! # timeout_ms = 10000
//! # basis = "nodes"                 # or "priority": what the controller shares by
//!
//! [[jobs]]                          # node counts of jobs Slurm does not report
//! id = "4151234"
//! nodes = 16
//!
//! [[limits]]                        # administrator limits, bytes/s
//! job = "4151234"                   # or user = 1001, or group = 100
//! bytes_per_s = 500_000_000
//! ```

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use pfsqos_core::control::spec::{Deployment, PolicyChoice, CONTROLLERS, PERIOD_MS_MAX};
use pfsqos_core::control::{rule_name_prefix_is_valid, RULE_NAME_PREFIX_LEN_MAX};
use pfsqos_core::lustre::{BRW_SIZE_BYTES_MAX, BRW_SIZE_BYTES_MIN};
use pfsqos_core::model::JobId;
use serde::Deserialize;

/// Controllers the agent runs alone on one OSS: those whose decisions are TBF rules on one
/// server (`Deployment::ServerRules` in the controller list). The others need a coordinator
/// (GIFT and its baselines: a global view), a scheduler Lustre lacks (vPFS: SFQ/DSFQ), or
/// client-side actuators (PI, AIMD: `tc`).
pub fn decentralized_controllers() -> impl Iterator<Item = &'static str> {
    CONTROLLERS
        .iter()
        .filter(|d| d.deployment == Deployment::ServerRules)
        .map(|d| d.name)
}

/// Most rules the agent may be told to create (`rules_max`): a rule per job a controller
/// tracks.
pub const RULES_MAX_LIMIT: usize = pfsqos_core::lustre::JOBS_TRACKED_MAX;
/// Most `[[jobs]]` and `[[limits]]` entries.
pub const ENTRIES_MAX: usize = 4096;
/// Longest lctl timeout accepted.
pub const LCTL_TIMEOUT_MS_MAX: u64 = 600_000;
/// Most retries of one lctl command.
pub const LCTL_RETRIES_MAX: u32 = 10;
/// Longest config file read.
pub const CONFIG_LEN_BYTES_MAX: u64 = 1 << 20;
/// Largest CPU partition count (Lustre's `cfs_cpt_number` is bounded by the CPU count).
pub const CPTS_MAX: u32 = pfsqos_core::lustre::CPTS_MAX;

pub(crate) fn default_period_ms() -> u64 {
    1000
}
pub(crate) fn default_brw() -> u64 {
    pfsqos_core::lustre::BRW_SIZE_BYTES_DEFAULT
}
fn default_period_ms_i64() -> i64 {
    default_period_ms() as i64
}
fn default_brw_i64() -> i64 {
    default_brw() as i64
}
fn default_cpts() -> i64 {
    1
}
fn default_prefix() -> String {
    "pfq".to_string()
}
fn default_rules_max() -> i64 {
    512
}
fn default_lctl() -> PathBuf {
    PathBuf::from("lctl")
}
fn default_timeout() -> i64 {
    10_000
}
fn default_retries() -> i64 {
    2
}
fn default_backoff() -> i64 {
    200
}
pub(crate) fn default_layout() -> String {
    "%e.%u".to_string()
}

/// Node count of a job known before it sends anything.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct JobNodes {
    pub id: String,
    /// Read signed, so `-1` gets the field's range and not the parser's "expected u32".
    pub nodes: i64,
}

/// An administrator limit on what a job, a user's jobs or a group's jobs may move through
/// this OSS, in bytes per second (reads and writes together).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LimitEntry {
    pub job: Option<String>,
    pub user: Option<i64>,
    pub group: Option<i64>,
    pub bytes_per_s: i64,
}

// Who a limit applies to and where uids and gids stand in job ids: the policy's types, in
// pfsqos-core's control layer with the rest of the byte-limit policy.
pub use pfsqos_core::control::byte_limits::{JobIdLayout, LimitTarget};

/// The file as written. Every integer is read signed (TOML's integers are `i64`) and checked
/// against its field's range in [`AgentConfig::validate`], so `-1` or `"eight"` gets the
/// field's range, not the parser's "expected u32" or u32's 0 to 4294967295.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub controller: String,
    #[serde(default = "default_period_ms_i64")]
    pub period_ms: i64,
    pub ost_capacity_bytes_per_s: Option<i64>,
    pub ost_capacity_rpcs_per_s: Option<i64>,
    pub ost_profile: Option<String>,
    #[serde(default = "default_brw_i64")]
    pub brw_size_bytes: i64,
    #[serde(default = "default_cpts")]
    pub cpts: i64,
    #[serde(default = "default_prefix")]
    pub rule_prefix: String,
    #[serde(default = "default_rules_max")]
    pub rules_max: i64,
    #[serde(default = "default_lctl")]
    pub lctl: PathBuf,
    #[serde(default = "default_timeout")]
    pub lctl_timeout_ms: i64,
    #[serde(default = "default_retries")]
    pub lctl_retries: i64,
    #[serde(default = "default_backoff")]
    pub lctl_backoff_ms: i64,
    pub metrics_listen: Option<SocketAddr>,
    pub coordinator: Option<CoordinatorFile>,
    #[serde(default = "default_layout")]
    pub job_id_layout: String,
    pub slurm: Option<SlurmFile>,
    #[serde(default)]
    pub jobs: Vec<JobNodes>,
    #[serde(default)]
    pub limits: Vec<LimitEntry>,
}

/// `[slurm]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmFile {
    #[serde(default = "default_squeue")]
    pub squeue: PathBuf,
    #[serde(default = "default_slurm_refresh_ms")]
    pub refresh_ms: i64,
    #[serde(default = "default_slurm_timeout_ms")]
    pub timeout_ms: i64,
    #[serde(default = "default_slurm_basis")]
    pub basis: String,
}

fn default_squeue() -> PathBuf {
    PathBuf::from("squeue")
}
fn default_slurm_refresh_ms() -> i64 {
    10_000
}
fn default_slurm_timeout_ms() -> i64 {
    10_000
}
fn default_slurm_basis() -> String {
    "nodes".to_string()
}
/// Longest `[slurm] refresh_ms` (one hour) and `timeout_ms` (one minute).
pub const SLURM_REFRESH_MS_MAX: u64 = 3_600_000;
pub const SLURM_TIMEOUT_MS_MAX: u64 = 60_000;

/// Where the agent reads job facts from Slurm, how often, and what its controller shares by.
#[derive(Clone, Debug)]
pub struct SlurmLink {
    pub squeue: PathBuf,
    pub refresh_ms: u64,
    pub timeout_ms: u64,
    pub basis: pfsqos_jobfacts::Basis,
}

/// Longest time an agent keeps a coordinator's rates without hearing from it (one hour).
pub const SAFE_HOLD_MS_MAX: u64 = 3_600_000;

fn default_safe_hold_ms() -> i64 {
    30_000
}

/// `[coordinator]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatorFile {
    pub addr: SocketAddr,
    #[serde(default = "default_key_file")]
    pub key_file: PathBuf,
    pub agent_name: String,
    #[serde(default = "default_safe_hold_ms")]
    pub safe_hold_ms: i64,
}

pub(crate) fn default_key_file() -> PathBuf {
    PathBuf::from(pfsqos_wire::key::DEFAULT_KEY_FILE)
}

/// Where the agent's coordinator is and how long its rates outlive silence (the safe state:
/// after `safe_hold_ms` without a reply the agent removes the coordinator's rules).
#[derive(Clone, Debug)]
pub struct CoordinatorLink {
    pub addr: SocketAddr,
    pub key_file: PathBuf,
    pub agent_name: String,
    pub safe_hold_ms: u64,
}

/// Where each OST's capacity (RPCs/s of `brw_size_bytes`) comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum CapacitySource {
    /// `ost_capacity_bytes_per_s` or `ost_capacity_rpcs_per_s`: the administrator's override.
    Typed,
    /// `ost_profile`: the device model's sequential-write rate of full RPCs with a full queue
    /// (`pfsqos_sim::device::DeviceModel::capacity_rpcs_per_s`, the simulator's `T_i`).
    Profile { name: String },
    /// Neither: the observed peak. Until a target has served RPCs its capacity is
    /// [`PEAK_INITIAL_RPCS_PER_S`] (Lustre's own rate for RPCs no rule matches, so no tighter
    /// than Lustre with no rules); then it is the highest rate it served in any one period
    /// since the start, times [`PEAK_HEADROOM`]. The headroom lets the estimate grow while
    /// rules hold jobs below the device (each period the total may exceed the last peak by a
    /// quarter); once the device is the bottleneck the peak stops growing, at its capacity.
    ObservedPeak,
}

/// The capacity of a target not yet seen serving (`CapacitySource::ObservedPeak`): TBF's
/// `default` rule rate (10,000 RPC/s, lustre-tbf.md).
pub const PEAK_INITIAL_RPCS_PER_S: u64 = 10_000;
/// The observed-peak estimator's headroom over the peak (5/4).
pub const PEAK_HEADROOM: f64 = 1.25;

/// The capacity of each OST, in RPCs/s of `brw_size_bytes`, given by `profile`.
pub fn profile_capacity_rpcs_per_s(profile: &pfsqos_profile::Profile, brw_size_bytes: u64) -> u64 {
    pfsqos_sim::device::DeviceModel::from_profile(profile).capacity_rpcs_per_s(brw_size_bytes)
}

/// A profile by a shipped name (`ssd-nvme`) or a file path.
pub fn load_profile(name_or_path: &str) -> anyhow::Result<pfsqos_profile::Profile> {
    if let Some(p) = pfsqos_profile::shipped(name_or_path) {
        return Ok(p);
    }
    let path = Path::new(name_or_path);
    let len = std::fs::metadata(path)
        .with_context(|| format!("ost_profile {name_or_path:?}: not a shipped profile or a file"))?
        .len();
    if len > pfsqos_profile::TEXT_LEN_MAX as u64 {
        bail!(
            "ost_profile {name_or_path:?}: larger than {} bytes",
            pfsqos_profile::TEXT_LEN_MAX
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("ost_profile {name_or_path:?}"))?;
    pfsqos_profile::Profile::from_toml_str(&text, name_or_path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The validated configuration.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    pub policy: PolicyChoice,
    pub period_ms: u64,
    pub ost_capacity_rpcs_per_s: u64,
    pub capacity_source: CapacitySource,
    pub brw_size_bytes: u64,
    pub cpts: u32,
    pub rule_prefix: String,
    pub rules_max: usize,
    pub lctl: PathBuf,
    pub lctl_timeout_ms: u64,
    pub lctl_retries: u32,
    pub lctl_backoff_ms: u64,
    pub metrics_listen: Option<SocketAddr>,
    /// Present: the rates come from a coordinator, the local controller's are not used.
    pub coordinator: Option<CoordinatorLink>,
    pub job_id_layout: JobIdLayout,
    pub job_nodes: Vec<(JobId, u32)>,
    /// Present: node counts (or priorities) of running jobs come from Slurm, over `job_nodes`.
    pub slurm: Option<SlurmLink>,
    pub limits: Vec<(LimitTarget, u64)>,
}

impl AgentConfig {
    pub fn load(path: &Path) -> anyhow::Result<AgentConfig> {
        let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
        if meta.len() > CONFIG_LEN_BYTES_MAX {
            bail!(
                "{} is larger than {CONFIG_LEN_BYTES_MAX} bytes",
                path.display()
            );
        }
        let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
        AgentConfig::parse(&text).with_context(|| format!("{}", path.display()))
    }

    /// Parses and validates a file's text. An error names the field (its dotted path,
    /// `jobs[0].nodes`), the value as written with its line and column, and what the field
    /// allows: a value of the wrong type (a string or a float where an integer goes) gets the
    /// integer field's range, never serde's Rust type.
    pub fn parse(text: &str) -> anyhow::Result<AgentConfig> {
        parse_file(text, AgentConfig::validate)
    }

    pub fn validate(f: ConfigFile) -> anyhow::Result<AgentConfig> {
        let policy = PolicyChoice::parse(&f.controller).map_err(|e| anyhow::anyhow!(e))?;
        if !decentralized_controllers().any(|n| n == policy.name()) {
            bail!(
                "controller `{}` cannot run in one agent (allowed: {}); GIFT and its \
                 baselines need the coordinator, vpfs an SFQ policy Lustre lacks, pi/aimd \
                 client-side limits (docs/lustre.md)",
                policy.name(),
                decentralized_controllers().collect::<Vec<_>>().join(", ")
            );
        }
        let period_ms = in_range("period_ms", f.period_ms, 1, PERIOD_MS_MAX)?;
        let brw_size_bytes = in_range(
            "brw_size_bytes",
            f.brw_size_bytes,
            BRW_SIZE_BYTES_MIN,
            BRW_SIZE_BYTES_MAX,
        )?;
        let cap_max = pfsqos_core::lustre::OST_CAPACITY_RPCS_PER_S_MAX;
        let (capacity, capacity_source) =
            match (f.ost_capacity_bytes_per_s, f.ost_capacity_rpcs_per_s) {
                (Some(_), Some(_)) => {
                    bail!("give ost_capacity_bytes_per_s or ost_capacity_rpcs_per_s, not both")
                }
                (Some(b), None) => {
                    // At least one full RPC a second, at most the rate a rule can carry.
                    let b = in_range(
                        "ost_capacity_bytes_per_s",
                        b,
                        brw_size_bytes,
                        cap_max.saturating_mul(brw_size_bytes),
                    )?;
                    (b / brw_size_bytes, CapacitySource::Typed)
                }
                (None, Some(r)) => (
                    in_range("ost_capacity_rpcs_per_s", r, 1, cap_max)?,
                    CapacitySource::Typed,
                ),
                (None, None) => match &f.ost_profile {
                    Some(name) => {
                        let p = load_profile(name)?;
                        (
                            profile_capacity_rpcs_per_s(&p, brw_size_bytes),
                            CapacitySource::Profile { name: p.name },
                        )
                    }
                    None => (PEAK_INITIAL_RPCS_PER_S, CapacitySource::ObservedPeak),
                },
            };
        if !(1..=cap_max).contains(&capacity) {
            bail!("OST capacity of {capacity} RPCs/s is outside 1..={cap_max}");
        }
        let cpts = in_range("cpts", f.cpts, 1, CPTS_MAX)?;
        if !rule_name_prefix_is_valid(&f.rule_prefix) {
            bail!(
                "rule_prefix must be 1..={RULE_NAME_PREFIX_LEN_MAX} characters of \
                 [A-Za-z0-9_], and not a start of `default`"
            );
        }
        let rules_max = in_range("rules_max", f.rules_max, 1, RULES_MAX_LIMIT)?;
        let lctl_text = f.lctl.to_string_lossy();
        if lctl_text.is_empty() || lctl_text.len() > 4096 || lctl_text.contains('\0') {
            bail!("lctl must be a program name or path");
        }
        let lctl_timeout_ms = in_range(
            "lctl_timeout_ms",
            f.lctl_timeout_ms,
            100,
            LCTL_TIMEOUT_MS_MAX,
        )?;
        let lctl_retries = in_range("lctl_retries", f.lctl_retries, 0, LCTL_RETRIES_MAX)?;
        let lctl_backoff_ms = in_range("lctl_backoff_ms", f.lctl_backoff_ms, 0, 60_000u64)?;
        let job_id_layout = JobIdLayout::parse(&f.job_id_layout).map_err(|e| anyhow::anyhow!(e))?;
        if f.jobs.len() > ENTRIES_MAX || f.limits.len() > ENTRIES_MAX {
            bail!("at most {ENTRIES_MAX} [[jobs]] and {ENTRIES_MAX} [[limits]]");
        }
        let mut seen = BTreeSet::new();
        let mut job_nodes = Vec::with_capacity(f.jobs.len());
        for j in &f.jobs {
            let id = JobId::new(&j.id).map_err(|e| anyhow::anyhow!("[[jobs]] id: {e}"))?;
            if id.is_empty() || !seen.insert(id) {
                bail!("[[jobs]] id {:?} is empty or given twice", j.id);
            }
            let nodes = in_range("nodes", j.nodes, 1, pfsqos_core::lustre::JOB_NODES_MAX)
                .with_context(|| format!("[[jobs]] {:?}", j.id))?;
            job_nodes.push((id, nodes));
        }
        let limits = validate_limits(&f.limits, &job_id_layout)?;
        let coordinator = match f.coordinator {
            None => None,
            Some(c) => {
                if !pfsqos_wire::coord::valid_agent_name(&c.agent_name) {
                    bail!("[coordinator] agent_name must be 1..=64 characters of [A-Za-z0-9._-]");
                }
                let safe_hold_ms = in_range("safe_hold_ms", c.safe_hold_ms, 1, SAFE_HOLD_MS_MAX)
                    .context("[coordinator]")?;
                Some(CoordinatorLink {
                    addr: c.addr,
                    key_file: c.key_file,
                    agent_name: c.agent_name,
                    safe_hold_ms,
                })
            }
        };
        let slurm = match f.slurm {
            None => None,
            Some(sl) => {
                let text = sl.squeue.to_string_lossy();
                if text.is_empty() || text.len() > 4096 || text.contains('\0') {
                    bail!("[slurm] squeue must be a program name or path");
                }
                let refresh_ms = in_range("refresh_ms", sl.refresh_ms, 100, SLURM_REFRESH_MS_MAX)
                    .context("[slurm]")?;
                let timeout_ms = in_range("timeout_ms", sl.timeout_ms, 100, SLURM_TIMEOUT_MS_MAX)
                    .context("[slurm]")?;
                let basis = match sl.basis.as_str() {
                    "nodes" => pfsqos_jobfacts::Basis::Nodes,
                    "priority" => pfsqos_jobfacts::Basis::Priority,
                    other => bail!(
                        "[slurm] basis = {:?} must be \"nodes\" or \"priority\"",
                        other.escape_debug().to_string()
                    ),
                };
                Some(SlurmLink {
                    squeue: sl.squeue,
                    refresh_ms,
                    timeout_ms,
                    basis,
                })
            }
        };
        Ok(AgentConfig {
            slurm,
            capacity_source,
            policy,
            period_ms,
            ost_capacity_rpcs_per_s: capacity,
            brw_size_bytes,
            cpts,
            rule_prefix: f.rule_prefix,
            rules_max,
            lctl: f.lctl,
            lctl_timeout_ms,
            lctl_retries,
            lctl_backoff_ms,
            metrics_listen: f.metrics_listen,
            coordinator,
            job_id_layout,
            job_nodes,
            limits,
        })
    }
}

/// An integer field outside its range: the field's name, the value and the range, which a
/// wrongly typed value's error borrows ([`wrong_type_message`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeError {
    pub field: &'static str,
    pub value: i64,
    /// `1..=256`.
    pub range: String,
}

impl std::fmt::Display for RangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} must be {}", self.field, self.value, self.range)
    }
}

impl std::error::Error for RangeError {}

/// `value` as a `T` when it lies in `lo..=hi`, else a [`RangeError`] naming `field`.
pub fn in_range<T>(field: &'static str, value: i64, lo: T, hi: T) -> anyhow::Result<T>
where
    T: TryFrom<i64> + PartialOrd + std::fmt::Display + Copy,
{
    match T::try_from(value) {
        Ok(v) if lo <= v && v <= hi => Ok(v),
        _ => Err(RangeError {
            field,
            value,
            range: format!("{lo}..={hi}"),
        }
        .into()),
    }
}

/// Parses a configuration file's text into `F` and validates it into `C`. A parse error names
/// the field (its dotted path, `jobs[0].nodes`), the value as written with its line and
/// column, and what the field allows: a value of the wrong type where an integer goes gets
/// the field's range from `validate` ([`wrong_type_message`]), never serde's Rust type.
pub(crate) fn parse_file<F, C>(
    text: &str,
    validate: impl Fn(F) -> anyhow::Result<C>,
) -> anyhow::Result<C>
where
    F: serde::de::DeserializeOwned,
{
    let file: F = pfsqos_tomlfile::parse(text, "").map_err(|e| {
        let mut m = String::new();
        if !e.field.is_empty() {
            m.push_str(&format!("field `{}`: ", e.field));
        }
        if let Some(v) = &e.value {
            // As written, but never a raw control byte in a log line.
            let v: String = v
                .chars()
                .flat_map(|c| {
                    let e: Vec<char> = if c.is_control() {
                        c.escape_default().collect()
                    } else {
                        vec![c]
                    };
                    e
                })
                .collect();
            m.push_str(&format!("value `{v}`: "));
        }
        let range = |field: &str| integer_range(text, field, |t| validate(toml::from_str(t)?));
        m.push_str(&wrong_type_message(&e.field, &e.message, range));
        anyhow::anyhow!(m)
    })?;
    validate(file)
}

/// The parser's message for a value of the wrong type where an integer goes (`invalid type:
/// string "eight", expected i64`) in the integer field's words: the kind of value and the
/// field's range (`range`). Other messages are returned as they are.
fn wrong_type_message(
    field: &str,
    message: &str,
    range: impl Fn(&str) -> Option<String>,
) -> String {
    let (what, at) = match message.rfind(" (line ") {
        Some(i) => message.split_at(i),
        None => (message, ""),
    };
    let Some((kind, _)) = what
        .strip_prefix("invalid type: ")
        .and_then(|m| m.split_once(", expected i64"))
    else {
        return message.to_string();
    };
    match range(field) {
        Some(range) => format!("{kind} where an integer goes: must be {range}{at}"),
        None => format!("{kind} where an integer goes{at}"),
    }
}

/// The range `check` gives the integer field at `field` (a dotted path, `jobs[0].nodes`) of
/// `text`, found by checking the text with `-1` there (out of every integer field's range),
/// if it can be had.
fn integer_range<C>(
    text: &str,
    field: &str,
    check: impl Fn(&str) -> anyhow::Result<C>,
) -> Option<String> {
    let probed = pfsqos_tomlfile::with_integer_probe(text, field)?;
    let leaf = field.rsplit('.').next()?;
    let leaf = &leaf[..leaf.find('[').unwrap_or(leaf.len())];
    let err = check(&probed).err()?;
    let range = err.downcast_ref::<RangeError>()?;
    (range.field == leaf).then(|| range.range.clone())
}

/// Validates `[[limits]]` entries (the agent's, per OSS, and the coordinator's, over the whole
/// file system): each names exactly one job, user or group, once, at 4096..=2^50 bytes/s; a
/// user or group limit needs its field in `layout`.
pub fn validate_limits(
    entries: &[LimitEntry],
    layout: &JobIdLayout,
) -> anyhow::Result<Vec<(LimitTarget, u64)>> {
    if entries.len() > ENTRIES_MAX {
        bail!("at most {ENTRIES_MAX} [[limits]]");
    }
    let mut targets = BTreeSet::new();
    let mut limits = Vec::with_capacity(entries.len());
    for l in entries {
        let target = match (&l.job, l.user, l.group) {
            (Some(job), None, None) => {
                let id = JobId::new(job).map_err(|e| anyhow::anyhow!("[[limits]] job: {e}"))?;
                if id.is_empty() {
                    bail!("[[limits]] job is empty");
                }
                LimitTarget::Job(id)
            }
            (None, Some(u), None) => {
                let u = in_range("user", u, 0, u32::MAX).context("[[limits]]")?;
                if layout.uid_from_end.is_none() {
                    bail!("a user limit needs %u in job_id_layout");
                }
                LimitTarget::User(u)
            }
            (None, None, Some(g)) => {
                let g = in_range("group", g, 0, u32::MAX).context("[[limits]]")?;
                if layout.gid_from_end.is_none() {
                    bail!("a group limit needs %g in job_id_layout");
                }
                LimitTarget::Group(g)
            }
            _ => bail!("each [[limits]] names exactly one of job, user, group"),
        };
        if !targets.insert(target) {
            bail!("[[limits]] {target} is given twice");
        }
        // At least one byte per second per CPT; at most what a rule can carry.
        let bytes_per_s = in_range("bytes_per_s", l.bytes_per_s, 4096, 1u64 << 50)
            .with_context(|| format!("[[limits]] {target}"))?;
        limits.push((target, bytes_per_s));
    }
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = "controller = \"static\"\nost_capacity_rpcs_per_s = 100\n";

    #[test]
    fn a_minimal_file_gets_the_defaults() {
        let c = AgentConfig::parse(MIN).unwrap();
        assert_eq!(c.policy.name(), "static");
        assert_eq!((c.period_ms, c.cpts, c.rules_max), (1000, 1, 512));
        assert_eq!(c.rule_prefix, "pfq");
        assert_eq!(c.job_id_layout.uid_from_end, Some(0));
    }

    /// A profile gives each OST's capacity (the device model's full-RPC write rate, per
    /// shipped profile and from a file); a typed capacity overrides it; neither: the peak.
    #[test]
    fn capacity_comes_from_a_profile_unless_typed() {
        for name in ["ssd-nvme", "hdd-7200rpm", "raid6-hdd-ost", "ssd-sata"] {
            let c = AgentConfig::parse(&format!(
                "controller = \"adaptbf\"\nost_profile = \"{name}\"\nbrw_size_bytes = 1048576\n"
            ))
            .unwrap();
            let p = pfsqos_profile::shipped(name).unwrap();
            let model = pfsqos_sim::device::DeviceModel::from_profile(&p);
            assert_eq!(
                c.ost_capacity_rpcs_per_s,
                model.capacity_rpcs_per_s(1 << 20),
                "{name}"
            );
            // The rate of full RPCs is the device's sequential write bandwidth at most.
            let bw = model.sequential_bytes_per_s(false, 1 << 20);
            assert!(
                c.ost_capacity_rpcs_per_s as f64 <= bw / (1u64 << 20) as f64 + 1.0,
                "{name}"
            );
            assert_eq!(
                c.capacity_source,
                CapacitySource::Profile {
                    name: p.name.clone()
                }
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, pfsqos_profile::shipped_text("ssd-sata").unwrap()).unwrap();
        let from_file = AgentConfig::parse(&format!(
            "controller = \"adaptbf\"\nost_profile = \"{}\"\n",
            file.display()
        ))
        .unwrap();
        let shipped =
            AgentConfig::parse("controller = \"adaptbf\"\nost_profile = \"ssd-sata\"\n").unwrap();
        assert_eq!(
            from_file.ost_capacity_rpcs_per_s,
            shipped.ost_capacity_rpcs_per_s
        );
        let typed = AgentConfig::parse(
            "controller = \"adaptbf\"\nost_profile = \"ssd-sata\"\nost_capacity_rpcs_per_s = 77\n",
        )
        .unwrap();
        assert_eq!(
            (typed.ost_capacity_rpcs_per_s, typed.capacity_source),
            (77, CapacitySource::Typed)
        );
        let e = AgentConfig::parse("controller = \"adaptbf\"\nost_profile = \"/no/such.toml\"\n")
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("not a shipped profile or a file"),
            "{e:#}"
        );
        let peak = AgentConfig::parse("controller = \"adaptbf\"\n").unwrap();
        assert_eq!(
            (peak.ost_capacity_rpcs_per_s, peak.capacity_source),
            (PEAK_INITIAL_RPCS_PER_S, CapacitySource::ObservedPeak)
        );
    }

    #[test]
    fn every_field_is_checked() {
        for (extra, why) in [
            ("bogus = 1\n", "unknown field"),
            ("cpts = 0\n", "cpts"),
            ("rule_prefix = \"de\"\n", "rule_prefix"),
            ("rule_prefix = \"a-b\"\n", "rule_prefix"),
            ("rules_max = 0\n", "rules_max"),
            ("lctl_timeout_ms = 1\n", "lctl_timeout_ms"),
            ("lctl_retries = 99\n", "lctl_retries"),
            ("period_ms = 0\n", "period_ms"),
            ("ost_capacity_bytes_per_s = 5\n", "not both"),
            (
                "[[limits]]\njob = \"a\"\nuser = 3\nbytes_per_s = 10000\n",
                "exactly one",
            ),
            ("[[limits]]\ngroup = 3\nbytes_per_s = 10000\n", "%g"),
            ("[[limits]]\njob = \"a\"\nbytes_per_s = 1\n", "bytes_per_s"),
            ("[[jobs]]\nid = \"a\"\nnodes = 0\n", "nodes"),
            // A negative count names the field's range, not u32's 0 to 4294967295.
            (
                "[[jobs]]\nid = \"a\"\nnodes = -1\n",
                "nodes = -1 must be 1..=1000000",
            ),
            // A string where an integer goes names the field and its range.
            (
                "lctl_retries = \"eight\"\n",
                "field `lctl_retries`: value `\"eight\"`: string \"eight\" where an integer \
                 goes: must be 0..=10 (line 3, column 16)",
            ),
            (
                "[slurm]\nbasis = \"qos\"\n",
                "must be \"nodes\" or \"priority\"",
            ),
            (
                "[slurm]\nrefresh_ms = -5\n",
                "refresh_ms = -5 must be 100..=3600000",
            ),
            (
                "[slurm]\ntimeout_ms = 0\n",
                "timeout_ms = 0 must be 100..=60000",
            ),
            ("[slurm]\nsqueue = \"\"\n", "program name or path"),
            (
                "[[jobs]]\nid = \"a\"\nnodes = 1\n[[jobs]]\nid = \"a\"\nnodes = 2\n",
                "twice",
            ),
        ] {
            let e = AgentConfig::parse(&format!("{MIN}{extra}")).unwrap_err();
            assert!(format!("{e:#}").contains(why), "{extra}: {e:#}");
        }
        let e =
            AgentConfig::parse("controller = \"gift\"\nost_capacity_rpcs_per_s = 1\n").unwrap_err();
        assert!(e.to_string().contains("coordinator"), "{e}");
    }

    /// Every integer field, given a value of the wrong type (a string, a float) or an integer
    /// out of its range (negative, beyond u32), names the field and the range the field
    /// allows: never the Rust type (`expected i64`, `expected u32`) nor a type's range
    /// (`0 to 4294967295`) where the field allows less.
    #[test]
    fn wrongly_typed_integers_name_the_field_and_its_range() {
        let coord = "[coordinator]\naddr = \"127.0.0.1:1\"\nagent_name = \"oss1\"\n";
        for (extra, field, range) in [
            ("cpts = \"eight\"\n", "cpts", "1..=256"),
            ("cpts = -1\n", "cpts", "1..=256"),
            ("cpts = 4294967296\n", "cpts", "1..=256"),
            ("rules_max = 1.5\n", "rules_max", "1..=16384"),
            ("period_ms = -1\n", "period_ms = -1", "1..="),
            (
                "lctl_timeout_ms = \"1s\"\n",
                "lctl_timeout_ms",
                "100..=600000",
            ),
            ("lctl_backoff_ms = -3\n", "lctl_backoff_ms", "0..=60000"),
            (
                "brw_size_bytes = \"4M\"\n",
                "brw_size_bytes",
                "4096..=67108864",
            ),
            (
                "[[jobs]]\nid = \"a\"\nnodes = \"eight\"\n",
                "jobs[0].nodes",
                "1..=1000000",
            ),
            (
                "[[jobs]]\nid = \"a\"\nnodes = -1\n",
                "nodes = -1",
                "1..=1000000",
            ),
            (
                "[[jobs]]\nid = \"a\"\nnodes = 4294967297\n",
                "nodes",
                "1..=1000000",
            ),
            (
                "[slurm]\nrefresh_ms = \"10s\"\n",
                "slurm.refresh_ms",
                "100..=3600000",
            ),
            (
                "[slurm]\ntimeout_ms = 2.5\n",
                "slurm.timeout_ms",
                "100..=60000",
            ),
            (
                "[[limits]]\njob = \"a\"\nbytes_per_s = \"1G\"\n",
                "limits[0].bytes_per_s",
                "4096..=1125899906842624",
            ),
            (
                "[[limits]]\nuser = -1\nbytes_per_s = 4096\n",
                "user = -1",
                "0..=4294967295",
            ),
        ] {
            let e = AgentConfig::parse(&format!("{MIN}{extra}")).unwrap_err();
            let m = format!("{e:#}");
            assert!(m.contains(field), "{extra}: {m}");
            assert!(m.contains(&format!("must be {range}")), "{extra}: {m}");
            for rust in ["i64", "u32", "u64", "usize"] {
                assert!(!m.contains(&format!("expected {rust}")), "{extra}: {m}");
            }
            if !extra.contains("user") {
                assert!(!m.contains("4294967295"), "{extra}: {m}");
            }
        }
        let e = AgentConfig::parse(&format!("{MIN}{coord}safe_hold_ms = \"30s\"\n")).unwrap_err();
        let m = format!("{e:#}");
        assert!(
            m.contains("coordinator.safe_hold_ms") && m.contains("must be 1..=3600000"),
            "{m}"
        );
        // In range, the signed fields give the same configuration as before.
        let c = AgentConfig::parse(&format!(
            "{MIN}cpts = 4\nlctl_retries = 0\n[[jobs]]\nid = \"a\"\nnodes = 7\n\
             [[limits]]\nuser = 0\nbytes_per_s = 4096\n"
        ))
        .unwrap();
        assert_eq!((c.cpts, c.lctl_retries, c.job_nodes[0].1), (4, 0, 7));
        assert_eq!(c.limits, [(LimitTarget::User(0), 4096)]);
    }

    #[test]
    fn uids_and_gids_come_from_the_end_of_the_job_id() {
        let l = JobIdLayout::parse("%e.%u.%g").unwrap();
        let j = JobId::new("my.app.1001.100").unwrap();
        assert_eq!((l.uid(&j), l.gid(&j)), (Some(1001), Some(100)));
        assert_eq!(l.uid(&JobId::new("x.y").unwrap()), None);
        assert!(JobIdLayout::parse("%u.%u").is_err());
    }
}
