"""Runs the selected notebooks in fresh kernels, in the background of the whole test session.

A kernel spends most of a notebook waiting (for its JVM's start-up, on py4j round trips),
and so do many other tests (child processes, fsyncs, servers starting). So the notebooks
start as soon as collection ends, in a thread of their own, ``KERNELS`` kernels at a time,
while the rest of the suite runs; ``test_notebook_runs`` then only waits for its result.
The thread is joined at the end of the session whatever happened, so no kernel outlives it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from tests.notebooks.browser_check import outputs_page, problems

KERNELS = int(os.environ.get("TXSQL_NOTEBOOK_KERNELS", "2"))
# Longest first (seconds on an idle machine), so the last one to start is a short one.
LONGEST_FIRST = ("06", "03", "07", "08", "02", "04", "05", "01")


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
            timeout=600,  # per cell; the kernels share the cores with the other tests
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


class NotebookRuns:
    """The session's one background run of the selected notebooks."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._results: dict[Path, Executed] = {}
        self._failure: BaseException | None = None
        self._work = ""

    def start(self, paths: Iterable[Path]) -> None:
        order = sorted(set(paths), key=lambda p: LONGEST_FIRST.index(p.name[:2]))
        if not order or self._thread is not None:
            return
        self._work = tempfile.mkdtemp(prefix="txsql-notebooks-")

        async def run_all() -> list[Executed]:
            gate = asyncio.Semaphore(KERNELS)
            runs = []
            for p in order:
                (Path(self._work) / p.stem).mkdir()
                runs.append(_execute(p, Path(self._work) / p.stem, gate))
            return await asyncio.gather(*runs)

        def run() -> None:
            try:
                self._results = dict(zip(order, asyncio.run(run_all()), strict=True))
            except BaseException as failure:  # reported by every notebook's test
                self._failure = failure

        self._thread = threading.Thread(target=run, name="notebooks")
        self._thread.start()

    def result(self, path: Path) -> Executed:
        """``path``'s run, once every selected notebook has run."""
        self.wait()
        if self._failure is not None:
            raise self._failure
        return self._results[path]

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def close(self) -> None:
        self.wait()
        if self._work:
            shutil.rmtree(self._work, ignore_errors=True)


RUNS = NotebookRuns()
