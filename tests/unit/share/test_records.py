"""__share_group_state records byte for byte as Kafka 4.4.0 writes them: the expected bytes were
printed by kafka-share-coordinator 4.4.0's generated ShareSnapshotKey/Value and
ShareUpdateKey/Value (MessageUtil.toCoordinatorTypePrefixedBytes for keys,
toVersionPrefixedBytes(0) for values) for the same fields; decoding gives the fields back."""
from roster.share.partition import StateBatch
from roster.share.records import SNAPSHOT, UPDATE, ShareRecord, decode
from roster.share.states import RecordState

TOPIC = bytes.fromhex("0102030405060708090a0b0c0d0e0f10")
KAFKA_SNAPSHOT_KEY = "0000000267310102030405060708090a0b0c0d0e0f1000000003"
KAFKA_UPDATE_KEY = "0001000267310102030405060708090a0b0c0d0e0f1000000003"
KAFKA_SNAPSHOT_VALUE = (
    "0000000000040000000100000000000000000000000500000000000003e800000000000007d003000000000000"
    "0005000000000000000902000100000000000000000a000000000000000c0000030001000400000005")
KAFKA_UPDATE_VALUE = "00000000000400000000ffffffffffffffff0200000000000000070000000000000007040002" \
    "0000"

SNAPSHOT_RECORD = ShareRecord(
    SNAPSHOT, "g1", TOPIC, 3, start_offset=5,
    batches=(StateBatch(5, 9, RecordState.ACKNOWLEDGED, 1),
             StateBatch(10, 12, RecordState.AVAILABLE, 3)),
    snapshot_epoch=4, state_epoch=1, leader_epoch=0, create_ms=1000, write_ms=2000,
    delivery_complete_count=5)
UPDATE_RECORD = ShareRecord(UPDATE, "g1", TOPIC, 3, start_offset=-1,
                            batches=(StateBatch(7, 7, RecordState.ARCHIVED, 2),),
                            snapshot_epoch=4)


def test_records_are_kafkas_bytes():
    assert [part.hex() for part in SNAPSHOT_RECORD.encode()] == [KAFKA_SNAPSHOT_KEY,
                                                                 KAFKA_SNAPSHOT_VALUE]
    assert [part.hex() for part in UPDATE_RECORD.encode()] == [KAFKA_UPDATE_KEY,
                                                               KAFKA_UPDATE_VALUE]


def test_kafkas_bytes_decode_to_the_fields():
    assert decode(bytes.fromhex(KAFKA_SNAPSHOT_KEY),
                  bytes.fromhex(KAFKA_SNAPSHOT_VALUE)) == SNAPSHOT_RECORD
    assert decode(bytes.fromhex(KAFKA_UPDATE_KEY),
                  bytes.fromhex(KAFKA_UPDATE_VALUE)) == UPDATE_RECORD
    tombstone = decode(bytes.fromhex(KAFKA_UPDATE_KEY), None)
    assert (tombstone.kind, tombstone.group_id, tombstone.partition, tombstone.tombstone) == (
        UPDATE, "g1", 3, True)
