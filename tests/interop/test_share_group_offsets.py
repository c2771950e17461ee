"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92)
against roster and the Apache Kafka 4.4 peer with the same assertions: what a group without
share state, another type's group and unknown topics are answered, an altered start offset and
its lag (v1), deleting a topic's state, and the request-level refusals."""
from __future__ import annotations

import asyncio
import datetime

import pytest

from roster.admin.client import AdminClient
from roster.client.producer import Producer
from roster.protocol.api_keys import ApiKey
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name

BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
NONE, UNKNOWN_TOPIC, INVALID_GROUP_ID, GROUP_ID_NOT_FOUND = 0, 3, 24, 69
UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."


class Offsets:
    def __init__(self, bootstrap: str) -> None:
        self.admin = AdminClient(bootstrap)
        self.bootstrap = bootstrap

    def create(self, topic: str, partitions: int) -> None:
        entry = self.admin.entry(ApiKey.CREATE_TOPICS, "topics")
        answer = self.admin.call(ApiKey.CREATE_TOPICS, topics=(
            entry(name=topic, num_partitions=partitions, replication_factor=1, assignments=(),
                  configs=()),), timeout=datetime.timedelta(seconds=30), validate_only=False)
        assert answer.topics[0].error_code == NONE

    def produce(self, topic: str, count: int) -> None:
        async def send():
            producer = Producer(self.bootstrap)
            try:
                for i in range(count):
                    await producer.send(topic, b"v%d" % i, partition=0)
            finally:
                await producer.close()
        asyncio.run(send())

    def describe(self, group: str, topics: dict[str, tuple[int, ...]] | None):
        g = self.admin.entry(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "groups")
        t = self.admin.entry(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "groups", "topics")
        wanted = None if topics is None else tuple(
            t(topic_name=name, partitions=p) for name, p in topics.items())
        [answer] = self.admin.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                                   groups=(g(group_id=group, topics=wanted),)).groups
        return answer

    def alter(self, group: str, topics: dict[str, list[tuple[int, int]]]):
        t = self.admin.entry(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "topics")
        p = self.admin.entry(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "topics", "partitions")
        return self.admin.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, group_id=group, topics=tuple(
            t(topic_name=name, partitions=tuple(p(partition_index=i, start_offset=o)
                                                for i, o in parts))
            for name, parts in topics.items()))

    def delete(self, group: str, topics: list[str]):
        t = self.admin.entry(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "topics")
        return self.admin.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, group_id=group,
                               topics=tuple(t(topic_name=name) for name in topics))


def partitions(described) -> dict:
    return {(t.topic_name, p.partition_index): (p.start_offset, p.lag, p.leader_epoch,
                                                p.error_code)
            for t in described.topics for p in t.partitions}


@BOTH
def test_a_group_without_share_state_answers_minus_one(target):
    offsets = Offsets(target.bootstrap)
    topic, group = unique_name("sgo-topic"), unique_name("sgo-none")
    offsets.create(topic, 2)
    described = offsets.describe(group, {topic: (0, 1), unique_name("sgo-nosuch"): (0,)})
    assert described.error_code == NONE
    assert sorted(partitions(described).values()) == [(-1, -1, 0, NONE)] * 3
    assert all(t.topic_id is None for t in described.topics)
    assert offsets.describe(group, None).topics == ()
    empty = offsets.describe("", {topic: (0,)})
    assert (empty.error_code, empty.topics) == (-1, ())


