"""Session: the one path the magic, the Python API and the tests all use to run SQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from txsql.engine.executors import check_executors_import_txsql, hadoop_storage_conf
from txsql.engine.releases import drain_releases
from txsql.engine.spark import local_session, prepare_session
from txsql.engine.spark_errors import quiet_spark_errors, statement_error
from txsql.errors import SqlError, TransactionError, TxSqlError
from txsql.maintenance import DEFAULT_IDLE_SECONDS, Maintenance
from txsql.maintenance import TAG as MAINTENANCE_TAG
from txsql.planner import registry
from txsql.planner.catalog import Catalog
from txsql.planner.context import ExplicitTransaction, RunContext
from txsql.planner.dml.hooks import DML_HOOKS
from txsql.planner.idempotent import AppWrite, run_idempotent
from txsql.planner.operations.maintenance import Step, skip_reason
from txsql.planner.prepared import prepare_transaction, run_commit_prepared, run_rollback_prepared
from txsql.planner.sql.build import build_statement
from txsql.planner.sql.params import bind_parameters, used_parameters
from txsql.planner.sql.refs import TableRef
from txsql.planner.sql.script import ParsedStatement, parse_script
from txsql.planner.sql.statements import Begin, Commit, Rollback, Statement
from txsql.planner.sql.syntax import quiet_sqlglot
from txsql.planner.sql.transactions import CommitPrepared, PrepareTransaction, RollbackPrepared
from txsql.planner.transaction_control import (
    abort,
    mention_earlier_commits,
    refuse_if_aborted,
    roll_forward,
    transaction_control,
)
from txsql.result import Result
from txsql.storage.factory import configure_storage
from txsql.storage.paths import parse_location
from txsql.table import Table
from txsql.txn.isolation import IsolationLevel

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
        maintenance: bool = False,
        maintenance_idle_seconds: float = DEFAULT_IDLE_SECONDS,
    ) -> None:
        if spark is None:
            spark = SparkSession.getActiveSession() or local_session()
        self.spark = prepare_session(spark)
        configure_storage(storage_options, hadoop_storage_conf(self.spark), spark_scheme)
        self.warehouse = parse_location(warehouse or DEFAULT_WAREHOUSE).root
        self.catalog = Catalog(self.warehouse)
        self._context = RunContext(self.spark, self.catalog, DML_HOOKS, max_commit_attempts)
        self._written: dict[TableRef, None] = {}  # tables this session wrote, in order
        self.maintenance = Maintenance(
            self.spark,
            self._maintenance_step,
            lambda: list(self._written),
            lambda ref: skip_reason(RunContext(self.spark, self.catalog, DML_HOOKS), ref),
            lambda: self._context.explicit is None,
            maintenance_idle_seconds,
        )
        if maintenance:
            self.maintenance.start()

    def close(self) -> None:
        """Stop and join the idle-maintenance worker (if running)."""
        self.maintenance.stop()

    def _maintenance_step(self, step: Step, ref: TableRef) -> object:
        # Runs on the maintenance worker, only while no statement runs: its own context,
        # its Spark jobs tagged so busy() can interrupt them.
        ctx = RunContext(self.spark, self.catalog, DML_HOOKS, 2)
        ctx.commit_gate = self.maintenance.commit_gate
        self.spark.addTag(MAINTENANCE_TAG)
        ctx.begin_statement()
        try:
            with quiet_spark_errors(), quiet_sqlglot():
                return step.run(ctx, ref)
        finally:
            ctx.end_statement()  # an abandoned step's files go
            self.spark.removeTag(MAINTENANCE_TAG)

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
                mention_earlier_commits(e, done)
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
        return transaction_control(ctx, statement, text)

    def commit_prepared(self, transaction_id: str) -> Result:
        """``COMMIT PREPARED 'id'``: commit a prepared transaction (from any process);
        a second call says it was already committed, with each table's version."""
        statement = CommitPrepared(transaction_id)
        return self._run_direct(lambda: run_commit_prepared(self._context, statement, ""))

    def rollback_prepared(self, transaction_id: str) -> Result:
        """``ROLLBACK PREPARED 'id'``: drop a prepared transaction; nothing becomes visible."""
        statement = RollbackPrepared(transaction_id)
        return self._run_direct(lambda: run_rollback_prepared(self._context, statement, ""))

    def _run_direct(self, run: Callable[[], Result]) -> Result:
        roll_forward(self.warehouse)
        return run()

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
        self.maintenance.busy()  # stops idle maintenance (waits <= 100 ms)
        drain_releases()  # caches dropped since the last statement, released on this thread
        try:
            with quiet_spark_errors(), quiet_sqlglot():
                return self._run_statement(parsed, context)
        finally:
            drain_releases()
            self.maintenance.done()

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
            control = isinstance(statement, (Begin, Commit, Rollback, PrepareTransaction))
            if isinstance(statement, PrepareTransaction):
                result = prepare_transaction(context, statement, source.text)
            elif isinstance(statement, (Begin, Commit, Rollback)):
                result = transaction_control(context, statement, source.text)
            else:
                if explicit is not None:
                    refuse_if_aborted(explicit)
                result = registry.runner(type(statement))(context, statement, source.text)
                target = getattr(statement, "target", None)
                if isinstance(target, TableRef) and result.version is not None:
                    self._written[target] = None  # a table idle maintenance looks after
        except TxSqlError as e:
            e.locate(source.text, source.line, source.column)
            if not control:
                abort(explicit, e, source.text)
            raise
        except Exception as e:
            error = statement_error(
                e, source.text, source.line, source.column, parameters=dict(parsed.parameters)
            )
            if not control:
                abort(explicit, error, source.text)
            raise error from None
        except BaseException as e:  # e.g. KeyboardInterrupt mid-statement: never commit half
            if not control:
                abort(explicit, e, source.text)
            raise
        finally:
            if explicit is not None and not control:
                explicit.statements_run += 1
            context.end_statement()  # uncommitted autocommit writes: their files go
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        result.parameters = dict(parsed.parameters)  # rows fetched later name a bad one
        return result


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
            base.spark,
            base.catalog,
            base.hooks,
            base.max_commit_attempts,
            ExplicitTransaction(isolation),
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

    def prepare(self, transaction_id: str) -> Result:
        """``PREPARE TRANSACTION 'id'``: check and record this transaction durably under
        ``transaction_id``; nothing is visible until ``s.commit_prepared(id)`` (which any
        process may run). The handle is closed afterwards."""
        if not self.is_open:
            raise TransactionError("this transaction is closed", hint="Start a new one.")
        text = f"PREPARE TRANSACTION '{transaction_id}'"
        return prepare_transaction(self._context, PrepareTransaction(transaction_id), text)

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
            refuse_if_aborted(explicit)
        self.commit()
