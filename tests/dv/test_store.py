"""DV files: the byte layout, integrity checks, and reading every DV in the fixtures."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import struct
import uuid
import zlib
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

import pytest
from pyroaring import BitMap64

from tests.fixture_paths import find_fixtures
from txsql.dv.descriptor import DeletionVectorDescriptor, dv_file_name
from txsql.dv.store import encode_dv_file, read_deletion_vector, write_deletion_vectors
from txsql.errors import CorruptDeletionVectorError
from txsql.storage.filesystem import LocalFileIO, MemoryFileIO

FIXTURES = find_fixtures()
SMALL = "delta-golden/table-with-dv-small"
SMALL_DV = "deletion_vector_b6a98cdd-7843-470d-8897-708cdffa38c5.bin"
SMALL_DESCRIPTOR = DeletionVectorDescriptor("u", "WYbkwCTB$gH)J7t?$/sK", 36, 2, 1)


def _log_descriptors(table: Path) -> list[DeletionVectorDescriptor]:
    """Every add/remove deletionVector in the table's commit JSON files."""
    found = []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            for kind in ("add", "remove"):
                dv = (action.get(kind) or {}).get("deletionVector")
                if dv is not None:
                    found.append(DeletionVectorDescriptor.from_json(dv))
    return found


def _dv_tables() -> list[str]:
    """Fixture tables whose commits reference at least one deletion vector."""
    logs = sorted(FIXTURES.glob("*/*/_delta_log")) if FIXTURES.is_dir() else []
    return [str(p.parent.relative_to(FIXTURES)) for p in logs if _log_descriptors(p.parent)]


def _copy_small(tmp_path: Path, fixtures_dir: Path) -> Path:
    table = tmp_path / "t"
    table.mkdir()
    shutil.copyfile(fixtures_dir / SMALL / SMALL_DV, table / SMALL_DV)
    return table


def _patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


# --- layout ----------------------------------------------------------------------------


def test_small_fixture_file_byte_exact(fixtures_dir: Path) -> None:
    expected = (fixtures_dir / SMALL / SMALL_DV).read_bytes()
    assert len(expected) == 45
    data, entries = encode_dv_file([BitMap64([0, 9])])
    assert data == expected
    assert entries == [(1, 36, 2)]
    assert expected[41:] == struct.pack(">I", zlib.crc32(expected[5:41]))
    bitmap = read_deletion_vector(SMALL_DESCRIPTOR, str(fixtures_dir / SMALL), LocalFileIO())
    assert bitmap == BitMap64([0, 9])


def test_read_delta_rs_small_fixture(fixtures_dir: Path) -> None:
    table = fixtures_dir / "delta-rs" / "table-with-dv-small"
    (descriptor,) = set(_log_descriptors(table))
    assert read_deletion_vector(descriptor, str(table), LocalFileIO()) == BitMap64([0, 9])


def test_fixture_dv_tables_found(fixtures_dir: Path) -> None:
    tables = _dv_tables()
    assert len(tables) == 14
    assert {SMALL, "delta-rs/cdf-table-with-cdc-and-dvs", "delta-modern/with-short-dv"} <= set(
        tables
    )
    assert sum(len(_log_descriptors(fixtures_dir / t)) for t in tables) == 234


@pytest.mark.parametrize("table", _dv_tables())
def test_every_fixture_dv_decodes(table: str, fixtures_dir: Path) -> None:
    root = fixtures_dir / table
    fs = LocalFileIO()
    for d in _log_descriptors(root):
        path = d.absolute_path(str(root))
        assert path is not None and os.path.isfile(path)
        with open(path, "rb") as f:
            assert f.read(1) == b"\x01"  # format version
        bitmap = read_deletion_vector(d, str(root), fs)
        assert len(bitmap) == d.cardinality > 0
        assert bitmap.min() >= 0


