"""The edge's coordinator timers on a real event loop: pushing a deadline later keeps the armed
handle (it re-arms when it fires early), pulling it earlier re-arms at once, cancel cancels."""
import asyncio
import time

from roster.broker.groups import GroupRuntime
from roster.coordinator.config import GroupConfig
from roster.coordinator.results import Cancel, Result, Schedule


class Recorder:
    """Stands in for the coordinator's expire(): records which events fired, and when."""

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
        recorder = runtime.coordinator = Recorder()
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
        handle = runtime._timers["k"].handle
        await asyncio.sleep(0.03)
        schedule(runtime, "k", 100, "pushed")       # like a heartbeat
        assert runtime._timers["k"].handle is handle  # no new handle
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
        return recorder.fired, start
    fired, start = run(scenario)
    assert [e for e, _ in fired] == ["pulled-in"]
    assert fired[0][1] - start < 1.0
