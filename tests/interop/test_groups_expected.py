"""Issue 17, part 2, with real clients: pre-registered static members (KIP-345's "future
work"). `roster groups expect` sets a group config (IncrementalAlterConfigs on the GROUP
resource); ten static confluent-kafka members started a second apart then form the group in
exactly one generation, the moment the tenth joins; an unexpected instance id is refused; the
expectation survives kill -9 of the broker; `roster groups remove-members` updates it."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("groups-expected")]

MEMBERS = 10
HEARTBEAT_MS = 500


def roster(bootstrap: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "roster", *args[:1], "--bootstrap-server",
                             bootstrap, *args[1:]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def member(watch, broker, group, name):
    return ConfluentMember(watch, broker.bootstrap, group, group, name, name,
                           {"heartbeat.interval.ms": HEARTBEAT_MS, "session.timeout.ms": 10000})


def refused(intruder) -> bool:
    return any("maximum size" in str(e).lower() or "GROUP_MAX_SIZE" in str(e)
               for e in intruder.errors)


def test_expected_static_members_form_in_one_generation_and_others_are_refused(
        tmp_path_factory):
    from tests.support.process import BrokerProcess
    # the initial rebalance delay is 0 here, as in the other group tests: without expectations
    # ten members a second apart would form generation after generation
    broker = BrokerProcess(tmp_path_factory.mktemp("expected"),
                           {"group.initial.rebalance.delay.ms": "0"}).start()
    group = "expected"
    ids = [f"exp-{i}" for i in range(MEMBERS)]
    watch = Watch()
    running = []
    try:
        groups.create_topic(broker.bootstrap, group, MEMBERS)
        out = roster(broker.bootstrap, "groups", "expect", group, "--instance-ids", ",".join(ids))
        assert out.strip() == (f"{group}: expects instance ids {','.join(ids)}; unexpected "
                               "members are refused")
        members = [member(watch, broker, group, name) for name in ids]
        for index, m in enumerate(members):
            if index:
                time.sleep(1)   # the scenario: members arriving a second apart
            running.append(m.start())
        last_started = time.monotonic()
        groups.wait_split(watch, members, MEMBERS)
        formed_after = time.monotonic() - last_started
        # one generation: everyone was assigned once and nothing was ever revoked
        assert all(m.count("assign") == 1 and m.count("revoke", "lost") == 0
                   for m in members), groups.describe_assignment(members)
        broker.wait_for_line(f"group {group} enters generation 1 with {MEMBERS} members")
        assert f"group {group} enters generation 2" not in "\n".join(broker.output)
        assert formed_after < 5, formed_after   # no fixed delay after the last one

        # an instance id that is not expected is refused, and the group does not notice
        intruder = member(watch, broker, group, "intruder")
        running.append(intruder.start())
        watch.wait_for(lambda: refused(intruder), 20,
                       lambda: f"the intruder to be refused: {intruder.errors}")
        assert not intruder.assigned
        assert all(m.count("assign") == 1 for m in members)
        # the client may hear the refusal before the broker's log line is read from its pipe
        broker.wait_for_line("refuses a member (intruder): instance id intruder is not in")
        intruder.stop()
        running.remove(intruder)

        # the expectation is durable: kill -9, restart, still there and still enforced
        broker.kill9()
        broker.restart()
        out = roster(broker.bootstrap, "groups", "expect", group)
        assert f"expects instance ids {','.join(ids)}" in out
        again = member(watch, broker, group, "intruder-2")
        running.append(again.start())
        watch.wait_for(lambda: refused(again), 30,
                       lambda: f"the second intruder to be refused: {again.errors}")

        # remove-members is the explicit scale-down: the expectation follows it
        roster(broker.bootstrap, "groups", "remove-members", group, "--instance-ids", "exp-9")
        out = roster(broker.bootstrap, "groups", "expect", group)
        assert f"expects instance ids {','.join(ids[:-1])};" in out
    finally:
        for m in running:
            try:
                m.stop()
            except Exception:
                pass
        print("broker output:\n" + "\n".join(broker.output))
        broker.stop()
