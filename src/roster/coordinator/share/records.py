"""The share group records of `__consumer_offsets`, in Kafka 4.4.0's layouts (record types
10-15, common/message/ShareGroup*.json inside its kafka-group-coordinator jar). kio has no
coordinator record schemas, so they are written here.

key   = int16 type + the key struct (flexibleVersions "none": int16-length strings)
value = int16 version (0) + the value struct (flexible: compact strings and arrays, an empty
        tagged-field section after each struct unless a tag is set); None is a tombstone

  10 ShareGroupMemberMetadata        group, member -> RackId?, ClientId, ClientHost,
                                                     SubscribedTopicNames []string
  11 ShareGroupMetadata              group         -> Epoch int32, MetadataHash int64
  12 ShareGroupTargetAssignmentMetadata group      -> AssignmentEpoch int32,
                                                     tag 0 AssignmentTimestamp int64 (default 0)
  13 ShareGroupTargetAssignmentMember group, member -> TopicPartitions []{TopicId uuid,
                                                     Partitions []int32}
  14 ShareGroupCurrentMemberAssignment group, member -> MemberEpoch int32,
                                                     PreviousMemberEpoch int32, State int8,
                                                     AssignedPartitions []{TopicId, Partitions}
  15 ShareGroupStatePartitionMetadata group        -> InitializingTopics, InitializedTopics
                                                     (each []{TopicId, TopicName, Partitions}),
                                                     DeletingTopics []{TopicId, TopicName}
"""
from __future__ import annotations

import struct

from roster.coordinator.share.model import Assignment, ShareMember, freeze
from roster.frozen import frozen
from roster.protocol.classic_encoding import ClassicReader, ClassicWriter
from roster.protocol.flexible_values import FlexibleReader, FlexibleWriter
from roster.protocol.group_records import UnknownRecord

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_METADATA = 12
TARGET_MEMBER = 13
CURRENT_ASSIGNMENT = 14
STATE_PARTITIONS = 15
TYPES = frozenset({MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER,
                   CURRENT_ASSIGNMENT, STATE_PARTITIONS})
_MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})


class ShareRecordError(ValueError):
    pass


@frozen
class ShareKey:
    type: int
    group: str
    member: str | None = None      # types 10, 13, 14


@frozen
class MemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed: tuple[str, ...]


@frozen
class GroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@frozen
class TargetMetadataValue:
    assignment_epoch: int
    assignment_timestamp_ms: int = 0


@frozen
class TargetMemberValue:
    partitions: Assignment


@frozen
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment


@frozen
class StatePartitionsValue:
    # each: ((topic id, topic name, (partitions...)), ...)
    initializing: tuple = ()
    initialized: tuple = ()
    deleting: tuple = ()           # ((topic id, topic name), ...)


@frozen
class ShareRecord:
    key: ShareKey
    value: object | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode_value(self.value)


# -- encoding --------------------------------------------------------------------------------

class _Writer(FlexibleWriter):
    __slots__ = ()

    def ints(self, values) -> _Writer:
        values = sorted(values)
        self.count(len(values))
        for v in values:
            self.raw(">i", v)
        return self

    def partitions(self, assignment: Assignment) -> _Writer:
        self.count(len(assignment))
        for topic_id in sorted(assignment):
            self.out += topic_id
            self.ints(assignment[topic_id]).no_tags()
        return self

    def topics(self, entries) -> _Writer:
        self.count(len(entries))
        for topic_id, name, partitions in entries:
            self.out += topic_id
            self.string(name).ints(partitions).no_tags()
        return self


def encode_key(key: ShareKey) -> bytes:
    w = ClassicWriter().int16(key.type).string(key.group)
    if key.type in _MEMBER_KEYED:
        w.string(key.member)
    return bytes(w.out)


def encode_value(value) -> bytes:
    w = _Writer()
    match value:
        case MemberMetadataValue():
            w.string(value.rack_id).string(value.client_id).string(value.client_host)
            w.count(len(value.subscribed))
            for name in value.subscribed:
                w.string(name)
        case GroupMetadataValue():
            w.raw(">i", value.epoch).raw(">q", value.metadata_hash)
        case TargetMetadataValue():
            w.raw(">i", value.assignment_epoch)
            if value.assignment_timestamp_ms:
                return bytes(w.tags([(0, struct.pack(">q", value.assignment_timestamp_ms))]).out)
        case TargetMemberValue():
            w.partitions(value.partitions)
        case CurrentAssignmentValue():
            w.raw(">i", value.member_epoch).raw(">i", value.previous_member_epoch)
            w.raw(">b", value.state).partitions(value.assigned)
        case StatePartitionsValue():
            w.topics(value.initializing).topics(value.initialized)
            w.count(len(value.deleting))
            for topic_id, name in value.deleting:
                w.out += topic_id
                w.string(name).no_tags()
        case _:
            raise TypeError(f"cannot encode {value!r}")
    return bytes(w.no_tags().out)


# -- decoding --------------------------------------------------------------------------------

class _Reader(FlexibleReader):
    __slots__ = ()

    def __init__(self, data: bytes) -> None:
        super().__init__(data, ShareRecordError)

    def ints(self) -> tuple[int, ...]:
        return tuple(self.raw(">i") for _ in range(self.array()))

    def partitions(self) -> Assignment:
        out = []
        for _ in range(self.array()):
            topic_id = self.uuid()
            out.append((topic_id, self.ints()))
            self.tags()
        return freeze(out)

    def topics(self) -> tuple:
        out = []
        for _ in range(self.array()):
            topic_id, name = self.uuid(), self.string()
            out.append((topic_id, name, self.ints()))
            self.tags()
        return tuple(out)


