"""FrameBuffer: frames out exactly as sent, however reads split them, while connections share
one scratch buffer for their reads."""
from __future__ import annotations

import struct

import pytest

from roster.broker.network import frames
from roster.broker.network.frames import FrameBuffer
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


def deliver(buffer: FrameBuffer, data: bytes, most: int = 1 << 30) -> list[bytes]:
    """`data` in as many reads as the buffer's room (and `most` bytes a read) take."""
    out = []
    while data:
        take = min(len(buffer.writable()), most, len(data))
        out += feed(buffer, data[:take])
        data = data[take:]
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


@pytest.fixture
def no_spares(monkeypatch):
    """Buffers given back by earlier tests would be reused; start from none."""
    monkeypatch.setattr(frames, "_spares", [])


def test_a_declared_size_reserves_nothing_until_the_bytes_arrive(no_spares):
    buffer = FrameBuffer(200 << 20)
    assert feed(buffer, struct.pack(">i", 100 << 20) + b"x" * 60) == []  # 64 bytes of 100 MiB
    assert buffer.committed == 4 + (100 << 20)  # what queued.max.request.bytes counts
    assert 64 < buffer.capacity <= 64 + frames.MIN_READ  # what memory it really takes


def test_a_large_frame_grows_its_buffer_with_what_arrived(no_spares):
    payload = bytes(range(256)) * (8 << 12)  # 8 MiB
    stream = framed(payload) + framed(b"after it")
    buffer = FrameBuffer(16 << 20)
    got, capacities, arrived = [], [], 0
    while arrived < len(stream):
        take = min(len(buffer.writable()), 64 * 1024, len(stream) - arrived)
        got += feed(buffer, stream[arrived:arrived + take])
        arrived += take
        if buffer.capacity:
            capacities.append(buffer.capacity)
            assert buffer.capacity <= 2 * arrived + 2 * frames.MIN_READ
    assert got == [payload, b"after it"]
    assert len(set(capacities)) <= 12  # doubling: a handful of copies, not one per read


def test_a_stalled_partial_frame_keeps_only_its_bytes(no_spares):
    """Fifty connections that each announce 100 MiB and send a few bytes hold under a MiB."""
    buffers = [FrameBuffer(200 << 20) for _ in range(50)]
    for buffer in buffers:
        assert feed(buffer, struct.pack(">i", 100 << 20) + b"y" * 8) == []
    assert sum(b.capacity for b in buffers) < 50 * (frames.MIN_READ + 64)


def test_a_spare_is_reused_for_the_next_partial_frame(no_spares):
    buffer = FrameBuffer(1 << 20)
    feed(buffer, framed(b"z" * 100_000)[:50_000])
    assert deliver(buffer, framed(b"z" * 100_000)[50_000:]) == [b"z" * 100_000]
    assert buffer.capacity == 0 and frames._spares
    spares = [id(spare) for spare in frames._spares]
    feed(buffer, framed(b"w" * 100_000)[:50_000])
    assert id(buffer._buffer) in spares  # no new allocation


def test_a_few_bytes_do_not_take_a_large_spare(no_spares):
    frames._spares.append(bytearray(4 << 20))
    buffer = FrameBuffer(200 << 20)
    feed(buffer, struct.pack(">i", 100 << 20) + b"x" * 12)
    assert buffer.capacity < 64 * 1024 and len(frames._spares) == 1


def test_discard_gives_the_buffer_back(no_spares):
    buffer = FrameBuffer(1 << 20)
    feed(buffer, framed(b"q" * 1000)[:10])
    held = buffer._buffer
    buffer.discard()
    assert buffer.capacity == 0 and buffer.committed == 0 and frames._spares == [held]
