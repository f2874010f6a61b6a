"""Staged actions of an open transaction, and the snapshot they overlay.

Statements of a multi-statement transaction stage actions one after another; staging
reconciles them like log replay would (a later remove of a path we staged an add for
cancels that add), so the commit holds the net effect and later statements read their
own writes through :func:`overlay_snapshot`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from txsql.log.actions import Action, AddFile, Metadata, Protocol, RemoveFile, SetTransaction
from txsql.log.snapshot import Snapshot
from txsql.txn.readset import norm_path


class StagedActions:
    """The net actions a transaction will commit.

    Non-file actions keep their order (a second Metadata or Protocol replaces the first);
    file actions are keyed by normalized path.
    """

    def __init__(self) -> None:
        self.other: list[Action] = []
        self.removes: dict[str, RemoveFile] = {}
        self.adds: dict[str, AddFile] = {}

    def stage(self, actions: Iterable[Action]) -> None:
        for action in actions:
            if isinstance(action, RemoveFile):
                self._stage_remove(action)
            elif isinstance(action, AddFile):
                self.adds[norm_path(action.path)] = action
            elif isinstance(action, (Metadata, Protocol)):
                kind = type(action)
                self.other = [a for a in self.other if not isinstance(a, kind)]
                self.other.append(action)
            else:
                self.other.append(action)

    def _stage_remove(self, remove: RemoveFile) -> None:
        path = norm_path(remove.path)
        staged_add = self.adds.pop(path, None)
        if staged_add is None:
            self.removes.setdefault(path, remove)
            return
        # We are removing our own staged version of the file: the net effect is the
        # earlier remove of the logged version (if any); a file we created and now remove
        # never reaches the log at all.
        if path not in self.removes and staged_add.dv_id != remove.dv_id:
            self.removes[path] = remove

    def actions(self) -> tuple[Action, ...]:
        """Non-file actions first, then removes, then adds."""
        return (*self.other, *self.removes.values(), *self.adds.values())

    def copy(self) -> StagedActions:
        """An independent copy (a commit loop rebases its own, never the transaction's)."""
        staged = StagedActions()
        staged.other, staged.removes, staged.adds = (
            list(self.other),
            dict(self.removes),
            dict(self.adds),
        )
        return staged

    def replace_files(self, removes: dict[str, RemoveFile], adds: dict[str, AddFile]) -> None:
        """Set the file actions after a rebase."""
        self.removes, self.adds = removes, adds

    def clear(self) -> None:
        self.other.clear()
        self.removes.clear()
        self.adds.clear()

    def app_versions(self) -> dict[str, int]:
        return {a.app_id: a.version for a in self.other if isinstance(a, SetTransaction)}


def overlay_snapshot(snapshot: Snapshot, staged: StagedActions) -> Snapshot:
    """``snapshot`` with the staged adds, removes, metadata, protocol and txns applied.

    The version stays the read version: nothing was committed.
    """
    touched = set(staged.removes) | set(staged.adds)
    files = [f for f in snapshot.files if norm_path(f.path) not in touched]
    files.extend(staged.adds.values())
    protocol = next((a for a in staged.other if isinstance(a, Protocol)), snapshot.protocol)
    metadata = next((a for a in staged.other if isinstance(a, Metadata)), snapshot.metadata)
    apps = {**snapshot.app_versions, **staged.app_versions()}
    return replace(
        snapshot,
        files=tuple(files),
        protocol=protocol,
        metadata=metadata,
        app_versions=apps,
    )
