"""Soak: one session runs many mixed statements, with GC at random points.

Every statement that commits is replayed, serially, on plain DuckDB tables (the model), so
the oracle shares no code with txsql. The only errors allowed are the conflicts the test
provokes. The rows must equal the model's after every SELECT, at sampled versions (time
travel through txsql, and DuckDB's and deltalake's readers at the end) and at the end.
Driver memory and Spark's persisted blocks are sampled: they must stay bounded.

Short in CI; ``TXSQL_SOAK_N=2000 python -m pytest -q -s tests/test_soak.py`` runs the
long form and prints the memory curve.
"""

from __future__ import annotations

import gc
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.interop.readers import deltalake_rows, duckdb_connection, duckdb_rows
from txsql import Session
from txsql.errors import CommitConflictError

STATEMENTS = int(os.environ.get("TXSQL_SOAK_N", "150"))
COLUMNS = "id, p, v, s"
TABLES = {
    "a": "CREATE TABLE a (id BIGINT, p INT, v BIGINT, s STRING)",
    "b": "CREATE TABLE b (id BIGINT, p INT, v BIGINT, s STRING) PARTITIONED BY (p)",
    "c": (
        "CREATE TABLE c (id BIGINT, p INT, v BIGINT, s STRING) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')"
    ),
}
MAX_PERSISTED_RDDS = 20  # the scan layer's DV cache keeps at most 16
MAX_RSS_GROWTH_MB = 400

Rows = list[tuple[Any, ...]]


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Soak:
    """Random statements on txsql and their serial replay on DuckDB tables."""

    def __init__(self, session: Session, seed: int) -> None:
        self.s = session
        self.rng = random.Random(seed)
        self.model = duckdb_connection()
        self.next_id = 0
        self.versions: dict[str, dict[int, Rows]] = {t: {} for t in TABLES}
        self.conflicts = 0
        self.curve: list[tuple[int, float, int]] = []

    # -- the model ---------------------------------------------------------------------
    def rows(self, table: str) -> Rows:
        return sorted(self.model.execute(f"SELECT {COLUMNS} FROM {table}").fetchall())

    def committed(self, table: str, version: int | None) -> None:
        if version is not None:  # None: nothing to commit (e.g. no row matched)
            self.versions[table][version] = self.rows(table)

    # -- statements: each returns (txsql SQL, DuckDB SQL) -------------------------------
    def _row(self) -> str:
        self.next_id += 1
        i = self.next_id
        return f"({i}, {i % 4}, {self.rng.randrange(100)}, 's{i}')"

    def insert(self, t: str) -> tuple[str, str]:
        sql = f"INSERT INTO {t} VALUES " + ", ".join(
            self._row() for _ in range(self.rng.randint(1, 6))
        )
        return sql, sql

    def update(self, t: str) -> tuple[str, str]:
        m = self.rng.choice((3, 5, 7))
        sql = (
            f"UPDATE {t} SET v = v + {self.rng.randint(1, 9)}, s = 'u{self.rng.randrange(99)}' "
            f"WHERE id % {m} = {self.rng.randrange(m)}"
        )
        return sql, sql

    def delete(self, t: str) -> tuple[str, str]:
        sql = f"DELETE FROM {t} WHERE id % 11 = {self.rng.randrange(11)} AND v > 40"
        return sql, sql

    def merge(self, t: str) -> tuple[str, str]:
        existing = [r[0] for r in self.rows(t)]
        ids = self.rng.sample(existing, min(len(existing), 3))
        source = [f"({i}, {i % 4}, {self.rng.randrange(100)}, 'm{i}')" for i in ids]
        source += [self._row() for _ in range(self.rng.randint(1, 3))]
        clauses = (
            "ON t.id = src.id WHEN MATCHED AND src.v % 5 = 0 THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET v = t.v + src.v, s = src.s WHEN NOT MATCHED THEN "
        )
        values = ", ".join(source)
        spark_sql = (
            f"MERGE INTO {t} t USING (SELECT * FROM VALUES {values} AS src(id, p, v, s)) src "
            + clauses
            + "INSERT *"
        )
        duck_sql = (
            f"MERGE INTO {t} t USING (SELECT * FROM (VALUES {values}) AS src(id, p, v, s)) src "
            + clauses
            + "INSERT (id, p, v, s) VALUES (src.id, src.p, src.v, src.s)"
        )
        return spark_sql, duck_sql

    # -- steps ---------------------------------------------------------------------------
    def write(self, t: str, make: Callable[[str], tuple[str, str]]) -> None:
        spark_sql, duck_sql = make(t)
        result = self.s.sql(spark_sql)
        self.model.execute(duck_sql)
        if result.version is not None and result.operation != "SELECT":
            self.committed(t, result.version)

    def select(self, t: str) -> None:
        got = self.s.sql(f"SELECT {COLUMNS} FROM {t}").to_pandas()
        assert sorted(got.itertuples(index=False, name=None)) == self.rows(t), t

    def time_travel(self, t: str) -> None:
        if not self.versions[t]:
            return
        version = self.rng.choice(sorted(self.versions[t]))
        got = self.s.sql(f"SELECT {COLUMNS} FROM {t} VERSION AS OF {version}").to_pandas()
        rows = sorted(got.itertuples(index=False, name=None))
        assert rows == self.versions[t][version], (t, version)

    def transaction(self, t: str) -> None:
        self.s.sql("BEGIN")
        replay = []
        for make in self.rng.sample([self.insert, self.update, self.delete, self.merge], 2):
            spark_sql, duck_sql = make(t)
            self.s.sql(spark_sql)
            replay.append(duck_sql)
        result = self.s.sql("COMMIT")
        for duck_sql in replay:
            self.model.execute(duck_sql)
        if result.version is not None:
            self.committed(t, result.version)

    def conflict(self, t: str) -> None:
        """Two writers of one row from one snapshot: the second to commit must lose."""
        existing = [r[0] for r in self.rows(t)]
        if not existing:
            return
        row = self.rng.choice(existing)
        tx = self.s.begin()
        tx.sql(f"UPDATE {t} SET v = v + 1000 WHERE id = {row}")
        winner = f"UPDATE {t} SET v = v + 1 WHERE id = {row}"
        self.write(t, lambda _: (winner, winner))
        with pytest.raises(CommitConflictError):
            tx.commit()
        self.conflicts += 1

    def rollback(self, t: str) -> None:
        tx = self.s.begin()
        tx.sql(self.insert(t)[0])
        tx.rollback()

    def maintenance(self, t: str) -> None:
        statement = self.rng.choice(("OPTIMIZE", "VACUUM", "HISTORY"))
        if statement == "HISTORY":
            history = self.s.sql(f"DESCRIBE HISTORY {t}").to_pandas()
            assert int(history["version"].max()) == self.s.table(t).version()
            return
        result = self.s.sql(f"{statement} {t}")
        if statement == "OPTIMIZE" and result.version is not None:
            self.committed(t, result.version)

    def step(self, i: int) -> None:
        t = self.rng.choice(list(TABLES))
        kinds: list[tuple[Callable[[str], None], int]] = [
            (lambda t: self.write(t, self.insert), 5),
            (lambda t: self.write(t, self.update), 3),
            (lambda t: self.write(t, self.delete), 2),
            (lambda t: self.write(t, self.merge), 4),
            (self.select, 3),
            (self.time_travel, 2),
            (self.transaction, 1),
            (self.conflict, 1),
            (self.rollback, 1),
            (self.maintenance, 1),
        ]
        step = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        step(t)
        if self.rng.random() < 0.1:
            gc.collect()


