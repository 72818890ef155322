"""compare(): every (policy, seed) run equals `pfsqos compare --seed S`'s summary."""

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
