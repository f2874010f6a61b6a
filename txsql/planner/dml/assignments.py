"""SET targets of UPDATE and MERGE resolved against the table's schema, struct fields too.

``SET s.a = 1`` assigns one field of the struct column ``s``: the row's new ``s`` is built
from ``s`` with that field replaced, so the other fields keep their values (Delta's
rule, at any depth: ``SET s.t.u = 1``). Several fields of one struct may be assigned in
one statement. The new struct is ``named_struct(...)`` over the row's current fields, so a
NULL struct becomes a struct whose unassigned fields are NULL, as in Delta.

Conflicting targets are refused by name, as Delta refuses them: a column or field assigned
twice, or a struct assigned together with one of its own fields (``SET s = ..., s.a = ...``).
A field of a non-struct (an array of structs, a map) cannot be assigned on its own.

The values are Spark SQL expressions (sqlglot trees); casting each column's new value to
the column type is left to the write, as for top-level columns.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from txsql.errors import SchemaError
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.dml import column_path, path_sql
from txsql.planner.sql.refs import ColumnPath
from txsql.planner.sql.statements import Merge

Field = Mapping[str, Any]  # one field of a Spark StructType's JSON


def resolve_assignments(
    assignments: Sequence[tuple[ColumnPath, exp.Expr]],
    fields: Sequence[Field],
    qualifiers: Sequence[str],
    current: Callable[[str], exp.Expr],
    where: str,
) -> dict[str, exp.Expr]:
    """The new value of each assigned top-level column, in order of first assignment.

    Args:
        assignments: ``(name path as written, value)`` pairs.
        fields: the table's top-level fields (schema JSON).
        qualifiers: names a path may start with to mean the table (its alias, its name).
        current: the expression reading a top-level column's current value in the row.
        where: the statement or clause, for messages (``UPDATE t``).

    Raises:
        SchemaError: an unknown column or field, a field of a non-struct, or conflicting
            targets (assigned twice, or a struct together with one of its fields).
    """
    columns = {f["name"].lower(): f for f in fields}
    resolved: list[tuple[ColumnPath, ColumnPath, exp.Expr]] = []  # schema path, written, value
    for written, value in assignments:
        names = without_qualifier(written, qualifiers, columns.keys())
        resolved.append((_schema_path(names, written, columns, where), written, value))
    _refuse_conflicts(resolved, where)
    grouped: dict[str, list[tuple[ColumnPath, exp.Expr]]] = {}
    for path, _, value in resolved:
        grouped.setdefault(path[0], []).append((path[1:], value))
    return {
        column: _new_value(columns[column.lower()]["type"], items, current(column))
        for column, items in grouped.items()
    }


def merge_struct_assignments(merge: Merge, fields: Sequence[Field]) -> Merge:
    """``merge`` with each UPDATE clause that assigns struct fields rewritten to assign
    whole columns (the rebuilt structs); other clauses are returned as they are.

    MERGE keeps SET targets as SQL text (``t.s.a``); after this every target is a column.
    """
    qualifiers = (merge.target_alias, (merge.target.name or "").split(".")[-1])
    columns = {f["name"].lower() for f in fields}

    def current(column: str) -> exp.Expr:
        return exp.column(
            exp.to_identifier(column, quoted=True),
            table=exp.to_identifier(merge.target_alias, quoted=True),
        )

    clauses = []
    for index, clause in enumerate(merge.clauses):
        if clause.action != "update" or clause.columns is None or clause.values is None:
            clauses.append(clause)
            continue
        paths = [set_path(c) for c in clause.columns]
        if all(len(without_qualifier(p, qualifiers, columns)) == 1 for p in paths):
            clauses.append(clause)  # top-level columns only: nothing to rebuild
            continue
        where = f"WHEN {clause.match.replace('_', ' ').upper()} clause {index + 1}"
        new = resolve_assignments(
            list(zip(paths, clause.values)), fields, qualifiers, current, where
        )
        targets = tuple(path_sql((name,)) for name in new)
        clauses.append(replace(clause, columns=targets, values=tuple(new.values())))
    return replace(merge, clauses=tuple(clauses))


def set_path(text: str) -> ColumnPath:
    """The name path of a SET target kept as SQL text (``t.`dot.col``` is ``("t", "dot.col")``).

    >>> set_path("t.`dot.col`"), set_path("s.a.b.c.d")
    (('t', 'dot.col'), ('s', 'a', 'b', 'c', 'd'))
    """
    try:
        path = column_path(sqlglot.parse_one(text, read=SPARK))
    except ParseError:
        path = None
    return path if path is not None else (text,)


def field_names(fields: Sequence[Field]) -> str:
    return ", ".join(path_sql((f["name"],)) for f in fields)


def without_qualifier(
    path: ColumnPath, qualifiers: Sequence[str], columns: Collection[str]
) -> ColumnPath:
    """``t.v`` is column ``v`` of table ``t`` when ``v`` is one of its ``columns`` (lower
    case); otherwise the first part names a column (``s.a``: field ``a`` of struct ``s``),
    as Spark resolves a name.

    >>> without_qualifier(("t", "v"), ["t"], {"v"}), without_qualifier(("s", "a"), ["t"], {"s"})
    (('v',), ('s', 'a'))
    """
    lowered = {q.lower() for q in qualifiers}
    if len(path) > 1 and path[0].lower() in lowered and path[1].lower() in columns:
        return path[1:]
    return path


def _schema_path(
    names: ColumnPath, written: ColumnPath, columns: Mapping[str, Field], where: str
) -> ColumnPath:
    """``names`` spelled as the schema spells them (names match case-insensitively)."""
    top = columns.get(names[0].lower())
    if top is None:
        raise SchemaError(
            f"{where}: no column named {path_sql(written)}",
            hint=f"The table's columns are {field_names(list(columns.values()))}.",
        )
    path = [top["name"]]
    kind: Any = top["type"]
    for name in names[1:]:
        if not (isinstance(kind, dict) and kind.get("type") == "struct"):
            shown = kind.get("type", "?") if isinstance(kind, dict) else kind
            raise SchemaError(
                f"{where}: cannot assign {path_sql(written)}: {path_sql(tuple(path))} is "
                f"{shown.upper()}, not a STRUCT",
                hint="Only fields of STRUCT columns can be assigned one by one; assign the "
                "whole column instead.",
            )
        found = next((f for f in kind["fields"] if f["name"].lower() == name.lower()), None)
        if found is None:
            raise SchemaError(
                f"{where}: {path_sql(tuple(path))} has no field {path_sql((name,))} "
                f"(in SET {path_sql(written)})",
                hint=f"Its fields are {field_names(kind['fields'])}.",
            )
        path.append(found["name"])
        kind = found["type"]
    return tuple(path)


def _refuse_conflicts(
    resolved: Sequence[tuple[ColumnPath, ColumnPath, exp.Expr]], where: str
) -> None:
    keys = [tuple(p.lower() for p in path) for path, _, _ in resolved]
    for i, first in enumerate(keys):
        for j in range(i + 1, len(keys)):
            second = keys[j]
            shorter, longer = sorted((first, second), key=len)
            if longer[: len(shorter)] != shorter:
                continue
            a, b = path_sql(resolved[i][1]), path_sql(resolved[j][1])
            if len(first) == len(second):
                raise SchemaError(
                    f"{where}: column {path_sql(resolved[i][0])} is assigned twice ({a} and {b})",
                    hint="Assign each column or field at most once.",
                )
            raise SchemaError(
                f"{where}: conflicting SET targets {a} and {b}: one is a field of the other",
                hint="Assign either the whole struct (SET s = named_struct(...)) or some of "
                "its fields (SET s.a = ..., s.b = ...), not both.",
            )


def _new_value(
    kind: Any, items: Sequence[tuple[ColumnPath, exp.Expr]], current: exp.Expr
) -> exp.Expr:
    """The value of a column or field given the assignments below it (paths relative to
    it): the assigned value itself, or a struct rebuilt from its current fields."""
    for rest, value in items:
        if not rest:
            return value.copy()  # the whole column or field (conflicts were refused)
    parts: list[exp.Expr] = []
    for field in kind["fields"]:
        name = field["name"]
        below = [(rest[1:], v) for rest, v in items if rest[0].lower() == name.lower()]
        here = exp.Dot(this=current.copy(), expression=exp.to_identifier(name, quoted=True))
        parts.append(exp.Literal.string(name))
        parts.append(_new_value(field["type"], below, here) if below else here)
    return exp.Anonymous(this="named_struct", expressions=parts)
