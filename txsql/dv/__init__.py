"""Deletion vectors: Z85, Roaring bitmap serialization, descriptors and DV files."""

from txsql.dv.bitmap import MAX_ROW_INDEX, deserialize_bitmap, serialize_bitmap
from txsql.dv.descriptor import DeletionVectorDescriptor, dv_file_name
from txsql.dv.store import encode_dv_file, read_deletion_vector, write_deletion_vectors

__all__ = [
    "MAX_ROW_INDEX",
    "DeletionVectorDescriptor",
    "deserialize_bitmap",
    "dv_file_name",
    "encode_dv_file",
    "read_deletion_vector",
    "serialize_bitmap",
    "write_deletion_vectors",
]
