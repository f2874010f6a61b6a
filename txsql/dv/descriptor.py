"""Deletion-vector descriptors: where a DV lives and how to identify it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse
from uuid import UUID

from pyroaring import BitMap64

from txsql.dv import z85
from txsql.dv.bitmap import serialize_bitmap
from txsql.errors import CorruptDeletionVectorError, UnsupportedFeatureError

STORAGE_UUID = "u"
STORAGE_INLINE = "i"
STORAGE_ABSOLUTE = "p"


def dv_file_name(u: UUID) -> str:
    """Return the file name Delta gives the DV file identified by ``u``.

    >>> dv_file_name(UUID("b6a98cdd-7843-470d-8897-708cdffa38c5"))
    'deletion_vector_b6a98cdd-7843-470d-8897-708cdffa38c5.bin'
    """
    return f"deletion_vector_{u}.bin"


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """The ``deletionVector`` struct of an add/remove action.

    ``storage_type`` is ``u`` (UUID-named file in the table root), ``i`` (inline Z85 bitmap)
    or ``p`` (absolute path). ``offset`` is the position of the DV's 4-byte size field in its
    file (absent for inline DVs).
    """

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @property
    def unique_id(self) -> str:
        """Delta's DV unique id: storage type + path/inline data (+ ``@offset``).

        >>> DeletionVectorDescriptor("u", "WYbkwCTB$gH)J7t?$/sK", 36, 2, 1).unique_id
        'uWYbkwCTB$gH)J7t?$/sK@1'
        """
        base = self.storage_type + self.path_or_inline_dv
        return base if self.offset is None else f"{base}@{self.offset}"

    @classmethod
    def on_disk(
        cls,
        file_uuid: UUID,
        offset: int,
        size_in_bytes: int,
        cardinality: int,
        prefix: str = "",
    ) -> DeletionVectorDescriptor:
        """Describe a DV stored in the UUID-named file ``file_uuid`` (storage type ``u``).

        Args:
            file_uuid: The UUID in the DV file's name.
            offset: Position of the DV's 4-byte size field in the file.
            size_in_bytes: Length of the serialized bitmap.
            cardinality: Number of deleted rows.
            prefix: Optional random sub-directory of the table root holding the file.

        >>> d = DeletionVectorDescriptor.on_disk(UUID(int=0), 1, 36, 2, prefix="ab")
        >>> d.path_or_inline_dv
        'ab00000000000000000000'
        """
        return cls(
            STORAGE_UUID, prefix + z85.encode_uuid(file_uuid), size_in_bytes, cardinality, offset
        )

    @classmethod
    def inline(cls, bitmap: BitMap64) -> DeletionVectorDescriptor:
        """Describe ``bitmap`` stored inline in the log (storage type ``i``).

        >>> d = DeletionVectorDescriptor.inline(BitMap64([0, 9]))
        >>> (d.storage_type, d.size_in_bytes, d.cardinality, d.offset)
        ('i', 36, 2, None)
        """
        data = serialize_bitmap(bitmap)
        return cls(STORAGE_INLINE, z85.encode(data), len(data), len(bitmap))

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> DeletionVectorDescriptor:
        """Build a descriptor from the log's camelCase ``deletionVector`` object.

        >>> DeletionVectorDescriptor.from_json({"storageType": "u", "offset": 1,
        ...     "pathOrInlineDv": "WYbkwCTB$gH)J7t?$/sK", "sizeInBytes": 36, "cardinality": 2})
        DeletionVectorDescriptor(storage_type='u', path_or_inline_dv='WYbkwCTB$gH)J7t?$/sK', \
size_in_bytes=36, cardinality=2, offset=1)
        """
        offset = obj.get("offset")
        return cls(
            str(obj["storageType"]),
            str(obj["pathOrInlineDv"]),
            int(obj["sizeInBytes"]),
            int(obj["cardinality"]),
            None if offset is None else int(offset),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the log's camelCase ``deletionVector`` object (``offset`` only if set).

        >>> DeletionVectorDescriptor("i", "0rr91", 1, 0).to_json()
        {'storageType': 'i', 'pathOrInlineDv': '0rr91', 'sizeInBytes': 1, 'cardinality': 0}
        """
        out: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
        }
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        return out

    @property
    def is_inline(self) -> bool:
        """Whether the bitmap is stored in the log itself rather than in a file."""
        return self.storage_type == STORAGE_INLINE

    @property
    def prefix(self) -> str:
        """The random sub-directory of a ``u`` DV (``""`` when there is none).

        >>> DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 36, 2, 1).prefix
        'ab'
        """
        self._require_uuid_storage()
        return self.path_or_inline_dv[: -z85.UUID_TEXT_LENGTH]

    @property
    def uuid(self) -> UUID:
        """The UUID naming the file of a ``u`` DV.

        Raises:
            ValueError: If the storage type is not ``u``.
            CorruptDeletionVectorError: If the last 20 characters are not a Z85 UUID.

        >>> DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 36, 2, 1).uuid
        UUID('d2c639aa-8816-431a-aaf6-d3fe2512ff61')
        """
        self._require_uuid_storage()
        return z85.decode_uuid(self.path_or_inline_dv[-z85.UUID_TEXT_LENGTH :])

    def absolute_path(self, table_root: str) -> str | None:
        """Return the local path of the file holding this DV, or ``None`` for inline DVs.

        Args:
            table_root: The table's root directory (a local path).

        Raises:
            CorruptDeletionVectorError: If a ``u`` descriptor has no valid Z85 UUID.
            UnsupportedFeatureError: For storage types other than ``u``, ``p`` and ``i``, or
                a ``p`` URI that is not on the local file system.

        >>> d = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 36, 2, 1)
        >>> d.absolute_path("/data/t/")
        '/data/t/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin'
        >>> DeletionVectorDescriptor("p", "file:///x/my%20dv.bin", 36, 2, 1).absolute_path("/t")
        '/x/my dv.bin'
        """
        if self.storage_type == STORAGE_INLINE:
            return None
        if self.storage_type == STORAGE_UUID:
            root = table_root.rstrip("/")
            prefix = self.prefix
            directory = f"{root}/{prefix}" if prefix else root
            return f"{directory}/{dv_file_name(self.uuid)}"
        if self.storage_type == STORAGE_ABSOLUTE:
            return _local_path(self.path_or_inline_dv)
        raise UnsupportedFeatureError(
            f"deletion vector storage type {self.storage_type!r} is not supported "
            f"({self.path_or_inline_dv!r})"
        )

    def _require_uuid_storage(self) -> None:
        if self.storage_type != STORAGE_UUID:
            raise ValueError(f"storage type {self.storage_type!r} has no UUID file name")
        if len(self.path_or_inline_dv) < z85.UUID_TEXT_LENGTH:
            raise CorruptDeletionVectorError(
                f"'u' deletion vector path {self.path_or_inline_dv!r} is shorter than a "
                f"{z85.UUID_TEXT_LENGTH}-character Z85 UUID"
            )


def _local_path(uri: str) -> str:
    """Turn a ``p`` descriptor's URI-encoded absolute path or ``file:`` URI into a local path."""
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme == "file":
        # file:/x, file:///x and file://localhost/x all name the local /x.
        if parsed.netloc not in ("", "localhost"):
            raise UnsupportedFeatureError(f"deletion vector on remote host: {uri!r}")
        return unquote(parsed.path)
    if scheme == "":
        return unquote(uri)
    raise UnsupportedFeatureError(f"deletion vector storage scheme {scheme!r}: {uri!r}")
