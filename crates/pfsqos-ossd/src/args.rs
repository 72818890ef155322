//! `pfsqos ossd`'s options, defined once: the binary parses them ([`clap::Args`]), they become an
//! [`OssdConfig`] ([`OssdArgs::into_config`]), and `pfsqos up` builds them from the cluster file
//! and renders them into the child's command line ([`OssdArgs::to_args`]).

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use pfsqos_core::model::JobId;

use crate::control::{parse_job_nodes, ControlConfig};
use crate::ossd::{parse_lustre_version, DeviceSensor, OssdConfig};

/// Default `--threads`.
pub const THREADS_DEFAULT: usize = 8;
/// Default `--cpts`.
pub const CPTS_DEFAULT: usize = 1;
/// Default `--fsname`.
pub const FSNAME_DEFAULT: &str = "pfsqos";

/// The options of `pfsqos ossd`.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct OssdArgs {
    /// Address to listen on, e.g. 127.0.0.1:7988.
    #[arg(long)]
    pub listen: SocketAddr,
    /// OST directory; repeat for more OSTs (OST0000, OST0001, ... in order).
    #[arg(long = "ost", required = true)]
    pub osts: Vec<PathBuf>,
    /// File holding the shared cluster key (at least 16 bytes).
    #[arg(long)]
    pub key_file: PathBuf,
    /// File holding the servers' own key (at least 16 bytes, on servers and administrators'
    /// hosts only): peer ossds (DSFQ synchronization), the MDS and `lctl` must prove it, so a
    /// client's cluster key cannot claim to be one of them (`pfsqos keygen` writes one;
    /// `pfsqos up` generates it).
    #[arg(long)]
    pub server_key_file: PathBuf,
    /// I/O threads in total, split evenly over the CPU partitions (rounded down, at least one
    /// each, as Lustre does with `oss_num_threads`; a warning says when that is not N).
    #[arg(long, default_value_t = THREADS_DEFAULT)]
    pub threads: usize,
    /// CPU partitions (one NRS head each).
    #[arg(long, default_value_t = CPTS_DEFAULT)]
    pub cpts: usize,
    /// Per-OST device ceiling, so a fast disk stands in for a slower one.
    #[arg(long)]
    pub ceiling_bytes_per_s: Option<u64>,
    /// Write into the OSTs' page cache and leave writeback to the kernel, instead of
    /// writing whole aligned RPCs straight to the device (O_DIRECT) before answering.
    #[arg(long)]
    pub buffered_writes: bool,
    /// The Lustre version whose NRS interface to emulate (TBF rule forms, fields, rate
    /// limits, listing form), e.g. 2.15 or 2.17.57; default: master.
    #[arg(long)]
    pub lustre_version: Option<String>,
    /// File system name used in parameter names (`obdfilter.<fsname>-OST0000.job_stats`).
    #[arg(
        long,
        default_value = FSNAME_DEFAULT,
        help = "File system name used in parameter names (obdfilter.<fsname>-OST0000.job_stats)"
    )]
    pub fsname: String,
    /// Run a controller in the daemon (same specs as `sim --policy`, e.g. `adaptbf`,
    /// `static`, `adaptbf:period_ms=200`); it writes nrs_policies/nrs_tbf_rule as lctl does.
    #[arg(long)]
    pub policy: Option<String>,
    /// Control period for policies whose spec sets none [default: 100]
    #[arg(long, requires = "policy")]
    pub period_ms: Option<u64>,
    /// RPC capacity of each OST the controller shares out (default: the ceiling / brw size).
    #[arg(long, requires = "policy")]
    pub capacity_rpcs_per_s: Option<u64>,
    /// Size of a full RPC (one TBF token) for a capacity taken from the ceiling [default:
    /// 4194304]
    #[arg(long, requires = "policy")]
    pub brw_size_bytes: Option<u64>,
    /// Node count of a job, as JOB=N; repeat for more jobs. Other jobs count what their
    /// mounts report (SLURM_JOB_NUM_NODES), else one node; `lctl set_param
    /// ost.OSS.ost_io.job_nodes=JOB=N` sets or corrects counts at run time.
    #[arg(long = "job-nodes", value_parser = parse_job_nodes, requires = "policy")]
    pub job_nodes: Vec<(JobId, u32)>,
    /// Write each control period's client limit in force and device queue measured to this
    /// CSV file (`pfsqos pi identify --record FILE` fits it); created or truncated at start.
    #[arg(long, requires = "policy")]
    pub control_record: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// Another ossd of the cluster (HOST:PORT) to exchange DSFQ synchronization messages
    /// with; repeat for every other ossd.
    #[arg(long = "peer", value_parser = parse_peer)]
    pub peers: Vec<String>,
    /// Cluster-wide DSFQ instance number of this ossd's CPT 0 (CPT k is BASE + k): the sum
    /// of the CPT counts of the ossds before it.
    #[arg(long, default_value_t = 0)]
    pub sync_instance_base: u32,
    /// Where the control loop's device queue comes from: the ossd's own I/O threads, or the
    /// block device under each OST directory (`/sys/block/<dev>/stat`).
    #[arg(long, value_enum, default_value_t = DeviceSensor::Ossd)]
    pub device_sensor: DeviceSensor,
    /// Bulk bytes held in memory over all connections: writes whose data is arriving and
    /// replies not yet written [default: 1073741824]
    #[arg(long)]
    pub bulk_budget_bytes: Option<u64>,
    /// What one client (peer address; IPv6 by /64) may hold of the bulk budget, so that a
    /// stalled or hostile client cannot make every other client's writes wait [default: a
    /// quarter of the budget]
    #[arg(long)]
    pub bulk_share_per_client_bytes: Option<u64>,
    /// Close a connection whose write bulk makes no progress for this long [default: 5000]
    #[arg(long)]
    pub bulk_idle_timeout_ms: Option<u64>,
    /// Close a connection that takes none of a reply's bytes for this long (the peer is not
    /// reading) [default: 5000]
    #[arg(long)]
    pub reply_idle_timeout_ms: Option<u64>,
    #[command(flatten)]
    pub report: crate::report::ReportArgs,
}

