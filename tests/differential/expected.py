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


# A key "prefix*" applies to every scenario whose name starts with the prefix.
EXPECTED: dict[str, list[Listed]] = {
    "kip848_*": [
        Listed("first KIP-848 epoch#1", "value", 2, 1,
               "open divergence, not on purpose: a new Kafka 4.4 consumer group starts at "
               "group epoch 1, so its first member's join bumps it to 2 (Kafka's log: 'Bumped "
               "group epoch to 2'); roster starts at 0 and answers 1. Clients only echo "
               "epochs, so the traces count epochs from the first one"),
    ],
    "scram_failures": [
        Listed("nobody login#1", "rounds", 1, 2,
               "a SCRAM login for a user that does not exist: Kafka refuses the client's first "
               "message; roster answers it with a made-up salt and refuses the proof, with the "
               "same message, so a client cannot tell unknown users from wrong passwords "
               "(RFC 5802's advice)"),
    ],
    "kip848_offset_commit_epochs": [
        Listed("a OFFSET_COMMIT#2", "errors", ["none"], ["stale_member_epoch"],
               "open divergence, not on purpose: Kafka 4.4 accepts a commit carrying the "
               "member's previous epoch for a partition the member already owned at that "
               "epoch; roster still answers STALE_MEMBER_EPOCH for any epoch but the current "
               "(a Java consumer committing across a rebalance sees a failed commit)"),
        Listed("a OFFSET_COMMIT#2", "topics",
               [{"name": "kip848_offset_commit_epochs.t",
                 "partitions": [{"error_code": "none", "partition_index": 0}]}],
               [{"name": "kip848_offset_commit_epochs.t",
                 "partitions": [{"error_code": "stale_member_epoch", "partition_index": 0}]}],
               "the same divergence, per partition"),
    ],
    "malformed_frames": [
        Listed("ApiVersions v99, v1 header#1", "*", {"outcome": "closed"},
               {"outcome": "answered", "error": "unsupported_version", "still_open": True},
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
        Listed("DELETE_GROUPS#1", "versions", [0, 3], [0, 2],
               "open: roster does not serve DeleteGroups v3 yet (clients fall back to v2)"),
    ],
}
