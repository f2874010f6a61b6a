"""Spark-only statements: which ones txsql hands to Spark, and which it refuses by name.

Spark runs session statements that never write a table (SET, CLEAR CACHE, CACHE /
UNCACHE, DROP VIEW) as given; txsql resolves
its own tables inside them where a query appears (``CACHE TABLE c AS SELECT ... FROM
txsql_table``). Statements Spark would run but that write a table's files or catalog entry
behind txsql's log (LOAD DATA, MSCK REPAIR) are refused by name with the txsql statement to
use instead; anything else stays "not supported" (the generic error lists what txsql runs).
TRUNCATE, DROP TABLE, USE and SHOW TABLES/SCHEMAS are txsql's own statements (ddl.py).
"""

from __future__ import annotations

from sqlglot import exp

from txsql.errors import UnsupportedStatementError
from txsql.planner.sql.statements import SparkStatement

# Commands sqlglot keeps as opaque text whose first word says what they do.
_SPARK_COMMANDS = frozenset({"SET", "CLEAR"})
_WRITING_COMMANDS = {
    "LOAD": "LOAD DATA writes files behind txsql's log; use INSERT INTO t SELECT ... instead.",
    "MSCK": "MSCK REPAIR edits Spark's catalog; txsql tables keep their partitions in the "
    "Delta log, nothing to repair.",
}


def build_passthrough(expression: exp.Expr) -> SparkStatement | None:
    """A SparkStatement for a Spark-only statement; None if txsql does not know it.

    Raises:
        UnsupportedStatementError: the statement would write a table behind txsql's back.
    """
    if isinstance(expression, exp.Command):
        word = (str(expression.this).split() or [""])[0].upper()
        if word in _WRITING_COMMANDS:
            raise UnsupportedStatementError(
                f"{word} is not supported", hint=_WRITING_COMMANDS[word]
            )
        return SparkStatement(expression) if word in _SPARK_COMMANDS else None
    if isinstance(expression, (exp.Set, exp.Cache, exp.Uncache)):
        return SparkStatement(expression)
    if isinstance(expression, exp.Drop) and str(expression.args.get("kind")).upper() == "VIEW":
        return SparkStatement(expression)
    return None


__all__ = ["build_passthrough"]
