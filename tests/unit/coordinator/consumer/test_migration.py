"""The online upgrade of a classic group to a consumer group (KIP-848's migration, Kafka's
GroupMetadataManager scenarios re-expressed): conversion on the first consumer member, classic
members served inside the consumer group, a static member's restart with the other protocol,
the policy, and replay of a mixed group. Both coordinators are driven as the edge drives them
(GroupRuntime routes classic requests to the consumer coordinator while the group is one)."""
from __future__ import annotations

from roster.coordinator.consumer import classic_members
from roster.coordinator.consumer import records as consumer_records
from roster.coordinator.consumer.coordinator import ConsumerConfig
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.coordinator.consumer.model import ClassicMetadata, DictTopicImage, MemberState
from roster.coordinator.messages import (
    JoinReply,
    JoinRequest,
    LeaveReply,
    SyncRequest,
)
from roster.coordinator.results import Result
from roster.protocol import consumer_protocol as cp
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, decode
from tests.unit.coordinator.consumer.harness import topic_id
from tests.unit.coordinator.harness import Harness

T = topic_id("t")


def subscription(owned=()) -> bytes:
    return cp.encode_subscription(cp.Subscription(("t",), owned_partitions=owned))


def protocols(owned=()):
    return (("range", subscription(owned)),)


def assignment(*partitions: int) -> bytes:
    return cp.encode_assignment(cp.Assignment((("t", tuple(partitions)),)))


class Mixed(Harness):
    """The classic harness, whose shard routes classic requests to the consumer coordinator
    while the group is a consumer group; the consumer coordinator's own requests beside."""

    consumer_id_prefix = "c"

    def __init__(self, policy: str = "bidirectional", **config) -> None:
        self.image = DictTopicImage({"t": (T, 6)})
        super().__init__(ConsumerConfig(migration_policy=policy), self.image, **config)
        self.consumer = self.shard.type_named("consumer")

    def applied(self) -> None:
        pass   # the classic group's timers are left to fire after it is gone

    answered_once = False   # a parked request told to rejoin may be answered again

    # classic requests, routed by the shard
    def join(self, member_id="", instance=None, group="g", protocols=protocols(),
             session_ms=10_000, rebalance_ms=30_000, version=9, may_describe=None, **_):
        token = self.token()
        self.apply(self.shard.join(JoinRequest(
            group, member_id, instance, "consumer", protocols, session_ms, rebalance_ms,
            "client", "/127.0.0.1", api_version=version, token=token,
            may_describe=may_describe), self.now))
        return token

    def sync(self, member_id, generation, assignments=(), instance=None, group="g", **_):
        token = self.token()
        self.apply(self.shard.sync(SyncRequest(
            group, generation, member_id, instance, "consumer", "range", tuple(assignments),
            token=token), self.now))
        return token

    def heartbeat(self, member_id, generation, instance=None, group="g"):
        result = Result()
        error = self.shard.heartbeat(group, generation, member_id, instance, self.now, result)
        self.apply(result)
        return error

    # consumer protocol
    def cg_heartbeat(self, member_id, epoch, *, instance=None, owned=None, topics=None,
                     rebalance_ms=-1):
        token = self.token()
        self.apply(self.consumer.heartbeat(HeartbeatRequest(
            "g", member_id, epoch, instance_id=instance, rebalance_timeout_ms=rebalance_ms,
            subscribed_topic_names=topics, owned=owned, client_id="c", client_host="/h",
            token=token), self.image, self.now))
        return self.replies.pop(token)

    def cg_join(self, member_id, instance=None):
        return self.cg_heartbeat(member_id, 0, instance=instance, owned=(), topics=("t",),
                                 rebalance_ms=30_000)

    def classic_static_group(self, *instances: str) -> dict[str, str]:
        """A Stable classic group of static members, two partitions each: instance -> id."""
        tokens = [self.join(instance=i) for i in instances]
        self.advance(0)
        replies = [self.replies[t] for t in tokens]
        ids = {i: r.member_id for i, r in zip(instances, replies)}
        leader = replies[0].leader
        plan = [(ids[i], assignment(2 * n, 2 * n + 1)) for n, i in enumerate(instances)]
        for member_id in ids.values():
            token = self.sync(member_id, replies[0].generation,
                              plan if member_id == leader else ())
            assert self.replies[token].error is ErrorCode.none
        return ids


