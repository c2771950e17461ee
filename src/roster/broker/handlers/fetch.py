"""Fetch (1), v0-18: whole record batches, with MaxWaitMs/MinBytes as a real long poll.

The request waits until MinBytes have accumulated across its partitions or MaxWaitMs passes; any
append to one of its partitions wakes it to look again. MaxBytes bounds the whole response and
PartitionMaxBytes each partition, except that the first batch found is always returned whole so a
consumer can make progress past a batch larger than its limits (KIP-74).

isolation_level=READ_COMMITTED (v4+) reads only up to the partition's last stable offset and
answers with the aborted transactions of the range read (PartitionLog.read_committed); the client
drops their batches and the control batches itself. READ_UNCOMMITTED reads up to the high
watermark, and both report the last stable offset.

Incremental fetch sessions (KIP-227) are not offered: the answer's SessionId is 0, which tells
clients to keep sending full fetches. A request naming a session therefore gets
FETCH_SESSION_ID_NOT_FOUND and the client starts over without one.

v0-3 (dropped by Kafka 4.0; Burrow's default profile fetches with v0, sarama at 0.10.x with v2-3)
are served by this same handler through roster.protocol.classic, answering with message sets in
the format the version reads (magic 0 for v0-1, magic 1 for v2-3), down-converted from the stored
batches by roster.broker.partitions.message_formats as Kafka 3.9 did. The limits (PartitionMaxBytes,
MaxBytes from v3) count the converted bytes, and the first message may exceed them. v0-2 have
no MaxBytes (Kafka took Int.MaxValue).
"""
from __future__ import annotations

import time

from roster.broker.network.admission import partition_error, resolve_again
from roster.broker.network.classic_versions import serving
from roster.broker.partitions.message_formats import down_convert
from roster.log.api import OffsetOutOfRange
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, NotAResource, Topics

API_KEY = ApiKey.FETCH
READ_COMMITTED = 1
KIO_FROM = 4  # v0-3: roster.protocol.classic


def message_format(version: int) -> int | None:
    """The magic a Fetch version reads, when it is older than the stored batches' (2)."""
    return 0 if version <= 1 else 1 if version <= 3 else None


# v0-12 name topics; v13+ only by id (kio: the zero id is None)
TOPICS = Topics(AclOperation.READ, name="topic")


class _PartitionRead:
    __slots__ = ("index", "error", "high_watermark", "log_start_offset", "records",
                 "last_stable_offset", "aborted")

    def __init__(self, index, error=ErrorCode.none, high_watermark=-1, log_start_offset=-1,
                 records=b"", last_stable_offset=-1):
        self.index = index
        self.error = error
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset
        self.records = records
        self.last_stable_offset = last_stable_offset
        self.aborted = ()


def _read_all(broker, body, resolved, magic=None) -> tuple[list, int, bool]:
    """One pass over every requested partition: (per-topic reads, bytes read, any error).
    `magic`: the old message format to answer in (Fetch v0-3), None for stored batches as they
    are."""
    budget = body.max_bytes
    committed = getattr(body, "isolation_level", 0) == READ_COMMITTED
    total = 0
    failed = False
    reads = []
    for wanted, admitted in resolved:
        topic = admitted[0]
        partition_reads = []
        for requested in wanted.partitions:
            index = requested.partition
            error = partition_error(admitted, index)
            if error is not ErrorCode.none:
                read = _PartitionRead(index, error)
            else:
                log = topic.partitions[index]
                read = _PartitionRead(index, high_watermark=log.log_end_offset,
                                      log_start_offset=log.log_start_offset,
                                      last_stable_offset=log.last_stable_offset)
                if budget > 0 or total == 0:
                    limit = min(requested.partition_max_bytes, max(budget, 1))
                    try:
                        if committed:
                            data, read.aborted = log.read_committed(requested.fetch_offset, limit)
                        else:
                            data = log.read(requested.fetch_offset, limit)
                    except OffsetOutOfRange:
                        read.error = ErrorCode.offset_out_of_range
                        data = b""
                    if magic is not None and data:
                        data, read.error = down_convert(data, magic, requested.fetch_offset, limit)
                    if data and total > 0 and len(data) > budget:
                        data = b""  # only the very first batch may exceed the limits
                    read.records = data
                    total += len(data)
                    budget -= len(data)
            failed = failed or read.error is not ErrorCode.none
            partition_reads.append(read)
        reads.append((wanted, partition_reads))
    return reads, total, failed


async def handle(broker, request, connection):
    body = request.body
    version = request.api_version
    # v0-3 are answered from v4's entity, which has every field they have (classic.py)
    schema = response_schema(API_KEY, max(version, KIO_FROM))
    magic = message_format(version)
    if version >= 7 and body.session_id != 0:
        return make(schema, error_code=ErrorCode.fetch_session_id_not_found, session_id=0,
                    responses=(), node_endpoints=())
    deadline = time.monotonic() + body.max_wait.total_seconds()
    admission = request.admission
    resolved = [(wanted, admission.topic(t)) for t, wanted in enumerate(body.topics)]
    while True:
        reads, total, failed = _read_all(broker, body, resolved, magic)
        remaining = deadline - time.monotonic()
        keys = [(admitted[0].name, p.partition) for wanted, admitted in resolved
                if admitted[0] is not None for p in wanted.partitions]
        if total >= body.min_bytes or failed or remaining <= 0 or not keys:
            break
        await broker.waiters.wait(keys, remaining)
        # Looked up again on every pass: a topic deleted during the long poll is gone, and its
        # closed logs must not be read.
        resolved = [(wanted, resolve_again(broker, TOPICS, wanted, admission.topic(t)))
                    for t, wanted in enumerate(body.topics)]
    return _response(schema, body, reads)


def _response(schema, body, reads):
    topic_entry = element(schema, "responses")
    partition_entry = element(topic_entry, "partitions")
    aborted_entry = element(partition_entry, "aborted_transactions")
    committed = body.isolation_level == READ_COMMITTED
    responses = tuple(
        make(topic_entry, topic=getattr(wanted, "topic", None),
             topic_id=getattr(wanted, "topic_id", None),
             partitions=tuple(
                 make(partition_entry, partition_index=r.index, error_code=r.error,
                      high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                      log_start_offset=r.log_start_offset,
                      aborted_transactions=tuple(
                          make(aborted_entry, producer_id=t.producer_id,
                               first_offset=t.first_offset) for t in r.aborted)
                      if committed else None,
                      preferred_read_replica=-1, records=r.records)
                 for r in partition_reads))
        for wanted, partition_reads in reads)
    return make(schema, error_code=ErrorCode.none, session_id=0, responses=responses,
                node_endpoints=())


SPEC = ApiSpec(API_KEY, "Fetch", 0, 18, handle, raw=serving(API_KEY, KIO_FROM, handle),
               resources=(TOPICS, NotAResource("forgotten_topics_data", "fetch sessions' "
                                               "partitions to forget: none is read",
                                               versions=(7, 18))))
