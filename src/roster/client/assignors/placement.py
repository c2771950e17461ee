"""The balancing engine of the sticky assignors: keep what members own, then balance by moving
as few owned partitions as possible.

1. Keep: every trusted owner keeps all the partitions it owns (ownership.py decides which).
2. Fill: each unowned partition goes to the least-loaded member subscribed to its topic, topics
   with the fewest subscribers first (they have the fewest places to go).
3. Balance: while some member X can pass a partition, directly or along a chain, to a member
   holding at least two fewer, do so. A chain X -t1-> A -t2-> Y means X gives A a partition of
   t1 and A gives Y one of t2: only X and Y change counts. When no such chain exists anywhere
   the per-member counts are as even as the subscriptions allow (they minimise the sum of
   squared counts, which also minimises the largest and maximises the smallest). Identical
   subscriptions reduce this to "max - min <= 1".

Stickiness in step 3: passing on a partition the giver received in this run ("fresh") costs
nothing, passing one it owned ("kept") costs one move, so chains are searched cheapest first
(0-1 BFS over members and topics). The source is always the most-loaded member, and direct
moves to the least-loaded subscriber are tried before any search; with identical
subscriptions that is all that ever happens, and the number of kept partitions moved is the
minimum any balanced assignment needs.

Cost: the least-loaded subscriber of a topic comes from a heap shared by all topics with the
same subscribers (one heap for identical subscriptions), so keep+fill is O(P log M) and each
direct move O(log M). A chain search or the final "is anything left to move" sweep is linear
in the subscription graph (members x their topics).

Everything iterates lists and insertion-ordered dicts built from the sorted member order,
never sets of strings (their order changes with the hash seed), so runs are reproducible.
"""
from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Mapping, Sequence

from .api import Assignment, TopicPartition

_FAR = 1 << 62  # "not reached" in the chain search


