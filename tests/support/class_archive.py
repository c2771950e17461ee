"""Class-data sharing for the suite's JVMs (JDK 17's dynamic AppCDS archives).

A short-lived JVM spends much of its CPU loading and verifying classes. Mapped from an archive
of the classes an earlier JVM of its kind loaded, a Kafka broker's start and stop costs about
4 s of CPU instead of 7 (measured on JDK 17; a Kafka tool call 1.6 -> 0.8 s). The suite starts
some thirty brokers (peers, cluster nodes and their restarts) and dozens of Java programs on
two cores, so that is CPU the tests beside them get back.

One archive per kind of JVM, keyed by the JDK and the class path (each entry's name, size and
time), under build/class-archives/: a changed jar or JDK records a new one. It is recorded once
per machine, by whichever process claims it first (an O_EXCL claim file), into a file of its
own that is published by rename only once its JVM has exited cleanly; until then every other
JVM of the kind starts as before, without one. So a half-written archive is never mapped, and
a recording JVM killed -9 only gives the claim back. A JVM that finds an archive it cannot use
runs without it: sharing is an optimisation, never a condition (its log lines are off so a
broker's output carries none of it).

- `ClassArchive(kind, java)` -> `.launch(classpath, record=True)` -> a `Launch` whose
  `.options` go on the JVM's command line; `.watch(proc)` publishes a recording when that Popen
  exits, `.exited(rc)` after a synchronous run. A JVM that lives as long as the suite records
  no archive (others would wait for it till the end): the brokers' is recorded by a broker
  started and stopped for the purpose (kafka_peer.record_broker_classes).
"""
from __future__ import annotations

import glob
import hashlib
import os
import signal
import subprocess
import threading
import time
import uuid
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHIVES = ROOT / "build" / "class-archives"
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# a JVM ended by SIGTERM (how the suite stops a broker) still writes its archive
CLEAN_EXITS = {0, 128 + signal.SIGTERM, -signal.SIGTERM}
STALE_CLAIM_S = 600   # no recording JVM of the suite lives this long (a broker's is stopped at once)


@cache
def _jdk(java: str) -> bytes:
    done = subprocess.run([java, "-Xshare:auto", "-version"], capture_output=True, timeout=60)
    return done.stderr


def _entries(classpath: str) -> list[str]:
    paths = []
    for entry in classpath.split(os.pathsep):
        paths.extend(sorted(glob.glob(entry[:-1] + "*.jar")) if entry.endswith("*") else [entry])
    return paths


def _key(java: str, classpath: str) -> str:
    digest = hashlib.sha256(_jdk(java) + classpath.encode())
    for path in _entries(classpath):
        try:
            stat = os.stat(path)
        except OSError:
            continue
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


class Launch:
    """One JVM's part in its kind's archive: using it, recording it, or neither."""

    def __init__(self, options: tuple[str, ...], recording: Path | None = None,
                 archive: Path | None = None, claim: Path | None = None) -> None:
        self.options = options
        self._recording = recording
        self._archive = archive
        self._claim = claim

    @property
    def records(self) -> bool:
        return self._recording is not None

    def watch(self, proc: subprocess.Popen) -> None:
        if self._recording is not None:
            threading.Thread(target=lambda: self.exited(proc.wait()), daemon=True,
                             name="class-archive-publish").start()

    def exited(self, returncode: int) -> None:
        """Publish the recording if its JVM ended cleanly; in any case give the claim back."""
        if self._recording is None:
            return
        recording, self._recording = self._recording, None
        try:
            if returncode in CLEAN_EXITS and recording.exists():
                os.replace(recording, self._archive)
        finally:
            recording.unlink(missing_ok=True)
            self._claim.unlink(missing_ok=True)


class ClassArchive:
    def __init__(self, kind: str, java: str = "java") -> None:
        self.kind = kind
        self.java = java

    def launch(self, classpath: str, record: bool = True) -> Launch:
        """Options for one JVM of this kind: the archive's if there is one; else, with
        `record`, those that record it, if no other JVM is recording it."""
        archive = ARCHIVES / f"{self.kind}-{_key(self.java, classpath)}.jsa"
        if archive.exists():
            return Launch((f"-XX:SharedArchiveFile={archive}", *QUIET))
        if not record or not _claim(archive.with_suffix(".claim")):
            return Launch(())
        if archive.exists():      # published between the two checks
            archive.with_suffix(".claim").unlink(missing_ok=True)
            return Launch((f"-XX:SharedArchiveFile={archive}", *QUIET))
        recording = archive.with_name(f"{archive.stem}.{uuid.uuid4().hex[:8]}.recording")
        return Launch((f"-XX:ArchiveClassesAtExit={recording}", *QUIET), recording, archive,
                      archive.with_suffix(".claim"))


def _claim(claim: Path) -> bool:
    ARCHIVES.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            # a claim left by a process that died while its JVM recorded is taken over
            try:
                if time.time() - claim.stat().st_mtime < STALE_CLAIM_S:
                    return False
                claim.unlink()
            except FileNotFoundError:
                pass
    return False
