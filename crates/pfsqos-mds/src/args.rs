//! `pfsqos mds`'s options, defined once: the binary parses them ([`clap::Args`]), they become an
//! [`MdsConfig`] ([`MdsArgs::into_config`]), and `pfsqos up` builds them from the cluster file
//! and renders them into the child's command line ([`MdsArgs::to_args`]).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::{MdsConfig, OssSpec};

/// Default `--stripe-count` (new files get one stripe).
pub const STRIPE_COUNT_DEFAULT: i32 = 1;
/// Default `--stripe-size` (1 MiB).
pub const STRIPE_SIZE_DEFAULT_BYTES: u64 = 1 << 20;
/// Default `--fsname`.
pub const FSNAME_DEFAULT: &str = "pfsqos";

/// The options of `pfsqos mds`.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct MdsArgs {
    /// Address to listen on, e.g. 127.0.0.1:7989.
    #[arg(long)]
    pub listen: SocketAddr,
    /// Database file (created if missing; WAL files live next to it).
    #[arg(long)]
    pub db: PathBuf,
    /// File holding the shared cluster key (at least 16 bytes).
    #[arg(long)]
    pub key_file: PathBuf,
    /// File holding the servers' own key (at least 16 bytes, on servers only): ossds
    /// reporting statistics prove it, and the MDS proves it to the ossds, so a client's
    /// cluster key can do neither (`pfsqos keygen` writes one; `pfsqos up` generates it).
    #[arg(long)]
    pub server_key_file: PathBuf,
    /// An ossd and its OST count, HOST:PORT:OSTCOUNT; repeat in OST order.
    #[arg(long = "oss", required = true)]
    pub osses: Vec<OssSpec>,
    /// Default stripe count of new files (-1: every OST).
    #[arg(long, default_value_t = STRIPE_COUNT_DEFAULT, allow_negative_numbers = true)]
    pub stripe_count: i32,
    /// Default stripe size of new files (a multiple of 64 KiB).
    #[arg(long, default_value_t = STRIPE_SIZE_DEFAULT_BYTES)]
    pub stripe_size: u64,
    /// File system name.
    #[arg(long, default_value = FSNAME_DEFAULT)]
    pub fsname: String,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// iez: an OSS's statistics older than this (ms) make creates with a prediction fall back
    /// to round robin.
    #[arg(long, default_value_t = crate::iez::STATS_MAX_AGE_DEFAULT_MS)]
    pub iez_stats_max_age_ms: u64,
    /// Placement policy of new files, NAME[:KEY=VALUE]...: `roundrobin`, `lustre` (Lustre's
    /// allocator) or `iez` (the interaction database's plans, Lustre's allocator otherwise).
    #[arg(long, default_value = crate::PLACER_DEFAULT, value_parser = parse_placer)]
    pub placer: String,
}

/// A placer spec the registry builds (checked on one OST: the options do not depend on the
/// OST count, which the MDS checks again at start).
pub fn parse_placer(spec: &str) -> Result<String, String> {
    pfsqos_core::place::placement_by_name(spec, 1)?;
    Ok(spec.to_string())
}

/// `HOST:PORT:OSTCOUNT`, as `--oss` takes it.
impl fmt::Display for OssSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.addr, self.ost_count)
    }
}

impl MdsArgs {
    /// The command line (after `mds`) that parses back into `self`; every option is written
    /// but `--metrics-listen` when it is not set, and `--iez-stats-max-age-ms` and `--placer`
    /// at their defaults.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a = Vec::new();
        push(&mut a, "--listen", self.listen.to_string());
        push(&mut a, "--db", &self.db);
        push(&mut a, "--key-file", &self.key_file);
        push(&mut a, "--server-key-file", &self.server_key_file);
        push(&mut a, "--fsname", &self.fsname);
        for o in &self.osses {
            push(&mut a, "--oss", o.to_string());
        }
        push(&mut a, "--stripe-count", self.stripe_count.to_string());
        push(&mut a, "--stripe-size", self.stripe_size.to_string());
        if let Some(m) = self.metrics_listen {
            push(&mut a, "--metrics-listen", m.to_string());
        }
        if self.placer != crate::PLACER_DEFAULT {
            push(&mut a, "--placer", &self.placer);
        }
        if self.iez_stats_max_age_ms != crate::iez::STATS_MAX_AGE_DEFAULT_MS {
            push(
                &mut a,
                "--iez-stats-max-age-ms",
                self.iez_stats_max_age_ms.to_string(),
            );
        }
        a
    }

    /// The server's configuration; reads the key file (an error is the user's, exit code 2).
    pub fn into_config(self) -> anyhow::Result<MdsConfig> {
        let key = pfsqos_wire::key::read_key_file(&self.key_file)?;
        let server_key = pfsqos_wire::key::read_server_key_file(&self.server_key_file, &key)?;
        let mut config = MdsConfig::new(self.listen, self.db, key, server_key, self.osses);
        config.namespace.fsname = self.fsname;
        config.namespace.default_stripe.stripe_count = self.stripe_count;
        config.namespace.default_stripe.stripe_size_bytes = self.stripe_size;
        config.metrics_listen = self.metrics_listen;
        config.iez_stats_max_age_ms = self.iez_stats_max_age_ms;
        config.namespace.placer = self.placer;
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
        args: MdsArgs,
    }

    /// Every option set, none at its default: what `to_args` writes parses back to the same
    /// options, so an option cannot be left out of the rendering.
    #[test]
    fn every_option_round_trips() {
        let x = MdsArgs {
            listen: "10.0.0.2:7989".parse().unwrap(),
            db: "/s/mds db".into(),
            key_file: "/k/cluster.key".into(),
            server_key_file: "/k/server.key".into(),
            osses: vec![
                "oss1:7988:2".parse().unwrap(),
                "[::1]:7990:1".parse().unwrap(),
            ],
            stripe_count: -1,
            stripe_size: 4 << 20,
            fsname: "lfs1".into(),
            metrics_listen: Some("127.0.0.1:9989".parse().unwrap()),
            iez_stats_max_age_ms: 5_000,
            placer: "lustre:qos_prio_free=50".into(),
        };
        let argv = std::iter::once(OsString::from("mds")).chain(x.to_args());
        assert_eq!(Cli::try_parse_from(argv).unwrap().args, x);
    }

    /// An unknown placer is refused at parse time with the names there are.
    #[test]
    fn an_unknown_placer_is_refused_with_the_names() {
        let argv = [
            "mds",
            "--listen",
            "127.0.0.1:1",
            "--db",
            "d",
            "--key-file",
            "k",
            "--oss",
            "h:1:1",
            "--placer",
            "qos",
        ];
        let e = Cli::try_parse_from(argv).unwrap_err().to_string();
        assert!(e.contains("allowed: roundrobin, lustre, iez"), "{e}");
        let e = Cli::try_parse_from(argv.map(|a| if a == "qos" { "lustre:x=1" } else { a }))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not one of"), "{e}");
    }
}
