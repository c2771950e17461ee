"""Offset expiry for consumer groups (KIP-848): their offsets are kept beside the group, in the
classic coordinator's group of the same id (without members); the topics the consumer group's
members subscribe to never expire there, the others do, counted from their commit."""
from __future__ import annotations

from roster.protocol.group_records import GroupKey, OffsetKey, Record
from tests.unit.coordinator.harness import Harness


def test_subscribed_topics_of_a_consumer_group_keep_their_offsets():
    h = Harness(offsets_retention_ms=1000)
    subscribed = {"cg": frozenset({"t"})}
    h.coordinator.consumer_topics = lambda group_id: subscribed.get(group_id)
    h.commit({("t", 0): 1, ("u", 0): 2}, group="cg")
    h.commit({("t", 0): 3}, group="simple")
    h.advance(1000)
    before = len(h.records)
    h.apply(h.coordinator.expire_offsets(h.now))
    assert h.records[before:] == [Record(OffsetKey("cg", "u", 0), None),
                                  Record(OffsetKey("simple", "t", 0), None),
                                  Record(GroupKey("simple"), None)]
    assert list(h.group("cg").offsets) == [("t", 0)]
    # once the consumer group is gone, they expire like any simple group's
    del subscribed["cg"]
    h.apply(h.coordinator.expire_offsets(h.now))
    assert h.group("cg") is None
