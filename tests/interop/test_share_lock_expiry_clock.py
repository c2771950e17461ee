"""A share record's acquisition lock on the broker clock, over a real socket: what
test_share_groups_delivery's late-accept test does with real consumers and a real 15 s wait,
here deterministic. A member holds records; another member's ShareFetch is parked with a
MaxWait far past the lock; the test moves the broker clock (test mode) instead of sleeping.

- 14.9 s later the parked fetch is still waiting and the records are still the holder's;
- 0.2 s more: the lock timer fires, the records are AVAILABLE again and the parked fetch is
  answered at once (not at its MaxWait) with them, delivery count 2;
- the lock re-arms for the new holder: the same again hands them out with delivery count 3;
- the first holder's late ACCEPT, once the records are settled, is answered without error.

The broker runs in this process on its own loop thread (test_share_fetch.ServedBroker), so the
test can see that the fetch is parked before it moves the clock: no sleeps decide anything."""
from __future__ import annotations

import concurrent.futures
import time

import pytest

from roster.broker.share_sessions import available_key
from roster.share.states import RecordState
from tests.interop.share_fetch_wire import acquired, partitions_of, produce, share_acknowledge, \
    share_fetch
from tests.interop.test_share_fetch import OTHER, ServedBroker, scenario
from tests.support.wire import Wire

pytestmark = pytest.mark.interop

ACCEPT = 1
LOCK_S = 15
THIRD = "t" * 22


@pytest.fixture
def clocked(tmp_path):
    served = ServedBroker(tmp_path, ["roster.test.mode=true",
                                     f"group.share.record.lock.duration.ms={LOCK_S * 1000}"])
    yield served
    served.close()


def parked(served, group: str, tid) -> bool:
    """Whether a ShareFetch waits on the partition's "records AVAILABLE again" key."""
    async def look():
        return bool(served.broker.waiters._waiting.get(available_key(group, tid, 0)))
    return served.run(look())


def states(served, group: str, tid) -> list[tuple[RecordState, int, str | None]]:
    async def look():
        partition = served.broker.share_state.coordinator.get((group, tid, 0))
        return [(e.state, e.delivery_count, e.member)
                for _, e in sorted(partition.records.items())]
    return served.run(look())


def until(condition, what: str, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_parked_fetch_gets_held_records_when_the_clock_passes_their_lock(clocked):
    tid, group = scenario(clocked, "held-past-lock")
    produce(clocked.bootstrap, "held-past-lock", [b"a", b"b", b"c"])
    with Wire(clocked.bootstrap) as holder, Wire(clocked.bootstrap) as other, \
            Wire(clocked.bootstrap) as third, \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        held = share_fetch(holder, group=group, parts=[(tid, [(0, [])])])
        assert acquired(held) == {(tid, 0): [(0, 2, 1)]}
        assert held.acquisition_lock_timeout.total_seconds() == LOCK_S

        waiting = pool.submit(share_fetch, other, group=group, member=OTHER,
                              max_wait_ms=120_000, parts=[(tid, [(0, [])])])
        until(lambda: parked(clocked, group, tid), "the other member's fetch parked")
        clocked.broker.clock.advance(LOCK_S - 0.1)
        assert not waiting.done()
        assert {s for s, _, _ in states(clocked, group, tid)} == {RecordState.ACQUIRED}

        started = time.monotonic()
        clocked.broker.clock.advance(0.2)
        answer = waiting.result(10)
        assert time.monotonic() - started < 5, "answered at the lock's expiry, not MaxWait"
        assert acquired(answer) == {(tid, 0): [(0, 2, 2)]}

        # the new holder's lock is armed again: it expires the same way
        waiting = pool.submit(share_fetch, third, group=group, member=THIRD,
                              max_wait_ms=120_000, parts=[(tid, [(0, [])])])
        until(lambda: parked(clocked, group, tid), "the third member's fetch parked")
        clocked.broker.clock.advance(LOCK_S + 0.1)
        answer = waiting.result(10)
        assert acquired(answer) == {(tid, 0): [(0, 2, 3)]}
        accepted = share_acknowledge(third, group=group, member=THIRD, epoch=1,
                                     parts=[(tid, [(0, [(0, 2, [ACCEPT])])])])
        assert partitions_of(accepted)[(tid, 0)].error_code == 0

        # the first holder's late ACCEPT: behind the start offset now, no error, no change
        late = share_acknowledge(holder, group=group, epoch=1,
                                 parts=[(tid, [(0, [(0, 2, [ACCEPT])])])])
        assert partitions_of(late)[(tid, 0)].error_code == 0
        assert states(clocked, group, tid) == []
