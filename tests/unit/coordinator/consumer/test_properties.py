"""Random histories of well-behaved clients against the pure core (hypothesis): whatever the
order of joins, heartbeats, leaves, crashes, static restarts, partition growth and writes that
fail (the group is put back as it was), no partition
is ever held by two clients at once; once everyone heartbeats a few rounds the group is Stable
with every partition owned by exactly one member, balanced within one; and replaying the
records written rebuilds the same group."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.coordinator import ConsumerCoordinator
from roster.coordinator.consumer.model import GroupState
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.consumer.harness import ConsumerHarness


class Client:
    def __init__(self, name: str, instance_id: str | None) -> None:
        self.name = name
        self.member_id = name
        self.instance_id = instance_id
        self.epoch = 0
        self.owned: frozenset = frozenset()
        self.alive = True

    def pairs(self):
        by_topic: dict = {}
        for t, p in self.owned:
            by_topic.setdefault(t, []).append(p)
        return tuple((t, tuple(sorted(ps))) for t, ps in sorted(by_topic.items()))

    def step(self, h: ConsumerHarness) -> None:
        if self.epoch == 0:
            r = h.join(self.member_id, topics=("t", "u"), instance_id=self.instance_id)
        else:
            r = h.heartbeat(self.member_id, self.epoch, owned=self.pairs(),
                            instance_id=self.instance_id)
        if r.error in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self.owned, self.epoch = frozenset(), 0       # drop everything, rejoin
            return
        if r.error in (ErrorCode.unreleased_instance_id, ErrorCode.not_coordinator):
            return                                       # try again later
        assert r.error == ErrorCode.none, r
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = frozenset((t, p) for t, ps in r.assignment for p in ps)


ops = st.lists(st.tuples(st.sampled_from(["join", "beat", "beat", "beat", "leave", "crash",
                                           "bounce", "tick", "grow", "fail"]),
                         st.integers(0, 7)), min_size=15, max_size=80)


@settings(max_examples=200, deadline=None)
@given(ops, st.booleans())
def test_random_histories(history, static):
    h = ConsumerHarness({"t": 5, "u": 3})
    clients: list[Client] = []
    serial = 0

    def check_disjoint():
        seen: dict = {}
        for c in clients:
            if not c.alive:
                continue
            for tp in c.owned:
                assert tp not in seen, f"{tp} held by {seen[tp]} and {c.name}"
                seen[tp] = c.name

    for op, i in history:
        live = [c for c in clients if c.alive]
        if op == "join" or not live:
            serial += 1
            c = Client(f"m{serial}", f"i{serial}" if static else None)
            clients.append(c)
            c.step(h)
        else:
            c = live[i % len(live)]
            if op == "beat":
                c.step(h)
            elif op == "leave":
                if c.epoch > 0:
                    h.heartbeat(c.member_id, -2 if c.instance_id else -1,
                                instance_id=c.instance_id)
                c.alive = False
            elif op == "crash":
                c.alive = False                   # stops heartbeating; the session does the rest
            elif op == "bounce" and c.instance_id is not None:
                if c.epoch > 0:
                    h.heartbeat(c.member_id, -2, instance_id=c.instance_id)
                c.alive = False
                serial += 1
                again = Client(f"m{serial}", c.instance_id)
                clients.append(again)
                again.step(h)
            elif op == "tick":
                # time passes; live clients heartbeat within their session
                h.advance(20_000)
                for other in [x for x in clients if x.alive]:
                    other.step(h)
            elif op == "fail":
                h.fail_next_write = ErrorCode.not_coordinator   # the next write is lost
            elif op == "grow":
                n = h.image.lookup("t")[1]
                h.set_topic("t", n + 1)
        check_disjoint()

    # let the sessions of the departed run out, then converge
    for _ in range(3):
        h.advance(20_000)
        for c in [x for x in clients if x.alive]:
            c.step(h)
    for _ in range(6):
        for c in [x for x in clients if x.alive]:
            c.step(h)
        check_disjoint()
    live = [c for c in clients if c.alive]
    if live and "g" in h.coordinator.groups:
        group = h.group()
        assert group.state() == GroupState.STABLE
        total = sum(n for _, n in h.image.topics.values())
        union = frozenset().union(*(c.owned for c in live))
        assert len(union) == total == sum(len(c.owned) for c in live)
        counts = [len(c.owned) for c in live]
        assert max(counts) - min(counts) <= 1
        for c in live:
            assert c.owned == frozenset((t, p) for t, ps in group.members[c.member_id]
                                        .assigned.items() for p in ps)

    # replaying what was written rebuilds the groups
    fresh = ConsumerCoordinator()
    for record in h.records:
        key, value = record.encode()
        decoded = rec.decode_key(int.from_bytes(key[:2], "big"), key)
        fresh.replay(rec.ConsumerRecord(decoded, rec.decode_value(decoded, value)))
    assert set(fresh.groups) == set(h.coordinator.groups)
    for gid, a in h.coordinator.groups.items():
        b = fresh.groups[gid]
        for name in ("group_epoch", "assignment_epoch", "members", "static_members", "target",
                     "owners", "subscription_metadata", "resolved_regex"):
            assert getattr(a, name) == getattr(b, name), name
