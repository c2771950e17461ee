"""roster.client.ShareConsumer (KIP-932) against a real broker: Apache Kafka 4.4, and roster
once it serves share groups (the roster parameter is skipped while roster's ApiVersions has no
ShareGroupHeartbeat, checked on the broker, not assumed). The same assertions run on both.

Each scenario has its own topic and group; the group reads from the earliest offset
(share.auto.offset.reset=earliest, set with IncrementalAlterConfigs before anyone joins: the
default, latest, would skip what was produced before the member's partitions were
initialised). A share member is assigned its partitions on a heartbeat after it subscribes
(Kafka's group.share.heartbeat.interval.ms, 5 s by default), so scenarios wait for that.
"""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from roster.admin.client import AdminClient, AdminError
from roster.admin.topics import create
from roster.client.producer import Producer
from roster.client.records import OutgoingRecord
from roster.client.share_consumer import (
    AcknowledgeType,
    ImplicitAcknowledgement,
    ShareConsumer,
    ShareConsumerConfigError,
    UnacknowledgedRecords,
)
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401
from tests.support.kafka_peer import unique_name

GROUP_RESOURCE, SET = 32, 0
SCENARIO_S = 150


@pytest.fixture
def broker(target):  # noqa: F811 - target is the fixture imported above
    """The broker of the scenario; roster's only once it serves share groups."""
    with AdminClient(target.bootstrap) as admin:
        try:
            admin.version(ApiKey.SHARE_GROUP_HEARTBEAT)
        except AdminError:
            pytest.skip("this broker's ApiVersions has no ShareGroupHeartbeat (76): it does "
                        "not serve share groups yet")
    return target


def group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs on the GROUP resource (kafka-configs --entity-type groups)."""
    with AdminClient(bootstrap) as admin:
        resource = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources")
        config = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
        answer = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=(
            resource(resource_type=GROUP_RESOURCE, resource_name=group, configs=tuple(
                config(name=k, config_operation=SET, value=v) for k, v in configs.items())),))
    result = answer.responses[0]
    assert result.error_code is ErrorCode.none, (result.error_code, result.error_message)


def scenario(bootstrap: str, partitions: int = 1, **configs):
    """A fresh topic and a share group reading it from the earliest offset."""
    topic, group = unique_name("share-topic"), unique_name("share-group")
    with AdminClient(bootstrap) as admin:
        create(admin, topic, partitions, {})
    group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest", **configs})
    return topic, group


async def produce(bootstrap: str, topic: str, values, partitions: int = 1) -> None:
    """The values spread over the partitions in turn, one batch per partition (a share
    member acquires whole batches: one poll gets all of a partition's)."""
    producer = Producer(bootstrap)
    try:
        for partition in range(partitions):
            batch = [OutgoingRecord(v) for v in values[partition::partitions]]
            await producer.send_many(topic, batch, partition)
    finally:
        await producer.close()


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, SCENARIO_S))


async def joined(bootstrap: str, group: str, topic: str, **settings) -> ShareConsumer:
    consumer = ShareConsumer(bootstrap, group, **settings)
    await consumer.subscribe([topic])
    await consumer.member.wait_assigned(60)
    return consumer


async def assigned_members(bootstrap: str, group: str, count: int) -> None:
    """Until ShareGroupDescribe shows `count` members, each holding the group's current
    assignment (its member epoch is the assignment epoch)."""
    while True:
        with AdminClient(bootstrap) as admin:
            [described] = admin.call(ApiKey.SHARE_GROUP_DESCRIBE, group_ids=(group,),
                                     include_authorized_operations=False).groups
        members = described.members
        if len(members) == count and all(
                m.assignment.topic_partitions and m.member_epoch == described.assignment_epoch
                for m in members):
            return
        await asyncio.sleep(0.2)


