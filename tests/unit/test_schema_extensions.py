"""StreamsGroupDescribe v1, a version kio has no schema for, served through kio's own reader and
writer by roster.protocol.schema_extensions. The expected bytes are what Kafka 4.4.0's
kafka-clients (StreamsGroupDescribeResponseData / RequestData, MessageUtil at version 1) writes
for the same values."""
from __future__ import annotations

import datetime

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_schema,
    response_schema,
)
from roster.protocol.errors import ErrorCode

KEY = ApiKey.STREAMS_GROUP_DESCRIBE


def test_a_v1_request_carries_include_topology_description_after_v0s_fields():
    body = make(request_schema(KEY, 1), group_ids=("a",), include_authorized_operations=True,
                include_topology_description=True)
    frame = encode_request(KEY, 1, 7, "c", body)
    assert frame[4:] == (b"\x00\x59\x00\x01" + b"\x00\x00\x00\x07" + b"\x00\x01c" + b"\x00"
                         + b"\x02\x02a" + b"\x01" + b"\x01" + b"\x00")
    request = decode_request(frame[4:])
    assert request.api_version == 1 and request.body == body


def test_a_v1_group_ends_with_the_description_its_status_and_the_assignor():
    schema = response_schema(KEY, 1)
    group = make(element(schema, "groups"), error_code=ErrorCode.none, error_message=None,
                 group_id="g", group_state="Empty", group_epoch=0, assignment_epoch=0,
                 topology=None, members=(), topology_description=None,
                 topology_description_status=1)
    frame = encode_response(KEY, 1, 2, make(schema, groups=(group,)))
    # Kafka's bytes for the group: v0's, then ff (no description), 01 (NOT_STORED),
    # 00 (no assignor name), 00 (tagged fields)
    kafka_group = bytes.fromhex("000000026706456d7074790000000000000000ff0180000000ff010000")
    assert frame[4:] == (b"\x00\x00\x00\x02\x00"             # correlation id, header tags
                         + b"\x00\x00\x00\x00\x02" + kafka_group + b"\x00")
    correlation_id, answer = decode_response(KEY, 1, frame[4:])
    assert correlation_id == 2 and answer.throttle_time == datetime.timedelta(0)
    assert answer.groups == (group,)


def test_v0_is_still_kios_own():
    schema = response_schema(KEY, 0)
    assert schema.__module__.startswith("kio.schema.")
    assert not hasattr(element(schema, "groups"), "assignor_name")
