"""What running a statement returns: the same object for the magic, the API and tests."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from txsql.engine.spark_errors import quiet_spark_errors, statement_error
from txsql.errors import TxSqlError

_ARROW_FAILED = r"toPandas attempted Arrow optimization .* has reached the error below"


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
            It is Spark's own object: its errors are Spark's. :meth:`collect`,
            :meth:`take`, :meth:`to_pandas` and :meth:`show` fetch the same rows and raise
            typed :mod:`txsql.errors` instead.
        elapsed_ms: wall time of the statement.
        parameters: the ``:name`` values bound into the statement (named by its errors).
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
    parameters: dict[str, Any] = field(default_factory=dict, repr=False)

    def collect(self) -> list[Any]:
        """The rows as Spark ``Row`` objects (a one-row metrics list for commits)."""
        if self.df is None:
            return [self._metrics_row()]
        with self.typed_errors():
            return list(self.df.collect())

    def take(self, n: int) -> list[Any]:
        """The first ``n`` rows (one Spark job, no more rows read than needed)."""
        if self.df is None:
            return [self._metrics_row()][:n]
        with self.typed_errors():
            return list(self.df.take(n))

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (a one-row metrics frame for commits)."""
        if self.df is not None:
            with self.typed_errors(), warnings.catch_warnings():
                # PySpark warns with the whole Spark error before raising it: the typed
                # error raised instead says it once.
                warnings.filterwarnings("ignore", _ARROW_FAILED, UserWarning)
                return self.df.toPandas()
        # Deferred: %load_ext imports this module and must not wait for pandas.
        import pandas as pd

        return pd.DataFrame([self.metrics])

    def show(self, n: int = 20, truncate: bool | int = True, vertical: bool = False) -> None:
        """Print the first ``n`` rows as Spark's ``DataFrame.show`` does (commits: metrics)."""
        if self.df is None:
            print(self.to_pandas().to_string(index=False))
            return
        with self.typed_errors():
            self.df.show(n, truncate, vertical)

    @contextlib.contextmanager
    def typed_errors(self, line: int = 1, column: int = 1) -> Iterator[None]:
        """Raise what fails in the block (fetching this result's rows) as a typed
        :mod:`txsql.errors` error, positioned in the statement starting at ``line``/``column``.

        Rows are computed only when fetched, so a bad cast, a division by zero or a data
        file VACUUM deleted surfaces here, not when the statement ran. Spark's own log
        record of the error is kept off the console: the typed error says it all.
        """

        try:
            with quiet_spark_errors():
                yield
        except TxSqlError:
            raise
        except Exception as e:
            raise statement_error(
                e,
                self.statement,
                line,
                column,
                parameters=self.parameters,
                read_version=self.version if self.df is not None else None,
                fetching=True,
            ) from None

    def _metrics_row(self) -> Any:
        # Deferred: %load_ext imports this module and must not wait for pyspark.
        from pyspark.sql import Row

        return Row(**self.metrics)

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
