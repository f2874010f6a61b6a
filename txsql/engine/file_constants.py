"""Per-file constants of a scan: partition values (typed, from the log), ``_file`` and, for
stable row ids, each file's ``baseRowId`` and ``defaultRowCommitVersion``.

Partition values are taken from the log, never from directory names; ``_file`` is the add
action's ``path`` exactly as in the log. Both are constant per data file, so each becomes a
lookup on the row's file key ``crc32(_metadata.file_path)``:

* up to ``_LITERAL_FILES`` files (and distinct CRCs), a map literal per constant,
  ``element_at(map(crc1, v1, ...), key)``: Spark folds the map once per query, no join and
  no broadcast job (a broadcast join costs one Spark job per query: a 1-row DELETE would
  run two), and a query that does not use a constant (``count()``, ``sum(x)``) prunes its
  lookup entirely. A lookup costs the same with 32 or 2000 entries (figures in
  ``benchmarks/README.md``, "Per-file constants");
* above it (or if two paths share a CRC), a broadcast join with a per-file table, keyed
  by the CRC (or the path string on a collision).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import functions as F

from txsql.engine.scan_columns import sql_type
from txsql.engine.scan_files import ScanFile, ScanLayout, sql_long, sql_string
from txsql.engine.schema import ColumnInfo, quote
from txsql.log.actions import AddFile

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Files up to which constants are map literals: the SQL text grows ~100 bytes per file and
# per constant, parsed once per planned scan; beyond it the per-file table is joined.
_LITERAL_FILES = 2048


def uses_literals(files: Sequence[ScanFile], long_keys: bool) -> bool:
    """True when the constants of ``files`` are map lookups rather than a join."""
    return long_keys and len(files) <= _LITERAL_FILES


def constant_lookups(files: Sequence[ScanFile], layout: ScanLayout) -> dict[str, str]:
    """SQL text looking up each constant of ``files`` on the file key column (helper
    ``key``): ``element_at(map literal, key)`` per partition column (helpers ``parts[i]``)
    and, with row ids, for ``_file`` (``info_file``). Only when :func:`uses_literals` holds."""
    h = layout.helpers
    crcs = [f.crc for f in files]
    lookups: dict[str, str] = {}
    if layout.with_row_ids:
        lookups[h.info_file] = _lookup(crcs, [f.add.path for f in files], None, h.key)
    for i, column in enumerate(layout.schema.partition_columns):
        values = [partition_text(f.add, column.physical_name) for f in files]
        lookups[h.parts[i]] = _lookup(crcs, values, column, h.key)
    if layout.lineage:
        lookups[h.base_row_id] = _long_lookup(crcs, [f.add.base_row_id for f in files], h.key)
        versions = [f.add.default_row_commit_version for f in files]
        lookups[h.base_version] = _long_lookup(crcs, versions, h.key)
    return lookups


def attach_constants(
    spark: SparkSession, df: DataFrame, files: Sequence[ScanFile], layout: ScanLayout
) -> DataFrame:
    """``df`` (with the file key column, helper ``key``) plus the partition values and
    ``_file``, named by the helpers ``parts[i]`` and ``info_file`` (only with row ids)."""
    if not uses_literals(files, layout.long_keys):
        return _join_constants(spark, df, files, layout)
    lookups = constant_lookups(files, layout)
    return df.withColumns({name: F.expr(text) for name, text in lookups.items()})


def _lookup(crcs: list[int], values: list[str | None], column: ColumnInfo | None, key: str) -> str:
    """``element_at(map literal, key)``, the map's values typed like ``column``."""
    pairs = ", ".join(
        f"{sql_long(crc)}, {'CAST(NULL AS STRING)' if v is None else sql_string(v)}"
        for crc, v in zip(crcs, values)
    )
    table = f"map({pairs})"
    if column is not None:
        # Cast the whole map, a literal Spark folds once per query, not each row's value.
        table = f"CAST({table} AS MAP<BIGINT, {sql_type(column.logical_type)}>)"
    return f"element_at({table}, {quote(key)})"


def _long_lookup(crcs: list[int], values: list[int | None], key: str) -> str:
    """``element_at(map literal, key)`` of BIGINT values (a file's row tracking fields)."""
    pairs = ", ".join(f"{sql_long(crc)}, {_bigint(v)}" for crc, v in zip(crcs, values))
    return f"element_at(CAST(map({pairs}) AS MAP<BIGINT, BIGINT>), {quote(key)})"


def _bigint(value: int | None) -> str:
    return "CAST(NULL AS BIGINT)" if value is None else sql_long(value)


def stable_row_id_sql(
    files: Sequence[AddFile], stored: str, file_column: str, row_column: str
) -> str | None:
    """SQL for a row's stable id from the stored lineage column ``stored`` (see
    ``scan_snapshot(stored_lineage=True)``) and the scan's ``_file`` and ``_row_index``: the
    stored id, else its file's ``baseRowId`` + row index. None above ``_LITERAL_FILES``
    files (the map literal would cost more to plan than resolving in the scan)."""
    if len(files) > _LITERAL_FILES:
        return None
    pairs = ", ".join(f"{sql_string(f.path)}, {_bigint(f.base_row_id)}" for f in files)
    base = f"element_at(CAST(map({pairs}) AS MAP<STRING, BIGINT>), {quote(file_column)})"
    return f"coalesce({quote(stored)}, {base} + {quote(row_column)})"


def _join_constants(
    spark: SparkSession, df: DataFrame, files: Sequence[ScanFile], layout: ScanLayout
) -> DataFrame:
    """Attach the constants by a broadcast join with a per-file table (many files)."""
    h, schema = layout.helpers, layout.schema
    table: dict[str, pa.Array] = {}
    if layout.long_keys:
        table[h.info_key] = pa.array([f.crc for f in files], pa.int64())
    else:
        table[h.info_key] = pa.array([f.spark_path for f in files], pa.string())
    table[h.info_file] = pa.array([f.add.path for f in files], pa.string())
    for i, column in enumerate(schema.partition_columns):
        values = [partition_text(f.add, column.physical_name) for f in files]
        table[h.parts[i]] = pa.array(values, pa.string())
    lineage = [h.base_row_id, h.base_version] if layout.lineage else []
    if layout.lineage:
        table[h.base_row_id] = pa.array([f.add.base_row_id for f in files], pa.int64())
        versions = [f.add.default_row_commit_version for f in files]
        table[h.base_version] = pa.array(versions, pa.int64())
    info = spark.createDataFrame(pa.table(table))
    typed = [F.col(h.info_key), F.col(h.info_file)] + [
        F.col(h.parts[i]).cast(c.logical_type).alias(h.parts[i])
        for i, c in enumerate(schema.partition_columns)
    ]
    typed += [F.col(name) for name in lineage]
    info = info.select(typed)
    if not layout.with_row_ids:
        info = info.drop(h.info_file)
    joined = df.join(F.broadcast(info), F.col(h.key) == F.col(h.info_key), "inner")
    return joined.drop(h.info_key)


def partition_text(add: AddFile, physical_name: str) -> str | None:
    """The log's text of one partition value; None for NULL."""
    values = add.partition_values
    if physical_name in values:
        text = values[physical_name]
    else:
        lowered = {k.lower(): v for k, v in values.items()}
        text = lowered.get(physical_name.lower())
    # Protocol: an empty string, like a JSON null, is a NULL partition value.
    return text if text else None
