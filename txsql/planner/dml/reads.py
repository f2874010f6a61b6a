"""Reading txsql tables in SQL: each becomes a DataFrame over its snapshot, Spark runs the rest.

Joins between txsql tables, Spark tables and temp views (e.g. notebook DataFrames) just work
because Spark sees only tables it knows: the txsql ones are bound as DataFrames
(:mod:`txsql.planner.frames`), which leaves nothing in Spark's catalog.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pyroaring import BitMap64
from sqlglot import exp

from txsql.engine.scan import scan_snapshot, snapshot_row_ids
from txsql.errors import SqlError
from txsql.log.predicates import TRUE, Predicate
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml import row_lineage
from txsql.planner.frames import Frames
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.predicates import prune_files, to_predicate
from txsql.planner.sql.refs import TableRef
from txsql.planner.table_changes import substitute_table_changes
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MAX_TRACKED_READ_ROWS = 10_000
"""Rows a SELECT in a transaction records one by one; beyond it, its files are read whole."""


def query_dataframe(
    ctx: RunContext, query: exp.Expr, txn: Transaction | None = None
) -> tuple[DataFrame, dict[str, int]]:
    """Run ``query`` in Spark SQL with txsql tables substituted; also return versions read.

    Reads of the table ``txn`` (or the open explicit transaction) writes see its snapshot
    with staged writes, and join its read set.
    """
    frames = Frames()
    # table_changes(...) first: its rows become a DataFrame too (SELECT, MERGE ... USING).
    query = substitute_table_changes(ctx, query, frames)
    rewritten, versions = substitute_tables(ctx, query, frames, txn)
    return frames.sql(ctx.spark, rewritten), versions


def substitute_tables(
    ctx: RunContext,
    query: exp.Expr,
    frames: Frames,
    txn: Transaction | None = None,
    *,
    open_views: frozenset[str] = frozenset(),
) -> tuple[exp.Expr, dict[str, int]]:
    """Replace each txsql table in ``query`` by a placeholder bound in ``frames`` to a scan
    of its snapshot."""
    if txn is None and ctx.explicit is not None:
        txn = ctx.explicit.txn
    query = query.copy()
    cte_names = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    versions: dict[str, int] = {}
    lineage = row_lineage.wanted(query)
    with_lineage: list[exp.Table] = []
    for table in list(query.find_all(exp.Table)):
        ref = table_ref(table)
        if ref.name is not None and ref.name.lower() not in cte_names:
            view = ctx.catalog.views.get(ref.name.lower())
            if view is not None and not table.args.get("db"):
                # A txsql temp view: its text, resolved again now (latest versions).
                subquery = expand_view(
                    ctx, ref.name, view, table, frames, txn, versions, open_views
                )
                table.replace(subquery)
                continue
        if ref.name is not None and (ref.name.lower() in cte_names or not is_txsql(ctx, ref)):
            continue  # a CTE, Spark table or temp view: Spark resolves it
        snapshot = _read_snapshot(ctx, ref, txn, table)
        versions[ref.display] = snapshot.version
        alias = table.alias or (ref.name.split(".")[-1] if ref.name else None)
        frame = row_lineage.lineage_frame(ctx.spark, snapshot) if lineage else None
        bound = frames.bind(frame or scan_snapshot(ctx.spark, snapshot), alias)
        table.replace(bound)
        if frame is not None:
            with_lineage.append(bound)
    if lineage and versions and not with_lineage:
        row_lineage.refuse_missing(list(versions))
    row_lineage.hide_from_stars(query, with_lineage)
    return query, versions


def expand_view(
    ctx: RunContext,
    name: str,
    view: exp.Expr,
    table: exp.Table,
    frames: Frames,
    txn: Transaction | None,
    versions: dict[str, int],
    open_views: frozenset[str] = frozenset(),
) -> exp.Subquery:
    """The view's query, its tables substituted as of now, as an aliased subquery.

    The rule (as for a Spark view over a Delta table): a temp view over txsql tables reads
    their LATEST committed version (or the open transaction's snapshot) each time a
    statement references it, never the version current when the view was created.
    """
    key = name.lower()
    if key in open_views:
        raise SqlError(
            f"view {name} refers to itself (directly or through other views)",
            hint="Recreate the view over tables, not over itself.",
        )
    if version_of(table) is not None:
        raise SqlError(
            f"time travel on view {name} is not supported",
            hint="Put VERSION AS OF on the tables inside the view's query instead.",
        )
    inner, inner_versions = substitute_tables(ctx, view, frames, txn, open_views=open_views | {key})
    versions.update(inner_versions)
    alias = table.alias or name
    return exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias)))


def version_of(table: exp.Table) -> exp.Expr | None:
    return table.args.get("version")


def is_txsql(ctx: RunContext, ref: TableRef) -> bool:
    try:
        return ctx.catalog.exists(TableRef(name=ref.name))
    except Exception:
        return False


def _read_snapshot(
    ctx: RunContext, ref: TableRef, txn: Transaction | None, table: exp.Table
) -> Snapshot:
    snapshot, reader = read_snapshot(ctx, ref, txn)
    if reader is not None:
        record_read(ctx.spark, reader, snapshot, table, ref)
    return snapshot


def read_snapshot(
    ctx: RunContext, ref: TableRef, txn: Transaction | None
) -> tuple[Snapshot, Transaction | None]:
    """The snapshot ``ref`` reads, and the transaction that must record the read (or None).

    Split from the recording so that COUNT(*) from the log reads exactly this snapshot and
    records the read only when it answers (see planner/operations/count.py).
    """
    time_travel = ref.version is not None or ref.timestamp is not None
    if not time_travel and (txn is not None or ctx.explicit is not None):
        log = ctx.catalog.existing_log(ref)
        reader = txn if txn is not None and log.table_root == txn.table_root else None
        # Inside BEGIN every read is pinned, also before the first write binds the table.
        reader = reader or ctx.read_transaction(log, writer=txn)
        if reader is not None:
            snapshot = reader.current_snapshot()
            assert snapshot is not None
            return snapshot, reader
    return ctx.latest_snapshot(ref), None


def record_read(
    spark: SparkSession, reader: Transaction, snapshot: Snapshot, table: exp.Table, ref: TableRef
) -> None:
    """Record what this reference reads: its WHERE and the files left after pruning.

    Only a reference that is the sole source of its SELECT, filtered by a WHERE over its
    own columns without subqueries, is scoped: its predicate, the files left after
    pruning and (one small Spark job) the rows it matched. Anything else counts as a read
    of the whole table (Delta's readWholeTable rule), never "no conflict".
    """
    predicate = _scoped_predicate(table, snapshot, ref)
    if predicate is None:
        reader.mark_read_whole_table()
        return
    kept, _ = prune_files(snapshot, predicate)
    rows = None
    where = _where(table)
    if kept and where is not None and predicate != TRUE:
        rows = _matched_rows(spark, snapshot, table, where)
    reader.record_scan(predicate, kept, rows)


def _where(table: exp.Table) -> exp.Expr | None:
    select = table.parent.parent if isinstance(table.parent, exp.From) else None
    where = select.args.get("where") if isinstance(select, exp.Select) else None
    return where.this if where is not None else None


def _matched_rows(
    spark: SparkSession, snapshot: Snapshot, table: exp.Table, condition: exp.Expr
) -> dict[str, BitMap64] | None:
    """The physical rows the WHERE matches, per file: one small Spark job.

    With them a winner that changes other rows of a file we read is no conflict (row
    level). None (rows unknown: file-level checks) when more than
    :data:`MAX_TRACKED_READ_ROWS` match or Spark cannot evaluate the condition here.
    """
    frames = Frames()
    scan = frames.bind(scan_snapshot(spark, snapshot, with_row_ids=True), table.alias or table.name)
    file_column, row_column = snapshot_row_ids(snapshot)  # never a user column's name
    query = (
        exp.select(exp.column(file_column, quoted=True), exp.column(row_column, quoted=True))
        .from_(scan)
        .where(condition.copy())
    )
    try:
        found = frames.sql(spark, query).limit(MAX_TRACKED_READ_ROWS + 1).collect()
    except Exception:
        return None  # e.g. a user column named like a hidden one: stay at file level
    if len(found) > MAX_TRACKED_READ_ROWS:
        return None
    rows: dict[str, BitMap64] = {}
    for path, index in found:
        rows.setdefault(path, BitMap64()).add(index)
    return rows


def _scoped_predicate(table: exp.Table, snapshot: Snapshot, ref: TableRef) -> Predicate | None:
    select = table.parent.parent if isinstance(table.parent, exp.From) else None
    if not isinstance(select, exp.Select) or select.args.get("joins"):
        return None
    if select.args.get("laterals") or select.args.get("pivots") or table.args.get("pivots"):
        return None
    where = select.args.get("where")
    if where is None:
        return TRUE
    condition = where.this
    if any(True for _ in condition.find_all(exp.Query, exp.Subquery)):
        return None  # a subquery may read this table again, or another one
    schema = json.loads(snapshot.metadata.schema_string)
    names = {f["name"].lower() for f in schema.get("fields", [])}
    qualifiers = {q.lower() for q in (table.alias, table.name, ref.name or "") if q}
    for column in condition.find_all(exp.Column):
        qualifier = column.table.lower() if column.table else ""
        if column.args.get("db") or (qualifier and qualifier not in qualifiers):
            return None  # an outer (correlated) column: not a predicate on this table
        if column.name.lower() not in names:
            return None
    return to_predicate(condition, schema, tuple(qualifiers))
