"""Streams group records replayed into the groups: a member's records in any order make the same
member, tombstones take away exactly their part, the group's tombstone the group."""
import itertools

from roster.coordinator.streams import records as rec
from roster.coordinator.streams.model import Endpoint, MemberState, StreamsMember, TaskSets, \
    freeze
from roster.coordinator.streams.replay import replay
from roster.coordinator.streams.topology import Subtopology, Topology

MEMBER = StreamsMember("m", instance_id="i", rack_id="r", client_id="c", client_host="h",
                       rebalance_timeout_ms=60_000, topology_epoch=2, process_id="p",
                       user_endpoint=Endpoint("iq", 8080), client_tags=(("zone", "a"),),
                       member_epoch=4, previous_member_epoch=3,
                       state=MemberState.UNREVOKED_TASKS,
                       assigned=TaskSets(freeze([("0", [0])]), freeze([("1", [2])])),
                       pending_revocation=TaskSets(freeze([("0", [1])])),
                       active_epochs={("0", 0): 4, ("0", 1): 2})


def replayed(records):
    groups = {}
    for record in records:
        replay(groups, record)
    return groups


def test_a_members_records_in_any_order_make_the_same_member():
    records = [rec.member_record("g", MEMBER), rec.current_record("g", MEMBER),
               rec.target_record("g", "m", TaskSets(freeze([("0", [0, 1])])))]
    for order in itertools.permutations(records):
        group = replayed(order)["g"]
        assert group.members == {"m": MEMBER}
        assert group.static_members == {"i": "m"}
        assert group.target == {"m": TaskSets(freeze([("0", [0, 1])]))}


def test_epochs_topology_and_tombstones():
    topology = Topology(2, (Subtopology("0", ("in",)),))
    groups = replayed([rec.epoch_record("g", 5, 77, 2, (("num.standby.replicas", "1"),)),
                       rec.target_epoch_record("g", 5), rec.topology_record("g", topology),
                       rec.member_record("g", MEMBER), rec.current_record("g", MEMBER)])
    group = groups["g"]
    assert (group.group_epoch, group.metadata_hash, group.validated_topology_epoch,
            group.assignment_epoch, group.topology) == (5, 77, 2, 5, topology)
    assert group.last_assignment_configs == (("num.standby.replicas", "1"),)
    for record in rec.member_tombstones("g", "m"):
        replay(groups, record)
    assert group.members == {} and group.static_members == {} and group.target == {}
    for record in rec.group_tombstones("g"):
        replay(groups, record)
    assert groups == {}
    replay(groups, rec.member_tombstones("g", "m")[0])    # a tombstone for a group gone
    assert groups == {}


def test_group_states():
    from roster.coordinator.streams.model import GroupState, StreamsGroup
    group = StreamsGroup("g")
    assert group.state(topology_ready=True) == GroupState.EMPTY
    group.put_member(StreamsMember("m", member_epoch=1))
    assert group.state(topology_ready=True) == GroupState.NOT_READY     # no topology yet
    group.topology = Topology(0)
    assert group.state(topology_ready=False) == GroupState.NOT_READY == "NotReady"
    group.group_epoch, group.assignment_epoch = 2, 1
    assert group.state(topology_ready=True) == GroupState.ASSIGNING
    group.assignment_epoch = 2
    assert group.state(topology_ready=True) == GroupState.RECONCILING
    group.put_member(StreamsMember("m", member_epoch=2))
    assert group.state(topology_ready=True) == GroupState.STABLE
