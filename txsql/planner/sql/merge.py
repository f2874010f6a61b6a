"""MERGE INTO: the typed :class:`Merge` statement from sqlglot (checked, not yet resolved).

Resolution against the table schemas is :mod:`txsql.planner.operations.merge.plan`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from txsql.errors import SqlError, UnsupportedStatementError
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.dml import set_target
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.statements import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    Merge,
    MergeClause,
)


def build_merge(merge: exp.Merge) -> Merge:
    """The typed :class:`Merge` of a parsed ``MERGE INTO`` statement."""
    target = merge.this
    if not isinstance(target, exp.Table):
        raise SqlError("MERGE INTO needs a table name", hint="MERGE INTO t USING s ON ...")
    if merge.args.get("using_cond"):
        raise UnsupportedStatementError(
            "MERGE ... USING (columns) is not supported", hint="Write the ON condition out."
        )
    using = merge.args.get("using")
    on = merge.args.get("on")
    if using is None or on is None:
        raise SqlError("MERGE needs USING and ON", hint="MERGE INTO t USING s ON t.id = s.id")
    source_alias = using.alias_or_name
    if not source_alias:
        raise SqlError("the MERGE source needs an alias", hint="USING (SELECT ...) AS s")
    target_alias = target.alias or target.name
    if source_alias.lower() == target_alias.lower():
        raise SqlError(
            f"MERGE target and source are both called {target_alias}",
            hint="Give one of them another alias: MERGE INTO t AS x USING t AS y ...",
        )
    whens = merge.args.get("whens")
    clauses = tuple(_clause(w) for w in (whens.expressions if whens else []))
    if not clauses:
        raise SqlError("MERGE needs at least one WHEN clause", hint="WHEN MATCHED THEN ...")
    _check_clause_order(clauses)
    source = exp.select("*").from_(using.copy())
    return Merge(table_ref(target), target_alias, source, source_alias, on.copy(), clauses)


def _clause(when: exp.When) -> MergeClause:
    match = (
        NOT_MATCHED_BY_SOURCE
        if when.args.get("source")
        else (MATCHED if when.args.get("matched") else NOT_MATCHED)
    )
    condition = when.args.get("condition")
    then = when.args.get("then")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        action, columns, values = "delete", None, None
    elif isinstance(then, exp.Update):
        action = "update"
        if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
            columns, values = None, None
        else:
            for assignment in then.expressions:
                set_target(assignment)  # checks it is `target = value`
            columns = tuple(a.this.sql(SPARK) for a in then.expressions)
            values = tuple(a.expression for a in then.expressions)
    elif isinstance(then, exp.Insert):
        action = "insert"
        names = then.this
        row = then.expression
        if isinstance(names, exp.Star):
            columns, values = None, None
        else:
            columns = tuple(c.name for c in names.expressions) if names is not None else None
            values = tuple(row.expressions) if isinstance(row, exp.Tuple) else ()
    else:
        raise UnsupportedStatementError(
            f"unsupported MERGE action `{then.sql(SPARK) if then else ''}`",
            hint="Use UPDATE SET ..., UPDATE SET *, DELETE, INSERT (...) VALUES (...), INSERT *.",
        )
    allowed = {MATCHED: ("update", "delete"), NOT_MATCHED_BY_SOURCE: ("update", "delete")}
    if action not in allowed.get(match, ("insert",)):
        kind = match.replace("_", " ").upper()
        raise SqlError(
            f"WHEN {kind} cannot {action.upper()}",
            hint="MATCHED and NOT MATCHED BY SOURCE clauses UPDATE or DELETE; NOT MATCHED "
            "clauses INSERT.",
        )
    if match == NOT_MATCHED_BY_SOURCE and action == "update" and values is None:
        raise SqlError(
            "WHEN NOT MATCHED BY SOURCE cannot UPDATE SET * (there is no source row)",
            hint="Assign the columns: UPDATE SET col = expr.",
        )
    return MergeClause(match, action, condition, columns, values)


def _check_clause_order(clauses: Sequence[MergeClause]) -> None:
    # Delta's rule: a clause without a condition shadows every later clause of its kind.
    for match in (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE):
        group = [c for c in clauses if c.match == match]
        if any(c.condition is None for c in group[:-1]):
            kind = match.replace("_", " ").upper()
            raise SqlError(
                f"only the last WHEN {kind} clause may omit its condition",
                hint="Add an AND condition to the earlier clause or move it last.",
            )
