"""The share type's effect handlers (broker/groups/share_group.py) against stand-ins of the
share-partition state: partitions handed over as (topic uuid, partition), an initialisation
that returns an awaitable waited for by `initialized`, a failing call logged and not raised
into the runtime, a broker without share state tolerated with a warning."""
from __future__ import annotations

import asyncio
import logging
import uuid

from roster.broker.groups import share_group as edge
from roster.coordinator.share.effects import ShareGroupGone, ShareStateWanted

T = b"t" * 16


class State:
    def __init__(self, outcome=None, fail=False) -> None:
        self.calls: list = []
        self.outcome, self.fail = outcome, fail

    def initialize(self, group_id, partitions):
        self.calls.append(("initialize", group_id, list(partitions)))
        if self.fail:
            raise RuntimeError("no such topic")
        return self.outcome

    def group_deleted(self, group_id):
        self.calls.append(("group_deleted", group_id))


class Broker:
    def __init__(self, state=None) -> None:
        if state is not None:
            self.share_state = state


def test_each_effect_calls_the_share_state():
    state = State()
    broker = Broker(state)
    edge.initialize_share_state(broker, ShareStateWanted("g", ((T, 0), (T, 1))))
    edge.group_deleted(broker, ShareGroupGone("g"))
    assert state.calls == [("initialize", "g", [(uuid.UUID(bytes=T), 0),
                                                 (uuid.UUID(bytes=T), 1)]),
                           ("group_deleted", "g")]


def test_an_awaitable_initialisation_is_waited_for():
    async def scenario():
        done = asyncio.Event()

        async def durable():
            await done.wait()
        broker = Broker(State(outcome=durable()))
        edge.initialize_share_state(broker, ShareStateWanted("g", ((T, 0),)))
        waiting = asyncio.ensure_future(edge.initialized(broker, "g"))
        await asyncio.sleep(0)
        assert not waiting.done()
        done.set()
        await asyncio.wait_for(waiting, 1)
        await edge.initialized(broker, "other")     # nothing pending: at once
    asyncio.run(scenario())


def test_failures_and_a_missing_state_are_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="roster.groups"):
        edge.initialize_share_state(Broker(State(fail=True)), ShareStateWanted("g", ((T, 0),)))
        edge.group_deleted(Broker(), ShareGroupGone("g"))
    assert "initialising share state failed" in caplog.text
    assert "no share-partition state" in caplog.text
