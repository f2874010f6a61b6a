"""COUNT(*) from the log: a bare ``SELECT COUNT(*) FROM t`` answered without a Spark job.

As Delta Spark does: when every live file records ``numRecords`` in its stats, the table's
row count is their sum minus each file's deletion-vector cardinality. Only exactly
``SELECT COUNT(*) [AS alias] FROM <one txsql table> [alias] [VERSION/TIMESTAMP AS OF]``
(``COUNT(1)`` too) takes this path; any other shape, or a file without the stat, returns
None and the query runs the normal way.
"""

from __future__ import annotations

from sqlglot import exp

from txsql.planner.context import RunContext
from txsql.planner.dml.reads import is_txsql, read_snapshot, record_read
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.refs import TableRef
from txsql.result import Result

SPARK_COUNT_NAME = "count(1)"
"""The column Spark names both ``COUNT(*)`` and ``COUNT(1)`` (it rewrites ``*`` to ``1``)."""

_SELECT_ARGS = {"expressions", "from", "from_"}
_TABLE_ARGS = {"this", "db", "catalog", "alias", "version"}


def count_from_log(ctx: RunContext, query: exp.Expr, text: str) -> Result | None:
    """The Result of ``query`` from the log, or None when it must run the normal way."""
    shape = _bare_count(query)
    if shape is None:
        return None
    table, column = shape
    ref = table_ref(table)
    if not _names_txsql_table(ctx, ref, table):
        return None
    txn = ctx.explicit.txn if ctx.explicit is not None else None
    # The very snapshot the normal path reads (pinned/staged inside BEGIN).
    snapshot, reader = read_snapshot(ctx, ref, txn)
    rows = snapshot.num_records
    if rows is None:
        return None  # a file without numRecords: only a scan knows
    if reader is not None:
        # The same read the normal path records for this shape: the whole table.
        record_read(ctx.spark, reader, snapshot, table, ref)
    # An inline table, not createDataFrame: Spark plans it as a local relation, so even
    # the user's collect() runs no job (a createDataFrame list is a parallelized RDD, one
    # job). Same column as Spark's own answer: BIGINT NOT NULL, Spark's name or the alias.
    quoted = "`" + column.replace("`", "``") + "`"
    df = ctx.spark.sql(f"SELECT * FROM VALUES (CAST({int(rows)} AS BIGINT)) AS v({quoted})")
    return Result(text, "SELECT", version=snapshot.version, table=ref.display, df=df)


def _bare_count(query: exp.Expr) -> tuple[exp.Table, str] | None:
    """(the table, Spark's output column name) when ``query`` is a bare COUNT(*), else None."""
    if type(query) is not exp.Select:
        return None
    if any(value for key, value in query.args.items() if key not in _SELECT_ARGS):
        return None  # WHERE, GROUP BY, HAVING, DISTINCT, LIMIT, WITH, ...
    expressions = query.expressions
    if len(expressions) != 1:
        return None
    projection = expressions[0]
    column = SPARK_COUNT_NAME
    if isinstance(projection, exp.Alias):
        alias = projection.args.get("alias")
        if not isinstance(alias, exp.Identifier):
            return None
        column = alias.name
        projection = projection.this
    if not _is_count_all(projection):
        return None
    source = query.args.get("from") or query.args.get("from_")
    table = source.this if isinstance(source, exp.From) else None
    if type(table) is not exp.Table or not isinstance(table.this, exp.Identifier):
        return None
    if any(value for key, value in table.args.items() if key not in _TABLE_ARGS):
        return None  # TABLESAMPLE, pivots, hints, ...
    alias = table.args.get("alias")
    if alias is not None and (
        alias.args.get("columns") or not isinstance(alias.this, exp.Identifier)
    ):
        return None
    return table, column


def _is_count_all(node: exp.Expr) -> bool:
    if type(node) is not exp.Count or node.expressions:
        return False
    if any(value for key, value in node.args.items() if key not in {"this", "big_int"}):
        return False  # e.g. a FILTER clause
    arg = node.this
    if isinstance(arg, exp.Star):
        return not any(arg.args.values())  # not * EXCEPT (...)
    return isinstance(arg, exp.Literal) and not arg.is_string and arg.this == "1"


def _names_txsql_table(ctx: RunContext, ref: TableRef, table: exp.Table) -> bool:
    if ref.name is None:
        return True  # delta.`/path`
    if not table.args.get("db") and ref.name.lower() in ctx.catalog.views:
        return False  # a txsql temp view: its query runs the normal way
    return is_txsql(ctx, ref)
