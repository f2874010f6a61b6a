"""Isolation levels, spelled as Delta spells them in ``commitInfo``."""

from __future__ import annotations

from enum import Enum


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
