"""OffsetCommit, OffsetFetch and offset expiry for classic and simple groups (with Kafka's
testValidateOffsetCommit and testOffsetExpirationCondition cases)."""
import pytest

from roster.coordinator.messages import CommitReply, FetchedOffset
from roster.coordinator.classic.states import GroupState
from roster.protocol.consumer_protocol import Subscription, encode_subscription
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, OffsetKey, OffsetValue, Record
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode


def offset_record(offset, commit_ts, metadata="", expire_ts=-1, topic="t", partition=0):
    return Record(OffsetKey("g", topic, partition),
                  OffsetValue(offset, -1, metadata, commit_ts, expire_ts))


@pytest.mark.parametrize("version", [0, 2, 8, 9])
def test_validate_offset_commit(version):
    """The OffsetCommit table for a classic group, top to bottom, in every state it meets."""
    h = Harness()
    assert h.commit({("t", 0): 1}, version=version) == CommitReply((("t", 0, E.none),))
    group = h.group()
    assert group.state is S.EMPTY and group.protocol_type is None  # a simple group

    token = h.join(instance="i-a")
    h.advance(0)
    member = h.reply(token).member_id
    assert group.state is S.COMPLETING_REBALANCE

    def error(**identity):
        [(_, _, answer)] = h.commit({("t", 0): 2}, version=version, **identity).errors
        return answer

    assert error() is E.unknown_member_id                      # no identity, group not Empty
    assert error(member_id="unknown", instance="unknown") is E.unknown_member_id
    assert error(member_id=member, instance="unknown") is E.unknown_member_id
    assert error(member_id=member, instance="i-a", generation=0) is E.illegal_generation
    assert error(member_id=member, generation=-1) is E.illegal_generation
    assert error(member_id=member, instance="i-a", generation=1) is E.rebalance_in_progress
    h.sync(member, 1)
    assert group.state is S.STABLE
    assert error(member_id=member, instance="i-a", generation=1) is E.none
    new = h.reply(h.join(instance="i-a")).member_id
    assert error(member_id=member, instance="i-a", generation=1) is E.fenced_instance_id
    assert error(member_id=new, instance="i-a", generation=1) is E.none
    group.transition_to(S.DEAD, h.now)
    assert error(member_id=new, instance="i-a", generation=1) is E.coordinator_not_available


@pytest.mark.parametrize("version, error", [(8, E.illegal_generation),
                                            (9, E.group_id_not_found)])
def test_offset_commit_with_generation_to_missing_group(version, error):
    """A generation >= 0 for a missing group is ILLEGAL_GENERATION up to v8, GROUP_ID_NOT_FOUND
    from v9; no group is created and nothing is written."""
    h = Harness()
    reply = h.commit({("t", 0): 5, ("t", 1): 6}, member_id="m", generation=1, version=version)
    assert reply == CommitReply((("t", 0, error), ("t", 1, error)))
    assert h.coordinator.groups == {} and h.records == []


def test_offset_commit_writes_one_record_per_partition_and_applies_once_written():
    """Each partition becomes one record stamped with now; fetches see it only once written."""
    h = Harness()
    h.now = 1234
    h.hold_next_write = True
    assert h.commit({("t", 0): 10, ("t", 1): 11}, metadata="m") is None  # waits for the write
    assert h.shard.fetch_offsets("g", [("t", 0)]) == [FetchedOffset("t", 0)]
    h.release_writes()
    assert h.records == [offset_record(10, 1234, "m"), offset_record(11, 1234, "m", partition=1)]
    assert h.shard.fetch_offsets("g", [("t", 0), ("t", 1), ("t", 2)]) == [
        FetchedOffset("t", 0, 10, -1, "m"), FetchedOffset("t", 1, 11, -1, "m"),
        FetchedOffset("t", 2)]


def test_offset_commit_retention_sets_an_expire_timestamp():
    """A v2-4 retention time other than -1 writes now + retention as the expire timestamp."""
    h = Harness()
    h.now = 1000
    h.commit({("t", 0): 3}, version=2, retention_ms=5000)
    h.commit({("t", 1): 4}, version=2)
    assert h.records == [offset_record(3, 1000, expire_ts=6000),
                         offset_record(4, 1000, partition=1)]


def test_offset_commit_metadata_too_large_fails_only_that_partition():
    """Metadata over offset.metadata.max.bytes fails its partition; the others are written."""
    h = Harness()
    reply = h.commit({("t", 0): 1}, metadata="x" * 4097)
    assert reply == CommitReply((("t", 0, E.offset_metadata_too_large),)) and h.records == []
    assert h.commit({("t", 1): 2}, metadata="x" * 4096).errors == (("t", 1, E.none),)
    assert h.records == [offset_record(2, 0, "x" * 4096, partition=1)]


