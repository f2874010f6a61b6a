"""txsql: transactional SQL for Spark notebooks on the open Delta Lake format."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from txsql import errors
from txsql.version import __version__

__all__ = [
    "Result",
    "Session",
    "Table",
    "__version__",
    "errors",
    "load_ipython_extension",
    "local_spark",
    "teaching",
]

if TYPE_CHECKING:
    from txsql.engine.spark import local_spark
    from txsql.result import Result
    from txsql.session import Session
    from txsql.table import Table


def __getattr__(name: str) -> Any:
    # Imported lazily so `txsql.log`, `txsql.dv`... stay importable without pyspark/sqlglot.
    if name == "Session":
        from txsql.session import Session

        return Session
    if name == "Table":
        from txsql.table import Table

        return Table
    if name == "local_spark":
        # txsql.local_spark(master="local[*]", app_name="txsql"): a quiet local SparkSession
        from txsql.engine.spark import local_spark

        return local_spark
    if name == "Result":
        from txsql.result import Result

        return Result
    if name == "teaching":  # Hermitage's anomalies, runnable (notebook 03)
        import txsql.teaching

        return txsql.teaching
    raise AttributeError(f"module 'txsql' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext txsql``: register the magics and start Spark in the background.

    When the notebook has no SparkSession and no Spark Connect remote is configured, a local
    session starts and warms in a thread now; the first ``%%txsql`` cell waits for it
    (set ``TXSQL_BACKGROUND_START=0`` to start Spark only when a statement needs it).
    """
    from txsql.magics import register
    from txsql.magics.magic import TxSqlMagics

    register(ipython)
    magics = ipython.magics_manager.registry.get(TxSqlMagics.__name__)
    if isinstance(magics, TxSqlMagics):
        magics.start_spark_in_background()
