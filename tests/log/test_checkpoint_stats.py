"""``delta.checkpoint.writeStatsAsJson`` / ``writeStatsAsStruct`` in written checkpoints, and
``stats_parsed``-only checkpoints read back with their stats.

The oracle for what is written is pyarrow reading the checkpoint Parquet, compared with
types and values spelled out here from the stats JSON.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from txsql.log.actions import Action, AddFile, CommitInfo, Metadata, Protocol, RemoveFile
from txsql.log.checkpoint import write_checkpoint
from txsql.log.checkpoint_v2 import write_v2_checkpoint
from txsql.log.codec import encode_commit
from txsql.log.file_skipping import may_match_file
from txsql.log.predicates import Column, Comparison, Literal
from txsql.log.replay import load_snapshot
from txsql.log.schema import parse_schema
from txsql.log.segment import find_segment
from txsql.log.snapshot import Snapshot
from txsql.storage import LocalFileIO, LogStore

JSON_KEY = "delta.checkpoint.writeStatsAsJson"
STRUCT_KEY = "delta.checkpoint.writeStatsAsStruct"
CHECKPOINT = f"{1:020d}.checkpoint.parquet"
UTC = dt.timezone.utc


def _field(name: str, type_: Any, physical: str | None = None) -> dict[str, Any]:
    meta = {} if physical is None else {"delta.columnMapping.physicalName": physical}
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


COLUMNS = [
    _field("id", "long"),
    _field("i", "integer"),
    _field("s", "string"),
    _field("d", "date"),
    _field("ts", "timestamp"),
    _field("ntz", "timestamp_ntz"),
    _field("dec", "decimal(10,2)"),
    _field("f", "float"),
    _field("b", "boolean"),
    _field("bin", "binary"),
    _field("n", {"type": "struct", "fields": [_field("x", "long"), _field("y", "string")]}),
    _field("arr", {"type": "array", "elementType": "integer", "containsNull": True}),
    _field("p", "integer"),
]
SCHEMA = json.dumps({"type": "struct", "fields": COLUMNS})
STATS_1 = json.dumps(
    {
        "numRecords": 3,
        "minValues": {"id": 1, "i": -5, "s": "apple", "d": "2024-01-02",
                      "ts": "2024-01-02T03:04:05.123Z", "ntz": "2024-01-02T03:04:05.000",
                      "dec": 1.5, "f": -1.25, "n": {"x": 7, "y": "a"}},
        "maxValues": {"id": 9, "i": 5, "s": "pear", "d": "2024-03-01",
                      "ts": "2024-03-01T00:00:00.000Z", "ntz": "2024-03-01T00:00:00.001",
                      "dec": 12345678.99, "f": "Infinity", "n": {"x": 8, "y": "b"}},
        "nullCount": {"id": 0, "i": 1, "s": 0, "d": 0, "ts": 0, "ntz": 0, "dec": 0, "f": 0,
                      "b": 2, "bin": 3, "n": {"x": 0, "y": 1}, "arr": 0},
        "tightBounds": True,
    }
)  # fmt: skip
# A file written before 'i' got stats: no entry for it, and loose bounds.
STATS_2 = json.dumps(
    {
        "numRecords": 1,
        "minValues": {"id": 10},
        "maxValues": {"id": 10},
        "nullCount": {"id": 0},
        "tightBounds": False,
    }
)
BOUNDS_TYPE = pa.struct(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("dec", pa.decimal128(10, 2)),
        ("f", pa.float32()),
        ("n", pa.struct([("x", pa.int64()), ("y", pa.string())])),
    ]
)
NULL_COUNT_TYPE = pa.struct(
    [(n, pa.int64()) for n in ("id", "i", "s", "d", "ts", "ntz", "dec", "f", "b", "bin")]
    + [("n", pa.struct([("x", pa.int64()), ("y", pa.int64())])), ("arr", pa.int64())]
)
STATS_PARSED_TYPE = pa.struct(
    [
        ("numRecords", pa.int64()),
        ("minValues", BOUNDS_TYPE),
        ("maxValues", BOUNDS_TYPE),
        ("nullCount", NULL_COUNT_TYPE),
        ("tightBounds", pa.bool_()),
    ]
)
EXPECTED_1 = {
    "numRecords": 3,
    "minValues": {"id": 1, "i": -5, "s": "apple", "d": dt.date(2024, 1, 2),
                  "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC),
                  "ntz": dt.datetime(2024, 1, 2, 3, 4, 5), "dec": Decimal("1.50"), "f": -1.25,
                  "n": {"x": 7, "y": "a"}},
    "maxValues": {"id": 9, "i": 5, "s": "pear", "d": dt.date(2024, 3, 1),
                  "ts": dt.datetime(2024, 3, 1, tzinfo=UTC),
                  "ntz": dt.datetime(2024, 3, 1, 0, 0, 0, 1000), "dec": Decimal("12345678.99"),
                  "f": float("inf"), "n": {"x": 8, "y": "b"}},
    "nullCount": {"id": 0, "i": 1, "s": 0, "d": 0, "ts": 0, "ntz": 0, "dec": 0, "f": 0, "b": 2,
                  "bin": 3, "n": {"x": 0, "y": 1}, "arr": 0},
    "tightBounds": True,
}  # fmt: skip
_NULL_BOUNDS = dict.fromkeys(BOUNDS_TYPE.names) | {"n": None}
EXPECTED_2 = {
    "numRecords": 1,
    "minValues": _NULL_BOUNDS | {"id": 10},
    "maxValues": _NULL_BOUNDS | {"id": 10},
    "nullCount": dict.fromkeys(NULL_COUNT_TYPE.names) | {"id": 0},
    "tightBounds": False,
}


def _write_table(
    store: LogStore,
    configuration: dict[str, str],
    schema: str = SCHEMA,
    files: list[AddFile] | None = None,
) -> Snapshot:
    meta = Metadata("m", schema, ("p",), configuration)
    adds = files or [
        AddFile("p=1/a.parquet", {"p": "1"}, 10, 5, stats=STATS_1),
        AddFile("p=2/b.parquet", {"p": "2"}, 20, 6, stats=STATS_2),
        AddFile("p=2/c.parquet", {"p": "2"}, 30, 7),  # no stats at all
    ]
    first: list[Action] = [CommitInfo(timestamp=1, operation="CREATE TABLE"), Protocol(1, 2), meta]
    store.write_if_absent(0, encode_commit([*first, *adds]))
    gone = RemoveFile("p=9/old.parquet", 2**62, True, True, {"p": "9"}, 5, stats=STATS_2)
    store.write_if_absent(1, encode_commit([gone]))
    return load_snapshot(store, find_segment(store))


def _checkpoint_adds(path: Path) -> tuple[pa.StructType, dict[str, dict[str, Any]]]:
    """The ``add`` type of a checkpoint file and its rows by path, read with pyarrow alone."""
    table = pq.read_table(path)
    rows = [r for r in table.column("add").to_pylist() if r is not None]
    return table.schema.field("add").type, {r["path"]: r for r in rows}


@pytest.mark.parametrize(
    ("configuration", "has_json", "has_struct"),
    [
        ({}, True, False),
        ({JSON_KEY: "true", STRUCT_KEY: "false"}, True, False),
        ({JSON_KEY: "false", STRUCT_KEY: "true"}, False, True),
        ({JSON_KEY: "true", STRUCT_KEY: "true"}, True, True),
        ({JSON_KEY: "false", STRUCT_KEY: "false"}, False, False),
    ],
)
def test_properties_choose_stats_columns(
    tmp_path: Path, configuration: dict[str, str], has_json: bool, has_struct: bool
) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    write_checkpoint(store, _write_table(store, configuration))
    add_type, rows = _checkpoint_adds(tmp_path / "_delta_log" / CHECKPOINT)
    expected_names = [
        "path", "partitionValues", "size", "modificationTime", "dataChange", "tags",
        "deletionVector", "baseRowId", "defaultRowCommitVersion",
        *(["stats"] if has_json else []), *(["stats_parsed"] if has_struct else []),
        "partitionValues_parsed",
    ]  # fmt: skip
    assert [f.name for f in add_type] == expected_names
    assert add_type.field("partitionValues_parsed").type == pa.struct([("p", pa.int32())])
    if has_json:
        assert [rows[p]["stats"] for p in sorted(rows)] == [STATS_1, STATS_2, None]
    if has_struct:
        assert add_type.field("stats_parsed").type == STATS_PARSED_TYPE
        parsed = {p: r["stats_parsed"] for p, r in rows.items()}
        assert parsed["p=1/a.parquet"] == EXPECTED_1
        assert parsed["p=2/b.parquet"] == EXPECTED_2
        assert parsed["p=2/c.parquet"] is None
    remove_type = pq.read_schema(tmp_path / "_delta_log" / CHECKPOINT).field("remove").type
    assert "stats" not in remove_type.names and "stats_parsed" not in remove_type.names


def test_column_mapping_uses_physical_names(tmp_path: Path) -> None:
    inner = {
        "type": "struct",
        "fields": [_field("x", "long", "col-x"), _field("y", "date", "col-y")],
    }
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [
                _field("id", "long", "col-id"),
                _field("n", inner, "col-n"),
                _field("p", "integer", "col-p"),
            ],
        }
    )
    stats = json.dumps(
        {
            "numRecords": 2,
            "minValues": {"col-id": 1, "col-n": {"col-x": 3, "col-y": "2020-02-29"}},
            "maxValues": {"col-id": 2, "col-n": {"col-x": 4, "col-y": "2020-03-01"}},
            "nullCount": {"col-id": 0, "col-n": {"col-x": 1, "col-y": 0}},
        }
    )
    conf = {"delta.columnMapping.mode": "name", JSON_KEY: "false", STRUCT_KEY: "true"}
    files = [AddFile("a.parquet", {"col-p": "5"}, 10, 5, stats=stats)]
    store = LogStore(str(tmp_path), LocalFileIO())
    write_checkpoint(store, _write_table(store, conf, schema, files))
    add_type, rows = _checkpoint_adds(tmp_path / "_delta_log" / CHECKPOINT)
    nested = pa.struct([("col-x", pa.int64()), ("col-y", pa.date32())])
    bounds = pa.struct([("col-id", pa.int64()), ("col-n", nested)])
    nested_nulls = pa.struct([("col-x", pa.int64()), ("col-y", pa.int64())])
    nulls = pa.struct([("col-id", pa.int64()), ("col-n", nested_nulls)])
    assert add_type.field("stats_parsed").type == pa.struct(
        [("numRecords", pa.int64()), ("minValues", bounds), ("maxValues", bounds),
         ("nullCount", nulls), ("tightBounds", pa.bool_())]
    )  # fmt: skip
    assert add_type.field("partitionValues_parsed").type == pa.struct([("col-p", pa.int32())])
    row = rows["a.parquet"]
    assert "stats" not in row and row["partitionValues_parsed"] == {"col-p": 5}
    assert row["stats_parsed"] == {
        "numRecords": 2,
        "minValues": {"col-id": 1, "col-n": {"col-x": 3, "col-y": dt.date(2020, 2, 29)}},
        "maxValues": {"col-id": 2, "col-n": {"col-x": 4, "col-y": dt.date(2020, 3, 1)}},
        "nullCount": {"col-id": 0, "col-n": {"col-x": 1, "col-y": 0}},
        "tightBounds": None,
    }


@pytest.mark.parametrize(
    "limit",
    [{"delta.dataSkippingNumIndexedCols": "2"}, {"delta.dataSkippingStatsColumns": "I, ID"}],
)
def test_stats_column_properties_limit_the_struct(tmp_path: Path, limit: dict[str, str]) -> None:
    conf = {STRUCT_KEY: "true", **limit}
    store = LogStore(str(tmp_path), LocalFileIO())
    write_checkpoint(store, _write_table(store, conf))
    add_type, rows = _checkpoint_adds(tmp_path / "_delta_log" / CHECKPOINT)
    two = pa.struct([("id", pa.int64()), ("i", pa.int32())])
    assert add_type.field("stats_parsed").type == pa.struct(
        [("numRecords", pa.int64()), ("minValues", two), ("maxValues", two),
         ("nullCount", pa.struct([("id", pa.int64()), ("i", pa.int64())])),
         ("tightBounds", pa.bool_())]
    )  # fmt: skip
    assert rows["p=1/a.parquet"]["stats_parsed"]["maxValues"] == {"id": 9, "i": 5}


def test_values_that_no_longer_fit_the_column_type_are_null(tmp_path: Path) -> None:
    """Stats are typed with the current schema: a value outside it is dropped, never wrapped."""
    schema = json.dumps(
        {"type": "struct", "fields": [_field("i", "short"), _field("dec", "decimal(5,2)"),
                                      _field("w", "double"), _field("p", "integer")]}
    )  # fmt: skip
    stats = json.dumps(
        {
            "numRecords": 2,
            "minValues": {"i": -40000, "dec": 1.234, "w": 3},  # w: int stats of a widened column
            "maxValues": {"i": 7, "dec": 999.99, "w": 4},
            "nullCount": {"i": 0, "dec": 0, "w": 0},
        }
    )
    files = [AddFile("a.parquet", {"p": "1"}, 10, 5, stats=stats)]
    store = LogStore(str(tmp_path), LocalFileIO())
    write_checkpoint(store, _write_table(store, {STRUCT_KEY: "true"}, schema, files))
    _, rows = _checkpoint_adds(tmp_path / "_delta_log" / CHECKPOINT)
    parsed = rows["a.parquet"]["stats_parsed"]
    assert parsed["minValues"] == {"i": None, "dec": None, "w": 3.0}
    assert parsed["maxValues"] == {"i": 7, "dec": Decimal("999.99"), "w": 4.0}


def _stats_dict(text: str | None) -> dict[str, Any]:
    assert text is not None
    value: dict[str, Any] = json.loads(text)
    return value


def test_struct_only_checkpoint_round_trips_the_stats(tmp_path: Path) -> None:
    """txsql's own struct-only checkpoint, with the commits gone, keeps every stat."""
    store = LogStore(str(tmp_path), LocalFileIO())
    snap = _write_table(store, {JSON_KEY: "false", STRUCT_KEY: "true"})
    write_checkpoint(store, snap)
    for p in (tmp_path / "_delta_log").glob("*.json"):
        p.unlink()
    again = load_snapshot(store, find_segment(store))
    by_path = {f.path: f.stats for f in again.files}
    assert by_path["p=2/c.parquet"] is None
    assert _stats_dict(by_path["p=1/a.parquet"]) == json.loads(STATS_1)
    assert _stats_dict(by_path["p=2/b.parquet"]) == json.loads(STATS_2)


