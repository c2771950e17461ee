"""A share group's record events in the console's memory (kept apart from its generations, out
of the every-group timeline), the in-flight counts `roster groups describe --http` reads from
/metrics' text, and the describe table with and without them."""
from types import SimpleNamespace

from roster.admin.share_in_flight import parse
from roster.admin.share_view import SHARE_VIEW, ShareDescription
from roster.coordinator.triggers import OTHER, Trigger
from roster.observability import events as ev
from roster.observability.http import PER_GROUP_RECORDS, EventStore


def _event(kind: str, at: int, group: str = "g") -> ev.GroupEvent:
    return ev.GroupEvent(group, "share", kind, -1 if kind in ev.RECORD_KINDS else 1,
                         Trigger(OTHER, detail="d"), at, at)


def test_record_events_never_push_generations_out():
    store = EventStore()
    store.add([_event(ev.GENERATION, 0)])
    store.add([_event(ev.LOCKS_EXPIRED, i) for i in range(1, PER_GROUP_RECORDS + 10)])
    assert [e.kind for e in store.events("g")] == [ev.GENERATION]
    records = store.record_events("g")
    assert len(records) == PER_GROUP_RECORDS and records[-1].at_ms == PER_GROUP_RECORDS + 9
    assert [e.kind for e in store.recent(5)] == [ev.GENERATION]
    assert store.count("g", ev.LOCKS_EXPIRED) == PER_GROUP_RECORDS + 9


METRICS = """# HELP roster_share_in_flight_records A share partition's in-flight records by state
# TYPE roster_share_in_flight_records gauge
roster_share_in_flight_records{group="g",partition="0",state="available",topic="t"} 2.0
roster_share_in_flight_records{group="g",partition="0",state="acquired",topic="t"} 5.0
roster_share_in_flight_records{group="g",partition="0",state="acknowledged",topic="t"} 1.0
roster_share_in_flight_records{group="g",partition="0",state="archived",topic="t"} 0.0
roster_share_in_flight_records{group="other",partition="0",state="available",topic="t"} 9.0
# HELP roster_share_lag x
# TYPE roster_share_lag gauge
roster_share_lag{group="g",partition="0",topic="t"} 8.0
"""


def test_in_flight_counts_are_read_from_metrics_text():
    assert parse(METRICS, "g") == {("t", 0): {"available": 2, "acquired": 5,
                                              "acknowledged": 1, "archived": 0}}
    assert parse(METRICS, "nobody") == {}


def _described(in_flight):
    member = SimpleNamespace(
        member_id="m1", member_epoch=3, client_id="c", client_host="/h", rack_id=None,
        subscribed_topic_names=["t"],
        assignment=SimpleNamespace(topic_partitions=[SimpleNamespace(topic_name="t",
                                                                     partitions=[0])]))
    group = SimpleNamespace(group_id="g", group_state="Stable", members=[member],
                            group_epoch=3, assignment_epoch=3, assignor_name="simple")
    return ShareDescription(group, {("t", 0): (4, 8)}, in_flight)


def test_describe_shows_in_flight_columns_only_when_asked():
    plain = SHARE_VIEW.lines(_described(None))
    assert plain[-2].split() == ["TOPIC", "PARTITION", "START-OFFSET", "LAG", "MEMBERS"]
    assert plain[-1].split() == ["t", "0", "4", "8", "m1"]
    lines = SHARE_VIEW.lines(_described(parse(METRICS, "g")))
    assert lines[-2].split() == ["TOPIC", "PARTITION", "START-OFFSET", "LAG", "AVAILABLE",
                                 "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED", "MEMBERS"]
    assert lines[-1].split() == ["t", "0", "4", "8", "2", "5", "1", "0", "m1"]
    # a partition the broker has no counts for (yet): dashes
    assert SHARE_VIEW.lines(_described({}))[-1].split() == \
        ["t", "0", "4", "8", "-", "-", "-", "-", "m1"]
