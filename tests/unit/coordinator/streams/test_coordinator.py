"""The streams group coordinator's heartbeat, one rule per scenario, with the manual clock: the
join with its topology, the internal topics asked of the edge, the assignment of tasks, their
revocation before they move, static members (a -2 leave keeps the tasks, a rejoin gets them
back, a duplicate instance id is refused), session expiry, a failed write put back, and the
records replayed into an equal group."""
from __future__ import annotations

from roster.coordinator.changes import revert
from roster.coordinator.consumer.model import DictTopicImage, VersionedTopicImage
from roster.coordinator.messages import CommitRequest, OffsetToCommit
from roster.coordinator.results import Reply, Result
from roster.coordinator.streams import records as rec
from roster.coordinator.streams.coordinator import (
    InternalTopicsWanted,
    StreamsCoordinator,
    StreamsSessionDeadline,
    StreamsWritten,
)
from roster.coordinator.streams.heartbeat import StreamsHeartbeat
from roster.coordinator.streams.messages import StreamsConfig
from roster.coordinator.streams.model import MemberState
from roster.coordinator.streams.topology import Status, Subtopology, TopicInfo, Topology
from roster.protocol.errors import ErrorCode

G = "app"
TOPOLOGY = Topology(0, (
    Subtopology("0", source_topics=("in",), repartition_sink_topics=("app-rep",)),
    Subtopology("1", repartition_source_topics=(TopicInfo("app-rep"),),
                state_changelog_topics=(TopicInfo("app-cl", configs=(
                    ("cleanup.policy", "compact"),)),)),
))
SESSION = StreamsCoordinator().config.session_timeout_ms
# the first target at once and each new one on the heartbeat that needs it, as Kafka with
# both delays at 0 (test_assignment_delays.py drives Kafka's defaults)
IMMEDIATE = StreamsConfig(initial_rebalance_delay_ms=0, assignment_interval_ms=0)


class Driver:
    def __init__(self, internal: bool = True, config: StreamsConfig = IMMEDIATE) -> None:
        topics = {"in": (b"i" * 16, 3)}
        if internal:
            topics.update({"app-rep": (b"r" * 16, 3), "app-cl": (b"c" * 16, 3)})
        self.image = DictTopicImage(topics)
        self.streams = StreamsCoordinator(config, topics=self.image)
        self.now = 1_000
        self.records: list = []
        self.timers: dict = {}

    def beat(self, member: str, epoch: int, instance: str | None = None, owned=None,
             fail_write: ErrorCode | None = None, **fields):
        join = epoch == 0
        q = StreamsHeartbeat(
            group_id=G, member_id=member, member_epoch=epoch, instance_id=instance,
            rebalance_timeout_ms=30_000 if join else -1, topology=TOPOLOGY if join else None,
            process_id=f"p-{instance or member}" if join else None,
            active=None if owned is None else owned.get("active", {}),
            standby=None if owned is None else owned.get("standby", {}),
            warmup=None if owned is None else owned.get("warmup", {}),
            client_id="c", client_host="/127.0.0.1", token=member, **fields)
        result = self.streams.heartbeat(q, self.image, self.now)
        return self.carry_out(result, fail_write)

    def carry_out(self, result, fail_write=None):
        self.last = result
        for timer in result.timers:
            if hasattr(timer, "event"):
                self.timers[timer.key] = (timer.deadline_ms, timer.event)
            else:
                self.timers.pop(timer.key, None)
        replies = list(result.replies)
        if fail_write is not None:
            revert(result.changes, self.now)
        else:
            self.records += result.records
        for step in result.after_write:
            assert isinstance(step, StreamsWritten)
            replies += self.streams.write_completed(step, fail_write, self.now).replies
        return replies[0].body if replies else None

    def fire_due(self):
        for key, (deadline, event) in sorted(self.timers.items(), key=lambda kv: kv[1][0]):
            if deadline <= self.now:
                del self.timers[key]
                self.carry_out(self.streams.expire(event, self.now))

    @property
    def group(self):
        return self.streams.groups[G]


def tasks_of(reply):
    return {s: sorted(ps) for s, ps in (reply.active or {}).items()}


def form_three(d: Driver):
    for m in ("a", "b", "c"):
        d.beat(m, 0)
    epoch = d.group.group_epoch
    replies = {m: d.beat(m, d.group.members[m].member_epoch, owned={}) for m in ("a", "b", "c")}
    # the first members' tasks move to the later ones: revoked first, then given
    for m in ("a", "b", "c"):
        member = d.group.members[m]
        replies[m] = d.beat(m, member.member_epoch,
                            owned={"active": dict(member.assigned.active)})
    for m in ("a", "b", "c"):
        member = d.group.members[m]
        replies[m] = d.beat(m, member.member_epoch,
                            owned={"active": dict(member.assigned.active)})
    assert all(d.group.members[m].reconciled_to(epoch) for m in ("a", "b", "c"))
    return replies


