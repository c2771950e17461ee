"""Share sessions (KIP-932): which partitions a share consumer fetches from this broker, and
the epoch its next ShareFetch or ShareAcknowledge must carry.

A session is keyed by (group id, member id), as Kafka 4.4's ShareSessionCache keys it. The
rules, read off Kafka 4.4 (SharePartitionManager.newContext / acknowledgeSessionUpdate,
ShareSessionCache, ShareSession, CachedSharePartition):

ShareFetch (`begin_fetch`):
- epoch 0 opens a session with the request's partitions (a full fetch). An existing session of
  the same key is dropped first; acknowledgements in that request are INVALID_REQUEST; past
  `max_sessions` (group.share.max.share.sessions, 2000) it is SHARE_SESSION_LIMIT_REACHED.
  The new session expects epoch 1 next.
- epoch -1 closes: the session must exist (SHARE_SESSION_NOT_FOUND); it is not changed here,
  the request only acknowledges; the caller releases the member's records and drops the
  session once those acknowledgements are applied (`release`).
- any other epoch must be the session's (INVALID_SHARE_SESSION_EPOCH, or
  SHARE_SESSION_NOT_FOUND without a session): the request's partitions are added (those new
  to the session are reported in the next answer even without data), then ForgottenTopicsData
  removes its partitions, and the expected epoch moves on (after 2^31-1 comes 1).

ShareAcknowledge (`begin_acknowledge`): epoch 0 is INVALID_SHARE_SESSION_EPOCH (a session is
only opened by ShareFetch); no session: SHARE_SESSION_NOT_FOUND; -1 acknowledges and closes;
otherwise the epoch must be the session's, and moves on.

A session belongs to the connection that opened it. When that connection closes the session
is dropped and the member's acquired records are released (Kafka's ClientConnectionDisconnect
listener, `connection_closed`); a session replaced or closed meanwhile leaves the connection
with nothing to do (Kafka marks it stale).

Answers of a session's later fetches list only the partitions with records, with an error, or
newly added (`in_answer`); a partition that answered with records moves to the end of the
session's order, so the next fetch reads the others first. A full fetch's answer lists every
partition asked for.

Pure: no clock, no I/O; topic ids are whatever hashable the caller keys partitions by.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1
DEFAULT_MAX_SESSIONS = 2000   # Kafka 4.4's group.share.max.share.sessions

# A partition of a session: (topic id, partition index)
Partition = tuple


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch` (Kafka's ShareRequestMetadata.nextEpoch): -1 stays -1, and the
    largest int wraps to 1 (0 only ever opens a session)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


@frozen
class SessionKey:
    group_id: str
    member_id: str


@dataclass(eq=False, slots=True)
class ShareSession:
    key: SessionKey
    epoch: int   # the epoch the next request must carry
    connection: Hashable
    # partition -> "must appear in the next answer" (added since, or answered an error last)
    partitions: dict = field(default_factory=dict)

    def in_answer(self, partition: Partition, has_records: bool, failed: bool) -> bool:
        """Whether a later fetch's answer lists `partition` (Kafka's
        CachedSharePartition.maybeUpdateResponseData): it has records, it was waiting to be
        reported, or it failed (and is then reported once more next time). A partition with
        records moves to the end of the session's order."""
        pending = self.partitions.get(partition)
        if pending is None:   # not (or no longer) the session's
            return has_records or failed
        if has_records:
            del self.partitions[partition]
        self.partitions[partition] = failed
        return has_records or pending or failed


@frozen
class FetchContext:
    """What a ShareFetch reads and answers: `partitions` in the order to read them; `full`:
    the answer lists every one of them; `final`: epoch -1, nothing is read."""
    session: ShareSession | None
    partitions: tuple
    full: bool
    final: bool = False


class ShareSessionCache:
    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[SessionKey, ShareSession] = {}
        # connection -> the key of the session it opened last (one per connection, as Kafka's)
        self._by_connection: dict[Hashable, SessionKey] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get(SessionKey(group_id, member_id))

    def begin_fetch(self, group_id: str, member_id: str, epoch: int,
                    partitions: Iterable[Partition], forgotten: Iterable[Partition],
                    acknowledges: bool, connection: Hashable) -> FetchContext | ErrorCode:
        """A ShareFetch's session: its context, or the error answering the whole request."""
        key = SessionKey(group_id, member_id)
        if epoch == FINAL_EPOCH:
            session = self._sessions.get(key)
            if session is None:
                return ErrorCode.share_session_not_found
            return FetchContext(session, (), full=True, final=True)
        if epoch == INITIAL_EPOCH:
            if acknowledges:
                return ErrorCode.invalid_request
            self._drop(key)
            if len(self._sessions) >= self.max_sessions:
                return ErrorCode.share_session_limit_reached
            wanted = dict.fromkeys(partitions, False)
            session = ShareSession(key, next_epoch(INITIAL_EPOCH), connection, wanted)
            self._sessions[key] = session
            self._by_connection[connection] = key
            return FetchContext(session, tuple(wanted), full=True)
        session = self._sessions.get(key)
        if session is None:
            return ErrorCode.share_session_not_found
        if session.epoch != epoch:
            return ErrorCode.invalid_share_session_epoch
        for partition in partitions:
            if partition not in session.partitions:
                session.partitions[partition] = True
        for partition in forgotten:
            session.partitions.pop(partition, None)
        session.epoch = next_epoch(session.epoch)
        return FetchContext(session, tuple(session.partitions), full=False)

    def begin_acknowledge(self, group_id: str, member_id: str,
                          epoch: int) -> ShareSession | ErrorCode:
        """A ShareAcknowledge's session, or the error answering the whole request."""
        if epoch == INITIAL_EPOCH:
            return ErrorCode.invalid_share_session_epoch
        session = self._sessions.get(SessionKey(group_id, member_id))
        if session is None:
            return ErrorCode.share_session_not_found
        if epoch == FINAL_EPOCH:
            return session
        if session.epoch != epoch:
            return ErrorCode.invalid_share_session_epoch
        session.epoch = next_epoch(session.epoch)
        return session

    def release(self, group_id: str, member_id: str) -> ShareSession | None:
        """Drop a session (closed with epoch -1, or its member left): the dropped session, whose
        partitions hold the member's records to release, or None when there was none."""
        return self._drop(SessionKey(group_id, member_id))

    def connection_closed(self, connection: Hashable) -> ShareSession | None:
        """The connection went away: the session it opened, dropped, if it still stands."""
        key = self._by_connection.pop(connection, None)
        if key is None:
            return None
        session = self._sessions.get(key)
        if session is None or session.connection != connection:
            return None   # closed or reopened meanwhile: stale
        return self._drop(key)

    def group_dropped(self, group_id: str) -> list[ShareSession]:
        """Every session of a group, dropped (the group was deleted)."""
        return [self._drop(key) for key in [k for k in self._sessions if k.group_id == group_id]]

    def _drop(self, key: SessionKey) -> ShareSession | None:
        session = self._sessions.pop(key, None)
        if session is not None and self._by_connection.get(session.connection) == key:
            del self._by_connection[session.connection]
        return session
