"""What a MERGE read, for the conflict check, and the Spark hook that judges winners.

A MERGE reads "the target rows that join with our source under ON" (plus, for WHEN NOT
MATCHED BY SOURCE clauses, the unmatched target rows those clauses' conditions select).
:func:`record_merge_read` records that as a :class:`~txsql.txn.join_read.JoinRead` with a
:class:`SourceRows` handle, and installs :class:`SparkJoinChecker` on the transaction.
When a concurrent commit wins, the checker semi-joins the winner's added rows (or a
removed file as we read it) with our source under ON: a conflict only if a row joins.

The handle keeps only the source columns ON reads, captured while the MERGE's source is
persisted (the MERGE's source-count job fills both caches), so the check sees exactly the
source the MERGE saw (a temp view replaced later, or a non-deterministic source, does not
change it). They stay persisted by Spark until the transaction is dropped, and are
released at the next statement boundary after that.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pyroaring import BitMap64
from pyspark.sql import functions as F
from pyspark.storagelevel import StorageLevel
from sqlglot import exp

from txsql.engine.releases import release_later
from txsql.engine.scan import scan_snapshot, snapshot_row_ids
from txsql.log.actions import AddFile
from txsql.log.predicates import TRUE, Predicate
from txsql.planner.dml.row_check import physical_rows
from txsql.planner.operations.merge.plan import MergePlan
from txsql.planner.sql.predicates import to_predicate
from txsql.planner.sql.statements import NOT_MATCHED_BY_SOURCE, Merge
from txsql.txn.readset import JoinRead
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from txsql.log.snapshot import Snapshot

logger = logging.getLogger(__name__)

_ANY = "__txsql_any"  # the one column kept when ON reads no source column


class SourceRows:
    """The MERGE source's ON columns as the statement saw them (persisted by Spark)."""

    def __init__(self, schema: StructType, kept: DataFrame) -> None:
        self.schema = schema
        self.kept = kept
        # Release the cached rows once the transaction (and its read set) is gone: queued,
        # because a finalizer may run inside another Py4J call (see engine/releases.py).
        weakref.finalize(self, release_later, kept.unpersist)

    @classmethod
    def capture(cls, source: DataFrame, columns: Sequence[str], persist: bool = True) -> SourceRows:
        """Keep ``columns`` of ``source`` (which must be persisted or checkpointed: read
        once).

        Lazy: the caller materializes :attr:`kept` by running a job over it while the
        source is still persisted (the MERGE's source count does), so no job of its own.
        ``persist=False`` for a checkpointed source: its stored rows never change, and the
        copy would cost a job. Rows are not de-duplicated: that would add a shuffle, and a
        semi-join does not care.
        """

        if columns:
            keys = source.select(*[F.col(_quoted(c)) for c in columns])
        else:  # ON reads no source column: only whether the source has rows matters
            keys = source.select(F.lit(True).alias(_ANY))
        return cls(keys.schema, keys.persist(StorageLevel.MEMORY_AND_DISK) if persist else keys)

    def dataframe(self, spark: SparkSession) -> DataFrame:
        del spark
        return self.kept


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class SparkJoinChecker:
    """``join_checker`` for a transaction: Spark semi-joins rows with a MERGE's source.

    Args:
        spark: The session to scan with.
        snapshot: The transaction's read snapshot: schema and partitioning to scan with (a
            winner that changed them conflicts before any join check). Holding it rather
            than the transaction keeps the transaction free of a reference cycle.
    """

    def __init__(self, spark: SparkSession, snapshot: Snapshot) -> None:
        self._spark = spark
        self._snapshot = snapshot

    def __call__(self, join: JoinRead, files: Sequence[AddFile]) -> bool:
        """Whether a live row of ``files`` joins with ``join``'s source (True if unsure)."""
        if not files:
            return False
        snapshot = self._snapshot
        source = join.source
        if not isinstance(source, SourceRows):
            return True

        try:
            target = scan_snapshot(self._spark, replace(snapshot, files=tuple(files)))
            rows = source.dataframe(self._spark)
            joined = target.alias(join.target_alias).join(
                rows.alias(join.source_alias), F.expr(join.on), "left_semi"
            )
            return bool(joined.limit(1).collect())
        except Exception:
            logger.debug("join check failed; assuming a match", exc_info=True)
            return True

    def rows_join(self, join: JoinRead, rows: Mapping[str, tuple[AddFile, BitMap64]]) -> bool:
        """Whether one of the given physical rows joins with the source (True if unsure)."""
        if not any(len(bits) for _, bits in rows.values()):
            return False
        source = join.source
        if not isinstance(source, SourceRows):
            return True

        try:
            target = physical_rows(self._spark, self._snapshot, rows).drop(
                *snapshot_row_ids(self._snapshot)
            )
            joined = target.alias(join.target_alias).join(
                source.dataframe(self._spark).alias(join.source_alias),
                F.expr(join.on),
                "left_semi",
            )
            return bool(joined.limit(1).collect())
        except Exception:
            logger.debug("join check of specific rows failed; assuming a match", exc_info=True)
            return True


