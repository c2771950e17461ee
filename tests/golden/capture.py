"""Capture golden request/response bytes from the real Kafka clients talking to roster.

    .venv/bin/python tests/golden/capture.py

For each client (confluent-kafka, kafka-python, aiokafka, kcat) this starts a fresh roster on a
fresh data directory, puts a recording TCP proxy in front of it (roster advertises the proxy's
address through advertised.listeners, so every connection the client makes goes through it),
and drives the client through a small scenario: create a topic with the admin client where the
client has one, produce three short records, then read them back by explicit assignment (no
consumer group). The proxy pairs every request frame with its response by correlation id.

The first pair seen for each (client, api key, api version) is written, size prefixes stripped,
to tests/golden/<client>/<api>_v<version>.json, for every API roster serves (a SPEC in
src/roster/broker/handlers/) except the versions it answers without decoding (Produce v0-2).
For Metadata and Fetch the first pair whose response describes a topic / carries records is
preferred over an earlier bare one. When roster never answered a version (it closed the
connection), the request is saved alone with "response_hex": null and the failure in the note,
and the script exits 1. Existing fixture directories for the captured clients are replaced.
Run with client names as arguments to capture only those. Nothing here is imported by the
tests: tests/unit/test_golden.py only reads the JSON files.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "src"))

from roster.broker.handlers import build_registry  # noqa: E402
from roster.protocol.codec import decode_response  # noqa: E402

FETCH, METADATA = 1, 3

TOPIC = "golden"
SCRATCH_TOPIC = "golden-scratch"  # created then deleted by the admin clients
# Short, but repetitive enough that lz4 shrinks them: librdkafka sends a batch uncompressed
# when compressing would not make it smaller.
RECORDS = [(f"k{i}".encode(), f"v{i}-".encode() + b"golden" * 6) for i in range(3)]
BASE_TS = 1_700_000_000_000
DEADLINE_S = 30.0


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# -- the recording proxy -----------------------------------------------------------------------

@dataclass
class Pair:
    client: str
    step: str
    connection: int
    api_key: int
    api_version: int
    correlation_id: int
    request: bytes
    response: bytes | None  # None: the connection closed before an answer came


@dataclass
class Recorder:
    client: str = ""
    step: str = ""
    pairs: list[Pair] = field(default_factory=list)
    unanswered: list[Pair] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _frames(buffer: bytearray):
    """Pop every complete size-prefixed frame from the front of buffer."""
    while len(buffer) >= 4:
        (size,) = struct.unpack_from(">i", buffer, 0)
        if len(buffer) < 4 + size:
            return
        frame = bytes(buffer[4:4 + size])
        del buffer[:4 + size]
        yield frame


class RecordingProxy:
    """An asyncio TCP proxy on 127.0.0.1 in a thread of its own. It parses before forwarding,
    so a request is always registered before its response can come back."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.upstream_port: int | None = None
        self.loop = asyncio.new_event_loop()
        self.connections = itertools.count(1)
        # Reserve the listening socket now so roster can be told the port before it starts.
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.ready = threading.Event()

    def start(self) -> RecordingProxy:
        self.thread.start()
        self.ready.wait()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, sock=self.sock))
        self.ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        async def close():
            self.server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()
        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    async def _serve(self, client_reader, client_writer) -> None:
        number = next(self.connections)
        client, step = self.recorder.client, self.recorder.step
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.close()
            return
        pending: dict[int, tuple[int, int, bytes, str]] = {}  # by correlation id

        def on_request(frame: bytes) -> None:
            key, version, correlation_id = struct.unpack_from(">hhi", frame, 0)
            pending[correlation_id] = (key, version, frame, self.recorder.step or step)

        def on_response(frame: bytes) -> None:
            (correlation_id,) = struct.unpack_from(">i", frame, 0)
            entry = pending.pop(correlation_id, None)
            if entry is None:
                return
            key, version, request, at_step = entry
            with self.recorder.lock:
                self.recorder.pairs.append(Pair(client, at_step, number, key, version,
                                                correlation_id, request, frame))

        async def pump(reader, writer, on_frame):
            buffer = bytearray()
            try:
                while data := await reader.read(65536):
                    buffer += data
                    for frame in _frames(buffer):
                        on_frame(frame)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        try:
            await asyncio.gather(pump(client_reader, up_writer, on_request),
                                 pump(up_reader, client_writer, on_response))
        finally:
            with self.recorder.lock:
                for correlation_id, (key, version, request, at_step) in pending.items():
                    self.recorder.unanswered.append(Pair(client, at_step, number, key, version,
                                                         correlation_id, request, None))


