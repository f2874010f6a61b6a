"""MERGE INTO: the statement's resolution against both schemas.

The statement itself is built in :mod:`txsql.planner.sql.merge`.

Resolution turns every clause into Spark SQL text over two aliased sides (target and
source): each column reference is qualified with the side it belongs to, so Spark never
sees an ambiguous name, and each clause gets one output expression per target column.
Spark evaluates all of it; nothing here evaluates SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from txsql.errors import SchemaError, UnsupportedStatementError
from txsql.planner.dml.assignments import set_path, without_qualifier
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.dml import path_sql
from txsql.planner.sql.refs import ColumnPath
from txsql.planner.sql.statements import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    Merge,
    MergeClause,
)

TARGET = "target"
SOURCE = "source"
# Functions whose value changes per call: such a conjunct can never prune files.
_NON_DETERMINISTIC = {"rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id"}


@dataclass(frozen=True)
class ClausePlan:
    """A resolved WHEN clause: Spark SQL for its condition and its output row."""

    index: int
    clause: MergeClause
    condition: str
    outputs: dict[str, str] | None  # target column -> value; None for DELETE


@dataclass(frozen=True)
class MergePlan:
    """Everything the executor needs, as Spark SQL text over the two aliased sides.

    ``join`` is how the target (left) joins the source (right): ``inner``, ``left``,
    ``right``, ``full``, or ``insert_only`` (source rows without a match, anti-join).
    ``target_filter`` holds the ON conjuncts that reference only target columns, with
    unqualified names: rows failing it cannot match, so it may prune files when no
    NOT MATCHED BY SOURCE clause needs the unmatched target rows.
    """

    target_alias: str
    source_alias: str
    on: str
    clauses: tuple[ClausePlan, ...]
    target_columns: tuple[str, ...]
    join: str
    target_filter: exp.Expr | None
    source_columns: tuple[str, ...] = ()
    on_deterministic: bool = True
    # The target's materialized (row id, row commit version) columns when it keeps stable
    # row ids: an updated row keeps its id (see execute.new_rows).
    lineage: tuple[str, ...] = ()
    # SQL for a matched target row's stable id on the joined rows (FILE, ROW and the stored
    # id column), resolved there rather than for every target row scanned; empty: the
    # scan resolves the ids itself (too many files for the literal, see stable_row_id_sql).
    kept_row_id: str = ""

    def indexes(self, match: str | None = None, actions: Sequence[str] = ()) -> list[int]:
        """Clause indexes filtered by match kind and action."""
        return [
            c.index
            for c in self.clauses
            if (match is None or c.clause.match == match)
            and (not actions or c.clause.action in actions)
        ]

    @property
    def duplicates_allowed(self) -> bool:
        """Delta allows several source rows per target row only for one unconditional
        ``WHEN MATCHED THEN DELETE`` (every pair deletes the same row: not ambiguous)."""
        matched = [c.clause for c in self.clauses if c.clause.match == MATCHED]
        return len(matched) == 1 and matched[0].action == "delete" and not matched[0].condition


class _Scope:
    """The columns each side exposes, for qualifying references."""

    def __init__(self, merge: Merge, target: Sequence[str], source: Sequence[str]) -> None:
        self.aliases = {TARGET: merge.target_alias, SOURCE: merge.source_alias}
        self.columns = {
            TARGET: {c.lower(): c for c in target},
            SOURCE: {c.lower(): c for c in source},
        }
        self.table_name = (merge.target.name or "").split(".")[-1].lower()

    def side_of(self, qualifier: str) -> str | None:
        for side, alias in self.aliases.items():
            if alias.lower() == qualifier.lower():
                return side
        return None

    def ref(self, side: str, name: str) -> exp.Column:
        return exp.column(
            exp.to_identifier(name, quoted=True), table=exp.to_identifier(self.aliases[side], True)
        )


def plan_merge(
    merge: Merge, target_columns: Sequence[str], source_columns: Sequence[str]
) -> MergePlan:
    """Resolve ``merge`` against the target's and the source's column names.

    Raises:
        SchemaError: unknown or ambiguous columns, a clause reading a side it cannot see,
            a column assigned twice, or ``*`` with source columns missing.
        UnsupportedStatementError: subqueries in conditions or values (as in Delta).
    """
    scope = _Scope(merge, target_columns, source_columns)
    both = (TARGET, SOURCE)
    on = _qualify(merge.on, scope, both, "the ON condition")
    plans = []
    for index, clause in enumerate(merge.clauses):
        sides = {MATCHED: both, NOT_MATCHED: (SOURCE,), NOT_MATCHED_BY_SOURCE: (TARGET,)}
        where = f"WHEN {clause.match.replace('_', ' ').upper()} clause {index + 1}"
        visible = sides[clause.match]
        condition = "true"
        if clause.condition is not None:
            condition = _qualify(clause.condition, scope, visible, where).sql(SPARK)
        outputs = None
        if clause.action != "delete":
            outputs = _outputs(clause, scope, visible, where, target_columns)
        plans.append(ClausePlan(index, clause, condition, outputs))
    matches = {c.match for c in merge.clauses}
    if MATCHED not in matches and NOT_MATCHED_BY_SOURCE not in matches:
        join = "insert_only"
    elif NOT_MATCHED in matches:
        join = "full" if NOT_MATCHED_BY_SOURCE in matches else "right"
    else:
        join = "left" if NOT_MATCHED_BY_SOURCE in matches else "inner"
    return MergePlan(
        merge.target_alias,
        merge.source_alias,
        on.sql(SPARK),
        tuple(plans),
        tuple(target_columns),
        join,
        _target_filter(on, scope),
        _source_columns(on, scope),
        not any(_non_deterministic(f) for f in on.find_all(exp.Func)),
    )


def _outputs(
    clause: MergeClause,
    scope: _Scope,
    visible: tuple[str, ...],
    where: str,
    target_columns: Sequence[str],
) -> dict[str, str]:
    """One Spark SQL value per target column for an UPDATE or INSERT clause."""
    if clause.values is None:  # SET * / INSERT *: by column name from the source
        missing = [c for c in target_columns if c.lower() not in scope.columns[SOURCE]]
        if missing:
            raise SchemaError(
                f"{where}: the source has no column(s) {', '.join(missing)} for "
                f"{clause.action.upper()} *",
                hint="Select every target column in the source, or list the assignments.",
            )
        by_name = scope.columns[SOURCE]
        return {c: scope.ref(SOURCE, by_name[c.lower()]).sql(SPARK) for c in target_columns}
    names = clause.columns
    if names is None:  # INSERT VALUES (...) by position
        if len(clause.values) != len(target_columns):
            raise SchemaError(
                f"{where}: INSERT VALUES has {len(clause.values)} value(s) but the table has "
                f"{len(target_columns)} column(s)",
                hint="Give one value per column or list the columns: INSERT (a, b) VALUES ...",
            )
        names = tuple(target_columns)
    assigned: dict[str, str] = {}
    lowered = {c.lower(): c for c in target_columns}
    for name, value in zip(names, clause.values):
        # INSERT lists bare names; UPDATE SET keeps its targets' SQL text (`t.`dot.col``).
        path = set_path(name) if clause.action == "update" else (name,)
        column = _target_column(path, scope, lowered, where)
        if column in assigned:
            raise SchemaError(f"{where}: column {column} is assigned twice")
        assigned[column] = _qualify(value, scope, visible, where).sql(SPARK)
    if clause.action == "insert":  # unlisted columns of an inserted row are NULL
        return {c: assigned.get(c, "NULL") for c in target_columns}
    # unassigned columns of an updated row keep the target's value
    return {c: assigned.get(c) or scope.ref(TARGET, c).sql(SPARK) for c in target_columns}


def _target_column(path: ColumnPath, scope: _Scope, lowered: dict[str, str], where: str) -> str:
    """The target column a SET target or INSERT column names (struct fields were rebuilt
    into whole columns before planning: see planner/dml/assignments)."""
    qualifiers = (scope.aliases[TARGET], scope.table_name)
    parts = without_qualifier(path, qualifiers, lowered.keys())
    if len(parts) != 1 or parts[0].lower() not in lowered:
        raise SchemaError(
            f"{where}: {path_sql(path)} is not a column of the target table",
            hint=f"The target's columns are {', '.join(lowered.values())}.",
        )
    return lowered[parts[0].lower()]


def _qualify(node: exp.Expr, scope: _Scope, sides: tuple[str, ...], where: str) -> exp.Expr:
    """A copy of ``node`` with every column reference qualified by its side's alias."""
    if node.find(exp.Subquery, exp.Select, exp.Exists):
        raise UnsupportedStatementError(
            f"subqueries are not supported in {where} of MERGE",
            hint="Join the needed data into the source query instead.",
        )
    node = node.copy()
    for column in list(node.find_all(exp.Column)):
        if isinstance(column.this, exp.Star):
            continue
        if column.args.get("db") is not None:
            # alias.struct.field[.field] or struct.field.field: Spark resolves the fields;
            # check the struct column exists on a side this clause may read.
            parts = [part.name for part in column.parts]
            side = scope.side_of(parts[0])
            if side is not None and parts[1].lower() in scope.columns[side]:
                if side not in sides:
                    raise SchemaError(
                        f"{where} cannot read {side} columns ({column.sql(SPARK)})",
                        hint="NOT MATCHED clauses see only the source row; NOT MATCHED BY "
                        "SOURCE clauses see only the target row.",
                    )
                continue
            if parts[0].lower() not in _visible(scope, sides):
                raise SchemaError(f"{where}: cannot resolve {column.sql(SPARK)}")
            continue
        if column.table:
            side = scope.side_of(column.table)
            if side is None and column.table.lower() in _visible(scope, sides):
                continue  # struct.field on an unqualified struct column
            if side is None:
                raise SchemaError(
                    f"{where}: unknown table or alias {column.table} in {column.sql(SPARK)}",
                    hint=f"Use {scope.aliases[TARGET]}.col or {scope.aliases[SOURCE]}.col.",
                )
            if side not in sides:
                raise SchemaError(
                    f"{where} cannot read {side} columns ({column.sql(SPARK)})",
                    hint="NOT MATCHED clauses see only the source row; NOT MATCHED BY SOURCE "
                    "clauses see only the target row.",
                )
            candidates = [side] if column.name.lower() in scope.columns[side] else []
        else:
            candidates = [s for s in sides if column.name.lower() in scope.columns[s]]
        if not candidates:
            raise SchemaError(
                f"{where}: unknown column {column.sql(SPARK)}",
                hint=f"Columns visible here: {', '.join(sorted(_visible(scope, sides)))}.",
            )
        if len(candidates) > 1:
            raise SchemaError(
                f"{where}: column {column.name} is ambiguous (target and source have it)",
                hint=f"Qualify it: {scope.aliases[TARGET]}.{column.name} or "
                f"{scope.aliases[SOURCE]}.{column.name}.",
            )
        side = candidates[0]
        replacement = scope.ref(side, scope.columns[side][column.name.lower()])
        if column is node:
            node = replacement
        else:
            column.replace(replacement)
    return node


