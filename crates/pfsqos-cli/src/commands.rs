//! The three commands. Input is checked completely (scenario, policy names, output
//! directory names) before anything runs, so bad input never costs a simulation.

use std::fmt;
use std::path::{Path, PathBuf};

use pfsqos_report::{dir_name, summarize, write_comparison, write_run, ScenarioText};
use pfsqos_sim::{PolicyChoice, RunOutput, Scenario, ScenarioError};

use crate::progress::{Progress, RunsProgress};

#[derive(Debug)]
pub enum CliError {
    /// The user's input is wrong: exit code 2.
    BadInput(String),
    /// The run or writing its outputs failed: exit code 1.
    RunFailed(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::BadInput(_) => 2,
            CliError::RunFailed(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::BadInput(m) => {
                f.write_str(m)?;
                f.write_str(&policy_suggestion(m))
            }
            CliError::RunFailed(m) => f.write_str(m),
        }
    }
}

/// "; did you mean `adaptbf`?" after a message refusing an unknown policy name close to a
/// known one (`pfsqos_bakeoff::policy_input`, shared with the Python package).
fn policy_suggestion(message: &str) -> String {
    pfsqos_bakeoff::policy_input::policy_suggestion(message)
}

impl From<ScenarioError> for CliError {
    fn from(e: ScenarioError) -> Self {
        CliError::BadInput(e.to_string())
    }
}

/// A policy spec named on the command line, parsed once.
fn check_policy(name: &str) -> Result<PolicyChoice, CliError> {
    PolicyChoice::parse(name).map_err(CliError::BadInput)
}

/// A policy spec named in the scenario file, parsed once: reported like any other scenario
/// error.
fn check_scenario_policy(file: &str, field: &str, name: &str) -> Result<PolicyChoice, CliError> {
    Ok(pfsqos_bakeoff::policy_input::check_scenario_policy(
        file, field, name,
    )?)
}

/// The policies to compare, parsed once: at least one, each known, none twice.
fn check_policy_list(policies: &[String]) -> Result<Vec<PolicyChoice>, CliError> {
    pfsqos_bakeoff::policy_input::check_policy_list(policies).map_err(CliError::BadInput)
}

/// The scenario name as one safe path component for the default output directory
/// (`pfsqos_report::dir_name`, the one mapping of names to directories).
fn dir_component(name: &str) -> String {
    dir_name(name, "scenario")
}

fn load(path: &Path) -> Result<Scenario, CliError> {
    Ok(Scenario::load(path)?)
}

/// What the report shows of a scenario.
fn text(scenario: &Scenario) -> ScenarioText<'_> {
    ScenarioText {
        name: &scenario.name,
        description: &scenario.description,
    }
}

fn run_one(scenario: &Scenario, choice: &PolicyChoice, seed: u64) -> Result<RunOutput, CliError> {
    let policy = choice.spec();
    let mut progress = Progress::new(policy);
    let result = pfsqos_sim::run(scenario, choice, seed, &mut |now_ns, end_ns| {
        progress.update(now_ns, end_ns)
    });
    progress.finish();
    // Every reason a run does not happen is in the input: the user can fix it (exit code 2).
    result.map_err(|e| CliError::BadInput(format!("cannot run under policy `{policy}`: {e}")))
}

fn print_summary_line(run: &RunOutput) {
    let s = summarize(run);
    println!(
        "{:>10}: aggregate {:.1} MiB/s, Jain {:.3}, weighted Jain {:.3}, share deviation {:.3}{}{}",
        s.policy,
        s.aggregate_throughput_mib_s,
        s.jain_index,
        s.weighted_jain_index,
        s.share_deviation,
        // The iez paper's balance measure, where OSTs have sizes (1.000: evenly filled).
        s.ost_cost
            .map_or_else(String::new, |c| format!(", OSTCost {c:.3}")),
        if s.rejected_control_writes > 0 {
            format!(", {} rejected control writes", s.rejected_control_writes)
        } else {
            String::new()
        }
    );
}

fn report_path(dir: &Path) -> String {
    let path = dir.join("report.html");
    match std::fs::canonicalize(&path) {
        Ok(abs) => format!("{} (file://{})", path.display(), abs.display()),
        Err(_) => path.display().to_string(),
    }
}

