"""Offset metadata round trips byte for byte between clients, through roster's storage and its
OffsetFetch answer.

Issue 12: metadata committed by kafka-python read back through confluent-kafka with stray
trailing bytes. roster's bytes are not the cause: the OffsetFetch answer carries exactly the
committed bytes (checked on the wire below, at v9, the version librdkafka 2.x asks for). The
bytes come from the client: librdkafka copies metadata into the partition list it hands the
application without a terminating NUL (rd_kafka_topic_partition_update copies metadata_size
bytes), and confluent-kafka-python reads that as a NUL-terminated C string, so it runs on into
whatever follows on the heap. confluent-kafka-python commits metadata *with* a trailing NUL
(strlen + 1), which is why its own commits read back clean; that NUL is what other clients then
see. docs/client.md ("Offset metadata across clients") has the details.
"""
from __future__ import annotations

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_request, request_schema
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("offset-metadata")]

OFFSET_FETCH = 9
METADATA = ["hello", "a", "é-ünï", "x" * 300, '{"batch":7,"records":1234}']


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def offset_fetch_frame(bootstrap: str, group: str, topic: str, partitions, version: int = 9):
    """The raw OffsetFetch response frame, as a client asking at `version` receives it."""
    schema = request_schema(OFFSET_FETCH, version)
    groups = element(schema, "groups")
    topics = element(groups, "topics")
    body = make(schema, require_stable=False, groups=(make(
        groups, group_id=group, member_id=None, member_epoch=-1, topics=(make(
            topics, name=topic, topic_id=None, partition_indexes=tuple(partitions)),)),))
    with Wire(bootstrap) as wire:
        wire.send_raw(encode_request(OFFSET_FETCH, version, 1, "metadata-test", body))
        return wire.read_frame()


def partition_answer(p: int, offset: int, metadata: bytes) -> bytes:
    """One partition of an OffsetFetch v9 answer: index, offset, leader epoch -1, metadata as
    a compact string (length + 1), error code 0, no tagged fields."""
    return (p.to_bytes(4, "big") + offset.to_bytes(8, "big") + b"\xff\xff\xff\xff"
            + _varint(len(metadata) + 1) + metadata + b"\x00\x00" + b"\x00")


@pytest.fixture
def topic(broker_factory):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    from roster.admin.client import AdminClient
    from roster.admin.topics import create
    with AdminClient(broker.bootstrap) as admin:
        create(admin, "meta", len(METADATA), {})
    return broker


def test_kafka_python_metadata_comes_back_byte_for_byte_on_the_wire(topic):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    consumer = KafkaConsumer(bootstrap_servers=topic.bootstrap, group_id="kp",
                             enable_auto_commit=False)
    tps = [TopicPartition("meta", p) for p in range(len(METADATA))]
    consumer.assign(tps)
    consumer.commit({tp: OffsetAndMetadata(7 + tp.partition, m, -1)
                     for tp, m in zip(tps, METADATA)})
    read_back = [consumer.committed(tp, metadata=True).metadata for tp in tps]
    consumer.close()
    assert read_back == METADATA

    frame = offset_fetch_frame(topic.bootstrap, "kp", "meta", range(len(METADATA)))
    for p, m in enumerate(METADATA):
        assert partition_answer(p, 7 + p, m.encode()) in frame, (p, m)
    _, answer = decode_response(OFFSET_FETCH, 9, frame)
    assert [p.metadata for p in answer.groups[0].topics[0].partitions] == METADATA

    topic.restart()   # and the same bytes after a replay of __consumer_offsets
    assert offset_fetch_frame(topic.bootstrap, "kp", "meta", range(len(METADATA))) == frame

    from roster.spark.wire import run_sync

    async def committed(broker):
        return await broker.committed("kp", [("meta", p) for p in range(len(METADATA))])
    assert run_sync(committed, bootstrap=topic.bootstrap) == {
        ("meta", p): (7 + p, m) for p, m in enumerate(METADATA)}


def test_confluent_kafka_commits_its_metadata_with_a_trailing_nul_which_roster_keeps(topic):
    """The other half of the evidence: what confluent-kafka-python sends is metadata + NUL;
    roster stores and returns exactly that, and confluent reads its own back as sent."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": topic.bootstrap, "group.id": "ck"})
    consumer.commit(offsets=[TopicPartition("meta", 0, 7, metadata="hello")],
                    asynchronous=False)
    own = consumer.committed([TopicPartition("meta", 0)], timeout=10)[0]
    consumer.close()
    assert (own.offset, own.metadata) == (7, "hello")
    frame = offset_fetch_frame(topic.bootstrap, "ck", "meta", [0])
    assert partition_answer(0, 7, b"hello\x00") in frame