def _visible(scope: _Scope, sides: tuple[str, ...]) -> set[str]:
    return {name for side in sides for name in scope.columns[side]}


def _target_filter(on: exp.Expr, scope: _Scope) -> exp.Expr | None:
    """AND of the ON conjuncts that read only target columns, names unqualified."""
    target_alias = scope.aliases[TARGET].lower()
    kept = []
    for term in on.flatten() if isinstance(on, exp.And) else [on]:
        columns = list(term.find_all(exp.Column))
        if not columns or any(c.table.lower() != target_alias or c.db for c in columns):
            continue
        if any(_non_deterministic(f) for f in term.find_all(exp.Func)):
            continue
        term = term.copy()
        for column in list(term.find_all(exp.Column)):
            unqualified = exp.column(exp.to_identifier(column.name, quoted=True))
            if column is term:
                term = unqualified
            else:
                column.replace(unqualified)
        kept.append(term)
    return exp.and_(*kept) if kept else None


def _source_columns(on: exp.Expr, scope: _Scope) -> tuple[str, ...]:
    """The source columns ``on`` reads (top-level names; struct fields keep their column)."""
    alias = scope.aliases[SOURCE].lower()
    out: dict[str, None] = {}
    for column in on.find_all(exp.Column):
        if column.args.get("db") is not None and column.db.lower() == alias:
            name = column.table  # alias.struct.field: the struct column
        elif column.table.lower() == alias:
            name = column.name
        else:
            continue
        out[scope.columns[SOURCE].get(name.lower(), name)] = None
    return tuple(out)


