"""The live-broker campaign: mutated requests on many connections, then a health check.

After each batch the broker must still be running, answer ApiVersions and Metadata on a fresh
connection within 1 s, keep its RSS under baseline + a bound, and have logged no traceback or
"internal error" (docs/protocol.md: bad input gets a WARNING and a closed connection, or an
error answer). When a batch breaks one of these, each of its connections is replayed alone to
find the culprit, which is saved to the corpus as a regression case (hex) with a repro line.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import random
import re
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from fuzz.generate import Generator, World, advertised_versions
from fuzz.mutate import KNOWN_HEAVY, Mutator
from fuzz.schema import sized

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "fuzz" / "corpus"
LOG_PROBLEM = re.compile(r"Traceback|internal error")
HEALTH_TIMEOUT_S = 1.0  # a campaign's bar: later is a "slow" finding, printed, not failed
# a regression replay's bar: a broker that answers in this long has not hung on the case (a
# loaded machine may well take more than a second)
REPLAY_HEALTH_TIMEOUT_S = 10.0
RSS_BOUND_MIB = 200
# Connections with nothing more to say are closed after this long (long polls are short anyway:
# the generator keeps MaxWait and rebalance timeouts small).
READ_WINDOW_S = 0.3


@dataclass
class Case:
    """The bytes sent on one connection, and what they are meant to be."""
    data: bytes
    what: str
    api: str = "?"
    # how many answers a well-formed connection is owed: closing it with fewer is a finding
    expect_answers: int = 0


@dataclass
class Finding:
    kind: str             # died | traceback | unresponsive | slow | rss
    detail: str
    cases: list[Case]
    log: list[str] = field(default_factory=list)
    saved: Path | None = None


# -- the broker under test --------------------------------------------------------------------

class Target:
    """A roster broker child process (tests/support/process.py), with what a check needs."""

    def __init__(self, data_dir: Path, settings: dict[str, str] | None = None) -> None:
        from tests.support.process import BrokerProcess
        self.broker = BrokerProcess(data_dir, {"socket.request.max.bytes": str(1 << 20),
                                               **(settings or {})})
        self.log_seen = 0
        self.baseline_rss_kib = 0
        self.world = World()

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def start(self) -> Target:
        self.broker.start()
        self.log_seen = len(self.broker.output)
        self._populate()
        self.baseline_rss_kib = max(self.baseline_rss_kib, self.rss_kib())
        return self

    def restart(self) -> None:
        if self.broker.alive():
            try:
                self.broker.stop(timeout_s=10)
            except subprocess.TimeoutExpired:  # stop() has killed it: a stuck broker
                pass
        self.broker.start()
        self.log_seen = len(self.broker.output)
        self._populate()

    def stop(self) -> None:
        try:
            self.broker.stop(timeout_s=10)
        except subprocess.TimeoutExpired:
            pass

    def _populate(self) -> None:
        """Topics with records in them, so well-formed requests reach real logs."""
        from fuzz.schema import encode_request, header_value
        from roster.protocol.codec import decode_response, request_schema
        from tests.support.wire import Wire

        def call(wire, key, version, body):
            frame, _ = encode_request(request_schema(key, version),
                                      header_value(key, version, 7, "fuzz"), body)
            wire.send_raw(sized(frame))
            return decode_response(key, version, wire.read_frame())[1]

        with Wire(self.bootstrap) as wire:
            for name, parts in (("fuzzed", 2), ("fuzzed-2", 1)):
                call(wire, 19, 7, {"topics": [{"name": name, "num_partitions": parts,
                                               "replication_factor": 1, "assignments": [],
                                               "configs": []}],
                                   "timeout": 5000, "validate_only": False})
            meta = call(wire, 3, 12, {"topics": None, "allow_auto_topic_creation": False,
                                      "include_topic_authorized_operations": False})
            self.world.topics = {t.name: (t.topic_id, len(t.partitions)) for t in meta.topics
                                 if not t.name.startswith("__")}
            gen = Generator(random.Random(0), self.world)
            for name, (_, parts) in sorted(self.world.topics.items()):
                call(wire, 0, 9, {"transactional_id": None, "acks": 1, "timeout": 5000,
                                  "topic_data": [{"name": name, "partition_data": [
                                      {"index": i, "records": gen.record_batch()}
                                      for i in range(parts)]}]})

    def rss_kib(self) -> int:
        try:
            with open(f"/proc/{self.broker.proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def new_log_problems(self) -> list[str]:
        """Log lines since the last call, if any of them is a traceback or an internal error."""
        lines = self.broker.output[self.log_seen:]
        self.log_seen += len(lines)
        return lines if any(LOG_PROBLEM.search(line) for line in lines) else []

    def exited(self, wait_s: float = 0.0) -> int | None:
        try:
            return self.broker.proc.wait(wait_s) if wait_s else self.broker.proc.poll()
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired: still running
            return None

    def answers(self, timeout_s: float) -> str | None:
        """None when a fresh connection gets ApiVersions and Metadata answers in time."""
        from tests.support.wire import Wire
        started = time.monotonic()
        try:
            with Wire(self.bootstrap, timeout_s=timeout_s) as wire:
                wire.call(18, 3, client_software_name="fuzz", client_software_version="1")
                wire.call(3, 12, topics=None, allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
        except Exception as exc:  # noqa: BLE001 - any failure to answer is the finding
            return f"{type(exc).__name__}: {exc}"
        elapsed = time.monotonic() - started
        if elapsed > timeout_s:
            return f"answers took {elapsed:.2f} s"
        return None

    def check(self, rss_bound_mib: int = RSS_BOUND_MIB,
              health_timeout_s: float = HEALTH_TIMEOUT_S) -> tuple[str, str] | None:
        """(kind, detail) of the first broken promise, or None when all is well."""
        if (code := self.exited(0.05)) is not None:
            time.sleep(0.2)  # let the output pump drain
            return "died", f"broker exited with {code}{crash_summary(self.broker.output)}"
        problem = self.answers(health_timeout_s)
        if problem is not None:
            if (code := self.exited(1.0)) is not None:
                time.sleep(0.2)
                return "died", f"broker exited with {code}{crash_summary(self.broker.output)}"
            again_s = max(5.0, health_timeout_s)
            later = self.answers(again_s)
            return ("slow", f"no answer within {health_timeout_s:g} s ({problem}), "
                    "answered later") if later is None else \
                ("unresponsive", f"{problem}; again with {again_s:g} s: {later}")
        rss = self.rss_kib()
        if rss > self.baseline_rss_kib + rss_bound_mib * 1024:
            return "rss", (f"RSS {rss // 1024} MiB > baseline {self.baseline_rss_kib // 1024} "
                           f"MiB + {rss_bound_mib} MiB")
        time.sleep(0.05)  # a traceback is logged after the connection closes
        if lines := self.new_log_problems():
            return "traceback", "internal error logged: " + "; ".join(exception_lines(lines))
        return None


def exception_lines(lines: list[str]) -> list[str]:
    """The exception line ending each traceback in `lines` (or the error lines themselves)."""
    found, in_traceback = [], False
    for line in lines:
        if line.startswith("Traceback"):
            in_traceback = True
        elif in_traceback and line and not line[0].isspace():
            found.append(line.strip()[:200])
            in_traceback = False
    return found or [line.strip()[:200] for line in lines if LOG_PROBLEM.search(line)][:3]


def crash_summary(lines: list[str]) -> str:
    fatal = [line for line in lines[-300:] if "memory allocation" in line or "panicked" in line
             or "Fatal Python" in line or "Killed" in line]
    return f" ({fatal[-1].strip()[:200]})" if fatal else ""


# -- sending ----------------------------------------------------------------------------------

async def _one(host: str, port: int, data: bytes) -> tuple[str, int]:
    """(outcome, complete answers received): outcome is "answered" (answers, connection still
    open), "closed" (the broker closed it), "timeout" (silence) or "reset"/"connect failed"."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 2)
    except (OSError, asyncio.TimeoutError):
        return "connect failed", 0
    outcome, received = "timeout", bytearray()
    try:
        writer.write(data)
        await writer.drain()
        deadline = time.monotonic() + READ_WINDOW_S
        while (left := deadline - time.monotonic()) > 0:
            chunk = await asyncio.wait_for(reader.read(65536), left)
            if not chunk:
                outcome = "closed"
                break
            received += chunk
            outcome = "answered"
    except asyncio.TimeoutError:
        pass
    except OSError:
        outcome = "reset"
    finally:
        writer.close()
        try:
            await asyncio.wait_for(writer.wait_closed(), 1)
        except (OSError, asyncio.TimeoutError):
            pass
    return outcome, _count_frames(bytes(received))


