"""The streams group records of `__consumer_offsets`, in Kafka's layouts (record types 17-23 of
group-coordinator/src/main/resources/common/message/StreamsGroup*.json, checked against the
copies inside Kafka 4.4.0's kafka-group-coordinator jar). The kio package has no coordinator
record schemas, so they are written here.

key   = int16 type + the key struct (flexibleVersions "none": int16-length strings, no tags)
value = int16 version (0) + the value struct (flexible: compact strings and arrays, an empty
        tagged-field section after each struct unless a tag is set); None is a tombstone

  17 StreamsGroupMetadata         group         -> Epoch int32, MetadataHash int64,
                                                   tag 0 ValidatedTopologyEpoch int32 (default -1),
                                                   tag 1 LastAssignmentConfigs []{Key, Value}?
                                                   (default null); 4.4's KIP-1331 tags 2 and 3
                                                   (topology description epochs, default -1) are
                                                   kept as read and written back unchanged
  18 (StreamsGroupPartitionMetadata, removed when KIP-1101 replaced it with MetadataHash; Kafka
      4.3+ has no schema for it and skips it on load, as roster does)
  19 StreamsGroupMemberMetadata   group, member -> InstanceId?, RackId?, ClientId, ClientHost,
                                                   RebalanceTimeoutMs int32, TopologyEpoch int32,
                                                   ProcessId, UserEndpoint? {Host, Port uint16},
                                                   ClientTags []{Key, Value}
  20 StreamsGroupTargetAssignmentMetadata group -> AssignmentEpoch int32,
                                                   tag 0 AssignmentTimestamp int64 (default 0)
  21 StreamsGroupTargetAssignmentMember group, member -> ActiveTasks, StandbyTasks, WarmupTasks
                                                   (each []TaskIds{SubtopologyId, Partitions[]})
  22 StreamsGroupCurrentMemberAssignment group, member -> MemberEpoch, PreviousMemberEpoch,
                                                   State int8 (1 stable, 2 unrevoked, 3 unreleased),
                                                   ActiveTasks, StandbyTasks, WarmupTasks, then
                                                   the three pending revocation, in that order;
                                                   an active TaskIds carries tag 0 AssignmentEpochs
                                                   []int32 (one a partition, KIP-1251)
  23 StreamsGroupTopology         group         -> Epoch int32, Subtopologies[SubtopologyId,
                                                   SourceTopics[], SourceTopicRegex[],
                                                   StateChangelogTopics []TopicInfo,
                                                   RepartitionSinkTopics[],
                                                   RepartitionSourceTopics []TopicInfo,
                                                   CopartitionGroups[SourceTopics []int16,
                                                   SourceTopicRegex []int16,
                                                   RepartitionSourceTopics []int16]]
                                                   TopicInfo = {Name, Partitions int32,
                                                   ReplicationFactor int16,
                                                   TopicConfigs[key, value]}

A nullable struct that is not tagged (UserEndpoint) is an int8 on the wire: -1 null, 1 present
followed by the struct.
"""
from __future__ import annotations

import struct
from dataclasses import field

from roster.coordinator.streams.model import (
    Endpoint,
    MemberState,
    StreamsMember,
    TaskId,
    Tasks,
    TaskSets,
    freeze,
)
from roster.coordinator.streams.topology import (
    CopartitionGroup,
    Subtopology,
    TopicInfo,
    Topology,
)
from roster.frozen import frozen
from roster.protocol.classic_encoding import ClassicReader, ClassicWriter
from roster.protocol.flexible_values import FlexibleReader, FlexibleWriter
from roster.protocol.group_records import UnknownRecord

GROUP_METADATA = 17
PARTITION_METADATA = 18      # removed from Kafka: read past, never written
MEMBER_METADATA = 19
TARGET_METADATA = 20
TARGET_MEMBER = 21
CURRENT_ASSIGNMENT = 22
TOPOLOGY = 23
TYPES = frozenset({GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER,
                   CURRENT_ASSIGNMENT, TOPOLOGY})
_MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
_MEMBER_STATES = frozenset(int(s) for s in MemberState)


class StreamsRecordError(ValueError):
    pass


@frozen
class StreamsKey:
    type: int
    group: str
    member: str | None = None      # types 19, 21, 22


@frozen
class GroupMetadataValue:
    epoch: int
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: tuple[tuple[str, str], ...] | None = None
    # tagged fields this codec does not interpret, as (tag, payload), kept to be written back
    other_tags: tuple[tuple[int, bytes], ...] = ()


