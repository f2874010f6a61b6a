"""``_metadata.row_id`` / ``_metadata.row_commit_version`` in SELECT, WHERE and time travel.

The values must be the stable ids the JSON-and-pyarrow oracle (``tests/interop/row_ids.py``)
computes for the same version; ``*`` never shows the struct; a table without row tracking
is refused by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.row_ids import lineage
from txsql.errors import UnsupportedFeatureError

pytestmark = pytest.mark.spark


def test_row_ids_in_queries(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    s.sql("CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    s.sql("INSERT INTO t VALUES (3, 'c')")
    first, at_first = lineage(spark, s.table("t").location)
    s.sql("UPDATE t SET v = 'x' WHERE id = 2")
    s.sql("OPTIMIZE t")
    _, now = lineage(spark, s.table("t").location)

    def ids(sql: str) -> dict[int, tuple[int, int]]:
        return {r[0]: (r[1], r[2]) for r in s.sql(sql).df.collect()}

    query = "SELECT id, _metadata.row_id, _metadata.row_commit_version FROM t"
    assert ids(query) == now
    assert ids(query.replace("FROM t", f"FROM t VERSION AS OF {first}")) == at_first
    assert ids(query.replace("FROM t", "FROM t AS a").replace("_metadata", "a._metadata")) == now
    row_id_of_2 = now[2][0]
    found = s.sql(f"SELECT id FROM t WHERE _metadata.row_id = {row_id_of_2}").df.collect()
    assert [r.id for r in found] == [2]
    star = s.sql("SELECT *, _metadata.row_id AS rid FROM t").df
    assert star.columns == ["id", "v", "rid"]
    nested = s.sql("SELECT * FROM (SELECT t.*, _metadata.row_id AS rid FROM t) ORDER BY id").df
    assert [tuple(r) for r in nested.collect()] == [
        (k, v, now[k][0]) for k, v in ((1, "a"), (2, "x"), (3, "c"))
    ]
    s.sql("CREATE TABLE plain (id BIGINT)")
    with pytest.raises(UnsupportedFeatureError, match="row tracking") as refused:
        s.sql("SELECT _metadata.row_id FROM plain")
    assert "delta.enableRowTracking" in (refused.value.hint or "")
