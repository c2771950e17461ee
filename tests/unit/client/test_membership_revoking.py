"""A classic member while its on_revoked callback runs (State.REVOKING), with a manual clock.

It is still a member of its generation: it heartbeats on its schedule until the callback has
returned, and only then sends the JoinGroup, as Kafka's Java client (its heartbeat thread runs
through onPartitionsRevoked; REBALANCE_IN_PROGRESS counts as a heartbeat received) and
librdkafka (it heartbeats while it waits for the rebalance callback) do."""
from __future__ import annotations

from roster.client.membership import (
    Fatal,
    Lost,
    RejoinWhenRevoked,
    Revoked,
    State,
)
from roster.protocol.consumer_protocol import decode_subscription
from roster.protocol.errors import ErrorCode as E
from tests.unit.client.test_membership import join_answer, joined, member, sends, sync_answer

INTERVAL = 100


def revoking(**config):
    """A member told at 1000 that the group rebalances: its callback is now running."""
    config.setdefault("heartbeat_interval_ms", INTERVAL)
    m = member(**config)
    joined(m, partitions=[("t", 0), ("t", 1)])
    assert sends(m.tick(1000), "Heartbeat")
    actions = m.on_heartbeat(E.rebalance_in_progress, 1000)
    assert actions == [Revoked((("t", 0), ("t", 1))), RejoinWhenRevoked()]
    assert m.state is State.REVOKING and m.owned == ()
    return m


def test_heartbeats_go_on_through_the_callback_and_stop_once_it_returns():
    m = revoking()
    assert m.next_deadline() == 1000 + INTERVAL
    assert m.tick(1099) == []
    for at in (1100, 1200, 1300):                     # the callback takes its time
        [beat] = sends(m.tick(at), "Heartbeat")
        assert beat.fields["generation_id"] == 1 and beat.fields["member_id"] == "m-1"
        # the group is rebalancing: expected, and no reason to stop or to rejoin early
        assert m.on_heartbeat(E.rebalance_in_progress, at) == []
        assert m.state is State.REVOKING and m.next_deadline() == at + INTERVAL
    [join] = sends(m.revoked(1350), "JoinGroup")      # the callback returned
    assert join.fields["member_id"] == "m-1" and m.state is State.JOINING
    assert m.next_deadline() is None and m.tick(5000) == []   # no heartbeats while joining
    # KIP-792: the rejoin still reports the last assignment and its generation to assignors
    subscription = decode_subscription(join.fields["protocols"][0][1])
    assert (subscription.owned_partitions, subscription.generation_id) == ((("t", (0, 1)),), 1)


def test_an_answer_to_a_heartbeat_after_the_rejoin_changes_nothing():
    m = revoking()
    sends(m.tick(1100), "Heartbeat")
    m.revoked(1150)
    assert m.on_heartbeat(E.rebalance_in_progress, 1160) == [] and m.state is State.JOINING


def test_other_heartbeat_errors_are_retried_after_the_backoff():
    m = revoking(retry_backoff_ms=30)
    sends(m.tick(1100), "Heartbeat")
    assert m.on_heartbeat(E.unknown_server_error, 1105) == []
    assert m.state is State.REVOKING and m.next_deadline() == 1135


def test_unknown_member_is_forgotten_at_once_and_the_rejoin_still_waits_for_the_callback():
    m = revoking()
    sends(m.tick(1100), "Heartbeat")
    assert m.on_heartbeat(E.unknown_member_id, 1105) == []     # nothing owned left to lose
    assert m.state is State.REVOKING and m.next_deadline() is None
    assert m.tick(2000) == []                                   # nothing to keep alive
    [join] = sends(m.revoked(2100), "JoinGroup")
    assert join.fields["member_id"] == "" and "unknown_member_id" in join.fields["reason"]
    assert decode_subscription(join.fields["protocols"][0][1]).owned_partitions == ()


def test_a_commit_of_an_old_generation_during_the_callback_does_not_send_a_join_early():
    m = revoking()
    assert m.on_commit({("t", 0): E.illegal_generation}, 1050) == []
    assert m.generation == -1 and m.member_id == "m-1" and not sends(m.tick(1100))
    assert len(sends(m.revoked(1200), "JoinGroup")) == 1


