"""pfsqos from Python: the simulator, comparisons, the bake-off and Darshan import, with results
as pandas DataFrames.

A thin binding over the same Rust crates as the ``pfsqos`` command line (not a second
implementation, and it does not run the command line): the same scenario, policy and seed
give the same numbers as ``pfsqos sim``'s ``summary.json``, and bad input raises
:class:`ScenarioError` or :class:`PolicyError` with the command line's message.

>>> import pfsqos
>>> sc = pfsqos.Scenario.load("scenarios/examples/two-jobs.toml")
>>> sc.jobs["ckpt"].nodes = 4
>>> run = pfsqos.simulate(sc, policy="adaptbf", seed=7)
>>> run.jobs[["job_id", "throughput_mib_s"]]

Long calls release the GIL, show a tqdm bar when tqdm is installed and stop on Ctrl-C
(``KeyboardInterrupt``; every worker thread is joined first). See docs/python.md.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Union

import pandas as pd

from . import _native, _progress, _results, trace
from ._native import Error, PolicyError, ScenarioError
from ._results import Bakeoff, Comparison, Run
from ._scenario import PathLike, Scenario, Table, TableList, ValueList, as_scenario

__version__: str = _native.VERSION

#: Every policy name the simulator knows (specs add ``:key=value`` options).
POLICY_NAMES: List[str] = list(_native.POLICY_NAMES)

__all__ = [
    "Bakeoff",
    "Comparison",
    "Error",
    "POLICY_NAMES",
    "PolicyError",
    "Run",
    "Scenario",
    "ScenarioError",
    "Table",
    "TableList",
    "ValueList",
    "bakeoff",
    "compare",
    "policies",
    "simulate",
    "trace",
]

ScenarioLike = Union[Scenario, PathLike, Dict[str, Any]]


def simulate(
    scenario: ScenarioLike,
    policy: Optional[str] = None,
    seed: Optional[int] = None,
    *,
    alone: bool = False,
    threads: Optional[int] = None,
    progress: _progress.Progress = None,
) -> Run:
    """Runs ``scenario`` under one policy, as ``pfsqos sim SCENARIO --policy P --seed S``.

    Args:
        scenario: a :class:`Scenario`, a scenario file's path or a dict (see
            :meth:`Scenario.from_dict`).
        policy: a policy spec (``"adaptbf"``, ``"adaptbf:period_ms=50"``); default: the
            scenario's ``policy.default``.
        seed: the random seed; default: the scenario's ``simulation.seed``.
        alone: also run each job alone (under ``nobw``, same seed), as the bake-off does,
            for ``run.jobs``'s ``alone_time_s`` and ``slowdown_x`` (one more run per job).
        threads: worker threads for the runs alone (default: one per core).
        progress: None (a tqdm bar when tqdm is installed), False (none), True (tqdm,
            required) or a callable ``f(done, total)`` (runs, floats).

    Returns:
        a :class:`Run`.

    Raises:
        ScenarioError: the scenario is invalid (the command line's message).
        PolicyError: the policy is unknown, invalid, or cannot run on this scenario.
        KeyboardInterrupt: interrupted (Ctrl-C); the interpreter stays usable.
    """
    sc = as_scenario(scenario)
    snapshot = sc.copy()
    cb = _progress.make(progress, "simulate", 1)
    try:
        data = _native.simulate(sc._doc, sc._file, sc._base_dir, policy, seed, bool(alone),
                                threads, cb)
    finally:
        _progress.close(cb)
    return Run(data, snapshot)


def compare(
    scenario: ScenarioLike,
    policies: Optional[Sequence[str]] = None,
    seeds: Optional[Sequence[int]] = None,
    *,
    alone: bool = False,
    threads: Optional[int] = None,
    progress: _progress.Progress = None,
) -> Comparison:
    """Runs ``scenario`` under every policy for every seed, in parallel, as ``pfsqos compare``
    does for one seed.

    Args:
        scenario: a :class:`Scenario`, a path or a dict.
        policies: policy specs (1 to 64, none twice); default: the scenario's
            ``policy.compare``.
        seeds: seeds (none twice); default: ``[simulation.seed]``.
        alone: also run each job alone once per seed (for every policy's ``slowdown_x``),
            as :func:`simulate` does.
        threads: worker threads (default: one per core).
        progress: as for :func:`simulate`.

    Returns:
        a :class:`Comparison` (``.table``: policy x seed x metric).

    Raises:
        ScenarioError, PolicyError: as :func:`simulate`; Error: bad ``seeds`` or
        ``threads``.
    """
    sc = as_scenario(scenario)
    if isinstance(policies, str):
        policies = [p.strip() for p in policies.split(",")]
    policies_list = list(policies) if policies is not None else None
    seeds_list = [int(s) for s in seeds] if seeds is not None else None
    expected = (len(policies_list) if policies_list is not None else
                max(1, len(sc._doc.get("policy", {}).get("compare", []) or [])))
    expected *= len(seeds_list) if seeds_list is not None else 1
    snapshot = sc.copy()
    cb = _progress.make(progress, "compare", expected)
    try:
        datas = _native.compare(sc._doc, sc._file, sc._base_dir, policies_list, seeds_list,
                                bool(alone), threads, cb)
    finally:
        _progress.close(cb)
    runs = [Run(d, snapshot) for d in datas]
    names: List[str] = []
    used_seeds: List[int] = []
    for r in runs:
        if r.policy not in names:
            names.append(r.policy)
        if r.seed not in used_seeds:
            used_seeds.append(r.seed)
    return Comparison(runs, names, used_seeds)


def bakeoff(
    designs: Optional[Sequence[str]] = None,
    seeds: Optional[int] = None,
    *,
    suite: Optional[PathLike] = None,
    out: Optional[PathLike] = None,
    threads: Optional[int] = None,
    write_report: bool = False,
    progress: _progress.Progress = None,
) -> Bakeoff:
    """The bake-off: every design on every workload of the built-in suite (the copy of the
    repository's ``scenarios/bakeoff`` built into the package) for seeds ``1..=seeds``, with
    each job also run alone for its slowdown, as ``pfsqos bakeoff``.

    Args:
        designs: design names of the suite (default: all of them).
        seeds: seeds 1..=N (default: the suite's).
        suite: a suite directory of your own instead of the built-in one.
        out: where run files go; finished runs there are reused (default: a temporary
            directory, removed afterwards).
        threads: worker threads (default: one per core).
        write_report: also write ``bakeoff.json``, ``bakeoff.csv``, ``results.md`` and
            ``report.html`` into ``out``.
        progress: as for :func:`simulate` (in runs of the plan).

    Returns:
        a :class:`Bakeoff` (``.matrix("mean job time")``: workload x design).
    """
    if isinstance(designs, str):
        designs = [d.strip() for d in designs.split(",")]
    designs_list = list(designs) if designs is not None else None
    suite_path = os.fspath(suite) if suite is not None else None
    tmp = None
    if out is None:
        if write_report:
            raise Error("write_report needs an out directory to write into")
        tmp = tempfile.TemporaryDirectory(prefix="pfsqos-bakeoff-")
        out_dir = tmp.name
    else:
        out_dir = os.fspath(out)
    # The plan's size is known only to the runner: the bar's total is a placeholder that
    # the callback's own total replaces.
    cb = _progress.make(progress, "bakeoff", 1)
    try:
        text = _native.bakeoff(out_dir, designs_list, seeds, suite_path, threads, cb,
                               write_report)
    finally:
        _progress.close(cb)
        if tmp is not None:
            tmp.cleanup()
    return Bakeoff(text, out_dir if tmp is None else "")


def policies() -> pd.DataFrame:
    """Every scheduler, controller and placer pfsqos has, as ``pfsqos policies`` lists them:
    columns ``kind`` (scheduler, controller, placer), ``name``, ``description``, ``details``
    (the files a scheduler reads, where a controller acts, a placer's options) and
    ``options``: the ``key=value`` options a controller's spec (``adaptbf:period_ms=50``)
    or a placer's (``lustre:qos_prio_free=90``) takes, comma-separated, as its parser lists
    them."""
    rows = [(kind, name, description, details, ", ".join(options))
            for kind, name, description, details, options in _native.policies()]
    return _results._arrow(pd.DataFrame(rows, columns=["kind", "name", "description",
                                                         "details", "options"]))
