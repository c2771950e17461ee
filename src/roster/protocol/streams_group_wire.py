"""StreamsGroupHeartbeat (88) responses at v0 and v1, encoded by hand (the heartbeat is a hot
path, and kio has v0 only: protocol/schema_extensions.py declares v1's layout, with which
requests are read and tests read answers). Both versions are flexible (response header v1:
correlation id, tagged fields). The v1 request is byte for byte v0's.

Response body, in order (compact strings and arrays; "?" nullable: a compact length of 0):
  ThrottleTimeMs int32, ErrorCode int16, ErrorMessage string?, MemberId string,
  MemberEpoch int32, HeartbeatIntervalMs int32,
  AcceptableRecoveryLagLegacy int32                       (v0 only)
  TaskOffsetIntervalMs int32,
  AcceptableRecoveryLag int64                             (v1+)
  Status [StatusCode int8, StatusDetail string]?,
  ActiveTasks?, StandbyTasks?, WarmupTasks? [SubtopologyId string, Partitions [int32]],
  TopologyDescriptionRequired bool                        (v1+)
  EndpointInformationEpoch int32,
  PartitionsByUserEndpoint [UserEndpoint {Host string, Port uint16},
                            ActivePartitions [Topic string, Partitions [int32]],
                            StandbyPartitions [...]]?,
  tagged fields. Every struct ends with its (empty) tagged fields.
"""
from __future__ import annotations

import struct

from roster.protocol.framing import SIZE
from roster.protocol.varint import encode_unsigned

HEARTBEAT = 88
VERSIONS = (0, 1)


def _string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\x00"
        return
    data = value.encode()
    out += encode_unsigned(len(data) + 1)
    out += data


def _count(out: bytearray, n: int | None) -> None:
    out += encode_unsigned(0 if n is None else n + 1)


def _ints(out: bytearray, values) -> None:
    values = tuple(values)
    _count(out, len(values))
    out += struct.pack(f">{len(values)}i", *values)


def _tasks(out: bytearray, tasks) -> None:
    if tasks is None:
        _count(out, None)
        return
    _count(out, len(tasks))
    for subtopology in sorted(tasks):
        _string(out, subtopology)
        _ints(out, sorted(tasks[subtopology]))
        out += b"\x00"


def _topic_partitions(out: bytearray, pairs) -> None:
    _count(out, len(pairs))
    for topic, partitions in pairs:
        _string(out, topic)
        _ints(out, partitions)
        out += b"\x00"


def encode_heartbeat_response(version: int, correlation_id: int, reply) -> bytes:
    """The whole frame (size first) answering `reply` (a StreamsHeartbeatReply)."""
    out = bytearray(struct.pack(">ib", correlation_id, 0))      # header v1: no tags
    out += struct.pack(">ih", 0, int(reply.error))                # throttle, error code
    _string(out, reply.error_message)
    _string(out, reply.member_id)
    out += struct.pack(">ii", reply.member_epoch, reply.heartbeat_interval_ms)
    if version == 0:
        # Kafka 4.4 leaves the legacy int32 at 0 (seen beside it in the differential run)
        out += struct.pack(">ii", 0, reply.task_offset_interval_ms)
    else:
        out += struct.pack(">iq", reply.task_offset_interval_ms, reply.acceptable_recovery_lag)
    if reply.status is None:
        _count(out, None)
    else:
        _count(out, len(reply.status))
        for code, detail in reply.status:
            out += struct.pack(">b", code)
            _string(out, detail)
            out += b"\x00"
    _tasks(out, reply.active)
    _tasks(out, reply.standby)
    _tasks(out, reply.warmup)
    if version >= 1:
        out += b"\x00"          # TopologyDescriptionRequired: no description plugin
    out += struct.pack(">i", reply.endpoint_information_epoch)
    endpoints = reply.partitions_by_user_endpoint
    if endpoints is None:
        _count(out, None)
    else:
        _count(out, len(endpoints))
        for e in endpoints:
            _string(out, e.endpoint.host)
            out += struct.pack(">H", e.endpoint.port) + b"\x00"
            _topic_partitions(out, e.active)
            _topic_partitions(out, e.standby)
            out += b"\x00"
    out += b"\x00"
    return SIZE.pack(len(out)) + bytes(out)
