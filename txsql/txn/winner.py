"""A commit that beat us to a version, summarized for the conflict checks."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

from txsql.log.actions import Action, AddFile, CommitInfo, Metadata, Protocol, RemoveFile
from txsql.txn.readset import norm_path

A = TypeVar("A")


# Where a commit names the multi-table group it belongs to (the tag is Delta's RFC's).
GROUP_TAG = "delta.multiTableTransaction.transactionId"


@dataclass(frozen=True)
class WinningCommit:
    """The actions of one winning commit and the views the checks need.

    A *DV update* is a path the winner both removed and re-added (Delta paths name
    immutable data files, so the data is the same): merge-on-read DELETE/UPDATE/MERGE give
    it a larger DV, RESTORE or a foreign writer may give it a smaller DV or none. Row-level
    checking compares the old and new DVs: rows deleted, and rows revived (added data).
    """

    version: int
    actions: tuple[Action, ...]

    @cached_property
    def commit_info(self) -> CommitInfo | None:
        return next((a for a in self.actions if isinstance(a, CommitInfo)), None)

    @property
    def operation(self) -> str | None:
        info = self.commit_info
        return info.operation if info else None

    @property
    def is_blind_append(self) -> bool:
        """The winner's own flag; a winner without commitInfo counts as non-blind."""
        info = self.commit_info
        return bool(info and info.is_blind_append)

    @property
    def txn_id(self) -> str | None:
        info = self.commit_info
        return info.txn_id if info else None

    @property
    def group_id(self) -> str | None:
        """The multi-table transaction the winner was part of (Delta's RFC tag), if any."""
        info = self.commit_info
        tags = (info.extra or {}).get("tags") if info else None
        found = tags.get(GROUP_TAG) if isinstance(tags, dict) else None
        return str(found) if found is not None else None

    def of_type(self, kind: type[A]) -> list[A]:
        return [a for a in self.actions if isinstance(a, kind)]

    @cached_property
    def protocol(self) -> Protocol | None:
        return next((a for a in self.actions if isinstance(a, Protocol)), None)

    @cached_property
    def metadata(self) -> Metadata | None:
        return next((a for a in self.actions if isinstance(a, Metadata)), None)

    @cached_property
    def adds(self) -> dict[str, AddFile]:
        return {norm_path(a.path): a for a in self.actions if isinstance(a, AddFile)}

    @cached_property
    def removes(self) -> dict[str, RemoveFile]:
        return {norm_path(r.path): r for r in self.actions if isinstance(r, RemoveFile)}

    @cached_property
    def dv_updates(self) -> dict[str, tuple[RemoveFile, AddFile]]:
        """Paths removed and re-added, with or without a DV: path -> (remove, re-add)."""
        out = {}
        for path, add in self.adds.items():
            remove = self.removes.get(path)
            if remove is not None:
                out[path] = (remove, add)
        return out

    @cached_property
    def readds_without_remove(self) -> dict[str, AddFile]:
        """Paths added without a matching remove (only meaningful for files live before)."""
        return {p: a for p, a in self.adds.items() if p not in self.removes}

    @property
    def describe(self) -> str:
        """``version 5 (UPDATE)`` for messages."""
        return f"version {self.version} ({self.operation or 'unknown operation'})"
