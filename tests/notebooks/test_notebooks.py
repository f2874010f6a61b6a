"""Every notebook in notebooks/ runs end to end in a fresh kernel, and its outputs look
right in a browser (tests/notebooks/browser_check.py)."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.notebooks.browser_check import outputs_page, problems

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))

pytestmark = pytest.mark.slow


def test_notebooks_exist() -> None:
    names = [p.name for p in NOTEBOOKS]
    assert names == [
        "01_quickstart.ipynb",
        "02_time_travel.ipynb",
        "03_concurrency_and_isolation.ipynb",
        "04_deletion_vectors_inside.ipynb",
        "05_exactly_once.ipynb",
        "06_conflict_matrix.ipynb",
        "07_transactions_across_tables.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    started = time.perf_counter()
    # Raises CellExecutionError on the first failing cell, except in cells tagged
    # raises-exception (a teaching cell whose output is the error, e.g. a conflict card).
    client.execute()
    for cell in notebook.cells:
        raised = [o["ename"] for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        expected = cell.get("metadata", {}).get("txsql", {}).get("expected_error")
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            assert expected is not None, f"say which error this cell shows: {cell.source!r}"
            assert raised == [expected], cell.source
        else:
            assert raised == [], cell.source
    # Spark starts quietly (its JVM output goes to a log file) and sqlglot prints nothing.
    red = [
        output.get("text", "")
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stderr"
    ]
    assert red == []
    # What a reader sees: every output laid out on a 1000 px page in headless Chromium.
    assert problems(outputs_page(notebook, path.name), tmp_path) == []
    print(f"{path.name}: {time.perf_counter() - started:.1f} s")
