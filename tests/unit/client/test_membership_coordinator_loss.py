"""A member that loses its coordinator, with a manual clock.

A member of a generation only forgets the coordinator: it keeps its member id, generation and
partitions, looks the coordinator up again after retry.backoff.ms (one lookup at a time) and
heartbeats on in the same generation; the heartbeat's answer alone decides whether it rejoins.
That is Kafka's Java client (AbstractCoordinator.markCoordinatorUnknown only drops the
coordinator; the heartbeat thread looks it up again and goes on heartbeating) and librdkafka
(rd_kafka_cgrp_coord_dead queries the coordinator, the join state stays). A JoinGroup would
start a rebalance of the whole group. Mid-rebalance, a lost coordinator means finding it again
and sending the JoinGroup again, as Java's joinGroupIfNeeded does. The KIP-848 member keeps
its epoch likewise (Java's ConsumerMembershipManager only finds the coordinator again)."""
from __future__ import annotations

import pytest

from roster.client import consumer_membership
from roster.client.consumer_membership import ConsumerMembership
from roster.client.membership import (
    Assigned,
    Fatal,
    LeaveWhenRevoked,
    Lost,
    MemberConfig,
    RejoinWhenRevoked,
    Revoked,
    State,
)
from roster.protocol.errors import ErrorCode as E
from tests.unit.client.test_membership import join_answer, joined, member, sends, sync_answer

INTERVAL, BACKOFF = 100, 50
OWNED = (("t", 0), ("t", 1))

LOSSES = {
    "heartbeat NOT_COORDINATOR": lambda m, now: m.on_heartbeat(E.not_coordinator, now),
    "heartbeat COORDINATOR_NOT_AVAILABLE":
        lambda m, now: m.on_heartbeat(E.coordinator_not_available, now),
    "commit NOT_COORDINATOR": lambda m, now: m.on_commit({("t", 0): E.not_coordinator}, now),
    "connection dropped or timed out": lambda m, now: m.on_connection_lost(now),
}


def stable(**config):
    """Stable in generation 1 as m-1 with t-0 and t-1 since 0; a heartbeat in flight at 1000."""
    config.setdefault("heartbeat_interval_ms", INTERVAL)
    config.setdefault("retry_backoff_ms", BACKOFF)
    m = member(**config)
    joined(m, partitions=OWNED)
    assert sends(m.tick(1000), "Heartbeat")
    return m


def found_again(m, lost_at=1000):
    """The lookup after the backoff, answered: the member heartbeats at once."""
    assert m.next_deadline() == lost_at + BACKOFF
    assert m.tick(lost_at + BACKOFF - 1) == []
    [find] = sends(m.tick(lost_at + BACKOFF), "FindCoordinator")
    assert find.fields["key"] == "g"
    assert m.on_find_coordinator(E.none, lost_at + BACKOFF + 5) == []
    [beat] = sends(m.tick(lost_at + BACKOFF + 5), "Heartbeat")
    return beat


@pytest.mark.parametrize("loss", LOSSES.values(), ids=LOSSES.keys())
def test_a_stable_member_keeps_its_generation_and_heartbeats_on_once_found(loss):
    m = stable()
    assert loss(m, 1000) == []                      # nothing revoked, lost or sent
    assert (m.state, m.member_id, m.generation, m.owned) == (State.STABLE, "m-1", 1, OWNED)
    # a commit meanwhile is still this generation's (the driver sends it once it has a
    # coordinator connection)
    commit = m.commit_request({("t", 0): 7}).fields
    assert (commit["member_id"], commit["generation_id_or_member_epoch"]) == ("m-1", 1)
    beat = found_again(m)
    assert (beat.fields["member_id"], beat.fields["generation_id"]) == ("m-1", 1)
    assert m.on_heartbeat(E.none, 1060) == [] and m.state is State.STABLE
    assert m.next_deadline() == 1060 + INTERVAL and sends(m.tick(1160), "Heartbeat")
    assert m.owned == OWNED and m.generation == 1


