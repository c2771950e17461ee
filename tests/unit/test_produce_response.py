"""The hand-written Produce response encoder writes exactly the bytes kio writes, for every version
roster serves through it and for successful and failed partitions alike."""
from __future__ import annotations

import datetime
import uuid

import pytest

from roster.broker.handlers.produce import SPEC
from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_response, response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.produce_response import (
    FIRST_TOPIC_ID,
    PartitionAnswer,
    encode_produce_response,
)

SERVED_VERSIONS = range(3, SPEC.max_version + 1)  # v0-2: roster.protocol.classic

TOPICS = [
    ("clicks", [PartitionAnswer(0, ErrorCode.none, 1234567890123, 17),
                PartitionAnswer(5, ErrorCode.none, 0, 0)]),
    ("ünïcode-topic", [PartitionAnswer(2, ErrorCode.corrupt_message, -1, -1,
                                       "CRC32C mismatch: the header says 0x01, the data gives 0x02"),
                       PartitionAnswer(3, ErrorCode.unknown_topic_or_partition),
                       # a message over 127 bytes takes a two-byte length in flexible versions
                       PartitionAnswer(4, ErrorCode.message_too_large, -1, 3, "x" * 300),
                       # a LogAppendTime topic's answer, and records refused one by one
                       PartitionAnswer(6, ErrorCode.none, 10, 0, None, 1700000000000),
                       PartitionAnswer(7, ErrorCode.invalid_record, -1, 0, "refused", -1,
                                       ((0, "no key"), (2, None)))]),
    ("empty", []),
]


def kio_response(version: int, topics) -> object:
    """The same answer built as kio entities, the way the handler did before the fast encoder."""
    schema = response_schema(0, version)
    topic_entry = element(schema, "responses")
    partition_entry = element(topic_entry, "partition_responses")
    error_entry = element(partition_entry, "record_errors") if version >= 8 else None
    return make(schema, responses=tuple(
        make(topic_entry, name=name if version < FIRST_TOPIC_ID else None,
             topic_id=topic_id if version >= FIRST_TOPIC_ID else None,
             partition_responses=tuple(
                 make(partition_entry, index=a.index, error_code=a.error_code,
                      base_offset=a.base_offset, log_append_time=as_datetime(a.log_append_time),
                      log_start_offset=a.log_start_offset,
                      record_errors=() if error_entry is None else tuple(
                          make(error_entry, batch_index=i, batch_index_error_message=m)
                          for i, m in a.record_errors),
                      error_message=a.error_message)
                 for a in answers))
        for (name, answers), topic_id in zip(topics, topic_ids(topics))))


def as_datetime(milliseconds: int):
    """kio's log_append_time: a datetime, None for -1 (CreateTime topics)."""
    if milliseconds == -1:
        return None
    return datetime.datetime.fromtimestamp(milliseconds / 1000, datetime.timezone.utc)


def topic_ids(topics) -> list[uuid.UUID]:
    return [uuid.UUID(int=1000 + i) for i in range(len(topics))]


@pytest.mark.parametrize("version", SERVED_VERSIONS)
@pytest.mark.parametrize("topics", [TOPICS, TOPICS[:1], []], ids=["mixed", "one", "none"])
def test_bytes_equal_kio(version, topics):
    keyed = [(name if version < FIRST_TOPIC_ID else topic_id, answers)
             for (name, answers), topic_id in zip(topics, topic_ids(topics))]
    fast = encode_response(0, version, 4242, encode_produce_response(version, keyed))
    reference = encode_response(0, version, 4242, kio_response(version, topics))
    assert fast == reference


@pytest.mark.parametrize("version", SERVED_VERSIONS)
def test_kio_decodes_what_the_fast_encoder_wrote(version):
    keyed = [(name if version < FIRST_TOPIC_ID else topic_id, answers)
             for (name, answers), topic_id in zip(TOPICS, topic_ids(TOPICS))]
    frame = encode_response(0, version, 7, encode_produce_response(version, keyed))
    correlation_id, body = decode_response(0, version, frame[4:])
    assert correlation_id == 7
    failed = body.responses[1].partition_responses[0]
    assert failed.error_code == ErrorCode.corrupt_message
    assert failed.base_offset == -1
    if version >= 8:
        assert failed.error_message.startswith("CRC32C mismatch")
    assert body.responses[0].partition_responses[0].base_offset == 1234567890123
