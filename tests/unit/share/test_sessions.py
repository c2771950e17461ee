"""Share sessions (roster.share.sessions): the epochs, limits and partition bookkeeping Kafka
4.4's ShareSessionCache and SharePartitionManager.newContext / acknowledgeSessionUpdate keep."""
from __future__ import annotations

from roster.protocol.errors import ErrorCode
from roster.share.sessions import (
    MAX_EPOCH,
    FetchContext,
    ShareSessionCache,
    next_epoch,
)

T1, T2 = "topic-1", "topic-2"
CONN, OTHER = "conn-1", "conn-2"


def opened(cache, member="m1", partitions=((T1, 0),), connection=CONN, group="g"):
    context = cache.begin_fetch(group, member, 0, partitions, (), False, connection)
    assert isinstance(context, FetchContext), context
    return context


def test_next_epoch_wraps_to_one_and_final_stays_final():
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(MAX_EPOCH) == 1
    assert next_epoch(-1) == -1


def test_epoch_zero_opens_a_full_session_expecting_epoch_one():
    cache = ShareSessionCache()
    context = opened(cache, partitions=[(T1, 0), (T1, 1)])
    assert context.full and not context.final
    assert context.partitions == ((T1, 0), (T1, 1))
    assert cache.get("g", "m1").epoch == 1


def test_acknowledgements_in_the_opening_fetch_are_an_invalid_request():
    cache = ShareSessionCache()
    assert cache.begin_fetch("g", "m1", 0, [(T1, 0)], (), True, CONN) is \
        ErrorCode.invalid_request
    assert len(cache) == 0


def test_epochs_must_follow_one_another():
    cache = ShareSessionCache()
    opened(cache)
    assert cache.begin_fetch("g", "m1", 2, (), (), False, CONN) is \
        ErrorCode.invalid_share_session_epoch
    context = cache.begin_fetch("g", "m1", 1, (), (), False, CONN)
    assert not context.full and context.partitions == ((T1, 0),)
    assert cache.begin_fetch("g", "m1", 1, (), (), False, CONN) is \
        ErrorCode.invalid_share_session_epoch
    assert cache.get("g", "m1").epoch == 2


def test_a_later_epoch_without_a_session_is_not_found():
    cache = ShareSessionCache()
    assert cache.begin_fetch("g", "m1", 3, (), (), False, CONN) is \
        ErrorCode.share_session_not_found
    assert cache.begin_fetch("g", "m1", -1, (), (), False, CONN) is \
        ErrorCode.share_session_not_found


def test_epoch_zero_again_replaces_the_session():
    cache = ShareSessionCache()
    opened(cache, partitions=[(T1, 0)])
    cache.begin_fetch("g", "m1", 1, (), (), False, CONN)
    context = opened(cache, partitions=[(T2, 0)])
    assert context.partitions == ((T2, 0),)
    assert cache.get("g", "m1").epoch == 1
    assert len(cache) == 1


def test_the_session_limit_counts_sessions_after_the_replaced_one_is_dropped():
    cache = ShareSessionCache(max_sessions=2)
    opened(cache, member="m1")
    opened(cache, member="m2")
    assert cache.begin_fetch("g", "m3", 0, [(T1, 0)], (), False, CONN) is \
        ErrorCode.share_session_limit_reached
    # m1 reopening replaces its own session: not over the limit
    opened(cache, member="m1")
    assert len(cache) == 2


def test_topics_add_and_forgotten_topics_remove_partitions_in_that_order():
    cache = ShareSessionCache()
    opened(cache, partitions=[(T1, 0)])
    context = cache.begin_fetch("g", "m1", 1, [(T1, 1), (T2, 0)], [(T2, 0), (T1, 0)],
                                False, CONN)
    assert context.partitions == ((T1, 1),)


def test_final_epoch_keeps_the_session_until_it_is_released():
    cache = ShareSessionCache()
    opened(cache)
    context = cache.begin_fetch("g", "m1", -1, [(T2, 0)], (), True, CONN)
    assert context.final and context.partitions == ()
    session = cache.get("g", "m1")
    assert session is not None and session.epoch == 1   # unchanged by the final request
    released = cache.release("g", "m1")
    assert released is session and list(released.partitions) == [(T1, 0)]
    assert cache.get("g", "m1") is None
    assert cache.release("g", "m1") is None


