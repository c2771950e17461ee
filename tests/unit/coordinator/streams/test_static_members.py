"""Static membership in streams groups (Kafka 4.4, KAFKA-20169) on the manual clock: a restart
within the session timeout gets its tasks back and changes no other member's assignment; a
session that ends gives them away; an instance id in use is refused as Kafka refuses it. The
group is built and changed only through its records, replayed as a restart replays them."""
import pytest

from roster.coordinator.consumer.validation import RequestError
from roster.coordinator.streams import records as rec
from roster.coordinator.streams.assignor import MemberSpec, SubtopologySpec, assign
from roster.coordinator.streams.messages import StreamsConfig
from roster.coordinator.streams.model import STATIC_LEAVE_EPOCH, StreamsMember, TaskSets, freeze
from roster.coordinator.streams.replay import replay
from roster.coordinator.streams.static_members import (
    bumps_group_epoch,
    check_group_size,
    expired,
    leave_temporarily,
    rejoin_records,
    static_member,
)
from roster.coordinator.streams.topology import Subtopology, TopicInfo, Topology
from roster.protocol.errors import ErrorCode

CONFIG = StreamsConfig()
TOPOLOGY = Topology(0, (Subtopology("0", ("in",),
                                    state_changelog_topics=(TopicInfo("app-0-changelog"),)),))
SUBTOPOLOGIES = [SubtopologySpec("0", 4, True)]


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


def tasks(*partitions: int) -> TaskSets:
    return TaskSets(freeze([("0", partitions)]))


def stable_group(clock: Clock):
    """Epoch 10, stable: static member `old` (instance i1, process p1) runs tasks 0-1, dynamic
    member `dyn` (process p2) runs 2-3."""
    groups = {}
    written = []
    members = [StreamsMember("old", instance_id="i1", process_id="p1", topology_epoch=0,
                             member_epoch=10, previous_member_epoch=9, assigned=tasks(0, 1)),
               StreamsMember("dyn", process_id="p2", topology_epoch=0, member_epoch=10,
                             previous_member_epoch=9, assigned=tasks(2, 3))]
    written += [rec.epoch_record("app", 10, validated_topology_epoch=0),
                rec.topology_record("app", TOPOLOGY), rec.target_epoch_record("app", 10)]
    for m in members:
        written += [rec.member_record("app", m), rec.target_record("app", m.member_id,
                                                                   m.assigned),
                    rec.current_record("app", m)]
    apply(groups, written, keep=written)
    group = groups["app"]
    for m in group.members:
        group.session_deadlines[m] = clock.now + CONFIG.session_ms("app")
    return groups, written


def apply(groups, records, keep):
    for record in records:
        key, value = record.encode()
        replay(groups, rec.decode(key, value))   # through the bytes, as a restart reads them
    if keep is not records:
        keep += records


def heard_from(group, member_id, clock):
    group.session_deadlines[member_id] = clock.now + CONFIG.session_ms(group.group_id)


def test_a_restart_within_the_session_gets_its_tasks_back_and_moves_nothing_else():
    clock = Clock()
    groups, written = stable_group(clock)
    group = groups["app"]
    dyn_before, dyn_target_before = group.members["dyn"], group.target["dyn"]

    # the instance shuts down: a heartbeat at epoch -2 keeps its tasks
    clock.advance(1_000)
    heard_from(group, "old", clock)
    left = leave_temporarily(static_member(group, "old", "i1", STATIC_LEAVE_EPOCH).member)
    apply(groups, [rec.current_record("app", left)], written)
    assert group.members["old"].member_epoch == STATIC_LEAVE_EPOCH
    assert group.members["old"].assigned == tasks(0, 1)

    # 44 s later, one ms before its session ends, it is still there, holding its tasks
    clock.advance(CONFIG.session_ms("app") - 1)
    heard_from(group, "dyn", clock)          # the other instance keeps heartbeating
    assert expired(group, clock.now) == []

    # it comes back with a new member id and the same instance id
    join = static_member(group, "new", "i1", 0)
    assert join.replaced == "old" and join.target == tasks(0, 1)
    assert not bumps_group_epoch(group.members["old"], join.member)
    apply(groups, rejoin_records("app", join), written)

    assert "old" not in group.members and group.static_members == {"i1": "new"}
    new = group.members["new"]
    assert (new.member_epoch, new.assigned, group.target["new"]) == (10, tasks(0, 1),
                                                                      tasks(0, 1))
    assert group.group_epoch == 10           # no new epoch: nothing to assign again
    assert group.members["dyn"] == dyn_before and group.target["dyn"] == dyn_target_before
    # and were the assignment computed again, it would be the same
    specs = {m.member_id: MemberSpec(m.process_id, m.assigned) for m in group.members.values()}
    assert assign(specs, SUBTOPOLOGIES) == {"dyn": tasks(2, 3), "new": tasks(0, 1)}

    # a restart of the broker replays what was written into the same group
    reloaded = {}
    apply(reloaded, written, keep=written)
    assert reloaded["app"].members == group.members
    assert reloaded["app"].target == group.target
    assert reloaded["app"].static_members == group.static_members
    assert (reloaded["app"].group_epoch, reloaded["app"].assignment_epoch) == (10, 10)


