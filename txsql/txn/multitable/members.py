"""The participants of a group (a multi-table commit, or a PREPARE): one commit loop per
table, with what each staged last, and the steps the group and PREPARE paths share."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from txsql.errors import CommitConflictError, TransactionError
from txsql.log.actions import Action
from txsql.txn.commit.loop import CommitLoop
from txsql.txn.multitable.coordinator import (
    Coordinator,
    Participant,
    coordinator_at,
    coordinator_root,
)

logger = logging.getLogger(__name__)


@dataclass
class GroupMember:
    """One participant: its prepared commit loop, and what it staged last."""

    loop: CommitLoop
    label: str  # how errors name the table
    configuration: Mapping[str, str]
    table_id: str
    name_in_errors: bool  # conflicts start with the label (groups of several)
    participant: Participant | None = None
    written: tuple[Action, ...] = ()
    attempts: int = 0
    superseded: list[str] = field(default_factory=list)  # staged commits of lost attempts
    staged_bytes: bytes = b""  # what the staged commit holds: publishing needs no read back


def group_members(loops: Sequence[CommitLoop], labels: Sequence[str]) -> list[GroupMember]:
    """One member per loop; refuses a table that has no committed version yet."""
    members = []
    for loop, label in zip(loops, labels, strict=True):
        snapshot = loop.snapshot
        if snapshot is None:
            raise TransactionError(
                f"{label} has no committed version: a new table cannot join a multi-table "
                "transaction",
                hint="Create the table first (CREATE TABLE ... TBLPROPERTIES "
                "('txsql.multiTableTransactions' = 'true')), then write it in the transaction.",
            )
        named = len(loops) > 1
        members.append(
            GroupMember(loop, label, snapshot.configuration, snapshot.metadata.id, named)
        )
    return members


def one_coordinator(members: Sequence[GroupMember]) -> Coordinator:
    roots = {coordinator_root(m.loop.log.table_root, m.configuration) for m in members}
    if len(roots) != 1:
        shown = ", ".join(sorted(roots))
        raise TransactionError(
            f"the tables of this transaction commit through different coordinators ({shown})",
            hint="Keep the tables in one warehouse, or set the same "
            "'txsql.multiTableTransactions.coordinator' location on all of them.",
        )
    return coordinator_at(roots.pop())


def catch_up_member(m: GroupMember, newest: int, attempt: int, nothing_done: str) -> None:
    """Check and rebase ``m`` onto its table's winners through ``newest``.

    Raises the conflict (naming the table in a group of several), or a TransactionError
    when a winner already holds this transaction's write (``nothing_done`` is its hint).
    """
    if newest < m.loop.version:
        return
    try:
        done = m.loop.catch_up(newest, attempt)
    except CommitConflictError as exc:
        if m.name_in_errors:
            name_table(exc, m.label)
        raise
    if done is not None:  # a winner holds our app version, or is our own commit
        raise TransactionError(
            f"{m.label}: version {done.version} already holds this transaction's write",
            hint=nothing_done,
        )


def name_table(exc: CommitConflictError, label: str) -> None:
    """Conflicts in a group say which table they are about."""
    if not exc.message.startswith(f"{label}: "):
        exc.message = f"{label}: {exc.message}"
        exc.args = (exc._render(),)


def discard_staged(members: Sequence[GroupMember]) -> None:
    """Delete the staged commits of a group that was never ratified (best effort)."""
    for m in members:
        names = list(m.superseded)
        if m.participant is not None and m.participant.staged_commit is not None:
            names.append(m.participant.staged_commit)
        delete_staged(m, names)


def delete_staged(m: GroupMember, names: Sequence[str]) -> None:
    store = m.loop.log.store
    for name in names:
        try:
            store.fs.delete(store.log_path(name))
        except Exception:  # best effort: cleanup removes it once its version is published
            logger.debug("could not delete staged commit %s", name, exc_info=True)
