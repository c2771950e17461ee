"""Schemas for versions Kafka 4.4 serves that kio (roster's schema library) has not generated
yet, made as kio makes its own: frozen dataclasses whose fields carry kio's metadata, built on
kio's classes of the version before where the new version only appends fields. kio's reader
and writer then serve them like any other schema (protocol/codec.py looks here first), so a
handler, roster's clients and the tests speak the new version with no codec of their own.

The layouts are Kafka 4.4.0's, as its kafka-clients jar declares them (each message's SCHEMAS):

- StreamsGroupDescribe (89) v1, KIP-1331 and KIP-1357:
    request:  v0's GroupIds, IncludeAuthorizedOperations, then IncludeTopologyDescription bool
    response: each DescribedGroup as v0's, then
                TopologyDescription (a nullable struct):
                  Subtopologies [SubtopologyId string,
                                 Nodes [Name string, NodeType int8, SourceTopics [string],
                                        SinkTopic string?, Stores [string], Successors [string]]]
                  GlobalStores [Source Node, Processor Node]
                TopologyDescriptionStatus int8 (0 not requested, 1 not stored, 2 error,
                                                3 available)
                AssignorName string?

- StreamsGroupTopologyDescriptionUpdate (93) v0, KIP-1331 (new in 4.4):
    request:  GroupId string, MemberId string, TopologyEpoch int32,
              TopologyDescription (the struct above, not nullable)
    response: ThrottleTimeMs int32, ErrorCode int16, ErrorMessage string?

- StreamsGroupHeartbeat (88) v1 (Kafka 4.4; the broker answers it with its own encoder,
  protocol/streams_group_wire.py, and reads requests here):
    request:  v0's, byte for byte
    response: ThrottleTimeMs, ErrorCode, ErrorMessage?, MemberId, MemberEpoch,
              HeartbeatIntervalMs, TaskOffsetIntervalMs int32, AcceptableRecoveryLag int64
              (v0: an int32 before TaskOffsetIntervalMs), Status?, ActiveTasks?,
              StandbyTasks?, WarmupTasks?, TopologyDescriptionRequired bool,
              EndpointInformationEpoch, PartitionsByUserEndpoint?

This module must not use `from __future__ import annotations`: kio reads each field's type
from the dataclass, so the annotations have to be the types themselves.
"""
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.streams_group_describe.v0 import request as describe_v0_request
from kio.schema.streams_group_describe.v0 import response as describe_v0
from kio.schema.streams_group_heartbeat.v0 import request as heartbeat_v0_request
from kio.schema.streams_group_heartbeat.v0 import response as heartbeat_v0
from kio.schema.types import GroupId
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from roster.frozen import frozen
from roster.protocol.api_keys import ApiKey

_DESCRIBE = i16(ApiKey.STREAMS_GROUP_DESCRIBE)
_TOPOLOGY_DESCRIPTION_UPDATE = i16(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE)
# the flexible headers every one of these uses (request header v2, response header v1)
_REQUEST_HEADER = describe_v0_request.StreamsGroupDescribeRequest.__header_schema__
_RESPONSE_HEADER = describe_v0.StreamsGroupDescribeResponse.__header_schema__


def _strings(**options):
    return field(metadata={"kafka_type": "string"}, **options)


def _entity(kind, api_key: i16, version: int):
    """The class-level facts kio reads of an entity (what its generated classes declare one
    by one), as a base class."""
    header = _RESPONSE_HEADER if kind is EntityType.response else _REQUEST_HEADER

    class Entity:
        __type__: ClassVar = kind
        __version__: ClassVar[i16] = i16(version)
        __flexible__: ClassVar[bool] = True
        __api_key__: ClassVar[i16] = api_key
        __header_schema__: ClassVar = header
    return Entity


@frozen(kw_only=True)
class StreamsGroupDescribeRequestV1(_entity(EntityType.request, _DESCRIBE, 1)):
    group_ids: tuple[GroupId, ...] = _strings(default=())
    include_authorized_operations: bool = field(metadata={"kafka_type": "bool"})
    include_topology_description: bool = field(metadata={"kafka_type": "bool"}, default=False)


