"""The report's aggregates in Spark over events built here (no broker): a partition's first
assignment is not counted as moved, and a tie for the most common reason names every reason
that shares the top count."""
from __future__ import annotations

import re

import pytest

from roster.observability import events as ev
from roster.observability.events import GroupEvent, Moved, Trigger
from roster.observability.report import aggregate, parse_events, render

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

T = 1_795_800_000_000


def generation(group, n, kind, moved=(), at=None):
    at = T + 1000 * n if at is None else at
    return GroupEvent(group, ev.CLASSIC, ev.GENERATION, n, Trigger(kind), at, at - 50,
                      outcome="stable", moved=tuple(moved))


def test_first_assignments_are_not_moves_and_a_tie_names_both_reasons(spark):
    first = [Moved("t", p, None, "m-1") for p in range(6)]          # not moves
    handed = [Moved("t", p, "m-1", "m-2", 40) for p in range(3)]    # 3 moves
    released = [Moved("t", 5, "m-1", None)]                         # not a move
    events = [generation("tied", 1, ev.MEMBER_JOINED, first),
              generation("tied", 2, ev.MEMBER_LEFT, handed + released),
              generation("tied", 3, ev.MEMBER_JOINED),
              generation("tied", 4, ev.MEMBER_LEFT),
              generation("clear", 1, ev.MEMBER_JOINED, first[:2]),
              generation("clear", 2, ev.MEMBER_JOINED),
              generation("clear", 3, ev.SESSION_EXPIRED, handed[:1])]
    raw = spark.createDataFrame([(e.to_json().decode(),) for e in events], "value STRING")
    data = aggregate(parse_events(raw))
    groups = {g["group_id"]: g for g in data["groups"]}
    assert groups["tied"]["moved"] == 3 and groups["clear"]["moved"] == 1
    assert sum(n for _, n in data["moved_hour"]) == 4
    assert groups["tied"]["top_reason"] == (2, [ev.MEMBER_JOINED, ev.MEMBER_LEFT])
    assert groups["clear"]["top_reason"] == (2, [ev.MEMBER_JOINED])
    page = render(data, None, {}, 1.0)
    assert 'data-count="moved">4<' in page
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r'<td class="reason">(.*?)</td>', page)]
    assert sorted(cells) == ["member joined (2×)", "tie: member joined, member left (2× each)"]
