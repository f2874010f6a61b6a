"""Tables txsql creates with ``delta.checkpointPolicy = 'v2'``: the protocol lists
v2Checkpoint, checkpoints are UUID-named with sidecars once big, and DuckDB's delta
extension and deltalake read the table from txsql's checkpoint alone (commits deleted).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.readers import deltalake_rows, duckdb_rows
from txsql.log import checkpoint_v2
from txsql.log.deltalog import DeltaLog

pytestmark = pytest.mark.spark

UUID_NAME = re.compile(r"(\d{20})\.checkpoint\.[0-9a-f-]{36}\.parquet")


def _rows(s: txsql.Session, name: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(f"SELECT id, p FROM {name}").df.collect())


@pytest.mark.parametrize("sidecars", [False, True], ids=["inline", "sidecars"])
def test_v2_policy_table_read_by_others_from_the_checkpoint_alone(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sidecars: bool
) -> None:
    if sidecars:
        monkeypatch.setattr(checkpoint_v2, "SIDECAR_MIN_FILE_ACTIONS", 2)
        monkeypatch.setattr(checkpoint_v2, "SIDECAR_FILE_ACTIONS", 3)
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql(
        "CREATE TABLE v (id BIGINT, p STRING) PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '5')"
    )
    path = s.table("v").location
    protocol = DeltaLog.for_path(path).snapshot().protocol
    assert "v2Checkpoint" in (protocol.reader_features or ())
    assert "v2Checkpoint" in (protocol.writer_features or ())
    for i in range(6):
        s.sql(f"INSERT INTO v VALUES ({i}, 'x{i % 2}'), ({i + 100}, 'y')")
    s.sql("DELETE FROM v WHERE id = 101")  # a deletion vector
    s.sql("UPDATE v SET id = id + 1000 WHERE id = 3")  # version 8
    s.sql("ALTER TABLE v SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")  # 9: checkpoint
    log_dir = Path(path) / "_delta_log"
    uuid_named = sorted(p.name for p in log_dir.iterdir() if UUID_NAME.fullmatch(p.name))
    assert [int(n[:20]) for n in uuid_named] == [5, 9]
    assert not list(log_dir.glob("*.checkpoint.parquet"))
    side = log_dir / "_sidecars"
    assert (side.exists() and len(list(side.iterdir())) >= 2) == sidecars
    for version in range(9):
        (log_dir / f"{version:020d}.json").unlink()
    expected = _rows(s, "v")
    assert (3, "x1") not in expected and (1003, "x1") in expected and len(expected) == 11
    assert duckdb_rows(path, 9, "id, p") == expected
    assert deltalake_rows(path, 9, "id, p") == expected
    s.sql("INSERT INTO v VALUES (7, 'x1')")  # writes on top of a UUID checkpoint
    assert duckdb_rows(path, 10, "id, p") == sorted([*expected, (7, "x1")])


def test_alter_to_v2_policy_upgrades_the_protocol(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark=spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE c (id BIGINT, p STRING)")
    s.sql("INSERT INTO c VALUES (1, 'a')")
    s.sql(
        "ALTER TABLE c SET TBLPROPERTIES "
        "('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '1')"
    )
    path = s.table("c").location
    snapshot = DeltaLog.for_path(path).snapshot()
    assert "v2Checkpoint" in (snapshot.protocol.reader_features or ())
    s.sql("INSERT INTO c VALUES (2, 'b')")
    log_dir = Path(path) / "_delta_log"
    assert any(UUID_NAME.fullmatch(p.name) for p in log_dir.iterdir())
    assert duckdb_rows(path, 3, "id, p") == deltalake_rows(path, 3, "id, p") == [(1, "a"), (2, "b")]