def owned_by(h: Mixed) -> dict[str, set[int]]:
    """instance id -> partitions its member holds now."""
    return {m.instance_id: set(m.assigned.get(T, ())) for m in h.consumer.groups["g"].members.values()}


def test_a_consumer_member_joining_converts_the_classic_group_and_nothing_moves():
    h = Mixed()
    ids = h.classic_static_group("a", "b", "c")
    generation = h.coordinator.groups["g"].generation
    reply = h.cg_join("new-d")
    assert reply.error is ErrorCode.none
    group = h.consumer.groups["g"]
    assert {m.instance_id for m in group.members.values() if m.classic} == {"a", "b", "c"}
    assert owned_by(h) == {"a": {0, 1}, "b": {2, 3}, "c": {4, 5}, None: set()}
    assert "g" not in h.coordinator.groups   # the classic group is gone (its offsets stay)
    # Kafka's order: the classic group's tombstone, then the consumer group's records
    tombstone = next(i for i, r in enumerate(h.records)
                     if isinstance(r.key, GroupKey) and r.value is None)
    types = [r.key.type for r in h.records[tombstone + 1:]]
    assert types[:3] == [5, 5, 5] and types[3:5] == [4, 3] and types[5:8] == [7, 7, 7]
    assert types[8:12] == [6, 8, 8, 8]
    # the classic members keep heartbeating at their generation: it is now their epoch,
    # and the group moved on (a new member), so they are asked to rejoin
    assert h.consumer.groups["g"].group_epoch == generation + 1
    assert h.heartbeat(ids["a"], generation, instance="a") is ErrorCode.rebalance_in_progress


def test_classic_members_rejoin_sync_and_give_up_what_the_new_member_takes():
    h = Mixed()
    ids = h.classic_static_group("a", "b", "c")
    generation = h.coordinator.groups["g"].generation
    h.cg_join("new-d")
    epoch = h.consumer.groups["g"].group_epoch
    # an eager classic member rejoins owning nothing: straight to the new epoch
    token = h.join(ids["a"], instance="a")
    reply = h.replies[token]
    assert (reply.error, reply.generation, reply.protocol_name, reply.leader, reply.members) \
        == (ErrorCode.none, epoch, "range", "", ())
    assert reply.member_id == ids["a"]
    synced = h.replies[h.sync(ids["a"], epoch, instance="a")]
    got = {p for _, ps in cp.decode_assignment(synced.assignment).partitions for p in ps}
    assert got == h.consumer.groups["g"].target[ids["a"]].get(T, frozenset())
    assert h.heartbeat(ids["a"], epoch, instance="a") is ErrorCode.none
    # a stale generation is refused, a SyncGroup too
    assert h.heartbeat(ids["b"], generation + 5, instance="b") is ErrorCode.illegal_generation
    # a cooperative member still owning a partition it must give up waits in
    # UNREVOKED_PARTITIONS and keeps its epoch until it rejoins without it
    target_b = h.consumer.groups["g"].target[ids["b"]].get(T, frozenset())
    if {2, 3} - target_b:
        token = h.join(ids["b"], instance="b", protocols=protocols(owned=(("t", (2, 3)),)))
        assert h.replies[token].generation == generation
        assert h.consumer.groups["g"].members[ids["b"]].state is \
            MemberState.UNREVOKED_PARTITIONS
        assert h.heartbeat(ids["b"], generation, instance="b") is \
            ErrorCode.rebalance_in_progress


