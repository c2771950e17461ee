"""ShareFetch (78) and ShareAcknowledge (79) requests over a raw socket (tests/support/wire.py),
and the share-group steps around them, for the share fetch path's tests: the same calls go to
roster and to the Apache Kafka 4.4 peer."""
from __future__ import annotations

import datetime
import time
import uuid

from confluent_kafka import Producer

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from tests.support.transactions import wait_for
from tests.support.wire import Wire

MEMBER = "m" * 22


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def topic_id(wire: Wire, name: str, timeout_s: float = 10.0) -> uuid.UUID:
    """The topic's id, once Metadata lists it: Kafka's broker lists a topic a moment after
    CreateTopics answered (its metadata comes from the controller)."""
    def listed() -> uuid.UUID | None:
        answer = wire.call(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False)
        return next((t.topic_id for t in answer.topics if t.name == name), None)
    return wait_for(listed, f"{name} listed in Metadata", timeout_s)


def _topics(api_key: int, version: int, parts) -> tuple:
    """parts: [(topic id, [(partition, [(first, last, [types])])])]"""
    schema = request_schema(api_key, version)
    topic_entry = element(schema, "topics")
    partition_entry = element(topic_entry, "partitions")
    batch_entry = element(partition_entry, "acknowledgement_batches")
    return tuple(make(topic_entry, topic_id=tid, partitions=tuple(
        make(partition_entry, partition_index=index, acknowledgement_batches=tuple(
            make(batch_entry, first_offset=f, last_offset=last, acknowledge_types=tuple(types))
            for f, last, types in acks))
        for index, acks in partitions)) for tid, partitions in parts)


def share_fetch(wire: Wire, *, group: str, member: str = MEMBER, epoch: int = 0, parts=(),
                forgotten=(), version: int = 2, max_wait_ms: int = 200, min_bytes: int = 1,
                max_bytes: int = 1 << 20, max_records: int = 500, batch_size: int = 500,
                mode: int = 0, renew: bool = False):
    schema = request_schema(ApiKey.SHARE_FETCH, version)
    forgotten_entry = element(schema, "forgotten_topics_data")
    return wire.call(ApiKey.SHARE_FETCH, version, group_id=group, member_id=member,
                     share_session_epoch=epoch, max_wait=ms(max_wait_ms), min_bytes=min_bytes,
                     max_bytes=max_bytes, max_records=max_records, batch_size=batch_size,
                     share_acquire_mode=mode, is_renew_ack=renew,
                     topics=_topics(ApiKey.SHARE_FETCH, version, parts),
                     forgotten_topics_data=tuple(
                         make(forgotten_entry, topic_id=t, partitions=tuple(ps))
                         for t, ps in forgotten))


def share_acknowledge(wire: Wire, *, group: str, member: str = MEMBER, epoch: int, parts=(),
                      version: int = 2, renew: bool = False):
    return wire.call(ApiKey.SHARE_ACKNOWLEDGE, version, group_id=group, member_id=member,
                     share_session_epoch=epoch, is_renew_ack=renew,
                     topics=_topics(ApiKey.SHARE_ACKNOWLEDGE, version, parts))


def produce(bootstrap: str, topic: str, values, partition: int = 0) -> None:
    """One batch per value, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value=value, partition=partition)
        producer.flush(10)


def set_group_configs(bootstrap: str, group: str, configs: dict) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def join_share_group(wire: Wire, group: str, topics, partitions: int,
                     timeout_s: float = 30.0) -> tuple[str, int]:
    """ShareGroupHeartbeat until the member holds `partitions` partitions (their share state
    is initialised by then): (member id, member epoch)."""
    member = uuid.uuid4().hex[:22]
    epoch = 0
    subscribed = tuple(topics)
    deadline = time.monotonic() + timeout_s
    while True:
        answer = wire.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                           member_epoch=epoch, rack_id=None, subscribed_topic_names=subscribed)
        assert answer.error_code == 0, answer
        epoch, subscribed = answer.member_epoch, None
        held = sum(len(t.partitions) for t in
                   (answer.assignment.topic_partitions if answer.assignment else ()))
        if held >= partitions:
            return member, epoch
        assert time.monotonic() < deadline, answer
        time.sleep(0.5)


def partitions_of(answer) -> dict:
    """{(topic id, partition): partition data} of a ShareFetch/ShareAcknowledge answer."""
    return {(t.topic_id, p.partition_index): p for t in answer.responses for p in t.partitions}


def acquired(answer) -> dict:
    """{(topic id, partition): [(first, last, delivery count)]}, partitions with records only."""
    return {key: [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
            for key, p in partitions_of(answer).items() if p.acquired_records}


def values(answer) -> list[bytes]:
    """The values of the acquired records an answer carries, in offset order."""
    from roster.client.records import decode_fetched
    found = []
    for (_, index), part in partitions_of(answer).items():
        ranges = [(a.first_offset, a.last_offset) for a in part.acquired_records]
        for record in decode_fetched("t", index, part.records or b"")[0]:
            if any(f <= record.offset <= last for f, last in ranges):
                found.append((record.offset, record.value))
    return [v for _, v in sorted(found)]