@frozen
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: Endpoint | None
    client_tags: tuple[tuple[str, str], ...]


@frozen
class TargetMetadataValue:
    assignment_epoch: int
    assignment_timestamp_ms: int = 0


@frozen
class TargetMemberValue:
    active: Tasks
    standby: Tasks
    warmup: Tasks


@frozen
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    active: Tasks
    standby: Tasks
    warmup: Tasks
    active_pending: Tasks
    standby_pending: Tasks
    warmup_pending: Tasks
    # (subtopology, partition) -> assignment epoch, for the active tasks (assigned or pending
    # revocation); a task missing here (an older record) takes the member epoch on replay
    active_epochs: dict[TaskId, int] = field(default_factory=dict)


@frozen
class StreamsRecord:
    key: StreamsKey
    value: object | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode_value(self.value)


# -- encoding --------------------------------------------------------------------------------

class _Writer(FlexibleWriter):
    __slots__ = ()

    def key_values(self, pairs) -> _Writer:
        self.count(len(pairs))
        for k, v in pairs:
            self.string(k).string(v).no_tags()
        return self

    def tasks(self, tasks: Tasks, epochs: dict[TaskId, int] | None = None) -> _Writer:
        self.count(len(tasks))
        for subtopology in sorted(tasks):
            ps = sorted(tasks[subtopology])
            self.string(subtopology).count(len(ps))
            for p in ps:
                self.raw(">i", p)
            if epochs is None or any((subtopology, p) not in epochs for p in ps):
                self.no_tags()
                continue
            payload = _Writer(None).count(len(ps))
            for p in ps:
                payload.raw(">i", epochs[subtopology, p])
            self.tags([(0, bytes(payload.out))])
        return self

    def topic_info(self, t: TopicInfo) -> _Writer:
        self.string(t.name).raw(">i", t.partitions).raw(">h", t.replication_factor)
        return self.key_values(t.configs).no_tags()

    def indexes(self, values) -> _Writer:
        self.count(len(values))
        for v in values:
            self.raw(">h", v)
        return self


def encode_key(key: StreamsKey) -> bytes:
    w = ClassicWriter().int16(key.type).string(key.group)
    if key.type in _MEMBER_KEYED:
        w.string(key.member)
    return bytes(w.out)


def encode_value(value) -> bytes:
    w = _Writer()
    match value:
        case GroupMetadataValue():
            w.raw(">i", value.epoch).raw(">q", value.metadata_hash)
            tags = list(value.other_tags)
            if value.validated_topology_epoch != -1:
                tags.append((0, struct.pack(">i", value.validated_topology_epoch)))
            if value.last_assignment_configs is not None:
                tags.append((1, bytes(_Writer(None).key_values(value.last_assignment_configs)
                                      .out)))
            return bytes(w.tags(tags).out)
        case MemberMetadataValue():
            w.string(value.instance_id).string(value.rack_id).string(value.client_id)
            w.string(value.client_host).raw(">i", value.rebalance_timeout_ms)
            w.raw(">i", value.topology_epoch).string(value.process_id)
            if value.user_endpoint is None:
                w.raw(">b", -1)
            else:
                w.raw(">b", 1).string(value.user_endpoint.host)
                w.raw(">H", value.user_endpoint.port).no_tags()
            w.key_values(value.client_tags)
        case TargetMetadataValue():
            w.raw(">i", value.assignment_epoch)
            if value.assignment_timestamp_ms:
                return bytes(w.tags([(0, struct.pack(">q", value.assignment_timestamp_ms))]).out)
        case TargetMemberValue():
            w.tasks(value.active).tasks(value.standby).tasks(value.warmup)
        case CurrentAssignmentValue():
            w.raw(">i", value.member_epoch).raw(">i", value.previous_member_epoch)
            w.raw(">b", value.state)
            w.tasks(value.active, value.active_epochs).tasks(value.standby).tasks(value.warmup)
            w.tasks(value.active_pending, value.active_epochs).tasks(value.standby_pending)
            w.tasks(value.warmup_pending)
        case Topology():
            w.raw(">i", value.epoch).count(len(value.subtopologies))
            for s in value.subtopologies:
                w.string(s.subtopology_id).count(len(s.source_topics))
                for name in s.source_topics:
                    w.string(name)
                w.count(len(s.source_topic_regex))
                for regex in s.source_topic_regex:
                    w.string(regex)
                w.count(len(s.state_changelog_topics))
                for t in s.state_changelog_topics:
                    w.topic_info(t)
                w.count(len(s.repartition_sink_topics))
                for name in s.repartition_sink_topics:
                    w.string(name)
                w.count(len(s.repartition_source_topics))
                for t in s.repartition_source_topics:
                    w.topic_info(t)
                w.count(len(s.copartition_groups))
                for g in s.copartition_groups:
                    w.indexes(g.source_topics).indexes(g.source_topic_regex)
                    w.indexes(g.repartition_source_topics).no_tags()
                w.no_tags()
        case _:
            raise TypeError(f"cannot encode {value!r}")
    return bytes(w.no_tags().out)


