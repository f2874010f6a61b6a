"""Z85 (ZeroMQ RFC 32) as Delta uses it for DV file names and inline deletion vectors.

Each 4 input bytes, read as an unsigned big-endian 32-bit integer, become 5 characters, most
significant base-85 digit first. Like Spark's ``Codec.Base85Codec`` the encoder zero-pads its
input to a multiple of 4, so the decoder takes the real length as ``size``.
"""

from __future__ import annotations

import struct
from uuid import UUID

from txsql.errors import CorruptDeletionVectorError

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_DIGITS = {c: i for i, c in enumerate(ALPHABET)}
# Five base-85 digits can express up to 85**5 - 1 > 2**32 - 1; anything above is not Z85.
_MAX_WORD = 0xFFFFFFFF
UUID_TEXT_LENGTH = 20


def encode(data: bytes) -> str:
    """Encode ``data`` as Z85, zero-padding it to a multiple of 4 bytes first.

    Args:
        data: The bytes to encode.

    Returns:
        ``5 * ceil(len(data) / 4)`` characters of the Z85 alphabet.

    >>> encode(bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]))
    'HelloWorld'
    >>> encode(b"\\x01")
    '0rr91'
    """
    padded = data + b"\x00" * (-len(data) % 4)
    out: list[str] = []
    for (word,) in struct.iter_unpack(">I", padded):
        chunk = []
        for _ in range(5):
            word, digit = divmod(word, 85)
            chunk.append(ALPHABET[digit])
        out.extend(reversed(chunk))
    return "".join(out)


def decode(text: str, size: int | None = None) -> bytes:
    """Decode Z85 ``text``, keeping only the first ``size`` bytes when given.

    Args:
        text: Z85 characters; the length must be a multiple of 5.
        size: The unpadded byte length (e.g. a descriptor's ``sizeInBytes``); ``None`` keeps
            every decoded byte.

    Returns:
        The decoded bytes.

    Raises:
        CorruptDeletionVectorError: On a bad length, a character outside the alphabet, a group
            above 2**32 - 1, or a ``size`` larger than the decoded data.

    >>> decode("HelloWorld").hex()
    '864fd26fb559f75b'
    >>> decode("0rr91", size=1)
    b'\\x01'
    """
    if len(text) % 5:
        raise CorruptDeletionVectorError(
            f"Z85 text has length {len(text)}, which is not a multiple of 5: {text!r}"
        )
    out = bytearray()
    for start in range(0, len(text), 5):
        word = 0
        for ch in text[start : start + 5]:
            digit = _DIGITS.get(ch)
            if digit is None:
                raise CorruptDeletionVectorError(
                    f"invalid Z85 character {ch!r} at position {start} in {text!r}"
                )
            word = word * 85 + digit
        if word > _MAX_WORD:
            raise CorruptDeletionVectorError(
                f"Z85 group {text[start : start + 5]!r} exceeds 32 bits in {text!r}"
            )
        out += struct.pack(">I", word)
    if size is not None:
        if not 0 <= size <= len(out):
            raise CorruptDeletionVectorError(
                f"Z85 text {text!r} decodes to {len(out)} bytes, expected at least {size}"
            )
        del out[size:]
    return bytes(out)


def encode_uuid(u: UUID) -> str:
    """Encode a UUID (16 big-endian bytes) as the 20-character Z85 text of a DV file name.

    >>> encode_uuid(UUID("b6a98cdd-7843-470d-8897-708cdffa38c5"))
    'WYbkwCTB$gH)J7t?$/sK'
    """
    return encode(u.bytes)


def decode_uuid(text: str) -> UUID:
    """Decode the 20-character Z85 text of a DV file name into its UUID.

    Raises:
        CorruptDeletionVectorError: If ``text`` is not 20 valid Z85 characters.

    >>> decode_uuid("WYbkwCTB$gH)J7t?$/sK")
    UUID('b6a98cdd-7843-470d-8897-708cdffa38c5')
    """
    if len(text) != UUID_TEXT_LENGTH:
        raise CorruptDeletionVectorError(
            f"a Z85 UUID has {UUID_TEXT_LENGTH} characters, got {len(text)}: {text!r}"
        )
    return UUID(bytes=decode(text))
