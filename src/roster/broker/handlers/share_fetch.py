"""ShareFetch (78), v1-2: a share consumer's fetch (KIP-932): acknowledgements first, then
records acquired for the member from each partition of its share session.

As Kafka 4.4's KafkaApis.handleShareFetchRequest and SharePartitionManager:
- a null group id is INVALID_REQUEST; READ on the group (GROUP_AUTHORIZATION_FAILED); the member
  id must be non-empty and at most 36 characters (INVALID_REQUEST); v2 with IsRenewAck must
  have MaxBytes, MinBytes, MaxRecords and MaxWaitMs all 0 (INVALID_REQUEST);
- the share session (roster.share.sessions): epoch 0 opens one (acknowledgements in it are
  INVALID_REQUEST), -1 acknowledges and closes it without fetching, others must be the
  session's next; errors answer the whole request, with no partitions. SHARE_SESSION_LIMIT_REACHED
  is answered after MaxWaitMs, as Kafka holds it, so a consumer does not spin;
- the piggy-backed acknowledgements are applied first and are durable before the answer
  (share_acknowledge.py has their rules); each partition's outcome is its
  AcknowledgeErrorCode, and a partition acknowledged but not otherwise in the answer is listed
  with just that;
- then each partition of the session is read from its share partition's next fetch offset
  (roster.broker.share) and what it can hand out is acquired for the member: up to MaxRecords
  across the partitions (ShareAcquireMode 1, record_limit (KIP-1206), stops at exactly
  MaxRecords; 0, batch_optimized, takes whole batches and may overshoot), up to MaxBytes
  (shared evenly between the partitions, the first batch always whole); another mode is
  UNKNOWN_SERVER_ERROR, as Kafka answers it. The answer carries the stored batches covering
  the acquired ranges, the AcquiredRecords (first, last, delivery count; cut once BatchSize
  records are reached, at a stored batch's end, as Kafka cuts new records) and
  AcquisitionLockTimeoutMs. The group's share.isolation.level read_committed reads up to the
  last stable offset and never hands out aborted transactions' records (they are left out of
  the acquired ranges, as Kafka archives them). Transaction markers are acquired like records,
  as Kafka acquires them: the consumer skips them and acknowledges their offsets as gaps;
- MaxWaitMs/MinBytes are a long poll: the request waits until MinBytes can be acquired, woken
  by appends to its partitions and by records becoming AVAILABLE again (released, or their
  lock expired: `available_key`), and acquires what there is when the wait ends;
- per partition: an unknown topic id is UNKNOWN_TOPIC_ID (and stays in the session until
  forgotten), READ on the topic TOPIC_AUTHORIZATION_FAILED, a partition the topic lacks
  UNKNOWN_TOPIC_OR_PARTITION; a partition whose share state was never initialised (no member
  of the group has been assigned it: the fetcher is not a member) UNKNOWN_SERVER_ERROR once the
  wait is over, as Kafka 4.4 answers it, its share coordinator refusing to read an
  uninitialised share partition. One broker leads every partition, so NOT_LEADER_OR_FOLLOWER
  (Kafka's answer while it sets such a partition up) and NodeEndpoints never occur;
- a full fetch (epoch 0) answers its failed partitions and those it handed records from, or,
  when it handed none, every partition it could read (as Kafka 4.4 answers, checked beside
  it); later fetches answer only the partitions with records or an error, and those new to
  the session.
Kafka does not check that the member belongs to the group here, and neither does roster: the
acquisition locks and the member id on the acquired records are what protect them.
"""
from __future__ import annotations

import asyncio
import datetime
import time
from dataclasses import replace   # of share.partition.Acquired, loaded with the share state

from roster.broker.handlers.share_acknowledge import (
    AckPartition,
    apply_acknowledgements,
    lock_timeout,
    read_acknowledgements,
    valid_member_id,
)
from roster.broker.network.admission import partition_error, resolve_topic
from roster.broker.share_sessions import available_key
from roster.log.api import OffsetOutOfRange
from roster.log.batch import iter_batches
from roster.log.control import read_marker
from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Group, NotAResource, Topics
from roster.share.sessions import FINAL_EPOCH