# -- roster --------------------------------------------------------------------------------------

class Roster:
    def __init__(self, data_dir: Path, advertised_port: int) -> None:
        command = [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", "0",
                   "--data-dir", str(data_dir),
                   "--set", f"advertised.listeners=PLAINTEXT://127.0.0.1:{advertised_port}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"),
                                                           os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, cwd=REPO)
        self.output: list[str] = []
        self.port: int | None = None
        ready = threading.Event()

        def read():
            for line in self.proc.stdout:
                self.output.append(line.rstrip("\n"))
                match = re.search(r"roster listening on 127\.0\.0\.1:(\d+)", line)
                if match:
                    self.port = int(match.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30) or self.port is None:
            self.stop()
            raise RuntimeError("roster did not start:\n" + "\n".join(self.output[-40:]))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# -- the client scenarios -----------------------------------------------------------------------

def run_confluent(bootstrap: str, step, tolerate) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    step("admin create_topics + delete_topics")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def create():
        futures = admin.create_topics([NewTopic(TOPIC, 1, 1), NewTopic(SCRATCH_TOPIC, 1, 1)],
                                      operation_timeout=10, request_timeout=10)
        for future in futures.values():
            future.result(DEADLINE_S)

    def delete():
        futures = admin.delete_topics([SCRATCH_TOPIC], operation_timeout=10, request_timeout=10)
        for future in futures.values():
            future.result(DEADLINE_S)

    tolerate("AdminClient.create_topics", create)
    if SCRATCH_TOPIC not in admin.list_topics(timeout=10).topics:
        # CreateTopics failed: make the topic by auto-creation, so DeleteTopics deletes a real one
        Producer({"bootstrap.servers": bootstrap}).list_topics(SCRATCH_TOPIC, timeout=10)
    tolerate("AdminClient.delete_topics", delete)

    step("producer (lz4)")
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4",
                         "linger.ms": 5, "acks": "all"})
    errors = []
    for i, (key, value) in enumerate(RECORDS):
        producer.produce(TOPIC, value=value, key=key, partition=0, timestamp=BASE_TS + i,
                         on_delivery=lambda err, msg: err and errors.append(err))
    assert producer.flush(DEADLINE_S) == 0 and not errors, errors
    del producer

    step("consumer (assign, OFFSET_BEGINNING)")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "golden-assign-only",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    seen = 0
    deadline = time.monotonic() + DEADLINE_S
    while seen < len(RECORDS) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            seen += 1
    consumer.close()
    assert seen == len(RECORDS), seen


