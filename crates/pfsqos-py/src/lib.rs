//! `pfsqos._native`: the Rust half of the Python package `pfsqos` (python/pfsqos/). A thin
//! binding over the same crates the command line calls: scenarios are parsed and validated by
//! `pfsqos_sim::Scenario` (so errors carry the command line's messages), runs are
//! `pfsqos_sim::run`, summaries `pfsqos_report::summarize`, the bake-off
//! `pfsqos_bakeoff::run_bakeoff` and trace import `pfsqos_darshan::import`.
//!
//! Boundary rules: every long call releases the GIL and runs on worker threads that the call
//! joins before it returns (no thread outlives a call); the calling thread polls for signals
//! (Ctrl-C) and reports progress meanwhile; a panic never reaches Python (it becomes a
//! `RuntimeError`).

mod convert;
mod drive;

use std::path::PathBuf;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use pfsqos_bakeoff::metrics::{JobRecord, RunRecord};
use pfsqos_bakeoff::policy_input;
use pfsqos_sim::{PolicyChoice, RunOutput, Scenario};

pyo3::create_exception!(
    pfsqos,
    Error,
    PyValueError,
    "Base of the errors pfsqos raises for bad input."
);
pyo3::create_exception!(
    pfsqos,
    ScenarioError,
    Error,
    "A scenario (file, text or dict) is invalid or cannot be read: the message names the file, the field, the value and what is allowed, as the command line prints it."
);
pyo3::create_exception!(
    pfsqos,
    PolicyError,
    Error,
    "A policy spec is unknown or invalid, or cannot run on the scenario: the message is the command line's."
);

/// Most seeds one `compare` call runs per policy.
const COMPARE_SEEDS_MAX: usize = 1000;

/// A bad-input message as the command line prints it: the message, then "; did you mean ..."
/// when it refuses an unknown policy name close to a known one.
fn cli_text(message: &str) -> String {
    format!("{message}{}", policy_input::policy_suggestion(message))
}

/// A scenario error as a Python `ScenarioError`, with its parts as attributes.
fn scenario_err(py: Python<'_>, e: &pfsqos_sim::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(cli_text(&e.to_string()));
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail in practice; the message
    // alone is the contract, so a failure here is not worth a second error.
    let _ = value.setattr("file", e.file.as_str());
    let _ = value.setattr("field", e.field.as_str());
    let _ = value.setattr("value", e.value.as_deref());
    let _ = value.setattr("reason", e.message.as_str());
    err
}

fn policy_err(message: &str) -> PyErr {
    PolicyError::new_err(cli_text(message))
}

/// A scenario as the Python side holds it: its document (the TOML tree as dicts and lists),
/// the file name errors show and the directory device profiles are read from.
struct Source<'py> {
    doc: Bound<'py, PyDict>,
    file: String,
    base_dir: Option<PathBuf>,
}

impl<'py> Source<'py> {
    fn new(doc: Bound<'py, PyDict>, file: String, base_dir: Option<String>) -> Self {
        Source {
            doc,
            file,
            base_dir: base_dir.map(PathBuf::from),
        }
    }

    /// The document as scenario text.
    fn text(&self) -> PyResult<String> {
        let py = self.doc.py();
        let table = convert::py_to_table(&self.doc)
            .map_err(|m| scenario_err(py, &bare_error(&self.file, m)))?;
        toml::to_string(&table).map_err(|e| {
            scenario_err(
                py,
                &bare_error(&self.file, format!("cannot be written as TOML: {e}")),
            )
        })
    }

    /// Parsed and validated exactly as `pfsqos sim FILE` does.
    fn scenario(&self) -> PyResult<Scenario> {
        let py = self.doc.py();
        let text = self.text()?;
        let file = self.file.clone();
        let base = self.base_dir.clone();
        drive::guard(|| Scenario::from_toml_str_in(&text, &file, base.as_deref()))?
            .map_err(|e| scenario_err(py, &e))
    }
}

