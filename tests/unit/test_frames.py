"""FrameBuffer: frames out exactly as sent, however reads split them, while connections share
one scratch buffer for their reads."""
from __future__ import annotations

import struct

import pytest

from roster.broker import frames
from roster.broker.frames import FrameBuffer
from roster.protocol.errors import MalformedRequest


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def feed(buffer: FrameBuffer, data: bytes) -> list[bytes]:
    """One read delivering `data`, then serving as a connection does."""
    room = buffer.writable()
    assert len(room) >= len(data)
    room[:len(data)] = data
    buffer.received(len(data))
    out = []
    while (frame := buffer.next_frame()) is not None:
        out.append(frame)
    buffer.settle()
    return out


def test_partial_frames_survive_other_connections_reading_into_the_shared_buffer():
    first, second = FrameBuffer(1 << 20), FrameBuffer(1 << 20)
    a, b, c = b"a" * 100, b"b" * 5000, b"c" * 300
    stream = framed(a) + framed(b)
    assert feed(first, stream[:2000]) == [a]  # b is incomplete: kept aside
    assert feed(second, framed(c) * 3) == [c, c, c]  # reads over the shared buffer
    assert feed(first, stream[2000:]) == [b]
    assert first.unserved == second.unserved == 0


def test_an_idle_connection_gives_its_buffer_back():
    buffer = FrameBuffer(1 << 20)
    feed(buffer, framed(b"x" * 10)[:7])
    assert buffer._buffer is not frames._scratch
    feed(buffer, framed(b"x" * 10)[7:])
    assert buffer._buffer is frames._scratch


def test_a_frame_larger_than_the_shared_buffer_arrives_in_many_reads():
    payload = bytes(range(256)) * 4000  # ~1 MB
    stream = framed(payload) + framed(b"tail-end")
    buffer = FrameBuffer(4 << 20)
    got = []
    for at in range(0, len(stream), 70_000):
        got += feed(buffer, stream[at:at + 70_000])
    assert got == [payload, b"tail-end"]


def test_one_byte_at_a_time():
    stream = framed(b"hello, a") + framed(b"12345678") + framed(b"world, b")
    buffer = FrameBuffer(1024)
    got = []
    for i in range(len(stream)):
        got += feed(buffer, stream[i:i + 1])
    assert got == [b"hello, a", b"12345678", b"world, b"]


@pytest.mark.parametrize("size", [-1, 2048])
def test_bad_sizes_are_malformed(size):
    buffer = FrameBuffer(1024)
    room = buffer.writable()
    room[:4] = struct.pack(">i", size)
    buffer.received(4)
    with pytest.raises(MalformedRequest):
        buffer.next_frame()
