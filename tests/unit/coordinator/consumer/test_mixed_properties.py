"""Random histories of a consumer group that also holds classic-protocol members (an online
upgrade under way), against the pure core (hypothesis). Classic clients behave as eager
librdkafka members do: told REBALANCE_IN_PROGRESS, they give up everything, rejoin and take
what SyncGroup hands them; consumer clients as in test_properties.py; static clients restart
with either protocol under the same instance id; writes fail now and then. Whatever happens,
no partition is held by two clients at once; once everyone keeps heartbeating, the group is
Stable with every partition held by exactly one client; and the records replay to the same
group."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.coordinator import ConsumerCoordinator
from roster.coordinator.consumer.model import GroupState
from roster.coordinator.messages import JoinRequest, LeaveIdentity, LeaveRequest, SyncRequest
from roster.coordinator.results import Result
from roster.protocol import consumer_protocol as cp
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.consumer.harness import ConsumerHarness
from tests.unit.coordinator.consumer.test_properties import Client

SUBSCRIPTION = cp.encode_subscription(cp.Subscription(("t", "u")))
RETRY = (ErrorCode.not_coordinator, ErrorCode.rebalance_in_progress)


class ClassicClient:
    """An eager classic consumer (JoinGroup v9, SyncGroup, Heartbeat) inside the group."""

    def __init__(self, name: str, instance_id: str | None) -> None:
        self.name = name
        self.member_id = ""
        self.instance_id = instance_id
        self.generation: int | None = None     # None: must (re)join
        self.owned: frozenset = frozenset()
        self.alive = True

    def _call(self, h: ConsumerHarness, result: Result, token):
        h.apply(result)
        return h.replies.pop(token)

    def rejoin(self, h: ConsumerHarness) -> None:
        self.owned, self.generation = frozenset(), None      # eager: give up everything first
        for _ in range(2):                                   # MEMBER_ID_REQUIRED, then again
            token = object()
            reply = self._call(h, h.coordinator.classic_join(JoinRequest(
                "g", self.member_id, self.instance_id, "consumer", (("range", SUBSCRIPTION),),
                45_000, 30_000, "c", "/h", api_version=9, token=token), h.image, h.now), token)
            if reply.error is ErrorCode.member_id_required:
                self.member_id = reply.member_id
                continue
            break
        if reply.error in RETRY:
            return
        if reply.error is not ErrorCode.none:
            self.member_id = "" if reply.error is ErrorCode.unknown_member_id else self.member_id
            return
        self.member_id = reply.member_id
        token = object()
        synced = self._call(h, h.coordinator.classic_sync(SyncRequest(
            "g", reply.generation, self.member_id, self.instance_id, "consumer",
            reply.protocol_name, (), token=token), h.now), token)
        if synced.error is not ErrorCode.none:
            return
        self.generation = reply.generation
        self.owned = frozenset((h.image.lookup(name)[0], p)
                               for name, ps in cp.decode_assignment(synced.assignment).partitions
                               for p in ps)

    def step(self, h: ConsumerHarness) -> None:
        if self.generation is None:
            self.rejoin(h)
            return
        result = Result()
        error = h.coordinator.classic_heartbeat("g", self.generation, self.member_id,
                                                self.instance_id, h.now, result)
        h.apply(result)
        if error is ErrorCode.none:
            return
        if error in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id,
                     ErrorCode.illegal_generation):
            self.member_id = ""
        self.rejoin(h)

    def leave(self, h: ConsumerHarness) -> None:
        if self.instance_id is None and self.member_id:
            h.apply(h.coordinator.classic_leave(
                LeaveRequest("g", (LeaveIdentity(self.member_id),), object()), h.now))
        self.alive = False


ops = st.lists(st.tuples(st.sampled_from(["join", "beat", "beat", "beat", "leave", "crash",
                                           "bounce", "tick", "grow", "fail"]),
                         st.integers(0, 7), st.booleans()), min_size=15, max_size=70)


@settings(max_examples=150, deadline=None)
@given(ops, st.booleans())
def test_random_mixed_histories(history, static):
    # (no downgrade: the history stays a consumer group's, whose members it drives)
    h = ConsumerHarness({"t": 5, "u": 3}, migration_policy="upgrade")
    anchor = Client("anchor", None)     # keeps the group a consumer group throughout
    anchor.step(h)
    clients: list = [anchor]
    serial = 0

    def new_client(classic: bool, instance_id):
        nonlocal serial
        serial += 1
        c = (ClassicClient if classic else Client)(f"m{serial}", instance_id)
        clients.append(c)
        c.step(h)

    def check_disjoint():
        seen: dict = {}
        for c in clients:
            if c.alive:
                for tp in c.owned:
                    assert tp not in seen, f"{tp} held by {seen[tp]} and {c.name}"
                    seen[tp] = c.name

    for op, i, classic in history:
        live = [c for c in clients if c.alive and c is not anchor]
        if op == "join" or not live:
            new_client(classic, f"i{serial + 1}" if static else None)
        else:
            c = live[i % len(live)]
            if op == "beat":
                c.step(h)
            elif op == "leave":
                if isinstance(c, ClassicClient):
                    c.leave(h)
                else:
                    if c.epoch > 0:
                        h.heartbeat(c.member_id, -2 if c.instance_id else -1,
                                    instance_id=c.instance_id)
                    c.alive = False
            elif op == "crash":
                c.alive = False
            elif op == "bounce" and c.instance_id is not None:
                # a static restart, with either protocol
                if isinstance(c, Client) and c.epoch > 0:
                    h.heartbeat(c.member_id, -2, instance_id=c.instance_id)
                c.alive = False
                new_client(classic, c.instance_id)
            elif op == "tick":
                h.advance(20_000)
                for other in [x for x in clients if x.alive]:
                    other.step(h)
            elif op == "fail":
                h.fail_next_write = ErrorCode.not_coordinator
            elif op == "grow":
                h.set_topic("t", h.image.lookup("t")[1] + 1)
        check_disjoint()

    for _ in range(3):
        h.advance(20_000)
        for c in [x for x in clients if x.alive]:
            c.step(h)
    for _ in range(8):
        for c in [x for x in clients if x.alive]:
            c.step(h)
        check_disjoint()
    live = [c for c in clients if c.alive]
    group = h.group()
    assert group.state() == GroupState.STABLE
    total = sum(n for _, n in h.image.topics.values())
    union = frozenset().union(*(c.owned for c in live))
    assert len(union) == total == sum(len(c.owned) for c in live)
    for c in live:
        assert c.owned == frozenset((t, p) for t, ps in group.members[c.member_id]
                                    .assigned.items() for p in ps)

    fresh = ConsumerCoordinator()
    for record in h.records:
        key, value = record.encode()
        decoded = rec.decode_key(int.from_bytes(key[:2], "big"), key)
        fresh.replay(rec.ConsumerRecord(decoded, rec.decode_value(decoded, value)))
    b = fresh.groups["g"]
    for name in ("group_epoch", "assignment_epoch", "members", "static_members", "target",
                 "owners", "subscription_metadata"):
        assert getattr(group, name) == getattr(b, name), name
