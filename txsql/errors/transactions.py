"""Errors of transactions: misuse, aborted and prepared transactions, and commit conflicts.

:class:`TableCreatedConcurrentlyError` is both a conflict and a table that already exists,
so this module imports :class:`TableExistsError` from the table errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from txsql.errors.base import TxSqlError
from txsql.errors.tables import TableExistsError

# --- transactions ---------------------------------------------------------------------


class TransactionError(TxSqlError):
    """Misuse of a transaction (committing twice, writing a second table...)."""


class TransactionAbortedError(TransactionError):
    """A statement inside BEGIN failed, so the whole transaction is void.

    Like PostgreSQL's "current transaction is aborted": every further statement and
    COMMIT is refused until ROLLBACK, so a transaction never commits half of its work.

    Attributes:
        statement_number: 1-based position (after BEGIN) of the statement that failed.
        cause: the first line of that statement's error.
        failed_statement: that statement's SQL text.
    """

    default_hint = "ROLLBACK to continue; then run the transaction again."

    def __init__(self, statement_number: int, cause: str, failed_statement: str = "") -> None:
        self.statement_number = statement_number
        self.cause = cause
        self.failed_statement = failed_statement
        shown = " ".join(failed_statement.split())[:60]
        where = f" (`{shown}`)" if shown else ""
        super().__init__(
            f"the transaction was aborted by the error in statement {statement_number}{where}:"
            f" {cause}; nothing will be written"
        )


class TableNotEnrolledError(TransactionError):
    """A transaction writes several tables and one of them is not enrolled in multi-table
    transactions (``txsql.multiTableTransactions``); refused before anything is staged.

    Attributes:
        tables: the names of the tables that are not enrolled.
    """

    def __init__(self, tables: tuple[str, ...]) -> None:
        self.tables = tables
        alters = "; ".join(
            f"ALTER TABLE {t} SET TBLPROPERTIES ('txsql.multiTableTransactions' = 'true')"
            for t in tables
        )
        shown = ", ".join(tables)
        super().__init__(
            f"a transaction writing several tables needs each one enrolled in multi-table "
            f"transactions; {shown} {'is' if len(tables) == 1 else 'are'} not",
            hint=f"ROLLBACK, then run {alters} (other Delta writers can no longer write an "
            f"enrolled table), and run the transaction again.",
        )


class PreparedTransactionExistsError(TransactionError):
    """PREPARE TRANSACTION named an id the warehouse's coordinator already holds (prepared,
    committed or rolled back): ids are never reused, so COMMIT PREPARED stays idempotent."""

    default_hint = (
        "Choose another id (e.g. your sink's checkpoint id); SHOW TRANSACTIONS lists the "
        "ids in use. The transaction was not prepared; ROLLBACK or PREPARE it again."
    )


class PreparedTransactionNotFoundError(TransactionError):
    """COMMIT PREPARED / ROLLBACK PREPARED named an id no PREPARE TRANSACTION wrote."""

    default_hint = "SHOW TRANSACTIONS lists the prepared transactions and their ids."


class PreparedTransactionCommittedError(TransactionError):
    """ROLLBACK PREPARED of a transaction that was already committed: it stays committed.

    Attributes:
        versions: table -> the version its part of the transaction became.
    """

    default_hint = (
        "Nothing was changed. To undo its effect, write the inverse change (or RESTORE the "
        "tables) in a new transaction."
    )

    def __init__(self, message: str, versions: dict[str, int]) -> None:
        self.versions = versions
        super().__init__(message)


class PreparedTransactionRolledBackError(TransactionError):
    """COMMIT PREPARED of a transaction that was rolled back (by ROLLBACK PREPARED, or by a
    COMMIT PREPARED that found a conflict): nothing of it was ever visible."""

    default_hint = "Run the transaction again (and PREPARE it under a new id)."


RowDetails = tuple[dict[str, Any], ...]


class CommitConflictError(TxSqlError):
    """A concurrent commit invalidated this transaction.

    Attributes:
        winning_version: the version the other writer committed.
        winning_operation: that commit's ``operation`` (e.g. ``DELETE``).
        winning_transaction: the id of the multi-table transaction that commit was part
            of (as SHOW TRANSACTIONS lists it), or None.
        isolation_level: the level this transaction was checked under.
        rule: the conflict rule that fired, in words.
        partitions: overlapping partitions, e.g. ``("p=1",)``.
        files: overlapping files (paths as in the log).
        rows: for row-level conflicts, path -> sorted physical row indexes both touched.
        row_details: the colliding rows one by one (the first few), as
            ``{"file": path, "row": index, <key column>: value, ...}``; values are read at
            the winner's version when cheap, else only file and position are given. They
            are read on first access (a conflict never waits for Spark to fetch them).
    """

    default_hint = "Re-run the statement; it will read the newest version."

    def __init__(
        self,
        message: str,
        *,
        winning_version: int,
        winning_operation: str | None = None,
        isolation_level: str | None = None,
        rule: str = "",
        partitions: tuple[str, ...] = (),
        files: tuple[str, ...] = (),
        hint: str | None = None,
        rows: dict[str, tuple[int, ...]] | None = None,
        row_details: RowDetails | Callable[[], RowDetails] = (),
    ) -> None:
        self._row_details = row_details
        self.winning_version = winning_version
        self.winning_operation = winning_operation
        self.winning_transaction: str | None = None
        self.isolation_level = isolation_level
        self.rule = rule
        self.partitions = partitions
        self.files = files
        self.rows = rows
        super().__init__(message, hint=hint)

    @property
    def row_details(self) -> RowDetails:
        if callable(self._row_details):
            loader, self._row_details = self._row_details, ()
            self._row_details = loader()
        return self._row_details


class ProtocolChangedError(CommitConflictError):
    """The winner changed the table protocol [Delta: ProtocolChangedException]."""


class MetadataChangedError(CommitConflictError):
    """The winner changed schema or properties [Delta: MetadataChangedException]."""


class ConcurrentTransactionError(CommitConflictError):
    """The winner wrote the same app id or domain [Delta: ConcurrentTransactionException]."""


class ConcurrentAppendError(CommitConflictError):
    """The winner added data this transaction read [Delta: ConcurrentAppendException]."""


class ConcurrentDeleteReadError(CommitConflictError):
    """The winner removed a file this transaction read [Delta: ConcurrentDeleteReadException]."""


class ConcurrentDeleteDeleteError(CommitConflictError):
    """The winner removed a file this transaction removes [ConcurrentDeleteDeleteException]."""


class TableCreatedConcurrentlyError(ProtocolChangedError, TableExistsError):
    """Another CREATE of the same table committed version 0 first.

    Both a TableExistsError (what the user did: create an existing table) and a
    ProtocolChangedError (the conflict rule that caught it, with the winner's details).
    """

    default_hint = "Use the table the other CREATE made, or CREATE TABLE IF NOT EXISTS."


class PreparedConflictError(CommitConflictError):
    """COMMIT PREPARED found a commit since PREPARE that conflicts with the prepared
    transaction; it was rolled back (its files deleted, nothing visible).

    A prepared transaction's reads are re-checked at the file level as if it had read its
    whole tables (the row-level read set does not outlive the preparing process), so only
    groups of blind appends are certain to commit.
    """

    default_hint = (
        "The prepared transaction was rolled back; run it again. Two-phase sinks should "
        "prepare blind appends (INSERT only), which always commit under WriteSerializable."
    )


class CommitRetriesExceededError(TxSqlError):
    """The commit lost more races than the configured retry limit allows."""

    default_hint = "Raise the retry limit (Session(max_commit_attempts=...)) or retry later."


class AddedFileMissingError(TransactionError):
    """A file the commit would add is gone (checked right before the put-if-absent).

    Something deleted it after the statement wrote it: a VACUUM run with a staging window
    overridden for tests, or a process outside txsql. Nothing was committed.
    """

    default_hint = (
        "Re-run the statement: it writes its files again; the table is unchanged. If it "
        "keeps happening, look for whoever deletes files under the table's directory "
        "(VACUUM keeps files no commit names for 24 hours; TXSQL_STAGING_WINDOW_MS shortens "
        "that, for tests only)."
    )


class MaintenanceStoppedError(TransactionError):
    """Idle maintenance gave up a step because a user statement started (never raised
    to a user: the maintenance worker catches it and commits nothing)."""

    default_hint = "Nothing to do: maintenance runs again when the session is idle."
