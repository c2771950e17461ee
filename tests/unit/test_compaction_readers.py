"""Readers racing a swap: between any two steps of FileLog.swap_cleaned (where the event loop
may serve a Fetch), a read from the start sees every key's newest record at its offset and
nothing that was never written; a reader part-way through the log goes on from its position
and never sees an offset twice or a key's value older than one it already read."""
from __future__ import annotations

from roster.log.file import FileLog
from tests.unit.test_log_compaction import (
    CLEANING,
    LATER,
    MERGING,
    build_for_merge,
    newest,
    records,
)


def test_reads_between_every_swap_step_see_a_whole_log(tmp_path):
    expected, before = build_for_merge(tmp_path / "p-0")
    log = FileLog.open(tmp_path / "p-0", MERGING)
    try:
        job = log.prepare_cleaning(LATER, CLEANING)
        job.run()
        # a consumer that read the first third before the pass and reads on during it
        middle = before[len(before) // 3][0]
        consumed = [record for record in before if record[0] < middle]
        position = middle
        steps = 0
        for step in log.swap_cleaned(job):
            if step is not None:
                step()
            steps += 1
            seen = records(log)
            assert newest(seen) == expected, f"after swap step {steps}"
            assert set(seen) <= set(before), f"after swap step {steps}"
            chunk = [record for record in seen if record[0] >= position][:3]
            consumed += chunk
            position = chunk[-1][0] + 1 if chunk else position
        consumed += [record for record in records(log) if record[0] >= position]
        offsets = [offset for offset, _, _ in consumed]
        assert offsets == sorted(set(offsets)), "the reader never goes back or repeats"
        assert newest(consumed) == expected, "and ends with every key's newest value"
        assert steps > 10
    finally:
        log.close()
