"""A share partition's rules on a manual clock (milliseconds passed in): acquisition, the five
acknowledgement types with Kafka 4.4's refusals, the delivery limit, lock expiry, the SPSO,
max record locks and the two acquire modes."""
import pytest

from roster.protocol.errors import ErrorCode
from roster.share.partition import Acquired, AckRefused, Limits, SharePartition, StateBatch
from roster.share.states import AckType, RecordState

LIMITS = Limits(delivery_count_limit=3, lock_duration_ms=1000, max_record_locks=100,
                renew_enabled=True)
GAP, ACCEPT, RELEASE, REJECT, RENEW = (int(t) for t in AckType)


def states(p: SharePartition) -> dict[int, tuple[str, int]]:
    return {o: (e.state.name, e.delivery_count) for o, e in sorted(p.records.items())}


def acquired(p, member="m", batches=((0, 9),), max_records=500, strict=False, now=0,
             limits=LIMITS):
    got, _ = p.acquire(member, list(batches), max_records, strict, limits, now)
    return got


def test_acquire_raises_delivery_count_and_locks_records():
    p = SharePartition(0)
    assert acquired(p, now=100) == [Acquired(0, 9, 1)]
    assert p.start == 0 and p.end == 10
    assert all(e.state is RecordState.ACQUIRED and e.member == "m" and e.deadline == 1100
               for e in p.records.values())
    assert p.next_fetch_offset() == 10
    assert p.lock_deadline() == 1100
    # nothing AVAILABLE: a second fetch of the same batches takes nothing
    assert acquired(p, member="other") == []


def test_accept_moves_the_start_offset_past_the_delivered_prefix():
    p = SharePartition(0)
    acquired(p)
    p.acknowledge("m", [(3, 5, [ACCEPT])], LIMITS, 1)
    assert p.start == 0                     # 0..2 still acquired
    p.acknowledge("m", [(0, 2, [ACCEPT])], LIMITS, 1)
    assert p.start == 6 and p.end == 10
    p.acknowledge("m", [(6, 9, [ACCEPT])], LIMITS, 1)
    assert p.start == 10 and p.end == 10 and p.records == {}


def test_release_makes_records_available_again_with_their_delivery_count():
    p = SharePartition(0)
    acquired(p)
    change = p.acknowledge("m", [(0, 4, [RELEASE])], LIMITS, 1)
    assert change.changed == {0, 1, 2, 3, 4} and not change.dead_letters
    assert p.next_fetch_offset() == 0
    assert acquired(p, member="n", batches=[(0, 9)]) == [Acquired(0, 4, 2)]
    assert p.records[0].member == "n"


def test_reject_and_gap_archive_and_reject_is_a_dead_letter():
    p = SharePartition(0)
    acquired(p)
    change = p.acknowledge("m", [(0, 1, [REJECT]), (2, 2, [GAP])], LIMITS, 1)
    assert change.dead_letters == [(0, 1), (1, 1)]
    assert p.start == 3


def test_per_offset_types():
    p = SharePartition(0)
    acquired(p, batches=[(0, 3)])
    p.acknowledge("m", [(0, 3, [ACCEPT, RELEASE, REJECT, GAP])], LIMITS, 1)
    assert p.start == 1
    assert states(p) == {1: ("AVAILABLE", 1), 2: ("ARCHIVED", 1), 3: ("ARCHIVED", 1)}


def test_release_at_the_delivery_limit_archives():
    p = SharePartition(0)
    for delivery in range(1, 4):
        assert acquired(p, batches=[(0, 0)]) == [Acquired(0, 0, delivery)]
        change = p.acknowledge("m", [(0, 0, [RELEASE])], LIMITS, 1)
    assert change.dead_letters == [(0, 3)]
    assert p.start == 1 and p.records == {}


def test_lock_expiry_releases_and_counts_towards_the_limit():
    p = SharePartition(0)
    limits = Limits(delivery_count_limit=2, lock_duration_ms=1000, max_record_locks=100)
    for delivery in range(1, 3):
        now = delivery * 10_000
        assert acquired(p, batches=[(0, 1)], now=now, limits=limits) == \
            [Acquired(0, 1, delivery)]
        assert p.expire_locks(now + 999, limits).empty      # not yet due
        change = p.expire_locks(now + 1000, limits)
        assert change.changed == {0, 1}
    assert change.dead_letters == [(0, 2), (1, 2)]
    assert p.start == 2


