"""roster.client's share fetch core (client/share_consumer_fetch.py): share session epochs,
acknowledgement batches, acquired-records filtering and renewals, against ShareFetch and
ShareAcknowledge answers built as kio entities (what the wire decodes to)."""
from __future__ import annotations

import datetime
import uuid

import pytest

from roster.client.records import OutgoingRecord, encode_batch
from roster.client.share_consumer_fetch import (
    AcknowledgeType as A,
)
from roster.client.share_consumer_fetch import (
    CannotAcknowledge,
    FetchLimits,
    ShareFetchCore,
    ack_batches,
    next_epoch,
)
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode as E

T = uuid.UUID(int=7)
NODE = 1


def batch(base: int, count: int) -> bytes:
    data = bytearray(encode_batch([OutgoingRecord(f"v{base + i}".encode(), f"k{i}".encode(),
                                                  (("h", b"1"),))
                                   for i in range(count)], "none", 1_700_000_000_000))
    data[0:8] = base.to_bytes(8, "big")   # the base offset (outside the CRC)
    return bytes(data)


def fetch_answer(partitions, error=E.none, version=2, lock_ms=30_000, api=ApiKey.SHARE_FETCH):
    """partitions: [(partition, records, [(first, last, delivery count)], ack error)]."""
    schema = response_schema(api, version)
    topic = element(schema, "responses")
    part = element(topic, "partitions")
    leader = element(part, "current_leader")
    if api == ApiKey.SHARE_FETCH:
        acquired = element(part, "acquired_records")
        entries = tuple(make(part, partition_index=p, error_code=E.none, error_message=None,
                             acknowledge_error_code=ack_error, acknowledge_error_message=None,
                             current_leader=make(leader, leader_id=-1, leader_epoch=-1),
                             records=records, acquired_records=tuple(
                                 make(acquired, first_offset=f, last_offset=la,
                                      delivery_count=c) for f, la, c in ranges))
                        for p, records, ranges, ack_error in partitions)
    else:
        entries = tuple(make(part, partition_index=p, error_code=ack_error, error_message=None,
                             current_leader=make(leader, leader_id=-1, leader_epoch=-1))
                        for p, _, _, ack_error in partitions)
    return make(schema, error_code=error, error_message=None,
                acquisition_lock_timeout=datetime.timedelta(milliseconds=lock_ms),
                responses=(make(topic, topic_id=T, partitions=entries),) if entries else (),
                node_endpoints=())


def core(**limits) -> ShareFetchCore:
    c = ShareFetchCore("g", "m-1", FetchLimits(**limits))
    c.learn_topic("orders", T)
    return c


def answered(c: ShareFetchCore, exchange, answer):
    """A fetch answer, and every record it acquired taken (returned by a poll)."""
    records, moved = c.on_fetch_answer(exchange, answer)
    assert c.take(10**6) == records
    return records, moved


def started(c: ShareFetchCore, partitions=(0, 1)):
    """A first fetch (epoch 0) answered with nothing: the session is at epoch 1."""
    exchange = c.fetch_request(NODE, {(T, p) for p in partitions}, 2, 500)
    c.on_fetch_answer(exchange, fetch_answer([]))
    return exchange


def test_the_first_fetch_opens_a_session_naming_every_partition_and_answers_move_the_epoch():
    c = core(max_records=100)
    first = c.fetch_request(NODE, {(T, 0), (T, 1)}, 2, 500)
    f = first.fields
    assert f["share_session_epoch"] == 0 and f["member_id"] == "m-1" and f["group_id"] == "g"
    assert f["topics"] == [(T, [(0, []), (1, [])])] and f["forgotten_topics_data"] == []
    assert (f["max_records"], f["batch_size"], f["max_wait_ms"], f["is_renew_ack"]) == \
        (100, 100, 500, False)
    c.on_fetch_answer(first, fetch_answer([]))
    assert c.sessions[NODE].epoch == 1 and c.sessions[NODE].partitions == {(T, 0), (T, 1)}
    again = c.fetch_request(NODE, {(T, 0), (T, 1)}, 2, 500)
    assert again.fields["share_session_epoch"] == 1 and again.fields["topics"] == []
    assert c.lock_timeout_ms == 30_000
    assert next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1


def test_only_acquired_records_are_delivered_with_their_delivery_count_and_holes_are_gaps():
    c = core()
    exchange = started(c)
    exchange = c.fetch_request(NODE, {(T, 0), (T, 1)}, 2, 500)
    # a batch of offsets 10..15; this member acquired 11-12 (first delivery) and 14-16
    # (a redelivery; 16 holds no record: a control record or compacted away)
    records, moved = answered(c, exchange, fetch_answer(
        [(0, batch(10, 6), [(11, 12, 1), (14, 16, 3)], 0)]))
    assert moved == set()
    assert [(r.offset, r.delivery_count, r.value) for r in records] == \
        [(11, 1, b"v11"), (12, 1, b"v12"), (14, 3, b"v14"), (15, 3, b"v15")]
    assert records[0].topic == "orders" and records[0].partition == 0
    assert records[0].key == b"k1" and records[0].headers == (("h", b"1"),)
    assert c.unacknowledged() == 4
    assert c.acks == {(T, 0): {16: A.GAP}}


