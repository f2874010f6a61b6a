"""SHOW CREATE TABLE t: the CREATE TABLE statement that makes a table like ``t``.

Running its output (under another name) gives a table with the same columns (types,
NOT NULL, comments), partitioning, comment and table properties, including the protocol
versions and features; LOCATION is printed for external tables only (a managed table's
place follows from its name), as Spark does.
"""

from __future__ import annotations

import re
from typing import Any

from txsql.planner.catalog import sql_string
from txsql.planner.context import RunContext
from txsql.planner.operations.describe_table import columns, properties, type_string
from txsql.planner.sql.statements import ShowCreateTable
from txsql.result import Result

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quote(name: str) -> str:
    """An identifier as Spark SQL reads it back (backticks only when needed)."""
    return name if _PLAIN.match(name) else "`" + name.replace("`", "``") + "`"


def _column_sql(field: dict[str, Any]) -> str:
    text = f"{quote(field['name'])} {type_string(field).upper()}"
    if not field.get("nullable", True):
        text += " NOT NULL"
    comment = (field.get("metadata") or {}).get("comment")
    if comment is not None:
        text += f" COMMENT {sql_string(comment)}"
    return text


def run_show_create_table(ctx: RunContext, statement: ShowCreateTable, text: str) -> Result:
    ref = statement.target
    snapshot = ctx.snapshot(ref)
    metadata = snapshot.metadata
    if ref.name is not None:
        qualified = ctx.catalog.qualify(ref)
        name = f"{qualified.schema}.{qualified.table}"
        external = not ctx.catalog.is_managed(ref)
    else:
        name, external = ref.display, True
    body = ",\n".join(f"  {_column_sql(f)}" for f in columns(snapshot))
    lines = [f"CREATE TABLE {name} (\n{body})", "USING delta"]
    if metadata.partition_columns:
        lines.append(f"PARTITIONED BY ({', '.join(quote(c) for c in metadata.partition_columns)})")
    if metadata.description:
        lines.append(f"COMMENT {sql_string(metadata.description)}")
    if external and ref.name is not None:
        lines.append(f"LOCATION {sql_string(snapshot.table_root)}")
    # The features follow from the configuration and the versions (CREATE derives them);
    # printed as properties they would land in the copy's configuration as well.
    props = properties(snapshot, with_features=False)
    if props:
        items = ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in props)
        lines.append(f"TBLPROPERTIES (\n{items})")
    statement_text = "\n".join(lines) + "\n"
    df = ctx.spark.createDataFrame([(statement_text,)], "createtab_stmt STRING")
    return Result(text, "SHOW CREATE TABLE", version=snapshot.version, table=ref.display, df=df)
