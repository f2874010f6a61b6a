"""DeletionVectorDescriptor: paths, UUIDs, constructors and JSON form."""

from __future__ import annotations

import uuid

import pytest
from pyroaring import BitMap64

from txsql.dv import z85
from txsql.dv.bitmap import deserialize_bitmap
from txsql.dv.descriptor import DeletionVectorDescriptor, dv_file_name
from txsql.dv.store import read_deletion_vector
from txsql.errors import CorruptDeletionVectorError, UnsupportedFeatureError
from txsql.storage.filesystem import MemoryFileIO

SMALL_UUID = uuid.UUID("b6a98cdd-7843-470d-8897-708cdffa38c5")
PREFIXED_UUID = uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")


def test_dv_file_name() -> None:
    assert dv_file_name(SMALL_UUID) == f"deletion_vector_{SMALL_UUID}.bin"


@pytest.mark.parametrize("root", ["/data/t", "/data/t/"])
def test_u_path_without_prefix(root: str) -> None:
    d = DeletionVectorDescriptor("u", "WYbkwCTB$gH)J7t?$/sK", 36, 2, 1)
    assert d.uuid == SMALL_UUID
    assert d.prefix == ""
    expected = "/data/t/deletion_vector_b6a98cdd-7843-470d-8897-708cdffa38c5.bin"
    assert d.absolute_path(root) == expected


def test_u_path_with_prefix() -> None:
    d = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 36, 2, 1)
    assert d.uuid == PREFIXED_UUID
    assert d.prefix == "ab"
    assert d.absolute_path("/data/t") == f"/data/t/ab/deletion_vector_{PREFIXED_UUID}.bin"


def test_u_path_too_short() -> None:
    d = DeletionVectorDescriptor("u", "WYbkwCTB", 36, 2, 1)
    with pytest.raises(CorruptDeletionVectorError, match="shorter"):
        d.absolute_path("/t")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("file:///x/dv%20a.bin", "/x/dv a.bin"),
        ("file:/x/dv%20a.bin", "/x/dv a.bin"),
        ("file://localhost/x/dv.bin", "/x/dv.bin"),
        ("/x/y%25z/dv.bin", "/x/y%z/dv.bin"),
    ],
)
def test_p_path(text: str, expected: str) -> None:
    d = DeletionVectorDescriptor("p", text, 36, 2, 1)
    assert d.absolute_path("/ignored") == expected
    assert not d.is_inline


@pytest.mark.parametrize("text", ["s3://bucket/dv.bin", "file://otherhost/x/dv.bin"])
def test_p_path_not_local(text: str) -> None:
    with pytest.raises(UnsupportedFeatureError):
        DeletionVectorDescriptor("p", text, 36, 2, 1).absolute_path("/t")


def test_unknown_storage_type() -> None:
    with pytest.raises(UnsupportedFeatureError, match="'r'"):
        DeletionVectorDescriptor("r", "x/dv.bin", 36, 2, 1).absolute_path("/t")


def test_uuid_only_for_u() -> None:
    with pytest.raises(ValueError, match="no UUID"):
        _ = DeletionVectorDescriptor("p", "/x/dv.bin", 36, 2, 1).uuid


def test_on_disk() -> None:
    d = DeletionVectorDescriptor.on_disk(SMALL_UUID, 1, 36, 2)
    assert d == DeletionVectorDescriptor("u", "WYbkwCTB$gH)J7t?$/sK", 36, 2, 1)
    assert d.unique_id == "uWYbkwCTB$gH)J7t?$/sK@1"
    p = DeletionVectorDescriptor.on_disk(PREFIXED_UUID, 43, 34, 1, prefix="ab")
    assert p.path_or_inline_dv == "ab^-aqEH.-t@S}K{vb[*k^"
    assert p.uuid == PREFIXED_UUID
    assert p.offset == 43


def test_inline() -> None:
    bitmap = BitMap64([3, 4, 7, 2**33])
    d = DeletionVectorDescriptor.inline(bitmap)
    assert d.is_inline
    assert d.storage_type == "i"
    assert d.offset is None
    assert d.cardinality == 4
    assert d.absolute_path("/t") is None
    assert d.unique_id == "i" + d.path_or_inline_dv
    data = z85.decode(d.path_or_inline_dv, d.size_in_bytes)
    assert len(data) == d.size_in_bytes
    assert deserialize_bitmap(data) == bitmap


def test_json_round_trip() -> None:
    obj = {
        "storageType": "u",
        "pathOrInlineDv": "WYbkwCTB$gH)J7t?$/sK",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": 2,
    }
    d = DeletionVectorDescriptor.from_json(obj)
    assert d == DeletionVectorDescriptor("u", "WYbkwCTB$gH)J7t?$/sK", 36, 2, 1)
    assert d.to_json() == obj
    inline = DeletionVectorDescriptor.inline(BitMap64([1]))
    assert "offset" not in inline.to_json()
    assert DeletionVectorDescriptor.from_json(inline.to_json()) == inline


def test_inline_round_trip() -> None:
    bitmap = BitMap64([0, 5, 2**32 + 1, 2**40])
    d = DeletionVectorDescriptor.inline(bitmap)
    assert read_deletion_vector(d, "/nowhere", MemoryFileIO()) == bitmap
    empty = DeletionVectorDescriptor.inline(BitMap64())
    assert read_deletion_vector(empty, "/nowhere", MemoryFileIO()) == BitMap64()


def test_inline_wrong_cardinality() -> None:
    good = DeletionVectorDescriptor.inline(BitMap64([1, 2]))
    bad = DeletionVectorDescriptor("i", good.path_or_inline_dv, good.size_in_bytes, 5)
    with pytest.raises(CorruptDeletionVectorError, match="cardinality mismatch"):
        read_deletion_vector(bad, "/t", MemoryFileIO())
