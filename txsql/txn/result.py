"""The outcome of a commit."""

from __future__ import annotations

from dataclasses import dataclass

from txsql.log.actions import Action, CommitInfo


@dataclass(frozen=True)
class CommitResult:
    """What a commit did.

    Attributes:
        version: The version written; for a skipped commit, the newest version checked
            (the one already holding the app id's version).
        read_version: The snapshot version the transaction read (None for a new table).
        attempts: Put-if-absent attempts made.
        commit_info: The commitInfo written (or that would have been, when skipped).
        actions: Everything written, commitInfo first (empty when skipped).
        skipped: True when an exactly-once commit found its (appId, version) already
            committed and wrote nothing.
        isolation_level: The level the commit was checked under.
        rebased_files: Files whose deletion vectors were merged with a winner's.
        winners: Versions committed concurrently that we were checked against.
    """

    version: int
    read_version: int | None
    attempts: int
    commit_info: CommitInfo
    actions: tuple[Action, ...]
    skipped: bool = False
    isolation_level: str | None = None
    rebased_files: tuple[str, ...] = ()
    winners: tuple[int, ...] = ()
