"""Isolation levels, the level a commit is checked under, and blind-append detection.

Levels are spelled as Delta spells them in ``commitInfo``. The table property
``delta.isolationLevel`` (``WriteSerializable`` by default in txsql, as on Databricks)
chooses the level; a transaction may ask for a stronger one (``BEGIN ISOLATION LEVEL``);
a transaction that changes no data (OPTIMIZE, empty commits) is checked as
``SnapshotIsolation`` like Delta Spark's ``canDowngradeToSnapshotIsolation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

from txsql.log import properties
from txsql.log.actions import Action, AddFile, DomainMetadata, RemoveFile

ROW_LEVEL_CONCURRENCY = "txsql.rowLevelConcurrency"
"""Table property: row-level conflict detection (default: on when DVs are enabled)."""

_ROW_TRACKING_DOMAIN = "delta.rowTracking"


class IsolationLevel(str, Enum):
    SERIALIZABLE = "Serializable"
    WRITE_SERIALIZABLE = "WriteSerializable"
    SNAPSHOT_ISOLATION = "SnapshotIsolation"

    @classmethod
    def parse(cls, text: str) -> IsolationLevel:
        """Parse a level case-insensitively.

        >>> IsolationLevel.parse("writeserializable").value
        'WriteSerializable'
        """
        for level in cls:
            if level.value.lower() == text.strip().lower():
                return level
        allowed = ", ".join(level.value for level in cls)
        raise ValueError(f"unknown isolation level {text!r}; expected one of {allowed}")

    @property
    def strength(self) -> int:
        """Higher is stricter: SnapshotIsolation 0, WriteSerializable 1, Serializable 2."""
        return _STRENGTH[self]


_STRENGTH = {
    IsolationLevel.SNAPSHOT_ISOLATION: 0,
    IsolationLevel.WRITE_SERIALIZABLE: 1,
    IsolationLevel.SERIALIZABLE: 2,
}


def changes_no_data(actions: Sequence[Action]) -> bool:
    """Delta's downgrade test: only file actions (or the row-tracking domain), none dataChange.

    >>> changes_no_data([]), changes_no_data([AddFile("a", {}, 1, 1, data_change=False)])
    (True, True)
    >>> changes_no_data([RemoveFile("a")])
    False
    """
    for a in actions:
        if isinstance(a, (AddFile, RemoveFile)):
            if a.data_change:
                return False
        elif not (isinstance(a, DomainMetadata) and a.domain == _ROW_TRACKING_DOMAIN):
            return False
    return True


def choose_isolation(
    actions: Sequence[Action],
    configuration: Mapping[str, str],
    requested: IsolationLevel | None = None,
) -> IsolationLevel:
    """The level a commit of ``actions`` is checked under.

    A requested level can only strengthen the table's level for this transaction.

    >>> choose_isolation([RemoveFile("a")], {}, IsolationLevel.SERIALIZABLE).value
    'Serializable'
    >>> choose_isolation([RemoveFile("a")], {"delta.isolationLevel": "Serializable"},
    ...                  IsolationLevel.WRITE_SERIALIZABLE).value
    'Serializable'
    >>> choose_isolation([], {}).value
    'SnapshotIsolation'
    """
    if changes_no_data(actions):
        return IsolationLevel.SNAPSHOT_ISOLATION
    table = IsolationLevel.parse(properties.isolation_level(configuration))
    if requested is not None and requested.strength > table.strength:
        return requested
    return table


def is_blind_append(actions: Sequence[Action], read_nothing: bool) -> bool:
    """Delta's isBlindAppend: no removes and nothing read (metadata-only commits count).

    >>> is_blind_append([AddFile("a", {}, 1, 1)], True), is_blind_append([RemoveFile("a")], True)
    (True, False)
    """
    return read_nothing and not any(isinstance(a, RemoveFile) for a in actions)


def row_level_enabled(configuration: Mapping[str, str]) -> bool:
    """``txsql.rowLevelConcurrency``; absent means on for tables with deletion vectors.

    >>> row_level_enabled({"delta.enableDeletionVectors": "true"}), row_level_enabled({})
    (True, False)
    >>> row_level_enabled({"delta.enableDeletionVectors": "true", ROW_LEVEL_CONCURRENCY: "FALSE"})
    False
    """
    value = configuration.get(ROW_LEVEL_CONCURRENCY)
    if value is None:
        return properties.deletion_vectors_enabled(configuration)
    return value.strip().lower() == "true"
