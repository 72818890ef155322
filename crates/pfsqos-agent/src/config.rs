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
fn default_cpts() -> u32 {
    1
}
fn default_prefix() -> String {
    "pfq".to_string()
}
fn default_rules_max() -> usize {
    512
}
fn default_lctl() -> PathBuf {
    PathBuf::from("lctl")
}
fn default_timeout() -> u64 {
    10_000
}
fn default_retries() -> u32 {
    2
}
fn default_backoff() -> u64 {
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
    pub user: Option<u32>,
    pub group: Option<u32>,
    pub bytes_per_s: u64,
}

// Who a limit applies to and where uids and gids stand in job ids: the policy's types, in
// pfsqos-core's control layer with the rest of the byte-limit policy.
pub use pfsqos_core::control::byte_limits::{JobIdLayout, LimitTarget};

/// The file as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub controller: String,
    #[serde(default = "default_period_ms")]
    pub period_ms: u64,
    pub ost_capacity_bytes_per_s: Option<u64>,
    pub ost_capacity_rpcs_per_s: Option<u64>,
    pub ost_profile: Option<String>,
    #[serde(default = "default_brw")]
    pub brw_size_bytes: u64,
    #[serde(default = "default_cpts")]
    pub cpts: u32,
    #[serde(default = "default_prefix")]
    pub rule_prefix: String,
    #[serde(default = "default_rules_max")]
    pub rules_max: usize,
    #[serde(default = "default_lctl")]
    pub lctl: PathBuf,
    #[serde(default = "default_timeout")]
    pub lctl_timeout_ms: u64,
    #[serde(default = "default_retries")]
    pub lctl_retries: u32,
    #[serde(default = "default_backoff")]
    pub lctl_backoff_ms: u64,
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

