"""Row lineage (``Table.lineage`` and ``%txsql lineage``): one line per version that
changed each picked row, found by its stable id.

The expected lines come from the statements themselves (what each version did to the
row, replayed here in plain Python); the row ids must be those the JSON-and-pyarrow
oracle of ``tests/interop/row_ids.py`` computes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import txsql
from tests.interop.row_ids import lineage
from tests.magics import cell, ip  # noqa: F401  (the ip fixture)
from txsql.errors import SqlError, UnsupportedFeatureError

pytestmark = pytest.mark.spark

STATEMENTS = [
    "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
    "INSERT INTO t VALUES (1, 'a'), (2, 'b')",  # v1
    "UPDATE t SET v = 'x' WHERE id = 2",  # v2
    "INSERT INTO t VALUES (3, 'c')",  # v3
    "MERGE INTO t USING (SELECT 2 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'm'",
    "OPTIMIZE t",  # v5: moves rows, changes none
]
# Each row's changes, newest first: (version, operation, before, after).
EXPECTED = {
    1: [(1, "WRITE", None, {"id": 1, "v": "a"})],
    2: [
        (4, "MERGE", {"id": 2, "v": "x"}, {"id": 2, "v": "m"}),
        (2, "UPDATE", {"id": 2, "v": "b"}, {"id": 2, "v": "x"}),
        (1, "WRITE", None, {"id": 2, "v": "b"}),
    ],
    3: [(3, "WRITE", None, {"id": 3, "v": "c"})],
}


def test_lineage_of_rows(spark: Any, tmp_path: Path) -> None:
    s = txsql.Session(spark, warehouse=str(tmp_path / "wh"))
    for statement in STATEMENTS:
        s.sql(statement)
    _, ids = lineage(spark, s.table("t").location)
    found = s.table("t").lineage()
    for key, changes in EXPECTED.items():
        lines = found[found["row_id"] == ids[key][0]]
        got = [(r.version, r.operation, r.before, r.after) for r in lines.itertuples()]
        assert got == changes, key
    only_two = s.table("t").lineage("v = 'm'")
    assert set(only_two["row_id"]) == {ids[2][0]} and len(only_two) == 3
    assert s.table("t").lineage("id = 99").empty
    with pytest.raises(SqlError, match="cannot evaluate") as bad:
        s.table("t").lineage("nope = 1")
    assert bad.value.hint
    s.sql("CREATE TABLE plain (id BIGINT)")
    with pytest.raises(UnsupportedFeatureError, match="row tracking"):
        s.table("plain").lineage()


def test_lineage_magic(ip: Any) -> None:  # noqa: F811
    for statement in STATEMENTS:
        cell(ip, statement)
    view = ip.run_line_magic("txsql", "lineage t WHERE id = 2")
    text = repr(view)
    assert text.count("\n") == 4  # header, rule, three changes
    assert "MERGE" in text and "id=2, v='x'" in text and "inserted" in text
    assert "<table" in view._repr_html_()
