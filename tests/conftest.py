"""Shared fixtures: one local SparkSession for the whole test session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from tests.fixture_paths import find_fixtures
from tests.notebooks.runner import RUNS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FIXTURES = find_fixtures()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the selected notebooks in the background (tests/notebooks/runner.py)."""
    if session.config.option.collectonly:
        return
    RUNS.start(
        cast(Path, item.callspec.params["path"])
        for item in session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_notebook_runs"
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    RUNS.close()  # no kernel outlives the session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from txsql.engine.spark import local_session

    session = local_session("local[2]", "txsql-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture()
def fixture_copy(tmp_path: Path, fixtures_dir: Path):  # type: ignore[no-untyped-def]
    """Return a function copying a fixture table into tmp_path (fixtures are read-only)."""

    def copy(relative: str) -> Path:
        dest = tmp_path / Path(relative).name
        shutil.copytree(fixtures_dir / relative, dest)
        return dest

    os.environ.setdefault("PYSPARK_PYTHON", shutil.which("python") or "python")
    return copy


@pytest.fixture()
def spawnable_main(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let multiprocessing's spawn start children even after IPython tests ran.

    IPython's InteractiveShell replaces ``sys.modules["__main__"]``; spawn would then try to
    re-import that fake module in every child. A plain module makes spawn skip it.
    """
    import sys
    import types

    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