fn parse_peer(text: &str) -> Result<String, String> {
    crate::sync::validate_peer_addr(text)?;
    Ok(text.to_string())
}

impl OssdArgs {
    /// Options with these required values and every other at its default.
    pub fn new(
        listen: SocketAddr,
        osts: Vec<PathBuf>,
        key_file: PathBuf,
        server_key_file: PathBuf,
    ) -> OssdArgs {
        OssdArgs {
            listen,
            osts,
            key_file,
            server_key_file,
            threads: THREADS_DEFAULT,
            cpts: CPTS_DEFAULT,
            ceiling_bytes_per_s: None,
            buffered_writes: false,
            lustre_version: None,
            fsname: FSNAME_DEFAULT.to_string(),
            policy: None,
            period_ms: None,
            capacity_rpcs_per_s: None,
            brw_size_bytes: None,
            job_nodes: Vec::new(),
            control_record: None,
            metrics_listen: None,
            peers: Vec::new(),
            sync_instance_base: 0,
            device_sensor: DeviceSensor::Ossd,
            bulk_budget_bytes: None,
            bulk_share_per_client_bytes: None,
            bulk_idle_timeout_ms: None,
            reply_idle_timeout_ms: None,
            report: Default::default(),
        }
    }

    /// The command line (after `ossd`) that parses back into `self`. The required options,
    /// `--fsname`, `--threads` and `--cpts` are always written; the others only when set.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a = Vec::new();
        push(&mut a, "--listen", self.listen.to_string());
        for d in &self.osts {
            push(&mut a, "--ost", d);
        }
        push(&mut a, "--key-file", &self.key_file);
        push(&mut a, "--server-key-file", &self.server_key_file);
        push(&mut a, "--fsname", &self.fsname);
        push(&mut a, "--threads", self.threads.to_string());
        push(&mut a, "--cpts", self.cpts.to_string());
        if let Some(b) = self.ceiling_bytes_per_s {
            push(&mut a, "--ceiling-bytes-per-s", b.to_string());
        }
        if let Some(m) = self.metrics_listen {
            push(&mut a, "--metrics-listen", m.to_string());
        }
        if let Some(p) = &self.policy {
            push(&mut a, "--policy", p);
        }
        if let Some(p) = self.period_ms {
            push(&mut a, "--period-ms", p.to_string());
        }
        if let Some(c) = self.capacity_rpcs_per_s {
            push(&mut a, "--capacity-rpcs-per-s", c.to_string());
        }
        if let Some(b) = self.brw_size_bytes {
            push(&mut a, "--brw-size-bytes", b.to_string());
        }
        for (job, n) in &self.job_nodes {
            push(&mut a, "--job-nodes", format!("{job}={n}"));
        }
        if let Some(p) = &self.control_record {
            push(&mut a, "--control-record", p);
        }
        if self.buffered_writes {
            a.push("--buffered-writes".into());
        }
        if let Some(v) = &self.lustre_version {
            push(&mut a, "--lustre-version", v);
        }
        for p in &self.peers {
            push(&mut a, "--peer", p);
        }
        if self.device_sensor != DeviceSensor::Ossd {
            push(&mut a, "--device-sensor", "block");
        }
        if self.sync_instance_base != 0 {
            push(
                &mut a,
                "--sync-instance-base",
                self.sync_instance_base.to_string(),
            );
        }
        for (name, value) in [
            ("--bulk-budget-bytes", self.bulk_budget_bytes),
            (
                "--bulk-share-per-client-bytes",
                self.bulk_share_per_client_bytes,
            ),
            ("--bulk-idle-timeout-ms", self.bulk_idle_timeout_ms),
            ("--reply-idle-timeout-ms", self.reply_idle_timeout_ms),
        ] {
            if let Some(v) = value {
                push(&mut a, name, v.to_string());
            }
        }
        a.extend(self.report.to_args());
        a
    }

    /// The daemon's configuration: reads the key file, parses the Lustre version and the
    /// controller spec. Errors are the user's (exit code 2).
    pub fn into_config(self) -> anyhow::Result<OssdConfig> {
        let key = pfsqos_wire::key::read_key_file(&self.key_file)?;
        let server_key = pfsqos_wire::key::read_server_key_file(&self.server_key_file, &key)?;
        let mut config = OssdConfig::new(self.listen, self.osts, key, server_key);
        config.threads = self.threads;
        config.cpts = self.cpts;
        config.ceiling_bytes_per_s = self.ceiling_bytes_per_s;
        config.buffered_writes = self.buffered_writes;
        if let Some(text) = self.lustre_version {
            config.lustre_version = parse_lustre_version(&text)
                .map_err(|e| anyhow!("--lustre-version {text:?}: {e}"))?;
        }
        config.fsname = self.fsname;
        config.metrics_listen = self.metrics_listen;
        config.device_sensor = self.device_sensor;
        if let Some(b) = self.bulk_budget_bytes {
            config.in_flight_bytes_max = b;
        }
        config.bulk_share_per_client_bytes = self.bulk_share_per_client_bytes;
        if let Some(ms) = self.bulk_idle_timeout_ms {
            config.bulk_idle_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.reply_idle_timeout_ms {
            config.reply_idle_timeout = Duration::from_millis(ms);
        }
        config.report = self.report.into_config()?;
        config.sync = crate::sync::SyncConfig {
            instance_base: self.sync_instance_base,
            peers: self.peers,
        };
        if let Some(spec) = self.policy {
            let mut control = ControlConfig::new(&spec).map_err(anyhow::Error::msg)?;
            control.period_ms = self.period_ms.unwrap_or(control.period_ms);
            control.capacity_rpcs_per_s = self.capacity_rpcs_per_s;
            control.brw_size_bytes = self.brw_size_bytes.unwrap_or(control.brw_size_bytes);
            control.job_nodes = self.job_nodes;
            control.record = self.control_record;
            config.control = Some(control);
        }
        Ok(config)
    }
}

