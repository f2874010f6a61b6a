"""The committer seam: how the commit loops of a transaction land.

A committer takes prepared-to-be commit loops (one per written table) and makes their
commits land together, or not at all; the loops do everything else (checking winners,
rebasing, building each attempt). Two committers exist:

* :class:`LogCommitter`: one table, put-if-absent of ``_delta_log/<version>.json``;
* :class:`~txsql.txn.multitable.group_commit.GroupCommitter`: enrolled tables, one
  put-if-absent of the coordinator's next record for every table at once.

After a failure, ``loop.outcome_unknown`` says whether a commit may have landed unseen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from txsql.errors import CommitRetriesExceededError, VersionExistsError
from txsql.log.codec import encode_commit
from txsql.txn.commit.after_commit import after_commit
from txsql.txn.commit.loop import CommitLoop
from txsql.txn.commit.read_validation import ReadCheck
from txsql.txn.result import CommitResult


class Committer(Protocol):
    def commit(self, loops: Sequence[CommitLoop]) -> list[CommitResult]:
        """Land every loop's commit (all or none); one result per loop, in order."""
        ...


class LogCommitter:
    """A plain table's commit: put-if-absent of ``<version>.json``, absorbing winners.

    ``reads`` (Serializable validation of other tables) run once, before the commit: a
    plain commit orders nothing with other tables (see
    :mod:`txsql.txn.commit.read_validation`).
    """

    def __init__(self, reads: Sequence[ReadCheck] = ()) -> None:
        self.reads = reads

    def commit(self, loops: Sequence[CommitLoop]) -> list[CommitResult]:
        (loop,) = loops
        for check in self.reads:
            check.run()
        return [self._commit(loop)]

    def _commit(self, loop: CommitLoop) -> CommitResult:
        skipped = loop.prepare()
        if skipped is not None:
            return skipped
        log = loop.log
        for attempt in range(1, loop.max_attempts + 1):
            try:
                # Lists the log first: never write into a gap or on top of a lost commit.
                log.check_next_version(loop.version)
                written = loop.attempt()
                loop.put_started()
                log.store.write_if_absent(loop.version, encode_commit(written))
            except VersionExistsError:
                pass
            else:
                after_commit(log, loop.version)
                return loop.landed(loop.version, attempt, written)
            latest = log.latest_version()
            if latest is None or latest < loop.version:
                loop.put_lost()  # nothing at that version: not ours either
                continue  # the file vanished (log cleanup?): simply try the version again
            done = loop.catch_up(latest, attempt)
            if done is not None:
                return done
        raise CommitRetriesExceededError(
            f"gave up committing {loop.operation} after {loop.max_attempts} attempts"
        )
