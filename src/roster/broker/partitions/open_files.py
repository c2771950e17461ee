"""How many more partitions this process can open before it runs out of file descriptors.

Every partition keeps its active segment's log, offset index and time index open, and every
client connection is a socket too. A CreateTopics or CreatePartitions asking for more partitions
than the open-file limit allows used to open logs until EMFILE, blocking the event loop for
seconds and then failing every connection that tried to accept or roll a segment (found by the
fuzzer). So a request for new partitions is measured against what is left, keeping a quarter of
the limit for connections, segment rolls and the duplicated descriptors of fsync jobs.
"""
from __future__ import annotations

import os
import resource

FILES_PER_PARTITION = 3  # the active segment's .log, .index and .timeindex
KEPT_FOR_CONNECTIONS = 4  # one part in this many of the limit is never given to partitions


def partitions_that_fit() -> tuple[int, int, int] | None:
    """(how many more partitions fit, the open-file limit, descriptors open now), or None
    where the process cannot count its descriptors (then nothing is refused)."""
    try:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        in_use = len(os.listdir("/proc/self/fd"))
    except (OSError, ValueError):
        return None
    if limit == resource.RLIM_INFINITY:
        return None
    spare = limit - limit // KEPT_FOR_CONNECTIONS - in_use
    return max(spare, 0) // FILES_PER_PARTITION, limit, in_use


def refusal(new_partitions: int) -> str | None:
    """Why `new_partitions` more partitions cannot be opened, or None when they can."""
    room = partitions_that_fit()
    if room is None or new_partitions <= room[0]:
        return None
    fit, limit, in_use = room
    return (f"{new_partitions} new partitions would need {new_partitions * FILES_PER_PARTITION} "
            f"open files; this broker has room for {fit} more partitions (open-file limit "
            f"{limit}, {in_use} open, a quarter kept for connections): ask for fewer, or raise "
            f"the limit (ulimit -n)")
