"""Stories about a client, told with a real one (confluent-kafka / librdkafka) against Kafka and
roster: the trace holds each member's rebalance callbacks in order, as kind and partition count
(which partitions is an assignor's choice over member ids Kafka leaves open). How many rounds
or heartbeats a hand-over takes depends on when each client's heartbeat lands, on Kafka too, so
empty incremental assigns are dropped and consecutive callbacks of one kind are merged."""
from __future__ import annotations

from tests.differential.harness import scenario
from tests.interop.test_consumer_protocol import ConsumerProtocolMember
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

QUIET_S = 3.0   # a window in which a rebalance would have reached every member's callbacks


def settle(watch: Watch, members, window_s: float = 1.5) -> None:
    """Until no member's callbacks change for window_s (a cooperative rebalance ends with an
    empty on_assign a moment after the split is reached)."""
    while True:
        counts = [len(m.events) for m in members]
        if watch.quiet(lambda: [len(m.events) for m in members] != counts, window_s) is None:
            return


def callbacks(member) -> list[list]:
    merged: list[list] = []
    for event in member.events:
        if not event.partitions:
            continue
        if merged and merged[-1][0] == event.kind:
            merged[-1][1] += len(event.partitions)
        else:
            merged.append([event.kind, len(event.partitions)])
    return merged


def rolling_bounce(s, member_class, conf: dict) -> None:
    """Three static members join one by one and split six partitions; the last is closed and
    restarted with its group.instance.id; each member's callbacks go to the trace."""
    topic = s.topic("t", 6)
    group = s.name("g")
    watch = Watch()

    def member(name: str):
        return member_class(watch, s.bootstrap, group, topic, name, f"instance-{name}", conf)

    started = []
    try:
        for name in ("a", "b", "c"):
            started.append(member(name).start())
            groups.wait_split(watch, started, 6)
            settle(watch, started)
        for m in started:
            s.note(f"{m.name} formed", callbacks=callbacks(m), owns=len(m.assigned))
        bounced = started.pop()
        bounced.stop()
        again = member("c")
        started.append(again.start())
        watch.wait_for(lambda: len(again.assigned) == 2, 30, "the restarted member's share")
        before = {m.name: len(m.events) for m in started[:2]}
        watch.quiet(lambda: any(len(m.events) != before[m.name] for m in started[:2]), QUIET_S)
        for m in started:
            s.note(f"{m.name} after the bounce", callbacks=callbacks(m), owns=len(m.assigned))
    finally:
        groups.stop_all(started)


@scenario(outcome="""three static confluent-kafka members (cooperative-sticky) join one by one
and split six partitions 2/2/2 through incremental callbacks; one is closed and restarted with
its group.instance.id within the session timeout: it is assigned its two partitions again and
no other member sees a callback""")
def test_client_static_rolling_bounce(s):
    rolling_bounce(s, ConfluentMember, {"partition.assignment.strategy": "cooperative-sticky",
                                        "heartbeat.interval.ms": 300,
                                        "session.timeout.ms": 10000})


@scenario(outcome="""the same with group.protocol=consumer (KIP-848, server-side assignment):
three static members split six partitions 2/2/2; the closed member leaves with epoch -2, its
restart is given its two partitions again and no other member sees a callback""")
def test_client_kip848_static_rolling_bounce(s):
    rolling_bounce(s, ConsumerProtocolMember, {})
