"""The streams group records in Kafka's layouts: bytes written as the schemas lay them out, and
every value read back as it was written."""
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roster.coordinator.streams import records as rec
from roster.coordinator.streams.model import Endpoint
from roster.coordinator.streams.topology import CopartitionGroup, Subtopology, TopicInfo, \
    Topology


def round_trip(record: rec.StreamsRecord) -> rec.StreamsRecord:
    key, value = record.encode()
    return rec.decode(key, value)


def test_keys_are_the_type_then_int16_length_strings():
    key, _ = rec.StreamsRecord(rec.StreamsKey(rec.MEMBER_METADATA, "g", "m1"), None).encode()
    assert key == b"\x00\x13" + b"\x00\x01g" + b"\x00\x02m1"
    key, _ = rec.StreamsRecord(rec.StreamsKey(rec.GROUP_METADATA, "g"), None).encode()
    assert key == b"\x00\x11\x00\x01g"
    assert rec.decode(key, None) == rec.StreamsRecord(rec.StreamsKey(17, "g"), None)


def test_group_metadata_writes_its_tags_only_when_not_default():
    plain = rec.encode_value(rec.GroupMetadataValue(7, 0x0102030405060708))
    assert plain == b"\x00\x00" + b"\x00\x00\x00\x07" + bytes(range(1, 9)) + b"\x00"
    tagged = rec.encode_value(rec.GroupMetadataValue(7, 1, 0, (("num.standby.replicas", "0"),)))
    # two tags: 0 (4 bytes: validated epoch 0), 1 (the configs array)
    assert tagged.endswith(b"\x02\x00\x04\x00\x00\x00\x00\x01\x19\x02\x15num.standby.replicas"
                           b"\x020\x00")
    assert rec.decode_value(17, tagged) == rec.GroupMetadataValue(
        7, 1, 0, (("num.standby.replicas", "0"),))


def test_group_metadata_keeps_tags_it_does_not_read():
    # KIP-1331's description epochs (tags 2 and 3) survive a read and a write
    value = rec.GroupMetadataValue(3, 9, 2, None, ((2, struct.pack(">i", 2)),))
    data = rec.encode_value(value)
    assert rec.decode_value(17, data) == value
    assert rec.encode_value(rec.decode_value(17, data)) == data


def test_target_assignment_member_bytes():
    data = rec.encode_value(rec.TargetMemberValue({"0": frozenset({1})}, {}, {}))
    assert data == bytes.fromhex("0000" "02" "0230" "02" "00000001" "00" "01" "01" "00")


def test_current_assignment_carries_active_assignment_epochs_as_tag_0():
    value = rec.CurrentAssignmentValue(5, 4, 2, {"0": frozenset({1, 2})}, {"1": frozenset({0})},
                                       {}, {"0": frozenset({3})}, {}, {},
                                       {("0", 1): 4, ("0", 2): 5, ("0", 3): 3})
    data = rec.encode_value(value)
    head = b"\x00\x00" + struct.pack(">iib", 5, 4, 2)
    active = b"\x02\x020\x03" + struct.pack(">ii", 1, 2) + b"\x01\x00\x09\x03" + \
        struct.pack(">ii", 4, 5)
    standby = b"\x02\x021\x02" + struct.pack(">i", 0) + b"\x00"
    pending = b"\x02\x020\x02" + struct.pack(">i", 3) + b"\x01\x00\x05\x02" + struct.pack(">i", 3)
    assert data == head + active + standby + b"\x01" + pending + b"\x01\x01" + b"\x00"
    assert rec.decode_value(22, data) == value


def test_member_metadata_null_endpoint_is_one_byte():
    value = rec.MemberMetadataValue(None, None, "c", "h", 1, 2, "p", None, ())
    data = rec.encode_value(value)
    assert data == b"\x00\x00" + b"\x00\x00" + b"\x02c\x02h" + struct.pack(">ii", 1, 2) + \
        b"\x02p" + b"\xff" + b"\x01" + b"\x00"
    assert rec.decode_value(19, data) == value


