"""Column rules declared in SQL: GENERATED, IDENTITY and DEFAULT columns, and defaults.

Parsed into :class:`ColumnSpec` fields by :mod:`txsql.planner.sql.column_clauses`, checked
against the new table by :func:`check_column_rules`, and stored as Delta stores them by
:func:`rule_metadata` (``delta.generationExpression``, ``delta.identity.*``,
``CURRENT_DEFAULT``). Writes then compute and check them (:mod:`txsql.engine.write_rules`).
Also here: the ``DEFAULT`` keyword in ``INSERT ... VALUES`` (:func:`replace_default_keyword`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from sqlglot import exp

from txsql.engine.spark_types import spark_schema
from txsql.errors import (
    ConstraintDefinitionError,
    GeneratedColumnMismatchError,
    IdentityColumnError,
    UnsupportedFeatureError,
)
from txsql.log import column_rules as rules
from txsql.log import features
from txsql.log.actions import Protocol
from txsql.planner.dml.assignments import merge_struct_assignments
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.refs import ColumnSpec
from txsql.planner.sql.statements import Merge

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from txsql.planner.context import RunContext

# Functions whose value is not a function of the row: refused in generation expressions
# (Delta's rule: deterministic built-ins only).
_NON_DETERMINISTIC = frozenset(
    {
        "rand", "randn", "random", "uuid", "shuffle", "now", "current_timestamp",
        "current_date", "localtimestamp", "current_timezone", "monotonically_increasing_id",
        "spark_partition_id", "input_file_name", "unix_timestamp", "current_user", "user",
        "session_user", "try_reflect", "reflect", "java_method", "raise_error",
    }
)  # fmt: skip


def rule_metadata(spec: ColumnSpec) -> dict[str, Any]:
    """The Delta field metadata for a column's GENERATED/IDENTITY/DEFAULT clauses.

    >>> from txsql.planner.sql.refs import IdentitySpec
    >>> rule_metadata(ColumnSpec("id", "BIGINT", identity=IdentitySpec(5, 2, True)))
    {'delta.identity.start': 5, 'delta.identity.step': 2, 'delta.identity.allowExplicitInsert': False}
    """  # noqa: E501
    meta: dict[str, Any] = {}
    if spec.generated is not None:
        meta[rules.GENERATION_KEY] = spec.generated
    if spec.identity is not None:
        meta[rules.IDENTITY_START] = spec.identity.start
        meta[rules.IDENTITY_STEP] = spec.identity.step
        meta[rules.IDENTITY_EXPLICIT] = not spec.identity.always
    if spec.default is not None:
        meta[rules.DEFAULT_KEY] = spec.default
    return meta


def check_column_rules(
    spark: SparkSession,
    columns: Sequence[ColumnSpec],
    fields: list[dict[str, Any]],
    partition_columns: Sequence[str],
) -> None:
    """Refuse rules Delta refuses: a clause combination, an identity that is not BIGINT or
    is a partition column, a generation expression that is not deterministic, reads an
    unknown, generated or identity column (or itself), or does not fit the column's type.

    Raises:
        ConstraintDefinitionError: with the column and the reason.
    """

    computed = {c.name.lower() for c in columns if c.generated is not None or c.identity}
    partitions = {p.lower() for p in partition_columns}
    # A copy: PySpark's fromJson rewrites a field's __COLLATIONS map in place (dropping the
    # provider), and ``fields`` is what the CREATE commits.
    schema = StructType.fromJson(copy.deepcopy({"type": "struct", "fields": fields}))
    empty = spark.createDataFrame([], schema)
    for spec, field in zip(columns, fields):
        clauses = [spec.generated is not None, spec.identity is not None, spec.default is not None]
        if sum(clauses) > 1:
            raise ConstraintDefinitionError(
                f"column {spec.name} combines GENERATED, IDENTITY and DEFAULT clauses",
                hint="Give a column at most one of them.",
            )
        if spec.identity is not None:
            if field["type"] != "long":
                raise ConstraintDefinitionError(
                    f"identity column {spec.name} must be BIGINT, not {field['type']}",
                    hint=f"Declare it as `{spec.name} BIGINT GENERATED ... AS IDENTITY`.",
                )
            if spec.name.lower() in partitions:
                raise ConstraintDefinitionError(
                    f"identity column {spec.name} cannot be a partition column",
                    hint="Partition by another column.",
                )
        if spec.default is not None:
            try:  # a relation with no nameable column: a default may not read columns
                one = spark.sql("SELECT 1")
                one.select(F.expr(spec.default).cast(schema[field["name"]].dataType)).schema  # noqa: B018
            except Exception as exc:
                first = _first_line(exc)
                raise ConstraintDefinitionError(
                    f"DEFAULT {spec.default} for column {spec.name} is not a valid default: "
                    f"{first}",
                    hint="A default is a literal or a function of no columns, e.g. DEFAULT 0.",
                ) from exc
        if spec.generated is not None:
            _check_generation(spec, computed)
            try:
                empty.select(F.expr(spec.generated).cast(schema[field["name"]].dataType)).schema  # noqa: B018
            except Exception as exc:
                first = _first_line(exc)
                raise ConstraintDefinitionError(
                    f"generated column {spec.name}: `{spec.generated}` does not apply to the "
                    f"table's columns: {first}",
                    hint="Write an expression over the table's other columns.",
                ) from exc


def _check_generation(spec: ColumnSpec, computed: set[str]) -> None:
    assert spec.generated is not None
    tree: exp.Expr = exp.maybe_parse(spec.generated, dialect=SPARK)
    for node in tree.walk():
        name = ""
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
        elif isinstance(node, exp.Func):
            name = node.sql_name().lower()
        if name in _NON_DETERMINISTIC or isinstance(
            node, (exp.Rand, exp.CurrentDate, exp.CurrentTimestamp, exp.Uuid)
        ):
            raise ConstraintDefinitionError(
                f"generated column {spec.name}: `{spec.generated}` is not deterministic",
                hint="A generation expression must give the same value for the same row.",
            )
        if isinstance(node, (exp.AggFunc, exp.Subquery, exp.Select, exp.Window)):
            raise ConstraintDefinitionError(
                f"generated column {spec.name}: `{spec.generated}` uses an aggregate, window "
                "or subquery",
                hint="Use an expression over the same row's columns.",
            )
        if isinstance(node, exp.Column) and node.name.lower() in computed:
            raise ConstraintDefinitionError(
                f"generated column {spec.name} reads {node.name}, a generated or identity column",
                hint="Generation expressions may only read ordinary columns.",
            )


def replace_default_keyword(
    values: exp.Values, target_columns: Sequence[str], schema_json: dict[str, Any], table: str
) -> exp.Values:
    """``VALUES (1, DEFAULT)`` with each DEFAULT replaced by its column's default (or NULL
    for a column without one, as Spark does).

    Raises:
        ConstraintDefinitionError: DEFAULT for a generated or identity column (leave the
            column out of the column list instead).
    """
    fields = {f["name"].lower(): f for f in schema_json.get("fields", [])}
    out = values.copy()
    for row in out.expressions:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        for i, item in enumerate(items):
            if not _is_default(item) or i >= len(target_columns):
                continue
            field = fields.get(target_columns[i].lower(), {})
            meta = field.get("metadata") or {}
            if rules.GENERATION_KEY in meta or rules.identity_of(field.get("name", ""), meta):
                raise ConstraintDefinitionError(
                    f"DEFAULT given for {table}.{field['name']}, a generated or identity column",
                    hint="Leave the column out of the INSERT column list; txsql computes it.",
                )
            sql = meta.get(rules.DEFAULT_KEY)
            replacement = exp.maybe_parse(sql, dialect=SPARK) if sql else exp.null()
            item.replace(exp.paren(replacement, copy=False) if sql else replacement)
    return out


def has_default_keyword(node: exp.Expr) -> bool:
    return any(_is_default(n) for n in node.walk())


def _is_default(node: exp.Expr) -> bool:
    return (isinstance(node, exp.Var) and str(node.this).upper() == "DEFAULT") or (
        isinstance(node, exp.Column) and not node.table and node.name.upper() == "DEFAULT"
        and not node.this.args.get("quoted")
    )  # fmt: skip


def merge_with_defaults(merge: Merge, schema_json: dict[str, Any]) -> Merge:
    """MERGE with column defaults applied: an INSERT clause's column list gains the omitted
    columns that have a default, and ``DEFAULT`` in VALUES / UPDATE SET becomes the default.

    Generated columns need nothing here (the write recomputes them); identity columns
    cannot be handed out by MERGE (the write refuses a NULL one).
    """

    fields = schema_json.get("fields", [])
    # SET s.a = ... becomes SET s = <s rebuilt>: the checks below then see whole columns.
    merge = merge_struct_assignments(merge, fields)
    defaults = {
        f["name"].lower(): (f["name"], (f.get("metadata") or {}).get(rules.DEFAULT_KEY))
        for f in fields
    }
    for clause in merge.clauses:
        if clause.action == "update" and clause.columns:
            refuse_identity_updates(clause.columns, schema_json, merge.target.display)
        elif clause.action == "insert" and clause.columns:
            generated = [c for c in clause.columns if _generated(c, fields)]
            refuse_identity_updates(generated, schema_json, merge.target.display)
    if not any(sql for _, sql in defaults.values()):
        return merge
    clauses = []
    for clause in merge.clauses:
        if clause.values is None:  # INSERT * / UPDATE SET *: every column from the source
            clauses.append(clause)
            continue
        names = clause.columns or tuple(f["name"] for f in fields)
        values = [_default_for(v, defaults.get(n.lower())) for n, v in zip(names, clause.values)]
        columns = list(names) if clause.columns is not None else None
        if clause.action == "insert" and columns is not None:
            listed = {c.lower() for c in columns}
            for name, sql in defaults.values():
                if sql and name.lower() not in listed:
                    columns.append(name)
                    values.append(exp.paren(exp.maybe_parse(sql, dialect=SPARK), copy=False))
        clauses.append(
            replace(
                clause,
                columns=None if columns is None else tuple(columns),
                values=tuple(values),
            )
        )
    return replace(merge, clauses=tuple(clauses))


def _default_for(value: exp.Expr, default: tuple[str, str | None] | None) -> exp.Expr:
    if not _is_default(value):
        return value
    sql = default[1] if default else None
    return exp.paren(exp.maybe_parse(sql, dialect=SPARK), copy=False) if sql else exp.null()


def require_defaults_feature(protocol: Protocol, table: str) -> None:
    """Delta never turns ``allowColumnDefaults`` on by itself: the user must ask for it.

    Raises:
        UnsupportedFeatureError: the protocol does not list ``allowColumnDefaults``.
    """
    if "allowColumnDefaults" in features.writer_features(protocol):
        return
    raise UnsupportedFeatureError(
        f"column defaults need the table feature allowColumnDefaults, which {table} does not have",
        hint="Enable it first: ALTER TABLE t SET TBLPROPERTIES "
        "('delta.feature.allowColumnDefaults' = 'supported') (or put it in the CREATE TABLE "
        "TBLPROPERTIES); this upgrades the protocol to writer version 7.",
    )


def check_default(ctx: RunContext, schema_json: dict[str, Any], column: str, sql: str) -> None:
    """Refuse a default that is not a constant-like expression of the column's type.

    Raises:
        ConstraintDefinitionError: it reads columns, does not parse, or cannot be cast.
    """

    types = {f.name.lower(): f.dataType for f in spark_schema(schema_json).fields}
    try:
        # A one-row relation with no nameable column: a default that reads a column fails.
        value = ctx.spark.sql("SELECT 1").select(F.expr(sql).cast(types[column.lower()]))
        value.schema  # noqa: B018 - analysis happens here: unknown columns fail it
    except Exception as exc:
        raise ConstraintDefinitionError(
            f"DEFAULT {sql} for column {column} is not a valid default: {_first_line(exc)}",
            hint="A default is a literal or a function of no columns, e.g. DEFAULT 0, "
            "DEFAULT 'new', DEFAULT current_date().",
        ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def refuse_identity_updates(
    columns: Sequence[str], schema_json: dict[str, Any], table: str
) -> None:
    """UPDATE / MERGE may not assign an identity column (Delta's rule) nor a generated one
    (its value follows from the row; txsql recomputes it rather than check a given one).

    Raises:
        IdentityColumnError: an identity column is assigned.
        GeneratedColumnMismatchError: a generated column is assigned.
    """
    fields = schema_json.get("fields", [])
    assigned = {_assigned_column(c, fields) for c in columns}
    for field in fields:
        meta = field.get("metadata") or {}
        if field["name"].lower() not in assigned:
            continue
        if rules.identity_of(field["name"], meta):
            raise IdentityColumnError(
                f"cannot UPDATE {table}.{field['name']}: it is an identity column",
                hint="Identity values are fixed once handed out; update the other columns.",
            )
        if rules.GENERATION_KEY in meta:
            raise GeneratedColumnMismatchError(
                f"cannot assign {table}.{field['name']}: it is generated as "
                f"{meta[rules.GENERATION_KEY]}",
                hint="Leave it out: txsql computes it from the row's new values.",
            )


def _assigned_column(column: str, fields: list[dict[str, Any]]) -> str:
    """The lower-cased top-level name ``column`` assigns: a resolved name as is (it may
    hold a dot: `` `dot.col` ``), else the last part of a qualified name as written
    (MERGE keeps ``t.`dot.col``` as written)."""
    if any(f["name"].lower() == column.lower() for f in fields):
        return column.lower()
    return exp.to_column(column, dialect=SPARK).parts[-1].name.lower()


def _generated(column: str, fields: list[dict[str, Any]]) -> bool:
    name = _assigned_column(column, fields)
    return any(
        f["name"].lower() == name and rules.GENERATION_KEY in (f.get("metadata") or {})
        for f in fields
    )