def test_records_near_the_delivery_limit_are_throttled_and_the_last_attempt_goes_alone():
    limits = Limits(delivery_count_limit=6, lock_duration_ms=1000, max_record_locks=100)
    p = SharePartition(0)

    def round_trip():
        got = acquired(p, batches=[(0, 15)], limits=limits)
        for a in got:
            p.acknowledge("m", [(a.first_offset, a.last_offset, [RELEASE])], limits, 1)
        return got
    assert round_trip() == [Acquired(0, 15, 1)]
    assert round_trip() == [Acquired(0, 15, 2)]
    assert round_trip() == [Acquired(0, 15, 3)]
    # delivery count 3 reached max(2, ceil(6 / 2)): 16 >> 1 of them, then 16 >> 2, ...
    assert round_trip() == [Acquired(0, 7, 4)]
    assert acquired(p, batches=[(0, 15)], limits=limits) == [Acquired(0, 3, 5)]
    p.acknowledge("m", [(0, 3, [RELEASE])], limits, 1)
    # 0..3 are on their last delivery (6th): each alone
    assert acquired(p, batches=[(0, 15)], limits=limits) == [Acquired(0, 0, 6)]
    assert acquired(p, member="n", batches=[(0, 15)], limits=limits) == [Acquired(1, 1, 6)]


def test_renew_extends_the_lock_only_when_enabled():
    p = SharePartition(0)
    acquired(p, batches=[(0, 0)], now=0)
    change = p.acknowledge("m", [(0, 0, [RENEW])], LIMITS, 900)
    assert p.records[0].deadline == 1900 and not change.changed
    assert p.expire_locks(1000, LIMITS).empty
    off = Limits(3, 1000, 100, renew_enabled=False)
    with pytest.raises(AckRefused) as refused:
        p.acknowledge("m", [(0, 0, [RENEW])], off, 950)
    assert refused.value.error is ErrorCode.invalid_record_state
    assert refused.value.message == "Renewing acquisition locks is not enabled for the group."


@pytest.mark.parametrize("batches, error", [
    ([(0, 0, [ACCEPT])], ErrorCode.invalid_record_state),           # another member's
    ([(10, 10, [ACCEPT])], ErrorCode.invalid_request),              # past the window
    ([(5, 12, [ACCEPT])], ErrorCode.invalid_request),               # last past the window
    ([(3, 2, [ACCEPT])], ErrorCode.invalid_request),                # last before first
    ([(0, 1, [ACCEPT, ACCEPT, ACCEPT])], ErrorCode.invalid_request),  # types do not fit
    ([(0, 0, [9])], ErrorCode.invalid_request),                     # no such type
    ([(0, 2, [ACCEPT]), (2, 3, [RELEASE])], ErrorCode.invalid_request),   # overlapping
])
def test_refused_acknowledgements_change_nothing(batches, error):
    p = SharePartition(0)
    acquired(p, member="owner")
    before = states(p)
    with pytest.raises(AckRefused) as refused:
        p.acknowledge("intruder" if error is ErrorCode.invalid_record_state else "owner",
                      batches, LIMITS, 1)
    assert refused.value.error is error
    assert states(p) == before


def test_acknowledging_a_record_not_acquired_is_invalid_record_state():
    p = SharePartition(0)
    acquired(p)
    p.acknowledge("m", [(5, 5, [RELEASE])], LIMITS, 1)
    with pytest.raises(AckRefused) as refused:       # 5 is AVAILABLE now
        p.acknowledge("m", [(4, 5, [ACCEPT])], LIMITS, 1)
    assert refused.value.error is ErrorCode.invalid_record_state
    assert p.records[4].state is RecordState.ACQUIRED      # all or nothing
    p.acknowledge("m", [(0, 4, [ACCEPT])], LIMITS, 1)


def test_acknowledgements_behind_the_start_offset_are_skipped_as_kafka_skips_them():
    p = SharePartition(0)
    acquired(p)
    p.acknowledge("m", [(5, 5, [RELEASE])], LIMITS, 1)
    p.acknowledge("m", [(0, 4, [ACCEPT])], LIMITS, 1)
    assert p.start == 5
    before = states(p)
    change = p.acknowledge("m", [(0, 0, [ACCEPT])], LIMITS, 1)      # settled already
    assert not change.changed and states(p) == before
    # a batch reaching past the start offset acts from it on: 5 is AVAILABLE, so refused
    with pytest.raises(AckRefused) as refused:
        p.acknowledge("m", [(3, 5, [ACCEPT])], LIMITS, 1)
    assert refused.value.error is ErrorCode.invalid_record_state


