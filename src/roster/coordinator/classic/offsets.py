"""What a classic group answers the shard about offsets (the offsets themselves
live in the shard's OffsetStore, offset_store.py): who may commit, which offsets OffsetDelete
keeps, and how they age (offsets.retention.minutes, as Kafka decides it):

- a classic group that is Empty: every offset, counted from when the group became Empty;
- a Stable group of protocol type "consumer": only offsets of topics no member subscribes to any
  more, counted from their commit;
- a simple group (no protocol type, e.g. commits from assign() users or admin tools): every
  offset, counted from its commit;
- any other group: nothing expires (an explicit expire timestamp aside, offset_store.py).
"""
from __future__ import annotations

from roster.coordinator.classic.changes import SimpleGroupCreated
from roster.coordinator.classic.group import Group
from roster.coordinator.classic.rebalance import reschedule_heartbeat
from roster.coordinator.classic.states import OFFSET_COMMIT, OFFSET_DELETE, Action, GroupState, Refuse
from roster.coordinator.classic.validation import member_error
from roster.coordinator.messages import CommitRequest
from roster.coordinator.offset_store import OffsetExpiry
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode

S = GroupState
GROUP_ID_NOT_FOUND_FROM = 9


def validate_commit(ctx, request: CommitRequest, now: int, result: Result) -> ErrorCode | None:
    """A commit naming no group member (generation -1) to an unknown group makes a "simple"
    group (a change: gone again if the offsets are not written). A member's commit counts as
    hearing from it (its session timer moves)."""
    group = ctx.groups.get(request.group_id)
    if group is None:
        if request.generation >= 0:
            return ErrorCode.group_id_not_found \
                if request.api_version >= GROUP_ID_NOT_FOUND_FROM else ErrorCode.illegal_generation
        group = ctx.create_group(request.group_id, now)   # admin tools and assign() users
        result.changes.append(SimpleGroupCreated(ctx.groups, group))
    error = _validate(group, request)
    if error is not None:
        return error
    member = group.members.get(request.member_id)
    # (a transactional commit, like Kafka's, is not heard as a heartbeat)
    if member is not None and group.state in (S.STABLE, S.PREPARING_REBALANCE) \
            and not request.transactional:
        reschedule_heartbeat(result, group, member, now)
    return None


def _validate(group: Group, request: CommitRequest) -> ErrorCode | None:
    answer = OFFSET_COMMIT[group.state]
    if type(answer) is Refuse:
        return answer.error
    # a simple group's commit (admin tools, assign() users) names nobody to check
    if not (request.generation < 0 and group.state is S.EMPTY):
        error = _caller_error(group, request)
        if error is not None:
            return error
    # Kafka's ClassicGroup.validateOffsetCommit lets a transactional commit of the current
    # generation through while its assignment is handed out (CompletingRebalance)
    return None if answer is ErrorCode.none or request.transactional else answer


def _caller_error(group: Group, request: CommitRequest) -> ErrorCode | None:
    if request.generation >= 0 or request.member_id or request.group_instance_id is not None:
        error = member_error(group, request.member_id, request.group_instance_id)
        if error is not None:
            return error
        if request.generation != group.generation:
            return ErrorCode.illegal_generation
    elif group.state is not S.EMPTY:
        return ErrorCode.unknown_member_id
    return None


def validate_delete(group: Group | None) -> ErrorCode | None:
    """OffsetDelete, as states.OFFSET_DELETE says: an Empty group loses any offset asked for;
    a "consumer" group with members keeps those of topics its members subscribe to (see
    subscribed); any other group with members is refused (NON_EMPTY_GROUP)."""
    answer = OFFSET_DELETE[group.state] if group is not None else ErrorCode.group_id_not_found
    match answer:
        case ErrorCode():
            return answer
        case Action.DELETE_OFFSETS:
            return None
        case Action.KEEP_SUBSCRIBED_OFFSETS if group.protocol_type == "consumer":
            return None
        case Action.KEEP_SUBSCRIBED_OFFSETS:
            return ErrorCode.non_empty_group
        case _:
            raise ValueError(f"OffsetDelete has no answer {answer!r}")


def subscribed(group: Group | None) -> set[str] | None:
    """The topics whose offsets OffsetDelete keeps: none in an Empty group; in a "consumer"
    group with members, those they subscribe to (None: unreadable, so any)."""
    if group is None or OFFSET_DELETE[group.state] is Action.DELETE_OFFSETS:
        return set()
    return group.subscribed_topics()


def expiry(group: Group | None) -> OffsetExpiry | None:
    if group is None or group.protocol_type is None:   # a simple group
        return OffsetExpiry()
    if group.state is S.EMPTY:
        return OffsetExpiry(since_ms=group.state_timestamp if group.state_timestamp >= 0
                            else None)
    if group.state is S.STABLE and group.protocol_type == "consumer":
        topics = group.subscribed_topics()
        return None if topics is None else OffsetExpiry(kept=topics)
    return None
