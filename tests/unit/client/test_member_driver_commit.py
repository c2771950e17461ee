"""MemberDriver.commit: the OffsetCommit carries the member's epoch as it is when the request
goes out, not as it was before a topic-id lookup that had to wait (the member's own loop may
have moved it on meanwhile), and a coordinator lost during that lookup is a CommitFailed."""
from __future__ import annotations

import asyncio

import pytest

from roster.client.connection import ConnectionClosed
from roster.client.consumer_member import ConsumerGroupMember
from roster.client.member_driver import CommitFailed
from roster.client.membership import MemberConfig


class Sent(Exception):
    """Stops commit() once the request is built: the test looks at the request only."""


class Coordinator:
    def __init__(self) -> None:
        self.requests = []

    def version(self, api_key) -> int:
        return 10   # OffsetCommit names topics by id: commit() must learn them first

    async def call(self, api_key, build):
        self.requests.append(build(9))
        raise Sent

    def close(self) -> None:
        pass


class Member(ConsumerGroupMember):
    """The topic-id lookup is where the member's loop gets to run: here it moves the epoch on,
    or loses the coordinator."""

    def __init__(self, during_lookup) -> None:
        super().__init__("localhost:9092", MemberConfig("g"), member_id="m")
        self.machine.epoch = 5
        self._coordinator = Coordinator()
        self._during_lookup = during_lookup

    async def fetch_metadata(self, topics):
        self.topic_ids.update((t, b"\x01" * 16) for t in topics)
        self._during_lookup(self)
        return {t: 1 for t in topics}


def _next_epoch(member) -> None:
    member.machine.epoch = 6


def test_the_commit_carries_the_epoch_as_of_when_it_is_sent():
    member = Member(_next_epoch)
    coordinator = member._coordinator
    with pytest.raises(Sent):
        asyncio.run(member.commit({("t", 0): 42}))
    [request] = coordinator.requests
    assert request.generation_id_or_member_epoch == 6


def test_a_coordinator_lost_during_the_lookup_fails_the_commit():
    member = Member(lambda m: m._drop_coordinator())
    with pytest.raises(CommitFailed):
        asyncio.run(member.commit({("t", 0): 42}))


def test_a_coordinator_lost_during_the_lookup_of_committed_is_a_lost_connection():
    # ConnectionClosed: what callers (the Spark reader's `retrying`) retry
    member = Member(lambda m: m._drop_coordinator())
    with pytest.raises(ConnectionClosed):
        asyncio.run(member.committed([("t", 0)]))
