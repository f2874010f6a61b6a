"""Check one winning commit against our transaction: the rules, in Delta Spark's order.

Order (Delta Spark's ``ConflictChecker``; ARCHITECTURE.md, "Conflict checks"): protocol ->
metadata -> domain metadata -> app ids -> files added that we should have read -> files
deleted that we read -> files both deleted. Each rule is a function of one
:class:`~txsql.txn.conflicts.view.Check` that raises the conflict or records what to adopt
and how to rebase; a rule set is the tuple of rules a caller runs, in order:

* :data:`WRITE_RULES`: a commit (every path: autocommit, COMMIT, groups, PREPARE);
* :data:`READ_RULES`: Serializable validation of a table read but not written
  (:mod:`txsql.txn.commit.read_validation`): only "what we read changed" can fire;
* :data:`PREPARED_RULES`: COMMIT PREPARED in any process (:mod:`txsql.txn.prepared.restage`):
  the read set did not survive the preparing process, so the participant counts as having
  read its whole table, at file level, and adopts no protocol or metadata change.

Steps 5-7 come in two modes: file level (``txsql.rowLevelConcurrency=false``, the default
without DVs), exactly Delta Spark's rules; row level (the default on DV tables), which adds
stats, the row hooks, DV updates judged row by row and the compaction race. Anything
undecidable falls back to the file-level rule.
"""

from __future__ import annotations

from collections.abc import Callable

from txsql.txn.conflicts.added_files import (
    check_added_files,
    check_any_data_change,
    check_join_adds,
)
from txsql.txn.conflicts.compaction_race import check_compaction_race
from txsql.txn.conflicts.deleted_files import (
    check_both_deleted,
    check_deleted_files,
    check_row_level_deletes,
)
from txsql.txn.conflicts.revived_rows import check_readds_without_remove, check_revived_rows
from txsql.txn.conflicts.table_state import (
    check_app_ids,
    check_domains,
    check_metadata,
    check_protocol,
    check_protocol_and_metadata_unchanged,
)
from txsql.txn.conflicts.view import Check, CheckOutcome, TxnView
from txsql.txn.winner import WinningCommit

Rule = Callable[[Check], None]

WRITE_RULES: tuple[Rule, ...] = (
    check_protocol,  # 1
    check_metadata,  # 2
    check_domains,  # 3
    check_app_ids,  # 4
    check_compaction_race,  # 4b: translated paths skip 5-7
    check_added_files,  # 5
    check_join_adds,  # 5, MERGE join reads
    check_revived_rows,  # 5b
    check_readds_without_remove,  # 5b
    check_row_level_deletes,  # 6-7, row by row
    check_deleted_files,  # 6
    check_both_deleted,  # 7
)

# A view that stages nothing: the rules about our own writes (domains, re-adds, the
# compaction race, files both deleted) could never fire.
READ_RULES: tuple[Rule, ...] = (
    check_protocol,
    check_metadata,
    check_app_ids,
    check_added_files,
    check_join_adds,
    check_revived_rows,
    check_row_level_deletes,
    check_deleted_files,
)

PREPARED_RULES: tuple[Rule, ...] = (
    check_protocol_and_metadata_unchanged,  # 1-2
    check_app_ids,  # 4, the app ids it writes
    check_domains,  # 3
    check_both_deleted,  # 7
    check_any_data_change,  # 5-6 for a whole-table read
)


def check_winning_commit(
    winner: WinningCommit, ours: TxnView, rules: tuple[Rule, ...] = WRITE_RULES
) -> CheckOutcome:
    """Raise the first conflict ``winner`` causes us, else say how to rebase onto it.

    Raises:
        ProtocolChangedError, MetadataChangedError, ConcurrentTransactionError,
        ConcurrentAppendError, ConcurrentDeleteReadError, ConcurrentDeleteDeleteError.
    """
    check = Check.start(winner, ours)
    for rule in rules:
        rule(check)
    return check.outcome
