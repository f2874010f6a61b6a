"""Deletion vectors in a scan: drop the deleted rows of the files that have a DV.

Rows are matched on one long key ``crc32(_metadata.file_path) << 32 | row_index`` when the
scanned files' CRCs are distinct (checked on the driver), else on (path, row index).

* Up to ``_LITERAL_KEYS`` deleted rows, the driver reads the bitmaps (well under a
  millisecond per DV) and the scan is filtered by ``NOT (key IN (k1, k2, ...))``, one SQL
  text Spark turns into a hash-set ``InSet``: no join, no broadcast, so no Spark job of its
  own (a DELETE of one row after earlier DELETEs stays one job).
* Above it, an anti-join (broadcast) with the deleted keys. Up to
  ``_DRIVER_EXPANSION_ROWS`` the driver expands them into an Arrow table: kept as local
  rows in the plan up to ``_LOCAL_RELATION_ROWS``, local-checkpointed above (a DataFrame of
  local rows carries them in its plan, and every query re-analyses them); above, a
  ``mapInArrow`` expands them on the executors, each task reading its DV files itself and
  the result cached in Spark. The expanded keys are kept per (session, files, DV ids).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.dv.store import read_deletion_vector
from txsql.engine.failures import typed_engine_error
from txsql.engine.scan_cache import DeletedRowsCache
from txsql.engine.scan_files import ScanFile, ScanHelpers, ScanLayout, row_keys, sql_long
from txsql.engine.schema import quote
from txsql.storage.factory import file_io_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Deleted rows up to which the filter is a literal IN set: parsing and analysing the SQL
# text (once per planned scan) grows with the keys and passes the cost of the broadcast
# job it replaces at about this many (benchmarks/README.md, "Literal IN set vs anti-join").
_LITERAL_KEYS = 1000
# DV files per expansion task: enough to amortise a Python task, few enough to parallelise.
_DVS_PER_TASK = 32
# Deleted rows up to which the driver's keys stay a local relation in the plan: its
# broadcast runs no job, while a checkpoint costs one. Above, re-analysing the rows in
# every query costs more than the checkpoint (benchmarks/README.md, "Where the deleted-row
# keys are expanded").
_LOCAL_RELATION_ROWS = 100_000
# Deleted rows up to which the driver expands DVs itself (8 bytes each, for one moment):
# beyond it the expansion runs on the executors, so driver memory stays bounded.
_DRIVER_EXPANSION_ROWS = 1_000_000

_DV_CACHE = DeletedRowsCache()


def drop_deleted(
    spark: SparkSession, df: DataFrame, files: list[ScanFile], root: str, layout: ScanLayout
) -> DataFrame:
    """``df`` (with the helper columns ``key`` and ``row``) without the deleted rows of
    ``files``."""
    h, long_keys = layout.helpers, layout.long_keys
    names = (h.dv_key, h.dv_path, h.dv_row)
    cardinality = sum(_dv(f).cardinality for f in files)
    if long_keys and cardinality <= _LITERAL_KEYS:
        keys = _expand_on_driver(files, root, True, names).column(0).to_numpy()
        if len(keys) == 0:
            return df
        listed = ", ".join(sql_long(int(k)) for k in keys)
        # SQL text: one call to the JVM, where a Column costs one per function.
        return df.filter(f"NOT ({_row_key_sql(h)} IN ({listed}))")
    rows = _deleted_rows(spark, files, root, long_keys, cardinality, names)
    if long_keys:
        return df.join(F.broadcast(rows), F.col(h.dv_key) == _row_key(h), "left_anti")
    cond = (F.col(h.key) == F.col(h.dv_path)) & (F.col(h.row) == F.col(h.dv_row))
    return df.join(F.broadcast(rows), cond, "left_anti")


def _deleted_rows(
    spark: SparkSession,
    files: list[ScanFile],
    root: str,
    long_keys: bool,
    cardinality: int,
    names: tuple[str, str, str],
) -> DataFrame:
    """The deleted-row keys of ``files`` as a cached DataFrame (expanded now, not lazily)."""
    cache_key = (
        id(spark),
        root,
        long_keys,
        names,
        tuple((f.spark_path, f.add.dv_id) for f in files),
    )
    rows = _DV_CACHE.get(cache_key)
    if rows is not None:
        return rows
    if cardinality <= _DRIVER_EXPANSION_ROWS:
        table = _expand_on_driver(files, root, long_keys, names)
        local = spark.createDataFrame(table)
        if cardinality > _LOCAL_RELATION_ROWS:
            # Checkpointed: a DataFrame made from local data carries the rows in its plan,
            # and every later query would re-analyse them.
            local = local.localCheckpoint(eager=True)
        return _DV_CACHE.put(cache_key, local, cardinality, persist=False)
    source = spark.createDataFrame(_descriptor_table(files))
    tasks = min(len(files) // _DVS_PER_TASK + 1, 64)
    if tasks > 1:
        source = source.repartition(tasks)
    dv_key, dv_path, dv_row = names
    if long_keys:
        out = StructType([StructField(dv_key, LongType(), False)])
    else:
        out = StructType(
            [StructField(dv_path, StringType(), False), StructField(dv_row, LongType(), False)]
        )
    rows = source.mapInArrow(_expander(root, long_keys, names), out)
    rows = _DV_CACHE.put(cache_key, rows, cardinality)
    if _DV_CACHE.get(cache_key) is rows:
        _expand_now(rows, cache_key)
    return rows


def _expand_now(rows: DataFrame, cache_key: tuple[Any, ...]) -> None:
    """Fill the cache entry now, so a damaged DV file fails the statement with a typed error.

    Left lazy, the expansion would run inside the user's first action on the result and
    surface as a raw worker exception there. The broadcast anti-join needs every deleted
    row anyway, so expanding now adds one small job, no extra reading.
    """
    try:
        rows.count()
    except Exception as e:
        _DV_CACHE.discard(cache_key)
        typed = typed_engine_error(e)
        if typed is None:
            raise
        raise typed from None


def _descriptor_table(files: Sequence[ScanFile]) -> pa.Table:
    """The DV descriptors of ``files`` as rows, the input of the executor expansion."""
    return pa.table(
        {
            "path": [f.spark_path for f in files],
            "storage_type": [_dv(f).storage_type for f in files],
            "dv": [_dv(f).path_or_inline_dv for f in files],
            "offset": pa.array([_dv(f).offset for f in files], pa.int32()),
            "size": pa.array([_dv(f).size_in_bytes for f in files], pa.int32()),
            "cardinality": pa.array([_dv(f).cardinality for f in files], pa.int64()),
        }
    )


def _expand_on_driver(
    files: Sequence[ScanFile], root: str, long_keys: bool, names: tuple[str, str, str]
) -> pa.Table:
    """The deleted-row keys of ``files`` as an Arrow table, read by the driver itself.

    Below ``_DRIVER_EXPANSION_ROWS`` deleted rows this beats the executor expansion by the
    whole Python stage (a Spark job with Python workers, 0.4-0.6 s on ``local[2]``): the
    bitmaps are small and read in well under a millisecond each. A damaged DV raises its
    typed error here, before any Spark job starts.
    """
    fs = file_io_for(root)
    dv_key, dv_path, dv_row = names
    chunks: list[np.ndarray] = []
    paths: list[str] = []
    for f in files:
        rows = np.asarray(read_deletion_vector(_dv(f), root, fs).to_array(), dtype=np.int64)
        if long_keys:
            rows = row_keys(f.crc, rows)
        else:
            paths += [f.spark_path] * len(rows)
        chunks.append(rows)
    keys = pa.array(np.concatenate(chunks) if chunks else np.empty(0, np.int64), pa.int64())
    if long_keys:
        return pa.table({dv_key: keys})
    return pa.table({dv_path: pa.array(paths, pa.string()), dv_row: keys})


def _dv(f: ScanFile) -> DeletionVectorDescriptor:
    assert f.add.deletion_vector is not None  # only files with DVs reach the DV filter
    return f.add.deletion_vector


def _row_key(h: ScanHelpers) -> Column:
    # crc32 < 2**32 and row indexes < 2**32, so (crc << 32) | row is injective.
    return F.shiftleft(F.col(h.key), 32).bitwiseOR(F.col(h.row))


def _row_key_sql(h: ScanHelpers) -> str:
    """:func:`_row_key` as SQL text (the same wrap-around of a high CRC into the sign bit)."""
    return f"(shiftleft({quote(h.key)}, 32) | {quote(h.row)})"


def _expander(
    root: str, long_keys: bool, names: tuple[str, str, str]
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function turning DV descriptors into deleted-row keys (executor side).

    The FileIO travels in the closure: an object-store one pickles as its settings and
    reconnects on the executor, which never touches the driver's disk.
    """
    fs = file_io_for(root)

    def expand(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Imported where this runs: in Spark's Python worker.
        import numpy as np

        from txsql.dv.descriptor import DeletionVectorDescriptor
        from txsql.dv.store import read_deletion_vector

        dv_key, dv_path, dv_row = names
        for batch in batches:
            cols = batch.to_pydict()
            for i in range(batch.num_rows):
                descriptor = DeletionVectorDescriptor(
                    cols["storage_type"][i],
                    cols["dv"][i],
                    cols["size"][i],
                    cols["cardinality"][i],
                    cols["offset"][i],
                )
                rows = np.asarray(
                    read_deletion_vector(descriptor, root, fs).to_array(), dtype=np.int64
                )
                path = cols["path"][i]
                if long_keys:
                    keys = row_keys(zlib.crc32(path.encode("utf-8")), rows)
                    yield pa.RecordBatch.from_arrays([pa.array(keys)], names=[dv_key])
                else:
                    paths = pa.array([path] * len(rows), pa.string())
                    yield pa.RecordBatch.from_arrays(
                        [paths, pa.array(rows)], names=[dv_path, dv_row]
                    )

    return expand
