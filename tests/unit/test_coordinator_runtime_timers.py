"""The edge's coordinator timers on a real event loop: one loop timer over a heap of deadlines.
Pushing a deadline later keeps its heap entry (it is queued again when it comes up early),
pulling it earlier queues it at once, cancel cancels, and due timers fire in deadline order.

A loaded machine may run the loop late by any amount: each test waits for the events it needs
(up to WAIT_S), asserts a lower bound on when a timer fired strictly, and tells "early" from
"late" only with deadlines far apart."""
import asyncio
import time

import pytest

from roster.broker.coordinator_runtime import CoordinatorRuntime
from roster.coordinator.results import Cancel, Result, Schedule

WAIT_S = 30  # for an event that is due in milliseconds: only a broken queue takes this long


class Recorder:
    """A core whose expire() records which events fired, and when."""

    def __init__(self) -> None:
        self.fired: list[tuple[str, float]] = []
        self.event = asyncio.Event()

    def expire(self, event, now):
        self.fired.append((event, time.monotonic()))
        self.event.set()
        return Result()


def run(scenario):
    async def main():
        recorder = Recorder()
        runtime = CoordinatorRuntime(recorder, sink=None, clock=time.time)
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
        schedule(runtime, "k", 100, "first")        # the loop timer is armed for 100 ms
        schedule(runtime, "k", 400, "pushed")       # like a heartbeat
        assert len(runtime._timers._heap) == 1      # no new entry
        await asyncio.wait_for(recorder.event.wait(), WAIT_S)
        return recorder.fired, start
    fired, start = run(scenario)
    assert [e for e, _ in fired] == ["pushed"]
    assert fired[0][1] - start >= 0.395  # not at the first deadline (ms rounding aside)


def test_a_deadline_pulled_earlier_fires_early_and_cancel_cancels():
    async def scenario(runtime, recorder):
        start = time.monotonic()
        schedule(runtime, "late", 600_000, "late")
        schedule(runtime, "late", 30, "pulled-in")
        schedule(runtime, "gone", 20, "never")
        runtime.apply(Result(timers=[Cancel("gone")]))
        await asyncio.wait_for(recorder.event.wait(), WAIT_S)
        # a wrongly-kept "gone" (due first) would have fired by now; and a moment more
        await asyncio.sleep(0.05)
        return recorder.fired, start, len(runtime._timers)
    fired, start, left = run(scenario)
    assert [e for e, _ in fired] == ["pulled-in"]
    assert fired[0][1] - start < WAIT_S  # at 30 ms, not the 10 minutes it was pulled in from
    assert left == 0


@pytest.mark.parametrize("stall_s", [0, 0.1], ids=["on-time", "loop-late"])
def test_many_timers_fire_in_deadline_order_each_once(stall_s):
    """Also when the loop comes late and finds them all due at once (a loaded machine): the
    one pushed later still fires after the one due before its new deadline."""
    async def scenario(runtime, recorder):
        now = runtime.now_ms()
        runtime.apply(Result(timers=[Schedule(f"k{i}", now + 40 - i * 10, f"e{i}")
                                     for i in range(4)]))
        runtime.apply(Result(timers=[Schedule("k1", now + 45, "e1-later")]))
        time.sleep(stall_s)  # holds the loop: every deadline passes before it runs again
        while len(recorder.fired) < 4:
            recorder.event.clear()
            await asyncio.wait_for(recorder.event.wait(), WAIT_S)
        await asyncio.sleep(0.03)
        return [e for e, _ in recorder.fired]
    assert run(scenario) == ["e3", "e2", "e0", "e1-later"]


def test_a_cancelled_key_scheduled_again_fires_once_at_its_new_deadline():
    async def scenario(runtime, recorder):
        start = time.monotonic()
        schedule(runtime, "k", 20, "old")
        runtime.apply(Result(timers=[Cancel("k")]))
        schedule(runtime, "k", 50, "new")
        await asyncio.wait_for(recorder.event.wait(), WAIT_S)
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
            await asyncio.wait_for(recorder.event.wait(), WAIT_S)
        await asyncio.sleep(0.03)
        return [e for e, _ in recorder.fired], len(runtime._timers._heap)
    fired, left = run(scenario)
    assert sorted(fired) == sorted(f"soon{i}" for i in range(300)) and len(fired) == 300
    assert left <= 450  # what remains is stale entries of the late deadlines, bounded
