"""The rows a DELETE or UPDATE matched, found in the JVM when they are few, however big the
files they sit in.

A row-level statement must learn which physical rows it matched, ``(file, row index)``
pairs that become deletion vectors. :func:`~txsql.planner.dml.dv_writes.mark_rows_deleted`
collects them as Arrow (no Python stage) only when the scanned files hold at most
``DIRECT_ROWS`` rows; above, each task groups its pairs into bitmaps in a Python stage
(``mapInArrow``), which costs a Python worker per task whatever the number of pairs. That
bound is on the files, not on the matches, so alone it would make a point DELETE cost more
on big files than on small ones, although Spark's Parquet reader skips all but one page of
20k rows either way. Here the bound is on the matches, checked by Spark while the job runs:

* :func:`collect_found_rows` (DELETE): one job collects ``(crc32(file), row index)`` as
  Arrow. When the files may hold more than ``DIRECT_ROWS`` rows, each row's position among
  its task's matches (``monotonically_increasing_id``: the partition in the upper 31 bits,
  the position in the lower 33) is checked against ``cap`` (below) and the job stops with
  ``raise_error`` at the first task past it: the caller then groups in the Python stage.
* :func:`row_observer` (UPDATE): the job that writes the new rows also observes
  (``DataFrame.observe``) their count and the list of their keys ``crc32(file) << 32 | row
  index``, at most ``cap`` per task; when the list holds every row, no second job.

``cap`` is ``DIRECT_ROWS`` over an upper bound of the scan's tasks: Spark cuts files into
pieces of at least ``min(maxPartitionBytes, openCostInBytes)`` (4 MB by default) and only
packs pieces together, so the driver never holds more than ``DIRECT_ROWS`` pairs.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from pyroaring import BitMap64
from pyspark.sql import Observation
from pyspark.sql import functions as F

from txsql.engine.names import fresh_names
from txsql.engine.scan_files import sql_string
from txsql.engine.schema import quote
from txsql.log.actions import AddFile
from txsql.planner.dml import dv_writes
from txsql.planner.dml.dv_writes import bitmaps_by_crc, crc_paths
from txsql.planner.dml.jobs import count_job
from txsql.txn.rowlevel.state import num_records, total_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

# The message of the raise_error that stops a collection past its cap (never shown to
# users: the statement falls back to grouping rows in a Python stage).
_TOO_MANY = "txsql: more matched rows than one direct collection holds"
# Spark's defaults for the two settings that bound the size of a scan's file pieces.
_SPLIT_SETTINGS = (
    ("spark.sql.files.maxPartitionBytes", 128 << 20),
    ("spark.sql.files.openCostInBytes", 4 << 20),
)
# What Spark divides a scan's bytes by, first set wins (FilePartition.maxSplitBytes).
_PARALLELISM_SETTINGS = (
    "spark.sql.files.minPartitionNum",
    "spark.sql.leafNodeDefaultParallelism",
    "spark.default.parallelism",
)
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_ROW_BITS = 32  # an UPDATE key is crc32(file) << 32 | row index
# A row's position among the rows its task has produced so far (0-based): the partition is
# in the upper 31 bits of monotonically_increasing_id, the position in the lower 33.
_POSITION = f"(monotonically_increasing_id() & {(1 << 33) - 1})"


def collect_found_rows(
    spark: SparkSession, matched: DataFrame, row_ids: tuple[str, str], files: Sequence[AddFile]
) -> dict[str, BitMap64] | None:
    """The rows of ``matched`` as per-file bitmaps, collected by one Spark job without a
    Python stage; None when there are too many for that (the job stopped early) or two
    files share a CRC. ``row_ids`` names the file and row-index columns."""
    crcs = crc_paths(files)
    if crcs is None:
        return None
    file_column, row_column = row_ids
    row = quote(row_column)
    total = total_records(files)
    if total is None or total > dv_writes.DIRECT_ROWS:
        stop = f"raise_error({sql_string(_TOO_MANY)})"
        row = f"CASE WHEN {_POSITION} < {_cap(spark, files)} THEN {row} ELSE {stop} END"
    # SQL text: one call to the JVM, where a Column costs one per function.
    pairs = matched.selectExpr(f"{_crc_sql(file_column)} AS f", f"{row} AS r")
    try:
        table = count_job(pairs.toArrow)
    except Exception as error:
        if _TOO_MANY in str(error):
            return None
        raise
    keys = table.column("f").to_numpy(zero_copy_only=False)
    return bitmaps_by_crc(keys, table.column("r").to_numpy(zero_copy_only=False), crcs)


@dataclass(frozen=True)
class RowObserver:
    """Observes the rows of an UPDATE's write job on the way (see the module docstring).

    Attributes:
        may_overflow: Whether the list of keys can miss rows (a task may match more than
            its cap); only then may :meth:`found` return None, so only then must the
            caller be able to find the rows again in a second job (persisted, or read
            again when the WHERE clause surely matches the same rows).
        key_sql: The SQL text of a row's key (NULL past the cap).
    """

    may_overflow: bool
    key_sql: str
    observation: Observation
    crcs: dict[int, str]

    def observe(self, rows: DataFrame) -> DataFrame:
        """``rows`` counting and listing their keys in the job that reads them (once)."""

        count = F.expr("count(1) AS n")
        if not self.may_overflow:
            # A key without the position is deterministic: the aggregate computes it, so
            # no projection to add and drop (each is an analysis on the driver).
            return rows.observe(
                self.observation, count, F.expr(f"collect_list({self.key_sql}) AS keys")
            )
        # The key is a column first: Spark evaluates observed aggregates without
        # initialising a non-deterministic input (the position in the task) itself.
        name = quote(fresh_names(["_txsql_found_key"], rows.columns)[0])
        keyed = rows.selectExpr("*", f"{self.key_sql} AS {name}")
        # collect_list skips the NULL keys of rows past the cap.
        keys = F.expr(f"collect_list({name}) AS keys")
        return keyed.observe(self.observation, count, keys).drop(name)

    def found(self) -> dict[str, BitMap64] | None:
        """Per-file bitmaps of the rows observed, or None if the list missed some. Call it
        only after the job reading the observed rows succeeded."""
        metrics = self.observation.get
        keys = np.asarray(metrics["keys"], dtype=np.int64).view(np.uint64)
        if len(keys) != int(metrics["n"]):
            return None
        crcs = (keys >> np.uint64(_ROW_BITS)).astype(np.int64)
        rows = keys & np.uint64((1 << _ROW_BITS) - 1)
        return bitmaps_by_crc(crcs, rows, self.crcs)


def row_observer(
    spark: SparkSession, row_ids: tuple[str, str], files: Sequence[AddFile]
) -> RowObserver | None:
    """An observer of the rows of a scan of ``files`` (``row_ids`` names the file and
    row-index columns); None when a key could name two rows (two files share a CRC, or a
    file's row count is unknown or reaches 2**32)."""

    crcs = crc_paths(files)
    counts = [num_records(f.stats) for f in files]
    if crcs is None or any(n is None or n >= 1 << _ROW_BITS for n in counts):
        return None
    file_column, row_column = row_ids
    key = f"(shiftleft({_crc_sql(file_column)}, {_ROW_BITS}) | {quote(row_column)})"
    may_overflow = sum(n or 0 for n in counts) > dv_writes.DIRECT_ROWS
    if may_overflow:
        key = f"CASE WHEN {_POSITION} < {_cap(spark, files)} THEN {key} END"
    observation = Observation(f"txsql_found_rows_{uuid.uuid4().hex}")
    return RowObserver(may_overflow, key, observation, crcs)


def _crc_sql(file_column: str) -> str:
    """:func:`~txsql.planner.dml.dv_writes.file_crc` as SQL text."""
    return f"crc32(CAST({quote(file_column)} AS BINARY))"


def _cap(spark: SparkSession, files: Sequence[AddFile]) -> int:
    """Matched rows one task may hand to the driver: ``DIRECT_ROWS`` over the most tasks a
    scan of ``files`` can have."""
    return max(1, dv_writes.DIRECT_ROWS // most_tasks(spark, files))


def most_tasks(spark: SparkSession, files: Sequence[AddFile]) -> int:
    """An upper bound of the tasks of a Spark scan of ``files``.

    Spark cuts files into pieces of ``min(maxPartitionBytes, max(openCostInBytes, bytes /
    parallelism))`` (``FilePartition.maxSplitBytes``, bytes counting each file's open
    cost). With the parallelism unknown, pieces are never smaller than the smaller of the
    two settings; known (or bounded from above), two 88 MB files on ``local[2]`` are two
    tasks, not 44, so an UPDATE of 200k rows in them needs no second job.
    """
    max_piece, open_cost = (_bytes_setting(spark, n, default) for n, default in _SPLIT_SETTINGS)
    piece = min(max_piece, open_cost)
    parallelism = _most_parallelism(spark)
    if parallelism is not None:
        per_core = sum(f.size + open_cost for f in files) // parallelism
        piece = min(max_piece, max(open_cost, per_core))
    return sum(max(1, -(-f.size // piece)) for f in files)


def _most_parallelism(spark: SparkSession) -> int | None:
    """An upper bound of the parallelism Spark divides a scan's bytes by, or None.

    In Spark's order: ``spark.sql.files.minPartitionNum``, the leaf-node default, the
    default parallelism, else a local master's cores (``local[*]``: this machine's, only
    when the driver is this process, not a Spark Connect server's)."""
    for name in _PARALLELISM_SETTINGS:
        text = (spark.conf.get(name, None) or "").strip()
        if text.isdigit() and int(text) > 0:
            return int(text)
    try:
        master = (spark.conf.get("spark.master", None) or "").strip()
    except Exception:  # a Spark Connect server may not say
        return None
    match = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master)
    if match is None:
        return None
    cores = match.group(1)
    if cores is None:
        return 1
    if cores != "*":
        return max(1, int(cores))
    connect = type(spark).__module__.startswith("pyspark.sql.connect")
    return None if connect else os.cpu_count()


def _bytes_setting(spark: SparkSession, name: str, default: int) -> int:
    """A byte-size setting as Spark reads it (``134217728``, ``128m``, ``4MB``...)."""
    text = spark.conf.get(name, None)
    match = re.fullmatch(r"\s*(\d+)\s*([bkmgtp]?)b?\s*", (text or "").lower())
    if match is None:
        return default
    return max(1, int(match.group(1)) * _UNITS[match.group(2)])
