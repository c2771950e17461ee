"""Turning a classic group into a consumer group while its members run (the online upgrade of
KIP-848), governed by `group.consumer.migration.policy` as in Kafka.

The upgrade (Kafka's GroupMetadataManager.validateOnlineUpgrade / convertToConsumerGroup and
ConsumerGroup.fromClassicGroup): the first ConsumerGroupHeartbeat that joins a group id held by
a classic group with members converts it, if the policy allows it, the group speaks the
"consumer" embedded protocol and it is not larger than group.consumer.max.size. Each classic
member becomes a member of the consumer group that still speaks the classic protocol
(classic_members.py serves its JoinGroup/SyncGroup/Heartbeat/LeaveGroup), at an epoch equal to
the classic generation, owning what its last classic assignment gave it, which is also its
target: nothing moves by the conversion itself.

Records, in Kafka's order: the classic group's tombstone, then every member's metadata (with its
ClassicMemberMetadata), the group epoch, every member's target, the target epoch and every
member's current assignment. roster also writes the subscription metadata there (Kafka leaves it
to the next heartbeat, which then bumps the epoch): a conversion changes nothing the members
subscribe to, so it starts no rebalance.

The group's committed offsets stay where they are, in the shard's OffsetStore, kept by group id
whatever type holds the group (coordinator/offset_store.py): neither direction copies them.

The downgrade (Kafka's validateOnlineDowngradeWithFencedMember / convertToClassicGroup and
ClassicGroup.fromConsumerGroup): when the last member speaking the consumer protocol is removed
(it leaves with epoch -1, or its session or rebalance timeout fences it; a static member's
temporary leave, epoch -2, does not count) and classic members remain, the policy allows a
downgrade and they fit in group.max.size, the consumer group becomes a classic group again:
tombstones for every consumer group record, then a classic group record, Stable at a generation
equal to the group epoch, each member holding its target assignment, and a rebalance starts at
once so that the classic members rejoin (their next Heartbeat says REBALANCE_IN_PROGRESS).
A classic static member whose JoinGroup replaces the last consumer-protocol member (same
instance id) downgrades the group too, without a rebalance: it takes that member's place and
partitions (Kafka's validateOnlineDowngradeWithReplacedMemberId).
"""
from __future__ import annotations

import logging

from roster.coordinator.classic import rebalance, sessions
from roster.coordinator.classic.group import Group, Member
from roster.coordinator.classic.records import group_metadata, group_tombstone
from roster.coordinator.classic.states import GroupState
from roster.coordinator.consumer import records as rec
from roster.coordinator.consumer.model import (
    Assignment,
    ClassicMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicImage,
    freeze,
    topic_names,
)
from roster.coordinator.messages import JoinReply, SyncReply
from roster.protocol import consumer_protocol as cp
from roster.protocol.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record

log = logging.getLogger("roster.coordinator")

CONSUMER_PROTOCOL_TYPE = "consumer"

# group.consumer.migration.policy: name -> (upgrade allowed, downgrade allowed)
POLICIES = {
    "bidirectional": (True, True),
    "upgrade": (True, False),
    "downgrade": (False, True),
    "disabled": (False, False),
}
DEFAULT_POLICY = "bidirectional"


def parse_policy(text: str) -> str:
    """Kafka's values, case-insensitive."""
    name = str(text).strip().lower()
    if name not in POLICIES:
        raise ValueError(f"group.consumer.migration.policy must be one of "
                         f"{', '.join(POLICIES)}, not {text!r}")
    return name


def upgrade_enabled(policy: str) -> bool:
    return POLICIES[policy][0]


def downgrade_enabled(policy: str) -> bool:
    return POLICIES[policy][1]


class UpgradeRefused(Exception):
    """Why a classic group stays classic (Kafka answers GROUP_ID_NOT_FOUND with it)."""


def upgrade_records(classic: Group, policy: str, max_size: int,
                    image: TopicImage) -> tuple[Record, list]:
    """The classic group's tombstone and the consumer group's records that replace it; raises
    UpgradeRefused."""
    gid = classic.group_id
    if not upgrade_enabled(policy):
        raise UpgradeRefused(f"Cannot upgrade classic group {gid} to consumer group because the "
                             "online upgrade is disabled.")
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE or not classic.protocol_name:
        raise UpgradeRefused(f"Cannot upgrade classic group {gid} to consumer group because the "
                             "group does not use the consumer embedded protocol.")
    if len(classic.members) > max_size:
        raise UpgradeRefused(f"Cannot upgrade classic group {gid} to consumer group because the "
                             "group size exceeds the consumer group maximum size.")
    epoch = classic.generation
    members = []
    try:
        for m in classic.members.values():
            subscription = decode_subscription(m.metadata(classic.protocol_name))
            assigned = _by_topic_id(decode_assignment(m.assignment).partitions, image)
            members.append(ConsumerMember(
                m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id,
                client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=topic_names(subscription.topics),
                rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=epoch,
                previous_member_epoch=epoch, state=MemberState.STABLE, assigned=assigned,
                classic=ClassicMetadata(m.session_timeout_ms, tuple(m.protocols))))
    except (ConsumerProtocolError, KeyError) as exc:
        raise UpgradeRefused(f"Cannot upgrade the classic group {gid} to consumer group because "
                             "the embedded consumer protocol is malformed.") from exc
    subscribed = {name for m in members for name in m.subscribed_topic_names}
    metadata = {}
    for name in sorted(subscribed):
        found = image.lookup(name)
        if found is not None and found[1] > 0:
            metadata[name] = found
    records = [rec.member_record(gid, m) for m in members]
    records.append(rec.subscription_metadata_record(gid, metadata))
    records.append(rec.epoch_record(gid, epoch))
    records += [rec.target_record(gid, m.member_id, m.assigned) for m in members]
    records.append(rec.target_epoch_record(gid, epoch))
    records += [rec.current_record(gid, m) for m in members]
    return group_tombstone(gid), records


