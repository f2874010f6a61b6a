"""Dropping DV-deleted rows from a DML scan after the WHERE clause, not before it.

A scan that applies deletion vectors (``engine/scan.py``) expands every DV of the scanned
files and anti-joins them, which costs Spark jobs of its own (expansion, broadcast) in every
statement. DML only needs the deleted rows out of the few rows its WHERE clause matched:
DELETE subtracts the old DVs from its bitmaps (``dv_writes``), and UPDATE filters its
matched rows here, in the same tasks as the scan:

* up to ``_LITERAL_ROWS`` deleted rows, the driver reads the DVs and the filter is a literal
  ``NOT (key IN (...))`` on the long key ``crc32(_file) << 32 | _row_index``, evaluated in
  the JVM (a Python stage costs ~0.1 s per task on ``local[2]`` whatever its size);
* above it (or when two scanned files share a CRC), a vectorized UDF on ``(_file,
  _row_index)``: each task reads the DVs of the files it sees from their descriptors; the
  driver ships descriptors only, never row indexes. (A broadcast anti-join with the keys
  was measured too: Spark runs two jobs of its own for it, so UPDATE would exceed two.)

MERGE drops deleted rows after its join in the JVM (``planner/operations/merge/live.py``), by
the same literal filter when the target is small.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark.sql import functions as F

from txsql.dv.store import read_deletion_vector
from txsql.engine.scan import snapshot_row_ids
from txsql.engine.scan_files import row_keys, sql_long
from txsql.engine.schema import quote
from txsql.log.actions import AddFile
from txsql.log.snapshot import Snapshot
from txsql.planner.dml.dv_writes import crc_paths
from txsql.storage.factory import file_io_for

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

# (storageType, pathOrInlineDv, sizeInBytes, cardinality, offset) of a file's DV.
DvFields = tuple[str, str, int, int, int | None]
# Deleted rows up to which the filter is literal SQL: analysing the text costs ~0.15 s per
# 1000 keys on a loaded local[2], about what the Python stage it replaces costs.
_LITERAL_ROWS = 1000


def without_dvs(files: Sequence[AddFile]) -> list[AddFile]:
    """The files as a scan that ignores their DVs must see them (``_file`` unchanged)."""
    return [replace(f, deletion_vector=None) for f in files]


def drop_deleted_rows(df: DataFrame, snapshot: Snapshot, files: Sequence[AddFile]) -> DataFrame:
    """``df`` (a scan of ``files`` with the snapshot's row ids) without the rows the files'
    DVs delete."""

    if all(f.deletion_vector is None for f in files):
        return df
    columns = snapshot_row_ids(snapshot)
    filtered = drop_deleted_by_literals(df, snapshot.table_root, files, columns)
    if filtered is not None:
        return filtered
    dvs: dict[str, DvFields] = {
        f.path: (dv.storage_type, dv.path_or_inline_dv, dv.size_in_bytes, dv.cardinality, dv.offset)
        for f in files
        if (dv := f.deletion_vector) is not None
    }
    live = F.pandas_udf(_live_function(snapshot.table_root, dvs), "boolean")  # type: ignore[call-overload]
    return df.where(live(*(F.col(quote(c)) for c in columns)))


def drop_deleted_by_literals(
    df: DataFrame, root: str, files: Sequence[AddFile], columns: tuple[str, str]
) -> DataFrame | None:
    """``df`` without the deleted rows of ``files`` by a literal IN set, or None when they
    are too many or the keys would not be unique (two paths with one CRC, a row index of
    2**32 or more)."""

    with_dv = [(f, dv) for f in files if (dv := f.deletion_vector) is not None]
    if sum(dv.cardinality for _, dv in with_dv) > _LITERAL_ROWS:
        return None
    paths = crc_paths(files)
    if paths is None:
        return None
    crcs = {path: crc for crc, path in paths.items()}
    fs = file_io_for(root)
    parts: list[np.ndarray] = []
    for f, dv in with_dv:
        rows = np.asarray(read_deletion_vector(dv, root, fs).to_array(), np.uint64)
        if len(rows) and int(rows.max()) >= 2**32:
            return None
        parts.append(row_keys(crcs[f.path], rows))
    keys = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if not len(keys):  # nothing deleted (and SQL has no empty IN list)
        return df
    file_column, row_column = columns
    key_sql = f"(shiftleft(crc32(cast({quote(file_column)} AS BINARY)), 32) | {quote(row_column)})"
    listed = ", ".join(sql_long(int(k)) for k in keys)
    return df.where(F.expr(f"NOT ({key_sql} IN ({listed}))"))


def _live_function(root: str, dvs: dict[str, DvFields]):  # type: ignore[no-untyped-def]
    # Imported where this runs: in Spark's Python worker.
    import pandas as pd

    cache: dict[str, Any] = {}  # per worker: each DV file is read once, not per batch
    # Built on the driver, pickled into the UDF: executors reach the DV files themselves.
    fs = file_io_for(root)

    def live(paths: pd.Series, rows: pd.Series) -> pd.Series:
        # Imported where this runs: in Spark's Python worker.
        from txsql.dv.descriptor import DeletionVectorDescriptor

        keep = np.ones(len(paths), dtype=bool)
        path_values = paths.to_numpy()
        row_values = rows.to_numpy(dtype=np.int64)
        for path in pd.unique(path_values):
            fields = dvs.get(path)
            if fields is None:
                continue
            gone = cache.get(path)
            if gone is None:
                descriptor = DeletionVectorDescriptor(*fields)
                deleted = read_deletion_vector(descriptor, root, fs)
                gone = cache[path] = np.asarray(deleted.to_array(), dtype=np.int64)
            mask = path_values == path
            keep[mask] = ~np.isin(row_values[mask], gone)
        return pd.Series(keep)

    # Spark reads the hints to pick a Series -> Series UDF; postponed annotations are
    # strings it cannot resolve, so give it the types themselves.
    live.__annotations__ = {"paths": pd.Series, "rows": pd.Series, "return": pd.Series}
    return live
