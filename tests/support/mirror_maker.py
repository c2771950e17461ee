"""MirrorMaker 2 as the tests run it: Kafka's dedicated driver
(`org.apache.kafka.connect.mirror.MirrorMaker mm2.properties --clusters <target>`) copying
roster's topics and group offsets into a Kafka cluster, for the tested move from roster to
Kafka (docs/moving-to-kafka.md). Its jars are their own class path
(.cache/kafka-4.4.0/mirror-maker-libs/, resolved by scripts/ensure-kafka.sh from
tests/kafka/mirror-maker/pom.xml).

API:
- `MirrorMaker(source, target, topics, groups=".*", offset_syncs_on="target",
  replication_factor=3, offset_lag_max=100, extra=None, source_alias="roster")`:
  `source`/`target` are bootstrap strings (roster, the cluster); `topics` a regex or a list
  of names. Set for a move: IdentityReplicationPolicy (the same topic names),
  `sync.group.offsets.enabled`, checkpoints and group-offset syncs every second, the task's
  offset commit every second (it writes each partition's newest offset sync), and
  `offset-syncs.topic.location` as asked ("target", or "source" = roster, MirrorMaker's
  default). A `source_alias` of its own per test keeps MirrorMaker's Connect state on a
  shared cluster apart.
  `.start()` returns on MirrorMaker's own "Kafka MirrorMaker started" line; `.stop()` is
  SIGTERM (SIGKILL after a grace); `.output` holds its log lines.
- `.wait_mirrored(topic, partitions)`: until every partition's end offset on the target
  equals roster's (ListOffsets on both), returns them.
- `.wait_group_synced(group, topic, partitions, at_least=None)`: until the group has a
  committed offset on the target for each partition it committed on roster (>= `at_least`
  per partition when given); returns them.
- `.await_final_translation(group, topic, partitions, stopped, within)`: after the readers of
  the `stopped` partitions left roster, until the target's offsets are within `within` of
  roster's final commit (a few checkpoint rounds at most); returns (offsets, reached).
- `end_offsets(bootstrap, topic, partitions)`, `committed_offsets(bootstrap, group, topic,
  partitions)`: what a cluster answers now.

How MirrorMaker translates (its OffsetSyncStore, as measured by tests/cluster/): an offset
sync (upstream, downstream) is written when a partition's translation would otherwise lag by
`offset.lag.max` records, and each partition's newest record is synced at the task's next
commit. An upstream group offset translates to the downstream offset of the nearest retained
sync before it, plus one -- never more, as a higher guess could skip records -- and the
store keeps older syncs ever more sparsely (power-of-two spacing behind the newest). So a
group that stopped at the end of an idle partition resumes exactly there (no re-read), while
one far behind the newest sync re-reads up to the distance to an older retained sync.
MirrorMaker writes translated offsets only into target groups that are EMPTY.
"""
from __future__ import annotations

import ctypes
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.support.kafka_peer import JAVA, KAFKA_VERSION, ROOT, write_properties

MIRROR_LIBS = ROOT / ".cache" / f"kafka-{KAFKA_VERSION}" / "mirror-maker-libs"
SOURCE, TARGET = "roster", "kafka"   # the cluster aliases in mm2.properties
STARTED_LINE = "Kafka MirrorMaker started"


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies (even by kill -9), so no
    MirrorMaker JVM outlives a crashed run (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass   # not Linux: stop() still ends it


class MirrorMakerMissing(RuntimeError):
    """Its jars are not resolved: the run fails saying how to get them (never skips)."""


def mirror_classpath() -> str:
    if not any(MIRROR_LIBS.glob("connect-mirror-[0-9]*.jar")):
        raise MirrorMakerMissing(f"MirrorMaker 2 is not resolved in {MIRROR_LIBS}; run "
                                 "scripts/ensure-kafka.sh (make test does)")
    return str(MIRROR_LIBS / "*")


def admin_for(bootstrap: str) -> AdminClient:
    """A fresh librdkafka admin per question: a long-lived one, kept across tests, went on
    answering a topic created after its first look-up as unknown (a second MirrorMaker test in
    one session never saw its mirror catch up)."""
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    admin = admin_for(bootstrap)
    asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    answers = admin.list_offsets(asked, request_timeout=10)
    return {tp.partition: future.result(timeout=15).offset for tp, future in answers.items()}


def committed_offsets(bootstrap: str, group: str, topic: str,
                      partitions: int) -> dict[int, int]:
    """The group's committed offsets (-1001 = none) as that cluster's ListGroupOffsets says."""
    admin = admin_for(bootstrap)
    asked = [ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(partitions)])]
    answer = admin.list_consumer_group_offsets(asked, request_timeout=10)[group].result(timeout=15)
    return {tp.partition: tp.offset for tp in answer.topic_partitions}


