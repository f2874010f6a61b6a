"""Queries: txsql table references become temp views over snapshot scans, Spark runs the rest.

Joins between txsql tables, Spark tables and temp views (e.g. notebook DataFrames) just work
because Spark sees only views.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sqlglot import exp

from txsql.engine.scan import scan_snapshot
from txsql.log.snapshot import Snapshot
from txsql.planner.build import table_ref
from txsql.planner.context import RunContext
from txsql.planner.dialect import SPARK
from txsql.planner.statements import Query, TableRef
from txsql.result import Result
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def run_query(ctx: RunContext, statement: Query, text: str) -> Result:
    df, versions = query_dataframe(ctx, statement.expression)
    version = next(iter(versions.values())) if len(versions) == 1 else None
    table = next(iter(versions)) if len(versions) == 1 else None
    return Result(text, "SELECT", version=version, table=table, df=df)


def query_dataframe(
    ctx: RunContext, query: exp.Expr, txn: Transaction | None = None
) -> tuple[DataFrame, dict[str, int]]:
    """Run ``query`` in Spark SQL with txsql tables substituted; also return versions read.

    Reads of the table ``txn`` (or the open explicit transaction) writes see its snapshot
    with staged writes, and join its read set.
    """
    rewritten, versions = substitute_tables(ctx, query, txn)
    return ctx.spark.sql(rewritten.sql(SPARK)), versions


def substitute_tables(
    ctx: RunContext, query: exp.Expr, txn: Transaction | None = None
) -> tuple[exp.Expr, dict[str, int]]:
    """Replace each txsql table in ``query`` by a temp view over its snapshot."""
    if txn is None and ctx.explicit is not None:
        txn = ctx.explicit.txn
    query = query.copy()
    cte_names = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    versions: dict[str, int] = {}
    for table in list(query.find_all(exp.Table)):
        ref = table_ref(table)
        if ref.name is not None and (ref.name.lower() in cte_names or not _is_txsql(ctx, ref)):
            continue  # a CTE, Spark table or temp view: Spark resolves it
        snapshot = _read_snapshot(ctx, ref, txn)
        view = _view_name(snapshot.table_root, snapshot.version, id(snapshot))
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


def _read_snapshot(ctx: RunContext, ref: TableRef, txn: Transaction | None) -> Snapshot:
    time_travel = ref.version is not None or ref.timestamp is not None
    if not time_travel and (txn is not None or ctx.explicit is not None):
        log = ctx.catalog.existing_log(ref)
        reader = txn if txn is not None and log.table_root == txn.table_root else None
        # Inside BEGIN every read is pinned, also before the first write binds the table.
        reader = reader or ctx.read_transaction(log)
        if reader is not None:
            snapshot = reader.current_snapshot()
            assert snapshot is not None
            # Without the query's predicate the whole table counts as read: any concurrent
            # change to it conflicts (Delta's readWholeTable rule), never "no conflict".
            reader.mark_read_whole_table()
            return snapshot
    return ctx.catalog.snapshot(ref, ctx.spark)


def _view_name(table_root: str, version: int, snapshot_id: int) -> str:
    # A snapshot with staged writes shares its version with the committed one: the object
    # id keeps their views apart.
    digest = hashlib.sha1(f"{table_root}:{snapshot_id}".encode()).hexdigest()[:12]
    return f"txsql_{digest}_v{version}"
