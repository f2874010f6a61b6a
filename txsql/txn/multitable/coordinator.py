"""The commit coordinator of multi-table transactions: a log of ratified groups.

The coordinator is a directory next to the catalog (``<warehouse>/_txsql_coordinator``) on
the warehouse's own store. Its records are numbered positions, ``<position>.json``
(20 digits), each written with one put-if-absent. A record names every participant of a
group: table root, table id, version, its commit and the participant's txnId. Writing it is
the commit point of the whole group (Delta RFC "group-ratify").

A participant's commit is either a staged commit file it names, or carried inline in the
record (the RFC's "inline" commits, which a catalog may hold instead of a staged file).
Small commits go inline: the record is durable anyway, so an inline commit saves a durable
write and a delete per participant (see ``group_commit.INLINE_MAX_BYTES``).

Publishing a participant (:mod:`txsql.txn.multitable.publish`) copies its commit to
``_delta_log/<version>.json`` with put-if-absent. It is idempotent: a commit already there
carrying the participant's txnId counts as published (another process rolled the same
record forward). A commit there with another txnId means some writer bypassed the
coordinator: reported as a damaged log.
A staged commit whose version is already published can never be ratified any more (a
group proposing that version would find its coordinator position taken and re-stage), so
cleanup may delete it, whether it was the published one or an orphan of a lost attempt.

Records are contiguous (each is put at the position after the newest), so the newest is
found by probing names, never by listing (:meth:`Coordinator.latest_position`); the hint
file ``latest_position.hint`` gives a fresh process a recent position to probe from.

Invariant the writers keep (see :func:`txsql.txn.multitable.publish.ratify_next`): before a
writer puts record ``p`` it has published every record below ``p``. So at any moment only
the newest record can still be unpublished, and rolling forward means publishing that one
record.

Old records are compacted (:mod:`txsql.txn.multitable.compaction`): the summary
``compacted.json`` names the lowest live position, and records are contiguous from there
to the newest. Decisions of prepared transactions are moved to ``kept/<position>.json``,
where :meth:`Coordinator.read` still finds them.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from txsql.errors import CorruptLogError, TxSqlError
from txsql.log.features import multi_table_enrolled
from txsql.storage.factory import file_io_for
from txsql.storage.filesystem import FileIO
from txsql.storage.paths import parse_location

logger = logging.getLogger(__name__)

COORDINATOR_DIR = "_txsql_coordinator"
STAGED_DIR = "_staged_commits"
STAGED_COMMIT_NAME = re.compile(r"^(\d{20})\.[0-9a-fA-F-]{36}\.json$")
# Optional: a table whose coordinator is not the default one next to its parent directory.
COORDINATOR_PROPERTY = "txsql.multiTableTransactions.coordinator"
# A recent position, rewritten every HINT_INTERVAL records: where a fresh process starts
# probing for the newest record (see Coordinator.latest_position).
HINT_NAME = "latest_position.hint"
HINT_INTERVAL = 32
SUMMARY_NAME = "compacted.json"
# The shortest retention compaction uses (one hour, far above clock skew between hosts):
# a position this process saw as the newest less than this ago cannot have been deleted,
# so probing from it needs no check that it still exists (see latest_position).
TRUSTED_MS = 3_600_000
KEPT_DIR = "kept"
_LINEAR_PROBES = 4


@dataclass(frozen=True)
class Participant:
    """One table's part of a ratified group."""

    table_root: str
    table_id: str
    version: int
    # Relative to _delta_log: _staged_commits/<version>.<uuid>.json; None when inline.
    staged_commit: str | None
    txn_id: str
    inline_commit: bytes | None = None  # the commit's bytes, when carried in the record

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "tableRoot": self.table_root,
            "tableId": self.table_id,
            "version": self.version,
            "txnId": self.txn_id,
        }
        if self.inline_commit is not None:
            body["inlineCommit"] = self.inline_commit.decode()
        else:
            body["stagedCommit"] = self.staged_commit
        return body

    @classmethod
    def from_json(cls, p: Mapping[str, object]) -> Participant:
        inline = p.get("inlineCommit")
        return cls(
            str(p["tableRoot"]),
            str(p["tableId"]),
            int(str(p["version"])),
            None if inline is not None else str(p["stagedCommit"]),
            str(p["txnId"]),
            None if inline is None else str(inline).encode(),
        )