def test_v2_sidecars_carry_stats_parsed(tmp_path: Path) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    conf = {JSON_KEY: "false", STRUCT_KEY: "true", "delta.checkpointPolicy": "v2"}
    meta = Metadata("m", SCHEMA, ("p",), conf)
    proto = Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",))
    add = AddFile("p=1/a.parquet", {"p": "1"}, 10, 5, stats=STATS_1)
    store.write_if_absent(0, encode_commit([CommitInfo(timestamp=1), proto, meta, add]))
    snap = load_snapshot(store, find_segment(store))
    write_v2_checkpoint(store, snap, sidecar_min_file_actions=0)
    (sidecar,) = (tmp_path / "_delta_log" / "_sidecars").glob("*.parquet")
    add_type, rows = _checkpoint_adds(sidecar)
    assert "stats" not in add_type.names
    assert rows["p=1/a.parquet"]["stats_parsed"] == EXPECTED_1
    (tmp_path / "_delta_log" / f"{0:020d}.json").unlink()
    again = load_snapshot(store, find_segment(store))
    assert _stats_dict(again.files[0].stats) == json.loads(STATS_1)


STRUCT_ONLY_FIXTURES = [
    "delta-modern/v2-classic-parquet-struct-stats-only",
    "delta-modern/v2-parquet-sidecars-struct-stats-only",
]


