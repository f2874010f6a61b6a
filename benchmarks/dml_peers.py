"""The Spark peers of ``benchmarks/dml.py``: plain Spark's bare work, and the floors.

Both run on a plain Parquet copy of the txsql table's starting files, with no log, no
deletion vectors and no checks.

"Plain Spark" is the floor Spark itself sets for each statement:
- DELETE collects the matching rows' file path and row index (what any DV delete must
  find);
- UPDATE writes the changed rows;
- MERGE writes the broadcast-joined updated rows plus the unmatched source rows.

The floors (issue 22: "the measured floor, not an estimate") do the least that any
deletion-vector plan of the statement must do. Their ratio to plain Spark is the floor of
the goal for that plan; txsql/floor is what txsql adds above it.
- UPDATE, "positions floor": ONE scan for ``k = 7`` with ``_metadata.file_path`` and
  ``row_index`` writes the changed rows and observes (``DataFrame.observe``, no job of its
  own) the list of their positions as ``crc32(path) << 32 | row index``. A DV UPDATE needs
  both the new rows and the old positions, and one pass is the least that gives both.
- MERGE, "narrow-join floor" (the issue's plan): (a) a scan of ``id`` + file path + row
  index only, broadcast-joined with the source's ``id, v`` and persisted + counted (the
  matched positions must be materialised to build DVs); the unmatched source rows are the
  source anti-joined with those matched ids, no second target scan; (b) the full target
  rows joined back on (file path, row index) with the broadcast matched set, updated and
  written with the inserts as Parquet.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

FLOORS = [  # what each statement's floor does (see the docstring); DELETE has none
    "",
    "positions floor (changed rows written + positions observed, 1 scan, 1 job)",
    "narrow-join floor (key scan + positions persisted, full rows joined back by position)",
]
PLAIN_GOALS = ["", "UPDATE <= 1.2x plain Spark", "MERGE <= 1.0x plain Spark"]


def plain_spark_ops(
    spark: Any, plain: str, out: str, k: str, victim: int, source_view: str
) -> list[Callable[[], Any]]:
    """DELETE, UPDATE and MERGE as plain Spark's bare work (see the docstring)."""
    from pyspark.sql import functions as F

    def delete() -> Any:
        found = spark.read.parquet(plain).filter(F.col("id") == victim)
        return found.select("_metadata.file_path", "_metadata.row_index").collect()

    def update() -> Any:
        changed = spark.read.parquet(plain).filter(F.col(k) == 7)
        changed.withColumn("v", F.col("v") + 1).write.mode("append").parquet(out)

    def merge() -> Any:
        target = spark.read.parquet(plain)
        source = spark.table(source_view)
        updated = target.alias("t").join(F.broadcast(source.alias("s")), "id")
        updated = updated.select("id", f"t.{k}", F.col("s.v").alias("v"), "t.s")
        inserted = source.join(target, "id", "left_anti")
        updated.unionByName(inserted).write.mode("append").parquet(out)

    return [delete, update, merge]


def floor_ops(
    spark: Any, plain: str, out: str, k: str, source_view: str
) -> list[Callable[[], Any] | None]:
    """The least a DV plan must do, per statement (see the docstring); None for DELETE,
    whose plain peer already is its floor."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    position = [F.col("_metadata.file_path").alias("fp"), "_metadata.row_index"]

    def update() -> Any:  # positions floor: one scan writes the rows, observes positions
        observed = Observation(f"floor_positions_{uuid.uuid4().hex}")
        key = F.expr("shiftleft(crc32(CAST(fp AS BINARY)), 32) | row_index").alias("key")
        found = spark.read.parquet(plain).filter(F.col(k) == 7).select("*", *position)
        found = found.select("*", key).observe(observed, F.expr("collect_list(key) AS keys"))
        changed = found.drop("fp", "row_index", "key").withColumn("v", F.col("v") + 1)
        changed.write.mode("append").parquet(out)
        return len(observed.get["keys"])

    def merge() -> Any:  # narrow-join floor
        target = spark.read.parquet(plain)
        source = spark.table(source_view)
        new_v = F.broadcast(source.select("id", F.col("v").alias("new_v")))
        matched = target.select("id", *position).join(new_v, "id").persist()
        try:
            count = matched.count()  # (a) positions materialised, as DVs need
            inserted = source.join(matched.select("id"), "id", "left_anti")
            full = target.select("*", *position)
            updated = full.join(F.broadcast(matched.drop("id")), ["fp", "row_index"])
            updated = updated.select("id", k, F.col("new_v").alias("v"), "s")
            updated.unionByName(inserted).write.mode("append").parquet(out)  # (b)
            return count
        finally:
            matched.unpersist()

    return [None, update, merge]
