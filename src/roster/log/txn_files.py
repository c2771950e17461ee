"""The files that keep a FileLog's transaction state: `.txnindex` and `.snapshot`.

`<base>.txnindex` (Kafka's name and entry layout, TransactionIndex): one 34-byte entry per
transaction aborted by a marker in the segment starting at `base` -- version int16 (0),
producer id int64, first offset int64, last offset int64 (the marker), last stable offset int64.
Entries are appended (page cache) when the abort marker is appended, and fsynced when the
segment is sealed, so the file of every segment below the recovery point is durable with it.
The active segment's file is never trusted after a crash: recovery replays the segment.

Log compaction merges segments without knowing about these files, so a segment's entries are
those of every `.txnindex` whose base lies within it (the merged-away segments' files stay
until their range is deleted by retention).

`<offset>.snapshot` (Kafka writes one per roll too): the producer table as of `offset` (after
every batch below it), as JSON with a CRC32C, written to a temporary name and renamed. Recovery
starts from the newest readable snapshot at or below the first segment it cannot trust and
replays batch headers from there; a damaged or missing snapshot only means replaying more.
"""
from __future__ import annotations

import json
import logging
import os
import re
import struct
from pathlib import Path

from roster import record_codec   # loads crc32c on first use
from roster.log.files import durable_replace
from roster.log.producer_state import AbortedIndex, AbortedTxn, MarkerError, ProducerState

log = logging.getLogger("roster.log")

TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_VERSION = 0
_TXN_INDEX_FILE = re.compile(r"(\d{20})\.txnindex")
_SNAPSHOT_FILE = re.compile(r"(\d{20})\.snapshot")
SNAPSHOTS_KEPT = 2


def txn_index_path(directory: Path, base: int) -> Path:
    return directory / f"{base:020d}{TXN_INDEX_SUFFIX}"


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_entry(txn: AbortedTxn) -> bytes:
    return _ENTRY.pack(ENTRY_VERSION, txn.producer_id, txn.first_offset, txn.last_offset,
                       txn.last_stable_offset)


def read_txn_index(path: Path) -> list[AbortedTxn]:
    """The whole entries of a `.txnindex` (a torn last entry is ignored)."""
    data = path.read_bytes()
    whole = len(data) - len(data) % _ENTRY.size
    return [AbortedTxn(*fields[1:]) for fields in _ENTRY.iter_unpack(data[:whole])]


def record_abort(directory: Path, base: int, txn: AbortedTxn | None) -> None:
    """Append an abort marker's entry to the active segment's file (page cache only: it is
    fsynced at the roll, and a crash before that replays the segment). A failure is logged:
    the entry is in memory, and the next recovery rebuilds the file."""
    if txn is None:
        return
    try:
        fd = os.open(txn_index_path(directory, base),
                     os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, encode_entry(txn))
        finally:
            os.close(fd)
    except OSError as exc:
        log.error("cannot append to %s: %s", txn_index_path(directory, base), exc)


def sealed(directory: Path, base: int, end: int, state: ProducerState) -> None:
    """A segment was sealed (a roll, or close): fsync its `.txnindex` and snapshot the producer
    state at its end, so recovery replays from there instead of from the log start."""
    try:
        fsync_txn_index(directory, base)
    except OSError as exc:  # a roll must not fail for it; only power loss could cost entries
        log.error("cannot fsync %s: %s", txn_index_path(directory, base), exc)
    try:
        write_snapshot(directory, end, state)
        prune_snapshots(directory)
    except OSError as exc:  # only costs a longer replay
        log.error("cannot write the producer-state snapshot %d of %s: %s", end, directory, exc)


def write_txn_index(directory: Path, base: int, entries: list[AbortedTxn]) -> None:
    """Replace the segment's file with `entries` (recovery); no file when there are none."""
    path = txn_index_path(directory, base)
    if not entries:
        path.unlink(missing_ok=True)
        return
    path.write_bytes(b"".join(encode_entry(txn) for txn in entries))


def forget_aborts(directory: Path, aborted: AbortedIndex, markers) -> None:
    """Compaction is about to remove these abort markers ((producer id, offset) pairs): drop
    their entries from memory and from the `.txnindex` files that hold them (each rewritten to
    a temporary file, fsynced, renamed)."""
    doomed = set(markers)
    if not doomed:
        return
    aborted.remove(doomed)
    for base in txn_index_bases(directory):
        path = txn_index_path(directory, base)
        entries = read_txn_index(path)
        kept = [txn for txn in entries if (txn.producer_id, txn.last_offset) not in doomed]
        if len(kept) == len(entries):
            continue
        durable_replace(path, b"".join(encode_entry(txn) for txn in kept))


