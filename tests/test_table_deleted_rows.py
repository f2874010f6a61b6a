"""Table.deleted_rows: the positions a deletion vector marks, checked against the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import txsql
from txsql.errors import DataFileError

pytestmark = pytest.mark.spark


def test_deleted_rows_are_the_positions_of_the_deleted_ids(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path))
    s.sql("CREATE TABLE e (id BIGINT)")
    s.sql("INSERT INTO e SELECT id FROM range(20) DISTRIBUTE BY 1 SORT BY id DESC")
    table = s.table("e")
    (before,) = table.snapshot().files
    assert table.deleted_rows(before.path) == [], "no deletion vector yet"
    s.sql("DELETE FROM e WHERE id % 7 = 3")
    (after,) = table.snapshot().files
    assert after.path == before.path and after.deletion_vector is not None
    # Oracle: the ids as pyarrow reads them from the Parquet file, in file order.
    ids = pq.read_table(f"{table.location}/{after.path}").column("id").to_pylist()
    assert table.deleted_rows(after.path) == [i for i, v in enumerate(ids) if v % 7 == 3]
    assert table.deleted_rows(before.path, version=1) == []
    with pytest.raises(DataFileError, match="has no data file"):
        table.deleted_rows("nope.parquet")
