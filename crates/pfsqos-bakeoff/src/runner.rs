//! The plan (designs × workloads × seeds, plus one solo run per job, workload and seed), the
//! parallel work queue and the resumable run files.
//!
//! Seeds are `1..=N`. A run with seed `s` runs the workload with `simulation.seed = s` (so an
//! `[appset]` without its own seed generates its set from `s`) and passes `s` to the engine.
//!
//! Each run writes `runs/<workload-stem>/<design>/seed-<s>.json` (or
//! `solo/<workload-stem>/job-<index>/seed-<s>.json`) atomically (a temporary file renamed into
//! place). The file carries a key: the SHA-256 of this crate's version, the workload file's text,
//! the design (name, policy, placement) or the solo job's index and id, and the seed. A file
//! whose key matches is reused; a missing, unreadable or stale one is redone. A run the
//! simulator refuses (e.g. a controller the fluid engine cannot run) is recorded as skipped with
//! the simulator's reason, in its file too, so a resumed bakeoff does not retry it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use pfsqos_sim::Scenario;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::decide_timing::{
    histogram_of, DecideHistogram, DecideLog, DecideStats, TimedController,
};
use crate::metrics::{JobRecord, RunRecord};
use crate::suite::{Design, Suite};
use crate::CRATE_VERSION;
use pfsqos_core::control::Controller;

/// Largest run file read back (a run file of a suite scenario is tens of KiB).
pub const RUN_FILE_LEN_MAX: u64 = 256 << 20;
/// Most worker threads.
pub const THREADS_MAX: usize = 256;

/// What to run and where.
#[derive(Clone, Debug)]
pub struct BakeoffOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Designs to run, in report order (a subset of the suite's).
    pub designs: Vec<Design>,
    /// Seeds `1..=seeds`.
    pub seeds: u32,
    /// Worker threads (at least 1).
    pub threads: usize,
}

/// One finished task, reported to the progress callback (from a worker thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressUpdate {
    pub done: usize,
    pub total: usize,
    /// Of `done`, how many ran (the rest were reused from their files).
    pub executed: usize,
}

/// How a shared run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ran(RunRecord),
    /// The simulator refused the combination: its reason.
    Skipped(String),
}

/// A run file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct RunFile {
    key: String,
    crate_version: String,
    workload: String,
    /// Design name, or `solo:<job index>`.
    design: String,
    seed: u64,
    /// This machine's wall clock for the run (timing only; never in bakeoff.json).
    wall_ns: u64,
    /// This machine's wall clock per controller decision (timing only; module
    /// `decide_timing`).
    decide: DecideHistogram,
    outcome: Outcome,
}

/// One task of the plan.
#[derive(Clone, Debug)]
enum Task {
    Shared {
        workload: usize,
        design: usize,
        seed: u64,
    },
    Solo {
        workload: usize,
        seed: u64,
        job: usize,
        job_id: String,
        scenario: Box<Scenario>,
    },
}

/// Wall-clock cost of one run (this machine's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimingEntry {
    pub workload: String,
    /// Design name, or `solo:<job index>`.
    pub design: String,
    pub seed: u64,
    pub wall_ns: u64,
    /// Simulated RPCs of the run (0 for a skipped one).
    pub rpcs: u64,
    /// Whether this invocation ran it (false: read from its file, timed when it ran).
    pub executed: bool,
    /// Controller decisions of the run and their wall-clock median and p99.
    pub decide: DecideStats,
    /// Their histogram, which merges into a design's percentiles (not written per run).
    #[serde(skip)]
    pub decide_histogram: DecideHistogram,
}

/// The solo runs of one workload and seed: one per job, in the shared run's job order, or why
/// there are none.
#[derive(Clone, Debug, PartialEq)]
pub struct SoloSet {
    pub job_ids: Vec<String>,
    /// Per job: the job's record alone, or why the solo run did not happen.
    pub records: Vec<Result<JobRecord, String>>,
}

