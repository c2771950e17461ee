"""The console's plots from events, without a broker: whole-number axes, the saved diamond at
the generation it kept, and partition ownership that ends when its owner leaves the group."""
from __future__ import annotations

import re

from roster.observability import events as ev
from roster.observability.axes import integer_ticks, time_label, time_ticks
from roster.observability.events import GroupEvent, Moved, Trigger
from roster.observability.plots import generations_plot, ownership_segments, time_range

T = 1_795_800_000_000


def generation(n, at, started=None, moved=(), after=(), outcome="stable",
               kind=ev.MEMBER_JOINED):
    return GroupEvent("g", ev.CLASSIC, ev.GENERATION, n, Trigger(kind), at,
                      at if started is None else started, outcome=outcome,
                      members_after=tuple(after), moved=tuple(moved))


def saved(n, at):
    return GroupEvent("g", ev.CLASSIC, ev.SAVED, n, Trigger(ev.STATIC_REJOIN, detail="back"),
                      at, at)


def test_generation_ticks_are_whole_numbers_evenly_spaced():
    assert integer_ticks(1, 4) == (1, 4, [1, 2, 3, 4])      # not 1, 2, 4
    assert integer_ticks(1, 37) == (0, 40, [0, 10, 20, 30, 40])
    assert integer_ticks(3, 13) == (0, 15, [0, 5, 10, 15])
    assert integer_ticks(5, 5) == (5, 5, [5])
    assert integer_ticks(0, 7, 5) == (0, 8, [0, 2, 4, 6, 8])
    for lo, hi in [(1, 2), (1, 9), (2, 1001), (17, 18), (0, 123_457)]:
        bottom, top, ticks = integer_ticks(lo, hi)
        assert bottom <= lo and top >= hi and len(ticks) <= 6
        assert len({b - a for a, b in zip(ticks, ticks[1:])}) <= 1


def test_time_ticks_fall_on_round_clock_times():
    step, ticks = time_ticks(T + 123, T + 2_400)
    assert step == 500 and all(t % 500 == 0 for t in ticks)
    assert [time_label(t, step)[-4:] for t in ticks[:2]] == ["00.5", "01.0"]
    step, ticks = time_ticks(T, T + 3_600_000)
    assert step == 600_000 and time_label(ticks[1], step).endswith("0")
    assert len(time_ticks(T, T + 3 * 365 * 86_400_000)[1]) <= 7


def test_saved_rebalance_of_the_only_generation_is_drawn_at_that_generation():
    svg = generations_plot([generation(1, T, T - 30), saved(1, T + 500)])
    dot = float(re.search(r'<circle cx="[0-9.]+" cy="([0-9.]+)"', svg)[1])
    diamond = float(re.search(r'class="saved" data-generation="1">.*?<path d="M[0-9.]+ '
                              r'([0-9.]+)', svg)[1]) + 7
    assert abs(dot - diamond) < 0.1
    assert re.findall(r'class="ytick"[^>]*>(\d+)<', svg) == ["1"]


def test_generations_axis_reads_every_generation_in_even_steps():
    svg = generations_plot([generation(n, T + 100 * n) for n in (1, 2, 4)])
    ticks = re.findall(r'class="ytick" x="[0-9.]+" y="([0-9.]+)"[^>]*>(\d+)<', svg)
    assert [int(v) for _, v in ticks] == [1, 2, 3, 4]
    gaps = [float(a) - float(b) for (a, _), (b, _) in zip(ticks, ticks[1:])]
    assert max(gaps) - min(gaps) < 0.2


def test_owner_whose_session_expired_stops_owning_when_the_group_goes_empty():
    first = generation(1, T, T - 10, [Moved("t", 0, None, "a-1")], [("a-1", None)])
    empty = generation(2, T + 6_000, T + 5_000, after=(), outcome="empty",
                       kind=ev.SESSION_EXPIRED)
    now = T + 60_000
    assert ownership_segments([first, empty], now) == {
        ("t", 0): [(T, T + 5_000, "a-1"), (T + 5_000, now, None)]}


