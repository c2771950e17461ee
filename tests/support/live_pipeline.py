"""The pieces of a live pipeline that the cut-over test moves from roster to a Kafka cluster
(tests/cluster/test_cutover.py): a paced producer, confluent-kafka static members and a
roster.client member, each on its own thread, each one side (cluster) at a time. Every record
any of them reads is logged with the side it was read on, so a test can tell a lost record,
a re-read after a move, and a record read twice on one side apart.

- `Reads`: the shared log, `(group, side, member, partition, offset, value)` rows.
- `PacedProducer(bootstrap, topic, partitions, rate)`: writes "id" values 0, 1, ... round
  robin over the partitions; `.acked` the ids the broker acknowledged; `.stop()` flushes.
  `.start_from(next_id)` continues the numbering on another broker.
- `StaticMember(bootstrap, side, group, instance_id, topic, reads)`: a confluent-kafka
  consumer with `group.instance.id`, auto-committing; `.assigned` its current partitions,
  `.assignments` how many assignments it has been given; `.stop()` closes it (a static
  member's close sends no LeaveGroup: its partitions stay its own until its session ends).
- `RosterClientMember(...)`: the same with roster.client's asyncio Consumer (commit after
  each poll), on an event loop of its own.
- Each takes `login=Login(user, password, mechanism)` to run as that SASL user over
  SASL_PLAINTEXT (the bootstrap then names SASL listeners); without one, PLAINTEXT.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Producer

SESSION_TIMEOUT_MS = 60_000   # longer than the whole move: a stopped static member keeps its
                              # partitions on roster, so nobody there reads them after it left


@dataclass(frozen=True)
class Login:
    """The SASL user a pipeline's client runs as (SASL_PLAINTEXT)."""
    user: str
    password: str = field(repr=False)
    mechanism: str = "SCRAM-SHA-512"

    def confluent(self) -> dict[str, str]:
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": self.mechanism,
                "sasl.username": self.user, "sasl.password": self.password}

    def security(self):
        from roster.security.client import ClientSecurity
        return ClientSecurity(protocol="SASL_PLAINTEXT", mechanism=self.mechanism,
                              username=self.user, password=self.password)


def _confluent(login: Login | None) -> dict[str, str]:
    return login.confluent() if login is not None else {}


@dataclass(frozen=True)
class Read:
    group: str
    side: str
    member: str
    partition: int
    offset: int
    value: int


class Reads:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rows: list[Read] = []
        self.changed = threading.Condition(self._lock)

    def add(self, row: Read) -> None:
        with self._lock:
            self.rows.append(row)
            self.changed.notify_all()

    def snapshot(self) -> list[Read]:
        with self._lock:
            return list(self.rows)

    def wait_for(self, condition, timeout_s: float, what: str) -> None:
        """Until condition(rows) holds; woken by every new read, never a fixed sleep."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not condition(self.rows):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{what} within {timeout_s}s")
                self.changed.wait(min(left, 1.0))


class PacedProducer:
    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float,
                 first_id: int = 0, login: Login | None = None) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.login = login
        self.interval = 1.0 / rate
        self.next_id = first_id
        self.acked: set[int] = set()
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PacedProducer:
        self._thread.start()
        return self

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acked.add(int(message.value()))
        else:
            self.failed.append(str(error))

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5, "log_level": 3,
                             **_confluent(self.login)})
        try:
            while not self._stop.is_set():
                producer.produce(self.topic, str(self.next_id).encode(),
                                 partition=self.next_id % self.partitions,
                                 on_delivery=self._delivered)
                self.next_id += 1
                producer.poll(0)
                self._stop.wait(self.interval)   # pacing, and the stop signal
        finally:
            producer.flush(30)

    def stop(self) -> int:
        """Stop writing and flush; returns the next id (where another producer continues)."""
        self._stop.set()
        self._thread.join(60)
        return self.next_id


class StaticMember:
    def __init__(self, bootstrap: str, side: str, group: str, instance_id: str, topic: str,
                 reads: Reads, login: Login | None = None) -> None:
        self.bootstrap, self.side, self.group = bootstrap, side, group
        self.login = login
        self.instance_id, self.topic, self.reads = instance_id, topic, reads
        self.assigned: set[int] = set()
        self.assignments = 0
        self.revocations = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> StaticMember:
        self._thread.start()
        return self

    def _on_assign(self, consumer, partitions) -> None:
        self.assigned = {tp.partition for tp in partitions}
        self.assignments += 1

    def _on_revoke(self, consumer, partitions) -> None:
        self.revocations += 1
        self.assigned = set()

    def _run(self) -> None:
        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "group.instance.id": self.instance_id, "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": 1000, "auto.offset.reset": "earliest",
            "enable.auto.commit": True, "auto.commit.interval.ms": 200,
            "partition.assignment.strategy": "range", "log_level": 3,
            **_confluent(self.login)})
        consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        try:
            while not self._stop.is_set():
                message = consumer.poll(0.2)
                if message is None:
                    continue
                if message.error():
                    self.errors.append(str(message.error()))
                    continue
                self.reads.add(Read(self.group, self.side, self.instance_id,
                                    message.partition(), message.offset(),
                                    int(message.value())))
        finally:
            consumer.close()   # commits what poll() returned; static: no LeaveGroup

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.instance_id} did not close"


class RosterClientMember:
    def __init__(self, bootstrap: str, side: str, group: str, instance_id: str, topic: str,
                 reads: Reads, login: Login | None = None) -> None:
        self.bootstrap, self.side, self.group = bootstrap, side, group
        self.login = login
        self.instance_id, self.topic, self.reads = instance_id, topic, reads
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def start(self) -> RosterClientMember:
        self._thread.start()
        return self

    async def _run(self) -> None:
        from roster.client.consumer import Consumer as RosterConsumer

        consumer = RosterConsumer(self.bootstrap, self.group, group_instance_id=self.instance_id,
                                  session_timeout_ms=SESSION_TIMEOUT_MS,
                                  heartbeat_interval_ms=1000,
                                  security=None if self.login is None else self.login.security())
        try:
            await consumer.subscribe([self.topic])
            while not self._stop.is_set():
                for record in await consumer.poll(timeout_ms=200):
                    self.reads.add(Read(self.group, self.side, self.instance_id,
                                        record.partition, record.offset, int(record.value)))
                await consumer.commit()
        except BaseException as exc:   # reported by stop(); the thread must not die silently
            self.failure = exc
        finally:
            await consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.instance_id} did not close"
        if self.failure is not None:
            raise self.failure
