"""INSERT and MERGE with a wider source type: the column widens only when the table allows.

Delta's rule ("Delta type widening", automatic type migration in INSERT and MERGE INTO):
with ``delta.enableTypeWidening = true`` on the table and schema evolution on for the
statement (``MERGE WITH SCHEMA EVOLUTION``, or the session conf
``spark.databricks.delta.schema.autoMerge.enabled = true`` for MERGE and INSERT), a source
column whose type is a wider type its target column may take becomes the column's type.
The new type and its ``delta.typeChanges`` entry (:mod:`.column_types`, the rule ALTER
COLUMN TYPE uses) are one ``metaData`` action staged before the rows are written, so they
commit with the rows or not at all, and the new files are written at the wide type.

As Delta does, widening from an integer type to DECIMAL or DOUBLE is never automatic (an
integer column must not turn into a decimal one by accident), nor is any change an
Iceberg-compatible table cannot take, nor one of a column a CHECK constraint or a
generated column uses: those take ``ALTER TABLE ... ALTER COLUMN ... TYPE``.

Otherwise the values are cast to the column's type as before, and a value that does not
fit fails the statement with :class:`~txsql.errors.ArithmeticOverflowError`, whose hint
then says how to let the column widen (:func:`explained_overflow`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from txsql.engine.data_errors import data_value_error
from txsql.errors import ArithmeticOverflowError, SchemaError
from txsql.log import features, iceberg_compat, protocol_upgrade
from txsql.log.schema import DataType, DecimalType, PrimitiveType, parse_type
from txsql.log.type_widening import INTEGRAL_DIGITS, is_allowed
from txsql.planner.operations.column_types import (
    ENABLE_PROPERTY,
    iceberg_allows,
    record_type_change,
    widening_enabled,
)
from txsql.planner.operations.columns import refuse_if_referenced

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from txsql.log.snapshot import Snapshot
    from txsql.planner.sql.statements import Merge
    from txsql.txn.transaction import Transaction

AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"
_SQL_NAMES = {"byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT"}


def auto_merge(spark: SparkSession) -> bool:
    """The session's schema evolution switch (Delta's autoMerge conf) is on."""
    return str(spark.conf.get(AUTO_MERGE_CONF, "false") or "false").strip().lower() == "true"


@dataclass(frozen=True)
class Widening:
    """One column a source would widen: its name, its type and the source's."""

    column: str
    old: DataType
    new: DataType
    new_json: Any

    def __str__(self) -> str:
        return f"{self.column} {sql_spelling(self.old)} → {sql_spelling(self.new)}"


def sql_spelling(t: DataType) -> str:
    """A type as Spark SQL spells it (``INT``, ``DECIMAL(12,2)``)."""
    if isinstance(t, DecimalType):
        return f"DECIMAL({t.precision},{t.scale})"
    name = t.name if isinstance(t, PrimitiveType) else str(t)
    return _SQL_NAMES.get(name, name.upper())


def candidates(snapshot: Snapshot, sources: Mapping[str, Sequence[Any]]) -> list[Widening]:
    """The widenings ``sources`` (target column -> the JSON types of the values written to
    it) ask of the table, whether or not it allows them. A column fed several types takes
    them in turn, each only when it widens the type reached so far."""
    found = []
    for field in snapshot.schema_json.get("fields", []):
        current = parse_type(field["type"])
        reached: tuple[DataType, Any] | None = None
        for source_json in sources.get(field["name"], ()):
            source = parse_type(source_json)
            if is_allowed(current, source) and _automatic(current, source):
                current, reached = source, (source, source_json)
        if reached is not None:
            found.append(Widening(field["name"], parse_type(field["type"]), *reached))
    return found


def _automatic(old: DataType, new: DataType) -> bool:
    """Delta applies no integer -> DECIMAL or DOUBLE change by itself (see the docstring)."""
    integral = isinstance(old, PrimitiveType) and old.name in INTEGRAL_DIGITS
    widens_to = isinstance(new, DecimalType) or (
        isinstance(new, PrimitiveType) and new.name == "double"
    )
    return not (integral and widens_to)


def widen_columns(
    txn: Transaction, snapshot: Snapshot, widenings: Sequence[Widening], table: str
) -> tuple[Snapshot, str]:
    """Stage the metadata giving each column its wider type, when the table allows; return
    the snapshot to write with and the result's message (``widened v INT → BIGINT``).

    Call only with schema evolution on. A column the table may not widen keeps its type
    (the write casts; a value that does not fit fails it)."""
    metadata = snapshot.metadata
    if not widenings or not widening_enabled(metadata.configuration):
        return snapshot, ""
    schema: dict[str, Any] = json.loads(metadata.schema_string)
    done = []
    for change in widenings:
        if not _may_widen(snapshot, schema, change, table):
            continue
        field = next(f for f in schema["fields"] if f["name"] == change.column)
        record_type_change(field, parse_type(field["type"]), change.new_json)
        done.append(change)
    if not done:
        return snapshot, ""
    new = replace(metadata, schema_string=json.dumps(schema, separators=(",", ":")))
    protocol = protocol_upgrade.upgrade_for_metadata(snapshot.protocol, new)
    features.check_writable(protocol, new, existing=metadata)  # before any file is written
    txn.stage([protocol, new] if protocol != snapshot.protocol else [new])
    widened = txn.current_snapshot()
    assert widened is not None
    return widened, "widened " + ", ".join(str(c) for c in done)