API_KEY = ApiKey.SHARE_FETCH
NONE = ErrorCode.none
NO_LOCK = datetime.timedelta(0)
RECORD_LIMIT = 1            # ShareAcquireMode (KIP-1206); 0 is batch_optimized
ACQUIRE_MODES = (0, RECORD_LIMIT)
READ_COMMITTED = "read_committed"

GROUP = Group(AclOperation.READ, route=False)
TOPICS = Topics(AclOperation.READ)   # entries name their topic by id only


def validate(request) -> ErrorCode | None:
    return ErrorCode.invalid_request if request.body.group_id is None else None


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=None, acquisition_lock_timeout=NO_LOCK, responses=(),
                node_endpoints=())


def renew_only_error(body) -> bool:
    """v2's IsRenewAck request fetches nothing: its limits must all be 0."""
    return bool(body.max_bytes or body.min_bytes or body.max_records
                or body.max_wait.total_seconds())


class _Read:
    """One partition of the fetch: where it stands and what a read of its log found."""
    __slots__ = ("topic_id", "index", "topic", "error", "initialised", "data", "batches",
                 "readable", "acquired", "records")

    def __init__(self, topic_id, index: int, topic, error: ErrorCode) -> None:
        self.topic_id = topic_id
        self.index = index
        self.topic = topic
        self.error = error
        self.initialised = False   # the share partition has a start offset
        self.data = b""
        self.batches: list = []    # (position, header) of the batches that may be handed out
        self.readable = 0          # their bytes
        self.acquired: list = []
        self.records = b""


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    if not valid_member_id(body.member_id):
        return refuse(request, ErrorCode.invalid_request)
    renew = version >= 2 and body.is_renew_ack
    if renew and renew_only_error(body):
        return refuse(request, ErrorCode.invalid_request)
    group_id, member_id = body.group_id, body.member_id
    acks = read_acknowledgements(request, version, renew)
    acknowledges = any(a.batches for a in acks)
    sessions = broker.share_sessions
    context = sessions.cache.begin_fetch(
        group_id, member_id, body.share_session_epoch,
        [(t.topic_id, p.partition_index) for t in body.topics for p in t.partitions],
        [(f.topic_id, index) for f in body.forgotten_topics_data for index in f.partitions],
        acknowledges, connection)
    if isinstance(context, ErrorCode):
        if context is ErrorCode.share_session_limit_reached:
            await asyncio.sleep(body.max_wait.total_seconds())
        return refuse(request, context)
    answers = (await apply_acknowledgements(broker, group_id, member_id, acks)
               if acknowledges else {})
    reads: list[_Read] = []
    mode = getattr(body, "share_acquire_mode", 0)
    if not (context.final or renew) and mode not in ACQUIRE_MODES:
        # Kafka fails the fetch on a mode it does not know, the session opened and the
        # acknowledgements applied: UNKNOWN_SERVER_ERROR (checked beside Kafka 4.4)
        return refuse(request, ErrorCode.unknown_server_error)
    if context.final:
        sessions.release(group_id, member_id)
    elif not renew:
        reads = [_admitted(broker, request, topic_id, index)
                 for topic_id, index in context.partitions]
        await _fetch(broker, body, group_id, member_id, reads)
        for read in reads:
            if read.error is NONE and not read.initialised:
                read.error = ErrorCode.unknown_server_error
    return _response(broker, request, context, reads, acks, answers)


def _admitted(broker, request, topic_id, index: int) -> _Read:
    """A session partition as this request may read it: known, allowed, existing."""
    topic, error = resolve_topic(broker, None, topic_id)
    if topic is not None and not request.admission.allows(AclOperation.READ,
                                                          ResourceType.TOPIC, topic.name):
        topic, error = None, ErrorCode.topic_authorization_failed
    error = partition_error((topic, error), index)
    return _Read(topic_id, index, topic if error is NONE else None, error)


