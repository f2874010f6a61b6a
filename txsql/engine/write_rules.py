"""The table's column rules applied to rows right before they are written.

Every data file txsql writes passes through :func:`txsql.engine.write.write_data_files`,
which calls :func:`apply_write_rules` on the rows first, so INSERT, UPDATE, MERGE, INSERT
OVERWRITE and CREATE TABLE AS SELECT all get the same rules (from
:func:`txsql.log.column_rules.column_rules`):

1. Fill in columns the rows omit: a generated column gets its expression, a column with a
   default gets the default, an identity column gets ``next + step * k`` with ``k`` unique
   per row (``monotonically_increasing_id``: gaps are allowed, duplicates are not).
2. Check: a generated column given explicitly must equal its expression (null-safe, as
   Delta's ``Generated Column`` check); NOT NULL columns (struct children too: a NULL
   parent fails its NOT NULL child) must not be NULL; every CHECK constraint and legacy
   invariant must be TRUE (FALSE or NULL fail).

Rows rewritten by UPDATE/MERGE (``rewrite``) get their generated columns recomputed from
the new values instead (the planner refuses explicit assignments to them). Identity values
are handed out only when the caller commits the new high-water marks with the files
(``identity``; :func:`generated_high_water_marks` reads them back from the written files).
Copies of committed rows (OPTIMIZE, copy-on-write remainders) skip the rules entirely.

The checks are ``CASE WHEN <violation> THEN raise_error(...)`` wrapped around a column that
is written, so they run inside the write job itself: no extra Spark job, and a failing row
aborts the write before anything is committed (``write_data_files`` removes the staged
files). The error text carries :data:`_MARKER`, the rule and the offending row as JSON;
:func:`rule_error` turns Spark's exception back into a typed txsql error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow.parquet as pq
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from txsql.engine.scan_files import sql_string
from txsql.engine.schema import physical_name, quote
from txsql.engine.spark_types import spark_schema
from txsql.errors import (
    CheckConstraintViolationError,
    ConstraintViolationError,
    GeneratedColumnMismatchError,
    IdentityColumnError,
    NotNullViolationError,
    SchemaError,
)
from txsql.log.actions import AddFile, Metadata
from txsql.log.column_rules import ColumnRules, Identity, column_rules
from txsql.log.schema import parse_schema
from txsql.log.type_features import void_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Printable ASCII separators: Spark Connect may escape control characters in messages.
_MARKER = "TXSQL_WRITE_RULE|~|"
_SEP = "|~|"
_SHOWN_ROW_CHARS = 300
_CHECK, _NOT_NULL, _GENERATED, _IDENTITY = "check", "notnull", "generated", "identity"
_VOID = "void"
_ERRORS: dict[str, type[SchemaError]] = {
    _CHECK: CheckConstraintViolationError,
    _NOT_NULL: NotNullViolationError,
    _GENERATED: GeneratedColumnMismatchError,
    _IDENTITY: IdentityColumnError,
}


def apply_write_rules(
    df: DataFrame, metadata: Metadata, *, rewrite: bool = False, identity: bool = False
) -> DataFrame:
    """``df`` with omitted computed columns filled in and every row checked as written.

    Args:
        df: Rows to write, columns named by the table's logical names (any case). Columns
            the table computes (generated, default, identity) may be missing.
        metadata: The table's metadata (schema and configuration hold the rules).
        rewrite: The rows are changed rows of UPDATE/MERGE: generated columns are
            recomputed from the new values (as Delta does) instead of checked (the planner
            refuses explicit assignments to them), and a NULL
            identity value (a MERGE insert, which cannot hand out identity values) fails.
        identity: The caller commits the new identity high-water marks with the files
            (INSERT does), so omitted identity columns may be handed out; otherwise an
            omitted identity column is refused (values past an unmoved mark would repeat).

    Raises:
        SchemaError: A rule's SQL expression does not resolve against the table's columns.
    """
    rules = column_rules(metadata)
    # A VOID column (in Delta Spark's tables) has no Parquet column: a value would be lost.
    void = sorted(void_columns(parse_schema(metadata.schema_string)))
    if rules.empty and not void:
        return df
    types = {f.name.lower(): f.dataType for f in spark_schema(_schema(metadata)).fields}
    try:
        if rewrite:
            df = df.drop(*[c for c, _ in rules.generated if c.lower() in _lower(df.columns)])
        df = _fill_missing(df, rules, types, identity)
        violations = list(_violations(df, rules, types))
        if rewrite:
            violations.extend(_null_identity(df, rules))
        given = {c.lower(): c for c in df.columns}
        for name in void:
            if name.lower() in given:
                valued = F.col(quote(given[name.lower()])).isNotNull()
                violations.append((valued, _VOID, name, "VOID"))
        return _guard(df, violations) if violations else df
    except SchemaError:
        raise
    except Exception as exc:  # Spark's analysis of a rule (an unknown column, a bad type)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SchemaError(
            f"a column rule of the table does not apply to the rows written: {first}",
            hint="Check the table's constraints, generated columns and defaults (DESCRIBE "
            "DETAIL); drop or fix the rule with ALTER TABLE.",
        ) from exc


def _schema(metadata: Metadata) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(metadata.schema_string)
    return schema


def _expr(sql: str, what: str) -> Column:
    try:
        return F.expr(sql)
    except Exception as exc:  # a parse error surfaces here, an unknown column at analysis
        raise SchemaError(
            f"the table's {what} `{sql}` is not valid Spark SQL: {str(exc).splitlines()[0]}",
            hint="Fix or drop the rule with ALTER TABLE.",
        ) from exc


def _fill_missing(
    df: DataFrame, rules: ColumnRules, types: Mapping[str, DataType], identity: bool
) -> DataFrame:
    present = {c.lower() for c in df.columns}
    filled: dict[str, Column] = {}
    # Generated columns and defaults read the row's other (given) columns.
    for column, sql in rules.generated:
        if column.lower() not in present:
            filled[column] = _expr(sql, f"generation expression of {column}")
    for column, sql in rules.defaults:
        if column.lower() not in present and column not in filled:
            filled[column] = _expr(sql, f"default of {column}")
    for spec in rules.identity:
        if spec.column.lower() not in present:
            if not identity:
                raise IdentityColumnError(
                    f"this statement cannot hand out values of identity column {spec.column}",
                    hint="Add the rows with INSERT INTO (which hands out identity values), "
                    "or give the column a value where it is GENERATED BY DEFAULT.",
                )
            filled[spec.column] = identity_values(spec)
    if not filled:
        return df
    typed = {
        name: value.cast(types[name.lower()]) if name.lower() in types else value
        for name, value in filled.items()
    }
    return df.withColumns(typed)


def identity_values(spec: Identity) -> Column:
    """Unique values on the identity grid past the high-water mark, one per row.

    ``monotonically_increasing_id`` is unique across the job's tasks (the task index sits
    in the upper bits), so values never repeat within a write; the high-water mark committed
    with the write keeps later writes past them.
    """
    return F.lit(spec.next_value()) + F.lit(spec.step) * F.monotonically_increasing_id()


def _violations(
    df: DataFrame, rules: ColumnRules, types: Mapping[str, DataType]
) -> Iterable[tuple[Column, str, str, str]]:
    """(violation condition, kind, rule name, rule text) for each rule, in Delta's order."""
    given = {c.lower(): c for c in df.columns}
    for column, sql in rules.generated:
        actual = given.get(column.lower())
        if actual is None:
            continue
        value = F.col(quote(actual)).cast(types[column.lower()])
        expected = _expr(sql, f"generation expression of {column}").cast(types[column.lower()])
        yield ~value.eqNullSafe(expected), _GENERATED, column, sql
    for path in rules.not_null:
        top = given.get(path[0].lower())
        if top is None:
            continue
        ref = ".".join(quote(p) for p in (top, *path[1:]))
        yield F.col(ref).isNull(), _NOT_NULL, ".".join(path), "NOT NULL"
    for check in rules.checks:
        condition = _expr(check.expression, f"constraint {check.name}")
        yield (
            ~F.coalesce(condition.cast("boolean"), F.lit(False)),
            _CHECK,
            check.name,
            (check.expression),
        )


