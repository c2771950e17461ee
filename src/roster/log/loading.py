"""Opening the segments of a log directory after a restart, clean or not.

Recovery rules on open():
  * clean-shutdown present: every segment is trusted; indexes are loaded from their files and
    rebuilt (without CRC checks) only when a file is missing or malformed.
  * otherwise: segments wholly below the recovery point were fsynced, index files included, and
    are trusted the same way (the active segment never is, which is why a flush syncs only its
    .log and why its index entries reach their files only when it is sealed; roster.log.file);
    the segment holding the recovery point and every later one are scanned batch by batch with
    CRC32C checks. The first bad or partial batch is cut off with a WARNING, every later segment
    is deleted (offsets must stay dense), and the scanned segments' indexes are rebuilt. Scanned
    segments count as unflushed, so the next flush job syncs them.
  * either way, segments wholly below the log start (retention interrupted by a crash) are deleted.
  * compacted segments: a segment that ends at or below the cleaner checkpoint
    (roster.log.cleaning) may have gaps between its batches and after its last one, so for it
    the checks above only require each batch to start after the previous one ends (CRC checks
    stay as they are), and its real end is found by walking its tail even when it is trusted.
    Every segment from the checkpoint on, the active one included, is held to dense offsets as
    before. Such a segment was fsynced before the checkpoint covered it, so a crash cannot have
    torn it: damage there is corruption, and the later segments are kept, since they hold the
    newest records of their keys. A later segment whose base lies below the end of a compacted
    segment's last batch is the leftover of a compaction pass interrupted mid-swap (the merged
    segment replaced it) and is deleted.
  The clean-shutdown marker is removed (durably) before open() returns, so a crash from then on
  is recognised as unclean.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

from roster.log.api import LogConfig
from roster.log.segment import LOG_SUFFIX, SUFFIXES, Segment, file_name

log = logging.getLogger("roster.log")

_SEGMENT_FILE = re.compile(r"(\d{20})(\.log|\.index|\.timeindex)")


def load_segments(directory: Path, config: LogConfig, clean: bool, recovery_point: int,
                  log_start: int, cleaned_to: int, segments: list[Segment]) -> bool:
    """Open the segments in `directory` per the rules above, appending each to `segments` as it
    opens, so the caller can close them if a later one fails.

    Returns whether files were created, deleted or truncated, so the directory needs an fsync.
    """
    names: dict[int, set[str]] = {}
    for path in directory.iterdir():
        match = _SEGMENT_FILE.fullmatch(path.name)
        if match:
            names.setdefault(int(match[1]), set()).add(match[2])
    changed = False
    for base, suffixes in names.items():
        if LOG_SUFFIX not in suffixes:  # indexes whose segment is gone
            _delete_segment_files(directory, base)
            changed = True
    bases = sorted(base for base, suffixes in names.items() if LOG_SUFFIX in suffixes)
    # Segments wholly below the log start were doomed by retention just before a crash.
    while len(bases) > 1 and bases[1] <= log_start:
        _delete_segment_files(directory, bases.pop(0))
        changed = True
    interval = config.index_interval_bytes
    i = 0
    while i < len(bases):
        base = bases[i]
        next_base = bases[i + 1] if i + 1 < len(bases) else None
        if next_base is not None and next_base <= cleaned_to:
            changed = _load_compacted(directory, bases, i, interval, clean, recovery_point,
                                      segments) or changed
            i += 1
            continue
        if clean or (next_base is not None and next_base <= recovery_point):
            segment = Segment.load(directory, base, interval, next_base)
        else:
            segment = Segment.recover(directory, base, interval)
        segments.append(segment)
        # A rebuilt segment (recovered, or with unusable index files) has unsynced changes and
        # may have had index files created.
        changed = changed or segment.write_generation > segment.synced_generation
        if next_base is not None and segment.next_offset != next_base:
            doomed = bases[i + 1:]
            log.warning("%s ends at offset %d but the next segment starts at %d; deleting the %d "
                        "later segment(s) of %s", segment.path.name, segment.next_offset,
                        next_base, len(doomed), directory)
            for later in doomed:
                _delete_segment_files(directory, later)
            return True
        i += 1
    return changed


def _load_compacted(directory: Path, bases: list[int], i: int, interval: int, clean: bool,
                    recovery_point: int, segments: list[Segment]) -> bool:
    """Open the compacted segment bases[i] (not the last one), deleting the leftovers it overlaps
    from `bases` and the directory. Returns whether files changed."""
    base = bases[i]
    if clean or bases[i + 1] <= recovery_point:
        segment = Segment.load(directory, base, interval, None, gaps_allowed=True)
    else:
        segment = Segment.recover(directory, base, interval, gaps_allowed=True)
    segments.append(segment)
    changed = segment.write_generation > segment.synced_generation
    if segment.truncated:
        log.warning("%s was damaged after it was compacted; keeping the later segments of %s, "
                    "which hold the newest records of their keys", segment.path.name, directory)
    while i + 1 < len(bases) and bases[i + 1] < segment.next_offset:
        leftover = bases.pop(i + 1)
        log.warning("deleting segment %d of %s: %s holds offsets up to %d, so it is the leftover "
                    "of an interrupted compaction", leftover, directory, segment.path.name,
                    segment.next_offset - 1)
        _delete_segment_files(directory, leftover)
        changed = True
    if i + 1 < len(bases):
        segment.next_offset = bases[i + 1]  # the gap after its last batch belongs to it
    return changed


def _delete_segment_files(directory: Path, base: int) -> None:
    for suffix in SUFFIXES:
        (directory / file_name(base, suffix)).unlink(missing_ok=True)