fn bare_error(file: &str, message: String) -> pfsqos_sim::ScenarioError {
    pfsqos_sim::ScenarioError {
        file: file.to_string(),
        field: String::new(),
        value: None,
        message,
    }
}

/// Reads and validates a scenario file as `pfsqos sim` does; returns its document.
#[pyfunction]
fn load_scenario<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let loaded = drive::guard(|| Scenario::load(&path))?;
    loaded.map_err(|e| scenario_err(py, &e))?;
    // Validated: the file reads and is TOML.
    let text = std::fs::read_to_string(&path).map_err(|e| {
        scenario_err(
            py,
            &bare_error(&path.display().to_string(), format!("cannot read: {e}")),
        )
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| scenario_err(py, &bare_error(&path.display().to_string(), format!("{e}"))))?;
    convert::table_to_py(py, &table)
}

/// Parses scenario text (as a file of name `file` in `base_dir` would be); returns its
/// document.
#[pyfunction]
#[pyo3(signature = (text, file, base_dir=None))]
fn parse_scenario<'py>(
    py: Python<'py>,
    text: &str,
    file: &str,
    base_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    drive::guard(|| Scenario::from_toml_str_in(text, file, base_dir.as_deref()))?
        .map_err(|e| scenario_err(py, &e))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| scenario_err(py, &bare_error(file, format!("{e}"))))?;
    convert::table_to_py(py, &table)
}

/// Validates a document; raises `ScenarioError` with the command line's message.
#[pyfunction]
#[pyo3(signature = (doc, file, base_dir=None))]
fn check_scenario(doc: Bound<'_, PyDict>, file: String, base_dir: Option<String>) -> PyResult<()> {
    Source::new(doc, file, base_dir).scenario().map(|_| ())
}

/// A document as TOML text (not validated).
#[pyfunction]
fn to_toml(doc: Bound<'_, PyDict>) -> PyResult<String> {
    Source::new(doc, "<dict>".to_string(), None).text()
}

/// One finished run: the simulator's output, read by the Python `Run`, and when the call ran
/// each job alone, the jobs' slowdowns.
#[pyclass(frozen, module = "pfsqos._native")]
struct RunData {
    run: RunOutput,
    /// Per job (the run's order): `(time alone in seconds, slowdown)`, both absent where the
    /// job has none; `None` when the jobs were not run alone.
    alone: Option<Vec<(Option<f64>, Option<f64>)>>,
}

impl RunData {
    fn new(run: RunOutput, alone: Option<&[Option<JobRecord>]>) -> RunData {
        let alone = alone.map(|solo| {
            // The bake-off's own definition and code (`pfsqos_bakeoff::metrics`): the job's
            // progress rate alone over its progress rate in this run.
            let record = RunRecord::from_run(&run);
            assert_eq!(solo.len(), record.jobs.len(), "one solo run per job");
            let slow = pfsqos_bakeoff::metrics::slowdowns(&record, solo);
            solo.iter()
                .zip(slow)
                .map(|(a, s)| (a.as_ref().map(|a| a.time_s), s))
                .collect()
        });
        RunData { run, alone }
    }
}

#[pymethods]
impl RunData {
    /// `summary.json` of the run, byte for byte as `pfsqos sim` writes it.
    fn summary_json(&self) -> PyResult<String> {
        drive::guard(|| pfsqos_report::summary_json(&self.run))
    }

    #[getter]
    fn policy(&self) -> &str {
        &self.run.policy
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.run.seed
    }

    #[getter]
    fn bin_s(&self) -> f64 {
        self.run.bin_ns as f64 / 1e9
    }

