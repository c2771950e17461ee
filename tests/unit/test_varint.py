"""roster.protocol.varint against kafka-python's independent varint codec."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import encode_varint

from roster.protocol.varint import encode_unsigned, encode_zigzag, read_unsigned, read_zigzag


@given(st.integers(0, 2**32 - 1))
def test_unsigned_round_trip(value):
    encoded = encode_unsigned(value)
    assert read_unsigned(b"x" + encoded + b"y", 1) == (value, 1 + len(encoded))


@given(st.integers(-2**63, 2**63 - 1))
def test_zigzag_reads_what_kafka_python_writes(value):
    encoded = bytearray()
    encode_varint(value, encoded.append)
    assert read_zigzag(bytes(encoded) + b"\0", 0) == (value, len(encoded))


@pytest.mark.parametrize("data", [b"\x80\x80", b"\xff" * 5 + b"\x01"])
def test_unsigned_refuses_truncated_or_overlong(data):
    with pytest.raises(IndexError):
        read_unsigned(data, 0)


def test_unsigned_stops_at_the_given_end():
    with pytest.raises(IndexError):
        read_unsigned(b"\x80\x01", 0, end=1)


def test_zigzag_refuses_overlong():
    with pytest.raises(IndexError):
        read_zigzag(b"\xff" * 11, 0)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_encode_zigzag_writes_what_kafka_python_writes_and_reads_back(value):
    encoded = encode_zigzag(value)
    assert encoded == bytes(_kafka_python_zigzag(value))
    assert read_zigzag(encoded, 0) == (value, len(encoded))


def _kafka_python_zigzag(value: int) -> bytearray:
    out = bytearray()
    encode_varint(value, out.append)
    return out