def test_a_batch_reaching_past_the_start_offset_keeps_its_per_offset_types_in_place():
    p = SharePartition(0)
    acquired(p)
    p.acknowledge("m", [(0, 4, [ACCEPT])], LIMITS, 1)
    change = p.acknowledge("m", [(3, 7, [REJECT, REJECT, ACCEPT, ACCEPT, REJECT])], LIMITS, 1)
    assert change.changed == {5, 6, 7} and change.counts.rejected == 1
    assert p.start == 8


def test_batch_optimized_overshoots_to_whole_batches_record_limit_is_strict():
    p = SharePartition(0)
    assert acquired(p, batches=[(0, 4), (5, 9)], max_records=3) == [Acquired(0, 4, 1)]
    q = SharePartition(0)
    assert acquired(q, batches=[(0, 4), (5, 9)], max_records=3, strict=True) == \
        [Acquired(0, 2, 1)]
    assert q.end == 3 and q.next_fetch_offset() == 3


def test_max_record_locks_caps_the_in_flight_window():
    limits = Limits(3, 1000, max_record_locks=4)
    p = SharePartition(0)
    assert acquired(p, batches=[(0, 9)], limits=limits) == [Acquired(0, 3, 1)]
    assert acquired(p, batches=[(4, 9)], limits=limits) == []
    p.acknowledge("m", [(0, 1, [ACCEPT])], limits, 1)
    assert acquired(p, batches=[(4, 9)], limits=limits) == [Acquired(4, 5, 1)]
    # released records inside the window are acquired whatever the cap
    p.acknowledge("m", [(2, 5, [RELEASE])], limits, 1)
    assert acquired(p, batches=[(2, 9)], limits=limits) == [Acquired(2, 5, 2)]


def test_offsets_missing_from_the_log_are_skipped():
    p = SharePartition(0)
    assert acquired(p, batches=[(0, 1), (5, 6)]) == [Acquired(0, 1, 1), Acquired(5, 6, 1)]
    p.acknowledge("m", [(0, 1, [ACCEPT])], LIMITS, 1)
    assert p.start == 5                    # 2..4 are not records


def test_release_member_and_move_start_and_reset():
    p = SharePartition(0)
    acquired(p, member="a", batches=[(0, 4)])
    acquired(p, member="b", batches=[(5, 9)])
    change = p.release_member("a", LIMITS)
    assert change.changed == {0, 1, 2, 3, 4}
    assert p.acquired_by("b") == [5, 6, 7, 8, 9]
    p.move_start_to(3)
    assert p.start == 3 and min(p.records) == 3
    p.reset(42)
    assert (p.start, p.end, p.records) == (42, 42, {})


def test_revert_puts_a_failed_change_back():
    p = SharePartition(0)
    acquired(p)
    before = (p.start, p.end, states(p))
    change = p.acknowledge("m", [(0, 9, [ACCEPT])], LIMITS, 1)
    assert p.start == 10
    p.revert(change.undo)
    assert (p.start, p.end, states(p)) == before


def test_state_batches_and_replay_bring_acquired_records_back_available():
    p = SharePartition(0)
    acquired(p)                                         # 0..9 acquired, count 1
    p.acknowledge("m", [(5, 9, [ACCEPT])], LIMITS, 1)
    p.acknowledge("m", [(0, 1, [RELEASE])], LIMITS, 1)  # 0..1 AVAILABLE, count 1
    acquired(p, member="n", batches=[(0, 1)])           # acquired again: count 2, in memory
    persisted = p.state_batches()
    assert persisted == [StateBatch(0, 1, RecordState.AVAILABLE, 1),
                         StateBatch(2, 4, RecordState.AVAILABLE, 0),
                         StateBatch(5, 9, RecordState.ACKNOWLEDGED, 1)]
    q = SharePartition(0)
    q.apply_state(0, persisted, reset=True)
    q.loaded()
    assert q.start == 0 and q.end == 10
    assert acquired(q, batches=[(0, 9)]) == [Acquired(0, 1, 2), Acquired(2, 4, 1)]


def test_a_replayed_window_gap_is_acquirable():
    p = SharePartition(0)
    p.apply_state(0, [StateBatch(5, 9, RecordState.ACKNOWLEDGED, 1)], reset=True)
    p.loaded()
    assert p.next_fetch_offset() == 0
    assert acquired(p, batches=[(0, 9)]) == [Acquired(0, 4, 1)]
    p.acknowledge("m", [(0, 4, [ACCEPT])], LIMITS, 1)
    assert p.start == 10
