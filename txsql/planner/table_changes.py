"""``table_changes('t', start[, end])``: the change data feed in SQL and from Python.

Bounds are versions (integers) or timestamps (strings or timestamp expressions), as in
Databricks: a start timestamp means the first commit at or after it, an end timestamp the
last commit at or before it; both bounds are inclusive and an end past the latest version
is clamped. ``SELECT ... FROM table_changes(...)`` is rewritten to a temp view over the
change rows before Spark runs the query, like any txsql table reference.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Union

from sqlglot import exp

from txsql.engine.changes import empty_changes, read_changes
from txsql.errors import ChangeDataFeedError, SqlError
from txsql.log.deltalog import DeltaLog
from txsql.log.history import commit_timestamps
from txsql.planner.catalog import sql_string, timestamp_ms
from txsql.planner.context import RunContext
from txsql.planner.frames import Frames
from txsql.planner.sql.dialect import SPARK
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.refs import TableRef
from txsql.planner.sql.script import parse_statement, split_statements

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Bound = Union[int, str, dt.datetime]
FUNCTION = "table_changes"


def changes_dataframe(ctx: RunContext, ref: TableRef, start: Bound, end: Bound | None) -> DataFrame:
    """The change rows of ``ref`` between the bounds (see the module docstring).

    Raises:
        ChangeDataFeedError: a bad range, or versions without the feed.
        TableNotFoundError: the table does not exist.
    """
    log = ctx.catalog.existing_log(ref)
    first = _version(ctx, log, start, is_start=True)
    last = None if end is None else _version(ctx, log, end, is_start=False)
    if last is not None and last < first and not isinstance(end, int):
        # Both timestamps fall between the same two commits: no changes (Delta's rule).
        return empty_changes(ctx.spark, log.snapshot())
    return read_changes(ctx.spark, log, first, last)


def _version(ctx: RunContext, log: DeltaLog, bound: Bound, *, is_start: bool) -> int:
    if isinstance(bound, bool) or bound is None:
        raise ChangeDataFeedError(f"{bound!r} is not a version or timestamp bound")
    if isinstance(bound, int):
        return bound
    if isinstance(bound, dt.datetime):
        when = bound if bound.tzinfo else bound.replace(tzinfo=dt.timezone.utc)
        ms = int(when.timestamp() * 1000)
    else:
        text = bound if isinstance(bound, _Expression) else sql_string(bound)
        ms = timestamp_ms(text, ctx.spark)
    return _version_at(log, ms, is_start=is_start)


def _version_at(log: DeltaLog, ms: int, *, is_start: bool) -> int:
    timestamps = sorted(commit_timestamps(log.store).items())
    if is_start:
        later = [v for v, ts in timestamps if ts >= ms]
        if not later:
            raise ChangeDataFeedError(
                f"the start timestamp ({ms} ms) is after the latest commit "
                "[DELTA_TIMESTAMP_GREATER_THAN_COMMIT]",
                hint="Pick an earlier start; DESCRIBE HISTORY lists commit timestamps.",
            )
        return later[0]
    earlier = [v for v, ts in timestamps if ts <= ms]
    if not earlier:
        raise ChangeDataFeedError(
            f"the end timestamp ({ms} ms) is before the first commit of the table",
            hint="Pick a later end; DESCRIBE HISTORY lists commit timestamps.",
        )
    return earlier[-1]


def substitute_table_changes(ctx: RunContext, query: exp.Expr, frames: Frames) -> exp.Expr:
    """Replace each ``table_changes(...)`` in ``query`` by a placeholder bound in ``frames``
    to a DataFrame of its rows."""
    query = query.copy()
    for table in list(query.find_all(exp.Table)):
        call = table.this
        if not (isinstance(call, exp.Anonymous) and str(call.this).lower() == FUNCTION):
            continue
        ref, start, end = _arguments(call)
        df = changes_dataframe(ctx, ref, start, end)
        table.replace(frames.bind(df, table.alias or FUNCTION))
    return query


def _arguments(call: exp.Anonymous) -> tuple[TableRef, Bound, Bound | None]:
    args = list(call.expressions)
    if len(args) not in (2, 3):
        raise SqlError(
            f"table_changes takes 2 or 3 arguments, not {len(args)}",
            hint="table_changes('table', start_version_or_timestamp[, end])",
        )
    name = args[0]
    if not (isinstance(name, exp.Literal) and name.is_string):
        raise SqlError(
            "table_changes needs the table name as a string literal",
            hint="e.g. table_changes('events', 2, 5)",
        )
    bounds = [_bound(a) for a in args[1:]]
    return parse_table_name(name.this), bounds[0], bounds[1] if len(bounds) > 1 else None


def _bound(arg: exp.Expr) -> Bound:
    if isinstance(arg, exp.Null):
        raise ChangeDataFeedError(
            "a table_changes bound is NULL [DELTA_CDC_READ_NULL_RANGE_BOUNDARY]",
            hint="Give a version number or a timestamp.",
        )
    if isinstance(arg, exp.Literal):
        return str(arg.this) if arg.is_string else int(arg.this)
    if isinstance(arg, exp.Neg) and isinstance(arg.this, exp.Literal):
        raise ChangeDataFeedError(f"the change range bound {arg.sql()} is negative")
    # Any other constant expression is a timestamp Spark evaluates (e.g. CAST(...)).
    return _Expression(arg.sql(SPARK))


class _Expression(str):
    """A timestamp given as a Spark SQL expression rather than a string literal."""


def parse_table_name(text: str) -> TableRef:
    """A table name, ``delta.`/path``` or a plain path, as a :class:`TableRef`."""
    text = text.strip()
    if text.startswith(("/", "file:", "./", "~")) or "://" in text:
        return TableRef(path=text)

    statement = split_statements(f"SELECT * FROM {text}")[0]
    table = parse_statement(statement, statement.text).find(exp.Table)
    if table is None:
        raise SqlError(f"{text!r} is not a table name")
    return table_ref(table)
