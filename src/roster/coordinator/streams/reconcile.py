"""Moving one streams member's current tasks towards its target (Kafka's streams
CurrentAssignmentBuilder), as consumer/reconcile.py does for partitions.

A member first gives up the tasks its target no longer holds (UNREVOKED_TASKS: it keeps its
epoch until a heartbeat reports it no longer owns them); then it moves to the target epoch and
receives its target, except active tasks another member still holds (UNRELEASED_TASKS: it gets
them at a later heartbeat, once they are free). So an active task never runs on two members at
once: a stateful task's store is never opened by two processes.
"""
from __future__ import annotations

from collections.abc import Callable

from roster.coordinator.streams.model import (
    EMPTY,
    MemberState,
    StreamsMember,
    TaskId,
    Tasks,
    TaskSets,
    freeze,
    minus,
)


def _intersect(tasks: Tasks, other: Tasks) -> Tasks:
    return freeze((s, ps & other.get(s, frozenset())) for s, ps in tasks.items())


def _union(a: Tasks, b: Tasks) -> Tasks:
    return freeze([*a.items(), *b.items()])


def owns_any(owned: TaskSets | None, pending: TaskSets) -> bool:
    """Whether what the member reports owning still includes any task it must give up; not
    knowing (it sent nothing since) counts as yes."""
    if owned is None:
        return True
    for mine, theirs in ((owned.active, pending.active), (owned.standby, pending.standby),
                         (owned.warmup, pending.warmup)):
        for s, ps in theirs.items():
            if not ps.isdisjoint(mine.get(s, ())):
                return True
    return False


def reconcile(member: StreamsMember, target_epoch: int, target: TaskSets,
              active_elsewhere: Callable[[TaskId, str], bool],
              owned: TaskSets | None) -> StreamsMember:
    """The member's next current assignment. `active_elsewhere(task, member_id)`: another
    member holds the task as active (assigned or still revoking it)."""
    if member.state is MemberState.UNREVOKED_TASKS:
        if owns_any(owned, member.pending_revocation):
            return member
    elif member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    return _next(member, target_epoch, target, active_elsewhere, owned)


def _next(member: StreamsMember, target_epoch: int, target: TaskSets,
          active_elsewhere: Callable[[TaskId, str], bool],
          owned: TaskSets | None) -> StreamsMember:
    current = member.assigned
    revoking = TaskSets(minus(current.active, target.active),
                        minus(current.standby, target.standby),
                        minus(current.warmup, target.warmup))
    if not revoking.is_empty() and owns_any(owned, revoking):
        kept = TaskSets(_intersect(current.active, target.active),
                        _intersect(current.standby, target.standby),
                        _intersect(current.warmup, target.warmup))
        return member.replace(state=MemberState.UNREVOKED_TASKS,
                              previous_member_epoch=member.member_epoch,
                              assigned=kept, pending_revocation=revoking,
                              active_epochs=_epochs(member, member.member_epoch, kept.active,
                                                    revoking.active))
    # what it may take now: an active task nobody else holds (or it holds itself)
    active = []
    unreleased = False
    for s, ps in target.active.items():
        free = set()
        for p in ps:
            if p in current.active.get(s, ()) or not active_elsewhere((s, p), member.member_id):
                free.add(p)
            else:
                unreleased = True
        active.append((s, free))
    assigned = TaskSets(freeze(active), target.standby, target.warmup)
    state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
    return member.replace(state=state, previous_member_epoch=member.member_epoch,
                          member_epoch=target_epoch, assigned=assigned, pending_revocation=EMPTY,
                          active_epochs=_epochs(member, target_epoch, assigned.active))


def _epochs(member: StreamsMember, epoch: int, *held: Tasks) -> dict[TaskId, int]:
    """Each active task's assignment epoch: a task it had keeps its epoch, a new one `epoch`."""
    out: dict[TaskId, int] = {}
    for tasks in held:
        for s, ps in tasks.items():
            for p in ps:
                out[s, p] = member.active_epochs.get((s, p), epoch)
    return out


def union(a: TaskSets, b: TaskSets) -> TaskSets:
    return TaskSets(_union(a.active, b.active), _union(a.standby, b.standby),
                    _union(a.warmup, b.warmup))