async def _fetch(broker, body, group_id: str, member_id: str, reads: list[_Read]) -> None:
    """Read until MinBytes can be handed out or MaxWaitMs passes, then acquire."""
    state = getattr(broker, "share_state", None)
    readable = [r for r in reads if r.error is NONE] if state is not None else []
    if not readable:
        return
    committed = _isolation(broker, group_id) == READ_COMMITTED
    deadline = time.monotonic() + body.max_wait.total_seconds()
    keys = [k for r in readable for k in ((r.topic.name, r.index),
                                          available_key(group_id, r.topic_id, r.index))]
    while True:
        total = 0
        budget = max(body.max_bytes, 1) // len(readable) or 1
        for read in readable:
            _read_log(state, group_id, read, budget, committed)
            total += read.readable
        remaining = deadline - time.monotonic()
        if total >= body.min_bytes or remaining <= 0:
            if _acquire(broker, state, body, group_id, member_id, readable) or remaining <= 0:
                return
        await broker.waiters.wait(keys, remaining)
        # looked up again after every wait: a topic deleted meanwhile is gone, and its closed
        # logs must not be read
        for read in readable:
            topic = broker.topics.by_id(read.topic_id)
            if topic is None or read.index >= len(topic.partitions):
                read.topic, read.error = None, ErrorCode.unknown_topic_id
                read.data, read.batches, read.readable = b"", [], 0
            else:
                read.topic = topic
        readable = [r for r in readable if r.error is NONE]
        if not readable:
            return


def _isolation(broker, group_id: str) -> str:
    configs = getattr(broker, "group_configs", None)
    level = configs.own(group_id).get("share.isolation.level") if configs is not None else None
    return str(level or "read_uncommitted").lower()


def _read_log(state, group_id: str, read: _Read, max_bytes: int, committed: bool) -> None:
    """What the share partition could hand out now: the batches from its next fetch offset."""
    read.data, read.batches, read.readable = b"", [], 0
    key = (group_id, read.topic_id, read.index)
    if state.start_offset(key) is None:
        return   # not initialised: the group has not been assigned this partition yet
    read.initialised = True
    log = read.topic.partitions[read.index]
    offset = max(state.next_fetch_offset(key), log.log_start_offset)
    try:
        if committed:
            data, aborted = log.read_committed(offset, max_bytes)
        else:
            data, aborted = log.read(offset, max_bytes), ()
    except OffsetOutOfRange:
        return
    skipped = _aborted_batches(data, aborted) if aborted else set()
    read.data = data
    for position, header in iter_batches(data):
        if header.last_offset < offset or position in skipped:
            continue
        read.batches.append((position, header))
        read.readable += header.size


def _aborted_batches(data: bytes, aborted) -> set[int]:
    """The positions of the batches of aborted transactions in `data` (a read_committed read
    with its aborted transactions: a producer's batches from its aborted transaction's first
    offset up to its abort marker), as Kafka's consumers and share partitions tell them."""
    waiting = sorted(aborted, key=lambda a: a.first_offset)
    open_aborts: set[int] = set()
    found: set[int] = set()
    for position, header in iter_batches(data):
        while waiting and waiting[0].first_offset <= header.last_offset:
            open_aborts.add(waiting.pop(0).producer_id)
        if header.is_control:
            marker = read_marker(bytes(data[position:position + header.size]))
            if marker is not None and not marker.commit:
                open_aborts.discard(header.producer_id)
        elif header.is_transactional and header.producer_id in open_aborts:
            found.add(position)
    return found


def _acquire(broker, state, body, group_id: str, member_id: str, reads: list[_Read]) -> bool:
    """Acquire for the member what each read found, MaxRecords across the partitions: whether
    anything was acquired."""
    strict = getattr(body, "share_acquire_mode", 0) == RECORD_LIMIT
    left = body.max_records
    now = broker.now_ms()
    any_acquired = False
    for read in reads:
        read.acquired, read.records = [], b""
        if not read.batches or left <= 0:
            continue
        acquired = state.acquire((group_id, read.topic_id, read.index), member_id,
                                 [(h.base_offset, h.last_offset) for _, h in read.batches],
                                 left, strict, now)
        if not acquired:
            continue
        read.acquired = _split(acquired, read.batches, body.batch_size)
        left -= sum(a.last_offset - a.first_offset + 1 for a in read.acquired)
        read.records = _covering(read, read.acquired[0].first_offset,
                                 read.acquired[-1].last_offset)
        any_acquired = True
    return any_acquired


