"""Kafka's variable-length integers, the one place they are written by hand.

Unsigned varints (LEB128, at most 5 bytes for an int32) carry the lengths and counts of flexible
versions and tagged fields; zig-zag varints carry the fields inside a v2 record. Readers raise
IndexError for a value that runs past the end or past its longest form, so a caller's one
`except IndexError` covers every kind of truncation.
"""
from __future__ import annotations

MAX_UNSIGNED_BYTES = 5  # an int32, as Kafka's ByteUtils reads it
MAX_ZIGZAG_LONG_BYTES = 10  # an int64


def read_unsigned(data: bytes, at: int, end: int | None = None) -> tuple[int, int]:
    """(value, position after it) of the unsigned varint at `at`, reading no further than `end`."""
    if end is None:
        end = len(data)
    value = shift = 0
    for i in range(at, min(end, at + MAX_UNSIGNED_BYTES)):
        byte = data[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i + 1
        shift += 7
    raise IndexError(f"unterminated or overlong varint at byte {at}")


def encode_unsigned(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_zigzag(value: int) -> bytes:
    """The zig-zag varlong of `value` (an int64), as a record's fields are written."""
    return encode_unsigned((value << 1) ^ (value >> 63))


def read_zigzag(data: bytes, at: int) -> tuple[int, int]:
    """(value, position after it) of the zig-zag varlong at `at` (a record's fields)."""
    byte = data[at]
    if byte < 0x80:  # most deltas and lengths fit one byte
        return (byte >> 1) ^ -(byte & 1), at + 1
    result, shift = byte & 0x7F, 7
    for i in range(at + 1, at + MAX_ZIGZAG_LONG_BYTES):
        byte = data[i]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), i + 1
        shift += 7
    raise IndexError(f"varint longer than {MAX_ZIGZAG_LONG_BYTES} bytes at byte {at}")
