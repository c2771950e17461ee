"""`roster groups history`'s words for a generation: causes folded into a rebalance said
plainly, and a partition's first assignment not counted as a move."""
from __future__ import annotations

from roster.observability import events as ev
from roster.observability.events import GroupEvent, Moved, Trigger
from roster.observability.history import format_event

T = 1_795_800_000_000


def event(moved=(), triggers_after=0, reason=None):
    return GroupEvent("g", ev.CLASSIC, ev.GENERATION, 2,
                      Trigger(ev.MEMBER_JOINED, "m-1", client_reason=reason), T + 40, T,
                      join_ms=30, sync_ms=10, outcome="stable",
                      members_after=(("m-1", None), ("m-2", None)), moved=tuple(moved),
                      triggers_after=triggers_after)


def test_later_causes_are_said_plainly():
    text = "\n".join(format_event(event(triggers_after=1)))
    assert "change(s) joined this rebalance" not in text
    assert ("also covers 1 more change (such as another member joining or leaving) that "
            "arrived while it was under way") in text
    assert "also covers 2 more changes" in "\n".join(format_event(event(triggers_after=2)))


def test_first_assignment_is_not_a_move():
    lines = format_event(event([Moved("t", p, None, "m-1") for p in range(6)]))
    assert lines[-1].strip() == "6 partitions assigned for the first time"
    assert not any("changed owner" in line for line in lines)


def test_moves_first_assignments_and_releases_are_told_apart():
    moved = [Moved("t", 0, "m-1", "m-2", 120), Moved("t", 1, "m-1", "m-2", 95),
             Moved("t", 2, None, "m-2"), Moved("t", 3, "m-1", None)]
    assert format_event(event(moved))[-1].strip() == (
        "2 partitions changed owner (without an owner up to 120 ms); 1 partition assigned "
        "for the first time; 1 partition left without an owner")
