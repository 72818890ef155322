//! `pfsqos`: run a scenario under one policy, compare policies, run a bakeoff suite or the
//! built-in demo subset of one, serve
//! OSTs (`ossd`) or metadata (`mds`), drive a server's parameters (`lctl`), mount the file
//! system (`mount`) and set or show layouts (`setstripe`, `getstripe`). The work happens in the
//! library crates; this binary parses arguments, owns the process (runtime, logging, signals:
//! `live.rs`), draws progress and maps failures to exit codes (2: bad input, 1: the run or
//! writing its outputs failed).

mod agent;
mod calibrate;
mod commands;
mod iez;
mod live;
mod pi_record;
mod policies;
mod progress;
mod tc_client;
mod trace;

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

#[derive(Debug, clap::Args)]
struct JobfactsArgs {
    /// What each job's number is: `nodes` (its node count) or `priority` (its Slurm priority
    /// scaled so the highest running job's is 1000).
    #[arg(long, default_value = "nodes", value_parser = ["nodes", "priority"])]
    basis: String,
    /// The squeue program (run as argv, never through a shell).
    #[arg(long, default_value = "squeue")]
    squeue: std::path::PathBuf,
    /// How long squeue may take, in ms (100..=60000).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    timeout_ms: u64,
}

/// `pfsqos jobfacts`: the running jobs' bases, as `JOB=N` lines, from the same reader and
/// scaling the agent's `[slurm]` uses.
fn jobfacts(args: &JobfactsArgs) -> ExitCode {
    let basis = match args.basis.as_str() {
        "priority" => pfsqos_jobfacts::Basis::Priority,
        _ => pfsqos_jobfacts::Basis::Nodes,
    };
    let timeout = std::time::Duration::from_millis(args.timeout_ms);
    match pfsqos_jobfacts::query_squeue(&args.squeue, timeout) {
        Ok(answer) => {
            for (job, n) in pfsqos_jobfacts::bases(&answer.jobs, basis) {
                println!("{job}={n}");
            }
            eprintln!(
                "pfsqos jobfacts: {} running job(s), {} line(s) skipped",
                answer.jobs.len(),
                answer.lines_skipped
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pfsqos jobfacts: {e}");
            ExitCode::from(1)
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure a directory's device with fio (O_DIRECT) within a time budget, or convert an
    /// obdfilter-survey summary, into a device profile (docs/physics.md).
    #[command(
        after_help = "Examples:\n  pfsqos calibrate /mnt/ost0 --budget 600 --out ost0.toml\n  pfsqos calibrate --from-obdfilter-survey survey.summary --out ost.toml"
    )]
    Calibrate(calibrate::CalibrateArgs),
    /// Every scheduler, controller and placer pfsqos has, with what each does and its options.
    #[command(after_help = "Examples:\n  pfsqos policies")]
    Policies,
    /// Each running Slurm job's share basis (node count or scaled priority), read with squeue,
    /// one `JOB=N` line per job: what `scripts/slurm-job-nodes.sh` gives a live ossd.
    #[command(
        after_help = "Examples:\n  pfsqos jobfacts\n  pfsqos jobfacts --basis priority --squeue /usr/bin/squeue"
    )]
    Jobfacts(JobfactsArgs),
    /// PI control tools ("Mitigating Shared Storage Congestion Using Control Theory", IEEE/ACM
    /// UCC 2025).
    #[command(
        after_help = "Examples:\n  pfsqos pi identify scenarios/pi/listing1.toml --experiment pi-openloop:from=23M:to=30M:levels=8:hold=15"
    )]
    Pi {
        #[command(subcommand)]
        command: PiCommand,
    },
    /// Darshan trace tools: `trace import` turns logs into a scenario (docs/traces.md).
    #[command(
        after_help = "Examples:\n  pfsqos trace import job.darshan --like scenarios/bakeoff/priorities-finishing.toml --out mine.toml"
    )]
    Trace {
        #[command(subcommand)]
        command: trace::TraceCommand,
    },
    /// iez placement tools ("iez: Resource Contention Aware Load Balancing for Large-Scale
    /// Parallel File Systems", IEEE IPDPS 2019).
    #[command(
        after_help = "Examples:\n  pfsqos iez plan trace.csv --osses 3 --osts-per-oss 5 --ost-capacity 10G"
    )]
    Iez {
        #[command(subcommand)]
        command: IezCommand,
    },
    /// Run a scenario under one policy; writes timeseries.csv, summary.json and report.html.
    #[command(
        after_help = "Examples:\n  pfsqos sim scenarios/examples/two-jobs.toml --policy adaptbf --out out/two-jobs\n  pfsqos sim scenarios/iez/testbed.toml --out out/iez      # prints OSTCost"
    )]
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
    #[command(
        after_help = "Examples:\n  pfsqos compare scenarios/demo/flagship.toml --policies nobw,static,adaptbf --out out/flagship\n  pfsqos compare scenarios/adaptbf/iv-f-recompensation.toml --policies adaptbf:period_ms=50,adaptbf:period_ms=1000\n  pfsqos compare scenarios/bakeoff/bursty-vs-streamer.toml --policies nobw,adaptbf --seeds 5   # mean ± 95 % interval"
    )]
    Compare {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Comma-separated policies [default: the scenario's policy.compare].
        #[arg(long, value_delimiter = ',')]
        policies: Option<Vec<String>>,
        /// Random seed [default: the scenario's simulation.seed].
        #[arg(long, conflicts_with = "seeds")]
        seed: Option<u64>,
        /// Run every policy with the seeds 1..=N, as the bakeoff does, and show each metric's
        /// mean with its 95 % interval (Student's t); a winner is named only outside the
        /// intervals. Each seed's comparison goes to <out>/seed-<s>/.
        #[arg(long)]
        seeds: Option<u32>,
        /// Output directory [default: ./out/<scenario name>].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The head-to-head on a quick subset: the built-in bakeoff suite's [demo] designs and
    /// workloads, one report (works from any directory).
    #[command(
        after_help = "Examples:\n  pfsqos demo                      # writes ./pfsqos-demo/report.html\n  pfsqos demo --out /tmp/demo"
    )]
    Demo {
        /// Output directory.
        #[arg(long, default_value = "pfsqos-demo")]
        out: PathBuf,
    },
    /// Run a pfsqos controller against a Lustre OSS through lctl (one agent per OSS).
    #[command(
        after_help = "Examples:\n  pfsqos agent --config /etc/pfsqos/agent.toml --dry-run --once   # print what it would write\nA deployment, step by step: docs/lustre.md"
    )]
    Agent(agent::AgentArgs),
    /// Run a centralized controller (GIFT, ...) for the Lustre agents of a file system.
    #[command(
        after_help = "Examples:\n  pfsqos coordinator --config /etc/pfsqos/coordinator.toml\nA deployment, step by step: docs/lustre.md"
    )]
    Coordinator(agent::CoordinatorArgs),
    /// The emulated `lctl` of a Lustre OSS over a live ossd, for tests (`pfsqos_agent::emu`;
    /// what the `pfsqos-lctl-emu` binary runs): a script `exec pfsqos lctl-emu "$@"` named
    /// `lctl` first on PATH stands in for Lustre's lctl. Configured by `PFSQOS_LCTL_*`.
    #[command(name = "lctl-emu", hide = true)]
    LctlEmu {
        /// lctl's own arguments (`get_param -n ...`), passed unread.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// On a client node that is not a pfsqos mount: apply the outgoing limit the ossds'
    /// controllers set for the node (PI control) with tc on a network interface.
    #[command(
        after_help = "Examples:\n  pfsqos tc-client --oss 10.0.0.5:7988 --dev eth0 --key-file /etc/pfsqos/key"
    )]
    TcClient(tc_client::TcClientArgs),
    /// Run every design of a bakeoff suite on every workload and seed (in parallel, resumable)
    /// and write bakeoff.json, bakeoff.csv, results.md and report.html.
    #[command(
        after_help = "Examples:\n  pfsqos bakeoff                              # the built-in suite, 3 seeds, into ./bakeoff-out\n  pfsqos bakeoff --designs nobw,adaptbf,vpfs --seeds 5\n  pfsqos bakeoff my-suite/ --out out/mine     # a suite of your own (docs/bakeoff.md)"
    )]
    Bakeoff {
        /// Suite directory (suite.toml and its scenario files) [default: ./scenarios/bakeoff
        /// when it exists (in a clone), else the built-in copy of it].
        suite: Option<PathBuf>,
        /// Comma-separated design names of the suite [default: all].
        #[arg(long, value_delimiter = ',')]
        designs: Option<Vec<String>>,
        /// Seeds 1..=N [default: the suite's seeds].
        #[arg(long)]
        seeds: Option<u32>,
        /// Output directory; finished runs in it are reused.
        #[arg(long, default_value = "bakeoff-out")]
        out: PathBuf,
        /// Worker threads [default: one per core].
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Serve OSTs (one directory each) with Lustre's NRS (FIFO/TBF) in front of the I/O threads.
    #[command(
        after_help = "Examples:\n  pfsqos ossd --listen 127.0.0.1:7988 --ost pq/ost0 --ost pq/ost1 --key-file pq/key"
    )]
    Ossd(Box<pfsqos_ossd::OssdArgs>),
    /// Serve the namespace and file layouts (metadata server) from a SQLite database.
    #[command(
        after_help = "Examples:\n  pfsqos mds --listen 127.0.0.1:7989 --db pq/mds.db --key-file pq/key --oss 127.0.0.1:7988:2"
    )]
    Mds(pfsqos_mds::MdsArgs),
    /// Start a cluster (MDS, OSSs, mount) in the background from a cluster file, or the
    /// default loopback layout without one.
    #[command(
        after_help = "Examples:\n  pfsqos up                 # one OSS with two OSTs, an MDS and a mount under ./\n  pfsqos up cluster.toml --only oss:0"
    )]
    Up {
        /// Cluster file (TOML) [default: one OSS with two OSTs, MDS and mount under ./].
        cluster: Option<PathBuf>,
        /// Start only this role: mds, oss:N or mount (one role per host).
        #[arg(long)]
        only: Option<pfsqos_ops::cluster::Role>,
    },
    /// Stop what `pfsqos up` started: unmount, stop the daemons; data stays.
    #[command(after_help = "Examples:\n  pfsqos down\n  pfsqos down cluster.toml --only mount")]
    Down {
        /// Cluster file (TOML), as given to `up`.
        cluster: Option<PathBuf>,
        /// Stop only this role: mds, oss:N or mount.
        #[arg(long)]
        only: Option<pfsqos_ops::cluster::Role>,
    },
    /// Show the top jobs per OST and over the whole file system (like lljobstat): the
    /// cumulative counters at once, then every interval with rates; optionally record the run
    /// as timeseries.csv, summary.json and report.html.
    #[command(
        after_help = "Examples:\n  pfsqos stat -i 1 -n 3\n  pfsqos stat -i 1 -n 10 --record out/live"
    )]
    Stat {
        /// ossd HOST:PORT (a host name or an IP); repeat for more OSSs [default: every OSS of
        /// the cluster found: ./pfsqos-state, $PFSQOS_CLUSTER, $PFSQOS_STATE, /etc/pfsqos].
        #[arg(long = "server")]
        servers: Vec<String>,
        /// File holding the shared cluster key [default: the cluster found's].
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Jobs shown per OST.
        #[arg(short = 'c', long = "count", default_value_t = 5)]
        count: usize,
        /// Seconds between samples (fractions allowed, e.g. 0.5).
        #[arg(short = 'i', long = "interval", default_value = "10", value_parser = pfsqos_ops::stat::parse_interval)]
        interval: std::time::Duration,
        /// Blocks to print, the cumulative one first [default: until interrupted].
        #[arg(short = 'n', long = "repeats")]
        iterations: Option<u64>,
        /// Write DIR/timeseries.csv, summary.json and report.html at the end.
        #[arg(long)]
        record: Option<PathBuf>,
        /// A Lustre agent's metrics address HOST:PORT (its `metrics_listen`); repeat for more.
        /// Shows the agents instead of ossds: jobs held at an administrator limit (for how
        /// long, at which limit) and the jobs moving the most (-c of them).
        #[arg(long = "agent", conflicts_with_all = ["servers", "key_file", "record"])]
        agents: Vec<String>,
        /// A Lustre coordinator's metrics address HOST:PORT (its `metrics_listen`); repeat
        /// for more. Shows its rounds, reports, refused views and the jobs held at a
        /// file-system-wide limit (after the agents, if any).
        #[arg(long = "coordinator", conflicts_with_all = ["servers", "key_file", "record"])]
        coordinators: Vec<String>,
    },
    /// Mount the file system with FUSE (runs in the foreground; SIGINT/SIGTERM unmounts).
    #[command(
        after_help = "Examples:\n  pfsqos mount pq/mnt --mds 127.0.0.1:7989 --key-file pq/key --jobid-var SLURM_JOB_ID"
    )]
    Mount(pfsqos_mount::MountArgs),
    /// Set the layout of a new file or a directory's default (as `lfs setstripe`).
    #[command(after_help = "Examples:\n  pfsqos setstripe -c 2 -S 4M pfsqos-mnt/dir")]
    Setstripe {
        /// Stripe count (-1: every OST) [default: the directory's or the file system's].
        #[arg(short = 'c', long = "stripe-count", allow_negative_numbers = true)]
        stripe_count: Option<i32>,
        /// Stripe size in bytes, or with k, M, G (a multiple of 64 KiB).
        #[arg(short = 'S', long = "stripe-size", value_parser = pfsqos_mount::lfs::parse_size)]
        stripe_size: Option<u64>,
        /// First OST (-1: chosen by the MDS).
        #[arg(short = 'i', long = "stripe-index", allow_negative_numbers = true)]
        stripe_index: Option<i32>,
        /// A directory, or a file that does not exist yet (it is created empty).
        path: PathBuf,
    },
    /// Print layouts (as `lfs getstripe`): a directory's default and its entries (-r: all
    /// levels, -d: itself only); -c, -S, -i print only those fields.
    #[command(
        after_help = "Examples:\n  pfsqos getstripe pfsqos-mnt/f\n  pfsqos getstripe -r -y pfsqos-mnt"
    )]
    Getstripe {
        /// Stripe count only.
        #[arg(short = 'c', long = "stripe-count")]
        count: bool,
        /// Stripe size only.
        #[arg(short = 'S', long = "stripe-size")]
        size: bool,
        /// Stripe index (first OST) only.
        #[arg(short = 'i', long = "stripe-index")]
        index: bool,
        /// YAML, as `lfs getstripe -y`.
        #[arg(short = 'y', long = "yaml")]
        yaml: bool,
        /// A directory's own default only, not its entries.
        #[arg(short = 'd', long = "directory")]
        directory: bool,
        /// Into subdirectories, to any depth.
        #[arg(short = 'r', long = "recursive")]
        recursive: bool,
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Read, list or write an ossd's parameters; prints what Lustre's lctl prints.
    #[command(
        after_help = "Examples:\n  pfsqos lctl get_param 'obdfilter.*.job_stats'\n  pfsqos lctl set_param ost.OSS.ost_io.nrs_policies=tbf"
    )]
    Lctl {
        /// ossd HOST:PORT (a host name or an IP) [default: the first OSS of the cluster found:
        /// ./pfsqos-state, $PFSQOS_CLUSTER, $PFSQOS_STATE, /etc/pfsqos].
        #[arg(long)]
        server: Option<String>,
        /// File holding the shared cluster key [default: the cluster found's].
        #[arg(long)]
        key_file: Option<PathBuf>,
        #[command(subcommand)]
        command: LctlCmd,
    },
    /// Write a new cluster key (random, mode 0600) for daemons started by hand.
    #[command(after_help = "Examples:\n  pfsqos keygen pq/key")]
    Keygen {
        /// The key file to create.
        file: PathBuf,
        /// Replace an existing key (every daemon and client then needs the new one).
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
enum LctlCmd {
    /// Print parameters: get_param [-F] [-n|-N] [-R] PATH... (`.` or `/` between components;
    /// `*`, `?`, `[01]`, `{a,b}` within one).
    #[command(name = "get_param")]
    #[command(after_help = "Examples:\n  pfsqos lctl get_param -n 'obdfilter/*/job_stats'")]
    Get {
        /// With -N: `/` after directories, `=` after writable parameters.
        #[arg(short = 'F')]
        classify: bool,
        /// Print values only.
        #[arg(short = 'n', conflicts_with = "names_only")]
        values_only: bool,
        /// Print names only (parameters and directories).
        #[arg(short = 'N')]
        names_only: bool,
        /// Also every parameter under a matched directory.
        #[arg(short = 'R')]
        recursive: bool,
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// List parameter names: list_param [-D] [-F] [-R] PATH...
    #[command(name = "list_param")]
    #[command(after_help = "Examples:\n  pfsqos lctl list_param -R 'ost.OSS.*'")]
    List {
        /// Directories only.
        #[arg(short = 'D')]
        dirs_only: bool,
        /// `/` after directories, `=` after writable parameters.
        #[arg(short = 'F')]
        classify: bool,
        /// Also everything under a matched directory.
        #[arg(short = 'R')]
        recursive: bool,
        #[arg(required = true)]
        patterns: Vec<String>,
    },
    /// Set parameters: set_param [-n] PATH=VALUE...
    #[command(name = "set_param")]
    #[command(
        after_help = "Examples:\n  pfsqos lctl set_param ost.OSS.ost_io.nrs_tbf_rule=\"start a jobid={dd.0} rate=100\""
    )]
    Set {
        /// Print values only.
        #[arg(short = 'n')]
        values_only: bool,
        /// Persistent, through Lustre's MGS: refused (pfsqos has no MGS); the message says
        /// what to do instead.
        #[arg(short = 'P')]
        persistent: bool,
        #[arg(required = true)]
        assignments: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum IezCommand {
    /// Predict an application's next run from its first-run trace (ARIMA, §III-A2), place the
    /// predicted files with iez's Algorithm 2 over the given servers, and print one
    /// `lfs setstripe -S SIZE -c COUNT -o OST,... FILE` per file (file names quoted for a
    /// POSIX shell), for a real Lustre site to run before the next run.
    #[command(
        after_help = "Examples:\n  printf 'file,bytes_written,stripe_count,rank\\n/scratch/a,803405824,8,0\\n' > trace.csv\n  pfsqos iez plan trace.csv --osses 3 --osts-per-oss 5 --ost-capacity 10G"
    )]
    Plan {
        /// The trace: `file,bytes_written,stripe_count,rank` per line (header optional).
        trace: PathBuf,
        /// OSSs, and OSTs on each (OST indices are numbered OSS by OSS).
        #[arg(long)]
        osses: u32,
        #[arg(long)]
        osts_per_oss: u32,
        /// Size of each OST, bytes (suffixes k, M, G: powers of 1024, as lfs takes sizes).
        #[arg(long, value_parser = pfsqos_mount::lfs::parse_size)]
        ost_capacity: u64,
        /// Bytes in use on each OST now.
        #[arg(long, value_parser = pfsqos_mount::lfs::parse_size, default_value = "0")]
        ost_used: u64,
    },
    /// Predict an application's next run from its first-run trace (ARIMA, §III-A2) and load
    /// the predicted files into the MDS's interaction database (--mds), where iez places them
    /// at create; without --mds, print them (file,predicted_bytes,stripe_count).
    #[command(
        after_help = "Examples:\n  pfsqos iez train trace.csv --app wrf               # prints the predicted files\n  pfsqos iez train trace.csv --app wrf --mds 127.0.0.1:7989 --key-file pq/key"
    )]
    Train(iez::TrainArgs),
}

