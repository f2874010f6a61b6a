"""Exactly-once writes: an (app id, app version) pair carried by a call of the API.

Delta's ``txn`` action records, per table, the last version an application committed. A
write that carries ``(app_id, app_version)`` first reads that record: when it already holds
``app_version`` or a newer one, the write was done before (a re-run cell, a replayed
stream batch) and the statement does no work at all; otherwise the commit records the new
version in the same atomic commit as the data, so "data written" and "batch done" can
never disagree. A concurrent writer committing the same pair first is caught by the
commit loop (our commit is then skipped too).

Where each check lives: the commit-time checks are in the one commit path
(:meth:`txsql.txn.commit.loop.CommitLoop.prepare` skips a pair already in the read snapshot,
:meth:`~txsql.txn.commit.loop.CommitLoop.catch_up` one a winner committed), for
autocommit, COMMIT and group participants alike. :meth:`AppWrite.bind` stays here, at the
statement's first touch of the table: a pre-commit hook would run too late to spare the
statement's Spark jobs and file writes, which is the point of skipping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from txsql.errors import SqlError, TransactionError, TxSqlError
from txsql.result import Result
from txsql.txn.readset import norm_path

if TYPE_CHECKING:
    from txsql.txn.result import CommitResult
    from txsql.txn.transaction import Transaction

T = TypeVar("T")


class StatementSkipped(TxSqlError):
    """Raised to stop a statement whose (app id, version) is already committed.

    It is a control-flow signal, not a failure: the session turns it into a :class:`Result`
    whose ``message`` says why nothing happened. It derives from :class:`TxSqlError` so the
    session's error handling passes it through untouched instead of wrapping it.
    """

    def __init__(self, app_id: str, app_version: int, recorded: int, table_version: int) -> None:
        self.app_id = app_id
        self.app_version = app_version
        self.recorded = recorded
        self.table_version = table_version
        newer = "" if recorded == app_version else f"; the app is at version {recorded}"
        super().__init__(
            f"skipped: app {app_id!r} version {app_version} already committed"
            f" (table at version {table_version}{newer})",
            hint="",
        )

    def result(self, statement: str, table: str | None = None) -> Result:
        """What the skipped statement reports: no version written, zero rows affected."""
        return Result(
            statement,
            "SKIPPED",
            read_version=self.table_version,
            table=table,
            metrics={"num_affected_rows": 0},
            message=self.message,
        )


@dataclass
class AppWrite:
    """The (app id, version) a call writes with, and the tables it committed it to.

    Attributes:
        app_id: The application's id (a job, a stream, a notebook cell...).
        version: Monotonic progress marker of that application (batch id, run number).
        committed_tables: Table roots this call already committed the pair to.
    """

    app_id: str
    version: int
    committed_tables: set[str] = field(default_factory=set)

    @classmethod
    def from_args(cls, app_id: str | None, app_version: int | None) -> AppWrite | None:
        """Validate the keyword pair of ``Session.sql`` / ``Table.append`` (both or neither).

        Raises:
            SqlError: Only one of them given, an empty id, or a version that is not a
                non-negative integer.
        """
        if app_id is None and app_version is None:
            return None
        if app_id is None or app_version is None:
            raise SqlError(
                "app_id and app_version go together",
                hint="Pass both (e.g. app_id='ingest', app_version=batch_id) or neither.",
            )
        if not isinstance(app_id, str) or not app_id:
            raise SqlError("app_id must be a non-empty string", hint="e.g. app_id='ingest'")
        # bool is an int subclass; True as a version is certainly a mistake.
        if isinstance(app_version, bool) or not isinstance(app_version, int) or app_version < 0:
            raise SqlError(
                f"app_version must be a non-negative integer, got {app_version!r}",
                hint="Use a counter that grows with each batch or run.",
            )
        return cls(app_id, app_version)

    def bind(self, txn: Transaction) -> None:
        """Check ``txn``'s table for our pair and stage it; no work is done before this.

        Raises:
            StatementSkipped: The table already records this version or a newer one.
            TransactionError: The pair cannot make this statement exactly-once (a second
                autocommit write of the call to the same table, or a transaction that
                already records another version of the app).
        """
        root = norm_path(txn.table_root)
        if root in self.committed_tables:
            raise TransactionError(
                f"app {self.app_id!r} version {self.version} was already committed to "
                f"{txn.table_root} by an earlier statement of this call; a second commit "
                "with the same pair would be skipped on a re-run",
                hint="Wrap the statements in BEGIN ... COMMIT so they commit as one version "
                "with one app version, or give each its own app_version.",
            )
        staged = txn.staged_state.app_versions().get(self.app_id)
        if staged is not None:
            if staged != self.version:
                raise TransactionError(
                    f"this transaction already records app {self.app_id!r} version {staged}",
                    hint="Use one app_version per transaction.",
                )
            return
        recorded = txn.app_version(self.app_id)  # recorded as read: duplicates conflict
        if recorded is not None and recorded >= self.version:
            read_version = txn.read_version
            raise StatementSkipped(
                self.app_id, self.version, recorded, -1 if read_version is None else read_version
            )
        txn.set_app_version(self.app_id, self.version)

    def committed(self, txn: Transaction, result: CommitResult) -> None:
        """Note an autocommit that landed; a skipped one (a racing duplicate won) raises.

        Raises:
            StatementSkipped: A concurrent writer committed this pair (or a newer one) first.
        """
        if result.skipped:
            recorded = txn.log.snapshot().app_versions.get(self.app_id, self.version)
            raise StatementSkipped(self.app_id, self.version, recorded, result.version)
        self.committed_tables.add(norm_path(txn.table_root))


class CarriesApp(Protocol):
    """A run context: statements see the call's (app id, version) in ``app``."""

    app: AppWrite | None


def run_idempotent(
    ctx: CarriesApp,
    app: AppWrite | None,
    statements: Sequence[T],
    run: Callable[[T], Result],
    text: Callable[[T], str],
) -> list[Result]:
    """Run ``statements`` in order with ``app`` bound to ``ctx``; skipped ones report it.

    Args:
        ctx: The context every statement runs in; ``app`` is attached for the call only.
        app: The call's (app id, version), or None for ordinary statements.
        statements: Parsed statements.
        run: Runs one statement.
        text: The SQL text of one statement (for the skipped statement's Result).
    """
    if app is None:
        return [run(statement) for statement in statements]
    previous, ctx.app = ctx.app, app
    try:
        results = []
        for statement in statements:
            try:
                results.append(run(statement))
            except StatementSkipped as skipped:
                results.append(skipped.result(text(statement)))
        return results
    finally:
        ctx.app = previous
