//! Running long work from Python: on worker threads with the GIL released, while the calling
//! thread polls for signals (Ctrl-C: `KeyboardInterrupt`) and reports progress; every worker
//! is joined before the call returns, and no panic reaches Python.
//!
//! Cancellation: the simulator and the bake-off report progress through a callback and have
//! no stop flag of their own, so a cancelled task's callback unwinds out of the run with
//! [`std::panic::resume_unwind`] (which skips the panic hook: nothing is printed) and the
//! worker catches it. The run's state is dropped; nothing of it is returned.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, Once};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// How often the calling thread checks for signals and redraws progress.
const POLL_PERIOD: Duration = Duration::from_millis(100);
/// A task's progress in parts of this (a finished task counts this much).
const PROGRESS_UNIT: u64 = 1_000_000;
/// Most worker threads (the bake-off's own bound).
pub const THREADS_MAX: usize = pfsqos_bakeoff::runner::THREADS_MAX;
/// Stack of each worker: the command line runs on the main thread's 8 MiB.
const WORKER_STACK_BYTES: usize = 8 << 20;

/// The progress callback a task calls: `(done, total)` in the task's own units (nanoseconds
/// of simulated time, runs of a bake-off); `(0, 0)` reports nothing and only checks for
/// cancellation. It unwinds when the call was cancelled.
pub type Report<'a> = dyn Fn(u64, u64) + Sync + 'a;
/// A unit of work for [`run_tasks`].
pub type Task<'a, R> = Box<dyn FnOnce(&Report<'_>) -> R + Send + 'a>;

/// The payload a cancelled task unwinds with.
struct Cancelled;

/// Set while a cancellation unwinds: the panic hook stays quiet about the bake-off's own
/// re-raise of a worker's unwinding (`std::thread::scope`'s "a scoped thread panicked").
static CANCELLING: AtomicUsize = AtomicUsize::new(0);

/// Keeps the default panic hook for real panics (a bug: its message and location are what a
/// report needs) but silences the re-raise of a cancellation.
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let scoped = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|s| s.contains("scoped thread panicked"));
            if scoped && CANCELLING.load(Ordering::SeqCst) > 0 {
                return;
            }
            default(info);
        }));
    });
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn internal_error(payload: &(dyn Any + Send)) -> PyErr {
    PyRuntimeError::new_err(format!(
        "pfsqos internal error (please report it): {}",
        panic_text(payload)
    ))
}

/// `f`, with a panic turned into a Python `RuntimeError`.
pub fn guard<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| internal_error(p.as_ref()))
}

/// Worker threads: `threads`, or one per core.
pub fn threads(threads: Option<usize>) -> Result<usize, String> {
    match threads {
        Some(n) if (1..=THREADS_MAX).contains(&n) => Ok(n),
        Some(n) => Err(format!("threads={n}: must be 1 to {THREADS_MAX}")),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get().min(THREADS_MAX))),
    }
}

enum Outcome<R> {
    Done(R),
    Cancelled,
    Panicked(String),
}

/// Runs `tasks` on up to `threads` workers with the GIL released and returns their results
/// in task order. Every [`POLL_PERIOD`] and after each finished task the calling thread takes
/// the GIL, checks for signals and calls `progress(done, total)` (both floats, in tasks);
/// a pending `KeyboardInterrupt` (or an exception from `progress`) cancels the tasks, waits
/// for every worker, and is returned.
pub fn run_tasks<R: Send>(
    py: Python<'_>,
    tasks: Vec<Task<'_, R>>,
    threads: usize,
    progress: Option<&PyObject>,
) -> PyResult<Vec<R>> {
    run_on_workers(py, tasks, threads, progress)
}

/// [`run_tasks`] on the calling thread, one task after another: no worker to start or join
/// for a single run. It polls from the tasks' own progress callbacks (the simulator calls its
/// callback every few thousand events), at most every [`POLL_PERIOD`]. Only for tasks that
/// call their callback on the calling thread (not the bake-off, whose workers call it).
pub fn run_inline<R: Send>(
    py: Python<'_>,
    tasks: Vec<Task<'_, R>>,
    progress: Option<&PyObject>,
) -> PyResult<Vec<R>> {
    let n = tasks.len();
    let done_tasks = AtomicUsize::new(0);
    let fraction = AtomicU64::new(0);
    let failure: Mutex<Option<PyErr>> = Mutex::new(None);
    let last_poll = Mutex::new(Instant::now());
    let poll = || -> PyResult<()> {
        let done = done_tasks.load(Ordering::Relaxed) as f64
            + fraction.load(Ordering::Relaxed) as f64 / PROGRESS_UNIT as f64;
        Python::with_gil(|py| {
            py.check_signals()?;
            if let Some(cb) = progress {
                cb.call1(py, (done, n as f64))?;
            }
            Ok(())
        })
    };
    let outcomes: Vec<Outcome<R>> = py.allow_threads(|| {
        let mut outcomes = Vec::with_capacity(n);
        for task in tasks {
            let report = |done: u64, total: u64| {
                if total > 0 {
                    fraction.store(part_of(done, total), Ordering::Relaxed);
                }
                let mut last = last_poll.lock().expect("polled from one thread");
                if last.elapsed() < POLL_PERIOD {
                    return;
                }
                *last = Instant::now();
                drop(last);
                if let Err(e) = poll() {
                    *failure.lock().expect("polled from one thread") = Some(e);
                    std::panic::resume_unwind(Box::new(Cancelled));
                }
            };
            let outcome = match catch_unwind(AssertUnwindSafe(|| task(&report))) {
                Ok(r) => Outcome::Done(r),
                Err(p) if p.is::<Cancelled>() => Outcome::Cancelled,
                Err(p) => Outcome::Panicked(panic_text(p.as_ref())),
            };
            let stop = !matches!(outcome, Outcome::Done(_));
            outcomes.push(outcome);
            fraction.store(0, Ordering::Relaxed);
            done_tasks.fetch_add(1, Ordering::Relaxed);
            if stop {
                break;
            }
        }
        outcomes
    });
    if let Some(e) = failure.into_inner().expect("no poll is running") {
        return Err(e);
    }
    if let Some(cb) = progress {
        cb.call1(py, (n as f64, n as f64))?;
    }
    collect(outcomes.into_iter().map(Some).collect())
}

