"""The hooks the planner attaches to a transaction, answered with Spark.

The conflict checker lives below the Spark layer, so it asks questions about rows through
hooks. The base row hook (:data:`RowPredicateChecker`) answers "does any live row of these
files satisfy the predicate?"; a MERGE's :data:`JoinChecker` answers "does any of them join
with the source?". A row hook may also implement the protocols below; when it does not,
the checker takes the conservative answer (a conflict, or a card without values).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pyroaring import BitMap64

from txsql.log.actions import AddFile
from txsql.log.predicates import Predicate
from txsql.txn.readset import JoinRead

RowPredicateChecker = Callable[[Predicate, Sequence[AddFile]], bool]
"""Hook: does any live row of these files satisfy the predicate? (Spark evaluates it.)

The hook object may also implement :class:`RowSetChecker` (ask about specific rows, e.g.
rows a winner revived) and :class:`RowValueReader` (values for messages).
"""

JoinChecker = Callable[[JoinRead, Sequence[AddFile]], bool]
"""Hook: does any live row of these files join with the read's source under its ON?"""


@runtime_checkable
class RowSetChecker(Protocol):
    """Asks about specific physical rows of files, whatever their DV says."""

    def rows_match(
        self, predicate: Predicate, rows: Mapping[str, tuple[AddFile, BitMap64]]
    ) -> bool:
        """Whether any of the given rows (path -> (file, row indexes)) satisfies it."""
        ...


@runtime_checkable
class RowValueReader(Protocol):
    """Reads the values of a few physical rows, for conflict messages."""

    def row_values(
        self,
        rows: Mapping[str, tuple[AddFile, BitMap64]],
        columns: Sequence[str],
        limit: int,
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` rows as ``{"file": path, "row": index, column: value, ...}``."""
        ...


@runtime_checkable
class RowJoinChecker(Protocol):
    """Answers, for specific physical rows, whether one joins with a MERGE's source."""

    def rows_join(self, join: JoinRead, rows: Mapping[str, tuple[AddFile, BitMap64]]) -> bool:
        """True if one of ``rows`` (path -> (file, row indexes)) joins ``join``'s source."""
        ...
