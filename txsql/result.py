"""What running a statement returns: the same object for the magic, the API and tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Result:
    """The outcome of one statement.

    Attributes:
        statement: the SQL text that ran.
        operation: Delta's operation name (``WRITE``, ``CREATE TABLE``...) or ``SELECT``.
        version: the version committed (DML/DDL) or read (single-table queries).
        read_version: the snapshot version a commit was based on.
        metrics: Databricks-style counters (``num_affected_rows``, ``num_inserted_rows``).
        operation_metrics: Delta's commitInfo ``operationMetrics``.
        df: the result rows as a Spark DataFrame (lazy), when the statement returns rows.
        elapsed_ms: wall time of the statement.
    """

    statement: str
    operation: str
    version: int | None = None
    read_version: int | None = None
    table: str | None = None
    metrics: dict[str, int] = field(default_factory=dict)
    operation_metrics: dict[str, str] = field(default_factory=dict)
    df: Any = None
    elapsed_ms: float = 0.0
    message: str = ""

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (a one-row metrics frame for commits)."""
        if self.df is not None:
            from txsql.engine.failures import typed_engine_error

            try:
                return self.df.toPandas()
            except Exception as e:  # a damaged data file surfaces only when rows are read
                typed = typed_engine_error(e)
                if typed is None:
                    raise
                typed.locate(self.statement, 1, 1)
                raise typed from None
        import pandas as pd

        return pd.DataFrame([self.metrics])

    def __repr__(self) -> str:
        parts = [self.operation]
        if self.table:
            parts.append(self.table)
        if self.version is not None:
            parts.append(f"version={self.version}")
        parts.extend(f"{k}={v}" for k, v in self.metrics.items())
        if self.message:
            parts.append(f"({self.message})")
        return f"<Result {' '.join(parts)}>"
