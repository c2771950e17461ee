"""The share coordinator through its Results, as the coordinator runtime carries them out: what
each operation writes to __share_group_state (Kafka's record layouts), when it answers, the
lock timers, reverting a failed write, snapshots every N updates, and replay from the encoded
records rebuilding every share partition."""
import uuid

from roster.coordinator.results import Cancel, Schedule
from roster.protocol.errors import ErrorCode
from roster.share.coordinator import (
    AckOutcome,
    Answer,
    Available,
    DeadLetters,
    LockCheck,
    ShareCoordinator,
    timer_key,
)
from roster.share.partition import Acquired, Limits
from roster.share.records import SNAPSHOT, UPDATE, decode
from roster.share.states import AckType, RecordState

TOPIC = uuid.UUID("8d2c5f2e-3b1a-4c55-9d3e-0a1b2c3d4e5f")
KEY = ("g", TOPIC, 0)
LIMITS = Limits(delivery_count_limit=2, lock_duration_ms=1000, max_record_locks=100)
ACCEPT, RELEASE, REJECT = int(AckType.ACCEPT), int(AckType.RELEASE), int(AckType.REJECT)


def coordinator(per_snapshot=500):
    return ShareCoordinator(lambda group: LIMITS, per_snapshot)


def roundtrip(records):
    """The records as the topic stores them and replay reads them back."""
    out = []
    for record in records:
        key, value = record.encode()
        decoded = decode(key, value)
        out.append(decoded.__class__(**{**{f: getattr(decoded, f) for f in
                                           decoded.__dataclass_fields__},
                                        "topic_id": uuid.UUID(bytes=decoded.topic_id)}))
    return out


def test_initialize_writes_a_snapshot_once():
    c = coordinator()
    result = c.initialize(KEY, 7, now=1)
    [record] = result.records
    assert (record.kind, record.start_offset, record.batches) == (SNAPSHOT, 7, ())
    assert c.initialize(KEY, 99, now=2).records == []
    assert c.get(KEY).start == 7


def test_acquire_arms_the_lock_timer_and_writes_nothing():
    c = coordinator()
    c.initialize(KEY, 0, 0)
    acquired, result = c.acquire(KEY, "m", [(0, 4)], 10, False, now=100)
    assert acquired == [Acquired(0, 4, 1)]
    assert result.records == []
    assert result.timers == [Schedule(timer_key(KEY), 1100, LockCheck(KEY))]


def test_acknowledge_is_answered_after_its_update_is_written():
    c = coordinator()
    c.initialize(KEY, 0, 0)
    c.acquire(KEY, "m", [(0, 4)], 10, False, 0)
    result = c.acknowledge(KEY, "m", [(0, 1, [ACCEPT]), (2, 2, [REJECT])], 10, token="t")
    assert result.replies == []                  # not before the record is durable
    assert result.after_write[-1] == Answer("t", AckOutcome(None))
    [update] = result.records
    assert update.kind == UPDATE and update.start_offset == 3
    assert result.effects == (DeadLetters(KEY, ((2, 1),)),)
    answered = c.write_completed(result.after_write[-1], None, 11)
    assert answered.replies[0].body == AckOutcome(None)


def test_a_refused_acknowledgement_is_answered_at_once_and_writes_nothing():
    c = coordinator()
    c.initialize(KEY, 0, 0)
    c.acquire(KEY, "m", [(0, 4)], 10, False, 0)
    result = c.acknowledge(KEY, "other", [(0, 0, [ACCEPT])], 10, token="t")
    assert result.records == []
    assert result.replies[0].body.error is ErrorCode.invalid_record_state
    result = c.acknowledge(("g", TOPIC, 9), "m", [(0, 0, [ACCEPT])], 10, token="u")
    assert result.replies[0].body.error is ErrorCode.unknown_topic_or_partition


def test_a_failed_write_is_reverted_then_answered_with_the_failure():
    c = coordinator()
    c.initialize(KEY, 0, 0)
    c.acquire(KEY, "m", [(0, 4)], 10, False, 0)
    result = c.acknowledge(KEY, "m", [(0, 4, [ACCEPT])], 10, token="t")
    assert c.get(KEY).start == 5
    c.revert(result.changes, 11)
    assert c.get(KEY).start == 0
    assert c.get(KEY).records[0].state is RecordState.ACQUIRED
    rearmed, answered = (c.write_completed(step, ErrorCode.coordinator_not_available, 11)
                         for step in result.after_write)
    # the records are acquired again: their lock timer is set again
    assert rearmed.timers == [Schedule(timer_key(KEY), 1000, LockCheck(KEY))]
    assert answered.replies[0].body.error is ErrorCode.coordinator_not_available


