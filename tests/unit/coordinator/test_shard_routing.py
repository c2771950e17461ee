"""Rules that span both group types, decided by the shard (coordinator/shard.py) and tested
pure, with the manual-clock driver: which type holds a group id, a classic JoinGroup meeting an
empty consumer group, DeleteGroups taking a group and its offsets in one write, a simple group
giving way to a consumer group, offsets kept by group id across a change of type."""
from __future__ import annotations

from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, OffsetKey, Record
from tests.unit.coordinator.consumer.test_migration import Mixed

E = ErrorCode


def empty_consumer_group(h: Mixed) -> None:
    reply = h.cg_join("m1")
    assert reply.error is E.none
    assert h.cg_heartbeat("m1", -1).error is E.none
    assert "g" in h.consumer.groups and not h.consumer.groups["g"].members


def test_a_classic_join_deletes_the_empty_consumer_group_first_and_keeps_its_offsets():
    h = Mixed()
    empty_consumer_group(h)
    assert h.commit({("t", 0): 42}).errors == (("t", 0, E.none),)
    h.hold_next_write = True
    token = h.join(instance="static-a")
    assert h.reply(token) is None and "g" not in h.consumer.groups   # its deletion in flight
    assert "g" not in h.coordinator.groups                           # no classic group yet
    h.release_writes()
    h.advance(0)
    assert h.reply(token).error is E.none and "g" in h.coordinator.groups
    assert h.offsets()[("t", 0)].offset == 42     # kept by group id, whatever holds it


def test_a_classic_join_is_refused_when_the_empty_consumer_group_cannot_be_deleted():
    h = Mixed()
    empty_consumer_group(h)
    h.fail_next_write = E.not_coordinator
    token = h.join(instance="static-a")
    assert h.reply(token).error is E.not_coordinator
    assert "g" in h.consumer.groups and "g" not in h.coordinator.groups


def test_a_consumer_member_joining_while_the_deletion_is_written_takes_the_classic_member_in():
    """The deletion is written before the classic JoinGroup goes on: a consumer member that
    joins meanwhile makes a consumer group again, and the classic member joins it as a
    classic-protocol member instead of forming a classic group beside it."""
    h = Mixed()
    empty_consumer_group(h)
    h.hold_next_write = True
    token = h.join(instance="static-a")
    assert h.cg_join("m2").error is E.none
    h.release_writes()
    assert h.reply(token).error in (E.none, E.member_id_required)
    assert "g" not in h.coordinator.groups
    assert {m.member_id for m in h.consumer.groups["g"].members.values()} >= {"m2"}


def test_delete_groups_takes_a_consumer_group_and_its_offsets_in_one_write():
    h = Mixed()
    empty_consumer_group(h)
    h.commit({("t", 0): 1, ("t", 1): 2})
    written = len(h.records)
    assert h.delete("g") == {"g": E.none}
    kinds = [type(r.key).__name__ for r in h.records[written:]]
    assert kinds[:2] == ["OffsetKey", "OffsetKey"]     # the offsets first, as Kafka
    assert h.offsets() == {} and "g" not in h.consumer.groups
    assert not any(r.key == GroupKey("g") for r in h.records[written:])   # no classic record


def test_a_failed_delete_groups_write_keeps_the_group_and_its_offsets():
    h = Mixed()
    empty_consumer_group(h)
    h.commit({("t", 0): 1})
    h.fail_next_write = E.not_coordinator
    assert h.delete("g") == {"g": E.not_coordinator}
    assert "g" in h.consumer.groups and list(h.offsets()) == [("t", 0)]


def test_a_simple_group_gives_way_to_a_consumer_group_and_its_offsets_stay():
    h = Mixed()
    h.commit({("t", 0): 5})                         # a simple (memberless classic) group
    assert "g" in h.coordinator.groups
    assert h.cg_join("m1").error is E.none
    assert "g" not in h.coordinator.groups and "g" in h.consumer.groups
    assert h.offsets()[("t", 0)].offset == 5
    assert [row[3] for row in h.shard.list_groups(None, None)] == ["consumer"]
    # and at a restart the same: the offsets' simple group is replaced by the consumer group
    fresh = Mixed()
    h.replay_into(fresh)
    assert "g" not in fresh.coordinator.groups and "g" in fresh.consumer.groups


def test_an_upgrade_whose_write_fails_puts_the_simple_group_back():
    h = Mixed()
    h.commit({("t", 0): 5})
    h.fail_next_write = E.not_coordinator
    assert h.cg_join("m1").error is E.not_coordinator
    assert "g" in h.coordinator.groups and "g" not in h.consumer.groups


def test_offset_records_of_a_group_nobody_holds_make_a_simple_group_when_loading():
    h = Mixed()
    h.shard.replay(Record(OffsetKey("x", "t", 0), None))          # a tombstone makes nothing
    assert "x" not in h.coordinator.groups
    h.commit({("t", 0): 1}, group="x")
    fresh = Mixed()
    h.replay_into(fresh)
    assert fresh.coordinator.groups["x"].protocol_type is None
