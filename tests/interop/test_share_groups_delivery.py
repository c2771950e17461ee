"""What a share group promises about delivery when things go wrong, judged by the real share
consumers (tests/java ShareConsumers, confluent-kafka's ShareConsumer) against Apache Kafka 4.4
and roster with the same assertions:

- a consumer killed (-9, its own process) while it holds records: they come back to the
  others with delivery count 2 when its connection goes away, long before the group's
  acquisition lock (share.record.lock.duration.ms, set to 60 s) would expire;
- a rejected record is never delivered again, and (KIP-1191, share.version=2) reaches the
  group's dead-letter topic with Kafka's __dlq.errors.* headers;
- a dead-letter topic Kafka refuses to write to (not created with
  errors.deadletterqueue.group.enable=true, a name without the dlq. prefix, or no topic at all:
  Kafka does not create it) gets nothing, the broker says why, and the record is archived;
- a record released on every delivery is delivered share.delivery.count.limit times, then
  archived (never delivered again) and dead-lettered;
- a consumer that stays connected but holds records past the lock: they come back with delivery
  count 2 once the lock expired (3 once a second lock expired, when the slow one's client
  fetched them again at 2 in the background), and its late ACCEPT is answered without error
  and changes nothing;
- RENEW (KIP-1222, Java only: confluent-kafka 2.16 has no RENEW) keeps a slow consumer's lock
  past the lock duration: nobody else gets the record, its delivery count stays 1;
- the broker killed -9 mid-stream and restarted on its data: nothing whose acknowledgement was
  answered is delivered again, nothing unacknowledged is lost (private brokers: roster's
  BrokerProcess and a KafkaPeer, each killed with SIGKILL and restarted on the same data).
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from roster.admin.client import AdminClient
from roster.admin.topics import create, list_names
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import PEER_SETTINGS, KafkaPeer, unique_name
from tests.support.process import BrokerProcess
from tests.support.share_judges import (  # noqa: F401 (fixtures)
    SHARE_BOTH,
    ShareProgram,
    confluent,
    deliveries,
    delivery_faults,
    java,
    needs_share_groups,
    produce,
    set_group_configs,
    share_group,
    share_offsets,
    share_target,
    stop_members,
    summary,
    topic_with,
    wait_delivered,
    wait_until,
)

EXPLICIT = {"share.acknowledgement.mode": "explicit"}
LOCK_MS = 15000   # Kafka's group.share.min.record.lock.duration.ms
HOLD_PAST_LOCK_MS = 20000   # how long the slow consumer holds records past their lock


def end_offset(target, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": unique_name("ends")})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
    finally:
        consumer.close()


def dead_letters(bootstrap: str, topic: str, count: int) -> list[dict]:
    """The first `count` records of the dead-letter topic's partition 0: value and headers."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("dlq-reader"),
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    found: list[dict] = []
    deadline = time.monotonic() + 60
    try:
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            found.append({"key": message.key(), "value": message.value(),
                          "headers": {k: v.decode() for k, v in (message.headers() or [])}})
    finally:
        consumer.close()
    assert len(found) == count, f"{len(found)} of {count} dead letters: {found}"
    return found


def dead_lettered_group(target, prefix: str, **configs: str) -> tuple[str, str]:
    """A share group (earliest, `configs`) and its dead-letter topic `dlq.<group>` (Kafka's
    default errors.deadletterqueue.topic.name.prefix is "dlq."), created with
    errors.deadletterqueue.group.enable=true: Kafka's broker does not create it by default."""
    group = unique_name(prefix)
    dlq = f"dlq.{group}"
    with AdminClient(target.bootstrap) as admin:
        create(admin, dlq, 1, {"errors.deadletterqueue.group.enable": "true"})
    set_group_configs(target.bootstrap, group, {
        "share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": dlq,
        **configs})
    return group, dlq


# -- a consumer killed while it holds records --------------------------------------------------