#[derive(Debug, Subcommand)]
enum PiCommand {
    /// Run the open-loop experiment (no feedback, a staircase of client limits) on a simulated
    /// scenario, fit the first-order model q(k+1) = a q(k) + b bw(k) (eq. 1) and print it with
    /// the PI gains for a settling time and overshoot (eq. 3-4) and the `pi` spec to run them.
    /// The experiment runs for the scenario's duration_s. With --record instead of a
    /// scenario: fit a record taken on a live cluster (`ossd --policy pi-openloop:...
    /// --control-record FILE`).
    #[command(
        after_help = "Examples:\n  pfsqos pi identify scenarios/pi/listing1.toml --experiment pi-openloop:from=23M:to=30M:levels=8:hold=15\n  pfsqos pi identify --record control-record.csv"
    )]
    Identify {
        /// Scenario file (TOML).
        #[arg(required_unless_present = "record")]
        scenario: Option<PathBuf>,
        /// A live cluster's control record (CSV: time_s,limit_bytes_per_s,queue_rpcs) to fit
        /// instead of simulating a scenario.
        #[arg(long, conflicts_with_all = ["scenario", "experiment", "seed"])]
        record: Option<PathBuf>,
        /// The experiment, a `pi-openloop` spec (levels, hold, sampling time, sensor).
        #[arg(long, default_value = "pi-openloop")]
        experiment: String,
        /// Savitzky-Golay window (odd) and polynomial order of the smoothing.
        #[arg(long, default_value_t = 11)]
        window: usize,
        #[arg(long, default_value_t = 2)]
        order: usize,
        /// A queue at or below this many requests is empty (excluded from the fit).
        #[arg(long, default_value_t = 1.0)]
        empty: f64,
        /// A queue at or above this is saturated (excluded) [default: 90 % of the largest
        /// queue measured].
        #[arg(long)]
        saturated: Option<f64>,
        /// Fit eq. 1 through the origin, as printed, instead of around an operating point.
        #[arg(long)]
        through_origin: bool,
        /// Design specification: settling time (ms) and overshoot (a fraction in (0, 1)).
        #[arg(long, default_value_t = 1400)]
        ks_ms: u64,
        #[arg(long, default_value_t = 0.02)]
        mp: f64,
        /// Random seed [default: the scenario's simulation.seed].
        #[arg(long)]
        seed: Option<u64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        // `pfsqos lctl` usage errors exit 4 as lctl's do: a command's parser returns CMD_HELP
        // (4, include/libcfs/util/parser.h), lctl_main returns it (lustre/utils/lctl.c); an
        // unknown command exits 1 (cfs_parser_execarg's -1, lib/libcfs/parser.c).
        let lctl = std::env::args().nth(1).as_deref() == Some("lctl");
        if lctl && e.use_stderr() {
            let _ = e.print();
            let unknown = e.kind() == clap::error::ErrorKind::InvalidSubcommand;
            std::process::exit(if unknown { 1 } else { 4 });
        }
        e.exit()
    });
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
            seeds,
            out,
        } => commands::compare(&scenario, policies, seed, seeds, out),
        Command::Demo { out } => commands::demo(&out),
        Command::Bakeoff {
            suite,
            designs,
            seeds,
            out,
            jobs,
        } => commands::bakeoff(&commands::BakeoffArgs {
            suite,
            designs,
            seeds,
            out,
            jobs,
        }),
        Command::Iez {
            command:
                IezCommand::Plan {
                    trace,
                    osses,
                    osts_per_oss,
                    ost_capacity,
                    ost_used,
                },
        } => commands::iez_plan(&trace, osses, osts_per_oss, ost_capacity, ost_used),
        Command::Iez {
            command: IezCommand::Train(args),
        } => iez::train(&args),
        Command::Pi {
            command:
                PiCommand::Identify {
                    scenario,
                    record,
                    experiment,
                    window,
                    order,
                    empty,
                    saturated,
                    through_origin,
                    ks_ms,
                    mp,
                    seed,
                },
        } => {
            let args = commands::PiIdentify {
                experiment,
                window,
                order,
                empty,
                saturated,
                offset: !through_origin,
                ks_ms,
                mp,
                seed,
            };
            match (record, scenario) {
                (Some(record), _) => pi_record::identify_record(&record, &args),
                (None, Some(scenario)) => commands::pi_identify(&scenario, &args),
                (None, None) => unreachable!("clap requires a scenario or --record"),
            }
        }
        Command::Agent(args) => return agent::run(args),
        Command::Coordinator(args) => return agent::run_coordinator(args),
        Command::LctlEmu { args } => {
            let code =
                pfsqos_agent::emu::main_with(&args, &mut std::io::stdout(), &mut std::io::stderr());
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
        Command::TcClient(args) => return tc_client::run(args),
        Command::Trace { command } => return ExitCode::from(trace::run(command)),
        Command::Calibrate(args) => return ExitCode::from(calibrate::run(args)),
        Command::Jobfacts(args) => return jobfacts(&args),
        Command::Policies => {
            print!("{}", policies::listing());
            Ok(())
        }
        Command::Ossd(args) => return daemon(args.into_config(), live::run_ossd),
        Command::Mds(args) => return daemon(args.into_config(), live::run_mds),
        Command::Mount(args) => return daemon(args.into_config(), live::run_mount),
        Command::Setstripe {
            stripe_count,
            stripe_size,
            stripe_index,
            path,
        } => {
            let args = pfsqos_mount::lfs::SetStripe {
                stripe_count,
                stripe_size_bytes: stripe_size,
                stripe_index,
                path,
            };
            return ExitCode::from(live::run_setstripe(&args));
        }
        Command::Getstripe {
            count,
            size,
            index,
            yaml,
            directory,
            recursive,
            paths,
        } => {
            let opts = pfsqos_mount::lfs::GetStripe {
                count,
                size,
                index,
                yaml,
                directory_only: directory,
                recursive,
            };
            return ExitCode::from(live::run_getstripe(&paths, &opts));
        }
        Command::Keygen { file, force } => return ExitCode::from(live::run_keygen(&file, force)),
        Command::Up { cluster, only } => {
            return ExitCode::from(live::run_up(cluster.as_deref(), only))
        }
        Command::Down { cluster, only } => {
            return ExitCode::from(live::run_down(cluster.as_deref(), only))
        }
        Command::Stat {
            servers,
            key_file,
            count,
            interval,
            iterations,
            record,
            agents,
            coordinators,
        } => {
            if !agents.is_empty() || !coordinators.is_empty() {
                return agent::run_stat_agents(&agents, &coordinators, count, interval, iterations);
            }
            return ExitCode::from(live::run_stat(
                &servers,
                key_file.as_deref(),
                |servers, key_file| pfsqos_ops::stat::StatArgs {
                    servers,
                    key_file,
                    count,
                    interval,
                    iterations,
                    record,
                },
            ));
        }
        Command::Lctl {
            server,
            key_file,
            command,
        } => {
            use pfsqos_ops::lctl::{LctlCommand, ParamFlags};
            let command = match command {
                LctlCmd::Get {
                    classify,
                    values_only,
                    names_only,
                    recursive,
                    names,
                } => LctlCommand::GetParam {
                    names,
                    flags: ParamFlags {
                        values_only,
                        names_only,
                        classify,
                        recursive,
                        dirs_only: false,
                    },
                },
                LctlCmd::List {
                    dirs_only,
                    classify,
                    recursive,
                    patterns,
                } => LctlCommand::ListParam {
                    patterns,
                    flags: ParamFlags {
                        classify,
                        recursive,
                        dirs_only,
                        ..ParamFlags::default()
                    },
                },
                LctlCmd::Set {
                    persistent: true, ..
                } => {
                    eprintln!("error: {}", pfsqos_ops::lctl::SET_PARAM_P_REFUSAL);
                    return ExitCode::from(2);
                }
                LctlCmd::Set {
                    values_only,
                    assignments,
                    ..
                } => LctlCommand::SetParam {
                    assignments,
                    values_only,
                },
            };
            return ExitCode::from(live::run_lctl(
                server.as_deref(),
                key_file.as_deref(),
                command,
            ));
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

/// Runs a daemon from its configuration: 2 when the options were unusable, 1 when it failed.
fn daemon<C>(config: anyhow::Result<C>, run: fn(C) -> anyhow::Result<()>) -> ExitCode {
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pfsqos: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
