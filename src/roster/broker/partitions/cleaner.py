"""The log cleaner: compacts topics whose cleanup.policy includes `compact` (user topics and
`__consumer_offsets`), in the background.

Every `log.cleaner.backoff.ms` it looks at each partition of those topics and cleans the ones
Kafka would (roster.log.compaction.cleanable_range): whose dirty ratio (bytes of flushed, closed
segments written since the last cleaning, divided by the bytes of all of them) is above the
topic's min.cleanable.dirty.ratio, or whose dirty records have waited max.compaction.lag.ms;
one partition at a time. Each topic's own settings override the broker's log.cleaner.* ones.

Request handling is never held up by the heavy part. Per partition:
  * on the event loop, the log snapshots its cleanable segments (cheap: fds and sizes);
  * on the cleaner's own thread, the job reads them, maps every key to its newest offset, writes
    the cleaned segments and fsyncs them;
  * on the event loop again, the swap renames the files into place and adopts them in memory;
    the directory fsyncs between its steps run on the cleaner's thread.
The job's Python work still shares the interpreter lock with the event loop, so a pass costs the
loop some throughput while it runs, but never a long pause.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from roster.broker.partitions.topics import TopicManager
from roster.config import BrokerConfig
from roster.log import fault_hook
from roster.log.api import CleaningStats, LogError
from roster.log.compaction import CleanerSettings

log = logging.getLogger("roster.cleaner")
_DONE = object()


def cleaner_settings(topic_configs, config: BrokerConfig) -> CleanerSettings:
    """A topic's compaction settings: its own, else the broker's defaults."""
    def pick(topic_key: str, broker_key: str, parse=int):
        value = topic_configs.get(topic_key)
        return parse(value) if value is not None else config[broker_key]

    return CleanerSettings(
        delete_retention_ms=pick("delete.retention.ms", "log.cleaner.delete.retention.ms"),
        min_compaction_lag_ms=pick("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
        max_compaction_lag_ms=pick("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
        min_cleanable_ratio=pick("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio",
                                 float),
        producer_expiration_ms=config["producer.id.expiration.ms"],
        map_bytes=config["log.cleaner.dedupe.buffer.size"],
        map_load_factor=config["log.cleaner.io.buffer.load.factor"],
        io_bytes_per_second=config["log.cleaner.io.max.bytes.per.second"])


class LogCleaner:
    def __init__(self, topics: TopicManager, config: BrokerConfig, now_ms: Callable[[], int],
                 ready: Callable[[], bool] = lambda: True) -> None:
        """`ready` says whether cleaning may start: the broker holds it back while the group
        coordinator replays __consumer_offsets, since a pass that drops an expired tombstone
        in the middle of a replay could leave the replay with the older value it deletes."""
        self._topics = topics
        self._ready = ready
        self._enabled = config["log.cleaner.enable"]
        self._backoff_s = config["log.cleaner.backoff.ms"] / 1000
        self._config = config
        self._now_ms = now_ms
        self._executor: ThreadPoolExecutor | None = None
        self._job = None  # the job running on the cleaner thread, if any

    async def run_forever(self) -> None:
        if not self._enabled:
            return
        while True:
            await asyncio.sleep(self._backoff_s)
            if self._ready():
                try:
                    await self.clean_once()
                except Exception:  # a bug must not stop compaction for good
                    log.exception("the log cleaner failed; retrying after the backoff")

    async def clean_once(self) -> int:
        """Clean every partition that is dirty enough; returns how many were cleaned."""
        cleaned = 0
        for topic in list(self._topics):
            # the effective policy: the topic's own, else the broker's log.cleanup.policy
            if "compact" not in self._topics.settings(topic)["cleanup.policy"]:
                continue
            try:
                settings = cleaner_settings(topic.configs, self._config)
            except ValueError as exc:
                log.error("cannot compact %s: %s", topic.name, exc)
                continue
            for index, partition in enumerate(list(topic.partitions)):
                name = f"{topic.name}-{index}"
                try:
                    status = partition.cleaning_status(self._now_ms(), settings)
                    if not status.should_clean(settings.min_cleanable_ratio):
                        continue
                    if await self.clean(name, partition, settings, status.dirty_ratio) \
                            is not None:
                        cleaned += 1
                except (LogError, OSError) as exc:
                    log.error("cannot compact %s: %s", name, exc)
        return cleaned

    async def clean(self, name: str, partition, settings: CleanerSettings,
                    dirty_ratio: float) -> CleaningStats | None:
        """One pass over one partition."""
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        job = partition.prepare_cleaning(self._now_ms(), settings)
        if job is None:
            return None
        log.info("compacting %s: dirty from offset %d, dirty ratio %.2f", name, job.first_dirty,
                 dirty_ratio)
        self._job = job
        try:
            try:
                await loop.run_in_executor(self._thread(), job.run)
            except Exception as exc:  # noqa: BLE001  (the job has removed its files)
                log.error("compaction of %s failed: %s", name, exc)
            swap_started = time.monotonic()
            held = 0.0  # time the swap's own steps kept the event loop busy
            steps = partition.swap_cleaned(job)
            try:
                for number in itertools.count(1):
                    step_started = time.monotonic()
                    step = next(steps, _DONE)
                    held += time.monotonic() - step_started
                    if step is _DONE:
                        break
                    if step is not None:
                        await loop.run_in_executor(self._thread(), step)
                    fault_hook.reached(f"cleaner:swap-{number}")
                fault_hook.reached("cleaner:swapped")
            finally:
                steps.close()  # an abandoned swap releases what it holds (a no-op when done)
        finally:
            job.cancel()  # if this task was cancelled, the thread stops at the next batch
        self._job = None  # (left set on cancellation, for stop() to discard its files)
        stats = job.stats
        if stats is not None:
            log.info("compacted %s offsets %d..%d: %d -> %d records, %d -> %d bytes, "
                     "%d -> %d segments in %.0f ms (swap %.1f ms, event loop held %.1f ms)",
                     name, stats.start_offset, stats.end_offset - 1, stats.records_before,
                     stats.records_after, stats.bytes_before, stats.bytes_after,
                     stats.segments_before, stats.segments_after,
                     (time.monotonic() - started) * 1000,
                     (time.monotonic() - swap_started) * 1000, held * 1000)
        return stats

    def _thread(self) -> ThreadPoolExecutor:
        # One thread, like Kafka's default log.cleaner.threads=1: a pass never competes with
        # another, and the default executor stays free for fsyncs of produce and commits.
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="roster-cleaner")
        return self._executor

    async def stop(self) -> None:
        """Wait for the cleaner thread to let go of the logs (call after cancelling run_forever,
        before the logs are closed)."""
        job, self._job = self._job, None
        if job is not None:
            job.cancel()
        if self._executor is not None:
            executor, self._executor = self._executor, None
            await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)
        if job is not None:
            job.discard()