@pytest.mark.parametrize("fixture", STRUCT_ONLY_FIXTURES)
def test_fixture_with_stats_parsed_only_keeps_its_stats(
    fixture: str, fixture_copy: Callable[[str], Path]
) -> None:
    table = fixture_copy(fixture)
    log = table / "_delta_log"
    # The oracle: stats_parsed as pyarrow reads it from the fixture's checkpoint files.
    expected: dict[str, dict[str, Any]] = {}
    for part in [*log.glob("*.checkpoint*.parquet"), *log.glob("_sidecars/*.parquet")]:
        _, rows = _checkpoint_adds(part)
        for p, row in rows.items():
            assert row.get("stats") is None
            expected[p] = row["stats_parsed"]
    assert len(expected) == 5
    # Only the checkpoint can give the stats: drop the commits it covers.
    for commit in log.glob("*.json"):
        commit.unlink()
    store = LogStore(str(table), LocalFileIO())
    snap = load_snapshot(store, find_segment(store))
    assert {f.path for f in snap.files} == set(expected)
    for f in snap.files:
        stats, want = _stats_dict(f.stats), expected[f.path]
        assert stats["numRecords"] == want["numRecords"]
        assert stats["minValues"] == want["minValues"]
        assert stats["maxValues"] == want["maxValues"]
        assert stats["nullCount"] == want["nullCount"]
        assert stats["tightBounds"] is want["tightBounds"]
    # txsql's own data skipping uses them: only the file holding id 5 may match id > 4.
    schema = parse_schema(snap.metadata.schema_string)
    wanted = Comparison(">", Column("id"), Literal(4))
    kept = [f for f in snap.files if may_match_file(wanted, f, schema, [])]
    assert [expected[f.path]["maxValues"]["id"] for f in kept] == [5]
