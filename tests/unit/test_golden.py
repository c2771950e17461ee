"""Golden bytes: request/response pairs that real clients exchanged with roster.

The fixtures in tests/golden/<client>/<api>_v<version>.json come from tests/golden/capture.py,
which drives confluent-kafka, kafka-python, aiokafka and kcat through a recording proxy in front
of a real roster. These tests are pure: no sockets, no processes. For every fixture:

- roster's codec decodes the request and re-encodes it byte-identically, so it reads exactly
  what that client writes (a dropped tagged field or a misread field would change the bytes);
- roster's codec decodes roster's own response and re-encodes it byte-identically;
- kafka-python's protocol classes (generated from Kafka's JSON schemas, independent of kio)
  parse the same request and response, re-encode them to the same bytes, and agree with kio on
  the key fields (error codes, topic names, offsets, ...).

test_coverage checks that the fixture set holds exactly the (api, version) pairs each client
sends (EXPECTED below: the highest version of each API roster serves that the client sends to a
broker offering every version, as its library release negotiates it), minus the known gaps
listed below with their reasons.
"""
from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path

import pytest
from kafka.protocol.admin import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka.protocol.consumer import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)

from roster.broker.handlers import build_registry
from roster.protocol.codec import decode_request, decode_response, encode_request, encode_response

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
FIXTURES = sorted(GOLDEN.glob("*/*.json"))
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kcat")

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
FIND_COORDINATOR, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID = 10, 18, 19, 20, 22

# kafka-python's classes, by api key: (request class, response class)
KAFKA_PYTHON = {
    PRODUCE: (ProduceRequest, ProduceResponse),
    FETCH: (FetchRequest, FetchResponse),
    LIST_OFFSETS: (ListOffsetsRequest, ListOffsetsResponse),
    METADATA: (MetadataRequest, MetadataResponse),
    FIND_COORDINATOR: (FindCoordinatorRequest, FindCoordinatorResponse),
    API_VERSIONS: (ApiVersionsRequest, ApiVersionsResponse),
    CREATE_TOPICS: (CreateTopicsRequest, CreateTopicsResponse),
    DELETE_TOPICS: (DeleteTopicsRequest, DeleteTopicsResponse),
    INIT_PRODUCER_ID: (InitProducerIdRequest, InitProducerIdResponse),
}

# What each client sends, per API roster serves: the highest version each client's release
# sends in a consumer-group, produce and admin run, and CreateTopics/DeleteTopics as the admin
# clients sent them in the capture run. kcat's Produce is v7 (its librdkafka caps it there), as
# the capture run observed.
EXPECTED: dict[str, dict[str, int]] = {
    "confluent-kafka": {"ApiVersions": 3, "Metadata": 13, "FindCoordinator": 2, "Fetch": 16,
                        "Produce": 10, "ListOffsets": 7, "CreateTopics": 4, "DeleteTopics": 4},
    "kafka-python": {"ApiVersions": 4, "Metadata": 13, "FindCoordinator": 6, "Fetch": 12,
                     "Produce": 9, "ListOffsets": 11, "InitProducerId": 4, "CreateTopics": 7,
                     "DeleteTopics": 6},
    "aiokafka": {"ApiVersions": 0, "Metadata": 5, "FindCoordinator": 1, "Fetch": 11,
                 "Produce": 7, "ListOffsets": 3},
    "kcat": {"ApiVersions": 3, "Metadata": 4, "FindCoordinator": 2, "Fetch": 11, "Produce": 7,
             "ListOffsets": 2},
}

# Pairs of EXPECTED with no fixture at all. Each must stay absent: when a capture starts
# producing one, delete its entry here.
KNOWN_MISSING: dict[tuple[str, str, int], str] = {
    # FindCoordinator is only sent to find a group (or transaction) coordinator. The capture's
    # consumers read by assignment with group_id=None, so these clients never send it; the
    # versions in EXPECTED are what they send in consumer-group runs. Needs consumer groups.
    ("kafka-python", "FindCoordinator", 6): "needs consumer groups (group_id=None sends none)",
    ("aiokafka", "FindCoordinator", 1): "needs consumer groups (group_id=None sends none)",
    ("kcat", "FindCoordinator", 2): "needs consumer groups (kcat -C without -G sends none)",
    # confluent-kafka's assign-only consumer has a group.id, and librdkafka looks the
    # coordinator up for it even without joining: that fixture exists (FindCoordinator v2).
}

