"""What a share consumer knows about fetching and acknowledging, as a pure core: no sockets, no
clock. The driver (share_consumer.py) asks it for the next ShareFetch (78) or ShareAcknowledge
(79) to a broker, sends it, and gives the answer back.

- A share session per broker (ShareSessionHandler in Kafka's client): the first request has
  epoch 0 and names every partition to fetch from that broker; each answer without error moves
  the epoch on (1, 2, ... wrapping to 1); later requests name only the partitions added since
  (and those with acknowledgements) and list removed ones as forgotten; epoch -1 closes the
  session (close()). SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
  SHARE_SESSION_LIMIT_REACHED or a lost connection start a new session (epoch 0).
- Acknowledgements are kept per partition (offset -> type: 1 ACCEPT, 2 RELEASE, 3 REJECT,
  4 RENEW, and 0 GAP for an offset inside an acquired range that holds no record: a control
  record, a compacted or aborted one), and go to the broker that delivered the records,
  piggy-backed on the next ShareFetch or in a ShareAcknowledge (commit, close). They are sent
  as batches of consecutive offsets, with one type for the batch or one per offset. A session's
  first request (epoch 0) cannot carry any: they wait for the next one.
- A request with a RENEW acknowledgement (KIP-1222, v2 only) says IsRenewAck and, as a
  ShareFetch, asks for no records (every limit 0), as Kafka's client does. A renewed record is
  held again: the next poll returns it again, to be acknowledged once more.
- Only records inside the answer's AcquiredRecords ranges are delivered, each with the range's
  delivery count; the rest of a fetched batch belongs to other members.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from roster.client.records import decode_fetched
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.client")
E = ErrorCode

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
MAX_EPOCH = 2**31 - 1
SESSION_RESET = frozenset({E.share_session_not_found, E.invalid_share_session_epoch,
                           E.share_session_limit_reached})
# a partition's leader moved: ask Metadata again (the acknowledgements for it are lost)
LEADER_MOVED = frozenset({E.not_leader_or_follower, E.fenced_leader_epoch,
                          E.unknown_leader_epoch, E.leader_not_available,
                          E.unknown_topic_or_partition, E.unknown_topic_id,
                          E.kafka_storage_error})
RENEW_FROM_VERSION = 2

TopicId = object                 # what the driver names topics by (uuid.UUID)
Key = tuple[TopicId, int]        # (topic id, partition)


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@frozen
class ShareRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    delivery_count: int     # 1 on the first delivery; more once released or timed out


class CannotAcknowledge(RuntimeError):
    """acknowledge() of a record this consumer does not hold right now (not delivered by the
    last poll, or acknowledged already). Kafka's client raises IllegalStateException."""


class AcknowledgementError(Exception):
    """The broker did not take a partition's acknowledgements (INVALID_RECORD_STATE when the
    acquisition lock had expired, for one)."""

    def __init__(self, error: ErrorCode, topic: str, partition: int,
                 message: str | None = None) -> None:
        self.error, self.topic, self.partition = error, topic, partition
        super().__init__(f"acknowledgements for {topic}-{partition} failed: "
                         f"{error.name.upper()}" + (f": {message}" if message else ""))


@frozen
class AckResult:
    """The outcome of one partition's acknowledgements (what the commit callback gets)."""

    topic: str
    partition: int
    offsets: dict      # offset -> AcknowledgeType
    error: ErrorCode = E.none
    message: str | None = None

    @property
    def exception(self) -> AcknowledgementError | None:
        if self.error is E.none:
            return None
        return AcknowledgementError(self.error, self.topic, self.partition, self.message)


@dataclass(slots=True)
class Session:
    epoch: int = INITIAL_EPOCH
    partitions: set = field(default_factory=set)   # what the broker's session fetches


@dataclass(slots=True)
class Exchange:
    """One request to a broker and what it carries, until its answer comes back."""

    node: int
    api: str                  # "ShareFetch" or "ShareAcknowledge"
    epoch: int
    acks: dict                # Key -> {offset: type}
    added: frozenset = frozenset()
    removed: frozenset = frozenset()
    renew: bool = False
    fields: dict = field(default_factory=dict)
    outcome: list = field(default_factory=list)   # the AckResults its answer gave


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


