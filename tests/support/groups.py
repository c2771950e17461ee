"""Consumer-group members of the real clients, each running in its own thread (or, for kcat, its
own process), observed through their rebalance callbacks.

Every member reports to a shared `Watch`: tests wait on conditions over all members ("every
partition owned by exactly one member", "member X was assigned again") with a deadline, never
with a bare sleep. Calls that must run on a consumer's own thread (commit, for instance) go through
`Member.call`.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import json
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from tests.support import clients

DEADLINE_S = 30.0
POLL_S = 0.1


class Watch:
    """One condition variable shared by a test's members; notified on every callback."""

    def __init__(self) -> None:
        self.cond = threading.Condition()

    def notify(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, predicate: Callable[[], object], timeout_s: float,
                  what: str | Callable[[], str]) -> object:
        """Wait until predicate() is truthy; fail with `what` (plus the state) at the deadline."""
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout_s}s waiting for: "
                                         f"{what() if callable(what) else what}")
                # wake at least every 0.25 s: some conditions (a process's exit) notify nobody
                self.cond.wait(min(remaining, 0.25))

    def quiet(self, predicate_broken: Callable[[], object], window_s: float) -> object:
        """Wait `window_s` for a callback that makes predicate_broken() truthy; return it (or
        None when the window passed quietly). Used to assert that something does NOT happen,
        e.g. no rebalance: each heartbeat of the other members would have reported one."""
        try:
            return self.wait_for(predicate_broken, window_s, "")
        except AssertionError:
            return None


@dataclass
class Event:
    kind: str                 # "assign" | "revoke" | "lost"
    partitions: frozenset[int]
    at: float


@dataclass
class Consumed:
    partition: int
    offset: int
    value: bytes | None