def test_a_static_classic_member_restarting_with_the_consumer_protocol_keeps_its_partitions():
    h = Mixed()
    ids = h.classic_static_group("a", "b", "c")
    generation = h.coordinator.groups["g"].generation
    reply = h.cg_join("new-a", instance="a")      # no UNRELEASED_INSTANCE_ID: "a" was classic
    assert reply.error is ErrorCode.none
    assert reply.member_epoch == generation
    assert {p for _, ps in reply.assignment for p in ps} == {0, 1}
    group = h.consumer.groups["g"]
    assert group.group_epoch == generation                       # no rebalance at all
    assert group.members["new-a"].classic is None and ids["a"] not in group.members
    assert owned_by(h) == {"a": {0, 1}, "b": {2, 3}, "c": {4, 5}}
    # the others carry on undisturbed
    for i in ("b", "c"):
        assert h.heartbeat(ids[i], generation, instance=i) is ErrorCode.none
    # and restart one by one: the group ends with no classic member, every partition in place
    for i in ("b", "c"):
        assert h.cg_join(f"new-{i}", instance=i).member_epoch == generation
    assert all(m.classic is None for m in group.members.values())
    assert owned_by(h) == {"a": {0, 1}, "b": {2, 3}, "c": {4, 5}}


def test_a_second_consumer_member_with_a_live_consumer_instance_id_is_still_refused():
    h = Mixed()
    h.classic_static_group("a", "b")
    h.cg_join("new-a", instance="a")
    assert h.cg_join("newer-a", instance="a").error is ErrorCode.unreleased_instance_id


def test_policy_disabled_or_downgrade_refuses_as_before():
    for policy in ("disabled", "downgrade"):
        h = Mixed(policy)
        h.classic_static_group("a", "b")
        reply = h.cg_join("new-a", instance="a")
        assert reply.error is ErrorCode.group_id_not_found
        assert "online upgrade is disabled" in reply.error_message
        assert len(h.coordinator.groups["g"].members) == 2
        assert "g" not in h.consumer.groups


def test_a_group_not_speaking_the_consumer_protocol_is_not_converted():
    h = Mixed()
    token = h.join(instance="a", protocols=(("range", b"\x00\x00garbage"),))
    h.advance(0)
    h.coordinator.groups["g"].protocol_type = "connect"
    assert h.replies[token].error is ErrorCode.none
    reply = h.cg_join("new-a")
    assert reply.error is ErrorCode.group_id_not_found


def test_parked_classic_requests_are_told_to_rejoin_and_the_join_goes_to_the_consumer_group():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    generation = h.coordinator.groups["g"].generation
    parked = h.join(ids["a"], instance="a")     # starts a classic rebalance; parked
    assert parked not in h.replies
    h.cg_join("new-c")
    assert h.replies[parked].error is ErrorCode.rebalance_in_progress
    assert h.consumer.groups["g"].members[ids["a"]].member_epoch == generation


def test_classic_leave_and_unknown_members():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    h.cg_join("new-c")
    epoch = h.consumer.groups["g"].group_epoch
    reply = h.leave((ids["a"], "a"), ("nobody", None))
    errors = [m.error for m in reply.members]
    assert errors == [ErrorCode.none, ErrorCode.unknown_member_id]
    assert ids["a"] not in h.consumer.groups["g"].members
    assert h.consumer.groups["g"].group_epoch == epoch + 1
    # a consumer-protocol member cannot use the classic heartbeat
    assert h.heartbeat("new-c", epoch, None) is ErrorCode.unknown_member_id


def test_classic_leave_removes_consumer_protocol_members_too():
    """Admin.removeMembersFromConsumerGroup sends LeaveGroup whatever protocol the member
    speaks; Kafka's classicGroupLeaveToConsumerGroup removes a consumer-protocol member by
    instance id or member id (tests/interop/test_java_consumers.py shows it with both)."""
    h = Mixed()
    h.classic_static_group("a", "b")
    h.cg_join("new-c", instance="c")
    h.cg_join("new-d")
    epoch = h.consumer.groups["g"].group_epoch
    reply = h.leave(("", "c"))
    assert [(m.member_id, m.group_instance_id, m.error) for m in reply.members] == \
        [("", "c", ErrorCode.none)]   # the identity as asked: the admin client matches by it
    assert "new-c" not in h.consumer.groups["g"].members
    assert h.consumer.groups["g"].group_epoch == epoch + 1
    reply = h.leave(("new-d", None), ("", "c"))
    assert [m.error for m in reply.members] == [ErrorCode.none, ErrorCode.unknown_member_id]
    # that was the last consumer-protocol member: back to a classic group of a and b
    assert "g" not in h.consumer.groups
    assert len(h.coordinator.groups["g"].members) == 2


