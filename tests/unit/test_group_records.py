"""__consumer_offsets records in Kafka's layouts: exact bytes for the versions we write, and
every classic version read back."""
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roster.protocol.group_records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetCommitReader,
    OffsetKey,
    OffsetValue,
    Record,
    RecordFormatError,
    UnknownRecord,
    decode,
    decode_key,
    decode_offset_commit,
    decode_value,
    encode_key,
    encode_value,
)


def s(text):  # int16-length string
    return struct.pack(">h", len(text)) + text.encode()


def test_offset_commit_key_v1_and_value_v3_bytes():
    assert encode_key(OffsetKey("g", "t", 3)) == struct.pack(">h", 1) + s("g") + s("t") + \
        struct.pack(">i", 3)
    assert encode_value(OffsetValue(42, 5, "m", 1000)) == struct.pack(">hqi", 3, 42, 5) + s("m") + \
        struct.pack(">q", 1000)


def test_offset_value_with_expiry_is_written_as_v1():
    assert encode_value(OffsetValue(42, 5, "", 1000, 2000)) == struct.pack(">hq", 1, 42) + s("") + \
        struct.pack(">qq", 1000, 2000)


def test_group_metadata_v3_bytes():
    member = MemberValue("m-1", "i-1", "c", "/127.0.0.1", 300000, 45000, b"sub", b"asg")
    value = GroupValue("consumer", 4, "range", "m-1", 123, (member,))
    expected = (struct.pack(">h", 3) + s("consumer") + struct.pack(">i", 4) + s("range") + s("m-1")
                + struct.pack(">q", 123) + struct.pack(">i", 1) + s("m-1") + s("i-1") + s("c")
                + s("/127.0.0.1") + struct.pack(">ii", 300000, 45000)
                + struct.pack(">i", 3) + b"sub" + struct.pack(">i", 3) + b"asg")
    assert encode_value(value) == expected
    assert decode(encode_key(GroupKey("g")), expected).value == value


def test_null_protocol_and_leader_and_tombstone():
    value = GroupValue("consumer", 5, None, None, 0, ())
    assert decode_value(GroupKey("g"), encode_value(value)) == value
    assert decode(encode_key(GroupKey("g")), None).value is None


def test_older_group_versions_are_read():
    v0 = (struct.pack(">h", 0) + s("consumer") + struct.pack(">i", 1) + s("range") + s("m")
          + struct.pack(">i", 1) + s("m") + s("c") + s("/h") + struct.pack(">i", 10000)
          + struct.pack(">i", 0) + struct.pack(">i", 0))
    value = decode_value(GroupKey("g"), v0)
    member = value.members[0]
    assert (member.group_instance_id, member.rebalance_timeout, member.session_timeout) == \
        (None, 10000, 10000)


def test_unknown_record_types_are_recognised_not_rejected():
    assert decode_key(struct.pack(">h", 7) + s("x")) == UnknownRecord(7)


@pytest.mark.parametrize("data", [struct.pack(">h", 3) + b"\x00", struct.pack(">h", 9)])
def test_broken_values_raise(data):
    with pytest.raises(RecordFormatError):
        decode_value(OffsetKey("g", "t", 0), data)



def general_decode(key, value):
    decoded_key = decode_key(key)
    return Record(decoded_key, decode_value(decoded_key, value))


@given(group=st.text(max_size=30), topic=st.text(max_size=30), partition=st.integers(-1, 2**31 - 1),
       offset=st.integers(-1, 2**63 - 1), epoch=st.integers(-1, 2**31 - 1),
       metadata=st.text(max_size=40), timestamp=st.integers(0, 2**62),
       expire=st.sampled_from([-1, 5]), tombstone=st.booleans())
def test_the_fast_path_decodes_exactly_like_the_general_reader(group, topic, partition, offset,
                                                               epoch, metadata, timestamp, expire,
                                                               tombstone):
    key = encode_key(OffsetKey(group, topic, partition))
    value = None if tombstone else encode_value(OffsetValue(offset, epoch, metadata, timestamp,
                                                            expire))
    assert decode(key, value) == general_decode(key, value)


