"""The records of `__consumer_offsets`, in Kafka's own key/value layouts.

key   = int16 key version (which doubles as the record type) + struct
value = int16 value version + struct; a null value is a tombstone

  offset commit   key v1: group, topic, partition
                  value v3: offset, leaderEpoch, metadata, commitTimestamp
                  value v1: offset, metadata, commitTimestamp, expireTimestamp (when one is set)
  group metadata  key v2: group
                  value v3: protocolType, generation, protocol?, leader?, currentStateTimestamp,
                            members[memberId, groupInstanceId?, clientId, clientHost,
                                    rebalanceTimeout, sessionTimeout, subscription, assignment]

Readers accept every classic version (offset value v0-v3, group value v0-v3) so logs written by
Kafka load here; types 3 and up (KIP-848 and share groups) decode to UnknownRecord.
Strings are int16-length (-1 = null), bytes int32-length, arrays int32-count: the classic encoding.
"""
from __future__ import annotations

import struct

from roster.frozen import frozen
from roster.protocol.classic_encoding import ClassicReader, ClassicWriter


class RecordFormatError(ValueError):
    """Bytes that are not a record of the type and version they claim to be."""


@frozen
class OffsetKey:
    group: str
    topic: str
    partition: int


@frozen
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1  # only v1 carries one


@frozen
class GroupKey:
    group: str


@frozen
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@frozen
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberValue, ...]


@frozen
class UnknownRecord:
    """A record type the classic coordinator does not read: consumer group records (types 3-8,
    handed to roster.coordinator.consumer with their bytes) or unknown ones (skipped with a
    warning on load)."""

    key_version: int
    raw_key: bytes = b""
    raw_value: bytes | None = None


@frozen
class Record:
    """One `__consumer_offsets` record; value None is a tombstone."""

    key: OffsetKey | GroupKey | UnknownRecord
    value: OffsetValue | GroupValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode_value(self.value)


# -- writing ---------------------------------------------------------------------------------

def encode_key(key: OffsetKey | GroupKey) -> bytes:
    if isinstance(key, OffsetKey):
        writer = ClassicWriter().int16(1).string(key.group).string(key.topic)
        return bytes(writer.int32(key.partition).out)
    if isinstance(key, GroupKey):
        return bytes(ClassicWriter().int16(2).string(key.group).out)
    raise TypeError(f"cannot encode {key!r}")


def encode_value(value: OffsetValue | GroupValue) -> bytes:
    if isinstance(value, OffsetValue):
        if value.expire_timestamp >= 0:
            w = ClassicWriter().int16(1).int64(value.offset).string(value.metadata)
            return bytes(w.int64(value.commit_timestamp).int64(value.expire_timestamp).out)
        w = ClassicWriter().int16(3).int64(value.offset).int32(value.leader_epoch)
        return bytes(w.string(value.metadata).int64(value.commit_timestamp).out)
    if isinstance(value, GroupValue):
        w = ClassicWriter().int16(3).string(value.protocol_type).int32(value.generation)
        w.string(value.protocol).string(value.leader).int64(value.current_state_timestamp)
        w.int32(len(value.members))
        for m in value.members:
            w.string(m.member_id).string(m.group_instance_id).string(m.client_id)
            w.string(m.client_host).int32(m.rebalance_timeout).int32(m.session_timeout)
            w.bytes_(m.subscription).bytes_(m.assignment)
        return bytes(w.out)
    raise TypeError(f"cannot encode {value!r}")


# -- reading ---------------------------------------------------------------------------------

def _reader(data: bytes) -> ClassicReader:
    return ClassicReader(data, RecordFormatError)


def decode_key(data: bytes) -> OffsetKey | GroupKey | UnknownRecord:
    r = _reader(data)
    version = r.int16()
    if version in (0, 1):
        return OffsetKey(r.string() or "", r.string() or "", r.int32())
    if version == 2:
        return GroupKey(r.string() or "")
    return UnknownRecord(version)


def decode_value(key, data: bytes | None):
    if data is None or isinstance(key, UnknownRecord):
        return None
    r = _reader(data)
    version = r.int16()
    if isinstance(key, OffsetKey):
        return _offset_value(r, version)
    return _group_value(r, version)


def _offset_value(r: ClassicReader, version: int) -> OffsetValue:
    if version not in (0, 1, 2, 3):
        raise RecordFormatError(f"offset commit value v{version} is not a classic version")
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    return OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def _group_value(r: ClassicReader, version: int) -> GroupValue:
    if version not in (0, 1, 2, 3):
        raise RecordFormatError(f"group metadata value v{version} is not a classic version")
    protocol_type = r.string() or ""
    generation = r.int32()
    protocol = r.string()
    leader = r.string()
    timestamp = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.count()):
        member_id = r.string() or ""
        instance_id = r.string() if version >= 3 else None
        client_id = r.string() or ""
        client_host = r.string() or ""
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        if version == 0:
            rebalance_timeout = session_timeout
        members.append(MemberValue(member_id, instance_id, client_id, client_host,
                                   rebalance_timeout, session_timeout,
                                   r.bytes_() or b"", r.bytes_() or b""))
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, tuple(members))


