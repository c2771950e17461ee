"""OffsetDelete, as Kafka's GroupCoordinator.handleDeleteOffsets decides it: an Empty group
loses what is asked; a consumer group with members keeps the offsets of topics it subscribes
to; other groups with members are refused; an Empty group left without offsets is gone."""
import pytest

from roster.coordinator.messages import OffsetDeleteReply
from roster.coordinator.classic.states import GroupState
from roster.protocol.consumer_protocol import Subscription, encode_subscription
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, OffsetKey, Record
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode
SUBSCRIBED_TO_T = (("range", encode_subscription(Subscription(("t",)))),)


def _offsets(h, group="g"):
    return {(f.topic, f.partition): f.offset for f in h.shard.fetch_offsets(group, None)}


def test_missing_group_is_not_found():
    h = Harness()
    assert h.delete_offsets([("t", 0)]) == OffsetDeleteReply(E.group_id_not_found)
    assert h.records == []


def test_empty_group_loses_the_partitions_asked_for_and_keeps_the_rest():
    h = Harness()
    h.commit({("t", 0): 5, ("t", 1): 6, ("u", 0): 7})
    before = len(h.records)
    reply = h.delete_offsets([("t", 0), ("u", 0), ("u", 9)])
    assert reply == OffsetDeleteReply(partitions=(
        ("t", 0, E.none), ("u", 0, E.none), ("u", 9, E.none)))  # none there: still NONE
    assert h.records[before:] == [Record(OffsetKey("g", "t", 0), None),
                                  Record(OffsetKey("g", "u", 0), None)]
    assert _offsets(h) == {("t", 1): 6}
    assert h.group().state is S.EMPTY


def test_deleting_the_last_offsets_of_an_empty_group_deletes_the_group():
    h = Harness()
    h.commit({("t", 0): 5, ("t", 1): 6})
    before = len(h.records)
    assert h.delete_offsets([("t", 1), ("t", 0), ("t", 0)]).partitions == (
        ("t", 1, E.none), ("t", 0, E.none), ("t", 0, E.none))
    assert h.records[before:] == [Record(OffsetKey("g", "t", 1), None),
                                  Record(OffsetKey("g", "t", 0), None),
                                  Record(GroupKey("g"), None)]
    assert h.group() is None


def test_stable_consumer_group_keeps_offsets_of_subscribed_topics():
    h = Harness()
    (member,) = h.stable_group("i-a", protocols=SUBSCRIBED_TO_T)
    h.commit({("t", 0): 1}, member_id=member, generation=1, instance="i-a")
    h.commit({("old", 0): 2}, member_id=member, generation=1, instance="i-a")
    reply = h.delete_offsets([("t", 0), ("old", 0)])
    assert reply.partitions == (("t", 0, E.group_subscribed_to_topic), ("old", 0, E.none))
    assert _offsets(h) == {("t", 0): 1}
    assert h.group().state is S.STABLE


@pytest.mark.parametrize("state", [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE])
def test_rebalancing_consumer_group_with_unreadable_subscriptions_keeps_everything(state):
    """The harness's members send metadata that is no consumer subscription: like Kafka, a
    subscription that cannot be read counts as subscribing to every topic."""
    h = Harness()
    h.commit({("t", 0): 1})
    h.join(instance="i-a")
    if state is S.COMPLETING_REBALANCE:
        h.advance(0)
    assert h.group().state is state
    assert h.delete_offsets([("t", 0)]).partitions == (("t", 0, E.group_subscribed_to_topic),)
    assert _offsets(h) == {("t", 0): 1}


def test_group_with_members_of_another_protocol_type_is_refused():
    h = Harness()
    h.commit({("t", 0): 1})
    h.join(instance="i-a", protocol_type="connect")
    assert h.delete_offsets([("t", 0)]) == OffsetDeleteReply(E.non_empty_group)
    assert _offsets(h) == {("t", 0): 1}


def test_offsets_go_only_once_the_tombstones_are_written():
    h = Harness()
    h.commit({("t", 0): 1, ("t", 1): 2})
    h.hold_next_write = True
    assert h.delete_offsets([("t", 0)]) is None
    assert _offsets(h) == {("t", 0): 1, ("t", 1): 2}
    h.release_writes()
    assert _offsets(h) == {("t", 1): 2}


def test_failed_write_deletes_nothing_and_says_why():
    h = Harness()
    h.commit({("t", 0): 1})
    h.fail_next_write = E.not_coordinator
    assert h.delete_offsets([("t", 0)]) == OffsetDeleteReply(E.not_coordinator)
    assert _offsets(h) == {("t", 0): 1} and h.group().state is S.EMPTY


def test_deleted_offsets_stay_deleted_after_a_restart():
    h = Harness()
    h.commit({("t", 0): 1, ("t", 1): 2})
    h.delete_offsets([("t", 0)])
    assert _offsets(h.restarted()) == {("t", 1): 2}


def test_a_group_losing_its_last_offsets_is_dead_while_that_is_written_and_back_if_it_fails():
    """Kafka marks the group Dead before writing: a member joining in between would otherwise
    lose its group when the tombstone is applied. If the write fails, nothing changed."""
    h = Harness()
    h.commit({("t", 0): 1})
    h.hold_next_write = True
    assert h.delete_offsets([("t", 0)]) is None
    assert h.group().state is S.DEAD
    assert h.reply(h.join()).error is E.coordinator_not_available
    h.release_writes(E.not_coordinator)
    assert h.group().state is S.EMPTY and _offsets(h) == {("t", 0): 1}
    assert h.reply(h.join()).error is E.member_id_required
