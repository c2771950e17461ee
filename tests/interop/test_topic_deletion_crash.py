"""kill -9 in the middle of a real broker's DeleteTopics: once its deletion marker is on disk, the
restart finishes the deletion, whatever the kill interrupted. (Every single step is covered
deterministically by tests/unit/test_topic_catalog_crash.py; this is the real process.)"""
from __future__ import annotations

import datetime
import uuid

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import encode_request, request_schema
from roster.protocol.errors import ErrorCode
from tests.interop.test_bad_input import _create
from tests.support.process import BrokerProcess
from tests.support.records import build_batch
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop]

PARTITIONS = 120


def _produce_everywhere(wire, topic: str, partitions: int) -> None:
    schema = request_schema(0, 9)
    topic_entry = element(schema, "topic_data")
    partition_entry = element(topic_entry, "partition_data")
    batch = build_batch([b"d" * 200] * 20)
    answer = wire.call(0, 9, transactional_id=None, acks=-1,
                       timeout=datetime.timedelta(seconds=10),
                       topic_data=(make(topic_entry, name=topic, partition_data=tuple(
                           make(partition_entry, index=i, records=batch)
                           for i in range(partitions))),))
    assert {p.error_code for p in answer.responses[0].partition_responses} == {ErrorCode.none}


def _send_delete(wire, name: str) -> None:
    """Send DeleteTopics without waiting for the answer (the broker is killed first)."""
    entry = element(request_schema(20, 6), "topics")
    body = make(request_schema(20, 6), topics=(make(entry, name=name, topic_id=uuid.UUID(int=0)),),
                timeout=datetime.timedelta(seconds=5))
    wire.send_raw(encode_request(20, 6, 99, "roster-tests", body))


def _topics(wire) -> set[str]:
    answer = wire.call(3, 12, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False)
    return {t.name for t in answer.topics if not t.is_internal}


def test_kill9_once_the_deletion_is_marked_and_the_restart_finishes_it(tmp_path):
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        with Wire(broker.bootstrap) as wire:
            assert _create(wire, "doomed", PARTITIONS).error_code == ErrorCode.none
            assert _create(wire, "kept", 1).error_code == ErrorCode.none
            _produce_everywhere(wire, "doomed", PARTITIONS)
            _produce_everywhere(wire, "kept", 1)
            _send_delete(wire, "doomed")
            # wait for the commit point (a busy wait on the directory, no sleep), then kill
            while not any(p.name.startswith("deleting-") for p in data.iterdir()):
                pass
            broker.kill9()
        left_behind = sorted(p.name for p in data.iterdir() if p.name.startswith("doomed-"))
        broker.start()
        with Wire(broker.bootstrap) as wire:
            restarted = _topics(wire)
    finally:
        broker.stop()
    assert restarted == {"kept"}
    assert not [p for p in data.iterdir() if p.name.startswith(("doomed-", "deleting-"))]
    if left_behind:  # the kill landed mid-deletion, as intended; the start said what it did
        assert "completing the deletion of topic doomed" in "\n".join(broker.output)
    print(f"{len(left_behind)} of {PARTITIONS} partition directories were left by the kill")
