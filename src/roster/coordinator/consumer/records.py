"""The consumer group records of `__consumer_offsets`, in Kafka's layouts (record types 3-8 of
group-coordinator/src/main/resources/common/message/ConsumerGroup*.json).

key   = int16 type + the key struct (non-flexible: int16-length strings)
value = int16 version (0) + the value struct (flexible: compact strings and arrays, uuids as
        16 bytes, an empty tagged-field section after each struct); None is a tombstone

  3 ConsumerGroupMetadata            group           -> Epoch
  4 ConsumerGroupPartitionMetadata   group           -> Topics[TopicId, TopicName, NumPartitions,
                                                               PartitionMetadata[] (left empty)]
  5 ConsumerGroupMemberMetadata      group, member   -> InstanceId?, RackId?, ClientId, ClientHost,
                                                        SubscribedTopicNames[], SubscribedTopicRegex?,
                                                        RebalanceTimeoutMs, ServerAssignor?,
                                                        tag 0: ClassicMemberMetadata? (a member
                                                        speaking the classic protocol:
                                                        SessionTimeoutMs, SupportedProtocols[
                                                        Name, Metadata])
  6 ConsumerGroupTargetAssignmentMetadata  group     -> AssignmentEpoch
  7 ConsumerGroupTargetAssignmentMember    group, member -> TopicPartitions[TopicId, Partitions[]]
  8 ConsumerGroupCurrentMemberAssignment   group, member -> MemberEpoch, PreviousMemberEpoch,
                                                        State, AssignedPartitions[],
                                                        PartitionsPendingRevocation[] (each
                                                        topic's tag 0: AssignmentEpochs[], one
                                                        int32 a partition, Kafka 4.3+)
  16 ConsumerGroupRegularExpression  group, regex   -> Topics[], Version, Timestamp
                                     (what a subscribed regex resolved to; roster's Version is
                                     0: it resolves again against the catalog at each heartbeat)
"""
from __future__ import annotations

import struct
from dataclasses import field

from roster.coordinator.consumer.model import (
    Assignment,
    ClassicMetadata,
    ConsumerMember,
    MemberState,
    PartitionEpochs,
)
from roster.frozen import frozen
from roster.protocol.classic_encoding import ClassicReader, ClassicWriter
from roster.protocol.group_records import UnknownRecord
from roster.protocol.varint import encode_unsigned, read_unsigned

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16
TYPES = frozenset({GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA,
                   TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION})


class ConsumerRecordError(ValueError):
    pass


@frozen
class ConsumerKey:
    type: int
    group: str
    member: str | None = None      # types 5, 7, 8
    regex: str | None = None       # type 16


@frozen
class GroupEpochValue:
    epoch: int


@frozen
class PartitionMetadataValue:
    topics: tuple[tuple[bytes, str, int], ...]   # (id, name, partitions)


@frozen
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMetadata | None = None     # tagged field 0


@frozen
class TargetEpochValue:
    assignment_epoch: int


@frozen
class TargetMemberValue:
    partitions: Assignment


@frozen
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment
    pending_revocation: Assignment
    # (topic id, partition) -> assignment epoch; a partition missing here (a record from before
    # KIP-1251) takes the member epoch when replayed
    epochs: PartitionEpochs = field(default_factory=dict)


@frozen
class RegexValue:
    topics: tuple[str, ...]
    version: int = 0
    timestamp: int = -1


@frozen
class OpaqueValue:
    """A value roster reads past without using."""

    data: bytes


@frozen
class ConsumerRecord:
    key: ConsumerKey
    value: object | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode_value(self.value)


# -- factories (what the coordinator writes) -------------------------------------------------

def epoch_record(group: str, epoch: int) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(GROUP_METADATA, group), GroupEpochValue(epoch))


def group_tombstone(group: str) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(GROUP_METADATA, group), None)


def subscription_metadata_record(group: str, metadata: dict[str, tuple[bytes, int]]
                                 ) -> ConsumerRecord:
    topics = tuple((tid, name, n) for name, (tid, n) in sorted(metadata.items()))
    return ConsumerRecord(ConsumerKey(PARTITION_METADATA, group), PartitionMetadataValue(topics))


def subscription_metadata_tombstone(group: str) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(PARTITION_METADATA, group), None)


def member_record(group: str, m: ConsumerMember) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(MEMBER_METADATA, group, m.member_id), MemberMetadataValue(
        m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
        m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, m.classic))


def member_tombstone(group: str, member_id: str) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(MEMBER_METADATA, group, member_id), None)


def target_epoch_record(group: str, epoch: int) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(TARGET_METADATA, group), TargetEpochValue(epoch))


def target_epoch_tombstone(group: str) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(TARGET_METADATA, group), None)


def target_record(group: str, member_id: str, assignment: Assignment) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(TARGET_MEMBER, group, member_id),
                          TargetMemberValue(assignment))


def target_tombstone(group: str, member_id: str) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(TARGET_MEMBER, group, member_id), None)


def regex_record(group: str, regex: str, topics, now: int) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(REGULAR_EXPRESSION, group, regex=regex),
                          RegexValue(tuple(sorted(topics)), 0, now))


