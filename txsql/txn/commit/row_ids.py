"""Row ids of a commit on a row-tracking table, assigned at each attempt.

The ids a commit hands out depend on where it lands: they start above the high-water mark
of the version it commits on top of, and ``defaultRowCommitVersion`` is the version it
takes. So they are never staged: every attempt assigns them afresh from the mark the
commit loop has seen (the read snapshot's, raised by every winner it caught up with), as
Delta Spark's conflict checker re-bases them on a retry. Two writers that raced therefore
never hand out the same ids: the loser assigns above the winner's mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from txsql.errors import TransactionError
from txsql.log import row_tracking
from txsql.log.actions import Action, AddFile, CommitInfo, DomainMetadata
from txsql.txn.rowlevel.state import num_records


def assign_row_ids(
    actions: Sequence[Action], version: int, mark: int, *, keeps_ids: bool = False
) -> tuple[tuple[Action, ...], int]:
    """``actions`` (commitInfo first) with ids for every new file, and the new mark.

    A new file (no ``baseRowId``) gets the next ``numRecords`` ids above ``mark`` and
    ``defaultRowCommitVersion = version``; a file committed again keeps both (the planner
    copies them from the file it replaces). When ids were assigned the ``delta.rowTracking``
    domain records the new mark. The commitInfo says whether stable ids were kept: always
    with ``keeps_ids`` (``delta.enableRowTracking``: rows copied carry them in the
    materialized columns, see ``txsql.txn.guards.check_row_ids_kept``), else unless rows
    were copied.

    Raises:
        TransactionError: a new file has no ``numRecords`` in its stats.
    """
    out: list[Action] = []
    rewrite_mark = False
    for action in actions:
        if isinstance(action, DomainMetadata) and action.domain == row_tracking.DOMAIN:
            rewrite_mark = True  # the mark is this attempt's to write
            continue
        if isinstance(action, AddFile) and action.base_row_id is None:
            count = num_records(action.stats)
            if count is None:
                raise TransactionError(
                    f"file {action.path} has no numRecords in its stats, so its rows cannot "
                    "be given row ids (the table tracks rows)",
                    hint="Write the file with statistics (txsql always does); a file from "
                    "elsewhere must come with its row count.",
                )
            action = replace(action, base_row_id=mark + 1, default_row_commit_version=version)
            mark += count
            rewrite_mark = True
        out.append(action)
    if rewrite_mark:
        out.append(row_tracking.mark_domain(mark))
    preserved = keeps_ids or not row_tracking.copies_rows(actions)
    return tuple(_tag_preserved(a, preserved) for a in out), mark


def _tag_preserved(action: Action, preserved: bool) -> Action:
    """The commitInfo tag Delta writes: did this commit keep every row's stable id?"""
    if not isinstance(action, CommitInfo):
        return action
    extra = dict(action.extra or {})
    tags = dict(extra.get("tags") or {})
    tags[row_tracking.PRESERVED_TAG] = "true" if preserved else "false"
    extra["tags"] = tags
    return replace(action, extra=extra)