fn push(a: &mut Vec<OsString>, name: &str, value: impl AsRef<OsStr>) {
    a.push(name.into());
    a.push(value.as_ref().to_os_string());
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: OssdArgs,
    }

    fn parse(args: &[OsString]) -> OssdArgs {
        let argv = std::iter::once(OsString::from("ossd")).chain(args.iter().cloned());
        Cli::try_parse_from(argv).unwrap().args
    }

    /// Every option set, none at its default: what `to_args` writes parses back to the same
    /// options, so an option cannot be left out of the rendering.
    #[test]
    fn every_option_round_trips() {
        let x = OssdArgs {
            listen: "10.0.0.1:7988".parse().unwrap(),
            osts: vec!["/d/a b".into(), "/d/c".into()],
            key_file: "/k/cluster.key".into(),
            server_key_file: "/k/server.key".into(),
            threads: 16,
            cpts: 2,
            ceiling_bytes_per_s: Some(8 << 20),
            buffered_writes: true,
            lustre_version: Some("2.15.0".into()),
            fsname: "lfs1".into(),
            policy: Some("adaptbf".into()),
            period_ms: Some(250),
            capacity_rpcs_per_s: Some(300),
            brw_size_bytes: Some(1 << 20),
            job_nodes: vec![
                (JobId::new("j.1").unwrap(), 3),
                (JobId::new("a=b").unwrap(), 2),
            ],
            control_record: Some("/var/tmp/pi record.csv".into()),
            metrics_listen: Some("127.0.0.1:9988".parse().unwrap()),
            peers: vec!["oss2:7988".into(), "[::1]:7990".into()],
            sync_instance_base: 3,
            device_sensor: DeviceSensor::Block,
            bulk_budget_bytes: Some(512 << 20),
            bulk_share_per_client_bytes: Some(64 << 20),
            bulk_idle_timeout_ms: Some(2500),
            reply_idle_timeout_ms: Some(7000),
            report: crate::report::ReportArgs {
                report_mds: Some("mds1:7989".into()),
                report_as: Some("oss1:7988".into()),
                report_period_ms: Some(500),
                ost_capacity_bytes: Some(10 << 30),
            },
        };
        assert_eq!(parse(&x.to_args()), x);
        let minimal = OssdArgs::new(
            x.listen,
            vec!["/d/a".into()],
            x.key_file.clone(),
            x.server_key_file.clone(),
        );
        assert_eq!(parse(&minimal.to_args()), minimal);
    }

    /// The bulk options reach the daemon's configuration; left out, the defaults hold.
    #[test]
    fn bulk_options_reach_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, [7u8; 32]).unwrap();
        let server_key = dir.path().join("server.key");
        std::fs::write(&server_key, [8u8; 32]).unwrap();
        let mut a = OssdArgs::new(
            "127.0.0.1:0".parse().unwrap(),
            vec!["/d".into()],
            key,
            server_key,
        );
        let c = a.clone().into_config().unwrap();
        assert_eq!(c.in_flight_bytes_max, crate::BULK_BUDGET_BYTES_DEFAULT);
        assert_eq!(c.bulk_share_bytes(), crate::BULK_BUDGET_BYTES_DEFAULT / 4);
        assert_eq!(c.bulk_idle_timeout, crate::BULK_IDLE_TIMEOUT);
        assert_eq!(c.reply_idle_timeout, crate::REPLY_IDLE_TIMEOUT);
        a.bulk_budget_bytes = Some(256 << 20);
        a.bulk_idle_timeout_ms = Some(1500);
        a.reply_idle_timeout_ms = Some(900);
        let c = a.clone().into_config().unwrap();
        assert_eq!(c.in_flight_bytes_max, 256 << 20);
        // The default share follows the budget.
        assert_eq!(c.bulk_share_bytes(), 64 << 20);
        assert_eq!(c.bulk_idle_timeout, Duration::from_millis(1500));
        assert_eq!(c.reply_idle_timeout, Duration::from_millis(900));
        a.bulk_share_per_client_bytes = Some(32 << 20);
        assert_eq!(a.into_config().unwrap().bulk_share_bytes(), 32 << 20);
    }
}
