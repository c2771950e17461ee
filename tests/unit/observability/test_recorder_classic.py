"""The flight recorder on the classic protocol: every trigger gives exactly one event per
generation, with the right fields; a static member's timely return gives a "saved" event and
no generation. Driven by the coordinator harness (manual clock, no I/O)."""
from roster.coordinator.messages import JoinRequest, LeaveIdentity, LeaveRequest
from roster.observability import events as ev
from roster.observability.events import GroupEvent
from tests.unit.coordinator.harness import PROTOCOLS, Harness


class Recording(Harness):
    def __init__(self, **config) -> None:
        super().__init__(**config)
        self.events: list[GroupEvent] = []

    def recorded(self, events) -> None:
        self.events.extend(events)

    def take(self) -> list[GroupEvent]:
        taken, self.events = self.events, []
        return taken


def generations(events):
    return [e for e in events if e.kind == ev.GENERATION]


def test_first_members_joining_make_one_generation():
    h = Recording()
    a, b = h.stable_group("i-a", None)
    [event] = h.take()
    assert event.kind == ev.GENERATION and event.protocol == ev.CLASSIC
    assert event.generation == 1 and event.outcome == "stable"
    assert event.trigger.kind == ev.STATIC_MEMBER_JOINED and event.trigger.instance_id == "i-a"
    assert event.members_before == ()
    assert event.members_after == tuple(sorted([(a, "i-a"), (b, None)]))
    assert event.join_ms == 0 and event.sync_ms == 0
    assert event.triggers_after == 1   # the second member joined the same rebalance
    assert GroupEvent.from_json(event.to_json()) == event


def test_dynamic_member_joining_a_stable_group_times_the_phases():
    h = Recording()
    [a] = h.stable_group(None)
    h.take()
    h.now = 1_000
    joiner = h.join_dynamic()
    h.now = 1_400
    h.join(member_id=a)                 # the leader rejoins: the join phase completes
    new = h.replies[joiner].member_id
    h.now = 1_450
    h.sync(new, 2)
    h.now = 1_500
    h.sync(a, 2, [(a, b"x"), (new, b"y")])
    [event] = h.take()
    assert event.trigger.kind == ev.MEMBER_JOINED and event.trigger.member_id == new
    assert event.generation == 2 and event.started_ms == 1_000 and event.at_ms == 1_500
    assert event.join_ms == 400 and event.sync_ms == 100 and event.duration_ms == 500
    assert event.members_before == ((a, None),)
    assert {m for m, _ in event.members_after} == {a, new}


def test_member_left_carries_the_client_reason():
    h = Recording()
    a, b = h.stable_group(None, None)
    h.take()
    token = h.token()
    h.apply(h.coordinator.leave(LeaveRequest(
        "g", (LeaveIdentity(b, None, "the consumer is being closed"),), token), h.now))
    h.join(member_id=a)
    h.sync(a, 2, [(a, b"x")])
    [event] = h.take()
    assert event.trigger.kind == ev.MEMBER_LEFT and event.trigger.member_id == b
    assert event.trigger.client_reason == "the consumer is being closed"
    assert event.generation == 2 and [m for m, _ in event.members_after] == [a]


def test_admin_removal_by_instance_id():
    h = Recording()
    a, b = h.stable_group("i-a", "i-b")
    h.take()
    h.leave(("", "i-b"))
    h.join(member_id=a, instance="i-a")
    h.sync(a, 2, [(a, b"x")], instance="i-a")
    [event] = h.take()
    assert event.trigger.kind == ev.ADMIN_REMOVAL and event.trigger.instance_id == "i-b"
    assert event.members_before == ((a, "i-a"), (b, "i-b"))


def test_session_expiry():
    h = Recording()
    a, b = h.stable_group(None, None)
    h.take()
    h.advance(5_000)
    assert h.heartbeat(a, 1).name == "none"
    h.advance(5_000)   # b's 10 s session ends; a heartbeats on and rejoins
    h.join(member_id=a)
    h.sync(a, 2, [(a, b"x")])
    [event] = h.take()
    assert event.trigger.kind == ev.SESSION_EXPIRED and event.trigger.member_id == b
    assert event.started_ms == 10_000


def test_rebalance_timeout_no_sync():
    h = Recording()
    a, b = h.stable_group(None, None, session_ms=60_000)
    h.take()
    h.join(member_id=a, session_ms=60_000)
    h.join(member_id=b, session_ms=60_000)   # generation 2 formed; nobody syncs
    h.advance(30_000)                         # the sync deadline removes both
    events = h.take()
    assert [(e.generation, e.outcome, e.trigger.kind) for e in events] == \
        [(2, "interrupted", ev.LEADER_REJOIN), (3, "empty", ev.REBALANCE_TIMEOUT)]
    assert events[0].sync_ms is None and events[1].started_ms == 30_000


