"""The Java consumer as judge (KIP-345's own client) against roster, and the same scenario against
Apache Kafka 4.4 where it is cheap, to show equal outcomes: four static members in a rolling
bounce in both group protocols, cooperative-sticky with KIP-792's generation in the
subscriptions, KIP-814's leader restart, and Admin.removeMembersFromConsumerGroup by instance id.

All members of a scenario are threads of one JVM (tests/java Consumers); the test reads the JSON
events it prints (rebalance callbacks with groupMetadata(), the leader's assignor input)."""
from __future__ import annotations

import pytest

from tests.support.java_judges import JavaProgram
from tests.support.judges import (  # noqa: F401 (fixtures)
    HEARTBEAT_MS,
    KAFKA,
    ROSTER,
    callbacks_of,
    jvm,
    member_settings,
    owned,
    roster_broker,
    target,
    topic_with,
    wait_split,
)
from tests.support.kafka_peer import unique_name

# A rebalance reaches every member with its next heartbeat, so three heartbeat intervals without
# a callback mean there was none.
QUIET_S = 3 * HEARTBEAT_MS / 1000


# -- four static members in a rolling bounce ---------------------------------------------------

@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_rolling_bounce_of_four_static_members_calls_no_callback_on_the_others(
        target, jvm, protocol):
    partitions = 8
    topic = topic_with(target, "java-rolling", partitions)
    group = unique_name("java-rolling")
    names = [f"m{i}" for i in range(4)]
    for i, name in enumerate(names):
        jvm.send(f"start {name} {topic} "
                 + member_settings(target, group, protocol, f"{group}-i{i}"))
    before = wait_split(jvm, names, topic, partitions, 2)
    generation = {n: jvm.select("assigned", member=n)[-1]["generation"] for n in names}
    for i, name in enumerate(names):
        others = [n for n in names if n != name]
        mark = jvm.mark()
        jvm.send(f"stop {name}")
        jvm.wait_for(lambda: jvm.since(mark, "closed", member=name), f"{name} closed")
        restart = jvm.mark()
        jvm.send(f"start {name} {topic} "
                 + member_settings(target, group, protocol, f"{group}-i{i}"))
        jvm.wait_for(lambda: owned(jvm, name, restart) == before[name]
                     or callbacks_of(jvm, mark, others),
                     lambda: f"{name} back with {sorted(before[name])}: "
                     f"{jvm.since(restart, member=name)}")
        assert callbacks_of(jvm, mark, others) == [], f"restarting {name} called the others back"
        back = jvm.since(restart, "assigned", member=name)
        # The KIP-848 Java client calls onPartitionsAssigned with nothing first when its first
        # assignment names a topic it has no metadata for yet (its Metadata answer came after
        # the heartbeat's), on either broker; what the broker gave it is the rest.
        while protocol == "consumer" and back and not back[0]["partitions"]:
            back = back[1:]
        assert [sorted(e["partitions"]) for e in back] == [sorted(before[name])]
        if protocol == "classic":   # no rebalance: the group's generation did not move
            assert back[0]["generation"] == generation[name]
    settled = jvm.mark()
    broken = jvm.quiet(lambda: callbacks_of(jvm, settled, names), QUIET_S)
    assert not broken, f"callbacks after the bounce: {broken}"
    assert {n: owned(jvm, n) for n in names} == before


# -- KIP-814: the static leader restarts -------------------------------------------------------

JUDGED_RANGE = "partition.assignment.strategy=roster.judge.JudgedAssignors$Range"
JUDGED_COOPERATIVE = "partition.assignment.strategy=roster.judge.JudgedAssignors$CooperativeSticky"


def judged_group(target, jvm: JavaProgram, prefix: str, partitions: int, strategy: str):
    """A fresh topic and group; start(name) adds static classic member `name` whose assignor
    reports (JudgedAssignors) when it leads."""
    topic, group = topic_with(target, prefix, partitions), unique_name(prefix)

    def start(name: str) -> None:
        jvm.send(f"start {name} {topic} {strategy} "
                 + member_settings(target, group, "classic", f"{group}-{name}"))

    return start, topic, group


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_static_leader_restart_keeps_its_assignment_and_leads_without_a_rebalance(target, jvm):
    partitions = 6
    start, topic, group = judged_group(target, jvm, "java-kip814", partitions, JUDGED_RANGE)
    names = ["m0", "m1", "m2"]
    for name in names:
        start(name)
    before = wait_split(jvm, names, topic, partitions, 2)
    leader = jvm.select("assign")[-1]["member"]
    others = [n for n in names if n != leader]
    mark = jvm.mark()
    jvm.send(f"stop {leader}")
    jvm.wait_for(lambda: jvm.since(mark, "closed", member=leader), f"{leader} closed")
    restart = jvm.mark()
    start(leader)
    jvm.wait_for(lambda: owned(jvm, leader, restart) == before[leader]
                 or callbacks_of(jvm, mark, others),
                 lambda: f"{leader} back with {sorted(before[leader])}")
    # JoinGroup v9 told it SkipAssignment: it ran no assignor, and nobody else did either
    assert jvm.since(mark, "assign") == []
    assert callbacks_of(jvm, mark, others) == []
    # it still leads: the next member to join is assigned by it, over everyone's subscription
    joined = jvm.mark()
    start("m3")
    assignment = jvm.wait_for(lambda: jvm.since(joined, "assign"), "the next assignment")[0]
    assert assignment["member"] == leader
    assert sorted(s["instance"] for s in assignment["subscriptions"].values()) == \
        sorted(f"{group}-{n}" for n in [*names, "m3"])


