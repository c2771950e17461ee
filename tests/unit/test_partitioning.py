from roster.protocol.partitioning import java_string_hash, partition_for


def test_java_string_hash_values():
    # values String.hashCode() gives in Java
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31   # the famous Integer.MIN_VALUE
    assert java_string_hash("\U0001F600") == 1772899        # a surrogate pair: two code units


def test_partition_for_matches_kafka_rules():
    assert partition_for("polygenelubricants", 50) == 0     # Utils.abs(MIN_VALUE) is 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("my-group", 1) == 0
    assert all(0 <= partition_for(f"g{i}", 50) < 50 for i in range(200))