pub fn sim(
    path: &Path,
    policy: Option<String>,
    seed: Option<u64>,
    out: Option<PathBuf>,
) -> Result<(), CliError> {
    let scenario = load(path)?;
    let choice = match policy {
        Some(p) => check_policy(&p)?,
        None => {
            let file = path.display().to_string();
            check_scenario_policy(&file, "policy.default", &scenario.policy.default)?
        }
    };
    let policy = choice.spec();
    let seed = seed.unwrap_or(scenario.simulation.seed);
    let out = out.unwrap_or_else(|| {
        PathBuf::from("out").join(format!(
            "{}-{}",
            dir_component(&scenario.name),
            dir_name(policy, "policy")
        ))
    });
    let run = run_one(&scenario, &choice, seed)?;
    write_run(&out, &run, &text(&scenario)).map_err(|e| CliError::RunFailed(e.to_string()))?;
    print_summary_line(&run);
    println!(
        "wrote {}/{{timeseries.csv,summary.json,report.html}}",
        out.display()
    );
    println!("report: {}", report_path(&out));
    Ok(())
}

/// Runs `policies` on `scenario` and writes the comparison into `out`.
fn compare_runs(
    scenario: &Scenario,
    policies: &[PolicyChoice],
    seed: u64,
    out: &Path,
) -> Result<Vec<RunOutput>, CliError> {
    let mut runs = Vec::with_capacity(policies.len());
    for policy in policies {
        let run = run_one(scenario, policy, seed)?;
        print_summary_line(&run);
        runs.push(run);
    }
    let dirs = write_comparison(out, &runs, &text(scenario))
        .map_err(|e| CliError::RunFailed(e.to_string()))?;
    println!(
        "wrote {0}/summary.json, {0}/{{{1}}}/{{timeseries.csv,summary.json[,control_trace.csv]}}",
        out.display(),
        dirs.join(",")
    );
    Ok(runs)
}

fn compare_scenario(
    scenario: &Scenario,
    policies: &[PolicyChoice],
    seed: u64,
    out: &Path,
) -> Result<(), CliError> {
    compare_runs(scenario, policies, seed, out)?;
    println!("report: {}", report_path(out));
    Ok(())
}

pub fn compare(
    path: &Path,
    policies: Option<Vec<String>>,
    seed: Option<u64>,
    seeds: Option<u32>,
    out: Option<PathBuf>,
) -> Result<(), CliError> {
    let scenario = load(path)?;
    let policies = match policies {
        Some(list) => check_policy_list(&list)?,
        None => {
            let file = path.display().to_string();
            for (i, p) in scenario.policy.compare.iter().enumerate() {
                check_scenario_policy(&file, &format!("policy.compare[{i}]"), p)?;
            }
            check_policy_list(&scenario.policy.compare)?
        }
    };
    let out = out.unwrap_or_else(|| PathBuf::from("out").join(dir_component(&scenario.name)));
    if let Some(n) = seeds {
        return compare_over_seeds(&scenario, &policies, n, &out);
    }
    let seed = seed.unwrap_or(scenario.simulation.seed);
    compare_scenario(&scenario, &policies, seed, &out)
}

/// `pfsqos compare --seeds N`: every policy with the seeds `1..=N` (the bakeoff's seeded
/// scenario per seed), each seed's comparison written into `out/seed-<s>/`, then the means and
/// 95 % intervals of every metric with the verdicts (`pfsqos_bakeoff::seeded`) into
/// `out/summary.json` and `out/report.html`.
fn compare_over_seeds(
    scenario: &Scenario,
    policies: &[PolicyChoice],
    seeds: u32,
    out: &Path,
) -> Result<(), CliError> {
    let seeds_max = pfsqos_bakeoff::suite::SEEDS_MAX;
    if !(1..=seeds_max).contains(&seeds) {
        return Err(CliError::BadInput(format!(
            "--seeds {seeds}: must be 1 to {seeds_max}"
        )));
    }
    let seeds: Vec<u64> = (1..=u64::from(seeds)).collect();
    // rows[p][s]: policy p's metric row for seed s; the runs themselves are written and
    // dropped seed by seed.
    let mut rows: Vec<Vec<Vec<Option<f64>>>> =
        vec![Vec::with_capacity(seeds.len()); policies.len()];
    let mut names = Vec::with_capacity(policies.len());
    for &seed in &seeds {
        println!("seed {seed}:");
        let dir = out.join(pfsqos_bakeoff::seeded::seed_directory(seed));
        let runs = compare_runs(
            &pfsqos_bakeoff::runner::seeded(scenario, seed),
            policies,
            seed,
            &dir,
        )?;
        names = runs.iter().map(|r| r.policy.clone()).collect();
        for (p, run) in runs.iter().enumerate() {
            rows[p].push(pfsqos_bakeoff::seeded::metric_row(run));
        }
    }
    let comparison = pfsqos_bakeoff::seeded::SeededComparison::new(
        &scenario.name,
        &scenario.description,
        &names,
        &seeds,
        &rows,
    );
    pfsqos_bakeoff::seeded::write_outputs(out, &comparison).map_err(CliError::RunFailed)?;
    println!();
    print!("{}", pfsqos_bakeoff::seeded::results_md(&comparison));
    println!(
        "wrote {0}/{{summary.json,report.html}}, {0}/seed-<s>/ for seeds {1}..{2}",
        out.display(),
        seeds[0],
        seeds[seeds.len() - 1]
    );
    println!("report: {}", report_path(out));
    Ok(())
}

