"""Durable records of prepared transactions (PostgreSQL's PREPARE TRANSACTION), and where
their decisions are.

A prepared transaction is ``<coordinator>/prepared/<id>.json``, written once with
put-if-absent: for each participant, the table, the version it read, the file holding its
prepared actions (``_delta_log/_staged_commits/prepared.<uuid>.json``: a name the staged
commit cleanup never matches) and the files its statements wrote (deleted if it is rolled
back). It also holds ``decideFrom``, the coordinator's next free position when it was
prepared.

The decision (commit or rollback) is a coordinator record carrying the prepared id and a
``preparedOutcome``: positions are taken with put-if-absent, so of two processes deciding
at once exactly one decision exists, and a commit decision is the group's commit point as
for any group. Every decision lies at or after ``decideFrom`` (positions only grow, and a
decider reads the prepared record before it looks for a free position), so scanning the
records from there finds it. Once a decision is published, ``<coordinator>/decided/<id>.json``
(its position) spares later calls that scan.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass

from txsql.errors import (
    CorruptLogError,
    PreparedTransactionExistsError,
    PreparedTransactionNotFoundError,
    TransactionError,
)
from txsql.txn.multitable.coordinator import Coordinator, GroupRecord

PREPARED_DIR = "prepared"
DECIDED_DIR = "decided"
_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._:-]{0,127}$")
_RECORD = re.compile(r"^(.+)\.json$")
COMMIT = "commit"
ROLLBACK = "rollback"


def require_valid_id(prepared_id: str) -> str:
    """Ids become file names: letters, digits and ``._:-``, at most 128 characters."""
    if not _ID.match(prepared_id):
        raise TransactionError(
            f"{prepared_id!r} cannot be a prepared transaction id",
            hint="Use 1 to 128 letters, digits, '_', '.', ':' or '-', starting with a "
            "letter, digit or '_' (e.g. 'sink-42:checkpoint-7').",
        )
    return prepared_id


@dataclass(frozen=True)
class PreparedParticipant:
    """One table's part of a prepared transaction."""

    table_root: str
    table_id: str
    label: str  # how errors and results name the table
    read_version: int
    version: int  # the version it was staged for at PREPARE
    actions_file: str  # relative to _delta_log
    txn_id: str
    isolation: str
    blind_append: bool
    written_files: tuple[str, ...] = ()
    written_directories: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "tableRoot": self.table_root,
            "tableId": self.table_id,
            "label": self.label,
            "readVersion": self.read_version,
            "version": self.version,
            "actionsFile": self.actions_file,
            "txnId": self.txn_id,
            "isolationLevel": self.isolation,
            "blindAppend": self.blind_append,
            "writtenFiles": list(self.written_files),
            "writtenDirectories": list(self.written_directories),
        }

    @classmethod
    def from_json(cls, body: dict[str, object]) -> PreparedParticipant:
        return cls(
            str(body["tableRoot"]),
            str(body["tableId"]),
            str(body["label"]),
            int(str(body["readVersion"])),
            int(str(body["version"])),
            str(body["actionsFile"]),
            str(body["txnId"]),
            str(body["isolationLevel"]),
            bool(body["blindAppend"]),
            tuple(str(p) for p in _list(body.get("writtenFiles"))),
            tuple(str(p) for p in _list(body.get("writtenDirectories"))),
        )


@dataclass(frozen=True)
class PreparedRecord:
    transaction_id: str
    decide_from: int
    timestamp: int
    participants: tuple[PreparedParticipant, ...]

    def encode(self) -> bytes:
        body = {
            "transactionId": self.transaction_id,
            "decideFrom": self.decide_from,
            "timestamp": self.timestamp,
            "participants": [p.to_json() for p in self.participants],
        }
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> PreparedRecord:
        try:
            body = json.loads(data)
            parts = tuple(PreparedParticipant.from_json(p) for p in body["participants"])
            return cls(
                str(body["transactionId"]), int(body["decideFrom"]), int(body["timestamp"]), parts
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptLogError(f"prepared transaction {where} cannot be read ({exc})") from exc


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def prepared_path(coordinator: Coordinator, prepared_id: str) -> str:
    return f"{coordinator.root}/{PREPARED_DIR}/{prepared_id}.json"


def decided_path(coordinator: Coordinator, prepared_id: str) -> str:
    return f"{coordinator.root}/{DECIDED_DIR}/{prepared_id}.json"


def write_prepared(coordinator: Coordinator, record: PreparedRecord) -> None:
    """Put the record; refuse an id already used (prepared, committed or rolled back)."""
    try:
        coordinator.fs.write_if_absent(
            prepared_path(coordinator, record.transaction_id), record.encode()
        )
    except FileExistsError:
        raise PreparedTransactionExistsError(
            f"a prepared transaction named {record.transaction_id!r} already exists"
        ) from None


def read_prepared(coordinator: Coordinator, prepared_id: str) -> PreparedRecord:
    path = prepared_path(coordinator, require_valid_id(prepared_id))
    try:
        data = coordinator.fs.read(path)
    except FileNotFoundError:
        raise PreparedTransactionNotFoundError(
            f"no prepared transaction is named {prepared_id!r}"
        ) from None
    return PreparedRecord.decode(data, path)


def prepared_ids(coordinator: Coordinator) -> list[str]:
    """Every id a PREPARE TRANSACTION wrote (decided or not), sorted."""
    return _names(coordinator, PREPARED_DIR)


def decided_ids(coordinator: Coordinator) -> set[str]:
    return set(_names(coordinator, DECIDED_DIR))


def _names(coordinator: Coordinator, directory: str) -> list[str]:
    try:
        listed = coordinator.fs.list_dir(f"{coordinator.root}/{directory}")
    except (FileNotFoundError, OSError):
        return []
    return sorted(m.group(1) for f in listed if (m := _RECORD.match(f.name)))


def find_decision(coordinator: Coordinator, record: PreparedRecord) -> GroupRecord | None:
    """The coordinator record deciding ``record``, or None while it is still prepared."""
    try:
        position = int(coordinator.fs.read(decided_path(coordinator, record.transaction_id)))
    except FileNotFoundError:
        latest = coordinator.latest_position()
        for candidate in range(latest, record.decide_from - 1, -1):
            decision = coordinator.read(candidate)
            if is_decision_of(decision, record.transaction_id):
                return decision
        return None
    return coordinator.read(position)


def undecided(coordinator: Coordinator) -> list[PreparedRecord]:
    """Every prepared transaction of ``coordinator`` not committed or rolled back yet."""
    decided = decided_ids(coordinator)
    records = [read_prepared(coordinator, i) for i in prepared_ids(coordinator) if i not in decided]
    return [r for r in records if find_decision(coordinator, r) is None]


def is_decision_of(group: GroupRecord, prepared_id: str) -> bool:
    return group.prepared_outcome is not None and group.transaction_id == prepared_id


def mark_decided(coordinator: Coordinator, decision: GroupRecord) -> None:
    """Remember where the decision is (best effort: the scan finds it anyway)."""
    with contextlib.suppress(FileExistsError, OSError):
        coordinator.fs.write_if_absent(
            decided_path(coordinator, decision.transaction_id), str(decision.position).encode()
        )
