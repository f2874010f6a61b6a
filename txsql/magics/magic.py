"""``%%txsql`` / ``%txsql``: the IPython magics and their ``%config TxSql.*`` settings.

The magic only parses its line, picks the Session, and hands the SQL to
:mod:`txsql.magics.runner`; rendering lives in the view objects. User errors stop the cell
without a Python traceback (see :mod:`txsql.magics.errors`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display
from traitlets import Bool, Enum, Float, Int, TraitError, Unicode, validate
from traitlets.config.configurable import Configurable

from txsql.engine.spark import (
    BackgroundStart,
    spark_log_path,
    wants_background_start,
    warm_session,
)
from txsql.errors import CommitConflictError, TxSqlError
from txsql.magics.conflict import ConflictCard
from txsql.magics.diff import parse_diff_args, version_diff
from txsql.magics.errors import (
    MagicUsageError,
    as_cell_error,
    error_lines,
    quiet_spark_error_logs,
)
from txsql.magics.history import HistoryView
from txsql.magics.lineage import lineage_view
from txsql.magics.options import MagicOptions, help_text, parse_line
from txsql.magics.progress import IPythonDisplay
from txsql.magics.runner import CellRun, render_sql, run_sql
from txsql.magics.sessions import NamedSessions
from txsql.magics.source import SqlSource
from txsql.magics.view import TextView, TxResult
from txsql.magics.warmup import cancel_warmup, wants_warmup, warm_statements
from txsql.maintenance import log_path as maintenance_log_path
from txsql.planner.sql.script import split_statements
from txsql.version import __version__

SUBCOMMANDS = ("history", "diff", "lineage", "sessions", "tables", "maintenance")

STATEMENTS_HELP = """Statements (one per line magic, any number per cell, `;`-separated):
  CREATE TABLE t (id BIGINT, v STRING) [PARTITIONED BY (...)] [AS SELECT ...]
  INSERT INTO t VALUES (1, 'a')            SELECT * FROM t VERSION AS OF 3
  DESCRIBE HISTORY t  (compact columns; %%txsql --all-columns shows all 15)
  and UPDATE/DELETE/MERGE/RESTORE/OPTIMIZE/VACUUM/...
Parameters: `WHERE id = :id` binds the notebook variable `id` as a typed literal.
DataFrames: `FROM df` reads the pandas or Spark DataFrame in variable `df`.
Subcommands: %txsql history t | diff t [v1 [v2]] [--key col,...] | lineage t [WHERE pred]
  | sessions | tables | maintenance on|off|status|idle <seconds>
  diff pairs a removed and an added row with the same key (default: the first column)
  into one updated row shown as old → new.
