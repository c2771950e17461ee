"""ConsumerGroupHeartbeat in the pure core: joining, reconciliation with revocation before
assignment, epochs, static membership, timeouts (GroupMetadataManagerTest re-expressed)."""
from __future__ import annotations

from roster.coordinator.consumer.coordinator import rebalance_key, session_key
from roster.coordinator.consumer.model import GroupState, MemberState
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.consumer.harness import ConsumerHarness, owned, partitions, topic_id

T = topic_id("t")


def test_first_member_gets_every_partition_at_epoch_two():
    h = ConsumerHarness({"t": 6})
    reply = h.join("m1")
    assert reply.error == ErrorCode.none
    # a new group is at epoch 1 (as Kafka 4.4's), so the first join bumps it to 2
    assert (reply.member_id, reply.member_epoch, reply.heartbeat_interval_ms) == ("m1", 2, 5000)
    assert reply.assignment == ((T, (0, 1, 2, 3, 4, 5)),)
    assert h.group().state() == GroupState.STABLE
    assert h.group().session_deadlines["m1"] == 45_000
    assert h.timers[session_key("g")][0] == 45_000   # the group's one session timer
    # record types written, in Kafka's order: member, partition metadata, epoch, target, current
    assert [r.key.type for r in h.records] == [5, 4, 3, 7, 6, 8]


def test_a_partition_moves_only_after_its_owner_revoked_it():
    h = ConsumerHarness({"t": 6})
    r1 = h.join("m1")
    r2 = h.join("m2")
    # m2 is at the new epoch but its partitions are still m1's
    assert r2.member_epoch == 3 and r2.assignment == ()
    assert h.member("m2").state is MemberState.UNRELEASED_PARTITIONS
    # m1, still owning all six, is asked to give three up and keeps epoch 2
    r1b = h.heartbeat("m1", 2, owned=r1.assignment)
    assert r1b.member_epoch == 2
    assert len(partitions(r1b)) == 3
    assert h.member("m1").state is MemberState.UNREVOKED_PARTITIONS
    assert rebalance_key("g", "m1") in h.timers
    # until m1 reports them gone, m2 still gets nothing
    assert h.heartbeat("m2", 3, owned=()).assignment is None
    r1c = h.heartbeat("m1", 2, owned=r1b.assignment)
    assert r1c.member_epoch == 3 and h.member("m1").state is MemberState.STABLE
    assert rebalance_key("g", "m1") not in h.timers
    r2b = h.heartbeat("m2", 3, owned=())
    assert len(partitions(r2b)) == 3
    assert r1c.assignment is None  # unchanged since it revoked
    assert partitions(r2b).isdisjoint(partitions(h.member("m1")))
    assert h.group().state() == GroupState.STABLE


def test_three_members_split_six_partitions():
    h = ConsumerHarness({"t": 6})
    owned = {}
    epochs = {}
    for m in ("a", "b", "c"):
        r = h.join(m)
        owned[m], epochs[m] = r.assignment, r.member_epoch
    for _ in range(4):
        for m in ("a", "b", "c"):
            r = h.heartbeat(m, epochs[m], owned=owned[m])
            if r.assignment is not None:
                owned[m] = r.assignment
            epochs[m] = r.member_epoch
    sets = [partitions(h.member(m)) for m in "abc"]
    assert [len(s) for s in sets] == [2, 2, 2]
    assert set().union(*sets) == {(T, p) for p in range(6)}
    assert h.group().state() == GroupState.STABLE


def test_rebalance_timeout_fences_a_member_that_does_not_revoke():
    h = ConsumerHarness({"t": 4})
    r1 = h.join("m1", rebalance_timeout_ms=10_000)
    h.join("m2")
    h.heartbeat("m1", 2, owned=r1.assignment)      # asked to revoke; never does
    h.heartbeat("m2", 3, owned=())
    h.advance(10_000)
    assert "m1" not in h.group().members
    assert h.group().group_epoch == 4
    r2 = h.heartbeat("m2", 3, owned=())
    assert r2.member_epoch == 4 and len(partitions(r2)) == 4


def test_session_timeout_removes_the_member_and_bumps_the_epoch():
    h = ConsumerHarness({"t": 2})
    h.join("m1")
    r2 = h.join("m2")
    h.advance(44_999)
    h.heartbeat("m2", r2.member_epoch, owned=r2.assignment)
    h.advance(1)
    assert set(h.group().members) == {"m2"}
    assert h.group().group_epoch == 4