/// Everything a bakeoff produced, in plan order.
#[derive(Clone, Debug)]
pub struct BakeoffResult {
    pub suite_name: String,
    pub suite_description: String,
    pub designs: Vec<Design>,
    pub seeds: Vec<u64>,
    /// Per workload (suite order): its file, stem, scenario name and description.
    pub workloads: Vec<WorkloadInfo>,
    /// `outcomes[w][d][s]`: workload, design (options order), seed index.
    pub outcomes: Vec<Vec<Vec<Outcome>>>,
    /// `solo[w][s]`.
    pub solo: Vec<Vec<Result<SoloSet, String>>>,
    pub timing: Vec<TimingEntry>,
    pub executed_runs: usize,
    pub reused_runs: usize,
    /// Wall time of the whole bakeoff on this machine.
    pub wall_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadInfo {
    pub file: String,
    pub stem: String,
    pub name: String,
    pub description: String,
    /// The suite's stated expectations for this workload.
    pub expectations: Vec<crate::suite::Expectation>,
}

/// A bakeoff that could not run at all (output directory, a run file that cannot be written).
#[derive(Debug)]
pub struct BakeoffError(pub String);

impl std::fmt::Display for BakeoffError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BakeoffError {}

/// The workload as run with seed `seed`.
pub fn seeded(scenario: &Scenario, seed: u64) -> Scenario {
    let mut s = scenario.clone();
    s.simulation.seed = seed;
    s
}

/// The workload under `design` (its placement override applied and the result validated
/// again), or why the combination cannot run.
pub fn scenario_for_design(scenario: &Scenario, design: &Design) -> Result<Scenario, String> {
    let mut s = scenario.clone();
    if let Some(p) = &design.placement {
        s.cluster.placement = p.clone();
        s.validate(&format!("{} with placement `{p}`", scenario.name))
            .map_err(|e| e.to_string())?;
    }
    Ok(s)
}

/// One scenario per job of `scenario` with only that job, in the order of the shared run's
/// jobs: the explicit `[[job]]`s, then the `[appset]`'s generated jobs, expanded exactly as
/// the fluid engine expands them (`AppSetSpec::generate` over the cluster's OSTs with the
/// simulation seed). A generated job alone starts at time 0 without the batch queue: its time
/// (from its start, module `metrics`) does not include queueing in either run.
pub fn solo_scenarios(scenario: &Scenario) -> Result<Vec<(String, Scenario)>, String> {
    let mut jobs = scenario.jobs.clone();
    if let Some(appset) = &scenario.appset {
        let osts: u32 = scenario.osses.iter().map(|o| o.osts).sum();
        jobs.extend(
            appset
                .generate(osts, scenario.simulation.seed)
                .into_iter()
                .map(|g| g.job),
        );
    }
    jobs.into_iter()
        .map(|job| {
            let mut s = scenario.clone();
            s.appset = None;
            let id = job.id.clone();
            s.jobs = vec![job];
            s.validate(&format!("{} with job `{id}` alone", scenario.name))
                .map_err(|e| e.to_string())?;
            Ok((id, s))
        })
        .collect()
}

fn key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        // Length-prefixed: no two part lists hash the same text.
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn read_run_file(path: &Path, key: &str) -> Option<RunFile> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > RUN_FILE_LEN_MAX {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let file: RunFile = serde_json::from_str(&text).ok()?;
    (file.key == key && file.crate_version == CRATE_VERSION).then_some(file)
}

fn write_atomically(path: &Path, text: &str, unique: usize) -> Result<(), BakeoffError> {
    let dir = path.parent().expect("run files live in a directory");
    std::fs::create_dir_all(dir)
        .map_err(|e| BakeoffError(format!("cannot create {}: {e}", dir.display())))?;
    let tmp = dir.join(format!(".tmp-{}-{unique}", std::process::id()));
    std::fs::write(&tmp, text)
        .map_err(|e| BakeoffError(format!("cannot write {}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        BakeoffError(format!("cannot write {}: {e}", path.display()))
    })
}

struct Prepared<'a> {
    suite: &'a Suite,
    options: &'a BakeoffOptions,
    seeds: Vec<u64>,
    tasks: Vec<Task>,
    /// `solo_plan[w][s]`: the solo job ids, or why there are none.
    solo_plan: Vec<Vec<Result<Vec<String>, String>>>,
}

fn prepare<'a>(suite: &'a Suite, options: &'a BakeoffOptions) -> Prepared<'a> {
    let seeds: Vec<u64> = (1..=u64::from(options.seeds)).collect();
    let mut tasks = Vec::new();
    for (w, _) in suite.workloads.iter().enumerate() {
        for d in 0..options.designs.len() {
            for &seed in &seeds {
                tasks.push(Task::Shared {
                    workload: w,
                    design: d,
                    seed,
                });
            }
        }
    }
    let mut solo_plan = Vec::new();
    for (w, workload) in suite.workloads.iter().enumerate() {
        let mut per_seed = Vec::new();
        for &seed in &seeds {
            match solo_scenarios(&seeded(&workload.scenario, seed)) {
                Ok(list) => {
                    per_seed.push(Ok(list.iter().map(|(id, _)| id.clone()).collect()));
                    for (job, (job_id, scenario)) in list.into_iter().enumerate() {
                        tasks.push(Task::Solo {
                            workload: w,
                            seed,
                            job,
                            job_id,
                            scenario: Box::new(scenario),
                        });
                    }
                }
                Err(reason) => per_seed.push(Err(reason)),
            }
        }
        solo_plan.push(per_seed);
    }
    Prepared {
        suite,
        options,
        seeds,
        tasks,
        solo_plan,
    }
}

/// What a task produced.
struct Done {
    file: RunFile,
    executed: bool,
}

fn run_task(p: &Prepared, index: usize, during: &Tick<'_>) -> Result<Done, BakeoffError> {
    let task = &p.tasks[index];
    let (path, key, workload, design_label, seed) = match task {
        Task::Shared {
            workload,
            design,
            seed,
        } => {
            let w = &p.suite.workloads[*workload];
            let d = &p.options.designs[*design];
            let key = key(&[
                "pfsqos-bakeoff run",
                CRATE_VERSION,
                &w.text,
                &d.name,
                &d.policy,
                d.placement.as_deref().unwrap_or(""),
                &seed.to_string(),
            ]);
            let path = p
                .options
                .out
                .join("runs")
                .join(&w.stem)
                .join(&d.name)
                .join(format!("seed-{seed}.json"));
            (path, key, w, d.name.clone(), *seed)
        }
        Task::Solo {
            workload,
            seed,
            job,
            job_id,
            ..
        } => {
            let w = &p.suite.workloads[*workload];
            let key = key(&[
                "pfsqos-bakeoff solo",
                CRATE_VERSION,
                &w.text,
                &job.to_string(),
                job_id,
                &seed.to_string(),
            ]);
            let path = p
                .options
                .out
                .join("solo")
                .join(&w.stem)
                .join(format!("job-{job}"))
                .join(format!("seed-{seed}.json"));
            (path, key, w, format!("solo:{job}"), *seed)
        }
    };
    if let Some(file) = read_run_file(&path, &key) {
        return Ok(Done {
            file,
            executed: false,
        });
    }
    let started = Instant::now();
    let decide_log = DecideLog::default();
    let outcome = match task {
        Task::Shared { design, .. } => {
            let d = &p.options.designs[*design];
            match scenario_for_design(&seeded(&workload.scenario, seed), d) {
                Err(reason) => Outcome::Skipped(reason),
                Ok(s) => {
                    // The controller's decide calls are timed on this machine's clock by a
                    // wrapper that changes nothing else (module decide_timing).
                    let mut wrap =
                        |c: Box<dyn Controller>| TimedController::wrap(c, decide_log.clone());
                    match pfsqos_sim::run_wrapped(&s, &d.choice, seed, &mut wrap, &mut |_, _| {
                        during()
                    }) {
                        Ok(run) => Outcome::Ran(RunRecord::from_run(&run)),
                        Err(e) => Outcome::Skipped(e.to_string()),
                    }
                }
            }
        }
        Task::Solo { scenario, .. } => {
            match pfsqos_sim::run(scenario, "nobw", seed, &mut |_, _| during()) {
                Ok(run) => Outcome::Ran(RunRecord::from_run(&run)),
                Err(e) => Outcome::Skipped(e.to_string()),
            }
        }
    };
    let wall_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let file = RunFile {
        key,
        crate_version: CRATE_VERSION.to_string(),
        workload: workload.stem.clone(),
        design: design_label,
        seed,
        wall_ns,
        decide: histogram_of(&decide_log),
        outcome,
    };
    let text = serde_json::to_string(&file).expect("run files serialize");
    write_atomically(&path, &text, index)?;
    // What later steps use is what a resumed bakeoff would read: the file's text parsed back.
    let file: RunFile = serde_json::from_str(&text).expect("a run file just written parses");
    Ok(Done {
        file,
        executed: true,
    })
}

/// Called from inside every run, from the worker running it, every few thousand simulated
/// events (the simulator's progress callback).
pub type Tick<'a> = dyn Fn() + Sync + 'a;

/// Runs (or reuses) every task of the plan over `options.threads` workers and assembles the
/// results in plan order. `progress` is called after each task, from the worker that did it.
pub fn run_bakeoff(
    suite: &Suite,
    options: &BakeoffOptions,
    progress: &(dyn Fn(ProgressUpdate) + Sync),
) -> Result<BakeoffResult, BakeoffError> {
    run_bakeoff_ticking(suite, options, progress, &|| {})
}

/// [`run_bakeoff`], calling `during` from inside every run as it goes, so that a caller can
/// abandon the bake-off mid-run (the Python package, on Ctrl-C): `during` may unwind
/// (`std::panic::resume_unwind`), which drops the runs under way without writing their run
/// files (finished runs keep theirs) and, once every worker has stopped, unwinds out of this
/// call. Each worker stops at its run's next call of `during`.
pub fn run_bakeoff_ticking(
    suite: &Suite,
    options: &BakeoffOptions,
    progress: &(dyn Fn(ProgressUpdate) + Sync),
    during: &Tick<'_>,
) -> Result<BakeoffResult, BakeoffError> {
    assert!(
        (1..=crate::suite::SEEDS_MAX).contains(&options.seeds),
        "seeds checked by the caller"
    );
    let started = Instant::now();
    std::fs::create_dir_all(&options.out)
        .map_err(|e| BakeoffError(format!("cannot create {}: {e}", options.out.display())))?;
    let p = prepare(suite, options);
    let total = p.tasks.len();
    let next = AtomicUsize::new(0);
    // (runs done, runs executed rather than resumed), updated together: two counters
    // updated apart let a worker report another's executed run before its done one
    // (executed > done, seen in CI).
    let counts: Mutex<(usize, usize)> = Mutex::new((0, 0));
    let results: Mutex<Vec<Option<Result<Done, BakeoffError>>>> =
        Mutex::new((0..total).map(|_| None).collect());
    let threads = options.threads.clamp(1, THREADS_MAX).min(total.max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let r = run_task(&p, i, during);
                let failed = r.is_err();
                let executed_now = matches!(&r, Ok(d) if d.executed);
                results.lock().expect("no worker panics holding the lock")[i] = Some(r);
                let (done, executed) = {
                    let mut c = counts.lock().expect("no worker panics holding the lock");
                    c.0 += 1;
                    c.1 += usize::from(executed_now);
                    assert!(c.1 <= c.0 && c.0 <= total);
                    *c
                };
                progress(ProgressUpdate {
                    done,
                    total,
                    executed,
                });
                if failed {
                    // Stop handing out work: the output directory is broken.
                    next.store(total, Ordering::Relaxed);
                }
            });
        }
    });
    let results = results.into_inner().expect("workers finished");
    let mut files = Vec::with_capacity(total);
    let mut executed_runs = 0;
    for r in results {
        match r {
            Some(Ok(d)) => {
                executed_runs += usize::from(d.executed);
                files.push(d);
            }
            Some(Err(e)) => return Err(e),
            None => return Err(BakeoffError("a run was not done".to_string())),
        }
    }
    assemble(&p, files, executed_runs, started)
}

