//! `pfsqos mount`'s options, defined once: the binary parses them ([`clap::Args`]), they become a
//! [`MountConfig`] ([`MountArgs::into_config`]), and `pfsqos up` builds them from the cluster
//! file and renders them into the child's command line ([`MountArgs::to_args`]).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

use pfsqos_wire::key::{read_key_file, DEFAULT_KEY_FILE};

use crate::jobid::{JOBID_NAME_DEFAULT, JOBID_VAR_DEFAULT, JOBNODES_VAR_DEFAULT};
use crate::oss_pool::RECOVERY_DEFAULT;
use crate::{MountConfig, MAX_READ_AHEAD_MB_DEFAULT, MAX_RPCS_IN_FLIGHT_DEFAULT, THREADS_DEFAULT};

/// Default `--recovery-s`.
pub const RECOVERY_S_DEFAULT: u64 = RECOVERY_DEFAULT.as_secs();

/// The options of `pfsqos mount`.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct MountArgs {
    /// Directory to mount on.
    pub mountpoint: PathBuf,
    /// The MDS, HOST:PORT.
    #[arg(long)]
    pub mds: String,
    /// File holding the shared cluster key.
    #[arg(long, default_value = DEFAULT_KEY_FILE)]
    pub key_file: PathBuf,
    /// Environment variable holding the JobID (e.g. SLURM_JOB_ID); `disable` uses the
    /// --jobid-name pattern.
    #[arg(long, default_value = JOBID_VAR_DEFAULT)]
    pub jobid_var: String,
    /// JobID pattern: %e executable, %u uid, %g gid, %h short host, %H host, %p pid,
    /// %j the jobid_var value.
    #[arg(long, default_value = JOBID_NAME_DEFAULT)]
    pub jobid_name: String,
    /// Environment variable holding the job's node count (read like --jobid-var, sent with
    /// every RPC for the ossd's controller); `disable` sends none. A value that is not a
    /// number in 1..=1000000 is ignored (logged and counted).
    #[arg(long, default_value = JOBNODES_VAR_DEFAULT)]
    pub jobnodes_var: String,
    /// RPCs in flight per OST.
    #[arg(long, default_value_t = MAX_RPCS_IN_FLIGHT_DEFAULT)]
    pub max_rpcs_in_flight: usize,
    /// Largest RPC in bytes [default: 4194304]
    #[arg(long)]
    pub brw_size_bytes: Option<u64>,
    /// Bytes written but not yet acknowledged by the OSSs, in MiB [default: 64]
    #[arg(long)]
    pub max_dirty_mb: Option<u64>,
    /// Read-ahead in MiB: the client's window and budget (0: none), or with --page-cache
    /// the kernel's (0: its 128 KiB).
    #[arg(long, default_value_t = MAX_READ_AHEAD_MB_DEFAULT)]
    pub max_read_ahead_mb: u64,
    /// Cache file data in the kernel's page cache instead of direct I/O (the default: no
    /// client page cache, writes gathered into whole RPCs and read-ahead by the client).
    /// Needed by programs that map files shared (MAP_SHARED); pages cached here may be
    /// stale after another client's write until the file is opened again.
    #[arg(long)]
    pub page_cache: bool,
    /// FUSE session threads.
    #[arg(long, default_value_t = THREADS_DEFAULT)]
    pub threads: usize,
    /// Seconds a request waits for a restarting ossd or mds before failing with EIO.
    #[arg(long, default_value_t = RECOVERY_S_DEFAULT)]
    pub recovery_s: u64,
    /// Let other users use the mount (FUSE's allow_other). A user other than root needs
    /// `user_allow_other` in /etc/fuse.conf for it.
    #[arg(long)]
    pub allow_other: bool,
    /// Record iez's first-run trace (file,bytes_written,stripe_count,rank per created file)
    /// in this file.
    #[arg(long)]
    pub iez_trace: Option<PathBuf>,
    /// Most files the iez trace holds; later files are counted, not traced.
    #[arg(long, default_value_t = crate::iez_trace::TRACE_FILES_MAX_DEFAULT)]
    pub iez_trace_files_max: usize,
    /// Do not apply the outgoing limits the ossds state: for a node whose limit something
    /// else applies (`pfsqos tc-client` on its interface), so that the two do not both shape.
    #[arg(long)]
    pub ignore_server_limit: bool,
}

impl MountArgs {
    /// Options with this mount point and MDS and every other at its default.
    pub fn new(mountpoint: PathBuf, mds: String) -> MountArgs {
        MountArgs {
            mountpoint,
            mds,
            key_file: DEFAULT_KEY_FILE.into(),
            jobid_var: JOBID_VAR_DEFAULT.to_string(),
            jobid_name: JOBID_NAME_DEFAULT.to_string(),
            jobnodes_var: JOBNODES_VAR_DEFAULT.to_string(),
            max_rpcs_in_flight: MAX_RPCS_IN_FLIGHT_DEFAULT,
            brw_size_bytes: None,
            max_dirty_mb: None,
            max_read_ahead_mb: MAX_READ_AHEAD_MB_DEFAULT,
            page_cache: false,
            threads: THREADS_DEFAULT,
            recovery_s: RECOVERY_S_DEFAULT,
            allow_other: false,
            iez_trace: None,
            iez_trace_files_max: crate::iez_trace::TRACE_FILES_MAX_DEFAULT,
            ignore_server_limit: false,
        }
    }

