"""Delta's ``RoaringBitmapArray`` (de)serialization on top of pyroaring's 64-bit bitmap.

The portable format (magic 1681511377, little-endian) is the magic followed by exactly what
``pyroaring.BitMap64.serialize()`` produces: an int64 bucket count, then per bucket a uint32
high key and a portable 32-bit Roaring bitmap. Readers must also accept the legacy "native"
format (magic 1681511376): an int32 count, then per bucket an int32 length and a 32-bit bitmap,
where the bucket's position is its high key.
"""

from __future__ import annotations

import struct

from pyroaring import BitMap, BitMap64

from txsql.errors import CorruptDeletionVectorError

PORTABLE_MAGIC = 1681511377
NATIVE_MAGIC = 1681511376
# RoaringBitmapArray.MAX_REPRESENTABLE_VALUE in Delta Spark: high word 2**31 - 2 and low word
# 0x80000000. Larger row indexes cannot be read back by Spark, so we refuse to write them.
MAX_ROW_INDEX = ((2**31 - 2) << 32) | 0x80000000
# Spark rejects negative (signed) high keys, i.e. any value with bit 63 set.
_MAX_READABLE = 2**63 - 1
# pyroaring signals malformed input with these (IndexError on truncated buffers).
_DECODE_ERRORS = (ValueError, IndexError, OverflowError)


def serialize_bitmap(bitmap: BitMap64) -> bytes:
    """Serialize row indexes in the portable ``RoaringBitmapArray`` format.

    Args:
        bitmap: Row indexes, each in ``[0, MAX_ROW_INDEX]``.

    Returns:
        The little-endian magic 1681511377 followed by ``bitmap.serialize()``.

    Raises:
        ValueError: If a row index is above :data:`MAX_ROW_INDEX`.

    >>> serialize_bitmap(BitMap64([0, 9])).hex()[:8]
    'd1d33964'
    >>> len(serialize_bitmap(BitMap64()))
    12
    """
    if bitmap and bitmap.max() > MAX_ROW_INDEX:
        raise ValueError(f"row index {bitmap.max()} exceeds the DV maximum {MAX_ROW_INDEX}")
    return struct.pack("<i", PORTABLE_MAGIC) + bitmap.serialize()


def deserialize_bitmap(data: bytes, source: str = "<bytes>") -> BitMap64:
    """Decode a ``RoaringBitmapArray`` in the portable or the legacy native format.

    Args:
        data: The serialized bitmap, starting with its 4-byte magic.
        source: Where ``data`` came from (a DV file path), used in error messages.

    Returns:
        The row indexes.

    Raises:
        CorruptDeletionVectorError: On an unknown magic or malformed bitmap data.

    >>> deserialize_bitmap(serialize_bitmap(BitMap64([3, 2**40])))
    BitMap64([3, 1099511627776])
    """
    if len(data) < 4:
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: {len(data)} bytes is too short for a bitmap"
        )
    (magic,) = struct.unpack_from("<i", data)
    if magic == PORTABLE_MAGIC:
        body = bytes(data[4:])
    elif magic == NATIVE_MAGIC:
        body = _native_to_portable(data, source)
    else:
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: bad bitmap magic {magic}, expected "
            f"{PORTABLE_MAGIC} (or legacy {NATIVE_MAGIC})"
        )
    try:
        bitmap = BitMap64.deserialize(body)
    except _DECODE_ERRORS as exc:
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: malformed Roaring bitmap data ({exc})"
        ) from exc
    if bitmap and bitmap.max() > _MAX_READABLE:
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: negative high key (row index {bitmap.max()})"
        )
    return bitmap


def _native_to_portable(data: bytes, source: str) -> bytes:
    """Rewrite a legacy native ``RoaringBitmapArray`` as a portable 64-bit body."""
    if len(data) < 8:
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: native bitmap header truncated ({len(data)} bytes)"
        )
    (count,) = struct.unpack_from("<i", data, 4)
    if count < 0:
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: negative native bucket count {count}"
        )
    pos = 8
    parts = [b""]  # placeholder for the bucket count, known only after skipping empties
    kept = 0
    for key in range(count):
        if pos + 4 > len(data):
            raise CorruptDeletionVectorError(
                f"deletion vector in {source}: native bucket {key} header truncated"
            )
        (length,) = struct.unpack_from("<i", data, pos)
        pos += 4
        chunk = bytes(data[pos : pos + length])
        if length < 0 or len(chunk) != length:
            raise CorruptDeletionVectorError(
                f"deletion vector in {source}: native bucket {key} length {length} does not "
                f"fit the {len(data) - pos} remaining bytes"
            )
        pos += length
        # Parse each bucket on its own so a malformed one is reported with its key, and
        # empty buckets can be dropped (they carry no rows).
        try:
            bucket = BitMap.deserialize(chunk)
        except _DECODE_ERRORS as exc:
            raise CorruptDeletionVectorError(
                f"deletion vector in {source}: malformed native bucket {key} ({exc})"
            ) from exc
        if bucket:
            parts.append(struct.pack("<I", key) + chunk)
            kept += 1
    if pos != len(data):
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: {len(data) - pos} trailing bytes after native bitmap"
        )
    parts[0] = struct.pack("<q", kept)
    return b"".join(parts)