    /// The timeseries as columns, one row per (bin, job, OST) with bytes moved (the rows of
    /// `timeseries.csv` but its per-job `all` totals): `(time_s, job, ost, bytes, job_names,
    /// ost_names)`, the first four as little-endian f64, u32 codes, u32 codes and u64 bytes.
    fn timeseries_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let cols = drive::guard(|| convert::timeseries_columns(&self.run))?;
        let items: Vec<PyObject> = vec![
            PyBytes::new(py, &cols.time_s).into_any().unbind(),
            PyBytes::new(py, &cols.job).into_any().unbind(),
            PyBytes::new(py, &cols.ost).into_any().unbind(),
            PyBytes::new(py, &cols.bytes).into_any().unbind(),
            PyList::new(py, &cols.job_names)?.into_any().unbind(),
            PyList::new(py, &cols.ost_names)?.into_any().unbind(),
        ];
        PyList::new(py, items)
    }

    /// Per job: `(alone_time_s, slowdown)` (each `None` where the job has none), or `None`
    /// when the call did not run the jobs alone.
    fn alone(&self) -> Option<Vec<(Option<f64>, Option<f64>)>> {
        self.alone.clone()
    }

    /// `control_trace.csv` of the run, or `None` when the run recorded no trace.
    fn control_trace_csv(&self) -> PyResult<Option<String>> {
        if self.run.control_trace.is_empty() {
            return Ok(None);
        }
        drive::guard(|| Some(pfsqos_report::control_trace_csv(&self.run)))
    }
}

/// The policy `pfsqos sim` runs: `policy`, checked, or the scenario's `policy.default`.
fn chosen_policy(
    py: Python<'_>,
    src: &Source<'_>,
    sc: &Scenario,
    policy: Option<String>,
) -> PyResult<PolicyChoice> {
    match policy {
        Some(p) => PolicyChoice::parse(&p).map_err(|m| policy_err(&m)),
        None => {
            policy_input::check_scenario_policy(&src.file, "policy.default", &sc.policy.default)
                .map_err(|e| scenario_err(py, &e))
        }
    }
}

/// What a task of a run call produces.
enum Done {
    /// The run under a policy (boxed: a run's output is large, a job record small).
    Shared(Box<RunOutput>),
    /// One job's record, run alone.
    Alone(Option<JobRecord>),
}

/// One run of the simulator as a task of [`drive::run_tasks`].
fn sim_task<'a>(
    scenario: &'a Scenario,
    policy: PolicyChoice,
    seed: u64,
) -> drive::Task<'a, Result<Done, String>> {
    Box::new(move |report: &drive::Report<'_>| {
        pfsqos_sim::run(scenario, &policy, seed, &mut |now_ns, end_ns| {
            report(now_ns, end_ns)
        })
        .map(|run| Done::Shared(Box::new(run)))
        .map_err(|e| format!("cannot run under policy `{}`: {e}", policy.spec()))
    })
}

/// The runs of each job of `scenario` alone with `seed`, exactly as the bake-off runs them for
/// its slowdowns (`pfsqos_bakeoff::runner::solo_scenarios`, under `nobw`): one task per job, in
/// the run's job order. A solo run that cannot run gives no record (no slowdown), as in the
/// bake-off.
fn solo_tasks<'a>(
    py: Python<'_>,
    file: &str,
    scenario: &Scenario,
    seed: u64,
) -> PyResult<Vec<drive::Task<'a, Result<Done, String>>>> {
    let solo = drive::guard(|| pfsqos_bakeoff::runner::solo_scenarios(scenario))?
        .map_err(|m| scenario_err(py, &bare_error(file, m)))?;
    Ok(solo
        .into_iter()
        .map(|(_, alone)| -> drive::Task<'a, Result<Done, String>> {
            Box::new(move |report: &drive::Report<'_>| {
                let record = pfsqos_sim::run(&alone, "nobw", seed, &mut |now_ns, end_ns| {
                    report(now_ns, end_ns)
                })
                .ok()
                .map(|run| RunRecord::from_run(&run));
                Ok(Done::Alone(record.map(|r| {
                    assert_eq!(r.jobs.len(), 1, "a solo scenario holds one job");
                    r.jobs.into_iter().next().expect("one job")
                })))
            })
        })
        .collect())
}