/// What `pfsqos bakeoff` was asked (see its help).
#[derive(Debug)]
pub struct BakeoffArgs {
    /// `None`: the clone's `scenarios/bakeoff`, else the built-in suite.
    pub suite: Option<PathBuf>,
    pub designs: Option<Vec<String>>,
    pub seeds: Option<u32>,
    pub out: PathBuf,
    pub jobs: Option<usize>,
}

/// Worker threads: `--jobs`, or one per core.
fn worker_threads(jobs: Option<usize>) -> Result<usize, CliError> {
    let max = pfsqos_bakeoff::runner::THREADS_MAX;
    match jobs {
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(CliError::BadInput(format!(
            "--jobs {n}: must be 1 to {max}"
        ))),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get().min(max))),
    }
}

/// Runs `designs` × the suite's workloads × seeds `1..=seeds` into `out` and writes the
/// report files; prints the verdicts and where everything is.
fn run_suite(
    label: &str,
    suite: &pfsqos_bakeoff::Suite,
    designs: Vec<pfsqos_bakeoff::Design>,
    seeds: u32,
    out: &Path,
    threads: usize,
) -> Result<(), CliError> {
    println!(
        "pfsqos {label}: suite `{}`: {} designs x {} workloads x {} seeds (plus each job alone), \
         {threads} worker threads, into {}",
        suite.name,
        designs.len(),
        suite.workloads.len(),
        seeds,
        out.display()
    );
    let options = pfsqos_bakeoff::BakeoffOptions {
        out: out.to_path_buf(),
        designs,
        seeds,
        threads,
    };
    let progress = RunsProgress::new(label);
    let result = pfsqos_bakeoff::run_bakeoff(suite, &options, &|u| {
        progress.update(u.done, u.total, u.executed)
    });
    progress.finish();
    let result = result.map_err(|e| CliError::RunFailed(e.to_string()))?;
    let report = pfsqos_bakeoff::output::write_outputs(out, &result, threads)
        .map_err(CliError::RunFailed)?;
    // One sentence per workload and its expectations; every metric's verdict is in
    // results.md and the report.
    for a in &report.answers {
        println!("  {}", a.sentence);
        for j in &a.expectations {
            let word = match j.outcome {
                pfsqos_bakeoff::answer::Outcome::Held => "held",
                pfsqos_bakeoff::answer::Outcome::DidNotHold => "did not hold",
                pfsqos_bakeoff::answer::Outcome::Undecided => "undecided (a tie)",
            };
            println!("    expected: {}: {word}", j.claim);
        }
    }
    println!(
        "{} runs executed, {} reused from {}; {} combinations skipped (listed in the report)",
        result.executed_runs,
        result.reused_runs,
        out.display(),
        report.skipped.len()
    );
    println!(
        "wrote {0}/{{bakeoff.json,bakeoff.csv,results.md,timing.json}}, {0}/runs/, {0}/solo/",
        out.display()
    );
    println!("report: {}", report_path(out));
    Ok(())
}

