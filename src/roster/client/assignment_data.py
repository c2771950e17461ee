"""What a classic member reads from and writes into the consumer protocol's bytes (the pure
Membership machine's helpers): the assignments a leader hands out, the KIP-814 baseline it
leaves itself in its own, and the subscriptions in a JoinGroup answer's member list."""
from __future__ import annotations

import json

from roster.client.assignors.api import MemberSubscription, TopicPartition
from roster.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_subscription,
    encode_assignment,
)


def assignment_bytes(partitions: list[TopicPartition], user_data: bytes | None = None) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return encode_assignment(Assignment(tuple((t, tuple(sorted(ps)))
                                              for t, ps in sorted(by_topic.items())),
                                        user_data))


# What a leader leaves itself in its own assignment: the partition counts it assigned against,
# so that after a restart with SkipAssignment (KIP-814) it still knows them. Only the leader
# reads its own assignment's user data; other members never see it.
BASELINE_MAGIC = b"roster.kip814.baseline/1\n"


def baseline_bytes(counts: dict[str, int]) -> bytes:
    return BASELINE_MAGIC + json.dumps(counts, sort_keys=True).encode()


def read_baseline(user_data: bytes | None) -> dict[str, int] | None:
    if not user_data or not user_data.startswith(BASELINE_MAGIC):
        return None
    try:
        counts = json.loads(user_data[len(BASELINE_MAGIC):])
    except ValueError:
        return None
    if not isinstance(counts, dict):
        return None
    return {str(t): int(n) for t, n in counts.items() if isinstance(n, int)}


def member_subscription(member) -> MemberSubscription:
    try:
        subscription = decode_subscription(member.metadata)
    except ConsumerProtocolError:
        subscription = Subscription(topics=())
    return MemberSubscription(
        member_id=member.member_id, group_instance_id=member.group_instance_id,
        topics=tuple(subscription.topics),
        owned_partitions=tuple((t, p) for t, parts in subscription.owned_partitions
                               for p in parts),
        generation=subscription.generation_id, rack_id=subscription.rack_id)