def run_kafka_python(bootstrap: str, step, tolerate) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    step("admin create_topics + delete_topics")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    tolerate("KafkaAdminClient.create_topics", lambda: admin.create_topics(
        [NewTopic(TOPIC, 1, 1), NewTopic(SCRATCH_TOPIC, 1, 1)]))
    tolerate("KafkaAdminClient.delete_topics", lambda: admin.delete_topics([SCRATCH_TOPIC]))
    admin.close()

    step("producer (defaults: idempotent)")
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    futures = [producer.send(TOPIC, value=value, key=key, partition=0, timestamp_ms=BASE_TS + i)
               for i, (key, value) in enumerate(RECORDS)]
    producer.flush(DEADLINE_S)
    for future in futures:
        future.get(timeout=DEADLINE_S)
    producer.close()

    step("consumer (assign, seek_to_beginning)")
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    partition = TopicPartition(TOPIC, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    seen = 0
    deadline = time.monotonic() + DEADLINE_S
    while seen < len(RECORDS) and time.monotonic() < deadline:
        for messages in consumer.poll(timeout_ms=500).values():
            seen += len(messages)
    consumer.close()
    assert seen == len(RECORDS), seen


def run_aiokafka(bootstrap: str, step, tolerate) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def produce():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(TOPIC, value=value, key=key, partition=0,
                                           timestamp_ms=BASE_TS + i)
                       for i, (key, value) in enumerate(RECORDS)]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    async def consume():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    enable_auto_commit=False)
        await consumer.start()
        seen = 0
        try:
            partition = TopicPartition(TOPIC, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            deadline = time.monotonic() + DEADLINE_S
            while seen < len(RECORDS) and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    seen += len(messages)
        finally:
            await consumer.stop()
        assert seen == len(RECORDS), seen

    step("producer (auto-creates the topic)")
    asyncio.run(produce())
    step("consumer (assign, seek_to_beginning)")
    asyncio.run(consume())


def run_kcat(bootstrap: str, step, tolerate) -> None:
    def kcat(*args: str, stdin: str | None = None) -> str:
        result = subprocess.run(["kcat", "-b", bootstrap, *args], input=stdin,
                                capture_output=True, text=True, timeout=DEADLINE_S)
        assert result.returncode == 0, (args, result.stderr)
        return result.stdout

    step("kcat -P (auto-creates the topic)")
    kcat("-P", "-t", TOPIC, "-p", "0", "-K", ":",
         stdin="".join(f"{k.decode()}:{v.decode()}\n" for k, v in RECORDS))
    step("kcat -L")
    kcat("-L")
    step("kcat -C -e")
    out = kcat("-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-q")
    assert out.split() == [v.decode() for _, v in RECORDS], out


CLIENTS = {
    "confluent-kafka": run_confluent,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "kcat": run_kcat,
}


def client_version(client: str) -> str:
    if client == "confluent-kafka":
        import confluent_kafka
        version, lib = confluent_kafka.version(), confluent_kafka.libversion()
        version = version[0] if isinstance(version, tuple) else version
        return f"confluent-kafka {version} (librdkafka {lib[0]})"
    if client == "kafka-python":
        import kafka
        return f"kafka-python {kafka.__version__}"
    if client == "aiokafka":
        import aiokafka
        return f"aiokafka {aiokafka.__version__}"
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True).stdout
    match = re.search(r"Version ([\w.]+) .*librdkafka ([\w.]+)", out)
    return f"kcat {match.group(1)} (librdkafka {match.group(2)})" if match else "kcat ?"


# -- capture and save ----------------------------------------------------------------------------

def capture(client: str) -> Recorder:
    recorder = Recorder(client=client)
    proxy = RecordingProxy(recorder).start()
    with tempfile.TemporaryDirectory(prefix="roster-golden-") as data_dir:
        roster = Roster(Path(data_dir), proxy.port)
        proxy.upstream_port = roster.port
        try:
            def step(name: str) -> None:
                print(f"  [{client}] {name}", flush=True)
                recorder.step = name

            def tolerate(what: str, action) -> None:
                """Run an admin call whose failure should not end the capture; note it."""
                try:
                    action()
                except Exception as exc:  # noqa: BLE001 - any client error is reported
                    problem = f"{what} failed during '{recorder.step}': {exc!r}"
                    errors = [line for line in roster.output if "Error" in line]
                    if errors:
                        problem += f"; roster logged: {errors[-1].strip()}"
                    print(f"  PROBLEM: {problem}", flush=True)
                    recorder.problems.append(problem)

            CLIENTS[client](f"127.0.0.1:{proxy.port}", step, tolerate)
            time.sleep(0.5)  # let the last responses pass the proxy before roster stops
        except BaseException:
            print("roster output:\n  " + "\n  ".join(roster.output[-60:]), flush=True)
            raise
        finally:
            roster.stop()
            proxy.stop()
    return recorder