def split_frames(data: bytes) -> list[bytes]:
    """`data` cut into its size-prefixed frames, or [data] when it is not exactly that."""
    frames, at = [], 0
    while at + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, at)
        if size < 0 or at + 4 + size > len(data):
            return [data]
        frames.append(data[at:at + 4 + size])
        at += 4 + size
    return frames if at == len(data) else [data]


def _count_frames(data: bytes) -> int:
    count = at = 0
    while at + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, at)
        if size < 0 or at + 4 + size > len(data):
            break
        at += 4 + size
        count += 1
    return count


def send_concurrently(bootstrap: str, payloads: list[bytes]) -> list[tuple[str, int]]:
    host, port = bootstrap.rsplit(":", 1)

    async def run():
        return await asyncio.gather(*(_one(host, int(port), p) for p in payloads))
    return asyncio.run(run())


# -- the campaign -----------------------------------------------------------------------------

class Campaign:
    def __init__(self, target: Target, seed: int, corpus_dir: Path | None = None,
                 rss_bound_mib: int = RSS_BOUND_MIB, connections: int = 32,
                 say=print, known: set | None = None, avoid: tuple[str, ...] = KNOWN_HEAVY,
                 apis: set[int] | None = None) -> None:
        self.target = target
        self.known = open_classes() if known is None else known  # not saved again
        self.seed = seed
        self.rng = random.Random(seed)
        self.corpus_dir = corpus_dir
        self.rss_bound_mib = rss_bound_mib
        self.connections = connections
        self.say = say
        self.versions = [v for v in advertised_versions() if apis is None or v[0] in apis]
        self.history: list[bytes] = []  # every connection's bytes, in the order sent
        self.advertised: dict[int, tuple[int, int]] = {}
        for key, _, v in self.versions:
            lo, hi = self.advertised.get(key, (v, v))
            self.advertised[key] = (min(lo, v), max(hi, v))
        self.names = {key: name for key, name, _ in self.versions}
        self.mutator = Mutator(self.rng, avoid)
        self.stats = {"frames": 0, "batches": 0, "answered": 0, "closed": 0, "other": 0}
        self.findings: list[Finding] = []
        self.classes: dict[tuple, int] = {}
        self.first_detail: dict[tuple, str] = {}

    def generator(self) -> Generator:
        return Generator(self.rng, self.target.world)

    def case(self) -> Case:
        rng = self.rng
        gen = self.generator()
        key, name, version = rng.choice(self.versions)
        r = rng.random()
        if r < 0.08:  # raw random bytes, sometimes behind a plausible size
            body = rng.randbytes(rng.randrange(1, 300))
            data = sized(body) if rng.random() < 0.5 else body
            return Case(data, "random bytes", "raw")
        frame, spans, schema = gen.request(key, version)
        # no answer is owed to an acks=0 Produce, nor to a body we could not build (a version
        # advertised without a kio schema gets an arbitrary body)
        acks_zero = gen.last_body.get("acks") == 0 or schema is None
        if r < 0.18:  # well-formed requests: what the handlers do with plausible values
            frames, labels = [frame], [f"{name} v{version}"]
            for _ in range(rng.randrange(2)):
                extra_key, extra_name, extra_version = rng.choice(self.versions)
                extra, _, extra_schema = gen.request(extra_key, extra_version)
                frames.append(extra)
                labels.append(f"{extra_name} v{extra_version}")
                acks_zero |= gen.last_body.get("acks") == 0 or extra_schema is None
            return Case(b"".join(map(sized, frames)), "valid: " + ", then ".join(labels),
                        " + ".join(labels), 0 if acks_zero else len(frames))
        mutated, what = self.mutator.mutate(frame, spans, self.advertised)
        expect_answer = self.mutator.well_formed and not acks_zero
        data = sized(mutated)
        if rng.random() < 0.04:
            expect_answer = False  # a size prefix that lies
            lie = rng.choice((len(mutated) + rng.randrange(1, 9), max(len(mutated) - 3, 0), -1,
                              0x7FFFFFFF))
            data = struct.pack(">i", lie) + mutated
            what += f" + size prefix {lie}"
        label = f"{name} v{version}"
        if len(mutated) >= 4:  # a header mutation may have changed what the frame claims to be
            claimed_key, claimed_version = struct.unpack_from(">hh", mutated)
            if (claimed_key, claimed_version) != (key, version):
                label = f"{self.names.get(claimed_key, claimed_key)} v{claimed_version}"
                what += f" (generated as {name} v{version})"
        if rng.random() < 0.1:  # a valid request in front on the same connection
            data = sized(gen.request(key, version)[0]) + data
            what = "valid, then " + what
            expect_answer = expect_answer and gen.last_body.get("acks") != 0
        owed = 2 if what.startswith("valid, ") else 1
        return Case(data, what, label, owed if expect_answer else 0)

    def run(self, seconds: float | None = None, max_batches: int | None = None) -> list[Finding]:
        deadline = time.monotonic() + seconds if seconds is not None else None
        self.say(f"fuzz: seed {self.seed}, {len(self.versions)} (api, version) pairs, "
                 f"broker {self.target.bootstrap}, baseline RSS "
                 f"{self.target.baseline_rss_kib // 1024} MiB")
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                break
            if max_batches is not None and self.stats["batches"] >= max_batches:
                break
            batch = [self.case() for _ in range(self.connections)]
            self.history += [c.data for c in batch]
            outcomes = send_concurrently(self.target.bootstrap, [c.data for c in batch])
            self.stats["batches"] += 1
            self.stats["frames"] += len(batch)
            for outcome, _ in outcomes:
                self.stats[outcome if outcome in ("answered", "closed") else "other"] += 1
            problem = self.target.check(self.rss_bound_mib)
            if problem is not None:
                self.isolate(batch, problem)
                continue
            for case, (outcome, answers) in zip(batch, outcomes):
                if case.expect_answers and outcome == "closed" and answers < case.expect_answers:
                    confirmed = replay_case(self.target, [case.data], self.rss_bound_mib,
                                            case.expect_answers)
                    if confirmed is not None:
                        self.record(Finding(confirmed[0], confirmed[1], [case],
                                            self.target.broker.output[-5:]))
                        self.recover(confirmed[0])
        self.say(f"fuzz: seed {self.seed}: {self.stats}, {len(self.findings)} finding(s) in "
                 f"{len(self.classes)} class(es)")
        for key, n in sorted(self.classes.items()):
            self.say(f"  {n:4d} x {key[0]} {key[1]}: {self.first_detail[key][:160]}")
        return self.findings

    def isolate(self, batch: list[Case], problem: tuple[str, str]) -> None:
        """Replay each connection of a failed batch alone to name the culprit."""
        kind, detail = problem
        self.say(f"fuzz: batch {self.stats['batches']} broke the broker: {kind}: {detail}")
        log = self.target.broker.output[-60:]
        self.recover(kind)
        culprits = []
        for case in batch:
            outcome = replay_case(self.target, [case.data], self.rss_bound_mib,
                                  case.expect_answers)
            if outcome is not None:
                self.recover(outcome[0])
                case, outcome = self.minimize(case, outcome)
                culprits.append(Finding(outcome[0], outcome[1], [case],
                                        self.target.broker.output[-60:]))
        if not culprits:  # only together (or not at all, if it was the machine being slow)
            culprits = [Finding(kind, detail + " (this batch only, not one connection alone)",
                                batch, log)]
        for finding in culprits:
            self.record(finding)

    def minimize(self, case: Case, outcome: tuple[str, str]) -> tuple[Case, tuple[str, str]]:
        """The one frame of a several-frame connection that does it alone, if there is one."""
        frames = split_frames(case.data)
        if len(frames) < 2:
            return case, outcome
        for frame in frames:
            alone = replay_case(self.target, [frame], self.rss_bound_mib,
                                1 if case.expect_answers else 0)
            if alone is not None and alone[0] == outcome[0]:
                self.recover(alone[0])
                key, version = struct.unpack_from(">hh", frame, 4) if len(frame) >= 8 \
                    else (-1, -1)
                return Case(frame, case.what + " (this frame of the connection alone)",
                            f"{self.names.get(key, key)} v{version}",
                            1 if case.expect_answers else 0), alone
        return case, outcome

    def recover(self, kind: str) -> None:
        if kind in ("died", "unresponsive", "rss"):
            self.target.restart()
        else:
            self.target.new_log_problems()

    def record(self, finding: Finding) -> None:
        """Keep the finding; save and print it unless the same class was seen already."""
        key = finding_class(finding)
        self.findings.append(finding)
        if key in self.classes:
            self.classes[key] += 1
            return
        self.classes[key] = 1
        self.first_detail[key] = finding.detail
        if self.corpus_dir is not None and key not in self.known and not known_open(finding):
            finding.saved = save_case(self.corpus_dir, finding, self.seed)
        self.say(describe(finding))


