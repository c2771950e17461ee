"""The flight recorder on the streams group protocol (KIP-1071), driven through the pure streams
coordinator with a manual clock: one event per group epoch with its cause (a member joined,
left, its session expired, it did not revoke in time, the topology changed), the tasks whose
holder changed (active and standby, from whom to whom, how long an active task had nobody), a
static member's -2 leave ("away") and its return ("saved", no epoch), and the group's deletion.
The facts the coordinator notes are plain values, turned into events by the FlightRecorder as
the edge does (broker/groups/runtime.py)."""
from __future__ import annotations

from dataclasses import replace

from roster.coordinator.results import Result
from roster.coordinator.streams.coordinator import StreamsCoordinator, session_key
from roster.coordinator.streams.facts import StreamsEpochCause, StreamsObserved
from roster.coordinator.streams.heartbeat import StreamsHeartbeat
from roster.coordinator.streams.messages import StreamsConfig
from roster.observability import events as ev
from roster.observability.flight_recorder import FlightRecorder
from roster.observability.streams_recorder import StreamsRecorder
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.streams.test_coordinator import TOPOLOGY, Driver, G

SESSION = StreamsConfig().session_timeout_ms


class Recording(Driver):
    """The coordinator driver, with every applied result's facts handed to the recorder."""

    def __init__(self, standby: int = 0) -> None:
        super().__init__()
        self.streams = StreamsCoordinator(StreamsConfig(num_standby_replicas=standby,
                                                        initial_rebalance_delay_ms=0,
                                                        assignment_interval_ms=0),
                                          topics=self.image)
        self.recorder = StreamsRecorder()
        self.flight = FlightRecorder((self.recorder,))
        self.events: list = []

    def carry_out(self, result, fail_write=None):
        if fail_write is None:        # a failed write drops its events, as at the edge
            self.events += self.flight.derive(result.facts)
        return super().carry_out(result, fail_write)

    def join(self, member: str, instance: str | None = None, topology=None):
        if topology is None:
            return self.beat(member, 0, instance)
        q = StreamsHeartbeat(group_id=G, member_id=member, member_epoch=0,
                             instance_id=instance, rebalance_timeout_ms=30_000,
                             topology=topology, process_id=f"p-{instance or member}",
                             active={}, standby={}, warmup={}, client_id="c",
                             client_host="/127.0.0.1", token=member)
        return self.carry_out(self.streams.heartbeat(q, self.image, self.now))

    def settle(self, rounds: int = 4, step_ms: int = 100) -> None:
        """Every member heartbeats what it holds, like a client, until nothing changes."""
        for _ in range(rounds):
            for mid in sorted(self.group.members):
                m = self.group.members[mid]
                if m.left_temporarily:
                    continue
                self.beat(mid, m.member_epoch, m.instance_id, owned={
                    "active": dict(m.assigned.active), "standby": dict(m.assigned.standby),
                    "warmup": dict(m.assigned.warmup)})
                self.now += step_ms

    def take(self) -> list:
        taken, self.events = self.events, []
        return taken


def generations(events):
    return [e for e in events if e.kind == ev.GENERATION]


def test_a_join_then_a_second_member_moves_half_the_tasks_revoked_before_given():
    r = Recording()
    r.join("a")
    r.settle()
    [first] = r.take()
    assert (first.protocol, first.kind, first.generation, first.outcome) == \
        ("streams", ev.GENERATION, 1, "stable")
    assert first.trigger.kind == ev.MEMBER_JOINED and first.trigger.member_id == "a"
    assert first.members_before == () and first.members_after == (("a", None),)
    # six active tasks (two subtopologies of three partitions), each given to a for the first
    # time: a first assignment is not a hand-over
    assert sorted((m.role, m.topic, m.partition, m.before, m.after) for m in first.moved) == [
        ("active", s, p, None, "a") for s in ("0", "1") for p in range(3)]
    assert not any(m.handed_over for m in first.moved)

    r.now = 10_000
    r.join("b")
    assert r.take() == []                 # b's tasks are still a's to revoke
    r.settle()
    [second] = r.take()
    assert second.generation == 2 and second.trigger.kind == ev.MEMBER_JOINED
    assert second.trigger.member_id == "b" and second.started_ms == 10_000
    assert second.outcome == "stable" and second.members_before == (("a", None),)
    assert second.members_after == (("a", None), ("b", None))
    held_by_b = {(s, p) for s, ps in r.group.members["b"].assigned.active.items() for p in ps}
    assert {(m.topic, m.partition) for m in second.moved} == held_by_b and len(held_by_b) == 3
    assert all((m.role, m.before, m.after) == ("active", "a", "b") for m in second.moved)
    # a revoked them at its first heartbeat (t=10000), b was given them at its next (t=10100)
    assert all(m.unowned_ms == 100 for m in second.moved)