def test_member_metadata_port_is_uint16():
    value = rec.MemberMetadataValue("i", "r", "c", "h", 45_000, 3, "p",
                                    Endpoint("host", 60_000), (("zone", "a"),))
    assert rec.decode_value(19, rec.encode_value(value)) == value


def test_target_metadata_timestamp_is_tag_0():
    assert rec.encode_value(rec.TargetMetadataValue(12)) == b"\x00\x00\x00\x00\x00\x0c\x00"
    value = rec.TargetMetadataValue(12, 1_791_331_200_000)
    data = rec.encode_value(value)
    assert data == b"\x00\x00\x00\x00\x00\x0c\x01\x00\x08" + struct.pack(">q", 1_791_331_200_000)
    assert rec.decode_value(20, data) == value


def test_topology_round_trips():
    topology = Topology(3, (
        Subtopology("0", ("in",), (), (TopicInfo("app-store-changelog", 0, 0,
                                                 (("cleanup.policy", "compact"),)),),
                    ("app-rep",), (), ()),
        Subtopology("1", ("other",), (), (), (), (TopicInfo("app-rep", 0, 3, ()),),
                    (CopartitionGroup((0,), (), (0,)),)),
    ))
    record = rec.StreamsRecord(rec.StreamsKey(rec.TOPOLOGY, "app"), topology)
    assert round_trip(record) == record


def test_removed_partition_metadata_is_skipped():
    key = b"\x00\x12\x00\x01g"
    assert rec.decode(key, b"\x00\x00anything") is None


@pytest.mark.parametrize("kind, data", [
    (17, b"\x00\x00\x00\x00"),                       # ends inside the hash
    (21, b"\x00\x00\x05"),                           # an array count past the end
    (19, b"\x00\x01" + b"\x00" * 20),                # an unknown value version
    (20, b"\x00\x00\x00\x00\x00\x01\x00\xff"),       # bytes after the value
    (22, b"\x00\x00" + b"\x00" * 8 + b"\x00" + b"\x01" * 6 + b"\x00"),   # member state 0
])
def test_bad_values_are_refused_with_a_reason(kind, data):
    with pytest.raises(rec.StreamsRecordError):
        rec.decode_value(kind, data)


def test_a_key_of_another_group_type_is_refused():
    with pytest.raises(rec.StreamsRecordError, match="not a streams group record type"):
        rec.decode_key(b"\x00\x03\x00\x01g")


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
tasks = st.dictionaries(names, st.frozensets(st.integers(0, 2**31 - 1), min_size=1, max_size=4),
                        max_size=3)


@given(names, st.integers(-2, 2**31 - 1), st.integers(-1, 100), st.integers(1, 3), tasks, tasks,
       tasks, tasks, tasks, tasks, st.booleans())
def test_current_assignment_round_trips(member, epoch, previous, state, a, s, w, ap, sp, wp,
                                        with_epochs):
    epochs = {}
    if with_epochs:
        for role in (a, ap):
            epochs.update(((sub, p), epoch) for sub, ps in role.items() for p in ps)
    value = rec.CurrentAssignmentValue(epoch, previous, state, a, s, w, ap, sp, wp, epochs)
    record = rec.StreamsRecord(rec.StreamsKey(rec.CURRENT_ASSIGNMENT, "g", member), value)
    assert round_trip(record) == record


@given(st.one_of(st.none(), names), st.one_of(st.none(), names), names, names,
       st.integers(-1, 2**31 - 1), st.integers(0, 100), names,
       st.one_of(st.none(), st.builds(Endpoint, names, st.integers(0, 65535))),
       st.lists(st.tuples(names, names), max_size=3))
