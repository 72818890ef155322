//! The cluster file (`pfsqos up [CLUSTER.toml]`): one TOML file describes a whole live cluster,
//! the MDS, every OSS and the client mount, so the same file drives a single-host loopback
//! cluster and, with `up --only ROLE` on each host, a multi-host one.
//!
//! Every field is optional; without a file (or with an empty one) the cluster is the default
//! layout: an MDS on `127.0.0.1:7989`, one OSS on `127.0.0.1:7988` holding two OSTs
//! (`pfsqos-data/ost0`, `pfsqos-data/ost1`) and the mount at `pfsqos-mnt`. Relative paths are
//! relative to the file's directory (to the working directory when there is no file) and are
//! made absolute on load, so the daemons do not depend on where they were started from.
//!
//! Errors name the file, the field (`oss[1].listen`), the value as written and what is
//! allowed, in the scenario files' format.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pfsqos_core::control::spec::{PolicyChoice, PERIOD_MS_MAX};
use pfsqos_core::lustre::{self, STRIPE_SIZE_BYTES_MAX, STRIPE_SIZE_UNIT_BYTES};
use pfsqos_core::model::JobId;
use pfsqos_mount::{validate_nodes_var, validate_var, JOBNODES_VAR_DEFAULT};
use serde::Deserialize;

use pfsqos_core::sched::sfq::SYNC_INSTANCES_MAX;
use pfsqos_ossd::control::{ControlConfig, NODE_COUNT_MAX};
use pfsqos_ossd::sync::validate_peer_addr;
use pfsqos_ossd::{
    bulk_share_default_bytes, validate_bulk_limits, BULK_BUDGET_BYTES_DEFAULT,
    BULK_BUDGET_BYTES_MAX, IDLE_TIMEOUT_MAX,
};
use pfsqos_wire::protocol::{FSNAME_LEN_MAX, IO_LEN_BYTES_MAX, OST_COUNT_MAX};

/// The smallest bulk RPC: one page (the one table of limits).
const BRW_MIN: u64 = pfsqos_core::lustre::BRW_SIZE_BYTES_MIN;

/// Largest cluster file read.
pub const FILE_LEN_BYTES_MAX: u64 = 1 << 20;
/// Most OSSs in one cluster file.
pub const OSS_COUNT_MAX: usize = 1024;
/// Largest `ceiling_bytes_per_s` accepted (1 PiB/s: far above any device).
pub const CEILING_BYTES_PER_S_MAX: u64 = 1 << 50;
/// Default MDS address.
pub const MDS_LISTEN_DEFAULT: &str = "127.0.0.1:7989";
/// Default address of the (single, default) OSS.
pub const OSS_LISTEN_DEFAULT: &str = "127.0.0.1:7988";
/// `jobid_var` values with a meaning of their own to `pfsqos mount`; anything else names an
/// environment variable.
pub const JOBID_VAR_SPECIAL: [&str; 2] = ["disable", "procname_uid"];
/// The `%` codes of a `jobid_name` pattern (`pfsqos mount`'s, Lustre's).
pub const JOBID_NAME_CODES: &str = "eughHpj%";

/// A cluster file that cannot be used: the file, the field, the value and what is allowed
/// (the error of every TOML input file).
pub type ClusterError = pfsqos_tomlfile::FileError;