def test_offset_commit_write_failure_answers_every_partition_with_the_write_error():
    """A failed write answers every partition with the client-facing error; nothing applies."""
    h = Harness()
    h.fail_next_write = E.not_coordinator
    reply = h.commit({("t", 0): 1, ("u", 3): 2})
    assert reply == CommitReply((("t", 0, E.not_coordinator), ("u", 3, E.not_coordinator)))
    assert h.shard.fetch_offsets("g", None) == [] and h.records == []


def test_offset_commit_in_stable_and_preparing_rebalance_keeps_the_session():
    """A member's commit in Stable or PreparingRebalance (still-current generation) is accepted
    and re-arms its session; in CompletingRebalance it is refused and does not."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    h.advance(4000)
    assert h.commit({("t", 0): 1}, member_id=follower, generation=1).errors[0][2] is E.none
    assert h.session_deadline(follower) == 14_000
    h.join(member_id=leader)  # PreparingRebalance, generation still 1
    h.advance(1000)
    assert h.commit({("t", 0): 2}, member_id=follower, generation=1).errors[0][2] is E.none
    assert h.session_deadline(follower) == 15_000
    h.join(member_id=follower)  # everyone rejoined: CompletingRebalance, generation 2
    h.advance(1000)
    assert h.commit({("t", 0): 3}, member_id=follower, generation=2).errors[0][2] is \
        E.rebalance_in_progress
    assert h.session_deadline(follower) == 15_000
    assert [f.offset for f in h.shard.fetch_offsets("g", [("t", 0)])] == [2]


def test_a_transactional_commit_is_taken_while_the_assignment_is_handed_out():
    """Kafka's ClassicGroup.validateOffsetCommit with isTransactional: the current
    generation's TxnOffsetCommit passes CompletingRebalance, where OffsetCommit is told
    REBALANCE_IN_PROGRESS; the member checks stay; it does not re-arm the session."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    h.join(member_id=leader)
    h.join(member_id=follower)   # everyone rejoined: CompletingRebalance, generation 2
    h.advance(1000)
    assert h.group().state is S.COMPLETING_REBALANCE
    assert h.commit({("t", 0): 3}, member_id=follower, generation=2).errors[0][2] is \
        E.rebalance_in_progress
    deadline = h.session_deadline(follower)
    assert h.txn_commit({("t", 0): 3}, member_id=follower, generation=2) == {("t", 0): E.none}
    assert h.session_deadline(follower) == deadline
    assert h.txn_commit({("t", 0): 3}, member_id=follower, generation=1) == \
        {("t", 0): E.illegal_generation}
    assert h.txn_commit({("t", 0): 3}, member_id="nobody", generation=2) == \
        {("t", 0): E.unknown_member_id}


def test_offset_fetch_of_a_missing_or_dead_group_answers_minus_one():
    """Fetching from a missing or Dead group is no error: every partition is -1."""
    h = Harness()
    assert h.shard.fetch_offsets("g", [("t", 0)]) == [FetchedOffset("t", 0, -1, -1, "")]
    assert h.shard.fetch_offsets("g", None) == []
    h.commit({("t", 0): 7})
    h.group().transition_to(S.DEAD, h.now)
    assert h.shard.fetch_offsets("g", [("t", 0)]) == [FetchedOffset("t", 0)]


def test_offset_fetch_all_partitions_lists_committed_offsets_in_order():
    """Fetching with no partition list returns every committed offset, sorted."""
    h = Harness()
    h.commit({("u", 1): 3, ("t", 2): 2, ("t", 0): 1})
    assert [(f.topic, f.partition, f.offset) for f in h.shard.fetch_offsets("g", None)] == \
        [("t", 0, 1), ("t", 2, 2), ("u", 1, 3)]


def _expire(h):
    h.apply(h.shard.expire_offsets(h.now))