def test_one_lookup_at_a_time_and_a_failed_one_is_tried_again_after_the_backoff():
    m = stable()
    m.on_connection_lost(1000)
    assert sends(m.tick(1050), "FindCoordinator")
    assert m.next_deadline() is None and m.tick(1200) == []      # the one in flight
    assert m.on_commit({("t", 0): E.not_coordinator}, 1210) == []   # lost again meanwhile
    assert m.tick(1260) == []                                    # still the one in flight
    assert m.on_find_coordinator(E.coordinator_not_available, 1300) == []
    assert m.state is State.STABLE and m.next_deadline() == 1350 and m.tick(1349) == []
    assert sends(m.tick(1350), "FindCoordinator")
    assert m.on_find_coordinator(E.none, 1360) == []
    assert [s.api for s in sends(m.tick(1360))] == ["Heartbeat"]


def test_no_heartbeat_goes_while_the_coordinator_is_unknown():
    """A heartbeat answer that was already on its way does not restart the heartbeats before
    the coordinator is found again."""
    m = stable()
    m.on_commit({("t", 0): E.not_coordinator}, 1001)    # the heartbeat of 1000 still out
    assert m.on_heartbeat(E.none, 1002) == []
    assert m.next_deadline() == 1051
    assert [s.api for s in sends(m.tick(1051))] == ["FindCoordinator"]
    assert m.tick(5000) == []                            # no heartbeat without a coordinator


def test_the_heartbeat_answer_decides_a_rejoin_in_the_same_member_id():
    m = stable()
    m.on_heartbeat(E.not_coordinator, 1000)
    found_again(m)
    # the group rebalanced meanwhile: now the member rejoins, eagerly revoking first
    assert m.on_heartbeat(E.rebalance_in_progress, 1060) == [Revoked(OWNED), RejoinWhenRevoked()]
    [join] = sends(m.revoked(1070), "JoinGroup")
    assert join.fields["member_id"] == "m-1"


@pytest.mark.parametrize("error, member_id", [(E.unknown_member_id, ""),
                                              (E.illegal_generation, "m-1")],
                         ids=["UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"])
def test_a_member_the_group_dropped_meanwhile_loses_its_partitions_and_rejoins(error, member_id):
    m = stable()
    m.on_connection_lost(1000)
    found_again(m)
    actions = m.on_heartbeat(error, 1060)
    assert actions[0] == Lost(OWNED)
    [join] = sends(actions, "JoinGroup")
    assert join.fields["member_id"] == member_id and m.state is State.JOINING


def test_a_fenced_static_member_is_fatal_once_the_coordinator_is_found():
    m = stable(group_instance_id="i-1")
    m.on_connection_lost(1000)
    found_again(m)
    actions = m.on_heartbeat(E.fenced_instance_id, 1060)
    assert actions[0] == Lost(OWNED) and isinstance(actions[-1], Fatal)


def test_a_rejoin_asked_for_while_the_coordinator_is_unknown_joins_once_it_is_found():
    """A cooperative member keeps its partitions while rejoining: the JoinGroup waits for the
    lookup (the one already due, not a second)."""
    m = member(assignors=("cooperative-sticky",), heartbeat_interval_ms=INTERVAL,
               retry_backoff_ms=BACKOFF)
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    m.on_join(join_answer(protocol="cooperative-sticky"), 0)
    m.on_sync(sync_answer(OWNED), 0)
    m.on_connection_lost(1000)
    assert m.subscribe(["t", "u"], 1010) == [] and m.owned == OWNED   # no JoinGroup yet
    assert m.state is State.UNJOINED and m.tick(1049) == []
    assert sends(m.tick(1050), "FindCoordinator")
    [join] = sends(m.on_find_coordinator(E.none, 1060), "JoinGroup")
    assert join.fields["member_id"] == "m-1"
    assert join.fields["reason"] == "subscription changed to t, u"


