#!/usr/bin/env python3
"""What TLS and SASL cost roster, as ratios measured in the same run against PLAINTEXT.

One broker (a subprocess pinned to CPU 0; the load runs on CPU 1) with four listeners:
PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL (SCRAM-SHA-256 and PLAIN users made before it
starts, certificates from trustme). Each round measures, alternating the listeners so drift
hits them alike:

  1. produce throughput, acks=1, 1 KiB records in ~64 KiB batches to one partition, from a
     pipelined raw-socket producer (bench/pipelined_producer.py's request, 16 in flight) over
     PLAINTEXT, SSL and SASL_SSL: MB/s, and SSL / PLAINTEXT (goal >= 0.7);
  2. the same with confluent-kafka (librdkafka, C) producing --records records: client and
     broker together;
  3. heartbeats/s: --members static members, each on its own connection (authenticated with
     SCRAM-SHA-256 on SASL_SSL) and in its own group, each keeping --window heartbeats in
     flight (bench/loadgen.py's frames) for --seconds: SASL_SSL / PLAINTEXT (goal >= 0.8);
  the floor: the same pipelined load against a uvloop server that only counts bytes (no
     broker), plain and TLS, so what TLS costs roster per MB can be set against what it costs
     any Python server on this machine ("TLS cost per MB: roster / bare uvloop sink");
  4. SCRAM-SHA-256 authentications/s: --auth-connections connections at a time, each connect,
     SaslHandshake, two SaslAuthenticate round trips and close, on SASL_PLAINTEXT (SCRAM alone)
     and on SASL_SSL (with a TLS handshake per connection). The load generator caches the
     salted password (the client's PBKDF2), so the broker's side is what is measured.

    .venv/bin/python bench/security.py                  # 3 rounds, Markdown on stdout
    .venv/bin/python bench/security.py --rounds 5 --json

Progress goes to stderr; the broker's data and certificates live in a temporary directory that
is removed at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "src"))

from loadgen import (  # noqa: E402
    Blaster,
    Conn,
    _b,
    _s,
    error_of,
    frame,
    heartbeat_frame,
    join_frame,
    parse_join,
    subscription,
    sync_frame,
)
from pipelined_producer import (  # noqa: E402
    CORRELATION_AT,
    _error_and_base_at,
    build_batch,
    produce_frame,
)

from roster.security.users import add_offline  # noqa: E402

TOPIC = "bench-security"
PASSWORD = "bench-secret"
USER = "bench"
I32 = struct.Struct(">i")
LISTENER = re.compile(r"roster listener (\S+) \((\S+)\) on (\S+):(\d+)")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the broker ---------------------------------------------------------------------------------

class Broker:
    def __init__(self, root: Path) -> None:
        import trustme
        self.root = root
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(root / "ca.pem"))
        ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
            str(root / "server.pem"))
        self.ca = root / "ca.pem"
        add_offline(root / "data", USER, "SCRAM-SHA-256", PASSWORD)
        settings = {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
                         "SASL_SSL://127.0.0.1:0",
            "ssl.keystore.location": str(root / "server.pem"),
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN",
            "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1",
            "auto.create.topics.enable": "true", "log.flush.interval.ms": "1000",
        }
        command = [sys.executable, "-m", "roster", "--log-level", "WARNING", "serve",
                   "--data-dir", str(root / "data"), "--port", "0"]
        for key, value in settings.items():
            command += ["--set", f"{key}={value}"]

        def pin():
            if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
                os.sched_setaffinity(0, {0})

        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, preexec_fn=pin,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.listeners: dict[str, tuple[str, int]] = {}
        deadline = time.monotonic() + 60
        for line in self.proc.stdout:
            match = LISTENER.match(line)
            if match:
                self.listeners[match.group(1)] = (match.group(3), int(match.group(4)))
            if line.startswith("roster listening on"):
                break
            if time.monotonic() > deadline:
                break
        if len(self.listeners) != 4:
            self.stop()
            raise RuntimeError("the broker did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def cpu_seconds(self) -> float:
        """User and system CPU time the broker has used (Linux /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))


# -- SASL from the load generator's side ----------------------------------------------------------

