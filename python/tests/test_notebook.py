"""The example notebook executes (nbclient) and draws its figures."""

import base64
import shutil

import pytest

from conftest import REPO

NOTEBOOK = REPO / "examples" / "notebooks" / "adaptbf-priorities.ipynb"


def test_the_notebook_executes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    # Run where it lives (it finds the repository from there); the executed copy goes to
    # the test's directory, the committed notebook is not touched.
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError when a cell fails (its asserts included)
    nbformat.write(nb, tmp_path / "executed.ipynb")
    pngs = [base64.b64decode(o["data"]["image/png"])
            for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(pngs) == 2, "two figures: throughput over time, and the period sweep"
    # A figure with axes but nothing drawn still makes a PNG; the notebook's own cells assert
    # the lines, and a drawn figure is far larger than an empty frame's few KiB.
    assert all(p.startswith(b"\x89PNG") and len(p) > 20_000 for p in pngs)
