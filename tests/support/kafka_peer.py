"""Apache Kafka 4.4 as a test peer: a real KRaft broker on loopback, started from the jars that
scripts/ensure-kafka.sh resolved into .cache/kafka-4.4.0/libs/ (`make test` runs it first).

API (for tests that put Kafka beside roster):
- fixture `kafka_peer` (session scope, tests/conftest.py): one plain Kafka for the whole pytest
  worker. Mark every test that uses it `@pytest.mark.xdist_group("kafka")`: `make test` runs
  `pytest -n 2 --dist loadgroup`, and tests/support/xdist_groups.py makes each module of that
  group a group of its own, so a module's tests run on one worker and the modules spread over
  both (each worker starts its own peer). Give each scenario its own group and topic names
  (`unique_name(prefix)`): the broker is shared.
  - `.bootstrap` -> "127.0.0.1:PORT" (PLAINTEXT, no authentication).
  - `.settings` -> the broker settings it runs with (PEER_SETTINGS plus the extras).
  - `.output` -> its log lines (WARN and above; set KafkaPeer(log_level="info") for more).
- fixture `kafka_peer_secure` (session scope, started lazily by the tests that ask for it):
  SASL_PLAINTEXT with SCRAM-SHA-256/512 and PLAIN for the users of tests/support/security.py
  (PASSWORDS: admin, alice, bob) and Kafka's StandardAuthorizer, `allow.everyone.if.no.acl.found`
  false, `User:admin` a super user. `.bootstrap` is the SASL listener; the broker's own
  connections use a PLAINTEXT listener whose principal (ANONYMOUS) is a super user too
  (`.internal_bootstrap`). Its roster counterpart is `roster_peer_secure`
  (tests/differential/conftest.py), as `roster_peer` is the plain one's.
- `kafka_classpath()` -> the resolved jars as a Java class path; `java_command(main_class, *args,
  heap="256m")` -> an argv running one of Kafka's classes (e.g.
  "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand") on that class path;
  `KAFKA_LIBS` is the folder; `JAVA` the java binary (Java 17).
- `KafkaPeer(tmp_dir, extra_settings, secure=False).start()` / `.stop()` / `.kill9()` for a
  private broker when a test must change static settings or kill it.
- Brokers and the storage tool start from class archives (tests/support/class_archive.py);
  `record_broker_classes()` records the brokers' once per machine, before the first start.

Settings mirror roster's test brokers (PEER_SETTINGS), so a scenario can run unchanged against
both: no initial rebalance delay, replication factor 1 for the internal topics, 5 offsets
partitions, relaxed heartbeat/session lower bounds (classic and KIP-848) and
`group.max.size=16`. Kafka alone also gets SINGLE_NODE: replication factor 1 for its internal
topics, and KIP-848 target assignments computed on the heartbeat (Kafka 4.4 batches them,
roster does not; docs/compatibility.md).
Readiness is a real answer (FindCoordinator for a probe group succeeds), never a sleep.
"""
from __future__ import annotations

import base64
import ctypes
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from roster.admin.client import AdminClient, AdminError
from roster.protocol.api_keys import ApiKey
from tests.support.class_archive import ClassArchive
from tests.support.ports import free_port

KAFKA_VERSION = "4.4.0"
ROOT = Path(__file__).resolve().parents[2]
KAFKA_LIBS = ROOT / ".cache" / f"kafka-{KAFKA_VERSION}" / "libs"
JAVA = shutil.which("java") or "java"
BROKER_CLASSES = ClassArchive("kafka-broker", JAVA)
STORAGE_TOOL_CLASSES = ClassArchive("kafka-storage-tool", JAVA)

# Shared by Kafka and by the roster broker a differential scenario compares it with.
PEER_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
    "group.min.session.timeout.ms": "1000",
    "group.max.session.timeout.ms": "300000",
    "group.max.size": "16",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "1000",
    # Kafka 4.4 batches KIP-848 target assignments (at most one per second) and computes them
    # off the coordinator thread; roster takes both settings but computes a target on the
    # heartbeat that needs one. With these the two answer the same heartbeat with the same
    # epoch, and describe the same group configs (docs/compatibility.md).
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
    # a streams group's first assignment at once, as the classic groups' above, and a new
    # target on the heartbeat that needs one (Kafka 4.4's defaults, which roster keeps too,
    # delay the first by 3 s and space them by 1 s, answering ASSIGNMENT_DELAYED meanwhile)
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    # so that a streams group can be given a session of a few seconds (Kafka's floor: 45 s),
    # for the tests whose instances are killed -9 and must be dropped from the group
    "group.streams.min.session.timeout.ms": "6000",
    "group.streams.min.heartbeat.interval.ms": "1000",
    # a timed-out transaction is aborted within half a second, not Kafka's 10 s check interval
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
# Kafka-only: a one-node cluster has one replica of everything; and see below.
SINGLE_NODE = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "log.flush.interval.messages": str(2**63 - 1),
}
SECURE_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


