"""The public API is documented: a help() docstring on every public function, class, method
and property, and docs/python.md giving every function's and method's signature; its string
columns are Arrow-backed (pyarrow installed) and its frames small."""

import inspect

import pytest

import pfsqos
from conftest import REPO

DOC = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
CLASSES = [pfsqos.Scenario, pfsqos.Table, pfsqos.TableList, pfsqos.ValueList, pfsqos.Run,
           pfsqos.Comparison, pfsqos.Bakeoff]
FUNCTIONS = [pfsqos.simulate, pfsqos.compare, pfsqos.bakeoff, pfsqos.policies,
             pfsqos.trace.import_darshan]


def _signature(f, name=None):
    """`name(a, b=1, *, c=None)`: a signature as docs/python.md writes it (no annotations)."""
    parts, star = [], False
    for p in inspect.signature(f).parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star = True
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        default = f'"{p.default}"' if isinstance(p.default, str) else repr(p.default)
        parts.append(p.name if p.default is p.empty else f"{p.name}={default}")
    return f"{name or f.__name__}({', '.join(parts)})"


def _members(cls):
    """The public methods and properties `cls` defines or inherits from the package."""
    out = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("pfsqos"):
            for name, v in vars(klass).items():
                if not name.startswith("_"):
                    out[name] = v
    return out


def test_every_public_name_has_a_docstring():
    missing = []
    for f in FUNCTIONS:
        if not (f.__doc__ or "").strip():
            missing.append(f.__qualname__)
    for cls in CLASSES + [pfsqos.Error, pfsqos.ScenarioError, pfsqos.PolicyError]:
        if not (cls.__doc__ or "").strip():
            missing.append(cls.__name__)
    for cls in CLASSES:
        for name, v in _members(cls).items():
            target = v.fget if isinstance(v, property) else getattr(v, "__func__", v)
            if callable(target) and not (target.__doc__ or "").strip():
                missing.append(f"{cls.__name__}.{name}")
    assert missing == []
    assert "Runs ``scenario`` under one policy" in pfsqos.simulate.__doc__


def test_docs_give_every_signature():
    missing = [_signature(f) for f in FUNCTIONS if _signature(f) not in DOC]
    for cls in CLASSES:
        for name, v in _members(cls).items():
            if isinstance(v, property):
                if f".{name}" not in DOC:
                    missing.append(f"{cls.__name__}.{name}")
            elif callable(getattr(v, "__func__", v)):
                sig = _signature(getattr(cls, name), name)
                if sig not in DOC:
                    missing.append(f"{cls.__name__}: {sig}")
    assert missing == [], "docs/python.md lacks these signatures"


@pytest.fixture(scope="module")
def arrow():
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("SKIP: pyarrow is not installed: string columns are numpy objects")
        pytest.skip("pyarrow is not installed")


def _is_arrow(dtype):
    return getattr(dtype, "storage", None) == "pyarrow" or "pyarrow" in str(dtype)


def test_string_columns_are_arrow_backed(arrow, two_jobs):
    run = pfsqos.simulate(two_jobs, policy="adaptbf", seed=1, progress=False)
    assert _is_arrow(run.jobs["job_id"].dtype)
    assert _is_arrow(run.timeseries["job"].cat.categories.dtype)
    assert _is_arrow(run.timeseries["ost"].cat.categories.dtype)
    for col in ("ost", "job_id", "metric"):
        assert _is_arrow(run.control_trace[col].dtype), col
    p = pfsqos.policies()
    assert all(_is_arrow(p[c].dtype) for c in p.columns)
    cmp = pfsqos.compare(two_jobs, policies=["nobw", "adaptbf"], progress=False)
    assert _is_arrow(cmp.jobs["policy"].dtype) and _is_arrow(cmp.jobs["job_id"].dtype)


def test_the_timeseries_is_small(two_jobs):
    """Per row: an 8-byte time, two 1-byte category codes, 8 bytes moved and an 8-byte rate
    (Python objects would take some 50 bytes a cell)."""
    ts = pfsqos.simulate(two_jobs, policy="adaptbf", seed=1, progress=False).timeseries
    per_row = ts.memory_usage(deep=True, index=False).sum() / len(ts)
    assert len(ts) > 100 and per_row <= 8 + 1 + 1 + 8 + 8 + 1
