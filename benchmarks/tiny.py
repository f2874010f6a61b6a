"""The quickstart's 4-row table in a warm session: each statement, txsql vs plain Spark.

Run: ``python benchmarks/tiny.py`` (``TXSQL_BENCH_RUNS`` timed runs per statement, default
15, after 5 untimed ones). Prints, per statement, the medians (and minimums) of txsql and
of plain Spark doing the bare work, measured alternately in the same session, the ratio,
and txsql's ``spark_jobs``. Goals (issue 22): every statement <= 1.2x plain Spark, MERGE
<= 0.5 s.

The table is the quickstart's (``id, customer, amount, region``, partitioned by region,
after an UPDATE and a DELETE, so it has deletion vectors); every txsql run works on a fresh
copy of it. "Plain Spark" is a Parquet copy of the same rows and, per statement, only
what the statement cannot avoid: INSERT appends the rows; UPDATE reads, changes the
matching rows and writes them; DELETE finds the matching rows' file and position (what a
deletion vector needs); MERGE writes the broadcast-joined updated rows plus the source
rows without a match; SELECT collects the filtered rows. No log, no checks, no commit.

UPDATE, MERGE and SELECT also print their floors (issue 22: "the measured floor, not an
estimate"), timed in turn with the other two: plain Spark's work plus what any
deletion-vector plan must add in the same job. UPDATE and MERGE learn the positions of the
target rows they replace (``_metadata.file_path`` and ``row_index``, observed as a list of
keys, as ``benchmarks/dml_peers.py``'s positions floor does); SELECT drops as many deleted
positions as the table's DVs hold, by a literal ``NOT (key IN (...))`` on the same key.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

RUNS = int(os.environ.get("TXSQL_BENCH_RUNS", "15"))
WARM = 5
ROWS = (
    "(1, 'ada', 120.0, 'eu'), (2, 'bob', 35.5, 'us'), (3, 'cy', 80.0, 'eu'), (4, 'dee', 15.0, 'us')"
)
STATEMENTS = {
    "INSERT": "INSERT INTO {t} VALUES (5, 'eve', 60.0, 'eu'), (6, 'fay', 9.0, 'us')",
    "UPDATE": "UPDATE {t} SET amount = amount * 1.1 WHERE region = 'eu'",
    "DELETE": "DELETE FROM {t} WHERE amount < 40",
    "MERGE": (
        "MERGE INTO {t} AS o USING changes AS c ON o.id = c.id "
        "WHEN MATCHED THEN UPDATE SET amount = c.amount WHEN NOT MATCHED THEN INSERT *"
    ),
    "SELECT": "SELECT id, customer, amount FROM {t} WHERE region = 'eu'",
}


def plain_peers(
    spark: Any, plain: str, out: str, deleted_rows: int
) -> dict[str, Callable[[], object]]:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    def insert() -> object:
        rows = [(5, "eve", 60.0, "eu"), (6, "fay", 9.0, "us")]
        schema = "id BIGINT, customer STRING, amount DOUBLE, region STRING"
        spark.createDataFrame(rows, schema).write.mode("append").parquet(out)
        return None

    def update() -> object:
        changed = spark.read.parquet(plain).where("region = 'eu'")
        changed.withColumn("amount", F.col("amount") * 1.1).write.mode("append").parquet(out)
        return None

    key = "shiftleft(crc32(CAST(_metadata.file_path AS BINARY)), 32) | _metadata.row_index"

    def update_floor() -> object:  # + what any DV UPDATE must learn: the old positions
        observed = Observation(f"floor_{uuid.uuid4().hex}")
        found = spark.read.parquet(plain).where("region = 'eu'").selectExpr("*", f"{key} AS k")
        found = found.observe(observed, F.expr("collect_list(k) AS keys"))
        changed = found.drop("k").withColumn("amount", F.col("amount") * 1.1)
        changed.write.mode("append").parquet(out)
        return observed.get["keys"]

    def delete() -> object:
        found = spark.read.parquet(plain).where("amount < 40")
        return found.select("_metadata.file_path", "_metadata.row_index").collect()

    def merge() -> object:
        target, source = spark.read.parquet(plain), spark.table("changes")
        joined = target.alias("o").join(F.broadcast(source.alias("c")), "id")
        updated = joined.select("id", "o.customer", F.col("c.amount").alias("amount"), "o.region")
        inserted = source.join(target, "id", "left_anti")
        updated.unionByName(inserted).write.mode("append").parquet(out)
        return None

    def merge_floor() -> object:  # + the matched target rows' positions, for their DVs
        observed = Observation(f"floor_{uuid.uuid4().hex}")
        target, source = spark.read.parquet(plain), spark.table("changes")
        keyed = target.selectExpr("*", f"{key} AS k")
        joined = keyed.alias("o").join(F.broadcast(source.alias("c")), "id")
        joined = joined.observe(observed, F.expr("collect_list(o.k) AS keys"))
        updated = joined.select("id", "o.customer", F.col("c.amount").alias("amount"), "o.region")
        inserted = source.join(target, "id", "left_anti")
        updated.unionByName(inserted).write.mode("append").parquet(out)
        return observed.get["keys"]

    def select() -> object:
        return (
            spark.read.parquet(plain)
            .where("region = 'eu'")
            .select("id", "customer", "amount")
            .collect()
        )

    def select_floor() -> object:  # + dropping deleted positions, as many as the table has
        keep = f"NOT ({key} IN ({', '.join(str(-1 - i) for i in range(deleted_rows))}))"
        return (
            spark.read.parquet(plain)
            .where(f"region = 'eu' AND {keep}")
            .select("id", "customer", "amount")
            .collect()
        )

    return {
        "INSERT": insert,
        "UPDATE": update,
        "UPDATE floor": update_floor,
        "DELETE": delete,
        "MERGE": merge,
        "MERGE floor": merge_floor,
        "SELECT": select,
        "SELECT floor": select_floor,
    }


def main() -> None:
    import txsql
    from txsql.engine.spark import local_session

    spark = local_session("local[2]", "txsql-bench-tiny")
    work = tempfile.mkdtemp(prefix="txsql-bench-tiny-")
    try:
        s = txsql.Session(spark=spark, warehouse=os.path.join(work, "wh"))
        template = os.path.join(work, "template")
        t = f"delta.`{template}`"
        s.sql(
            f"CREATE TABLE {t} (id BIGINT NOT NULL, customer STRING, amount DOUBLE, region STRING)"
            " PARTITIONED BY (region)"
        )
        s.sql(f"INSERT INTO {t} VALUES {ROWS}")
        updated = s.sql(f"UPDATE {t} SET amount = amount * 1.1 WHERE region = 'eu'")
        deleted = s.sql(f"DELETE FROM {t} WHERE amount < 20")
        # Rows the table's DVs hide: the SELECT floor drops as many positions.
        hidden = updated.metrics["num_updated_rows"] + deleted.metrics["num_deleted_rows"]
        spark.createDataFrame(
            [(2, "bob", 40.0, "us"), (5, "eve", 60.0, "eu")],
            "id BIGINT, customer STRING, amount DOUBLE, region STRING",
        ).createOrReplaceTempView("changes")
        plain = os.path.join(work, "plain")
        rows = s.sql(f"SELECT * FROM {t}").to_pandas()
        spark.createDataFrame(rows).write.partitionBy("region").parquet(plain)
        peers = plain_peers(spark, plain, os.path.join(work, "plain_out"), hidden)

        copies = iter(range(10**6))

        def ours(sql: str) -> tuple[float, Any]:
            copy = os.path.join(work, f"copy{next(copies)}")
            shutil.copytree(template, copy)
            start = time.perf_counter()
            result = s.sql(sql.format(t=f"delta.`{copy}`"))
            if result.df is not None:
                result.collect()
            return time.perf_counter() - start, result.metrics.get("spark_jobs")

        def theirs(peer: Callable[[], object]) -> float:
            start = time.perf_counter()
            peer()
            return time.perf_counter() - start

        header = ("statement", "txsql s", "(min)", "plain s", "(min)", "ratio")
        print("{:10} {:>9} {:>7} {:>9} {:>7} {:>6}  jobs".format(*header))
        for name, sql in STATEMENTS.items():
            floor = peers.get(f"{name} floor")
            for _ in range(WARM):
                ours(sql)
                theirs(peers[name])
                if floor is not None:
                    theirs(floor)
            mine: list[float] = []
            peer: list[float] = []
            floors: list[float] = []
            jobs = set()
            for _ in range(RUNS):
                seconds, job_count = ours(sql)
                mine.append(seconds)
                jobs.add(job_count)
                peer.append(theirs(peers[name]))
                if floor is not None:
                    floors.append(theirs(floor))
            a, b = statistics.median(mine), statistics.median(peer)
            print(
                f"{name:10} {a:9.3f} {min(mine):7.3f} {b:9.3f} {min(peer):7.3f} {a / b:5.2f}x"
                f"  {sorted(j for j in jobs if j is not None)}"
            )
            if floors:
                f = statistics.median(floors)
                print(
                    f"{'  floor':10} {'':9} {'':7} {f:9.3f} {min(floors):7.3f} {f / b:5.2f}x"
                    f"  (floor / plain; txsql / floor {a / f:.2f}x)"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
