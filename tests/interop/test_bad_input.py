"""Bad input closes one connection or gets the protocol's error answer; the broker keeps serving."""
from __future__ import annotations

import datetime
import struct

import pytest

from roster.protocol.errors import ErrorCode
from tests.support.records import build_batch
from tests.support.wire import Wire

pytestmark = pytest.mark.interop

API_VERSIONS, METADATA, PRODUCE, CREATE_TOPICS = 18, 3, 0, 19


def still_serves(broker) -> None:
    with Wire(broker.bootstrap) as wire:
        assert wire.call(API_VERSIONS, 3, client_software_name="t",
                         client_software_version="1").error_code == ErrorCode.none


@pytest.fixture
def small_frames_broker(broker_factory):
    return broker_factory({"socket.request.max.bytes": "4096"})


@pytest.mark.parametrize("frame", [
    struct.pack(">i", 5000) + b"\0" * 10,            # larger than socket.request.max.bytes
    struct.pack(">i", -1),                           # negative size
    struct.pack(">i", 3) + b"abc",                   # shorter than any request header
    struct.pack(">ihhi", 8, 999, 0, 1),              # unknown api key
    struct.pack(">ihhi", 8, METADATA, 99, 1),        # unsupported version of a known api
    struct.pack(">ihhi", 12, METADATA, 9, 1) + b"\xff\xff\xff\xff",  # garbage body
], ids=["oversized", "negative-size", "tiny", "unknown-api", "unsupported-version", "garbage"])
def test_unservable_frames_close_only_that_connection(small_frames_broker, frame):
    with Wire(small_frames_broker.bootstrap) as bystander, \
            Wire(small_frames_broker.bootstrap) as offender:
        offender_address = "%s:%d" % offender.sock.getsockname()[:2]
        offender.send_raw(frame)
        assert offender.closed_by_peer()
        # a connection that was open all along is unaffected
        assert bystander.call(METADATA, 12, topics=(), allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False).brokers
    still_serves(small_frames_broker)
    small_frames_broker.wait_for_line(f"closing connection from {offender_address}")


def test_truncated_frame_then_hangup(broker):
    with Wire(broker.bootstrap) as wire:
        wire.send_raw(struct.pack(">i", 100) + b"\0\x12\0\0")
    still_serves(broker)


def test_api_versions_above_ours_answers_v0_with_its_own_range(broker):
    """As Kafka 4.4 answers ApiVersions v6 (KIP-511): only ApiVersions' range, so the client
    retries at our newest version and reads the features (franz-go otherwise takes a full list
    in this answer as the real one; tests/interop/test_go_transactions.py)."""
    with Wire(broker.bootstrap) as wire:
        # ApiVersions v99, header v2 (flexible): id, version, correlation id, client id, tags
        wire.send_raw(struct.pack(">ihhih", 11, API_VERSIONS, 99, 42, -1) + b"\0")
        frame = wire.read_frame()
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
    assert (correlation_id, error_code) == (42, ErrorCode.unsupported_version.value)
    assert [struct.unpack_from(">hhh", frame, 10 + 6 * i) for i in range(count)] == [
        (API_VERSIONS, 0, 4)]


def test_api_versions_rejects_bad_software_name(broker):
    with Wire(broker.bootstrap) as wire:
        answer = wire.call(API_VERSIONS, 3, client_software_name="bad name!",
                           client_software_version="1")
    assert answer.error_code == ErrorCode.invalid_request


def _create(wire, name, partitions=1, replication=-1, configs=()):
    from roster.protocol.build import element
    from roster.protocol.codec import request_schema
    entry = element(request_schema(CREATE_TOPICS, 7), "topics")
    config = element(entry, "configs")
    answer = wire.call(CREATE_TOPICS, 7, topics=(entry(
        name=name, num_partitions=partitions, replication_factor=replication, assignments=(),
        configs=tuple(config(name=k, value=v) for k, v in configs)),),
        timeout=datetime.timedelta(seconds=5), validate_only=False)
    return answer.topics[0]


@pytest.mark.parametrize("name", ["bad name", "a/b", "", ".", "x" * 250])
def test_invalid_topic_names(broker, name):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, name).error_code == ErrorCode.invalid_topic_exception


def test_create_topic_errors(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "ok", 2).error_code == ErrorCode.none
        assert _create(wire, "ok", 2).error_code == ErrorCode.topic_already_exists
        assert _create(wire, "rf3", replication=3).error_code == ErrorCode.invalid_replication_factor
        assert _create(wire, "zero", partitions=0).error_code == ErrorCode.invalid_partitions
        assert _create(wire, "cfg", configs=[("no.such", "1")]).error_code == ErrorCode.invalid_config
        assert _create(wire, "cfg", configs=[("retention.ms", "soon")]).error_code == \
            ErrorCode.invalid_config
        assert _create(wire, "cfg", configs=[("cleanup.policy", "shred")]).error_code == \
            ErrorCode.invalid_config