class ScramProof:
    """SCRAM-SHA-256 client messages with the salted password cached after the first exchange:
    the client's PBKDF2 would otherwise cost more than the broker's whole exchange."""

    def __init__(self) -> None:
        self._salted: dict[tuple[bytes, int], bytes] = {}

    def first(self) -> tuple[str, bytes]:
        nonce = base64.b64encode(os.urandom(18)).decode()
        bare = f"n={USER},r={nonce}"
        return bare, ("n,," + bare).encode()

    def final(self, bare: str, server_first: bytes) -> bytes:
        text = server_first.decode()
        fields = dict(item.split("=", 1) for item in text.split(","))
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = self._salted.get((salt, iterations))
        if salted is None:
            salted = self._salted[(salt, iterations)] = hashlib.pbkdf2_hmac(
                "sha256", PASSWORD.encode(), salt, iterations)
        without_proof = f"c=biws,r={fields['r']}"
        auth_message = f"{bare},{text},{without_proof}".encode()
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        stored_key = hashlib.sha256(client_key).digest()
        signature = hmac.new(stored_key, auth_message, "sha256").digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def _sasl_answer(response: bytes) -> bytes:
    """SaslAuthenticate v1 response (size removed): correlation, error, message, auth bytes."""
    error = struct.unpack_from(">h", response, 4)[0]
    if error:
        raise RuntimeError(f"SaslAuthenticate failed with error {error}")
    pos = 6
    size = struct.unpack_from(">h", response, pos)[0]
    pos += 2 + max(size, 0)
    length = struct.unpack_from(">i", response, pos)[0]
    return response[pos + 4:pos + 4 + length]


async def authenticate(conn: Conn, scram: ScramProof) -> None:
    answer = await conn.request(frame(17, 1, "bench", _s("SCRAM-SHA-256")))
    if struct.unpack_from(">h", answer, 4)[0]:
        raise RuntimeError("SaslHandshake refused")
    bare, first = scram.first()
    server_first = _sasl_answer(await conn.request(frame(36, 1, "bench", _b(first))))
    _sasl_answer(await conn.request(frame(36, 1, "bench", _b(scram.final(bare, server_first)))))


# -- 1. produce -------------------------------------------------------------------------------

def _blocking_sasl(sock, scram: ScramProof) -> None:
    def call(request: bytes) -> bytes:
        sock.sendall(request)
        size = I32.unpack(_recv(sock, 4))[0]
        return _recv(sock, size)
    assert not struct.unpack_from(">h", call(bytes(frame(17, 1, "b", _s("SCRAM-SHA-256")))), 4)[0]
    bare, first = scram.first()
    server_first = _sasl_answer(call(bytes(frame(36, 1, "b", _b(first)))))
    _sasl_answer(call(bytes(frame(36, 1, "b", _b(scram.final(bare, server_first))))))


def _recv(sock, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return bytes(data)


def produce_pipelined(broker: Broker, listener: str, seconds: float, depth: int = 16) -> float:
    """MB/s of record values, acks=1, `depth` requests in flight for `seconds`."""
    host, port = broker.listeners[listener]
    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if listener in ("SSL", "SASL_SSL"):
        sock = broker.client_context().wrap_socket(sock, server_hostname=host)
    if listener.startswith("SASL"):
        _blocking_sasl(sock, ScramProof())
    value = b"v" * 1024
    batch, per_batch = build_batch(value, 64 * 1024, int(time.time() * 1000))
    version = 9
    request = bytearray(produce_frame(version, TOPIC, 0, 1, batch))
    error_at = _error_and_base_at(version, TOPIC)
    buffer = bytearray()
    sent = acked = 0
    start = time.perf_counter()
    stop = start + seconds
    try:
        while True:
            now = time.perf_counter()
            while sent - acked < depth and now < stop:
                I32.pack_into(request, CORRELATION_AT, sent)
                sock.sendall(request)
                sent += 1
            if acked == sent:
                break
            while True:
                if len(buffer) >= 4:
                    end = 4 + I32.unpack_from(buffer, 0)[0]
                    if len(buffer) >= end:
                        if struct.unpack_from(">h", buffer, error_at)[0]:
                            raise RuntimeError("produce failed")
                        del buffer[:end]
                        acked += 1
                        break
                chunk = sock.recv(1 << 18)
                if not chunk:
                    raise ConnectionError("closed by the broker")
                buffer += chunk
        elapsed = time.perf_counter() - start
    finally:
        sock.close()
    return acked * per_batch * len(value) / elapsed / 1e6


def produce_confluent(broker: Broker, listener: str, records: int) -> float:
    from confluent_kafka import Producer
    host, port = broker.listeners[listener]
    config = {"bootstrap.servers": f"{host}:{port}", "security.protocol": listener,
              "acks": 1, "linger.ms": 5, "batch.size": 65536, "enable.idempotence": False,
              "queue.buffering.max.messages": 1_000_000}
    if listener in ("SSL", "SASL_SSL"):
        config["ssl.ca.location"] = str(broker.ca)
    if listener.startswith("SASL"):
        config.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER,
                       "sasl.password": PASSWORD})
    producer = Producer(config)
    value = b"v" * 1024
    producer.produce(TOPIC, value)
    producer.flush(30)  # connected, authenticated, metadata known
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(TOPIC, value)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120):
        raise RuntimeError("confluent-kafka did not deliver everything")
    return records * len(value) / (time.perf_counter() - start) / 1e6