def ack_batches(types: dict[int, int]) -> list[tuple[int, int, tuple[int, ...]]]:
    """{offset: type} as (first, last, types) batches of consecutive offsets: one type when the
    whole batch has it, else one per offset."""
    batches: list[tuple[int, int, tuple[int, ...]]] = []
    run: list[tuple[int, int]] = []
    for offset in sorted(types):
        if run and offset != run[-1][0] + 1:
            batches.append(_batch(run))
            run = []
        run.append((offset, int(types[offset])))
    if run:
        batches.append(_batch(run))
    return batches


def _batch(run: list[tuple[int, int]]) -> tuple[int, int, tuple[int, ...]]:
    kinds = [t for _, t in run]
    same = all(t == kinds[0] for t in kinds)
    return run[0][0], run[-1][0], (kinds[0],) if same else tuple(kinds)


@dataclass(slots=True)
class FetchLimits:
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52_428_800
    max_records: int = 500
    acquire_mode: int = 0      # 0 batch_optimized, 1 record_limit (ShareFetch v2)


class ShareFetchCore:
    def __init__(self, group_id: str, member_id: str, limits: FetchLimits | None = None) -> None:
        self.group_id, self.member_id = group_id, member_id
        self.limits = limits or FetchLimits()
        self.sessions: dict[int, Session] = {}
        self.names: dict[TopicId, str] = {}          # topic id -> name
        self.holders: dict[Key, int] = {}              # partition -> broker its records came from
        self.waiting: list[tuple[Key, ShareRecord]] = []   # acquired, not yet returned
        self.delivered: dict[Key, dict[int, ShareRecord]] = {}   # returned, not acknowledged
        self.acks: dict[Key, dict[int, int]] = {}      # acknowledged, not yet sent
        self.renewing: dict[Key, dict[int, ShareRecord]] = {}    # RENEW not yet answered
        self.renewed: list[ShareRecord] = []           # renewed: the next poll returns them
        self.results: list[AckResult] = []             # answered acknowledgements, not yet told
        self.lock_timeout_ms: int | None = None        # the last AcquisitionLockTimeoutMs

    # -- what the application does ---------------------------------------------------------------

    def learn_topic(self, name: str, topic_id: TopicId) -> None:
        self.names[topic_id] = name

    def key_of(self, topic: str, partition: int) -> Key | None:
        for topic_id, name in self.names.items():
            if name == topic:
                key = (topic_id, partition)
                if key in self.delivered:
                    return key
        return None

    def held(self, topic: str, partition: int, offset: int) -> ShareRecord | None:
        """The record at that place, if the last poll returned it and it is unacknowledged."""
        key = self.key_of(topic, partition)
        return None if key is None else self.delivered[key].get(offset)

    def acknowledge(self, record: ShareRecord, kind: AcknowledgeType) -> None:
        kind = AcknowledgeType(kind)
        if kind is AcknowledgeType.GAP:
            raise ValueError("GAP is not an acknowledgement type for a delivered record")
        key = self.key_of(record.topic, record.partition)
        held = self.delivered.get(key) if key is not None else None
        if not held or record.offset not in held:
            raise CannotAcknowledge("The record cannot be acknowledged.")   # Kafka's words
        held.pop(record.offset)
        if not held:
            del self.delivered[key]
        self.acks.setdefault(key, {})[record.offset] = int(kind)
        if kind is AcknowledgeType.RENEW:
            self.renewing.setdefault(key, {})[record.offset] = record

    def acknowledge_all(self, kind: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Implicit acknowledgement: every record returned and not yet acknowledged."""
        for key, held in self.delivered.items():
            pending = self.acks.setdefault(key, {})
            for offset in held:
                pending[offset] = int(kind)
        self.delivered.clear()

    def take(self, limit: int) -> list[ShareRecord]:
        """Up to `limit` acquired records for the application (a poll's max.poll.records, as
        Kafka's client caps a poll); the rest wait for the next poll, their locks running."""
        taken, self.waiting = self.waiting[:limit], self.waiting[limit:]
        for key, record in taken:
            self.delivered.setdefault(key, {})[record.offset] = record
        return [record for _, record in taken]

    def forget_delivered(self) -> None:
        """The sessions are closed (unsubscribed): what was held is the broker's again."""
        self.waiting.clear()
        self.delivered.clear()
        self.renewing.clear()
        self.renewed.clear()

    def unacknowledged(self) -> int:
        return sum(len(held) for held in self.delivered.values())

    def has_renewals(self) -> bool:
        return bool(self.renewing) or bool(self.renewed)

    def take_renewed(self) -> list[ShareRecord]:
        """Records whose lock was renewed: held again, for the application to acknowledge."""
        records, self.renewed = self.renewed, []
        for record in records:
            key = self.key_of_any(record.topic, record.partition)
            if key is not None:
                self.delivered.setdefault(key, {})[record.offset] = record
        return records

    def key_of_any(self, topic: str, partition: int) -> Key | None:
        return next(((t, partition) for t, n in self.names.items() if n == topic), None)

    def nodes_with_acks(self) -> set[int]:
        return {self.holders[key] for key, acks in self.acks.items() if acks and key in self.holders}

    def drop_acks(self, node: int, error: ErrorCode, keys: Iterable[Key] | None = None) -> None:
        """The acknowledgements owed to `node` (for `keys`) cannot reach it any more: it is
        out of reach, or no longer leads the partition (its acquisitions went with it, as
        Kafka's client fails them). They are reported failed; the records come back."""
        wanted = None if keys is None else set(keys)
        dropped = {key: self.acks.pop(key) for key in list(self.acks)
                   if self.holders.get(key) == node and (wanted is None or key in wanted)}
        self._fail(dropped, error, f"broker {node} cannot take them")

    def take_results(self) -> list[AckResult]:
        results, self.results = self.results, []
        return results

    # -- requests ------------------------------------------------------------------------------

    def session(self, node: int) -> Session:
        return self.sessions.setdefault(node, Session())

    def _take_acks(self, node: int, keys: Iterable[Key] | None, version: int) -> dict:
        """The acknowledgements for `node` (only those of `keys` when given), removed from
        pending. RENEW cannot go in a v1 request: those fail at once (UNSUPPORTED_VERSION) and
        their records are held again."""
        taken: dict[Key, dict[int, int]] = {}
        wanted = None if keys is None else set(keys)
        for key in list(self.acks):
            if self.holders.get(key) != node or (wanted is not None and key not in wanted):
                continue
            acks = self.acks.pop(key)
            if version < RENEW_FROM_VERSION:
                renews = {o: t for o, t in acks.items() if t == AcknowledgeType.RENEW}
                if renews:
                    self._renew_refused(key, renews)
                    acks = {o: t for o, t in acks.items() if t != AcknowledgeType.RENEW}
            if acks:
                taken[key] = acks
        return taken

    def _renew_refused(self, key: Key, renews: dict) -> None:
        self.results.append(AckResult(self.names.get(key[0], "?"), key[1], renews,
                                      E.unsupported_version,
                                      "RENEW needs ShareFetch/ShareAcknowledge v2"))
        for offset in renews:
            record = self.renewing.get(key, {}).pop(offset, None)
            if record is not None:
                self.delivered.setdefault(key, {})[offset] = record
        if key in self.renewing and not self.renewing[key]:
            del self.renewing[key]

    def fetch_request(self, node: int, wanted: Iterable[Key], version: int,
                      wait_ms: int) -> Exchange:
        """The next ShareFetch to `node`, fetching from `wanted` (the assigned partitions it
        leads) and carrying the acknowledgements for them. A RENEW among them makes it an
        acknowledge-only fetch (IsRenewAck, no records asked for)."""
        session = self.session(node)
        wanted = frozenset(wanted)
        if session.epoch == INITIAL_EPOCH:
            listed, added, removed, acks = wanted, wanted, frozenset(), {}
        else:
            added = wanted - session.partitions
            removed = frozenset(session.partitions - wanted)
            acks = self._take_acks(node, wanted, version)
            listed = added | set(acks)
        renew = any(t == AcknowledgeType.RENEW for a in acks.values() for t in a.values())
        limits = self.limits
        fields = {
            "group_id": self.group_id, "member_id": self.member_id,
            "share_session_epoch": session.epoch,
            "max_wait_ms": 0 if renew else wait_ms,
            "min_bytes": 0 if renew else limits.min_bytes,
            "max_bytes": 0 if renew else limits.max_bytes,
            "max_records": 0 if renew else limits.max_records,
            "batch_size": 0 if renew else limits.max_records,
            "share_acquire_mode": limits.acquire_mode, "is_renew_ack": renew,
            "topics": _by_topic({key: ack_batches(acks.get(key, {})) for key in listed}),
            "forgotten_topics_data": _by_topic({key: None for key in removed}),
        }
        return Exchange(node, "ShareFetch", session.epoch, acks, added, removed, renew, fields)

    def acknowledge_request(self, node: int, version: int, final: bool = False,
                            keys: Iterable[Key] | None = None) -> Exchange | None:
        """A ShareAcknowledge with `node`'s pending acknowledgements (of `keys` when given);
        `final` closes the session (epoch -1). None when there is nothing to send: no
        acknowledgement (and, closing, no session), or a session not yet open (epoch 0: its
        acknowledgements fail, the broker could not take them)."""
        session = self.sessions.get(node)
        acks = self._take_acks(node, keys, version)
        if session is None or session.epoch == INITIAL_EPOCH:
            self._fail(acks, E.invalid_share_session_epoch, "no open share session")
            return None
        if not acks and not final:
            return None
        renew = any(t == AcknowledgeType.RENEW for a in acks.values() for t in a.values())
        epoch = FINAL_EPOCH if final else session.epoch
        fields = {"group_id": self.group_id, "member_id": self.member_id,
                  "share_session_epoch": epoch, "is_renew_ack": renew,
                  "topics": _by_topic({key: ack_batches(a) for key, a in acks.items()})}
        return Exchange(node, "ShareAcknowledge", epoch, acks, renew=renew, fields=fields)

    # -- answers -------------------------------------------------------------------------------

    def on_failure(self, exchange: Exchange, error: ErrorCode = E.network_exception) -> None:
        """No answer (the connection was lost): the session starts again; what the request
        carried is reported failed."""
        self.sessions.pop(exchange.node, None)
        self._fail(exchange.acks, error, "no answer from the broker", exchange.outcome)

    def on_acknowledge_answer(self, exchange: Exchange, answer) -> set[Key]:
        """A ShareAcknowledge answer. Returns the partitions whose leader moved."""
        top = answer.error_code
        if not self._session_answer(exchange, top):
            self._fail(exchange.acks, top, answer.error_message, exchange.outcome)
            return set()
        self._lock_timeout(answer)
        errors = {(t.topic_id, p.partition_index): (p.error_code, p.error_message)
                  for t in answer.responses for p in t.partitions}
        return self._acks_answered(exchange.acks, errors, exchange.outcome)

    def on_fetch_answer(self, exchange: Exchange, answer) -> tuple[list[ShareRecord], set[Key]]:
        """A ShareFetch answer: the records acquired for this member (in each partition's
        order; they wait for take()), and the partitions whose leader moved."""
        top = answer.error_code
        if not self._session_answer(exchange, top):
            self._fail(exchange.acks, top, answer.error_message, exchange.outcome)
            return [], set()
        self._lock_timeout(answer)
        session = self.session(exchange.node)
        session.partitions = (session.partitions | exchange.added) - exchange.removed
        records: list[ShareRecord] = []
        moved: set[Key] = set()
        ack_errors = {}
        for topic in answer.responses:
            name = self.names.get(topic.topic_id)
            for part in topic.partitions:
                key = (topic.topic_id, part.partition_index)
                ack_errors[key] = (_error(part.acknowledge_error_code),
                                   part.acknowledge_error_message)
                if part.error_code in LEADER_MOVED:
                    moved.add(key)
                    continue
                if part.error_code is not E.none:
                    log.warning("ShareFetch %s-%d: %s %s", name, part.partition_index,
                                part.error_code.name, part.error_message or "")
                    continue
                if name is None or not part.acquired_records:
                    continue
                acquired = self._acquired(exchange.node, key, name, part)
                self.waiting += [(key, record) for record in acquired]
                records += acquired
        moved |= self._acks_answered(exchange.acks, ack_errors, exchange.outcome)
        return records, moved

    def _session_answer(self, exchange: Exchange, top: ErrorCode) -> bool:
        """Move the session on after an answer; False when the whole request failed."""
        if top is E.none:
            if exchange.epoch == FINAL_EPOCH:
                self.sessions.pop(exchange.node, None)
            else:
                self.session(exchange.node).epoch = next_epoch(exchange.epoch)
            return True
        if top in SESSION_RESET:
            log.info("share session with broker %d: %s; starting a new one", exchange.node,
                     top.name)
            self.sessions.pop(exchange.node, None)
        return False

    def _lock_timeout(self, answer) -> None:
        timeout = getattr(answer, "acquisition_lock_timeout", None)
        if timeout is not None:
            self.lock_timeout_ms = round(timeout.total_seconds() * 1000)

    def _acquired(self, node: int, key: Key, name: str, part) -> list[ShareRecord]:
        fetched = {}
        if part.records:
            decoded, _ = decode_fetched(name, part.partition_index, part.records)
            fetched = {r.offset: r for r in decoded}
        out: list[ShareRecord] = []
        gaps = {}
        self.holders[key] = node
        for acquired in part.acquired_records:
            for offset in range(acquired.first_offset, acquired.last_offset + 1):
                record = fetched.get(offset)
                if record is None:
                    gaps[offset] = int(AcknowledgeType.GAP)
                    continue
                share = ShareRecord(name, part.partition_index, offset, record.timestamp,
                                    record.key, record.value, record.headers,
                                    acquired.delivery_count)
                out.append(share)
        if gaps:
            self.acks.setdefault(key, {}).update(gaps)
        out.sort(key=lambda r: r.offset)
        return out

    def _acks_answered(self, sent: dict, errors: dict, into: list) -> set[Key]:
        moved = set()
        for key, acks in sent.items():
            error, message = errors.get(key, (E.none, None))
            if error in LEADER_MOVED:
                moved.add(key)
            self._result(key, acks, error, message, into)
        return moved

    def _fail(self, sent: dict, error: ErrorCode, message: str | None,
              into: list | None = None) -> None:
        for key, acks in sent.items():
            self._result(key, acks, error, message, into)

    def _result(self, key: Key, acks: dict, error: ErrorCode, message: str | None,
                into: list | None = None) -> None:
        told = {o: AcknowledgeType(t) for o, t in acks.items() if t != AcknowledgeType.GAP}
        renewing = self.renewing.get(key, {})
        for offset, kind in acks.items():
            if kind == AcknowledgeType.RENEW:
                record = renewing.pop(offset, None)
                if record is not None and error is E.none:
                    self.renewed.append(record)
        if key in self.renewing and not self.renewing[key]:
            del self.renewing[key]
        if told:
            result = AckResult(self.names.get(key[0], "?"), key[1], told, error, message)
            self.results.append(result)
            if into is not None:
                into.append(result)


def _error(code) -> ErrorCode:
    return code if isinstance(code, ErrorCode) else ErrorCode(int(code))


def _by_topic(per_partition: dict) -> list[tuple[TopicId, list[tuple[int, object]]]]:
    """{(topic id, partition): x} as [(topic id, [(partition, x), ...]), ...], sorted."""
    topics: dict = {}
    for (topic_id, partition), value in sorted(per_partition.items(),
                                               key=lambda kv: (str(kv[0][0]), kv[0][1])):
        topics.setdefault(topic_id, []).append((partition, value))
    return list(topics.items())
