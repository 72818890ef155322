"""compare(): every (policy, seed) run equals `pfsqos compare --seed S`'s summary."""

import statistics

import pytest

import pfsqos
from conftest import read_json

POLICIES = ["nobw", "static", "adaptbf"]


def test_runs_equal_the_cli_comparison(cli, two_jobs, tmp_path):
    cmp = pfsqos.compare(two_jobs, policies=POLICIES, seeds=[1, 2], progress=False)
    assert [(r.policy, r.seed) for r in cmp.runs] == [(p, s) for p in POLICIES for s in (1, 2)]
    for seed in (1, 2):
        out = tmp_path / f"out{seed}"
        cli("compare", two_jobs, "--policies", ",".join(POLICIES), "--seed", seed, "--out", out)
        want = read_json(out / "summary.json")
        assert want["policies"] == POLICIES
        for policy, summary in zip(want["policies"], want["runs"]):
            assert cmp.run(policy, seed).summary == summary


def test_table_is_policy_by_seed_by_metric(two_jobs):
    cmp = pfsqos.compare(two_jobs, policies=POLICIES, seeds=[1, 2, 3], progress=False)
    t = cmp.table
    assert list(t.index.names) == ["policy", "seed"]
    assert len(t) == 9
    for r in cmp.runs:
        row = t.loc[(r.policy, r.seed)]
        assert row["aggregate_throughput_mib_s"] == r.summary["aggregate_throughput_mib_s"]
        assert row["jain_index"] == r.summary["jain_index"]
    m = cmp.summary("jain_index")
    assert list(m.index) == POLICIES and list(m.columns) == [1, 2, 3]
    assert set(cmp.jobs["policy"]) == set(POLICIES)
    assert set(cmp.timeseries["policy"].astype(str)) == set(POLICIES)


def test_parallel_equals_one_thread(two_jobs):
    one = pfsqos.compare(two_jobs, policies=POLICIES, seeds=[5, 6], threads=1, progress=False)
    many = pfsqos.compare(two_jobs, policies=POLICIES, seeds=[5, 6], threads=4, progress=False)
    assert [r.summary_json for r in one.runs] == [r.summary_json for r in many.runs]


def test_default_policies_are_the_scenario_s(cli, two_jobs, tmp_path):
    cli("compare", two_jobs, "--out", tmp_path / "out")
    want = read_json(tmp_path / "out" / "summary.json")
    cmp = pfsqos.compare(two_jobs, progress=False)
    assert cmp.policies == want["policies"]
    assert [r.summary for r in cmp.runs] == want["runs"]


def test_seeds_are_checked(two_jobs):
    with pytest.raises(pfsqos.Error, match="listed twice"):
        pfsqos.compare(two_jobs, policies=["nobw"], seeds=[1, 1], progress=False)
    with pytest.raises(pfsqos.Error, match="1 to"):
        pfsqos.compare(two_jobs, policies=["nobw"], seeds=[], progress=False)


def test_slowdowns_against_the_best_policy_are_the_report_s(cli, two_jobs, tmp_path):
    """`cmp.jobs`'s slowdown_vs_best_x is the comparison report's: its medians per policy
    are the ones `pfsqos compare`'s report.html states."""
    cli("compare", two_jobs, "--policies", ",".join(POLICIES), "--out", tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    head = "Median per-job slowdown against the best compared policy for that job: "
    want = html.split(head, 1)[1].split(".<", 1)[0].split("</", 1)[0].rstrip(".")
    cmp = pfsqos.compare(two_jobs, policies=POLICIES, progress=False)
    jobs = cmp.jobs
    got = ", ".join(
        f"{p} {statistics.median(jobs[jobs['policy'] == p]['slowdown_vs_best_x'].dropna()):.2f}x"
        for p in POLICIES)
    assert got == want
    # The best policy for each job is at 1, exactly, and none is better than the best.
    best = jobs.groupby("job_id")["slowdown_vs_best_x"].min()
    assert (best == 1.0).all() and (jobs["slowdown_vs_best_x"] >= 1.0).all()
    # Several seeds: each seed's runs are compared among themselves.
    two = pfsqos.compare(two_jobs, policies=POLICIES, seeds=[1, 2], progress=False).jobs
    assert (two.groupby(["seed", "job_id"])["slowdown_vs_best_x"].min() == 1.0).all()
