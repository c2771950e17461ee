"""OffsetCommit, OffsetFetch and OffsetDelete for classic and simple groups (reference §5).

A commit becomes one record per partition; it is applied to the group (through replay, the same
path a restart takes) only once those records are written, and answered then.
"""
from __future__ import annotations

from roster.coordinator import records, tombstones
from roster.coordinator.continuations import OffsetsCommitted, OffsetsDeleted
from roster.coordinator.group import Group
from roster.coordinator.messages import (
    CommitReply,
    CommitRequest,
    FetchedOffset,
    OffsetDeleteReply,
)
from roster.coordinator.rebalance import reschedule_heartbeat
from roster.coordinator.results import Result
from roster.coordinator.states import OFFSET_COMMIT, OFFSET_DELETE, Action, GroupState, Refuse
from roster.coordinator.validation import member_error
from roster.protocol.errors import ErrorCode

S = GroupState
GROUP_ID_NOT_FOUND_FROM = 9


def commit(ctx, request: CommitRequest, now: int) -> Result:
    result = Result()
    group = ctx.groups.get(request.group_id)
    error = None
    if group is None:
        if request.generation < 0:  # admin tools and assign() users: a "simple" group
            group = ctx.create_group(request.group_id, now)
        elif request.api_version >= GROUP_ID_NOT_FOUND_FROM:
            error = ErrorCode.group_id_not_found
        else:
            error = ErrorCode.illegal_generation
    if error is None:
        error = _validate(group, request)
    if error is not None:
        result.reply(request.token, CommitReply(tuple(
            (o.topic, o.partition, error) for o in request.offsets)))
        return result

    member = group.members.get(request.member_id)
    if member is not None and group.state in (S.STABLE, S.PREPARING_REBALANCE):
        reschedule_heartbeat(result, group, member, now)
    expire = now + request.retention_ms if request.retention_ms >= 0 else -1
    errors = []
    written = []
    for o in request.offsets:
        metadata = o.metadata or ""
        if len(metadata) > ctx.config.offset_metadata_max_bytes:
            errors.append((o.topic, o.partition, ErrorCode.offset_metadata_too_large))
            continue
        errors.append((o.topic, o.partition, ErrorCode.none))
        written.append(records.offset_commit(group.group_id, o.topic, o.partition, o.offset,
                                             o.leader_epoch, metadata,
                                             now if o.commit_timestamp == -1 else o.commit_timestamp,
                                             expire))
    result.records.extend(written)
    result.after_write.append(OffsetsCommitted(request.token, tuple(errors), tuple(written)))
    return result


def _validate(group: Group, request: CommitRequest) -> ErrorCode | None:
    answer = OFFSET_COMMIT[group.state]
    if type(answer) is Refuse:
        return answer.error
    # a simple group's commit (admin tools, assign() users) names nobody to check
    if not (request.generation < 0 and group.state is S.EMPTY):
        error = _caller_error(group, request)
        if error is not None:
            return error
    return None if answer is ErrorCode.none else answer


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


def commit_written(ctx, step: OffsetsCommitted, error: ErrorCode | None,
                   result: Result) -> None:
    if error is None:
        for record in step.records:
            ctx.replay(record)
        answers = step.answers
    else:
        answers = tuple((topic, partition, error) for topic, partition, _ in step.answers)
    result.reply(step.token, CommitReply(answers))


def fetch(ctx, group_id: str, wanted: list[tuple[str, int]] | None) -> list[FetchedOffset]:
    """Committed offsets; `wanted` None means every partition the group has an offset for."""
    group = ctx.groups.get(group_id)
    offsets = group.offsets if group is not None and group.state is not S.DEAD else {}
    if wanted is None:
        wanted = sorted(offsets)
    answers = []
    for topic, partition in wanted:
        committed = offsets.get((topic, partition))
        if committed is None:
            answers.append(FetchedOffset(topic, partition))
        else:
            answers.append(FetchedOffset(topic, partition, committed.offset,
                                         committed.leader_epoch, committed.metadata))
    return answers


def delete(ctx, group_id: str, partitions: list[tuple[str, int]], now: int, token) -> Result:
    """OffsetDelete, as states.OFFSET_DELETE says: an Empty group loses any offset asked for;
    a "consumer" group with members keeps those of topics its members subscribe to (answered
    GROUP_SUBSCRIBED_TO_TOPIC); any other group with members is refused (NON_EMPTY_GROUP).
    An Empty group left without offsets is deleted too. Answered once the tombstones are
    written; the offsets go (through replay) only then."""
    result = Result()
    group = ctx.groups.get(group_id)
    answer = OFFSET_DELETE[group.state] if group is not None else ErrorCode.group_id_not_found
    match answer:
        case ErrorCode():
            result.reply(token, OffsetDeleteReply(answer))
            return result
        case Action.DELETE_OFFSETS:
            subscribed: set[str] | None = set()
        case Action.KEEP_SUBSCRIBED_OFFSETS if group.protocol_type == "consumer":
            subscribed = group.subscribed_topics()
        case Action.KEEP_SUBSCRIBED_OFFSETS:
            result.reply(token, OffsetDeleteReply(ErrorCode.non_empty_group))
            return result
        case _:
            raise ValueError(f"OffsetDelete has no answer {answer!r}")
    answers = []
    removed: dict[tuple[str, int], None] = {}  # in request order, each once
    for topic, partition in partitions:
        if subscribed is None or topic in subscribed:
            answers.append((topic, partition, ErrorCode.group_subscribed_to_topic))
            continue
        answers.append((topic, partition, ErrorCode.none))
        if (topic, partition) in group.offsets:
            removed[(topic, partition)] = None
    whole_group = group.state is S.EMPTY and bool(partitions) and \
        len(removed) == len(group.offsets)
    if not removed and not whole_group:
        result.reply(token, OffsetDeleteReply(partitions=tuple(answers)))
        return result
    # as Kafka does, a group losing its last offsets is Dead while that is written
    buried = tombstones.bury(group, removed, whole_group, now, result)
    result.after_write.append(OffsetsDeleted(token, tuple(answers), buried))
    return result


def deletion_written(ctx, step: OffsetsDeleted, error: ErrorCode | None, now: int,
                     result: Result) -> None:
    tombstones.settle(ctx, step.tombstones, error, now)
    if error is not None:  # nothing was deleted: say why, for the whole group
        result.reply(step.token, OffsetDeleteReply(error))
    else:
        result.reply(step.token, OffsetDeleteReply(partitions=step.answers))