def test_acknowledgements_ride_on_the_next_fetch_as_batches_of_consecutive_offsets():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0), (T, 1)}, 2, 500)
    records, _ = answered(c, exchange, fetch_answer(
        [(0, batch(0, 6), [(0, 5, 1)], 0)]))
    for r in records:
        c.acknowledge(r, A.RELEASE if r.offset == 3 else A.ACCEPT)
    assert c.unacknowledged() == 0
    with pytest.raises(CannotAcknowledge, match="The record cannot be acknowledged."):
        c.acknowledge(records[0], A.ACCEPT)      # already acknowledged
    nxt = c.fetch_request(NODE, {(T, 0), (T, 1)}, 2, 500)
    assert nxt.fields["share_session_epoch"] == 2
    assert nxt.fields["topics"] == [(T, [(0, [(0, 5, (1, 1, 1, 2, 1, 1))])])]
    _, moved = c.on_fetch_answer(nxt, fetch_answer([(0, None, [], 0)]))
    [result] = c.take_results()
    assert (result.topic, result.partition, result.error, result.exception) == \
        ("orders", 0, E.none, None)
    assert result.offsets == {0: A.ACCEPT, 1: A.ACCEPT, 2: A.ACCEPT, 3: A.RELEASE,
                              4: A.ACCEPT, 5: A.ACCEPT}


def test_ack_batches():
    assert ack_batches({}) == []
    assert ack_batches({5: 1, 6: 1, 7: 1}) == [(5, 7, (1,))]
    assert ack_batches({5: 1, 6: 0, 9: 3}) == [(5, 6, (1, 0)), (9, 9, (3,))]


def test_implicit_acknowledgement_accepts_everything_delivered():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    answered(c, exchange, fetch_answer([(0, batch(0, 3), [(0, 2, 1)], 0)]))
    c.acknowledge_all()
    assert c.unacknowledged() == 0 and c.acks == {(T, 0): {0: 1, 1: 1, 2: 1}}


def test_a_removed_partition_is_forgotten_and_its_acknowledgements_go_apart():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0), (T, 1)}, 2, 500)
    records, _ = answered(c, exchange, fetch_answer([(1, batch(0, 2), [(0, 1, 1)], 0)]))
    for r in records:
        c.acknowledge(r, A.REJECT)
    nxt = c.fetch_request(NODE, {(T, 0), (T, 2)}, 2, 500)     # 1 left the assignment, 2 came
    assert nxt.fields["topics"] == [(T, [(2, [])])]
    assert nxt.fields["forgotten_topics_data"] == [(T, [(1, None)])]
    assert nxt.acks == {} and c.acks == {(T, 1): {0: 3, 1: 3}}   # not piggy-backed
    c.on_fetch_answer(nxt, fetch_answer([]))
    assert c.sessions[NODE].partitions == {(T, 0), (T, 2)}
    ack = c.acknowledge_request(NODE, 2, keys={(T, 1)})
    assert ack.api == "ShareAcknowledge" and ack.fields["share_session_epoch"] == 3
    assert ack.fields["topics"] == [(T, [(1, [(0, 1, (3,))])])]
    c.on_acknowledge_answer(ack, fetch_answer([(1, None, None, E.invalid_record_state)],
                                              api=ApiKey.SHARE_ACKNOWLEDGE))
    [result] = c.take_results()
    assert result.error is E.invalid_record_state
    assert "INVALID_RECORD_STATE" in str(result.exception)
    assert c.sessions[NODE].epoch == 4


def test_session_errors_start_a_new_session_and_fail_what_the_request_carried():
    for error in (E.share_session_not_found, E.invalid_share_session_epoch,
                  E.share_session_limit_reached):
        c = core()
        started(c)
        exchange = c.fetch_request(NODE, {(T, 0)}, 2, 500)
        records, _ = answered(c, exchange, fetch_answer([(0, batch(0, 1), [(0, 0, 1)],
                                                                 0)]))
        c.acknowledge(records[0], A.ACCEPT)
        nxt = c.fetch_request(NODE, {(T, 0)}, 2, 500)
        assert c.on_fetch_answer(nxt, fetch_answer([], error=error)) == ([], set())
        assert NODE not in c.sessions
        assert [r.error for r in c.take_results()] == [error]
        assert c.fetch_request(NODE, {(T, 0)}, 2, 500).fields["share_session_epoch"] == 0


