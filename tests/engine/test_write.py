"""write_data_files: staging, final paths, partition values and footer statistics."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from txsql.engine.file_stats import truncate_max, truncate_min
from txsql.engine.write import STAGING_DIR, write_data_files
from txsql.log.actions import Metadata

pytestmark = pytest.mark.spark


def metadata_for(df: Any, partitions: tuple[str, ...] = (), /, **conf: str) -> Metadata:
    return Metadata(
        id="t",
        schema_string=df.schema.json(),
        partition_columns=partitions,
        configuration=dict(conf),
    )


def test_stats_match_pyarrow(spark: Any, tmp_path: Path) -> None:
    df = spark.sql(
        "select id, cast(id * 1.5 as double) x, case when id % 4 = 0 then null else "
        "concat('k', repeat('é', cast(id as int))) end s, "
        "timestamp'2024-01-01 00:00:00.123456' + make_interval(0,0,0,cast(id as int)) ts, "
        "date_add(date'2024-01-01', cast(id as int)) d, cast(id as decimal(12,3)) dec, "
        "named_struct('a', id * 2, 'b', cast(null as string)) st, id % 2 = 0 flag "
        "from range(50)"
    ).repartition(3)
    adds = write_data_files(spark, df, str(tmp_path), metadata_for(df))
    assert len(adds) == 3 and sum(json.loads(a.stats or "")["numRecords"] for a in adds) == 50
    for add in adds:
        stats = json.loads(add.stats or "")
        table = pq.read_table(tmp_path / unquote(add.path))
        assert stats["numRecords"] == table.num_rows
        for name in ("id", "x", "d"):
            col = table.column(name)
            assert stats["nullCount"][name] == col.null_count
        lo, hi = pc.min_max(table.column("id")).values()
        assert (stats["minValues"]["id"], stats["maxValues"]["id"]) == (lo.as_py(), hi.as_py())
        lo, hi = pc.min_max(table.column("d")).values()
        assert (stats["minValues"]["d"], stats["maxValues"]["d"]) == (
            lo.as_py().isoformat(),
            hi.as_py().isoformat(),
        )
        lo, hi = pc.min_max(table.column("s")).values()
        assert stats["minValues"]["s"] == truncate_min(lo.as_py())
        assert stats["maxValues"]["s"] == truncate_max(hi.as_py())
        assert stats["maxValues"]["s"] >= hi.as_py()[:32]
        assert stats["nullCount"]["s"] == table.column("s").null_count
        lo, hi = pc.min_max(table.column("ts")).values()
        assert stats["minValues"]["ts"] == lo.as_py().strftime("%Y-%m-%dT%H:%M:%S.123Z")
        assert stats["minValues"]["dec"] == float(pc.min(table.column("dec")).as_py())
        assert stats["minValues"]["st"] == {
            "a": pc.min(pc.struct_field(table.column("st"), [0])).as_py()
        }
        assert stats["nullCount"]["st"] == {"a": 0, "b": table.num_rows}
        assert "flag" not in stats["minValues"] and stats["nullCount"]["flag"] == 0


def test_stats_column_selection(spark: Any, tmp_path: Path) -> None:
    df = spark.sql("select id a, id b, named_struct('x', id, 'y', id) c, id d from range(3)")
    (one,) = write_data_files(
        spark,
        df.coalesce(1),
        str(tmp_path / "n"),
        metadata_for(df, **{"delta.dataSkippingNumIndexedCols": "3"}),
    )
    assert json.loads(one.stats or "")["nullCount"] == {"a": 0, "b": 0, "c": {"x": 0}}
    (two,) = write_data_files(
        spark,
        df.coalesce(1),
        str(tmp_path / "s"),
        metadata_for(df, **{"delta.dataSkippingStatsColumns": "d, c"}),
    )
    assert json.loads(two.stats or "")["maxValues"] == {"c": {"x": 2, "y": 2}, "d": 2}


def test_partitioned_paths_and_values(spark: Any, tmp_path: Path) -> None:
    df = spark.sql(
        "select id, case when id = 0 then null when id = 1 then '' else concat('a b/%', id) end p, "
        "cast(id % 2 as int) n, timestamp'2024-01-01 10:00:00' t from range(4)"
    )
    adds = write_data_files(spark, df, str(tmp_path), metadata_for(df, ("p", "n", "t")))
    values = sorted((a.partition_values["p"] or "", a.partition_values["n"]) for a in adds)
    assert values == [("", "0"), ("", "1"), ("a b/%2", "0"), ("a b/%3", "1")]
    for add in adds:
        assert " " not in add.path and os.path.isfile(tmp_path / unquote(add.path))
        assert add.data_change and add.size == os.path.getsize(tmp_path / unquote(add.path))
        assert add.partition_values["t"] == "2024-01-01 10:00:00.000000"
        first = unquote(add.path).split("/")[0]
        assert first.startswith("p=")
        # Partition columns live in the directory names only, not in the file.
        assert pq.read_schema(tmp_path / unquote(add.path)).names == ["id"]
    assert not (tmp_path / STAGING_DIR).exists()


def test_concurrent_writers_do_not_clobber(spark: Any, tmp_path: Path) -> None:
    df = spark.sql("select id, cast(id % 3 as int) g from range(30)")
    meta = metadata_for(df, ("g",))
    results: list[list[Any]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(write_data_files(spark, df, str(tmp_path), meta))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    paths = [a.path for adds in results for a in adds]
    assert len(paths) == len(set(paths))
    total = sum(pq.read_metadata(tmp_path / unquote(p)).num_rows for p in paths)
    assert total == 90
    assert not (tmp_path / STAGING_DIR).exists()


def test_truncation_rules() -> None:
    assert truncate_min("abcdef", 3) == "abc"
    assert truncate_max("abcdef", 3) == "abc\x7f"
    assert truncate_max("abcé", 3) == "abc\U0010ffff"  # é > DEL in UTF-8 order
    assert truncate_max("abc\U0010ffffz", 3) == "abc\U0010ffff\x7f"
    assert truncate_max("ab\U0001f600cd", 3) == "ab\U0001f600\x7f"  # no split surrogate
    assert truncate_max("a" + "\U0010ffff" * 4, 1) is None
    assert truncate_max("ab", 3) == "ab"
    assert dt.date(2024, 1, 1).isoformat() == "2024-01-01"
