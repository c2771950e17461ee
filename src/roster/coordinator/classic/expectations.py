"""Pre-registered static members (KIP-345's "future work", never shipped by Kafka).

A group may be told up front which static members to expect (group config
`group.expected.instance.ids`) or how many (`group.expected.size`). Then:

- while the group forms (its initial rebalance, from Empty) the coordinator waits until every
  expected member has joined — not `group.initial.rebalance.delay.ms` — and completes the join
  phase the moment the last one does; if some never come, it proceeds at the rebalance timeout
  with those present and logs who was missing. Later rebalances wait the same way, so a
  scale-up (new ids added to the list) rebalances once, when all the new members are in, and
  a scale-down is `roster groups remove-members` (the ids leave the list, then the group);
- a member that is not expected (no instance id, an instance id not in the list, or one more
  static member than the expected size) is refused with GROUP_MAX_SIZE_REACHED, unless the group
  says otherwise (`group.expected.refuse.unexpected=false`: then it is admitted, and logged).

The expectations live outside the core (broker/groups/group_configs.py, a durable file); the edge
hands the coordinator a function group id -> Expected | None, read on every use.
"""
from __future__ import annotations

import logging

from roster.coordinator.messages import JoinReply
from roster.coordinator.results import Result
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinator")
REFUSAL = ErrorCode.group_max_size_reached


@frozen
class Expected:
    instance_ids: frozenset[str] | None = None   # exactly these static members
    size: int | None = None                      # or this many static members
    refuse_unexpected: bool = True

    def complete_with(self, present: set[str]) -> bool:
        """Are all the expected members among these instance ids?"""
        if self.instance_ids is not None:
            return self.instance_ids <= present
        return self.size is not None and len(present) >= self.size

    def missing(self, present: set[str]) -> str:
        if self.instance_ids is not None:
            return ", ".join(sorted(self.instance_ids - present))
        return f"{max((self.size or 0) - len(present), 0)} of {self.size} members"


def expected(ctx, group_id: str) -> Expected | None:
    lookup = ctx.expected
    return None if lookup is None else lookup(group_id)


def unexpected(ctx, group, request) -> str | None:
    """Why this JoinGroup's member is not expected (None: it is, or nothing is expected)."""
    wanted = expected(ctx, request.group_id)
    if wanted is None:
        return None
    instance = request.group_instance_id
    if instance is None:
        return "it has no group.instance.id (the group expects static members only)"
    if wanted.instance_ids is not None:
        if instance not in wanted.instance_ids:
            return (f"instance id {instance} is not in group.expected.instance.ids "
                    f"({', '.join(sorted(wanted.instance_ids))})")
        return None
    known = group.static_members if group is not None else {}
    if wanted.size is not None and instance not in known and len(known) >= wanted.size:
        return f"the group already has its group.expected.size of {wanted.size} static members"
    return None


def screen(ctx, request, now: int) -> Result | None:
    """Before a JoinGroup: the refusal of an unexpected member (None: let it join)."""
    if request.member_id:   # a known member rejoining: it was let in before
        return None
    group = ctx.groups.get(request.group_id)
    why = unexpected(ctx, group, request)
    if why is None:
        return None
    wanted = expected(ctx, request.group_id)
    if not wanted.refuse_unexpected:
        log.info("group %s admits an unexpected member (%s): %s", request.group_id,
                 request.group_instance_id or request.client_id, why)
        return None
    log.warning("group %s refuses a member (%s): %s", request.group_id,
                request.group_instance_id or request.client_id, why)
    result = Result()
    result.reply(request.token, JoinReply(error=REFUSAL, member_id=request.member_id))
    return result


def present(group) -> set[str]:
    """The instance ids of static members parked in this join phase."""
    return {m.group_instance_id for m in group.members.values()
            if m.is_static and group.is_joining(m)}


def forming_complete(ctx, group) -> bool | None:
    """May the join phase complete? True once every expected member has joined (and nobody
    else is still to come), False while some are missing; None if nothing is expected (then
    Kafka's rules decide: the initial rebalance delay, or everyone having rejoined)."""
    wanted = expected(ctx, group.group_id)
    if wanted is None:
        return None
    return group.all_joined() and wanted.complete_with(present(group))


def holds_back(ctx, group) -> bool:
    """An expected member has not joined this phase (yet): the join phase waits for it, up
    to the rebalance timeout. This is also the scale-up KIP-345 sketches: expect new ids and
    the group rebalances once, when all of them have joined."""
    wanted = expected(ctx, group.group_id)
    return wanted is not None and not wanted.complete_with(present(group))


def log_missing(ctx, group) -> None:
    wanted = expected(ctx, group.group_id)
    if wanted is not None and not wanted.complete_with(present(group)):
        log.warning("group %s forms without expected members after the rebalance timeout: "
                    "missing %s", group.group_id, wanted.missing(present(group)))
