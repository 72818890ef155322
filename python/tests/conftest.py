"""Fixtures: the repository, the `pfsqos` command line to compare against, small scenarios."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TWO_JOBS = REPO / "scenarios" / "examples" / "two-jobs.toml"


def _cli_path() -> Path:
    """The command line binary: $PFSQOS_CLI, else the newest of the usual build outputs."""
    given = os.environ.get("PFSQOS_CLI")
    if given:
        return Path(given)
    candidates = []
    for target in filter(None, [os.environ.get("CARGO_TARGET_DIR"), str(REPO / "target")]):
        for profile in ("debug", "release"):
            p = Path(target) / profile / "pfsqos"
            if p.is_file():
                candidates.append(p)
    if not candidates:
        found = shutil.which("pfsqos")
        if found:
            return Path(found)
        pytest.fail("no pfsqos binary: build it (cargo build -p pfsqos-cli) or set PFSQOS_CLI")
    return max(candidates, key=lambda p: p.stat().st_mtime)


@pytest.fixture(scope="session")
def cli():
    """Runs the command line; returns (exit code, stdout, stderr)."""
    path = _cli_path()

    def run(*args, cwd=None, check=True):
        p = subprocess.run([str(path), *map(str, args)], cwd=cwd, capture_output=True,
                           text=True, timeout=600)
        if check and p.returncode != 0:
            raise AssertionError(f"pfsqos {' '.join(map(str, args))} failed ({p.returncode}):\n"
                                 f"{p.stderr}")
        return p.returncode, p.stdout, p.stderr

    return run


def cli_error(stderr: str) -> str:
    """The message of the command line's `pfsqos: error: MESSAGE` line."""
    lines = [l for l in stderr.splitlines() if l.startswith("pfsqos: error: ")]
    assert len(lines) == 1, stderr
    return lines[0][len("pfsqos: error: "):]


@pytest.fixture
def two_jobs(tmp_path):
    """A copy of scenarios/examples/two-jobs.toml in the test's directory (its path)."""
    path = tmp_path / "two-jobs.toml"
    shutil.copy(TWO_JOBS, path)
    return path


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
