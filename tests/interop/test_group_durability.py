"""Group state survives kill -9: every acknowledged offset, the static member map, deletions.
Real broker processes, real clients, no sleeps: every wait is on an event or a condition."""
from __future__ import annotations

import subprocess
import threading
import time

import pytest

from roster.protocol.group_records import GroupKey, OffsetKey, decode
from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("group-durability")]
# the real default partition count of __consumer_offsets: these tests are about that topic
FAST = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "50"}


def wait_until(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)  # re-checking a condition, not waiting for time to pass
    raise AssertionError(f"timed out waiting for {what}")


def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    from roster.admin.client import AdminClient
    from roster.admin.offsets import committed
    with AdminClient(bootstrap) as admin:
        return committed(admin, group)


def test_every_acknowledged_commit_survives_kill_9(broker_factory):
    """A real client storms the coordinator with commits; kill -9; the restarted broker returns,
    for every group, at least the last offset whose commit was acknowledged."""
    import sys
    broker = broker_factory(FAST)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "storm", 4).error_code == 0
    committer = subprocess.Popen(
        [sys.executable, "-m", "tests.support.committer", broker.bootstrap, "storm", "8", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    acked: dict[tuple[str, int], int] = {}
    try:
        for line in committer.stdout:
            group, partition, offset = line.split()
            acked[(group, int(partition))] = int(offset)
            if len(acked) == 8 and min(acked.values()) >= 50:
                break
        broker.kill9()
    finally:
        committer.kill()
        rest, _ = committer.communicate()
    for line in rest.splitlines():  # acknowledged before the broker died, read after
        group, partition, offset = line.split()
        acked[(group, int(partition))] = int(offset)
    assert len(acked) == 8, "the committer never got going"
    broker.start()
    for (group, partition), offset in sorted(acked.items()):
        survived = committed_offsets(broker.bootstrap, group).get(("storm", partition), -1)
        assert survived >= offset, f"{group}: acknowledged {offset}, found {survived}"


class StaticConsumer:
    """A confluent-kafka static member on a thread, counting rebalance callbacks."""

    def __init__(self, bootstrap: str, group: str, instance: str, topic: str) -> None:
        from confluent_kafka import Consumer
        self.instance = instance
        self.assigned: list[int] = []
        self.callbacks = 0
        self.values: set[bytes] = set()
        self.errors: list = []
        self._stop = threading.Event()
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance,
            "session.timeout.ms": 30000, "heartbeat.interval.ms": 500,
            "auto.offset.reset": "earliest", "enable.auto.commit": True,
            "auto.commit.interval.ms": 200, "reconnect.backoff.max.ms": 500})
        self._consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_assign(self, consumer, partitions):
        self.callbacks += 1
        self.assigned = sorted(p.partition for p in partitions)

    def _on_revoke(self, consumer, partitions):
        self.callbacks += 1

    def _run(self):
        while not self._stop.is_set():
            message = self._consumer.poll(0.1)
            if message is None:
                continue
            if message.error():
                self.errors.append(message.error())
                continue
            self.values.add(message.value())

    def close(self):
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


def test_static_members_ride_through_a_broker_kill_9_without_rebalancing(broker_factory):
    broker = broker_factory(FAST)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "steady", 3).error_code == 0
    members = [StaticConsumer(broker.bootstrap, "steady-group", f"steady-{i}", "steady")
               for i in range(3)]
    try:
        wait_until(lambda: all(len(m.assigned) == 1 for m in members), 60,
                   "three static members with one partition each")
        before = {m.instance: (m.assigned, m.callbacks) for m in members}

        broker.kill9()
        restarted_at = len(broker.output)
        broker.start()  # same port: the clients reconnect on their own
        records = [clients.Rec(p, None, f"after-restart-{p}".encode(), (), 0) for p in range(3)]
        clients.produce_confluent(broker.bootstrap, "steady", records, "none")
        wait_until(lambda: all(f"after-restart-{m.assigned[0]}".encode() in m.values
                               for m in members), 60, "every member to consume after restart")

        assert {m.instance: (m.assigned, m.callbacks) for m in members} == before, \
            "a member saw a revoke or an assignment: the restart caused a rebalance"
        assert not [line for line in broker.output[restarted_at:]
                    if "rebalance group steady-group" in line]
    finally:
        for member in members:
            member.close()


