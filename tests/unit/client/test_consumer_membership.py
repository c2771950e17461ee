"""roster.client's consumer group protocol member (client/consumer_membership.py), driven
with a manual clock against the pure coordinator (roster.coordinator.consumer): the two
machines talk through plain values, no sockets."""
from __future__ import annotations

from roster.client.consumer_membership import (
    ConsumerMembership,
    NeedTopicIds,
    Reconciled,
    State,
)
from roster.client.membership import (
    Assigned,
    Fatal,
    LeaveWhenRevoked,
    Lost,
    MemberConfig,
    Revoked,
    Send,
)
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.consumer.harness import ConsumerHarness, topic_id


class Link:
    """Carry a member's sends to the coordinator harness and the answers back."""

    def __init__(self, h: ConsumerHarness) -> None:
        self.h = h
        self.events: dict[str, list] = {}
        self.hold_revocations = False   # as if on_revoked had not returned yet
        self.held: list[tuple[ConsumerMembership, Reconciled]] = []

    def run(self, member: ConsumerMembership, actions: list) -> None:
        names = {tid: name for name, (tid, _) in self.h.image.topics.items()}
        while actions:
            action = actions.pop(0)
            self.events.setdefault(member.member_id, []).append(action)
            if isinstance(action, Send) and action.api == "FindCoordinator":
                actions += member.on_find_coordinator(ErrorCode.none, self.h.now)
            elif isinstance(action, Send) and action.api == "ConsumerGroupHeartbeat":
                f = action.fields
                token = object()
                request = HeartbeatRequest(
                    f["group_id"], f["member_id"], f["member_epoch"], f["instance_id"],
                    f["rack_id"], f["rebalance_timeout_ms"], f["subscribed_topic_names"],
                    f["subscribed_topic_regex"], f["server_assignor"],
                    None if f["topic_partitions"] is None else
                    tuple((t, tuple(ps)) for t, ps in f["topic_partitions"]), token=token)
                self.h.apply(self.h.coordinator.heartbeat(request, self.h.image, self.h.now))
                reply = self.h.replies.pop(token)
                if f["member_epoch"] >= 0:
                    actions += member.on_heartbeat(reply.error, reply.member_epoch,
                                                   reply.heartbeat_interval_ms,
                                                   reply.assignment, self.h.now)
            elif isinstance(action, Reconciled):   # the driver: on_revoked has returned
                if self.hold_revocations:
                    self.held.append((member, action))
                else:
                    actions += member.reconciled(action, self.h.now)
            elif isinstance(action, LeaveWhenRevoked):   # the driver: the callback returned
                actions += member.finish_leaving(self.h.now)
            elif isinstance(action, NeedTopicIds):
                actions += member.on_topic_names({t: names[t] for t in action.topic_ids},
                                                 self.h.now)

    def tick(self, *members: ConsumerMembership) -> None:
        for m in members:
            for _ in range(4):   # what is due now, and what that makes due now
                actions = m.tick(self.h.now)
                if not actions:
                    break
                self.run(m, actions)


def member(name: str, topics=("t",), instance_id=None) -> ConsumerMembership:
    m = ConsumerMembership(MemberConfig("g", instance_id, heartbeat_interval_ms=1000), name)
    m.subscribe(topics, 0)
    return m


def settle(link: Link, members, rounds: int = 6, step_ms: int = 5000) -> None:
    for _ in range(rounds):
        link.h.now += step_ms
        link.tick(*members)
        link.tick(*members)


def test_two_members_join_split_and_leave():
    h = ConsumerHarness({"t": 4})
    link = Link(h)
    a, b = member("a"), member("b")
    link.tick(a)
    assert a.state is State.STABLE and a.epoch == 2 and len(a.owned) == 4
    assert any(isinstance(e, Assigned) for e in link.events["a"])
    link.tick(b)
    settle(link, [a, b])
    assert sorted(a.owned + b.owned) == [("t", p) for p in range(4)]
    assert len(a.owned) == len(b.owned) == 2
    assert any(isinstance(e, Revoked) for e in link.events["a"])
    link.run(b, b.close(h.now))
    assert b.state is State.CLOSED and "b" not in h.group().members
    settle(link, [a])
    assert len(a.owned) == 4


def test_static_member_close_keeps_its_partitions_for_its_return():
    h = ConsumerHarness({"t": 4})
    link = Link(h)
    a, b = member("a", instance_id="ia"), member("b", instance_id="ib")
    link.tick(a)
    link.tick(b)
    settle(link, [a, b])
    held = b.owned
    link.run(b, b.close(h.now))
    assert h.member("b").member_epoch == -2
    again = member("b2", instance_id="ib")
    link.tick(again)
    settle(link, [a, again])
    assert again.owned == held
    assert not any(isinstance(e, Revoked) for e in link.events["a"][-10:])


def test_fenced_epoch_loses_partitions_and_rejoins_with_the_same_id():
    h = ConsumerHarness({"t": 2})
    link = Link(h)
    a = member("a")
    link.tick(a)
    actions = a.on_heartbeat(ErrorCode.fenced_member_epoch, 0, 0, None, h.now)
    assert actions == [Lost((("t", 0), ("t", 1)))]
    assert a.epoch == 0 and a.state is State.JOINING and a.member_id == "a"


