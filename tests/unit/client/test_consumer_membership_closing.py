"""A KIP-848 member closing, against the pure coordinator with a manual clock: on_revoked runs
first (the member heartbeats on, still reporting the partitions as owned, so its epoch holds and
a commit from the callback is accepted), and only then the leave heartbeat goes (epoch -1, or -2
for a static member), as Kafka's Java member does (PREPARE_LEAVING, then LEAVING)."""
from __future__ import annotations

from roster.client.consumer_membership import State
from roster.client.membership import LeaveWhenRevoked, Lost, Revoked, Send
from roster.protocol.errors import ErrorCode
from tests.unit.client.test_consumer_membership import Link, member, settle
from tests.unit.coordinator.consumer.harness import ConsumerHarness, partitions, topic_id


def two_members(**names):
    h = ConsumerHarness({"t": 4})
    link = Link(h)
    a, b = member("a", **names.get("a", {})), member("b", **names.get("b", {}))
    link.tick(a)
    link.tick(b)
    settle(link, [a, b])
    assert len(a.owned) == len(b.owned) == 2
    return h, link, a, b


def test_close_runs_on_revoked_before_the_leave_heartbeat():
    h, link, a, b = two_members()
    held, epoch = b.owned, b.epoch
    actions = b.close(h.now)
    assert actions == [Revoked(held), LeaveWhenRevoked()]    # no leave heartbeat yet
    assert b.state is State.LEAVING and "b" in h.group().members
    for _ in range(12):     # a slow callback, past the 45 s session timeout: heartbeats go on
        h.advance(5000)
        link.tick(a, b)
    beats = [e for e in link.events["b"] if isinstance(e, Send)][-12:]
    assert {e.fields["member_epoch"] for e in beats} == {epoch}      # no leave among them
    assert h.member("b").member_epoch == epoch
    assert partitions(h.member("b")) == {(topic_id(t), p) for t, p in held}   # still b's
    assert b.commit_request({held[0]: 5}).fields["generation_id_or_member_epoch"] == epoch
    assert len(a.owned) == 2                 # b's partitions wait for its callback
    link.run(b, b.finish_leaving(h.now))
    [leave] = [e for e in link.events["b"][-1:] if isinstance(e, Send)]
    assert leave.fields["member_epoch"] == -1 and b.state is State.CLOSED
    assert "b" not in h.group().members
    settle(link, [a])
    assert len(a.owned) == 4


def test_a_static_member_closing_runs_the_callback_then_leaves_with_epoch_minus_2():
    h, link, a, b = two_members(b={"instance_id": "ib"})
    held, epoch = b.owned, b.epoch
    assert b.close(h.now) == [Revoked(held), LeaveWhenRevoked()]
    assert h.member("b").member_epoch == epoch
    link.run(b, b.finish_leaving(h.now))
    assert h.member("b").member_epoch == -2


def test_fenced_while_closing_sends_no_leave():
    h, link, a, b = two_members()
    b.close(h.now)
    assert b.on_heartbeat(ErrorCode.fenced_member_epoch, 0, 0, None, h.now) == []
    assert b.tick(h.now + 60_000) == [] and b.finish_leaving(h.now) == []
    assert b.state is State.CLOSED


def test_closing_without_an_epoch_reports_lost_and_sends_nothing():
    h = ConsumerHarness({"t": 2})
    m = member("a")
    m.owned, m.owned_ids = (("t", 0),), frozenset({(topic_id("t"), 0)})   # as if fenced
    assert m.close(h.now) == [Lost((("t", 0),)), LeaveWhenRevoked()]
    assert m.tick(h.now) == [] and m.finish_leaving(h.now) == []


def test_one_lookup_at_a_time():
    m = member("a")
    [find] = m.tick(0)
    assert find.api == "FindCoordinator"
    m.on_connection_lost(10)                      # a request failed: the coordinator is gone
    assert m.tick(1000) == [] and m.state is State.FINDING     # the lookup in flight will do
    m.on_find_coordinator(ErrorCode.none, 1010)
    assert m.state is State.JOINING and m.on_find_coordinator(ErrorCode.none, 1020) == []
    m.close(1030)
    assert m.on_find_coordinator(ErrorCode.none, 1040) == [] and m.state is State.CLOSED


def test_a_coordinator_lost_while_closing_is_found_again_and_the_leave_goes_to_it():
    h, link, a, b = two_members()
    b.close(h.now)
    assert b.on_connection_lost(h.now) == [] and b.state is State.LEAVING
    assert b.tick(h.now) == [] and b.next_deadline() == h.now + b.config.retry_backoff_ms
    h.advance(b.config.retry_backoff_ms)
    [find] = b.tick(h.now)
    assert find.api == "FindCoordinator" and b.tick(h.now) == []     # one in flight
    assert b.on_find_coordinator(ErrorCode.coordinator_not_available, h.now) == []
    h.advance(b.config.retry_backoff_ms)
    [find] = b.tick(h.now)
    assert b.on_find_coordinator(ErrorCode.none, h.now) == []
    link.tick(b)                                  # a heartbeat at once, every field again
    beat = [e for e in link.events["b"] if isinstance(e, Send)][-1].fields
    assert beat["member_epoch"] == b.epoch and beat["topic_partitions"] is not None
    link.run(b, b.finish_leaving(h.now))
    assert "b" not in h.group().members


def test_a_callback_returning_with_the_coordinator_still_lost_sends_no_leave():
    h, link, a, b = two_members()
    b.close(h.now)
    b.on_heartbeat(ErrorCode.not_coordinator, 0, 0, None, h.now)
    assert b.finish_leaving(h.now) == [] and b.state is State.CLOSED
    assert b.tick(h.now + 60_000) == []
