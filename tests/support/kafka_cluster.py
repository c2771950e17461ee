"""A three-node Apache Kafka 4.4 KRaft cluster on loopback, for the tests that run roster's own
client, connector and tools where roster is meant to take users: a real cluster, where the
group coordinator lives on another broker than the partition leaders and both move when a
broker dies. It starts from the jars scripts/ensure-kafka.sh resolved, as the one-node peer
(tests/support/kafka_peer.py) does, and shares that module's pieces.

API:
- fixture `kafka_cluster` (session scope, tests/conftest.py), started lazily by the first test
  that asks for it. Mark those tests `@pytest.mark.xdist_group("kafka_cluster")` so one pytest
  worker owns the three JVMs. Give every scenario its own topic and group names
  (`unique_name(prefix)` from kafka_peer): the cluster is shared.
- `.bootstrap` -> "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3" (PLAINTEXT, no authentication:
  its principal, User:ANONYMOUS, is a super user, so nothing there is refused).
- `.sasl_bootstrap` -> the three nodes' SASL_PLAINTEXT listeners (SCRAM-SHA-256 and
  SCRAM-SHA-512). `ADMIN` = ("admin", its password) is a super user whose SCRAM credentials
  (both mechanisms) are written at storage format time; every other SASL principal gets only
  what its ACLs give (StandardAuthorizer, allow.everyone.if.no.acl.found=false, as Kafka's
  default and a secured roster). Users added through AlterUserScramCredentials reach every
  node's metadata image a moment later: `.wait_authenticates(user, password, mechanism)`.
- `.node(i)` -> the ClusterNode with node id i (1, 2, 3): `.bootstrap` (its own PLAINTEXT
  listener), `.sasl_bootstrap`,
  `.alive()`, `.output` (its log lines, WARN and above).
- `.kill9(node_id)` -> SIGKILL, nothing flushed; returns when the process is gone.
  `.wait_fenced(node_id)` -> until the live nodes no longer list it (its leaderships and
  coordinators have moved).
- `.restart(node_id)` (from any thread) -> starts it again on its own data and waits until it
  is back in the ISR of every partition it holds a replica of (internal topics included).
- `.heal()` -> restarts every node that is down (tests/cluster's per-test fixture calls it).
- `.coordinator_of(group)` -> the node id that coordinates the group (FindCoordinator), and
  `.transaction_coordinator_of(transactional_id)`.
- `.leader_of(topic, partition)` -> the leader's node id; `.isr_of(topic, partition)` -> the
  in-sync replica ids (Metadata).
- `.create_topic(name, partitions=3)` -> replication factor 3, min.insync.replicas 2, and waits
  until every node knows it with every partition led and in sync (`.wait_topic(name, n)` waits
  so for a topic created otherwise).

Every wait is on a real answer (Metadata or FindCoordinator from the live nodes), never a sleep.
Settings: replication factor 3 and min.insync.replicas 2 for the internal topics and the test
topics; no unclean leader election; a dead broker is fenced after 3 s (Kafka: 9 s) so
leaderships and coordinators move within a test's patience; no automatic preferred-leader
rebalancing, so leaders move only when a test moves them. Small heaps and the C1 compiler
only, for three JVMs on two cores.
"""
from __future__ import annotations

import concurrent.futures
import datetime
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from roster.admin.client import AdminClient, AdminError
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.security.client import ClientSecurity
from tests.support.kafka_peer import (
    PEER_SETTINGS,
    SECURE_USERS,
    format_storage,
    new_cluster_id,
    record_broker_classes,
    spawn_kafka,
    stop_process,
    write_properties,
)
from tests.support.ports import free_port

NODE_IDS = (1, 2, 3)
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
ADMIN = ("admin", SECURE_USERS["admin"])   # the one-node secure peer's admin, same password
CLUSTER_SETTINGS = {
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "num.partitions": "3",
    "unclean.leader.election.enable": "false",
    # every PLAINTEXT client, the brokers' own connections included, is ANONYMOUS and a super
    # user, so nothing on that listener is refused; a SASL user (SCRAM) has what its ACLs
    # give and nothing else, as on a secured roster, so ACLs moved here refuse what they
    # refused there
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "false",
    "super.users": f"User:ANONYMOUS;User:{ADMIN[0]}",
    "sasl.enabled.mechanisms": ",".join(SCRAM_MECHANISMS),
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "connection.failed.authentication.delay.ms": "100",
    "auto.leader.rebalance.enable": "false",
    # a killed broker stops heartbeating the controller: fenced after 3 s, its partitions and
    # coordinators move to the others
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "log.flush.interval.messages": str(2**63 - 1),
    # as the one-node peer: KIP-848 target assignments on the heartbeat that needs one
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
    # Idle, three nodes burn CPU the tests beside them need: the controller's no-op record
    # every 500 ms (each node replicating it) and followers' fetches parked only 500 ms. A
    # no-op every 5 s and fetches that wait 2 s for data halve that; neither delays anything
    # a test waits for (a parked fetch answers as soon as data arrives, and fencing follows
    # broker.session.timeout.ms above).
    "metadata.max.idle.interval.ms": "5000",
    "replica.fetch.wait.max.ms": "2000",
}
# Three JVMs share two cores with the tests: the C1 compiler alone starts them sooner and
# keeps the JIT from competing with the brokers' own work.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)
POLL_S = 0.2   # between two Metadata questions while waiting for the cluster to settle


