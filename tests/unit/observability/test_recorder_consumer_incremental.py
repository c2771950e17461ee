"""The consumer protocol's flight recorder follows ownership and reconciliation through the
members an operation changed (not the whole group at every operation): after any sequence of
joins, heartbeats, leaves, static restarts, timeouts, new partitions and failed writes, what it
holds is what looking at the whole group gives, every time it looks (an operation whose write
then fails is undone after the look: the next look sees the members put back)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.observability.consumer_recorder import _owners, _reconciled
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.consumer.harness import ConsumerHarness

OPS = st.lists(st.sampled_from(["join", "static-join", "beat", "beat", "beat", "leave",
                                "static-leave", "tick", "grow", "fail"]),
               min_size=1, max_size=50)


def checking(recorder) -> list:
    """After each look the recorder takes at a group, compare what it holds with the whole
    group; returns the list of groups checked."""
    observe, checked = recorder.observe, []

    def observe_and_check(group_id, group, now, result):
        observe(group_id, group, now, result)
        if group is None:
            return
        assert recorder._owners[group_id] == _owners(group)
        known = recorder._unreconciled.get(group_id)
        if known is not None:
            epoch, waiting = known
            assert epoch == group.assignment_epoch
            assert waiting == {m.member_id for m in group.members.values()
                               if not _reconciled(m, epoch)}
        checked.append(group_id)

    recorder.observe = observe_and_check
    return checked


@settings(max_examples=150, deadline=None)
@given(OPS, st.randoms(use_true_random=False))
def test_what_the_recorder_follows_is_what_the_whole_group_says(ops, rnd):
    h = ConsumerHarness({"t": 6})
    checked = checking(h.flight.recorders["consumer"])
    known: dict[str, list] = {}        # member id -> [epoch, owned, instance id]
    serial = 0
    for op in ops:
        if op in ("join", "static-join") or not known:
            serial += 1
            instance = f"i{rnd.randrange(3)}" if op == "static-join" else None
            r = h.join(f"m{serial}", instance_id=instance)
            if r.error == ErrorCode.none:
                known[f"m{serial}"] = [r.member_epoch, r.assignment, instance]
        else:
            m = rnd.choice(sorted(known))
            epoch, owned, instance = known[m]
            if op == "beat":
                r = h.heartbeat(m, epoch, owned=owned, instance_id=instance)
                if r.error != ErrorCode.none:
                    del known[m]
                else:
                    known[m][0] = r.member_epoch
                    if r.assignment is not None:
                        known[m][1] = r.assignment
            elif op == "leave":
                h.heartbeat(m, -1, instance_id=instance)
                del known[m]
            elif op == "static-leave" and instance is not None:
                h.heartbeat(m, -2, instance_id=instance)
                del known[m]
            elif op == "tick":
                h.advance(20_000)
            elif op == "grow":
                h.set_topic("t", h.image.lookup("t")[1] + 1)
            elif op == "fail":
                h.fail_next_write = ErrorCode.not_coordinator
    assert checked             # the first join, at least
