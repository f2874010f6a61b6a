"""SQL conditions -> the predicate model of :mod:`txsql.log.predicates`, and file pruning.

A WHERE clause (or a MERGE condition) arrives as a bound sqlglot expression. Whatever the
model can express exactly (comparisons of a column with a literal, IN lists, IS NULL,
AND/OR/NOT, BETWEEN) becomes typed model nodes; everything else becomes :class:`Opaque`
holding its Spark SQL text, the table columns it references and whether it is
deterministic. The model is used to prune files (partition values + stats), to scope
conflicts and to describe the statement (operationParameters, EXPLAIN); rows are always
filtered by Spark evaluating the original SQL, never by this model.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from txsql.log.actions import AddFile
from txsql.log.file_skipping import may_match_file
from txsql.log.predicate_eval import eval_partition
from txsql.log.predicates import (
    TRUE,
    And,
    Column,
    Comparison,
    In,
    IsNotNull,
    IsNull,
    Literal,
    LiteralValue,
    Not,
    Opaque,
    Or,
    Predicate,
    has_opaque,
    split_predicate,
)
from txsql.log.schema import parse_schema
from txsql.log.snapshot import Snapshot
from txsql.planner.sql.dialect import SPARK

_COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}
# Functions whose value changes between evaluations: a predicate using them cannot be
# re-evaluated later (conflict checks) with the same result.
_NON_DETERMINISTIC: tuple[type[exp.Expr], ...] = (
    exp.Rand,
    exp.Randn,
    exp.Uuid,
    exp.CurrentTimestamp,
    exp.CurrentDate,
    exp.CurrentTime,
    exp.CurrentDatetime,
)
_NON_DETERMINISTIC_NAMES = frozenset(
    {
        "now",
        "rand",
        "random",
        "randn",
        "uuid",
        "shuffle",
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
        "current_timestamp",
        "current_date",
        "localtimestamp",
        "unix_timestamp",
        "try_reflect",
        "reflect",
    }
)
_INTEGER = re.compile(r"[+-]?\d+")


class _NotModelled(Exception):
    """Raised internally for a node the model cannot express exactly."""


def to_predicate(
    condition: exp.Expr | None,
    schema_json: dict[str, Any],
    qualifiers: Collection[str] = (),
) -> Predicate:
    """The model of a bound SQL condition over one table.

    Args:
        condition: The WHERE expression (None: no condition, i.e. ``TRUE``).
        schema_json: The table's Spark schema JSON; columns resolve case-insensitively.
        qualifiers: Names that qualify the table's columns (its alias, its name).

    Returns:
        A predicate whose conjuncts are modelled exactly or kept :class:`Opaque`.
    """
    if condition is None:
        return TRUE
    resolver = _Resolver(schema_json, qualifiers)
    return resolver.predicate(condition)


def predicate_sql(
    condition: exp.Expr | None, schema_json: dict[str, Any], qualifiers: Collection[str] = ()
) -> str | None:
    """The condition as Spark SQL with the target's own qualifiers removed (None if absent).

    This is the text recorded in ``operationParameters`` (Delta writes the condition).
    """
    if condition is None:
        return None
    return _Resolver(schema_json, qualifiers).opaque(condition).sql


def _chain(node: exp.Expr, kind: type[exp.Expr]) -> list[exp.Expr]:
    """The operands of an AND (or OR) chain, in order, found without recursion.

    sqlglot nests ``a OR b OR c`` as ``(a OR b) OR c``; parentheses around a same-kind
    chain do not change its meaning (both are associative), so they are looked through.
    """
    operands: list[exp.Expr] = []
    stack = [node]
    while stack:
        current = stack.pop()
        while isinstance(current, exp.Paren):
            current = current.this
        if isinstance(current, kind):
            stack += [current.expression, current.this]  # popped left first
        else:
            operands.append(current)
    return operands


class _Resolver:
    def __init__(self, schema_json: dict[str, Any], qualifiers: Collection[str]) -> None:
        self.columns = {f["name"].lower(): f["name"] for f in schema_json.get("fields", [])}
        self.qualifiers = {q.lower() for q in qualifiers}

    def predicate(self, node: exp.Expr) -> Predicate:
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            # One n-ary node per AND/OR chain: a 500-term OR stays one level deep in the
            # model, so nothing downstream recurses once per term.
            children = tuple(self.predicate(n) for n in _chain(node, type(node)))
            return And(children) if isinstance(node, exp.And) else Or(children)
        if isinstance(node, exp.Not):
            inner = node.this.unnest() if isinstance(node.this, exp.Paren) else node.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                try:
                    return IsNotNull(self.value(inner.this))
                except _NotModelled:
                    return self.opaque(node)
            return Not(self.predicate(node.this))
        try:
            return self.atom(node)
        except _NotModelled:
            return self.opaque(node)

    def atom(self, node: exp.Expr) -> Predicate:
        op = _COMPARISONS.get(type(node))
        if op is not None:
            return Comparison(op, self.value(node.this), self.value(node.expression))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return IsNull(self.value(node.this))
        if isinstance(node, exp.In) and not node.args.get("query") and node.expressions:
            values = tuple(self.literal(v) for v in node.expressions)
            return In(self.value(node.this), values)
        if isinstance(node, exp.Between):
            column = self.value(node.this)
            low, high = self.literal(node.args["low"]), self.literal(node.args["high"])
            return And((Comparison(">=", column, low), Comparison("<=", column, high)))
        if isinstance(node, (exp.Boolean, exp.Null)):
            return self.literal(node)
        raise _NotModelled

    def value(self, node: exp.Expr) -> Column | Literal:
        if isinstance(node, exp.Paren):
            return self.value(node.this)
        if isinstance(node, exp.Column):
            name = self.column_name(node)
            if name is None:
                raise _NotModelled
            return Column(name)
        return self.literal(node)

    def column_name(self, node: exp.Column) -> str | None:
        """The table column ``node`` names, or None (another table's column, a struct field)."""
        if node.args.get("db") or node.args.get("catalog"):
            return None
        qualifier = node.table
        if qualifier and qualifier.lower() not in self.qualifiers:
            return None
        return self.columns.get(node.name.lower())

    def literal(self, node: exp.Expr) -> Literal:
        return Literal(_literal_value(node))

    def opaque(self, node: exp.Expr) -> Opaque:
        """Keep ``node`` as Spark SQL, unqualifying the target's columns outside subqueries."""
        copy = node.copy()
        deterministic = True
        columns: set[str] = set()
        for sub in list(copy.find_all(exp.Column)):
            inside_subquery = sub.find_ancestor(exp.Query) is not None
            name = None if inside_subquery else self.column_name(sub)
            if name is not None:
                columns.add(name)
                sub.set("table", None)
            elif not inside_subquery:
                deterministic = False  # another table's column: not evaluable on ours alone
        if any(isinstance(n, exp.Query) for n in copy.walk()):
            deterministic = False  # a subquery's answer may change with its tables
        for fn in copy.find_all(exp.Func):
            if isinstance(fn, _NON_DETERMINISTIC) or _function_name(fn) in (
                _NON_DETERMINISTIC_NAMES
            ):
                deterministic = False
        return Opaque(copy.sql(SPARK), frozenset(columns), deterministic)


def _function_name(fn: exp.Func) -> str:
    if isinstance(fn, exp.Anonymous):
        return str(fn.this).lower()
    return fn.sql_name().lower()


def _literal_value(node: exp.Expr) -> LiteralValue:
    """The Python value of a constant node; raises :class:`_NotModelled` otherwise."""
    if isinstance(node, exp.Paren):
        return _literal_value(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg):
        value = _literal_value(node.this)
        if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
            return -value
        raise _NotModelled
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        return _number(str(node.this))
    if isinstance(node, exp.Cast) and isinstance(node.this, (exp.Literal, exp.Neg)):
        return _typed_literal(_literal_value(node.this), node.to)
    raise _NotModelled


def _number(text: str) -> int | float | Decimal:
    # Spark: integral literals are INT/BIGINT, 1.5 is DECIMAL, 1e3 is DOUBLE.
    if _INTEGER.fullmatch(text):
        return int(text)
    if "e" in text.lower():
        return float(text)
    try:
        return Decimal(text)
    except InvalidOperation:
        raise _NotModelled from None


def _typed_literal(value: LiteralValue, to: exp.DataType) -> LiteralValue:
    """Typed literals (``DATE'…'``, ``1L``, ``1.5D``) as Python values."""
    kind = to.this
    types = exp.DataType.Type
    try:
        if kind == types.DATE and isinstance(value, str):
            return dt.date.fromisoformat(value.strip())
        if kind in (
            types.TIMESTAMP,
            types.TIMESTAMPTZ,
            types.TIMESTAMPLTZ,
            types.TIMESTAMPNTZ,
        ) and isinstance(value, str):
            parsed = dt.datetime.fromisoformat(value.strip())
            if kind == types.TIMESTAMPNTZ and parsed.tzinfo is not None:
                raise _NotModelled
            # A zone-less TIMESTAMP literal is read in the Spark session's zone, which need
            # not be UTC: it stays naive, and pruning treats it as undecidable.
            return parsed
        numeric = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
        integral = (types.BIGINT, types.INT, types.SMALLINT, types.TINYINT)
        if kind in integral and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind == types.DOUBLE and numeric:
            return float(value)  # type: ignore[arg-type]
        if kind == types.FLOAT and numeric:
            # A FLOAT literal is 32-bit: CAST(0.1 AS FLOAT) is 0.100000001490116...
            return float(struct.unpack("<f", struct.pack("<f", float(value)))[0])  # type: ignore[arg-type]
        if kind == types.DECIMAL and numeric and not isinstance(value, float):
            return Decimal(value)  # type: ignore[arg-type]
    except (ValueError, OverflowError):
        raise _NotModelled from None
    raise _NotModelled


# --- pruning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilePlan:
    """What a statement does with each live file of its snapshot.

    Attributes:
        whole: Files every row of which matches (removed without scanning).
        scan: Files that may hold matching rows (scanned; Spark evaluates the condition).
        skipped: Files that provably hold no matching row.
        skipped_by_partition: How many of ``skipped`` the partition filter alone excluded.
    """

    whole: tuple[AddFile, ...]
    scan: tuple[AddFile, ...]
    skipped: tuple[AddFile, ...]
    skipped_by_partition: int = 0

    @property
    def read(self) -> tuple[AddFile, ...]:
        return self.whole + self.scan


def prune_files(snapshot: Snapshot, predicate: Predicate) -> tuple[list[AddFile], list[AddFile]]:
    """Split the snapshot's files into (kept, skipped) by partition values and stats."""
    schema = parse_schema(snapshot.metadata.schema_string)
    kept: list[AddFile] = []
    skipped: list[AddFile] = []
    for f in snapshot.files:
        matches = may_match_file(
            predicate, f, schema, snapshot.partition_columns, snapshot.column_mapping_mode
        )
        (kept if matches else skipped).append(f)
    return kept, skipped


def files_in_partitions(snapshot: Snapshot, predicate: Predicate) -> list[AddFile]:
    """The files whose partition values make ``predicate`` (over partition columns) TRUE;
    NULL or undecidable counts as not in."""
    if predicate == TRUE:
        return list(snapshot.files)
    schema = parse_schema(snapshot.metadata.schema_string)
    partitions, mode = snapshot.partition_columns, snapshot.column_mapping_mode
    return [
        f
        for f in snapshot.files
        if eval_partition(predicate, f.partition_values, schema, partitions, mode) is True
    ]


def plan_files(snapshot: Snapshot, predicate: Predicate, *, whole_files: bool) -> FilePlan:
    """Prune files and, if ``whole_files``, find those a partition-only predicate covers.

    A file is removed whole only when the predicate is TRUE or references partition
    columns alone and evaluates to TRUE on its partition values; an unknown answer (NULL or
    undecidable) leaves the file to Spark.
    """
    schema = parse_schema(snapshot.metadata.schema_string)
    partitions: Sequence[str] = snapshot.partition_columns
    mode = snapshot.column_mapping_mode
    partition_part, data_part, rest = split_predicate(predicate, partitions)
    partition_only = data_part == TRUE and rest == TRUE and not has_opaque(predicate)
    whole: list[AddFile] = []
    scan: list[AddFile] = []
    skipped: list[AddFile] = []
    by_partition = 0
    for f in snapshot.files:
        if not may_match_file(predicate, f, schema, partitions, mode):
            skipped.append(f)
            if not may_match_file(partition_part, f, schema, partitions, mode):
                by_partition += 1
            continue
        if whole_files and partition_only:
            answer = eval_partition(predicate, f.partition_values, schema, partitions, mode)
            if answer is True:
                whole.append(f)
                continue
        scan.append(f)
    return FilePlan(tuple(whole), tuple(scan), tuple(skipped), by_partition)