class Member:
    """A group member. Subclasses run the client loop in `_run` (on the member's thread)."""

    client = "?"

    def __init__(self, watch: Watch, bootstrap: str, group: str, topic: str, name: str,
                 instance_id: str | None = None, config: dict | None = None) -> None:
        self.watch = watch
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.name = name
        self.instance_id = instance_id
        self.config = dict(config or {})
        self.assigned: frozenset[int] = frozenset()
        self.events: list[Event] = []
        self.records: list[Consumed] = []
        self.errors: list = []          # client errors seen by poll() (client-specific objects)
        self.failure: BaseException | None = None   # the member loop itself crashed
        self._stop = threading.Event()
        self._close = True
        self._calls: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self.finished = threading.Event()

    # -- bookkeeping called from the client's callbacks ------------------------------------
    def _python_client_config(self) -> dict:
        """kafka-python's and aiokafka's consumer settings (they share the names)."""
        return {"bootstrap_servers": self.bootstrap, "group_id": self.group,
                "auto_offset_reset": "earliest", "enable_auto_commit": False,
                "heartbeat_interval_ms": 500, "session_timeout_ms": 10000,
                "client_id": self.name, "group_instance_id": self.instance_id, **self.config}

    def _listener(self, base: type):
        """A rebalance listener of the client's own class `base` reporting to this member."""
        member = self

        class Listener(base):
            def on_partitions_revoked(self, revoked):
                member._on_revoke(tp.partition for tp in revoked)

            def on_partitions_assigned(self, assigned):
                member._on_assign(tp.partition for tp in assigned)

        return Listener()

    @property
    def incremental(self) -> bool:
        """Cooperative rebalancing (KIP-429): callbacks name only the partitions that move."""
        return False

    def _on_assign(self, partitions: Iterable[int]) -> None:
        parts = frozenset(partitions)
        with self.watch.cond:
            self.events.append(Event("assign", parts, time.monotonic()))
            self.assigned = self.assigned | parts if self.incremental else parts
            self.watch.cond.notify_all()

    def _on_revoke(self, partitions: Iterable[int], kind: str = "revoke") -> None:
        parts = frozenset(partitions)
        with self.watch.cond:
            self.events.append(Event(kind, parts, time.monotonic()))
            self.assigned = self.assigned - parts if self.incremental else frozenset()
            self.watch.cond.notify_all()

    def _on_records(self, batch: list[Consumed]) -> None:
        if batch:
            with self.watch.cond:
                self.records.extend(batch)
                self.watch.cond.notify_all()

    def _on_error(self, error) -> None:
        with self.watch.cond:
            self.errors.append(error)
            self.watch.cond.notify_all()

    # -- counts ----------------------------------------------------------------------------
    def count(self, *kinds: str) -> int:
        with self.watch.cond:
            return sum(1 for e in self.events if e.kind in kinds)

    def callbacks(self) -> int:
        return self.count("assign", "revoke", "lost")

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> Member:
        self._thread = threading.Thread(target=self._main, name=f"member-{self.name}",
                                        daemon=True)
        self._thread.start()
        return self

    def _main(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the test through .failure
            self.failure = exc
        finally:
            self.finished.set()
            self.watch.notify()

    def stop(self, close: bool = True, timeout_s: float = DEADLINE_S) -> None:
        """Stop the loop; close() the consumer (the client's clean shutdown) unless close=False."""
        self._close = close
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            assert not self._thread.is_alive(), f"{self.name} did not stop within {timeout_s}s"

    def call(self, fn: Callable, timeout_s: float = DEADLINE_S):
        """Run fn(consumer) on the member's thread (awaiting a coroutine) and return the result."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._calls.put((fn, future))
        return future.result(timeout_s)

    def _serve_calls(self, consumer) -> None:
        while True:
            try:
                fn, future = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                future.set_result(fn(consumer))
            except BaseException as exc:
                future.set_exception(exc)

    async def _serve_calls_async(self, consumer) -> None:
        while True:
            try:
                fn, future = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                result = fn(consumer)
                if inspect.isawaitable(result):
                    result = await result
                future.set_result(result)
            except BaseException as exc:
                future.set_exception(exc)

    def commit(self, timeout_s: float = DEADLINE_S) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.client} {self.name} assigned={sorted(self.assigned)}>"


class ConfluentMember(Member):
    client = "confluent-kafka"

    @property
    def incremental(self) -> bool:
        return self.config.get("partition.assignment.strategy") == "cooperative-sticky"

    def conf(self) -> dict:
        conf = {"bootstrap.servers": self.bootstrap, "group.id": self.group,
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "heartbeat.interval.ms": 500, "session.timeout.ms": 10000,
                "enable.partition.eof": False, "client.id": self.name}
        if self.instance_id is not None:
            conf["group.instance.id"] = self.instance_id
        conf.update(self.config)
        return conf

    def _run(self) -> None:
        from confluent_kafka import Consumer
        consumer = Consumer(self.conf())
        consumer.subscribe(
            [self.topic],
            on_assign=lambda c, ps: self._on_assign(p.partition for p in ps),
            on_revoke=lambda c, ps: self._on_revoke(p.partition for p in ps),
            on_lost=lambda c, ps: self._on_revoke((p.partition for p in ps), "lost"))
        try:
            while not self._stop.is_set():
                self._serve_calls(consumer)
                msg = consumer.poll(POLL_S)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self._on_error(msg.error())
                    continue
                self._on_records([Consumed(msg.partition(), msg.offset(), msg.value())])
        finally:
            if self._close:
                consumer.close()

    def commit(self, timeout_s: float = DEADLINE_S) -> None:
        self.call(_commit_stored, timeout_s)


def _commit_stored(consumer) -> None:
    """Commit what the consumer has stored; auto-commit may already have committed all of it,
    which librdkafka reports as _NO_OFFSET: then the committed offsets are already the wanted
    ones."""
    from confluent_kafka import KafkaError, KafkaException
    try:
        consumer.commit(asynchronous=False)
    except KafkaException as error:
        if error.args[0].code() != KafkaError._NO_OFFSET:
            raise


class KafkaPythonMember(Member):
    client = "kafka-python"

    def _run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        consumer = KafkaConsumer(**self._python_client_config())
        # kafka-python 3.0.12 bug: a leader that assigns before it has the topic's metadata
        # rejoins on the next metadata update; if poll() returns (timeout) while that rejoin is
        # in flight, the snapshot check then says "no rejoin needed", the finished join is never
        # completed, heartbeats stay disabled and the member is dropped at its session timeout.
        # A metadata update after subscribe() and before the first JoinGroup avoids that rejoin.
        consumer.subscribe([self.topic], listener=self._listener(ConsumerRebalanceListener))
        consumer.topics()
        try:
            while not self._stop.is_set():
                self._serve_calls(consumer)
                batches = consumer.poll(timeout_ms=int(POLL_S * 1000))
                self._on_records([Consumed(m.partition, m.offset, m.value)
                                  for messages in batches.values() for m in messages])
        finally:
            if self._close:
                consumer.close(autocommit=False)

    def commit(self, timeout_s: float = DEADLINE_S) -> None:
        self.call(lambda c: c.commit(), timeout_s)


class AioKafkaMember(Member):
    client = "aiokafka"

    def _run(self) -> None:
        asyncio.run(self._arun())

    async def _arun(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
        consumer = AIOKafkaConsumer(**self._python_client_config())
        await consumer.start()
        try:
            consumer.subscribe([self.topic], listener=self._listener(ConsumerRebalanceListener))
            while not self._stop.is_set():
                await self._serve_calls_async(consumer)
                batches = await consumer.getmany(timeout_ms=int(POLL_S * 1000))
                self._on_records([Consumed(m.partition, m.offset, m.value)
                                  for messages in batches.values() for m in messages])
        finally:
            if self._close:
                await consumer.stop()

    def commit(self, timeout_s: float = DEADLINE_S) -> None:
        self.call(lambda c: c.commit(), timeout_s)


_KCAT_REBALANCE = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): ?(.*)$")


class KcatMember(Member):
    """`kcat -G group topic`: librdkafka 2.0.2's balanced consumer in its own process. Its
    assignment comes from the "% Group ... rebalanced" lines it prints on stderr; it commits
    automatically (every 200 ms and on the SIGINT close)."""

    client = "kcat"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.proc: subprocess.Popen | None = None
        self.stderr: list[str] = []

    def command(self) -> list[str]:
        props = {"auto.offset.reset": "earliest", "enable.auto.commit": "true",
                 "auto.commit.interval.ms": "200", "heartbeat.interval.ms": "500",
                 "session.timeout.ms": "10000", "client.id": self.name}
        if self.instance_id is not None:
            props["group.instance.id"] = self.instance_id
        props.update(self.config)
        command = ["kcat", "-b", self.bootstrap, "-G", self.group, self.topic, "-J", "-u"]
        for key, value in props.items():
            command += ["-X", f"{key}={value}"]
        return command

    def start(self) -> Member:
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        return self

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            doc = json.loads(line)
            payload = doc.get("payload")
            self._on_records([Consumed(doc["partition"], doc["offset"],
                                       None if payload is None else payload.encode())])

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.stderr.append(line)
            match = _KCAT_REBALANCE.search(line)
            if match:
                parts = [int(p) for p in re.findall(r"\[(\d+)\]", match.group(2))]
                if match.group(1) == "assigned":
                    self._on_assign(parts)
                else:
                    self._on_revoke(parts)
        self.finished.set()
        self.watch.notify()

    def stop(self, close: bool = True, timeout_s: float = DEADLINE_S) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT if close else signal.SIGKILL)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"kcat {self.name} ignored SIGINT for {timeout_s}s:\n"
                                 + "\n".join(self.stderr[-20:]))

    def commit(self, timeout_s: float = DEADLINE_S) -> None:
        raise TypeError("kcat commits on its own (auto-commit, and on close)")


class ConfluentProcessMember(Member):
    """A confluent-kafka consumer in a child Python process, so a test can SIGKILL it. It prints
    one JSON line per rebalance callback, which drives the usual bookkeeping here."""

    client = "confluent-kafka (process)"

    SCRIPT = textwrap.dedent("""
        import json, sys
        from confluent_kafka import Consumer
        conf, topic = json.loads(sys.argv[1]), sys.argv[2]
        def report(kind, ps):
            print(json.dumps({"kind": kind, "partitions": [p.partition for p in ps]}), flush=True)
        consumer = Consumer(conf)
        consumer.subscribe([topic], on_assign=lambda c, ps: report("assign", ps),
                           on_revoke=lambda c, ps: report("revoke", ps),
                           on_lost=lambda c, ps: report("lost", ps))
        while True:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is not None:
                print(json.dumps({"kind": "error", "error": msg.error().str()}), flush=True)
    """)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.proc: subprocess.Popen | None = None
        self.stderr: list[str] = []

    def process_conf(self) -> dict:
        """The client configuration handed to SCRIPT."""
        return ConfluentMember.conf(self)

    def start(self) -> Member:
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT,
                                      json.dumps(self.process_conf()), self.topic],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        return self

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            doc = json.loads(line)
            if doc["kind"] == "assign":
                self._on_assign(doc["partitions"])
            elif doc["kind"] in ("revoke", "lost"):
                self._on_revoke(doc["partitions"], doc["kind"])
            else:
                self._on_error(doc["error"])
        self.finished.set()
        self.watch.notify()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def stop(self, close: bool = True, timeout_s: float = DEADLINE_S) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill9()


class KafkaPythonProcessMember(ConfluentProcessMember):
    """A kafka-python consumer in a child process (so a test can SIGKILL it), reporting its
    callbacks as JSON lines like ConfluentProcessMember."""

    client = "kafka-python (process)"

    SCRIPT = textwrap.dedent("""
        import json, sys
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        conf, topic = json.loads(sys.argv[1]), sys.argv[2]
        def report(kind, ps):
            print(json.dumps({"kind": kind, "partitions": [p.partition for p in ps]}), flush=True)
        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                report("revoke", revoked)
            def on_partitions_assigned(self, assigned):
                report("assign", assigned)
        consumer = KafkaConsumer(**conf)
        consumer.subscribe([topic], listener=Listener())
        consumer.topics()   # metadata before the first join: see KafkaPythonMember._run
        while True:
            consumer.poll(timeout_ms=100)
    """)

    def process_conf(self) -> dict:
        return {**self._python_client_config(), **self.config}


MEMBERS: dict[str, type[Member]] = {
    "confluent-kafka": ConfluentMember,
    "kafka-python": KafkaPythonMember,
    "aiokafka": AioKafkaMember,
    "kcat": KcatMember,
}


# -- group-level conditions ----------------------------------------------------------------------

def split_evenly(members: list[Member], partitions: int) -> bool:
    """Every partition owned by exactly one member, and every member owns its fair share (the
    state of the final generation once all members have joined)."""
    owned = [m.assigned for m in members]
    union = frozenset().union(*owned)
    share = partitions // len(members)
    return (union == frozenset(range(partitions)) and sum(len(o) for o in owned) == partitions
            and all(share <= len(o) <= share + 1 for o in owned))


def describe_assignment(members: list[Member]) -> str:
    lines = []
    for m in members:
        events = ", ".join(f"{e.kind}{sorted(e.partitions)}" for e in m.events[-6:])
        failure = f" FAILED: {m.failure!r}" if m.failure else ""
        lines.append(f"{m.client} {m.name}: assigned {sorted(m.assigned)}; last events "
                     f"[{events}]; errors {m.errors[-3:]}{failure}")
    return "\n  " + "\n  ".join(lines)


def broker_view(members: list[Member]) -> str:
    """What the coordinator says of the members' group (DescribeGroups or, for a consumer-protocol
    group, ConsumerGroupDescribe with each member's target): for a failure message, so a split
    that never came says which side stalled."""
    if not members:
        return ""
    from confluent_kafka.admin import AdminClient
    first = members[0]
    try:
        admin = AdminClient({"bootstrap.servers": first.bootstrap})
        found = admin.describe_consumer_groups([first.group], request_timeout=5)
        group = found[first.group].result(timeout=10)
    except Exception as exc:   # the view is a diagnosis: its own failure must not hide the first
        return f"\n  the coordinator's view: unavailable ({exc})"

    def partitions(assignment) -> list[int]:
        return sorted(tp.partition for tp in assignment.topic_partitions) if assignment else []

    lines = [f"the coordinator's view: {group.state}, {len(group.members)} members"]
    for m in group.members:
        target = getattr(m, "target_assignment", None)
        lines.append(f"  {m.client_id} ({m.group_instance_id}): assigned "
                     f"{partitions(m.assignment)}"
                     + ("" if target is None else f", target {partitions(target)}"))
    return "\n  " + "\n  ".join(lines)


def wait_split(watch: Watch, members: list[Member], partitions: int,
               timeout_s: float = DEADLINE_S) -> None:
    watch.wait_for(lambda: split_evenly(members, partitions) or any(m.failure for m in members),
                   timeout_s, lambda: "every partition owned by exactly one member"
                   + describe_assignment(members) + broker_view(members))
    failed = [m for m in members if m.failure]
    assert not failed, describe_assignment(failed)


def consumed_values(members: Iterable[Member]) -> list[bytes | None]:
    """Every value the members have consumed so far, duplicates included."""
    return [r.value for m in members for r in m.records]


def wait_consumed(watch: Watch, members: list[Member], values: Iterable[bytes],
                  what: str = "every record consumed", timeout_s: float = DEADLINE_S) -> None:
    """Wait until every one of `values` has been consumed by some member."""
    wanted = set(values)
    watch.wait_for(lambda: wanted <= set(consumed_values(members)), timeout_s,
                   lambda: what + describe_assignment(members))


# -- a test's members and broker -------------------------------------------------------------------

@contextlib.contextmanager
def broker_output_on_failure(broker) -> Iterator[None]:
    """When the block fails, print the broker's last output lines (pytest shows them with the
    failure): what the broker logged is most of what there is to debug an interop test with."""
    try:
        yield
    except BaseException:
        print("broker output:\n" + "\n".join(broker.output[-80:]))
        raise


def stop_all(members: Iterable[Member]) -> None:
    """Stop every member, going on past one that fails to stop: a cleanup that raises would
    hide the failure the test is reporting and leave the other members running."""
    for m in members:
        try:
            m.stop()
        except Exception:
            pass


@contextlib.contextmanager
def running(broker, members: list[Member]) -> Iterator[list[Member]]:
    """Start `members` in order; at the end stop every member the list then holds (a test may
    replace some), and print the broker's output first if the block failed."""
    try:
        with broker_output_on_failure(broker):
            for m in members:
                m.start()
            yield members
    finally:
        for m in members:
            m.stop()


# -- topics, records, offsets ----------------------------------------------------------------------

def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from roster.admin.client import AdminClient
    from roster.admin.topics import create
    with AdminClient(bootstrap) as admin:
        create(admin, name, partitions, {})


@dataclass
class Produced:
    records: list[clients.Rec]
    per_partition: dict[int, int] = field(default_factory=dict)

    @property
    def values(self) -> list[bytes]:
        return [r.value for r in self.records]


def produce_known(bootstrap: str, topic: str, partitions: int, count: int, tag: str) -> Produced:
    records = clients.sample_records(count, partitions, tag)
    clients.produce_confluent(bootstrap, topic, records, "lz4")
    per_partition: dict[int, int] = {}
    for r in records:
        per_partition[r.partition] = per_partition.get(r.partition, 0) + 1
    return Produced(records, per_partition)


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """partition -> committed offset, as kafka-python's admin client reads them (OffsetFetch)."""
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}


def committed_offsets_confluent(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The same through confluent-kafka's AdminClient.list_consumer_group_offsets."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    result = future.result(DEADLINE_S)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.topic == topic}
