"""SHOW CREATE TABLE t: the CREATE TABLE statement that makes a table like ``t``.

Running its output (under another name) gives a table with the same columns (types,
NOT NULL, comments, generated / identity / DEFAULT columns), partitioning, comment and
table properties, including the protocol versions; LOCATION is printed for external
tables only (a managed table's place follows from its name), as Spark does. CHECK
constraints follow the CREATE as ``ALTER TABLE ... ADD CONSTRAINT`` statements (txsql's
CREATE TABLE takes none), so a table with constraints gives a short script.
"""

from __future__ import annotations

import re
from typing import Any

from txsql.log.column_rules import CONSTRAINT_PREFIX, DEFAULT_KEY, GENERATION_KEY, identity_of
from txsql.planner.catalog import sql_string
from txsql.planner.context import RunContext
from txsql.planner.operations.describe_table import columns, properties, type_string
from txsql.planner.sql.ddl_statements import ShowCreateTable
from txsql.result import Result

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quote(name: str) -> str:
    """An identifier as Spark SQL reads it back (backticks only when needed)."""
    return name if _PLAIN.match(name) else "`" + name.replace("`", "``") + "`"


def _column_sql(field: dict[str, Any]) -> str:
    meta = field.get("metadata") or {}
    text = f"{quote(field['name'])} {type_string(field).upper()}"
    if not field.get("nullable", True):
        text += " NOT NULL"
    if meta.get(GENERATION_KEY) is not None:
        text += f" GENERATED ALWAYS AS ({meta[GENERATION_KEY]})"
    identity = identity_of(field["name"], meta)
    if identity is not None:
        kind = "BY DEFAULT" if identity.allow_explicit else "ALWAYS"
        text += (
            f" GENERATED {kind} AS IDENTITY (START WITH {identity.start} "
            f"INCREMENT BY {identity.step})"
        )
    if meta.get(DEFAULT_KEY) is not None:
        text += f" DEFAULT {meta[DEFAULT_KEY]}"
    comment = meta.get("comment")
    if comment is not None:
        text += f" COMMENT {sql_string(comment)}"
    return text


def run_show_create_table(ctx: RunContext, statement: ShowCreateTable, text: str) -> Result:
    ref = statement.target
    snapshot = ctx.snapshot(ref)
    metadata = snapshot.metadata
    if ref.name is not None:
        qualified = ctx.catalog.qualify(ref)
        name = f"{qualified.schema}.{quote(qualified.table)}"  # `t``x` is a valid name
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
    checks = [(k[len(CONSTRAINT_PREFIX) :], v) for k, v in props if k.startswith(CONSTRAINT_PREFIX)]
    props = [(k, v) for k, v in props if not k.startswith(CONSTRAINT_PREFIX)]
    if props:
        items = ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in props)
        lines.append(f"TBLPROPERTIES (\n{items})")
    statement_text = "\n".join(lines)
    # CREATE TABLE takes no CHECK constraints in txsql: each follows as its own ALTER.
    for check, expression in checks:
        constraint = f"ADD CONSTRAINT {quote(check)} CHECK ({expression})"
        statement_text += f";\nALTER TABLE {name} {constraint}"
    statement_text += "\n"
    df = ctx.spark.createDataFrame([(statement_text,)], "createtab_stmt STRING")
    return Result(text, "SHOW CREATE TABLE", version=snapshot.version, table=ref.display, df=df)