@BOTH
def test_altered_offsets_are_described_with_their_lag(target):
    offsets = Offsets(target.bootstrap)
    topic, group = unique_name("sgo-topic"), unique_name("sgo-alter")
    nosuch = unique_name("sgo-nosuch")
    offsets.create(topic, 2)
    offsets.produce(topic, 5)
    altered = offsets.alter(group, {topic: [(0, 2), (7, 0)], nosuch: [(0, 0)]})
    assert altered.error_code == NONE
    assert [(t.topic_name, [(p.partition_index, p.error_code, p.error_message)
                            for p in t.partitions]) for t in altered.responses] == [
        (nosuch, [(0, UNKNOWN_TOPIC, UNKNOWN_PARTITION_MESSAGE)]),
        (topic, [(0, NONE, None), (7, UNKNOWN_TOPIC, UNKNOWN_PARTITION_MESSAGE)])]
    described = offsets.describe(group, {topic: (0, 1)})
    assert partitions(described) == {(topic, 0): (2, 3, 0, NONE), (topic, 1): (-1, -1, 0, NONE)}
    assert described.topics[0].topic_id is not None
    everything = offsets.describe(group, None)
    assert partitions(everything) == {(topic, 0): (2, 3, 0, NONE)}
    # any start offset is taken as given, the lag not clamped
    offsets.alter(group, {topic: [(0, 9)]})
    assert partitions(offsets.describe(group, {topic: (0,)}))[(topic, 0)] == (9, -4, 0, NONE)
    offsets.alter(group, {topic: [(0, -1)]})
    assert partitions(offsets.describe(group, {topic: (0,)}))[(topic, 0)] == (-1, -1, 0, NONE)


@BOTH
def test_deleting_a_topics_share_state(target):
    offsets = Offsets(target.bootstrap)
    topic, other, group = unique_name("sgo-topic"), unique_name("sgo-other"), \
        unique_name("sgo-delete")
    nosuch = unique_name("sgo-nosuch")
    offsets.create(topic, 1)
    offsets.create(other, 1)
    offsets.alter(group, {topic: [(0, 0)]})
    deleted = offsets.delete(group, [other, nosuch, topic])
    assert deleted.error_code == NONE
    assert [(t.topic_name, t.error_code, t.error_message) for t in deleted.responses] == [
        (topic, NONE, None), (other, UNKNOWN_TOPIC, UNKNOWN_PARTITION_MESSAGE),
        (nosuch, UNKNOWN_TOPIC, UNKNOWN_PARTITION_MESSAGE)]
    assert partitions(offsets.describe(group, {topic: (0,)}))[(topic, 0)][0] == -1


@BOTH
def test_request_level_refusals(target):
    offsets = Offsets(target.bootstrap)
    topic = unique_name("sgo-topic")
    offsets.create(topic, 1)
    unknown = unique_name("sgo-unknown")
    missing = offsets.delete(unknown, [topic])
    assert (missing.error_code, missing.error_message) == (GROUP_ID_NOT_FOUND,
                                                           f"Group {unknown} not found.")
    for refused in (offsets.alter("", {}), offsets.delete("", [topic])):
        assert (refused.error_code, refused.error_message) == (INVALID_GROUP_ID,
                                                               "The group id is invalid.")
    # a classic group (a simple commit makes one) is not a share group
    classic = unique_name("sgo-classic")
    t = offsets.admin.entry(ApiKey.OFFSET_COMMIT, "topics")
    p = offsets.admin.entry(ApiKey.OFFSET_COMMIT, "topics", "partitions")
    offsets.admin.call(ApiKey.OFFSET_COMMIT, group_id=classic, generation_id_or_member_epoch=-1,
                       member_id="", group_instance_id=None, topics=(t(name=topic, partitions=(
                           p(partition_index=0, committed_offset=0, committed_leader_epoch=-1,
                             committed_metadata=""),)),))
    for refused in (offsets.alter(classic, {topic: [(0, 0)]}), offsets.delete(classic, [topic])):
        assert (refused.error_code, refused.error_message) == (
            GROUP_ID_NOT_FOUND, f"Group {classic} is not a share group.")
    described = offsets.describe(classic, {topic: (0,)})
    assert described.error_code == NONE
    assert partitions(described) == {(topic, 0): (-1, -1, 0, NONE)}
