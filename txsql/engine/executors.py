"""What Spark's executors need from txsql: the package itself and the storage settings.

Executors run txsql code (deletion-vector expansion during scans, DV writes during DML)
and reach object stores through :mod:`txsql.storage` on their own: nothing there may
assume the driver's disk. Their FileIO travels in the task closure (an
:class:`~txsql.storage.objectstore.ObjectStoreFileIO` pickles as its resolved settings and
reconnects on the executor).

If txsql is not importable on the executors, the first statement fails with
:class:`~txsql.errors.ExecutorSetupError` saying how to ship it, instead of a Python
traceback from a worker deep inside a later statement.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from txsql.errors import ExecutorSetupError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

# Spark settings that configure object stores, passed to txsql.storage (lowest precedence).
HADOOP_PREFIXES = (
    "spark.hadoop.fs.s3a.",
    "spark.hadoop.fs.azure.",
    "spark.hadoop.fs.gs.",
    "spark.hadoop.google.cloud.",
)
_CHECKED: set[int] = set()
_CHECKED_LOCK = threading.Lock()
MISSING_MODULE = "No module named 'txsql'"


def hadoop_storage_conf(spark: SparkSession) -> dict[str, str]:
    """The session's object-store settings from its Hadoop configuration (may be empty)."""
    try:
        settings = dict(spark.conf.getAll)
    except Exception:  # an older or remote conf without getAll: nothing to inherit
        return {}
    return {k: str(v) for k, v in settings.items() if k.startswith(HADOOP_PREFIXES)}


def _probe(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    # Unpickling this function on an executor imports txsql: that import is the check.
    yield from batches


def check_executors_import_txsql(spark: SparkSession) -> None:
    """Run one tiny task whose code lives in txsql; once per session, not in local mode.

    Raises:
        ExecutorSetupError: the executors' Python cannot import txsql.
    """
    key = id(spark)
    with _CHECKED_LOCK:
        if key in _CHECKED:
            return
    try:
        master = str(spark.conf.get("spark.master", "local"))
    except Exception:
        master = "remote"
    if master.startswith("local"):
        with _CHECKED_LOCK:
            _CHECKED.add(key)
        return  # local workers run with the driver's own Python path
    try:
        spark.range(1).mapInArrow(_probe, "id long").collect()
    except Exception as exc:
        if MISSING_MODULE in str(exc):
            raise ExecutorSetupError(
                f"Spark's executors (master {master}) cannot import txsql"
            ) from None
        raise
    with _CHECKED_LOCK:
        _CHECKED.add(key)