/// The results of `runs` shared tasks and (when `alone`) one solo set per seed: `results`
/// are in task order, the shared runs first (`seeds_of[i]` is run `i`'s index among the
/// `seeds` seeds), then the solo runs of each seed in job order.
fn assemble(
    results: Vec<Result<Done, String>>,
    runs: usize,
    seeds_of: &[usize],
    seeds: usize,
    solo_jobs: usize,
    alone: bool,
) -> PyResult<Vec<RunData>> {
    let mut shared = Vec::with_capacity(runs);
    let mut solo: Vec<Option<JobRecord>> = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r.map_err(|m| policy_err(&m))? {
            Done::Shared(run) => {
                assert!(i < runs, "shared runs come first");
                shared.push(*run);
            }
            Done::Alone(record) => solo.push(record),
        }
    }
    assert_eq!(shared.len(), runs);
    assert_eq!(seeds_of.len(), runs);
    assert_eq!(solo.len(), if alone { solo_jobs * seeds } else { 0 });
    Ok(shared
        .into_iter()
        .zip(seeds_of)
        .map(|(run, &s)| {
            let set = alone.then(|| &solo[s * solo_jobs..(s + 1) * solo_jobs]);
            RunData::new(run, set)
        })
        .collect())
}

/// Runs `doc` under `policy` (default: the scenario's) with `seed` (default: the scenario's);
/// with `alone`, also each job alone (on `threads` workers) for the jobs' slowdowns.
#[pyfunction]
#[pyo3(signature = (doc, file, base_dir, policy=None, seed=None, alone=false, threads=None, progress=None))]
#[allow(clippy::too_many_arguments)] // one per keyword of the Python call
fn simulate(
    py: Python<'_>,
    doc: Bound<'_, PyDict>,
    file: String,
    base_dir: Option<String>,
    policy: Option<String>,
    seed: Option<u64>,
    alone: bool,
    threads: Option<usize>,
    progress: Option<PyObject>,
) -> PyResult<RunData> {
    let src = Source::new(doc, file, base_dir);
    let scenario = src.scenario()?;
    let policy = chosen_policy(py, &src, &scenario, policy)?;
    let seed = seed.unwrap_or(scenario.simulation.seed);
    let threads = drive::threads(threads).map_err(Error::new_err)?;
    let mut tasks = vec![sim_task(&scenario, policy, seed)];
    let mut solo_jobs = 0;
    if alone {
        let solo = solo_tasks(py, &src.file, &scenario, seed)?;
        solo_jobs = solo.len();
        tasks.extend(solo);
    }
    let threads = if alone { threads } else { 1 };
    let results = drive::run_tasks(py, tasks, threads, progress.as_ref())?;
    let mut out = assemble(results, 1, &[0], 1, solo_jobs, alone)?;
    Ok(out.pop().expect("one run"))
}

