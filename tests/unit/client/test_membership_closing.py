"""A classic member closing, and finding its coordinator, with a manual clock.

Closing gives the partitions up first and leaves after the callback (State.LEAVING), as Kafka's
Java client (ConsumerCoordinator.onLeavePrepare runs onPartitionsRevoked, or onPartitionsLost
between generations, before maybeLeaveGroup sends LeaveGroup) and librdkafka do: a commit from
on_revoked is still a member's. A JoinGroup never goes before a revocation's callback has
returned, and there is one FindCoordinator in flight at a time (Kafka's lookupCoordinator)."""
from __future__ import annotations

from roster.client.membership import (
    LeaveWhenRevoked,
    Lost,
    RejoinWhenRevoked,
    Revoked,
    State,
)
from roster.protocol.errors import ErrorCode as E
from tests.unit.client.test_membership import (
    join_answer,
    joined,
    member,
    sends,
    sync_answer,
)

INTERVAL = 100
OWNED = (("t", 0), ("t", 1))


def stable(**config):
    """A member stable in generation 1 with t-0 and t-1 since time 0."""
    config.setdefault("heartbeat_interval_ms", INTERVAL)
    config.setdefault("retry_backoff_ms", 50)
    m = member(**config)
    joined(m, partitions=OWNED)
    return m


def test_close_runs_on_revoked_first_heartbeating_and_leaves_once_it_returns():
    m = stable()
    actions = m.close(1000)
    assert actions == [Revoked(OWNED), LeaveWhenRevoked()]   # no LeaveGroup yet
    assert m.state is State.LEAVING and m.owned == ()
    # the callback commits as the member it still is
    commit = m.commit_request({("t", 0): 7}).fields
    assert (commit["member_id"], commit["generation_id_or_member_epoch"]) == ("m-1", 1)
    for at in (1000, 1100, 1200):          # a slow callback: the heartbeats go on
        [beat] = sends(m.tick(at), "Heartbeat")
        assert beat.fields["generation_id"] == 1
        # a rebalance meanwhile changes nothing: no JoinGroup, the member is on its way out
        assert m.on_heartbeat(E.rebalance_in_progress, at) == []
    assert m.on_commit({("t", 0): E.rebalance_in_progress}, 1210) == []
    [leave] = sends(m.finish_leaving(1250), "LeaveGroup")
    assert leave.fields["members"] == [("m-1", None, "the consumer is closing")]
    assert m.state is State.CLOSED and m.tick(5000) == [] and m.finish_leaving(5000) == []
    assert m.close(5000) == []


def test_a_static_member_runs_the_callback_first_and_stays_in_the_group():
    m = stable(group_instance_id="i-1")
    assert m.close(1000) == [Revoked(OWNED), LeaveWhenRevoked()]
    assert sends(m.tick(1000), "Heartbeat")
    assert m.finish_leaving(1100) == [] and m.state is State.CLOSED     # KIP-345: no leave
    # leave() leaves for good, static or not, after the callback all the same
    m = stable(group_instance_id="i-1")
    assert m.leave(1000) == [Revoked(OWNED), LeaveWhenRevoked()]
    [leave] = sends(m.finish_leaving(1100), "LeaveGroup")
    assert leave.fields["members"] == [("m-1", "i-1", "the consumer is closing")]


def test_closing_between_generations_reports_the_partitions_lost():
    """A cooperative member keeps its partitions while it rejoins; closing then, its commits
    would be refused (Kafka's client calls onPartitionsLost while a rebalance is in progress)."""
    m = member(assignors=("cooperative-sticky",), heartbeat_interval_ms=INTERVAL)
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    m.on_join(join_answer(protocol="cooperative-sticky"), 0)
    m.on_sync(sync_answer(OWNED), 0)
    assert sends(m.subscribe(["t", "u"], 500), "JoinGroup") and m.owned == OWNED
    assert m.close(1000) == [Lost(OWNED), LeaveWhenRevoked()]
    assert m.tick(1000) == [] and m.next_deadline() is None      # not heartbeating
    assert m.on_join(join_answer(generation=2), 1010) == []      # the answer is too late
    assert sends(m.finish_leaving(1100), "LeaveGroup")


def test_a_member_dropped_by_the_group_while_closing_sends_no_leave():
    m = stable()
    m.close(1000)
    sends(m.tick(1000), "Heartbeat")
    assert m.on_heartbeat(E.unknown_member_id, 1005) == []
    assert m.tick(2000) == [] and m.finish_leaving(2100) == [] and m.state is State.CLOSED


def test_a_coordinator_lost_before_closing_is_found_again_for_the_callback():
    m = stable()
    assert m.on_connection_lost(900) == [] and m.owned == OWNED   # lookup at 950
    assert m.close(1000) == [Revoked(OWNED), LeaveWhenRevoked()]
    assert m.state is State.LEAVING
    assert sends(m.tick(1000), "FindCoordinator") and m.tick(1001) == []
    assert m.on_find_coordinator(E.none, 1010) == []
    assert sends(m.tick(1010), "Heartbeat")        # a member again while the callback runs
    assert sends(m.finish_leaving(1100), "LeaveGroup")


