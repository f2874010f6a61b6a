"""RoaringBitmapArray serialization: portable and legacy native formats."""

from __future__ import annotations

import random
import struct

import pytest
from pyroaring import BitMap, BitMap64

from txsql.dv.bitmap import (
    MAX_ROW_INDEX,
    NATIVE_MAGIC,
    PORTABLE_MAGIC,
    deserialize_bitmap,
    serialize_bitmap,
)
from txsql.errors import CorruptDeletionVectorError

# The reference's worked example: rows {0, 9} exactly as Delta Spark serializes them.
ROWS_0_9 = bytes.fromhex(
    "d1d33964"  # magic 1681511377 (LE)
    "0100000000000000"  # one 32-bit bucket
    "00000000"  # bucket key 0
    "3a300000"  # cookie 12346
    "01000000"  # one container
    "00000100"  # key 0, cardinality - 1 = 1
    "10000000"  # container offset 16
    "00000900"  # values 0, 9
)


def _native(buckets: list[BitMap]) -> bytes:
    out = struct.pack("<ii", NATIVE_MAGIC, len(buckets))
    for b in buckets:
        data = b.serialize()
        out += struct.pack("<i", len(data)) + data
    return out


def test_rows_0_9_byte_exact() -> None:
    assert len(ROWS_0_9) == 36
    assert serialize_bitmap(BitMap64([0, 9])) == ROWS_0_9
    assert deserialize_bitmap(ROWS_0_9) == BitMap64([0, 9])


def test_magic_constants() -> None:
    assert struct.pack("<i", PORTABLE_MAGIC) == bytes.fromhex("d1d33964")
    assert MAX_ROW_INDEX == 9223372030412324864


@pytest.mark.parametrize("seed", range(8))
def test_random_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    values = {rng.randrange(0, 70_000) for _ in range(rng.randrange(1, 5000))}
    # Values above 2**32 land in other buckets, including one sparse far-away key.
    values |= {rng.randrange(2**32, 2**36) for _ in range(rng.randrange(1, 500))}
    values |= {rng.randrange(0, MAX_ROW_INDEX + 1) for _ in range(20)}
    values |= set(range(100_000, 100_000 + rng.randrange(0, 20_000)))  # run container
    bitmap = BitMap64(values)
    assert deserialize_bitmap(serialize_bitmap(bitmap)) == bitmap


def test_empty_round_trip() -> None:
    data = serialize_bitmap(BitMap64())
    assert data == struct.pack("<iq", PORTABLE_MAGIC, 0)
    assert deserialize_bitmap(data) == BitMap64()


def test_max_row_index_round_trips_and_above_is_refused() -> None:
    bitmap = BitMap64([0, MAX_ROW_INDEX])
    assert deserialize_bitmap(serialize_bitmap(bitmap)) == bitmap
    with pytest.raises(ValueError, match="exceeds"):
        serialize_bitmap(BitMap64([MAX_ROW_INDEX + 1]))


def test_native_format() -> None:
    data = _native([BitMap([1, 5]), BitMap(), BitMap([7])])
    assert deserialize_bitmap(data) == BitMap64([1, 5, (2 << 32) | 7])


def test_native_format_empty() -> None:
    assert deserialize_bitmap(_native([])) == BitMap64()
    assert deserialize_bitmap(_native([BitMap()])) == BitMap64()


def test_native_bad_length_field() -> None:
    data = bytearray(_native([BitMap([1, 5]), BitMap([7])]))
    struct.pack_into("<i", data, 8, struct.unpack_from("<i", data, 8)[0] + 1)
    with pytest.raises(CorruptDeletionVectorError, match=r"some\.bin"):
        deserialize_bitmap(bytes(data), "some.bin")


def test_native_truncated() -> None:
    data = _native([BitMap([1, 5])])
    for cut in (6, 10, len(data) - 1):
        with pytest.raises(CorruptDeletionVectorError):
            deserialize_bitmap(data[:cut])


def test_native_trailing_bytes() -> None:
    with pytest.raises(CorruptDeletionVectorError, match="trailing"):
        deserialize_bitmap(_native([BitMap([1])]) + b"\x00")


def test_bad_magic_names_source() -> None:
    data = b"\x00\x00\x00\x00" + ROWS_0_9[4:]
    with pytest.raises(CorruptDeletionVectorError, match=r"/t/dv\.bin.*bad bitmap magic 0"):
        deserialize_bitmap(data, "/t/dv.bin")


def test_big_endian_magic_is_rejected() -> None:
    # The PROTOCOL.md inline example writes the native magic big-endian; Spark rejects it.
    with pytest.raises(CorruptDeletionVectorError, match="magic"):
        deserialize_bitmap(struct.pack(">i", NATIVE_MAGIC) + b"\x00" * 8)


@pytest.mark.parametrize("cut", [0, 3, 4, 11, 20, 35])
def test_truncated_portable(cut: int) -> None:
    with pytest.raises(CorruptDeletionVectorError):
        deserialize_bitmap(ROWS_0_9[:cut])


def test_negative_high_key_rejected() -> None:
    data = struct.pack("<i", PORTABLE_MAGIC) + BitMap64([2**63 + 5]).serialize()
    with pytest.raises(CorruptDeletionVectorError, match="negative high key"):
        deserialize_bitmap(data)
