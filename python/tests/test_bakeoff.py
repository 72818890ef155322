"""bakeoff(): the built-in suite gives `pfsqos bakeoff`'s bakeoff.json."""

import pytest

import pfsqos
from conftest import REPO, read_json

DESIGNS = ["nobw", "adaptbf", "vpfs"]


@pytest.fixture(scope="module")
def cli_report(tmp_path_factory, cli):
    out = tmp_path_factory.mktemp("bakeoff-cli")
    # The clone's scenarios/bakeoff: the directory the built-in suite is a copy of.
    cli("bakeoff", REPO / "scenarios" / "bakeoff", "--designs", ",".join(DESIGNS), "--seeds", 1,
        "--out", out)
    return out


@pytest.fixture(scope="module")
def bo():
    """The package's bake-off of the same designs and seed (run once for the module)."""
    return pfsqos.bakeoff(designs=DESIGNS, seeds=1, progress=False)


def test_report_equals_the_cli(cli_report, bo):
    assert bo.report == read_json(cli_report / "bakeoff.json")


def test_written_report_is_the_cli_s_byte_for_byte(cli_report, tmp_path):
    pfsqos.bakeoff(designs=DESIGNS, seeds=1, out=tmp_path, write_report=True, progress=False)
    for name in ("bakeoff.json", "bakeoff.csv", "results.md"):
        assert (tmp_path / name).read_bytes() == (cli_report / name).read_bytes(), name


def test_matrix_is_workload_by_design(cli_report, bo):
    m = bo.matrix("mean job time")
    want = read_json(cli_report / "bakeoff.json")
    assert list(m.columns) == DESIGNS
    assert list(m.index) == [w["stem"] for w in want["workloads"]]
    checked = 0
    for r in want["runs"]:
        v = r["metrics"].get("run_time_mean_s")
        if v is not None:
            assert m.loc[r["workload"], r["design"]] == v
            checked += 1
    assert checked > 0
    assert bo.matrix("run_time_mean_s").equals(m)
    assert len(bo.runs) == len(want["runs"])
    with pytest.raises(KeyError, match="mean job time"):
        bo.matrix("mean jbo time")


def test_unknown_design_is_refused():
    with pytest.raises(pfsqos.PolicyError, match="designs"):
        pfsqos.bakeoff(designs=["nobw", "nosuch"], seeds=1, progress=False)


# Workloads whose jobs' slowdowns `simulate(..., alone=True)` is checked on: plain jobs, and
# jobs of synchronous phases (whose time is their run time, not their I/O time).
SLOWDOWN_WORKLOADS = ["priorities-finishing", "sync-phases"]


def _nan_or(x):
    return float("nan") if x is None else x


def _same(a, b):
    """Equal to the last digit, NaN equal to NaN."""
    return a == b or (a != a and b != b)


@pytest.mark.parametrize("stem", SLOWDOWN_WORKLOADS)
def test_slowdowns_equal_the_cli_bakeoff(cli_report, stem):
    want = read_json(cli_report / "bakeoff.json")
    policy_of = {d["name"]: d["policy"] for d in want["designs"]}
    sc = pfsqos.Scenario.load(REPO / "scenarios" / "bakeoff" / f"{stem}.toml")
    # The bake-off runs seed 1 of a workload with its simulation seed set to 1.
    sc.simulation.seed = 1
    designs = ["nobw", "adaptbf"]
    cmp = pfsqos.compare(sc, policies=[policy_of[d] for d in designs], seeds=[1], alone=True,
                         progress=False)
    checked = 0
    for design in designs:
        (row,) = [r for r in want["runs"] if r["workload"] == stem and r["design"] == design
                  and r["seed"] == 1]
        for run in (cmp.run(policy_of[design]),
                    pfsqos.simulate(sc, policy=policy_of[design], seed=1, alone=True,
                                    progress=False)):
            assert run.alone
            jobs = run.jobs
            assert list(jobs["job_id"]) == [j["job_id"] for j in row["jobs"]]
            for got, j in zip(jobs.to_dict("records"), row["jobs"]):
                assert _same(got["slowdown_x"], _nan_or(j["slowdown"])), (design, j)
                assert _same(got["alone_time_s"], _nan_or(j["alone_time_s"])), (design, j)
                checked += j["slowdown"] is not None
    assert checked > 0, "some job has a slowdown"
    # A job shares the system in a shared run: it is never faster than alone by much.
    assert (cmp.jobs["slowdown_x"].dropna() > 0.5).all()


def test_without_alone_there_are_no_slowdowns():
    sc = pfsqos.Scenario.load(REPO / "scenarios" / "bakeoff" / "priorities-finishing.toml")
    run = pfsqos.simulate(sc, policy="nobw", progress=False)
    assert not run.alone
    assert run.jobs["slowdown_x"].isna().all() and run.jobs["alone_time_s"].isna().all()


def test_bakeoff_jobs_have_the_report_s_slowdowns(cli_report, bo):
    want = read_json(cli_report / "bakeoff.json")
    rows = [(r["workload"], r["design"], j["job_id"], _nan_or(j["slowdown"]))
            for r in want["runs"] for j in r.get("jobs") or []]
    got = list(zip(bo.jobs["workload"], bo.jobs["design"], bo.jobs["job_id"],
                   bo.jobs["slowdown_x"]))
    assert len(got) == len(rows) > 0
    assert all(g[:3] == w[:3] and _same(g[3], w[3]) for g, w in zip(got, rows))
