"""Errors as each request version may be told them."""
from __future__ import annotations

from roster.protocol.errors import ErrorCode


def for_version(error: ErrorCode, version: int, fenced_from: int) -> ErrorCode:
    """PRODUCER_FENCED (KIP-588) reaches only the versions that know it (`fenced_from` on:
    InitProducerId v4, AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v2, TxnOffsetCommit v3);
    older clients are told INVALID_PRODUCER_EPOCH, as Kafka tells them."""
    if error is ErrorCode.producer_fenced and version < fenced_from:
        return ErrorCode.invalid_producer_epoch
    return error