def test_when_the_session_ends_the_tasks_go_to_the_others():
    clock = Clock()
    groups, written = stable_group(clock)
    group = groups["app"]
    clock.advance(1_000)
    heard_from(group, "dyn", clock)
    heard_from(group, "old", clock)
    left = leave_temporarily(group.members["old"])
    apply(groups, [rec.current_record("app", left)], written)

    clock.advance(CONFIG.session_ms("app"))
    heard_from(group, "dyn", clock)
    assert expired(group, clock.now) == ["old"]
    apply(groups, rec.member_tombstones("app", "old"), written)
    assert set(group.members) == {"dyn"} and "old" not in group.target
    assert group.static_members == {}
    specs = {"dyn": MemberSpec("p2", group.members["dyn"].assigned)}
    assert assign(specs, SUBTOPOLOGIES) == {"dyn": tasks(0, 1, 2, 3)}
    # the instance id is free again: a later join is a new member
    join = static_member(group, "later", "i1", 0)
    assert join.replaced is None and join.member == StreamsMember("later", instance_id="i1")


def test_an_instance_id_in_use_is_refused_as_unreleased():
    groups, _ = stable_group(Clock())
    with pytest.raises(RequestError) as refused:
        static_member(groups["app"], "twin", "i1", 0)
    assert refused.value.error == ErrorCode.unreleased_instance_id
    assert refused.value.message == ("Static member twin with instance id i1 cannot join the "
                                     "group because the instance id is owned by old member.")


def test_the_replaced_member_id_is_fenced():
    groups, written = stable_group(Clock())
    group = groups["app"]
    apply(groups, [rec.current_record("app", leave_temporarily(group.members["old"]))], written)
    apply(groups, rejoin_records("app", static_member(group, "new", "i1", 0)), written)
    with pytest.raises(RequestError) as refused:
        static_member(group, "old", "i1", 10)
    assert refused.value.error == ErrorCode.fenced_instance_id
    assert refused.value.message == ("Static member old with instance id i1 was fenced by "
                                     "member new.")
    assert static_member(group, "new", "i1", 10).member is group.members["new"]


def test_an_unknown_instance_id_past_the_join():
    groups, _ = stable_group(Clock())
    with pytest.raises(RequestError) as refused:
        static_member(groups["app"], "x", "nobody", 3)
    assert refused.value.error == ErrorCode.unknown_member_id
    assert refused.value.message == "Instance id nobody is unknown."


@pytest.mark.parametrize("change, bumps", [
    ({}, False),
    ({"client_id": "other", "client_host": "/10.0.0.1", "rebalance_timeout_ms": 1}, False),
    ({"process_id": "p9"}, True),
    ({"rack_id": "r2"}, True),
    ({"client_tags": (("zone", "b"),)}, True),
    ({"topology_epoch": 1}, True),
])
def test_only_a_change_the_assignment_depends_on_bumps_the_epoch(change, bumps):
    old = StreamsMember("old", instance_id="i1", process_id="p1", rack_id="r1",
                        client_tags=(("zone", "a"),))
    assert bumps_group_epoch(old, old.replace(member_id="new", **change)) is bumps
    assert bumps_group_epoch(None, old)


def test_a_member_away_still_counts_towards_the_maximum_size():
    groups, written = stable_group(Clock())
    group = groups["app"]
    apply(groups, [rec.current_record("app", leave_temporarily(group.members["old"]))], written)
    with pytest.raises(RequestError) as refused:
        check_group_size(group, "third", None, max_size=2)
    assert refused.value.error == ErrorCode.group_max_size_reached
    check_group_size(group, "new", "i1", max_size=2)      # its own rejoin gets in
    check_group_size(group, "dyn", None, max_size=2)      # a member already in
