"""Where roster differs from Apache Kafka on purpose, scenario by scenario (docs/compatibility.md
gives each reason). The harness asserts each listed difference shows exactly as listed -- the
Kafka value in Kafka's trace, the roster value in roster's -- and that nothing else differs."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Listed:
    step: str      # the trace entry, e.g. "m1 JOIN_GROUP#2"
    field: str     # the entry's key that differs; "*": the whole entry (values are dicts)
    kafka: object
    roster: object
    reason: str


SHARE_INITIALISED_AT_ONCE = (
    "a share member joining is assigned its partitions in the answer to its first heartbeat: "
    "roster initialises the group's share partitions before it answers (its share state is "
    "local); Kafka 4.4 initialises them through its share coordinator after answering, so the "
    "first answer has no partitions and the next heartbeat (5 s later at the default interval) "
    "brings them, with a new epoch")

# A key "prefix*" applies to every scenario whose name starts with the prefix.
EXPECTED: dict[str, list[Listed]] = {
    "streams_*": [
        Listed("first KIP-848 epoch#1", "value", 2, 1,
               "a new streams group's first member epoch: Kafka 4.4 answers 2, roster 1 (every "
               "later epoch moves by the same steps on both; a member only compares epochs)"),
    ],
    # share groups (tests/differential/test_share_groups.py)
    "share_join_assign_leave": [
        Listed("a SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0, 1], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
        Listed("b SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
    ],
    "share_fetch_release_reject": [
        Listed("a SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
    ],
    "share_session_refusals": [
        Listed("a SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
    ],
    "share_delivery_limit_and_dead_letters": [
        Listed("a SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
    ],
    "share_dropped_connection_releases": [
        Listed("a SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
    ],
    "share_renew_holds_the_lock": [
        Listed("a SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
    ],
    "share_alter_delete_offsets": [
        Listed("a SHARE_GROUP_HEARTBEAT#1", "assignment", {"topic_partitions": []},
               {"topic_partitions": [{"partitions": [0], "topic_id": "t1"}]},
               SHARE_INITIALISED_AT_ONCE),
    ],
    "scram_failures": [
        Listed("nobody login#1", "rounds", 1, 2,
               "a SCRAM login for a user that does not exist: Kafka refuses the client's first "
               "message; roster answers it with a made-up salt and refuses the proof, with the "
               "same message, so a client cannot tell unknown users from wrong passwords "
               "(RFC 5802's advice)"),
    ],
    "malformed_frames": [
        Listed("ApiVersions v99, v1 header#1", "*", {"outcome": "closed"},
               {"outcome": "answered", "error": "unsupported_version", "ranges_of": [18],
                "still_open": True},
               "roster answers an ApiVersions at a version it does not know from the frame's "
               "first eight bytes (api key, version, correlation id), so even a header Kafka "
               "cannot parse (no tagged-field section) gets UNSUPPORTED_VERSION; Kafka closes"),
    ],
    "api_versions_group_apis": [
        Listed("OFFSET_COMMIT#1", "versions", [2, 10], [0, 10],
               "roster keeps the OffsetCommit versions Kafka 4.0 removed (KIP-896) so that old "
               "clients (sarama's defaults, kafka-python) still commit"),
        Listed("OFFSET_FETCH#1", "versions", [1, 10], [0, 10],
               "as OffsetCommit: the versions Kafka 4.0 removed stay for old clients"),
    ],
}
