"""The edge's coordinator timers on a real event loop: one loop timer over a heap of deadlines.
Pushing a deadline later keeps its heap entry (it is queued again when it comes up early),
pulling it earlier queues it at once, cancel cancels, and due timers fire in deadline order."""
import asyncio
import time

from roster.broker.groups import GroupRuntime
from roster.coordinator.config import GroupConfig
from roster.coordinator.results import Cancel, Result, Schedule


class Recorder:
    """Stands in for the shard's expire(): records which events fired, and when."""

    def __init__(self) -> None:
        self.fired: list[tuple[str, float]] = []
        self.event = asyncio.Event()

    def expire(self, event, now):
        self.fired.append((event, time.monotonic()))
        self.event.set()
        return Result()


def run(scenario):
    async def main():
        runtime = GroupRuntime(GroupConfig())
        recorder = runtime.shard = Recorder()
        try:
            return await scenario(runtime, recorder)
        finally:
            runtime.close()
    return asyncio.run(main())


def schedule(runtime, key, in_ms, event):
    runtime.apply(Result(timers=[Schedule(key, runtime.now_ms() + in_ms, event)]))


def test_a_deadline_pushed_later_fires_at_the_new_deadline_only():
    async def scenario(runtime, recorder):
        start = time.monotonic()
        schedule(runtime, "k", 60, "first")
        await asyncio.sleep(0.03)
        schedule(runtime, "k", 100, "pushed")       # like a heartbeat
        assert len(runtime._timers._heap) == 1      # no new entry
        await asyncio.wait_for(recorder.event.wait(), 2)
        return recorder.fired, start
    fired, start = run(scenario)
    assert [e for e, _ in fired] == ["pushed"]
    assert fired[0][1] - start >= 0.12


def test_a_deadline_pulled_earlier_fires_early_and_cancel_cancels():
    async def scenario(runtime, recorder):
        start = time.monotonic()
        schedule(runtime, "late", 2000, "late")
        schedule(runtime, "late", 30, "pulled-in")
        schedule(runtime, "gone", 20, "never")
        runtime.apply(Result(timers=[Cancel("gone")]))
        await asyncio.wait_for(recorder.event.wait(), 2)
        await asyncio.sleep(0.05)  # give a wrongly-kept "gone" timer the chance to fire
        return recorder.fired, start, len(runtime._timers)
    fired, start, left = run(scenario)
    assert [e for e, _ in fired] == ["pulled-in"]
    assert fired[0][1] - start < 1.0
    assert left == 0


def test_many_timers_fire_in_deadline_order_each_once():
    async def scenario(runtime, recorder):
        now = runtime.now_ms()
        runtime.apply(Result(timers=[Schedule(f"k{i}", now + 40 - i * 10, f"e{i}")
                                     for i in range(4)]))
        runtime.apply(Result(timers=[Schedule("k1", now + 45, "e1-later")]))
        while len(recorder.fired) < 4:
            recorder.event.clear()
            await asyncio.wait_for(recorder.event.wait(), 2)
        await asyncio.sleep(0.03)
        return [e for e, _ in recorder.fired]
    assert run(scenario) == ["e3", "e2", "e0", "e1-later"]


def test_a_cancelled_key_scheduled_again_fires_once_at_its_new_deadline():
    async def scenario(runtime, recorder):
        start = time.monotonic()
        schedule(runtime, "k", 20, "old")
        runtime.apply(Result(timers=[Cancel("k")]))
        schedule(runtime, "k", 50, "new")
        await asyncio.wait_for(recorder.event.wait(), 2)
        await asyncio.sleep(0.05)
        return recorder.fired, start
    fired, start = run(scenario)
    assert [e for e, _ in fired] == ["new"]
    assert fired[0][1] - start >= 0.045


def test_stale_heap_entries_are_dropped_once_they_are_a_third_of_the_heap():
    """Every key pulled earlier leaves a stale entry behind; they do not pile up, and the live
    timers still fire, in order, once each."""
    async def scenario(runtime, recorder):
        now = runtime.now_ms()
        keys = 300
        runtime.apply(Result(timers=[Schedule(f"k{i}", now + 300_000, "late") for i in
                                     range(keys)]))
        for i in range(keys):  # like each group's session once its first join completes
            runtime.apply(Result(timers=[Schedule(f"k{i}", now + 200_000 + i, f"e{i}")]))
            assert len(runtime._timers._heap) <= 1.5 * keys
        runtime.apply(Result(timers=[Schedule(f"k{i}", now + 40 + i // 100, f"soon{i}")
                                     for i in range(keys)]))
        while len(recorder.fired) < keys:
            recorder.event.clear()
            await asyncio.wait_for(recorder.event.wait(), 2)
        await asyncio.sleep(0.03)
        return [e for e, _ in recorder.fired], len(runtime._timers._heap)
    fired, left = run(scenario)
    assert sorted(fired) == sorted(f"soon{i}" for i in range(300)) and len(fired) == 300
    assert left <= 450  # what remains is stale entries of the late deadlines, bounded