@pytest.mark.parametrize("table", ["table-with-dv-large", "partitioned-table-with-dv-large"])
def test_multi_dv_files(table: str, fixtures_dir: Path) -> None:
    root = fixtures_dir / "delta-golden" / table
    by_file: dict[str, set[DeletionVectorDescriptor]] = defaultdict(set)
    for d in _log_descriptors(root):
        path = d.absolute_path(str(root))
        assert path is not None
        by_file[path].add(d)
    assert max(len(ds) for ds in by_file.values()) >= 5
    fs = LocalFileIO()
    for path, ds in by_file.items():
        packed = sorted(ds, key=lambda d: d.offset or 0)
        assert packed[0].offset == 1
        for prev, nxt in itertools.pairwise(packed):
            assert prev.offset is not None
            assert nxt.offset == prev.offset + 4 + prev.size_in_bytes + 4
        bitmaps = [read_deletion_vector(d, str(root), fs) for d in packed]
        # Re-packing the decoded bitmaps reproduces Spark's file byte for byte.
        data, entries = encode_dv_file(bitmaps)
        assert data == fs.read(path)
        assert entries == [(d.offset, d.size_in_bytes, d.cardinality) for d in packed]


def test_reference_packing_offsets(fixtures_dir: Path) -> None:
    root = fixtures_dir / "delta-golden" / "table-with-dv-large"
    file_uuid = "44ccbf3f-b223-4581-9cd8-a7e569120ada"
    offsets = {d.offset for d in _log_descriptors(root) if str(d.uuid) == file_uuid}
    assert sorted(o or 0 for o in offsets) == [1, 43, 85, 127, 169]


# --- corruption ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "patch"),
    [(39, b"\x08"), (41, b"\x00\x00\x00\x00")],  # a value inside the array container; the CRC
)
def test_checksum_error(tmp_path: Path, fixtures_dir: Path, offset: int, patch: bytes) -> None:
    table = _copy_small(tmp_path, fixtures_dir)
    _patch(table / SMALL_DV, offset, patch)
    with pytest.raises(CorruptDeletionVectorError, match="checksum mismatch") as exc:
        read_deletion_vector(SMALL_DESCRIPTOR, str(table), LocalFileIO())
    assert str(table / SMALL_DV) in str(exc.value)


def test_wrong_size_field_is_size_error(tmp_path: Path, fixtures_dir: Path) -> None:
    table = _copy_small(tmp_path, fixtures_dir)
    _patch(table / SMALL_DV, 1, struct.pack(">i", 35))
    with pytest.raises(CorruptDeletionVectorError, match=r"size mismatch.*35.*36") as exc:
        read_deletion_vector(SMALL_DESCRIPTOR, str(table), LocalFileIO())
    assert str(table / SMALL_DV) in str(exc.value)


def test_wrong_cardinality_is_cardinality_error(tmp_path: Path, fixtures_dir: Path) -> None:
    table = _copy_small(tmp_path, fixtures_dir)
    bad = DeletionVectorDescriptor("u", "WYbkwCTB$gH)J7t?$/sK", 36, 3, 1)
    with pytest.raises(CorruptDeletionVectorError, match="cardinality mismatch") as exc:
        read_deletion_vector(bad, str(table), LocalFileIO())
    assert str(table / SMALL_DV) in str(exc.value)


@pytest.mark.parametrize("fs", [LocalFileIO(), MemoryFileIO()], ids=["local", "memory"])
def test_missing_file(tmp_path: Path, fs: LocalFileIO | MemoryFileIO) -> None:
    with pytest.raises(CorruptDeletionVectorError, match="does not exist") as exc:
        read_deletion_vector(SMALL_DESCRIPTOR, str(tmp_path), fs)
    assert str(tmp_path / SMALL_DV) in str(exc.value)
    assert "restore" in exc.value.hint