def test_member_metadata_round_trips(instance, rack, client, host, timeout, epoch, process,
                                     endpoint, tags):
    value = rec.MemberMetadataValue(instance, rack, client, host, timeout, epoch, process,
                                    endpoint, tuple(tags))
    assert rec.decode_value(19, rec.encode_value(value)) == value


# What Kafka 4.4.0's own generated classes (kafka-group-coordinator-4.4.0.jar) write for these
# values, without the int16 version the record serde puts first: the bytes roster writes must be
# the same, so that each broker reads the other's __consumer_offsets.
KAFKA_4_4_BYTES = {
    "CUR": (
        "00000005000000040202023003000000010000000201000903000000040000000502023102000000"
        "00000102023002000000030100050200000003010100"
    ),
    "MEM": (
        "026900026302680000afc80000000302700105686f7374ea600002057a6f6e6502610000"
    ),
    "META": (
        "00000007000000000000006302000400000002011902156e756d2e7374616e6462792e7265706c69"
        "636173023100"
    ),
    "TA": (
        "0000000c010008000001a113a8ec00"
    ),
    "TOPO": (
        "0000000302023102066f746865720102046c6f67000000000000020f636c65616e75702e706f6c69"
        "637908636f6d70616374000001020472657000000000000301000202000001020000000000"
    ),
    "TM": (
        "020230020000000100010100"
    ),
}


def test_bytes_are_those_kafka_4_4_writes():
    values = {
        "CUR": rec.CurrentAssignmentValue(5, 4, 2, {"0": frozenset({1, 2})}, {"1": frozenset({0})},
                                          {}, {"0": frozenset({3})}, {}, {},
                                          {("0", 1): 4, ("0", 2): 5, ("0", 3): 3}),
        "MEM": rec.MemberMetadataValue("i", None, "c", "h", 45_000, 3, "p",
                                       Endpoint("host", 60_000), (("zone", "a"),)),
        "META": rec.GroupMetadataValue(7, 99, 2, (("num.standby.replicas", "1"),)),
        "TA": rec.TargetMetadataValue(12, 1_791_331_200_000),
        "TOPO": Topology(3, (Subtopology(
            "1", ("other",), (), (TopicInfo("log", 0, 0, (("cleanup.policy", "compact"),)),), (),
            (TopicInfo("rep", 0, 3, ()),), (CopartitionGroup((0,), (), (0,)),)),)),
        "TM": rec.TargetMemberValue({"0": frozenset({1})}, {}, {}),
    }
    types = {"CUR": 22, "MEM": 19, "META": 17, "TA": 20, "TOPO": 23, "TM": 21}
    for name, value in values.items():
        kafka = b"\x00\x00" + bytes.fromhex(KAFKA_4_4_BYTES[name])
        assert rec.encode_value(value) == kafka, name
        assert rec.decode_value(types[name], kafka) == value, name


def test_records_read_back_through_the_classic_loader_are_ours():
    # the loader decodes the classic layouts and hands every other type on with its bytes
    from roster.protocol import group_records
    record = rec.StreamsRecord(rec.StreamsKey(rec.CURRENT_ASSIGNMENT, "app", "m1"),
                               rec.CurrentAssignmentValue(3, 2, 1, {"0": frozenset({0})}, {}, {},
                                                          {}, {}, {}, {("0", 0): 3}))
    loaded = group_records.decode(*record.encode())
    assert rec.as_streams_record(loaded) == record
    assert rec.as_streams_record(record) is record
    tombstone = group_records.decode(rec.encode_key(rec.StreamsKey(rec.TOPOLOGY, "app")), None)
    assert rec.as_streams_record(tombstone) == rec.StreamsRecord(
        rec.StreamsKey(rec.TOPOLOGY, "app"), None)
    classic = group_records.decode(b"\x00\x02\x00\x01g", None)      # a classic group's record
    assert rec.as_streams_record(classic) is None
    removed = group_records.decode(b"\x00\x12\x00\x01g", b"\x00\x00")
    assert rec.as_streams_record(removed) is None