def test_fenced_during_the_callback_is_fatal_and_nothing_is_sent_after_it():
    m = revoking(group_instance_id="i-1")
    sends(m.tick(1100), "Heartbeat")
    actions = m.on_heartbeat(E.fenced_instance_id, 1105)
    assert any(isinstance(a, Fatal) for a in actions) and m.state is State.FATAL
    assert m.revoked(1200) == [] and m.tick(5000) == []


def test_a_lost_coordinator_is_looked_up_again_and_the_heartbeats_resume():
    """As Kafka's heartbeat thread: the member stays REVOKING, finds the coordinator again
    after the backoff (a failed lookup is retried) and heartbeats on at once."""
    m = revoking(retry_backoff_ms=50)
    sends(m.tick(1100), "Heartbeat")
    assert m.on_connection_lost(1105) == [] and m.state is State.REVOKING
    assert m.next_deadline() == 1155 and m.tick(1154) == []
    assert sends(m.tick(1155), "FindCoordinator") and m.tick(1156) == []   # one in flight
    assert m.on_find_coordinator(E.coordinator_not_available, 1160) == []
    assert sends(m.tick(1210), "FindCoordinator")
    assert m.on_find_coordinator(E.none, 1215) == [] and m.state is State.REVOKING
    assert sends(m.tick(1215), "Heartbeat")                      # at once
    assert m.on_heartbeat(E.rebalance_in_progress, 1220) == []
    assert sends(m.revoked(1250), "JoinGroup")


def test_a_callback_returning_while_the_coordinator_is_lost_rejoins_once_it_is_found():
    m = revoking(retry_backoff_ms=50)
    sends(m.tick(1100), "Heartbeat")
    m.on_connection_lost(1105)
    assert m.revoked(1110) == [] and m.state is State.UNJOINED   # the lookup is not due yet
    assert sends(m.tick(1155), "FindCoordinator")
    assert sends(m.on_find_coordinator(E.none, 1160), "JoinGroup")
    # ... and with the lookup already in flight, its answer is the one that rejoins
    m = revoking(retry_backoff_ms=50)
    sends(m.tick(1100), "Heartbeat")
    m.on_connection_lost(1105)
    sends(m.tick(1155), "FindCoordinator")
    assert m.revoked(1156) == [] and m.state is State.FINDING
    assert sends(m.on_find_coordinator(E.none, 1160), "JoinGroup")


def test_a_lookup_answered_after_closing_sends_nothing():
    m = revoking(retry_backoff_ms=50)
    sends(m.tick(1100), "Heartbeat")
    m.on_connection_lost(1105)
    sends(m.tick(1155), "FindCoordinator")
    m.close(1156)
    assert m.on_find_coordinator(E.none, 1160) == [] and m.state is State.CLOSED


def test_a_rejoin_asked_for_during_the_callback_is_the_one_that_follows_it():
    m = revoking()
    assert m.subscribe(["t", "u"], 1050) == []            # nothing more to revoke
    assert m.on_commit({("t", 0): E.rebalance_in_progress}, 1060) == []
    [join] = sends(m.revoked(1100), "JoinGroup")
    assert join.fields["reason"] == "a rebalance is in progress"


def test_closing_during_the_callback_sends_no_join():
    m = revoking()
    assert sends(m.close(1050), "LeaveGroup")
    assert m.revoked(1100) == [] and m.state is State.CLOSED


def test_a_cooperative_member_keeps_heartbeating_with_what_it_keeps_while_revoking():
    m = member(assignors=("cooperative-sticky",), heartbeat_interval_ms=INTERVAL)
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    m.on_join(join_answer(protocol="cooperative-sticky"), 0)
    m.on_sync(sync_answer([("t", 0), ("t", 1)]), 0)
    m.on_heartbeat(E.rebalance_in_progress, 10)
    m.on_join(join_answer(generation=2, protocol="cooperative-sticky"), 20)
    actions = m.on_sync(sync_answer([("t", 0)]), 30)
    assert actions == [Revoked((("t", 1),)), RejoinWhenRevoked()]
    assert m.state is State.REVOKING and m.owned == (("t", 0),)
    [beat] = sends(m.tick(130), "Heartbeat")
    assert beat.fields["generation_id"] == 2
    # losing the membership now loses what it kept
    assert m.on_heartbeat(E.illegal_generation, 135) == [Lost((("t", 0),))]
    assert sends(m.revoked(200), "JoinGroup")
