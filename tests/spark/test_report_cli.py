"""`roster report --out DIR` as a user runs it (.venv/bin/roster): a directory gets GROUP.html,
a page a browser opens as HTML (the file name logic itself: tests/interop/test_cli_kafka_habits)."""
from __future__ import annotations

import pytest

from tests.spark.session import c1_environment
from tests.support import groups
from tests.support.cli import ok, roster

pytestmark = pytest.mark.spark


def test_report_into_a_directory_writes_group_html(roster_broker, tmp_path):
    watch = groups.Watch()
    groups.create_topic(roster_broker.bootstrap, "report-cli", 1)
    member = groups.ConfluentMember(watch, roster_broker.bootstrap, "report-cli-group",
                                    "report-cli", "report-cli-0", None, {})
    with groups.running(roster_broker, [member]):
        groups.wait_split(watch, [member], 1)     # one generation: an event to report
    out = tmp_path / "reports"
    out.mkdir()
    printed = ok(roster("report", "--group", "report-cli-group", "--out", str(out),
                        "--bootstrap-server", roster_broker.bootstrap, timeout_s=300,
                        env=c1_environment()))
    page = out / "report-cli-group.html"
    assert f"wrote {page}" in printed and [p.name for p in out.iterdir()] == [page.name]
    assert page.read_text().lstrip().lower().startswith("<!doctype html")