@SHARE_BOTH
@pytest.mark.parametrize("victim_client", ["java", "confluent"])
def test_records_a_killed_consumer_held_come_back_with_delivery_count_two(
        share_target, victim_client):
    target = share_target
    # one partition, which both members share (the share assignor gives a partition to one
    # member while there are at least as many partitions as members: a killed member's own
    # partitions would reach the others only when its session expired, 45 s on Kafka)
    topic = topic_with(target, "share-kill", 1)
    group = share_group(target, "share-kill", **{"share.record.lock.duration.ms": "60000"})
    values = [f"k{i}" for i in range(20)]
    produce(target.bootstrap, topic, values, 1)
    victim = ShareProgram.of(victim_client).start()
    survivor = ShareProgram.of("confluent" if victim_client == "java" else "java").start()
    programs = [victim, survivor]
    try:
        victim.member("victim", target, group, topic, **EXPLICIT, **{"judge.ack": "hold"})
        victim.wait_for(lambda: victim.select("holding"), "the victim holding records")
        held = {e["offset"] for e in victim.records()}
        survivor.member("survivor", target, group, topic, **EXPLICIT)
        # the survivor is a member taking records before the victim dies (what the victim does
        # not hold, or probes produced until one reaches it)
        probes: list[str] = []
        while not survivor.records():
            probes.append(f"probe{len(probes)}")
            produce(target.bootstrap, topic, probes[-1:], 1)
            with survivor.cond:
                survivor.cond.wait(0.5)
            assert len(probes) < 120, "the survivor never took a record: " + summary(programs)
        killed = time.monotonic_ns()
        victim.kill9()
        wait_delivered([survivor], set(values), "the killed victim's records, redelivered")
        stop_members(survivor, ["survivor"])
        assert delivery_faults(programs, gone={"victim": killed}) == []
        after = [e for e in survivor.records() if e["t"] > killed]
        assert {e["offset"]: e["deliveryCount"] for e in after if e["offset"] in held} == {
            offset: 2 for offset in held}
        # released when its connection went away, long before the 60 s lock would expire
        delay = (min(e["t"] for e in after) - killed) / 1e9
        print(f"{len(held)} held records back {delay:.2f} s after the kill")
        assert delay < 30
    finally:
        victim.kill9()
        survivor.stop()
        print(summary(programs))


