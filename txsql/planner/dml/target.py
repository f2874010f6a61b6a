"""The target of a row-level DML statement: its transaction, snapshot, predicate and rows.

DELETE and UPDATE (and EXPLAIN of them) share this: resolve the table, refuse time travel,
open the statement's transaction (the explicit one inside BEGIN), model the WHERE clause,
plan which files to read, and build the Spark DataFrame of matching rows with their
``_file`` / ``_row_index``. Spark evaluates the WHERE clause (subqueries included).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from txsql.engine.scan import scan_snapshot
from txsql.errors import (
    CommitConflictError,
    CommitRetriesExceededError,
    SqlError,
    TableNotFoundError,
)
from txsql.log import features
from txsql.log.actions import AddFile
from txsql.log.predicates import Predicate, is_deterministic
from txsql.log.snapshot import Snapshot
from txsql.planner.context import RunContext
from txsql.planner.dml.reads import substitute_tables
from txsql.planner.dml.rewrite import commit_result
from txsql.planner.frames import Frames
from txsql.planner.metrics import OperationMetrics
from txsql.planner.sql.predicates import FilePlan, plan_files, predicate_sql, to_predicate
from txsql.planner.sql.refs import TableRef
from txsql.result import Result
from txsql.txn.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class DmlTarget:
    """A resolved DML target.

    Attributes:
        ref: The table as named.
        alias: The name the statement's expressions use for it (alias or table name).
        snapshot: What the statement reads (staged writes included inside BEGIN).
        txn: The transaction to stage into (None when only explaining).
        condition: The WHERE clause (None: every row).
        predicate: ``condition`` in the predicate model.
    """

    ctx: RunContext
    ref: TableRef
    alias: str
    snapshot: Snapshot
    txn: Transaction | None
    condition: exp.Expr | None
    predicate: Predicate

    @property
    def display(self) -> str:
        return self.ref.display

    def condition_sql(self) -> list[str]:
        """The condition as Delta records it in operationParameters (``[]`` for none)."""
        text = predicate_sql(self.condition, self.snapshot.schema_json, self.qualifiers)
        return [] if text is None else [text]

    @property
    def qualifiers(self) -> tuple[str, ...]:
        names = [self.alias]
        if self.ref.name:
            names.append(self.ref.name.split(".")[-1])
        return tuple(names)

    def rows_repeatable(self) -> bool:
        """Whether evaluating the WHERE clause again over the snapshot surely matches the
        same rows: deterministic in the predicate model (no subquery, no random or clock
        function) and calling no function txsql does not know (a UDF may be random)."""
        if self.condition is None:
            return True
        if not is_deterministic(self.predicate):
            return False
        return not any(isinstance(f, exp.Anonymous) for f in self.condition.find_all(exp.Func))

    def plan(self, *, whole_files: bool) -> FilePlan:
        return plan_files(self.snapshot, self.predicate, whole_files=whole_files)

    def matching_rows(
        self,
        files: Sequence[AddFile],
        extra: Sequence[tuple[str, exp.Expr]] = (),
        *,
        with_lineage: bool = False,
    ) -> DataFrame:
        """Rows of ``files`` satisfying the condition: all columns, ``_file``, ``_row_index``
        (and with lineage the stable row id columns before them, see ``scan_snapshot``).

        ``extra`` adds named expressions (UPDATE's SET values) evaluated on the same rows.
        """
        spark = self.ctx.spark
        frames = Frames()
        subset = replace(self.snapshot, files=tuple(files))
        scan = scan_snapshot(spark, subset, with_row_ids=True, with_lineage=with_lineage)
        table = frames.bind(scan, self.alias)
        columns: list[exp.Expr] = [exp.Star()]
        columns += [exp.alias_(value.copy(), name, quoted=True) for name, value in extra]
        query = exp.select(*columns).from_(table)
        if self.condition is not None:
            query = query.where(self.condition.copy())
        rewritten, _ = substitute_tables(self.ctx, query, frames, self.txn)
        return frames.sql(spark, rewritten)


def open_target(
    ctx: RunContext,
    ref: TableRef,
    alias: str | None,
    condition: exp.Expr | None,
    operation: str,
    *,
    explain: bool = False,
) -> DmlTarget:
    """Resolve ``ref`` for ``operation``; with ``explain`` no transaction is opened.

    Raises:
        SqlError: For a time-travel target.
        TableNotFoundError: If the table does not exist.
        UnsupportedFeatureError: If txsql cannot write the table's protocol.
    """
    if ref.version is not None or ref.timestamp is not None:
        raise SqlError(
            f"{operation} cannot change a time-travel reference ({ref.display} "
            f"{'VERSION' if ref.version is not None else 'TIMESTAMP'} AS OF ...)",
            hint=f"{operation} the current table: drop VERSION/TIMESTAMP AS OF. To go back "
            "to an old version, use RESTORE TABLE.",
        )
    log = ctx.catalog.existing_log(ref)
    txn: Transaction | None = None
    if explain:
        snapshot = ctx.snapshot(ref)
    else:
        txn = ctx.transaction(log)
        current = txn.current_snapshot()
        if current is None:
            raise TableNotFoundError(f"table {ref.display} has no committed version yet")
        snapshot = current
    features.check_writable(snapshot.protocol, snapshot.metadata, existing=snapshot.metadata)
    name = alias or (ref.name.split(".")[-1] if ref.name else "t")
    qualifiers = [name] + ([ref.name.split(".")[-1]] if ref.name else [])
    predicate = to_predicate(condition, snapshot.schema_json, qualifiers)
    return DmlTarget(ctx, ref, name, snapshot, txn, condition, predicate)


def commit_dml(
    target: DmlTarget,
    text: str,
    operation: str,
    parameters: dict[str, Any],
    metrics: OperationMetrics,
    cleanup: Callable[[], None],
) -> Result:
    """Commit (or stage inside BEGIN) and describe the outcome as a :class:`Result`.

    ``cleanup`` deletes the files the statement wrote; it runs only when the commit
    certainly did not land (a conflict or too many retries), never after a commit.
    """
    assert target.txn is not None
    try:
        committed = target.ctx.commit(target.txn, operation, parameters, metrics.delta())
    except (CommitConflictError, CommitRetriesExceededError):
        cleanup()
        raise
    return commit_result(
        text, target.display, operation, committed, target.txn.read_version, metrics.shown()
    )