def substantial(pair: Pair) -> bool:
    """Whether a pair shows the interesting part of its API: a Metadata answer that describes a
    topic, a Fetch answer that carries records. The first such pair is preferred over an earlier
    bare one (a bootstrap Metadata for no topics, an empty long poll)."""
    if pair.response is None:
        return False
    if pair.api_key not in (METADATA, FETCH):
        return True
    _, body = decode_response(pair.api_key, pair.api_version, pair.response)
    if pair.api_key == METADATA:
        return bool(body.topics)
    return any(p.records for t in body.responses for p in t.partitions)


def save(recorder: Recorder, out_dir: Path) -> list[str]:
    """Write one fixture per served (api key, version): the first answered pair, or, when roster
    never answered that version, the first request alone (response_hex null, problems noted)."""
    registry = build_registry()
    version = client_version(recorder.client)
    target = out_dir / recorder.client
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)

    def served(pair: Pair) -> bool:
        spec = registry.get(pair.api_key)
        return spec is not None and spec.supports(pair.api_version) \
            and not spec.is_legacy(pair.api_version)

    chosen: dict[tuple[int, int], Pair] = {}
    answered: dict[tuple[int, int], int] = {}
    for pair in recorder.pairs:
        if served(pair):
            key = (pair.api_key, pair.api_version)
            answered[key] = answered.get(key, 0) + 1
            if key not in chosen or (not substantial(chosen[key]) and substantial(pair)):
                chosen[key] = pair
    unanswered: dict[tuple[int, int], int] = {}
    for pair in recorder.unanswered:
        if served(pair):
            key = (pair.api_key, pair.api_version)
            unanswered[key] = unanswered.get(key, 0) + 1
            chosen.setdefault(key, pair)
    lines = []
    for (key, ver), pair in sorted(chosen.items()):
        name = registry.get(key).name
        seen = f"{answered.get((key, ver), 0)} answered, {unanswered.get((key, ver), 0)} unanswered"
        if pair.response is not None:
            why = {METADATA: ("whose response describes a topic", "no response described a topic"),
                   FETCH: ("whose response carries records", "no response carried records")}
            if key not in why:
                which = "pair"
            else:
                which = f"pair {why[key][0]}" if substantial(pair) else f"pair ({why[key][1]})"
            note = (f"first {name} v{ver} {which} seen from {version} ({seen}), "
                    f"during '{pair.step}' (connection {pair.connection})")
        else:
            note = (f"roster never answered {name} v{ver} from {version} ({seen}): the "
                    f"connection closed first. Request from '{pair.step}' "
                    f"(connection {pair.connection}). Problems: {' | '.join(recorder.problems)}")
        doc = {
            "client": recorder.client,
            "client_version": version,
            "api_key": key,
            "api_name": name,
            "api_version": ver,
            "correlation_id": pair.correlation_id,
            "note": note,
            "request_hex": pair.request.hex(),
            "response_hex": None if pair.response is None else pair.response.hex(),
        }
        path = target / f"{snake(name)}_v{ver}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n")
        lines.append(f"{name} ({key}) v{ver}: {seen}"
                     + ("" if pair.response is not None else "  <- NO RESPONSE"))
    return lines


def main(argv: list[str]) -> int:
    clients = argv or list(CLIENTS)
    unknown = set(clients) - set(CLIENTS)
    if unknown:
        print(f"unknown client(s): {sorted(unknown)}; choose from {list(CLIENTS)}")
        return 2
    problems = 0
    for client in clients:
        print(f"capturing {client}", flush=True)
        recorder = capture(client)
        seen = sorted({(p.api_key, p.api_version) for p in recorder.pairs})
        print(f"  all (api key, version) pairs answered: {seen}")
        lost = sorted({(p.api_key, p.api_version) for p in recorder.unanswered})
        if lost:
            print(f"  (api key, version) with requests left unanswered: {lost}")
        for line in save(recorder, HERE):
            print(f"  saved {line}")
        for problem in recorder.problems:
            print(f"  PROBLEM: {problem}")
        problems += len(recorder.problems)
    if problems:
        print(f"{problems} client call(s) failed (see PROBLEM lines); fixtures were written anyway")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
