"""What a client can make the broker hold is bounded: a client that never reads its answers, a
frame size that promises bytes that never come, many large frames at once, idle connections
and too many connections from one address. Memory is the broker's RSS from /proc; while one
client misbehaves, the others are still answered."""
from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from roster.protocol.codec import decode_response
from roster.protocol.errors import ErrorCode
from tests.interop.test_pipelining import (
    API_VERSIONS,
    FETCH,
    PRODUCE,
    api_versions,
    correlation_id,
    create_topic,
    fetch,
    produce,
)
from tests.support.records import build_batch
from tests.support.wire import Wire

pytestmark = pytest.mark.interop

MiB = 1 << 20
ANSWER_WITHIN_S = 1.0


def rss(broker) -> int:
    for line in Path(f"/proc/{broker.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def answered_quickly(broker) -> float:
    """A fresh client's ApiVersions round trip, in seconds (it must be answered)."""
    started = time.monotonic()
    with Wire(broker.bootstrap) as wire:
        wire.send_raw(api_versions(777))
        assert correlation_id(wire.read_frame()) == 777
    return time.monotonic() - started


def assert_served_and_bounded(broker, baseline: int, bound: int, rounds: int = 20) -> int:
    """Other clients are answered within a second, again and again, while the broker's RSS
    stays under baseline + bound. Returns the largest growth seen."""
    worst = 0
    for _ in range(rounds):
        assert answered_quickly(broker) < ANSWER_WITHIN_S
        worst = max(worst, rss(broker) - baseline)
        assert worst < bound, f"RSS grew by {worst / MiB:.1f} MiB"
    return worst


def test_a_client_that_never_reads_its_fetch_answers_is_not_buffered(broker_factory):
    broker = broker_factory()
    big = build_batch([bytes([i]) * 100_000 for i in range(9)])  # ~900 kB: ~1 MiB per answer
    with Wire(broker.bootstrap) as setup:
        create_topic(setup, "large")
        setup.send_raw(produce(1, "large", big) + produce(2, "large", big))
        assert [correlation_id(setup.read_frame()) for _ in range(2)] == [1, 2]
        setup.send_raw(fetch(3, "large", wait_s=0))  # warm the fetch path before the baseline
        assert len(setup.read_frame()) > 800_000
    baseline = rss(broker)

    count = 200  # unbounded, their answers would take ~180 MiB
    with Wire(broker.bootstrap) as sluggard:
        sluggard.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sluggard.send_raw(b"".join(fetch(n, "large", wait_s=0) for n in range(1, count + 1)))
        worst = assert_served_and_bounded(broker, baseline, 64 * MiB)
        # Once it reads, it gets every answer, in order.
        for n in range(1, count + 1):
            answer = sluggard.read_frame()
            assert correlation_id(answer) == n
        _, body = decode_response(FETCH, 12, answer)
        assert body.responses[0].partitions[0].high_watermark == 18
    print(f"RSS growth while not reading: {worst / MiB:.1f} MiB")


def test_frames_that_declare_100_mib_and_stall_cost_little_and_are_closed_when_idle(
        broker_factory):
    broker = broker_factory({"connections.max.idle.ms": "2000"})
    answered_quickly(broker)
    baseline = rss(broker)
    stalled = []
    try:
        for n in range(50):
            wire = Wire(broker.bootstrap)
            stalled.append(wire)
            # 100 MiB promised (the default socket.request.max.bytes), 12 bytes sent
            wire.send_raw(struct.pack(">ihhi", 100 * MiB, API_VERSIONS, 3, n) + b"\0\0\0\0")
            if n % 10 == 9:  # fail before taking the machine's memory, were it unbounded
                assert_served_and_bounded(broker, baseline, 16 * MiB, rounds=1)
        last_sent = time.monotonic()
        assert_served_and_bounded(broker, baseline, 16 * MiB, rounds=5)
        for wire in stalled:
            wire.sock.settimeout(10)
            assert wire.closed_by_peer()  # EOF (or a reset): closed at the idle deadline
        assert time.monotonic() - last_sent >= 2.0  # and not before it
        broker.wait_for_line("idle for connections.max.idle.ms")
        answered_quickly(broker)
    finally:
        for wire in stalled:
            wire.close()


def test_queued_request_bytes_bound_many_large_partial_frames(broker_factory):
    broker = broker_factory({"queued.max.request.bytes": str(8 * MiB),
                             "socket.request.max.bytes": str(4 * MiB),
                             "message.max.bytes": str(4 * MiB)})
    with Wire(broker.bootstrap) as setup:
        create_topic(setup, "heavy")
    batch = build_batch([b"h" * (3 * MiB)])
    frames = [produce(100 + n, "heavy", batch) for n in range(20)]
    first_part = 2 * MiB + 512 * 1024  # of ~3 MiB each: unbounded, 20 of them hold 50 MiB
    answered_quickly(broker)
    baseline = rss(broker)

    go = threading.Event()
    answers: dict[int, bytes] = {}
    failures: list[BaseException] = []

    def producer(n: int) -> None:
        try:
            with Wire(broker.bootstrap, timeout_s=60) as wire:
                wire.send_raw(frames[n][:first_part])  # blocks while the broker does not read
                go.wait(60)
                wire.send_raw(frames[n][first_part:])
                answers[n] = wire.read_frame()
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=producer, args=(n,), daemon=True) for n in range(20)]
    for thread in threads:
        thread.start()
    try:
        # 8 MiB counted, one frame past it, buffers at most twice what arrived: under 24 MiB
        worst = assert_served_and_bounded(broker, baseline, 24 * MiB, rounds=30)
    finally:
        go.set()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    assert len(answers) == 20
    for n, answer in answers.items():
        assert correlation_id(answer) == 100 + n
        _, body = decode_response(PRODUCE, 9, answer)
        assert body.responses[0].partition_responses[0].error_code == ErrorCode.none
    answered_quickly(broker)
    print(f"RSS growth with 20 large frames half sent: {worst / MiB:.1f} MiB")


def test_connections_beyond_the_per_address_cap_are_closed_at_accept(broker_factory):
    broker = broker_factory({"max.connections.per.ip": "1000",
                             "max.connections.per.ip.overrides": "127.0.0.1:3"})
    kept = [Wire(broker.bootstrap) for _ in range(3)]
    try:
        for n, wire in enumerate(kept):
            wire.send_raw(api_versions(n))
            assert correlation_id(wire.read_frame()) == n
        for _ in range(5):
            with Wire(broker.bootstrap) as refused:
                refused.sock.settimeout(5)
                assert refused.closed_by_peer()
        for n, wire in enumerate(kept):  # the others keep working
            wire.send_raw(api_versions(10 + n))
            assert correlation_id(wire.read_frame()) == 10 + n
        broker.wait_for_line("Rejected connection from /127.0.0.1")
        refusals = [line for line in broker.output if "Rejected connection from /127.0.0.1" in line]
        assert len(refusals) == 1, refusals  # rate-limited: one line for the five
        assert "maximum of 3 connections" in refusals[0]

        kept.pop().close()  # a place frees up once the broker has seen this one go
        for _ in range(100):
            with Wire(broker.bootstrap) as again:
                try:
                    again.send_raw(api_versions(99))
                    if correlation_id(again.read_frame()) == 99:
                        break
                except ConnectionError:
                    continue
        else:
            pytest.fail("no connection accepted after one of three closed")
    finally:
        for wire in kept:
            wire.close()