def regex_tombstone(group: str, regex: str) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(REGULAR_EXPRESSION, group, regex=regex), None)


def current_record(group: str, m: ConsumerMember) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(CURRENT_ASSIGNMENT, group, m.member_id),
                          CurrentAssignmentValue(m.member_epoch, m.previous_member_epoch,
                                                 int(m.state), m.assigned,
                                                 m.pending_revocation, m.assignment_epochs))


def current_tombstone(group: str, member_id: str) -> ConsumerRecord:
    return ConsumerRecord(ConsumerKey(CURRENT_ASSIGNMENT, group, member_id), None)


# -- encoding --------------------------------------------------------------------------------

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")


class _Flexible:
    __slots__ = ("out",)

    def __init__(self, version: int | None = 0) -> None:
        # None: a nested struct (no version of its own)
        self.out = bytearray() if version is None else bytearray(_I16.pack(version))

    def int8(self, v: int) -> _Flexible:
        self.out += struct.pack(">b", v)
        return self

    def int32(self, v: int) -> _Flexible:
        self.out += _I32.pack(v)
        return self

    def string(self, v: str | None) -> _Flexible:
        if v is None:
            self.out += b"\x00"
        else:
            data = v.encode()
            self.out += encode_unsigned(len(data) + 1)
            self.out += data
        return self

    def count(self, n: int) -> _Flexible:
        self.out += encode_unsigned(n + 1)
        return self

    def uuid(self, v: bytes) -> _Flexible:
        if len(v) != 16:
            raise ValueError("a topic id is 16 bytes")
        self.out += v
        return self

    def tags(self) -> _Flexible:
        self.out += b"\x00"
        return self

    def bytes_(self, v: bytes) -> _Flexible:
        self.out += encode_unsigned(len(v) + 1)
        self.out += v
        return self

    def assignment(self, a: Assignment, epochs: PartitionEpochs | None = None) -> _Flexible:
        """TopicPartitions[]; with `epochs`, each topic's AssignmentEpochs as its tag 0."""
        self.count(len(a))
        for topic_id in sorted(a):
            self.uuid(topic_id)
            ps = sorted(a[topic_id])
            self.count(len(ps))
            for p in ps:
                self.int32(p)
            if epochs is None or any((topic_id, p) not in epochs for p in ps):
                self.tags()
                continue
            field_ = _Flexible(None).count(len(ps))
            for p in ps:
                field_.int32(epochs[topic_id, p])
            self.out += b"\x01\x00" + encode_unsigned(len(field_.out)) + field_.out
        return self


def encode_key(key: ConsumerKey) -> bytes:
    w = ClassicWriter().int16(key.type).string(key.group)
    if key.type in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT):
        w.string(key.member)
    elif key.type == REGULAR_EXPRESSION:
        w.string(key.regex)
    return bytes(w.out)


def encode_value(value) -> bytes:
    w = _Flexible()
    match value:
        case GroupEpochValue():
            w.int32(value.epoch)
        case PartitionMetadataValue():
            w.count(len(value.topics))
            for tid, name, n in value.topics:
                w.uuid(tid).string(name).int32(n).count(0).tags()
        case MemberMetadataValue():
            w.string(value.instance_id).string(value.rack_id).string(value.client_id)
            w.string(value.client_host).count(len(value.subscribed_topic_names))
            for name in value.subscribed_topic_names:
                w.string(name)
            w.string(value.subscribed_topic_regex).int32(value.rebalance_timeout_ms)
            w.string(value.server_assignor)
            if value.classic is not None:
                return bytes(w.out + _classic_tag(value.classic))
        case TargetEpochValue():
            w.int32(value.assignment_epoch)
        case TargetMemberValue():
            w.assignment(value.partitions)
        case CurrentAssignmentValue():
            w.int32(value.member_epoch).int32(value.previous_member_epoch).int8(value.state)
            w.assignment(value.assigned, value.epochs)
            w.assignment(value.pending_revocation, value.epochs)
        case RegexValue():
            w.count(len(value.topics))
            for name in value.topics:
                w.string(name)
            w.out += struct.pack(">qq", value.version, value.timestamp)
        case OpaqueValue():
            return value.data
        case _:
            raise TypeError(f"cannot encode {value!r}")
    return bytes(w.tags().out)


def _classic_tag(classic: ClassicMetadata) -> bytes:
    """The tagged-field section holding ClassicMemberMetadata as tag 0: a nullable struct in a
    tagged field is its size + 1, a varint 1 (present), then the struct."""
    struct_ = _Flexible(None)
    struct_.int32(classic.session_timeout_ms).count(len(classic.protocols))
    for name, metadata in classic.protocols:
        struct_.string(name).bytes_(metadata).tags()
    struct_.tags()
    body = struct_.out
    return b"\x01\x00" + encode_unsigned(len(body) + 1) + b"\x01" + bytes(body)


# -- decoding --------------------------------------------------------------------------------

