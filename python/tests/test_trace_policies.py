"""trace.import_darshan() and policies(): the command line's results."""

import pytest

import pfsqos
from conftest import REPO, TWO_JOBS

LOG = REPO / "crates" / "pfsqos-darshan" / "tests" / "data" / "bursts-3.41.darshan"


def test_import_darshan_equals_the_cli(cli, tmp_path):
    like = REPO / "scenarios" / "bakeoff" / "priorities-finishing.toml"
    out = tmp_path / "imported.toml"
    cli("trace", "import", LOG, "--like", like, "--out", out)
    want = pfsqos.Scenario.load(out)
    got = pfsqos.trace.import_darshan(LOG, like=str(like))
    assert got.to_dict() == want.to_dict()
    assert len(got.jobs) >= 1
    # An imported scenario runs.
    run = pfsqos.simulate(got, policy="nobw", progress=False)
    assert run.summary["total_bytes"] > 0


def test_import_darshan_like_a_scenario_object(tmp_path):
    sc = pfsqos.Scenario.load(TWO_JOBS)
    got = pfsqos.trace.import_darshan([LOG], like=sc)
    assert got.to_dict()["oss"] == sc.to_dict()["oss"]


def test_import_darshan_refuses_a_missing_log(tmp_path):
    with pytest.raises(pfsqos.ScenarioError, match="no log could be read"):
        pfsqos.trace.import_darshan(tmp_path / "missing.darshan")


def test_policies_are_the_cli_listing(cli):
    _, text, _ = cli("policies")
    df = pfsqos.policies()
    assert list(df.columns) == ["kind", "name", "description", "details"]
    assert set(df["kind"]) == {"scheduler", "controller", "placer"}
    for row in df.itertuples():
        assert f"  {row.name:<12} {row.description}" in text, row.name
    controllers = set(df[df["kind"] == "controller"]["name"])
    assert controllers == set(pfsqos.POLICY_NAMES)
