"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92)
against roster and the Apache Kafka 4.4 peer with the same assertions: what a group without
share state, another type's group and unknown topics are answered, an altered start offset and
its lag (v1), deleting a topic's state, and the request-level refusals."""
from __future__ import annotations

import asyncio
import datetime
import time

import pytest

from roster.admin.client import AdminClient
from roster.client.producer import Producer
from roster.protocol.api_keys import ApiKey
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name

BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
NONE, UNKNOWN_TOPIC, INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP = 0, 3, 24, 69, 68
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
    nosuch = unique_name("sgo-nosuch")
    # the topic's id is answered once the coordinator knows the topic, whether the group exists
    # or not (Kafka's learns of it a moment after CreateTopics answers: null until then)
    deadline = time.monotonic() + 30
    while True:
        described = offsets.describe(group, {topic: (0, 1), nosuch: (0,)})
        ids = {t.topic_name: t.topic_id for t in described.topics}
        if ids[topic] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)    # polling the broker's answer
    assert described.error_code == NONE
    assert sorted(partitions(described).values()) == [(-1, -1, 0, NONE)] * 3
    assert ids[topic] is not None and ids[nosuch] is None
    assert offsets.describe(group, None).topics == ()
    # the empty group id: refused once a named topic exists (only those reach Kafka's
    # coordinator, whose metadata learns of a new topic a moment after CreateTopics answers)
    deadline = time.monotonic() + 30
    while (empty := offsets.describe("", {topic: (0,)})).error_code == NONE:
        assert time.monotonic() < deadline, "the new topic never reached the coordinator"
        time.sleep(0.05)    # polling the broker's answer
    assert (empty.error_code, empty.topics) == (-1, ())
    unknown = offsets.describe("", {unique_name("sgo-nosuch"): (0,)})
    assert unknown.error_code == NONE
    assert partitions(unknown) == {(unknown.topics[0].topic_name, 0): (-1, -1, 0, NONE)}
    assert (offsets.describe("", None).error_code, offsets.describe("", None).topics) == (
        NONE, ())


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
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
        (topic, NONE), (other, UNKNOWN_TOPIC), (nosuch, UNKNOWN_TOPIC)]
    # a topic without share state in the group: Kafka says so, or, while its coordinator has
    # not learnt of the new topic yet, that it does not host it
    assert deleted.responses[1].error_message in ("There is no offset information to delete.",
                                                  UNKNOWN_PARTITION_MESSAGE)
    assert deleted.responses[2].error_message == UNKNOWN_PARTITION_MESSAGE
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


@BOTH
def test_a_group_with_members_is_refused_non_empty_and_its_start_shows_once_written(target):
    from tests.interop.share_fetch_wire import (
        join_share_group,
        set_group_configs,
        share_acknowledge,
        share_fetch,
        topic_id,
    )
    from tests.interop.test_share_kill9 import _serves_share_groups
    from tests.support.wire import Wire
    if not _serves_share_groups(target.bootstrap):
        pytest.skip("this broker does not serve share groups yet")
    offsets = Offsets(target.bootstrap)
    topic, group = unique_name("sgo-topic"), unique_name("sgo-members")
    offsets.create(topic, 1)
    offsets.produce(topic, 4)
    set_group_configs(target.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    with Wire(target.bootstrap) as wire:
        join_share_group(wire, group, [topic], 1)       # initialised at 0 by now
        altered = offsets.alter(group, {topic: [(0, 2)]})
        assert (altered.error_code, altered.error_message, altered.responses) == (
            NON_EMPTY_GROUP, "The group is not empty.", ())
        deleted = offsets.delete(group, [topic])
        assert (deleted.error_code, deleted.error_message, deleted.responses) == (
            NON_EMPTY_GROUP, "The group is not empty.", ())
        # Kafka initialises a share partition's state with start offset -1 when it assigns
        # it, and describes that until the partition first writes
        described = offsets.describe(group, {topic: (0,)})
        assert partitions(described) == {(topic, 0): (-1, -1, 0, NONE)}
        member, _ = join_share_group(wire, group, [topic], 1)
        tid = topic_id(wire, topic)
        fetched = share_fetch(wire, group=group, member=member, parts=[(tid, [(0, [])])])
        assert fetched.error_code == NONE
        described = offsets.describe(group, {topic: (0,)})
        assert partitions(described) == {(topic, 0): (-1, -1, 0, NONE)}     # fetched only
        acked = share_acknowledge(wire, group=group, member=member, epoch=1,
                                  parts=[(tid, [(0, [(0, 1, [1])])])])
        assert [p.error_code for t in acked.responses for p in t.partitions] == [NONE]
        # written: the start as it was when written (0, not yet past the 2 accepted), lag 2
        described = offsets.describe(group, {topic: (0,)})
        assert partitions(described) == {(topic, 0): (0, 2, 0, NONE)}
