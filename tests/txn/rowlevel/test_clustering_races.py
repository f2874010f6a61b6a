"""A clustering OPTIMIZE racing UPDATE, DELETE and MERGE on a table that tracks rows:
20 seeded rounds, each a random DML against ``OPTIMIZE c FULL`` in a random commit order.

Both always commit (the compaction's row order translates the DML, or the compaction
carries the DML's deletions). After every round the rows equal DuckDB's serial replay of
the same DML on a plain DuckDB table (compaction changes no data), DuckDB's ``delta_scan``
reads the same rows (and ``deltalake`` at the end), no row's id changed, and no id was
handed out twice.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_connection, duckdb_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROUNDS = 20


def _dml(rng: random.Random, live: list[int], round_: int) -> str:
    kind = rng.choice(["update", "delete", "merge"])
    keys = ", ".join(str(k) for k in rng.sample(live, 3))
    if kind == "update":
        return f"UPDATE c SET v = v + {rng.randint(1, 9)} WHERE id IN ({keys})"
    if kind == "delete":
        return f"DELETE FROM c WHERE id IN ({keys})"
    matched, new = rng.choice(live), 1000 + round_
    source = f"SELECT {matched} AS id, {rng.randint(0, 99)} AS v UNION ALL SELECT {new}, 7"
    return (
        f"MERGE INTO c USING ({source}) s ON c.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )


def _ids(s: txsql.Session) -> dict[int, int]:
    rows = s.sql("SELECT id, _metadata.row_id AS rid FROM c").df.collect()
    return {int(r["id"]): int(r["rid"]) for r in rows}


def test_clustering_optimize_races_dml(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(34)
    s = txsql.Session(spark, str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE c (id INT, v INT) CLUSTER BY (v) "
        "TBLPROPERTIES ('delta.enableRowTracking' = 'true')"
    )
    replay = duckdb_connection()
    replay.execute("CREATE TABLE c (id INTEGER, v INTEGER)")
    for batch in range(3):
        values = ", ".join(
            f"({i}, {rng.randint(0, 99)})" for i in range(batch * 20, batch * 20 + 20)
        )
        s.sql(f"INSERT INTO c VALUES {values}")
        replay.execute(f"INSERT INTO c VALUES {values}")
    s.sql("DELETE FROM c WHERE id IN (5, 25)")
    replay.execute("DELETE FROM c WHERE id IN (5, 25)")
    handed_out = set(_ids(s).values())
    for round_ in range(ROUNDS):
        before = _ids(s)
        statement = _dml(rng, sorted(before), round_)
        dml_first = rng.random() < 0.5
        start = s.table("c").version()
        loser = s.begin()
        loser.sql("OPTIMIZE c FULL" if dml_first else statement)
        s.sql(statement if dml_first else "OPTIMIZE c FULL")
        assert loser.commit().version == start + 2, f"round {round_}: both commit ({statement})"
        replay.execute(statement)
        expected = sorted(replay.execute("SELECT id, v FROM c").fetchall())
        got = sorted(tuple(r) for r in s.sql("SELECT id, v FROM c").df.collect())
        assert got == expected, f"round {round_}: {statement}"
        t = s.table("c")
        assert duckdb_rows(t.location, t.version(), "id, v") == expected
        after = _ids(s)
        kept = {i: before[i] for i in before.keys() & after.keys()}
        assert {i: after[i] for i in kept} == kept, f"round {round_}: a row's id changed"
        new = {after[i] for i in after.keys() - before.keys()}
        assert not new & handed_out and len(set(after.values())) == len(after)
        handed_out |= new
    replay.close()
    t = s.table("c")
    assert deltalake_rows(t.location, t.version(), "id, v") == expected