@SHARE_BOTH
def test_records_held_past_the_lock_come_back_and_a_late_accept_changes_nothing(
        share_target, java, confluent):
    target = share_target
    topic = topic_with(target, "share-expire", 1)
    group = share_group(target, "share-expire",
                        **{"share.record.lock.duration.ms": str(LOCK_MS)})
    values = [f"e{i}" for i in range(5)]
    produce(target.bootstrap, topic, values, 1)
    # a slow consumer that stays connected: it holds what it got for longer than the lock.
    # The other consumer must take the records between the lock's expiry and the slow one's
    # late ACCEPT: were that window short, a client stalled through it (a loaded machine) would
    # let the slow one's ACCEPT be refused and its next poll take them back (delivery count 2)
    # and accept them, and the other would never see them, on Kafka 4.4 as on roster
    java.member("slow", target, group, topic, **EXPLICIT, **{
        "judge.ack": "hold", "judge.hold.ms": str(LOCK_MS + HOLD_PAST_LOCK_MS)})
    java.wait_for(lambda: java.select("holding"), "the slow consumer holding records")
    held = {e["offset"]: e["t"] for e in java.records()}
    confluent.member("other", target, group, topic, **EXPLICIT)
    try:
        wait_delivered([confluent], set(values), "the records the slow one held, after its lock",
                       timeout_s=LOCK_MS / 1000 + 60)
    finally:
        print(summary([java, confluent]))
    java.wait_for(lambda: len(java.select("acked")) >= len(held), "the slow consumer's late acks",
                  timeout_s=HOLD_PAST_LOCK_MS / 1000 + 30)
    stop_members(java, ["slow"])
    stop_members(confluent, ["other"])
    programs = [java, confluent]
    again = [e for e in confluent.records() if e["offset"] in held]
    assert {e["offset"] for e in again} == set(held)
    # The Java client may fetch the held records again at count 2 while its application
    # holds them: KafkaShareConsumer 4.4 keeps fetching in the background until an answer
    # carries records, and an application poll() that timed out just before the first answer
    # was read asks for more after it (seen on loaded machines). The other gets them once that
    # second lock expired too, at count 3; the slow one's application sees them after its hold,
    # if it polls again before it is stopped.
    counts = {e["offset"]: (e["deliveryCount"], (e["t"] - held[e["offset"]]) / 1e6)
              for e in again}
    refetched = {e["offset"] for e in java.records() if e["deliveryCount"] == 2}
    print(f"delivery count and ms since the first delivery, per offset: {counts}; seen again "
          f"by the slow one after its hold: {sorted(refetched)}")
    assert {count for count, _ in counts.values()} <= {2, 3}, counts
    assert refetched <= {o for o, (count, _) in counts.items() if count == 3}, refetched
    # each delivery after the first only once the one before it ended: nobody released or
    # left, so by its acquisition lock's expiry
    early = {offset: (count, ms) for offset, (count, ms) in counts.items()
             if ms < (count - 1) * LOCK_MS - 250}
    assert not early, f"redelivered before the {LOCK_MS} ms locks before it expired: {early}"
    # the slow consumer's acceptance of what it held came after the other accepted them:
    # Kafka 4.4 answers it without an error, and nothing changes
    late = java.select("acked")[:len(held)]
    print("late acknowledgements:", [(a["offset"], a["type"], a.get("error")) for a in late],
          "ack results:", [(a["offsets"], a["error"]) for a in java.select("ack-result")])
    assert {a["offset"] for a in late} == set(held)
    assert [a.get("error") for a in late] == [None] * len(held)
    assert java.select("ack-result")[0]["error"] is None
    if all(count == 2 for count, _ in counts.values()):
        assert len(java.select("ack-result")) == 1
    faults = [f for f in delivery_faults(programs) if "while slow held it" not in f
              and not (refetched and "delivered to slow (count 2) while other held it" in f)]
    assert faults == []
    offsets = share_offsets(target.bootstrap, group)
    assert offsets[(topic, 0)][1] == 0


# -- rejected records, the delivery count limit, the dead-letter topic -------------------------

@SHARE_BOTH
def test_a_rejected_record_is_never_delivered_again_and_is_dead_lettered(
        share_target, java, confluent):
    target = share_target
    topic = topic_with(target, "share-reject", 2)
    group, dlq = dead_lettered_group(target, "share-reject")
    values = [f"reject{i}" if i % 5 == 0 else f"ok{i}" for i in range(20)]
    produce(target.bootstrap, topic, values, 2)
    java.member("j1", target, group, topic, **EXPLICIT, **{"judge.ack": "reject-marked"})
    confluent.member("c1", target, group, topic, **EXPLICIT, **{"judge.ack": "reject-marked"})
    programs = [java, confluent]
    wait_delivered(programs, set(values), "every record")
    # a record produced after the rejections is delivered; no rejected one comes back
    produce(target.bootstrap, topic, ["after0", "after1"], 2)
    wait_delivered(programs, {"after0", "after1"}, "the records produced after")
    stop_members(java, ["j1"])
    stop_members(confluent, ["c1"])
    assert delivery_faults(programs) == []
    got = sorted(e["value"] for e in deliveries(*programs))
    assert got == sorted(values + ["after0", "after1"])   # each once
    rejected = {(e["partition"], e["offset"]) for p in programs
                for e in p.select("acked", type="REJECT")}
    assert len(rejected) == 4 and all("error" not in a for p in programs
                                      for a in p.select("acked"))
    letters = dead_letters(target.bootstrap, dlq, 4)
    print("dead letters:", letters)
    assert {(int(d["headers"]["__dlq.errors.partition"]), int(d["headers"]["__dlq.errors.offset"]))
            for d in letters} == rejected
    for d in letters:
        assert d["headers"]["__dlq.errors.group"] == group
        assert d["headers"]["__dlq.errors.topic"] == topic
        assert d["headers"]["__dlq.errors.delivery.count"] == "1"
        assert d["value"] is None   # errors.deadletterqueue.copy.record.enable is false


