"""Share partitions survive kill -9: a process drives a broker's share partition on its real log,
__share_group_state and fsync path (tests/support/share_state_driver.py) and is killed with
SIGKILL in the middle of its acknowledgements; then a real `roster serve` on the same data
directory reports the start offset the replayed state has, and the state itself is checked:
nothing whose acknowledgement (ACCEPT, REJECT) was answered comes back to be delivered again,
nothing unacknowledged is lost (it is AVAILABLE, or past the window and read again from the
log), delivery counts are at least what the answered releases left, and acquired records come
back AVAILABLE."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from roster.admin.client import AdminClient
from roster.protocol.api_keys import ApiKey
from tests.support.process import BrokerProcess
from tests.support.share_state_driver import GROUP, RECORDS, SETTINGS, TOPIC

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
ACCEPT, RELEASE, REJECT = 1, 2, 3
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
DELIVERY_LIMIT = 5      # group.share.delivery.count.limit's default


def _driver(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.support.share_state_driver", *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _drive_until_killed(data_dir: Path, seed: int, answers: int) -> list[dict]:
    """Run the driver; SIGKILL it once it reported `answers` answered acknowledgements."""
    proc = _driver("drive", str(data_dir), str(seed))
    lines, answered = [], 0
    try:
        for raw in proc.stdout:
            line = json.loads(raw)
            lines.append(line)
            answered += "answered" in line
            if answered >= answers:
                os.kill(proc.pid, signal.SIGKILL)
                break
        else:
            pytest.fail(f"the driver stopped early: {proc.stderr.read()[-2000:]}")
        lines += [json.loads(raw) for raw in proc.stdout if raw.strip()]  # printed before it
    finally:
        proc.kill()
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    return lines


def _inspect(data_dir: Path) -> dict:
    proc = _driver("inspect", str(data_dir))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.splitlines()[-1])


def _described_start(bootstrap: str) -> int:
    with AdminClient(bootstrap) as admin:
        group = admin.entry(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "groups")
        topic = admin.entry(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "groups", "topics")
        answer = admin.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, groups=(
            group(group_id=GROUP, topics=(topic(topic_name=TOPIC, partitions=(0,)),)),))
    [partition] = answer.groups[0].topics[0].partitions
    assert partition.error_code == 0
    return partition.start_offset


@pytest.mark.parametrize("seed, answers", [(1, 25), (2, 60), (3, 110)])
def test_share_state_survives_kill_9(tmp_path, seed, answers):
    lines = _drive_until_killed(tmp_path, seed, answers)
    answered_kind: dict[int, int] = {}      # offset -> its last answered acknowledgement
    released_at: dict[int, int] = {}        # offset -> its delivery count when released
    count: dict[int, int] = {}              # offset -> its latest delivery count
    in_flight: set[int] = set()
    for line in lines:
        for first, last, delivered in line.get("acquired", ()):
            for offset in range(first, last + 1):
                count[offset] = delivered
        if "sending" in line:
            in_flight = {b[0] for b in line["sending"]}
        if "answered" in line:
            assert line["error"] is None
            for offset, _, (kind,) in line["answered"]:
                answered_kind[offset] = kind
                if kind == RELEASE:
                    released_at[offset] = count[offset]
            in_flight = set()
    assert answered_kind, "nothing was acknowledged before the kill"

    # a real broker replays the same state and answers its start offset
    broker = BrokerProcess(tmp_path, dict(s.split("=", 1) for s in SETTINGS)).start()
    try:
        described = _described_start(broker.bootstrap)
    finally:
        broker.stop()
    state = _inspect(tmp_path)
    start, end = state["start"], state["end"]
    records = {int(o): tuple(v) for o, v in state["records"].items()}
    assert described == start

    for offset in range(RECORDS):
        kind = answered_kind.get(offset)
        found = records.get(offset)
        if kind in (ACCEPT, REJECT):       # acknowledged: never delivered again
            assert offset < start or (found and found[0] in (ACKNOWLEDGED, ARCHIVED)), \
                (offset, kind, found)
            continue
        if offset in in_flight or count.get(offset, 0) >= DELIVERY_LIMIT:
            continue                        # its fate was being written / may be archived
        # not acknowledged: still to be delivered, AVAILABLE (acquired ones too) or past the
        # window, where the log gives it again
        assert offset >= start, (offset, start)
        assert offset >= end or (found and found[0] == AVAILABLE), (offset, kind, found, end)
        if kind == RELEASE and offset < end:
            assert found[1] >= released_at[offset], (offset, found, released_at[offset])
