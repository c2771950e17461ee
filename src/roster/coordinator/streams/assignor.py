"""The "sticky" task assignor of streams groups, with the semantics of Kafka 4.4.0's
StickyTaskAssignor (group-coordinator streams/assignor), and a warm-up refinement to follow it.

What the assignor does, in order:
- Every active task, stateful or not, in one pass, balanced by a moving quota: ceil(tasks
  left / members with room left), recomputed each time a member reaches it. For each task (by
  partition, then subtopology):
  1. it stays with the member that held it active, while that member is under its quota;
  2. else it goes to a member that holds it as a standby, or reported changelog offsets for it
     (state on its disk, as after a restart with a new member id): standby holders first, each
     group by the largest reported offset sum; the first of them, unless a later one is less
     loaded both as a process and as a member; while under its quota;
  3. the rest (by subtopology, then partition) go to the least loaded process (tasks per
     member; ties: process id), to its least loaded member (ties: member id).
- Then `num_standby_replicas` standbys for each stateful task (by partition then subtopology,
  descending), never on a process that holds the task already (active or another standby):
  each replica first to the task's previous active owner, then to its least loaded previous
  standby holder, each while under the quota on all tasks; the rest go to the least loaded
  processes that do not hold it. A standby that finds no such process is left out (Kafka logs
  a warning).
Kafka 4.4 balances stateful and stateless tasks together (its trunk splits them later) and has
no rack-aware standby placement; neither does this.

The assignor hands out no warm-up tasks, and neither does Kafka 4.4.0: its AssignmentRefiner,
which turns the target into what the members reconcile towards, returns the target as it is.
`refine_with_warmups` is the refinement Kafka's later sources describe, for the coordinator to
call only when StreamsConfig.refine_warmups is set (off by default, as Kafka 4.4 behaves; with 0
warm-ups it returns the target): a stateful active task
that moves to a member whose process has not caught up stays with its current owner while the
new owner warms it up, at most `num_warmup_replicas` at a time; once the lag is within
`acceptable_recovery_lag` it moves.

Every choice is ordered by member and process id, so the same input gives the same output
(Kafka's heaps leave ties to chance).
"""
from __future__ import annotations

import heapq
from dataclasses import field

from roster.coordinator.streams.model import EMPTY, TaskId, TaskSets, freeze, from_task_ids, task_ids
from roster.frozen import frozen


@frozen
class MemberSpec:
    """What the assignor knows of a member: its process, what it holds now (its current
    assignment), and the changelog offsets it reported, summed per task."""

    process_id: str
    current: TaskSets = EMPTY
    task_offsets: dict[TaskId, int] = field(default_factory=dict)


@frozen
class SubtopologySpec:
    subtopology_id: str
    partitions: int
    stateful: bool