def fsync_txn_index(directory: Path, base: int) -> None:
    """Make a sealed segment's entries durable (called at its roll; only segments with aborts
    have a file, so most rolls do nothing here)."""
    try:
        fd = os.open(txn_index_path(directory, base), os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def txn_index_bases(directory: Path) -> list[int]:
    return sorted(int(m[1]) for p in directory.iterdir()
                  if (m := _TXN_INDEX_FILE.fullmatch(p.name)))


def snapshot_offsets(directory: Path) -> list[int]:
    return sorted(int(m[1]) for p in directory.iterdir()
                  if (m := _SNAPSHOT_FILE.fullmatch(p.name)))


def write_snapshot(directory: Path, offset: int, state: ProducerState) -> None:
    body = json.dumps(state.to_rows(), separators=(",", ":")).encode()
    # not synced with its directory: a snapshot lost to a power loss only means recovery
    # starts from an older one (and a damaged one is refused by its CRC)
    durable_replace(snapshot_path(directory, offset), b"%08x" % record_codec.crc32c(body) + body,
                    sync_directory=False)


def read_snapshot(directory: Path, offset: int) -> ProducerState | None:
    """The snapshot at `offset`, or None when it is missing or damaged."""
    try:
        data = snapshot_path(directory, offset).read_bytes()
        body = data[8:]
        if len(data) < 8 or int(data[:8], 16) != record_codec.crc32c(body):
            raise ValueError("CRC mismatch")
        return ProducerState.from_rows(json.loads(body))
    except (OSError, ValueError, TypeError) as exc:
        log.warning("ignoring producer-state snapshot %d of %s: %s", offset, directory, exc)
        return None


def prune_snapshots(directory: Path) -> None:
    """Keep the newest SNAPSHOTS_KEPT snapshots: recovery needs one at or below the first
    segment it cannot trust, which is the active one or the one before it."""
    offsets = snapshot_offsets(directory)
    keep = set(offsets[-SNAPSHOTS_KEPT:])
    for offset in offsets:
        if offset not in keep:
            snapshot_path(directory, offset).unlink(missing_ok=True)


def delete_txn_indexes_below(directory: Path, base: int) -> None:
    """Remove the `.txnindex` files of segments wholly deleted below `base`."""
    try:
        for found in txn_index_bases(directory):
            if found < base:
                txn_index_path(directory, found).unlink(missing_ok=True)
    except OSError as exc:  # left over: the next open deletes them with their range
        log.error("cannot delete the .txnindex files below %d of %s: %s", base, directory, exc)


def restore(directory: Path, segments: list, clean: bool,
            recovery_point: int) -> tuple[ProducerState, AbortedIndex]:
    """Rebuild a partition's producer state and aborted-transaction index on open.

    `segments` are the opened segments, oldest first. Their files are known to be complete
    below `trusted_to`: the log end after a clean shutdown, else the base of the first segment
    recovery scanned (roster.log.loading: the one holding the recovery point). Replays the
    batch headers from the newest readable snapshot at a segment base at or below it (from the
    first segment without one), rewrites the `.txnindex` files of the replayed segments, and
    reads the files of the earlier ones."""
    bases = {segment.base_offset for segment in segments}
    end = segments[-1].next_offset
    trusted_to = end if clean else max(
        [s.base_offset for s in segments if s.base_offset <= recovery_point],
        default=segments[0].base_offset)
    state, start = None, segments[0].base_offset
    for offset in reversed(snapshot_offsets(directory)):
        if offset <= trusted_to and (offset in bases or offset == end):
            state = read_snapshot(directory, offset)
            if state is not None:
                start = offset
                break
    state = state or ProducerState()
    aborted = AbortedIndex()
    files = txn_index_bases(directory)
    for found in files:
        if found < start:
            for txn in read_txn_index(txn_index_path(directory, found)):
                if txn.last_offset < start:
                    aborted.add(txn)
    for segment in segments:
        if segment.base_offset < start:
            continue
        entries = []
        for position, header in segment.walk(0):
            if header.producer_id < 0:
                continue
            batch = segment.read_bytes(position, header.size) if header.is_control else None
            try:
                txn = state.apply(header, batch)
            except MarkerError as exc:
                log.warning("%s: ignoring the control batch at offset %d: %s",
                            segment.path, header.base_offset, exc)
                continue
            if txn is not None:
                entries.append(txn)
                aborted.add(txn)
        for found in files:  # merged-away segments' files within it
            if segment.base_offset < found < segment.next_offset:
                txn_index_path(directory, found).unlink(missing_ok=True)
        if entries or txn_index_path(directory, segment.base_offset).exists():
            write_txn_index(directory, segment.base_offset, entries)
    return state, aborted