def test_truncated_file(tmp_path: Path, fixtures_dir: Path) -> None:
    table = _copy_small(tmp_path, fixtures_dir)
    path = table / SMALL_DV
    path.write_bytes(path.read_bytes()[:43])
    with pytest.raises(CorruptDeletionVectorError, match="truncated"):
        read_deletion_vector(SMALL_DESCRIPTOR, str(table), LocalFileIO())
    path.write_bytes(b"\x01\x00")
    with pytest.raises(CorruptDeletionVectorError, match="truncated"):
        read_deletion_vector(SMALL_DESCRIPTOR, str(table), LocalFileIO())


def test_bad_magic_in_file(tmp_path: Path, fixtures_dir: Path) -> None:
    table = _copy_small(tmp_path, fixtures_dir)
    path = table / SMALL_DV
    raw = bytearray(path.read_bytes())
    raw[5:9] = b"\x00\x00\x00\x00"
    raw[41:45] = struct.pack(">I", zlib.crc32(bytes(raw[5:41])))  # valid CRC, bad magic
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptDeletionVectorError, match="bad bitmap magic") as exc:
        read_deletion_vector(SMALL_DESCRIPTOR, str(table), LocalFileIO())
    assert str(path) in str(exc.value)


# --- other descriptor kinds ------------------------------------------------------------


def test_absolute_path_descriptor(tmp_path: Path, fixtures_dir: Path) -> None:
    target = tmp_path / "some dir" / "my dv.bin"
    target.parent.mkdir()
    shutil.copyfile(fixtures_dir / SMALL / SMALL_DV, target)
    d = DeletionVectorDescriptor("p", "file://" + quote(str(target)), 36, 2, 1)
    assert read_deletion_vector(d, "/unrelated", LocalFileIO()) == BitMap64([0, 9])


def test_absent_offset_means_zero() -> None:
    data, _ = encode_dv_file([BitMap64([4, 6])])
    fs = MemoryFileIO()
    d = DeletionVectorDescriptor.on_disk(uuid.UUID(int=1), 1, len(data) - 9, 2)
    path = d.absolute_path("/t")
    assert path is not None
    fs.write(path, data[1:])  # no version byte: the DV frame starts at 0
    no_offset = DeletionVectorDescriptor("u", d.path_or_inline_dv, d.size_in_bytes, 2)
    assert read_deletion_vector(no_offset, "/t", fs) == BitMap64([4, 6])


# --- writing ---------------------------------------------------------------------------

BITMAPS = [
    BitMap64([0, 9]),
    BitMap64(range(1000, 6000)),
    BitMap64([3, 2**32 + 7, 2**45]),
    BitMap64(),
    BitMap64(range(0, 200_000, 3)),
]


def _check_written(fs: LocalFileIO | MemoryFileIO, root: str, prefix: str) -> str:
    descriptors = write_deletion_vectors(root, fs, BITMAPS, prefix=prefix)
    assert len(descriptors) == len(BITMAPS)
    assert {d.uuid for d in descriptors} == {descriptors[0].uuid}
    assert all(d.storage_type == "u" and d.prefix == prefix for d in descriptors)
    assert descriptors[0].offset == 1
    expected_dir = f"{root}/{prefix}" if prefix else root
    path = f"{expected_dir}/{dv_file_name(descriptors[0].uuid)}"
    assert all(d.absolute_path(root) == path for d in descriptors)
    data, entries = encode_dv_file(BITMAPS)
    assert fs.read(path) == data
    assert [(d.offset, d.size_in_bytes, d.cardinality) for d in descriptors] == entries
    for d, bitmap in zip(descriptors, BITMAPS, strict=True):
        assert read_deletion_vector(d, root, fs) == bitmap
    return path


@pytest.mark.parametrize("prefix", ["", "r4"])
@pytest.mark.parametrize("kind", ["local", "memory"])
def test_write_read_back(tmp_path: Path, kind: str, prefix: str) -> None:
    fs = LocalFileIO() if kind == "local" else MemoryFileIO()
    path = _check_written(fs, str(tmp_path / "table"), prefix)
    assert [s.name for s in fs.list_dir(os.path.dirname(path))] == [os.path.basename(path)]