def utf8(text):  # int16-length string of any text (s() counts characters: ASCII only)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def offset_value_bytes(version, offset, epoch, metadata, timestamp, expire):
    """An offset value in any classic version, packed by hand as Kafka lays it out."""
    if version == 3:
        return struct.pack(">hqi", 3, offset, epoch) + utf8(metadata) + struct.pack(">q", timestamp)
    tail = struct.pack(">qq", timestamp, expire) if version == 1 else struct.pack(">q", timestamp)
    return struct.pack(">hq", version, offset) + utf8(metadata) + tail


@given(version=st.integers(0, 3), key_version=st.integers(0, 1), group=st.text(max_size=30),
       topic=st.text(max_size=30), partition=st.integers(-2**31, 2**31 - 1),
       offset=st.integers(-1, 2**63 - 1), epoch=st.integers(-1, 2**31 - 1),
       metadata=st.text(max_size=40), timestamp=st.integers(0, 2**62),
       expire=st.integers(-1, 2**62), trailing=st.sampled_from([b"", b"\0"]))
def test_every_classic_offset_version_decodes_as_plain_values_like_the_general_reader(
        version, key_version, group, topic, partition, offset, epoch, metadata, timestamp,
        expire, trailing):
    key = struct.pack(">h", key_version) + utf8(group) + utf8(topic) + struct.pack(">i", partition)
    value = offset_value_bytes(version, offset, epoch, metadata, timestamp, expire) + trailing
    general = general_decode(key, value)
    assert decode(key, value) == general
    plain = decode_offset_commit(key, value)
    if trailing:   # unusual: left to the general reader
        assert plain is None
    else:
        fields = (general.value.offset, general.value.leader_epoch, general.value.metadata,
                  general.value.commit_timestamp, general.value.expire_timestamp)
        assert plain == (group, topic, partition, fields)
    assert decode_offset_commit(key, None) == (group, topic, partition, None)
    reader = OffsetCommitReader()   # remembers the key: the second read must not differ
    assert [reader.read(key, value), reader.read(key, None), reader.read(key, value)] == \
        [plain, (group, topic, partition, None), plain]


@pytest.mark.parametrize("key, value", [
    (struct.pack(">h", 1) + struct.pack(">h", -1) + s("t") + struct.pack(">i", 0), None),  # null
    (struct.pack(">h", 2) + s("g"), None),                                   # a group record
    (struct.pack(">h", 1) + s("g") + s("t") + struct.pack(">i", 0),
     struct.pack(">hq", 3, 1) + struct.pack(">i", 0) + struct.pack(">h", -1)
     + struct.pack(">q", 0)),                                                # null metadata
    (struct.pack(">h", 1) + s("g") + s("t") + struct.pack(">i", 0),
     struct.pack(">h", 4) + b"\0" * 30),                                      # value v4
])
def test_anything_unusual_is_left_to_the_general_reader(key, value):
    assert decode_offset_commit(key, value) is None
    assert OffsetCommitReader().read(key, value) is None


OFFSET_KEY = struct.pack(">h", 1) + s("g") + s("t") + struct.pack(">i", 7)
OFFSET_VALUE = struct.pack(">hqi", 3, 1, 2) + s("m") + struct.pack(">q", 3)


@pytest.mark.parametrize("key, value",
                         [(OFFSET_KEY[:cut], None) for cut in range(len(OFFSET_KEY))]
                         + [(OFFSET_KEY, OFFSET_VALUE[:cut]) for cut in range(len(OFFSET_VALUE))])
def test_a_truncated_offset_record_is_the_general_reader_s_to_judge(key, value):
    try:
        assert decode_offset_commit(key, value) is None
    except struct.error:
        pass
    with pytest.raises(RecordFormatError):
        decode(key, value)


@pytest.mark.parametrize("version, metadata", [(3, ""), (0, "abcd"), (2, "abcd"), (3, "m")])
def test_a_value_of_the_bare_v3_length_is_read_by_its_version(version, metadata):
    # v3 with no metadata is 24 bytes and read with one unpack; so is a v0 or v2 with four
    # bytes of metadata, which must not be taken for it
    key = OffsetKey("g", "t", 0)
    value = offset_value_bytes(version, 5, 6, metadata, 7, -1)
    assert decode(encode_key(key), value) == general_decode(encode_key(key), value)
    assert decode_offset_commit(encode_key(key), value)[3][2] == metadata
