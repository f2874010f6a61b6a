"""A time-travel read of a version whose files VACUUM deleted is a typed error naming the
versions that can still be read; DuckDB's delta_scan is the oracle for which can."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.engine.readable_versions import table_root_of
from txsql.errors import DataFileError, VacuumedVersionError, VersionNotFoundError
from txsql.log.deltalog import DeltaLog
from txsql.storage.filesystem import LocalFileIO
from txsql.storage.paths import resolve_in_root

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _history(s: txsql.Session) -> str:
    """Versions 0-6 of a partitioned table without DVs, whose early files later leave it."""
    s.sql(
        "CREATE TABLE t (id INT, p INT) PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')"
    )
    s.sql("INSERT INTO t VALUES (1, 1), (2, 1)")  # v1
    s.sql("INSERT INTO t VALUES (3, 2)")  # v2
    s.sql("DELETE FROM t WHERE id = 1")  # v3: rewrites p=1, its v1 file leaves the table
    s.sql("INSERT INTO t VALUES (4, 2)")  # v4
    s.sql("DELETE FROM t WHERE id = 3")  # v5: rewrites p=2, the v2 and v4 files leave it
    s.sql("INSERT INTO t VALUES (5, 3)")  # v6
    return s.table("t").location


def _vacuum(root: str) -> None:
    """What VACUUM RETAIN 0 HOURS deletes: every data file the latest version does not use
    (done by hand so the test does not depend on VACUUM's own retention rules)."""
    live = {resolve_in_root(root, f.path) for f in DeltaLog.for_path(root).snapshot().files}
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        for name in names:
            path = os.path.join(directory, name)
            if name.endswith(".parquet") and path not in live:
                os.unlink(path)


def _duckdb_can_read(root: str, version: int) -> bool:
    try:
        duckdb_rows(root, version, "id")
    except Exception:
        return False
    return True


def test_reading_a_vacuumed_version_names_the_readable_ones(s: txsql.Session) -> None:
    root = _history(s)
    _vacuum(root)
    # The oracle: versions 5 and 6 have all their files; 4 lacks the v2 file.
    assert [_duckdb_can_read(root, v) for v in (4, 5, 6)] == [False, True, True]
    for version in (1, 2, 3, 4):
        statement = f"SELECT * FROM t VERSION AS OF {version}"
        with pytest.raises(VacuumedVersionError) as caught:
            s.sql(statement).collect()
        error = caught.value
        assert isinstance(error, VersionNotFoundError) and isinstance(error, DataFileError)
        assert (error.oldest_readable, error.latest) == (5, 6)
        assert "versions 5 to 6 still have all their files" in error.message
        assert "VERSION AS OF 5" in error.hint and error.statement == statement
        assert error.path is not None and not os.path.exists(error.path)
    assert sorted(tuple(r) for r in s.sql("SELECT * FROM t VERSION AS OF 5").collect()) == [
        (2, 1),
        (4, 2),
    ]


def test_a_version_vacuumed_between_the_statement_and_the_fetch(s: txsql.Session) -> None:
    root = _history(s)
    result = s.sql("SELECT * FROM t VERSION AS OF 2")  # planned while the files exist
    _vacuum(root)
    for fetch in (result.collect, result.to_pandas, result.show, lambda: result.take(1)):
        with pytest.raises(VacuumedVersionError) as caught:
            fetch()
        assert caught.value.message.startswith("version 2 of the table at ")
        assert caught.value.oldest_readable == 5


def test_a_file_the_latest_version_needs_stays_a_data_file_error(s: txsql.Session) -> None:
    root = _history(s)
    live = [resolve_in_root(root, f.path) for f in DeltaLog.for_path(root).snapshot().files]
    os.unlink(live[0])  # damage, not VACUUM: no version is "still readable" to suggest
    with pytest.raises(DataFileError) as caught:
        s.sql("SELECT * FROM t").collect()
    assert not isinstance(caught.value, VacuumedVersionError)


def test_table_root_is_found_above_partition_directories(tmp_path: Path) -> None:
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").write_text("{}")
    found = table_root_of(str(tmp_path / "t" / "a=1" / "b=2" / "part-0.parquet"), LocalFileIO())
    assert found == str(tmp_path / "t")
    assert table_root_of(str(tmp_path / "elsewhere" / "part-0.parquet"), LocalFileIO()) is None
