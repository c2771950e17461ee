"""DescribeGroups, ListGroups and DeleteGroups (with Kafka's testValidateDeleteGroup
and testIsInStates cases)."""
import pytest

from roster.coordinator.classic.admin import GroupDescription, MemberDescription
from roster.coordinator.messages import FetchedOffset, JoinReply
from roster.coordinator.classic.states import GroupState
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import GroupKey, OffsetKey, Record
from tests.unit.coordinator.harness import Harness

S = GroupState
E = ErrorCode


def _group_in(h, state):
    """Bring group "g" into `state` through requests (Dead: deleted while its write is held)."""
    if state is S.EMPTY:
        h.commit({("t", 0): 1})
    elif state is S.PREPARING_REBALANCE:
        h.join(instance="i-a")
    elif state is S.COMPLETING_REBALANCE:
        h.join(instance="i-a")
        h.advance(0)
    elif state is S.STABLE:
        h.stable_group("i-a")
    elif state is S.DEAD:
        h.commit({("t", 0): 1})
        h.hold_next_write = True
        h.delete("g")
    assert h.group().state is state


@pytest.mark.parametrize("state, error", [
    (None, E.group_id_not_found),
    (S.EMPTY, E.none),
    (S.PREPARING_REBALANCE, E.non_empty_group),
    (S.COMPLETING_REBALANCE, E.non_empty_group),
    (S.STABLE, E.non_empty_group),
    (S.DEAD, E.group_id_not_found),
])
def test_validate_delete_group(state, error):
    """Only an Empty group can be deleted; a missing or Dead one is GROUP_ID_NOT_FOUND."""
    h = Harness()
    if state is not None:
        _group_in(h, state)
    assert h.delete("g") == {"g": error}


def test_delete_group_writes_offset_tombstones_then_the_group_tombstone():
    """Deleting an Empty group tombstones every committed offset, then the group."""
    h = Harness()
    h.commit({("u", 0): 5, ("t", 1): 4, ("t", 0): 3})
    records_before = len(h.records)
    assert h.delete("g") == {"g": E.none}
    assert h.records[records_before:] == [
        Record(OffsetKey("g", "t", 0), None), Record(OffsetKey("g", "t", 1), None),
        Record(OffsetKey("g", "u", 0), None), Record(GroupKey("g"), None)]
    assert h.group() is None
    assert h.shard.fetch_offsets("g", [("t", 0)]) == [FetchedOffset("t", 0)]


def test_delete_groups_answers_each_group_on_its_own():
    """A batch mixes outcomes: each group is checked and answered separately."""
    h = Harness()
    h.commit({("t", 0): 1})
    h.stable_group(None, group="busy")
    assert h.delete("g", "missing", "busy") == {
        "g": E.none, "missing": E.group_id_not_found, "busy": E.non_empty_group}
    assert h.group() is None and h.group("busy").state is S.STABLE


def test_delete_group_write_failure_keeps_the_group():
    """If the tombstones are not written the group stays as it was, answered with the write's
    error, and it can be used again."""
    h = Harness()
    h.commit({("t", 0): 9})
    h.fail_next_write = E.not_coordinator
    assert h.delete("g") == {"g": E.not_coordinator}
    group = h.group()
    assert group.state is S.EMPTY and h.offsets()[("t", 0)].offset == 9
    assert h.reply(h.join()).error is E.member_id_required


def test_group_being_deleted_is_dead_to_other_requests():
    """While its tombstones are written the group is Dead: joins, commits and heartbeats get
    COORDINATOR_NOT_AVAILABLE, Describe and List do not show it."""
    h = Harness()
    h.commit({("t", 0): 1})
    h.hold_next_write = True
    assert h.delete("g") is None
    assert h.reply(h.join()) == JoinReply(error=E.coordinator_not_available)
    assert h.commit({("t", 0): 2}).errors == (("t", 0, E.coordinator_not_available),)
    assert h.heartbeat("m", 0) is E.coordinator_not_available
    assert h.shard.describe("g") is None and h.shard.list_groups(None, None) == []
    h.release_writes()
    assert h.group() is None
    assert h.reply(h.join()).error is E.member_id_required and h.group().generation == 0


def test_describe_stable_group():
    """A Stable group is described with its protocol, each member's metadata and assignment."""
    h = Harness()
    leader, follower = h.stable_group("i-a", None)
    assert h.shard.describe("g") == GroupDescription(
        "g", E.none, "Stable", "consumer", "range", (
            MemberDescription(leader, "i-a", "client", "/127.0.0.1", b"range-meta",
                              f"assignment-of-{leader}".encode()),
            MemberDescription(follower, None, "client", "/127.0.0.1", b"range-meta",
                              f"assignment-of-{follower}".encode())),
        generation=1, leader=leader)


def test_describe_rebalancing_group_shows_no_protocol_or_metadata():
    """Outside Stable there is no protocol data and no member metadata; the assignment bytes
    the members still hold are shown (as Kafka's new coordinator does)."""
    h = Harness()
    leader, follower = h.stable_group(None, None)
    h.join(member_id=leader)
    described = h.shard.describe("g")
    assert (described.state, described.protocol_type, described.protocol_data) == \
        ("PreparingRebalance", "consumer", "")
    assert [(m.member_id, m.metadata, m.assignment) for m in described.members] == [
        (leader, b"", f"assignment-of-{leader}".encode()),
        (follower, b"", f"assignment-of-{follower}".encode())]


def test_describe_missing_and_simple_groups():
    """A missing group is None (the edge answers per version); a simple group is Empty with
    no protocol type and no members."""
    h = Harness()
    assert h.shard.describe("g") is None
    h.commit({("t", 0): 1})
    assert h.shard.describe("g") == GroupDescription(
        "g", E.none, "Empty", "", "", (), generation=0, leader=None)


def test_is_in_states():
    """ListGroups filters by lower-cased state names and by type (classic only)."""
    h = Harness()
    h.commit({("t", 0): 1}, group="simple")
    h.stable_group(None, group="stable")
    h.join(instance="i-a", group="preparing")

    def listed(states=None, types=None):
        return h.shard.list_groups(states, types)

    assert listed() == [("preparing", "consumer", "PreparingRebalance", "classic"),
                        ("simple", "", "Empty", "classic"),
                        ("stable", "consumer", "Stable", "classic")]
    assert listed({"empty"}) == [("simple", "", "Empty", "classic")]
    assert listed({"preparingrebalance", "stable"}) == [
        ("preparing", "consumer", "PreparingRebalance", "classic"),
        ("stable", "consumer", "Stable", "classic")]
    assert listed({"PreparingRebalance"}) == []
    assert listed({"completingrebalance"}) == []
    assert listed(types={"classic"}) == listed()
    assert listed(types={"consumer"}) == []