/// Runs `doc` under every policy (default: the scenario's `policy.compare`) for every seed
/// (default: the scenario's), on `threads` workers; results in policy-major order.
#[pyfunction]
#[pyo3(signature = (doc, file, base_dir, policies=None, seeds=None, alone=false, threads=None, progress=None))]
#[allow(clippy::too_many_arguments)] // one per keyword of the Python call
fn compare(
    py: Python<'_>,
    doc: Bound<'_, PyDict>,
    file: String,
    base_dir: Option<String>,
    policies: Option<Vec<String>>,
    seeds: Option<Vec<u64>>,
    alone: bool,
    threads: Option<usize>,
    progress: Option<PyObject>,
) -> PyResult<Vec<RunData>> {
    let src = Source::new(doc, file, base_dir);
    let scenario = src.scenario()?;
    let policies = match policies {
        Some(list) => policy_input::check_policy_list(&list).map_err(|m| policy_err(&m))?,
        None => {
            for (i, p) in scenario.policy.compare.iter().enumerate() {
                policy_input::check_scenario_policy(&src.file, &format!("policy.compare[{i}]"), p)
                    .map_err(|e| scenario_err(py, &e))?;
            }
            policy_input::check_policy_list(&scenario.policy.compare).map_err(|m| policy_err(&m))?
        }
    };
    let seeds = seeds.unwrap_or_else(|| vec![scenario.simulation.seed]);
    if seeds.is_empty() || seeds.len() > COMPARE_SEEDS_MAX {
        return Err(Error::new_err(format!(
            "seeds: 1 to {COMPARE_SEEDS_MAX} seeds, got {}",
            seeds.len()
        )));
    }
    for (i, s) in seeds.iter().enumerate() {
        if seeds[..i].contains(s) {
            return Err(Error::new_err(format!("seeds: seed {s} is listed twice")));
        }
    }
    let threads = drive::threads(threads).map_err(Error::new_err)?;
    let mut tasks = Vec::with_capacity(policies.len() * seeds.len());
    let mut seeds_of = Vec::with_capacity(tasks.capacity());
    for p in &policies {
        for (i, &s) in seeds.iter().enumerate() {
            tasks.push(sim_task(&scenario, p.clone(), s));
            seeds_of.push(i);
        }
    }
    let runs = tasks.len();
    // The solo runs depend on the scenario and the seed only: one set per seed serves every
    // policy.
    let mut solo_jobs = 0;
    if alone {
        for &s in &seeds {
            let solo = solo_tasks(py, &src.file, &scenario, s)?;
            solo_jobs = solo.len();
            tasks.extend(solo);
        }
    }
    let results = if threads == 1 || tasks.len() == 1 {
        drive::run_inline(py, tasks, progress.as_ref())?
    } else {
        drive::run_tasks(py, tasks, threads, progress.as_ref())?
    };
    assemble(results, runs, &seeds_of, seeds.len(), solo_jobs, alone)
}

/// The bake-off on the built-in suite (or the suite directory `suite`): returns
/// `bakeoff.json`'s text. Run files go to `out` (finished runs there are reused).
#[pyfunction]
#[pyo3(signature = (out, designs=None, seeds=None, suite=None, threads=None, progress=None, write_report=false))]
#[allow(clippy::too_many_arguments)] // one per keyword of the Python call
fn bakeoff(
    py: Python<'_>,
    out: PathBuf,
    designs: Option<Vec<String>>,
    seeds: Option<u32>,
    suite: Option<PathBuf>,
    threads: Option<usize>,
    progress: Option<PyObject>,
    write_report: bool,
) -> PyResult<String> {
    let suite = match &suite {
        Some(dir) => pfsqos_bakeoff::Suite::load(dir),
        None => pfsqos_bakeoff::builtin::builtin_suite(),
    }
    .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let designs = match &designs {
        None => suite.designs.clone(),
        Some(names) => {
            if names.is_empty() {
                return Err(PolicyError::new_err("designs: names no design"));
            }
            for (i, n) in names.iter().enumerate() {
                if names[..i].contains(n) {
                    return Err(PolicyError::new_err(format!(
                        "designs: `{}` is listed twice",
                        n.escape_debug()
                    )));
                }
            }
            suite
                .select_designs(names)
                .map_err(|e| PolicyError::new_err(format!("designs: {e}")))?
        }
    };
    let seeds = seeds.unwrap_or(suite.seeds);
    let seeds_max = pfsqos_bakeoff::suite::SEEDS_MAX;
    if !(1..=seeds_max).contains(&seeds) {
        return Err(Error::new_err(format!(
            "seeds {seeds}: must be 1 to {seeds_max}"
        )));
    }
    let threads = drive::threads(threads).map_err(Error::new_err)?;
    let options = pfsqos_bakeoff::BakeoffOptions {
        out: out.clone(),
        designs,
        seeds,
        threads,
    };
    let suite = &suite;
    let options = &options;
    let task: drive::Task<'_, Result<String, String>> =
        Box::new(move |report: &drive::Report<'_>| {
            // From inside every run: a cancelled call unwinds there, at once, rather than at
            // the end of the runs under way.
            let result = pfsqos_bakeoff::runner::run_bakeoff_ticking(
                suite,
                options,
                &|u| report(u.done as u64, u.total as u64),
                &|| report(0, 0),
            )
            .map_err(|e| e.to_string())?;
            let report = if write_report {
                pfsqos_bakeoff::output::write_outputs(&options.out, &result, threads)?
            } else {
                pfsqos_bakeoff::output::build_report(&result)
            };
            Ok(pfsqos_bakeoff::output::bakeoff_json(&report))
        });
    let mut results = drive::run_tasks(py, vec![task], 1, progress.as_ref())?;
    results
        .pop()
        .expect("one task, one result")
        .map_err(PyRuntimeError::new_err)
}