/// `pfsqos bakeoff`: every (selected) design on every workload of a suite directory.
pub fn bakeoff(args: &BakeoffArgs) -> Result<(), CliError> {
    // Without a directory: the clone's scenarios/bakeoff when run inside one (so that edits
    // to it count), else the copy built into the binary (any directory, the .deb).
    let local = Path::new(pfsqos_bakeoff::builtin::BUILTIN_ORIGIN);
    let suite = match &args.suite {
        Some(dir) => pfsqos_bakeoff::Suite::load(dir),
        None if local.join(pfsqos_bakeoff::suite::SUITE_FILE).is_file() => {
            println!(
                "suite: ./{} (give a directory to run another)",
                local.display()
            );
            pfsqos_bakeoff::Suite::load(local)
        }
        None => {
            println!(
                "suite: the built-in copy of {} (give a directory to run another)",
                pfsqos_bakeoff::builtin::BUILTIN_ORIGIN
            );
            pfsqos_bakeoff::builtin::builtin_suite()
        }
    }
    .map_err(|e| CliError::BadInput(e.to_string()))?;
    let designs = match &args.designs {
        None => suite.designs.clone(),
        Some(names) => {
            if names.is_empty() {
                return Err(CliError::BadInput("--designs names no design".to_string()));
            }
            for (i, n) in names.iter().enumerate() {
                if names[..i].contains(n) {
                    return Err(CliError::BadInput(format!(
                        "--designs: `{}` is listed twice",
                        n.escape_debug()
                    )));
                }
            }
            suite
                .select_designs(names)
                .map_err(|e| CliError::BadInput(format!("--designs: {e}")))?
        }
    };
    let seeds = args.seeds.unwrap_or(suite.seeds);
    let seeds_max = pfsqos_bakeoff::suite::SEEDS_MAX;
    if !(1..=seeds_max).contains(&seeds) {
        return Err(CliError::BadInput(format!(
            "--seeds {seeds}: must be 1 to {seeds_max}"
        )));
    }
    let threads = worker_threads(args.jobs)?;
    run_suite("bakeoff", &suite, designs, seeds, &args.out, threads)
}