def test_a_leave_and_an_expired_session_are_their_own_epochs():
    r = Recording()
    for m in ("a", "b", "c"):
        r.join(m)
    r.settle()
    r.take()
    r.now = 20_000
    r.beat("c", -1)
    r.settle()
    [left] = r.take()
    assert left.trigger.kind == ev.MEMBER_LEFT and left.trigger.member_id == "c"
    assert left.members_after == (("a", None), ("b", None)) and left.outcome == "stable"
    assert {m.before for m in left.moved} == {"c"} and {m.after for m in left.moved} <= {"a", "b"}
    # nobody had to revoke them first: a took its share at its next heartbeat (t=20000), b at
    # its own (t=20100)
    assert {(m.after, m.unowned_ms) for m in left.moved} == {("a", 0), ("b", 100)}
    r.now += 1_000
    r.beat("a", r.group.members["a"].member_epoch)       # a keeps beating, b does not
    r.now = r.timers[session_key(G, "b")][0]           # b's session ends; a's runs on
    assert r.timers[session_key(G, "a")][0] > r.now
    r.fire_due()
    assert r.take() == []                 # the epoch is open until a has taken b's tasks
    r.settle()
    [expired] = generations(r.take())
    assert expired.trigger.kind == ev.SESSION_EXPIRED and expired.trigger.member_id == "b"
    assert expired.members_before == (("a", None), ("b", None))
    assert expired.outcome == "stable" and {(m.before, m.after) for m in expired.moved} == {
        ("b", "a")}
    r.now = r.timers[session_key(G, "a")][0]           # a's own session ends too
    r.fire_due()
    [empty] = generations(r.take())
    assert empty.outcome == "empty" and empty.members_after == ()
    assert all(m.after is None for m in empty.moved) and {m.before for m in empty.moved} == {"a"}


def test_a_static_member_away_with_minus_two_and_back_in_time_is_no_epoch():
    r = Recording()
    r.join("a1", "ia")
    r.join("b1", "ib")
    r.settle()
    r.take()
    epoch = r.group.group_epoch
    r.now = 30_000
    r.beat("a1", -2, "ia")
    [away] = r.take()
    assert (away.kind, away.generation) == (ev.AWAY, epoch)
    assert away.trigger.kind == ev.STATIC_LEAVE and away.trigger.instance_id == "ia"
    assert away.trigger.member_id == "a1" and away.at_ms == 30_000
    r.now = 31_000
    reply = r.join("a2", "ia")
    assert reply.error is ErrorCode.none and reply.member_epoch == epoch
    [saved] = r.take()
    assert (saved.kind, saved.generation) == (ev.SAVED, epoch)
    assert (saved.trigger.kind, saved.trigger.instance_id, saved.trigger.member_id,
            saved.trigger.fenced_id) == (ev.STATIC_REJOIN, "ia", "a2", "a1")
    assert ("a2", "ia") in saved.members_after
    r.settle()
    assert r.take() == [] and r.group.group_epoch == epoch   # nothing moved, no epoch


def test_a_static_member_that_never_comes_back_is_removed_when_its_session_ends():
    r = Recording()
    r.join("a1", "ia")
    r.join("b1", "ib")
    r.settle()
    r.take()
    r.beat("a1", -2, "ia")
    r.take()
    for _ in range(3):                       # b keeps its session; a's ends
        r.now += SESSION // 3
        r.beat("b1", r.group.members["b1"].member_epoch, "ib")
    r.fire_due()
    r.settle()
    [gone] = generations(r.take())
    assert gone.trigger.kind == ev.SESSION_EXPIRED and gone.trigger.instance_id == "ia"
    assert gone.outcome == "stable" and gone.members_after == (("b1", "ib"),)
    # the tasks were held by the instance id, and go to the other instance
    assert gone.moved and all((m.before, m.after) == ("ia", "ib") for m in gone.moved)