def test_offset_expiration_condition():
    """What expires after offsets.retention.minutes depends on the group: a simple group's
    offsets from their commit, an Empty group's from when it became Empty (the group goes
    too), a Stable consumer group's only for topics nobody subscribes to, a rebalancing
    group's never."""
    h = Harness(offsets_retention_ms=1000)
    subscribed_to_t = (("range", encode_subscription(Subscription(("t",)))),)
    h.commit({("t", 0): 1}, group="simple")
    [leaver] = h.stable_group(None, group="empty")
    h.commit({("t", 0): 2}, member_id=leaver, generation=1, group="empty")
    [member] = h.stable_group(None, group="stable", protocols=subscribed_to_t)
    h.commit({("t", 0): 3, ("u", 0): 4}, member_id=member, generation=1, group="stable")
    [rebalancing] = h.stable_group(None, group="rebalancing", protocols=subscribed_to_t)
    h.commit({("u", 0): 5}, member_id=rebalancing, generation=1, group="rebalancing")
    h.join(member_id=rebalancing, group="rebalancing", protocols=subscribed_to_t)
    h.advance(500)
    h.leave((leaver, None), group="empty")  # Empty from t=500
    h.advance(499)
    records_before = len(h.records)
    _expire(h)
    assert h.records[records_before:] == []
    h.advance(1)  # t=1000
    _expire(h)
    assert h.records[records_before:] == [
        Record(OffsetKey("simple", "t", 0), None), Record(GroupKey("simple"), None),
        Record(OffsetKey("stable", "u", 0), None)]
    assert h.group("simple") is None and list(h.offsets("stable")) == [("t", 0)]
    h.advance(500)  # t=1500: the Empty group's offsets are due
    _expire(h)
    assert h.records[-2:] == [Record(OffsetKey("empty", "t", 0), None),
                              Record(GroupKey("empty"), None)]
    assert h.group("empty") is None
    assert list(h.offsets("rebalancing")) == [("u", 0)]


def test_an_expiring_empty_group_is_dead_while_its_tombstone_is_written():
    """Nothing may join a group whose tombstone is being written (applying it would delete the
    joiner's group); if the write fails the group is back, Empty, with its offsets."""
    h = Harness(offsets_retention_ms=1000)
    h.commit({("t", 0): 1})
    h.advance(1000)
    h.hold_next_write = True
    _expire(h)
    assert h.group().state is S.DEAD
    assert h.reply(h.join()).error is E.coordinator_not_available
    h.release_writes(E.not_coordinator)
    assert h.group().state is S.EMPTY and list(h.offsets()) == [("t", 0)]
    h.hold_next_write = True
    _expire(h)
    h.release_writes()
    assert h.group() is None


def test_offset_with_an_explicit_expire_timestamp_expires_then():
    """An offset committed with a retention time (v2-4) expires at its own timestamp, even in
    a Stable group subscribed to its topic."""
    h = Harness(offsets_retention_ms=1000)
    subscribed_to_t = (("range", encode_subscription(Subscription(("t",)))),)
    [member] = h.stable_group(None, protocols=subscribed_to_t)
    h.commit({("t", 0): 3}, member_id=member, generation=1, version=2, retention_ms=5000)
    h.advance(4999)
    h.heartbeat(member, 1)
    _expire(h)
    assert list(h.offsets()) == [("t", 0)]
    h.advance(1)
    _expire(h)
    assert h.offsets() == {} and h.records[-1] == Record(OffsetKey("g", "t", 0), None)


def test_a_simple_group_whose_first_commit_is_not_written_is_gone_again():
    h = Harness()
    h.fail_next_write = ErrorCode.not_coordinator
    reply = h.commit({("t", 0): 5}, group="simple")
    assert reply.errors == (("t", 0, ErrorCode.not_coordinator),)
    assert h.shard.list_groups(None, None) == [] and h.shard.describe("simple") is None
    assert h.commit({("t", 0): 6}, group="simple").errors == (("t", 0, ErrorCode.none),)
    assert h.shard.list_groups(None, None) == [("simple", "", "Empty", "classic")]


def test_an_expiry_pass_leaves_a_group_whose_first_commit_is_being_written():
    """A simple consumer's first commit makes its Empty group at once but its offsets only once
    written: an expiry pass meanwhile must not take the group for one with no offsets and
    delete it (Kafka counts pending commits as offsets: GroupMetadata.hasOffsets)."""
    h = Harness(offsets_retention_ms=1000)
    h.hold_next_write = True
    h.commit({("t", 0): 1})
    records_before = len(h.records)
    _expire(h)
    assert h.records[records_before:] == []
    h.release_writes()
    assert h.group() is not None and h.fetch() == [FetchedOffset("t", 0, 1)]
    h.advance(1000)
    _expire(h)   # once written, the offset and its group age as before
    h.release_writes()
    assert h.group() is None and h.fetch() == []


def test_offset_delete_leaves_a_group_whose_commit_is_being_written():
    """OffsetDelete of every offset an Empty group has deletes the group too, but not while a
    commit to it is being written: the group would lose the offsets that commit answers for."""
    h = Harness()
    h.commit({("t", 0): 1})
    h.hold_next_write = True
    h.commit({("u", 0): 2})
    records_before = len(h.records)
    h.delete_offsets([("t", 0)])
    assert h.records[records_before:] == [Record(OffsetKey("g", "t", 0), None)]
    h.release_writes()
    assert h.group() is not None and h.fetch() == [FetchedOffset("u", 0, 2)]