def test_epochs_ahead_or_behind_are_fenced_except_the_previous_one_with_a_subset():
    h = ConsumerHarness({"t": 2})
    r = h.join("m1")
    assert h.heartbeat("m1", 5, owned=()).error == ErrorCode.fenced_member_epoch
    h.join("m2")
    # m1 moves 2 -> 2 (unrevoked), revokes, moves to 3; previous epoch is 2
    r = h.heartbeat("m1", 2, owned=r.assignment)
    kept = r.assignment
    r = h.heartbeat("m1", 2, owned=kept)
    assert r.member_epoch == 3 and h.member("m1").previous_member_epoch == 2
    # the answer was lost: epoch 2 again, owning a subset of its partitions: accepted
    again = h.heartbeat("m1", 2, owned=kept)
    assert again.error == ErrorCode.none and again.member_epoch == 3
    # epoch 2 owning a partition it no longer has: fenced
    assert h.heartbeat("m1", 2, owned=((T, (0, 1)),)).error == ErrorCode.fenced_member_epoch
    # epoch 0 under its own id (a client that lost its state): not fenced, as in Kafka 4.4;
    # answered at its epoch with its whole assignment
    rejoined = h.heartbeat("m1", 0, topics=("t",), owned=(), rebalance_timeout_ms=1)
    assert rejoined.error == ErrorCode.none and rejoined.member_epoch == 3
    assert rejoined.assignment == kept


def test_unknown_member_and_unknown_group():
    h = ConsumerHarness({"t": 1})
    assert h.heartbeat("m1", 3, owned=()).error == ErrorCode.group_id_not_found
    h.join("m1")
    assert h.heartbeat("zz", 1, owned=()).error == ErrorCode.unknown_member_id
    assert h.heartbeat("zz", -1).error == ErrorCode.unknown_member_id


def test_invalid_requests():
    h = ConsumerHarness({"t": 1})
    assert h.heartbeat("m1", 0, topics=("t",), owned=()).error == ErrorCode.invalid_request
    assert h.heartbeat("m1", 0, topics=("t",), rebalance_timeout_ms=1).error \
        == ErrorCode.invalid_request
    assert h.heartbeat("m1", 0, owned=(), rebalance_timeout_ms=1).error \
        == ErrorCode.invalid_request
    assert h.heartbeat("", 0, topics=("t",), owned=(), rebalance_timeout_ms=1).error \
        == ErrorCode.invalid_request
    assert h.heartbeat("m1", -3).error == ErrorCode.invalid_request
    assert h.heartbeat("m1", -2).error == ErrorCode.invalid_request   # no instance id
    assert h.join("m1", assignor="sticky").error == ErrorCode.unsupported_assignor
    assert h.join("m1", topics=None, regex="(").error == ErrorCode.invalid_regular_expression
    assert h.coordinator.groups == {}
    assert h.records == []


def test_v0_gets_a_member_id_from_the_coordinator():
    h = ConsumerHarness({"t": 1})
    r = h.join("", version=0)
    assert r.member_id == "gen-1" and r.member_epoch == 2


def test_leave_removes_the_member():
    h = ConsumerHarness({"t": 2})
    h.join("m1")
    r2 = h.join("m2")
    r = h.heartbeat("m2", -1)
    assert (r.error, r.member_id, r.member_epoch) == (ErrorCode.none, "m2", -1)
    assert set(h.group().members) == {"m1"} and "m2" not in h.group().target
    assert "m2" not in h.group().session_deadlines
    del r2