# -- decoding --------------------------------------------------------------------------------

class _Reader(FlexibleReader):
    __slots__ = ()

    def __init__(self, data: bytes, at: int = 0) -> None:
        super().__init__(data, StreamsRecordError, at)

    def key_values(self) -> tuple[tuple[str, str], ...]:
        out = []
        for _ in range(self.array()):
            out.append((self.string(), self.string()))
            self.tags()
        return tuple(out)

    def tasks(self, epochs: dict[TaskId, int] | None = None) -> Tasks:
        pairs = []
        for _ in range(self.array()):
            subtopology = self.string()
            ps = [self.raw(">i") for _ in range(self.array())]
            tags = self.tags()
            if epochs is not None and 0 in tags:
                inner = _Reader(tags[0])
                n = inner.count()
                values = [inner.raw(">i") for _ in range(n or 0)]
                if len(values) == len(ps):
                    epochs.update(((subtopology, p), e) for p, e in zip(ps, values))
            pairs.append((subtopology, ps))
        return freeze(pairs)

    def topic_info(self) -> TopicInfo:
        info = TopicInfo(self.string(), self.raw(">i"), self.raw(">h"), self.key_values())
        self.tags()
        return info

    def indexes(self) -> tuple[int, ...]:
        return tuple(self.raw(">h") for _ in range(self.array()))


def decode_key(data: bytes) -> StreamsKey:
    r = ClassicReader(data, StreamsRecordError)
    kind = r.int16()
    if kind not in TYPES and kind != PARTITION_METADATA:
        raise StreamsRecordError(f"not a streams group record type: {kind}")
    group = r.string()
    if group is None:
        raise StreamsRecordError("null group id")
    member = r.string() if kind in _MEMBER_KEYED else None
    return StreamsKey(kind, group, member)


def decode_value(kind: int, data: bytes):
    r = _Reader(data)
    version = r.raw(">h")
    if version != 0:
        raise StreamsRecordError(f"unknown value version {version} for record type {kind}")
    if kind == GROUP_METADATA:
        epoch, metadata_hash = r.raw(">i"), r.raw(">q")
        tags = r.tags()
        validated = struct.unpack(">i", tags.pop(0))[0] if 0 in tags else -1
        configs = None
        if 1 in tags:
            inner = _Reader(tags.pop(1))
            if inner.data[:1] != b"\x00":          # a null array is a 0 count
                configs = inner.key_values()
        value = GroupMetadataValue(epoch, metadata_hash, validated, configs,
                                   tuple(sorted(tags.items())))
        return r.ended(value)
    if kind == MEMBER_METADATA:
        instance_id, rack_id = r.nullable_string(), r.nullable_string()
        client_id, client_host = r.string(), r.string()
        timeout, topology_epoch, process_id = r.raw(">i"), r.raw(">i"), r.string()
        endpoint = None
        if r.raw(">b") >= 0:
            endpoint = Endpoint(r.string(), r.raw(">H"))
            r.tags()
        value = MemberMetadataValue(instance_id, rack_id, client_id, client_host, timeout,
                                    topology_epoch, process_id, endpoint, r.key_values())
    elif kind == TARGET_METADATA:
        epoch = r.raw(">i")
        tags = r.tags()
        stamp = struct.unpack(">q", tags[0])[0] if 0 in tags else 0
        return r.ended(TargetMetadataValue(epoch, stamp))
    elif kind == TARGET_MEMBER:
        value = TargetMemberValue(r.tasks(), r.tasks(), r.tasks())
    elif kind == CURRENT_ASSIGNMENT:
        member_epoch, previous, state = r.raw(">i"), r.raw(">i"), r.raw(">b")
        if state not in _MEMBER_STATES:
            raise StreamsRecordError(f"unknown member state {state}")
        epochs: dict[TaskId, int] = {}
        active, standby, warmup = r.tasks(epochs), r.tasks(), r.tasks()
        pending = r.tasks(epochs), r.tasks(), r.tasks()
        value = CurrentAssignmentValue(member_epoch, previous, state, active, standby, warmup,
                                       *pending, epochs)
    elif kind == TOPOLOGY:
        epoch = r.raw(">i")
        subtopologies = []
        for _ in range(r.array()):
            sid = r.string()
            sources = tuple(r.string() for _ in range(r.array()))
            regexes = tuple(r.string() for _ in range(r.array()))
            changelogs = tuple(r.topic_info() for _ in range(r.array()))
            sinks = tuple(r.string() for _ in range(r.array()))
            repartitions = tuple(r.topic_info() for _ in range(r.array()))
            groups = []
            for _ in range(r.array()):
                groups.append(CopartitionGroup(r.indexes(), r.indexes(), r.indexes()))
                r.tags()
            r.tags()
            subtopologies.append(Subtopology(sid, sources, regexes, changelogs, sinks,
                                             repartitions, tuple(groups)))
        value = Topology(epoch, tuple(subtopologies))
    else:
        raise StreamsRecordError(f"no value layout for record type {kind}")
    r.tags()
    return r.ended(value)


