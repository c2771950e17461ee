"""The streaming reader's group session (roster.spark.group) against a real broker, without
Spark: what it commits when a partition comes back to it, and how it hands partitions over
(waiting for the batch in flight, up to its deadline, while its member heartbeats on)."""
from __future__ import annotations

import time

import pytest

from roster.client.membership import State
from roster.spark.group import GroupSession
from roster.spark.options import read_settings

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_a_regained_partition_does_not_commit_what_this_reader_did_before_losing_it(kafka):
    """The reader completed a batch to 100 on t-0, lost t-0 (no clean revocation, so nothing
    was committed), another member went on to 300, and t-0 came back at the group's 300. A stop
    before the next batch completes must not commit the old 100: that moves the group back and
    makes the next owner read 100..300 again."""
    kafka.create("regained", 1)
    settings = read_settings({"kafka.bootstrap.servers": kafka.bootstrap,
                              "subscribe": "regained", "group.id": "regained-group"},
                             streaming=True)
    tp = ("regained", 0)
    session = GroupSession(settings)
    try:
        session.join(["regained"])
        assert session.stable_snapshot(30) is not None
        session.started_at({tp: 0})
        session.completed({tp: 100})          # a batch read t-0 up to 100 ...
        # ... then t-0 was lost; its next owner read to 300 and committed (as this member
        # here, which is the same commit as far as the group's offsets go)
        session.run(session.member.commit({tp: 300}))
        session.started_at({tp: 300})          # t-0 is gained again, at the group's offset
    finally:
        session.close()                       # commits completed progress of owned partitions
    assert kafka.committed("regained-group", "regained", 1) == {0: 300}


# -- handing partitions over (classic protocol) -------------------------------------------------

def _classic_session(kafka, topic: str, group: str, **more) -> GroupSession:
    settings = read_settings({"kafka.bootstrap.servers": kafka.bootstrap, "subscribe": topic,
                              "group.id": group, "session.timeout.ms": "6000",
                              "heartbeat.interval.ms": "300", **more}, streaming=True)
    session = GroupSession(settings)
    session.join([topic])
    return session


def _member_state(session: GroupSession, condition, timeout_s: float = 30) -> None:
    """Wait, on the member's own change notifications, until condition(machine) holds."""
    machine = session.member.machine
    session.run(session.member.wait_for(lambda: condition(machine), timeout_s), timeout_s + 5)


def _batch_in_flight(session: GroupSession, topic: str, ends: dict) -> None:
    """As the reader does: start positions recorded, then a batch planned that reads to ends."""
    starts = {(topic, p): 0 for p in range(2)}
    session.started_at(starts)
    session.completed(starts)
    session.planning(starts, ends)


def test_a_revocation_hands_over_as_soon_as_the_batch_in_flight_completes(kafka):
    """A reads both partitions with a batch in flight when B joins. A's on_revoked waits for the
    batch (its member heartbeating on meanwhile, answered REBALANCE_IN_PROGRESS), not until the
    deadline: once the batch completes A commits its ends and rejoins as itself, into the next
    generation, and the two split the partitions."""
    kafka.create("handover-event", 2)
    ends = {("handover-event", 0): 10, ("handover-event", 1): 11}
    # the deadline is 54 s away: a handover that waits for it fails the 30 s waits below
    a = _classic_session(kafka, "handover-event", "handover-event-g",
                         **{"max.poll.interval.ms": "60000"})
    b = None
    try:
        generation, owned = a.stable_snapshot(30)
        assert set(owned) == set(ends)
        member_id = a.member.machine.member_id
        _batch_in_flight(a, "handover-event", ends)

        b = _classic_session(kafka, "handover-event", "handover-event-g",
                             **{"max.poll.interval.ms": "60000"})
        _member_state(a, lambda m: m.state is State.REVOKING)
        armed: set = set()    # each heartbeat answered re-arms the next one
        _member_state(a, lambda m: armed.add(m.next_heartbeat_ms) or len(armed) > 3)
        assert a.member.machine.state is State.REVOKING       # still waiting for the batch
        assert kafka.committed("handover-event-g", "handover-event", 2) == {0: -1, 1: -1}

        a.completed(ends)                                       # the batch is over
        assert b.stable_snapshot(30) is not None
        _member_state(a, lambda m: m.state is State.STABLE)
        assert kafka.committed("handover-event-g", "handover-event", 2) == {0: 10, 1: 11}
        assert (a.member.machine.member_id, a.member.machine.generation) == \
            (member_id, generation + 1)
        assert sorted(a.member.machine.owned + b.member.machine.owned) == sorted(ends)
    finally:
        a.close()
        if b is not None:
            b.close()