def test_one_leave_naming_several_members_bumps_the_epoch_once():
    """Kafka's classicGroupLeaveToConsumerGroup removes every member a LeaveGroup names and then
    writes one new group epoch (Admin.removeMembersFromConsumerGroup naming two static members:
    the members left see the epoch move by one, as on Kafka 4.4)."""
    h = Mixed()
    h.classic_static_group("a", "b")
    h.cg_join("new-c", instance="c")
    h.cg_join("new-d", instance="d")
    h.cg_join("new-e")
    epoch = h.consumer.groups["g"].group_epoch
    reply = h.leave(("", "c"), ("", "d"), ("", "nobody"))
    assert [m.error for m in reply.members] == \
        [ErrorCode.none, ErrorCode.none, ErrorCode.unknown_member_id]
    assert {"new-c", "new-d"}.isdisjoint(h.consumer.groups["g"].members)
    assert h.consumer.groups["g"].group_epoch == epoch + 1


def test_a_classic_member_that_never_rejoins_is_fenced_after_its_rebalance_timeout():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    generation = h.coordinator.groups["g"].generation
    h.cg_join("new-c")
    assert h.heartbeat(ids["a"], generation, instance="a") is ErrorCode.rebalance_in_progress
    key = classic_members.join_key("g", ids["a"])
    assert h.timers[key][0] == h.now + 30_000
    h.advance(5_000)    # telling it again does not move the deadline
    assert h.heartbeat(ids["a"], generation, instance="a") is ErrorCode.rebalance_in_progress
    assert h.timers[key][0] == 30_000
    # b rejoins in time; a does not (its heartbeats keep its session alive, not its place)
    b_epoch = h.replies[h.join(ids["b"], instance="b")].generation
    assert h.replies[h.sync(ids["b"], b_epoch, instance="b")].error is ErrorCode.none
    for _ in range(6):
        h.heartbeat(ids["a"], generation, instance="a")
        h.heartbeat(ids["b"], b_epoch, instance="b")
        h.advance(5_000)
    assert ids["a"] not in h.consumer.groups["g"].members
    assert ids["b"] in h.consumer.groups["g"].members


def test_classic_members_commit_with_their_generation():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    generation = h.coordinator.groups["g"].generation
    h.cg_join("new-a", instance="a")
    assert h.commit({("t", 0): 1}, ids["b"], generation, version=2).errors == \
        (("t", 0, ErrorCode.none),)
    assert h.commit({("t", 0): 1}, ids["b"], generation + 1, version=8).errors == \
        (("t", 0, ErrorCode.illegal_generation),)
    assert h.commit({("t", 0): 1}, "new-a", generation, version=8).errors == \
        (("t", 0, ErrorCode.unsupported_version),)


def test_a_mixed_group_replays_to_the_same_state_and_keeps_its_offsets():
    h = Mixed()
    ids = h.classic_static_group("a", "b", "c")
    h.commit({("t", 0): 42}, ids["a"], h.coordinator.groups["g"].generation, instance="a")
    h.cg_join("new-a", instance="a")
    h.cg_join("new-d")
    fresh = Mixed()
    for record in h.records:
        if isinstance(record, consumer_records.ConsumerRecord):
            key, value = record.encode()   # through the bytes, as at a restart
            record = decode(key, value)
        fresh.shard.replay(record, 0)
    before, after = h.consumer.groups["g"], fresh.consumer.groups["g"]
    assert after.members == before.members
    assert after.target == before.target
    assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch,
                                                           before.assignment_epoch)
    assert after.members[ids["b"]].classic == ClassicMetadata(10_000, protocols())
    assert "g" not in fresh.coordinator.groups
    assert fresh.offsets()[("t", 0)].offset == 42


