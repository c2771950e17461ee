"""The Java programs of tests/java/ (KafkaConsumer members, Admin calls, a Kafka Streams app),
built once and run as child processes that print one JSON event a line.

- `build()` runs `mvn -q -B package` in tests/java/ when its sources or the JDK changed since the
  last build (a stamp holds their checksum, so a second run compiles nothing; a file lock keeps
  two pytest workers from building at once).
  Maven resolves kafka-clients and kafka-streams 4.4.0 from Maven Central into ~/.m2 the first
  time; nothing is vendored and target/ is ignored by git.
- `JavaProgram(main_class, *args)` starts `java -cp target/java-judges-1.jar:target/lib/* MAIN
  ARGS` (from a class archive after its main class's first run, tests/support/class_archive.py); its
  events (dicts) are collected by a reader thread; `wait_for(predicate)` waits on them with a
  deadline (never a sleep), `send(line)` writes a command to its stdin, `kill9()` ends it for real.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.class_archive import ClassArchive

ROOT = Path(__file__).resolve().parents[2]
JAVA_DIR = ROOT / "tests" / "java"
TARGET = JAVA_DIR / "target"
STAMP = TARGET / ".built"
JAVA = shutil.which("java") or "java"
DEADLINE_S = 60.0


@functools.cache
def _toolchain() -> bytes:
    """Which Java compiles them: a new JDK rebuilds (its class files may not run on an older
    one)."""
    try:
        done = subprocess.run([JAVA, "-version"], capture_output=True, text=True, timeout=60)
        return (done.stdout + done.stderr).encode()
    except (OSError, subprocess.TimeoutExpired):
        return b"no java"


def _sources_checksum() -> str:
    digest = hashlib.sha256(_toolchain())
    for path in sorted([JAVA_DIR / "pom.xml", *(JAVA_DIR / "src").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(JAVA_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def build() -> None:
    """Compile tests/java/ and copy its runtime jars to target/lib, unless already done."""
    TARGET.mkdir(exist_ok=True)
    with open(TARGET / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        checksum = _sources_checksum()
        if STAMP.exists() and STAMP.read_text() == checksum:
            return
        if shutil.which("mvn") is None:
            raise RuntimeError("Maven (mvn) is not installed: scripts/ensure-kafka.sh installs it "
                               "(make test runs it); the Java judges need it")
        shutil.rmtree(TARGET / "lib", ignore_errors=True)   # no stale jar on the class path
        done = subprocess.run(["mvn", "-q", "-B", "package"], cwd=JAVA_DIR,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError("building tests/java failed:\n" + done.stdout[-4000:]
                               + done.stderr[-4000:])
        STAMP.write_text(checksum)


def classpath() -> str:
    # the packaged jar, not target/classes: a class archive holds classes from jars only
    return f"{TARGET / 'java-judges-1.jar'}:{TARGET / 'lib'}/*"


class JavaProgram:
    """One JVM running a main class of tests/java; its JSON-line events in `.events`."""

    def __init__(self, main_class: str, *args: str, heap: str = "256m") -> None:
        # each main class starts from an archive of the classes its first run loaded
        self._sharing = ClassArchive(f"java-judges-{main_class}", JAVA).launch(classpath())
        self.command = [JAVA, f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                        *self._sharing.options, "-cp", classpath(), main_class, *args]
        self.events: list[dict] = []
        self.stderr: list[str] = []
        self.cond = threading.Condition()
        self.proc: subprocess.Popen | None = None

    def start(self) -> JavaProgram:
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self._sharing.watch(self.proc)
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        return self

    def _read_events(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "stdout", "line": line.rstrip("\n")}
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))
            del self.stderr[:-400]

    def send(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def select(self, kind: str | None = None, **fields) -> list[dict]:
        with self.cond:
            return [e for e in self.events if (kind is None or e.get("event") == kind)
                    and all(e.get(k) == v for k, v in fields.items())]

    def mark(self) -> int:
        """The number of events so far: `since(mark)` gives what happened after it."""
        with self.cond:
            return len(self.events)

    def since(self, mark: int, kind: str | None = None, **fields) -> list[dict]:
        with self.cond:
            return [e for e in self.events[mark:] if (kind is None or e.get("event") == kind)
                    and all(e.get(k) == v for k, v in fields.items())]

    def wait_for(self, predicate: Callable[[], object], what: str | Callable[[], str],
                 timeout_s: float = DEADLINE_S) -> object:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.alive() and not value:
                    state = "exited" if not self.alive() else f"timed out after {timeout_s}s"
                    raise AssertionError(
                        f"{state} waiting for: {what() if callable(what) else what}\n"
                        f"last events: {self.events[-15:]}\nstderr: " + "\n".join(self.stderr[-30:]))
                self.cond.wait(min(remaining, 0.5))

    def quiet(self, predicate_broken: Callable[[], object], window_s: float) -> object:
        """What makes predicate_broken() truthy within `window_s`, or None: for asserting that
        something does NOT happen (e.g. a rebalance callback)."""
        deadline = time.monotonic() + window_s
        with self.cond:
            while time.monotonic() < deadline:
                value = predicate_broken()
                if value:
                    return value
                self.cond.wait(max(0.0, min(deadline - time.monotonic(), 0.5)))
            return predicate_broken() or None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask it to quit (it closes its clients); kill it if it does not in time."""
        if not self.alive():
            return
        try:
            self.send("quit")
            self.proc.wait(timeout_s)
        except (OSError, subprocess.TimeoutExpired):
            self.kill9()