def _split(acquired, batches, batch_size: int) -> list:
    """The acquired runs cut into AcquiredRecords of about BatchSize records, at the stored
    batches' boundaries (Kafka's SharePartition.createBatches: a cut once a run has reached
    BatchSize, at the end of the batch that got it there)."""
    if batch_size <= 0:
        return list(acquired)
    cut = []
    for run in acquired:
        start, taken = run.first_offset, 0
        for _, header in batches:
            first = max(header.base_offset, start)
            last = min(header.last_offset, run.last_offset)
            if last < first:
                continue
            taken += last - first + 1
            if taken >= batch_size and last < run.last_offset:
                cut.append(replace(run, first_offset=start, last_offset=last))
                start, taken = last + 1, 0
        cut.append(replace(run, first_offset=start))
    return cut


def _covering(read: _Read, first: int, last: int) -> bytes:
    """The stored batches from the one holding `first` to the one holding `last`, as read
    (Kafka's ShareFetchUtils.maybeSliceFetchRecords)."""
    start = end = None
    for position, header in read.batches:
        if header.last_offset >= first and start is None:
            start = position
        if header.base_offset <= last:
            end = position + header.size
    if start is None or end is None or end <= start:
        return b""
    return bytes(read.data[start:end])


def _response(broker, request, context, reads: list[_Read], acks: list[AckPartition],
              answers: dict):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    topic_entry = element(schema, "responses")
    partition_entry = element(topic_entry, "partitions")
    leader_entry = element(partition_entry, "current_leader")
    acquired_entry = element(partition_entry, "acquired_records")
    leader = make(leader_entry, leader_id=0, leader_epoch=0)   # as Kafka leaves it
    by_topic: dict = {}

    def entry(topic_id, index, error, ack_answer, records=b"", acquired=()):
        ack_error, ack_message = ack_answer
        by_topic.setdefault(topic_id, []).append(make(
            partition_entry, partition_index=index, error_code=error, error_message=None,
            acknowledge_error_code=int(ack_error), acknowledge_error_message=ack_message,
            current_leader=leader, records=records, acquired_records=tuple(
                make(acquired_entry, first_offset=a.first_offset, last_offset=a.last_offset,
                     delivery_count=a.delivery_count) for a in acquired)))

    session = context.session
    any_acquired = any(read.acquired for read in reads)
    for read in reads:
        failed = read.error is not NONE
        # Kafka's fetch answers its failed partitions and those it handed records from, or,
        # when it handed none, every partition it could read; a later fetch of a session then
        # keeps only those with records, an error, or new to the session
        if not (failed or (bool(read.acquired) if any_acquired else read.initialised)):
            continue
        if not context.full and not session.in_answer((read.topic_id, read.index),
                                                      bool(read.acquired), failed):
            continue
        ack_answer = answers.pop((read.topic_id, read.index), (NONE, None))
        entry(read.topic_id, read.index, read.error, ack_answer, read.records, read.acquired)
    for (topic_id, index), ack_answer in answers.items():
        entry(topic_id, index, NONE, ack_answer)
    return make(schema, error_code=NONE, error_message=None,
                acquisition_lock_timeout=lock_timeout(broker, body.group_id),
                responses=tuple(make(topic_entry, topic_id=topic_id, partitions=tuple(ps))
                                for topic_id, ps in by_topic.items()),
                node_endpoints=())


SPEC = ApiSpec(API_KEY, "ShareFetch", 1, 2, handle, validate=validate, refuse=refuse,
               resources=(GROUP, TOPICS,
                          NotAResource("forgotten_topics_data", "partitions to drop from the "
                                       "share session: nothing is read from them")))