def test_the_last_consumer_member_leaving_turns_the_group_back_into_a_classic_group():
    h = Mixed()
    ids = h.classic_static_group("a", "b", "c")
    h.commit({("t", 0): 7}, ids["a"], h.coordinator.groups["g"].generation, instance="a")
    joined = h.cg_join("new-d")
    group = h.consumer.groups["g"]
    epoch, targets = group.group_epoch, dict(group.target)
    h.cg_heartbeat("new-d", joined.member_epoch, owned=(), rebalance_ms=-1)
    # the consumer member leaves for good (-1): the classic members remain
    assert h.cg_heartbeat("new-d", -1).error is ErrorCode.none
    assert "g" not in h.consumer.groups
    classic = h.coordinator.groups["g"]
    assert set(classic.members) == set(ids.values())
    assert (classic.generation, classic.protocol_type, classic.protocol_name) == \
        (epoch, "consumer", "range")
    assert classic.state.name == "PREPARING_REBALANCE"
    assert h.offsets()[("t", 0)].offset == 7
    for member in classic.members.values():     # each holds its target assignment
        held = {p for _, ps in cp.decode_assignment(member.assignment).partitions for p in ps}
        assert held == set(targets[member.member_id].get(T, ()))
    # the classic members are told to rejoin, and do, into an ordinary classic rebalance
    assert h.heartbeat(ids["a"], epoch, instance="a") is ErrorCode.rebalance_in_progress
    tokens = [h.join(ids[i], instance=i) for i in ("a", "b", "c")]
    replies = [h.replies[t] for t in tokens]
    assert all(r.error is ErrorCode.none and r.generation == epoch + 1 for r in replies)
    # durable: the records replay to the same classic group, and no consumer group
    fresh = Mixed()
    for record in h.records:
        (fresh.consumer if isinstance(record, consumer_records.ConsumerRecord)
         else fresh.coordinator).replay(record, 0)
    assert "g" not in fresh.consumer.groups
    assert set(fresh.coordinator.groups["g"].members) == set(ids.values())


def test_no_downgrade_when_the_policy_forbids_it_or_on_a_static_leave():
    h = Mixed("upgrade")
    h.classic_static_group("a", "b")
    joined = h.cg_join("new-d")
    h.cg_heartbeat("new-d", -1)
    assert "g" in h.consumer.groups and len(h.consumer.groups["g"].members) == 2
    h = Mixed()
    h.classic_static_group("a", "b")
    joined = h.cg_join("new-d", instance="d")
    h.cg_heartbeat("new-d", -2, instance="d")       # a restart on its way: it stays a member
    assert "g" in h.consumer.groups and len(h.consumer.groups["g"].members) == 3
    assert joined.error is ErrorCode.none


def test_a_downgrade_whose_records_cannot_be_written_leaves_the_consumer_group_as_it_was():
    h = Mixed()
    h.classic_static_group("a", "b")
    h.cg_join("new-d")
    before = dict(h.consumer.groups["g"].members)
    h.fail_next_write = ErrorCode.not_coordinator
    assert h.cg_heartbeat("new-d", -1).error is ErrorCode.not_coordinator
    assert h.consumer.groups["g"].members == before
    assert "g" not in h.coordinator.groups   # the classic group is gone (its offsets stay)


def test_an_upgrade_whose_records_cannot_be_written_leaves_the_classic_group_as_it_was():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    generation = h.coordinator.groups["g"].generation
    h.fail_next_write = ErrorCode.not_coordinator
    assert h.cg_join("new-a", instance="a").error is ErrorCode.not_coordinator
    assert "g" not in h.consumer.groups
    assert set(h.coordinator.groups["g"].members) == set(ids.values())
    assert h.heartbeat(ids["b"], generation, instance="b") is ErrorCode.none


def test_a_classic_member_replacing_the_last_consumer_member_downgrades_without_a_rebalance():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    generation = h.coordinator.groups["g"].generation
    h.cg_join("new-a", instance="a")
    h.cg_heartbeat("new-a", generation, instance="a", owned=((T, (0, 1)),))
    h.cg_heartbeat("new-a", -2, instance="a")          # it restarts, with the classic protocol
    token = h.join(instance="a")
    reply = h.replies[token]
    assert (reply.error, reply.generation) == (ErrorCode.none, generation)
    assert "g" not in h.consumer.groups
    classic = h.coordinator.groups["g"]
    assert classic.state.name == "STABLE" and classic.generation == generation
    assert set(classic.members) == {reply.member_id, ids["b"]}
    synced = h.replies[h.sync(reply.member_id, generation, instance="a")]
    assert synced.error is ErrorCode.none
    assert cp.decode_assignment(synced.assignment).partitions == (("t", (0, 1)),)
    assert h.heartbeat(ids["b"], generation, instance="b") is ErrorCode.none


