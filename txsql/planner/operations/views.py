"""CREATE [OR REPLACE] TEMP VIEW and the Spark-only statements txsql hands to Spark.

The view rule: a temp view whose query names a txsql table (or another such view) is kept
in the session (``Catalog.views``), not in Spark. Each later statement that names the view
gets the view's query in its place with the txsql tables resolved again at that moment,
so the view reads the LATEST committed version every time it is queried (inside BEGIN:
the transaction's snapshot), as a Spark view over a Delta table does. A Spark view would
instead pin the files of the version current at creation. A view over Spark tables only
is created in Spark as given. Such session views are visible to txsql statements (the
magic, ``Session.sql``), not to ``spark.sql``.
"""

from __future__ import annotations

from sqlglot import exp

from txsql.errors import TableExistsError, UnsupportedStatementError
from txsql.planner.context import RunContext
from txsql.planner.dml.reads import substitute_tables
from txsql.planner.frames import Frames
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.refs import TableRef
from txsql.planner.sql.statements import CreateView, SparkStatement
from txsql.result import Result


def run_create_view(ctx: RunContext, statement: CreateView, text: str) -> Result:
    key = statement.name.lower()
    exists = key in ctx.catalog.views or ctx.spark.catalog.tableExists(statement.name)
    if exists and not statement.replace:
        if statement.if_not_exists:
            return Result(text, "CREATE VIEW", message=f"view {statement.name} already exists")
        raise TableExistsError(
            f"view {statement.name} already exists",
            hint="Use CREATE OR REPLACE TEMP VIEW to redefine it.",
        )
    # Resolve once now: a bad query fails here (Spark analyses it), not at first use.
    frames = Frames()
    resolved, _ = substitute_tables(ctx, statement.query, frames, open_views=frozenset({key}))
    frames.sql(ctx.spark, resolved).schema  # noqa: B018 - analysis only, no job
    if _names_txsql(ctx, statement.query):
        ctx.catalog.views[key] = statement.query.copy()
        ctx.spark.catalog.dropTempView(statement.name)  # no stale Spark view of that name
        where = "kept in the session; reads the latest versions each time"
    else:
        ctx.catalog.views.pop(key, None)
        ctx.spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW `{statement.name}` AS {statement.query.sql(SPARK)}"
        )
        where = "created in Spark"
    return Result(text, "CREATE VIEW", message=f"view {statement.name} {where}")


def run_spark_statement(ctx: RunContext, statement: SparkStatement, text: str) -> Result:
    expression = statement.expression
    if isinstance(expression, exp.Drop):
        return _drop_view(ctx, expression, text)
    if isinstance(expression, exp.Cache) and expression.expression is not None:
        # CACHE TABLE c AS SELECT ...: c becomes a temp view of the query over the snapshots
        # read now (a view of the DataFrame keeps its plan, not text that names bound
        # placeholders), then Spark caches that view.
        expression = expression.copy()
        frames = Frames()
        query, _ = substitute_tables(ctx, expression.expression, frames)
        frames.sql(ctx.spark, query).createOrReplaceTempView(expression.this.name)
        expression.set("expression", None)
    df = ctx.spark.sql(expression.sql(SPARK))
    return Result(text, _operation(expression), df=df if df.columns else None)


def _drop_view(ctx: RunContext, drop: exp.Drop, text: str) -> Result:
    targets = drop.args.get("tables") or [drop.this]
    names = [t.name for t in targets if isinstance(t, exp.Table)]
    for name in names:
        if name.lower() not in ctx.catalog.views and _is_table(ctx, name):
            raise UnsupportedStatementError(
                f"DROP VIEW {name}: {name} is a txsql table, not a view",
                hint=f"Use DROP TABLE {name} to drop the table.",
            )
    kept = [n for n in names if ctx.catalog.views.pop(n.lower(), None) is not None]
    for name in names:
        if name in kept:
            ctx.spark.catalog.dropTempView(name)
        else:
            exists = " IF EXISTS" if drop.args.get("exists") else ""
            ctx.spark.sql(f"DROP VIEW{exists} `{name}`")
    return Result(text, "DROP VIEW", message=f"dropped {', '.join(names)}")


def _is_table(ctx: RunContext, name: str) -> bool:
    try:
        return ctx.catalog.exists(TableRef(name=name))
    except Exception:  # not a name txsql can hold
        return False


def _names_txsql(ctx: RunContext, query: exp.Expr) -> bool:
    """Does ``query`` read a txsql table or a session view (directly)?"""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    for table in query.find_all(exp.Table):
        ref = table_ref(table)
        if ref.path is not None:
            return True
        if ref.name is None or ref.name.lower() in ctes:
            continue
        if ref.name.lower() in ctx.catalog.views:
            return True
        if _is_table(ctx, ref.name):
            return True
    return False


def _operation(expression: exp.Expr) -> str:
    if isinstance(expression, exp.Command):
        return str(expression.this).upper()
    return expression.key.upper()


__all__ = ["run_create_view", "run_spark_statement"]
