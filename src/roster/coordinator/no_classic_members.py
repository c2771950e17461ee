"""The classic protocol's requests on the id of a group none of whose members speaks it (a
share or a streams group). Kafka 4.4 answers them as its classic paths answer a member they do
not know, not GROUP_ID_NOT_FOUND (read beside Kafka, tests/differential/test_cross_types.py):
JoinGroup INCONSISTENT_GROUP_PROTOCOL, SyncGroup and Heartbeat UNKNOWN_MEMBER_ID, LeaveGroup
UNKNOWN_MEMBER_ID for each member it names. A type that mixes this in takes the "classic"
family (`accepts` and `serves`), so the shard routes those requests to it."""
from __future__ import annotations

from roster.coordinator.messages import JoinReply, LeaveMemberResult, LeaveReply, SyncReply
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode


class NoClassicMembers:
    __slots__ = ()

    def join(self, request, now: int) -> Result:
        result = Result()
        result.reply(request.token, JoinReply(error=ErrorCode.inconsistent_group_protocol))
        return result

    def sync(self, request, now: int) -> Result:
        result = Result()
        result.reply(request.token, SyncReply(error=ErrorCode.unknown_member_id))
        return result

    def leave(self, request, now: int) -> Result:
        result = Result()
        result.reply(request.token, LeaveReply(members=tuple(
            LeaveMemberResult(m.member_id, m.group_instance_id, ErrorCode.unknown_member_id)
            for m in request.members)))
        return result

    def check_in(self, group_id: str, generation: int, member_id: str,
                 instance_id: str | None, now: int, result: Result) -> ErrorCode:
        return ErrorCode.unknown_member_id