def _may_widen(snapshot: Snapshot, schema: dict[str, Any], change: Widening, table: str) -> bool:
    configuration = snapshot.metadata.configuration
    if iceberg_compat.active(configuration) and not iceberg_allows(change.old, change.new):
        return False
    try:  # a rule naming the column was written for its old type: ALTER it by hand
        refuse_if_referenced(snapshot.metadata, schema, change.column, "widen", table)
    except SchemaError:
        return False
    return True


@contextmanager
def explained_overflow(
    snapshot: Snapshot, widenings: Sequence[Widening], table: str, evolution: bool, text: str
) -> Iterator[None]:
    """An overflow (Spark's, raised while the statement ``text`` writes) of a column a
    wider source feeds becomes an ArithmeticOverflowError whose hint says how to widen."""
    try:
        yield
    except Exception as exc:
        typed = data_value_error(exc, text, {}) if widenings else None
        if not isinstance(typed, ArithmeticOverflowError):
            raise
        raise ArithmeticOverflowError(
            f"{typed.message} (the source is wider than the column: "
            f"{', '.join(str(c) for c in widenings)})",
            hint=_widening_hint(snapshot, widenings, table, evolution),
        ) from exc


def _widening_hint(
    snapshot: Snapshot, widenings: Sequence[Widening], table: str, evolution: bool
) -> str:
    steps = []
    if not widening_enabled(snapshot.metadata.configuration):
        steps.append(
            f"allow type widening: ALTER TABLE {table} SET TBLPROPERTIES "
            f"('{ENABLE_PROPERTY}' = 'true')"
        )
    if not evolution:
        steps.append(
            "write with schema evolution: MERGE WITH SCHEMA EVOLUTION INTO ..., or SET "
            f"{AUTO_MERGE_CONF} = true (MERGE and INSERT)"
        )
    first = widenings[0]
    alter = f"ALTER TABLE {table} ALTER COLUMN {first.column} TYPE {sql_spelling(first.new)}"
    how = " and ".join(steps) if steps else "widen the column by hand"
    return f"To keep these values, {how}; or run {alter} first. Nothing was committed."


def widen_for_insert(
    spark: SparkSession,
    txn: Transaction,
    snapshot: Snapshot,
    source_fields: Sequence[Any],
    columns: Sequence[str] | None,
    table: str,
    text: str,
) -> tuple[Snapshot, str, AbstractContextManager[None]]:
    """INSERT's (and an append's) use of this module: the snapshot to write with, the
    result's message and the guard to write in (:func:`explained_overflow`)."""
    wider = candidates(snapshot, insert_sources(snapshot, source_fields, columns))
    evolution = bool(wider) and auto_merge(spark)  # no conf round trip for most INSERTs
    widened, message = widen_columns(txn, snapshot, wider, table) if evolution else (snapshot, "")
    return widened, message, explained_overflow(snapshot, wider, table, evolution, text)


def insert_sources(
    snapshot: Snapshot, source_fields: Sequence[Any], columns: Sequence[str] | None
) -> dict[str, list[Any]]:
    """Target column -> the type an INSERT's query writes to it, matched as the write
    matches them (:func:`~txsql.planner.dml.conform.conform_to_schema`): by position, or
    by the column list. A count that does not match is left to the write to refuse."""
    names = [f["name"] for f in snapshot.schema_json.get("fields", [])]
    types = [f.dataType.jsonValue() for f in source_fields]
    if len(types) != len(names if columns is None else columns):
        return {}
    lowered = {n.lower(): n for n in names}
    targets = names if columns is None else [lowered.get(c.lower()) for c in columns]
    return {name: [t] for name, t in zip(targets, types) if name is not None}


def merge_sources(
    statement: Merge, snapshot: Snapshot, source_fields: Sequence[Any]
) -> dict[str, list[Any]]:
    """Target column -> the types a MERGE's UPDATE and INSERT clauses write to it straight
    from a source column: every column for ``UPDATE SET *`` / ``INSERT *``, else an
    assignment whose value is a source column (``s.v``; unqualified in an INSERT, which
    sees no target row). Computed values keep the column's type."""
    types = {f.name.lower(): f.dataType.jsonValue() for f in source_fields}
    names = [f["name"] for f in snapshot.schema_json.get("fields", [])]
    lowered = {n.lower(): n for n in names}
    found: dict[str, list[Any]] = {}
    for clause in statement.clauses:
        if clause.action not in ("update", "insert"):
            continue
        if clause.values is None:
            pairs = [(name, types.get(name.lower())) for name in names]
        else:
            targets = names if clause.columns is None else clause.columns
            qualified = clause.action == "update"  # an UPDATE also sees the target row
            pairs = [
                (
                    lowered.get(_target_name(t, statement.target_alias).lower()),
                    _source_type(v, statement.source_alias, types, qualified=qualified),
                )
                for t, v in zip(targets, clause.values)
            ]
        for name, source_type in pairs:
            if name is not None and source_type is not None:
                found.setdefault(name, []).append(source_type)
    return found


def _target_name(text: str, alias: str) -> str:
    """An assignment target (``v``, ``t.v``) as a column name ("" for a struct field)."""
    parts = [p.strip("`") for p in text.split(".")]
    if len(parts) == 2 and alias and parts[0].lower() == alias.lower():
        return parts[1]
    return parts[0] if len(parts) == 1 else ""


def _source_type(
    value: exp.Expr, alias: str, types: Mapping[str, Any], *, qualified: bool
) -> Any | None:
    """The type of ``value`` when it is a source column, else None."""
    if not isinstance(value, exp.Column) or value.name.lower() not in types:
        return None
    table = value.table
    if table and (not alias or table.lower() != alias.lower()):
        return None
    if not table and qualified:
        return None
    return types[value.name.lower()]
