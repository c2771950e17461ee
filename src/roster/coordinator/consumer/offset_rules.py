"""What a consumer group answers the shard about offsets (Kafka's ConsumerGroup.validateOffset*
methods): its offsets live in the shard's OffsetStore (coordinator/offset_store.py) like any
group's; these say who may commit or fetch them."""
from __future__ import annotations

from roster.coordinator.consumer.model import ConsumerGroup
from roster.coordinator.messages import CommitRequest
from roster.coordinator.offset_store import OffsetExpiry
from roster.protocol.errors import ErrorCode


def validate_commit(group: ConsumerGroup, request: CommitRequest) -> ErrorCode | None:
    """Kafka 4.4's ConsumerGroup.validateOffsetCommit: the member's current epoch commits
    anything; an older one commits only partitions the member has held since that epoch or
    before (their assignment epochs, KIP-1251), so a commit racing a rebalance still lands
    and a zombie's does not; a newer one never. One partition refused refuses the request."""
    epoch = request.generation
    if epoch < 0 and not group.members:
        return None                        # an admin commit to an empty group
    member = group.members.get(request.member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    # a classic member (an upgrade under way) commits with its generation
    refused = ErrorCode.illegal_generation if member.classic is not None \
        else ErrorCode.stale_member_epoch
    if member.classic is None and request.predates_member_epochs:
        return ErrorCode.unsupported_version
    if epoch == member.member_epoch:
        return None
    if epoch > member.member_epoch:
        return refused
    for offset in request.offsets:
        known = group.subscription_metadata.get(offset.topic)
        since = None if known is None else member.assignment_epoch(known[0], offset.partition)
        if since is None or epoch < since:
            return refused
    return None


def validate_fetch(group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode | None:
    """OffsetFetch v9+ from a member (epoch >= 0): the same member and epoch check."""
    if epoch < 0:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    if epoch != member.member_epoch:
        return ErrorCode.stale_member_epoch
    return None


def expiry(group: ConsumerGroup) -> OffsetExpiry:
    """Counted from each commit; what the members subscribe to never expires."""
    return OffsetExpiry(kept=group.subscribed_names())
