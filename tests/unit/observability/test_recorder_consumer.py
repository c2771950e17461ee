"""The flight recorder on the consumer protocol (KIP-848): one event per group epoch with its
cause, the partitions that changed owner and how long each had none; a static member's return
is "saved" (no epoch). Driven by the consumer harness (manual clock, no I/O)."""
from roster.observability import events as ev
from tests.unit.coordinator.consumer.harness import ConsumerHarness


class Recording(ConsumerHarness):
    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.events = []

    def recorded(self, events) -> None:
        self.events.extend(events)

    def take(self):
        taken, self.events = self.events, []
        return taken


def settle(h, members, owned, epochs, instances=None, rounds=4):
    """Heartbeat like clients until nothing changes: each reports what it was last given."""
    for _ in range(rounds):
        for m in members:
            kw = {"instance_id": instances[m]} if instances else {}
            r = h.heartbeat(m, epochs[m], owned=owned[m], **kw)
            owned[m] = r.assignment if r.assignment is not None else owned[m]
            epochs[m] = r.member_epoch
            h.now += 100


def test_joins_and_a_leave_give_one_event_per_epoch_with_the_moves():
    h = Recording({"t": 4})
    r = h.join("a")
    [first] = h.take()
    assert first.protocol == ev.CONSUMER and first.generation == 2
    assert first.trigger.kind == ev.MEMBER_JOINED and first.trigger.member_id == "a"
    assert first.outcome == "stable" and len(first.moved) == 4
    assert {(m.before, m.after) for m in first.moved} == {(None, "a")}
    owned, epochs = {"a": r.assignment}, {"a": r.member_epoch}
    h.now = 1_000
    r = h.join("b")
    owned["b"], epochs["b"] = r.assignment, r.member_epoch
    assert h.take() == []                    # b waits for a to revoke
    settle(h, ["a", "b"], owned, epochs)
    [second] = h.take()
    assert second.generation == 3 and second.trigger.kind == ev.MEMBER_JOINED
    assert second.trigger.member_id == "b" and second.started_ms == 1_000
    assert second.outcome == "stable" and second.members_before == (("a", None),)
    assert len(second.moved) == 2
    assert all(m.before == "a" and m.after == "b" and m.topic == "t" for m in second.moved)
    # a revoked at t=1000 (its first heartbeat), b took them at t=1100
    assert all(m.unowned_ms == 100 for m in second.moved)
    h.now = 5_000
    h.heartbeat("b", epochs["b"], owned=owned["b"]) if False else None
    h.heartbeat("b", -1)
    del owned["b"], epochs["b"]
    settle(h, ["a"], owned, epochs)
    [third] = h.take()
    assert third.generation == 4 and third.trigger.kind == ev.MEMBER_LEFT
    assert third.trigger.member_id == "b" and third.members_after == (("a", None),)
    assert {(m.before, m.after) for m in third.moved} == {("b", "a")}
    assert all(m.unowned_ms == 0 for m in third.moved)


def test_sessions_expiring_leave_an_empty_group():
    h = Recording({"t": 2})
    h.join("a")
    h.join("b")
    h.take()
    h.advance(45_000)   # neither heartbeats again: both sessions end, a's first
    events = h.take()
    assert [(e.generation, e.outcome, e.trigger.kind, e.trigger.member_id) for e in events] == [
        (3, "interrupted", ev.MEMBER_JOINED, "b"),
        (4, "interrupted", ev.SESSION_EXPIRED, "a"),
        (5, "empty", ev.SESSION_EXPIRED, "b")]
    assert events[1].members_after == (("b", None),) == events[2].members_before
    assert events[2].members_after == ()


def test_rebalance_timeout_names_the_member_that_did_not_revoke():
    h = Recording({"t": 2})
    ra = h.join("a", rebalance_timeout_ms=5_000)
    h.take()
    h.join("b")
    h.heartbeat("a", 2, owned=ra.assignment)   # asked to revoke one; never does
    h.heartbeat("b", 3, owned=())
    h.advance(5_000)
    r = h.heartbeat("b", 3, owned=())
    h.heartbeat("b", r.member_epoch, owned=r.assignment)
    events = [e for e in h.take() if e.generation == 4]
    assert [(e.trigger.kind, e.trigger.member_id, e.outcome) for e in events] == \
        [(ev.REBALANCE_TIMEOUT, "a", "stable")]
    assert {(m.before, m.after) for m in events[0].moved} == {("a", "b")}