def test_static_member_bounce_keeps_its_partitions_and_moves_nothing_else():
    h = ConsumerHarness({"t": 6})
    replies = {m: h.join(m, instance_id=f"i-{m}") for m in ("a", "b", "c")}
    epochs = {m: r.member_epoch for m, r in replies.items()}
    owned = {m: r.assignment for m, r in replies.items()}
    for _ in range(3):
        for m in "abc":
            r = h.heartbeat(m, epochs[m], owned=owned[m], instance_id=f"i-{m}")
            owned[m] = r.assignment if r.assignment is not None else owned[m]
            epochs[m] = r.member_epoch
    before = {m: partitions(h.member(m)) for m in "abc"}
    epoch = h.group().group_epoch
    # b leaves for a restart (-2): it keeps its partitions
    r = h.heartbeat("b", -2, instance_id="i-b")
    assert (r.error, r.member_epoch) == (ErrorCode.none, -2)
    assert h.member("b").member_epoch == -2 and partitions(h.member("b")) == before["b"]
    h.advance(10_000)
    count = len(h.records)
    # it comes back with a new member id and the same instance id
    r = h.join("b2", instance_id="i-b")
    assert r.error == ErrorCode.none and r.member_epoch == epoch
    assert partitions(r) == before["b"]
    assert "b" not in h.group().members
    assert h.group().group_epoch == epoch
    # nothing about a or c was written
    assert {rec.key.member for rec in h.records[count:]} <= {"b", "b2"}
    for m in "ac":
        assert partitions(h.member(m)) == before[m]


def test_a_static_member_away_longer_than_its_session_is_removed():
    h = ConsumerHarness({"t": 2})
    h.join("a", instance_id="ia")
    h.join("b", instance_id="ib")
    h.heartbeat("b", -2, instance_id="ib")
    h.advance(45_000)
    assert "b" not in h.group().members and "ib" not in h.group().static_members


def test_a_second_live_member_with_the_same_instance_id_is_refused():
    h = ConsumerHarness({"t": 2})
    first = h.join("a", instance_id="same")
    r = h.join("x", instance_id="same")
    assert r.error == ErrorCode.unreleased_instance_id
    assert set(h.group().members) == {"a"}
    # the first keeps going
    assert h.heartbeat("a", first.member_epoch, owned=first.assignment,
                       instance_id="same").error == ErrorCode.none


def test_member_id_mismatch_for_an_instance_id_is_fenced():
    h = ConsumerHarness({"t": 2})
    r = h.join("a", instance_id="i")
    assert h.heartbeat("x", r.member_epoch, owned=(), instance_id="i").error \
        == ErrorCode.fenced_instance_id
    assert h.heartbeat("x", -2, instance_id="i").error == ErrorCode.fenced_instance_id
    assert h.heartbeat("a", 1, owned=(), instance_id="nope").error == ErrorCode.unknown_member_id


def test_new_partitions_reach_members_at_their_next_heartbeat():
    h = ConsumerHarness({"t": 2})
    r = h.join("a")
    epoch = h.group().group_epoch
    h.set_topic("t", 4)
    r = h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert h.group().group_epoch == epoch + 1
    assert partitions(r) == {(T, p) for p in range(4)}


def test_regex_subscription_follows_the_catalog():
    h = ConsumerHarness({"orders-1": 1, "other": 1})
    r = h.join("a", topics=None, regex="orders-.*")
    assert partitions(r) == {(topic_id("orders-1"), 0)}
    h.set_topic("orders-2", 2)
    r = h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert partitions(r) == {(topic_id("orders-1"), 0), (topic_id("orders-2"), 0),
                             (topic_id("orders-2"), 1)}


def test_a_failed_write_leaves_the_group_as_it_was():
    h = ConsumerHarness({"t": 2})
    r = h.join("a")
    before = h.group().snapshot()
    h.fail_next_write = ErrorCode.not_coordinator
    r2 = h.join("b")
    assert r2.error == ErrorCode.not_coordinator
    assert h.group() == before
    h.fail_next_write = ErrorCode.not_coordinator
    assert h.join("x", group="other").error == ErrorCode.not_coordinator
    assert "other" not in h.coordinator.groups
    del r


def test_replaying_the_written_records_rebuilds_the_same_groups():
    from roster.coordinator.consumer import records as rec
    from roster.coordinator.consumer.coordinator import ConsumerCoordinator

    h = ConsumerHarness({"t": 6, "u": 3})
    replies = {m: h.join(m, topics=("t", "u"), instance_id=("i" if m == "b" else None))
               for m in "abc"}
    for m, r in replies.items():
        h.heartbeat(m, r.member_epoch, owned=r.assignment,
                    instance_id=("i" if m == "b" else None))
    h.heartbeat("b", -2, instance_id="i")
    h.heartbeat("c", -1)
    fresh = ConsumerCoordinator()
    for record in h.records:
        key, value = record.encode()
        key_type = int.from_bytes(key[:2], "big")
        decoded = rec.decode_key(key_type, key)
        fresh.replay(rec.ConsumerRecord(decoded, rec.decode_value(decoded, value)))
    a, b = h.group(), fresh.groups["g"]
    for name in ("group_epoch", "assignment_epoch", "members", "static_members", "target",
                 "owners", "subscription_metadata", "resolved_regex"):
        assert getattr(a, name) == getattr(b, name), name