def test_static_member_back_after_its_group_was_empty_owns_its_partition_again():
    """The recorder writes no move when the owner is the one it last knew (the same
    instance id): the partition is its again from the generation it rejoined."""
    first = generation(1, T, T - 10, [Moved("t", 0, None, "inst")], [("m-1", "inst")])
    empty = generation(2, T + 6_000, T + 5_000, outcome="empty", kind=ev.SESSION_EXPIRED)
    back = generation(3, T + 9_000, T + 8_000, (), [("m-2", "inst")],
                      kind=ev.STATIC_MEMBER_JOINED)
    now = T + 10_000
    assert ownership_segments([first, empty, back], now)[("t", 0)] == [
        (T, T + 5_000, "inst"), (T + 5_000, T + 9_000, None), (T + 9_000, now, "inst")]


def test_partition_handed_over_after_its_owner_left_joins_up_the_gap():
    first = generation(1, T, T - 10, [Moved("t", 0, None, "a")], [("a", None)])
    empty = generation(2, T + 1_000, T + 900, outcome="empty", kind=ev.MEMBER_LEFT)
    other = generation(3, T + 3_000, T + 2_500, [Moved("t", 0, "a", "b", 500)], [("b", None)])
    assert ownership_segments([first, empty, other], T + 4_000)[("t", 0)] == [
        (T, T + 900, "a"), (T + 900, T + 3_000, None), (T + 3_000, T + 4_000, "b")]


def test_deleted_group_owns_nothing_after():
    first = generation(1, T, T - 10, [Moved("t", 0, None, "a")], [("a", None)])
    gone = GroupEvent("g", ev.CLASSIC, ev.DELETED, 1, Trigger(ev.GROUP_DELETED),
                      T + 1_000, T + 1_000)
    assert ownership_segments([first, gone], T + 5_000)[("t", 0)] == [(T, T + 1_000, "a")]


def test_both_plots_share_a_range_from_the_first_rebalance_to_now():
    events = [generation(1, T, T - 40, [Moved("t", 0, None, "a")], [("a", None)]),
              saved(1, T + 500)]
    t0, t1 = time_range(events, T + 10_000)
    assert t0 < T - 40 and T + 10_000 < t1 < T + 11_000


def test_consumer_protocol_member_whose_session_expired_stops_owning():
    """The same through the KIP-848 coordinator and its recorder: the group's last epoch
    is Empty, and the member's partitions have no owner from when its session ended."""
    from tests.unit.observability.test_recorder_consumer import Recording
    h = Recording({"t": 2})
    h.join("a")
    h.advance(45_000)
    events = h.take()
    assert events[-1].outcome == "empty"
    ended = events[-1].started_ms
    segments = ownership_segments(events, h.now + 1_000)
    assert {k: [(who, end) for _, end, who in v] for k, v in segments.items()} == {
        ("t", p): [("a", ended), (None, h.now + 1_000)] for p in (0, 1)}


def test_a_standby_task_held_by_two_members_is_owned_while_either_stays():
    """A streams group's standby task may have several holders ("a,b"): the task keeps its
    holders while one of them is still in the group."""
    first = generation(1, T, T - 10, [Moved("0", 1, None, "a,b", role="standby")],
                       [("a", None), ("b", None)])
    one_left = generation(2, T + 1_000, T + 900, (), [("b", None)], kind=ev.MEMBER_LEFT)
    assert ownership_segments([first, one_left], T + 2_000)[("0", 1, "standby")] == [
        (T, T + 2_000, "a,b")]
    both_left = generation(3, T + 3_000, T + 2_900, (), (), outcome="empty",
                           kind=ev.MEMBER_LEFT)
    assert ownership_segments([first, one_left, both_left], T + 4_000)[
        ("0", 1, "standby")] == [(T, T + 2_900, "a,b"), (T + 2_900, T + 4_000, None)]
