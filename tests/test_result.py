"""Result: fetching a query's rows (collect, take, to_pandas, show) raises typed txsql
errors, never Spark's; commits return their metrics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import txsql
from txsql.errors import (
    ArithmeticOverflowError,
    DivisionByZeroError,
    InvalidCastError,
    ParameterTypeError,
    SqlError,
    TxSqlError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

FETCHES: dict[str, Callable[[txsql.Result], Any]] = {
    "collect": lambda r: r.collect(),
    "take": lambda r: r.take(5),
    "to_pandas": lambda r: r.to_pandas(),
    "show": lambda r: r.show(),
}


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    session = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    session.sql("CREATE TABLE h (id BIGINT, n INT)")
    session.sql("INSERT INTO h VALUES (1, 2147483647), (2, 0)")
    return session


@pytest.mark.parametrize("fetch", sorted(FETCHES))
def test_fetch_errors_are_typed(
    s: txsql.Session, fetch: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # statement, parameters, error, where the error points (line, column)
    failing: list[tuple[str, dict[str, Any], type[TxSqlError], tuple[int, int]]] = [
        ("SELECT * FROM h WHERE id = 'abc'", {}, InvalidCastError, (1, 23)),
        ("SELECT 1/0", {}, DivisionByZeroError, (1, 8)),
        ("SELECT id / n FROM h", {}, DivisionByZeroError, (1, 8)),
        ("SELECT n + 1 FROM h", {}, ArithmeticOverflowError, (1, 8)),
        ("SELECT * FROM h\nWHERE id = :k", {"k": "abc"}, ParameterTypeError, (2, 12)),
    ]
    for statement, params, error_type, position in failing:
        result = s.sql(statement, params)  # planning succeeds: rows are computed lazily
        with pytest.raises(error_type) as caught:
            FETCHES[fetch](result)
        error = caught.value
        assert type(error) is error_type, statement
        assert error.statement == statement and error.hint, statement
        assert error.__cause__ is None and error.__suppress_context__, statement
        assert "SQLSTATE" not in str(error) and "spark.sql.ansi" not in str(error), statement
        assert (error.line, error.column) == position, statement
    printed = capsys.readouterr()
    assert "SQLSTATE" not in printed.out + printed.err  # no Spark log record or warning


def test_a_wrong_parameter_is_named(s: txsql.Session) -> None:
    with pytest.raises(ParameterTypeError) as caught:
        s.sql("SELECT * FROM h WHERE id = :k", {"k": "abc"}).collect()
    assert caught.value.parameter == "k" and "BIGINT" in caught.value.message
    with pytest.raises(ParameterTypeError) as listed:
        s.sql("SELECT * FROM h WHERE id = :k", {"k": [1, 2]})
    assert listed.value.parameter == "k" and "ARRAY" in listed.value.message
    # A list is fine where the statement expects several values.
    assert [r.id for r in s.sql("SELECT id FROM h WHERE id IN (:k)", {"k": [1, 2]}).collect()] in (
        [1, 2],
        [2, 1],
    )


def test_other_fetch_failures_are_sql_errors(s: txsql.Session) -> None:
    result = s.sql("SELECT raise_error('boom') FROM h")
    with pytest.raises(SqlError) as caught:
        result.collect()
    assert "boom" in caught.value.message and "nothing was committed" in caught.value.hint


def test_rows_and_commit_metrics(s: txsql.Session, capsys: pytest.CaptureFixture[str]) -> None:
    query = s.sql("SELECT id FROM h ORDER BY id")
    assert [r.id for r in query.collect()] == [1, 2]
    assert [r.id for r in query.take(1)] == [1]
    assert list(query.to_pandas()["id"]) == [1, 2]
    query.show()
    assert "| id|" in capsys.readouterr().out
    commit = s.sql("INSERT INTO h VALUES (3, 3)")
    assert [r.asDict() for r in commit.collect()] == [commit.metrics]
    assert commit.metrics["num_inserted_rows"] == 1
