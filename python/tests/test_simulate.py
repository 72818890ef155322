"""simulate(): the same numbers as `pfsqos sim`'s outputs, to the last digit."""

import csv

import pandas as pd
import pytest

import pfsqos
from conftest import read_json


@pytest.mark.parametrize("policy,seed", [("nobw", 7), ("adaptbf:period_ms=50", 7), ("static", 3)])
def test_summary_equals_the_cli(cli, two_jobs, tmp_path, policy, seed):
    out = tmp_path / "out"
    cli("sim", two_jobs, "--policy", policy, "--seed", seed, "--out", out)
    run = pfsqos.simulate(pfsqos.Scenario.load(two_jobs), policy=policy, seed=seed,
                          progress=False)
    assert run.summary == read_json(out / "summary.json")
    assert run.summary_json == (out / "summary.json").read_text(encoding="utf-8")
    assert run.policy == policy and run.seed == seed


def test_defaults_are_the_scenario_s(cli, two_jobs, tmp_path):
    cli("sim", two_jobs, "--out", tmp_path / "out")
    run = pfsqos.simulate(two_jobs, progress=False)  # a path works too
    assert run.summary == read_json(tmp_path / "out" / "summary.json")


def test_jobs_frame_is_the_summary_s_jobs(two_jobs):
    run = pfsqos.simulate(two_jobs, policy="adaptbf", seed=1, progress=False)
    jobs = run.jobs
    assert list(jobs["job_id"]) == [j["job_id"] for j in run.summary["jobs"]]
    for row, j in zip(jobs.to_dict("records"), run.summary["jobs"]):
        for key in ("bytes", "throughput_mib_s", "io_time_s", "nodes", "weight", "finished"):
            assert row[key] == j[key], key
    assert jobs["share"].sum() == pytest.approx(1.0)
    assert (jobs["bytes"] / run.summary["total_bytes"]).tolist() == jobs["share"].tolist()


def test_timeseries_equals_the_csv(cli, two_jobs, tmp_path):
    out = tmp_path / "out"
    cli("sim", two_jobs, "--policy", "adaptbf", "--seed", 2, "--out", out)
    run = pfsqos.simulate(two_jobs, policy="adaptbf", seed=2, progress=False)
    with open(out / "timeseries.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    cells = sorted((float(r["time_s"]), r["job_id"], r["ost"], int(r["bytes"]))
                   for r in rows if r["ost"] != "all" and int(r["bytes"]) != 0)
    ts = run.timeseries
    got = sorted(zip(ts["time_s"].tolist(), ts["job"].astype(str).tolist(),
                     ts["ost"].astype(str).tolist(), ts["bytes"].tolist()))
    assert got == cells
    assert len(ts) > 100  # a real timeseries, not an empty frame
    # The CSV's per-job `all` rows are the sums; the frame has none, so no byte counts twice.
    assert int(ts["bytes"].sum()) == sum(int(r["bytes"]) for r in rows if r["ost"] == "all")
    assert int(ts["bytes"].sum()) == run.summary["total_bytes"]
    assert set(ts.columns) == {"time_s", "job", "ost", "bytes", "throughput_mib_s"}
    csv_mib = {(float(r["time_s"]), r["job_id"], r["ost"]): float(r["throughput_mib_s"])
               for r in rows if r["ost"] != "all"}
    for t, j, o, mib in zip(ts["time_s"], ts["job"].astype(str), ts["ost"].astype(str),
                            ts["throughput_mib_s"]):
        assert round(mib, 3) == pytest.approx(csv_mib[(t, j, o)], abs=1e-9)


def test_control_trace_equals_the_csv(cli, two_jobs, tmp_path):
    out = tmp_path / "out"
    cli("sim", two_jobs, "--policy", "adaptbf", "--seed", 1, "--out", out)
    run = pfsqos.simulate(two_jobs, policy="adaptbf", seed=1, progress=False)
    want = pd.read_csv(out / "control_trace.csv", dtype={"ost": str, "job_id": str,
                                                         "metric": str})
    # The same text, held Arrow-backed when pyarrow is installed (test_api.py).
    text = {c: run.control_trace[c].dtype for c in ("ost", "job_id", "metric")}
    pd.testing.assert_frame_equal(run.control_trace, want.astype(text))
    assert pfsqos.simulate(two_jobs, policy="nobw", progress=False).control_trace is None


def test_an_edited_scenario_runs_as_its_file(cli, two_jobs, tmp_path):
    sc = pfsqos.Scenario.load(two_jobs)
    before = pfsqos.simulate(sc, policy="static", seed=1, progress=False)
    sc.jobs["ckpt"].nodes = 6
    sc.jobs["ckpt"].weight = 6
    sc.simulation.duration_s = 30.0
    assert sc.jobs["ckpt"].nodes == 6 and sc.jobs[1].weight == 6
    edited = tmp_path / "edited.toml"
    sc.save(edited)
    cli("sim", edited, "--policy", "static", "--seed", 1, "--out", tmp_path / "out")
    after = pfsqos.simulate(sc, policy="static", seed=1, progress=False)
    assert after.summary == read_json(tmp_path / "out" / "summary.json")
    assert after.summary["sim_time_s"] == 30.0
    ckpt = after.jobs.set_index("job_id").loc["ckpt"]
    assert ckpt["weight"] == 6
    # Static BW gives the checkpointer its node share: more nodes, more of the OST.
    share = lambda r: r.jobs.set_index("job_id").loc["ckpt", "throughput_mib_s"]
    assert share(after) > share(before)
    # The run keeps the scenario as it ran.
    assert after.scenario.jobs["ckpt"].nodes == 6


def test_from_dict_and_from_toml_give_the_same_run(two_jobs):
    sc = pfsqos.Scenario.load(two_jobs)
    a = pfsqos.simulate(sc, policy="adaptbf", seed=4, progress=False)
    b = pfsqos.simulate(pfsqos.Scenario.from_dict(sc.to_dict()), policy="adaptbf", seed=4,
                        progress=False)
    c = pfsqos.simulate(pfsqos.Scenario.from_toml(sc.to_toml()), policy="adaptbf", seed=4,
                        progress=False)
    assert a.summary == b.summary == c.summary


def test_throughput_is_the_timeseries_per_job(two_jobs):
    run = pfsqos.simulate(two_jobs, policy="adaptbf", seed=1, progress=False)
    wide = run.throughput()
    assert list(wide.columns) == ["stream", "ckpt"]
    assert wide.index[0] == 0.0 and len(wide) >= run.summary["sim_time_s"] / run.bin_s
    total_mib = (wide.sum().sum()) * run.bin_s
    assert total_mib == pytest.approx(run.summary["total_bytes"] / 2**20)


def test_plot_draws_every_job(two_jobs):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    run = pfsqos.simulate(two_jobs, policy="adaptbf", seed=1, progress=False)
    ax = run.plot.throughput()
    assert [l.get_label() for l in ax.get_lines()] == ["stream", "ckpt"]
    assert all(max(l.get_ydata()) > 0 for l in ax.get_lines())


def test_a_progress_callback_sees_the_run_finish(two_jobs):
    seen = []
    pfsqos.simulate(two_jobs, policy="nobw", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (1.0, 1.0)
    assert all(0.0 <= d <= t for d, t in seen)
