"""The coordinators' TimerQueue (broker/groups/timer_queue.py) against a model: random
schedules, reschedules (earlier and later), cancels and clock steps over a few dozen keys,
enough for stale heap entries and compactions. After every step the loop timer is armed no
later than the earliest live deadline (a timer can never be forgotten: the share lock timer of
a partition, a member's session), and each clock step fires exactly the live timers that are
due, once, with the event they were last scheduled with.

The clock is a number the test moves; the loop timer is run by hand when its deadline has
passed, as the loop would run it (late by any amount is allowed, early is not)."""
import asyncio
import random

from roster.broker.groups.timer_queue import TimerQueue
from roster.coordinator.results import Cancel, Schedule

SEEDS = 300
STEPS = 300
KEYS = 40


async def one_history(seed: int) -> None:
    rng = random.Random(seed)
    now = [1_000]
    fired: list[tuple[str, object]] = []
    queue = TimerQueue(lambda: now[0], lambda key, event, at: fired.append((key, event)))
    live: dict[str, tuple[int, object]] = {}   # the model: key -> (deadline, event)
    try:
        for step in range(STEPS):
            roll = rng.random()
            key = f"k{rng.randrange(KEYS)}"
            if roll < 0.55:
                deadline = now[0] + rng.randrange(0, 500)
                event = (key, step)
                queue.apply([Schedule(key, deadline, event)])
                live[key] = (deadline, event)
            elif roll < 0.7:
                queue.apply([Cancel(key)])
                live.pop(key, None)
            else:
                now[0] += rng.randrange(0, 200)
                fired.clear()
                if queue._wakeup is not None and queue._wakeup_ms <= now[0]:
                    queue._wakeup.cancel()   # what the loop would run now
                    queue._run()
                due = {k: event for k, (deadline, event) in live.items() if deadline <= now[0]}
                assert dict(fired) == due, (seed, step)
                assert len(fired) == len(due), (seed, step, "fired twice")
                for k in due:
                    del live[k]
            if live:
                earliest = min(deadline for deadline, _ in live.values())
                assert queue._wakeup is not None, (seed, step, "nothing armed")
                assert queue._wakeup_ms <= max(earliest, now[0]), (seed, step, "armed late")
    finally:
        queue.close()


def test_timer_queue_matches_its_model():
    async def main():
        for seed in range(SEEDS):
            await one_history(seed)
    asyncio.run(main())