    /// The command line (after `mount`) that parses back into `self`: the mount point, then
    /// `--mds`, `--key-file`, `--jobid-var`, `--jobid-name` and `--max-rpcs-in-flight` always,
    /// `--brw-size-bytes` and `--max-dirty-mb` when set, the flags when on, the others when they
    /// differ from their default.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a = vec![self.mountpoint.clone().into_os_string()];
        push(&mut a, "--mds", &self.mds);
        push(&mut a, "--key-file", &self.key_file);
        push(&mut a, "--jobid-var", &self.jobid_var);
        push(&mut a, "--jobid-name", &self.jobid_name);
        push(
            &mut a,
            "--max-rpcs-in-flight",
            self.max_rpcs_in_flight.to_string(),
        );
        if let Some(b) = self.brw_size_bytes {
            push(&mut a, "--brw-size-bytes", b.to_string());
        }
        if let Some(d) = self.max_dirty_mb {
            push(&mut a, "--max-dirty-mb", d.to_string());
        }
        if self.jobnodes_var != JOBNODES_VAR_DEFAULT {
            push(&mut a, "--jobnodes-var", &self.jobnodes_var);
        }
        if self.page_cache {
            a.push("--page-cache".into());
        }
        if self.allow_other {
            a.push("--allow-other".into());
        }
        if self.ignore_server_limit {
            a.push("--ignore-server-limit".into());
        }
        if let Some(t) = &self.iez_trace {
            push(&mut a, "--iez-trace", t);
        }
        for (name, value, default) in [
            (
                "--max-read-ahead-mb",
                self.max_read_ahead_mb,
                MAX_READ_AHEAD_MB_DEFAULT,
            ),
            ("--threads", self.threads as u64, THREADS_DEFAULT as u64),
            ("--recovery-s", self.recovery_s, RECOVERY_S_DEFAULT),
            (
                "--iez-trace-files-max",
                self.iez_trace_files_max as u64,
                crate::iez_trace::TRACE_FILES_MAX_DEFAULT as u64,
            ),
        ] {
            if value != default {
                push(&mut a, name, value.to_string());
            }
        }
        a
    }

    /// The client's configuration, checked; reads the key file. Errors are the user's (exit
    /// code 2).
    pub fn into_config(self) -> anyhow::Result<MountConfig> {
        let key = read_key_file(&self.key_file)?;
        let mut config = MountConfig::new(self.mountpoint, self.mds, key);
        config.jobid_var = self.jobid_var;
        config.jobid_name = self.jobid_name;
        config.jobnodes_var = self.jobnodes_var;
        config.max_rpcs_in_flight = self.max_rpcs_in_flight;
        config.brw_size_bytes = self.brw_size_bytes.unwrap_or(config.brw_size_bytes);
        config.max_dirty_mb = self.max_dirty_mb.unwrap_or(config.max_dirty_mb);
        config.max_read_ahead_mb = self.max_read_ahead_mb;
        config.direct_io = !self.page_cache;
        config.threads = self.threads;
        config.recovery = Duration::from_secs(self.recovery_s);
        config.allow_other = self.allow_other;
        config.iez_trace = self.iez_trace;
        config.iez_trace_files_max = self.iez_trace_files_max;
        config.ignore_server_limit = self.ignore_server_limit;
        config.validate()?;
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
        args: MountArgs,
    }

    fn parse(args: Vec<OsString>) -> MountArgs {
        let argv = std::iter::once(OsString::from("mount")).chain(args);
        Cli::try_parse_from(argv).unwrap().args
    }

    /// Every option set, none at its default: what `to_args` writes parses back to the same
    /// options, so an option cannot be left out of the rendering.
    #[test]
    fn every_option_round_trips() {
        let x = MountArgs {
            mountpoint: "/mnt/p q".into(),
            mds: "mds1:7989".into(),
            key_file: "/k/cluster.key".into(),
            jobid_var: "SLURM_JOB_ID".into(),
            jobid_name: "%j.%h".into(),
            jobnodes_var: "NODES".into(),
            max_rpcs_in_flight: 4,
            brw_size_bytes: Some(1 << 20),
            max_dirty_mb: Some(128),
            max_read_ahead_mb: 0,
            page_cache: true,
            threads: 2,
            recovery_s: 5,
            allow_other: true,
            iez_trace: Some("/t/iez trace.csv".into()),
            iez_trace_files_max: 10,
            ignore_server_limit: true,
        };
        assert_eq!(parse(x.to_args()), x);
        let minimal = MountArgs::new("/mnt/p".into(), "mds1:7989".into());
        assert_eq!(parse(minimal.to_args()), minimal);
    }
}
