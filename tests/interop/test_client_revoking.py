"""roster.client's classic member keeps heartbeating while its on_revoked callback runs, against
a real roster broker: a callback that takes longer than the session timeout does not cost the
member its membership (as with Kafka's Java client, whose heartbeat thread runs through
onPartitionsRevoked), and the JoinGroup goes once the callback has returned."""
from __future__ import annotations

import asyncio

import pytest

from roster.client.member import GroupMember
from roster.client.membership import MemberConfig, Membership, Send, State
from roster.protocol.errors import ErrorCode
from tests.interop.test_bad_input import _create
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("client")]
SESSION_MS, INTERVAL_MS = 1000, 100
# the callback outlasts the session timeout by half: without heartbeats the member is gone
BEATS_IN_CALLBACK = SESSION_MS * 3 // 2 // INTERVAL_MS


class Recording(Membership):
    """The member's own machine, noting each heartbeat it sends and each answer it gets."""

    def __init__(self, config: MemberConfig, sent: list, answered: list) -> None:
        super().__init__(config)
        self.sent, self.answered = sent, answered

    def tick(self, now: int) -> list:
        actions = super().tick(now)
        self.sent += [(self.state, self.generation) for a in actions
                      if isinstance(a, Send) and a.api == "Heartbeat"]
        return actions

    def on_heartbeat(self, error: ErrorCode, now: int) -> list:
        self.answered.append((self.state, error))
        return super().on_heartbeat(error, now)


def _member(bootstrap: str, **callbacks) -> GroupMember:
    config = MemberConfig("slow-revokers", session_timeout_ms=SESSION_MS,
                          heartbeat_interval_ms=INTERVAL_MS, rebalance_timeout_ms=30_000)
    return GroupMember(bootstrap, config, **callbacks)


def test_heartbeats_go_on_through_a_slow_on_revoked_and_stop_once_it_returns(broker_factory):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0",
                             "group.min.session.timeout.ms": "500"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "slow-revoke", partitions=2).error_code is ErrorCode.none
    sent, answered = [], []

    async def scenario():
        during: list = []     # what the member heard while its callback ran
        after: list = []      # heartbeats it sent from the callback's return until stable

        async def on_revoked(partitions):
            if not partitions or first.machine.state is State.LEAVING:   # closing
                return
            start = len(answered)
            await first.wait_for(lambda: len(answered) - start >= BEATS_IN_CALLBACK, 15)
            during.extend(answered[start:])
            after.append(len(sent))

        first = _member(broker.bootstrap, on_revoked=on_revoked)
        first.machine = Recording(first.machine.config, sent, answered)
        await first.start(["slow-revoke"])
        await first.wait_stable(30)
        member_id, generation = first.machine.member_id, first.machine.generation
        assert first.assignment == (("slow-revoke", 0), ("slow-revoke", 1))

        second = _member(broker.bootstrap)   # joining starts a rebalance: first revokes
        await second.start(["slow-revoke"])
        await second.wait_stable(30)
        await first.wait_stable(30)
        outcome = (during, sent[after[0]:], first.machine.member_id, first.machine.generation,
                   first.assignment, second.assignment, member_id, generation)
        await second.close()
        await first.close()
        return outcome

    during, beats_after, member_id, generation, mine, theirs, member_before, generation_before = \
        asyncio.run(asyncio.wait_for(scenario(), 60))
    # heartbeats went on through the callback; the broker answered that the group rebalances,
    # which did not end the callback early
    assert len(during) >= BEATS_IN_CALLBACK
    assert {state for state, _ in during} == {State.REVOKING}
    assert {error for _, error in during} == {ErrorCode.rebalance_in_progress}
    # the member outlived its session timeout in the callback: it rejoined as itself, into
    # the very next generation, and got its share
    assert (member_id, generation) == (member_before, generation_before + 1)
    assert sorted(mine + theirs) == [("slow-revoke", 0), ("slow-revoke", 1)] and len(mine) == 1
    # after the callback, no heartbeat until the member is stable in the new generation
    assert all(state is State.STABLE and g == generation for state, g in beats_after)
