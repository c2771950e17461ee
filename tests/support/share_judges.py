"""What the share-group (KIP-932) judge tests share: the brokers they run on, the two share
consumer programs (the Java KafkaShareConsumer of tests/java ShareConsumers and confluent-kafka's
ShareConsumer in tests/support/share_consumer_process.py, driven by the same commands and
printing the same events), group configs, and the checks on what was delivered.

Test modules import the fixtures they use:

    from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
    from tests.support.share_judges import SHARE_BOTH, share_target  # noqa: F401

`share_target` is `target` after `needs_share_groups`: roster is judged only once its ApiVersions
answer lists ShareGroupHeartbeat (the test skips, saying so, until then); Kafka must serve them.
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from roster.admin.client import AdminClient, AdminError
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from tests.support import groups, java_judges
from tests.support.java_judges import JavaProgram
from tests.support.judges import KAFKA, ROSTER
from tests.support.kafka_peer import ROOT, unique_name

SHARE_BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
GROUP_RESOURCE, SET = 32, 0
DEADLINE_S = 90.0
COORDINATOR_NOT_READY = (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress,
                         ErrorCode.coordinator_not_available)


def serves_share_groups(bootstrap: str) -> bool:
    """Whether the broker's ApiVersions answer lists ShareGroupHeartbeat (76)."""
    with AdminClient(bootstrap) as admin:
        try:
            admin.version(ApiKey.SHARE_GROUP_HEARTBEAT)
        except AdminError:
            return False
    return True


def needs_share_groups(target) -> None:
    """Skip a roster run while roster does not serve share groups; Kafka 4.4 must."""
    if serves_share_groups(target.bootstrap):
        return
    if "kafka" in type(target).__name__.lower():
        raise AssertionError("the Kafka peer does not list ShareGroupHeartbeat in ApiVersions")
    pytest.skip("roster's ApiVersions answer lacks ShareGroupHeartbeat (76): no share groups yet")


@pytest.fixture
def share_target(target):
    needs_share_groups(target)
    return target