class Reader:
    """A member polling in the background, accepting what it gets (explicit mode)."""

    def __init__(self, consumer: ShareConsumer) -> None:
        self.consumer, self.records, self.arrived = consumer, [], asyncio.Event()
        self._stop = False
        self.task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        while not self._stop:
            for record in await self.consumer.poll(0.5):
                self.records.append(record)
                self.consumer.acknowledge(record)
                self.arrived.set()

    async def stop(self) -> None:
        self._stop = True
        await self.task
        await self.consumer.close()


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_several_consumers_get_every_record_once_none_held_by_two(broker):
    topic, group = scenario(broker.bootstrap, partitions=3)
    values = [f"record-{i}".encode() for i in range(150)]

    async def go():
        await produce(broker.bootstrap, topic, values, partitions=3)
        consumers = [ShareConsumer(broker.bootstrap, group,
                                   share_acknowledgement_mode="explicit", max_poll_records=20)
                     for _ in range(3)]
        for consumer in consumers:
            await consumer.subscribe([topic])
        got: dict[int, list] = {i: [] for i in range(3)}
        held: dict[tuple, int] = {}       # (partition, offset) -> the consumer holding it
        overlaps = []

        async def read(i: int, consumer: ShareConsumer) -> None:
            while sum(len(r) for r in got.values()) < len(values):
                for record in await consumer.poll(0.5):
                    where = (record.partition, record.offset)
                    if where in held:
                        overlaps.append((where, held[where], i))
                    held[where] = i
                    got[i].append(record)
                await asyncio.sleep(0)          # the others poll while this one holds them
                for record in got[i]:
                    if held.get((record.partition, record.offset)) == i:
                        del held[(record.partition, record.offset)]
                        consumer.acknowledge(record)

        await asyncio.gather(*(read(i, c) for i, c in enumerate(consumers)))
        for consumer in consumers:
            assert all(e is None for e in (await consumer.commit_sync()).values())
            await consumer.close()
        return got, overlaps

    got, overlaps = run(go())
    everything = [r for records in got.values() for r in records]
    assert overlaps == []
    assert sorted(r.value for r in everything) == sorted(values)        # each exactly once
    assert len({(r.partition, r.offset) for r in everything}) == len(values)
    assert {r.delivery_count for r in everything} == {1}
    assert {r.topic for r in everything} == {topic}


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_a_released_record_comes_back_with_delivery_count_2(broker):
    topic, group = scenario(broker.bootstrap)

    async def go():
        await produce(broker.bootstrap, topic, [b"a", b"again", b"c"])
        consumer = await joined(broker.bootstrap, group, topic,
                                share_acknowledgement_mode="explicit")
        first = []
        while not first:
            first = await consumer.poll(1.0)
        with pytest.raises(UnacknowledgedRecords, match="All records must be acknowledged in "
                                                        "explicit acknowledgement mode."):
            await consumer.poll(0)
        for record in first:
            consumer.acknowledge(record, AcknowledgeType.RELEASE if record.value == b"again"
                                 else AcknowledgeType.ACCEPT)
        back = []
        while not back:
            back = await consumer.poll(1.0)
        for record in back:
            consumer.acknowledge(record)
        outcome = await consumer.commit_sync()
        await consumer.close()
        return first, back, outcome

    first, back, outcome = run(go())
    assert [r.value for r in first] == [b"a", b"again", b"c"]
    assert {r.delivery_count for r in first} == {1}
    [again] = back
    released = next(r for r in first if r.value == b"again")
    assert (again.value, again.offset, again.delivery_count) == \
        (b"again", released.offset, 2)
    assert outcome == {(topic, 0): None}


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_a_rejected_record_never_comes_back(broker):
    topic, group = scenario(broker.bootstrap)

    async def go():
        await produce(broker.bootstrap, topic, [b"fine", b"poison", b"fine too"])
        consumer = await joined(broker.bootstrap, group, topic,
                                share_acknowledgement_mode="explicit")
        told = []
        consumer.set_acknowledgement_commit_callback(lambda offsets, exc: told.append(
            (offsets, exc)))
        seen = []
        while len(seen) < 3:
            batch = await consumer.poll(1.0)
            for record in batch:
                consumer.acknowledge(record, AcknowledgeType.REJECT
                                     if record.value == b"poison" else AcknowledgeType.ACCEPT)
            seen += batch
        # the marker is produced after the rejection was sent (with the next poll): once it
        # has arrived, a released record would have come first (offsets are read in order)
        await consumer.poll(0)
        await produce(broker.bootstrap, topic, [b"marker"])
        later = []
        while not any(r.value == b"marker" for r in later):
            batch = await consumer.poll(1.0)
            for record in batch:
                consumer.acknowledge(record)
            later += batch
        await consumer.commit_sync()
        await consumer.close()
        return seen, later, told

    seen, later, told = run(go())
    assert sorted(r.value for r in seen) == [b"fine", b"fine too", b"poison"]
    assert [r.value for r in later] == [b"marker"]
    assert all(exc is None for _, exc in told)
    poison = next(r.offset for r in seen if r.value == b"poison")
    assert any(poison in offsets[(topic, 0)] for offsets, _ in told)


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_renew_keeps_the_lock_past_the_lock_duration_and_without_it_the_record_moves(broker):
    # the lowest lock duration Kafka 4.4's default broker bounds accept for a group
    # (group.share.min.record.lock.duration.ms: 15000)
    lock_ms = 15_000
    renewed_topic, renewed_group = scenario(broker.bootstrap,
                                            **{"share.record.lock.duration.ms": str(lock_ms)})
    held_topic, held_group = scenario(broker.bootstrap,
                                      **{"share.record.lock.duration.ms": str(lock_ms)})

    async def first_record(consumer):
        records = []
        while not records:
            records = await consumer.poll(1.0)
        return records

    async def renewing():
        await produce(broker.bootstrap, renewed_topic, [b"slow work"])
        holder = await joined(broker.bootstrap, renewed_group, renewed_topic,
                              share_acknowledgement_mode="explicit")
        [record] = await first_record(holder)
        acquired = time.monotonic()
        assert holder.acquisition_lock_timeout_ms == lock_ms
        other = Reader(await joined(broker.bootstrap, renewed_group, renewed_topic,
                                    share_acknowledgement_mode="explicit"))
        # hold it for one and a half lock durations (and a whole one after the other member
        # is reading), renewing every third of one
        until = max(acquired + 1.5 * lock_ms / 1000, time.monotonic() + lock_ms / 1000)
        renewals = []
        while time.monotonic() < until:
            await asyncio.sleep(lock_ms / 3000)
            holder.acknowledge(record, AcknowledgeType.RENEW)
            renewals += await holder.poll(1.0)      # sends the renewal; the record again
            assert renewals[-1] == record
        holder.acknowledge(record, AcknowledgeType.ACCEPT)
        outcome = await holder.commit_sync()
        await other.stop()
        await holder.close()
        return record, renewals, outcome, other.records

    async def holding():
        await produce(broker.bootstrap, held_topic, [b"forgotten"])
        holder = await joined(broker.bootstrap, held_group, held_topic,
                              share_acknowledgement_mode="explicit")
        [record] = await first_record(holder)
        other = await joined(broker.bootstrap, held_group, held_topic,
                             share_acknowledgement_mode="explicit")
        moved = []
        while not moved:                  # the lock expires: the record goes to the other
            moved = await other.poll(1.0)
        # acknowledged too late: the lock has gone, and the other member holds it now
        holder.acknowledge(record, AcknowledgeType.ACCEPT)
        outcome = await holder.commit_sync()
        for again in moved:
            other.acknowledge(again)
        await other.close()
        await holder.close()
        return record, outcome, moved

    async def both():
        return await asyncio.gather(renewing(), holding())

    (record, renewals, renewed_outcome, stolen), (held, held_outcome, moved) = run(both())
    assert len(renewals) >= 3 and {r.delivery_count for r in renewals} == {1}
    assert renewed_outcome == {(renewed_topic, 0): None}
    assert stolen == []                      # never delivered to the other member
    [moved_record] = moved
    assert (moved_record.offset, moved_record.delivery_count) == (held.offset, 2)
    error = held_outcome[(held_topic, 0)]
    assert error is not None and error.error is ErrorCode.invalid_record_state


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_close_releases_held_records_at_once(broker):
    lock_ms = 60_000      # the highest Kafka's default bounds accept: expiry cannot explain it
    topic, group = scenario(broker.bootstrap, **{"share.record.lock.duration.ms": str(lock_ms)})

    async def go():
        await produce(broker.bootstrap, topic, [b"one", b"two", b"three"])
        holder = await joined(broker.bootstrap, group, topic,
                              share_acknowledgement_mode="explicit")
        held = []
        while not held:
            held = await holder.poll(1.0)     # held, never acknowledged
        other = Reader(await joined(broker.bootstrap, group, topic,
                                    share_acknowledgement_mode="explicit"))
        closed = time.monotonic()
        await holder.close()
        while len(other.records) < 3:
            other.arrived.clear()
            await asyncio.wait_for(other.arrived.wait(), lock_ms / 1000)
        took = time.monotonic() - closed
        await other.stop()
        return held, other.records, took

    held, taken, took = run(go())
    assert sorted(r.value for r in held) == [b"one", b"three", b"two"]
    assert sorted((r.offset, r.value) for r in taken) == sorted((r.offset, r.value)
                                                                  for r in held)
    assert {r.delivery_count for r in taken} == {2}
    assert took < lock_ms / 1000 / 2


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_unsubscribe_gives_held_records_back_and_subscribe_joins_again(broker):
    lock_ms = 60_000
    topic, group = scenario(broker.bootstrap, **{"share.record.lock.duration.ms": str(lock_ms)})

    async def go():
        await produce(broker.bootstrap, topic, [b"held"])
        consumer = await joined(broker.bootstrap, group, topic,
                                share_acknowledgement_mode="explicit")
        held = []
        while not held:
            held = await consumer.poll(1.0)
        other = Reader(await joined(broker.bootstrap, group, topic,
                                    share_acknowledgement_mode="explicit"))
        await consumer.unsubscribe()
        assert consumer.assignment == ()
        with pytest.raises(RuntimeError, match="Consumer is not subscribed to any topics."):
            await consumer.poll(0)
        await asyncio.wait_for(other.arrived.wait(), lock_ms / 2000)
        await other.stop()
        await consumer.subscribe([topic])          # the same member, joining again
        await consumer.member.wait_assigned(60)
        await produce(broker.bootstrap, topic, [b"after"])
        after = []
        while not after:
            after = await consumer.poll(1.0)
        for record in after:
            consumer.acknowledge(record)
        await consumer.close()
        return held, other.records, after

    held, taken, after = run(go())
    assert [(r.value, r.delivery_count) for r in held] == [(b"held", 1)]
    assert [(r.value, r.delivery_count) for r in taken] == [(b"held", 2)]
    assert [(r.value, r.delivery_count) for r in after] == [(b"after", 1)]


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_a_poll_returns_at_most_max_poll_records(broker):
    topic, group = scenario(broker.bootstrap)
    values = [f"capped-{i}".encode() for i in range(50)]

    async def go():
        await produce(broker.bootstrap, topic, values)      # one batch of 50
        consumer = await joined(broker.bootstrap, group, topic,
                                share_acknowledgement_mode="explicit", max_poll_records=10)
        polls = []
        while sum(len(p) for p in polls) < len(values):
            batch = await consumer.poll(1.0)
            for record in batch:
                consumer.acknowledge(record)
            if batch:
                polls.append(batch)
        outcome = await consumer.commit_sync()
        await consumer.close()
        return polls, outcome

    polls, outcome = run(go())
    assert max(len(p) for p in polls) <= 10
    everything = [r for p in polls for r in p]
    assert [r.value for r in everything] == values and {r.delivery_count
                                                        for r in everything} == {1}
    assert all(e is None for e in outcome.values())


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_implicit_mode_accepts_what_a_poll_returned(broker):
    topic, group = scenario(broker.bootstrap)

    async def go():
        await produce(broker.bootstrap, topic, [b"x", b"y"])
        consumer = await joined(broker.bootstrap, group, topic)
        got = []
        while len(got) < 2:
            got += await consumer.poll(1.0)
        with pytest.raises(ImplicitAcknowledgement,
                           match="Implicit acknowledgement of delivery is being used."):
            consumer.acknowledge(got[0])
        told = []
        consumer.set_acknowledgement_commit_callback(lambda offsets, exc: told.append(
            (offsets, exc)))
        await consumer.commit_async()                # accepts both
        assert told == []                            # told from the next call, not before
        await consumer.poll(0)
        outcome = {tp: exc for offsets, exc in told for tp in offsets}
        assert [offsets for offsets, _ in told] == [{(topic, 0): {got[0].offset,
                                                                   got[1].offset}}]
        await consumer.close()
        # a new member of the group gets only what came after
        await produce(broker.bootstrap, topic, [b"z"])
        after = await joined(broker.bootstrap, group, topic)
        later = []
        while not later:
            later = await after.poll(1.0)
        await after.close()
        return got, outcome, later

    got, outcome, later = run(go())
    assert [r.value for r in got] == [b"x", b"y"]
    assert outcome == {(topic, 0): None}
    assert [(r.value, r.delivery_count) for r in later] == [(b"z", 1)]


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_one_group_with_confluent_kafkas_share_consumer_each_record_once(broker):
    """roster.client and librdkafka's share consumer (confluent-kafka 2.16) in one group."""
    from confluent_kafka import ShareConsumer as ConfluentShareConsumer
    topic, group = scenario(broker.bootstrap, partitions=2)
    values = [f"mixed-{i}".encode() for i in range(200)]
    got_confluent: list[tuple] = []
    stop = threading.Event()

    def confluent() -> None:
        consumer = ConfluentShareConsumer({"bootstrap.servers": broker.bootstrap,
                                           "group.id": group,
                                           "share.acknowledgement.mode": "explicit"})
        try:
            consumer.subscribe([topic])
            while not stop.is_set():
                for message in consumer.poll(0.5) or []:
                    if message.error() is None:
                        got_confluent.append((message.partition(), message.offset(),
                                              message.value(), message.delivery_count()))
                        consumer.acknowledge(message)
                consumer.commit_sync()
        finally:
            consumer.close()

    async def go():
        thread = threading.Thread(target=confluent, daemon=True)
        thread.start()
        ours = await joined(broker.bootstrap, group, topic,
                            share_acknowledgement_mode="explicit", max_poll_records=10)
        await assigned_members(broker.bootstrap, group, 2)
        for start in range(0, len(values), 10):      # batches of 10 as they come
            await produce(broker.bootstrap, topic, values[start:start + 10], partitions=2)
            await asyncio.sleep(0.05)
        got = []
        try:
            while len(got) + len(got_confluent) < len(values):
                for record in await ours.poll(0.5):
                    got.append((record.partition, record.offset, record.value,
                                record.delivery_count))
                    ours.acknowledge_offset(record.topic, record.partition, record.offset)
        finally:
            await ours.close()
            stop.set()
            await asyncio.get_running_loop().run_in_executor(None, thread.join, 30)
        return got

    got = run(go())
    everything = got + got_confluent
    assert got and got_confluent                  # both members had a share
    assert sorted(v for _, _, v, _ in everything) == sorted(values)    # each exactly once
    assert {count for _, _, _, count in everything} == {1}


def test_group_instance_id_is_refused_at_construction():
    with pytest.raises(ShareConsumerConfigError) as refused:
        ShareConsumer("127.0.0.1:9092", "g", group_instance_id="worker-1")
    assert str(refused.value).startswith(
        "group.instance.id cannot be set when using a share group. Instead of "
        "group.instance.id: share groups have no static membership")