def test_a_callback_returning_with_no_coordinator_found_sends_no_leave():
    m = stable()
    m.on_connection_lost(900)
    m.close(1000)
    sends(m.tick(1000), "FindCoordinator")
    assert m.finish_leaving(1005) == [] and m.state is State.CLOSED   # nowhere to send it
    assert m.on_find_coordinator(E.none, 1010) == [] and m.tick(2000) == []


def test_a_fatal_error_while_closing_ends_closed_without_a_leave():
    m = stable(group_instance_id="i-1")
    m.leave(1000)
    sends(m.tick(1000), "Heartbeat")
    m.on_heartbeat(E.fenced_instance_id, 1005)
    assert m.state is State.FATAL
    assert m.finish_leaving(1100) == [] and m.state is State.CLOSED


def test_a_rejoin_asked_for_while_the_coordinator_is_lost_waits_for_the_callback():
    """Still owning partitions, the coordinator lost: an eager rejoin revokes them, and the
    JoinGroup waits for the callback, the lookup going on meanwhile."""
    m = stable()
    m.on_connection_lost(900)                          # lookup due at 950
    actions = m.subscribe(["t", "u"], 1000)
    assert actions == [Revoked(OWNED), RejoinWhenRevoked()] and m.state is State.REVOKING
    [find] = sends(m.tick(1000), "FindCoordinator")
    assert m.on_find_coordinator(E.none, 1010) == []   # no JoinGroup: the callback runs
    assert sends(m.tick(1010), "Heartbeat")
    assert m.on_heartbeat(E.rebalance_in_progress, 1020) == []
    [join] = sends(m.revoked(1100), "JoinGroup")
    assert join.fields["member_id"] == "m-1" and m.state is State.JOINING


def test_a_rejoin_asked_for_while_finding_waits_for_the_callback():
    m = stable()
    m.on_connection_lost(900)
    sends(m.tick(950), "FindCoordinator")              # owning t-0 and t-1
    actions = m.on_commit({("t", 0): E.rebalance_in_progress}, 960)
    assert actions == [Revoked(OWNED), RejoinWhenRevoked()] and m.tick(970) == []
    assert m.on_find_coordinator(E.none, 980) == []    # the lookup in flight: no JoinGroup
    assert sends(m.revoked(1000), "JoinGroup")
    # ... and a callback returning before the lookup's answer joins on that answer
    m = stable()
    m.on_connection_lost(900)
    sends(m.tick(950), "FindCoordinator")
    m.on_commit({("t", 0): E.rebalance_in_progress}, 960)
    assert m.revoked(970) == [] and m.state is State.FINDING
    assert sends(m.on_find_coordinator(E.none, 980), "JoinGroup")


def test_one_lookup_at_a_time_and_a_second_request_joins_it():
    m = member(retry_backoff_ms=50)
    [find] = sends(m.subscribe(["t"], 0), "FindCoordinator")
    # the coordinator is gone again (a commit told) while the lookup is in flight
    assert m.on_commit({("t", 0): E.not_coordinator}, 10) == [] and m.state is State.UNJOINED
    assert m.tick(60) == [] and m.state is State.FINDING     # it waits for the one in flight
    assert m.subscribe(["t", "u"], 70) == []                 # so does a rejoin asked for
    [join] = sends(m.on_find_coordinator(E.none, 80), "JoinGroup")
    assert m.on_find_coordinator(E.none, 90) == [] and m.tick(200) == []
    # an answer that comes while a lookup is only due does not stand in for it
    m = member(retry_backoff_ms=50)
    sends(m.subscribe(["t"], 0), "FindCoordinator")
    m.on_commit({("t", 0): E.not_coordinator}, 10)
    assert m.on_find_coordinator(E.none, 20) == [] and m.state is State.UNJOINED
    assert sends(m.tick(60), "FindCoordinator")
    assert sends(m.on_find_coordinator(E.none, 70), "JoinGroup")


def test_a_lookup_in_flight_during_a_revocation_is_the_one_the_member_waits_for():
    m = stable()
    sends(m.tick(100), "Heartbeat")
    m.on_heartbeat(E.rebalance_in_progress, 105)           # REVOKING
    m.on_connection_lost(110)
    sends(m.tick(160), "FindCoordinator")
    m.on_commit({("t", 0): E.not_coordinator}, 170)        # lost again: due at 220
    assert m.tick(220) == [] and m.next_deadline() is None  # the first is still in flight
    assert m.on_find_coordinator(E.none, 230) == [] and sends(m.tick(230), "Heartbeat")
