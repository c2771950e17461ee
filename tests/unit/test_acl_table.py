"""docs/security.md's table of what each API needs is the handlers' declarations, rendered."""
from pathlib import Path

from roster.broker.network.acl_table import BEGIN, END, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_security_md_holds_the_generated_acl_table():
    text = DOC.read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:stop] == render(), "run: python -m roster.broker.network.acl_table"


def test_every_group_and_topic_api_needs_something():
    rows = {line.split(" | ")[0].strip("| "): line for line in render().splitlines()[3:-1]}
    for api in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                "OffsetFetch", "DeleteGroups", "Produce", "Fetch", "Metadata"):
        assert "nothing" not in rows[api], rows[api]