@SHARE_BOTH
def test_a_record_released_at_the_delivery_count_limit_is_archived_and_dead_lettered(
        share_target, java):
    target = share_target
    topic = topic_with(target, "share-limit", 1)
    group, dlq = dead_lettered_group(target, "share-limit", **{
        "share.delivery.count.limit": "2", "errors.deadletterqueue.copy.record.enable": "true"})
    produce(target.bootstrap, topic, ["poison0", "poison1", "poison2"], 1)
    java.member("j1", target, group, topic, **EXPLICIT, **{"judge.ack": "release"})
    wait_until(lambda: len(java.select("acked")) >= 6,
               lambda: "each record released twice: " + summary([java]))
    produce(target.bootstrap, topic, ["fine"], 1)
    wait_delivered([java], {"fine"}, "a record produced after the archived ones")
    stop_members(java, ["j1"])
    assert delivery_faults([java]) == []
    counts: dict[str, list[int]] = {}
    for e in deliveries(java):
        counts.setdefault(e["value"], []).append(e["deliveryCount"])
    # delivered twice (the limit), then never again
    assert {v: counts[v] for v in ("poison0", "poison1", "poison2")} == {
        "poison0": [1, 2], "poison1": [1, 2], "poison2": [1, 2]}
    letters = dead_letters(target.bootstrap, dlq, 3)
    print("dead letters:", letters)
    assert [(d["value"], d["headers"]["__dlq.errors.offset"],
             d["headers"]["__dlq.errors.delivery.count"]) for d in letters] == [
        (b"poison0", "0", "2"), (b"poison1", "1", "2"), (b"poison2", "2", "2")]


REFUSED_DEAD_LETTER_TOPICS = {
    # how the group's dead-letter topic is wrong -> what Kafka 4.4 logs (an ERROR, "Failed to
    # write to DLQ, proceeding to ARCHIVED regardless.", with this ConfigException), and roster
    # (a WARNING, "dead letters not written: ...")
    "not enabled": "DLQ is not enabled on configured DLQ topic for share group: {group}, "
                   "topic: {topic}.",
    "no prefix": "Configured DLQ topic name does not comply with the DLQ topic prefix in share "
                 "group: {group}, topic: {topic}, prefix: dlq..",
    "not created": "DLQ topic does not exist and auto create is disabled on cluster for share "
                   "group: {group}, topic: {topic}.",
}