# -- the floor: uvloop's TLS alone ----------------------------------------------------------------

class _Sink(asyncio.BufferedProtocol):
    """Takes 64 KiB requests and answers each with 60 bytes, doing nothing else."""

    def __init__(self) -> None:
        self.buffer = bytearray(256 * 1024)
        self.pending = 0
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int):
        return memoryview(self.buffer)

    def buffer_updated(self, nbytes: int) -> None:
        self.pending += nbytes
        answers, self.pending = divmod(self.pending, 65536)
        if answers:
            self.transport.write(b"x" * (60 * answers))


def _sink_server(certificate: str, use_tls: bool, port, ready) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    context = None
    if use_tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate)

    async def serve():
        server = await asyncio.get_running_loop().create_server(_Sink, "127.0.0.1", 0,
                                                                ssl=context)
        port.value = server.sockets[0].getsockname()[1]
        ready.set()
        await asyncio.sleep(3600)

    run(serve())


def tls_floor(broker: Broker, use_tls: bool, seconds: float, depth: int = 16) -> tuple:
    """(MB/s, server CPUs) of the same pipelined 64 KiB load against a uvloop server that only
    counts bytes: what receiving over TLS costs before any broker work."""
    import multiprocessing
    ready, port = multiprocessing.Event(), multiprocessing.Value("i", 0)
    process = multiprocessing.Process(target=_sink_server, daemon=True, args=(
        str(broker.root / "server.pem"), use_tls, port, ready))
    process.start()
    try:
        ready.wait(30)
        sock = socket.create_connection(("127.0.0.1", port.value), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if use_tls:
            sock = broker.client_context().wrap_socket(sock, server_hostname="127.0.0.1")
        payload = b"v" * 65536
        stat = Path(f"/proc/{process.pid}/stat")

        def cpu() -> float:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        sent = received = 0
        start_cpu, start = cpu(), time.perf_counter()
        stop = start + seconds
        while True:
            while sent - received // 60 < depth and time.perf_counter() < stop:
                sock.sendall(payload)
                sent += 1
            if received // 60 >= sent:
                break
            received += len(sock.recv(1 << 16))
        elapsed = time.perf_counter() - start
        used = cpu() - start_cpu
        sock.close()
        return sent * 65536 / 1e6 / elapsed, used / elapsed
    finally:
        process.terminate()
        process.join(5)


# -- 3. heartbeats ----------------------------------------------------------------------------

async def heartbeats(broker: Broker, listener: str, members: int, window: int,
                     seconds: float, tag: str) -> float:
    loop = asyncio.get_running_loop()
    host, port = broker.listeners[listener]
    context = broker.client_context() if listener in ("SSL", "SASL_SSL") else None
    scram = ScramProof()
    blasters = []
    for i in range(members):
        transport, conn = await loop.create_connection(
            Conn, host, port, ssl=context, server_hostname=host if context else None)
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if listener.startswith("SASL"):
            await authenticate(conn, scram)
        group, instance = f"hb-{tag}-{i}", f"hb-{tag}-{i}"
        joined = parse_join(await conn.request(join_frame(
            "bench", group, 30000, 30000, "", instance, subscription(0))))
        if joined.error:
            raise RuntimeError(f"JoinGroup failed with error {joined.error}")
        synced = await conn.request(sync_frame("bench", group, joined.generation,
                                               joined.member_id, instance, []))
        if error_of(synced):
            raise RuntimeError(f"SyncGroup failed with error {error_of(synced)}")
        blaster = Blaster()
        transport.set_protocol(blaster)
        blaster.connection_made(transport)
        frames = [bytes(heartbeat_frame("bench", group, joined.generation, joined.member_id,
                                        instance)) for _ in range(window)]
        for index, item in enumerate(frames):
            frames[index] = item[:CORRELATION_AT] + I32.pack(index) + item[CORRELATION_AT + 4:]
        blasters.append((blaster, frames))
    for blaster, frames in blasters:
        blaster.start(frames, window)
    await asyncio.sleep(0.5)  # warm up
    first = sum(b.answered for b, _ in blasters)
    start = time.perf_counter()
    await asyncio.sleep(seconds)
    answered = sum(b.answered for b, _ in blasters) - first
    elapsed = time.perf_counter() - start
    await asyncio.gather(*(b.stop() for b, _ in blasters), return_exceptions=True)
    errors = sum(sum(b.errors.values()) for b, _ in blasters)
    for blaster, _ in blasters:
        blaster.close()
    if errors:
        raise RuntimeError(f"{errors} heartbeats answered with an error")
    return answered / elapsed


# -- 4. SCRAM authentications -------------------------------------------------------------------

async def authentications(broker: Broker, listener: str, concurrency: int,
                          seconds: float) -> float:
    loop = asyncio.get_running_loop()
    host, port = broker.listeners[listener]
    context = broker.client_context() if listener == "SASL_SSL" else None
    scram = ScramProof()
    done = 0
    stop = time.perf_counter() + seconds

    async def worker():
        nonlocal done
        while time.perf_counter() < stop:
            transport, conn = await loop.create_connection(
                Conn, host, port, ssl=context, server_hostname=host if context else None)
            await authenticate(conn, scram)
            transport.close()
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - start)


