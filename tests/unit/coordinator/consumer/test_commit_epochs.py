"""OffsetCommit at an older member epoch (Kafka 4.4, KIP-1251 assignment epochs): accepted for a
partition the member has held since that epoch, refused for one given to it later or not its
own; the epochs are in the ConsumerGroupCurrentMemberAssignment record and survive a restart."""
from __future__ import annotations

from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.coordinator import ConsumerCoordinator
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.consumer.harness import ConsumerHarness, topic_id

T = topic_id("t")


def split_pair() -> ConsumerHarness:
    """a joins (epoch 2, both partitions), b joins (epoch 3); a gives partition 1 up and moves
    to epoch 3 keeping partition 0 (assigned at 2); b gets partition 1 at epoch 3."""
    h = ConsumerHarness({"t": 2})
    ra = h.join("a")
    h.join("b")
    ra = h.heartbeat("a", 2, owned=ra.assignment)        # told to revoke partition 1
    ra = h.heartbeat("a", 2, owned=ra.assignment)        # revoked: epoch 3
    rb = h.heartbeat("b", 3, owned=())
    assert (ra.member_epoch, rb.member_epoch) == (3, 3)
    assert h.member("a").assignment_epochs == {(T, 0): 2}
    assert h.member("b").assignment_epochs == {(T, 1): 3}
    return h


def committed(h, member_id: str, epoch: int, partition: int) -> ErrorCode:
    [(_, _, error)] = h.commit({("t", partition): 7}, member_id, epoch).errors
    return error


def test_an_older_epoch_commits_only_partitions_held_since_then():
    h = split_pair()
    assert committed(h, "a", 3, 0) == ErrorCode.none          # the current epoch
    assert committed(h, "a", 2, 0) == ErrorCode.none          # held since epoch 2
    assert committed(h, "a", 1, 0) == ErrorCode.stale_member_epoch   # before it had it
    assert committed(h, "a", 2, 1) == ErrorCode.stale_member_epoch   # b's now
    assert committed(h, "b", 2, 1) == ErrorCode.stale_member_epoch   # given to b at 3
    assert committed(h, "a", 4, 0) == ErrorCode.stale_member_epoch   # newer than its epoch


def test_one_refused_partition_refuses_the_whole_commit():
    h = split_pair()
    reply = h.commit({("t", 0): 7, ("t", 1): 8}, "a", 2)
    assert [e for _, _, e in reply.errors] == [ErrorCode.stale_member_epoch] * 2


def test_assignment_epochs_survive_a_restart():
    h = split_pair()
    fresh = ConsumerCoordinator()
    for record in h.records:
        key, value = record.encode()
        decoded = rec.decode_key(int.from_bytes(key[:2], "big"), key)
        fresh.replay(rec.ConsumerRecord(decoded, rec.decode_value(decoded, value)))
    assert fresh.groups["g"].members["a"].assignment_epochs == {(T, 0): 2}
    assert fresh.groups["g"].members["b"].assignment_epochs == {(T, 1): 3}


def test_the_record_carries_each_topics_epochs_as_its_tag_0():
    value = rec.CurrentAssignmentValue(5, 4, 0, {T: frozenset({0, 1})}, {}, {(T, 0): 2, (T, 1): 5})
    topic = (T + b"\x03" + (0).to_bytes(4, "big") + (1).to_bytes(4, "big")
             # one tagged field: tag 0, 9 bytes: a compact array of two int32
             + b"\x01\x00\x09\x03" + (2).to_bytes(4, "big") + (5).to_bytes(4, "big"))
    expected = (b"\x00\x00" + (5).to_bytes(4, "big") + (4).to_bytes(4, "big") + b"\x00"
                + b"\x02" + topic + b"\x01" + b"\x00")
    data = rec.encode_value(value)
    assert data == expected
    key = rec.ConsumerKey(rec.CURRENT_ASSIGNMENT, "g", "a")
    assert rec.decode_value(key, data) == value


def test_a_record_without_epochs_counts_its_partitions_from_the_member_epoch():
    """As Kafka replays a record written before assignment epochs (Kafka < 4.3)."""
    old = rec.CurrentAssignmentValue(5, 4, 0, {T: frozenset({0, 1})}, {})
    key = rec.ConsumerKey(rec.CURRENT_ASSIGNMENT, "g", "a")
    coordinator = ConsumerCoordinator()
    coordinator.replay(rec.ConsumerRecord(key, rec.decode_value(key, rec.encode_value(old))))
    member = coordinator.groups["g"].members["a"]
    assert member.assignment_epochs == {}
    assert member.assignment_epoch(T, 1) == 5 and member.assignment_epoch(T, 2) is None
