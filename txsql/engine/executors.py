"""Can the executors run txsql? Checked once per SparkSession, before its first statement.

Executors run txsql code (deletion-vector expansion in scans, grouping deleted rows in
DML); on a cluster they are other processes on other machines, with their own Python.
If txsql is missing there, CREATE TABLE and INSERT would still work (only Spark's own
code runs on the executors) and the first DELETE would fail deep inside a Spark job. So
before the first statement of a session on a cluster, one tiny job imports txsql on an
executor; if that fails, the statement fails with :class:`ExecutorSetupError` saying how
to ship txsql, and nothing was written.

Local masters (``local``, ``local[N]``) are not checked: their Python workers are children
of the driver's JVM, started with the driver's Python and environment, so they import
the same txsql (and the check would cost a Spark job on every local session).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from txsql.engine.failures import typed_engine_error

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

# Sessions whose executors passed the check (or that need none). Weak: a stopped session
# must not be kept alive, and a new one is checked again.
_CHECKED: weakref.WeakSet[Any] = weakref.WeakSet()


def check_executors_import_txsql(spark: SparkSession) -> None:
    """Raise ExecutorSetupError if an executor of ``spark`` cannot import txsql.

    Runs one one-task job the first time it is called for a non-local session; later calls
    return at once. A failure is not remembered: after the user ships txsql (e.g.
    ``addPyFile``), the next statement checks again.
    """
    if spark in _CHECKED:
        return
    if _runs_locally(spark):
        _CHECKED.add(spark)
        return
    try:
        spark.range(1, numPartitions=1).mapInArrow(_import_txsql, "ok boolean").collect()
    except Exception as error:
        typed = typed_engine_error(error)
        if typed is None:
            raise
        raise typed from None
    _CHECKED.add(spark)


def _runs_locally(spark: SparkSession) -> bool:
    try:
        master = spark.conf.get("spark.master", None)
    except Exception:  # a Connect server may refuse to show it: then check, to be safe
        return False
    return master is not None and master.strip().lower().startswith("local")


def _import_txsql(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side. A module-level function, so Spark ships it by reference: unpickling it
    on the executor imports this module, which fails there without txsql. The imports
    below load what txsql's executor code needs (numpy, pyarrow, pyroaring)."""
    import numpy  # noqa: F401
    import pyarrow as pa

    import txsql.dv.store  # noqa: F401  (pyroaring: the DV expansion's modules)

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"ok": [True]})
