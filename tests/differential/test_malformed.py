"""Raw malformed and out-of-range requests: what Kafka answers, or whether it closes the
connection, beside roster. Each probe uses a fresh connection and records the answer's error
codes; "closed" when the broker hangs up (EOF or reset) without answering within CLOSE_WAIT_S;
"hung" when it neither answers nor hangs up by then, so a broker that stalls on a bad frame
never passes for one that drops the connection."""
from __future__ import annotations

import struct

from kio.schema.errors import ErrorCode

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.codec import decode_response, encode_request, request_schema
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember
from tests.differential.wire_trace import build

CLOSE_WAIT_S = 15.0  # generous under load: Kafka and roster both close at once


def header(api_key: int, version: int, correlation_id: int = 1, client: str = "raw",
           flexible: bool = False) -> bytes:
    """A v1 request header (api key, version, correlation id, client id) without a body; v2
    (flexible: an empty tagged-field section after it) when asked."""
    encoded = client.encode()
    return (struct.pack(">hhih", api_key, version, correlation_id, len(encoded)) + encoded
            + (b"\0" if flexible else b""))


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def probe(s, who: str, frame: bytes, answer_as: tuple[int, int] | None = None) -> None:
    """Send one frame; note the error codes of the answer (decoded as answer_as), or whether
    the broker closed the connection or left it hanging."""
    conn = s.anonymous(who, traced=False)
    conn.sock.settimeout(CLOSE_WAIT_S)
    try:
        conn.send_raw(frame)
        reply = conn.read_frame()
    except TimeoutError:   # before OSError, its base: no answer and the connection still open
        s.note(who, outcome="hung", waited_s=CLOSE_WAIT_S)
        return
    except (ConnectionError, OSError):   # EOF or reset
        s.note(who, outcome="closed")
        return
    if answer_as is None:
        s.note(who, outcome="answered", still_open=not conn.closed_by_peer(0.5))
        return
    _, answer = decode_response(*answer_as, reply)
    error = ErrorCode(int(answer.error_code))
    ranges = {}
    if answer_as[0] == ApiKey.API_VERSIONS and error is ErrorCode.unsupported_version:
        # KIP-511: the keys whose ranges come back (not the versions, which differ by broker)
        ranges["ranges_of"] = [int(entry.api_key) for entry in answer.api_keys]
    s.note(who, outcome="answered", error=error.name, **ranges,
           still_open=not conn.closed_by_peer(0.5))


def join_frame(group: str, **overrides) -> bytes:
    fields = {"group_id": group, "session_timeout": 10000, "rebalance_timeout": 10000,
              "member_id": "", "protocol_type": "consumer",
              "protocols": [{"name": "range", "metadata": b""}], **overrides}
    body = build(request_schema(ApiKey.JOIN_GROUP, 5), fields)
    return encode_request(ApiKey.JOIN_GROUP, 5, 1, "raw", body)


@scenario(outcome="""an unknown API key, an unsupported JoinGroup version, a truncated body, a
negative or oversized frame size, and an array count past the frame's end: Kafka closes the
connection without answering, and so does roster; ApiVersions at an unknown version is
answered UNSUPPORTED_VERSION (v0 layout) with ApiVersions' own range alone, and the connection
stays open""")
def test_malformed_frames(s):
    probe(s, "unknown api key", framed(header(9999, 0)))
    probe(s, "JoinGroup v99", framed(header(ApiKey.JOIN_GROUP, 99) + b"\0" * 32))
    whole = join_frame(s.name("g"))
    probe(s, "truncated JoinGroup", framed(whole[4:-6]))
    probe(s, "negative size", struct.pack(">i", -5) + header(ApiKey.API_VERSIONS, 0))
    probe(s, "oversized frame", struct.pack(">i", 2**31 - 1) + header(ApiKey.API_VERSIONS, 0))
    huge_array = header(ApiKey.DESCRIBE_GROUPS, 0) + struct.pack(">i", 2**30)
    probe(s, "array past the end", framed(huge_array))
    probe(s, "ApiVersions v99", framed(header(ApiKey.API_VERSIONS, 99, flexible=True)
                                       + b"\0\0\0"), answer_as=(ApiKey.API_VERSIONS, 0))
    probe(s, "ApiVersions v99, v1 header", framed(header(ApiKey.API_VERSIONS, 99)),
          answer_as=(ApiKey.API_VERSIONS, 0))
    good = make(request_schema(ApiKey.API_VERSIONS, 0))
    probe(s, "ApiVersions v0", encode_request(ApiKey.API_VERSIONS, 0, 1, "raw", good),
          answer_as=(ApiKey.API_VERSIONS, 0))