fn default_safe_hold_ms() -> u64 {
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
    pub safe_hold_ms: u64,
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

    pub fn parse(text: &str) -> anyhow::Result<AgentConfig> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| {
            // serde names the Rust type ("expected i64"); a reader wants the kind of value.
            let m = e.to_string();
            let m = ["i64", "u64", "u32", "usize"].iter().fold(m, |m, t| {
                m.replace(&format!("expected {t}"), "expected an integer")
            });
            anyhow::anyhow!(m)
        })?;
        AgentConfig::validate(file)
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
        if !(1..=PERIOD_MS_MAX).contains(&f.period_ms) {
            bail!("period_ms must be 1..={PERIOD_MS_MAX}");
        }
        if !(BRW_SIZE_BYTES_MIN..=BRW_SIZE_BYTES_MAX).contains(&f.brw_size_bytes) {
            bail!("brw_size_bytes must be {BRW_SIZE_BYTES_MIN}..={BRW_SIZE_BYTES_MAX}");
        }
        let cap_max = pfsqos_core::lustre::OST_CAPACITY_RPCS_PER_S_MAX;
        let (capacity, capacity_source) =
            match (f.ost_capacity_bytes_per_s, f.ost_capacity_rpcs_per_s) {
                (Some(_), Some(_)) => {
                    bail!("give ost_capacity_bytes_per_s or ost_capacity_rpcs_per_s, not both")
                }
                (Some(b), None) => (b / f.brw_size_bytes, CapacitySource::Typed),
                (None, Some(r)) => (r, CapacitySource::Typed),
                (None, None) => match &f.ost_profile {
                    Some(name) => {
                        let p = load_profile(name)?;
                        (
                            profile_capacity_rpcs_per_s(&p, f.brw_size_bytes),
                            CapacitySource::Profile { name: p.name },
                        )
                    }
                    None => (PEAK_INITIAL_RPCS_PER_S, CapacitySource::ObservedPeak),
                },
            };
        if !(1..=cap_max).contains(&capacity) {
            bail!("OST capacity of {capacity} RPCs/s is outside 1..={cap_max}");
        }
        if !(1..=CPTS_MAX).contains(&f.cpts) {
            bail!("cpts must be 1..={CPTS_MAX}");
        }
        if !rule_name_prefix_is_valid(&f.rule_prefix) {
            bail!(
                "rule_prefix must be 1..={RULE_NAME_PREFIX_LEN_MAX} characters of \
                 [A-Za-z0-9_], and not a start of `default`"
            );
        }
        if !(1..=RULES_MAX_LIMIT).contains(&f.rules_max) {
            bail!("rules_max must be 1..={RULES_MAX_LIMIT}");
        }
        let lctl_text = f.lctl.to_string_lossy();
        if lctl_text.is_empty() || lctl_text.len() > 4096 || lctl_text.contains('\0') {
            bail!("lctl must be a program name or path");
        }
        if !(100..=LCTL_TIMEOUT_MS_MAX).contains(&f.lctl_timeout_ms) {
            bail!("lctl_timeout_ms must be 100..={LCTL_TIMEOUT_MS_MAX}");
        }
        if f.lctl_retries > LCTL_RETRIES_MAX {
            bail!("lctl_retries must be 0..={LCTL_RETRIES_MAX}");
        }
        if f.lctl_backoff_ms > 60_000 {
            bail!("lctl_backoff_ms must be 0..=60000");
        }
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
            let nodes_max = pfsqos_core::lustre::JOB_NODES_MAX;
            let nodes = match u32::try_from(j.nodes) {
                Ok(n) if (1..=nodes_max).contains(&n) => n,
                _ => bail!(
                    "[[jobs]] {:?}: nodes = {} must be 1..={nodes_max}",
                    j.id,
                    j.nodes
                ),
            };
            job_nodes.push((id, nodes));
        }
        let limits = validate_limits(&f.limits, &job_id_layout)?;
        let coordinator = match f.coordinator {
            None => None,
            Some(c) => {
                if !pfsqos_wire::coord::valid_agent_name(&c.agent_name) {
                    bail!("[coordinator] agent_name must be 1..=64 characters of [A-Za-z0-9._-]");
                }
                if !(1..=SAFE_HOLD_MS_MAX).contains(&c.safe_hold_ms) {
                    bail!("[coordinator] safe_hold_ms must be 1..={SAFE_HOLD_MS_MAX}");
                }
                Some(CoordinatorLink {
                    addr: c.addr,
                    key_file: c.key_file,
                    agent_name: c.agent_name,
                    safe_hold_ms: c.safe_hold_ms,
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
                let refresh_ms = u64::try_from(sl.refresh_ms)
                    .ok()
                    .filter(|r| (100..=SLURM_REFRESH_MS_MAX).contains(r))
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "[slurm] refresh_ms = {} must be 100..={SLURM_REFRESH_MS_MAX}",
                            sl.refresh_ms
                        )
                    })?;
                let timeout_ms = u64::try_from(sl.timeout_ms)
                    .ok()
                    .filter(|r| (100..=SLURM_TIMEOUT_MS_MAX).contains(r))
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "[slurm] timeout_ms = {} must be 100..={SLURM_TIMEOUT_MS_MAX}",
                            sl.timeout_ms
                        )
                    })?;
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
            period_ms: f.period_ms,
            ost_capacity_rpcs_per_s: capacity,
            brw_size_bytes: f.brw_size_bytes,
            cpts: f.cpts,
            rule_prefix: f.rule_prefix,
            rules_max: f.rules_max,
            lctl: f.lctl,
            lctl_timeout_ms: f.lctl_timeout_ms,
            lctl_retries: f.lctl_retries,
            lctl_backoff_ms: f.lctl_backoff_ms,
            metrics_listen: f.metrics_listen,
            coordinator,
            job_id_layout,
            job_nodes,
            limits,
        })
    }
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
                if layout.uid_from_end.is_none() {
                    bail!("a user limit needs %u in job_id_layout");
                }
                LimitTarget::User(u)
            }
            (None, None, Some(g)) => {
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
        if !(4096..=(1u64 << 50)).contains(&l.bytes_per_s) {
            bail!("[[limits]] {target}: bytes_per_s must be 4096..=2^50");
        }
        limits.push((target, l.bytes_per_s));
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
            // A string where an integer goes names the kind of value, not the Rust type.
            ("lctl_retries = \"eight\"\n", "expected an integer"),
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

    #[test]
    fn uids_and_gids_come_from_the_end_of_the_job_id() {
        let l = JobIdLayout::parse("%e.%u.%g").unwrap();
        let j = JobId::new("my.app.1001.100").unwrap();
        assert_eq!((l.uid(&j), l.gid(&j)), (Some(1001), Some(100)));
        assert_eq!(l.uid(&JobId::new("x.y").unwrap()), None);
        assert!(JobIdLayout::parse("%u.%u").is_err());
    }
}
