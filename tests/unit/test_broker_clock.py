"""The broker clock (broker/clock.py): a jump fires every timer it made due, at once, on the
runtime's loop, from any thread; the wall clock outside test mode, and the refusals."""
import asyncio
import math
import threading
import time

import pytest

from roster.broker.broker import Broker
from roster.broker.clock import ClockRefused, TestClock, WallClock, seconds_of
from roster.broker.coordinator_runtime import CoordinatorRuntime
from roster.config import BrokerConfig
from roster.coordinator.results import Result, Schedule

WAIT_S = 30


class Recorder:
    def __init__(self) -> None:
        self.fired: list[tuple[str, int, int]] = []   # (event, now given, thread id)

    def expire(self, event, now):
        self.fired.append((event, now, threading.get_ident()))
        return Result()


def schedule(runtime, key, in_ms, event):
    runtime.apply(Result(timers=[Schedule(key, runtime.now_ms() + in_ms, event)]))


def test_a_jump_fires_what_it_made_due_at_once_and_nothing_else():
    async def scenario():
        clock = TestClock()
        clock.bind(asyncio.get_running_loop())
        recorder = Recorder()
        runtime = CoordinatorRuntime(recorder, sink=None, clock=time.time)
        runtime.follow(clock)
        schedule(runtime, "session", 45_000, "session expired")
        schedule(runtime, "rebalance", 300_000, "rebalance timed out")
        before = runtime.now_ms()
        clock.advance(45)
        fired_after_45 = list(recorder.fired)
        clock.advance(255)
        runtime.close()
        return before, fired_after_45, recorder.fired
    before, first, every = asyncio.run(scenario())
    assert [e for e, _, _ in first] == ["session expired"]   # before advance returned
    assert first[0][1] >= before + 45_000                  # `now` as the core is told it
    assert [e for e, _, _ in every] == ["session expired", "rebalance timed out"]


def test_advance_from_another_thread_runs_on_the_loop_and_waits_for_it():
    loop = asyncio.new_event_loop()
    clock = TestClock()
    recorder = Recorder()
    runtime: list[CoordinatorRuntime] = []
    ready = threading.Event()

    def serve():
        asyncio.set_event_loop(loop)

        async def main():
            clock.bind(loop)
            made = CoordinatorRuntime(recorder, sink=None, clock=time.time)
            made.follow(clock)
            schedule(made, "k", 60_000, "due")
            runtime.append(made)
            ready.set()
            while not recorder.fired:
                await asyncio.sleep(0.01)
        loop.run_until_complete(main())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    assert ready.wait(WAIT_S)
    now = clock.advance(60)
    assert recorder.fired and recorder.fired[0][0] == "due"   # fired before advance returned
    assert recorder.fired[0][2] == server.ident                 # on the loop's thread
    assert now >= time.time() + 59
    server.join(WAIT_S)
    loop.close()


def test_time_keeps_flowing_between_jumps():
    base = [1000.0]
    clock = TestClock(base=lambda: base[0])
    assert clock.now_ms() == 1_000_000
    clock.advance(2.5)
    base[0] += 1
    assert clock.time() == 1003.5 and clock.advanced == 2.5
    assert clock.advance(0) == 1003.5   # fires what is due, moves nothing


@pytest.mark.parametrize("bad", [-1, -0.001, math.nan, math.inf, "45", None, True, 1e12])
def test_advance_refuses_what_is_not_a_forward_jump(bad):
    clock = TestClock()
    with pytest.raises(ValueError):
        clock.advance(bad)
    assert clock.advanced == 0
    with pytest.raises(ValueError):
        seconds_of(bad)


def test_a_failing_timer_pass_does_not_keep_the_others_from_running():
    clock = TestClock()
    ran = []
    clock.on_advance(lambda s: 1 / 0)
    clock.on_advance(lambda s: ran.append(s))
    clock.advance(3)
    assert ran == [3.0]


def test_the_broker_clock_is_refused_outside_test_mode(tmp_path):
    broker = Broker(BrokerConfig.from_overrides({}), tmp_path / "data")
    assert isinstance(broker.coordinator_clock, WallClock)
    with pytest.raises(ClockRefused, match="only in test mode.*--test-mode"):
        broker.clock   # noqa: B018
    assert abs(broker.now_ms() - time.time() * 1000) < 5_000


def test_in_test_mode_every_runtime_follows_the_broker_clock(tmp_path):
    broker = Broker(BrokerConfig.from_overrides({"roster.test.mode": "true"}), tmp_path / "data")
    clock = broker.clock
    assert isinstance(clock, TestClock)
    clock.advance(3600)
    for now in (broker.now_ms(), broker.groups.now_ms(), broker.transactions.now_ms(),
                broker.share_state.runtime.now_ms()):
        assert now >= (time.time() + 3599) * 1000