def _persisted_rdds(spark: Any) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


@pytest.mark.spark
@pytest.mark.interop
def test_soak_mixed_statements_with_gc(spark: Any, tmp_path: Path) -> None:
    s = Session(spark, warehouse=str(tmp_path))
    soak = Soak(s, seed=int(os.environ.get("TXSQL_SOAK_SEED", "21")))
    for t, create in TABLES.items():
        s.sql(create)
        soak.model.execute(create.split(" PARTITIONED")[0].split(" TBLPROPERTIES")[0])
        soak.write(t, soak.insert)
    sample_every = max(STATEMENTS // 20, 1)
    for i in range(STATEMENTS):
        try:
            soak.step(i)
        except Exception as e:
            raise AssertionError(f"statement {i} failed: {e!r}") from e
        if i % sample_every == 0 or i == STATEMENTS - 1:
            soak.curve.append((i, _rss_mb(), _persisted_rdds(spark)))

    print("\nstatement  driver RSS (MB)  persisted RDDs")
    for i, rss, rdds in soak.curve:
        print(f"{i:9d}  {rss:15.0f}  {rdds:14d}")
    print(f"provoked conflicts: {soak.conflicts}")

    assert max(rdds for _, _, rdds in soak.curve) <= MAX_PERSISTED_RDDS
    settled = soak.curve[len(soak.curve) // 4][1]  # after the first statements' JIT and caches
    assert soak.curve[-1][1] - settled <= MAX_RSS_GROWTH_MB
    assert soak.conflicts > 0 or STATEMENTS < 50

    for t in TABLES:
        path = s.table(t).location
        latest = s.table(t).version()
        assert duckdb_rows(path, latest, COLUMNS) == soak.rows(t), t
        sampled = random.Random(t).sample(sorted(soak.versions[t]), min(4, len(soak.versions[t])))
        for version in sampled:
            expected = soak.versions[t][version]
            assert duckdb_rows(path, version, COLUMNS) == expected, (t, version)
            assert deltalake_rows(path, version, COLUMNS) == expected, (t, version)
