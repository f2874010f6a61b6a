"""Parsing PREPARE TRANSACTION, COMMIT / ROLLBACK PREPARED and SHOW TRANSACTIONS."""

from __future__ import annotations

import pytest

from txsql.errors import SqlParseError
from txsql.planner.sql.build import build_statement
from txsql.planner.sql.script import parse_script
from txsql.planner.sql.statements import Commit, Rollback
from txsql.planner.sql.transactions import (
    CommitPrepared,
    PrepareTransaction,
    RollbackPrepared,
    ShowTransactions,
)


def build(text: str) -> object:
    (parsed,) = parse_script(text)
    return build_statement(parsed.expression)


@pytest.mark.parametrize(
    ("text", "expected", "printed"),
    [
        ("PREPARE TRANSACTION 'sink-1'", PrepareTransaction("sink-1"), None),
        ("prepare transaction 'a:b'", PrepareTransaction("a:b"), "PREPARE TRANSACTION 'a:b'"),
        ("COMMIT PREPARED 'x'", CommitPrepared("x"), None),
        ("ROLLBACK PREPARED 'x'", RollbackPrepared("x"), None),
        ("SHOW TRANSACTIONS", ShowTransactions(), None),
        ("SHOW TRANSACTIONS LIMIT 3", ShowTransactions(3), None),
    ],
)
def test_statements(text: str, expected: object, printed: str | None) -> None:
    assert build(text) == expected
    (parsed,) = parse_script(text)
    assert parsed.expression.sql("txsql") == (printed or text)


def test_plain_commit_and_rollback_are_unchanged() -> None:
    assert build("COMMIT") == Commit()
    assert build("ROLLBACK") == Rollback()


@pytest.mark.parametrize(
    "text", ["PREPARE TRANSACTION x", "COMMIT PREPARED", "ROLLBACK PREPARED 1"]
)
def test_the_id_must_be_a_string(text: str) -> None:
    with pytest.raises(SqlParseError, match=r"PREPARE.*'id' \(the id is a string literal\)"):
        build(text)
