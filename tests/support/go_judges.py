"""The Go programs of tests/go/ (franz-go and IBM/sarama judging transactions), built once and
run as child processes that print one JSON event a line.

- `build()` runs `go build` in tests/go/ into .cache/go-judges/<checksum of the sources and of
  `go version`>/ unless that folder already holds the binaries (a file lock keeps two pytest
  workers from building at once). Modules come through GOPROXY as the environment sets it,
  with GOFLAGS=-mod=mod (and -buildvcs=false: no git stamping); scripts/ensure-go-modules.sh (`make test` runs it) has
  downloaded and compiled them already, so a test run fetches nothing and mostly links.
  go.mod pins the versions and go.sum their checksums.
- `GoProgram(binaries, name, *args)` is a `JavaProgram` (tests/support/java_judges.py: events,
  wait_for, send, kill9, stop) running one of those binaries; it counts as alive until its
  output has been read to the end, so a wait sees the last events of a program that exited.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.java_judges import JavaProgram

ROOT = Path(__file__).resolve().parents[2]
GO_DIR = ROOT / "tests" / "go"
CACHE = ROOT / ".cache" / "go-judges"
PROGRAMS = ("franz", "sarama")


@functools.cache
def _toolchain() -> bytes:
    """Which Go builds them: a new toolchain rebuilds."""
    go = shutil.which("go")
    if go is None:
        return b"no go"
    try:
        return subprocess.run([go, "version"], capture_output=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return b"no go"


def _sources_checksum() -> str:
    digest = hashlib.sha256(_toolchain())
    for path in sorted(p for p in GO_DIR.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(GO_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def go_environment() -> dict[str, str]:
    env = {**os.environ, "GOFLAGS": "-mod=mod -buildvcs=false", "CGO_ENABLED": "0"}
    env.pop("GO111MODULE", None)    # module mode, whatever the caller's shell says
    return env


def build() -> Path:
    """The folder holding the built programs (built now if the sources changed)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = CACHE / _sources_checksum()
        if all((out / name).is_file() for name in PROGRAMS):
            return out
        go = shutil.which("go")
        if go is None:
            raise RuntimeError("Go is not installed: scripts/ensure-go-modules.sh says how "
                               "(make test runs it); the franz-go and sarama judges need it")
        shutil.rmtree(out, ignore_errors=True)
        done = subprocess.run([go, "build", "-o", str(out) + "/",
                               *(f"./{name}" for name in PROGRAMS)], cwd=GO_DIR,
                              env=go_environment(), capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            shutil.rmtree(out, ignore_errors=True)
            raise RuntimeError("building tests/go failed:\n" + done.stderr[-4000:])
        for older in CACHE.iterdir():     # the builds of earlier sources
            if older.is_dir() and older != out:
                shutil.rmtree(older, ignore_errors=True)
        return out


class GoProgram(JavaProgram):
    """One of tests/go's programs; the same event handling as the Java judges."""

    def __init__(self, binaries: Path, name: str, *args: str) -> None:
        super().__init__(name)
        self.command = [str(binaries / name), *args]
        self.drained = False

    def _read_events(self) -> None:
        super()._read_events()
        with self.cond:
            self.drained = True
            self.cond.notify_all()

    def alive(self) -> bool:
        """Until its output is read to the end: these programs exit right after their last
        event, which a wait must still see."""
        return not self.drained or super().alive()