def wait_until(condition, timeout_s: float, what: str, interval_s: float = 0.5):
    """Poll `condition()` (a truthy answer ends the wait and is returned) against a deadline."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        threading.Event().wait(interval_s)
    raise TimeoutError(f"{what} within {timeout_s}s (last: {last!r})")


class MirrorMaker:
    def __init__(self, source: str, target: str, topics, groups: str = ".*",
                 offset_syncs_on: str = "target", replication_factor: int = 3,
                 offset_lag_max: int = 100, extra: dict[str, str] | None = None,
                 work_dir: Path | None = None, heap: str = "256m",
                 log_levels: dict[str, str] | None = None, source_alias: str = SOURCE) -> None:
        assert offset_syncs_on in ("target", "source")
        self.source, self.target = source, target
        # the alias names MirrorMaker's topics on the cluster (<alias>.checkpoints.internal,
        # mm2-offset-syncs.<alias>.internal, mm2-configs.<alias>.internal, ...)
        self.source_alias = source_alias
        self.topics = topics if isinstance(topics, str) else "|".join(topics)
        self.groups = groups
        self.offset_syncs_on = offset_syncs_on
        self.replication_factor = replication_factor
        self.offset_lag_max = offset_lag_max
        self.extra = dict(extra or {})
        self._own_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="mirror-maker-"))
        self.heap = heap
        # logger name -> level, e.g. {"org.apache.kafka.connect.mirror.OffsetSyncStore": "trace"}
        self.log_levels = {"org.apache.kafka.connect.mirror": "info", **(log_levels or {})}
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self._started = threading.Event()

    def properties(self) -> dict[str, str]:
        rf = str(self.replication_factor)
        source = self.source_alias
        flow = f"{source}->{TARGET}"
        props = {
            "clusters": f"{source}, {TARGET}",
            f"{source}.bootstrap.servers": self.source,
            f"{TARGET}.bootstrap.servers": self.target,
            f"{flow}.enabled": "true",
            f"{flow}.topics": self.topics,
            f"{flow}.groups": self.groups,
            f"{TARGET}->{source}.enabled": "false",
            # the same topic names on the cluster, so the clients need only a new bootstrap
            "replication.policy.class":
                "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "refresh.topics.interval.seconds": "2",
            "offset-syncs.topic.location": self.offset_syncs_on,
            "offset.lag.max": str(self.offset_lag_max),
            # the source task's commit promotes the newest (delayed) offset sync of each
            # partition; Connect's default is every 60 s. The dedicated driver builds its
            # Connect worker from the target cluster's settings, hence the prefix.
            f"{TARGET}.offset.flush.interval.ms": "1000",
            # one way only: no heartbeats topic written back into roster
            "emit.heartbeats.enabled": "false",
            # topic configs and ACLs are `roster migrate`'s job (MirrorMaker copies a subset)
            "sync.topic.acls.enabled": "false",
            "tasks.max": "1",
            "replication.factor": rf,
            "checkpoints.topic.replication.factor": rf,
            "heartbeats.topic.replication.factor": rf,
            "offset-syncs.topic.replication.factor":
                "1" if self.offset_syncs_on == "source" else rf,
            "config.storage.replication.factor": rf,
            "offset.storage.replication.factor": rf,
            "status.storage.replication.factor": rf,
            # Connect's internal offsets/status topics default to 25 and 5 partitions
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
        }
        props.update(self.extra)
        return props

    def command(self, config: Path) -> list[str]:
        return [JAVA, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                *(f"-Dorg.slf4j.simpleLogger.log.{name}={level}"
                  for name, level in self.log_levels.items()),
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                "-cp", mirror_classpath(), "org.apache.kafka.connect.mirror.MirrorMaker",
                str(config), "--clusters", TARGET]

    def start(self, timeout_s: float = 120.0) -> MirrorMaker:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "mm2.properties"
        write_properties(config, self.properties())
        self.proc = subprocess.Popen(self.command(config), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        threading.Thread(target=self._pump, daemon=True).start()
        if not self._started.wait(timeout_s) or self.proc.poll() is not None:
            tail = "\n".join(self.output[-60:])
            self.stop()
            raise RuntimeError(f"MirrorMaker did not start in {timeout_s}s:\n{tail}")
        return self

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.output.append(line.rstrip("\n"))
            del self.output[:-3000]
            if STARTED_LINE in line:
                self._started.set()
        self._started.set()   # it exited; start() reports that

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _tail(self, lines: int = 40) -> str:
        # its periodic "Scheduler - ... took N ms" lines say nothing about what went wrong
        telling = [line for line in self.output if "Scheduler - " not in line]
        return "\n".join(telling[-lines:])

    def _wait(self, condition, timeout_s: float, what: str):
        try:
            return wait_until(condition, timeout_s, what)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; MirrorMaker's log:\n{self._tail()}") from None

    def _check_alive(self) -> None:
        if not self.alive():
            raise RuntimeError("MirrorMaker exited:\n" + "\n".join(self.output[-60:]))

    def wait_mirrored(self, topic: str, partitions: int,
                      timeout_s: float = 180.0) -> dict[int, int]:
        """Until the target holds every record roster holds in `topic` (end offsets equal;
        IdentityReplicationPolicy keeps the name, and the target was empty before)."""
        def caught_up():
            self._check_alive()
            upstream = end_offsets(self.source, topic, partitions)
            try:
                downstream = end_offsets(self.target, topic, partitions)
            except Exception:   # the target topic is not created yet
                return None
            return downstream if downstream == upstream else None
        return self._wait(caught_up, timeout_s, f"MirrorMaker did not copy {topic}")

    def wait_group_synced(self, group: str, topic: str, partitions: int,
                          at_least: dict[int, int] | None = None,
                          timeout_s: float = 180.0) -> dict[int, int]:
        """Until every partition the group has committed on roster has a committed offset on
        the target too (>= `at_least[p]` when given); returns those target offsets."""
        upstream = committed_offsets(self.source, group, topic, partitions)
        wanted = [p for p, offset in upstream.items() if offset >= 0]
        assert wanted, f"{group} has committed nothing of {topic} on roster"

        def synced():
            self._check_alive()
            offsets = committed_offsets(self.target, group, topic, partitions)
            if any(offsets[p] < 0 for p in wanted):
                return None
            if at_least and any(offsets[p] < at_least[p] for p in at_least):
                return None
            return {p: offsets[p] for p in wanted}
        return self._wait(synced, timeout_s,
                          f"MirrorMaker did not sync {group}'s offsets of {topic}")

    def await_final_translation(self, group: str, topic: str, partitions: int,
                                stopped: set[int], within: int,
                                timeout_s: float = 10.0) -> tuple[dict[int, int], bool]:
        """After the group's last reader of the `stopped` partitions left roster: give
        MirrorMaker a few checkpoint rounds to translate the group's final commit there to
        within `within` records, before the group's first member joins on the cluster (from
        then on MirrorMaker writes no offsets into it). Its store may no longer hold a sync
        that close, so this gives up after `timeout_s`. Returns the target's offsets as they
        are then, and whether they came that close."""
        final = committed_offsets(self.source, group, topic, partitions)
        close = {p: final[p] - within for p in stopped}
        try:
            self.wait_group_synced(group, topic, partitions, at_least=close,
                                   timeout_s=timeout_s)
            reached = True
        except TimeoutError:
            reached = False
        return committed_offsets(self.target, group, topic, partitions), reached
