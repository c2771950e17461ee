"""Throw random and mutated frames at a live broker; it must keep serving and never hit an
internal error (a traceback in its log means a handler trusted input it should not have)."""
from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.broker.handlers import MODULES
from tests.support.process import BrokerProcess
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("fuzz")]

API_KEYS = sorted(m.SPEC.key for m in MODULES)


@pytest.fixture(scope="module")
def fuzz_broker(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("fuzz"),
                           {"socket.request.max.bytes": "65536"}).start()
    with Wire(broker.bootstrap) as wire:  # a topic so that well-formed requests reach real logs
        from tests.interop.test_bad_input import _create
        _create(wire, "fuzzed", 2)
    yield broker
    broker.stop()


def sized(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


request_like = st.builds(
    lambda key, version, correlation, body: sized(struct.pack(">hhi", key, version, correlation)
                                                  + body),
    st.sampled_from(API_KEYS + [999, -1]), st.integers(-2, 20), st.integers(-2**31, 2**31 - 1),
    st.binary(max_size=300))

frames = st.one_of(st.binary(max_size=200), request_like,
                   st.builds(lambda body: sized(body), st.binary(max_size=400)))


def send_and_hang_up(bootstrap: str, data: bytes) -> None:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        try:
            while sock.recv(65536):
                pass
        except (ConnectionResetError, TimeoutError):
            pass


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.lists(frames, min_size=1, max_size=3).map(b"".join))
def test_random_frames_never_break_the_broker(fuzz_broker, data):
    send_and_hang_up(fuzz_broker.bootstrap, data)
    assert fuzz_broker.alive()


def test_broker_still_serves_after_fuzzing(fuzz_broker):
    # runs after the fuzz test above (same module, same worker, definition order)
    with Wire(fuzz_broker.bootstrap) as wire:
        answer = wire.call(3, 12, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False)
    assert "fuzzed" in {t.name for t in answer.topics}
    internal_errors = [line for line in fuzz_broker.output if "internal error" in line]
    assert not internal_errors, "\n".join(fuzz_broker.output)