def retire_classic(classic: Group, result) -> None:
    """The classic group goes (its offsets stay, kept by group id apart from it). Its parked
    JoinGroup/SyncGroup requests are told REBALANCE_IN_PROGRESS (they rejoin, into the consumer
    group). Its timers are left to fire on the empty group, where they find nothing to do."""
    for member_id, parked in classic.joining.items():
        result.reply(parked.token, JoinReply(error=ErrorCode.rebalance_in_progress,
                                             member_id=member_id))
    for parked in classic.syncing.values():
        result.reply(parked.token, SyncReply(error=ErrorCode.rebalance_in_progress))
    # answered: no longer parked (should the conversion's write fail, the group comes back
    # without them, and its members rejoin)
    classic.joining.clear()
    classic.syncing.clear()


def _by_topic_id(partitions, image: TopicImage) -> Assignment:
    pairs = []
    for name, ps in partitions:
        found = image.lookup(name)
        if found is not None:   # a topic deleted since: nothing to own
            pairs.append((found[0], (p for p in ps if 0 <= p < found[1])))
    return freeze(pairs)


# -- back to a classic group ----------------------------------------------------------------------

def downgrades(ctx, group: ConsumerGroup, leaving: ConsumerMember,
               replaced: bool = False) -> bool:
    """Whether removing `leaving` turns the group back into a classic group, or, `replaced`,
    whether a classic member taking its place does (Kafka's
    validateOnlineDowngradeWith{FencedMember,ReplacedMemberId}: a group left empty is not
    downgraded; one replaced keeps its size, and may be a group of one)."""
    if leaving.classic is not None or ctx.classic is None:
        return False
    if not replaced and len(group.members) <= 1:
        return False
    if any(m.classic is None for m in group.members.values() if m is not leaving):
        return False
    if not downgrade_enabled(ctx.config.migration_policy):
        log.info("Cannot downgrade consumer group %s to classic group because the online "
                 "downgrade is disabled.", group.group_id)
        return False
    if len(group.members) - (0 if replaced else 1) > ctx.classic.config.max_size:
        log.info("Cannot downgrade consumer group %s to classic group because its group size "
                 "is greater than classic group max size.", group.group_id)
        return False
    return True


def downgrade(ctx, op, group: ConsumerGroup, leaving: ConsumerMember | None, result) -> None:
    """Replace the consumer group by a classic group of its classic members (see the module's
    docstring). When a member left (`leaving`), the classic coordinator rebalances it; when a
    classic static member replaced the last consumer member (None: its JoinGroup already
    moved it into the group), the group stays Stable as it was."""
    gid, now = group.group_id, op.now
    classic = _classic_group(group, leaving, now)
    members = list(group.members.values())
    tombstones = [rec.current_tombstone(gid, m.member_id) for m in members]
    tombstones += [rec.target_tombstone(gid, m.member_id) for m in members]
    tombstones.append(rec.target_epoch_tombstone(gid))
    tombstones += [rec.member_tombstone(gid, m.member_id) for m in members]
    tombstones += [rec.regex_tombstone(gid, regex) for regex in sorted(group.resolved_regex)]
    tombstones += [rec.subscription_metadata_tombstone(gid), rec.group_tombstone(gid)]
    op.write(tombstones, result)
    result.records.append(group_metadata(classic))   # the classic coordinator's record
    op.put_classic(gid, classic)
    log.info("consumer group %s (epoch %d) becomes a classic group of %d members: its last "
             "consumer-protocol member %s", gid, classic.generation, len(classic.members),
             "was replaced" if leaving is None else f"{leaving.member_id} left")
    for member in classic.members.values():
        sessions.reschedule_heartbeat(result, classic, member, now)
    if leaving is not None:
        rebalance.prepare_rebalance(ctx.classic, classic, now, result,
                                    f"Downgrade group {gid} from consumer to classic.")


def _classic_group(group: ConsumerGroup, leaving: ConsumerMember, now: int) -> Group:
    classic = Group(group.group_id, state=GroupState.STABLE, state_timestamp=now,
                    generation=group.group_epoch)
    for m in group.members.values():
        if m is leaving:
            continue
        classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host,
                           m.rebalance_timeout_ms, m.classic.session_timeout_ms,
                           tuple(m.classic.protocols)), CONSUMER_PROTOCOL_TYPE)
    classic.protocol_name = classic.select_protocol()
    for member in classic.members.values():
        member.assignment = encode_assignment(group, group.target.get(member.member_id, {}),
                                              member.metadata(classic.protocol_name))
    return classic


def encode_assignment(group: ConsumerGroup, assignment: Assignment, subscription: bytes) -> bytes:
    """What a classic member is handed: a ConsumerProtocolAssignment of these partitions (by
    topic name), in the version of the member's subscription (Kafka's prepareAssignment)."""
    names = {tid: name for name, (tid, _) in group.subscription_metadata.items()}
    partitions = tuple(sorted((names[tid], tuple(sorted(ps)))
                              for tid, ps in assignment.items() if tid in names))
    version = int.from_bytes(subscription[:2], "big", signed=True)
    version = min(max(version, 0), cp.LATEST_VERSION)
    return cp.encode_assignment(cp.Assignment(partitions, None, version))
