"""Claiming the data directory before anything reads or writes it.

Kafka takes a lock file (`.lock`) in each log directory and refuses to start on a directory
another process holds; so does roster. Two brokers appending to the same segment files would
overwrite each other's acknowledged records, and the second one's recovery would "repair"
the first one's live files.

The lock is an OS advisory lock (flock) on `<data dir>/.lock`: the kernel releases it when the
holder dies, kill -9 included, so a stale lock never blocks a restart. The file's contents
(pid, host, listeners) only say who holds it, for the refusal message; the file is never
removed (removing it while another process opens it would let two holders lock two different
files).

Every problem with the directory itself (it is a file, it cannot be created, it is not
writable, it is in use) is a `DataDirError` whose message names the directory: the start-up
path turns it into one line on stderr and a non-zero exit (broker/network/server.py).
"""
from __future__ import annotations

import errno
import fcntl
import os
import socket
import time
from pathlib import Path

LOCK_FILE = ".lock"


class DataDirError(Exception):
    """The data directory cannot be used; the message names it and says why."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class DataDirLock:
    """The held lock on one data directory; `release()` (or the process ending) frees it."""

    def __init__(self, directory: Path, fd: int) -> None:
        self.directory = directory
        self._fd: int | None = fd
        self._started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def describe_holder(self, listeners: list[str] | None = None) -> None:
        """Say in the lock file who holds it (informational only: the flock is the lock)."""
        fields = {"pid": str(os.getpid()), "host": socket.gethostname(),
                  "started": self._started}
        if listeners:
            fields["listeners"] = ",".join(listeners)
        text = "".join(f"{key}={value}\n" for key, value in fields.items()).encode()
        try:  # write, then cut what is left of a longer text: never empty for a reader
            os.pwrite(self._fd, text, 0)
            os.ftruncate(self._fd, len(text))
        except OSError:
            pass  # only the refusal message of another broker would miss it

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)   # closing the only descriptor releases the flock
            self._fd = None


def _holder(fd: int) -> str:
    """Who holds the lock, from what it wrote into the file: 'pid 12 on host h, listening on
    127.0.0.1:9092'."""
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
    except OSError:
        text = ""
    fields = dict(line.partition("=")[::2] for line in text.splitlines() if "=" in line)
    if "pid" not in fields:
        return "a process that has not said which yet"
    parts = [f"pid {fields['pid']}"]
    if fields.get("host"):
        parts.append(f"on host {fields['host']}")
    said = " ".join(parts)
    if fields.get("listeners"):
        said += f", listening on {fields['listeners']}"
    if fields.get("started"):
        said += f", since {fields['started']}"
    return said


def _ensure_directory(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise DataDirError(f"data directory {directory} is not a directory (a file is there)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a dangling symlink, or it appeared as a file meanwhile
        raise DataDirError(f"data directory {directory} is not a directory") from None
    except NotADirectoryError:
        raise DataDirError(f"cannot create data directory {directory}: a parent of it is a "
                           "file, not a directory") from None
    except OSError as exc:
        raise DataDirError(f"cannot create data directory {directory}: {_reason(exc)}") from None


def claim(directory: Path) -> DataDirLock:
    """Check that `directory` is a usable directory and lock it, or raise DataDirError. Nothing
    in it is read or written but the lock file, so a refused start leaves the data untouched."""
    _ensure_directory(directory)
    path = directory / LOCK_FILE
    try:
        # no O_TRUNC: the holder's description must survive a refused contender's open
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise DataDirError(f"data directory {directory} is not writable: {_reason(exc)}") \
            from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _holder(fd) if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
        os.close(fd)
        if holder is None:
            raise DataDirError(f"cannot lock data directory {directory} ({path}): "
                               f"{_reason(exc)}") from None
        raise DataDirError(f"data directory {directory} is in use by another broker ({holder}); "
                           f"refusing to start on it: stop that broker or give another "
                           f"--data-dir") from None
    # An existing lock file opens read-write even when the directory no longer lets files be
    # created in it (chmod): find that out now rather than halfway through recovery.
    if not os.access(directory, os.W_OK | os.X_OK):
        os.close(fd)
        raise DataDirError(f"data directory {directory} is not writable: "
                           f"{os.strerror(errno.EACCES)}")
    lock = DataDirLock(directory, fd)
    lock.describe_holder()
    return lock