def test_an_old_generation_told_while_the_coordinator_is_unknown_rejoins_once_found():
    m = stable()
    m.on_connection_lost(1000)
    assert sends(m.tick(1050), "FindCoordinator")
    actions = m.on_commit({("t", 0): E.illegal_generation}, 1055)
    assert actions == [Lost(OWNED)] and m.state is State.FINDING     # the lookup in flight
    [join] = sends(m.on_find_coordinator(E.none, 1060), "JoinGroup")
    assert join.fields["member_id"] == "m-1" and m.tick(5000) == []


@pytest.mark.parametrize("stage", ["JoinGroup", "SyncGroup"])
def test_a_coordinator_lost_mid_rebalance_is_found_again_and_the_join_sent_again(stage):
    m = stable()
    m.on_heartbeat(E.rebalance_in_progress, 1000)
    sends(m.revoked(1010), "JoinGroup")
    if stage == "SyncGroup":
        assert sends(m.on_join(join_answer(generation=2), 1020), "SyncGroup")
    assert m.on_connection_lost(1030) == [] and m.state is State.UNJOINED
    assert m.tick(1079) == []
    assert sends(m.tick(1080), "FindCoordinator")
    [join] = sends(m.on_find_coordinator(E.none, 1090), "JoinGroup")
    assert join.fields["member_id"] == "m-1"
    m.on_join(join_answer(generation=3), 1100)
    assert m.on_sync(sync_answer(OWNED), 1110) == [Assigned(OWNED)] and m.generation == 3


def test_closing_while_the_coordinator_is_unknown_leaves_once_it_is_found():
    m = stable()
    m.on_connection_lost(1000)
    assert m.close(1010) == [Revoked(OWNED), LeaveWhenRevoked()]
    assert sends(m.tick(1050), "FindCoordinator")
    m.on_find_coordinator(E.none, 1060)
    assert sends(m.tick(1060), "Heartbeat")
    assert sends(m.finish_leaving(1070), "LeaveGroup")


# -- KIP-848 (ConsumerGroupHeartbeat) -----------------------------------------------------------

def consumer_member_stable():
    m = ConsumerMembership(MemberConfig("g", retry_backoff_ms=BACKOFF), member_id="a")
    m.subscribe(["t"], 0)
    sends(m.tick(0), "FindCoordinator")
    m.on_find_coordinator(E.none, 0)
    sends(m.tick(0), "ConsumerGroupHeartbeat")
    m.on_heartbeat(E.none, 5, INTERVAL, ((b"t-id", (0, 1)),), 0)
    assert m.on_topic_names({b"t-id": "t"}, 0) == [Assigned(OWNED)]
    sends(m.tick(0), "ConsumerGroupHeartbeat")
    m.on_heartbeat(E.none, 5, INTERVAL, None, 0)
    return m


@pytest.mark.parametrize("error", [E.not_coordinator, E.coordinator_not_available, None])
def test_a_consumer_protocol_member_keeps_its_epoch_and_partitions(error):
    m = consumer_member_stable()
    sends(m.tick(1000), "ConsumerGroupHeartbeat")
    if error is None:
        assert m.on_connection_lost(1000) == []
    else:
        assert m.on_heartbeat(error, 0, 0, None, 1000) == []
    assert (m.epoch, m.owned) == (5, OWNED)
    assert m.tick(1049) == [] and sends(m.tick(1050), "FindCoordinator")
    m.on_find_coordinator(E.none, 1060)
    assert m.state is consumer_membership.State.STABLE
    [beat] = sends(m.tick(1060), "ConsumerGroupHeartbeat")
    # the same epoch, with every field (a new coordinator connection), its partitions included
    assert beat.fields["member_epoch"] == 5 and beat.fields["member_id"] == "a"
    assert beat.fields["topic_partitions"] == ((b"t-id", [0, 1]),)
    assert beat.fields["subscribed_topic_names"] == ("t",)
