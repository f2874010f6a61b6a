"""Conflict step 4b (row level): a compaction and a DML that raced both commit.

Before the file rules (steps 5-7) run, a winner that is a txsql compaction with a row map,
or a winning DML when we are such a compaction, is translated instead of judged: our DML
moves onto the compaction's outputs, or our compaction carries the DML's deletions
(:mod:`txsql.txn.rowlevel.compaction_races`). The winner's paths so translated are left out
of steps 5-7. Anything untranslatable leaves the usual rules to decide.
"""

from __future__ import annotations

from txsql.log.actions import AddFile, RemoveFile
from txsql.txn.conflicts.view import Check
from txsql.txn.isolation import changes_no_data
from txsql.txn.rowlevel.compaction_races import (
    can_write_dvs,
    plan_carry,
    plan_dml_translation,
    winner_row_map,
)


def check_compaction_race(check: Check) -> None:
    """Record the translation of our DML onto a winning compaction, or the winner's
    deletions our compaction carries, and the winner's paths they take care of."""
    winner, ours, outcome = check.winner, check.ours, check.outcome
    state = ours.rows
    if state is None or not can_write_dvs(ours.protocol, ours.metadata):
        return
    if ours.row_map is not None:
        carry = plan_carry(winner, ours.row_map, state, ours.staged_removes())
        if carry is not None:
            outcome.carry = carry
            check.handled = set(carry.sources)
        return
    if winner_row_map(winner) is None or changes_no_data(
        [a for a in ours.actions if isinstance(a, (AddFile, RemoveFile))]
    ):
        return  # (two compactions of the same files still conflict)
    translation = plan_dml_translation(winner, state, ours.read_set)
    if translation is not None:
        outcome.translation = translation
        check.handled = set(winner.removes)