def test_unreleased_instance_id_is_fatal():
    h = ConsumerHarness({"t": 2})
    link = Link(h)
    a, dup = member("a", instance_id="same"), member("x", instance_id="same")
    link.tick(a)
    link.tick(dup)
    assert dup.state is State.FATAL and dup.fatal.error == ErrorCode.unreleased_instance_id
    assert any(isinstance(e, Fatal) for e in link.events["x"])
    assert a.state is State.STABLE


def test_unknown_topic_ids_are_resolved_before_the_assignment_is_applied():
    m = member("a")
    m.on_find_coordinator(ErrorCode.none, 0)
    tid = topic_id("t")
    actions = m.on_heartbeat(ErrorCode.none, 1, 1000, ((tid, (0, 1)),), 0)
    assert actions == [NeedTopicIds((tid,))] and m.owned == ()
    assert m.on_topic_names({tid: "t"}, 0) == [Assigned((("t", 0), ("t", 1)))]
    assert m.next_heartbeat_ms == 0     # acknowledged at once


def test_commits_carry_the_member_epoch():
    h = ConsumerHarness({"t": 1})
    link = Link(h)
    a = member("a")
    link.tick(a)
    send = a.commit_request({("t", 0): 5})
    assert send.fields["generation_id_or_member_epoch"] == a.epoch == 2
    assert send.fields["member_id"] == "a"


def test_a_revoked_partition_stays_reported_until_the_callback_returns():
    """While on_revoked runs (say, waiting for a batch in flight), heartbeats go on and still
    report the revoked partitions: the coordinator keeps the member at its epoch, so a commit
    from the callback is accepted, and the next owner gets them only once the callback is
    done."""
    h = ConsumerHarness({"t": 4})
    link = Link(h)
    a, b = member("a"), member("b")
    link.tick(a)
    link.hold_revocations = True
    link.tick(b)
    settle(link, [a, b])
    assert len(a.owned) == 2                       # the application's view: two kept
    assert len(h.member("a").pending_revocation[topic_id("t")]) == 2
    assert b.owned == ()                           # nothing is free yet
    for _ in range(12):     # a minute, past the 45 s session timeout: heartbeats go on
        h.advance(5000)
        link.tick(a, b)
    assert h.member("a").pending_revocation and b.owned == ()
    epoch = a.epoch
    assert a.commit_request({a.owned[0]: 1}).fields["generation_id_or_member_epoch"] \
        == h.member("a").member_epoch == epoch     # the callback's commit is not stale
    [(held_by, done)] = link.held
    link.hold_revocations = False
    link.run(held_by, [done])
    assert a.next_heartbeat_ms == h.now            # told at once
    settle(link, [a, b])
    assert len(b.owned) == 2 and sorted(a.owned + b.owned) == [("t", p) for p in range(4)]
    assert h.member("a").member_epoch > epoch


def test_fencing_while_revoking_forgets_the_revocation():
    h = ConsumerHarness({"t": 2})
    link = Link(h)
    a, b = member("a"), member("b")
    link.tick(a)
    link.hold_revocations = True
    link.tick(b)
    settle(link, [a, b])
    assert a.revoking
    a.on_heartbeat(ErrorCode.fenced_member_epoch, 0, 0, None, h.now)
    assert a.revoking == frozenset() and a.owned == ()
    (_, done), = link.held
    assert a.reconciled(done, h.now) == []         # the late callback changes nothing


def _heartbeats(link: Link, name: str) -> list[dict]:
    return [e.fields for e in link.events[name]
            if isinstance(e, Send) and e.api == "ConsumerGroupHeartbeat"]


def test_owned_partitions_are_sent_only_when_they_change():
    """As the Java client: a heartbeat reports the partitions held only when the coordinator
    has not heard them yet (null means unchanged), so a steady member's heartbeat is the
    all-null one the broker answers by its steady path; after an error, everything again."""
    h = ConsumerHarness({"t": 4})
    link = Link(h)
    a, b = member("a"), member("b")
    a.config = MemberConfig("g", heartbeat_interval_ms=1000, rack_id="rack-1")
    link.tick(a)
    link.tick(b)
    settle(link, [a, b])
    assert _heartbeats(link, "a")[0]["rack_id"] == "rack-1" == h.member("a").rack_id
    steady = _heartbeats(link, "a")[-1]
    assert steady["topic_partitions"] is None and steady["subscribed_topic_names"] is None
    assert steady["rack_id"] is None
    assert steady["rebalance_timeout_ms"] == -1 and len(a.owned) == 2
    link.run(b, b.close(h.now))              # a gets b's partitions: it reports them once
    settle(link, [a])
    reports = [f["topic_partitions"] for f in _heartbeats(link, "a")[-6:]]
    assert [(t, list(ps)) for t, ps in next(r for r in reports if r)] == \
        [(topic_id("t"), [0, 1, 2, 3])]
    assert reports[-1] is None and len(a.owned) == 4
    a.on_heartbeat(ErrorCode.coordinator_load_in_progress, 0, 0, None, h.now)
    h.advance(1000)
    link.tick(a)
    assert _heartbeats(link, "a")[-1]["topic_partitions"] is not None