def _produce(wire, topic, partition, records, acks=1):
    from roster.protocol.build import element
    from roster.protocol.codec import request_schema
    schema = request_schema(PRODUCE, 9)
    topic_entry = element(schema, "topic_data")
    partition_entry = element(topic_entry, "partition_data")
    answer = wire.call(PRODUCE, 9, transactional_id=None, acks=acks,
                       timeout=datetime.timedelta(seconds=5),
                       topic_data=(topic_entry(name=topic, partition_data=(
                           partition_entry(index=partition, records=records),)),))
    return answer.responses[0].partition_responses[0]


def test_produce_errors_write_nothing(broker):
    good = build_batch([b"a", b"b"])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF  # payload no longer matches the CRC
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "p", 1).error_code == ErrorCode.none
        assert _produce(wire, "p", 5, good).error_code == ErrorCode.unknown_topic_or_partition
        assert _produce(wire, "p", 0, bytes(corrupt)).error_code == ErrorCode.corrupt_message
        assert _produce(wire, "p", 0, good + good).error_code == ErrorCode.invalid_record
        assert _produce(wire, "p", 0, good, acks=2).error_code == ErrorCode.invalid_required_acks
        ok = _produce(wire, "p", 0, good)
        assert (ok.error_code, ok.base_offset) == (ErrorCode.none, 0)  # nothing before it was kept
        assert _produce(wire, "p", 0, good, acks=-1).base_offset == 2


@pytest.mark.parametrize("version", [2, 4, 5, 7])
def test_create_topics_every_version(broker, version):
    from roster.protocol.build import element, make
    from roster.protocol.codec import request_schema
    entry = element(request_schema(CREATE_TOPICS, version), "topics")
    with Wire(broker.bootstrap) as wire:
        answer = wire.call(CREATE_TOPICS, version, topics=(make(
            entry, name=f"v{version}", num_partitions=2, replication_factor=1, assignments=(),
            configs=()),), timeout=datetime.timedelta(seconds=5), validate_only=False)
    assert answer.topics[0].error_code == ErrorCode.none


def test_an_empty_batch_is_refused(broker):
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    empty = bytes(builder.build())
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "e", 1).error_code == ErrorCode.none
        assert _produce(wire, "e", 0, empty).error_code == ErrorCode.invalid_record


def test_add_partitions_grows_and_refuses_shrinking(broker):
    from roster.admin.client import AdminClient, AdminError
    from roster.admin.topics import add_partitions, create, metadata
    with AdminClient(broker.bootstrap) as admin:
        create(admin, "grow", 2, {})
        add_partitions(admin, "grow", 5)
        assert len(metadata(admin, ["grow"]).topics[0].partitions) == 5
        with pytest.raises(AdminError, match="INVALID_PARTITIONS"):
            add_partitions(admin, "grow", 3)
        with pytest.raises(AdminError, match="UNKNOWN_TOPIC_OR_PARTITION"):
            add_partitions(admin, "absent", 3)
    broker.restart()  # the catalog kept the new count
    with AdminClient(broker.bootstrap) as admin:
        assert len(metadata(admin, ["grow"]).topics[0].partitions) == 5


def test_clean_shutdown_with_a_parked_fetch_logs_no_error(broker):
    """SIGTERM while a Fetch long poll is parked: exit 0 and no traceback."""
    from roster.protocol.build import element, make
    from roster.protocol.codec import encode_request, request_schema
    schema = request_schema(1, 12)
    entry = element(schema, "topics")
    part = element(entry, "partitions")
    body = make(schema, replica_id=-1, max_wait=datetime.timedelta(seconds=30), min_bytes=1,
                max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                rack_id="", forgotten_topics_data=(), topics=(make(
                    entry, topic="idle", partitions=(make(
                        part, partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "idle", 1).error_code == ErrorCode.none
        wire.send_raw(encode_request(1, 12, 9, "t", body))  # parks for up to 30 s
        import time
        deadline = time.monotonic() + 10
        while not any("created topic idle" in line for line in broker.output):
            assert time.monotonic() < deadline
            time.sleep(0.02)  # re-checking the broker's log, not waiting for time to pass
        assert broker.stop() == 0
    assert not [line for line in broker.output if "Traceback" in line or " ERROR " in line]
