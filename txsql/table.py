"""Table: a handle on one Delta table for Python callers (versions, history, reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from txsql.engine.scan import scan_snapshot
from txsql.log.deltalog import DeltaLog
from txsql.log.snapshot import Snapshot
from txsql.planner.build import table_ref
from txsql.planner.catalog import sql_string
from txsql.planner.history import history_dataframe
from txsql.planner.script import parse_statement, split_statements
from txsql.planner.statements import TableRef

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from txsql.session import Session


class Table:
    """A table addressed by name, ``delta.`/path``` or a plain path.

    Every read resolves the table afresh, so a handle always sees the newest version
    unless a version or timestamp is given.
    """

    def __init__(self, session: Session, name_or_path: str) -> None:
        self._session = session
        self.ref = _parse_ref(name_or_path)
        self.name = self.ref.display

    @property
    def log(self) -> DeltaLog:
        return self._session.catalog.existing_log(self.ref)

    @property
    def location(self) -> str:
        return self._session.catalog.location(self.ref)

    def version(self) -> int:
        """The newest committed version."""
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
        return self._session.catalog.snapshot(ref, self._session.spark)

    def history(self, limit: int | None = None) -> DataFrame:
        """DESCRIBE HISTORY as a Spark DataFrame (newest first, Delta's column names)."""
        return history_dataframe(self._session.spark, self.log, limit)

    def to_spark(self, version: int | None = None, timestamp: Any = None) -> DataFrame:
        """The table's rows at the newest version, a version, or a timestamp."""
        return scan_snapshot(self._session.spark, self.snapshot(version, timestamp))

    def to_pandas(self, version: int | None = None, timestamp: Any = None) -> pd.DataFrame:
        return self.to_spark(version, timestamp).toPandas()

    def __repr__(self) -> str:
        return f"<txsql.Table {self.name} at {self.location}>"


def _parse_ref(name_or_path: str) -> TableRef:
    text = name_or_path.strip()
    if text.startswith(("/", "file:", "./", "~")) or "://" in text:
        return TableRef(path=text)
    from sqlglot import exp

    statement = split_statements(f"SELECT * FROM {text}")[0]
    select = parse_statement(statement, statement.text)
    table = select.find(exp.Table)
    assert table is not None
    return table_ref(table)