def test_rebalance_interrupted_by_kill_9_settles_after_restart(broker_factory):
    """kill -9 while a rebalance is in flight: after restart the group settles, every partition
    owned by exactly one member."""
    broker = broker_factory(FAST)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "moving", 4).error_code == 0
    first = StaticConsumer(broker.bootstrap, "moving-group", "moving-0", "moving")
    others = []
    try:
        wait_until(lambda: len(first.assigned) == 4, 60, "the first member to own everything")
        others = [StaticConsumer(broker.bootstrap, "moving-group", f"moving-{i}", "moving")
                  for i in (1, 2)]
        wait_until(lambda: any("preparing to rebalance group moving-group" in line
                               for line in broker.output), 30, "a rebalance to start")
        broker.kill9()
        broker.start()
        everyone = [first] + others
        wait_until(lambda: sorted(p for m in everyone for p in m.assigned) == [0, 1, 2, 3]
                   and all(m.assigned for m in everyone), 90,
                   "the three members to split four partitions")
    finally:
        for member in [first] + others:
            member.close()


def test_group_deletion_survives_restart(broker_factory):
    broker = broker_factory(FAST)
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "gone", 1).error_code == 0
    from confluent_kafka import Consumer, TopicPartition
    for group in ("kept", "deleted"):
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        consumer.commit(offsets=[TopicPartition("gone", 0, 7)], asynchronous=False)
        consumer.close()
    from roster.admin.client import AdminClient
    from roster.admin.groups import delete
    with AdminClient(broker.bootstrap) as admin:
        delete(admin, ["deleted"])
    broker.kill9()
    broker.start()
    assert committed_offsets(broker.bootstrap, "kept") == {("gone", 0): 7}
    assert committed_offsets(broker.bootstrap, "deleted") == {}


def test_offset_expiry_survives_restart(broker_factory):
    broker = broker_factory({**FAST, "offsets.retention.minutes": "1",
                             "offsets.retention.check.interval.ms": "200"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "old", 1).error_code == 0
    from roster.admin.client import AdminClient
    from roster.admin.offsets import OFFSET_COMMIT
    from roster.protocol.build import make
    with AdminClient(broker.bootstrap) as admin:
        # OffsetCommit v2 with a retention of 1 ms: the commit expires at the next check
        version = admin.version(OFFSET_COMMIT)
        assert version >= 2
    with Wire(broker.bootstrap) as wire:
        import datetime

        from roster.protocol.build import element
        from roster.protocol.codec import request_schema
        topic = element(request_schema(8, 2), "topics")
        part = element(topic, "partitions")
        wire.call(8, 2, group_id="expiring", generation_id_or_member_epoch=-1, member_id="",
                  retention_time=datetime.timedelta(milliseconds=1), topics=(make(
                      topic, name="old", partitions=(make(part, partition_index=0,
                                                          committed_offset=5,
                                                          committed_metadata=""),)),))
    wait_until(lambda: any("expiring 1 offsets of group expiring" in line
                           for line in broker.output), 30, "the offset to expire")
    # the line is logged when the pass decides; OffsetFetch answers without the offset once
    # its tombstone is written (under load, a moment later): only then is the expiry durable
    wait_until(lambda: committed_offsets(broker.bootstrap, "expiring") == {}, 30,
               "the expiry's tombstone to be written")
    broker.kill9()
    broker.start()
    assert committed_offsets(broker.bootstrap, "expiring") == {}


def kcat_records(bootstrap: str, topic: str) -> list[tuple[int, int, bytes, bytes | None]]:
    """(partition, offset, key, value) as kcat returns them, binary-safe: each record is a
    header line with the key and value lengths (-1 for null), then the raw bytes."""
    result = subprocess.run(
        ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
         "-f", "%p %o %K %S\n%k%s"], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out, pos, records = result.stdout, 0, []
    while pos < len(out):
        end = out.index(b"\n", pos)
        partition, offset, key_size, value_size = map(int, out[pos:end].split())
        pos = end + 1
        key = out[pos:pos + max(key_size, 0)]
        pos += max(key_size, 0)
        value = out[pos:pos + value_size] if value_size >= 0 else None
        pos += max(value_size, 0)
        records.append((partition, offset, key, value))
    return records


def test_kcat_reads_consumer_offsets_and_our_codec_decodes_it(broker):
    from confluent_kafka import Consumer, TopicPartition
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "visible", 1).error_code == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "seen-by-kcat"})
    consumer.commit(offsets=[TopicPartition("visible", 0, 11)], asynchronous=False)
    consumer.close()
    member = StaticConsumer(broker.bootstrap, "joined-group", "joined-0", "visible")
    try:  # a group that forms writes a group-metadata record; commits alone do not
        wait_until(lambda: member.assigned == [0], 60, "the member's assignment")
    finally:
        member.close()
    decoded = [decode(key, value) for _, _, key, value in
               kcat_records(broker.bootstrap, "__consumer_offsets")]
    assert any(isinstance(r.key, OffsetKey) and r.key.group == "seen-by-kcat"
               and (r.key.topic, r.key.partition, r.value.offset) == ("visible", 0, 11)
               for r in decoded)
    groups = [r for r in decoded if isinstance(r.key, GroupKey) and r.key.group == "joined-group"]
    assert groups and groups[-1].value.members[0].group_instance_id == "joined-0"
