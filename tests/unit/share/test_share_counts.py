"""What the pure share core counts and notes for /metrics and the flight recorder
(roster/share/counts.py), with a manual clock: every delivery and redelivery, acknowledgements
by type, lock expiries, archives at the delivery limit; one fact per pass naming members and
offset ranges; counts taken back with a write that failed and dropped with the partition; and
the events the recorder (observability/share_records_recorder.py) makes of the facts, bounded
per group."""
import uuid

from roster.observability.events import ARCHIVED, DEAD_LETTERED, LOCKS_EXPIRED
from roster.observability.share_records_recorder import ShareRecordsRecorder
from roster.share.coordinator import LockCheck, ShareCoordinator
from roster.share.counts import MAX_RANGES, ArchivedAtLimit, LocksExpired, ShareCounts
from roster.share.partition import Limits
from roster.share.states import AckType, RecordState

TOPIC = uuid.UUID("8d2c5f2e-3b1a-4c55-9d3e-0a1b2c3d4e5f")
KEY = ("g", TOPIC, 0)
LIMITS = Limits(delivery_count_limit=2, lock_duration_ms=1000, max_record_locks=100,
                renew_enabled=True)
ACCEPT, RELEASE, REJECT, RENEW = (int(AckType.ACCEPT), int(AckType.RELEASE),
                                  int(AckType.REJECT), int(AckType.RENEW))


def coordinator():
    c = ShareCoordinator(lambda group: LIMITS)
    c.initialize(KEY, 0, 0)
    return c


def test_deliveries_and_acknowledgements_are_counted_by_type():
    c = coordinator()
    c.acquire(KEY, "m", [(0, 9)], 10, False, now=0)
    c.acknowledge(KEY, "m", [(0, 3, [ACCEPT]), (4, 5, [RELEASE]), (6, 6, [REJECT]),
                             (7, 8, [RENEW])], now=10, token=1)
    counts = c.counts[KEY]
    assert (counts.acquired, counts.redelivered, counts.accepted, counts.released,
            counts.rejected, counts.renewed) == (10, 0, 4, 2, 1, 2)
    # the released ones come back with delivery count 2: redelivered
    c.acquire(KEY, "m", [(4, 5)], 10, False, now=20)
    assert (counts.acquired, counts.redelivered) == (12, 2)
    # the window from the start (4, past the accepted front): 4-5, 7-9 held, 6 rejected
    assert c.get(KEY).start == 4
    assert c.get(KEY).state_counts() == {RecordState.AVAILABLE: 0, RecordState.ACQUIRED: 5,
                                         RecordState.ACKNOWLEDGED: 0,
                                         RecordState.ARCHIVED: 1}


def test_a_lock_expiry_pass_is_one_fact_with_members_and_ranges():
    c = coordinator()
    c.acquire(KEY, "a", [(0, 2)], 3, True, now=0)
    c.acquire(KEY, "b", [(3, 4)], 10, False, now=500)
    result = c.expire(LockCheck(KEY), now=1000)       # a's locks only: b's run to 1500
    [fact] = result.facts
    assert isinstance(fact, LocksExpired)
    assert (fact.members, fact.records, fact.archived, fact.now) == \
        ((("a", ((0, 2),), 0),), 3, 0, 1000)
    result = c.expire(LockCheck(KEY), now=1500)
    assert [f.members for f in result.facts] == [(("b", ((3, 4),), 0),)]
    assert c.counts[KEY].lock_expired == 5
    # second delivery, then the locks expire again: archived at the limit (2), one fact each
    c.acquire(KEY, "a", [(0, 4)], 10, False, now=2000)
    result = c.expire(LockCheck(KEY), now=3000)
    expired, archived = result.facts
    assert (expired.records, expired.archived) == (5, 5)
    assert isinstance(archived, ArchivedAtLimit)
    assert (archived.member, archived.cause, archived.delivery_count, archived.ranges,
            archived.records) == ("a", "lock_expired", 2, ((0, 4),), 5)
    assert (c.counts[KEY].archived, c.counts[KEY].redelivered) == (5, 5)
    assert c.get(KEY).start == 5        # every record delivered