@dataclass(frozen=True)
class GroupRecord:
    """A coordinator record: the group ratified at ``position``."""

    position: int
    transaction_id: str
    timestamp: int
    participants: tuple[Participant, ...]
    # The decision on a prepared transaction (txsql.txn.prepared.prepare): "commit" names its
    # participants, "rollback" none. Ordinary groups are neither.
    prepared_outcome: str | None = None

    def encode(self) -> bytes:
        body: dict[str, object] = {
            "position": self.position,
            "transactionId": self.transaction_id,
            "timestamp": self.timestamp,
            "participants": [p.to_json() for p in self.participants],
        }
        if self.prepared_outcome is not None:
            body["preparedOutcome"] = self.prepared_outcome
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> GroupRecord:
        try:
            body = json.loads(data)
            parts = tuple(Participant.from_json(p) for p in body["participants"])
            outcome = body.get("preparedOutcome")
            return cls(
                int(body["position"]),
                str(body["transactionId"]),
                int(body["timestamp"]),
                parts,
                None if outcome is None else str(outcome),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptLogError(f"coordinator record {where} cannot be read ({exc})") from exc


@dataclass(frozen=True)
class CompactionSummary:
    """What compaction removed: every position below ``lowest_live`` (but those in
    ``kept_decisions``, moved to ``kept/``); ``[deleting_from, lowest_live)`` may still
    hold records a killed compaction did not delete yet."""

    lowest_live: int = 0
    deleting_from: int = 0
    compacted: int = 0  # how many groups were compacted, ever
    newest_compacted_ms: int = 0  # the newest compacted group's timestamp
    kept_decisions: tuple[int, ...] = ()

    def encode(self) -> bytes:
        body = {
            "lowestLive": self.lowest_live,
            "deletingFrom": self.deleting_from,
            "compacted": self.compacted,
            "newestCompactedMs": self.newest_compacted_ms,
            "keptDecisions": list(self.kept_decisions),
        }
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> CompactionSummary:
        try:
            body = json.loads(data)
            return cls(
                int(body["lowestLive"]),
                int(body["deletingFrom"]),
                int(body["compacted"]),
                int(body["newestCompactedMs"]),
                tuple(int(p) for p in body.get("keptDecisions", ())),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptLogError(
                f"coordinator summary {where} cannot be read ({exc})",
                hint="Restore it from a backup, or rewrite it with lowestLive set to the "
                "lowest record position still present in the coordinator directory.",
            ) from exc


def read_summary(coordinator: Coordinator) -> CompactionSummary:
    """The coordinator's compaction summary (an empty one before any compaction)."""
    path = f"{coordinator.root}/{SUMMARY_NAME}"
    try:
        data = coordinator.fs.read(path)
    except FileNotFoundError:
        return CompactionSummary()
    summary = CompactionSummary.decode(data, path)
    coordinator.note_lowest_live(summary.lowest_live)
    return summary


def coordinator_root(table_root: str, configuration: Mapping[str, str]) -> str:
    """The coordinator an enrolled table commits through.

    The table property wins; otherwise the directory next to the table's parent, skipping
    a ``<schema>.db`` level, which is ``<warehouse>/_txsql_coordinator`` for every table of
    a warehouse. Every process derives the same answer from the table alone.

    >>> coordinator_root("/w/t", {})
    '/w/_txsql_coordinator'
    >>> coordinator_root("s3://b/w/sales.db/t", {})
    's3://b/w/_txsql_coordinator'
    """
    explicit = configuration.get(COORDINATOR_PROPERTY, "").strip()
    if explicit:
        return parse_location(explicit).root
    parent = table_root.rstrip("/").rpartition("/")[0]
    if parent.endswith(".db"):
        parent = parent.rpartition("/")[0]
    return f"{parent or ''}/{COORDINATOR_DIR}"


class Coordinator:
    """The records under one coordinator root, and what this process knows is published."""

    def __init__(self, root: str, fs: FileIO) -> None:
        self.root = root.rstrip("/")
        self.fs = fs
        self._lock = threading.Lock()
        # Records at or below this position are known published (None: nothing known yet).
        self._published_through: int | None = None
        # The lowest live position this process has seen in the compaction summary.
        self._lowest_live = 0
        # When _published_through was last seen to be the newest record (ms).
        self._known_at_ms = 0

    def record_path(self, position: int) -> str:
        return f"{self.root}/{position:020d}.json"

    def latest_position(self) -> int:
        """The newest record's position (-1 when there is none).

        Never a listing, whatever the number of records: records are contiguous (each is
        put at the position after the newest), so from a position known to exist the
        newest is found by probing names (``exists``). A process that knows nothing yet
        starts from the hint file, which names a recent position.
        """
        with self._lock:
            known = self._published_through
        if known is None:
            # A hint may name a compacted record: start no lower than the summary says.
            lowest = read_summary(self).lowest_live
            return self._newest_from(max(self._hinted(), lowest - 1))
        newest = self._newest_from(max(known, self.lowest_live() - 1))
        if newest > known or newest < 0:
            return newest
        # Nothing after ``known``: it is the newest, unless compaction deleted it. It
        # deletes a record only once the record after it is older than the retention
        # (at least TRUSTED_MS), and that record was written after we saw ``known`` as
        # the newest: within TRUSTED_MS of that, one probe was enough.
        with self._lock:
            seen_newest_at = self._known_at_ms
        if now_ms() - seen_newest_at < TRUSTED_MS or self.fs.exists(self.record_path(newest)):
            return newest
        # What we knew was compacted away by another process since: it is no start for
        # probing (records are deleted in ascending order, so an existing one is).
        return self._newest_from(max(known, read_summary(self).lowest_live - 1))

    def lowest_live(self) -> int:
        with self._lock:
            return self._lowest_live

    def note_lowest_live(self, position: int) -> None:
        with self._lock:
            self._lowest_live = max(self._lowest_live, position)

    def _newest_from(self, start: int) -> int:
        """The newest position, given that ``start`` exists (or is -1): the next few names
        one by one (the usual case: nothing or one group since), then doubling steps and a
        bisection, so a far-behind start costs a logarithm of the gap in probes."""
        low = start
        for _ in range(_LINEAR_PROBES):
            if not self.fs.exists(self.record_path(low + 1)):
                return low
            low += 1
        step = 2
        while self.fs.exists(self.record_path(low + step)):
            low, step = low + step, step * 2
        high = low + step  # low exists, high does not
        while high - low > 1:
            middle = (low + high) // 2
            if self.fs.exists(self.record_path(middle)):
                low = middle
            else:
                high = middle
        return low

    def hint_path(self) -> str:
        return f"{self.root}/{HINT_NAME}"

    def _hinted(self) -> int:
        """The position the hint file names (-1 without a readable hint: then probing
        starts at the first record, still a logarithm of their number)."""
        try:
            return int(json.loads(self.fs.read(self.hint_path()))["position"])
        except FileNotFoundError:
            return -1
        except (OSError, ValueError, KeyError, TypeError, TxSqlError):
            logger.debug("coordinator hint %s unreadable; ignored", self.hint_path())
            return -1

    def _write_hint(self, position: int) -> None:
        """Best effort: a hint only ever names a record that existed (compaction may
        delete it since; the summary then says where probing starts), so a lost or stale
        hint costs probes, never correctness; the write replaces the file whole (temp
        file and rename locally, one PUT on object stores)."""
        try:
            self.fs.write(self.hint_path(), json.dumps({"position": position}).encode())
        except Exception:
            logger.debug("could not write coordinator hint %s", self.hint_path(), exc_info=True)

    def kept_path(self, position: int) -> str:
        return f"{self.root}/{KEPT_DIR}/{position:020d}.json"

    def read(self, position: int) -> GroupRecord:
        """The record at ``position``; FileNotFoundError when compaction removed it (a
        decision of a prepared transaction is still found, in ``kept/``)."""
        path = self.record_path(position)
        try:
            return GroupRecord.decode(self.fs.read(path), path)
        except FileNotFoundError:
            kept = self.kept_path(position)
            return GroupRecord.decode(self.fs.read(kept), kept)

    def ratify(self, record: GroupRecord) -> bool:
        """Put ``record`` at its position if free: True when this call wrote it."""
        try:
            self.fs.write_if_absent(self.record_path(record.position), record.encode())
        except FileExistsError:
            return False
        if record.position > 0 and record.position % HINT_INTERVAL == 0:
            self._write_hint(record.position)
        return True

    def published_through(self) -> int | None:
        with self._lock:
            return self._published_through

    def forget(self) -> None:
        """Know nothing about what is published (as a fresh process)."""
        with self._lock:
            self._published_through = None

    def mark_published(self, position: int) -> None:
        """``position`` is published, and was the newest record just now."""
        with self._lock:
            if self._published_through is None or position > self._published_through:
                self._published_through = position
            if position == self._published_through:
                self._known_at_ms = now_ms()


_COORDINATORS: dict[str, Coordinator] = {}
_COORDINATORS_LOCK = threading.Lock()


def coordinator_at(root: str) -> Coordinator:
    """The process-wide :class:`Coordinator` of ``root`` (it remembers what is published)."""
    with _COORDINATORS_LOCK:
        found = _COORDINATORS.get(root)
        if found is None:
            found = _COORDINATORS[root] = Coordinator(root, file_io_for(root))
        return found


def coordinator_for(table_root: str, configuration: Mapping[str, str]) -> Coordinator | None:
    """The coordinator of an enrolled table; None when the table is not enrolled."""
    if not multi_table_enrolled(configuration):
        return None
    return coordinator_at(coordinator_root(table_root, configuration))


def now_ms() -> int:
    return int(time.time() * 1000)
