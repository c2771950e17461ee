"""The steady heartbeat (ConsumerCoordinator.steady_heartbeat): answered without an operation
only when the full heartbeat would have changed nothing but the member's session; in every
other case it declines (None) and the full heartbeat decides. Sessions: one timer per group,
deadlines moved by heartbeats without timer work."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.coordinator.consumer.coordinator import session_key
from roster.coordinator.consumer.model import ClassicMetadata, VersionedTopicImage
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.consumer.harness import ConsumerHarness, topic_id


def harness(topics: dict[str, int]) -> ConsumerHarness:
    h = ConsumerHarness()
    h.image = VersionedTopicImage({n: (topic_id(n), p) for n, p in topics.items()})
    return h


def set_topic(h: ConsumerHarness, name: str, partitions: int) -> None:
    h.set_topic(name, partitions)
    h.image.changes += 1


def steady(h: ConsumerHarness, member_id: str, epoch: int, client_id: str = "c",
           group: str = "g", instance_id: str | None = None):
    return h.coordinator.steady_heartbeat(group, member_id, epoch, client_id, "/127.0.0.1",
                                          h.image.version(), h.now, instance_id)


def stable_pair(h: ConsumerHarness):
    """Two members, reconciled, each having sent one full heartbeat since."""
    r1 = h.join("a")
    r2 = h.join("b")
    owned = {"a": r1.assignment, "b": r2.assignment}
    epochs = {"a": r1.member_epoch, "b": r2.member_epoch}
    for _ in range(4):
        for m in "ab":
            r = h.heartbeat(m, epochs[m], owned=owned[m])
            assert r.error == ErrorCode.none
            epochs[m] = r.member_epoch
            owned[m] = r.assignment if r.assignment is not None else owned[m]
    assert h.group().state() == "Stable"
    return epochs


def test_a_steady_heartbeat_moves_the_session_and_writes_nothing():
    h = harness({"t": 4})
    epochs = stable_pair(h)
    records = len(h.records)
    h.advance(30_000)
    assert steady(h, "a", epochs["a"]) == h.coordinator.config.heartbeat_ms("g")
    assert h.member("a").member_epoch == epochs["a"]
    assert len(h.records) == records
    assert h.group().session_deadlines["a"] == 75_000
    # b was not heard from: its session ends first, a's timer is still the group's one timer
    h.advance(15_000)
    assert set(h.group().members) == {"a"}
    h.advance(29_999)
    assert "a" in h.group().members
    h.advance(1)
    assert "a" not in h.group().members


def test_it_declines_whatever_the_full_heartbeat_would_change_or_refuse():
    h = harness({"t": 4})
    epochs = stable_pair(h)
    assert steady(h, "a", epochs["a"]) is not None
    assert steady(h, "a", epochs["a"] + 1) is None          # fenced: the full path says so
    assert steady(h, "a", epochs["a"] - 1) is None          # the previous-epoch rule
    assert steady(h, "nobody", epochs["a"]) is None          # UNKNOWN_MEMBER_ID
    assert steady(h, "a", epochs["a"], group="other") is None
    assert steady(h, "a", epochs["a"], client_id="renamed") is None  # a member record
    assert steady(h, "a", 0) is None                          # a (re)join
    # a member speaking the classic protocol inside the group (an online upgrade): its first
    # ConsumerGroupHeartbeat makes it a consumer member, which is a change to write
    h.group().put_member(h.member("b").replace(
        classic=ClassicMetadata(45_000, (("range", b""),))))
    assert steady(h, "b", epochs["b"]) is None


def test_a_static_member_may_send_its_instance_id_every_time():
    h = harness({"t": 4})
    r = h.join("a", instance_id="ia")
    r = h.heartbeat("a", r.member_epoch, owned=r.assignment, instance_id="ia")
    assert steady(h, "a", r.member_epoch, instance_id="ia") is not None
    assert steady(h, "a", r.member_epoch) is not None          # or leave it out
    # another member's instance id, or one nobody has: the full heartbeat refuses those
    h.join("b", instance_id="ib")
    for wrong in ("ib", "nobody"):
        assert steady(h, "a", h.member("a").member_epoch, instance_id=wrong) is None
    assert h.heartbeat("a", h.member("a").member_epoch, instance_id="ib").error == \
        ErrorCode.fenced_instance_id


def test_a_catalog_change_sends_heartbeats_the_full_way_until_one_finds_nothing():
    h = harness({"t": 4})
    epochs = stable_pair(h)
    epoch = h.group().group_epoch
    set_topic(h, "t", 6)
    assert steady(h, "a", epochs["a"]) is None
    r = h.heartbeat("a", epochs["a"])               # the full heartbeat sees the new partitions
    assert h.group().group_epoch == epoch + 1
    assert steady(h, "a", r.member_epoch) is None    # a target to reconcile to
    h2 = harness({"t": 4})
    epochs2 = stable_pair(h2)
    set_topic(h2, "unrelated", 1)                    # nothing for this group, a new version
    assert steady(h2, "a", epochs2["a"]) is None
    assert h2.heartbeat("a", epochs2["a"]).error == ErrorCode.none   # nothing to change ...
    assert steady(h2, "a", epochs2["a"]) is not None                  # ... so steady again


def test_a_member_changing_or_timing_out_sends_everyone_the_full_way():
    h = harness({"t": 4})
    epochs = stable_pair(h)
    h.join("c")                                       # a new target for everyone
    assert steady(h, "a", epochs["a"]) is None
    assert steady(h, "b", epochs["b"]) is None
    h2 = harness({"t": 4})
    epochs = stable_pair(h2)
    h2.advance(45_000)                                # both sessions end: every member fenced
    assert steady(h2, "a", epochs["a"]) is None


def test_a_failed_write_leaves_no_steady_answer_behind():
    h = harness({"t": 4})
    epochs = stable_pair(h)
    h.fail_next_write = ErrorCode.not_coordinator
    assert h.join("c").error == ErrorCode.not_coordinator   # the group is put back ...
    assert steady(h, "a", epochs["a"]) is None               # ... but looked at again first
    assert h.heartbeat("a", epochs["a"]).error == ErrorCode.none
    assert steady(h, "a", epochs["a"]) is not None


def test_the_group_has_one_session_timer_armed_for_its_earliest_deadline():
    h = harness({"t": 4})
    h.join("a")
    h.advance(10_000)
    h.join("b")
    assert h.group().session_deadlines == {"a": 45_000, "b": 55_000}
    assert [k for k in h.timers if k.startswith("consumer-sessions")] == [session_key("g")]
    assert h.timers[session_key("g")][0] == 45_000


OPS = st.lists(st.sampled_from(["join", "full", "light", "tick", "grow", "other-topic",
                                "leave", "fail"]), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(OPS, st.randoms(use_true_random=False))
def test_whenever_it_answers_the_full_heartbeat_would_answer_the_same_and_write_nothing(
        ops, rnd):
    h = harness({"t": 6})
    known: dict[str, list] = {}      # member -> [epoch, owned]
    serial = 0
    for op in ops:
        live = sorted(known)
        if op == "join" or not live:
            serial += 1
            instance = f"i{serial % 3}" if serial % 2 else None
            r = h.join(f"m{serial}", instance_id=instance)
            if r.error == ErrorCode.none:
                known[f"m{serial}"] = [r.member_epoch, r.assignment, instance]
            continue
        m = rnd.choice(live)
        if op in ("full", "light"):
            r = h.heartbeat(m, known[m][0], owned=known[m][1] if op == "full" else None,
                            instance_id=known[m][2])
            if r.error != ErrorCode.none:
                del known[m]
            else:
                known[m][0] = r.member_epoch
                if r.assignment is not None:
                    known[m][1] = r.assignment
        elif op == "tick":
            h.advance(20_000)
        elif op == "grow":
            set_topic(h, "t", h.image.lookup("t")[1] + 1)
        elif op == "other-topic":
            set_topic(h, f"x{serial}", 1)
        elif op == "leave":
            h.heartbeat(m, -1, instance_id=known[m][2])
            del known[m]
        elif op == "fail":
            h.fail_next_write = ErrorCode.not_coordinator
        for member in sorted(known):
            instance = known[member][2]
            if steady(h, member, known[member][0], instance_id=instance) is None:
                continue
            records = len(h.records)
            r = h.heartbeat(member, known[member][0], instance_id=instance)
            assert (r.error, r.member_epoch, r.assignment) == \
                (ErrorCode.none, known[member][0], None)
            assert len(h.records) == records
