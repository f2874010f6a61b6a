"""Dropping DV-deleted target rows after MERGE's join, in the JVM.

MERGE scans the target ignoring its deletion vectors (no DV expansion, no anti-join over
every target row) and drops the joined rows of deleted target rows after the join, where
only the few rows that met a source row remain (:func:`~txsql.planner.operations.merge.
execute.late_dv_filter` says when that is exact). The driver reads the DVs (per-file
bitmaps, as DML does anyway) and turns each into 32768-row buckets of 512 longs, one bit a
row, only for buckets holding a deleted row; a broadcast left join on (file, bucket) and a
bit test keep the live rows. No Python worker: the former filter, a pandas UDF on
``(_file, _row_index)``, paid a Python round trip per scan task.

A small target with few deleted rows (``literals``) is filtered by a literal ``IN`` set of
their long keys instead (:func:`~txsql.planner.dml.live_rows.drop_deleted_by_literals`): no
broadcast, so no Spark job. Spark pushes that filter below the join into the target scan
(it reads target columns only), where it costs a CRC per row: fine for a small target,
not for a big one, which keeps the broadcast join.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F

from txsql.dv.store import read_deletion_vector
from txsql.log.actions import AddFile
from txsql.planner.dml.live_rows import drop_deleted_by_literals
from txsql.storage.factory import file_io_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_BUCKET_ROWS = 32768  # rows per bucket: 512 longs of 64 bits
_TAG = uuid.uuid4().hex[:8]
_PATH = f"__txsql_dv_path_{_TAG}"
_BUCKET = f"__txsql_dv_bucket_{_TAG}"
_WORDS = f"__txsql_dv_words_{_TAG}"


def deleted_buckets(root: str, files: Sequence[AddFile]) -> pa.Table | None:
    """(path, bucket, words) of every 32768-row bucket with a deleted row; None: no DV."""
    fs = file_io_for(root)
    paths: list[str] = []
    buckets: list[np.ndarray] = []
    words: list[np.ndarray] = []
    for add in files:
        if add.deletion_vector is None:
            continue
        rows = np.asarray(read_deletion_vector(add.deletion_vector, root, fs).to_array())
        rows = rows.astype(np.int64)
        if not len(rows):
            continue
        numbers = rows // _BUCKET_ROWS
        present = np.unique(numbers)
        flags = np.zeros((len(present), _BUCKET_ROWS), dtype=bool)
        flags[np.searchsorted(present, numbers), rows % _BUCKET_ROWS] = True
        # Little-endian bits in little-endian longs: bit j of word w is row 64 * w + j.
        packed = np.packbits(flags, axis=1, bitorder="little").view("<i8")
        paths.extend([add.path] * len(present))
        buckets.append(present)
        words.append(packed)
    if not paths:
        return None
    flat = np.concatenate(words).reshape(-1)
    offsets = np.arange(0, len(flat) + 1, _BUCKET_ROWS // 64, dtype=np.int32)
    return pa.table(
        {
            _PATH: pa.array(paths, pa.string()),
            _BUCKET: pa.array(np.concatenate(buckets), pa.int64()),
            _WORDS: pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.int64())),
        }
    )


def drop_deleted_joined(
    spark: SparkSession,
    df: DataFrame,
    root: str,
    files: Sequence[AddFile],
    file_column: str,
    row_column: str,
    *,
    literals: bool = False,
) -> DataFrame:
    """``df`` without the rows whose (``file_column``, ``row_column``) a DV of ``files``
    deletes. Both columns must be non-NULL (target rows of an inner or left join).
    ``literals``: try the literal ``IN`` filter first (small targets only)."""

    if literals:
        filtered = drop_deleted_by_literals(df, root, files, (file_column, row_column))
        if filtered is not None:
            return filtered
    table = deleted_buckets(root, files)
    if table is None:
        return df
    deleted = spark.createDataFrame(table)
    row = f"`{row_column}`"
    on = (F.col(f"`{file_column}`") == F.col(_PATH)) & (
        F.expr(f"{row} DIV {_BUCKET_ROWS}") == F.col(_BUCKET)
    )
    joined = df.join(F.broadcast(deleted), on, "left")
    word = f"element_at({_WORDS}, CAST(({row} % {_BUCKET_ROWS}) DIV 64 AS INT) + 1)"
    live = F.expr(f"{_WORDS} IS NULL OR (shiftright({word}, CAST({row} % 64 AS INT)) & 1) = 0")
    return joined.filter(live).drop(_PATH, _BUCKET, _WORDS)
