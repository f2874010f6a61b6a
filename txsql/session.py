"""Session: the one path the magic, the Python API and the tests all use to run SQL."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from txsql.engine.executors import check_executors_import_txsql
from txsql.engine.releases import drain_releases
from txsql.engine.spark_errors import quiet_spark_errors, statement_error
from txsql.errors import SqlError, TransactionAbortedError, TransactionError, TxSqlError
from txsql.planner import registry
from txsql.planner.catalog import Catalog
from txsql.planner.context import ExplicitTransaction, RunContext
from txsql.planner.idempotent import AppWrite, StatementSkipped, run_idempotent
from txsql.planner.multi_commit import commit_description, commit_tables, roll_forward
from txsql.planner.sql.build import build_statement
from txsql.planner.sql.params import bind_parameters, used_parameters
from txsql.planner.sql.script import ParsedStatement, parse_script
from txsql.planner.sql.statements import Begin, Commit, Rollback, Statement
from txsql.planner.sql.syntax import quiet_sqlglot
from txsql.result import Result
from txsql.table import Table
from txsql.txn.isolation import IsolationLevel
from txsql.txn.read_validation import validate_reads

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_WAREHOUSE = "txsql-warehouse"


class Session:
    """Runs txsql statements on a SparkSession against Delta tables in a warehouse.

    Args:
        spark: the SparkSession to use (classic or Spark Connect); by default the active
            one, or a new local one.
        warehouse: directory holding tables addressed by name (default
            ``./txsql-warehouse``); tables can always be addressed by path as
            ``delta.`/path```.
        max_commit_attempts: how many lost commit races a statement may retry.
        storage_options: object-store settings (endpoint, region, access_key_id, ...);
            they beat the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``), which beats
            Spark's Hadoop configuration (``spark.hadoop.fs.s3a.*``...). One set per
            Python process: the last Session created sets it.
        spark_scheme: how Spark names each store, e.g. ``{"s3": "s3"}`` on EMR (default
            ``s3://`` -> ``s3a://``; ``gs://`` and ``abfss://`` unchanged).
    """

    def __init__(
        self,
        spark: SparkSession | None = None,
        warehouse: str | None = None,
        *,
        max_commit_attempts: int = 10_000,
        storage_options: Mapping[str, object] | None = None,
        spark_scheme: Mapping[str, str] | None = None,
    ) -> None:
        from txsql.engine.executors import hadoop_storage_conf
        from txsql.engine.spark import local_session, prepare_session
        from txsql.storage.factory import configure_storage
        from txsql.storage.paths import parse_location

        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession() or local_session()
        self.spark = prepare_session(spark)
        configure_storage(storage_options, hadoop_storage_conf(self.spark), spark_scheme)
        self.warehouse = parse_location(warehouse or DEFAULT_WAREHOUSE).root
        self.catalog = Catalog(self.warehouse)
        self._context = RunContext(self.spark, self.catalog, max_commit_attempts)

    def sql(
        self,
        text: str,
        params: Mapping[str, Any] | None = None,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
    ) -> Result:
        """Run one statement or a script of several; return the last statement's result.

        ``:name`` placeholders are bound from ``params`` as typed literals. With
        ``app_id`` and ``app_version`` every write statement is exactly-once: if the
        table already records that version (or a newer one) of the app, the statement
        does nothing and its Result's ``message`` says so.
        """
        results = self.run_script(text, params, app_id=app_id, app_version=app_version)
        if not results:
            raise SqlError("no SQL statement to run", hint="Write a statement, e.g. SELECT 1.")
        return results[-1]

    def run_script(
        self,
        text: str,
        params: Mapping[str, Any] | None = None,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
    ) -> list[Result]:
        """Run every statement of ``text`` in order; stop at the first error.

        The whole script is parsed and its parameters bound before anything runs, so a
        syntax error or a missing parameter anywhere runs nothing. ``app_id`` /
        ``app_version``: as in :meth:`sql`.
        """
        app = AppWrite.from_args(app_id, app_version)
        statements = self._parse(text, params)
        done: list[Result] = []

        def run(parsed: ParsedStatement) -> Result:
            try:
                result = self._run(parsed)
            except TxSqlError as e:
                _mention_earlier_commits(e, done)
                raise
            done.append(result)
            return result

        return run_idempotent(self._context, app, statements, run, lambda p: p.source.text)

    def _parse(self, text: str, params: Mapping[str, Any] | None) -> list[ParsedStatement]:
        statements = []
        for parsed in parse_script(text):
            try:
                expression = bind_parameters(parsed.expression, params or {})
            except TxSqlError as e:
                e.locate(parsed.source.text, parsed.source.line, parsed.source.column)
                raise
            used = used_parameters(parsed.expression, params or {})
            statements.append(ParsedStatement(parsed.source, expression, used))
        return statements

    def _run_control(self, statement: Commit | Rollback, text: str, ctx: RunContext) -> Result:
        return _transaction_control(ctx, statement, text)

    def begin(self, isolation: str | IsolationLevel | None = None) -> TransactionHandle:
        """Open an explicit transaction for interleaving (independent of SQL BEGIN)."""
        return TransactionHandle(self, isolation)

    def transaction(self, isolation: str | IsolationLevel | None = None) -> TransactionHandle:
        """``with s.transaction() as tx:`` commits on a clean exit, rolls back on error."""
        return self.begin(isolation)

    def table(self, name_or_path: str) -> Table:
        """A handle on a table by name, ``delta.`/path``` or a plain path."""
        return Table(self._context, name_or_path)

    def _run(self, parsed: ParsedStatement, context: RunContext | None = None) -> Result:
        # PySpark logs each SQL error (JSON, whole JVM stack) and sqlglot warns on stderr;
        # the statement's typed error already says it all.
        drain_releases()  # caches dropped since the last statement, released on this thread
        try:
            with quiet_spark_errors(), quiet_sqlglot():
                return self._run_statement(parsed, context)
        finally:
            drain_releases()

    def _run_statement(self, parsed: ParsedStatement, context: RunContext | None) -> Result:
        started = time.perf_counter()
        source = parsed.source
        context = context or self._context
        explicit = context.explicit
        control = False
        context.begin_statement()
        try:
            check_executors_import_txsql(self.spark)
            roll_forward(self.warehouse)
            statement: Statement = build_statement(parsed.expression)
            control = isinstance(statement, (Begin, Commit, Rollback))
            if isinstance(statement, (Begin, Commit, Rollback)):
                result = _transaction_control(context, statement, source.text)
            else:
                if explicit is not None:
                    _refuse_if_aborted(explicit)
                result = registry.runner(type(statement))(context, statement, source.text)
        except TxSqlError as e:
            e.locate(source.text, source.line, source.column)
            if not control:
                _abort(explicit, e, source.text)
            raise
        except Exception as e:
            error = statement_error(
                e, source.text, source.line, source.column, parameters=dict(parsed.parameters)
            )
            if not control:
                _abort(explicit, error, source.text)
            raise error from None
        except BaseException as e:  # e.g. KeyboardInterrupt mid-statement: never commit half
            if not control:
                _abort(explicit, e, source.text)
            raise
        finally:
            if explicit is not None and not control:
                explicit.statements_run += 1
            context.end_statement()  # uncommitted autocommit writes: their files go
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        result.parameters = dict(parsed.parameters)  # rows fetched later name a bad one
        return result


def _refuse_if_aborted(explicit: ExplicitTransaction) -> None:
    """Inside an aborted transaction only ROLLBACK runs (PostgreSQL's rule)."""
    aborted = explicit.aborted
    if isinstance(aborted, TransactionAbortedError):
        # A fresh error each time: the session locates it at the refused statement.
        raise TransactionAbortedError(
            aborted.statement_number, aborted.cause, aborted.failed_statement
        )


def _abort(explicit: ExplicitTransaction | None, error: BaseException, text: str) -> None:
    """A statement inside BEGIN failed: the transaction is void until ROLLBACK.

    An exactly-once skip is not a failure, and a refused statement does not re-abort.
    """
    if explicit is None or explicit.aborted is not None:
        return
    if isinstance(error, (StatementSkipped, TransactionAbortedError)):
        return
    message = (error.message if isinstance(error, TxSqlError) else str(error)).strip()
    cause = message.splitlines()[0] if message else type(error).__name__
    explicit.aborted = TransactionAbortedError(explicit.statements_run + 1, cause, text)
    for txn in explicit.writers.values():
        txn.abort()  # drop its staged actions now: nothing can commit them


def validate_other_reads(explicit: ExplicitTransaction, warehouse: str) -> None:
    """Serializable across tables: validate each table read but not written at COMMIT.

    The written table is validated by its commit loop. Under Serializable (asked for with
    BEGIN ISOLATION LEVEL or the written table's ``delta.isolationLevel``) every other
    table read must be unchanged where it was read since it was pinned. WriteSerializable
    validates only the written table, as Delta does; other tables' reads are a snapshot.
    A read-only transaction is validated when it read two or more tables (one consistent
    snapshot of a single table is always serializable).
    """
    writers = explicit.writers
    serializable = explicit.isolation is IsolationLevel.SERIALIZABLE or any(
        w.isolation_level is IsolationLevel.SERIALIZABLE for w in writers.values()
    )
    others = [r for root, r in explicit.reads.items() if root not in writers]
    if not serializable or (not writers and len(others) < 2):
        return
    for reader in others:
        validate_reads(reader, _table_label(reader.table_root, warehouse))


def _table_label(root: str, warehouse: str) -> str:
    """``name`` for a warehouse table, ``delta.`path``` otherwise (as users wrote it)."""
    parent, _, name = root.rstrip("/").rpartition("/")
    if parent.removeprefix("file:") == warehouse.rstrip("/"):
        return name
    return f"delta.`{root}`"


_UNCHANGED = ("the table is unchanged", "nothing was committed")


def _mention_earlier_commits(error: TxSqlError, done: list[Result]) -> None:
    """Fix a hint claiming nothing changed when earlier statements of the script committed.

    The failed statement itself changed nothing, but the script's earlier autocommitted
    statements stand; saying "the table is unchanged" there would be false.
    """
    commits = [
        f"{r.operation} {r.table or ''} v{r.version}".replace("  ", " ")
        for r in done
        if r.df is None and r.version is not None and r.operation != "SKIPPED"
    ]
    if not commits or not any(phrase in error.hint for phrase in _UNCHANGED):
        return
    shown = ", ".join(commits[:5]) + (f" and {len(commits) - 5} more" if len(commits) > 5 else "")
    instead = (
        f"this statement changed nothing, but earlier statements of the script committed "
        f"({shown}) and stand"
    )
    for phrase in _UNCHANGED:
        error.hint = error.hint.replace(phrase, instead)
    error.args = (error._render(),)


def _transaction_control(
    ctx: RunContext, statement: Begin | Commit | Rollback, text: str
) -> Result:
    """BEGIN / COMMIT / ROLLBACK on a context (the session's, or a handle's)."""
    if isinstance(statement, Begin):
        if ctx.explicit is not None:
            raise TransactionError(
                "a transaction is already open", hint="COMMIT or ROLLBACK it before BEGIN."
            )
        level = IsolationLevel.parse(statement.isolation) if statement.isolation else None
        ctx.explicit = ExplicitTransaction(level)
        return Result(text, "BEGIN", message="transaction opened")
    explicit = ctx.explicit
    if explicit is None:
        raise TransactionError(
            f"{'COMMIT' if isinstance(statement, Commit) else 'ROLLBACK'} without BEGIN",
            hint="Start a transaction with BEGIN.",
        )
    if isinstance(statement, Commit):
        _refuse_if_aborted(explicit)  # the transaction stays open (aborted) until ROLLBACK
    ctx.explicit = None
    if isinstance(statement, Commit):
        try:
            validate_other_reads(explicit, ctx.catalog.warehouse)
        except TxSqlError:
            for writer in explicit.writers.values():
                writer.rollback()  # the COMMIT failed: nothing is written
            raise
    if isinstance(statement, Rollback) or explicit.txn is None:
        for writer in explicit.writers.values():
            writer.rollback()
        operation = "ROLLBACK" if isinstance(statement, Rollback) else "COMMIT"
        return Result(
            text, operation, read_version=explicit.read_version, message="nothing was written"
        )
    if len(explicit.writers) > 1:
        return commit_tables(ctx, explicit, text)
    txn = explicit.txn
    operation, parameters, metrics = commit_description(explicit.statements)
    committed = txn.commit(operation, parameters, metrics)
    if committed.skipped:  # a duplicate of our (appId, version) won the race
        return Result(
            text,
            "SKIPPED",
            read_version=committed.read_version,
            metrics={"num_affected_rows": 0},
            message="skipped: this app version was already committed",
        )
    return Result(
        text,
        "COMMIT",
        version=committed.version,
        read_version=committed.read_version,
        operation_metrics=dict(committed.commit_info.operation_metrics or {}),
        message=f"committed {operation} as version {committed.version}",
    )


class TransactionHandle:
    """An explicit transaction: ``tx.sql(...)`` stages, ``tx.commit()`` writes one version.

    Several handles may be open at once on one Session; that is how notebooks interleave
    two writers deterministically to demonstrate isolation and conflicts.
    """

    def __init__(self, session: Session, isolation: str | IsolationLevel | None) -> None:
        if isinstance(isolation, str):
            isolation = IsolationLevel.parse(isolation)
        self._session = session
        base = session._context
        self._context = RunContext(
            base.spark, base.catalog, base.max_commit_attempts, ExplicitTransaction(isolation)
        )

    @property
    def is_open(self) -> bool:
        return self._context.explicit is not None

    @property
    def read_version(self) -> int | None:
        explicit = self._context.explicit
        return explicit.read_version if explicit else None

    def sql(self, text: str, params: Mapping[str, Any] | None = None) -> Result:
        """Run statements inside this transaction; returns the last result."""
        if not self.is_open:
            raise TransactionError("this transaction is closed", hint="Start a new one.")
        results = [self._session._run(p, self._context) for p in self._session._parse(text, params)]
        if not results:
            raise SqlError("no SQL statement to run", hint="Write a statement.")
        return results[-1]

    def commit(self) -> Result:
        return self._session._run_control(Commit(), "COMMIT", self._context)

    def rollback(self) -> Result:
        return self._session._run_control(Rollback(), "ROLLBACK", self._context)

    def staged_summary(self) -> str:
        explicit = self._context.explicit
        if explicit is None or explicit.txn is None:
            return "nothing staged"
        ops = ", ".join(s.operation for s in explicit.statements) or "reads only"
        tables = ", ".join(explicit.writers)
        return f"{len(explicit.statements)} statement(s) staged ({ops}) on {tables}"

    def __enter__(self) -> TransactionHandle:
        return self

    @property
    def aborted(self) -> bool:
        """A statement failed: only :meth:`rollback` is allowed (commit is refused)."""
        explicit = self._context.explicit
        return explicit is not None and explicit.aborted is not None

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        if not self.is_open:
            return
        if exc_type is not None:
            self.rollback()
            return
        explicit = self._context.explicit
        assert explicit is not None
        if explicit.aborted is not None:
            # The body caught a statement's error and went on: never commit the rest.
            self.rollback()
            _refuse_if_aborted(explicit)
        self.commit()
