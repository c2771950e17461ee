"""The coordinator actions of `broker.faults`: each an ordinary operation of the group runtime
(broker/groups/runtime.py), so it writes its records, is replayed after a restart and reaches
the flight recorder like any other.

- remove_member: LeaveGroup as the admin API sends it (v3+: a member id, or an instance id
  with an unknown member id).
- fence_instance: JoinGroup with the static member's instance id and no member id, the
  protocols it joined with: Kafka's replacement of a static member by a new process; the
  member that held the id is fenced (FENCED_INSTANCE_ID on its next request). The new
  holder never heartbeats, so its session ends it later.
- force_rebalance: the classic group's rebalance begun as the coordinator begins one (its
  members hear REBALANCE_IN_PROGRESS and rejoin), through the runtime's apply.
"""
from __future__ import annotations

from roster.broker.faults.rules import FaultError
from roster.coordinator import triggers as tr
from roster.coordinator.classic.rebalance import prepare_rebalance
from roster.coordinator.messages import JoinRequest, LeaveIdentity, LeaveRequest
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode

REASON = "removed by a test (roster test mode)"
FORCED = "forced by a test (roster test mode)"


def _classic(broker, group_id: str):
    """The classic group `group_id`, or FaultError saying why not."""
    held_by = broker.groups.shard.type_of(group_id).name
    if held_by != "classic":
        raise FaultError(f"group {group_id!r} is a {held_by} group: fence_instance and "
                         "force_rebalance act on classic groups (remove_member works on "
                         "every type)")
    group = broker.groups.shard.type_named("classic").groups.get(group_id)
    if group is None or not group.members:
        raise FaultError(f"group {group_id!r}: no classic group with members by this id "
                         "(fence_instance and force_rebalance act on classic groups)")
    return group


async def remove_member(broker, group_id: str, member_id: str | None,
                        instance_id: str | None) -> dict:
    groups = broker.groups
    reply = await groups.leave(LeaveRequest(
        group_id, (LeaveIdentity(member_id or "", instance_id, REASON),),
        token=groups.new_token()))
    errors = [r.error for r in getattr(reply, "members", ())]
    error = reply.error if reply.error is not ErrorCode.none else next(
        (e for e in errors if e is not ErrorCode.none), ErrorCode.none)
    return {"group": group_id, "member_id": member_id, "instance_id": instance_id,
            "error": error.name.upper()}


async def fence_instance(broker, group_id: str, instance_id: str) -> dict:
    group = _classic(broker, group_id)
    holder = group.static_member_id(instance_id)
    if holder is None:
        raise FaultError(f"group {group_id!r} has no static member {instance_id!r}")
    member = group.members[holder]
    groups = broker.groups
    reply = await groups.join(JoinRequest(
        group_id=group_id, member_id="", group_instance_id=instance_id,
        protocol_type=group.protocol_type or "consumer", protocols=member.protocols,
        session_timeout_ms=member.session_timeout_ms,
        rebalance_timeout_ms=member.rebalance_timeout_ms, client_id="roster-test-mode",
        client_host="/127.0.0.1", reason=FORCED, token=groups.new_token()))
    return {"group": group_id, "instance_id": instance_id, "fenced_member_id": holder,
            "member_id": reply.member_id, "error": reply.error.name.upper()}


async def force_rebalance(broker, group_id: str) -> dict:
    group = _classic(broker, group_id)
    classic = broker.groups.shard.type_named("classic")

    def step(now: int) -> Result:
        result = Result()
        if group.state.name in ("STABLE", "COMPLETING_REBALANCE"):
            prepare_rebalance(classic, group, now, result, FORCED,
                              tr.Trigger(tr.OTHER, detail=FORCED))
        return result
    groups = broker.groups
    groups.apply(step(groups.now_ms()))
    return {"group": group_id, "state": group.state.name}
