"""Every notebook in notebooks/ runs end to end in a fresh kernel, and its outputs look
right in a browser (tests/notebooks/browser_check.py).

Each notebook still gets its own kernel (and so its own Spark), but two kernels run at a
time: a kernel spends much of a notebook waiting (for its JVM's start-up, on py4j round
trips) while this process waits for it, so two share the machine's cores better than one
(``TXSQL_NOTEBOOK_KERNELS`` sets how many). Only the notebooks whose tests were selected
are run.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.notebooks.browser_check import outputs_page, problems

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
KERNELS = int(os.environ.get("TXSQL_NOTEBOOK_KERNELS", "2"))
# Longest first (seconds on an idle machine), so the last one to start is a short one.
LONGEST_FIRST = ("06", "03", "07", "02", "04", "05", "01")

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


@dataclass(frozen=True)
class Executed:
    """A notebook after its run: its cells with outputs, or the error that stopped it."""

    notebook: Any
    error: BaseException | None
    browser_problems: list[str]
    seconds: float


async def _execute(path: Path, work: Path, gate: asyncio.Semaphore) -> Executed:
    async with gate:
        notebook = nbformat.read(path, as_version=4)
        client = NotebookClient(
            notebook,
            timeout=600,  # per cell; two kernels share the cores
            kernel_name="python3",
            resources={"metadata": {"path": str(work)}},
        )
        started = time.perf_counter()
        try:
            # Raises CellExecutionError on the first failing cell, except in cells tagged
            # raises-exception (a teaching cell whose output is the error, e.g. a conflict
            # card).
            await client.async_execute()
        except Exception as error:
            return Executed(notebook, error, [], time.perf_counter() - started)
        seconds = time.perf_counter() - started
    # What a reader sees: every output laid out on a 1000 px page in headless Chromium.
    found = await asyncio.to_thread(problems, outputs_page(notebook, path.name), work)
    return Executed(notebook, None, found, seconds)


@pytest.fixture(scope="module")
def executed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[Path, Executed]:
    """Every selected notebook, run in its own fresh kernel, ``KERNELS`` at a time."""
    selected = {
        item.callspec.params["path"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_notebook_runs"
    }
    order = sorted(selected, key=lambda p: LONGEST_FIRST.index(p.name[:2]))

    async def run_all() -> list[Executed]:
        gate = asyncio.Semaphore(KERNELS)
        return await asyncio.gather(
            *(_execute(p, tmp_path_factory.mktemp(p.stem), gate) for p in order)
        )

    return dict(zip(order, asyncio.run(run_all())))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, executed: dict[Path, Executed]) -> None:
    run = executed[path]
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
