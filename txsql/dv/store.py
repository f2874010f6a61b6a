"""Reading and writing deletion vectors: the DV file layout and its integrity checks.

A DV file is a version byte (``0x01``) followed by DVs, each stored at its descriptor's
``offset`` as a big-endian int32 size, the serialized bitmap, and a big-endian CRC-32 of the
bitmap bytes. Everything here is stateless so Spark executors can call it with the table's
FileIO (local, or an object store's, which travels to executors in the task closure).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Sequence

from pyroaring import BitMap64

from txsql.dv import z85
from txsql.dv.bitmap import deserialize_bitmap, serialize_bitmap
from txsql.dv.descriptor import DeletionVectorDescriptor
from txsql.errors import CorruptDeletionVectorError
from txsql.storage.crashpoints import crash_point
from txsql.storage.filesystem import FileIO
from txsql.storage.written import record_written

FORMAT_VERSION = 1
_SIZE = struct.Struct(">i")
_CRC = struct.Struct(">I")
# A fresh uuid4 colliding is practically impossible; the bound only stops a broken FileIO
# from looping forever.
_WRITE_ATTEMPTS = 3


def read_deletion_vector(
    descriptor: DeletionVectorDescriptor, table_root: str, fs: FileIO
) -> BitMap64:
    """Load and verify the row indexes a descriptor marks as deleted.

    Args:
        descriptor: The ``deletionVector`` of an add/remove action.
        table_root: The table's root directory, against which ``u`` paths resolve.
        fs: File access (the table's FileIO, ``MemoryFileIO`` in tests).

    Returns:
        The deleted row indexes.

    Raises:
        CorruptDeletionVectorError: If the file is missing or truncated, or its size field,
            checksum or cardinality disagrees with the descriptor.
    """
    path = descriptor.absolute_path(table_root)
    if path is None:
        source = f"inline deletion vector {descriptor.path_or_inline_dv!r}"
        data = z85.decode(descriptor.path_or_inline_dv, descriptor.size_in_bytes)
    else:
        source = path
        data = _read_framed(path, descriptor, fs)
    bitmap = deserialize_bitmap(data, source)
    if len(bitmap) != descriptor.cardinality:
        raise CorruptDeletionVectorError(
            f"deletion vector in {source}: cardinality mismatch, the descriptor says "
            f"{descriptor.cardinality} but the bitmap holds {len(bitmap)} rows"
        )
    return bitmap


def _read_framed(path: str, descriptor: DeletionVectorDescriptor, fs: FileIO) -> bytes:
    """Read one DV's bitmap bytes from its file, checking the size field and the CRC."""
    offset = descriptor.offset if descriptor.offset is not None else 0
    size = descriptor.size_in_bytes
    try:
        # One read covers size field, data and CRC: DV files sit on slow storage too.
        frame = fs.read_range(path, offset, _SIZE.size + size + _CRC.size)
    except FileNotFoundError as exc:
        raise CorruptDeletionVectorError(
            f"deletion vector file {path} does not exist",
            hint="The DV file was deleted (e.g. by VACUUM or a manual cleanup) or never "
            "copied along with the table; restore it, or RESTORE the table to a version "
            "that does not reference it.",
        ) from exc
    if len(frame) < _SIZE.size:
        raise CorruptDeletionVectorError(
            f"deletion vector file {path}: truncated, no size field at offset {offset}"
        )
    (stored_size,) = _SIZE.unpack_from(frame)
    if stored_size != size:
        raise CorruptDeletionVectorError(
            f"deletion vector file {path}: size mismatch at offset {offset}, the file says "
            f"{stored_size} bytes but the descriptor says {size}"
        )
    if len(frame) != _SIZE.size + size + _CRC.size:
        raise CorruptDeletionVectorError(
            f"deletion vector file {path}: truncated, expected {size} data bytes and a "
            f"checksum at offset {offset}, found only {len(frame)} bytes"
        )
    data = frame[_SIZE.size : _SIZE.size + size]
    (stored_crc,) = _CRC.unpack_from(frame, _SIZE.size + size)
    actual_crc = zlib.crc32(data)
    if stored_crc != actual_crc:
        raise CorruptDeletionVectorError(
            f"deletion vector file {path}: checksum mismatch at offset {offset}, stored "
            f"CRC-32 {stored_crc:#010x} but the data hashes to {actual_crc:#010x}"
        )
    return data


def encode_dv_file(bitmaps: Sequence[BitMap64]) -> tuple[bytes, list[tuple[int, int, int]]]:
    """Lay out ``bitmaps`` as the bytes of one DV file.

    Args:
        bitmaps: The DVs to pack, in order.

    Returns:
        The file bytes and, per bitmap, ``(offset, size_in_bytes, cardinality)``.

    >>> data, entries = encode_dv_file([BitMap64([0, 9]), BitMap64([5])])
    >>> len(data), entries
    (87, [(1, 36, 2), (45, 34, 1)])
    """
    out = bytearray([FORMAT_VERSION])
    entries: list[tuple[int, int, int]] = []
    for bitmap in bitmaps:
        data = serialize_bitmap(bitmap)
        entries.append((len(out), len(data), len(bitmap)))
        out += _SIZE.pack(len(data))
        out += data
        out += _CRC.pack(zlib.crc32(data))
    return bytes(out), entries


def write_deletion_vectors(
    table_root: str, fs: FileIO, bitmaps: Sequence[BitMap64], prefix: str = ""
) -> list[DeletionVectorDescriptor]:
    """Write ``bitmaps`` into one new UUID-named DV file and describe each of them.

    Args:
        table_root: The table's root directory.
        fs: File access; the file is created with ``write_if_absent``, never overwritten
            (with ``LocalFileIO`` it is complete and fsynced, directory included, before
            this returns, so a commit referencing it can never outlive it; on an object
            store it is one conditional PUT).
        bitmaps: The DVs to write.
        prefix: Optional sub-directory of the table root (Delta's random file prefix).

    Returns:
        One ``u`` descriptor per bitmap, in input order; ``[]`` (and no file) for no bitmaps.
    """
    if not bitmaps:
        return []
    data, entries = encode_dv_file(bitmaps)
    attempts_left = _WRITE_ATTEMPTS
    while True:
        file_uuid = uuid.uuid4()
        descriptors = [
            DeletionVectorDescriptor.on_disk(file_uuid, off, size, card, prefix)
            for off, size, card in entries
        ]
        path = descriptors[0].absolute_path(table_root)
        assert path is not None  # a "u" descriptor always names a file
        try:
            fs.write_if_absent(path, data)
            record_written(path)  # the running transaction deletes it if never committed
            crash_point("dv_written")
            return descriptors
        except FileExistsError:
            attempts_left -= 1
            if not attempts_left:
                raise
