"""A full disk: commits and produces fail with an error, nothing acknowledged is lost, reads keep
working, and everything works again once there is room. The data directory is a real, tiny
tmpfs (needs root to mount; skipped otherwise, and a failure as root or in CI)."""
from __future__ import annotations

import contextlib
import datetime
import itertools
import os
import shutil
import subprocess
import uuid

import pytest

from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from tests.interop.test_bad_input import _create, _produce
from tests.support.needs import missing
from tests.support.process import BrokerProcess
from tests.support.records import build_batch
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("disk-full")]


@contextlib.contextmanager
def _tmpfs(mount_point, options: str):
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        missing(f"cannot mount a tmpfs here (needs root): {result.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.fixture
def tiny_disk(tmp_path):
    with _tmpfs(tmp_path / "tiny", "size=6m") as mount_point:
        yield mount_point


@pytest.fixture
def few_inodes_disk(tmp_path):
    """Room for data, but only 64 files and directories in all."""
    with _tmpfs(tmp_path / "few-inodes", "size=6m,nr_inodes=64") as mount_point:
        yield mount_point


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


def fill(directory, name: str = "filler") -> os.PathLike:
    """Write a file until the filesystem has not one byte left; returns it (delete it to make
    room). Big writes first, then ever smaller ones, so no partly used page stays free."""
    filler = directory / name
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError:
                pass
    finally:
        os.close(fd)
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


# -- catalog changes on a full disk -----------------------------------------------------------

SMALL = {"offsets.topic.num.partitions": "1", "offsets.topic.segment.bytes": "1048576",
         "log.segment.bytes": "1048576"}
NO_ID = uuid.UUID(int=0)


def _delete_topic(wire, name: str):
    entry = element(request_schema(20, 6), "topics")
    answer = wire.call(20, 6, topics=(make(entry, name=name, topic_id=NO_ID),),
                       timeout=datetime.timedelta(seconds=5))
    return answer.responses[0]


def _grow(wire, name: str, count: int):
    entry = element(request_schema(37, 3), "topics")
    answer = wire.call(37, 3, topics=(make(entry, name=name, count=count, assignments=None),),
                       timeout=datetime.timedelta(seconds=5), validate_only=False)
    return answer.results[0]


def _alter(wire, name: str, configs: dict[str, str]):
    resource = element(request_schema(33, 2), "resources")
    config = element(resource, "configs")
    answer = wire.call(33, 2, validate_only=False, resources=(make(
        resource, resource_type=2, resource_name=name,
        configs=tuple(make(config, name=k, value=v) for k, v in configs.items())),))
    return answer.responses[0]


def _alter_incrementally(wire, name: str, steps: list[tuple[str, int, str | None]]):
    resource = element(request_schema(44, 1), "resources")
    config = element(resource, "configs")
    answer = wire.call(44, 1, validate_only=False, resources=(make(
        resource, resource_type=2, resource_name=name,
        configs=tuple(make(config, name=k, config_operation=op, value=v) for k, op, v in steps)),))
    return answer.responses[0]


def _delete_records(wire, name: str, partition: int, offset: int):
    entry = element(request_schema(21, 2), "topics")
    part = element(entry, "partitions")
    answer = wire.call(21, 2, timeout=datetime.timedelta(seconds=5), topics=(make(
        entry, name=name, partitions=(make(part, partition_index=partition, offset=offset),)),))
    return answer.topics[0].partitions[0]


def _offsets(wire, name: str, partitions: int, timestamp: int) -> list[int]:
    entry = element(request_schema(2, 7), "topics")
    part = element(entry, "partitions")
    answer = wire.call(2, 7, replica_id=-1, isolation_level=0, topics=(make(
        entry, name=name, partitions=tuple(
            make(part, partition_index=i, current_leader_epoch=-1, timestamp=timestamp)
            for i in range(partitions))),))
    return [p.offset for p in answer.topics[0].partitions]


def _state(wire) -> dict[str, tuple]:
    """Every user topic: (id, partition count, its own configs, log starts, log ends)."""
    metadata = wire.call(3, 12, topics=None, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False)
    resource = element(request_schema(32, 4), "resources")
    state = {}
    for topic in metadata.topics:
        if topic.is_internal:
            continue
        count = len(topic.partitions)
        described = wire.call(32, 4, include_synonyms=False, include_documentation=False,
                              resources=(make(resource, resource_type=2,
                                              resource_name=topic.name,
                                              configuration_keys=None),))
        own = {c.name: c.value for c in described.results[0].configs if c.config_source == 1}
        state[topic.name] = (topic.topic_id, count, own, _offsets(wire, topic.name, count, -2),
                             _offsets(wire, topic.name, count, -1))
    return state


def _leftovers(data) -> list[str]:
    """Files a finished catalog change never leaves in the data directory."""
    return sorted(p.name for p in data.iterdir()
                  if p.name.startswith("deleting-") or p.suffix == ".tmp")


def _free_bytes(directory) -> int:
    stat = os.statvfs(directory)
    return stat.f_bavail * stat.f_frsize


def test_deleting_a_topic_on_a_disk_it_filled_frees_the_space(tiny_disk):
    data = tiny_disk / "data"
    broker = BrokerProcess(data, SMALL).start()
    try:
        with Wire(broker.bootstrap) as wire:
            assert _create(wire, "big", 1).error_code == ErrorCode.none
            assert _create(wire, "small", 1).error_code == ErrorCode.none
            assert _produce(wire, "small", 0, build_batch([b"s" * 10]), acks=-1).error_code \
                == ErrorCode.none
            batch = build_batch([b"b" * 1000] * 100)
            for _ in range(100):  # 6 MB of tmpfs: full well before 10 MB
                if _produce(wire, "big", 0, batch, acks=-1).error_code != ErrorCode.none:
                    break
            else:
                pytest.fail("the tiny disk never filled up")
            fill(tiny_disk)  # and not one byte left over
            full = _free_bytes(tiny_disk)

            deleted = _delete_topic(wire, "big")
            freed = _free_bytes(tiny_disk)
            # the freed space is usable: a new topic's catalog entry and data fit
            created = _create(wire, "fresh", 1)
            produced = _produce(wire, "fresh", 0, build_batch([b"f" * 10]), acks=-1)
            answered = _state(wire)
        broker.kill9()
        leftovers = _leftovers(data)
        broker.start()
        with Wire(broker.bootstrap) as wire:
            restarted = _state(wire)
    finally:
        broker.stop()
    assert (deleted.error_code, deleted.error_message) == (ErrorCode.none, None)
    assert full == 0 and freed > 3 << 20, (full, freed)
    assert created.error_code == produced.error_code == ErrorCode.none
    assert sorted(answered) == ["fresh", "small"]
    assert restarted == answered
    assert leftovers == []
    assert not [p for p in data.iterdir() if p.name.startswith("big-")]


def test_every_catalog_change_on_a_full_disk_answers_an_error_and_changes_nothing(tiny_disk):
    data = tiny_disk / "data"
    broker = BrokerProcess(data, SMALL).start()
    try:
        with Wire(broker.bootstrap) as wire:
            assert _create(wire, "t", 2, configs=[("retention.ms", "600000")]).error_code \
                == ErrorCode.none
            for partition in (0, 1):
                assert _produce(wire, "t", partition, build_batch([b"x" * 100] * 10),
                                acks=-1).error_code == ErrorCode.none
            before = _state(wire)
            filler = fill(tiny_disk)

            answers = {
                "CreateTopics": _create(wire, "new", 3),
                "CreatePartitions": _grow(wire, "t", 4),
                "AlterConfigs": _alter(wire, "t", {"retention.ms": "5000"}),
                "IncrementalAlterConfigs": _alter_incrementally(
                    wire, "t", [("retention.bytes", 0, "100000")]),
            }
            records = _delete_records(wire, "t", 0, 5)
            entry = element(request_schema(3, 12), "topics")
            auto = wire.call(3, 12, topics=(make(entry, name="auto", topic_id=NO_ID),),
                             allow_auto_topic_creation=True,
                             include_topic_authorized_operations=False).topics[0]
            during = _state(wire)
            files_during = sorted(p.name for p in data.iterdir())
        broker.kill9()
        os.unlink(filler)  # room to start again; the catalog on disk is what it was
        broker.start()
        with Wire(broker.bootstrap) as wire:
            restarted = _state(wire)
            # with room, every change works
            worked = [_create(wire, "new", 3).error_code, _grow(wire, "t", 4).error_code,
                      _alter(wire, "t", {"retention.ms": "5000"}).error_code,
                      _alter_incrementally(wire, "t", [("retention.bytes", 0, "100000")]
                                           ).error_code,
                      _delete_records(wire, "t", 0, 5).error_code]
            after = _state(wire)
            worked.append(_delete_topic(wire, "new").error_code)
            assert "new" not in _state(wire)
    finally:
        broker.stop()
    for api, answer in answers.items():
        assert answer.error_code == ErrorCode.kafka_storage_error, api
        assert "cannot" in answer.error_message, (api, answer.error_message)
    assert (records.error_code, records.low_watermark) == (ErrorCode.kafka_storage_error, -1)
    assert auto.error_code == ErrorCode.unknown_topic_or_partition  # not auto-created
    assert during == before
    assert restarted == before
    assert not [f for f in files_during if f.startswith(("new-", "auto-", "t-2", "t-3"))], \
        files_during
    assert "topics.tmp" not in files_during
    assert worked == [ErrorCode.none] * 6
    assert after["new"][1] == 3
    assert after["t"][1:4] == (4, {"retention.ms": "5000", "retention.bytes": "100000"},
                               [5, 0, 0, 0])


def test_a_deletion_the_catalog_has_no_room_for_survives_kill9_and_the_restart_finishes_it(
        tiny_disk):
    data = tiny_disk / "data"
    broker = BrokerProcess(data, SMALL).start()
    try:
        with Wire(broker.bootstrap) as wire:
            assert _create(wire, "empty", 3).error_code == ErrorCode.none
            assert _create(wire, "kept", 1).error_code == ErrorCode.none
            assert _produce(wire, "kept", 0, build_batch([b"k" * 10] * 3), acks=-1).error_code \
                == ErrorCode.none
            filler = fill(tiny_disk)
            # "empty" holds no data: removing it frees nothing, so no new catalog fits
            deleted = _delete_topic(wire, "empty")
            again = _delete_topic(wire, "empty")
            recreated = _create(wire, "empty", 1)  # still no room for a catalog naming it
            answered = _state(wire)
        broker.kill9()
        markers = _leftovers(data)
        os.unlink(filler)
        broker.start()
        with Wire(broker.bootstrap) as wire:
            restarted = _state(wire)
        leftovers = _leftovers(data)
    finally:
        broker.stop()
    assert deleted.error_code == ErrorCode.none
    assert again.error_code == ErrorCode.unknown_topic_or_partition
    assert recreated.error_code == ErrorCode.kafka_storage_error
    assert sorted(answered) == ["kept"]
    assert len(markers) == 1 and markers[0].startswith("deleting-"), markers
    assert restarted == answered
    assert leftovers == []
    assert not [p for p in data.iterdir() if p.name.startswith("empty-")]
    assert "completing the deletion of topic empty" in "\n".join(broker.output)


def _use_up_inodes(directory) -> os.PathLike:
    """Create empty files until the file system has no inode left; returns their directory."""
    junk = directory / "junk"
    junk.mkdir()
    for count in itertools.count():
        try:
            os.close(os.open(junk / str(count), os.O_WRONLY | os.O_CREAT, 0o644))
        except OSError:
            return junk


def test_deleting_a_topic_works_with_no_inode_left(few_inodes_disk):
    """XFS-like: not even an empty file can be created. The deletion renames a spare file into
    its marker; the other changes answer an error."""
    data = few_inodes_disk / "data"
    broker = BrokerProcess(data, SMALL).start()
    try:
        with Wire(broker.bootstrap) as wire:
            assert _create(wire, "t", 3).error_code == ErrorCode.none
            assert _create(wire, "kept", 1).error_code == ErrorCode.none
            assert _produce(wire, "kept", 0, build_batch([b"k"] * 3), acks=-1).error_code \
                == ErrorCode.none
            junk = _use_up_inodes(few_inodes_disk)
            created = _create(wire, "new", 1)
            deleted = _delete_topic(wire, "t")
            answered = _state(wire)
        broker.kill9()
        leftovers = _leftovers(data)
        shutil.rmtree(junk)
        broker.start()
        with Wire(broker.bootstrap) as wire:
            restarted = _state(wire)
    finally:
        broker.stop()
    assert created.error_code == ErrorCode.kafka_storage_error, created
    assert deleted.error_code == ErrorCode.none, deleted
    assert sorted(answered) == ["kept"]
    assert restarted == answered
    assert leftovers == []
    assert not [p for p in data.iterdir() if p.name.startswith(("t-", "new-"))]
