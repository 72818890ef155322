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
    assert list(df.columns) == ["kind", "name", "description", "details", "options"]
    assert set(df["kind"]) == {"scheduler", "controller", "placer"}
    for row in df.itertuples():
        assert f"  {row.name:<12} {row.description}" in text, row.name
    controllers = set(df[df["kind"] == "controller"]["name"])
    assert controllers == set(pfsqos.POLICY_NAMES)


def test_policies_list_every_controller_s_options(cli):
    """A controller's options are those its parser names when the command line refuses an
    unknown one; a placer's, those `pfsqos policies` lists."""
    df = pfsqos.policies()
    some = 0
    for row in df[df["kind"] == "controller"].itertuples():
        code, _, err = cli("sim", TWO_JOBS, "--policy", f"{row.name}:zz=1", "--out",
                           "/nonexistent/never", check=False)
        assert code == 2, err
        message = err.strip().splitlines()[-1]
        if "takes no options" in message:
            assert row.options == "", row.name
        else:
            allowed = message.split("(allowed: ", 1)[1].split(")", 1)[0]
            assert row.options == allowed, row.name
            some += 1
    assert some >= 5
    placers = df[df["kind"] == "placer"]
    for row in placers.itertuples():
        assert row.details == (f"options: {row.options}" if row.options else "")
    assert "period_ms" in df.set_index("name").loc["adaptbf", "options"].split(", ")
