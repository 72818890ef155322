"""Results as pandas DataFrames: one run, a comparison, a bake-off."""

from __future__ import annotations

import io
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from . import _native

MIB = float(1 << 20)


def _string_dtype() -> Any:
    """pandas' Arrow-backed string dtype when pyarrow is installed, else None (numpy
    objects)."""
    try:
        import pyarrow  # noqa: F401  # type: ignore[import-not-found]
    except ImportError:
        return None
    # pandas 3's own string dtype is Arrow-backed when pyarrow is installed: keep it.
    default = pd.Series(["x"]).dtype
    if getattr(default, "storage", None) == "pyarrow":
        return default
    try:
        return pd.StringDtype("pyarrow")
    except (ImportError, TypeError, ValueError):
        return None


_STRINGS = _string_dtype()


def _strings(values: Sequence[str]) -> pd.Index:
    """An index of strings (a categorical's categories), Arrow-backed where possible."""
    return pd.Index(list(values), dtype=_STRINGS if _STRINGS is not None else object)


def _arrow(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its text columns Arrow-backed (when pyarrow is installed): a 500-job frame's
    ids take bytes each rather than a Python object each. Numbers stay numpy arrays (their
    bytes are what Arrow would hold, and numpy is pandas' fast path)."""
    if _STRINGS is None or df.empty:
        return df
    for col in df.columns:
        s = df[col]
        if (s.dtype == object or pd.api.types.is_string_dtype(s.dtype)) and \
                pd.api.types.infer_dtype(s, skipna=True) in ("string", "empty"):
            if s.dtype != _STRINGS:
                df[col] = s.astype(_STRINGS)
    return df


def _job_frame(summary: Dict[str, Any], alone: Any = None) -> pd.DataFrame:
    rows = []
    for j in summary["jobs"]:
        row = {k: v for k, v in j.items() if not isinstance(v, (dict, list))}
        phases = j.get("phases")
        if isinstance(phases, dict):
            for k, v in phases.items():
                if not isinstance(v, (dict, list)):
                    row[f"phases_{k}"] = v
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    total = summary.get("total_bytes") or 0
    df["share"] = df["bytes"] / total if total else np.nan
    weights = df["weight"].sum()
    df["weight_share"] = df["weight"] / weights if weights else np.nan
    for col in ("first_io_s", "last_io_s"):
        if col in df:
            df[col] = df[col].astype("float64")
    # Each job alone (``alone=True``): the bake-off's slowdown, computed by its code.
    nan = float("nan")
    if alone is None:
        df["alone_time_s"] = np.full(len(df), nan)
        df["slowdown_x"] = np.full(len(df), nan)
    else:
        assert len(alone) == len(df), "one solo result per job"
        df["alone_time_s"] = np.array([nan if t is None else t for t, _ in alone], dtype="float64")
        df["slowdown_x"] = np.array([nan if x is None else x for _, x in alone], dtype="float64")
    return _arrow(df)


def _scalars(summary: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for k, v in summary.items():
        if k in ("scenario", "policy", "seed") or isinstance(v, (dict, list)):
            continue
        out[k] = v
    engine = summary.get("engine")
    if isinstance(engine, dict):
        for k, v in engine.items():
            out[f"engine_{k}"] = v
    return out


def _timeseries(data: Any) -> pd.DataFrame:
    time_b, job_b, ost_b, bytes_b, job_names, ost_names = data.timeseries_columns()
    bin_s = data.bin_s
    moved = np.frombuffer(bytes_b, dtype="<u8")
    df = pd.DataFrame(
        {
            "time_s": np.frombuffer(time_b, dtype="<f8"),
            "job": pd.Categorical.from_codes(
                np.frombuffer(job_b, dtype="<u4").astype("int32"), categories=_strings(job_names)
            ),
            "ost": pd.Categorical.from_codes(
                np.frombuffer(ost_b, dtype="<u4").astype("int32"), categories=_strings(ost_names)
            ),
            "bytes": moved,
            "throughput_mib_s": moved / MIB / bin_s if bin_s > 0 else np.zeros(len(moved)),
        },
        copy=False,
    )
    return df


class _RunPlot:
    """Plots of one run (matplotlib, imported on first use)."""

    def __init__(self, run: "Run"):
        self._run = run

    def throughput(self, ax: Any = None, *, jobs: Optional[Sequence[str]] = None) -> Any:
        """Per-job throughput over time (MiB/s, summed over OSTs), one line per job.

        Returns the matplotlib Axes drawn on (a new figure's when ``ax`` is None).
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(8, 4))
        per_job = self._run.throughput()
        for job in per_job.columns:
            if jobs is not None and job not in jobs:
                continue
            ax.plot(per_job.index, per_job[job], label=str(job), linewidth=1.2)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("throughput (MiB/s)")
        ax.set_title(f"{self._run.scenario_name}: {self._run.policy} (seed {self._run.seed})")
        ax.legend(loc="best", fontsize="small")
        return ax


class Run:
    """One simulated run (:func:`pfsqos.simulate`).

    Attributes:
        summary: dict, the same fields and numbers as ``summary.json`` of ``pfsqos sim``.
        jobs: DataFrame, one row per job (bytes, ``throughput_mib_s``, ``io_time_s``,
            ``share`` of the bytes, ``weight_share``, ``alone_time_s`` and ``slowdown_x``
            (NaN unless the run was made with ``alone=True``), ...).
        timeseries: DataFrame, long format: ``time_s``, ``job``, ``ost``, ``bytes``,
            ``throughput_mib_s``, one row per bin, job and OST that moved bytes (no per-job
            total rows: summing ``bytes`` counts every byte once).
        control_trace: DataFrame of the controller's per-decision trace, or None.
        plot: ``run.plot.throughput()`` draws per-job throughput over time.
    """

    def __init__(self, data: Any, scenario: Any = None):
        self._data = data
        self._scenario = scenario
        self._summary_json: str = data.summary_json()
        self._summary: Optional[Dict[str, Any]] = None
        self._jobs: Optional[pd.DataFrame] = None
        self._timeseries: Optional[pd.DataFrame] = None
        self._trace: Any = False
        self.plot = _RunPlot(self)

    @property
    def policy(self) -> str:
        """The policy spec the run ran under."""
        return self._data.policy

    @property
    def seed(self) -> int:
        """The run's seed."""
        return self._data.seed

    @property
    def bin_s(self) -> float:
        """Width of a timeseries bin, seconds."""
        return self._data.bin_s

    @property
    def scenario(self) -> Any:
        """The :class:`pfsqos.Scenario` that ran (as it was when the run started)."""
        return self._scenario

    @property
    def scenario_name(self) -> str:
        """The scenario's ``name``, as ``summary.json`` gives it."""
        return self.summary["scenario"]

    @property
    def summary_json(self) -> str:
        """``summary.json`` text, byte for byte as ``pfsqos sim`` writes it."""
        return self._summary_json

    @property
    def summary(self) -> Dict[str, Any]:
        """``summary.json`` as a dict: the same fields and numbers as ``pfsqos sim`` writes
        (docs/outputs.md)."""
        if self._summary is None:
            self._summary = json.loads(self._summary_json)
        return self._summary

    @property
    def jobs(self) -> pd.DataFrame:
        """One row per job: ``summary.json``'s job fields (``job_id``, ``bytes``,
        ``throughput_mib_s``, ``io_time_s``, ...), ``share`` (of all bytes), ``weight_share``
        (of all weights), and from the runs of each job alone (``alone=True``; NaN
        otherwise) ``alone_time_s`` and ``slowdown_x``: the job's progress rate alone over
        its rate in this run, the bake-off's slowdown (1 = as fast as alone; NaN for a job
        that made no progress)."""
        if self._jobs is None:
            self._jobs = _job_frame(self.summary, self._data.alone())
        return self._jobs

    @property
    def alone(self) -> bool:
        """Whether each job was also run alone (``alone=True``), for ``slowdown_x``."""
        return self._data.alone() is not None

    @property
    def timeseries(self) -> pd.DataFrame:
        """Long format, one row per bin, job and OST that moved bytes: ``time_s`` (the bin's
        start), ``job`` and ``ost`` (categoricals), ``bytes``, ``throughput_mib_s``. The
        CSV's per-job ``all`` rows are left out: summing ``bytes`` counts every byte once."""
        if self._timeseries is None:
            self._timeseries = _timeseries(self._data)
        return self._timeseries

    @property
    def control_trace(self) -> Optional[pd.DataFrame]:
        """``control_trace.csv`` of the run (``time_s``, ``ost``, ``job_id``, ``metric``,
        ``value``: one row per controller decision and quantity), or None when the policy
        records no trace."""
        if self._trace is False:
            text = self._data.control_trace_csv()
            self._trace = (
                None
                if text is None
                else _arrow(pd.read_csv(io.StringIO(text), dtype={"ost": str, "job_id": str,
                                                                   "metric": str}))
            )
        return self._trace

    def throughput(self) -> pd.DataFrame:
        """Per-job throughput (MiB/s, all OSTs) per bin: index ``time_s``, one column per job,
        every bin of the run present (0 where a job moved nothing)."""
        ts = self.timeseries
        bins = int(round(self.summary["sim_time_s"] / self.bin_s)) if self.bin_s > 0 else 0
        if len(ts):
            bins = max(bins, int(round(ts["time_s"].max() / self.bin_s)) + 1)
        index = pd.Index(np.arange(bins) * self.bin_s, name="time_s")
        wide = (
            ts.groupby(["time_s", "job"], observed=False)["throughput_mib_s"].sum().unstack("job")
            if len(ts)
            else pd.DataFrame(columns=list(self.jobs.get("job_id", [])))
        )
        # Bin starts are computed as bin * bin_s in both places: exact matches.
        wide = wide.reindex(index=np.round(index.values, 9), fill_value=0.0).fillna(0.0)
        wide.index.name = "time_s"
        wide.columns = [str(c) for c in wide.columns]
        return wide

    def __repr__(self) -> str:
        s = self.summary
        return (f"<pfsqos.Run {s['scenario']!r} policy={self.policy!r} seed={self.seed}: "
                f"{len(s['jobs'])} jobs, aggregate {s['aggregate_throughput_mib_s']:.1f} MiB/s, "
                f"Jain {s['jain_index']:.3f}>")


class Comparison:
    """Several policies (and seeds) on one scenario (:func:`pfsqos.compare`).

    Attributes:
        runs: list of :class:`Run`, policy-major (every seed of the first policy first).
        table: DataFrame indexed by (policy, seed), one column per scalar metric of
            ``summary.json`` (``aggregate_throughput_mib_s``, ``jain_index``, ...).
        jobs: DataFrame, every run's job rows with ``policy`` and ``seed`` columns.
        timeseries: DataFrame, every run's timeseries with ``policy`` and ``seed`` columns.
    """

    def __init__(self, runs: List[Run], policies: List[str], seeds: List[int]):
        self.runs = runs
        self.policies = policies
        self.seeds = seeds
        self._table: Optional[pd.DataFrame] = None

    def run(self, policy: str, seed: Optional[int] = None) -> Run:
        """The run of ``policy`` (and ``seed``, needed when several were run)."""
        matches = [r for r in self.runs if r.policy == policy and (seed is None or r.seed == seed)]
        if not matches:
            raise KeyError(f"no run of policy {policy!r}" + ("" if seed is None else f" seed {seed}")
                           + f" (policies: {', '.join(self.policies)}; seeds: {self.seeds})")
        if len(matches) > 1:
            raise KeyError(f"policy {policy!r} ran with seeds {self.seeds}: name one")
        return matches[0]

    @property
    def table(self) -> pd.DataFrame:
        """Indexed by ``(policy, seed)``, one column per scalar metric of ``summary.json``
        (``aggregate_throughput_mib_s``, ``jain_index``, ``engine_events``, ...)."""
        if self._table is None:
            rows = [_scalars(r.summary) for r in self.runs]
            index = pd.MultiIndex.from_tuples(
                [(r.policy, r.seed) for r in self.runs], names=["policy", "seed"]
            )
            self._table = pd.DataFrame(rows, index=index)
        return self._table

    def _stacked(self, frame: str) -> pd.DataFrame:
        """Every run's ``frame`` (``jobs`` or ``timeseries``), with ``policy`` and ``seed``
        columns first."""
        frames = []
        for r in self.runs:
            df = getattr(r, frame).copy()
            df.insert(0, "seed", r.seed)
            df.insert(0, "policy", r.policy)
            frames.append(df)
        return pd.concat(frames, ignore_index=True)

    @property
    def jobs(self) -> pd.DataFrame:
        """Every run's :attr:`Run.jobs` rows, with ``policy`` and ``seed`` columns first, and
        ``slowdown_vs_best_x``: the job's I/O time under this policy over its shortest under
        any compared policy of the same seed (1 for the best), as the comparison report of
        ``pfsqos compare`` computes it; NaN where the job did no I/O."""
        df = self._stacked("jobs")
        vs_best = np.full(len(df), np.nan)
        starts, at = [], 0
        for r in self.runs:
            starts.append(at)
            at += len(r.jobs)
        for seed in self.seeds:
            group = [i for i, r in enumerate(self.runs) if r.seed == seed]
            rel = _native.relative_slowdowns([self.runs[i]._data for i in group])
            for i, per_job in zip(group, rel):
                for j, x in enumerate(per_job):
                    if x is not None:
                        vs_best[starts[i] + j] = x
        df["slowdown_vs_best_x"] = vs_best
        return _arrow(df)

    @property
    def timeseries(self) -> pd.DataFrame:
        """Every run's :attr:`Run.timeseries` rows, with ``policy`` (a categorical) and
        ``seed`` columns first."""
        out = self._stacked("timeseries")
        out["policy"] = pd.Categorical(out["policy"], categories=_strings(self.policies))
        return out

    def summary(self, metric: str) -> pd.DataFrame:
        """One metric of :attr:`table` as a policy x seed matrix."""
        if metric not in self.table.columns:
            raise KeyError(f"no metric {metric!r}; the metrics: {', '.join(self.table.columns)}")
        return self.table[metric].unstack("seed").reindex(self.policies)

    def __repr__(self) -> str:
        return (f"<pfsqos.Comparison {len(self.policies)} policies x {len(self.seeds)} seeds: "
                f"{', '.join(self.policies)}>")


class Bakeoff:
    """The bake-off's results (:func:`pfsqos.bakeoff`), read from ``bakeoff.json``'s content.

    Attributes:
        report: dict, ``bakeoff.json`` as ``pfsqos bakeoff`` writes it.
        runs: DataFrame, one row per workload x design x seed with every metric.
        jobs: DataFrame, one row per job of every run (with its slowdown).
        metrics: DataFrame of the metrics: key, label, unit, family, which way is better.
        out: the directory holding the run files (reused by a later call with the same
            ``out``).
    """

    def __init__(self, report_json: str, out: str):
        self.report: Dict[str, Any] = json.loads(report_json)
        self.out = out
        self._runs: Optional[pd.DataFrame] = None

    @property
    def metrics(self) -> pd.DataFrame:
        """The metrics: ``key``, ``label``, ``unit``, ``family``, ``better`` (which way)."""
        return _arrow(pd.DataFrame(self.report["metrics"]))

    @property
    def runs(self) -> pd.DataFrame:
        """One row per workload x design x seed: ``status`` (``ran`` or ``skipped``, with its
        ``reason``), job counts, and every metric of :attr:`metrics` by key."""
        if self._runs is None:
            rows = []
            for r in self.report["runs"]:
                row = {k: v for k, v in r.items() if k not in ("metrics", "jobs")}
                row.update(r.get("metrics") or {})
                rows.append(row)
            self._runs = _arrow(pd.DataFrame(rows))
        return self._runs

    @property
    def jobs(self) -> pd.DataFrame:
        """One row per job of every run: ``workload``, ``design``, ``seed``, ``job_id``,
        ``bytes``, ``throughput_mib_s``, ``io_time_s``, ``time_s`` (the job's time),
        ``finished``, ``alone_time_s`` and ``slowdown_x`` (``bakeoff.json``'s
        ``slowdown``; NaN where the job has none)."""
        rows = []
        for r in self.report["runs"]:
            for j in r.get("jobs") or []:
                row = {"workload": r["workload"], "design": r["design"], "seed": r["seed"],
                       **j}
                row["slowdown_x"] = row.pop("slowdown", None)
                rows.append(row)
        df = pd.DataFrame(rows)
        for col in ("alone_time_s", "slowdown_x"):
            if col in df:
                df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
        return _arrow(df)

    def _metric_key(self, metric: str) -> Tuple[str, str]:
        wanted = metric.strip().lower()
        for m in self.report["metrics"]:
            if wanted in (m["key"].lower(), m["label"].lower()):
                return m["key"], m["label"]
        known = "; ".join(f"{m['key']} ({m['label']})" for m in self.report["metrics"])
        raise KeyError(f"no metric {metric!r}; the metrics: {known}")

    def matrix(self, metric: str, seed: Optional[int] = None) -> pd.DataFrame:
        """One metric as a workload x design matrix: the mean over seeds (or ``seed``'s
        value). ``metric`` is a key (``run_time_mean_s``) or a label (``"mean job time"``)
        of :attr:`metrics`; NaN where a combination did not run or has no value."""
        key, label = self._metric_key(metric)
        runs = self.runs
        if seed is not None:
            runs = runs[runs["seed"] == seed]
        values = pd.to_numeric(runs[key], errors="coerce") if key in runs else np.nan
        frame = runs.assign(_v=values)
        workloads = [w["stem"] for w in self.report["workloads"]]
        designs = [d["name"] for d in self.report["designs"]]
        m = frame.pivot_table(index="workload", columns="design", values="_v", aggfunc="mean",
                              dropna=False)
        m = m.reindex(index=workloads, columns=designs)
        m.index.name = "workload"
        m.columns.name = f"{label} [{key}]"
        return m

    def __repr__(self) -> str:
        r = self.report
        return (f"<pfsqos.Bakeoff suite {r['suite']!r}: {len(r['designs'])} designs x "
                f"{len(r['workloads'])} workloads x {len(r['seeds'])} seeds>")
