"""Z85 encoding as Delta uses it for DV file names and inline DVs."""

from __future__ import annotations

import random
import uuid

import pytest

from txsql.dv import z85
from txsql.errors import CorruptDeletionVectorError

UUID_VECTORS = [
    (uuid.UUID(int=0), "00000000000000000000"),
    (uuid.UUID(int=2**128 - 1), "%nSc0%nSc0%nSc0%nSc0"),
    (uuid.UUID("b6a98cdd-7843-470d-8897-708cdffa38c5"), "WYbkwCTB$gH)J7t?$/sK"),
    (uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61"), "^-aqEH.-t@S}K{vb[*k^"),
]


@pytest.mark.parametrize(("u", "text"), UUID_VECTORS)
def test_uuid_vectors(u: uuid.UUID, text: str) -> None:
    assert z85.encode_uuid(u) == text
    assert z85.decode_uuid(text) == u


def test_protocol_example_with_prefix() -> None:
    path = "ab^-aqEH.-t@S}K{vb[*k^"
    assert path[:-20] == "ab"
    assert z85.decode_uuid(path[-20:]) == uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")


def test_uuid_text_is_always_20_chars() -> None:
    rng = random.Random(7)
    for _ in range(200):
        u = uuid.UUID(int=rng.getrandbits(128))
        text = z85.encode_uuid(u)
        assert len(text) == 20
        assert z85.decode_uuid(text) == u


def test_rfc32_vector() -> None:
    data = bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    assert z85.encode(data) == "HelloWorld"
    assert z85.decode("HelloWorld") == data


@pytest.mark.parametrize("length", [0, 1, 2, 3, 4, 5, 7, 8, 36, 101])
def test_round_trip_with_padding(length: int) -> None:
    data = random.Random(length).randbytes(length)
    text = z85.encode(data)
    # Zero-padded to a multiple of 4 bytes, as Spark does.
    assert len(text) == 5 * ((length + 3) // 4)
    assert z85.decode(text, size=length) == data
    assert z85.decode(text) == data + b"\x00" * (-length % 4)


def test_empty() -> None:
    assert z85.encode(b"") == ""
    assert z85.decode("") == b""


@pytest.mark.parametrize("text", ["0000 ", 'abcd"', "~~~~~", "0000000000000000000,"])
def test_invalid_character(text: str) -> None:
    with pytest.raises(CorruptDeletionVectorError, match="invalid Z85 character"):
        z85.decode(text)


def test_length_not_multiple_of_five() -> None:
    with pytest.raises(CorruptDeletionVectorError, match="multiple of 5"):
        z85.decode("0000")


def test_group_above_32_bits() -> None:
    # "#####" is 85**5 - 1, which does not fit in 4 bytes.
    with pytest.raises(CorruptDeletionVectorError, match="exceeds 32 bits"):
        z85.decode("#####")
    assert z85.decode("%nSc0") == b"\xff\xff\xff\xff"


def test_size_larger_than_data() -> None:
    with pytest.raises(CorruptDeletionVectorError, match="decodes to 4 bytes"):
        z85.decode("00000", size=5)


@pytest.mark.parametrize("text", ["0000000000000000000", "000000000000000000000", ""])
def test_decode_uuid_wrong_length(text: str) -> None:
    with pytest.raises(CorruptDeletionVectorError, match="20 characters"):
        z85.decode_uuid(text)


def test_decode_uuid_invalid_character() -> None:
    with pytest.raises(CorruptDeletionVectorError):
        z85.decode_uuid("0000000000000000000 ")
