"""roster.client against a real roster broker, alongside real Kafka clients."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from roster.client.consumer import Consumer
from roster.client.member import GroupMember
from roster.client.membership import MemberConfig, State
from roster.client.producer import Producer
from tests.interop.test_bad_input import _create
from tests.interop.test_group_durability import StaticConsumer, wait_until
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("client")]
FAST = {"group.initial.rebalance.delay.ms": "0"}


def test_produce_consume_commit_with_roster_client(broker_factory):
    broker = broker_factory(FAST)

    async def scenario():
        producer = Producer(broker.bootstrap, compression="lz4")
        placed = [await producer.send("orders", f"v{i}".encode(), key=f"k{i}".encode(),
                                      headers=[("h", b"1")]) for i in range(30)]
        await producer.close()
        consumer = Consumer(broker.bootstrap, "readers", group_instance_id="reader-1",
                            session_timeout_ms=10_000)
        await consumer.subscribe(["orders"])
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 30 and time.monotonic() < deadline:
            seen.extend(await consumer.poll(timeout_ms=200))
        await consumer.commit()
        committed = await consumer.member.committed([("orders", 0)])
        await consumer.close()
        return placed, seen, committed

    placed, seen, committed = asyncio.run(scenario())
    assert sorted((r.partition, r.offset) for r in seen) == sorted(placed)
    assert {r.value for r in seen} == {f"v{i}".encode() for i in range(30)}
    assert all(r.headers == (("h", b"1"),) for r in seen)
    assert committed[("orders", 0)] == 30


def _kafka_python_member(bootstrap, group, topic, owned: dict, stop: threading.Event):
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             partition_assignment_strategy=[
                                 __import__("kafka.coordinator.assignors.range",
                                            fromlist=["x"]).RangePartitionAssignor],
                             session_timeout_ms=10000, heartbeat_interval_ms=500)
    consumer.subscribe([topic])
    consumer.topics()  # learn the topic before the first poll (see tests/support/groups.py)
    while not stop.is_set():
        consumer.poll(timeout_ms=100)
        owned["kafka-python"] = sorted(p.partition for p in consumer.assignment())
    consumer.close()


def test_roster_client_shares_a_group_with_confluent_and_kafka_python(broker_factory):
    broker = broker_factory(FAST)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "shared", 6).error_code == 0
    owned: dict[str, list[int]] = {}
    stop = threading.Event()
    confluent = StaticConsumer(broker.bootstrap, "mixed", "mixed-confluent", "shared")
    python = threading.Thread(target=_kafka_python_member,
                              args=(broker.bootstrap, "mixed", "shared", owned, stop))
    python.start()

    async def scenario():
        member = GroupMember(broker.bootstrap, MemberConfig("mixed", "mixed-roster",
                                                            session_timeout_ms=10_000,
                                                            heartbeat_interval_ms=500))
        await member.start(["shared"])

        def split():
            parts = [sorted(p for _, p in member.assignment), confluent.assigned,
                     owned.get("kafka-python", [])]
            return all(parts) and sorted(sum(parts, [])) == list(range(6)) and parts
        deadline = time.monotonic() + 60
        result = None
        while time.monotonic() < deadline and not result:
            result = split()
            await asyncio.sleep(0.05)  # re-checking the three members' views
        await member.close()
        return result

    try:
        parts = asyncio.run(scenario())
    finally:
        stop.set()
        python.join(15)
        confluent.close()
    assert parts, "the three clients never split the six partitions"
    assert sorted(len(p) for p in parts) == [2, 2, 2]
    for p in parts:  # range hands out contiguous ranges
        assert p == list(range(p[0], p[0] + len(p)))


def test_restarted_static_leader_skips_assignment_then_rebalances_on_new_partitions(
        broker_factory):
    """KIP-814: a roster.client static leader restarts — SkipAssignment, no rebalance, the
    follower sees nothing; then a partition is added and that leader triggers the rebalance."""
    broker = broker_factory(FAST)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "watched", 4).error_code == 0
    config = MemberConfig("kip814", "leader-0", session_timeout_ms=20_000,
                          heartbeat_interval_ms=300)

    async def scenario():
        leader = GroupMember(broker.bootstrap, config, metadata_max_age_ms=300)
        await leader.start(["watched"])
        await leader.wait_stable(30)
        # the follower (a real confluent-kafka client) joins; the leader reassigns
        follower = await asyncio.to_thread(StaticConsumer, broker.bootstrap, "kip814",
                                           "follower-1", "watched")
        await asyncio.to_thread(wait_until, lambda: len(follower.assigned) == 2, 60,
                                "the follower's share")
        await leader.wait_for(lambda: len(leader.assignment) == 2, 30)
        generation, before = leader.machine.generation, leader.assignment
        callbacks_before = follower.callbacks
        await leader.close()                      # static: no LeaveGroup

        restarted = GroupMember(broker.bootstrap, config, metadata_max_age_ms=300)
        await restarted.start(["watched"])
        await restarted.wait_stable(30)
        outcome = {
            "leader": restarted.machine.is_leader,
            "generation_kept": restarted.machine.generation == generation,
            "same_partitions": restarted.assignment == before,
            "follower_untouched": follower.callbacks == callbacks_before,
        }
        from roster.admin.client import AdminClient
        from roster.admin.topics import add_partitions
        with AdminClient(broker.bootstrap) as admin:  # grow the subscribed topic
            add_partitions(admin, "watched", 6)
        await restarted.wait_for(lambda: restarted.machine.generation > generation
                                 and restarted.machine.state is State.STABLE, 30)
        await asyncio.to_thread(wait_until, lambda: len(follower.assigned) == 3, 60,
                                "the follower to get its share of six partitions")
        outcome["after_growth"] = (len(restarted.assignment), len(follower.assigned))
        await restarted.close()
        follower.close()
        return outcome

    outcome = asyncio.run(scenario())
    assert outcome == {"leader": True, "generation_kept": True, "same_partitions": True,
                       "follower_untouched": True, "after_growth": (3, 3)}
    assert any("leader" in line and "rejoins a Stable group" in line for line in broker.output)


def test_restarted_static_leader_notices_partitions_added_while_it_was_down(broker_factory):
    """Issue 17: KIP-814's own gap, closed in roster.client. The leader leaves itself the
    partition counts it assigned against in its own assignment's user data; restarted with
    SkipAssignment, it reads them back and rejoins for a topic that grew while it was down.
    The broker's own watch is off (Kafka's behaviour), so only the leader can notice."""
    broker = broker_factory({**FAST, "group.coordinator.metadata.watch": "false"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "grown", 4).error_code == 0
    config = MemberConfig("kip814-grown", "leader-0", session_timeout_ms=20_000,
                          heartbeat_interval_ms=300)

    async def scenario():
        leader = GroupMember(broker.bootstrap, config, metadata_max_age_ms=300)
        await leader.start(["grown"])
        await leader.wait_stable(30)
        follower = await asyncio.to_thread(StaticConsumer, broker.bootstrap, "kip814-grown",
                                           "follower-1", "grown")
        await asyncio.to_thread(wait_until, lambda: len(follower.assigned) == 2, 60,
                                "the follower's share")
        await leader.wait_for(lambda: len(leader.assignment) == 2, 30)
        generation = leader.machine.generation
        await leader.close()                      # static: no LeaveGroup
        from roster.admin.client import AdminClient
        from roster.admin.topics import add_partitions
        with AdminClient(broker.bootstrap) as admin:  # grown while the leader is away
            add_partitions(admin, "grown", 6)

        restarted = GroupMember(broker.bootstrap, config, metadata_max_age_ms=300)
        await restarted.start(["grown"])
        await restarted.wait_for(lambda: restarted.machine.generation > generation
                                 and restarted.machine.state is State.STABLE, 30)
        await asyncio.to_thread(wait_until, lambda: len(follower.assigned) == 3, 60,
                                "the follower to get its share of six partitions")
        outcome = (restarted.machine.is_leader, len(restarted.assignment), len(follower.assigned))
        await restarted.close()
        follower.close()
        return outcome

    assert asyncio.run(scenario()) == (True, 3, 3)
    log = "\n".join(broker.output)
    assert "rejoins a Stable group" in log and "metadata changed" not in log
