"""Every notebook in notebooks/ runs end to end in a fresh kernel, and its outputs look
right in a browser (tests/notebooks/browser_check.py).

Each notebook gets its own kernel (and so its own Spark). The notebooks whose tests were
selected start running when collection ends, in the background of the rest of the suite
(:mod:`tests.notebooks.runner`); each test here waits for its notebook's result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notebooks.runner import RUNS

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
        "08_modern_tables.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    run = RUNS.result(path)
    if run.error is not None:
        raise run.error
    notebook = run.notebook
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
    assert run.browser_problems == []
    print(f"{path.name}: {run.seconds:.1f} s")
