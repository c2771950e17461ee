"""The consumer embedded protocol: our codec agrees byte for byte with kio's schema-generated one,
reads every version, and reads newer versions by their known prefix."""
import io
import random
import re
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_writer

from roster.protocol.classic_encoding import ClassicReader
from roster.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

names = st.text(alphabet="abcxyz._-", min_size=1, max_size=8)
topic_partitions = st.lists(st.tuples(names, st.lists(st.integers(0, 500), max_size=4)
                                      .map(tuple)), max_size=3).map(tuple)


def kio_bytes(kind: str, version: int, **fields) -> bytes:
    module = __import__(f"kio.schema.consumer_protocol_{kind}.v{version}.data",
                        fromlist=["x"])
    cls = getattr(module, f"ConsumerProtocol{kind.title()}")
    tp = getattr(module, "TopicPartition", None)
    for key in ("owned_partitions", "assigned_partitions"):
        if key in fields:
            fields[key] = tuple(tp(topic=t, partitions=p) for t, p in fields[key])
    out = io.BytesIO()
    entity_writer(cls)(out, cls(**fields))
    return struct.pack(">h", version) + out.getvalue()


@given(topics=st.lists(names, max_size=4).map(tuple), user_data=st.none() | st.binary(max_size=8),
       owned=topic_partitions, generation=st.integers(-1, 2**31 - 1), rack=st.none() | names,
       version=st.integers(0, 3))
def test_subscription_matches_kio_and_round_trips(topics, user_data, owned, generation, rack,
                                                  version):
    fields = {"topics": topics, "user_data": user_data}
    if version >= 1:
        fields["owned_partitions"] = owned
    if version >= 2:
        fields["generation_id"] = generation
    if version >= 3:
        fields["rack_id"] = rack
    ours = Subscription(topics, user_data, owned if version >= 1 else (),
                        generation if version >= 2 else -1, rack if version >= 3 else None,
                        version)
    assert encode_subscription(ours) == kio_bytes("subscription", version, **dict(fields))
    assert decode_subscription(encode_subscription(ours)) == ours


@given(partitions=topic_partitions, user_data=st.none() | st.binary(max_size=8),
       version=st.integers(0, 3))
def test_assignment_matches_kio_and_round_trips(partitions, user_data, version):
    ours = Assignment(partitions, user_data, version)
    assert encode_assignment(ours) == kio_bytes("assignment", version,
                                                assigned_partitions=partitions,
                                                user_data=user_data)
    assert decode_assignment(encode_assignment(ours)) == ours


def test_a_newer_version_is_read_by_its_known_prefix():
    v3 = encode_subscription(Subscription(("t",), None, (("t", (1,)),), 7, "rack-a", 3))
    future = struct.pack(">h", 9) + v3[2:] + b"\x00\x00\x00\x2a"  # v9 appended an int32
    decoded = decode_subscription(future)
    assert (decoded.version, decoded.topics, decoded.generation_id, decoded.rack_id) == \
        (9, ("t",), 7, "rack-a")


def test_an_empty_assignment_is_nothing_assigned():
    assert decode_assignment(b"").partitions == ()


@pytest.mark.parametrize("data", [b"\x00", b"\x00\x01\x00\x00\x00\x05ab", b"\xff\xff"])
def test_garbage_is_a_clear_error(data):
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)


def _read_assignment_with_the_reader(data: bytes) -> Assignment:
    """decode_assignment as it was before its struct-only path: the ClassicReader alone."""
    reader = ClassicReader(data, ConsumerProtocolError, lenient_text=True)
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative assignment version {version}")
    partitions = tuple((reader.string() or "", tuple(reader.int32() for _ in range(reader.count())))
                       for _ in range(reader.count()))
    user_data = reader.bytes_() if not reader.at_end() else None
    return Assignment(partitions, user_data, version)


def test_assignments_decode_as_the_reader_does_whatever_the_bytes():
    """The struct-only path takes well-formed assignments and leaves the rest to the reader:
    mutated and truncated assignments decode (or are refused) exactly as the reader alone does."""
    rng = random.Random(5)
    bases = (encode_assignment(Assignment(partitions=(("topic-a", (0,)),), version=1)),
             encode_assignment(Assignment(partitions=(("topic-ü", tuple(range(0, 30, 3))),
                                                      ("topic-b", (1, -2))),
                                          user_data=b"ud", version=3)) + b"\0\0",
             encode_assignment(Assignment(partitions=(), version=0)))
    for base in bases:
        for _ in range(2000):
            mutated = bytearray(base)
            for _ in range(rng.randint(1, 3)):
                mutated[rng.randrange(len(mutated))] = rng.choice(
                    (0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
            data = bytes(mutated[:rng.randrange(1, len(mutated) + 1)]
                         if rng.random() < 0.2 else mutated)
            try:
                expected = _read_assignment_with_the_reader(data)
            except ConsumerProtocolError as exc:
                with pytest.raises(ConsumerProtocolError, match=re.escape(str(exc))):
                    decode_assignment(data)
            else:
                assert decode_assignment(data) == expected
