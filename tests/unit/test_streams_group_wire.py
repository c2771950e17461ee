"""StreamsGroupHeartbeat answers in roster's own codec (protocol/streams_group_wire.py): v0 is
byte for byte what kio writes for its v0 schema, and v1 carries the int64 acceptable lag after
the task offset interval and TopologyDescriptionRequired before the endpoint epoch, as Kafka
4.4's StreamsGroupHeartbeatResponse.json lays them out (v0's legacy int32 lag is 0, as Kafka 4.4
answers it)."""
from __future__ import annotations

import datetime
import struct

from roster.coordinator.streams.heartbeat import EndpointAnswer, StreamsHeartbeatReply
from roster.coordinator.streams.model import Endpoint
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import encode_response, response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.streams_group_wire import encode_heartbeat_response

REPLY = StreamsHeartbeatReply(
    error=ErrorCode.none, error_message=None, member_id="m-1", member_epoch=7,
    heartbeat_interval_ms=5000, acceptable_recovery_lag=10_000, task_offset_interval_ms=60_000,
    status=((3, "Internal topics are missing: a"),), active={"0": frozenset({2, 0})},
    standby={}, warmup=None, endpoint_information_epoch=4,
    partitions_by_user_endpoint=(EndpointAnswer(Endpoint("h", 8080), (("in", (0, 2)),), ()),))


def kio_v0(reply: StreamsHeartbeatReply) -> bytes:
    schema = response_schema(ApiKey.STREAMS_GROUP_HEARTBEAT, 0)
    task = element(schema, "active_tasks")
    entry = element(schema, "partitions_by_user_endpoint")
    topic = element(entry, "active_partitions")

    def tasks(t):
        return None if t is None else tuple(
            make(task, subtopology_id=s, partitions=tuple(sorted(ps))) for s, ps in t.items())
    body = make(
        schema, error_code=reply.error, error_message=reply.error_message,
        member_id=reply.member_id, member_epoch=reply.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=reply.heartbeat_interval_ms),
        acceptable_recovery_lag=0,     # Kafka 4.4 leaves the legacy field at 0
        task_offset_interval=datetime.timedelta(milliseconds=reply.task_offset_interval_ms),
        status=tuple(make(element(schema, "status"), status_code=c, status_detail=d)
                     for c, d in reply.status),
        active_tasks=tasks(reply.active), standby_tasks=tasks(reply.standby),
        warmup_tasks=tasks(reply.warmup),
        endpoint_information_epoch=reply.endpoint_information_epoch,
        partitions_by_user_endpoint=tuple(make(
            entry, user_endpoint=make(element(entry, "user_endpoint"), host=e.endpoint.host,
                                      port=e.endpoint.port),
            active_partitions=tuple(make(topic, topic=t, partitions=ps) for t, ps in e.active),
            standby_partitions=()) for e in reply.partitions_by_user_endpoint))
    return encode_response(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 42, body)


def test_v0_is_what_kio_writes():
    assert encode_heartbeat_response(0, 42, REPLY) == kio_v0(REPLY)


def test_v1_moves_the_lag_to_an_int64_and_adds_topology_description_required():
    v0 = encode_heartbeat_response(0, 42, REPLY)
    v1 = encode_heartbeat_response(1, 42, REPLY)
    assert len(v1) == len(v0) + 4 + 1             # int32 -> int64, one bool
    # size, correlation id, header tags, throttle, error code, null message: 16 bytes
    assert v0[4:8] == v1[4:8] == struct.pack(">i", 42)
    assert v0[16:20] == v1[16:20] == b"\x04m-1"
    assert struct.unpack_from(">iiii", v0, 20) == (7, 5000, 0, 60_000)
    assert struct.unpack_from(">iiiq", v1, 20) == (7, 5000, 60_000, 10_000)
    # what follows the lag is the same, but for the bool before the endpoint epoch
    tail = v0[36:]
    bool_at = v1.index(struct.pack(">i", 4) + b"\x02\x02h", 40) - 1
    assert v1[bool_at] == 0
    assert v1[40:bool_at] + v1[bool_at + 1:] == tail


def test_v1_reads_back_through_its_declared_schema():
    """The hand encoder and protocol/schema_extensions.py's v1 layout (from Kafka 4.4's
    kafka-clients) agree: what the one writes, the other reads, field for field."""
    from roster.protocol.codec import decode_response
    correlation_id, answer = decode_response(ApiKey.STREAMS_GROUP_HEARTBEAT, 1,
                                             encode_heartbeat_response(1, 42, REPLY)[4:])
    assert correlation_id == 42
    assert (answer.member_id, answer.member_epoch, answer.acceptable_recovery_lag) == \
        ("m-1", 7, 10_000)
    assert answer.task_offset_interval == datetime.timedelta(milliseconds=60_000)
    assert [(s.status_code, s.status_detail) for s in answer.status] == list(REPLY.status)
    assert [(t.subtopology_id, t.partitions) for t in answer.active_tasks] == [("0", (0, 2))]
    assert answer.standby_tasks == () and answer.warmup_tasks is None
    assert answer.topology_description_required is False
    assert answer.endpoint_information_epoch == 4
    (endpoint,) = answer.partitions_by_user_endpoint
    assert (endpoint.user_endpoint.host, endpoint.user_endpoint.port) == ("h", 8080)