def _per_member(tasks: int, members: int) -> int:
    return 0 if members <= 0 else -(-tasks // members)


class _Quota:
    """Kafka's moving quota: ceil(tasks left / members left), a member leaving the count as it
    reaches the quota, so the total spreads within one task per member."""

    __slots__ = ("tasks", "members", "per_member")

    def __init__(self, tasks: int, members: int) -> None:
        self.tasks, self.members = tasks, members
        self.per_member = _per_member(tasks, members)

    def reached(self, count: int) -> None:
        if count == self.per_member:
            self.members -= 1
            self.tasks -= count
            self.per_member = _per_member(self.tasks, self.members)


class _Process:
    __slots__ = ("process_id", "counts", "active", "standby", "tasks")

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.counts: dict[str, int] = {}
        self.active: dict[str, list[TaskId]] = {}
        self.standby: dict[str, list[TaskId]] = {}
        self.tasks: set[TaskId] = set()

    def add_member(self, member_id: str) -> None:
        self.counts[member_id] = 0
        self.active[member_id] = []
        self.standby[member_id] = []

    def load(self) -> float:
        return sum(self.counts.values()) / len(self.counts)

    def key(self) -> tuple:
        return self.load(), self.process_id

    def add(self, member_id: str, task: TaskId, active: bool) -> int:
        (self.active if active else self.standby)[member_id].append(task)
        self.tasks.add(task)
        self.counts[member_id] += 1
        return self.counts[member_id]

    def least_loaded_member(self) -> str:
        return min(self.counts, key=lambda m: (self.counts[m], m))


class _State:
    def __init__(self, members: dict[str, MemberSpec], subtopologies: list[SubtopologySpec],
                 num_standby_replicas: int) -> None:
        self.standbys = num_standby_replicas
        self.tasks: list[TaskId] = []
        self.stateful: list[TaskId] = []
        for s in sorted(subtopologies, key=lambda s: s.subtopology_id):
            ids = [(s.subtopology_id, p) for p in range(s.partitions)]
            self.tasks += ids
            if s.stateful:
                self.stateful += ids
        n = len(members)
        total = len(self.tasks)
        self.active_quota = _Quota(total, n)
        self.total_quota = _Quota(total + len(self.stateful) * num_standby_replicas, n)
        self.processes: dict[str, _Process] = {}
        self.member_process: dict[str, str] = {}
        self.prev_active: dict[TaskId, str] = {}
        candidates: dict[TaskId, list[tuple[int, int, str]]] = {}
        for member_id in sorted(members):
            spec = members[member_id]
            process = self.processes.get(spec.process_id)
            if process is None:
                process = self.processes[spec.process_id] = _Process(spec.process_id)
            process.add_member(member_id)
            self.member_process[member_id] = spec.process_id
            for task in task_ids(spec.current.active):
                self.prev_active[task] = member_id
            held = set(task_ids(spec.current.standby))
            for task in held:
                candidates.setdefault(task, []).append(
                    (0, -spec.task_offsets.get(task, 0), member_id))
            for task, offset in spec.task_offsets.items():
                if task not in held:
                    candidates.setdefault(task, []).append((1, -offset, member_id))
        # previous standby-strength holders, best first
        self.prev_standby = {t: [m for _, _, m in sorted(c)] for t, c in candidates.items()}

    def process_of(self, member_id: str) -> _Process:
        return self.processes[self.member_process[member_id]]

    def add_active(self, member_id: str, task: TaskId) -> None:
        count = self.process_of(member_id).add(member_id, task, True)
        self.active_quota.reached(count)
        self.total_quota.reached(count)


def assign(members: dict[str, MemberSpec], subtopologies: list[SubtopologySpec],
           num_standby_replicas: int = 0) -> dict[str, TaskSets]:
    """The target assignment of every member: active and standby tasks (no warm-ups)."""
    if not members:
        return {}
    st = _State(members, subtopologies, num_standby_replicas)
    _assign_active(st, list(st.tasks))
    if num_standby_replicas > 0:
        _assign_standby(st)
    out = {}
    for process in st.processes.values():
        for member_id in process.counts:
            out[member_id] = TaskSets(from_task_ids(process.active[member_id]),
                                      from_task_ids(process.standby[member_id]))
    return dict(sorted(out.items()))


def _under_quota(st: _State, member_id: str) -> bool:
    return st.process_of(member_id).counts[member_id] < st.active_quota.per_member


def _least_loaded_previous(st: _State, previous: list[str] | None,
                           task: TaskId | None = None) -> str | None:
    """Among a task's previous standby-strength holders (best first), the first, unless a later
    one is less loaded both as a process and as a member; holders whose process already has
    `task` are skipped."""
    best = None
    best_loads = None
    for member_id in previous or ():
        process = st.process_of(member_id)
        if task is not None and task in process.tasks:
            continue
        loads = (process.load(), process.counts[member_id])
        if best is None or (loads[0] < best_loads[0] and loads[1] < best_loads[1]):
            best, best_loads = member_id, loads
    return best


def _assign_active(st: _State, tasks: list[TaskId]) -> None:
    tasks.sort(key=lambda t: (t[1], t[0]))
    left = []
    for task in tasks:            # 1. back to its previous active owner
        owner = st.prev_active.get(task)
        if owner is not None and _under_quota(st, owner):
            st.add_active(owner, task)
        else:
            left.append(task)
    rest = []
    for task in left:             # 2. to a previous standby, warm-up or state holder
        owner = _least_loaded_previous(st, st.prev_standby.get(task))
        if owner is not None and _under_quota(st, owner):
            st.add_active(owner, task)
        else:
            rest.append(task)
    rest.sort()
    heap = [(p.key(), p.process_id) for p in st.processes.values()]
    heapq.heapify(heap)
    for task in rest:             # 3. to the least loaded process
        _, pid = heapq.heappop(heap)
        process = st.processes[pid]
        member_id = process.least_loaded_member()
        count = process.add(member_id, task, True)
        st.active_quota.reached(count)
        st.total_quota.reached(count)
        heapq.heappush(heap, (process.key(), pid))


def _may_take_standby(st: _State, member_id: str, task: TaskId) -> bool:
    process = st.process_of(member_id)
    return task not in process.tasks and process.counts[member_id] < st.total_quota.per_member


def _assign_standby(st: _State) -> None:
    tasks = sorted(st.stateful, key=lambda t: (t[1], t[0]), reverse=True)
    to_least_loaded: list[tuple[TaskId, int]] = []
    for task in tasks:
        for replica in range(st.standbys):
            # to the member that held it active, then to its least loaded previous standby
            # holder, each while under the quota; the rest to the least loaded processes
            prev = st.prev_active.get(task)
            if prev is not None and _may_take_standby(st, prev, task):
                st.total_quota.reached(st.process_of(prev).add(prev, task, False))
                continue
            prev = _least_loaded_previous(st, st.prev_standby.get(task), task)
            if prev is not None and _may_take_standby(st, prev, task):
                st.total_quota.reached(st.process_of(prev).add(prev, task, False))
                continue
            to_least_loaded.append((task, st.standbys - replica))
            break
    to_least_loaded.sort(reverse=True)
    for task, remaining in to_least_loaded:
        for _ in range(remaining):
            eligible = [p for p in st.processes.values() if task not in p.tasks]
            if not eligible:
                break           # not enough processes for the standbys asked for
            process = min(eligible, key=lambda p: (p.load(), p.process_id))
            member_id = process.least_loaded_member()
            st.total_quota.reached(process.add(member_id, task, False))


# -- warm-up refinement ----------------------------------------------------------------------

def refine_with_warmups(current: dict[str, TaskSets], processes: dict[str, str],
                        target: dict[str, TaskSets], stateful: set[str],
                        lags: dict[tuple[str, TaskId], int], num_warmup_replicas: int,
                        acceptable_recovery_lag: int) -> dict[str, TaskSets]:
    """The assignment the members reconcile towards: `target`, except that a stateful active
    task moving to a member whose process has not caught up (`lags[process, task]` unknown or
    above `acceptable_recovery_lag`) stays with its current owner while the new owner warms it
    up, at most `num_warmup_replicas` warm-ups in the group (tasks in order). A task whose
    current owner is gone or not in `current` moves at once. 0 warm-ups: `target` unchanged.

    `current`: member id -> what it holds now; `processes`: member id -> process id."""
    if num_warmup_replicas <= 0:
        return dict(target)
    owner = {t: m for m, sets in current.items() for t in task_ids(sets.active)}
    moves = []
    for m in sorted(target):
        for task in task_ids(target[m].active):
            old = owner.get(task)
            if task[0] in stateful and old is not None and old != m and old in target:
                moves.append((task, old, m))
    budget = num_warmup_replicas
    kept: dict[str, list[TaskId]] = {}      # member -> actives it keeps for now
    given_up: dict[str, list[TaskId]] = {}  # member -> actives it does not get yet
    warmups: dict[str, list[TaskId]] = {}
    for task, old, new in sorted(moves):
        lag = lags.get((processes[new], task))
        if lag is not None and lag <= acceptable_recovery_lag:
            continue                        # caught up: it moves now
        kept.setdefault(old, []).append(task)
        given_up.setdefault(new, []).append(task)
        if budget > 0:
            warmups.setdefault(new, []).append(task)
            budget -= 1
    kept_by_process: dict[str, set[TaskId]] = {}
    for m, tasks in kept.items():
        kept_by_process.setdefault(processes[m], set()).update(tasks)
    out = {}
    for m, sets in target.items():
        active = set(task_ids(sets.active)) - set(given_up.get(m, ())) | set(kept.get(m, ()))
        # a process holds a task once: a standby where the active stays is dropped
        standby = set(task_ids(sets.standby)) - kept_by_process.get(processes[m], set())
        out[m] = TaskSets(from_task_ids(active), from_task_ids(standby),
                          freeze((t[0], [t[1]]) for t in warmups.get(m, ())))
    return out
