"""Dropping DV-deleted rows from a DML scan after the WHERE clause, not before it.

A scan that applies deletion vectors (``engine/scan.py``) expands every DV of the scanned
files and anti-joins them, which costs Spark jobs of its own (expansion, broadcast) in every
statement. DML only needs the deleted rows out of the few rows its WHERE clause matched:
DELETE subtracts the old DVs from its bitmaps (``dv_writes``), and UPDATE filters its
matched rows here with a vectorized UDF on ``(_file, _row_index)`` that runs in the same
tasks as the scan. Each task reads the DVs of the files it sees from their descriptors; the
driver ships descriptors only, never row indexes. MERGE filters its joined rows the same
way (after the join, so only target rows that met a source row pass through Python).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from txsql.engine.scan import snapshot_row_ids
from txsql.engine.schema import quote
from txsql.log.actions import AddFile
from txsql.log.snapshot import Snapshot
from txsql.storage.factory import file_io_for

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

# (storageType, pathOrInlineDv, sizeInBytes, cardinality, offset) of a file's DV.
DvFields = tuple[str, str, int, int, int | None]


def without_dvs(files: Sequence[AddFile]) -> list[AddFile]:
    """The files as a scan that ignores their DVs must see them (``_file`` unchanged)."""
    return [replace(f, deletion_vector=None) for f in files]


def drop_deleted_rows(
    df: DataFrame,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    columns: tuple[str, str] | None = None,
) -> DataFrame:
    """``df`` (rows of ``files`` with row ids) without the rows the files' DVs delete.

    ``columns`` names the file and row-index columns when they are not the scan's own
    (rows with a NULL file, e.g. source rows of an outer join, are kept). With it the
    filter is marked non-deterministic, so Spark evaluates it where it stands (after a
    join, on the few joined rows) instead of pushing it below the join onto every row.
    """
    from pyspark.sql import functions as F

    dvs: dict[str, DvFields] = {}
    for f in files:
        dv = f.deletion_vector
        if dv is not None:
            dvs[f.path] = (
                dv.storage_type,
                dv.path_or_inline_dv,
                dv.size_in_bytes,
                dv.cardinality,
                dv.offset,
            )
    if not dvs:
        return df
    file_column, row_column = columns or snapshot_row_ids(snapshot)
    live = F.pandas_udf(_live_function(snapshot.table_root, dvs), "boolean")  # type: ignore[call-overload]
    if columns is not None:
        live = live.asNondeterministic()
    return df.where(live(F.col(quote(file_column)), F.col(quote(row_column))))


def _live_function(root: str, dvs: dict[str, DvFields]):  # type: ignore[no-untyped-def]
    import pandas as pd

    cache: dict[str, Any] = {}  # per worker: each DV file is read once, not per batch
    # Built on the driver, pickled into the UDF: executors reach the DV files themselves.
    fs = file_io_for(root)

    def live(paths: pd.Series, rows: pd.Series) -> pd.Series:
        import numpy as np

        from txsql.dv.descriptor import DeletionVectorDescriptor
        from txsql.dv.store import read_deletion_vector

        keep = np.ones(len(paths), dtype=bool)
        path_values = paths.to_numpy()
        row_values = rows.fillna(-1).to_numpy(dtype=np.int64)  # NULL: no target row
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
