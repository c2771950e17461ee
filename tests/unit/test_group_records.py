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
    OffsetKey,
    OffsetValue,
    Record,
    RecordFormatError,
    UnknownRecord,
    decode,
    decode_key,
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
