"""The server-side assignors of the consumer group protocol: `uniform` (the default) and
`range`, both sticky. Pure functions of the members' subscriptions, their previous target
assignment, and the partition counts of the subscribed topics.

What both guarantee (tests/unit/coordinator/consumer/test_assignors.py checks it with
hypothesis): every partition of a subscribed topic goes to exactly one member that subscribes
to it; a member keeps what it had unless the balance requires otherwise. `uniform` balances the
whole group: with identical subscriptions every member gets the same number of partitions
within one, and a member joining or leaving moves only the partitions it must (those the
newcomer takes, or those the leaver had). `range` balances each topic on its own, giving each
member a contiguous range of each topic on a fresh assignment (co-partitioning).
"""
from __future__ import annotations

from dataclasses import field

from roster.coordinator.consumer.model import Assignment
from roster.frozen import frozen


@frozen
class MemberSpec:
    topics: frozenset[bytes]                         # subscribed topic ids that exist
    previous: Assignment = field(default_factory=dict)  # its current target assignment
    instance_id: str | None = None
    rack_id: str | None = None


Partitions = dict[bytes, int]          # topic id -> number of partitions
Plan = dict[str, Assignment]           # member id -> assignment


def _build(owned: dict[str, dict[bytes, list[int]]]) -> Plan:
    return {m: {t: frozenset(ps) for t, ps in topics.items() if ps}
            for m, topics in owned.items()}


# -- uniform ---------------------------------------------------------------------------------

def uniform(members: dict[str, MemberSpec], partitions: Partitions) -> Plan:
    if not members:
        return {}
    specs = iter(members.values())
    first = next(specs).topics
    if all(spec.topics == first for spec in specs):
        return _uniform_homogeneous(members, first, partitions)
    return _uniform_general(members, partitions)


def _uniform_homogeneous(members: dict[str, MemberSpec], topics: frozenset[bytes],
                         partitions: Partitions) -> Plan:
    order = sorted(members)
    sizes = {t: partitions.get(t, 0) for t in sorted(topics)}
    total = sum(sizes.values())
    base, extras = divmod(total, len(order))
    taken = {t: bytearray(n) for t, n in sizes.items()}    # 1 once a member keeps it
    kept: dict[str, dict[bytes, list[int]]] = {}
    counts: dict[str, int] = {}
    # 1. everyone keeps what it had and may still have, up to base + 1
    for m in order:
        mine: dict[bytes, list[int]] = {}
        count = 0
        for t, ps in members[m].previous.items():
            n = sizes.get(t)
            if n is None:
                continue
            flags = taken[t]
            keep = [p for p in sorted(ps) if p < n and not flags[p]]
            if count + len(keep) > base + 1:
                keep = keep[:base + 1 - count]
            for p in keep:
                flags[p] = 1
            if keep:
                mine[t] = keep
                count += len(keep)
        kept[m] = mine
        counts[m] = count
    # 2. only `extras` members may hold base + 1: those that already do keep it, in order
    extra_left = extras
    for m in order:
        if counts[m] > base:
            if extra_left > 0:
                extra_left -= 1
            else:  # give one back
                mine = kept[m]
                t = next(reversed(mine))
                p = mine[t].pop()
                if not mine[t]:
                    del mine[t]
                taken[t][p] = 0
                counts[m] -= 1
    # 3. the free partitions fill everyone up to base, then the remaining extras
    free = [(t, p) for t, flags in taken.items() for p in range(len(flags)) if not flags[p]]
    at = 0
    for m in order:
        need = base - counts[m]
        if need > 0:
            mine = kept[m]
            for t, p in free[at:at + need]:
                mine.setdefault(t, []).append(p)
            at += need
            counts[m] = base
    if at < len(free):
        for m in order:
            if at >= len(free):
                break
            if counts[m] == base:
                t, p = free[at]
                kept[m].setdefault(t, []).append(p)
                counts[m] += 1
                at += 1
    return _build(kept)


def _uniform_general(members: dict[str, MemberSpec], partitions: Partitions) -> Plan:
    """Different subscriptions: keep what is still valid, give each free partition to the
    least loaded member that subscribes to its topic, then move partitions from the most to
    the least loaded members (among those subscribing) while that narrows the gap."""
    order = sorted(members)
    owner: dict[tuple[bytes, int], str] = {}
    owned: dict[str, dict[bytes, list[int]]] = {m: {} for m in order}
    counts = dict.fromkeys(order, 0)
    subscribers: dict[bytes, list[str]] = {}
    for m in order:
        for t in members[m].topics:
            if t in partitions:
                subscribers.setdefault(t, []).append(m)
    for m in order:
        spec = members[m]
        for t, ps in spec.previous.items():
            if t not in spec.topics or t not in partitions:
                continue
            n = partitions[t]
            for p in sorted(ps):
                if p < n and (t, p) not in owner:
                    owner[(t, p)] = m
                    owned[m].setdefault(t, []).append(p)
                    counts[m] += 1
    # free partitions: topics with the fewest subscribers first (they have the least choice)
    for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), t)):
        subs = subscribers[t]
        for p in range(partitions[t]):
            if (t, p) in owner:
                continue
            m = min(subs, key=lambda x: (counts[x], x))
            owner[(t, p)] = m
            owned[m].setdefault(t, []).append(p)
            counts[m] += 1
    # balance
    moved = True
    rounds = 0
    while moved and rounds < 10 * len(order) + 100:
        moved = False
        rounds += 1
        for src in sorted(order, key=lambda x: (-counts[x], x)):
            for t in sorted(owned[src]):
                subs = subscribers[t]
                dst = min(subs, key=lambda x: (counts[x], x))
                if counts[src] - counts[dst] >= 2 and owned[src][t]:
                    p = owned[src][t].pop()
                    if not owned[src][t]:
                        del owned[src][t]
                    owned[dst].setdefault(t, []).append(p)
                    owner[(t, p)] = dst
                    counts[src] -= 1
                    counts[dst] += 1
                    moved = True
                    break
            if moved:
                break
    return _build(owned)


# -- range -----------------------------------------------------------------------------------

def range_(members: dict[str, MemberSpec], partitions: Partitions) -> Plan:
    owned: dict[str, dict[bytes, list[int]]] = {m: {} for m in members}
    subscribers: dict[bytes, list[str]] = {}
    for m in sorted(members):
        for t in members[m].topics:
            if t in partitions:
                subscribers.setdefault(t, []).append(m)
    for t, subs in subscribers.items():
        n = partitions[t]
        base, extras = divmod(n, len(subs))
        flags = bytearray(n)
        kept: dict[str, list[int]] = {}
        for m in subs:
            prev = sorted(p for p in members[m].previous.get(t, ()) if p < n and not flags[p])
            kept[m] = prev[:base + 1]
            for p in kept[m]:
                flags[p] = 1
        extra_left = extras
        for m in subs:
            if len(kept[m]) > base:
                if extra_left > 0:
                    extra_left -= 1
                else:
                    flags[kept[m].pop()] = 0
        free = [p for p in range(n) if not flags[p]]
        at = 0
        for m in subs:  # up to base, then one more while extras remain, in member order
            cap = base
            if len(kept[m]) <= base and extra_left > 0:
                cap = base + 1
                extra_left -= 1
            need = cap - len(kept[m])
            if need > 0:
                kept[m].extend(free[at:at + need])
                at += need
        for m, ps in kept.items():
            if ps:
                owned[m][t] = ps
    return _build(owned)


ASSIGNORS = {"uniform": uniform, "range": range_}
DEFAULT_ASSIGNOR = "uniform"