def test_leader_rejoin_and_subscription_change():
    h = Recording()
    a, b = h.stable_group(None, None)
    h.take()
    h.join(member_id=b, protocols=(("range", b"other-topics"),))
    h.join(member_id=a)
    h.sync(a, 2, [(a, b"x"), (b, b"y")])
    h.sync(b, 2)
    [event] = h.take()
    assert event.trigger.kind == ev.SUBSCRIPTION_CHANGED and event.trigger.member_id == b
    h.join(member_id=a)
    h.join(member_id=b, protocols=(("range", b"other-topics"),))
    h.sync(a, 3, [(a, b"x"), (b, b"y")])
    [event] = h.take()
    assert event.trigger.kind == ev.LEADER_REJOIN and event.trigger.member_id == a


def test_static_member_back_in_time_saves_a_rebalance():
    h = Recording()
    a, b = h.stable_group("i-a", "i-b")
    h.take()
    token = h.token()
    h.apply(h.coordinator.join(JoinRequest(
        group_id="g", member_id="", group_instance_id="i-b", protocol_type="consumer",
        protocols=PROTOCOLS, session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
        client_id="client", client_host="/127.0.0.1", api_version=9, token=token,
        reason="restarted"), h.now))
    [event] = h.take()
    new = h.replies[token].member_id
    assert event.kind == ev.SAVED and event.generation == 1
    assert event.trigger.kind == ev.STATIC_REJOIN and event.trigger.instance_id == "i-b"
    assert event.trigger.member_id == new and event.trigger.fenced_id == b
    assert event.trigger.client_reason == "restarted"
    assert h.group().generation == 1


def test_static_member_replaced_during_sync_names_the_fenced_id():
    h = Recording()
    a, b = h.stable_group("i-a", "i-b")
    h.join(member_id=a, instance="i-a")
    h.join(member_id=b, instance="i-b")    # generation 2 formed, CompletingRebalance
    h.take()
    h.join(instance="i-b")                  # a new i-b while the group syncs
    events = h.take()
    assert [(e.generation, e.outcome) for e in events] == [(2, "interrupted")]
    h.join(member_id=a, instance="i-a")
    new_b = h.group().static_members["i-b"]
    h.sync(a, 3, [(a, b"x"), (new_b, b"y")], instance="i-a")
    [event] = h.take()
    assert event.trigger.kind == ev.STATIC_MEMBER_REPLACED
    assert event.trigger.fenced_id == b and event.trigger.member_id == new_b


def test_last_member_leaving_and_group_deleted():
    h = Recording()
    [a] = h.stable_group(None)
    h.take()
    h.leave((a, None))
    [event] = h.take()
    assert event.outcome == "empty" and event.members_after == ()
    assert event.trigger.kind == ev.MEMBER_LEFT
    h.delete("g")
    [event] = h.take()
    assert event.kind == ev.DELETED and event.trigger.kind == ev.GROUP_DELETED
    assert event.generation == 2


def test_heartbeats_record_nothing():
    h = Recording()
    [a] = h.stable_group(None)
    h.take()
    for _ in range(5):
        h.advance(1_000)
        h.heartbeat(a, 1)
    assert h.take() == []


def test_consumer_protocol_assignments_give_the_partitions_moved():
    from roster.protocol.consumer_protocol import Assignment, encode_assignment

    def given(*partitions):
        return encode_assignment(Assignment((("t", partitions),)))

    h = Recording()
    a, b = h.stable_group(None, None)
    first = h.take()[0]
    assert first.moved == ()          # the harness's assignments are not consumer-protocol bytes
    h.now = 100
    h.join(member_id=a)
    h.join(member_id=b)
    h.sync(b, 2)
    h.now = 300
    h.sync(a, 2, [(a, given(0, 1)), (b, given(2, 3))])
    [event] = h.take()
    assert {(m.partition, m.before, m.after, m.unowned_ms) for m in event.moved} == \
        {(0, None, a, None), (1, None, a, None), (2, None, b, None), (3, None, b, None)}
    h.now = 1_000
    h.leave((b, None))
    h.now = 1_200
    h.join(member_id=a)
    h.sync(a, 3, [(a, given(0, 1, 2, 3))])
    [event] = h.take()
    assert event.trigger.kind == ev.MEMBER_LEFT
    assert [(m.partition, m.before, m.after, m.unowned_ms) for m in event.moved] == \
        [(2, b, a, 200), (3, b, a, 200)]
