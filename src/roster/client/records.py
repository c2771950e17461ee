"""Record batches for the client side, through a maintained record codec (roster.record_codec:
aiokafka's compiled one, with gzip, snappy, lz4 and zstd) rather than hand-written varint loops."""
from __future__ import annotations


from roster.frozen import frozen
from roster.record_codec import DefaultRecordBatchBuilder, MemoryRecords

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@frozen
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


@frozen
class OutgoingRecord:
    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int | None = None


def encode_batch(records: list[OutgoingRecord], compression: str, now_ms: int, *,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 transactional: bool = False) -> bytes:
    """One magic-v2 batch; a transactional producer passes its id, epoch and the partition's
    next sequence."""
    if compression not in CODECS:
        raise ValueError(f"unknown compression {compression!r}; use one of {sorted(CODECS)}")
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODECS[compression], is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        batch_size=1 << 30)
    for delta, record in enumerate(records):
        builder.append(delta, timestamp=record.timestamp_ms if record.timestamp_ms is not None
                       else now_ms, key=record.key, value=record.value,
                       headers=list(record.headers))
    return bytes(builder.build())


class CorruptRecords(ValueError):
    """A Fetch answer held record bytes that do not decode (as Kafka's consumers raise a
    CorruptRecordException): the partition, and what the codec said."""


def decode_fetched(topic: str, partition: int, data: bytes,
                   aborted: list[tuple[int, int]] | None = None
                   ) -> tuple[list[ConsumerRecord], int]:
    """Every data record of a Fetch response's whole batches, and the offset after the last
    batch (-1 when there is none): control batches and compacted gaps hold no record to
    return, yet the next Fetch must start past them. CorruptRecords when a batch does not
    decode.

    `aborted` is a read_committed answer's aborted transactions, (producer id, first offset):
    a transactional batch of such a producer from that offset on is dropped, until the
    producer's abort marker (Kafka's consumer does the same)."""
    records: list[ConsumerRecord] = []
    following = -1
    skipping = AbortedTransactions(aborted or ())
    try:
        batches = MemoryRecords(data)
        while (batch := batches.next_batch()) is not None:
            after = getattr(batch, "next_offset", None)
            if skipping.drops(batch):
                pass
            elif not batch.is_control_batch:
                for record in batch:
                    records.append(ConsumerRecord(
                        topic, partition, record.offset, record.timestamp, record.key,
                        record.value, tuple(record.headers)))
                    following = max(following, record.offset + 1)
            if after is not None:
                following = max(following, after)
    # The codec and the decompressors under it each raise their own types on damaged bytes
    # (SystemError, EOFError, zlib.error, lz4's and snappy's errors, UnicodeDecodeError, ...).
    except Exception as exc:  # noqa: BLE001
        raise CorruptRecords(f"{topic}[{partition}]: fetched records after offset "
                             f"{following} do not decode: {exc!r}") from exc
    return records, following


class AbortedTransactions:
    """Which transactional batches a read_committed reader drops: those of a producer whose
    aborted transaction starts at or before the batch, up to that producer's abort marker."""

    def __init__(self, aborted) -> None:
        self._waiting = sorted(aborted, key=lambda a: a[1])   # by first offset
        self._open: set[int] = set()

    def drops(self, batch) -> bool:
        # only a transactional batch can be dropped (old-format batches have no such flag);
        # the aborted transactions that start before it are opened lazily, offsets only grow
        if not (self._waiting or self._open) or not getattr(batch, "is_transactional", False):
            return False
        last = batch.base_offset + batch.last_offset_delta
        while self._waiting and self._waiting[0][1] <= last:
            self._open.add(self._waiting.pop(0)[0])
        if batch.producer_id not in self._open:
            return False
        if batch.is_control_batch and _is_abort_marker(batch):
            self._open.discard(batch.producer_id)
        return True


def _is_abort_marker(batch) -> bool:
    for record in batch:       # a marker holds one record: key = version int16, type int16
        key = record.key
        return key is not None and len(key) >= 4 and int.from_bytes(key[2:4], "big") == 0
    return False
