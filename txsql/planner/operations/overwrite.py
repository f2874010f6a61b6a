"""INSERT OVERWRITE (whole table, static and dynamic partitions) and REPLACE WHERE.

What each form removes, and what it records as read (what Delta Spark's
``OptimisticTransaction`` tracks; ARCHITECTURE.md, "Conflict checks"):

* whole table: every file; reads the whole table (predicate TRUE, all files).
* static ``PARTITION (p = v)``: the files of that partition; reads them with ``p = v``.
* dynamic (``PARTITION (p)`` without a value, or ``spark.sql.sources.partitionOverwriteMode
  = dynamic``): the files of the partitions the new rows land in; records only the
  partition predicate, not the files (so a concurrent delete there is a delete/delete
  conflict, as in Delta).
* ``REPLACE WHERE cond``: rows satisfying ``cond``. Files whose partition values decide
  ``cond`` are dropped whole; files that may hold such rows are rewritten without them
  (copy-on-write). New rows must satisfy ``cond`` (Delta's constraint check), else the
  statement fails and nothing commits.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import _parse_datatype_json_value
from sqlglot import exp

from txsql.engine.scan import snapshot_row_ids
from txsql.engine.schema import quote
from txsql.engine.write import write_data_files
from txsql.errors import SchemaError
from txsql.log import features
from txsql.log.actions import AddFile
from txsql.log.predicates import (
    TRUE,
    And,
    Column,
    Comparison,
    IsNull,
    Literal,
    Or,
    Predicate,
)
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.conform import conform_to_schema
from txsql.planner.dml.reads import query_dataframe
from txsql.planner.dml.rewrite import (
    commit_result,
    partition_key,
    scan_files,
    total_records,
)
from txsql.planner.metrics import WriteMetrics
from txsql.planner.sql.command_statements import InsertOverwrite
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.predicates import (
    files_in_partitions,
    plan_files,
    predicate_sql,
    to_predicate,
)
from txsql.result import Result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

DYNAMIC_CONF = "spark.sql.sources.partitionOverwriteMode"


def run_insert_overwrite(ctx: RunContext, statement: InsertOverwrite, text: str) -> Result:
    log = ctx.catalog.existing_log(statement.target)
    txn = ctx.transaction(log)
    snapshot = txn.current_snapshot()
    assert snapshot is not None
    # Refused by name before any file is written (a VARIANT column, a feature txsql
    # does not write), not after at the commit.
    features.check_writable(snapshot.protocol, snapshot.metadata, existing=snapshot.metadata)
    table = statement.target.display
    query = statement.query
    if isinstance(query, exp.Values):
        query = exp.select("*").from_(query.copy())
    source, _ = query_dataframe(ctx, query, txn)
    static, dynamic = _partition_spec(ctx, statement, snapshot)
    df = _conformed(ctx, source, statement, snapshot, static)
    parameters: dict[str, Any] = {
        "mode": "Overwrite",
        "partitionBy": json.dumps(list(snapshot.partition_columns)),
    }
    kept: DataFrame | None = None
    deleted_rows = copied_rows = 0
    if statement.replace_where is not None:
        condition = statement.replace_where.sql(SPARK)
        df = _require_condition(df, condition)
        removed, kept, deleted_rows, copied_rows = _replace_where(ctx, statement, snapshot, txn)
        described = predicate_sql(statement.replace_where, snapshot.schema_json)
        parameters["predicate"] = json.dumps([described or condition])
    elif dynamic:
        removed = []  # decided from the new files' partitions, below
        parameters["isDynamicPartitionOverwrite"] = True
    elif static:
        predicate = _static_predicate(ctx, static, snapshot)
        removed = files_in_partitions(snapshot, predicate)
        txn.record_scan(predicate, removed)
        parameters["predicate"] = json.dumps([_sql_of(static)])
    else:
        removed = list(snapshot.files)
        txn.record_scan(TRUE, removed)
    adds = write_data_files(
        ctx.spark, df, snapshot.table_root, snapshot.metadata, protocol=snapshot.protocol
    )
    copies: list[AddFile] = []
    if kept is not None:
        copies = write_data_files(
            ctx.spark,
            kept,
            snapshot.table_root,
            snapshot.metadata,
            enforce=False,
            protocol=snapshot.protocol,
        )
    if dynamic:
        removed = _dynamic_removes(txn, snapshot, adds)
    txn.stage([f.to_remove(data_change=True) for f in removed])
    txn.stage([*adds, *copies])
    metrics = replace(
        WriteMetrics.of([*adds, *copies], inserted=total_records(adds) or 0),
        num_removed_files=len(removed),
        num_removed_bytes=sum(f.size for f in removed),
    )
    if statement.replace_where is not None:
        metrics = replace(
            metrics,
            num_deleted_rows=deleted_rows,
            num_copied_rows=copied_rows,
            num_added_change_files=0,
        )
    committed = ctx.commit(txn, "WRITE", parameters, metrics.delta())
    return commit_result(text, table, "WRITE", committed, txn.read_version, metrics.shown())


def _partition_spec(
    ctx: RunContext, statement: InsertOverwrite, snapshot: Snapshot
) -> tuple[dict[str, exp.Expr], bool]:
    """(static column -> value, whether the overwrite is dynamic)."""
    by_lower = {c.lower(): c for c in snapshot.partition_columns}
    static: dict[str, exp.Expr] = {}
    dynamic = False
    for name, value in statement.partition or ():
        column = by_lower.get(name.lower())
        if column is None:
            raise SchemaError(
                f"{name} is not a partition column of {statement.target.display}",
                hint="PARTITION names partition columns: "
                + (", ".join(snapshot.partition_columns) or "this table has none"),
            )
        if value is None:
            dynamic = True
        else:
            static[column] = value
    if dynamic and not snapshot.partition_columns:
        raise SchemaError(
            f"dynamic partition overwrite needs a partitioned table; "
            f"{statement.target.display} is not partitioned",
            hint="Use INSERT OVERWRITE t SELECT ... to replace the whole table.",
        )
    if statement.replace_where is None and snapshot.partition_columns and not dynamic:
        # Spark's session setting turns a plain INSERT OVERWRITE into a dynamic one.
        mode = str(ctx.spark.conf.get(DYNAMIC_CONF, "static") or "static")
        dynamic = mode.strip().lower() == "dynamic"
    return static, dynamic and len(static) < len(snapshot.partition_columns)


def _conformed(
    ctx: RunContext,
    source: DataFrame,
    statement: InsertOverwrite,
    snapshot: Snapshot,
    static: dict[str, exp.Expr],
) -> DataFrame:
    """The new rows in table order and types; static partition values added as columns."""

    if not static:
        return conform_to_schema(
            source,
            snapshot.schema_json,
            statement.columns,
            statement.target.display,
            inserting=True,
        )
    names = [f["name"] for f in snapshot.schema_json["fields"]]
    fixed = {c.lower() for c in static}
    if statement.columns is not None:
        listed = [c for c in statement.columns if c.lower() in fixed]
        if listed:
            raise SchemaError(
                f"column(s) {', '.join(listed)} have a static value in PARTITION and cannot "
                "also be listed",
                hint="Leave static partition columns out of the column list.",
            )
        wanted = list(statement.columns)
    else:
        wanted = [n for n in names if n.lower() not in fixed]
    if len(source.columns) != len(wanted):
        raise SchemaError(
            f"cannot write to {statement.target.display}: the query produces "
            f"{len(source.columns)} column(s) but {len(wanted)} are expected "
            f"({', '.join(wanted)}) besides the static partition values",
            hint="Select one value per remaining table column.",
        )
    renamed = [F.col(f"`{s}`").alias(w) for s, w in zip(source.columns, wanted)]
    constants = [F.expr(value.sql(SPARK)).alias(column) for column, value in static.items()]
    df = source.select(*renamed, *constants)
    table = statement.target.display
    return conform_to_schema(df, snapshot.schema_json, [*wanted, *static], table, inserting=True)


def _require_condition(df: DataFrame, condition: str) -> DataFrame:
    """Fail the write when a new row does not satisfy REPLACE WHERE (Delta's check)."""

    first = df.columns[0]
    message = (
        f"Written data does not conform to the REPLACE WHERE condition ({condition}): "
        "every inserted row must satisfy it"
    )
    ok = F.coalesce(F.expr(condition), F.lit(False))
    guarded = F.when(~ok, F.raise_error(F.lit(message))).otherwise(F.col(f"`{first}`"))
    return df.withColumn(first, guarded)


def _replace_where(
    ctx: RunContext, statement: InsertOverwrite, snapshot: Snapshot, txn: Any
) -> tuple[list[AddFile], DataFrame | None, int, int]:
    """Files to remove, the rows to copy back, deleted and copied row counts."""

    assert statement.replace_where is not None
    condition = statement.replace_where.sql(SPARK)
    model = to_predicate(statement.replace_where, snapshot.schema_json)
    plan = plan_files(snapshot, model, whole_files=True)
    txn.record_scan(model, plan.read)
    whole = list(plan.whole)
    if not plan.scan:
        return whole, None, total_records(whole), 0
    matches = F.coalesce(F.expr(condition), F.lit(False))
    scanned = scan_files(ctx.spark, snapshot, plan.scan, with_row_ids=True)
    file_column = snapshot_row_ids(snapshot)[0]  # "_file" unless the table has one
    rows = scanned.where(matches).groupBy(F.col(quote(file_column)).alias("f")).count().collect()
    hit = {r["f"]: int(r["count"]) for r in rows}
    touched = [f for f in plan.scan if f.path in hit]
    deleted = total_records(whole) + sum(hit.values())
    if not touched:
        return whole, None, deleted, 0
    # Copy-on-write: the touched files' other rows are written again, then they go.
    # The copies keep their stable row ids (row tracking), as DELETE's would.
    kept = scan_files(ctx.spark, snapshot, touched, with_row_ids=True, with_lineage=True)
    kept = kept.where(~matches).drop(*snapshot_row_ids(snapshot))
    copied = total_records(touched) - sum(hit.values())
    return [*whole, *touched], (kept if copied > 0 else None), deleted, copied


def _static_predicate(
    ctx: RunContext, static: dict[str, exp.Expr], snapshot: Snapshot
) -> Predicate:
    """``p = v AND ...`` with each value typed as its column (Spark evaluates the literal)."""
    spark_types = {f["name"]: f["type"] for f in snapshot.schema_json["fields"]}
    select = ", ".join(
        f"CAST({value.sql(SPARK)} AS {_spark_type(spark_types[c])}) AS `{c}`"
        for c, value in static.items()
    )
    row = ctx.spark.sql(f"SELECT {select}").first()
    assert row is not None
    terms: list[Predicate] = [
        IsNull(Column(c)) if row[c] is None else Comparison("=", Column(c), Literal(row[c]))
        for c in static
    ]
    return terms[0] if len(terms) == 1 else And(tuple(terms))


def _spark_type(type_json: Any) -> str:
    return str(_parse_datatype_json_value(type_json).simpleString())


def _dynamic_removes(txn: Any, snapshot: Snapshot, adds: list[AddFile]) -> list[AddFile]:
    """Files in the partitions the new files land in; records only the predicate."""
    keys = {partition_key(a, snapshot) for a in adds}
    terms: list[Predicate] = []
    for key in sorted(keys, key=repr):
        eqs: list[Predicate] = [
            IsNull(Column(c)) if v is None else Comparison("=", Column(c), Literal(v))
            for c, v in zip(snapshot.partition_columns, key)
        ]
        terms.append(eqs[0] if len(eqs) == 1 else And(tuple(eqs)))
    if terms:
        txn.record_scan(terms[0] if len(terms) == 1 else Or(tuple(terms)), [])
    return [f for f in snapshot.files if partition_key(f, snapshot) in keys]


def _sql_of(static: dict[str, exp.Expr]) -> str:
    return " AND ".join(f"{c} = {v.sql(SPARK)}" for c, v in static.items())


__all__ = ["run_insert_overwrite"]
