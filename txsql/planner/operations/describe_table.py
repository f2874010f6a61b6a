"""DESCRIBE [TABLE] [EXTENDED] t, SHOW TBLPROPERTIES t [(key)] and SHOW COLUMNS IN t.

The rows follow Spark's layout for a Delta table: ``col_name, data_type, comment`` per
column, a ``# Partition Information`` section for partitioned tables, and with EXTENDED
a ``# Detailed Table Information`` section (name, type, location, provider, version,
properties). Types are printed the way Spark prints them (``bigint``, ``decimal(10,2)``,
``varchar(5)``).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from txsql.engine.spark_types import spark_schema
from txsql.log import features
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.sql.ddl_statements import DescribeTable, ShowColumns, ShowTblProperties
from txsql.planner.sql.refs import TableRef
from txsql.result import Result

DESCRIBE_SCHEMA = "col_name STRING, data_type STRING, comment STRING"
CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"  # Spark's metadata for CHAR/VARCHAR columns


def columns(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The table's top-level fields as Delta JSON (name, type, nullable, metadata)."""
    fields: list[dict[str, Any]] = json.loads(snapshot.metadata.schema_string)["fields"]
    return fields


def type_string(field: dict[str, Any]) -> str:
    """Spark's DDL spelling of a field's type (``decimal(10,2)``, ``array<int>``)."""
    declared = (field.get("metadata") or {}).get(CHAR_VARCHAR_KEY)
    if declared:
        return str(declared)

    # Through txsql's mapping: a collated string prints as ``string collate UTF8_LCASE``.
    return str(
        spark_schema({"type": "struct", "fields": [field]}).fields[0].dataType.simpleString()
    )


def run_describe_table(ctx: RunContext, statement: DescribeTable, text: str) -> Result:
    snapshot = ctx.snapshot(statement.target)
    rows: list[tuple[str, str, str | None]] = []
    for field in columns(snapshot):
        comment = (field.get("metadata") or {}).get("comment")
        rows.append((field["name"], type_string(field), comment))
    partitioning = snapshot.metadata.partition_columns
    if partitioning:
        by_name = {f["name"]: f for f in columns(snapshot)}
        rows.append(("# Partition Information", "", ""))
        rows.append(("# col_name", "data_type", "comment"))
        for name in partitioning:
            field = by_name[name]
            rows.append((name, type_string(field), (field.get("metadata") or {}).get("comment")))
    if statement.extended:
        rows.append(("", "", ""))
        rows.append(("# Detailed Table Information", "", ""))
        rows.extend((key, value, "") for key, value in _details(ctx, statement.target, snapshot))
    df = ctx.spark.createDataFrame(rows, DESCRIBE_SCHEMA)
    return Result(
        text, "DESCRIBE TABLE", version=snapshot.version, table=statement.target.display, df=df
    )


def _details(ctx: RunContext, ref: TableRef, snapshot: Snapshot) -> list[tuple[str, str]]:
    metadata = snapshot.metadata
    out: list[tuple[str, str]] = []
    if ref.name is not None:
        name = ctx.catalog.qualify(ref)
        managed = ctx.catalog.is_managed(ref)
        out += [("Catalog", "spark_catalog"), ("Database", name.schema), ("Table", name.table)]
        out += [("Name", f"{name.schema}.{name.table}")]
        out += [("Type", "MANAGED" if managed else "EXTERNAL")]
    else:
        out += [("Name", ref.display), ("Type", "EXTERNAL")]
    if metadata.created_time is not None:
        created = dt.datetime.fromtimestamp(metadata.created_time / 1000, dt.timezone.utc)
        out.append(("Created Time", created.strftime("%a %b %d %H:%M:%S UTC %Y")))
    if metadata.description:
        out.append(("Comment", metadata.description))
    out += [
        ("Location", f"file:{snapshot.table_root}"),
        ("Provider", "delta"),
        ("Version", str(snapshot.version)),
        ("Table Properties", "[" + ",".join(f"{k}={v}" for k, v in properties(snapshot)) + "]"),
    ]
    return out


def properties(snapshot: Snapshot, with_features: bool = True) -> list[tuple[str, str]]:
    """Delta's table properties: the configuration, the protocol versions and (unless
    ``with_features`` is False) one ``delta.feature.<name> = supported`` per feature."""
    protocol = snapshot.protocol
    found = dict(snapshot.metadata.configuration)
    found["delta.minReaderVersion"] = str(protocol.min_reader_version)
    found["delta.minWriterVersion"] = str(protocol.min_writer_version)
    if with_features:
        for feature in features.reader_features(protocol) | features.writer_features(protocol):
            found.setdefault(f"delta.feature.{feature}", "supported")
    return sorted(found.items())


def run_show_tblproperties(ctx: RunContext, statement: ShowTblProperties, text: str) -> Result:
    snapshot = ctx.snapshot(statement.target)
    rows = properties(snapshot)
    if statement.key is not None:
        value = dict(rows).get(statement.key)
        if value is None:  # Spark answers with this row rather than an error
            value = f"Table {statement.target.display} does not have property: {statement.key}"
        rows = [(statement.key, value)]
    df = ctx.spark.createDataFrame(rows, "key STRING, value STRING")
    return Result(
        text,
        "SHOW TBLPROPERTIES",
        version=snapshot.version,
        table=statement.target.display,
        df=df,
    )


def run_show_columns(ctx: RunContext, statement: ShowColumns, text: str) -> Result:
    snapshot = ctx.snapshot(statement.target)
    df = ctx.spark.createDataFrame([(f["name"],) for f in columns(snapshot)], "col_name STRING")
    return Result(
        text, "SHOW COLUMNS", version=snapshot.version, table=statement.target.display, df=df
    )