_KEY_PREFIX = struct.Struct(">hh")      # key version, group length
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_OFFSET_V3 = struct.Struct(">hqih")     # value version, offset, leader epoch, metadata length
_OFFSET_V3_BARE = struct.Struct(">hqihq")   # the same, no metadata, then the commit timestamp
_OFFSET_V0_2 = struct.Struct(">hqh")    # value version, offset, metadata length
_TIMESTAMP = struct.Struct(">q")
_TIMESTAMPS = struct.Struct(">qq")      # v1's commit and expire timestamps

# An offset commit as plain values: (group, topic, partition, fields), fields None for a
# tombstone, else (offset, leader epoch, metadata, commit timestamp, expire timestamp), the
# order of OffsetValue's fields.
OffsetFields = tuple[int, int, str, int, int]
OffsetCommit = tuple[str, str, int, OffsetFields | None]


def decode_offset_commit(key: bytes, value: bytes | None) -> OffsetCommit | None:
    """An offset-commit record (key v0/v1, value v0-v3 or a tombstone) as plain values: nearly
    every record a restart replays, and the one it replays a million times on a busy
    __consumer_offsets, so it is unpacked straight-line and builds no Record. None for
    anything else or anything unusual (a null string, trailing bytes), which the general
    reader (decode) then reads or rejects; struct.error or UnicodeDecodeError on a truncated
    or non-UTF-8 record, likewise the general reader's to judge."""
    names = _offset_commit_key(key)
    if names is None:
        return None
    if value is None:
        return names + (None,)
    fields = _offset_fields(value)
    return None if fields is None else names + (fields,)


class OffsetCommitReader:
    """decode_offset_commit for one replay, which remembers the keys it has read: a
    __consumer_offsets not yet compacted holds the same keys over and over (a consumer commits
    the same partitions again and again), so each is decoded once, and the replayed offsets
    share its strings. It holds one entry per distinct key read: drop it with the replay."""

    def __init__(self) -> None:
        self._names: dict[bytes, tuple[str, str, int]] = {}

    def read(self, key: bytes, value: bytes | None) -> OffsetCommit | None:
        names = self._names.get(key)
        if names is None:
            names = _offset_commit_key(key)
            if names is None:
                return None
            self._names[key] = names
        if value is None:   # (as decode_offset_commit, without a call more per record)
            return names + (None,)
        fields = _offset_fields(value)
        return None if fields is None else names + (fields,)


def _offset_commit_key(key: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an offset-commit key v0/v1; None when it is not one."""
    version, group_length = _KEY_PREFIX.unpack_from(key, 0)
    if version not in (0, 1) or group_length < 0:
        return None
    topic_at = 4 + group_length
    (topic_length,) = _INT16.unpack_from(key, topic_at)
    partition_at = topic_at + 2 + topic_length
    if topic_length < 0 or partition_at + 4 != len(key):
        return None
    return (key[4:topic_at].decode(), key[topic_at + 2:partition_at].decode(),
            _INT32.unpack_from(key, partition_at)[0])


def _offset_fields(value: bytes) -> OffsetFields | None:
    """Offset value v3 (what roster and Kafka write) or v0-v2 (older Kafkas; v1 carries an
    expire timestamp), exactly as _offset_value reads them; None when unusual."""
    if len(value) == _OFFSET_V3_BARE.size:   # v3 with no metadata, as consumers commit
        version, offset, leader_epoch, metadata_length, commit_timestamp = \
            _OFFSET_V3_BARE.unpack(value)
        if version == 3 and metadata_length == 0:
            return offset, leader_epoch, "", commit_timestamp, -1
    version, offset, leader_epoch, metadata_length = _OFFSET_V3.unpack_from(value, 0)
    if version == 3:
        end = 16 + metadata_length
        if metadata_length < 0 or end + 8 != len(value):
            return None
        return (offset, leader_epoch, value[16:end].decode(),
                _TIMESTAMP.unpack_from(value, end)[0], -1)
    return _offset_fields_v0_2(value)


def _offset_fields_v0_2(value: bytes) -> OffsetFields | None:
    version, offset, metadata_length = _OFFSET_V0_2.unpack_from(value, 0)
    end = 12 + metadata_length
    if version not in (0, 1, 2) or metadata_length < 0:
        return None
    if version == 1:
        if end + 16 != len(value):
            return None
        commit_timestamp, expire_timestamp = _TIMESTAMPS.unpack_from(value, end)
    else:
        if end + 8 != len(value):
            return None
        (commit_timestamp,) = _TIMESTAMP.unpack_from(value, end)
        expire_timestamp = -1
    return offset, -1, value[12:end].decode(), commit_timestamp, expire_timestamp


def decode(key: bytes, value: bytes | None) -> Record:
    try:
        fast = decode_offset_commit(key, value)
    except (struct.error, UnicodeDecodeError):
        fast = None
    if fast is not None:
        group, topic, partition, fields = fast
        return Record(OffsetKey(group, topic, partition),
                      None if fields is None else OffsetValue(*fields))
    decoded_key = decode_key(key)
    if isinstance(decoded_key, UnknownRecord):
        return Record(UnknownRecord(decoded_key.key_version, bytes(key),
                                    None if value is None else bytes(value)), None)
    return Record(decoded_key, decode_value(decoded_key, value))