def test_consumer_group_describe_tells_classic_members_apart():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    h.cg_join("new-a", instance="a")
    (described,) = h.consumer.describe(["g"])
    types = {m.member_id: m.member_type for m in described.members}
    assert types == {"new-a": 1, ids["b"]: 0}


def test_a_classic_join_into_a_consumer_group_checks_its_session_timeout_first():
    h = Mixed()
    h.classic_static_group("a", "b")
    h.cg_join("new-d")
    token = h.join(instance="c", session_ms=10)
    assert h.replies[token].error is ErrorCode.invalid_session_timeout
    assert len(h.consumer.groups["g"].members) == 3


def test_a_classic_join_resolves_the_groups_regexes_as_its_principal_may_describe():
    """Kafka 4.4 resolves a consumer group's regexes on a classic member's JoinGroup too, with
    the joining principal's DESCRIBE (KAFKA-18813): one that may not see a matching topic does
    not add it to the group's subscription."""
    h = Mixed()
    h.image.topics.update({name: (topic_id(name), 1) for name in ("r-seen", "r-hidden")})
    h.classic_static_group("a")
    token = h.token()
    h.apply(h.consumer.heartbeat(HeartbeatRequest(
        "g", "new-d", 0, rebalance_timeout_ms=30_000, subscribed_topic_regex="r-.*", owned=(),
        client_id="c", client_host="/h", token=token), h.image, h.now))
    group = h.consumer.groups["g"]
    assert group.resolved_regex == {"r-.*": frozenset({"r-seen", "r-hidden"})}
    h.image.topics["r-later"] = (topic_id("r-later"), 1)
    h.join(instance="b", may_describe=lambda name: name in ("t", "r-seen"))
    assert group.resolved_regex == {"r-.*": frozenset({"r-seen"})}
    h.join(instance="c")
    assert group.resolved_regex == {"r-.*": frozenset({"r-seen", "r-hidden", "r-later"})}


def test_a_failed_upgrade_does_not_answer_a_parked_join_twice():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    parked = h.join(ids["a"], instance="a")
    h.fail_next_write = ErrorCode.not_coordinator
    h.cg_join("new-c")
    assert h.replies[parked].error is ErrorCode.rebalance_in_progress
    restored = h.coordinator.groups["g"]
    assert set(restored.members) == set(ids.values()) and not restored.joining


def test_classic_requests_whose_records_cannot_be_written_get_their_own_error_replies():
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    h.cg_join("new-d")
    h.fail_next_write = ErrorCode.not_coordinator
    reply = h.replies[h.join(instance="c")]
    assert isinstance(reply, JoinReply) and reply.error is ErrorCode.not_coordinator
    assert len(h.consumer.groups["g"].members) == 3
    h.fail_next_write = ErrorCode.not_coordinator
    left = h.leave((ids["a"], "a"))
    assert isinstance(left, LeaveReply) and left.error is ErrorCode.not_coordinator
    assert ids["a"] in h.consumer.groups["g"].members


def test_a_classic_member_with_protocols_the_others_lack_is_refused():
    h = Mixed()
    h.classic_static_group("a", "b")
    h.cg_join("new-d")
    token = h.join(instance="c", protocols=(("roundrobin", subscription()),))
    assert h.replies[token].error is ErrorCode.inconsistent_group_protocol