def describe_group_configs(bootstrap: str, group: str) -> dict[str, str]:
    with AdminClient(bootstrap) as admin:
        resource = admin.entry(ApiKey.DESCRIBE_CONFIGS, "resources")
        answer = admin.call(ApiKey.DESCRIBE_CONFIGS, include_synonyms=False,
                            include_documentation=False,
                            resources=(resource(resource_type=GROUP_RESOURCE, resource_name=group,
                                                configuration_keys=None),))
    result = answer.results[0]
    assert result.error_code.value == 0, (result.error_code, result.error_message)
    return {c.name: c.value for c in result.configs}


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs SET on the GROUP resource (what `kafka-configs --entity-type groups
    --alter` sends), then until DescribeConfigs shows them: Kafka applies a group config through
    its metadata log, a moment after it answered."""
    with AdminClient(bootstrap) as admin:
        resource = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources")
        config = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
        answer = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=(
            resource(resource_type=GROUP_RESOURCE, resource_name=group, configs=tuple(
                config(name=k, config_operation=SET, value=v) for k, v in configs.items())),))
    result = answer.responses[0]
    assert result.error_code.value == 0, (result.error_code, result.error_message)
    deadline = time.monotonic() + 30
    while True:
        shown = describe_group_configs(bootstrap, group)
        if all(shown.get(k) == v for k, v in configs.items()):
            return
        assert time.monotonic() < deadline, f"{group}'s configs {configs} not applied: {shown}"
        time.sleep(0.05)   # the broker's metadata log applies it; nothing to wait on


def share_group(target, prefix: str, **configs: str) -> str:
    """A fresh group id whose share.auto.offset.reset is earliest (Kafka's default, latest,
    would skip what a test produced before the group's first member came), plus `configs`."""
    group = unique_name(prefix)
    set_group_configs(target.bootstrap, group,
                      {"share.auto.offset.reset": "earliest", **configs})
    return group


def produce(bootstrap: str, topic: str, values: list[str], partitions: int,
            headers: dict[str, str] | None = None) -> None:
    """values[i] to partition i % partitions, keyed by the value."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, key=value.encode(), value=value.encode(), partition=i % partitions,
                         headers=list((headers or {}).items()))
    assert producer.flush(30) == 0


def topic_with(target, prefix: str, partitions: int) -> str:
    name = unique_name(prefix)
    groups.create_topic(target.bootstrap, name, partitions)
    return name


class ShareProgram(JavaProgram):
    """A judge process (events, wait_for, send, kill9 as JavaProgram's)."""

    @classmethod
    def java(cls) -> ShareProgram:
        java_judges.build()
        program = cls("roster.judge.ShareConsumers")
        program.client = "java"
        return program

    @classmethod
    def confluent(cls) -> ShareProgram:
        program = cls.__new__(cls)
        program.command = [sys.executable, "-u", "-m", "tests.support.share_consumer_process"]
        program._sharing = None
        program.events, program.stderr, program.proc = [], [], None
        program.cond = threading.Condition()
        program.client = "confluent"
        return program

    @classmethod
    def of(cls, client: str) -> ShareProgram:
        """A "java" or "confluent" judge, not started."""
        return cls.java() if client == "java" else cls.confluent()

    def start(self) -> ShareProgram:
        if self._sharing is not None:
            super().start()
        else:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, bufsize=1, cwd=ROOT)
            threading.Thread(target=self._read_events, daemon=True).start()
            threading.Thread(target=self._read_stderr, daemon=True).start()
        self.wait_for(lambda: self.select("ready"), f"the {self.client} share judge to start")
        return self

    def member(self, name: str, target, group: str, topic: str, **settings) -> None:
        conf = {"bootstrap.servers": target.bootstrap, "group.id": group, **settings}
        self.send(f"start {name} {topic} " + " ".join(f"{k}={v}" for k, v in conf.items()))

    def records(self, **fields) -> list[dict]:
        return self.select("record", **fields)

    def errors(self) -> list[dict]:
        return [e for e in self.events if e.get("event") in ("error", "bad-command")]


@pytest.fixture
def java():
    program = ShareProgram.java().start()
    yield program
    program.stop()
    print("java share judge stderr:\n" + "\n".join(program.stderr[-40:]))


@pytest.fixture
def confluent():
    program = ShareProgram.confluent().start()
    yield program
    program.stop()
    print("confluent share judge stderr:\n" + "\n".join(program.stderr[-40:]))


def summary(programs: list[ShareProgram]) -> str:
    """The last events of each judge, briefly, for a failure message."""
    def brief(e: dict) -> tuple:
        return (e.get("member"), e["event"], e.get("value"), e.get("offset"),
                e.get("deliveryCount", e.get("type")), e.get("error"))

    return "; ".join(f"{p.client}: {[brief(e) for e in p.events[-30:]]}\n"
                     f"stderr {p.stderr[-10:]}" for p in programs)


def stop_members(program: ShareProgram, names: list[str]) -> None:
    for name in names:
        program.send(f"stop {name}")
    program.wait_for(lambda: all(program.select("closed", member=n) for n in names),
                     f"{names} closed")


def deliveries(*programs: ShareProgram) -> list[dict]:
    """Every record event of every program, in time order."""
    return sorted((e for p in programs for e in p.select("record")), key=lambda e: e["t"])


def wait_delivered(programs: list[ShareProgram], values: set[str], what: str,
                   timeout_s: float = DEADLINE_S) -> None:
    """Until every one of `values` was delivered to some consumer of `programs` (failing at
    once when a judge reports an error)."""
    def missing() -> set[str]:
        return values - {e["value"] for e in deliveries(*programs)}

    deadline = time.monotonic() + timeout_s
    while missing():
        for p in programs:
            assert not p.errors(), f"the {p.client} judge failed: {p.errors()}\n" + "\n".join(
                p.stderr[-30:])
        if time.monotonic() > deadline:
            last = [(e["member"], e["value"], e["deliveryCount"]) for e in deliveries(*programs)]
            raise AssertionError(f"{what}: {len(missing())} never delivered, e.g. "
                                 f"{sorted(missing())[:5]}; last deliveries {last[-20:]}")
        # the events of several processes: wait on each one's in turn, briefly
        for p in programs:
            with p.cond:
                p.cond.wait(0.05)


def acks(programs: list[ShareProgram]) -> dict[tuple, list[dict]]:
    """(member, topic, partition, offset) -> its "acked" events."""
    found: dict[tuple, list[dict]] = {}
    for p in programs:
        for e in p.select("acked"):
            found.setdefault((e["member"], e["topic"], e["partition"], e["offset"]), []).append(e)
    return found


def delivery_faults(programs: list[ShareProgram], gone: dict[str, int] | None = None,
                    first_count: int = 1) -> list[str]:
    """Records two consumers held at once, or redelivered without a reason. Each record's
    deliveries in time order must be: the first with delivery count `first_count`; every later
    one either the same member's replay of a record it renewed (same count, after its RENEW was
    sent) or, with a higher count, after the previous holder released it (its RELEASE sent
    before) or went away (`gone`: member -> monotonic ns it was killed or closed at)."""
    gone = gone or {}
    sent = acks(programs)
    by_record: dict[tuple, list[dict]] = {}
    for e in deliveries(*programs):
        by_record.setdefault((e["topic"], e["partition"], e["offset"]), []).append(e)
    faults = []
    for where, seen in sorted(by_record.items()):
        # a member killed (-9) may have acquired a record and died before its judge printed it:
        # a first delivery one count higher, after such a death, is that record coming back
        unseen_holder_died = seen[0]["deliveryCount"] == first_count + 1 and any(
            killed <= seen[0]["t"] for killed in gone.values())
        if seen[0]["deliveryCount"] != first_count and not unseen_holder_died:
            faults.append(f"{where} first delivered with count {seen[0]['deliveryCount']}")
        for prev, now in zip(seen, seen[1:]):
            prev_acks = [a for a in sent.get((prev["member"], *where), ())
                         if a["sent"] >= prev["t"]]
            renewed = any(a["type"] == "RENEW" and a["sent"] <= now["t"] for a in prev_acks)
            released = any(a["type"] == "RELEASE" and a["sent"] <= now["t"] for a in prev_acks)
            left = gone.get(prev["member"], now["t"] + 1) <= now["t"]
            if renewed and now["member"] == prev["member"] \
                    and now["deliveryCount"] == prev["deliveryCount"]:
                continue
            if now["deliveryCount"] > prev["deliveryCount"] and (released or left):
                continue
            faults.append(f"{where} delivered to {now['member']} (count {now['deliveryCount']})"
                          f" while {prev['member']} held it (count {prev['deliveryCount']}, "
                          f"acks {[a['type'] for a in prev_acks]})")
    return faults


def share_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    """DescribeShareGroupOffsets for every topic of the group: (topic, partition) ->
    (start offset, lag) of each initialised share partition (start -1 where there is none)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        with AdminClient(bootstrap) as admin:
            entry = admin.entry(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "groups")
            answer = admin.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                                groups=(entry(group_id=group, topics=None),))
        (found,) = answer.groups
        # a broker restarted a moment ago may not coordinate the group yet (Kafka answers
        # NOT_COORDINATOR until its share coordinator has loaded): asked again, as clients do
        if found.error_code not in COORDINATOR_NOT_READY or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    assert found.error_code.value == 0, (found.error_code, found.error_message)
    return {(t.topic_name, p.partition_index): (p.start_offset, p.lag)
            for t in found.topics for p in t.partitions}


def wait_until(predicate, what, timeout_s: float = DEADLINE_S):
    """A broker-side state a test cannot be told about (no event), or the events of several
    judge processes: asked again every 100 ms. `what` may be a callable saying what is seen."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, \
            f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.1)
    return value