@SHARE_BOTH
def test_a_dead_letter_topic_kafka_would_refuse_gets_nothing_and_the_record_is_archived(
        share_target, java):
    target = share_target
    topic = topic_with(target, "share-bad-dlq", 1)
    for case in REFUSED_DEAD_LETTER_TOPICS:
        group = unique_name("share-bad-dlq")
        bad = f"{group}-dead" if case == "no prefix" else f"dlq.{group}"
        good = f"dlq.{group}-good"
        with AdminClient(target.bootstrap) as admin:
            if case != "not created":
                create(admin, bad, 1, {} if case == "not enabled"
                       else {"errors.deadletterqueue.group.enable": "true"})
            create(admin, good, 1, {"errors.deadletterqueue.group.enable": "true"})
        # latest (the default): the earlier cases' records on the topic are not this group's
        set_group_configs(target.bootstrap, group, {"errors.deadletterqueue.topic.name": bad})
        name = case.replace(" ", "-")
        java.member(name, target, group, topic, **EXPLICIT, **{"judge.ack": "reject-marked"})
        probes = 0
        while not java.records(member=name):   # until the member's share partition is loaded
            produce(target.bootstrap, topic, [f"probe-{name}-{probes}"], 1)
            probes += 1
            with java.cond:
                java.cond.wait(0.3)
            assert probes < 300, "the member never took a record"
        produce(target.bootstrap, topic, [f"reject-{name}"], 1)
        java.wait_for(lambda: java.select("acked", member=name, type="REJECT"),
                      f"{case}: the rejection answered")
        said = REFUSED_DEAD_LETTER_TOPICS[case].format(group=group, topic=bad)
        wait_until(lambda: any(said in line for line in list(target.output)),
                   f"the broker saying: {said}")
        # the same group with a dead-letter topic it may write to: the next rejection lands
        # there, and by then nothing went to the refused one
        set_group_configs(target.bootstrap, group, {"errors.deadletterqueue.topic.name": good})
        produce(target.bootstrap, topic, [f"reject-{name}-again"], 1)
        (letter,) = dead_letters(target.bootstrap, good, 1)
        assert letter["headers"]["__dlq.errors.group"] == group
        stop_members(java, [name])
        with AdminClient(target.bootstrap) as admin:
            exists = bad in list_names(admin, True)
        assert exists == (case != "not created"), f"{case}: {bad} exists: {exists}"
        if exists:
            assert end_offset(target, bad) == 0, f"{case}: {bad} got dead letters"
        assert [e["value"] for e in java.records(member=name) if e["value"].startswith(
            "reject")] == [f"reject-{name}", f"reject-{name}-again"]   # archived, never again
    assert delivery_faults([java]) == []


# -- RENEW keeps a slow consumer's lock --------------------------------------------------------

