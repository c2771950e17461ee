"""The JoinGroup reason (KIP-800) roster's consumer gives: none on its first join, as Kafka's
consumer, so the coordinator's flight recorder shows a member joining, not a client saying its
subscription changed; a later change of subscription says so."""
from __future__ import annotations

from roster.client.membership import MemberConfig, Membership, Send
from roster.protocol.errors import ErrorCode as E
from tests.unit.client.test_membership import join_answer, revoke_then, sync_answer


def join_requests(actions):
    return [a for a in actions if isinstance(a, Send) and a.api == "JoinGroup"]


def test_first_join_gives_no_reason_and_a_later_subscription_change_does():
    m = Membership(MemberConfig(group_id="g"))
    m.subscribe(["t"], 0)
    first = join_requests(m.on_find_coordinator(E.none, 0))
    assert len(first) == 1 and first[0].fields["reason"] is None
    again = join_requests(m.on_join(join_answer(E.member_id_required, member_id="m-1"), 0))
    assert again[0].fields["reason"] is None            # KIP-394: the same first join
    m.on_join(join_answer(member_id="m-1", leader="m-0"), 0)
    m.on_sync(sync_answer([("t", 0)]), 0)
    change = join_requests(revoke_then(m, m.subscribe(["t", "u"], 10), 10))
    assert change and change[0].fields["reason"] == "subscription changed to t, u"
