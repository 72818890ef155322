//! Statistics for iez (IPDPS'19, Section III-B1): every period the ossd measures its OSTs'
//! space and its host's CPU and memory utilization and sends them to the MDS
//! (`MdsOp::ReportOss`, over an authenticated pfsqos connection like every other).
//!
//! What is measured, honestly:
//! - Per OST, `total_bytes` and `avail_bytes`. With a capacity configured
//!   (`--ost-capacity-bytes`, the paper's 10 GB OSTs on a shared disk), total is the capacity
//!   and used is the apparent size of the OST's objects (at most [`OBJECTS_WALKED_MAX`] are
//!   summed; past that, or if the walk fails, the OST reports the disk's `statvfs`, logged
//!   once); avail is also capped by the disk's free space. Without one, both come from
//!   `statvfs` of the OST's directory (Lustre's `kbytestotal` / `kbytesavail`): OSTs sharing a
//!   disk then report the same numbers.
//! - CPU utilization: `/proc/loadavg`'s 1-minute load over the CPUs available to the process,
//!   capped at 1 (the paper reads `/proc/loadavg`); memory: `1 - MemAvailable / MemTotal` of
//!   `/proc/meminfo`. Either is sent as unmeasured (`None`) where /proc does not give it.
//! - Not sent: the ossd's queue and throughput (iez's algorithm reads space, CPU and memory).
//!
//! The report says how long before sending it was measured (`age_ms`), so the MDS dates it
//! by its own clock. A failed send is logged (once per failure streak) and retried at the next
//! period on a new connection; nothing waits on the MDS.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pfsqos_wire::client::MdsClient;
use pfsqos_wire::mds::{OssReport, OstSpace, UTIL_PPM_MAX};
use pfsqos_wire::protocol::Role;
use tracing::{info, warn};

/// Default report period: the paper's 60 s.
pub const REPORT_PERIOD_DEFAULT_MS: u64 = 60_000;
/// Shortest period accepted (tests use short ones; below this the walk would dominate).
pub const REPORT_PERIOD_MIN_MS: u64 = 10;
/// Most objects summed per OST per report.
pub const OBJECTS_WALKED_MAX: usize = 1_000_000;
/// The longest one send may take before it is abandoned until the next period.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how often to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportConfig {
    /// The MDS, `HOST:PORT` (resolved at each connection).
    pub mds: String,
    /// The name the MDS knows this ossd by (its `--oss HOST:PORT`); `None`: the address the
    /// ossd listens on.
    pub report_as: Option<String>,
    pub period: Duration,
    /// Each OST's capacity, if the OSTs share a disk (module doc).
    pub ost_capacity_bytes: Option<u64>,
}

/// Apparent bytes of an OST's objects, `None` past [`OBJECTS_WALKED_MAX`] or on an error.
fn objects_bytes(objects: &Path) -> Option<u64> {
    let mut total = 0u64;
    for (n, e) in std::fs::read_dir(objects).ok()?.enumerate() {
        if n >= OBJECTS_WALKED_MAX {
            return None;
        }
        let Ok(meta) = e.and_then(|e| e.metadata()) else {
            // An object removed during the walk holds nothing.
            continue;
        };
        total = total.saturating_add(meta.len());
    }
    Some(total)
}

/// `statvfs` of a directory: (total, available to unprivileged users) bytes.
fn statvfs(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path and `st` a zeroed struct statvfs the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return None;
    }
    let frsize = st.f_frsize as u64;
    Some((
        (st.f_blocks as u64).saturating_mul(frsize),
        (st.f_bavail as u64).saturating_mul(frsize),
    ))
}

/// One OST's space (module doc); `walk_failed` is set when the objects could not be summed.
fn ost_space(dir: &Path, capacity: Option<u64>, walk_failed: &mut bool) -> Option<OstSpace> {
    let (disk_total, disk_avail) = statvfs(dir)?;
    let space = match capacity {
        Some(cap) => match objects_bytes(&dir.join("objects")) {
            Some(used) => OstSpace {
                total_bytes: cap,
                avail_bytes: cap.saturating_sub(used).min(disk_avail),
            },
            None => {
                *walk_failed = true;
                OstSpace {
                    total_bytes: disk_total,
                    avail_bytes: disk_avail,
                }
            }
        },
        None => OstSpace {
            total_bytes: disk_total,
            avail_bytes: disk_avail,
        },
    };
    // The MDS refuses a zero total; a zero-sized disk cannot hold objects anyway.
    (space.total_bytes > 0 && space.avail_bytes <= space.total_bytes).then_some(space)
}

