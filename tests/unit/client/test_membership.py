"""The member's state machine with a manual clock: every path the group protocol can take."""
from __future__ import annotations

import pytest

from roster.client.membership import (
    Assigned,
    Fatal,
    FencedError,
    Lost,
    MemberConfig,
    Membership,
    NeedMetadata,
    RejoinWhenRevoked,
    Revoked,
    Send,
    State,
)
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from roster.protocol.errors import ErrorCode as E

JOIN = response_schema(11, 9)
SYNC = response_schema(14, 5)


def join_answer(error=E.none, member_id="m-1", generation=1, leader="m-0", members=(),
                skip=False, protocol="range"):
    entry = element(JOIN, "members")
    return make(JOIN, error_code=error, generation_id=generation, protocol_type="consumer",
                protocol_name=protocol, leader=leader, skip_assignment=skip, member_id=member_id,
                members=tuple(make(entry, member_id=m, group_instance_id=i, metadata=meta)
                              for m, i, meta in members))


def sync_answer(partitions=(), error=E.none):
    by_topic = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    data = encode_assignment(Assignment(tuple((t, tuple(ps)) for t, ps in sorted(by_topic.items()))))
    return make(SYNC, error_code=error, protocol_type="consumer", protocol_name="range",
                assignment=data)


def sends(actions, api=None):
    found = [a for a in actions if isinstance(a, Send)]
    return [a for a in found if api is None or a.api == api]


def revoke_then(m: Membership, actions: list, now: int) -> list:
    """Play the driver: the Revoked callback returns, then the member rejoins."""
    if RejoinWhenRevoked() not in actions:
        return actions
    revoked = [i for i, a in enumerate(actions) if isinstance(a, Revoked)]
    assert m.state is State.REVOKING and not sends(actions, "JoinGroup")
    assert revoked and revoked[-1] < actions.index(RejoinWhenRevoked())
    return actions + m.revoked(now)


def member(**config) -> Membership:
    config.setdefault("group_id", "g")
    return Membership(MemberConfig(**config))


def joined(m: Membership, now=0, partitions=(("t", 0),), member_id="m-1", generation=1):
    m.subscribe(["t"], now)
    m.on_find_coordinator(E.none, now)
    m.on_join(join_answer(member_id=member_id, generation=generation), now)
    return m.on_sync(sync_answer(partitions), now)


def test_static_member_joins_without_member_id_round_trip_and_sends_v3_subscription():
    m = member(group_instance_id="i-1")
    assert sends(m.subscribe(["t", "a"], 0), "FindCoordinator")
    join = sends(m.on_find_coordinator(E.none, 0), "JoinGroup")[0]
    assert join.fields["member_id"] == "" and join.fields["group_instance_id"] == "i-1"
    name, metadata = join.fields["protocols"][0]
    subscription = decode_subscription(metadata)
    assert (name, subscription.version, subscription.topics, subscription.generation_id) == \
        ("range", 3, ("a", "t"), -1)


def test_dynamic_member_retries_with_the_id_it_is_given():
    m = member()
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    again = sends(m.on_join(join_answer(E.member_id_required, member_id="m-7"), 0), "JoinGroup")
    assert again[0].fields["member_id"] == "m-7"


def test_follower_syncs_gets_assigned_and_heartbeats_on_time():
    m = member(heartbeat_interval_ms=3000)
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    sync = sends(m.on_join(join_answer(), 10), "SyncGroup")[0]
    assert sync.fields["assignments"] == {} and sync.fields["generation_id"] == 1
    actions = m.on_sync(sync_answer([("t", 0), ("t", 1)]), 20)
    assert Assigned((("t", 0), ("t", 1))) in actions and m.state is State.STABLE
    assert m.tick(3019) == []
    assert sends(m.tick(3020), "Heartbeat")[0].fields["generation_id"] == 1
    m.on_heartbeat(E.none, 3025)
    assert m.next_deadline() == 6025


def test_leader_waits_for_metadata_then_assigns_everyone():
    m = member()
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    meta = encode_subscription(Subscription(("t",)))
    actions = m.on_join(join_answer(member_id="m-0", leader="m-0",
                                    members=[("m-0", None, meta), ("m-1", None, meta)]), 0)
    assert actions == [NeedMetadata(("t",))] and m.state is State.AWAITING_METADATA
    sync = sends(m.on_metadata({"t": 3}, 0), "SyncGroup")[0]
    assert set(sync.fields["assignments"]) == {"m-0", "m-1"}


