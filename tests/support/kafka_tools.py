"""Kafka's command-line tools (the main classes behind bin/kafka-*.sh) for tests that compare
what they print and how they exit: `kafka_tool(main_class, *args, stdin=None)` returns a
`subprocess.CompletedProcess` exactly as `subprocess.run(java_command(main_class, *args),
capture_output=True, text=True)` would.

A JVM start costs about a second of CPU on a loaded two-core machine, and the suite calls the
tools ~80 times, so each pytest worker keeps one warm JVM (tests/java/tool-runner/
ToolRunner.java, compiled here with javac into .cache/tool-runner/<checksum of its source and
the JDK>/, so a second run compiles nothing) that runs the tool's main in-process per call:
Kafka's Exit is routed to end the call instead of the JVM, System.out/err are captured per call,
and the exit code is the one the process would have had.

Tools that keep static state between runs get a JVM of their own per call (FRESH_JVM):
ConsoleConsumer counts its messages in a static field and its shutdown latch is static, so a
second run in one JVM would print the first run's total. AclCommand prints sets of enum-keyed
entries (its operations, an ACL's entries) in identity-hash order, which a fresh JVM makes the
same every run and a warm one does not. Long-running programs
(TransactionalMessageCopier, the broker, the storage tool) are not run through here.
ROSTER_KAFKA_TOOLS_FORK=1 gives every call its own JVM (to check the runner against it).
"""
from __future__ import annotations

import atexit
import base64
import fcntl
import hashlib
import locale
import os
import shutil
import subprocess
import threading
from pathlib import Path

from tests.support.kafka_peer import JAVA, ROOT, java_command, kafka_classpath

SOURCE = ROOT / "tests" / "java" / "tool-runner" / "ToolRunner.java"
CACHE = ROOT / ".cache" / "tool-runner"
FRESH_JVM = {"org.apache.kafka.tools.consumer.ConsoleConsumer", "org.apache.kafka.tools.AclCommand"}
RUNNER_HEAP = "512m"   # java_command gives a tool 256m; a few leftover clients fit beside it


def _compiled() -> Path:
    """The runner's class directory, compiled once per source and JDK."""
    javac = shutil.which("javac") or str(Path(JAVA).with_name("javac"))
    version = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    digest = hashlib.sha256(SOURCE.read_bytes() + (version.stdout + version.stderr).encode())
    out = CACHE / digest.hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # two workers compile it once
        if not (out / "ToolRunner.class").exists():
            work = CACHE / f"build-{os.getpid()}"
            shutil.rmtree(work, ignore_errors=True)
            done = subprocess.run([javac, "-nowarn", "-d", str(work), "-cp", kafka_classpath(),
                                   str(SOURCE)], capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise RuntimeError(f"compiling {SOURCE} failed:\n{done.stdout}{done.stderr}")
            shutil.rmtree(out, ignore_errors=True)
            work.rename(out)
    return out


def _text(data: bytes) -> str:
    # what subprocess.run(text=True) makes of a child's output: the locale's encoding and
    # universal newlines
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


class _Runner:
    """The worker's warm JVM; one call at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.stderr: list[str] = []

    def _start(self) -> subprocess.Popen:
        classes = _compiled()
        command = java_command("ToolRunner", heap=RUNNER_HEAP)
        command[command.index("-cp") + 1] = f"{classes}:{kafka_classpath()}"
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        self.stderr = []
        threading.Thread(target=self._drain, args=(proc,), daemon=True).start()
        if proc.stdout.readline() != b"READY\n":
            proc.kill()
            raise RuntimeError("the Kafka tool runner did not start:\n" + "".join(self.stderr))
        return proc

    def _drain(self, proc: subprocess.Popen) -> None:
        for line in proc.stderr:   # what no call owns (it should stay empty)
            self.stderr.append(line.decode(errors="replace"))
            del self.stderr[:-100]

    def call(self, main_class: str, args: tuple[str, ...], stdin: str | None,
             timeout_s: float) -> tuple[int, str, str]:
        # the tool reads its stdin in the locale's encoding, as subprocess.run(text=True) writes it
        fields = [(stdin or "").encode(locale.getpreferredencoding(False)), main_class.encode(),
                  *(a.encode() for a in args)]
        request = b"\t".join(base64.b64encode(f) for f in fields) + b"\n"
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = self._start()
            proc = self.proc
            timer = threading.Timer(timeout_s, proc.kill)   # a hung tool: as subprocess.run
            timer.start()
            try:
                proc.stdin.write(request)
                proc.stdin.flush()
                answer = proc.stdout.readline()
            except OSError:
                answer = b""
            finally:
                timer.cancel()
            if not answer.startswith(b"EXIT "):
                self.proc = None
                proc.kill()
                proc.wait()
                if timer.finished.is_set() and proc.returncode == -9:
                    raise subprocess.TimeoutExpired([main_class, *args], timeout_s)
                raise RuntimeError(f"the Kafka tool runner died running {main_class} {args}:\n"
                                   + "".join(self.stderr))
        _, code, out, err = answer.split(b" ")
        return int(code), _text(base64.b64decode(out)), _text(base64.b64decode(err))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_RUNNER = _Runner()
atexit.register(_RUNNER.stop)


def kafka_tool(main_class: str, *args: str, stdin: str | None = None,
               timeout_s: float = 120) -> subprocess.CompletedProcess:
    """Kafka's tool `main_class` with `args`, as its own JVM would run it."""
    command = java_command(main_class, *args)
    if main_class in FRESH_JVM or os.environ.get("ROSTER_KAFKA_TOOLS_FORK") == "1":
        return subprocess.run(command, input=stdin, capture_output=True, text=True,
                              timeout=timeout_s)
    code, out, err = _RUNNER.call(main_class, args, stdin, timeout_s)
    return subprocess.CompletedProcess(command, code, out, err)
