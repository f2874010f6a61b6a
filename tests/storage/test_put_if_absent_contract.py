"""One put-if-absent contract, run against every FileIO: local disk, memory and S3 (moto).

Everything the commit protocol relies on: a create never overwrites, exactly one of many
racing creators wins, a reader sees the winner's complete bytes, and listing, ranged reads,
replacement and deletion behave alike on every store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.storage.moto_s3 import MotoS3
from txsql.errors import VersionExistsError
from txsql.storage import FileIO, LocalFileIO, LogStore, MemoryFileIO, file_io_for


@pytest.fixture(params=["local", "memory", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileIO, str]:
    """A FileIO and a root directory on it."""
    if request.param == "local":
        return LocalFileIO(), str(tmp_path / "t")
    if request.param == "memory":
        return MemoryFileIO(), "/mem/t"
    moto: MotoS3 = request.getfixturevalue("moto_s3")
    root = f"s3://{moto.new_bucket()}/t"
    return file_io_for(root, moto.options()), root


def _race(n: int, attempt: Callable[[int], None]) -> list[int]:
    winners: list[int] = []
    barrier = threading.Barrier(n)

    def run(i: int) -> None:
        barrier.wait()
        try:
            attempt(i)
            winners.append(i)
        except FileExistsError:
            pass

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return winners


def test_put_if_absent_contract(store: tuple[FileIO, str]) -> None:
    fs, root = store
    path = f"{root}/_delta_log/00000000000000000000.json"
    assert not fs.exists(path)
    assert fs.list_dir(f"{root}/_delta_log") == []

    fs.write_if_absent(path, b"first\n")
    with pytest.raises(FileExistsError):
        fs.write_if_absent(path, b"second\n")
    assert fs.read(path) == b"first\n", "a refused create leaves the winner's bytes"

    # Many writers racing for one name: exactly one wins, its bytes are what is stored.
    racy = f"{root}/_delta_log/00000000000000000001.json"
    winners = _race(8, lambda i: fs.write_if_absent(racy, f"writer {i}\n".encode()))
    assert len(winners) == 1
    assert fs.read(racy) == f"writer {winners[0]}\n".encode()

    # Ranged reads (DV frames) and short reads past the end, like a POSIX read.
    fs.write_if_absent(f"{root}/dv.bin", bytes(range(10)))
    assert fs.read_range(f"{root}/dv.bin", 3, 4) == bytes([3, 4, 5, 6])
    assert fs.read_range(f"{root}/dv.bin", 8, 10) == bytes([8, 9])
    assert fs.read_range(f"{root}/dv.bin", 12, 4) == b""

    # Listing is one level deep and sees sizes; stat agrees.
    fs.write_if_absent(f"{root}/_delta_log/_sidecars/s.parquet", b"xx")
    listed = {f.name: f.size for f in fs.list_dir(f"{root}/_delta_log")}
    assert listed == {"00000000000000000000.json": 6, "00000000000000000001.json": 9}
    assert fs.stat(path).size == 6 and fs.stat(path).name == "00000000000000000000.json"

    # Replacing (checkpoints, _last_checkpoint) and deleting (log cleanup).
    fs.write(f"{root}/_delta_log/_last_checkpoint", b"{}")
    fs.write(f"{root}/_delta_log/_last_checkpoint", b'{"version":1}')
    assert fs.read(f"{root}/_delta_log/_last_checkpoint") == b'{"version":1}'
    fs.delete(path)
    assert not fs.exists(path)
    with pytest.raises(FileNotFoundError):
        fs.read(path)
    with pytest.raises(FileNotFoundError):
        fs.stat(path)

    # Through the LogStore: a lost race is the VersionExistsError the commit loop retries.
    log = LogStore(root, fs)
    log.write_if_absent(0, b"again\n")
    with pytest.raises(VersionExistsError):
        log.write_if_absent(0, b"loser\n")
    assert log.list_commits() == [0, 1]
