"""roster.client's ShareConsumer on a three-node Kafka 4.4 cluster: the partitions' leaders are
on different brokers, so each consumer keeps one share session per broker and sends each
acknowledgement to the broker that delivered the record."""
from __future__ import annotations

import asyncio

import pytest

from roster.client.share_consumer import AcknowledgeType, ShareConsumer
from tests.interop.test_roster_share_consumer import group_configs, produce
from tests.support.kafka_peer import unique_name

pytestmark = pytest.mark.xdist_group("kafka_cluster")


def test_share_sessions_with_every_leader_deliver_each_record_once(cluster):
    topic, group = unique_name("share-cluster"), unique_name("share-cluster-group")
    cluster.create_topic(topic, partitions=3)
    leaders = {cluster.leader_of(topic, p) for p in range(3)}
    group_configs(cluster.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    values = [f"spread-{i}".encode() for i in range(300)]

    async def scenario():
        await produce(cluster.bootstrap, topic, values, partitions=3)
        consumers = [ShareConsumer(cluster.bootstrap, group,
                                   share_acknowledgement_mode="explicit") for _ in range(2)]
        for consumer in consumers:
            await consumer.subscribe([topic])
        got: list = []
        released: set = set()
        accepted = [0]

        async def read(consumer: ShareConsumer) -> None:
            while accepted[0] < len(values):
                for record in await consumer.poll(0.5):
                    got.append(record)
                    # the first delivery of one record per partition is given back
                    first = record.offset == 0 and record.delivery_count == 1
                    if first and record.partition not in released:
                        released.add(record.partition)
                        consumer.acknowledge(record, AcknowledgeType.RELEASE)
                    else:
                        consumer.acknowledge(record)
                        accepted[0] += 1

        await asyncio.wait_for(asyncio.gather(*(read(c) for c in consumers)), 120)
        sessions = [set(c._core.sessions) for c in consumers]
        assigned = [c.assignment for c in consumers]
        outcomes = [await c.commit_sync() for c in consumers]
        for consumer in consumers:
            await consumer.close()
        return got, sessions, assigned, outcomes

    got, sessions, assigned, outcomes = asyncio.run(scenario())
    accepted = [r for r in got if not (r.offset == 0 and r.delivery_count == 1)]
    assert sorted(r.value for r in accepted) == sorted(values)       # each accepted once
    assert sorted((r.partition, r.delivery_count) for r in got if r.offset == 0) == \
        [(0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (2, 2)]
    # a share session with each broker leading a partition the consumer was assigned
    assert len(leaders) > 1 and set().union(*sessions) == leaders
    for own, partitions in zip(sessions, assigned):
        assert own == {cluster.leader_of(topic, p) for _, p in partitions}
    assert all(error is None for outcome in outcomes for error in outcome.values())


def test_a_leader_killed_mid_stream_moves_the_session_and_every_record_is_accepted(cluster):
    """kill -9 of the broker leading a partition while the consumer reads: its session and the
    acknowledgements owed to it are dropped (the records it had acquired are released when the
    partition's new leader takes over), a session opens with the new leader, and every record
    is accepted at least once; the consumer never fails."""
    topic, group = unique_name("share-kill"), unique_name("share-kill-group")
    cluster.create_topic(topic, partitions=3)
    group_configs(cluster.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    values = [f"kill-{i}".encode() for i in range(600)]
    victim = cluster.leader_of(topic, 0)

    async def scenario():
        await produce(cluster.bootstrap, topic, values[:300], partitions=3)
        consumer = ShareConsumer(cluster.bootstrap, group,
                                 share_acknowledgement_mode="explicit", max_poll_records=20)
        await consumer.subscribe([topic])
        accepted: set = set()
        failures: list = []
        consumer.set_acknowledgement_commit_callback(
            lambda offsets, exc: failures.append(exc) if exc is not None else None)
        killed = False
        while len(accepted) < len(values):
            for record in await consumer.poll(0.5):
                consumer.acknowledge(record)
                accepted.add(record.value)
            if not killed and len(accepted) >= 100:
                await asyncio.to_thread(cluster.kill9, victim)
                await asyncio.to_thread(cluster.wait_fenced, victim)
                await produce(cluster.bootstrap, topic, values[300:], partitions=3)
                killed = True
        moved_to = cluster.leader_of(topic, 0)
        sessions = set(consumer._core.sessions)
        await consumer.close()
        return accepted, sessions, moved_to, consumer.member.fatal

    accepted, sessions, moved_to, fatal = asyncio.run(asyncio.wait_for(scenario(), 240))
    assert accepted == set(values) and fatal is None
    assert moved_to != victim and victim not in sessions and moved_to in sessions


def test_the_groups_coordinator_killed_the_member_finds_the_next_and_reads_on(cluster):
    """kill -9 of the broker coordinating the share group: the member looks the coordinator up
    again and heartbeats on there; reading goes on and every record is accepted."""
    topic, group = unique_name("share-coord"), unique_name("share-coord-group")
    cluster.create_topic(topic, partitions=3)
    group_configs(cluster.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    values = [f"coord-{i}".encode() for i in range(400)]
    coordinator = cluster.coordinator_of(group)

    async def scenario():
        await produce(cluster.bootstrap, topic, values[:200], partitions=3)
        consumer = ShareConsumer(cluster.bootstrap, group,
                                 share_acknowledgement_mode="explicit", max_poll_records=20)
        await consumer.subscribe([topic])
        accepted: set = set()
        killed_at_epoch = None
        while len(accepted) < len(values):
            for record in await consumer.poll(0.5):
                consumer.acknowledge(record)
                accepted.add(record.value)
            if killed_at_epoch is None and len(accepted) >= 100:
                killed_at_epoch = consumer.member.machine.epoch
                await asyncio.to_thread(cluster.kill9, coordinator)
                await asyncio.to_thread(cluster.wait_fenced, coordinator)
                await produce(cluster.bootstrap, topic, values[200:], partitions=3)
        # heartbeats reached the new coordinator (its answers keep the member in the group)
        dead_port = int(cluster.node(coordinator).bootstrap.rsplit(":", 1)[1])
        await consumer.member.wait_for(
            lambda: consumer.member._coordinator_address is not None
            and consumer.member._coordinator_address[1] != dead_port, 30)
        moved_to = cluster.coordinator_of(group)
        fatal = consumer.member.fatal
        await consumer.close()
        return accepted, moved_to, fatal

    accepted, moved_to, fatal = asyncio.run(asyncio.wait_for(scenario(), 240))
    assert accepted == set(values) and fatal is None
    assert moved_to != coordinator