def decode_key(data: bytes) -> ShareKey:
    r = ClassicReader(data, ShareRecordError)
    kind = r.int16()
    if kind not in TYPES:
        raise ShareRecordError(f"not a share group record type: {kind}")
    group = r.string()
    if group is None:
        raise ShareRecordError("null group id")
    member = r.string() if kind in _MEMBER_KEYED else None
    return ShareKey(kind, group, member)


def decode_value(kind: int, data: bytes):
    r = _Reader(data)
    version = r.raw(">h")
    if version != 0:
        raise ShareRecordError(f"unknown value version {version} for record type {kind}")
    if kind == MEMBER_METADATA:
        rack, client_id, host = r.nullable_string(), r.string(), r.string()
        value = MemberMetadataValue(rack, client_id, host,
                                    tuple(r.string() for _ in range(r.array())))
    elif kind == GROUP_METADATA:
        value = GroupMetadataValue(r.raw(">i"), r.raw(">q"))
    elif kind == TARGET_METADATA:
        epoch = r.raw(">i")
        tags = r.tags()
        stamp = struct.unpack(">q", tags[0])[0] if 0 in tags else 0
        return r.ended(TargetMetadataValue(epoch, stamp))
    elif kind == TARGET_MEMBER:
        value = TargetMemberValue(r.partitions())
    elif kind == CURRENT_ASSIGNMENT:
        value = CurrentAssignmentValue(r.raw(">i"), r.raw(">i"), r.raw(">b"), r.partitions())
    else:
        initializing, initialized = r.topics(), r.topics()
        deleting = []
        for _ in range(r.array()):
            deleting.append((r.uuid(), r.string()))
            r.tags()
        value = StatePartitionsValue(initializing, initialized, tuple(deleting))
    r.tags()
    return r.ended(value)


def decode(key: bytes, value: bytes | None) -> ShareRecord:
    k = decode_key(key)
    return ShareRecord(k, None if value is None else decode_value(k.type, value))


def as_share_record(record) -> ShareRecord | None:
    """A share group record as an operation built it, or as it arrives from the log undecoded by
    the classic layouts (an UnknownRecord key with its bytes); None: not one of these."""
    if isinstance(record, ShareRecord):
        return record
    key = getattr(record, "key", None)
    if isinstance(key, UnknownRecord) and key.key_version in TYPES:
        return decode(key.raw_key, key.raw_value)
    return None


# -- factories (what the coordinator writes) -------------------------------------------------

def member_record(group: str, m: ShareMember) -> ShareRecord:
    # the names sorted, as Kafka writes them (the member holds them in its HashSet's order)
    return ShareRecord(ShareKey(MEMBER_METADATA, group, m.member_id), MemberMetadataValue(
        m.rack_id, m.client_id, m.client_host, tuple(sorted(m.subscribed))))


def epoch_record(group: str, epoch: int, metadata_hash: int) -> ShareRecord:
    return ShareRecord(ShareKey(GROUP_METADATA, group), GroupMetadataValue(epoch, metadata_hash))


def target_epoch_record(group: str, epoch: int, timestamp_ms: int = 0) -> ShareRecord:
    return ShareRecord(ShareKey(TARGET_METADATA, group),
                       TargetMetadataValue(epoch, timestamp_ms))


def target_record(group: str, member_id: str, partitions: Assignment) -> ShareRecord:
    return ShareRecord(ShareKey(TARGET_MEMBER, group, member_id), TargetMemberValue(partitions))


def current_record(group: str, m: ShareMember) -> ShareRecord:
    return ShareRecord(ShareKey(CURRENT_ASSIGNMENT, group, m.member_id), CurrentAssignmentValue(
        m.member_epoch, m.previous_member_epoch, m.state, m.assigned))


def state_partitions_record(group: str, initialized: dict, initializing: tuple = (),
                            deleting: tuple = ()) -> ShareRecord:
    """`initialized`: topic id -> (name, partitions)."""
    entries = tuple((tid, name, tuple(sorted(ps)))
                    for tid, (name, ps) in sorted(initialized.items()))
    return ShareRecord(ShareKey(STATE_PARTITIONS, group),
                       StatePartitionsValue(initializing, entries, deleting))


def member_tombstones(group: str, member_id: str) -> list[ShareRecord]:
    """A member leaving: its current assignment, target and metadata, in Kafka's order."""
    return [ShareRecord(ShareKey(kind, group, member_id), None)
            for kind in (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA)]


def group_tombstones(group: str, member_ids) -> list[ShareRecord]:
    """DeleteGroups, in Kafka's order (ShareGroup.createGroupTombstoneRecords): every member's
    current assignment, then every target, the target metadata, every member's metadata, the
    state partition metadata, the group metadata."""
    out = [ShareRecord(ShareKey(CURRENT_ASSIGNMENT, group, m), None) for m in member_ids]
    out += [ShareRecord(ShareKey(TARGET_MEMBER, group, m), None) for m in member_ids]
    out.append(ShareRecord(ShareKey(TARGET_METADATA, group), None))
    out += [ShareRecord(ShareKey(MEMBER_METADATA, group, m), None) for m in member_ids]
    out.append(ShareRecord(ShareKey(STATE_PARTITIONS, group), None))
    out.append(ShareRecord(ShareKey(GROUP_METADATA, group), None))
    return out