/// Per-job slowdowns of each of `runs` (one scenario, one seed, several policies) against the
/// best of them, as the comparison report computes them (`pfsqos_report::relative_slowdowns`):
/// `[run][job]`, `None` where a job did no I/O in a run.
#[pyfunction]
fn relative_slowdowns(runs: Vec<PyRef<'_, RunData>>) -> PyResult<Vec<Vec<Option<f64>>>> {
    drive::guard(|| {
        let summaries: Vec<_> = runs
            .iter()
            .map(|r| pfsqos_report::summarize(&r.run))
            .collect();
        pfsqos_report::relative_slowdowns(&summaries)
    })
}

/// An option no controller has: the options parser's refusal of it lists the options it takes.
const OPTION_PROBE: &str = "__pfsqos_no_such_option__";

/// The options a controller's spec takes (`adaptbf:period_ms=50`), as its own parser lists
/// them when it refuses an unknown one ("unknown adaptbf option `x` (allowed: period_ms,
/// ...)"); none for a controller that "takes no options".
fn controller_options(d: &pfsqos_core::control::spec::ControllerDescriptor) -> Vec<String> {
    let probe = format!("{OPTION_PROBE}=1");
    match (d.parse)(d.name, &[probe.as_str()]) {
        Ok(_) => panic!("controller `{}` accepted option `{probe}`", d.name),
        Err(message) => message
            .split_once("(allowed: ")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(list, _)| list.split(", ").map(str::to_string).collect())
            .unwrap_or_default(),
    }
}

/// One row of [`policies`]: kind, name, description, details, options.
type PolicyRow = (String, String, String, String, Vec<String>);

/// Every scheduler, controller and placer: `(kind, name, description, details, options)`
/// rows, as `pfsqos policies` lists them, with the options a controller's spec or a placer's
/// takes.
#[pyfunction]
fn policies() -> PyResult<Vec<PolicyRow>> {
    use pfsqos_core::control::spec::CONTROLLERS;
    use pfsqos_core::place::PLACER_ROWS;
    use pfsqos_core::sched::nrs::nrs_policy_rows;
    drive::guard(|| {
        let mut rows: Vec<PolicyRow> = vec![(
            "scheduler".to_string(),
            "fifo".to_string(),
            "FIFO: first come, first served (always present)".to_string(),
            String::new(),
            Vec::new(),
        )];
        for d in nrs_policy_rows::<()>() {
            rows.push((
                "scheduler".into(),
                d.name.into(),
                d.description.into(),
                format!("files: {}", d.params.join(", ")),
                Vec::new(),
            ));
        }
        for d in CONTROLLERS {
            rows.push((
                "controller".into(),
                d.name.into(),
                d.description.into(),
                format!("acts on: {}", policy_input::deployment_text(d.deployment)),
                controller_options(d),
            ));
        }
        for d in PLACER_ROWS {
            rows.push((
                "placer".into(),
                d.name.into(),
                d.description.into(),
                if d.options.is_empty() {
                    String::new()
                } else {
                    format!("options: {}", d.options.join(", "))
                },
                d.options.iter().map(|o| o.to_string()).collect(),
            ));
        }
        rows
    })
}