def decode_key(key_type: int, data: bytes) -> ConsumerKey:
    """The key after its int16 type (the caller read it to route here)."""
    r = ClassicReader(data, ConsumerRecordError)
    if r.int16() != key_type:
        raise ConsumerRecordError("key type mismatch")
    group = r.string() or ""
    if key_type in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT):
        return ConsumerKey(key_type, group, member=r.string() or "")
    if key_type == REGULAR_EXPRESSION:
        return ConsumerKey(key_type, group, regex=r.string() or "")
    return ConsumerKey(key_type, group)


class _Reader:
    __slots__ = ("data", "at")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.data):
            raise ConsumerRecordError("truncated consumer group record")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def int8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def int16(self) -> int:
        return _I16.unpack(self.take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self.take(4))[0]

    def uvarint(self) -> int:
        try:
            value, self.at = read_unsigned(self.data, self.at)
        except IndexError as exc:
            raise ConsumerRecordError(str(exc)) from None
        return value

    def string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def count(self) -> int:
        n = self.uvarint()
        return max(n - 1, 0)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def bytes_(self) -> bytes:
        n = self.uvarint()
        return b"" if n == 0 else self.take(n - 1)

    def member_tags(self) -> ClassicMetadata | None:
        """ConsumerGroupMemberMetadataValue's tagged fields: tag 0 is ClassicMemberMetadata."""
        classic = None
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            if tag != 0:
                self.take(size)
                continue
            end = self.at + size
            if self.uvarint() > 0:      # a nullable struct: 0 is null
                session = self.int32()
                protocols = []
                for _ in range(self.count()):
                    name = self.string() or ""
                    protocols.append((name, self.bytes_()))
                    self.tags()
                self.tags()
                classic = ClassicMetadata(session, tuple(protocols))
            if self.at != end:
                raise ConsumerRecordError("malformed ClassicMemberMetadata")
        return classic

    def assignment(self, epochs: PartitionEpochs | None = None) -> Assignment:
        """TopicPartitions[]; each topic's AssignmentEpochs (tag 0) go into `epochs` when
        given and as long as the partitions (else the topic has none, as Kafka logs and
        defaults)."""
        out: Assignment = {}
        for _ in range(self.count()):
            tid = self.take(16)
            ps = [self.int32() for _ in range(self.count())]
            for _ in range(self.uvarint()):
                tag, size = self.uvarint(), self.uvarint()
                end = self.at + size
                if tag == 0 and epochs is not None:
                    given = [self.int32() for _ in range(self.count())]
                    if len(given) == len(ps):
                        epochs.update(((tid, p), e) for p, e in zip(ps, given))
                if self.at > end:
                    raise ConsumerRecordError("malformed AssignmentEpochs")
                self.at = end
            if ps:
                out[tid] = frozenset(ps)
        return out


def decode_value(key: ConsumerKey, data: bytes | None):
    if data is None:
        return None
    r = _Reader(data)
    r.int16()  # version 0 (later versions only add tagged fields)
    t = key.type
    if t == GROUP_METADATA:
        return GroupEpochValue(r.int32())
    if t == PARTITION_METADATA:
        topics = []
        for _ in range(r.count()):
            tid = r.take(16)
            name = r.string() or ""
            n = r.int32()
            for _ in range(r.count()):
                r.int32()
                for _ in range(r.count()):
                    r.string()
                r.tags()
            r.tags()
            topics.append((tid, name, n))
        return PartitionMetadataValue(tuple(topics))
    if t == MEMBER_METADATA:
        instance_id, rack_id = r.string(), r.string()
        client_id, client_host = r.string() or "", r.string() or ""
        names = tuple(r.string() or "" for _ in range(r.count()))
        regex = r.string()
        rebalance = r.int32()
        assignor = r.string()
        return MemberMetadataValue(instance_id, rack_id, client_id, client_host, names, regex,
                                   rebalance, assignor, r.member_tags())
    if t == TARGET_METADATA:
        return TargetEpochValue(r.int32())
    if t == TARGET_MEMBER:
        return TargetMemberValue(r.assignment())
    if t == CURRENT_ASSIGNMENT:
        epoch, previous, state = r.int32(), r.int32(), r.int8()
        epochs: PartitionEpochs = {}
        return CurrentAssignmentValue(epoch, previous, state, r.assignment(epochs),
                                      r.assignment(epochs), epochs)
    if t == REGULAR_EXPRESSION:
        topics = tuple(r.string() or "" for _ in range(r.count()))
        version, timestamp = struct.unpack(">qq", r.take(16))
        return RegexValue(topics, version, timestamp)
    return OpaqueValue(bytes(data))


def member_state(value: int) -> MemberState:
    try:
        return MemberState(value)
    except ValueError:
        return MemberState.UNKNOWN


def as_consumer_record(record) -> ConsumerRecord | None:
    """A consumer group record (types 3-8, 16) as built by an operation, or as it arrives from
    the log, undecoded by the classic layouts (UnknownRecord); None: not one."""
    if isinstance(record, ConsumerRecord):
        return record
    key = record.key
    if isinstance(key, UnknownRecord) and key.key_version in TYPES:
        decoded = decode_key(key.key_version, key.raw_key)
        return ConsumerRecord(decoded, decode_value(decoded, key.raw_value))
    return None