# Fixtures that hold a request roster never answered (response_hex null): roster closed the
# connection instead. Each would be a roster bug; when fixed, recapture and delete the entry.
# (CreateTopics v4 from confluent-kafka was one until create_topics.py stopped asking for the
# v5+ `configs` field at every version.)
KNOWN_NO_RESPONSE: dict[tuple[str, str, int], str] = {}

# Requests whose client wrote bytes after the last field its version defines. Kafka parses the
# schema's fields and ignores what follows, and so does roster; the re-encode then reproduces
# the frame up to those bytes. Each entry names the exact trailing bytes, so any other excess
# still fails. librdkafka's AdminClient sends these 3 bytes after a Metadata v13 body.
KNOWN_TRAILING_BYTES: dict[str, str] = {
    "confluent-kafka/metadata_v13": "010000",
}


@cache
def load(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc["request"] = bytes.fromhex(doc["request_hex"])
    doc["response"] = None if doc["response_hex"] is None else bytes.fromhex(doc["response_hex"])
    return doc


def fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


ANSWERED = [p for p in FIXTURES if json.loads(p.read_text())["response_hex"] is not None]


def test_fixtures_exist():
    assert FIXTURES, f"no fixtures under {GOLDEN}: run .venv/bin/python tests/golden/capture.py"
    assert {p.parent.name for p in FIXTURES} <= set(CLIENTS)


# -- roster's codec ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_request_decodes_and_reencodes_byte_identical(path):
    doc = load(path)
    frame = doc["request"]
    request = decode_request(frame)
    assert (request.api_key, request.api_version, request.correlation_id) == \
        (doc["api_key"], doc["api_version"], doc["correlation_id"])
    again = encode_request(request.api_key, request.api_version, request.correlation_id,
                           request.client_id, request.body)[4:]
    trailing = KNOWN_TRAILING_BYTES.get(fixture_id(path), "")
    assert again.hex() + trailing == frame.hex(), \
        f"{fixture_id(path)}: roster's re-encode differs from what the client sent"


@pytest.mark.parametrize("path", ANSWERED, ids=fixture_id)
def test_response_decodes_and_reencodes_byte_identical(path):
    doc = load(path)
    frame = doc["response"]
    correlation_id, body = decode_response(doc["api_key"], doc["api_version"], frame)
    assert correlation_id == doc["correlation_id"]
    again = encode_response(doc["api_key"], doc["api_version"], correlation_id, body)
    assert again[4:].hex() == frame.hex()
    assert int.from_bytes(again[:4], "big") == len(frame)


# -- the cross-check with kafka-python's generated classes ---------------------------------------

def _code(value) -> int:
    return int(value)  # kio's ErrorCode is an IntEnum; kafka-python gives plain ints


def _uuid(value) -> str | None:
    return None if value is None else str(value)


def key_fields(api_key: int, version: int, body) -> object:
    """The fields that matter, read by attribute from a kio entity or a kafka-python object
    (both take their field names from Kafka's JSON schemas)."""
    if api_key == API_VERSIONS:
        return _code(body.error_code), [(k.api_key, k.min_version, k.max_version)
                                        for k in body.api_keys]
    if api_key == METADATA:
        brokers = [(b.node_id, b.host, b.port, b.rack) for b in body.brokers]
        topics = [(_code(t.error_code), t.name,
                   _uuid(t.topic_id) if version >= 10 else None,
                   t.is_internal if version >= 1 else None,
                   [(p.partition_index, _code(p.error_code), p.leader_id, list(p.replica_nodes),
                     list(p.isr_nodes)) for p in t.partitions])
                  for t in body.topics]
        cluster = (body.cluster_id if version >= 2 else None,
                   body.controller_id if version >= 1 else None)
        return brokers, cluster, topics
    if api_key == PRODUCE:
        return [(t.name, p.index, _code(p.error_code), p.base_offset,
                 p.log_start_offset if version >= 5 else None)
                for t in body.responses for p in t.partition_responses]
    if api_key == FETCH:
        top = (_code(body.error_code), body.session_id) if version >= 7 else None
        return top, [(_uuid(t.topic_id) if version >= 13 else t.topic, p.partition_index,
                      _code(p.error_code), p.high_watermark, p.last_stable_offset,
                      p.log_start_offset, p.preferred_read_replica if version >= 11 else None,
                      bytes(p.records or b""))
                     for t in body.responses for p in t.partitions]
    if api_key == LIST_OFFSETS:
        return [(t.name, p.partition_index, _code(p.error_code), p.timestamp, p.offset,
                 p.leader_epoch if version >= 4 else None)
                for t in body.topics for p in t.partitions]
    if api_key == FIND_COORDINATOR:
        if version < 4:
            return _code(body.error_code), body.node_id, body.host, body.port
        return [(c.key, _code(c.error_code), c.node_id, c.host, c.port)
                for c in body.coordinators]
    if api_key == INIT_PRODUCER_ID:
        return _code(body.error_code), body.producer_id, body.producer_epoch
    if api_key == CREATE_TOPICS:
        return [(t.name, _code(t.error_code),
                 _uuid(t.topic_id) if version >= 7 else None,
                 (t.num_partitions, t.replication_factor) if version >= 5 else None,
                 [(c.name, c.value) for c in t.configs or ()] if version >= 5 else None)
                for t in body.topics]
    if api_key == DELETE_TOPICS:
        return [(t.name, _code(t.error_code), _uuid(t.topic_id) if version >= 6 else None)
                for t in body.responses]
    raise AssertionError(f"no key fields for api key {api_key}")


def _header_length(message_class, frame: bytes, version: int) -> int:
    stream = io.BytesIO(frame)
    message_class.parse_header(stream, version=version)
    return stream.tell()


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_request_agrees_with_kafka_python(path):
    doc = load(path)
    key, version, frame = doc["api_key"], doc["api_version"], doc["request"]
    request_class, _ = KAFKA_PYTHON[key]
    theirs = request_class.decode(frame, version=version, header=True)
    ours = decode_request(frame)
    assert (theirs.header.request_api_key, theirs.header.request_api_version) == (key, version)
    assert (theirs.header.correlation_id, theirs.header.client_id) == \
        (ours.correlation_id, ours.client_id)
    # kafka-python writes the same bytes back: the fixture is a well-formed message by Kafka's
    # own schemas, not only by kio's reading of them
    trailing = bytes.fromhex(KNOWN_TRAILING_BYTES.get(fixture_id(path), ""))
    assert theirs.encode(header=True) + trailing == frame


@pytest.mark.parametrize("path", ANSWERED, ids=fixture_id)
def test_response_agrees_with_kafka_python(path):
    doc = load(path)
    key, version, frame = doc["api_key"], doc["api_version"], doc["response"]
    _, response_class = KAFKA_PYTHON[key]
    theirs = response_class.decode(frame, version=version, header=True)
    assert theirs.header.correlation_id == doc["correlation_id"]
    _, ours = decode_response(key, version, frame)
    assert key_fields(key, version, theirs) == key_fields(key, version, ours)

    # And kafka-python re-encodes the body to the same bytes, so it consumed all of them.
    # kafka-python's classes: encoding a response that carries a header raises
    # AttributeError, and so does encode(version=...) on a header-less decoded one (it has no
    # _header slot); a header-less decode encodes at its own version with encode().
    start = _header_length(response_class, frame, version)
    body_only = response_class.decode(frame[start:], version=version)
    assert body_only.encode() == frame[start:]


# -- coverage ------------------------------------------------------------------------------------

def test_coverage():
    registry = build_registry()
    names = {spec.name: spec.key for spec in registry}
    found: dict[tuple[str, str, int], dict] = {}
    for path in FIXTURES:
        doc = load(path)
        spec = registry.get(doc["api_key"])
        assert spec is not None and spec.supports(doc["api_version"]), fixture_id(path)
        assert path.stem == f"{_snake(spec.name)}_v{doc['api_version']}"
        assert doc["client"] == path.parent.name and doc["api_name"] == spec.name
        found[doc["client"], spec.name, doc["api_version"]] = doc

    expected = set()
    for client, apis in EXPECTED.items():
        for api, version in apis.items():
            assert api in names, f"{api} is not served by roster: drop it from EXPECTED"
            expected.add((client, api, version))
    assert set(KNOWN_MISSING) <= expected and set(KNOWN_NO_RESPONSE) <= expected

    missing = expected - set(found) - set(KNOWN_MISSING)
    assert not missing, f"no fixture for {sorted(missing)}: recapture, or list as a known gap"
    filled = set(KNOWN_MISSING) & set(found)
    assert not filled, f"{sorted(filled)} now have fixtures: remove them from KNOWN_MISSING"
    unexpected = set(found) - expected
    assert not unexpected, f"fixtures for {sorted(unexpected)} that EXPECTED does not list " \
                           "(did a client change the versions it sends?)"

    unanswered = {k for k, doc in found.items() if doc["response"] is None}
    assert unanswered == set(KNOWN_NO_RESPONSE), \
        f"unanswered fixtures {sorted(unanswered)} != KNOWN_NO_RESPONSE {sorted(KNOWN_NO_RESPONSE)}"


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))