def test_each_write_makes_a_new_file() -> None:
    fs = MemoryFileIO()
    a = write_deletion_vectors("/t", fs, [BitMap64([1])])
    b = write_deletion_vectors("/t", fs, [BitMap64([1])])
    assert a[0].uuid != b[0].uuid
    assert len(fs.list_dir("/t")) == 2


def test_empty_input_writes_nothing(tmp_path: Path) -> None:
    assert write_deletion_vectors(str(tmp_path), LocalFileIO(), []) == []
    assert list(tmp_path.iterdir()) == []
    mem = MemoryFileIO()
    assert write_deletion_vectors("/t", mem, []) == []
    assert mem.list_dir("/t") == []


class _NoOverwriteFS(MemoryFileIO):
    """Refuses plain writes and pretends the first ``collisions`` paths already exist."""

    def __init__(self, collisions: int) -> None:
        super().__init__()
        self.collisions = collisions
        self.attempted: list[str] = []

    def write(self, path: str, data: bytes) -> None:
        raise AssertionError("DV files must be created with write_if_absent")

    def write_if_absent(self, path: str, data: bytes) -> None:
        self.attempted.append(path)
        if len(self.attempted) <= self.collisions:
            raise FileExistsError(path)
        super().write_if_absent(path, data)


def test_write_never_overwrites_and_retries_with_new_uuid() -> None:
    fs = _NoOverwriteFS(collisions=1)
    (d,) = write_deletion_vectors("/t", fs, [BitMap64([7])])
    assert len(fs.attempted) == 2
    assert fs.attempted[0] != fs.attempted[1]
    assert d.absolute_path("/t") == fs.attempted[1]
    assert read_deletion_vector(d, "/t", fs) == BitMap64([7])


def test_write_gives_up_after_repeated_collisions() -> None:
    with pytest.raises(FileExistsError):
        write_deletion_vectors("/t", _NoOverwriteFS(collisions=100), [BitMap64([7])])


# --- durable writes ---------------------------------------------------------------------


def test_dv_write_survives_short_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.storage.faults import WriteFault, inject_write

    bitmaps = [BitMap64(range(0, 5000, 3)), BitMap64([1, 2, 70000])]
    inject_write(monkeypatch, WriteFault(r"deletion_vector_", chunk=5))
    descriptors = write_deletion_vectors(str(tmp_path), LocalFileIO(), bitmaps)
    monkeypatch.undo()
    for descriptor, bitmap in zip(descriptors, bitmaps, strict=True):
        assert read_deletion_vector(descriptor, str(tmp_path), LocalFileIO()) == bitmap


@pytest.mark.parametrize("prefix", ["", "ab"])
def test_dv_write_on_full_disk_raises_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str
) -> None:
    from tests.storage.faults import WriteFault, inject_write
    from txsql.errors import DiskFullError

    inject_write(monkeypatch, WriteFault(r"deletion_vector_", budget=40))
    with pytest.raises(DiskFullError) as info:
        write_deletion_vectors(str(tmp_path), LocalFileIO(), [BitMap64(range(0, 9000, 7))], prefix)
    monkeypatch.undo()
    assert "deletion_vector_" in info.value.message
    leftovers = [os.path.join(d, n) for d, _, names in os.walk(tmp_path) for n in names]
    assert leftovers == [], "neither the DV file nor its temp file remains"


def test_dv_file_is_fsynced_with_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.storage.faults import record_fsyncs

    synced = record_fsyncs(monkeypatch)
    write_deletion_vectors(str(tmp_path), LocalFileIO(), [BitMap64([3])])
    assert any("deletion_vector_" in p for p in synced) and str(tmp_path) in synced