class Placement:
    """Who holds which partition while one sticky assignment is being worked out."""

    def __init__(self, members: Sequence[str], topics_of: Mapping[str, Sequence[str]],
                 owners: Mapping[TopicPartition, str]):
        """`members` in assignor order; `topics_of[m]`: m's existing subscribed topics, sorted;
        `owners`: trusted owners, each subscribed to the topic of what it owns."""
        self._members = list(members)
        self._rank = {m: i for i, m in enumerate(self._members)}
        self._topics_of = {m: tuple(topics_of[m]) for m in self._members}
        self._owner = owners
        self._subscribers: dict[str, list[str]] = {}
        for member in self._members:
            for topic in self._topics_of[member]:
                self._subscribers.setdefault(topic, []).append(member)
        # Partitions held, per member and topic, split by whether the holder owned them before.
        self._kept: dict[str, dict[str, list[int]]] = {m: {} for m in self._members}
        self._fresh: dict[str, dict[str, list[int]]] = {m: {} for m in self._members}
        for (topic, partition), owner in sorted(owners.items()):
            self._kept[owner].setdefault(topic, []).append(partition)
        self._count = {m: sum(map(len, self._kept[m].values())) for m in self._members}
        self._members_at = Counter(self._count.values())
        self._lowest = min(self._count.values(), default=0)
        self._build_subscriber_heaps()

    # ---- least-loaded lookups ------------------------------------------------------------

    def _build_subscriber_heaps(self) -> None:
        """One heap of (count, rank, member) per distinct subscriber list; entries whose count
        is out of date are dropped lazily when they reach the top."""
        heap_of_subscribers: dict[tuple[str, ...], int] = {}
        self._heap_of_topic: dict[str, int] = {}
        self._heaps_of_member: dict[str, list[int]] = {m: [] for m in self._members}
        self._heaps: list[list[tuple[int, int, str]]] = []
        for topic, subscribers in self._subscribers.items():
            key = tuple(subscribers)
            if key not in heap_of_subscribers:
                heap_of_subscribers[key] = len(self._heaps)
                heap = [(self._count[m], self._rank[m], m) for m in subscribers]
                heapq.heapify(heap)
                self._heaps.append(heap)
                for member in subscribers:
                    self._heaps_of_member[member].append(heap_of_subscribers[key])
            self._heap_of_topic[topic] = heap_of_subscribers[key]

    def _least_loaded(self, topic: str) -> str:
        heap = self._heaps[self._heap_of_topic[topic]]
        while heap[0][0] != self._count[heap[0][2]]:
            heapq.heappop(heap)
        return heap[0][2]

    def _set_count(self, member: str, count: int) -> None:
        self._members_at[self._count[member]] -= 1
        self._members_at[count] += 1
        self._count[member] = count
        self._lowest = min(self._lowest, count)
        while self._members_at[self._lowest] == 0:
            self._lowest += 1
        for index in self._heaps_of_member[member]:
            heapq.heappush(self._heaps[index], (count, self._rank[member], member))

    # ---- steps 2 and 3 ------------------------------------------------------------------

    def fill(self, partitions_per_topic: Mapping[str, int]) -> None:
        for topic in sorted(self._subscribers, key=lambda t: (len(self._subscribers[t]), t)):
            for partition in range(partitions_per_topic[topic]):
                if (topic, partition) not in self._owner:
                    member = self._least_loaded(topic)
                    self._fresh[member].setdefault(topic, []).append(partition)
                    self._set_count(member, self._count[member] + 1)

    def balance(self) -> None:
        candidates = self._members
        while candidates:
            self._unload_from_the_top(candidates)
            # Direct moves and searches from the most-loaded member can leave a less-loaded
            # member with a chain to someone two below it; this sweep finds any such member.
            candidates = self._members_with_a_way_down()

    def _unload_from_the_top(self, candidates: Sequence[str]) -> None:
        tops = [(-self._count[m], self._rank[m], m) for m in candidates]
        heapq.heapify(tops)
        while tops:
            negative_count, _, source = heapq.heappop(tops)
            if -negative_count != self._count[source]:
                continue
            if self._count[source] < self._lowest + 2:
                return  # everyone still queued is within one of the least-loaded member
            receiver = self._pass_one_down(source)
            if receiver is not None:
                for member in (source, receiver):
                    heapq.heappush(tops, (-self._count[member], self._rank[member], member))

    def _pass_one_down(self, source: str) -> str | None:
        """Move one partition's worth of load from `source` to a member with at least two
        fewer, as cheaply as possible; the member that gained, or None if there is none."""
        limit = self._count[source] - 2
        has_fresh = any(self._fresh[source].values())
        hop = self._direct_hop(source, limit, self._fresh[source])
        if hop is None and not has_fresh:
            # Every route starts by giving up a kept partition, so a direct one is cheapest.
            hop = self._direct_hop(source, limit, self._kept[source])
        path = [hop] if hop is not None else self._cheapest_chain(source, limit)
        if path is None:
            return None
        for giver, topic, receiver in path:
            self._move(giver, topic, receiver)
        return path[-1][2]

    def _direct_hop(self, source: str, limit: int, holdings: Mapping[str, list[int]]
                    ) -> tuple[str, str, str] | None:
        best = None
        for topic, partitions in holdings.items():
            if partitions:
                receiver = self._least_loaded(topic)
                key = (self._count[receiver], self._rank[receiver], topic)
                if self._count[receiver] <= limit and (best is None or key < best[0]):
                    best = (key, topic, receiver)
        return None if best is None else (source, best[1], best[2])

    def _cheapest_chain(self, source: str, limit: int) -> list[tuple[str, str, str]] | None:
        """0-1 BFS from `source` over members and topics: member -> topic it holds (cost 0 if
        it holds a fresh partition of it, else 1) -> members subscribed to that topic (free).
        Returns the hops (giver, topic, receiver) to the first member found at <= limit."""
        member_cost = {source: 0}
        topic_cost: dict[str, int] = {}
        received_through: dict[str, str] = {}  # member -> topic it would receive
        given_by: dict[str, str] = {}          # topic -> member that would give it
        queue: deque[tuple[int, bool, str]] = deque([(0, True, source)])
        while queue:
            cost, is_member, node = queue.popleft()
            if is_member:
                if cost > member_cost[node]:
                    continue
                if node != source and self._count[node] <= limit:
                    return self._hops_to(node, source, received_through, given_by)
                for topic in self._topics_of[node]:
                    fresh = bool(self._fresh[node].get(topic))
                    if not (fresh or self._kept[node].get(topic)):
                        continue
                    next_cost = cost if fresh else cost + 1
                    if next_cost < topic_cost.get(topic, _FAR):
                        topic_cost[topic] = next_cost
                        given_by[topic] = node
                        if fresh:
                            queue.appendleft((next_cost, False, topic))
                        else:
                            queue.append((next_cost, False, topic))
            else:
                if cost > topic_cost[node]:
                    continue
                for member in self._subscribers[node]:
                    if cost < member_cost.get(member, _FAR):
                        member_cost[member] = cost
                        received_through[member] = node
                        queue.appendleft((cost, True, member))
        return None

    @staticmethod
    def _hops_to(target: str, source: str, received_through: Mapping[str, str],
                 given_by: Mapping[str, str]) -> list[tuple[str, str, str]]:
        hops = []
        member = target
        while member != source:
            topic = received_through[member]
            giver = given_by[topic]
            hops.append((giver, topic, member))
            member = giver
        hops.reverse()
        return hops

    def _move(self, giver: str, topic: str, receiver: str) -> None:
        fresh = self._fresh[giver].get(topic)
        partition = fresh.pop() if fresh else self._kept[giver][topic].pop()
        back_home = self._owner.get((topic, partition)) == receiver
        (self._kept if back_home else self._fresh)[receiver].setdefault(topic, []).append(partition)
        self._set_count(giver, self._count[giver] - 1)
        self._set_count(receiver, self._count[receiver] + 1)

    def _members_with_a_way_down(self) -> list[str]:
        """Members that can still reach (directly or by a chain) a member holding at least two
        fewer. One sweep: from members in ascending load, walk the edges backwards (receiver ->
        topics it subscribes to -> members holding that topic); the first walk to reach a member
        found the lowest load it can reach."""
        holders: dict[str, list[str]] = {}
        for member in self._members:
            for topic in self._topics_of[member]:
                if self._kept[member].get(topic) or self._fresh[member].get(topic):
                    holders.setdefault(topic, []).append(member)
        lowest_reachable: dict[str, int] = {}
        walked_topics: set[str] = set()
        for start in sorted(self._members, key=lambda m: (self._count[m], self._rank[m])):
            if start in lowest_reachable:
                continue
            level = lowest_reachable[start] = self._count[start]
            stack = [start]
            while stack:
                receiver = stack.pop()
                for topic in self._topics_of[receiver]:
                    if topic in walked_topics:
                        continue
                    walked_topics.add(topic)
                    for giver in holders.get(topic, ()):
                        if giver not in lowest_reachable:
                            lowest_reachable[giver] = level
                            stack.append(giver)
        return [m for m in self._members if self._count[m] >= lowest_reachable[m] + 2]

    # ---- result -------------------------------------------------------------------------

    def assignment(self) -> Assignment:
        result: Assignment = {}
        for member in self._members:
            held = [(topic, p) for holdings in (self._kept[member], self._fresh[member])
                    for topic, partitions in holdings.items() for p in partitions]
            held.sort()
            result[member] = held
        return result