def finding_class(finding: Finding) -> tuple[str, str, str]:
    """(kind, API name, what was logged): findings of one class share it. Only a traceback's
    exception tells classes of one API apart; a death or a stall is one class per API."""
    api = finding.cases[0].api.rsplit(" v", 1)[0] if len(finding.cases) == 1 else "batch"
    detail = re.sub(r"\d+", "N", finding.detail) if finding.kind == "traceback" else ""
    return finding.kind, api, detail


def open_classes(directory: Path = CORPUS) -> set[tuple[str, str, str]]:
    """The classes of the corpus cases marked `# status: open` (known, not yet fixed)."""
    classes = set()
    for path in corpus_files(directory):
        payloads, meta = load_case(path)
        if meta.get("status", "").startswith("open"):
            kind, _, detail = meta.get("finding", "").partition(": ")
            classes.add(finding_class(Finding(kind, detail, [Case(b"", "", meta.get("api", ""))])))
    return classes


KNOWN_OPEN = Path(__file__).resolve().parent / "known-open.txt"


def known_open(finding: Finding, path: Path = KNOWN_OPEN) -> bool:
    """Does `finding` match a pattern of fuzz/known-open.txt (open, not reproducible alone)?"""
    if not path.exists():
        return False
    text = f"{finding.kind}: {finding.detail}"
    return any(re.search(line, text) for line in path.read_text().splitlines()
               if line.strip() and not line.startswith("#"))


