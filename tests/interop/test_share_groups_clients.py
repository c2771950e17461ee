"""Share groups (KIP-932) judged by the two real share consumers, against Apache Kafka 4.4 and
roster with the same assertions: the Java KafkaShareConsumer (tests/java ShareConsumers) and
confluent-kafka 2.16's ShareConsumer (tests/support/share_consumer_process.py), members of one
share group on one topic of several partitions.

What is judged: every record is delivered; no record is held by two consumers at once (a record
is delivered again only after its holder released it, with a higher delivery count); released
records come back with delivery count 2; and a group left at Kafka's default
share.auto.offset.reset (latest) starts where the log ended when its share partitions were
initialised. roster runs are skipped while its ApiVersions answer lacks ShareGroupHeartbeat."""
from __future__ import annotations

from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name
from tests.support.share_judges import (  # noqa: F401 (fixtures)
    SHARE_BOTH,
    confluent,
    deliveries,
    delivery_faults,
    java,
    produce,
    share_group,
    share_offsets,
    share_target,
    stop_members,
    summary,
    topic_with,
    wait_delivered,
    wait_until,
)

PARTITIONS = 4


@SHARE_BOTH
def test_java_and_confluent_share_consumers_split_a_topic_each_record_once(
        share_target, java, confluent):
    target = share_target
    topic = topic_with(target, "share-split", PARTITIONS)
    group = share_group(target, "share-split")
    before = [f"a{i}" for i in range(200)]
    produce(target.bootstrap, topic, before, PARTITIONS)
    # implicit (the default) for the Java members, explicit for the librdkafka ones
    for name in ("j1", "j2"):
        java.member(name, target, group, topic)
    for name in ("c1", "c2"):
        confluent.member(name, target, group, topic, **{"share.acknowledgement.mode": "explicit"})
    wait_delivered([java, confluent], set(before), "the records produced before the group")
    after = [f"b{i}" for i in range(100)]
    produce(target.bootstrap, topic, after, PARTITIONS)
    wait_delivered([java, confluent], set(after), "the records produced while it runs")
    stop_members(java, ["j1", "j2"])
    stop_members(confluent, ["c1", "c2"])

    got = deliveries(java, confluent)
    assert delivery_faults([java, confluent]) == []
    assert sorted(e["value"] for e in got) == sorted(before + after)   # each exactly once
    assert {e["deliveryCount"] for e in got} == {1}
    assert {(e["partition"], e["offset"]) for e in got} == {
        (p, o) for p in range(PARTITIONS) for o in range(75)}
    # every record acknowledged: no lag. (Kafka 4.4 reported start offset 50 here, the end of
    # the first wave: the share-partition start offset it persists can trail records acknowledged
    # at the front of the in-flight window, which the lag counts as delivered.)
    offsets = share_offsets(target.bootstrap, group)
    print("share offsets:", offsets)
    assert {k: lag for k, (_, lag) in offsets.items()} == {(topic, p): 0 for p in range(PARTITIONS)}
    assert all(0 <= start <= 75 for start, _ in offsets.values())
    print("deliveries per member:", {m: sum(e["member"] == m for e in got)
                                     for m in ("j1", "j2", "c1", "c2")})


@SHARE_BOTH
def test_released_records_come_back_with_delivery_count_two_to_either_client(
        share_target, java, confluent):
    target = share_target
    topic = topic_with(target, "share-release", PARTITIONS)
    group = share_group(target, "share-release")
    values = [f"r{i}" for i in range(40)]
    produce(target.bootstrap, topic, values, PARTITIONS)
    explicit = {"share.acknowledgement.mode": "explicit", "judge.ack": "release-once"}
    java.member("j1", target, group, topic, **explicit)
    confluent.member("c1", target, group, topic, **explicit)
    programs = [java, confluent]

    def accepted() -> set[str]:
        return {e["value"] for p in programs for e in p.select("record")
                if e["deliveryCount"] == 2}

    wait_until(lambda: accepted() == set(values) and sum(
        len(p.select("acked", type="ACCEPT")) for p in programs) >= len(values),
        lambda: "every record released once, then accepted: " + summary(programs))
    stop_members(java, ["j1"])
    stop_members(confluent, ["c1"])
    assert delivery_faults(programs) == []
    counts: dict[str, list[int]] = {}
    for e in deliveries(*programs):
        counts.setdefault(e["value"], []).append(e["deliveryCount"])
    assert counts == {v: [1, 2] for v in values}
    assert all("error" not in a for p in programs for a in p.select("acked"))
    offsets = share_offsets(target.bootstrap, group)
    print("share offsets:", offsets)
    assert {k: lag for k, (_, lag) in offsets.items()} == {(topic, p): 0 for p in range(PARTITIONS)}


@SHARE_BOTH
def test_a_group_at_the_default_latest_reset_skips_what_came_before_it(share_target, java):
    target = share_target
    topic = topic_with(target, "share-latest", 1)
    group = unique_name("share-latest")    # no group config: share.auto.offset.reset latest
    produce(target.bootstrap, topic, [f"old{i}" for i in range(5)], 1)
    java.member("j1", target, group, topic)
    # Kafka takes the start offset when a broker first loads the share partition (the first
    # ShareFetch after the member was assigned it; DescribeShareGroupOffsets says start -1,
    # lag -1 until its state is first written): nothing tells a client when, so probes are
    # produced until one is delivered
    probes = 0
    while not java.records():
        produce(target.bootstrap, topic, [f"probe{probes}"], 1)
        probes += 1
        with java.cond:   # woken by the judge's next event
            java.cond.wait(0.3)
        assert probes < 300, "no probe delivered in 90 s"
    produce(target.bootstrap, topic, [f"new{i}" for i in range(3)], 1)
    wait_delivered([java], {"new0", "new1", "new2"}, "the records produced after it started")
    stop_members(java, ["j1"])
    got = [(e["value"], e["offset"]) for e in java.records()]
    assert not [v for v, _ in got if v.startswith("old")], got
    first = got[0][1]
    assert first >= 5 and got == [(f"probe{o - 5}", o) for o in range(first, 5 + probes)] + [
        ("new0", 5 + probes), ("new1", 6 + probes), ("new2", 7 + probes)]
    start, lag = share_offsets(target.bootstrap, group)[(topic, 0)]
    assert lag == 0 and first <= start <= 8 + probes
