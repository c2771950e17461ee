"""A real roster broker in a child process, for tests that go over real sockets."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# A fresh broker creates and (on stop) flushes every __consumer_offsets partition; 50 of them
# cost seconds per test. Tests get 5 unless they ask for more (the mapping is the same code).
TEST_DEFAULTS = {"offsets.topic.num.partitions": "5"}


# Waiting for the "listening" line costs nothing when the broker is quick; a loaded machine
# (a neighbour compiling, a CPU hog) has been seen to take over 30 s to import and start it.
START_TIMEOUT_S = 120.0


class BrokerProcess:
    """`python -m roster serve` on a free loopback port; restartable on the same data dir."""

    def __init__(self, data_dir: Path, settings: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.settings = {**TEST_DEFAULTS, **(settings or {})}
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.output: list[str] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = START_TIMEOUT_S) -> BrokerProcess:
        # Reuse the port across restarts so clients that cached the address find it again.
        port = self.port or 0
        command = [sys.executable, "-m", "roster", "--log-level", "INFO", "serve",
                   "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(self.data_dir)]
        for key, value in self.settings.items():
            command += ["--set", f"{key}={value}"]
        # A run starts hundreds of brokers: they cache roster's bytecode (__pycache__, ignored by
        # git) even where the environment says not to, a third less CPU per start.
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        ready = threading.Event()

        def pump(stream):
            for line in stream:
                self.output.append(line.rstrip("\n"))
                if line.startswith("roster listening on "):
                    self.port = int(line.rsplit(":", 1)[1])
                    ready.set()
            ready.set()  # the process ended; start() reports it below

        threading.Thread(target=pump, args=(self.proc.stdout,), daemon=True).start()
        if not ready.wait(timeout_s) or self.port is None or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("roster did not start:\n" + "\n".join(self.output[-40:]))
        return self

    def stop(self, timeout_s: float = 20.0) -> int | None:
        """SIGTERM and wait: a clean shutdown."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"roster did not stop within {timeout_s} s of SIGTERM (killed); "
                               "its last lines:\n" + "\n".join(self.output[-40:])) from None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def restart(self) -> BrokerProcess:
        self.stop()
        return self.start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_for_line(self, text: str, since: int = 0, timeout_s: float = 30.0) -> str:
        """The first output line from index `since` on that holds `text`. The output is read
        by a thread, a moment after the broker writes it (longer on a loaded machine): a test
        that reads it at once may miss a line that is on its way."""
        deadline = time.monotonic() + timeout_s
        while True:
            for line in self.output[since:]:
                if text in line:
                    return line
            if time.monotonic() >= deadline:
                raise AssertionError(f"no broker line with {text!r} within {timeout_s:g} s:\n"
                                     + "\n".join(self.output[since:][-20:]))
            time.sleep(0.05)
