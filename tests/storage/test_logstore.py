from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from txsql.errors import UnsupportedStorageError, VersionExistsError
from txsql.storage import LocalFileIO, LogStore, MemoryFileIO, log_store_for, parse_location
from txsql.storage.paths import classify_log_file


@pytest.fixture(params=["local", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> LogStore:
    if request.param == "local":
        return LogStore(str(tmp_path / "t"), LocalFileIO())
    return LogStore("/mem/t", MemoryFileIO())


def test_write_if_absent_refuses_to_overwrite(store: LogStore) -> None:
    store.write_if_absent(0, b"first\n")
    with pytest.raises(VersionExistsError) as info:
        store.write_if_absent(0, b"second\n")
    assert info.value.version == 0
    assert store.read_commit(0) == b"first\n"


def test_latest_version_and_listing(store: LogStore) -> None:
    assert store.latest_version() is None
    assert not store.exists()
    for v in range(3):
        store.write_if_absent(v, b"{}\n")
    store.write_log_file("_last_checkpoint", b"{}")
    assert store.latest_version() == 2
    assert store.list_commits() == [0, 1, 2]
    names = [f.name for f in store.list_log()]
    assert names == sorted(names) and "_last_checkpoint" in names


def test_concurrent_threads_exactly_one_winner_per_version(store: LogStore) -> None:
    winners: list[int] = []

    def race(i: int) -> None:
        try:
            store.write_if_absent(7, f"writer {i}\n".encode())
            winners.append(i)
        except VersionExistsError:
            pass

    threads = [threading.Thread(target=race, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1
    assert store.read_commit(7) == f"writer {winners[0]}\n".encode()


def test_local_put_if_absent_leaves_no_temp_files(tmp_path: Path) -> None:
    store = LogStore(str(tmp_path), LocalFileIO())
    store.write_if_absent(0, b"x")
    with pytest.raises(VersionExistsError):
        store.write_if_absent(0, b"y")
    assert os.listdir(tmp_path / "_delta_log") == ["00000000000000000000.json"]


def test_locations_plain_paths_and_file_uris(tmp_path: Path) -> None:
    assert parse_location(str(tmp_path)).path == str(tmp_path)
    assert parse_location(f"file://{tmp_path}/a%20b").path == f"{tmp_path}/a b"
    assert log_store_for(f"file://{tmp_path}").root == str(tmp_path)


@pytest.mark.parametrize("uri", ["hdfs://nn/t", "http://host/t", "ftp://h/t"])
def test_unsupported_schemes_name_the_scheme(uri: str) -> None:
    with pytest.raises(UnsupportedStorageError, match=uri.split(":")[0]):
        parse_location(uri)


@pytest.mark.parametrize(
    ("uri", "root", "scheme"),
    [
        ("s3://bucket/t", "s3://bucket/t", "s3"),
        ("s3a://bucket/a/b/", "s3://bucket/a/b", "s3"),
        ("gs://b/t", "gs://b/t", "gs"),
        ("abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t", "abfss"),
        ("az://container/t", "az://container/t", "az"),
    ],
)
def test_object_store_locations_are_canonical(uri: str, root: str, scheme: str) -> None:
    location = parse_location(uri)
    assert (location.root, location.scheme, location.is_local) == (root, scheme, False)
    with pytest.raises(UnsupportedStorageError, match="object store"):
        _ = location.path  # code needing a POSIX path must not get an object-store URI


def test_object_store_location_needs_a_bucket() -> None:
    with pytest.raises(UnsupportedStorageError, match="no bucket"):
        parse_location("s3:///t")


def test_log_file_classification() -> None:
    classic = classify_log_file("00000000000000000010.checkpoint.parquet")
    assert classic is not None and classic.kind == "checkpoint"
    v2 = classify_log_file(
        "00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet"
    )
    assert v2 is not None and (v2.kind, v2.version) == ("v2", 2)
    assert classify_log_file("00000000000000000003.crc") is None
    assert classify_log_file("_last_checkpoint") is None