_Nested = _entity(EntityType.nested, _DESCRIBE, 1)


@frozen(kw_only=True)
class TopologyDescriptionNode(_Nested):
    name: str = _strings()
    node_type: i8 = field(metadata={"kafka_type": "int8"})
    source_topics: tuple[str, ...] = _strings(default=())
    sink_topic: str | None = _strings(default=None)
    stores: tuple[str, ...] = _strings(default=())
    successors: tuple[str, ...] = _strings(default=())


@frozen(kw_only=True)
class TopologyDescriptionSubtopology(_Nested):
    subtopology_id: str = _strings()
    nodes: tuple[TopologyDescriptionNode, ...] = ()


@frozen(kw_only=True)
class TopologyDescriptionGlobalStore(_Nested):
    source: TopologyDescriptionNode
    processor: TopologyDescriptionNode


@frozen(kw_only=True)
class TopologyDescription(_Nested):
    subtopologies: tuple[TopologyDescriptionSubtopology, ...] = ()
    global_stores: tuple[TopologyDescriptionGlobalStore, ...] = ()


@frozen(kw_only=True)
class DescribedGroupV1(describe_v0.DescribedGroup):
    __version__: ClassVar[i16] = i16(1)
    topology_description: TopologyDescription | None = field(default=None)
    topology_description_status: i8 = field(metadata={"kafka_type": "int8"}, default=i8(0))
    assignor_name: str | None = _strings(default=None)


@frozen(kw_only=True)
class StreamsGroupDescribeResponseV1(_entity(EntityType.response, _DESCRIBE, 1)):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    groups: tuple[DescribedGroupV1, ...]


@frozen(kw_only=True)
class StreamsGroupTopologyDescriptionUpdateRequest(
        _entity(EntityType.request, _TOPOLOGY_DESCRIPTION_UPDATE, 0)):
    group_id: GroupId = _strings()
    member_id: str = _strings()
    topology_epoch: i32 = field(metadata={"kafka_type": "int32"})
    topology_description: TopologyDescription


@frozen(kw_only=True)
class StreamsGroupTopologyDescriptionUpdateResponse(
        _entity(EntityType.response, _TOPOLOGY_DESCRIPTION_UPDATE, 0)):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = _strings(default=None)


_HEARTBEAT = i16(ApiKey.STREAMS_GROUP_HEARTBEAT)


@frozen(kw_only=True)
class StreamsGroupHeartbeatRequestV1(heartbeat_v0_request.StreamsGroupHeartbeatRequest):
    __version__: ClassVar[i16] = i16(1)


@frozen(kw_only=True)
class StreamsGroupHeartbeatResponseV1(_entity(EntityType.response, _HEARTBEAT, 1)):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = _strings(default=None)
    member_id: str = _strings()
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    heartbeat_interval: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    task_offset_interval: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    acceptable_recovery_lag: i64 = field(metadata={"kafka_type": "int64"})
    status: tuple[heartbeat_v0.Status, ...] | None
    active_tasks: tuple[heartbeat_v0.TaskIds, ...] | None
    standby_tasks: tuple[heartbeat_v0.TaskIds, ...] | None
    warmup_tasks: tuple[heartbeat_v0.TaskIds, ...] | None
    topology_description_required: bool = field(metadata={"kafka_type": "bool"},
                                                 default=False)
    endpoint_information_epoch: i32 = field(metadata={"kafka_type": "int32"})
    partitions_by_user_endpoint: tuple[heartbeat_v0.EndpointToPartitions, ...] | None


# (api key, version) -> (request schema, response schema)
SCHEMAS = {
    (ApiKey.STREAMS_GROUP_DESCRIBE, 1): (StreamsGroupDescribeRequestV1,
                                         StreamsGroupDescribeResponseV1),
    (ApiKey.STREAMS_GROUP_HEARTBEAT, 1): (StreamsGroupHeartbeatRequestV1,
                                          StreamsGroupHeartbeatResponseV1),
    (ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0): (
        StreamsGroupTopologyDescriptionUpdateRequest,
        StreamsGroupTopologyDescriptionUpdateResponse),
}
