"""roster.client closing, against a real broker (roster's, and Apache Kafka beside it): on_revoked
runs before the member leaves the group, so the offsets it commits there are accepted, as with
Kafka's Java client (onLeavePrepare before the LeaveGroup; PREPARE_LEAVING before the leave
heartbeat in the consumer protocol) and librdkafka. Before, the leave went first and the commit
was refused with UNKNOWN_MEMBER_ID."""
from __future__ import annotations

import asyncio

import pytest

from roster.client.consumer_member import ConsumerGroupMember
from roster.client.member import GroupMember
from roster.client.membership import MemberConfig
from tests.support import groups
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401
from tests.support.kafka_peer import unique_name

MEMBERS = {"classic": GroupMember, "consumer": ConsumerGroupMember}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_offsets_committed_in_on_revoked_on_close_are_the_groups(target, protocol):
    topic = unique_name("closing")
    group = unique_name("closing")
    groups.create_topic(target.bootstrap, topic, 2)
    handed_over = {(topic, 0): 40, (topic, 1): 41}

    async def scenario():
        revoked, failed = [], []

        async def on_revoked(partitions):
            revoked.append(tuple(partitions))
            try:
                await member.commit({tp: handed_over[tp] for tp in partitions})
            except Exception as exc:  # noqa: BLE001 - what the test reports
                failed.append(repr(exc))

        member = MEMBERS[protocol](target.bootstrap, MemberConfig(group, heartbeat_interval_ms=500),
                                   on_revoked=on_revoked)
        await member.start([topic])
        await member.wait_for(lambda: len(member.assignment) == 2, 30)
        await member.close()
        return revoked, failed

    revoked, failed = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert revoked == [((topic, 0), (topic, 1))] and failed == []
    assert groups.committed_offsets(target.bootstrap, group, topic) == {0: 40, 1: 41}


class HandOverFailed(RuntimeError):
    pass


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_a_raising_on_revoked_still_leaves_the_group_then_close_raises(target, protocol):
    """The leave waits for the callback, but not on its success: the group is left empty at
    once (not after the session timeout), and the caller hears the callback's error."""
    from confluent_kafka.admin import AdminClient
    topic = unique_name("closing-raise")
    group = unique_name("closing-raise")
    groups.create_topic(target.bootstrap, topic, 1)

    async def scenario():
        async def on_revoked(partitions):
            raise HandOverFailed(f"could not hand over {partitions}")

        member = MEMBERS[protocol](target.bootstrap, MemberConfig(group, heartbeat_interval_ms=500),
                                   on_revoked=on_revoked)
        await member.start([topic])
        await member.wait_for(lambda: len(member.assignment) == 1, 30)
        with pytest.raises(HandOverFailed):
            await member.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    assert admin.describe_consumer_groups([group])[group].result(20).members == []
