"""The transaction's row-predicate hook, evaluated by Spark.

When a concurrent winner added files whose partition values and stats may satisfy our
read predicate, the conflict checker asks: does any live row of those files actually
satisfy it? Spark answers by scanning just those files (deletion vectors applied) with the
predicate's SQL and fetching at most one row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from txsql.log.actions import AddFile
from txsql.log.predicates import Predicate, to_sql
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
        from txsql.engine.scan import scan_snapshot

        try:
            rows = scan_snapshot(self._spark, replace(snapshot, files=tuple(files)))
            return bool(rows.where(to_sql(predicate)).limit(1).collect())
        except Exception:
            logger.debug("row check failed; assuming a match", exc_info=True)
            return True
