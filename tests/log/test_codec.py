"""The JSON/checkpoint codec against every action Delta Spark, Databricks and delta-rs wrote."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.fixture_paths import find_fixtures
from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.errors import CorruptLogError
from txsql.log.actions import (
    Action,
    AddCDCFile,
    AddFile,
    CheckpointMetadata,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    Sidecar,
)
from txsql.log.codec import (
    action_from_checkpoint_row,
    action_from_json,
    action_to_checkpoint_row,
    action_to_json,
    decode_commit,
    dv_from_json,
    dv_to_json,
    encode_commit,
)

FIXTURES = find_fixtures()
COMMIT_NAME = re.compile(r"\d{20}\.json")
COMMITS = sorted(p for p in FIXTURES.glob("*/*/_delta_log/*.json") if COMMIT_NAME.fullmatch(p.name))
CHECKPOINTS = sorted(FIXTURES.glob("*/*/_delta_log/**/*.checkpoint*.parquet"))


def _id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def _checkpoint_actions(path: Path) -> list[Action]:
    table = pq.read_table(path)
    actions = []
    for column in table.column_names:
        for row in table.column(column).to_pylist():
            if row is not None:
                action = action_from_checkpoint_row(column, row)
                if action is not None:
                    actions.append(action)
    return actions


def test_fixture_inventory_is_not_empty() -> None:
    # Guards the parametrised tests below against silently testing nothing.
    assert len(COMMITS) > 150
    assert len(CHECKPOINTS) >= 14


@pytest.mark.parametrize("path", COMMITS, ids=_id)
def test_every_fixture_line_round_trips(path: Path) -> None:
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        action = action_from_json(obj)
        assert action is not None, f"fixture action not recognised: {line[:80]!r}"
        assert action_to_json(action) == obj


@pytest.mark.parametrize("path", COMMITS, ids=_id)
def test_encode_decode_round_trip(path: Path) -> None:
    actions = decode_commit(path.read_bytes(), source=path.name)
    encoded = encode_commit(actions)
    # txsql writes commitInfo first (readers may stop there); other writers need not.
    info_first = sorted(actions, key=lambda a: not isinstance(a, CommitInfo))
    assert decode_commit(encoded) == info_first
    lines = encoded.split(b"\n")
    assert lines[-1] == b""  # newline-terminated
    assert all(b'": ' not in ln and b'", "' not in ln for ln in lines)  # compact separators
    if any(isinstance(a, CommitInfo) for a in actions):
        assert lines[0].startswith(b'{"commitInfo":')


def test_decoded_types_match_wire_names() -> None:
    path = FIXTURES / "delta-golden/dv-with-columnmapping/_delta_log/00000000000000000000.json"
    actions = decode_commit(path.read_bytes())
    assert [type(a) for a in actions[:3]] == [CommitInfo, Metadata, Protocol]
    protocol = actions[2]
    assert isinstance(protocol, Protocol)
    assert protocol.reader_features == ("deletionVectors", "columnMapping")
    add = actions[3]
    assert isinstance(add, AddFile)
    assert add.partition_values == {"col-60c949ca-b8bc-4330-b931-b73fb4c60037": "0"}
    assert add.size == 1206 and add.data_change is True and add.deletion_vector is None


def test_dv_fields_from_fixture() -> None:
    path = FIXTURES / "delta-rs/table-with-dv-small/_delta_log/00000000000000000001.json"
    actions = decode_commit(path.read_bytes())
    adds = [a for a in actions if isinstance(a, AddFile)]
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    assert len(adds) == 1 and len(removes) == 1
    dv = adds[0].deletion_vector
    assert dv is not None and dv.storage_type == "u" and dv.cardinality == 2
    assert removes[0].path == adds[0].path and removes[0].deletion_vector is None


def test_cdc_actions_decode() -> None:
    log = FIXTURES / "delta-rs/cdf-table-with-cdc-and-dvs/_delta_log"
    cdc = [
        a
        for p in sorted(log.glob("*.json"))
        for a in decode_commit(p.read_bytes())
        if isinstance(a, AddCDCFile)
    ]
    assert len(cdc) == 5
    assert all(c.path.startswith("_change_data/") and c.data_change is False for c in cdc)


def test_unknown_actions_skipped_and_unknown_fields_kept() -> None:
    data = (
        b'{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":2,'
        b'"dataChange":true,"backReference":{"x":1}}}\n'
        b'{"futureAction":{"k":1}}\n'
        b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2,"newField":[1]}}\n'
    )
    actions = decode_commit(data)
    assert len(actions) == 2
    add, protocol = actions
    assert isinstance(add, AddFile) and add.extra == {"backReference": {"x": 1}}
    assert isinstance(protocol, Protocol) and protocol.extra == {"newField": [1]}
    assert action_from_json({"futureAction": {}}) is None
    assert action_to_json(add)["add"]["backReference"] == {"x": 1}
    assert decode_commit(encode_commit(actions)) == actions


def test_truncated_commit_names_file_and_line() -> None:
    path = FIXTURES / "delta-golden/basic-dv-no-checkpoint/_delta_log/00000000000000000001.json"
    data = path.read_bytes()
    second_line_end = data.index(b"\n", data.index(b"\n") + 1)
    truncated = data[: second_line_end - 10]
    with pytest.raises(CorruptLogError) as info:
        decode_commit(truncated, source=path.name)
    assert path.name in info.value.message
    assert "line 2" in info.value.message


def test_malformed_action_names_line() -> None:
    data = b'{"txn":{"appId":"a","version":1}}\n\n{"add":{"size":1}}\n'
    with pytest.raises(CorruptLogError, match=r"c\.json line 3"):
        decode_commit(data, source="c.json")
    with pytest.raises(CorruptLogError, match="line 1 is not a JSON object"):
        decode_commit(b"[1, 2]\n")


def test_blank_lines_and_crlf_are_fine() -> None:
    data = b'\n{"txn":{"appId":"a","version":1}}\r\n\n'
    assert decode_commit(data) == [SetTransaction("a", 1)]
    assert decode_commit(b"") == []


def test_encode_moves_commit_info_first_and_omits_none() -> None:
    info = CommitInfo(timestamp=1, operation="WRITE", operation_parameters={"mode": "Append"})
    add = AddFile("p", {"d": None}, 10, 20)
    encoded = encode_commit([add, info]).decode()
    first, second, end = encoded.split("\n")
    assert json.loads(first) == {
        "commitInfo": {
            "timestamp": 1,
            "operation": "WRITE",
            "operationParameters": {"mode": "Append"},
        }
    }
    assert json.loads(second) == {
        "add": {
            "path": "p",
            "partitionValues": {"d": None},
            "size": 10,
            "modificationTime": 20,
            "dataChange": True,
        }
    }
    assert end == ""


def test_to_json_does_not_alias_action_dicts() -> None:
    add = AddFile("p", {"d": "1"}, 1, 1, tags={"t": "x"})
    wire = action_to_json(add)
    wire["add"]["partitionValues"]["d"] = "2"
    wire["add"]["tags"]["t"] = "y"
    assert add.partition_values == {"d": "1"} and add.tags == {"t": "x"}


def test_dv_json_omits_absent_offset() -> None:
    inline = DeletionVectorDescriptor(
        "i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6
    )
    assert "offset" not in dv_to_json(inline)
    on_disk = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 34, 2, 1)
    assert dv_to_json(on_disk)["offset"] == 1
    for d in (inline, on_disk):
        assert dv_from_json(dv_to_json(d)) == d


@pytest.mark.parametrize(
    "action",
    [
        Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "domainMetadata")),
        Metadata("id", '{"type":"struct","fields":[]}', ("p",), {"k": "v"}, name="t"),
        RemoveFile("p", 5, False, True, {"p": None}, 3, None, None, None, 7, 8),
        SetTransaction("app", 3, 99),
        DomainMetadata("delta.rowTracking", '{"rowIdHighWaterMark":4}', removed=True),
        CommitInfo(in_commit_timestamp=5, read_version=3, is_blind_append=False, extra={"u": 1}),
        AddCDCFile("_change_data/c.parquet", {}, 4, tags={"a": "b"}),
        CheckpointMetadata(4, {"x": "y"}),
        Sidecar("s.parquet", 10, 20),
    ],
    ids=lambda a: type(a).__name__,
)
def test_every_action_type_round_trips(action: Action) -> None:
    assert action_from_json(action_to_json(action)) == action
    assert decode_commit(encode_commit([action])) == [action]


# --- checkpoints ---------------------------------------------------------------------


@pytest.mark.parametrize("path", CHECKPOINTS, ids=_id)
def test_every_checkpoint_row_decodes_and_round_trips(path: Path) -> None:
    actions = _checkpoint_actions(path)
    assert actions
    for action in actions:
        assert not isinstance(action, (CommitInfo, AddCDCFile))
        column, row = action_to_checkpoint_row(action)
        assert action_from_checkpoint_row(column, row) == action
        if isinstance(action, (AddFile, RemoveFile)):
            # Derived columns are dropped, not kept as unknown fields.
            assert action.extra is None
            assert isinstance(action.partition_values, dict)


def _adds(actions: list[Action]) -> list[AddFile]:
    return [a for a in actions if isinstance(a, AddFile)]


@pytest.mark.parametrize("version", [10, 20, 30, 40])
def test_basic_dv_checkpoint_counts(version: int) -> None:
    # One DELETE of one multiple of 11 per commit after v0: v deleted rows of 500 by version v.
    path = (
        FIXTURES
        / f"delta-golden/basic-dv-with-checkpoint/_delta_log/{version:020d}.checkpoint.parquet"
    )
    adds = _adds(_checkpoint_actions(path))
    assert sum(a.deletion_vector.cardinality for a in adds if a.deletion_vector) == version
    assert sum(json.loads(a.stats or "{}")["numRecords"] for a in adds) == 500
    assert all(a.deletion_vector is None or a.deletion_vector.offset == 1 for a in adds)


def test_multi_part_checkpoint_has_ten_adds() -> None:
    log = FIXTURES / "delta-golden/multi-part-checkpoint/_delta_log"
    parts = sorted(log.glob("00000000000000000001.checkpoint.*.parquet"))
    assert len(parts) == 2
    adds = [a for p in parts for a in _adds(_checkpoint_actions(p))]
    assert len(adds) == 10  # _last_checkpoint says numOfAddFiles 10


def test_v2_checkpoint_and_sidecars() -> None:
    log = FIXTURES / "delta-golden/v2-checkpoint-parquet/_delta_log"
    (top,) = log.glob("00000000000000000002.checkpoint.*.parquet")
    actions = _checkpoint_actions(top)
    meta = [a for a in actions if isinstance(a, CheckpointMetadata)]
    sidecars = [a for a in actions if isinstance(a, Sidecar)]
    assert [m.version for m in meta] == [2]
    assert len(sidecars) == 2 and all((log / "_sidecars" / s.path).is_file() for s in sidecars)
    protocol = next(a for a in actions if isinstance(a, Protocol))
    assert protocol.reader_features == ("v2Checkpoint",)
    adds = [a for s in sidecars for a in _adds(_checkpoint_actions(log / "_sidecars" / s.path))]
    assert len(adds) == 4  # spark.range(10).repartition(4)


def test_column_mapped_checkpoint_uses_physical_partition_keys() -> None:
    log = FIXTURES / "delta-golden/dv-with-columnmapping/_delta_log"
    adds = _adds(_checkpoint_actions(log / "00000000000000000010.checkpoint.parquet"))
    assert adds
    assert {k for a in adds for k in a.partition_values} == {
        "col-60c949ca-b8bc-4330-b931-b73fb4c60037"
    }


def test_delta_rs_checkpoints() -> None:
    simple = FIXTURES / "delta-rs/simple_table_with_checkpoint/_delta_log"
    adds = _adds(_checkpoint_actions(simple / "00000000000000000010.checkpoint.parquet"))
    assert len(adds) == 11 and all(a.stats is None for a in adds)
    deletions = FIXTURES / "delta-rs/table_with_deletion_logs/_delta_log"
    adds = _adds(_checkpoint_actions(deletions / "00000000000000000020.checkpoint.parquet"))
    assert len(adds) == 1
    dv = adds[0].deletion_vector
    assert dv is not None and dv.cardinality == 2  # ids 12 and 89


def test_checkpoint_row_null_handling() -> None:
    row: dict[str, Any] = {
        "minReaderVersion": 1,
        "minWriterVersion": 2,
        "readerFeatures": None,
        "writerFeatures": None,
    }
    assert action_from_checkpoint_row("protocol", row) == Protocol(1, 2)
    meta_row = {
        "id": "x",
        "name": None,
        "description": None,
        "format": {"provider": "parquet", "options": [("a", "b")]},
        "schemaString": "{}",
        "partitionColumns": [],
        "configuration": [("delta.appendOnly", "true")],
        "createdTime": None,
    }
    meta = action_from_checkpoint_row("metaData", meta_row)
    assert isinstance(meta, Metadata)
    assert meta.configuration == {"delta.appendOnly": "true"}
    assert meta.format.options == {"a": "b"} and meta.name is None
    assert action_from_checkpoint_row("someFutureColumn", {"a": 1}) is None


def test_commit_info_is_never_a_checkpoint_row() -> None:
    with pytest.raises(ValueError, match="commitInfo"):
        action_to_checkpoint_row(CommitInfo(timestamp=1))
