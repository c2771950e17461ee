"""tests/support/client_tracking.py in a pytest run of its own: a confluent-kafka consumer a test
leaves open is closed when the test ends, and librdkafka's `Connection refused` lines land in
the captured log of the test whose client printed them (shown because that test fails), not on
the run's stderr."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]

INNER = '''
import socket

import pytest
from confluent_kafka import Consumer

LEFT = []


def nobody_listening() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def consumer():
    return Consumer({"bootstrap.servers": nobody_listening(), "group.id": "tracked",
                     "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50})


def test_leaves_a_consumer_open():
    left = consumer()
    left.subscribe(["t"])
    left.poll(0.3)
    LEFT.append(left)


def test_that_consumer_was_closed_when_the_test_ended():
    with pytest.raises(RuntimeError, match="closed"):
        LEFT[0].poll(0)


def test_fails_after_its_consumer_met_a_closed_port():
    failing = consumer()
    failing.subscribe(["t"])
    for _ in range(10):
        failing.poll(0.1)
    failing.close()
    assert False, "fails on purpose"
'''


def test_clients_are_closed_and_their_lines_captured(pytester, monkeypatch):
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    result = pytester.runpytest_subprocess("-p", "tests.support.client_tracking",
                                           "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
                                           timeout=120)
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    section = out[out.index("Captured log call"):]
    assert "Connect to ipv4#127.0.0.1:" in section and "Connection refused" in section
    assert "closing a Consumer the test left open" not in section   # the failing test closed its own
    assert "Connection refused" not in out[:out.index("FAILURES")]
    assert "Connection refused" not in result.stderr.str()
