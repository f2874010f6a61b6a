"""Delta version checksum files: ``_delta_log/%020d.crc``.

A checksum file summarises the table state right after one commit (total size and count of
live files, the protocol and metadata). It is written after the commit lands and is
optional: a failed write never fails the statement. A reader that finds one compares it with
the state it rebuilt, so a commit that lost a line or a checkpoint that lost a row is caught
instead of silently serving fewer rows.

Field names and meanings follow the protocol's "Version Checksum File" section; only fields
whose values we can state exactly are written (``tableSizeBytes``, ``numFiles``,
``numMetadata``, ``numProtocol``, ``metadata``, ``protocol`` and, for tables with deletion
vectors, ``numDeletionVectorsOpt`` / ``numDeletedRecordsOpt``).
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from txsql.errors import ChecksumMismatchError, ChecksumUnreadableWarning, CorruptLogError
from txsql.log import properties
from txsql.log.actions import AddFile, Metadata, Protocol
from txsql.log.codec import action_from_json, action_to_json
from txsql.log.snapshot import Snapshot
from txsql.storage.logstore import LogStore

logger = logging.getLogger(__name__)

CHECKSUM_FILE = re.compile(r"^(\d{20})\.crc$")


def checksum_name(version: int) -> str:
    """The file name of the checksum of ``version``.

    >>> checksum_name(7)
    '00000000000000000007.crc'
    """
    return f"{version:020d}.crc"


@dataclass(frozen=True)
class TableState:
    """The parts of a rebuilt table state a checksum describes."""

    protocol: Protocol | None
    metadata: Metadata | None
    files: tuple[AddFile, ...]

    @classmethod
    def of(cls, snapshot: Snapshot) -> TableState:
        return cls(snapshot.protocol, snapshot.metadata, snapshot.files)

    @property
    def table_size_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def num_deletion_vectors(self) -> int:
        return sum(1 for f in self.files if f.deletion_vector is not None)

    @property
    def num_deleted_records(self) -> int:
        return sum(f.deletion_vector.cardinality for f in self.files if f.deletion_vector)


def _uses_deletion_vectors(protocol: Protocol) -> bool:
    return "deletionVectors" in (protocol.writer_features or ())


def encode_checksum(snapshot: Snapshot) -> bytes:
    """The checksum file body for ``snapshot`` (one JSON object)."""
    state = TableState.of(snapshot)
    body: dict[str, Any] = {
        "tableSizeBytes": state.table_size_bytes,
        "numFiles": len(state.files),
        "numMetadata": 1,
        "numProtocol": 1,
        "metadata": action_to_json(snapshot.metadata)["metaData"],
        "protocol": action_to_json(snapshot.protocol)["protocol"],
    }
    if _uses_deletion_vectors(snapshot.protocol):
        body["numDeletionVectorsOpt"] = state.num_deletion_vectors
        body["numDeletedRecordsOpt"] = state.num_deleted_records
    info = snapshot.commit_info
    if (
        info is not None
        and info.in_commit_timestamp is not None
        and properties.in_commit_timestamps_enabled(snapshot.configuration)
    ):
        # Readers may take the version's timestamp from here instead of the commit.
        body["inCommitTimestampOpt"] = info.in_commit_timestamp
    return json.dumps(body, separators=(",", ":")).encode()


def write_checksum(store: LogStore, snapshot: Snapshot) -> bool:
    """Write the checksum of ``snapshot``; best effort, so never raises (False on failure)."""
    try:
        store.write_log_file(checksum_name(snapshot.version), encode_checksum(snapshot))
    except Exception:  # the commit already landed: a missing checksum only skips a check
        logger.warning("writing the checksum of version %d failed", snapshot.version, exc_info=True)
        return False
    return True


def read_checksum(store: LogStore, version: int) -> dict[str, Any] | None:
    """The parsed checksum of ``version``; None (with a warning) when it is unreadable."""
    name = checksum_name(version)
    try:
        body = json.loads(store.read_log_file(name))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        _warn_unreadable(store, name, str(exc))
        return None
    required = ("tableSizeBytes", "numFiles")
    if not isinstance(body, dict) or not all(isinstance(body.get(k), int) for k in required):
        _warn_unreadable(store, name, "it lacks tableSizeBytes/numFiles")
        return None
    return body


def _warn_unreadable(store: LogStore, name: str, why: str) -> None:
    warnings.warn(
        ChecksumUnreadableWarning(
            f"checksum file {name} in {store.log_dir} is unreadable ({why}); "
            "that version was not verified"
        ),
        stacklevel=4,
    )


def differences(expected: dict[str, Any], state: TableState) -> list[str]:
    """What differs between a parsed checksum and a rebuilt state (empty: they agree)."""
    out = []
    if expected["numFiles"] != len(state.files):
        out.append(f"numFiles: checksum {expected['numFiles']}, log {len(state.files)}")
    if expected["tableSizeBytes"] != state.table_size_bytes:
        out.append(
            f"tableSizeBytes: checksum {expected['tableSizeBytes']}, log {state.table_size_bytes}"
        )
    for key, actual in (
        ("numDeletionVectorsOpt", state.num_deletion_vectors),
        ("numDeletedRecordsOpt", state.num_deleted_records),
    ):
        if isinstance(expected.get(key), int) and expected[key] != actual:
            out.append(f"{key}: checksum {expected[key]}, log {actual}")
    out.extend(_protocol_differences(expected.get("protocol"), state.protocol))
    out.extend(_metadata_differences(expected.get("metadata"), state.metadata))
    return out


def _protocol_differences(obj: object, actual: Protocol | None) -> list[str]:
    if not isinstance(obj, dict):
        return []
    expected = _decode(obj, "protocol")
    if not isinstance(expected, Protocol) or actual is None:
        return ["protocol: missing from the log"] if actual is None else []

    def key(p: Protocol) -> tuple[int, int, frozenset[str], frozenset[str]]:
        rf, wf = p.reader_features or (), p.writer_features or ()
        return (p.min_reader_version, p.min_writer_version, frozenset(rf), frozenset(wf))

    return [] if key(expected) == key(actual) else [f"protocol: checksum {obj}, log differs"]


def _metadata_differences(obj: object, actual: Metadata | None) -> list[str]:
    if not isinstance(obj, dict):
        return []
    expected = _decode(obj, "metaData")
    if not isinstance(expected, Metadata) or actual is None:
        return ["metadata: missing from the log"] if actual is None else []
    out = []
    for label, a, b in (
        ("metadata.id", expected.id, actual.id),
        ("metadata.schemaString", expected.schema_string, actual.schema_string),
        ("metadata.partitionColumns", expected.partition_columns, actual.partition_columns),
        ("metadata.configuration", expected.configuration, actual.configuration),
    ):
        if a != b:
            out.append(f"{label}: checksum {a!r}, log {b!r}")
    return out


def _decode(obj: dict[str, Any], key: str) -> object:
    try:
        return action_from_json({key: obj})
    except (CorruptLogError, ValueError, KeyError, TypeError):
        return None  # a malformed field of an optional file: nothing to compare


def verify(store: LogStore, version: int, state: TableState, *, what: str = "") -> None:
    """Compare ``state`` with the checksum of ``version`` when that file exists.

    Raises:
        ChecksumMismatchError: the checksum names a different file count, size, protocol
            or metadata; the message lists every difference.
    """
    expected = read_checksum(store, version)
    if expected is None:
        return
    diffs = differences(expected, state)
    if diffs:
        source = f" ({what})" if what else ""
        raise ChecksumMismatchError(
            f"version {version} of {store.root}{source} does not match its checksum file "
            f"{checksum_name(version)}: " + "; ".join(diffs)
        )


def state_of(
    protocol: Protocol | None, metadata: Metadata | None, files: Iterable[AddFile]
) -> TableState:
    """A :class:`TableState` from replay pieces (before a snapshot is frozen)."""
    return TableState(protocol, metadata, tuple(files))
