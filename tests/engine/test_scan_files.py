"""Scans of data files: Spark's name of each file is learned once per session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.classic.dataframe import DataFrame

import txsql
from txsql.errors import DataFileError

pytestmark = pytest.mark.spark


def _ids(s: txsql.Session) -> list[int]:
    return sorted(r.id for r in s.sql("SELECT id FROM t").df.collect())


def test_a_new_version_of_known_files_does_not_ask_spark_for_their_paths(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DELETE adds a DV and a version, not a file: the next scan plans anew, but
    ``inputFiles()`` (a JVM round trip per file) is not needed for files already read; a
    file removed behind the log's back is still a typed error on that path."""
    s = txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id INT)")
    s.sql("INSERT INTO t VALUES (1), (2), (3)")
    assert _ids(s) == [1, 2, 3]
    s.sql("DELETE FROM t WHERE id = 2")
    asked: list[int] = []
    real = DataFrame.inputFiles

    def counted(self: DataFrame) -> list[str]:
        asked.append(1)
        return real(self)

    monkeypatch.setattr(DataFrame, "inputFiles", counted)
    assert _ids(s) == [1, 3]
    assert asked == []
    s.sql("DELETE FROM t WHERE id = 3")
    for path in Path(s.table("t").location).glob("*.parquet"):
        os.unlink(path)
    with pytest.raises(DataFileError, match="does not exist"):
        _ids(s)