def test_a_join_stores_the_topology_and_asks_for_the_missing_internal_topics():
    d = Driver(internal=False)
    reply = d.beat("a", 0)
    assert reply.error is ErrorCode.none and reply.member_epoch == 1
    assert reply.status == ((int(Status.MISSING_INTERNAL_TOPICS),
                             "Internal topics are missing: app-cl, app-rep"),)
    assert reply.active == {}                      # nothing runs before they exist
    (wanted,) = d.last.effects
    assert isinstance(wanted, InternalTopicsWanted)
    assert {(t.name, t.partitions, t.configs) for t in wanted.topics} == {
        ("app-cl", 3, (("cleanup.policy", "compact"),)), ("app-rep", 3, ())}
    assert d.group.topology == TOPOLOGY
    # created: the next heartbeat sees them, the group moves to a new epoch with the tasks
    d.image.topics.update({"app-rep": (b"r" * 16, 3), "app-cl": (b"c" * 16, 3)})
    reply = d.beat("a", 1, owned={})
    assert reply.status == () and reply.member_epoch == 2
    assert tasks_of(reply) == {"0": [0, 1, 2], "1": [0, 1, 2]}


def test_an_incorrectly_partitioned_internal_topic_is_reported():
    d = Driver()
    d.image.topics["app-cl"] = (b"c" * 16, 5)
    reply = d.beat("a", 0)
    assert reply.status == ((int(Status.INCORRECTLY_PARTITIONED_TOPICS),
                             "Existing topic app-cl has different number of partitions: "
                             "expected 3, found 5"),)


def test_three_members_share_six_tasks_and_no_active_task_is_held_twice():
    d = Driver()
    form_three(d)
    held = [(s, p) for m in d.group.members.values()
            for s, ps in m.assigned.active.items() for p in ps]
    assert sorted(held) == [(s, p) for s in ("0", "1") for p in range(3)]
    assert all(len([t for t in held if t in
                    {(s, p) for s, ps in m.assigned.active.items() for p in ps}]) == 2
               for m in d.group.members.values())


def test_a_task_is_revoked_before_another_member_gets_it():
    d = Driver()
    d.beat("a", 0)
    assert d.group.members["a"].assigned.active == {"0": frozenset({0, 1, 2}),
                                                    "1": frozenset({0, 1, 2})}
    d.beat("b", 0)
    b = d.group.members["b"]
    assert b.state is MemberState.UNRELEASED_TASKS and b.assigned.active == {}
    a_epoch = d.group.members["a"].member_epoch
    # a still owns everything: it must revoke first, at its old epoch
    d.beat("a", a_epoch, owned={"active": {"0": [0, 1, 2], "1": [0, 1, 2]}})
    a = d.group.members["a"]
    assert a.state is MemberState.UNREVOKED_TASKS and a.member_epoch == a_epoch
    assert d.beat("b", b.member_epoch, owned={}).active is None   # not released: unchanged
    kept = {s: sorted(ps) for s, ps in a.assigned.active.items()}
    reply = d.beat("a", a_epoch, owned={"active": kept})
    assert reply.member_epoch == d.group.assignment_epoch
    reply = d.beat("b", d.group.members["b"].member_epoch, owned={})
    assert sum(len(ps) for ps in reply.active.values()) == 3


def test_a_static_member_leaving_with_minus_two_keeps_its_tasks_and_gets_them_back():
    d = Driver()
    for m, i in (("a", "ia"), ("b", "ib")):
        d.beat(m, 0, instance=i)
    for _ in range(3):
        for m, i in (("a", "ia"), ("b", "ib")):
            member = d.group.members[m]
            d.beat(m, member.member_epoch, instance=i,
                   owned={"active": dict(member.assigned.active)})
    before = {m: d.group.members[m].assigned for m in ("a", "b")}
    epoch = d.group.group_epoch
    reply = d.beat("a", -2, instance="ia")
    assert reply.member_epoch == -2 and d.group.members["a"].assigned == before["a"]
    # a duplicate of b's instance id is refused while b is in
    refused = d.beat("x", 0, instance="ib")
    assert refused.error is ErrorCode.unreleased_instance_id
    # a's instance comes back under a new member id: the same tasks, no new group epoch
    reply = d.beat("a2", 0, instance="ia")
    assert reply.error is ErrorCode.none and "a" not in d.group.members
    assert d.group.members["a2"].assigned == before["a"]
    assert d.group.group_epoch == epoch and d.group.members["b"].assigned == before["b"]
    assert tasks_of(reply) == {s: sorted(ps) for s, ps in before["a"].active.items()}
    # the old member id is fenced
    assert d.beat("a", 1, instance="ia").error is ErrorCode.fenced_instance_id