def decode(key: bytes, value: bytes | None) -> StreamsRecord | None:
    """A record read back from `__consumer_offsets`; None for type 18, which Kafka removed and
    skips (a StreamsRecordError for bytes that are not a record of these layouts)."""
    k = decode_key(key)
    if k.type == PARTITION_METADATA:
        return None
    return StreamsRecord(k, None if value is None else decode_value(k.type, value))


# -- factories (what the coordinator writes) -------------------------------------------------

def epoch_record(group: str, epoch: int, metadata_hash: int = 0,
                 validated_topology_epoch: int = -1,
                 configs: tuple[tuple[str, str], ...] | None = None) -> StreamsRecord:
    return StreamsRecord(StreamsKey(GROUP_METADATA, group),
                         GroupMetadataValue(epoch, metadata_hash, validated_topology_epoch,
                                            configs))


def member_record(group: str, m: StreamsMember) -> StreamsRecord:
    return StreamsRecord(StreamsKey(MEMBER_METADATA, group, m.member_id), MemberMetadataValue(
        m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
        m.topology_epoch, m.process_id, m.user_endpoint, m.client_tags))


def target_epoch_record(group: str, epoch: int, timestamp_ms: int = 0) -> StreamsRecord:
    """`timestamp_ms`: when the target was computed (0: not recorded)."""
    return StreamsRecord(StreamsKey(TARGET_METADATA, group),
                         TargetMetadataValue(epoch, timestamp_ms))


def target_record(group: str, member_id: str, tasks: TaskSets) -> StreamsRecord:
    return StreamsRecord(StreamsKey(TARGET_MEMBER, group, member_id),
                         TargetMemberValue(tasks.active, tasks.standby, tasks.warmup))


def current_record(group: str, m: StreamsMember) -> StreamsRecord:
    a, p = m.assigned, m.pending_revocation
    return StreamsRecord(StreamsKey(CURRENT_ASSIGNMENT, group, m.member_id),
                         CurrentAssignmentValue(m.member_epoch, m.previous_member_epoch,
                                                int(m.state), a.active, a.standby, a.warmup,
                                                p.active, p.standby, p.warmup,
                                                dict(m.active_epochs)))


def topology_record(group: str, topology: Topology) -> StreamsRecord:
    return StreamsRecord(StreamsKey(TOPOLOGY, group), topology)


def member_tombstones(group: str, member_id: str) -> list[StreamsRecord]:
    """A member leaving the group: its current assignment, target and metadata, in Kafka's
    order."""
    return [StreamsRecord(StreamsKey(kind, group, member_id), None)
            for kind in (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA)]


def group_tombstones(group: str) -> list[StreamsRecord]:
    return [StreamsRecord(StreamsKey(kind, group), None)
            for kind in (TARGET_METADATA, GROUP_METADATA, TOPOLOGY)]


def as_streams_record(record) -> StreamsRecord | None:
    """A streams group record as an operation built it, or as it arrives from the log undecoded
    by the classic layouts (an UnknownRecord key with its bytes); None: not one of these (type
    18, which Kafka 4.3+ no longer knows, is left to the loader's unknown-record path, as Kafka
    leaves it). A record of these types whose bytes do not parse raises StreamsRecordError."""
    if isinstance(record, StreamsRecord):
        return record
    key = getattr(record, "key", None)
    if isinstance(key, UnknownRecord) and key.key_version in TYPES:
        return decode(key.raw_key, key.raw_value)
    return None
