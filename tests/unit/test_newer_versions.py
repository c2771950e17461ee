"""DeleteGroups v3, which kio has no schema for (roster.protocol.newer_versions): the request is
v2's with the version changed; the response adds a compact nullable error message to each
result (Kafka 4.4's DeleteGroupsResponse.json)."""
from __future__ import annotations

import datetime

from roster.protocol import newer_versions
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema, response_schema
from roster.protocol.errors import ErrorCode

KEY = ApiKey.DELETE_GROUPS


def test_a_v3_request_is_read_as_v2_at_version_3():
    body = make(request_schema(KEY, 2), groups_names=("g1", "g2"))
    frame = newer_versions.encode_request(KEY, 3, 7, "me", body)
    assert frame[4:8] == b"\x00\x2a\x00\x03"       # api key 42, version 3
    request = newer_versions.decode_request(frame[4:])
    assert (request.api_version, request.correlation_id, request.client_id) == (3, 7, "me")
    assert request.body.groups_names == ("g1", "g2")


def test_a_v3_response_carries_each_results_error_message():
    schema = response_schema(KEY, newer_versions.kio_version(KEY, 3))
    body = make(schema, results=(make(element(schema, "results"), group_id="g",
                                      error_code=ErrorCode.non_empty_group),))
    frame = newer_versions.encode_response(KEY, 3, 9, body)
    assert frame == (b"\x00\x00\x00\x11" + b"\x00\x00\x00\x09\x00"     # size, header v1
                     + b"\x00\x00\x00\x00" + b"\x02"                  # throttle, 1 result
                     + b"\x02g" + b"\x00\x44" + b"\x00" + b"\x00"     # g, 68, null message
                     + b"\x00")
    correlation_id, answer = newer_versions.decode_response(KEY, 3, frame[4:])
    assert correlation_id == 9 and answer.throttle_time == datetime.timedelta(0)
    assert answer.results == (newer_versions.DeletableGroupResult(
        "g", ErrorCode.non_empty_group, None),)