def replay_case(target: Target, payloads: list[bytes], rss_bound_mib: int = RSS_BOUND_MIB,
                expect_answers: int = 0,
                health_timeout_s: float = HEALTH_TIMEOUT_S) -> tuple[str, str] | None:
    """Send each payload on its own connection (in turn), then check the broker. With
    expect_answers, the (last) connection must not be closed before that many answers."""
    target.new_log_problems()
    outcome, answers = "timeout", 0
    for payload in payloads:
        outcome, answers = send_concurrently(target.bootstrap, [payload])[0]
    problem = target.check(rss_bound_mib, health_timeout_s)
    if problem is None and expect_answers and outcome == "closed" and answers < expect_answers:
        return "closed", (f"a well-formed request was not answered: the broker closed the "
                          f"connection after {answers} of {expect_answers} answers")
    return problem


# -- the corpus ---------------------------------------------------------------------------------

def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "case"


def save_case(directory: Path, finding: Finding, seed: int | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    blob = b"".join(c.data for c in finding.cases)
    digest = hashlib.sha1(blob).hexdigest()[:10]
    path = directory / f"{finding.kind}-{_slug(finding.cases[0].api)}-{digest}.hex"
    lines = ["# roster fuzz regression case: each hex line is the bytes sent on one connection",
             f"# api: {', '.join(sorted({c.api for c in finding.cases}))}",
             f"# finding: {finding.kind}: {finding.detail}",
             *(f"# mutation: {c.what}" for c in finding.cases[:8])]
    if finding.kind == "closed":
        lines.append(f"# expect answers: {finding.cases[-1].expect_answers}")
    if seed is not None:
        lines.append(f"# found by: python -m fuzz live --seed {seed}")
    lines += [c.data.hex() for c in finding.cases]
    path.write_text("\n".join(lines) + "\n")
    return path


def load_case(path: Path) -> tuple[list[bytes], dict[str, str]]:
    payloads, meta = [], {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            meta.setdefault(key.strip(), value.strip())
        elif line:
            payloads.append(bytes.fromhex(line))
    return payloads, meta


def corpus_files(directory: Path = CORPUS) -> list[Path]:
    return sorted(directory.glob("**/*.hex"))


def describe(finding: Finding) -> str:
    tail = [line for line in finding.log if line.strip()][-25:]
    saved = f"\n  saved: {finding.saved}\n  repro: python -m fuzz replay {finding.saved}" \
        if finding.saved else ""
    frames = "\n".join(f"  {c.api}: {c.what}\n    {c.data.hex()}" for c in finding.cases[:4])
    log = "\n".join("    | " + line for line in tail) if finding.kind != "slow" else ""
    return f"FINDING {finding.kind}: {finding.detail}\n{frames}{saved}\n{log}"


def time_seed() -> int:
    return int(os.environ.get("FUZZ_SEED") or time.time_ns() % 2**32)