// ------------------------------------------------------------------ the file as written

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    cluster: ClusterSpec,
    #[serde(default)]
    mds: MdsSpec,
    oss: Option<Vec<OssSpec>>,
    #[serde(default)]
    mount: MountSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterSpec {
    fsname: Option<String>,
    state_dir: Option<PathBuf>,
    key_file: Option<PathBuf>,
    server_key_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MdsSpec {
    host: Option<String>,
    listen: Option<String>,
    db: Option<PathBuf>,
    metrics_listen: Option<String>,
    default_stripe_count: Option<i64>,
    default_stripe_size_bytes: Option<i64>,
    iez_stats_max_age_ms: Option<i64>,
    iez_report_period_ms: Option<i64>,
    placer: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OssSpec {
    host: Option<String>,
    listen: Option<String>,
    osts: Option<Vec<PathBuf>>,
    ceiling_bytes_per_s: Option<i64>,
    buffered_writes: Option<bool>,
    lustre_version: Option<String>,
    threads: Option<i64>,
    cpts: Option<i64>,
    policy: Option<String>,
    capacity_rpcs_per_s: Option<i64>,
    period_ms: Option<i64>,
    brw_size_bytes: Option<i64>,
    job_nodes: Option<BTreeMap<String, i64>>,
    metrics_listen: Option<String>,
    bulk_budget_bytes: Option<i64>,
    bulk_share_per_client_bytes: Option<i64>,
    bulk_idle_timeout_ms: Option<i64>,
    reply_idle_timeout_ms: Option<i64>,
    control_record: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MountSpec {
    enabled: Option<bool>,
    path: Option<PathBuf>,
    jobid_var: Option<String>,
    jobid_name: Option<String>,
    jobnodes_var: Option<String>,
    max_rpcs_in_flight: Option<i64>,
    brw_size_bytes: Option<i64>,
    max_dirty_mb: Option<i64>,
    page_cache: Option<bool>,
    allow_other: Option<bool>,
    iez_trace: Option<PathBuf>,
}

// ------------------------------------------------------------------ the resolved cluster

/// A loaded, validated cluster: every default filled in, every path absolute.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// The file it came from (`None`: the defaults).
    pub file: Option<PathBuf>,
    pub fsname: String,
    /// Pid files, logs and (by default) the key and the MDS database.
    pub state_dir: PathBuf,
    /// The shared cluster key; `up` generates it (mode 0600) when missing.
    pub key_file: PathBuf,
    /// The servers' own key (default: `server.key` next to the cluster key), which the
    /// server roles prove (`Oss`, `Mds`, `Lctl`: see `pfsqos_wire::conn::ServerKeys`) so a
    /// client node, which holds only the cluster key, cannot assume them; `up` generates it
    /// (mode 0600) with the cluster key. It goes to the OSS and MDS hosts and to
    /// administrators, never to a client node.
    pub server_key_file: PathBuf,
    pub mds: MdsRole,
    /// In OST order: global OST `i` is the `i`-th OST over this list.
    pub osses: Vec<OssRole>,
    pub mount: MountRole,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MdsRole {
    /// Host name or address other roles reach it at (default: the IP of `listen`).
    pub host: Option<String>,
    pub listen: SocketAddr,
    pub db: PathBuf,
    pub metrics_listen: Option<SocketAddr>,
    /// -1 (every OST) or 1..=OST count.
    pub default_stripe_count: i32,
    pub default_stripe_size_bytes: u64,
    /// iez: OSS statistics older than this make creates fall back to round robin
    /// (`mds --iez-stats-max-age-ms`).
    pub iez_stats_max_age_ms: u64,
    /// iez: every ossd reports its statistics to the MDS with this period
    /// (`ossd --report-mds --report-period-ms`); `None`: no reports, iez never places.
    pub iez_report_period_ms: Option<u64>,
    /// Placement policy of new files (`mds --placer`): `roundrobin`, `lustre` or `iez`, with
    /// options.
    pub placer: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OssRole {
    pub host: Option<String>,
    pub listen: SocketAddr,
    pub osts: Vec<PathBuf>,
    /// Per-OST pacing; `None` (written as 0 or left out): the device's own speed.
    pub ceiling_bytes_per_s: Option<u64>,
    /// Writes through the page cache (`ossd --buffered-writes`) instead of straight to the
    /// device.
    pub buffered_writes: bool,
    /// The Lustre version whose NRS interface the ossd emulates (`ossd --lustre-version`);
    /// `None`: master.
    pub lustre_version: Option<String>,
    pub threads: usize,
    pub cpts: usize,
    /// A controller spec run inside the ossd (`ossd --policy`).
    pub policy: Option<String>,
    pub capacity_rpcs_per_s: Option<u64>,
    pub period_ms: Option<u64>,
    pub brw_size_bytes: Option<u64>,
    pub job_nodes: Vec<(JobId, u32)>,
    pub metrics_listen: Option<SocketAddr>,
    /// `ossd --bulk-budget-bytes` etc.; `None`: the ossd's default.
    pub bulk_budget_bytes: Option<u64>,
    pub bulk_share_per_client_bytes: Option<u64>,
    pub bulk_idle_timeout_ms: Option<u64>,
    pub reply_idle_timeout_ms: Option<u64>,
    /// `ossd --control-record FILE`: each control period's limit and queue (PI's
    /// identification record); only with `policy`.
    pub control_record: Option<PathBuf>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MountRole {
    pub enabled: bool,
    pub path: PathBuf,
    pub jobid_var: String,
    pub jobid_name: String,
    /// The environment variable holding a job's node count (`mount --jobnodes-var`), or
    /// `disable`.
    pub jobnodes_var: String,
    pub max_rpcs_in_flight: u32,
    pub brw_size_bytes: Option<u64>,
    pub max_dirty_mb: Option<u64>,
    /// Files use the kernel's page cache instead of direct I/O (`mount --page-cache`).
    pub page_cache: bool,
    /// Other users may use the mount (`mount --allow-other`; a user other than root needs
    /// `user_allow_other` in /etc/fuse.conf).
    pub allow_other: bool,
    /// iez's first-run trace of files created through the mount (`mount --iez-trace`).
    pub iez_trace: Option<PathBuf>,
}

/// One role of the cluster, as `up --only` names it: `mds`, `oss:N`, `mount`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Mds,
    Oss(usize),
    Mount,
}

impl Role {
    /// The name of its pid and log files: `mds`, `oss0`, `mount`.
    pub fn file_stem(self) -> String {
        match self {
            Role::Mds => "mds".to_string(),
            Role::Oss(i) => format!("oss{i}"),
            Role::Mount => "mount".to_string(),
        }
    }

    /// The subcommand of the `pfsqos` binary that runs it.
    pub fn subcommand(self) -> &'static str {
        match self {
            Role::Mds => "mds",
            Role::Oss(_) => "ossd",
            Role::Mount => "mount",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Mds => write!(f, "mds"),
            Role::Oss(i) => write!(f, "oss:{i}"),
            Role::Mount => write!(f, "mount"),
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Role, String> {
        match s {
            "mds" => Ok(Role::Mds),
            "mount" => Ok(Role::Mount),
            _ => s
                .strip_prefix("oss:")
                .and_then(|n| n.parse().ok())
                .map(Role::Oss)
                .ok_or_else(|| format!("role `{s}`: expected mds, oss:N (N from 0) or mount")),
        }
    }
}

/// The address other hosts use for a daemon: `host:port` when a host is given, else the
/// listening address, with an unspecified IP (`0.0.0.0`, `::`) replaced by loopback.
pub fn reach_addr(host: Option<&str>, listen: SocketAddr) -> String {
    match host {
        Some(h) if h.contains(':') && !h.starts_with('[') => format!("[{h}]:{}", listen.port()),
        Some(h) => format!("{h}:{}", listen.port()),
        None if listen.ip().is_unspecified() => {
            let ip = if listen.is_ipv4() {
                "127.0.0.1"
            } else {
                "[::1]"
            };
            format!("{ip}:{}", listen.port())
        }
        None => listen.to_string(),
    }
}

impl Cluster {
    /// The roles `up` starts, in start order (OSSs, then the MDS, then the mount if enabled),
    /// or just `only`.
    pub fn roles(&self, only: Option<Role>) -> Result<Vec<Role>, String> {
        if let Some(r) = only {
            return match r {
                Role::Oss(i) if i >= self.osses.len() => Err(format!(
                    "role `{r}`: the cluster has {} OSS(s), oss:0..oss:{}",
                    self.osses.len(),
                    self.osses.len() - 1
                )),
                Role::Mount if !self.mount.enabled => {
                    Err("role `mount`: [mount] enabled = false in the cluster file".to_string())
                }
                r => Ok(vec![r]),
            };
        }
        let mut roles: Vec<Role> = (0..self.osses.len()).map(Role::Oss).collect();
        roles.push(Role::Mds);
        if self.mount.enabled {
            roles.push(Role::Mount);
        }
        Ok(roles)
    }

    /// Total OSTs over all OSSs.
    pub fn ost_count(&self) -> usize {
        self.osses.iter().map(|o| o.osts.len()).sum()
    }

    /// The defaults, relative to `base` (the working directory when there is no file).
    pub fn defaults(base: &Path) -> Cluster {
        resolve(FileSpec::default(), base, "<defaults>").expect("the defaults are valid")
    }

    /// Reads and validates a cluster file; relative paths are taken from its directory.
    pub fn load(path: &Path) -> Result<Cluster, ClusterError> {
        let file = path.display().to_string();
        let err = |message: String| ClusterError {
            file: file.clone(),
            field: String::new(),
            value: None,
            message,
        };
        let len = std::fs::metadata(path)
            .map_err(|e| err(format!("cannot read: {e}")))?
            .len();
        if len > FILE_LEN_BYTES_MAX {
            return Err(err(format!(
                "file is {len} bytes long; a cluster file may be at most {FILE_LEN_BYTES_MAX} bytes"
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let abs = std::path::absolute(path).map_err(|e| err(format!("cannot resolve: {e}")))?;
        let base = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut c = Cluster::from_toml_str(&text, &file, &base)?;
        c.file = Some(abs);
        Ok(c)
    }

    /// Parses and validates cluster file text; `file` names it in errors, relative paths are
    /// joined to `base`.
    pub fn from_toml_str(text: &str, file: &str, base: &Path) -> Result<Cluster, ClusterError> {
        let spec: FileSpec = pfsqos_tomlfile::parse(text, file).map_err(|mut e| {
            // A string (or other type) where an integer goes: name the field's range, found
            // by resolving the file with an out-of-range integer there, not the Rust type.
            let (what, at) = match e.message.rfind(" (line ") {
                Some(i) => e.message.split_at(i),
                None => (e.message.as_str(), ""),
            };
            if let Some((kind, _)) = what
                .strip_prefix("invalid type: ")
                .and_then(|m| m.split_once(", expected i64"))
            {
                let range = integer_range_message(text, &e.field, file, base);
                e.message = match range {
                    Some(range) => format!("{kind} where an integer goes: {range}{at}"),
                    None => format!("{kind} where an integer goes{at}"),
                };
            }
            e
        })?;
        resolve(spec, base, file)
    }
}

/// What the validation says of the integer field at `field` (a dotted path, `oss[0].threads`)
/// when it holds a negative integer (its range, as `must be 1..=1024`), or `None` when it
/// cannot be had.
fn integer_range_message(text: &str, field: &str, file: &str, base: &Path) -> Option<String> {
    let changed = pfsqos_tomlfile::with_integer_probe(text, field)?;
    match Cluster::from_toml_str(&changed, file, base) {
        Err(e) if e.field == field => Some(e.message),
        _ => None,
    }
}

// ------------------------------------------------------------------ validation

struct Ctx<'a> {
    file: &'a str,
    base: &'a Path,
}

impl Ctx<'_> {
    fn err(
        &self,
        field: &str,
        value: impl fmt::Display,
        message: impl Into<String>,
    ) -> ClusterError {
        ClusterError {
            file: self.file.to_string(),
            field: field.to_string(),
            value: Some(value.to_string()),
            message: message.into(),
        }
    }

    fn path(&self, field: &str, p: &Path) -> Result<PathBuf, ClusterError> {
        if p.as_os_str().is_empty() {
            return Err(self.err(field, "", "must be a non-empty path"));
        }
        Ok(if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        })
    }

    fn addr(&self, field: &str, text: &str) -> Result<SocketAddr, ClusterError> {
        text.parse().map_err(|_| {
            self.err(
                field,
                text,
                "expected IP:PORT, e.g. 127.0.0.1:7988, 0.0.0.0:7988 or [::1]:7988 (port 0: any free port)",
            )
        })
    }

    fn host(&self, field: &str, h: &Option<String>) -> Result<Option<String>, ClusterError> {
        match h {
            None => Ok(None),
            Some(h) if !h.is_empty()
                && h.len() <= 253
                && h.chars().all(|c| c.is_ascii_alphanumeric() || "-.:_".contains(c)) =>
            {
                Ok(Some(h.clone()))
            }
            Some(h) => Err(self.err(
                field,
                h,
                "expected a host name or IP address (1..=253 of letters, digits, `-`, `.`, `_`, `:`)",
            )),
        }
    }

    /// An integer field within `lo..=hi`. Integers are read signed (TOML's), so a negative
    /// value gets this message with the range, not the parser's "expected u64".
    fn range(&self, field: &str, v: i64, lo: u64, hi: u64) -> Result<u64, ClusterError> {
        match u64::try_from(v) {
            Ok(u) if (lo..=hi).contains(&u) => Ok(u),
            _ => Err(self.err(field, v, format!("must be {lo}..={hi}"))),
        }
    }
}

fn resolve(spec: FileSpec, base: &Path, file: &str) -> Result<Cluster, ClusterError> {
    let cx = Ctx { file, base };
    let fsname = spec.cluster.fsname.unwrap_or_else(|| "pfsqos".to_string());
    if fsname.is_empty()
        || fsname.len() > FSNAME_LEN_MAX
        || !fsname.chars().all(|c| c.is_ascii_alphanumeric())
    {
        return Err(cx.err(
            "cluster.fsname",
            &fsname,
            format!("must be 1..={FSNAME_LEN_MAX} ASCII letters or digits"),
        ));
    }
    let state_dir = cx.path(
        "cluster.state_dir",
        spec.cluster
            .state_dir
            .as_deref()
            .unwrap_or(Path::new("pfsqos-state")),
    )?;
    let key_file = match &spec.cluster.key_file {
        Some(p) => cx.path("cluster.key_file", p)?,
        None => state_dir.join("cluster.key"),
    };
    let server_key_file = match &spec.cluster.server_key_file {
        Some(p) => cx.path("cluster.server_key_file", p)?,
        None => key_file.with_file_name("server.key"),
    };
    if lexical(&server_key_file) == lexical(&key_file) {
        return Err(cx.err(
            "cluster.server_key_file",
            server_key_file.display(),
            "must differ from cluster.key_file (client nodes hold the cluster key)",
        ));
    }

    let oss_specs = spec.oss.unwrap_or_else(|| vec![OssSpec::default()]);
    if oss_specs.is_empty() || oss_specs.len() > OSS_COUNT_MAX {
        return Err(cx.err(
            "oss",
            format!("[{} entries]", oss_specs.len()),
            format!("a cluster needs 1..={OSS_COUNT_MAX} [[oss]] entries"),
        ));
    }
    let only_default_oss = oss_specs.len() == 1;
    let mut osses = Vec::with_capacity(oss_specs.len());
    for (i, o) in oss_specs.into_iter().enumerate() {
        osses.push(resolve_oss(&cx, i, o, only_default_oss)?);
    }
    let ost_total: u64 = osses.iter().map(|o| o.osts.len() as u64).sum();

    let m = spec.mds;
    let stripe_count = m.default_stripe_count.unwrap_or(1);
    if stripe_count != -1 && !(1..=ost_total as i64).contains(&stripe_count) {
        return Err(cx.err(
            "mds.default_stripe_count",
            stripe_count,
            format!("must be -1 (every OST) or 1..={ost_total} (the cluster's OST count)"),
        ));
    }
    let stripe_size_raw = m.default_stripe_size_bytes.unwrap_or(1 << 20);
    let stripe_size = u64::try_from(stripe_size_raw)
        .ok()
        .filter(|&s| {
            s > 0 && s.is_multiple_of(STRIPE_SIZE_UNIT_BYTES) && s <= STRIPE_SIZE_BYTES_MAX
        })
        .ok_or_else(|| {
            cx.err(
                "mds.default_stripe_size_bytes",
                stripe_size_raw,
                format!(
                    "must be a positive multiple of {STRIPE_SIZE_UNIT_BYTES} up to {STRIPE_SIZE_BYTES_MAX}"
                ),
            )
        })?;
    let placer = m
        .placer
        .unwrap_or_else(|| pfsqos_mds::PLACER_DEFAULT.to_string());
    pfsqos_core::place::placement_by_name(&placer, ost_total as u32)
        .map_err(|e| cx.err("mds.placer", &placer, e))?;
    let mds = MdsRole {
        placer,
        host: cx.host("mds.host", &m.host)?,
        listen: cx.addr(
            "mds.listen",
            m.listen.as_deref().unwrap_or(MDS_LISTEN_DEFAULT),
        )?,
        db: match &m.db {
            Some(p) => cx.path("mds.db", p)?,
            None => state_dir.join("mds.db"),
        },
        metrics_listen: m
            .metrics_listen
            .as_deref()
            .map(|a| cx.addr("mds.metrics_listen", a))
            .transpose()?,
        default_stripe_count: stripe_count as i32,
        default_stripe_size_bytes: stripe_size,
        iez_stats_max_age_ms: m
            .iez_stats_max_age_ms
            .map(|v| cx.range("mds.iez_stats_max_age_ms", v, 1, 1 << 40))
            .transpose()?
            .unwrap_or(pfsqos_mds::iez::STATS_MAX_AGE_DEFAULT_MS),
        iez_report_period_ms: m
            .iez_report_period_ms
            .map(|v| {
                cx.range(
                    "mds.iez_report_period_ms",
                    v,
                    pfsqos_ossd::report::REPORT_PERIOD_MIN_MS,
                    1 << 40,
                )
            })
            .transpose()?,
    };

    let mount = resolve_mount(&cx, spec.mount)?;
    let cluster = Cluster {
        file: None,
        fsname,
        state_dir,
        key_file,
        server_key_file,
        mds,
        osses,
        mount,
    };
    check_distinct(&cx, &cluster)?;
    check_cluster_wide(&cx, &cluster)?;
    check_paths(&cx, &cluster)?;
    Ok(cluster)
}

/// Limits the daemons check only when they start, checked over the whole file so `up` fails
/// before anything runs: the MDS's OST count over all OSSs, the DSFQ instance numbers every
/// CPT of every OSS takes, and the peer address each ossd is given for the others.
fn check_cluster_wide(cx: &Ctx, c: &Cluster) -> Result<(), ClusterError> {
    let ost_total: u64 = c.osses.iter().map(|o| o.osts.len() as u64).sum();
    if ost_total > u64::from(OST_COUNT_MAX) {
        return Err(cx.err(
            "oss",
            format!("[{ost_total} OSTs in all]"),
            format!(
                "a cluster has at most {OST_COUNT_MAX} OSTs over all its OSSs (the MDS's limit)"
            ),
        ));
    }
    let instances: u64 = c.osses.iter().map(|o| o.cpts as u64).sum();
    if instances > u64::from(SYNC_INSTANCES_MAX) {
        return Err(cx.err(
            "oss",
            format!("[{instances} CPTs in all]"),
            format!(
                "the CPTs of all OSSs together are at most {SYNC_INSTANCES_MAX} (each is one \
                 DSFQ synchronization instance)"
            ),
        ));
    }
    if c.osses.len() > 1 {
        // An OSS on port 0 (known only once it runs) is no one's peer.
        for (i, o) in c
            .osses
            .iter()
            .enumerate()
            .filter(|(_, o)| o.listen.port() != 0)
        {
            let addr = reach_addr(o.host.as_deref(), o.listen);
            validate_peer_addr(&addr).map_err(|e| {
                cx.err(
                    &format!("oss[{i}].host"),
                    &addr,
                    format!("the address other OSSs reach it at must be a valid peer: {e}"),
                )
            })?;
        }
    }
    Ok(())
}

/// `p` with `.` dropped and `..` applied to the components before it, without touching the
/// file system (the paths need not exist yet): `/d/./a/../ost0` is `/d/ost0`.
fn lexical(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `a` and `b` are the same directory, or one is inside the other.
fn nested(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Directories that must not overlap, compared after [`lexical`] (so two spellings of one
/// directory are one): two OSTs of one host (one would hold the other's objects), an OST and
/// the mount point (the mount would hide the OST from its ossd, or write into it through
/// FUSE), the state directory, the MDS database and the key inside an OST or under the mount
/// point, and the mount point over the state directory. The mount point, the state directory
/// and the key are on the host `up` runs on; OSTs and the database there when their role
/// names no host.
fn check_paths(cx: &Ctx, c: &Cluster) -> Result<(), ClusterError> {
    let mut osts: Vec<(Option<&str>, PathBuf, String)> = Vec::new();
    for (i, o) in c.osses.iter().enumerate() {
        for (k, d) in o.osts.iter().enumerate() {
            let d = lexical(d);
            let field = format!("oss[{i}].osts[{k}]");
            let host = o.host.as_deref();
            if let Some((_, _, other)) = osts.iter().find(|(h, p, _)| *h == host && nested(p, &d)) {
                return Err(cx.err(
                    &field,
                    d.display(),
                    format!("overlaps `{other}` on the same host (the same directory, or one inside the other)"),
                ));
            }
            osts.push((host, d, field));
        }
    }
    let state = lexical(&c.state_dir);
    let key = lexical(&c.key_file);
    let local_osts = || osts.iter().filter(|(h, _, _)| h.is_none());
    let mut inside_checks: Vec<(PathBuf, String)> = vec![
        (state.clone(), "cluster.state_dir".to_string()),
        (key.clone(), "cluster.key_file".to_string()),
        (
            lexical(&c.server_key_file),
            "cluster.server_key_file".to_string(),
        ),
    ];
    if c.mds.host.is_none() {
        inside_checks.push((lexical(&c.mds.db), "mds.db".to_string()));
    }
    for (p, field) in &inside_checks {
        if let Some((_, _, ost)) = local_osts().find(|(_, d, _)| p.starts_with(d)) {
            return Err(cx.err(
                field,
                p.display(),
                format!("is inside the OST directory `{ost}` (an OST holds only its objects)"),
            ));
        }
    }
    if c.mount.enabled {
        let mnt = lexical(&c.mount.path);
        if let Some((_, _, ost)) = local_osts().find(|(_, d, _)| nested(d, &mnt)) {
            return Err(cx.err(
                "mount.path",
                mnt.display(),
                format!("overlaps the OST directory `{ost}` (the same directory, or one inside the other)"),
            ));
        }
        if nested(&mnt, &state) {
            return Err(cx.err(
                "mount.path",
                mnt.display(),
                "overlaps cluster.state_dir (the mount would hide it, or it would be written through the mount)",
            ));
        }
        for (p, field) in &inside_checks {
            if p.starts_with(&mnt) {
                return Err(cx.err(
                    field,
                    p.display(),
                    "is under mount.path (it would be read and written through the file system it starts)",
                ));
            }
        }
    }
    Ok(())
}

fn resolve_oss(cx: &Ctx, i: usize, o: OssSpec, single: bool) -> Result<OssRole, ClusterError> {
    let f = |name: &str| format!("oss[{i}].{name}");
    let listen = match &o.listen {
        Some(a) => cx.addr(&f("listen"), a)?,
        None if single => cx.addr(&f("listen"), OSS_LISTEN_DEFAULT)?,
        None => {
            return Err(ClusterError {
                file: cx.file.to_string(),
                field: f("listen"),
                value: None,
                message: "required when the cluster has more than one [[oss]]".to_string(),
            })
        }
    };
    let default_osts = [
        PathBuf::from("pfsqos-data/ost0"),
        PathBuf::from("pfsqos-data/ost1"),
    ];
    let ost_paths: Vec<PathBuf> = match o.osts {
        Some(v) => v,
        None if single => default_osts.to_vec(),
        None => {
            return Err(ClusterError {
                file: cx.file.to_string(),
                field: f("osts"),
                value: None,
                message: "required when the cluster has more than one [[oss]]".to_string(),
            })
        }
    };
    if ost_paths.is_empty() || ost_paths.len() > OST_COUNT_MAX as usize {
        return Err(cx.err(
            &f("osts"),
            format!("[{} entries]", ost_paths.len()),
            format!("an OSS serves 1..={OST_COUNT_MAX} OST directories"),
        ));
    }
    let mut osts = Vec::with_capacity(ost_paths.len());
    for (k, p) in ost_paths.iter().enumerate() {
        osts.push(cx.path(&format!("oss[{i}].osts[{k}]"), p)?);
    }
    let cpts = cx.range(
        &f("cpts"),
        o.cpts.unwrap_or(1),
        1,
        u64::from(pfsqos_core::lustre::CPTS_MAX),
    )? as usize;
    // Absent: 8, or one per partition when there are more partitions.
    let threads_default = 8.max(cpts as i64);
    let threads = cx.range(&f("threads"), o.threads.unwrap_or(threads_default), 1, 1024)? as usize;
    if threads < cpts {
        return Err(cx.err(
            &f("threads"),
            threads,
            format!(
                "must be at least cpts ({cpts}): each CPU partition runs I/O threads of its own \
                 (give threads >= cpts, or fewer cpts)"
            ),
        ));
    }
    // 0 (like absent): no ceiling.
    let ceiling = o
        .ceiling_bytes_per_s
        .map(|c| cx.range(&f("ceiling_bytes_per_s"), c, 0, CEILING_BYTES_PER_S_MAX))
        .transpose()?
        .filter(|&c| c > 0);
    let capacity_rpcs_per_s = o
        .capacity_rpcs_per_s
        .map(|c| {
            cx.range(
                &f("capacity_rpcs_per_s"),
                c,
                1,
                pfsqos_ossd::control::CAPACITY_RPCS_PER_S_MAX,
            )
        })
        .transpose()?;
    let period_ms = o
        .period_ms
        .map(|p| cx.range(&f("period_ms"), p, 1, PERIOD_MS_MAX))
        .transpose()?;
    let brw_size_bytes = o
        .brw_size_bytes
        .map(|b| cx.range(&f("brw_size_bytes"), b, BRW_MIN, IO_LEN_BYTES_MAX))
        .transpose()?;
    let mut job_nodes = Vec::new();
    for (job, n) in o.job_nodes.iter().flatten() {
        let id = JobId::new(job)
            .map_err(|e| cx.err(&format!("oss[{i}].job_nodes.{job}"), job, e.to_string()))?;
        let n = cx.range(
            &format!("oss[{i}].job_nodes.{job}"),
            *n,
            1,
            NODE_COUNT_MAX as u64,
        )?;
        job_nodes.push((id, n as u32));
    }
    let bulk_budget_bytes = o
        .bulk_budget_bytes
        .map(|b| {
            cx.range(
                &f("bulk_budget_bytes"),
                b,
                IO_LEN_BYTES_MAX,
                BULK_BUDGET_BYTES_MAX,
            )
        })
        .transpose()?;
    let bulk_share_per_client_bytes = o
        .bulk_share_per_client_bytes
        .map(|b| {
            cx.range(
                &f("bulk_share_per_client_bytes"),
                b,
                IO_LEN_BYTES_MAX,
                BULK_BUDGET_BYTES_MAX,
            )
        })
        .transpose()?;
    let idle_ms_max = IDLE_TIMEOUT_MAX.as_millis() as u64;
    let bulk_idle_timeout_ms = o
        .bulk_idle_timeout_ms
        .map(|t| cx.range(&f("bulk_idle_timeout_ms"), t, 1, idle_ms_max))
        .transpose()?;
    let reply_idle_timeout_ms = o
        .reply_idle_timeout_ms
        .map(|t| cx.range(&f("reply_idle_timeout_ms"), t, 1, idle_ms_max))
        .transpose()?;
    // The ossd's own check over the settings together (a share larger than the budget).
    let budget = bulk_budget_bytes.unwrap_or(BULK_BUDGET_BYTES_DEFAULT);
    let share = bulk_share_per_client_bytes.unwrap_or_else(|| bulk_share_default_bytes(budget));
    let ms = |t: Option<u64>, default: Duration| t.map_or(default, Duration::from_millis);
    validate_bulk_limits(
        budget,
        share,
        ms(bulk_idle_timeout_ms, pfsqos_ossd::BULK_IDLE_TIMEOUT),
        ms(reply_idle_timeout_ms, pfsqos_ossd::REPLY_IDLE_TIMEOUT),
    )
    .map_err(|e| cx.err(&f("bulk_share_per_client_bytes"), share, e))?;
    match &o.policy {
        Some(spec) => {
            let policy = PolicyChoice::parse(spec).map_err(|e| cx.err(&f("policy"), spec, e))?;
            // The same checks `ossd --policy` makes, so `up` fails before spawning anything.
            let control = ControlConfig {
                policy,
                period_ms: period_ms.unwrap_or(pfsqos_ossd::control::PERIOD_MS_DEFAULT),
                capacity_rpcs_per_s,
                brw_size_bytes: brw_size_bytes
                    .unwrap_or(pfsqos_ossd::control::BRW_SIZE_BYTES_DEFAULT),
                job_nodes: job_nodes.clone(),
                seed: 0,
                factory: None,
                record: None,
            };
            control.capacity(ceiling).map_err(|e| {
                cx.err(
                    &f("policy"),
                    spec,
                    format!("{e} (fields capacity_rpcs_per_s, ceiling_bytes_per_s, period_ms, brw_size_bytes)"),
                )
            })?;
        }
        None => {
            for (name, set) in [
                ("capacity_rpcs_per_s", o.capacity_rpcs_per_s.is_some()),
                ("period_ms", o.period_ms.is_some()),
                ("brw_size_bytes", o.brw_size_bytes.is_some()),
                ("job_nodes", o.job_nodes.is_some()),
                ("control_record", o.control_record.is_some()),
            ] {
                if set {
                    return Err(ClusterError {
                        file: cx.file.to_string(),
                        field: f(name),
                        value: None,
                        message: "only meaningful with `policy` (a controller in the ossd)"
                            .to_string(),
                    });
                }
            }
        }
    }
    Ok(OssRole {
        host: cx.host(&f("host"), &o.host)?,
        listen,
        osts,
        ceiling_bytes_per_s: ceiling,
        buffered_writes: o.buffered_writes.unwrap_or(false),
        lustre_version: match o.lustre_version {
            Some(v) => match pfsqos_ossd::parse_lustre_version(&v) {
                Ok(parsed) => Some(parsed.to_string()),
                Err(e) => return Err(cx.err(&f("lustre_version"), &v, e)),
            },
            None => None,
        },
        threads,
        cpts,
        policy: o.policy,
        capacity_rpcs_per_s,
        period_ms,
        brw_size_bytes,
        job_nodes,
        metrics_listen: o
            .metrics_listen
            .as_deref()
            .map(|a| cx.addr(&f("metrics_listen"), a))
            .transpose()?,
        bulk_budget_bytes,
        bulk_share_per_client_bytes,
        bulk_idle_timeout_ms,
        reply_idle_timeout_ms,
        control_record: o
            .control_record
            .as_deref()
            .map(|p| cx.path(&f("control_record"), p))
            .transpose()?,
    })
}

fn resolve_mount(cx: &Ctx, m: MountSpec) -> Result<MountRole, ClusterError> {
    let jobid_var = m.jobid_var.unwrap_or_else(|| "disable".to_string());
    // The checks `pfsqos mount` applies (its own functions), so `up` fails before starting
    // anything.
    if validate_var(&jobid_var).is_err() {
        return Err(cx.err(
            "mount.jobid_var",
            &jobid_var,
            format!(
                "must be {} or an environment variable name (letters, digits, `_`; 1..=64 bytes)",
                JOBID_VAR_SPECIAL.join(", ")
            ),
        ));
    }
    let jobnodes_var = m
        .jobnodes_var
        .unwrap_or_else(|| JOBNODES_VAR_DEFAULT.to_string());
    if validate_nodes_var(&jobnodes_var).is_err() {
        return Err(cx.err(
            "mount.jobnodes_var",
            &jobnodes_var,
            "must be disable or an environment variable name (letters, digits, `_`; 1..=64 bytes)",
        ));
    }
    let jobid_name = m.jobid_name.unwrap_or_else(|| "%e.%u".to_string());
    let mut codes = jobid_name.split('%').skip(1);
    let mut bad_code = false;
    while let Some(after) = codes.next() {
        match after.chars().next() {
            // `%%` splits into an empty piece; the next piece is literal text.
            None => {
                if codes.next().is_none() {
                    bad_code = true; // a lone `%` at the end
                }
            }
            Some(c) => bad_code |= !JOBID_NAME_CODES.contains(c),
        }
    }
    if jobid_name.is_empty()
        || jobid_name.len() > 256
        || jobid_name.chars().any(|c| c.is_control())
        || bad_code
    {
        return Err(cx.err(
            "mount.jobid_name",
            &jobid_name,
            "must be 1..=256 bytes without control characters, with only the codes \
             %e %u %g %h %H %p %j %% (e.g. %e.%u, %j)",
        ));
    }
    let brw = match m.brw_size_bytes {
        Some(b)
            if !(BRW_MIN as i64..=IO_LEN_BYTES_MAX as i64).contains(&b)
                || b % BRW_MIN as i64 != 0 =>
        {
            return Err(cx.err(
                "mount.brw_size_bytes",
                b,
                format!("must be a multiple of {BRW_MIN} in {BRW_MIN}..={IO_LEN_BYTES_MAX}"),
            ))
        }
        b => b.map(|b| b as u64),
    };
    let max_dirty_mb = match m.max_dirty_mb {
        // At least one RPC must fit in the dirty budget (the mount's default brw is 4 MiB).
        Some(v)
            if !(1..=65536).contains(&v)
                || (v as u64) << 20 < brw.unwrap_or(lustre::BRW_SIZE_BYTES_DEFAULT) =>
        {
            return Err(cx.err(
                "mount.max_dirty_mb",
                v,
                "must be 1..=65536 and hold at least one RPC of brw_size_bytes (default 4 MiB)",
            ))
        }
        v => v.map(|v| v as u64),
    };
    Ok(MountRole {
        enabled: m.enabled.unwrap_or(true),
        path: cx.path(
            "mount.path",
            m.path.as_deref().unwrap_or(Path::new("pfsqos-mnt")),
        )?,
        jobid_var,
        jobid_name,
        jobnodes_var,
        max_rpcs_in_flight: cx.range(
            "mount.max_rpcs_in_flight",
            m.max_rpcs_in_flight
                .unwrap_or(i64::from(lustre::MAX_RPCS_IN_FLIGHT_DEFAULT)),
            1,
            u64::from(lustre::MAX_RPCS_IN_FLIGHT_MAX),
        )? as u32,
        brw_size_bytes: brw,
        max_dirty_mb,
        page_cache: m.page_cache.unwrap_or(false),
        allow_other: m.allow_other.unwrap_or(false),
        iez_trace: m
            .iez_trace
            .as_deref()
            .map(|p| cx.path("mount.iez_trace", p))
            .transpose()?,
    })
}

/// Two roles on the same host cannot listen on the same port, and two OSSs on the same host
/// cannot serve the same directory.
fn check_distinct(cx: &Ctx, c: &Cluster) -> Result<(), ClusterError> {
    let mut ports: BTreeMap<(Option<String>, u16), String> = BTreeMap::new();
    let mut claim = |host: Option<&str>, addr: Option<SocketAddr>, field: String| {
        let Some(addr) = addr.filter(|a| a.port() != 0) else {
            return Ok(());
        };
        match ports.insert((host.map(str::to_string), addr.port()), field.clone()) {
            Some(other) => Err(cx.err(
                &field,
                addr,
                format!(
                    "port {} is already taken by `{other}` on the same host",
                    addr.port()
                ),
            )),
            None => Ok(()),
        }
    };
    claim(
        c.mds.host.as_deref(),
        Some(c.mds.listen),
        "mds.listen".into(),
    )?;
    claim(
        c.mds.host.as_deref(),
        c.mds.metrics_listen,
        "mds.metrics_listen".into(),
    )?;
    for (i, o) in c.osses.iter().enumerate() {
        claim(
            o.host.as_deref(),
            Some(o.listen),
            format!("oss[{i}].listen"),
        )?;
        claim(
            o.host.as_deref(),
            o.metrics_listen,
            format!("oss[{i}].metrics_listen"),
        )?;
    }
    let mut dirs = BTreeSet::new();
    for (i, o) in c.osses.iter().enumerate() {
        for (k, d) in o.osts.iter().enumerate() {
            if !dirs.insert((o.host.as_deref(), d)) {
                return Err(cx.err(
                    &format!("oss[{i}].osts[{k}]"),
                    d.display(),
                    "this directory is already an OST of this host",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Cluster, String> {
        Cluster::from_toml_str(text, "c.toml", Path::new("/base")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_issue_layout() {
        let c = load("").unwrap();
        assert_eq!(c, Cluster::defaults(Path::new("/base")));
        assert_eq!(c.fsname, "pfsqos");
        assert_eq!(c.state_dir, Path::new("/base/pfsqos-state"));
        assert_eq!(c.key_file, Path::new("/base/pfsqos-state/cluster.key"));
        assert_eq!(
            c.server_key_file,
            Path::new("/base/pfsqos-state/server.key")
        );
        assert_eq!(c.mds.listen, "127.0.0.1:7989".parse().unwrap());
        assert_eq!(c.mds.db, Path::new("/base/pfsqos-state/mds.db"));
        assert_eq!(c.mds.default_stripe_count, 1);
        assert_eq!(c.mds.default_stripe_size_bytes, 1 << 20);
        assert_eq!(c.osses.len(), 1);
        let o = &c.osses[0];
        assert_eq!(o.listen, "127.0.0.1:7988".parse().unwrap());
        assert_eq!(
            o.osts,
            [
                PathBuf::from("/base/pfsqos-data/ost0"),
                PathBuf::from("/base/pfsqos-data/ost1")
            ]
        );
        assert_eq!((o.threads, o.cpts, o.ceiling_bytes_per_s), (8, 1, None));
        assert!(c.mount.enabled);
        assert_eq!(c.mount.path, Path::new("/base/pfsqos-mnt"));
        assert_eq!(c.mount.jobid_var, "disable");
        assert_eq!(c.mount.jobid_name, "%e.%u");
        assert_eq!(c.mount.jobnodes_var, "SLURM_JOB_NUM_NODES");
        assert_eq!(c.mount.max_rpcs_in_flight, 8);
        assert_eq!(
            c.roles(None).unwrap(),
            [Role::Oss(0), Role::Mds, Role::Mount]
        );
    }

    #[test]
    fn a_full_file_resolves() {
        let c = load(
            r#"
            [cluster]
            fsname = "lus1"
            state_dir = "/var/lib/pfsqos"
            key_file = "k"
            [mds]
            host = "mds1"
            listen = "0.0.0.0:7989"
            db = "meta/mds.db"
            metrics_listen = "0.0.0.0:9989"
            default_stripe_count = -1
            default_stripe_size_bytes = 4194304
            [[oss]]
            host = "oss1"
            listen = "0.0.0.0:7988"
            osts = ["/data/ost0"]
            ceiling_bytes_per_s = 0
            [[oss]]
            host = "oss2"
            listen = "0.0.0.0:7988"
            osts = ["/data/ost0", "/data/ost1"]
            ceiling_bytes_per_s = 100000000
            policy = "adaptbf"
            job_nodes = { "dd.1" = 2 }
            metrics_listen = "0.0.0.0:9988"
            bulk_budget_bytes = 536870912
            bulk_share_per_client_bytes = 67108864
            bulk_idle_timeout_ms = 2000
            reply_idle_timeout_ms = 8000
            [mount]
            enabled = false
            path = "/mnt/pfsqos"
            jobid_var = "SLURM_JOB_ID"
            jobnodes_var = "disable"
            max_rpcs_in_flight = 16
            "#,
        )
        .unwrap();
        assert_eq!(c.mount.jobnodes_var, "disable");
        assert_eq!(c.key_file, Path::new("/base/k"));
        assert_eq!(c.server_key_file, Path::new("/base/server.key"));
        assert_eq!(c.mds.db, Path::new("/base/meta/mds.db"));
        assert_eq!(c.ost_count(), 3);
        assert_eq!(c.osses[0].ceiling_bytes_per_s, None);
        assert_eq!(c.osses[1].job_nodes, [(JobId::new("dd.1").unwrap(), 2)]);
        let o = &c.osses[1];
        assert_eq!(
            (
                o.bulk_budget_bytes,
                o.bulk_share_per_client_bytes,
                o.bulk_idle_timeout_ms,
                o.reply_idle_timeout_ms
            ),
            (Some(512 << 20), Some(64 << 20), Some(2000), Some(8000))
        );
        assert_eq!(c.osses[0].bulk_budget_bytes, None);
        assert_eq!(
            c.roles(None).unwrap(),
            [Role::Oss(0), Role::Oss(1), Role::Mds]
        );
        assert_eq!(c.roles(Some(Role::Oss(1))).unwrap(), [Role::Oss(1)]);
        assert_eq!(
            reach_addr(c.osses[1].host.as_deref(), c.osses[1].listen),
            "oss2:7988"
        );
        assert_eq!(
            reach_addr(None, "0.0.0.0:7988".parse().unwrap()),
            "127.0.0.1:7988"
        );
        assert_eq!(
            reach_addr(Some("fe80::1"), "[::]:7".parse().unwrap()),
            "[fe80::1]:7"
        );
        assert!(c
            .roles(Some(Role::Mount))
            .unwrap_err()
            .contains("enabled = false"));
        assert!(c
            .roles(Some(Role::Oss(2)))
            .unwrap_err()
            .contains("oss:0..oss:1"));
    }

    #[test]
    fn jobid_names_take_the_mounts_codes() {
        for ok in ["%e.%u", "%j", "%%x", "job-%H-%p.%g", "%%"] {
            let c = load(&format!("[mount]\njobid_name = \"{ok}\"")).unwrap();
            assert_eq!(c.mount.jobid_name, ok);
        }
        for bad in ["%", "%%%", "x%y"] {
            assert!(
                load(&format!("[mount]\njobid_name = \"{bad}\"")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn roles_parse_and_print() {
        for r in [Role::Mds, Role::Oss(3), Role::Mount] {
            assert_eq!(r.to_string().parse::<Role>(), Ok(r));
        }
        assert_eq!(Role::Oss(3).file_stem(), "oss3");
        assert!("oss".parse::<Role>().unwrap_err().contains("mds, oss:N"));
        assert!("oss:x".parse::<Role>().is_err());
    }

    /// Every validation error, with the exact text a user sees.
    #[test]
    fn errors_name_file_field_value_and_what_is_allowed() {
        let cases: &[(&str, &str)] = &[
            (
                "[cluster]\nfsname = \"no-dash\"",
                "c.toml: field `cluster.fsname`: value `no-dash`: must be 1..=8 ASCII letters or digits",
            ),
            (
                "[cluster]\nstate_dir = \"\"",
                "c.toml: field `cluster.state_dir`: value ``: must be a non-empty path",
            ),
            (
                "[mds]\nlisten = \"localhost:7989\"",
                "c.toml: field `mds.listen`: value `localhost:7989`: expected IP:PORT, e.g. 127.0.0.1:7988, 0.0.0.0:7988 or [::1]:7988 (port 0: any free port)",
            ),
            (
                "[mds]\nmetrics_listen = \"9989\"",
                "c.toml: field `mds.metrics_listen`: value `9989`: expected IP:PORT, e.g. 127.0.0.1:7988, 0.0.0.0:7988 or [::1]:7988 (port 0: any free port)",
            ),
            (
                "[mds]\ndefault_stripe_count = 3",
                "c.toml: field `mds.default_stripe_count`: value `3`: must be -1 (every OST) or 1..=2 (the cluster's OST count)",
            ),
            (
                "[mds]\ndefault_stripe_size_bytes = 1000",
                "c.toml: field `mds.default_stripe_size_bytes`: value `1000`: must be a positive multiple of 65536 up to 4294901760",
            ),
            (
                "[mds]\nhost = \"a b\"",
                "c.toml: field `mds.host`: value `a b`: expected a host name or IP address (1..=253 of letters, digits, `-`, `.`, `_`, `:`)",
            ),
            ("oss = []", "c.toml: field `oss`: value `[0 entries]`: a cluster needs 1..=1024 [[oss]] entries"),
            (
                "[[oss]]\nosts = []",
                "c.toml: field `oss[0].osts`: value `[0 entries]`: an OSS serves 1..=65536 OST directories",
            ),
            (
                "[[oss]]\nosts = [\"\"]",
                "c.toml: field `oss[0].osts[0]`: value ``: must be a non-empty path",
            ),
            (
                "[[oss]]\nlisten = \"127.0.0.1:1\"\nosts = [\"a\"]\n[[oss]]\nosts = [\"b\"]",
                "c.toml: field `oss[1].listen`: required when the cluster has more than one [[oss]]",
            ),
            (
                "[[oss]]\nlisten = \"127.0.0.1:1\"\nosts = [\"a\"]\n[[oss]]\nlisten = \"127.0.0.1:2\"",
                "c.toml: field `oss[1].osts`: required when the cluster has more than one [[oss]]",
            ),
            ("[[oss]]\nthreads = 0", "c.toml: field `oss[0].threads`: value `0`: must be 1..=1024"),
            (
                "[[oss]]\nbulk_budget_bytes = 1000",
                "c.toml: field `oss[0].bulk_budget_bytes`: value `1000`: must be 67108864..=1099511627776",
            ),
            (
                "[[oss]]\nbulk_idle_timeout_ms = 0",
                "c.toml: field `oss[0].bulk_idle_timeout_ms`: value `0`: must be 1..=600000",
            ),
            (
                "[[oss]]\nreply_idle_timeout_ms = 600001",
                "c.toml: field `oss[0].reply_idle_timeout_ms`: value `600001`: must be 1..=600000",
            ),
            // Each in range, but the share is more than the budget: refused at load.
            (
                "[[oss]]\nbulk_budget_bytes = 134217728\nbulk_share_per_client_bytes = 268435456",
                "c.toml: field `oss[0].bulk_share_per_client_bytes`: value `268435456`: the bulk share per client must be between 67108864 bytes and the bulk budget (134217728 bytes)",
            ),
            // Negative integers name the range too ("expected u64" before).
            ("[[oss]]\nthreads = -3", "c.toml: field `oss[0].threads`: value `-3`: must be 1..=1024"),
            // A string where an integer goes names the field's range, not the Rust type.
            (
                "[[oss]]\nthreads = \"eight\"",
                "c.toml: field `oss[0].threads`: value `\"eight\"`: string \"eight\" where an integer goes: must be 1..=1024 (line 2, column 11)",
            ),
            (
                "[mount]\nmax_rpcs_in_flight = 1.5",
                "c.toml: field `mount.max_rpcs_in_flight`: value `1.5`: floating point `1.5` where an integer goes: must be 1..=256 (line 2, column 22)",
            ),
            (
                "[[oss]]\ncpts = 4\nthreads = 2",
                "c.toml: field `oss[0].threads`: value `2`: must be at least cpts (4): each CPU partition runs I/O threads of its own (give threads >= cpts, or fewer cpts)",
            ),
            (
                "[mds]\nplacer = \"qos\"",
                "c.toml: field `mds.placer`: value `qos`: unknown placement policy `qos` (allowed: roundrobin, lustre, iez, shortestqueue)",
            ),
            ("[mds]\ndefault_stripe_size_bytes = -65536", "c.toml: field `mds.default_stripe_size_bytes`: value `-65536`: must be a positive multiple of 65536 up to 4294901760"),
            ("[[oss]]\nceiling_bytes_per_s = -1", "c.toml: field `oss[0].ceiling_bytes_per_s`: value `-1`: must be 0..=1125899906842624"),
            (
                "[[oss]]\npolicy = \"static\"\ncapacity_rpcs_per_s = 10\nperiod_ms = -100",
                "c.toml: field `oss[0].period_ms`: value `-100`: must be 1..=3600000",
            ),
            ("[mount]\nmax_dirty_mb = -1", "c.toml: field `mount.max_dirty_mb`: value `-1`: must be 1..=65536 and hold at least one RPC of brw_size_bytes (default 4 MiB)"),
            ("[mount]\nbrw_size_bytes = -4096", "c.toml: field `mount.brw_size_bytes`: value `-4096`: must be a multiple of 4096 in 4096..=67108864"),
            ("[[oss]]\ncpts = 300", "c.toml: field `oss[0].cpts`: value `300`: must be 1..=256"),
            (
                "[[oss]]\nlustre_version = \"2.9\"",
                "c.toml: field `oss[0].lustre_version`: value `2.9`: emulated versions are 2.12.0 to 2.17.57 (master)",
            ),
            (
                "[[oss]]\npolicy = \"adaptbf\"",
                "c.toml: field `oss[0].policy`: value `adaptbf`: a controller needs the OSTs' capacity: give --capacity-rpcs-per-s or --ceiling-bytes-per-s (fields capacity_rpcs_per_s, ceiling_bytes_per_s, period_ms, brw_size_bytes)",
            ),
            (
                "[[oss]]\ncapacity_rpcs_per_s = 10",
                "c.toml: field `oss[0].capacity_rpcs_per_s`: only meaningful with `policy` (a controller in the ossd)",
            ),
            (
                "[[oss]]\ncontrol_record = \"pi.csv\"",
                "c.toml: field `oss[0].control_record`: only meaningful with `policy` (a controller in the ossd)",
            ),
            (
                "[[oss]]\npolicy = \"pi-openloop\"\ncapacity_rpcs_per_s = 10\ncontrol_record = \"\"",
                "c.toml: field `oss[0].control_record`: value ``: must be a non-empty path",
            ),
            (
                "[[oss]]\npolicy = \"static\"\ncapacity_rpcs_per_s = 10\njob_nodes = { \"j1\" = 0 }",
                "c.toml: field `oss[0].job_nodes.j1`: value `0`: must be 1..=1000000",
            ),
            (
                "[[oss]]\nlisten = \"127.0.0.1:7989\"",
                "c.toml: field `oss[0].listen`: value `127.0.0.1:7989`: port 7989 is already taken by `mds.listen` on the same host",
            ),
            (
                "[[oss]]\nlisten = \"127.0.0.1:1\"\nosts = [\"a\"]\n[[oss]]\nlisten = \"127.0.0.1:2\"\nosts = [\"/base/a\"]",
                "c.toml: field `oss[1].osts[0]`: value `/base/a`: this directory is already an OST of this host",
            ),
            (
                "[mount]\njobid_var = \"not valid\"",
                "c.toml: field `mount.jobid_var`: value `not valid`: must be disable, procname_uid or an environment variable name (letters, digits, `_`; 1..=64 bytes)",
            ),
            (
                "[mount]\njobnodes_var = \"procname_uid\"",
                "c.toml: field `mount.jobnodes_var`: value `procname_uid`: must be disable or an environment variable name (letters, digits, `_`; 1..=64 bytes)",
            ),
            (
                "[mount]\njobnodes_var = \"A-B\"",
                "c.toml: field `mount.jobnodes_var`: value `A-B`: must be disable or an environment variable name (letters, digits, `_`; 1..=64 bytes)",
            ),
            (
                "[mount]\njobid_name = \"a\\tb\"",
                "c.toml: field `mount.jobid_name`: value `a\tb`: must be 1..=256 bytes without control characters, with only the codes %e %u %g %h %H %p %j %% (e.g. %e.%u, %j)",
            ),
            (
                "[mount]\nmax_rpcs_in_flight = 0",
                "c.toml: field `mount.max_rpcs_in_flight`: value `0`: must be 1..=256",
            ),
            (
                "[mount]\nbrw_size_bytes = 5000",
                "c.toml: field `mount.brw_size_bytes`: value `5000`: must be a multiple of 4096 in 4096..=67108864",
            ),
            ("[mount]\nmax_dirty_mb = 0", "c.toml: field `mount.max_dirty_mb`: value `0`: must be 1..=65536 and hold at least one RPC of brw_size_bytes (default 4 MiB)"),
            ("[mount]\nmax_dirty_mb = 2", "c.toml: field `mount.max_dirty_mb`: value `2`: must be 1..=65536 and hold at least one RPC of brw_size_bytes (default 4 MiB)"),
            (
                "[mount]\njobid_name = \"%x\"",
                "c.toml: field `mount.jobid_name`: value `%x`: must be 1..=256 bytes without control characters, with only the codes %e %u %g %h %H %p %j %% (e.g. %e.%u, %j)",
            ),
            (
                "[mount]\njobid_name = \"a%\"",
                "c.toml: field `mount.jobid_name`: value `a%`: must be 1..=256 bytes without control characters, with only the codes %e %u %g %h %H %p %j %% (e.g. %e.%u, %j)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(load(text).unwrap_err(), *want, "for {text:?}");
        }
        // The allowed names are the controller registry's.
        assert_eq!(
            load("[[oss]]\npolicy = \"nonsense\"").unwrap_err(),
            format!(
                "c.toml: field `oss[0].policy`: value `nonsense`: unknown policy `nonsense` (allowed: {}; options as in `adaptbf:period_ms=200`)",
                pfsqos_core::control::spec::POLICY_NAMES.join(", ")
            )
        );
    }

    /// Files the daemons would refuse (or run wrongly with) only once started: refused at load.
    #[test]
    fn files_that_would_fail_at_run_time_are_refused_at_load() {
        let two_oss = |a: &str, b: &str| {
            format!(
                "[[oss]]\nlisten = \"127.0.0.1:1\"\nosts = [{a}]\n[[oss]]\nlisten = \"127.0.0.1:2\"\nosts = [{b}]"
            )
        };
        let many = |n: usize, from: usize| {
            (from..from + n)
                .map(|k| format!("\"o{k}\""))
                .collect::<Vec<_>>()
                .join(",")
        };
        let long_host = "h".repeat(253);
        let cases: Vec<(String, &str)> = vec![
            // The MDS takes at most OST_COUNT_MAX OSTs over all OSSs.
            (
                two_oss(&many(40_000, 0), &many(40_000, 40_000)),
                "field `oss`: value `[80000 OSTs in all]`: a cluster has at most 65536 OSTs",
            ),
            // Every CPT is one DSFQ instance: 257 OSSs of 256 CPTs are too many.
            (
                (0..257)
                    .map(|i| {
                        format!(
                            "[[oss]]\nlisten = \"127.0.0.1:{}\"\nosts = [\"d{i}\"]\ncpts = 256\n",
                            i + 1
                        )
                    })
                    .collect::<String>(),
                "field `oss`: value `[65792 CPTs in all]`: the CPTs of all OSSs together are at most 65536",
            ),
            // A host name of 253 bytes is a valid host, but `host:port` is past a peer's length.
            (
                format!(
                    "[[oss]]\nhost = \"{long_host}\"\nlisten = \"0.0.0.0:65000\"\nosts = [\"a\"]\n[[oss]]\nlisten = \"127.0.0.1:2\"\nosts = [\"b\"]"
                ),
                "field `oss[0].host`",
            ),
            // Two spellings of one directory, and one OST inside another.
            (
                two_oss("\"/d/ost0\"", "\"/d/x/../ost0\""),
                "field `oss[1].osts[0]`: value `/d/ost0`: overlaps `oss[0].osts[0]` on the same host",
            ),
            (
                "[[oss]]\nosts = [\"/d/ost0\", \"/d/ost0/sub\"]".to_string(),
                "field `oss[0].osts[1]`: value `/d/ost0/sub`: overlaps `oss[0].osts[0]`",
            ),
            // The mount point over an OST, the state directory inside an OST, the mount over
            // the state directory, the database under the mount point.
            (
                "[[oss]]\nosts = [\"/d/ost0\"]\n[mount]\npath = \"/d/ost0/./mnt\"".to_string(),
                "field `mount.path`: value `/d/ost0/mnt`: overlaps the OST directory `oss[0].osts[0]`",
            ),
            (
                "[cluster]\nstate_dir = \"/d/ost0/state\"\n[[oss]]\nosts = [\"/d/ost0\"]".to_string(),
                "field `cluster.state_dir`: value `/d/ost0/state`: is inside the OST directory `oss[0].osts[0]`",
            ),
            (
                "[cluster]\nkey_file = \"/k/a\"\nserver_key_file = \"/k/./a\"".to_string(),
                "field `cluster.server_key_file`: value `/k/./a`: must differ from cluster.key_file",
            ),
            (
                "[cluster]\nserver_key_file = \"/d/ost0/s.key\"\n[[oss]]\nosts = [\"/d/ost0\"]".to_string(),
                "field `cluster.server_key_file`: value `/d/ost0/s.key`: is inside the OST directory `oss[0].osts[0]`",
            ),
            (
                "[cluster]\nstate_dir = \"/m/state\"\n[mount]\npath = \"/m\"".to_string(),
                "field `mount.path`: value `/m`: overlaps cluster.state_dir",
            ),
            (
                "[mds]\ndb = \"/m/mds.db\"\n[mount]\npath = \"/m\"".to_string(),
                "field `mds.db`: value `/m/mds.db`: is under mount.path",
            ),
        ];
        for (text, want) in &cases {
            let got = load(text).expect_err(want);
            assert!(got.contains(want), "{got}\n  wanted: {want}");
        }
        // Legitimate layouts stay accepted: OSTs under the state directory, the same OST path
        // on two hosts, a disabled mount over anything.
        for ok in [
            "[cluster]\nstate_dir = \"/s\"\n[[oss]]\nosts = [\"/s/ost0\"]".to_string(),
            "[[oss]]\nhost = \"a\"\nlisten = \"0.0.0.0:1\"\nosts = [\"/d/ost0\"]\n[[oss]]\nhost = \"b\"\nlisten = \"0.0.0.0:1\"\nosts = [\"/d/ost0\"]".to_string(),
            "[[oss]]\nosts = [\"/d/ost0\"]\n[mount]\nenabled = false\npath = \"/d/ost0\"".to_string(),
        ] {
            load(&ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn unknown_fields_and_wrong_types_name_the_field_and_line() {
        let e = load("[mds]\nlisten = \"127.0.0.1:1\"\nport = 3").unwrap_err();
        assert!(
            e.starts_with(
                "c.toml: field `mds.port`: unknown field `port`; allowed: host, listen, db"
            ),
            "{e}"
        );
        assert!(e.ends_with("(line 3, column 1)"), "{e}");
        let e = load("[mount]\nenabled = \"yes\"").unwrap_err();
        assert!(
            e.starts_with(
                "c.toml: field `mount.enabled`: value `\"yes\"`: invalid type: string \"yes\", expected a boolean"
            ),
            "{e}"
        );
        let e = load("[[oss]]\nthreads = -1").unwrap_err();
        assert!(e.starts_with("c.toml: field `oss[0].threads`: "), "{e}");
        let e = load("[nope]").unwrap_err();
        assert!(
            e.contains("unknown field `nope`; allowed: cluster, mds, oss, mount"),
            "{e}"
        );
    }

    #[test]
    fn load_reads_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[cluster]\nstate_dir = \"st\"\n").unwrap();
        let c = Cluster::load(&path).unwrap();
        assert_eq!(c.state_dir, dir.path().join("st"));
        assert_eq!(c.file.as_deref(), Some(path.as_path()));
        let missing = dir.path().join("missing.toml");
        let e = Cluster::load(&missing).unwrap_err();
        assert_eq!(e.file, missing.display().to_string());
        assert!(e.message.starts_with("cannot read: "), "{e}");
    }
}
