"""The share groups' flight recorder driven by the pure core on a manual clock: one event per
group epoch, written once every member is at it, naming the partitions whose holders changed;
an epoch cut short by the next; the group emptied; deleted."""
from __future__ import annotations

from roster.coordinator.results import Result
from roster.observability.flight_recorder import FlightRecorder
from roster.observability.share_recorder import ShareRecorder
from tests.unit.coordinator.share.test_coordinator import G, Driver


class Recorded(Driver):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.flight = FlightRecorder((ShareRecorder(),))
        self.events: list = []

    def carry_out(self, result, fail_write=None):
        self.events += self.flight.derive(result.facts)
        return super().carry_out(result, fail_write)


def test_one_event_per_epoch_once_every_member_is_at_it():
    d = Recorded()
    d.join("m1")
    [first] = d.events
    assert (first.protocol, first.kind, first.generation, first.outcome) == (
        "share", "generation", 1, "stable")
    assert first.trigger.kind == "member_joined" and first.trigger.member_id == "m1"
    assert {(m.topic, m.partition, m.before, m.after) for m in first.moved} == {
        ("orders", p, None, "m1") for p in range(3)}
    d.events.clear()
    d.join("m2")
    assert d.events == []                 # m1 is not at epoch 2 yet
    d.now += 100
    d.beat("m1", 1)
    [second] = d.events
    assert (second.generation, second.outcome, second.duration_ms) == (2, "stable", 100)
    assert second.members_after == (("m1", None), ("m2", None))
    handed = [m for m in second.moved if m.handed_over]
    assert handed and all((m.before, m.after) == ("m1", "m2") for m in handed)


def test_an_interrupted_epoch_the_group_emptied_and_deleted():
    d = Recorded()
    d.join("m1")
    d.join("m2")
    d.join("m3")                          # epoch 3 begins before m1 reached epoch 2
    assert [e.outcome for e in d.events] == ["stable", "interrupted"]
    d.events.clear()
    for m in ("m1", "m2", "m3"):
        d.beat(m, -1)
    assert d.events[-1].outcome == "empty"
    assert d.events[-1].trigger.kind == "member_left"
    d.events.clear()
    result = Result()
    d.share.delete_group(G, d.now, result)
    d.carry_out(result)
    [deleted] = d.events
    assert (deleted.kind, deleted.protocol) == ("deleted", "share")


def test_an_expired_session_is_the_epochs_cause():
    d = Recorded()
    d.join("m1")
    d.join("m2")
    d.beat("m1", 1)
    d.advance(30_000)
    d.beat("m1", 2)                       # m1 is heard from; m2 is not
    d.events.clear()
    d.advance(15_000)                     # m2's session ends: epoch 3, m1 not at it yet
    assert d.events == []
    d.beat("m1", 2)
    [event] = d.events
    assert (event.generation, event.outcome) == (3, "stable")
    assert (event.trigger.kind, event.trigger.member_id) == ("session_expired", "m2")
    assert event.members_after == (("m1", None),)


def test_a_loaded_group_is_where_the_next_epoch_starts():
    d = Recorded()
    d.join("m1")
    d.flight = FlightRecorder((ShareRecorder(),))      # a restarted broker's recorder
    d.flight.recorders["share"].loaded(d.share.group(G), d.now)
    d.events.clear()
    d.join("m2")
    d.beat("m1", 1)
    [event] = d.events
    assert event.generation == 2 and event.members_before == (("m1", None),)
    assert any(m.before == "m1" and m.after == "m2" for m in event.moved)
