"""A streams group's initial rebalance delay and assignment interval (Kafka's defaults: 3 s and
1 s), on the manual clock: the first target waits for the delay (status 5 ASSIGNMENT_DELAYED
meanwhile, in Kafka 4.4's words), computed by the delay's timer; later targets at most once per
interval, computed by the first heartbeat after it; a group's own configs change both."""
from __future__ import annotations

from roster.coordinator.results import Result
from roster.coordinator.streams import records as rec
from roster.coordinator.streams.coordinator import (
    StreamsCoordinator,
    StreamsInitialRebalance,
    initial_rebalance_key,
)
from roster.coordinator.streams.messages import StreamsConfig
from roster.coordinator.streams.topology import Status
from tests.unit.coordinator.streams.test_coordinator import Driver, G, tasks_of

INITIAL = (int(Status.ASSIGNMENT_DELAYED),
           "Assignment delayed due to the configured initial rebalance delay.")
INTERVAL = (int(Status.ASSIGNMENT_DELAYED),
            "Assignment delayed due to the configured assignment interval.")


def test_the_defaults_are_kafkas():
    config = StreamsConfig()
    assert (config.initial_delay_ms(G), config.assignment_interval(G)) == (3_000, 1_000)


def test_the_first_assignment_waits_for_the_initial_delay():
    d = Driver(config=StreamsConfig())
    start = d.now
    reply = d.beat("a", 0)
    assert reply.status == (INITIAL,) and reply.active == {}
    assert d.timers[initial_rebalance_key(G)] == (start + 3_000, StreamsInitialRebalance(G))
    d.now += 1_000
    reply = d.beat("b", 0)                       # joins within the delay: it is not moved
    assert reply.status == (INITIAL,) and reply.active == {}
    assert d.timers[initial_rebalance_key(G)][0] == start + 3_000
    # as Kafka 4.4: no target is written meanwhile, and the members wait at the first epoch
    assert (d.group.group_epoch, d.group.assignment_epoch) == (2, 0) and not d.group.target
    assert d.group.members["b"].member_epoch == 1
    d.now = start + 2_999
    d.fire_due()
    assert d.group.assignment_epoch == 0
    d.now = start + 3_000
    d.fire_due()                                 # the timer computes the first target
    assert initial_rebalance_key(G) not in d.timers
    assert d.group.assignment_epoch == 2
    assert d.group.assignment_timestamp == start + 3_000
    assert d.records[-1] == rec.target_epoch_record(G, 2, start + 3_000)
    replies = {m: d.beat(m, d.group.members[m].member_epoch, owned={}) for m in ("a", "b")}
    assert all(r.status == () for r in replies.values())
    given = [tasks_of(r) for r in replies.values()]
    assert all(given) and sum(len(ps) for t in given for ps in t.values()) == 6


def test_targets_are_computed_at_most_once_per_interval():
    d = Driver(config=StreamsConfig(initial_rebalance_delay_ms=0))
    start = d.now
    assert d.beat("a", 0).status == ()           # no initial delay: assigned at once
    assert d.group.assignment_timestamp == start
    d.now = start + 400
    reply = d.beat("b", 0)                       # a new epoch, within the interval
    assert reply.status == (INTERVAL,) and reply.active == {}
    assert (d.group.group_epoch, d.group.assignment_epoch) == (2, 1)
    d.now = start + 999
    assert d.beat("b", d.group.members["b"].member_epoch).status == (INTERVAL,)
    d.now = start + 1_000                        # the first heartbeat after it assigns
    assert d.beat("b", d.group.members["b"].member_epoch).status == ()
    assert (d.group.assignment_epoch, d.group.assignment_timestamp) == (2, start + 1_000)


def test_a_groups_own_configs_decide_and_are_read_live():
    overrides: dict = {G: {"streams.initial.rebalance.delay.ms": 500}}
    d = Driver(config=StreamsConfig(group_overrides=overrides))
    start = d.now
    d.beat("a", 0)
    assert d.timers[initial_rebalance_key(G)][0] == start + 500
    d.now += 500
    d.fire_due()
    assert d.group.assignment_epoch == 2        # its lone member waited at epoch 1
    overrides[G]["streams.assignment.interval.ms"] = 0     # altered while it runs
    d.now += 1
    assert d.beat("b", 0).status == ()
    assert d.group.assignment_epoch == 3


def test_no_target_when_the_group_emptied_meanwhile():
    d = Driver(config=StreamsConfig())
    d.beat("a", 0)
    d.beat("a", -1)                              # leaves during the delay
    d.now += 3_000
    d.fire_due()
    assert (d.group.group_epoch, d.group.assignment_epoch) == (2, 0) and not d.last.records


def test_a_lone_member_gets_its_tasks_once_the_delay_is_over():
    d = Driver(config=StreamsConfig())
    assert d.beat("a", 0).status == (INITIAL,)
    assert d.group.members["a"].member_epoch == 1
    d.now += 3_000
    d.fire_due()
    # a new epoch for it (a target at the one it waited at would not reach it): as Kafka,
    # whose lone member gets its tasks at epoch 2
    assert (d.group.group_epoch, d.group.assignment_epoch) == (2, 2)
    reply = d.beat("a", 1, owned={})
    assert reply.status == () and sum(len(ps) for ps in tasks_of(reply).values()) == 6


def test_a_deleted_group_takes_its_delay_with_it():
    d = Driver(config=StreamsConfig())
    d.beat("a", 0)
    d.beat("a", -1)
    result = Result()
    d.streams.delete_group(G, d.now, result)
    d.carry_out(result)
    assert initial_rebalance_key(G) not in d.timers
    d.now += 1_000
    d.beat("b", 0)                           # the id made again: a delay of its own
    assert d.timers[initial_rebalance_key(G)][0] == d.now + 3_000


def test_the_delay_result_is_replayed_with_its_timestamp():
    d = Driver(config=StreamsConfig())
    d.beat("a", 0)
    d.now += 3_000
    d.fire_due()
    again = StreamsCoordinator(topics=d.image)
    for record in d.records:
        again.replay(record)
    assert again.groups[G].assignment_timestamp == d.group.assignment_timestamp
    assert again.groups[G] == d.group