def record_merge_read(
    spark: SparkSession,
    txn: Transaction,
    merge: Merge,
    plan: MergePlan,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    source: SourceRows | None,
    matched: Mapping[str, BitMap64] | None,
) -> None:
    """Record what the MERGE read: its join with the source, and what NMBS clauses saw.

    Args:
        spark: The session (for the hook).
        txn: The transaction to record into.
        merge: The statement (NOT MATCHED BY SOURCE conditions).
        plan: The resolved MERGE.
        snapshot: The target as read.
        files: The target files the MERGE read.
        source: The captured source; None when ON is non-deterministic (no exact check:
            the MERGE is recorded as reading every file it read, as before).
        matched: Rows matched or changed per file; None when unknown (insert-only).
    """
    target_filter = target_predicate(plan, snapshot)
    if source is None:
        txn.record_scan(TRUE if plan.join in ("left", "full") else target_filter, files, matched)
        return
    join = JoinRead(plan.on, plan.target_alias, plan.source_alias, target_filter, (), source)
    txn.record_join(replace(join, files=tuple(files)), matched)
    if txn.join_checker is None:
        read_snapshot = txn.snapshot()
        assert read_snapshot is not None  # a MERGE target has a committed version
        txn.join_checker = SparkJoinChecker(spark, read_snapshot)
    by_source = by_source_predicate(merge, plan, snapshot)
    if by_source is not None:
        # Unmatched target rows that a NOT MATCHED BY SOURCE clause could see: a predicate
        # read (new rows satisfying it would have been seen; deletes of rows it acted on
        # conflict through the matched rows, which include them).
        txn.record_scan(by_source, files, matched)


def target_predicate(plan: MergePlan, snapshot: Snapshot) -> Predicate:
    """ON's target-only conjuncts as a predicate (``TRUE`` if none)."""
    if plan.target_filter is None:
        return TRUE
    return to_predicate(plan.target_filter, snapshot.schema_json)


def by_source_predicate(merge: Merge, plan: MergePlan, snapshot: Snapshot) -> Predicate | None:
    """OR of the NOT MATCHED BY SOURCE conditions (``TRUE`` if one has none); None: no
    such clause. The conditions read only target columns (bare or target-qualified)."""
    conditions = [c.condition for c in merge.clauses if c.match == NOT_MATCHED_BY_SOURCE]
    if not conditions:
        return None
    if any(c is None for c in conditions):
        return TRUE
    either = exp.or_(*(exp.paren(c.copy()) for c in conditions if c is not None))
    qualifiers = {plan.target_alias, (merge.target.name or "").split(".")[-1]}
    return to_predicate(either, snapshot.schema_json, tuple(q for q in qualifiers if q))


def capture_source(source: DataFrame, plan: MergePlan, persist: bool = True) -> SourceRows | None:
    """The handle for the conflict check (``persist`` as in :meth:`SourceRows.capture`),
    or None if ON is non-deterministic or the ON columns cannot be kept (e.g. a map
    column, which Spark cannot de-duplicate): then the MERGE is recorded as reading its
    files, as before join reads (never less safe)."""
    if not plan.on_deterministic:
        return None
    try:
        return SourceRows.capture(source, plan.source_columns, persist)
    except Exception:
        logger.debug("cannot keep the MERGE source for conflict checks", exc_info=True)
        return None


__all__ = [
    "SourceRows",
    "SparkJoinChecker",
    "by_source_predicate",
    "capture_source",
    "record_merge_read",
    "target_predicate",
]
