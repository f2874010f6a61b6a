"""Compaction racing DML on a table keeping stable row ids: both commit, every id survives.

Twenty seeded rounds on one ``delta.enableRowTracking`` table with deletion vectors. Each
round interleaves an OPTIMIZE or REORG PURGE with an UPDATE, DELETE or MERGE (explicit
transactions, either one committing first): both commit (the row-level compaction rules),
the rows equal the serial result computed here in plain Python and read by DuckDB, and
each surviving row keeps its id. An updated row's commit version is the version the DML
landed at; an inserted row gets an id no row had before. The ids come from txsql's scan
and must be among the rows the JSON-and-pyarrow oracle of ``tests/interop/row_ids.py``
computes.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from tests.interop.row_ids import Lineage, lineage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROUNDS = 20


def test_compaction_racing_dml_keeps_every_row_id(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(35)
    s = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    s.sql(
        "CREATE TABLE t (id INT, v INT) TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
        "'delta.enableDeletionVectors' = 'true')"
    )
    s.sql("INSERT INTO t SELECT id, 0 FROM range(1, 9)")
    location = s.table("t").location
    rows = dict.fromkeys(range(1, 9), 0)
    for round_ in range(ROUNDS):
        # New small files and a deletion vector: work for either compaction.
        filler = 1000 + round_
        s.sql(f"INSERT INTO t VALUES ({filler}, -1), ({filler + 100}, -1)")
        s.sql(f"DELETE FROM t WHERE id = {filler + 100}")
        rows[filler] = -1
        _, before = lineage(spark, location)
        statement, changed, rows_after = _dml(rng, rows, round_)
        compaction = rng.choice(["OPTIMIZE t", "REORG TABLE t APPLY (PURGE)"])
        dml_wins = rng.random() < 0.5
        start = s.table("t").version()
        loser = s.begin()
        loser.sql(compaction if dml_wins else statement)
        s.sql(statement if dml_wins else compaction)
        committed = loser.commit()
        label = f"round {round_}: {compaction} / {statement}"
        assert committed.version == start + 2, f"{label}: both committed"
        dml_version = start + 1 if dml_wins else start + 2
        version, after = lineage(spark, location)
        assert version == start + 2
        rows = rows_after
        assert _values(s) == rows, label
        _assert_ids_kept(before, after, changed, dml_version, label)


def _dml(
    rng: random.Random, rows: dict[int, int], round_: int
) -> tuple[str, set[int], dict[int, int]]:
    """A random DML on live keys: its SQL, the keys it changes and the serial result."""
    keys = sorted(rows)
    kind = rng.choice(["update", "delete", "merge"])
    if kind == "update":
        picked = set(rng.sample(keys, 2))
        listed = ", ".join(map(str, sorted(picked)))
        after = {k: v + 1 if k in picked else v for k, v in rows.items()}
        return f"UPDATE t SET v = v + 1 WHERE id IN ({listed})", picked, after
    if kind == "delete":
        gone = rng.choice(keys)
        return (
            f"DELETE FROM t WHERE id = {gone}",
            {gone},
            {k: v for k, v in rows.items() if k != gone},
        )
    matched, new = rng.choice(keys), 5000 + round_
    statement = (
        f"MERGE INTO t USING (SELECT {matched} AS id UNION ALL SELECT {new}) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = t.v + 10 "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 7)"
    )
    return statement, {matched, new}, {**rows, matched: rows[matched] + 10, new: 7}


def _values(s: txsql.Session) -> dict[int, int]:
    return {int(r[0]): int(r[1]) for r in s.sql("SELECT id, v FROM t").df.collect()}


def _assert_ids_kept(
    before: Lineage, after: Lineage, changed: set[int], dml_version: int, label: str
) -> None:
    highest = max(row_id for row_id, _ in before.values())
    for key, (row_id, version) in after.items():
        if key not in before:  # inserted by the MERGE: a fresh id and its version
            assert row_id > highest and version == dml_version, label
        elif key in changed:  # updated: the same id, the DML's version
            assert (row_id, version) == (before[key][0], dml_version), label
        else:
            assert (row_id, version) == before[key], label
