"""Readers for the fields of flexible versions, for the hand-written request codecs (Heartbeat,
ConsumerGroupHeartbeat). Each raises IndexError for bytes that run past the frame or a null
where a value is required, which those codecs turn into MalformedRequest."""
from __future__ import annotations

from roster.protocol.varint import read_unsigned


def compact_string(frame: bytes, at: int) -> tuple[str | None, int]:
    length_plus_one, at = read_unsigned(frame, at)
    if length_plus_one == 0:
        return None, at
    length = length_plus_one - 1
    return text(frame, at, length), at + length


def compact_count(frame: bytes, at: int) -> tuple[int, int]:
    """An array's count (-1 for null)."""
    count_plus_one, at = read_unsigned(frame, at)
    return count_plus_one - 1, at


def text(frame: bytes, at: int, length: int) -> str:
    if at + length > len(frame):
        raise IndexError("string runs past the end of the frame")
    return str(frame[at:at + length], "utf-8")


def skip_tagged_fields(frame: bytes, at: int) -> int:
    """Kafka skips tagged fields it does not know; these requests need none of theirs."""
    count, at = read_unsigned(frame, at)
    for _ in range(count):
        _, at = read_unsigned(frame, at)  # tag
        size, at = read_unsigned(frame, at)
        at += size
    if at > len(frame):
        raise IndexError("tagged field runs past the end of the frame")
    return at


def required(value: str | None) -> str:
    if value is None:
        raise IndexError("null where a string is required")
    return value