/// `/proc/loadavg`'s 1-minute load over `cpus`, capped at 1, in ppm.
pub fn cpu_util_ppm(loadavg: &str, cpus: usize) -> Option<u32> {
    let load: f64 = loadavg.split_whitespace().next()?.parse().ok()?;
    if !load.is_finite() || load < 0.0 || cpus == 0 {
        return None;
    }
    Some(((load / cpus as f64).min(1.0) * f64::from(UTIL_PPM_MAX)).round() as u32)
}

/// `1 - MemAvailable / MemTotal` of `/proc/meminfo`, in ppm.
pub fn mem_util_ppm(meminfo: &str) -> Option<u32> {
    use pfsqos_linux::procfs::kb_field_bytes;
    let total = kb_field_bytes(meminfo, "MemTotal:")?;
    let avail = kb_field_bytes(meminfo, "MemAvailable:")?.min(total);
    if total == 0 {
        return None;
    }
    Some((((total - avail) as f64 / total as f64) * f64::from(UTIL_PPM_MAX)).round() as u32)
}

/// Measures the report (blocking: directory walks and /proc reads).
pub fn measure(name: &str, osts: &[PathBuf], capacity: Option<u64>) -> Option<OssReport> {
    let started = Instant::now();
    let mut walk_failed = false;
    let spaces: Option<Vec<OstSpace>> = osts
        .iter()
        .map(|d| ost_space(d, capacity, &mut walk_failed))
        .collect();
    if walk_failed {
        warn!(
            "an OST holds more than {OBJECTS_WALKED_MAX} objects or could not be listed: it \
             reports its disk's statvfs instead of its capacity"
        );
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu =
        pfsqos_linux::procfs::read_capped("/proc/loadavg").and_then(|t| cpu_util_ppm(&t, cpus));
    let mem = pfsqos_linux::procfs::read_capped("/proc/meminfo").and_then(|t| mem_util_ppm(&t));
    Some(OssReport {
        oss: name.to_string(),
        age_ms: started.elapsed().as_millis() as u64,
        osts: spaces?,
        cpu_util_ppm: cpu,
        mem_util_ppm: mem,
    })
}

/// Starts the reporting task; the ossd aborts it at shutdown. It connects to the MDS as a
/// peer server ([`Role::Oss`]) proving `key`, the servers' key where the ossd has one, so a
/// client cannot forge an OSS's statistics.
pub fn spawn(
    config: ReportConfig,
    osts: Vec<PathBuf>,
    key: Vec<u8>,
    listen: SocketAddr,
) -> tokio::task::JoinHandle<()> {
    let name = config
        .report_as
        .clone()
        .unwrap_or_else(|| listen.to_string());
    info!(mds = %config.mds, report_as = %name.escape_debug(), period_ms = config.period.as_millis() as u64, "reporting statistics to the MDS");
    tokio::spawn(async move {
        let mut client: Option<MdsClient> = None;
        let mut failing = false;
        let mut tick = tokio::time::interval(config.period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (n, o, cap) = (name.clone(), osts.clone(), config.ost_capacity_bytes);
            let measured = tokio::task::spawn_blocking(move || {
                let at = Instant::now();
                measure(&n, &o, cap).map(|r| (r, at))
            })
            .await
            .ok()
            .flatten();
            let Some((mut report, at)) = measured else {
                warn!("OST space could not be measured (statvfs failed); no report this period");
                continue;
            };
            let sent = tokio::time::timeout(SEND_TIMEOUT, async {
                if client.as_ref().is_none_or(MdsClient::closed_by_peer) {
                    let addr = tokio::net::lookup_host(config.mds.as_str())
                        .await
                        .map_err(|e| e.to_string())?
                        .next()
                        .ok_or("resolves to no address")?;
                    client = Some(
                        MdsClient::connect_as(addr, &key, Role::Oss)
                            .await
                            .map_err(|e| e.to_string())?,
                    );
                }
                let c = client.as_mut().expect("connected above");
                report.age_ms = at.elapsed().as_millis() as u64;
                c.report_oss(report).await.map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_else(|_| Err("timed out".into()));
            match sent {
                Ok(()) => {
                    if failing {
                        info!(mds = %config.mds, "statistics reach the MDS again");
                    }
                    failing = false;
                }
                Err(e) => {
                    client = None;
                    if !failing {
                        warn!(mds = %config.mds, "statistics report failed (retried every period): {e}");
                    }
                    failing = true;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_parsing() {
        assert_eq!(cpu_util_ppm("0.50 0.4 0.3 1/100 42\n", 2), Some(250_000));
        assert_eq!(cpu_util_ppm("9.0 0 0", 2), Some(1_000_000));
        assert_eq!(cpu_util_ppm("nan 0 0", 2), None);
        assert_eq!(cpu_util_ppm("-1 0 0", 2), None);
        assert_eq!(cpu_util_ppm("", 2), None);
        let m = "MemTotal:       1000 kB\nMemFree: 10 kB\nMemAvailable:    250 kB\n";
        assert_eq!(mem_util_ppm(m), Some(750_000));
        assert_eq!(mem_util_ppm("MemTotal: 0 kB\nMemAvailable: 0 kB\n"), None);
        assert_eq!(mem_util_ppm("MemTotal: 10 kB\n"), None);
        // More available than total (a racy read) counts as idle, never above 1.
        assert_eq!(
            mem_util_ppm("MemTotal: 10 kB\nMemAvailable: 20 kB\n"),
            Some(0)
        );
    }

    #[test]
    fn a_capacity_counts_the_objects_bytes() {
        let d = tempfile::tempdir().unwrap();
        let ost = d.path().join("ost0");
        std::fs::create_dir_all(ost.join("objects")).unwrap();
        std::fs::write(ost.join("objects/0000000000000001"), vec![0u8; 3000]).unwrap();
        std::fs::write(ost.join("objects/0000000000000002"), vec![0u8; 1000]).unwrap();
        let r = measure("oss:1", std::slice::from_ref(&ost), Some(10_000)).unwrap();
        assert_eq!(r.osts[0].total_bytes, 10_000);
        assert_eq!(r.osts[0].avail_bytes, 6_000);
        assert_eq!(r.oss, "oss:1");
        // Without a capacity, the disk's numbers.
        let r = measure("oss:1", &[ost], None).unwrap();
        assert!(r.osts[0].total_bytes >= r.osts[0].avail_bytes);
        // A full OST reports 0 available.
        let ost = d.path().join("ost1");
        std::fs::create_dir_all(ost.join("objects")).unwrap();
        std::fs::write(ost.join("objects/1"), vec![0u8; 500]).unwrap();
        let r = measure("oss:1", &[ost], Some(400)).unwrap();
        assert_eq!(r.osts[0].avail_bytes, 0);
    }
}

/// `pfsqos ossd`'s reporting options (flattened into [`crate::OssdArgs`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, clap::Args)]
pub struct ReportArgs {
    /// Send iez's statistics (OST space, CPU and memory) to the MDS at HOST:PORT.
    #[arg(long)]
    pub report_mds: Option<String>,
    /// The name the MDS knows this ossd by (its `--oss HOST:PORT`); default: --listen.
    #[arg(long, requires = "report_mds")]
    pub report_as: Option<String>,
    /// Report period in ms (default 60000, the paper's).
    #[arg(long, requires = "report_mds")]
    pub report_period_ms: Option<u64>,
    /// Each OST's capacity in bytes, for OSTs sharing one disk: used = its objects' bytes.
    #[arg(long, requires = "report_mds")]
    pub ost_capacity_bytes: Option<u64>,
}

impl ReportArgs {
    /// The options as a command line (only those set).
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut a = Vec::new();
        let mut push = |n: &str, v: String| {
            a.push(n.into());
            a.push(v.into());
        };
        if let Some(m) = &self.report_mds {
            push("--report-mds", m.clone());
        }
        if let Some(r) = &self.report_as {
            push("--report-as", r.clone());
        }
        if let Some(p) = self.report_period_ms {
            push("--report-period-ms", p.to_string());
        }
        if let Some(c) = self.ost_capacity_bytes {
            push("--ost-capacity-bytes", c.to_string());
        }
        a
    }

    /// The reporting configuration, checked; `None` when no MDS is given.
    pub fn into_config(self) -> anyhow::Result<Option<ReportConfig>> {
        let Some(mds) = self.report_mds else {
            return Ok(None);
        };
        let port_ok = mds
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p != 0));
        if !port_ok || mds.len() > 255 || mds.chars().any(char::is_control) {
            anyhow::bail!("--report-mds {mds:?}: expected HOST:PORT");
        }
        let period_ms = self.report_period_ms.unwrap_or(REPORT_PERIOD_DEFAULT_MS);
        if period_ms < REPORT_PERIOD_MIN_MS {
            anyhow::bail!("--report-period-ms must be at least {REPORT_PERIOD_MIN_MS}");
        }
        if let Some(name) = &self.report_as {
            if name.is_empty()
                || name.len() > pfsqos_wire::mds::NAME_LEN_MAX
                || name.chars().any(char::is_control)
            {
                anyhow::bail!("--report-as must be 1..=255 bytes without control characters");
            }
        }
        if self.ost_capacity_bytes == Some(0) {
            anyhow::bail!("--ost-capacity-bytes must be positive");
        }
        Ok(Some(ReportConfig {
            mds,
            report_as: self.report_as,
            period: Duration::from_millis(period_ms),
            ost_capacity_bytes: self.ost_capacity_bytes,
        }))
    }
}