class KafkaMissing(RuntimeError):
    """The resolved jars are absent: the run fails saying how to get them (never skips)."""


def kafka_classpath() -> str:
    if not (KAFKA_LIBS / f"kafka_2.13-{KAFKA_VERSION}.jar").exists():
        raise KafkaMissing(f"Apache Kafka {KAFKA_VERSION} is not resolved in {KAFKA_LIBS}; "
                           "run scripts/ensure-kafka.sh (make test does) -- it needs Maven "
                           "and Java 17")
    return str(KAFKA_LIBS / "*")


def java_command(main_class: str, *args: str, heap: str = "256m",
                 log_level: str = "warn", jvm_options: tuple[str, ...] = ()) -> list[str]:
    # C1 only (TieredStopAtLevel=1): these JVMs are short tools or a lightly loaded test
    # broker, for which C2's compile threads cost more CPU than they win back. Measured: a
    # Kafka tool call 1.4-1.7 -> 0.9-1.1 s of CPU; the peer's start, 20 topics and stop
    # 9.4-10.4 -> 5.8-6.7 s.
    return [JAVA, f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", *jvm_options,
            f"-Dorg.slf4j.simpleLogger.defaultLogLevel={log_level}",
            "-Dorg.slf4j.simpleLogger.logFile=System.out",
            "-cp", kafka_classpath(), main_class, *args]


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def new_cluster_id() -> str:
    # Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding; one starting
    # with "-" would read as an option to the storage tool
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies (even by kill -9), so a
    crashed or killed run leaves no 512 MB JVM behind (Linux prctl PR_SET_PDEATHSIG). The
    signal follows the *thread* that started it: start a KafkaPeer from a thread that outlives
    it (the fixtures use pytest's main thread), never from a short-lived worker thread."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass   # not Linux: the fixture's teardown still stops it


def write_properties(path: Path, props: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def format_storage(config: Path, cluster_id: str, extra_args: list[str] | None = None) -> None:
    """Kafka's storage tool formats the log dirs `config` names for `cluster_id` (every node
    of one cluster is formatted with the same id)."""
    args = ["format", "-t", cluster_id, "-c", str(config), "--ignore-formatted",
            *(extra_args or ())]
    sharing = STORAGE_TOOL_CLASSES.launch(kafka_classpath())
    done = subprocess.run(java_command("kafka.tools.StorageTool", *args, heap="256m",
                                       jvm_options=sharing.options),
                          capture_output=True, text=True, timeout=120)
    sharing.exited(done.returncode)
    if done.returncode != 0:
        raise RuntimeError("Kafka's storage tool could not format the log dir:\n"
                           + done.stdout + done.stderr)


def spawn_kafka(config: Path, output: list[str], heap: str, log_level: str = "warn",
                tail: int = 2000, jvm_options: tuple[str, ...] = ()) -> subprocess.Popen:
    """Start `kafka.Kafka config` in its own session, dying with this process; its output
    lines go to `output` (the last `tail` of them) from a daemon thread."""
    # a broker lives as long as its test or the suite: it uses the archive, never records it
    sharing = BROKER_CLASSES.launch(kafka_classpath(), record=False)
    proc = subprocess.Popen(java_command("kafka.Kafka", str(config), heap=heap,
                                         log_level=log_level,
                                         jvm_options=(*jvm_options, *sharing.options)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_die_with_parent)

    def pump() -> None:
        for line in proc.stdout:
            output.append(line.rstrip("\n"))
            del output[:-tail]

    threading.Thread(target=pump, daemon=True).start()
    return proc


def record_broker_classes() -> None:
    """Before the first broker start on this machine (its kind's archive missing and unclaimed),
    record the archive every later broker starts from, with a throwaway one-node peer started
    until ready and stopped: about 8 s once, 3 s of CPU back on each of the suite's thirty-odd
    broker starts. Meanwhile other processes' brokers start without it."""
    recording = BROKER_CLASSES.launch(kafka_classpath())
    if not recording.records:
        return
    peer = KafkaPeer(jvm_options=recording.options)
    try:
        peer.start()
    finally:
        peer.stop()
        recording.exited(peer.proc.returncode if peer.proc is not None else -1)


def stop_process(proc: subprocess.Popen | None, timeout_s: float = 20.0) -> None:
    """SIGTERM (Kafka's controlled shutdown), then SIGKILL if it does not end in time."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _jaas_plain() -> str:
    users = " ".join(f'user_{name}="{password}"' for name, password in SECURE_USERS.items())
    return ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="admin" password="{SECURE_USERS["admin"]}" {users};')


class KafkaPeer:
    """One combined broker+controller KRaft node on loopback, data in a temporary folder."""

    def __init__(self, work_dir: Path | None = None, extra_settings: dict[str, str] | None = None,
                 secure: bool = False, heap: str = "512m", log_level: str = "warn",
                 jvm_options: tuple[str, ...] = ()) -> None:
        self._own_dir = work_dir is None
        self.jvm_options = jvm_options
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="kafka-peer-"))
        self.secure = secure
        self.heap = heap
        self.log_level = log_level
        self.extra = dict(extra_settings or {})
        self.port = free_port()
        self.internal_port = free_port()
        self.controller_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self.settings = {**PEER_SETTINGS, **self.extra}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def internal_bootstrap(self) -> str:
        """The PLAINTEXT listener of a secure peer (the broker's own; super user ANONYMOUS)."""
        return f"127.0.0.1:{self.internal_port}"

    def _properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(self.work_dir / "data"),
            **SINGLE_NODE,
            **self.settings,
        }
        if self.secure:
            props.update({
                "listeners": f"SASL_PLAINTEXT://127.0.0.1:{self.port},"
                             f"INTERNAL://127.0.0.1:{self.internal_port},"
                             f"CONTROLLER://127.0.0.1:{self.controller_port}",
                "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{self.port},"
                                        f"INTERNAL://127.0.0.1:{self.internal_port}",
                "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                                  "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "INTERNAL",
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": _jaas_plain(),
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "authorizer.class.name":
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "allow.everyone.if.no.acl.found": "false",
                "super.users": "User:admin;User:ANONYMOUS",
                "connection.failed.authentication.delay.ms": "100",
            })
        else:
            props.update({
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                             f"CONTROLLER://127.0.0.1:{self.controller_port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
            })
        return props

    def _format(self, config: Path) -> None:
        extra = []
        if self.secure:
            for name, password in SECURE_USERS.items():
                for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                    extra += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
        format_storage(config, new_cluster_id(), extra)

    def start(self, timeout_s: float = 90.0) -> KafkaPeer:
        record_broker_classes()     # a no-op once recorded, and for the recording peer itself
        config = self.work_dir / "server.properties"
        self.work_dir.mkdir(parents=True, exist_ok=True)
        write_properties(config, self._properties())
        try:
            if not (self.work_dir / "data" / "meta.properties").exists():
                self._format(config)
            self.proc = spawn_kafka(config, self.output, heap=self.heap, log_level=self.log_level,
                                    jvm_options=self.jvm_options)
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        """Until the group coordinator answers FindCoordinator without error (the offsets
        topic exists and is loaded), so the first scenario does not pay for it."""
        deadline = time.monotonic() + timeout_s
        bootstrap = self.internal_bootstrap if self.secure else self.bootstrap
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError("Kafka exited while starting:\n" + "\n".join(self.output[-60:]))
            try:
                with AdminClient(bootstrap, timeout_s=5.0) as admin:
                    answer = admin.call(ApiKey.FIND_COORDINATOR, key="kafka-peer-probe",
                                        key_type=0, coordinator_keys=("kafka-peer-probe",))
                    errors = [c.error_code for c in getattr(answer, "coordinators", ())] or [
                        answer.error_code]
                    if all(int(e) == 0 for e in errors):
                        return
                    last = f"FindCoordinator errors {errors}"
            except (AdminError, OSError) as exc:
                last = str(exc)
            threading.Event().wait(0.2)  # poll interval while the JVM boots
        raise RuntimeError(f"Kafka not ready in {timeout_s}s ({last}):\n"
                           + "\n".join(self.output[-60:]))

    def stop(self, timeout_s: float = 20.0) -> None:
        stop_process(self.proc, timeout_s)
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
