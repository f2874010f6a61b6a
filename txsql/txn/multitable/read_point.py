"""One read point across enrolled tables: reads that never see half a group.

A statement (or a BEGIN ... COMMIT transaction) that reads several enrolled tables reads
them all as of one coordinator position ``p``, taken at its first read of a table of that
coordinator: every group ratified below ``p`` is visible in every table, no group ratified
at ``p`` or later is visible in any. Taking ``p`` rolls the coordinator forward
(:func:`~txsql.txn.multitable.publish.roll_forward`), so every record below it is published.

A table is then read at its newest version, unless a record at or after ``p`` names it:
groups publish after they ratify, in position order, so that record's version (and every
later one) belongs to a group the read point must not see, and the table is read at the
version before it. The records at or after ``p`` never change once written, so each is
read once per read point. Every table is looked at after the point is taken (the first
one again), so each sees every record below the point, published by taking it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from txsql.errors import TransactionError
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.txn.multitable.coordinator import Coordinator, GroupRecord, coordinator_for
from txsql.txn.multitable.publish import roll_forward


@dataclass
class ReadPoint:
    """A position of one coordinator, and the records read since it was taken."""

    coordinator: Coordinator
    position: int  # records below it are visible; at or above it, not
    _after: list[GroupRecord] = field(default_factory=list)

    @staticmethod
    def take(coordinator: Coordinator) -> ReadPoint:
        return ReadPoint(coordinator, roll_forward(coordinator))

    def snapshot(self, log: DeltaLog, latest: Snapshot) -> Snapshot:
        """``log``'s table as of this read point (``latest`` is its newest snapshot)."""
        root = log.table_root.rstrip("/")
        newest = self.coordinator.latest_position()
        for position in range(self.position + len(self._after), newest + 1):
            try:
                self._after.append(self.coordinator.read(position))
            except FileNotFoundError:
                raise TransactionError(
                    f"coordinator record {position} of this transaction's read point was "
                    "compacted: the transaction stayed open longer than the retention",
                    hint="Run the transaction again, or raise "
                    "txsql.multiTableTransactions.coordinatorRetention on its tables.",
                ) from None
        hidden = [
            p.version
            for record in self._after
            for p in record.participants
            if p.table_root.rstrip("/") == root
        ]
        first_hidden = min(hidden, default=None)
        if first_hidden is None or first_hidden > latest.version:
            return latest
        return log.snapshot(first_hidden - 1)


ReadPoints = dict[str, ReadPoint]
"""The read points of one statement or transaction, by coordinator root."""


def snapshot_at_read_point(points: ReadPoints, log: DeltaLog) -> Snapshot:
    """The snapshot a read of ``log``'s table sees: for an enrolled table, as of the read
    point of its coordinator in ``points`` (taken now if there is none yet); otherwise
    its newest version."""
    latest = log.snapshot()
    coordinator = coordinator_for(log.table_root, latest.configuration)
    if coordinator is None:
        return latest
    point = points.get(coordinator.root)
    if point is None:
        point = points[coordinator.root] = ReadPoint.take(coordinator)
        # ``latest`` was read before the point: a group ratified below it may not have
        # been published then. Taking the point published every record below it, so the
        # table is read again (one listing; the cached snapshot replays only new commits).
        latest = log.snapshot()
    return point.snapshot(log, latest)
