"""Check one winning commit against our transaction, in Delta Spark's order.

Order (reference/delta-protocol.md §5.4): protocol -> metadata -> domain metadata -> app ids
-> files added that we should have read -> files deleted that we read -> delete/delete.
This is the file-level rule; partition, stats and row-level scoping refine step 5 later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from txsql.errors import (
    CommitConflictError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
)
from txsql.log.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from txsql.txn.isolation import IsolationLevel

A = TypeVar("A")


@dataclass(frozen=True)
class WinningCommit:
    """The actions of a commit that beat us to a version, grouped for the checks."""

    version: int
    actions: tuple[Action, ...]

    @property
    def commit_info(self) -> CommitInfo | None:
        return next((a for a in self.actions if isinstance(a, CommitInfo)), None)

    @property
    def operation(self) -> str | None:
        info = self.commit_info
        return info.operation if info else None

    @property
    def is_blind_append(self) -> bool:
        info = self.commit_info
        return bool(info and info.is_blind_append)

    def of_type(self, kind: type[A]) -> list[A]:
        return [a for a in self.actions if isinstance(a, kind)]


@dataclass
class ReadSet:
    """What our transaction read; every field widens what a winner can conflict with."""

    read_whole_table: bool = False
    files: set[str] = field(default_factory=set)
    app_ids: set[str] = field(default_factory=set)

    @property
    def is_empty(self) -> bool:
        return not (self.read_whole_table or self.files or self.app_ids)


def check_winning_commit(
    winner: WinningCommit,
    ours: Sequence[Action],
    read_set: ReadSet,
    isolation: IsolationLevel,
    our_blind_append: bool,
) -> None:
    """Raise the first :class:`CommitConflictError` that ``winner`` causes us, if any."""
    what = f"version {winner.version} ({winner.operation or 'unknown operation'})"

    def conflict(error: type[CommitConflictError], message: str, **details: Any) -> None:
        raise error(
            message,
            winning_version=winner.version,
            winning_operation=winner.operation,
            isolation_level=isolation.value,
            **details,
        )

    # A protocol upgrade by the winner alone is adopted (the caller re-validates that we can
    # still write it); two transactions both changing the protocol, e.g. two concurrent
    # CREATE TABLEs of version 0, conflict.
    if winner.of_type(Protocol) and any(isinstance(a, Protocol) for a in ours):
        conflict(
            ProtocolChangedError,
            f"the table protocol was changed concurrently by {what}",
            rule="protocol changed",
        )
    if winner.of_type(Metadata):
        conflict(
            MetadataChangedError,
            f"the table schema or properties were changed concurrently by {what}",
            rule="metadata changed",
        )
    ours_domains = {a.domain for a in ours if isinstance(a, DomainMetadata)}
    clash = ours_domains & {d.domain for d in winner.of_type(DomainMetadata)}
    if clash:
        conflict(
            ConcurrentTransactionError,
            f"domain metadata {sorted(clash)} was written concurrently by {what}",
            rule="same metadata domain",
        )
    apps = read_set.app_ids & {t.app_id for t in winner.of_type(SetTransaction)}
    if apps:
        conflict(
            ConcurrentTransactionError,
            f"app id {sorted(apps)} committed concurrently in {what}",
            rule="same application id",
            hint="Another run of this idempotent writer committed first; do not retry it.",
        )
    _check_added_files(winner, read_set, isolation, our_blind_append, what, conflict)
    removed = {r.path for r in winner.of_type(RemoveFile)}
    read_and_removed = removed & read_set.files
    if read_and_removed or (removed and read_set.read_whole_table):
        files = tuple(sorted(read_and_removed or removed))
        conflict(
            ConcurrentDeleteReadError,
            f"{what} removed file(s) this transaction read",
            rule="a file we read was deleted",
            files=files,
        )
    both_removed = removed & {a.path for a in ours if isinstance(a, RemoveFile)}
    if both_removed:
        conflict(
            ConcurrentDeleteDeleteError,
            f"{what} removed file(s) this transaction also removes",
            rule="both transactions deleted the same file",
            files=tuple(sorted(both_removed)),
        )


def _check_added_files(
    winner: WinningCommit,
    read_set: ReadSet,
    isolation: IsolationLevel,
    our_blind_append: bool,
    what: str,
    conflict: Callable[..., None],
) -> None:
    if isolation is IsolationLevel.SNAPSHOT_ISOLATION or our_blind_append:
        return
    adds: list[AddFile] = winner.of_type(AddFile)
    if isolation is IsolationLevel.WRITE_SERIALIZABLE and winner.is_blind_append:
        adds = []
    if adds and (read_set.read_whole_table or read_set.files):
        conflict(
            ConcurrentAppendError,
            f"{what} added data this transaction's read covers",
            rule="files were added that we should have read",
            files=tuple(sorted(a.path for a in adds)),
            hint="Re-run the statement, or narrow it with a partition predicate.",
        )