def test_subscription_change_and_new_topic_metadata():
    h = Recording({"t": 2, "u": 2})
    r = h.join("a")
    owned, epochs = {"a": r.assignment}, {"a": r.member_epoch}
    h.take()
    r = h.heartbeat("a", epochs["a"], topics=("t", "u"), owned=owned["a"])
    owned["a"], epochs["a"] = r.assignment, r.member_epoch
    settle(h, ["a"], owned, epochs)
    [event] = h.take()
    assert event.trigger.kind == ev.SUBSCRIPTION_CHANGED and event.generation == 3
    h.set_topic("u", 3)
    settle(h, ["a"], owned, epochs)
    [event] = h.take()
    assert event.trigger.kind == ev.METADATA_CHANGED and event.generation == 4
    assert [(m.topic, m.partition, m.before, m.after) for m in event.moved] == \
        [("u", 2, None, "a")]


def test_static_bounce_is_saved_and_moves_nothing():
    h = Recording({"t": 4})
    inst = {"a": "i-a", "b": "i-b"}
    owned, epochs = {}, {}
    for m in "ab":
        r = h.join(m, instance_id=inst[m])
        owned[m], epochs[m] = r.assignment, r.member_epoch
    settle(h, ["a", "b"], owned, epochs, inst)
    h.take()
    epoch = h.group().group_epoch
    h.heartbeat("b", -2, instance_id="i-b")
    h.advance(10_000)
    r = h.join("b2", instance_id="i-b")
    assert r.member_epoch == epoch
    events = h.take()
    assert [e.kind for e in events] == [ev.SAVED]
    assert events[0].trigger.instance_id == "i-b" and events[0].trigger.fenced_id == "b"
    assert events[0].trigger.member_id == "b2" and events[0].generation == epoch


def test_delete_group_and_failed_write_records_nothing_false():
    h = Recording({"t": 1})
    h.join("a")
    h.take()
    h.heartbeat("a", -1)
    h.take()
    h.delete("g")
    [event] = h.take()
    assert event.kind == ev.DELETED and event.protocol == ev.CONSUMER


def restarted(h: Recording) -> Recording:
    """A fresh coordinator that replayed every record written so far, its recorder told of the
    loaded groups as the group runtime does after a restart (GroupRuntime.load)."""
    fresh = Recording({name: p for name, (_, p) in h.image.topics.items()})
    fresh.now = h.now
    for record in h.records:
        fresh.coordinator.replay(record, h.now)
    for group in fresh.coordinator.groups.values():
        fresh.flight.recorders["consumer"].loaded(group, fresh.now)
    return fresh


def test_after_a_restart_the_next_epoch_is_compared_with_the_last_one_before():
    h = Recording({"t": 4})
    r = h.join("a")
    owned, epochs = {"a": r.assignment}, {"a": r.member_epoch}
    h.take()
    h = restarted(h)
    h.now += 1_000
    r = h.join("b")
    owned["b"], epochs["b"] = r.assignment, r.member_epoch
    settle(h, ["a", "b"], owned, epochs)
    [joined] = h.take()
    assert joined.trigger.kind == ev.MEMBER_JOINED and joined.members_before == (("a", None),)
    assert len(joined.moved) == 2 and all(m.before == "a" and m.after == "b"
                                          for m in joined.moved)


def test_an_epoch_under_way_at_the_restart_is_followed_to_its_end():
    h = Recording({"t": 4})
    r = h.join("a")
    owned, epochs = {"a": r.assignment}, {"a": r.member_epoch}
    r = h.join("b")                         # epoch 3: a must give two partitions to b
    owned["b"], epochs["b"] = r.assignment, r.member_epoch
    h.take()
    h = restarted(h)
    settle(h, ["a", "b"], owned, epochs)
    [finished] = h.take()
    assert finished.generation == 3 and finished.outcome == "stable"
    assert finished.trigger.kind == ev.OTHER and "restarted" in finished.trigger.detail
    assert len(finished.moved) == 2 and all(m.before == "a" and m.after == "b"
                                            for m in finished.moved)
