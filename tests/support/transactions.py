"""Transactions over the wire, one request at a time (the crash tests need exact control of
which write the broker dies after), and what a partition's log holds, markers included."""
from __future__ import annotations

import datetime
import time
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatchBuilder

from roster.log import batch as batches
from roster.log.control import read_marker
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from roster.record_codec import MemoryRecords
from tests.support.wire import Wire

WAIT_S = 30.0


def part(api_key: int, version: int, *path: str, **values):
    schema = request_schema(api_key, version)
    for name in path:
        schema = element(schema, name)
    return make(schema, **values)


def txn_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                        producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=None, value=value, headers=[])
    return bytes(builder.build())


class TxnClient:
    """A transactional producer speaking the classic protocol request by request."""

    def __init__(self, bootstrap: str, transactional_id: str) -> None:
        self.wire = Wire(bootstrap)
        self.transactional_id = transactional_id
        self.producer_id, self.epoch, self.sequence = -1, -1, {}

    def close(self) -> None:
        self.wire.close()

    def find_coordinator(self, version: int = 4):
        return self.wire.call(ApiKey.FIND_COORDINATOR, version, key_type=1,
                              coordinator_keys=(self.transactional_id,))

    def init(self, timeout_ms: int = 60_000, version: int = 4) -> ErrorCode:
        answer = self.wire.call(ApiKey.INIT_PRODUCER_ID, version,
                                transactional_id=self.transactional_id,
                                transaction_timeout=datetime.timedelta(milliseconds=timeout_ms),
                                producer_id=-1, producer_epoch=-1)
        if answer.error_code is ErrorCode.none:
            self.producer_id, self.epoch, self.sequence = \
                answer.producer_id, answer.producer_epoch, {}
        return answer.error_code

    def init_until_done(self, **options) -> None:
        """InitProducerId, retried while the previous producer's transaction completes."""
        deadline = time.monotonic() + WAIT_S
        while (error := self.init(**options)) is ErrorCode.concurrent_transactions:
            assert time.monotonic() < deadline, "the open transaction never completed"
        assert error is ErrorCode.none, error

    def add(self, topic: str, *partitions: int, version: int = 3) -> list[ErrorCode]:
        answer = self.wire.call(
            ApiKey.ADD_PARTITIONS_TO_TXN, version,
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=(part(ApiKey.ADD_PARTITIONS_TO_TXN, version,
                                      "v3_and_below_topics", name=topic,
                                      partitions=partitions),))
        return [p.partition_error_code for t in answer.results_by_topic_v3_and_below
                for p in t.results_by_partition]

    def produce(self, topic: str, partition: int, values: list[bytes],
                epoch: int | None = None) -> ErrorCode:
        epoch = self.epoch if epoch is None else epoch
        sequence = self.sequence.get((topic, partition), 0)
        answer = self.wire.call(
            ApiKey.PRODUCE, 9, transactional_id=self.transactional_id, acks=-1,
            timeout=datetime.timedelta(seconds=10), topic_data=(part(
                ApiKey.PRODUCE, 9, "topic_data", name=topic, partition_data=(part(
                    ApiKey.PRODUCE, 9, "topic_data", "partition_data", index=partition,
                    records=txn_batch(self.producer_id, epoch, sequence, values)),)),))
        [error] = [p.error_code for r in answer.responses for p in r.partition_responses]
        if error is ErrorCode.none:
            self.sequence[(topic, partition)] = sequence + len(values)
        return error

    def add_offsets(self, group_id: str, version: int = 3) -> ErrorCode:
        return self.wire.call(ApiKey.ADD_OFFSETS_TO_TXN, version,
                              transactional_id=self.transactional_id,
                              producer_id=self.producer_id, producer_epoch=self.epoch,
                              group_id=group_id).error_code

    def commit_offsets(self, group_id: str, topic: str, offsets: dict[int, int],
                       member: Member | None = None, version: int = 3) -> list[ErrorCode]:
        """TxnOffsetCommit of {partition: offset}, as `member` (None: naming no member)."""
        answer = self.wire.call(
            ApiKey.TXN_OFFSET_COMMIT, version, transactional_id=self.transactional_id,
            group_id=group_id, producer_id=self.producer_id, producer_epoch=self.epoch,
            generation_id=member.generation if member else -1,
            member_id=member.member_id if member else "",
            group_instance_id=member.instance_id if member else None,
            topics=(part(ApiKey.TXN_OFFSET_COMMIT, version, "topics", name=topic,
                         partitions=tuple(part(ApiKey.TXN_OFFSET_COMMIT, version, "topics",
                                               "partitions", partition_index=p,
                                               committed_offset=o, committed_leader_epoch=-1,
                                               committed_metadata="")
                                          for p, o in offsets.items())),))
        return [p.error_code for t in answer.topics for p in t.partitions]

    def end(self, commit: bool, version: int = 3) -> ErrorCode:
        return self.wire.call(ApiKey.END_TXN, version, transactional_id=self.transactional_id,
                              producer_id=self.producer_id, producer_epoch=self.epoch,
                              committed=commit).error_code


