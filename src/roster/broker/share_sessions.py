"""The broker's share sessions (the pure cache is roster.share.sessions) and what ending one
does to the share partitions: the member's acquired records are released (AVAILABLE again,
their delivery counts kept), as Kafka 4.4's SharePartitionManager.releaseSession does when a
session is closed with epoch -1 or its connection goes away. A consumer killed without
closing gets its records handed to the others as soon as the broker sees the connection drop,
long before their acquisition locks (30 s by default) would expire."""
from __future__ import annotations

import asyncio
import inspect
import logging

from roster.share.sessions import DEFAULT_MAX_SESSIONS, ShareSession, ShareSessionCache

log = logging.getLogger("roster.share")

MAX_SESSIONS = "group.share.max.share.sessions"


def available_key(group_id: str, topic_id, partition: int) -> tuple:
    """The waiters' key (broker.waiters) a share partition is notified on when records become
    AVAILABLE again (released, or their lock expired), so the ShareFetches parked on it look
    again."""
    return ("share", group_id, topic_id, partition)


class ShareSessions:
    def __init__(self, broker) -> None:
        self._broker = broker
        self._cache = ShareSessionCache(broker.config.get(MAX_SESSIONS, DEFAULT_MAX_SESSIONS))
        self._hooked = False

    @property
    def cache(self) -> ShareSessionCache:
        """The sessions; on first use, the share partitions are asked to tell when records
        become AVAILABLE again, to wake the fetches parked on them. A member leaving the group
        (ShareGroupHeartbeat) does not end its session: as in Kafka 4.4, the session lasts
        until epoch -1 or its connection closes (checked beside Kafka: a member that left still
        fetches and closes its session with NONE)."""
        if not self._hooked:
            state = getattr(self._broker, "share_state", None)
            if state is not None:
                self._hooked = True
                waiters = self._broker.waiters
                state.on_available.append(lambda key: waiters.notify(available_key(*key)))
        return self._cache

    def connection_closed(self, connection) -> None:
        """A client connection closed: the session it opened ends, and its records return."""
        session = self._cache.connection_closed(connection)
        if session is not None:
            self._release_records(session)

    def release(self, group_id: str, member_id: str) -> ShareSession | None:
        """End a member's session (ShareFetch/ShareAcknowledge with epoch -1, or the member
        left the group): its acquired records on the session's partitions return."""
        session = self._cache.release(group_id, member_id)
        if session is not None:
            self._release_records(session)
        return session

    def group_deleted(self, group_id: str) -> None:
        self._cache.group_dropped(group_id)

    def _release_records(self, session: ShareSession) -> None:
        state = getattr(self._broker, "share_state", None)
        if state is None:
            return
        group_id, member_id = session.key.group_id, session.key.member_id
        keys = [(group_id, topic_id, index) for topic_id, index in session.partitions]
        try:
            done = state.release_member_records(group_id, member_id, keys)
        except Exception:   # noqa: BLE001 - a connection's end must not fail the loop
            log.exception("releasing the records of %s in share group %s", member_id,
                          group_id)
            return
        if inspect.isawaitable(done):
            task = asyncio.ensure_future(done)
            task.add_done_callback(_log_failure)


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("releasing a share session's records failed", exc_info=task.exception())