def test_kip_814_leader_with_skip_assignment_keeps_assignment_and_watches_partitions():
    m = member(group_instance_id="i-0")
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)

    def owned(parts):
        return encode_subscription(Subscription(("t",), None, (("t", parts),), 4))

    actions = m.on_join(join_answer(member_id="m-0", leader="m-0", skip=True, generation=4,
                                    members=[("m-0", "i-0", owned((0,))),
                                             ("m-1", "i-1", owned((1,)))]), 0)
    sync = sends(actions, "SyncGroup")[0]
    assert sync.fields["assignments"] == {} and NeedMetadata(("t",)) in actions
    m.on_sync(sync_answer([("t", 0)]), 0)
    assert m.on_metadata({"t": 2}, 100) == []              # the baseline after the restart
    assert m.on_metadata({"t": 2}, 150) == []              # unchanged: nothing to do
    rejoin = sends(revoke_then(m, m.on_metadata({"t": 3}, 200), 200), "JoinGroup")  # grown
    assert rejoin and "partitions changed" in rejoin[0].fields["reason"]


def test_rebalance_in_progress_revokes_eagerly_and_rejoins():
    m = member()
    joined(m, partitions=[("t", 0)])
    actions = revoke_then(m, m.on_heartbeat(E.rebalance_in_progress, 100), 150)
    assert Revoked((("t", 0),)) in actions and sends(actions, "JoinGroup")
    # KIP-792: the rejoin still reports the last assignment and its generation to assignors
    subscription = decode_subscription(sends(actions, "JoinGroup")[0].fields["protocols"][0][1])
    assert (subscription.owned_partitions, subscription.generation_id) == ((("t", (0,)),), 1)


@pytest.mark.parametrize("error,member_id_after", [(E.illegal_generation, "m-1"),
                                                    (E.unknown_member_id, "")])
def test_stale_generation_or_unknown_member_loses_partitions(error, member_id_after):
    m = member()
    joined(m, partitions=[("t", 0)])
    actions = m.on_heartbeat(error, 100)
    assert Lost((("t", 0),)) in actions
    join = sends(actions, "JoinGroup")[0]
    assert join.fields["member_id"] == member_id_after
    assert decode_subscription(join.fields["protocols"][0][1]).owned_partitions == ()


def test_fenced_is_fatal_once_and_blocks_commits():
    m = member(group_instance_id="i-1")
    joined(m, partitions=[("t", 0)])
    actions = m.on_heartbeat(E.fenced_instance_id, 100)
    assert Lost((("t", 0),)) in actions and any(isinstance(a, Fatal) for a in actions)
    assert m.state is State.FATAL and m.tick(10_000) == []
    with pytest.raises(FencedError):
        m.commit_request({("t", 0): 5})


@pytest.mark.parametrize("error", [E.not_coordinator, E.coordinator_not_available])
def test_coordinator_loss_rediscovers_after_backoff(error):
    """A stable member stays in its generation (test_membership_coordinator_loss.py)."""
    m = member(retry_backoff_ms=100)
    joined(m)
    assert m.on_heartbeat(error, 1000) == [] and m.state is State.STABLE
    assert m.tick(1099) == []
    assert sends(m.tick(1100), "FindCoordinator")


def test_join_errors_that_cannot_be_retried_are_fatal():
    m = member()
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    actions = m.on_join(join_answer(E.inconsistent_group_protocol), 0)
    assert any(isinstance(a, Fatal) for a in actions) and m.state is State.FATAL


def test_load_in_progress_retries_the_join():
    m = member(retry_backoff_ms=50)
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    assert m.on_join(join_answer(E.coordinator_load_in_progress), 0) == []
    assert sends(m.tick(50), "FindCoordinator")


def test_close_leaves_only_when_dynamic_and_leave_always_leaves():
    """(After the callback for its partitions: test_membership_closing.py.)"""
    static = member(group_instance_id="i-1")
    joined(static)
    assert sends(static.close(0) + static.finish_leaving(0), "LeaveGroup") == []
    dynamic = member()
    joined(dynamic)
    assert sends(dynamic.close(0) + dynamic.finish_leaving(0), "LeaveGroup")[0] \
        .fields["members"] == [("m-1", None, "the consumer is closing")]
    explicit = member(group_instance_id="i-2")
    joined(explicit)
    assert sends(explicit.leave(0) + explicit.finish_leaving(0), "LeaveGroup")[0] \
        .fields["members"][0][1] == "i-2"


def test_commit_errors_drive_the_membership():
    m = member()
    joined(m, partitions=[("t", 0)])
    request = m.commit_request({("t", 0): 9})
    assert request.fields["generation_id_or_member_epoch"] == 1
    assert sends(revoke_then(m, m.on_commit({("t", 0): E.rebalance_in_progress}, 10), 10),
                 "JoinGroup")
    m2 = member()
    joined(m2, partitions=[("t", 0)])
    assert Lost((("t", 0),)) in m2.on_commit({("t", 0): E.illegal_generation}, 10)