@scenario(outcome="""well-formed requests with out-of-range values are answered, not dropped:
JoinGroup with a negative session timeout INVALID_SESSION_TIMEOUT, an empty protocol type or
no protocols INCONSISTENT_GROUP_PROTOCOL, Heartbeat and SyncGroup for an empty group id
INVALID_GROUP_ID, OffsetCommit to a negative partition UNKNOWN_TOPIC_OR_PARTITION,
ConsumerGroupHeartbeat joining without a rebalance timeout or subscription INVALID_REQUEST""")
def test_out_of_range_values(s):
    group = s.name("g")
    conn = s.conn("raw")
    for overrides in ({"session_timeout": -1}, {"protocol_type": ""}, {"protocols": []},
                      {"group_id": ""}):
        conn.call(ApiKey.JOIN_GROUP, keep=("member_id",), **{
            "group_id": group, "session_timeout": 10000, "rebalance_timeout": 10000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], **overrides})
    conn.call(ApiKey.HEARTBEAT, group_id="", generation_id=1, member_id="x")
    conn.call(ApiKey.SYNC_GROUP, group_id="", generation_id=1, member_id="x", assignments=[])
    topic = s.topic("t", 1)
    conn.call(ApiKey.OFFSET_COMMIT, keep=("topics",), group_id=group,
              generation_id_or_member_epoch=-1, member_id="", topics=[
                  {"name": topic, "partitions": [{"partition_index": -1, "committed_offset": 5,
                                                  "committed_metadata": ""}]}])
    conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, keep=("error_message",), group_id=group,
              member_id="abcdefghijklmnopqrstuv", member_epoch=0, rebalance_timeout=-1,
              subscribed_topic_names=[topic], topic_partitions=[])
    conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, keep=("error_message",), group_id=group,
              member_id="abcdefghijklmnopqrstuv", member_epoch=0, rebalance_timeout=10000,
              subscribed_topic_names=None, topic_partitions=[])
    conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, keep=("error_message",), group_id=group,
              member_id="abcdefghijklmnopqrstuw", member_epoch=0, rebalance_timeout=10000,
              subscribed_topic_names=[], topic_partitions=[])
    conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, keep=("error_message",), group_id=group,
              member_id="", member_epoch=0, rebalance_timeout=10000,
              subscribed_topic_names=[topic], topic_partitions=[])


GROUP_APIS = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
              ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH,
              ApiKey.OFFSET_DELETE, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
              ApiKey.DELETE_GROUPS, ApiKey.CONSUMER_GROUP_HEARTBEAT,
              ApiKey.CONSUMER_GROUP_DESCRIBE)


@scenario(outcome="""ApiVersions names the same version range for every group API, except the
listed ones""")
def test_api_versions_group_apis(s):
    answer = s.conn("raw").call(ApiKey.API_VERSIONS, client_software_name="roster-tests",
                                client_software_version="1")
    ranges = {entry.api_key: (entry.min_version, entry.max_version) for entry in answer.api_keys}
    for api in GROUP_APIS:
        s.note(ApiKey(api).name, versions=list(ranges.get(api, ())))


@scenario(outcome="""edge values in well-formed group requests: commit metadata over
offset.metadata.max.bytes gets OFFSET_METADATA_TOO_LARGE; a leader's SyncGroup naming a member
id that is not in the group is answered as Kafka answers it; a LeaveGroup naming no member,
DescribeGroups and DeleteGroups of an empty group id and ListGroups filtering on a state that
does not exist are answered as Kafka answers them""")
def test_group_request_edges(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    leader = ClassicMember(s, "leader", group, (topic,))
    leader.join()
    leader.conn.call(ApiKey.SYNC_GROUP, keep=("assignment",), group_id=group,
                     generation_id=leader.generation, member_id=leader.member_id,
                     protocol_type="consumer", protocol_name="range", assignments=[
                         {"member_id": leader.member_id, "assignment": b""},
                         {"member_id": "not-a-member", "assignment": b""}])
    leader.commit(topic, {0: 1})
    big = ClassicMember(s, "big", s.name("big"), (topic,))
    big.conn.call(ApiKey.OFFSET_COMMIT, keep=("topics",), group_id=big.group,
                  generation_id_or_member_epoch=-1, member_id="", topics=[
                      {"name": topic, "partitions": [{"partition_index": 0,
                                                      "committed_offset": 1,
                                                      "committed_metadata": "m" * 5000}]}])
    admin = s.conn("admin")
    admin.call(ApiKey.LEAVE_GROUP, keep=("members",), group_id=group, members=[])
    admin.call(ApiKey.DESCRIBE_GROUPS, keep=("groups",), groups=[""])
    admin.call(ApiKey.DELETE_GROUPS, keep=("results",), groups_names=[""])
    answer = admin.call(ApiKey.LIST_GROUPS, states_filter=["Bogus"], types_filter=["bogus"])
    s.note("listed", groups=[g.group_id for g in answer.groups
                             if g.group_id.startswith(s.name(""))])
    leader.heartbeat()