def test_delete_group_only_when_empty():
    h = ConsumerHarness({"t": 1})
    h.join("a")
    assert h.delete("g") == {"g": ErrorCode.non_empty_group}
    h.heartbeat("a", -1)
    assert h.delete("g") == {"g": ErrorCode.none}
    assert "g" not in h.coordinator.groups
    assert [r.key.type for r in h.records[-3:]] == [6, 4, 3]
    assert h.delete("g") == {"g": ErrorCode.group_id_not_found}


def test_failed_writes_of_timeouts_and_deletions_put_the_group_back():
    h = ConsumerHarness({"t": 2})
    h.join("a")
    before = h.group().snapshot()
    h.fail_next_write = ErrorCode.not_coordinator
    h.advance(45_000)                      # a's session lapses; the fencing cannot be written
    assert h.group() == before
    assert h.timers[session_key("g")][0] == 45_500   # it is tried again shortly
    h.advance(500)
    assert "a" not in h.group().members
    h.join("a")
    h.heartbeat("a", -1)
    before = h.group().snapshot()
    h.fail_next_write = ErrorCode.not_coordinator
    assert h.delete("g") == {"g": ErrorCode.not_coordinator}
    assert h.group() == before


def test_group_max_size():
    h = ConsumerHarness({"t": 2}, max_size=2)
    h.join("a")
    h.join("b")
    assert h.join("c").error == ErrorCode.group_max_size_reached
    assert h.join("c", instance_id="i").error == ErrorCode.group_max_size_reached


def test_the_assignor_most_members_ask_for_is_used():
    h = ConsumerHarness({"t": 4})
    h.join("a", assignor="range")
    h.join("b", assignor="range")
    h.join("c")
    [described] = h.coordinator.describe(["g"])
    assert described.assignor_name == "range"
    [missing] = h.coordinator.describe(["nope"])
    assert missing.error == ErrorCode.group_id_not_found


def test_offset_commit_and_fetch_checks():
    h = ConsumerHarness({"t": 2})
    r = h.join("a")

    def committed(member_id, epoch, version=9, group="g"):
        [(_, _, error)] = h.commit({("t", 0): 5}, member_id, epoch, group=group,
                                   version=version).errors
        return error

    assert committed("a", 1, group="other") == ErrorCode.group_id_not_found   # not a group
    assert committed("a", r.member_epoch) == ErrorCode.none
    assert committed("a", r.member_epoch + 1) == ErrorCode.stale_member_epoch
    assert committed("zz", 1) == ErrorCode.unknown_member_id
    assert committed("", -1) == ErrorCode.unknown_member_id   # members exist
    assert committed("a", r.member_epoch, version=8) == ErrorCode.unsupported_version
    # TxnOffsetCommit carries the member epoch at any version; before v6 a newer epoch is
    # ILLEGAL_GENERATION (Kafka's OffsetMetadataManager.validateTransactionalOffsetCommit)
    assert h.txn_commit({("t", 0): 5}, "a", r.member_epoch) == {("t", 0): ErrorCode.none}
    assert h.txn_commit({("t", 0): 5}, "a", r.member_epoch + 1) == \
        {("t", 0): ErrorCode.illegal_generation}
    assert h.txn_commit({("t", 0): 5}, "zz", r.member_epoch) == \
        {("t", 0): ErrorCode.unknown_member_id}
    assert h.shard.fetch_refused("g", None, -1) is None
    assert h.shard.fetch_refused("g", "a", r.member_epoch) is None
    assert h.shard.fetch_refused("g", "a", 99) == ErrorCode.stale_member_epoch
    h.heartbeat("a", -1)
    assert committed("", -1) == ErrorCode.none
    assert h.shard.list_groups(None, None) == [("g", "consumer", "Empty", "consumer")]
    assert h.shard.list_groups(None, {"classic"}) == []