def inserts_deterministic(plan: MergePlan) -> bool:
    """Whether the NOT MATCHED clauses' conditions and values surely give the same rows
    when evaluated twice over the same source rows (unknown functions, e.g. UDFs, might
    not, so they count as non-deterministic)."""
    for c in plan.clauses:
        if c.clause.match != NOT_MATCHED:
            continue
        nodes = [c.clause.condition, *(c.clause.values or ())]
        for node in nodes:
            if node is None:
                continue
            for func in node.find_all(exp.Func):
                if isinstance(func, exp.Anonymous) or _non_deterministic(func):
                    return False
    return True


def _non_deterministic(func: exp.Func) -> bool:
    if isinstance(func, (exp.Rand, exp.Randn, exp.Uuid)):
        return True
    name = func.name if isinstance(func, exp.Anonymous) else func.sql_name()
    return name.lower() in _NON_DETERMINISTIC


def operation_parameters(merge: Merge) -> dict[str, str]:
    """Delta's MERGE operationParameters (each value a JSON string)."""

    def predicates(match: str) -> str:
        out = []
        for clause in merge.clauses:
            if clause.match != match:
                continue
            entry = {"actionType": clause.action}
            if clause.condition is not None:
                entry = {"predicate": clause.condition.sql(SPARK), **entry}
            out.append(entry)
        return json.dumps(out, separators=(",", ":"))

    return {
        "predicate": json.dumps([merge.on.sql(SPARK)]),
        "matchedPredicates": predicates(MATCHED),
        "notMatchedPredicates": predicates(NOT_MATCHED),
        "notMatchedBySourcePredicates": predicates(NOT_MATCHED_BY_SOURCE),
    }
