"""Bad input raises ScenarioError / PolicyError with the command line's message, and a failed
edit leaves the scenario as it was."""

import pytest

import pfsqos
from pfsqos import _native, _scenario
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


def test_an_unset_field_reads_none_and_a_non_field_raises(two_jobs):
    sc = pfsqos.Scenario.load(two_jobs)
    # Optional fields the file leaves out: None (their default applies).
    assert sc.jobs["ckpt"].weight is None
    assert sc.jobs["ckpt"].uid is None
    assert sc.simulation.seed is None
    assert sc.network.latency_us is None  # no [network] table in the file at all
    assert sc.policy.default is None
    assert getattr(sc.jobs["ckpt"], "weight", "absent") is None
    # Names that are no field: AttributeError, naming the nearest field.
    with pytest.raises(AttributeError, match=r"`wieght` is not a field of `job\[1\]`; "
                                             r"did you mean `weight`\?"):
        sc.jobs["ckpt"].wieght
    with pytest.raises(AttributeError, match="did you mean `duration_s`"):
        sc.simulation.duraton_s
    with pytest.raises(AttributeError, match="did you mean `latency_us`"):
        sc.network.latncy_us
    with pytest.raises(AttributeError, match="did you mean `name`"):
        sc.nmae
    with pytest.raises(AttributeError, match="did you mean `jobs`"):
        sc.jobss
    with pytest.raises(AttributeError, match=r"fields: .*\bbs\b"):
        sc.jobs["ckpt"].processes[0].blocksize
    assert not hasattr(sc.jobs["ckpt"], "nosuchfield")
    with pytest.raises(KeyError, match="stream"):
        sc.jobs["nobody"]
    sc.jobs["ckpt"].weight = 5
    assert sc.jobs["ckpt"].weight == 5
    sc.jobs["ckpt"].weight = None  # back to the default
    assert "weight" not in sc.jobs["ckpt"] and sc.jobs["ckpt"].weight is None
    # Tab completion offers every field, set or not.
    assert {"weight", "uid", "nodes"} <= set(dir(sc.jobs["ckpt"]))


def _tables(view, seen):
    """Every table view reachable from `view`."""
    if isinstance(view, pfsqos.Table):
        seen.append(view)
        for k in view.keys():
            _tables(view[k], seen)
    elif isinstance(view, pfsqos.ValueList):
        for item in view:
            _tables(item, seen)
    return seen


@pytest.mark.parametrize("path", ["examples/two-jobs.toml", "demo/flagship.toml",
                                  "bakeoff/sync-phases.toml", "gift/sim-500.toml",
                                  "vpfs/table2-96-servers.toml"])
def test_every_table_knows_its_fields(path):
    """The parser lists the fields of every table in the repository's kinds of scenario, so
    reading an unset field is None and a misspelt one raises, everywhere."""
    from conftest import REPO

    sc = pfsqos.Scenario.load(REPO / "scenarios" / path)
    top = [sc[k] for k in sc.to_dict()]
    tables = []
    for v in top:
        _tables(v, tables)
    assert tables
    for t in tables:
        fields = _scenario._fields(sc, t._path)
        assert fields is not None and set(t.keys()) <= set(fields), t._path
        with pytest.raises(AttributeError, match="is not a field"):
            getattr(t, "no_such_field_here")


def test_a_bad_in_place_list_edit(cli, two_jobs):
    def doc(d):
        d["job"][0]["clients"].append(5)

    def obj(sc):
        sc.jobs["stream"].clients.append(5)

    want, got = _edit_error(cli, two_jobs, doc, obj)
    assert "job[0].clients" in want
    assert got == want


@pytest.mark.parametrize("edit", [
    lambda sc: sc.jobs["stream"].clients.extend([1, 7]),
    lambda sc: sc.jobs["stream"].clients.insert(0, -1),
    lambda sc: sc.jobs["stream"].clients.__setitem__(0, 9),
    lambda sc: sc.jobs["stream"].clients.__setitem__(slice(0, 1), [3]),
    lambda sc: sc.jobs["stream"].clients.clear(),
    lambda sc: sc.jobs["ckpt"].processes.append({"rw": "write", "bs": "0k"}),
    lambda sc: sc.jobs["ckpt"].processes[0].__setattr__("bs", "0k"),
    lambda sc: sc.policy.compare.append("adaptfb"),
    lambda sc: sc.osses.clear(),
])
def test_every_in_place_edit_is_validated(two_jobs, edit):
    sc = pfsqos.Scenario.load(two_jobs)
    before = sc.to_dict()
    with pytest.raises(pfsqos.ScenarioError):
        edit(sc)
    assert sc.to_dict() == before, "a refused edit changes nothing"


def test_valid_in_place_list_edits_apply(two_jobs):
    sc = pfsqos.Scenario.load(two_jobs)
    clients = sc.jobs["stream"].clients
    assert isinstance(clients, pfsqos.ValueList) and clients == [0]
    clients.append(1)
    assert sc.to_dict()["job"][0]["clients"] == [0, 1]
    sc.jobs["stream"].clients += []
    clients.sort(reverse=True)
    assert sc.jobs["stream"].clients == [1, 0]
    assert clients.pop() == 0 and clients == [1]
    sc.policy.compare.extend(["adaptbf"])
    assert sc.policy.compare.to_list() == ["nobw", "static", "adaptbf"]
    # Every list handed out is a view that validates; nothing mutable escapes but copies.
    for k in sc.to_dict():
        for t in _tables(sc[k], []):
            for name in t.keys():
                v = t[name]
                assert isinstance(v, (pfsqos.Table, pfsqos.ValueList, str, int, float, bool)), \
                    (t._path, name, type(v))
    pfsqos.Scenario.from_dict(sc.to_dict())  # the edited scenario is valid as a whole