# -- KIP-792: cooperative-sticky with the generation in the subscription -----------------------

def disjoint_throughout(program: JavaProgram, names: list[str]) -> bool:
    """Cooperative rebalancing never lets two members own a partition at the same time."""
    current: dict[str, set[str]] = {n: set() for n in names}
    for event in program.select():
        name = event.get("member")
        if name not in current:
            continue
        if event["event"] == "assigned":
            taken = set().union(*(ps for n, ps in current.items() if n != name))
            if taken & set(event["partitions"]):
                return False
            current[name] |= set(event["partitions"])
        elif event["event"] in ("revoked", "lost"):
            current[name] -= set(event["partitions"])
    return True


@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
def test_cooperative_sticky_subscriptions_carry_the_generation_of_what_they_own(target, jvm):
    partitions = 12
    start, topic, group = judged_group(target, jvm, "java-kip792", partitions, JUDGED_COOPERATIVE)
    names = ["m0", "m1", "m2"]
    for name in names:
        start(name)
    before = wait_split(jvm, names, topic, partitions, 4)

    def last_generations() -> dict[str, int]:
        return {n: jvm.select("assigned", member=n)[-1]["generation"] for n in names}

    # the round that evened the split is told to every member, the ones it gave nothing
    # too, a moment apart: the generations they own their partitions in are known once
    # all three have heard it
    jvm.wait_for(lambda: len(set(last_generations().values())) == 1, "one generation")
    generation = last_generations()
    mark = jvm.mark()
    start("m3")
    wait_split(jvm, [*names, "m3"], topic, partitions, 3)
    first, *later = jvm.since(mark, "assign")
    seen = {s["instance"]: s for s in first["subscriptions"].values()}
    for name in names:   # KIP-792: owned partitions with the generation they were owned in
        assert seen[f"{group}-{name}"]["owned"] == sorted(before[name])
        assert seen[f"{group}-{name}"]["generation"] == generation[name]
    assert seen[f"{group}-m3"]["owned"] == [] and seen[f"{group}-m3"]["generation"] == -1
    assert later, "cooperative rebalancing takes a second round to hand out the revoked partitions"
    assert disjoint_throughout(jvm, [*names, "m3"])


# -- Admin.removeMembersFromConsumerGroup by instance id ---------------------------------------

@pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_admin_removes_a_closed_static_member_at_once(target, jvm, protocol):
    partitions = 4
    topic = topic_with(target, "java-remove", partitions)
    group = unique_name("java-remove")
    session = {"session.timeout.ms": 60000} if protocol == "classic" else {}
    for name in ("m0", "m1"):
        jvm.send(f"start {name} {topic} "
                 + member_settings(target, group, protocol, f"{group}-{name}", **session))
    wait_split(jvm, ["m0", "m1"], topic, partitions, 2)
    mark = jvm.mark()
    jvm.send("stop m1")   # static: it stays in the group, its partitions unconsumed
    jvm.wait_for(lambda: jvm.since(mark, "closed", member="m1"), "m1 closed")
    jvm.send(f"remove {target.bootstrap} {group} {group}-m1")
    removed = jvm.wait_for(lambda: jvm.since(mark, "removed"), "the removal")[0]
    assert "error" not in removed, removed
    # m0 takes every partition now, long before the session timeout (60 s classic, 45 s consumer)
    jvm.wait_for(lambda: len(owned(jvm, "m0")) == partitions,
                 lambda: f"m0 to own all partitions: {sorted(owned(jvm, 'm0'))}", timeout_s=20)
    jvm.send(f"remove {target.bootstrap} {group} {group}-nobody")
    refused = jvm.wait_for(lambda: jvm.since(mark, "removed", instance=f"{group}-nobody"),
                           "the second removal")[0]
    assert refused.get("error") == "UnknownMemberIdException", refused
