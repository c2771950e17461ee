"""At start the console reads what __roster_group_events already holds, but only the tail of
each partition: a broker with months of events must not block its loop reading them all, nor
hold them all in memory. Events written by the recorder's own batch writer into a real log."""
from types import SimpleNamespace

from roster.log.api import LogConfig
from roster.log.memory import MemoryLog
from roster.observability import http
from roster.observability.event_log import EVENTS_TOPIC, _batches
from roster.observability.events import GroupEvent, Trigger


def event(group_id: str, generation: int) -> GroupEvent:
    return GroupEvent(group_id=group_id, protocol="classic", kind="generation",
                      generation=generation, trigger=Trigger("member_joined"),
                      at_ms=1_000 + generation, started_ms=1_000 + generation)


def broker_with(*partitions: list[GroupEvent]):
    logs = []
    for events in partitions:
        log = MemoryLog(LogConfig(max_message_bytes=64 << 20, retention_ms=-1),
                        clock=lambda: 2_000)
        for batch, _ in _batches(events):
            log.append(batch)
        logs.append(log)
    topic = SimpleNamespace(partitions=logs)
    return SimpleNamespace(topics={EVENTS_TOPIC: topic})


def test_backfill_reads_only_the_newest_events_of_each_partition(monkeypatch):
    monkeypatch.setattr(http, "BACKFILL_EVENTS", 50)
    monkeypatch.setattr(http, "PER_GROUP", 1_000)
    busy = [event("busy", g) for g in range(1, 301)]
    quiet = [event("quiet", g) for g in range(1, 11)]
    store = http.EventStore()

    loaded = store.backfill(broker_with(busy, quiet))

    assert loaded == 50 + 10
    assert [e.generation for e in store.events("busy")] == list(range(251, 301))
    assert [e.generation for e in store.events("quiet")] == list(range(1, 11))


def test_backfill_of_no_topic_loads_nothing():
    assert http.EventStore().backfill(SimpleNamespace(topics={})) == 0


def test_the_store_keeps_the_most_recently_active_groups_only(monkeypatch):
    monkeypatch.setattr(http, "MAX_GROUPS", 3)
    store = http.EventStore()
    for name in ("a", "b", "c"):
        store.add([event(name, 1)])
    store.add([event("a", 2)])          # a is active again: b is now the least recent
    store.add([event("d", 1)])          # a fourth group: b is forgotten, counts and all

    assert store.events("b") == [] and store.count("b", "generation") == 0
    assert [e.generation for e in store.events("a")] == [1, 2]
    assert store.count("a", "generation") == 2
    assert [store.count(g, "generation") for g in ("c", "d")] == [1, 1]
