"""OffsetCommit, OffsetFetch and OffsetDelete for classic and simple groups (reference §5).

A commit becomes one record per partition; it is applied to the group (through replay, the same
path a restart takes) only once those records are written, and answered then.
"""
from __future__ import annotations

from roster.coordinator import records
from roster.coordinator.group import Group
from roster.coordinator.messages import (
    CommitReply,
    CommitRequest,
    FetchedOffset,
    OffsetDeleteReply,
)
from roster.coordinator.rebalance import reschedule_heartbeat
from roster.coordinator.results import AfterWrite, Result
from roster.coordinator.states import GroupState
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
    result.after_write.append(AfterWrite("offset-commit", group.group_id, {
        "token": request.token, "errors": tuple(errors), "records": written}))
    return result


def _validate(group: Group, request: CommitRequest) -> ErrorCode | None:
    if group.state is S.DEAD:
        return ErrorCode.coordinator_not_available
    if request.generation < 0 and group.state is S.EMPTY:
        return None
    if request.generation >= 0 or request.member_id or request.group_instance_id is not None:
        error = member_error(group, request.member_id, request.group_instance_id)
        if error is not None:
            return error
        if request.generation != group.generation:
            return ErrorCode.illegal_generation
    elif group.state is not S.EMPTY:
        return ErrorCode.unknown_member_id
    if group.state is S.COMPLETING_REBALANCE:
        return ErrorCode.rebalance_in_progress
    return None


def commit_written(ctx, data: dict, error: ErrorCode | None, result: Result) -> None:
    if error is None:
        for record in data["records"]:
            ctx.replay(record)
        errors = data["errors"]
    else:
        errors = tuple((topic, partition, error) for topic, partition, _ in data["errors"])
    result.reply(data["token"], CommitReply(errors))


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
    """OffsetDelete, as Kafka decides it: an Empty group loses any offset asked for; a
    "consumer" group with members keeps those of topics its members subscribe to (answered
    GROUP_SUBSCRIBED_TO_TOPIC); any other group with members is refused (NON_EMPTY_GROUP).
    An Empty group left without offsets is deleted too. Answered once the tombstones are
    written; the offsets go (through replay) only then."""
    result = Result()
    group = ctx.groups.get(group_id)
    if group is None or group.state is S.DEAD:
        result.reply(token, OffsetDeleteReply(ErrorCode.group_id_not_found))
        return result
    if group.state is S.EMPTY:
        subscribed: set[str] | None = set()
    elif group.protocol_type == "consumer":
        subscribed = group.subscribed_topics()
    else:
        result.reply(token, OffsetDeleteReply(ErrorCode.non_empty_group))
        return result
    answers = []
    removed: dict[tuple[str, int], None] = {}  # in request order, each once
    for topic, partition in partitions:
        if subscribed is None or topic in subscribed:
            answers.append((topic, partition, ErrorCode.group_subscribed_to_topic))
            continue
        answers.append((topic, partition, ErrorCode.none))
        if (topic, partition) in group.offsets:
            removed[(topic, partition)] = None
    tombstones = [records.offset_tombstone(group_id, t, p) for t, p in removed]
    if group.state is S.EMPTY and partitions and len(removed) == len(group.offsets):
        tombstones.append(records.group_tombstone(group_id))
        group.transition_to(S.DEAD, now)  # as Kafka does; nothing joins while it is written
    if not tombstones:
        result.reply(token, OffsetDeleteReply(partitions=tuple(answers)))
        return result
    result.records.extend(tombstones)
    result.after_write.append(AfterWrite("offsets-deleted", group_id, {
        "token": token, "group_id": group_id, "answers": tuple(answers),
        "records": tombstones}))
    return result


def deletion_written(ctx, data: dict, error: ErrorCode | None, result: Result) -> None:
    if error is not None:  # nothing was deleted: say why, for the whole group
        group = ctx.groups.get(data["group_id"])
        if group is not None and group.state is S.DEAD:
            group.deletion_failed()
        result.reply(data["token"], OffsetDeleteReply(error))
        return
    for record in data["records"]:
        ctx.replay(record)
    result.reply(data["token"], OffsetDeleteReply(partitions=data["answers"]))
