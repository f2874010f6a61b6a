"""The statement registry covers every statement the builder can produce."""

from __future__ import annotations

from txsql.planner.registry import STATEMENTS, runner
from txsql.planner.sql.statements import (
    STATEMENT_NAMES,
    Begin,
    Commit,
    PrepareTransaction,
    Rollback,
)

# The session runs transaction control itself; every other statement needs a runner.
CONTROL = {Begin, Commit, Rollback, PrepareTransaction}


def test_registry_has_exactly_the_named_statements() -> None:
    assert set(STATEMENTS) == set(STATEMENT_NAMES) - CONTROL


def test_runner_returns_the_registered_function() -> None:
    for statement_type, entry in STATEMENTS.items():
        assert runner(statement_type) is entry.run
        assert callable(entry.run)