def test_a_member_that_does_not_revoke_in_time_is_removed_for_it():
    r = Recording()
    r.join("a")
    r.settle()
    r.take()
    r.join("b")
    a = r.group.members["a"]
    r.beat("a", a.member_epoch, owned={"active": dict(a.assigned.active)})   # told to revoke
    r.now += 30_001                          # a's rebalance timeout, with no word from it
    r.beat("b", r.group.members["b"].member_epoch, owned={})
    r.fire_due()
    events = generations(r.take())
    assert [(e.generation, e.outcome, e.trigger.kind) for e in events] == [
        (2, "interrupted", ev.MEMBER_JOINED)]
    r.settle()
    [timed_out] = generations(r.take())
    assert timed_out.trigger.kind == ev.REBALANCE_TIMEOUT
    assert timed_out.trigger.member_id == "a" and "rebalance timeout" in timed_out.trigger.detail
    assert timed_out.members_after == (("b", None),)


def test_standby_tasks_move_in_the_same_events_as_active_ones():
    r = Recording(standby=1)
    r.join("a")
    r.join("b")
    r.settle(rounds=6)
    events = generations(r.take())
    assert events[-1].outcome == "stable"
    roles = {m.role for e in events for m in e.moved}
    assert roles == {"active", "standby"}     # subtopology 1 has state: it has a standby
    standby = [m for e in events for m in e.moved if m.role == "standby"]
    assert all(m.topic == "1" for m in standby)
    r.now = 50_000
    r.join("c")
    r.settle(rounds=6)
    [joined] = generations(r.take())
    assert joined.trigger.kind == ev.MEMBER_JOINED and joined.trigger.member_id == "c"
    assert joined.outcome == "stable"


def test_a_topology_update_is_refused_and_records_nothing():
    """As Kafka 4.4: a member rejoining with a newer topology is told INVALID_REQUEST, "Topology
    updates are not supported yet.", and no epoch is recorded."""
    r = Recording()
    r.join("a")
    r.settle()
    r.take()
    r.now = 60_000
    reply = r.join("a", topology=replace(TOPOLOGY, epoch=1))
    assert (reply.error, reply.error_message) == (ErrorCode.invalid_request,
                                                  "Topology updates are not supported yet.")
    assert r.take() == [] and r.group.topology == TOPOLOGY


def test_a_refused_heartbeat_notes_nothing_and_deletion_is_an_event():
    r = Recording()
    r.join("a")
    r.settle()
    r.take()
    refused = r.beat("a", 99)
    assert refused.error is ErrorCode.fenced_member_epoch and r.last.facts == []
    r.beat("a", -1)
    r.settle()
    assert generations(r.take())[-1].outcome == "empty"
    result = Result()
    assert r.streams.validate_delete_group(G) is None
    r.streams.delete_group(G, r.now, result)
    r.carry_out(result)
    [deleted] = r.take()
    assert (deleted.kind, deleted.protocol, deleted.trigger.kind) == \
        (ev.DELETED, "streams", ev.GROUP_DELETED)


def test_the_facts_are_plain_values_and_a_failed_write_drops_them():
    r = Recording()
    r.beat("a", 0, fail_write=ErrorCode.not_coordinator)
    facts = r.last.facts
    assert [type(x) for x in facts] == [StreamsEpochCause, StreamsObserved]
    assert facts[1].group.members["a"].member_id == "a"   # a value taken then
    assert r.take() == [] and G not in r.streams.groups


def test_loaded_groups_start_from_their_holders():
    r = Recording()
    r.join("a")
    r.settle()
    # a restarted broker: a fresh recorder learns the replayed group, then b joins
    r.recorder = StreamsRecorder()
    r.flight = FlightRecorder((r.recorder,))
    r.recorder.loaded(r.group, r.now)
    r.take()
    r.join("b")
    r.settle()
    [event] = r.take()
    assert event.members_before == (("a", None),)
    assert event.moved and all((m.before, m.after) == ("a", "b") for m in event.moved)
