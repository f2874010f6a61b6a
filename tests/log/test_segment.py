"""Choosing checkpoint + commits: hints, incomplete checkpoints, gaps, missing versions."""

from __future__ import annotations

import json

import pytest

from txsql.errors import (
    CheckpointFallbackWarning,
    CorruptLogError,
    TableNotFoundError,
    VersionNotFoundError,
)
from txsql.log.actions import AddFile, CommitInfo, Metadata, Protocol
from txsql.log.checkpoint import write_checkpoint
from txsql.log.codec import encode_commit
from txsql.log.replay import load_snapshot
from txsql.log.segment import (
    fallback_segments,
    find_segment,
    list_and_find,
    list_log,
    read_last_checkpoint,
)
from txsql.storage import LogStore, MemoryFileIO
from txsql.storage.paths import checkpoint_name

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def build(n: int, checkpoints: tuple[int, ...] = (), fs: MemoryFileIO | None = None) -> LogStore:
    """An in-memory table: commit v adds file ``f{v}``; checkpoints at the given versions."""
    store = LogStore("/t", fs or MemoryFileIO())
    for v in range(n):
        actions: list = [CommitInfo(timestamp=v, operation="WRITE")]
        if v == 0:
            actions += [Protocol(1, 2), Metadata("id", SCHEMA)]
        actions.append(AddFile(f"f{v}.parquet", {}, 10, 0))
        store.write_if_absent(v, encode_commit(actions))
        if v in checkpoints:
            write_checkpoint(store, load_snapshot(store, find_segment(store, v)))
    return store


def test_latest_uses_newest_checkpoint_and_following_commits() -> None:
    store = build(25, checkpoints=(10, 20))
    seg = find_segment(store)
    assert seg.version == 24
    assert seg.checkpoint is not None and seg.checkpoint.version == 20
    assert seg.commit_versions == (21, 22, 23, 24)
    assert seg.last_commit is not None and seg.last_commit.name.startswith("00000000000000000024")


def test_target_at_checkpoint_version_needs_no_commits() -> None:
    seg = find_segment(build(25, checkpoints=(10, 20)), 20)
    assert seg.checkpoint is not None and seg.checkpoint.version == 20
    assert seg.commits == () and seg.last_commit is not None


def test_older_version_picks_older_checkpoint() -> None:
    seg = find_segment(build(25, checkpoints=(10, 20)), 15)
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    assert seg.commit_versions == (11, 12, 13, 14, 15)


def test_stale_hint_pointing_at_older_checkpoint_is_ignored() -> None:
    store = build(25, checkpoints=(10, 20))
    store.write_log_file("_last_checkpoint", b'{"version":10,"size":12}')
    seg = find_segment(store)
    assert seg.checkpoint is not None and seg.checkpoint.version == 20


@pytest.mark.parametrize("body", [None, b"{not json", b'{"size":3}', b"[]", b"\xff\xfe"])
def test_missing_or_corrupt_hint_still_finds_checkpoint(body: bytes | None) -> None:
    store = build(25, checkpoints=(10, 20))
    if body is None:
        store.delete_log_file("_last_checkpoint")
    else:
        store.write_log_file("_last_checkpoint", body)
    assert read_last_checkpoint(store) is None
    seg = find_segment(store)
    assert seg.checkpoint is not None and seg.checkpoint.version == 20
    assert len(load_snapshot(store, seg).files) == 25


def test_hint_naming_a_deleted_checkpoint_falls_back() -> None:
    store = build(25, checkpoints=(10, 20))
    store.delete_log_file(checkpoint_name(20))  # _last_checkpoint still says 20
    seg = find_segment(store)
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    assert len(load_snapshot(store, seg).files) == 25


def test_incomplete_multipart_checkpoint_is_skipped() -> None:
    store = build(25, checkpoints=(10,))
    part = store.read_log_file(checkpoint_name(10))
    store.write_log_file(f"{20:020d}.checkpoint.{1:010d}.{2:010d}.parquet", part)
    with pytest.warns(CheckpointFallbackWarning, match="checkpoint 20 .* is incomplete"):
        seg = find_segment(store)
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    # With the second part present the set is complete and preferred over a classic one.
    store.write_log_file(f"{10:020d}.checkpoint.{1:010d}.{2:010d}.parquet", part)
    store.write_log_file(f"{10:020d}.checkpoint.{2:010d}.{2:010d}.parquet", part)
    seg = find_segment(store, 12)
    assert seg.checkpoint is not None and seg.checkpoint.kind == "multipart"
    assert len(seg.checkpoint.files) == 2


def test_v2_checkpoint_with_missing_sidecar_is_skipped() -> None:
    store = build(25, checkpoints=(10,))
    uuid = "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"
    sidecar = '{"sidecar":{"path":"missing.parquet","sizeInBytes":1,"modificationTime":1}}\n'
    store.write_log_file(f"{20:020d}.checkpoint.{uuid}.json", sidecar.encode())
    seg = find_segment(store)
    assert seg.checkpoint is not None and seg.checkpoint.version == 10