def test_a_deleted_topic_is_revoked_and_a_recreated_one_assigned_by_its_new_id():
    h = ConsumerHarness({"t": 2, "u": 1})
    r = h.join("a", topics=("t", "u"))
    assert partitions(r) == {(T, 0), (T, 1), (topic_id("u"), 0)}
    del h.image.topics["t"]
    r = h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert partitions(r) == {(topic_id("u"), 0)}
    # like any revocation, it is done once the member says so (it keeps its epoch till then)
    assert h.group().state() == GroupState.RECONCILING and r.member_epoch == 2
    r = h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert h.group().state() == GroupState.STABLE and r.member_epoch == 3
    h.image.topics["t"] = (b"new-id-for-t-000", 1)
    r = h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert partitions(r) == {(topic_id("u"), 0), (b"new-id-for-t-000", 0)}


def test_a_subscription_change_revokes_then_assigns():
    h = ConsumerHarness({"t": 2, "u": 2})
    r = h.join("a", topics=("t",))
    r = h.heartbeat("a", r.member_epoch, topics=("u",), owned=r.assignment)
    # first t's partitions go (the member keeps epoch 2), then u's come with epoch 3
    assert r.assignment == () and r.member_epoch == 2 and h.group().group_epoch == 3
    r = h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert partitions(r) == {(topic_id("u"), 0), (topic_id("u"), 1)} and r.member_epoch == 3


def test_subscribed_topic_names_are_kept_sorted_and_their_order_is_no_change():
    """As Kafka's ConsumerGroupMember keeps them: the record and ConsumerGroupDescribe list
    them sorted, and the same names in another order do not start a new epoch."""
    h = ConsumerHarness({"t": 2, "u": 2})
    r = h.join("a", topics=("u", "t"))
    assert h.member("a").subscribed_topic_names == ("t", "u")
    [written] = [x for x in h.records if x.key.type == 5]
    assert written.value.subscribed_topic_names == ("t", "u")
    count, epoch = len(h.records), h.group().group_epoch
    h.heartbeat("a", r.member_epoch, topics=("u", "t"), owned=r.assignment)
    h.heartbeat("a", r.member_epoch, topics=("t", "u"), owned=r.assignment)
    assert h.group().group_epoch == epoch
    assert 5 not in [x.key.type for x in h.records[count:]]   # no member record


def test_light_heartbeats_of_a_stable_member_write_nothing():
    h = ConsumerHarness({"t": 2})
    r = h.join("a")
    r = h.heartbeat("a", r.member_epoch, owned=owned(r))   # it took its assignment
    count = len(h.records)
    for _ in range(5):
        h.advance(5000)
        again = h.heartbeat("a", r.member_epoch)
        assert again.error == ErrorCode.none and again.assignment is None
    assert len(h.records) == count
    assert h.group().session_deadlines["a"] == h.now + 45_000
    h.advance(44_999)
    assert "a" in h.group().members
    h.advance(1)
    assert "a" not in h.group().members


def test_regex_resolutions_are_records_and_go_with_their_last_user():
    h = ConsumerHarness({"orders-1": 1, "other": 1})
    r = h.join("a", topics=None, regex="orders-.*")
    [written] = [x for x in h.records if x.key.type == 16]
    assert (written.key.regex, written.value.topics) == ("orders-.*", ("orders-1",))
    h.set_topic("orders-2", 1)
    h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert [x.value.topics for x in h.records if x.key.type == 16][-1] \
        == ("orders-1", "orders-2")
    h.heartbeat("a", -1)
    assert h.records[-3].key.type == 16 and h.records[-3].value is None   # tombstone
    assert h.group().resolved_regex == {}


def test_static_member_temporary_leave_does_not_bump_the_epoch_but_a_real_leave_does():
    """GroupMetadataManagerTest: testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves,
    testLeavingStaticMemberBumpsGroupEpoch."""
    h = ConsumerHarness({"t": 2})
    h.join("a", instance_id="ia")
    h.join("b", instance_id="ib")
    epoch = h.group().group_epoch
    h.heartbeat("b", -2, instance_id="ib")
    assert h.group().group_epoch == epoch
    h.join("b2", instance_id="ib")
    assert h.group().group_epoch == epoch
    r = h.heartbeat("b2", -1, instance_id="ib")
    assert (r.error, r.member_epoch) == (ErrorCode.none, -1)
    assert h.group().group_epoch == epoch + 1 and "ib" not in h.group().static_members


