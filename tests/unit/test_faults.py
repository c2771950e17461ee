"""The fault plane's pure parts and its facade (broker/faults): the table's matching and
counting, the error answers built from response schemas for every served API and version,
the header and body readers of the gate, and `broker.faults` from another thread."""
from __future__ import annotations

import asyncio
import random
import struct
import threading

import pytest

from fuzz.generate import Generator, World, advertised_versions
from roster.broker.faults.answers import build
from roster.broker.faults.gate import client_id_of, named_groups
from roster.broker.faults.rules import DELAY, FAIL, FaultTable
from roster.protocol.codec import decode_request, decode_response, encode_response, \
    response_schema
from roster.protocol.errors import ErrorCode

ERROR = ErrorCode.not_coordinator


def _rule(**fields):
    return {"kind": FAIL, "api_keys": frozenset({12}), "api_names": ("HEARTBEAT",),
            "error": ERROR, **fields}


def test_a_rule_with_a_count_is_used_up_and_the_table_disarms():
    table = FaultTable()
    table.add(_rule(remaining=2))
    assert table.keys == {12}
    assert table.match(12, "c").fired == 1
    assert table.match(12, "c").fired == 2
    assert table.match(12, "c") is None
    assert table.keys == frozenset() and table.rules == []


def test_rules_match_in_order_and_by_client_group_and_member():
    table = FaultTable()
    scoped = table.add(_rule(client_id="a", group_id="g", member_id="m"))
    anyone = table.add(_rule(kind=DELAY, remaining=None))
    assert table.scoped_keys == {12}
    assert table.match(12, "a", ("g",), "m") is scoped
    assert table.match(12, "b", ("g",), "m") is anyone     # another client
    assert table.match(12, "a", ("h",), "m") is anyone     # another group
    assert table.match(12, "a", ("g",), "n") is anyone     # another member
    assert table.match(13, "a", ("g",), "m") is None       # another API
    assert scoped.remaining is None and scoped.fired == 1


def test_a_deadline_ends_a_rule():
    table = FaultTable()
    rule = table.add(_rule(until=10.0))
    assert table.match(12, None, now=9.9) is rule
    assert rule.describe(9.0)["seconds_left"] == 1.0
    assert table.expire(10.0) == [rule] and table.keys == frozenset()


def test_remove_and_clear():
    table = FaultTable()
    first, second = table.add(_rule()), table.add(_rule())
    assert table.remove(first.id) is first and table.remove(first.id) is None
    assert table.clear() == [second] and table.keys == frozenset()


def test_the_client_id_is_read_from_the_header():
    header = struct.pack(">hhi", 12, 4, 7)
    assert client_id_of(header + struct.pack(">h", 3) + b"abc" + b"rest") == "abc"
    assert client_id_of(header + struct.pack(">h", -1)) is None
    assert client_id_of(b"short") is None


def test_the_groups_a_request_names():
    from types import SimpleNamespace as Body
    assert named_groups(Body(group_id="g")) == ("g",)
    assert named_groups(Body(key="g", key_type=0)) == ("g",)
    assert named_groups(Body(key="t", key_type=1)) == ()
    assert named_groups(Body(coordinator_keys=("a", "b"), key_type=0)) == ("a", "b")
    assert named_groups(Body(groups=("a", "b"))) == ("a", "b")
    assert named_groups(Body(groups=(Body(group_id="a"),))) == ("a",)


ADVERTISED = [(key, name, version) for key, name, version in advertised_versions()]


@pytest.mark.parametrize("key,name,version", ADVERTISED,
                         ids=[f"{n}-v{v}" for _, n, v in ADVERTISED])