def test_a_revocation_arriving_while_a_batch_is_planned_waits_for_that_batch(kafka):
    """latestOffset() looked at the member (stable, owning both partitions) and is planning a
    batch over them when B joins. A's revocation must wait for that batch, not hand the
    partitions over before it is named: it would read them while their next owner reads them
    from the same committed offsets (duplicates, seen once under load)."""
    kafka.create("handover-plan", 2)
    starts = {("handover-plan", p): 0 for p in range(2)}
    ends = {("handover-plan", 0): 7, ("handover-plan", 1): 8}
    a = _classic_session(kafka, "handover-plan", "handover-plan-g",
                         **{"max.poll.interval.ms": "60000"})
    b = None
    try:
        a.started_at(starts)
        a.completed(starts)
        assert a.stable_snapshot(30) is not None        # the look a plan starts from
        b = _classic_session(kafka, "handover-plan", "handover-plan-g",
                             **{"max.poll.interval.ms": "60000"})
        _member_state(a, lambda m: m.state is State.REVOKING)
        armed: set = set()
        _member_state(a, lambda m: armed.add(m.next_heartbeat_ms) or len(armed) > 3)
        assert a.member.machine.state is State.REVOKING       # waiting for the planned batch
        a.planning(starts, ends)                                # the batch is named ...
        assert a.member.machine.state is State.REVOKING
        a.completed(ends)                                       # ... and over
        assert b.stable_snapshot(30) is not None
        _member_state(a, lambda m: m.state is State.STABLE)
        assert kafka.committed("handover-plan-g", "handover-plan", 2) == {0: 7, 1: 8}
    finally:
        a.close()
        if b is not None:
            b.close()


def test_a_revocation_gives_up_on_the_batch_at_the_deadline(kafka):
    """The batch in flight never completes: A hands over at 90% of its max.poll.interval.ms
    (on the session loop's clock), committing nothing of that batch, and rejoins as itself (B's
    longer rebalance timeout is the group's, so the broker waits for A)."""
    kafka.create("handover-deadline", 2)
    ends = {("handover-deadline", 0): 10, ("handover-deadline", 1): 11}
    a = _classic_session(kafka, "handover-deadline", "handover-deadline-g",
                         **{"max.poll.interval.ms": "4000"})            # the wait: 3.6 s
    b = None
    try:
        assert a.stable_snapshot(30) is not None
        member_id = a.member.machine.member_id
        _batch_in_flight(a, "handover-deadline", ends)
        b = _classic_session(kafka, "handover-deadline", "handover-deadline-g",
                             **{"max.poll.interval.ms": "60000"})
        _member_state(a, lambda m: m.state is State.REVOKING)
        began = time.monotonic()
        _member_state(a, lambda m: m.state is not State.REVOKING)
        waited = time.monotonic() - began
        assert 3.0 < waited < 3.6 + 2.0
        assert b.stable_snapshot(30) is not None
        _member_state(a, lambda m: m.state is State.STABLE)
        assert a.member.machine.member_id == member_id
        assert kafka.committed("handover-deadline-g", "handover-deadline", 2) == {0: -1, 1: -1}
    finally:
        a.close()
        if b is not None:
            b.close()


def test_closing_ends_a_revocation_waiting_for_the_batch_at_once(kafka):
    """Closing the session while its revocation waits for a batch (deadline 54 s away): the
    wait ends at once, the member leaves, and the other reader gets every partition."""
    kafka.create("handover-close", 2)
    ends = {("handover-close", 0): 10, ("handover-close", 1): 11}
    timeouts = {"max.poll.interval.ms": "60000"}
    a = _classic_session(kafka, "handover-close", "handover-close-g", **timeouts)
    b = None
    try:
        assert a.stable_snapshot(30) is not None
        _batch_in_flight(a, "handover-close", ends)
        b = _classic_session(kafka, "handover-close", "handover-close-g", **timeouts)
        _member_state(a, lambda m: m.state is State.REVOKING)
        began = time.monotonic()
        a.close()
        assert time.monotonic() - began < 20  # at once, not after the 54 s (loaded machines)
        _member_state(b, lambda m: m.state is State.STABLE and len(m.owned) == 2)
    finally:
        a.close()
        if b is not None:
            b.close()