def test_missing_commit_in_the_middle_is_corrupt() -> None:
    store = build(8)
    store.delete_log_file(f"{5:020d}.json")
    with pytest.raises(CorruptLogError, match="missing commit 5"):
        find_segment(store)
    assert find_segment(store, 4).version == 4  # versions before the gap still load


def test_gap_bridged_by_a_checkpoint_is_fine() -> None:
    store = build(25, checkpoints=(10,))
    store.delete_log_file(f"{5:020d}.json")
    assert find_segment(store).checkpoint is not None
    with pytest.raises(CorruptLogError, match="missing commit 5"):
        find_segment(store, 7)


def test_empty_commit_in_the_segment_is_corrupt_and_named() -> None:
    store = build(6, checkpoints=(2,))
    store.fs.write(store.log_path(f"{4:020d}.json"), b"")
    with pytest.raises(CorruptLogError, match=r"00000000000000000004\.json is empty"):
        find_segment(store)
    assert find_segment(store, 3).version == 3
    store.fs.write(store.log_path(f"{1:020d}.json"), b"")  # below the checkpoint: not needed
    store.fs.write(store.log_path(f"{4:020d}.json"), b"x")
    assert find_segment(store).checkpoint is not None


def test_fallbacks_are_older_checkpoints_then_commit_zero() -> None:
    store = build(12, checkpoints=(4, 8))
    listing = list_log(store)
    primary = find_segment(store, listing=listing)
    assert primary.checkpoint is not None and primary.checkpoint.version == 8
    options = list(fallback_segments(store, listing, primary))
    bases = [seg.checkpoint.version if seg.checkpoint else None for seg in options]
    assert bases == [4, None]
    for seg in options:  # each covers every commit above its base up to the target
        assert seg.commit_versions[-1] == 11 and seg.version == 11
    store.delete_log_file(f"{2:020d}.json")  # a gap below checkpoint 4: no replay from 0
    assert [s.checkpoint for s in fallback_segments(store, list_log(store), primary)] == [
        options[0].checkpoint
    ]


def test_version_beyond_latest_names_the_range() -> None:
    with pytest.raises(VersionNotFoundError, match=r"available versions are 0\.\.4"):
        find_segment(build(5), 9)


def test_cleaned_up_versions_are_not_found() -> None:
    store = build(25, checkpoints=(10, 20))
    for v in range(10):
        store.delete_log_file(f"{v:020d}.json")
    assert find_segment(store).version == 24
    with pytest.raises(VersionNotFoundError, match=r"available versions are 10\.\.24"):
        find_segment(store, 3)


def test_no_commit_zero_and_no_checkpoint_is_corrupt() -> None:
    store = build(3)
    store.delete_log_file(f"{0:020d}.json")
    with pytest.raises(CorruptLogError):
        find_segment(store)


def test_empty_log_is_table_not_found() -> None:
    with pytest.raises(TableNotFoundError):
        find_segment(LogStore("/nothing", MemoryFileIO()))


def test_listing_classifies_files_and_reads_hint() -> None:
    store = build(12, checkpoints=(10,))
    store.write_log_file("00000000000000000003.crc", b"{}")  # ignored
    listing = list_log(store)
    assert sorted(listing.commits) == list(range(12))
    assert list(listing.checkpoints) == [10]
    assert listing.hint is not None and json.loads(json.dumps(listing.hint))["version"] == 10


def test_fixture_multipart_and_v2(fixtures_dir) -> None:  # type: ignore[no-untyped-def]
    from txsql.storage import LocalFileIO

    golden = fixtures_dir / "delta-golden"
    mp = find_segment(LogStore(str(golden / "multi-part-checkpoint"), LocalFileIO()))
    assert mp.checkpoint is not None and mp.checkpoint.kind == "multipart"
    assert mp.checkpoint.version == 1 and len(mp.checkpoint.files) == 2
    v2 = find_segment(LogStore(str(golden / "v2-checkpoint-parquet"), LocalFileIO()))
    assert v2.checkpoint is not None and v2.checkpoint.kind == "v2"
    assert v2.checkpoint.sidecars is not None and len(v2.checkpoint.sidecars) == 2


class _TornListingIO(MemoryFileIO):
    """The first listing misses one commit, as a listing racing a writer can."""

    def __init__(self, hide: str) -> None:
        super().__init__()
        self.hide: str | None = hide

    def list_dir(self, path: str) -> list:
        listed = super().list_dir(path)
        if self.hide is not None:
            listed = [s for s in listed if s.name != self.hide]
            self.hide = None
        return listed


def test_a_gap_seen_by_one_racing_listing_is_confirmed_before_raising() -> None:
    torn = _TornListingIO(f"{2:020d}.json")
    store = build(5, fs=torn)
    torn.hide = f"{2:020d}.json"  # building listed the log; tear the next listing
    listing, segment = list_and_find(store)
    assert segment.version == 4 and 2 in listing.commits
    store.delete_log_file(f"{2:020d}.json")  # a real gap shows in both listings
    with pytest.raises(CorruptLogError, match="missing commit 2"):
        list_and_find(store)
