"""Shared helpers for the magic tests: an in-process IPython shell wired to txsql."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture()
def ip(spark: Any, tmp_path: Path) -> Iterator[Any]:
    """The IPython singleton with fresh txsql magics and a per-test warehouse."""
    from IPython.core.interactiveshell import InteractiveShell

    import txsql.magics
    from txsql.magics.magic import TxSqlMagics

    shell = InteractiveShell.instance()
    shell.reset(new_session=False)
    _forget_config(shell)
    txsql.magics.register(shell)
    magics = next(m for m in reversed(shell.configurables) if isinstance(m, TxSqlMagics))
    magics.warehouse = str(tmp_path / "wh")
    shell.user_ns["spark"] = spark
    yield shell
    shell.configurables.remove(magics)
    shell.Completer.custom_matchers.clear()
    _forget_config(shell)


def _forget_config(shell: Any) -> None:
    # `%config TxSql.x = ...` merges into the shell's shared Config; tests must not leak it
    for section in ("TxSql", "TxSqlMagics"):
        shell.config.pop(section, None)


def magics_of(shell: Any) -> Any:
    """The TxSqlMagics instance currently registered on ``shell``."""
    from txsql.magics.magic import TxSqlMagics

    return next(m for m in reversed(shell.configurables) if isinstance(m, TxSqlMagics))


def cell(shell: Any, body: str, line: str = "") -> Any:
    """Run a ``%%txsql`` cell and return what it returns (errors propagate)."""
    return shell.run_cell_magic("txsql", line, body)