fn part_of(done: u64, total: u64) -> u64 {
    if total == 0 {
        0
    } else {
        ((done.min(total) as u128 * PROGRESS_UNIT as u128) / total as u128) as u64
    }
}

fn collect<R>(outcomes: Vec<Option<Outcome<R>>>) -> PyResult<Vec<R>> {
    let mut out = Vec::with_capacity(outcomes.len());
    for r in outcomes {
        match r {
            Some(Outcome::Done(r)) => out.push(r),
            Some(Outcome::Panicked(m)) => {
                return Err(PyRuntimeError::new_err(format!(
                    "pfsqos internal error (please report it): {m}"
                )))
            }
            Some(Outcome::Cancelled) | None => {
                return Err(PyRuntimeError::new_err(
                    "a task was cancelled without a reason (please report it)",
                ))
            }
        }
    }
    Ok(out)
}

fn run_on_workers<R: Send>(
    py: Python<'_>,
    tasks: Vec<Task<'_, R>>,
    threads: usize,
    progress: Option<&PyObject>,
) -> PyResult<Vec<R>> {
    let n = tasks.len();
    let threads = threads.clamp(1, n.max(1));
    let tasks: Vec<Mutex<Option<Task<'_, R>>>> =
        tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<Outcome<R>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let fractions: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let next = AtomicUsize::new(0);
    let cancel = AtomicBool::new(false);
    let mut failure: Option<PyErr> = None;

    let poll = |failure: &mut Option<PyErr>| {
        if failure.is_some() {
            return;
        }
        let done: u64 = fractions.iter().map(|f| f.load(Ordering::Relaxed)).sum();
        let r = Python::with_gil(|py| -> PyResult<()> {
            py.check_signals()?;
            if let Some(cb) = progress {
                cb.call1(py, (done as f64 / PROGRESS_UNIT as f64, n as f64))?;
            }
            Ok(())
        });
        if let Err(e) = r {
            *failure = Some(e);
            CANCELLING.fetch_add(1, Ordering::SeqCst);
            cancel.store(true, Ordering::SeqCst);
        }
    };

    let spawned = py.allow_threads(|| {
        std::thread::scope(|scope| -> Result<(), String> {
            let (tx, rx) = mpsc::channel::<()>();
            let mut handles = Vec::with_capacity(threads);
            for _ in 0..threads {
                let tx = tx.clone();
                let worker = || {
                    let tx = tx;
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= n || cancel.load(Ordering::SeqCst) {
                            break;
                        }
                        let task = tasks[i]
                            .lock()
                            .expect("a task slot is taken once")
                            .take()
                            .expect("each task index is handed out once");
                        let fraction = &fractions[i];
                        let report = |done: u64, total: u64| {
                            if cancel.load(Ordering::Relaxed) {
                                std::panic::resume_unwind(Box::new(Cancelled));
                            }
                            if total > 0 {
                                fraction.store(part_of(done, total), Ordering::Relaxed);
                            }
                        };
                        let outcome = match catch_unwind(AssertUnwindSafe(|| task(&report))) {
                            Ok(r) => Outcome::Done(r),
                            Err(_) if cancel.load(Ordering::SeqCst) => Outcome::Cancelled,
                            Err(p) if p.is::<Cancelled>() => Outcome::Cancelled,
                            Err(p) => Outcome::Panicked(panic_text(p.as_ref())),
                        };
                        fraction.store(PROGRESS_UNIT, Ordering::Relaxed);
                        *results[i].lock().expect("a result slot is written once") = Some(outcome);
                        // The caller may have stopped listening (cancelled): nothing to do.
                        let _ = tx.send(());
                    }
                };
                let handle = std::thread::Builder::new()
                    .name("pfsqos-worker".to_string())
                    .stack_size(WORKER_STACK_BYTES)
                    .spawn_scoped(scope, worker)
                    .map_err(|e| format!("cannot start a worker thread: {e}"))?;
                handles.push(handle);
            }
            drop(tx);
            // Until every worker has dropped its sender (finished or cancelled).
            while let Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(POLL_PERIOD) {
                poll(&mut failure);
            }
            // Joined one by one (the scope's own wait ends when each closure returns, which
            // can be a moment before its thread has exited). A worker catches every panic of
            // its tasks, so joining cannot fail but for a bug in this loop.
            for h in handles {
                h.join()
                    .map_err(|p| format!("a worker thread failed: {}", panic_text(p.as_ref())))?;
            }
            Ok(())
        })
    });
    if cancel.load(Ordering::SeqCst) {
        CANCELLING.fetch_sub(1, Ordering::SeqCst);
    }
    if let Err(e) = spawned {
        // Workers started before the failure have been joined by the scope.
        return Err(PyRuntimeError::new_err(e));
    }
    if let Some(e) = failure {
        return Err(e);
    }
    // The last redraw: everything done.
    if let Some(cb) = progress {
        cb.call1(py, (n as f64, n as f64))?;
    }
    collect(
        results
            .into_iter()
            .map(|r| r.into_inner().expect("workers are joined"))
            .collect(),
    )
}
