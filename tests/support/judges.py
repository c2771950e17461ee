"""What the Java-judge and Kafka-tool tests share: the broker a scenario runs against (roster's,
one per test module, or the session's Apache Kafka peer), a Consumers JVM (tests/java), and
helpers reading its events. Test modules import the fixtures they use:

    from tests.support.judges import ROSTER, KAFKA, jvm, roster_broker, target  # noqa: F401

and parametrize `target` indirectly with ROSTER and KAFKA (each carries its xdist group, which
tests/support/xdist_groups.py makes one per module: a module's Kafka-backed tests share the
Kafka peer of the worker they run on)."""
from __future__ import annotations

import pytest

from tests.support import groups, java_judges
from tests.support.java_judges import JavaProgram
from tests.support.kafka_peer import PEER_SETTINGS, unique_name
from tests.support.process import BrokerProcess

HEARTBEAT_MS = 500
SESSION_MS = 10000
CALLBACKS = ("assigned", "revoked", "lost")
ROSTER = pytest.param("roster", marks=[pytest.mark.interop, pytest.mark.xdist_group("java-judges")])
KAFKA = pytest.param("kafka", marks=[pytest.mark.interop, pytest.mark.xdist_group("kafka")])


@pytest.fixture(scope="module")
def roster_broker(tmp_path_factory):
    """roster with the settings of the Kafka peer, so a scenario runs unchanged on both."""
    broker = BrokerProcess(tmp_path_factory.mktemp("judged"), PEER_SETTINGS).start()
    yield broker
    broker.stop()


@pytest.fixture
def target(request):
    """The broker a scenario runs against: roster's (module-wide) or the shared Kafka peer."""
    if request.param == "kafka":
        return request.getfixturevalue("kafka_peer")
    return request.getfixturevalue("roster_broker")


@pytest.fixture
def jvm():
    """One Consumers JVM for the test (its members are threads); its stderr on failure."""
    java_judges.build()
    program = JavaProgram("roster.judge.Consumers").start()
    program.wait_for(lambda: program.select("ready"), "the Consumers program to start")
    yield program
    program.stop()
    print("java stderr:\n" + "\n".join(program.stderr[-60:]))


def topic_with(target, prefix: str, partitions: int) -> str:
    name = unique_name(prefix)
    groups.create_topic(target.bootstrap, name, partitions)
    return name


def member_settings(target, group: str, protocol: str, instance: str | None, **extra) -> str:
    """The `key=value ...` of a Consumers `start` command."""
    settings = {"bootstrap.servers": target.bootstrap, "group.id": group,
                "group.protocol": protocol, **extra}
    if instance is not None:
        settings["group.instance.id"] = instance
    if protocol == "classic":
        settings.setdefault("session.timeout.ms", SESSION_MS)
        settings.setdefault("heartbeat.interval.ms", HEARTBEAT_MS)
    return " ".join(f"{k}={v}" for k, v in settings.items())


def owned(program: JavaProgram, name: str, since: int = 0) -> set[str]:
    """What the member owns now, from its callbacks (eager: revoke all, assign all; cooperative
    and the consumer protocol: increments). A restarted member starts from nothing."""
    partitions: set[str] = set()
    for event in program.since(since, member=name):
        if event["event"] == "started":
            partitions = set()
        elif event["event"] == "assigned":
            partitions |= set(event["partitions"])
        elif event["event"] in ("revoked", "lost"):
            partitions -= set(event["partitions"])
    return partitions


def wait_split(program: JavaProgram, names: list[str], topic: str, partitions: int,
               per_member: int) -> dict[str, set[str]]:
    """Until the members own every partition of `topic`, `per_member` each."""
    everything = {f"{topic}-{p}" for p in range(partitions)}

    def split():
        now = {n: owned(program, n) for n in names}
        union = set().union(*now.values())
        balanced = all(len(ps) == per_member for ps in now.values())
        return now if balanced and union == everything else None

    return program.wait_for(split, lambda: f"{names} to split {topic} "
                            f"({ {n: sorted(owned(program, n)) for n in names} })")


def callbacks_of(program: JavaProgram, mark: int, names) -> list[dict]:
    return [e for e in program.since(mark) if e["event"] in CALLBACKS and e.get("member") in names]
