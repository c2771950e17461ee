"""Offset expiry for consumer groups (KIP-848): their offsets live in the shard's OffsetStore
like any group's; the topics the consumer group's members subscribe to never expire, the others
do, counted from their commit. A rule spanning both group types, driven through one shard."""
from __future__ import annotations

from roster.protocol.group_records import GroupKey, OffsetKey, Record
from tests.unit.coordinator.consumer.harness import ConsumerHarness


def test_subscribed_topics_of_a_consumer_group_keep_their_offsets():
    h = ConsumerHarness({"t": 1, "u": 1}, )
    h.shard.config = h.shard.config.__class__(offsets_retention_ms=1000)
    reply = h.join("a", topics=("t",), group="cg")
    h.commit({("t", 0): 1, ("u", 0): 2}, "a", reply.member_epoch, group="cg")
    h.commit({("t", 0): 3}, group="simple")
    h.advance(1000)
    before = len(h.records)
    h.expire_offsets()
    assert h.records[before:] == [Record(OffsetKey("cg", "u", 0), None),
                                  Record(OffsetKey("simple", "t", 0), None),
                                  Record(GroupKey("simple"), None)]
    assert list(h.offsets("cg")) == [("t", 0)]
    # once nobody subscribes, they expire from their commit; the empty group stays
    h.heartbeat("a", -1, group="cg")
    h.expire_offsets()
    assert h.offsets("cg") == {} and "cg" in h.coordinator.groups