class ClusterNode:
    """One combined broker+controller of the cluster, on its own ports and data folder."""

    def __init__(self, node_id: int, work_dir: Path, heap: str, log_level: str) -> None:
        self.node_id = node_id
        self.work_dir = work_dir
        self.heap = heap
        self.log_level = log_level
        self.port = free_port()
        self.sasl_port = free_port()
        self.controller_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.downed = False
        self.output: list[str] = []
        self.config = work_dir / "server.properties"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def properties(self, voters: str, settings: dict[str, str]) -> dict[str, str]:
        return {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(self.work_dir / "data"),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                         f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                                    f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
                                              "SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                              "CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            **settings,
        }

    def spawn(self) -> None:
        self.output.append(f"--- node {self.node_id} starting ---")
        self.proc = spawn_kafka(self.config, self.output, heap=self.heap,
                                log_level=self.log_level, jvm_options=JVM_OPTIONS)
        self.downed = False

    def crashed(self) -> bool:
        """It ended without a test killing or stopping it."""
        return self.proc is not None and not self.downed and self.proc.poll() is not None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        self.downed = True
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout_s: float) -> None:
        self.downed = True
        stop_process(self.proc, timeout_s)


class KafkaCluster:
    def __init__(self, work_dir: Path | None = None, extra_settings: dict[str, str] | None = None,
                 heap: str = "320m", log_level: str = "warn") -> None:
        self._own_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="kafka-cluster-"))
        self.settings = {**PEER_SETTINGS, **CLUSTER_SETTINGS, **(extra_settings or {})}
        self.nodes = {i: ClusterNode(i, self.work_dir / f"node{i}", heap, log_level)
                      for i in NODE_IDS}
        self.voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}"
                               for n in self.nodes.values())
        self.started_in_s: float | None = None
        # Every JVM is started from this one thread, which lives as long as the cluster: a
        # node dies with the thread that started it (PDEATHSIG, kafka_peer), so a test may
        # call restart() from any thread (asyncio.to_thread) without the node dying with it.
        self._spawner = concurrent.futures.ThreadPoolExecutor(1, "kafka-cluster-spawn")

    # -- what tests read ---------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values())

    @property
    def sasl_bootstrap(self) -> str:
        return ",".join(n.sasl_bootstrap for n in self.nodes.values())

    def node(self, node_id: int) -> ClusterNode:
        return self.nodes[node_id]

    def alive_nodes(self) -> list[ClusterNode]:
        return [n for n in self.nodes.values() if n.alive()]

    def metadata(self, topics: list[str] | None = None):
        """A Metadata answer from a live node (all topics when `topics` is None)."""

        def ask(admin: AdminClient):
            entry = admin.entry(ApiKey.METADATA, "topics")
            wanted = None if topics is None else tuple(
                make(entry, name=t, topic_id=None) for t in topics)
            return admin.call(ApiKey.METADATA, topics=wanted, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)

        return self._ask_any(ask)

    def leader_of(self, topic: str, partition: int) -> int:
        return self._partition(topic, partition).leader_id

    def isr_of(self, topic: str, partition: int) -> set[int]:
        return set(self._partition(topic, partition).isr_nodes)

    def coordinator_of(self, group: str) -> int:
        return self._find_coordinator(group, key_type=0)

    def transaction_coordinator_of(self, transactional_id: str) -> int:
        return self._find_coordinator(transactional_id, key_type=1)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, timeout_s: float = 180.0) -> KafkaCluster:
        record_broker_classes()
        began = time.monotonic()
        cluster_id = new_cluster_id()
        # the admin's credentials go into the bootstrap metadata every node is formatted
        # with; whichever controller is elected first writes them to the metadata log
        scram = [arg for mechanism in SCRAM_MECHANISMS for arg in
                 ("--add-scram", f"{mechanism}=[name={ADMIN[0]},password={ADMIN[1]}]")]
        try:
            for node in self.nodes.values():
                node.work_dir.mkdir(parents=True, exist_ok=True)
                write_properties(node.config, node.properties(self.voters, self.settings))
            # the storage tool is a JVM too: format the three folders side by side
            with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:
                list(pool.map(lambda n: format_storage(n.config, cluster_id, scram),
                              self.nodes.values()))
            for node in self.nodes.values():
                self._spawn(node)
            self._wait(self._settled, timeout_s, "the three nodes to form a cluster")
        except BaseException:
            self.stop()
            raise
        self.started_in_s = time.monotonic() - began
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        # all at once: each node's controlled shutdown needs the others' quorum
        threads = [threading.Thread(target=n.stop, args=(timeout_s,)) for n in self.nodes.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self._spawner.shutdown()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def kill9(self, node_id: int) -> None:
        self.nodes[node_id].kill9()

    @contextmanager
    def down(self, node_id: int) -> Iterator[None]:
        """kill -9 `node_id` and wait until the others have fenced it; restart it on leaving."""
        self.kill9(node_id)
        try:
            self.wait_fenced(node_id)
            yield
        finally:
            self.restart(node_id)

    def _spawn(self, node: ClusterNode) -> None:
        self._spawner.submit(node.spawn).result()

    def wait_fenced(self, node_id: int, timeout_s: float = 60.0) -> None:
        """Until the live nodes have fenced `node_id`: it is no longer among Metadata's brokers
        and leads no partition (its coordinators moved with the partitions they live on)."""

        def fenced() -> str | None:
            answer = self.metadata()
            if any(b.node_id == node_id for b in answer.brokers):
                return f"node {node_id} is still listed"
            led = [f"{t.name}-{p.partition_index}" for t in answer.topics for p in t.partitions
                   if p.leader_id == node_id]
            return f"node {node_id} still leads {led[:5]}" if led else None

        self._wait(fenced, timeout_s, f"node {node_id} to be fenced")

    def restart(self, node_id: int, timeout_s: float = 120.0) -> None:
        """Start a stopped or killed node on its own data; return once it is back in the ISR
        of every partition it holds a replica of."""
        node = self.nodes[node_id]
        if node.alive():
            raise RuntimeError(f"node {node_id} is running")
        self._spawn(node)
        self._wait(lambda: self._caught_up(node_id), timeout_s,
                   f"node {node_id} to rejoin the ISRs")

    def heal(self, timeout_s: float = 120.0) -> None:
        for node in self.nodes.values():
            if not node.alive():
                self.restart(node.node_id, timeout_s)

    def wait_authenticates(self, user: str, password: str, mechanism: str = "SCRAM-SHA-512",
                           timeout_s: float = 30.0) -> None:
        """Until every live node's SASL listener takes this user's password: a credential set
        through AlterUserScramCredentials reaches each node's metadata image a moment after
        the controller commits it."""
        security = ClientSecurity(protocol="SASL_PLAINTEXT", mechanism=mechanism,
                                  username=user, password=password)

        def everywhere() -> str | None:
            for node in self.alive_nodes():
                try:
                    AdminClient(node.sasl_bootstrap, timeout_s=5.0, security=security,
                                route=False).close()
                except AdminError as exc:
                    return f"node {node.node_id}: {exc}"
            return None

        self._wait(everywhere, timeout_s, f"{user} to authenticate with {mechanism}")

    def create_topic(self, name: str, partitions: int = 3,
                     configs: dict[str, str] | None = None, timeout_s: float = 60.0) -> None:
        def create(admin: AdminClient):
            topic = admin.entry(ApiKey.CREATE_TOPICS, "topics")
            config = admin.entry(ApiKey.CREATE_TOPICS, "topics", "configs")
            settings = {"min.insync.replicas": "2", **(configs or {})}
            return admin.call(ApiKey.CREATE_TOPICS, topics=(topic(
                name=name, num_partitions=partitions, replication_factor=3, assignments=(),
                configs=tuple(config(name=k, value=v) for k, v in settings.items())),),
                timeout=datetime.timedelta(seconds=30), validate_only=False)

        result = self._ask_any(create).topics[0]
        if int(result.error_code) != 0:
            raise RuntimeError(f"cannot create {name}: {result.error_code} "
                               f"{result.error_message}")
        self.wait_topic(name, partitions, timeout_s)

    def wait_topic(self, name: str, partitions: int, timeout_s: float = 60.0) -> None:
        """Until every live node's Metadata has the topic with all its partitions led and
        fully in sync (a topic just created is not known to every broker at once)."""

        def led() -> str | None:
            for node in self.alive_nodes():
                with AdminClient(node.bootstrap, timeout_s=5.0, route=False) as admin:
                    entry = admin.entry(ApiKey.METADATA, "topics")
                    answer = admin.call(ApiKey.METADATA,
                                        topics=(make(entry, name=name, topic_id=None),),
                                        allow_auto_topic_creation=False,
                                        include_topic_authorized_operations=False)
                topic = answer.topics[0]
                if int(topic.error_code) != 0 or len(topic.partitions) != partitions:
                    return f"node {node.node_id} does not know {name} yet"
                missing = [p.partition_index for p in topic.partitions
                           if p.leader_id < 0 or len(p.isr_nodes) < len(self.alive_nodes())]
                if missing:
                    return f"{name} partitions {missing} not fully in sync"
            return None

        self._wait(led, timeout_s, f"{name} to have leaders")

    # -- waiting ---------------------------------------------------------------------------------
    def _wait(self, condition, timeout_s: float, what: str) -> None:
        """Until condition() returns None (it returns what is still missing otherwise)."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if node.crashed():
                    raise RuntimeError(f"Kafka node {node.node_id} exited while waiting for "
                                       f"{what}:\n" + "\n".join(node.output[-60:]))
            try:
                missing = condition()
                if missing is None:
                    return
                last = missing
            except (AdminError, OSError, RuntimeError) as exc:
                last = str(exc)
            threading.Event().wait(POLL_S)
        tails = "\n".join(f"node {n.node_id}: " + "\n".join(n.output[-20:])
                          for n in self.nodes.values())
        raise RuntimeError(f"timed out after {timeout_s}s waiting for {what} ({last})\n{tails}")

    def _settled(self) -> str | None:
        """Every node answers Metadata listing all three brokers, and the group and
        transaction coordinators answer (which creates the internal topics, replicated to
        all three, before the first test needs them)."""
        for node in self.nodes.values():
            if not node.alive():
                raise RuntimeError(f"Kafka node {node.node_id} exited while starting:\n"
                                   + "\n".join(node.output[-60:]))
            with AdminClient(node.bootstrap, timeout_s=5.0) as admin:
                answer = admin.call(ApiKey.METADATA, topics=(), allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)
                if len(answer.brokers) != len(self.nodes):
                    return f"node {node.node_id} sees {len(answer.brokers)} brokers"
        self._find_coordinator("kafka-cluster-probe", key_type=0)
        self._find_coordinator("kafka-cluster-probe", key_type=1)
        return self._caught_up(None)

    def _caught_up(self, node_id: int | None) -> str | None:
        """Every partition with `node_id` (any node when None) among its replicas has it in the
        ISR and has a leader, as every live node reports."""
        for node in self.alive_nodes():
            with AdminClient(node.bootstrap, timeout_s=5.0) as admin:
                answer = admin.call(ApiKey.METADATA, topics=None,
                                    allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)
            listed = {b.node_id for b in answer.brokers}
            if node_id is not None and node_id not in listed:
                return f"node {node.node_id} does not list node {node_id} yet"
            for topic in answer.topics:
                for p in topic.partitions:
                    replicas = set(p.replica_nodes)
                    wanted = replicas if node_id is None else replicas & {node_id}
                    if p.leader_id < 0 or not wanted <= set(p.isr_nodes):
                        return (f"{topic.name}-{p.partition_index}: leader {p.leader_id}, "
                                f"isr {list(p.isr_nodes)} of {list(p.replica_nodes)}")
        return None

    # -- questions -------------------------------------------------------------------------------
    def _ask_any(self, ask):
        """ask(admin) on the first live node that answers."""
        last: Exception | None = None
        for node in self.alive_nodes():
            try:
                with AdminClient(node.bootstrap, timeout_s=10.0) as admin:
                    return ask(admin)
            except (AdminError, OSError) as exc:
                last = exc
        raise AdminError(f"no live Kafka node answered: {last}")

    def _topic(self, name: str):
        for topic in self.metadata([name]).topics:
            if topic.name == name and int(topic.error_code) == 0:
                return topic
        return None

    def _partition(self, topic: str, partition: int):
        found = self._topic(topic)
        if found is not None:
            for p in found.partitions:
                if p.partition_index == partition:
                    return p
        raise RuntimeError(f"{topic}-{partition} is not in the cluster's Metadata")

    def _find_coordinator(self, key: str, key_type: int) -> int:
        def ask(admin: AdminClient):
            return admin.call(ApiKey.FIND_COORDINATOR, key=key, key_type=key_type,
                              coordinator_keys=(key,))

        answer = self._ask_any(ask)
        entries = getattr(answer, "coordinators", None)
        entry = entries[0] if entries else answer
        if int(entry.error_code) != 0:
            raise RuntimeError(f"FindCoordinator({key!r}) answered {entry.error_code}")
        return entry.node_id