def test_share_acknowledge_epochs():
    cache = ShareSessionCache()
    assert cache.begin_acknowledge("g", "m1", 1) is ErrorCode.share_session_not_found
    opened(cache)
    assert cache.begin_acknowledge("g", "m1", 0) is ErrorCode.invalid_share_session_epoch
    assert cache.begin_acknowledge("g", "m1", 5) is ErrorCode.invalid_share_session_epoch
    assert cache.begin_acknowledge("g", "m1", 1) is cache.get("g", "m1")
    assert cache.get("g", "m1").epoch == 2
    # acknowledgements and fetches share the epoch sequence
    assert not cache.begin_fetch("g", "m1", 2, (), (), False, CONN).full
    assert cache.begin_acknowledge("g", "m1", -1) is cache.get("g", "m1")
    assert cache.get("g", "m1").epoch == 3


def test_epoch_zero_on_acknowledge_without_a_session_is_an_epoch_error():
    assert ShareSessionCache().begin_acknowledge("g", "m1", 0) is \
        ErrorCode.invalid_share_session_epoch


def test_a_closed_connection_drops_the_session_it_opened():
    cache = ShareSessionCache()
    opened(cache, member="m1", connection=CONN)
    opened(cache, member="m2", connection=OTHER)
    dropped = cache.connection_closed(CONN)
    assert dropped is not None and dropped.key.member_id == "m1"
    assert cache.get("g", "m1") is None and cache.get("g", "m2") is not None
    assert cache.connection_closed(CONN) is None


def test_a_session_reopened_on_another_connection_outlives_the_first_connection():
    cache = ShareSessionCache()
    opened(cache, connection=CONN)
    opened(cache, connection=OTHER)   # the consumer reconnected and started over
    assert cache.connection_closed(CONN) is None
    assert cache.get("g", "m1").connection == OTHER
    assert cache.connection_closed(OTHER) is not None


def test_a_released_session_leaves_its_connection_nothing_to_drop():
    cache = ShareSessionCache()
    opened(cache)
    cache.release("g", "m1")
    assert cache.connection_closed(CONN) is None


def test_later_answers_list_partitions_with_records_errors_or_newly_added():
    cache = ShareSessionCache()
    session = opened(cache, partitions=[(T1, 0), (T1, 1)]).session
    # nothing new, nothing failed: left out of a later answer
    assert not session.in_answer((T1, 0), has_records=False, failed=False)
    assert session.in_answer((T1, 0), has_records=True, failed=False)
    # an error is listed now and once more on the next answer
    assert session.in_answer((T1, 1), has_records=False, failed=True)
    assert session.in_answer((T1, 1), has_records=False, failed=False)
    assert not session.in_answer((T1, 1), has_records=False, failed=False)
    # a partition added by a later fetch is listed in that fetch's answer, even empty
    cache.begin_fetch("g", "m1", 1, [(T2, 0)], (), False, CONN)
    assert session.in_answer((T2, 0), has_records=False, failed=False)
    assert not session.in_answer((T2, 0), has_records=False, failed=False)


def test_a_partition_answered_with_records_is_read_last_next_time():
    cache = ShareSessionCache()
    session = opened(cache, partitions=[(T1, 0), (T1, 1), (T1, 2)]).session
    session.in_answer((T1, 0), has_records=True, failed=False)
    context = cache.begin_fetch("g", "m1", 1, (), (), False, CONN)
    assert context.partitions == ((T1, 1), (T1, 2), (T1, 0))


def test_a_deleted_group_drops_its_sessions_only():
    cache = ShareSessionCache()
    opened(cache, member="m1", group="g")
    opened(cache, member="m2", group="g", connection=OTHER)
    opened(cache, member="m1", group="h", connection="conn-3")
    dropped = cache.group_dropped("g")
    assert {s.key.member_id for s in dropped} == {"m1", "m2"}
    assert len(cache) == 1 and cache.get("h", "m1") is not None
