"""Queries: txsql table references become temp views over snapshot scans, Spark runs the rest.

Joins between txsql tables, Spark tables and temp views (e.g. notebook DataFrames) just work
because Spark sees only views.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sqlglot import exp

from txsql.engine.scan import scan_snapshot
from txsql.planner.build import table_ref
from txsql.planner.context import RunContext
from txsql.planner.dialect import SPARK
from txsql.planner.statements import Query, TableRef
from txsql.result import Result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def run_query(ctx: RunContext, statement: Query, text: str) -> Result:
    df, versions = query_dataframe(ctx, statement.expression)
    version = next(iter(versions.values())) if len(versions) == 1 else None
    table = next(iter(versions)) if len(versions) == 1 else None
    return Result(text, "SELECT", version=version, table=table, df=df)


def query_dataframe(ctx: RunContext, query: exp.Expr) -> tuple[DataFrame, dict[str, int]]:
    """Run ``query`` in Spark SQL with txsql tables substituted; also return versions read."""
    rewritten, versions = substitute_tables(ctx, query)
    return ctx.spark.sql(rewritten.sql(SPARK)), versions


def substitute_tables(ctx: RunContext, query: exp.Expr) -> tuple[exp.Expr, dict[str, int]]:
    """Replace each txsql table in ``query`` by a temp view over its snapshot."""
    query = query.copy()
    cte_names = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    versions: dict[str, int] = {}
    for table in list(query.find_all(exp.Table)):
        ref = table_ref(table)
        if ref.name is not None and (ref.name.lower() in cte_names or not _is_txsql(ctx, ref)):
            continue  # a CTE, Spark table or temp view: Spark resolves it
        snapshot = ctx.catalog.snapshot(ref, ctx.spark)
        view = _view_name(snapshot.table_root, snapshot.version)
        scan_snapshot(ctx.spark, snapshot).createOrReplaceTempView(view)
        versions[ref.display] = snapshot.version
        alias = table.alias or (ref.name.split(".")[-1] if ref.name else None)
        replacement = exp.to_table(view)
        if alias:
            replacement.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        table.replace(replacement)
    return query, versions


def _is_txsql(ctx: RunContext, ref: TableRef) -> bool:
    try:
        return ctx.catalog.exists(TableRef(name=ref.name))
    except Exception:
        return False


def _view_name(table_root: str, version: int) -> str:
    digest = hashlib.sha1(table_root.encode()).hexdigest()[:12]
    return f"txsql_{digest}_v{version}"