def test_static_member_rejoining_with_new_topics_bumps_the_epoch():
    """testStaticMemberRejoinsWithNewSubscribedTopics: the replacement keeps the identity but
    its new subscription is a change like any other."""
    h = ConsumerHarness({"t": 2, "u": 2})
    h.join("a", instance_id="ia")
    h.heartbeat("a", -2, instance_id="ia")
    epoch = h.group().group_epoch
    r = h.join("a2", topics=("t", "u"), instance_id="ia")
    assert h.group().group_epoch == epoch + 1
    assert r.member_epoch == epoch + 1
    assert partitions(r) == {(T, 0), (T, 1), (topic_id("u"), 0), (topic_id("u"), 1)}


def test_a_full_request_always_gets_the_assignment():
    """testConsumerGroupHeartbeatFullResponse: a heartbeat with rebalance timeout, topics and
    owned partitions (what a client sends after an error) is answered with the assignment
    even when nothing changed."""
    h = ConsumerHarness({"t": 2})
    r = h.join("a")
    again = h.heartbeat("a", r.member_epoch, topics=("t",), owned=r.assignment,
                        rebalance_timeout_ms=60_000)
    assert again.assignment == r.assignment
    light = h.heartbeat("a", r.member_epoch, owned=r.assignment)
    assert light.assignment is None


def test_a_join_reply_lost_then_retried_with_epoch_zero_is_accepted():
    """The previous epoch of a member that just joined is 0: its retried join (epoch 0, no
    partitions) is the lost-response case, not a fencing."""
    h = ConsumerHarness({"t": 2})
    r = h.join("a")
    h.join("b")
    r2 = h.heartbeat("b", 0, topics=("t",), owned=(), rebalance_timeout_ms=60_000)
    assert r2.error == ErrorCode.none
    del r


def test_after_a_restart_sessions_start_again_and_a_revocation_keeps_its_deadline():
    from roster.coordinator.consumer import records as rec
    from roster.coordinator.consumer.coordinator import ConsumerCoordinator, rebalance_key
    from roster.coordinator.results import Schedule

    h = ConsumerHarness({"t": 2})
    r1 = h.join("a", rebalance_timeout_ms=30_000)
    h.join("b")
    h.heartbeat("a", r1.member_epoch, owned=r1.assignment)     # a now has one to revoke
    assert h.member("a").state is MemberState.UNREVOKED_PARTITIONS
    fresh = ConsumerCoordinator()
    for record in h.records:
        key, value = record.encode()
        decoded = rec.decode_key(int.from_bytes(key[:2], "big"), key)
        fresh.replay(rec.ConsumerRecord(decoded, rec.decode_value(decoded, value)))
    result = fresh.groups_loaded(["g"], 1_000)
    deadlines = {t.key: t.deadline_ms for t in result.timers if isinstance(t, Schedule)}
    assert deadlines == {session_key("g"): 46_000, rebalance_key("g", "a"): 31_000}
    assert fresh.groups["g"].session_deadlines == {"a": 46_000, "b": 46_000}


def test_an_assignment_is_repeated_until_the_member_reports_owning_it():
    """librdkafka resends a heartbeat that timed out as it was (not as a full request): an
    answer with a revocation that came late is lost. Every answer repeats the assignment until
    the member reports it in its owned partitions, so the revocation is learnt at the next."""
    h = ConsumerHarness({"t": 4})
    a = h.join("a")
    a = h.heartbeat("a", a.member_epoch, owned=owned(a))
    b = h.join("b")
    assert b.assignment == ()   # a still holds what b is to get
    revoking = h.heartbeat("a", a.member_epoch)
    assert len(partitions(revoking)) == 2 and revoking.member_epoch == a.member_epoch
    # that answer was lost; the same light heartbeat again
    again = h.heartbeat("a", a.member_epoch)
    assert partitions(again) == partitions(revoking)
    # a revokes and says so: the next light heartbeat carries nothing
    done = h.heartbeat("a", a.member_epoch, owned=owned(revoking))
    assert done.member_epoch == h.group().assignment_epoch
    quiet = h.heartbeat("a", done.member_epoch)
    assert quiet.assignment is None
    assert "a" not in h.group().unacknowledged
    h.heartbeat("b", b.member_epoch, owned=())
    h.advance(45_000)
    assert h.group().unacknowledged == set() and not h.group().members