def test_cooperative_member_revokes_then_rejoins_keeping_the_rest():
    m = member(assignors=("cooperative-sticky",))
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    m.on_join(join_answer(protocol="cooperative-sticky"), 0)
    m.on_sync(sync_answer([("t", 0), ("t", 1)]), 0)
    # the next rebalance: the heartbeat asks to rejoin; cooperative members keep their partitions
    actions = m.on_heartbeat(E.rebalance_in_progress, 10)
    assert not any(isinstance(a, Revoked) for a in actions) and m.owned == (("t", 0), ("t", 1))
    m.on_join(join_answer(generation=2, protocol="cooperative-sticky"), 20)
    actions = revoke_then(m, m.on_sync(sync_answer([("t", 0)]), 30), 30)
    assert Revoked((("t", 1),)) in actions and sends(actions, "JoinGroup")
    assert m.owned == (("t", 0),)


# -- KIP-814 leader baseline: a topic that grew while the leader was down (issue 17) -----------

def _skip_rejoin(m, baseline_counts=None):
    """A restarted static leader told to skip the assignment; returns the SyncGroup it sent."""
    from roster.client.assignment_data import baseline_bytes
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    meta = encode_subscription(Subscription(("t",)))
    actions = m.on_join(join_answer(member_id="m-0", leader="m-0", skip=True, generation=4,
                                    members=[("m-0", "i-0", meta), ("m-1", "i-1", meta)]), 0)
    user_data = None if baseline_counts is None else baseline_bytes(baseline_counts)
    stored = make(SYNC, error_code=E.none, protocol_type="consumer", protocol_name="range",
                  assignment=encode_assignment(Assignment((("t", (0,)),), user_data)))
    return sends(actions, "SyncGroup")[0], stored


def test_a_leader_leaves_itself_the_partition_counts_it_assigned_against():
    from roster.client.assignment_data import read_baseline
    from roster.protocol.consumer_protocol import decode_assignment
    m = member()
    m.subscribe(["t"], 0)
    m.on_find_coordinator(E.none, 0)
    meta = encode_subscription(Subscription(("t",)))
    m.on_join(join_answer(member_id="m-0", leader="m-0",
                          members=[("m-0", None, meta), ("m-1", None, meta)]), 0)
    sync = sends(m.on_metadata({"t": 3}, 0), "SyncGroup")[0]
    own = decode_assignment(sync.fields["assignments"]["m-0"]).user_data
    other = decode_assignment(sync.fields["assignments"]["m-1"]).user_data
    assert read_baseline(own) == {"t": 3} and other is None


def test_kip_814_leader_rejoins_for_a_topic_that_grew_while_it_was_down_metadata_first():
    m = member(group_instance_id="i-0")
    sync, stored = _skip_rejoin(m, {"t": 2})
    assert sync.fields["assignments"] == {}
    assert m.on_metadata({"t": 3}, 10) == []    # before the answer: nothing to compare yet
    rejoin = sends(revoke_then(m, m.on_sync(stored, 20), 20), "JoinGroup")
    assert rejoin and "while this leader was away" in rejoin[0].fields["reason"]


def test_kip_814_leader_rejoins_for_a_topic_that_grew_while_it_was_down_metadata_after():
    m = member(group_instance_id="i-0")
    sync, stored = _skip_rejoin(m, {"t": 2})
    assert not sends(m.on_sync(stored, 10), "JoinGroup")
    rejoin = sends(revoke_then(m, m.on_metadata({"t": 3}, 20), 20), "JoinGroup")
    assert rejoin and "partitions changed" in rejoin[0].fields["reason"]


def test_kip_814_leader_with_an_unchanged_baseline_stays():
    m = member(group_instance_id="i-0")
    sync, stored = _skip_rejoin(m, {"t": 2})
    m.on_metadata({"t": 2}, 10)
    assert not sends(m.on_sync(stored, 20), "JoinGroup")
    assert m.on_metadata({"t": 2}, 30) == [] and m.state is State.STABLE


def test_kip_814_leader_without_a_stored_baseline_takes_the_partitions_as_they_are():
    """Assigned by another client (no baseline in its assignment): Kafka's behaviour, the
    metadata after the answer is the baseline (even if it arrived before it)."""
    m = member(group_instance_id="i-0")
    sync, stored = _skip_rejoin(m, None)
    m.on_metadata({"t": 3}, 10)
    assert not sends(m.on_sync(stored, 20), "JoinGroup")
    assert m.on_metadata({"t": 3}, 30) == []
    assert sends(revoke_then(m, m.on_metadata({"t": 4}, 40), 40), "JoinGroup")
