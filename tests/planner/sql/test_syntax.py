"""Syntax errors read as a sentence and point at the token that broke, in cell terms."""

from __future__ import annotations

import logging

import pytest

from txsql.errors import SqlParseError
from txsql.planner.sql.script import parse_script

CASES = [
    # (script, message part, line, column of the token the caret is on)
    ("SELEC * FROM t", "`SELEC` does not start a SQL statement; did you mean SELECT?", 1, 1),
    ("SELECT * FRM t", "`FRM` is not a keyword here; did you mean FROM?", 1, 10),
    ("SELECT a + FROM t", "expected an expression after `+`, found `FROM`", 1, 12),
    (
        "SELECT *\nFROM t\nWHERE",
        "expected a condition after WHERE, found the end of the statement",
        3,
        1,
    ),
    ("UPDATE t SET = 1", "expected an expression before `=`", 1, 14),
    ("SELECT (a FROM t", "expected `)` before `FROM`", 1, 11),
    (
        "SELECT 1;\n  INSERT INTO t VALUES (1",
        "expected `)` after `1`, found the end of the statement",
        2,
        25,
    ),
    ("SELECT * FROM t GROUP a", "unexpected `a` after `GROUP`", 1, 23),
    ("SELECT 1;\nSELECT 'abc FROM t", "unclosed string: the ' at column 8", 2, 8),
]


@pytest.mark.parametrize(("script", "message", "line", "column"), CASES)
def test_syntax_error_is_a_sentence_at_the_token(
    script: str, message: str, line: int, column: int
) -> None:
    with pytest.raises(SqlParseError) as caught:
        parse_script(script)
    error = caught.value
    assert message in error.message
    assert (error.line, error.column) == (line, column)
    for internal in ("sqlglot", "<class", "Required keyword", "Invalid expression"):
        assert internal not in str(error)


def test_sqlglot_prints_nothing_for_our_parses(caplog: pytest.LogCaptureFixture) -> None:
    # "Falling back to parsing as a 'Command'" is a sqlglot warning txsql must not show.
    with caplog.at_level(logging.DEBUG):
        parse_script("SHOW TABLES;\nMSCK REPAIR TABLE t")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("sqlglot")] == []
    # Other code using sqlglot still gets its warnings.
    import sqlglot

    with caplog.at_level(logging.WARNING):
        sqlglot.parse_one("MSCK REPAIR TABLE t", read="databricks")
    assert any("Falling back" in r.getMessage() for r in caplog.records)