@dataclass(frozen=True)
class Member:
    member_id: str
    generation: int
    instance_id: str | None = None


def join_alone(bootstrap: str, group_id: str, instance_id: str | None = None,
               member_id: str = "") -> Member:
    """JoinGroup + SyncGroup (v5/v3) of a group this member is alone in: it leads and is given
    nothing (the group only has to exist with this member and generation)."""
    with Wire(bootstrap) as wire:
        while True:
            joined = wire.call(
                ApiKey.JOIN_GROUP, 5, group_id=group_id,
                session_timeout=datetime.timedelta(seconds=30),
                rebalance_timeout=datetime.timedelta(seconds=30), member_id=member_id,
                group_instance_id=instance_id, protocol_type="consumer",
                protocols=(part(ApiKey.JOIN_GROUP, 5, "protocols", name="range",
                                metadata=b""),))
            if joined.error_code is ErrorCode.member_id_required:
                member_id = joined.member_id
                continue
            assert joined.error_code is ErrorCode.none, joined.error_code
            break
        synced = wire.call(ApiKey.SYNC_GROUP, 3, group_id=group_id,
                           generation_id=joined.generation_id, member_id=joined.member_id,
                           group_instance_id=instance_id, assignments=())
        assert synced.error_code is ErrorCode.none, synced.error_code
    return Member(joined.member_id, joined.generation_id, instance_id)


def fetch_offsets(bootstrap: str, group_id: str, topic: str, partitions,
                  require_stable: bool = False) -> dict[int, object]:
    """OffsetFetch v7: {partition: offset, or the partition's error}."""
    with Wire(bootstrap) as wire:
        answer = wire.call(ApiKey.OFFSET_FETCH, 7, group_id=group_id,
                           require_stable=require_stable, topics=(part(
                               ApiKey.OFFSET_FETCH, 7, "topics", name=topic,
                               partition_indexes=tuple(partitions)),))
    assert answer.error_code is ErrorCode.none, answer.error_code
    return {p.partition_index: p.committed_offset if p.error_code is ErrorCode.none
            else p.error_code for t in answer.topics for p in t.partitions}


def create_topics(bootstrap: str, *names: str, partitions: int = 1) -> None:
    from roster.admin.client import AdminClient
    from roster.admin.topics import create
    with AdminClient(bootstrap) as admin:
        for name in names:
            create(admin, name, partitions, {})


def log_entries(bootstrap: str, topic: str, partition: int = 0) -> list[tuple]:
    """Every batch of the partition from offset 0, in order: ("commit"/"abort", producer id,
    epoch) for a marker, ("data", producer id, [values]) otherwise."""
    entries, offset = [], 0
    with Wire(bootstrap) as wire:
        while True:
            answer = wire.call(ApiKey.FETCH, 12, max_wait=datetime.timedelta(0),
                               min_bytes=0, forgotten_topics_data=(), isolation_level=0,
                               max_bytes=1 << 20, topics=(part(
                                   ApiKey.FETCH, 12, "topics", topic=topic, partitions=(part(
                                       ApiKey.FETCH, 12, "topics", "partitions",
                                       partition=partition, fetch_offset=offset,
                                       partition_max_bytes=1 << 20),)),))
            [data] = [p for r in answer.responses for p in r.partitions]
            assert data.error_code is ErrorCode.none, data.error_code
            records = data.records or b""
            if not records:
                return entries
            pos = 0
            while pos + batches.BATCH_HEADER_SIZE <= len(records):
                header = batches.parse_header(records, pos)
                if pos + header.size > len(records):
                    break
                raw = bytes(records[pos:pos + header.size])
                marker = read_marker(raw)
                if marker is not None:
                    entries.append(("commit" if marker.commit else "abort",
                                    header.producer_id, header.producer_epoch))
                else:
                    values = [r.value for r in MemoryRecords(raw).next_batch()]
                    entries.append(("data", header.producer_id, values))
                offset = header.next_offset
                pos += header.size


def wait_for(condition, what: str, timeout_s: float = WAIT_S):
    """Poll `condition` until it returns something truthy (the broker acts on its own clock)."""
    deadline = time.monotonic() + timeout_s
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return result