/// Darshan logs into scenario text, as `pfsqos trace import LOGS [--like FILE]` writes it;
/// `like` is `(label, text)` of the scenario whose system the result takes. Returns the
/// text and the `(log, reason)` of every log left out.
#[pyfunction]
#[pyo3(signature = (logs, like=None, scale=1.0, ranks_per_node=1, strict=false))]
fn import_darshan(
    logs: Vec<PathBuf>,
    like: Option<(String, String)>,
    scale: f64,
    ranks_per_node: u32,
    strict: bool,
) -> PyResult<(String, Vec<(String, String)>)> {
    drive::guard(|| import_logs(&logs, like, scale, ranks_per_node, strict))?
        .map_err(ScenarioError::new_err)
}

fn import_logs(
    logs: &[PathBuf],
    like: Option<(String, String)>,
    scale: f64,
    ranks_per_node: u32,
    strict: bool,
) -> Result<(String, Vec<(String, String)>), String> {
    use pfsqos_darshan::ImportOptions;
    let (inputs, mut refused) = pfsqos_darshan::read_logs(logs);
    // The command line that regenerates the output, as `pfsqos trace import` records it.
    let mut command: Vec<String> = ["pfsqos", "trace", "import"].map(String::from).to_vec();
    command.extend(logs.iter().map(|p| p.to_string_lossy().into_owned()));
    if let Some((label, _)) = &like {
        command.extend(["--like".to_string(), label.clone()]);
    }
    if scale != 1.0 {
        command.extend(["--scale".to_string(), scale.to_string()]);
    }
    if ranks_per_node != 1 {
        command.extend(["--ranks-per-node".to_string(), ranks_per_node.to_string()]);
    }
    let options = ImportOptions {
        like,
        scale,
        ranks_per_node,
        command,
    };
    let imported = if inputs.is_empty() {
        Err(pfsqos_darshan::ImportError("no log could be read".into()))
    } else {
        pfsqos_darshan::import(&inputs, &options)
    };
    let imported = imported.map_err(|e| {
        let mut m = e.to_string();
        for (label, reason) in &refused {
            m.push_str(&format!("; refused {label}: {reason}"));
        }
        m
    })?;
    refused.extend(imported.refused.iter().cloned());
    if strict && !refused.is_empty() {
        return Err(format!(
            "{} of {} logs refused (strict); nothing converted: {}",
            refused.len(),
            logs.len(),
            refused
                .iter()
                .map(|(l, r)| format!("{l}: {r}"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    Ok((imported.toml, refused))
}

/// Panics inside a run on `threads` workers (1: the calling thread), so that the tests can
/// check that no panic reaches the interpreter: the call raises `RuntimeError`.
#[pyfunction]
fn _panic_in_a_run(py: Python<'_>, threads: usize) -> PyResult<()> {
    let tasks: Vec<drive::Task<'_, ()>> = (0..2)
        .map(|i| -> drive::Task<'_, ()> {
            Box::new(move |_: &drive::Report<'_>| panic!("a test panic in task {i}"))
        })
        .collect();
    if threads == 1 {
        drive::run_inline(py, tasks, None)?;
    } else {
        drive::run_tasks(py, tasks, threads, None)?;
    }
    Ok(())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    drive::install_panic_hook();
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    m.add("POLICY_NAMES", pfsqos_sim::POLICY_NAMES.to_vec())?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<RunData>()?;
    m.add_function(wrap_pyfunction!(load_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(parse_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(check_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(bakeoff, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(relative_slowdowns, m)?)?;
    m.add_function(wrap_pyfunction!(import_darshan, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_in_a_run, m)?)?;
    Ok(())
}
