"""Moving one member's current assignment towards the target (Kafka's CurrentAssignmentBuilder).

A member first gives up what the target takes from it (UNREVOKED_PARTITIONS: it keeps its epoch
until it reports, in the owned partitions of a heartbeat, that it no longer holds them, or until
its rebalance timeout fences it); then it moves to the target epoch and receives what the target
gives it, except partitions another member still holds (UNRELEASED_PARTITIONS: it gets them at a
later heartbeat, once they are free). So a partition is never held by two members at once.
"""
from __future__ import annotations

from collections.abc import Callable

from roster.coordinator.consumer.model import Assignment, ConsumerMember, MemberState, PartitionEpochs

Owned = tuple[tuple[bytes, tuple[int, ...]], ...] | None


def owns_any(owned: Owned, assignment: Assignment) -> bool:
    """Whether the partitions the member reports still include any of `assignment`; not
    knowing (owned is None) counts as yes."""
    if owned is None:
        return True
    for topic_id, partitions in owned:
        pending = assignment.get(topic_id)
        if pending and not pending.isdisjoint(partitions):
            return True
    return False


def reports_exactly(owned: Owned, assignment: Assignment) -> bool:
    """Whether the member reports owning exactly `assignment` (not knowing counts as no)."""
    if owned is None:
        return False
    reported = {topic_id: frozenset(partitions) for topic_id, partitions in owned if partitions}
    return reported == {topic_id: parts for topic_id, parts in assignment.items() if parts}


def is_subset(owned: Owned, assignment: Assignment) -> bool:
    if owned is None:
        return False
    for topic_id, partitions in owned:
        if not partitions:
            continue
        mine = assignment.get(topic_id)
        if mine is None or not mine.issuperset(partitions):
            return False
    return True


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[bytes, int], int], owned: Owned) -> ConsumerMember:
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, partition_epoch,
                         owned)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _next(member: ConsumerMember, epoch: int, target_epoch: int, target: Assignment,
          partition_epoch: Callable[[bytes, int], int], owned: Owned) -> ConsumerMember:
    assigned: Assignment = {}
    revoking: Assignment = {}
    unreleased = False
    current = member.assigned
    for topic_id in set(target) | set(current):
        want = target.get(topic_id, frozenset())
        have = current.get(topic_id, frozenset())
        keep = have & want
        give_up = have - want
        add = want - have
        if add:
            free = set()
            for p in add:
                # a partition the member itself still holds (pending revocation from an
                # earlier target) or that nobody holds can be given now
                holder = partition_epoch(topic_id, p)
                if holder == -1 or p in member.pending_revocation.get(topic_id, ()):
                    free.add(p)
                else:
                    unreleased = True
            keep = keep | free
        if keep:
            assigned[topic_id] = frozenset(keep)
        if give_up:
            revoking[topic_id] = frozenset(give_up)
    if revoking and owns_any(owned, revoking):
        # first the member gives these up; it keeps its epoch meanwhile
        kept = {t: current[t] & target.get(t, frozenset()) for t in current
                if current[t] & target.get(t, frozenset())}
        return member.replace(state=MemberState.UNREVOKED_PARTITIONS,
                              previous_member_epoch=member.member_epoch, member_epoch=epoch,
                              assigned=kept, pending_revocation=revoking,
                              assignment_epochs=_epochs(member, target_epoch, kept, revoking))
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.replace(state=state, previous_member_epoch=member.member_epoch,
                          member_epoch=target_epoch, assigned=assigned, pending_revocation={},
                          assignment_epochs=_epochs(member, target_epoch, assigned))


def _epochs(member: ConsumerMember, target_epoch: int, *held: Assignment) -> PartitionEpochs:
    """Each held partition's assignment epoch (KIP-1251): what the member already had keeps
    the epoch it was given at, a partition new to it gets the target's epoch."""
    epochs: PartitionEpochs = {}
    for assignment in held:
        for topic_id, partitions in assignment.items():
            had = member.assigned.get(topic_id, ())
            for p in partitions:
                epochs[topic_id, p] = member.assignment_epoch(topic_id, p) if p in had \
                    else target_epoch
    return epochs