/// `pfsqos demo`: the `[demo]` subset of the built-in suite, then where the per-paper
/// reproductions are.
pub fn demo(out: &Path) -> Result<(), CliError> {
    // The built-in suite failing to load is this binary's bug, not the user's input.
    let suite = pfsqos_bakeoff::builtin::builtin_suite()
        .map_err(|e| CliError::RunFailed(format!("built-in suite: {e}")))?;
    let demo = suite
        .demo_suite()
        .ok_or_else(|| CliError::RunFailed("built-in suite: no [demo] section".to_string()))?;
    let designs = demo.designs.clone();
    let seeds = demo.seeds;
    run_suite("demo", &demo, designs, seeds, out, worker_threads(None)?)?;
    println!(
        "the whole suite: pfsqos bakeoff [SUITE_DIR] (built-in copy of {})",
        pfsqos_bakeoff::builtin::BUILTIN_ORIGIN
    );
    println!("per-paper reproductions (in the pfsqos repository):");
    for r in pfsqos_bakeoff::REPRODUCTIONS {
        println!("  {:<11} {}  (bash {})", r.design, r.doc, r.script);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_threads_are_bounded() {
        assert_eq!(worker_threads(Some(3)).unwrap(), 3);
        assert!(worker_threads(None).unwrap() >= 1);
        assert_eq!(worker_threads(Some(0)).unwrap_err().exit_code(), 2);
        assert_eq!(worker_threads(Some(100_000)).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn directory_names_are_one_safe_component() {
        assert_eq!(dir_component("adaptbf-fig5"), "adaptbf-fig5");
        assert_eq!(dir_component("../etc/passwd"), "_etc_passwd");
        assert_eq!(dir_component("a b/c"), "a_b_c");
        assert_eq!(dir_component(""), "scenario");
        assert_eq!(dir_component("..."), "scenario");
        assert_eq!(dir_component(&"x".repeat(500)).len(), 64);
    }

    #[test]
    fn policy_lists_are_checked() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_policy_list(&list(&["nobw", "static"])).is_ok());
        let e = check_policy_list(&list(&["nobw", "bogus"])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("bogus") && e.to_string().contains("nobw"));
        assert!(check_policy_list(&list(&["nobw", "nobw"])).is_err());
        assert!(check_policy_list(&[]).is_err());
    }
}

/// What `pfsqos pi identify` was asked (see its help).
#[derive(Debug)]
pub struct PiIdentify {
    pub experiment: String,
    pub window: usize,
    pub order: usize,
    pub empty: f64,
    pub saturated: Option<f64>,
    pub offset: bool,
    pub ks_ms: u64,
    pub mp: f64,
    pub seed: Option<u64>,
}

/// `pfsqos pi identify`: the open-loop experiment on a simulated scenario, the fit of eq. 1
/// and the gains of eq. 3-4 (PI paper §3.4-3.5, §4.2; what a site runs on its own system,
/// §5.2).
pub fn pi_identify(path: &Path, args: &PiIdentify) -> Result<(), CliError> {
    use pfsqos_core::control::pi::open_loop_periods;
    use pfsqos_core::control::pi::savgol::SavGol;
    let scenario = load(path)?;
    let choice = pfsqos_core::control::spec::PolicyChoice::parse(&args.experiment)
        .map_err(CliError::BadInput)?;
    if choice.name() != "pi-openloop" {
        return Err(CliError::BadInput(format!(
            "--experiment must be a pi-openloop spec, not `{}`",
            args.experiment
        )));
    }
    // Checked before the run, which takes a while.
    SavGol::new(args.window, args.order)
        .map_err(|e| CliError::BadInput(format!("--window/--order: {e}")))?;
    let seed = args.seed.unwrap_or(scenario.simulation.seed);
    let controller = pfsqos_sim::policy::controller_for_choice(&choice, &scenario, seed);
    let ts_ns = controller
        .period_ns()
        .expect("the open-loop experiment has a sampling time");
    let run = pfsqos_sim::run_with_controller(&scenario, controller, seed, &mut |_, _| {})
        .map_err(|e| CliError::RunFailed(e.to_string()))?;
    let periods = open_loop_periods(&run.control_trace);
    if periods.len() < 3 {
        return Err(CliError::RunFailed(format!(
            "the run measured {} periods; make simulation.duration_s cover the experiment",
            periods.len()
        )));
    }
    fit_and_design(&periods, ts_ns as f64 / 1e9, args, "")
}

/// The static curve, the fit of eq. 1 and the gains of eq. 3-4 over an open-loop experiment's
/// periods sampled every `ts_s`, printed with the `pi` spec that runs them: shared by the
/// simulated form of `pfsqos pi identify` and the recorded one (`--record`, a live cluster's).
/// `source` prefixes the fit's errors (the record's path).
pub(crate) fn fit_and_design(
    periods: &[pfsqos_core::control::pi::OpenLoopPeriod],
    ts_s: f64,
    args: &PiIdentify,
    source: &str,
) -> Result<(), CliError> {
    use pfsqos_core::control::pi::savgol::SavGol;
    use pfsqos_core::control::pi::{
        design_gains, identify, open_loop_record, static_curve, DesignSpec, IdentifyConfig,
    };
    let smoothing = SavGol::new(args.window, args.order)
        .map_err(|e| CliError::BadInput(format!("--window/--order: {e}")))?;
    println!("static curve (mean queue per limit, the first 5 periods of each hold skipped):");
    println!("  limit per client (MiB/s)  mean queue (requests)");
    for (limit, q) in static_curve(periods, 5) {
        println!("  {limit:>24.2}  {q:>21.2}");
    }
    let largest = periods.iter().map(|p| p.queue_rpcs).fold(0.0, f64::max);
    let config = IdentifyConfig {
        smoothing,
        queue_empty_rpcs: args.empty,
        queue_saturated_rpcs: args.saturated.unwrap_or(0.9 * largest),
        pairs_min: 10,
        offset: args.offset,
    };
    let record = open_loop_record(periods);
    let model = identify(&record, &config).map_err(|e| {
        CliError::RunFailed(if source.is_empty() {
            e.to_string()
        } else {
            format!("{source}: {e}")
        })
    })?;
    println!(
        "model (eq. 1{}): {model}, of {} pairs in the record",
        if args.offset {
            ", around the operating point"
        } else {
            ""
        },
        record.len().saturating_sub(1)
    );
    let spec = DesignSpec {
        ts_s,
        ks_s: args.ks_ms as f64 / 1e3,
        mp: args.mp,
    };
    let (gains, poles) =
        design_gains(model.a, model.b, spec).map_err(|e| CliError::RunFailed(e.to_string()))?;
    println!(
        "gains (eq. 3-4, Ks = {} ms, Mp = {}): Kp = {:.4}, Ki = {:.4} MiB/s per request; \
         poles r = {:.4}, θ = {:.4} rad",
        args.ks_ms, args.mp, gains.kp, gains.ki, poles.r, poles.theta_rad
    );
    println!(
        "run it: pi:a={:.6}:b={:.6}:ts_ms={}:ks_ms={}:mp={}",
        model.a,
        model.b,
        (ts_s * 1e3).round() as u64,
        args.ks_ms,
        args.mp
    );
    Ok(())
}

/// Longest trace file read by `pfsqos iez plan`.
pub(crate) const TRACE_FILE_LEN_MAX: u64 = 64 << 20;
/// Most OSTs `pfsqos iez plan` plans over.
const PLAN_OSTS_MAX: u32 = 4096;

/// A first-run trace file, read within [`TRACE_FILE_LEN_MAX`] and parsed by core's
/// `parse_trace`; an empty trace is bad input (`iez plan` and `iez train` both read it).
pub(crate) fn read_trace(
    trace: &Path,
) -> Result<Vec<(String, pfsqos_core::place::profile::TracedFile)>, CliError> {
    let text = read_bounded(trace, TRACE_FILE_LEN_MAX)?;
    let rows = pfsqos_core::place::profile::parse_trace(&text)
        .map_err(|e| CliError::BadInput(format!("{}: {e}", trace.display())))?;
    if rows.is_empty() {
        return Err(CliError::BadInput(format!(
            "{}: no files in the trace",
            trace.display()
        )));
    }
    Ok(rows)
}

/// `pfsqos iez plan`: a first-run trace to `lfs setstripe` commands (see its help).
pub fn iez_plan(
    trace: &Path,
    osses: u32,
    osts_per_oss: u32,
    ost_capacity: u64,
    ost_used: u64,
) -> Result<(), CliError> {
    use pfsqos_core::place::iez::allocate_osts;
    use pfsqos_core::place::profile::{predict_files, TracedFile};
    use pfsqos_core::place::{IezConfig, ServerStats};
    let osts = osses.saturating_mul(osts_per_oss);
    if osts == 0 || osts > PLAN_OSTS_MAX {
        return Err(CliError::BadInput(format!(
            "--osses x --osts-per-oss must be 1..={PLAN_OSTS_MAX} OSTs"
        )));
    }
    if ost_capacity == 0 || ost_used > ost_capacity {
        return Err(CliError::BadInput(
            "--ost-capacity must be positive and at least --ost-used".to_string(),
        ));
    }
    let rows = read_trace(trace)?;
    let traced: Vec<TracedFile> = rows.iter().map(|r| r.1).collect();
    let prediction = predict_files(&traced);
    let stats = ServerStats::uniform(osses, osts_per_oss, ost_capacity, ost_capacity - ost_used);
    let plan = allocate_osts(
        &stats,
        &vec![0; osts as usize],
        &prediction.files,
        &IezConfig::default(),
    )
    .map_err(|e| CliError::RunFailed(e.to_string()))?;
    match prediction.order {
        Some(o) => println!(
            "# forecast: ARIMA({},{},{}), accuracy {:.1} % on the trace",
            o.p,
            o.d,
            o.q,
            prediction.accuracy * 100.0
        ),
        None => println!("# forecast: the trace repeated (too short or constant for ARIMA)"),
    }
    let mut unplaced = 0;
    for ((name, _), allocation) in rows.iter().zip(plan) {
        // A relative name starting with `-` would read as an option of lfs.
        let name = if name.starts_with('-') {
            format!("./{name}")
        } else {
            name.clone()
        };
        let name = &name;
        match allocation {
            Some(a) => {
                let list: Vec<String> = a.osts.iter().map(|o| o.0.to_string()).collect();
                println!(
                    "lfs setstripe -S {} -c {} -o {} {}",
                    a.stripe_size_bytes,
                    a.osts.len(),
                    list.join(","),
                    shell_quote(name)
                );
            }
            None => {
                unplaced += 1;
                println!("# not placed (no room): {}", shell_quote(name));
            }
        }
    }
    if unplaced > 0 {
        eprintln!("{unplaced} files did not fit; Lustre's allocator will place them");
    }
    Ok(())
}

/// `text` as one word for a POSIX shell: single-quoted, each `'` written `'\''`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A file of at most `max` bytes, as text.
pub(crate) fn read_bounded(path: &Path, max: u64) -> Result<String, CliError> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
    if text.len() as u64 > max {
        return Err(CliError::BadInput(format!(
            "{}: longer than {max} bytes",
            path.display()
        )));
    }
    Ok(text)
}
