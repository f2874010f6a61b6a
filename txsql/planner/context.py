"""What every statement runner needs: Spark, the catalog, and the transaction to use.

Statements run in autocommit mode (one transaction per statement) unless the session has
an explicit transaction open (BEGIN ... COMMIT): then every statement stages its actions
into that one transaction, reads its own staged writes, and nothing reaches the log until
COMMIT.

While a statement runs, the transaction it writes through records the files its writers
create (:mod:`txsql.storage.written`). Callers bracket each statement with
:meth:`RunContext.begin_statement` and :meth:`RunContext.end_statement`; the latter rolls
back the autocommit transactions the statement opened and never committed, which deletes
those files.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from txsql.errors import (
    SchemaError,
    TableNotEnrolledError,
    TransactionError,
    UnsupportedFeatureError,
)
from txsql.log import properties
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.catalog import Catalog
from txsql.planner.sql.refs import TableRef
from txsql.storage.written import WrittenFiles, activate, deactivate
from txsql.txn.commit.read_validation import ReadCheck
from txsql.txn.guards import AppendOnlyTableError, check_append_only, check_row_ids_kept
from txsql.txn.hooks import RowPredicateChecker
from txsql.txn.isolation import IsolationLevel
from txsql.txn.multitable.read_point import ReadPoints, snapshot_at_read_point
from txsql.txn.result import CommitResult
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from txsql.planner.idempotent import AppWrite


@dataclass
class StagedStatement:
    """One statement's contribution to an explicit transaction's commitInfo."""

    operation: str
    parameters: dict[str, Any]
    metrics: dict[str, int]
    table_root: str = ""  # the table the statement wrote


@dataclass
class ExplicitTransaction:
    """A BEGIN ... COMMIT transaction; bound to a table by its first write.

    Writing a second table makes it a multi-table transaction: every table it writes must
    be enrolled (``txsql.multiTableTransactions``), and COMMIT ratifies all at once.
    """

    isolation: IsolationLevel | None = None
    txn: Transaction | None = None  # the first table written
    # Every table written, by root (the first is also ``txn``).
    writers: dict[str, Transaction] = field(default_factory=dict)
    statements: list[StagedStatement] = field(default_factory=list)
    # Tables read before (or besides) the one written: each pinned at its first read, so
    # a transaction's reads are repeatable even before its first write binds it.
    reads: dict[str, Transaction] = field(default_factory=dict)
    # Statements run since BEGIN, and the error that voided the transaction (the session
    # refuses everything but ROLLBACK once it is set).
    statements_run: int = 0
    aborted: Exception | None = None
    # The staged state when the running statement began (change data feed bookkeeping).
    statement_start: Any = None
    # Every read of an enrolled table sees one coordinator position
    # (txsql.txn.multitable.read_point).
    read_points: ReadPoints = field(default_factory=dict)

    @property
    def read_version(self) -> int | None:
        return self.txn.read_version if self.txn else None


@dataclass
class StatementFrame:
    """A running statement: the autocommit transactions it opened, and the token that
    restores the ledger current before it."""

    autocommit: list[Transaction] = field(default_factory=list)
    token: contextvars.Token[WrittenFiles | None] | None = None
    read_points: ReadPoints = field(default_factory=dict)  # one read across tables
    # Serializable writes only: the other tables the statement read, each pinned.
    reads: dict[str, Transaction] = field(default_factory=dict)


@dataclass(frozen=True)
class DmlHooks:
    """What the context calls in the DML machinery (``planner/dml``), which sits above it:
    whoever builds a context passes :data:`txsql.planner.dml.hooks.DML_HOOKS`."""

    # Decides, with Spark, whether a winner's new rows satisfy a read predicate.
    row_checker: Callable[[SparkSession, Transaction], RowPredicateChecker]
    # What a statement of an explicit transaction starts from, for its change data feed.
    statement_start: Callable[[Transaction], Any]
    # Records that statement's changes once it is staged (ctx, txn, its statement_start).
    record_changes: Callable[[RunContext, Transaction, Any], None]


@dataclass
class RunContext:
    spark: SparkSession
    catalog: Catalog
    hooks: DmlHooks
    max_commit_attempts: int = 10_000
    explicit: ExplicitTransaction | None = None
    app: AppWrite | None = None  # exactly-once (app id, version) of the current call
    # Idle maintenance's context only: entered around the commit, it refuses (raising
    # MaintenanceStoppedError) once a statement started, and a starting statement waits
    # for a commit already inside it, so the two never overlap. An abandoned step's files
    # are deleted by end_statement; its commits carry txsqlMaintenance.
    commit_gate: Callable[[], AbstractContextManager[None]] | None = None
    # One frame per running statement (a hook may run a statement inside another).
    _frames: list[StatementFrame] = field(default_factory=list, repr=False)

    def transaction(self, log: DeltaLog) -> Transaction:
        """The transaction a statement on ``log``'s table runs in.

        With an app id bound to the call, its recorded version is checked first: a
        statement whose version is already committed stops here (``StatementSkipped``),
        before any Spark job or file write.
        """
        if self.explicit is None:
            txn = self._new_transaction(log, None)
            if self._frames:
                self._frames[-1].autocommit.append(txn)
            self._record_writes(txn)
            if self.app is not None:
                self.app.bind(txn)
            return txn
        explicit = self.explicit
        writer = explicit.writers.get(log.table_root)
        if writer is not None:
            txn = writer
            if self.app is not None:
                self.app.bind(txn)
        else:
            # The transaction that pinned this table at an earlier read becomes the writer.
            txn = explicit.reads.get(log.table_root) or self._new_transaction(
                log, explicit.isolation
            )
            if explicit.writers:
                self._require_enrolled([*explicit.writers.values(), txn])
            if self.app is not None:
                self.app.bind(txn)  # a skipped statement leaves the table unwritten
            explicit.writers[log.table_root] = txn
            if explicit.txn is None:
                explicit.txn = txn
        self._record_writes(txn)
        self.explicit.statement_start = self.hooks.statement_start(txn)
        return txn

    def _require_enrolled(self, writers: list[Transaction]) -> None:
        """A transaction writing several tables: refuse a table that is not enrolled (the
        statement fails before it stages anything; the transaction is then aborted)."""
        missing = tuple(self.label(t.table_root) for t in writers if not t.enrolled)
        if missing:
            raise TableNotEnrolledError(missing)

    def label(self, root: str) -> str:
        """How users name the table at ``root``: ``t``, ``schema.t`` or ``delta.`path```."""
        parent, _, name = root.rstrip("/").rpartition("/")
        warehouse = self.catalog.warehouse.rstrip("/")
        if parent.removeprefix("file:") == warehouse:
            return name
        grand, _, schema = parent.rpartition("/")
        if schema.endswith(".db") and grand.removeprefix("file:") == warehouse:
            return f"{schema[:-3]}.{name}"
        return f"delta.`{root}`"

    def _record_writes(self, txn: Transaction) -> None:
        """Files written from now on in this statement are ``txn``'s."""
        token = activate(txn.written)
        if self._frames and self._frames[-1].token is None:
            self._frames[-1].token = token

    def begin_statement(self) -> None:
        """A statement starts (pair with :meth:`end_statement`)."""
        self._frames.append(StatementFrame())

    def end_statement(self) -> None:
        """The statement is over: autocommit transactions it opened and did not commit
        are rolled back (deleting the files they wrote), and its ledger stops recording.

        An explicit transaction lives on: its files are deleted at ROLLBACK, when a
        statement aborts it, or after COMMIT if the commit does not name them.
        """
        if not self._frames:
            return
        frame = self._frames.pop()
        try:
            for txn in frame.autocommit:
                if txn.state == "open":
                    txn.rollback()
        finally:
            if frame.token is not None:
                deactivate(frame.token)

    def begin_alter(self, target: TableRef) -> tuple[Transaction, Snapshot]:
        """The transaction and current snapshot an ALTER TABLE of ``target`` changes."""
        if target.version is not None or target.timestamp is not None:
            raise SchemaError("cannot ALTER a time-travel reference", hint="Name the table itself.")
        txn = self.transaction(self.catalog.existing_log(target))
        snapshot = txn.current_snapshot()
        assert snapshot is not None  # existing_log refuses a table without a commit
        return txn, snapshot

    def commit(
        self,
        txn: Transaction,
        operation: str,
        parameters: dict[str, Any] | None = None,
        metrics: dict[str, int] | None = None,
    ) -> CommitResult | None:
        """Commit now (autocommit) or record the statement for the explicit COMMIT."""
        explicit = self.explicit is not None and any(
            txn is w for w in self.explicit.writers.values()
        )
        try:
            check_append_only(txn, operation)
            check_row_ids_kept(txn, operation)
        except (AppendOnlyTableError, UnsupportedFeatureError):
            if explicit:
                txn.rollback()  # its actions are staged already: the transaction is void
            raise
        if self.commit_gate is not None:
            parameters = {**(parameters or {}), "txsqlMaintenance": "true"}
            with self.commit_gate():
                return txn.commit(operation, parameters, metrics, reads=self._statement_reads(txn))
        if explicit:
            assert self.explicit is not None
            self.hooks.record_changes(self, txn, self.explicit.statement_start)
            self.explicit.statements.append(
                StagedStatement(
                    operation, dict(parameters or {}), dict(metrics or {}), txn.table_root
                )
            )
            return None
        committed = txn.commit(operation, parameters, metrics, reads=self._statement_reads(txn))
        if self.app is not None:
            self.app.committed(txn, committed)
        return committed

    def read_transaction(
        self, log: DeltaLog, writer: Transaction | None = None
    ) -> Transaction | None:
        """The transaction a read of ``log``'s table joins, or None.

        Inside BEGIN, the written table's reads join the writing transaction; any other
        table (or every table before the first write) gets one pinned at its first read.
        COMMIT validates the written table's reads; under Serializable the others' too.
        Outside BEGIN, a statement writing a Serializable table (``writer``) pins each
        other table it reads the same way, and its commit validates them.
        """
        explicit = self.explicit
        if explicit is None:
            if writer is None or not _writes_serializable(writer) or not self._frames:
                return None
            reads = self._frames[-1].reads
            if log.table_root not in reads:
                reads[log.table_root] = self._new_transaction(log, None)
            return reads[log.table_root]
        writer = explicit.writers.get(log.table_root)
        if writer is not None:
            return writer
        reader = explicit.reads.get(log.table_root)
        if reader is None:
            reader = explicit.reads[log.table_root] = self._new_transaction(log, explicit.isolation)
        return reader

    def _statement_reads(self, txn: Transaction) -> list[ReadCheck]:
        """The checks of the other tables an autocommit statement writing ``txn`` read
        (recorded only when it writes a Serializable table, see :meth:`read_transaction`)."""
        if not self._frames:
            return []
        reads = self._frames[-1].reads
        return [
            ReadCheck(reader, self.label(root))
            for root, reader in reads.items()
            if root != txn.table_root
        ]

    def snapshot(self, ref: TableRef) -> Snapshot:
        """The snapshot a read of ``ref`` sees: staged writes included inside BEGIN."""
        writers = self.explicit.writers if self.explicit else {}
        if writers and ref.version is None and ref.timestamp is None:
            log = self.catalog.existing_log(ref)
            writer = writers.get(log.table_root)
            if writer is not None:
                current = writer.current_snapshot()
                if current is None:
                    raise TransactionError(f"table {ref.display} has no committed version yet")
                return current
        return self.latest_snapshot(ref)

    def latest_snapshot(self, ref: TableRef) -> Snapshot:
        """``ref`` as a read outside a transaction sees it: time travel as asked, else the
        newest version, enrolled tables as of the statement's read point."""
        if ref.version is not None or ref.timestamp is not None:
            return self.catalog.snapshot(ref, self.spark)
        return snapshot_at_read_point(self._read_points(), self.catalog.existing_log(ref))

    def _read_points(self) -> ReadPoints:
        """The read points reads share: the transaction's, else the statement's."""
        if self.explicit is not None:
            return self.explicit.read_points
        return self._frames[-1].read_points if self._frames else {}

    def _new_transaction(self, log: DeltaLog, isolation: IsolationLevel | None) -> Transaction:
        txn = Transaction(log, isolation=isolation, max_attempts=self.max_commit_attempts)
        txn.row_predicate_checker = self.hooks.row_checker(self.spark, txn)
        txn.read_points = self._read_points()
        return txn


def _writes_serializable(writer: Transaction) -> bool:
    """Whether ``writer`` commits at Serializable, by its table's level or the one asked
    for (known before it stages anything, unlike ``Transaction.isolation_level``)."""
    snapshot = writer.snapshot()
    table = properties.isolation_level(snapshot.configuration if snapshot else {})
    serializable = IsolationLevel.SERIALIZABLE
    return IsolationLevel.parse(table) is serializable or writer.requested_isolation is serializable
