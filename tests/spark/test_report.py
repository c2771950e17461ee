"""The Spark rebalance report over real events: its counts equal `roster groups history`'s,
for one group and for all, and headless chromium shows a non-blank page whose DOM has the
expected number of rebalances and saved ones."""
from __future__ import annotations

import re
import shutil

import pytest

from roster.admin.client import AdminClient
from roster.observability import events as ev
from roster.observability import history
from roster.observability.report import run
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch
from tests.support.needs import missing

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def bounced(roster_broker):
    """Two groups: one static (a bounce saved), one dynamic (a bounce: two rebalances)."""
    watch = Watch()
    conf = {"heartbeat.interval.ms": 300, "session.timeout.ms": 6000}
    for group, static in (("report-static", True), ("report-dynamic", False)):
        groups.create_topic(roster_broker.bootstrap, group, 4)
        members = [ConfluentMember(watch, roster_broker.bootstrap, group, group, f"{group}-{i}",
                                   f"{group}-i{i}" if static else None, conf)
                   for i in range(2)]
        try:
            for m in members:
                m.start()
            groups.wait_split(watch, members, 4)
            members[0].stop()
            if not static:
                watch.wait_for(lambda: groups.split_evenly(members[1:], 4), groups.DEADLINE_S,
                               lambda: "taken over")
            members[0] = ConfluentMember(watch, roster_broker.bootstrap, group, group,
                                         f"{group}-0b", f"{group}-i0" if static else None,
                                         conf).start()
            groups.wait_split(watch, members, 4)
        finally:
            for m in members:
                m.stop()
    # the static members left nothing behind: remove them (an admin removal), so that no
    # session expiry adds events while the report runs
    from roster.admin.groups import remove_members
    with AdminClient(roster_broker.bootstrap) as client:
        remove_members(client, "report-static", ["report-static-i0", "report-static-i1"])
        recorded = {}
        for group in ("report-static", "report-dynamic"):
            # both groups end Empty: their last generation has no members
            for event in history.events(client, group, follow=True, wait_ms=300, timeout_s=20):
                if event.kind == ev.GENERATION and event.members_after == () and (
                        group == "report-dynamic" or event.trigger.kind == ev.ADMIN_REMOVAL):
                    break
            recorded[group] = list(history.events(client, group))
    return recorded


def counts(events):
    return (sum(e.kind == ev.GENERATION for e in events), sum(e.kind == ev.SAVED for e in events))


@pytest.fixture(scope="module")
def report_all(spark, roster_broker, bounced, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "all.html"
    return out, run(spark, roster_broker.bootstrap, out)


def test_report_counts_equal_the_history(spark, roster_broker, bounced, report_all, tmp_path):
    out, data = report_all
    every = [e for events in bounced.values() for e in events]
    generations, saved = counts(every)
    assert data["totals"].get(ev.GENERATION, 0) == generations
    assert data["totals"].get(ev.SAVED, 0) == saved == 1
    by_group = {g["group_id"]: g for g in data["groups"]}
    for group, events in bounced.items():
        assert (by_group[group]["generations"], by_group[group]["saved"]) == counts(events)
    page = out.read_text()
    assert f'data-count="generations">{generations}<' in page
    assert 'data-count="saved">1<' in page
    assert "http://" not in page and "https://" not in page.replace("http://www.w3.org", "")

    one = tmp_path / "one.html"
    data = run(spark, roster_broker.bootstrap, one, group="report-dynamic")
    assert [g["group_id"] for g in data["groups"]] == ["report-dynamic"]
    assert data["totals"].get(ev.GENERATION) == counts(bounced["report-dynamic"])[0]
    assert sum(h[1] for h in data["moved_hour"]) > 0


def test_report_in_chromium(bounced, report_all, tmp_path):
    browser = shutil.which("chromium")
    if browser is None:
        missing("chromium is not installed (scripts/ensure-system-deps.sh installs it)")
    import subprocess

    from tests.interop.test_console_browser import distinct_colours
    out, _ = report_all
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars"]
    dom = subprocess.run(flags + [f"--user-data-dir={tmp_path / 'p1'}", "--dump-dom",
                                  out.as_uri()], capture_output=True, text=True, timeout=90,
                         check=True).stdout
    generations, _ = counts([e for events in bounced.values() for e in events])
    assert re.search(rf'data-count="generations">{generations}<', dom)
    assert dom.count('class="group-row"') == 2 and dom.count('<td class="reason">') == 2
    assert dom.count('data-plot="bars"') == 4
    shot = tmp_path / "report.png"
    subprocess.run(flags + [f"--user-data-dir={tmp_path / 'p2'}", f"--screenshot={shot}",
                            "--window-size=1280,2700", out.as_uri()], capture_output=True,
                   timeout=90, check=True)
    assert distinct_colours(shot.read_bytes()) > 20, "the report looks blank"
