"""Session: the one path the magic, the Python API and the tests all use to run SQL."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from txsql.errors import SqlError, TxSqlError
from txsql.planner.build import build_statement
from txsql.planner.catalog import Catalog
from txsql.planner.context import RunContext
from txsql.planner.history import run_describe_history
from txsql.planner.params import bind_parameters
from txsql.planner.query import run_query
from txsql.planner.script import ParsedStatement, parse_script
from txsql.planner.statements import (
    CreateTable,
    DescribeHistory,
    InsertInto,
    Query,
    Statement,
)
from txsql.planner.writes import run_create_table, run_insert
from txsql.result import Result
from txsql.table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_WAREHOUSE = "txsql-warehouse"

_RUNNERS: dict[type, Callable[[RunContext, Any, str], Result]] = {
    CreateTable: run_create_table,
    InsertInto: run_insert,
    Query: run_query,
    DescribeHistory: run_describe_history,
}


class Session:
    """Runs txsql statements on a SparkSession against Delta tables in a warehouse.

    Args:
        spark: the SparkSession to use (classic or Spark Connect); by default the active
            one, or a new local one.
        warehouse: directory holding tables addressed by name (default
            ``./txsql-warehouse``); tables can always be addressed by path as
            ``delta.`/path```.
        max_commit_attempts: how many lost commit races a statement may retry.
    """

    def __init__(
        self,
        spark: SparkSession | None = None,
        warehouse: str | None = None,
        *,
        max_commit_attempts: int = 10_000,
    ) -> None:
        from txsql.engine.spark import local_session, prepare_session

        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession() or local_session()
        self.spark = prepare_session(spark)
        self.warehouse = os.path.abspath(warehouse or DEFAULT_WAREHOUSE)
        self.catalog = Catalog(self.warehouse)
        self._context = RunContext(self.spark, self.catalog, max_commit_attempts)

    def sql(self, text: str, params: Mapping[str, Any] | None = None) -> Result:
        """Run one statement or a script of several; return the last statement's result.

        ``:name`` placeholders are bound from ``params`` as typed literals.
        """
        results = self.run_script(text, params)
        if not results:
            raise SqlError("no SQL statement to run", hint="Write a statement, e.g. SELECT 1.")
        return results[-1]

    def run_script(self, text: str, params: Mapping[str, Any] | None = None) -> list[Result]:
        """Run every statement of ``text`` in order; stop at the first error.

        The whole script is parsed and its parameters bound before anything runs, so a
        syntax error or a missing parameter anywhere runs nothing.
        """
        statements = []
        for parsed in parse_script(text):
            try:
                expression = bind_parameters(parsed.expression, params or {})
            except TxSqlError as e:
                e.locate(parsed.source.text, parsed.source.line, parsed.source.column)
                raise
            statements.append(ParsedStatement(parsed.source, expression))
        return [self._run(parsed) for parsed in statements]

    def table(self, name_or_path: str) -> Table:
        """A handle on a table by name, ``delta.`/path``` or a plain path."""
        return Table(self, name_or_path)

    def _run(self, parsed: ParsedStatement) -> Result:
        started = time.perf_counter()
        source = parsed.source
        try:
            statement: Statement = build_statement(parsed.expression)
            result = _RUNNERS[type(statement)](self._context, statement, source.text)
        except TxSqlError as e:
            e.locate(source.text, source.line, source.column)
            raise
        except Exception as e:
            raise _spark_error(e, source.text, source.line, source.column) from None
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        return result


def _spark_error(error: Exception, statement: str, line: int, column: int) -> TxSqlError:
    """Wrap an engine error so it names the statement and its cell position."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if "NOT NULL constraint violated" in str(error):
        detail = str(error).split("NOT NULL constraint violated", 1)[1].splitlines()[0]
        first = "NOT NULL constraint violated" + detail.split(".")[0]
    return SqlError(
        f"{first} in `{' '.join(statement.split())[:80]}`",
        statement=statement,
        line=line,
        column=column,
        hint="Fix the statement; the table is unchanged.",
    )
