"""The report of what Kafka has (no flight recorder): the page from collected group tables. A
group with no offsets, one whose offsets were refused and one whose log end is unknown each say
so; a group id is escaped; the line saying why there is no rebalance history comes first."""
from __future__ import annotations

from roster.admin.describe_views import Member
from roster.observability.group_report import render

WHY = "the rebalance history needs roster's flight recorder"


def group(group_id, offsets=(), members=None, error=None):
    return {"group_id": group_id, "protocol": "consumer", "state": "Stable",
            "members": members, "offsets": list(offsets), "error": error}


def test_each_group_says_what_the_broker_gave():
    member = Member("m-1", "i-1", "client-a", "/127.0.0.1", (("t", 0), ("t", 1)))
    page = render([
        group("<busy>", [{"topic": "t", "partition": 0, "committed": 4, "end": 10, "lag": 6},
                         {"topic": "t", "partition": 1, "committed": 3, "end": -1,
                          "lag": None}], members=[member]),
        group("idle"),
        group("refused", error="cannot fetch offsets of refused: GROUP_AUTHORIZATION_FAILED")],
        None, WHY, "127.0.0.1:9092")
    assert page.index(WHY.replace("'", "&#x27;")) < page.index("<section")
    assert "&lt;busy&gt;" in page and "<busy>" not in page
    assert '<b data-lag="6">6</b>' in page   # an unknown log end adds nothing to the lag
    assert 'data-committed="3" data-end="-1" data-lag=""' in page
    assert "<td>t-0, t-1</td>" in page and "1 member(s)" in page
    assert "No committed offsets." in page
    assert "GROUP_AUTHORIZATION_FAILED" in page
    assert "3 group(s) read from 127.0.0.1:9092" in page


def test_a_cluster_with_no_groups_says_so():
    page = render([], None, WHY, "h:1")
    assert "The cluster lists no groups." in page and "Group report · every group" in page