def test_a_member_whose_session_ends_is_removed_and_its_tasks_go_to_the_others():
    d = Driver()
    form_three(d)
    epoch = d.group.group_epoch
    d.now += SESSION // 2
    for m in ("a", "b"):
        member = d.group.members[m]
        d.beat(m, member.member_epoch)
    d.now += SESSION // 2 + 1
    d.fire_due()
    assert "c" not in d.group.members and d.group.group_epoch == epoch + 1
    assert set(d.group.members) == {"a", "b"}
    for _ in range(3):       # a and b take c's tasks over
        for m in ("a", "b"):
            member = d.group.members[m]
            d.beat(m, member.member_epoch, owned={"active": dict(member.assigned.active)})
    assert sorted((s, p) for m in d.group.members.values()
                  for s, ps in m.assigned.active.items() for p in ps) == \
        [(s, p) for s in ("0", "1") for p in range(3)]


def test_a_heartbeat_whose_write_fails_leaves_the_group_as_it_was():
    d = Driver()
    d.beat("a", 0)
    before = d.streams.groups[G]
    snapshot = (before.group_epoch, dict(before.members), dict(before.target))
    reply = d.beat("b", 0, fail_write=ErrorCode.not_coordinator)
    assert reply.error is ErrorCode.not_coordinator
    group = d.streams.groups[G]
    assert (group.group_epoch, dict(group.members), dict(group.target)) == snapshot


def test_epochs_are_checked_as_kafka_checks_them():
    d = Driver()
    d.beat("a", 0)
    assert d.beat("a", 7).error is ErrorCode.fenced_member_epoch
    assert d.beat("nobody", 3).error is ErrorCode.unknown_member_id
    q = d.streams.heartbeat(StreamsHeartbeat(group_id=G, member_id="z", member_epoch=0,
                                             token="z"), d.image, d.now)
    assert q.replies[0].body.error is ErrorCode.invalid_request


def test_a_member_commits_with_offset_commit_v9_or_in_a_transaction():
    """Kafka's StreamsGroup.validateOffsetCommit: OffsetCommit before v9 cannot carry the
    member epoch (UNSUPPORTED_VERSION); TxnOffsetCommit's generation field carries it at any
    version."""
    d = Driver()
    d.beat("a", 0)
    epoch = d.group.members["a"].member_epoch

    def refusal(version: int, transactional: bool = False):
        return d.streams.validate_offset_commit(CommitRequest(
            G, generation=epoch, member_id="a", offsets=(OffsetToCommit("in", 0, 5),),
            api_version=version, transactional=transactional), d.now, Result())

    assert refusal(9) is None
    assert refusal(8) is ErrorCode.unsupported_version
    assert refusal(3, transactional=True) is None


def test_the_records_replay_into_the_same_groups():
    d = Driver()
    form_three(d)
    d.beat("a", d.group.members["a"].member_epoch)
    again = StreamsCoordinator(topics=d.image)
    for record in d.records:
        key, value = record.encode()
        again.replay(rec.decode(key, value))
    assert again.groups[G].members == d.group.members
    assert again.groups[G].target == d.group.target
    assert again.groups[G].topology == d.group.topology
    assert (again.groups[G].group_epoch, again.groups[G].assignment_epoch) == \
        (d.group.group_epoch, d.group.assignment_epoch)
    loaded = again.groups_loaded([G], 5_000)
    assert sorted(t.key for t in loaded.timers) == sorted(
        f"streams-session:{G}:{m}" for m in ("a", "b", "c"))
    assert isinstance(loaded.timers[0].event, StreamsSessionDeadline)
    assert not isinstance(loaded, Reply)


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_removed():
    d = Driver()
    d.beat("a", 0)
    d.beat("b", 0)
    a_epoch = d.group.members["a"].member_epoch
    d.beat("a", a_epoch, owned={"active": {"0": [0, 1, 2], "1": [0, 1, 2]}})
    assert d.group.members["a"].state is MemberState.UNREVOKED_TASKS
    for _ in range(2):          # it keeps heartbeating, never saying it gave them up
        d.now += 14_999
        d.beat("a", a_epoch)
        d.beat("b", d.group.members["b"].member_epoch)
        d.fire_due()
    assert "a" in d.group.members           # not yet at its rebalance timeout (30 s)
    d.now += 2
    d.fire_due()
    assert set(d.group.members) == {"b"}
    reply = d.beat("b", d.group.members["b"].member_epoch, owned={})
    assert sum(len(ps) for ps in reply.active.values()) == 6


def test_the_configured_topology_is_kept_until_the_catalog_changes():
    d = Driver(internal=False)
    d.image = d.streams.topics = VersionedTopicImage(d.image.topics)
    assert d.beat("a", 0).status[0][0] == int(Status.MISSING_INTERNAL_TOPICS)
    d.image.topics.update({"app-rep": (b"r" * 16, 3), "app-cl": (b"c" * 16, 3)})
    # the catalog did not say it changed: the heartbeat answers from what it configured
    assert d.beat("a", 1, owned={}).status[0][0] == int(Status.MISSING_INTERNAL_TOPICS)
    d.image.changes += 1
    reply = d.beat("a", 1, owned={})
    assert reply.status == () and reply.member_epoch == 2
    assert tasks_of(reply) == {"0": [0, 1, 2], "1": [0, 1, 2]}