def test_join_deadlines_of_a_downgraded_group_do_not_outlive_it():
    """A classic member told to rejoin, then the group downgraded and upgraded again: the first
    group's join deadline neither keeps the second from arming its own nor fences for it."""
    h = Mixed()
    ids = h.classic_static_group("a", "b")
    generation = h.coordinator.groups["g"].generation
    h.cg_join("new-c")
    assert h.heartbeat(ids["a"], generation, instance="a") is ErrorCode.rebalance_in_progress
    assert h.cg_heartbeat("new-c", -1).error is ErrorCode.none        # back to classic
    tokens = [h.join(ids[i], instance=i) for i in ("a", "b")]
    replies = [h.replies[t] for t in tokens]
    generation = replies[0].generation
    leader = next(r.member_id for r in replies if r.member_id == r.leader)
    plan = [(ids["a"], assignment(0, 1, 2)), (ids["b"], assignment(3, 4, 5))]
    for member_id in ids.values():
        h.sync(member_id, generation, plan if member_id == leader else ())
    for _ in range(7):        # past the first group's join deadline, heartbeating
        for i in ("a", "b"):
            assert h.heartbeat(ids[i], generation, instance=i) is ErrorCode.none
        h.advance(5_000)
    h.cg_join("new-d")                                                 # upgraded again
    assert h.heartbeat(ids["a"], generation, instance="a") is ErrorCode.rebalance_in_progress
    assert h.timers[classic_members.join_key("g", ids["a"])][0] == h.now + 30_000


def test_after_a_restart_a_classic_member_revoking_gets_no_consumer_rebalance_deadline():
    """Classic members have join and sync deadlines, not the consumer protocol's rebalance
    timeout: loading a group does not give one to a classic member still revoking."""
    h = Mixed()
    ids = h.classic_static_group("a", "b", "c")
    generation = h.coordinator.groups["g"].generation
    h.cg_join("new-d")
    held = {"a": (0, 1), "b": (2, 3), "c": (4, 5)}
    group = h.consumer.groups["g"]
    losing = next(i for i in held if set(held[i]) - group.target[ids[i]].get(T, frozenset()))
    h.join(ids[losing], instance=losing, protocols=protocols(owned=(("t", held[losing]),)))
    assert group.members[ids[losing]].state is MemberState.UNREVOKED_PARTITIONS
    assert classic_members.join_key("g", ids[losing]) not in h.timers
    fresh = Mixed()
    for record in h.records:
        (fresh.consumer if isinstance(record, consumer_records.ConsumerRecord)
         else fresh.coordinator).replay(record, 0)
    fresh.apply(fresh.consumer.groups_loaded(["g"], fresh.now))
    assert not [k for k in fresh.timers if k.startswith("consumer-rebalance")]
    assert fresh.consumer.groups["g"].members[ids[losing]].member_epoch == generation


def test_a_lone_consumer_static_member_restarting_as_classic_downgrades_the_group():
    """Kafka's validateOnlineDowngradeWithReplacedMemberId has no "more than one member" rule
    (that is for a member fenced): the group's only member, a consumer static member, coming
    back with the classic protocol turns the group back into a classic group of one."""
    h = Mixed()
    h.classic_static_group("a")
    generation = h.coordinator.groups["g"].generation
    h.cg_join("new-a", instance="a")
    h.cg_heartbeat("new-a", generation, instance="a", owned=((T, (0, 1)),))
    h.cg_heartbeat("new-a", -2, instance="a")
    reply = h.replies[h.join(instance="a")]
    assert (reply.error, reply.generation) == (ErrorCode.none, generation)
    assert "g" not in h.consumer.groups
    classic = h.coordinator.groups["g"]
    assert classic.state.name == "STABLE" and set(classic.members) == {reply.member_id}
    synced = h.replies[h.sync(reply.member_id, generation, instance="a")]
    assert cp.decode_assignment(synced.assignment).partitions == (("t", (0, 1)),)


def test_the_broker_config_accepts_exactly_the_policies_the_type_knows():
    import pytest

    from roster.config import MIGRATION_POLICIES, BrokerConfig, ConfigError
    from roster.coordinator.consumer import migration
    assert set(MIGRATION_POLICIES) == set(migration.POLICIES)
    config = BrokerConfig.from_overrides({"group.consumer.migration.policy": "UPGRADE"})
    assert ConsumerConfig.from_broker(config).migration_policy == "upgrade"
    with pytest.raises(ConfigError, match="expected one of bidirectional, upgrade"):
        BrokerConfig.from_overrides({"group.consumer.migration.policy": "sideways"})
