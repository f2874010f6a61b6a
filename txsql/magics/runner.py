"""Run the SQL of one magic call through the Session and prepare what to display.

The Session is the one execution path (the same as the Python API): this module only
gathers ``:name`` values and DataFrame variables from the notebook, calls the Session,
fetches the rows to show with one ``take(limit + 1)`` and reads the commit's isolation
level and time from the log.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from txsql.errors import SqlError, TxSqlError
from txsql.log.actions import CommitInfo
from txsql.magics.errors import MagicUsageError
from txsql.magics.progress import Display, Progress
from txsql.magics.render import Column, CommitDetails, Fetched, is_commit
from txsql.magics.sessions import NamedSessions
from txsql.magics.source import SqlSource
from txsql.magics.view import TextView, TxResult
from txsql.planner.sql.dialect import DIALECT
from txsql.planner.sql.params import bind_parameters, parameter_names
from txsql.planner.sql.refs import TableRef
from txsql.planner.sql.script import ParsedStatement, parse_script
from txsql.result import Result


@dataclass
class CellRun:
    """Everything one magic call needs besides its SQL.

    Attributes:
        session: the txsql Session to run on.
        user_ns: the notebook namespace (parameters and DataFrame variables).
        named: the kernel's named transaction sessions.
        session_name: ``--session NAME`` or None for autocommit.
        limit: rows to display; None for all, 0 for no display.
        feedback: 0 rows only, 1 banners and footers, 2 also Delta's operation metrics.
        progress_display: factory for the live progress line, or None for no line.
        progress_delay: seconds before the progress line appears.
        all_columns: show OPTIMIZE/VACUUM/DESCRIBE HISTORY as Delta returns them.
    """

    session: Any
    user_ns: Mapping[str, Any]
    named: NamedSessions
    session_name: str | None = None
    limit: int | None = 20
    feedback: int = 1
    progress_display: Callable[[], Display] | None = None
    progress_delay: float = 1.0
    all_columns: bool = False


def prepare(source: SqlSource, user_ns: Mapping[str, Any]) -> tuple[list[ParsedStatement], dict]:
    """Parse the whole script and gather its parameters before anything runs.

    Raises:
        SqlParseError: a syntax error anywhere (nothing runs).
        SqlError: parameters missing from the notebook (all of them named at once), or a
            value that cannot be a SQL literal.
    """
    parsed = parse_script(source.text)
    if not parsed:
        raise MagicUsageError("no SQL statement to run", hint="Write a statement, e.g. SELECT 1.")
    names: list[str] = []
    first_missing: ParsedStatement | None = None
    for statement in parsed:
        for name in parameter_names(statement.expression):
            if name not in names:
                names.append(name)
            if name not in user_ns and first_missing is None:
                first_missing = statement
    missing = [n for n in names if n not in user_ns]
    if missing:
        error = SqlError(
            f"no notebook variable for parameter(s) {', '.join(':' + n for n in missing)}",
            hint="Define them in a Python cell first, e.g. " + f"{missing[0]} = 42.",
        )
        assert first_missing is not None
        where = first_missing.source
        error.locate(where.text, where.line, where.column)
        raise error
    params = {n: user_ns[n] for n in names}
    for statement in parsed:
        # binding every statement now means a bad value stops the cell before anything runs
        try:
            bind_parameters(statement.expression, params)
        except TxSqlError as e:
            e.locate(statement.source.text, statement.source.line, statement.source.column)
            raise
    return parsed, params


def dataframe_kind(value: Any) -> str | None:
    """``spark`` or ``pandas`` for DataFrames usable as tables, else None."""
    module = type(value).__module__
    if module.startswith("pyspark.sql") and hasattr(value, "createOrReplaceTempView"):
        return "spark"
    if module.startswith("pandas") and type(value).__name__ == "DataFrame":
        return "pandas"
    return None


def dataframe_tables(
    parsed: Sequence[ParsedStatement], user_ns: Mapping[str, Any], session: Any
) -> dict[str, str]:
    """Notebook DataFrame variables the SQL names as tables: ``{name: kind}``.

    A txsql table of the same name wins, as do CTE names.
    """
    found: dict[str, str] = {}
    for statement in parsed:
        ctes = {cte.alias_or_name.lower() for cte in statement.expression.find_all(exp.CTE)}
        for table in statement.expression.find_all(exp.Table):
            name = table.name
            if not name or table.args.get("db") is not None or name.lower() in ctes:
                continue
            kind = dataframe_kind(user_ns.get(name))
            if kind is None or name in found or _is_txsql_table(session, name):
                continue
            found[name] = kind
    return found


def register_dataframes(tables: Mapping[str, str], user_ns: Mapping[str, Any], spark: Any) -> None:
    """Expose notebook DataFrames to Spark SQL as temp views named like their variables."""
    for name, kind in tables.items():
        value = user_ns[name]
        frame = value if kind == "spark" else spark.createDataFrame(value)
        frame.createOrReplaceTempView(name)


def _is_txsql_table(session: Any, name: str) -> bool:
    try:
        return bool(session.catalog.exists(TableRef(name=name)))
    except TxSqlError:
        return False


def run_sql(run: CellRun, source: SqlSource, *, explain: bool = False) -> TxResult | TextView:
    """Run ``source`` and return the object to display."""
    started = time.perf_counter()
    parsed, params = prepare(source, run.user_ns)
    register_dataframes(
        dataframe_tables(parsed, run.user_ns, run.session), run.user_ns, run.session.spark
    )
    if explain:
        return _explain(run, source, parsed, params)
    label = _label(parsed)
    display = run.progress_display() if run.progress_display else None
    with Progress(run.session.spark, label, display=display, delay=run.progress_delay) as progress:
        if run.session_name is not None:
            results = run.named.run(
                run.session_name, run.session, [p.source for p in parsed], params
            )
        else:
            results = run.session.run_script(source.text, params)
        last = results[-1]
        fetched = None
        if last.df is not None and run.limit != 0:
            progress.phase("fetch rows")
            fetched = _fetch(last, run.limit, parsed[-1])
    details = commit_details(run.session, last) if run.feedback >= 1 else None
    badge = run.named.badge(run.session_name) if run.session_name is not None else None
    return TxResult(
        results,
        fetched=fetched,
        details=details,
        feedback=run.feedback,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        badge=badge,
        show_rows=run.limit != 0,
        all_columns=run.all_columns,
    )


def render_sql(run: CellRun, source: SqlSource) -> TextView:
    """``--render``: the SQL exactly as it will run, with its bound parameters; runs nothing."""
    parsed, params = prepare(source, run.user_ns)
    lines = []
    for i, statement in enumerate(parsed, 1):
        where = source.where(statement.source.line, statement.source.column)
        if len(parsed) > 1:
            lines.append(f"-- statement {i} ({where})")
        bound = bind_parameters(statement.expression, params)
        lines.append(bound.sql(dialect=DIALECT, pretty=True) + ";")
    if params:
        lines.append("-- parameters (bound as typed literals):")
        lines.extend(f"--   :{k} = {v!r} ({type(v).__name__})" for k, v in params.items())
    tables = dataframe_tables(parsed, run.user_ns, run.session)
    if tables:
        lines.append("-- notebook DataFrames used as tables:")
        lines.extend(f"--   {name} ({kind} DataFrame)" for name, kind in tables.items())
    badge = run.named.badge(run.session_name) if run.session_name else None
    return TextView("\n".join(lines), badge=badge)


def _explain(
    run: CellRun, source: SqlSource, parsed: Sequence[ParsedStatement], params: dict
) -> TextView:
    """Spark's plan for queries; txsql's plan (EXPLAIN: pruning, steps) for the rest."""
    plans = []
    for i, statement in enumerate(parsed, 1):
        header = f"-- statement {i}\n" if len(parsed) > 1 else ""
        try:
            if isinstance(statement.expression, exp.Query):
                result = run.session.run_script(statement.source.text, params)[-1]
                buffer = io.StringIO()
                with contextlib.redirect_stdout(buffer):
                    result.df.explain(mode="formatted")  # queries are lazy: nothing runs
                plan = buffer.getvalue().rstrip()
            else:
                plan = run.session.sql(f"EXPLAIN {statement.source.text}", params).message
        except TxSqlError as e:
            e.locate(statement.source.text, statement.source.line, statement.source.column)
            raise
        plans.append(header + plan)
    return TextView("\n\n".join(plans))


def _label(parsed: Sequence[ParsedStatement]) -> str:
    """``UPDATE t SET`` for one statement, ``3 statements`` for a script."""
    if len(parsed) > 1:
        return f"{len(parsed)} statements"
    return " ".join(" ".join(parsed[0].source.text.split()).split(" ")[:3])


def _fetch(result: Result, limit: int | None, statement: ParsedStatement) -> Fetched:
    """One Spark job: ``take(limit + 1)`` tells "more rows exist" without a count().

    Rows are computed now, so this is where a bad cast or a vacuumed file fails: the
    Result maps it to its typed error, placed at the statement's line in the cell.
    """
    df = result.df
    with result.typed_errors(statement.source.line, statement.source.column):
        columns = tuple(Column(f.name, f.dataType.simpleString()) for f in df.schema.fields)
        rows = df.take(limit + 1) if limit is not None else df.collect()
    truncated = limit is not None and len(rows) > limit
    shown = rows[:limit] if limit is not None else rows
    return Fetched(columns, tuple(tuple(row) for row in shown), truncated)


def commit_details(session: Any, result: Result) -> CommitDetails | None:
    """Isolation level and commit time of the version a result wrote or read (from the log)."""
    if result.table is None or result.version is None:
        return None
    if not (is_commit(result) or result.df is not None):
        return None
    try:
        actions = session.table(result.table).log.read_commit(result.version)
    except Exception:
        return None  # the banner is still useful without these two facts
    for action in actions:
        if isinstance(action, CommitInfo):
            return CommitDetails(
                isolation_level=action.isolation_level,
                timestamp_ms=action.in_commit_timestamp or action.timestamp,
            )
    return None
