"""Log replay: every fixture table at every version, and the reconciliation rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.errors import CorruptLogError
from txsql.log.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from txsql.log.replay import ReplayState, file_key, load_snapshot
from txsql.log.segment import find_segment
from txsql.log.snapshot import Snapshot
from txsql.storage import LocalFileIO, LogStore

# Logical rows per version (EXPECTED.md / fixture READMEs); None = no stats to count with.
ROWS: dict[str, Sequence[int | None]] = {
    "delta-golden/basic-dv-no-checkpoint": [10, 8],
    "delta-golden/basic-dv-with-checkpoint": [500 - v for v in range(47)],
    "delta-golden/dv-partitioned-with-checkpoint": [50 - v for v in range(16)],
    "delta-golden/dv-with-columnmapping": [50 - v for v in range(16)],
    "delta-golden/log-replay-dv-key-cases": [50, 49, 48, 47],
    "delta-golden/multi-part-checkpoint": [1, 31],
    "delta-golden/partitioned-table-with-dv-large": [2000, 1993, 1995, 1988, 1990],
    "delta-golden/table-with-dv-large": [2000, 1995, 1997, 1991, 1993],
    "delta-golden/table-with-dv-small": [10, 8],
    "delta-golden/v2-checkpoint-parquet": [0, 0, 10],
    "delta-rs/table-with-dv-small": [10, 8],
    "delta-rs/table_with_deletion_logs": [100, 100, 100, 99] + [98] * 17,
    "delta-rs/cdf-table-with-cdc-and-dvs": [int(n) for n in "15445334554444686688888825"],
}


def _load(root: Path, version: int | None = None) -> Snapshot:
    store = LogStore(str(root), LocalFileIO())
    return load_snapshot(store, find_segment(store, version))


@pytest.mark.parametrize("table", sorted(ROWS))
def test_fixture_rows_at_every_version(fixtures_dir: Path, table: str) -> None:
    expected = ROWS[table]
    assert _load(fixtures_dir / table).version == len(expected) - 1
    for version, rows in enumerate(expected):
        snap = _load(fixtures_dir / table, version)
        assert snap.version == version
        assert snap.num_records == rows, f"{table} v{version}"


def test_simple_table_with_checkpoint_has_one_file_per_version(fixtures_dir: Path) -> None:
    root = fixtures_dir / "delta-rs/simple_table_with_checkpoint"
    for version in range(11):
        assert len(_load(root, version).files) == version + 1


def test_partition_change_between_versions(fixtures_dir: Path) -> None:
    root = fixtures_dir / "delta-golden/time-travel-partition-changes-b"
    v0, v1 = _load(root, 0), _load(root, 1)
    assert v0.partition_columns == ("part5",) and v1.partition_columns == ("part2",)
    assert {f.partition_values["part5"] for f in v0.files} == {"0", "1", "2", "3", "4"}
    assert all("part2" in f.partition_values for f in v1.files)
    # every v0 file was removed by the overwrite
    assert {f.path for f in v0.files} <= {r.path for r in v1.tombstones}


def test_dv_key_cases_tombstones(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir / "delta-golden/log-replay-dv-key-cases")
    assert len(snap.files) == 1
    (live,) = snap.files
    assert live.deletion_vector is not None and live.deletion_vector.cardinality == 3
    assert {r.path for r in snap.tombstones} == {live.path}
    cards = sorted(
        r.deletion_vector.cardinality if r.deletion_vector else 0 for r in snap.tombstones
    )
    assert cards == [0, 1, 2]  # remove(P, no DV), remove(P, DV#1), remove(P, DV#2)


def test_dv_cardinalities_basic_with_checkpoint(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir / "delta-golden/basic-dv-with-checkpoint")
    assert len(snap.files) == 2
    assert sum(f.deletion_vector.cardinality for f in snap.files if f.deletion_vector) == 46
    assert snap.commit_info is not None and snap.commit_info.operation == "DELETE"


def test_v2_checkpoint_reads_adds_from_sidecars(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir / "delta-golden/v2-checkpoint-parquet")
    assert len(snap.files) == 4
    assert snap.protocol.reader_features == ("v2Checkpoint",)
    assert snap.configuration["delta.checkpointPolicy"] == "v2"


def test_column_mapping_partition_values_are_physical(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir / "delta-golden/dv-with-columnmapping")
    keys = {k for f in snap.files for k in f.partition_values}
    assert len(keys) == 1 and next(iter(keys)).startswith("col-")


# --- reconciliation rules on synthetic actions ----------------------------------------


def _dv(card: int, name: str) -> DeletionVectorDescriptor:
    return DeletionVectorDescriptor("u", name, 36, card, 1)


def test_newest_action_per_path_and_dv_wins() -> None:
    state = ReplayState()
    state.apply([Protocol(1, 2), Metadata("m", "{}"), AddFile("p", {}, 1, 0)])
    state.apply([RemoveFile("p"), AddFile("p", {}, 1, 0, deletion_vector=_dv(1, "a"))])
    state.apply([RemoveFile("p", deletion_vector=_dv(1, "a")), AddFile("q", {}, 1, 0)])
    state.apply([AddFile("p", {}, 1, 0)])  # re-add without DV resurrects the first key
    snap = state.snapshot("/t", 3)
    assert sorted(f.path for f in snap.files) == ["p", "q"]
    assert [r.dv_id for r in snap.tombstones] == [_dv(1, "a").unique_id]


def test_paths_compare_after_uri_decoding() -> None:
    state = ReplayState()
    state.apply([Protocol(1, 2), Metadata("m", "{}"), AddFile("a%20b.parquet", {}, 1, 0)])
    state.apply([RemoveFile("a b.parquet")])
    assert state.snapshot("/t", 1).files == ()
    assert file_key("x%3Dy", None) == ("x=y", None)


def test_last_protocol_metadata_txn_and_domain_win() -> None:
    state = ReplayState()
    state.apply(
        [
            Protocol(1, 2),
            Metadata("m1", "{}"),
            SetTransaction("app", 5, 100),
            DomainMetadata("d1", "{}"),
            DomainMetadata("d2", '{"x":1}'),
        ]
    )
    state.apply(
        [
            Protocol(3, 7, (), ()),
            Metadata("m2", "{}"),
            SetTransaction("app", 3),  # "latest seen" wins, even if smaller
            DomainMetadata("d1", "{}", removed=True),
            CommitInfo(operation="X"),
        ]
    )
    snap = state.snapshot("/t", 1)
    assert snap.protocol.min_reader_version == 3 and snap.metadata.id == "m2"
    assert snap.app_versions == {"app": 3}
    assert set(snap.domains) == {"d2"}


def test_copy_is_independent() -> None:
    state = ReplayState()
    state.apply([Protocol(1, 2), Metadata("m", "{}"), AddFile("p", {}, 1, 0)])
    other = state.copy()
    other.apply([RemoveFile("p")])
    assert len(state.snapshot("/t", 0).files) == 1 and other.snapshot("/t", 1).files == ()


def test_snapshot_without_metadata_is_corrupt() -> None:
    state = ReplayState()
    state.apply([Protocol(1, 2)])
    with pytest.raises(CorruptLogError, match="metaData"):
        state.snapshot("/t", 0)


def test_commit_timestamp_prefers_ict_when_enabled() -> None:
    from txsql.log.replay import commit_timestamp

    on = Metadata("m", "{}", configuration={"delta.enableInCommitTimestamps": "true"})
    info = CommitInfo(in_commit_timestamp=42)
    assert commit_timestamp(on, info, 7) == 42
    assert commit_timestamp(Metadata("m", "{}"), info, 7) == 7