def test_acknowledgements_wait_while_a_session_is_new():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    records, _ = answered(c, exchange, fetch_answer([(0, batch(0, 1), [(0, 0, 1)], 0)]))
    c.acknowledge(records[0], A.ACCEPT)
    c.on_failure(c.fetch_request(NODE, {(T, 0)}, 2, 500))   # the connection dropped: epoch 0
    c.take_results()
    c.acks[(T, 0)] = {0: 1}
    fresh = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    assert fresh.fields["share_session_epoch"] == 0 and fresh.acks == {}
    assert c.acks == {(T, 0): {0: 1}}                       # for the next request
    c.on_fetch_answer(fresh, fetch_answer([]))
    assert c.fetch_request(NODE, {(T, 0)}, 2, 500).acks == {(T, 0): {0: 1}}


def test_renew_is_sent_alone_and_the_renewed_record_is_held_again():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    records, _ = answered(c, exchange, fetch_answer([(0, batch(0, 2), [(0, 1, 1)], 0)]))
    c.acknowledge(records[0], A.RENEW)
    c.acknowledge(records[1], A.ACCEPT)
    assert c.has_renewals()
    renew = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    f = renew.fields
    assert f["is_renew_ack"] is True
    assert (f["max_wait_ms"], f["min_bytes"], f["max_bytes"], f["max_records"],
            f["batch_size"]) == (0, 0, 0, 0, 0)
    assert f["topics"] == [(T, [(0, [(0, 1, (4, 1))])])]
    c.on_fetch_answer(renew, fetch_answer([(0, None, [], 0)]))
    again = c.take_renewed()
    assert again == [records[0]] and not c.has_renewals()
    assert c.unacknowledged() == 1
    c.acknowledge(again[0], A.ACCEPT)                     # acknowledgeable once more


def test_renew_needs_version_2_the_record_stays_held():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0)}, 1, 500)
    records, _ = answered(c, exchange, fetch_answer([(0, batch(0, 1), [(0, 0, 1)], 0)],
                                                          version=1))
    c.acknowledge(records[0], A.RENEW)
    nxt = c.fetch_request(NODE, {(T, 0)}, 1, 500)
    assert nxt.fields["is_renew_ack"] is False and nxt.acks == {}
    [refused] = c.take_results()
    assert refused.error is E.unsupported_version
    assert c.unacknowledged() == 1 and not c.has_renewals()


def test_closing_sends_epoch_minus_1_and_drops_the_session():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    records, _ = answered(c, exchange, fetch_answer([(0, batch(0, 1), [(0, 0, 1)], 0)]))
    c.acknowledge(records[0], A.ACCEPT)
    close = c.acknowledge_request(NODE, 2, final=True)
    assert close.fields["share_session_epoch"] == -1
    assert close.fields["topics"] == [(T, [(0, [(0, 0, (1,))])])]
    c.on_acknowledge_answer(close, fetch_answer([(0, None, None, 0)],
                                                api=ApiKey.SHARE_ACKNOWLEDGE))
    assert NODE not in c.sessions
    assert c.acknowledge_request(NODE, 2, final=True) is None
    # a session never opened: its acknowledgements cannot be sent
    c.acks[(T, 0)] = {5: 1}
    assert c.acknowledge_request(NODE, 2) is None
    assert [r.error for r in c.take_results()] == [E.none, E.invalid_share_session_epoch]


def test_a_held_record_is_found_by_where_it_is():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    records, _ = answered(c, exchange, fetch_answer([(0, batch(3, 2), [(3, 4, 1)], 0)]))
    assert c.held("orders", 0, 4) == records[1]
    assert c.held("orders", 0, 5) is None and c.held("orders", 1, 4) is None
    assert c.held("other", 0, 4) is None


def test_acknowledgements_for_a_broker_gone_or_no_longer_leading_are_reported_failed():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0), (T, 1)}, 2, 500)
    records, _ = answered(c, exchange, fetch_answer([(0, batch(0, 1), [(0, 0, 1)], 0),
                                                           (1, batch(0, 1), [(0, 0, 1)], 0)]))
    for record in records:
        c.acknowledge(record, A.ACCEPT)
    c.drop_acks(NODE, E.not_leader_or_follower, {(T, 1)})
    assert set(c.acks) == {(T, 0)}
    c.drop_acks(NODE, E.network_exception)
    assert c.acks == {} and c.nodes_with_acks() == set()
    assert [(r.partition, r.error) for r in c.take_results()] == \
        [(1, E.not_leader_or_follower), (0, E.network_exception)]


def test_a_poll_takes_at_most_its_limit_the_rest_waits_unacknowledged():
    c = core()
    started(c)
    exchange = c.fetch_request(NODE, {(T, 0)}, 2, 500)
    records, _ = c.on_fetch_answer(exchange, fetch_answer([(0, batch(0, 5), [(0, 4, 1)], 0)]))
    assert c.unacknowledged() == 0 and len(c.waiting) == 5
    assert c.take(2) == records[:2] and c.unacknowledged() == 2
    c.acknowledge_all()                     # implicit: only what was returned
    assert c.acks == {(T, 0): {0: 1, 1: 1}}
    with pytest.raises(CannotAcknowledge):
        c.acknowledge(records[2], A.ACCEPT)  # not returned yet
    assert c.take(10) == records[2:] and c.waiting == []
