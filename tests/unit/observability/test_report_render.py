"""The Spark report's page from collected aggregates (no Spark): a tie for the most common
reason is settled the same way whatever order the rows came in, and says it is a tie."""
from __future__ import annotations

import itertools
import re

from roster.observability import events as ev
from roster.observability.report import render, top_reasons

ROWS = [("g", ev.SESSION_EXPIRED, 3), ("g", ev.MEMBER_JOINED, 3), ("g", ev.MEMBER_LEFT, 1),
        ("h", ev.MEMBER_LEFT, 1), ("h", ev.MEMBER_JOINED, 4)]


def test_a_tie_names_every_reason_sharing_the_top_count_in_one_order():
    expected = {"g": (3, [ev.MEMBER_JOINED, ev.SESSION_EXPIRED]), "h": (4, [ev.MEMBER_JOINED])}
    assert all(top_reasons(rows) == expected for rows in itertools.permutations(ROWS))


def data(groups):
    return {"per_hour": [], "moved_hour": [], "saved_hour": [],
            "gaps": {"n": 0, "max": None, "p": [], "bounds": [0, 100], "buckets": {}},
            "duration": {"p": [], "max": None}, "totals": {ev.GENERATION: 7},
            "first_ms": None, "last_ms": None,
            "groups": [{"group_id": g, "protocol": "classic", "generations": 7, "saved": 0,
                        "moved": 0, "median_ms": 10, "last_ms": None, "top_reason": top}
                       for g, top in groups.items()]}


def test_the_page_says_it_is_a_tie():
    page = render(data(top_reasons(ROWS)), None, {}, 0.5)
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r'<td class="reason">(.*?)</td>', page)]
    assert cells == ["tie: member joined, session expired (3× each)", "member joined (4×)"]