Settings: %config TxSql.displaylimit / feedback / output / warehouse / retries / progress
  / maintenance"""


class TxSql(Configurable):
    """Settings of the txsql magic (``%config TxSql.<name> = value``)."""

    displaylimit = Int(
        20,
        allow_none=True,
        config=True,
        help="Rows shown per result (None: all; 0: no display). -l/--limit overrides it.",
    )
    feedback = Int(
        1,
        config=True,
        help="0: rows only; 1: commit banners and footers; 2: also Delta's operation metrics.",
    )
    output = Enum(
        ("result", "spark", "pandas"),
        "result",
        config=True,
        help="What a cell returns: a txsql result, the Spark DataFrame, or pandas.",
    )
    warehouse = Unicode(
        None, allow_none=True, config=True, help="Directory of named tables (./txsql-warehouse)."
    )
    retries = Int(
        None,
        allow_none=True,
        config=True,
        help="Lost commit races retried (None: session default).",
    )
    progress = Bool(True, config=True, help="Show a live progress line for slow statements.")
    maintenance = Bool(
        True,
        config=True,
        help="Idle maintenance for the sessions the magic starts (%txsql maintenance on|off).",
    )
    progress_delay = Float(1.0, config=True, help="Seconds before the progress line appears.")
    short_errors = Bool(True, config=True, help="Show txsql errors without a Python traceback.")

    @validate("displaylimit", "retries")
    def _non_negative(self, proposal: Any) -> Any:
        value = proposal["value"]
        if value is not None and value < 0:
            raise TraitError(f"{proposal['trait'].name} must be >= 0 or None")
        return value

    @validate("feedback")
    def _feedback_level(self, proposal: Any) -> Any:
        if proposal["value"] not in (0, 1, 2):
            raise TraitError("feedback must be 0, 1 or 2")
        return proposal["value"]


@magics_class
class TxSqlMagics(Magics, TxSql):
    """The ``%%txsql`` cell magic and ``%txsql`` line magic."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.named = NamedSessions()
        self._sessions: dict[tuple[Any, ...], Any] = {}
        # The local SparkSession started at %load_ext (None: the Session picks one itself).
        self.background: BackgroundStart | None = None

    def start_spark_in_background(self) -> None:
        """Start and warm a local SparkSession now, unless the notebook decides it."""
        if self.background is None and wants_background_start():
            self.background = BackgroundStart(
                warm=_warm_for_notebook,
                warm_after=warm_statements if wants_warmup() else None,
                cancel_warm=cancel_warmup,
            )

    @property
    def user_ns(self) -> dict[str, Any]:
        """The notebook's namespace (parameters, DataFrames, ``_txsql``, ``-o`` targets)."""
        assert self.shell is not None, "the magics are used from an IPython shell"
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    @line_cell_magic
    def txsql(self, line: str, cell: str | None = None) -> Any:
        """Run transactional SQL on Delta tables.

        Usage: ``%%txsql [options]`` with SQL in the cell body, or
        ``%txsql [options] <statement>``; ``%txsql --help`` lists the options.
        """
        source: SqlSource | None = None
        options: MagicOptions | None = None
        try:
            options = parse_line(line, cell=cell is not None)
            if options.help:
                return TextView(help_text() + "\n\n" + STATEMENTS_HELP)
            if cell is None and not options.file:
                words = options.rest.split()
                if not words:
                    return self._status()
                if words[0].lower() in SUBCOMMANDS:
                    return self._subcommand(words[0].lower(), words[1:], options)
            source = self._source(options, cell)
            with quiet_spark_error_logs():
                return self._run(source, options)
        except TxSqlError as error:
            # The failed cell's error, with its details (a conflict's rule and rows), for
            # the next cell, as `_txsql` holds the last result.
            self.user_ns["_txsql_error"] = error
            raise self._failure(error, source, options) from None

    # --- running SQL -------------------------------------------------------------------

    def _run(self, source: SqlSource, options: MagicOptions) -> Any:
        quiet = options.quiet
        run = CellRun(
            session=self._session(options),
            user_ns=self.user_ns,
            named=self.named,
            session_name=options.session,
            limit=self._limit(options),
            feedback=0 if quiet else self.feedback,
            progress_display=IPythonDisplay if self._progress_enabled(quiet) else None,
            progress_delay=self.progress_delay,
            all_columns=options.all_columns,
        )
        if options.render:
            return render_sql(run, source)
        value = run_sql(run, source, explain=options.explain)
        if not isinstance(value, TxResult):
            return value
        self.user_ns["_txsql"] = value
        returned = self._convert(value)
        if options.out:
            self.user_ns[options.out] = returned
        if run.limit == 0:
            return None
        if returned is not value and value.result.df is None and run.feedback >= 1:
            # spark/pandas output still says what was committed
            display(TxResult(value.results, details=value.details, show_rows=False))
        return returned

    def _convert(self, value: TxResult) -> Any:
        if self.output == "spark":
            return value.df if value.df is not None else value
        if self.output == "pandas":
            return value.to_pandas()
        return value

    def _limit(self, options: MagicOptions) -> int | None:
        if options.limit is None:
            limit: int | None = self.displaylimit
            return limit
        return None if options.limit == "all" else options.limit

    def _progress_enabled(self, quiet: bool) -> bool:
        # a terminal cannot update an output area in place: only kernels get the live line
        return self.progress and not quiet and getattr(self.shell, "kernel", None) is not None

    def _source(self, options: MagicOptions, cell: str | None) -> SqlSource:
        if options.file:
            if cell is not None and cell.strip():
                raise MagicUsageError(
                    "use either -f FILE or SQL in the cell body, not both",
                    hint="Remove -f, or empty the cell body.",
                )
            path = os.path.expanduser(options.file)
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            except OSError as e:
                raise MagicUsageError(f"cannot read {options.file}: {e.strerror}") from None
            return SqlSource(text, "file", options.file)
        if cell is not None:
            if not cell.strip():
                raise MagicUsageError(
                    "the cell has no SQL", hint="Write SQL below the %%txsql line."
                )
            return SqlSource(cell, "cell")
        return SqlSource(options.rest, "line")

    def _session(self, options: MagicOptions) -> Any:
        """The Session for these options, cached per Spark session, warehouse and retries."""
        # Deferred: txsql.session loads pyspark, which %load_ext must not wait for.
        from txsql.session import Session

        spark = self._spark(options.spark)
        warehouse = options.warehouse or self.warehouse
        retries = options.retries if options.retries is not None else self.retries
        key = (id(spark) if spark is not None else None, warehouse, retries)
        session = self._sessions.get(key)
        if session is None:
            kwargs: dict[str, Any] = {}
            if retries is not None:
                kwargs["max_commit_attempts"] = retries + 1
            # Notebooks are idle most of the time: maintenance is on by default here.
            session = Session(
                spark=spark, warehouse=warehouse, maintenance=self.maintenance, **kwargs
            )
            self._sessions[key] = session
        return session

    def _spark(self, variable: str | None) -> Any:
        if variable is None:
            if self.background is not None:
                return self._background_spark(self.background)
            return None  # the Session takes the active SparkSession or starts a local one
        if variable not in self.user_ns:
            raise MagicUsageError(
                f"no notebook variable {variable!r} for --spark",
                hint="Pass the name of a variable holding a SparkSession.",
            )
        spark = self.user_ns[variable]
        if not (hasattr(spark, "sql") and hasattr(spark, "createDataFrame")):
            raise MagicUsageError(
                f"--spark {variable}: {type(spark).__name__} is not a SparkSession",
                hint="e.g. spark = SparkSession.builder.getOrCreate()",
            )
        return spark

    def _background_spark(self, background: BackgroundStart) -> Any:
        """Wait for the session started at %load_ext, with a "starting Spark… n s" line."""
        display = IPythonDisplay() if self._progress_enabled(False) else None
        shown = False

        def tick(seconds: float) -> None:
            nonlocal shown
            if display is not None:
                text = f"starting Spark… {seconds:.0f} s"
                display.show(text, f'<div class="txsql-progress" style="{_MUTED}">{text}</div>')
                shown = True

        try:
            return background.wait(tick)
        except TxSqlError:
            self.background = None  # surfaced once; the next cell starts Spark the usual way
            raise
        finally:
            if display is not None and shown:
                display.clear()

    # --- subcommands -------------------------------------------------------------------

    def _subcommand(self, name: str, args: list[str], options: MagicOptions) -> Any:
        if name == "sessions":
            return self.named.view()
        session = self._session(options)
        if name == "maintenance":
            return self._maintenance(session, args)
        if name == "tables":
            names = session.catalog.names()
            return TextView("\n".join(names) if names else f"no tables in {session.warehouse}")
        if not args:
            raise MagicUsageError(f"{name} needs a table", hint=f"e.g. %txsql {name} orders")
        limit = self._limit(options)
        if name == "history":
            table = session.table(" ".join(args))
            # Deferred: the planner loads pyspark, which %load_ext must not wait for.
            from txsql.planner.operations.describe import history_rows

            rows = history_rows(table.log, None if limit is None else limit + 1)
            truncated = limit is not None and len(rows) > limit
            shown = rows[:limit] if limit is not None else rows
            return HistoryView(table.name, shown, truncated, all_columns=options.all_columns)
        if name == "lineage":
            return lineage_view(session, args)
        wanted = parse_diff_args(args)
        return version_diff(session, wanted.table, wanted.v1, wanted.v2, limit, wanted.key)

    def _maintenance(self, session: Any, args: list[str]) -> TextView:
        """``%txsql maintenance on|off|status|idle <seconds>``."""
        usage = "%txsql maintenance on|off|status|idle <seconds>"
        word = args[0].lower() if args else "status"
        if word in ("on", "off"):  # every session of this magic, and the ones to come
            self.maintenance = word == "on"
            for each in self._sessions.values():
                (each.maintenance.start if self.maintenance else each.maintenance.stop)()
        elif word == "idle":
            try:
                seconds = float(args[1])
            except (IndexError, ValueError):
                seconds = -1.0
            if not 0 < seconds < 86_400:
                raise MagicUsageError("idle takes a number of seconds", hint=usage)
            session.maintenance.idle_seconds = seconds
        elif word != "status":
            raise MagicUsageError(f"unknown maintenance command {word!r}", hint=usage)
        state = "on" if session.maintenance.running else "off"
        return TextView(
            f"idle maintenance: {state} (after {session.maintenance.idle_seconds:g} s idle; "
            f"log: {maintenance_log_path()})"
        )

    def _status(self) -> TextView:
        lines = [f"txsql {__version__}"]
        if self._sessions:
            session = next(iter(self._sessions.values()))
            spark = session.spark
            lines.append(f"Spark {spark.version} · warehouse {session.warehouse}")
            names = session.catalog.names()
            lines.append(f"tables: {', '.join(names) if names else '(none)'}")
        elif self.background is not None and not self.background.done:
            lines.append(f"Spark: starting in the background ({self.background.elapsed():.0f} s)")
        else:
            lines.append("Spark: not used yet (the first statement picks the active session)")
        open_sessions = ", ".join(self.named.badge(n) for n in self.named.open) or "none"
        lines.append(f"open sessions: {open_sessions}")
        log = spark_log_path()
        if os.path.exists(log):  # a local JVM txsql started writes its own output there
            lines.append(f"Spark's log: {log}")
        lines.append(
            f"settings: displaylimit={self.displaylimit} feedback={self.feedback} "
            f"output={self.output} progress={self.progress}"
        )
        lines.append("help: %txsql --help")
        return TextView("\n".join(lines))

    # --- errors ------------------------------------------------------------------------

    def _failure(
        self, error: TxSqlError, source: SqlSource | None, options: MagicOptions | None
    ) -> TxSqlError:
        """The exception that stops the cell: short text, the conflict card shown first."""
        if not self.short_errors:
            return error
        statements = _statement_texts(source)
        card = False
        if isinstance(error, CommitConflictError):
            display(ConflictCard(error, session=options.session if options else None))
            card = True
        lines = error_lines(error, source, statements=statements, conflict_card_shown=card)
        return as_cell_error(error, lines)


_MUTED = "color:#6a737d;font-size:12px"


def _warm_for_notebook(spark: Any, keep_going: Callable[[], bool]) -> None:
    # The planner's modules (sqlglot and friends, ~1 s) load here, off the first cell.
    import txsql.session  # noqa: F401

    warm_session(spark, keep_going)


def _statement_texts(source: SqlSource | None) -> list[str]:
    if source is None:
        return []

    try:
        return [s.text for s in split_statements(source.text)]
    except TxSqlError:
        return []