def _lower(names: Iterable[str]) -> set[str]:
    return {n.lower() for n in names}


def _null_identity(df: DataFrame, rules: ColumnRules) -> list[tuple[Column, str, str, str]]:
    given = {c.lower(): c for c in df.columns}
    found = []
    for spec in rules.identity:
        actual = given.get(spec.column.lower())
        if actual is not None:
            found.append((F.col(quote(actual)).isNull(), _IDENTITY, spec.column, "IDENTITY"))
    return found


def _guard(df: DataFrame, violations: list[tuple[Column, str, str, str]]) -> DataFrame:
    """Wrap the first column in checks: a written column cannot be pruned away."""
    columns = df.columns
    first = columns[0]
    # SQL text: one py4j round trip per message, where Columns cost one per function and
    # per column (a tenth of a tiny UPDATE's time in a profile on a loaded machine).
    fields = ", ".join(quote(c) for c in columns)
    row = f"substring(to_json(struct({fields})), 1, {_SHOWN_ROW_CHARS})"
    guarded: Any = F
    for condition, kind, name, text in violations:
        prefix = sql_string(f"{_MARKER}{kind}{_SEP}{name}{_SEP}{text}{_SEP}")
        failure = F.expr(f"raise_error(concat({prefix}, {row}, {sql_string(_SEP)}))")
        guarded = guarded.when(condition, failure)
    column = guarded.otherwise(F.col(quote(first)))
    return df.withColumn(first, column)


