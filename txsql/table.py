"""Table: a handle on one Delta table for Python callers (versions, history, reads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd
from sqlglot import exp

from txsql.dv.store import read_deletion_vector
from txsql.engine.scan import scan_snapshot
from txsql.errors import DataFileError
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.catalog import sql_string
from txsql.planner.context import RunContext
from txsql.planner.idempotent import AppWrite, StatementSkipped
from txsql.planner.operations.describe import history_dataframe
from txsql.planner.operations.lineage import row_lineage
from txsql.planner.operations.writes import append_dataframe
from txsql.planner.sql.nodes import table_ref
from txsql.planner.sql.refs import TableRef
from txsql.planner.sql.script import parse_statement, split_statements
from txsql.planner.table_changes import changes_dataframe
from txsql.planner.transaction_control import roll_forward
from txsql.streaming import foreach_batch_writer

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from txsql.result import Result


class Table:
    """A table addressed by name, ``delta.`/path``` or a plain path.

    Every read resolves the table afresh, so a handle always sees the newest version
    unless a version or timestamp is given.
    """

    def __init__(self, context: RunContext, name_or_path: str) -> None:
        # The session's run context (Spark, catalog, commit attempts), not the session:
        # a Table reads and appends, it never runs SQL statements.
        self._context = context
        self.ref = _parse_ref(name_or_path)
        self.name = self.ref.display

    @property
    def log(self) -> DeltaLog:
        return self._context.catalog.existing_log(self.ref)

    @property
    def location(self) -> str:
        return self._context.catalog.location(self.ref)

    def version(self) -> int:
        """The newest committed version."""
        roll_forward(self._context.catalog.warehouse)
        latest = self.log.latest_version()
        assert latest is not None
        return latest

    def snapshot(self, version: int | None = None, timestamp: str | None = None) -> Snapshot:
        ref = TableRef(
            name=self.ref.name,
            path=self.ref.path,
            version=version,
            timestamp=None if timestamp is None else sql_string(str(timestamp)),
        )
        # As every statement does: publish what a crashed group ratified, so a read never
        # sees one table of a committed multi-table transaction without the others.
        roll_forward(self._context.catalog.warehouse)
        return self._context.catalog.snapshot(ref, self._context.spark)

    def deleted_rows(self, path: str, version: int | None = None) -> list[int]:
        """Row positions of data file ``path`` (as the log names it) that its deletion
        vector marks deleted; empty when the file has none."""

        snapshot = self.snapshot(version)
        for add in snapshot.files:
            if add.path == path:
                if add.deletion_vector is None:
                    return []
                fs = self.log.store.fs
                bitmap = read_deletion_vector(add.deletion_vector, snapshot.table_root, fs)
                return [int(row) for row in bitmap]
        raise DataFileError(
            f"{self.name} has no data file {path!r} at version {snapshot.version}",
            hint="Take the path from snapshot().files (the log's relative path).",
        )

    def history(self, limit: int | None = None) -> DataFrame:
        """DESCRIBE HISTORY as a Spark DataFrame (newest first, Delta's column names)."""
        return history_dataframe(self._context.spark, self.log, limit)

    def changes(self, start: int | str | Any, end: int | str | Any | None = None) -> DataFrame:
        """The change data feed between two versions or timestamps (both inclusive).

        Rows: the table's columns plus ``_change_type`` (``insert``, ``delete``,
        ``update_preimage``, ``update_postimage``), ``_commit_version`` and
        ``_commit_timestamp``, as ``SELECT * FROM table_changes(...)`` returns them; on a
        table tracking rows, then ``_row_id`` and ``_row_commit_version``.
        """

        return changes_dataframe(self._context, self.ref, start, end)

    def lineage(self, where: str | None = None) -> pd.DataFrame:
        """Every version that changed the rows ``where`` picks now (a Spark SQL predicate;
        None: every row, up to 1,000), found by row id: columns ``row_id``, ``version``,
        ``timestamp``, ``operation``, ``before`` and ``after`` (the row's values as dicts,
        ``before`` None where the version inserted it). Needs row tracking
        (``delta.enableRowTracking``)."""
        return row_lineage(self._context, self.log, self.snapshot(), self.name, where)

    def to_spark(self, version: int | None = None, timestamp: Any = None) -> DataFrame:
        """The table's rows at the newest version, a version, or a timestamp."""
        return scan_snapshot(self._context.spark, self.snapshot(version, timestamp))

    def to_pandas(self, version: int | None = None, timestamp: Any = None) -> pd.DataFrame:
        return self.to_spark(version, timestamp).toPandas()

    def append(
        self,
        df: DataFrame | pd.DataFrame,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
    ) -> Result:
        """Append rows (a Spark or pandas DataFrame; columns matched by name) as one commit.

        A blind append (operation ``WRITE``, mode ``Append``) like ``INSERT INTO``. With
        ``app_id`` and ``app_version`` it is exactly-once: when the table already records
        that version of the app (or a newer one) nothing is written and the Result's
        ``message`` says so; otherwise the commit records it in a ``txn`` action.
        """
        app = AppWrite.from_args(app_id, app_version)
        base = self._context
        # Its own autocommit context: an append never joins a SQL BEGIN of the session.
        ctx = RunContext(base.spark, base.catalog, base.hooks, base.max_commit_attempts, app=app)

        if isinstance(df, pd.DataFrame):  # Spark infers the types; conforming casts them
            df = base.spark.createDataFrame(df)
        ctx.begin_statement()
        try:
            return append_dataframe(ctx, self.log, df, self.name)
        except StatementSkipped as skipped:
            return skipped.result(f"append to {self.name}", self.name)
        finally:
            ctx.end_statement()  # a failed append's files are deleted

    def app_version(self, app_id: str) -> int | None:
        """The last version ``app_id`` committed to this table (None if it never did)."""
        return self.log.snapshot().app_versions.get(app_id)

    def foreach_batch_writer(self, app_id: str) -> Callable[[DataFrame, int], None]:
        """A Structured Streaming ``foreachBatch`` function appending each batch once.

        ``app_id`` must stay the same across restarts of the query (one per query and
        table); the batch id is the app version, so a batch replayed after a restart is
        skipped.
        """
        return foreach_batch_writer(self, app_id)

    def __repr__(self) -> str:
        return f"<txsql.Table {self.name} at {self.location}>"


def _parse_ref(name_or_path: str) -> TableRef:
    text = name_or_path.strip()
    if text.startswith(("/", "file:", "./", "~")) or "://" in text:
        return TableRef(path=text)

    statement = split_statements(f"SELECT * FROM {text}")[0]
    select = parse_statement(statement, statement.text)
    table = select.find(exp.Table)
    assert table is not None
    return table_ref(table)
