"""roster.client on a three-node Kafka cluster, through kill -9 of the group coordinator's node
and of a partition leader's node: the member finds the new coordinator and the new leaders,
nothing acknowledged is lost, and a static member keeps its assignment and generation (no
rebalance: the new coordinator loads the group from __consumer_offsets)."""
from __future__ import annotations

import asyncio

import pytest

from roster.client.consumer import Consumer
from tests.cluster.flow import KeepProducing, KeepReading, commit_all, until
from tests.support.kafka_peer import unique_name

pytestmark = pytest.mark.xdist_group("kafka_cluster")


async def _kill_and_ride_out(cluster, victim: int, producing: KeepProducing,
                             reading: KeepReading, heal: bool = True) -> None:
    """kill -9 `victim`, then wait until records acknowledged after the kill have been read
    and committed; then bring the node back (while both keep going)."""
    await asyncio.to_thread(cluster.kill9, victim)
    acked_at_kill = len(producing.acked)
    commits_at_kill = reading.commits
    await until(lambda: len(producing.acked) >= acked_at_kill + 20,
                f"the producer to write past the loss of node {victim}")
    target = list(producing.acked)
    await until(lambda: reading.has_read(target) and reading.commits > commits_at_kill,
                f"the member to read and commit past the loss of node {victim}")
    if heal:
        await asyncio.to_thread(cluster.restart, victim)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_static_member_rides_out_its_coordinator_and_a_leader_dying(cluster, protocol):
    topic, group = unique_name("client-flow"), unique_name("client-group")
    cluster.create_topic(topic, partitions=3)
    assigned: list = []

    async def scenario():
        consumer = Consumer(cluster.bootstrap, group, group_instance_id="static-1",
                            session_timeout_ms=30_000, heartbeat_interval_ms=500,
                            group_protocol=protocol, on_assigned=assigned.append)
        await consumer.subscribe([topic])
        await consumer.member.wait_stable(60)
        # (KIP-848: a first stable heartbeat may come before the assignment is reconciled)
        await consumer.member.wait_for(lambda: len(consumer.assignment) == 3, 60)
        generation = consumer.member.machine.generation
        owned = sorted(consumer.assignment)
        producing = KeepProducing(cluster.bootstrap, topic).start()
        reading = KeepReading(consumer).start()
        await until(lambda: len(reading.seen) >= 20, "the first records to be read")

        coordinator = await asyncio.to_thread(cluster.coordinator_of, group)
        await _kill_and_ride_out(cluster, coordinator, producing, reading)
        moved_to = await asyncio.to_thread(cluster.coordinator_of, group)
        # a node leading one of the partitions read, other than the coordinator now
        leaders = {await asyncio.to_thread(cluster.leader_of, topic, p) for p in range(3)}
        leader = sorted(leaders - {moved_to})[0]
        await _kill_and_ride_out(cluster, leader, producing, reading)

        acked = await producing.stop()
        await until(lambda: reading.has_read(acked), "every acknowledged record to be read")
        await reading.stop()
        await commit_all(consumer)
        committed = await consumer.member.committed([(topic, p) for p in range(3)])
        state = (consumer.member.machine.generation, sorted(consumer.assignment))
        await consumer.close()
        return acked, reading.seen, committed, generation, owned, state, coordinator, moved_to

    acked, seen, committed, generation, owned, state, first, moved_to = asyncio.run(scenario())
    assert moved_to != first
    lost = [(p, o) for p, o, _ in acked if seen.get((p, o)) is None]
    assert not lost, f"acknowledged but never read: {lost[:10]}"
    assert all(seen[(p, o)] == v for p, o, v in acked)
    for p in range(3):
        last = max((o for q, o, _ in acked if q == p), default=-1)
        assert committed[(topic, p)] >= last + 1
    # no rebalance: the same generation (member epoch) and partitions, assigned once
    assert owned == [(topic, p) for p in range(3)]
    assert state == (generation, owned)
    assert len([a for a in assigned if a]) == 1   # (an empty first one is no rebalance)
