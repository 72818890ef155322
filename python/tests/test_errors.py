"""Bad input raises ScenarioError / PolicyError with the command line's message, and a failed
edit leaves the scenario as it was."""

import pytest

import pfsqos
from pfsqos import _native
from conftest import cli_error


def _cli_message(cli, path, *args):
    code, _, err = cli("sim", path, *args, "--out", path.parent / "never", check=False)
    assert code == 2, err
    return cli_error(err)


def test_a_misspelt_field_in_a_file(cli, two_jobs):
    two_jobs.write_text(two_jobs.read_text().replace("nodes = 2 ", "nodse = 2 "))
    want = _cli_message(cli, two_jobs)
    assert "unknown field `nodse`" in want and "nodes" in want
    with pytest.raises(pfsqos.ScenarioError) as e:
        pfsqos.Scenario.load(two_jobs)
    assert str(e.value) == want
    assert e.value.field == "job[1].nodse"
    assert isinstance(e.value, pfsqos.Error) and isinstance(e.value, ValueError)


def _edit_error(cli, path, edit_doc, edit_object):
    """The command line's message for the file that `edit_doc` makes of the scenario, and the
    error `edit_object` raises on the scenario loaded from the same path."""
    sc = pfsqos.Scenario.load(path)
    # The file as the package writes it, so that line numbers agree.
    path.write_text(sc.to_toml())
    sc = pfsqos.Scenario.load(path)
    before = sc.to_dict()
    bad = sc.to_dict()
    edit_doc(bad)
    path.write_text(_native.to_toml(bad))
    want = _cli_message(cli, path)
    with pytest.raises(pfsqos.ScenarioError) as e:
        edit_object(sc)
    assert sc.to_dict() == before, "a refused edit changes nothing"
    return want, str(e.value)


def test_a_misspelt_field_set_through_the_object(cli, two_jobs):
    def doc(d):
        d["job"][1]["wieght"] = 3

    def obj(sc):
        sc.jobs["ckpt"].wieght = 3

    want, got = _edit_error(cli, two_jobs, doc, obj)
    assert "unknown field `wieght`" in want
    assert got == want


def test_a_negative_rate_set_through_the_object(cli, two_jobs):
    def doc(d):
        d.setdefault("network", {})["client_link_mib_s"] = -100.0

    def obj(sc):
        sc.network.client_link_mib_s = -100.0

    want, got = _edit_error(cli, two_jobs, doc, obj)
    assert "network.client_link_mib_s" in want and "-100" in want
    assert got == want


def test_a_wrong_type_set_through_the_object(cli, two_jobs):
    def doc(d):
        d["cluster"]["clients"] = "two"

    def obj(sc):
        sc.cluster.clients = "two"

    want, got = _edit_error(cli, two_jobs, doc, obj)
    assert got == want


def test_an_unknown_policy(cli, two_jobs):
    want = _cli_message(cli, two_jobs, "--policy", "adaptfb")
    assert "did you mean `adaptbf`" in want
    with pytest.raises(pfsqos.PolicyError) as e:
        pfsqos.simulate(two_jobs, policy="adaptfb", progress=False)
    assert str(e.value) == want
    code, _, err = cli("compare", two_jobs, "--policies", "nobw,adaptfb", check=False)
    assert code == 2
    with pytest.raises(pfsqos.PolicyError) as e:
        pfsqos.compare(two_jobs, policies=["nobw", "adaptfb"], progress=False)
    assert str(e.value) == cli_error(err)


def test_an_invalid_policy_option(cli, two_jobs):
    want = _cli_message(cli, two_jobs, "--policy", "adaptbf:period_ms=-5")
    with pytest.raises(pfsqos.PolicyError) as e:
        pfsqos.simulate(two_jobs, policy="adaptbf:period_ms=-5", progress=False)
    assert str(e.value) == want


def test_a_missing_file(cli, tmp_path):
    missing = tmp_path / "missing.toml"
    want = _cli_message(cli, missing)
    assert "missing.toml" in want
    with pytest.raises(pfsqos.ScenarioError) as e:
        pfsqos.Scenario.load(missing)
    assert str(e.value) == want
    with pytest.raises(pfsqos.ScenarioError) as e:
        pfsqos.simulate(str(missing), progress=False)
    assert str(e.value) == want


def test_values_that_toml_cannot_hold(two_jobs):
    sc = pfsqos.Scenario.load(two_jobs)
    with pytest.raises(pfsqos.ScenarioError, match="cannot go into a scenario"):
        sc.cluster.clients = object()
    with pytest.raises(pfsqos.ScenarioError, match="64-bit"):
        sc.cluster.clients = 2**70
    with pytest.raises(TypeError):
        pfsqos.Scenario.from_dict(["not", "a", "dict"])
    assert sc.cluster.clients == 2


def test_reading_an_unset_field_says_so(two_jobs):
    sc = pfsqos.Scenario.load(two_jobs)
    with pytest.raises(AttributeError, match="not set"):
        sc.jobs["ckpt"].weight
    with pytest.raises(KeyError, match="stream"):
        sc.jobs["nobody"]
    sc.jobs["ckpt"].weight = 5
    assert sc.jobs["ckpt"].weight == 5
    sc.jobs["ckpt"].weight = None  # back to the default
    assert "weight" not in sc.jobs["ckpt"]
