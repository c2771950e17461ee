"""A flight-recorder event leaves the group runtime only once the group records it describes are
durable: a generation's "stable" event waits for its group record, a "saved" event for the static
member's new id; a failed write drops them; events that wrote nothing keep their place behind
those still waiting. The runtime (broker/groups/runtime.py) with the real coordinator, whose state is set
up through the coordinator harness, and a sink that completes writes when the test says so."""
import asyncio

from roster.broker.groups.runtime import GroupRuntime
from roster.coordinator import facts
from roster.coordinator.config import GroupConfig
from roster.coordinator.messages import JoinRequest, SyncRequest
from roster.coordinator.results import Result
from roster.observability import events as ev
from roster.observability.after_write import EventsAfterWrites
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import PROTOCOLS, Harness


class HeldSink:
    """Writes complete only when release() is called, as a group commit's fsync would."""

    partitions = 1

    def __init__(self) -> None:
        self.writes: list = []

    def partition_for(self, group_id: str) -> int:
        return 0

    def write(self, records, done, revert=None) -> None:
        self.writes.append(done)

    def release(self, error: ErrorCode | None = None) -> None:
        writes, self.writes = self.writes, []
        for done in writes:
            done(error)


def with_runtime(scenario):
    """Run scenario(runtime, harness, sink, published) on an event loop: the runtime shares the
    harness's coordinator, so groups are set up with the harness's steps."""
    async def main():
        harness = Harness()
        sink = HeldSink()
        runtime = GroupRuntime(GroupConfig(), sink)
        runtime.shard = runtime.core = harness.shard
        runtime.coordinator = harness.coordinator
        runtime.flight = harness.flight   # the recorders have seen the harness's operations
        published: list = []
        runtime.on_events = published.extend
        try:
            scenario(runtime, harness, sink, published)
        finally:
            runtime.close()
    asyncio.run(main())


def static_rejoin(runtime, harness) -> tuple[str, Result]:
    """A static member of a Stable group comes back with a new id within its session: the
    result holds the fact the "saved" event is made of and the group record naming the new
    id."""
    [old_id] = harness.stable_group("i-a")
    result = runtime.coordinator.join(JoinRequest(
        group_id="g", member_id="", group_instance_id="i-a", protocol_type="consumer",
        protocols=PROTOCOLS, session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
        token="rejoin"), runtime.now_ms())
    assert [type(f) for f in result.facts] == [facts.StaticMemberSaved] and result.records
    return old_id, result


def test_a_saved_rebalance_is_told_only_once_the_static_members_new_id_is_durable():
    def scenario(runtime, harness, sink, published):
        old_id, result = static_rejoin(runtime, harness)
        runtime.apply(result)
        assert published == []          # the group record is still being written
        sink.release(None)
        [saved] = published
        assert saved.kind == ev.SAVED and saved.trigger.fenced_id == old_id
    with_runtime(scenario)


def test_a_failed_write_drops_its_events():
    def scenario(runtime, harness, sink, published):
        _, result = static_rejoin(runtime, harness)
        runtime.apply(result)
        sink.release(ErrorCode.not_coordinator)   # the coordinator undoes the replacement
        assert published == []
    with_runtime(scenario)


def test_a_stable_generation_is_told_after_its_assignment_is_written():
    def scenario(runtime, harness, sink, published):
        token = harness.join_dynamic()
        harness.advance(0)
        member_id, generation = harness.replies[token].member_id, harness.replies[token].generation
        runtime.apply(runtime.coordinator.sync(SyncRequest(
            group_id="g", generation=generation, member_id=member_id, group_instance_id=None,
            protocol_type=None, protocol_name=None, assignments=((member_id, b"a"),),
            api_version=5, token="sync"), runtime.now_ms()))
        assert published == []
        sink.release(None)
        assert [(e.kind, e.generation, e.outcome) for e in published] == \
            [(ev.GENERATION, generation, "stable")]
    with_runtime(scenario)


def test_events_that_wrote_nothing_stay_behind_those_still_waiting():
    def scenario(runtime, harness, sink, published):
        _, result = static_rejoin(runtime, harness)
        runtime.apply(result)
        later = ev.GroupEvent("other-group", ev.CLASSIC, ev.GENERATION, 3, ev.Trigger(ev.OTHER),
                              1, 1, outcome="interrupted")
        runtime.apply(Result(events=[later]))
        assert published == []
        sink.release(None)
        assert [e.group_id for e in published] == ["g", "other-group"]
    with_runtime(scenario)


def test_release_order_and_failures_without_a_runtime():
    published: list = []
    gate = EventsAfterWrites(published.extend)
    first, second, third, fourth = ["first"], ["second"], ["third"], ["fourth"]
    gate.hold(first)
    gate.hold(second)
    gate.release(third, True)           # wrote nothing: behind the two held
    gate.release(second, True)          # written, but the first is not
    assert published == [] and gate.waiting == 3
    gate.release(first, False)          # failed: dropped, and the rest go
    assert published == ["second", "third"] and gate.waiting == 0
    gate.release(fourth, True)          # nothing waiting: at once
    assert published == ["second", "third", "fourth"]