fn assemble(
    p: &Prepared,
    files: Vec<Done>,
    executed_runs: usize,
    started: Instant,
) -> Result<BakeoffResult, BakeoffError> {
    let n_seeds = p.seeds.len();
    let n_designs = p.options.designs.len();
    let n_workloads = p.suite.workloads.len();
    let mut outcomes: Vec<Vec<Vec<Option<Outcome>>>> =
        vec![vec![vec![None; n_seeds]; n_designs]; n_workloads];
    let mut solo_outcomes: Vec<Vec<Vec<Outcome>>> = vec![vec![Vec::new(); n_seeds]; n_workloads];
    let mut timing = Vec::with_capacity(files.len());
    let seed_index = |seed: &u64| {
        p.seeds
            .iter()
            .position(|x| x == seed)
            .expect("planned seed")
    };
    for (task, done) in p.tasks.iter().zip(files) {
        let rpcs = match &done.file.outcome {
            Outcome::Ran(r) => r.rpcs,
            Outcome::Skipped(_) => 0,
        };
        timing.push(TimingEntry {
            workload: done.file.workload.clone(),
            design: done.file.design.clone(),
            seed: done.file.seed,
            wall_ns: done.file.wall_ns,
            rpcs,
            executed: done.executed,
            decide: done.file.decide.stats(),
            decide_histogram: done.file.decide.clone(),
        });
        match task {
            Task::Shared {
                workload,
                design,
                seed,
            } => {
                let cell = &mut outcomes[*workload][*design][seed_index(seed)];
                assert!(cell.is_none(), "one run per cell");
                *cell = Some(done.file.outcome);
            }
            Task::Solo { workload, seed, .. } => {
                // Solo tasks of one workload and seed are planned in job order.
                solo_outcomes[*workload][seed_index(seed)].push(done.file.outcome);
            }
        }
    }
    let outcomes: Vec<Vec<Vec<Outcome>>> = outcomes
        .into_iter()
        .map(|per_design| {
            per_design
                .into_iter()
                .map(|per_seed| {
                    per_seed
                        .into_iter()
                        .map(|o| o.expect("every cell planned"))
                        .collect()
                })
                .collect()
        })
        .collect();
    let solo = p
        .solo_plan
        .iter()
        .zip(solo_outcomes)
        .map(|(per_seed, outs)| {
            per_seed
                .iter()
                .zip(outs)
                .map(|(plan, outs)| {
                    let job_ids = plan.clone()?;
                    assert_eq!(job_ids.len(), outs.len(), "one solo run per job");
                    let records = outs
                        .into_iter()
                        .map(|o| match o {
                            Outcome::Ran(mut r) => {
                                assert_eq!(r.jobs.len(), 1, "a solo run has one job");
                                Ok(r.jobs.remove(0))
                            }
                            Outcome::Skipped(reason) => Err(reason),
                        })
                        .collect();
                    Ok(SoloSet { job_ids, records })
                })
                .collect()
        })
        .collect();
    Ok(BakeoffResult {
        suite_name: p.suite.name.clone(),
        suite_description: p.suite.description.clone(),
        designs: p.options.designs.clone(),
        seeds: p.seeds.clone(),
        workloads: p
            .suite
            .workloads
            .iter()
            .map(|w| WorkloadInfo {
                file: w.file.clone(),
                stem: w.stem.clone(),
                name: w.scenario.name.clone(),
                description: w.scenario.description.clone(),
                expectations: p
                    .suite
                    .expectations
                    .iter()
                    .filter(|e| e.workload == w.file)
                    .cloned()
                    .collect(),
            })
            .collect(),
        outcomes,
        solo,
        timing,
        executed_runs,
        reused_runs: p.tasks.len() - executed_runs,
        wall_ns: u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_length_prefixed() {
        assert_ne!(key(&["ab", "c"]), key(&["a", "bc"]));
        assert_eq!(key(&["x"]), key(&["x"]));
        assert_eq!(key(&["x"]).len(), 64);
    }
}
