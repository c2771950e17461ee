"""roster.client's KIP-814 static leader and its transactional producer on a three-node Kafka
cluster, each through a kill -9 of the node that coordinates them."""
from __future__ import annotations

import asyncio

import pytest

from roster.client.consumer import Consumer
from roster.client.member import GroupMember
from roster.client.membership import MemberConfig
from roster.client.transaction_state import TransactionAbortableError
from roster.client.transactional_producer import TransactionalProducer
from tests.support.kafka_peer import unique_name

pytestmark = pytest.mark.xdist_group("kafka_cluster")


def test_a_static_leader_restarted_after_its_coordinator_died_skips_the_assignment(cluster):
    """The group's coordinator dies; the node that takes over loads the group from
    __consumer_offsets. The static leader then restarts: Kafka answers its JoinGroup with
    SkipAssignment (KIP-814), the group keeps its generation and the follower is untouched."""
    topic, group = unique_name("kip814"), unique_name("kip814-group")
    cluster.create_topic(topic, partitions=4)

    def config(instance: str) -> MemberConfig:
        return MemberConfig(group, instance, session_timeout_ms=30_000,
                            heartbeat_interval_ms=300)

    async def scenario():
        leader = GroupMember(cluster.bootstrap, config("leader-0"))
        await leader.start([topic])
        await leader.wait_stable(60)
        assigned_to_follower: list = []
        follower = GroupMember(cluster.bootstrap, config("follower-1"),
                               on_assigned=assigned_to_follower.append)
        await follower.start([topic])
        await leader.wait_for(lambda: len(leader.assignment) == 2, 60)
        await follower.wait_for(lambda: len(follower.assignment) == 2, 60)
        generation, before = leader.machine.generation, leader.assignment
        followers = (follower.machine.generation, follower.assignment,
                     len(assigned_to_follower))

        coordinator = await asyncio.to_thread(cluster.coordinator_of, group)
        await asyncio.to_thread(cluster.kill9, coordinator)
        await leader.close()                       # static: no LeaveGroup
        await asyncio.to_thread(cluster.wait_fenced, coordinator)
        moved_to = await asyncio.to_thread(cluster.coordinator_of, group)

        restarted = GroupMember(cluster.bootstrap, config("leader-0"))
        await restarted.start([topic])
        await restarted.wait_stable(60)
        outcome = {
            "moved": moved_to != coordinator,
            "leader": restarted.machine.is_leader,
            "generation_kept": restarted.machine.generation == generation,
            "same_partitions": restarted.assignment == before,
            "follower_untouched": (follower.machine.generation, follower.assignment,
                                   len(assigned_to_follower)) == followers,
        }
        await restarted.close()
        await follower.close()
        return outcome

    assert asyncio.run(scenario()) == {"moved": True, "leader": True, "generation_kept": True,
                                       "same_partitions": True, "follower_untouched": True}


def test_transactions_commit_exactly_once_through_their_coordinator_dying(cluster):
    """Transactions of five records each while the transaction coordinator's node is killed:
    a transaction the move spoiled is aborted and written again, and a read_committed reader
    sees every committed record exactly once and nothing of an aborted one."""
    topic, txn_id = unique_name("txn-out"), unique_name("txn")
    cluster.create_topic(topic, partitions=3)

    async def scenario():
        producer = TransactionalProducer(cluster.bootstrap, txn_id, max_block_ms=90_000)
        await producer.init_transactions()
        committed: list[bytes] = []
        aborted = 0
        victim = await asyncio.to_thread(cluster.transaction_coordinator_of, txn_id)
        killed = None
        batch = 0
        while batch < 12:
            if batch == 4 and killed is None:
                killed = asyncio.ensure_future(asyncio.to_thread(cluster.kill9, victim))
            values = [f"b{batch}-r{i}".encode() for i in range(5)]
            producer.begin_transaction()
            try:
                for value in values:
                    await producer.send(topic, value)
                await producer.commit_transaction()
            except TransactionAbortableError:
                await producer.abort_transaction()
                aborted += 1
                continue
            committed.extend(values)
            batch += 1
        await killed
        moved_to = await asyncio.to_thread(cluster.transaction_coordinator_of, txn_id)
        await producer.close()

        reader = Consumer(cluster.bootstrap, unique_name("txn-reader"),
                          isolation_level="read_committed")
        await reader.subscribe([topic])
        seen: list[bytes] = []
        async def read_all():
            while len(seen) < len(committed):
                seen.extend(r.value for r in await reader.poll(timeout_ms=500))
        await asyncio.wait_for(read_all(), 90)
        # and nothing more: whatever is still to come would be a duplicate or an aborted record
        seen.extend(r.value for r in await reader.poll(timeout_ms=1000))
        await reader.close()
        return committed, seen, victim, moved_to, aborted

    committed, seen, victim, moved_to, aborted = asyncio.run(scenario())
    assert moved_to != victim
    assert sorted(seen) == sorted(committed), f"{aborted} aborted on the way"
