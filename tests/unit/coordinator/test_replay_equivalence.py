"""Replay equivalence: for random operation sequences, a coordinator rebuilt from the written
records holds what the live one holds.

Offsets must match for every group at every point. Group membership is written at the points
where Kafka writes it (sync completion, static replacement, creation, an empty join phase,
deletion), so it must match for every group that is Stable or Empty now; a group in the middle
of a rebalance legitimately differs (its in-flight state is soft and is lost on restart, as in
Kafka).
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.coordinator.config import GroupConfig
from roster.coordinator.shard import GroupShard
from roster.group_types import GROUP_TYPES
from roster.coordinator.classic.states import GroupState
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import decode
from tests.unit.coordinator.harness import Harness

GROUPS = ("g", "h")
INSTANCES = ("i-1", "i-2", None, None)  # None: a dynamic member

step = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(GROUPS), st.sampled_from(INSTANCES)),
    st.tuples(st.just("sync"), st.sampled_from(GROUPS), st.integers(0, 3)),
    st.tuples(st.just("heartbeat"), st.sampled_from(GROUPS), st.integers(0, 3)),
    st.tuples(st.just("leave"), st.sampled_from(GROUPS), st.integers(0, 3)),
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.integers(0, 3)),
    st.tuples(st.just("advance"), st.sampled_from([100, 3_000, 11_000, 40_000])),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS)),
)


def run(h: Harness, steps) -> None:
    for s in steps:
        kind = s[0]
        if kind == "advance":
            h.advance(s[1])
            continue
        group = h.group(s[1])
        members = sorted(group.members) if group else []
        if kind == "join":
            token = h.join(group=s[1], instance=s[2])
            reply = h.reply(token)
            if reply is not None and reply.error is ErrorCode.member_id_required:
                h.join(group=s[1], member_id=reply.member_id)
        elif kind == "delete":
            h.apply(h.shard.delete_groups([s[1]], h.now, h.token()))
        elif not members:
            if kind == "commit":
                h.commit({("t", s[2]): h.now}, group=s[1])  # a simple group's commit
        else:
            member = group.members[members[s[2] % len(members)]]
            generation = group.generation
            if kind == "sync":
                assignments = [(m, m.encode()) for m in members] \
                    if group.is_leader(member.member_id) else []
                h.sync(member.member_id, generation, assignments,
                       instance=member.group_instance_id, group=s[1])
            elif kind == "heartbeat":
                h.heartbeat(member.member_id, generation, member.group_instance_id, group=s[1])
            elif kind == "leave":
                h.leave((member.member_id, member.group_instance_id), group=s[1])
            elif kind == "commit":
                h.commit({("t", s[2]): h.now}, member_id=member.member_id,
                         generation=generation, instance=member.group_instance_id, group=s[1])


def snapshot(group):
    return {
        "generation": group.generation,
        "protocol_type": group.protocol_type,
        "protocol": group.protocol_name,
        "leader": group.leader_id,
        "static": dict(group.static_members),
        "members": {m.member_id: (m.group_instance_id, m.session_timeout_ms, m.assignment)
                    for m in group.members.values()},
    }


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(step, max_size=40))
def test_replaying_the_records_rebuilds_the_live_state(steps):
    h = Harness()
    run(h, steps)
    rebuilt = GroupShard(GroupConfig(), lambda prefix: prefix, GROUP_TYPES)
    for record in h.records:
        # through the real byte layouts, as a restart reads them
        key, value = record.encode()
        rebuilt.replay(decode(key, value))
    live = {g: group for g, group in h.coordinator.groups.items()
            if group.state is not GroupState.DEAD}
    for group_id in set(live) | set(h.shard.offsets.groups()):
        assert dict(rebuilt.offsets.of(group_id)) == h.offsets(group_id), group_id
    for group_id, group in live.items():
        replayed = rebuilt.type_named("classic").groups.get(group_id)
        if group.state in (GroupState.STABLE, GroupState.EMPTY) and (group.members
                                                                     or h.offsets(group_id)):
            assert replayed is not None
            assert replayed.state is group.state
            assert snapshot(replayed) == snapshot(group), group_id
    for group_id in set(rebuilt.type_named("classic").groups) - set(live):
        # a group the live coordinator no longer has left no durable trace of itself
        assert not rebuilt.type_named("classic").groups[group_id].members and not h.offsets(group_id)
