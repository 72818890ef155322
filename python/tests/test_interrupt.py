"""Ctrl-C stops a long run: KeyboardInterrupt, every worker joined, the interpreter usable."""

import os
import signal
import threading
import time

import pytest

import pfsqos


def _workers():
    """This process's pfsqos worker threads (by name: other libraries start threads of their
    own, e.g. an allocator's background thread)."""
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # a thread that just ended
            pass
    return [n for n in names if n == "pfsqos-worker"]


def _no_workers_left():
    """True once no worker thread is left. The call joins its workers before it returns; a
    joined thread's entry in /proc can outlive the join by a moment, hence the short poll (a
    worker still running a simulation would stay for minutes)."""
    deadline = time.monotonic() + 10
    while _workers():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _long(two_jobs):
    """The two-jobs scenario for a simulated day, with files that never finish: minutes of
    wall time, far longer than the test waits."""
    sc = pfsqos.Scenario.load(two_jobs)
    sc.simulation.duration_s = 86400.0
    for job in sc.jobs:
        job.processes[0].size = "1000T"
    return sc


def _interrupt_after_first_progress():
    """A progress callback that sends this process SIGINT once the run is under way (the
    signal a terminal's Ctrl-C sends), as a person would."""
    started = threading.Event()

    def progress(done, total):
        if not started.is_set():
            started.set()
            os.kill(os.getpid(), signal.SIGINT)

    return progress, started


@pytest.mark.parametrize("call", ["simulate", "compare", "compare-one-thread"])
def test_ctrl_c_stops_a_long_run(two_jobs, call):
    sc = _long(two_jobs)
    assert _no_workers_left()
    progress, started = _interrupt_after_first_progress()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        if call == "simulate":
            pfsqos.simulate(sc, policy="adaptbf", progress=progress)
        else:
            pfsqos.compare(sc, policies=["nobw", "static", "adaptbf"],
                           threads=1 if call == "compare-one-thread" else 2, progress=progress)
    assert started.is_set()
    # Workers are joined before the call returns: no thread is left behind.
    assert _no_workers_left()
    # Well before the run could have finished (it takes minutes): it was stopped.
    assert time.monotonic() - t0 < 120
    # The interpreter and the package still work, with the same results as before.
    small = pfsqos.Scenario.load(two_jobs)
    a = pfsqos.simulate(small, policy="adaptbf", seed=1, progress=False)
    b = pfsqos.simulate(small, policy="adaptbf", seed=1, progress=False)
    assert a.summary == b.summary


def test_an_exception_in_the_progress_callback_stops_the_run(two_jobs):
    sc = _long(two_jobs)

    def progress(done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        pfsqos.simulate(sc, policy="nobw", progress=progress)
    assert _no_workers_left()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_panic_never_reaches_the_interpreter(threads):
    from pfsqos import _native

    with pytest.raises(RuntimeError, match="internal error.*a test panic in task"):
        _native._panic_in_a_run(threads)
    assert _no_workers_left()
    # Still usable.
    assert len(pfsqos.policies()) > 0


def _long_suite(two_jobs, tmp_path):
    """A bake-off suite of one long workload (the simulated day of `_long`) and two designs:
    every run of it, shared or alone, takes minutes."""
    suite = tmp_path / "suite"
    suite.mkdir()
    _long(two_jobs).save(suite / "long-day.toml")
    (suite / "suite.toml").write_text(
        'name = "long"\nseeds = 1\nworkloads = ["long-day.toml"]\n'
        '[[design]]\nname = "nobw"\npolicy = "nobw"\n'
        '[[design]]\nname = "adaptbf"\npolicy = "adaptbf"\n'
    )
    return suite


def _run_files(out):
    return sorted(p.relative_to(out) for p in out.rglob("*.json"))


def test_ctrl_c_stops_a_bakeoff_mid_run(two_jobs, tmp_path):
    suite = _long_suite(two_jobs, tmp_path)
    out = tmp_path / "out"
    assert _no_workers_left()
    progress, started = _interrupt_after_first_progress()
    with pytest.raises(KeyboardInterrupt):
        pfsqos.bakeoff(suite=suite, out=out, threads=2, progress=progress)
    assert started.is_set()
    # Every worker, the bake-off's own included, is joined before the call returns.
    assert _no_workers_left()
    # The runs under way were abandoned, not waited for: none finished to write its file
    # (waiting for them, each would have written one).
    assert _run_files(out) == []
    # The interpreter and the package still work, with the same results as before.
    small = pfsqos.Scenario.load(two_jobs)
    a = pfsqos.simulate(small, policy="adaptbf", seed=1, progress=False)
    b = pfsqos.simulate(small, policy="adaptbf", seed=1, progress=False)
    assert a.summary == b.summary


def test_ctrl_c_stops_the_runs_alone(two_jobs):
    sc = _long(two_jobs)
    progress, started = _interrupt_after_first_progress()
    with pytest.raises(KeyboardInterrupt):
        pfsqos.simulate(sc, policy="nobw", alone=True, threads=2, progress=progress)
    assert started.is_set()
    assert _no_workers_left()


def test_a_long_run_releases_the_gil(two_jobs):
    """Another Python thread runs while the simulator does. The progress callback is a C
    function (``dict.__setitem__``), so no Python code runs on the calling thread during the
    run: only if the run releases the GIL can a spinning thread see the polls arrive and send
    the interrupt that ends the run. A run holding the GIL would end minutes later without
    it."""
    sc = _long(two_jobs)
    polls = {}
    stop = threading.Event()
    sent = threading.Event()

    def spin():
        while not stop.is_set():
            if len(polls) >= 3 and not sent.is_set():
                sent.set()
                os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=spin)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            pfsqos.simulate(sc, policy="nobw", progress=polls.__setitem__)
    finally:
        stop.set()
        t.join()
    assert sent.is_set() and len(polls) >= 3
    assert _no_workers_left()


def test_a_progress_bar_follows_the_runs(two_jobs):
    """The bar's total becomes the call's count of runs (the shared run and each job alone),
    and it ends full; with tqdm itself too."""
    from pfsqos import _progress

    class FakeTqdm:
        def __init__(self, total, **_):
            self.total, self.n = total, 0

        def update(self, k):
            self.n += k

        def refresh(self):
            pass

        def close(self):
            pass

    bar = _progress._Bar(FakeTqdm, "simulate", 1)
    quiet = pfsqos.simulate(two_jobs, policy="nobw", alone=True, progress=bar)
    assert bar._bar.total == 3 and bar._bar.n == 3
    pytest.importorskip("tqdm")
    shown = pfsqos.simulate(two_jobs, policy="nobw", alone=True, progress=True)
    assert shown.jobs.equals(quiet.jobs)