def test_released_at_the_limit_is_archived_with_its_cause():
    c = coordinator()
    c.acquire(KEY, "m", [(0, 0)], 1, True, now=0)
    c.acknowledge(KEY, "m", [(0, 0, [RELEASE])], now=1, token=1)
    c.acquire(KEY, "m", [(0, 0)], 1, True, now=2)
    result = c.acknowledge(KEY, "m", [(0, 0, [RELEASE])], now=3, token=2)
    [fact] = result.facts
    assert (fact.cause, fact.member, fact.ranges) == ("release", "m", ((0, 0),))
    c.acquire(KEY, "m", [(1, 1)], 1, True, now=4)
    c.acquire(KEY, "n", [(2, 2)], 1, True, now=4)
    result = c.release_member("g", "m", None, now=5)
    assert result.facts == []           # first delivery: released, not archived
    assert c.counts[KEY].released == 3


def test_many_offsets_are_listed_as_bounded_ranges():
    c = coordinator()
    c.acquire(KEY, "m", [(0, 99)], 100, False, now=0)
    # every other record accepted: the rest expire as 50 one-offset runs
    c.acknowledge(KEY, "m", [(o, o, [ACCEPT]) for o in range(0, 100, 2)], now=1, token=1)
    [fact] = c.expire(LockCheck(KEY), now=1000).facts
    [(member, runs, left_out)] = fact.members
    assert len(runs) == MAX_RANGES and runs[0] == (1, 1)
    assert left_out == 50 - MAX_RANGES and fact.records == 50


def test_counts_of_a_failed_write_are_taken_back_and_go_with_the_partition():
    c = coordinator()
    c.acquire(KEY, "m", [(0, 4)], 10, False, now=0)
    result = c.acknowledge(KEY, "m", [(0, 4, [ACCEPT])], now=1, token=1)
    assert c.counts[KEY].accepted == 5
    c.revert(result.changes, now=2)     # its record was not written
    assert c.counts[KEY].accepted == 0 and c.counts[KEY].acquired == 5
    c.dead_lettered(KEY, 3)
    assert c.counts[KEY].dead_lettered == 3
    c.delete([KEY], now=3)
    assert KEY not in c.counts
    c.dead_lettered(KEY, 1)             # too late: nothing comes back for a gone partition
    assert KEY not in c.counts


def test_the_recorder_makes_bounded_events_of_the_facts():
    recorder = ShareRecordsRecorder(lambda topic_id: "orders", per_window=2, window_ms=1000)
    fact = LocksExpired(KEY, 5, (("a", ((0, 2), (5, 5)), 0),), 4, 0)
    [event] = recorder.derive([fact])
    assert (event.kind, event.protocol, event.group_id, event.generation,
            event.trigger.member_id) == (LOCKS_EXPIRED, "share", "g", -1, "a")
    assert "4 acquisition lock(s) expired on orders-0: a held 0-2,5" in event.trigger.detail
    assert event.extra["members"] == [{"member_id": "a", "ranges": [[0, 2], [5, 5]],
                                       "left_out": 0}]
    archived = ArchivedAtLimit(KEY, 6, "a", "release", 5, ((7, 9),), 0, 3)
    assert recorder.derive([archived])[0].kind == ARCHIVED
    # the third within the window is left out, and told by the next one after it
    assert recorder.derive([fact]) == []
    assert recorder.dead_lettered(KEY, [(7, 5)], "dlq.orders", 0, now=500) == []
    [later] = recorder.dead_lettered(KEY, [(7, 5), (8, 5)], "dlq.orders", 0, now=1005)
    assert later.kind == DEAD_LETTERED and later.extra["suppressed"] == 2
    assert "written to dead-letter topic dlq.orders-0: offsets 7-8" in later.trigger.detail
    assert event.to_json() and type(event).from_json(later.to_json()) == later


def test_share_counts_add_and_subtract():
    total = ShareCounts(acquired=2)
    total.add(ShareCounts(acquired=1, accepted=1))
    total.add(ShareCounts(accepted=1), -1)
    assert (total.acquired, total.accepted, bool(ShareCounts())) == (3, 0, False)