# -- main -------------------------------------------------------------------------------------

def run(coroutine):
    """The load generator's own event loop: uvloop when installed (its TLS is compiled)."""
    try:
        import uvloop
        return uvloop.run(coroutine)
    except ImportError:
        return asyncio.run(coroutine)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--records", type=int, default=100_000, help="confluent-kafka rows")
    parser.add_argument("--members", type=int, default=32)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--auth-connections", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    root = Path(tempfile.mkdtemp(prefix="roster-bench-security-"))
    results: dict[str, list[float]] = {}

    def record(name: str, measure) -> None:
        """Run `measure`; keep its rate, and the broker's CPU use while it ran (a load
        generator that cannot keep the broker busy shows as < 1 CPU)."""
        cpu, wall = broker.cpu_seconds(), time.perf_counter()
        value = measure()
        busy = (broker.cpu_seconds() - cpu) / (time.perf_counter() - wall)
        results.setdefault(name, []).append(value)
        results.setdefault(f"{name} (broker CPUs)", []).append(busy)
        log(f"  {name}: {value:,.1f} (broker {busy:.2f} CPU)")

    try:
        broker = Broker(root)
        try:
            produce_pipelined(broker, "PLAINTEXT", 0.5)  # creates the topic, warms up
            for round_no in range(args.rounds):
                log(f"round {round_no + 1}/{args.rounds}")
                order = ["PLAINTEXT", "SSL", "SASL_SSL"]
                if round_no % 2:
                    order.reverse()
                for listener in order:
                    record(f"produce pipelined {listener} MB/s",
                           lambda: produce_pipelined(broker, listener, args.seconds))
                for use_tls in ([False, True] if round_no % 2 == 0 else [True, False]):
                    name = f"floor: uvloop sink {'TLS' if use_tls else 'plain'} MB/s"
                    rate, cpus = tls_floor(broker, use_tls, args.seconds)
                    results.setdefault(name, []).append(rate)
                    results.setdefault(f"{name} (broker CPUs)", []).append(cpus)
                    log(f"  {name}: {rate:,.1f} (sink {cpus:.2f} CPU)")
                for listener in (["PLAINTEXT", "SSL"] if round_no % 2 == 0
                                 else ["SSL", "PLAINTEXT"]):
                    record(f"produce confluent-kafka {listener} MB/s",
                           lambda: produce_confluent(broker, listener, args.records))
                for listener in (["PLAINTEXT", "SASL_SSL"] if round_no % 2 == 0
                                 else ["SASL_SSL", "PLAINTEXT"]):
                    record(f"heartbeats {listener} /s", lambda: run(heartbeats(
                        broker, listener, args.members, args.window, args.seconds,
                        f"{round_no}{listener}")))
                for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
                    record(f"SCRAM-SHA-256 authentications {listener} /s", lambda: run(
                        authentications(broker, listener, args.auth_connections,
                                        args.seconds)))
        finally:
            broker.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    median = {name: statistics.median(values) for name, values in results.items()}
    ratios = {
        "produce SSL / PLAINTEXT (pipelined)": [s / p for s, p in zip(
            results["produce pipelined SSL MB/s"], results["produce pipelined PLAINTEXT MB/s"])],
        "produce SASL_SSL / PLAINTEXT (pipelined)": [s / p for s, p in zip(
            results["produce pipelined SASL_SSL MB/s"],
            results["produce pipelined PLAINTEXT MB/s"])],
        "produce SSL / PLAINTEXT (confluent-kafka)": [s / p for s, p in zip(
            results["produce confluent-kafka SSL MB/s"],
            results["produce confluent-kafka PLAINTEXT MB/s"])],
        "heartbeats SASL_SSL / PLAINTEXT": [s / p for s, p in zip(
            results["heartbeats SASL_SSL /s"], results["heartbeats PLAINTEXT /s"])],
    }
    def per_cpu(name: str) -> list[float]:
        return [value / max(cpu, 1e-9) for value, cpu in zip(results[name],
                                                             results[f"{name} (broker CPUs)"])]

    # what the broker spends per unit of work: independent of how fast the load generator is
    ratios.update({
        "produce SSL / PLAINTEXT per broker CPU-second (pipelined)": [s / p for s, p in zip(
            per_cpu("produce pipelined SSL MB/s"), per_cpu("produce pipelined PLAINTEXT MB/s"))],
        "heartbeats SASL_SSL / PLAINTEXT per broker CPU-second": [s / p for s, p in zip(
            per_cpu("heartbeats SASL_SSL /s"), per_cpu("heartbeats PLAINTEXT /s"))],
    })
    # CPU-seconds per MB that TLS adds: to roster's produce path, and to a sink doing nothing
    def tls_cost(tls_name: str, plain_name: str) -> list[float]:
        return [1 / t - 1 / p for t, p in zip(per_cpu(tls_name), per_cpu(plain_name))]

    roster_cost = tls_cost("produce pipelined SSL MB/s", "produce pipelined PLAINTEXT MB/s")
    floor_cost = tls_cost("floor: uvloop sink TLS MB/s", "floor: uvloop sink plain MB/s")
    ratios["TLS cost per MB: roster / bare uvloop sink"] = [
        r / f if f > 0 else float("nan") for r, f in zip(roster_cost, floor_cost)]
    if args.json:
        print(json.dumps({"results": results, "median": median,
                          "ratios": {k: statistics.median(v) for k, v in ratios.items()},
                          "ratios_per_round": ratios}, indent=1))
        return 0
    print(f"{args.rounds} rounds of {args.seconds:g} s; median (min-max)\n")
    print("| measurement | value |\n|---|---:|")
    for name, values in results.items():
        digits = 2 if name.endswith("(broker CPUs)") else 1
        print(f"| {name} | {median[name]:,.{digits}f} ({min(values):,.{digits}f}-"
              f"{max(values):,.{digits}f}) |")
    print("\n| ratio | median | per round |\n|---|---:|---|")
    for name, values in ratios.items():
        print(f"| {name} | {statistics.median(values):.2f} | "
              f"{', '.join(f'{v:.2f}' for v in values)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
