"""A full disk: commits and produces fail with an error, nothing acknowledged is lost, reads keep
working, and everything works again once there is room. The data directory is a real, tiny
tmpfs (needs root to mount; skipped otherwise)."""
from __future__ import annotations

import datetime
import os
import subprocess

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from tests.interop.test_bad_input import _create, _produce
from tests.support.process import BrokerProcess
from tests.support.records import build_batch
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("disk-full")]


@pytest.fixture
def tiny_disk(tmp_path):
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount_point)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def _commit(wire, group: str, offset: int, metadata: str = ""):
    schema = request_schema(8, 8)
    topic = element(schema, "topics")
    part = element(topic, "partitions")
    answer = wire.call(8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                       group_instance_id=None, topics=(make(topic, name="data", partitions=(
                           make(part, partition_index=0, committed_offset=offset,
                                committed_leader_epoch=-1, committed_metadata=metadata),)),))
    return answer.topics[0].partitions[0].error_code


def _committed(wire, group: str) -> int:
    schema = request_schema(9, 7)
    topic = element(schema, "topics")
    answer = wire.call(9, 7, group_id=group, require_stable=False,
                       topics=(make(topic, name="data", partition_indexes=(0,)),))
    return answer.topics[0].partitions[0].committed_offset


def _fetch(wire) -> tuple[ErrorCode, int]:
    schema = request_schema(1, 12)
    entry = element(schema, "topics")
    part = element(entry, "partitions")
    answer = wire.call(1, 12, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                       max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                       rack_id="", forgotten_topics_data=(), topics=(make(
                           entry, topic="data", partitions=(make(
                               part, partition=0, fetch_offset=0,
                               partition_max_bytes=1 << 20),)),))
    data = answer.responses[0].partitions[0]
    return data.error_code, len(data.records or b"")


def fill(directory) -> os.PathLike:
    """Write a file until the filesystem is full; returns it (delete it to make room)."""
    filler = directory / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_fails_writes_keeps_reads_and_recovers(tiny_disk):
    broker = BrokerProcess(tiny_disk / "data", {
        "offsets.topic.num.partitions": "1", "offsets.topic.segment.bytes": "1048576",
        "log.segment.bytes": "1048576"}).start()
    try:
        with Wire(broker.bootstrap) as wire:
            assert _create(wire, "data", 1).error_code == ErrorCode.none
            assert _produce(wire, "data", 0, build_batch([b"x" * 100] * 10), acks=-1).error_code \
                == ErrorCode.none
            assert _commit(wire, "g", 5) == ErrorCode.none

            filler = fill(tiny_disk)
            big = build_batch([b"y" * 1000] * 100)
            failed_produce = _produce(wire, "data", 0, big, acks=-1)
            # 4 KB of metadata: a small record could still fit in the file's last allocated page
            failed_commit = _commit(wire, "g", 9, metadata="m" * 4000)
            # reads still work, and only what was acknowledged is there
            fetched = _fetch(wire)
            committed = _committed(wire, "g")

            os.unlink(filler)
            recovered_produce = _produce(wire, "data", 0, big, acks=-1)
            recovered_commit = _commit(wire, "g", 9)
            committed_after = _committed(wire, "g")
    finally:
        broker.stop()
    assert failed_produce.error_code == ErrorCode.kafka_storage_error
    assert failed_commit == ErrorCode.not_coordinator  # Kafka's mapping: rediscover and retry
    assert fetched[0] == ErrorCode.none and fetched[1] > 0
    assert committed == 5
    assert (recovered_produce.error_code, recovered_produce.base_offset) == (ErrorCode.none, 10)
    assert (recovered_commit, committed_after) == (ErrorCode.none, 9)
    assert broker.proc.returncode == 0, "\n".join(broker.output[-30:])