def test_lock_expiry_releases_then_archives_at_the_limit():
    c = coordinator()
    c.initialize(KEY, 0, 0)
    c.acquire(KEY, "m", [(0, 0)], 10, False, 0)
    result = c.expire(LockCheck(KEY), 1000)
    assert Available(KEY) in result.effects
    assert result.timers == [Cancel(timer_key(KEY))]
    assert result.records[0].batches[0].state is RecordState.AVAILABLE
    acquired, _ = c.acquire(KEY, "n", [(0, 0)], 10, False, 2000)
    assert acquired == [Acquired(0, 0, 2)]
    result = c.expire(LockCheck(KEY), 3000)      # delivery 2 of 2: archived, a dead letter
    assert result.effects == (DeadLetters(KEY, ((0, 2),)),)
    assert c.get(KEY).start == 1


def test_release_member_releases_its_records_in_every_partition_of_the_group():
    c = coordinator()
    other = ("g", TOPIC, 1)
    for key in (KEY, other):
        c.initialize(key, 0, 0)
        c.acquire(key, "m", [(0, 2)], 10, False, 0)
    result = c.release_member("g", "m", None, 5)
    assert len(result.records) == 2
    assert all(c.get(k).next_fetch_offset() == 0 for k in (KEY, other))


def test_alter_starts_over_with_a_new_state_epoch_and_delete_writes_tombstones():
    c = coordinator()
    c.initialize(KEY, 0, 0)
    c.acquire(KEY, "m", [(0, 2)], 10, False, 0)
    result = c.alter(KEY, 50, 1, token="t")
    [snapshot] = result.records
    assert (snapshot.kind, snapshot.start_offset, snapshot.state_epoch) == (SNAPSHOT, 50, 1)
    result = c.delete([KEY], 2, token="u")
    assert [(r.kind, r.tombstone) for r in result.records] == [(SNAPSHOT, True), (UPDATE, True)]
    assert c.get(KEY) is None
    assert roundtrip(result.records)[0].tombstone


def test_a_snapshot_replaces_every_nth_update():
    c = coordinator(per_snapshot=3)
    c.initialize(KEY, 0, 0)
    kinds = []
    for offset in range(6):
        c.acquire(KEY, "m", [(offset, offset)], 1, False, 0)
        kinds += [r.kind for r in c.acknowledge(KEY, "m", [(offset, offset, [ACCEPT])], 1,
                                                token=offset).records]
    assert kinds == [UPDATE, UPDATE, SNAPSHOT, UPDATE, UPDATE, SNAPSHOT]


def test_replay_rebuilds_every_share_partition():
    c = coordinator(per_snapshot=4)
    written = []
    other = ("h", TOPIC, 3)
    written += c.initialize(KEY, 0, 0).records + c.initialize(other, 10, 0).records
    c.acquire(KEY, "m", [(0, 9)], 100, False, 0)
    written += c.acknowledge(KEY, "m", [(0, 2, [ACCEPT])], 1, "a").records
    written += c.acknowledge(KEY, "m", [(3, 3, [RELEASE])], 1, "b").records
    written += c.acknowledge(KEY, "m", [(4, 4, [REJECT])], 1, "c").records
    written += c.acknowledge(KEY, "m", [(6, 7, [ACCEPT])], 1, "d").records   # the snapshot
    written += c.acknowledge(KEY, "m", [(9, 9, [RELEASE])], 1, "e").records
    c.acquire(other, "x", [(10, 12)], 100, False, 0)
    written += c.acknowledge(other, "x", [(10, 10, [ACCEPT])], 1, "f").records
    assert SNAPSHOT in [r.kind for r in written[3:]]

    replayed = coordinator(per_snapshot=4)
    for record in roundtrip(written):
        replayed.replay(record)
    replayed.loaded()
    p = replayed.get(KEY)
    # 0..2 accepted, 3 released (count 1), 4 rejected, 5 and 8 were acquired (back AVAILABLE,
    # as last written: never, so count 0), 6..7 accepted, 9 released (count 1)
    assert p.start == 3 and p.end == 10
    got = {o: (e.state.name, e.delivery_count) for o, e in sorted(p.records.items())}
    assert got == {3: ("AVAILABLE", 1), 4: ("ARCHIVED", 1), 5: ("AVAILABLE", 0),
                   6: ("ACKNOWLEDGED", 1), 7: ("ACKNOWLEDGED", 1), 8: ("AVAILABLE", 0),
                   9: ("AVAILABLE", 1)}
    q = replayed.get(other)
    # 11..12 were acquired and never written: past the window, read again as new records
    assert q.start == 11 and q.end == 11
    acquired, _ = replayed.acquire(KEY, "m", [(3, 9)], 100, False, 0)
    assert acquired == [Acquired(3, 3, 2), Acquired(5, 5, 1), Acquired(8, 8, 1),
                        Acquired(9, 9, 2)]


def test_replay_of_a_deleted_partition_forgets_it():
    c = coordinator()
    written = c.initialize(KEY, 0, 0).records + c.delete([KEY], 1).records
    replayed = coordinator()
    for record in roundtrip(written):
        replayed.replay(record)
    assert replayed.get(KEY) is None
