"""roster.client's share group member (client/share_consumer_membership.py) on a manual clock:
answers in, ShareGroupHeartbeat fields out, as Kafka 4.4's share member sends them."""
from __future__ import annotations

import uuid

from roster.client.member_actions import Fatal, MemberConfig, Send
from roster.client.share_consumer_membership import (
    OLD_SHARE_GROUPS,
    NeedTopicIds,
    ShareMembership,
    State,
)
from roster.protocol.errors import ErrorCode as E

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def joined(topics=("orders",), names=None, epoch=3, interval=5000):
    member = ShareMembership(MemberConfig("g", rack_id="r1"), "member-1")
    member.names.update(names or {T1: "orders"})
    member.subscribe(topics, 0)
    [find] = member.tick(0)
    assert find.api == "FindCoordinator" and find.fields["key"] == "g"
    assert member.on_find_coordinator(E.none, 0) == []
    [join] = member.tick(0)
    assert member.on_heartbeat(E.none, None, epoch, interval, None, 10) == []
    return member, join


def test_joins_with_epoch_0_its_subscription_and_rack_then_heartbeats_only_the_epoch():
    member, join = joined()
    assert join == Send("ShareGroupHeartbeat", {
        "group_id": "g", "member_id": "member-1", "member_epoch": 0, "rack_id": "r1",
        "subscribed_topic_names": ("orders",)})
    assert member.state is State.STABLE and member.epoch == 3
    assert member.next_deadline() == 10 + 5000      # the broker's interval
    assert member.tick(5009) == []
    [beat] = member.tick(5010)
    assert beat.fields == {"group_id": "g", "member_id": "member-1", "member_epoch": 3,
                           "rack_id": None, "subscribed_topic_names": None}


def test_an_assignment_by_topic_id_is_applied_at_once_and_acknowledged_by_a_heartbeat():
    member, _ = joined()
    assert member.on_heartbeat(E.none, None, 4, 5000, ((T1, (0, 2)),), 100) == []
    assert member.owned == (("orders", 0), ("orders", 2))
    assert member.owned_ids == {(T1, 0), (T1, 2)}
    assert member.next_deadline() == 100               # acknowledge the new assignment now
    # an unknown topic id is named first
    assert member.on_heartbeat(E.none, None, 5, 5000, ((T2, (1,)),), 200) == \
        [NeedTopicIds((T2,))]
    assert member.owned == (("orders", 0), ("orders", 2))
    member.names[T2] = "refunds"
    member.on_topic_names({}, 210)
    assert member.owned == (("refunds", 1),)


def test_a_changed_subscription_goes_out_at_once_and_only_until_heard():
    member, _ = joined()
    member.subscribe(["orders", "refunds"], 50)
    [beat] = member.tick(50)
    assert beat.fields["subscribed_topic_names"] == ("orders", "refunds")
    member.on_heartbeat(E.none, None, 4, 5000, None, 60)
    [beat] = member.tick(5060)
    assert beat.fields["subscribed_topic_names"] is None


def test_fenced_or_unknown_member_joins_again_with_the_same_id_and_nothing_assigned():
    for error in (E.fenced_member_epoch, E.unknown_member_id):
        member, _ = joined()
        member.on_heartbeat(E.none, None, 4, 5000, ((T1, (0,)),), 10)
        member.tick(10)
        assert member.on_heartbeat(error, None, -1, 0, None, 20) == []
        assert member.owned == () and member.epoch == 0 and member.state is State.JOINING
        [join] = member.tick(20)
        assert join.fields["member_id"] == "member-1" and join.fields["member_epoch"] == 0
        assert join.fields["subscribed_topic_names"] == ("orders",)


def test_a_lost_coordinator_is_found_again_and_the_epoch_kept():
    member, _ = joined()
    member.tick(5010)
    member.on_heartbeat(E.not_coordinator, None, -1, 0, None, 5020)
    assert member.state is State.UNJOINED
    assert member.tick(5020) == []                      # retry backoff (100 ms)
    [find] = member.tick(5120)
    assert find.api == "FindCoordinator"
    member.on_find_coordinator(E.none, 5130)
    [beat] = member.tick(5130)
    assert beat.fields["member_epoch"] == 3


def test_unsupported_version_is_fatal_in_kafkas_words():
    member, _ = joined()
    member.tick(5010)
    [fatal] = member.on_heartbeat(E.unsupported_version, None, -1, 0, None, 5020)
    assert isinstance(fatal, Fatal) and fatal.message == OLD_SHARE_GROUPS
    assert member.state is State.FATAL and member.tick(99999) == []


def test_a_retriable_error_repeats_the_heartbeat_after_the_backoff():
    member, _ = joined()
    member.tick(5010)
    assert member.on_heartbeat(E.coordinator_load_in_progress, None, -1, 0, None, 5020) == []
    assert member.tick(5050) == []
    [beat] = member.tick(5120)
    assert beat.fields["member_epoch"] == 3


def test_closing_leaves_with_epoch_minus_1_and_a_member_never_joined_sends_nothing():
    member, _ = joined()
    [leave] = member.close(100)
    assert leave.fields == {"group_id": "g", "member_id": "member-1", "member_epoch": -1,
                            "rack_id": None, "subscribed_topic_names": None}
    assert member.state is State.CLOSED and member.tick(10**6) == []
    fresh = ShareMembership(MemberConfig("g"), "m2")
    fresh.subscribe(["orders"], 0)
    fresh.tick(0)
    assert fresh.close(5) == [] and fresh.state is State.CLOSED


def test_unsubscribing_leaves_and_a_later_subscribe_joins_again_with_the_same_id():
    member, _ = joined()
    member.on_heartbeat(E.none, None, 4, 5000, ((T1, (0,)),), 10)
    [leave] = member.unsubscribe(20)
    assert leave.fields["member_epoch"] == -1 and member.owned == ()
    assert member.state is State.UNJOINED and member.tick(10**6) == []   # nothing to read
    member.subscribe(["orders"], 30)
    [find] = member.tick(30)
    member.on_find_coordinator(E.none, 40)
    [join] = member.tick(40)
    assert join.fields["member_epoch"] == 0 and join.fields["member_id"] == "member-1"
    assert join.fields["subscribed_topic_names"] == ("orders",)