@SHARE_BOTH
def test_renew_keeps_a_slow_consumers_lock_past_the_lock_duration(share_target, java, confluent):
    target = share_target
    topic = topic_with(target, "share-renew", 1)
    group = share_group(target, "share-renew",
                        **{"share.record.lock.duration.ms": str(LOCK_MS)})
    java.member("slow", target, group, topic, **EXPLICIT, **{
        "judge.ack": "renew", "judge.hold.ms": str(LOCK_MS + 1500),
        "judge.renew.every.ms": str(LOCK_MS // 3)})
    produce(target.bootstrap, topic, ["slow0"], 1)
    java.wait_for(lambda: java.records(value="slow0"), "the slow consumer's record")
    confluent.member("other", target, group, topic, **EXPLICIT)
    java.wait_for(lambda: java.select("acked", type="ACCEPT"),
                  lambda: "the slow consumer accepting at last: " + summary([java, confluent]),
                  timeout_s=LOCK_MS / 1000 + 30)
    # the other consumer was there all along, fetching: the next record reaches it
    stop_members(java, ["slow"])
    produce(target.bootstrap, topic, ["later"], 1)
    wait_delivered([confluent], {"later"}, "a record produced afterwards")
    stop_members(confluent, ["other"])
    programs = [java, confluent]
    first = min(e["t"] for e in java.records(value="slow0"))
    print("timeline (ms after the first delivery):", sorted(
        [(round((e["t"] - first) / 1e6), e["member"], "delivered", e["deliveryCount"])
         for e in deliveries(*programs) if e["value"] == "slow0"]
        + [(round((a["sent"] - first) / 1e6), "slow", "sent", a["type"])
           for a in java.select("acked", offset=0)]))
    assert delivery_faults(programs) == []
    slow = [e for e in deliveries(*programs) if e["value"] == "slow0"]
    assert {e["member"] for e in slow} == {"slow"} and {e["deliveryCount"] for e in slow} == {1}
    renews = java.select("acked", type="RENEW")
    assert renews and all("error" not in a for a in java.select("acked"))
    (accepted,) = java.select("acked", type="ACCEPT", offset=0)
    assert (accepted["sent"] - slow[0]["t"]) / 1e6 > LOCK_MS


# -- the broker killed -9 mid-stream -----------------------------------------------------------

class RosterRestartable:
    """A private roster broker killed with SIGKILL and restarted on its data dir."""

    def __init__(self, tmp_path) -> None:
        self.broker = BrokerProcess(tmp_path / "roster-data", PEER_SETTINGS)

    def start(self):
        self.broker.start()
        return self

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def kill9_and_restart(self) -> None:
        self.broker.kill9()
        self.broker.start()

    def stop(self) -> None:
        self.broker.stop()


class KafkaRestartable:
    """A private Kafka 4.4 node killed with SIGKILL and restarted on its log dirs."""

    def __init__(self, tmp_path) -> None:
        self.peer = KafkaPeer(tmp_path / "kafka")

    def start(self):
        self.peer.start()
        return self

    @property
    def bootstrap(self) -> str:
        return self.peer.bootstrap

    def kill9_and_restart(self) -> None:
        self.peer.kill9()
        self.peer.start()

    def stop(self) -> None:
        self.peer.stop()


@pytest.fixture
def private_broker(request, tmp_path):
    broker = (KafkaRestartable if request.param == "kafka" else RosterRestartable)(tmp_path)
    broker.start()
    yield broker
    broker.stop()


@pytest.mark.parametrize("private_broker", [ROSTER, KAFKA], indirect=True)
def test_broker_killed_mid_stream_loses_nothing_and_redelivers_nothing_acknowledged(
        private_broker, java):
    target = private_broker
    needs_share_groups(target.peer if hasattr(target, "peer") else target.broker)
    topic = topic_with(target, "share-crash", 2)
    group = share_group(target, "share-crash")
    values = [f"c{i}" for i in range(2000)]
    produce(target.bootstrap, topic, values, 2)
    java.member("j1", target, group, topic, **EXPLICIT, **{"max.poll.records": "10"})
    java.wait_for(lambda: len(java.select("acked")) >= 300, "300 records acknowledged")
    cut = java.mark()
    target.kill9_and_restart()
    everything = {(p, o) for p in range(2) for o in range(1000)}

    def accepted() -> set[tuple[int, int]]:
        return {(a["partition"], a["offset"]) for a in java.select("acked", type="ACCEPT")
                if "error" not in a}

    def unsure() -> set[tuple[int, int]]:
        """Accepted by a request the kill cut off (its answer an error): the broker may have
        written it or not, so it may or may not come back."""
        return {(a["partition"], a["offset"]) for a in java.select("acked")
                if "error" in a and a["sent"] < restarted_at}

    restarted_at = time.monotonic_ns()
    # nothing unacknowledged lost: every record is accepted in the end, and the group has no
    # lag left (Kafka keeps acquisitions in memory: those the kill lost are available again)
    wait_until(lambda: everything - unsure() <= accepted() and all(
        lag == 0 for _, lag in share_offsets(target.bootstrap, group).values()),
        lambda: f"every record accepted after the restart: {len(accepted())} of 2000, "
                f"{share_offsets(target.bootstrap, group)}", timeout_s=180)
    stop_members(java, ["j1"])
    # answered before the kill: never delivered again
    answered = {(a["partition"], a["offset"]) for a in java.events[:cut]
                if a.get("event") == "acked" and "error" not in a}
    after = [(e["partition"], e["offset"]) for e in java.events[cut:]
             if e.get("event") == "record"]
    assert not answered & set(after), sorted(answered & set(after))[:10]
    print(f"{len(answered)} answered before the kill; {len(after)} delivered after it; "
          f"{len(unsure())} accepted by requests the kill cut off")