def rule_error(exc: BaseException) -> SchemaError | None:
    """The typed error for a Spark failure raised by :func:`apply_write_rules`, if it is one.

    >>> e = rule_error(RuntimeError("boom: TXSQL_WRITE_RULE|~|check|~|pos|~|x > 0|~|{\\"x\\":-1}|~|"))
    >>> type(e).__name__, e.message
    ('CheckConstraintViolationError', 'CHECK constraint pos (x > 0) violated by row {"x":-1}; the statement wrote nothing')
    """  # noqa: E501
    text = str(exc)
    start = text.find(_MARKER)
    if start < 0:
        return None
    parts = text[start + len(_MARKER) :].split(_SEP, 3)
    if len(parts) < 4:
        return None
    kind, name, rule, tail = parts
    end = tail.find(_SEP)
    row = tail[:end] if end >= 0 else tail
    cls = _ERRORS.get(kind, ConstraintViolationError)
    if kind == _NOT_NULL:
        what = f"NOT NULL constraint violated: column {name} is NULL in row {row}"
    elif kind == _GENERATED:
        what = f"generated column {name} must equal {rule}; row {row} gives another value"
    elif kind == _IDENTITY:
        what = (
            f"identity column {name} would be NULL in row {row}: MERGE cannot hand out "
            "identity values yet (use INSERT for new rows)"
        )
    elif kind == _VOID:
        what = (
            f"column {name} has type VOID and can only hold NULL; row {row} gives it a value "
            "(Delta Spark writes no data for a VOID column)"
        )
    else:
        what = f"CHECK constraint {name} ({rule}) violated by row {row}"
    return cls(f"{what}; the statement wrote nothing")


def generated_high_water_marks(
    table_root: str, adds: list[AddFile], metadata: Metadata, generated: Iterable[str]
) -> dict[str, int]:
    """The new high-water mark of each identity column whose values this write generated.

    Read from the ``add`` stats (min/max from the footers) when they cover the column,
    else from the local files' Parquet footers; no Spark job. Columns with no rows are
    left out.

    Raises:
        IdentityColumnError: the stats lack the column and the files are not local.
    """

    rules = {i.column.lower(): i for i in column_rules(metadata).identity}
    mode = metadata.configuration.get("delta.columnMapping.mode", "none").lower()
    fields = {f["name"].lower(): f for f in _schema(metadata)["fields"]}
    marks: dict[str, int] = {}
    for column in generated:
        spec = rules.get(column.lower())
        if spec is None:
            continue
        field = fields[column.lower()]
        name = physical_name(field["name"], field.get("metadata") or {}, mode)
        values = []
        for add in adds:
            bound = _stats_bound(add, name, spec.step > 0)
            if bound is not None:
                values.append(bound)
                continue
            path = os.path.join(table_root, unquote(add.path))
            if not os.path.exists(path):
                raise IdentityColumnError(
                    f"cannot read the identity values written to {column}: the file stats "
                    "lack the column",
                    hint="Keep identity columns among the stats columns "
                    "(delta.dataSkippingNumIndexedCols / delta.dataSkippingStatsColumns).",
                )
            values.extend(_footer_bounds(path, name, spec.step > 0))
        if values:
            marks[spec.column] = max(values) if spec.step > 0 else min(values)
    return marks


def _stats_bound(add: AddFile, column: str, want_max: bool) -> int | None:
    stats = json.loads(add.stats) if add.stats else {}
    value = stats.get("maxValues" if want_max else "minValues", {}).get(column)
    return int(value) if isinstance(value, int) else None


def _footer_bounds(path: str, column: str, want_max: bool) -> list[int]:
    meta = pq.read_metadata(path)
    found = []
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for i in range(group.num_columns):
            chunk = group.column(i)
            if chunk.path_in_schema != column:
                continue
            st = chunk.statistics
            if st is not None and st.has_min_max:
                found.append(int(st.max if want_max else st.min))
            elif group.num_rows:  # no footer stats: read the column itself
                table = pq.read_table(path, columns=[column])
                values = [v for v in table.column(0).to_pylist() if v is not None]
                return [max(values) if want_max else min(values)] if values else []
    return found
