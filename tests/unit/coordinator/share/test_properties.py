"""Share groups under random heartbeats, leaves, session expiries, topic changes and failed
writes (hypothesis): after every step the groups in memory equal a replay of the records
written so far (a failed write's changes are put back, nothing half-applied stays), every
member that answered is at the group's target, and every partition of a subscribed topic is in
the target, its counts balanced."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.coordinator.share import records as rec
from roster.coordinator.share.replay import replay
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.share.test_coordinator import A, B, G, Driver

MEMBERS = ("m1", "m2", "m3", "m4")
TOPICS = (("orders",), ("audit",), ("orders", "audit"))

steps = st.lists(st.one_of(
    st.tuples(st.just("join"), st.sampled_from(MEMBERS), st.sampled_from(TOPICS),
              st.booleans()),
    st.tuples(st.just("beat"), st.sampled_from(MEMBERS), st.none(), st.booleans()),
    st.tuples(st.just("subscribe"), st.sampled_from(MEMBERS), st.sampled_from(TOPICS),
              st.booleans()),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS), st.none(), st.booleans()),
    st.tuples(st.just("wait"), st.none(), st.none(), st.booleans()),
    st.tuples(st.just("grow"), st.none(), st.none(), st.booleans()),
), max_size=40)


def replayed(records) -> dict:
    groups: dict = {}
    for record in records:
        key, value = record.encode()
        replay(groups, rec.decode(key, value))
    return groups


@settings(max_examples=150, deadline=None)
@given(steps)
def test_memory_always_equals_the_replay_of_what_was_written(plan):
    d = Driver(topics={"orders": (A, 3), "audit": (B, 2)})
    stale = False         # a topic grew and no heartbeat has answered since
    for kind, member, topics, fail in plan:
        failing = ErrorCode.not_coordinator if fail else None
        known = G in d.share.groups and member in d.group.members
        epoch = d.group.members[member].member_epoch if known else 0
        reply = None
        if kind == "join":
            reply = d.beat(member, 0, topics, fail_write=failing)
        elif kind == "beat" and known:
            reply = d.beat(member, epoch, fail_write=failing)
        elif kind == "subscribe" and known:
            reply = d.beat(member, epoch, topics, fail_write=failing)
        elif kind == "leave" and known:
            reply = d.beat(member, -1, fail_write=failing)
        elif kind == "wait":
            d.advance(20_000)
        elif kind == "grow":
            name = "audit"
            tid, count = d.image.topics[name]
            d.image.topics[name] = (tid, count + 1)
            stale = True
        if reply is not None and reply.error == ErrorCode.none and kind != "leave":
            stale = False
        assert replayed(d.records) == d.share.groups
        if G not in d.share.groups:
            continue
        group = d.group
        counts = {A: d.image.topics["orders"][1], B: d.image.topics["audit"][1]}
        names = {"orders": A, "audit": B}
        if group.group_epoch == group.assignment_epoch and group.members and not stale:
            subscribed = {names[n] for m in group.members.values() for n in m.subscribed}
            for tid in subscribed:
                held = {p for t in group.target.values() for p in t.get(tid, ())}
                assert held == set(range(counts[tid]))
        for m in group.members.values():
            assert m.member_epoch <= group.group_epoch
            if m.member_epoch == group.assignment_epoch:     # at the target: holds its part
                wanted = {names[n] for n in m.subscribed}
                assert m.assigned == {tid: ps for tid, ps in group.target.get(m.member_id, {})
                                      .items() if tid in wanted}
