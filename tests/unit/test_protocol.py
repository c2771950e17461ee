"""The pure protocol layer: framing limits, codec round trips, the registry."""
import struct

import pytest

from roster.broker.handlers import build_registry
from roster.protocol import classic, newer_versions
from roster.protocol.build import element, make
from roster.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_schema,
    response_schema,
)
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.framing import read_size
from roster.protocol.registry import ApiSpec, Registry


def test_frame_size_limits():
    assert read_size(struct.pack(">i", 100), 1000) == 100
    with pytest.raises(MalformedRequest, match="socket.request.max.bytes"):
        read_size(struct.pack(">i", 1001), 1000)
    with pytest.raises(MalformedRequest):
        read_size(struct.pack(">i", -5), 1000)


@pytest.mark.parametrize("version", range(0, 14))
def test_metadata_request_round_trip_every_version(version):
    schema = request_schema(3, version)
    entry = element(schema, "topics")
    body = make(schema, topics=(make(entry, name="t", topic_id=None),),
                allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False)
    frame = encode_request(3, version, 77, "client", body)
    request = decode_request(frame[4:])
    assert (request.api_key, request.api_version, request.correlation_id, request.client_id) == \
        (3, version, 77, "client")
    assert request.body == body


def test_truncated_body_is_malformed():
    frame = encode_request(18, 3, 1, "c", make(request_schema(18, 3), client_software_name="a",
                                              client_software_version="b"))
    with pytest.raises(MalformedRequest):
        decode_request(frame[4:-3])


def test_api_versions_response_header_is_always_v0():
    body = make(response_schema(18, 3), error_code=ErrorCode.none, api_keys=())
    frame = encode_response(18, 3, 9, body)
    # size, correlation id, then the body: no tagged-field byte after the correlation id
    assert struct.unpack_from(">iih", frame) == (len(frame) - 4, 9, 0)
    assert decode_response(18, 3, frame[4:]) == (9, body)


def test_registry_rejects_duplicates_and_lists_ranges():
    registry = Registry()
    async def handler(*_):
        return None
    registry.add(ApiSpec(1, "Fetch", 4, 18, handler))
    with pytest.raises(ValueError):
        registry.add(ApiSpec(1, "Fetch", 4, 18, handler))
    assert registry.version_ranges() == [(1, 4, 18)]


def test_advertised_ranges_meet_librdkafka_feature_checks():
    """librdkafka enables a feature only if our range of each API it checks overlaps the
    fixed range it checks (its feature map)."""
    ranges = {key: (low, high) for key, low, high in build_registry().version_ranges()}
    needs = {"MsgVer2": [(0, 3, 3), (1, 4, 4)], "ZSTD": [(0, 7, 7), (1, 10, 10)],
             "ThrottleTime(produce)": [(0, 1, 2)], "OffsetTime": [(2, 1, 1)],
             "ApiVersion": [(18, 0, 0)], "BrokerGroupCoordinator": [(10, 0, 0)]}
    for feature, checks in needs.items():
        for key, low, high in checks:
            ours = ranges[key]
            assert ours[0] <= high and low <= ours[1], f"{feature} off: api {key} range {ours}"


def test_every_advertised_version_has_a_codec_or_a_legacy_answer():
    for spec in build_registry():
        for version in range(spec.min_version, spec.max_version + 1):
            if spec.is_legacy(version):
                assert spec.legacy is not None
            elif classic.has_layout(spec.key, version):  # versions kio lacks (KIP-896)
                assert spec.raw is not None
            elif newer_versions.has_layout(spec.key, version):  # versions kio lacks yet
                assert spec.raw is not None
            else:
                assert request_schema(spec.key, version) is not None, (spec.name, version)
                assert response_schema(spec.key, version) is not None
