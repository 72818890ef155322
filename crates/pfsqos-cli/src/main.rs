//! `pfsqos`: run a scenario under one policy, compare policies, run the built-in demo, serve
//! OSTs (`ossd`) or metadata (`mds`), drive a server's parameters (`lctl`), mount the file
//! system (`mount`) and set or show layouts (`setstripe`, `getstripe`). The work happens in the library crates; this binary parses arguments, draws progress and
//! maps failures to exit codes (2: bad input, 1: the run or writing its outputs failed).

mod commands;
mod progress;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "pfsqos",
    version,
    about = "I/O bandwidth control for shared parallel storage: simulate, compare, report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario under one policy; writes timeseries.csv, summary.json and report.html.
    Sim {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Policy to run [default: the scenario's policy.default].
        #[arg(long)]
        policy: Option<String>,
        /// Random seed [default: the scenario's simulation.seed].
        #[arg(long)]
        seed: Option<u64>,
        /// Output directory [default: ./out/<scenario name>-<policy>].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a scenario under several policies and write one comparison report.
    Compare {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Comma-separated policies [default: the scenario's policy.compare].
        #[arg(long, value_delimiter = ',')]
        policies: Option<Vec<String>>,
        /// Random seed [default: the scenario's simulation.seed].
        #[arg(long)]
        seed: Option<u64>,
        /// Output directory [default: ./out/<scenario name>].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Compare the policies on the built-in flagship scenario and write an HTML report.
    Demo {
        /// Output directory.
        #[arg(long, default_value = "pfsqos-demo")]
        out: PathBuf,
    },
    /// Serve OSTs (one directory each) with Lustre's NRS (FIFO/TBF) in front of the I/O threads.
    Ossd {
        /// Address to listen on, e.g. 127.0.0.1:7988.
        #[arg(long)]
        listen: SocketAddr,
        /// OST directory; repeat for more OSTs (OST0000, OST0001, ... in order).
        #[arg(long = "ost", required = true)]
        osts: Vec<PathBuf>,
        /// File holding the shared cluster key (at least 16 bytes).
        #[arg(long)]
        key_file: PathBuf,
        /// I/O threads in total, split over the CPU partitions.
        #[arg(long, default_value_t = 8)]
        threads: usize,
        /// CPU partitions (one NRS head each).
        #[arg(long, default_value_t = 1)]
        cpts: usize,
        /// Per-OST device ceiling, so a fast disk stands in for a slower one.
        #[arg(long)]
        ceiling_bytes_per_s: Option<u64>,
        /// Write into the OSTs' page cache and leave writeback to the kernel, instead of
        /// writing whole aligned RPCs straight to the device (O_DIRECT) before answering.
        #[arg(long)]
        buffered_writes: bool,
        /// The Lustre version whose NRS interface to emulate (TBF rule forms, fields, rate
        /// limits, listing form), e.g. 2.15 or 2.17.57; default: master.
        #[arg(long)]
        lustre_version: Option<String>,
        /// File system name used in parameter names (obdfilter.<fsname>-OST0000.job_stats).
        #[arg(long, default_value = "pfsqos")]
        fsname: String,
        /// Run a controller in the daemon (same specs as `sim --policy`, e.g. `adaptbf`,
        /// `static`, `adaptbf:period_ms=200`); it writes nrs_policies/nrs_tbf_rule as lctl does.
        #[arg(long)]
        policy: Option<String>,
        /// Control period for policies whose spec sets none.
        #[arg(long, default_value_t = pfsqos_live::control::PERIOD_MS_DEFAULT, requires = "policy")]
        period_ms: u64,
        /// RPC capacity of each OST the controller shares out (default: the ceiling / brw size).
        #[arg(long, requires = "policy")]
        capacity_rpcs_per_s: Option<u64>,
        /// Size of a full RPC (one TBF token) for a capacity taken from the ceiling.
        #[arg(long, default_value_t = pfsqos_live::control::BRW_SIZE_BYTES_DEFAULT, requires = "policy")]
        brw_size_bytes: u64,
        /// Node count of a job, as JOB=N; repeat for more jobs. Other jobs count one node.
        #[arg(long = "job-nodes", value_parser = pfsqos_live::control::parse_job_nodes, requires = "policy")]
        job_nodes: Vec<(pfsqos_core::model::JobId, u32)>,
        /// Serve Prometheus metrics at http://ADDR/metrics.
        #[arg(long)]
        metrics_listen: Option<SocketAddr>,
    },
    /// Serve the namespace and file layouts (metadata server) from a SQLite database.
    Mds {
        /// Address to listen on, e.g. 127.0.0.1:7989.
        #[arg(long)]
        listen: SocketAddr,
        /// Database file (created if missing; WAL files live next to it).
        #[arg(long)]
        db: PathBuf,
        /// File holding the shared cluster key (at least 16 bytes).
        #[arg(long)]
        key_file: PathBuf,
        /// An ossd and its OST count, HOST:PORT:OSTCOUNT; repeat in OST order.
        #[arg(long = "oss", required = true)]
        osses: Vec<pfsqos_live::mds::OssSpec>,
        /// Default stripe count of new files (-1: every OST).
        #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
        stripe_count: i32,
        /// Default stripe size of new files (a multiple of 64 KiB).
        #[arg(long, default_value_t = 1 << 20)]
        stripe_size: u64,
        /// File system name.
        #[arg(long, default_value = "pfsqos")]
        fsname: String,
        /// Serve Prometheus metrics at http://ADDR/metrics.
        #[arg(long)]
        metrics_listen: Option<SocketAddr>,
    },
    /// Start a cluster (MDS, OSSs, mount) in the background from a cluster file, or the
    /// default loopback layout without one.
    Up {
        /// Cluster file (TOML) [default: one OSS with two OSTs, MDS and mount under ./].
        cluster: Option<PathBuf>,
        /// Start only this role: mds, oss:N or mount (one role per host).
        #[arg(long)]
        only: Option<pfsqos_live::cluster::Role>,
    },
    /// Stop what `pfsqos up` started: unmount, stop the daemons; data stays.
    Down {
        /// Cluster file (TOML), as given to `up`.
        cluster: Option<PathBuf>,
        /// Stop only this role: mds, oss:N or mount.
        #[arg(long)]
        only: Option<pfsqos_live::cluster::Role>,
    },
    /// Show the top jobs per OST every interval (like lljobstat); optionally record the run
    /// as timeseries.csv, summary.json and report.html.
    Stat {
        /// ossd address; repeat for more OSSs.
        #[arg(long = "server", default_value = pfsqos_live::lctl::DEFAULT_SERVER)]
        servers: Vec<SocketAddr>,
        /// File holding the shared cluster key.
        #[arg(long, default_value = pfsqos_live::lctl::DEFAULT_KEY_FILE)]
        key_file: PathBuf,
        /// Jobs shown per OST.
        #[arg(short = 'c', long = "count", default_value_t = 5)]
        count: usize,
        /// Seconds between samples (fractions allowed, e.g. 0.5).
        #[arg(short = 'i', long = "interval", default_value = "10", value_parser = pfsqos_live::stat::parse_interval)]
        interval: std::time::Duration,
        /// Samples to print [default: until interrupted].
        #[arg(short = 'n', long = "repeats")]
        iterations: Option<u64>,
        /// Write DIR/timeseries.csv, summary.json and report.html at the end.
        #[arg(long)]
        record: Option<PathBuf>,
    },
    /// Mount the file system with FUSE (runs in the foreground; SIGINT/SIGTERM unmounts).
    Mount {
        /// Directory to mount on.
        mountpoint: PathBuf,
        /// The MDS, HOST:PORT.
        #[arg(long)]
        mds: String,
        /// File holding the shared cluster key.
        #[arg(long, default_value = pfsqos_live::lctl::DEFAULT_KEY_FILE)]
        key_file: PathBuf,
        /// Environment variable holding the JobID (e.g. SLURM_JOB_ID); `disable` uses the
        /// --jobid-name pattern.
        #[arg(long, default_value = pfsqos_live::mount::jobid::JOBID_VAR_DEFAULT)]
        jobid_var: String,
        /// JobID pattern: %e executable, %u uid, %g gid, %h short host, %H host, %p pid,
        /// %j the jobid_var value.
        #[arg(long, default_value = pfsqos_live::mount::jobid::JOBID_NAME_DEFAULT)]
        jobid_name: String,
        /// RPCs in flight per OST.
        #[arg(long, default_value_t = pfsqos_live::mount::MAX_RPCS_IN_FLIGHT_DEFAULT)]
        max_rpcs_in_flight: usize,
        /// Largest RPC in bytes.
        #[arg(long, default_value_t = pfsqos_live::mount::BRW_SIZE_DEFAULT_BYTES)]
        brw_size_bytes: u64,
        /// Bytes written but not yet acknowledged by the OSSs, in MiB.
        #[arg(long, default_value_t = pfsqos_live::mount::MAX_DIRTY_MB_DEFAULT)]
        max_dirty_mb: u64,
        /// Read-ahead in MiB: the client's window and budget (0: none), or with --page-cache
        /// the kernel's (0: its 128 KiB).
        #[arg(long, default_value_t = pfsqos_live::mount::MAX_READ_AHEAD_MB_DEFAULT)]
        max_read_ahead_mb: u64,
        /// Cache file data in the kernel's page cache instead of direct I/O (the default: no
        /// client page cache, writes gathered into whole RPCs and read-ahead by the client).
        /// Needed by programs that map files shared (MAP_SHARED); pages cached here may be
        /// stale after another client's write until the file is opened again.
        #[arg(long)]
        page_cache: bool,
        /// FUSE session threads.
        #[arg(long, default_value_t = pfsqos_live::mount::THREADS_DEFAULT)]
        threads: usize,
        /// Seconds a request waits for a restarting ossd or mds before failing with EIO.
        #[arg(long, default_value_t = 60)]
        recovery_s: u64,
    },
    /// Set the layout of a new file or a directory's default (as `lfs setstripe`).
    Setstripe {
        /// Stripe count (-1: every OST) [default: the directory's or the file system's].
        #[arg(short = 'c', long = "stripe-count", allow_negative_numbers = true)]
        stripe_count: Option<i32>,
        /// Stripe size in bytes, or with k, M, G (a multiple of 64 KiB).
        #[arg(short = 'S', long = "stripe-size", value_parser = pfsqos_live::mount::lfs::parse_size)]
        stripe_size: Option<u64>,
        /// First OST (-1: chosen by the MDS).
        #[arg(short = 'i', long = "stripe-index", allow_negative_numbers = true)]
        stripe_index: Option<i32>,
        /// A directory, or a file that does not exist yet (it is created empty).
        path: PathBuf,
    },
    /// Print layouts (as `lfs getstripe`).
    Getstripe {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Read or write an ossd's parameters; prints what Lustre's lctl prints.
    Lctl {
        /// ossd address.
        #[arg(long, default_value = pfsqos_live::lctl::DEFAULT_SERVER)]
        server: SocketAddr,
        /// File holding the shared cluster key.
        #[arg(long, default_value = pfsqos_live::lctl::DEFAULT_KEY_FILE)]
        key_file: PathBuf,
        #[command(subcommand)]
        command: LctlCmd,
    },
}

#[derive(Debug, Subcommand)]
enum LctlCmd {
    /// Print parameters: get_param [-n] NAME... (NAME may contain `*`).
    #[command(name = "get_param")]
    GetParam {
        /// Print values only.
        #[arg(short = 'n')]
        values_only: bool,
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Set parameters: set_param [-n] NAME=VALUE...
    #[command(name = "set_param")]
    SetParam {
        /// Print values only.
        #[arg(short = 'n')]
        values_only: bool,
        #[arg(required = true)]
        assignments: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim {
            scenario,
            policy,
            seed,
            out,
        } => commands::sim(&scenario, policy, seed, out),
        Command::Compare {
            scenario,
            policies,
            seed,
            out,
        } => commands::compare(&scenario, policies, seed, out),
        Command::Demo { out } => commands::demo(&out),
        Command::Ossd {
            listen,
            osts,
            key_file,
            threads,
            cpts,
            ceiling_bytes_per_s,
            buffered_writes,
            lustre_version,
            fsname,
            policy,
            period_ms,
            capacity_rpcs_per_s,
            brw_size_bytes,
            job_nodes,
            metrics_listen,
        } => {
            let key = match pfsqos_live::ossd::read_key_file(&key_file) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("pfsqos: error: {e:#}");
                    return ExitCode::from(2);
                }
            };
            let mut config = pfsqos_live::ossd::OssdConfig::new(listen, osts, key);
            config.threads = threads;
            config.cpts = cpts;
            config.ceiling_bytes_per_s = ceiling_bytes_per_s;
            config.buffered_writes = buffered_writes;
            if let Some(text) = lustre_version {
                match pfsqos_live::ossd::parse_lustre_version(&text) {
                    Ok(v) => config.lustre_version = v,
                    Err(e) => {
                        eprintln!("pfsqos: error: --lustre-version {text:?}: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            config.fsname = fsname;
            config.metrics_listen = metrics_listen;
            if let Some(spec) = policy {
                let mut control = match pfsqos_live::control::ControlConfig::new(&spec) {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("pfsqos: error: {e}");
                        return ExitCode::from(2);
                    }
                };
                control.period_ms = period_ms;
                control.capacity_rpcs_per_s = capacity_rpcs_per_s;
                control.brw_size_bytes = brw_size_bytes;
                control.job_nodes = job_nodes;
                config.control = Some(control);
            }
            return match pfsqos_live::cli::run_ossd(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pfsqos: error: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
        Command::Mds {
            listen,
            db,
            key_file,
            osses,
            stripe_count,
            stripe_size,
            fsname,
            metrics_listen,
        } => {
            let key = match pfsqos_live::ossd::read_key_file(&key_file) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("pfsqos: error: {e:#}");
                    return ExitCode::from(2);
                }
            };
            let mut config = pfsqos_live::mds::MdsConfig::new(listen, db, key, osses);
            config.namespace.fsname = fsname;
            config.namespace.default_stripe.stripe_count = stripe_count;
            config.namespace.default_stripe.stripe_size_bytes = stripe_size;
            config.metrics_listen = metrics_listen;
            return match pfsqos_live::cli::run_mds(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pfsqos: error: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
        Command::Mount {
            mountpoint,
            mds,
            key_file,
            jobid_var,
            jobid_name,
            max_rpcs_in_flight,
            brw_size_bytes,
            max_dirty_mb,
            max_read_ahead_mb,
            page_cache,
            threads,
            recovery_s,
        } => {
            let key = match pfsqos_live::ossd::read_key_file(&key_file) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("pfsqos: error: {e:#}");
                    return ExitCode::from(2);
                }
            };
            let mut config = pfsqos_live::mount::MountConfig::new(mountpoint, mds, key);
            config.jobid_var = jobid_var;
            config.jobid_name = jobid_name;
            config.max_rpcs_in_flight = max_rpcs_in_flight;
            config.brw_size_bytes = brw_size_bytes;
            config.max_dirty_mb = max_dirty_mb;
            config.max_read_ahead_mb = max_read_ahead_mb;
            config.direct_io = !page_cache;
            config.threads = threads;
            config.recovery = std::time::Duration::from_secs(recovery_s);
            if let Err(e) = config.validate() {
                eprintln!("pfsqos: error: {e:#}");
                return ExitCode::from(2);
            }
            return match pfsqos_live::cli::run_mount(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pfsqos: error: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
        Command::Setstripe {
            stripe_count,
            stripe_size,
            stripe_index,
            path,
        } => {
            let args = pfsqos_live::mount::lfs::SetStripe {
                stripe_count,
                stripe_size_bytes: stripe_size,
                stripe_index,
                path,
            };
            return ExitCode::from(pfsqos_live::cli::run_setstripe(&args));
        }
        Command::Getstripe { paths } => {
            return ExitCode::from(pfsqos_live::cli::run_getstripe(&paths));
        }
        Command::Up { cluster, only } => {
            return ExitCode::from(pfsqos_live::cli::run_up(cluster.as_deref(), only))
        }
        Command::Down { cluster, only } => {
            return ExitCode::from(pfsqos_live::cli::run_down(cluster.as_deref(), only))
        }
        Command::Stat {
            servers,
            key_file,
            count,
            interval,
            iterations,
            record,
        } => {
            let args = pfsqos_live::stat::StatArgs {
                servers,
                key_file,
                count,
                interval,
                iterations,
                record,
            };
            return ExitCode::from(pfsqos_live::cli::run_stat(&args));
        }
        Command::Lctl {
            server,
            key_file,
            command,
        } => {
            let command = match command {
                LctlCmd::GetParam { values_only, names } => {
                    pfsqos_live::lctl::LctlCommand::GetParam { names, values_only }
                }
                LctlCmd::SetParam {
                    values_only,
                    assignments,
                } => pfsqos_live::lctl::LctlCommand::SetParam {
                    assignments,
                    values_only,
                },
            };
            let args = pfsqos_live::lctl::LctlArgs {
                server,
                key_file,
                command,
            };
            return ExitCode::from(pfsqos_live::cli::run_lctl(&args));
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pfsqos: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
