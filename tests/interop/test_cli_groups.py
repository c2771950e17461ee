"""The group and offsets commands as a user runs them, against a live group."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.interop.test_bad_input import _create
from tests.interop.test_group_durability import StaticConsumer, wait_until
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("cli-groups")]


def roster(bootstrap: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "roster", *args[:1], "--bootstrap-server",
                             bootstrap, *args[1:]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_groups_describe_shows_state_generation_leader_members_and_assignments(broker_factory):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "cli", 2).error_code == 0
    members = [StaticConsumer(broker.bootstrap, "cli-group", f"cli-{i}", "cli") for i in (0, 1)]
    try:
        wait_until(lambda: all(len(m.assigned) == 1 for m in members), 60, "two members")
        out = roster(broker.bootstrap, "groups", "describe", "cli-group")
        listed = roster(broker.bootstrap, "groups", "list")
        offsets = roster(broker.bootstrap, "offsets", "describe", "cli-group")
    finally:
        for member in members:
            member.close()
    assert "State: Stable" in out and "Protocol: range" in out and "Members: 2" in out
    generation_line = next(line for line in out.splitlines() if line.startswith("Generation:"))
    leader = generation_line.split("Leader: ")[1].split()[0]
    assert leader.startswith("cli-") and leader in out.split(generation_line)[1]
    assert "cli-0" in out and "cli-1" in out and "cli:0" in out and "cli:1" in out
    assert "cli-group\tStable\tconsumer" in listed
    assert "LAG" in offsets or "no committed offsets" in offsets
