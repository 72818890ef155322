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


def test_report_equals_the_cli(cli_report):
    bo = pfsqos.bakeoff(designs=DESIGNS, seeds=1, progress=False)
    assert bo.report == read_json(cli_report / "bakeoff.json")


def test_written_report_is_the_cli_s_byte_for_byte(cli_report, tmp_path):
    pfsqos.bakeoff(designs=DESIGNS, seeds=1, out=tmp_path, write_report=True, progress=False)
    for name in ("bakeoff.json", "bakeoff.csv", "results.md"):
        assert (tmp_path / name).read_bytes() == (cli_report / name).read_bytes(), name


def test_matrix_is_workload_by_design(cli_report):
    bo = pfsqos.bakeoff(designs=DESIGNS, seeds=1, progress=False)
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
