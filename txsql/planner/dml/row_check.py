"""The transaction's row-predicate hook, evaluated by Spark.

When a concurrent winner added files whose partition values and stats may satisfy our
read predicate, the conflict checker asks: does any live row of those files actually
satisfy it? Spark answers by scanning just those files (deletion vectors applied) with the
predicate's SQL and fetching at most one row.

The same object answers two row-level questions (:mod:`txsql.txn.hooks`): do any of
these *specific* rows satisfy the predicate (rows a winner revived by shrinking a DV), and
what are the values of a few rows (for conflict messages)? Both read the physical rows by
``_metadata.row_index``, ignoring the files' deletion vectors.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import reduce
from typing import TYPE_CHECKING, Any

from pyroaring import BitMap64

from txsql.engine.scan import scan_snapshot, snapshot_row_ids
from txsql.engine.schema import quote
from txsql.log import row_tracking
from txsql.log.actions import AddFile
from txsql.log.predicates import Predicate, to_sql
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from txsql.log.snapshot import Snapshot

# More rows than this in one question are not listed in a query: we answer "match"
# (a conflict), which is always safe.
_MAX_ROWS_ASKED = 10_000

logger = logging.getLogger(__name__)


class SparkRowChecker:
    """``row_predicate_checker`` for a transaction: Spark evaluates the predicate.

    Args:
        spark: The session to scan with.
        txn: The transaction; its read snapshot supplies schema and partitioning (a winner
            that changed them conflicts before any row check).
    """

    def __init__(self, spark: SparkSession, txn: Transaction) -> None:
        self._spark = spark
        self._txn = txn

    def __call__(self, predicate: Predicate, files: Sequence[AddFile]) -> bool:
        """Whether some live row of ``files`` satisfies ``predicate`` (True if unsure)."""
        if not files:
            return False
        snapshot = self._txn.snapshot()
        if snapshot is None:
            return True

        try:
            rows = scan_snapshot(self._spark, replace(snapshot, files=tuple(files)))
            return bool(rows.where(to_sql(predicate)).limit(1).collect())
        except Exception:
            logger.debug("row check failed; assuming a match", exc_info=True)
            return True

    def rows_match(
        self, predicate: Predicate, rows: Mapping[str, tuple[AddFile, BitMap64]]
    ) -> bool:
        """Whether one of the given physical rows satisfies ``predicate`` (True if unsure)."""
        if not any(len(bits) for _, bits in rows.values()):
            return False
        try:
            df = self._physical_rows(rows)
            if df is None:
                return True
            return bool(df.where(to_sql(predicate)).limit(1).collect())
        except Exception:
            logger.debug("row check of specific rows failed; assuming a match", exc_info=True)
            return True

    def row_values(
        self,
        rows: Mapping[str, tuple[AddFile, BitMap64]],
        columns: Sequence[str],
        limit: int,
    ) -> list[dict[str, Any]]:
        """Values of ``columns`` for the given physical rows (at most ``limit``)."""

        snapshot = self._txn.snapshot()
        df = self._physical_rows(rows)
        if df is None or snapshot is None:
            return []
        file_column, row_column = snapshot_row_ids(snapshot)
        # A table keeping stable row ids names each row by its id too (the card shows it).
        lineage = row_tracking.materialized_columns(snapshot.configuration)
        ids = [df[quote(lineage[0])]] if lineage else []
        picked = df.select(*[df[c] for c in columns], df[file_column], df[row_column], *ids)
        out = []
        for r in picked.limit(limit).collect():
            values = [r[i] for i in range(len(columns))]
            path, index = r[len(columns)], r[len(columns) + 1]
            named = {"row_id": r[len(columns) + 2]} if lineage else {}
            out.append({"file": path, "row": int(index), **named, **dict(zip(columns, values))})
        return out

    def _physical_rows(self, rows: Mapping[str, tuple[AddFile, BitMap64]]) -> DataFrame | None:
        """The given rows of the given files (DVs ignored), with the hidden row-id columns."""
        if sum(len(bits) for _, bits in rows.values()) > _MAX_ROWS_ASKED:
            return None
        snapshot = self._txn.snapshot()
        if snapshot is None:
            return None
        return physical_rows(self._spark, snapshot, rows, with_lineage=True)


def physical_rows(
    spark: SparkSession,
    snapshot: Snapshot,
    rows: Mapping[str, tuple[AddFile, BitMap64]],
    *,
    with_lineage: bool = False,
) -> DataFrame:
    """Exactly the given physical rows (path -> (file, row indexes)), whatever their DVs say.

    Without its DV a file shows every physical row; the row index picks the ones asked. The
    result keeps the snapshot's hidden row-id columns (:func:`snapshot_row_ids`), whose names
    never clash with the table's own (a user column may be called `_file`).
    """

    file_column, row_column = snapshot_row_ids(snapshot)
    files = tuple(replace(add, deletion_vector=None) for add, _ in rows.values())
    subset = replace(snapshot, files=files)
    df = scan_snapshot(spark, subset, with_row_ids=True, with_lineage=with_lineage)
    conditions = [
        (df[file_column] == add.path) & df[row_column].isin(list(bits))
        for add, bits in rows.values()
        if len(bits)
    ]
    return df.where(reduce(lambda a, b: a | b, conditions))