def test_an_error_answer_is_built_for_every_served_version(key, name, version):
    """Built from the response schema, mirroring the request's topics, partitions and
    groups: it encodes, decodes, and carries the error everywhere an error code is."""
    generator = Generator(random.Random(key * 100 + version),
                          World(topics={"t": (__import__("uuid").uuid4(), 2)}))
    frame, _, schema = generator.request(key, version, correlation_id=5)
    if schema is None:
        pytest.skip("a version served without a schema: faults pass it through")
    request = decode_request(frame)
    body = build(response_schema(key, version), request.body, ERROR)
    answer = encode_response(key, version, 5, body)
    correlation_id, decoded = decode_response(key, version, answer[4:])
    assert correlation_id == 5
    codes = list(_error_codes(decoded))
    assert set(codes) <= {ERROR}, codes   # where the answer has error codes, the error
    # each requested entry the answer mirrors is answered
    from roster.broker.faults.answers import MIRRORS
    for answer_field in vars(type(decoded)).get("__dataclass_fields__", {}):
        got = getattr(decoded, answer_field)
        for request_field in (answer_field, *MIRRORS.get(answer_field, ())):
            wanted = getattr(request.body, request_field, None)
            if isinstance(wanted, tuple) and isinstance(got, tuple):
                assert len(got) == len(wanted), (answer_field, request_field)
                break


def _error_codes(entity):
    from dataclasses import fields, is_dataclass
    for f in fields(entity):
        value = getattr(entity, f.name)
        if f.metadata.get("kafka_type") == "error_code":
            yield value
        elif is_dataclass(value):
            yield from _error_codes(value)
        elif isinstance(value, tuple):
            for item in value:
                if is_dataclass(item):
                    yield from _error_codes(item)


def test_broker_faults_from_another_thread(tmp_path):
    """A test beside a broker serving on its own loop thread: every call is carried out on
    that loop, and waits for it."""
    from roster.broker.broker import Broker
    from roster.config import BrokerConfig
    started, stop = threading.Event(), None
    holder = {}

    def serve():
        async def main():
            nonlocal stop
            stop = asyncio.Event()
            broker = Broker(BrokerConfig.from_overrides(
                {"roster.test.mode": "true", "offsets.topic.num.partitions": "1"}), tmp_path)
            broker.start()
            holder["broker"], holder["loop"] = broker, asyncio.get_running_loop()
            started.set()
            await stop.wait()
            await broker.stop()
        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(30)
    broker, loop = holder["broker"], holder["loop"]
    try:
        faults = broker.faults
        armed = faults.fail_next("OffsetCommit", "NOT_COORDINATOR", count=2, group_id="g")
        assert armed["apis"] == ["OFFSET_COMMIT"] and armed["remaining"] == 2
        assert broker.armed_faults is not None
        faults.fail_appends(1, topic="t")
        assert broker.append_faults is faults
        assert [r["kind"] for r in faults.list()] == ["fail", "fail_appends"]
        with pytest.raises(ValueError, match="no classic group with members"):
            faults.force_rebalance("nobody")
        assert faults.remove(armed["id"]) is True and faults.remove(armed["id"]) is False
        assert faults.clear() == 1
        assert broker.armed_faults is None and broker.append_faults is None
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)


def test_a_rule_past_its_deadline_leaves_the_table_when_next_consulted():
    table = FaultTable()
    table.add(_rule(until=10.0))
    assert table.match(12, None, now=11.0) is None
    assert table.rules == [] and table.keys == frozenset()


def test_a_version_without_a_schema_is_served_and_the_event_says_so():
    """OffsetCommit v0 (no kio schema): fail_next lets it through to its handler, recorded."""
    from types import SimpleNamespace

    from roster.broker.faults.gate import PASS, FaultGate
    from roster.broker.handlers import build_registry
    table = FaultTable()
    table.add({**_rule(), "api_keys": frozenset({8}), "api_names": ("OFFSET_COMMIT",)})
    recorded = []
    gate = FaultGate(table, lambda rule, detail: recorded.append(detail), lambda: 0.0,
                     lambda: None)
    spec = build_registry().get(8)
    frame = struct.pack(">hhih", 8, 0, 1, 1) + b"c" + b"\0" * 16
    prefix = SimpleNamespace(api_key=8, api_version=0, correlation_id=1)
    assert gate.intercept(SimpleNamespace(peer="p"), spec, frame, prefix) is PASS
    assert recorded[0]["outcome"] == "version without a schema: served"
